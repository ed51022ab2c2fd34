"""What a sweep config names: the algorithms and environments it may use (registered by name, case and
punctuation insensitive), and the environment and privacy model of a run built from plain data."""

from __future__ import annotations

import importlib
import inspect
import math
import re
from collections.abc import Mapping
from typing import Any

from privrl.common.checks import did_you_mean
from privrl.common.errors import ConfigError

# Algorithms by canonical name -> (module, class). Resolved on first use, so an algorithm whose
# module is not installed (yet) only fails a config that asks for it.
ALGORITHMS: dict[str, tuple[str, str]] = {
    "UCRL-VTR": ("privrl.agents.ucrl_vtr.agent", "UCRLVTR"),
    "UCRL-VTR+": ("privrl.agents.ucrl_vtr_plus.agent", "UCRLVTRPlus"),
    "LSVI-UCB": ("privrl.agents.lsvi_ucb.agent", "LSVIUCB"),
    "LinUCB": ("privrl.agents.linucb.agent", "LinUCB"),
    "PSRL": ("privrl.agents.psrl.agent", "PSRL"),
}

#: The options an algorithm has no use for, which the command line's --mechanism / --exploration
#: flags do not fill in for its agents (an agent that sets one itself is refused by the agent):
#: PSRL noises each batch's increment once (no continual-release mechanism) and always samples.
UNUSED_FLAGS: dict[str, frozenset[str]] = {"PSRL": frozenset({"mechanism", "exploration"})}

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
    "ClassificationBandit": ("privrl.envs.datasets", "classification_bandit"),
}

#: The registered environments whose model is drawn from ``seed`` (privrl.common.checks.model_seed):
#: seed = None draws a new model from OS entropy at every construction. A sweep draws that seed
#: once per study when its config is built (parsing._env), so its runs share one model and the
#: manifest records it.
DRAWN_FROM_SEED = frozenset(
    {"HardToLearn", "RandomLinearMixtureMDP", "RandomLinearMDP", "SyntheticLinearMDP"}
)


def _canon(name: str) -> str:
    return re.sub(r"[^a-z0-9+]", "", name.lower())


def _lookup(registry: Mapping[str, Any], name: Any, key: str, what: str) -> str:
    if not isinstance(name, str) or not name:
        raise ConfigError(key, f"{what} must be a non-empty string, got {name!r}")
    table = {_canon(k): k for k in registry}
    if _canon(name) not in table:
        raise ConfigError(
            key, f"unknown {what} {name!r}; {did_you_mean(name, registry)}known: {', '.join(registry)}"
        )
    return table[_canon(name)]


def _import(registry: Mapping[str, tuple[str, str]], name: str, key: str, what: str) -> Any:
    module, attr = registry[name]
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(
            key, f"{what} {name!r} is not available in this privrl install ({module}.{attr}: {exc})"
        ) from exc


def flag_targets(
    agents: list[dict[str, Any]], flag: str, key: str, kinds: tuple[str, ...], privacy: Mapping[str, str]
) -> list[dict[str, Any]]:
    """The agent specs a command-line flag (--mechanism, ...) fills `key` in for: those of a
    privacy kind in `kinds` (``privacy`` maps its spellings) whose algorithm has a use for it
    (:data:`UNUSED_FLAGS`); none is a ConfigError naming `flag`."""
    of_kind = [a for a in agents if privacy.get(str(a.get("privacy", "jdp")).lower()) in kinds]
    if not of_kind:
        raise ConfigError(flag, f"no {' or '.join(kinds)} agent among the --agent agents to apply it to")
    unused = {_canon(k): k for k, keys in UNUSED_FLAGS.items() if key in keys}
    targets = [a for a in of_kind if _canon(str(a.get("algorithm", ""))) not in unused]
    if not targets:
        names = ", ".join(sorted({unused[_canon(str(a.get("algorithm", "")))] for a in of_kind}))
        raise ConfigError(flag, f"no --agent agent uses it: {names} takes no {key}")
    return targets


def resolve_algorithm(name: str, key: str = "algorithm") -> type:
    """The agent class registered under `name` (case and punctuation insensitive)."""
    return _import(ALGORITHMS, _lookup(ALGORITHMS, name, key, "algorithm"), key, "algorithm")


def make_env(spec: Mapping[str, Any]) -> Any:
    """Build the environment a spec names (runs inside workers, so specs must be plain data)."""
    spec = dict(spec)
    name = spec.pop("name")
    cls = _import(ENVIRONMENTS, name, "env.name", "environment")
    params = inspect.signature(cls).parameters
    for k, v in spec.items():
        want = str(params[k].annotation) if k in params else ""
        if want in ("int", "float") and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise ConfigError(
                f"env.{k}", f"expected {'an integer' if want == 'int' else 'a number'}, got {v!r}"
            )
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
    """The privacy model of a run: epsilon = inf (or kind none) is NonPrivate with the regret side
    of the calibration (its eps -> inf member; the default "adaptive"); calibration "adaptive",
    "practical", "tight" or "paper" (privrl.privacy.models) for JDP / LDP; mechanism (JDP only) the
    continual release of the server's sums (the calibration's default unless given); sampler
    "discrete" / "float" (the privacy model's default unless given)."""
    from privrl.privacy import JointDP, LocalDP, NonPrivate

    extra: dict[str, Any] = {} if p is None else {"p": p}
    if kind == "none" or math.isinf(epsilon):
        # the regret side of a private calibration defines its eps = inf member; "tight" has no
        # noise to tighten and is "paper"'s
        rule = {None: "adaptive", "tight": "paper"}.get(calibration, calibration or "adaptive")
        return NonPrivate(p=extra.get("p", 0.05), calibration=rule)
    if calibration is not None:
        extra["calibration"] = calibration
    if sampler is not None:
        extra["sampler"] = sampler
    if kind == "ldp":
        return LocalDP(epsilon, delta, **extra)
    if mechanism is not None:
        extra["mechanism"] = mechanism
    return JointDP(epsilon, delta, **extra)
