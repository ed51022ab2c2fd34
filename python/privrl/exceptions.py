"""The exception family of privrl (its public path; defined in privrl.common.errors)."""

from privrl.common.errors import (
    AgentInUseError,
    AssumptionError,
    AssumptionWarning,
    CapacityError,
    ConfigError,
    IndexRangeError,
    NonFiniteError,
    NotPositiveDefiniteError,
    PrivacyParameterError,
    PrivacyWarning,
    PrivrlError,
    ResourceError,
    SaveFormatError,
    ScheduleWarning,
    ShapeError,
    SweepError,
)

__all__ = [
    "PrivrlError",
    "ShapeError",
    "NonFiniteError",
    "PrivacyParameterError",
    "AssumptionError",
    "NotPositiveDefiniteError",
    "IndexRangeError",
    "CapacityError",
    "ResourceError",
    "SaveFormatError",
    "ConfigError",
    "SweepError",
    "AgentInUseError",
    "AssumptionWarning",
    "PrivacyWarning",
    "ScheduleWarning",
]
