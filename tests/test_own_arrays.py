"""A model of one's own from numpy arrays (docs/benchmarks.md, "Your own model"): the arrays of a
time-homogeneous model given without their step axis, or a start state given as an index, are
refused with the form to give instead (the message named the shape only)."""

from __future__ import annotations

import numpy as np
import pytest

from privrl.envs import FiniteMDP, LinearMDP, LinearMixtureMDP, tabular_linear_mdp
from privrl.exceptions import ShapeError

H, S, A, d = 3, 4, 2, 2
rng = np.random.default_rng(0)
P1 = rng.dirichlet(np.ones(S), size=(S, A))  # (S, A, S): one step's kernel
R1 = rng.uniform(size=(S, A))
P, R, mu0 = np.broadcast_to(P1, (H, S, A, S)), np.broadcast_to(R1, (H, S, A)), np.ones(S) / S
BROADCAST = r"for a time-homogeneous model pass np\.broadcast_to\({0}, \(H,\) \+ {0}\.shape\)"


@pytest.mark.parametrize("build", [FiniteMDP, tabular_linear_mdp])
def test_a_kernel_or_rewards_without_the_step_axis_name_the_broadcast(build):
    with pytest.raises(
        ShapeError,
        match=r"P must have shape \(H, S, A, S\) .* got shape \(4, 2, 4\); " + BROADCAST.format("P"),
    ):
        build(P1, R, mu0)
    with pytest.raises(ShapeError, match=r"got shape \(4, 2\); " + BROADCAST.format("R")):
        build(P, R1, mu0)
    assert build(np.broadcast_to(P1, (H, *P1.shape)), np.broadcast_to(R1, (H, *R1.shape)), mu0).H == H


def test_linear_and_mixture_parameters_without_the_step_axis_name_the_broadcast():
    phi = np.full((S, A, d), 0.5)
    mu = rng.dirichlet(np.ones(S), size=d).T  # (S, d)
    with pytest.raises(ShapeError, match=r"mu must have shape .* " + BROADCAST.format("mu")):
        LinearMDP(phi, mu, np.full((H, d), 0.5), mu0)
    with pytest.raises(ShapeError, match=r"theta must have shape .* " + BROADCAST.format("theta")):
        LinearMDP(phi, np.broadcast_to(mu, (H, S, d)), np.full(d, 0.5), mu0)
    feats = np.broadcast_to(P1[..., None], (S, A, S, d)) / d
    with pytest.raises(ShapeError, match=r"weights must have shape .* " + BROADCAST.format("weights")):
        LinearMixtureMDP(feats, np.ones(d), R, mu0)


def test_a_start_state_given_as_an_index_names_the_distribution_to_give():
    with pytest.raises(
        ShapeError,
        match=r"init_dist must have shape \(S,\) .* got shape \(\); a start state s0 is np\.eye\(S\)\[s0\]",
    ):
        FiniteMDP(P, R, 0)
    assert FiniteMDP(P, R, np.eye(S)[0]).init_dist[0] == 1.0
