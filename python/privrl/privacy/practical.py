"""The regret side of the "practical" calibration: sharp bounds on the noise actually released at each
time, the regularization of the released Gram matrices and the confidence width they induce.

Paper: Luyo et al., Thm. 1 / Lem. "Lem.B.2"-"Lem.B.4" (the confidence sets these constants sharpen); the
privacy side (noise law, mechanism, accountant) is the tight calibration's, unchanged.
"""

# Everything here is post-processing of a DP release or a data-independent constant: it moves the
# regret, never the privacy guarantee (tests/test_practical.py checks that "practical" releases the
# same noise as "tight" and that the privacy report gives the same (eps, delta)).
#
# Noise bounds. The matrix noise released after t users has the law (Z' + Z'^T)/c with Z' i.i.d.
# N(0, s'^2): off-diagonal std s = s' sqrt(2)/c, diagonal std sqrt(2) s, i.e. s times a GOE matrix
# G. E lambda_max(G) <= 2 sqrt(d) (Sudakov-Fernique against 2 <g, u>), and G is sqrt(2)-Lipschitz
# in the underlying standard Gaussians, so with probability >= 1 - alpha (both ends of the spectrum)
#     ||noise|| <= s (2 sqrt(d) + 2 sqrt(log(2/alpha)))                  (matrix_noise_bound)
# and a vector with i.i.d. N(0, s^2) entries (1-Lipschitz norm, E norm <= sqrt(d))
#     ||noise|| <= s (sqrt(d) + sqrt(2 log(1/alpha)))                     (vector_noise_bound).
# The paper's Clm. "bounded.eigen" / "bound.gauss.vector" give s (4 sqrt(d) + 2 log(1/alpha)) and
# s (sqrt(d) + 2 sqrt(log(1/alpha))), and the corollaries evaluate them at the worst time of the
# horizon; here s is the std of the noise released at time t (its exact variance profile).
#
# Regularization. The paper adds 2 Upsilon I to the released Gram matrix: a ridge towards w = 0,
# i.e. towards "no transition at all", which makes every value estimate pessimistic until the data
# outweigh the shift (RiverSwimMixture: "always left" for 10^5 episodes). The model is known to
# satisfy phi_1(s, a)^T w = 1 for every (s, a), phi_1 = sum_s' phi(s'|s, a) (each p(.|s, a) sums to
# one), so the practical release pulls towards the min-norm w0 with that property
# (feasible_centre): with A = G~ + (lam + S_t) I + E (E >= 0 the eigenvalue floor at lam, active
# only when the noise beat the shift S_t = Upsilon_t),
#     w~ = A^{-1} (u~ + (lam + S_t) w0 + E w0),
#     w~ - w = A^{-1} (xi + g - N w + (lam I + S_t I + E)(w0 - w)),    xi = sum_i X_i eta_i,
# so for every feature phi
#     |phi^T (w~ - w)| <= ||phi||_{A^-1} (||xi||_{A^-1} + sqrt(lam) ||w0 - w||)
#                         + ||A^{-1} phi|| (||g|| + ||N|| C_w + (S_t + ||E||) ||w0 - w||).
# On the event ||N|| <= Upsilon_t <= S_t, A >= G + lam I and the first bracket is the non-private
# width (self-normalized term + ridge bias). The distance to the centre: w0 is the min-norm point of
# the affine set {w : Phi_1 w = 1}, so it lies in the row space of Phi_1 while w - w0 lies in its
# null space; by Pythagoras ||w||^2 = ||w0||^2 + ||w - w0||^2, i.e.
#     ||w - w0|| <= D = sqrt(C_w^2 - ||w0||^2)                            (centre_distance)
# (1.20 instead of the triangle inequality's C_w + ||w0|| = 2.56 on RiverSwimMixture). The bonus is
#     sqrt(beta^2 ||phi||^2_{A^-1} + gamma_t^2 ||A^{-1} phi||^2)    (within sqrt 2 of the sum),
#     beta = beta_scale * (non-private radius),
#     gamma_t = beta_scale (C_t + Upsilon_t C_w + (S_t + ||E||) D):
# beta_scale is the fraction of the derived width used, for its statistical and its privacy parts
# alike (one meaning at every privacy level). The noise-induced part decays like 1/n, not 1/sqrt(n).
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from privrl import _core
from privrl.common.checks import check_nonneg_real, checked
from privrl.common.errors import AssumptionError

__all__ = [
    "PRACTICAL_SHIFT_MULT",
    "centre_distance",
    "feasible_centre",
    "confidence_noise_width",
    "matrix_noise_bound",
    "matrix_bound_factor",
    "BoundsSpec",
    "noise_bounds",
    "released_matrix_std",
    "vector_noise_bound",
    "vector_bound_factor",
]

#: S_t = PRACTICAL_SHIFT_MULT * Upsilon_t: the released Gram matrix dominates Lambda + lam I on the
#: noise event (the paper shifts by 2 Upsilon of the whole horizon to also bound it from above).
PRACTICAL_SHIFT_MULT = 1.0


def nonprivate_rule(calibration: str, shift_mult: float = PRACTICAL_SHIFT_MULT) -> dict[str, Any]:
    """A non-private calibration's release-rule fields: the practical rule and its shift multiplier
    under ``calibration="practical"``, none (the class defaults) otherwise."""
    return {"release_rule": "practical", "shift_mult": shift_mult} if calibration == "practical" else {}


@checked(s=check_nonneg_real)
def matrix_noise_bound(s: float, d: int, alpha: float) -> float:
    """High-probability spectral norm of a released symmetric noise matrix whose off-diagonal
    entries have std ``s`` (diagonal ``sqrt(2) s``, the law of ``(Z' + Z'^T)/c``): with probability
    ``>= 1 - alpha``, ``||N|| <= s (2 sqrt(d) + 2 sqrt(log(2/alpha)))`` (module comment)."""
    return s * matrix_bound_factor(d, alpha)


def matrix_bound_factor(d: int, alpha: float) -> float:
    """``2 sqrt(d) + 2 sqrt(log(2/alpha))``: matrix_noise_bound per unit of std (the Rust agents take
    it as a constant)."""
    return 2.0 * math.sqrt(d) + 2.0 * math.sqrt(math.log(2.0 / alpha))


@checked(s=check_nonneg_real)
def vector_noise_bound(s: float, d: int, alpha: float) -> float:
    """High-probability norm of a vector with i.i.d. ``N(0, s^2)`` entries: with probability
    ``>= 1 - alpha``, ``||g|| <= s (sqrt(d) + sqrt(2 log(1/alpha)))``."""
    return s * vector_bound_factor(d, alpha)


def vector_bound_factor(d: int, alpha: float) -> float:
    """``sqrt(d) + sqrt(2 log(1/alpha))``: vector_noise_bound per unit of std."""
    return math.sqrt(d) + math.sqrt(2.0 * math.log(1.0 / alpha))


def released_matrix_std(sigma: float, sym_divisor: float, variance_factor: float) -> float:
    """Off-diagonal std of the matrix noise released when every node is ``(Z' + Z'^T)/c`` with
    ``Z'`` i.i.d. ``N(0, sigma^2)`` and the release sums nodes with total weight ``variance_factor``
    (the mechanism's ``variance_factor(t)``; ``t`` for ``t`` LDP users): ``sigma sqrt(2 v) / c``."""
    return sigma * math.sqrt(2.0 * variance_factor) / sym_divisor


def confidence_noise_width(
    C_t: float, Upsilon_t: float, C_w: float, regularization: Any, centre_distance: float, scale: float
) -> Any:
    """gamma_t, the coefficient of ``||A^{-1} phi||`` in the practical bonus (module comment):
    ``scale (C_t + Upsilon_t C_w + regularization D)`` with ``regularization`` the weight
    ``S_t + ||E||`` of the privacy-driven pull towards ``w0`` (scalar or one per step) and ``D`` the
    bound on ``||w - w0||`` (centre_distance): the privacy noise of the target and of the design and
    the bias of the regularization, all scaled like the statistical width (``scale = beta_scale``)."""
    return scale * (C_t + Upsilon_t * C_w + regularization * centre_distance)


def centre_distance(C_w: float, features: Any, w0: Any) -> float:
    """A bound on ``||w - w0||`` over every admissible ``w`` (``||w|| <= C_w``, every row of the model
    a distribution): ``sqrt(C_w^2 - ||w0||^2)`` when ``w0`` satisfies ``phi_1^T w0 = 1`` exactly
    (``w0`` in the row space, ``w - w0`` in the null space of the constraints: Pythagoras, module
    comment) and ``||w0|| <= C_w`` (within LinearMixtureMDP's 1e-9), the triangle inequality's
    ``C_w + ||w0||`` otherwise: also where ``||w0|| > C_w`` (a user's own features whose exact centre
    no ``||w|| <= C_w`` reaches; Pythagoras clamped to 0 pinned the estimate to ``w0``).
    AssumptionError where ``||w0||^2`` overflows (features of norm ~1e-300)."""
    import numpy as np

    f = np.asarray(features, dtype=float)
    phi_1 = f.sum(axis=2).reshape(-1, f.shape[-1])
    w0 = np.asarray(w0, dtype=float)
    with np.errstate(over="ignore"):  # refused just below
        norm2 = float(w0 @ w0)
    if not math.isfinite(norm2):
        raise AssumptionError(
            "the mixture features are too small for the practical / adaptive ridge's centre: its "
            f"||w0||^2 (w0 with sum_s' phi(s'|s, a)^T w0 = 1, largest |phi| = {np.abs(f).max():.3g}) "
            "overflows a double; give features of norm of order 1 or pass centre='zero'"
        )
    if np.abs(phi_1 @ w0 - 1.0).max() <= 1e-9 and math.sqrt(norm2) <= C_w + 1e-9 * max(1.0, C_w):
        return math.sqrt(max(C_w * C_w - norm2, 0.0))
    return C_w + math.sqrt(norm2)


@dataclass(frozen=True)
class BoundsSpec:
    """The noise whose high-probability norms the practical release reads after t users:
    ``kind`` "zero", "gaussian" (``sigma_m`` / ``sigma_v`` the node stds, matrices
    ``(Z' + Z'^T)/divisor``) or "laplace" (``sigma_m`` / ``sigma_v`` the scales b). The agents
    evaluate it in Rust at every release (rust/agents/bounds.rs)."""

    kind: str
    sigma_m: float = 0.0
    sigma_v: float = 0.0
    divisor: float = 1.0
    d: int = 1
    alpha: float = 1.0


def noise_bounds(spec: BoundsSpec, variance_factor: float) -> tuple[float, float]:
    """(Upsilon, C): the high-probability norms of the matrix and vector noise of a release with
    the given variance factor (the continual-release mechanism's profile at t, t for t LDP users):
    Gaussian, matrix_noise_bound / vector_noise_bound at the std actually released; Laplace (pure
    DP, ``round(v)`` draws summed), the sum bounds of privrl.privacy.bounds; 0 for no noise. The
    very function the agents evaluate at every release."""
    return _core.practical_noise_bounds(spec, float(variance_factor))


def feasible_centre(features: Any) -> Any:
    """The min-norm ``w0`` with ``phi_1(s, a)^T w0 = 1`` for every ``(s, a)``, ``phi_1(s, a) =
    sum_s' phi(s'|s, a)`` (least squares when no exact solution exists): the point the practical
    release's ridge pulls towards. ``features`` is the public (S, A, S, d) map of a linear-mixture
    MDP (Asm. 2); the true ``w_h`` satisfies the constraints, so the pull is towards a model whose
    rows are probability distributions (module comment)."""
    import numpy as np  # the rest of the module is pure floats

    f = np.asarray(features, dtype=float)
    phi_1 = f.sum(axis=2).reshape(-1, f.shape[-1])
    return np.linalg.lstsq(phi_1, np.ones(phi_1.shape[0]), rcond=None)[0]
