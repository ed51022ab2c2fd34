"""The formulas of private tabular PSRL on a time-homogeneous (pooled over h) release (probe 49).

Every noise-setting formula, one function each (its docstring names the equation it implements);
privrl.agents.psrl.calibration assembles them. Derivations: /work/notes/probes49/README.md, "Design".
"""

# Notation. S states, A actions, H steps per episode (one user = one episode), K users, B static
# batches, m the public per-user cap: only the first m visits of each (s, a) in an episode are
# counted. The release: at the end of batches 1..B-1 the batch's OWN pooled sums (counts
# n(s, a, s'), S A S cells, and reward sums R(s, a), S A cells) plus N(0, sigma^2) per cell; the
# billboard after j releases is the sum of the j noisy increments (noise variance j sigma^2 per cell).
from __future__ import annotations

import math

import numpy as np

from privrl.agents.lsvi_ucb.formulas import lsvi_ucb_num_batches
from privrl.common.checks import check_pos_int, checked
from privrl.common.errors import PrivacyParameterError
from privrl.privacy.gdp import analytic_gaussian_delta, analytic_gaussian_sigma

__all__ = [
    "psrl_batch_bounds",
    "psrl_num_batches",
    "psrl_prior",
    "psrl_releases",
    "psrl_reward_prior",
    "psrl_sensitivity",
    "psrl_sigma",
    "psrl_x_bound",
]


@checked(m=check_pos_int)
def psrl_sensitivity(H: int, m: int = 1) -> float:
    """Replace-one L2 sensitivity of one user's capped pooled statistic: ``Delta = 2 sqrt(m H)``
    (``2 sqrt(min(m, H) H)``: a cap above H counts every visit, as m = H does).

    One user (one episode of H steps, learn's padded steps included) contributes x = (c, r): per
    (s, a) the count vector c_sa in N^S of its first m visits (``|c_sa|_1 <= m``) and the sum r_sa of
    their rewards (rewards in [0, 1], so ``0 <= r_sa <= |c_sa|_1``); a user makes H steps, so
    ``sum_sa |c_sa|_1 <= H``. Entries are integers in [0, min(m, H)] (``|c_sa|_1 <= min(m, H)``),
    hence ``||c_sa||^2 <= min(m, H) |c_sa|_1`` and ``r_sa^2 <= min(m, H) |c_sa|_1``; summed over
    (s, a): ``||x||^2 <= 2 min(m, H) H`` (written 2 m H below, for m <= H). Both neighbours are
    nonnegative (x, x' >= 0, so <x, x'> >= 0): ``||x - x'||^2 <= ||x||^2 + ||x'||^2 <= 4 m H``,
    ``Delta = 2 sqrt(m H)`` (8.944 at H = 20, m = 1). Tight when S A >= 2 H / m: two users with
    disjoint (s, a) sets, each visited m times into one s' and paid 1 each time. Without the cap
    ``||c||^2`` reaches ``H^2`` (one (s, a) visited H times): ``Delta = 2 H``."""
    return 2.0 * math.sqrt(min(m, H) * H)


@checked(m=check_pos_int)
def psrl_x_bound(H: int, m: int = 1) -> float:
    """The bound on one user's statistic, ``||x|| <= sqrt(2 min(m, H) H)`` (psrl_sensitivity's
    derivation; its Delta is sqrt(2) times this, the two users being nonnegative): the release
    plan's ``x_bound`` and the agent's SensitivityGuard. 6.325 (sqrt 40) at H = 20, m = 1."""
    return math.sqrt(2.0 * min(m, H) * H)


@checked(m=check_pos_int)
def psrl_sigma(epsilon: float, delta: float, H: int, m: int = 1) -> float:
    """The Gaussian noise std per released cell: ``sigma = analytic_gaussian_sigma(Delta, eps, delta)``
    (Balle & Wang 2018, Thm. 8; privrl.privacy.gdp), ``Delta = psrl_sensitivity(H, m)``.

    Accounting (the probe's): a user belongs to ONE batch, so its statistic enters exactly one
    released increment; the other releases sum other users' statistics (which depend on this user
    only through earlier releases). The billboard is an adaptive composition of Gaussian mechanisms
    of which exactly one has sensitivity Delta with respect to that user and the others 0, so it is
    ``mu = Delta / sigma``-GDP (Dong, Roth & Su 2019, Cor. 3.3) whatever B, and one Gaussian
    mechanism's exact (eps, delta) curve calibrates it. Policies read only the billboard and the
    agent's own randomness: JDP by post-processing (billboard lemma). ``sigma = 4.471`` at
    (eps, delta) = (10, 1e-5), ``33.368`` at (1, 1e-5), H = 20, m = 1. The returned sigma is checked
    against ``analytic_gaussian_delta(sigma, Delta, eps) <= delta``."""
    Delta = psrl_sensitivity(H, m)
    sigma = analytic_gaussian_sigma(Delta, epsilon, delta)
    assert analytic_gaussian_delta(sigma, Delta, epsilon) <= delta  # analytic_gaussian_sigma's contract
    return sigma


@checked()
def psrl_num_batches(epsilon: float, H: int, K: int, S: int, A: int) -> int:
    """The number of static batches B: App. D's ``B = ceil((K eps)^{2/5} / (d^{3/5} H^{1/5}))``
    (:func:`privrl.agents.lsvi_ucb.formulas.lsvi_ucb_num_batches`) with the one-hot dimension
    ``d = S A``, the probe's choice (B = 6 at S = 16, A = 4, H = 20, K = 20,000, eps 10; 3 at eps 1).

    With increments, B does not move the privacy (one mechanism per user whatever B), only the
    billboard's cumulative noise (``j sigma^2`` after j releases) against how stale the policies
    are; App. D's balance of the two is kept as a data-independent, untuned default (the probe's
    what-ifs: B = 3 gives 0.123, 6 gives 0.126, 12 gives 0.100). Non-private runs release after
    every user (B = K), which is not this function's business."""
    return lsvi_ucb_num_batches(epsilon, H, K, S * A)


@checked(S=check_pos_int)
def psrl_prior(S: int) -> float:
    """The Dirichlet prior of each transition row, ``P(.|s, a) ~ Dirichlet(alpha0 + N(s, a, .))``:
    ``alpha0 = 1 / S`` per next state, a prior worth ONE observation (total mass 1) whatever S, so the
    posterior mean ``(1/S + N) / (1 + n)`` is the empirical kernel once a pair has a few counts (the
    uniform Dirichlet(1), mass S = 16 on FrozenLake, weighs as 16 observations). Not a function of
    the privacy: the release's noise enters the posterior through the counts' draw. 0.0625 at S = 16.

    Measured (/work/notes/probes50/psrl_study.md; privrl.learn, last 10% success, seeds 0-9 paired
    against alpha0 = 1): slippery FrozenLake (H 20, K 20,000) JDP eps 10 0.127 vs 0.120 (+0.0072 +-
    0.0028), eps 1 0.032 vs 0.029 (+0.0026 +- 0.0017); non-slippery (H 8) eps 10 0.977 vs 0.970
    (+0.0066 +- 0.0031), eps 1 0.122 vs 0.041 (+0.08 +- 0.02)."""
    return 1.0 / S


def psrl_reward_prior() -> tuple[float, float]:
    """The Beta prior of each mean reward, ``r(s, a) ~ Beta(a0 + R, b0 + n - R)`` given the pair's
    n counted visits and their reward sum R (rewards in [0, 1]; Agrawal & Goyal's Bernoulli trick):
    ``(a0, b0) = (1, 0)``, so ``r(s, a) ~ Beta(1 + R, n - R)``, one pseudo-observation paying 1.

    Optimism in the face of the unknown reward: Beta(1 + R, n - R) is the limit b -> 0 of the
    Beta(1, b) prior's posterior, so an unvisited pair (n = R = 0) draws Beta(1, 0), the point 1, the
    top of [0, 1] (its gamma pair: ga ~ Gamma(1) > 0 and gb ~ Gamma(0), the point 0, r = ga / (ga +
    gb) = 1; the Rust core draws no randomness for a shape of 0, as numpy's ``gamma(0.0)``). The
    posterior mean ``(1 + R) / (1 + n)`` (the agent's greedy_policy) tends to the empirical mean
    R / n as the pair is visited. The uniform prior Beta(1 + R, 1 + n - R) used before put an
    unvisited pair's mean at 0.5, below the 0.99 CliffWalking pays per step after
    ``(r + 100) / 100``: no draw made the unexplored way to the goal look better than the known one,
    and PSRL never reached the goal, even without privacy. Not a function of the privacy: the
    release's noise enters the posterior through the drawn counts and reward sums (post-processing of
    the billboard, as :func:`psrl_prior`).

    Measured (the agent; ``benches/family.py --envs frozen-psrl frozen-slippery-psrl cliff-psrl
    --privacy none jdp10 jdp1 jdp0.1 --seeds 3``, K 20,000, last 10% success, mean of seeds 0-2,
    uniform -> this prior): CliffWalking non-private 0.000 -> 0.717 (JDP eps 10, 1, 0.1: 0.000
    either way); slippery FrozenLake non-private 0.202 -> 0.197, JDP eps 10 0.113 -> 0.128, eps 1
    0.031 -> 0.041; non-slippery non-private 0.995 -> 0.996, eps 10 0.976 -> 0.973, eps 1 0.038 ->
    0.505."""
    return 1.0, 0.0


@checked()
def psrl_releases(B: int) -> int:
    """Releases of a run with B batches: one at the end of every batch but the last (whose data no
    later user would read), ``B - 1`` (0 for B = 1)."""
    return B - 1


@checked()
def psrl_batch_bounds(K: int, B: int) -> np.ndarray:
    """The static batches' user bounds: users ``bounds[j] <= k < bounds[j + 1]`` (0-based) form batch
    j, ``bounds = round(linspace(0, K, B + 1))`` (the probe's split: sizes differ by at most 1; a
    function of (K, B) only, so the schedule is data-independent). ``B <= K`` (every batch holds a
    user)."""
    if B > K:
        raise PrivacyParameterError(f"B must be at most K = {K} (every batch holds a user), got {B}")
    if K <= 2**53:  # j K / B in float64, rounded half to even (the schedule of every run so far)
        return np.linspace(0, K, B + 1).round().astype(np.int64)
    # beyond 2^53 a float K is not K: the same rounding in exact integers (half to even)
    bounds = []
    for j in range(B + 1):
        q, r = divmod(j * K, B)
        bounds.append(q + (2 * r > B or (2 * r == B and q % 2 == 1)))
    return np.array(bounds, dtype=np.int64)
