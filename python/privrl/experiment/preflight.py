"""The checks a sweep makes before anything is written: every study's environment builds and every
agent is built once per epsilon as its runs build it (build_agent), so that a bad option is a
ConfigError naming it, not a failed run mid-sweep."""

from __future__ import annotations

import warnings
from typing import Any

from privrl.common.errors import PrivrlError
from privrl.common.memory import refuse_over_memory
from privrl.experiment.config import (
    _SPEC_KEYS,
    ConfigError,
    RunSpec,
    SweepConfig,
    make_env,
    make_privacy,
    resolve_algorithm,
)

__all__ = ["agent_env", "build_agent", "preflight"]

LOG_LESS = "Keep fewer rows: a larger log_every (default: K / 100, a hundred rows a run)."


def agent_env(env: Any) -> Any:
    """What an agent is built on: the environment itself, or the feature map of a gymnasium
    environment learned by interaction (privrl.experiment.environments.GymnasiumTask)."""
    from privrl.experiment.environments import GymnasiumTask

    return env.features if isinstance(env, GymnasiumTask) else env


def build_agent(spec: RunSpec, env: Any, seed: Any) -> Any:
    """The agent of one run: the spec's algorithm on `env`, with the spec's privacy model and
    constructor options (the one place a run's agent is built: by execute_run, and by preflight
    before anything runs, so that the agent's own checks refuse a bad option up front)."""
    cls = resolve_algorithm(spec.algorithm)
    privacy = make_privacy(
        spec.privacy, spec.epsilon, spec.delta, spec.p, spec.calibration, spec.mechanism, spec.sampler
    )
    return cls(agent_env(env), privacy, episodes=spec.episodes, seed=seed, **dict(spec.options))


def preflight(config: SweepConfig) -> None:
    """What parsing cannot see and a run would only find mid-sweep, checked before anything is
    written: each study's environment builds (its arguments are valid), each agent's algorithm
    runs on it (UCRL-VTR needs a linear-mixture MDP, LSVI-UCB a linear MDP), and each agent is
    built once per epsilon as its runs build it (build_agent), so that its own checks refuse a bad
    option (exploration, batches, LocalDP on LSVI-UCB, ...) as a ConfigError naming the option."""
    # the runs' tables, a row per logged episode (16 numbers with its bookkeeping; all of them in
    # the merged table): K = 10^9 at log_every = 1 grew past 15 GiB in 25 s, before any run refused
    rows = sum(-(-r.episodes // r.log_every) for r in config.runs())  # every log_every-th and the last
    refuse_over_memory(
        "the sweep", 16.0 * rows, f"{rows:,} table rows (every log_every-th episode of its runs)", LOG_LESS
    )
    for i, study in enumerate(config.studies):
        key = f"study[{i}]." if len(config.studies) > 1 else ""
        env = study.env
        if study.env_spec is not None:
            try:
                env = make_env(study.env_spec)
            except ConfigError as exc:
                raise ConfigError(f"{key}{exc.key}", str(exc).removeprefix(f"{exc.key}: ")) from None
            except (ValueError, TypeError) as exc:  # the name once (it was "env: X: X needs ...")
                text, name = str(exc), study.env_spec["name"]
                raise ConfigError(f"{key}env", text if text.startswith(name) else f"{name}: {text}") from exc
        for name, spec in study.agents.items():
            cls = resolve_algorithm(spec.algorithm, f"{key}agents.{name}.algorithm")
            accepts = getattr(cls, "accepts", None)
            reason = accepts(agent_env(env)) if accepts is not None else None
            if reason is not None and agent_env(env) is not env:
                reason += (
                    " (a study with model = false gives agents the one-hot FeatureMap: LSVI-UCB runs on it, "
                    "PSRL too)"
                )
            if reason is not None:
                raise ConfigError(f"{key}agents.{name}.algorithm", reason)
        built = set()
        for run in study.runs(config.root_seed):
            if (run.agent, run.epsilon) not in built:  # the seeds build the same agent
                built.add((run.agent, run.epsilon))
                _check_agent(run, env, f"{key}agents.{run.agent}")


def _check_agent(spec: RunSpec, env: Any, key: str) -> None:
    """Build the agent of `spec` (warnings silenced: the runs give them); a bad option's error becomes
    ConfigError("<key>.<option>: ...") (the option it starts with; a privacy model's name: privacy)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            build_agent(spec, env, seed=0)
    except (PrivrlError, ValueError, TypeError) as exc:
        message = str(exc)
        first, _, rest = message.partition(" ")
        if first in dict(spec.options) or first in _SPEC_KEYS:
            raise ConfigError(f"{key}.{first}", rest) from exc
        if first in ("NonPrivate", "JointDP", "LocalDP"):
            raise ConfigError(f"{key}.privacy", message) from exc
        raise ConfigError(key, message) from exc
