"""Every Python block of README.md and docs/*.md runs as pasted: saved to a file and run as a
script in a fresh folder (issue 13: blocks were not self-contained, and a sweep with n_jobs > 1
needs the __main__ guard in a script)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCKS = [
    pytest.param(code, id=f"{doc.name}:{i}")
    for doc in DOCS
    for i, code in enumerate(re.findall(r"^```python\n(.*?)^```", doc.read_text(), re.S | re.M))
]


def test_the_docs_have_python_blocks():
    assert len(BLOCKS) >= 5


@pytest.mark.slow
@pytest.mark.parametrize("code", BLOCKS)
def test_block_runs_as_a_script(code, tmp_path):
    (tmp_path / "example.py").write_text(code)
    res = subprocess.run(
        [sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, res.stderr[-3000:]
