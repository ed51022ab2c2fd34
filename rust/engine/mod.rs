//! The episode engine: whole episodes of the built-in agents on a finite MDP with a known model,
//! one call per block of episodes (issue 12).
//!
//! It is bit-identical to the Python path (`privrl.runner.run` with `engine="python"`) for the
//! same seeds because (1) every floating-point operation is either the very kernel the Python
//! path calls (`phi_v`, the optimistic Q, the mechanisms' push and release, Sherman–Morrison,
//! the Cholesky inverse, [`batched_matvec`], [`model::policy_values`]) or an exactly rounded
//! elementwise operation done in the same order as numpy's (products, one addition, the
//! pairwise sums of [`numpy_sum`]); (2) the caller draws the environment's uniforms and the
//! tie-breaking seeds from the same numpy generators the Python path reads, in the same order;
//! (3) the privacy noise comes from the agent's own mechanisms and streams, borrowed, not copied.
//!
//! * [`model`]: the exact finite model: trajectory sampling by inverse CDF on the same
//!   precomputed rows as `FiniteMDP.sample_episode`, exact policy values by backward induction.
//! * [`vtr`]: UCRL-VTR (Alg. 1) episodes: planning for all h, the user's statistics, the
//!   sensitivity guard, the server's push and release, per episode.
//! * [`lsvi`]: LSVI-UCB (Alg. 2) episodes between two releases: a fixed policy, the user's
//!   features through the guard, the server's sums.

pub mod lsvi;
pub mod vtr;

pub use crate::agents::model;
pub use crate::agents::Trajectory;
pub use model::{policy_values, FiniteModel};

use crate::errors::CoreError;

/// What stopped a block of episodes early: the Python side raises the matching exception.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineFault {
    /// A user's statistic is NaN or infinite (`NonFiniteError`).
    NonFinite,
    /// Sensitivity mode "reject" and a statistic outside the bound (`AssumptionError`); the
    /// largest row norm of the statistic.
    Rejected { max_norm: f64 },
    /// The released design matrix of step `h` (0-based) is not positive definite.
    NotPositiveDefinite { h: usize },
    /// Any other kernel error.
    Core(CoreError),
}

impl From<CoreError> for EngineFault {
    fn from(e: CoreError) -> Self {
        EngineFault::Core(e)
    }
}

/// Where a block stopped: the 0-based episode within the block and why.
pub type Stop = (usize, EngineFault);

/// `np.sum` of a contiguous float64 vector, bit for bit: numpy adds the reduction to its
/// identity 0.0 and sums pairwise (8 accumulators below 128 values, halves above).
pub fn numpy_sum(a: &[f64]) -> f64 {
    0.0 + pairwise_sum(a)
}

fn pairwise_sum(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        let mut r = -0.0;
        for &x in a {
            r += x;
        }
        r
    } else if n <= 128 {
        let mut r = [0.0; 8];
        r.copy_from_slice(&a[..8]);
        let mut i = 8;
        while i + 8 <= n {
            for j in 0..8 {
                r[j] += a[i + j];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        while i < n {
            res += a[i];
            i += 1;
        }
        res
    } else {
        let mut half = n / 2;
        half -= half % 8;
        pairwise_sum(&a[..half]) + pairwise_sum(&a[half..])
    }
}

/// `SensitivityGuard.apply` (privrl.agents.base): rows of x within `||x|| <= x_bound`, y within
/// `[y_low, y_high]`; excesses within a relative 1e-9 are projected silently.
#[derive(Debug, Clone, Copy)]
pub struct Guard {
    pub x_bound: f64,
    pub y_low: f64,
    pub y_high: f64,
    pub reject: bool,
}

const GUARD_TOL: f64 = 1e-9;

impl Guard {
    /// Clip (or reject) the rows of `x` (n x d) and the entries of `y`; returns how many
    /// values were beyond the tolerance (the guard's clip count). `norms` is scratch space.
    pub fn apply(
        &self,
        x: &mut [f64],
        d: usize,
        y: Option<&mut [f64]>,
        norms: &mut Vec<f64>,
    ) -> Result<usize, EngineFault> {
        use crate::errors::any_non_finite;
        if any_non_finite(x) || y.as_ref().is_some_and(|y| any_non_finite(y)) {
            return Err(EngineFault::NonFinite);
        }
        norms.clear();
        let mut sq = vec![0.0; 0];
        for row in x.chunks_exact(d) {
            sq.clear();
            sq.extend(row.iter().map(|v| v * v));
            norms.push(numpy_sum(&sq).sqrt());
        }
        let loose = self.x_bound * (1.0 + GUARD_TOL);
        let mut bad = norms.iter().filter(|&&n| n > loose).count();
        let lo_tol = self.y_low - GUARD_TOL * self.y_low.abs().max(1.0);
        let hi_tol = self.y_high + GUARD_TOL * self.y_high.abs().max(1.0);
        if let Some(y) = y.as_ref() {
            bad += y.iter().filter(|&&v| v < lo_tol || v > hi_tol).count();
        }
        if bad > 0 && self.reject {
            let max_norm = norms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            return Err(EngineFault::Rejected { max_norm });
        }
        for (row, &n) in x.chunks_exact_mut(d).zip(norms.iter()) {
            if n > self.x_bound {
                let f = self.x_bound / n.max(1e-300);
                row.iter_mut().for_each(|v| *v *= f);
            }
        }
        if let Some(y) = y {
            for v in y.iter_mut() {
                if *v < self.y_low || *v > self.y_high {
                    *v = v.clamp(self.y_low, self.y_high);
                }
            }
        }
        Ok(bad)
    }
}

/// Per-episode exact regret: `V*_1(s_1) - V^{pi_k}_1(s_1)`, with `V^{pi_k}` recomputed only
/// when the policy changes (as `privrl.runner.run` does).
#[derive(Debug, Clone)]
pub struct RegretCache {
    pi: Vec<usize>,
    v1: Vec<f64>,
    work: Vec<f64>,
    valid: bool,
    /// Distinct consecutive policies seen.
    pub changes: u64,
}

impl RegretCache {
    pub fn new(model: &FiniteModel) -> Self {
        RegretCache {
            pi: vec![0; model.h * model.s],
            v1: vec![0.0; model.s],
            work: vec![0.0; (model.h + 1) * model.s],
            valid: false,
            changes: 0,
        }
    }

    /// Make `pi` the current policy (its exact values computed if it changed).
    pub fn set_policy(&mut self, model: &FiniteModel, pi: &[usize]) {
        if self.valid && self.pi == pi {
            return;
        }
        model.values_into(pi, &mut self.work);
        self.v1.copy_from_slice(&self.work[..model.s]);
        self.pi.copy_from_slice(pi);
        self.valid = true;
        self.changes += 1;
    }

    /// `V^{pi}_1(s)` of the current policy.
    pub fn value(&self, s: usize) -> f64 {
        self.v1[s]
    }
}

/// The per-episode outputs of a block, one entry per episode.
pub struct EpisodeLog<'a> {
    pub gaps: &'a mut [f64],
    pub returns: &'a mut [f64],
    pub starts: &'a mut [i64],
}

impl<'a> EpisodeLog<'a> {
    /// A log over the three output vectors (gaps, returns, initial states) of a block.
    pub fn of(out: &'a mut (Vec<f64>, Vec<f64>, Vec<i64>)) -> Self {
        EpisodeLog {
            gaps: &mut out.0,
            returns: &mut out.1,
            starts: &mut out.2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_sum_orders_like_numpy() {
        // 0.1 * 10 summed pairwise differs from the left-to-right sum in the last bit.
        let a = vec![0.1; 10];
        let r = a[..8].to_vec();
        let pw = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7])) + 0.1 + 0.1;
        assert_eq!(numpy_sum(&a), 0.0 + pw);
        assert_eq!(numpy_sum(&a[..3]), 0.0 + ((0.1 + 0.1) + 0.1));
        assert_eq!(numpy_sum(&[]), 0.0);
    }

    #[test]
    fn guard_clips_rows_and_values() {
        let g = Guard {
            x_bound: 1.0,
            y_low: 0.0,
            y_high: 1.0,
            reject: false,
        };
        let mut x = vec![3.0, 4.0, 0.6, 0.8];
        let mut y = vec![2.0, 0.5];
        let mut n = Vec::new();
        assert_eq!(g.apply(&mut x, 2, Some(&mut y), &mut n).unwrap(), 2);
        assert_eq!(x, vec![3.0 * 0.2, 4.0 * 0.2, 0.6, 0.8]);
        assert_eq!(y, vec![1.0, 0.5]);
        let r = Guard { reject: true, ..g };
        assert!(matches!(
            r.apply(&mut [3.0, 4.0], 2, None, &mut n),
            Err(EngineFault::Rejected { .. })
        ));
        assert_eq!(
            g.apply(&mut [f64::NAN, 0.0], 2, None, &mut n),
            Err(EngineFault::NonFinite)
        );
    }
}
