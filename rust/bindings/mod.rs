//! The one PyO3 binding module: converts numpy views to slices (no copy), calls the pure
//! kernels, returns owned arrays, and maps `CoreError` onto `privrl.exceptions`.
//! Calls that may run longer than ~100 us release the GIL.

use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArrayDyn, PyArrayMethods, PyReadonlyArray1,
    PyReadonlyArray2, PyReadonlyArray3, PyReadonlyArrayDyn, PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple};

use crate::continual::{
    make_mechanism, MechanismKind, PrefixMechanism, TreeAggregator as CoreTree,
    DEFAULT_BLT_BUFFERS, MAX_BLT_BUFFERS, MAX_COEFFICIENTS, MAX_FACTORIZATION_CAPACITY,
};
use crate::errors::CoreError;
use crate::kernels::mixture::MixtureFeatures as CoreMixture;
use crate::kernels::qeval::{group_max as core_group_max, OptimisticQ, TieBreak};
use crate::kernels::rank_one::{self, ShermanMorrison as CoreSM};
use crate::kernels::values;
use crate::noise::{
    NodeNoise, NodeShape, DEFAULT_GRID_BITS, MAX_GRID_BITS, MAX_NODE_LEN, NOISE_NAMES,
};

mod agents;
mod bandit;
mod kernels;
mod noise;
mod specs;
pub(crate) use noise::PyNoiseStream;

type F64Array1<'py> = Bound<'py, PyArray1<f64>>;
type I64Array1<'py> = Bound<'py, PyArray1<i64>>;

/// Work (in multiply-adds) above which a kernel releases the GIL.
const DETACH_WORK: usize = 50_000;

fn to_pyerr(py: Python<'_>, e: CoreError) -> PyErr {
    let (class, msg) = match &e {
        CoreError::Shape(m) => ("ShapeError", m),
        CoreError::NonFinite(m) => ("NonFiniteError", m),
        CoreError::NotPositiveDefinite(m) => ("NotPositiveDefiniteError", m),
        CoreError::InvalidParameter(m) => ("PrivacyParameterError", m),
        CoreError::Capacity(m) => ("CapacityError", m),
        CoreError::Assumption(m) => ("AssumptionError", m),
    };
    let built = py
        .import("privrl.common.errors")
        .and_then(|m| m.getattr(class))
        .and_then(|c| c.call1((msg.clone(),)));
    match built {
        Ok(obj) => PyErr::from_value(obj),
        Err(_) => PyValueError::new_err(msg.clone()),
    }
}

trait IntoPy<T> {
    fn py_ok(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, CoreError> {
    fn py_ok(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_pyerr(py, e))
    }
}

type Reduced<'py> = (Bound<'py, PyAny>, Bound<'py, PyTuple>);

/// `__reduce__`: (the `_core` function `restore`, (leading args..., the state's bytes)).
fn reduced<'py>(
    py: Python<'py>,
    restore: &str,
    lead: Option<&str>,
    state: Result<Vec<u8>, CoreError>,
) -> PyResult<Reduced<'py>> {
    let f = py.import("privrl._core")?.getattr(restore)?;
    let bytes = PyBytes::new(py, &state.py_ok(py)?).into_any();
    let args = match lead {
        Some(l) => PyTuple::new(py, [PyString::new(py, l).into_any(), bytes])?,
        None => PyTuple::new(py, [bytes])?,
    };
    Ok((f, args))
}

fn contiguous<'a>(what: &str, s: Result<&'a [f64], numpy::AsSliceError>) -> PyResult<&'a [f64]> {
    s.map_err(|_| PyValueError::new_err(format!("{what} must be a C-contiguous float64 array")))
}

fn seed32(seed: Vec<u8>) -> PyResult<[u8; 32]> {
    seed.try_into().map_err(|v: Vec<u8>| {
        PyValueError::new_err(format!("seed must be 32 bytes, got {}", v.len()))
    })
}

// ---------------------------------------------------------------- rank-one updates

/// Lambda = lam I + sum x x^T with its Sherman–Morrison inverse.
#[pyclass(module = "privrl._core", name = "ShermanMorrison")]
pub struct PySM {
    pub(crate) inner: CoreSM,
}

#[pymethods]
impl PySM {
    /// Pickling: the exact state as bytes (privrl's save / load, copy.deepcopy).
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Reduced<'py>> {
        reduced(py, "_restore_sm", None, crate::state::encode(&self.inner))
    }
    #[new]
    #[pyo3(signature = (d, lam, refactor_every=1024))]
    fn new(py: Python<'_>, d: usize, lam: f64, refactor_every: usize) -> PyResult<Self> {
        Ok(PySM {
            inner: CoreSM::new(d, lam, refactor_every).py_ok(py)?,
        })
    }

    fn update(&mut self, py: Python<'_>, x: PyReadonlyArray1<'_, f64>) -> PyResult<()> {
        let s = contiguous("x", x.as_slice())?;
        self.inner.update(s).py_ok(py)
    }

    /// Rows of a (n, d) block.
    fn update_batch(&mut self, py: Python<'_>, xs: PyReadonlyArray2<'_, f64>) -> PyResult<()> {
        let shape = xs.shape();
        if shape[1] != self.inner.dim() {
            return Err(to_pyerr(
                py,
                CoreError::Shape(format!(
                    "update_batch: expected (n, {}) features, got {:?}",
                    self.inner.dim(),
                    shape
                )),
            ));
        }
        let s = contiguous("xs", xs.as_slice())?;
        let work = s.len() * self.inner.dim();
        let inner = &mut self.inner;
        let r = if work > DETACH_WORK {
            py.detach(|| inner.update_batch(s))
        } else {
            inner.update_batch(s)
        };
        r.py_ok(py)
    }

    fn refactorize(&mut self) {
        self.inner.refactorize()
    }

    fn matrix<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let d = self.inner.dim();
        self.inner
            .matrix()
            .to_vec()
            .into_pyarray(py)
            .reshape([d, d])
    }

    fn inverse<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let d = self.inner.dim();
        self.inner
            .inverse()
            .to_vec()
            .into_pyarray(py)
            .reshape([d, d])
    }

    fn solve<'py>(
        &self,
        py: Python<'py>,
        u: PyReadonlyArray1<'_, f64>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let s = contiguous("u", u.as_slice())?;
        Ok(self.inner.solve(s).py_ok(py)?.into_pyarray(py))
    }

    fn inverse_error(&self) -> f64 {
        self.inner.inverse_error()
    }

    #[getter]
    fn updates(&self) -> u64 {
        self.inner.updates()
    }
    #[getter]
    fn lam(&self) -> f64 {
        self.inner.lam()
    }
}

fn square(py: Python<'_>, what: &str, a: &PyReadonlyArray2<'_, f64>) -> PyResult<usize> {
    let sh = a.shape();
    if sh[0] != sh[1] || sh[0] == 0 {
        return Err(to_pyerr(
            py,
            CoreError::Shape(format!("{what} must be a square (d, d) matrix, got {sh:?}")),
        ));
    }
    Ok(sh[0])
}

#[pyfunction]
fn spd_inverse<'py>(
    py: Python<'py>,
    a: PyReadonlyArray2<'_, f64>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let d = square(py, "matrix", &a)?;
    let s = contiguous("matrix", a.as_slice())?;
    let inv = if d > 40 {
        py.detach(|| rank_one::spd_inverse(s, d))
    } else {
        rank_one::spd_inverse(s, d)
    };
    inv.py_ok(py)?.into_pyarray(py).reshape([d, d])
}

#[pyfunction]
fn spd_solve<'py>(
    py: Python<'py>,
    a: PyReadonlyArray2<'_, f64>,
    b: PyReadonlyArray1<'_, f64>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let d = square(py, "matrix", &a)?;
    let s = contiguous("matrix", a.as_slice())?;
    let bs = contiguous("b", b.as_slice())?;
    Ok(rank_one::spd_solve(s, d, bs).py_ok(py)?.into_pyarray(py))
}

#[pyfunction]
fn min_eigenvalue(py: Python<'_>, a: PyReadonlyArray2<'_, f64>) -> PyResult<f64> {
    let d = square(py, "matrix", &a)?;
    let s = contiguous("matrix", a.as_slice())?;
    rank_one::min_eigenvalue(s, d).py_ok(py)
}

// ---------------------------------------------------------------- batched Q

fn eval_q(
    py: Python<'_>,
    phi: &PyReadonlyArray2<'_, f64>,
    w: &PyReadonlyArray1<'_, f64>,
    inv: &PyReadonlyArray2<'_, f64>,
    beta: f64,
    lower: f64,
    upper: f64,
    offset: &Option<PyReadonlyArray1<'_, f64>>,
) -> PyResult<Vec<f64>> {
    let sh = phi.shape();
    let (n, d) = (sh[0], sh[1]);
    let ish = inv.shape();
    if ish != [d, d] {
        return Err(to_pyerr(
            py,
            CoreError::Shape(format!(
                "inverse must be ({d}, {d}) to match phi {sh:?}, got {ish:?}"
            )),
        ));
    }
    let phis = contiguous("phi", phi.as_slice())?;
    let ws = contiguous("w", w.as_slice())?;
    let invs = contiguous("inverse", inv.as_slice())?;
    let off = match offset {
        Some(o) => Some(contiguous("offset", o.as_slice())?),
        None => None,
    };
    let q = OptimisticQ {
        d,
        w: ws,
        inv: invs,
        beta,
        lower,
        upper,
    };
    let mut out = vec![0.0; n];
    let r = if n * d * d > DETACH_WORK {
        py.detach(|| q.evaluate(phis, off, &mut out))
    } else {
        q.evaluate(phis, off, &mut out)
    };
    r.py_ok(py)?;
    Ok(out)
}

fn tie_rule(seed: Option<u64>) -> TieBreak {
    seed.map_or(TieBreak::Lowest, TieBreak::Random)
}

/// clip_[lower, upper](offset + phi w + beta ||phi||_{inv}) for every row of phi (n, d).
#[pyfunction]
#[pyo3(signature = (phi, w, inv, beta, lower, upper, offset=None))]
fn optimistic_q<'py>(
    py: Python<'py>,
    phi: PyReadonlyArray2<'_, f64>,
    w: PyReadonlyArray1<'_, f64>,
    inv: PyReadonlyArray2<'_, f64>,
    beta: f64,
    lower: f64,
    upper: f64,
    offset: Option<PyReadonlyArray1<'_, f64>>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    Ok(eval_q(py, &phi, &w, &inv, beta, lower, upper, &offset)?.into_pyarray(py))
}

/// Row-wise max and argmax of q (n_states, n_actions); random ties from tie_seed, else lowest.
#[pyfunction]
#[pyo3(signature = (q, tie_seed=None))]
fn group_max<'py>(
    py: Python<'py>,
    q: PyReadonlyArray2<'_, f64>,
    tie_seed: Option<u64>,
) -> PyResult<(F64Array1<'py>, I64Array1<'py>)> {
    let sh = q.shape();
    let qs = contiguous("q", q.as_slice())?;
    let (v, a) = run_group_max(py, qs, sh[0], sh[1], tie_seed)?;
    Ok((v.into_pyarray(py), a.into_pyarray(py)))
}

fn run_group_max(
    py: Python<'_>,
    q: &[f64],
    n: usize,
    a: usize,
    seed: Option<u64>,
) -> PyResult<(Vec<f64>, Vec<i64>)> {
    let mut v = vec![0.0; n];
    let mut arg = vec![0usize; n];
    core_group_max(q, a, tie_rule(seed), &mut v, &mut arg).py_ok(py)?;
    Ok((v, arg.into_iter().map(|x| x as i64).collect()))
}

/// Fused: Q for all rows of phi (n_states * n_actions, d), then per-state max / argmax.
/// Returns (Q (n_states, n_actions), V (n_states,), greedy action (n_states,)).
#[pyfunction]
#[pyo3(signature = (phi, w, inv, beta, n_actions, lower, upper, offset=None, tie_seed=None))]
fn optimistic_values<'py>(
    py: Python<'py>,
    phi: PyReadonlyArray2<'_, f64>,
    w: PyReadonlyArray1<'_, f64>,
    inv: PyReadonlyArray2<'_, f64>,
    beta: f64,
    n_actions: usize,
    lower: f64,
    upper: f64,
    offset: Option<PyReadonlyArray1<'_, f64>>,
    tie_seed: Option<u64>,
) -> PyResult<(Bound<'py, PyArray2<f64>>, F64Array1<'py>, I64Array1<'py>)> {
    let q = eval_q(py, &phi, &w, &inv, beta, lower, upper, &offset)?;
    if n_actions == 0 || q.len() % n_actions != 0 {
        return Err(to_pyerr(
            py,
            CoreError::Shape(format!(
                "{} rows do not split into groups of {n_actions} actions",
                q.len()
            )),
        ));
    }
    let n = q.len() / n_actions;
    let (v, a) = run_group_max(py, &q, n, n_actions, tie_seed)?;
    Ok((
        q.into_pyarray(py).reshape([n, n_actions])?,
        v.into_pyarray(py),
        a.into_pyarray(py),
    ))
}

/// V(s) = clip(max_a phi(s,a) w + beta ||phi(s,a)||_{inv}) for the states listed in `states`
/// (int64 indices into the table's groups of n_actions rows), or for every state if None.
#[pyfunction]
#[pyo3(signature = (table, w, inv, beta, n_actions, lower, upper, states=None))]
fn state_values<'py>(
    py: Python<'py>,
    table: PyReadonlyArray2<'_, f64>,
    w: PyReadonlyArray1<'_, f64>,
    inv: PyReadonlyArray2<'_, f64>,
    beta: f64,
    n_actions: usize,
    lower: f64,
    upper: f64,
    states: Option<PyReadonlyArray1<'_, i64>>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let sh = table.shape();
    let d = sh[1];
    let ish = inv.shape();
    if ish != [d, d] {
        return Err(to_pyerr(
            py,
            CoreError::Shape(format!(
                "inverse must be ({d}, {d}) to match the table {sh:?}, got {ish:?}"
            )),
        ));
    }
    let ts = contiguous("table", table.as_slice())?;
    let ws = contiguous("w", w.as_slice())?;
    let invs = contiguous("inverse", inv.as_slice())?;
    let idx = match &states {
        Some(s) => Some(
            s.as_slice()
                .map_err(|_| PyValueError::new_err("states must be a C-contiguous int64 array"))?,
        ),
        None => None,
    };
    let n = match idx {
        Some(i) => i.len(),
        None if n_actions > 0 => sh[0] / n_actions,
        None => 0,
    };
    let q = OptimisticQ {
        d,
        w: ws,
        inv: invs,
        beta,
        lower,
        upper,
    };
    let mut out = vec![0.0; n];
    let r = if n * n_actions.max(1) * d * d > DETACH_WORK {
        py.detach(|| values::state_values(&q, ts, n_actions, idx, &mut out))
    } else {
        values::state_values(&q, ts, n_actions, idx, &mut out)
    };
    r.py_ok(py)?;
    Ok(out.into_pyarray(py))
}

// ---------------------------------------------------------------- mixture features

/// Sparse linear-mixture features phi(s'|s,a); phi_v(v) for all (s,a) rows.
#[pyclass(module = "privrl._core", name = "MixtureFeatures")]
pub struct PyMixture {
    pub(crate) inner: CoreMixture,
}

#[pymethods]
impl PyMixture {
    /// Pickling: the exact state as bytes (privrl's save / load, copy.deepcopy).
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Reduced<'py>> {
        reduced(
            py,
            "_restore_mixture",
            None,
            crate::state::encode(&self.inner),
        )
    }
    /// dense: (S*A, S, d) float64.
    #[new]
    fn new(py: Python<'_>, dense: PyReadonlyArray3<'_, f64>) -> PyResult<Self> {
        let sh = dense.shape();
        let s = contiguous("features", dense.as_slice())?;
        Ok(PyMixture {
            inner: CoreMixture::from_dense(s, sh[0], sh[1], sh[2]).py_ok(py)?,
        })
    }

    /// (S*A, d) array of phi_v(s, a).
    fn phi_v<'py>(
        &self,
        py: Python<'py>,
        v: PyReadonlyArray1<'_, f64>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let vs = contiguous("v", v.as_slice())?;
        let mut out = vec![0.0; self.inner.n_rows() * self.inner.dim()];
        self.inner.phi_v(vs, &mut out).py_ok(py)?;
        out.into_pyarray(py)
            .reshape([self.inner.n_rows(), self.inner.dim()])
    }

    /// (n, d) array: row i is phi_{v_i}(rows_i) for v (n, S) and int64 rows (n,) (UCRL-VTR+'s
    /// phi_{V^2} at the visited pairs).
    fn phi_v_rows<'py>(
        &self,
        py: Python<'py>,
        v: PyReadonlyArray2<'_, f64>,
        rows: PyReadonlyArray1<'_, i64>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let vs = contiguous("v", v.as_slice())?;
        let rs = rows
            .as_slice()
            .map_err(|_| PyValueError::new_err("rows must be a contiguous int64 array"))?;
        let (n, d, s) = (rs.len(), self.inner.dim(), self.inner.n_states());
        crate::errors::check_len("values", vs.len(), n * s).py_ok(py)?;
        let mut out = vec![0.0; n * d];
        for (i, &r) in rs.iter().enumerate() {
            let r = usize::try_from(r).map_err(|_| PyValueError::new_err("negative row"))?;
            crate::errors::check_finite("value vector", &vs[i * s..(i + 1) * s]).py_ok(py)?;
            self.inner
                .phi_v_row(r, &vs[i * s..(i + 1) * s], &mut out[i * d..(i + 1) * d])
                .py_ok(py)?;
        }
        out.into_pyarray(py).reshape([n, d])
    }

    #[getter]
    fn nnz(&self) -> usize {
        self.inner.nnz()
    }
}

// ---------------------------------------------------------------- continual release

/// Any continual-release mechanism ("tree", "honaker", "factorization", "blt") behind one
/// interface. Use privrl.kernels.PrefixMechanism / TreeAggregator (the "tree" kind).
#[pyclass(module = "privrl._core", name = "PrefixMechanism")]
pub struct PyPrefix {
    pub(crate) inner: Box<dyn PrefixMechanism>,
}

impl PyPrefix {
    /// Push with the GIL released when the step is long (the exact factorization does O(t)
    /// work per leaf).
    fn push_slice(&mut self, py: Python<'_>, leaf: Option<&[f64]>) -> PyResult<()> {
        if let Some(s) = leaf {
            crate::continual::check_leaf_sum(self.inner.as_ref(), s).py_ok(py)?;
        }
        let long = self.inner.push_cost() > DETACH_WORK as u64;
        let inner = &mut self.inner;
        let mut step = || match leaf {
            Some(s) => inner.push(s),
            None => inner.push_zero(),
        };
        let r = if long { py.detach(step) } else { step() };
        r.py_ok(py)
    }

    fn release_vec(&self, py: Python<'_>) -> PyResult<Vec<f64>> {
        let mut out = vec![0.0; self.inner.shape().len()];
        self.inner.release_into(&mut out).py_ok(py)?;
        // finite leaves whose sum (or sum plus noise) leaves the float range
        crate::errors::check_finite("release (the leaves' sum exceeds the float range)", &out)
            .py_ok(py)?;
        Ok(out)
    }
}

#[pymethods]
impl PyPrefix {
    /// Pickling: the kind and the exact state as bytes (privrl's save / load, copy.deepcopy).
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Reduced<'py>> {
        reduced(
            py,
            "_restore_prefix",
            Some(self.inner.kind().name()),
            self.inner.to_state(),
        )
    }
    #[new]
    #[pyo3(signature = (kind, symmetric, size, capacity, noise, scale, seed, divisor=std::f64::consts::SQRT_2, grid_bits=DEFAULT_GRID_BITS, buffers=0, keep_last_node=false))]
    fn new(
        py: Python<'_>,
        kind: &str,
        symmetric: bool,
        size: usize,
        capacity: u64,
        noise: &str,
        scale: f64,
        seed: Vec<u8>,
        divisor: f64,
        grid_bits: u32,
        buffers: usize,
        keep_last_node: bool,
    ) -> PyResult<Self> {
        let kind = MechanismKind::parse(kind, buffers).py_ok(py)?;
        let noise = parse_noise(noise, scale, grid_bits)?;
        let shape = if symmetric {
            NodeShape::SymMatrix { d: size, divisor }
        } else {
            NodeShape::Vector(size)
        };
        let seed = seed32(seed)?;
        let inner: Box<dyn PrefixMechanism> = match kind {
            MechanismKind::Tree => {
                let mut tree = CoreTree::new(shape, noise, capacity, seed).py_ok(py)?;
                tree.set_keep_last_node(keep_last_node);
                Box::new(tree)
            }
            _ if keep_last_node => {
                return Err(PyValueError::new_err(format!(
                    "keep_last_node applies to kind 'tree' only, not {:?}",
                    kind.name()
                )))
            }
            _ => make_mechanism(kind, shape, noise, capacity, seed).py_ok(py)?,
        };
        Ok(PyPrefix { inner })
    }

    /// Add one leaf (flat values, row-major for matrices).
    fn push(&mut self, py: Python<'_>, leaf: PyReadonlyArray1<'_, f64>) -> PyResult<()> {
        self.push_slice(py, Some(contiguous("leaf", leaf.as_slice())?))
    }

    fn push_zero(&mut self, py: Python<'_>) -> PyResult<()> {
        self.push_slice(py, None)
    }

    /// Push one leaf (any C-contiguous float64 array of the mechanism's size, e.g. (d, d)) and
    /// return the new release shaped like the leaf, in one call: the per-step use.
    fn push_release<'py>(
        &mut self,
        py: Python<'py>,
        leaf: PyReadonlyArrayDyn<'_, f64>,
    ) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
        self.push_slice(py, Some(contiguous("leaf", leaf.as_slice())?))?;
        let shape = leaf.shape().to_vec();
        self.release_vec(py)?.into_pyarray(py).reshape(shape)
    }

    fn release<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        Ok(self.release_vec(py)?.into_pyarray(py))
    }

    fn noise<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let mut out = vec![0.0; self.inner.shape().len()];
        self.inner.noise_into(&mut out).py_ok(py)?;
        Ok(out.into_pyarray(py))
    }

    fn exact_sum<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.inner.exact_sum().into_pyarray(py)
    }

    fn release_variance(&self) -> (f64, f64) {
        self.inner.release_variance()
    }

    fn step_variance(&self, t: u64) -> (f64, f64) {
        self.inner.step_variance(t)
    }

    fn variance_factor(&self, t: u64) -> f64 {
        self.inner.variance_factor(t)
    }

    fn max_variance_factor(&self) -> f64 {
        self.inner.max_variance_factor()
    }

    fn variance_profile<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        Ok(self.inner.variance_profile().py_ok(py)?.into_pyarray(py))
    }

    fn leaf_coefficients<'py>(
        &self,
        py: Python<'py>,
        leaf: u64,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        Ok(self
            .inner
            .leaf_coefficients(leaf)
            .py_ok(py)?
            .into_pyarray(py))
    }

    /// The most recently drawn node noise (kind "tree" built with keep_last_node), else empty.
    fn last_node_noise<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.inner.last_node_noise().to_vec().into_pyarray(py)
    }

    #[getter]
    fn l2_multiplier(&self) -> f64 {
        self.inner.l2_multiplier()
    }
    #[getter]
    fn l1_multiplier(&self) -> f64 {
        self.inner.l1_multiplier()
    }
    #[getter]
    fn worst_leaf(&self) -> u64 {
        self.inner.worst_leaf()
    }
    #[getter]
    fn kind(&self) -> &'static str {
        self.inner.kind().name()
    }
    #[getter]
    fn buffers(&self) -> usize {
        match self.inner.kind() {
            MechanismKind::Blt { buffers } => buffers,
            _ => 0,
        }
    }
    #[getter]
    fn steps(&self) -> u64 {
        self.inner.steps()
    }
    #[getter]
    fn capacity(&self) -> u64 {
        self.inner.capacity()
    }
    #[getter]
    fn nodes_used(&self) -> u64 {
        self.inner.nodes_used()
    }
    #[getter]
    fn live_nodes(&self) -> usize {
        self.inner.live_nodes()
    }
    #[getter]
    fn nodes_drawn(&self) -> u64 {
        self.inner.nodes_drawn()
    }
}

/// ceil(log2 n + 1): the paper's bound K0 / B0 on the nodes a release of an n-leaf binary tree
/// uses (release t uses popcount(t), at most floor(log2(n + 1))).
#[pyfunction]
fn tree_depth(n: u64) -> usize {
    crate::continual::tree_depth(n)
}

fn parse_noise(noise: &str, scale: f64, grid_bits: u32) -> PyResult<NodeNoise> {
    NodeNoise::from_name(noise, scale, grid_bits).ok_or_else(|| {
        PyValueError::new_err(format!(
            "noise must be one of {NOISE_NAMES:?}, got {noise:?}"
        ))
    })
}

/// The BLT parameters (theta, omega) used for horizon `capacity` with `buffers` buffers.
#[pyfunction]
fn blt_parameters(py: Python<'_>, capacity: u64, buffers: usize) -> PyResult<(Vec<f64>, Vec<f64>)> {
    MechanismKind::parse("blt", buffers).py_ok(py)?; // buffers = 2^31 aborted, 2^63 panicked
    Ok(crate::continual::blt_parameters(capacity, buffers))
}

/// Deliberately panics: used by the test that a Rust panic surfaces as a Python exception.
#[pyfunction]
fn _panic_for_test() -> PyResult<()> {
    let v: Vec<u8> = Vec::new();
    if v.is_empty() {
        panic!("deliberate panic from privrl._core");
    }
    Err(PyRuntimeError::new_err("unreachable"))
}

/// Rebuild a pickled ShermanMorrison / MixtureFeatures / PrefixMechanism (NoiseStream: noise.rs).
#[pyfunction]
fn _restore_sm(py: Python<'_>, state: &[u8]) -> PyResult<PySM> {
    Ok(PySM {
        inner: crate::state::decode("Sherman-Morrison", state).py_ok(py)?,
    })
}

#[pyfunction]
fn _restore_mixture(py: Python<'_>, state: &[u8]) -> PyResult<PyMixture> {
    let inner: CoreMixture = crate::state::decode("mixture features", state).py_ok(py)?;
    inner.check_consistent().py_ok(py)?; // an edited dimension aborted phi_v (allocation)
    Ok(PyMixture { inner })
}

#[pyfunction]
fn _restore_prefix(py: Python<'_>, kind: &str, state: &[u8]) -> PyResult<PyPrefix> {
    Ok(PyPrefix {
        inner: crate::continual::restore_mechanism(kind, state).py_ok(py)?,
    })
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySM>()?;
    m.add_class::<PyMixture>()?;
    m.add_class::<PyNoiseStream>()?;
    m.add_class::<PyPrefix>()?;
    m.add_function(wrap_pyfunction!(spd_inverse, m)?)?;
    m.add_function(wrap_pyfunction!(spd_solve, m)?)?;
    m.add_function(wrap_pyfunction!(min_eigenvalue, m)?)?;
    m.add_function(wrap_pyfunction!(optimistic_q, m)?)?;
    m.add_function(wrap_pyfunction!(group_max, m)?)?;
    m.add_function(wrap_pyfunction!(optimistic_values, m)?)?;
    m.add_function(wrap_pyfunction!(state_values, m)?)?;
    m.add_function(wrap_pyfunction!(blt_parameters, m)?)?;
    m.add_function(wrap_pyfunction!(tree_depth, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    m.add_function(wrap_pyfunction!(noise::_restore_noise_stream, m)?)?;
    m.add_function(wrap_pyfunction!(_restore_sm, m)?)?;
    m.add_function(wrap_pyfunction!(_restore_mixture, m)?)?;
    m.add_function(wrap_pyfunction!(_restore_prefix, m)?)?;
    kernels::register(m)?;
    agents::register(m)?;
    bandit::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("GIT_COMMIT", env!("PRIVRL_GIT_COMMIT"))?;
    // The limits and defaults the Python wrappers validate against, read from here.
    m.add("MECHANISMS", PyTuple::new(m.py(), MechanismKind::NAMES)?)?;
    m.add("NOISES", PyTuple::new(m.py(), NOISE_NAMES)?)?;
    m.add("MAX_NODE_LEN", MAX_NODE_LEN)?;
    m.add("DEFAULT_GRID_BITS", DEFAULT_GRID_BITS)?;
    m.add("MAX_GRID_BITS", MAX_GRID_BITS)?;
    m.add("DEFAULT_BLT_BUFFERS", DEFAULT_BLT_BUFFERS)?;
    m.add("MAX_BLT_BUFFERS", MAX_BLT_BUFFERS)?;
    m.add("MAX_COEFFICIENTS", MAX_COEFFICIENTS)?;
    m.add("MAX_FACTORIZATION_CAPACITY", MAX_FACTORIZATION_CAPACITY)?;
    Ok(())
}
