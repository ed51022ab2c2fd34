//! The exact forms kept by rank-one updates and the practical rule's floored release.

use crate::kernels::eigen::sym_eigen;
use crate::kernels::sparse::SparseRows;

/// The forms `phi_r^T Lambda^{-1} phi_r` of every row after `Lambda += x x^T` (Sherman-Morrison:
/// minus `(phi_r^T Lambda^{-1} x)^2 / (1 + x^T Lambda^{-1} x)`), `inv` the inverse before.
pub(super) fn update_forms(
    forms: &mut [f64],
    rows: &SparseRows,
    inv: &[f64],
    x: &[f64],
    scratch: &mut [f64],
) {
    let d = x.len();
    let u = &mut scratch[..d];
    u.iter_mut().for_each(|v| *v = 0.0);
    for (j, &xj) in x.iter().enumerate() {
        if xj != 0.0 {
            // inv is symmetric: column j is row j
            u.iter_mut()
                .zip(&inv[j * d..(j + 1) * d])
                .for_each(|(v, m)| *v += xj * m);
        }
    }
    let denom = 1.0 + x.iter().zip(u.iter()).map(|(a, b)| a * b).sum::<f64>();
    for (r, f) in forms.iter_mut().enumerate() {
        let t = rows.dot_with(r, u);
        if t != 0.0 {
            // t = +-0 would subtract +0 / denom = +0, and f - (+0) = f for every f
            *f -= t * t / denom;
        }
    }
}

/// The practical release of every step in place: the eigenvalues of `design + base I` floored
/// at `lam`, and the inverse of the floored matrix.
pub(super) fn floor_release(
    design: &mut [f64],
    inverse: &mut [f64],
    d: usize,
    base: f64,
    lam: f64,
) {
    let dd = d * d;
    let (mut sym, mut v, mut ev) = (vec![0.0; dd], vec![0.0; dd], vec![0.0; d]);
    for (m, inv) in design
        .chunks_exact_mut(dd)
        .zip(inverse.chunks_exact_mut(dd))
    {
        for i in 0..d {
            for j in 0..d {
                sym[i * d + j] =
                    0.5 * (m[i * d + j] + m[j * d + i]) + if i == j { base } else { 0.0 };
            }
        }
        sym_eigen(&sym, d, &mut ev, &mut v);
        ev.iter_mut().for_each(|e| *e = e.max(lam));
        for i in 0..d {
            for j in i..d {
                let (mut a, mut b) = (0.0, 0.0);
                for k in 0..d {
                    let vv = v[i * d + k] * v[j * d + k];
                    a += vv * ev[k];
                    b += vv / ev[k];
                }
                m[i * d + j] = a;
                m[j * d + i] = a;
                inv[i * d + j] = b;
                inv[j * d + i] = b;
            }
        }
    }
}
