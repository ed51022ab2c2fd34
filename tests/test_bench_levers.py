"""benches/practical_levers.py (docs/privacy-cost.md's lever ablation) runs: its Lever subclass
overrides UCRLVTR._practical, whose signature gained the regression `which` with the adaptive
calibration, and every row then raised TypeError before its first user."""

import math

import pytest

from _helpers import load_bench
from privrl.envs import RiverSwimMixture
from privrl.privacy import JointDP


@pytest.fixture(scope="module")
def levers():
    return load_bench("practical_levers.py", "practical_levers_bench")


def test_every_row_runs(levers):
    for row in levers.ROWS:
        regret, slope, wall = levers.run_row("river", row, 40, 0)
        assert math.isfinite(regret) and regret >= 0, row
        assert math.isfinite(slope) or regret == 0, row
        assert wall >= 0


def test_a_lever_changes_the_constant_it_names(levers):
    specs = {}

    class Spy(levers.Lever):
        def _practical(self, *args):
            spec = super()._practical(*args)
            specs[self.row] = spec
            return spec

    rows = ("practical", "practical, no shift", "practical, shift x 0.1", "practical, stat. radius")
    for row in rows:
        privacy = JointDP(10.0, 1e-5, calibration="practical")
        Spy(RiverSwimMixture(S=6, H=20), privacy, episodes=40, seed=0, beta_scale=0.1, row=row)
    base = specs["practical"]
    assert base.shift_mult > 0 and base.noise_scale > 0
    assert specs["practical, no shift"].shift_mult == 0
    assert specs["practical, shift x 0.1"].shift_mult == pytest.approx(0.1 * base.shift_mult)
    assert specs["practical, stat. radius"].noise_scale == 0
    assert specs["practical, stat. radius"].shift_mult == base.shift_mult
