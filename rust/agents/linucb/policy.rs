//! A LinUCB user's arm from the billboard (the one code the agent's `choose` and an LDP client's
//! run): per arm the index `x^T w~_a + beta s_a(x) z_a` (`z_a = 1` under optimism, a standard
//! normal under sampling), the argmax, ties broken by the caller's pick.

use serde::{Deserialize, Serialize};

use super::inverse_times;
use crate::agents::{Guard, Stream, Ties};

/// A user's (exploration, tie) streams: `None` exploration is optimism, `Ties(None)` the lowest arm.
pub type Draws<'a> = (&'a mut Option<Stream>, &'a mut Ties);

/// What a user's arm needs from the billboard (the agent's, or a client's copy of it).
pub struct Scorer<'a> {
    pub arms: usize,
    pub p: usize,
    /// Per arm the inverse `G~_a^{-1}` (p x p).
    pub inverse: &'a [f64],
    /// Per arm `w~_a` (p).
    pub weights: &'a [f64],
    pub sigma_r: f64,
    /// Variance of one released entry of the reward vector's noise (gamma_t^2).
    pub gamma2: f64,
    pub beta: f64,
}

impl Scorer<'_> {
    /// Per-arm (mean, width) of the context vector `x` (length p, `||x|| <= 1`); `work`: p floats.
    pub fn scores(&self, x: &[f64], out: &mut [f64], work: &mut Vec<f64>) {
        let (p, pp) = (self.p, self.p * self.p);
        work.resize(p, 0.0);
        for a in 0..self.arms {
            let inv = &self.inverse[a * pp..(a + 1) * pp];
            let g = &mut *work;
            inverse_times(inv, x, g);
            let v1: f64 = g.iter().zip(x).map(|(a, b)| a * b).sum();
            let v2: f64 = g.iter().map(|v| v * v).sum();
            let w = &self.weights[a * p..(a + 1) * p];
            out[2 * a] = w.iter().zip(x).map(|(a, b)| a * b).sum();
            out[2 * a + 1] = (self.sigma_r * self.sigma_r * v1.max(0.0) + self.gamma2 * v2).sqrt();
        }
    }

    /// The argmax of the indices of a context inside the bound: `z()` is arm a's exploration
    /// factor, asked in arm order (1 under optimism, a draw under sampling); `pick(t)` the tie's
    /// pick among `t > 1` arms of the best index (asked only then).
    pub fn choose(
        &self,
        xs: &[f64],
        work: &mut Vec<f64>,
        mut z: impl FnMut() -> f64,
        pick: impl FnOnce(usize) -> usize,
    ) -> usize {
        let mut sc = vec![0.0; 2 * self.arms];
        self.scores(xs, &mut sc, work);
        let mut best = f64::NEG_INFINITY;
        let mut ties = 0usize;
        let mut idx = vec![0.0; self.arms];
        for a in 0..self.arms {
            idx[a] = sc[2 * a] + self.beta * sc[2 * a + 1] * z();
            if idx[a] > best {
                best = idx[a];
                ties = 1;
            } else if idx[a] == best {
                ties += 1;
            }
        }
        let pick = if ties > 1 { pick(ties) } else { 0 };
        idx.iter()
            .enumerate()
            .filter(|(_, &v)| v == best)
            .nth(pick)
            .map(|(a, _)| a)
            .unwrap_or(0)
    }

    /// [`Self::choose`] with the user's draws taken from `(exploration, ties)`: one standard
    /// normal per arm in arm order under sampling, one `below(t)` of the tie stream on a tie.
    pub fn choose_drawing(&self, xs: &[f64], work: &mut Vec<f64>, draws: Draws<'_>) -> usize {
        let (exploration, ties) = draws;
        let z = || match exploration {
            None => 1.0,
            Some(st) => {
                let mut z = [0.0];
                st.normals(&mut z);
                z[0]
            }
        };
        let pick = |t| match &mut ties.0 {
            Some(st) => st.below(t),
            None => 0,
        };
        self.choose(xs, work, z, pick)
    }
}

/// A live context projected on the guard's ball, as the intake would (not counted: acting
/// releases nothing); `None` if the guard cannot (a non-finite entry).
pub fn project(guard: Guard, x: &[f64], p: usize) -> Option<Vec<f64>> {
    let mut xs = x.to_vec();
    let loose = Guard {
        reject: false,
        ..guard
    };
    loose.apply(&mut xs, p, None).ok().map(|_| xs)
}

/// A client's copy of the billboard it was made on: what [`Scorer`] reads (O(arms p^2)).
#[derive(Serialize, Deserialize)]
pub struct Board {
    pub inverse: Vec<f64>,
    pub weights: Vec<f64>,
    pub sigma_r: f64,
    pub gamma2: f64,
    pub beta: f64,
}

impl Board {
    pub fn scorer(&self, arms: usize, p: usize) -> Scorer<'_> {
        Scorer {
            arms,
            p,
            inverse: &self.inverse,
            weights: &self.weights,
            sigma_r: self.sigma_r,
            gamma2: self.gamma2,
            beta: self.beta,
        }
    }
}
