//! Binding of the PSRL agent (`crate::agents::psrl`, work in progress): the private `_core`
//! class `PsrlAgent` the Python class `privrl.agents.psrl.agent.PSRL` owns.

use numpy::{IntoPyArray, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use super::super::{reduced, seed32, IntoPy, Reduced};
use super::arrays::{mat2, policy_array};
use super::run::{run_block, trajectory, Block, PyRun};
use super::{state, state_mut};
use crate::agents::psrl::{DrawRecord, PsrlAgent, PsrlParts, Sampler};
use crate::agents::Episodic;
use crate::noise::DEFAULT_GRID_BITS;

type Board<'py> = (Bound<'py, PyArray3<f64>>, Bound<'py, PyArray2<f64>>, u64);

/// A private tabular PSRL agent (`crate::agents::psrl`).
#[pyclass(module = "privrl._core", name = "PsrlAgent")]
pub struct PyPsrlAgent {
    inner: PsrlAgent,
}

#[pymethods]
impl PyPsrlAgent {
    /// `sampler`: the calibration's, "discrete" (the exact discrete Gaussian on the lattice
    /// sigma 2^-grid_bits; `grid_bits` None: the kernels' DEFAULT_GRID_BITS) or "float".
    /// `alpha0`: the Dirichlet prior per next state, required (its default is set once, in
    /// privrl.agents.psrl.formulas.psrl_prior, which the class passes).
    #[new]
    #[pyo3(signature = (*, n_states, n_actions, horizon, episodes, m, sigma, sampler, bounds,
        reject, noise_seed, exploration_seed, alpha0, grid_bits=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        n_states: usize,
        n_actions: usize,
        horizon: usize,
        episodes: u64,
        m: u32,
        sigma: f64,
        sampler: &str,
        bounds: Vec<u64>,
        reject: bool,
        noise_seed: Vec<u8>,
        exploration_seed: Vec<u8>,
        alpha0: f64,
        grid_bits: Option<u32>,
    ) -> PyResult<Self> {
        let sampler = match (sampler, grid_bits) {
            ("float", None) => Sampler::Float,
            ("discrete", k) => Sampler::Discrete {
                grid_bits: k.unwrap_or(DEFAULT_GRID_BITS),
            },
            _ => {
                return Err(PyValueError::new_err(format!(
                    "sampler must be 'discrete' or 'float' (grid_bits only with 'discrete'), got \
                     {sampler:?} with grid_bits {grid_bits:?}"
                )))
            }
        };
        let inner = PsrlAgent::new(PsrlParts {
            s: n_states,
            a: n_actions,
            h: horizon,
            episodes,
            m,
            sigma,
            sampler,
            bounds,
            reject,
            alpha0,
            noise_seed: seed32(noise_seed)?,
            exploration_seed: seed32(exploration_seed)?,
        })
        .py_ok(py)?;
        Ok(PyPsrlAgent { inner })
    }

    fn __reduce__<'py>(slf: &Bound<'_, Self>, py: Python<'py>) -> PyResult<Reduced<'py>> {
        let this = state(slf)?;
        reduced(
            py,
            "_restore_psrl_agent",
            None,
            crate::state::encode(&this.inner),
        )
    }

    /// The current user's policy (H, S): drawn once per user from the posterior.
    fn policy<'py>(slf: &Bound<'_, Self>, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<i64>>> {
        let mut this = state_mut(slf)?;
        let (h, s) = (this.inner.h, this.inner.s);
        let pi = this.inner.policy().py_ok(py)?;
        policy_array(py, pi, h, s)
    }

    /// The greedy policy (H, S) of the billboard's plug-in model: no draw, lowest-index ties;
    /// reads the agent only (`crate::agents::psrl::PsrlAgent::greedy_policy`).
    fn greedy_policy<'py>(
        slf: &Bound<'_, Self>,
        py: Python<'py>,
    ) -> PyResult<Bound<'py, PyArray2<i64>>> {
        let this = state(slf)?;
        let pi = this.inner.greedy_policy();
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

    /// The billboard: N~ (S, A, S), R~ (S, A) and the number of releases j.
    fn billboard<'py>(slf: &Bound<'_, Self>, py: Python<'py>) -> PyResult<Board<'py>> {
        let this = state(slf)?;
        let a = &this.inner;
        Ok((
            a.board_n
                .clone()
                .into_pyarray(py)
                .reshape([a.s, a.a, a.s])?,
            mat2(py, &a.board_r, a.s, a.a)?,
            a.releases,
        ))
    }

    /// Start (true) or stop the debug record of the draws (starting clears it).
    fn set_record(slf: &Bound<'_, Self>, on: bool) -> PyResult<()> {
        state_mut(slf)?.inner.set_record(on);
        Ok(())
    }

    /// The record: (noise draws, exploration draws), each a list of (kind, parameter, values)
    /// as privrl.agents.psrl.reference.DrawLog writes them; None when not recording.
    fn draw_record<'py>(
        slf: &Bound<'_, Self>,
        py: Python<'py>,
    ) -> PyResult<Option<(Bound<'py, PyList>, Bound<'py, PyList>)>> {
        let this = state(slf)?;
        let Some(log) = &this.inner.record else {
            return Ok(None);
        };
        Ok(Some((records(py, &log.noise)?, records(py, &log.explore)?)))
    }

    /// The release's sampler: "discrete" or "float".
    #[getter]
    fn sampler(slf: &Bound<'_, Self>) -> PyResult<&'static str> {
        Ok(match state(slf)?.inner.sampler() {
            Some(Sampler::Discrete { .. }) => "discrete",
            _ => "float",
        })
    }

    /// The discrete sampler's lattice bits (None for float).
    #[getter]
    fn grid_bits(slf: &Bound<'_, Self>) -> PyResult<Option<u32>> {
        Ok(match state(slf)?.inner.sampler() {
            Some(Sampler::Discrete { grid_bits }) => Some(grid_bits),
            _ => None,
        })
    }

    #[getter]
    fn releases(slf: &Bound<'_, Self>) -> PyResult<u64> {
        Ok(state(slf)?.inner.releases)
    }

    #[getter]
    fn num_batches(slf: &Bound<'_, Self>) -> PyResult<usize> {
        Ok(state(slf)?.inner.num_batches())
    }

    #[getter]
    fn variance(slf: &Bound<'_, Self>) -> PyResult<f64> {
        Ok(state(slf)?.inner.variance())
    }

    /// Rewards clipped so far, one count per guarded statistic (one), as the other agents'.
    #[getter]
    fn clips(slf: &Bound<'_, Self>) -> PyResult<Vec<u64>> {
        Ok(vec![state(slf)?.inner.clips])
    }

    #[getter]
    fn k(slf: &Bound<'_, Self>) -> PyResult<u64> {
        Ok(state(slf)?.inner.k)
    }

    #[getter]
    fn policy_updates(slf: &Bound<'_, Self>) -> PyResult<u64> {
        Ok(state(slf)?.inner.policy_updates)
    }
}

fn records<'py>(py: Python<'py>, recs: &[DrawRecord]) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for r in recs {
        let values = r.values.clone().into_pyarray(py).reshape(r.shape.clone())?;
        let param = if r.params.is_empty() {
            PyTuple::new(py, &r.shape)?.into_any()
        } else {
            r.params
                .clone()
                .into_pyarray(py)
                .reshape(r.shape.clone())?
                .into_any()
        };
        out.append((r.kind.name(), param, values))?;
    }
    Ok(out)
}

#[pyfunction]
pub(super) fn _restore_psrl_agent(py: Python<'_>, state: &[u8]) -> PyResult<PyPsrlAgent> {
    let inner: PsrlAgent = crate::state::decode("PSRL agent", state).py_ok(py)?;
    inner.check_restored().py_ok(py)?;
    Ok(PyPsrlAgent { inner })
}
