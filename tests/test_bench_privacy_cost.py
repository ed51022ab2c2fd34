"""benches/privacy_cost.py's reading of a finished study: the ordering check (eps 0.1 >= 1 >= 10
>= inf within 2 std of the difference) and the practical / tight ratio, on hand-made tables."""

import math

import pandas as pd
import pytest

from _helpers import load_bench


@pytest.fixture(scope="module")
def bench():
    return load_bench("privacy_cost.py", "privacy_cost_bench")


def _row(agent, eps, regret, std):
    return {
        "K": 100,
        "study": "S",
        "agent": agent,
        "epsilon": eps,
        "regret": regret,
        "std": std,
        "slope": 0.5,
    }


def test_ordering_check(bench, tmp_path):
    rows = [
        _row("non-private", math.inf, 10.0, 1.0),
        _row("JDP tight", 10.0, 50.0, 1.0),
        _row("JDP tight", 1.0, 45.0, 3.0),  # below eps 10 by 5 < 2 * hypot(3, 1) = 6.3: within 2 std
        _row("JDP tight", 0.1, 60.0, 1.0),
        _row("non-private practical", math.inf, 10.0, 0.0),
        _row("JDP practical", 10.0, 4.0, 1.0),  # below eps inf by 6 > 2: an inversion
        _row("JDP practical", 1.0, 20.0, 1.0),
    ]
    lines = bench.check_targets(pd.DataFrame(rows), tmp_path)
    inversions = [line for line in lines if line.startswith("- K = ")]
    assert len(inversions) == 1 and "JDP practical: eps 10 -> 4" in inversions[0]
    # practical / tight at the same (K, eps): 4 / 50 and 20 / 45
    assert any("| JDP practical | 10 |" in line and line.endswith("| 0.080 |") for line in lines)
    assert any("| JDP practical | 1 |" in line and line.endswith("| 0.444 |") for line in lines)
    assert (tmp_path / "targets.md").read_text().startswith("# Targets")


def test_ordered_study_has_no_inversion(bench, tmp_path):
    rows = [
        _row("non-private", math.inf, 10.0, 1.0),
        _row("LDP paper", 10.0, 11.0, 1.0),
        _row("LDP paper", 1.0, 30.0, 1.0),
        _row("LDP paper", 0.1, 30.0, 0.0),
    ]
    lines = bench.check_targets(pd.DataFrame(rows), tmp_path)
    assert "- every family is ordered" in lines
