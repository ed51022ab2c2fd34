"""The Gaussian mechanism's exact privacy curve: mu-GDP (Dong, Roth & Su 2019) and the analytic Gaussian
mechanism (Balle & Wang 2018, Thm. 8); the tight accountant (privrl.privacy.accounting) composes on it."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

from privrl.common.checks import (
    check_finite_scale,
    check_nonneg_real,
    check_positive_real,
    check_real,
    checked,
    log_inverse,
)
from privrl.common.errors import PrivacyParameterError

_SQRT2 = math.sqrt(2.0)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_BISECT_ITERS = 200
_HALF_MAX = 0.5 * sys.float_info.max


def _bisect(
    ok: Callable[[float], bool], lo: float, hi: float, rtol: float, ok_hi: bool, floor: float = 0.0
) -> tuple[float, float]:
    """The bracket ``[lo, hi]`` halved at most _BISECT_ITERS times, until ``hi - lo <= rtol *
    max(hi, floor)``: the midpoint becomes the upper end where ``ok(mid)`` is ``ok_hi``, else the lower."""
    for _ in range(_BISECT_ITERS):
        mid = 0.5 * (lo + hi)
        if bool(ok(mid)) is ok_hi:
            hi = mid
        else:
            lo = mid
        if hi - lo <= rtol * max(hi, floor):
            break
    return lo, hi


def _check_x(x: Any) -> float:
    """A real argument of Phi: ``+-inf`` are its limits; NaN, strings, complex and bools are refused
    (``normal_cdf("1")`` was 0.84, ``normal_cdf(nan)`` NaN)."""
    v = check_real(x, "x")
    if math.isnan(v):
        raise PrivacyParameterError(f"x must be a real number, not NaN, got {x!r}")
    return v


def normal_cdf(x: float) -> float:
    """``Phi(x) = erfc(-x / sqrt 2) / 2`` (no cancellation in the lower tail)."""
    return 0.5 * math.erfc(-_check_x(x) / _SQRT2)


def log_normal_cdf(x: float) -> float:
    """``log Phi(x)`` for every real ``x``.

    For ``x >= -30`` directly from ``erfc`` (no underflow there); below, the asymptotic series
    ``log Phi(x) = log phi(x) - log(-x) + log(1 - 1/x^2 + 3/x^4 - 15/x^6 + 105/x^8 - 945/x^10)``
    (Abramowitz & Stegun 26.2.12; truncation error < 1e-13 relative at ``x = -30``). For
    ``x > 5``, ``log1p(-Phi(-x))``.
    """
    return _log_phi(_check_x(x))


def _log_phi(x: float) -> float:
    """log_normal_cdf of a float already checked (the accountants' bisections call it)."""
    if x > 5.0:
        return math.log1p(-0.5 * math.erfc(x / _SQRT2))
    if x >= -30.0:
        return math.log(0.5 * math.erfc(-x / _SQRT2))
    z = 1.0 / (x * x)
    series = 1.0 - z + 3.0 * z * z - 15.0 * z**3 + 105.0 * z**4 - 945.0 * z**5
    return -0.5 * x * x - _LOG_SQRT_2PI - math.log(-x) + math.log(series)


def _check_mu(mu: Any, name: str = "mu") -> float:
    """``mu >= 0``; ``+inf`` (no noise) is allowed and gives ``delta = 1``."""
    if isinstance(mu, (int, float)) and not isinstance(mu, bool) and mu == math.inf:
        return math.inf
    return check_nonneg_real(mu, name)


@checked(epsilon=check_nonneg_real, mu=_check_mu)
def gaussian_delta(epsilon: float, mu: float) -> float:
    """Exact ``delta(eps)`` of a Gaussian release with ``mu = Delta / sigma`` (Balle & Wang 2018,
    Thm. 8, "analytic Gaussian mechanism"):

    ``delta(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)``.

    This is the smallest ``delta`` for which ``f(x) + N(0, sigma^2 I)`` with
    ``||f(x) - f(x')||_2 <= Delta`` is ``(eps, delta)``-DP; it holds for every ``eps >= 0`` (no
    ``eps < 1`` restriction). Computed as ``Phi(a) * (-expm1(eps + log Phi(b) - log Phi(a)))`` to
    keep digits when the two terms are close.
    """
    if mu == 0.0:
        return 0.0
    if math.isinf(mu):
        return 1.0
    a = 0.5 * mu - epsilon / mu
    b = -0.5 * mu - epsilon / mu
    la = _log_phi(a)
    lb = _log_phi(b)
    r = epsilon + lb - la
    if r >= 0.0:  # only by rounding; the exact value is < 0 for mu > 0
        return 0.0
    return min(1.0, max(0.0, math.exp(la) * -math.expm1(r)))


@checked(mu=_check_mu)
def gaussian_epsilon(mu: float, delta: float) -> float:
    """Smallest ``eps >= 0`` with ``gaussian_delta(eps, mu) <= delta`` (bisection; ``delta(eps)``
    is decreasing). Balle & Wang (2018), Thm. 8 read in ``eps``. The value returned is the upper
    end of the final bracket, so it is a valid (never optimistic) epsilon."""
    m, dlt = mu, delta
    if math.isinf(m):
        return math.inf
    if m == 0.0 or gaussian_delta(0.0, m) <= dlt:
        return 0.0
    # Upper bracket: privacy loss ~ N(mu^2/2, mu^2) and Phi^{-1}(1 - delta) <= sqrt(2 log(1/delta)).
    hi = 0.5 * m * m + m * math.sqrt(2.0 * log_inverse(dlt)) + 1.0
    while hi <= _HALF_MAX and gaussian_delta(hi, m) > dlt:
        hi *= 2.0
    if hi > _HALF_MAX:  # mu >~ 1.3e154: an epsilon near or past the doubles' end (where the
        return math.inf  # bisection's lo + hi overflows) certifies nothing, as mu = inf
    return _bisect(lambda mid: gaussian_delta(mid, m) <= dlt, 0.0, hi, 1e-15, True)[1]


@checked()
def gaussian_mu(epsilon: float, delta: float) -> float:
    """Largest ``mu = Delta / sigma`` with ``gaussian_delta(eps, mu) <= delta`` (bisection;
    ``delta`` is increasing in ``mu``). Balle & Wang (2018), Thm. 8 / Alg. 1 read in ``mu``; the
    lower end of the final bracket is returned (valid side)."""
    eps, dlt = epsilon, delta
    lo, hi = 0.0, 1.0
    while gaussian_delta(eps, hi) <= dlt:
        lo, hi = hi, 2.0 * hi
    lo, hi = _bisect(lambda mid: gaussian_delta(eps, mid) <= dlt, lo, hi, 1e-15, False)
    if lo == 0.0:  # pragma: no cover - delta(eps, mu) -> 0 as mu -> 0, so some mu > 0 works
        raise PrivacyParameterError(f"no Gaussian noise level reaches (eps={eps}, delta={dlt})")
    return lo


@checked(sigma=check_positive_real, epsilon=check_nonneg_real)
def analytic_gaussian_delta(sigma: float, l2_sensitivity: float, epsilon: float) -> float:
    """``delta(eps)`` of ``f(x) + N(0, sigma^2 I)`` with L2 sensitivity ``Delta`` (Balle & Wang
    2018, Thm. 8): ``gaussian_delta(eps, Delta / sigma)``."""
    return gaussian_delta(epsilon, l2_sensitivity / sigma)


@checked(sigma=check_positive_real)
def analytic_gaussian_epsilon(sigma: float, l2_sensitivity: float, delta: float) -> float:
    """Smallest ``eps`` for which ``f(x) + N(0, sigma^2 I)`` (L2 sensitivity ``Delta``) is
    ``(eps, delta)``-DP (Balle & Wang 2018, Thm. 8)."""
    return gaussian_epsilon(l2_sensitivity / sigma, delta)


@checked()
def analytic_gaussian_sigma(l2_sensitivity: float, epsilon: float, delta: float) -> float:
    """Smallest ``sigma`` for which the Gaussian mechanism with L2 sensitivity ``Delta`` is
    ``(eps, delta)``-DP (Balle & Wang 2018, Thm. 8 and their Alg. 1, by bisection):
    ``sigma = Delta / gaussian_mu(eps, delta)``. Valid for every ``eps > 0`` (the classical
    ``Delta sqrt(2 log(1.25/delta)) / eps`` needs ``eps < 1``).

    ``Delta / (Delta / mu)`` need not round back to ``mu``: a sigma one rounding below the
    threshold certified a delta above the target (by up to 1e-12 relative), so the quotient is
    raised by doubling relative steps from 2^-52 until ``analytic_gaussian_delta`` meets ``delta``."""
    sigma = l2_sensitivity / gaussian_mu(epsilon, delta)
    step = 2.0**-52
    while 0.0 < sigma < math.inf and gaussian_delta(epsilon, l2_sensitivity / sigma) > delta:
        sigma *= 1.0 + step
        step *= 2.0
    return check_finite_scale(sigma, "sigma")  # as gaussian_sigma: inf would release inf / NaN
