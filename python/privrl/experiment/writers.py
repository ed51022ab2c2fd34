"""The sweeps writing one results folder at the same time (docs/harness.md, Resuming): each holds
an advisory lock on a file of its own there for its whole life, so that a sweep of another config
is refused while one runs; a folder mutex orders their manifest writes; run claims split the runs
of sweeps of one config."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from privrl.experiment.config import ConfigError

try:  # POSIX; elsewhere (Windows) sweeps are not coordinated, as before
    import fcntl

    HAVE_LOCKS = True
except ImportError:  # pragma: no cover - not on Linux / macOS
    HAVE_LOCKS = False

__all__ = ["folder_lock", "in_turn", "keeps_complete", "registered", "runs_digest"]

MUTEX = ".privrl.lock"  # held for the few file operations of a registration, then removed
PREFIX = ".privrl-sweep-"  # one per live sweep: <prefix><host>-<pid>-<hex>.lock, its runs' digest inside


def runs_digest(run_ids: Iterable[str]) -> str:
    """The identity of a sweep's config in a folder: its set of run ids (what its manifest lists)."""
    return hashlib.sha256("\n".join(sorted(run_ids)).encode()).hexdigest()[:16]


def _lock(fd: int, shared: bool = False, block: bool = True) -> bool:
    flags = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | (0 if block else fcntl.LOCK_NB)
    try:
        fcntl.flock(fd, flags)
    except BlockingIOError:
        return False
    return True


@contextlib.contextmanager
def _mutex(root: Path) -> Iterator[None]:
    """An exclusive lock on root/.privrl.lock, removed on release when no sweep is registered (a
    finished folder holds only its results). The file can be removed under a waiting opener: it
    locks again until the file it locked is the one at the path."""
    path = root / MUTEX
    fd = _take(path, block=True)
    if fd is None:
        raise OSError(f"cannot lock {path}")
    try:
        yield
        if not any(root.glob(f"{PREFIX}*.lock")):
            path.unlink(missing_ok=True)
    finally:
        os.close(fd)


def _live_others(root: Path, digest: str) -> list[dict]:
    """The registrations of live sweeps of another config (a dead sweep's file, whose lock its
    process released as it ended, kill -9 included, is removed)."""
    others = []
    for path in root.glob(f"{PREFIX}*.lock"):
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            if _lock(fd, shared=True, block=False):  # nobody holds it: its sweep is gone
                path.unlink(missing_ok=True)
                continue
            try:
                info = json.loads(os.read(fd, 1 << 16) or b"{}")
            except ValueError:
                info = {}
            if info.get("digest") != digest:
                others.append({"file": path.name, **info})
        finally:
            os.close(fd)
    return others


@contextlib.contextmanager
def registered(root: Path, run_ids: list[str], describe: Any) -> Iterator[None]:
    """Register a sweep of `run_ids` as writing `root` for the duration of the block. A live sweep
    of another set of runs (another config) writing there is refused (ConfigError, before anything
    is written): its manifest and ours would replace each other, and the folder's table and
    reports would silently hold the runs of whichever ended last. Sweeps of the same config may
    share the folder (their runs are the same bits). Without fcntl, or on a file system that
    refuses locks, nothing is checked."""
    held = _register(root, run_ids, describe) if HAVE_LOCKS else None
    try:
        yield
    finally:
        if held is not None:
            fd, mine = held
            with contextlib.suppress(OSError), _mutex(root):
                mine.unlink(missing_ok=True)
                _live_others(root, "")  # and a killed sweep's, so the folder ends clean
            os.close(fd)


def _register(root: Path, run_ids: list[str], describe: Any) -> tuple[int, Path] | None:
    """Check that no live sweep of another config writes `root` and register this one: its file,
    locked until the sweep ends (the descriptor and the path), or None where locks fail."""
    digest = runs_digest(run_ids)
    host = socket.gethostname()
    try:
        root.mkdir(parents=True, exist_ok=True)
        with _mutex(root):
            others = _live_others(root, digest)
            if others:
                o = others[0]
                raise ConfigError(
                    "OUTDIR",
                    f"{describe} is being written by another sweep of a different config "
                    f"({o.get('runs', '?')} runs, e.g. {o.get('example', '?')}; process "
                    f"{o.get('pid', '?')} on {o.get('host', '?')}): its manifest and this sweep's "
                    "would replace each other. Use another output folder, or wait until that sweep ends",
                )
            mine = root / f"{PREFIX}{host}-{os.getpid()}-{os.urandom(4).hex()}.lock"
            fd = os.open(mine, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                _lock(fd)  # exclusive until this sweep ends: the others see it live
                info = {"digest": digest, "runs": len(run_ids), "example": run_ids[0] if run_ids else None}
                info.update(pid=os.getpid(), host=host)
                os.write(fd, json.dumps(info).encode())
                _drop_stale_claims(root / "runs")
            except OSError:
                os.close(fd)
                mine.unlink(missing_ok=True)
                raise
            return fd, mine
    except OSError:  # a file system without locks (ENOLCK), a read-only folder: uncoordinated, as before
        return None


@contextlib.contextmanager
def folder_lock(root: Path) -> Iterator[None]:
    """The folder's mutex around a sweep's reading and writing of its manifest and merged table, so
    that another sweep's start and end do not interleave with them (unlocked without fcntl or where
    the file system refuses locks)."""
    with contextlib.ExitStack() as stack:
        if HAVE_LOCKS:
            with contextlib.suppress(OSError):
                stack.enter_context(_mutex(root))
        yield


def keeps_complete(root: Path, manifest: dict) -> bool:
    """Whether the folder's manifest.json says its runs, the same as `manifest`'s, are complete while
    `manifest` does not: a sweep of the same config interrupted (or failed) after another sweep
    completed the folder, whose manifest it would replace by one of pending runs."""
    if manifest.get("status") == "complete":
        return False
    try:
        found = json.loads((root / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    return (
        isinstance(found, dict)
        and found.get("status") == "complete"
        and isinstance(found.get("runs"), dict)
        and set(found["runs"]) == set(manifest["runs"])
    )


def _take(path: Path, block: bool) -> int | None:
    """An exclusive flock on the file at `path` (created): its descriptor, -1 when another holds
    it (block=False), None where the file system refuses locks. A file its holder removed as this
    one opened it is not taken: the path's is."""
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            return None
        try:
            if not _lock(fd, block=block):
                os.close(fd)
                return -1
            if os.path.samestat(os.fstat(fd), os.stat(path)):
                return fd
        except FileNotFoundError:
            pass
        except OSError:
            os.close(fd)
            return None
        os.close(fd)


@contextlib.contextmanager
def _claim(runs_dir: Path, run_id: str, block: bool) -> Iterator[bool]:
    """Hold runs/.<run_id>.claim while this sweep computes and files the run: True once held,
    False when another sweep holds it (block=False); True, unlocked, where locks fail. The file is
    removed on release."""
    path = runs_dir / f".{run_id}.claim"
    fd = _take(path, block)
    if fd is None or fd < 0:
        yield fd is None
        return
    try:
        yield True
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
        os.close(fd)


def _drop_stale_claims(runs_dir: Path) -> None:
    """Remove the run claims no sweep holds (a killed sweep's: its lock went with it)."""
    for path in runs_dir.glob(".*.claim"):
        fd = _take(path, block=False)
        if fd is not None and fd >= 0:
            path.unlink(missing_ok=True)
            os.close(fd)


def in_turn(
    runs_dir: Path,
    specs: Sequence[Any],
    compute: Callable[[Any], dict],
    load: Callable[[Any], dict | None],
) -> Iterator[dict]:
    """The payloads of `specs`, one at a time, shared with the other sweeps of the config writing
    the folder: a run another sweep is computing (its claim held) is left for later, and a run
    found finished (by another sweep since this one started) is `load`ed (None: recomputed)
    instead of computed. Each run's claim is held until the consumer asks for the next payload
    (it has filed this one). Without fcntl every run is computed, in order."""
    later = []
    for spec in specs:
        if not HAVE_LOCKS:
            yield compute(spec)
            continue
        with _claim(runs_dir, spec.run_id, block=False) as mine:
            if mine:
                yield load(spec) or compute(spec)
            else:
                later.append(spec)
    for spec in later:  # computed, or being computed, by another sweep: wait for its claim
        with _claim(runs_dir, spec.run_id, block=True):
            yield load(spec) or compute(spec)
