"""What privrl counts as an integer, a real number, a True / False option or an array, once: the rule every
check at the public edge (``privrl.common.checks``, re-exported there) and every index read (states,
steps, actions, a gymnasium observation) uses. Python and numpy file a bool under int and a duration
(np.timedelta64) under np.integer and numbers.Integral: neither is a number here."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from privrl.common.errors import NonFiniteError, ShapeError

__all__ = [
    "array_value",
    "check_flag",
    "is_choice",
    "integer_value",
    "is_index",
    "is_integer",
    "is_real",
    "real_or_nan",
    "real_value",
    "refuse_masked",
]

# Not numbers to privrl although Python / numpy file them so: a bool is an int, np.bool_ converts to
# one, and numpy files a duration (np.timedelta64) under np.integer and numbers.Integral.
_NOT_NUMBERS = (bool, np.bool_, np.timedelta64)


def is_index(value: Any) -> bool:
    """Whether `value` is an integer a state, step or action index may be: a Python int or a numpy
    integer, not a bool nor an np.timedelta64 (:func:`is_integer` on the concrete types, for the
    hot paths)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, _NOT_NUMBERS)


def is_integer(value: Any) -> bool:
    """privrl's one integer rule: a Python int, a numpy integer or another ``numbers.Integral``;
    not a bool / np.bool_ nor an np.timedelta64 (``int()`` of each gives a number it does not mean)."""
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, _NOT_NUMBERS)


def is_real(value: Any) -> bool:
    """privrl's one real-number rule: a ``numbers.Real`` or a numpy integer / floating scalar; not a
    bool / np.bool_ nor an np.timedelta64 (str, complex and None are not numbers.Real)."""
    return isinstance(value, (numbers.Real, np.floating, np.integer)) and not isinstance(value, _NOT_NUMBERS)


def integer_value(value: Any) -> int | None:
    """The integer `value` is (:func:`is_index`), or that a 0-d numpy array of an integer dtype holds
    (``np.array(3)``, which gymnasium's Discrete space contains: an environment may return it as an
    observation, a policy as an action); None for anything else (a float such as 3.0 is never
    truncated onto an index)."""
    if is_index(value):
        return int(value)
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iu":
        return int(value)
    return None


def real_value(value: Any) -> float | None:
    """The real number `value` is (:func:`is_real`), or that a 0-d numpy array of an integer or
    floating dtype holds (``np.array(0.5)``), as a float; None for anything else (a str such as
    "0.5", None, a bool, a complex, an array of another shape: never converted)."""
    if type(value) is float or is_real(value):
        return float(value)
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        return float(value)
    return None


def is_choice(value: Any, allowed: Any) -> bool:
    """Whether ``value`` is one of the strings ``allowed``: a str first (``value in allowed`` with a
    numpy array was numpy's "truth value of an array is ambiguous", naming no argument; an
    unhashable value in a set raised TypeError). The rule of every option chosen by name; each
    caller raises its own error."""
    return isinstance(value, str) and value in allowed


def refuse_masked(x: Any, name: str) -> None:
    """A numpy masked array with masked entries is missing data, refused with a NonFiniteError naming
    `name`: numpy's conversions (np.asarray, a copy, a dtype cast) use the values under the mask,
    silently. The rule of every array privrl takes (a masked array without a masked entry is its
    data)."""
    if type(x) is not np.ndarray and np.ma.is_masked(x):
        raise NonFiniteError(f"{name} has masked (missing) entries: fill or drop them first")


def array_value(value: Any, name: str) -> np.ndarray:
    """``np.asarray(value)``, an ndarray as given; what numpy makes no array of (a ragged nested list
    such as ``[[0, 1], [0]]``) is a ShapeError naming `name`: numpy's own ValueError ("setting an
    array element with a sequence") named no argument; masked entries are refused (refuse_masked)."""
    refuse_masked(value, name)
    if isinstance(value, np.ndarray):
        return value
    try:
        return np.asarray(value)
    except (TypeError, ValueError, OverflowError) as e:
        raise ShapeError(f"{name} must be an array: {e}") from None


def real_or_nan(value: Any) -> float:
    """``float(value)`` for a real number (:func:`is_real`), NaN for anything else and for an int
    beyond a double (``10**400``: float() raised OverflowError, not a ValueError)."""
    try:
        return float(value) if is_real(value) else math.nan
    except OverflowError:
        return math.nan


def check_flag(
    value: Any, name: str, error: type[Exception] = TypeError, hint: str = "", numpy: bool = True
) -> bool:
    """A True / False option as a bool: True, False or numpy's bools (Python's only with ``numpy=False``,
    for a value passed on as given: a run's name reads np.True_); anything else raises ``error``
    ending with ``hint``. A truthy "no", None or 1.5 switched options on silently; each caller keeps
    the class it documents (TypeError, ShapeError, AssumptionError, PrivacyParameterError)."""
    if not isinstance(value, (bool, np.bool_) if numpy else bool):
        raise error(f"{name} must be True or False, got {value!r}{hint}")
    return bool(value)
