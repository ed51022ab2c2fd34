//! The non-private release over tabular one-hot features, recomputing only what the users since
//! the last release moved (LSVI-UCB with a release every episode: one user moves H columns).
//!
//! With one-hot rows and a diagonal Lambda_h (non-private, every update one-hot), release h reads
//! few entries: w~_h[j] = inverse_jj u_h[j], u_h[j] = reward_sum_h[j] + sum_{s'} next_sum_h[s', j]
//! V_{h+1}(s') (s' ascending) and Q_{h+1}(s, a) = Pi_[0, H](phi_r w~_{h+1}[c_r] + beta width_r),
//! c_r the row's column. Between two releases, a user changes at step h only the columns of its
//! row (inverse_jj, reward_sum, next_sum, the widths of the rows holding j; a refactorization or
//! a refresh of the forms: everything). So the release recomputes, step by step from h = H: the Q
//! rows whose column's weight moved or whose width may have moved, V at their states, and the
//! columns touched or fed by a V that moved; every other entry keeps its bits, which are what the
//! full release would compute again (the same operations on the same operands). Each recomputed
//! entry is the full release's expression: the Q row by `SparseRows::dot_with` as `q_rows`, V by
//! the same fold, u[j] from reward_sum over the states in order. The full sum over next_cols adds
//! also the terms of states where next_sum_h[s', j] is +-0: 0 V is +-0 when V is finite and adding
//! it leaves u (never -0) as it was, so the sum here skips them, except where V is not finite
//! (there it adds them exactly as the full sum does).

use super::{LsviAgent, Work};

/// What the incremental release keeps between releases (in `Work`: a load starts a full one).
#[derive(Default)]
pub(super) struct Cache {
    /// The release count whose V, Q and weights this cache holds (None: the next release is full).
    pub(super) valid_for: Option<u64>,
    /// V_h(s) of that release for h = 1..H-1 (H x S, row 0 unused).
    values: Vec<f64>,
    /// Per step, the columns users touched since that release (and their marks, H x d).
    touched: Vec<Vec<usize>>,
    marks: Vec<bool>,
    /// Per step, every entry may have moved (a refactorization, a refresh of the forms).
    everything: Vec<bool>,
    /// Scratch: columns to redo at a step (with marks), the weights that moved at the step above
    /// (with marks), states whose V may move (with marks).
    cols: Vec<usize>,
    col_marks: Vec<bool>,
    moved: Vec<usize>,
    moved_marks: Vec<bool>,
    states: Vec<usize>,
    state_marks: Vec<bool>,
    /// Per step and column, the first and last next state whose next_cols row holds the column
    /// (H x d; empty until built from next_cols, then kept by `next_column`): u_h[j]'s sum runs
    /// over those states only (the others' next_sum entries are +0 and not in their rows).
    spans: Vec<[u32; 2]>,
}

impl Cache {
    pub(super) fn new(h: usize, s: usize, d: usize) -> Self {
        Cache {
            valid_for: None,
            values: vec![0.0; h * s],
            touched: vec![vec![]; h],
            marks: vec![false; h * d],
            everything: vec![false; h],
            cols: vec![],
            col_marks: vec![false; d],
            moved: vec![],
            moved_marks: vec![false; d],
            states: vec![],
            state_marks: vec![false; s],
            spans: vec![],
        }
    }

    /// Column j joined next_cols' row (h, s') (kept in the spans once they are built).
    pub(super) fn next_column(&mut self, h: usize, s: usize, j: usize) {
        let d = self.col_marks.len();
        if let Some(span) = self.spans.get_mut(h * d + j) {
            let s = s as u32;
            *span = [span[0].min(s), span[1].max(s)];
        }
    }

    /// The spans from next_cols (H x S rows of columns).
    fn spans_ready(&mut self, next_cols: &[Vec<usize>], h: usize) {
        let d = self.col_marks.len();
        if !self.spans.is_empty() || h == 0 {
            return;
        }
        self.spans = vec![[u32::MAX, 0]; h * d];
        let s_n = next_cols.len() / h;
        for (k, cols) in next_cols.iter().enumerate() {
            for &j in cols {
                let span = &mut self.spans[(k / s_n) * d + j];
                let s = (k % s_n) as u32;
                *span = [span[0].min(s), span[1].max(s)];
            }
        }
    }

    /// A user changed step h's columns `nz` (`everything`: the whole step).
    pub(super) fn touch(&mut self, h: usize, nz: &[usize], everything: bool) {
        let d = self.col_marks.len();
        self.everything[h] |= everything;
        for &j in nz {
            if !self.marks[h * d + j] {
                self.marks[h * d + j] = true;
                self.touched[h].push(j);
            }
        }
    }

    /// A release happened (either way): nothing is touched since it.
    fn settle(&mut self) {
        let d = self.col_marks.len();
        for (h, t) in self.touched.iter_mut().enumerate() {
            t.drain(..).for_each(|j| self.marks[h * d + j] = false);
        }
        self.everything.iter_mut().for_each(|e| *e = false);
    }

    /// The full release computed V_{h+1} = `v` at step h.
    pub(super) fn keep_values(&mut self, h: usize, v: &[f64]) {
        let s = v.len();
        self.values[h * s..(h + 1) * s].copy_from_slice(v);
    }

    /// After a release: valid for `releases` when the next one may go incrementally.
    pub(super) fn released(&mut self, releases: u64, fits: bool) {
        self.settle();
        self.valid_for = fits.then_some(releases);
    }
}

/// Add j to a marked list.
#[inline]
fn mark(list: &mut Vec<usize>, marks: &mut [bool], j: usize) {
    if !marks[j] {
        marks[j] = true;
        list.push(j);
    }
}

impl LsviAgent {
    /// The incremental release applies to this agent's next release: non-private, the paper's
    /// rules, aggregated planning, one-hot rows (not all in one column), a bonus from the forms,
    /// and every Lambda_h diagonal.
    pub(super) fn incremental_fits(&self, aggregated: bool, w: &Work) -> bool {
        self.server.private.is_none()
            && self.adaptive.is_none()
            && aggregated
            && w.one_hot.is_some()
            && !self.sparse.is_uniform()
            && self.beta != 0.0
            && !self.server.widths.is_empty()
            && self.server.exact.iter().all(|m| m.is_diagonal())
    }

    /// The release's weights and Q_2..Q_H (into `w.released`) from the last release's, where the
    /// cache holds it; false (nothing changed) otherwise. The caller has published the exact
    /// matrices (the board is lazy) and runs the release's bookkeeping after.
    pub(super) fn release_incremental(&mut self, aggregated: bool, w: &mut Work) -> bool {
        let releases = self.server.releases;
        if w.inc.valid_for != Some(releases)
            || w.released_for != Some(releases)
            || !self.incremental_fits(aggregated, w)
        {
            return false;
        }
        let (h_n, s_n, a_n, d) = (self.h, self.s, self.a, self.d);
        let rows = s_n * a_n;
        let c = &mut w.inc;
        let srv = &self.server;
        if u32::try_from(s_n).is_err() {
            return false;
        }
        c.spans_ready(&srv.next_cols, h_n);
        c.moved.clear();
        for hh in (0..h_n).rev() {
            c.cols.clear();
            if c.everything[hh] {
                (0..d).for_each(|j| mark(&mut c.cols, &mut c.col_marks, j));
            } else {
                for &j in &c.touched[hh] {
                    mark(&mut c.cols, &mut c.col_marks, j);
                }
            }
            let g = hh + 1;
            if g < h_n {
                // Q_{h+1}: the rows of the columns whose weight moved or that a user touched
                let q = &mut w.released[g * rows..(g + 1) * rows];
                self.redo_q(g, c, q);
                let q = &w.released[g * rows..(g + 1) * rows];
                // V_{h+1} at those states; a V that moved feeds the columns of its next_sum row
                let values = &mut c.values[g * s_n..(g + 1) * s_n];
                for &s in &c.states {
                    c.state_marks[s] = false;
                    let v = q[s * a_n..(s + 1) * a_n]
                        .iter()
                        .copied()
                        .fold(f64::NEG_INFINITY, f64::max);
                    if v.to_bits() != values[s].to_bits() {
                        values[s] = v;
                        for &j in &srv.next_cols[hh * s_n + s] {
                            mark(&mut c.cols, &mut c.col_marks, j);
                        }
                    }
                }
            }
            c.moved.iter().for_each(|&j| c.moved_marks[j] = false);
            c.moved.clear();
            // u_h and w~_h at those columns
            let rs = &srv.reward_sum[hh * d..(hh + 1) * d];
            let ns = &srv.next_sum[hh * s_n * d..(hh + 1) * s_n * d];
            let next_cols = &srv.next_cols[hh * s_n..(hh + 1) * s_n];
            let values = &c.values[g.min(h_n - 1) * s_n..(g.min(h_n - 1) + 1) * s_n];
            let diag = srv.exact[hh].inverse_diagonal();
            let weights = &mut self.board.weights[hh * d..(hh + 1) * d];
            for &j in &c.cols {
                c.col_marks[j] = false;
                let mut u = rs[j];
                let [lo, hi] = c.spans[hh * d + j];
                if g < h_n && lo <= hi {
                    for (s, &v) in values
                        .iter()
                        .enumerate()
                        .take(hi as usize + 1)
                        .skip(lo as usize)
                    {
                        let x = ns[s * d + j];
                        let cols = &next_cols[s];
                        if x != 0.0 || (!v.is_finite() && (cols.len() == d || cols.contains(&j))) {
                            u += x * v;
                        }
                    }
                }
                let wj = diag[j] * u;
                if wj.to_bits() != weights[j].to_bits() {
                    weights[j] = wj;
                    mark(&mut c.moved, &mut c.moved_marks, j);
                }
            }
        }
        // Q_1, for the users' plan (`plan_policy`)
        self.redo_q(0, c, &mut w.released[..rows]);
        c.states.iter().for_each(|&s| c.state_marks[s] = false);
        c.moved.iter().for_each(|&j| c.moved_marks[j] = false);
        c.moved.clear();
        true
    }

    /// Step g's Q rows (`q_rows`' values) at the columns a user touched or whose weight moved
    /// (`c.moved`), every row when the step moved as a whole; their states into `c.states`.
    fn redo_q(&self, g: usize, c: &mut Cache, q: &mut [f64]) {
        let (d, a_n, rows) = (self.d, self.a, self.s * self.a);
        let (upper, beta) = (self.h as f64, self.beta);
        let wg = &self.board.weights[g * d..(g + 1) * d];
        let widths = &self.server.widths[g * rows..(g + 1) * rows];
        c.states.clear();
        let mut redo = |r: usize, states: &mut Vec<usize>, marks: &mut [bool]| {
            let mean = self.sparse.dot_with(r, wg);
            q[r] = (mean + beta * widths[r]).clamp(0.0, upper);
            mark(states, marks, r / a_n);
        };
        if c.everything[g] {
            // every row (a row without a column too: its width may have moved)
            (0..rows).for_each(|r| redo(r, &mut c.states, &mut c.state_marks));
            return;
        }
        for &j in &c.touched[g] {
            for &r in self.sparse.rows_with(j) {
                redo(r, &mut c.states, &mut c.state_marks);
            }
        }
        // the moved weights' columns a user did not touch (those are done)
        for &j in c.moved.iter().filter(|&&j| !c.marks[g * d + j]) {
            for &r in self.sparse.rows_with(j) {
                redo(r, &mut c.states, &mut c.state_marks);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{LsviAgent, LsviParts, Planning};
    use crate::agents::{Episodic, Exploration, Guard, Stream, Ties, Trajectory};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn agent(
        table: &[f64],
        d: usize,
        (h, a): (usize, usize),
        beta: f64,
        batch_len: u64,
    ) -> LsviAgent {
        let s = table.len() / (a * d);
        LsviAgent::new(LsviParts {
            h,
            a,
            table: table.to_vec(),
            d,
            guard: Guard {
                x_bound: 1.0,
                y_low: 0.0,
                y_high: 1.0,
                reject: false,
            },
            beta,
            lam: 1.0,
            batch_len,
            private: None,
            planning: Planning::Auto,
            record_capacity: (s + 1) as u64,
            ties: Ties(Some(Stream::new([7; 32]))),
            exploration: Exploration::Optimism,
            episodes: 1200,
            adaptive: None,
        })
        .unwrap()
    }

    #[test]
    fn incremental_release_is_the_full_one_bit_for_bit() {
        // one-hot rows (S 5, A 3) over d = 12 columns: rows sharing a column, a zero row, values
        // of either sign; small and large radii (Q inside [0, H] and clipped), a release after
        // every user and after every third; 1,200 users cross the inverse's refactorization
        // (every 1,024 updates) and the forms' refresh
        let (s_n, a_n, h_n, d) = (5, 3, 4, 12);
        let mut table = vec![0.0; s_n * a_n * d];
        for r in 0..s_n * a_n {
            if r != 7 {
                table[r * d + (r * 5) % d] = [1.0, 0.5, -0.7][r % 3];
            }
        }
        for (beta, batch_len) in [(0.3, 1), (0.05, 1), (40.0, 1), (0.3, 3)] {
            let mut inc = agent(&table, d, (h_n, a_n), beta, batch_len);
            let mut full = agent(&table, d, (h_n, a_n), beta, batch_len);
            let mut rng = ChaCha8Rng::seed_from_u64(beta.to_bits() ^ batch_len);
            let mut t = Trajectory::new(h_n);
            let (mut used, rows) = (0, s_n * a_n);
            for k in 0..1200 {
                let pi = inc.policy().unwrap().to_vec();
                assert_eq!(pi, full.policy().unwrap(), "user {k}");
                t.states[0] = rng.random_range(0..s_n);
                for h in 0..h_n {
                    let greedy = pi[h * s_n + t.states[h]];
                    t.actions[h] = if rng.random_bool(0.7) {
                        greedy
                    } else {
                        rng.random_range(0..a_n)
                    };
                    t.rewards[h] = [0.0, 1.0, rng.random::<f64>()][rng.random_range(0..3)];
                    t.states[h + 1] = rng.random_range(0..s_n.min(2 + k / 100));
                }
                used += usize::from(inc.work.inc.valid_for == Some(inc.server.releases));
                inc.observe(&t).unwrap();
                full.work.inc.valid_for = None; // every release full
                full.observe(&t).unwrap();
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(
                    bits(&inc.board.weights),
                    bits(&full.board.weights),
                    "user {k}"
                );
                let (qi, qf) = (&inc.work.released, &full.work.released);
                assert_eq!(bits(qi), bits(qf), "user {k}");
                // the kept Q_1 is the users' plan's own
                if inc.work.inc.valid_for == Some(inc.server.releases) {
                    let mut w = std::mem::take(&mut inc.work);
                    inc.step_q(0, &mut Exploration::Optimism, &mut w).unwrap();
                    assert_eq!(bits(&w.q), bits(&w.released[..rows]), "user {k}");
                    inc.work = w;
                }
            }
            assert!(used > 1000, "the incremental release ran {used} times");
        }
    }
}
