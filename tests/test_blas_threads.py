"""A seeded run is the same bit for bit at any BLAS thread count: the model's products and the
adaptive calibration's least-squares solve run on one BLAS thread (privrl.common.blas). Before,
RandomLinearMDP(S=300, A=10, d=150, H=3)'s P and the adaptive LSVI-UCB agent's centre direction
differed in the last bits between OPENBLAS_NUM_THREADS=1 and 2, and so did the run's regret."""

import json
import os
import subprocess
import sys

import pytest

PROBE = """
import hashlib, json
import numpy as np
import privrl
from privrl.agents import LSVIUCB
from privrl.envs import RandomLinearMDP
from privrl.privacy import NonPrivate
from privrl.privacy.adaptive import centre_direction

def h(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()

env = RandomLinearMDP(S=300, A=10, d=150, H=3, seed=0)
agent = LSVIUCB(env, NonPrivate(), episodes=20, seed=1)
res = privrl.run(agent, env, seed=2)
print(json.dumps({"P": h(env.P), "w1": h(centre_direction(env.features_flat)[0]), "gaps": h(res.gaps)}))
"""


def _probe(threads: int) -> dict:
    env = dict(os.environ)
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[name] = str(threads)
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(sys.platform != "linux", reason="OpenBLAS thread variables as on the project's machines")
def test_a_seeded_run_does_not_depend_on_the_blas_thread_count():
    one, two = _probe(1), _probe(2)
    assert one == two


def test_the_helper_computes_numpys_product():
    import numpy as np

    from privrl.common.blas import matmul_1thread, one_blas_thread

    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(7, 5)), rng.normal(size=(5, 3))
    with one_blas_thread():
        expected = np.matmul(a, b)
    np.testing.assert_array_equal(matmul_1thread(a, b), expected)
