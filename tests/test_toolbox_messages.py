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
    rng = np.random.default_rng(0)
    msg = _message(lambda: gaussian_mechanism(1e300, 1.0, 0.5, 1e-5, rng))
    assert "value 1e300 at flat index 0" in msg
    msg = _message(lambda: laplace_mechanism(np.array([0.0, -1e200]), 1.0, 1.0, rng))
    assert "value -1e200 at flat index 1" in msg
    stream = NoiseStream("discrete_gaussian", 1.0, seed=0)
    assert "value 1e300" in _message(lambda: stream.privatize(np.array([[1e300]])))


def test_tree_and_blt_leaf_messages_print_a_huge_value_with_an_exponent():
    tree = TreeAggregator(2, 4, seed=0)
    assert "value 1e300 at flat index 1" in _message(lambda: tree.push(np.array([0.0, 1e300])))
    blt = make_prefix_mechanism("blt", 2, 4, seed=0)
    assert "encoded value 1e300" in _message(lambda: blt.push(np.array([1e300, 0.0])))


@pytest.mark.parametrize("noise", ["discrete_gaussian", "discrete_laplace"])
def test_a_subnormal_discrete_scale_is_printed_with_an_exponent(noise):
    msg = _message(lambda: NoiseStream(noise, 1e-320, seed=0))
    assert "1e-320 * 2^-24 is not a normal double" in msg
