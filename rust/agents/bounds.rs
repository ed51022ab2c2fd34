//! High-probability norms of the privacy noise released after t users, as the practical release
//! reads them at every time (the regret side only: they never set a noise scale).
//!
//! Gaussian noise (`privrl.privacy.practical`): a released symmetric matrix whose off-diagonal
//! entries have std `s` has `||N|| <= s (2 sqrt(d) + 2 sqrt(log(2/alpha)))`, a vector of i.i.d.
//! `N(0, s^2)` entries `||g|| <= s (sqrt(d) + sqrt(2 log(1/alpha)))`, each w.p. `>= 1 - alpha`.
//! Laplace noise (pure DP): the sum bounds of App. "Auxiliary Results" extended to a sum of `n`
//! node draws (`privrl.privacy.bounds`, whose docstrings derive them; these are their values).

use serde::{Deserialize, Serialize};

/// `2 sqrt(d) + 2 sqrt(log(2/alpha))`: the Gaussian matrix bound per unit of off-diagonal std.
pub fn matrix_bound_factor(d: usize, alpha: f64) -> f64 {
    2.0 * (d as f64).sqrt() + 2.0 * (2.0 / alpha).ln().sqrt()
}

/// `sqrt(d) + sqrt(2 log(1/alpha))`: the Gaussian vector bound per unit of std.
pub fn vector_bound_factor(d: usize, alpha: f64) -> f64 {
    (d as f64).sqrt() + (2.0 * (1.0 / alpha).ln()).sqrt()
}

fn subexp_tail(b: f64, n: f64, l: f64) -> f64 {
    4.0 * b * (n * l / 3.0).sqrt().max(l)
}

/// Operator norm of a sum of `n` symmetric Laplace(b) node matrices `(Z' + Z'^T)/2`, w.p.
/// `>= 1 - alpha`: the smaller of the row-sum and the sub-exponential bounds.
pub fn laplace_matrix_sum_bound(b: f64, n: u64, d: usize, alpha: f64) -> f64 {
    let (n, df) = (n as f64, d as f64);
    let l = (df / alpha).ln();
    let rowsum = b * (2.0 * n * df + 2.0 * (n * df * l).sqrt() + l);
    let subexp = df * subexp_tail(b, n, (2.0 * df * df / alpha).ln());
    rowsum.min(subexp)
}

/// 2-norm of a sum of `n` vectors with i.i.d. Laplace(b) coordinates, w.p. `>= 1 - alpha`.
pub fn laplace_vector_sum_bound(b: f64, n: u64, d: usize, alpha: f64) -> f64 {
    let (n, df) = (n as f64, d as f64);
    let l = (df / alpha).ln();
    let cands = [
        n * b * (n * df / alpha).ln(),
        b * (n + (2.0 * n * l).sqrt() + l),
        subexp_tail(b, n, (2.0 * df / alpha).ln()),
    ];
    df.sqrt() * cands.iter().copied().fold(f64::INFINITY, f64::min)
}

/// The noise bounds (Upsilon_t, C_t) of a release with variance factor `v` (the continual-release
/// mechanism's profile at t under JDP, t under LDP; 0 before the first user).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum NoiseBounds {
    /// No noise (the non-private member of the family).
    Zero,
    /// Gaussian nodes `(Z' + Z'^T)/divisor`, `Z'` of std `sigma_m`, vectors of std `sigma_v`.
    Gaussian {
        sigma_m: f64,
        sigma_v: f64,
        divisor: f64,
        d: usize,
        alpha: f64,
    },
    /// Laplace nodes of scales `b_m` (matrices) and `b_v` (vectors), `round(v)` of them summed.
    Laplace {
        b_m: f64,
        b_v: f64,
        d: usize,
        alpha: f64,
    },
}

impl NoiseBounds {
    /// (Upsilon_t, C_t) for a release of variance factor `v`.
    pub fn at(&self, v: f64) -> (f64, f64) {
        match *self {
            NoiseBounds::Zero => (0.0, 0.0),
            NoiseBounds::Gaussian {
                sigma_m,
                sigma_v,
                divisor,
                d,
                alpha,
            } => (
                sigma_m * (2.0 * v).sqrt() / divisor * matrix_bound_factor(d, alpha),
                sigma_v * v.sqrt() * vector_bound_factor(d, alpha),
            ),
            NoiseBounds::Laplace { b_m, b_v, d, alpha } => {
                let n = v.round();
                if n < 1.0 {
                    return (0.0, 0.0);
                }
                let n = n as u64;
                (
                    laplace_matrix_sum_bound(b_m, n, d, alpha),
                    laplace_vector_sum_bound(b_v, n, d, alpha),
                )
            }
        }
    }

    /// The std of one released off-diagonal entry of the matrix noise at variance factor `v`:
    /// `(Z' + Z'^T) / divisor` sums two nodes' entries (Laplace: divisor 2, entry std `b sqrt 2`).
    pub fn matrix_std(&self, v: f64) -> f64 {
        match *self {
            NoiseBounds::Zero => 0.0,
            NoiseBounds::Gaussian {
                sigma_m, divisor, ..
            } => sigma_m * (2.0 * v).sqrt() / divisor,
            NoiseBounds::Laplace { b_m, .. } => b_m * v.sqrt(),
        }
    }

    /// The std of one released entry of the vector noise at variance factor `v` (0 without
    /// noise; a Laplace(b) entry has std `b sqrt 2`).
    pub fn vector_std(&self, v: f64) -> f64 {
        match *self {
            NoiseBounds::Zero => 0.0,
            NoiseBounds::Gaussian { sigma_v, .. } => sigma_v * v.sqrt(),
            NoiseBounds::Laplace { b_v, .. } => b_v * (2.0 * v).sqrt(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn laplace_bounds_by_hand() {
        // n = 1, d = 2, alpha = 0.1, b = 1: row-sum 2*2 + 2 sqrt(2 ln 20) + ln 20
        let l = (20.0f64).ln();
        let row = 4.0 + 2.0 * (2.0 * l).sqrt() + l;
        let sub = 2.0 * 4.0 * (l / 3.0).sqrt().max((80.0f64).ln());
        assert!((laplace_matrix_sum_bound(1.0, 1, 2, 0.1) - row.min(sub)).abs() < 1e-12);
        // the vector bound at n = 1 is the claim's b sqrt(d) log(d / alpha)
        let v = laplace_vector_sum_bound(1.0, 1, 2, 0.1);
        assert!(v <= 2f64.sqrt() * l + 1e-12);
        assert_eq!(NoiseBounds::Zero.at(5.0), (0.0, 0.0));
    }
}
