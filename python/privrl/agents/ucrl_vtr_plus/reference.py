"""UCRL-VTR+ (Alg. 3) in numpy, top to bottom: the test oracle of the Rust agent
(rust/agents/vtr.rs with two regressions). Two UCRL-VTR regressions (privrl.agents.ucrl_vtr.reference)
— the weighted first moments ("hat": Lambda^, w^) and the second moments ("tilde": Lambda~, w~) —
and the user's variance estimate sigma-bar between them. Never on a hot path.
"""

from __future__ import annotations

import math

import numpy as np

from privrl.agents.common.reference import noise_seeds
from privrl.agents.ucrl_vtr.reference import UCRLVTRReference, regression_of


class UCRLVTRPlusReference:
    """Alg. 3 on two reference regressions ``hat`` and ``tilde`` (built by the caller with their
    own privacy hooks, radii and bounds: sqrt(d) for the weighted statistics, H^2 for the second
    moments) and the radius beta-check of the variance estimate's correction."""

    def __init__(self, hat: UCRLVTRReference, tilde: UCRLVTRReference, beta_check: float):
        self.hat, self.tilde, self.beta_check = hat, tilde, beta_check
        self.H, self.d = hat.H, hat.d

    def plan(self):
        """Alg. 1's planning on the hat billboard."""
        return self.hat.plan()

    def sigma_bar(self, X: np.ndarray, X2: np.ndarray) -> np.ndarray:
        """V-bar = [<phi_{V^2}, w~>]_[0, H^2] - [<phi_V, w^>]^2_[0, H];
        E = min{H^2, 2H beta-check ||phi_V||_{Lambda^^-1}} + min{H^2, ||phi_{V^2}||_{E~}} (the
        practical rule adds gamma^ ||Lambda^^-1 phi_V|| to the first width in quadrature);
        sigma-bar = sqrt(max{H^2/d, V-bar + E})."""
        H, hat, tilde = self.H, self.hat, self.tilde
        first = np.clip(np.einsum("hi,hi->h", X, hat.weights), 0.0, H)
        second = np.clip(np.einsum("hi,hi->h", X2, tilde.weights), 0.0, H * H)
        check = self.beta_check * np.sqrt(np.maximum(np.einsum("hi,hij,hj->h", X, hat.inverse, X), 0.0))
        if hat.practical is not None:
            check = np.hypot(
                check, hat.gamma * np.linalg.norm(np.einsum("hij,hj->hi", hat.inverse, X), axis=1)
            )
        width = np.sqrt(np.maximum(np.einsum("hi,hij,hj->h", X2, tilde.explore, X2), 0.0))
        E = np.minimum(H * H, 2 * H * check) + np.minimum(H * H, width)
        return np.sqrt(np.maximum(H * H / self.d, second - first**2 + E))

    def observe(self, states, actions) -> None:
        """The user's phi_V, V(s') and phi_{V^2}, V^2(s') at its visited pairs; sigma-bar from
        both billboards; (X / sigma-bar, y / sigma-bar) to hat, (phi_{V^2}, V^2) to tilde."""
        states, actions = np.asarray(states), np.asarray(actions)
        _, V, phi_v = self.plan()
        X, y = self.hat.statistics(states, actions, V, phi_v)
        h = np.arange(self.H)
        X2 = np.einsum("hpi,hp->hi", self.hat.phi[states[:-1], actions], V[h + 1] ** 2)
        sig = self.sigma_bar(X, X2)
        self.last_sigma_bar = sig
        self.hat.receive(X / sig[:, None], y / sig)
        self.tilde.receive(X2, y**2)


def of_agent(agent) -> UCRLVTRPlusReference:
    """The reference of a UCRL-VTR+ agent (built with an int seed), fed its noise: the hat and
    tilde regressions (bounds sqrt(d) and H^2) with their own noise seeds."""
    cal, H, d = agent.calibration, agent.H, agent.d
    seeds = noise_seeds(agent.seed, 4 * H)
    hat = regression_of(
        agent, 0, cal.sigma_B1, cal.sigma_f, cal.shift1, agent.beta, seeds[: 2 * H], math.sqrt(d)
    )
    tilde = regression_of(
        agent, 1, cal.sigma_B2, cal.sigma_g, cal.shift2, agent.beta_tilde, seeds[2 * H :], float(H * H)
    )
    return UCRLVTRPlusReference(hat, tilde, agent.beta_check)
