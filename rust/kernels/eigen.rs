//! Eigendecompositions of the small symmetric matrices the releases floor or take functions of
//! (`V diag(f(ev)) V^T`) at every step: a closed-form 3x3 solver, nalgebra's general one
//! otherwise.
//!
//! The 3x3 solver (after Eberly, "A robust eigensolver for 3x3 symmetric matrices", Geometric
//! Tools 2014) takes the eigenvalue that is well separated from the other two from the
//! characteristic cubic in trigonometric form (the largest when det((A - qI)/p) >= 0, else the
//! smallest; its trigonometric formula is well conditioned), its eigenvector as the longest
//! cross product of two rows of `A - lam I`, and the two others from one Jacobi rotation of A
//! restricted to the orthogonal complement. The eigenvalues returned are Rayleigh quotients of
//! the (orthonormal) eigenvectors. No iteration and no allocation: about 3x cheaper than the
//! general tridiagonal QR on 3x3 blocks, with reconstruction and orthogonality errors no larger
//! (tests below). A diagonal matrix is returned exactly.

use nalgebra::DMatrix;

/// Eigenvalues `ev` (d) and orthonormal eigenvectors, the columns of `v` (row-major d x d:
/// `v[i * d + k]` is entry i of eigenvector k), of the symmetric `m` (row-major d x d; the caller
/// symmetrizes it). No order is promised: the releases only take spectral functions.
pub fn sym_eigen(m: &[f64], d: usize, ev: &mut [f64], v: &mut [f64]) {
    debug_assert!(m.len() == d * d && ev.len() == d && v.len() == d * d);
    if d == 3 {
        if let Some((e, vec)) = sym_eigen3(m) {
            ev.copy_from_slice(&e);
            v.copy_from_slice(&vec);
            return;
        }
    }
    let eig = DMatrix::from_fn(d, d, |i, j| m[i * d + j]).symmetric_eigen();
    ev.copy_from_slice(eig.eigenvalues.as_slice());
    for i in 0..d {
        for k in 0..d {
            v[i * d + k] = eig.eigenvectors[(i, k)];
        }
    }
}

/// `out = V diag(fe) V^T` (row-major d x d) for the eigenvectors stored column by column
/// (`vc[k * d + i]`, entry i of eigenvector k: nalgebra's storage): entry (i, j) is the sum over
/// k in ascending order of `(v_ik v_jk) fe_k`, from -0.0 (`Iterator::sum`'s start), the plain
/// triple loop's operations in its order, so its bits. Accumulated k by k into the upper
/// triangle (each entry its own chain: it vectorizes along a row), then mirrored: the plain loop
/// reads the eigenvectors with a stride of d and adds one chain at a time.
pub fn spectral_rebuild(vc: &[f64], fe: &[f64], out: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: only taken when the CPU reports AVX2. Wider registers only: without FMA
            // (not enabled) every product and sum rounds as in the plain build.
            return unsafe { spectral_rebuild_avx2(vc, fe, out) };
        }
    }
    spectral_rebuild_impl(vc, fe, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn spectral_rebuild_avx2(vc: &[f64], fe: &[f64], out: &mut [f64]) {
    spectral_rebuild_impl(vc, fe, out)
}

#[inline(always)]
fn spectral_rebuild_impl(vc: &[f64], fe: &[f64], out: &mut [f64]) {
    let d = fe.len();
    debug_assert!(vc.len() == d * d && out.len() == d * d);
    out.iter_mut().for_each(|o| *o = -0.0);
    for (col, &f) in vc.chunks_exact(d).zip(fe) {
        for (i, &a) in col.iter().enumerate() {
            let row = &mut out[i * d + i..(i + 1) * d];
            for (o, &b) in row.iter_mut().zip(&col[i..]) {
                *o += a * b * f;
            }
        }
    }
    for i in 0..d {
        for j in i + 1..d {
            out[j * d + i] = out[i * d + j];
        }
    }
}

/// 2^(e - 1023) for a biased exponent e in [1, 2046] (exact).
fn pow2_biased(e: u64) -> f64 {
    f64::from_bits(e << 52)
}

/// The 3x3 solver of the module doc on a symmetric row-major `a` (its upper triangle is read);
/// None (the caller falls back to the general solver) when `a` is not finite or its largest
/// entry is outside [2^-1022, 2^1022) (the power-of-two scaling below would not be exact).
pub fn sym_eigen3(a: &[f64]) -> Option<([f64; 3], [f64; 9])> {
    if !a.iter().all(|x| x.is_finite()) {
        return None;
    }
    let top = [a[0], a[1], a[2], a[4], a[5], a[8]]
        .iter()
        .fold(0.0f64, |s, x| s.max(x.abs()));
    if top == 0.0 {
        return Some(([0.0; 3], IDENTITY));
    }
    let e = (top.to_bits() >> 52) & 0x7ff;
    if !(1..=2045).contains(&e) {
        return None;
    }
    // scaled by a power of two (exact) so that the largest entry is in [1, 2): no overflow or
    // underflow in the squares and cross products below
    let (s, unscale) = (pow2_biased(2046 - e), pow2_biased(e));
    let (a00, a01, a02) = (a[0] * s, a[1] * s, a[2] * s);
    let (a11, a12, a22) = (a[4] * s, a[5] * s, a[8] * s);
    let off = a01 * a01 + a02 * a02 + a12 * a12;
    if off == 0.0 {
        return Some(([a[0], a[4], a[8]], IDENTITY));
    }
    // the isolated eigenvalue: q + p beta, beta the largest (det >= 0) or smallest root of
    // beta^3 - 3 beta - det(B) = 0, B = (A - qI) / p
    let q = (a00 + a11 + a22) / 3.0;
    let (b00, b11, b22) = (a00 - q, a11 - q, a22 - q);
    let p = ((b00 * b00 + b11 * b11 + b22 * b22 + 2.0 * off) / 6.0).sqrt();
    let inv_p = 1.0 / p;
    let (c00, c11, c22) = (b00 * inv_p, b11 * inv_p, b22 * inv_p);
    let (c01, c02, c12) = (a01 * inv_p, a02 * inv_p, a12 * inv_p);
    let half_det = 0.5
        * (c00 * (c11 * c22 - c12 * c12) - c01 * (c01 * c22 - c12 * c02)
            + c02 * (c01 * c12 - c11 * c02));
    let angle = half_det.clamp(-1.0, 1.0).acos() / 3.0;
    const TWO_THIRDS_PI: f64 = 2.0 * std::f64::consts::FRAC_PI_3;
    let beta = if half_det >= 0.0 {
        2.0 * angle.cos()
    } else {
        2.0 * (angle + TWO_THIRDS_PI).cos()
    };
    let lam = q + p * beta;
    // its eigenvector: the longest cross product of two rows of A - lam I
    let r0 = [a00 - lam, a01, a02];
    let r1 = [a01, a11 - lam, a12];
    let r2 = [a02, a12, a22 - lam];
    let (x01, x02, x12) = (cross(&r0, &r1), cross(&r0, &r2), cross(&r1, &r2));
    let (d01, d02, d12) = (dot(&x01, &x01), dot(&x02, &x02), dot(&x12, &x12));
    let (x, dmax) = if d01 >= d02 && d01 >= d12 {
        (x01, d01)
    } else if d02 >= d12 {
        (x02, d02)
    } else {
        (x12, d12)
    };
    if !(dmax > 0.0 && dmax.is_finite()) {
        return None;
    }
    let inv = 1.0 / dmax.sqrt();
    let e0 = [x[0] * inv, x[1] * inv, x[2] * inv];
    // an orthonormal basis (u, w) of its complement, and A there diagonalized by one rotation
    let u = if e0[0].abs() > e0[1].abs() {
        let n = 1.0 / (e0[0] * e0[0] + e0[2] * e0[2]).sqrt();
        [-e0[2] * n, 0.0, e0[0] * n]
    } else {
        let n = 1.0 / (e0[1] * e0[1] + e0[2] * e0[2]).sqrt();
        [0.0, e0[2] * n, -e0[1] * n]
    };
    let w = cross(&e0, &u);
    let mul = |y: &[f64; 3]| {
        [
            a00 * y[0] + a01 * y[1] + a02 * y[2],
            a01 * y[0] + a11 * y[1] + a12 * y[2],
            a02 * y[0] + a12 * y[1] + a22 * y[2],
        ]
    };
    let (au, aw, ae) = (mul(&u), mul(&w), mul(&e0));
    let (m00, m01, m11) = (dot(&u, &au), dot(&u, &aw), dot(&w, &aw));
    let (c, s, l1, l2) = if m01 == 0.0 {
        (1.0, 0.0, m00, m11)
    } else {
        let theta = 0.5 * (m11 - m00) / m01;
        let t = 1.0 / (theta.abs() + (theta * theta + 1.0).sqrt());
        let t = if theta < 0.0 { -t } else { t };
        let c = 1.0 / (t * t + 1.0).sqrt();
        (c, t * c, m00 - t * m01, m11 + t * m01)
    };
    let e1 = [
        c * u[0] - s * w[0],
        c * u[1] - s * w[1],
        c * u[2] - s * w[2],
    ];
    let e2 = [
        s * u[0] + c * w[0],
        s * u[1] + c * w[1],
        s * u[2] + c * w[2],
    ];
    let ev = [dot(&e0, &ae) * unscale, l1 * unscale, l2 * unscale];
    if !ev.iter().all(|x| x.is_finite()) {
        return None;
    }
    Some((
        ev,
        [
            e0[0], e1[0], e2[0], //
            e0[1], e1[1], e2[1], //
            e0[2], e1[2], e2[2],
        ],
    ))
}

const IDENTITY: [f64; 9] = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0];

fn cross(x: &[f64; 3], y: &[f64; 3]) -> [f64; 3] {
    [
        x[1] * y[2] - x[2] * y[1],
        x[2] * y[0] - x[0] * y[2],
        x[0] * y[1] - x[1] * y[0],
    ]
}

fn dot(x: &[f64; 3], y: &[f64; 3]) -> f64 {
    x[0] * y[0] + x[1] * y[1] + x[2] * y[2]
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// max |V diag(f(ev)) V^T - want| over the entries.
    fn spectral_gap(ev: &[f64], v: &[f64], f: impl Fn(f64) -> f64, want: &[f64]) -> f64 {
        let mut worst: f64 = 0.0;
        for i in 0..3 {
            for j in 0..3 {
                let x: f64 = (0..3).map(|k| v[i * 3 + k] * v[j * 3 + k] * f(ev[k])).sum();
                worst = worst.max((x - want[i * 3 + j]).abs());
            }
        }
        worst
    }

    fn rotated(rng: &mut impl Rng, lam: [f64; 3]) -> [f64; 9] {
        let q = DMatrix::from_fn(3, 3, |_, _| rng.random::<f64>() - 0.5)
            .qr()
            .q();
        let a =
            &q * DMatrix::from_diagonal(&nalgebra::DVector::from_row_slice(&lam)) * q.transpose();
        let mut m = [0.0; 9];
        for i in 0..3 {
            for j in 0..3 {
                m[i * 3 + j] = 0.5 * (a[(i, j)] + a[(j, i)]);
            }
        }
        m
    }

    /// Random, nearly diagonal, clustered (double, nearly double, nearly triple eigenvalues),
    /// badly scaled and tiny / huge matrices: reconstruction and orthogonality within a few ulps
    /// (of the largest entry), the worst reconstruction no worse than nalgebra's worst; spectral
    /// functions (the floored inverse) as nalgebra's.
    #[test]
    fn closed_form_3x3_matches_nalgebra() {
        let mut rng = rand_chacha::ChaCha12Rng::from_seed([3; 32]);
        let id = IDENTITY;
        let mut worst = (0.0f64, 0.0f64);
        for case in 0..80_000 {
            let mut m = match case % 8 {
                0 => rotated(&mut rng, [1.0, 1.0, 3.0]),
                1 => rotated(&mut rng, [2.0, 2.0 + 1e-9, -1.0]),
                2 => rotated(&mut rng, [1.0, 1.0 + 1e-12, 1.0 - 1e-12]),
                3 => rotated(&mut rng, [0.1, 0.1, 5.1]),
                _ => {
                    let mut m = [0.0; 9];
                    for i in 0..3 {
                        for j in i..3 {
                            let mut v = 2.0 * rng.random::<f64>() - 1.0;
                            if case % 8 == 4 && i != j {
                                v *= 1e-9;
                            }
                            m[i * 3 + j] = v + if i == j { 1.0 } else { 0.0 };
                            m[j * 3 + i] = m[i * 3 + j];
                        }
                    }
                    m
                }
            };
            let scale = [1.0, 1e-200, 1e200, 3e4][case % 4];
            m.iter_mut().for_each(|x| *x *= scale);
            let top = m.iter().fold(0.0f64, |s, x| s.max(x.abs()));
            let (mut ev, mut v) = ([0.0; 3], [0.0; 9]);
            sym_eigen(&m, 3, &mut ev, &mut v);
            let rec = spectral_gap(&ev, &v, |x| x, &m) / top;
            let orth = spectral_gap(&ev, &v, |_| 1.0, &id);
            let nal = DMatrix::from_fn(3, 3, |i, j| m[i * 3 + j]).symmetric_eigen();
            let mut nv = [0.0; 9];
            for i in 0..3 {
                for k in 0..3 {
                    nv[i * 3 + k] = nal.eigenvectors[(i, k)];
                }
            }
            let nrec = spectral_gap(nal.eigenvalues.as_slice(), &nv, |x| x, &m) / top;
            assert!(rec < 4e-15 && orth < 4e-15, "case {case}: {rec:e} {orth:e}");
            worst = (worst.0.max(rec), worst.1.max(nrec));
            // the floored inverse of the practical release, at a floor within the spectrum
            let floor = 0.5 * top;
            let f = |x: f64| 1.0 / x.max(floor);
            let mut want = [0.0; 9];
            for i in 0..3 {
                for j in 0..3 {
                    want[i * 3 + j] = (0..3)
                        .map(|k| nv[i * 3 + k] * nv[j * 3 + k] * f(nal.eigenvalues[k]))
                        .sum();
                }
            }
            let gap = spectral_gap(&ev, &v, f, &want) * floor;
            assert!(gap < 1e-14, "case {case}: {gap:e}");
        }
        assert!(worst.0 <= 1.5 * worst.1, "worst reconstruction {worst:?}");
        // exact on diagonal matrices, zero, and refused when not finite
        let (mut ev, mut v) = ([0.0; 3], [0.0; 9]);
        sym_eigen(
            &[3.0, 0.0, 0.0, 0.0, -1.5, 0.0, 0.0, 0.0, 1e-300],
            3,
            &mut ev,
            &mut v,
        );
        assert_eq!((ev, v), ([3.0, -1.5, 1e-300], IDENTITY));
        assert_eq!(sym_eigen3(&[0.0; 9]), Some(([0.0; 3], IDENTITY)));
        assert!(sym_eigen3(&[f64::NAN, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]).is_none());
    }

    /// `spectral_rebuild` against the plain triple loop it replaces, bit for bit (odd sizes,
    /// zero and negative-zero entries, d = 1).
    #[test]
    fn spectral_rebuild_is_the_plain_loop() {
        let mut rng = rand_chacha::ChaCha12Rng::from_seed([7; 32]);
        for d in [1usize, 2, 3, 5, 8, 17, 64] {
            for case in 0..7 {
                let mut vc: Vec<f64> = (0..d * d).map(|_| rng.random::<f64>() - 0.5).collect();
                if case == 6 {
                    // every term of an off-diagonal entry -0.0: the sum's start decides its sign
                    vc.iter_mut()
                        .enumerate()
                        .for_each(|(t, x)| *x = [1.0, -1.0][t % 2]);
                }
                let mut fe: Vec<f64> = (0..d).map(|_| rng.random::<f64>() * 4.0).collect();
                if case % 2 == 1 {
                    for (t, x) in vc.iter_mut().enumerate() {
                        if t % 3 == 0 {
                            *x = if t % 2 == 0 { 0.0 } else { -0.0 };
                        }
                    }
                    fe[0] = 0.0;
                }
                if case == 6 {
                    fe.iter_mut().for_each(|f| *f = 0.0);
                }
                let v = DMatrix::from_column_slice(d, d, &vc);
                let mut want = vec![0.0; d * d];
                for i in 0..d {
                    for j in i..d {
                        let s: f64 = (0..d).map(|k| v[(i, k)] * v[(j, k)] * fe[k]).sum();
                        want[i * d + j] = s;
                        want[j * d + i] = s;
                    }
                }
                let mut got = vec![1.0; d * d];
                spectral_rebuild(&vc, &fe, &mut got);
                let same = got
                    .iter()
                    .zip(&want)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "d = {d}, case {case}");
            }
        }
    }
}
