"""The names README.md and docs/*.md quote are the API's: every dotted `privrl.x.y` resolves, and
the README's Errors section lists every exception and warning privrl.exceptions exports (and none it
lacks), which is every one privrl defines."""

import ast
import builtins
import importlib
import re
from pathlib import Path

import pytest

import privrl.exceptions

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _dotted() -> list[tuple[str, str]]:
    out = set()
    for doc in DOCS:
        for span in re.findall(r"`([^`]+)`", doc.read_text()):
            for name in re.findall(r"\bprivrl(?:\.[A-Za-z_]\w*)+", span):
                out.add((doc.name, name))
    return sorted(out)


DOTTED = _dotted()


def _resolve(name: str) -> object:
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(name)


def test_the_docs_quote_dotted_names():
    assert len(DOTTED) >= 50


@pytest.mark.parametrize(("doc", "name"), DOTTED, ids=[f"{d}:{n}" for d, n in DOTTED])
def test_dotted_name_resolves(doc, name):
    try:
        _resolve(name)
    except (ImportError, AttributeError) as e:
        pytest.fail(f"{doc} quotes `{name}`, which does not exist ({e})")


def _errors_section() -> str:
    text = (ROOT / "README.md").read_text()
    return text.split("\n## Errors\n", 1)[1].split("\n## ", 1)[0]


def test_readme_errors_section_lists_every_exception():
    section = _errors_section()
    named = set(re.findall(r"`(\w+Error)`", section))
    exported = {n for n in privrl.exceptions.__all__ if n.endswith("Error")}
    assert exported
    assert exported <= named, f"not in README's Errors section: {sorted(exported - named)}"
    unknown = {n for n in named - exported if not hasattr(builtins, n)}
    assert not unknown, f"README's Errors section names {sorted(unknown)}, not in privrl.exceptions"


def test_readme_errors_section_lists_every_warning():
    section = _errors_section()
    named = set(re.findall(r"`(\w+Warning)`", section)) - {"UserWarning"}
    exported = {n for n in privrl.exceptions.__all__ if n.endswith("Warning")}
    assert exported and exported == named, (sorted(exported - named), sorted(named - exported))


def test_privrl_exceptions_exports_every_exception_and_warning_privrl_defines():
    """A user filtering a warning imports it from privrl.exceptions (SensitivityWarning lived in
    privrl.agents only)."""
    defined = set()
    for path in (ROOT / "python" / "privrl").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and re.search(r"(Error|Warning)$", node.name):
                defined.add(node.name)
    assert {"SensitivityWarning", "ScheduleWarning", "ShapeError"} <= defined
    assert defined <= set(privrl.exceptions.__all__), sorted(defined - set(privrl.exceptions.__all__))


# paths the docs name as gone (benchmarks.md: "the removed episode engine (`rust/engine/`, ...)")
REMOVED = {"rust/engine"}


def _paths() -> list:
    out = set()
    for doc in DOCS:
        pattern = r"(?<![\w/])((?:rust|tests|benches|python|docs)/[\w./-]*\w)(?:::(\w+))?"
        for path, test in re.findall(pattern, doc.read_text()):
            if "<" not in path and path not in REMOVED:
                out.add((doc.name, path, test))
    return sorted(out)


PATHS = _paths()


def test_the_docs_name_repository_files():
    assert len(PATHS) >= 40 and any(test for _, _, test in PATHS)


@pytest.mark.parametrize(("doc", "path", "test"), PATHS, ids=[f"{d}:{p}::{t}" for d, p, t in PATHS])
def test_quoted_file_and_test_exist(doc, path, test):
    """A file the docs point to (rust/agents/vtr.rs, tests/test_plans.py, benches/family.py, ...)
    exists, and a test they name by tests/file.py::name (or a Rust fn by rust/file.rs::name) is in it."""
    target = ROOT / path
    assert target.exists(), f"{doc} names {path}, which does not exist"
    if test:
        assert re.search(rf"\b(def|fn) {test}\b", target.read_text()), f"{doc}: no {test} in {path}"


def test_documented_results_columns_are_the_tables(tmp_path):
    """README's "Columns:" line and docs/harness.md's results-table rows name exactly the columns
    of a sweep's table, in the README's order; the folder holds the files both list."""
    from privrl.experiment import sweep

    readme = (ROOT / "README.md").read_text()
    line = readme.split("\nColumns: ", 1)[1].split(".\n", 1)[0]
    listed = [c for part in re.findall(r"`([^`]+)`", line) for c in part.split(", ")]
    harness = (ROOT / "docs" / "harness.md").read_text().split("### Results table", 1)[1]
    rows = re.findall(r"^\| (`[^|]+) \|", harness.split("\n## ", 1)[0], re.M)
    in_table = [c for row in rows for c in re.findall(r"`(\w+)`", row)]
    df, _ = sweep(
        env={"name": "RiverSwimMixture", "S": 3, "H": 3},
        agents={"J": {"algorithm": "UCRL-VTR", "privacy": "jdp"}},
        epsilons=[1.0],
        episodes=5,
        outdir=tmp_path / "out",
        format="csv",
    )
    assert listed == list(df.columns)
    assert sorted(in_table) == sorted(df.columns)
    files = {p.name for p in (tmp_path / "out").iterdir()}
    assert {"manifest.json", "results.csv", "runs"} <= files
    run_files = {p.suffix for p in (tmp_path / "out" / "runs").iterdir()}
    assert run_files == {".csv", ".json"}


def test_every_config_key_is_documented():
    """Each top-level, [[study]] and agent-spec key a sweep config accepts is named in
    docs/harness.md (as `key`, **key** or in its TOML example); `description` was accepted and
    named nowhere."""
    from privrl.experiment.config import _GLOBAL_KEYS, _SPEC_KEYS, _STUDY_KEYS

    text = (ROOT / "docs" / "harness.md").read_text()
    keys = set(_GLOBAL_KEYS) | set(_STUDY_KEYS) | set(_SPEC_KEYS)
    assert {"band", "description", "epsilons", "sampler"} <= keys
    missing = sorted(
        k for k in keys if not re.search(rf"`{k}\b|\*\*{k}\*\*|^(# )?{k} = |\[{k}\]|\[\[{k}\]\]", text, re.M)
    )
    assert not missing, f"config keys docs/harness.md does not name: {missing}"


def test_a_bare_import_gives_the_subpackages_the_docs_name():
    """The README writes `privrl.exceptions.PrivrlError`, `privrl.envs.FeatureMap(phi, H)`,
    `privrl.experiment.partial_result(exc)`; after a bare `import privrl` each was an AttributeError
    (so `except privrl.exceptions.PrivrlError:` raised AttributeError over the error it meant to
    catch). They import on first use; `import privrl` alone still imports none of them."""
    import subprocess
    import sys

    code = (
        "import sys, privrl\n"
        "assert not any(m.startswith('privrl.') for m in sys.modules), sorted(sys.modules)\n"
        "try:\n"
        "    privrl.run(None, None)\n"
        "except privrl.exceptions.PrivrlError:\n"
        "    raise SystemExit('not a PrivrlError')\n"
        "except TypeError:\n"
        "    pass\n"
        "for name in ('agents', 'audit', 'common', 'envs', 'experiment', 'kernels', 'privacy'):\n"
        "    assert getattr(privrl, name).__name__ == 'privrl.' + name\n"
        "assert privrl.envs.FeatureMap and privrl.experiment.partial_result\n"
        "try:\n"
        "    privrl.nothing\n"
        "except AttributeError as e:\n"
        "    assert 'nothing' in str(e)\n"
        "else:\n"
        "    raise SystemExit('privrl.nothing did not raise')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def _raised(call):
    try:
        call()
    except Exception as exc:  # the class is what is compared
        return exc
    raise AssertionError("accepted a string size")


def test_the_errors_section_names_the_class_a_string_size_raises():
    """README's Errors section said a string where a number goes raises PrivacyParameterError
    or, for an environment's size, AssumptionError; a feature map's sizes raise ShapeError
    (pinned in tests/test_envs.py), frozen_lake's H PrivacyParameterError, a sweep config's
    ConfigError. Each entry point given "10" must raise the class the README names nearest before
    it in that section, and its message must quote '10'."""
    import numpy as np

    import privrl
    import privrl.envs as e
    from privrl.agents import LSVIUCB, PSRL
    from privrl.experiment import build_config
    from privrl.privacy import JointDP

    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Errors") :]
    section = section[: section.index("SaveFormatError")]
    classes = ("AssumptionError", "ShapeError", "ConfigError", "PrivacyParameterError")
    fm = e.FeatureMap.one_hot(3, 2, 4)
    rs = e.RiverSwim(S=4, H=3)
    lin = e.RandomLinearMDP(S=4, A=2, d=3, H=2)
    sweep = {"env": {"name": "riverswim"}, "agents": {"a": {"algorithm": "PSRL"}}}
    cases = [
        ("`RiverSwim(S=...)`", lambda: e.RiverSwim(S="10")),
        ("`RiverSwimMixture(S=...)`", lambda: e.RiverSwimMixture(S="10")),
        ("`RandomLinearMDP(S=..., A=..., d=..., H=...)`", lambda: e.RandomLinearMDP(d="10")),
        ("`HardToLearn(d=..., H=..., K=...)`", lambda: e.HardToLearn(d=4, H=3, K="10")),
        ("`FeatureMap(features, H=...)`", lambda: e.FeatureMap(np.zeros((3, 2, 4)), H="10")),
        ("`FeatureMap.one_hot(S, A, H)`", lambda: e.FeatureMap.one_hot(3, "10", 4)),
        ("`log_every`)", lambda: build_config({**sweep, "episodes": "10"})),
        ("`log_every`)", lambda: build_config({**sweep, "seeds": "10"})),
        ("`schedule`;", lambda: PSRL(fm, episodes="10")),
        ("`schedule`;", lambda: PSRL(fm, m="10")),
        ("`schedule`;", lambda: LSVIUCB(lin, JointDP(1.0, 1e-5), batches="10")),
        ("`evaluate`;", lambda: privrl.run(PSRL(rs, episodes=10), rs, episodes="10")),
        ("`frozen_lake(H=...)`", lambda: pytest.importorskip("gymnasium") and e.frozen_lake(H="10")),
    ]
    for label, call in cases:
        at = section.index(label)
        named = max(classes, key=lambda c: section.rfind(f"`{c}`", 0, at))
        exc = _raised(call)
        assert type(exc).__name__ == named and "'10'" in str(exc), (label, named, exc)
