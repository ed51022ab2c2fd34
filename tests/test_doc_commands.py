"""Every command line README.md and docs/*.md give (bash blocks, indented code, inline `privrl ...`
and `python benches/...` spans) names options its program accepts, and each complete one parses as
written; every `privrl run` of the docs and every TOML example passes the sweep's checks (the
config, its environments and its agents, built before anything runs) without running a user. The
docs' Python blocks are test_doc_examples.py's."""

import argparse
import json
import re
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from privrl.experiment import build_config
from privrl.experiment.cli import _parser, _raw_config, demo_config_text
from privrl.experiment.parsing import _tomllib
from privrl.experiment.preflight import preflight

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# what a usage line writes for a value to fill in; such a line is checked for its option names only
PLACEHOLDER = re.compile(r"^(\.\.\.|[A-Z][A-Z_]*(\.toml)?|[A-Z]+/.*)$")
SHELL_STOP = {">", "2>", "|", "&&", "&", ";", "2>&1"}


def _code_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of each fenced block, fences paired in order (a closing fence is no opening)."""
    blocks, lang, body = [], None, []
    for line in text.splitlines(keepends=True):
        fence = re.match(r"```(\w*)\s*$", line)
        if fence and lang is None:
            lang, body = fence.group(1), []
        elif fence:
            blocks.append((lang, "".join(body)))
            lang = None
        elif lang is not None:
            body.append(line)
    return blocks


def _commands() -> list[tuple[str, str, bool]]:
    """(where, command, from a code block) for every privrl / python benches command of the docs."""
    out = []
    for doc in DOCS:
        text = doc.read_text()
        blocks = [body for lang, body in _code_blocks(text) if lang in ("bash", "sh", "")]
        indented = re.findall(r"^(?: {4}(?:privrl|python) .*\n)+", text, re.M)
        for block in [*blocks, *indented]:
            variables: dict[str, str] = {}  # F="python benches/family.py ..." then $F --envs ...
            for line in block.replace("\\\n", " ").splitlines():
                line = line.strip().removeprefix("$ ")
                if assign := re.fullmatch(r'(\w+)="([^"]*)"', line):
                    variables[assign.group(1)] = assign.group(2)
                    line = assign.group(2)
                for name, value in variables.items():
                    line = line.replace(f"${name}", value)
                if re.match(r"(privrl|python -m privrl) |python benches/\S", line):
                    out.append((doc.name, line, True))
        prose = "".join(line for line in _prose_lines(text))
        for span in re.findall(r"`([^`]+)`", prose):
            span = " ".join(span.split())
            if re.match(r"(privrl|python -m privrl|(python )?benches/\S+\.py)( |$)", span):
                out.append((doc.name, re.sub(r"^python (?=benches/)", "", span), False))
    return out


def _prose_lines(text: str) -> list[str]:
    """The lines outside fenced blocks."""
    out, inside = [], False
    for line in text.splitlines(keepends=True):
        if re.match(r"```\w*\s*$", line):
            inside = not inside
        elif not inside:
            out.append(line)
    return out


COMMANDS = _commands()


def _argv(command: str) -> tuple[str, list[str]]:
    """The program ('privrl' or a bench script's path) and its arguments, up to any redirection."""
    tokens = []
    for tok in shlex.split(command, comments=True):
        if tok in SHELL_STOP or tok.startswith(("2>", ">")):
            break
        tokens.append(tok)
    if tokens[:3] == ["python", "-m", "privrl"]:
        return "privrl", tokens[3:]
    if tokens[0] == "privrl":
        return "privrl", tokens[1:]
    if tokens[0] == "python":
        tokens = tokens[1:]
    return tokens[0], tokens[1:]


def _unbracket(args: list[str]) -> tuple[list[str], bool]:
    """Usage brackets dropped ([--output fig.png] -> --output fig.png); whether a placeholder remains."""
    flat = [a.strip("[]") for a in args if a.strip("[]")]
    return [a for a in flat if a != "..."], any(PLACEHOLDER.match(a) for a in flat)


def _privrl_subparsers() -> dict[str, argparse.ArgumentParser]:
    ap = _parser()
    (sub,) = [a for a in ap._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return set(parser._option_string_actions)


def _flags(args: list[str]) -> list[str]:
    return [a.split("=")[0] for a in args if re.match(r"--?[A-Za-z]", a)]


PRIVRL = [c for c in COMMANDS if _argv(c[1])[0] == "privrl"]
BENCHES = [c for c in COMMANDS if _argv(c[1])[0] != "privrl"]


def test_the_docs_give_commands():
    assert len(PRIVRL) >= 20 and len(BENCHES) >= 10
    # a code block's command is found with its continuation lines
    assert any("--agent" in c and "--out results/flags" in c for _, c, block in PRIVRL if block)


@pytest.mark.parametrize(("doc", "command", "block"), PRIVRL, ids=[f"{d}:{c[:60]}" for d, c, _ in PRIVRL])
def test_privrl_command_is_accepted(doc, command, block):
    """The subcommand exists and has every option the command uses; a complete command (no
    placeholder) parses as written, from a code block with every value it gives."""
    subs = _privrl_subparsers()
    args, placeholder = _unbracket(_argv(command)[1])
    if not args:  # `privrl` alone: the program's name in a sentence
        return
    assert args[0] in subs, f"{doc}: `{command}`: no subcommand {args[0]!r} (known: {sorted(subs)})"
    unknown = [f for f in _flags(args[1:]) if f not in _options(subs[args[0]])]
    assert not unknown, f"{doc}: `{command}`: privrl {args[0]} has no option {unknown}"
    if block and not placeholder:
        _parser().parse_args(args)  # exits (SystemExit 2) on a value argparse refuses


def _doc_config_files(tmp_path: Path) -> None:
    """The config files the docs' commands name, made as the docs make them."""
    (tmp_path / "my.toml").write_text(demo_config_text())  # privrl demo --print-config > my.toml
    (tmp_path / "demo.toml").write_text(demo_config_text())


def _check_config(raw: dict) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ScheduleWarning etc.: warnings, not refusals
        preflight(build_config(raw))


RUNS = [c for c in PRIVRL if c[2] and _argv(c[1])[1][:1] == ["run"] and not _unbracket(_argv(c[1])[1])[1]]


@pytest.mark.parametrize(("doc", "command", "block"), RUNS, ids=[f"{d}:{c[:60]}" for d, c, _ in RUNS])
def test_privrl_run_command_passes_the_sweep_checks(doc, command, block, tmp_path, monkeypatch):
    """Its config (file and flags) builds, and every agent of it is built as its runs build it."""
    monkeypatch.chdir(tmp_path)
    _doc_config_files(tmp_path)
    args = _parser().parse_args(_argv(command)[1])
    if args.scheduler is not None:  # the Dask cluster is the user's; the config is checked without it
        args.scheduler = None
    _check_config(_raw_config(args))


TOMLS = [
    pytest.param(block, id=f"{doc.name}:{i}")
    for doc in DOCS
    for i, block in enumerate(re.findall(r"^```toml\n(.*?)^```", doc.read_text(), re.S | re.M))
]


@pytest.mark.parametrize("block", TOMLS)
def test_toml_example_passes_the_sweep_checks(block):
    raw = _tomllib().loads(block)
    env = raw.get("env", {})
    if isinstance(env, dict) and env.get("name") == "gymnasium":
        pytest.importorskip("gymnasium")
    _check_config(raw)


def test_the_docs_have_toml_examples():
    assert len(TOMLS) >= 2


# A bench script builds its parser inside main(); this runs the script up to its parse_args call
# (nothing of the bench itself runs) and parses each command's arguments with that parser.
_PROBE = r"""
import argparse, json, runpy, sys
script, cases = sys.argv[1], json.loads(sys.argv[2])
class Parsed(Exception):
    pass
def grab(self, *a, **k):
    raise Parsed(self)
original = argparse.ArgumentParser.parse_args
argparse.ArgumentParser.parse_args = grab
sys.argv = [script]
try:
    runpy.run_path(script, run_name="__main__")
    raise SystemExit("the script never parsed its arguments")
except Parsed as p:
    parser = p.args[0]
argparse.ArgumentParser.parse_args = original
out = {"options": sorted(parser._option_string_actions), "errors": []}
for args in cases:
    try:
        parser.parse_args(args)
    except SystemExit:
        out["errors"].append(args)
print(json.dumps(out))
"""


def _bench_cases() -> dict[str, list[tuple[str, str, list[str], bool]]]:
    by_script: dict[str, list] = {}
    for doc, command, block in BENCHES:
        script, args = _argv(command)
        flat, placeholder = _unbracket(args)
        by_script.setdefault(script, []).append((doc, command, flat, block and not placeholder))
    return by_script


BENCH_SCRIPTS = sorted(_bench_cases())


@pytest.mark.parametrize("script", BENCH_SCRIPTS)
def test_bench_command_is_accepted(script):
    """The script exists, has every option the docs use with it, and a complete command parses."""
    assert (ROOT / script).is_file(), f"no {script}"
    cases = _bench_cases()[script]
    full = [args for _, _, args, complete in cases if complete]
    res = subprocess.run(
        [sys.executable, "-c", _PROBE, str(ROOT / script), json.dumps(full)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    probe = json.loads(res.stdout.strip().splitlines()[-1])
    for doc, command, args, _ in cases:
        unknown = [f for f in _flags(args) if f not in probe["options"]]
        assert not unknown, f"{doc}: `{command}`: {script} has no option {unknown}"
    assert not probe["errors"], f"{script} refuses {probe['errors']}: {res.stderr[-2000:]}"


@pytest.mark.parametrize("sub", ["run", "demo", "plot", "report"])
def test_every_option_of_a_privrl_subcommand_is_documented(sub):
    """The reverse check: an option added to the CLI is named in the docs, as `--name` in docs/harness.md
    (the command line's page) or the README."""
    text = (ROOT / "docs" / "harness.md").read_text() + (ROOT / "README.md").read_text()
    options = {o for o in _options(_privrl_subparsers()[sub]) if o.startswith("--") and o != "--help"}
    assert options
    missing = sorted(o for o in options if not re.search(re.escape(o) + r"(?![\w-])", text))
    assert not missing, f"privrl {sub}: undocumented {missing}"


def _env_tables() -> list:
    out = []
    for doc in DOCS:
        for span in re.findall(r"`([^`]*)`", doc.read_text()):
            span = " ".join(span.split()).removeprefix("env = ")
            if re.match(r"\{ ?name = ", span) and "..." not in span:
                out.append(pytest.param(span, id=f"{doc.name}:{span[:50]}"))
    return out


ENV_TABLES = _env_tables()
MIXTURES = {"HardToLearn", "RandomLinearMixtureMDP", "RiverSwimMixture"}


def test_the_docs_give_env_tables():
    assert len(ENV_TABLES) >= 8


@pytest.mark.parametrize("table", ENV_TABLES)
def test_env_table_in_prose_passes_the_sweep_checks(table):
    """An inline `env = {...}` of the docs is a sweep's env as written (an agent of the algorithm it is
    for built on it, K = 10)."""
    env = _tomllib().loads(f"env = {table}")["env"]
    if env["name"] == "gymnasium" or env["name"] == "FrozenLake":
        pytest.importorskip("gymnasium")
    if env["name"] == "ClassificationBandit":
        pytest.importorskip("sklearn")
    algorithm = (
        "LinUCB"
        if env["name"] == "ClassificationBandit"
        else "UCRL-VTR"
        if env["name"] in MIXTURES
        else "LSVI-UCB"
    )
    _check_config({"env": env, "agents": {"a": {"algorithm": algorithm}}, "episodes": 10, "epsilons": [1.0]})
