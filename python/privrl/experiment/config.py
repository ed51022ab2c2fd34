"""Sweep configuration: validated studies (environment x agents x epsilons x seeds), the algorithm and
environment registries resolved lazily by name, and the run keys every result is filed under (Sec. 5)."""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import numbers
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from privrl.common.checks import (
    MAX_INT,
    check_epsilons,
    check_int,
    check_model_delta,
    check_number,
    check_pos_int,
    check_seeds,
)
from privrl.common.errors import ConfigError, SweepError
from privrl.common.kinds import is_choice
from privrl.experiment.registry import (
    ALGORITHMS,
    ENVIRONMENTS,
    did_you_mean,
    make_env,
    make_privacy,
    resolve_algorithm,
)

__all__ = [
    "ConfigError",
    "SweepError",
    "ALGORITHMS",
    "ENVIRONMENTS",
    "PRIVACY_KINDS",
    "AgentSpec",
    "Study",
    "RunSpec",
    "SweepConfig",
    "resolve_algorithm",
    "make_env",
    "make_privacy",
]


def _keyed(check: Any) -> Any:
    """A check of privrl.common.checks whose error names the config key: ConfigError("key: ...")."""

    def parse(value: Any, key: str, **kw: Any) -> Any:
        try:
            return check(value, key, **kw)
        except ValueError as exc:
            msg = str(exc)
            if not msg.startswith(key):
                raise ConfigError(key, msg) from None
            name, _, rest = msg.partition(" ")  # the key, or an element of it (key[i])
            raise ConfigError(name, rest) from None

    return parse


def check_sweep_delta(value: Any, name: str = "delta") -> float:
    """A sweep's delta (check_model_delta): a sweep has no ``allow_large_delta``, so its refusal of
    a delta >= LARGE_DELTA names what runs one instead of an option the sweep does not take."""
    return check_model_delta(
        value,
        name,
        remedy=". A sweep does not run one: to study it, build the agent with JointDP / "
        "LocalDP(epsilon, delta, allow_large_delta=True) and privrl.run it",
    )


# sizes (episodes, log_every, n_jobs), root_seed and seeds follow privrl's one integer rule,
# check_pos_int: 30.0 is refused as by privrl.run and the agents (check_number's integer=True took it)
_number, _pos_int, _int, _delta, _epsilons, _seeds = map(
    _keyed, (check_number, check_pos_int, check_int, check_sweep_delta, check_epsilons, check_seeds)
)


PRIVACY_KINDS = {
    "none": "none",
    "nonprivate": "none",
    "non-private": "none",
    "jdp": "jdp",
    "joint": "jdp",
    "ldp": "ldp",
    "local": "ldp",
}

# Keys of an agent spec that the harness consumes; every other key is a constructor option.
_SPEC_KEYS = ("algorithm", "privacy", "delta", "p", "calibration", "mechanism", "sampler", "epsilons")
_GLOBAL_KEYS = {
    "name",
    "episodes",
    "seeds",
    "epsilons",
    "delta",
    "log_every",
    "n_jobs",
    "backend",
    "root_seed",
    "outdir",
    "scheduler",
    "format",
    "env",
    "agents",
    "study",
    "band",
    "description",
}
_STUDY_KEYS = {"name", "env", "agents", "episodes", "seeds", "epsilons", "delta", "log_every"}


# Constructor arguments the sweep sets for every agent of a study: where a config sets them instead.
_SET_BY_THE_SWEEP = {
    "episodes": "K is the study's, set by the top-level or [[study]] `episodes` (or -K)",
    "seed": "each run's seed comes from `seeds` and `root_seed`",
    "env": "the study's `env` table is every agent's environment",
    "privacy": "`privacy` is a spec key (none, jdp, ldp)",
}


def _check_kwargs(
    fn: Any,
    kwargs: Mapping[str, Any],
    key: str,
    reserved: set[str],
    also: Sequence[str] = (),
    owner: str = "",
) -> None:
    """Refuse a key of `kwargs` that `fn` does not take, naming what `owner` (the algorithm or environment
    as the config spells it; default fn's name) accepts."""
    params = inspect.signature(fn).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    for k in kwargs:
        if k in _SET_BY_THE_SWEEP and k in reserved:  # 'episodes' was told "did you mean 'epsilons'?"
            raise ConfigError(f"{key}.{k}", f"not an agent option: {_SET_BY_THE_SWEEP[k]}")
        if k in reserved or k not in params:
            allowed = sorted(set(params) - reserved - {"self"})
            name = owner or getattr(fn, "__name__", fn)
            accepts = f"{name} accepts {', '.join(allowed) or 'no options'}"
            accepts += f" (besides {', '.join(also)})" if also else ""
            hint = did_you_mean(k, [*allowed, *also])
            raise ConfigError(
                f"{key}.{k}", f"unknown option; {hint}({accepts})" if hint else f"unknown option; {accepts}"
            )


def _choice(value: Any, allowed: Sequence[str], key: str, what: str) -> str | None:
    """`value` if it is one of `allowed` (exact spelling), None if it is None."""
    if value is not None and not is_choice(value, allowed):
        raise ConfigError(
            key, f"unknown {what} {value!r}; {did_you_mean(value, allowed)}use one of {', '.join(allowed)}"
        )
    return value


def _json_safe(x: Any) -> Any:
    """Plain JSON values (inf/nan as strings, tuples as lists, numpy scalars as Python numbers)."""
    if isinstance(x, Mapping):
        return {str(k): _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    if hasattr(x, "tolist") and not isinstance(x, (str, bytes)):
        return _json_safe(x.tolist())
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    return repr(x)


def _digest(obj: Any) -> str:
    blob = json.dumps(_json_safe(obj), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:8]


@dataclass(frozen=True)
class AgentSpec:
    """One entry of `agents`: its display name, algorithm, privacy kind and constructor options."""

    name: str
    algorithm: str
    privacy: str
    options: dict = field(default_factory=dict)
    delta: float | None = None
    p: float | None = None
    epsilons: tuple[float, ...] | None = None
    calibration: str | None = None
    mechanism: str | None = None
    sampler: str | None = None

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"algorithm": self.algorithm, "privacy": self.privacy, **self.options}
        for k in ("delta", "p", "epsilons", "calibration", "mechanism", "sampler"):
            if getattr(self, k) is not None:
                d[k] = list(getattr(self, k)) if k == "epsilons" else getattr(self, k)
        return d


@dataclass(frozen=True)
class RunSpec:
    """Everything one run needs, picklable: it is the unit sent to a process or a Dask worker."""

    run_id: str
    study: str
    agent: str
    algorithm: str
    privacy: str
    epsilon: float
    delta: float
    p: float | None
    calibration: str | None
    mechanism: str | None
    seed: int
    root_seed: int
    episodes: int
    log_every: int
    options: tuple
    env_spec: Any  # dict (name + kwargs) or None when the study's env is an object
    sampler: str | None = None

    @property
    def key(self) -> tuple:
        """The run key the SeedSequence child is derived from (never n_jobs, never finishing order)."""
        return (self.study, self.agent, self.epsilon, self.seed)

    def describe(self) -> dict:
        return {
            "run_id": self.run_id,
            "study": self.study,
            "agent": self.agent,
            "algorithm": self.algorithm,
            "privacy": self.privacy,
            "calibration": self.calibration,
            "mechanism": self.mechanism,
            "sampler": self.sampler,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "seed": self.seed,
            "episodes": self.episodes,
            "log_every": self.log_every,
            "options": dict(self.options),
        }


@dataclass
class Study:
    """One environment with its agents; the sweep-level settings may be overridden per study."""

    name: str
    env: Any  # {"name": ..., **kwargs}, a FiniteMDP or a ContextualBandit
    agents: dict[str, AgentSpec]
    episodes: int
    seeds: tuple[int, ...]
    epsilons: tuple[float, ...]
    delta: float
    log_every: int
    #: "absorbing" for a gymnasium env learned by interaction whose one-hot map has an absorbing
    #: state (environments.learned_padding, set where the config is parsed), else None
    padding: str | None = None

    @property
    def env_spec(self) -> dict | None:
        return dict(self.env) if isinstance(self.env, Mapping) else None

    def env_fingerprint(self) -> Any:
        if self.env_spec is not None:
            return self.env_spec
        import numpy as np

        if not hasattr(self.env, "P"):  # a ContextualBandit: its own digests of what agents read
            return {"object": repr(self.env), **self.env.fingerprint()}
        h = hashlib.sha256()
        for arr in (self.env.P, self.env.R, self.env.init_dist):
            h.update(np.ascontiguousarray(arr).tobytes())
        out = {"object": repr(self.env), "sha256": h.hexdigest()[:16]}
        # the features and C_w agents read too (only where the environment has them: the ids of
        # an environment without them stay as they were)
        parts = self.env.fingerprint() if hasattr(self.env, "fingerprint") else {}
        out.update({k: parts[k] for k in ("features", "C_w") if k in parts})
        return out

    def runs(self, root_seed: int) -> list[RunSpec]:
        out = []
        padding = self.padding  # None but for a gymnasium env learned by interaction
        for spec in self.agents.values():
            eps_list = (math.inf,) if spec.privacy == "none" else (spec.epsilons or self.epsilons)
            for eps in eps_list:
                private = spec.privacy != "none" and math.isfinite(eps)
                privacy = spec.privacy if private else "none"
                delta = (spec.delta if spec.delta is not None else self.delta) if private else math.nan
                for seed in self.seeds:
                    # what the run's id and its RunSpec both hold (the id's digest sorts the keys)
                    common: dict[str, Any] = {
                        "study": self.name,
                        "agent": spec.name,
                        "algorithm": spec.algorithm,
                        "privacy": privacy,
                        "epsilon": eps,
                        "delta": delta,
                        "p": spec.p,
                        "seed": seed,
                        "root_seed": root_seed,
                        "episodes": self.episodes,
                        "log_every": self.log_every,
                    }
                    ident = {
                        **common,
                        "env": self.env_fingerprint(),
                        # None became "adaptive" (issue 21): a folder of the paper-default era
                        # is not resumed as if its runs had the new default
                        "calibration": spec.calibration or "adaptive (default)",
                        "options": spec.options,
                    }
                    if spec.mechanism is not None:  # only when set: older run ids stay valid
                        ident["mechanism"] = spec.mechanism
                    if padding is not None:  # learn pads at an absorbing state: not the self-loop era's runs
                        ident["padding"] = padding
                    if private and spec.sampler != "float":
                        # the default sampler became the discrete one: its runs get new ids, so a
                        # results folder of the float era is not resumed as if it were discrete
                        ident["sampler"] = spec.sampler or "default"
                    # f"{inf:g}" is "inf" (an epsilon is > 0 or inf: check_epsilons)
                    run_id = _run_id(self.name, spec.name, f"__eps{eps:g}__seed{seed}__{_digest(ident)}")
                    out.append(
                        RunSpec(
                            run_id=run_id,
                            **common,
                            # the calibration's regret side also defines the eps = inf member
                            calibration=spec.calibration,
                            mechanism=spec.mechanism if private else None,
                            options=tuple(sorted(spec.options.items())),
                            env_spec=self.env_spec,
                            sampler=spec.sampler if private else None,
                        )
                    )
        return out

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "env": self.env_spec if self.env_spec is not None else self.env_fingerprint(),
            "agents": {k: v.to_dict() for k, v in self.agents.items()},
            "episodes": self.episodes,
            "seeds": list(self.seeds),
            "epsilons": list(self.epsilons),
            "delta": self.delta,
            "log_every": self.log_every,
        }


#: The longest run id: its files runs/<id>.parquet fit a file name of 255 bytes (their temporary
#: copies .<id>.parquet.<pid>-<n>@<host>.tmp are cut to fit: results._temporary).
MAX_RUN_ID = 234


def _run_id(study: str, agent: str, tail: str) -> str:
    """``<study>__<agent><tail>`` of the names' slugs; where that is longer than MAX_RUN_ID (a file
    name too long to write), the slugs are cut to fit (the tail's digest covers the whole names,
    so the ids stay apart). Every id that fits is as it was."""
    head, name = (re.sub(r"[^A-Za-z0-9.+-]+", "-", s).strip("-") or "x" for s in (study, agent))
    run_id = f"{head}__{name}{tail}"
    if len(run_id) <= MAX_RUN_ID:
        return run_id
    room = MAX_RUN_ID - len(tail) - 2
    cut = min(len(head), max(room // 2, room - len(name)))
    return f"{head[:cut]}__{name[: room - cut]}{tail}"


#: How n_jobs > 1 runs execute locally: threads (the Rust agents run blocks of episodes with the GIL
#: released; no process start, no pickling, no __main__ guard) or processes (for a user's own
#: agents or environments written in Python, which hold the GIL).
BACKENDS = ("threads", "processes")


def check_address(scheduler: Any) -> None:
    """A scheduler given as a string is an address (tcp://host:8786): checked with the config, before
    a sweep starts (connect found 'foo' after the results folder was made)."""
    if isinstance(scheduler, str) and ":" not in scheduler:
        raise ConfigError("scheduler", f"expected an address like tcp://host:8786, got {scheduler!r}")


def n_jobs_value(n_jobs: Any) -> int:
    """A sweep's n_jobs: an integer >= 1, or the integer -1 for all cores (the config's rule, and
    run_sweep's n_jobs= too, which refused -1); anything else a ConfigError naming n_jobs."""
    if isinstance(n_jobs, numbers.Integral) and int(n_jobs) == -1:
        return os.cpu_count() or 1  # an integer -1 (-1.0 is refused below, as 2.0)
    return int(_pos_int(n_jobs, "n_jobs"))


EXECUTION_KEYS = ("n_jobs", "scheduler", "backend", "outdir", "format", "root_seed")


def execution_values(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of how a sweep runs, checked: n_jobs (-1 = all cores), backend, scheduler,
    outdir, format, root_seed. SweepConfig's own check (a config built directly too: it is
    exported, and took n_jobs="10" or format="xlsx", failing mid-sweep)."""
    n_jobs = n_jobs_value(raw.get("n_jobs", 1))
    fmt = raw.get("format", "auto")
    if not is_choice(fmt, ("auto", "parquet", "csv")):
        raise ConfigError("format", f"must be 'auto', 'parquet' or 'csv', got {fmt!r}")
    scheduler = raw.get("scheduler")
    if scheduler is not None and not isinstance(scheduler, str):
        raise ConfigError("scheduler", f"expected an address like tcp://host:8786, got {scheduler!r}")
    check_address(scheduler)
    backend = raw.get("backend", "threads")
    if not is_choice(backend, BACKENDS):
        raise ConfigError("backend", f"must be one of {', '.join(BACKENDS)}, got {backend!r}")
    outdir = raw.get("outdir")
    if isinstance(outdir, os.PathLike):  # a pathlib.Path was refused as "expected a path"
        outdir = os.fspath(outdir)
    if outdir is not None and not isinstance(outdir, str):  # a bytes path refused too: the manifest is text
        raise ConfigError("outdir", f"expected a path, got {outdir!r}")
    return {
        "n_jobs": n_jobs,
        "scheduler": scheduler,
        "backend": backend,
        "outdir": outdir,
        "format": fmt,
        # the root of every run's SeedSequence: an integer in [0, 2^63 - 1], as a seed
        "root_seed": int(_int(raw.get("root_seed", 0), "root_seed", low=0, high=MAX_INT)),
    }


@dataclass
class SweepConfig:
    """A validated sweep: studies plus execution settings (n_jobs, scheduler, output format)."""

    studies: list[Study]
    root_seed: int = 0
    n_jobs: int = 1
    scheduler: str | None = None
    backend: str = "threads"
    outdir: str | None = None
    format: str = "auto"
    name: str = "sweep"
    raw: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        for key, value in execution_values(vars(self)).items():
            setattr(self, key, value)

    def runs(self) -> list[RunSpec]:
        out = [r for s in self.studies for r in s.runs(self.root_seed)]
        seen: dict[str, RunSpec] = {}
        for r in out:
            if r.run_id in seen:
                raise ConfigError(f"study.{r.study}", f"two runs share the id {r.run_id}")
            seen[r.run_id] = r
        return out

    def to_dict(self) -> dict:
        return _json_safe(
            {
                "name": self.name,
                "root_seed": self.root_seed,
                "n_jobs": self.n_jobs,
                "backend": self.backend,
                "scheduler": self.scheduler,
                "format": self.format,
                "studies": [s.to_dict() for s in self.studies],
            }
        )
