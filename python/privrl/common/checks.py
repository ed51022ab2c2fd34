"""Input validation at the public edge: the one vocabulary of checks (scalars, choices, arrays,
seeds) and the ``checked`` decorator that applies it to a public function's parameters by name.

Every public function checks what it is given; the Rust agents then trust what they were built from.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import math
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from privrl import _core
from privrl.common import kinds
from privrl.common.errors import AssumptionError, NonFiniteError, PrivacyParameterError, SeedError, ShapeError
from privrl.common.kinds import check_flag, integer_value, is_index, is_integer, is_real, real_or_nan
from privrl.common.seeds import check_seed, int_seed, model_seed, seed_bytes, tie_seed

__all__ = [
    "VOCABULARY",
    "check_delta_open",
    "check_delta_pure_ok",
    "check_epsilon",
    "check_nonneg_real",
    "check_pos_int",
    "check_positive_real",
    "check_invertible",
    "check_probability",
    "check_real",
    "checked",
    "check_choice",
    "check_flag",
    "did_you_mean",
    "check_episodes",
    "check_int",
    "check_finite_real",
    "check_finite_scale",
    "as_f64",
    "all_finite",
    "value_range",
    "numeric_array",
    "check_seed",
    "int_seed",
    "model_seed",
    "integer_actions",
    "seed_bytes",
    "tie_seed",
    "MAX_INT",
    "MAX_SEED_COUNT",
    "check_number",
    "check_model_delta",
    "LARGE_DELTA",
    "check_epsilons",
    "check_seeds",
    "feature_table_problem",
    "is_one_hot",
    "is_index",
    "is_integer",
    "is_real",
    "integer_value",
]

Checker = Callable[[Any, str], Any]
F = TypeVar("F", bound=Callable[..., Any])


def check_real(value: Any, name: str) -> float:
    """``value`` as a float; bool / str / complex / None are refused (float() would take "1")."""
    if not is_real(value):
        raise PrivacyParameterError(f"{name} must be a real number, got {value!r}")
    try:
        return float(value)
    except OverflowError:  # an int too large for a double
        return math.inf if value > 0 else -math.inf


# A user's privacy budget outside this range is no guarantee anyone needs, and the calibrations'
# arithmetic (exp(eps), noise scales ~ 1/eps, the tight accountant's bisection) leaves its working
# range beyond it (found by fuzzing: at eps = 1e17 the tight noise misses the target by 1e-7
# relative, as at 1e-6, and at 1e300 / 1e-300 the reports overflow). The privacy models refuse it
# at the edge; budgets derived inside a composition (eps0, ...) go through check_epsilon alone.
EPSILON_RANGE = (1e-4, 1e15)


def check_epsilon(value: Any, name: str = "epsilon") -> float:
    """A privacy budget: finite and > 0 (check_positive_real)."""
    return check_positive_real(value, name)


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
    """delta in [0, 1): 0 selects pure DP (-0.0 is returned as 0.0)."""
    x = check_real(value, name) + 0.0  # -0.0 + 0.0 is +0.0: no "delta=-0" in labels and reprs
    if not (0.0 <= x < 1.0):
        raise PrivacyParameterError(f"{name} must be in [0, 1) (0 means pure DP), got {value!r}")
    return _delta_floor(x, value, name)


#: A privacy model's delta at or above this is refused unless asked for: a mechanism that publishes
#: one user's data outright with probability delta satisfies (eps, delta)-DP.
LARGE_DELTA = 0.1


def check_model_delta(
    value: Any,
    name: str = "delta",
    allow_large: bool = False,
    remedy: str = ", or pass allow_large_delta=True to run it anyway",
) -> float:
    """A privacy model's delta: in [0, 1), and below LARGE_DELTA unless ``allow_large``; `remedy`
    ends the refusal (what the caller can do instead)."""
    x = check_delta_pure_ok(value, name)
    if x >= LARGE_DELTA and not allow_large:
        raise PrivacyParameterError(
            f"{name} must be < {LARGE_DELTA:g}, got {x:g}: a delta this large is a privacy failure mode, "
            "not a setting (a mechanism that publishes one user's data outright with probability delta "
            f"satisfies it); use delta <= 1/K{remedy}"
        )
    return x


def check_probability(value: Any, name: str = "p") -> float:
    """A failure probability in (0, 1)."""
    x = check_real(value, name)
    if not (0.0 < x < 1.0):
        raise PrivacyParameterError(f"{name} must be in (0, 1), got {value!r}")
    return x


def check_nonneg_real(value: Any, name: str) -> float:
    """A finite real >= 0 (sensitivities, noise scales, bounds); -0.0 is returned as 0.0 (numpy's
    normal(scale=-0.0) raised its own 'scale < 0': gaussian_mechanism(l2_sensitivity=-0.0))."""
    x = check_real(value, name) + 0.0  # -0.0 + 0.0 is +0.0; every other value is unchanged
    if not (math.isfinite(x) and x >= 0.0):
        raise PrivacyParameterError(f"{name} must be finite and >= 0, got {value!r}")
    return x


def check_positive_real(value: Any, name: str) -> float:
    """A finite real > 0."""
    x = check_real(value, name)
    if not (math.isfinite(x) and x > 0.0):
        raise PrivacyParameterError(f"{name} must be finite and > 0, got {value!r}")
    return x


def check_invertible(value: float, name: str, what: str, default: float | None = None) -> float:
    """A positive ``value`` whose inverse is finite: a subnormal ridge ``lam`` makes ``what`` (an
    inverse the agent computes from it, e.g. its billboard's I / lam before any data) inf."""
    if not math.isfinite(1.0 / value):
        tail = "" if default is None else f" (the default is {default:g})"
        raise PrivacyParameterError(
            f"{name} = {value:g} is too small: {what} overflows a double; pass {name} >= "
            f"{1.0 / sys.float_info.max:.4g}{tail}"
        )
    return value


def check_pos_int(value: Any, name: str) -> int:
    """An integer in [1, 2^63 - 1] (bools and floats are refused; the Rust side takes 64 bits)."""
    if not is_integer(value):
        raise PrivacyParameterError(f"{name} must be an integer >= 1, got {value!r}")
    v = int(value)
    if v < 1:
        raise PrivacyParameterError(f"{name} must be an integer >= 1, got {value!r}")
    if v > MAX_INT:
        raise PrivacyParameterError(f"{name} must be an integer in [1, 2^63 - 1], got {value!r}")
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


def checked(**overrides: Checker | None) -> Callable[[F], F]:
    """Validate a public function's arguments by parameter name (``VOCABULARY``; ``overrides`` maps
    a name to another checker, or to None for no check). Each checked value is replaced by its
    normalised form (e.g. a numpy int becomes an int)."""

    def decorate(fn: F) -> F:
        sig = inspect.signature(fn)
        checkers = {name: overrides.get(name, VOCABULARY.get(name)) for name in sig.parameters}
        checkers = {name: c for name, c in checkers.items() if c is not None}
        unknown = set(overrides) - set(sig.parameters)
        if unknown:
            raise TypeError(f"checked(): {fn.__name__} has no parameter {sorted(unknown)}")

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            bound = sig.bind(*args, **kwargs)
            for name, value in bound.arguments.items():
                chk = checkers.get(name)
                if chk is not None and not (value is None and sig.parameters[name].default is None):
                    bound.arguments[name] = chk(value, name)
            return fn(*bound.args, **bound.kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def did_you_mean(name: Any, choices: Any) -> str:
    """``"did you mean 'x'? "`` for the closest of `choices` to a mistyped `name`, else ``""``: the one
    home of the suggestions (config keys, registered names, choices). Case is ignored in the match
    ('BLT' -> 'blt', 'Random' -> 'random'), the suggestion is spelled as accepted."""
    folded: dict[str, str] = {}
    for choice in map(str, choices):
        folded.setdefault(choice.lower(), choice)
    close = difflib.get_close_matches(str(name).lower(), list(folded), n=1)
    return f"did you mean {folded[close[0]]!r}? " if close else ""


def check_choice(value: Any, allowed: tuple[str, ...], name: str) -> str:
    """One of the strings ``allowed`` (a ValueError naming them, and the close one of a typo, otherwise)."""
    if not kinds.is_choice(value, allowed):
        hint = did_you_mean(value, allowed).strip() if isinstance(value, str) else ""
        raise PrivacyParameterError(
            f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}"
            + (f"; {hint}" if hint else "")
        )
    return value


def check_episodes(episodes: Any) -> int:
    """K, the number of users: an integer in [1, 2^63 - 1] (the trees count leaves in 64 bits)."""
    if not is_integer(episodes):
        raise PrivacyParameterError(f"episodes (K) must be an integer >= 1, got {episodes!r}")
    if not (1 <= int(episodes) <= MAX_INT):
        raise PrivacyParameterError(f"episodes (K) must be in [1, 2^63 - 1], got {episodes}")
    return int(episodes)


#: Largest count / size / capacity the Rust core accepts (a u64 / usize without wrap-around).
MAX_INT = 2**63 - 1

#: numpy dtype kinds that convert to float64 without losing meaning: bool, ints, floats.
_NUMERIC_KINDS = "biuf"


def check_int(x: Any, name: str, low: int = 1, high: int = MAX_INT) -> int:
    """`x` as a Python int in [low, high]; bools, floats and strings are refused
    (PrivacyParameterError, a ValueError), so nothing wraps or overflows in Rust."""
    if type(x) is int:  # the common case, without the ABC checks (0.5 -> 0.1 us a call)
        v = x
    elif not is_integer(x):
        raise PrivacyParameterError(f"{name} must be an integer in [{low}, {high}], got {x!r}")
    else:
        v = int(x)
    if not (low <= v <= high):
        raise PrivacyParameterError(f"{name} must be an integer in [{low}, {high}], got {v}")
    return v


def check_finite_real(x: Any, name: str, positive: bool = True) -> float:
    """`x` as a finite float (> 0 when `positive`, else >= 0); PrivacyParameterError otherwise
    (also for str / complex / None and ints too large for a double)."""
    # a float is a real number (isinstance of numbers.Real cost 0.3 us a call)
    if type(x) is not float and not is_real(x):
        raise PrivacyParameterError(f"{name} must be a real number, got {x!r}")
    try:
        v = float(x)
    except (OverflowError, ValueError, TypeError):
        raise PrivacyParameterError(f"{name} must be a finite real number, got {x!r}") from None
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        raise PrivacyParameterError(f"{name} must be finite and {'> 0' if positive else '>= 0'}, got {x!r}")
    return v


def as_f64(x: Any, name: str, ndim: int, shape: tuple | None = None, finite: bool = False) -> np.ndarray:
    """`x` as a C-contiguous float64 array with `ndim` dims (and `shape`, None = any size).

    finite=True also rejects NaN/inf here; the kernels leave it False because the Rust core
    checks every input it reads for finiteness (one pass, no temporary)."""
    a = numeric_array(x, name)
    if a.ndim != ndim:
        raise ShapeError(f"{name} must have {ndim} dimension(s), got shape {a.shape}")
    # equal tuples pass the loop (0.55 us a call), and so does a shape of None only (any size)
    if shape is not None and a.shape != shape and shape.count(None) != len(shape):
        for i, (got, want) in enumerate(zip(a.shape, shape, strict=False)):
            if want is not None and got != want:
                raise ShapeError(
                    f"{name} must have shape {tuple('*' if s is None else s for s in shape)}, "
                    f"got {a.shape} (axis {i})"
                )
    return check_all_finite(a, name) if finite else a


def all_finite(a: np.ndarray) -> bool:
    """numpy's ``not a.size or np.isfinite(a).all()``; a float64 ndarray is read in one Rust pass
    (its max |a_i| is finite iff every entry is; numpy's isfinite(a).all() took 1.3 us on a small
    array, a third of some public kernels' calls)."""
    if type(a) is np.ndarray and a.dtype == np.float64:
        return math.isfinite(_core.max_abs(a))
    return not a.size or bool(np.isfinite(a).all())  # other dtypes, a masked array (its mask)


def is_one_hot(table: Any) -> bool:
    """Every row of a feature table (rows, d) has at most one nonzero entry (tabular features):
    its Gram matrices are diagonal and a product with it is a gather."""
    return bool(((np.asarray(table) != 0).sum(axis=1) <= 1).all())


def feature_table_problem(f: Any, lead: tuple[int, ...], ndim: int) -> str | None:
    """Why `f` is not a finite real feature table of `ndim` dimensions whose first axes are `lead`
    (an agent's ``accepts`` on a FiniteMDP of the user's own), or None if it is one."""
    if f is None:
        return "it has none"
    shape = getattr(f, "shape", None)
    if shape is None:
        return f"got a {type(f).__name__}, not an array"
    if len(shape) != ndim or tuple(shape[: len(lead)]) != lead:
        return f"got shape {tuple(shape)}"
    a = np.asarray(f)
    if a.dtype.kind not in "biuf":
        return f"got dtype {a.dtype}, not a real number type"
    bad = np.argwhere(~np.isfinite(a))
    if len(bad):
        idx = tuple(int(i) for i in bad[0])
        return f"it holds the non-finite value {float(a[idx])} at index {idx}"
    return None


def check_all_finite(a: np.ndarray, name: str) -> np.ndarray:
    """`a`, refused (NonFiniteError, naming the first bad index) if any entry is NaN or inf
    (:func:`all_finite`)."""
    if not all_finite(a):
        bad = np.argwhere(~np.isfinite(a))[0]
        raise NonFiniteError(
            f"{name} contains a non-finite value {a[tuple(bad)]} at index {tuple(int(i) for i in bad)}"
        )
    return a


def value_range(x: np.ndarray) -> tuple[Any, Any]:
    """``(x.min(), x.max())`` of a non-empty integer array; an int64 vector in one Rust pass (numpy's
    min and max took 2.6 us of an agent's 10.7 us observe, checking a trajectory's indices)."""
    if type(x) is np.ndarray and x.dtype == np.int64 and x.ndim == 1:
        return _core.index_range(x)
    return x.min(), x.max()


def numeric_array(x: Any, name: str) -> np.ndarray:
    """`x` as a C-contiguous float64 array. Only bool / int / float inputs are converted:
    complex (numpy would drop the imaginary part with a mere warning), strings (numpy parses
    "1.5"), objects (ints beyond 64 bits, None, ...) raise TypeError instead of being guessed."""
    try:
        kind = x.dtype.kind if isinstance(x, np.ndarray) else np.asarray(x).dtype.kind
    except (TypeError, ValueError, OverflowError) as e:
        raise ShapeError(f"{name} must be a float array: {e}") from None
    kinds.refuse_masked(x, name)  # converted, the values under the mask were used
    if kind not in _NUMERIC_KINDS:
        raise TypeError(f"{name} must be a real numeric array (bool, int or float), got dtype kind {kind!r}")
    try:
        return np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as e:
        raise ShapeError(f"{name} must be a float array: {e}") from None


def integer_actions(table: np.ndarray, name: str = "policy") -> np.ndarray:
    """A policy table's entries as int64 action indices: an integer dtype, or floats that are all
    finite whole numbers (``np.zeros((H, S))`` is the policy of action 0); anything else (bool, a
    fractional or non-finite float, complex, object, str) is refused with a ShapeError. The one
    rule of every policy a model, a bandit or ``privrl.evaluate`` on a gymnasium env takes; the
    shape is the caller's to check."""
    if table.dtype.kind == "i":
        return table.astype(np.int64, copy=False)
    if table.dtype.kind == "u":
        _refuse_beyond_int64(table, name)  # a uint64 2^63 + 1 wrapped to the index -2^63 + 1
        return table.astype(np.int64, copy=False)
    if table.dtype.kind == "f":
        finite = np.isfinite(table)  # inf == round(inf): a non-finite entry would become -2^63
        whole = finite & (table == np.round(np.where(finite, table, 0.0)))
        if whole.all():
            _refuse_beyond_int64(table, name)  # 1e20 cast to -2^63 (and a RuntimeWarning)
            return table.astype(np.int64)
        bad = tuple(int(i) for i in np.argwhere(~whole)[0])
        raise ShapeError(
            f"{name} must hold integer action indices, got dtype {table.dtype} with "
            f"{float(table[bad])} at {list(bad)} (a float table must hold whole numbers)"
        )
    raise ShapeError(f"{name} must hold integer action indices, got dtype {table.dtype}")


def _refuse_beyond_int64(table: np.ndarray, name: str) -> None:
    """A whole number no int64 holds is no action index: refused with its own value (the cast
    wrapped it, and the error named a negative index nobody passed)."""
    with np.errstate(over="ignore"):  # 2^63 overflows float16 to inf (a RuntimeWarning): no entry is beyond
        beyond = (table >= 2**63) | (table < -(2**63))  # exact for uint64 and float64 alike
    if beyond.any():
        bad = tuple(int(i) for i in np.argwhere(beyond)[0])
        raise ShapeError(f"{name} holds {table[bad]} at {list(bad)}: no action index is that large")


def check_number(
    value: Any,
    name: str,
    *,
    integer: bool = False,
    low: float | None = None,
    low_open: bool = False,
    high: float | None = None,
    high_open: bool = False,
    allow_inf: bool = False,
) -> Any:
    """A number from user input (a config file, a flag: "inf" is accepted where ``allow_inf``),
    exactly, within the bounds; bools and other types are refused."""
    if isinstance(value, str) and value.strip().lower() in ("inf", "+inf", "infinity"):
        value = math.inf
    x = real_or_nan(value)  # an int beyond a double (10**400) is NaN, refused as not finite below
    if not is_real(value) or (integer and not (x.is_integer() or is_integer(value))):
        raise PrivacyParameterError(
            f"{name} must be {'an integer' if integer else 'a number'}, got {value!r}"
        )
    if math.isnan(x) or (math.isinf(x) and not allow_inf):
        raise PrivacyParameterError(f"{name} must be a finite number, got {value!r}")
    if low is not None and (x < low or (low_open and x == low)):
        raise PrivacyParameterError(f"{name} must be {'>' if low_open else '>='} {low:g}, got {value!r}")
    if high is not None and (x > high or (high_open and x == high)):
        raise PrivacyParameterError(f"{name} must be {'<' if high_open else '<='} {high:g}, got {value!r}")
    return int(x) if integer else x


def check_epsilons(value: Any, name: str) -> tuple[float, ...]:
    """A non-empty list of distinct epsilons, each inf (non-private) or a user epsilon."""
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value:
        raise PrivacyParameterError(
            f"{name} must be a non-empty list of epsilons (> 0, inf = non-private), got {value!r}"
        )
    out = tuple(
        check_number(e, f"{name}[{i}]", low=0.0, low_open=True, allow_inf=True) for i, e in enumerate(value)
    )
    lo, hi = EPSILON_RANGE
    for i, e in enumerate(out):
        if math.isfinite(e) and not lo <= e <= hi:
            raise PrivacyParameterError(
                f"{name}[{i}] must be inf (non-private) or in [{lo:g}, {hi:g}], got {e!r}"
            )
    if len(set(out)) != len(out):
        raise PrivacyParameterError(f"{name} has a repeated epsilon: {list(value)!r}")
    return out


#: A larger seed count is a typo (and would not fit in memory), not a study.
MAX_SEED_COUNT = 100_000


def check_seeds(value: Any, name: str) -> tuple[int, ...]:
    """A seed count (seeds 0..n-1) or a non-empty list of distinct integer seeds in [0, 2^63)."""
    if is_integer(value):
        value = int(value)
        if not 1 <= value <= MAX_SEED_COUNT:
            raise SeedError(f"{name} (a seed count) must be in [1, {MAX_SEED_COUNT:,}], got {value}")
        return tuple(range(value))
    if not isinstance(value, (list, tuple)) or not value:
        raise SeedError(f"{name} must be a seed count or a non-empty list of integer seeds, got {value!r}")
    out = []
    for i, s in enumerate(value):
        # privrl's one integer rule (check_pos_int): a float such as 1.0 is refused, numpy ints taken
        if not is_integer(s) or not 0 <= int(s) < 2**63:
            raise SeedError(f"{name}[{i}] (a seed) must be an integer in [0, 2^63), got {s!r}")
        out.append(int(s))
    if len(set(out)) != len(out):
        raise SeedError(f"{name} has a repeated seed: {list(value)!r}")
    return tuple(out)


#: The asymmetry a matrix the kernels take as symmetric may have: max |a_ij - a_ji| relative to
#: max |a_ij| (rounding, e.g. of np.linalg.inv, is ~1e-16; a transposed or a wrong matrix is not).
SYMMETRY_RTOL = 1e-10


def check_symmetric(a: np.ndarray, name: str) -> np.ndarray:
    """`a`, refused (AssumptionError) unless symmetric up to SYMMETRY_RTOL of its largest entry:
    the Rust kernels use (a + a^T) / 2, which for a non-symmetric matrix is silently another one.
    O(d^2). A non-square, empty or non-finite `a` is left to the Rust core's shape and finiteness
    checks (ShapeError, NonFiniteError)."""
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.size == 0:
        return a
    # one pass in Rust: numpy's abs, max, a - a^T and argmax took 13 us at d = 5 (most of a tree step)
    scale, gap, i, j = _core.symmetry_gap(np.asarray(a, dtype=np.float64))
    if not math.isfinite(scale):
        return a
    if gap > SYMMETRY_RTOL * scale:
        raise _asymmetric(name, scale, gap, i, j)
    return a


def check_symmetric_stack(a: np.ndarray, name: str) -> np.ndarray:
    """A (count, d, d) float64 stack `a`, checked as ``check_symmetric(a[k], f"{name}[{k}]")`` for
    k in order (the same rule, refusal and message) in one Rust call: the Python loop took 1.2 us
    a matrix."""
    bad = _core.first_asymmetric(a, SYMMETRY_RTOL)
    if bad is not None:
        k, scale, gap, i, j = bad
        raise _asymmetric(f"{name}[{k}]", scale, gap, i, j)
    return a


def _asymmetric(name: str, scale: float, gap: float, i: int, j: int) -> AssumptionError:
    return AssumptionError(
        f"{name} must be symmetric: |{name}[{i}, {j}] - {name}[{j}, {i}]| = {gap:.3g} "
        f"exceeds {SYMMETRY_RTOL:g} x its largest entry {scale:.3g}"
    )


def check_finite_scale(scale: float, name: str) -> float:
    """A noise scale that overflowed (a tiny epsilon, a huge sensitivity) is refused: a mechanism
    with an infinite scale would release inf or NaN."""
    if not math.isfinite(scale):
        raise PrivacyParameterError(
            f"the noise scale {name} overflows ({scale}): the sensitivity / epsilon ratio is beyond a "
            "double's range"
        )
    return scale


def log_inverse(delta: float) -> float:
    """``log(1 / delta)`` for ``delta`` in (0, 1), also for subnormal deltas (below 5.6e-309,
    ``1 / delta`` overflows to inf: ``-log(delta)`` then, finite; elsewhere the same bits as
    ``log(1 / delta)``, which the calibrations were computed with)."""
    inv = 1.0 / delta
    return math.log(inv) if math.isfinite(inv) else -math.log(delta)
