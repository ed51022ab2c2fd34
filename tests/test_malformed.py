"""Malformed-input corpus: hundreds of bad calls across the public API, each of which must raise a
privrl exception, TypeError or ValueError, in-process and in a subprocess that must exit normally."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from privrl.exceptions import PrivrlError

ACCEPTED = (PrivrlError, TypeError, ValueError)

# ---------------------------------------------------------------- bad values

BAD_COUNTS = [0, -1, 10**30, 2**64, 1.5, "3", None, True, 3 + 0j, float("nan"), np.float64(2.0)]
BAD_POSITIVE_REALS = [0.0, -1.0, float("nan"), float("inf"), -float("inf"), "1", None, 1j, 10**400, [1.0]]
BAD_SEEDS = [-1, "abc", 1.5, b"short", object(), [1, 2], 1j]
# None was refused until the kernels took it as their default law (discrete_gaussian where the
# mechanism has it: tests/test_default_laws.py); the loops below skip it
BAD_NOISES = ["cauchy", None, 5, "GAUSSIAN", ""]
BAD_VECTORS_3 = [
    [1.0, 2.0],  # wrong length
    [[1.0, 2.0, 3.0]],  # wrong ndim
    [1.0, float("nan"), 0.0],
    [1.0, float("inf"), 0.0],
    np.array([1 + 2j, 0, 0]),  # complex: imaginary part would be dropped
    np.array(["1", "2", "3"]),  # strings: numpy would parse them
    np.array([1.0, None, 2.0], dtype=object),
    [10**30, 1, 2],  # int beyond 64 bits
    [[1.0], [2.0, 3.0]],  # ragged
    "abc",
    None,
    np.zeros(0),
]


def _vtr_core(mode, guarded=True, noise="mode"):
    """privrl._core.VtrAgent (H = d = 2, K = 4) with one regression of ``mode``: guarded or not,
    with the noise of ``noise`` ("jdp": 2H mechanisms' seeds, "ldp": the randomizer's 2 streams,
    None: none; "mode": the mode's own)."""
    from privrl import _core
    from privrl.agents.common.specs import GuardSpec, NoiseSpec, RegressionSpec, VtrSpec
    from privrl.envs import RandomLinearMixtureMDP

    env = RandomLinearMixtureMDP(S=3, A=2, d=2, H=2, seed=0)
    noise = mode if noise == "mode" else noise
    spec = None
    if noise in ("jdp", "ldp"):
        n_seeds = 2 * env.H if noise == "jdp" else 2
        seeds = [bytes([i]) * 32 for i in range(n_seeds)]
        spec = NoiseSpec("tree", "gaussian", 1.0, 1.0, math.sqrt(2), 24, 4, seeds)
    regression = RegressionSpec(
        mode=mode,
        lam=1.0,
        base=1.0 if mode == "exact" else 1e3,  # lam + a shift above the noise
        radius=1.0,
        shift_name="shift",
        guard=GuardSpec(float(env.H), 0.0, float(env.H), False) if guarded else None,
        noise=spec,
        practical=None,
    )
    features = np.ascontiguousarray(env.features, dtype=np.float64)
    rewards = np.ascontiguousarray(env.R, dtype=np.float64)
    return _core.VtrAgent(VtrSpec(features, rewards, [regression], None, None, None, 4))


def _calls():
    """(id, thunk) pairs; each thunk builds what it needs, so one failure cannot mask another."""
    from _helpers import calibration as cal
    from privrl import audit as A
    from privrl import kernels as kn
    from privrl.agents import LSVIUCB, UCRLVTR, UCRLVTRPlus
    from privrl.agents.common.base import SensitivityGuard
    from privrl.envs import (
        FiniteMDP,
        HardToLearn,
        LinearMDP,
        RandomLinearMDP,
        RandomLinearMixtureMDP,
        RiverSwim,
        RiverSwimMixture,
        SyntheticLinearMDP,
        Trajectory,
        tabular_linear_mdp,
    )
    from privrl.experiment.runner import run
    from privrl.privacy import accounting as acc
    from privrl.privacy import mechanisms as mech
    from privrl.privacy.models import JointDP, LocalDP, NonPrivate

    calls = []

    def add(name, fn):
        calls.append((name, fn))

    # ------------------------------------------------ kernels: continual release
    for i, v in enumerate(
        [0, -1, (3, 4), (2, 2, 2), "3", 10**30, (10**5, 10**5), 3.5, None, (0, 0), (2, -2), [], (1.5, 1.5)]
    ):
        add(f"tree-shape-{i}", lambda v=v: kn.TreeAggregator(v, 10, seed=0))
    for i, v in enumerate(BAD_COUNTS):
        add(f"tree-capacity-{i}", lambda v=v: kn.TreeAggregator(3, v, seed=0))
    for i, v in enumerate(BAD_NOISES):
        if v is not None:
            add(f"tree-noise-{i}", lambda v=v: kn.TreeAggregator(3, 10, noise=v, seed=0))
    for i, v in enumerate(BAD_POSITIVE_REALS):
        add(f"tree-scale-{i}", lambda v=v: kn.TreeAggregator(3, 10, scale=v, seed=0))
    for i, v in enumerate(BAD_SEEDS):
        add(f"tree-seed-{i}", lambda v=v: kn.TreeAggregator(3, 10, seed=v))
    # None is the kind's default divisor (2 for the Laplace laws, sqrt(2) for Gaussian), not malformed
    for i, v in enumerate([0.0, -1.0, float("nan"), float("inf"), "2", 5e-324]):
        add(f"tree-divisor-{i}", lambda v=v: kn.TreeAggregator((2, 2), 10, seed=0, divisor=v))
    for i, v in enumerate([-1, 25, 1.5, None, 10**20]):
        add(
            f"tree-grid-bits-{i}",
            lambda v=v: kn.TreeAggregator(3, 10, noise="discrete_gaussian", seed=0, grid_bits=v),
        )
    add(
        "tree-discrete-laplace-sqrt2",
        lambda: kn.TreeAggregator((2, 2), 10, noise="discrete_laplace", seed=0, divisor=math.sqrt(2)),
    )
    add(
        "tree-discrete-gaussian-odd-divisor",
        lambda: kn.TreeAggregator((2, 2), 10, noise="discrete_gaussian", seed=0, divisor=1.7),
    )
    add(
        "tree-discrete-tiny-grid",
        lambda: kn.TreeAggregator(2, 10, noise="discrete_gaussian", scale=1e-305, seed=0, grid_bits=24),
    )
    for kind in kn.MECHANISMS:
        for i, leaf in enumerate(BAD_VECTORS_3):
            add(
                f"{kind}-push-{i}",
                lambda kind=kind, leaf=leaf: kn.make_prefix_mechanism(kind, 3, 4, seed=0).push(leaf),
            )

        def overflow(kind=kind):
            m = kn.make_prefix_mechanism(kind, 2, 2, seed=0)
            m.push([1.0, 1.0])
            m.push_zero()
            m.push_zero()

        add(f"{kind}-capacity-exceeded", overflow)
        for i, t in enumerate([-1, 5, 1.5, "2", None, 10**30]):
            add(
                f"{kind}-step-variance-{i}",
                lambda kind=kind, t=t: kn.make_prefix_mechanism(kind, 2, 4, seed=0).step_variance(t),
            )
        for i, t in enumerate([0, 5, -3, 2.0]):
            add(
                f"{kind}-leaf-coefficients-{i}",
                lambda kind=kind, t=t: kn.make_prefix_mechanism(kind, 2, 4, seed=0).leaf_coefficients(t),
            )
        add(
            f"{kind}-matrix-push-asymmetric-shape",
            lambda kind=kind: kn.make_prefix_mechanism(kind, (2, 2), 4, seed=0).push(np.ones((2, 3))),
        )
    add(
        "tree-discrete-push-huge",
        lambda: kn.TreeAggregator(2, 4, noise="discrete_gaussian", seed=0).push([1e300, 0.0]),
    )
    for i, v in enumerate(["cauchy", None, 3, "TREE"]):
        add(f"make-prefix-kind-{i}", lambda v=v: kn.make_prefix_mechanism(v, 3, 10, seed=0))
    for i, v in enumerate([0, 65, -1, 1.5, "8"]):
        add(f"blt-buffers-{i}", lambda v=v: kn.PrefixMechanism("blt", 3, 10, seed=0, buffers=v))
    add("honaker-buffers", lambda: kn.PrefixMechanism("honaker", 3, 10, seed=0, buffers=4))
    add("honaker-discrete", lambda: kn.PrefixMechanism("honaker", 3, 10, noise="discrete_gaussian", seed=0))
    add(
        "factorization-discrete",
        lambda: kn.PrefixMechanism("factorization", 3, 10, noise="discrete_laplace", seed=0),
    )
    add("factorization-capacity-too-large", lambda: kn.PrefixMechanism("factorization", 3, 2**40, seed=0))
    add(
        "factorization-history-too-large",
        lambda: kn.PrefixMechanism("factorization", (4000, 4000), 100, seed=0),
    )
    add("profile-kind", lambda: kn.mechanism_profile("cauchy", 10))
    add("profile-capacity", lambda: kn.mechanism_profile("tree", 0))
    add("profile-capacity-huge", lambda: kn.mechanism_profile("tree", 10**30))
    add("blt-parameters-capacity", lambda: kn.continual.blt_parameters(0, 8))
    add("blt-parameters-buffers", lambda: kn.continual.blt_parameters(10, 0))
    add("variance-profile-too-long", lambda: kn.PrefixMechanism("blt", 1, 2**40, seed=0).variance_profile())

    # ------------------------------------------------ kernels: noise stream
    for i, v in enumerate(BAD_NOISES):
        if v is not None:
            add(f"stream-noise-{i}", lambda v=v: kn.NoiseStream(v, 1.0, seed=0))
    for i, v in enumerate(BAD_POSITIVE_REALS[:8]):
        add(f"stream-scale-{i}", lambda v=v: kn.NoiseStream("gaussian", v, seed=0))
    for i, v in enumerate(BAD_SEEDS):
        add(f"stream-seed-{i}", lambda v=v: kn.NoiseStream("gaussian", 1.0, seed=v))
    for i, (c, n) in enumerate(
        [(-1, 3), (3, 0), (3, -2), (10**30, 3), (2**40, 2**40), (1.5, 3), ("2", 3), (None, 3), (2**20, 2**20)]
    ):
        add(f"stream-vectors-{i}", lambda c=c, n=n: kn.NoiseStream("gaussian", 1.0, seed=0).vectors(c, n))
    for i, (c, d, div) in enumerate(
        [
            (1, 0, 2.0),
            (1, 10**6, 2.0),
            (1, 3, 0.0),
            (1, 3, float("nan")),
            (-1, 3, 2.0),
            (2**30, 100, 2.0),
            (1, 3, "x"),
        ]
    ):
        add(
            f"stream-symmetric-{i}",
            lambda c=c, d=d, div=div: kn.NoiseStream("gaussian", 1.0, seed=0).symmetric(c, d, div),
        )

    # ------------------------------------------------ kernels: linear algebra and Q
    for i, v in enumerate(BAD_COUNTS):
        add(f"rank-one-d-{i}", lambda v=v: kn.RankOneInverse(v, 1.0))
    for i, v in enumerate(BAD_POSITIVE_REALS[:8]):
        add(f"rank-one-lam-{i}", lambda v=v: kn.RankOneInverse(3, v))
    for i, x in enumerate(BAD_VECTORS_3):
        add(f"rank-one-update-{i}", lambda x=x: kn.RankOneInverse(3, 1.0).update(x))
    for i, x in enumerate([np.ones((2, 4)), np.ones(3), np.full((2, 3), np.nan), np.ones((2, 3), complex)]):
        add(f"rank-one-update-batch-{i}", lambda x=x: kn.RankOneInverse(3, 1.0).update_batch(x))
    add("rank-one-solve", lambda: kn.RankOneInverse(3, 1.0).solve([1.0, 2.0]))
    bad_mats = [
        np.ones((2, 3)),
        np.ones(3),
        np.full((2, 2), np.nan),
        -np.eye(3),
        np.zeros((0, 0)),
        np.array([["a", "b"], ["c", "d"]]),
        np.eye(2) * 1j,
        [[1, 2], [3]],
        np.ones((2, 2, 2)),
        None,
    ]
    for i, a in enumerate(bad_mats):
        add(f"spd-inverse-{i}", lambda a=a: kn.spd_inverse(a))
        add(f"spd-solve-{i}", lambda a=a: kn.spd_solve(a, np.ones(3)))
        if i != 3:  # a negative-definite matrix has a perfectly good smallest eigenvalue
            add(f"min-eigenvalue-{i}", lambda a=a: kn.min_eigenvalue(a))
    add("spd-solve-mismatch", lambda: kn.spd_solve(np.eye(3), np.ones(2)))
    add("spd-solve-nan-rhs", lambda: kn.spd_solve(np.eye(2), [np.nan, 1.0]))
    phi, w, inv = np.ones((4, 3)) / 3, np.ones(3), np.eye(3)
    q_bad = [
        (np.ones((4, 2)), w, inv, 1.0),
        (phi, np.ones(2), inv, 1.0),
        (phi, w, np.eye(2), 1.0),
        (np.full((4, 3), np.nan), w, inv, 1.0),
        (phi, w, inv, float("nan")),
        (phi, w, inv, -1.0),
        (phi.astype(complex), w, inv, 1.0),
        (np.ones(3), w, inv, 1.0),
        (phi, w, inv, "1"),
    ]
    for i, (p, ww, iv, b) in enumerate(q_bad):
        add(f"optimistic-q-{i}", lambda p=p, ww=ww, iv=iv, b=b: kn.optimistic_q(p, ww, iv, b))
    add("optimistic-q-offset", lambda: kn.optimistic_q(phi, w, inv, 1.0, offset=np.ones(5)))
    for i, n_actions in enumerate([0, 3, -1, 1.5, None, 10**30]):
        add(f"optimistic-values-actions-{i}", lambda n=n_actions: kn.optimistic_values(phi, w, inv, 1.0, n))
    for i, (q, ties) in enumerate(
        [
            (np.ones(3), "random"),
            (np.ones((2, 2)), "first"),
            (np.ones((2, 0)), "lowest"),
            (np.full((2, 2), np.nan), "lowest"),
            (np.ones((2, 2), complex), "lowest"),
        ]
    ):
        add(f"greedy-{i}", lambda q=q, ties=ties: kn.greedy(q, ties=ties, rng=0))
    table = np.ones((6, 3)) / 3
    for i, kw in enumerate(
        [
            dict(states=np.array([0, 7])),
            dict(states=np.array([-1])),
            dict(states=np.ones((2, 2), int)),
            dict(states=np.array([0.5])),
        ]
    ):
        add(f"state-values-{i}", lambda kw=kw: kn.state_values(table, w, inv, 1.0, 2, **kw))
    add("state-values-actions", lambda: kn.state_values(table, w, inv, 1.0, 4))
    for i, f in enumerate([np.ones((2, 2, 3, 1)), np.ones((2, 2, 2)), np.full((2, 1, 2, 1), np.nan), None]):
        add(f"mixture-features-{i}", lambda f=f: kn.MixtureFeatures(f))
    add("mixture-phi-v", lambda: kn.MixtureFeatures(np.ones((2, 1, 2, 1)) / 2).phi_v([1.0, 2.0, 3.0]))

    # ------------------------------------------------ privacy: tools, accounting, models
    for i, args in enumerate(
        [
            (-1, 1, 1e-5),
            (1, 0, 1e-5),
            (1, 1, 0),
            (1, 1, 1),
            ("1", 1, 1e-5),
            (1, float("nan"), 1e-5),
            (None, 1, 1e-5),
            (1, 1, 1j),
        ]
    ):
        add(f"gaussian-sigma-{i}", lambda a=args: mech.gaussian_sigma(*a))
    for i, args in enumerate([(-1, 1), (1, 0), (1, -1), (1, float("inf")), ("x", 1)]):
        add(f"laplace-scale-{i}", lambda a=args: mech.laplace_scale(*a))
    rng = np.random.default_rng(0)
    add("gaussian-mechanism-nan", lambda: mech.gaussian_mechanism([np.nan], 1, 1, 1e-5, rng))
    add("gaussian-mechanism-rng", lambda: mech.gaussian_mechanism([1.0], 1, 1, 1e-5, 0))
    add("laplace-mechanism-rng", lambda: mech.laplace_mechanism(1.0, 1, 1, np.random.RandomState(0)))
    add("laplace-mechanism-str", lambda: mech.laplace_mechanism("abc", 1, 1, rng))
    for i, b in enumerate(["abc", [(1,)], [(-1, 0)], [(1, 2)], 5, [(1, "x")]]):
        add(f"simple-composition-{i}", lambda b=b: mech.simple_composition(b))
    for i, args in enumerate(
        [(0, 0, 1, 0.1), (1, 1.5, 1, 0.1), (1, 0, 0, 0.1), (1, 0, 1, 0), (1, 0, 1.5, 0.1)]
    ):
        add(f"advanced-composition-{i}", lambda a=args: mech.advanced_composition(*a))
    for i, n in enumerate([0, -1, 1.5, "4", None, True]):
        add(f"tree-depth-{i}", lambda n=n: mech.tree_depth(n))
    for i, args in enumerate([(-1.0, 1.0, 0.5), (1.0, -1.0, 0.5), (1.0, 1.0, 0.0), (1.0, 1.0, 2.0)]):
        add(f"analytic-gaussian-sigma-{i}", lambda a=args: acc.analytic_gaussian_sigma(*a))
    add("gaussian-epsilon-mu", lambda: acc.gaussian_epsilon(-1.0, 1e-5))
    add("accountant-add", lambda: acc.PrivacyAccountant().add_gaussian(1.0, 0.0))
    add("accountant-count", lambda: acc.PrivacyAccountant().add_laplace(1.0, 1.0, count=0))
    add("accountant-delta", lambda: acc.PrivacyAccountant().add_gaussian(1.0, 1.0).epsilon(0.0))
    add("zcdp-delta", lambda: acc.zcdp_delta(-1.0, 1.0))
    add("tree-nodes-per-leaf", lambda: acc.tree_nodes_per_leaf(0))
    for i, kw in enumerate(
        [
            dict(epsilon=0),
            dict(epsilon=-1),
            dict(epsilon=float("inf")),
            dict(epsilon="1"),
            dict(epsilon=1, delta=1),
            dict(epsilon=1, delta=-0.1),
            dict(epsilon=1, delta="0"),
            dict(epsilon=1, p=0),
            dict(epsilon=1, p=1.5),
            dict(epsilon=1, calibration="best"),
            dict(epsilon=1, calibration=None),
            dict(epsilon=1, delta=1e-5, mechanism="cauchy"),
            dict(epsilon=1, delta=0.0, mechanism="factorization"),
            dict(epsilon=None),
            dict(epsilon=1j),
            dict(epsilon=True),
        ]
    ):
        add(f"jointdp-{i}", lambda kw=kw: JointDP(**kw))
    add("localdp-mechanism", lambda: LocalDP(1.0, 1e-5, mechanism="honaker"))
    add("localdp-delta", lambda: LocalDP(1.0, 2.0))
    add("nonprivate-p", lambda: NonPrivate(p=0))
    add("nonprivate-p-str", lambda: NonPrivate(p="0.1"))
    for i, kw in enumerate(
        [
            dict(kind="cdp"),
            dict(epsilon=None),
            dict(delta=None),
            dict(H=0),
            dict(K=0),
            dict(K=1.5),
            dict(d=0),
            dict(C_w=0),
            dict(C_w=float("nan")),
            dict(p=1),
            dict(calibration="x"),
            dict(H="3"),
        ]
    ):
        base = dict(kind="jdp", epsilon=1.0, delta=1e-5, H=3, K=100, d=4, C_w=1.0)
        base.update(kw)
        add(f"calibrate-ucrl-vtr-{i}", lambda b=base: cal.calibrate_ucrl_vtr(**b))
        add(f"calibrate-ucrl-vtr-plus-{i}", lambda b=base: cal.calibrate_ucrl_vtr_plus(**b))
    for i, kw in enumerate(
        [
            dict(kind="ldp"),
            dict(batches=0),
            dict(batches=101),
            dict(batches="sometimes"),
            dict(batches=1.5),
            dict(d=-1),
        ]
    ):
        base = dict(kind="jdp", epsilon=1.0, delta=1e-5, H=3, K=100, d=4)
        base.update(kw)
        add(f"calibrate-lsvi-{i}", lambda b=base: cal.calibrate_lsvi_ucb(**b))
    add(
        "calibrate-mechanism",
        lambda: cal.calibrate_ucrl_vtr("jdp", 1.0, 1e-5, 3, 100, 4, 1.0, mechanism="cauchy", sampler="float"),
    )
    add(
        "calibrate-mechanism-ldp",
        lambda: cal.calibrate_ucrl_vtr("ldp", 1.0, 1e-5, 3, 100, 4, 1.0, mechanism="blt", sampler="float"),
    )
    add(
        "calibrate-mechanism-pure",
        lambda: cal.calibrate_lsvi_ucb(
            "jdp", 1.0, 0.0, 3, 100, 4, mechanism="factorization", sampler="float"
        ),
    )

    # ------------------------------------------------ environments
    H, S, nA = 2, 3, 2
    P = np.full((H, S, nA, S), 1.0 / S)
    R = np.full((H, S, nA), 0.5)
    mu0 = np.full(S, 1.0 / S)
    bad_mdps = [
        (P[0], R, mu0),
        (P * 2, R, mu0),
        (np.where(P > 0, np.nan, P), R, mu0),
        (P, R + 1.0, mu0),
        (P, R, np.ones(S)),
        (P, R[:, :, :1], mu0),
        (P, R, mu0[:2]),
        (P.astype(str), R, mu0),
        (P.astype(complex), R, mu0),
        (-P, R, mu0),
        (np.zeros((H, 0, nA, 0)), R, mu0),
        (None, R, mu0),
    ]
    for i, (p_, r_, m_) in enumerate(bad_mdps):
        add(f"finite-mdp-{i}", lambda p_=p_, r_=r_, m_=m_: FiniteMDP(p_, r_, m_))
    add("tabular-linear-mdp", lambda: tabular_linear_mdp(P * 2, R, mu0))
    feats = np.full((S, nA, 2), 0.9)  # ||phi|| > 1
    add("linear-mdp-norm", lambda: LinearMDP(feats, np.ones((H, S, 2)), np.zeros((H, 2)), mu0))
    add(
        "linear-mdp-no-reward",
        lambda: LinearMDP(np.full((S, nA, 1), 1.0), np.full((H, S, 1), 1 / S), None, mu0),
    )
    for cls in (RandomLinearMDP, RandomLinearMixtureMDP):
        for i, kw in enumerate(
            [
                dict(S=0),
                dict(S=-1),
                dict(S=1.5),
                dict(S="5"),
                dict(S=10**30),
                dict(A=0),
                dict(d=0),
                dict(H=0),
                dict(H=None),
                dict(seed=-1),
                dict(seed="x"),
                dict(S=10**6, A=10**6),
            ]
        ):
            add(f"{cls.__name__}-{i}", lambda cls=cls, kw=kw: cls(**kw))
    add("riverswim-S", lambda: RiverSwim(S=1))
    add("riverswim-mixture-H", lambda: RiverSwimMixture(S=4, H=0))
    add("synthetic-d", lambda: SyntheticLinearMDP(H=3, d=5))
    add("synthetic-actions", lambda: SyntheticLinearMDP(H=3, n_actions=1000))
    add("hard-to-learn-d", lambda: HardToLearn(d=1, H=3, K=10))
    env = RandomLinearMixtureMDP(S=4, A=2, d=3, H=3, seed=0)
    lenv = RandomLinearMDP(S=4, A=2, d=3, H=3, seed=0)
    good_pi = np.zeros((3, 4), dtype=np.int64)
    for i, pi in enumerate(
        [
            np.zeros((3, 3), int),
            np.full((3, 4), 2),
            np.full((3, 4), -1),
            np.full((3, 4), 0.5),
            np.array([["a"] * 4] * 3),
            None,
            np.zeros((3, 4), complex),
        ]
    ):
        add(f"sample-episode-policy-{i}", lambda pi=pi: env.sample_episode(pi, np.random.default_rng(0)))
        add(f"policy-values-{i}", lambda pi=pi: env.policy_values(pi))
    add("sample-episode-rng", lambda: env.sample_episode(good_pi, 0))
    add("sample-next-state-range", lambda: env.sample_next_state(5, 0, 0, np.random.default_rng(0)))
    add("sample-next-state-negative", lambda: env.sample_next_state(0, -1, 0, np.random.default_rng(0)))
    add("initial-value-shape", lambda: env.initial_value(np.ones(7)))

    # ------------------------------------------------ agents and runner
    jdp = JointDP(1.0, 1e-5)
    for cls in (UCRLVTR, UCRLVTRPlus):
        for i, e in enumerate([lenv, None, "env", 5]):
            add(f"{cls.__name__}-env-{i}", lambda cls=cls, e=e: cls(e, jdp, episodes=10, seed=0))
        for i, p in enumerate(["jdp", 1.0, {"epsilon": 1}, JointDP, mech]):
            add(f"{cls.__name__}-privacy-{i}", lambda cls=cls, p=p: cls(env, p, episodes=10, seed=0))
        for i, k in enumerate(BAD_COUNTS):
            add(f"{cls.__name__}-episodes-{i}", lambda cls=cls, k=k: cls(env, jdp, episodes=k, seed=0))
        for i, s in enumerate(BAD_SEEDS[:4]):
            add(f"{cls.__name__}-seed-{i}", lambda cls=cls, s=s: cls(env, jdp, episodes=10, seed=s))
        for i, kw in enumerate(
            [
                dict(beta_scale=-1),
                dict(beta_scale=float("nan")),
                dict(beta_scale="1"),
                dict(beta=-1.0),
                dict(beta=float("inf")),
                dict(ties="first"),
                dict(sensitivity="ignore"),
                dict(sensitivity=None),
            ]
        ):
            add(f"{cls.__name__}-option-{i}", lambda cls=cls, kw=kw: cls(env, jdp, episodes=10, seed=0, **kw))
    for i, kw in enumerate(
        [
            dict(privacy=LocalDP(1.0, 1e-5)),
            dict(batches=0),
            dict(batches=11),
            dict(batches="x"),
            dict(batches=2.5),
            dict(planning="fast"),
            dict(episodes=0),
            dict(episodes=10**30),
            dict(episodes=2**62, privacy=JointDP(1.0, 1e-20)),  # delta <= 1/K: no delta warning first
            dict(privacy="jdp"),
            dict(sensitivity="no"),
        ]
    ):
        base = dict(privacy=jdp, episodes=10, seed=0)
        base.update(kw)
        add(f"lsvi-{i}", lambda b=base: LSVIUCB(lenv, **b))
    add("lsvi-env", lambda: LSVIUCB(env, jdp, episodes=10))

    def observe_bad(traj_fn, cls=UCRLVTR, e=env):
        a = cls(e, jdp, episodes=4, seed=0)
        pi = a.policy()
        t = e.sample_episode(pi, np.random.default_rng(0))
        a.observe(traj_fn(t))

    for i, f in enumerate(
        [
            lambda t: "trajectory",
            lambda t: None,
            lambda t: Trajectory(t.states[:-1], t.actions, t.rewards),
            lambda t: Trajectory(t.states - 10, t.actions, t.rewards),
            lambda t: Trajectory(t.states, t.actions + 7, t.rewards),
            lambda t: Trajectory(t.states.astype(float), t.actions, t.rewards),
            lambda t: Trajectory(t.states, t.actions, np.full(3, np.nan)),
            lambda t: Trajectory(t.states, t.actions, np.array(["a"] * 3)),
        ]
    ):
        add(f"observe-ucrl-{i}", lambda f=f: observe_bad(f))
        add(f"observe-lsvi-{i}", lambda f=f: observe_bad(f, LSVIUCB, lenv))

    def observe_too_many():
        a = UCRLVTR(env, jdp, episodes=1, seed=0)
        for k in range(2):
            a.observe(env.sample_episode(a.policy(), np.random.default_rng(k)))

    add("observe-beyond-K", observe_too_many)
    _psrl_calls(add, env, lenv, jdp)
    add("run-agent", lambda: run("agent", env))
    add(
        "run-env-mismatch",
        # another model (the same one rebuilt, seed 0, has the agent's fingerprint and is accepted)
        lambda: run(
            UCRLVTR(env, jdp, episodes=2, seed=0), RandomLinearMixtureMDP(S=4, A=2, d=3, H=3, seed=1)
        ),
    )
    add("run-episodes", lambda: run(UCRLVTR(env, jdp, episodes=2, seed=0), env, episodes=5))
    add("run-episodes-zero", lambda: run(UCRLVTR(env, jdp, episodes=2, seed=0), env, episodes=0))
    add("run-seed", lambda: run(UCRLVTR(env, jdp, episodes=2, seed=0), env, seed="x"))
    add("guard-mode", lambda: SensitivityGuard(1.0, mode="loose"))
    add("guard-bound", lambda: SensitivityGuard(float("inf")))
    add("guard-range", lambda: SensitivityGuard(1.0, 1.0, 0.0))
    # The server of each regression is Rust state the agent owns (privrl._core.VtrAgent), built
    # from a typed spec: a bad mode, a private server without the guard that enforces its
    # sensitivity, an LDP server without the users' randomizer (raw X, y would reach it) or a JDP
    # one given the randomizer's streams instead of its 2H mechanisms are refused. Chosen
    # statistics (the audits' adversarial user) enter through observe_statistics, checked whole.
    add("server-mode", lambda: _vtr_core("central"))
    add("server-jdp-unguarded", lambda: _vtr_core("jdp", guarded=False))
    add("server-ldp-without-randomizer", lambda: _vtr_core("ldp", noise=None))
    add("server-jdp-with-randomizer-streams", lambda: _vtr_core("jdp", noise="ldp"))
    add("server-ldp-with-mechanisms", lambda: _vtr_core("ldp", noise="jdp"))
    env22 = RandomLinearMixtureMDP(S=3, A=2, d=2, H=2, seed=0)  # H = d = 2, as the sums below

    def vtr22(privacy=None):
        return UCRLVTR(env22, privacy or NonPrivate(), episodes=4, seed=0)

    add(
        "server-one-step-statistics",  # one step's (X, y) must not be broadcast over the H steps
        lambda: vtr22(LocalDP(1.0, 1e-5))._core.observe_statistics(np.ones((1, 2)), np.ones(1)),
    )
    add("server-broadcast-y", lambda: vtr22(LocalDP(1.0, 1e-5)).observe_statistics(np.ones((2, 2)), 1.0))
    add("server-raw-shape", lambda: vtr22().observe_statistics(np.ones((2, 3)), np.ones(2)))
    add("server-raw-nan", lambda: vtr22().observe_statistics(np.ones((2, 2)), np.array([np.nan, 1])))
    add("server-raw-str", lambda: vtr22().observe_statistics(np.ones((2, 2)), np.array(["a", "b"])))
    add("server-message", lambda: vtr22().observe_statistics((np.ones((2, 2)), np.ones(2))))
    add("server-jdp-exact-sums", lambda: vtr22(jdp)._core.sums(0))
    add("server-ldp-noise", lambda: vtr22(LocalDP(1.0, 1e-5))._core.noise(0))
    add("server-regression-index", lambda: vtr22(jdp)._core.noise(1))
    add(
        "server-plus-chosen-statistics",
        lambda: UCRLVTRPlus(env22, jdp, episodes=4, seed=0).observe_statistics(np.ones((2, 2)), np.ones(2)),
    )

    # ------------------------------------------------ audit
    add("clopper-pearson-k", lambda: A.clopper_pearson(5, 3, 0.05))
    add("clopper-pearson-alpha", lambda: A.clopper_pearson(1, 3, 1.5))
    add("audit-samples-shape", lambda: A.audit_samples(np.ones((10, 2)), np.ones((10, 3))))
    add("audit-samples-nan", lambda: A.audit_samples(np.full((10, 2), np.nan), np.ones((10, 2))))
    add("audit-tree-pure", lambda: A.audit_ucrl_vtr_tree(1.0, 0.0, n_trials=10))
    add("audit-tree-trials", lambda: A.audit_ucrl_vtr_tree(1.0, 1e-5, n_trials=-5))

    # ------------------------------------------------ fuzzing audit 3 (/tmp/audit3/repro_misc.py)
    from privrl.agents import LinUCB
    from privrl.envs import ContextualBandit

    cb = ContextualBandit(np.eye(2) * 0.5, np.full((2, 3), 0.5))
    paper = JointDP(1.0, 1e-5, calibration="paper")
    add("linucb-paper-beta-scale-overflow", lambda: LinUCB(cb, paper, episodes=30, seed=0, beta_scale=1e308))
    add("vtr-paper-beta-scale-overflow", lambda: UCRLVTR(env, paper, episodes=30, seed=0, beta_scale=1e308))
    river = RiverSwimMixture(S=4, H=3)
    for i, v in enumerate(
        [np.full(4, np.nan), np.full(4, 1 + 5j), np.zeros((0, 4)), None, np.array(["1"] * 4)]
    ):
        add(f"initial-value-{i}", lambda v=v: river.initial_value(v))
        if i != 2:  # phi_v of an empty batch of (0, S) value vectors is an empty batch
            add(f"phi-v-{i}", lambda v=v: river.phi_v(v))
    add(
        "sample-next-state-bools", lambda: river.sample_next_state(True, True, True, np.random.default_rng(0))
    )
    for i, v in enumerate(["1", float("nan"), None, 1j, True]):
        add(f"normal-cdf-{i}", lambda v=v: acc.normal_cdf(v))
        add(f"log-normal-cdf-{i}", lambda v=v: acc.log_normal_cdf(v))
    add("audit-samples-complex", lambda: A.audit_samples(np.ones(100) * (1 + 9j), np.zeros(100)))
    add("audit-samples-strings", lambda: A.audit_samples(np.array(["1"] * 10), np.zeros(10)))
    add("guard-array-bound", lambda: SensitivityGuard(1.0, np.array([0.0]), 1.0))
    add("guard-string-bound", lambda: SensitivityGuard("1", 0.0, 1.0))
    add("guard-apply-lengths", lambda: SensitivityGuard(1.0, 0.0, 1.0).apply(np.ones((2, 3)) / 2, np.ones(3)))
    add("guard-apply-complex", lambda: SensitivityGuard(1.0).apply(np.ones((2, 3)) * 1j))
    return calls


def _psrl_calls(add, env, lenv, jdp):
    """PSRL's public edge (privrl.agents.PSRL, tabular: a FiniteMDP or a FeatureMap): its
    constructor's options, observe / act on a bad user, and a run past K."""
    import gymnasium as gym

    from privrl.agents import PSRL
    from privrl.envs import RiverSwim, Trajectory
    from privrl.envs.features import FeatureMap
    from privrl.experiment.runner import run
    from privrl.privacy.models import JointDP, LocalDP, NonPrivate

    env = RiverSwim(S=4, H=3)  # stationary: PSRL pools over h (it warns on a step-dependent kernel)
    lake = gym.make("FrozenLake-v1")
    for i, e in enumerate([lake, None, "FrozenLake-v1", 5]):
        add(f"psrl-env-{i}", lambda e=e: PSRL(e, jdp, episodes=10, seed=0))
    for i, p in enumerate(["jdp", 1.0, {"epsilon": 1}, JointDP, LocalDP(1.0, 1e-5), JointDP(1.0, 0.0)]):
        add(f"psrl-privacy-{i}", lambda p=p: PSRL(env, p, episodes=10, seed=0))
    add("psrl-mechanism", lambda: PSRL(env, JointDP(1.0, 1e-5, mechanism="honaker"), episodes=10))
    for i, k in enumerate(BAD_COUNTS):
        add(f"psrl-episodes-{i}", lambda k=k: PSRL(env, jdp, episodes=k, seed=0))
    for i, s in enumerate(BAD_SEEDS[:4]):  # a list of ints is a seed sequence
        add(f"psrl-seed-{i}", lambda s=s: PSRL(env, jdp, episodes=10, seed=s))
    for i, m in enumerate([0, -1, 1.0, 1.5, True, "2", None, 10**30, 2**32, 2**40]):
        add(f"psrl-m-{i}", lambda m=m: PSRL(env, jdp, episodes=10, seed=0, m=m))
    for i, b in enumerate([0, -1, 11, "foo", "EVERY", True, 1.0, None, "3", 2**70]):
        add(f"psrl-batches-{i}", lambda b=b: PSRL(env, jdp, episodes=10, seed=0, batches=b))
    options = [dict(sensitivity="no"), dict(sensitivity=None), dict(beta=1.0), dict(ties="lowest")]
    for i, kw in enumerate(options):
        add(f"psrl-option-{i}", lambda kw=kw: PSRL(env, jdp, episodes=10, seed=0, **kw))

    def observe_bad(traj_fn, sensitivity="clip"):
        a = PSRL(env, jdp, episodes=4, seed=0, sensitivity=sensitivity)
        t = env.sample_episode(a.policy(), np.random.default_rng(0))
        a.observe(traj_fn(t))

    for i, f in enumerate(
        [
            lambda t: "trajectory",
            lambda t: (t.states, t.actions, t.rewards),
            lambda t: Trajectory(t.states[:-1], t.actions, t.rewards),
            lambda t: Trajectory(t.states, t.actions[:-1], t.rewards),
            lambda t: Trajectory(t.states, t.actions, t.rewards[:-1]),
            lambda t: Trajectory(t.states - 10, t.actions, t.rewards),
            lambda t: Trajectory(t.states + 4, t.actions, t.rewards),
            lambda t: Trajectory(t.states, t.actions + 7, t.rewards),
            lambda t: Trajectory(t.states.astype(float), t.actions, t.rewards),
            lambda t: Trajectory(t.states, t.actions.astype(bool), t.rewards),
            lambda t: Trajectory(t.states, t.actions, np.full(3, np.nan)),
            lambda t: Trajectory(t.states, t.actions, np.full(3, -np.inf)),
            lambda t: Trajectory(t.states, t.actions, np.array(["a"] * 3)),
            lambda t: Trajectory(t.states, t.actions, np.zeros(3, complex)),
        ]
    ):
        add(f"observe-psrl-{i}", lambda f=f: observe_bad(f))
    for i, r in enumerate([[0.0, -0.5, 1.0], [0.0, 5.0, 1.0]]):
        add(
            f"observe-psrl-reject-{i}",
            lambda r=r: observe_bad(lambda t: Trajectory(t.states, t.actions, np.array(r)), "reject"),
        )
    for i, (s, h) in enumerate([(4, 0), (-1, 0), (0, 3), (0, -1), (1.5, 0), (True, 0), ("1", 0), (None, 0)]):
        add(f"psrl-act-{i}", lambda s=s, h=h: PSRL(env, jdp, episodes=4, seed=0).act(s, h))
    add("psrl-act-array", lambda: PSRL(env, jdp, episodes=4, seed=0).act(np.array([1]), 0))
    add("psrl-run-beyond-K", lambda: run(PSRL(env, jdp, episodes=2, seed=0), env, episodes=3))
    add("psrl-run-env-mismatch", lambda: run(PSRL(env, jdp, episodes=2, seed=0), lenv))

    def policy_after_k():
        a = PSRL(env, jdp, episodes=2, seed=0)
        run(a, env, seed=1)
        a.policy()

    add("psrl-policy-beyond-K", policy_after_k)
    add("psrl-horizon-memory", lambda: PSRL(FeatureMap.one_hot(4, 2, 2**40), jdp, episodes=10, seed=0))
    add("psrl-bounds-memory", lambda: PSRL(env, NonPrivate(), episodes=2**40, seed=0))  # B = K


CORPUS = _calls()


def test_controls_succeed():
    """The same entry points with well-formed arguments work, so the corpus fails for its bad
    argument and not for a mistake in the call."""
    from _helpers import calibration as cal
    from privrl import kernels as kn
    from privrl.agents import LSVIUCB, UCRLVTR
    from privrl.envs import RandomLinearMDP, RandomLinearMixtureMDP
    from privrl.experiment.runner import run
    from privrl.privacy.models import JointDP, LocalDP, NonPrivate

    for kind in kn.MECHANISMS:
        m = kn.make_prefix_mechanism(kind, 3, 4, seed=0)
        m.push([1.0, 2.0, 3.0])
        m.step_variance(1), m.leaf_coefficients(1)
        kn.make_prefix_mechanism(kind, (2, 2), 4, seed=0).push(np.eye(2))
    kn.TreeAggregator(3, 10, noise="discrete_gaussian", seed=0, grid_bits=10).push([1.0, 0.0, 0.0])
    kn.NoiseStream("gaussian", 1.0, seed=0).vectors(3, 2)
    kn.NoiseStream("gaussian", 1.0, seed=0).symmetric(1, 3, 2.0)
    kn.RankOneInverse(3, 1.0).update([0.1, 0.2, 0.3])
    phi, w, inv = np.ones((4, 3)) / 3, np.ones(3), np.eye(3)
    kn.optimistic_q(phi, w, inv, 1.0)
    kn.optimistic_values(phi, w, inv, 1.0, 2)
    kn.state_values(np.ones((6, 3)) / 3, w, inv, 1.0, 2, states=np.array([0, 2]))
    kn.spd_solve(np.eye(3), np.ones(3))
    cal.calibrate_ucrl_vtr(kind="jdp", epsilon=1.0, delta=1e-5, H=3, K=100, d=4, C_w=1.0, sampler="float")
    cal.calibrate_lsvi_ucb(kind="jdp", epsilon=1.0, delta=1e-5, H=3, K=100, d=4, sampler="float")
    env = RandomLinearMixtureMDP(S=4, A=2, d=3, H=3, seed=0)
    lenv = RandomLinearMDP(S=4, A=2, d=3, H=3, seed=0)
    env.sample_next_state(0, 0, 0, np.random.default_rng(0))
    a = UCRLVTR(env, JointDP(1.0, 1e-5), episodes=4, seed=0)
    a.observe(env.sample_episode(a.policy(), np.random.default_rng(0)))
    b = LSVIUCB(lenv, JointDP(1.0, 1e-5), episodes=4, seed=0)
    b.observe(lenv.sample_episode(b.policy(), np.random.default_rng(0)))
    run(UCRLVTR(env, JointDP(1.0, 1e-5), episodes=2, seed=0), env, seed=1)
    for mode in ("exact", "jdp", "ldp"):
        _vtr_core(mode, guarded=mode != "exact").observe_statistics(np.ones((2, 2)), np.ones(2))
    env22 = RandomLinearMixtureMDP(S=3, A=2, d=2, H=2, seed=0)
    for privacy in (NonPrivate(), JointDP(1.0, 1e-5), LocalDP(1.0, 1e-5)):
        a = UCRLVTR(env22, privacy, episodes=4, seed=0)
        a.observe_statistics(np.ones((2, 2)), np.ones(2))
        a._core.noise(0) if privacy.kind == "jdp" else a._core.sums(0)
    from privrl.agents import PSRL
    from privrl.envs import RiverSwim, Trajectory

    env = RiverSwim(S=4, H=3)  # as _psrl_calls
    for sensitivity in ("clip", "reject"):  # the PSRL cases' controls
        p = PSRL(env, JointDP(1.0, 1e-5), episodes=4, seed=0, m=2, batches=2, sensitivity=sensitivity)
        t = env.sample_episode(p.policy(), np.random.default_rng(0))
        p.observe(Trajectory(t.states, t.actions, np.array([0.0, 0.5, 1.0])))
        p.act(np.int64(3), 2), p.act(np.array(1), 0)
    run(PSRL(env, JointDP(1.0, 1e-5), episodes=2, seed=0), env, seed=1)


def test_corpus_is_large():
    assert len(CORPUS) >= 200, len(CORPUS)
    assert len({name for name, _ in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("name,call", CORPUS, ids=[n for n, _ in CORPUS])
def test_malformed_call_raises(name, call):
    with pytest.raises(ACCEPTED):
        call()


def run_corpus() -> dict:
    """Run every call, classify the outcome (used by the subprocess test)."""
    import warnings

    out = {"n": len(CORPUS), "no_error": [], "wrong_type": []}
    for name, call in CORPUS:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                call()
        except ACCEPTED:
            continue
        except BaseException as e:
            out["wrong_type"].append(f"{name}: {type(e).__name__}: {e}")
        else:
            out["no_error"].append(name)
    return out


def test_corpus_in_a_subprocess_exits_normally():
    """A Rust abort / panic-abort / segfault would kill the interpreter: run everything in a
    child process and require a normal exit with every call raising an accepted exception."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = (
        f"import json, sys; sys.path.insert(0, {here!r}); import test_malformed as t; "
        "print('RESULT' + json.dumps(t.run_corpus()))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-3000:])
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")][-1]
    res = json.loads(line[len("RESULT") :])
    assert res["n"] >= 200
    assert res["no_error"] == [] and res["wrong_type"] == [], res


def test_bad_seeds_are_named_at_every_edge():
    """A bad seed is refused where it enters (agents, random environments, the bandit reduction,
    run) with a message naming the seed, not by numpy further in; the seeds numpy takes pass."""
    from privrl import run
    from privrl.agents import LSVIUCB, UCRLVTR, LinUCB
    from privrl.envs import ContextualBandit, RandomLinearMDP, RandomLinearMixtureMDP
    from privrl.privacy import JointDP

    jdp = JointDP(1.0, 1e-5)
    mix = RandomLinearMixtureMDP(S=3, A=2, d=2, H=2, seed=0)
    lin = RandomLinearMDP(5, 2, 3, 2, seed=0)
    X, y = np.eye(4), [0, 1, 0, 1]
    edges = {
        "UCRLVTR": lambda s: UCRLVTR(mix, jdp, episodes=2, seed=s),
        "LSVIUCB": lambda s: LSVIUCB(lin, jdp, episodes=2, seed=s),
        "LinUCB": lambda s: LinUCB(ContextualBandit.from_classification(X, y), jdp, episodes=2, seed=s),
        "RandomLinearMDP": lambda s: RandomLinearMDP(5, 2, 3, 2, seed=s),
        "RandomLinearMixtureMDP": lambda s: RandomLinearMixtureMDP(S=3, A=2, d=2, H=2, seed=s),
        "from_classification": lambda s: ContextualBandit.from_classification(X, y, seed=s),
        "run": lambda s: run(UCRLVTR(mix, jdp, episodes=2, seed=0), mix, seed=s),
    }
    for name, make in edges.items():
        for bad in (-1, True, 1.5, "7", [3, -2], object()):
            with pytest.raises(ValueError, match=r"^seed must be None, an integer >= 0"):
                make(bad)
                pytest.fail(f"{name} took the seed {bad!r}")
        for good in (None, 0, 2**70, [1, 2], np.random.SeedSequence(5)):
            make(good)
    with pytest.raises(ValueError, match=r"^seed must be .* SeedSequence, got Generator"):
        UCRLVTR(mix, jdp, episodes=2, seed=np.random.default_rng(0))  # the agent spawns 3 streams
    RandomLinearMDP(5, 2, 3, 2, seed=np.random.default_rng(0))  # numpy takes a Generator there


def test_evaluate_on_a_model_refuses_a_bad_seed_as_on_a_gymnasium_env():
    """evaluate on a model (exact) or a bandit ignores seed, but took any: seed="7", -1, 1.5 or
    True gave the value without a word, while the same call on a gymnasium env (and episodes=-1 on
    the model) was refused. The seed is checked on every environment; a good one gives the value
    as before, the same for every seed."""
    from privrl import evaluate
    from privrl.envs import ContextualBandit, RiverSwimMixture

    mdp = RiverSwimMixture(S=4, H=5)
    bandit = ContextualBandit(np.eye(3) * 0.5, np.array([[0.1, 0.9], [0.8, 0.2], [0.5, 0.4]]))
    for env, pi in ((mdp, mdp.optimal_policy()), (bandit, np.array([[1, 0, 1]]))):
        for bad in (-1, True, 1.5, "7", [3, -2], object()):
            with pytest.raises(ValueError, match=r"^seed must be None, an integer >= 0"):
                evaluate(pi, env, seed=bad)
        values = {
            evaluate(pi, env, seed=good).value for good in (None, 0, 2**70, [1, 2], np.random.default_rng(0))
        }
        assert len(values) == 1
