//! Bindings of the episode engine (`crate::engine`): the model, the per-block runs of UCRL-VTR
//! and LSVI-UCB on the agent's own mechanisms (borrowed for the call), and the two kernels the
//! Python path shares with the engine. Blocks run with the GIL released.

use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArray3, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyReadonlyArray3, PyReadonlyArray4, PyReadwriteArray2, PyReadwriteArray3,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::{contiguous, IntoPy, PyMixture, PyNoiseStream, PyPrefix, PySM};
use crate::engine::lsvi::{self, LsviSums, Records};
use crate::engine::vtr::{
    self, Billboard, NoiseBounds, PlusSpec, PracticalSpec, Regression, VtrServer, VtrSpec,
};
use crate::engine::{self as core, EngineFault, EpisodeLog, FiniteModel, Guard, RegretCache, Stop};
use crate::practical::{self, Floored};
use crate::rank_one;
use crate::variance::{self, VarianceInputs};

type Arrays3<'py> = (
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
);

/// ((lam, shift_mult, beta^2, C_w, centre distance, noise scale), w0, Gaussian noise bounds
/// (sigma_m, sigma_v, divisor, k_m, k_v) or None, whether there is noise (None and noisy: the
/// caller passes the bounds to every `run`), initial bonus (H, d, d), initial gamma (H,)).
type PracticalArgs<'a> = (
    (f64, f64, f64, f64, f64, f64),
    PyReadonlyArray1<'a, f64>,
    Option<(f64, f64, f64, f64, f64)>,
    bool,
    PyReadonlyArray3<'a, f64>,
    PyReadonlyArray1<'a, f64>,
);

type VtrOutcome<'py> = (
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<i64>>,
    Vec<usize>,
    Option<(usize, &'static str, f64)>,
);

type Outcome<'py> = (
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<i64>>,
    usize,
    Option<(usize, &'static str, f64)>,
);

fn mutable<'a>(
    what: &str,
    s: Result<&'a mut [f64], numpy::AsSliceError>,
) -> PyResult<&'a mut [f64]> {
    s.map_err(|_| PyValueError::new_err(format!("{what} must be a C-contiguous float64 array")))
}

/// The exact model of a finite MDP: P (H, S, A, S), R (H, S, A) and the sampling rows.
#[pyclass(module = "privrl._core", name = "FiniteModel", frozen)]
pub struct PyModel {
    inner: FiniteModel,
}

#[pymethods]
impl PyModel {
    #[new]
    fn new(
        py: Python<'_>,
        p: PyReadonlyArray4<'_, f64>,
        r: PyReadonlyArray3<'_, f64>,
        cdf: PyReadonlyArray4<'_, f64>,
        init_cdf: PyReadonlyArray1<'_, f64>,
    ) -> PyResult<Self> {
        let sh = p.shape();
        let inner = FiniteModel::new(
            (sh[0], sh[1], sh[2]),
            contiguous("P", p.as_slice())?,
            contiguous("R", r.as_slice())?,
            contiguous("cdf", cdf.as_slice())?,
            contiguous("init_cdf", init_cdf.as_slice())?,
        )
        .py_ok(py)?;
        Ok(PyModel { inner })
    }
}

/// V^pi (H + 1, S) by backward induction (FiniteMDP.policy_values and the engine's regret).
#[pyfunction]
pub fn policy_values<'py>(
    py: Python<'py>,
    p: PyReadonlyArray4<'_, f64>,
    r: PyReadonlyArray3<'_, f64>,
    pi: PyReadonlyArray2<'_, i64>,
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

/// The practical calibration's floored release (crate::practical): (design, inverse, inverse2,
/// weights, correction) from the noisy sums gram (H, d, d) and target (H, d).
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

/// UCRL-VTR+'s sigma-bar (H,) from X, X2 (H, d) and the two billboards (crate::variance).
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

fn fault(stop: Option<Stop>) -> Option<(usize, &'static str, f64)> {
    stop.map(|(e, f)| match f {
        EngineFault::NonFinite => (e, "nonfinite", 0.0),
        EngineFault::Rejected { max_norm } => (e, "rejected", max_norm),
        EngineFault::NotPositiveDefinite { h } => (e, "not_pd", h as f64),
        EngineFault::Core(_) => (e, "core", 0.0),
    })
}

fn core_error(py: Python<'_>, stop: &Option<Stop>) -> PyResult<()> {
    match stop {
        Some((_, EngineFault::Core(e))) => Err(e.clone()).py_ok(py),
        _ => Ok(()),
    }
}

fn episode_outputs<'py>(
    py: Python<'py>,
    (gaps, returns, starts): (Vec<f64>, Vec<f64>, Vec<i64>),
    result: Result<usize, Stop>,
) -> PyResult<Outcome<'py>> {
    let (clips, stop) = match result {
        Ok(c) => (c, None),
        Err(s) => (0, Some(s)),
    };
    core_error(py, &stop)?;
    Ok((
        gaps.into_pyarray(py),
        returns.into_pyarray(py),
        starts.into_pyarray(py),
        clips,
        fault(stop),
    ))
}

fn guard_of(g: (f64, f64, f64, bool)) -> Guard {
    Guard {
        x_bound: g.0,
        y_low: g.1,
        y_high: g.2,
        reject: g.3,
    }
}

/// One regression of a UCRL-VTR agent on its server: `mode` "exact" (Sherman–Morrison objects
/// `sms`), "tree" (mechanisms `grams`, `targets`) or "local" (the randomizer's two streams). The
/// billboard and the exact / LDP sums live here during a run; read them back at the end.
#[pyclass(module = "privrl._core", name = "VtrRegression")]
pub struct PyRegression {
    mode: String,
    sms: Vec<Py<PySM>>,
    grams: Vec<Py<PyPrefix>>,
    targets: Vec<Py<PyPrefix>>,
    streams: Vec<Py<PyNoiseStream>>,
    gram: Vec<f64>,
    target: Vec<f64>,
    board: Billboard,
    spec: VtrSpec,
}

fn practical_spec(
    practical: Option<PracticalArgs<'_>>,
    h: usize,
    d: usize,
) -> PyResult<(Option<PracticalSpec>, Vec<f64>, Vec<f64>)> {
    let Some((consts, w0, gaussian, noisy, bonus, gamma)) = practical else {
        return Ok((None, vec![], vec![]));
    };
    let (lam, shift_mult, beta2, c_w, centre_distance, noise_scale) = consts;
    let spec = PracticalSpec {
        lam,
        shift_mult,
        beta2,
        c_w,
        centre_distance,
        noise_scale,
        w0: contiguous("w0", w0.as_slice())?.to_vec(),
        bounds: match gaussian {
            Some((a, b, c, dd, e)) => NoiseBounds::Gaussian(a, b, c, dd, e),
            None if noisy => NoiseBounds::Table {
                first: 0,
                ups: vec![],
                c: vec![],
            },
            None => NoiseBounds::Zero,
        },
    };
    let bonus = contiguous("bonus", bonus.as_slice())?.to_vec();
    let gamma = contiguous("gamma", gamma.as_slice())?.to_vec();
    if spec.w0.len() != d || bonus.len() != h * d * d || gamma.len() != h {
        return Err(PyValueError::new_err("practical release of the wrong size"));
    }
    Ok((Some(spec), bonus, gamma))
}

#[pymethods]
impl PyRegression {
    #[new]
    #[pyo3(signature = (mode, board, sums, spec, guard, sms=vec![], grams=vec![], targets=vec![], streams=vec![], practical=None, users=0))]
    fn new(
        mode: &str,
        board: (
            PyReadonlyArray3<'_, f64>,
            PyReadonlyArray3<'_, f64>,
            PyReadonlyArray2<'_, f64>,
        ),
        sums: (PyReadonlyArray3<'_, f64>, PyReadonlyArray2<'_, f64>),
        spec: (usize, f64, f64, f64),
        guard: Option<(f64, f64, f64, bool)>,
        sms: Vec<Py<PySM>>,
        grams: Vec<Py<PyPrefix>>,
        targets: Vec<Py<PyPrefix>>,
        streams: Vec<Py<PyNoiseStream>>,
        practical: Option<PracticalArgs<'_>>,
        users: u64,
    ) -> PyResult<Self> {
        let (h, d) = (board.2.shape()[0], spec.0);
        let ok = match mode {
            "exact" => sms.len() == h,
            "tree" => grams.len() == h && targets.len() == h && guard.is_some(),
            "local" => streams.len() == 2 && guard.is_some(),
            _ => false,
        };
        if !ok {
            return Err(PyValueError::new_err(format!(
                "inconsistent {mode:?} regression"
            )));
        }
        let (practical, bonus, gamma) = practical_spec(practical, h, d)?;
        let board = Billboard {
            design: contiguous("design", board.0.as_slice())?.to_vec(),
            inverse: contiguous("inverse", board.1.as_slice())?.to_vec(),
            weights: contiguous("weights", board.2.as_slice())?.to_vec(),
            bonus,
            gamma,
            users,
        };
        let (gram, target) = (
            contiguous("gram", sums.0.as_slice())?.to_vec(),
            contiguous("target", sums.1.as_slice())?.to_vec(),
        );
        let sizes = [board.design.len(), board.inverse.len(), gram.len()];
        if sizes.iter().any(|&n| n != h * d * d)
            || board.weights.len() != h * d
            || target.len() != h * d
        {
            return Err(PyValueError::new_err("billboard or sums of the wrong size"));
        }
        Ok(PyRegression {
            mode: mode.to_string(),
            sms,
            grams,
            targets,
            streams,
            gram,
            target,
            board,
            spec: VtrSpec {
                d,
                radius: spec.1,
                base: spec.2,
                divisor: spec.3,
                guard: guard.map(guard_of),
                practical,
            },
        })
    }

    /// (design, inverse, weights) of the current billboard, flat.
    fn billboard<'py>(&self, py: Python<'py>) -> Arrays3<'py> {
        (
            self.board.design.clone().into_pyarray(py),
            self.board.inverse.clone().into_pyarray(py),
            self.board.weights.clone().into_pyarray(py),
        )
    }

    /// (bonus (H*d*d,), gamma (H,)) of the practical billboard (empty under the paper's rule).
    fn practical<'py>(
        &self,
        py: Python<'py>,
    ) -> (Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>) {
        (
            self.board.bonus.clone().into_pyarray(py),
            self.board.gamma.clone().into_pyarray(py),
        )
    }

    /// The exact / LDP sums (gram (H*d*d,), target (H*d,)).
    fn sums<'py>(&self, py: Python<'py>) -> (Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>) {
        (
            self.gram.clone().into_pyarray(py),
            self.target.clone().into_pyarray(py),
        )
    }
}

impl PyRegression {
    /// Install the caller's practical noise bounds for the next n releases (pure DP).
    fn set_bounds(
        &mut self,
        bounds: Option<(PyReadonlyArray1<'_, f64>, PyReadonlyArray1<'_, f64>)>,
        n: usize,
    ) -> PyResult<()> {
        let first = self.board.users + 1;
        if let Some(PracticalSpec {
            bounds: NoiseBounds::Table { first: f, ups, c },
            ..
        }) = &mut self.spec.practical
        {
            let (u, v) = bounds
                .ok_or_else(|| PyValueError::new_err("this regression needs the noise bounds"))?;
            *f = first;
            *ups = contiguous("bounds", u.as_slice())?.to_vec();
            *c = contiguous("bounds", v.as_slice())?.to_vec();
            if ups.len() != n || c.len() != n {
                return Err(PyValueError::new_err(
                    "one pair of noise bounds per episode",
                ));
            }
        }
        Ok(())
    }
}

/// The agent's objects one regression borrows for a run.
struct Borrowed<'py> {
    sms: Vec<PyRefMut<'py, PySM>>,
    grams: Vec<PyRefMut<'py, PyPrefix>>,
    targets: Vec<PyRefMut<'py, PyPrefix>>,
    streams: Vec<PyRefMut<'py, PyNoiseStream>>,
}

fn borrow_all<'py, T: pyo3::PyClass<Frozen = pyo3::pyclass::boolean_struct::False>>(
    py: Python<'py>,
    objs: &[Py<T>],
) -> PyResult<Vec<PyRefMut<'py, T>>> {
    Ok(objs
        .iter()
        .map(|o| o.bind(py).try_borrow_mut())
        .collect::<Result<Vec<_>, _>>()?)
}

fn server<'a>(
    mode: &str,
    b: &'a mut Borrowed<'_>,
    gram: &'a mut [f64],
    target: &'a mut [f64],
) -> VtrServer<'a> {
    match mode {
        "exact" => VtrServer::Exact {
            sms: b.sms.iter_mut().map(|r| &mut r.inner).collect(),
            target,
        },
        "tree" => VtrServer::Tree {
            grams: b.grams.iter_mut().map(|r| &mut r.inner).collect(),
            targets: b.targets.iter_mut().map(|r| &mut r.inner).collect(),
        },
        _ => {
            let (m, v) = b.streams.split_at_mut(1);
            VtrServer::Local {
                gram,
                target,
                matrix_noise: &mut m[0].inner,
                vector_noise: &mut v[0].inner,
            }
        }
    }
}

/// UCRL-VTR (one regression) or UCRL-VTR+ (two, with `plus` = (beta_check, beta_tilde)) episodes
/// on the agent's own servers.
#[pyclass(module = "privrl._core", name = "VtrEngine")]
pub struct PyVtrEngine {
    model: Py<PyModel>,
    features: Py<PyMixture>,
    regressions: Vec<Py<PyRegression>>,
    plus: Option<PlusSpec>,
    cache: RegretCache,
    v_star: Vec<f64>,
    last_sigma_bar: Vec<f64>,
}

#[pymethods]
impl PyVtrEngine {
    #[new]
    #[pyo3(signature = (model, features, regressions, v_star, plus=None))]
    fn new(
        py: Python<'_>,
        model: Py<PyModel>,
        features: Py<PyMixture>,
        regressions: Vec<Py<PyRegression>>,
        v_star: PyReadonlyArray1<'_, f64>,
        plus: Option<(f64, f64)>,
    ) -> PyResult<Self> {
        let m = &model.get().inner;
        if regressions.len() != if plus.is_some() { 2 } else { 1 } {
            return Err(PyValueError::new_err(
                "UCRL-VTR has one regression, UCRL-VTR+ two",
            ));
        }
        let cache = RegretCache::new(m);
        let v_star = contiguous("v_star", v_star.as_slice())?.to_vec();
        crate::errors::check_len("V*_1", v_star.len(), m.s).py_ok(py)?;
        Ok(PyVtrEngine {
            model,
            features,
            regressions,
            plus: plus.map(|(beta_check, beta_tilde)| PlusSpec {
                beta_check,
                beta_tilde,
            }),
            cache,
            v_star,
            last_sigma_bar: vec![],
        })
    }

    /// Run the episodes of `uniforms` (n, H + 1); `ties` (n * H,) seeds or None; `bounds`: per
    /// regression, the practical noise bounds (Upsilon_t, C_t) of the next n releases when it has
    /// no formula for them (pure DP), else None. Returns (gaps, returns, initial states, clip
    /// counts per regression, fault or None).
    #[pyo3(signature = (uniforms, ties=None, bounds=vec![]))]
    fn run<'py>(
        mut slf: PyRefMut<'py, Self>,
        py: Python<'py>,
        uniforms: PyReadonlyArray2<'_, f64>,
        ties: Option<PyReadonlyArray1<'_, u64>>,
        bounds: Vec<Option<(PyReadonlyArray1<'_, f64>, PyReadonlyArray1<'_, f64>)>>,
    ) -> PyResult<VtrOutcome<'py>> {
        let this = &mut *slf;
        let model = this.model.get();
        let features = this.features.bind(py).borrow();
        let h = model.inner.h;
        let u = contiguous("uniforms", uniforms.as_slice())?;
        if uniforms.shape()[1] != h + 1 {
            return Err(PyValueError::new_err("uniforms must be (n, H + 1)"));
        }
        let n = uniforms.shape()[0];
        let tie_slice = match &ties {
            Some(t) => {
                let s = t
                    .as_slice()
                    .map_err(|_| PyValueError::new_err("ties must be a contiguous uint64 array"))?;
                if s.len() != n * h {
                    return Err(PyValueError::new_err("ties must hold H seeds per episode"));
                }
                Some(s)
            }
            None => None,
        };
        let mut reg_refs = borrow_all(py, &this.regressions)?;
        let mut bounds = bounds.into_iter();
        for r in reg_refs.iter_mut() {
            r.set_bounds(bounds.next().flatten(), n)?;
        }
        let mut borrowed = reg_refs
            .iter()
            .map(|r| {
                Ok(Borrowed {
                    sms: borrow_all(py, &r.sms)?,
                    grams: borrow_all(py, &r.grams)?,
                    targets: borrow_all(py, &r.targets)?,
                    streams: borrow_all(py, &r.streams)?,
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        let mut regs: Vec<Regression<'_>> = reg_refs
            .iter_mut()
            .zip(borrowed.iter_mut())
            .map(|(r, b)| {
                let PyRegression {
                    mode,
                    gram,
                    target,
                    board,
                    spec,
                    ..
                } = &mut **r;
                Regression {
                    spec,
                    server: server(mode, b, gram, target),
                    board,
                }
            })
            .collect();
        let mut out = (vec![0.0; n], vec![0.0; n], vec![0i64; n]);
        let (cache, v_star, plus) = (&mut this.cache, &this.v_star, this.plus);
        let feats = &features.inner;
        let result = py.detach(|| {
            vtr::run(
                &model.inner,
                feats,
                &mut regs,
                plus,
                cache,
                v_star,
                u,
                tie_slice,
                EpisodeLog::of(&mut out),
            )
        });
        let (clips, result) = match result {
            Ok((clips, sig)) => {
                this.last_sigma_bar = sig;
                (clips, Ok(0))
            }
            Err(stop) => (vec![0; regs.len()], Err(stop)),
        };
        let (g, r, s0, _, fault) = episode_outputs(py, out, result)?;
        Ok((g, r, s0, clips, fault))
    }

    /// UCRL-VTR+'s sigma-bar of the last episode run (empty for UCRL-VTR).
    fn last_sigma_bar<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.last_sigma_bar.clone().into_pyarray(py)
    }

    #[getter]
    fn policy_changes(&self) -> u64 {
        self.cache.changes
    }
}

/// LSVI-UCB episodes of one fixed policy on the agent's LSVIServer sums (written in place).
#[pyclass(module = "privrl._core", name = "LsviEngine")]
pub struct PyLsviEngine {
    model: Py<PyModel>,
    table: Vec<f64>,
    d: usize,
    guard: Guard,
    cache: RegretCache,
    v_star: Vec<f64>,
}

#[pymethods]
impl PyLsviEngine {
    #[new]
    fn new(
        py: Python<'_>,
        model: Py<PyModel>,
        table: PyReadonlyArray2<'_, f64>,
        guard: (f64, f64, f64, bool),
        v_star: PyReadonlyArray1<'_, f64>,
    ) -> PyResult<Self> {
        let m = &model.get().inner;
        let d = table.shape()[1];
        crate::errors::check_len("feature table", table.shape()[0], m.s * m.a).py_ok(py)?;
        let v_star = contiguous("v_star", v_star.as_slice())?.to_vec();
        crate::errors::check_len("V*_1", v_star.len(), m.s).py_ok(py)?;
        let cache = RegretCache::new(m);
        Ok(PyLsviEngine {
            table: contiguous("table", table.as_slice())?.to_vec(),
            model,
            d,
            guard: guard_of(guard),
            cache,
            v_star,
        })
    }

    /// Run the episodes of `uniforms` (n, H + 1) under policy `pi` (H, S); the server's arrays
    /// are updated in place, `n` is the number of episodes it has received so far.
    #[pyo3(signature = (pi, uniforms, reward_sum, next_sum, records, n, batch_gram=None, sms=vec![]))]
    fn run<'py>(
        mut slf: PyRefMut<'py, Self>,
        py: Python<'py>,
        pi: PyReadonlyArray2<'_, i64>,
        uniforms: PyReadonlyArray2<'_, f64>,
        mut reward_sum: PyReadwriteArray2<'_, f64>,
        mut next_sum: PyReadwriteArray3<'_, f64>,
        records: (
            PyReadwriteArray2<'_, i64>,
            PyReadwriteArray2<'_, i64>,
            PyReadwriteArray2<'_, f64>,
        ),
        n: usize,
        batch_gram: Option<PyReadwriteArray3<'_, f64>>,
        sms: Vec<Py<PySM>>,
    ) -> PyResult<Outcome<'py>> {
        let this = &mut *slf;
        let model = &this.model.get().inner;
        let (h, s) = (model.h, model.s);
        if uniforms.shape()[1] != h + 1 || pi.shape() != [h, s] {
            return Err(PyValueError::new_err(
                "uniforms must be (n, H + 1) and pi (H, S)",
            ));
        }
        let pi: Vec<usize> = pi
            .as_array()
            .iter()
            .map(|&a| usize::try_from(a).ok().filter(|&a| a < model.a))
            .collect::<Option<_>>()
            .ok_or_else(|| PyValueError::new_err("policy actions out of range"))?;
        let u = contiguous("uniforms", uniforms.as_slice())?;
        let count = uniforms.shape()[0];
        let (mut rs, mut ra, mut rr) = records;
        let capacity = rs.shape()[0];
        let mut bg = batch_gram;
        let mut sm_refs = sms
            .iter()
            .map(|x| x.bind(py).try_borrow_mut())
            .collect::<Result<Vec<_>, _>>()?;
        let int_error = |_| PyValueError::new_err("records must be C-contiguous int64 arrays");
        let st = rs.as_slice_mut().map_err(int_error)?;
        let ac = ra.as_slice_mut().map_err(int_error)?;
        let mut sums = LsviSums {
            batch_gram: match bg.as_mut() {
                Some(b) => Some(mutable("batch_gram", b.as_slice_mut())?),
                None => None,
            },
            exact: sm_refs.iter_mut().map(|r| &mut r.inner).collect(),
            reward_sum: mutable("reward_sum", reward_sum.as_slice_mut())?,
            next_sum: mutable("next_sum", next_sum.as_slice_mut())?,
            records: Records {
                states: st,
                actions: ac,
                rewards: mutable("rewards", rr.as_slice_mut())?,
                capacity,
            },
            n,
        };
        let mut out = (vec![0.0; count], vec![0.0; count], vec![0i64; count]);
        let (table, d, guard, cache, v_star) = (
            &this.table,
            this.d,
            &this.guard,
            &mut this.cache,
            &this.v_star,
        );
        let result = py.detach(|| {
            lsvi::run(
                model,
                table,
                d,
                guard,
                &pi,
                &mut sums,
                cache,
                v_star,
                u,
                EpisodeLog::of(&mut out),
            )
        });
        episode_outputs(py, out, result)
    }

    #[getter]
    fn policy_changes(&self) -> u64 {
        self.cache.changes
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyModel>()?;
    m.add_class::<PyRegression>()?;
    m.add_class::<PyVtrEngine>()?;
    m.add_class::<PyLsviEngine>()?;
    m.add_function(wrap_pyfunction!(policy_values, m)?)?;
    m.add_function(wrap_pyfunction!(batched_matvec, m)?)?;
    m.add_function(wrap_pyfunction!(floored_release, m)?)?;
    m.add_function(wrap_pyfunction!(sigma_bar, m)?)?;
    Ok(())
}
