"""Empirical privacy audit: a statistical lower bound on epsilon from two neighbouring inputs.

Paper: Luyo et al., App. B / App. D (the mechanisms audited: tree release of Cor. 1, LDP randomizer of Cor. 2,
u-release of Alg. 2); issue 6, item 5.
"""

# Method (a distinguishing attack with a certified false-positive / true-positive rate):
#   1. run the mechanism n times on neighbour a and n times on neighbour b, every run with its
#      own independent noise seed;
#   2. reduce each output to a score: its projection on a direction (the exact noiseless
#      difference of the two outputs when known -- the likelihood-ratio statistic for white
#      Gaussian noise -- else the difference of the means of the training halves);
#   3. choose the rejection set E = {score > t} or {score < t} on the first halves only;
#   4. on the second halves count TP (runs of the "positive" neighbour in E) and FP (runs of the
#      other one in E); Clopper-Pearson gives TPR >= TPR_lb and FPR <= FPR_ub, each with
#      probability >= 1 - alpha/2;
#   5. (eps, delta)-DP requires TPR <= e^eps FPR + delta, so with probability >= 1 - alpha
#      eps >= eps_lb = log((TPR_lb - delta) / FPR_ub)   (0 if TPR_lb <= delta).
# The bound is valid for any statistic and any threshold chosen without the test halves; a
# correct mechanism gives eps_lb <= its true epsilon (w.p. >= 1 - alpha), a broken one (too
# little noise) gives eps_lb above the claim. With the Gaussian-DP bound as well (gaussian=True) the
# flag reads the larger of two bounds, so each is taken at 1 - alpha/2 (Bonferroni): both hold, and
# the flag errs, with probability <= alpha.
from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from privrl.audit.intervals import _normal_quantile, _wilson, betainc, clopper_pearson, noncentral_t_lower
from privrl.common.checks import (
    check_delta_pure_ok,
    check_flag,
    check_int,
    check_pos_int,
    check_positive_real,
    check_probability,
    check_real,
    check_seed,
    numeric_array,
)
from privrl.common.errors import PrivacyParameterError, ShapeError
from privrl.privacy.accounting import gaussian_epsilon
from privrl.privacy.plans import ReleasePlan, statistic_worst_case

__all__ = [
    "AuditResult",
    "clopper_pearson",
    "betainc",
    "audit_samples",
    "audit_mechanism",
]


# ============================================================================================
# The audit
# ============================================================================================
@dataclass(frozen=True)
class AuditResult:
    """Outcome of an audit. ``epsilon_lower_bound`` holds with probability >= ``confidence``
    for any mechanism, and with the Gaussian-DP bound (Gaussian mechanisms) both hold together with
    that probability (each at ``1 - (1 - confidence) / 2``); ``flagged`` is True when the larger,
    ``best_lower_bound``, exceeds ``claimed_epsilon`` (the mechanism cannot be as private as
    claimed): a correct mechanism is flagged with probability <= ``1 - confidence``.
    ``effective_epsilon`` (when known) is the exact epsilon of the audited sub-mechanism at ``delta``
    for the chosen neighbours: the best any audit of it could reach."""

    name: str
    epsilon_lower_bound: float
    claimed_epsilon: float | None
    effective_epsilon: float | None
    delta: float
    confidence: float
    n_trials: int
    n_test: int
    orientation: str
    threshold: float
    tpr: float
    fpr: float
    tpr_lower: float
    fpr_upper: float
    statistic: str
    # Gaussian-DP audit (Gaussian mechanisms only): the separation mu of the two output laws along
    # the statistic, estimated with a one-sided confidence bound, converted to epsilon at delta
    mu_hat: float | None = None
    mu_lower: float | None = None
    gdp_epsilon_lower_bound: float | None = None

    @property
    def best_lower_bound(self) -> float:
        """The larger of the distribution-free and the Gaussian-DP lower bounds."""
        return max(self.epsilon_lower_bound, self.gdp_epsilon_lower_bound or 0.0)

    @property
    def flagged(self) -> bool:
        return self.claimed_epsilon is not None and self.best_lower_bound > self.claimed_epsilon

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d["flagged"] = self.flagged
        return d

    def __str__(self) -> str:
        claim = "-" if self.claimed_epsilon is None else f"{self.claimed_epsilon:g}"
        eff = "-" if self.effective_epsilon is None else f"{self.effective_epsilon:.3g}"
        return (
            f"{self.name}: eps >= {self.epsilon_lower_bound:.3f} (confidence "
            f"{self.confidence:g}, {self.n_test} test runs per neighbour; TPR {self.tpr:.4f} "
            f">= {self.tpr_lower:.4f}, FPR {self.fpr:.2e} <= {self.fpr_upper:.2e}); claimed "
            f"eps = {claim}, effective eps of the audited part = {eff}"
            + (
                ""
                if self.gdp_epsilon_lower_bound is None
                else f"; Gaussian-DP: mu >= {self.mu_lower:.4f} (estimate {self.mu_hat:.4f}), "
                f"eps >= {self.gdp_epsilon_lower_bound:.3f}"
            )
            + ("  ** FLAGGED **" if self.flagged else "")
        )


#: Most tail thresholds audit_samples tries per orientation (``n_candidates``; they are spaced
#: geometrically over half the training runs, so more cannot help below 4 * 10^6 runs).
MAX_CANDIDATES = 10**6


def _eps_lb(tpr_lb: float, fpr_ub: float, delta: float) -> float:
    if tpr_lb <= delta or fpr_ub <= 0.0:
        return 0.0 if tpr_lb <= delta else math.inf
    return max(0.0, math.log((tpr_lb - delta) / fpr_ub))


@contextlib.contextmanager
def _overflow_refused() -> Iterator[None]:
    """The audit's projections and variances square the outputs: one that overflows (outputs near
    1e200 gave numpy's warning, then mu = 0 whatever the shift) is refused."""
    with np.errstate(over="raise"):
        try:
            yield
        except FloatingPointError:
            raise PrivacyParameterError(
                "the samples overflow the audit's statistics (their squares pass the doubles): rescale "
                "them (the audit does not depend on the outputs' unit)"
            ) from None


#: Smallest binary exponent of the scores' scale (max |output| times max |direction|) the audit
#: takes as given: below, their variances (~ scale^2) underflow.
_MIN_SCORE_EXPONENT = -300


def _exponent(x: np.ndarray) -> int | None:
    """The binary exponent of max |x| (None when x is all zeros)."""
    top = float(np.max(np.abs(x))) if x.size else 0.0
    return math.frexp(top)[1] if top > 0.0 else None


def _unit_scores(
    a: np.ndarray, b: np.ndarray, v: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(a, b, v, shift): the samples and the direction scaled by powers of two (exactly) to a unit
    scale when their scores' scale is below 2^_MIN_SCORE_EXPONENT, scores times 2^shift being the
    given ones; unchanged (shift 0) otherwise. Outputs of 1e-300 (or 2^-500 with an estimated
    direction, scores ~ 1e-301) left the scores' variances 0: the Gaussian-DP bound inf, a false
    flag, and the Clopper-Pearson bound 0, where the audit does not depend on the outputs' unit."""
    ea, ev = _exponent(np.concatenate([a.reshape(-1), b.reshape(-1)])), _exponent(v)
    if ea is None or ev is None or ea + ev >= _MIN_SCORE_EXPONENT:
        return a, b, v, 0
    return np.ldexp(a, -ea), np.ldexp(b, -ea), np.ldexp(v, -ev), ea + ev


#: The fewest runs per neighbour an audit takes (the sample variances and the t inversion of the
#: Gaussian-DP bound need them): the one rule behind audit_samples' check of its samples and the
#: checks, before any run, of every audit that makes its own runs (:func:`check_trials`).
MIN_RUNS = 4


def check_trials(n_trials: Any) -> int:
    """``n_trials`` as an int >= MIN_RUNS, refused by name before any run."""
    n = check_pos_int(n_trials, "n_trials")
    if n < MIN_RUNS:
        raise PrivacyParameterError(f"n_trials must be an int >= {MIN_RUNS}, got {n_trials!r}")
    return n


def _checked_samples(
    samples_a: Any, samples_b: Any, delta: float, confidence: float
) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The two sample sets as (n, outputs) float arrays and (delta, confidence), after checking
    shapes and parameters (a bool delta, or a str one (a bare TypeError), was taken as a number)."""
    # numeric_array: complex samples lost their imaginary part, strings were parsed (numpy's way)
    a, b = numeric_array(samples_a, "samples_a"), numeric_array(samples_b, "samples_b")
    if a.ndim < 1 or b.ndim < 1 or a.shape[0] != b.shape[0] or a.shape[1:] != b.shape[1:]:
        raise PrivacyParameterError(f"samples must have equal shapes (n, ...), got {a.shape} and {b.shape}")
    n = a.shape[0]
    if n < MIN_RUNS:
        raise PrivacyParameterError(f"need at least {MIN_RUNS} runs per neighbour, got {n}")
    confidence, delta = check_probability(confidence, "confidence"), check_delta_pure_ok(delta)
    if a.size == 0:  # every score was 0: an audit of nothing reported eps >= 0
        raise PrivacyParameterError(f"the outputs have no entries (samples of shape {a.shape})")
    a, b = a.reshape(n, -1), b.reshape(n, -1)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise PrivacyParameterError("samples contain NaN or inf")
    return a, b, delta, confidence


def _checked_claims(claimed: Any, effective: Any, gaussian: Any) -> tuple[float | None, float | None]:
    """audit_samples' claimed_epsilon (> 0) and effective_epsilon (>= 0), None or checked, and
    ``gaussian`` a bool: any truthy value (the string "no") added the Gaussian-DP bound."""
    check_flag(gaussian, "gaussian")
    if claimed is not None:
        claimed = check_positive_real(claimed, "claimed_epsilon")
    if effective is not None:  # "x" and NaN were stored as given
        effective = check_real(effective, "effective_epsilon")
        if not effective >= 0.0:
            raise PrivacyParameterError(f"effective_epsilon must be >= 0, got {effective!r}")
    return claimed, effective


#: The four rejection sets a threshold on a score can define: which neighbour is the positive one
#: and which tail it is tested in (DP bounds both P_a(E) <= e^eps P_b(E) + delta and the reverse).
#: A direction oriented from b to a makes "a>" and "b<" the informative ones; with only those two,
#: a direction given the other way round (b - a) audited nothing: eps_lb 0 for a mechanism whose
#: outputs 3 noise sds apart the same samples bound by 3.36 along a - b.
_ORIENTATIONS = {"a>": "score(a) > t", "b<": "score(b) < t", "b>": "score(b) > t", "a<": "score(a) < t"}


def _orientations(a: np.ndarray, b: np.ndarray) -> tuple[tuple[str, np.ndarray, np.ndarray], ...]:
    """(orientation, positive scores, negative scores), the rejection set being {positive > t}."""
    return (("a>", a, b), ("b<", -b, -a), ("b>", b, a), ("a<", -a, -b))


def _choose_threshold(
    train_a: np.ndarray, train_b: np.ndarray, delta: float, z: float, n_candidates: int
) -> tuple[str, float]:
    """(orientation, threshold) with the best Wilson-bound epsilon on the training halves."""
    half = train_a.shape[0]
    best = (-math.inf, "a>", 0.0)
    ks = np.unique(
        np.concatenate([[0], np.round(np.geomspace(1, max(1, half // 2), n_candidates))]).astype(int)
    )
    ks = ks[ks < half]
    for orient, pos, neg in _orientations(train_a, train_b):
        neg_sorted = np.sort(neg)
        pos_sorted = np.sort(pos)
        # candidates: the upper tail of the negatives (small FPR), the lower tail of the
        # positives (large TPR) and, when the halves are separated, the midpoint of the gap
        # (the midpoint first: among thresholds with the same training bound it generalises best)
        cands = list(neg_sorted[::-1][ks]) + list(np.nextafter(pos_sorted[ks], -np.inf))
        if pos_sorted[0] > neg_sorted[-1]:
            cands.insert(0, 0.5 * (pos_sorted[0] + neg_sorted[-1]))
        for t in cands:
            tp = half - int(np.searchsorted(pos_sorted, t, side="right"))
            fp = half - int(np.searchsorted(neg_sorted, t, side="right"))
            lo, _ = _wilson(tp, half, z)
            _, hi = _wilson(fp, half, z)
            e = _eps_lb(lo, hi, delta)
            if e > best[0]:
                best = (e, orient, float(t))
    return best[1], best[2]


def audit_samples(
    samples_a: Any,
    samples_b: Any,
    *,
    delta: float = 0.0,
    confidence: float = 0.95,
    direction: Any = None,
    claimed_epsilon: float | None = None,
    effective_epsilon: float | None = None,
    name: str = "mechanism",
    n_candidates: int = 64,
    inverse_variance: Any = None,
    gaussian: bool = False,
) -> AuditResult:
    """Audit from outputs already drawn: ``samples_a`` / ``samples_b`` of shape ``(n, ...)``
    (run ``i`` on neighbour a / b, independent noise). ``direction``: the projection direction
    (flattened output shape; either sign: the threshold test tries both neighbours in both tails,
    only the Gaussian-DP bound reads its orientation); ``None`` estimates it from the training
    halves; ``inverse_variance`` (one weight per output, with a given ``direction`` only) whitens
    it. See the module comment for the method; ``delta`` is the claimed delta,
    ``confidence = 1 - alpha``.
    ``gaussian=True`` adds the Gaussian-DP bound (Gaussian mechanisms; ``direction`` oriented as
    output(a) - output(b)), on all runs for a given direction and on the test halves for an
    estimated one; both bounds are then taken at ``1 - (1 - confidence) / 2``, so that together,
    and the flag, hold at ``confidence``."""
    a, b, delta, confidence = _checked_samples(samples_a, samples_b, delta, confidence)
    claimed_epsilon, effective_epsilon = _checked_claims(claimed_epsilon, effective_epsilon, gaussian)
    # 10**11 asked numpy for 745 GiB of candidates, -1 and 1.5 failed inside np.geomspace
    n_candidates = check_int(n_candidates, "n_candidates", 0, MAX_CANDIDATES)
    n = a.shape[0]
    half = n // 2
    if direction is None:
        if inverse_variance is not None:  # was silently ignored: an unwhitened statistic
            raise PrivacyParameterError("inverse_variance weights a given direction: pass direction too")
        v = a[:half].mean(axis=0) - b[:half].mean(axis=0)
        stat = "projection on the difference of the training means"
    else:
        v = numeric_array(direction, "direction").reshape(-1)  # text / complex: a TypeError
        if v.shape[0] != a.shape[1]:
            raise PrivacyParameterError(f"direction has {v.shape[0]} entries, outputs have {a.shape[1]}")
        if not np.all(np.isfinite(v)):
            raise PrivacyParameterError("direction must be finite (a NaN direction audits nothing)")
        stat = "projection on the exact noiseless difference (likelihood-ratio statistic)"
        if inverse_variance is not None:
            # whitened: for independent Gaussian entries the likelihood ratio is linear in
            # Sigma^{-1} (mean_a - mean_b); weight 0 drops a duplicated output (a symmetric entry)
            w = numeric_array(inverse_variance, "inverse_variance").reshape(-1)
            if w.shape != v.shape or not np.all(np.isfinite(w)) or np.any(w < 0):
                raise PrivacyParameterError("inverse_variance must be one finite weight >= 0 per output")
            v = v * w
            stat = "whitened likelihood-ratio statistic (Sigma^-1 times the exact noiseless difference)"
    a, b, v, shift = _unit_scores(a, b, v)
    with _overflow_refused():
        sa, sb = a @ v, b @ v
    train_a, test_a = sa[:half], sa[half:]
    train_b, test_b = sb[:half], sb[half:]
    # the flag reads the larger of the two bounds when both are computed: each at alpha / 2 (a
    # correct mechanism was flagged when either passed its claim, at up to twice the stated rate)
    alpha = (1.0 - confidence) / (2.0 if gaussian else 1.0)
    orient, t = _choose_threshold(train_a, train_b, delta, _normal_quantile(1.0 - alpha / 2.0), n_candidates)
    _, pos_test, neg_test = next(o for o in _orientations(test_a, test_b) if o[0] == orient)
    m = pos_test.shape[0]
    tp = int(np.count_nonzero(pos_test > t))
    fp = int(np.count_nonzero(neg_test > t))
    tpr_lb, _ = clopper_pearson(tp, m, alpha / 2.0)
    _, fpr_ub = clopper_pearson(fp, m, alpha / 2.0)
    eps_lb = _eps_lb(tpr_lb, fpr_ub, delta)
    threshold = math.ldexp(-t if orient.endswith("<") else t, shift)  # in the scores' own unit
    # an estimated direction fits the training halves' noise: their scores are further apart than
    # fresh runs' (identical laws gave mu >= 0.56 at 500 outputs), so only the test halves count
    gdp_a, gdp_b = (sa, sb) if direction is not None else (test_a, test_b)
    with _overflow_refused():
        gdp = _gdp_bound(gdp_a, gdp_b, delta, 1.0 - alpha) if gaussian else (None, None, None)
    return AuditResult(
        name=name,
        epsilon_lower_bound=eps_lb,
        claimed_epsilon=claimed_epsilon,
        effective_epsilon=effective_epsilon,
        delta=float(delta),
        confidence=float(confidence),
        n_trials=n,
        n_test=m,
        orientation=_ORIENTATIONS[orient],
        threshold=threshold,
        tpr=tp / m,
        fpr=fp / m,
        tpr_lower=tpr_lb,
        fpr_upper=fpr_ub,
        statistic=stat,
        mu_hat=gdp[0],
        mu_lower=gdp[1],
        gdp_epsilon_lower_bound=gdp[2],
    )


def _gdp_bound(sa: np.ndarray, sb: np.ndarray, delta: float, confidence: float) -> tuple[float, float, float]:
    """(mu estimate, lower confidence bound, epsilon at delta of that bound) for scores of a
    Gaussian mechanism: along a linear statistic the two output laws are N(m_a, s^2), N(m_b, s^2)
    (same noise, shifted mean), a mu-GDP pair with mu = |m_a - m_b| / s, and the mechanism is
    at least as distinguishable as that pair. The estimate is the standardized mean difference
    (m_a - m_b) / s, signed: the direction is oriented from b to a (the noiseless difference a - b,
    or the training means' difference), so the one-sided bound holds at its level also at mu = 0
    (|m_a - m_b| was two-sided there: P(mu_lower > 0) = 10% at 95%); it is taken over the runs
    given (all of them for a given direction, the test halves for an estimated one: the scores of
    the runs it was fitted on are biased apart). The bound is exact for Gaussian scores: the pooled
    two-sample t statistic sqrt(n/2) mu_hat is a noncentral t with 2n - 2 degrees of freedom and
    noncentrality sqrt(n/2) mu (n runs per neighbour), inverted by intervals.noncentral_t_lower (the
    normal approximation mu_hat - z sqrt(2/n + mu_hat^2/(4n)) it replaces exceeded mu in 8.6% of
    audits at n = 4, 6.2% at n = 10, for a stated 5%). Scores with no spread: mu 0 if equal, else inf."""
    n = sa.shape[0]
    s = math.sqrt(0.5 * (float(sa.var(ddof=1)) + float(sb.var(ddof=1))))
    diff = float(sa.mean() - sb.mean())
    # point masses (s = 0): identical (0/0 was inf) or told apart without error
    mu = diff / s if s > 0 else (0.0 if diff == 0 else math.copysign(math.inf, diff))
    root = math.sqrt(0.5 * n)
    # the t statistic of a finite mu near the largest double overflowed (a PrivacyParameterError):
    # capped at 1e300, the bound (increasing in t) stays a valid, smaller one
    t = min(mu * root, 1e300)
    mu_lo = noncentral_t_lower(t, 2 * n - 2, confidence) / root if math.isfinite(mu) else max(0.0, mu)
    # delta = 0: a Gaussian pair with mu > 0 has no finite pure epsilon (inf * False was NaN at mu = 0);
    # past mu = 1e154 the epsilon (~ mu^2 / 2) overflows (gaussian_epsilon raised): that of 1e154, smaller
    if delta == 0:
        return mu, mu_lo, math.inf if mu_lo > 0 else 0.0
    return mu, mu_lo, gaussian_epsilon(min(mu_lo, 1e154), delta) if math.isfinite(mu_lo) else math.inf


def _sym_inverse_variance(H: int, d: int, sigma: float, divisor: float) -> np.ndarray:
    """Per-entry inverse variance of H symmetric (Z' + Z'^T)/c matrices flattened row-major, Z' with
    N(0, sigma^2) entries: off-diagonal variance 2 sigma^2 / c^2, diagonal 4 sigma^2 / c^2; the lower
    triangle repeats the upper one (weight 0: counted once)."""
    iu = np.triu(np.ones((d, d)), 1)
    s2 = sigma * sigma  # not sigma**2: an OverflowError at sigma = 1e200 (its weights are 0 then)
    w = iu * (divisor**2 / (2 * s2)) + np.eye(d) * (divisor**2 / (4 * s2))
    return np.broadcast_to(w, (H, d, d)).reshape(-1)


def audit_mechanism(
    mechanism_fn: Callable[[Any, Any], Any],
    neighbour_a: Any,
    neighbour_b: Any,
    n_trials: int,
    *,
    delta: float = 0.0,
    confidence: float = 0.95,
    seed: Any = 0,
    direction: Any = None,
    claimed_epsilon: float | None = None,
    effective_epsilon: float | None = None,
    name: str = "mechanism",
) -> AuditResult:
    """Audit any mechanism: ``mechanism_fn(input, noise_seed)`` returns one output (array-like)
    and must draw its noise from ``noise_seed`` (32 random bytes, a fresh value for every run:
    the runs are independent). It is run ``n_trials`` times on each neighbour; then
    :func:`audit_samples`. ``seed`` makes the audit reproducible."""
    check_trials(n_trials)
    # before the 2 n_trials runs (audit_samples refused them after)
    check_probability(confidence, "confidence")
    check_delta_pure_ok(delta)
    rng = np.random.default_rng(check_seed(seed))
    first: dict[str, tuple[int, ...]] = {}

    def runs(neighbour: Any, which: str) -> np.ndarray:
        out = []
        for i in range(int(n_trials)):
            where = f"run {i} on neighbour_{which}"
            # numeric_array: a complex output lost its imaginary part (np.asarray(..., float))
            try:
                x = numeric_array(mechanism_fn(neighbour, rng.bytes(32)), "output")
            except ShapeError as exc:  # a ragged nested sequence: numpy's "inhomogeneous shape"
                raise ShapeError(
                    f"mechanism_fn must return a real array of one shape; {where} returned something "
                    f"numpy cannot make one of ({str(exc).removeprefix('output must be a float array: ')})"
                ) from None
            expected = first.setdefault("shape", x.shape)
            if x.shape != expected:  # np.stack's bare "all input arrays must have the same shape"
                raise ShapeError(
                    f"mechanism_fn must return outputs of one shape at every run: run 0 on neighbour_a "
                    f"returned shape {expected}, {where} returned {x.shape}"
                )
            out.append(x)
        return np.stack(out)

    out_a, out_b = runs(neighbour_a, "a"), runs(neighbour_b, "b")
    return audit_samples(
        out_a,
        out_b,
        delta=delta,
        confidence=confidence,
        direction=direction,
        claimed_epsilon=claimed_epsilon,
        effective_epsilon=effective_epsilon,
        name=name,
    )


# ============================================================================================
# Ready-made audits of the shipped mechanisms
# ============================================================================================
class Statistics(NamedTuple):
    """A user's per-step regression data X (H, d), y (H,), sent as they are (an adversarial user)."""

    X: np.ndarray
    y: np.ndarray


def _neighbours(plan: ReleasePlan, cal: Any, kind: str) -> tuple[Statistics, Statistics]:
    """Two neighbouring users for every step, read from the release plan at the scales of the
    calibration ``cal``: ``"worst"`` (default) the pair that realises the plan's joint worst case
    (privrl.privacy.plans), ``"zero"`` the worst user against one who sends zeros."""
    (stat,) = plan.statistics
    w = statistic_worst_case(plan, stat.name, {k: getattr(cal, k) for k in plan.scale_keys})
    H = plan.H
    a = Statistics(np.tile(w.x, (H, 1)), np.full(H, w.y))
    if kind == "worst":
        return a, Statistics(np.tile(w.x_prime, (H, 1)), np.full(H, w.y_prime))
    if kind == "zero":
        return a, Statistics(np.zeros((H, stat.dim)), np.zeros(H))
    raise PrivacyParameterError(f"neighbours must be 'worst' or 'zero', got {kind!r}")
