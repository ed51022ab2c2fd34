//! The normalized features phi_f(r) of every row at once (UCRL-VTR's adaptive planner, Alg. 1 with
//! the normalized target): [`MixtureFeatures::normalized_phi_row`] for all rows, laid out for SIMD.

use super::MixtureFeatures;
use crate::errors::{check_len, CoreResult};

/// Support entries whose targets are divided in one sweep (a multiple of the widest vector).
const BLOCK: usize = 8;

impl MixtureFeatures {
    /// `out[(r, :)] = normalized_phi_row(r, v, (lo[r], hi[r]), tol, amp)` for every row r, out
    /// row-major (n_rows, d), with [lo, hi] from [`Self::support_range`]: the same operations in
    /// the same order per value, so the same bits. The targets `amp ((v(s') - lo) / width)` of a
    /// block of support entries are gathered and divided together (vector divisions: each
    /// quotient rounds as a scalar one does), then summed into the row's accumulators in support
    /// order, skipping zero targets, as the one-row kernel does.
    pub fn normalized_phi(
        &self,
        v: &[f64],
        lo: &[f64],
        hi: &[f64],
        tol: f64,
        amp: f64,
        out: &mut [f64],
    ) -> CoreResult<()> {
        check_len("value vector", v.len(), self.n_states)?;
        check_len("support minima", lo.len(), self.n_rows)?;
        check_len("support maxima", hi.len(), self.n_rows)?;
        check_len("normalized features", out.len(), self.n_rows * self.d)?;
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: only taken when the CPU reports AVX2. Wider registers only: without FMA
                // (not enabled) every quotient, product and sum rounds as in the plain build.
                unsafe { self.normalized_phi_avx2(v, lo, hi, tol, amp, out) };
                return Ok(());
            }
        }
        self.normalized_phi_impl(v, lo, hi, tol, amp, out);
        Ok(())
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn normalized_phi_avx2(
        &self,
        v: &[f64],
        lo: &[f64],
        hi: &[f64],
        tol: f64,
        amp: f64,
        out: &mut [f64],
    ) {
        self.normalized_phi_impl(v, lo, hi, tol, amp, out)
    }

    #[inline(always)]
    fn normalized_phi_impl(
        &self,
        v: &[f64],
        lo: &[f64],
        hi: &[f64],
        tol: f64,
        amp: f64,
        out: &mut [f64],
    ) {
        macro_rules! fixed {
            ($($n:literal)*) => {
                match self.d {
                    $($n => self.normalized_rows::<$n>(v, lo, hi, tol, amp, out),)*
                    _ => {
                        for (row, o) in out.chunks_exact_mut(self.d).enumerate() {
                            self.normalized_phi_row(row, v, (lo[row], hi[row]), tol, amp, o);
                        }
                    }
                }
            };
        }
        fixed!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16);
    }

    #[inline(always)]
    fn normalized_rows<const D: usize>(
        &self,
        v: &[f64],
        lo: &[f64],
        hi: &[f64],
        tol: f64,
        amp: f64,
        out: &mut [f64],
    ) {
        for (row, o) in out.chunks_exact_mut(D).enumerate() {
            let (a, width) = (lo[row], hi[row] - lo[row]);
            let (k0, k1) = (self.indptr[row], self.indptr[row + 1]);
            let next = &self.next_state[k0..k1];
            let x = &self.values[k0 * D..k1 * D];
            let mut acc = [0.0; D];
            if width <= tol {
                // flat: amp on the whole support (no division)
                if amp != 0.0 {
                    for xk in x.chunks_exact(D) {
                        for i in 0..D {
                            acc[i] += amp * xk[i];
                        }
                    }
                }
            } else {
                for (ns, xs) in next.chunks(BLOCK).zip(x.chunks(BLOCK * D)) {
                    let mut f = [0.0; BLOCK];
                    for (fj, &s) in f.iter_mut().zip(ns) {
                        *fj = v[s];
                    }
                    // the whole block (unused lanes too: their quotients are never read)
                    for fj in f.iter_mut() {
                        *fj = amp * ((*fj - a) / width);
                    }
                    for (&fs, xk) in f.iter().zip(xs.chunks_exact(D)) {
                        if fs != 0.0 {
                            for i in 0..D {
                                acc[i] += fs * xk[i];
                            }
                        }
                    }
                }
            }
            o.copy_from_slice(&acc);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::MixtureFeatures;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Random features with supports of 0 to n_states entries (odd lengths, past a block or
    /// two), values with ties, zeros, negatives and flat rows; d across the fixed sizes and
    /// the general path (17).
    #[test]
    fn all_rows_at_once_equal_the_one_row_kernel_bit_for_bit() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for d in [1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17] {
            for n_states in [1, 3, 8, 9, 17, 23] {
                let n_rows = 11;
                let mut dense = vec![0.0; n_rows * n_states * d];
                for r in 0..n_rows {
                    let p = rng.random_range(0.0..1.0);
                    for s in 0..n_states {
                        if rng.random_range(0.0..1.0) < p {
                            let x = &mut dense[(r * n_states + s) * d..(r * n_states + s + 1) * d];
                            x.iter_mut().for_each(|x| *x = rng.random_range(-1.0..1.0));
                        }
                    }
                }
                let f = MixtureFeatures::from_dense(&dense, n_rows, n_states, d).unwrap();
                for trial in 0..6 {
                    let v: Vec<f64> = (0..n_states)
                        .map(|_| match trial {
                            0 => rng.random_range(0.0..10.0),
                            1 => (rng.random_range(0..4) as f64) * 0.5, // ties and zeros
                            2 => 3.0 + rng.random_range(0.0..1e-10),    // flat within tol
                            _ => rng.random_range(-5.0..5.0),
                        })
                        .collect();
                    let (mut lo, mut hi) = (vec![0.0; n_rows], vec![0.0; n_rows]);
                    f.support_range(&v, &mut lo, &mut hi).unwrap();
                    let amp = [7.0, 0.0, 1.0, 10.0, 0.3, 20.0][trial];
                    let mut want = vec![0.0; n_rows * d];
                    for (row, o) in want.chunks_exact_mut(d).enumerate() {
                        f.normalized_phi_row(row, &v, (lo[row], hi[row]), 1e-9, amp, o);
                    }
                    let (mut got, mut plain) = (vec![1.0; n_rows * d], vec![1.0; n_rows * d]);
                    f.normalized_phi(&v, &lo, &hi, 1e-9, amp, &mut got).unwrap();
                    f.normalized_phi_impl(&v, &lo, &hi, 1e-9, amp, &mut plain);
                    let bits = |x: &[f64]| x.iter().map(|y| y.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&got), bits(&want), "d {d} S {n_states} trial {trial}");
                    assert_eq!(
                        bits(&plain),
                        bits(&want),
                        "d {d} S {n_states} trial {trial}"
                    );
                }
            }
        }
    }

    #[test]
    fn wrong_lengths_are_refused() {
        let f = MixtureFeatures::from_dense(&[1.0, 0.0, 0.5, 0.5], 1, 2, 2).unwrap();
        let mut out = [0.0; 2];
        assert!(f
            .normalized_phi(&[1.0], &[0.0], &[1.0], 1e-9, 1.0, &mut out)
            .is_err());
        assert!(f
            .normalized_phi(&[1.0, 2.0], &[], &[1.0], 1e-9, 1.0, &mut out)
            .is_err());
        assert!(f
            .normalized_phi(&[1.0, 2.0], &[0.0], &[1.0], 1e-9, 1.0, &mut [0.0])
            .is_err());
        f.normalized_phi(&[1.0, 2.0], &[1.0], &[2.0], 1e-9, 1.0, &mut out)
            .unwrap();
        assert_eq!(out, [0.5, 0.5]);
    }
}
