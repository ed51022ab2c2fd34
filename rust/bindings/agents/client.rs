//! Bindings of the LDP user side (`crate::agents::vtr::user`): the client a UCRL-VTR /
//! UCRL-VTR+ agent hands its arriving user (public values, its own noise streams), and the
//! message it sends back, numpy arrays (per regression the privatized grams and targets).

use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArray3, PyArray4, PyArrayMethods, PyReadonlyArray1,
    PyReadonlyArray3, PyReadonlyArray4, PyUntypedArrayMethods,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::pyclass::boolean_struct::False;
use pyo3::PyClass;

use super::super::{contiguous, reduced, seed32, IntoPy, Reduced};
use super::arrays::policy_array;
use super::run::trajectory;
use super::{state, state_mut, PyVtrAgent};
use crate::agents::vtr::user::{Message, VtrClient};
use crate::errors::CoreResult;

// ---------------------------------------------------------------- what every LDP client shares

/// A Python LDP client class (its core client in `inner`): what `reduce_client`, `key_client`
/// and `take_client_streams` need of it. Implemented by `py_client!`.
pub(in crate::bindings) trait PyClient: PyClass<Frozen = False> {
    /// The `_core` function that restores a pickled client.
    const RESTORE: &'static str;
    fn encode(&self) -> CoreResult<Vec<u8>>;
    fn key_streams(&mut self, seeds: &[[u8; 32]]) -> CoreResult<()>;
    fn take_streams_of(&mut self, other: &mut Self) -> CoreResult<()>;
}

/// `impl PyClient` for a client class whose core client (`key`, `take_streams`) is `inner`.
macro_rules! py_client {
    ($class:ty, $restore:literal) => {
        impl $crate::bindings::agents::PyClient for $class {
            const RESTORE: &'static str = $restore;
            fn encode(&self) -> $crate::errors::CoreResult<Vec<u8>> {
                $crate::state::encode(&self.inner)
            }
            fn key_streams(&mut self, seeds: &[[u8; 32]]) -> $crate::errors::CoreResult<()> {
                self.inner.key(seeds)
            }
            fn take_streams_of(&mut self, other: &mut Self) -> $crate::errors::CoreResult<()> {
                self.inner.take_streams(&mut other.inner)
            }
        }
    };
}
pub(in crate::bindings) use py_client;

/// `__reduce__` of an LDP client: (its `RESTORE` function, (the core's bytes,)).
pub(in crate::bindings) fn reduce_client<'py, T: PyClient>(
    slf: &Bound<'_, T>,
    py: Python<'py>,
) -> PyResult<Reduced<'py>> {
    let this = state(slf)?;
    reduced(py, T::RESTORE, None, this.encode())
}

/// `key` of an LDP client: its streams keyed from 32-byte seeds.
pub(in crate::bindings) fn key_client<T: PyClient>(
    slf: &Bound<'_, T>,
    py: Python<'_>,
    seeds: Vec<Vec<u8>>,
) -> PyResult<()> {
    let mut this = state_mut(slf)?;
    let seeds = seeds
        .into_iter()
        .map(seed32)
        .collect::<PyResult<Vec<_>>>()?;
    this.key_streams(&seeds).py_ok(py)
}

/// `take_streams` of an LDP client: it continues `other`'s streams (which `other` gives up).
pub(in crate::bindings) fn take_client_streams<T: PyClient>(
    slf: &Bound<'_, T>,
    py: Python<'_>,
    other: &Bound<'_, T>,
) -> PyResult<()> {
    if slf.as_any().is(other.as_any()) {
        return Err(PyValueError::new_err(
            "a client cannot take its own streams",
        ));
    }
    let mut this = state_mut(slf)?;
    let mut that = state_mut(other)?;
    this.take_streams_of(&mut that).py_ok(py)
}

// ---------------------------------------------------------------- UCRL-VTR's client

/// A message as numpy arrays: grams (n, H, d, d), targets (n, H, d), n the regressions.
pub(super) type MessageOut<'py> = (Bound<'py, PyArray4<f64>>, Bound<'py, PyArray3<f64>>);

fn message_out<'py>(py: Python<'py>, m: Message, h: usize, d: usize) -> PyResult<MessageOut<'py>> {
    let n = m.len();
    let (mut g, mut t) = (
        Vec::with_capacity(n * h * d * d),
        Vec::with_capacity(n * h * d),
    );
    for (mg, mt) in m {
        g.extend_from_slice(&mg);
        t.extend_from_slice(&mt);
    }
    Ok((
        g.into_pyarray(py).reshape([n, h, d, d])?,
        t.into_pyarray(py).reshape([n, h, d])?,
    ))
}

/// The LDP user side of one UCRL-VTR / UCRL-VTR+ user (`crate::agents::vtr::user::VtrClient`).
#[pyclass(module = "privrl._core", name = "VtrClient")]
pub struct PyVtrClient {
    inner: VtrClient,
}

py_client!(PyVtrClient, "_restore_vtr_client");

#[pymethods]
impl PyVtrClient {
    fn __reduce__<'py>(slf: &Bound<'_, Self>, py: Python<'py>) -> PyResult<Reduced<'py>> {
        reduce_client(slf, py)
    }

    /// Key the randomizers: 2 x 32 bytes (matrix, vector) per regression.
    fn key(slf: &Bound<'_, Self>, py: Python<'_>, seeds: Vec<Vec<u8>>) -> PyResult<()> {
        key_client(slf, py, seeds)
    }

    /// This client continues `other`'s streams (which `other` gives up).
    fn take_streams(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        other: &Bound<'_, PyVtrClient>,
    ) -> PyResult<()> {
        take_client_streams(slf, py, other)
    }

    /// The message of the user's trajectory: (grams (n, H, d, d), targets (n, H, d)).
    fn privatize<'py>(
        slf: &Bound<'_, Self>,
        py: Python<'py>,
        states: PyReadonlyArray1<'_, i64>,
        actions: PyReadonlyArray1<'_, i64>,
        rewards: PyReadonlyArray1<'_, f64>,
    ) -> PyResult<MessageOut<'py>> {
        let mut this = state_mut(slf)?;
        let c = &mut this.inner;
        let t = trajectory(states, actions, rewards, c.h, c.s, c.a)?;
        let m = c.privatize(&t).py_ok(py)?;
        message_out(py, m, c.h, c.d)
    }

    /// The user's policy (H, S), planned by the agent on the billboard.
    fn policy<'py>(slf: &Bound<'_, Self>, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<i64>>> {
        let this = state(slf)?;
        policy_array(py, &this.inner.pi, this.inner.h, this.inner.s)
    }

    /// The user's planned values V_h(s) (H + 1, S).
    fn values<'py>(slf: &Bound<'_, Self>, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let this = state(slf)?;
        let (h, s) = (this.inner.h, this.inner.s);
        this.inner.v.clone().into_pyarray(py).reshape([h + 1, s])
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
        Ok(state(slf)?.inner.clips())
    }

    #[getter]
    fn last_sigma_bar<'py>(
        slf: &Bound<'_, Self>,
        py: Python<'py>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        Ok(state(slf)?.inner.last_sigma_bar.clone().into_pyarray(py))
    }
}

/// `VtrAgent.ldp_client`: the arriving user's client, no stream keyed.
pub(super) fn ldp_client(py: Python<'_>, agent: &Bound<'_, PyVtrAgent>) -> PyResult<PyVtrClient> {
    let mut this = state_mut(agent)?;
    let inner = this.inner.client().py_ok(py)?;
    Ok(PyVtrClient { inner })
}

/// `VtrAgent.receive`: one message (grams (n, H, d, d), targets (n, H, d)), built on billboard
/// `release`.
pub(super) fn receive(
    py: Python<'_>,
    agent: &Bound<'_, PyVtrAgent>,
    release: u64,
    grams: PyReadonlyArray4<'_, f64>,
    targets: PyReadonlyArray3<'_, f64>,
) -> PyResult<()> {
    let mut this = state_mut(agent)?;
    let (h, d) = (this.inner.h, this.inner.d);
    let n = grams.shape()[0];
    if grams.shape() != [n, h, d, d] || targets.shape() != [n, h, d] {
        return Err(PyValueError::new_err(format!(
            "a message of this agent is grams (n, {h}, {d}, {d}) and targets (n, {h}, {d}), got \
             {:?} and {:?}",
            grams.shape(),
            targets.shape()
        )));
    }
    let (g, t) = (
        contiguous("grams", grams.as_slice())?,
        contiguous("targets", targets.as_slice())?,
    );
    let message: Message = g
        .chunks_exact(h * d * d)
        .zip(t.chunks_exact(h * d))
        .map(|(g, t)| (g.to_vec(), t.to_vec()))
        .collect();
    this.inner.receive(release, &message).py_ok(py)
}

#[pyfunction]
fn _restore_vtr_client(py: Python<'_>, state: &[u8]) -> PyResult<PyVtrClient> {
    let inner: VtrClient = crate::state::decode("UCRL-VTR client", state).py_ok(py)?;
    inner.check_restored().py_ok(py)?;
    Ok(PyVtrClient { inner })
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyVtrClient>()?;
    m.add_function(wrap_pyfunction!(_restore_vtr_client, m)?)?;
    Ok(())
}
