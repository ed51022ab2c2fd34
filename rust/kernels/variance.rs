//! UCRL-VTR+'s variance estimate (Alg. 3, App. C): per visited step h, from the user's
//! phi_V = X_h and phi_{V^2} = X2_h and the two billboards,
//!     V-bar = [<X2, w~>]_[0, H^2] - [<X, w^>]^2_[0, H],
//!     E     = min{H^2, 2H w_check} + min{H^2, w_tilde},
//!     sigma-bar = sqrt(max{H^2 / d, V-bar + E}),
//! with w_check = beta-check ||X||_{Lambda^^-1} (under the practical rule
//! hypot(w_check, gamma_h ||Lambda^^-1 X||)) and w_tilde = beta~ ||X2||_{Lambda~^-1} (practical:
//! ||X2||_{M~_h}). One kernel for `UCRLVTRPlus.sigma_bar` and the episode engine.

use crate::errors::{check_len, CoreError, CoreResult};
use crate::kernels::dense::{dot, quad};

/// The first-moment ("hat") and second-moment ("tilde") billboards' parts the estimate reads,
/// row-major per step.
pub struct VarianceInputs<'a> {
    pub d: usize,
    pub hat_weights: &'a [f64],
    pub hat_inverse: &'a [f64],
    /// The practical rule's privacy width coefficients gamma_h of the hat billboard.
    pub hat_gamma: Option<&'a [f64]>,
    pub tilde_weights: &'a [f64],
    /// Lambda~^{-1} (paper) or the bonus matrices M~ (practical).
    pub tilde_form: &'a [f64],
    /// beta~ with Lambda~^{-1}, 1 with M~.
    pub tilde_radius: f64,
    pub beta_check: f64,
}

/// sigma-bar for every step from X, X2 (H x d); writes `out` (H).
pub fn sigma_bar(
    inp: &VarianceInputs<'_>,
    x: &[f64],
    x2: &[f64],
    out: &mut [f64],
) -> CoreResult<()> {
    let d = inp.d;
    if d == 0 {
        return Err(CoreError::Shape("dimension must be >= 1".into()));
    }
    let h_n = out.len();
    for (what, n, want) in [
        ("X", x.len(), h_n * d),
        ("X2", x2.len(), h_n * d),
        ("hat weights", inp.hat_weights.len(), h_n * d),
        ("hat inverse", inp.hat_inverse.len(), h_n * d * d),
        ("tilde weights", inp.tilde_weights.len(), h_n * d),
        ("tilde form", inp.tilde_form.len(), h_n * d * d),
    ] {
        check_len(what, n, want)?;
    }
    if let Some(g) = inp.hat_gamma {
        check_len("gamma", g.len(), h_n)?;
    }
    let hf = h_n as f64;
    let (hh, dd) = (hf * hf, d * d);
    for h in 0..h_n {
        let (xh, x2h) = (&x[h * d..(h + 1) * d], &x2[h * d..(h + 1) * d]);
        let inv = &inp.hat_inverse[h * dd..(h + 1) * dd];
        let first = dot(xh, &inp.hat_weights[h * d..(h + 1) * d]).clamp(0.0, hf);
        let second = dot(x2h, &inp.tilde_weights[h * d..(h + 1) * d]).clamp(0.0, hh);
        let v_bar = second - first * first;
        let mut check = inp.beta_check * quad(xh, inv).sqrt();
        if let Some(g) = inp.hat_gamma {
            let lx: f64 = (0..d)
                .map(|i| dot(&inv[i * d..(i + 1) * d], xh).powi(2))
                .sum();
            check = check.hypot(g[h] * lx.sqrt());
        }
        let tilde = inp.tilde_radius * quad(x2h, &inp.tilde_form[h * dd..(h + 1) * dd]).sqrt();
        let e = hh.min(2.0 * hf * check) + hh.min(tilde);
        out[h] = (hh / d as f64).max(v_bar + e).sqrt();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_and_variance() {
        // H = 1, d = 1: first = 0.5, second = 0.5, V-bar = 0.25; no width: sigma-bar = max(1, .)
        let one = [1.0];
        let inp = VarianceInputs {
            d: 1,
            hat_weights: &[0.5],
            hat_inverse: &[0.0],
            hat_gamma: None,
            tilde_weights: &[0.5],
            tilde_form: &[0.0],
            tilde_radius: 1.0,
            beta_check: 1.0,
        };
        let mut out = [0.0];
        sigma_bar(&inp, &one, &one, &mut out).unwrap();
        assert_eq!(out[0], 1.0); // H^2 / d = 1 dominates 0.25
        let wide = VarianceInputs {
            hat_inverse: &[4.0],
            ..inp
        };
        sigma_bar(&wide, &one, &one, &mut out).unwrap();
        // E = min(1, 2 * 1 * 2) = 1: sqrt(max(1, 1.25))
        assert_eq!(out[0], 1.25f64.sqrt());
    }
}
