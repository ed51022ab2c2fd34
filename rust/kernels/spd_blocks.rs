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

#[cfg(test)]
mod tests {
    use super::*;

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
