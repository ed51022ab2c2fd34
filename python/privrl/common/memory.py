"""Memory checks: an agent (or a kernel) whose dense d x d state cannot fit in the machine's
physical memory is refused with a ResourceError before anything is allocated (the allocation
would abort the process or get it killed by the operating system, not raise)."""

from __future__ import annotations

import os

from privrl.common.errors import ResourceError

__all__ = ["physical_memory", "refuse_over_memory"]


def physical_memory() -> int | None:
    """The machine's physical memory in bytes (None where the OS does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def refuse_over_memory(name: str, entries: float, what: str, advice: str) -> None:
    """Raise ResourceError when `entries` doubles (8 bytes each) exceed physical memory: `name`
    the agent, `what` the state counted, `advice` how to make it smaller."""
    need = 8.0 * entries
    have = physical_memory()
    if have is not None and need > have:
        raise ResourceError(
            f"{name} keeps {what}: about {need / 2**30:.1f} GiB, this machine has "
            f"{have / 2**30:.1f} GiB. {advice}"
        )
