"""Bad inputs to the composition tools give a clear PrivacyParameterError (a privacy researcher's trial).

``composed_l2_sensitivity``, ``gaussian_composition_mu``, ``laplace_composition_epsilon`` and
``zcdp_compose`` iterated their argument unchecked: None or a number escaped as Python's bare
"TypeError: 'NoneType' object is not iterable" from inside the sum, and a string was read one
character at a time. ``mechanisms.simple_composition`` already refused these.
"""

import math

import numpy as np
import pytest

from privrl.common.errors import PrivacyParameterError
from privrl.privacy import accounting as acc

CALLS = {
    "sensitivities": lambda v: acc.composed_l2_sensitivity(v),
    "counts": lambda v: acc.composed_l2_sensitivity([1.0, 2.0], v),
    "terms": lambda v: acc.gaussian_composition_mu(v),
    "laplace terms": lambda v: acc.laplace_composition_epsilon(v),
    "rhos": lambda v: acc.zcdp_compose(v),
}


@pytest.mark.parametrize("name", list(CALLS))
@pytest.mark.parametrize("bad", [None, 5, 1.5, np.float64(2.0), np.array(3.0), "12", b"12", {"a": 1}])
def test_a_non_sequence_is_refused_by_name(name, bad):
    if name == "counts" and bad is None:
        return  # counts=None is the default: every sensitivity counted once
    arg = name.split()[-1]
    with pytest.raises(PrivacyParameterError, match=rf"^{arg} must be (None or )?an iterable of .*, got "):
        CALLS[name](bad)


def test_sequences_still_compose_to_the_hand_values():
    # sqrt(3 * 1^2 + 1 * 2^2), sqrt(4 (1/2)^2 + (1/1)^2), 4 * 1/2, 0.1 + 0.2
    assert acc.composed_l2_sensitivity([1.0, 2.0], [3, 1]) == math.sqrt(7.0)
    assert acc.composed_l2_sensitivity(np.array([1.0, 2.0]), np.array([3, 1])) == math.sqrt(7.0)
    assert acc.composed_l2_sensitivity(s for s in (1.0, 2.0)) == math.sqrt(5.0)
    assert acc.gaussian_composition_mu([(1.0, 2.0, 4), (1.0, 1.0, 1)]) == math.sqrt(2.0)
    assert acc.laplace_composition_epsilon(iter([(1.0, 2.0, 4)])) == 2.0
    assert acc.zcdp_compose((0.1, 0.2)) == pytest.approx(0.3, rel=1e-15)
    assert acc.zcdp_compose([]) == 0.0


def test_tree_depth_is_documented_as_the_papers_bound_not_the_count():
    """tree_depth's docstring called ceil(log2 n) + 1 "the largest number of tree nodes a prefix
    sum over n leaves uses": prefix t uses popcount(t) nodes, at most floor(log2(n + 1)), and a
    leaf enters tree_nodes_per_leaf(n) released nodes; both are below m unless n is a power of 2."""
    from privrl.privacy.accounting import tree_nodes_per_leaf
    from privrl.privacy.mechanisms import tree_depth

    for n in range(1, 300):
        used = max(bin(t).count("1") for t in range(1, n + 1))
        assert used == math.floor(math.log2(n + 1)) <= tree_depth(n) == math.ceil(math.log2(n) + 1)
        assert tree_nodes_per_leaf(n) == math.floor(math.log2(n)) + 1 <= tree_depth(n)
    assert (max(bin(t).count("1") for t in range(1, 5)), tree_depth(4)) == (2, 3)
    assert (tree_nodes_per_leaf(5), tree_depth(5)) == (3, 4)
    doc = " ".join((tree_depth.__doc__ or "").split())
    assert "the largest number of tree nodes" not in doc
    assert "popcount(t)" in doc and "tree_nodes_per_leaf(n) = floor(log2 n) + 1" in doc


def test_audit_samples_finds_the_gap_along_a_direction_given_either_way_round():
    """audit_samples tried only {score(a) > t} and {score(b) < t}: a direction given as b - a (the
    neighbours' outputs 3 noise sds apart) audited nothing, eps_lb 0, while the same samples along
    a - b gave 3.36. The threshold test now tries both neighbours in both tails."""
    from privrl.audit import audit_samples

    rng = np.random.default_rng(0)
    a = rng.normal(size=(400, 3))
    b = rng.normal(size=(400, 3)) + np.array([3.0, 0.0, 0.0])
    along = audit_samples(a, b, direction=np.array([-1.0, 0.0, 0.0]))  # a - b
    against = audit_samples(a, b, direction=np.array([1.0, 0.0, 0.0]))  # b - a
    assert along.epsilon_lower_bound > 3.0
    assert against.epsilon_lower_bound == along.epsilon_lower_bound
    assert (along.orientation, against.orientation) == ("score(a) > t", "score(a) < t")
    assert against.threshold == -along.threshold
    # identical laws: still no evidence either way round
    null = audit_samples(a, rng.normal(size=(400, 3)), direction=np.array([1.0, 0.0, 0.0]))
    assert null.epsilon_lower_bound < 0.5


@pytest.mark.parametrize("sampler", ["float", "discrete", None])
def test_a_negative_zero_sensitivity_is_zero(sampler):
    # -0.0 passed the sensitivity check (-0.0 >= 0) and reached numpy's normal(scale=-0.0), which
    # raised its own ValueError 'scale < 0' under sampler="float" (found by hB's bad-input fuzz);
    # it is 0.0 now, as a delta of -0.0 already was: the same release as a sensitivity of 0
    from privrl.common.checks import check_nonneg_real
    from privrl.privacy import mechanisms as mech

    assert math.copysign(1.0, check_nonneg_real(-0.0, "l2_sensitivity")) == 1.0
    for fn, args in ((mech.gaussian_mechanism, (1.0, 1e-5)), (mech.laplace_mechanism, (1.0,))):
        got = fn(np.arange(3.0), -0.0, *args, np.random.default_rng(0), sampler)
        want = fn(np.arange(3.0), 0.0, *args, np.random.default_rng(0), sampler)
        assert np.array_equal(got, want)
