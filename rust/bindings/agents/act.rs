//! `agent.act(state, h)` in one call (`privrl.agents.common.base.Agent.act`, LinUCB's `act`):
//! the common arguments, Python ints and numpy integers in range, are read here; anything else
//! answers None and the Python wrapper checks it (and words the refusal) as before. A numpy
//! integer cost 1.0 us a call through the wrapper's checks against 0.33 us for an int.

use numpy::npyffi::{get_type_object, NpyTypes};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyInt;

use super::{state_mut, PyLsviAgent, PyVtrAgent};
use crate::agents::Episodic;
use crate::bindings::IntoPy;

/// The value of an index argument the wrapper would take as `int(v)` with no question: an exact
/// `int` (not a bool or another subclass) or a scalar of one of numpy's own integer types (not
/// np.timedelta64, not a Python subclass), whose `__index__` is `int(v)`. None for any other
/// object, and for a value beyond i64 (a large np.uint64): the wrapper's checks decide those.
pub(in crate::bindings) fn index_arg(v: &Bound<'_, PyAny>) -> Option<i64> {
    if !v.is_exact_instance_of::<PyInt>() && !is_numpy_integer(v) {
        return None;
    }
    v.extract::<i64>().ok()
}

fn is_numpy_integer(v: &Bound<'_, PyAny>) -> bool {
    let ty = v.get_type_ptr();
    // SAFETY: numpy's API table is loaded by get_type_object (the extension imports numpy);
    // `ty` is the live type of `v`, which the GIL (held through `v`) keeps alive.
    unsafe {
        let py = v.py();
        if ffi::PyType_GetFlags(ty) & ffi::Py_TPFLAGS_HEAPTYPE != 0
            || ty == get_type_object(py, NpyTypes::PyTimedeltaArrType_Type)
        {
            return false; // a Python subclass may redefine __int__ / __index__
        }
        ffi::PyType_IsSubtype(ty, get_type_object(py, NpyTypes::PyIntegerArrType_Type)) != 0
    }
}

/// The action of `policy[h, state]` for an agent whose policy is `hs x s`, or None when an
/// argument is not an index `index_arg` reads or is out of range.
fn pick<A: Episodic>(
    py: Python<'_>,
    agent: &mut A,
    (hs, s): (usize, usize),
    state: &Bound<'_, PyAny>,
    h: &Bound<'_, PyAny>,
) -> PyResult<Option<usize>> {
    let (Some(si), Some(hi)) = (index_arg(state), index_arg(h)) else {
        return Ok(None);
    };
    let (Ok(si), Ok(hi)) = (usize::try_from(si), usize::try_from(hi)) else {
        return Ok(None);
    };
    if si >= s || hi >= hs {
        return Ok(None);
    }
    Ok(Some(agent.policy().py_ok(py)?[hi * s + si]))
}

/// `Agent.act`'s common case for a UCRL-VTR(+) or LSVI-UCB core: the action of the arriving user
/// in `state` at step `h` (the user's policy, computed once per user as by `policy()`), or None
/// for arguments the wrapper checks itself (and for another object than these two cores).
#[pyfunction]
pub(super) fn agent_act(
    agent: &Bound<'_, PyAny>,
    state: &Bound<'_, PyAny>,
    h: &Bound<'_, PyAny>,
) -> PyResult<Option<usize>> {
    let py = agent.py();
    if let Ok(a) = agent.cast::<PyVtrAgent>() {
        let mut this = state_mut(a)?;
        let dims = (this.inner.h, this.inner.s);
        return pick(py, &mut this.inner, dims, state, h);
    }
    if let Ok(a) = agent.cast::<PyLsviAgent>() {
        let mut this = state_mut(a)?;
        let dims = (this.inner.h, this.inner.s);
        return pick(py, &mut this.inner, dims, state, h);
    }
    Ok(None)
}
