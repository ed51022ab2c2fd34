"""Privacy-model plug-ins (NonPrivate, JointDP, LocalDP) as small validated frozen dataclasses.

Paper: Luyo et al., Sec. 2.1 (Def. Joint DP, Def. Local DP); delta = 0 selects pure DP (Rem. "Pure DP").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional

from privrl.privacy.mechanisms import (
    _check_delta_pure_ok,
    _check_epsilon,
    _check_probability,
)

__all__ = ["NonPrivate", "JointDP", "LocalDP"]


@dataclass(frozen=True)
class NonPrivate:
    """No privacy: the non-private algorithms (all noise terms zero).

    ``p`` is the regret failure probability used for the confidence widths.
    """

    p: float = 0.05

    def __post_init__(self) -> None:
        object.__setattr__(self, "p", _check_probability(self.p, "p"))

    @property
    def kind(self) -> str:
        return "none"

    @property
    def pure(self) -> bool:
        return False

    @property
    def epsilon(self) -> Optional[float]:
        return None

    @property
    def delta(self) -> Optional[float]:
        return None

    @property
    def label(self) -> str:
        return "NonPrivate"

    def as_kwargs(self) -> Dict[str, Any]:
        """``kind, epsilon, delta, p`` ready for ``privrl.privacy.calibration.calibrate_*``."""
        return {"kind": "none", "epsilon": None, "delta": None, "p": self.p}


@dataclass(frozen=True)
class _DPModel:
    epsilon: float
    delta: float = 0.0
    p: float = 0.05

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _check_epsilon(self.epsilon, "epsilon"))
        object.__setattr__(self, "delta", _check_delta_pure_ok(self.delta, "delta"))
        object.__setattr__(self, "p", _check_probability(self.p, "p"))

    _KIND = ""
    _TAG = ""

    @property
    def kind(self) -> str:
        return self._KIND

    @property
    def pure(self) -> bool:
        """True when ``delta == 0``: pure DP, Laplace noise and simple composition."""
        return self.delta == 0.0

    @property
    def label(self) -> str:
        return f"{self._TAG}(eps={self.epsilon:g}, delta={self.delta:g})"

    def as_kwargs(self) -> Dict[str, Any]:
        """``kind, epsilon, delta, p`` ready for ``privrl.privacy.calibration.calibrate_*``."""
        return {"kind": self.kind, "epsilon": self.epsilon, "delta": self.delta, "p": self.p}


@dataclass(frozen=True)
class JointDP(_DPModel):
    """(epsilon, delta)-joint DP (Def. "Joint DP"); ``delta = 0`` means pure JDP (Laplace).

    ``epsilon`` finite and > 0, ``delta`` in [0, 1), ``p`` (regret failure probability) in (0, 1).
    """

    _KIND = "jdp"
    _TAG = "JDP"


@dataclass(frozen=True)
class LocalDP(_DPModel):
    """(epsilon, delta)-local DP (Def. "Local DP"); ``delta = 0`` means pure LDP (Laplace).

    ``epsilon`` finite and > 0, ``delta`` in [0, 1), ``p`` (regret failure probability) in (0, 1).
    """

    _KIND = "ldp"
    _TAG = "LDP"
