"""Regret sweeps over (algorithm, privacy model, epsilon, seed): one seeded run per key, executed
inline, on local processes or on a Dask cluster, collected into a tidy table and a results folder."""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import hashlib
import json
import math
import multiprocessing as mp
import multiprocessing.connection
import os
import queue as _queue
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from privrl.common.checks import check_flag
from privrl.common.errors import stacklevel_outside
from privrl.common.kinds import is_choice
from privrl.experiment.config import (
    BACKENDS,
    ConfigError,
    RunSpec,
    SweepConfig,
    SweepError,
    _json_safe,
    make_env,
    n_jobs_value,
)
from privrl.experiment.environments import GymnasiumTask
from privrl.experiment.parsing import build_config, listed
from privrl.experiment.preflight import build_agent, preflight
from privrl.experiment.progress import checked_progress, interactive, tqdm_class
from privrl.experiment.relay import recorded, reemit
from privrl.experiment.results import (
    ResultStore,
    _empty_frame,
    logged_episodes,
    new_manifest,
    normalize_frame,
    run_frame,
)
from privrl.experiment.scaleout import check_address, dask_results
from privrl.experiment.summary import return_ends
from privrl.experiment.writers import folder_lock, in_turn, keeps_complete, registered

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]  # users may lack pandas-stubs

__all__ = ["sweep", "run_sweep", "execute_run", "run_seed_sequence", "SweepError"]


def run_seed_sequence(spec: RunSpec) -> np.random.SeedSequence:
    """SeedSequence(root_seed) child keyed by a hash of the run key (study, agent, epsilon, seed):
    the same run draws the same numbers whatever n_jobs, executor or finishing order."""
    blob = json.dumps(_json_safe(spec.key), separators=(",", ":")).encode()
    words = np.frombuffer(hashlib.sha256(blob).digest()[:16], dtype="<u4")
    return np.random.SeedSequence(spec.root_seed, spawn_key=tuple(int(w) for w in words))


# Environments rebuilt from specs, cached per process: a worker runs many seeds of one study.
_ENV_CACHE: dict[str, Any] = {}
_ENV_LOCK = threading.Lock()
# Environments given as objects, installed once per worker process (see _init_worker).
_ENV_OBJECTS: dict[str, Any] = {}
_PROGRESS_QUEUE: Any = None


def _env_for(spec: RunSpec, env: Any = None) -> Any:
    if env is not None:
        return env
    if spec.env_spec is None:
        return _ENV_OBJECTS[spec.study]
    key = json.dumps(_json_safe(spec.env_spec), sort_keys=True)
    with _ENV_LOCK:  # threads of one process share it: another study's run may replace the entry
        found = _ENV_CACHE.get(key)
        if found is None:
            found = make_env(spec.env_spec)
            _ENV_CACHE.clear()  # keep one: a big tabular env (P and its cdf) can take tens of MB
            _ENV_CACHE[key] = found
        return found


def execute_run(
    spec: RunSpec,
    env: Any = None,
    progress: Callable[[int], None] | None = None,
    stop: threading.Event | None = None,
) -> dict:
    """Run one (study, agent, epsilon, seed) and return {"frame": tidy rows, "meta": run record}.

    The agent's streams (ties, privacy noise) and the environment's stream are the two children of
    run_seed_sequence(spec). `progress(n)` is told every few episodes how many more are done; once
    `stop` is set the run ends at its next block of users (KeyboardInterrupt).
    """
    from privrl.experiment.runner import run

    env = _env_for(spec, env)
    agent_seq, env_seq = run_seed_sequence(spec).spawn(2)
    t_build = time.perf_counter()
    agent = build_agent(spec, env, agent_seq)
    K, every = spec.episodes, spec.log_every
    logged = logged_episodes(K, every)
    stamps = np.full(len(logged), np.nan)
    state = {"i": 0, "reported": 0}
    step = max(1, K // 100)

    def callback(k: int, _cum: float) -> None:
        if stop is not None and stop.is_set():  # the sweep was interrupted (Ctrl-C on threads)
            raise KeyboardInterrupt
        # run calls back once per block of users: every logged episode the block reached gets the
        # block's time (a test for k == logged[i] missed almost all of them: np.empty's garbage)
        i, now = state["i"], time.perf_counter() - t_build
        while i < len(logged) and logged[i] <= k:
            stamps[i] = now
            i += 1
        state["i"] = i
        if progress is not None and (k - state["reported"] >= step or k == K):
            progress(k - state["reported"])
            state["reported"] = k

    if isinstance(env, GymnasiumTask):  # no model: privrl.learn, realized returns, no regret
        out = env.learn(agent, env_seq, callback)
        env_name, regret, random_regret = env.name, np.full(K, np.nan), None
        extra = {"terminated_early": out.terminated_early}
    else:
        out = run(agent, env, seed=env_seq, callback=callback)
        # the uniformly random policy's regret per episode: the scale of the summary's verdict
        env_name, regret, random_regret = out.env, out.regret, env.random_regret()
        extra = {}
    idx = logged - 1
    frame = run_frame(
        spec, env_name, logged, regret[idx], out.returns[idx], np.cumsum(out.returns)[idx], stamps
    )
    meta = {
        **spec.describe(),
        "status": "done",
        "env": env_name,
        "label": out.agent,
        "final_regret": float(regret[-1]) if math.isfinite(regret[-1]) else None,  # None: no model
        "wall_time": out.wall_time,
        "policy_changes": out.policy_changes,
        "clip_count": getattr(agent, "clip_count", None),
        "random_regret": random_regret,
        # the mean return of the first and the last tenth of the users, from every episode (the
        # table keeps only the logged ones): the report's 'return (first -> last 10%)'
        **dict(zip(("return_first", "return_last"), return_ends(out.returns), strict=True)),
        "calibration": _json_safe(agent.calibration.to_dict()),
        "privacy_report": _privacy_digest(agent),
        **extra,
    }
    return {"frame": frame, "meta": meta}


def _privacy_digest(agent: Any) -> Any:
    """The (eps, delta) the run's releases spend under the paper's argument and under the tight
    accountant (privrl.audit.report), for the manifest; None for agents without a report."""
    if not hasattr(agent, "privacy_report"):
        return None
    from privrl.audit.report import summarize_privacy_report

    return _json_safe(summarize_privacy_report(agent.privacy_report()))


def guarded_run(
    spec: RunSpec,
    env: Any = None,
    progress: Callable[[int], None] | None = None,
    stop: threading.Event | None = None,
) -> dict:
    """execute_run, with an exception turned into {"error": ..., "spec": spec}: one failing run
    (say, noise that made a design matrix indefinite) must not take the rest of the sweep down."""
    try:
        return execute_run(spec, env, progress, stop)
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(), "spec": spec}


def _die_with_parent() -> None:
    """Exit this worker as soon as the sweep's process is gone (a `kill -9` of `privrl run` must
    not leave orphaned workers computing on): a daemon thread waits on multiprocessing's parent
    sentinel, which becomes ready when the sweep's process ends (zombie or not; the worker's OS
    parent is the fork server, so the parent pid alone would not tell)."""
    parent = mp.parent_process()
    if parent is None or parent.sentinel is None:  # pragma: no cover - not started by multiprocessing
        return

    def watch() -> None:
        mp.connection.wait([parent.sentinel])
        os._exit(1)

    threading.Thread(target=watch, name="privrl-parent-watch", daemon=True).start()


def _init_worker(env_objects: dict, progress_queue: Any) -> None:
    global _PROGRESS_QUEUE
    _die_with_parent()
    _ENV_OBJECTS.update(env_objects)
    _PROGRESS_QUEUE = progress_queue


def _worker_run(spec: RunSpec) -> dict:
    q = _PROGRESS_QUEUE
    return recorded(guarded_run, spec, progress=None if q is None else (lambda n: q.put(n)))


class _Progress:
    """Two tqdm bars: runs (finished / total, resumed ones counted) and episodes with episodes/s."""

    def __init__(self, enabled: bool, n_runs: int, n_done: int, n_episodes: int):
        self.bars = None
        if not enabled:
            return
        tqdm = tqdm_class()
        self.bars = (
            tqdm(total=n_runs, initial=n_done, desc="runs", unit="run", position=0, file=sys.stderr),
            tqdm(
                total=n_episodes,
                desc="episodes",
                unit="ep",
                unit_scale=True,
                position=1,
                file=sys.stderr,
                smoothing=0.1,
            ),
        )

    def episodes(self, n: int) -> None:
        if self.bars is not None and n:
            self.bars[1].update(n)

    def run_done(self, label: str) -> None:
        if self.bars is not None:
            self.bars[0].update(1)
            self.bars[0].set_postfix_str(label, refresh=False)

    def close(self) -> None:
        if self.bars is not None:
            for b in self.bars:
                b.close()


def _processes(
    specs: Sequence[RunSpec], envs: Mapping[str, Any], bar: _Progress, n_jobs: int
) -> Iterator[dict]:
    # spawn (or forkserver) rather than fork: the parent may hold threads (tqdm, Dask) and Rust state.
    ctx = mp.get_context("forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn")
    q = ctx.Queue()
    pool = cf.ProcessPoolExecutor(
        max_workers=min(n_jobs, len(specs)),
        mp_context=ctx,
        initializer=_init_worker,
        initargs=(dict(envs), q),
    )
    finished = False
    try:
        pending = {pool.submit(_worker_run, s) for s in specs}
        while pending:
            done, pending = cf.wait(pending, timeout=0.2, return_when=cf.FIRST_COMPLETED)
            _drain(q, bar)
            for fut in done:
                try:
                    yield fut.result()
                except cf.process.BrokenProcessPool as exc:
                    raise RuntimeError(_BROKEN_POOL) from exc
        _drain(q, bar)
        finished = True
    finally:
        if not finished:  # interrupted: the workers' runs in flight are lost anyway, do not wait
            for proc in list(getattr(pool, "_processes", {}).values()):
                proc.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
        q.close()


_GUARD = (
    'put the sweep under `if __name__ == "__main__":` in your script (each worker process '
    "re-imports the script, so an unguarded call starts a sweep in every worker), or use n_jobs=1"
)
_BROKEN_POOL = (
    "a sweep worker process died before finishing its run. From a script run with n_jobs > 1, the "
    f"usual cause is a missing guard: {_GUARD}. Otherwise the worker was killed (out of memory, a "
    "signal)."
)


def _check_not_bootstrapping() -> None:
    """A worker process re-imports the user's script as __mp_main__; a sweep started from it is
    the unguarded-script mistake: say what to add instead of letting the pool break."""
    if getattr(mp.current_process(), "_inheriting", False):  # multiprocessing's own bootstrap flag
        raise RuntimeError(f"sweep() called while a worker process imports your script: {_GUARD}")


def _drain(q: Any, bar: _Progress) -> None:
    while True:
        try:
            bar.episodes(q.get_nowait())
        except (_queue.Empty, OSError, ValueError):
            return


def _threads(
    specs: Sequence[RunSpec], envs: Mapping[str, Any], bar: _Progress, n_jobs: int
) -> Iterator[dict]:
    """Runs on threads of this process: the Rust agents run blocks of episodes with the GIL
    released, so runs proceed in parallel (a user's Python agents or environments take turns)."""
    stop = threading.Event()
    with cf.ThreadPoolExecutor(max_workers=min(n_jobs, len(specs))) as pool:
        run = partial(recorded, guarded_run)
        futures = [pool.submit(run, s, envs.get(s.study), bar.episodes, stop) for s in specs]
        try:
            for fut in cf.as_completed(futures):
                yield fut.result()
        finally:
            # interrupted (or done): the runs in flight end at their next block of users, instead
            # of the pool's exit waiting for them to finish only to be discarded
            stop.set()
            for fut in futures:
                fut.cancel()


def _executor(
    specs: Sequence[RunSpec],
    envs: Mapping[str, Any],
    bar: _Progress,
    n_jobs: int,
    scheduler: Any,
    backend: str = "threads",
    store: ResultStore | None = None,
) -> Iterator[dict]:
    if scheduler is not None:
        return dask_results(specs, envs, bar, scheduler, partial(recorded, guarded_run))
    if n_jobs > 1 and len(specs) > 1:
        if backend == "threads":
            return _threads(specs, envs, bar, n_jobs)
        return _processes(specs, envs, bar, n_jobs)

    def compute(s: RunSpec) -> dict:
        return recorded(guarded_run, s, envs.get(s.study), progress=bar.episodes)

    if store is None:
        return (compute(s) for s in specs)  # inline
    stamps = {s.run_id: store.stamp(s.run_id) for s in specs}  # a record unlike these: another sweep's
    return in_turn(store.runs_dir, specs, compute, lambda s: _filed(store, s, stamps[s.run_id]))


def _filed(store: ResultStore, spec: RunSpec, stamp: Any) -> dict | None:
    """The payload of a run another sweep of the config filed after this one started, or None."""
    if (found := store.filed_since(spec.run_id, stamp)) is None:
        return None
    return {"frame": found[0], "meta": {**found[1], "resumed": True}, "loaded": True}


def _load_finished(
    store: ResultStore, specs: Sequence[RunSpec], results: dict, manifest: dict, producer: dict
) -> int:
    """Load the folder's finished runs into `results` and the manifest; how many another version made."""
    stale = 0
    for spec in specs:
        if store.finished(spec.run_id):
            try:
                frame, meta = store.read_run(spec.run_id)
            except ConfigError:  # a damaged table: recomputed, like a run that never finished
                continue
            results[spec.run_id] = frame
            manifest["runs"][spec.run_id] = {**meta, "resumed": True}
            stale += meta.get("producer") != producer  # no producer: a version before it existed
    return stale


def _warn_other_config(store: ResultStore, specs: Sequence[RunSpec], outdir: Any) -> None:
    """Warn when the folder's manifest lists runs this config does not have: the new manifest
    replaces it, so they leave the folder's table and reports (their files stay in runs/)."""
    path = store.root / "manifest.json"
    try:
        previous = json.loads(path.read_text()).get("runs", {}) if path.exists() else {}
    except (ValueError, AttributeError):
        return
    ids = {s.run_id for s in specs}
    dropped = [r for r in previous if r not in ids]
    if dropped:
        warnings.warn(
            f"{outdir} holds {len(dropped)} runs of another config (e.g. {dropped[0]}): this sweep's "
            "manifest replaces its manifest, so they leave its table and reports (their files stay in "
            "runs/); use another output folder to keep both",
            stacklevel=stacklevel_outside(__name__),
        )


def _file_run(
    payload: dict, store: ResultStore | None, results: dict, failures: dict, manifest: dict, producer: dict
) -> str:
    """Record one run's outcome (rows written at once, or the failure) and return its progress label."""
    if "error" in payload:
        spec = payload["spec"]
        failures[spec.run_id] = payload["error"]
        manifest["runs"][spec.run_id] = {
            **spec.describe(),
            "status": "failed",
            "error": payload["error"],
            "traceback": payload["traceback"],
        }
        return f"FAILED {spec.agent} eps={spec.epsilon:g} seed={spec.seed}"
    meta = payload["meta"] if payload.get("loaded") else {**payload["meta"], "producer": producer}
    if store is not None and not payload.get("loaded"):  # loaded: another sweep filed it
        store.write_run(payload["frame"], meta)
    results[meta["run_id"]] = payload["frame"]
    manifest["runs"][meta["run_id"]] = meta
    return f"{meta['agent']} eps={float(meta['epsilon']):g} seed={meta['seed']}"


def _checked(config: SweepConfig, n_jobs: int | None, backend: str | None, scheduler: Any) -> tuple:
    """n_jobs, backend, scheduler checked, and preflight: all that refuses a sweep before the store."""
    n_jobs = config.n_jobs if n_jobs is None else n_jobs_value(n_jobs)  # 2.5 was int()'s 2; -1 all cores
    backend = config.backend if backend is None else backend
    if not is_choice(backend, BACKENDS):
        raise ConfigError("backend", f"must be one of {', '.join(BACKENDS)}, got {backend!r}")
    _check_not_bootstrapping()
    scheduler = scheduler if scheduler is not None else config.scheduler
    check_address(scheduler)
    preflight(config)  # the agents built once: their own checks
    return n_jobs, backend, scheduler


def run_sweep(
    config: SweepConfig,
    outdir: str | os.PathLike | None = None,
    *,
    n_jobs: int | None = None,
    scheduler: Any = None,
    progress: bool | None = False,
    resume: bool = True,
    backend: str | None = None,
    on_start: Callable[[], None] = lambda: None,
) -> tuple[pd.DataFrame, dict]:
    """Execute every run of `config` and return (tidy DataFrame, manifest).

    With an outdir, each finished run is written at once (atomically) and, when `resume` is true, runs
    already finished there are loaded instead of recomputed. The DataFrame lists runs in config order
    and episodes in increasing order. `on_start()`: called once every check passed (the CLI's header).
    `progress`: the bars; None shows them only when interactive (never into a pipe or a log file).
    """
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]

    outdir = outdir if outdir is not None else config.outdir
    progress = interactive() if checked_progress(progress) is None else bool(progress)
    check_flag(resume, "resume")  # resume="no" was true: the folder's runs were reused
    n_jobs, backend, scheduler = _checked(config, n_jobs, backend, scheduler)
    specs = config.runs()
    envs = {s.name: s.env for s in config.studies if s.env_spec is None}
    store = ResultStore(outdir, config.format) if outdir is not None else None  # checks the folder
    # a live sweep of another config writing the folder is refused here, before anything is written
    writing = registered(store.root, [s.run_id for s in specs], outdir) if store else contextlib.nullcontext()
    with writing:
        on_start()
        fmt = store.fmt if store is not None else None
        manifest = new_manifest(config.to_dict(), specs, fmt)
        results: dict[str, pd.DataFrame] = {}
        producer = {"privrl": manifest["privrl"], "git_commit": manifest["git_commit"]}
        if store is not None:
            with folder_lock(store.root):  # not between another sweep's end and its merged table
                _warn_other_config(store, specs, outdir)
                store.prepare()
                stale = _load_finished(store, specs, results, manifest, producer) if resume else 0
                if stale:
                    # The run id covers the config, not the code: say so when the code has changed.
                    warnings.warn(
                        f"{stale} resumed runs in {outdir} were computed by another privrl version or "
                        "commit (see their 'producer' in runs/*.json; none: a version before it was "
                        "recorded); use resume=False (privrl run --fresh) to recompute them",
                        stacklevel=stacklevel_outside(__name__),
                    )
                store.write_manifest(manifest)
                if len(results) < len(specs):  # it would not describe the folder until this sweep completes
                    store.remove_merged()
        todo = [s for s in specs if s.run_id not in results]
        n_resumed = len(specs) - len(todo)
        bar = _Progress(progress, len(specs), len(specs) - len(todo), sum(s.episodes for s in todo))
        t0 = time.perf_counter()
        status = "interrupted"
        failures: dict[str, str] = {}
        registry: dict = {}  # the workers' warnings, raised again here: "default" filters once per sweep
        try:
            for payload in _executor(todo, envs, bar, n_jobs, scheduler, backend, store):
                n_resumed += bool(payload.get("loaded"))
                bar.run_done(_file_run(payload, store, results, failures, manifest, producer))
                reemit(payload, registry)  # after filing: an "error" filter loses no finished run
            status = "failed" if failures else "complete"
        finally:
            bar.close()
            manifest.update(
                status=status,
                n_runs=len(specs),
                n_computed=len(results) - n_resumed,
                n_resumed=n_resumed,
                sweep_wall_time=time.perf_counter() - t0,
            )
            if store is not None:
                with folder_lock(store.root):
                    if not keeps_complete(store.root, manifest):  # another sweep completed the folder
                        store.write_manifest(manifest)
        if failures:
            first = next(iter(failures))
            raise SweepError(
                f"{len(failures)} of {len(specs)} runs failed (the others are saved; rerun to retry "
                f"the failed ones): {first}: {failures[first]}",
                failures,
            )
        frames = [results[s.run_id] for s in specs]
        df = normalize_frame(pd.concat(frames, ignore_index=True)) if frames else _empty_frame()
        if store is not None:
            with folder_lock(store.root):
                manifest["results_file"] = store.write_merged(df).name
                store.write_manifest(manifest)
        # the manifest as manifest.json holds it (inf/nan as strings), with or without an outdir
        return df, _json_safe(manifest)


def sweep(
    env: Any = None,
    agents: Mapping[str, Any] | None = None,
    epsilons: Sequence[float] = (math.inf,),
    seeds: int | Sequence[int] = (0,),
    episodes: int = 1000,
    *,
    n_jobs: int = 1,
    backend: str = "threads",
    log_every: int | None = None,
    outdir: str | os.PathLike | None = None,
    delta: float = 1e-5,
    root_seed: int = 0,
    studies: Sequence[Mapping[str, Any]] | None = None,
    scheduler: Any = None,
    progress: bool | None = None,
    resume: bool = True,
    format: str = "auto",
) -> tuple[pd.DataFrame, dict]:
    """Run every (agent, epsilon, seed) on `env` and return (df, manifest): one row per run and logged
    episode (privrl.experiment.COLUMNS), and the manifest dict (versions, config, every run's record).

    env: a registered name, {"name": ..., **kwargs} (rebuilt inside each worker) or a FiniteMDP.
    agents: {display name: {"algorithm": "UCRL-VTR" | "UCRL-VTR+" | "LSVI-UCB" | "LinUCB", "privacy": "none" |
        "jdp" | "ldp", optional "delta", "p", "epsilons", "calibration" ("adaptive", the default,
        "paper", "tight" or "practical"), "exploration" ("optimism" | "sampling"),
        "mechanism" (jdp only: "tree" | "honaker" | "factorization" | "blt"), and constructor options
        such as "beta_scale" or "batches"}}. A "none" agent runs once (epsilon = inf); a jdp/ldp agent runs at
        every epsilon, and at epsilon = inf it is the non-private algorithm.
    epsilons: the privacy levels of every jdp / ldp agent (math.inf: non-private); delta: their
        delta unless an agent gives its own. episodes: K, users per run.
    seeds: a count (0..n-1) or a list; root_seed: the root of every run's SeedSequence (with the
        run's key, docs/harness.md "Reproducibility"). log_every: log a row every that many
        episodes, and always the last (None: max(1, K // 100)).
    n_jobs > 1 runs on local threads (backend="threads", the default: the Rust agents release the
        GIL, and a script needs no __main__ guard) or processes (backend="processes": for a user's
        own agents or environments written in Python, which hold the GIL); scheduler (a Dask
        address, Client or cluster) runs each run as a Dask task. Results are identical either way
        (only the wall_time column differs). outdir: write the results folder (see
        docs/harness.md) and, when `resume` is true (the default), load the runs already finished
        there instead of recomputing them; format: its table's format, "parquet" (needs pyarrow),
        "csv" or "auto" (parquet when pyarrow is installed). studies: several [env + agents]
        tables in one sweep (the TOML [[study]]). progress: tqdm bars (runs, episodes/s); None
        (default) shows them when interactive (a terminal or a notebook), never in a pipe or a log.
    """
    raw: dict[str, Any] = {
        "episodes": episodes,
        # a count or a list; one epsilon or a list (list("inf") would be its characters)
        # (a bool is passed on as it is, for check_seeds to refuse: int(True) ran one seed)
        "seeds": seeds if isinstance(seeds, (int, np.integer)) else listed(seeds),
        "epsilons": [epsilons] if isinstance(epsilons, (str, int, float, np.number)) else listed(epsilons),
        "delta": delta,
        "root_seed": root_seed,
        "n_jobs": n_jobs,
        "backend": backend,
        "format": format,
    }
    if log_every is not None:
        raw["log_every"] = log_every
    if studies is not None:
        if env is not None or agents is not None:  # build_config refuses both; this dropped env / agents
            raise ConfigError("study", "give either env + agents or studies, not both")
        raw["study"] = [dict(s) for s in studies]
    else:
        raw["env"], raw["agents"] = env, agents
    config = build_config(raw)
    return run_sweep(config, outdir, scheduler=scheduler, progress=progress, resume=resume)
