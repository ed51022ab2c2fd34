//! The NoiseStream binding: i.i.d. noise batches and the LDP randomizer's messages.

use numpy::{IntoPyArray, PyArray2, PyArrayMethods, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::{contiguous, parse_noise, reduced, seed32, to_pyerr, IntoPy, Reduced};
use crate::errors::CoreError;
use crate::noise::{NodeShape, NoiseStream as CoreStream, DEFAULT_GRID_BITS};

/// Largest (count, n) noise batch one NoiseStream call returns: 2^28 entries (2 GiB of f64).
const MAX_BATCH_ENTRIES: usize = 1 << 28;

/// Entries of a (count, n) noise batch, refused (not allocated) above MAX_BATCH_ENTRIES: a
/// wrapped product or an allocation failure would abort the interpreter.
fn batch_len(py: Python<'_>, count: usize, n: usize) -> PyResult<usize> {
    match count.checked_mul(n) {
        Some(len) if len <= MAX_BATCH_ENTRIES => Ok(len),
        _ => Err(to_pyerr(
            py,
            CoreError::Shape(format!(
                "a batch of {count} noise draws of {n} entries exceeds the limit of 2^28 entries"
            )),
        )),
    }
}

/// A ChaCha12 privacy-noise stream of Gaussian / Laplace vectors and symmetric matrices.
#[pyclass(module = "privrl._core", name = "NoiseStream")]
pub struct PyNoiseStream {
    pub(crate) inner: CoreStream,
}

#[pymethods]
impl PyNoiseStream {
    /// Pickling: the exact state as bytes (privrl's save / load, copy.deepcopy).
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Reduced<'py>> {
        reduced(
            py,
            "_restore_noise_stream",
            None,
            crate::state::encode(&self.inner),
        )
    }
    #[new]
    #[pyo3(signature = (noise, scale, seed, grid_bits=DEFAULT_GRID_BITS))]
    fn new(
        py: Python<'_>,
        noise: &str,
        scale: f64,
        seed: Vec<u8>,
        grid_bits: u32,
    ) -> PyResult<Self> {
        let n = parse_noise(noise, scale, grid_bits)?;
        Ok(PyNoiseStream {
            inner: CoreStream::new(n, seed32(seed)?).py_ok(py)?,
        })
    }

    /// `count` independent noise vectors of length n, as a (count, n) array.
    fn vectors<'py>(
        &mut self,
        py: Python<'py>,
        count: usize,
        n: usize,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        NodeShape::Vector(n).validate().py_ok(py)?;
        let mut out = vec![0.0; batch_len(py, count, n)?];
        for c in out.chunks_exact_mut(n.max(1)).take(count) {
            self.inner.fill(NodeShape::Vector(n), c).py_ok(py)?;
        }
        out.into_pyarray(py).reshape([count, n])
    }

    /// `count` independent symmetric (Z' + Z'^T)/divisor matrices, as a (count, d*d) array.
    fn symmetric<'py>(
        &mut self,
        py: Python<'py>,
        count: usize,
        d: usize,
        divisor: f64,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        if !(divisor.is_finite() && divisor > 0.0) {
            return Err(PyValueError::new_err(format!(
                "divisor must be finite and > 0, got {divisor}"
            )));
        }
        let shape = NodeShape::SymMatrix { d, divisor };
        shape.validate().py_ok(py)?;
        let mut out = vec![0.0; batch_len(py, count, d * d)?];
        for c in out.chunks_exact_mut((d * d).max(1)).take(count) {
            self.inner
                .fill(NodeShape::SymMatrix { d, divisor }, c)
                .py_ok(py)?;
        }
        out.into_pyarray(py).reshape([count, d * d])
    }

    /// The randomizer's messages for a (count, n) block of vectors (divisor None) or a
    /// (count, d*d) block of symmetric matrices: `data + noise`, on the lattice for a discrete
    /// sampler (data rounded, integer noise added, one scaling). Draws like `vectors` /
    /// `symmetric`.
    #[pyo3(signature = (data, divisor=None))]
    fn privatize<'py>(
        &mut self,
        py: Python<'py>,
        data: PyReadonlyArray2<'py, f64>,
        divisor: Option<f64>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let (count, n) = (data.shape()[0], data.shape()[1]);
        let shape = match divisor {
            None => NodeShape::Vector(n),
            Some(c) => {
                let d = (n as f64).sqrt().round() as usize;
                if d * d != n {
                    return Err(PyValueError::new_err(format!(
                        "symmetric messages need d*d columns, got {n}"
                    )));
                }
                NodeShape::SymMatrix { d, divisor: c }
            }
        };
        shape.validate().py_ok(py)?;
        let mut out = contiguous("data", data.as_slice())?.to_vec();
        let mut scratch = vec![0.0; n];
        for c in out.chunks_exact_mut(n.max(1)).take(count) {
            self.inner.privatize(shape, c, &mut scratch).py_ok(py)?;
        }
        out.into_pyarray(py).reshape([count, n])
    }

    /// The lattice unit of this stream's vectors (divisor None) or symmetric matrices, in data
    /// units (None for continuous noise): the sampler's own rule (`NodeNoise::lattice_unit`), so
    /// a divisor it refuses is refused here too.
    #[pyo3(signature = (divisor=None))]
    fn lattice_unit(&self, py: Python<'_>, divisor: Option<f64>) -> PyResult<Option<f64>> {
        let shape = match divisor {
            None => NodeShape::Vector(1),
            Some(divisor) => NodeShape::SymMatrix { d: 1, divisor },
        };
        shape.validate().py_ok(py)?;
        self.inner.noise().lattice_unit(shape).py_ok(py)
    }

    #[getter]
    fn draws(&self) -> u64 {
        self.inner.draws()
    }
}

/// Rebuild a pickled NoiseStream.
#[pyfunction]
pub(super) fn _restore_noise_stream(py: Python<'_>, state: &[u8]) -> PyResult<PyNoiseStream> {
    let inner: CoreStream = crate::state::decode("noise stream", state).py_ok(py)?;
    // checked as when built: an edited grid_bits = 255 hung the discrete sampler
    inner.noise().validate().py_ok(py)?;
    Ok(PyNoiseStream { inner })
}
