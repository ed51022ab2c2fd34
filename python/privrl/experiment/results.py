"""The results folder of a sweep: one atomically written file per finished run, manifest.json
(versions, git commit, config, each run's calibration), and loading them back as one tidy table."""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import importlib.metadata
import itertools
import json
import os
import platform
import socket
import subprocess
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from privrl.experiment.config import ConfigError, RunSpec, _json_safe
from privrl.privacy.regret_side import SIMULATION_ONLY

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]  # users may lack pandas-stubs

__all__ = [
    "COLUMNS",
    "ResultStore",
    "load_results",
    "load_manifest",
    "atomic_write",
    "environment_info",
    "normalize_frame",
    "parquet_available",
    "load_run_records",
    "logged_episodes",
]

# The tidy results schema: one row per (run, logged episode). wall_time (seconds since the run
# started) is the only column that differs between two runs of the same config.
COLUMNS: dict[str, str] = {
    "study": "object",
    "env": "object",
    "agent": "object",
    "algorithm": "object",
    "privacy": "object",
    "epsilon": "float64",
    "delta": "float64",
    "seed": "int64",
    "episode": "int64",
    "regret": "float64",
    "return": "float64",
    "cum_return": "float64",
    "wall_time": "float64",
    "run_id": "object",
}
STRING_COLUMNS = [c for c, t in COLUMNS.items() if t == "object"]


def logged_episodes(episodes: int, log_every: int) -> np.ndarray:
    """The episodes a run's table holds: every log_every-th and the last (1-based)."""
    return np.unique(np.r_[np.arange(log_every, episodes + 1, log_every), episodes]).astype(np.int64)


def parquet_available() -> bool:
    try:
        import pyarrow  # type: ignore[import-untyped, unused-ignore]  # noqa: F401
    except ImportError:
        return False
    return True


def normalize_frame(df: pd.DataFrame) -> pd.DataFrame:
    """The schema's column order and dtypes, whatever file format or pandas version produced `df`."""
    df = df.loc[:, list(COLUMNS)].copy()
    for c, t in COLUMNS.items():
        df[c] = df[c].astype(str).astype(object) if t == "object" else df[c].astype(t)
    return df.reset_index(drop=True)


def _empty_frame() -> pd.DataFrame:
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]

    return normalize_frame(pd.DataFrame({c: pd.Series(dtype=t) for c, t in COLUMNS.items()}))


def atomic_write(path: Path, write: Callable[[Path], object]) -> None:
    """Write through a temporary file in the same folder and os.replace it into place, so a reader
    (or a rerun after kill -9) sees either the old file or the complete new one, never a torn one."""
    path = Path(path)
    tmp = _temporary(path)
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


#: A temporary file a live writer holds is never this old (atomic_write writes one run's table or
#: record, in seconds): older ones are leftovers whatever their pid (a pid reused since the crash).
STALE_TEMPORARY_AGE = 3600.0


def _host() -> str:
    """This machine, as a temporary file's name holds it: a digest of its host name (8 hex digits)."""
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


_WRITES = itertools.count()


def _temporary(path: Path) -> Path:
    """atomic_write's temporary file for `path`: .<name>.<pid>-<n>@<host>.tmp. The host tells which
    machine's pid it is: two sweeps on two machines sharing a folder (cluster jobs on a network
    file system) took each other's live temporaries for a dead writer's (pid not alive *here*).
    n, a count of this process's writes, keeps two threads writing one file apart (two sweeps of
    one process: one's os.replace moved the other's half-written file into place). A name that
    would pass 255 bytes (a run id near MAX_RUN_ID) is cut, a digest keeping it apart."""
    tag = f"{os.getpid()}-{next(_WRITES)}@{_host()}"
    name, room = path.name, 255 - len(tag) - len("...tmp")
    if len(name.encode()) > room:
        digest = hashlib.sha256(name.encode()).hexdigest()[:12]
        name = name.encode()[: room - 13].decode(errors="ignore") + "-" + digest
    return path.with_name(f".{name}.{tag}.tmp")


def _pid_alive(pid: int) -> bool:
    """Whether process `pid` runs on this machine (True when it cannot be told)."""
    if pid <= 0:
        return False
    if os.name == "nt":  # os.kill(pid, 0) would terminate it there: the age decides
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: another user's live process
        return True
    return True


def _stale_temporary(path: Path, now: float) -> bool:
    """Whether `path`, a temporary file of atomic_write (.<name>.<pid>-<n>@<host>.tmp, or
    .<name>.<pid>.tmp before the host was named), is a leftover that no live writer can own: it is
    older than STALE_TEMPORARY_AGE, or it was written on this machine (or names no machine) by a pid
    not alive here. Our own pid's are kept (another thread of this process may be writing); another
    machine's only age."""
    try:
        age = now - path.stat().st_mtime
    except FileNotFoundError:
        return False
    if age > STALE_TEMPORARY_AGE:
        return True
    writer, _, host = path.name.removesuffix(".tmp").rpartition(".")[2].partition("@")
    pid = writer.partition("-")[0]
    if host and host != _host():  # its writer's liveness cannot be told from here: the age decides
        return False
    if not pid.isdigit():  # not named by atomic_write: no writer of this version owns it
        return True
    return int(pid) != os.getpid() and not _pid_alive(int(pid))


def _write_json(path: Path, obj: Any) -> None:
    text = json.dumps(_json_safe(obj), indent=2, sort_keys=False, allow_nan=False)
    atomic_write(path, lambda p: p.write_text(text + "\n"))


def _git_commit() -> str | None:
    """The commit of the privrl source: its git checkout when privrl runs from one (an editable
    install), else the commit the installed extension was built from (`pip install .` from a
    checkout; None for a build outside git)."""
    from privrl import _core

    return _source_commit() or (getattr(_core, "GIT_COMMIT", "") or None)


def _source_commit() -> str | None:
    here = str(Path(__file__).resolve().parent)
    git = partial(subprocess.run, capture_output=True, text=True, timeout=5)
    try:
        out = git(["git", "-C", here, "rev-parse", "HEAD"])
        if out.returncode != 0:
            return None
        dirty = git(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"]).stdout.strip()
        return out.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def environment_info() -> dict:
    """privrl and dependency versions, Python, platform, the git commit of the privrl source and the
    commit its compiled Rust core was built from."""
    import privrl

    versions = {
        "privrl": privrl.__version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "pandas": importlib.metadata.version("pandas"),  # as pd.__version__, without importing it
    }
    # scikit-learn: its bundled datasets are the ClassificationBandit environments' data
    for dist in ("pyarrow", "matplotlib", "dask", "distributed", "gymnasium", "scikit-learn"):
        # from the installed metadata, without importing them (dask and gymnasium took 0.35 s per
        # sweep to import for their version alone); an absent optional dependency is just not recorded
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions[dist] = importlib.metadata.version(dist)
    from privrl import _core

    return {
        "versions": versions,
        "platform": platform.platform(),
        "git_commit": _git_commit(),
        # the build the Rust agents ran: in a checkout, git_commit is the source tree's, and an
        # extension not rebuilt since (maturin develop) is an older commit's code
        "extension_commit": getattr(_core, "GIT_COMMIT", "") or None,
    }


def _read_table(path: Path) -> pd.DataFrame:
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]

    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    # The CSV holds repr() floats; pandas < 3 parses them exactly only with "round_trip" (pandas 3
    # does by default and deprecates the argument).
    extra = {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}
    floats = [c for c, t in COLUMNS.items() if t == "float64"]
    return pd.read_csv(
        path,
        keep_default_na=False,
        na_values={c: ["nan"] for c in floats},
        dtype=dict.fromkeys(STRING_COLUMNS, str),
        **extra,
    )


class ResultStore:
    """outdir/manifest.json, outdir/runs/<run_id>.{parquet,csv} + <run_id>.json, outdir/results.*.

    A run is finished once its <run_id>.json exists; it is written after the run's table, both
    atomically, so a run interrupted at any point is simply absent and recomputed on resume.
    """

    def __init__(self, outdir: str | os.PathLike, fmt: str = "auto"):
        if not isinstance(outdir, (str, os.PathLike)):  # Path(3) named no argument (sweep, run_sweep)
            raise ConfigError("outdir", f"expected a path, got {outdir!r}")
        self.root = Path(outdir).expanduser()  # ~/x as a shell gives it (pandas expanded it, mkdir did not)
        self.runs_dir = self.root / "runs"
        if fmt == "auto":
            fmt = "parquet" if parquet_available() else "csv"
        if fmt == "parquet" and not parquet_available():
            raise ConfigError("format", "parquet needs pyarrow (pip install pyarrow), or use format = 'csv'")
        self.fmt = fmt
        self.ext = ".parquet" if fmt == "parquet" else ".csv"
        for folder in (self.root, *self.root.parents):  # refused here, before a sweep prints or runs
            if folder.exists() and not folder.is_dir():
                raise ConfigError(
                    "outdir", f"{folder} is a file, not a folder: give a folder for the results"
                )

    def prepare(self) -> None:
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        now = time.time()
        for tmp in self.runs_dir.glob(".*.tmp"):
            if _stale_temporary(tmp, now):  # a killed writer's leftover, never a live writer's
                tmp.unlink(missing_ok=True)

    def meta_path(self, run_id: str) -> Path:
        return self.runs_dir / f"{run_id}.json"

    def finished(self, run_id: str) -> bool:
        meta = self.meta_path(run_id)
        if not meta.exists():
            return False
        try:
            record = json.loads(meta.read_text())
            # a record that is not this run's table (a list, another run's record: its rows would be
            # filed under this run id) is unfinished, as a torn one is: the run is recomputed
            if record["run_id"] != run_id or not isinstance(record["table"], str):
                return False
            return (self.runs_dir / record["table"]).exists()
        except (ValueError, KeyError, TypeError):
            return False

    def stamp(self, run_id: str) -> tuple[int, int] | None:
        """Which file a run's record is now (inode, mtime), None when it has none: a record whose
        stamp differs later was filed since, by another sweep writing the folder."""
        try:
            st = self.meta_path(run_id).stat()
        except FileNotFoundError:
            return None
        return st.st_ino, st.st_mtime_ns

    def filed_since(self, run_id: str, stamp: tuple[int, int] | None) -> tuple[pd.DataFrame, dict] | None:
        """The run's rows and record if another sweep filed it after `stamp` was taken, else None (a
        record as it was then, none, or a table that cannot be read: the run is to be computed)."""
        if self.stamp(run_id) in (None, stamp) or not self.finished(run_id):
            return None
        try:
            return self.read_run(run_id)
        except ConfigError:
            return None

    def write_run(self, frame: pd.DataFrame, meta: dict) -> None:
        run_id = meta["run_id"]
        table = self.runs_dir / f"{run_id}{self.ext}"
        atomic_write(table, lambda p: _write_table_as(frame, p, self.fmt))
        _write_json(self.meta_path(run_id), {**meta, "table": table.name})

    def read_run(self, run_id: str) -> tuple[pd.DataFrame, dict]:
        """A finished run's rows and record; a table that cannot be read (a damaged or foreign
        file), or whose rows are not this run's logged episodes (cut short, another run's file), is
        a ConfigError naming it (a resumed sweep recomputes that run instead)."""
        meta = json.loads(self.meta_path(run_id).read_text())
        path = self.runs_dir / meta["table"]
        try:
            # a missing or mistyped column is as foreign as a parse error (a KeyError leaked)
            frame = normalize_frame(_read_table(path))
        except Exception as exc:  # pyarrow / pandas parse errors: no common base class
            raise ConfigError(
                "OUTDIR",
                f"{path} is not a readable run table ({type(exc).__name__}: {exc}); delete it and "
                "rerun the sweep (the run is recomputed), or rerun with --fresh",
            ) from exc
        wrong = _not_this_run(frame, run_id, meta)
        if wrong:
            # a readable table that is not this run's rows (cut short, empty, another run's file):
            # resumed, it was filed under this run id and the report read it as this run
            raise ConfigError(
                "OUTDIR",
                f"{path} is not the table of run {run_id} ({wrong}); delete it and rerun the sweep "
                "(the run is recomputed), or rerun with --fresh",
            )
        return frame, meta

    def write_manifest(self, manifest: dict) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        _write_json(self.root / "manifest.json", manifest)

    def remove_merged(self) -> None:
        for ext in (".parquet", ".csv"):
            (self.root / f"results{ext}").unlink(missing_ok=True)

    def write_merged(self, df: pd.DataFrame) -> Path:
        path = self.root / f"results{self.ext}"
        for other in (".parquet", ".csv"):  # never leave a stale merged file of the other format
            if other != self.ext:
                (self.root / f"results{other}").unlink(missing_ok=True)
        atomic_write(path, lambda p: _write_table_as(df, p, self.fmt))
        return path


def _not_this_run(frame: pd.DataFrame, run_id: str, meta: dict) -> str:
    """Why `frame` is not the rows of the run `meta` records ("" when it is): every row names the
    run, and the episodes are the ones its K and log_every log."""
    if (frame["run_id"] != run_id).any():
        other = frame.loc[frame["run_id"] != run_id, "run_id"].iloc[0]
        return f"its rows are of run {other}"
    try:
        expected = logged_episodes(int(meta["episodes"]), int(meta["log_every"]))
    except (KeyError, TypeError, ValueError):
        return "its record gives no episodes and log_every"
    if not np.array_equal(frame["episode"].to_numpy(), expected):
        return f"episodes {_span(frame['episode'])} where the run logs {_span(expected)}"
    return ""


def _span(episodes: Any) -> str:
    e = np.asarray(episodes)
    return "none" if not len(e) else f"{e[0]}..{e[-1]} ({len(e)} rows)"


def _write_table_as(df: pd.DataFrame, path: Path, fmt: str) -> None:
    # The temporary name does not end in .parquet/.csv, so the format is passed explicitly.
    if fmt == "parquet":
        df.to_parquet(path, index=False)
    else:
        df.to_csv(path, index=False, na_rep="nan")


def load_manifest(outdir: str | os.PathLike) -> dict:
    if not isinstance(outdir, (str, os.PathLike)):  # Path(None) named no argument (load_results, report too)
        raise TypeError(f"outdir must be a results folder's path (a str or os.PathLike), got {outdir!r}")
    path = Path(outdir).expanduser() / "manifest.json"
    if not path.exists():
        raise ConfigError("OUTDIR", f"{outdir} has no manifest.json: not a privrl results folder")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError("OUTDIR", f"{path} is not valid JSON ({exc}): not a privrl manifest") from exc
    if not (isinstance(manifest, dict) and isinstance(manifest.get("runs"), dict) and "privrl" in manifest):
        raise ConfigError("OUTDIR", f"{path} is not a privrl manifest (no 'privrl' version and 'runs' table)")
    return manifest


def load_results(outdir: str | os.PathLike, run_ids: Iterable[str] | None = None) -> pd.DataFrame:
    """The tidy table of a results folder: every finished run the manifest lists, in the config's
    run order (so the table is the same whatever order the runs finished in)."""
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]

    manifest = load_manifest(outdir)
    store = ResultStore(outdir, "csv")
    ids = list(run_ids) if run_ids is not None else list(manifest.get("runs", {}))
    frames = [store.read_run(r)[0] for r in ids if store.finished(r)]
    if not frames:
        return _empty_frame()
    return normalize_frame(pd.concat(frames, ignore_index=True))


def load_run_records(outdir: str | os.PathLike) -> dict[str, dict]:
    """run_id -> the record of every finished run the manifest lists (calibration, wall time, ...),
    read from the per-run files, so it is complete even after the sweep process was killed."""
    manifest = load_manifest(outdir)
    store = ResultStore(outdir, "csv")
    return {
        r: json.loads(store.meta_path(r).read_text()) for r in manifest.get("runs", {}) if store.finished(r)
    }


def run_frame(
    spec: RunSpec,
    env_name: str,
    episodes: np.ndarray,
    regret: np.ndarray,
    returns: np.ndarray,
    cum_return: np.ndarray,
    wall: np.ndarray,
) -> pd.DataFrame:
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]

    n = len(episodes)
    df = pd.DataFrame(
        {
            "study": [spec.study] * n,
            "env": [env_name] * n,
            "agent": [spec.agent] * n,
            "algorithm": [spec.algorithm] * n,
            "privacy": [spec.privacy] * n,
            "epsilon": np.full(n, spec.epsilon),
            "delta": np.full(n, spec.delta),
            "seed": np.full(n, spec.seed),
            "episode": episodes,
            "regret": regret,
            "return": returns,
            "cum_return": cum_return,
            "wall_time": wall,
            "run_id": [spec.run_id] * n,
        }
    )
    return normalize_frame(df)


# What a results folder holds beyond the agents' releases: the simulator's view, computed from the
# users' raw trajectories and the exact model. None of it is covered by the privacy guarantee.
def new_manifest(config_dict: dict, runs: list[RunSpec], fmt: str | None) -> dict:
    info = environment_info()
    return {
        "privrl": info["versions"]["privrl"],
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(),
        "format": fmt,
        "simulation_only": SIMULATION_ONLY,
        **info,
        "config": config_dict,
        # "running" until the sweep ends (and after a kill -9: its finished runs' records are in
        # runs/*.json, and a rerun resumes them)
        "status": "running",
        "runs": {r.run_id: {**r.describe(), "status": "pending"} for r in runs},
    }
