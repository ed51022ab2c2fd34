"""The layout rule of issue 10: no Python module over 700 lines, no Rust file over 900 (a module
that grows past them is split by concern, not trimmed by hand at release time)."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


LIMITS = [("python/privrl", "*.py", 700), ("rust", "*.rs", 900)]


@pytest.mark.parametrize(("folder", "pattern", "limit"), LIMITS)
def test_no_file_over_the_limit(folder, pattern, limit):
    files = sorted((ROOT / folder).rglob(pattern))
    assert files
    too_long = {str(f.relative_to(ROOT)): n for f in files if (n := len(f.read_text().splitlines())) > limit}
    assert not too_long, f"over {limit} lines: {too_long}"
