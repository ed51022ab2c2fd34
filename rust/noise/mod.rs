//! Node noise shared by every continual-release mechanism and the stand-alone noise streams:
//! the node laws (Gaussian, Laplace, exact discrete samplers) and node shapes, the exact data
//! sum kept apart from the noise, packed symmetric storage and the innovation source.
//!
//! Every mechanism of [`crate::continual`] draws its node noises through [`draw_node_noise`] from
//! one ChaCha12 stream, in the order its module documents; a [`NoiseStream`] on the same seed
//! reproduces them (the numpy references rely on it).
//!
//! Layout: this file holds the laws ([`NodeNoise`]), the shapes ([`NodeShape`]) and the node
//! draw; `lattice.rs` the rounding of data to a discrete sampler's lattice and the exact sums
//! ([`ExactSum`]); `stream.rs` the packed innovation source of the mechanisms and the
//! stand-alone [`NoiseStream`]; [`secure`] the exact discrete samplers themselves.

use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

use crate::errors::{CoreError, CoreResult};

mod lattice;
pub mod secure;
mod stream;

pub(crate) use lattice::round_half_even;
pub use lattice::{to_lattice_units, ExactSum};
pub(crate) use stream::Innovations;
pub use stream::NoiseStream;

/// Largest node (vector length or d*d) any mechanism accepts: 2^27 entries (1 GiB of f64).
/// Larger requests are refused with an error instead of an allocation that would abort.
pub const MAX_NODE_LEN: usize = 1 << 27;

/// Largest `k` of the 2^-k grid of the discrete samplers. It keeps every intermediate of the
/// exact samplers inside u128 and every lattice noise value below 2^45.
pub const MAX_GRID_BITS: u32 = 24;

/// Default `k` of the 2^-k grid of the discrete samplers, the one every agent uses: the finest
/// grid the exact samplers allow (rounding cost ~ 2^-24 of the scale, docs/privacy.md).
pub const DEFAULT_GRID_BITS: u32 = 24;

/// Names of the node-noise laws, in the order of [`NodeNoise::from_name`].
pub const NOISE_NAMES: [&str; 5] = [
    "gaussian",
    "laplace",
    "discrete_gaussian",
    "discrete_laplace",
    "none",
];

/// Lattice sums (data + noise, in grid units) stay below 2^52 so that f64 adds them exactly.
pub const LATTICE_LIMIT: f64 = 4_503_599_627_370_496.0;

/// Distribution of every entry of a node's noise (before symmetrization).
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, Copy, PartialEq)]
pub enum NodeNoise {
    /// i.i.d. N(0, sigma^2) entries.
    Gaussian { sigma: f64 },
    /// i.i.d. Laplace(0, b) entries (pure DP).
    Laplace { scale: f64 },
    /// Secure sampler: i.i.d. discrete Gaussian entries on the grid `sigma * 2^-grid_bits`
    /// with variance parameter sigma^2 (Canonne, Kamath & Steinke 2020); see [`secure`].
    DiscreteGaussian { sigma: f64, grid_bits: u32 },
    /// Secure sampler: i.i.d. discrete Laplace entries with scale b on the grid `b * 2^-grid_bits`.
    DiscreteLaplace { scale: f64, grid_bits: u32 },
    /// No noise (non-private; the tree then only counts nodes).
    Zero,
}

impl NodeNoise {
    /// The law called `name` (one of [`NOISE_NAMES`]) with scale `scale` (sigma or b) and, for
    /// the discrete samplers, the grid `scale * 2^-grid_bits`; None for an unknown name.
    pub fn from_name(name: &str, scale: f64, grid_bits: u32) -> Option<Self> {
        match name {
            "gaussian" => Some(NodeNoise::Gaussian { sigma: scale }),
            "laplace" => Some(NodeNoise::Laplace { scale }),
            "discrete_gaussian" => Some(NodeNoise::DiscreteGaussian {
                sigma: scale,
                grid_bits,
            }),
            "discrete_laplace" => Some(NodeNoise::DiscreteLaplace { scale, grid_bits }),
            "none" => Some(NodeNoise::Zero),
            _ => None,
        }
    }

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
                "{name} must be finite and > 0, got {v:?}"
            )));
        }
        if v > MAX_NOISE_SCALE {
            // a release sums up to 64 nodes of symmetric draws of a few dozen scales each: above
            // this the released noise itself would overflow to inf (found by fuzzing)
            return Err(CoreError::InvalidParameter(format!(
                "{name} must be <= {MAX_NOISE_SCALE:e}, got {v:e}"
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
                    "{name} {v:?} * 2^-{grid_bits} is not a normal double; use a larger scale or fewer grid bits"
                )));
            }
        }
        Ok(())
    }
}

/// Largest noise scale a mechanism or stream accepts: the released sums stay finite.
pub const MAX_NOISE_SCALE: f64 = 1e300;

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
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, Copy, PartialEq)]
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

/// The discrete laws of one node, resolved once for every node a mechanism or stream draws
/// (their envelope tables looked up or built once, not per node); nothing for continuous noise.
#[derive(Debug, Clone)]
pub enum NodeLaws {
    Continuous,
    /// Every entry of a vector node (discrete Gaussian or Laplace).
    Vector(secure::Law),
    /// Discrete Gaussian symmetric matrices: the diagonal's and the off-diagonal's laws.
    SymGaussian {
        diag: secure::Law,
        off: secure::Law,
    },
    /// Discrete Laplace symmetric matrices: the law of each Z'_ij.
    SymLaplace(secure::Law),
}

impl NodeLaws {
    pub fn new(noise: NodeNoise, shape: NodeShape) -> Self {
        use secure::Law;
        match (noise, shape) {
            (NodeNoise::DiscreteGaussian { grid_bits, .. }, NodeShape::Vector(_)) => {
                NodeLaws::Vector(Law::gaussian(1u128 << (2 * grid_bits), 1))
            }
            (NodeNoise::DiscreteLaplace { grid_bits, .. }, NodeShape::Vector(_)) => {
                NodeLaws::Vector(Law::laplace(1u128 << grid_bits))
            }
            (
                NodeNoise::DiscreteGaussian { grid_bits, .. },
                NodeShape::SymMatrix { divisor, .. },
            ) => {
                let q = sym_square(divisor).unwrap_or(2);
                let base = 1u128 << (2 * grid_bits);
                NodeLaws::SymGaussian {
                    diag: Law::gaussian(4 * base, q),
                    off: Law::gaussian(2 * base, q),
                }
            }
            (NodeNoise::DiscreteLaplace { grid_bits, .. }, NodeShape::SymMatrix { .. }) => {
                NodeLaws::SymLaplace(Law::laplace(1u128 << grid_bits))
            }
            _ => NodeLaws::Continuous,
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
    draw_node_noise_with(rng, noise, shape, &NodeLaws::new(noise, shape), out)
}

/// [`draw_node_noise`] with the node's discrete laws already resolved (`laws` must be
/// `NodeLaws::new(noise, shape)`): the same draws from the same stream.
pub fn draw_node_noise_with<R: Rng + ?Sized>(
    rng: &mut R,
    noise: NodeNoise,
    shape: NodeShape,
    laws: &NodeLaws,
    out: &mut [f64],
) {
    match (noise, shape, laws) {
        (NodeNoise::Zero, _, _) => out.iter_mut().for_each(|x| *x = 0.0),
        // Discrete samplers write exact integers in lattice units (see NodeNoise::lattice_unit);
        // one bit source serves the whole node (its unused bits are discarded at the end).
        (
            NodeNoise::DiscreteGaussian { .. } | NodeNoise::DiscreteLaplace { .. },
            NodeShape::Vector(_),
            NodeLaws::Vector(law),
        ) => {
            let mut bits = secure::Bits::new(rng);
            for x in out.iter_mut() {
                *x = bits.draw(law);
            }
        }
        (
            NodeNoise::DiscreteGaussian { .. },
            NodeShape::SymMatrix { d, .. },
            NodeLaws::SymGaussian { diag, off },
        ) => {
            let mut bits = secure::Bits::new(rng);
            for i in 0..d {
                out[i * d + i] = bits.draw(diag);
                for j in (i + 1)..d {
                    let v = bits.draw(off);
                    out[i * d + j] = v;
                    out[j * d + i] = v;
                }
            }
        }
        (
            NodeNoise::DiscreteLaplace { .. },
            NodeShape::SymMatrix { d, .. },
            NodeLaws::SymLaplace(law),
        ) => {
            // On the lattice grid / divisor, (Z' + Z'^T)/divisor is Z'_ij + Z'_ji and 2 Z'_ii.
            let mut bits = secure::Bits::new(rng);
            for i in 0..d {
                out[i * d + i] = 2.0 * bits.draw(law);
                for j in (i + 1)..d {
                    let v = bits.draw(law) + bits.draw(law);
                    out[i * d + j] = v;
                    out[j * d + i] = v;
                }
            }
        }
        (NodeNoise::Gaussian { sigma }, NodeShape::Vector(_), _) => {
            for x in out.iter_mut() {
                let z: f64 = StandardNormal.sample(rng);
                *x = sigma * z;
            }
        }
        (NodeNoise::Laplace { scale }, NodeShape::Vector(_), _) => {
            for x in out.iter_mut() {
                *x = scale * standard_laplace(rng);
            }
        }
        (NodeNoise::Gaussian { sigma }, NodeShape::SymMatrix { d, divisor }, _) => {
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
        (NodeNoise::Laplace { scale }, NodeShape::SymMatrix { d, divisor }, _) => {
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
        // only a discrete law with laws not from NodeLaws::new(noise, shape): resolve them
        _ => draw_node_noise_with(rng, noise, shape, &NodeLaws::new(noise, shape), out),
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

#[cfg(test)]
mod tests {
    use super::*;

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
            let mut st = NoiseStream::new(noise, [9; 32]).unwrap();
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
}
