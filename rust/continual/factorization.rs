//! The square-root factorization A = L L of the prefix-sum matrix (Fichtenberger, Henzinger &
//! Upadhyay 2023): noise `L z` with L lower-triangular Toeplitz, `c_j = binom(2j, j) / 4^j`.

use crate::continual::{
    capacity_error, check_common, check_leaf_index, fits_or_refuse, MechanismKind, PrefixMechanism,
    MAX_FACTORIZATION_CAPACITY, MAX_FACTORIZATION_HISTORY,
};
use crate::errors::{CoreError, CoreResult};
use crate::noise::{ExactSum, Innovations, NodeNoise, NodeShape};

/// `c_j = binom(2j, j) / 4^j` for j < n, by `c_j = c_{j-1} (2j - 1) / (2j)` (relative error
/// O(j eps), far below anything the variance depends on).
pub fn sqrt_coefficients(n: usize) -> Vec<f64> {
    let mut c = Vec::with_capacity(n);
    let mut v = 1.0;
    for j in 0..n {
        if j > 0 {
            v *= (2 * j - 1) as f64 / (2 * j) as f64;
        }
        c.push(v);
    }
    c
}

/// The square-root factorization mechanism: noise `L z`, L = Toeplitz(c).
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Factorization {
    shape: NodeShape,
    capacity: u64,
    t: u64,
    innov: Innovations,
    exact: ExactSum,
    c: Vec<f64>,
    /// `cum2[k] = sum_{j<=k} c_j^2`.
    cum2: Vec<f64>,
    l1: f64,
    /// Innovations z_1..z_t, packed, one row each.
    history: Vec<f64>,
    current: Vec<f64>,
}

impl Factorization {
    /// A restored mechanism whose buffers fit its parameters (see `TreeAggregator::checked`).
    pub(crate) fn checked(self) -> CoreResult<Self> {
        let p = self.innov.packing.packed;
        let t = usize::try_from(self.t).unwrap_or(usize::MAX);
        let ok = self.innov.fits(self.shape)
            && self.t <= self.capacity
            && self.exact.fits(self.shape.len())
            && self.c.len() == self.cum2.len()
            && self.c.len() as u64 >= self.capacity
            && self.current.len() == p
            && t.checked_mul(p) == Some(self.history.len());
        fits_or_refuse(self, ok, "factorization")
    }

    pub fn new(
        shape: NodeShape,
        noise: NodeNoise,
        capacity: u64,
        seed: [u8; 32],
    ) -> CoreResult<Self> {
        check_common(shape, noise, capacity)?;
        let innov = Innovations::new(shape, noise, seed);
        let p = innov.packing.packed as u64;
        if capacity > MAX_FACTORIZATION_CAPACITY
            || capacity.saturating_mul(p) > MAX_FACTORIZATION_HISTORY
        {
            return Err(CoreError::Capacity(format!(
                "the exact factorization keeps all T = {capacity} innovations of {p} entries; \
                 the limit is T <= {MAX_FACTORIZATION_CAPACITY} and T * entries <= \
                 {MAX_FACTORIZATION_HISTORY}: use mechanism 'blt' (O(1) state) instead"
            )));
        }
        let c = sqrt_coefficients(capacity as usize);
        let mut cum2 = Vec::with_capacity(c.len());
        let mut acc = 0.0;
        for v in &c {
            acc += v * v;
            cum2.push(acc);
        }
        let l1 = c.iter().sum();
        Ok(Factorization {
            shape,
            capacity,
            t: 0,
            exact: ExactSum::for_shape(noise, shape)?,
            innov,
            c,
            cum2,
            l1,
            history: Vec::new(),
            current: vec![0.0; p as usize],
        })
    }

    fn advance(&mut self) -> CoreResult<()> {
        if self.t >= self.capacity {
            return Err(capacity_error(self.capacity));
        }
        let p = self.innov.packing.packed;
        self.history.try_reserve(p).map_err(|_| {
            CoreError::Capacity("out of memory for the factorization's innovation history".into())
        })?;
        let start = self.history.len();
        self.history.resize(start + p, 0.0);
        self.innov.draw(&mut self.history[start..]);
        self.t += 1;
        let t = self.t as usize;
        // noise_t = sum_{i=1}^{t} c_{t-i} z_i
        self.current.iter_mut().for_each(|x| *x = 0.0);
        for (i, row) in self.history.chunks_exact(p).enumerate() {
            let coef = self.c[t - 1 - i];
            for (acc, z) in self.current.iter_mut().zip(row) {
                *acc += coef * *z;
            }
        }
        Ok(())
    }
}

impl PrefixMechanism for Factorization {
    exact_plus_noise!(current);
    fn kind(&self) -> MechanismKind {
        MechanismKind::Factorization
    }
    fn nodes_used(&self) -> u64 {
        self.t
    }
    fn live_nodes(&self) -> usize {
        self.t as usize
    }
    fn push_cost(&self) -> u64 {
        // The next noise sums all t + 1 innovations.
        (self.t + 1).saturating_mul(self.innov.packing.packed as u64)
    }
    fn variance_factor(&self, t: u64) -> f64 {
        let t = t.min(self.capacity);
        if t == 0 {
            0.0
        } else {
            self.cum2[t as usize - 1]
        }
    }
    fn max_variance_factor(&self) -> f64 {
        self.cum2[self.capacity as usize - 1]
    }
    fn variance_profile(&self) -> CoreResult<Vec<f64>> {
        Ok(self.cum2.clone())
    }
    fn leaf_coefficients(&self, leaf: u64) -> CoreResult<Vec<f64>> {
        check_leaf_index(leaf, self.capacity)?;
        Ok(self.c[..(self.capacity - leaf + 1) as usize].to_vec())
    }
    fn l2_multiplier(&self) -> f64 {
        self.max_variance_factor().sqrt()
    }
    fn l1_multiplier(&self) -> f64 {
        self.l1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factorization_coefficients() {
        let c = sqrt_coefficients(6);
        let want = [1.0, 0.5, 0.375, 0.3125, 0.2734375, 0.24609375];
        for (a, b) in c.iter().zip(want) {
            assert!((a - b).abs() < 1e-15);
        }
        // L L = A: sum_{i<=j} c_i c_{j-i} = 1 for every j.
        let c = sqrt_coefficients(300);
        for j in 0..300 {
            let s: f64 = (0..=j).map(|i| c[i] * c[j - i]).sum();
            assert!((s - 1.0).abs() < 1e-12);
        }
        let m = Factorization::new(NodeShape::Vector(1), NodeNoise::Zero, 300, [0; 32]).unwrap();
        let want: f64 = c.iter().map(|x| x * x).sum();
        assert!((m.l2_multiplier() - want.sqrt()).abs() < 1e-12);
        assert!((m.variance_factor(300) - want).abs() < 1e-12);
        assert!(matches!(
            Factorization::new(
                NodeShape::Vector(1),
                NodeNoise::Zero,
                MAX_FACTORIZATION_CAPACITY + 1,
                [0; 32]
            ),
            Err(CoreError::Capacity(_))
        ));
    }
}
