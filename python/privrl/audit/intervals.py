"""Confidence intervals for the privacy audit (privrl.audit): exact Clopper-Pearson intervals
from the regularized incomplete beta function (no scipy), Wilson intervals for the selection step,
and the standard normal quantile."""

from __future__ import annotations

import math

from privrl.common.checks import check_int, check_probability, check_real
from privrl.common.errors import PrivacyParameterError
from privrl.privacy.gdp import _bisect, normal_cdf

__all__ = ["betainc", "clopper_pearson"]


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz; Press et al.,
    Numerical Recipes, 3rd ed., Sec. 6.4, eq. 6.4.5)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    dd = 1.0 - qab * x / qap
    dd = tiny if abs(dd) < tiny else dd
    dd = 1.0 / dd
    h = dd
    for m in range(1, 200_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        dd = 1.0 + aa * dd
        dd = tiny if abs(dd) < tiny else dd
        c = 1.0 + aa / c
        c = tiny if abs(c) < tiny else c
        dd = 1.0 / dd
        h *= dd * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        dd = 1.0 + aa * dd
        dd = tiny if abs(dd) < tiny else dd
        c = 1.0 + aa / c
        c = tiny if abs(c) < tiny else c
        dd = 1.0 / dd
        delta = dd * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            return h
    raise PrivacyParameterError(  # pragma: no cover - within BETAINC_MAX it converges in ~sqrt(max(a, b))
        f"incomplete beta continued fraction did not converge (a={a}, b={b}, x={x})"
    )


#: Largest a, b betainc takes: beyond, lgamma(a + b) - lgamma(a) - lgamma(b) cancels the answer's
#: digits (I_0.5(a, a) = 0.5 came out 0.5 + 2e-7 at 1e9, 0.5 - 1.5e-5 at 1e10, 0.8 at 1e14; 1e15 did not
#: converge, 1e308 overflowed lgamma). A Clopper-Pearson bound of n trials uses a, b <= n + 1.
BETAINC_MAX = 1e9


def betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta ``I_x(a, b)`` for ``a, b > 0``, ``x in [0, 1]`` (Numerical
    Recipes, Sec. 6.4: the continued fraction in ``x`` or, past the mean, in ``1 - x`` via
    ``I_x(a, b) = 1 - I_{1-x}(b, a)``). ``P(Bin(n, p) >= k) = I_p(k, n - k + 1)``."""
    a, b, x = check_real(a, "a"), check_real(b, "b"), check_real(x, "x")  # True was 1, "0.5" a TypeError
    if not (a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)):
        raise PrivacyParameterError(f"betainc needs finite a, b > 0, got a={a}, b={b}")
    if a > BETAINC_MAX or b > BETAINC_MAX:
        raise PrivacyParameterError(
            f"betainc needs a, b <= {BETAINC_MAX:g} (beyond, its lgamma terms cancel the answer's digits), "
            f"got a={a}, b={b}"
        )
    if not 0.0 <= x <= 1.0:  # also refuses NaN
        raise PrivacyParameterError(f"betainc needs x in [0, 1], got x={x}")
    if x == 0.0:
        return 0.0
    if x == 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, 1.0 - x) / b


def _beta_quantile(q: float, a: float, b: float) -> tuple[float, float]:
    """The final bracket ``(lo, hi)`` of ``x`` with ``I_x(a, b) = q`` (bisection; ``I_x`` increases
    in ``x``)."""
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if betainc(a, b, mid) < q:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-16 + 1e-13 * mid:
            break
    return lo, hi


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """One-sided Clopper & Pearson (1934) bounds at level ``alpha`` each for a binomial
    proportion with ``k`` successes in ``n`` trials: ``(lower, upper)`` with
    ``P(p < lower) <= alpha`` and ``P(p > upper) <= alpha``;
    ``lower = Beta^{-1}(alpha; k, n - k + 1)`` (0 if ``k = 0``),
    ``upper = Beta^{-1}(1 - alpha; k + 1, n - k)`` (1 if ``k = n``); closed forms
    ``upper = 1 - alpha^{1/n}`` at ``k = 0`` and ``lower = alpha^{1/n}`` at ``k = n``. The
    bisection returns the conservative end of its bracket."""
    k = check_int(k, "k", low=0)
    n = check_int(n, "n")
    if n < 1 or not (0 <= k <= n):
        raise PrivacyParameterError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    alpha = check_probability(alpha, "alpha")  # True was refused by value, "0.05" a bare TypeError
    if k == 0:
        lower = 0.0
    elif k == n:
        lower = alpha ** (1.0 / n)
    else:
        lower = _beta_quantile(alpha, k, n - k + 1)[0]
    if k == n:
        upper = 1.0
    elif k == 0:
        upper = -math.expm1(math.log(alpha) / n)
    else:
        upper = _beta_quantile(1.0 - alpha, k + 1, n - k)[1]
    return lower, upper


def _wilson(k: int, n: int, z: float) -> tuple[float, float]:
    """Wilson score interval: a cheap approximation used only to CHOOSE the threshold."""
    p = k / n
    den = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, centre - half), min(1.0, centre + half)


def _normal_quantile(q: float) -> float:
    """Inverse standard normal CDF by bisection (only used for the selection step)."""
    lo, hi = _bisect(lambda x: normal_cdf(x) >= q, -40.0, 40.0, 0.0, True)  # to the last bit
    return 0.5 * (lo + hi)
