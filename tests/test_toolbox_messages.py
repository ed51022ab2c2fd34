"""The DP toolbox's refusals name extreme values readably (a privacy researcher's trial).

Rust's ``{}`` prints an f64 in full positional notation: a value of 1e300 refused by the lattice
check was printed as a 301-digit integer, a discrete noise scale of 1e-320 as 320 zeros. The
messages now print the value as Rust's ``{:?}`` does (shortest round-trip, with an exponent for
extreme magnitudes: ``1e300``, ``1e-320``).
"""

import numpy as np
import pytest

from privrl.common.errors import PrivacyParameterError
from privrl.kernels import NoiseStream, TreeAggregator, make_prefix_mechanism
from privrl.privacy.mechanisms import gaussian_mechanism, laplace_mechanism

LONG = 40  # no message needs a number this long


def _message(call) -> str:
    with pytest.raises(PrivacyParameterError) as err:
        call()
    msg = str(err.value)
    assert not any(len(tok) > LONG for tok in msg.replace(",", " ").split()), msg
    return msg


def test_lattice_range_message_prints_a_huge_value_with_an_exponent():
    # the kernels' own refusal (gaussian_mechanism / laplace_mechanism refuse first, in their own
    # words: test_mechanism_tools_refuse_an_out_of_range_value_in_their_own_words)
    gauss = NoiseStream("discrete_gaussian", 1.0, seed=0)
    assert "value 1e300 at flat index 0" in _message(lambda: gauss.privatize(np.array([[1e300]])))
    lap = NoiseStream("discrete_laplace", 1.0, seed=0)
    assert "value -1e200 at flat index 1" in _message(lambda: lap.privatize(np.array([[0.0, -1e200]])))


def test_tree_and_blt_leaf_messages_print_a_huge_value_with_an_exponent():
    tree = TreeAggregator(2, 4, seed=0)
    assert "value 1e300 at flat index 1" in _message(lambda: tree.push(np.array([0.0, 1e300])))
    blt = make_prefix_mechanism("blt", 2, 4, seed=0)
    assert "encoded value 1e300" in _message(lambda: blt.push(np.array([1e300, 0.0])))


@pytest.mark.parametrize("noise", ["discrete_gaussian", "discrete_laplace"])
def test_a_subnormal_discrete_scale_is_printed_with_an_exponent(noise):
    msg = _message(lambda: NoiseStream(noise, 1e-320, seed=0))
    assert "1e-320 * 2^-24 is not a normal double" in msg


def test_mechanism_tools_refuse_an_out_of_range_value_in_their_own_words():
    """gaussian_mechanism / laplace_mechanism passed on the kernels' advice 'use a larger noise
    scale or fewer grid bits': these tools take no grid_bits (their lattice is scale * 2^-24).
    The refusal now names the range and the tools' own way out (sampler='float')."""
    rng = np.random.default_rng(0)
    sigma = 2.0 * np.sqrt(2.0 * np.log(2.0 / 1e-5)) / 0.5  # gaussian_sigma(2, 0.5, 1e-5)
    limit = 2.0**52 * sigma * 2.0**-24  # 2^28 sigma
    for call in (
        lambda v: gaussian_mechanism(v, 2.0, 0.5, 1e-5, rng),
        lambda v: laplace_mechanism(v, 1.0, 1.0, rng),
    ):
        for value, index in ((1e300, 0), (np.array([0.0, -1e200]), 1)):
            msg = _message(lambda c=call, v=value: c(v))
            assert f"at flat index {index} is beyond the discrete sampler's exact range" in msg
            assert "sampler='float'" in msg and "grid bits" not in msg
    msg = _message(lambda: gaussian_mechanism(np.array([1.0, 1.01 * limit]), 2.0, 0.5, 1e-5, rng))
    assert f"|value| <= {limit:.6g}" in msg
    out = gaussian_mechanism(np.array([0.99 * limit]), 2.0, 0.5, 1e-5, rng)  # inside: released
    assert abs(out[0] - 0.99 * limit) < 10 * sigma


@pytest.mark.parametrize("value", [1e308, np.array([0.0, -1.7e308]), np.finfo(float).max])
def test_a_value_near_the_largest_double_is_refused_without_a_numpy_warning(value):
    """The lattice-range check divided the value by the lattice unit (sigma 2^-24 < 1): a value
    near the largest double overflowed to inf there, with numpy's 'RuntimeWarning: overflow
    encountered in divide' before the refusal (an error under -W error; hA's adversarial-input
    pass). The refusal is the same, without the warning."""
    rng = np.random.default_rng(0)
    for call in (
        lambda v: gaussian_mechanism(v, 2.0, 0.5, 1e-5, rng),
        lambda v: laplace_mechanism(v, 1.0, 1.0, rng),
    ):
        assert "is beyond the discrete sampler's exact range" in _message(lambda c=call: c(value))
