"""Thread-count-independent dense linear algebra for what a run's numbers are built from.

A multithreaded BLAS / LAPACK splits a large product or solve differently at each thread count,
and OpenBLAS's results then differ in the last bits: ``RandomLinearMDP(S=300, A=10, d=150,
H=3)``'s P, and the adaptive LSVI-UCB calibration's centre direction (a least-squares solve on
the feature table), differed between ``OPENBLAS_NUM_THREADS=1`` and ``=2``, and so did a seeded
run's regret. These computations run on one BLAS thread (``threadpoolctl``): the same bits
whatever ``OMP_NUM_THREADS`` / ``OPENBLAS_NUM_THREADS`` or the machine's core count, the
single-threaded bits, which a problem too small to be split already had.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

# threadpoolctl sets the process's BLAS thread count: one thread's blocks at a time hold it (a
# reentrant lock), so that another thread's exit from the limit cannot restore the threads in the
# middle of ours
_LOCK = threading.RLock()


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """numpy's BLAS / LAPACK on one thread inside the block (the same bits at any thread count)."""
    from threadpoolctl import threadpool_limits

    with _LOCK, threadpool_limits(limits=1, user_api="blas"):
        yield


def matmul_1thread(a: Any, b: Any) -> np.ndarray:
    """``np.matmul(a, b)`` on one BLAS thread."""
    with one_blas_thread():
        return np.matmul(a, b)
