//! The triangular inverse L^{-1} of `rank_one::spd_inverse_into` (the released design matrices
//! of Alg. 2 and of LinUCB), four columns at a time: the same operations per entry.

/// `li = L^{-1}` (lower triangular, d x d; the entries above the diagonal are not written) from
/// the Cholesky factor `l`: li[j][j] = 1 / l[j][j], and below it li[i][j] = (0 - sum_{k=j}^{i-1}
/// l[i][k] li[k][j]) / l[i][i], the subtractions in k order. Four columns j0..j0 + 4 at a time
/// below their own 4 x 4 triangle (their sums start at k = j0 + q: the first three k subtract
/// only from the lanes already started), so four independent sums are in flight and each k
/// reads four adjacent li[k][j]; the same operations per entry, bit for bit, as one column at a
/// time.
#[inline]
pub(crate) fn factor_inverse(l: &[f64], d: usize, li: &mut [f64]) {
    let column = |li: &mut [f64], j: usize, rows: std::ops::Range<usize>| {
        for i in rows {
            let mut s = 0.0;
            for k in j..i {
                s -= l[i * d + k] * li[k * d + j];
            }
            li[i * d + j] = s / l[i * d + i];
        }
    };
    let mut j0 = 0;
    while j0 + 4 <= d {
        for j in j0..j0 + 4 {
            li[j * d + j] = 1.0 / l[j * d + j];
            column(li, j, j + 1..j0 + 4);
        }
        for i in j0 + 4..d {
            let mut acc = [0.0f64; 4];
            for k in j0..j0 + 3 {
                let lik = l[i * d + k];
                for (q, a) in acc.iter_mut().enumerate().take(k - j0 + 1) {
                    *a -= lik * li[k * d + j0 + q];
                }
            }
            for k in j0 + 3..i {
                let lik = l[i * d + k];
                let row: &[f64; 4] = li[k * d + j0..k * d + j0 + 4].try_into().unwrap();
                for (a, x) in acc.iter_mut().zip(row) {
                    *a -= lik * x;
                }
            }
            for (q, s) in acc.into_iter().enumerate() {
                li[i * d + j0 + q] = s / l[i * d + i];
            }
        }
        j0 += 4;
    }
    for j in j0..d {
        li[j * d + j] = 1.0 / l[j * d + j];
        column(li, j, j + 1..d);
    }
}

/// The Cholesky factor `l` (lower triangular, d x d) of (A + A^T) / 2: l[i][j] = (a_ij / 2 +
/// a_ji / 2 - sum_{k<j} l[i][k] l[j][k]) / l[j][j], the subtractions in k order, and l[i][i] the
/// square root of that sum; false (at the first diagonal in row order, `l` then partial) when a
/// diagonal sum is NaN or <= 0. Four rows i0..i0 + 4 at a time left of their 4 x 4 triangle
/// (four independent sums in flight, each l[j][k] read once for the four), then the triangle one
/// entry at a time as before: the same operations per entry, bit for bit, as row by row.
#[inline]
pub(crate) fn cholesky(a: &[f64], d: usize, l: &mut [f64]) -> bool {
    // halves first: (a + a^T) overflows above ~9e307 where the halves' sum does not
    let start = |i: usize, j: usize| 0.5 * a[i * d + j] + 0.5 * a[j * d + i];
    let mut i0 = 0;
    while i0 + 4 <= d {
        for j in 0..i0 {
            let mut acc: [f64; 4] = std::array::from_fn(|q| start(i0 + q, j));
            for k in 0..j {
                let ljk = l[j * d + k];
                for (q, s) in acc.iter_mut().enumerate() {
                    *s -= l[(i0 + q) * d + k] * ljk;
                }
            }
            for (q, s) in acc.into_iter().enumerate() {
                l[(i0 + q) * d + j] = s / l[j * d + j];
            }
        }
        if !cholesky_rows(&start, d, l, i0..i0 + 4, i0) {
            return false;
        }
        i0 += 4;
    }
    cholesky_rows(&start, d, l, i0..d, 0)
}

/// Rows `rows` of [`cholesky`] one entry at a time, from column `from` (the columns before it
/// done); false at a diagonal sum that is NaN or <= 0.
#[inline(always)]
fn cholesky_rows(
    start: &impl Fn(usize, usize) -> f64,
    d: usize,
    l: &mut [f64],
    rows: std::ops::Range<usize>,
    from: usize,
) -> bool {
    for i in rows {
        for j in from..=i {
            let mut s = start(i, j);
            for k in 0..j {
                s -= l[i * d + k] * l[j * d + k];
            }
            if i == j {
                if s.is_nan() || s <= 0.0 {
                    return false;
                }
                l[i * d + i] = s.sqrt();
            } else {
                l[i * d + j] = s / l[j * d + j];
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cholesky_equals_row_by_row_bit_for_bit() {
        // d 1-21 and 64: SPD matrices (B B^T + I, asymmetric noise on top, zeros) and matrices
        // that fail at a diagonal (in and after the first block); the oracle is the previous loop
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(17);
        for d in (1..22).chain([64]) {
            for bad in [None, Some(d / 2), Some(d - 1)] {
                let b: Vec<f64> = (0..d * d).map(|_| rng.random::<f64>() - 0.5).collect();
                let mut a = vec![0.0; d * d];
                for i in 0..d {
                    for j in 0..d {
                        let g: f64 = (0..d).map(|k| b[i * d + k] * b[j * d + k]).sum();
                        let z = rng.random_range(0..9) == 0 && i != j;
                        a[i * d + j] = if z {
                            0.0
                        } else {
                            g + 1e-9 * rng.random::<f64>()
                        };
                    }
                    a[i * d + i] += 1.0;
                }
                if let Some(i) = bad {
                    a[i * d + i] = -1e3;
                }
                let mut l = vec![0.0; d * d];
                let ok = cholesky(&a, d, &mut l);
                let mut want = vec![0.0; d * d];
                let mut want_ok = true;
                'rows: for i in 0..d {
                    for j in 0..=i {
                        let mut s = 0.5 * a[i * d + j] + 0.5 * a[j * d + i];
                        for k in 0..j {
                            s -= want[i * d + k] * want[j * d + k];
                        }
                        if i == j {
                            if s.is_nan() || s <= 0.0 {
                                want_ok = false;
                                break 'rows;
                            }
                            want[i * d + i] = s.sqrt();
                        } else {
                            want[i * d + j] = s / want[j * d + j];
                        }
                    }
                }
                assert_eq!(ok, want_ok, "d {d}, bad {bad:?}");
                if ok {
                    for (n, (x, y)) in l.iter().zip(&want).enumerate() {
                        assert_eq!(x.to_bits(), y.to_bits(), "d {d}, entry {n}");
                    }
                }
            }
        }
    }

    #[test]
    fn factor_inverse_equals_one_column_at_a_time_bit_for_bit() {
        // d 1-21 and 64, lower-triangular factors (positive diagonal) with zeros and magnitudes
        // that show the order; the oracle is the previous loop of spd_inverse_into
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(13);
        for d in (1..22).chain([64]) {
            let mut l = vec![0.0; d * d];
            for i in 0..d {
                for k in 0..i {
                    let e: i32 = rng.random_range(-3..3);
                    let z = rng.random_range(0..9) == 0;
                    l[i * d + k] = if z {
                        0.0
                    } else {
                        (rng.random::<f64>() - 0.5) * 10f64.powi(e)
                    };
                }
                l[i * d + i] = 0.5 + rng.random::<f64>();
            }
            let mut li = vec![0.0; d * d];
            factor_inverse(&l, d, &mut li);
            let mut want = vec![0.0; d * d];
            for j in 0..d {
                want[j * d + j] = 1.0 / l[j * d + j];
                for i in j + 1..d {
                    let mut s = 0.0;
                    for k in j..i {
                        s -= l[i * d + k] * want[k * d + j];
                    }
                    want[i * d + j] = s / l[i * d + i];
                }
            }
            for (n, (a, b)) in li.iter().zip(&want).enumerate() {
                assert_eq!(a.to_bits(), b.to_bits(), "d {d}, entry {n}");
            }
        }
    }
}
