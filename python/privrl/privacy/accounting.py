"""Tight privacy accounting: analytic Gaussian mechanism, Gaussian composition, zCDP, pure-DP sums.

Paper: Luyo et al., App. "Differential Privacy Tools" (what it replaces); issue 6, items 1-2 (tight
accountant).
"""

# Conventions
# -----------
# * A Gaussian release with L2 sensitivity Delta and noise N(0, sigma^2 I) is summarised by its
#   noise multiplier ratio mu = Delta / sigma ("mu-GDP", Dong, Roth & Su 2019). Its exact
#   (eps, delta) curve is the analytic Gaussian mechanism of Balle & Wang (2018, Thm. 8).
# * Adaptive composition of Gaussian releases is again Gaussian: mu = sqrt(sum mu_i^2)
#   (Dong, Roth & Su 2019, Cor. 3.3). With a common sigma this is one Gaussian with sensitivity
#   sqrt(sum Delta_i^2): the per-user L2 sensitivity across every node / release the user touches.
# * Every inverse (sigma from (eps, delta), eps from (mu, delta)) is computed by bisection and
#   returns the end of the bracket on the private side (never a sigma below the exact one).
# * Natural logarithms everywhere.
from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from privrl.common.checks import (
    check_delta_open,
    check_int,
    check_nonneg_real,
    check_pos_int,
    check_positive_real,
    check_real,
    checked,
    log_inverse,
)
from privrl.common.errors import PrivacyParameterError
from privrl.privacy.gdp import (
    _SQRT2,
    _bisect,
    _check_mu,
    analytic_gaussian_delta,
    analytic_gaussian_epsilon,
    analytic_gaussian_sigma,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_mu,
    log_normal_cdf,
    normal_cdf,
)

__all__ = [
    "normal_cdf",
    "log_normal_cdf",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_mu",
    "analytic_gaussian_delta",
    "analytic_gaussian_epsilon",
    "analytic_gaussian_sigma",
    "composed_l2_sensitivity",
    "gaussian_composition_mu",
    "zcdp_rho_gaussian",
    "zcdp_rho_pure",
    "zcdp_compose",
    "zcdp_epsilon_simple",
    "zcdp_delta",
    "zcdp_epsilon",
    "zcdp_mu",
    "discrete_gaussian_mu",
    "discrete_gaussian_delta",
    "discrete_gaussian_epsilon",
    "discrete_gaussian_draws",
    "laplace_composition_epsilon",
    "PrivacyAccountant",
    "tree_nodes_per_leaf",
]


# ============================================================================================
# Standard normal CDF, accurate in both tails without scipy
# ============================================================================================


# ============================================================================================
# Analytic Gaussian mechanism (Balle & Wang 2018)
# ============================================================================================


# ============================================================================================
# Composition
# ============================================================================================
def _iterate(values: Any, name: str, expects: str) -> Iterator[Any]:
    """``iter(values)`` for the composition tools, refusing (PrivacyParameterError) what is not a
    sequence of items: None, a number or a 0-d array raised Python's bare "TypeError: 'NoneType'
    object is not iterable" from inside the sum, and a string was read character by character."""
    if not isinstance(values, (str, bytes, Mapping)):
        try:
            return iter(values)
        except TypeError:
            pass
    raise PrivacyParameterError(f"{name} must be {expects}, got {values!r}")


def composed_l2_sensitivity(sensitivities: Iterable[float], counts: Iterable[int] | None = None) -> float:
    """``sqrt(sum_i c_i Delta_i^2)``: the L2 sensitivity of the concatenation of releases with
    common noise ``sigma`` (each ``Delta_i`` repeated ``c_i`` times; ``counts`` default 1). A
    composition of Gaussian mechanisms with one noise level is one Gaussian mechanism with this
    sensitivity (Dong, Roth & Su 2019, Cor. 3.3; also exact for adaptive compositions)."""
    items = _iterate(sensitivities, "sensitivities", "an iterable of L2 sensitivities, e.g. [1.0, 2.0]")
    sens = [check_nonneg_real(s, f"sensitivities[{i}]") for i, s in enumerate(items)]
    if counts is None:
        cnt = [1] * len(sens)
    else:
        counted = _iterate(counts, "counts", "None or an iterable of positive integers, e.g. [3, 1]")
        cnt = [check_pos_int(c, f"counts[{i}]") for i, c in enumerate(counted)]
        if len(cnt) != len(sens):
            raise PrivacyParameterError(
                f"counts must match sensitivities in length, got {len(cnt)} != {len(sens)}"
            )
    total = sum(c * s * s for c, s in zip(cnt, sens, strict=True))
    if math.isinf(total):  # the squares overflow (sensitivities ~1e154 and up): scale them
        top = max(sens)
        return top * math.sqrt(sum(c * (s / top) ** 2 for c, s in zip(cnt, sens, strict=True)))
    return math.sqrt(total)


def _terms(terms: Any, sensitivity: str, scale: str) -> Iterator[tuple[float, float, int]]:
    """The checked ``(sensitivity, scale, count)`` triples of a composition's ``terms``, each
    refused by its index and field name."""
    items = _iterate(terms, "terms", f"an iterable of ({sensitivity}, {scale}, count), e.g. [(1.0, 2.0, 3)]")
    for i, t in enumerate(items):
        try:
            s, sc, c = t
        except (TypeError, ValueError):
            raise PrivacyParameterError(
                f"terms[{i}] must be ({sensitivity}, {scale}, count), got {t!r}"
            ) from None
        yield (
            check_nonneg_real(s, f"terms[{i}].{sensitivity}"),
            check_positive_real(sc, f"terms[{i}].{scale}"),
            check_pos_int(c, f"terms[{i}].count"),
        )


def gaussian_composition_mu(terms: Iterable[tuple[float, float, int]]) -> float:
    """``mu = sqrt(sum_i c_i (Delta_i / sigma_i)^2)`` for ``terms`` of
    ``(l2_sensitivity, sigma, count)``: the adaptive composition of Gaussian releases is
    ``mu``-GDP (Dong, Roth & Su 2019, Cor. 3.3), i.e. exactly as private as one Gaussian
    release with ``Delta / sigma = mu``."""
    total = 0.0
    for s, sg, c in _terms(terms, "l2_sensitivity", "sigma"):
        total += c * (s / sg) ** 2
    return math.sqrt(total)


def laplace_composition_epsilon(terms: Iterable[tuple[float, float, int]]) -> float:
    """Pure DP, App. "Simple Composition" applied to Laplace releases: ``sum_i c_i Delta1_i / b_i``
    for ``terms`` of ``(l1_sensitivity, b, count)`` (App. "Laplace Mechanism": one release is
    ``(Delta1 / b, 0)``-DP). No Gaussian-style accountant improves on this for delta = 0."""
    total = 0.0
    for s, b, c in _terms(terms, "l1_sensitivity", "b"):
        total += c * s / b
    return total


# ============================================================================================
# zero-concentrated DP (Bun & Steinke 2016; Canonne, Kamath & Steinke 2020)
# ============================================================================================
@checked(sigma=check_positive_real)
def zcdp_rho_gaussian(l2_sensitivity: float, sigma: float) -> float:
    """Bun & Steinke (2016), Prop. 1.6: the Gaussian mechanism is ``rho``-zCDP with
    ``rho = Delta^2 / (2 sigma^2)`` (inf where the ratio overflows: no privacy)."""
    ratio = l2_sensitivity / sigma
    return 0.5 * ratio * ratio


@checked(epsilon=check_nonneg_real)
def zcdp_rho_pure(epsilon: float) -> float:
    """Bun & Steinke (2016), Prop. 1.4: ``(eps, 0)``-DP implies ``eps^2 / 2``-zCDP."""
    return 0.5 * epsilon * epsilon


def zcdp_compose(rhos: Iterable[float]) -> float:
    """Bun & Steinke (2016), Lem. 2.3: (adaptive) composition adds the ``rho``s."""
    items = _iterate(rhos, "rhos", "an iterable of zCDP parameters, e.g. [0.1, 0.2]")
    return sum((check_nonneg_real(r, f"rhos[{i}]") for i, r in enumerate(items)), 0.0)  # [] -> 0.0


@checked(rho=check_nonneg_real)
def zcdp_epsilon_simple(rho: float, delta: float) -> float:
    """Bun & Steinke (2016), Prop. 1.3: ``rho``-zCDP implies ``(rho + 2 sqrt(rho log(1/delta)),
    delta)``-DP for every ``delta > 0``."""
    return rho + 2.0 * math.sqrt(rho * log_inverse(delta))


@checked(rho=check_nonneg_real, epsilon=check_nonneg_real)
def zcdp_delta(rho: float, epsilon: float) -> float:
    """Canonne, Kamath & Steinke (2020), Prop. 12 / Cor. 13: ``rho``-zCDP (Renyi DP of order
    ``alpha`` at ``alpha rho`` for every ``alpha > 1``) implies ``(eps, delta)``-DP with

    ``delta = inf_{alpha > 1} exp((alpha - 1)(alpha rho - eps)) / (alpha - 1) * (1 - 1/alpha)^alpha``.

    The log of the bracket is convex in ``alpha`` with derivative
    ``(2 alpha - 1) rho - eps + log(1 - 1/alpha)``; its root is found by bisection. Any ``alpha``
    gives a valid delta, so the bisection's accuracy only affects tightness."""
    r, eps = rho, epsilon
    if r == 0.0:
        return 0.0

    def log_delta(a: float) -> float:
        return (a - 1.0) * (a * r - eps) + a * math.log1p(-1.0 / a) - math.log(a - 1.0)

    def slope(a: float) -> float:
        return (2.0 * a - 1.0) * r - eps + math.log1p(-1.0 / a)

    lo = 1.0 + 1e-12
    hi = max(2.0, (eps + 1.0) / (2.0 * r) + 2.0)
    if math.isinf(hi):
        # a subnormal rho (or a huge eps): the bracket [1, inf] gave delta ~ 1 (0.99999999997 at
        # rho = 1e-310); the root may lie past the doubles, and every alpha is valid: 1 / sqrt(rho)
        # is past the root at eps = 0, 1 / sqrt(2 rho), and costs e^(eps / sqrt(rho)) less beyond
        hi = 1.0 / math.sqrt(r)
    while slope(hi) < 0.0 and math.isfinite(2.0 * hi):
        hi *= 2.0
    lo, hi = _bisect(lambda mid: slope(mid) < 0.0, lo, hi, 1e-13, False)
    best = min(log_delta(lo), log_delta(hi))
    return min(1.0, math.exp(best)) if best < 709.0 else 1.0


@checked(rho=check_nonneg_real)
def zcdp_epsilon(rho: float, delta: float) -> float:
    """Smallest ``eps`` with ``zcdp_delta(rho, eps) <= delta`` (Canonne, Kamath & Steinke 2020,
    Cor. 13, inverted by bisection); never larger than :func:`zcdp_epsilon_simple`."""
    r, dlt = rho, delta
    if r == 0.0:
        return 0.0
    hi = zcdp_epsilon_simple(r, dlt)
    if math.isinf(hi):  # rho >~ 1e308: an epsilon past the doubles certifies nothing
        return math.inf
    if zcdp_delta(r, hi) > dlt:  # pragma: no cover - CKS is at least as tight as BS16
        return hi
    return _bisect(lambda mid: zcdp_delta(r, mid) <= dlt, 0.0, hi, 1e-13, True, 1e-300)[1]


@checked()
def zcdp_mu(epsilon: float, delta: float) -> float:
    """Largest ``mu`` with ``zcdp_epsilon(mu^2 / 2, delta) <= epsilon``: the whitened sensitivity a
    release whose accounting is zCDP may have (the discrete Gaussian of Canonne, Kamath &
    Steinke 2020 is ``mu^2 / 2``-zCDP, Thm. 4 / 14). ``zcdp_delta`` increases with ``rho``, so this
    is a bisection; the lower end of the final bracket is returned (the private side)."""
    eps, dlt = epsilon, delta

    def ok(mu: float) -> bool:  # a rho past the doubles (epsilon ~1e308) is no level to take
        rho = 0.5 * mu * mu
        return math.isfinite(rho) and zcdp_delta(rho, eps) <= dlt

    lo, hi = 0.0, 1.0
    while ok(hi):
        lo, hi = hi, 2.0 * hi
    lo, hi = _bisect(ok, lo, hi, 1e-13, False)
    if lo == 0.0:  # pragma: no cover - delta -> 0 as rho -> 0
        raise PrivacyParameterError(f"no zCDP level reaches (eps={eps}, delta={dlt})")
    return lo


# ============================================================================================
# Discrete Gaussian releases by domination (no zCDP detour)
# ============================================================================================
#: Tail cut of the domination argument (in standard deviations).
_DG_TAIL = 20.0


@checked(inverse_variance_sum=check_nonneg_real, draws=check_nonneg_real, min_variance=check_positive_real)
def discrete_gaussian_mu(
    epsilon: float, delta: float, inverse_variance_sum: float, draws: float, min_variance: float
) -> float:
    """Largest whitened sensitivity ``mu`` (of integer data) at which an adaptively composed
    release of discrete Gaussian draws is (eps, delta)-DP, read from the continuous Gaussian's
    exact curve (Balle & Wang 2018) instead of zCDP.

    The release is compared with the same mechanism whose draws are ``round(N(0, s^2))`` (the
    rounded continuous Gaussian: a post-processing of the Gaussian mechanism on the integer data,
    hence ``mu``-GDP with the same whitened sensitivity, adaptively composed; Dong, Roth & Su
    2019). Only the draws the user's data enters need replacing (elsewhere the two neighbours'
    laws coincide). For N_Z(0, s^2) with pmf p and the rounded law r (Poisson summation:
    ``Z = sqrt(2 pi) s sum_k exp(-2 pi^2 s^2 k^2)``; ``r(y) = phi(y) int_{-1/2}^{1/2}
    cosh(y t / s^2) exp(-t^2 / 2 s^2) dt``), for every integer y

    * ``p(y) <= phi(y) <= exp(1 / (8 s^2)) r(y)``;
    * ``r(y) <= phi(y) exp(y^2 / (8 s^4)) <= p(y) exp(B^2 / (8 s^2) + log(1 + 2 e^-a / (1 - e^-3a)))``
      for ``|y| <= B s``, ``a = 2 pi^2 s^2``; and ``P(|round(N(0, s^2))| > B s) <= 2 Phi(-(B - 1/(2 s)))``.

    Multiplying over the replaced draws (``eta_1 = sum 1 / (8 s_i^2)``, ``eta_2 = sum B^2 / (8
    s_i^2) + log(...)``, ``beta`` the union of the tails, B = max(20, sqrt(2 (eps + 60))) so that
    ``e^eps beta`` stays negligible), any event E satisfies
    ``P(E) <= e^(eta_1) [e^(eps_0) (e^(eta_2) Q(E) + beta) + delta_G(eps_0; mu)]``, so the release
    is (eps, delta)-DP when ``delta_G(eps - eta_1 - eta_2; mu) <= delta e^(-eta_1) - e^(eps) beta``.

    ``inverse_variance_sum`` is ``sum_i 1 / s_i^2`` over the replaced draws (lattice units),
    ``draws`` (an upper bound on) their number and ``min_variance`` a lower bound on the ``s_i^2``.
    Returns 0 when the corrections alone exceed the budget."""
    eps, dlt = epsilon, delta
    eta1, eta2, beta = _dg_corrections(inverse_variance_sum, draws, min_variance, eps)
    eps0 = eps - eta1 - eta2
    if eps0 <= 0.0:
        return 0.0
    d0 = dlt * math.exp(-eta1) - _times_exp(beta, eps)
    if d0 <= 0.0:
        return 0.0
    return gaussian_mu(eps0, min(d0, 1.0 - 1e-16))


def _times_exp(x: float, e: float) -> float:
    """``x e^e`` for ``x >= 0`` without overflow (capped at 1e300)."""
    if x <= 0.0:
        return 0.0
    return math.exp(min(e + math.log(x), 690.0))


def _dg_corrections(
    inverse_variance_sum: float, draws: float, min_variance: float, epsilon: float
) -> tuple[float, float, float]:
    """(eta_1, eta_2, beta) of :func:`discrete_gaussian_mu`, with the tail cut B = max(20,
    sqrt(2 (eps + 60))) so that e^eps beta stays below draws e^-60 at every epsilon (any B is
    valid)."""
    b = max(_DG_TAIL, math.sqrt(2.0 * (epsilon + 60.0)))
    a = 2.0 * math.pi**2 * min_variance
    poisson = math.log1p(2.0 * math.exp(-a) / -math.expm1(-3.0 * a))
    eta1 = inverse_variance_sum / 8.0
    eta2 = b * b * inverse_variance_sum / 8.0 + draws * poisson
    beta = draws * math.erfc((b - 0.5 / math.sqrt(min_variance)) / _SQRT2)
    return eta1, eta2, beta


@checked(
    mu=_check_mu,
    epsilon=check_nonneg_real,
    inverse_variance_sum=check_nonneg_real,
    draws=check_nonneg_real,
    min_variance=check_positive_real,
)
def discrete_gaussian_delta(
    mu: float, epsilon: float, inverse_variance_sum: float, draws: float, min_variance: float
) -> float:
    """The delta at ``epsilon`` that :func:`discrete_gaussian_mu` certifies for a discrete Gaussian
    release with whitened sensitivity ``mu``: ``e^(eta_1) (delta_G(eps - eta_1 - eta_2; mu) +
    e^(eps - eta_1 - eta_2) beta)`` (1 when the corrections exceed epsilon)."""
    eta1, eta2, beta = _dg_corrections(inverse_variance_sum, draws, min_variance, epsilon)
    eps0 = epsilon - eta1 - eta2
    if eps0 < 0.0:
        return 1.0
    return min(1.0, math.exp(eta1) * (gaussian_delta(eps0, mu) + _times_exp(beta, eps0)))


@checked(
    mu=_check_mu,
    inverse_variance_sum=check_nonneg_real,
    draws=check_nonneg_real,
    min_variance=check_positive_real,
)
def discrete_gaussian_epsilon(
    mu: float, delta: float, inverse_variance_sum: float, draws: float, min_variance: float
) -> float:
    """Smallest epsilon with :func:`discrete_gaussian_delta` ``<= delta`` (bisection; the upper end
    of the final bracket is returned)."""
    m, dlt = mu, delta
    args = (inverse_variance_sum, draws, min_variance)
    hi = max(1.0, gaussian_epsilon(m, dlt) * 2.0 + 1.0)
    while discrete_gaussian_delta(m, hi, *args) > dlt:
        hi *= 2.0
        if hi > 1e6:
            return math.inf
    return _bisect(lambda mid: discrete_gaussian_delta(m, mid, *args) <= dlt, 0.0, hi, 1e-15, True)[1]


@checked(rounding_mu=check_nonneg_real, grid_bits=lambda v, name: check_int(v, name, 0, 64))
def discrete_gaussian_draws(rounding_mu: float, grid_bits: int) -> tuple[float, float, float]:
    """The draw summary :func:`discrete_gaussian_mu` needs for privrl's lattice laws, from the
    release's rounding term and grid: the draws a user's data enters have variances s^2 (lattice
    units) with ``sum 1 / s^2 = rounding_mu^2`` (the rounding term is the whitened norm of one
    lattice step in every entry), s^2 in [4^k / 32, 4^(k+1)] (vectors 4^k; matrices 4 4^k / q on
    and 2 4^k / q off the diagonal, q = divisor^2 <= 64), hence at most ``rounding_mu^2 4^(k+1)``
    of them. Returns (inverse_variance_sum, draws, min_variance)."""
    unit2 = 4.0**grid_bits
    s = rounding_mu * rounding_mu
    return s, s * 4.0 * unit2, unit2 / 32.0


# ============================================================================================
# Tree counting
# ============================================================================================
@checked()
def tree_nodes_per_leaf(n_leaves: int) -> int:
    """Exact number of released nodes of a binary tree over ``n_leaves`` leaves that contain one
    leaf, maximised over leaves: ``floor(log2 n) + 1`` (= ``n.bit_length()``).

    Leaf 1 lies in the dyadic blocks ``[1, 2^l]`` for every ``2^l <= n``, each of which is a node
    of the prefix ``t = 2^l``; a block ``[j 2^l + 1, (j+1) 2^l]`` with ``(j+1) 2^l > n`` is never
    part of any released prefix (the Rust tree draws its noise lazily and never does). This is
    ``<= K0 = ceil(log2 n) + 1`` of App. "Tree-based method" (equal when ``n`` is a power of 2).
    """
    return n_leaves.bit_length()


# ============================================================================================
# Accountant
# ============================================================================================
def _sq(x: float) -> float:
    return x * x


def _check_ratio(value: float, what: str, ratio: float) -> None:
    """Refuse a release whose privacy loss ``value`` is not a double (sigma = 1e-300 for a
    sensitivity of 1 raised OverflowError in the conversions): it protects nothing."""
    if not math.isfinite(value):
        raise PrivacyParameterError(
            f"{what} overflows a double (sensitivity / scale = {ratio:.3g}): noise this small "
            "relative to the sensitivity protects nothing"
        )


def _finite(value: float, what: str) -> float:
    """A composed privacy loss, refused when the composition left the doubles."""
    if not math.isfinite(value):
        raise PrivacyParameterError(
            f"the composition's {what} overflows a double: its releases together protect nothing"
        )
    return value


@dataclass
class _Entry:
    kind: str  # "gaussian" | "laplace"
    sensitivity: float
    scale: float
    count: int
    label: str


@dataclass
class PrivacyAccountant:
    """Per-user privacy ledger of a composition of Gaussian and Laplace releases.

    ``add_gaussian(Delta_2, sigma, count)`` / ``add_laplace(Delta_1, b, count)`` record ``count``
    releases a user's data enters (adaptively chosen releases are allowed). Then:

    * Gaussian only: ``mu = sqrt(sum c Delta^2 / sigma^2)`` (Dong, Roth & Su 2019, Cor. 3.3) and
      the exact analytic Gaussian curve (Balle & Wang 2018, Thm. 8);
    * Laplace only: simple composition ``eps = sum c Delta_1 / b`` (App. "Simple Composition");
      at ``delta > 0`` also zCDP (``rho = sum c eps_i^2 / 2``, CKS conversion) when smaller, the
      bound :meth:`delta` reads below that epsilon;
    * mixed: the better of (simple composition of the Laplace part with the analytic Gaussian
      part) and (zCDP: ``rho = mu^2/2 + sum c eps_i^2 / 2``, Canonne-Kamath-Steinke conversion).
    """

    entries: list[_Entry] = field(default_factory=list)

    def __post_init__(self) -> None:
        """Entries given to the constructor (another accountant's ``entries``, or the dicts of its
        ``summary()``) are checked as ``add_gaussian`` / ``add_laplace`` check theirs: a kind
        "gausian" was silently left out of every sum (epsilon 0), a sigma of 0 a ZeroDivisionError."""
        given: Any = self.entries  # whatever the caller passed, not necessarily a list of entries
        self.entries = []
        if isinstance(given, (str, bytes, Mapping)) or not isinstance(given, Iterable):
            raise PrivacyParameterError(f"entries must be a list of entries (acc.entries), got {given!r}")
        for i, e in enumerate(given):
            row = dataclasses.asdict(e) if isinstance(e, _Entry) else e
            if not (isinstance(row, Mapping) and {"kind", "sensitivity", "scale", "count"} <= set(row)):
                raise PrivacyParameterError(
                    f"entries[{i}] must be an accountant's entry (acc.entries) or a dict of "
                    f"acc.summary(), got {e!r}"
                )
            add = {"gaussian": self.add_gaussian, "laplace": self.add_laplace}.get(row["kind"])
            if add is None:
                raise PrivacyParameterError(
                    f"entries[{i}].kind must be 'gaussian' or 'laplace', got {row['kind']!r}"
                )
            try:
                add(row["sensitivity"], row["scale"], row["count"], row.get("label", ""))
            except PrivacyParameterError as err:
                raise PrivacyParameterError(f"entries[{i}]: {err}") from None

    def add_gaussian(
        self, l2_sensitivity: float, sigma: float, count: int = 1, label: str = ""
    ) -> PrivacyAccountant:
        s = check_nonneg_real(l2_sensitivity, "l2_sensitivity")
        sg = check_positive_real(sigma, "sigma")
        c = check_pos_int(count, "count")
        _check_ratio(c * (s / sg) * (s / sg), "count (l2_sensitivity / sigma)^2", s / sg)
        self.entries.append(_Entry("gaussian", s, sg, c, str(label)))
        return self

    def add_laplace(
        self, l1_sensitivity: float, scale: float, count: int = 1, label: str = ""
    ) -> PrivacyAccountant:
        s = check_nonneg_real(l1_sensitivity, "l1_sensitivity")
        b = check_positive_real(scale, "scale")
        c = check_pos_int(count, "count")
        _check_ratio(c * (s / b), "count l1_sensitivity / scale", s / b)
        self.entries.append(_Entry("laplace", s, b, c, str(label)))
        return self

    # --- summaries ----------------------------------------------------------------------
    @property
    def mu(self) -> float:
        """GDP parameter of the Gaussian part (0 if none)."""
        # products, not **: a sum past the doubles is inf here (** raised OverflowError), refused
        # by the conversions (_finite)
        return math.sqrt(
            sum(e.count * _sq(e.sensitivity / e.scale) for e in self.entries if e.kind == "gaussian")
        )

    @property
    def pure_epsilon(self) -> float:
        """Simple-composition epsilon of the Laplace part (0 if none)."""
        return sum((e.count * e.sensitivity / e.scale for e in self.entries if e.kind == "laplace"), 0.0)

    @property
    def rho(self) -> float:
        """zCDP parameter of everything: ``mu^2 / 2 + sum_laplace c (Delta_1 / b)^2 / 2``."""
        lap = sum(e.count * _sq(e.sensitivity / e.scale) for e in self.entries if e.kind == "laplace")
        return 0.5 * _sq(self.mu) + 0.5 * lap

    @property
    def has_gaussian(self) -> bool:
        return any(e.kind == "gaussian" for e in self.entries)

    @property
    def has_laplace(self) -> bool:
        return any(e.kind == "laplace" for e in self.entries)

    # --- conversions ----------------------------------------------------------------------
    def epsilon(self, delta: float) -> float:
        """Smallest epsilon this accountant certifies at ``delta`` (see the class docstring)."""
        check_real(delta, "delta")  # False == 0.0: a bool was read as pure DP
        if not self.has_gaussian:
            if delta == 0.0:
                return self.pure_epsilon
            dlt = check_delta_open(delta, "delta")
            rho = self.rho  # inf: the zCDP route certifies nothing
            return min(self.pure_epsilon, zcdp_epsilon(rho, dlt) if math.isfinite(rho) else math.inf)
        dlt = check_delta_open(delta, "delta")
        g = gaussian_epsilon(_finite(self.mu, "mu"), dlt)
        if not self.has_laplace:
            return g
        rho = self.rho  # inf: the zCDP route certifies nothing
        return min(
            _finite(self.pure_epsilon + g, "epsilon"),
            zcdp_epsilon(rho, dlt) if math.isfinite(rho) else math.inf,
        )

    def delta(self, epsilon: float) -> float:
        """Smallest delta this accountant certifies at ``epsilon``."""
        eps = check_nonneg_real(epsilon, "epsilon")
        pe, rho = _finite(self.pure_epsilon, "epsilon"), self.rho
        zcdp = zcdp_delta(rho, eps) if math.isfinite(rho) else 1.0  # inf: it certifies nothing
        if not self.has_gaussian:
            return 0.0 if eps >= pe else zcdp
        cands = [zcdp] if self.has_laplace else []
        if eps >= pe:
            cands.append(gaussian_delta(eps - pe, _finite(self.mu, "mu")))
        return min(cands) if cands else 1.0

    def method(self) -> str:
        if not self.entries:
            return "nothing released"
        if not self.has_gaussian:
            return "simple composition of Laplace releases (pure DP)"
        if not self.has_laplace:
            return (
                "analytic Gaussian mechanism (Balle & Wang 2018) on the composed Gaussian "
                "(mu = sqrt(sum Delta_i^2 / sigma_i^2), Dong-Roth-Su 2019)"
            )
        return "min(simple composition of Laplace + analytic Gaussian, zCDP with CKS conversion)"

    def summary(self) -> list[dict]:
        return [
            {
                "kind": e.kind,
                "sensitivity": e.sensitivity,
                "scale": e.scale,
                "count": e.count,
                "label": e.label,
            }
            for e in self.entries
        ]
