"""Typed Python front of the Rust kernels (continual-release noise, rank-one updates, batched
optimistic Q, mixture phi_V); the numpy references live in `privrl.kernels.reference`.

Every wrapper validates and converts its inputs once (C-contiguous float64, shapes, finite
values) and raises the privrl exception family; the Rust core re-checks lengths.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from privrl import _core
from privrl.common.checks import (
    MAX_INT,
    all_finite,
    as_f64,
    check_all_finite,
    check_finite_real,
    check_flag,
    check_int,
    check_symmetric,
    check_symmetric_stack,
    is_integer,
    is_real,
    numeric_array,
    seed_bytes,
    tie_seed,
)
from privrl.common.errors import NonFiniteError, PrivacyParameterError, ShapeError
from privrl.common.memory import refuse_over_memory
from privrl.kernels.continual import (
    DEFAULT_GRID_BITS,
    MAX_NODE_LEN,
    MECHANISMS,
    IndependentCopy,
    MechanismProfile,
    PrefixMechanism,
    TreeAggregator,
    check_divisor,
    make_prefix_mechanism,
    mechanism_profile,
    parse_noise,
    parse_shape,
)

__all__ = [
    "TreeAggregator",
    "PrefixMechanism",
    "MechanismProfile",
    "MECHANISMS",
    "make_prefix_mechanism",
    "mechanism_profile",
    "NoiseStream",
    "RankOneInverse",
    "MixtureFeatures",
    "optimistic_q",
    "optimistic_values",
    "state_values",
    "greedy",
    "spd_inverse",
    "batched_matvec",
    "floored_release",
    "sigma_bar",
    "spd_solve",
    "min_eigenvalue",
]


def _scalar(x: Any, name: str) -> float:
    """A real scalar (inf allowed: clipping bounds); the Rust kernels check the ranges. float()
    alone would also take "1.5" or True. A float is one (isinstance of numbers.Real cost 0.3 us)."""
    if type(x) is float:
        return x
    if not is_real(x):
        raise TypeError(f"{name} must be a real number, got {x!r}")
    try:
        return float(x)
    except OverflowError:
        raise PrivacyParameterError(f"{name} is too large for a double: {x!r}") from None


def _positive_int(x: Any, name: str) -> int:
    # Bounded above as well: a Python int beyond u64 would surface as OverflowError from PyO3.
    if not is_integer(x):
        raise PrivacyParameterError(f"{name} must be an integer >= 1, got {x!r}")
    if not (1 <= int(x) <= MAX_INT):
        raise PrivacyParameterError(f"{name} must be an integer in [1, {MAX_INT}], got {x}")
    return int(x)


class NoiseStream(IndependentCopy):
    """A privacy-noise stream (ChaCha12) of i.i.d. Gaussian N(0, scale^2) or Laplace(scale)
    vectors and symmetric (Z' + Z'^T)/divisor matrices. seed=None keys it from OS entropy.

    noise="discrete_gaussian" / "discrete_laplace" draw with the exact samplers on the grid
    scale * 2^-grid_bits (for discrete Laplace matrices: grid / divisor, divisor an integer in
    [1, 64]); the values are exact multiples of that lattice unit, and data they are added to
    must be rounded to it first (`round_to_grid`), otherwise two neighbouring outputs have
    disjoint supports. The default None is "discrete_gaussian", a default agent's law
    (``agent.calibration.node_noise``); "gaussian" / "laplace" are the continuous (float) laws of
    sampler="float". ``divisor=None`` is :func:`~privrl.kernels.continual.default_divisor`: 2
    for both Laplace laws (App. "Pure DP", (Z' + Z'^T)/2: entry variances b^2 off the diagonal,
    2 b^2 on it), sqrt(2) for the Gaussian laws (App. B)."""

    def __init__(
        self,
        noise: str | None = None,
        scale: float = 1.0,
        seed: Any = None,
        grid_bits: int = DEFAULT_GRID_BITS,
    ):
        self.noise_kind, self.scale, self.grid_bits = parse_noise(noise, scale, grid_bits)
        self._s = _core.NoiseStream(self.noise_kind, self.scale, seed_bytes(seed), self.grid_bits)

    def vectors(self, count: int, n: int) -> np.ndarray:
        """(count, n) i.i.d. entries."""
        count = check_int(count, "count", 0)
        n = check_int(n, "n", 1, MAX_NODE_LEN)
        return self._s.vectors(count, n)

    def symmetric(self, count: int, d: int, divisor: float | None = None) -> np.ndarray:
        """(count, d, d) symmetric noise matrices."""
        count = check_int(count, "count", 0)
        (d, _), _, _ = parse_shape((d, d))
        out = self._s.symmetric(count, d, check_divisor(divisor, self.noise_kind)).reshape(count, d, d)
        return _finite_out(out, "noise")

    def lattice_unit(self, symmetric: bool = False, divisor: float | None = None) -> float | None:
        """The lattice the discrete samplers' values live on (None for continuous noise). A
        divisor the discrete sampler refuses is refused (PrivacyParameterError): the sampler's
        own rule, so no grid is given that no draw lives on."""
        if check_flag(symmetric, "symmetric"):  # a truthy "no" chose the matrix lattice
            return self._s.lattice_unit(check_divisor(divisor, self.noise_kind))
        return self._s.lattice_unit(None)

    def round_to_grid(self, x: Any, symmetric: bool = False, divisor: float | None = None) -> np.ndarray:
        """`x` rounded to the lattice of the discrete samplers (unchanged for continuous noise).
        For symmetric discrete Laplace matrices the diagonal goes to even lattice units: their
        diagonal noise is 2 Z'_ii, and data of the other parity would be told apart. NaN / inf
        are refused (NonFiniteError), as by :meth:`privatize`. The result has `x`'s shape: a 0-d
        array for a scalar (a Python or numpy number, or a 0-d array)."""
        a = check_all_finite(numeric_array(x, "x"), "x")
        if a.ndim == 1 and np.ndim(x) == 0:  # numeric_array gives a scalar as shape (1,)
            a = a.reshape(())
        unit = self.lattice_unit(symmetric, divisor)
        if unit is None:
            return a.copy() if a is x else a  # never the caller's array itself
        # np.rint is np.round at 0 decimals (half to even) without its Python layer (2.1 -> 0.8 us
        # at n = 3); a / unit below 1e300 cannot overflow, so no np.errstate (0.9 us) is needed
        if _core.max_abs(a) < unit * 1e300:
            r = np.rint(a / unit)
        else:
            with np.errstate(over="ignore"):
                r = np.rint(a / unit)
        if not all_finite(np.asarray(r)):
            raise PrivacyParameterError(
                f"x / lattice unit overflows (unit {unit:g}): x is too large for this lattice"
            )
        if symmetric and self.noise_kind == "discrete_laplace" and a.ndim >= 2:
            d = a.shape[-1]
            idx = np.arange(d)
            r[..., idx, idx] = 2.0 * np.rint(a[..., idx, idx] / (2.0 * unit))
        return np.asarray(r * unit)  # numpy gives a 0-d input's result as a scalar: an array, as above

    def privatize(self, x: Any, symmetric: bool = False, divisor: float | None = None) -> np.ndarray:
        """The user-side randomizer's messages: ``x + noise`` for a (count, n) block of vectors or
        a (count, d, d) block of symmetric matrices (``symmetric=True``, noise (Z' + Z'^T)/divisor).
        With a discrete sampler the data is rounded to the lattice (:meth:`round_to_grid`) and the
        exact integer noise added before one scaling, so each message is a function of the
        integer release alone. Draws like :meth:`vectors` / :meth:`symmetric`."""
        if check_flag(symmetric, "symmetric"):
            a = as_f64(x, "x", 3, (None, None, None), finite=True)
            count, d = a.shape[0], a.shape[1]
            if a.shape[2] != d or d == 0:  # d = 0: the Rust stream's 'nodes must have at least one entry'
                raise ShapeError(f"x must be (count, d, d) with d >= 1, as symmetric() takes, got {a.shape}")
            div = check_divisor(divisor, self.noise_kind)
            check_symmetric_stack(a, "x")  # the noise is symmetric: a message would not be
            flat = a.reshape(count, d * d)  # as_f64: C-contiguous float64, so a view
            return _finite_out(self._s.privatize(flat, div).reshape(count, d, d), "messages")
        a = as_f64(x, "x", 2, (None, None), finite=True)
        if a.shape[1] == 0:  # the Rust stream's 'nodes must have at least one entry' named no argument
            raise ShapeError(f"x must be (count, n) with n >= 1, as vectors() takes, got {a.shape}")
        return _finite_out(self._s.privatize(a, None), "messages")  # as_f64: C-contiguous float64

    @property
    def draws(self) -> int:
        return self._s.draws


#: Entries up to this have squares and row sums of squares far inside a double's range.
_SAFE_ENTRY = 1e150


def _bounded_rows(x: np.ndarray, name: str) -> np.ndarray:
    """Finite rows whose x x^T is finite too: ||x||^2 beyond the float range would turn Lambda^{-1}
    into NaN without an error (found by fuzzing). Entries all within +-1e150 (one Rust pass) give
    squares <= 1e300 and, in rows shorter than 1e8, sums of them in any order below 1e308: the
    numpy test (6.4 us a call, 80% of a d = 5 update) would pass, and is skipped."""
    if x.shape[-1] < 10**8 and _core.max_abs(x) <= _SAFE_ENTRY:
        return x
    with np.errstate(over="ignore", invalid="ignore"):
        sq = np.einsum("...i,...i->...", x, x)
    if not np.all(np.isfinite(sq)) and np.all(np.isfinite(x)):
        raise NonFiniteError(f"{name}: ||x||^2 overflows a float (entries up to ~1e154 are representable)")
    return x


class RankOneInverse(IndependentCopy):
    """Lambda = lam I + sum x x^T and Lambda^{-1}, maintained by Sherman-Morrison in O(d^2)
    per update and re-factorized by Cholesky every `refactor_every` updates."""

    def __init__(self, d: int, lam: float, refactor_every: int = 1024):
        d = _positive_int(d, "d")
        lam = check_finite_real(lam, "lam")
        # before Rust allocates: d = 10^9 aborted the process, d = 2^32 overflowed d * d (SIGSEGV)
        refuse_over_memory(
            "RankOneInverse", 2.0 * d * d, f"Lambda and its inverse (d = {d})", "Use a smaller d."
        )
        self.d = d
        self._sm = _core.ShermanMorrison(d, lam, _positive_int(refactor_every, "refactor_every"))

    def update(self, x: Any) -> None:
        self._sm.update(_bounded_rows(as_f64(x, "x", 1, (self.d,)), "x"))

    def update_batch(self, xs: Any) -> None:
        """Add the rows of an (n, d) block in one call."""
        xs = _bounded_rows(as_f64(xs, "xs", 2, (None, self.d)), "xs")
        self._sm.update_batch(xs)

    def matrix(self) -> np.ndarray:
        return self._sm.matrix()

    def inverse(self) -> np.ndarray:
        return self._sm.inverse()

    def solve(self, u: Any) -> np.ndarray:
        """Lambda^{-1} u."""
        return self._sm.solve(as_f64(u, "u", 1, (self.d,)))

    def refactorize(self) -> None:
        self._sm.refactorize()

    def inverse_error(self) -> float:
        """max |Lambda Lambda^{-1} - I|."""
        return self._sm.inverse_error()

    @property
    def updates(self) -> int:
        return self._sm.updates

    @property
    def lam(self) -> float:
        return self._sm.lam


def spd_inverse(a: Any) -> np.ndarray:
    """Inverse of a symmetric positive-definite matrix (Cholesky); NotPositiveDefiniteError otherwise
    (AssumptionError for a non-symmetric one: the kernel would invert (a + a^T) / 2)."""
    return _finite_out(_core.spd_inverse(check_symmetric(as_f64(a, "matrix", 2), "matrix")), "inverse")


def _finite_out(out: np.ndarray, what: str) -> np.ndarray:
    """A result that overflowed (the inverse of a matrix with eigenvalues near 1e-310) is refused."""
    return check_all_finite(out, f"the {what} (overflowed: a matrix too close to singular, or too large)")


def batched_matvec(m: Any, v: Any) -> np.ndarray:
    """m[k] @ v[k] for a stack of (n, d, d) matrices and (n, d) vectors, each sum left to right
    (the released w~_h = Lambda~_h^{-1} u~_h; the Rust agents compute them the same way)."""
    v = as_f64(v, "v", 2, finite=True)
    n, d = v.shape
    return _finite_out(_core.batched_matvec(as_f64(m, "m", 3, (n, d, d), finite=True), v), "products")


def floored_release(gram: Any, target: Any, lam: float, shift: float, w0: Any) -> tuple:
    """The practical release of every step (privrl.privacy.practical): from the noisy sums gram
    (H, d, d) and target (H, d), with G~ + (lam + shift) I = V diag(ev) V^T, the floored design
    A = V diag(max(ev, lam)) V^T, A^{-1}, A^{-2}, the weights A^{-1} (u~ + (lam + shift) w0 + E w0)
    with E = A - G~ - (lam + shift) I, and ||E|| per step. Returns (design, inverse, inverse2,
    weights, correction); the Rust agents compute them with the same kernel."""
    target = as_f64(target, "target", 2)
    n, d = target.shape
    gram = as_f64(gram, "gram", 3, (n, d, d))
    check_symmetric_stack(gram, "gram")
    lam, shift = check_finite_real(lam, "lam"), check_finite_real(shift, "shift", positive=False)
    if lam < sys.float_info.min or not math.isfinite(lam + shift):  # 1 / lam, lam + shift: finite
        raise PrivacyParameterError(
            f"lam = {lam!r} and lam + shift = {lam + shift!r} must be normal and finite"
        )
    out = _core.floored_release(gram, target, lam, shift, as_f64(w0, "w0", 1, (d,), finite=True))
    for part, name in zip(out, ("design", "inverse", "inverse2", "weights", "correction"), strict=True):
        _finite_out(part, name)  # G~ + (lam + shift) I beyond a double's range
    return out


def sigma_bar(
    X: np.ndarray,
    X2: np.ndarray,
    hat_weights: np.ndarray,
    hat_inverse: np.ndarray,
    hat_gamma: np.ndarray | None,
    tilde_weights: np.ndarray,
    tilde_form: np.ndarray,
    tilde_radius: float,
    beta_check: float,
) -> np.ndarray:
    """UCRL-VTR+'s sigma-bar (H,) (Alg. 3): sqrt(max{H^2/d, V-bar + E}) with V-bar from the two
    billboards' estimates and E from the widths beta-check ||X||_{Lambda^^-1} (practical: with the
    privacy part gamma_h ||Lambda^^-1 X|| in quadrature) and tilde_radius ||X2||_{tilde_form}.
    Every input finite (the kernel's clamps and maxima would hide a NaN), the arrays (H, d) and
    (H, d, d) with the forms symmetric, gamma (H,) >= 0, the radii >= 0.
    """
    X = as_f64(X, "X", 2, finite=True)
    H, d = X.shape
    vec, mat = (H, d), (H, d, d)
    gamma = None if hat_gamma is None else as_f64(hat_gamma, "hat_gamma", 1, (H,), finite=True)
    if gamma is not None and (gamma < 0).any():
        raise PrivacyParameterError("hat_gamma must be >= 0")
    inverse, form = (
        as_f64(hat_inverse, "hat_inverse", 3, mat, True),
        as_f64(tilde_form, "tilde_form", 3, mat, True),
    )
    for h in range(H):
        check_symmetric(inverse[h], f"hat_inverse[{h}]")
        check_symmetric(form[h], f"tilde_form[{h}]")
    return _core.sigma_bar(
        X,
        as_f64(X2, "X2", 2, vec, True),
        as_f64(hat_weights, "hat_weights", 2, vec, True),
        inverse,
        gamma,
        as_f64(tilde_weights, "tilde_weights", 2, vec, True),
        form,
        check_finite_real(tilde_radius, "tilde_radius", positive=False),
        check_finite_real(beta_check, "beta_check", positive=False),
    )


def spd_solve(a: Any, b: Any) -> np.ndarray:
    """a^{-1} b for a symmetric positive-definite a (Cholesky); a non-symmetric a is refused."""
    a = check_symmetric(as_f64(a, "matrix", 2), "matrix")
    return _finite_out(_core.spd_solve(a, as_f64(b, "b", 1, (a.shape[0],))), "solution")


def min_eigenvalue(a: Any) -> float:
    """Smallest eigenvalue of a symmetric (d, d) matrix (any sign: an indefinite matrix has a
    negative one). A non-symmetric matrix is refused (AssumptionError): what is computed is the
    minimum eigenvalue of a symmetric matrix, and (a + a^T) / 2 would silently stand in for it;
    the tolerance is max |a_ij - a_ji| <= 1e-10 max |a_ij| (SYMMETRY_RTOL), which rounding passes."""
    return _core.min_eigenvalue(check_symmetric(as_f64(a, "matrix", 2), "matrix"))


def _q_inputs(phi, w, inv, offset, n_actions=None, name="phi"):
    """The feature rows ``phi`` (refused as ``name``), ``w``, the symmetric ``inv``, ``offset``
    (None or one per row) and ``n_actions`` (None, or a positive int that splits the rows), checked."""
    phi = as_f64(phi, name, 2)
    d = phi.shape[1]
    w = as_f64(w, "w", 1, (d,))
    inv = check_symmetric(as_f64(inv, "inv", 2, (d, d)), "inv")
    if offset is not None:
        offset = as_f64(offset, "offset", 1, (phi.shape[0],))
    if n_actions is not None:
        n_actions = _positive_int(n_actions, "n_actions")
        if phi.shape[0] % n_actions:
            raise ShapeError(f"{phi.shape[0]} feature rows do not split into groups of {n_actions} actions")
    return phi, w, inv, offset, n_actions


def optimistic_q(
    phi: Any,
    w: Any,
    inv: Any,
    beta: float,
    upper: float = math.inf,
    lower: float = -math.inf,
    offset: Any = None,
) -> np.ndarray:
    """clip_[lower, upper](offset + Phi w + beta sqrt(max(0, phi^T inv phi))) for every row.

    `inv` (d, d) is the symmetric inverse design matrix Lambda^{-1}: a non-symmetric one is
    refused (AssumptionError) unless max |inv_ij - inv_ji| <= 1e-10 max |inv_ij| (SYMMETRY_RTOL;
    rounding, e.g. of np.linalg.inv, passes and the kernel uses (inv + inv^T) / 2). This O(d^2)
    check is the only one on `inv`: it is not checked to be positive (semi-)definite, and an
    indefinite `inv` gives a bonus of 0 where phi^T inv phi < 0."""
    phi, w, inv, offset, _ = _q_inputs(phi, w, inv, offset)
    q = _core.optimistic_q(
        phi, w, inv, _scalar(beta, "beta"), _scalar(lower, "lower"), _scalar(upper, "upper"), offset
    )
    return _finite_out(q, "Q values")


def greedy(q: Any, ties: str = "random", rng: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise (max, argmax) of q (n_states, n_actions); ties uniformly at random from rng
    (a Generator or an int seed) or by lowest index (ties="lowest")."""
    q = as_f64(q, "q", 2)
    return _core.group_max(q, tie_seed(ties, rng))


def optimistic_values(
    phi: Any,
    w: Any,
    inv: Any,
    beta: float,
    n_actions: int,
    upper: float = math.inf,
    lower: float = -math.inf,
    offset: Any = None,
    ties: str = "random",
    rng: Any = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fused optimistic_q + greedy for phi of shape (n_states * n_actions, d), rows grouped by
    state. Returns (Q (n_states, n_actions), V (n_states,), greedy actions (n_states,)). `inv` is
    checked for symmetry as in optimistic_q (AssumptionError)."""
    phi, w, inv, offset, n_actions = _q_inputs(phi, w, inv, offset, n_actions)
    q, v, greedy = _core.optimistic_values(
        phi,
        w,
        inv,
        _scalar(beta, "beta"),
        n_actions,
        _scalar(lower, "lower"),
        _scalar(upper, "upper"),
        offset,
        tie_seed(ties, rng),
    )
    # finite inputs clipped to any bound give finite values: an inf is an overflow
    return _finite_out(q, "Q values"), _finite_out(v, "values"), greedy


def state_values(
    table: Any,
    w: Any,
    inv: Any,
    beta: float,
    n_actions: int,
    upper: float = math.inf,
    lower: float = -math.inf,
    states: Any = None,
) -> np.ndarray:
    """V(s) = clip_[lower, upper](max_a phi(s,a) w + beta ||phi(s,a)||_inv) in one Rust call.

    table: (n_states * n_actions, d), rows grouped by state (row s * n_actions + a is phi(s,a)).
    states: int indices into the table's states (repeats allowed: one value per entry), or None
    for every state. The rows are read through the index, never copied into an (n * A, d) block.
    `inv` is checked for symmetry as in optimistic_q (AssumptionError).
    """
    table, w, inv, _, n_actions = _q_inputs(table, w, inv, None, n_actions, "table")
    if states is not None:
        states = _index_array(states, "states")
        if states.ndim != 1:
            raise ShapeError(f"states must be a 1-d index array, got shape {states.shape}")
    v = _core.state_values(
        table,
        w,
        inv,
        _scalar(beta, "beta"),
        n_actions,
        _scalar(lower, "lower"),
        _scalar(upper, "upper"),
        states,
    )
    return _finite_out(v, "values")


class MixtureFeatures:
    """Linear-mixture features phi(s'|s,a) (Asm. 2) stored sparsely; `phi_v(v)` returns
    phi_V(s,a) = sum_s' phi(s'|s,a) V(s') for every (s,a) as an (S*A, d) array."""

    def __init__(self, features: Any):
        f = as_f64(features, "features", 4)
        S, A, S2, d = f.shape
        if S2 != S:
            raise ShapeError(f"features must have shape (S, A, S, d), got {f.shape}")
        self.S, self.A, self.d = S, A, d
        self._f = _core.MixtureFeatures(f.reshape(S * A, S, d))

    def phi_v(self, v: Any) -> np.ndarray:
        return _finite_out(self._f.phi_v(as_f64(v, "v", 1, (self.S,), finite=True)), "phi_V")

    def phi_v_rows(self, v: Any, rows: Any) -> np.ndarray:
        """Row i: phi_{v_i}(rows_i) for v (n, S) and rows (n,) indices s * A + a (the same sums as
        phi_v, for the visited pairs only)."""
        v = as_f64(v, "v", 2, (None, self.S))
        rows = _index_array(rows, "rows")  # an int64 cast truncated 0.9 to row 0
        if rows.shape != (v.shape[0],) or (rows.size and (rows.min() < 0 or rows.max() >= self.S * self.A)):
            raise ShapeError(f"rows must be {v.shape[0]} indices in [0, {self.S * self.A})")
        return _finite_out(self._f.phi_v_rows(v, rows), "phi_V")

    @property
    def nnz(self) -> int:
        return self._f.nnz


def _index_array(x: Any, name: str) -> np.ndarray:
    """``x`` as a C-contiguous int64 index array: integer dtypes only (an int64 cast would
    truncate 0.5 to index 0 without a word; an empty list is an empty index array), and no index
    beyond int64 (a uint64 2^63 + 5 would wrap to a negative one)."""
    raw = np.asarray(x)
    if raw.size == 0:
        return np.zeros(raw.shape, dtype=np.int64)
    if raw.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an integer index array, got dtype {raw.dtype}")
    if raw.dtype.kind == "u" and int(raw.max()) > MAX_INT:
        raise ShapeError(f"{name}: index {int(raw.max())} is beyond int64")
    # astype keeps a 0-d index 0-d (ascontiguousarray made it (1,): states=0 passed the 1-d check)
    return raw.astype(np.int64, order="C", copy=False)
