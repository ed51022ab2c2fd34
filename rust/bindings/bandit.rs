//! Binding of LinUCB (`crate::agents::linucb`): built from `privrl.agents.common.specs.LinUcbSpec`,
//! one call per user (`action`, `observe`) or per block of users (`run`, GIL released).

use numpy::PyUntypedArrayMethods;
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::specs::{exploration_stream, mechanisms, ties, BoundsSpec, GuardSpec, NoiseSpec};
use super::{contiguous, reduced, seed32, IntoPy, Reduced};
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

    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Reduced<'py>> {
        reduced(
            py,
            "_restore_linucb_agent",
            None,
            crate::state::encode(&self.inner),
        )
    }

    /// The arm of the user with context `s`; `peek`: without taking the user's draws (its
    /// exploration and tie streams are left as they were).
    #[pyo3(signature = (s, peek=false))]
    fn action(&mut self, s: usize, peek: bool) -> PyResult<usize> {
        if s >= self.inner.n {
            return Err(PyValueError::new_err(format!(
                "context index {s} out of range [0, {})",
                self.inner.n
            )));
        }
        Ok(match peek {
            true => self.inner.peek(|m| m.action(s)),
            false => self.inner.action(s),
        })
    }

    /// The arm of the user with the context vector `x` (length p); `peek` as in `action`.
    #[pyo3(signature = (x, peek=false))]
    fn action_x(&mut self, x: PyReadonlyArray1<'_, f64>, peek: bool) -> PyResult<usize> {
        let x = contiguous("x", x.as_slice())?;
        if x.len() != self.inner.p || crate::errors::any_non_finite(x) {
            return Err(PyValueError::new_err(format!(
                "a context must be {} finite numbers",
                self.inner.p
            )));
        }
        Ok(match peek {
            true => self.inner.peek(|m| m.action_x(x)),
            false => self.inner.action_x(x),
        })
    }

    /// The user of context vector `x` played arm `a` and got reward `r`; `user`: a user
    /// reported through the API, whose draws are taken here (`LinUcb::observe_user`).
    #[pyo3(signature = (x, a, r, user=false))]
    fn observe_x(
        &mut self,
        py: Python<'_>,
        x: PyReadonlyArray1<'_, f64>,
        a: usize,
        r: f64,
        user: bool,
    ) -> PyResult<()> {
        let x = contiguous("x", x.as_slice())?;
        match user {
            true => self.inner.observe_user(Context::Vector(x), a, r).py_ok(py),
            false => self.inner.observe_x(x, a, r).py_ok(py),
        }
    }

    /// Per arm (mean, width) of context `s` on the current billboard.
    fn scores<'py>(&mut self, py: Python<'py>, s: usize) -> PyResult<Bound<'py, PyArray2<f64>>> {
        if s >= self.inner.n {
            return Err(PyValueError::new_err("context index out of range"));
        }
        let mut out = vec![0.0; 2 * self.inner.arms];
        self.inner.scores(s, &mut out);
        out.into_pyarray(py).reshape([self.inner.arms, 2])
    }

    #[pyo3(signature = (s, a, r, user=false))]
    fn observe(&mut self, py: Python<'_>, s: usize, a: usize, r: f64, user: bool) -> PyResult<()> {
        match user {
            true => self.inner.observe_user(Context::Index(s), a, r).py_ok(py),
            false => self.inner.observe(s, a, r).py_ok(py),
        }
    }

    /// A block of users on the bandit of expected rewards `means` (n, arms), with two uniforms
    /// per user: (exact regret, reward, context) per user.
    fn run<'py>(
        &mut self,
        py: Python<'py>,
        means: PyReadonlyArray2<'_, f64>,
        uniforms: PyReadonlyArray2<'_, f64>,
    ) -> PyResult<Log<'py>> {
        let a = &mut self.inner;
        if means.shape() != [a.n, a.arms] || uniforms.shape()[1] != 2 {
            return Err(PyValueError::new_err(
                "means must be (n, arms) and uniforms (users, 2)",
            ));
        }
        let m = contiguous("means", means.as_slice())?;
        let u = contiguous("uniforms", uniforms.as_slice())?;
        let mut log = EpisodeLog::default();
        let res = py.detach(|| a.run(m, u, &mut log));
        res.map_err(|(_, e)| e).py_ok(py)?;
        Ok((
            log.gaps.into_pyarray(py),
            log.returns.into_pyarray(py),
            log.starts.into_pyarray(py),
        ))
    }

    /// (design, inverse, weights, users) of the current billboard, per arm.
    fn billboard<'py>(&self, py: Python<'py>) -> PyResult<Board<'py>> {
        let a = &self.inner;
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
    fn released<'py>(&self, py: Python<'py>) -> PyResult<Sums<'py>> {
        let a = &self.inner;
        let (k, p) = (a.arms, a.p);
        let mut g = vec![0.0; k * p * p];
        let mut t = vec![0.0; k * p];
        a.released(&mut g, &mut t).py_ok(py)?;
        Ok((
            g.into_pyarray(py).reshape([k, p, p])?,
            t.into_pyarray(py).reshape([k, p])?,
        ))
    }

    fn variance_factor(&self) -> f64 {
        self.inner.variance_factor()
    }

    #[getter]
    fn shift(&self) -> f64 {
        self.inner.shift
    }

    #[getter]
    fn releases(&self) -> u64 {
        self.inner.releases
    }

    #[getter]
    fn release_users(&self) -> u64 {
        self.inner.release_users
    }

    #[getter]
    fn clips(&self) -> Vec<u64> {
        vec![self.inner.clips]
    }

    #[getter]
    fn k(&self) -> u64 {
        self.inner.k
    }
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
    Ok(())
}
