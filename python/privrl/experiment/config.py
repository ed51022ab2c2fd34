"""Sweep configuration: validated studies (environment x agents x epsilons x seeds), the algorithm and
environment registries resolved lazily by name, and the run keys every result is filed under (Sec. 5)."""

from __future__ import annotations

import hashlib
import difflib
import importlib
import inspect
import json
import math
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from privrl.common.checks import check_epsilons, check_model_delta, check_number, check_seeds
from privrl.common.errors import ConfigError, SweepError

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
    "build_config",
    "load_config",
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


_number, _delta, _epsilons, _seeds = map(_keyed, (check_number, check_model_delta, check_epsilons, check_seeds))

# ConfigError and SweepError are defined once in privrl.common.errors and re-exported here for the harness.

# Algorithms by canonical name -> (module, class). Resolved on first use, so an algorithm whose
# module is not installed (yet) only fails a config that asks for it.
ALGORITHMS: dict[str, tuple[str, str]] = {
    "UCRL-VTR": ("privrl.agents.ucrl_vtr.agent", "UCRLVTR"),
    "UCRL-VTR+": ("privrl.agents.ucrl_vtr_plus.agent", "UCRLVTRPlus"),
    "LSVI-UCB": ("privrl.agents.lsvi_ucb.agent", "LSVIUCB"),
}

# Environments by canonical name -> (module, callable); kwargs are checked against its signature.
ENVIRONMENTS: dict[str, tuple[str, str]] = {
    "HardToLearn": ("privrl.envs.mixture", "HardToLearn"),
    "RandomLinearMixtureMDP": ("privrl.envs.mixture", "RandomLinearMixtureMDP"),
    "RiverSwimMixture": ("privrl.envs.mixture", "RiverSwimMixture"),
    "RandomLinearMDP": ("privrl.envs.linear", "RandomLinearMDP"),
    "SyntheticLinearMDP": ("privrl.envs.linear", "SyntheticLinearMDP"),
    "RiverSwim": ("privrl.envs.linear", "RiverSwim"),
    "FrozenLake": ("privrl.envs.gym", "frozen_lake"),
    "gymnasium": ("privrl.experiment.environments", "gymnasium_linear_mdp"),
}

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


def _canon(name: str) -> str:
    return re.sub(r"[^a-z0-9+]", "", name.lower())


def _lookup(registry: Mapping[str, Any], name: Any, key: str, what: str) -> str:
    if not isinstance(name, str) or not name:
        raise ConfigError(key, f"{what} must be a non-empty string, got {name!r}")
    table = {_canon(k): k for k in registry}
    if _canon(name) not in table:
        raise ConfigError(key, f"unknown {what} {name!r}; known: {', '.join(registry)}")
    return table[_canon(name)]


def _import(registry: Mapping[str, tuple[str, str]], name: str, key: str, what: str) -> Any:
    module, attr = registry[name]
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(
            key, f"{what} {name!r} is not available in this privrl install ({module}.{attr}: {exc})"
        ) from exc


def resolve_algorithm(name: str, key: str = "algorithm") -> type:
    """The agent class registered under `name` (case and punctuation insensitive)."""
    return _import(ALGORITHMS, _lookup(ALGORITHMS, name, key, "algorithm"), key, "algorithm")


def _check_kwargs(
    fn: Any, kwargs: Mapping[str, Any], key: str, reserved: set[str], also: Sequence[str] = ()
) -> None:
    params = inspect.signature(fn).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    for k in kwargs:
        if k in reserved or k not in params:
            allowed = sorted(set(params) - reserved - {"self"})
            message = (
                f"unknown option; {getattr(fn, '__name__', fn)} accepts {', '.join(allowed) or 'no options'}"
            )
            if also:
                message += f" (besides {', '.join(also)})"
            close = difflib.get_close_matches(k, [*allowed, *also], n=1)
            if close:
                message = f"unknown option; did you mean {close[0]!r}? ({message.removeprefix('unknown option; ')})"
            raise ConfigError(f"{key}.{k}", message)


def _choice(value: Any, allowed: Sequence[str], key: str, what: str) -> str | None:
    """`value` if it is one of `allowed` (exact spelling), None if it is None."""
    if value is not None and (not isinstance(value, str) or value not in allowed):
        raise ConfigError(key, f"unknown {what} {value!r}; use one of {', '.join(allowed)}")
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


def _digest(obj: Any, n: int = 10) -> str:
    blob = json.dumps(_json_safe(obj), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:n]


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
    env: Any  # {"name": ..., **kwargs} or a FiniteMDP
    agents: dict[str, AgentSpec]
    episodes: int
    seeds: tuple[int, ...]
    epsilons: tuple[float, ...]
    delta: float
    log_every: int

    @property
    def env_spec(self) -> dict | None:
        return dict(self.env) if isinstance(self.env, Mapping) else None

    def env_fingerprint(self) -> Any:
        if self.env_spec is not None:
            return self.env_spec
        import numpy as np

        h = hashlib.sha256()
        for arr in (self.env.P, self.env.R, self.env.init_dist):
            h.update(np.ascontiguousarray(arr).tobytes())
        return {"object": repr(self.env), "sha256": h.hexdigest()[:16]}

    def runs(self, root_seed: int) -> list[RunSpec]:
        out = []
        for spec in self.agents.values():
            eps_list = (math.inf,) if spec.privacy == "none" else (spec.epsilons or self.epsilons)
            for eps in eps_list:
                private = spec.privacy != "none" and math.isfinite(eps)
                privacy = spec.privacy if private else "none"
                delta = (spec.delta if spec.delta is not None else self.delta) if private else math.nan
                for seed in self.seeds:
                    ident = {
                        "study": self.name,
                        "env": self.env_fingerprint(),
                        "agent": spec.name,
                        "algorithm": spec.algorithm,
                        "privacy": privacy,
                        "epsilon": eps,
                        "delta": delta,
                        "p": spec.p,
                        "calibration": spec.calibration,
                        "seed": seed,
                        "root_seed": root_seed,
                        "episodes": self.episodes,
                        "log_every": self.log_every,
                        "options": spec.options,
                    }
                    if spec.mechanism is not None:  # only when set: older run ids stay valid
                        ident["mechanism"] = spec.mechanism
                    if private and spec.sampler != "float":
                        # the default sampler became the discrete one: its runs get new ids, so a
                        # results folder of the float era is not resumed as if it were discrete
                        ident["sampler"] = spec.sampler or "default"
                    eps_tag = "inf" if math.isinf(eps) else f"{eps:g}"
                    run_id = (
                        f"{_slug(self.name)}__{_slug(spec.name)}__eps{eps_tag}__seed{seed}__"
                        f"{_digest(ident, 8)}"
                    )
                    out.append(
                        RunSpec(
                            run_id=run_id,
                            study=self.name,
                            agent=spec.name,
                            algorithm=spec.algorithm,
                            privacy=privacy,
                            epsilon=eps,
                            delta=delta,
                            p=spec.p,
                            # the practical regret side also defines the eps = inf member
                            calibration=spec.calibration
                            if private or spec.calibration == "practical"
                            else None,
                            mechanism=spec.mechanism if private else None,
                            seed=seed,
                            root_seed=root_seed,
                            episodes=self.episodes,
                            log_every=self.log_every,
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


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9.+-]+", "-", s).strip("-") or "x"


#: How n_jobs > 1 runs execute locally: threads (the episode engine releases the GIL; no process
#: start, no pickling, no __main__ guard) or processes (for runs on the Python loop: a user's own
#: agents or environments).
BACKENDS = ("threads", "processes")


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


def _agent_table(name: Any, spec: Any, key: str) -> dict[str, Any]:
    if not isinstance(name, str) or not name:
        raise ConfigError(key, f"agent names must be non-empty strings, got {name!r}")
    if isinstance(spec, str):
        spec = {"algorithm": spec}
    if not isinstance(spec, Mapping):
        raise ConfigError(key, f"expected a table with at least 'algorithm', got {spec!r}")
    if "algorithm" not in spec:
        raise ConfigError(f"{key}.algorithm", "missing (one of " + ", ".join(ALGORITHMS) + ")")
    return dict(spec)


def _privacy_kind(kind: Any, key: str) -> str:
    if not isinstance(kind, str) or kind.lower() not in PRIVACY_KINDS:
        raise ConfigError(key, f"unknown privacy model {kind!r}; use none, jdp or ldp")
    return PRIVACY_KINDS[kind.lower()]


def _agent_spec(name: Any, raw: Any, key: str) -> AgentSpec:
    # The privacy models list the calibrations and mechanisms they accept; imported here, as the
    # algorithms are, so that importing the harness stays light.
    from privrl.privacy.models import CALIBRATIONS, MECHANISMS, SAMPLERS

    spec = _agent_table(name, raw, key)
    algo = _lookup(ALGORITHMS, spec.pop("algorithm"), f"{key}.algorithm", "algorithm")
    cls = _import(ALGORITHMS, algo, f"{key}.algorithm", "algorithm")
    kind = _privacy_kind(spec.pop("privacy", "jdp"), f"{key}.privacy")
    delta, p, eps = spec.pop("delta", None), spec.pop("p", None), spec.pop("epsilons", None)
    calibration = _choice(spec.pop("calibration", None), CALIBRATIONS, f"{key}.calibration", "calibration")
    mechanism = _choice(spec.pop("mechanism", None), MECHANISMS, f"{key}.mechanism", "mechanism")
    sampler = _choice(spec.pop("sampler", None), SAMPLERS, f"{key}.sampler", "sampler")
    if sampler is not None and kind == "none":
        raise ConfigError(f"{key}.sampler", "a non-private agent draws no noise; remove 'sampler'")
    if sampler == "discrete" and mechanism in ("honaker", "factorization"):
        raise ConfigError(
            f"{key}.sampler", f"mechanism {mechanism!r} has no discrete sampler; use sampler = 'float'"
        )
    if mechanism is not None and kind != "jdp":
        raise ConfigError(
            f"{key}.mechanism",
            f"only jdp agents choose a continual-release mechanism; this one has privacy = {kind!r}",
        )
    _check_kwargs(
        cls.__init__, spec, key, reserved={"self", "env", "privacy", "episodes", "seed"}, also=_SPEC_KEYS
    )
    if "beta_scale" in spec:  # checked, not converted: the run ids hash the options as written
        _number(spec["beta_scale"], f"{key}.beta_scale", low=0.0)
    return AgentSpec(
        name=name,
        algorithm=algo,
        privacy=kind,
        options=spec,
        delta=None if delta is None else _delta(delta, f"{key}.delta"),
        p=None if p is None else _number(p, f"{key}.p", low=0.0, low_open=True, high=1.0, high_open=True),
        epsilons=None if eps is None else _epsilons(eps, f"{key}.epsilons"),
        calibration=calibration,
        mechanism=mechanism,
        sampler=sampler,
    )


def _check_mechanisms(specs: Mapping[str, AgentSpec], delta: float, key: str) -> None:
    """Only the tree has a pure-DP (Laplace) version: another mechanism needs delta > 0, whether
    the agent sets delta itself or inherits the study's."""
    for name, spec in specs.items():
        agent_delta = spec.delta if spec.delta is not None else delta
        if spec.mechanism not in (None, "tree") and agent_delta == 0.0:
            raise ConfigError(
                f"{key}{name}.mechanism",
                f"{spec.mechanism!r} needs Gaussian noise (delta > 0); with delta = 0 (pure DP) use the tree",
            )


def _env(value: Any, key: str) -> Any:
    from privrl.envs.finite import FiniteMDP

    if isinstance(value, FiniteMDP):
        return value
    if isinstance(value, str):
        value = {"name": value}
    if not isinstance(value, Mapping) or "name" not in value:
        raise ConfigError(
            key,
            f"expected an environment name, a table with 'name' and its keyword "
            f"arguments, or a privrl FiniteMDP; got {value!r}",
        )
    spec = dict(value)
    name = _lookup(ENVIRONMENTS, spec.pop("name"), f"{key}.name", "environment")
    fn = _import(ENVIRONMENTS, name, f"{key}.name", "environment")
    _check_kwargs(fn, spec, key, reserved=set())
    return {"name": name, **spec}


def _study(raw: Mapping[str, Any], defaults: Mapping[str, Any], key: str, index: int) -> Study:
    pre = f"{key}." if key else ""
    unknown = set(raw) - _STUDY_KEYS
    if unknown:
        raise ConfigError(
            f"{pre}{sorted(unknown)[0]}", f"unknown key; a study takes {', '.join(sorted(_STUDY_KEYS))}"
        )
    merged = {**defaults, **raw}
    if "env" not in merged:
        raise ConfigError(f"{pre}env", "missing: every study needs an environment")
    env = _env(merged["env"], f"{pre}env")
    agents = merged.get("agents")
    if not isinstance(agents, Mapping) or not agents:
        raise ConfigError(f"{pre}agents", f"expected a non-empty table of name -> agent spec, got {agents!r}")
    specs = {n: _agent_spec(n, s, f"{pre}agents.{n}") for n, s in agents.items()}
    delta = _delta(merged.get("delta", 1e-5), f"{pre}delta")
    _check_mechanisms(specs, delta, f"{pre}agents.")
    episodes = _number(merged.get("episodes", 1000), f"{pre}episodes", integer=True, low=1)
    log_every = merged.get("log_every")
    log_every = (
        max(1, episodes // 100)
        if log_every is None
        else _number(log_every, f"{pre}log_every", integer=True, low=1)
    )
    name = merged.get("name")
    if name is None:
        name = env["name"] if isinstance(env, Mapping) else getattr(env, "name", f"study{index}")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{pre}name", f"expected a non-empty string, got {name!r}")
    return Study(
        name=name,
        env=env,
        agents=specs,
        episodes=episodes,
        seeds=_seeds(merged.get("seeds", [0]), f"{pre}seeds"),
        epsilons=_epsilons(merged.get("epsilons", [math.inf]), f"{pre}epsilons"),
        delta=delta,
        log_every=log_every,
    )


_GLOBAL_CHECKS = {
    "episodes": lambda v, k: _number(v, k, integer=True, low=1),
    "seeds": _seeds,
    "epsilons": _epsilons,
    "delta": _delta,
    "log_every": lambda v, k: _number(v, k, integer=True, low=1),
}


def _studies(raw: Mapping[str, Any], defaults: Mapping[str, Any]) -> list[Study]:
    """The top-level env + agents as one study, or the [[study]] tables; distinct names."""
    if "study" not in raw:
        if "env" not in raw:
            raise ConfigError("env", "missing: give env + agents, or [[study]] tables")
        studies = [_study({k: raw[k] for k in ("env", "agents") if k in raw}, defaults, "", 0)]
    elif "env" in raw or "agents" in raw:
        raise ConfigError("study", "give either top-level env + agents or [[study]] tables, not both")
    else:
        tables = raw["study"]
        if isinstance(tables, Mapping):
            tables = [tables]
        if not isinstance(tables, list) or not tables:
            raise ConfigError("study", "expected a non-empty array of tables ([[study]])")
        for i, s in enumerate(tables):
            if not isinstance(s, Mapping):
                raise ConfigError(f"study[{i}]", f"expected a table, got {s!r}")
        studies = [_study(s, defaults, f"study[{i}]", i) for i, s in enumerate(tables)]
    names = [s.name for s in studies]
    for n in names:
        if names.count(n) > 1:
            raise ConfigError("study", f"two studies are named {n!r}; give each a distinct name")
    return studies


def _execution(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of how a sweep runs: n_jobs (-1 = all cores), backend, scheduler, outdir, format,
    root_seed."""
    n_jobs = raw.get("n_jobs", 1)
    if n_jobs == -1:
        import os

        n_jobs = os.cpu_count() or 1
    fmt = raw.get("format", "auto")
    if fmt not in ("auto", "parquet", "csv"):
        raise ConfigError("format", f"must be 'auto', 'parquet' or 'csv', got {fmt!r}")
    scheduler = raw.get("scheduler")
    if scheduler is not None and not isinstance(scheduler, str):
        raise ConfigError("scheduler", f"expected an address like tcp://host:8786, got {scheduler!r}")
    backend = raw.get("backend", "threads")
    if backend not in BACKENDS:
        raise ConfigError("backend", f"must be one of {', '.join(BACKENDS)}, got {backend!r}")
    outdir = raw.get("outdir")
    if outdir is not None and not isinstance(outdir, str):
        raise ConfigError("outdir", f"expected a path, got {outdir!r}")
    return {
        "n_jobs": _number(n_jobs, "n_jobs", integer=True, low=1),
        "scheduler": scheduler,
        "backend": backend,
        "outdir": outdir,
        "format": fmt,
        "root_seed": _number(raw.get("root_seed", 0), "root_seed", integer=True, low=0),
    }


def build_config(raw: Mapping[str, Any]) -> SweepConfig:
    """Validate a config mapping (the parsed TOML, or sweep()'s arguments) into a SweepConfig.

    Top level: episodes, seeds (count or list), epsilons (inf = non-private), delta, log_every,
    n_jobs, backend ("threads" | "processes"), root_seed, outdir, scheduler, format ("auto" |
    "parquet" | "csv"), and either
    env + agents (one study) or [[study]] tables (name, env, agents, and any of the sweep-level
    keys as per-study overrides). Raises ConfigError naming the offending key.
    """
    if not isinstance(raw, Mapping):
        raise ConfigError("", f"a config must be a table, got {type(raw).__name__}")
    unknown = set(raw) - _GLOBAL_KEYS
    if unknown:
        raise ConfigError(
            sorted(unknown)[0], "unknown key; the top level takes " + ", ".join(sorted(_GLOBAL_KEYS))
        )
    for k, check in _GLOBAL_CHECKS.items():
        if k in raw:  # reported under the top-level key rather than under the first study's
            check(raw[k], k)
    defaults = {k: raw[k] for k in _GLOBAL_CHECKS if k in raw}
    cfg = SweepConfig(
        studies=_studies(raw, defaults), name=str(raw.get("name", "sweep")), raw=dict(raw), **_execution(raw)
    )
    cfg.runs()  # duplicate run ids are a config error, raised now rather than mid-sweep
    return cfg


def _tomllib() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10: the same parser, packaged as tomli
        import tomli as tomllib
    return tomllib


def load_config(path: str) -> SweepConfig:
    """Read and validate a TOML sweep config (see build_config for the keys)."""
    tomllib = _tomllib()
    try:
        with open(path, "rb") as f:
            raw = tomllib.load(f)
    except FileNotFoundError as exc:
        raise ConfigError("", f"config file not found: {path}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("", f"{path} is not valid TOML: {exc}") from exc
    return build_config(raw)


def make_env(spec: Mapping[str, Any]) -> Any:
    """Build the environment a spec names (runs inside workers, so specs must be plain data)."""
    spec = dict(spec)
    name = spec.pop("name")
    cls = _import(ENVIRONMENTS, name, "env.name", "environment")
    params = inspect.signature(cls).parameters
    for k, v in spec.items():
        want = str(params[k].annotation) if k in params else ""
        if want in ("int", "float") and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise ConfigError(f"env.{k}", f"expected {'an integer' if want == 'int' else 'a number'}, got {v!r}")
    return cls(**spec)


def make_privacy(
    kind: str,
    epsilon: float,
    delta: float,
    p: float | None = None,
    calibration: str | None = None,
    mechanism: str | None = None,
    sampler: str | None = None,
) -> Any:
    """The privacy model of a run: epsilon = inf (or kind none) is NonPrivate (with the practical
    regret side when calibration is "practical": its eps -> inf member); calibration "paper",
    "tight" or "practical" (privrl.privacy.models) for JDP / LDP; mechanism (JDP only) the
    continual release of the server's sums (the calibration's default unless given); sampler
    "discrete" / "float" (the privacy model's default unless given)."""
    from privrl.privacy import JointDP, LocalDP, NonPrivate

    extra: dict[str, Any] = {} if p is None else {"p": p}
    if kind == "none" or math.isinf(epsilon):
        return NonPrivate(
            p=extra.get("p", 0.05), calibration="practical" if calibration == "practical" else "paper"
        )
    if calibration is not None:
        extra["calibration"] = calibration
    if sampler is not None:
        extra["sampler"] = sampler
    if kind == "ldp":
        return LocalDP(epsilon, delta, **extra)
    if mechanism is not None:
        extra["mechanism"] = mechanism
    return JointDP(epsilon, delta, **extra)
