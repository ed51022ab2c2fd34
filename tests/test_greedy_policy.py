"""agent.greedy_policy(): the policy greedy for the released estimate (no bonus, no draw, ties to
the lowest action), post-processing of the billboard only, with no side effect on the run."""

from __future__ import annotations

import numpy as np
import pytest

import privrl
from privrl.agents import LSVIUCB, UCRLVTR, LinUCB, UCRLVTRPlus
from privrl.envs import ContextualBandit, LinearMDP, RandomLinearMDP, RiverSwimMixture
from privrl.privacy import JointDP, NonPrivate


def _bandit() -> ContextualBandit:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    return ContextualBandit.from_classification(X, (X[:, 0] > 0).astype(int) + (X[:, 1] > 0), seed=0)


def _make(algo: str, privacy, exploration: str, seed: int = 0, episodes: int = 60):
    if algo == "lsvi":
        env = RandomLinearMDP(S=5, A=3, d=4, H=3, seed=1)
        return env, LSVIUCB(env, privacy, episodes=episodes, seed=seed, exploration=exploration)
    if algo == "linucb":
        env = _bandit()
        return env, LinUCB(env, privacy, episodes=episodes, seed=seed, exploration=exploration)
    env = RiverSwimMixture(S=4, H=4)
    cls = UCRLVTR if algo == "vtr" else UCRLVTRPlus
    return env, cls(env, privacy, episodes=episodes, seed=seed, exploration=exploration)


ALGOS = ("lsvi", "vtr", "vtr_plus", "linucb")
PRIVACY = {
    "none": NonPrivate,
    "jdp": lambda: JointDP(1.0, 1e-5),
    "adaptive": lambda: JointDP(1.0, 1e-5, calibration="adaptive"),
}


@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize("privacy", sorted(PRIVACY))
@pytest.mark.parametrize("exploration", ("optimism", "sampling"))
def test_greedy_policy_leaves_the_run_unchanged(algo, privacy, exploration):
    env, plain = _make(algo, PRIVACY[privacy](), exploration)
    _, looked = _make(algo, PRIVACY[privacy](), exploration)
    first = looked.greedy_policy()  # a fresh agent: before any user
    shape = (1, env.S) if algo == "linucb" else (env.H, env.S)
    assert first.shape == shape and first.dtype == np.int64 == looked.policy().dtype
    runs: dict[str, list] = {"plain": [], "looked": []}
    for block in range(4):
        for name, agent in (("plain", plain), ("looked", looked)):
            if name == "looked":
                g = agent.greedy_policy()
                assert np.array_equal(agent.greedy_policy(), g)  # repeated calls agree
                assert ((g >= 0) & (g < env.A)).all()
            runs[name].append(privrl.run(agent, env, episodes=15, seed=block))
    for a, b in zip(runs["plain"], runs["looked"], strict=True):
        assert np.array_equal(a.regret, b.regret) and np.array_equal(a.returns, b.returns)
    assert plain.policy_updates == looked.policy_updates
    assert np.array_equal(plain.policy(), looked.policy())
    assert np.array_equal(plain.greedy_policy(), looked.greedy_policy())


@pytest.mark.parametrize("algo", ALGOS)
def test_greedy_policy_survives_save_and_load(algo, tmp_path):
    env, agent = _make(algo, JointDP(1.0, 1e-5), "sampling")
    privrl.run(agent, env, episodes=30, seed=0)
    before = agent.greedy_policy()
    agent.save(tmp_path / "a.privrl")
    again = type(agent).load(tmp_path / "a.privrl")
    assert np.array_equal(again.greedy_policy(), before)
    # and the loaded agent continues as the original does
    a, b = privrl.run(agent, env, episodes=10, seed=5), privrl.run(again, env, episodes=10, seed=5)
    assert np.array_equal(a.regret, b.regret)


def _greedy(q: np.ndarray) -> np.ndarray:
    return np.argmax(q, axis=-1)  # numpy's argmax: the first maximum, the lowest action


@pytest.mark.parametrize("privacy", ("none", "jdp"))
def test_lsvi_greedy_is_the_released_weights_argmax(privacy):
    env = RandomLinearMDP(S=6, A=3, d=4, H=3, seed=2)
    agent = LSVIUCB(env, PRIVACY[privacy](), episodes=80, seed=0, exploration="optimism")
    privrl.run(agent, env, episodes=80, seed=1)
    w = agent.release().weights  # (H, d)
    q = np.clip(np.einsum("sad,hd->hsa", agent.features, w), 0.0, env.H)
    assert np.array_equal(agent.greedy_policy(), _greedy(q))


def test_lsvi_greedy_learns_a_tabular_model():
    # tabular (one-hot) features, deterministic transitions, many non-private users: the greedy
    # policy's value is the optimal value (it is optimal on every state it reaches)
    S, A, H = 3, 2, 2
    rng = np.random.default_rng(0)
    phi = np.eye(S * A).reshape(S, A, S * A)
    mu = np.zeros((H, S, S * A))
    for h in range(H):
        for j in range(S * A):
            mu[h, (j + h) % S, j] = 1.0  # deterministic transitions
    theta = rng.random((H, S * A))
    env = LinearMDP(phi, mu, theta, np.full(S, 1.0 / S))
    agent = LSVIUCB(env, NonPrivate(), episodes=3000, seed=0, exploration="optimism")
    privrl.run(agent, env, seed=1)
    v_star = privrl.evaluate(env.optimal_policy(), env).value
    assert privrl.evaluate(agent.greedy_policy(), env).value == pytest.approx(v_star, abs=1e-2)


@pytest.mark.parametrize("privacy", ("none", "jdp"))
@pytest.mark.parametrize("exploration", ("optimism", "sampling"))
def test_linucb_greedy_is_the_mean_reward_argmax(privacy, exploration):
    env = _bandit()
    agent = LinUCB(env, PRIVACY[privacy](), episodes=300, seed=0, exploration=exploration)
    privrl.run(agent, env, seed=1)
    w = agent.release().weights  # (A, p)
    x = env.contexts / np.maximum(1.0, np.linalg.norm(env.contexts, axis=1, keepdims=True))
    assert np.array_equal(agent.greedy_policy(), _greedy(x @ w.T)[None, :])


@pytest.mark.parametrize("cls", (UCRLVTR, UCRLVTRPlus))
def test_vtr_greedy_learns_riverswim(cls):
    env = RiverSwimMixture(S=4, H=4)
    v = np.zeros(env.S)
    for h in reversed(range(env.H)):  # the uniformly random policy, by backward induction
        v = (env.R[h] + env.P[h] @ v).mean(axis=1)
    random_value = float(env.init_dist @ v)
    v_star = privrl.evaluate(env.optimal_policy(), env).value
    agent = cls(env, NonPrivate(), episodes=400, seed=0)
    privrl.run(agent, env, seed=1)
    value = privrl.evaluate(agent.greedy_policy(), env).value
    assert value >= random_value
    assert value == pytest.approx(v_star, abs=1e-6)
    private = cls(env, JointDP(1.0, 1e-5, calibration="adaptive"), episodes=400, seed=0)
    privrl.run(private, env, seed=1)
    assert privrl.evaluate(private.greedy_policy(), env).value >= random_value


def test_adaptive_lsvi_greedy_is_its_planner_without_the_width():
    env = RandomLinearMDP(S=6, A=3, d=4, H=3, seed=2)
    agent = LSVIUCB(env, JointDP(1.0, 1e-5, calibration="adaptive"), episodes=80, seed=0)
    privrl.run(agent, env, episodes=80, seed=1)
    q = np.einsum("sad,hd->hsa", agent.features, agent.release().weights)
    q = np.minimum(q, (env.H - np.arange(env.H))[:, None, None])  # min(phi^T w~_h, H - h)
    assert np.array_equal(agent.greedy_policy(), _greedy(q))


@pytest.mark.parametrize("privacy", ("none", "jdp"))
def test_vtr_greedy_is_value_iteration_on_the_released_weights(privacy):
    env = RiverSwimMixture(S=5, H=4)
    agent = UCRLVTR(env, PRIVACY[privacy](), episodes=60, seed=0)
    privrl.run(agent, env, seed=1)
    w = agent.release().weights  # (H, d)
    v, pi = np.zeros(env.S), np.zeros((env.H, env.S), dtype=np.int64)
    for h in reversed(range(env.H)):
        phi_v = np.einsum("sptd,t->spd", agent.mixture_features, v)
        q = np.clip(env.R[h] + phi_v @ w[h], 0.0, env.H)
        pi[h], v = _greedy(q), q.max(axis=1)
    assert np.array_equal(agent.greedy_policy(), pi)


def test_evaluate_on_a_model_names_what_a_policy_is():
    """privrl.evaluate(lambda s, h: 0, model), a callable policy (evaluate takes one on a gymnasium
    environment), or a name or None, said "policy must be an int array of shape (H, S) = (5, 4),
    got ()". Now a TypeError says what a model takes; arrays, lists and agents as before."""
    from privrl.envs.datasets import load_bandit

    env = RiverSwimMixture(S=4, H=5)
    for model in (env, load_bandit("wine", seed=0)):
        for bad in (lambda s, h: 0, "greedy", None, 3):
            with pytest.raises(
                TypeError, match=r"on a model, policy is an \(H, S\) int array or a privrl agent"
            ):
                privrl.evaluate(bad, model)
    table = np.zeros((5, 4), int)
    assert privrl.evaluate(table.tolist(), env).value == privrl.evaluate(table, env).value
    assert privrl.evaluate(UCRLVTR(env, NonPrivate(), episodes=5, seed=0), env).exact
