"""Input validation at the public edge: one vocabulary of scalar checks, and the ``checked`` decorator.

Every public function checks its inputs once; internal calls (a calibration calling twenty formulas)
run inside ``trusted()`` and skip the checks, so each value is validated where it enters privrl.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import math
import numbers
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import numpy as np

from privrl.exceptions import PrivacyParameterError

__all__ = [
    "VOCABULARY",
    "check_delta_open",
    "check_delta_pure_ok",
    "check_epsilon",
    "check_nonneg_real",
    "check_pos_int",
    "check_positive_real",
    "check_probability",
    "check_real",
    "checked",
    "is_trusted",
    "trusted",
]

Checker = Callable[[Any, str], Any]
F = TypeVar("F", bound=Callable[..., Any])


def check_real(value: Any, name: str) -> float:
    """``value`` as a float; bool / str / complex / None are refused (float() would take "1")."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise PrivacyParameterError(f"{name} must be a real number, got {value!r}")
    try:
        return float(value)
    except OverflowError:  # an int too large for a double
        return math.inf if value > 0 else -math.inf  # type: ignore[operator]  # Real has no __gt__ in typeshed


# A user's privacy budget outside this range is no guarantee anyone needs, and the calibrations'
# arithmetic (exp(eps), noise scales ~ 1/eps, the tight accountant's bisection) leaves its working
# range beyond it (found by fuzzing: at eps = 1e17 the tight noise misses the target by 1e-7
# relative, as at 1e-6, and at 1e300 / 1e-300 the reports overflow). The privacy models refuse it
# at the edge; budgets derived inside a composition (eps0, ...) go through check_epsilon alone.
EPSILON_RANGE = (1e-4, 1e15)


def check_epsilon(value: Any, name: str = "epsilon") -> float:
    """A privacy budget: finite and > 0."""
    x = check_real(value, name)
    if not (math.isfinite(x) and x > 0.0):
        raise PrivacyParameterError(f"{name} must be finite and > 0, got {value!r}")
    return x


def check_user_epsilon(value: Any, name: str = "epsilon") -> float:
    """The user's target epsilon: check_epsilon, and within EPSILON_RANGE."""
    x = check_epsilon(value, name)
    lo, hi = EPSILON_RANGE
    if not lo <= x <= hi:
        raise PrivacyParameterError(
            f"{name} must be in [{lo:g}, {hi:g}] (beyond, the calibration arithmetic fails), got {value!r}"
        )
    return x


# Below this, delta / (2k) and 2 / delta leave the floating-point range in the compositions (5e-324
# made the paper's calibration divide by zero); no meaningful guarantee needs a smaller delta.
DELTA_FLOOR = 1e-100


def _delta_floor(x: float, value: Any, name: str) -> float:
    if 0.0 < x < DELTA_FLOOR:
        raise PrivacyParameterError(
            f"{name} must be 0 (pure DP) or >= {DELTA_FLOOR:g} (smaller values underflow in the "
            f"composition arithmetic), got {value!r}"
        )
    return x


def check_delta_open(value: Any, name: str = "delta") -> float:
    """delta of approximate DP, in the open interval (0, 1) (the accountants' tools: a delta derived
    inside a composition may be far below DELTA_FLOOR; the user's delta was floored at the edge)."""
    x = check_real(value, name)
    if not (0.0 < x < 1.0):
        raise PrivacyParameterError(f"{name} must be in (0, 1), got {value!r}")
    return x


def check_delta_pure_ok(value: Any, name: str = "delta") -> float:
    """delta in [0, 1): 0 selects pure DP."""
    x = check_real(value, name)
    if not (0.0 <= x < 1.0):
        raise PrivacyParameterError(f"{name} must be in [0, 1) (0 means pure DP), got {value!r}")
    return _delta_floor(x, value, name)


def check_probability(value: Any, name: str = "p") -> float:
    """A failure probability in (0, 1)."""
    x = check_real(value, name)
    if not (0.0 < x < 1.0):
        raise PrivacyParameterError(f"{name} must be in (0, 1), got {value!r}")
    return x


def check_nonneg_real(value: Any, name: str) -> float:
    """A finite real >= 0 (sensitivities, noise scales, bounds)."""
    x = check_real(value, name)
    if not (math.isfinite(x) and x >= 0.0):
        raise PrivacyParameterError(f"{name} must be finite and >= 0, got {value!r}")
    return x


def check_positive_real(value: Any, name: str) -> float:
    """A finite real > 0."""
    x = check_real(value, name)
    if not (math.isfinite(x) and x > 0.0):
        raise PrivacyParameterError(f"{name} must be finite and > 0, got {value!r}")
    return x


def check_pos_int(value: Any, name: str) -> int:
    """An integer >= 1 (bools and floats are refused)."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise PrivacyParameterError(f"{name} must be an integer >= 1, got {value!r}")
    v = int(value)
    if v < 1:
        raise PrivacyParameterError(f"{name} must be an integer >= 1, got {value!r}")
    return v


#: The meaning of a parameter name everywhere in privrl.privacy: a public function's parameter
#: with one of these names is checked by the matching checker (``checked`` may override it).
VOCABULARY: dict[str, Checker] = {
    **dict.fromkeys(("epsilon", "eps0"), check_epsilon),
    **dict.fromkeys(("delta", "delta_prime"), check_delta_open),
    **dict.fromkeys(("p", "alpha"), check_probability),
    **dict.fromkeys(
        ("H", "K", "d", "B", "B0", "n", "k", "n_terms", "n_leaves", "count", "capacity"), check_pos_int
    ),
    **dict.fromkeys(("C_w", "U_K"), check_positive_real),
    **dict.fromkeys(
        (
            "sigma",
            "sigma_B",
            "sigma_lambda",
            "sigma_u",
            "b",
            "b_matrix",
            "b_vector",
            "lam",
            "Upsilon",
            "Upsilon1",
            "Upsilon2",
            "C",
            "C1",
            "C2",
            "c_K",
            "ups_low",
            "ups_high",
            "ups1_low",
            "ups1_high",
            "ups2_low",
            "ups2_high",
            "l2_sensitivity",
            "l1_sensitivity",
        ),
        check_nonneg_real,
    ),
}

_TRUSTED: contextvars.ContextVar[bool] = contextvars.ContextVar("privrl_trusted", default=False)


@contextlib.contextmanager
def trusted() -> Iterator[None]:
    """Inside this block ``checked`` functions skip their checks: the caller has validated the
    inputs at its own public edge and passes only values derived from them."""
    token = _TRUSTED.set(True)
    try:
        yield
    finally:
        _TRUSTED.reset(token)


def is_trusted() -> bool:
    """True inside ``trusted()``: a public function called from privrl itself skips its checks."""
    return _TRUSTED.get()


def checked(**overrides: Checker | None) -> Callable[[F], F]:
    """Validate a public function's arguments by parameter name (``VOCABULARY``; ``overrides`` maps
    a name to another checker, or to None for no check). Each checked value is replaced by its
    normalised form (e.g. a numpy int becomes an int). Inside ``trusted()`` the function is called
    as is."""

    def decorate(fn: F) -> F:
        sig = inspect.signature(fn)
        checkers = {name: overrides.get(name, VOCABULARY.get(name)) for name in sig.parameters}
        checkers = {name: c for name, c in checkers.items() if c is not None}
        unknown = set(overrides) - set(sig.parameters)
        if unknown:
            raise TypeError(f"checked(): {fn.__name__} has no parameter {sorted(unknown)}")

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if _TRUSTED.get():
                return fn(*args, **kwargs)
            bound = sig.bind(*args, **kwargs)
            for name, value in bound.arguments.items():
                chk = checkers.get(name)
                if chk is not None and not (value is None and sig.parameters[name].default is None):
                    bound.arguments[name] = chk(value, name)
            with trusted():
                return fn(*bound.args, **bound.kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
