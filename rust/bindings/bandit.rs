//! Binding of LinUCB (`crate::agents::linucb`): built from `privrl.agents.common.specs.LinUcbSpec`,
//! one call per user (`action`, `observe`) or per block of users (`run`, GIL released).

use numpy::PyUntypedArrayMethods;
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyReadonlyArray3,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::agents::act::index_arg;
use super::agents::run::finish_block;
use super::agents::{key_client, py_client, reduce_client, state, state_mut, take_client_streams};
use super::specs::{exploration_stream, mechanisms, ties, BoundsSpec, GuardSpec, NoiseSpec};
use super::{contiguous, reduced, seed32, IntoPy, Reduced};
use crate::agents::linucb::user::LinUcbClient;
use crate::agents::linucb::{BanditServer, Context, LinUcb, LinUcbParts};
use crate::agents::EpisodeLog;
use crate::errors::CoreError;
use crate::kernels::rank_one::ShermanMorrison;
use crate::noise::{NodeShape, NoiseStream};

/// `privrl.agents.common.specs.LinUcbSpec`.
#[derive(FromPyObject)]
pub(super) struct LinUcbSpecPy<'py> {
    contexts: PyReadonlyArray2<'py, f64>,
    n_arms: usize,
    mode: String,
    guard: GuardSpec,
    lam: f64,
    beta: f64,
    sigma_r: f64,
    ends: Vec<u64>,
    const_shift: f64,
    shift_mult: f64,
    bounds: BoundsSpec,
    noise: Option<NoiseSpec>,
    tie_seed: Option<Vec<u8>>,
    exploration_seed: Option<Vec<u8>>,
    episodes: u64,
}

/// A LinUCB agent.
#[pyclass(module = "privrl._core", name = "LinUcbAgent")]
pub struct PyLinUcb {
    inner: LinUcb,
}

type Board<'py> = (
    Bound<'py, PyArray3<f64>>,
    Bound<'py, PyArray3<f64>>,
    Bound<'py, PyArray2<f64>>,
    u64,
);

type Log<'py> = (
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<i64>>,
);
type Sums<'py> = (Bound<'py, PyArray3<f64>>, Bound<'py, PyArray2<f64>>);

#[pymethods]
impl PyLinUcb {
    #[new]
    fn new(py: Python<'_>, spec: LinUcbSpecPy<'_>) -> PyResult<Self> {
        let (arms, p) = (spec.n_arms, spec.contexts.shape()[1]);
        let wrong = |m: &str| PyValueError::new_err(format!("LinUCB {} server: {m}", spec.mode));
        let server = match (spec.mode.as_str(), &spec.noise) {
            ("exact", _) => BanditServer::Exact {
                sms: (0..arms)
                    .map(|_| ShermanMorrison::new(p, spec.lam, 1024))
                    .collect::<Result<_, CoreError>>()
                    .py_ok(py)?,
                sums: vec![0.0; arms * p],
            },
            ("jdp", Some(n)) => {
                if n.seeds.len() != 2 * arms {
                    return Err(wrong("needs 2 seeds per arm"));
                }
                let (lm, lv) = n.laws()?;
                let sym = NodeShape::SymMatrix {
                    d: p,
                    divisor: n.divisor,
                };
                BanditServer::Jdp {
                    grams: mechanisms(py, n, sym, lm, &n.seeds[..arms])?,
                    targets: mechanisms(py, n, NodeShape::Vector(p), lv, &n.seeds[arms..])?,
                    leaf_g: vec![0.0; arms * p * p],
                    leaf_b: vec![0.0; arms * p],
                }
            }
            ("ldp", Some(n)) => {
                if n.seeds.len() != 2 {
                    return Err(wrong("needs 2 seeds"));
                }
                let (lm, lv) = n.laws()?;
                BanditServer::Ldp {
                    gram: vec![0.0; arms * p * p],
                    target: vec![0.0; arms * p],
                    matrix: Box::new(NoiseStream::new(lm, seed32(n.seeds[0].clone())?).py_ok(py)?),
                    vector: Box::new(NoiseStream::new(lv, seed32(n.seeds[1].clone())?).py_ok(py)?),
                    divisor: n.divisor,
                }
            }
            _ => return Err(wrong("unknown mode or missing noise")),
        };
        let inner = LinUcb::new(LinUcbParts {
            arms,
            p,
            contexts: contiguous("contexts", spec.contexts.as_slice())?.to_vec(),
            guard: spec.guard.into(),
            lam: spec.lam,
            beta: spec.beta,
            sigma_r: spec.sigma_r,
            ends: spec.ends,
            const_shift: spec.const_shift,
            shift_mult: spec.shift_mult,
            bounds: spec.bounds.build()?,
            server,
            ties: ties(spec.tie_seed)?,
            exploration: exploration_stream(spec.exploration_seed)?,
            episodes: spec.episodes,
        })
        .py_ok(py)?;
        Ok(PyLinUcb { inner })
    }

    fn __reduce__<'py>(slf: &Bound<'_, Self>, py: Python<'py>) -> PyResult<Reduced<'py>> {
        let this = state(slf)?;
        reduced(
            py,
            "_restore_linucb_agent",
            None,
            crate::state::encode(&this.inner),
        )
    }

    /// The arm of the user with context `s`; `peek`: without taking the user's draws (its
    /// exploration and tie streams are left as they were).
    #[pyo3(signature = (s, peek=false))]
    fn action(slf: &Bound<'_, Self>, s: usize, peek: bool) -> PyResult<usize> {
        let mut this = state_mut(slf)?;
        if s >= this.inner.n {
            return Err(PyValueError::new_err(format!(
                "context index {s} out of range [0, {})",
                this.inner.n
            )));
        }
        Ok(match peek {
            true => this.inner.peek(|m| m.action(s)),
            false => this.inner.action(s),
        })
    }

    /// `act(state, h)`'s common case (`bindings::agents::act`): the arm `action(state, peek=True)`
    /// gives, when `state` and `h` are indices read there, `state` in range and `h` 0; None for
    /// anything else (the Python wrapper checks it).
    fn act(
        slf: &Bound<'_, Self>,
        state: &Bound<'_, PyAny>,
        h: &Bound<'_, PyAny>,
    ) -> PyResult<Option<usize>> {
        let (Some(s), Some(0)) = (index_arg(state), index_arg(h)) else {
            return Ok(None);
        };
        let mut this = state_mut(slf)?;
        Ok(match usize::try_from(s) {
            Ok(s) if s < this.inner.n => Some(this.inner.peek(|m| m.action(s))),
            _ => None,
        })
    }

    /// The greedy arm of every context (1, n): the argmax of the released mean reward, ties to
    /// the lowest arm; reads the agent only (no stream moves).
    fn greedy_policy<'py>(
        slf: &Bound<'_, Self>,
        py: Python<'py>,
    ) -> PyResult<Bound<'py, PyArray2<i64>>> {
        let this = state(slf)?;
        let pi: Vec<i64> = this
            .inner
            .greedy_policy()
            .iter()
            .map(|&a| a as i64)
            .collect();
        pi.into_pyarray(py).reshape([1, this.inner.n])
    }

    /// The arm of the user with the context vector `x` (length p); `peek` as in `action`.
    #[pyo3(signature = (x, peek=false))]
    fn action_x(
        slf: &Bound<'_, Self>,
        x: PyReadonlyArray1<'_, f64>,
        peek: bool,
    ) -> PyResult<usize> {
        let mut this = state_mut(slf)?;
        let x = contiguous("x", x.as_slice())?;
        if x.len() != this.inner.p || crate::errors::any_non_finite(x) {
            return Err(PyValueError::new_err(format!(
                "a context must be {} finite numbers",
                this.inner.p
            )));
        }
        Ok(match peek {
            true => this.inner.peek(|m| m.action_x(x)),
            false => this.inner.action_x(x),
        })
    }

    /// The user of context vector `x` played arm `a` and got reward `r`; `user`: a user
    /// reported through the API, whose draws are taken here (`LinUcb::observe_user`).
    #[pyo3(signature = (x, a, r, user=false))]
    fn observe_x(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        x: PyReadonlyArray1<'_, f64>,
        a: usize,
        r: f64,
        user: bool,
    ) -> PyResult<()> {
        let mut this = state_mut(slf)?;
        let x = contiguous("x", x.as_slice())?;
        match user {
            true => this.inner.observe_user(Context::Vector(x), a, r).py_ok(py),
            false => this.inner.observe_x(x, a, r).py_ok(py),
        }
    }

    /// Per arm (mean, width) of context `s` on the current billboard.
    fn scores<'py>(
        slf: &Bound<'_, Self>,
        py: Python<'py>,
        s: usize,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let mut this = state_mut(slf)?;
        if s >= this.inner.n {
            return Err(PyValueError::new_err("context index out of range"));
        }
        let mut out = vec![0.0; 2 * this.inner.arms];
        this.inner.scores(s, &mut out);
        out.into_pyarray(py).reshape([this.inner.arms, 2])
    }

    #[pyo3(signature = (s, a, r, user=false))]
    fn observe(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        s: usize,
        a: usize,
        r: f64,
        user: bool,
    ) -> PyResult<()> {
        let mut this = state_mut(slf)?;
        match user {
            true => this.inner.observe_user(Context::Index(s), a, r).py_ok(py),
            false => this.inner.observe(s, a, r).py_ok(py),
        }
    }

    /// A block of users on the bandit of expected rewards `means` (n, arms), with two uniforms
    /// per user: (exact regret, reward, context) per user.
    fn run<'py>(
        slf: &Bound<'_, Self>,
        py: Python<'py>,
        means: PyReadonlyArray2<'_, f64>,
        uniforms: PyReadonlyArray2<'_, f64>,
    ) -> PyResult<Log<'py>> {
        let mut this = state_mut(slf)?;
        let a = &mut this.inner;
        if means.shape() != [a.n, a.arms] || uniforms.shape()[1] != 2 {
            return Err(PyValueError::new_err(
                "means must be (n, arms) and uniforms (users, 2)",
            ));
        }
        let m = contiguous("means", means.as_slice())?;
        let u = contiguous("uniforms", uniforms.as_slice())?;
        let mut log = EpisodeLog::default();
        let res = py.detach(|| a.run(m, u, &mut log));
        finish_block(py, res, log)
    }

    /// (design, inverse, weights, users) of the current billboard, per arm.
    fn billboard<'py>(slf: &Bound<'_, Self>, py: Python<'py>) -> PyResult<Board<'py>> {
        let this = state(slf)?;
        let a = &this.inner;
        let (design, inverse, weights) = a.board();
        let (k, p) = (a.arms, a.p);
        Ok((
            design.to_vec().into_pyarray(py).reshape([k, p, p])?,
            inverse.to_vec().into_pyarray(py).reshape([k, p, p])?,
            weights.to_vec().into_pyarray(py).reshape([k, p])?,
            a.release_users,
        ))
    }

    /// The released (noisy) sums now, per arm: (Gram blocks, reward blocks).
    fn released<'py>(slf: &Bound<'_, Self>, py: Python<'py>) -> PyResult<Sums<'py>> {
        let this = state(slf)?;
        let a = &this.inner;
        let (k, p) = (a.arms, a.p);
        let mut g = vec![0.0; k * p * p];
        let mut t = vec![0.0; k * p];
        a.released(&mut g, &mut t).py_ok(py)?;
        Ok((
            g.into_pyarray(py).reshape([k, p, p])?,
            t.into_pyarray(py).reshape([k, p])?,
        ))
    }

    fn variance_factor(slf: &Bound<'_, Self>) -> PyResult<f64> {
        let this = state(slf)?;
        Ok(this.inner.variance_factor())
    }

    #[getter]
    fn shift(slf: &Bound<'_, Self>) -> PyResult<f64> {
        let this = state(slf)?;
        Ok(this.inner.shift)
    }

    #[getter]
    fn releases(slf: &Bound<'_, Self>) -> PyResult<u64> {
        let this = state(slf)?;
        Ok(this.inner.releases)
    }

    #[getter]
    fn release_users(slf: &Bound<'_, Self>) -> PyResult<u64> {
        let this = state(slf)?;
        Ok(this.inner.release_users)
    }

    #[getter]
    fn clips(slf: &Bound<'_, Self>) -> PyResult<Vec<u64>> {
        let this = state(slf)?;
        Ok(vec![this.inner.clips])
    }

    #[getter]
    fn k(slf: &Bound<'_, Self>) -> PyResult<u64> {
        let this = state(slf)?;
        Ok(this.inner.k)
    }

    /// The arriving user's LDP client (public values, no stream keyed; takes the user's
    /// exploration draws): LDP only.
    fn ldp_client(slf: &Bound<'_, Self>, py: Python<'_>) -> PyResult<PyLinUcbClient> {
        let mut this = state_mut(slf)?;
        let inner = this.inner.client().py_ok(py)?;
        Ok(PyLinUcbClient { inner })
    }

    /// One LDP message (grams (A, p, p), targets (A, p)) built on the billboard after `release`
    /// users.
    fn receive(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        release: u64,
        grams: PyReadonlyArray3<'_, f64>,
        targets: PyReadonlyArray2<'_, f64>,
    ) -> PyResult<()> {
        let mut this = state_mut(slf)?;
        let (a, p) = (this.inner.arms, this.inner.p);
        if grams.shape() != [a, p, p] || targets.shape() != [a, p] {
            return Err(PyValueError::new_err(format!(
                "a message of this agent is grams ({a}, {p}, {p}) and targets ({a}, {p}), got {:?} \
                 and {:?}",
                grams.shape(),
                targets.shape()
            )));
        }
        let g = contiguous("grams", grams.as_slice())?;
        let t = contiguous("targets", targets.as_slice())?;
        this.inner.receive(release, g, t).py_ok(py)
    }
}

/// The LDP user side of one LinUCB user (`crate::agents::linucb::user::LinUcbClient`).
#[pyclass(module = "privrl._core", name = "LinUcbClient")]
pub struct PyLinUcbClient {
    inner: LinUcbClient,
}

py_client!(PyLinUcbClient, "_restore_linucb_client");

#[pymethods]
impl PyLinUcbClient {
    fn __reduce__<'py>(slf: &Bound<'_, Self>, py: Python<'py>) -> PyResult<Reduced<'py>> {
        reduce_client(slf, py)
    }

    /// Key the randomizer: 2 x 32 bytes (matrix, vector).
    fn key(slf: &Bound<'_, Self>, py: Python<'_>, seeds: Vec<Vec<u8>>) -> PyResult<()> {
        key_client(slf, py, seeds)
    }

    /// This client continues `other`'s streams (which `other` gives up).
    fn take_streams(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        other: &Bound<'_, PyLinUcbClient>,
    ) -> PyResult<()> {
        take_client_streams(slf, py, other)
    }

    /// The message of a one-step trajectory (context index, arm, reward): (grams (A, p, p),
    /// targets (A, p)).
    fn privatize<'py>(
        slf: &Bound<'_, Self>,
        py: Python<'py>,
        states: PyReadonlyArray1<'_, i64>,
        actions: PyReadonlyArray1<'_, i64>,
        rewards: PyReadonlyArray1<'_, f64>,
    ) -> PyResult<Sums<'py>> {
        let mut this = state_mut(slf)?;
        let c = &mut this.inner;
        let (s, a, r) = (states.as_slice()?, actions.as_slice()?, rewards.as_slice()?);
        let (Some(&s), Some(&a), Some(&r)) = (s.first(), a.first(), r.first()) else {
            return Err(PyValueError::new_err(
                "a bandit trajectory has a context, an arm and a reward",
            ));
        };
        let (s, a) = (usize::try_from(s), usize::try_from(a));
        let (Ok(s), Ok(a)) = (s, a) else {
            return Err(PyValueError::new_err("context and arm must be >= 0"));
        };
        let (g, t) = c.privatize(s, a, r).py_ok(py)?;
        let (n, p) = (c.arms, c.p);
        Ok((
            g.into_pyarray(py).reshape([n, p, p])?,
            t.into_pyarray(py).reshape([n, p])?,
        ))
    }

    /// The arm of the live user of context vector `x` (p), the user's own draws looked at.
    fn choose(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        x: PyReadonlyArray1<'_, f64>,
    ) -> PyResult<usize> {
        let this = state(slf)?;
        this.inner
            .choose_x(contiguous("x", x.as_slice())?)
            .py_ok(py)
    }

    /// The message of the live user of context vector `x` who played arm `a` and got reward
    /// `r` (its draws taken): (grams (A, p, p), targets (A, p)).
    fn privatize_x<'py>(
        slf: &Bound<'_, Self>,
        py: Python<'py>,
        x: PyReadonlyArray1<'_, f64>,
        a: usize,
        r: f64,
    ) -> PyResult<Sums<'py>> {
        let mut this = state_mut(slf)?;
        let c = &mut this.inner;
        let (g, t) = c
            .privatize_x(contiguous("x", x.as_slice())?, a, r)
            .py_ok(py)?;
        let (n, p) = (c.arms, c.p);
        Ok((
            g.into_pyarray(py).reshape([n, p, p])?,
            t.into_pyarray(py).reshape([n, p])?,
        ))
    }

    /// The arm of every context (1, n) on the billboard the client was made on (computed here,
    /// on the device, from the client's copy of it).
    fn policy<'py>(slf: &Bound<'_, Self>, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<i64>>> {
        let this = state(slf)?;
        let v = this.inner.policy().py_ok(py)?;
        let v: Vec<i64> = v.iter().map(|&a| a as i64).collect();
        v.into_pyarray(py).reshape([1, this.inner.n])
    }

    /// Whether the client holds the context table (a restored client holds none).
    #[getter]
    fn has_contexts(slf: &Bound<'_, Self>) -> PyResult<bool> {
        Ok(state(slf)?.inner.has_contexts())
    }

    /// Attach the public context table (n, p) to a restored client (projected by its guard).
    fn attach_contexts(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        contexts: PyReadonlyArray2<'_, f64>,
    ) -> PyResult<()> {
        let mut this = state_mut(slf)?;
        let table = contiguous("contexts", contexts.as_slice())?.to_vec();
        this.inner.attach_contexts(table).py_ok(py)
    }

    #[getter]
    fn keyed(slf: &Bound<'_, Self>) -> PyResult<bool> {
        Ok(state(slf)?.inner.keyed())
    }

    #[getter]
    fn release(slf: &Bound<'_, Self>) -> PyResult<u64> {
        Ok(state(slf)?.inner.release)
    }

    #[getter]
    fn clips(slf: &Bound<'_, Self>) -> PyResult<Vec<u64>> {
        Ok(vec![state(slf)?.inner.clips])
    }
}

#[pyfunction]
fn _restore_linucb_client(py: Python<'_>, state: &[u8]) -> PyResult<PyLinUcbClient> {
    let inner: LinUcbClient = crate::state::decode("LinUCB client", state).py_ok(py)?;
    inner.check_restored().py_ok(py)?;
    Ok(PyLinUcbClient { inner })
}

#[pyfunction]
fn _restore_linucb_agent(py: Python<'_>, state: &[u8]) -> PyResult<PyLinUcb> {
    let inner: crate::agents::linucb::LinUcb =
        crate::state::decode("LinUCB agent", state).py_ok(py)?;
    inner.check_restored().py_ok(py)?;
    Ok(PyLinUcb { inner })
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyLinUcb>()?;
    m.add_function(wrap_pyfunction!(_restore_linucb_agent, m)?)?;
    m.add_class::<PyLinUcbClient>()?;
    m.add_function(wrap_pyfunction!(_restore_linucb_client, m)?)?;
    Ok(())
}
