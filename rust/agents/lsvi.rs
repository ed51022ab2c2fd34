//! LSVI-UCB with a static batch schedule (Alg. 2): LSVI-UCB (Jin et al. 2020, a release after
//! every user), batched LSVI-UCB (Wang et al. 2021), JDP and pure-JDP LSVI-UCB, one
//! implementation.
//!
//! Per user k: the user takes the billboard (Lambda~_{b,h}, w~_{b,h})_h of the current batch b
//! and acts greedily on Q_h = Pi_[0, H][w~^T phi + beta ||phi||_{Lambda~^{-1}}] (optimism; the
//! policy is computed once per release) or on w_h drawn from N(w~_h, beta^2 Lambda~_h^{-1})
//! (sampling; per user, from its own stream); its features phi(s_h, a_h) and rewards pass the
//! sensitivity guard into the server's sums. After the last user of a batch (k = i ceil(K/B),
//! a schedule fixed in advance), the server releases for h = H..1:
//!     Lambda~_h = Lambda_h + shift I + H^{b+1}_h   (the batch's Gram as the next leaf of tree h)
//!     u~_h = sum_i phi_i [r_i + V_{h+1}(s'_i)] + eta_h,   w~_h = Lambda~_h^{-1} u~_h,
//! with V_{h+1}(s) = Pi_[0, H] max_a (w~_{h+1}^T phi + beta ||phi||_{Lambda~_{h+1}^{-1}}).
//! Non-private: Lambda_h and its inverse by Sherman-Morrison, no shift, no noise.

use serde::{Deserialize, Serialize};

use super::bounds::NoiseBounds;
use super::lsvi_adaptive::{AdaptiveLsvi, AdaptiveState};
use super::vtr::not_pd;
use super::{Draw, Episodic, Exploration, Guard, Mechanism, Ties, Trajectory};
use crate::errors::{check_len, CoreError, CoreResult};
use crate::kernels::qeval::{group_max, OptimisticQ};
use crate::kernels::rank_one::{spd_inverse_into, ShermanMorrison};
use crate::noise::NoiseStream;

mod adaptive;
mod greedy;
mod incremental;
pub(crate) mod rows;
mod sampled;
mod server;

use crate::kernels::sparse::SparseRows;
use rows::{floor_release, update_forms, width};
use server::response;
pub use server::Server;

/// The regularization of a private release.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Shift {
    /// lam + c_K + Upsilon added to the diagonal (App. D).
    Constant(f64),
    /// The practical rule: lam + shift_mult * Upsilon_b at the noise released after b leaves,
    /// then the eigenvalues floored at lam.
    Practical { mult: f64, bounds: NoiseBounds },
}

/// The private parts of the server: H continual-release mechanisms of Lambda over the
/// releases, the eta stream (one fresh d-vector per release and step) and the shift.
#[derive(Serialize, Deserialize)]
pub struct Private {
    pub trees: Vec<Mechanism>,
    pub eta: NoiseStream,
    pub shift: Shift,
}

/// How the server forms u_h: from every stored transition, or from per-state counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Planning {
    /// Per sample while at most S users are stored, from counts afterwards.
    Auto,
    PerSample,
    Aggregated,
}

/// The billboard (Lambda~_h, Lambda~_h^{-1}, w~_h)_h.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Billboard {
    pub design: Vec<f64>,
    pub inverse: Vec<f64>,
    pub weights: Vec<f64>,
    pub users: u64,
    /// Non-private: the server's `forms` of this release (empty when private; not copied under
    /// the adaptive rule, which never reads them).
    pub forms: Vec<f64>,
    /// sqrt(max(form, 0)) of every form (rebuilt from forms after a load).
    #[serde(skip)]
    pub widths: Vec<f64>,
    /// Non-private: design and inverse are the server's exact matrices, not copied yet (they are
    /// copied only before a user changes them without a release following).
    pub lazy: bool,
    /// Non-private, per step: design and inverse are +0 off the diagonal (known from the
    /// copies; empty after a load: unknown), so copying a plain diagonal matrix is its diagonal.
    #[serde(skip)]
    pub plain: Vec<bool>,
}

/// An LSVI-UCB agent.
#[derive(Serialize, Deserialize)]
pub struct LsviAgent {
    pub h: usize,
    pub s: usize,
    pub a: usize,
    pub d: usize,
    /// phi(s, a), row s * A + a (S A x d), inside the guard's bound.
    table: Vec<f64>,
    /// The same rows as (column, value) lists (tabular one-hot features: one entry a row).
    sparse: SparseRows,
    pub guard: Guard,
    pub clips: u64,
    pub beta: f64,
    pub lam: f64,
    /// Users per batch, ceil(K / B): a release follows user k when k is a multiple and k < K.
    pub batch_len: u64,
    pub server: Server,
    pub board: Billboard,
    ties: Ties,
    exploration: Exploration,
    pub episodes: u64,
    pub k: u64,
    pub policy_updates: u64,
    /// The current policy and what it was computed for (the release count, or the user under
    /// sampling).
    pi: Vec<usize>,
    pi_for: Option<(u64, u64)>,
    /// The adaptive release rule (calibration "adaptive", `super::lsvi_adaptive`).
    pub adaptive: Option<Box<AdaptiveState>>,
    #[serde(skip)]
    work: Work,
}

#[derive(Default)]
struct Work {
    phi: Vec<f64>,
    r: Vec<f64>,
    q: Vec<f64>,
    vmax: Vec<f64>,
    v: Vec<f64>,
    u: Vec<f64>,
    w: Vec<f64>,
    draw: Draw,
    /// update_forms' u and row marks (d + S A)
    scratch: Vec<f64>,
    /// Q_h of steps 1..H-1 from the last release (what optimism plans on), and that release
    released: Vec<f64>,
    released_for: Option<u64>,
    /// `sampled::one_hot_scale` of the table.
    one_hot: Option<f64>,
    inc: incremental::Cache,
}

/// The parts of an [`LsviAgent`].
pub struct LsviParts {
    pub h: usize,
    pub a: usize,
    pub table: Vec<f64>,
    pub d: usize,
    pub guard: Guard,
    pub beta: f64,
    pub lam: f64,
    pub batch_len: u64,
    pub private: Option<Private>,
    pub planning: Planning,
    pub record_capacity: u64,
    pub ties: Ties,
    pub exploration: Exploration,
    pub episodes: u64,
    pub adaptive: Option<AdaptiveLsvi>,
}

impl LsviAgent {
    pub fn new(p: LsviParts) -> CoreResult<Self> {
        let (h, a, d) = (p.h, p.a, p.d);
        if h == 0 || a == 0 || d == 0 || !p.table.len().is_multiple_of(a * d) {
            return Err(CoreError::Shape(format!(
                "a feature table of {} values does not hold S x {a} rows of d = {d}",
                p.table.len()
            )));
        }
        let s = p.table.len() / (a * d);
        if p.batch_len == 0 {
            return Err(CoreError::InvalidParameter(
                "batch length must be >= 1".into(),
            ));
        }
        let cap = p.record_capacity as usize;
        let exact = if p.private.is_none() {
            (0..h)
                .map(|_| ShermanMorrison::new(d, p.lam, 1024))
                .collect::<CoreResult<Vec<_>>>()?
        } else {
            vec![]
        };
        // lam I and I / lam per step: zeroed allocations (pages a lazy non-private board never
        // touches stay unmapped: O(H d^2) memory only when it is used) with the diagonal written
        let scaled_eye = |v: f64| {
            let mut m = vec![0.0; h * d * d];
            for step in m.chunks_exact_mut(d * d) {
                (0..d).for_each(|j| step[j * d + j] = v);
            }
            m
        };
        let board = Billboard {
            design: scaled_eye(p.lam),
            inverse: scaled_eye(1.0 / p.lam),
            weights: vec![0.0; h * d],
            users: 0,
            forms: vec![],
            widths: vec![],
            lazy: false,
            plain: vec![true; h],
        };
        let private = p.private.is_some();
        // the data's own variance (non-private one-hot adaptive): see `lsvi_adaptive`
        let moments = !private && p.adaptive.as_ref().is_some_and(|a| a.diagonal);
        let per = |n: usize| if moments { vec![0.0; n] } else { vec![] };
        let mut agent = LsviAgent {
            h,
            s,
            a,
            d,
            sparse: SparseRows::of(&p.table, d),
            table: p.table,
            guard: p.guard,
            clips: 0,
            beta: p.beta,
            lam: p.lam,
            batch_len: p.batch_len,
            server: Server {
                private: p.private,
                exact,
                batch_gram: vec![0.0; if private { h * d * d } else { 0 }],
                reward_sum: vec![0.0; h * d],
                next_sum: vec![0.0; h * s * d],
                next_cols: vec![],
                reward_sq: per(h * d),
                next_count: per(h * s * d),
                next_reward: per(h * s * d),
                record_capacity: p.record_capacity,
                states: vec![0; cap * (h + 1)],
                actions: vec![0; cap * h],
                rewards: vec![0.0; cap * h],
                planning: p.planning,
                n: 0,
                releases: 0,
                nodes_history: vec![],
                paths: vec![],
                release_users: vec![0],
                last_eta: vec![],
                forms: vec![],
                widths: vec![],
            },
            board,
            ties: p.ties,
            exploration: p.exploration,
            episodes: p.episodes,
            k: 0,
            policy_updates: 0,
            pi: vec![0; h * s],
            pi_for: None,
            adaptive: p.adaptive.map(|spec| {
                let per_step = if spec.diagonal { d } else { d * d };
                Box::new(AdaptiveState {
                    spec,
                    history: vec![vec![]; h],
                    s_n: 0.0,
                    factor: vec![0.0; h * per_step],
                    bonus: vec![0.0; h * s * a],
                })
            }),
            work: Work::default(),
        };
        if agent.adaptive.is_some() {
            agent.adaptive_initial();
        }
        if !private {
            agent.server.forms = vec![0.0; h * s * a];
            for hh in 0..h {
                agent.refresh_forms(hh);
            }
            agent.board.forms.clone_from(&agent.server.forms);
            agent.board.widths.clone_from(&agent.server.widths);
        }
        Ok(agent)
    }

    /// The billboard's Lambda~_h^{-1} (and Lambda~_h): the server's exact matrices while the board
    /// is lazy.
    pub fn board_inverse(&self, h: usize) -> &[f64] {
        let dd = self.d * self.d;
        if self.board.lazy {
            self.server.exact[h].inverse()
        } else {
            &self.board.inverse[h * dd..(h + 1) * dd]
        }
    }

    pub fn board_design(&self, h: usize) -> &[f64] {
        let dd = self.d * self.d;
        if self.board.lazy {
            self.server.exact[h].matrix()
        } else {
            &self.board.design[h * dd..(h + 1) * dd]
        }
    }

    /// The billboard's form widths (the server's while the board is lazy).
    fn board_widths(&self) -> &[f64] {
        if self.board.lazy {
            &self.server.widths
        } else {
            &self.board.widths
        }
    }

    /// Copy a lazy board before the server's matrices and forms move on.
    fn materialize(&mut self) {
        if !self.board.lazy {
            return;
        }
        let (d, dd) = (self.d, self.d * self.d);
        let board = &mut self.board;
        board.plain.resize(self.server.exact.len(), false); // after a load: unknown until copied
        for (hh, sm) in self.server.exact.iter().enumerate() {
            let design = &mut board.design[hh * dd..(hh + 1) * dd];
            let inverse = &mut board.inverse[hh * dd..(hh + 1) * dd];
            if sm.is_plain_diagonal() && board.plain[hh] {
                // both sides +0 off the diagonal: the full copy, bit for bit, in O(d)
                let (m, inv) = (sm.matrix(), sm.inverse());
                for j in (0..d).map(|j| j * d + j) {
                    design[j] = m[j];
                    inverse[j] = inv[j];
                }
            } else {
                design.copy_from_slice(sm.matrix());
                inverse.copy_from_slice(sm.inverse());
                board.plain[hh] = sm.is_plain_diagonal();
            }
        }
        if self.adaptive.is_none() {
            self.board.forms.clone_from(&self.server.forms);
            self.board.widths.clone_from(&self.server.widths);
        }
        self.board.lazy = false;
    }

    /// The exact forms of step h from the maintained inverse.
    fn refresh_forms(&mut self, h: usize) {
        let (d, rows) = (self.d, self.s * self.a);
        self.widths_ready();
        let inv = self.server.exact[h].inverse();
        let forms = &mut self.server.forms[h * rows..(h + 1) * rows];
        let widths = &mut self.server.widths[h * rows..(h + 1) * rows];
        for (r, (f, wd)) in forms.iter_mut().zip(widths).enumerate() {
            let (cols, vals) = self.sparse.row(r);
            *f = cols
                .iter()
                .zip(vals)
                .map(|(&i, &vi)| vi * self.sparse.dot_with(r, &inv[i * d..(i + 1) * d]))
                .sum();
            *wd = width(*f);
        }
    }

    /// The widths of the server's and the billboard's forms (after a load they are rebuilt).
    fn widths_ready(&mut self) {
        for (forms, widths) in [
            (&self.server.forms, &mut self.server.widths),
            (&self.board.forms, &mut self.board.widths),
        ] {
            if widths.len() != forms.len() {
                *widths = forms.iter().map(|&f| width(f)).collect();
            }
        }
    }

    /// Q_h(s, a) = Pi_[0, H](w^T phi(s, a) + beta ||phi(s, a)||_{Lambda~_h^{-1}}) for every row,
    /// into `out`: from the billboard's form widths when it has them, else from its inverse.
    fn q_rows(
        &self,
        h: usize,
        w: &[f64],
        beta: f64,
        widths: &[f64],
        inv: &[f64],
        out: &mut [f64],
    ) -> CoreResult<()> {
        let (d, rows, upper) = (self.d, self.s * self.a, self.h as f64);
        if beta == 0.0 || widths.is_empty() {
            let q = OptimisticQ {
                d,
                w,
                inv,
                beta,
                lower: 0.0,
                upper,
            };
            return q.evaluate(&self.table, None, out);
        }
        let f = &widths[h * rows..(h + 1) * rows];
        self.sparse
            .dot_rows(w, out, |r, mean| (mean + beta * f[r]).clamp(0.0, upper));
        Ok(())
    }

    fn work_ready(&mut self) {
        self.widths_ready();
        let (h, s, a, d) = (self.h, self.s, self.a, self.d);
        if self.work.q.len() == s * a {
            return;
        }
        self.work = Work {
            phi: vec![0.0; h * d],
            r: vec![0.0; h],
            q: vec![0.0; s * a],
            vmax: vec![0.0; s],
            v: vec![0.0; s.max(self.server.record_capacity as usize)],
            u: vec![0.0; d],
            w: vec![0.0; d],
            draw: Draw::default(),
            scratch: vec![0.0; d + s * a],
            released: vec![0.0; h * s * a],
            released_for: None,
            one_hot: sampled::one_hot_scale(&self.table, &self.sparse),
            inc: incremental::Cache::new(h, s, d),
        };
    }

    /// The greedy policy of the current billboard (optimism: once per release) or of a model
    /// drawn for this user (sampling).
    fn ensure_policy(&mut self) -> CoreResult<()> {
        self.work_ready();
        let key = (
            self.server.releases,
            if self.exploration.is_sampling() {
                self.k + 1
            } else {
                0
            },
        );
        if self.pi_for == Some(key) {
            return Ok(());
        }
        let mut work = std::mem::take(&mut self.work);
        let mut exploration = std::mem::replace(&mut self.exploration, Exploration::Optimism);
        let mut pi = std::mem::take(&mut self.pi);
        let res = self.plan_policy(&mut exploration, &mut pi, &mut work);
        self.pi = pi;
        self.exploration = exploration;
        self.work = work;
        res?;
        self.pi_for = Some(key);
        self.policy_updates += 1;
        Ok(())
    }

    /// Every step's greedy actions (ties from the agent's stream) into `pi`.
    fn plan_policy(
        &mut self,
        exploration: &mut Exploration,
        pi: &mut [usize],
        w: &mut Work,
    ) -> CoreResult<()> {
        let (s_n, a_n) = (self.s, self.a);
        if self.adaptive.is_some() {
            return self.plan_adaptive(exploration, pi, w);
        }
        let rows = s_n * a_n;
        // optimism plans on the release's own Q_h (same weights, beta, forms: the same values)
        let cached = !exploration.is_sampling() && w.released_for == Some(self.server.releases);
        let first = cached && w.inc.valid_for == Some(self.server.releases); // Q_1 kept too
        for h in 0..self.h {
            let q = if cached && (h > 0 || first) {
                &w.released[h * rows..(h + 1) * rows]
            } else {
                self.step_q(h, exploration, w)?;
                &w.q
            };
            let tie = self.ties.draw();
            group_max(q, a_n, tie, &mut w.vmax, &mut pi[h * s_n..(h + 1) * s_n])?;
        }
        Ok(())
    }

    /// The planning path of the next release (true: from counts).
    fn aggregated(&self) -> bool {
        match self.server.planning {
            Planning::Aggregated => true,
            Planning::PerSample => false,
            Planning::Auto => self.server.n > self.s as u64,
        }
    }

    /// The end of a batch (Alg. 2, lines 14-23): the perturbed LSVI over all data so far.
    fn release(&mut self) -> CoreResult<()> {
        self.work_ready();
        if self.adaptive.is_some() {
            return self.release_adaptive();
        }
        let (h_n, s_n, a_n, d) = (self.h, self.s, self.a, self.d);
        let aggregated = self.aggregated();
        let users = self.server.n;
        self.server.next_columns_ready(s_n, d);
        self.release_designs(users)?;
        let private = self.server.private.is_some();
        let unit = self.draw_eta()?;
        // w~_h for h = H..1 (V_{H+1} = 0), V_{h+1} from the billboard being released
        let mut work = std::mem::take(&mut self.work);
        let w = &mut work;
        let rows = s_n * a_n;
        let incremental = self.release_incremental(aggregated, w);
        w.released_for = None;
        for hh in (0..h_n).rev().filter(|_| !incremental) {
            let next = if hh == h_n - 1 {
                None
            } else {
                let wn = &self.board.weights[(hh + 1) * d..(hh + 2) * d];
                let inv = self.board_inverse(hh + 1);
                let q = &mut w.released[(hh + 1) * rows..(hh + 2) * rows];
                self.q_rows(hh + 1, wn, self.beta, self.board_widths(), inv, q)?;
                for (v, q) in w.v[..s_n].iter_mut().zip(q.chunks_exact(a_n)) {
                    *v = q.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                }
                w.inc.keep_values(hh + 1, &w.v[..s_n]);
                Some(&w.v[..s_n])
            };
            response(
                &self.server,
                &self.sparse,
                aggregated,
                hh,
                next,
                &mut w.u,
                a_n,
                s_n,
                d,
            );
            if private {
                let eta = &self.server.last_eta[hh * d..(hh + 1) * d];
                match unit {
                    // discrete samplers: u rounded to the lattice of the exact integer noise
                    Some(un) => {
                        w.u.iter_mut()
                            .zip(eta)
                            .for_each(|(x, e)| *x = ((*x / un).round() + (e / un).round()) * un)
                    }
                    None => w.u.iter_mut().zip(eta).for_each(|(x, e)| *x += e),
                }
            }
            let board = &mut self.board;
            let inv = if board.lazy {
                self.server.exact[hh].inverse()
            } else {
                &board.inverse[hh * d * d..(hh + 1) * d * d]
            };
            let weights = &mut board.weights[hh * d..(hh + 1) * d];
            if board.lazy && self.server.exact[hh].is_diagonal() {
                // tabular one-hot features, non-private: Lambda^{-1} is diagonal (the dense
                // product's other terms are +-0: the same value, O(d) instead of O(d^2))
                let diag = self.server.exact[hh].inverse_diagonal();
                for ((wi, m), x) in weights.iter_mut().zip(diag).zip(&w.u) {
                    *wi = m * x;
                }
            } else {
                for (i, wi) in weights.iter_mut().enumerate() {
                    let row = &inv[i * d..(i + 1) * d];
                    *wi = row.iter().zip(w.u.iter()).map(|(m, x)| m * x).sum();
                }
            }
        }
        self.board.users = users;
        let fits = self.incremental_fits(aggregated, &work);
        if fits && !incremental {
            // Q_1 as the users' plan computes it, kept for them and the next release
            let (w0, inv) = (&self.board.weights[..d], self.board_inverse(0));
            let q = &mut work.released[..rows];
            self.q_rows(0, w0, self.beta, self.board_widths(), inv, q)?;
        }
        let srv = &mut self.server;
        srv.releases += 1;
        work.released_for = Some(srv.releases);
        work.inc.released(srv.releases, fits);
        self.work = work;
        srv.paths.push(aggregated);
        srv.release_users.push(users);
        Ok(())
    }

    /// Lambda~_h and its inverse for every step (Alg. 2, lines 17-18): the exact matrices, or the
    /// Lambda mechanisms' release (the batch's Gram pushed as their next leaf) with the shift.
    fn release_designs(&mut self, users: u64) -> CoreResult<()> {
        let (d, dd) = (self.d, self.d * self.d);
        let board = &mut self.board;
        let srv = &mut self.server;
        let Some(p) = &mut srv.private else {
            board.lazy = true; // the exact matrices, read in place until a user changes them
            return Ok(());
        };
        for (hh, tree) in p.trees.iter_mut().enumerate() {
            tree.0.push(&srv.batch_gram[hh * dd..(hh + 1) * dd])?;
            tree.0
                .release_into(&mut board.design[hh * dd..(hh + 1) * dd])?;
        }
        srv.nodes_history.push(p.trees[0].0.nodes_used());
        srv.batch_gram.iter_mut().for_each(|v| *v = 0.0);
        if let Some(st) = &mut self.adaptive {
            // the adaptive rule: one-hot rows project G~ on its diagonal; S_t from its bound
            let t = p.trees[0].0.steps();
            let (shift, s_n) = st.spec.shift(p.trees[0].0.variance_factor(t), d);
            st.s_n = s_n;
            if st.spec.diagonal {
                // the projection on the diagonal, then the floor entry by entry
                for (m, inv) in board
                    .design
                    .chunks_exact_mut(dd)
                    .zip(board.inverse.chunks_exact_mut(dd))
                {
                    for i in 0..d {
                        for j in 0..d {
                            if i != j {
                                m[i * d + j] = 0.0;
                                inv[i * d + j] = 0.0;
                            }
                        }
                        let a = (m[i * d + i] + self.lam + shift).max(self.lam);
                        m[i * d + i] = a;
                        inv[i * d + i] = 1.0 / a;
                    }
                }
            } else {
                floor_release(
                    &mut board.design,
                    &mut board.inverse,
                    d,
                    self.lam + shift,
                    self.lam,
                );
            }
            return Ok(());
        }
        match &p.shift {
            Shift::Constant(base) => {
                for (hh, m) in board.design.chunks_exact_mut(dd).enumerate() {
                    for i in 0..d {
                        m[i * d + i] += base;
                    }
                    spd_inverse_into(m, d, &mut board.inverse[hh * dd..(hh + 1) * dd]).map_err(|_| {
                        not_pd(m, d, hh, users, "the shift c_K + Upsilon, an event of probability <= p/3 under App. D's calibration")
                    })?;
                }
            }
            Shift::Practical { mult, bounds } => {
                let t = p.trees[0].0.steps();
                let (ups, _) = bounds.at(p.trees[0].0.variance_factor(t));
                floor_release(
                    &mut board.design,
                    &mut board.inverse,
                    d,
                    self.lam + mult * ups,
                    self.lam,
                );
            }
        }
        Ok(())
    }

    /// The user's phi(s_h, a_h) and rewards through the guard into the server's sums.
    fn receive(&mut self, t: &Trajectory) -> CoreResult<()> {
        self.work_ready();
        let next = self.k + 1;
        if !(next.is_multiple_of(self.batch_len) && next < self.episodes) {
            self.materialize(); // no release follows this user: keep the billboard
        } else {
            self.work.draw.factors.clear(); // the billboard changes from here on
        }
        let (h_n, s_n, a_n, d) = (self.h, self.s, self.a, self.d);
        let w = &mut self.work;
        for h in 0..h_n {
            let row = (t.states[h] * a_n + t.actions[h]) * d;
            w.phi[h * d..(h + 1) * d].copy_from_slice(&self.table[row..row + d]);
        }
        w.r.copy_from_slice(&t.rewards);
        let clips = self.guard.apply(&mut w.phi, d, Some(&mut w.r))?;
        self.clips += clips as u64;
        let srv = &mut self.server;
        srv.next_columns_ready(s_n, d);
        let rows = s_n * a_n;
        let mut refresh = false;
        // the adaptive rule's widths come from its posterior (`lsvi_adaptive`): the forms, the
        // other rules' widths, are neither read nor kept current there (O(S A nnz) per step)
        let forms = self.adaptive.is_none();
        let i = srv.n as usize;
        if srv.n < srv.record_capacity {
            srv.states[i * (h_n + 1)..(i + 1) * (h_n + 1)].copy_from_slice(&t.states);
            srv.actions[i * h_n..(i + 1) * h_n].copy_from_slice(&t.actions);
            srv.rewards[i * h_n..(i + 1) * h_n].copy_from_slice(&w.r);
        }
        // Every sum below runs over the columns of the table row phi came from (a superset of
        // phi's nonzeros, the guard only scales): a skipped term is a product with an exact 0,
        // +-0, and adding it leaves an entry as it was (the sums start at +0 and are never -0),
        // so these are the dense sums bit for bit at O(nnz) (O(nnz^2) for the Gram).
        for (h, ph) in w.phi.chunks_exact(d).enumerate() {
            let nz = self.sparse.row(t.states[h] * a_n + t.actions[h]).0;
            if srv.private.is_some() {
                let g = &mut srv.batch_gram[h * d * d..(h + 1) * d * d];
                for &i in nz.iter().filter(|&&i| ph[i] != 0.0) {
                    let gi = &mut g[i * d..(i + 1) * d];
                    for &j in nz.iter().filter(|&&j| ph[j] != 0.0) {
                        gi[j] += ph[i] * ph[j];
                    }
                }
            } else {
                if forms {
                    update_forms(
                        &mut srv.forms[h * rows..(h + 1) * rows],
                        &mut srv.widths[h * rows..(h + 1) * rows],
                        &self.sparse,
                        srv.exact[h].inverse(),
                        ph,
                        nz,
                        &mut w.scratch,
                        srv.exact[h].is_plain_diagonal(),
                    );
                }
                srv.exact[h].update_within(ph, nz)?;
                refresh |= forms && srv.exact[h].updates().is_multiple_of(1024);
                if forms && w.one_hot.is_some() {
                    w.inc.touch(h, nz, srv.exact[h].just_refactorized());
                }
            }
            let rs = &mut srv.reward_sum[h * d..(h + 1) * d];
            nz.iter().for_each(|&j| rs[j] += ph[j] * w.r[h]);
            let ns = (h * s_n + t.states[h + 1]) * d;
            let cols = &mut srv.next_cols[h * s_n + t.states[h + 1]];
            for &j in nz {
                let x = &mut srv.next_sum[ns + j];
                if *x == 0.0 && ph[j] != 0.0 && !cols.contains(&j) {
                    cols.push(j);
                    w.inc.next_column(h, t.states[h + 1], j);
                }
                *x += ph[j];
            }
            if !srv.reward_sq.is_empty() {
                let r = w.r[h];
                for &j in nz.iter().filter(|&&j| ph[j] != 0.0) {
                    srv.reward_sq[h * d + j] += r * r;
                    srv.next_count[ns + j] += 1.0;
                    srv.next_reward[ns + j] += r;
                }
            }
        }
        srv.n += 1;
        if refresh {
            // the inverse was refactorized: the forms follow it exactly again
            (0..h_n).for_each(|h| self.refresh_forms(h));
            (0..h_n).for_each(|h| self.work.inc.touch(h, &[], true));
        }
        Ok(())
    }

    /// After user k: a release if k ends a batch.
    fn end_of_batch(&mut self) -> CoreResult<()> {
        if self.k.is_multiple_of(self.batch_len) && self.k < self.episodes {
            self.release()?;
        }
        Ok(())
    }

    /// The features table (S A x d).
    pub fn table(&self) -> &[f64] {
        &self.table
    }
}

impl Episodic for LsviAgent {
    fn policy(&mut self) -> CoreResult<&[usize]> {
        self.ensure_policy()?;
        Ok(&self.pi)
    }

    fn observe(&mut self, t: &Trajectory) -> CoreResult<()> {
        crate::agents::check_room(self.k, self.episodes)?;
        check_len("trajectory states", t.states.len(), self.h + 1)?;
        self.receive(t)?;
        self.k += 1;
        self.end_of_batch()
    }
}
