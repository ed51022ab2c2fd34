"""Saving and loading agents mid-run (issue 13): a versioned file that carries the whole state,
the Rust kernels' included (trees, inverses, noise streams' and tie-breaking generators'
positions), so that a loaded agent continues bit-identically.

File: the line ``privrl-agent``, one JSON header line (format version, privrl version, agent
class, episodes done, SHA-256 of the payload), then the payload: a pickle that is read by an
unpickler restricted to privrl's and numpy's own classes (a file cannot make ``load`` run
anything else). A file from another privrl version or format, or one whose payload does not match
its checksum, is refused with a SaveFormatError that says so.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import os
import pickle
import uuid
from pathlib import Path
from typing import Any

from privrl.agents.common.saved_shape import _environment_bases, _ours, saved_shape_problem
from privrl.common.errors import SaveFormatError

__all__ = ["SaveFormatError", "save_agent", "load_agent", "FORMAT"]

MAGIC = b"privrl-agent\n"
#: The payload layout; bumped when the agents' state changes shape (bincode carries no layout
#: information: an old file of another layout would decode as garbage). tests/test_saved_files.py
#: loads golden files of this format (tests/data/saved/format<FORMAT>, written by make.py there) and
#: fails when they no longer continue as recorded: bump FORMAT and rerun make.py.
FORMAT = 2


# What the payload may name: privrl's own classes and functions, numpy's array / dtype / generator
# reconstructors, and plain containers (module -> its names; None: any). Anything else (os.system,
# eval, ...) is refused.
_ALLOWED: dict[str, set[str] | None] = {
    "numpy": None,
    "numpy.core.multiarray": {"_reconstruct", "scalar"},
    "numpy._core.multiarray": {"_reconstruct", "scalar"},
    "numpy.core.numeric": {"_frombuffer"},
    "numpy._core.numeric": {"_frombuffer"},
    "numpy.dtypes": None,
    "numpy.random._pickle": {"__generator_ctor", "__bit_generator_ctor", "__randomstate_ctor"},
    "numpy.random.bit_generator": {"SeedSequence", "__pyx_unpickle_SeedSequence"},
    "numpy.random._pcg64": {"PCG64"},
    "builtins": {
        "set",
        "frozenset",
        "slice",
        "complex",
        "range",
        "bytearray",
        "object",
        "float",
        "int",
        "bool",
        "type",
    },
    "copyreg": {"_reconstructor", "__newobj__"},
    "collections": {"OrderedDict"},
}


# privrl's part: the classes defined in these packages (the agents, their calibrations and release
# plans, the privacy models, the environments), the Rust agents' restore functions and the
# rebuilder of a user's environment subclass. Nothing else a privrl module can reach: a name is
# looked up in its module only (no dotted path such as ``os.system`` through an import).
_PRIVRL_CLASSES = ("privrl.agents.", "privrl.privacy.", "privrl.envs.")
_PRIVRL_FUNCTIONS = {
    ("privrl._core", "_restore_vtr_agent"),
    ("privrl._core", "_restore_lsvi_agent"),
    ("privrl._core", "_restore_linucb_agent"),
    ("privrl._core", "_restore_psrl_agent"),
    ("privrl.agents.common.saving", "_rebuild_env"),
}


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module == "privrl" or module.startswith("privrl."):
            if "." not in name and name.isidentifier():
                if (module, name) in _PRIVRL_FUNCTIONS:
                    return super().find_class(module, name)
                if module.startswith(_PRIVRL_CLASSES):
                    found = super().find_class(module, name)
                    if isinstance(found, type) and found.__module__ == module:
                        return found
            raise SaveFormatError(f"saved agent refers to {module}.{name}, which privrl never saves: refused")
        names = _ALLOWED.get(module, set())
        if names is None or name in names:
            return super().find_class(module, name)
        raise SaveFormatError(f"saved agent refers to {module}.{name}, which privrl never saves: refused")


def _plain(value: Any) -> bool:
    """Data the restricted unpickler reads back: numbers, strings, None, non-object arrays, and
    tuples, lists and dicts of them."""
    import numpy as np

    if value is None or isinstance(value, (bool, int, float, str, bytes, np.generic)):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype != object
    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


def _rebuild_env(cls: Any, state: Any) -> Any:
    """An environment of privrl's class `cls` with the saved attributes (see _AgentPickler)."""
    if not (isinstance(cls, type) and issubclass(cls, _environment_bases())):
        raise SaveFormatError(f"saved agent rebuilds an environment of {cls!r}, not a privrl environment")
    if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
        raise SaveFormatError("saved agent rebuilds an environment from a state that is not a dict")
    env: Any = object.__new__(cls)
    env.__dict__.update(state)
    return env


class _AgentPickler(pickle.Pickler):
    """Saves an environment of the user's own subclass of a privrl environment as its nearest
    privrl class, with its data attributes (the model, the features, C_w and any plain extras;
    methods and other objects of the subclass are not saved): the loader reads privrl's classes
    only, and the agent reads nothing else of its environment."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._envs = _environment_bases()  # resolved once, not per object

    def reducer_override(self, obj: Any) -> Any:
        if not isinstance(obj, self._envs) or _ours(type(obj)):
            return NotImplemented
        base = next(c for c in type(obj).__mro__ if _ours(c))
        return _rebuild_env, (base, {k: v for k, v in vars(obj).items() if _plain(v)})


def save_agent(agent: Any, path: str | os.PathLike) -> None:
    """Write `agent` (any privrl Agent, mid-run or not) to `path`, atomically. An environment of
    the user's own subclass is saved as its nearest privrl class (_AgentPickler)."""
    from privrl import __version__

    buf = io.BytesIO()
    _AgentPickler(buf, protocol=5).dump(agent)
    payload = buf.getvalue()
    header = {
        "format": FORMAT,
        "privrl": __version__,
        "agent": f"{type(agent).__module__}.{type(agent).__qualname__}",
        "label": agent.label,
        "episodes_done": int(agent.k),
        "episodes": int(agent.K),
        "sha256": hashlib.sha256(payload).hexdigest(),
    }
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "cannot save an agent over a folder", str(path))
    # a name of its own per call: two saves to one path never write the same temporary file
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        with open(tmp, "xb") as fh:
            fh.write(MAGIC + json.dumps(header).encode() + b"\n" + payload)
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)  # a failed save leaves no copy of the agent behind
        if isinstance(exc, OSError) and exc.filename == str(tmp):
            # about the temporary copy, a name the user never gave: say it of the path asked for
            # (a missing folder read "No such file or directory: 'a.agent.<pid>.<hex>.tmp'")
            raise type(exc)(exc.errno, f"cannot save the agent: {exc.strerror}", str(path)) from exc
        raise


def _check_header_describes(path: str | os.PathLike, header: dict, agent: Any) -> None:
    """The header's description is outside the checksum: it must describe the payload it heads (an
    edited "episodes_done" or "agent" loaded silently, though a modified file is refused)."""
    described = {
        "agent": f"{type(agent).__module__}.{type(agent).__qualname__}",
        "label": getattr(agent, "label", None),
        "episodes_done": int(getattr(agent, "k", -1)),
        "episodes": int(getattr(agent, "K", -1)),
    }
    for key, value in described.items():
        if header.get(key) != value:
            raise SaveFormatError(
                f"{path}: the header's {key} {header.get(key)!r} does not describe the saved agent "
                f"({value!r}): the file was modified"
            )


def _check_format(path: str | os.PathLike, header: dict) -> None:
    """Refuse a header whose save format is not this privrl's FORMAT, saying what it holds (a
    string "2" read "save format '2', this privrl reads format 2")."""
    fmt = header.get("format")
    if "format" not in header:
        raise SaveFormatError(f"{path}: the header has no save format (this privrl reads format {FORMAT})")
    if type(fmt) is not int:
        raise SaveFormatError(
            f"{path}: the header's save format is the {type(fmt).__name__} {fmt!r}, not an integer "
            f"(this privrl reads format {FORMAT}): the file was modified"
        )
    if fmt != FORMAT:
        raise SaveFormatError(f"{path}: save format {fmt}, this privrl reads format {FORMAT}")


def load_agent(path: str | os.PathLike, expected: type | None = None) -> Any:
    """The agent saved at `path` (an instance of `expected` when given), after checking the
    format, the privrl version and the checksum; it carries its environment (``agent.env``)."""
    from privrl import __version__

    data = Path(path).read_bytes()
    if not data.startswith(MAGIC):
        raise SaveFormatError(f"{path} is not a saved privrl agent")
    line, _, payload = data[len(MAGIC) :].partition(b"\n")
    try:
        header = json.loads(line)
    except ValueError:
        raise SaveFormatError(f"{path}: unreadable header") from None
    if not isinstance(header, dict):
        raise SaveFormatError(f"{path}: unreadable header (not a JSON object)")
    _check_format(path, header)
    if header.get("privrl") != __version__:
        raise SaveFormatError(
            f"{path} was saved by privrl {header.get('privrl')}; this is privrl {__version__}: "
            "load it with that version"
        )
    if hashlib.sha256(payload).hexdigest() != header.get("sha256"):
        raise SaveFormatError(
            f"{path}: the payload does not match its checksum (the file was modified or truncated)"
        )
    try:
        agent = _RestrictedUnpickler(io.BytesIO(payload)).load()
    except SaveFormatError:
        raise
    except Exception as e:  # a payload that matches its checksum but is not a pickled agent
        raise SaveFormatError(f"{path}: the payload is not a saved agent ({type(e).__name__}: {e})") from e
    _check_loaded(path, header, agent, expected)
    return agent


def _check_loaded(path: str | os.PathLike, header: dict, agent: Any, expected: type | None) -> None:
    """Refuse a loaded payload that is not what privrl saves (attributes, their types: a payload
    edited with its checksum recomputed, or of another layout), that its header does not describe,
    or that is not an instance of `expected`."""
    problem = saved_shape_problem(agent)
    if problem:
        raise SaveFormatError(f"{path}: not an agent privrl saves ({problem}): the file was modified")
    _check_header_describes(path, header, agent)
    if expected is not None and not isinstance(agent, expected):
        raise SaveFormatError(f"{path} holds a {type(agent).__name__}, not a {expected.__name__}")
