"""Linear contextual bandits (the paper's setting with H = 1) with exact regret, and the standard
supervised-to-bandit reduction of a classification dataset.

A user draws a context index s uniformly from the n rows of a public table (with replacement),
sees the context ``x_s`` (``||x_s|| <= 1``), plays an arm a and receives a reward in [0, 1] with
mean ``means[s, a]`` (Bernoulli). The exact regret of a play is ``max_b means[s, b] - means[s, a]``.
With disjoint arms the feature of (s, a) is ``phi = e_a (x) x_s`` (d = A p), never materialized.
"""

from __future__ import annotations

import math
import sys
import warnings
import weakref
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from privrl.common.checks import check_choice, check_flag, check_seed, integer_actions
from privrl.common.errors import (
    AssumptionError,
    AssumptionWarning,
    IndexRangeError,
    NonFiniteError,
    ShapeError,
)
from privrl.common.kinds import array_value, refuse_masked
from privrl.envs.finite import ReadOnlyCopies, digest, env_name, outside_unit_interval

__all__ = ["ContextualBandit"]


class ContextualBandit(ReadOnlyCopies):
    """A contextual bandit on a public context table.

    Parameters
    ----------
    contexts : (n, p) real array, every row of norm <= 1 (checked: the privacy noise is
        calibrated for ``||x|| <= 1``; :meth:`from_classification` scales for you).
    means : (n, A) expected rewards in [0, 1] (rewards are Bernoulli(means[s, a])); round-off
        within 1e-9 is clipped into [0, 1], as FiniteMDP's rewards.
    A value outside these ranges raises AssumptionError (a ValueError), as LinearMDP and FiniteMDP
    do for theirs; a wrong shape raises ShapeError.
    name : a label for results.

    Attributes: ``H = 1``, ``S = n`` (contexts play the role of states), ``A``, ``p``,
    ``d = A p`` (the disjoint-arm feature dimension), ``labels`` (classification only).
    """

    H = 1

    def __init__(self, contexts: Any, means: Any, name: str | None = None):
        x = _real_array(contexts, "contexts", 2)
        m = _real_array(means, "means", 2)
        # the shapes as given: a 1-d table was read as one row, (2,) and (2,) built one context
        given = (np.shape(contexts), np.shape(means))
        if any(len(g) != 2 for g in given) or x.shape[0] != m.shape[0] or x.shape[0] == 0:
            raise ShapeError(
                f"contexts must be (n, p) and means (n, A) with the same n >= 1, got {given[0]} and "
                f"{given[1]}"
            )
        if m.shape[1] < 2 or x.shape[1] < 1:
            raise ShapeError(
                f"need p >= 1 context features and A >= 2 arms, got p = {x.shape[1]}, A = {m.shape[1]}"
            )
        if not (np.isfinite(x).all() and np.isfinite(m).all()):
            raise NonFiniteError("contexts and means must be finite")
        norms = np.linalg.norm(x, axis=1)
        # values outside the model's assumptions: AssumptionError, as LinearMDP / FiniteMDP raise it
        if norms.max() > 1.0 + 1e-9:
            raise AssumptionError(
                f"every context must have ||x|| <= 1 (the privacy noise is calibrated for it); the "
                f"largest is {norms.max():.12g} (context {int(norms.argmax())}): scale the table "
                "(ContextualBandit.from_classification does)"
            )
        bad = outside_unit_interval(m)  # FiniteMDP's rule for rewards: round-off within 1e-9 clipped
        if bad is not None:
            raise AssumptionError(
                f"means must lie in [0, 1] (rewards are Bernoulli); means[{bad[0]}, {bad[1]}] = "
                f"{float(m[bad])!r}"
            )
        np.clip(m, 0.0, 1.0, out=m)
        x.setflags(write=False)
        m.setflags(write=False)
        self.contexts, self.means = x, m
        self.S, self.p = x.shape
        self.A = m.shape[1]
        self.d = self.A * self.p
        self.name = env_name(name) or f"ContextualBandit(n={self.S}, p={self.p}, A={self.A})"
        self.labels: np.ndarray | None = None  # classification only: each row's arm
        self.classes: np.ndarray | None = None  # classification only: arm a is class classes[a]
        self._featurizer: _Featurizer | None = None
        self._fingerprint: dict[str, str] | None = None
        _LIVE.add(self)

    def __setstate__(self, state: dict[str, Any]) -> None:
        """An unpickled bandit (a device's, a worker's) is live too (:func:`find_contexts`)."""
        super().__setstate__(state)
        _LIVE.add(self)

    @classmethod
    def from_classification(
        cls,
        X: Any,
        y: Any,
        seed: Any = None,
        standardize: bool = True,
        bias: bool = True,
        scale: str = "row",
        name: str | None = None,
    ) -> ContextualBandit:
        """The supervised-to-bandit reduction: arms are the classes, the reward is 1 for the
        right class and 0 otherwise. Features are standardized (zero mean, unit variance; constant
        columns dropped); ``scale="row"`` (default) puts every row on the unit sphere and, with
        ``bias``, appends a constant so that ``x = [z / ||z||, 1] / sqrt(2)`` (each arm's linear
        model gets an intercept; ||x|| = 1 but for a row at the column means, z = 0, which stays
        [0, 1] / sqrt(2), or 0 without ``bias``: the privacy noise is calibrated for ||x|| <= 1,
        so a smaller x only loses signal against it; of a single feature column only the sign is
        left, with an AssumptionWarning); ``scale="max"`` appends 1 and divides every row by the
        largest row norm (the table's geometry kept, typical norms far below 1).
        ``seed`` shuffles the rows (users are drawn uniformly with replacement by the run's own
        seed either way). Labels are integers, strings or booleans (a Decimal, date, ... is refused with
        TypeError: an agent's file carries the classes, and only those load back); every label must
        be present (NaN / None refused, not made a class) and
        the features must be real numbers whose standardization and scaling do not overflow
        float64 (refused with NonFiniteError: rescale X)."""
        X = _real_array(X, "X", 2)
        try:
            raw, y = y, np.asarray(y)
            if y.dtype.kind in "US" and not isinstance(raw, np.ndarray):
                # numpy makes a list ["1", 1] strings, one class; a pandas Series of them is refused
                y = _one_label_type(np.asarray(raw, dtype=object), y)
        except (TypeError, ValueError) as e:  # ragged
            raise ShapeError(f"y must be a 1-d array of labels: {e}") from None
        if X.ndim != 2 or y.shape != (X.shape[0],):
            raise ShapeError(f"X must be (n, p) and y (n,), got {X.shape} and {y.shape}")
        if not np.isfinite(X).all():
            bad = ~np.isfinite(X)
            i, j = (int(v) for v in np.argwhere(bad)[0])
            raise NonFiniteError(
                f"X contains NaN or inf: X[{i}, {j}] = {X[i, j]}, in {int(bad.any(axis=1).sum())} of its "
                f"{X.shape[0]} rows; drop or impute those rows (and their labels) first"
            )
        check_choice(scale, ("row", "max"), "scale")
        standardize = check_flag(standardize, "standardize", ShapeError)  # "no" is truthy
        bias = check_flag(bias, "bias", ShapeError)
        classes, labels = _classes(y)
        if len(classes) < 2:
            raise ShapeError("a classification bandit needs at least 2 classes")
        order = (
            np.random.default_rng(check_seed(seed)).permutation(len(y))
            if seed is not None
            else np.arange(len(y))
        )
        X, labels = X[order], labels[order]
        featurizer = _Featurizer.fit(X, standardize, bias, scale)
        if not featurizer.keep.any() and not bias:  # was "need p >= 1 context features, got p = 0"
            raise ShapeError(
                f"every one of X's {X.shape[1]} columns is constant, and standardize drops constant "
                "columns: with bias=False no context feature is left (pass bias=True, or "
                "standardize=False to keep them)"
            )
        if scale == "row" and np.count_nonzero(featurizer.keep) == 1:
            warnings.warn(
                f'X has one feature column ({X.shape[1]} given; constant ones are dropped): scale="row" '
                "puts each row on the unit sphere, which in one dimension keeps only its sign (every "
                'context is one of two vectors); pass scale="max" to keep the feature\'s magnitude',
                AssumptionWarning,
                stacklevel=2,
            )
        means = np.zeros((len(labels), len(classes)))
        means[np.arange(len(labels)), labels] = 1.0
        env = cls(featurizer(X), means, name=name)
        env.labels, env.classes, env._featurizer = labels, classes, featurizer
        return env

    def featurize(self, X: Any) -> np.ndarray:
        """The context vector(s) of raw feature row(s) ``X`` ((p_raw,) or (m, p_raw)), by the
        transform :meth:`from_classification` fitted on its table (the table's mean, standard
        deviation and scale), for a live user: ``agent.choose(env.featurize(x))`` plays arm a,
        the class ``env.classes[a]``. A bandit built from its contexts directly has no transform:
        its contexts are already vectors of length p (returned as they are, shape checked). Rows
        of norm above 1 (possible with ``scale="max"``) are projected by the agent's intake."""
        v = _real_array(X, "raw features", 1)
        width = self.p if self._featurizer is None else self._featurizer.width
        if v.ndim not in (1, 2) or v.shape[-1] != width:
            raise ShapeError(f"raw features must have shape ({width},) or (m, {width}), got {v.shape}")
        if not np.isfinite(v).all():
            raise NonFiniteError("raw features contain NaN or inf")
        if self._featurizer is None:
            return v
        return self._featurizer(v[None, :])[0] if v.ndim == 1 else self._featurizer(v)

    # ---------------------------------------------------------------- model
    def best_means(self) -> np.ndarray:
        """``max_a means[s, a]`` per context."""
        return self.means.max(axis=1)

    def regret(self, contexts: Any, arms: Any) -> np.ndarray:
        """Exact regret of playing ``arms`` on ``contexts`` (index arrays; an index outside
        0..S-1 / 0..A-1, or not an integer, is refused rather than wrapped from the end)."""
        s, a = _indices(contexts, self.S, "contexts"), _indices(arms, self.A, "arms")
        try:  # lengths 3 and 2 were numpy's IndexError ("shape mismatch")
            np.broadcast_shapes(s.shape, a.shape)
        except ValueError:
            raise ShapeError(
                f"contexts and arms must have one shape (one arm per context), got {s.shape} and {a.shape}"
            ) from None
        return self.best_means()[s] - self.means[s, a]

    def check_policy(self, policy: Any) -> np.ndarray:
        """A policy table (1, S) of integer arms (one per context; floats that are whole numbers
        taken, as a FiniteMDP takes them), as its (S,) int64 arms."""
        pol = array_value(policy, "a bandit policy")
        if pol.shape != (1, self.S):
            raise ShapeError(
                f"a bandit policy must be an int array of shape (1, S) = (1, {self.S}), "
                f"got {pol.shape} {pol.dtype}"
            )
        pol = integer_actions(pol, "a bandit policy")  # a model's rule (whole-number floats taken)
        if pol.size and (pol.min() < 0 or pol.max() >= self.A):
            raise ShapeError(f"a bandit policy's arms must lie in 0..{self.A - 1}")
        return pol[0].copy()

    def random_regret(self) -> float:
        """Expected regret per user of the uniformly random policy."""
        return float(np.mean(self.best_means() - self.means.mean(axis=1)))

    def feature(self, s: int, a: int) -> np.ndarray:
        """``phi(s, a) = e_a (x) x_s`` (d = A p)."""
        s, a = int(_indices(s, self.S, "s")), int(_indices(a, self.A, "a"))
        out = np.zeros(self.d)
        out[a * self.p : (a + 1) * self.p] = self.contexts[s]
        return out

    def fingerprint(self) -> dict[str, str]:
        """Digests of what an agent reads: two bandits with equal fingerprints are the same to
        every agent (a saved agent runs on either)."""
        if self._fingerprint is None:
            self._fingerprint = {
                "horizon": digest(self.H),
                "contexts": digest(self.contexts),
                "means": digest(self.means),
            }
        return self._fingerprint

    def __repr__(self) -> str:
        return f"ContextualBandit(name={self.name!r}, n={self.S}, p={self.p}, A={self.A})"


#: The bandits alive in this process (weakly held): a LinUCB LDP client restored here reads the
#: public table its users' context indices point into from one of them (:func:`find_contexts`),
#: so that a pickled client carries the table's digest, not a copy of the table.
_LIVE: weakref.WeakSet[ContextualBandit] = weakref.WeakSet()


def find_contexts(table_digest: str) -> np.ndarray | None:
    """The (read-only) context table of a live bandit whose ``fingerprint()["contexts"]`` is
    ``table_digest``, or None when no bandit of this process has that table."""
    for env in list(_LIVE):
        if env.fingerprint()["contexts"] == table_digest:
            return env.contexts
    return None


@dataclass(frozen=True)
class _Featurizer:
    """The raw-features -> context map of :meth:`ContextualBandit.from_classification`, fitted
    once on the table and applied to it and to live users alike (one code path)."""

    width: int  # raw features per row
    standardized: bool
    keep: np.ndarray  # columns with a positive standard deviation (all without standardize)
    mean: np.ndarray
    sd: np.ndarray
    bias: bool
    scale: str
    max_norm: float  # scale="max": the table's largest row norm after the bias column

    @classmethod
    def fit(cls, X: np.ndarray, standardize: bool, bias: bool, scale: str) -> _Featurizer:
        p = X.shape[1]
        if standardize:
            with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused just below
                c = _up_scale(X, 0)  # X / c is exact: the squares of tiny features do not underflow
                sd = (X / c).std(axis=0) * c[0]
                # constant = all values equal, not a computed std of 0: the mean of three 0.1's
                # rounds, so such a column had sd 1.4e-17 and was kept as rounding noise of order 1
                keep = np.ptp(X, axis=0) > 0
                mean, sd = X[:, keep].mean(axis=0), sd[keep]
            _check_no_overflow(np.append(mean, sd), "X's column means / standard deviations")
        else:
            keep, mean, sd = np.ones(p, dtype=bool), np.zeros(p), np.ones(p)
        f = cls(p, standardize, keep, mean, sd, bias, scale, 1.0)
        if scale == "max":
            Z = f._centred(X)
            with np.errstate(over="ignore", invalid="ignore"):
                norm = float(_row_norms(Z).max())
            _check_no_overflow(np.array([norm]), "the largest row norm of the features")
            f = replace(f, max_norm=max(norm, 1e-300))
        return f

    def _centred(self, X: np.ndarray) -> np.ndarray:
        if self.standardized:
            with np.errstate(over="ignore", invalid="ignore"):
                Z = (X[:, self.keep] - self.mean) / self.sd
            _check_no_overflow(Z, "the standardized features")
        else:
            Z = X
        if self.scale == "row":
            return Z
        return np.hstack([Z, np.ones((Z.shape[0], 1))]) if self.bias else Z

    def __call__(self, X: np.ndarray) -> np.ndarray:
        Z = self._centred(X)
        if self.scale == "max":
            return Z / self.max_norm
        with np.errstate(over="ignore", invalid="ignore"):
            norms = _row_norms(Z)[:, None]
        # an overflowed norm would silently zero the row (only the bias left): refuse it
        _check_no_overflow(norms, "the row norms of the features")
        Z = Z / np.where(norms > 0.0, norms, 1.0)  # a zero row stays zero
        return np.hstack([Z, np.ones((Z.shape[0], 1))]) / np.sqrt(2.0) if self.bias else Z


def _up_scale(a: np.ndarray, axis: int) -> np.ndarray:
    """Powers of two c <= 1 (keepdims along ``axis``) that bring the largest |entry| of every row
    (axis=1) or column (axis=0) of ``a`` into [1/2, 1) when it is below 1 (c = 1 otherwise).
    Dividing by a power of two is exact, so a norm or a std of ``a / c`` times ``c`` is bit-identical
    to that of ``a`` where its squares stay normal, and accurate where they would underflow
    (features below ~1e-154: a std of 0, or norms off by 1e100). Large entries are not scaled (an
    overflow is refused where it happens)."""
    _, e = np.frexp(np.abs(a).max(axis=axis, keepdims=True, initial=0.0))  # no columns: c = 1
    return np.ldexp(1.0, np.minimum(e, 0))


def _row_norms(Z: np.ndarray) -> np.ndarray:
    """The Euclidean norm of every row of ``Z``, without underflow (:func:`_up_scale`)."""
    c = _up_scale(Z, 1)
    return np.linalg.norm(Z / c, axis=1) * c[:, 0]


def _check_no_overflow(a: np.ndarray, what: str) -> None:
    """Refuse a feature transform whose float64 arithmetic overflowed (finite input, inf / NaN out)."""
    if not np.isfinite(a).all():
        raise NonFiniteError(
            f"{what} overflowed float64 (the features are too large in magnitude): rescale X, "
            "e.g. to values of order 1"
        )


def _numeric_dtype(t: Any) -> bool:
    """A pandas column dtype that holds bool / int / float values (nullable ones included)."""
    try:
        return np.dtype(getattr(t, "numpy_dtype", t)).kind in "biuf"
    except TypeError:  # a string or categorical dtype
        return False


def _real_array(x: Any, name: str, ndmin: int) -> np.ndarray:
    """``x`` as a C-contiguous float64 array of at least ``ndmin`` dims; only bool / int / float
    data are taken (strings, objects and complex numbers are refused with a ShapeError, not
    guessed or left to numpy's raw errors). A scipy sparse matrix is refused with a pointer to
    ``.toarray()`` (numpy made it a 0-d object array), a masked array with masked entries as
    missing values (numpy used the values under the mask)."""
    if hasattr(x, "toarray") and hasattr(x, "nnz"):
        raise ShapeError(f"{name} is a scipy sparse matrix: pass a dense array (its .toarray())")
    refuse_masked(x, name)
    try:
        a = np.asarray(x)
        # a pandas frame of numeric and bool columns (object as a whole when mixed) as floats; a
        # Series (a row, e.g. X.iloc[0]) has one dtype, not a column of them
        dtypes = getattr(x, "dtypes", None)
        if dtypes is not None and getattr(x, "ndim", None) == 1:
            dtypes = (dtypes,)
        numeric = dtypes is not None and all(_numeric_dtype(t) for t in dtypes)
        if a.dtype.kind == "O" and numeric:
            a = x.to_numpy(dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as e:  # ragged rows, NA in a nullable column, ...
        raise ShapeError(f"{name} must be a real numeric array: {e}") from None
    if a.dtype.kind not in "biuf":
        raise ShapeError(
            f"{name} must be a real numeric array (bool, int or float), got dtype {a.dtype} "
            "(encode text / categorical features as numbers first)"
        )
    return np.array(a, dtype=np.float64, ndmin=ndmin, order="C")


def _one_label_type(obj: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``y``, numpy's text array of a sequence of labels, when the labels ``obj`` (as objects) are
    all text; ``obj`` otherwise, so that mixed labels are refused like a pandas Series of them."""
    text = (str, bytes, np.str_, np.bytes_)
    return y if all(isinstance(v, text) for v in obj.reshape(-1)) else obj


#: The label types of an object array y that an agent's saved bandit loads back (numbers and text;
#: a float label must also be finite).
_LABEL_TYPES = (str, bytes, int, float, np.str_, np.bytes_, np.integer, np.floating, np.bool_)


def _classes(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sorted classes of the labels ``y`` (n,) and each row's class index; a missing label
    (NaN, NaT, None) is refused, not made a class of its own, as are labels that cannot be sorted."""
    kind = y.dtype.kind
    if (kind in "fc" and not np.isfinite(y).all()) or (kind in "mM" and np.isnat(y).any()):
        raise NonFiniteError("y contains NaN or inf labels: every row needs a label (drop unlabelled rows)")
    if kind in "fc" and not np.all(y == np.round(y)):
        # 30 rows of a continuous target made 30 one-row arms without a word
        raise ShapeError(
            f"y holds non-integer labels (e.g. {y[y != np.round(y)][0]!r}): a regression target? "
            "from_classification takes class labels (integers or strings)"
        )
    if kind == "O":
        pd = sys.modules.get("pandas")  # a pandas y of labels can only hold pandas' missing values
        missing = (pd.NA, pd.NaT) if pd is not None else ()
        for v in y:
            if v is None:
                raise ShapeError("y contains None labels: every row needs a label (drop unlabelled rows)")
            if any(v is m for m in missing):  # was "labels cannot be sorted (boolean value of NA ...)"
                raise ShapeError(
                    f"y contains missing labels ({v!r}): every row needs a label (drop unlabelled rows)"
                )
            if isinstance(v, (float, np.floating)) and not math.isfinite(v):
                raise NonFiniteError(
                    "y contains NaN or inf labels: every row needs a label (drop unlabelled rows)"
                )
            if not isinstance(v, _LABEL_TYPES):
                # a Decimal (or Fraction, date, ...) class was built and saved with the agent, and
                # Agent.load refused the file (its loader reads privrl's and numpy's classes only)
                raise TypeError(
                    f"y holds a label of type {type(v).__name__} ({v!r}): class labels must be integers, "
                    "strings or booleans (the bandit's classes are saved with an agent, and only those "
                    "load back); convert them, e.g. y = [int(v) for v in y] or [str(v) for v in y]"
                )
    try:
        classes, labels = np.unique(y, return_inverse=True)
    except TypeError as e:
        raise ShapeError(
            f"y's labels cannot be sorted into classes ({e}): give labels of one type "
            "(all numbers or all strings)"
        ) from None
    return classes, labels.reshape(-1)


def _indices(x: Any, n: int, name: str) -> np.ndarray:
    """``x`` as int64 indices in [0, n): a float, a bool or an index outside is refused
    (IndexRangeError; numpy would wrap -1 to the last entry)."""
    v = np.asarray(x)
    if v.dtype.kind not in "iu" or v.dtype == bool:
        if v.size == 0:
            return v.astype(np.int64)
        raise IndexRangeError(f"{name} must be integer indices in 0..{n - 1}, got dtype {v.dtype}")
    if v.size and (v.min() < 0 or v.max() >= n):
        raise IndexRangeError(f"{name} must lie in 0..{n - 1}, got {v.min()}..{v.max()}")
    return v.astype(np.int64)
