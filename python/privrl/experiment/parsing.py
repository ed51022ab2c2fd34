"""Sweep configuration files: TOML / mapping -> SweepConfig (build_config, load_config); every
key checked once, here, with the key path in the error."""

from __future__ import annotations

import inspect
import json
import math
import os
import sys
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from privrl.common.errors import ConfigError, EpsilonWarning, stacklevel_outside
from privrl.common.kinds import is_choice
from privrl.experiment.config import (
    _GLOBAL_KEYS,
    _SPEC_KEYS,
    _STUDY_KEYS,
    EXECUTION_KEYS,
    PRIVACY_KINDS,
    AgentSpec,
    Study,
    SweepConfig,
    _check_kwargs,
    _choice,
    _delta,
    _epsilons,
    _number,
    _pos_int,
    _seeds,
)
from privrl.experiment.registry import (
    ALGORITHMS,
    DRAWN_FROM_SEED,
    ENVIRONMENTS,
    _import,
    _lookup,
    did_you_mean,
)


def listed(value: Any) -> Any:
    """`value` as a list when it is a collection (a tuple, range or numpy array of seeds or
    epsilons), else as given, for the checks to name it (sweep(seeds=2.0) was list(2.0)'s bare
    TypeError, and seeds="12" the seeds '1' and '2'). A 0-d array is its number, as numpy's scalars
    are (np.array(1)'s list() was 'iteration over a 0-d array', a TypeError naming no argument)."""
    if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        return value.item()
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        return value
    return list(value)


def _agent_table(name: Any, spec: Any, key: str) -> dict[str, Any]:
    if not isinstance(name, str) or not name:
        raise ConfigError(key, f"agent names must be non-empty strings, got {name!r}")
    if isinstance(spec, str):
        spec = {"algorithm": spec}
    if not isinstance(spec, Mapping):
        raise ConfigError(key, f"expected a table with at least 'algorithm', got {spec!r}")
    if "algorithm" not in spec:
        known = "(one of " + ", ".join(ALGORITHMS) + ")"
        for typo in spec:  # `algoritm = ...`: name the key written, not only the one missing
            if did_you_mean(typo, ["algorithm"]) and typo not in _SPEC_KEYS:
                raise ConfigError(f"{key}.{typo}", f"unknown key; did you mean 'algorithm'? {known}")
        raise ConfigError(f"{key}.algorithm", f"missing {known}")
    return dict(spec)


def _privacy_kind(kind: Any, key: str) -> str:
    if not isinstance(kind, str) or kind.lower() not in PRIVACY_KINDS:
        raise ConfigError(
            key, f"unknown privacy model {kind!r}; {did_you_mean(kind, PRIVACY_KINDS)}use none, jdp or ldp"
        )
    return PRIVACY_KINDS[kind.lower()]


def _agent_spec(name: Any, raw: Any, key: str) -> AgentSpec:
    # The privacy models list the calibrations and mechanisms they accept; imported here, as the
    # algorithms are, so that importing the harness stays light.
    from privrl.privacy.models import CALIBRATIONS, MECHANISMS, SAMPLERS
    from privrl.privacy.plans import DISCRETE_MECHANISMS, has_discrete_sampler

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
    for own, value in (("epsilons", eps), ("delta", delta)):
        if value is not None and kind == "none":  # ignored: a "none" agent runs once, at eps = inf
            raise ConfigError(
                f"{key}.{own}",
                f"a non-private agent runs once, at epsilon = inf, with no {own}; remove {own!r} "
                "(or set privacy = 'jdp' / 'ldp')",
            )
    # the privacy models' rule (mechanism None resolves to the tree or BLT, which have the sampler)
    if sampler == "discrete" and mechanism is not None and not has_discrete_sampler(kind, mechanism):
        raise ConfigError(
            f"{key}.sampler",
            f"mechanism {mechanism!r} has no discrete sampler (only {DISCRETE_MECHANISMS} do); "
            "use sampler = 'float'",
        )
    if mechanism is not None and kind != "jdp":
        raise ConfigError(
            f"{key}.mechanism",
            f"only jdp agents choose a continual-release mechanism; this one has privacy = {kind!r}",
        )
    _check_kwargs(
        cls.__init__,
        spec,
        key,
        reserved={"self", "env", "privacy", "episodes", "seed"},
        also=_SPEC_KEYS,
        owner=algo,
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
    from privrl.envs.bandit import ContextualBandit
    from privrl.envs.finite import FiniteMDP
    from privrl.experiment.environments import GymnasiumTask

    if isinstance(value, (FiniteMDP, ContextualBandit, GymnasiumTask)):
        return value
    if isinstance(value, str):
        value = {"name": value}
    if isinstance(value, Mapping) and "name" not in value and "object" in value:  # a manifest's record
        raise ConfigError(
            key,
            f"{value['object']} was given to the sweep as a Python object, and a manifest keeps only its "
            "name and digests, not the object: rerun this sweep from Python, passing the same object "
            "(sweep(env=..., outdir=...) resumes it), or give an environment table with 'name'",
        )
    if not isinstance(value, Mapping) or "name" not in value:
        gym_id = getattr(getattr(value, "spec", None), "id", None)
        gym_hint = (  # a gymnasium.Env: each run needs its own, built from the id
            f" (a gymnasium environment: give {{'name': 'gymnasium', 'id': {gym_id!r}, 'H': ...}}, with "
            f"'model': False to learn it by interaction, or GymnasiumTask({gym_id!r}, H), "
            "privrl.experiment.environments)"
            if hasattr(value, "step") and gym_id
            else ""
        )
        raise ConfigError(
            key,
            f"expected an environment name, a table with 'name' and its keyword "
            f"arguments, or a privrl FiniteMDP, ContextualBandit or GymnasiumTask; got {value!r}{gym_hint}",
        )
    spec = dict(value)
    name = _env_name(spec.pop("name"), f"{key}.name")
    fn = _import(ENVIRONMENTS, name, f"{key}.name", "environment")
    _check_kwargs(fn, spec, key, reserved=set(), owner=name)
    _check_required(fn, spec, key, name)
    if name in DRAWN_FROM_SEED and "seed" in spec and spec["seed"] is None:
        # every run rebuilds the environment from the spec: seed = None would give each run its own
        # model (OS entropy). One seed per study, drawn here, recorded in the manifest's config.
        from privrl.common.checks import model_seed

        spec["seed"] = model_seed(None)
    return {"name": name, **spec}


def _env_name(name: Any, key: str) -> str:
    """The registered environment `name` stands for; a dataset's name ("digits") is refused naming
    the environment that loads it."""
    from privrl.envs.datasets import DATASETS

    try:
        return _lookup(ENVIRONMENTS, name, key, "environment")
    except ConfigError:
        if isinstance(name, str) and name.lower().replace("-", "_") in DATASETS:
            raise ConfigError(
                key,
                f"{name!r} is a dataset, not an environment: its bandit is ClassificationBandit "
                f'(env = {{ name = "ClassificationBandit", dataset = "{name.lower().replace("-", "_")}" }}; '
                f"privrl run --env ClassificationBandit --env-arg dataset={name.lower().replace('-', '_')})",
            ) from None
        raise


def _check_required(fn: Any, spec: Mapping[str, Any], key: str, name: str) -> None:
    """Refuse an environment table without an argument its constructor requires, as a config
    error at parse time (it was Python's TypeError when the first run built the environment:
    "env: gymnasium_linear_mdp() missing 1 required positional argument: 'id'")."""
    kinds = (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    )
    params = inspect.signature(fn).parameters.values()
    missing = [p.name for p in params if p.kind in kinds and p.default is p.empty and p.name not in spec]
    if missing:
        from privrl.envs.datasets import DATASETS

        choices = f" (one of {', '.join(map(repr, DATASETS))})" if missing[0] == "dataset" else ""
        them = "them" if missing[1:] else "it"
        raise ConfigError(
            f"{key}.{missing[0]}",
            f"missing: {name} needs {', '.join(missing)}{choices}: give {them} in the env table "
            f"({missing[0]} = ...) or as privrl run --env-arg {missing[0]}=...",
        )


def _refuse_unknown(raw: Mapping[str, Any], keys: set[str], pre: str, takes: str) -> None:
    """Refuse the first key of `raw` (sorted) that is not in `keys`, with the close one and what
    `takes` them ("a study takes ", "the top level takes ")."""
    unknown = sorted(set(raw) - keys)
    if unknown:
        bad = unknown[0]
        raise ConfigError(
            f"{pre}{bad}", f"unknown key; {did_you_mean(bad, keys)}{takes}{', '.join(sorted(keys))}"
        )


def _study(raw: Mapping[str, Any], defaults: Mapping[str, Any], key: str, index: int) -> Study:
    pre = f"{key}." if key else ""
    _refuse_unknown(raw, _STUDY_KEYS, pre, "a study takes ")
    merged = {**defaults, **raw}
    if "env" not in merged:
        raise ConfigError(f"{pre}env", "missing: every study needs an environment")
    env = _env(merged["env"], f"{pre}env")
    agents = merged.get("agents")
    if not isinstance(agents, Mapping) or not agents:
        form = (
            " (TOML: one [agents.NAME] table per agent, not an [[agents]] list)"
            if isinstance(agents, list)
            else ""
        )
        raise ConfigError(
            f"{pre}agents", f"expected a non-empty table of name -> agent spec{form}, got {agents!r}"
        )
    specs = {n: _agent_spec(n, s, f"{pre}agents.{n}") for n, s in agents.items()}
    delta = _delta(merged.get("delta", 1e-5), f"{pre}delta")
    _check_mechanisms(specs, delta, f"{pre}agents.")
    episodes = _pos_int(merged.get("episodes", 1000), f"{pre}episodes")
    log_every = merged.get("log_every")
    log_every = max(1, episodes // 100) if log_every is None else _pos_int(log_every, f"{pre}log_every")
    name = merged.get("name")
    if name is None:
        name = env["name"] if isinstance(env, Mapping) else getattr(env, "name", f"study{index}")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{pre}name", f"expected a non-empty string, got {name!r}")
    from privrl.experiment.environments import learned_padding

    study = Study(
        name=name,
        env=env,
        agents=specs,
        episodes=episodes,
        seeds=_seeds(merged.get("seeds", [0]), f"{pre}seeds"),
        epsilons=_epsilons(merged.get("epsilons", [math.inf]), f"{pre}epsilons"),
        delta=delta,
        log_every=log_every,
        padding=learned_padding(env),
    )
    _warn_private_agents_without_epsilon(study, pre)
    return study


def _warn_private_agents_without_epsilon(study: Study, pre: str) -> None:
    """A jdp / ldp agent whose epsilons are all inf (the sweep's default list is [inf]) runs only as
    the non-private algorithm: no row of it is private, which a sweep left without its epsilons
    gave without a word."""
    for spec in study.agents.values():
        eps = spec.epsilons or study.epsilons
        if spec.privacy != "none" and not any(math.isfinite(e) for e in eps):
            warnings.warn(
                f"{pre}agents.{spec.name}: privacy = {spec.privacy!r} but its epsilons are "
                f"{[float(e) for e in eps]}: it runs only as the non-private algorithm (epsilon = inf); "
                "give the sweep (or the agent) finite epsilons, e.g. epsilons = [inf, 10, 1] "
                "(privrl run --epsilons inf,10,1)",
                EpsilonWarning,
                stacklevel=stacklevel_outside("privrl"),  # 2 named _study's own line in parsing.py
            )


_GLOBAL_CHECKS = {
    "episodes": _pos_int,
    "seeds": _seeds,
    "epsilons": _epsilons,
    "delta": _delta,
    "log_every": _pos_int,
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


def build_config(raw: Mapping[str, Any]) -> SweepConfig:
    """Validate a config mapping (the parsed TOML, or sweep()'s arguments) into a SweepConfig.

    Top level: episodes, seeds (count or list), epsilons (inf = non-private), delta, log_every,
    n_jobs, backend ("threads" | "processes"), root_seed, outdir, scheduler, format ("auto" |
    "parquet" | "csv"), and either
    env + agents (one study) or [[study]] tables (name, env, agents, and any of the sweep-level
    keys as per-study overrides; ``studies``, as a manifest's "config" records them, is the same).
    Raises ConfigError naming the offending key.
    """
    if not isinstance(raw, Mapping):
        raise ConfigError("", f"a config must be a table, got {type(raw).__name__}")
    raw = studies_as_study(raw)
    _refuse_unknown(raw, _GLOBAL_KEYS, "", "the top level takes ")
    for k, check in _GLOBAL_CHECKS.items():
        if k in raw:  # reported under the top-level key rather than under the first study's
            check(raw[k], k)
    defaults = {k: raw[k] for k in _GLOBAL_CHECKS if k in raw}
    name = raw.get("name", "sweep")
    if not isinstance(name, str) or not name.strip():  # "" made the default outdir privrl-results itself
        raise ConfigError("name", f"expected a non-empty string, got {name!r}")
    if Path(name).is_absolute() or not Path(name).parts or ".." in Path(name).parts:  # ".", "..", "/x"
        raise ConfigError(
            "name", f"must name a folder inside privrl-results/ (privrl run's default outdir), got {name!r}"
        )
    band = raw.get("band", "std")  # the plot's band of `privrl run --plot`
    if not is_choice(band, ("std", "ci95")):
        raise ConfigError("band", f"must be 'std' or 'ci95', got {raw['band']!r}")
    execution = {k: raw[k] for k in EXECUTION_KEYS if k in raw}
    cfg = SweepConfig(studies=_studies(raw, defaults), name=name, raw=dict(raw), **execution)  # checks them
    cfg.runs()  # duplicate run ids are a config error, raised now rather than mid-sweep
    return cfg


def studies_as_study(raw: Mapping[str, Any]) -> dict[str, Any]:
    """`raw` with a top-level ``studies`` (how a results folder's manifest.json records the
    [[study]] tables: its "config") as ``study``, so that the recorded config runs as written."""
    raw = dict(raw)
    if "studies" in raw:
        if "study" in raw:
            raise ConfigError("studies", "give either [[study]] tables or studies (a manifest's), not both")
        raw["study"] = raw.pop("studies")
    return raw


def _read_manifest_config(path: Path) -> dict[str, Any]:
    """The config a results folder's manifest.json records (privrl run OUTDIR/manifest.json reruns
    it: the same run ids)."""
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError("CONFIG", f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(manifest, dict) or not isinstance(manifest.get("config"), dict):
        raise ConfigError(
            "CONFIG", f"{path} is not a privrl manifest (no 'config' table): give a TOML config"
        )
    return studies_as_study(manifest["config"])


def _tomllib() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10: the same parser, packaged as tomli
        import tomli as tomllib
    return tomllib


def read_config(path: str | os.PathLike) -> dict[str, Any]:
    """A TOML config file as a mapping, its `name` defaulting to the file's stem (the command line's
    reading, shared: load_config opened a folder (IsADirectoryError), and an int as a file descriptor);
    a results folder's manifest.json gives the config it records (the same runs, the same run ids)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a path to a TOML config file, got {type(path).__name__}")
    path = Path(path)
    if not path.exists():
        raise ConfigError("CONFIG", f"config file not found: {path}")
    if path.is_dir():
        again = (  # a results folder: its manifest records the config
            f"; it is a results folder: privrl run {path / 'manifest.json'} --out {path} resumes its sweep"
            if (path / "manifest.json").is_file()
            else ""
        )
        raise ConfigError("CONFIG", f"{path} is a folder, not a config file{again}")
    if path.suffix.lower() == ".json":  # a results folder's manifest.json: the config it records
        return _read_manifest_config(path)
    tomllib = _tomllib()
    try:
        raw: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"), parse_float=toml_float)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError("CONFIG", f"{path} is not valid TOML: {exc}") from exc
    except ConfigError as exc:
        raise ConfigError("CONFIG", f"{path}: {exc}") from None
    raw.setdefault("name", path.stem)
    return studies_as_study(raw)


def load_config(path: str | os.PathLike) -> SweepConfig:
    """Read and validate a TOML sweep config (see build_config for the keys)."""
    return build_config(read_config(path))


def toml_float(text: str) -> float:
    """A TOML float literal, refused (ConfigError) where a double cannot hold it: epsilons = 1e400
    was read as inf, a non-private run, where 1e20 is refused, and delta = 1e-400 as 0, pure DP."""
    x, low = float(text), text.lower()
    if (math.isinf(x) and "inf" not in low) or (
        x == 0.0 and any(c in "123456789" for c in low.split("e")[0])
    ):
        raise ConfigError(
            "", f"the number {text} is beyond a double's range, read as {x} (write {x} if meant)"
        )
    return x


def flag_literal(text: str) -> Any:
    """A flag value as a TOML literal (1e-5, inf, true, [1, 2], "x"), else the raw string."""
    try:
        return _tomllib().loads(f"v = {text}", parse_float=toml_float)["v"]
    except ConfigError:
        raise
    except Exception:  # not a TOML literal: a bare word such as jdp or UCRL-VTR
        return text


def flag_list(text: str) -> list:
    text = text.strip()
    if text.startswith("["):
        return flag_literal(text)
    return [flag_literal(t.strip()) for t in text.split(",") if t.strip()]


def top_level_items(text: str) -> list[str]:
    """`text` split at the commas outside brackets and quotes (``epsilons=[1, 10]`` stays one)."""
    items, depth, quote, start = [], 0, "", 0
    for i, c in enumerate(text):
        if quote:
            quote = "" if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        elif c == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return [t.strip() for t in items if t.strip()]
