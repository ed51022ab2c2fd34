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
use crate::secure;

/// Largest node (vector length or d*d) any mechanism accepts: 2^27 entries (1 GiB of f64).
/// Larger requests are refused with an error instead of an allocation that would abort.
pub const MAX_NODE_LEN: usize = 1 << 27;

/// Largest `k` of the 2^-k grid of the discrete samplers. It keeps every intermediate of the
/// exact samplers inside u128 and every lattice noise value below 2^45.
pub const MAX_GRID_BITS: u32 = 24;

/// Lattice sums (data + noise, in grid units) stay below 2^52 so that f64 adds them exactly.
pub const LATTICE_LIMIT: f64 = 4_503_599_627_370_496.0;

/// Distribution of every entry of a node's noise (before symmetrization).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NodeNoise {
    /// i.i.d. N(0, sigma^2) entries.
    Gaussian { sigma: f64 },
    /// i.i.d. Laplace(0, b) entries (pure DP).
    Laplace { scale: f64 },
    /// Secure sampler: i.i.d. discrete Gaussian entries on the grid `sigma * 2^-grid_bits`
    /// with variance parameter sigma^2 (Canonne, Kamath & Steinke 2020); see [`crate::secure`].
    DiscreteGaussian { sigma: f64, grid_bits: u32 },
    /// Secure sampler: i.i.d. discrete Laplace entries with scale b on the grid `b * 2^-grid_bits`.
    DiscreteLaplace { scale: f64, grid_bits: u32 },
    /// No noise (non-private; the tree then only counts nodes).
    Zero,
}

impl NodeNoise {
    /// Variance of one i.i.d. entry of a vector node.
    pub fn entry_variance(&self) -> f64 {
        match *self {
            NodeNoise::Gaussian { sigma } => sigma * sigma,
            NodeNoise::Laplace { scale } => 2.0 * scale * scale,
            NodeNoise::DiscreteGaussian { grid_bits, .. } => {
                let g = self.grid().unwrap_or(0.0);
                secure::discrete_gaussian_variance(4f64.powi(grid_bits as i32)) * g * g
            }
            NodeNoise::DiscreteLaplace { grid_bits, .. } => {
                let g = self.grid().unwrap_or(0.0);
                secure::discrete_laplace_variance(2f64.powi(grid_bits as i32)) * g * g
            }
            NodeNoise::Zero => 0.0,
        }
    }

    /// Per-entry variance of ONE node of `shape`, as (off-diagonal, diagonal); (v, v) for vectors.
    pub fn node_variances(&self, shape: NodeShape) -> (f64, f64) {
        let v = self.entry_variance();
        match (*self, shape) {
            (_, NodeShape::Vector(_)) => (v, v),
            (
                NodeNoise::DiscreteGaussian { grid_bits, .. },
                NodeShape::SymMatrix { divisor, .. },
            ) => {
                // Off-diagonal and diagonal entries are drawn directly with the variances
                // (Z' + Z'^T)/c has in the continuous case: 2 s^2 / c^2 and 4 s^2 / c^2.
                let g = self.grid().unwrap_or(0.0);
                let q = sym_square(divisor).unwrap_or(2) as f64;
                let base = 4f64.powi(grid_bits as i32);
                (
                    secure::discrete_gaussian_variance(2.0 * base / q) * g * g,
                    secure::discrete_gaussian_variance(4.0 * base / q) * g * g,
                )
            }
            (_, NodeShape::SymMatrix { divisor, .. }) => {
                let c2 = divisor * divisor;
                (2.0 * v / c2, 4.0 * v / c2)
            }
        }
    }

    /// True for the secure (integer-lattice) samplers.
    pub fn is_discrete(&self) -> bool {
        matches!(
            self,
            NodeNoise::DiscreteGaussian { .. } | NodeNoise::DiscreteLaplace { .. }
        )
    }

    /// Grid spacing `scale * 2^-grid_bits` of a discrete sampler (None for continuous noise).
    pub fn grid(&self) -> Option<f64> {
        match *self {
            NodeNoise::DiscreteGaussian {
                sigma: s,
                grid_bits: k,
            }
            | NodeNoise::DiscreteLaplace {
                scale: s,
                grid_bits: k,
            } => Some(s * 0.5f64.powi(k as i32)),
            _ => None,
        }
    }

    /// The lattice unit the noise of a `shape` node lives on, in data units (None for continuous
    /// noise): the grid, divided by the symmetrization divisor for discrete Laplace matrices.
    pub fn lattice_unit(&self, shape: NodeShape) -> CoreResult<Option<f64>> {
        let Some(g) = self.grid() else {
            return Ok(None);
        };
        match (*self, shape) {
            (_, NodeShape::Vector(_)) => Ok(Some(g)),
            (NodeNoise::DiscreteGaussian { .. }, NodeShape::SymMatrix { divisor, .. }) => {
                sym_square(divisor).map(|_| Some(g)).ok_or_else(|| {
                    CoreError::InvalidParameter(format!(
                        "discrete Gaussian matrices need divisor^2 to be an integer in [1, 64] \
                         (sqrt(2) or 2 in the paper), got divisor {divisor}"
                    ))
                })
            }
            (_, NodeShape::SymMatrix { divisor, .. }) => sym_integer(divisor)
                .map(|c| Some(g / c as f64))
                .ok_or_else(|| {
                    CoreError::InvalidParameter(format!(
                        "discrete Laplace matrices need an integer divisor in [1, 64] \
                         (2 in the paper), got {divisor}"
                    ))
                }),
        }
    }

    pub fn validate(&self) -> CoreResult<()> {
        let (name, v) = match *self {
            NodeNoise::Gaussian { sigma } => ("sigma", sigma),
            NodeNoise::Laplace { scale } => ("Laplace scale", scale),
            NodeNoise::DiscreteGaussian { sigma, .. } => ("discrete Gaussian sigma", sigma),
            NodeNoise::DiscreteLaplace { scale, .. } => ("discrete Laplace scale", scale),
            NodeNoise::Zero => return Ok(()),
        };
        if !(v.is_finite() && v > 0.0) {
            return Err(CoreError::InvalidParameter(format!(
                "{name} must be finite and > 0, got {v}"
            )));
        }
        if let NodeNoise::DiscreteGaussian { grid_bits, .. }
        | NodeNoise::DiscreteLaplace { grid_bits, .. } = *self
        {
            if grid_bits > MAX_GRID_BITS {
                return Err(CoreError::InvalidParameter(format!(
                    "grid_bits must be in [0, {MAX_GRID_BITS}], got {grid_bits}"
                )));
            }
            let g = self.grid().unwrap_or(0.0);
            if !(g.is_normal()) {
                return Err(CoreError::InvalidParameter(format!(
                    "{name} {v} * 2^-{grid_bits} is not a normal double; use a larger scale or fewer grid bits"
                )));
            }
        }
        Ok(())
    }
}

/// divisor^2 as an integer q in [1, 64] (sqrt(2) -> 2, 2 -> 4), the rational variance factor of
/// discrete Gaussian matrix nodes.
fn sym_square(divisor: f64) -> Option<u128> {
    let c2 = divisor * divisor;
    let q = c2.round();
    ((1.0..=64.0).contains(&q) && (c2 - q).abs() <= 1e-9 * q).then_some(q as u128)
}

/// divisor as an integer in [1, 64] (discrete Laplace matrices live on the grid / divisor).
fn sym_integer(divisor: f64) -> Option<u128> {
    let c = divisor.round();
    ((1.0..=64.0).contains(&c) && (divisor - c).abs() <= 1e-12 * c).then_some(c as u128)
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

    /// Refuse empty, overflowing (d*d) or oversized nodes and bad divisors.
    pub fn validate(&self) -> CoreResult<()> {
        let len = match *self {
            NodeShape::Vector(n) => Some(n),
            NodeShape::SymMatrix { d, divisor } => {
                if !(divisor.is_finite() && divisor > 0.0) {
                    return Err(CoreError::InvalidParameter(format!(
                        "symmetrization divisor must be finite and > 0, got {divisor}"
                    )));
                }
                d.checked_mul(d)
            }
        };
        match len {
            Some(0) => Err(CoreError::Shape(
                "nodes must have at least one entry".into(),
            )),
            Some(n) if n <= MAX_NODE_LEN => Ok(()),
            _ => Err(CoreError::Shape(format!(
                "node size {self:?} exceeds the limit of {MAX_NODE_LEN} entries"
            ))),
        }
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
        // Discrete samplers write exact integers in lattice units (see NodeNoise::lattice_unit).
        (NodeNoise::DiscreteGaussian { grid_bits, .. }, NodeShape::Vector(_)) => {
            let s2 = 1u128 << (2 * grid_bits);
            for x in out.iter_mut() {
                *x = secure::discrete_gaussian(rng, s2, 1) as f64;
            }
        }
        (NodeNoise::DiscreteLaplace { grid_bits, .. }, NodeShape::Vector(_)) => {
            for x in out.iter_mut() {
                *x = secure::discrete_laplace(rng, 1u128 << grid_bits) as f64;
            }
        }
        (NodeNoise::DiscreteGaussian { grid_bits, .. }, NodeShape::SymMatrix { d, divisor }) => {
            let q = sym_square(divisor).unwrap_or(2);
            let base = 1u128 << (2 * grid_bits);
            for i in 0..d {
                out[i * d + i] = secure::discrete_gaussian(rng, 4 * base, q) as f64;
                for j in (i + 1)..d {
                    let v = secure::discrete_gaussian(rng, 2 * base, q) as f64;
                    out[i * d + j] = v;
                    out[j * d + i] = v;
                }
            }
        }
        (NodeNoise::DiscreteLaplace { grid_bits, .. }, NodeShape::SymMatrix { d, .. }) => {
            // On the lattice grid / divisor, (Z' + Z'^T)/divisor is Z'_ij + Z'_ji and 2 Z'_ii.
            let t = 1u128 << grid_bits;
            for i in 0..d {
                out[i * d + i] = 2.0 * secure::discrete_laplace(rng, t) as f64;
                for j in (i + 1)..d {
                    let v = (secure::discrete_laplace(rng, t) + secure::discrete_laplace(rng, t))
                        as f64;
                    out[i * d + j] = v;
                    out[j * d + i] = v;
                }
            }
        }
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

/// The exact running sum of the leaves, kept apart from the noise (never released as such).
///
/// With a discrete (secure) sampler the leaves are rounded to the noise lattice first: the
/// discrete mechanisms are only private for data on the lattice (two neighbouring sums off the
/// lattice would have disjoint output supports). Rounding moves each entry by at most half a
/// grid step, so the L2 sensitivity grows by at most `grid * sqrt(entries)` (docs/privacy.md).
/// The sum is then held in lattice units, where f64 adds integers below 2^53 exactly.
#[derive(Debug, Clone)]
pub struct ExactSum {
    sum: Vec<f64>,
    unit: Option<f64>,
    scratch: Vec<f64>,
}

impl ExactSum {
    pub fn new(n: usize, unit: Option<f64>) -> Self {
        ExactSum {
            sum: vec![0.0; n],
            unit,
            scratch: if unit.is_some() {
                vec![0.0; n]
            } else {
                Vec::new()
            },
        }
    }

    /// Lattice unit in data units (None for continuous noise).
    pub fn unit(&self) -> Option<f64> {
        self.unit
    }

    /// Add a leaf; the sum is unchanged when the leaf is refused.
    pub fn add(&mut self, what: &str, leaf: &[f64]) -> CoreResult<()> {
        check_len(what, leaf.len(), self.sum.len())?;
        check_finite(what, leaf)?;
        match self.unit {
            None => {
                for (s, x) in self.sum.iter_mut().zip(leaf) {
                    *s += *x;
                }
            }
            Some(u) => {
                for (i, (r, x)) in self.scratch.iter_mut().zip(leaf).enumerate() {
                    *r = (*x / u).round();
                    if !(r.abs() <= LATTICE_LIMIT && (self.sum[i] + *r).abs() <= LATTICE_LIMIT) {
                        return Err(CoreError::InvalidParameter(format!(
                            "{what}: value {x} at flat index {i} leaves the exact range of the \
                             noise lattice (grid {u:e}, sums up to 2^52 grid steps); use a larger \
                             noise scale or fewer grid bits"
                        )));
                    }
                }
                for (s, r) in self.sum.iter_mut().zip(&self.scratch) {
                    *s += *r;
                }
            }
        }
        Ok(())
    }

    /// The sum in data units (for a lattice: the sum of the rounded leaves).
    pub fn value(&self) -> Vec<f64> {
        match self.unit {
            None => self.sum.clone(),
            Some(u) => self.sum.iter().map(|s| s * u).collect(),
        }
    }

    /// `out = sum + noise` in data units, `noise` in the same units as the sum (None = zero).
    /// On a lattice the integer total is formed first and scaled once, so the released double
    /// is a deterministic function of the exact integer release.
    pub fn release_into(&self, noise: Option<&[f64]>, out: &mut [f64]) -> CoreResult<()> {
        check_len("release buffer", out.len(), self.sum.len())?;
        let u = self.unit.unwrap_or(1.0);
        match (noise, self.unit) {
            (Some(z), None) => {
                for ((o, s), z) in out.iter_mut().zip(&self.sum).zip(z) {
                    *o = *s + *z;
                }
            }
            (Some(z), Some(_)) => {
                for ((o, s), z) in out.iter_mut().zip(&self.sum).zip(z) {
                    *o = (*s + *z) * u;
                }
            }
            (None, None) => out.copy_from_slice(&self.sum),
            (None, Some(_)) => {
                for (o, s) in out.iter_mut().zip(&self.sum) {
                    *o = *s * u;
                }
            }
        }
        Ok(())
    }

    /// `noise` (in sum units) to data units.
    pub fn noise_into(&self, noise: Option<&[f64]>, out: &mut [f64]) -> CoreResult<()> {
        check_len("release buffer", out.len(), self.sum.len())?;
        let u = self.unit.unwrap_or(1.0);
        match noise {
            Some(z) if self.unit.is_some() => {
                for (o, z) in out.iter_mut().zip(z) {
                    *o = *z * u;
                }
            }
            Some(z) => out.copy_from_slice(z),
            None => out.iter_mut().for_each(|x| *x = 0.0),
        }
        Ok(())
    }
}

/// Continual release of prefix sums of a stream of vectors / symmetric matrices.
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
        let unit = noise.lattice_unit(shape)?;
        let n = shape.len();
        Ok(TreeAggregator {
            shape,
            noise,
            capacity,
            t: 0,
            rng: ChaCha12Rng::from_seed(seed),
            exact: ExactSum::new(n, unit),
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
        Ok(NoiseStream {
            noise,
            rng: ChaCha12Rng::from_seed(seed),
            draws: 0,
        })
    }

    pub fn noise(&self) -> NodeNoise {
        self.noise
    }

    /// Number of vectors / matrices drawn so far.
    pub fn draws(&self) -> u64 {
        self.draws
    }

    /// Fill `out` with a noise vector, or a symmetric `d x d` noise matrix when `shape` says so.
    /// Discrete samplers give exact multiples of the lattice unit (`NodeNoise::lattice_unit`);
    /// data they are added to must be rounded to the same lattice (docs/privacy.md).
    pub fn fill(&mut self, shape: NodeShape, out: &mut [f64]) -> CoreResult<()> {
        shape.validate()?;
        check_len("noise buffer", out.len(), shape.len())?;
        let unit = self.noise.lattice_unit(shape)?;
        draw_node_noise(&mut self.rng, self.noise, shape, out);
        if let Some(u) = unit {
            out.iter_mut().for_each(|x| *x *= u);
        }
        self.draws += 1;
        Ok(())
    }
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
        assert_eq!(tr.exact_sum(), vec![1000.0, 2000.0, 3000.0]);
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
                NodeShape::SymMatrix {
                    d: 4,
                    divisor: std::f64::consts::SQRT_2,
                },
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
        for noise in [
            NodeNoise::Gaussian { sigma: 3.0 },
            NodeNoise::Laplace { scale: 0.7 },
        ] {
            let d = 6;
            let mut tr = TreeAggregator::new(
                NodeShape::SymMatrix { d, divisor: 2.0 },
                noise,
                100,
                seed(3),
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
            seed(0),
        );
        assert!(matches!(bad, Err(CoreError::InvalidParameter(_))));
        let bad = TreeAggregator::new(NodeShape::Vector(2), NodeNoise::Zero, 0, seed(0));
        assert!(matches!(bad, Err(CoreError::InvalidParameter(_))));
        let mut tr =
            TreeAggregator::new(NodeShape::Vector(2), NodeNoise::Zero, 3, seed(0)).unwrap();
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
                let mut tr = TreeAggregator::new(shape, noise, 20, seed(5)).unwrap();
                let unit = noise.lattice_unit(shape).unwrap().unwrap();
                let leaf = [0.1234567, -2.0, 5.5, 0.1234567];
                for _ in 0..13 {
                    tr.push(&leaf).unwrap();
                }
                // Exact sum of the rounded leaves; release = integer multiple of the unit.
                for (s, x) in tr.exact_sum().iter().zip(leaf) {
                    assert_eq!(*s, 13.0 * (x / unit).round() * unit);
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
        let mut tr = TreeAggregator::new(NodeShape::Vector(1), noise, 4, seed(0)).unwrap();
        assert!(matches!(
            tr.push(&[1e300]),
            Err(CoreError::InvalidParameter(_))
        ));
        assert_eq!(tr.steps(), 0);
        let bad = NodeNoise::DiscreteGaussian {
            sigma: 1.0,
            grid_bits: 25,
        };
        assert!(TreeAggregator::new(NodeShape::Vector(1), bad, 4, seed(0)).is_err());
        let odd = NodeShape::SymMatrix { d: 2, divisor: 1.7 };
        assert!(TreeAggregator::new(odd, noise, 4, seed(0)).is_err());
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
            seed(0)
        )
        .is_err());
    }

    #[test]
    fn discrete_node_variances_empirical() {
        let cases = [
            (
                NodeNoise::DiscreteGaussian {
                    sigma: 2.0,
                    grid_bits: 3,
                },
                NodeShape::Vector(6),
            ),
            (
                NodeNoise::DiscreteGaussian {
                    sigma: 2.0,
                    grid_bits: 3,
                },
                NodeShape::SymMatrix {
                    d: 3,
                    divisor: std::f64::consts::SQRT_2,
                },
            ),
            (
                NodeNoise::DiscreteLaplace {
                    scale: 1.5,
                    grid_bits: 3,
                },
                NodeShape::Vector(6),
            ),
            (
                NodeNoise::DiscreteLaplace {
                    scale: 1.5,
                    grid_bits: 3,
                },
                NodeShape::SymMatrix { d: 3, divisor: 2.0 },
            ),
        ];
        for (noise, shape) in cases {
            let mut st = NoiseStream::new(noise, seed(9)).unwrap();
            let n = shape.len();
            let mut buf = vec![0.0; n];
            let (mut off, mut diag, mut no, mut nd) = (0.0, 0.0, 0.0, 0.0);
            for _ in 0..20_000 {
                st.fill(shape, &mut buf).unwrap();
                match shape {
                    NodeShape::Vector(_) => {
                        off += buf.iter().map(|x| x * x).sum::<f64>();
                        no += n as f64;
                    }
                    NodeShape::SymMatrix { d, .. } => {
                        for i in 0..d {
                            diag += buf[i * d + i] * buf[i * d + i];
                            nd += 1.0;
                            for j in (i + 1)..d {
                                off += buf[i * d + j] * buf[i * d + j];
                                no += 1.0;
                            }
                        }
                    }
                }
            }
            let (w_off, w_diag) = noise.node_variances(shape);
            assert!(
                (off / no / w_off - 1.0).abs() < 0.04,
                "{noise:?} {shape:?} off"
            );
            if nd > 0.0 {
                assert!(
                    (diag / nd / w_diag - 1.0).abs() < 0.05,
                    "{noise:?} {shape:?} diag"
                );
            }
            // Continuous counterpart has the same per-entry variances (to the grid's precision).
            let cont = match noise {
                NodeNoise::DiscreteGaussian { sigma, .. } => NodeNoise::Gaussian { sigma },
                NodeNoise::DiscreteLaplace { scale, .. } => NodeNoise::Laplace { scale },
                other => other,
            };
            let (c_off, c_diag) = cont.node_variances(shape);
            assert!((w_off / c_off - 1.0).abs() < 0.01 && (w_diag / c_diag - 1.0).abs() < 0.01);
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
