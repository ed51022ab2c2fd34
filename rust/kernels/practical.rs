//! The release of the practical calibration (`privrl.privacy.practical`, `PracticalRelease`):
//! per step h, from the noisy sums released after t users,
//!     A = V diag(max(ev, lam)) V^T   with  G~ + (lam + S_t) I = V diag(ev) V^T,
//!     A^{-1}, A^{-2}, E = A - (G~ + (lam + S_t) I) = V diag(max(ev, lam) - ev) V^T,
//!     w~ = A^{-1} (u~ + (lam + S_t) w0 + E w0)   (the ridge centred at w0),
//! and ||E|| = max(max(ev, lam) - ev). One kernel for the Python release and the episode engine.

use super::eigen::sym_eigen;
use crate::errors::{check_finite, check_len, CoreError, CoreResult};

/// The outputs, row-major: design, inverse, inverse2 (H x d x d), weights (H x d), correction (H).
pub struct Floored<'a> {
    pub design: &'a mut [f64],
    pub inverse: &'a mut [f64],
    pub inverse2: &'a mut [f64],
    pub weights: &'a mut [f64],
    pub correction: &'a mut [f64],
}

/// The floored release of every step (module doc); `gram` (H x d x d) symmetric, `target` (H x d).
pub fn floored_release(
    gram: &[f64],
    target: &[f64],
    d: usize,
    lam: f64,
    shift: f64,
    w0: &[f64],
    out: Floored<'_>,
) -> CoreResult<()> {
    if d == 0 {
        return Err(CoreError::Shape("dimension must be >= 1".into()));
    }
    let h_n = target.len() / d;
    check_len("targets", target.len(), h_n * d)?;
    check_len("Gram sums", gram.len(), h_n * d * d)?;
    check_len("centre", w0.len(), d)?;
    for (what, n) in [
        ("design", out.design.len()),
        ("inverse", out.inverse.len()),
        ("inverse2", out.inverse2.len()),
    ] {
        check_len(what, n, h_n * d * d)?;
    }
    check_len("weights", out.weights.len(), h_n * d)?;
    check_len("correction", out.correction.len(), h_n)?;
    check_finite("Gram sums", gram)?;
    check_finite("targets", target)?;
    let base = lam + shift;
    let dd = d * d;
    // scratch for every step: M, V (row-major, eigenvectors as columns), and per eigenvalue
    // ev, max(ev, lam), its lift, 1 / floored, its square and V^T w0; then pull and rhs
    let mut scratch = vec![0.0; 2 * dd + 8 * d];
    let (m, rest) = scratch.split_at_mut(dd);
    let (v, rest) = rest.split_at_mut(dd);
    let (ev, rest) = rest.split_at_mut(d);
    let (floored, rest) = rest.split_at_mut(d);
    let (lift, rest) = rest.split_at_mut(d);
    let (inv, rest) = rest.split_at_mut(d);
    let (inv2, rest) = rest.split_at_mut(d);
    let (proj, rest) = rest.split_at_mut(d);
    let (pull, rhs) = rest.split_at_mut(d);
    for h in 0..h_n {
        let g = &gram[h * dd..(h + 1) * dd];
        for i in 0..d {
            for j in 0..d {
                m[i * d + j] = g[i * d + j] + if i == j { base } else { 0.0 };
            }
        }
        sym_eigen(m, d, ev, v);
        for k in 0..d {
            floored[k] = ev[k].max(lam);
            lift[k] = floored[k] - ev[k];
            inv[k] = 1.0 / floored[k];
            inv2[k] = inv[k] * inv[k];
        }
        out.correction[h] = lift.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        // E w0 = V (lift * (V^T w0))
        for j in 0..d {
            proj[j] = (0..d).map(|k| v[k * d + j] * w0[k]).sum::<f64>();
        }
        for i in 0..d {
            pull[i] = base * w0[i]
                + (0..d)
                    .map(|j| v[i * d + j] * (lift[j] * proj[j]))
                    .sum::<f64>();
        }
        let sl = h * dd..(h + 1) * dd;
        let (design, inverse, inverse2) = (
            &mut out.design[sl.clone()],
            &mut out.inverse[sl.clone()],
            &mut out.inverse2[sl],
        );
        for i in 0..d {
            for k in i..d {
                let (mut a, mut b, mut c) = (0.0, 0.0, 0.0);
                for j in 0..d {
                    let vv = v[i * d + j] * v[k * d + j];
                    a += vv * floored[j];
                    b += vv * inv[j];
                    c += vv * inv2[j];
                }
                for (o, x) in [(&mut *design, a), (&mut *inverse, b), (&mut *inverse2, c)] {
                    o[i * d + k] = x;
                    o[k * d + i] = x;
                }
            }
        }
        let t = &target[h * d..(h + 1) * d];
        for i in 0..d {
            rhs[i] = t[i] + pull[i];
        }
        for i in 0..d {
            out.weights[h * d + i] = (0..d).map(|k| inverse[i * d + k] * rhs[k]).sum::<f64>();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_lifts_small_eigenvalues_only() {
        // G~ = diag(-3, 5), lam = 1, shift = 0: eigenvalues -2 and 6; the first is floored at 1.
        let gram = [-3.0, 0.0, 0.0, 5.0];
        let (mut a, mut b, mut c, mut w, mut e) =
            ([0.0; 4], [0.0; 4], [0.0; 4], [0.0; 2], [0.0; 1]);
        let out = Floored {
            design: &mut a,
            inverse: &mut b,
            inverse2: &mut c,
            weights: &mut w,
            correction: &mut e,
        };
        floored_release(&gram, &[1.0, 6.0], 2, 1.0, 0.0, &[1.0, 0.0], out).unwrap();
        assert_eq!(e[0], 3.0);
        let close = |x: f64, y: f64| (x - y).abs() < 1e-12;
        assert!(close(a[0], 1.0) && close(a[3], 6.0) && close(a[1], 0.0));
        assert!(close(b[0], 1.0) && close(b[3], 1.0 / 6.0));
        assert!(close(c[3], 1.0 / 36.0));
        // w = A^{-1} (u + (lam + S) w0 + E w0) = (1 + 1 + 3, 6 / 6)
        assert!(close(w[0], 5.0) && close(w[1], 1.0));
    }
}
