"""What a loaded agent must look like (Agent.load, privrl.agents.common.saving): the attributes
today's code gives an agent of its class (``_SAVED``), a Rust agent of its kind (``_SAVED_CORE``),
its parts of the types the code reads, and privrl's dataclasses (calibrations, privacy models,
release plans, guards) with exactly their fields. A file whose checksum was recomputed after its
Python part was edited (an attribute renamed) loaded, then failed later (``privacy_report()``
raised AttributeError); it is now refused at load. Imports nothing of the agents' modules (the
classes declare what they save), so that saving stays below them."""

from __future__ import annotations

import dataclasses
from typing import Any

from privrl.common.kinds import is_index, is_real

__all__ = ["saved_shape_problem"]


def _environment_bases() -> tuple[type, ...]:
    """privrl's environment base classes: what an agent's environment is saved as, and rebuilt from."""
    from privrl.envs.bandit import ContextualBandit
    from privrl.envs.features import FeatureMap
    from privrl.envs.finite import FiniteMDP

    return (FiniteMDP, FeatureMap, ContextualBandit)


def _ours(cls: type) -> bool:
    return cls.__module__ == "privrl" or cls.__module__.startswith("privrl.")


def _dataclass_problem(obj: Any, where: str, seen: set[int]) -> str | None:
    """The first privrl dataclass reachable from `obj` (through containers and dataclasses) whose
    attributes are not exactly its fields."""
    if id(obj) in seen:
        return None
    seen.add(id(obj))
    if isinstance(obj, (list, tuple)):
        items: Any = enumerate(obj)
    elif isinstance(obj, dict):
        items = obj.items()
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type) and _ours(type(obj)):
        state = getattr(obj, "__dict__", None)
        if not isinstance(state, dict):
            return f"{where} ({type(obj).__name__}) has no attributes"
        want = {f.name for f in dataclasses.fields(obj)}
        if set(state) != want:
            return _differ(f"{where} ({type(obj).__name__})", set(state), want)
        items = ((f.name, state[f.name]) for f in dataclasses.fields(obj))
    else:
        return None
    for key, value in items:
        sub = (
            f"{where}.{key}"
            if isinstance(key, str) and dataclasses.is_dataclass(obj)
            else f"{where}[{key!r}]"
        )
        problem = _dataclass_problem(value, sub, seen)
        if problem:
            return problem
    return None


def _differ(what: str, got: set[str], want: set[str]) -> str:
    parts = []
    if want - got:
        parts.append(f"lacks {', '.join(sorted(want - got))}")
    if got - want:
        parts.append(f"has unknown {', '.join(sorted(got - want))}")
    return f"{what} {' and '.join(parts)}"


def _type_problem(agent: Any, core: str) -> str | None:
    """The first of the agent's attributes that is not of the type the code reads."""
    from privrl.privacy.common import Calibration
    from privrl.privacy.models import JointDP, LocalDP, NonPrivate

    state = vars(agent)
    kind = type(state["_core"])
    guards = state["guards"]
    checks: list[tuple[str, bool, str]] = [
        ("_core", kind.__module__ == "privrl._core" and kind.__name__ == core, f"a privrl._core.{core}"),
        ("env", isinstance(state["env"], _environment_bases()), "a privrl environment"),
        ("privacy", isinstance(state["privacy"], (NonPrivate, JointDP, LocalDP)), "a privacy model"),
        ("calibration", isinstance(state["calibration"], Calibration), "a Calibration"),
        (
            "guards",
            isinstance(guards, dict)
            and all(isinstance(k, str) and type(g).__name__ == "SensitivityGuard" for k, g in guards.items())
            and all(_ours(type(g)) for g in guards.values()),
            "a dict of SensitivityGuard",
        ),
        *((name, is_index(state[name]), "an integer") for name in ("K", "H", "S", "A", "d")),
        *((name, isinstance(state[name], str), "a string") for name in ("ties", "exploration")),
        ("beta_scale", is_real(state["beta_scale"]), "a number"),
        ("beta", is_real(state["beta"]), "a number"),
    ]
    for name, ok, what in checks:
        if not ok:
            return f"its {name} is a {type(state[name]).__name__}, not {what}"
    return None


def saved_shape_problem(agent: Any) -> str | None:
    """Why a loaded `agent` is not what privrl saves (None when it is)."""
    cls = type(agent)
    want = getattr(cls, "_SAVED", None)
    core = getattr(cls, "_SAVED_CORE", "")
    state = getattr(agent, "__dict__", None)
    if not isinstance(want, frozenset) or not core or not isinstance(state, dict):
        return f"a {cls.__name__} is not a saved agent"
    if set(state) != want:
        return _differ(f"the saved {cls.__name__}", set(state), set(want))
    problem = _type_problem(agent, core)
    if problem:
        return f"the saved {cls.__name__}: {problem}"
    seen: set[int] = set()
    for name, value in state.items():
        problem = (
            None if name in ("env", "_core") else _dataclass_problem(value, f"{cls.__name__}.{name}", seen)
        )
        if problem:
            return problem
    return None
