//! The numpy arrays the agent bindings return: policies (H, S) and per-step matrices.

use numpy::{IntoPyArray, PyArray2, PyArray3, PyArrayMethods};
use pyo3::prelude::*;

/// A policy (H x S, row-major) as an (H, S) int64 array.
pub(super) fn policy_array<'py>(
    py: Python<'py>,
    pi: &[usize],
    h: usize,
    s: usize,
) -> PyResult<Bound<'py, PyArray2<i64>>> {
    let v: Vec<i64> = pi.iter().map(|&a| a as i64).collect();
    v.into_pyarray(py).reshape([h, s])
}

pub(super) fn mat3<'py>(
    py: Python<'py>,
    v: &[f64],
    h: usize,
    d: usize,
) -> PyResult<Bound<'py, PyArray3<f64>>> {
    v.to_vec().into_pyarray(py).reshape([h, d, d])
}

pub(super) fn mat2<'py>(
    py: Python<'py>,
    v: &[f64],
    h: usize,
    d: usize,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    v.to_vec().into_pyarray(py).reshape([h, d])
}
