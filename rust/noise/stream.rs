//! Noise streams: the packed innovation source the Honaker, factorization and BLT mechanisms draw
//! their node noises from, and the stand-alone [`NoiseStream`] of the user-side randomizer and
//! Alg. 2's releases.

use rand::SeedableRng;
use rand_chacha::ChaCha12Rng;

use super::{draw_node_noise_with, to_lattice_units, NodeLaws, NodeNoise, NodeShape};
use crate::errors::{check_len, CoreResult};

/// Symmetric matrices are handled as their upper triangle (row-major, i <= j): half the memory
/// and work for the O(T)-state factorization, and exact symmetry by construction.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone)]
pub(crate) struct Packing {
    pub(crate) shape: NodeShape,
    pub(crate) packed: usize,
}

impl Packing {
    pub(crate) fn new(shape: NodeShape) -> Self {
        let packed = match shape {
            NodeShape::Vector(n) => n,
            NodeShape::SymMatrix { d, .. } => d * (d + 1) / 2,
        };
        Packing { shape, packed }
    }

    pub(crate) fn pack(&self, full: &[f64], out: &mut [f64]) {
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

    /// `unpack` of `packed * scale` (each packed value scaled once).
    pub(crate) fn unpack_scaled(&self, packed: &[f64], scale: f64, out: &mut [f64]) {
        match self.shape {
            NodeShape::Vector(_) => {
                for (o, p) in out.iter_mut().zip(packed) {
                    *o = p * scale;
                }
            }
            NodeShape::SymMatrix { d, .. } => {
                let mut k = 0;
                for i in 0..d {
                    for j in i..d {
                        let v = packed[k] * scale;
                        out[i * d + j] = v;
                        out[j * d + i] = v;
                        k += 1;
                    }
                }
            }
        }
    }

    pub(crate) fn unpack(&self, packed: &[f64], out: &mut [f64]) {
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
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Innovations {
    pub(crate) rng: ChaCha12Rng,
    pub(crate) noise: NodeNoise,
    pub(crate) packing: Packing,
    pub(crate) full: Vec<f64>,
    pub(crate) drawn: u64,
    /// The node's discrete laws, resolved at the first draw (not state).
    #[serde(skip)]
    laws: Option<NodeLaws>,
}

impl Innovations {
    /// A restored source's buffers against the node shape it draws for.
    pub(crate) fn fits(&self, shape: NodeShape) -> bool {
        self.packing.shape == shape
            && self.packing.packed == Packing::new(shape).packed
            && self.full.len() == shape.len()
    }

    pub(crate) fn new(shape: NodeShape, noise: NodeNoise, seed: [u8; 32]) -> Self {
        Innovations {
            rng: ChaCha12Rng::from_seed(seed),
            noise,
            packing: Packing::new(shape),
            full: vec![0.0; shape.len()],
            drawn: 0,
            laws: None,
        }
    }

    /// Draw the next node noise (same law and stream order as `NoiseStream::fill`) into `out`.
    pub(crate) fn draw(&mut self, out: &mut [f64]) {
        let (noise, shape) = (self.noise, self.packing.shape);
        let laws = self.laws.get_or_insert_with(|| NodeLaws::new(noise, shape));
        draw_node_noise_with(&mut self.rng, noise, shape, laws, &mut self.full);
        self.packing.pack(&self.full, out);
        self.drawn += 1;
    }
}

/// A stand-alone privacy-noise stream (ChaCha12): the user-side randomizer of LDP and the
/// per-release Gaussian vectors of Alg. 2 draw from it.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct NoiseStream {
    noise: NodeNoise,
    rng: ChaCha12Rng,
    draws: u64,
    /// The discrete laws of the last node shape drawn (not state).
    #[serde(skip)]
    laws: Option<(NodeShape, NodeLaws)>,
}

impl NoiseStream {
    pub fn new(noise: NodeNoise, seed: [u8; 32]) -> CoreResult<Self> {
        noise.validate()?;
        Ok(NoiseStream {
            noise,
            rng: ChaCha12Rng::from_seed(seed),
            draws: 0,
            laws: None,
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
        self.draw(shape, out);
        if let Some(u) = unit {
            out.iter_mut().for_each(|x| *x *= u);
        }
        self.draws += 1;
        Ok(())
    }

    /// One node of `shape` into `out` (`draw_node_noise`), the laws resolved once per shape.
    fn draw(&mut self, shape: NodeShape, out: &mut [f64]) {
        let noise = self.noise;
        if !matches!(&self.laws, Some((s, _)) if *s == shape) {
            self.laws = Some((shape, NodeLaws::new(noise, shape)));
        }
        if let Some((_, laws)) = &self.laws {
            draw_node_noise_with(&mut self.rng, noise, shape, laws, out);
        }
    }

    /// The user-side randomizer's message: `data + noise` for continuous noise (the same
    /// operation as `fill` then an addition); for a discrete sampler `(round(data) + z) * unit`,
    /// the data rounded to the lattice ([`to_lattice_units`]) and the exact integer noise added
    /// before one scaling, so the message is a function of the integer release alone.
    /// `scratch` holds `shape.len()` values; `data` is unchanged when the call fails.
    pub fn privatize(
        &mut self,
        shape: NodeShape,
        data: &mut [f64],
        scratch: &mut [f64],
    ) -> CoreResult<()> {
        shape.validate()?;
        check_len("message", data.len(), shape.len())?;
        check_len("scratch", scratch.len(), shape.len())?;
        if self.noise.is_discrete() {
            // the rounded data (integer units) into scratch; the integer noise then overwrites
            // data, whose values are no longer needed (nothing is written before the check)
            let u = to_lattice_units(self.noise, shape, data, scratch)?;
            self.draw(shape, data);
            for (d, r) in data.iter_mut().zip(scratch.iter()) {
                *d = (*r + *d) * u;
            }
            self.draws += 1;
            return Ok(());
        }
        self.fill(shape, scratch)?;
        for (d, z) in data.iter_mut().zip(scratch.iter()) {
            *d += *z;
        }
        Ok(())
    }
}
