//! Linear-mixture features phi(s'|s,a) (Asm. 2) stored sparsely over next states, and the
//! value-targeted features phi_V(s,a) = sum_{s'} phi(s'|s,a) V(s') for all (s,a) at once.

use crate::errors::{check_finite, check_len, CoreError, CoreResult};

mod normalized;

/// CSR over the rows (s, a): for each row the next states with a nonzero feature vector.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
pub struct MixtureFeatures {
    n_rows: usize,
    n_states: usize,
    d: usize,
    indptr: Vec<usize>,
    next_state: Vec<usize>,
    /// nnz x d, row-major.
    values: Vec<f64>,
    /// Dense features by next state, (n_states, n_rows, d), when most pairs (r, s') have a
    /// feature: phi_v then streams contiguous blocks (vectorizes), same sums in the same order.
    by_next: Option<Vec<f64>>,
}

/// Dense copies above this many entries are not built (the sparse loop serves).
const MAX_DENSE: usize = 1 << 24;

impl MixtureFeatures {
    /// From a dense row-major array of shape (n_rows, n_states, d) (n_rows = S*A).
    pub fn from_dense(dense: &[f64], n_rows: usize, n_states: usize, d: usize) -> CoreResult<Self> {
        if n_rows == 0 || n_states == 0 || d == 0 {
            return Err(CoreError::Shape("features need S, A, d >= 1".into()));
        }
        check_len("mixture features", dense.len(), n_rows * n_states * d)?;
        check_finite("mixture features", dense)?;
        let mut indptr = Vec::with_capacity(n_rows + 1);
        let mut next_state = Vec::new();
        let mut values = Vec::new();
        indptr.push(0);
        for r in 0..n_rows {
            for s in 0..n_states {
                let f = &dense[(r * n_states + s) * d..(r * n_states + s + 1) * d];
                if f.iter().any(|&x| x != 0.0) {
                    next_state.push(s);
                    values.extend_from_slice(f);
                }
            }
            indptr.push(next_state.len());
        }
        let n = n_rows * n_states * d;
        let by_next = (2 * next_state.len() >= n_rows * n_states && n <= MAX_DENSE).then(|| {
            let mut t = vec![0.0; n];
            for r in 0..n_rows {
                for s in 0..n_states {
                    let src = &dense[(r * n_states + s) * d..(r * n_states + s + 1) * d];
                    t[(s * n_rows + r) * d..(s * n_rows + r + 1) * d].copy_from_slice(src);
                }
            }
            t
        });
        Ok(MixtureFeatures {
            n_rows,
            n_states,
            d,
            indptr,
            next_state,
            values,
            by_next,
        })
    }

    /// The CSR's parts agree with its dimensions (a restored state, `crate::state`).
    pub fn check_consistent(&self) -> CoreResult<()> {
        let nnz = self.next_state.len();
        crate::state::check_sizes(
            "mixture features",
            &[
                (
                    "indptr (rows + 1)",
                    self.indptr.len().wrapping_sub(1),
                    &[self.n_rows],
                ),
                ("values", self.values.len(), &[nnz, self.d]),
            ],
        )?;
        let ordered = self.indptr.first() == Some(&0)
            && self.indptr.last() == Some(&nnz)
            && self.indptr.windows(2).all(|w| w[0] <= w[1]);
        let by_next_ok = self.by_next.as_ref().is_none_or(|t| {
            self.n_rows
                .checked_mul(self.n_states)
                .and_then(|n| n.checked_mul(self.d))
                == Some(t.len())
        });
        if !ordered
            || !by_next_ok
            || self.d == 0
            || self.next_state.iter().any(|&s| s >= self.n_states)
        {
            return Err(CoreError::InvalidParameter(
                "not a consistent saved mixture features state".into(),
            ));
        }
        Ok(())
    }

    pub fn n_rows(&self) -> usize {
        self.n_rows
    }
    pub fn n_states(&self) -> usize {
        self.n_states
    }
    pub fn dim(&self) -> usize {
        self.d
    }
    pub fn nnz(&self) -> usize {
        self.next_state.len()
    }

    /// `out[(r, :)] = sum_{s'} phi(s'|r) v(s')`, out row-major (n_rows, d). Terms with
    /// v(s') = 0 are skipped; the others are added in the stored order of s'.
    pub fn phi_v(&self, v: &[f64], out: &mut [f64]) -> CoreResult<()> {
        check_len("value vector", v.len(), self.n_states)?;
        check_finite("value vector", v)?;
        check_len("phi_v output", out.len(), self.n_rows * self.d)?;
        if let Some(t) = &self.by_next {
            // out = sum_{s'} v(s') F[s'] in increasing s' (the sparse loops' order; the zero
            // features they skip add +0.0, which changes no sum that is not -0.0, and a sum of
            // products starting from +0.0 is never -0.0)
            let block = self.n_rows * self.d;
            out.iter_mut().for_each(|x| *x = 0.0);
            for (s, f) in t.chunks_exact(block).enumerate() {
                let vs = v[s];
                if vs != 0.0 {
                    out.iter_mut().zip(f).for_each(|(o, x)| *o += vs * x);
                }
            }
            return Ok(());
        }
        // A fixed-size accumulator in registers for the usual dimensions (d <= 16); the same
        // additions in the same order as the general loop, so the results are identical.
        macro_rules! fixed {
            ($($n:literal)*) => {
                match self.d {
                    $($n => self.phi_v_fixed::<$n>(v, out),)*
                    _ => self.phi_v_any(v, out),
                }
            };
        }
        fixed!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16);
        Ok(())
    }

    fn phi_v_fixed<const D: usize>(&self, v: &[f64], out: &mut [f64]) {
        for (r, o) in out.chunks_exact_mut(D).enumerate() {
            self.weighted_row::<D>(r, |s| v[s], o);
        }
    }

    /// `phi_V(row)` for one row (the same sums, in the same order, as `phi_v`): UCRL-VTR+'s
    /// `phi_{V^2}(s_h, a_h)` at the visited pairs only.
    pub fn phi_v_row(&self, row: usize, v: &[f64], out: &mut [f64]) -> CoreResult<()> {
        if row >= self.n_rows {
            return Err(CoreError::Shape(format!(
                "row {row} out of range ({})",
                self.n_rows
            )));
        }
        check_len("value vector", v.len(), self.n_states)?;
        check_len("phi_v output", out.len(), self.d)?;
        self.weighted_row_any(row, |s| v[s], out);
        Ok(())
    }

    fn phi_v_any(&self, v: &[f64], out: &mut [f64]) {
        for (r, o) in out.chunks_exact_mut(self.d).enumerate() {
            self.weighted_row_any(r, |s| v[s], o);
        }
    }

    /// `lo[r] = min`, `hi[r] = max` of `v(s')` over the support of row r: the next states s'
    /// with a nonzero feature phi(s'|r). Every model of the mixture puts its mass of (s, a) on
    /// that support, so `r(s, a) + [lo, hi]` contains its Q_h(s, a) (the support clip). A row
    /// with no support gets `[0, 0]`.
    pub fn support_range(&self, v: &[f64], lo: &mut [f64], hi: &mut [f64]) -> CoreResult<()> {
        check_len("value vector", v.len(), self.n_states)?;
        check_len("support minima", lo.len(), self.n_rows)?;
        check_len("support maxima", hi.len(), self.n_rows)?;
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: only taken when the CPU reports AVX2 (comparisons only: no rounding).
                unsafe { self.support_range_avx2(v, lo, hi) };
                return Ok(());
            }
        }
        self.support_range_impl(v, lo, hi);
        Ok(())
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn support_range_avx2(&self, v: &[f64], lo: &mut [f64], hi: &mut [f64]) {
        self.support_range_impl(v, lo, hi)
    }

    #[inline(always)]
    fn support_range_impl(&self, v: &[f64], lo: &mut [f64], hi: &mut [f64]) {
        for (r, (l, h)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
            (*l, *h) = self.row_extremes(r, v);
        }
    }

    /// `row_range(r, v)` ((0, 0) without support), four lanes at a time: each lane keeps the
    /// first of its smallest / largest values by row_range's comparisons (NaN ignored), and the
    /// lanes are then compared. Equal values have equal bits but for zeros, so this is
    /// row_range's result unless an extreme is a zero, whose sign depends on the order: such
    /// rows are scanned in row_range's order.
    #[inline(always)]
    fn row_extremes(&self, r: usize, v: &[f64]) -> (f64, f64) {
        let next = &self.next_state[self.indptr[r]..self.indptr[r + 1]];
        let (mut mn, mut mx) = ([f64::INFINITY; 4], [f64::NEG_INFINITY; 4]);
        let mut quads = next.chunks_exact(4);
        for q in &mut quads {
            let x = [v[q[0]], v[q[1]], v[q[2]], v[q[3]]];
            for l in 0..4 {
                mn[l] = if x[l] < mn[l] { x[l] } else { mn[l] };
            }
            for l in 0..4 {
                mx[l] = if x[l] > mx[l] { x[l] } else { mx[l] };
            }
        }
        let rest = quads.remainder().iter().map(|&s| v[s]);
        let a = (mn.into_iter().chain(rest.clone()))
            .fold(f64::INFINITY, |a, x| if x < a { x } else { a });
        let b =
            (mx.into_iter().chain(rest)).fold(f64::NEG_INFINITY, |b, x| if x > b { x } else { b });
        if next.is_empty() || a == 0.0 || b == 0.0 {
            return self.row_range(r, v).unwrap_or((0.0, 0.0));
        }
        (a, b)
    }

    /// The min and max of `v` over row r's support (None: no support).
    ///
    /// By comparisons (`x < a`, `x > b`), not `f64::min` / `max`, whose NaN handling costs a chain
    /// of four instructions per entry: v is finite here (values of a plan), where the two give the
    /// same extremes except possibly the sign of a zero extreme, which no caller can tell
    /// (`(v - lo) / (hi - lo)` of a zero v at a zero lo is a zero either way, skipped, and a zero
    /// width is flat either way).
    fn row_range(&self, r: usize, v: &[f64]) -> Option<(f64, f64)> {
        let next = &self.next_state[self.indptr[r]..self.indptr[r + 1]];
        let (mut a, mut b) = (f64::INFINITY, f64::NEG_INFINITY);
        for &s in next {
            let x = v[s];
            a = if x < a { x } else { a };
            b = if x > b { x } else { b };
        }
        (!next.is_empty()).then_some((a, b))
    }

    /// The normalized target of one row r (in range) into `f` (n_states): zero off the row's
    /// support and `amp (v(s') - lo) / (hi - lo)` on it, with [lo, hi] the range of v over the
    /// support; `amp` on the whole support where that range is at most `tol` (flat: then
    /// phi_f = amp sum_{s'} phi(s'|r), the mass features).
    pub fn normalized_target(&self, row: usize, v: &[f64], tol: f64, amp: f64, f: &mut [f64]) {
        f.iter_mut().for_each(|x| *x = 0.0);
        let Some((a, b)) = self.row_range(row, v) else {
            return;
        };
        let range = b - a;
        for &s in &self.next_state[self.indptr[row]..self.indptr[row + 1]] {
            f[s] = if range <= tol {
                amp
            } else {
                amp * ((v[s] - a) / range)
            };
        }
    }

    /// `phi_v_row(row, f)` of the normalized target `f` that [`Self::normalized_target`] gives
    /// for `v` (same terms in the same order: the same bits), without building `f`; `range` is
    /// v's (min, max) over the row's support (`support_range`).
    pub fn normalized_phi_row(
        &self,
        row: usize,
        v: &[f64],
        range: (f64, f64),
        tol: f64,
        amp: f64,
        out: &mut [f64],
    ) {
        let (lo, width) = (range.0, range.1 - range.0);
        let f = |s: usize| {
            if width <= tol {
                amp
            } else {
                amp * ((v[s] - lo) / width)
            }
        };
        macro_rules! fixed {
            ($($n:literal)*) => {
                match self.d {
                    $($n => self.weighted_row::<$n>(row, f, out),)*
                    _ => self.weighted_row_any(row, f, out),
                }
            };
        }
        fixed!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16);
    }

    /// sum over row's support of f(s') phi(s'|row) in support order, skipping f(s') = 0: every
    /// phi_v / normalized-feature sum (so they agree bit for bit).
    fn weighted_row<const D: usize>(&self, row: usize, f: impl Fn(usize) -> f64, out: &mut [f64]) {
        let mut acc = [0.0; D];
        for k in self.indptr[row]..self.indptr[row + 1] {
            let fs = f(self.next_state[k]);
            if fs != 0.0 {
                let x: &[f64; D] = self.values[k * D..(k + 1) * D].try_into().unwrap();
                for i in 0..D {
                    acc[i] += fs * x[i];
                }
            }
        }
        out.copy_from_slice(&acc);
    }

    fn weighted_row_any(&self, row: usize, f: impl Fn(usize) -> f64, out: &mut [f64]) {
        out.iter_mut().for_each(|x| *x = 0.0);
        for k in self.indptr[row]..self.indptr[row + 1] {
            let fs = f(self.next_state[k]);
            if fs != 0.0 {
                for (oi, fi) in out
                    .iter_mut()
                    .zip(&self.values[k * self.d..(k + 1) * self.d])
                {
                    *oi += fs * fi;
                }
            }
        }
    }

    /// The features of one row (s, a) against one next state, d values (zeros if absent).
    pub fn feature(&self, row: usize, next: usize) -> CoreResult<Vec<f64>> {
        if row >= self.n_rows || next >= self.n_states {
            return Err(CoreError::Shape(format!(
                "feature index ({row}, {next}) out of range ({}, {})",
                self.n_rows, self.n_states
            )));
        }
        for k in self.indptr[row]..self.indptr[row + 1] {
            if self.next_state[k] == next {
                return Ok(self.values[k * self.d..(k + 1) * self.d].to_vec());
            }
        }
        Ok(vec![0.0; self.d])
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn fused_normalized_features_equal_target_then_phi_bit_for_bit() {
        // 4 rows over 5 next states, supports of 1-5 states (a flat value for some v); d = 3
        // (the fixed-size path) and 17 (the general one)
        for d in [3, 17] {
            let mut dense = vec![0.0; 4 * 5 * d];
            for (i, x) in dense.iter_mut().enumerate() {
                if (i / d) % 5 <= (i / (5 * d)) + 1 {
                    *x = ((i * 29 % 13) as f64 - 6.0) / 9.0;
                }
            }
            let f = super::MixtureFeatures::from_dense(&dense, 4, 5, d).unwrap();
            for v in [
                [0.3, 1.1, 0.0, 2.9, 0.7],
                [1.0; 5],
                [0.0, 0.0, 4.0, 1e-12, 3.0],
            ] {
                let (mut lo, mut hi) = (vec![0.0; 4], vec![0.0; 4]);
                f.support_range(&v, &mut lo, &mut hi).unwrap();
                for row in 0..4 {
                    let (mut t, mut a, mut b) = (vec![0.0; 5], vec![0.0; d], vec![0.0; d]);
                    f.normalized_target(row, &v, 1e-9, 7.0, &mut t);
                    f.phi_v_row(row, &t, &mut a).unwrap();
                    f.normalized_phi_row(row, &v, (lo[row], hi[row]), 1e-9, 7.0, &mut b);
                    let bits = |x: &Vec<f64>| x.iter().map(|y| y.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&a), bits(&b));
                }
            }
        }
    }

    #[test]
    fn dense_and_sparse_paths_agree_bit_for_bit() {
        // 3 rows, 4 next states, d = 2; row 0 dense, rows 1-2 sparse enough to stay under half
        let mut dense = vec![0.0; 3 * 4 * 2];
        for (i, x) in dense.iter_mut().enumerate() {
            if i < 8 || i % 5 == 0 {
                *x = ((i * 37 % 11) as f64 - 5.0) / 7.0;
            }
        }
        let f = super::MixtureFeatures::from_dense(&dense, 3, 4, 2).unwrap();
        let mut sparse = f.clone();
        sparse.by_next = None;
        let v = [0.3, 0.0, 1.7, 2.9];
        let (mut a, mut b) = (vec![0.0; 6], vec![0.0; 6]);
        let mut forced = f.clone();
        if forced.by_next.is_none() {
            let mut t = vec![0.0; 24];
            for r in 0..3 {
                for s in 0..4 {
                    for k in 0..2 {
                        t[(s * 3 + r) * 2 + k] = dense[(r * 4 + s) * 2 + k];
                    }
                }
            }
            forced.by_next = Some(t);
        }
        forced.phi_v(&v, &mut a).unwrap();
        sparse.phi_v(&v, &mut b).unwrap();
        assert_eq!(a, b);
        for r in 0..3 {
            let mut row = [0.0; 2];
            sparse.phi_v_row(r, &v, &mut row).unwrap();
            assert_eq!(row[..], b[r * 2..r * 2 + 2]);
        }
    }

    use super::*;

    #[test]
    fn support_range_equals_row_range_bit_for_bit() {
        // the old per-entry scan (row_range) is the oracle; supports of 0 to 23 entries (past a
        // few lanes of four, odd remainders), values with ties, signed zeros, NaN, infinities
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let bits = |x: &[f64]| x.iter().map(|y| y.to_bits()).collect::<Vec<_>>();
        for n_states in [1, 2, 4, 5, 9, 16, 23] {
            let (n_rows, d) = (13, 2);
            let mut dense = vec![0.0; n_rows * n_states * d];
            for r in 0..n_rows {
                let p = rng.random_range(0.0..1.2);
                for s in 0..n_states {
                    if rng.random_range(0.0..1.0) < p {
                        dense[(r * n_states + s) * d + 1] = 1.0;
                    }
                }
            }
            let f = MixtureFeatures::from_dense(&dense, n_rows, n_states, d).unwrap();
            let pool = [
                0.0,
                -0.0,
                1.5,
                -2.0,
                f64::NAN,
                f64::INFINITY,
                1e-300,
                -1e-300,
            ];
            for trial in 0..60 {
                let v: Vec<f64> = (0..n_states)
                    .map(|_| match trial % 6 {
                        0 => rng.random_range(-3.0..3.0),
                        1 => pool[rng.random_range(0..4)],
                        2 => pool[rng.random_range(0..8)],
                        3 => [0.0, -0.0, 1.0][rng.random_range(0..3)], // a zero minimum
                        4 => [0.0, -0.0, -1.0][rng.random_range(0..3)], // a zero maximum
                        _ => [0.0, -0.0][rng.random_range(0..2)],
                    })
                    .collect();
                let (mut lo, mut hi) = (vec![9.0; n_rows], vec![9.0; n_rows]);
                f.support_range(&v, &mut lo, &mut hi).unwrap();
                let (mut plo, mut phi) = (vec![9.0; n_rows], vec![9.0; n_rows]);
                f.support_range_impl(&v, &mut plo, &mut phi);
                let (want_lo, want_hi): (Vec<f64>, Vec<f64>) = (0..n_rows)
                    .map(|r| f.row_range(r, &v).unwrap_or((0.0, 0.0)))
                    .unzip();
                let at = format!("S {n_states} trial {trial}");
                assert_eq!(bits(&lo), bits(&want_lo), "{at}");
                assert_eq!(bits(&hi), bits(&want_hi), "{at}");
                assert_eq!((bits(&plo), bits(&phi)), (bits(&lo), bits(&hi)), "{at}");
            }
        }
    }

    #[test]
    fn phi_v_matches_dense() {
        let (rows, s, d) = (3, 4, 2);
        let dense: Vec<f64> = (0..rows * s * d)
            .map(|i| if i % 3 == 0 { 0.0 } else { i as f64 * 0.1 })
            .collect();
        let f = MixtureFeatures::from_dense(&dense, rows, s, d).unwrap();
        let v = [1.0, -2.0, 0.5, 3.0];
        let mut out = vec![0.0; rows * d];
        f.phi_v(&v, &mut out).unwrap();
        for r in 0..rows {
            for k in 0..d {
                let want: f64 = (0..s).map(|sp| dense[(r * s + sp) * d + k] * v[sp]).sum();
                assert!((out[r * d + k] - want).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn normalized_target_by_hand() {
        // row 0: support {0, 2}; row 1: support {1} only; v = (2, 9, 6): over row 0's support
        // lo = 2, hi = 6, so f = amp (0, 0, 1)
        let mut dense = vec![0.0; 2 * 3 * 2];
        dense[0] = 1.0; // (r 0, s' 0)
        dense[4] = 0.5; // (r 0, s' 2)
        dense[5] = 0.5;
        dense[8] = 0.25; // (r 1, s' 1)
        dense[9] = 0.75;
        let feat = MixtureFeatures::from_dense(&dense, 2, 3, 2).unwrap();
        let v = [2.0, 9.0, 6.0];
        let mut f = [7.0; 3];
        feat.normalized_target(0, &v, 1e-9, 4.0, &mut f);
        assert_eq!(f, [0.0, 0.0, 4.0]);
        let mut x = [0.0; 2];
        feat.phi_v_row(0, &f, &mut x).unwrap();
        assert_eq!(x, [2.0, 2.0]);
        // flat (one next state): amp on the support, phi_f = amp x the mass features
        feat.normalized_target(1, &v, 1e-9, 4.0, &mut f);
        assert_eq!(f, [0.0, 4.0, 0.0]);
        feat.phi_v_row(1, &f, &mut x).unwrap();
        assert_eq!(x, [1.0, 3.0]);
        // a spread within the tolerance is flat too
        let v = [2.0, 9.0, 2.0 + 1e-12];
        feat.normalized_target(0, &v, 1e-9, 4.0, &mut f);
        assert_eq!(f, [4.0, 0.0, 4.0]);
    }

    #[test]
    fn support_range_is_min_and_max_over_the_nonzero_next_states() {
        // row 0: support {0, 2}; row 1: support {1, 2, 3}; row 2: no support
        let (rows, s, d) = (3, 4, 2);
        let mut dense = vec![0.0; rows * s * d];
        for (r, sp) in [(0, 0), (0, 2), (1, 1), (1, 2), (1, 3)] {
            dense[(r * s + sp) * d + 1] = 0.5;
        }
        let f = MixtureFeatures::from_dense(&dense, rows, s, d).unwrap();
        let v = [4.0, -1.0, 2.5, 7.0];
        let (mut lo, mut hi) = (vec![9.0; 3], vec![9.0; 3]);
        f.support_range(&v, &mut lo, &mut hi).unwrap();
        assert_eq!(lo, vec![2.5, -1.0, 0.0]);
        assert_eq!(hi, vec![4.0, 7.0, 0.0]);
        assert!(f.support_range(&v[..3], &mut lo, &mut hi).is_err());
    }
}
