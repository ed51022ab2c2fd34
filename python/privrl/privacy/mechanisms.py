"""The differential-privacy tools: noise scales, Gaussian/Laplace mechanisms, composition, tree method.

Paper: Luyo et al., App. "Differential Privacy Tools" (post-processing, Laplace, Gaussian, tree, composition).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from privrl.common.checks import (
    check_finite_scale,
    check_int,
    check_nonneg_real,
    check_positive_real,
    checked,
    log_inverse,
    numeric_array,
)
from privrl.common.errors import NonFiniteError, PrivacyParameterError, SeedError
from privrl.kernels import NoiseStream
from privrl.kernels.continual import DEFAULT_GRID_BITS
from privrl.privacy.accounting import discrete_gaussian_delta, discrete_gaussian_draws
from privrl.privacy.common import DEFAULT_SAMPLER, check_sampler
from privrl.privacy.gdp import gaussian_delta

__all__ = [
    "gaussian_sigma",
    "laplace_scale",
    "gaussian_mechanism",
    "laplace_mechanism",
    "discrete_laplace_scale",
    "discrete_gaussian_mechanism_delta",
    "simple_composition",
    "simple_composition_budget",
    "advanced_composition",
    "advanced_composition_budget",
    "tree_depth",
    "tree_node_budget",
    "tree_composition",
    "gaussian_mechanism_epsilon",
    "laplace_mechanism_epsilon",
    "post_processing",
    "billboard_jdp",
]

Budget = tuple[float, float]


def _check_rng(rng) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise SeedError(f"rng must be a numpy.random.Generator (np.random.default_rng(seed)), got {rng!r}")
    return rng


def _as_finite_array(value) -> np.ndarray:
    arr = numeric_array(value, "value").reshape(np.shape(value))  # a scalar stays 0-d
    if not np.all(np.isfinite(arr)):
        raise NonFiniteError("value contains NaN or +-inf")
    return arr


# --------------------------------------------------------------------------------------------
# Noise scales and mechanisms.
# --------------------------------------------------------------------------------------------
@checked()
def gaussian_sigma(l2_sensitivity: float, epsilon: float, delta: float) -> float:
    """Standard deviation of the Gaussian mechanism, App. "Gaussian Mechanism".

    ``sigma = Delta_2 * sqrt(2 log(2/delta)) / epsilon`` (note the ``2/delta`` of the paper, not
    the ``1.25/delta`` of Dwork & Roth). The paper states the guarantee for ``epsilon in (0, 1)``;
    larger epsilons are accepted here, the caller is responsible for the regime.
    """
    return check_finite_scale(l2_sensitivity * math.sqrt(2.0 * _log_two_over(delta)) / epsilon, "sigma")


def _log_two_over(delta: float) -> float:
    """``log(2 / delta)`` for ``delta`` in (0, 1), also below 2 / DBL_MAX ~ 1.1e-308 (a subnormal
    delta, which the tools accept): ``2 / delta`` overflows there and ``log(inf)`` made sigma inf
    (refused as an overflow), the per-node epsilon of the composition budgets 0 and the certified
    epsilon inf, where ``log 2 - log delta`` (~710-745) is finite. Elsewhere the same bits as
    ``log(2 / delta)``."""
    inv = 2.0 / delta
    return math.log(inv) if math.isfinite(inv) else math.log(2.0) - math.log(delta)


@checked()
def laplace_scale(l1_sensitivity: float, epsilon: float) -> float:
    """Scale ``b`` of the Laplace mechanism, App. "Laplace Mechanism": ``b = Delta_1 / epsilon``.

    Adding i.i.d. ``Lap(b)`` noise to every coordinate of ``f(x)`` is ``(epsilon, 0)``-DP.
    """
    return check_finite_scale(l1_sensitivity / epsilon, "b")


def _return_like(value, out: np.ndarray):
    if not np.isfinite(out).all():  # a finite scale near 1e308 times a tail draw
        raise PrivacyParameterError(
            "the release overflows a double (the noise scale is too close to the largest double)"
        )
    if np.ndim(value) == 0 and not isinstance(value, np.ndarray):
        return float(out)
    return out


def _mechanism_sampler(sampler) -> str:
    """``sampler`` of the release tools: None is the agents' default, DEFAULT_SAMPLER."""
    return DEFAULT_SAMPLER if sampler is None else check_sampler(sampler)


def _discrete_release(noise: str, scale: float, arr: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``arr`` rounded to the lattice ``scale * 2^-DEFAULT_GRID_BITS`` plus exact discrete noise of
    ``scale``, drawn from a stream keyed by 32 bytes of ``rng`` (seeded calls reproduce)."""
    if arr.size == 0:
        return arr.astype(float)
    stream = NoiseStream(noise, scale, seed=rng, grid_bits=DEFAULT_GRID_BITS)
    _check_lattice_range(arr, scale, stream.lattice_unit())
    return stream.privatize(arr.reshape(1, -1)).reshape(arr.shape)


def _check_lattice_range(arr: np.ndarray, scale: float, unit: float | None) -> None:
    """The kernels' lattice-range rule (an entry is at most 2^52 lattice steps from 0), refused
    in the words of these tools: the kernels' own message advised 'fewer grid bits', which these
    tools do not take (their lattice is fixed at ``scale * 2^-DEFAULT_GRID_BITS``)."""
    if unit is None:
        return
    with np.errstate(over="ignore"):  # |value| near the largest double: inf steps, refused below
        steps = np.abs(np.rint(arr.reshape(-1) / unit))
    over = np.flatnonzero(~(steps <= 2.0**52))
    if over.size:
        i = int(over[0])
        raise PrivacyParameterError(
            f"value {float(arr.reshape(-1)[i])!r} at flat index {i} is beyond the discrete sampler's "
            f"exact range: at most 2^52 steps of its lattice, the noise scale {scale:.6g} * "
            f"2^-{DEFAULT_GRID_BITS}, i.e. |value| <= {2.0**52 * unit:.6g}; centre or rescale the "
            "statistic, or pass sampler='float' (numpy's draws, no formal guarantee)"
        )


def _check_entries(value, name: str) -> int:
    return check_int(value, name, 0)


@checked(entries=_check_entries)
def discrete_laplace_scale(l1_sensitivity: float, epsilon: float, entries: int) -> float:
    """Scale ``b`` of :func:`laplace_mechanism` with the exact discrete sampler (App. "Laplace
    Mechanism" on the lattice): the data is rounded to the lattice ``b 2^-k`` (k =
    DEFAULT_GRID_BITS = 24) and discrete Laplace noise of scale ``b`` added. Rounding moves each
    of the ``n = entries`` coordinates of two neighbours by at most half a step, so their rounded
    L1 distance is at most ``Delta_1 + n b 2^-k`` and the release is ``(Delta_1 / b + n 2^-k)``-DP
    (the geometric mechanism); ``b = Delta_1 / (epsilon - n 2^-k)`` spends exactly ``epsilon``.
    Refused when the rounding alone, ``n 2^-k``, reaches ``epsilon``."""
    n = entries
    rounding = n * 2.0**-DEFAULT_GRID_BITS
    if rounding >= epsilon:
        raise PrivacyParameterError(
            f"the lattice rounding of {n} entries alone spends n 2^-{DEFAULT_GRID_BITS} = {rounding:.3g} "
            f">= epsilon = {epsilon}: release fewer entries at once, or pass sampler='float' (no formal "
            "guarantee)"
        )
    return check_finite_scale(l1_sensitivity / (epsilon - rounding), "b")


@checked(sigma=check_positive_real, entries=_check_entries)
def discrete_gaussian_mechanism_delta(
    l2_sensitivity: float, sigma: float, epsilon: float, entries: int
) -> float:
    """The delta at ``epsilon`` of :func:`gaussian_mechanism` with the exact discrete sampler:
    the data rounded to the lattice ``sigma 2^-k`` (k = DEFAULT_GRID_BITS) and discrete Gaussian
    noise of ``sigma`` added, accounted as the agents' releases are (docs/privacy.md, "The agents'
    default"): whitened sensitivity ``mu = Delta_2 / sigma + sqrt(n) 2^-k`` (the rounding moves
    two neighbours' ``n = entries`` coordinates by at most one step each) on the continuous
    Gaussian's exact curve by domination (``accounting.discrete_gaussian_delta``)."""
    n = entries
    rounding = math.sqrt(n) * 2.0**-DEFAULT_GRID_BITS
    mu = l2_sensitivity / sigma + rounding
    return discrete_gaussian_delta(mu, epsilon, *discrete_gaussian_draws(rounding, DEFAULT_GRID_BITS))


def gaussian_mechanism(
    value,
    l2_sensitivity: float,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    sampler: str | None = None,
):
    """``value + N(0, sigma^2 I)`` with ``sigma = gaussian_sigma(...)``, App. "Gaussian Mechanism".

    ``value`` is a scalar or an array (returned as float / float ndarray of the same shape);
    ``rng`` must be a ``numpy.random.Generator``.

    The appendix's sigma is a valid (eps, delta) guarantee for eps < 1 and, by the exact curve
    (Balle & Wang 2018, Thm. 8), up to eps ~ 7 - 12 (depending on delta); beyond, it is too small
    (eps = 10, delta = 1e-5: sigma = 0.494 Delta is (10, 1.36e-5)-DP), and the release is refused
    (PrivacyParameterError) instead of spending more than asked: use
    ``accounting.analytic_gaussian_sigma`` there.

    ``sampler`` (None: the agents' default, "discrete"): "discrete" rounds ``value`` to the lattice
    ``sigma * 2^-24`` and adds the exact discrete Gaussian of Canonne, Kamath & Steinke (2020)
    (``privrl.kernels.NoiseStream("discrete_gaussian", sigma)``, keyed by 32 bytes of ``rng``), with
    the rounding in the guarantee (:func:`discrete_gaussian_mechanism_delta`); "float" adds numpy's
    float normal draws (``value + rng.normal(0, sigma)``), whose outputs carry the floating-point
    side channel of Mironov (2012) (Jin et al. 2022 for Gaussian samplers), which voids the formal
    guarantee of a real release (docs/privacy.md, "The floating-point side channel"): for
    experiments that want numpy's draws.
    """
    sigma = gaussian_sigma(l2_sensitivity, epsilon, delta)
    sampler = _mechanism_sampler(sampler)
    rng = _check_rng(rng)
    arr = _as_finite_array(value)
    if sampler == "discrete":
        if sigma == 0.0:
            return _return_like(value, arr.astype(float))
        exact = discrete_gaussian_mechanism_delta(l2_sensitivity, sigma, epsilon, arr.size)
    else:
        exact = gaussian_delta(epsilon, l2_sensitivity / sigma) if sigma > 0.0 else 0.0
    if exact > delta:
        rounded = " with the lattice rounding" if sampler == "discrete" else ""
        raise PrivacyParameterError(
            f"the appendix's Gaussian sigma {sigma:.6g} is not ({epsilon}, {delta})-DP (it is stated for "
            f"epsilon < 1; the exact curve{rounded} gives "
            f"delta = {exact:.3g}): add noise of accounting.analytic_gaussian_sigma(l2_sensitivity, epsilon, "
            "delta) instead"
        )
    if sampler == "discrete":
        return _return_like(value, _discrete_release("discrete_gaussian", sigma, arr, rng))
    out = arr + rng.normal(0.0, sigma, size=arr.shape)
    return _return_like(value, out)


def laplace_mechanism(
    value, l1_sensitivity: float, epsilon: float, rng: np.random.Generator, sampler: str | None = None
):
    """``value + Lap(b)^{shape}`` with ``b = laplace_scale(...)``, App. "Laplace Mechanism".

    ``value`` is a scalar or an array; ``rng`` must be a ``numpy.random.Generator``.

    ``sampler`` (None: the agents' default, "discrete"): "discrete" rounds ``value`` to the lattice
    ``b * 2^-24`` and adds the exact discrete Laplace (``privrl.kernels.NoiseStream(
    "discrete_laplace", b)``, keyed by 32 bytes of ``rng``), with ``b =``
    :func:`discrete_laplace_scale` so that the release, rounding included, is exactly
    ``(epsilon, 0)``-DP. "float" adds numpy's float Laplace draws (inversion, ``b log(2U)``) with
    ``b = Delta_1 / epsilon``, whose outputs reveal the input (Mironov 2012): for
    ``laplace_mechanism(0.0, 1.0, 1.0, rng, sampler="float")`` about 81% of the outputs cannot be
    produced from the neighbour ``1.0`` (80.9% of 20,000 draws, tests/test_mechanisms.py), so one
    release tells the two apart (epsilon = inf for that pair): for experiments that want numpy's
    draws.
    """
    b = laplace_scale(l1_sensitivity, epsilon)
    sampler = _mechanism_sampler(sampler)
    rng = _check_rng(rng)
    arr = _as_finite_array(value)
    if b == 0.0:
        return _return_like(value, arr.astype(float))
    if sampler == "discrete":
        scale = discrete_laplace_scale(l1_sensitivity, epsilon, arr.size)
        return _return_like(value, _discrete_release("discrete_laplace", scale, arr, rng))
    out = arr + rng.laplace(0.0, b, size=arr.shape)
    return _return_like(value, out)


# --------------------------------------------------------------------------------------------
# Composition.
# --------------------------------------------------------------------------------------------
def simple_composition(budgets: Iterable[Budget]) -> Budget:
    """App. "Simple Composition": mechanisms that are ``(eps_i, delta_i)``-DP compose to
    ``(sum eps_i, sum delta_i)``-DP. ``budgets`` is an iterable of ``(eps_i, delta_i)`` pairs
    (``eps_i >= 0``, ``delta_i >= 0``; an empty iterable gives ``(0, 0)``).

    The returned delta is ``min(sum delta_i, 1)``: delta bounds a probability, and every mechanism
    is ``(eps, 1)``-DP, so a sum above 1 (a vacuous guarantee) is reported as the equivalent,
    tighter ``1``.
    """
    expects = "an iterable of (epsilon, delta) pairs, e.g. [(0.1, 1e-6), (0.2, 0.0)]"
    if isinstance(budgets, (str, bytes)):
        raise PrivacyParameterError(f"budgets must be {expects}, got {budgets!r}")
    try:
        pairs = iter(budgets)
    except TypeError:
        raise PrivacyParameterError(f"budgets must be {expects}, got {budgets!r}") from None
    total_eps = 0.0
    total_delta = 0.0
    for i, pair in enumerate(pairs):
        try:
            e, dl = pair
        except (TypeError, ValueError):
            raise PrivacyParameterError(
                f"budgets[{i}] must be an (epsilon, delta) pair, got {pair!r}"
            ) from None
        total_eps += check_nonneg_real(e, f"budgets[{i}].epsilon")
        d = check_nonneg_real(dl, f"budgets[{i}].delta")
        if d > 1.0:
            raise PrivacyParameterError(f"budgets[{i}].delta must be in [0, 1], got {dl!r}")
        total_delta += d
    return total_eps, min(total_delta, 1.0)


@checked(delta=check_nonneg_real)
def simple_composition_budget(epsilon: float, delta: float, k: int) -> Budget:
    """Inverse of App. "Simple Composition": the per-mechanism budget ``(epsilon/k, delta/k)``
    such that ``k`` such mechanisms compose to ``(epsilon, delta)``. ``delta = 0`` (pure DP) is
    allowed.
    """
    if delta >= 1.0:
        raise PrivacyParameterError(f"delta must be in [0, 1), got {delta!r}")
    return epsilon / k, delta / k


@checked(delta0=check_nonneg_real)
def advanced_composition(eps0: float, delta0: float, k: int, delta_prime: float) -> Budget:
    """App. "Advanced composition", first form: ``k``-fold (adaptive) composition of
    ``(eps0, delta0)``-DP mechanisms is ``(eps', k delta0 + delta')``-DP with
    ``eps' = sqrt(2 k log(1/delta')) eps0 + k eps0 (e^{eps0} - 1)``. The returned delta is
    ``min(k delta0 + delta', 1)``: delta bounds a probability and every mechanism is
    ``(eps, 1)``-DP, so a value above 1 (a vacuous guarantee) is reported as the tighter ``1``.
    """
    if delta0 >= 1.0:
        raise PrivacyParameterError(f"delta0 must be in [0, 1), got {delta0!r}")
    # e^{eps0} overflows a float past eps0 ~ 709; the bound is then vacuous (eps' = inf), which
    # is the honest answer for, e.g., a tight-calibrated release read through the paper's argument.
    growth = math.expm1(eps0) if eps0 < 700.0 else math.inf
    eps_total = math.sqrt(2.0 * k * log_inverse(delta_prime)) * eps0 + k * eps0 * growth
    return eps_total, min(k * delta0 + delta_prime, 1.0)


@checked()
def advanced_composition_budget(epsilon: float, delta: float, k: int) -> Budget:
    """App. "Advanced composition", second form: ``k`` (adaptive) mechanisms, each
    ``(epsilon / sqrt(8 k log(2/delta)), delta / (2k))``-DP, compose to ``(epsilon, delta)``-DP
    (the paper states it for target ``0 < epsilon < 1``; it uses ``delta' = delta/2``).

    Outside that regime it is not a valid budget: the first form's ``k eps0 (e^eps0 - 1)`` term,
    which this one drops, exceeds ``epsilon / 2`` (the first form then composes the budget to more
    than ``epsilon``) above ``epsilon`` = 23, 33, 42, 46 for ``k`` = 3, 20, 200, 2000 at ``delta =
    1e-5`` (tending to ``4 log(2/delta)`` = 49), e.g. ``(300, 1e-5)`` over ``k = 200`` gives
    ``(2.147, 2.5e-8)``, which :func:`advanced_composition` composes to ``eps' = 3394`` (and the
    exact composition to delta = 0.98 at eps = 300). The agents check their paper calibration
    with the tight accountant and refuse one that misses its target.
    """
    return epsilon / math.sqrt(8.0 * k * _log_two_over(delta)), delta / (2.0 * k)


# --------------------------------------------------------------------------------------------
# Tree-based method.
# --------------------------------------------------------------------------------------------
@checked()
def tree_depth(n: int) -> int:
    """App. "Tree-based method": ``m = ceil(log2(n) + 1)``, the paper's bound on the tree nodes a
    prefix sum over ``n`` leaves uses ("at most m nodes") and the number of nodes of its complete
    tree one leaf belongs to. This is the paper's ``K0`` (UCRL-VTR, ``n = K``) and ``B0``
    (LSVI-UCB, ``n = B``). It is a bound, not the count: prefix ``t`` uses ``popcount(t)`` nodes,
    at most ``floor(log2(n + 1))`` (2, not 3, at ``n = 4``), and the binary mechanism the agents
    run puts a leaf in ``accounting.tree_nodes_per_leaf(n) = floor(log2 n) + 1`` released nodes
    (3, not 4, at ``n = 5``; equal to ``m`` when ``n`` is a power of two).

    Computed exactly with integers: ``ceil(log2 n) + 1 = (n - 1).bit_length() + 1``.
    """
    return (n - 1).bit_length() + 1


@checked()
def tree_node_budget(epsilon: float, delta: float, n_leaves: int) -> Budget:
    """App. "Tree-based method": the per-node budget ``(eps0, delta0)`` that makes every prefix
    sum of a tree over ``n_leaves`` leaves ``(epsilon, delta)``-DP, i.e.
    ``advanced_composition_budget(epsilon, delta, tree_depth(n_leaves))``
    ``= (epsilon / sqrt(8 m log(2/delta)), delta / (2m))``.
    """
    return advanced_composition_budget(epsilon, delta, tree_depth(n_leaves))


@checked(eps0=check_nonneg_real, delta0=check_nonneg_real)
def tree_composition(eps0: float, delta0: float, n_leaves: int, delta_prime: float) -> Budget:
    """App. "Tree-based method", forward form as printed: if every node is ``(eps0, delta0)``-DP,
    each prefix sum of a tree over ``n_leaves`` leaves (at most ``m = tree_depth(n_leaves)``
    nodes) is ``(m eps0^2 + eps0 sqrt(2 m log(1/delta')), m delta0 + delta')``-DP.

    The ``m eps0^2`` term is smaller than the ``m eps0 (e^eps0 - 1)`` of
    :func:`advanced_composition`; it is still valid by Kairouz, Oh & Viswanath (2015, Thm. 3.5),
    whose term ``m eps0 (e^eps0 - 1)/(e^eps0 + 1) <= m eps0^2 / 2``. As in
    :func:`advanced_composition`, the returned delta is capped at 1 (a probability bound).
    """
    if delta0 >= 1.0:
        raise PrivacyParameterError(f"delta0 must be in [0, 1), got {delta0!r}")
    m = tree_depth(n_leaves)
    return (
        m * eps0 * eps0 + eps0 * math.sqrt(2.0 * m * log_inverse(delta_prime)),
        min(m * delta0 + delta_prime, 1.0),
    )


@checked(sigma=check_positive_real)
def gaussian_mechanism_epsilon(l2_sensitivity: float, sigma: float, delta: float) -> float:
    """App. "Gaussian Mechanism" solved for epsilon: noise ``sigma`` on a statistic of L2
    sensitivity ``Delta`` gives ``eps = Delta sqrt(2 log(2/delta)) / sigma`` (the inverse of
    :func:`gaussian_sigma`; the appendix states the guarantee for ``eps < 1``, so a larger value
    certifies nothing by this tool)."""
    return l2_sensitivity * math.sqrt(2.0 * _log_two_over(delta)) / sigma


@checked(b=check_positive_real)
def laplace_mechanism_epsilon(l1_sensitivity: float, b: float) -> float:
    """App. "Laplace Mechanism" solved for epsilon: ``Lap(b)`` noise on a statistic of L1
    sensitivity ``Delta_1`` is ``(Delta_1 / b, 0)``-DP (inverse of :func:`laplace_scale`)."""
    return l1_sensitivity / b


def post_processing(budget: Budget) -> Budget:
    """App. "Post-processing property": any (randomized) map of an ``(eps, delta)``-DP output
    is ``(eps, delta)``-DP, e.g. ``w~ = Lambda~^{-1} u~`` (Cor. 1, App. D). Returns ``budget``
    unchanged after validating it."""
    try:
        e, dl = budget
    except (TypeError, ValueError):
        raise PrivacyParameterError(f"budget must be an (epsilon, delta) pair, got {budget!r}") from None
    # eps = +inf is a valid (vacuous) guarantee, e.g. a composition bound that blew up; NaN or
    # negative values are not.
    e = math.inf if _is_pos_inf(e) else check_nonneg_real(e, "epsilon")
    dl = check_nonneg_real(dl, "delta")
    if dl > 1.0:
        raise PrivacyParameterError(f"delta must be in [0, 1], got {dl!r}")
    return e, dl


def _is_pos_inf(x) -> bool:
    try:
        return float(x) == math.inf
    except (TypeError, ValueError):
        return False


def billboard_jdp(budget: Budget) -> Budget:
    """App. "Joint DP through DP, Billboard Lemma" (Hsu et al. 2016): if the server's release
    ``M(D)`` is ``(eps, delta)``-DP, then the outputs ``f_i(Pi_i D, M(D))`` of all users (each a
    function of the release and of that user's own data only) are ``(eps, delta)``-JDP. The
    agents follow this pattern: the server publishes a ``Release`` (``agent.release()``) and the
    arriving user's policy is computed from it alone (``agent.policy()``), then combined with the
    user's own trajectory. Returns the JDP budget (equal to ``budget``)."""
    return post_processing(budget)
