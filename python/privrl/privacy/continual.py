"""How one user enters the continual-release mechanism of a JDP server (tree, Honaker, factorization,
BLT), and the noise scale under which another mechanism keeps the paper calibration's (eps, delta).

Paper: Luyo et al., App. "Tree-based method" (the binary tree of Cor. 1 and Alg. 2); the other mechanisms
are drop-in replacements at the same privacy (docs/privacy.md).
"""

# Each mechanism releases a post-processing of E x + z (E its encoder, z i.i.d. node noise of
# scale sigma). One user's leaf x_i enters through column i of E, so the user's whole influence on
# one mechanism is a Gaussian mechanism with L2 sensitivity Delta * m, m the mechanism's exact
# multiplier (`mechanism_profile(...).l2_multiplier`; for the binary tree sqrt(floor(log2 T) + 1),
# the nodes containing leaf 1; for Honaker's online estimator the exact projection of the user's
# change on what the releases reveal, which is smaller). So mechanisms with equal mu = Delta m /
# sigma have the same tradeoff function, hence the same (eps, delta) for every eps.
#
# * "tight" calibrations put m into the release plan (plans.ReleasedFamily.multiplier) and solve
#   for sigma directly.
# * "paper" calibrations compute sigma for the binary tree with K0 = ceil(log2 T) + 1 nodes; the
#   paper's argument certifies the K0-fold composition, i.e. mu = Delta sqrt(K0) / sigma, so a
#   mechanism M keeps the certificate with sigma_M = sigma * m_M / sqrt(K0) (the tree keeps sigma).
# The regret analysis only uses that the released noise at step t has entries of variance
# sigma^2 v(t) with v(t) <= n_terms: K0 for the tree (popcount(t) <= K0), the mechanism's exact
# max_t v(t) otherwise; Upsilon and C are computed for that n_terms.
# Pure DP (Laplace) stays on the tree: the factorizations' L1 multiplier grows like sqrt(T).
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

from privrl.common.checks import check_choice
from privrl.common.errors import PrivacyParameterError
from privrl.privacy.accounting import tree_nodes_per_leaf
from privrl.privacy.common import PRACTICAL_RULES, resolve_sampler
from privrl.privacy.mechanisms import tree_depth

__all__ = ["MECHANISMS", "UserEntry", "check_mechanism", "mechanism_profile_cached", "user_entry"]

#: The continual-release mechanisms a JDP model can select ("tree" is the paper's).
MECHANISMS = ("tree", "honaker", "factorization", "blt")


def check_mechanism(mechanism: Any) -> str:
    return check_choice(mechanism, MECHANISMS, "mechanism")


def resolve_mechanism(kind: str, calibration: str, pure: bool, mechanism: Any = None) -> str:
    """The continual-release mechanism of a server: ``mechanism`` checked, or for None the default
    BLT (the lowest variance) under the practical calibration with Gaussian JDP noise and the
    paper's binary tree otherwise. The one rule behind every public ``mechanism=None``: JointDP
    and the calibrations."""
    if mechanism is None:
        mechanism = "blt" if kind == "jdp" and calibration in PRACTICAL_RULES and not pure else "tree"
    mechanism = check_mechanism(mechanism)
    if mechanism != "tree" and (kind != "jdp" or pure):
        raise PrivacyParameterError(
            f"mechanism {mechanism!r} needs Gaussian noise (delta > 0) and JDP: pure DP (Laplace) "
            "keeps the binary tree, whose L1 multiplier the paper's pure-DP analysis covers"
        )
    return mechanism


def resolve_release_choices(
    kind: str, calibration: str, pure: bool, mechanism: Any, sampler: Any, plan: Any
) -> tuple[str, str]:
    """The (mechanism, sampler) of a calibration: the arguments, or where one is None and a release
    ``plan`` is given, the plan's; then the one rule of the models (:func:`resolve_mechanism`,
    ``resolve_sampler``). A plan of another mechanism or sampler than the ones named is refused:
    its noise would be calibrated for one mechanism and labelled (and run) as another (a tree plan
    under the default calibration gave the tree's sigma in a calibration labelled BLT)."""
    if plan is not None:
        mechanism = plan.mechanism if mechanism is None else mechanism
        sampler = plan.sampler if sampler is None else sampler
    mechanism = resolve_mechanism(kind, calibration, pure, mechanism)
    sampler = resolve_sampler(kind, mechanism, sampler)
    if plan is not None and (plan.mechanism, plan.sampler) != (mechanism, sampler):
        raise PrivacyParameterError(
            f"the release plan is one of mechanism {plan.mechanism!r} and sampler {plan.sampler!r}, "
            f"not of the mechanism {mechanism!r} and sampler {sampler!r} asked for: pass the plan's "
            "(or None for them) or a plan built with them"
        )
    return mechanism, sampler


@functools.lru_cache(maxsize=256)
def mechanism_profile_cached(mechanism: str, capacity: int) -> Any:
    """`privrl.kernels.continual.mechanism_profile` (a pure function of (kind, T); calibrations
    ask for it several times)."""
    from privrl.kernels.continual import mechanism_profile  # Rust only when a mechanism is built

    return mechanism_profile(mechanism, capacity)


@dataclass(frozen=True)
class UserEntry:
    """How one user's leaf enters a mechanism of capacity T: ``draws`` noise draws (tree nodes;
    None for a general encoder), the exact L2 ``multiplier``, the paper's node count
    ``draws_paper = K0``, the ``noise_terms`` the paper-style noise bounds use (max_t v(t) of the
    released noise in node variances; K0 for the tree, as the paper), the exact
    ``max_variance_factor`` (the tree: max popcount(t) = floor(log2(T + 1))) and
    ``paper_sigma_factor`` (sigma_M / sigma_tree under the paper's calibration)."""

    mechanism: str
    capacity: int
    draws: int | None
    multiplier: float
    draws_paper: int
    noise_terms: float
    paper_sigma_factor: float
    max_variance_factor: float


def user_entry(mechanism: str, capacity: int) -> UserEntry:
    K0 = tree_depth(capacity)
    if mechanism == "tree":
        n = tree_nodes_per_leaf(capacity)
        max_popcount = float((capacity + 1).bit_length() - 1)
        return UserEntry("tree", capacity, n, math.sqrt(n), K0, float(K0), 1.0, max_popcount)
    prof = mechanism_profile_cached(mechanism, capacity)
    m = float(prof.l2_multiplier)
    return UserEntry(
        mechanism,
        capacity,
        None,
        m,
        K0,
        float(prof.max_variance_factor),
        m / math.sqrt(K0),
        float(prof.max_variance_factor),
    )
