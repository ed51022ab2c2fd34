//! Tree-based continual release of prefix sums (binary mechanism of Dwork et al. 2010 /
//! Chan et al. 2011, as used by Shariff & Sheffet 2018 and the paper's App. "Tree-based method").
//!
//! Leaves are episodes (Alg. 1) or batches (Alg. 2). The exact data sum is kept on the
//! side; only the noise goes through the tree. After `t` leaves the released prefix sum is
//! `sum_{i<=t} leaf_i + sum of the noises of the dyadic nodes covering [1, t]`, i.e. of
//! popcount(t) <= ceil(log2 T + 1) nodes. Node noise is drawn lazily, the moment a node
//! first appears in a released prefix, so a node that would never be released (a leaf
//! absorbed into its parent at once) costs nothing. Live memory is one running noise
//! prefix per level: O(log T) vectors, never O(T).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha12Rng;
use rand_distr::{Distribution, StandardNormal};

use crate::errors::{check_finite, check_len, CoreError, CoreResult};

/// Distribution of every entry of a node's noise (before symmetrization).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NodeNoise {
    /// i.i.d. N(0, sigma^2) entries.
    Gaussian { sigma: f64 },
    /// i.i.d. Laplace(0, b) entries (pure DP).
    Laplace { scale: f64 },
    /// No noise (non-private; the tree then only counts nodes).
    Zero,
}

impl NodeNoise {
    /// Variance of one i.i.d. entry.
    pub fn entry_variance(&self) -> f64 {
        match *self {
            NodeNoise::Gaussian { sigma } => sigma * sigma,
            NodeNoise::Laplace { scale } => 2.0 * scale * scale,
            NodeNoise::Zero => 0.0,
        }
    }

    fn validate(&self) -> CoreResult<()> {
        let (name, v) = match *self {
            NodeNoise::Gaussian { sigma } => ("sigma", sigma),
            NodeNoise::Laplace { scale } => ("Laplace scale", scale),
            NodeNoise::Zero => return Ok(()),
        };
        if !(v.is_finite() && v > 0.0) {
            return Err(CoreError::InvalidParameter(format!(
                "{name} must be finite and > 0, got {v}"
            )));
        }
        Ok(())
    }
}

/// What one leaf (and one node) holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NodeShape {
    /// A vector of length `n`.
    Vector(usize),
    /// A symmetric `d x d` matrix (row-major). Node noise is `(Z' + Z'^T) / divisor`
    /// with i.i.d. entries Z' (the paper uses divisor sqrt(2) in App. B, 2 in Alg. 2).
    SymMatrix { d: usize, divisor: f64 },
}

impl NodeShape {
    pub fn len(&self) -> usize {
        match *self {
            NodeShape::Vector(n) => n,
            NodeShape::SymMatrix { d, .. } => d * d,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Fill `out` with one node's noise.
///
/// For symmetric Gaussian matrices one draw per upper-triangular entry suffices:
/// (Z'_ij + Z'_ji)/c ~ N(0, 2 sigma^2 / c^2) off the diagonal and 2 Z'_ii / c ~ N(0, 4 sigma^2 / c^2)
/// on it, the exact law of `(Z' + Z'^T)/c`, at half the draws. Laplace entries are not
/// closed under sums, so there both Z'_ij and Z'_ji are drawn, literally.
pub fn draw_node_noise<R: Rng + ?Sized>(
    rng: &mut R,
    noise: NodeNoise,
    shape: NodeShape,
    out: &mut [f64],
) {
    match (noise, shape) {
        (NodeNoise::Zero, _) => out.iter_mut().for_each(|x| *x = 0.0),
        (NodeNoise::Gaussian { sigma }, NodeShape::Vector(_)) => {
            for x in out.iter_mut() {
                let z: f64 = StandardNormal.sample(rng);
                *x = sigma * z;
            }
        }
        (NodeNoise::Laplace { scale }, NodeShape::Vector(_)) => {
            for x in out.iter_mut() {
                *x = scale * standard_laplace(rng);
            }
        }
        (NodeNoise::Gaussian { sigma }, NodeShape::SymMatrix { d, divisor }) => {
            let off = sigma * std::f64::consts::SQRT_2 / divisor;
            let diag = 2.0 * sigma / divisor;
            for i in 0..d {
                let z: f64 = StandardNormal.sample(rng);
                out[i * d + i] = diag * z;
                for j in (i + 1)..d {
                    let z: f64 = StandardNormal.sample(rng);
                    let v = off * z;
                    out[i * d + j] = v;
                    out[j * d + i] = v;
                }
            }
        }
        (NodeNoise::Laplace { scale }, NodeShape::SymMatrix { d, divisor }) => {
            for i in 0..d {
                // (Z' + Z'^T)_ii = 2 Z'_ii: one draw, doubled.
                out[i * d + i] = 2.0 * scale * standard_laplace(rng) / divisor;
                for j in (i + 1)..d {
                    let v = scale * (standard_laplace(rng) + standard_laplace(rng)) / divisor;
                    out[i * d + j] = v;
                    out[j * d + i] = v;
                }
            }
        }
    }
}

/// Laplace(0, 1) by inversion of a uniform on (-1/2, 1/2).
pub fn standard_laplace<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    // u in (0, 1): the open interval keeps ln() finite.
    let mut u: f64 = rng.random();
    while u == 0.0 {
        u = rng.random();
    }
    let c = u - 0.5;
    -c.signum() * (1.0 - 2.0 * c.abs()).ln()
}

/// Continual release of prefix sums of a stream of vectors / symmetric matrices.
pub struct TreeAggregator {
    shape: NodeShape,
    noise: NodeNoise,
    capacity: u64,
    t: u64,
    rng: ChaCha12Rng,
    exact_sum: Vec<f64>,
    /// Level of each live node, bottom (largest, oldest) first; strictly decreasing.
    levels: Vec<u32>,
    /// `prefix[i]` = sum of the noises of live nodes `0..=i`. Storing prefixes instead of
    /// node noises makes a merge a truncation: no subtraction, no rounding drift.
    prefix: Vec<Vec<f64>>,
    /// Spare buffers reused after truncation so that steady state allocates nothing.
    spare: Vec<Vec<f64>>,
    scratch: Vec<f64>,
    nodes_drawn: u64,
    keep_last: bool,
    last_node: Vec<f64>,
}

impl TreeAggregator {
    pub fn new(
        shape: NodeShape,
        noise: NodeNoise,
        capacity: u64,
        seed: [u8; 32],
    ) -> CoreResult<Self> {
        noise.validate()?;
        if capacity == 0 {
            return Err(CoreError::InvalidParameter(
                "tree capacity (number of leaves T) must be >= 1".into(),
            ));
        }
        if shape.is_empty() {
            return Err(CoreError::Shape("tree nodes must have at least one entry".into()));
        }
        if let NodeShape::SymMatrix { divisor, .. } = shape {
            if !(divisor.is_finite() && divisor > 0.0) {
                return Err(CoreError::InvalidParameter(format!(
                    "symmetrization divisor must be finite and > 0, got {divisor}"
                )));
            }
        }
        let n = shape.len();
        Ok(TreeAggregator {
            shape,
            noise,
            capacity,
            t: 0,
            rng: ChaCha12Rng::from_seed(seed),
            exact_sum: vec![0.0; n],
            levels: Vec::with_capacity(65),
            prefix: Vec::with_capacity(65),
            spare: Vec::new(),
            scratch: vec![0.0; n],
            nodes_drawn: 0,
            keep_last: false,
            last_node: Vec::new(),
        })
    }

    /// Keep a copy of the most recently drawn node noise (for tests against a reference).
    pub fn set_keep_last_node(&mut self, keep: bool) {
        self.keep_last = keep;
    }

    pub fn last_node_noise(&self) -> &[f64] {
        &self.last_node
    }

    pub fn shape(&self) -> NodeShape {
        self.shape
    }
    pub fn noise(&self) -> NodeNoise {
        self.noise
    }
    pub fn len(&self) -> usize {
        self.shape.len()
    }
    pub fn is_empty(&self) -> bool {
        self.shape.is_empty()
    }
    pub fn capacity(&self) -> u64 {
        self.capacity
    }
    /// Number of leaves pushed so far.
    pub fn steps(&self) -> u64 {
        self.t
    }
    /// Nodes whose noise makes up the current release (= popcount(t)).
    pub fn nodes_used(&self) -> usize {
        self.levels.len()
    }
    /// Largest number of nodes any release of this tree can use: ceil(log2 T + 1).
    pub fn max_nodes(&self) -> usize {
        tree_depth(self.capacity)
    }
    /// Nodes held in memory right now.
    pub fn live_nodes(&self) -> usize {
        self.prefix.len()
    }
    /// Node noises drawn since construction.
    pub fn nodes_drawn(&self) -> u64 {
        self.nodes_drawn
    }

    /// Per-entry variance of the released noise now, as (off-diagonal, diagonal) for
    /// matrices and (v, v) for vectors.
    pub fn release_variance(&self) -> (f64, f64) {
        let nodes = self.nodes_used() as f64;
        let v = self.noise.entry_variance();
        match self.shape {
            NodeShape::Vector(_) => (nodes * v, nodes * v),
            NodeShape::SymMatrix { divisor, .. } => {
                let c2 = divisor * divisor;
                (nodes * 2.0 * v / c2, nodes * 4.0 * v / c2)
            }
        }
    }

    /// Add one leaf (an episode's or a batch's statistic).
    pub fn push(&mut self, leaf: &[f64]) -> CoreResult<()> {
        check_len("tree leaf", leaf.len(), self.shape.len())?;
        check_finite("tree leaf", leaf)?;
        self.push_unchecked(leaf)
    }

    /// Add a leaf of zeros (a step with no data, e.g. an empty batch).
    pub fn push_zero(&mut self) -> CoreResult<()> {
        self.advance()
    }

    fn push_unchecked(&mut self, leaf: &[f64]) -> CoreResult<()> {
        if self.t >= self.capacity {
            return Err(self.capacity_error());
        }
        for (s, x) in self.exact_sum.iter_mut().zip(leaf) {
            *s += *x;
        }
        self.advance()
    }

    fn capacity_error(&self) -> CoreError {
        CoreError::Capacity(format!(
            "tree built for T = {} leaves is full; it cannot release prefix {}",
            self.capacity,
            self.capacity + 1
        ))
    }

    fn advance(&mut self) -> CoreResult<()> {
        if self.t >= self.capacity {
            return Err(self.capacity_error());
        }
        self.t += 1;
        // Binary counter: the new leaf is a level-0 node; it merges with equal-level
        // nodes on top of the stack into their parent. Only the final node is released.
        let mut level = 0u32;
        while let Some(&top) = self.levels.last() {
            if top != level {
                break;
            }
            self.levels.pop();
            if let Some(buf) = self.prefix.pop() {
                self.spare.push(buf);
            }
            level += 1;
        }
        let n = self.shape.len();
        let mut buf = self.spare.pop().unwrap_or_else(|| vec![0.0; n]);
        draw_node_noise(&mut self.rng, self.noise, self.shape, &mut self.scratch);
        self.nodes_drawn += 1;
        match self.prefix.last() {
            Some(prev) => {
                for ((b, p), z) in buf.iter_mut().zip(prev).zip(&self.scratch) {
                    *b = *p + *z;
                }
            }
            None => buf.copy_from_slice(&self.scratch),
        }
        if self.keep_last {
            self.last_node.clear();
            self.last_node.extend_from_slice(&self.scratch);
        }
        self.levels.push(level);
        self.prefix.push(buf);
        Ok(())
    }

    /// Noise part of the current release (zeros before the first leaf).
    pub fn noise_into(&self, out: &mut [f64]) -> CoreResult<()> {
        check_len("release buffer", out.len(), self.shape.len())?;
        match self.prefix.last() {
            Some(p) => out.copy_from_slice(p),
            None => out.iter_mut().for_each(|x| *x = 0.0),
        }
        Ok(())
    }

    /// Exact prefix sum of the data pushed so far (never released by the private algorithms).
    pub fn exact_sum(&self) -> &[f64] {
        &self.exact_sum
    }

    /// The private release: exact prefix sum + tree noise.
    pub fn release_into(&self, out: &mut [f64]) -> CoreResult<()> {
        check_len("release buffer", out.len(), self.shape.len())?;
        match self.prefix.last() {
            Some(p) => {
                for ((o, s), z) in out.iter_mut().zip(&self.exact_sum).zip(p) {
                    *o = *s + *z;
                }
            }
            None => out.copy_from_slice(&self.exact_sum),
        }
        Ok(())
    }

    pub fn release(&self) -> Vec<f64> {
        let mut out = vec![0.0; self.shape.len()];
        // Infallible: the buffer has the right length by construction.
        let _ = self.release_into(&mut out);
        out
    }

    /// Push a leaf and return the new release.
    pub fn push_and_release(&mut self, leaf: &[f64]) -> CoreResult<Vec<f64>> {
        self.push(leaf)?;
        Ok(self.release())
    }
}

/// ceil(log2 n + 1): the most nodes any prefix of an n-leaf tree uses (App. "Tree-based method").
pub fn tree_depth(n: u64) -> usize {
    if n <= 1 {
        return 1;
    }
    // ceil(log2 n) + 1 for n >= 2, computed exactly on integers.
    let ceil_log2 = 64 - (n - 1).leading_zeros() as usize;
    // If n is a power of two, log2 n is an integer and ceil(log2 n + 1) = log2 n + 1;
    // otherwise ceil(log2 n + 1) = floor(log2 n) + 2 = ceil(log2 n) + 1. Same formula.
    ceil_log2 + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed(b: u8) -> [u8; 32] {
        [b; 32]
    }

    #[test]
    fn depth_matches_formula() {
        for n in 1u64..5000 {
            let want = ((n as f64).log2() + 1.0).ceil() as usize;
            assert_eq!(tree_depth(n), want, "n = {n}");
        }
    }

    #[test]
    fn nodes_used_is_popcount_and_bounded() {
        let mut tr = TreeAggregator::new(
            NodeShape::Vector(3),
            NodeNoise::Gaussian { sigma: 1.0 },
            1000,
            seed(1),
        )
        .unwrap();
        for t in 1..=1000u64 {
            tr.push(&[1.0, 2.0, 3.0]).unwrap();
            assert_eq!(tr.nodes_used(), t.count_ones() as usize);
            assert!(tr.nodes_used() <= tr.max_nodes());
            assert!(tr.live_nodes() <= 11);
        }
        assert_eq!(tr.exact_sum(), &[1000.0, 2000.0, 3000.0]);
        assert!(matches!(tr.push(&[0.0; 3]), Err(CoreError::Capacity(_))));
    }

    #[test]
    fn zero_noise_releases_exact_prefix() {
        let mut tr =
            TreeAggregator::new(NodeShape::Vector(2), NodeNoise::Zero, 50, seed(0)).unwrap();
        let mut s = [0.0, 0.0];
        for t in 0..50 {
            let leaf = [t as f64, -(t as f64) * 0.5];
            s[0] += leaf[0];
            s[1] += leaf[1];
            assert_eq!(tr.push_and_release(&leaf).unwrap(), s.to_vec());
        }
    }

    #[test]
    fn same_seed_same_stream() {
        let run = |b| {
            let mut tr = TreeAggregator::new(
                NodeShape::SymMatrix { d: 4, divisor: std::f64::consts::SQRT_2 },
                NodeNoise::Gaussian { sigma: 2.0 },
                64,
                seed(b),
            )
            .unwrap();
            (0..64)
                .flat_map(|_| tr.push_and_release(&[0.0; 16]).unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }

    #[test]
    fn matrix_noise_exactly_symmetric() {
        for noise in [NodeNoise::Gaussian { sigma: 3.0 }, NodeNoise::Laplace { scale: 0.7 }] {
            let d = 6;
            let mut tr =
                TreeAggregator::new(NodeShape::SymMatrix { d, divisor: 2.0 }, noise, 100, seed(3))
                    .unwrap();
            for _ in 0..37 {
                tr.push_zero().unwrap();
            }
            let r = tr.release();
            for i in 0..d {
                for j in 0..d {
                    assert_eq!(r[i * d + j], r[j * d + i]);
                }
            }
        }
    }

    #[test]
    fn bad_parameters_rejected() {
        let bad = TreeAggregator::new(
            NodeShape::Vector(2),
            NodeNoise::Gaussian { sigma: 0.0 },
            10,
            seed(0),
        );
        assert!(matches!(bad, Err(CoreError::InvalidParameter(_))));
        let bad = TreeAggregator::new(NodeShape::Vector(2), NodeNoise::Zero, 0, seed(0));
        assert!(matches!(bad, Err(CoreError::InvalidParameter(_))));
        let mut tr = TreeAggregator::new(NodeShape::Vector(2), NodeNoise::Zero, 3, seed(0)).unwrap();
        assert!(matches!(tr.push(&[1.0]), Err(CoreError::Shape(_))));
        assert!(matches!(tr.push(&[1.0, f64::NAN]), Err(CoreError::NonFinite(_))));
    }

    #[test]
    fn release_variance_empirical() {
        // Gaussian vector tree: variance at step t = popcount(t) sigma^2.
        let sigma = 1.5;
        let t_steps = 13u64; // popcount 3
        let reps = 4000;
        let mut acc = 0.0;
        for r in 0..reps {
            let mut s = [0u8; 32];
            s[..8].copy_from_slice(&(r as u64).to_le_bytes());
            let mut tr = TreeAggregator::new(
                NodeShape::Vector(1),
                NodeNoise::Gaussian { sigma },
                16,
                s,
            )
            .unwrap();
            for _ in 0..t_steps {
                tr.push_zero().unwrap();
            }
            let x = tr.release()[0];
            acc += x * x;
        }
        let var = acc / reps as f64;
        let want = 3.0 * sigma * sigma;
        assert!((var / want - 1.0).abs() < 0.08, "var {var} want {want}");
    }
}

/// A stand-alone privacy-noise stream (ChaCha12): the user-side randomizer of LDP and the
/// per-release Gaussian vectors of Alg. 2 draw from it.
pub struct NoiseStream {
    noise: NodeNoise,
    rng: ChaCha12Rng,
    draws: u64,
}

impl NoiseStream {
    pub fn new(noise: NodeNoise, seed: [u8; 32]) -> CoreResult<Self> {
        noise.validate()?;
        Ok(NoiseStream { noise, rng: ChaCha12Rng::from_seed(seed), draws: 0 })
    }

    pub fn noise(&self) -> NodeNoise {
        self.noise
    }

    /// Number of vectors / matrices drawn so far.
    pub fn draws(&self) -> u64 {
        self.draws
    }

    /// Fill `out` with a noise vector, or a symmetric `d x d` noise matrix when `shape` says so.
    pub fn fill(&mut self, shape: NodeShape, out: &mut [f64]) -> CoreResult<()> {
        check_len("noise buffer", out.len(), shape.len())?;
        draw_node_noise(&mut self.rng, self.noise, shape, out);
        self.draws += 1;
        Ok(())
    }
}
