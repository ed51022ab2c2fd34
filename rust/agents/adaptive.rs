//! The adaptive release rule of UCRL-VTR / UCRL-VTR+ (calibration "adaptive",
//! `privrl.privacy.adaptive`): post-processing of the same released sums as the practical rule
//! (same mechanisms, same noise), with widths whose bias and noise parts are honest, not tuned.
//!
//! Per step h, from the released Gram sums G~ (no ridge) and targets u~ after t users, the
//! released noise's per-entry stds s_m (matrix, off-diagonal) and s_v (vector) at t, the
//! statistical std sigma of the targets, the centre w0 and the public bound D >= ||w - w0||:
//!
//!   lam   = (max(sigma, sigma_min) / D)^2      (the ridge whose Gaussian prior has std D)
//!   S     = shift_mult Upsilon_t,   G~ + (lam + S) I = V diag(ev) V^T,
//!   a_i   = max(ev_i, lam),  lift_i = a_i - ev_i,  c = V^T w0,  u = V^T u~,
//!   mean  w~ = V m,  m_i = (u_i + (lam + S + lift_i) c_i) / a_i   (the practical rule's ridge),
//!   random std  r_i = rho sqrt(sigma^2 / a_i + nu^2 / a_i^2),   nu^2 = s_v^2 + 2 s_m^2 C_w^2
//!               (rho = `radius`, the agent's `beta_scale`: 1 is one standard deviation),
//!   bias bound  b_i = (lam + S + lift_i) D / a_i      (|A^{-1}(lam + S + E)(w0 - w)| per direction).
//!
//! Outputs (row-major d x d per step): `explore` = V diag((r_i + b_i)^2) V^T (optimism: the bonus
//! ||phi||_explore), `factor` = V diag(r_i) V^T (sampling: w = w~ + factor z) and `bias` =
//! V diag(b_i^2) V^T (sampling: the bias stays an optimistic bonus), gamma_h = nu + (lam + S +
//! max lift) D. Sampling plans on the largest of `draws` such models per (s, a)
//! ([`max_over_draws`], optimistic sampling). The statistical std sigma is `spread_scale` times
//! half the spread of the users' targets over a pair's support (H: the normalized target,
//! `super::vtr`), `sigma_max` before the first plan.

use serde::{Deserialize, Serialize};

use crate::errors::{check_finite, CoreResult};
use crate::kernels::dense::{dot, matvec, quad};
use crate::kernels::eigen::sym_eigen;
use crate::kernels::qeval::OptimisticQ;

/// The adaptive rule's constants (functions of H and d, `privrl.privacy.adaptive`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct AdaptiveSpec {
    /// sigma before any plan (the targets' std bound: H / 2 for y in [0, H]).
    pub sigma_max: f64,
    /// sigma = spread_scale * spread / 2.
    pub spread_scale: f64,
    /// The smallest sigma the ridge lam is computed from.
    pub sigma_min: f64,
    /// The random part's radius in standard deviations (`beta_scale`; 1: one std). The bias
    /// bound is never scaled.
    pub radius: f64,
    /// The models each user draws under sampling (`privrl.privacy.adaptive.SAMPLING_DRAWS`);
    /// Q_h(s, a) is the largest of theirs and the estimate's (`max_over_draws`).
    pub draws: usize,
}

/// Optimistic sampling (Ishfaq et al. 2021) floored at the mean (optimistic Bayesian sampling,
/// May et al. 2012): per row, `<phi, mean> + ||phi||_bias + max(0, max_j <phi, factor z_j>)`,
/// clipped to `[0, upper]`, with the draws `zs` (`draws x d` standard normals) and `factor`
/// symmetric (d x d, row-major). A draw never takes a pair below its estimate plus the bias
/// bound, so no user plans on a model more pessimistic than the mean. The bias norm and
/// `<phi, mean>` are computed once per row, each draw adds only `<phi, factor z_j>`:
/// `max_j clip(x_j) = clip(max_j x_j)`. `pert` is scratch (`draws x d`).
#[allow(clippy::too_many_arguments)]
pub fn max_over_draws(
    d: usize,
    phi: &[f64],
    mean: &[f64],
    factor: &[f64],
    bias: &[f64],
    zs: &[f64],
    upper: f64,
    pert: &mut [f64],
    out: &mut [f64],
) -> CoreResult<()> {
    for (p, z) in pert.chunks_exact_mut(d).zip(zs.chunks_exact(d)) {
        matvec(factor, z, p);
    }
    // a non-finite draw is refused, as a non-finite width is (f64::max would drop a NaN)
    check_finite("w (a sampled model's factor z)", pert)?;
    let q = OptimisticQ {
        d,
        w: mean,
        inv: bias,
        beta: 1.0,
        lower: f64::NEG_INFINITY,
        upper: f64::INFINITY,
    };
    q.evaluate(phi, None, out)?;
    for (o, row) in out.iter_mut().zip(phi.chunks_exact(d)) {
        let best = pert
            .chunks_exact(d)
            .map(|p| row.iter().zip(p).map(|(x, y)| x * y).sum::<f64>())
            .fold(0.0, |m, x| if x > m || x.is_nan() { x } else { m }); // the floor: the mean
        *o = (*o + best).clamp(0.0, upper); // NaN stays NaN: the greedy step refuses it
    }
    Ok(())
}

/// One step's outputs (row-major d x d, weights d).
pub struct StepOut<'a> {
    pub design: &'a mut [f64],
    pub inverse: &'a mut [f64],
    pub weights: &'a mut [f64],
    pub explore: &'a mut [f64],
    pub factor: &'a mut [f64],
    pub bias: &'a mut [f64],
}

/// The noise and prior of one release.
pub struct StepNoise<'a> {
    /// Upsilon_t (the shift's scale), s_m, s_v (released stds at t).
    pub upsilon: f64,
    pub s_m: f64,
    pub s_v: f64,
    pub shift_mult: f64,
    pub c_w: f64,
    /// D, a public bound on ||w - w0||.
    pub distance: f64,
    pub w0: &'a [f64],
}

impl AdaptiveSpec {
    /// The statistical std for a running spread (< 0: no plan yet).
    pub fn sigma(&self, spread: f64) -> f64 {
        if spread < 0.0 {
            self.sigma_max
        } else {
            self.spread_scale * spread / 2.0
        }
    }

    /// The ridge lam = (max(sigma, sigma_min) / D)^2.
    pub fn lam(&self, sigma: f64, distance: f64) -> f64 {
        (sigma.max(self.sigma_min) / distance).powi(2)
    }

    /// The release of one step (module doc); returns gamma_h.
    pub fn release_step(
        &self,
        d: usize,
        gram: &[f64],
        target: &[f64],
        spread: f64,
        n: &StepNoise<'_>,
        out: StepOut<'_>,
    ) -> f64 {
        let sig = self.sigma(spread);
        let lam = self.lam(sig, n.distance);
        let base = lam + n.shift_mult * n.upsilon;
        // M, V (eigenvectors as columns, row-major), ev, a, mean, rstd, bias: on the stack for
        // the usual small d (this runs for every step of every release)
        let need = 2 * d * d + 5 * d;
        let (mut stack, mut heap) = ([0.0f64; 256], Vec::new());
        let buf: &mut [f64] = if need <= stack.len() {
            &mut stack[..need]
        } else {
            heap.resize(need, 0.0);
            &mut heap
        };
        let (m, rest) = buf.split_at_mut(d * d);
        let (v, rest) = rest.split_at_mut(d * d);
        let (ev, rest) = rest.split_at_mut(d);
        let (a, rest) = rest.split_at_mut(d);
        let (mean, rest) = rest.split_at_mut(d);
        let (rstd, bias) = rest.split_at_mut(d);
        for i in 0..d {
            for j in 0..d {
                m[i * d + j] =
                    0.5 * (gram[i * d + j] + gram[j * d + i]) + if i == j { base } else { 0.0 };
            }
        }
        sym_eigen(m, d, ev, v);
        let v = |k: usize, i: usize| v[k * d + i];
        let nu2 = n.s_v * n.s_v + 2.0 * n.s_m * n.s_m * n.c_w * n.c_w;
        let s2 = sig * sig;
        let mut max_lift: f64 = 0.0;
        for i in 0..d {
            a[i] = ev[i].max(lam);
            let lift = a[i] - ev[i];
            max_lift = max_lift.max(lift);
            let ui: f64 = (0..d).map(|k| v(k, i) * target[k]).sum();
            let ci: f64 = (0..d).map(|k| v(k, i) * n.w0[k]).sum();
            mean[i] = (ui + (base + lift) * ci) / a[i];
            rstd[i] = self.radius * (s2 / a[i] + nu2 / (a[i] * a[i])).sqrt();
            bias[i] = (base + lift) * n.distance / a[i];
        }
        for k in 0..d {
            out.weights[k] = (0..d).map(|i| v(k, i) * mean[i]).sum();
        }
        for p in 0..d {
            for q in p..d {
                let mut x = [0.0; 6];
                for i in 0..d {
                    let vv = v(p, i) * v(q, i);
                    x[0] += vv * a[i];
                    x[1] += vv / a[i];
                    x[2] += vv * (rstd[i] + bias[i]).powi(2);
                    x[3] += vv * rstd[i];
                    x[4] += vv * bias[i] * bias[i];
                }
                for (o, val) in [
                    (&mut *out.design, x[0]),
                    (&mut *out.inverse, x[1]),
                    (&mut *out.explore, x[2]),
                    (&mut *out.factor, x[3]),
                    (&mut *out.bias, x[4]),
                ] {
                    o[p * d + q] = val;
                    o[q * d + p] = val;
                }
            }
        }
        nu2.sqrt() + (base + max_lift) * n.distance
    }
}

/// The planned `Q_h(s, a) = r + lo + (hi - lo) / H x` of a normalized value `x` in `[0, H]`
/// (`h` = H), exactly `r + hi` at the ceiling `x = H` and never above it. Rounded as written,
/// `lo + (hi - lo) / H * H` can land an ulp above `hi` (H = 13: the uncertain action's ceiling
/// beat a deterministic action's value `r + hi` by one ulp instead of tying with it, so the
/// pessimistic tie-break never ran) or below it; the support clip puts Q in `r + [lo, hi]`.
pub fn on_support(r: f64, lo: f64, hi: f64, x: f64, h: f64) -> f64 {
    let top = r + hi;
    if x >= h {
        return top;
    }
    let q = r + lo + (hi - lo) * (1.0 / h) * x;
    if q > top {
        top
    } else {
        q // NaN stays NaN (the greedy step refuses it)
    }
}

/// Pessimistic tie-breaking: among the actions whose planned Q ties at a state's maximum (rows
/// grouped by `a_n`), keep those with the largest pessimistic value `key(row)` (computed for tied
/// rows only) and lower the others' Q by one ulp, so the greedy choice (and its random tie-break)
/// is among them and V = max Q is unchanged. An optimistic Q at its ceiling (the support clip)
/// ties with an action whose value is known to be that ceiling; playing the uncertain one can only
/// lose.
pub fn demote_dominated_ties(q: &mut [f64], a_n: usize, mut key: impl FnMut(usize) -> f64) {
    for (g, row) in q.chunks_exact_mut(a_n).enumerate() {
        let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if row.iter().filter(|&&x| x == m).count() < 2 {
            continue;
        }
        let mut keys = [f64::NEG_INFINITY; 16];
        let mut heap = Vec::new();
        let keys: &mut [f64] = if a_n <= 16 {
            &mut keys[..a_n]
        } else {
            heap.resize(a_n, f64::NEG_INFINITY);
            &mut heap
        };
        for (a, k) in keys.iter_mut().enumerate() {
            if row[a] == m {
                *k = key(g * a_n + a);
            }
        }
        let best = keys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        for (x, k) in row.iter_mut().zip(keys.iter()) {
            if *x == m && *k < best {
                *x = m.next_down();
            }
        }
    }
}

/// `<phi, w> - ||phi||_e` clipped to `[0, upper]`: the estimate's lower end along `phi` (e the
/// width matrix, d x d).
pub fn pessimistic(phi: &[f64], w: &[f64], e: &[f64], upper: f64) -> f64 {
    (dot(phi, w) - quad(phi, e).sqrt()).clamp(0.0, upper)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adaptive_step_by_hand() {
        // G~ = diag(-3, 5), u~ = (1, 6), w0 = (1, 0), D = 2, sigma = 1 (spread 2, scale 1),
        // sigma_min 0.5: lam = 1/4; no noise (S = 0, nu = 0). ev = (-2.75, 5.25) (ascending,
        // eigenvectors +-e1, +-e2): a = (1/4, 5.25), lift = (3, 0);
        // m_1 = (1 + (1/4 + 3) * 1) / (1/4) = 17, m_2 = 6 / 5.25;
        // r = (sqrt(4), sqrt(1 / 5.25)), b = ((1/4 + 3) * 2 / (1/4), (1/4) * 2 / 5.25) = (26, 2/21).
        let spec = AdaptiveSpec {
            sigma_max: 10.0,
            spread_scale: 1.0,
            sigma_min: 0.5,
            radius: 1.0,
            draws: 1,
        };
        let (mut de, mut inv, mut w, mut ex, mut fa, mut bi) =
            ([0.0; 4], [0.0; 4], [0.0; 2], [0.0; 4], [0.0; 4], [0.0; 4]);
        let noise = StepNoise {
            upsilon: 0.0,
            s_m: 0.0,
            s_v: 0.0,
            shift_mult: 1.0,
            c_w: 1.0,
            distance: 2.0,
            w0: &[1.0, 0.0],
        };
        let out = StepOut {
            design: &mut de,
            inverse: &mut inv,
            weights: &mut w,
            explore: &mut ex,
            factor: &mut fa,
            bias: &mut bi,
        };
        let gamma = spec.release_step(2, &[-3.0, 0.0, 0.0, 5.0], &[1.0, 6.0], 2.0, &noise, out);
        let close = |x: f64, y: f64| (x - y).abs() < 1e-12;
        assert!(close(gamma, (0.25 + 3.0) * 2.0));
        assert!(close(de[0], 0.25) && close(de[3], 5.25) && close(de[1], 0.0));
        assert!(close(inv[0], 4.0) && close(inv[3], 1.0 / 5.25));
        assert!(close(w[0], 17.0) && close(w[1], 6.0 / 5.25));
        assert!(close(fa[0], 2.0) && close(fa[3], (1.0f64 / 5.25).sqrt()));
        assert!(close(bi[0], 26.0 * 26.0) && close(bi[3], (2.0f64 / 21.0).powi(2)));
        assert!(close(ex[0], 28.0 * 28.0));
        assert!(close(ex[3], ((1.0f64 / 5.25).sqrt() + 2.0 / 21.0).powi(2)));
        // no plan yet: sigma_max
        assert_eq!(spec.sigma(-1.0), 10.0);
        assert_eq!(spec.sigma(3.0), 1.5);
    }

    #[test]
    fn max_over_draws_by_hand() {
        // mean (0.5, 0.2), factor diag(2, 1), bias diag(1, 0) (||phi||_bias = |phi_1|), draws
        // z1 = (1, -1), z2 = (-0.5, 2): perturbations p1 = (2, -1), p2 = (-1, 2); upper 3.
        // the largest of the floor 0 (the mean) and the draws:
        // row (1, 0): 0.5 + 1 + max(0, 2, -1) = 3.5 -> 3; (0, 1): 0.2 + max(0, -1, 2) = 2.2;
        // (1, 1): 0.7 + 1 + max(0, 1, 1) = 2.7; (-1, -1): -0.7 + 1 + max(0, -1, -1) = 0.3 (the
        // floor: without it -0.7 -> 0)
        let phi = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, -1.0, -1.0];
        let (mean, factor, bias) = ([0.5, 0.2], [2.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0]);
        let (mut pert, mut out) = ([0.0; 4], [0.0; 4]);
        let zs = [1.0, -1.0, -0.5, 2.0];
        max_over_draws(
            2, &phi, &mean, &factor, &bias, &zs, 3.0, &mut pert, &mut out,
        )
        .unwrap();
        let want = [3.0, 2.2, 2.7, 0.3];
        assert!(
            out.iter().zip(want).all(|(o, w)| (o - w).abs() < 1e-12),
            "{out:?}"
        );
        // one draw: clip(<phi, mean> + ||phi||_bias + max(0, <phi, factor z1>))
        max_over_draws(
            2,
            &phi,
            &mean,
            &factor,
            &bias,
            &zs[..2],
            3.0,
            &mut pert[..2],
            &mut out,
        )
        .unwrap();
        let want = [3.0, 0.2, 2.7, 0.3]; // (0, 1): 0.2 + max(0, -1); plain TS: 0.2 - 1 -> 0
        assert!(
            out.iter().zip(want).all(|(o, w)| (o - w).abs() < 1e-12),
            "{out:?}"
        );
        // a NaN in one draw's model is refused, never dropped by the max over the draws
        let nan = [f64::NAN, 0.0, 0.0, 1.0];
        let r = max_over_draws(2, &phi, &mean, &nan, &bias, &zs, 3.0, &mut pert, &mut out);
        assert!(matches!(r, Err(crate::errors::CoreError::NonFinite(_))));
    }

    #[test]
    fn on_support_is_exact_at_both_ends() {
        // H = 13, [0, 0.01]: lo + (hi - lo) / 13 * 13 rounds one ulp above hi; the ceiling is hi
        let (lo, hi) = (0.0, 0.01);
        assert!(lo + (hi - lo) * (1.0 / 13.0) * 13.0 > hi);
        for h in 1..=30 {
            let hf = h as f64;
            for (r, lo, hi) in [(0.0, 0.0, 0.01), (0.3, 0.2, 0.7), (1.0, 2.5, 2.5)] {
                assert_eq!(on_support(r, lo, hi, hf, hf), r + hi);
                assert_eq!(on_support(r, lo, hi, 0.0, hf), r + lo);
                for i in 0..=100 {
                    let q = on_support(r, lo, hi, hf * i as f64 / 100.0, hf);
                    assert!(q >= r + lo && q <= r + hi, "{h} {i} {q}");
                }
            }
        }
        assert!(on_support(0.0, 0.0, 1.0, f64::NAN, 4.0).is_nan());
    }

    #[test]
    fn dominated_ties_by_hand() {
        // two states, three actions: state 0 ties actions 0 and 2 at 5 (keys 1 and 3: action 0
        // is lowered by one ulp), action 1 below; state 1 ties all three with keys 2, 2, 1
        // (action 2 lowered, 0 and 1 stay tied for the random tie-break)
        let mut q = [5.0, 4.0, 5.0, 7.0, 7.0, 7.0];
        let keys = [1.0, 9.0, 3.0, 2.0, 2.0, 1.0];
        let mut asked = vec![];
        demote_dominated_ties(&mut q, 3, |i| {
            asked.push(i);
            keys[i]
        });
        assert_eq!(asked, vec![0, 2, 3, 4, 5]); // keys only for the tied rows
        assert_eq!(
            q,
            [5.0f64.next_down(), 4.0, 5.0, 7.0, 7.0, 7.0f64.next_down()]
        );
        // <phi, w> - ||phi||_e: phi (1, 2), w (1, 1), e = diag(4, 0) + 1 off-diagonal: quad 4 + 4
        // = 8
        let e = [4.0, 1.0, 1.0, 0.0];
        let low = pessimistic(&[1.0, 2.0], &[1.0, 1.0], &e, 5.0);
        assert!((low - (3.0 - 8.0f64.sqrt())).abs() < 1e-12);
        assert_eq!(pessimistic(&[1.0, 2.0], &[1.0, 1.0], &e, 0.1), 0.1);
        assert_eq!(pessimistic(&[1.0, 0.0], &[1.0, 1.0], &e, 5.0), 0.0); // 1 - 2 -> 0
    }
}
