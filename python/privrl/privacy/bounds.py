"""High-probability bounds on the norm of the privacy noise: the concentration claims the radii use.

Paper: Luyo et al., App. "Auxiliary Results" (Clm. "bounded.eigen", "bound.gauss.vector",
"bound.laplace.eigen", "bound.laplace.vector") and their extensions to sums of noise draws.
"""

from __future__ import annotations

import math

from privrl import _core
from privrl.common.checks import check_positive_real, checked
from privrl.common.errors import PrivacyParameterError

__all__ = [
    "check_bound_alpha",
    "gaussian_matrix_bound",
    "gaussian_vector_bound",
    "laplace_matrix_bound",
    "laplace_matrix_sum_bound",
    "laplace_vector_bound",
    "laplace_vector_sum_bound",
]


@checked()
def gaussian_matrix_bound(sigma: float, n: int, d: int, alpha: float) -> float:
    """Clm. "bounded.eigen" (Tao 2011) applied to a sum of ``n`` i.i.d. symmetric Gaussian node
    matrices with entry scale ``sigma``: the sum is Gaussian with entry scale ``sigma sqrt(n)``, so
    w.p. ``>= 1 - alpha`` its operator norm is ``<= sigma sqrt(n) (4 sqrt(d) + 2 log(1/alpha))``.
    """
    return sigma * math.sqrt(n) * (4.0 * math.sqrt(d) + 2.0 * math.log(1.0 / alpha))


@checked()
def gaussian_vector_bound(sigma: float, n: int, d: int, alpha: float) -> float:
    """Clm. "bound.gauss.vector" (Laurent & Massart 2000) for a sum of ``n`` i.i.d.
    ``N(0, sigma^2 I_d)`` vectors: w.p. ``>= 1 - alpha`` the norm is
    ``<= sigma sqrt(n) (sqrt(d) + 2 sqrt(log(1/alpha)))``.
    """
    return sigma * math.sqrt(n) * (math.sqrt(d) + 2.0 * math.sqrt(math.log(1.0 / alpha)))


@checked()
def laplace_matrix_bound(b: float, d: int, alpha: float) -> float:
    """Clm. "bound.laplace.eigen" for ONE matrix ``M = (Z' + Z'^T)/2`` with i.i.d. ``Lap(b)``
    entries in ``Z'`` (the claim is for ``b = 1``; the norm scales linearly in ``b``): w.p.
    ``>= 1 - alpha``, ``||M|| <= b (2d + 2 sqrt(d log(d/alpha)) + log(d/alpha))``.
    """
    L = math.log(d / alpha)
    return b * (2.0 * d + 2.0 * math.sqrt(d * L) + L)


@checked()
def laplace_vector_bound(b: float, d: int, alpha: float) -> float:
    """Clm. "bound.laplace.vector" for ONE vector with i.i.d. ``Lap(b)`` coordinates (claim
    stated for ``b = 1``): w.p. ``>= 1 - alpha``, ``||v||_2 <= b sqrt(d) log(d/alpha)``.
    """
    return b * math.sqrt(d) * math.log(d / alpha)


@checked()
def laplace_matrix_sum_bound(b: float, n: int, d: int, alpha: float) -> float:
    """High-probability operator-norm bound for a SUM of ``n`` independent symmetric Laplace node
    matrices ``S = sum_i (Z'_i + Z'_i^T)/2``, each ``Z'_i`` with i.i.d. ``Lap(b)`` entries. This
    extends Clm. "bound.laplace.eigen" (one matrix, ``b = 1``), which it recovers at ``n = 1``.
    Returns the minimum of two bounds, each valid w.p. ``>= 1 - alpha`` (the minimum of two
    deterministic numbers is one of them, so it is valid at the same ``alpha``):

    1. Row-sum / chi-square bound (the claim's own argument). For symmetric ``S``,
       ``||S|| <= max_r sum_j |S_rj|`` and, by the triangle inequality,
       ``sum_j |S_rj| <= sum_i (|z^i_rr| + sum_{j != r} (|z^i_rj| + |z^i_jr|))``, a sum of
       ``m = n(2d - 1)`` i.i.d. ``|Lap(b)| ~ b Exp(1) = (b/2) chi^2(2)`` variables, i.e.
       ``(b/2) chi^2(2m)``. Laurent-Massart (Clm. "bound.gauss.vector") with ``L = log(d/alpha)``
       and a union bound over the ``d`` rows give
       ``||S|| <= (b/2)(2m + 2 sqrt(2m L) + 2L) <= b (2nd + 2 sqrt(n d L) + L)``.
       This is ``<= n * laplace_matrix_bound(b, d, alpha)``, hence also below the triangle + union
       bound ``n * laplace_matrix_bound(b, d, alpha/n)``.
    2. Sub-exponential bound (grows like ``sqrt(n)``, the rate the paper's Rem./App. on pure DP
       assume for LDP). ``Lap(b)`` has MGF ``1/(1 - b^2 t^2)``; for ``|t| <= 1/(2b)``,
       ``-log(1 - x) <= 4x/3`` gives ``log E e^{tX} <= (4/3) b^2 t^2``. For a sum of ``n``,
       Chernoff yields ``P(|S_n| >= s) <= 2 exp(-min(3 s^2/(16 n b^2), s/(4b)))``, so
       ``|S_n| <= 4b max(sqrt(n L'/3), L')`` w.p. ``>= 1 - 2e^{-L'}``. Every entry of ``S`` is
       bounded by the largest ``|sum_i z^i_jl|``; a union over the ``d^2`` entries
       (``L' = log(2 d^2 / alpha)``) and ``||S|| <= max row sum <= d max |entry|`` give
       ``||S|| <= 4 b d max(sqrt(n L'/3), L')``.
    """
    return _core.laplace_sum_bounds(b, b, n, d, alpha)[0]  # the agents' own (rust/agents/bounds.rs)


@checked()
def laplace_vector_sum_bound(b: float, n: int, d: int, alpha: float) -> float:
    """High-probability 2-norm bound for a SUM of ``n`` independent vectors with i.i.d.
    ``Lap(b)`` coordinates; extends Clm. "bound.laplace.vector" (recovered exactly at ``n = 1``).
    ``||v||_2 <= sqrt(d) max_j |v_j|`` and each coordinate is bounded, with a union over the ``d``
    coordinates, by the smallest of the valid per-coordinate bounds (each at failure ``alpha/d``):

    * triangle + union: ``|sum_i z_i| <= n max_i |z_i|`` and the exact Laplace tail
      ``P(|z| > t) = e^{-t/b}`` over the ``n d`` variables: ``t = n b log(n d/alpha)`` (at ``n = 1``
      this is the claim's ``b log(d/alpha)``);
    * chi-square: ``|sum_i z_i| <= sum_i |z_i| ~ (b/2) chi^2(2n)``, Laurent-Massart:
      ``t = b (n + sqrt(2 n L) + L)``, ``L = log(d/alpha)``;
    * sub-exponential (see :func:`laplace_matrix_sum_bound`):
      ``t = 4b max(sqrt(n L'/3), L')``, ``L' = log(2d/alpha)``.
    """
    return _core.laplace_sum_bounds(b, b, n, d, alpha)[1]  # the agents' own (rust/agents/bounds.rs)


@checked(split=check_positive_real)
def check_bound_alpha(p: float, split: float, split_text: str, K: int, H: int) -> float:
    """``alpha = p / split``: the failure probability of each noise bound of a private calibration
    (the corollaries' union bound: ``split`` = 6 K H for UCRL-VTR and LSVI-UCB, 24 K H for
    UCRL-VTR+), checked once where the calibration starts. Refused when ``1 / alpha`` overflows a
    double: every bound, through ``log(1 / alpha)``, would be inf (p = 1e-300, K = 10^7, H = 20
    was refused with an internal name, "Upsilon must be finite"; found by the extreme-parameter
    audit). ``p`` is checked like the privacy models' (in (0, 1)): at p = 0 the bounds would have to
    hold with probability 1, and the noise is unbounded, so none is finite (it divided by zero).
    ``split`` is a count of bounds, >= 1 (below, alpha exceeded p, up to inf)."""
    if split < 1.0:  # split = 1e-300 returned alpha = 5e298 (inf at 5e-324): no probability
        raise PrivacyParameterError(
            f"split must be >= 1 (the number of noise bounds p is shared among), got {split!r}"
        )
    alpha = p / split
    # alpha underflows to 0 for p near the smallest double (p = 5e-324): 1 / alpha divided by zero
    if alpha == 0.0 or not math.isfinite(1.0 / alpha):
        raise PrivacyParameterError(
            f"p = {p:g} is too small for the noise bounds at K = {K}, H = {H}: their failure "
            f"probability per bound, alpha = p / ({split_text}) = {alpha:g}, makes them overflow a "
            "double; pass a larger p"
        )
    return alpha
