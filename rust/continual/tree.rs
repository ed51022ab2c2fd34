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

use rand::SeedableRng;
use rand_chacha::ChaCha12Rng;

use crate::continual::{
    bit_length, check_leaf_index, fits_or_refuse, MechanismKind, PrefixMechanism,
};
use crate::errors::{CoreError, CoreResult};
use crate::noise::{draw_node_noise_with, ExactSum, NodeLaws, NodeNoise, NodeShape};

/// Continual release of prefix sums of a stream of vectors / symmetric matrices.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct TreeAggregator {
    shape: NodeShape,
    noise: NodeNoise,
    capacity: u64,
    t: u64,
    rng: ChaCha12Rng,
    exact: ExactSum,
    /// Level of each live node, bottom (largest, oldest) first; strictly decreasing.
    levels: Vec<u32>,
    /// `prefix[i]` = sum of the noises of live nodes `0..=i` (lattice units for discrete
    /// noise). Storing prefixes instead of node noises makes a merge a truncation: no
    /// subtraction, no rounding drift.
    prefix: Vec<Vec<f64>>,
    /// Spare buffers reused after truncation so that steady state allocates nothing.
    spare: Vec<Vec<f64>>,
    scratch: Vec<f64>,
    nodes_drawn: u64,
    keep_last: bool,
    last_node: Vec<f64>,
    /// The node's discrete laws, resolved at the first draw (not state).
    #[serde(skip)]
    laws: Option<NodeLaws>,
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
        shape.validate()?;
        let n = shape.len();
        Ok(TreeAggregator {
            shape,
            noise,
            capacity,
            t: 0,
            rng: ChaCha12Rng::from_seed(seed),
            exact: ExactSum::for_shape(noise, shape)?,
            levels: Vec::with_capacity(65),
            prefix: Vec::with_capacity(65),
            spare: Vec::new(),
            scratch: vec![0.0; n],
            nodes_drawn: 0,
            keep_last: false,
            last_node: Vec::new(),
            laws: None,
        })
    }

    /// A restored tree whose buffers fit its parameters (a saved file edited with its checksum
    /// recomputed is refused, not indexed out of range or allocated from a corrupted size).
    pub(crate) fn checked(self) -> CoreResult<Self> {
        let n = self.shape.len();
        let ok = self.shape.validate().is_ok()
            && self.noise.validate().is_ok()
            && self.t <= self.capacity
            && self.exact.fits(n)
            && self.scratch.len() == n
            && self.levels.len() == self.prefix.len()
            && self.levels.len() <= 65
            && self.prefix.iter().chain(&self.spare).all(|v| v.len() == n)
            && (self.last_node.is_empty() || self.last_node.len() == n);
        fits_or_refuse(self, ok, "tree")
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
    /// The paper's bound ceil(log2 T + 1) on the nodes a release uses ([`tree_depth`]; the largest
    /// [`Self::nodes_used`] over the tree's T leaves is floor(log2(T + 1)), smaller for every
    /// T >= 2).
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
        let (off, diag) = self.noise.node_variances(self.shape);
        (nodes * off, nodes * diag)
    }

    /// Add one leaf (an episode's or a batch's statistic).
    pub fn push(&mut self, leaf: &[f64]) -> CoreResult<()> {
        if self.t >= self.capacity {
            return Err(self.capacity_error());
        }
        self.exact.add("tree leaf", leaf)?;
        self.advance()
    }

    /// Add a leaf of zeros (a step with no data, e.g. an empty batch).
    pub fn push_zero(&mut self) -> CoreResult<()> {
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
        let (noise, shape) = (self.noise, self.shape);
        let laws = self.laws.get_or_insert_with(|| NodeLaws::new(noise, shape));
        draw_node_noise_with(&mut self.rng, noise, shape, laws, &mut self.scratch);
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
            let u = self.exact.unit().unwrap_or(1.0);
            self.last_node.clear();
            self.last_node.extend(self.scratch.iter().map(|z| z * u));
        }
        self.levels.push(level);
        self.prefix.push(buf);
        Ok(())
    }

    /// Noise part of the current release (zeros before the first leaf).
    pub fn noise_into(&self, out: &mut [f64]) -> CoreResult<()> {
        self.exact
            .noise_into(self.prefix.last().map(|p| p.as_slice()), out)
    }

    /// Exact prefix sum of the data pushed so far (never released by the private algorithms);
    /// with a discrete sampler, of the leaves rounded to the lattice.
    pub fn exact_sum(&self) -> Vec<f64> {
        self.exact.value()
    }

    /// The private release: exact prefix sum + tree noise.
    pub fn release_into(&self, out: &mut [f64]) -> CoreResult<()> {
        self.exact
            .release_into(self.prefix.last().map(|p| p.as_slice()), out)
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

/// ceil(log2 n + 1): the paper's bound K0 on the nodes a prefix of an n-leaf tree uses (App.
/// "Tree-based method"), not their count: prefix t uses popcount(t) nodes, at most
/// floor(log2(n + 1)) over t <= n, at least one below the bound for every n >= 2 (n = 4:
/// bound 3, at most 2 used).
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

/// Released dyadic nodes containing leaf i: level l, index j = ceil(i / 2^l), used iff j is odd
/// (a prefix decomposition only ever ends blocks at odd multiples of 2^l) and j 2^l <= T.
fn tree_leaf_count(leaf: u64, capacity: u64) -> u64 {
    let mut count = 0;
    for l in 0..64u32 {
        let size = 1u128 << l;
        let j = (leaf as u128).div_ceil(size);
        if j * size > capacity as u128 {
            break;
        }
        if j % 2 == 1 {
            count += 1;
        }
    }
    count
}

impl PrefixMechanism for TreeAggregator {
    fn to_state(&self) -> CoreResult<Vec<u8>> {
        crate::state::encode(self)
    }
    fn kind(&self) -> MechanismKind {
        MechanismKind::Tree
    }
    fn shape(&self) -> NodeShape {
        TreeAggregator::shape(self)
    }
    fn noise_law(&self) -> NodeNoise {
        TreeAggregator::noise(self)
    }
    fn capacity(&self) -> u64 {
        TreeAggregator::capacity(self)
    }
    fn steps(&self) -> u64 {
        TreeAggregator::steps(self)
    }
    fn push(&mut self, leaf: &[f64]) -> CoreResult<()> {
        TreeAggregator::push(self, leaf)
    }
    fn push_zero(&mut self) -> CoreResult<()> {
        TreeAggregator::push_zero(self)
    }
    fn noise_into(&self, out: &mut [f64]) -> CoreResult<()> {
        TreeAggregator::noise_into(self, out)
    }
    fn release_into(&self, out: &mut [f64]) -> CoreResult<()> {
        TreeAggregator::release_into(self, out)
    }
    fn exact_sum(&self) -> Vec<f64> {
        TreeAggregator::exact_sum(self)
    }
    fn nodes_used(&self) -> u64 {
        TreeAggregator::nodes_used(self) as u64
    }
    fn live_nodes(&self) -> usize {
        TreeAggregator::live_nodes(self)
    }
    fn nodes_drawn(&self) -> u64 {
        TreeAggregator::nodes_drawn(self)
    }
    fn variance_factor(&self, t: u64) -> f64 {
        t.min(TreeAggregator::capacity(self)).count_ones() as f64
    }
    fn max_variance_factor(&self) -> f64 {
        // The largest popcount of t <= T: floor(log2(T + 1)).
        (bit_length(TreeAggregator::capacity(self).saturating_add(1)) - 1) as f64
    }
    fn leaf_coefficients(&self, leaf: u64) -> CoreResult<Vec<f64>> {
        let cap = TreeAggregator::capacity(self);
        check_leaf_index(leaf, cap)?;
        Ok(vec![1.0; tree_leaf_count(leaf, cap) as usize])
    }
    fn l2_multiplier(&self) -> f64 {
        (bit_length(TreeAggregator::capacity(self)) as f64).sqrt()
    }
    fn l1_multiplier(&self) -> f64 {
        bit_length(TreeAggregator::capacity(self)) as f64
    }
    fn last_node_noise(&self) -> &[f64] {
        TreeAggregator::last_node_noise(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::continual::make_mechanism;

    #[test]
    fn depth_matches_formula() {
        for n in 1u64..5000 {
            let want = ((n as f64).log2() + 1.0).ceil() as usize;
            assert_eq!(tree_depth(n), want, "n = {n}");
        }
    }

    #[test]
    fn depth_is_a_bound_on_the_nodes_used_not_their_count() {
        // the largest popcount(t) over t = 1..=n is floor(log2(n + 1)) <= ceil(log2 n + 1), equal
        // only at n = 1 (n = 3: 2 and 3; n = 4: 2 and 3)
        let mut most = 0;
        for n in 1u64..5000 {
            most = most.max(n.count_ones() as usize);
            assert_eq!(most, (n + 1).ilog2() as usize, "n = {n}");
            assert!(most <= tree_depth(n), "n = {n}");
            assert_eq!(most == tree_depth(n), n == 1, "n = {n}");
        }
    }

    #[test]
    fn nodes_used_is_popcount_and_bounded() {
        let mut tr = TreeAggregator::new(
            NodeShape::Vector(3),
            NodeNoise::Gaussian { sigma: 1.0 },
            1000,
            [1; 32],
        )
        .unwrap();
        for t in 1..=1000u64 {
            tr.push(&[1.0, 2.0, 3.0]).unwrap();
            assert_eq!(tr.nodes_used(), t.count_ones() as usize);
            assert!(tr.nodes_used() <= tr.max_nodes());
            assert!(tr.live_nodes() <= 11);
        }
        assert_eq!(tr.exact_sum(), vec![1000.0, 2000.0, 3000.0]);
        assert!(matches!(tr.push(&[0.0; 3]), Err(CoreError::Capacity(_))));
    }

    #[test]
    fn zero_noise_releases_exact_prefix() {
        let mut tr =
            TreeAggregator::new(NodeShape::Vector(2), NodeNoise::Zero, 50, [0; 32]).unwrap();
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
                NodeShape::SymMatrix {
                    d: 4,
                    divisor: std::f64::consts::SQRT_2,
                },
                NodeNoise::Gaussian { sigma: 2.0 },
                64,
                [b; 32],
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
        for noise in [
            NodeNoise::Gaussian { sigma: 3.0 },
            NodeNoise::Laplace { scale: 0.7 },
        ] {
            let d = 6;
            let mut tr = TreeAggregator::new(
                NodeShape::SymMatrix { d, divisor: 2.0 },
                noise,
                100,
                [3; 32],
            )
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
            [0; 32],
        );
        assert!(matches!(bad, Err(CoreError::InvalidParameter(_))));
        let bad = TreeAggregator::new(NodeShape::Vector(2), NodeNoise::Zero, 0, [0; 32]);
        assert!(matches!(bad, Err(CoreError::InvalidParameter(_))));
        let mut tr =
            TreeAggregator::new(NodeShape::Vector(2), NodeNoise::Zero, 3, [0; 32]).unwrap();
        assert!(matches!(tr.push(&[1.0]), Err(CoreError::Shape(_))));
        assert!(matches!(
            tr.push(&[1.0, f64::NAN]),
            Err(CoreError::NonFinite(_))
        ));
    }

    #[test]
    fn discrete_tree_lives_on_the_lattice() {
        for noise in [
            NodeNoise::DiscreteGaussian {
                sigma: 3.0,
                grid_bits: 8,
            },
            NodeNoise::DiscreteLaplace {
                scale: 3.0,
                grid_bits: 8,
            },
        ] {
            for shape in [
                NodeShape::Vector(4),
                NodeShape::SymMatrix { d: 2, divisor: 2.0 },
            ] {
                let mut tr = TreeAggregator::new(shape, noise, 20, [5; 32]).unwrap();
                let unit = noise.lattice_unit(shape).unwrap().unwrap();
                let leaf = [0.1234567, -2.0, 5.5, 0.1234567];
                for _ in 0..13 {
                    tr.push(&leaf).unwrap();
                }
                // Exact sum of the rounded leaves (the diagonal of discrete Laplace matrices on
                // even units); release = integer multiple of the unit.
                let even = matches!(
                    (noise, shape),
                    (
                        NodeNoise::DiscreteLaplace { .. },
                        NodeShape::SymMatrix { .. }
                    )
                );
                for (i, (s, x)) in tr.exact_sum().iter().zip(leaf).enumerate() {
                    let units = if even && i % 3 == 0 {
                        2.0 * (x / (2.0 * unit)).round_ties_even()
                    } else {
                        (x / unit).round_ties_even()
                    };
                    assert_eq!(*s, 13.0 * units * unit);
                }
                for r in tr.release() {
                    let k = r / unit;
                    assert!(
                        (k - k.round()).abs() < 1e-9,
                        "{r} is not on the grid {unit}"
                    );
                }
            }
        }
    }

    #[test]
    fn discrete_tree_rejects_off_range_leaves_and_bad_grids() {
        let noise = NodeNoise::DiscreteGaussian {
            sigma: 1.0,
            grid_bits: 24,
        };
        let mut tr = TreeAggregator::new(NodeShape::Vector(1), noise, 4, [0; 32]).unwrap();
        assert!(matches!(
            tr.push(&[1e300]),
            Err(CoreError::InvalidParameter(_))
        ));
        assert_eq!(tr.steps(), 0);
        let bad = NodeNoise::DiscreteGaussian {
            sigma: 1.0,
            grid_bits: 25,
        };
        assert!(TreeAggregator::new(NodeShape::Vector(1), bad, 4, [0; 32]).is_err());
        let odd = NodeShape::SymMatrix { d: 2, divisor: 1.7 };
        assert!(TreeAggregator::new(odd, noise, 4, [0; 32]).is_err());
        let lap = NodeNoise::DiscreteLaplace {
            scale: 1.0,
            grid_bits: 4,
        };
        assert!(TreeAggregator::new(
            NodeShape::SymMatrix {
                d: 2,
                divisor: std::f64::consts::SQRT_2
            },
            lap,
            4,
            [0; 32]
        )
        .is_err());
    }

    #[test]
    fn tree_profile_counts() {
        for cap in [1u64, 2, 3, 4, 7, 8, 9, 1000, 1024, 10_000] {
            let m = make_mechanism(
                MechanismKind::Tree,
                NodeShape::Vector(1),
                NodeNoise::Zero,
                cap,
                [0; 32],
            )
            .unwrap();
            let bl = 64 - cap.leading_zeros();
            assert_eq!(m.l2_multiplier(), (bl as f64).sqrt());
            assert_eq!(m.leaf_coefficients(1).unwrap().len() as u32, bl);
            let brute_max = (1..=cap).map(|t| t.count_ones()).max().unwrap() as f64;
            assert_eq!(m.max_variance_factor(), brute_max);
            // Brute force: the nodes of prefix decompositions containing each leaf.
            if cap <= 1024 {
                let mut used = std::collections::HashSet::new();
                for t in 1..=cap {
                    let mut start = 0u64;
                    for l in (0..64).rev() {
                        if (t >> l) & 1 == 1 {
                            used.insert((start + 1, start + (1 << l)));
                            start += 1 << l;
                        }
                    }
                }
                let mut worst = 0;
                for i in 1..=cap {
                    let n = used.iter().filter(|(a, b)| *a <= i && i <= *b).count();
                    assert_eq!(
                        m.leaf_coefficients(i).unwrap().len(),
                        n,
                        "cap {cap} leaf {i}"
                    );
                    worst = worst.max(n);
                }
                assert_eq!(worst as u32, bl);
            }
        }
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
            let mut tr =
                TreeAggregator::new(NodeShape::Vector(1), NodeNoise::Gaussian { sigma }, 16, s)
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
