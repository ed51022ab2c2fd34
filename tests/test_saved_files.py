"""Saved-agent golden files (tests/data/saved, written by tests/data/saved/make.py): bincode carries
no layout information, so a change of an agent's saved state without a FORMAT bump would make an
old file load as garbage. Each file, loaded with today's code, must continue exactly as the agent
it was saved from did (recorded in the JSON next to it); a file of an older FORMAT must be refused
with a SaveFormatError."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

import privrl
from privrl.agents import Agent
from privrl.agents.common import saving
from privrl.agents.common.saving import FORMAT, MAGIC, SaveFormatError

SAVED = Path(__file__).resolve().parent / "data" / "saved"
CURRENT = SAVED / f"format{FORMAT}"
REGENERATE = "run `python tests/data/saved/make.py` (docs: its docstring)"


def _make():
    spec = importlib.util.spec_from_file_location("privrl_saved_make", SAVED / "make.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKE = _make()
NAMES = sorted(MAKE.cases())


def _at_this_version(src: Path, tmp_path: Path) -> Path:
    """`src` with its header's privrl version set to this one: a file from another privrl version is
    refused on its own (test_saving); what these files pin is the layout under one FORMAT, across
    versions (the header is outside the payload's checksum)."""
    head, _, payload = src.read_bytes()[len(MAGIC) :].partition(b"\n")
    header = {**json.loads(head), "privrl": privrl.__version__}
    out = tmp_path / src.name
    out.write_bytes(MAGIC + json.dumps(header).encode() + b"\n" + payload)
    return out


def test_every_agent_kind_has_a_saved_file_of_the_current_format():
    assert CURRENT.is_dir(), f"no saved files of format {FORMAT} (was FORMAT bumped?): {REGENERATE}"
    assert sorted(p.stem for p in CURRENT.glob("*.privrl")) == NAMES, REGENERATE
    assert sorted(p.stem for p in CURRENT.glob("*.json")) == NAMES, REGENERATE
    total = sum(p.stat().st_size for p in SAVED.rglob("*") if p.is_file())
    assert total < 200_000, f"tests/data/saved holds {total} bytes: keep the saved agents small"


@pytest.mark.parametrize("name", NAMES)
def test_a_saved_file_continues_as_recorded(tmp_path, name):
    """A layout change that still decodes (fields reordered, a field's meaning changed) continues
    differently; one that does not decode is refused. Either fails here until FORMAT is bumped
    and the files regenerated."""
    recorded = json.loads((CURRENT / f"{name}.json").read_text())
    assert recorded["format"] == FORMAT
    agent = Agent.load(_at_this_version(CURRENT / f"{name}.privrl", tmp_path))
    assert agent.label == recorded["agent"]
    assert agent.k == recorded["saved_after"]
    got = MAKE.continuation(agent)
    want = {k: recorded[k] for k in got}
    assert got == want, (
        f"{name}: a file saved at format {FORMAT} no longer continues as it did: the saved state's "
        f"layout changed; bump FORMAT in privrl/agents/common/saving.py and {REGENERATE}"
    )


@pytest.mark.parametrize("name", NAMES[:3])
def test_a_format_bump_refuses_the_old_files(tmp_path, monkeypatch, name):
    """Simulated: with FORMAT one higher, today's files are refused at load, saying which format
    the file has and which this privrl reads."""
    path = _at_this_version(CURRENT / f"{name}.privrl", tmp_path)
    monkeypatch.setattr(saving, "FORMAT", FORMAT + 1)
    with pytest.raises(SaveFormatError, match=rf"save format {FORMAT}\b.* reads format {FORMAT + 1}\b"):
        Agent.load(path)


def test_files_of_older_formats_are_refused(tmp_path):
    older = [p for p in SAVED.glob("format*/*.privrl") if p.parent != CURRENT]
    for path in older:
        m = re.fullmatch(r"format(\d+)", path.parent.name)
        assert m and int(m[1]) < FORMAT, path
        old = int(m[1])
        with pytest.raises(SaveFormatError, match=rf"save format {old}\b"):
            Agent.load(_at_this_version(path, tmp_path))
