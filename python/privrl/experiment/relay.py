"""Warnings raised by a sweep's runs (inline, on threads, in worker processes, on a Dask cluster's
workers), carried back with the run's result and raised again in the sweep's own process, prefixed
with the run they came from: there the user's filters and the command line's one-line format
(privrl.experiment.cli) apply to them (a worker printed them itself, in Python's default format,
under the worker's own filters; and no backend said which agent and epsilon warned)."""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable
from typing import Any, cast

__all__ = ["recorded", "reemit", "run_label"]

#: A recorded warning: (category, message, filename, lineno).
Record = tuple[type, str, str, int]


def _category(category: type) -> tuple[type, str]:
    """The category as the sweep's process can unpickle it, and a prefix for the message: a class of
    the user's script (its module is __mp_main__ in a worker) becomes a UserWarning naming it."""
    if getattr(category, "__module__", None) in ("__main__", "__mp_main__"):
        return UserWarning, f"{category.__name__}: "
    return category, ""


# The runs recording in this process, by thread: a Dask worker runs several at once in its threads,
# and warnings.catch_warnings (process-wide state) would mix their records up and, exited out of
# order, leave one run's recorder installed for good. The first run to record installs one
# recorder (a filter "always" for the runs' threads, showwarning dispatching by thread), the last
# one restores the state.
_lock = threading.Lock()
_sinks: dict[int, list[warnings.WarningMessage]] = {}
_saved: list[Any] = []  # while runs record: the catch_warnings restoring the state
# The showwarning the recorder replaced, kept after the last run restores it: a warning of another
# thread (the sweep's own, raising a finished run's warnings again) may have fetched _dispatch just
# before the last run ended; it is shown as it would have been a moment later, not dropped.
_before: list[Any] = [warnings.showwarning]


class _InARun:
    """The message pattern of the recorder's "always" filter: it matches in a recording run's thread
    only (the warnings module calls a filter's ``match`` with the message's text). Another thread's
    warnings (the sweep's own, raising a finished run's again while other runs record) go on to the
    filters of the user, as they do once no run records: a plain "always" filter had them shown past
    an "ignore" or "error" filter whenever a run was still in flight."""

    def match(self, _text: str) -> bool:
        return threading.get_ident() in _sinks


def _dispatch(
    message: Any, category: type, filename: str, lineno: int, file: Any = None, line: Any = None
) -> None:
    sink = _sinks.get(threading.get_ident())
    if sink is not None:
        sink.append(warnings.WarningMessage(message, category, filename, lineno, file, line))
    else:  # a thread that is not a run's: shown as before
        _before[0](message, category, filename, lineno, file, line)


def recorded(fn: Callable[..., dict], *args: Any, **kwargs: Any) -> dict:
    """``fn(*args, **kwargs)`` (a run's payload) with the warnings it raised under ``"warnings"``,
    each distinct (category, message, place) once, in the order first raised; every warning is
    recorded (the sweep's process filters them when they are raised again). Runs of one process may
    record at once in several threads (a Dask worker's): each gets the warnings of its own thread."""
    caught: list[warnings.WarningMessage] = []
    with _lock:
        if not _sinks:
            guard = warnings.catch_warnings()
            guard.__enter__()
            _saved[:] = [guard]
            _before[0] = warnings.showwarning
            # first, before the user's (the guard's copy; entering it reset the registries): not by
            # simplefilter, which would take out a user's own plain "always" filter
            cast(list, warnings.filters).insert(0, ("always", _InARun(), Warning, None, 0))
            warnings.showwarning = _dispatch
        _sinks[threading.get_ident()] = caught
    try:
        payload = fn(*args, **kwargs)
    finally:
        with _lock:
            del _sinks[threading.get_ident()]
            if not _sinks:
                _saved.pop(0).__exit__(None, None, None)
                _saved.clear()
    seen: dict[Record, None] = {}
    for w in caught:
        category, prefix = _category(w.category)
        seen.setdefault((category, prefix + str(w.message), w.filename, w.lineno))
    payload["warnings"] = list(seen)
    return payload


def run_label(payload: dict) -> str:
    """The run a payload comes from, as a warning's prefix names it: ``"<study> / <agent> at
    eps=<epsilon>: "`` (the seeds of one agent and epsilon share it, so their repeats show once);
    "" for a payload that names no run."""
    meta = payload.get("meta") or (payload["spec"].describe() if "spec" in payload else {})
    if "agent" not in meta:
        return ""
    return f"{meta.get('study')} / {meta['agent']} at eps={float(meta.get('epsilon', float('inf'))):g}: "


def reemit(payload: dict, registry: dict) -> dict:
    """Raise the warnings of a run's ``payload`` again in this process (its filters and
    ``warnings.showwarning`` apply; ``registry``, one per sweep, shows each distinct warning once
    per sweep rather than once per run), each prefixed with the run it came from (run_label:
    a sweep's ScheduleWarning did not say which of its agents and epsilons never releases), and
    return the payload without them."""
    label = run_label(payload)
    caller = _outside_privrl()
    for category, message, filename, lineno in payload.pop("warnings", ()):
        # once per sweep by our own record: warn_explicit empties a registry whenever the filters
        # changed, and recorded() changes them at each run in this process (inline and thread runs)
        key = ("privrl-sweep", category, label + message, filename, lineno)
        if registry.get(key):
            continue
        registry[key] = True
        # at the sweep's caller (the user's sweep(...) line), not where the run raised it in privrl
        # (preflight.py's agent construction, printed with that source line)
        warnings.warn_explicit(label + message, category, *(caller or (filename, lineno)))
    return payload


def _outside_privrl() -> tuple[str, int] | None:
    """The file and line of the first caller outside privrl (None: the stack is privrl's only)."""
    frame: Any = sys._getframe(1)
    while frame is not None and str(frame.f_globals.get("__name__", "")).split(".")[0] == "privrl":
        frame = frame.f_back
    return None if frame is None else (frame.f_code.co_filename, frame.f_lineno)
