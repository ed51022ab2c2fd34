//! Bindings of the agents (`crate::agents`): the Python agent classes own one of these and
//! delegate every episode to it. What crosses the binding is typed: the specs are Python
//! dataclasses read attribute by attribute (`privrl.agents.common.specs`), the results numpy
//! arrays. Runs of many episodes release the GIL.

use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyReadwriteArray1, PyReadwriteArray2, PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pyclass::boolean_struct::False;
use pyo3::types::PyBytes;
use pyo3::PyClass;

use super::specs::{
    exploration, mechanisms, regression, ties, BoundsSpec, GuardSpec, LsviSpecPy, VtrSpecPy,
};
use super::{contiguous, reduced, seed32, IntoPy, Reduced};
use crate::agents::lsvi::{self, LsviAgent, LsviParts, Planning, Shift};
use crate::agents::vtr::{self, PlusSpec, Server, VtrAgent, VtrParts};
use crate::agents::{Episodic, Guard};
use crate::kernels::mixture::MixtureFeatures;
use crate::noise::{NodeShape, NoiseStream};

pub(super) mod act;
mod arrays;
mod client;
mod psrl;
pub(super) mod run;
use arrays::{mat2, mat3, policy_array};
pub(super) use client::{key_client, py_client, reduce_client, take_client_streams, PyClient};
use run::{run_block, trajectory, Block, PyRun};

// ---------------------------------------------------------------- one call at a time

/// The agent object for one call: PyO3's own borrow (what a `&self` receiver takes, no other
/// cost), refused with privrl's AgentInUseError while another thread's call holds the agent (a
/// `run` releases the GIL for its block) instead of PyO3's bare "Already mutably borrowed".
pub(super) fn state<'py, T: PyClass>(slf: &Bound<'py, T>) -> PyResult<PyRef<'py, T>> {
    slf.try_borrow().map_err(|_| in_use(slf.py()))
}

/// `state` for a call that changes the agent (`&mut self`).
pub(super) fn state_mut<'py, T: PyClass<Frozen = False>>(
    slf: &Bound<'py, T>,
) -> PyResult<PyRefMut<'py, T>> {
    slf.try_borrow_mut().map_err(|_| in_use(slf.py()))
}

fn in_use(py: Python<'_>) -> PyErr {
    let msg =
        "this agent is in use by another thread (one of its calls, e.g. a privrl.run, has not \
               returned): privrl agents are not thread-safe; the call was refused and the agent is \
               unchanged. Give each thread its own agent (copy.copy(agent)) or serialize the calls \
               with a lock";
    let built = py
        .import("privrl.common.errors")
        .and_then(|m| m.getattr("AgentInUseError"))
        .and_then(|c| c.call1((msg,)));
    match built {
        Ok(obj) => PyErr::from_value(obj),
        Err(_) => PyRuntimeError::new_err(msg),
    }
}

// ---------------------------------------------------------------- UCRL-VTR / UCRL-VTR+

/// A UCRL-VTR / UCRL-VTR+ agent (`crate::agents::vtr`).
#[pyclass(module = "privrl._core", name = "VtrAgent")]
pub struct PyVtrAgent {
    inner: VtrAgent,
}

type Pair1<'py> = (Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>);
type Noise<'py> = (Bound<'py, PyArray3<f64>>, Bound<'py, PyArray2<f64>>);
type LsviBoard<'py> = (
    Bound<'py, PyArray3<f64>>,
    Bound<'py, PyArray3<f64>>,
    Bound<'py, PyArray2<f64>>,
    u64,
);

type BoardOut<'py> = (
    Bound<'py, PyArray3<f64>>,
    Bound<'py, PyArray3<f64>>,
    Bound<'py, PyArray2<f64>>,
    Bound<'py, PyArray3<f64>>,
    Option<Bound<'py, PyArray1<f64>>>,
    u64,
);

#[pymethods]
impl PyVtrAgent {
    #[new]
    fn new(py: Python<'_>, spec: VtrSpecPy<'_>) -> PyResult<Self> {
        let sh = spec.features.shape().to_vec();
        let (s, a, d) = (sh[0], sh[1], sh[3]);
        if sh[2] != s {
            return Err(PyValueError::new_err(
                "mixture features must be (S, A, S, d)",
            ));
        }
        let h = spec.rewards.shape()[0];
        let features = MixtureFeatures::from_dense(
            contiguous("features", spec.features.as_slice())?,
            s * a,
            s,
            d,
        )
        .py_ok(py)?;
        let regs = spec
            .regressions
            .into_iter()
            .map(|r| regression(py, r, h, d))
            .collect::<PyResult<Vec<_>>>()?;
        let inner = VtrAgent::new(VtrParts {
            features,
            rewards: contiguous("rewards", spec.rewards.as_slice())?.to_vec(),
            h,
            a,
            regs,
            plus: spec.plus.map(|(beta_check, beta_tilde)| PlusSpec {
                beta_check,
                beta_tilde,
            }),
            ties: ties(spec.tie_seed)?,
            exploration: exploration(spec.exploration_seed)?,
            episodes: spec.episodes,
        })
        .py_ok(py)?;
        Ok(PyVtrAgent { inner })
    }

    fn __reduce__<'py>(slf: &Bound<'_, Self>, py: Python<'py>) -> PyResult<Reduced<'py>> {
        let this = state(slf)?;
        reduced(
            py,
            "_restore_vtr_agent",
            None,
            crate::state::encode(&this.inner),
        )
    }

    /// The (H, S) policy of the arriving user.
    fn policy<'py>(slf: &Bound<'_, Self>, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<i64>>> {
        let mut this = state_mut(slf)?;
        let (h, s) = (this.inner.h, this.inner.s);
        let pi = this.inner.policy().py_ok(py)?;
        policy_array(py, pi, h, s)
    }

    /// The greedy policy of the released estimate (H, S): no bonus, no draw, lowest-index ties;
    /// reads the agent only (`crate::agents::vtr::greedy`).
    fn greedy_policy<'py>(
        slf: &Bound<'_, Self>,
        py: Python<'py>,
    ) -> PyResult<Bound<'py, PyArray2<i64>>> {
        let this = state(slf)?;
        let pi = this.inner.greedy_policy().py_ok(py)?;
        policy_array(py, &pi, this.inner.h, this.inner.s)
    }

    /// The arriving user's planned values V_h(s) (H + 1, S).
    fn values<'py>(slf: &Bound<'_, Self>, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let mut this = state_mut(slf)?;
        let (h, s) = (this.inner.h, this.inner.s);
        let v = this.inner.values().py_ok(py)?.to_vec();
        v.into_pyarray(py).reshape([h + 1, s])
    }

    /// The arriving user's trajectory through the privacy model (checked indices).
    fn observe(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        states: PyReadonlyArray1<'_, i64>,
        actions: PyReadonlyArray1<'_, i64>,
        rewards: PyReadonlyArray1<'_, f64>,
    ) -> PyResult<()> {
        let mut this = state_mut(slf)?;
        let a = &mut this.inner;
        let t = trajectory(states, actions, rewards, a.h, a.s, a.a)?;
        a.observe(&t).py_ok(py)
    }

    /// Chosen statistics X (H, d), y (H) as one user's (the audits' adversarial user).
    fn observe_statistics(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        x: PyReadonlyArray2<'_, f64>,
        y: PyReadonlyArray1<'_, f64>,
    ) -> PyResult<()> {
        let mut this = state_mut(slf)?;
        let (xs, ys) = (
            contiguous("X", x.as_slice())?,
            contiguous("y", y.as_slice())?,
        );
        this.inner.observe_statistics(xs, ys).py_ok(py)
    }

    /// A block of users on `run`'s model: (gaps, returns, initial states).
    fn run<'py>(
        slf: &Bound<'_, Self>,
        py: Python<'py>,
        run: &mut PyRun,
        uniforms: PyReadonlyArray2<'_, f64>,
    ) -> PyResult<Block<'py>> {
        let mut this = state_mut(slf)?;
        run_block(py, &mut this.inner, run, uniforms)
    }

    /// Regression i's intake on chosen statistics, nothing sent: under LDP the user's message
    /// (gram (H, d, d), target (H, d)); otherwise the guarded (X (H, d), y (H,)) as flat arrays.
    fn user_message<'py>(
        slf: &Bound<'_, Self>,
        py: Python<'py>,
        i: usize,
        x: PyReadonlyArray2<'_, f64>,
        y: PyReadonlyArray1<'_, f64>,
    ) -> PyResult<Pair1<'py>> {
        let mut this = state_mut(slf)?;
        let (xs, ys) = (
            contiguous("X", x.as_slice())?,
            contiguous("y", y.as_slice())?,
        );
        let (m, t) = this.inner.user_message(i, xs, ys).py_ok(py)?;
        Ok((m.into_pyarray(py), t.into_pyarray(py)))
    }

    /// The arriving user's LDP client (public values, no stream keyed): LDP only.
    fn ldp_client(slf: &Bound<'_, Self>, py: Python<'_>) -> PyResult<client::PyVtrClient> {
        client::ldp_client(py, slf)
    }

    /// One LDP message (grams (n, H, d, d), targets (n, H, d)) built on billboard `release`.
    fn receive(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        release: u64,
        grams: numpy::PyReadonlyArray4<'_, f64>,
        targets: numpy::PyReadonlyArray3<'_, f64>,
    ) -> PyResult<()> {
        client::receive(py, slf, release, grams, targets)
    }

    /// Regression i's billboard: (design, inverse, weights, explore, gamma or None, users).
    fn billboard<'py>(slf: &Bound<'_, Self>, py: Python<'py>, i: usize) -> PyResult<BoardOut<'py>> {
        let this = state(slf)?;
        let (h, d) = (this.inner.h, this.inner.d);
        let b = &this.reg(i)?.board;
        Ok((
            mat3(py, &b.design, h, d)?,
            mat3(py, &b.inverse, h, d)?,
            mat2(py, &b.weights, h, d)?,
            mat3(py, &b.explore, h, d)?,
            (!b.gamma.is_empty()).then(|| b.gamma.clone().into_pyarray(py)),
            b.users,
        ))
    }

    /// Regression i's released noise (matrix (H, d, d), vector (H, d)): JDP only.
    fn noise<'py>(slf: &Bound<'_, Self>, py: Python<'py>, i: usize) -> PyResult<Noise<'py>> {
        let this = state(slf)?;
        let (h, d) = (this.inner.h, this.inner.d);
        let Server::Jdp { grams, targets } = &this.reg(i)?.server else {
            return Err(PyValueError::new_err(
                "only JDP servers keep their noise apart from the data",
            ));
        };
        let (mut m, mut v) = (vec![0.0; h * d * d], vec![0.0; h * d]);
        for hh in 0..h {
            grams[hh]
                .0
                .noise_into(&mut m[hh * d * d..(hh + 1) * d * d])
                .py_ok(py)?;
            targets[hh]
                .0
                .noise_into(&mut v[hh * d..(hh + 1) * d])
                .py_ok(py)?;
        }
        Ok((mat3(py, &m, h, d)?, mat2(py, &v, h, d)?))
    }

    /// Regression i's server sums (exact: Lambda - lam I and targets; LDP: the privatized sums).
    fn sums<'py>(slf: &Bound<'_, Self>, py: Python<'py>, i: usize) -> PyResult<Noise<'py>> {
        let this = state(slf)?;
        let (h, d) = (this.inner.h, this.inner.d);
        let (g, t) = match &this.reg(i)?.server {
            Server::Exact { sms, target } => {
                let mut g = vec![0.0; h * d * d];
                for (hh, sm) in sms.iter().enumerate() {
                    g[hh * d * d..(hh + 1) * d * d].copy_from_slice(sm.matrix());
                    for j in 0..d {
                        g[hh * d * d + j * d + j] -= sm.lam();
                    }
                }
                (g, target.clone())
            }
            Server::Ldp { gram, target } => (gram.clone(), target.clone()),
            Server::Jdp { .. } => {
                return Err(PyValueError::new_err(
                    "a JDP server releases only noisy sums",
                ))
            }
        };
        Ok((mat3(py, &g, h, d)?, mat2(py, &t, h, d)?))
    }

    /// The tree nodes summed in regression 0's current release (JDP), else 0.
    fn nodes_used(slf: &Bound<'_, Self>) -> PyResult<u64> {
        let this = state(slf)?;
        Ok(match &this.inner.regs[0].server {
            Server::Jdp { grams, .. } => grams[0].0.nodes_used(),
            _ => 0,
        })
    }

    /// Var(released noise entry after t users) / Var(one draw) of regression i.
    fn variance_factor(slf: &Bound<'_, Self>, i: usize, t: u64) -> PyResult<f64> {
        let this = state(slf)?;
        Ok(this.reg(i)?.server.variance_factor(t))
    }

    /// Regression i's server state as bytes (everything the server holds; tests check that
    /// under LDP it holds no user key).
    fn server_state<'py>(
        slf: &Bound<'_, Self>,
        py: Python<'py>,
        i: usize,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let this = state(slf)?;
        let bytes = crate::state::encode(&this.reg(i)?.server).py_ok(py)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Regression i's user-side state (guard, randomizer streams) as bytes.
    fn intake_state<'py>(
        slf: &Bound<'_, Self>,
        py: Python<'py>,
        i: usize,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let this = state(slf)?;
        let bytes = crate::state::encode(&this.reg(i)?.intake).py_ok(py)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Values clipped by each regression's guard.
    #[getter]
    fn clips(slf: &Bound<'_, Self>) -> PyResult<Vec<u64>> {
        let this = state(slf)?;
        Ok(this.inner.regs.iter().map(|r| r.intake.clips).collect())
    }

    #[getter]
    fn k(slf: &Bound<'_, Self>) -> PyResult<u64> {
        let this = state(slf)?;
        Ok(this.inner.k)
    }

    #[getter]
    fn policy_updates(slf: &Bound<'_, Self>) -> PyResult<u64> {
        let this = state(slf)?;
        Ok(this.inner.policy_updates)
    }

    /// UCRL-VTR+: sigma-bar of the last user (H,), empty before any user.
    #[getter]
    fn last_sigma_bar<'py>(
        slf: &Bound<'_, Self>,
        py: Python<'py>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let this = state(slf)?;
        Ok(this.inner.last_sigma_bar.clone().into_pyarray(py))
    }
}

impl PyVtrAgent {
    fn reg(&self, i: usize) -> PyResult<&vtr::Regression> {
        self.inner
            .regs
            .get(i)
            .ok_or_else(|| PyValueError::new_err(format!("no regression {i}")))
    }
}

// ---------------------------------------------------------------- LSVI-UCB

/// An LSVI-UCB agent (`crate::agents::lsvi`).
#[pyclass(module = "privrl._core", name = "LsviAgent")]
pub struct PyLsviAgent {
    inner: LsviAgent,
}

#[pymethods]
impl PyLsviAgent {
    #[new]
    fn new(py: Python<'_>, spec: LsviSpecPy<'_>) -> PyResult<Self> {
        let (h, d) = (spec.horizon, spec.table.shape()[1]);
        let private = match spec.private {
            None => None,
            Some(p) => {
                let n = &p.noise;
                if n.seeds.len() != h + 1 {
                    return Err(PyValueError::new_err(
                        "a private LSVI server needs H + 1 seeds",
                    ));
                }
                let (lm, lv) = n.laws()?;
                let sym = NodeShape::SymMatrix {
                    d,
                    divisor: n.divisor,
                };
                let shift = match (p.practical_mult, &p.bounds) {
                    (Some(mult), Some(b)) => Shift::Practical {
                        mult,
                        bounds: b.build()?,
                    },
                    _ => Shift::Constant(p.shift),
                };
                Some(lsvi::Private {
                    trees: mechanisms(py, n, sym, lm, &n.seeds[..h])?,
                    eta: NoiseStream::new(lv, seed32(n.seeds[h].clone())?).py_ok(py)?,
                    shift,
                })
            }
        };
        let planning = match spec.planning.as_str() {
            "auto" => Planning::Auto,
            "per_sample" => Planning::PerSample,
            "aggregated" => Planning::Aggregated,
            p => return Err(PyValueError::new_err(format!("unknown planning {p:?}"))),
        };
        let inner = LsviAgent::new(LsviParts {
            h,
            a: spec.n_actions,
            table: contiguous("table", spec.table.as_slice())?.to_vec(),
            d,
            guard: spec.guard.into(),
            beta: spec.beta,
            lam: spec.lam,
            batch_len: spec.batch_len,
            private,
            planning,
            record_capacity: spec.record_capacity,
            ties: ties(spec.tie_seed)?,
            exploration: exploration(spec.exploration_seed)?,
            episodes: spec.episodes,
            adaptive: spec.adaptive.as_ref().map(|a| a.build()).transpose()?,
        })
        .py_ok(py)?;
        Ok(PyLsviAgent { inner })
    }

    fn __reduce__<'py>(slf: &Bound<'_, Self>, py: Python<'py>) -> PyResult<Reduced<'py>> {
        let this = state(slf)?;
        reduced(
            py,
            "_restore_lsvi_agent",
            None,
            crate::state::encode(&this.inner),
        )
    }

    fn policy<'py>(slf: &Bound<'_, Self>, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<i64>>> {
        let mut this = state_mut(slf)?;
        let (h, s) = (this.inner.h, this.inner.s);
        let pi = this.inner.policy().py_ok(py)?;
        policy_array(py, pi, h, s)
    }

    /// The greedy policy of the released estimate (H, S): no bonus, no draw, lowest-index ties;
    /// reads the agent only (`crate::agents::lsvi::greedy`).
    fn greedy_policy<'py>(
        slf: &Bound<'_, Self>,
        py: Python<'py>,
    ) -> PyResult<Bound<'py, PyArray2<i64>>> {
        let this = state(slf)?;
        let pi = this.inner.greedy_policy().py_ok(py)?;
        policy_array(py, &pi, this.inner.h, this.inner.s)
    }

    fn observe(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        states: PyReadonlyArray1<'_, i64>,
        actions: PyReadonlyArray1<'_, i64>,
        rewards: PyReadonlyArray1<'_, f64>,
    ) -> PyResult<()> {
        let mut this = state_mut(slf)?;
        let a = &mut this.inner;
        let t = trajectory(states, actions, rewards, a.h, a.s, a.a)?;
        a.observe(&t).py_ok(py)
    }

    fn run<'py>(
        slf: &Bound<'_, Self>,
        py: Python<'py>,
        run: &mut PyRun,
        uniforms: PyReadonlyArray2<'_, f64>,
    ) -> PyResult<Block<'py>> {
        let mut this = state_mut(slf)?;
        run_block(py, &mut this.inner, run, uniforms)
    }

    /// (design, inverse, weights, users) of the current billboard.
    fn billboard<'py>(slf: &Bound<'_, Self>, py: Python<'py>) -> PyResult<LsviBoard<'py>> {
        let this = state(slf)?;
        let a = &this.inner;
        let (h, d) = (a.h, a.d);
        let design: Vec<f64> = (0..h)
            .flat_map(|i| a.board_design(i).iter().copied())
            .collect();
        let inverse: Vec<f64> = (0..h)
            .flat_map(|i| a.board_inverse(i).iter().copied())
            .collect();
        Ok((
            mat3(py, &design, h, d)?,
            mat3(py, &inverse, h, d)?,
            mat2(py, &a.board.weights, h, d)?,
            a.board.users,
        ))
    }

    /// The released matrix noise of the Lambda mechanisms (H, d, d): private only.
    fn noise<'py>(slf: &Bound<'_, Self>, py: Python<'py>) -> PyResult<Bound<'py, PyArray3<f64>>> {
        let this = state(slf)?;
        let (h, d) = (this.inner.h, this.inner.d);
        let Some(p) = &this.inner.server.private else {
            return Err(PyValueError::new_err("a non-private server has no noise"));
        };
        let mut m = vec![0.0; h * d * d];
        for (hh, t) in p.trees.iter().enumerate() {
            t.0.noise_into(&mut m[hh * d * d..(hh + 1) * d * d])
                .py_ok(py)?;
        }
        mat3(py, &m, h, d)
    }

    /// The eta of the last release (H, d), or None.
    #[getter]
    fn last_eta<'py>(
        slf: &Bound<'_, Self>,
        py: Python<'py>,
    ) -> PyResult<Option<Bound<'py, PyArray2<f64>>>> {
        let this = state(slf)?;
        let e = &this.inner.server.last_eta;
        if e.is_empty() {
            return Ok(None);
        }
        Ok(Some(mat2(py, e, this.inner.h, this.inner.d)?))
    }

    fn variance_factor(slf: &Bound<'_, Self>, t: u64) -> PyResult<f64> {
        let this = state(slf)?;
        Ok(this.inner.variance_factor(t))
    }

    #[getter]
    fn releases(slf: &Bound<'_, Self>) -> PyResult<u64> {
        let this = state(slf)?;
        Ok(this.inner.server.releases)
    }

    #[getter]
    fn nodes_history(slf: &Bound<'_, Self>) -> PyResult<Vec<u64>> {
        let this = state(slf)?;
        Ok(this.inner.server.nodes_history.clone())
    }

    /// The planning path of each release ("aggregated" or "per_sample").
    #[getter]
    fn paths(slf: &Bound<'_, Self>) -> PyResult<Vec<&'static str>> {
        let this = state(slf)?;
        Ok(this
            .inner
            .server
            .paths
            .iter()
            .map(|&a| if a { "aggregated" } else { "per_sample" })
            .collect())
    }

    #[getter]
    fn release_users(slf: &Bound<'_, Self>) -> PyResult<Vec<u64>> {
        let this = state(slf)?;
        Ok(this.inner.server.release_users.clone())
    }

    #[getter]
    fn n(slf: &Bound<'_, Self>) -> PyResult<u64> {
        let this = state(slf)?;
        Ok(this.inner.server.n)
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

    #[getter]
    fn policy_updates(slf: &Bound<'_, Self>) -> PyResult<u64> {
        let this = state(slf)?;
        Ok(this.inner.policy_updates)
    }
}

#[pyfunction]
fn _restore_vtr_agent(py: Python<'_>, state: &[u8]) -> PyResult<PyVtrAgent> {
    let inner: VtrAgent = crate::state::decode("UCRL-VTR agent", state).py_ok(py)?;
    inner.check_restored().py_ok(py)?;
    Ok(PyVtrAgent { inner })
}

#[pyfunction]
fn _restore_lsvi_agent(py: Python<'_>, state: &[u8]) -> PyResult<PyLsviAgent> {
    let inner: LsviAgent = crate::state::decode("LSVI-UCB agent", state).py_ok(py)?;
    inner.check_restored().py_ok(py)?;
    Ok(PyLsviAgent { inner })
}

/// `SensitivityGuard.apply`: the rows of `x` (n, d) and the entries of `y` clipped (or refused) in
/// place by the agents' own guard; returns the values beyond the bound.
#[pyfunction]
#[pyo3(signature = (spec, x, y=None))]
fn apply_guard(
    py: Python<'_>,
    spec: GuardSpec,
    mut x: PyReadwriteArray2<'_, f64>,
    y: Option<PyReadwriteArray1<'_, f64>>,
) -> PyResult<usize> {
    let d = x.shape()[1].max(1);
    let g = Guard::from(spec);
    // NaN fails both: y_low > y_high panicked in f64::clamp, x_bound < 0 flipped the rows' signs
    if !(g.x_bound > 0.0 && g.y_low <= g.y_high) {
        return Err(super::to_pyerr(
            py,
            crate::errors::CoreError::InvalidParameter(format!(
                "a sensitivity guard needs x_bound > 0 and y_low <= y_high, got x_bound = {}, \
                 y in [{}, {}]",
                g.x_bound, g.y_low, g.y_high
            )),
        ));
    }
    let xs = x
        .as_slice_mut()
        .map_err(|_| PyValueError::new_err("X must be C-contiguous float64"))?;
    match y {
        None => g.apply(xs, d, None).py_ok(py),
        Some(mut y) => {
            let ys = y
                .as_slice_mut()
                .map_err(|_| PyValueError::new_err("y must be C-contiguous float64"))?;
            g.apply(xs, d, Some(ys)).py_ok(py)
        }
    }
}

/// The noise bounds (Upsilon, C) of the practical release at variance factor v (for the report
/// and the numpy references: the agents read the same function).
#[pyfunction]
fn practical_noise_bounds(spec: BoundsSpec, v: f64) -> PyResult<(f64, f64)> {
    Ok(spec.build()?.at(v))
}

/// The Laplace sum bounds of `privrl.privacy.bounds` (one home: here).
#[pyfunction]
fn laplace_sum_bounds(b_m: f64, b_v: f64, n: u64, d: usize, alpha: f64) -> (f64, f64) {
    (
        crate::agents::bounds::laplace_matrix_sum_bound(b_m, n, d, alpha),
        crate::agents::bounds::laplace_vector_sum_bound(b_v, n, d, alpha),
    )
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRun>()?;
    m.add_class::<PyVtrAgent>()?;
    m.add_class::<PyLsviAgent>()?;
    m.add_class::<psrl::PyPsrlAgent>()?;
    m.add_function(wrap_pyfunction!(psrl::_restore_psrl_agent, m)?)?;
    client::register(m)?;
    m.add_function(wrap_pyfunction!(act::agent_act, m)?)?;
    m.add_function(wrap_pyfunction!(_restore_vtr_agent, m)?)?;
    m.add_function(wrap_pyfunction!(_restore_lsvi_agent, m)?)?;
    m.add_function(wrap_pyfunction!(practical_noise_bounds, m)?)?;
    m.add_function(wrap_pyfunction!(apply_guard, m)?)?;
    m.add_function(wrap_pyfunction!(laplace_sum_bounds, m)?)?;
    Ok(())
}
