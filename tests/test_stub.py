"""The hand-written stub privrl/_core.pyi matches the compiled module (mypy.stubtest)."""

import subprocess
import sys

import pytest


@pytest.mark.slow  # mypy.stubtest in a subprocess
def test_core_stub_matches_runtime():
    pytest.importorskip("mypy")
    out = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "privrl._core"], capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
