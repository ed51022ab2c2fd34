//! The specs an agent is built from, read from Python dataclasses attribute by attribute
//! (`privrl.agents.common.specs`), and their conversion into the Rust agents' parts.

use numpy::{PyReadonlyArray1, PyReadonlyArray2, PyReadonlyArray3, PyReadonlyArray4};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::{contiguous, seed32, IntoPy};
use crate::agents::bounds::NoiseBounds;
use crate::agents::vtr::{
    self, Intake, PracticalSpec, Randomizer, Regression, RegressionSpec, Server,
};
use crate::agents::{Exploration, Guard, Mechanism, Stream, Ties};
use crate::continual::{make_mechanism, MechanismKind};
use crate::errors::CoreError;
use crate::noise::{NodeNoise, NodeShape, NoiseStream};

// ---------------------------------------------------------------- specs (typed, from Python)

#[derive(FromPyObject)]
pub(super) struct GuardSpec {
    pub(super) x_bound: f64,
    pub(super) y_low: f64,
    pub(super) y_high: f64,
    pub(super) reject: bool,
}

impl From<GuardSpec> for Guard {
    fn from(g: GuardSpec) -> Self {
        Guard {
            x_bound: g.x_bound,
            y_low: g.y_low,
            y_high: g.y_high,
            reject: g.reject,
        }
    }
}

/// `privrl.agents.common.specs.BoundsSpec`: the noise bounds of the practical rule.
#[derive(FromPyObject)]
pub(super) struct BoundsSpec {
    pub(super) kind: String,
    pub(super) sigma_m: f64,
    pub(super) sigma_v: f64,
    pub(super) divisor: f64,
    pub(super) d: usize,
    pub(super) alpha: f64,
}

impl BoundsSpec {
    pub(super) fn build(&self) -> PyResult<NoiseBounds> {
        Ok(match self.kind.as_str() {
            "zero" => NoiseBounds::Zero,
            "gaussian" => NoiseBounds::Gaussian {
                sigma_m: self.sigma_m,
                sigma_v: self.sigma_v,
                divisor: self.divisor,
                d: self.d,
                alpha: self.alpha,
            },
            "laplace" => NoiseBounds::Laplace {
                b_m: self.sigma_m,
                b_v: self.sigma_v,
                d: self.d,
                alpha: self.alpha,
            },
            k => return Err(PyValueError::new_err(format!("unknown noise bounds {k:?}"))),
        })
    }
}

#[derive(FromPyObject)]
pub(super) struct PracticalSpecPy<'py> {
    pub(super) lam: f64,
    pub(super) shift_mult: f64,
    pub(super) beta2: f64,
    pub(super) c_w: f64,
    pub(super) centre_distance: f64,
    pub(super) noise_scale: f64,
    pub(super) w0: PyReadonlyArray1<'py, f64>,
    pub(super) bounds: BoundsSpec,
    pub(super) adaptive: Option<AdaptiveSpecPy>,
}

/// `privrl.agents.common.specs.AdaptiveSpec`: the adaptive rule's constants.
#[derive(FromPyObject)]
pub(super) struct AdaptiveSpecPy {
    pub(super) sigma_max: f64,
    pub(super) spread_scale: f64,
    pub(super) sigma_min: f64,
    pub(super) radius: f64,
    pub(super) draws: usize,
}

/// The noise of a regression's mechanisms (JDP) or randomizer (LDP).
#[derive(FromPyObject)]
pub(super) struct NoiseSpec {
    pub(super) mechanism: String,
    pub(super) noise: String,
    pub(super) sigma_matrix: f64,
    pub(super) sigma_vector: f64,
    pub(super) divisor: f64,
    pub(super) grid_bits: u32,
    pub(super) capacity: u64,
    pub(super) seeds: Vec<Vec<u8>>,
}

impl NoiseSpec {
    pub(super) fn laws(&self) -> PyResult<(NodeNoise, NodeNoise)> {
        let law = |s| {
            NodeNoise::from_name(&self.noise, s, self.grid_bits)
                .ok_or_else(|| PyValueError::new_err(format!("unknown noise {:?}", self.noise)))
        };
        Ok((law(self.sigma_matrix)?, law(self.sigma_vector)?))
    }
}

#[derive(FromPyObject)]
pub(super) struct RegressionSpecPy<'py> {
    pub(super) mode: String,
    pub(super) lam: f64,
    pub(super) base: f64,
    pub(super) radius: f64,
    pub(super) shift_name: String,
    pub(super) guard: Option<GuardSpec>,
    pub(super) noise: Option<NoiseSpec>,
    pub(super) practical: Option<PracticalSpecPy<'py>>,
}

#[derive(FromPyObject)]
pub(super) struct VtrSpecPy<'py> {
    pub(super) features: PyReadonlyArray4<'py, f64>,
    pub(super) rewards: PyReadonlyArray3<'py, f64>,
    pub(super) regressions: Vec<RegressionSpecPy<'py>>,
    pub(super) plus: Option<(f64, f64)>,
    pub(super) tie_seed: Option<Vec<u8>>,
    pub(super) exploration_seed: Option<Vec<u8>>,
    pub(super) episodes: u64,
}

#[derive(FromPyObject)]
pub(super) struct LsviPrivateSpec {
    pub(super) noise: NoiseSpec,
    pub(super) shift: f64,
    pub(super) practical_mult: Option<f64>,
    pub(super) bounds: Option<BoundsSpec>,
}

#[derive(FromPyObject)]
pub(super) struct LsviSpecPy<'py> {
    pub(super) table: PyReadonlyArray2<'py, f64>,
    pub(super) n_actions: usize,
    pub(super) horizon: usize,
    pub(super) guard: GuardSpec,
    pub(super) beta: f64,
    pub(super) lam: f64,
    pub(super) batch_len: u64,
    pub(super) private: Option<LsviPrivateSpec>,
    pub(super) planning: String,
    pub(super) record_capacity: u64,
    pub(super) tie_seed: Option<Vec<u8>>,
    pub(super) exploration_seed: Option<Vec<u8>>,
    pub(super) episodes: u64,
    pub(super) adaptive: Option<LsviAdaptiveSpecPy<'py>>,
}

/// `privrl.agents.common.specs.LsviAdaptiveSpec`: the adaptive LSVI rule's constants.
#[derive(FromPyObject)]
pub(super) struct LsviAdaptiveSpecPy<'py> {
    pub(super) w1: PyReadonlyArray1<'py, f64>,
    pub(super) value_shift: bool,
    pub(super) diagonal: bool,
    pub(super) shift_mult: f64,
    pub(super) bounds: BoundsSpec,
    pub(super) alpha: f64,
    pub(super) radius: f64,
}

impl LsviAdaptiveSpecPy<'_> {
    pub(super) fn build(&self) -> PyResult<crate::agents::lsvi_adaptive::AdaptiveLsvi> {
        let bounds = self.bounds.build()?;
        Ok(crate::agents::lsvi_adaptive::AdaptiveLsvi {
            w1: contiguous("w1", self.w1.as_slice())?.to_vec(),
            value_shift: self.value_shift,
            diagonal: self.diagonal,
            shift_mult: self.shift_mult,
            // eta: one fresh draw per release and step (variance factor 1)
            sigma_u: bounds.vector_std(1.0),
            bounds,
            alpha: self.alpha,
            radius: self.radius,
        })
    }
}

pub(super) fn ties(seed: Option<Vec<u8>>) -> PyResult<Ties> {
    Ok(Ties(seed.map(seed32).transpose()?.map(Stream::new)))
}

pub(super) fn exploration(seed: Option<Vec<u8>>) -> PyResult<Exploration> {
    Ok(match seed {
        None => Exploration::Optimism,
        Some(s) => Exploration::Sampling(Box::new(Stream::new(seed32(s)?))),
    })
}

/// The sampling stream of `exploration = sampling` (None: optimism).
pub(super) fn exploration_stream(seed: Option<Vec<u8>>) -> PyResult<Option<Stream>> {
    seed.map(|s| Ok(Stream::new(seed32(s)?))).transpose()
}

pub(super) fn mechanisms(
    py: Python<'_>,
    n: &NoiseSpec,
    shape: NodeShape,
    law: NodeNoise,
    seeds: &[Vec<u8>],
) -> PyResult<Vec<Mechanism>> {
    let kind = MechanismKind::parse(&n.mechanism, 0).py_ok(py)?;
    seeds
        .iter()
        .map(|s| {
            let seed = seed32(s.clone())?;
            Ok(Mechanism(
                make_mechanism(kind, shape, law, n.capacity, seed).py_ok(py)?,
            ))
        })
        .collect()
}

pub(super) fn regression(
    py: Python<'_>,
    r: RegressionSpecPy<'_>,
    h: usize,
    d: usize,
) -> PyResult<Regression> {
    let practical = match r.practical {
        None => None,
        Some(p) => Some(PracticalSpec {
            lam: p.lam,
            shift_mult: p.shift_mult,
            beta2: p.beta2,
            c_w: p.c_w,
            centre_distance: p.centre_distance,
            noise_scale: p.noise_scale,
            w0: contiguous("w0", p.w0.as_slice())?.to_vec(),
            bounds: p.bounds.build()?,
            adaptive: p.adaptive.map(|a| crate::agents::adaptive::AdaptiveSpec {
                sigma_max: a.sigma_max,
                spread_scale: a.spread_scale,
                sigma_min: a.sigma_min,
                radius: a.radius,
                draws: a.draws,
            }),
        }),
    };
    let wrong = |what: &str| PyValueError::new_err(format!("{} regression: {what}", r.mode));
    if let Some(p) = &practical {
        if p.w0.len() != d {
            // the centre is indexed by the features' d (an index past its end panicked)
            return Err(wrong(&format!(
                "the centre w0 has {} entries, the features d = {d}",
                p.w0.len()
            )));
        }
    }
    if let Some(a) = practical.as_ref().and_then(|p| p.adaptive.as_ref()) {
        if a.draws == 0 {
            return Err(wrong(
                "a sampling user draws at least one model (draws >= 1)",
            ));
        }
    }
    if r.mode != "exact" && r.guard.is_none() {
        // raw user statistics may only enter a mechanism inside the bounds its noise is for
        return Err(wrong("a private regression needs its sensitivity guard"));
    }
    let (server, randomizer) = match (r.mode.as_str(), &r.noise) {
        ("exact", _) => (
            Server::Exact {
                sms: (0..h)
                    .map(|_| crate::kernels::rank_one::ShermanMorrison::new(d, r.lam, 1024))
                    .collect::<Result<_, CoreError>>()
                    .py_ok(py)?,
                target: vec![0.0; h * d],
            },
            None,
        ),
        ("jdp", Some(n)) => {
            if n.seeds.len() != 2 * h {
                return Err(wrong("needs 2H seeds"));
            }
            let (lm, lv) = n.laws()?;
            let sym = NodeShape::SymMatrix {
                d,
                divisor: n.divisor,
            };
            (
                Server::Jdp {
                    grams: mechanisms(py, n, sym, lm, &n.seeds[..h])?,
                    targets: mechanisms(py, n, NodeShape::Vector(d), lv, &n.seeds[h..])?,
                },
                None,
            )
        }
        ("ldp", Some(n)) => {
            if n.seeds.len() != 2 {
                return Err(wrong("needs 2 seeds"));
            }
            let (lm, lv) = n.laws()?;
            (
                Server::Ldp {
                    gram: vec![0.0; h * d * d],
                    target: vec![0.0; h * d],
                },
                Some(Randomizer {
                    matrix: NoiseStream::new(lm, seed32(n.seeds[0].clone())?).py_ok(py)?,
                    vector: NoiseStream::new(lv, seed32(n.seeds[1].clone())?).py_ok(py)?,
                    divisor: n.divisor,
                    spare: Default::default(),
                }),
            )
        }
        _ => return Err(wrong("unknown mode or missing noise")),
    };
    Ok(Regression {
        spec: RegressionSpec {
            radius: r.radius,
            base: r.base,
            practical,
            shift_name: r.shift_name,
        },
        intake: Intake {
            guard: r.guard.map(Guard::from),
            randomizer,
            clips: 0,
        },
        server,
        board: vtr::Billboard {
            design: vec![],
            inverse: vec![],
            weights: vec![],
            explore: vec![],
            gamma: vec![],
            users: 0,
            factor: vec![],
            bias: vec![],
        },
    })
}
