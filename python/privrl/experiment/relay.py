"""Warnings raised in a sweep's worker processes, carried back with the run's result and raised again in
the sweep's own process: there the user's filters and the command line's one-line format
(privrl.experiment.cli) apply to them as to the warnings of inline and threaded runs (a worker printed
them itself, in Python's default format, under the worker's own filters)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["recorded", "reemit"]

#: A recorded warning: (category, message, filename, lineno).
Record = tuple[type, str, str, int]


def _category(category: type) -> tuple[type, str]:
    """The category as the sweep's process can unpickle it, and a prefix for the message: a class of
    the user's script (its module is __mp_main__ in a worker) becomes a UserWarning naming it."""
    if getattr(category, "__module__", None) in ("__main__", "__mp_main__"):
        return UserWarning, f"{category.__name__}: "
    return category, ""


def recorded(fn: Callable[..., dict], *args: Any, **kwargs: Any) -> dict:
    """``fn(*args, **kwargs)`` (a run's payload) with the warnings it raised under ``"warnings"``,
    each distinct (category, message, place) once, in the order first raised; every warning is
    recorded (the sweep's process filters them when they are raised again)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        payload = fn(*args, **kwargs)
    seen: dict[Record, None] = {}
    for w in caught:
        category, prefix = _category(w.category)
        seen.setdefault((category, prefix + str(w.message), w.filename, w.lineno))
    payload["warnings"] = list(seen)
    return payload


def reemit(payload: dict, registry: dict) -> dict:
    """Raise the warnings of a worker's ``payload`` again in this process (its filters and
    ``warnings.showwarning`` apply; ``registry``, one per sweep, shows a "default"-filtered warning
    once per sweep rather than once per run) and return the payload without them."""
    for category, message, filename, lineno in payload.pop("warnings", ()):
        warnings.warn_explicit(message, category, filename, lineno, registry=registry)
    return payload
