//! The exact forms kept by rank-one updates and the practical rule's floored release.

use crate::kernels::eigen::sym_eigen;
use crate::kernels::sparse::SparseRows;

/// The forms `phi_r^T Lambda^{-1} phi_r` of every row after `Lambda += x x^T` (Sherman-Morrison:
/// minus `(phi_r^T Lambda^{-1} x)^2 / (1 + x^T Lambda^{-1} x)`), `inv` the inverse before.
///
/// Only the rows that meet u = Lambda^{-1} x's support move: every other row's t is a sum of
/// +-0 and would subtract +0 (f - (+0) = f for every f), and the denominator's dot skips x's
/// zeros (products +-0 that leave the sum as it was) — the same bits as the dense update.
/// `nz` lists the columns where x may be nonzero (ascending); `scratch` holds at least d + rows
/// entries (u, then the visited marks). `widths` follows the forms that move. `plain_diagonal`:
/// `inv` is known to be +0 off its diagonal (`ShermanMorrison::is_plain_diagonal`).
///
/// With a plain diagonal inverse and one nonzero x_j, u is `0 + x_j inv_jj` at j and +0 elsewhere
/// (every other product is +-0, added to +0), so the rows that move are those holding column j,
/// where t = phi_rj u_j (the row's other terms are +-0: t is that product when it is not 0, and a
/// zero t moves nothing either way): O(rows holding j) instead of O(d).
#[allow(clippy::too_many_arguments)]
pub(super) fn update_forms(
    forms: &mut [f64],
    widths: &mut [f64],
    rows: &SparseRows,
    inv: &[f64],
    x: &[f64],
    nz: &[usize],
    scratch: &mut [f64],
    plain_diagonal: bool,
) {
    let d = x.len();
    let mut hot = nz.iter().copied().filter(|&j| x[j] != 0.0);
    let one = plain_diagonal.then(|| (hot.next(), hot.next()));
    if let Some((Some(j), None)) = one {
        let uj = 0.0 + x[j] * inv[j * d + j];
        let denom = 1.0 + (0.0 + x[j] * uj);
        for &r in rows.rows_with(j) {
            let (cols, vals) = rows.row(r);
            let t = cols
                .iter()
                .zip(vals)
                .find(|(&c, _)| c == j)
                .map_or(0.0, |(_, v)| v * uj);
            if t != 0.0 {
                forms[r] -= t * t / denom;
                widths[r] = width(forms[r]);
            }
        }
        return;
    }
    let (u, seen) = scratch.split_at_mut(d);
    u.iter_mut().for_each(|v| *v = 0.0);
    let mut denom_dot = 0.0;
    for &j in nz.iter().filter(|&&j| x[j] != 0.0) {
        // inv is symmetric: column j is row j
        u.iter_mut()
            .zip(&inv[j * d..(j + 1) * d])
            .for_each(|(v, m)| *v += x[j] * m);
    }
    for &j in nz.iter().filter(|&&j| x[j] != 0.0) {
        denom_dot += x[j] * u[j];
    }
    let denom = 1.0 + denom_dot;
    let update = |f: &mut f64, wd: &mut f64, r: usize| {
        let t = rows.dot_with(r, u);
        if t != 0.0 {
            *f -= t * t / denom;
            *wd = width(*f);
        }
    };
    let support = u.iter().filter(|v| **v != 0.0).count();
    if support * 4 >= d {
        for (r, (f, wd)) in forms.iter_mut().zip(widths.iter_mut()).enumerate() {
            update(f, wd, r);
        }
        return;
    }
    let seen = &mut seen[..forms.len()];
    seen.iter_mut().for_each(|m| *m = 0.0);
    for (i, _) in u.iter().enumerate().filter(|(_, v)| **v != 0.0) {
        for &r in rows.rows_with(i) {
            if seen[r] == 0.0 {
                seen[r] = 1.0;
                update(&mut forms[r], &mut widths[r], r);
            }
        }
    }
}

/// The bonus width of a form, `sqrt(max(form, 0))`.
#[inline]
pub(super) fn width(form: f64) -> f64 {
    form.max(0.0).sqrt()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The dense update every row, as before the sparse paths.
    fn dense(forms: &mut [f64], table: &[f64], inv: &[f64], x: &[f64]) {
        let d = x.len();
        let u: Vec<f64> = (0..d)
            .map(|i| {
                (0..d)
                    .map(|j| x[j] * inv[j * d + i])
                    .fold(0.0, |a, b| a + b)
            })
            .collect();
        let denom = 1.0 + x.iter().zip(&u).map(|(a, b)| a * b).sum::<f64>();
        for (f, row) in forms.iter_mut().zip(table.chunks_exact(d)) {
            let t: f64 = row.iter().zip(&u).map(|(a, b)| a * b).sum();
            *f -= t * t / denom;
        }
    }

    #[test]
    fn sparse_forms_update_is_the_dense_one_bit_for_bit() {
        let d = 12;
        // one-hot rows, then two dense rows and an empty one
        let mut table: Vec<f64> = (0..d * d)
            .map(|k| if k % (d + 1) == 0 { 1.0 } else { 0.0 })
            .collect();
        table.extend((0..d).map(|i| 0.1 * (i as f64 - 4.5)));
        table.extend((0..d).map(|i| if i % 3 == 0 { 0.3 } else { 0.0 }));
        table.extend(std::iter::repeat_n(0.0, d));
        let rows = SparseRows::of(&table, d);
        let n = table.len() / d;
        let diag: Vec<f64> = (0..d * d)
            .map(|k| {
                if k % (d + 1) == 0 {
                    1.0 / (1.0 + (k % 7) as f64)
                } else {
                    0.0
                }
            })
            .collect();
        let mut full = diag.clone();
        for i in 0..d {
            for j in 0..d {
                if i != j {
                    full[i * d + j] = 0.01 / (1.0 + (i + j) as f64);
                }
            }
        }
        let forms0: Vec<f64> = (0..n).map(|r| 0.5 + r as f64 / 7.0).collect();
        let onehot: Vec<f64> = (0..d).map(|i| if i == 5 { 0.8 } else { 0.0 }).collect();
        let spread: Vec<f64> = (0..d).map(|i| if i % 4 == 1 { 0.2 } else { 0.0 }).collect();
        // two nonzeros, both in the first dense row (visited once), where t < 0
        let pair: Vec<f64> = (0..d)
            .map(|i| match i {
                2 => 0.9,
                7 => 0.1,
                _ => 0.0,
            })
            .collect();
        let mut scratch = vec![0.0; d + n];
        let zero = vec![0.0; d];
        let (neg, tiny): (Vec<f64>, _) = (onehot.iter().map(|v| -v).collect(), {
            let mut t = zero.clone();
            t[3] = 1e-200; // t^2 underflows: the forms stay
            t
        });
        for (inv, plain) in [(&diag, true), (&diag, false), (&full, false)] {
            for x in [&onehot, &spread, &pair, &neg, &tiny] {
                let (mut a, mut b) = (forms0.clone(), forms0.clone());
                // nz: a superset of x's nonzeros (the table row's columns)
                let nz: Vec<usize> = (0..d).filter(|&j| x[j] != 0.0 || j == 9).collect();
                let mut widths: Vec<f64> = forms0.iter().map(|&f| width(f)).collect();
                update_forms(&mut a, &mut widths, &rows, inv, x, &nz, &mut scratch, plain);
                dense(&mut b, &table, inv, x);
                let bits = |v: &[f64]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&a), bits(&b));
                assert_eq!(widths, a.iter().map(|&f| width(f)).collect::<Vec<_>>());
                assert!(a != forms0 || std::ptr::eq(x, &tiny));
            }
        }
    }
}
