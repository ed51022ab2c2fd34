//! Honaker's variance-reduced tree, online (Honaker 2015): every dyadic node noised, each prefix
//! released as the minimum-variance unbiased combination of the nodes completed by then.

use crate::continual::{
    bit_length, capacity_error, check_common, check_leaf_index, MechanismKind, PrefixMechanism,
};
use crate::errors::CoreResult;
use crate::noise::{ExactSum, Innovations, NodeNoise, NodeShape};
use crate::tree::tree_leaf_count;

/// Inverse-variance weight of a level-l node against its children's combined estimate, and the
/// variance (in node variances) of the bottom-up estimate of a level-l subtree:
/// `V_0 = 1, V_l = 1 / (1 + 1 / (2 V_{l-1})) = 2^l / (2^(l+1) - 1)`, `w_l = V_l`.
pub fn honaker_level_variance(level: u32) -> f64 {
    1.0 / (2.0 - 0.5f64.powi(level as i32))
}

/// Variance factor of Honaker's online estimate at step t.
pub fn honaker_variance_factor(t: u64) -> f64 {
    (0..64)
        .filter(|l| (t >> l) & 1 == 1)
        .map(honaker_level_variance)
        .sum()
}

/// Honaker's variance-reduced tree (online: each prefix uses the nodes completed by then).
pub struct Honaker {
    shape: NodeShape,
    capacity: u64,
    t: u64,
    innov: Innovations,
    exact: ExactSum,
    /// Levels of the complete subtrees of [1, t] (dyadic decomposition), oldest first.
    levels: Vec<u32>,
    /// Noise of the bottom-up estimate of each of those subtrees (packed).
    est: Vec<Vec<f64>>,
    /// Sum of `est` (packed): the noise of the current release.
    total: Vec<f64>,
    spare: Vec<Vec<f64>>,
    node: Vec<f64>,
}

impl Honaker {
    pub fn new(
        shape: NodeShape,
        noise: NodeNoise,
        capacity: u64,
        seed: [u8; 32],
    ) -> CoreResult<Self> {
        check_common(shape, noise, capacity)?;
        let unit = noise.lattice_unit(shape)?;
        let innov = Innovations::new(shape, noise, seed);
        let p = innov.packing.packed;
        Ok(Honaker {
            shape,
            capacity,
            t: 0,
            innov,
            exact: ExactSum::new(shape.len(), unit),
            levels: Vec::with_capacity(65),
            est: Vec::with_capacity(65),
            total: vec![0.0; p],
            spare: Vec::new(),
            node: vec![0.0; p],
        })
    }

    /// Stream order of the draws: at step t the leaf node first, then each node completed by
    /// the leaf, bottom-up (the numpy reference follows it).
    fn advance(&mut self) -> CoreResult<()> {
        if self.t >= self.capacity {
            return Err(capacity_error(self.capacity));
        }
        self.t += 1;
        let p = self.innov.packing.packed;
        let mut cur = self.spare.pop().unwrap_or_else(|| vec![0.0; p]);
        self.innov.draw(&mut cur);
        let mut level = 0u32;
        while self.levels.last() == Some(&level) {
            self.levels.pop();
            let left = self.est.pop().unwrap_or_else(|| vec![0.0; p]);
            level += 1;
            self.innov.draw(&mut self.node);
            let w = honaker_level_variance(level);
            for ((c, l), z) in cur.iter_mut().zip(&left).zip(&self.node) {
                *c = w * *z + (1.0 - w) * (*l + *c);
            }
            self.spare.push(left);
        }
        self.levels.push(level);
        self.est.push(cur);
        self.total.iter_mut().for_each(|x| *x = 0.0);
        for e in &self.est {
            for (s, v) in self.total.iter_mut().zip(e) {
                *s += *v;
            }
        }
        Ok(())
    }

    fn noise_full(&self) -> Vec<f64> {
        let mut out = vec![0.0; self.shape.len()];
        self.innov.packing.unpack(&self.total, &mut out);
        out
    }
}

impl PrefixMechanism for Honaker {
    fn kind(&self) -> MechanismKind {
        MechanismKind::Honaker
    }
    fn shape(&self) -> NodeShape {
        self.shape
    }
    fn noise_law(&self) -> NodeNoise {
        self.innov.noise
    }
    fn capacity(&self) -> u64 {
        self.capacity
    }
    fn steps(&self) -> u64 {
        self.t
    }
    fn push(&mut self, leaf: &[f64]) -> CoreResult<()> {
        if self.t >= self.capacity {
            return Err(capacity_error(self.capacity));
        }
        self.exact.add("leaf", leaf)?;
        self.advance()
    }
    fn push_zero(&mut self) -> CoreResult<()> {
        self.advance()
    }
    fn noise_into(&self, out: &mut [f64]) -> CoreResult<()> {
        self.exact.noise_into(Some(&self.noise_full()), out)
    }
    fn release_into(&self, out: &mut [f64]) -> CoreResult<()> {
        self.exact.release_into(Some(&self.noise_full()), out)
    }
    fn exact_sum(&self) -> Vec<f64> {
        self.exact.value()
    }
    fn nodes_used(&self) -> u64 {
        // Every node of the complete subtrees of [1, t]: sum over set bits l of (2^(l+1) - 1).
        2 * self.t - self.t.count_ones() as u64
    }
    fn live_nodes(&self) -> usize {
        self.est.len()
    }
    fn nodes_drawn(&self) -> u64 {
        self.innov.drawn
    }
    fn variance_factor(&self, t: u64) -> f64 {
        honaker_variance_factor(t.min(self.capacity))
    }
    fn max_variance_factor(&self) -> f64 {
        // V_l > 0 and decreasing in l, so over t <= T the maximum is at T or at T with one set
        // bit b cleared and every lower bit set.
        let cap = self.capacity;
        let mut best = honaker_variance_factor(cap);
        for b in 0..64 {
            if (cap >> b) & 1 == 1 {
                let cand = (cap & !((1u64 << b) | ((1u64 << b) - 1))) | ((1u64 << b) - 1);
                best = best.max(honaker_variance_factor(cand));
            }
        }
        best
    }
    fn leaf_coefficients(&self, leaf: u64) -> CoreResult<Vec<f64>> {
        check_leaf_index(leaf, self.capacity)?;
        Ok(vec![
            1.0;
            tree_leaf_count(leaf, self.capacity, false) as usize
        ])
    }
    fn l2_multiplier(&self) -> f64 {
        (bit_length(self.capacity) as f64).sqrt()
    }
    fn l1_multiplier(&self) -> f64 {
        bit_length(self.capacity) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed(b: u8) -> [u8; 32] {
        [b; 32]
    }

    #[test]
    fn honaker_max_variance_by_brute_force() {
        for cap in [1u64, 2, 5, 6, 13, 100, 1000, 4095, 4096, 10_000] {
            let m = Honaker::new(NodeShape::Vector(1), NodeNoise::Zero, cap, seed(0)).unwrap();
            let brute = (1..=cap).map(honaker_variance_factor).fold(0.0, f64::max);
            assert!((m.max_variance_factor() - brute).abs() < 1e-12, "cap {cap}");
        }
        assert_eq!(honaker_level_variance(0), 1.0);
        assert!((honaker_level_variance(1) - 2.0 / 3.0).abs() < 1e-15);
        assert!((honaker_level_variance(2) - 4.0 / 7.0).abs() < 1e-15);
    }
}
