//! Bindings of the kernels the agents share with Python: exact policy values, the released
//! weights' batched products, the practical release's floor and UCRL-VTR+'s sigma-bar (their
//! numpy references and the agents' reference implementations call them).

use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyReadonlyArray3, PyReadonlyArray4, PyReadonlyArrayDyn, PyUntypedArrayMethods,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::{contiguous, IntoPy};
use crate::agents as core;
use crate::kernels::dense;
use crate::kernels::practical::{self, Floored};
use crate::kernels::rank_one;
use crate::kernels::variance::{self, VarianceInputs};

/// A linear MDP's kernel factors `phi` (S A, d) and `mu` (H, S, d), both or neither.
pub(super) fn factors<'a>(
    phi: &'a Option<PyReadonlyArray2<'_, f64>>,
    mu: &'a Option<PyReadonlyArray3<'_, f64>>,
) -> PyResult<Option<core::Factors<'a>>> {
    match (phi, mu) {
        (None, None) => Ok(None),
        (Some(phi), Some(mu)) => {
            let d = phi.shape()[1];
            if mu.shape()[2] != d {
                return Err(PyValueError::new_err(format!(
                    "phi has d = {d} columns, mu {}",
                    mu.shape()[2]
                )));
            }
            Ok(Some(core::Factors {
                phi: contiguous("phi", phi.as_slice())?,
                mu: contiguous("mu", mu.as_slice())?,
                d,
            }))
        }
        _ => Err(PyValueError::new_err("give both phi and mu, or neither")),
    }
}

/// V^pi (H + 1, S) by backward induction (FiniteMDP.policy_values and the engine's regret); a
/// linear MDP's factors `phi`, `mu` make the sums `phi^T (mu_h^T V)` where that is cheaper.
#[pyfunction]
#[pyo3(signature = (p, r, pi, phi=None, mu=None))]
pub fn policy_values<'py>(
    py: Python<'py>,
    p: PyReadonlyArray4<'_, f64>,
    r: PyReadonlyArray3<'_, f64>,
    pi: PyReadonlyArray2<'_, i64>,
    phi: Option<PyReadonlyArray2<'_, f64>>,
    mu: Option<PyReadonlyArray3<'_, f64>>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let sh = p.shape();
    let (h, s) = (sh[0], sh[1]);
    let pis = pi
        .as_slice()
        .map_err(|_| PyValueError::new_err("policy must be a C-contiguous int64 array"))?;
    let v = core::policy_values(
        contiguous("P", p.as_slice())?,
        contiguous("R", r.as_slice())?,
        (h, s, sh[2]),
        pis,
        factors(&phi, &mu)?,
    )
    .py_ok(py)?;
    v.into_pyarray(py).reshape([h + 1, s])
}

/// m[k] @ v[k] for a stack (n, d, d) and (n, d), each sum left to right (the released weights).
#[pyfunction]
pub fn batched_matvec<'py>(
    py: Python<'py>,
    m: PyReadonlyArray3<'_, f64>,
    v: PyReadonlyArray2<'_, f64>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let sh = v.shape();
    let (n, d) = (sh[0], sh[1]);
    if m.shape() != [n, d, d] {
        return Err(PyValueError::new_err(format!(
            "matrices must be ({n}, {d}, {d}), got {:?}",
            m.shape()
        )));
    }
    let mut out = vec![0.0; n * d];
    rank_one::batched_matvec(
        contiguous("m", m.as_slice())?,
        contiguous("v", v.as_slice())?,
        d,
        &mut out,
    )
    .py_ok(py)?;
    out.into_pyarray(py).reshape([n, d])
}

type Arrays5<'py> = (
    Bound<'py, PyArray3<f64>>,
    Bound<'py, PyArray3<f64>>,
    Bound<'py, PyArray3<f64>>,
    Bound<'py, PyArray2<f64>>,
    Bound<'py, PyArray1<f64>>,
);

/// The practical calibration's floored release (crate::kernels::practical): (design, inverse,
/// inverse2, weights, correction) from the noisy sums gram (H, d, d) and target (H, d).
#[pyfunction]
pub fn floored_release<'py>(
    py: Python<'py>,
    gram: PyReadonlyArray3<'_, f64>,
    target: PyReadonlyArray2<'_, f64>,
    lam: f64,
    shift: f64,
    w0: PyReadonlyArray1<'_, f64>,
) -> PyResult<Arrays5<'py>> {
    let sh = target.shape();
    let (h, d) = (sh[0], sh[1]);
    if gram.shape() != [h, d, d] {
        return Err(PyValueError::new_err(format!(
            "gram must be ({h}, {d}, {d})"
        )));
    }
    let (mut a, mut b, mut c) = (
        vec![0.0; h * d * d],
        vec![0.0; h * d * d],
        vec![0.0; h * d * d],
    );
    let (mut w, mut e) = (vec![0.0; h * d], vec![0.0; h]);
    practical::floored_release(
        contiguous("gram", gram.as_slice())?,
        contiguous("target", target.as_slice())?,
        d,
        lam,
        shift,
        contiguous("w0", w0.as_slice())?,
        Floored {
            design: &mut a,
            inverse: &mut b,
            inverse2: &mut c,
            weights: &mut w,
            correction: &mut e,
        },
    )
    .py_ok(py)?;
    Ok((
        a.into_pyarray(py).reshape([h, d, d])?,
        b.into_pyarray(py).reshape([h, d, d])?,
        c.into_pyarray(py).reshape([h, d, d])?,
        w.into_pyarray(py).reshape([h, d])?,
        e.into_pyarray(py),
    ))
}

/// UCRL-VTR+'s sigma-bar (H,) from X, X2 (H, d) and the two billboards
/// (crate::kernels::variance).
#[pyfunction]
#[pyo3(signature = (x, x2, hat_weights, hat_inverse, hat_gamma, tilde_weights, tilde_form, tilde_radius, beta_check))]
pub fn sigma_bar<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'_, f64>,
    x2: PyReadonlyArray2<'_, f64>,
    hat_weights: PyReadonlyArray2<'_, f64>,
    hat_inverse: PyReadonlyArray3<'_, f64>,
    hat_gamma: Option<PyReadonlyArray1<'_, f64>>,
    tilde_weights: PyReadonlyArray2<'_, f64>,
    tilde_form: PyReadonlyArray3<'_, f64>,
    tilde_radius: f64,
    beta_check: f64,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let sh = x.shape();
    let (h, d) = (sh[0], sh[1]);
    let gamma = match &hat_gamma {
        Some(g) => Some(contiguous("gamma", g.as_slice())?),
        None => None,
    };
    let inputs = VarianceInputs {
        d,
        hat_weights: contiguous("hat weights", hat_weights.as_slice())?,
        hat_inverse: contiguous("hat inverse", hat_inverse.as_slice())?,
        hat_gamma: gamma,
        tilde_weights: contiguous("tilde weights", tilde_weights.as_slice())?,
        tilde_form: contiguous("tilde form", tilde_form.as_slice())?,
        tilde_radius,
        beta_check,
    };
    let mut out = vec![0.0; h];
    variance::sigma_bar(
        &inputs,
        contiguous("X", x.as_slice())?,
        contiguous("X2", x2.as_slice())?,
        &mut out,
    )
    .py_ok(py)?;
    Ok(out.into_pyarray(py))
}

/// `(max |a_ij|, max |a_ij - a_ji|, i, j)` of a square matrix (crate::kernels::dense::symmetry_gap).
#[pyfunction]
pub fn symmetry_gap(a: PyReadonlyArray2<'_, f64>) -> PyResult<(f64, f64, usize, usize)> {
    let sh = a.shape();
    if sh[0] != sh[1] {
        return Err(PyValueError::new_err(format!(
            "a {} x {} matrix is not square",
            sh[0], sh[1]
        )));
    }
    Ok(match a.as_slice() {
        Ok(flat) => dense::symmetry_gap(flat, sh[0]),
        Err(_) => dense::symmetry_gap(&a.as_array().iter().copied().collect::<Vec<_>>(), sh[0]),
    })
}

/// The first of a (count, d, d) stack of matrices refused by the symmetry rule
/// `gap > rtol * scale` (crate::kernels::dense::first_asymmetric), as `(k, scale, gap, i, j)`,
/// or None: `privrl.common.checks.check_symmetric_stack`, one call for the whole stack.
#[pyfunction]
pub fn first_asymmetric(
    py: Python<'_>,
    a: PyReadonlyArray3<'_, f64>,
    rtol: f64,
) -> PyResult<Option<dense::Asymmetry>> {
    let sh = a.shape();
    if sh[1] != sh[2] {
        return Err(PyValueError::new_err(format!(
            "a stack of {} x {} matrices is not square",
            sh[1], sh[2]
        )));
    }
    let d = sh[1];
    Ok(match a.as_slice() {
        Ok(flat) if flat.len() > super::DETACH_WORK => {
            py.detach(|| dense::first_asymmetric(flat, d, rtol))
        }
        Ok(flat) => dense::first_asymmetric(flat, d, rtol),
        Err(_) => {
            dense::first_asymmetric(&a.as_array().iter().copied().collect::<Vec<_>>(), d, rtol)
        }
    })
}

/// max |a_i| over an array of any shape and layout, NaN when an entry is NaN
/// (crate::kernels::dense::max_abs): finite iff every entry is.
#[pyfunction]
pub fn max_abs(py: Python<'_>, a: PyReadonlyArrayDyn<'_, f64>) -> f64 {
    match a.as_slice() {
        Ok(flat) if flat.len() > super::DETACH_WORK => py.detach(|| dense::max_abs(flat)),
        Ok(flat) => dense::max_abs(flat),
        Err(_) => dense::max_abs_iter(a.as_array().iter()),
    }
}

/// `(min, max)` of a non-empty int64 vector in one pass (an agent's check of a trajectory's
/// state and action indices: numpy's x.min() and x.max() took 2.6 us of a 10.7 us observe).
#[pyfunction]
pub fn index_range(x: PyReadonlyArray1<'_, i64>) -> PyResult<(i64, i64)> {
    let a = x.as_array();
    let first = *a
        .first()
        .ok_or_else(|| PyValueError::new_err("index_range of an empty array"))?;
    Ok(a.iter()
        .fold((first, first), |(lo, hi), &v| (lo.min(v), hi.max(v))))
}

/// How often the policies handed to a run's users changed (`crate::agents::PolicyChanges`, the
/// rule of `Run.policy_changes`): `privrl.learn` shows it each user's (H, S) policy.
#[pyclass(module = "privrl._core", name = "PolicyChanges")]
#[derive(Default)]
pub struct PyPolicyChanges {
    inner: core::PolicyChanges<i64>,
}

#[pymethods]
impl PyPolicyChanges {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// Count `pi` if it differs from the last policy seen; whether it did.
    fn see(&mut self, pi: PyReadonlyArray2<'_, i64>) -> PyResult<bool> {
        let pi = pi
            .as_slice()
            .map_err(|_| PyValueError::new_err("policy must be a C-contiguous int64 array"))?;
        Ok(self.inner.see(pi))
    }

    /// Distinct consecutive policies seen.
    #[getter]
    fn count(&self) -> u64 {
        self.inner.count
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyPolicyChanges>()?;
    m.add_function(wrap_pyfunction!(index_range, m)?)?;
    m.add_function(wrap_pyfunction!(max_abs, m)?)?;
    m.add_function(wrap_pyfunction!(symmetry_gap, m)?)?;
    m.add_function(wrap_pyfunction!(first_asymmetric, m)?)?;
    m.add_function(wrap_pyfunction!(policy_values, m)?)?;
    m.add_function(wrap_pyfunction!(batched_matvec, m)?)?;
    m.add_function(wrap_pyfunction!(floored_release, m)?)?;
    m.add_function(wrap_pyfunction!(sigma_bar, m)?)?;
    Ok(())
}
