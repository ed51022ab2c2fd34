"""The layout rules (issues 10 and 20): no Python module over 600 lines, no Rust file over 800 (a module
that grows past them is split by concern, not trimmed by hand); folders map the architecture: no
Python file imports a file of a folder above it (the package's lazy facade aside), and no import
circles, within a folder or across folders (every import counts, lazy ones inside functions too)."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "python"

LIMITS = [("python/privrl", "*.py", 600), ("rust", "*.rs", 800)]


@pytest.mark.parametrize(("folder", "pattern", "limit"), LIMITS)
def test_no_file_over_the_limit(folder, pattern, limit):
    files = sorted((ROOT / folder).rglob(pattern))
    assert files
    too_long = {str(f.relative_to(ROOT)): n for f in files if (n := len(f.read_text().splitlines())) > limit}
    assert not too_long, f"over {limit} lines: {too_long}"


def _modules() -> dict[str, Path]:
    out = {}
    for f in (PKG / "privrl").rglob("*.py"):
        name = ".".join(f.relative_to(PKG).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = f
    return out


def _imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Every privrl module each module imports (any scope), resolved to the module that holds it."""

    def resolve(name: str) -> str | None:
        parts = name.split(".")
        for i in range(len(parts), 0, -1):
            if ".".join(parts[:i]) in mods:
                return ".".join(parts[:i])
        return None

    edges: dict[str, set[str]] = {}
    for m, path in mods.items():
        package = m if path.name == "__init__.py" else m.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {r for a in node.names if (r := resolve(a.name))}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                for a in node.names:
                    r = resolve(f"{base}.{a.name}") or resolve(base)
                    if r:
                        found.add(r)
        edges[m] = found - {m}
    return edges


def test_no_file_imports_a_folder_above_it():
    mods = _modules()
    upward = []
    for m, targets in _imports(mods).items():
        here = mods[m].parent
        for t in targets:
            there = mods[t].parent
            facade = t == "privrl"
            if not facade and mods[t].name != "__init__.py" and here != there and there in here.parents:
                upward.append(f"{m} -> {t}")
    assert not upward, upward


def test_no_import_circles():
    edges = _imports(_modules())
    edges["privrl"] = set()  # the lazy facade imports nothing at import time (TYPE_CHECKING only)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    assert not circles, circles


def test_no_rust_module_circles():
    """Rust files of different folders do not use each other both ways (the tree lives in continual/)."""
    uses: dict[str, set[str]] = {}
    for f in (ROOT / "rust").rglob("*.rs"):
        rel = f.relative_to(ROOT / "rust")
        folder = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        code = "\n".join(line.split("//")[0] for line in f.read_text().splitlines())  # not the doc links
        uses.setdefault(folder, set()).update(m for m in re.findall(r"crate::(\w+)", code) if m != folder)
    both = sorted({tuple(sorted((a, b))) for a, bs in uses.items() for b in bs if a in uses.get(b, ())})
    assert not both, both
