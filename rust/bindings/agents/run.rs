//! One run of `privrl.run` on a model (`Run`), its blocks of users for either agent binding, and
//! a user's trajectory read from numpy (`observe`): the episodes that cross the agent bindings.

use numpy::{
    IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2, PyReadonlyArray3, PyReadonlyArray4,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::agents::{self as core, EpisodeLog, Episodic, FiniteModel, RegretCache, Trajectory};
use crate::bindings::{contiguous, IntoPy};
use crate::errors::CoreError;

/// One run of `privrl.run` on a model: the model, V*_1 and the exact-regret cache (the policy
/// changes count across the run's blocks).
#[pyclass(module = "privrl._core", name = "Run")]
pub struct PyRun {
    model: FiniteModel,
    cache: RegretCache,
    v_star: Vec<f64>,
}

#[pymethods]
impl PyRun {
    #[new]
    #[pyo3(signature = (p, r, cdf, init_cdf, v_star, phi=None, mu=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        p: PyReadonlyArray4<'_, f64>,
        r: PyReadonlyArray3<'_, f64>,
        cdf: PyReadonlyArray4<'_, f64>,
        init_cdf: PyReadonlyArray1<'_, f64>,
        v_star: PyReadonlyArray1<'_, f64>,
        phi: Option<PyReadonlyArray2<'_, f64>>,
        mu: Option<PyReadonlyArray3<'_, f64>>,
    ) -> PyResult<Self> {
        let sh = p.shape();
        let model = FiniteModel::new(
            (sh[0], sh[1], sh[2]),
            contiguous("P", p.as_slice())?,
            contiguous("R", r.as_slice())?,
            contiguous("cdf", cdf.as_slice())?,
            contiguous("init_cdf", init_cdf.as_slice())?,
            crate::bindings::kernels::factors(&phi, &mu)?,
        )
        .py_ok(py)?;
        let cache = RegretCache::new(&model);
        Ok(PyRun {
            model,
            cache,
            v_star: contiguous("v_star", v_star.as_slice())?.to_vec(),
        })
    }

    /// Distinct consecutive policies so far.
    #[getter]
    fn policy_changes(&self) -> u64 {
        self.cache.policy.count
    }
}

pub(super) type Block<'py> = (
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<i64>>,
);

/// A block of users on `run`'s model (GIL released); raises the first fault after the block's
/// completed users are applied.
pub(super) fn run_block<'py, A: Episodic + Send>(
    py: Python<'py>,
    agent: &mut A,
    run: &mut PyRun,
    uniforms: PyReadonlyArray2<'_, f64>,
) -> PyResult<Block<'py>> {
    let u = contiguous("uniforms", uniforms.as_slice())?;
    if uniforms.shape()[1] != run.model.h + 1 {
        return Err(PyValueError::new_err("uniforms must have H + 1 columns"));
    }
    let mut log = EpisodeLog::default();
    let PyRun {
        model,
        cache,
        v_star,
    } = run;
    let res = py.detach(|| core::run_block(agent, model, cache, v_star, u, &mut log));
    finish_block(py, res, log)
}

/// A block's (gaps, returns, starts); when it failed at user `e`, the error, carrying the log of
/// the `e` users the agent observed before it as the exception's `_block` (privrl.run hands them
/// back in the stopped run's partial result instead of losing them).
pub(in crate::bindings) fn finish_block<'py>(
    py: Python<'py>,
    res: Result<(), (usize, CoreError)>,
    mut log: EpisodeLog,
) -> PyResult<Block<'py>> {
    let failed = res.err();
    if let Some((e, _)) = failed {
        log.gaps.truncate(e); // the failing user's entries, logged before its observe
        log.returns.truncate(e);
        log.starts.truncate(e);
    }
    let block = (
        log.gaps.into_pyarray(py),
        log.returns.into_pyarray(py),
        log.starts.into_pyarray(py),
    );
    match failed {
        None => Ok(block),
        Some((_, fault)) => {
            let err = Err::<(), _>(fault).py_ok(py).unwrap_err();
            err.value(py).setattr("_block", block)?;
            Err(err)
        }
    }
}

pub(super) fn trajectory(
    states: PyReadonlyArray1<'_, i64>,
    actions: PyReadonlyArray1<'_, i64>,
    rewards: PyReadonlyArray1<'_, f64>,
    h: usize,
    s: usize,
    a: usize,
) -> PyResult<Trajectory> {
    let idx =
        |what: &str, x: PyReadonlyArray1<'_, i64>, n: usize, hi: usize| -> PyResult<Vec<usize>> {
            let v = x
                .as_slice()
                .map_err(|_| PyValueError::new_err(format!("{what} must be contiguous int64")))?;
            if v.len() != n || v.iter().any(|&i| i < 0 || i as usize >= hi) {
                return Err(PyValueError::new_err(format!(
                    "{what} must be {n} indices in [0, {hi})"
                )));
            }
            Ok(v.iter().map(|&i| i as usize).collect())
        };
    let r = contiguous("rewards", rewards.as_slice())?;
    if r.len() != h {
        return Err(PyValueError::new_err(format!(
            "rewards must have {h} values"
        )));
    }
    Ok(Trajectory {
        states: idx("states", states, h + 1, s)?,
        actions: idx("actions", actions, h, a)?,
        rewards: r.to_vec(),
    })
}
