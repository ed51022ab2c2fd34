//! Continual release of prefix sums behind one interface ([`PrefixMechanism`]): the binary tree
//! of the paper's App. "Tree-based method" and three lower-noise alternatives with the same
//! privacy guarantee at a rescaled sigma.
//!
//! Every mechanism releases, after `t` leaves `x_1..x_t`, `S_t + N_t` with `S_t = x_1 + .. + x_t`
//! exact and `N_t` a linear function of i.i.d. node noises (innovations) `z` drawn lazily from
//! one ChaCha12 stream. Each is the post-processing of a Gaussian (or Laplace) release `E x + z`
//! of an *encoder* `E`; one leaf `x_i` enters that release through column `i` of `E`, so the
//! per-user sensitivity is the per-leaf sensitivity times `max_i ||E e_i||_2` (L2, Gaussian) or
//! `max_i ||E e_i||_1` (L1, Laplace): the *sensitivity multiplier*. Releases with the same
//! noise multiplier `sigma / (Delta * multiplier)` have the same privacy curve.
//!
//! * [`MechanismKind::Tree`]: the binary mechanism ([`TreeAggregator`]). `E` has one row per
//!   released dyadic node; leaf 1 lies in `floor(log2 T) + 1` of them, multiplier
//!   `sqrt(floor(log2 T) + 1)`. Variance at step t: `popcount(t)` node variances.
//! * [`MechanismKind::Honaker`]: the same tree with every dyadic node noised, and each prefix
//!   released as the minimum-variance unbiased linear combination of the noisy nodes completed
//!   by time t (Honaker 2015, online variant). The nodes inside [1, t] split into the complete
//!   subtrees of the dyadic decomposition of t; the best estimate of a subtree's sum from its own
//!   nodes is Honaker's bottom-up pass `est(v) = w_l y_v + (1 - w_l)(est(left) + est(right))`
//!   with `V_l = 2^l / (2^(l+1) - 1)` node variances and `w_l = V_l` (inverse-variance weights),
//!   and the subtrees are independent, so the sum of their estimates is the exact BLUE of the
//!   prefix. Variance at step t: `sum over set bits l of t of 2^l / (2^(l+1) - 1)`; same
//!   multiplier as the tree (leaf 1 lies in one node per level).
//! * [`MechanismKind::Factorization`]: the square-root factorization A = L L of the prefix-sum
//!   matrix (Fichtenberger, Henzinger & Upadhyay 2023), L lower-triangular Toeplitz with
//!   `c_j = binom(2j, j) / 4^j`; noise at step t is `sum_{j<t} c_j z_{t-j}`, variance
//!   `sum_{j<t} c_j^2`, multiplier `sqrt(sum_{j<T} c_j^2)` (L2) / `sum_{j<T} c_j` (L1). O(T)
//!   memory and O(t) work per step.
//! * [`MechanismKind::Blt`]: a buffered-linear-Toeplitz encoder C (Dvijotham et al. 2024),
//!   `c_0 = 1, c_j = sum_i omega_i theta_i^(j-1)`, decoder `A C^{-1}`; the noise `A C^{-1} z` is
//!   generated with `buffers` state vectors. The parameters come from a quadrature of the
//!   arcsine-moment representation `binom(2j, j)/4^j = (1/pi) int_0^1 x^j (x(1-x))^(-1/2) dx`
//!   (see [`blt_parameters`]), i.e. C approximates L; the variance and multipliers reported are
//!   exact for the C actually used (not for L).

use rand::SeedableRng;
use rand_chacha::ChaCha12Rng;

use crate::errors::{CoreError, CoreResult};
use crate::tree::{draw_node_noise, ExactSum, NodeNoise, NodeShape, TreeAggregator};

/// Largest capacity of the exact factorization: it keeps O(T) coefficients and O(T) innovations.
pub const MAX_FACTORIZATION_CAPACITY: u64 = 1 << 22;
/// Largest innovation history (entries) the factorization may keep: 2^28 doubles = 2 GiB.
pub const MAX_FACTORIZATION_HISTORY: u64 = 1 << 28;
/// Largest number of BLT buffers.
pub const MAX_BLT_BUFFERS: usize = 64;
/// Default number of BLT buffers: within ~1-2% of the exact factorization's error for
/// T from 10 to 10^5 (tests/test_continual.py).
pub const DEFAULT_BLT_BUFFERS: usize = 8;
/// Longest coefficient column `leaf_coefficients` returns.
pub const MAX_COEFFICIENTS: u64 = 1 << 24;

/// Which continual-release mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MechanismKind {
    Tree,
    Honaker,
    Factorization,
    Blt { buffers: usize },
}

impl MechanismKind {
    /// "tree" | "honaker" | "factorization" | "blt" (with `buffers`, 0 = default).
    pub fn parse(name: &str, buffers: usize) -> CoreResult<Self> {
        match name {
            "tree" => Ok(MechanismKind::Tree),
            "honaker" => Ok(MechanismKind::Honaker),
            "factorization" => Ok(MechanismKind::Factorization),
            "blt" => {
                let b = if buffers == 0 {
                    DEFAULT_BLT_BUFFERS
                } else {
                    buffers
                };
                if b > MAX_BLT_BUFFERS {
                    return Err(CoreError::InvalidParameter(format!(
                        "blt buffers must be in [1, {MAX_BLT_BUFFERS}], got {b}"
                    )));
                }
                Ok(MechanismKind::Blt { buffers: b })
            }
            other => Err(CoreError::InvalidParameter(format!(
                "mechanism must be 'tree', 'honaker', 'factorization' or 'blt', got {other:?}"
            ))),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            MechanismKind::Tree => "tree",
            MechanismKind::Honaker => "honaker",
            MechanismKind::Factorization => "factorization",
            MechanismKind::Blt { .. } => "blt",
        }
    }
}

/// Continual release of prefix sums with a known noise law and sensitivity structure.
pub trait PrefixMechanism: Send + Sync {
    fn kind(&self) -> MechanismKind;
    fn shape(&self) -> NodeShape;
    fn noise_law(&self) -> NodeNoise;
    fn capacity(&self) -> u64;
    /// Leaves pushed so far.
    fn steps(&self) -> u64;
    /// Add one leaf (flat, row-major for matrices); refused leaves leave the state unchanged.
    fn push(&mut self, leaf: &[f64]) -> CoreResult<()>;
    /// Add an all-zero leaf.
    fn push_zero(&mut self) -> CoreResult<()>;
    /// The noise part of the current release.
    fn noise_into(&self, out: &mut [f64]) -> CoreResult<()>;
    /// The current release: exact prefix sum + noise.
    fn release_into(&self, out: &mut [f64]) -> CoreResult<()>;
    /// The exact prefix sum (server-internal, never released).
    fn exact_sum(&self) -> Vec<f64>;
    /// Node noises / innovations combined in the current release.
    fn nodes_used(&self) -> u64;
    /// Noise vectors held in memory.
    fn live_nodes(&self) -> usize;
    /// Node noises / innovations drawn so far.
    fn nodes_drawn(&self) -> u64;
    /// Variance of the released noise at step t (0 <= t <= T) in units of one innovation's
    /// variance: `sum_k a_{t,k}^2` over the decoder row of step t.
    fn variance_factor(&self, t: u64) -> f64;
    /// `max_{t <= T} variance_factor(t)`.
    fn max_variance_factor(&self) -> f64;
    /// Coefficients with which leaf `i` (1-based) enters the noisy encoder release `E x + z`
    /// (column i of E, zero entries dropped).
    fn leaf_coefficients(&self, leaf: u64) -> CoreResult<Vec<f64>>;
    /// `max_i ||E e_i||_2`: the factor on the per-leaf L2 sensitivity (Gaussian noise).
    fn l2_multiplier(&self) -> f64;
    /// `max_i ||E e_i||_1`: the factor on the per-leaf L1 sensitivity (Laplace noise).
    fn l1_multiplier(&self) -> f64;

    /// `variance_factor(t)` for t = 1..=T (at most MAX_COEFFICIENTS steps).
    fn variance_profile(&self) -> CoreResult<Vec<f64>> {
        check_profile_len(self.capacity())?;
        Ok((1..=self.capacity())
            .map(|t| self.variance_factor(t))
            .collect())
    }

    /// Per-entry variance of the released noise at step t, (off-diagonal, diagonal).
    fn step_variance(&self, t: u64) -> (f64, f64) {
        let f = self.variance_factor(t);
        let (off, diag) = self.noise_law().node_variances(self.shape());
        (f * off, f * diag)
    }

    /// Per-entry variance of the current release, (off-diagonal, diagonal).
    fn release_variance(&self) -> (f64, f64) {
        self.step_variance(self.steps())
    }
}

/// Build a mechanism. Discrete (secure) noise is offered on the binary tree only: its release is
/// an integer sum of lattice node values, while the others weight nodes by non-dyadic reals.
pub fn make_mechanism(
    kind: MechanismKind,
    shape: NodeShape,
    noise: NodeNoise,
    capacity: u64,
    seed: [u8; 32],
) -> CoreResult<Box<dyn PrefixMechanism>> {
    if noise.is_discrete() && kind != MechanismKind::Tree {
        return Err(CoreError::InvalidParameter(format!(
            "discrete (secure) noise is available on the binary tree only, not on '{}'",
            kind.name()
        )));
    }
    Ok(match kind {
        MechanismKind::Tree => Box::new(TreeAggregator::new(shape, noise, capacity, seed)?),
        MechanismKind::Honaker => Box::new(Honaker::new(shape, noise, capacity, seed)?),
        MechanismKind::Factorization => Box::new(Factorization::new(shape, noise, capacity, seed)?),
        MechanismKind::Blt { buffers } => {
            Box::new(Blt::new(shape, noise, capacity, seed, buffers)?)
        }
    })
}

// ---------------------------------------------------------------- shared pieces

fn check_common(shape: NodeShape, noise: NodeNoise, capacity: u64) -> CoreResult<()> {
    noise.validate()?;
    shape.validate()?;
    if capacity == 0 {
        return Err(CoreError::InvalidParameter(
            "capacity (number of leaves T) must be >= 1".into(),
        ));
    }
    Ok(())
}

fn capacity_error(capacity: u64) -> CoreError {
    CoreError::Capacity(format!(
        "mechanism built for T = {capacity} leaves is full; it cannot release prefix {}",
        capacity.saturating_add(1)
    ))
}

fn check_leaf_index(leaf: u64, capacity: u64) -> CoreResult<()> {
    if leaf == 0 || leaf > capacity {
        return Err(CoreError::InvalidParameter(format!(
            "leaf index must be in [1, {capacity}], got {leaf}"
        )));
    }
    Ok(())
}

fn check_profile_len(capacity: u64) -> CoreResult<()> {
    if capacity > MAX_COEFFICIENTS {
        return Err(CoreError::Capacity(format!(
            "a variance profile lists at most {MAX_COEFFICIENTS} steps, capacity is {capacity}"
        )));
    }
    Ok(())
}

/// Number of bits of n (floor(log2 n) + 1 for n >= 1).
fn bit_length(n: u64) -> u32 {
    64 - n.leading_zeros()
}

/// Symmetric matrices are handled as their upper triangle (row-major, i <= j): half the memory
/// and work for the O(T)-state factorization, and exact symmetry by construction.
#[derive(Debug, Clone)]
struct Packing {
    shape: NodeShape,
    packed: usize,
}

impl Packing {
    fn new(shape: NodeShape) -> Self {
        let packed = match shape {
            NodeShape::Vector(n) => n,
            NodeShape::SymMatrix { d, .. } => d * (d + 1) / 2,
        };
        Packing { shape, packed }
    }

    fn pack(&self, full: &[f64], out: &mut [f64]) {
        match self.shape {
            NodeShape::Vector(_) => out.copy_from_slice(full),
            NodeShape::SymMatrix { d, .. } => {
                let mut k = 0;
                for i in 0..d {
                    for j in i..d {
                        out[k] = full[i * d + j];
                        k += 1;
                    }
                }
            }
        }
    }

    fn unpack(&self, packed: &[f64], out: &mut [f64]) {
        match self.shape {
            NodeShape::Vector(_) => out.copy_from_slice(packed),
            NodeShape::SymMatrix { d, .. } => {
                let mut k = 0;
                for i in 0..d {
                    for j in i..d {
                        out[i * d + j] = packed[k];
                        out[j * d + i] = packed[k];
                        k += 1;
                    }
                }
            }
        }
    }
}

/// One innovation source: the stream and the buffers to draw a packed node noise.
struct Innovations {
    rng: ChaCha12Rng,
    noise: NodeNoise,
    packing: Packing,
    full: Vec<f64>,
    drawn: u64,
}

impl Innovations {
    fn new(shape: NodeShape, noise: NodeNoise, seed: [u8; 32]) -> Self {
        Innovations {
            rng: ChaCha12Rng::from_seed(seed),
            noise,
            packing: Packing::new(shape),
            full: vec![0.0; shape.len()],
            drawn: 0,
        }
    }

    /// Draw the next node noise (same law and stream order as `NoiseStream::fill`) into `out`.
    fn draw(&mut self, out: &mut [f64]) {
        draw_node_noise(
            &mut self.rng,
            self.noise,
            self.packing.shape,
            &mut self.full,
        );
        self.packing.pack(&self.full, out);
        self.drawn += 1;
    }
}

// ---------------------------------------------------------------- binary tree

/// Released dyadic nodes containing leaf i: level l, index j = ceil(i / 2^l), used iff j is odd
/// (a prefix decomposition only ever ends blocks at odd multiples of 2^l) and j 2^l <= T.
fn tree_leaf_count(leaf: u64, capacity: u64, only_odd: bool) -> u64 {
    let mut count = 0;
    for l in 0..64u32 {
        let size = 1u128 << l;
        let j = (leaf as u128).div_ceil(size);
        if j * size > capacity as u128 {
            break;
        }
        if !only_odd || j % 2 == 1 {
            count += 1;
        }
    }
    count
}

impl PrefixMechanism for TreeAggregator {
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
        Ok(vec![1.0; tree_leaf_count(leaf, cap, true) as usize])
    }
    fn l2_multiplier(&self) -> f64 {
        (bit_length(TreeAggregator::capacity(self)) as f64).sqrt()
    }
    fn l1_multiplier(&self) -> f64 {
        bit_length(TreeAggregator::capacity(self)) as f64
    }
}

// ---------------------------------------------------------------- Honaker

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

// ---------------------------------------------------------------- square-root factorization

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
            exact: ExactSum::new(shape.len(), noise.lattice_unit(shape)?),
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

    fn noise_full(&self) -> Vec<f64> {
        let mut out = vec![0.0; self.shape.len()];
        self.innov.packing.unpack(&self.current, &mut out);
        out
    }
}

impl PrefixMechanism for Factorization {
    fn kind(&self) -> MechanismKind {
        MechanismKind::Factorization
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
        self.t
    }
    fn live_nodes(&self) -> usize {
        self.t as usize
    }
    fn nodes_drawn(&self) -> u64 {
        self.innov.drawn
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

// ---------------------------------------------------------------- BLT

/// BLT parameters `(theta, omega)` for horizon T and `buffers` buffers.
///
/// `binom(2j, j)/4^j = (1/pi) int_0^inf exp(-u (j + 1/2)) (1 - e^-u)^(-1/2) du`; with
/// `u = e^v` this is a smooth integral over v in R, and the trapezoidal rule on `buffers`
/// nodes v_i spread over `[-ln T - 1.5, 1.5]` gives `c_j ~ sum_i w_i theta_i^j`,
/// `theta_i = exp(-u_i)`, `w_i = h u_i exp(-u_i/2) / (pi sqrt(1 - e^-u_i))`. The BLT encoder
/// then takes `c_0 = 1` and `omega_i = w_i theta_i` (so `c_j = sum_i omega_i theta_i^(j-1)`).
/// Positive weights and theta in (0, 1) make C's generating function `1 + x sum_i omega_i /
/// (1 - theta_i x)` zero-free on the closed unit disk, so the decoder C^{-1} is stable.
pub fn blt_parameters(capacity: u64, buffers: usize) -> (Vec<f64>, Vec<f64>) {
    let m = buffers.max(1);
    let vmin = -(capacity.max(1) as f64).ln() - 1.5;
    let vmax = 1.5;
    let h = if m > 1 {
        (vmax - vmin) / (m - 1) as f64
    } else {
        vmax - vmin
    };
    let mut theta = Vec::with_capacity(m);
    let mut omega = Vec::with_capacity(m);
    for i in 0..m {
        let v = if m > 1 { vmin + h * i as f64 } else { vmin };
        let u = v.exp();
        let th = (-u).exp();
        let w = h * u * (-0.5 * u).exp() / (std::f64::consts::PI * (-(-u).exp_m1()).sqrt());
        theta.push(th);
        omega.push(w * th);
    }
    (theta, omega)
}

/// `sum_{j=0}^{n-1} x^j` for x = exp(log_x) in (0, 1), without cancellation.
fn geometric_sum(log_x: f64, n: u64) -> f64 {
    if n == 0 {
        return 0.0;
    }
    (n as f64 * log_x).exp_m1() / log_x.exp_m1()
}

/// Small dense row-major matrices for the doubling of the BLT variance recursion.
fn mat_mul(a: &[f64], b: &[f64], n: usize) -> Vec<f64> {
    let mut c = vec![0.0; n * n];
    for i in 0..n {
        for k in 0..n {
            let aik = a[i * n + k];
            if aik != 0.0 {
                for j in 0..n {
                    c[i * n + j] += aik * b[k * n + j];
                }
            }
        }
    }
    c
}

fn mat_transpose(a: &[f64], n: usize) -> Vec<f64> {
    let mut t = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            t[j * n + i] = a[i * n + j];
        }
    }
    t
}

/// The BLT mechanism: encoder C = BLT(theta, omega), noise `A C^{-1} z` from `buffers` states.
pub struct Blt {
    shape: NodeShape,
    capacity: u64,
    t: u64,
    innov: Innovations,
    exact: ExactSum,
    theta: Vec<f64>,
    omega: Vec<f64>,
    /// `state[i]` = s_i (packed) with s_{t+1} = theta_i s_t + x_t, x = C^{-1} z.
    state: Vec<Vec<f64>>,
    /// Running sum of x: the noise of the current release.
    acc: Vec<f64>,
    z: Vec<f64>,
}

impl Blt {
    pub fn new(
        shape: NodeShape,
        noise: NodeNoise,
        capacity: u64,
        seed: [u8; 32],
        buffers: usize,
    ) -> CoreResult<Self> {
        check_common(shape, noise, capacity)?;
        if buffers == 0 || buffers > MAX_BLT_BUFFERS {
            return Err(CoreError::InvalidParameter(format!(
                "blt buffers must be in [1, {MAX_BLT_BUFFERS}], got {buffers}"
            )));
        }
        let (theta, omega) = blt_parameters(capacity, buffers);
        Self::with_parameters(shape, noise, capacity, seed, theta, omega)
    }

    /// A BLT mechanism with explicit parameters (theta_i in (0, 1), omega_i >= 0).
    pub fn with_parameters(
        shape: NodeShape,
        noise: NodeNoise,
        capacity: u64,
        seed: [u8; 32],
        theta: Vec<f64>,
        omega: Vec<f64>,
    ) -> CoreResult<Self> {
        check_common(shape, noise, capacity)?;
        let ok = !theta.is_empty()
            && theta.len() == omega.len()
            && theta.len() <= MAX_BLT_BUFFERS
            && theta.iter().all(|t| t.is_finite() && *t > 0.0 && *t < 1.0)
            && omega.iter().all(|w| w.is_finite() && *w >= 0.0);
        if !ok {
            return Err(CoreError::InvalidParameter(
                "BLT parameters need 1..=64 pairs with theta in (0, 1) and omega >= 0".into(),
            ));
        }
        let innov = Innovations::new(shape, noise, seed);
        let p = innov.packing.packed;
        Ok(Blt {
            shape,
            capacity,
            t: 0,
            exact: ExactSum::new(shape.len(), noise.lattice_unit(shape)?),
            innov,
            state: vec![vec![0.0; p]; theta.len()],
            theta,
            omega,
            acc: vec![0.0; p],
            z: vec![0.0; p],
        })
    }

    pub fn parameters(&self) -> (&[f64], &[f64]) {
        (&self.theta, &self.omega)
    }

    fn advance(&mut self) -> CoreResult<()> {
        if self.t >= self.capacity {
            return Err(capacity_error(self.capacity));
        }
        self.t += 1;
        self.innov.draw(&mut self.z);
        // x_t = z_t - sum_i omega_i s_i ; s_i <- theta_i s_i + x_t ; acc += x_t
        for (k, x) in self.z.iter_mut().enumerate() {
            let mut v = *x;
            for (s, w) in self.state.iter().zip(&self.omega) {
                v -= w * s[k];
            }
            *x = v;
        }
        for (s, th) in self.state.iter_mut().zip(&self.theta) {
            for (sv, x) in s.iter_mut().zip(&self.z) {
                *sv = th * *sv + *x;
            }
        }
        for (a, x) in self.acc.iter_mut().zip(&self.z) {
            *a += *x;
        }
        Ok(())
    }

    fn noise_full(&self) -> Vec<f64> {
        let mut out = vec![0.0; self.shape.len()];
        self.innov.packing.unpack(&self.acc, &mut out);
        out
    }

    /// Encoder coefficient c_j (c_0 = 1).
    fn coefficient(&self, j: u64) -> f64 {
        if j == 0 {
            return 1.0;
        }
        self.theta
            .iter()
            .zip(&self.omega)
            .map(|(th, w)| w * th.powf((j - 1) as f64))
            .sum()
    }

    /// Exact `sum_{j<t} e_j^2` with e = the decoder A C^{-1}'s coefficients, by doubling.
    ///
    /// The decoder's impulse response: x_0 = 1, s_1 = 1 (all buffers), e_0 = 1; for j >= 1,
    /// x_j = -omega . s_j, s_{j+1} = theta s_j + x_j, e_j = e_{j-1} + x_j. With the state
    /// y_j = (s_j, e_{j-1}) this is y_{j+1} = G y_j, e_j = g . y_j, so
    /// `sum_{j=1}^{t-1} e_j^2 = g^T (sum_{k<t-1} G^k y_1 y_1^T G^kT) g`, a Lyapunov sum doubled
    /// in O(m^3 log t).
    fn decoder_variance(&self, t: u64) -> f64 {
        if t == 0 {
            return 0.0;
        }
        let m = self.theta.len();
        let n = m + 1;
        let mut g_mat = vec![0.0; n * n];
        for i in 0..m {
            for k in 0..m {
                g_mat[i * n + k] = if i == k { self.theta[i] } else { 0.0 } - self.omega[k];
            }
            g_mat[m * n + i] = -self.omega[i];
        }
        g_mat[m * n + m] = 1.0;
        let mut y1 = vec![1.0; n];
        y1[m] = 1.0;
        let mut gvec: Vec<f64> = self.omega.iter().map(|w| -w).collect();
        gvec.push(1.0);
        // Accumulate P over `count = t - 1` terms: binary decomposition of count.
        let count = t - 1;
        let mut p_total = vec![0.0; n * n];
        let mut g_total = identity(n);
        // block: (P_b, G^b) for b = 2^k
        let mut p_block: Vec<f64> = (0..n * n).map(|idx| y1[idx / n] * y1[idx % n]).collect();
        let mut g_block = g_mat;
        let mut rem = count;
        while rem > 0 {
            if rem & 1 == 1 {
                // P_total <- P_total + G_total P_block G_total^T ; G_total <- G_total G_block
                let gt = mat_transpose(&g_total, n);
                let term = mat_mul(&mat_mul(&g_total, &p_block, n), &gt, n);
                for (a, b) in p_total.iter_mut().zip(&term) {
                    *a += b;
                }
                g_total = mat_mul(&g_total, &g_block, n);
            }
            rem >>= 1;
            if rem > 0 {
                // P_{2b} = P_b + G^b P_b G^bT ; G^{2b} = G^b G^b
                let gt = mat_transpose(&g_block, n);
                let term = mat_mul(&mat_mul(&g_block, &p_block, n), &gt, n);
                for (a, b) in p_block.iter_mut().zip(&term) {
                    *a += b;
                }
                g_block = mat_mul(&g_block, &g_block, n);
            }
        }
        let mut quad = 0.0;
        for i in 0..n {
            for j in 0..n {
                quad += gvec[i] * p_total[i * n + j] * gvec[j];
            }
        }
        1.0 + quad
    }
}

fn identity(n: usize) -> Vec<f64> {
    let mut m = vec![0.0; n * n];
    for i in 0..n {
        m[i * n + i] = 1.0;
    }
    m
}

impl PrefixMechanism for Blt {
    fn kind(&self) -> MechanismKind {
        MechanismKind::Blt {
            buffers: self.theta.len(),
        }
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
        self.t
    }
    fn live_nodes(&self) -> usize {
        self.theta.len() + 1
    }
    fn nodes_drawn(&self) -> u64 {
        self.innov.drawn
    }
    fn variance_factor(&self, t: u64) -> f64 {
        self.decoder_variance(t.min(self.capacity))
    }
    fn max_variance_factor(&self) -> f64 {
        // A running sum of squares: largest at t = T.
        self.decoder_variance(self.capacity)
    }
    fn variance_profile(&self) -> CoreResult<Vec<f64>> {
        check_profile_len(self.capacity)?;
        // The decoder's impulse response, directly (O(T m)).
        let mut s = vec![0.0; self.theta.len()];
        let (mut e, mut var) = (0.0, 0.0);
        let mut out = Vec::with_capacity(self.capacity as usize);
        for t in 0..self.capacity {
            let z = if t == 0 { 1.0 } else { 0.0 };
            let x = z - self.omega.iter().zip(&s).map(|(w, v)| w * v).sum::<f64>();
            for (v, th) in s.iter_mut().zip(&self.theta) {
                *v = th * *v + x;
            }
            e += x;
            var += e * e;
            out.push(var);
        }
        Ok(out)
    }
    fn leaf_coefficients(&self, leaf: u64) -> CoreResult<Vec<f64>> {
        check_leaf_index(leaf, self.capacity)?;
        let n = self.capacity - leaf + 1;
        if n > MAX_COEFFICIENTS {
            return Err(CoreError::Capacity(format!(
                "leaf {leaf} enters {n} encoder rows; at most {MAX_COEFFICIENTS} are listed"
            )));
        }
        Ok((0..n).map(|j| self.coefficient(j)).collect())
    }
    fn l2_multiplier(&self) -> f64 {
        // 1 + sum_{j=1}^{T-1} (sum_i omega_i theta_i^(j-1))^2, in closed form.
        let n = self.capacity - 1;
        let mut s = 1.0;
        for (ti, wi) in self.theta.iter().zip(&self.omega) {
            for (tk, wk) in self.theta.iter().zip(&self.omega) {
                s += wi * wk * geometric_sum(ti.ln() + tk.ln(), n);
            }
        }
        s.sqrt()
    }
    fn l1_multiplier(&self) -> f64 {
        let n = self.capacity - 1;
        1.0 + self
            .theta
            .iter()
            .zip(&self.omega)
            .map(|(t, w)| w * geometric_sum(t.ln(), n))
            .sum::<f64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed(b: u8) -> [u8; 32] {
        [b; 32]
    }

    const KINDS: [MechanismKind; 4] = [
        MechanismKind::Tree,
        MechanismKind::Honaker,
        MechanismKind::Factorization,
        MechanismKind::Blt {
            buffers: DEFAULT_BLT_BUFFERS,
        },
    ];

    #[test]
    fn zero_noise_releases_exact_prefix_for_every_kind() {
        for kind in KINDS {
            let mut m =
                make_mechanism(kind, NodeShape::Vector(2), NodeNoise::Zero, 40, seed(0)).unwrap();
            let mut s = [0.0, 0.0];
            let mut out = [0.0; 2];
            for t in 0..40 {
                let leaf = [t as f64, 1.5];
                s[0] += leaf[0];
                s[1] += leaf[1];
                m.push(&leaf).unwrap();
                m.release_into(&mut out).unwrap();
                assert_eq!(out, s, "{kind:?}");
            }
            assert!(matches!(m.push(&[0.0, 0.0]), Err(CoreError::Capacity(_))));
            assert!(matches!(m.push_zero(), Err(CoreError::Capacity(_))));
        }
    }

    #[test]
    fn refused_leaf_leaves_state_unchanged() {
        for kind in KINDS {
            let mut m = make_mechanism(
                kind,
                NodeShape::Vector(2),
                NodeNoise::Gaussian { sigma: 1.0 },
                8,
                seed(1),
            )
            .unwrap();
            m.push(&[1.0, 2.0]).unwrap();
            assert!(matches!(
                m.push(&[1.0, f64::NAN]),
                Err(CoreError::NonFinite(_))
            ));
            assert!(matches!(m.push(&[1.0]), Err(CoreError::Shape(_))));
            assert_eq!(m.steps(), 1);
            assert_eq!(m.exact_sum(), vec![1.0, 2.0]);
        }
    }

    #[test]
    fn matrix_noise_exactly_symmetric() {
        for kind in KINDS {
            let d = 5;
            let mut m = make_mechanism(
                kind,
                NodeShape::SymMatrix {
                    d,
                    divisor: std::f64::consts::SQRT_2,
                },
                NodeNoise::Gaussian { sigma: 2.0 },
                50,
                seed(2),
            )
            .unwrap();
            for _ in 0..23 {
                m.push_zero().unwrap();
            }
            let mut r = vec![0.0; d * d];
            m.noise_into(&mut r).unwrap();
            for i in 0..d {
                for j in 0..d {
                    assert_eq!(r[i * d + j], r[j * d + i]);
                }
            }
            assert!(r.iter().any(|x| *x != 0.0));
        }
    }

    /// Empirical per-step variance against variance_factor, at a few steps, for every kind.
    #[test]
    fn variance_factor_matches_simulation() {
        let cap = 40u64;
        let reps = 3000;
        for kind in KINDS {
            let mut acc = vec![0.0; cap as usize];
            for r in 0..reps {
                let mut s = [0u8; 32];
                s[..8].copy_from_slice(&(r as u64).to_le_bytes());
                let mut m = make_mechanism(
                    kind,
                    NodeShape::Vector(4),
                    NodeNoise::Gaussian { sigma: 1.0 },
                    cap,
                    s,
                )
                .unwrap();
                let mut out = [0.0; 4];
                for t in 0..cap as usize {
                    m.push_zero().unwrap();
                    m.noise_into(&mut out).unwrap();
                    acc[t] += out.iter().map(|x| x * x).sum::<f64>() / 4.0;
                }
            }
            let m =
                make_mechanism(kind, NodeShape::Vector(4), NodeNoise::Zero, cap, seed(0)).unwrap();
            for t in [1u64, 2, 3, 7, 8, 21, 31, 40] {
                let got = acc[t as usize - 1] / reps as f64;
                let want = m.variance_factor(t);
                // 12000 samples of a chi-square(1) mean: sd ~ sqrt(2/12000) ~ 1.3%.
                assert!(
                    (got / want - 1.0).abs() < 0.06,
                    "{kind:?} t={t}: {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn tree_profile_counts() {
        for cap in [1u64, 2, 3, 4, 7, 8, 9, 1000, 1024, 10_000] {
            let m = make_mechanism(
                MechanismKind::Tree,
                NodeShape::Vector(1),
                NodeNoise::Zero,
                cap,
                seed(0),
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
        let m = Factorization::new(NodeShape::Vector(1), NodeNoise::Zero, 300, seed(0)).unwrap();
        let want: f64 = c.iter().map(|x| x * x).sum();
        assert!((m.l2_multiplier() - want.sqrt()).abs() < 1e-12);
        assert!((m.variance_factor(300) - want).abs() < 1e-12);
        assert!(matches!(
            Factorization::new(
                NodeShape::Vector(1),
                NodeNoise::Zero,
                MAX_FACTORIZATION_CAPACITY + 1,
                seed(0)
            ),
            Err(CoreError::Capacity(_))
        ));
    }

    /// BLT: closed-form multipliers and doubled variance against direct summation.
    #[test]
    fn blt_profile_matches_direct_sums() {
        for cap in [1u64, 2, 3, 17, 1000, 5000] {
            let m = Blt::new(NodeShape::Vector(1), NodeNoise::Zero, cap, seed(0), 8).unwrap();
            let coeffs = m.leaf_coefficients(1).unwrap();
            let l2: f64 = coeffs.iter().map(|c| c * c).sum::<f64>().sqrt();
            let l1: f64 = coeffs.iter().sum();
            assert!((m.l2_multiplier() / l2 - 1.0).abs() < 1e-10, "cap {cap}");
            assert!((m.l1_multiplier() / l1 - 1.0).abs() < 1e-10, "cap {cap}");
            // Direct impulse response of A C^{-1}.
            let (th, om) = m.parameters();
            let mut s = vec![0.0; th.len()];
            let (mut e, mut var) = (0.0, 0.0);
            for t in 1..=cap {
                let z = if t == 1 { 1.0 } else { 0.0 };
                let x = z - om.iter().zip(&s).map(|(w, v)| w * v).sum::<f64>();
                for (v, t) in s.iter_mut().zip(th) {
                    *v = t * *v + x;
                }
                e += x;
                var += e * e;
                if t % 97 == 1 || t == cap {
                    let got = m.variance_factor(t);
                    assert!(
                        (got / var - 1.0).abs() < 1e-9,
                        "cap {cap} t {t}: {got} vs {var}"
                    );
                }
            }
            assert!((m.max_variance_factor() / var - 1.0).abs() < 1e-9);
        }
    }

    /// At T = 10^4 and equal privacy (noise multiplier), the std of the released prefix sums:
    /// factorization and BLT well below Honaker, below the tree.
    #[test]
    fn normalized_error_ordering() {
        let cap = 10_000u64;
        let mean_std = |kind: MechanismKind| {
            let m =
                make_mechanism(kind, NodeShape::Vector(1), NodeNoise::Zero, cap, seed(0)).unwrap();
            let mult = m.l2_multiplier();
            (1..=cap)
                .map(|t| (m.variance_factor(t)).sqrt() * mult)
                .sum::<f64>()
                / cap as f64
        };
        let tree = mean_std(MechanismKind::Tree);
        let hon = mean_std(MechanismKind::Honaker);
        let fact = mean_std(MechanismKind::Factorization);
        let blt = mean_std(MechanismKind::Blt { buffers: 8 });
        assert!(tree > hon && hon > fact, "{tree} {hon} {fact}");
        assert!(tree / fact > 2.3, "{tree} / {fact}");
        assert!((blt / fact - 1.0).abs() < 0.03, "{blt} vs {fact}");
    }

    #[test]
    fn discrete_noise_only_on_tree() {
        let dg = NodeNoise::DiscreteGaussian {
            sigma: 1.0,
            grid_bits: 10,
        };
        assert!(make_mechanism(MechanismKind::Tree, NodeShape::Vector(2), dg, 4, seed(0)).is_ok());
        for kind in &KINDS[1..] {
            assert!(matches!(
                make_mechanism(*kind, NodeShape::Vector(2), dg, 4, seed(0)),
                Err(CoreError::InvalidParameter(_))
            ));
        }
    }

    #[test]
    fn bad_parameters_rejected() {
        for kind in KINDS {
            assert!(
                make_mechanism(kind, NodeShape::Vector(0), NodeNoise::Zero, 4, seed(0)).is_err()
            );
            assert!(
                make_mechanism(kind, NodeShape::Vector(2), NodeNoise::Zero, 0, seed(0)).is_err()
            );
            assert!(make_mechanism(
                kind,
                NodeShape::SymMatrix {
                    d: 1 << 40,
                    divisor: 2.0
                },
                NodeNoise::Zero,
                4,
                seed(0)
            )
            .is_err());
            assert!(make_mechanism(
                kind,
                NodeShape::Vector(2),
                NodeNoise::Gaussian { sigma: f64::NAN },
                4,
                seed(0)
            )
            .is_err());
            let m =
                make_mechanism(kind, NodeShape::Vector(2), NodeNoise::Zero, 4, seed(0)).unwrap();
            assert!(m.leaf_coefficients(0).is_err());
            assert!(m.leaf_coefficients(5).is_err());
        }
        assert!(MechanismKind::parse("blt", 65).is_err());
        assert!(MechanismKind::parse("cauchy", 0).is_err());
    }
}
