"""Privacy-model plug-ins (NonPrivate, JointDP, LocalDP) as small validated frozen dataclasses.

Paper: Luyo et al., Sec. 2.1 (Def. Joint DP, Def. Local DP); delta = 0 selects pure DP (Rem. "Pure DP").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from privrl.common.checks import check_flag, check_model_delta, check_probability, check_user_epsilon
from privrl.common.errors import PrivacyParameterError
from privrl.privacy.common import (
    CALIBRATIONS,
    DEFAULT_CALIBRATION,
    DISCRETE_MECHANISMS,
    SAMPLERS,
    check_calibration,
    resolve_sampler,
)
from privrl.privacy.continual import MECHANISMS, resolve_mechanism

__all__ = ["NonPrivate", "JointDP", "LocalDP", "CALIBRATIONS", "MECHANISMS", "SAMPLERS"]

#: What ``as_kwargs`` reads from a privacy model (then its ``sampler``): the ``calibrate_*`` arguments.
_KWARGS = ("kind", "epsilon", "delta", "p", "calibration", "mechanism")


@dataclass(frozen=True)
class NonPrivate:
    """No privacy: the non-private algorithms (all noise terms zero).

    ``p`` is the regret failure probability of the confidence widths under ``"paper"`` and
    ``"practical"``; under ``"adaptive"`` it has no effect here (the adaptive widths are counted
    in standard deviations, and p enters only the privacy noise's high-probability bounds, which
    are zero without noise). ``calibration``:
    ``"adaptive"`` (default: the adaptive regret side with no noise, privrl.privacy.adaptive, the
    eps -> inf member of the default private agents), ``"practical"`` (the practical regret side
    with no noise, privrl.privacy.practical) or ``"paper"`` ("tight" is the same: the theorems'
    non-private algorithms).
    """

    p: float = 0.05
    calibration: str = DEFAULT_CALIBRATION

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "p", check_probability(self.p, "p"))
        except PrivacyParameterError as e:  # NonPrivate(1.0) read as an epsilon said only "p must be ..."
            raise PrivacyParameterError(
                f"{e}: NonPrivate's p is the regret failure probability of the confidence widths, not "
                "an epsilon (a non-private agent has none; JointDP(eps, delta) or LocalDP(eps, delta) "
                "is private)"
            ) from None
        check_calibration(self.calibration)

    @property
    def kind(self) -> str:
        return "none"

    @property
    def pure(self) -> bool:
        return False

    @property
    def epsilon(self) -> float | None:
        return None

    @property
    def delta(self) -> float | None:
        return None

    @property
    def label(self) -> str:
        return "NonPrivate" if self.calibration == DEFAULT_CALIBRATION else f"NonPrivate({self.calibration})"

    @property
    def mechanism(self) -> str:
        return "tree"

    @property
    def sampler(self) -> str:
        """No noise is drawn; "float" keeps the calibration functions' default."""
        return "float"

    def as_kwargs(self) -> dict[str, Any]:
        """``kind, epsilon, delta, p, calibration, mechanism, sampler`` ready for the
        ``calibrate_*`` functions of privrl.privacy."""
        return {**{k: getattr(self, k) for k in _KWARGS}, "sampler": self.sampler}


@dataclass(frozen=True)
class _DPModel:
    epsilon: float
    delta: float = 0.0
    p: float = 0.05
    calibration: str = DEFAULT_CALIBRATION

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_user_epsilon(self.epsilon, "epsilon"))
        # a truthy "no" must not unlock the large-delta guard; np.True_ is stored as True
        flag = getattr(self, "allow_large_delta", False)
        large = check_flag(flag, "allow_large_delta", PrivacyParameterError)
        if hasattr(self, "allow_large_delta"):
            object.__setattr__(self, "allow_large_delta", large)
        object.__setattr__(self, "delta", check_model_delta(self.delta, "delta", large))
        object.__setattr__(self, "p", check_probability(self.p, "p"))
        check_calibration(self.calibration)

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
        extra = "" if self.calibration == DEFAULT_CALIBRATION else f", {self.calibration}"
        if self._sampler() == "float" and self.mechanism in DISCRETE_MECHANISMS:
            extra += ", float"  # not the default: say so in every table and plot
        return f"{self._TAG}(eps={self.epsilon:g}, delta={self.delta:g}{extra})"

    @property
    def mechanism(self) -> str:
        """The continual-release mechanism of the server ("tree" unless JointDP chose one)."""
        return "tree"

    def _sampler(self) -> str:
        return str(getattr(self, "sampler", "float"))

    def _resolve_sampler(self) -> None:
        """``sampler=None``: "discrete" wherever the server's mechanism has it (every default),
        "float" on Honaker / the factorization; an explicit choice is checked."""
        object.__setattr__(
            self, "sampler", resolve_sampler(self.kind, self.mechanism, getattr(self, "sampler", None))
        )

    def as_kwargs(self) -> dict[str, Any]:
        """``kind, epsilon, delta, p, calibration, mechanism, sampler`` ready for the
        ``calibrate_*`` functions of privrl.privacy."""
        return {**{k: getattr(self, k) for k in _KWARGS}, "sampler": self._sampler()}


@dataclass(frozen=True)
class JointDP(_DPModel):
    """(epsilon, delta)-joint DP (Def. "Joint DP"); ``delta = 0`` means pure JDP (Laplace).

    ``epsilon`` in [1e-4, 1e15], ``delta`` 0 or in [1e-100, 0.1) (up to 1 with
    ``allow_large_delta=True``: a delta that large is a failure mode, not a setting), ``p`` (regret
    failure probability) in (0, 1); a value outside raises PrivacyParameterError.
    ``calibration``: ``"adaptive"`` (default: the tight noise with the adaptive regret side,
    privrl.privacy.adaptive), ``"practical"`` (the tight noise with sharp regret-side constants,
    privrl.privacy.practical), ``"tight"`` (the smallest noise making the same release
    (eps, delta)-DP under the tight accountant, privrl.privacy.common.tight_scales, with the
    paper's regret side) or ``"paper"`` (the noise of Cor. 1 / App. D / Cor. "JDP-UCRL-VTR+").
    Every one certifies the same (eps, delta); they differ in the noise scale (paper vs tight) and
    in what is computed from the release (the regret side).
    ``mechanism``: the continual release of the server's prefix sums, ``"tree"`` (the paper's
    binary mechanism; the default of "paper" and "tight"), ``"honaker"``, ``"factorization"`` or
    ``"blt"`` (the default of "adaptive" and "practical" with ``delta > 0``: the lowest variance;
    pure DP keeps the tree); the others need ``delta > 0`` and get the noise scale of the same
    (eps, delta) (privrl.privacy.continual).
    ``sampler``: ``"discrete"`` (the default wherever the mechanism has it: tree and BLT) draws
    every released noise with the exact discrete Gaussian / Laplace of Canonne, Kamath & Steinke
    (2020) on the lattice ``scale * 2^-24``, the data rounded to it, and accounts for it as such
    (the continuous Gaussian's exact curve by domination, or zCDP when tighter, plus the rounding;
    docs/privacy.md): no floating-point side channel. ``"float"``: the continuous laws (the
    paper's; Honaker and the factorization have nothing else).
    """

    mechanism: str | None = None  # type: ignore[assignment]  # a field where _DPModel has a property
    sampler: str | None = None
    allow_large_delta: bool = False

    _KIND = "jdp"
    _TAG = "JDP"

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(
            self, "mechanism", resolve_mechanism("jdp", self.calibration, self.pure, self.mechanism)
        )
        if self.mechanism != "tree" and self.delta == 0.0:
            raise PrivacyParameterError(
                f"mechanism {self.mechanism!r} needs Gaussian noise (delta > 0); pure JDP keeps the tree"
            )
        self._resolve_sampler()

    @property
    def label(self) -> str:
        base = super().label
        return base if self.mechanism == "tree" else f"{base[:-1]}, {self.mechanism})"


@dataclass(frozen=True)
class LocalDP(_DPModel):
    """(epsilon, delta)-local DP (Def. "Local DP"); ``delta = 0`` means pure LDP (Laplace).

    ``epsilon``, ``delta``, ``allow_large_delta`` and ``p``: as in JointDP.
    ``calibration``: ``"adaptive"`` (default: the tight noise, the adaptive regret side),
    ``"practical"`` (the tight noise, sharp regret-side constants), ``"tight"`` (the smallest noise
    of the same release plan for (eps, delta)) or ``"paper"`` (Cor. 2).
    ``sampler``: ``"discrete"`` (default: the user's randomizer adds exact discrete Gaussian /
    Laplace noise to its statistics rounded to the lattice, see JointDP) or ``"float"``.
    """

    sampler: str | None = None
    allow_large_delta: bool = False

    _KIND = "ldp"
    _TAG = "LDP"

    def __post_init__(self) -> None:
        super().__post_init__()
        self._resolve_sampler()
