//! Small dense helpers the agents' kernels share (row-major d x d matrices, d-vectors).

/// `a . b`, summed left to right from 0.
pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).fold(0.0, |s, (x, y)| s + x * y)
}

/// `x^T m x`, m row-major d x d, clamped at 0 (round-off of an indefinite form; NaN gives 0).
pub(crate) fn quad(x: &[f64], m: &[f64]) -> f64 {
    let d = x.len();
    let mut s = 0.0;
    for i in 0..d {
        s += x[i] * dot(&m[i * d..(i + 1) * d], x);
    }
    s.max(0.0)
}

/// `out = m x`, m row-major (out.len() x x.len()).
pub(crate) fn matvec(m: &[f64], x: &[f64], out: &mut [f64]) {
    let d = x.len();
    for (i, o) in out.iter_mut().enumerate() {
        *o = m[i * d..(i + 1) * d]
            .iter()
            .zip(x)
            .map(|(a, b)| a * b)
            .sum();
    }
}

/// The symmetry check of a row-major d x d matrix `a` (`privrl.common.checks.check_symmetric`,
/// one pass, no temporaries): `(scale, gap, i, j)` with scale = max |a_ij| (NaN when an entry
/// is NaN; the gap is then not computed) and gap = |a_ij - a_ji| at its first largest (i, j) in
/// row-major order (numpy's argmax of |a - a^T|).
pub fn symmetry_gap(a: &[f64], d: usize) -> (f64, f64, usize, usize) {
    let mut scale = 0.0f64;
    for &v in a {
        if v.is_nan() {
            return (f64::NAN, 0.0, 0, 0);
        }
        scale = scale.max(v.abs());
    }
    let (mut gap, mut at) = (f64::NEG_INFINITY, (0, 0));
    for i in 0..d {
        for j in 0..d {
            let g = (a[i * d + j] - a[j * d + i]).abs();
            if g > gap {
                (gap, at) = (g, (i, j));
            }
        }
    }
    (scale, gap, at.0, at.1)
}
