"""The regret side of the "adaptive" calibration (UCRL-VTR, UCRL-VTR+): the practical rule's
release (same mechanisms, same tight noise, same bounds; privrl.privacy.practical) with widths
whose bias and noise parts are honest rather than tuned, and planning that spends them well.

Everything here is post-processing of the released sums or a public constant: it moves the
regret, never the privacy guarantee (tests/test_adaptive.py checks that the released noise and
the privacy report do not move with it).

Per step h, with G~ + (lam + S_t) I = V diag(ev) V^T (S_t = shift_mult Upsilon_t, the practical
shift), a_i = max(ev_i, lam), lift_i = a_i - ev_i, the centre w0 and D >= ||w - w0||
(practical.centre_distance), the estimate is the practical one, w~ = A^{-1}(u~ + (lam + S_t + E) w0),
and its error w~ - w = A^{-1}(xi + g - N w) + A^{-1}(lam + S_t + E)(w0 - w) splits per
eigen-direction i into
    a random part of std  r_i = sqrt(sigma^2 / a_i + nu^2 / a_i^2),   nu^2 = s_v^2 + 2 s_m^2 C_w^2
        (the statistical noise of targets of std sigma, and the released noise: s_v, s_m the
        per-entry stds of the vector and off-diagonal matrix noise released at t), and
    a bias bounded by  b_i = (lam + S_t + lift_i) D / a_i.
Neither is scaled by a tuned constant (radius 1 on the random part: one standard deviation).
    optimism: Q = r + <phi, w~> + ||diag(r_i + b_i) V^T phi||;
    sampling: Q = r + <phi, w~> + max(0, max_j <phi, V diag(r_i) V^T z_j>) + ||diag(b_i) V^T phi||,
              with SAMPLING_DRAWS standard normal vectors z_j per user, each shared by every step
              (a coherent perturbation; independent draws per h make the planned V lose mass and
              the regressions receive nothing), the largest per (s, a) (optimistic sampling),
              floored at the estimate (optimistic Bayesian sampling: no draw plans below w~);
and in both Q_h(s, a) is clipped to r + [min, max] of V_{h+1} over the support of (s, a) (every
model of the mixture puts p(.|s, a) on the next states with phi(s'|s, a) != 0: a projection on
part of the known feasible set, Asm. 2; exactly r + max at the ceiling, rust/agents/adaptive.rs
on_support), which removes the ties at H that the [0, H] clip makes.
The ties that remain are exact: an uncertain action's Q at its support ceiling r + max V_{h+1} can
equal the known value of another (a deterministic action's flat support). Such ties go to the
action with the largest pessimistic value r + lo + (hi - lo) / H clip(<phi_f, w~> - ||phi_f||_E,
0, H) (the uncertain one can only be worse), then to the agent's tie-break: on
RiverSwimMixture the random tie-break sent every other user the uncertain way wherever the reward
was out of reach, and that was all of the adaptive agents' regret there.
UCRL-VTR's and UCRL-VTR+'s users send a normalized target (UCRL-VTR+: its first and second
moments): f = H (V_{h+1} - lo) / (hi - lo) with [lo, hi] the range
of V_{h+1} over the support of (s_h, a_h) (f = H on a flat support), X = phi_f(s_h, a_h), y =
f(s_{h+1}): in the plan's bounds (same guard, same noise), unbiased for the same w, and filling the
range the noise is calibrated for where V varies by little (rust/agents/vtr.rs); its sigma is H / 2.

LSVI-UCB (the adaptive rule of rust/agents/lsvi_adaptive.rs): the released target is the value
shifted by c = min V_{h+1} and amplified to fill the plan's bound [0, H + 1] (same statistic bound,
same noise, eta's effect divided by the amplification), one-hot features project the released Gram
on its diagonal, every past release of a step is combined with its staleness as extra variance,
and the estimate is a Gaussian posterior around c w1 with the target's half range as its scale;
users are optimistic (UCB backup and plan) or draw their own model from that posterior.

The constants (:func:`adaptive_constants`): sigma is half the largest spread of V_{h+1} over one
pair's support seen in the users' plans so far (public: computed from billboards), before any plan
its bound (H / 2 for targets in [0, H]); the ridge is the one whose Gaussian prior has the public
bound D as its std, lam = (max(sigma, SIGMA_MIN) / D)^2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from privrl.common.blas import one_blas_thread
from privrl.common.checks import is_one_hot  # one-hot rows: the released Gram's data part is diagonal

__all__ = [
    "ADAPTIVE_LSVI_LAM",
    "DISTANCE_FLOOR",
    "MAX_RADIUS",
    "SAMPLING_DRAWS",
    "SIGMA_MIN",
    "AdaptiveConstants",
    "adaptive_constants",
    "centre_direction",
    "is_one_hot",
]

#: LSVI-UCB's ridge under the adaptive rule (App. D's lam = d pulls every Q towards the centre as
#: hard as d visits; the adaptive rule's prior carries the scale instead).
ADAPTIVE_LSVI_LAM = 1.0

#: The largest exploration radius (in standard deviations) the adaptive rule uses: a larger
#: ``beta`` / ``beta_scale`` acts as this one. Every width is then far beyond the value clip (Q is
#: clipped to the support's range of V_{h+1}), so nothing changes but the widths' squares stay finite.
MAX_RADIUS = 1e100

#: The models each user of a sampling UCRL-VTR / UCRL-VTR+ agent draws under the adaptive rule;
#: it plans on the largest of their Q_h(s, a) (optimistic sampling, Ishfaq et al. 2021). 4 is the
#: smallest number of standard normals whose expected maximum reaches one standard deviation, the
#: optimistic width's radius: E max = 0.5642 / 0.8463 / 1.0294 for 2 / 3 / 4 draws. A single draw
#: (plain Thompson sampling) is optimistic for only half the users, and the data-independent
#: centre then decided the regret: RiverSwimMixture(S = 20), JDP eps 10, K = 10^5, 3 seeds: 84
#: (centre "feasible") against 15 ("zero"); with 4 draws 9.5 against 8.4, and 0.15 against 0.07
#: once exact ties go to the pessimistic value (docs/privacy-cost.md). The largest is floored at
#: the estimate (optimistic Bayesian sampling, May et al. 2012; E max(0, max of m normals) =
#: 0.3989 / 0.6810 / 0.8881 / 1.0458 for m = 1..4, so 4 is still the fewest reaching one std): the
#: users whose four draws all fell below the estimate were the rest of S = 20's regret (JDP eps 1:
#: 2.29 against 0.70, every one of them left at (h = 1, s = 0), a gap of 0.0746); with the floor
#: 0 against 0 at eps 10 and 1, 3 seeds.
SAMPLING_DRAWS = 4

#: The smallest public bound D on ||w - w0|| the adaptive ridge lam = (sigma / D)^2 divides by, as a
#: fraction of C_w. D = 0 (C_w = ||w0||: the model is the centre, e.g. d = 1 or equal mixture
#: weights) made lam infinite and the estimate NaN; at the floor lam is finite and the agent plans
#: with w0 up to 1e-9 C_w.
DISTANCE_FLOOR = 1e-9

#: The smallest statistical std the adaptive ridge lam = (sigma / D)^2 is computed from (a value
#: of rewards in [0, 1] per step; keeps lam > 0 when every planned V is flat).
SIGMA_MIN = 0.5


@dataclass(frozen=True)
class AdaptiveConstants:
    """sigma before any plan, the factor from the spread of V_{h+1} to sigma, and sigma's floor."""

    sigma_max: float
    spread_scale: float
    sigma_min: float = SIGMA_MIN


def adaptive_constants(regression: str, H: int, d: int) -> AdaptiveConstants:
    """The statistical std of a regression's targets (module doc):

    The targets are the normalized ones (module doc): f in [0, H], whose spread over a visited
    support is H once planned (the agents pass spread = H then, sigma_max before any plan).

    - "vtr" (UCRL-VTR, y = f(s')): sigma_max = H / 2, sigma = spread / 2;
    - "hat" (UCRL-VTR+'s weighted first moments f / sigma-bar, variance <= 1, sigma-bar >= H /
      sqrt(d)): sigma_max = 1, sigma = (sqrt(d) / H) spread / 2;
    - "tilde" (UCRL-VTR+'s second moments f^2 in [0, H^2]): sigma_max = H^2 / 2, sigma = H spread
      / 2.
    """
    if regression == "vtr":
        return AdaptiveConstants(H / 2.0, 1.0)
    if regression == "hat":
        return AdaptiveConstants(1.0, math.sqrt(d) / H)
    if regression == "tilde":
        return AdaptiveConstants(H * H / 2.0, float(H))
    raise ValueError(f"unknown regression {regression!r}")


def centre_direction(table: np.ndarray) -> tuple[np.ndarray, bool]:
    """The min-norm w1 with phi(s, a)^T w1 = 1 on every row of the public feature table (S A, d),
    and whether it holds exactly (to 1e-9): then a value level c is c w1 in the linear class, the
    adaptive LSVI rule's value shift and prior centre."""
    table = np.asarray(table, dtype=float)
    nonzero = table != 0
    if is_one_hot(table) and (table[nonzero] == 1.0).all():
        # one-hot rows: the normal equations n_j w_j = n_j give w1 = 1 on every used column and
        # the min norm 0 elsewhere, exactly (lstsq's answer bit for bit when each column is used
        # once, FeatureMap.one_hot's table; lstsq rounds it otherwise), without lstsq's O(d^3):
        # a tabular d of thousands took seconds
        w1 = nonzero.any(axis=0).astype(float)
    else:
        with one_blas_thread():  # the same bits at any BLAS thread count (privrl.common.blas)
            w1 = np.linalg.lstsq(table, np.ones(table.shape[0]), rcond=None)[0]
    return np.ascontiguousarray(w1), bool(np.abs(table @ w1 - 1.0).max() <= 1e-9)
