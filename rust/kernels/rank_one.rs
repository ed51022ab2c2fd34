//! Design matrices `Lambda = lambda I + sum_i x_i x_i^T` and their inverses.
//!
//! `ShermanMorrison` keeps the exact `Lambda` and its inverse, updated in O(d^2) per
//! rank-one term and re-factorized (Cholesky) every `refactor_every` updates so that
//! rounding never accumulates. `spd_inverse` / `spd_solve` handle the noisy case of the
//! private algorithms (`Lambda + tree noise + shift`), which changes wholesale at each
//! release and is therefore factorized from scratch, with a named error when it is not
//! positive definite.

use nalgebra::{DMatrix, DVector};

use crate::errors::{any_non_finite, check_finite, check_len, CoreError, CoreResult};

/// Sherman-Morrison subtracts `u u^T / (1 + x^T u)` (u = Lambda^{-1} x) from Lambda^{-1}: where
/// `1 + x^T u` is large (x along a direction the design has barely seen: a tiny lam) the two
/// nearly cancel and the new inverse loses about log10(1 + x^T u) digits (lam = 1e-12, d = 1,
/// x = 1: 1.000122 for 1 / (1 + 1e-12)). Beyond this bound the update factorizes the new Lambda
/// instead. `x^T u <= ||x||^2 / lam`, so features of norm <= 1 with lam >= 1 / (1e6 - 1) (just
/// above 1e-6) never reach it; at lam = 1e-6 a unit x along an unseen direction gives 1 + 1e6.
const SM_CANCEL_LIMIT: f64 = 1e6;

/// Inverse of a symmetric positive-definite matrix given row-major (symmetric, so
/// row- and column-major agree). The input is symmetrized first, so rounding
/// asymmetry in a noisy sum never breaks the factorization.
pub fn spd_inverse(a: &[f64], d: usize) -> CoreResult<Vec<f64>> {
    if d == 0 {
        return Err(CoreError::Shape("matrix dimension must be >= 1".into()));
    }
    check_len("matrix", a.len(), d * d)?;
    let mut out = vec![0.0; d * d];
    spd_inverse_into(a, d, &mut out)?;
    Ok(out)
}

/// [`spd_inverse`] into `out` (d x d), allocation-free for d <= 11 (the released design matrices
/// of every step: this runs H times per user); `out` is unchanged on error.
pub fn spd_inverse_into(a: &[f64], d: usize, out: &mut [f64]) -> CoreResult<()> {
    if d == 0 {
        return Err(CoreError::Shape("matrix dimension must be >= 1".into()));
    }
    check_len("matrix", a.len(), d * d)?;
    check_len("inverse", out.len(), d * d)?;
    check_finite("matrix", a)?;
    // Cholesky L L^T of (A + A^T) / 2, then L^{-1} and A^{-1} = L^{-T} L^{-1}: O(d^3) flops in
    // plain loops on stack scratch (the released matrices are small and change every episode,
    // so allocation, not arithmetic, dominated the general-purpose route). The result is
    // exactly symmetric by construction.
    let (mut stack, mut heap) = ([0.0f64; 242], Vec::new());
    let l: &mut [f64] = if 2 * d * d <= stack.len() {
        &mut stack[..2 * d * d]
    } else {
        heap.resize(2 * d * d, 0.0);
        &mut heap
    };
    let (l, li) = l.split_at_mut(d * d);
    if !super::spd_blocks::cholesky(a, d, l) {
        return Err(not_positive_definite(d));
    }
    super::spd_blocks::factor_inverse(l, d, li);
    inverse_from_factor(li, d, out);
    Ok(())
}

/// `out = Li^T Li` (symmetric, d x d) from the lower-triangular `li`: entry (i, j), j >= i, adds
/// li[k][i] li[k][j] for k = j..d in k order from +0. Four entries j0..j0 + 4 of a row at a time
/// (their sums start at k = j0 + q: the first three k add to the lanes already started), so four
/// independent sums are in flight and each k reads four adjacent li[k][j]; the same sums, bit for
/// bit, as one entry at a time.
#[inline]
fn inverse_from_factor(li: &[f64], d: usize, out: &mut [f64]) {
    for i in 0..d {
        let mut j0 = i;
        while j0 + 4 <= d {
            let mut acc = [0.0f64; 4];
            for k in j0..j0 + 3 {
                let xi = li[k * d + i];
                for (q, a) in acc.iter_mut().enumerate().take(k - j0 + 1) {
                    *a += xi * li[k * d + j0 + q];
                }
            }
            for k in j0 + 3..d {
                let xi = li[k * d + i];
                let row: &[f64; 4] = li[k * d + j0..k * d + j0 + 4].try_into().unwrap();
                for (a, l) in acc.iter_mut().zip(row) {
                    *a += xi * l;
                }
            }
            for (q, s) in acc.into_iter().enumerate() {
                out[i * d + j0 + q] = s;
                out[(j0 + q) * d + i] = s;
            }
            j0 += 4;
        }
        for j in j0..d {
            let mut s = 0.0;
            for k in j..d {
                s += li[k * d + i] * li[k * d + j];
            }
            out[i * d + j] = s;
            out[j * d + i] = s;
        }
    }
}

fn not_positive_definite(d: usize) -> CoreError {
    CoreError::NotPositiveDefinite(format!(
        "the {d}x{d} (noisy) design matrix is not positive definite; \
         the privacy noise exceeded the regularization shift"
    ))
}

/// Solve `A x = b` for symmetric positive-definite `A` (row-major, d x d).
pub fn spd_solve(a: &[f64], d: usize, b: &[f64]) -> CoreResult<Vec<f64>> {
    check_len("right-hand side", b.len(), d)?;
    check_finite("right-hand side", b)?;
    let chol = cholesky(a, d)?;
    let x = chol.solve(&DVector::from_column_slice(b));
    Ok(x.as_slice().to_vec())
}

/// `out[k] = m[k] v[k]` for a stack of row-major d x d matrices and d-vectors (the released
/// `w~_h = Lambda~_h^{-1} u~_h` for every h), each entry summed left to right.
pub fn batched_matvec(m: &[f64], v: &[f64], d: usize, out: &mut [f64]) -> CoreResult<()> {
    if d == 0 {
        return Err(CoreError::Shape("dimension must be >= 1".into()));
    }
    let n = v.len() / d;
    check_len("vectors", v.len(), n * d)?;
    check_len("matrices", m.len(), n * d * d)?;
    check_len("output", out.len(), n * d)?;
    for ((mk, vk), ok) in m
        .chunks_exact(d * d)
        .zip(v.chunks_exact(d))
        .zip(out.chunks_exact_mut(d))
    {
        for (row, o) in mk.chunks_exact(d).zip(ok.iter_mut()) {
            let mut acc = 0.0;
            for (a, b) in row.iter().zip(vk) {
                acc += a * b;
            }
            *o = acc;
        }
    }
    Ok(())
}

/// Smallest eigenvalue of a symmetric matrix (for diagnostics and tests).
pub fn min_eigenvalue(a: &[f64], d: usize) -> CoreResult<f64> {
    if d == 0 {
        return Err(CoreError::Shape("matrix dimension must be >= 1".into()));
    }
    check_len("matrix", a.len(), d * d)?;
    check_finite("matrix", a)?;
    let m = symmetrized(&DMatrix::from_column_slice(d, d, a));
    let ev = m.symmetric_eigenvalues();
    Ok(ev.iter().cloned().fold(f64::INFINITY, f64::min))
}

fn cholesky(a: &[f64], d: usize) -> CoreResult<nalgebra::Cholesky<f64, nalgebra::Dyn>> {
    if d == 0 {
        return Err(CoreError::Shape("matrix dimension must be >= 1".into()));
    }
    check_len("matrix", a.len(), d * d)?;
    check_finite("matrix", a)?;
    let m = symmetrized(&DMatrix::from_column_slice(d, d, a));
    m.cholesky().ok_or_else(|| not_positive_definite(d))
}

fn nonzeros_at_most_one(x: &[f64]) -> bool {
    x.iter().filter(|v| **v != 0.0).nth(1).is_none()
}

fn symmetrized(m: &DMatrix<f64>) -> DMatrix<f64> {
    m * 0.5 + m.transpose() * 0.5
}

/// `Lambda = lambda I + sum x x^T` and `Lambda^{-1}`, maintained by Sherman–Morrison.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
pub struct ShermanMorrison {
    d: usize,
    lam: f64,
    matrix: DMatrix<f64>,
    inverse: DMatrix<f64>,
    since_refactor: usize,
    refactor_every: usize,
    updates: u64,
    /// Lambda (and so its inverse) is diagonal: every update so far had at most one nonzero
    /// (tabular one-hot features). New in save format 2.
    diagonal: bool,
    work: DVector<f64>,
    /// The inverse's diagonal, contiguous (built on first use, patched by the one-hot update,
    /// dropped by every other change of the inverse).
    #[serde(skip)]
    inverse_diagonal: std::sync::OnceLock<Vec<f64>>,
    /// Every off-diagonal entry of Lambda and its inverse is known to be +0 (set by `new` and
    /// by the diagonal refactorization, kept by one-hot updates; a factorized update and a load
    /// clear it): the diagonal refactorization then reads and writes the diagonal only, O(d),
    /// and leaves the off-diagonal pages untouched (a tabular d of thousands: never mapped).
    #[serde(skip)]
    plain: bool,
}

impl ShermanMorrison {
    pub fn new(d: usize, lam: f64, refactor_every: usize) -> CoreResult<Self> {
        if d == 0 {
            return Err(CoreError::Shape("dimension d must be >= 1".into()));
        }
        // 1/lam must be finite too: a subnormal lam would start the inverse at infinity
        if !(lam.is_finite() && lam > 0.0 && (1.0 / lam).is_finite()) {
            return Err(CoreError::InvalidParameter(format!(
                "regularization lambda must be finite and > 0 with 1/lambda finite, got {lam}"
            )));
        }
        if refactor_every == 0 {
            return Err(CoreError::InvalidParameter(
                "refactor_every must be >= 1".into(),
            ));
        }
        // d x d must be addressable (d = 2^32 wrapped to a tiny buffer written as d x d)
        if d.checked_mul(d).and_then(|n| n.checked_mul(16)).is_none() {
            return Err(CoreError::Shape(format!(
                "dimension d = {d}: a d x d matrix does not fit in memory"
            )));
        }
        // lam I and I / lam from zeroed allocations with the diagonal written (the entries of
        // `identity * lam` and `identity / lam` bit for bit: +0 off the diagonal)
        let scaled_eye = |v: f64| {
            let mut m = DMatrix::from_vec(d, d, vec![0.0; d * d]);
            (0..d).for_each(|j| m[(j, j)] = v);
            m
        };
        Ok(ShermanMorrison {
            d,
            lam,
            matrix: scaled_eye(lam),
            inverse: scaled_eye(1.0 / lam),
            since_refactor: 0,
            refactor_every,
            updates: 0,
            diagonal: true,
            work: DVector::zeros(d),
            inverse_diagonal: std::sync::OnceLock::new(),
            plain: true,
        })
    }

    pub fn dim(&self) -> usize {
        self.d
    }
    pub fn lam(&self) -> f64 {
        self.lam
    }
    pub fn updates(&self) -> u64 {
        self.updates
    }
    /// The inverse was recomputed as a whole by the last update (a refactorization, periodic or
    /// the overflow / cancellation fallback): every entry may have moved, not only the updated ones.
    pub fn just_refactorized(&self) -> bool {
        self.since_refactor == 0
    }
    /// Lambda is known to be diagonal (every update had at most one nonzero): then
    /// `Lambda^{-1} u` is `inverse_ii u_i` entry by entry.
    pub fn is_diagonal(&self) -> bool {
        self.diagonal
    }
    /// Row-major (= column-major, symmetric) copy of Lambda.
    pub fn matrix(&self) -> &[f64] {
        self.matrix.as_slice()
    }
    pub fn inverse(&self) -> &[f64] {
        self.inverse.as_slice()
    }
    /// Lambda and its inverse are diagonal with every off-diagonal entry +0 (known, not
    /// scanned): their diagonals are all there is to copy.
    pub fn is_plain_diagonal(&self) -> bool {
        self.plain && self.diagonal
    }
    /// The entries `inverse_ii`, contiguous (the same values as [`Self::inverse`]'s diagonal).
    pub fn inverse_diagonal(&self) -> &[f64] {
        self.inverse_diagonal.get_or_init(|| {
            let (d, inv) = (self.d, self.inverse.as_slice());
            (0..d).map(|i| inv[i * d + i]).collect()
        })
    }

    /// One rank-one update `Lambda += x x^T` (O(d^2)).
    pub fn update(&mut self, x: &[f64]) -> CoreResult<()> {
        check_len("feature vector", x.len(), self.d)?;
        check_finite("feature vector", x)?;
        self.check_growth(x)?;
        self.update_unchecked(x)
    }

    /// Refuse an x that would overflow Lambda's diagonal (and with it, Lambda being PSD, every
    /// entry): the running sum is checked, not only each ||x||^2. O(d), on the public updates only.
    fn check_growth(&self, x: &[f64]) -> CoreResult<()> {
        for (i, xi) in x.iter().enumerate() {
            if !(self.matrix[(i, i)] + xi * xi).is_finite() {
                return Err(CoreError::NonFinite(format!(
                    "Lambda[{i}, {i}] + x_{i}^2 overflows (Lambda[{i}, {i}] = {:e}, x_{i} = {xi:e})",
                    self.matrix[(i, i)]
                )));
            }
        }
        Ok(())
    }

    /// `Lambda += sum_i x_i x_i^T` for the rows of a row-major (n, d) block.
    pub fn update_batch(&mut self, xs: &[f64]) -> CoreResult<()> {
        if !xs.len().is_multiple_of(self.d) {
            return Err(CoreError::Shape(format!(
                "batch of features: length {} is not a multiple of d = {}",
                xs.len(),
                self.d
            )));
        }
        check_finite("batch of features", xs)?;
        for x in xs.chunks_exact(self.d) {
            self.check_growth(x)?;
            self.update_unchecked(x)?;
        }
        Ok(())
    }

    /// [`Self::update`] for an x that is zero outside the columns `nz` (ascending), inputs
    /// trusted: the one-hot test reads those columns only.
    pub fn update_within(&mut self, x: &[f64], nz: &[usize]) -> CoreResult<()> {
        self.update_among(x, nz.iter().copied())
    }

    fn update_unchecked(&mut self, x: &[f64]) -> CoreResult<()> {
        self.update_among(x, 0..self.d)
    }

    /// The O(1) one-hot update when Lambda is diagonal and x has exactly one nonzero among
    /// `cols`, the dense update otherwise.
    fn update_among(&mut self, x: &[f64], cols: impl Iterator<Item = usize>) -> CoreResult<()> {
        if self.diagonal {
            let mut it = cols.filter(|&j| x[j] != 0.0);
            if let (Some(j), None) = (it.next(), it.next()) {
                if self.update_diagonal(j, x[j]) {
                    return Ok(());
                }
            }
        }
        self.update_dense(x)
    }

    /// [`Self::update_dense`] for a diagonal Lambda and x = xj e_j, O(1): the dense path's u is
    /// xj inv_jj e_j (its other entries +0), so only the (j, j) entries move, by the same
    /// operations in the same order (bit for bit; tested). False, nothing changed, when the
    /// dense path would take its overflow branch.
    fn update_diagonal(&mut self, j: usize, xj: f64) -> bool {
        let d = self.d;
        let jj = j * d + j;
        let uj = xj * self.inverse.as_slice()[jj];
        let denom = 1.0 + xj * uj;
        let scale = 1.0 / denom;
        if !(uj.abs() * uj.abs() * scale).is_finite() || !scale.is_finite() {
            return false;
        }
        if denom > SM_CANCEL_LIMIT {
            // the new entry's inverse as Cholesky gives it (refactorize_diagonal, the dense path's)
            let s = (self.matrix.as_slice()[jj] + xj * xj).sqrt();
            self.inverse.as_mut_slice()[jj] = (1.0 / s) / s;
        } else {
            self.inverse.as_mut_slice()[jj] -= (uj * uj) * scale;
        }
        if let Some(diag) = self.inverse_diagonal.get_mut() {
            diag[j] = self.inverse.as_slice()[jj];
        }
        self.matrix.as_mut_slice()[jj] += xj * xj;
        self.updates += 1;
        self.since_refactor += 1;
        if self.since_refactor >= self.refactor_every {
            self.refactorize();
        }
        true
    }

    fn update_dense(&mut self, x: &[f64]) -> CoreResult<()> {
        let d = self.d;
        // u = Lambda^{-1} x (column-major symmetric: column j scaled by x_j).
        let inv = self.inverse.as_slice();
        let u = self.work.as_mut_slice();
        u.iter_mut().for_each(|v| *v = 0.0);
        for (j, &xj) in x.iter().enumerate() {
            if xj != 0.0 {
                let col = &inv[j * d..(j + 1) * d];
                for (ui, ci) in u.iter_mut().zip(col) {
                    *ui += xj * ci;
                }
            }
        }
        let denom = 1.0 + x.iter().zip(u.iter()).map(|(a, b)| a * b).sum::<f64>();
        let scale = 1.0 / denom;
        // the largest entry of u u^T / denom: finite iff the update keeps the inverse finite
        let umax = u.iter().fold(0.0f64, |m, v| {
            if v.is_finite() {
                m.max(v.abs())
            } else {
                f64::INFINITY
            }
        });
        let overflow = !(umax * umax * scale).is_finite() || !scale.is_finite();
        if overflow {
            // u u^T overflows when ||x|| / lam is beyond ~1e154 (a tiny lam): the exact matrix is
            // still finite, so factorize it; when rounding made it singular, refuse the update
            return self.update_by_factorization(x);
        }
        // the subtraction would cancel (SM_CANCEL_LIMIT): factorize the new matrix instead, or,
        // where rounding makes it singular (the state then unchanged), go on with Sherman-Morrison
        if denom > SM_CANCEL_LIMIT && self.update_by_factorization(x).is_ok() {
            return Ok(());
        }
        let u = self.work.as_slice();
        // Lambda^{-1} -= u u^T / (1 + x^T u); Lambda += x x^T. u u^T is exactly symmetric,
        // so both matrices stay exactly symmetric.
        self.inverse_diagonal.take();
        let inv = self.inverse.as_mut_slice();
        let m = self.matrix.as_mut_slice();
        for j in 0..d {
            let uj = u[j];
            let xj = x[j];
            let icol = &mut inv[j * d..(j + 1) * d];
            // (u_i u_j) * scale: IEEE products commute, so entries (i,j) and (j,i) get
            // bit-identical updates. A zero u_j changes nothing in column j (tabular one-hot
            // features keep the inverse diagonal: u has one nonzero).
            if uj != 0.0 {
                for (c, ui) in icol.iter_mut().zip(u.iter()) {
                    *c -= (uj * ui) * scale;
                }
            }
            if xj != 0.0 {
                let mcol = &mut m[j * d..(j + 1) * d];
                for (c, xi) in mcol.iter_mut().zip(x) {
                    *c += xj * xi;
                }
            }
        }
        self.updates += 1;
        self.diagonal &= nonzeros_at_most_one(x);
        self.since_refactor += 1;
        if self.since_refactor >= self.refactor_every {
            self.refactorize();
        }
        Ok(())
    }

    /// `Lambda += x x^T` with the inverse recomputed by Cholesky; the state is unchanged and the
    /// update refused when the new Lambda is numerically singular.
    fn update_by_factorization(&mut self, x: &[f64]) -> CoreResult<()> {
        let d = self.d;
        let mut next = self.matrix.clone();
        for j in 0..d {
            for i in 0..d {
                next[(i, j)] += x[i] * x[j];
            }
        }
        let inverse = symmetrized(&next)
            .cholesky()
            .map(|ch| symmetrized(&ch.inverse()))
            .filter(|inv| !any_non_finite(inv.as_slice()))
            .ok_or_else(|| {
                CoreError::NotPositiveDefinite(format!(
                    "lam I + sum x x^T is numerically singular (lam = {:e} is too small for features \
                     of norm {:e}: its inverse overflows)",
                    self.lam,
                    x.iter().map(|v| v * v).sum::<f64>().sqrt()
                ))
            })?;
        self.matrix = next;
        self.inverse = inverse;
        self.inverse_diagonal.take();
        self.plain = false;
        self.updates += 1;
        self.diagonal &= nonzeros_at_most_one(x);
        self.since_refactor = 0;
        Ok(())
    }

    /// Recompute the inverse from the exact matrix by Cholesky (the exact Lambda is PD
    /// by construction, lambda > 0, so this cannot fail; if rounding ever made it so,
    /// the Sherman–Morrison inverse is kept).
    pub fn refactorize(&mut self) {
        self.since_refactor = 0;
        self.inverse_diagonal.take();
        if !self.refactorize_diagonal() {
            self.refactorize_dense();
        }
    }

    fn refactorize_dense(&mut self) {
        let m = symmetrized(&self.matrix);
        if let Some(ch) = m.cholesky() {
            self.inverse = symmetrized(&ch.inverse());
        }
    }

    /// A diagonal Lambda (tabular one-hot features keep it so): what Cholesky and its inverse
    /// give, bit for bit ((1 / sqrt m_ii) / sqrt m_ii and exact +0 elsewhere; tested against the
    /// dense path), in O(d^2) instead of O(d^3). False, nothing changed, when Lambda is not
    /// diagonal (an off-diagonal entry other than +0) or an entry is out of the plain range.
    fn refactorize_diagonal(&mut self) -> bool {
        let d = self.d;
        let m = self.matrix.as_slice();
        // known +0 off the diagonal (`plain`, with every update one-hot): the diagonal only
        let known = self.is_plain_diagonal();
        let plain = (0..d).all(|j| {
            let v = m[j * d + j];
            v > 0.0
                && (v + v).is_finite()
                && (known || (0..d).all(|i| i == j || m[j * d + i].to_bits() == 0))
        });
        if !plain {
            return false;
        }
        let inv = self.inverse.as_mut_slice();
        if !known {
            inv.fill(0.0);
        }
        for j in 0..d {
            let s = m[j * d + j].sqrt();
            inv[j * d + j] = (1.0 / s) / s;
        }
        self.plain = true;
        true
    }

    /// Lambda^{-1} u (uses the maintained inverse: O(d^2)).
    pub fn solve(&self, u: &[f64]) -> CoreResult<Vec<f64>> {
        check_len("right-hand side", u.len(), self.d)?;
        check_finite("right-hand side", u)?;
        let v = &self.inverse * DVector::from_column_slice(u);
        Ok(v.as_slice().to_vec())
    }

    /// max |Lambda Lambda^{-1} - I| (entrywise), the drift diagnostic.
    pub fn inverse_error(&self) -> f64 {
        let p = &self.matrix * &self.inverse;
        let mut err: f64 = 0.0;
        for i in 0..self.d {
            for j in 0..self.d {
                let e = p[(i, j)] - if i == j { 1.0 } else { 0.0 };
                if e.is_nan() {
                    return f64::NAN; // f64::max drops a NaN: a broken state reported 0
                }
                err = err.max(e.abs());
            }
        }
        err
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn inverse_from_factor_equals_one_entry_at_a_time_bit_for_bit() {
        // d 1-21 and 64 (blocks of four with and without tails), lower-triangular factors with
        // zeros and magnitudes that show the order; the oracle is the previous loop
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        for d in (1..22).chain([64]) {
            let mut li = vec![0.0; d * d];
            for i in 0..d {
                for k in 0..=i {
                    let e: i32 = rng.random_range(-6..6);
                    let z = rng.random_range(0..9) == 0 && k < i;
                    li[i * d + k] = if z {
                        0.0
                    } else {
                        (rng.random::<f64>() - 0.5) * 10f64.powi(e)
                    };
                }
            }
            let mut out = vec![f64::NAN; d * d];
            inverse_from_factor(&li, d, &mut out);
            for i in 0..d {
                for j in i..d {
                    let mut s = 0.0;
                    for k in j..d {
                        s += li[k * d + i] * li[k * d + j];
                    }
                    assert_eq!(out[i * d + j].to_bits(), s.to_bits(), "d {d} ({i}, {j})");
                    assert_eq!(out[j * d + i].to_bits(), s.to_bits(), "d {d} ({j}, {i})");
                }
            }
        }
    }

    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn sherman_morrison_matches_direct_inverse() {
        let d = 7;
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut sm = ShermanMorrison::new(d, 2.0, 1_000_000).unwrap();
        let mut direct = DMatrix::<f64>::identity(d, d) * 2.0;
        for _ in 0..300 {
            let x: Vec<f64> = (0..d).map(|_| rng.random::<f64>() - 0.5).collect();
            sm.update(&x).unwrap();
            let xv = DVector::from_column_slice(&x);
            direct += &xv * xv.transpose();
        }
        let inv = direct.clone().try_inverse().unwrap();
        for (a, b) in sm.inverse().iter().zip(inv.as_slice()) {
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        }
        for (a, b) in sm.matrix().iter().zip(direct.as_slice()) {
            assert!((a - b).abs() < 1e-9);
        }
    }

    #[test]
    fn long_run_stays_accurate() {
        let d = 50;
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let mut sm = ShermanMorrison::new(d, 1.0, 1024).unwrap();
        let mut batch = vec![0.0; 1000 * d];
        for _ in 0..100 {
            for v in batch.iter_mut() {
                *v = rng.random::<f64>() * 2.0 - 1.0;
            }
            // rows with ||x|| <= 1
            for row in batch.chunks_exact_mut(d) {
                let n = row.iter().map(|v| v * v).sum::<f64>().sqrt();
                row.iter_mut().for_each(|v| *v /= n.max(1.0));
            }
            sm.update_batch(&batch).unwrap();
        }
        assert_eq!(sm.updates(), 100_000);
        assert!(sm.inverse_error() <= 1e-8, "error {}", sm.inverse_error());
    }

    #[test]
    fn not_pd_is_named_error() {
        let a = [1.0, 2.0, 2.0, 1.0];
        assert!(matches!(
            spd_inverse(&a, 2),
            Err(CoreError::NotPositiveDefinite(_))
        ));
        let a = [4.0, 1.0, 1.0, 3.0];
        let x = spd_solve(&a, 2, &[1.0, 2.0]).unwrap();
        assert!((4.0 * x[0] + x[1] - 1.0).abs() < 1e-12);
        assert!((x[0] + 3.0 * x[1] - 2.0).abs() < 1e-12);
    }

    #[test]
    fn plain_diagonal_paths_are_the_scanning_ones_bit_for_bit() {
        // new() writes lam I and I / lam from zeroed memory: identity * lam and identity / lam
        for lam in [1e-3, 0.7, 3.0] {
            let a = ShermanMorrison::new(5, lam, 8).unwrap();
            let (m, i) = (
                DMatrix::<f64>::identity(5, 5) * lam,
                DMatrix::<f64>::identity(5, 5) / lam,
            );
            assert!(a
                .matrix()
                .iter()
                .zip(m.as_slice())
                .all(|(u, v)| u.to_bits() == v.to_bits()));
            assert!(a
                .inverse()
                .iter()
                .zip(i.as_slice())
                .all(|(u, v)| u.to_bits() == v.to_bits()));
            assert!(a.is_plain_diagonal());
        }
        // the O(d) refactorization (off-diagonal known +0) against a state that has to scan and
        // fill (a restored one: plain unknown), through many refactorizations
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let d = 30;
        let mut fast = ShermanMorrison::new(d, 0.5, 16).unwrap();
        let mut scan = fast.clone();
        scan.plain = false;
        for _ in 0..400 {
            let mut x = vec![0.0; d];
            x[rng.random_range(0..d)] = rng.random_range(-1.0..1.0);
            fast.update(&x).unwrap();
            scan.update(&x).unwrap();
            for (u, v) in [
                (fast.inverse(), scan.inverse()),
                (fast.matrix(), scan.matrix()),
            ] {
                assert!(u.iter().zip(v).all(|(a, b)| a.to_bits() == b.to_bits()));
            }
        }
        // the scanning state became plain at its first refactorization; a dense update ends it
        assert!(fast.is_plain_diagonal() && scan.is_plain_diagonal());
        let mut x = vec![0.0; d];
        (x[0], x[1]) = (0.5, 0.5);
        fast.update(&x).unwrap();
        assert!(!fast.is_plain_diagonal());
    }

    #[test]
    fn diagonal_refactorization_is_the_dense_one_bit_for_bit() {
        // tabular one-hot updates keep Lambda diagonal; the O(d^2) path must give the Cholesky
        // inverse exactly, and a non-diagonal Lambda must still take the dense path
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let d = 40;
        for lam in [1e-3, 0.7, 1.0, 250.0] {
            let mut a = ShermanMorrison::new(d, lam, usize::MAX).unwrap();
            for _ in 0..500 {
                let mut x = vec![0.0; d];
                x[rng.random_range(0..d)] = rng.random_range(-1.0..1.0);
                a.update(&x).unwrap();
            }
            let mut b = a.clone();
            assert!(a.refactorize_diagonal());
            b.refactorize_dense();
            let (ia, ib) = (a.inverse(), b.inverse());
            assert!(ia.iter().zip(ib).all(|(u, v)| u.to_bits() == v.to_bits()));
            assert!(a.is_diagonal());
        }
        // the O(1) one-hot update is the dense one bit for bit (through refactorizations too)
        for lam in [1e-3, 1.0, 250.0] {
            let mut fast = ShermanMorrison::new(d, lam, 64).unwrap();
            let mut dense = fast.clone();
            for k in 0..300 {
                let mut x = vec![0.0; d];
                x[rng.random_range(0..d)] = rng.random_range(-1.0..1.0);
                fast.update(&x).unwrap();
                dense.update_dense(&x).unwrap();
                if k % 7 == 0 {
                    // the cached diagonal follows the inverse (patched, dropped, rebuilt)
                    let inv = fast.inverse();
                    let diag: Vec<f64> = (0..d).map(|i| inv[i * d + i]).collect();
                    assert_eq!(fast.inverse_diagonal(), diag.as_slice());
                }
            }
            assert!(fast.is_diagonal() && dense.is_diagonal());
            for (u, v) in [
                (fast.inverse(), dense.inverse()),
                (fast.matrix(), dense.matrix()),
            ] {
                assert!(u.iter().zip(v).all(|(a, b)| a.to_bits() == b.to_bits()));
            }
        }
        let mut c = ShermanMorrison::new(3, 1.0, usize::MAX).unwrap();
        c.update(&[0.0, 0.5, 0.0]).unwrap();
        assert!(c.is_diagonal());
        c.update(&[0.5, 0.5, 0.0]).unwrap();
        assert!(!c.is_diagonal() && !c.refactorize_diagonal());
        c.update(&[0.0, 0.0, 0.5]).unwrap();
        assert!(!c.is_diagonal()); // once dense, always dense
    }

    #[test]
    fn cancel_limit_is_reached_at_lam_1e_minus_6_not_above() {
        use super::ShermanMorrison;
        // a unit x on a fresh direction: 1 + x^T u = 1 + 1 / lam (to rounding); refactor_every
        // large, so just_refactorized() after one dense update means the factorized fallback ran
        for (lam, fallback) in [(1e-6, true), (1.1e-6, false), (1e-3, false)] {
            let mut dense = ShermanMorrison::new(2, lam, usize::MAX).unwrap();
            dense.update(&[0.6, 0.8]).unwrap();
            assert_eq!(dense.just_refactorized(), fallback, "lam = {lam}");
        }
    }

    #[test]
    fn min_eigenvalue_refuses_an_empty_matrix() {
        use super::{min_eigenvalue, CoreError};
        // d = 0 reached nalgebra's tridiagonalization, which panics on a 0 x 0 matrix
        assert!(matches!(min_eigenvalue(&[], 0), Err(CoreError::Shape(_))));
        // [[2, 1], [1, 2]] has eigenvalues 1 and 3
        assert!((min_eigenvalue(&[2.0, 1.0, 1.0, 2.0], 2).unwrap() - 1.0).abs() < 1e-12);
    }
}
