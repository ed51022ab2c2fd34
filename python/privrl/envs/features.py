"""A linear MDP whose model is unknown: only the user's feature map phi(s, a) and the horizon H
(Asm. 1 without mu and theta). LSVI-UCB learns on it from interaction (privrl.learn); with no
model there is no exact regret, only realized returns."""

from __future__ import annotations

from typing import Any

import numpy as np

from privrl.common.checks import check_pos_int
from privrl.common.errors import PrivacyParameterError, ShapeError
from privrl.common.memory import refuse_over_memory
from privrl.envs.finite import ReadOnlyCopies, _as_array, _check_finite, _freeze, digest
from privrl.envs.linear import check_phi_norms

__all__ = ["FeatureMap"]


class FeatureMap(ReadOnlyCopies):
    """The public part of a linear MDP with an unknown model: phi(s, a) for S states and A
    actions, and the horizon H. ||phi(s, a)|| <= 1 is required (it bounds the privacy
    sensitivity; AssumptionError otherwise).

    Parameters
    ----------
    features : array (S, A, d)
    H : int, the horizon of an episode.
    name : str, optional

    Attributes: S, A, d, H, features, features_flat (S*A, d, row s*A + a), name. There is no
    transition kernel: ``privrl.run`` (exact regret) refuses it, ``privrl.learn`` runs on it.
    """

    def __init__(self, features: Any, H: Any, name: str | None = None) -> None:
        phi = _as_array(features, "features", 3, "(S, A, d)")
        _check_finite(phi, "features")
        _check_count(H, "H")
        check_phi_norms(phi)
        S, A, d = phi.shape
        self.S, self.A, self.d, self.H = int(S), int(A), int(d), int(H)
        self.features = _freeze(phi)
        self.features_flat = _freeze(phi.reshape(S * A, d).copy())
        self.name = name if name is not None else "FeatureMap"

    def fingerprint(self) -> dict[str, str]:
        """A digest of the horizon and the features (see FiniteMDP.fingerprint)."""
        return {"horizon": digest(self.H), "features": digest(self.features)}

    def __repr__(self) -> str:
        return f"FeatureMap(name={self.name!r}, S={self.S}, A={self.A}, d={self.d}, H={self.H})"

    @classmethod
    def one_hot(cls, S: int, A: int, H: int, name: str | None = None) -> FeatureMap:
        """The tabular feature map phi(s, a) = e_{s A + a} in R^(S A)."""
        # Python ints: numpy's S A of np.int64(2**31) and 4 wrapped to 0 when squared, past the guard
        S, A = _check_count(S, "S"), _check_count(A, "A")
        # np.eye(S A) asked numpy for 7.28 TiB at S = 10^5, A = 10 (the features and their flat copy)
        refuse_over_memory(
            "FeatureMap.one_hot",
            2.0 * (S * A) ** 2,
            f"two dense tables of S A = {S * A} one-hot features of dimension d = S A (S = {S}, A = {A})",
            "Use a feature map smaller than one-hot: FeatureMap(features, H) with features (S, A, d).",
        )
        return cls(np.eye(S * A).reshape(S, A, S * A), H, name)


def _check_count(value: Any, name: str) -> int:
    """A size of the feature map (S, A, H): an integer >= 1 by privrl.common.checks.check_pos_int's
    rule (bools, floats, 20.0 too, and strings are refused), raised as the ShapeError of a size;
    returned as a Python int (numpy's fixed-width products of sizes wrap around)."""
    try:
        return check_pos_int(value, name)
    except PrivacyParameterError:
        raise ShapeError(f"{name} must be an integer >= 1, got {value!r}") from None
