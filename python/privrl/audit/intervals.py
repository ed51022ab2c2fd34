"""Confidence intervals for the privacy audit (privrl.audit): exact Clopper-Pearson intervals
from the regularized incomplete beta function (no scipy), the exact lower confidence bound on the
noncentrality of a t statistic (the Gaussian-DP audit's mu), Wilson intervals for the selection step,
and the standard normal quantile."""

from __future__ import annotations

import functools
import math

import numpy as np

from privrl.common.checks import check_int, check_probability, check_real
from privrl.common.errors import PrivacyParameterError
from privrl.privacy.gdp import _bisect, normal_cdf

__all__ = ["betainc", "clopper_pearson", "noncentral_t_lower"]


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz; Press et al.,
    Numerical Recipes, 3rd ed., Sec. 6.4, eq. 6.4.5)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    dd = 1.0 - qab * x / qap
    dd = 1.0 / (tiny if abs(dd) < tiny else dd)
    h = dd
    for m in range(1, 200_000):
        m2 = 2 * m
        # the even and the odd step of the fraction, each one Lentz update of (dd, c, h)
        for aa in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            dd = 1.0 + aa * dd
            dd = 1.0 / (tiny if abs(dd) < tiny else dd)
            c = 1.0 + aa / c
            c = tiny if abs(c) < tiny else c
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
    ``upper = Beta^{-1}(1 - alpha; k + 1, n - k) = 1 - Beta^{-1}(alpha; n - k, k + 1)`` (1 if
    ``k = n``; the second form, computed, keeps the digits of a small ``alpha``); closed forms
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
        # 1 - Beta^{-1}(alpha; n - k, k + 1) (the failures' lower bound): Beta^{-1}(1 - alpha; k + 1,
        # n - k) read 1 - alpha, which rounds (to 1.0 below alpha = 5.5e-17), and the bound missed
        # its level (P(Bin(10, upper) <= 3) = 1.67e-16 at alpha = 1e-16). The next double above
        # 1 - lower end keeps the conservative side through the subtraction's rounding.
        upper = min(1.0, math.nextafter(1.0 - _beta_quantile(alpha, n - k, k + 1)[0], 2.0))
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


_ERFC = np.frompyfunc(math.erfc, 1, 1)
#: math.erfc(z) is exactly 2.0 at z <= -6 (erfc(6) = 2e-17 is below half an ulp of 2) and 0.0 at
#: z >= 27.3 (erfc(27.3) < 1e-325 underflows): only the points between go through math.erfc (a
#: large t put 400,000 points on the grid, all but a few hundred in these two flat tails).
_ERFC_IS_2, _ERFC_IS_0 = -6.0, 27.3


@functools.lru_cache(maxsize=2)
def _noncentral_t_grid(t: float, df: int) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The Simpson grid of ``_noncentral_t_cdf`` at ``(t, df)``: its points ``w``, W's density at
    them, and the rule's ``hi - lo`` and ``3 m``. It does not depend on ``ncp``: the bisection of
    ``noncentral_t_lower`` builds it once (read-only arrays), not at each of its ~40 steps."""
    sd = 1.0 / math.sqrt(2.0 * df)
    lo, hi = max(0.0, 1.0 - 12.0 * sd), 1.0 + 12.0 * sd
    if df < 8:  # the chi's right tail is heavier than the normal approximation's
        hi = math.sqrt(1.0 + 100.0 / df)
    step = min(sd, 1.0 / max(abs(t), 1e-300)) / 16.0
    m = int(min(400_000, max(2_000, math.ceil((hi - lo) / step))))
    m += m % 2
    w = np.linspace(lo, hi, m + 1)
    with np.errstate(divide="ignore"):  # log(0) at w = 0, where the density is 0 (df >= 2)
        log_f = (
            math.log(2.0) + 0.5 * df * math.log(0.5 * df) - math.lgamma(0.5 * df)
            + (df - 1) * np.log(w) - 0.5 * df * w * w
        )  # fmt: skip
    density = np.exp(log_f)
    w.flags.writeable = density.flags.writeable = False
    return w, density, hi - lo, 3.0 * m


def _noncentral_t_cdf(t: float, df: int, ncp: float) -> float:
    """``P(T <= t)`` for a noncentral t, ``T = (Z + ncp) / W`` with ``W = sqrt(chi^2_df / df)``:
    ``E_W[Phi(t W - ncp)]`` by Simpson's rule over W's density (``df >= 2``), on a grid that
    resolves both that density (width ~ ``1 / sqrt(2 df)``) and the step of ``Phi`` (width ~ ``1 / |t|``)."""
    w, density, span, thirds = _noncentral_t_grid(t, df)
    z = (ncp - t * w) / math.sqrt(2.0)
    low = z <= _ERFC_IS_2
    erfc = np.where(low, 2.0, 0.0)  # erfc's exact values beyond these points
    ramp = ~(low | (z >= _ERFC_IS_0))  # the rest, and NaN, as math.erfc gives them
    erfc[ramp] = np.asarray(_ERFC(z[ramp]), dtype=float)
    g = density * (0.5 * erfc)
    simpson = g[0] + g[-1] + 4.0 * g[1:-1:2].sum() + 2.0 * g[2:-1:2].sum()
    return float(min(1.0, simpson * span / thirds))


def noncentral_t_lower(t: float, df: int, confidence: float) -> float:
    """One-sided lower confidence bound at level ``confidence`` on the noncentrality ``ncp >= 0`` of
    a noncentral t statistic with ``df`` degrees of freedom observed at ``t``: the ``ncp`` at which
    ``P(T >= t) = 1 - confidence`` (0 when even ``ncp = 0`` makes ``t`` that likely), exact
    (``P(bound > ncp) = 1 - confidence`` at every ``ncp``, the t statistic's law, not a normal
    approximation). For two samples of ``n`` runs each of ``N(m_a, s^2)``, ``N(m_b, s^2)`` and the
    pooled two-sample t statistic (``df = 2n - 2``), ``ncp = sqrt(n / 2) (m_a - m_b) / s``."""
    t = check_real(t, "t")
    df = check_int(df, "df", low=2)
    confidence = check_probability(confidence, "confidence")
    if not math.isfinite(t):
        raise PrivacyParameterError(f"t must be finite, got {t}")
    if _noncentral_t_cdf(t, df, 0.0) <= confidence:
        return 0.0
    hi = max(1.0, 2.0 * t)
    while _noncentral_t_cdf(t, df, hi) > confidence:  # the cdf decreases in ncp to 0
        hi *= 2.0
    # the conservative (smaller) end of the final bracket
    return _bisect(lambda mid: _noncentral_t_cdf(t, df, mid) > confidence, 0.0, hi, 1e-10, False)[0]
