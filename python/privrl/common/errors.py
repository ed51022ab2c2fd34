"""The privrl exception family, defined once and raised from Python and from the Rust core.

Every error privrl raises on bad input derives from PrivrlError and, where it fits, from the
builtin / numpy class a user would catch anyway (ValueError, numpy.linalg.LinAlgError).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

import numpy as np


class PrivrlError(Exception):
    """Base class of every privrl error."""


class ShapeError(PrivrlError, ValueError):
    """An array has the wrong number of dimensions or the wrong size."""


class NonFiniteError(PrivrlError, ValueError):
    """An input contains NaN or +-inf."""


class PrivacyParameterError(PrivrlError, ValueError):
    """epsilon, delta, sigma, K ... outside the range the mechanism is defined on."""


class SeedError(PrivrlError, ValueError, TypeError):
    """A seed or random generator numpy would not take (a negative or bool int, a float, a string,
    an int past the 63 bits a tie seed holds, a non-Generator where a Generator goes). Both a
    ValueError and a TypeError, as numpy raises either for a bad seed (a negative int, a float);
    until this class it was PrivacyParameterError, which names the privacy parameters."""


class AssumptionError(PrivrlError, ValueError):
    """An environment or a user input violates an assumption the guarantees rely on
    (Asm. 1 / Asm. 2, ||phi|| <= 1, values in [0, H], rewards in [0, 1])."""


class NotPositiveDefiniteError(PrivrlError, np.linalg.LinAlgError):
    """A (noisy) design matrix is not positive definite, so it cannot be factorized."""


class IndexRangeError(ShapeError, IndexError):
    """An index (state, action, step) outside the object it indexes; also an IndexError, as
    Python's own out-of-range errors are."""


class ResourceError(PrivrlError, MemoryError):
    """An agent would need more memory than the machine has: refused before allocating it."""


class CapacityError(PrivrlError, ValueError):
    """More than a budget was built for: a continual-release mechanism asked for more releases,
    an agent run or taught past the K users it is calibrated for."""


class SaveFormatError(PrivrlError, ValueError):
    """A file that is not a saved agent of this privrl version, or that was modified (refused by
    ``Agent.load``)."""


class ConfigError(PrivrlError, ValueError):
    """A sweep configuration is invalid; the message starts with the offending key."""

    def __init__(self, key: str, message: str):
        self.key = key
        super().__init__(f"{key}: {message}" if key else message)


class SweepError(PrivrlError, RuntimeError):
    """Some runs of a sweep raised; the others finished and were saved. `failures` maps run_id to
    the error; rerunning the sweep retries exactly the failed runs."""

    def __init__(self, message: str, failures: dict[str, str]):
        super().__init__(message)
        self.failures = failures


class AgentInUseError(PrivrlError, RuntimeError):
    """A call on an agent while another thread's call on it has not returned (a ``privrl.run``
    releases the GIL for each block of users): agents are not thread-safe. The refused call
    changed nothing; give each thread its own agent (``copy.copy(agent)``) or use a lock."""


class AssumptionWarning(UserWarning):
    """An environment is outside an assumption of the paper that does not affect privacy."""


class PrivacyWarning(UserWarning):
    """A privacy report found the release above its (eps, delta) target."""


class SensitivityWarning(UserWarning):
    """User data exceeded a bound the privacy calibration assumes and was clipped."""


class EpsilonWarning(UserWarning):
    """A private (jdp / ldp) agent of a sweep whose epsilons are all inf (the sweep's default list is
    [inf]): it runs only as the non-private algorithm, so no row of it is private."""


class ScheduleWarning(UserWarning):
    """A private agent's release schedule leaves it nothing to learn from within its K users (a
    single batch: the policy is never updated)."""


def stacklevel_outside(module: str) -> int:
    """The ``stacklevel`` that points a warning raised in `module` (or a submodule of it) at its
    first caller outside it: the user's line whichever public function of `module` they called
    (``sweep`` goes through ``run_sweep``, which users may also call; ``SyntheticLinearMDP``
    through ``LinearMDP.__init__``), where a fixed level fits only one of them."""
    frame = sys._getframe(1)  # the function that warns: stacklevel 1
    level = 1
    while frame.f_back is not None and _within(frame.f_globals.get("__name__"), module):
        frame = frame.f_back
        level += 1
    return level


def _within(name: str | None, module: str) -> bool:
    return name is not None and (name == module or name.startswith(module + "."))


@contextlib.contextmanager
def user_taken(k: Callable[[], int]) -> Iterator[None]:
    """Around a warning an agent gives after it has taken a user (a clip, SensitivityWarning): a
    filter that makes warnings errors (``-W error``) raises it from observe / update as if the
    user had been refused; a note says the agent holds the user (``k()`` users now), so that it is
    not observed again and counted twice (PEP 678 notes; Python 3.10 shows the warning alone)."""
    try:
        yield
    except Warning as e:
        add = getattr(e, "add_note", None)
        if add is not None:
            add(
                f"the agent took this user before this warning was raised as an error (agent.k = {k()}, "
                "its data clipped into the sums): observing the user again would count it twice"
            )
        raise
