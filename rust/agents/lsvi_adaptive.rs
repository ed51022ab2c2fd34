//! The adaptive release of LSVI-UCB (calibration "adaptive", `privrl.privacy.adaptive`): the
//! same mechanisms, the same eta draws in the same order and the same released statistic bound
//! as the practical rule; only the post-processing changes. Per release, for h = H..1, with
//! V_{h+1} the backup of step h + 1 (V_{H+1} = 0), c = min V_{h+1} (when a public w1 with
//! phi^T w1 = 1 on every row exists, else 0) and rho = max (V_{h+1} - c):
//!
//!   released  u~ = (sum_i phi_i a (r_i + V_{h+1}(s'_i) - c) + eta_h) / a,  a = (H + 1) / (1 + rho)
//!             (the target a (r + V - c) lies in [0, H + 1], the plan's bound: same sensitivity,
//!             same noise; eta's effect is divided by a);
//!   design    A = eigenvalues of G~ + (lam + S_t) I floored at lam, G~ the released Gram (one-hot
//!             rows: projected on its diagonal, span{phi phi^T}, and S_t from the projected noise);
//!   estimate  m = A^{-1} u~ + c w1, privacy variance kappa^2 = (s_u / a)^2 + s_N^2 ||m - c w1||^2
//!             (one-hot: 2 s_N^2 max_i (m - c w1)_i^2), precision P = A^2 / kappa^2; combined with
//!             every earlier release j of step h, its precision inflated by the staleness
//!             d_j = ||V_j - V_{h+1}||_inf (eigenvalues e -> 1 / (1 / e + d_j^2));
//!   posterior C = P_tot^{-1} + nu^2 A^{-1} (nu = half the target's range, tau the same), prior
//!             N(c w1, tau^2 I): Sigma = (C^{-1} + I / tau^2)^{-1}, w~ = Sigma (C^{-1} m + c w1 / tau^2);
//!   backup    V_h(s) = Pi_[0, H - h] max_a (phi^T w~ + rho ||phi||_Sigma)  (0-based h; rho =
//!             `radius`, the agent's `beta_scale`, 1 by default: one posterior std).
//!
//! Tabular posterior (non-private, one-hot rows): the server holds the data, so each coordinate
//! j = (s, a) of step h gets the posterior of its own targets y = r + V_{h+1}(s') - c instead of
//! the worst case: prior N(c + nu, nu^2) on phi^T w (the mean and variance of the largest-variance
//! law on the target's range [0, 2 nu]: centred mid-range, not at its bottom), likelihood the
//! least-squares mean u_j / gram_j (no ridge: the prior is the regularizer) with per-observation
//! variance (SSR_j + nu^2) / (n_j + 1) (the targets' residual sum of squares with one
//! pseudo-observation of the worst case nu^2). The bottom-centred ridge and prior made an action
//! seen once look worse than a known one (no exploration where rewards sit near the top of the
//! range, CliffWalking); the worst-case nu kept a deterministic target's width at nu / sqrt(n).
//! Private releases carry no second moments and a noised Gram, so they keep the rule above.
//!
//! Users: optimism, greedy for min(phi^T w~ + rho ||phi||_Sigma, H - h); sampling, greedy for
//! phi^T (w~ + rho Sigma^{1/2} g), g ~ N(0, I) per user and step from the exploration stream.

use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

use super::bounds::NoiseBounds;
use crate::kernels::dense::matvec;
use crate::kernels::eigen::spectral_rebuild;
use crate::kernels::sparse::SparseRows;

/// The adaptive rule's public constants.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AdaptiveLsvi {
    /// The min-norm w1 with phi^T w1 ~ 1 (the centre's direction), and whether phi^T w1 = 1
    /// holds on every row (the value shift c needs it).
    pub w1: Vec<f64>,
    pub value_shift: bool,
    /// One-hot rows: project the released Gram on its diagonal.
    pub diagonal: bool,
    pub shift_mult: f64,
    /// The Lambda noise's bounds (Zero: non-private), eta's std, the bounds' failure probability.
    pub bounds: NoiseBounds,
    pub sigma_u: f64,
    pub alpha: f64,
    /// The width's radius in posterior standard deviations (`beta_scale`; 1: one std): scales
    /// Sigma_h^{1/2} and the bonus rows.
    pub radius: f64,
}

/// One earlier release of a step: its estimate, privacy precision and backup.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PastRelease {
    pub mean: Vec<f64>,
    pub precision: Vec<f64>,
    pub backup: Vec<f64>,
    /// The precision's eigen-decomposition, computed on the first stale use and kept (the same
    /// values every later release would recompute: O(d^3) once, not once per release). Not
    /// saved: a loaded agent recomputes it, identically.
    #[serde(skip)]
    pub eig: Option<(Vec<f64>, DMatrix<f64>)>,
}

impl PastRelease {
    pub fn new(mean: Vec<f64>, precision: Vec<f64>, backup: Vec<f64>) -> Self {
        PastRelease {
            mean,
            precision,
            backup,
            eig: None,
        }
    }
}

/// The adaptive rule's state: the spec, the releases so far, Sigma_h^{1/2} and the bonus rows.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AdaptiveState {
    pub spec: AdaptiveLsvi,
    pub history: Vec<Vec<PastRelease>>,
    /// The off-diagonal std s_N of the last released Gram.
    pub s_n: f64,
    /// Sigma_h = L L^T (H x d x d, row-major L; one-hot rows: the diagonal, H x d).
    pub factor: Vec<f64>,
    /// ||phi_r||_{Sigma_h} (H x S A).
    pub bonus: Vec<f64>,
}

/// The inputs of one step's release.
pub struct StepIn<'a> {
    pub d: usize,
    /// A and A^{-1} (d x d).
    pub design: &'a [f64],
    pub inverse: &'a [f64],
    /// u~ (already divided by a), c, a, the backup V_{h+1}, half the target's range.
    pub u: &'a [f64],
    pub c: f64,
    pub amp: f64,
    pub backup: &'a [f64],
    pub half: f64,
    /// s_N (0 non-private).
    pub s_n: f64,
    pub private: bool,
    /// Non-private one-hot rows: the data's own moments (module doc, "tabular posterior").
    pub data: Option<DataMoments<'a>>,
}

/// The data's own moments of step h's targets, per coordinate j (non-private, one-hot rows).
pub struct DataMoments<'a> {
    /// sum_i phi_ij^2 (the data's part of the design's diagonal).
    pub gram: &'a [f64],
    /// The per-observation variance of the targets, (SSR_j + nu^2) / (n_j + 1).
    pub variance: &'a [f64],
}

/// The per-observation variance of coordinate j's targets y = r + V_{h+1}(s') - c from the
/// moments kept by a non-private one-hot agent: (SSR_j + nu^2) / (n_j + 1), SSR_j the residual sum
/// of squares of the least-squares fit (sum y^2 - u_j^2 / gram_j), n_j the users with phi_j != 0,
/// nu^2 one pseudo-observation of the worst case (half the target's range, squared).
///
/// `cols[s']` lists the coordinates whose (count, reward) entries of next state s' may be nonzero
/// (a superset, any order): every other entry is (+0, +0), whose term `2 r v + c v v` is +0 for a
/// finite v and leaves the sums (from +0, never -0) as they were, so skipping it gives the dense
/// sums bit for bit. `scratch` holds at least d entries.
#[allow(clippy::too_many_arguments)]
pub fn target_variance(
    reward_sq: &[f64],
    next_count: &[f64],
    next_reward: &[f64],
    cols: &[Vec<usize>],
    shifted: &[f64],
    u: &[f64],
    gram: &[f64],
    nu2: f64,
    scratch: &mut [f64],
    out: &mut [f64],
) {
    let d = out.len();
    // next state by next state (contiguous reads); each coordinate still sums its next states in
    // ascending order, so the result is the column-by-column one, bit for bit
    let n = &mut scratch[..d];
    n.iter_mut().for_each(|v| *v = 0.0);
    let sy2 = out;
    sy2.copy_from_slice(&reward_sq[..d]);
    for ((sp, v), cs) in shifted.iter().enumerate().zip(cols) {
        let row = sp * d;
        for &j in cs {
            let (c, r) = (next_count[row + j], next_reward[row + j]);
            n[j] += c;
            sy2[j] += 2.0 * r * v + c * v * v;
        }
    }
    for (j, o) in sy2.iter_mut().enumerate() {
        let ssr = if gram[j] > 0.0 {
            (*o - u[j] * u[j] / gram[j]).max(0.0)
        } else {
            0.0
        };
        *o = (ssr + nu2) / (n[j] + 1.0);
    }
}

fn sym_eig(m: &[f64], d: usize) -> (Vec<f64>, DMatrix<f64>) {
    let x = DMatrix::from_fn(d, d, |i, j| 0.5 * (m[i * d + j] + m[j * d + i]));
    let e = x.symmetric_eigen();
    (e.eigenvalues.iter().copied().collect(), e.eigenvectors)
}

/// V diag(f(e)) V^T.
fn rebuild(e: &[f64], v: &DMatrix<f64>, f: impl Fn(f64) -> f64, out: &mut [f64]) {
    let fe: Vec<f64> = e.iter().map(|&x| f(x)).collect();
    spectral_rebuild(v.as_slice(), &fe, out);
}

impl AdaptiveLsvi {
    /// The shift S_t at variance factor `v` and the off-diagonal std s_N of the released Gram.
    pub fn shift(&self, v: f64, d: usize) -> (f64, f64) {
        let s_n = self.bounds.matrix_std(v);
        if s_n == 0.0 {
            return (0.0, 0.0);
        }
        let ups = if self.diagonal {
            // the projected noise is diagonal with entries of std sqrt(2) s_N: max_i |N_ii| <=
            // sqrt(2) s_N sqrt(2 log(2 d / alpha)) with probability >= 1 - alpha
            2.0f64.sqrt() * s_n * (2.0 * (2.0 * d as f64 / self.alpha).ln()).sqrt()
        } else {
            self.bounds.at(v).0
        };
        (self.shift_mult * ups, s_n)
    }

    /// The centre of step h's prior: c w1 (c = min V_{h+1}, capped at the step's value bound).
    pub fn centre(&self, level: f64, out: &mut [f64]) {
        out.iter_mut()
            .zip(&self.w1)
            .for_each(|(o, w)| *o = level * w);
    }
}

/// Step h's value shift and amplification (the sensitivity argument of the adaptive release):
/// `shifted` = V_{h+1} - c with c = min V_{h+1} (0 at the last step or without a value shift),
/// and a = (H + 1) / (1 + max shifted) for a private server (1 otherwise), so that the released
/// target a (r + V_{h+1}(s') - c), r in [0, 1] (the guard), lies in [0, H + 1]: the bound the
/// release plan's sensitivity and the eta noise are calibrated for. Returns (c, a).
pub fn shift_and_amplify(
    next: &[f64],
    last: bool,
    value_shift: bool,
    private: bool,
    horizon: usize,
    shifted: &mut [f64],
) -> (f64, f64) {
    let lo = next.iter().copied().fold(f64::INFINITY, f64::min);
    let c = if value_shift && !last { lo } else { 0.0 };
    let mut rho: f64 = 0.0;
    for (o, v) in shifted.iter_mut().zip(next) {
        *o = if last { 0.0 } else { v - c };
        rho = rho.max(*o);
    }
    let amp = if private {
        (horizon as f64 + 1.0) / (1.0 + rho)
    } else {
        1.0
    };
    (c, amp)
}

/// The precision-weighted combination of a step's releases, each precision inflated by its
/// staleness d_j = ||V_j - V||_inf (eigenvalues e -> 1 / (1 / e + d_j^2)): (mean, covariance).
pub fn combine(past: &mut [PastRelease], backup: &[f64], d: usize) -> (Vec<f64>, Vec<f64>) {
    let mut total = vec![0.0; d * d];
    let mut acc = vec![0.0; d];
    let mut pj = vec![0.0; d * d];
    let mut tmp = vec![0.0; d];
    for r in past.iter_mut() {
        let dj = r
            .backup
            .iter()
            .zip(backup)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        if dj > 0.0 {
            let precision = &r.precision;
            let (e, v) = r.eig.get_or_insert_with(|| sym_eig(precision, d));
            rebuild(e, v, |e| 1.0 / (1.0 / e.max(1e-300) + dj * dj), &mut pj);
        } else {
            pj.copy_from_slice(&r.precision);
        }
        total.iter_mut().zip(&pj).for_each(|(t, p)| *t += p);
        matvec(&pj, &r.mean, &mut tmp);
        acc.iter_mut().zip(&tmp).for_each(|(a, t)| *a += t);
    }
    let (e, v) = sym_eig(&total, d);
    let mut cov = vec![0.0; d * d];
    rebuild(&e, &v, |e| 1.0 / e.max(1e-12), &mut cov);
    let mut mean = vec![0.0; d];
    matvec(&cov, &acc, &mut mean);
    (mean, cov)
}

impl AdaptiveState {
    /// One step's release (module doc): the estimate into `weights`, Sigma's factor and the
    /// bonus rows of the feature table `rows` (its sparse rows) into the state; `h` the step.
    pub(crate) fn release_step(
        &mut self,
        h: usize,
        x: &StepIn<'_>,
        rows: &SparseRows,
        weights: &mut [f64],
    ) {
        if self.spec.diagonal {
            return self.release_step_diagonal(h, x, rows, weights);
        }
        let d = x.d;
        let spec = &self.spec;
        // m = A^{-1} u~ + c w1
        let mut m = vec![0.0; d];
        matvec(x.inverse, x.u, &mut m);
        m.iter_mut().zip(&spec.w1).for_each(|(a, w)| *a += x.c * w);
        let mut cov = vec![0.0; d * d];
        if x.private {
            let wn = if spec.diagonal {
                2.0 * m
                    .iter()
                    .zip(&spec.w1)
                    .map(|(a, w)| (a - x.c * w).powi(2))
                    .fold(0.0, f64::max)
            } else {
                m.iter()
                    .zip(&spec.w1)
                    .map(|(a, w)| (a - x.c * w).powi(2))
                    .sum()
            };
            let kap2 = (spec.sigma_u / x.amp).powi(2) + x.s_n * x.s_n * wn;
            let mut p = vec![0.0; d * d];
            for i in 0..d {
                for j in 0..d {
                    p[i * d + j] = (0..d)
                        .map(|k| x.design[i * d + k] * x.design[k * d + j])
                        .sum::<f64>()
                        / kap2;
                }
            }
            let past = &mut self.history[h];
            past.push(PastRelease::new(m.clone(), p, x.backup.to_vec()));
            let (mean, c) = combine(past, x.backup, d);
            m = mean;
            cov = c;
        }
        // C = P_tot^{-1} + nu^2 A^{-1}
        let nu2 = x.half * x.half;
        cov.iter_mut()
            .zip(x.inverse)
            .for_each(|(c, i)| *c += nu2 * i);
        // posterior with the prior N(c w1, tau^2 I), tau = half
        let mut w0 = vec![0.0; d];
        spec.centre(x.c, &mut w0);
        let (e, v) = sym_eig(&cov, d);
        let mut plik = vec![0.0; d * d];
        rebuild(&e, &v, |e| 1.0 / e.max(1e-12), &mut plik);
        let it2 = 1.0 / nu2;
        let mut post = plik.clone();
        for i in 0..d {
            post[i * d + i] += it2;
        }
        let (e, v) = sym_eig(&post, d);
        let mut sigma = vec![0.0; d * d];
        rebuild(&e, &v, |e| 1.0 / e, &mut sigma);
        let mut rhs = vec![0.0; d];
        matvec(&plik, &m, &mut rhs);
        rhs.iter_mut().zip(&w0).for_each(|(r, w)| *r += it2 * w);
        matvec(&sigma, &rhs, weights);
        self.set_width(h, d, &sigma, rows);
    }

    /// [`Self::release_step`] for one-hot rows, where every matrix is diagonal (the projected
    /// release, the exact Gram of one-hot features): O(d) per step; the history's precisions and
    /// the factor are kept as diagonals.
    fn release_step_diagonal(
        &mut self,
        h: usize,
        x: &StepIn<'_>,
        rows: &SparseRows,
        weights: &mut [f64],
    ) {
        if let Some(data) = &x.data {
            return self.tabular_step(h, x, data, rows, weights);
        }
        let d = x.d;
        let spec = &self.spec;
        let a: Vec<f64> = (0..d).map(|i| x.design[i * d + i]).collect();
        let ainv: Vec<f64> = (0..d).map(|i| x.inverse[i * d + i]).collect();
        let mut m: Vec<f64> = (0..d)
            .map(|i| ainv[i] * x.u[i] + x.c * spec.w1[i])
            .collect();
        let mut cov = vec![0.0; d];
        if x.private {
            let wn = 2.0
                * m.iter()
                    .zip(&spec.w1)
                    .map(|(v, w)| (v - x.c * w).powi(2))
                    .fold(0.0, f64::max);
            let kap2 = (spec.sigma_u / x.amp).powi(2) + x.s_n * x.s_n * wn;
            let past = &mut self.history[h];
            past.push(PastRelease::new(
                m.clone(),
                a.iter().map(|v| v * v / kap2).collect(),
                x.backup.to_vec(),
            ));
            let (mut total, mut acc) = (vec![0.0; d], vec![0.0; d]);
            for r in past.iter() {
                let dj = r
                    .backup
                    .iter()
                    .zip(x.backup)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0, f64::max);
                for i in 0..d {
                    let p = if dj > 0.0 {
                        1.0 / (1.0 / r.precision[i].max(1e-300) + dj * dj)
                    } else {
                        r.precision[i]
                    };
                    total[i] += p;
                    acc[i] += p * r.mean[i];
                }
            }
            for i in 0..d {
                cov[i] = 1.0 / total[i].max(1e-12);
                m[i] = cov[i] * acc[i];
            }
        }
        let nu2 = x.half * x.half;
        let it2 = 1.0 / nu2;
        let mut sigma = vec![0.0; d];
        for i in 0..d {
            let plik = 1.0 / (cov[i] + nu2 * ainv[i]).max(1e-12);
            sigma[i] = 1.0 / (plik + it2);
            weights[i] = sigma[i] * (plik * m[i] + it2 * x.c * spec.w1[i]);
        }
        self.set_diagonal_width(h, d, &sigma, rows);
    }

    /// A diagonal Sigma_h (its d variances): the factor sqrt(sigma_i) and the bonus rows
    /// ||phi||_Sigma = sqrt(sum_i phi_i^2 sigma_i).
    fn set_diagonal_width(&mut self, h: usize, d: usize, sigma: &[f64], rows: &SparseRows) {
        let rho = self.spec.radius;
        let f = &mut self.factor[h * d..(h + 1) * d];
        f.iter_mut()
            .zip(sigma)
            .for_each(|(o, s)| *o = rho * s.sqrt());
        let n = rows.len();
        let b = &mut self.bonus[h * n..(h + 1) * n];
        for (r, o) in b.iter_mut().enumerate() {
            // the row's nonzeros only (O(nnz), not O(rows d)); from +0 as the dense sum was
            let (cols, vals) = rows.row(r);
            *o = rho
                * cols
                    .iter()
                    .zip(vals)
                    .fold(0.0, |acc, (&i, p)| acc + p * p * sigma[i])
                    .sqrt();
        }
    }

    /// The non-private one-hot step (module doc, "tabular posterior"): per coordinate the
    /// posterior of the prior N(c + nu, nu^2) (on the target's scale) and the least-squares mean
    /// u_j / gram_j with variance `variance_j / gram_j`.
    fn tabular_step(
        &mut self,
        h: usize,
        x: &StepIn<'_>,
        data: &DataMoments<'_>,
        rows: &SparseRows,
        weights: &mut [f64],
    ) {
        let d = x.d;
        let spec = &self.spec;
        let nu2 = x.half * x.half;
        let centre = x.c + x.half;
        let mut sigma = vec![0.0; d];
        for i in 0..d {
            let g = data.gram[i];
            let (lik, mean) = if g > 0.0 {
                (
                    g / data.variance[i].max(1e-300),
                    x.u[i] / g + x.c * spec.w1[i],
                )
            } else {
                (0.0, 0.0)
            };
            // the prior's precision on w_i: a row phi_i w1_i = 1 maps nu^2 to (nu w1_i)^2
            let w1 = spec.w1[i];
            let p0 = if w1 != 0.0 {
                1.0 / (nu2 * w1 * w1)
            } else {
                1.0 / nu2
            };
            sigma[i] = 1.0 / (lik + p0);
            weights[i] = sigma[i] * (lik * mean + p0 * centre * w1);
        }
        self.set_diagonal_width(h, d, &sigma, rows);
    }

    /// Sigma_h's factor and bonus rows from Sigma_h.
    pub(crate) fn set_width(&mut self, h: usize, d: usize, sigma: &[f64], rows: &SparseRows) {
        let rho = self.spec.radius;
        if self.spec.diagonal {
            let f = &mut self.factor[h * d..(h + 1) * d];
            for (i, o) in f.iter_mut().enumerate() {
                *o = rho * sigma[i * d + i].max(0.0).sqrt();
            }
            let n = rows.len();
            let b = &mut self.bonus[h * n..(h + 1) * n];
            for (r, o) in b.iter_mut().enumerate() {
                let (cols, vals) = rows.row(r);
                *o = rho
                    * cols
                        .iter()
                        .zip(vals)
                        .fold(0.0, |acc, (&i, p)| acc + p * p * sigma[i * d + i])
                        .sqrt();
            }
            return;
        }
        let (e, v) = sym_eig(sigma, d);
        let l = &mut self.factor[h * d * d..(h + 1) * d * d];
        for i in 0..d {
            for k in 0..d {
                // rho L: rho^2 Sigma (the bonus rows below are then rho ||phi||_Sigma)
                l[i * d + k] = v[(i, k)] * (rho * e[k].max(0.0).sqrt());
            }
        }
        let n = rows.len();
        rows.norms_through(l, d, &mut self.bonus[h * n..(h + 1) * n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The non-private state of one coordinate (w1 = 1), one-hot rows or not.
    fn one_coordinate(diagonal: bool) -> AdaptiveState {
        AdaptiveState {
            spec: AdaptiveLsvi {
                w1: vec![1.0],
                value_shift: true,
                diagonal,
                shift_mult: 1.0,
                bounds: NoiseBounds::Zero,
                sigma_u: 0.0,
                alpha: 0.05,
                radius: 1.0,
            },
            history: vec![vec![]],
            s_n: 0.0,
            factor: vec![0.0],
            bonus: vec![0.0],
        }
    }

    #[test]
    fn non_private_step_by_hand() {
        // d = 1, A = 4, u~ = 8, c = 1, w1 = 1, half = 1: m = 8/4 + 1 = 3, C = 1/4, prior N(1, 1):
        // Sigma = 1 / (4 + 1) = 0.2, w = 0.2 (4 * 3 + 1) = 2.6, bonus of phi = 1: sqrt(0.2).
        let mut st = one_coordinate(false);
        let x = StepIn {
            d: 1,
            design: &[4.0],
            inverse: &[0.25],
            u: &[8.0],
            c: 1.0,
            amp: 1.0,
            backup: &[1.0],
            half: 1.0,
            s_n: 0.0,
            private: false,
            data: None,
        };
        let mut w = [0.0];
        st.release_step(0, &x, &SparseRows::of(&[1.0], 1), &mut w);
        assert!((w[0] - 2.6).abs() < 1e-12);
        assert!((st.bonus[0] - 0.2f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn target_variance_over_listed_columns_is_the_dense_sum() {
        // S = 5 next states, d = 7 coordinates, counts on a few entries only; values of both
        // signs (a negative v makes 2 r v of a skipped entry -0): listing every column and
        // listing only the nonzero ones give the same bits.
        let (s_n, d) = (5, 7);
        let (mut count, mut reward) = (vec![0.0; s_n * d], vec![0.0; s_n * d]);
        for (k, &(sp, j)) in [(0, 3), (2, 3), (2, 6), (4, 0), (1, 5)].iter().enumerate() {
            count[sp * d + j] = 1.0 + k as f64;
            reward[sp * d + j] = 0.3 * k as f64;
        }
        let shifted = [0.7, -0.2, 1.9, 0.0, -1.3];
        let reward_sq: Vec<f64> = (0..d).map(|j| 0.1 * j as f64).collect();
        let u: Vec<f64> = (0..d).map(|j| 0.5 + j as f64).collect();
        let gram: Vec<f64> = (0..d).map(|j| (j % 3) as f64).collect();
        let all: Vec<Vec<usize>> = (0..s_n).map(|_| (0..d).collect()).collect();
        let listed: Vec<Vec<usize>> = (0..s_n)
            .map(|sp| (0..d).rev().filter(|&j| count[sp * d + j] != 0.0).collect())
            .collect();
        let run = |cols: &[Vec<usize>]| {
            let mut out = vec![0.0; d];
            target_variance(
                &reward_sq,
                &count,
                &reward,
                cols,
                &shifted,
                &u,
                &gram,
                0.25,
                &mut [0.0; 7],
                &mut out,
            );
            out
        };
        let (dense, sparse) = (run(&all), run(&listed));
        for (a, b) in dense.iter().zip(&sparse) {
            assert_eq!(a.to_bits(), b.to_bits());
        }
        // a listed entry counts: dropping one changes the result
        let mut short = listed.clone();
        short[2].clear();
        assert_ne!(run(&short), dense);
    }

    #[test]
    fn tabular_step_by_hand() {
        // one coordinate, next states with shifted values [0, 2]; users (s' = 0, r = 1),
        // (s' = 1, r = 0), (s' = 1, r = 1): targets 1, 2, 3, u = 6, gram 3, sum y^2 = 14,
        // SSR = 14 - 36 / 3 = 2, nu = 1: variance (2 + 1) / (3 + 1) = 0.75
        let mut var = [0.0];
        target_variance(
            &[2.0],
            &[1.0, 2.0],
            &[1.0, 1.0],
            &[vec![0], vec![0]],
            &[0.0, 2.0],
            &[6.0],
            &[3.0],
            1.0,
            &mut [0.0],
            &mut var,
        );
        assert!((var[0] - 0.75).abs() < 1e-12);
        // c = 1, prior N(c + nu = 2, 1), mean 6 / 3 + 1 = 3 with precision 3 / 0.75 = 4:
        // Sigma = 1 / 5, w = 0.2 (4 * 3 + 2) = 2.8, bonus sqrt(0.2)
        let mut st = one_coordinate(true);
        let x = StepIn {
            d: 1,
            design: &[4.0],
            inverse: &[0.25],
            u: &[6.0],
            c: 1.0,
            amp: 1.0,
            backup: &[0.0, 2.0],
            half: 1.0,
            s_n: 0.0,
            private: false,
            data: Some(DataMoments {
                gram: &[3.0],
                variance: &var,
            }),
        };
        let mut w = [0.0];
        st.release_step(0, &x, &SparseRows::of(&[1.0], 1), &mut w);
        assert!((w[0] - 2.8).abs() < 1e-12, "{w:?}");
        assert!((st.bonus[0] - 0.2f64.sqrt()).abs() < 1e-12);
        assert!((st.factor[0] - 0.2f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn stale_releases_weigh_less() {
        // d = 1: a release of mean 0, precision 4, backup 0 and one of mean 1, precision 4,
        // backup 1 (the current): the first is stale by 1, 4 -> 1 / (1/4 + 1) = 0.8; the mean is
        // (0.8 * 0 + 4 * 1) / 4.8, the variance 1 / 4.8.
        let mut past = [
            PastRelease::new(vec![0.0], vec![4.0], vec![0.0]),
            PastRelease::new(vec![1.0], vec![4.0], vec![1.0]),
        ];
        let (m, c) = combine(&mut past, &[1.0], 1);
        assert!((m[0] - 4.0 / 4.8).abs() < 1e-12);
        assert!((c[0] - 1.0 / 4.8).abs() < 1e-12);
    }

    #[test]
    fn diagonal_path_matches_the_dense_one() {
        // one-hot rows (d = 3, 3 rows), a diagonal design: both paths give the same estimate,
        // the same bonus rows and, over two private releases, the same combination
        let spec = |diagonal| AdaptiveLsvi {
            w1: vec![1.0; 3],
            value_shift: true,
            diagonal,
            shift_mult: 1.0,
            bounds: NoiseBounds::Zero,
            sigma_u: 2.0,
            alpha: 0.05,
            radius: 1.0,
        };
        let table = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0];
        let design = [5.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 9.0];
        let inverse = [0.2, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0 / 9.0];
        let mut out = vec![];
        for diagonal in [false, true] {
            let per = if diagonal { 3 } else { 9 };
            let mut st = AdaptiveState {
                spec: spec(diagonal),
                history: vec![vec![]],
                s_n: 0.0,
                factor: vec![0.0; per],
                bonus: vec![0.0; 3],
            };
            let mut w = [0.0; 3];
            for (u, backup) in [
                ([1.0, -2.0, 3.0], [0.5, 1.0, 2.0]),
                ([2.0, 0.5, -1.0], [0.7, 1.0, 2.5]),
            ] {
                let x = StepIn {
                    d: 3,
                    design: &design,
                    inverse: &inverse,
                    u: &u,
                    c: 0.5,
                    amp: 3.0,
                    backup: &backup,
                    half: 0.8,
                    // the matrix noise's share differs on purpose (projected: 2 max_i, full: the
                    // sum), so this compares the paths with eta's share only
                    s_n: 0.0,
                    private: true,
                    data: None,
                };
                st.release_step(0, &x, &SparseRows::of(&table, 3), &mut w);
            }
            out.push((w, st.bonus.clone()));
        }
        for i in 0..3 {
            assert!((out[0].0[i] - out[1].0[i]).abs() < 1e-10, "{out:?}");
            assert!((out[0].1[i] - out[1].1[i]).abs() < 1e-10, "{out:?}");
        }
    }

    #[test]
    fn amplified_target_stays_in_the_plans_bound() {
        // r in [0, 1], V in [0, H]: a (r + V(s') - c) in [0, H + 1] for every next state, with or
        // without the value shift, at every step; non-private: no amplification
        let h = 8;
        let next = [0.3, 2.5, 7.0, 1.0];
        let mut shifted = [0.0; 4];
        for (value_shift, last) in [(true, false), (false, false), (true, true)] {
            let (c, a) = shift_and_amplify(&next, last, value_shift, true, h, &mut shifted);
            for (v, s) in next.iter().zip(&shifted) {
                let v = if last { 0.0 } else { *v };
                assert!((s - (v - c)).abs() < 1e-12 && *s >= 0.0);
                for r in [0.0, 1.0] {
                    let y = a * (r + s);
                    assert!((0.0..=h as f64 + 1.0 + 1e-9).contains(&y), "{y}");
                }
            }
            // the largest target fills the bound exactly
            let top = a * (1.0 + shifted.iter().copied().fold(0.0, f64::max));
            assert!((top - (h as f64 + 1.0)).abs() < 1e-9);
        }
        assert_eq!(
            shift_and_amplify(&next, false, true, false, h, &mut shifted),
            (0.3, 1.0)
        );
    }
}
