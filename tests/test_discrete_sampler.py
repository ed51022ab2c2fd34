"""Issue 14, item 1: every agent's default release draws its noise with the exact discrete samplers
(Canonne, Kamath & Steinke 2020) on the lattice scale * 2^-24, accounts for them as such, and says
so in its privacy report; the float samplers stay available and are named."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import privrl
from privrl import kernels as kn
from privrl.agents import LSVIUCB, UCRLVTR, LinUCB, UCRLVTRPlus
from privrl.audit.report import format_privacy_report
from privrl.envs import ContextualBandit, RandomLinearMDP, RandomLinearMixtureMDP, RiverSwimMixture
from privrl.exceptions import PrivacyParameterError, PrivacyWarning
from privrl.privacy import JointDP, LocalDP
from privrl.privacy.plans import plan_rounded_draws, plan_rounding_mu, rounding_per_draw

MIX = RandomLinearMixtureMDP(S=5, A=2, d=3, H=3, seed=0)
LIN = RandomLinearMDP(S=5, A=2, d=3, H=3, seed=0)


def _agents():
    for model in (
        JointDP(1.0, 1e-5, calibration="paper"),
        LocalDP(1.0, 1e-5, calibration="paper"),
        JointDP(1.0, calibration="paper"),
        LocalDP(1.0, calibration="paper"),
    ):
        for cls in (UCRLVTR, UCRLVTRPlus):
            yield cls, MIX, model
    for model in (
        JointDP(1.0, 1e-5, calibration="paper"),
        JointDP(1.0, calibration="paper"),
        JointDP(1.0, 1e-5, calibration="practical"),
    ):
        yield LSVIUCB, LIN, model
    yield UCRLVTR, MIX, JointDP(1.0, 1e-5, calibration="practical")  # BLT, the practical default


@pytest.mark.parametrize(("cls", "env", "model"), list(_agents()), ids=lambda x: getattr(x, "label", None))
def test_every_default_agent_uses_the_discrete_samplers_and_says_so(cls, env, model):
    assert model.sampler == "discrete"
    agent = cls(env, model, episodes=40, seed=0)
    cal = agent.calibration
    law = "laplace" if model.delta == 0 else "gaussian"
    assert cal.sampler == "discrete" and cal.grid_bits == 24 and cal.node_noise == f"discrete_{law}"
    rep = agent.privacy_report()
    assert rep["sampler"]["name"] == "discrete" and rep["within_target"]["tight"]
    line = next(s for s in format_privacy_report(rep).splitlines() if s.strip().startswith("sampler:"))
    assert f"exact discrete {law.capitalize()}" in line and "2^-24" in line and "Canonne" in line
    assert rep["tight"]["budget"][0] <= model.epsilon * (1 + 1e-9)
    privrl.run(agent, env, seed=1)  # runs end to end (engine and lattice sums)


def test_float_sampler_is_named_in_the_report_and_label():
    model = JointDP(1.0, 1e-5, sampler="float", calibration="paper")
    agent = UCRLVTR(MIX, model, episodes=20, seed=0)
    assert agent.calibration.node_noise == "gaussian" and model.label.endswith(", float)")
    text = format_privacy_report(agent.privacy_report())
    assert "sampler: float" in text and "Mironov" in text


def _on_lattice(x, unit):
    """Integer multiples of `unit` up to the one rounding of the final scaling (off-lattice values
    would have fractional parts spread over [0, 1))."""
    q = np.asarray(x) / unit
    return bool(np.all(np.abs(q - np.round(q)) < 1e-6))


def _tree_noise(model, k, seeds):
    out = []
    for s in seeds:
        agent = UCRLVTR(MIX, model, episodes=64, seed=s)
        for _ in range(k):  # users whose statistics enter the trees
            agent.observe_statistics(*_raw(agent, np.random.default_rng(s)))
        out.append(agent._core.noise(0))
    return out, agent


def _raw(agent, rng):
    X = rng.uniform(-1.0, 1.0, (agent.H, agent.d))
    return X, rng.uniform(0.0, agent.H, agent.H)


def test_released_jdp_noise_has_the_sampler_variance_and_lives_on_the_lattice():
    # after k = 7 users the release sums popcount(7) = 3 tree nodes: off-diagonal matrix entries of
    # variance 3 * 2 sigma^2 / c^2 = 3 sigma^2 (c = sqrt 2), diagonal 6 sigma^2, vector 3 sigma^2
    model = JointDP(1.0, 1e-5, calibration="tight")
    noises, agent = _tree_noise(model, 7, range(150))
    sigma, unit = agent.calibration.sigma_B, agent.calibration.sigma_B * 2.0**-24
    mats = np.array([m for m, _ in noises])  # (seeds, H, d, d)
    vecs = np.array([v for _, v in noises])
    iu = np.triu_indices(agent.d, 1)
    n_off = mats[:, :, iu[0], iu[1]].size
    # sample variances of n normal draws: relative s.d. sqrt(2 / n); 5 of them
    tol = 5 * math.sqrt(2 / n_off)
    assert abs(mats[:, :, iu[0], iu[1]].var() / (3 * sigma**2) - 1) < tol
    d_idx = np.arange(agent.d)
    assert abs(mats[:, :, d_idx, d_idx].var() / (6 * sigma**2) - 1) < 5 * math.sqrt(
        2 / mats[:, :, d_idx, d_idx].size
    )
    assert abs(vecs.var() / (3 * agent.calibration.sigma_g**2) - 1) < 5 * math.sqrt(2 / vecs.size)
    # exact lattice values: integers in units of sigma 2^-24
    assert _on_lattice(mats, unit)


def test_ldp_messages_are_rounded_data_plus_integer_noise():
    model = LocalDP(2.0, 1e-5, calibration="tight")
    agent = UCRLVTR(MIX, model, episodes=20, seed=3)
    H, d = MIX.H, agent.d

    def privatize(X, y):  # the user's randomizer: its message, nothing sent
        gram, target = agent._core.user_message(0, X, y)
        return gram.reshape(H, d, d), target.reshape(H, d)

    rng = np.random.default_rng(0)
    X, y = rng.uniform(-0.5, 0.5, (MIX.H, agent.d)), rng.uniform(0, MIX.H, MIX.H)
    gram, target = privatize(X, y)
    unit_m, unit_v = agent.calibration.sigma_B * 2.0**-24, agent.calibration.sigma_g * 2.0**-24
    assert _on_lattice(gram, unit_m) and _on_lattice(target, unit_v)
    # the noise (message minus rounded data) has the sampler's variance over many messages
    grams = np.array([privatize(X, y)[0] for _ in range(3000)]) - np.einsum("hi,hj->hij", X, X)
    iu = np.triu_indices(agent.d, 1)
    off = grams[:, :, iu[0], iu[1]]
    assert abs(off.var() / agent.calibration.sigma_B**2 - 1) < 5 * math.sqrt(2 / off.size)


def test_lsvi_releases_are_lattice_sums():
    agent = LSVIUCB(LIN, JointDP(1.0, 1e-5, calibration="paper"), episodes=60, seed=0)
    privrl.run(agent, LIN, seed=0)
    cal = agent.calibration
    unit = cal.sigma_Lambda * 2.0**-24
    assert agent.batch > 0 and _on_lattice(agent._core.noise(), unit)
    # the H trees' releases: the design less its shift (lam + c_K + Upsilon) I, exact off the
    # diagonal; on it up to the rounding of adding the shift (half an ulp of the design entry,
    # 0.56e-6 lattice units here, within _on_lattice's 1e-6)
    rel = agent.release().design - (cal.lam + cal.shift) * np.eye(agent.d)
    assert _on_lattice(rel, unit)


def test_rounding_term_by_hand():
    # UCRL-VTR JDP tree, H = 3, K = 50 (6 nodes per leaf), d = 2: per draw 2^-24 (sqrt 2 / 2) d
    # (matrix) and 2^-24 sqrt(d) (vector), each over 6 nodes in H trees
    from privrl.agents.ucrl_vtr import calibration as ucrl_vtr

    plan = ucrl_vtr.release_plan("jdp", False, 3, 50, 2, "tree", "discrete")
    lam, u = plan.families
    assert rounding_per_draw(plan, lam) == pytest.approx(2.0**-24 * math.sqrt(2) / 2 * 2, rel=1e-15)
    assert rounding_per_draw(plan, u) == pytest.approx(2.0**-24 * math.sqrt(2), rel=1e-15)
    want = math.sqrt(3 * 6 * ((2.0**-24 * math.sqrt(2)) ** 2 + (2.0**-24 * math.sqrt(2)) ** 2))
    assert plan_rounding_mu(plan) == pytest.approx(want, rel=1e-12)
    assert plan_rounding_mu(ucrl_vtr.release_plan("jdp", False, 3, 50, 2, "tree", "float")) == 0.0
    # H trees of 6 nodes per leaf, for the matrix and the vector
    assert plan_rounded_draws(plan) == pytest.approx(3 * 6 * 2, rel=1e-12)


def test_rounding_that_outgrows_the_budget_names_the_episodes():
    # eps = 1e-3: K = 100 fits, K = 10^6 does not (the rounding grows with the rounded draws a user
    # enters, through K): the refusal says so instead of blaming epsilon alone
    env = RiverSwimMixture(S=6, H=20)
    UCRLVTR(env, JointDP(1e-3, 1e-7), episodes=100, seed=0)
    with pytest.raises(PrivacyParameterError, match="rounded draws one user's data enters") as e:
        UCRLVTR(env, JointDP(1e-3, 1e-7), episodes=10**6, seed=0)
    assert "fewer episodes" in str(e.value) and "sampler='float'" in str(e.value)


def test_discrete_lattice_too_fine_is_refused_at_construction():
    with pytest.raises(PrivacyParameterError, match="sampler='float'"):
        UCRLVTR(MIX, JointDP(1e13, 1e-5, calibration="paper"), episodes=1000, seed=0)
    with pytest.raises(PrivacyParameterError, match="sampler='float'"):
        UCRLVTR(MIX, JointDP(1e13, 1e-5, calibration="tight"), episodes=1000, seed=0)
    UCRLVTR(MIX, JointDP(1e13, 1e-5, sampler="float", calibration="tight"), episodes=1000, seed=0)
    # the paper's float noise fits no lattice and is refused for another reason: at eps = 1e13 the
    # classical Gaussian formula certifies only eps = 2.6e19 (base.check_certified)
    with pytest.raises(PrivacyParameterError, match=r"calibration='paper' at epsilon = 1e\+13"):
        UCRLVTR(MIX, JointDP(1e13, 1e-5, sampler="float", calibration="paper"), episodes=1000, seed=0)


def test_lattice_refusal_names_the_users_the_scale_holds():
    # the lattice overflows through K as much as through epsilon (JDP eps = 1, K = 1e9 overflows
    # it): the refusal says how many users the noise scale holds, not only "epsilon too large".
    # LDP LinUCB's scale does not depend on K, so that count is the exact boundary: the sums of
    # users' x x^T (entries up to 1) fit below 2^51 lattice steps of sigma_B 2^-24 / 2
    env = ContextualBandit(np.eye(3) * 0.9, np.full((3, 2), 0.5))
    model = LocalDP(0.01, 1e-10)
    sigma = LinUCB(env, model, episodes=10, seed=0).calibration.sigma_B
    fit = math.floor(2.0**51 * sigma * 2.0**-25)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)  # delta > 1/K
        LinUCB(env, model, episodes=fit, schedule=10**6, seed=0)
        with pytest.raises(PrivacyParameterError, match="too fine for sums") as e:
            LinUCB(env, model, episodes=fit + 1, schedule=10**6, seed=0)
        assert f"hold at most {fit:,} users" in str(e.value) and "fewer episodes" in str(e.value)
        assert "sampler='float'" in str(e.value)
        with pytest.raises(PrivacyParameterError, match="K too large for this epsilon"):
            LinUCB(env, JointDP(1.0, 1e-5), episodes=10**9, schedule=10**6, seed=0)


def test_mechanisms_without_a_discrete_sampler():
    assert JointDP(1.0, 1e-5, mechanism="honaker", calibration="paper").sampler == "float"
    with pytest.raises(PrivacyParameterError, match="no discrete"):
        JointDP(1.0, 1e-5, mechanism="factorization", sampler="discrete", calibration="paper")
    with pytest.raises(PrivacyParameterError, match="sampler must be"):
        LocalDP(1.0, 1e-5, sampler="exact", calibration="paper")


def test_discrete_laplace_matrix_diagonal_keeps_even_lattice_units():
    # the diagonal noise is 2 Z'_ii: data rounded to odd units would show through the parity
    tr = kn.TreeAggregator((2, 2), 8, noise="discrete_laplace", scale=1.0, seed=0, grid_bits=3, divisor=2.0)
    unit = 2.0**-3 / 2.0
    for t in range(8):
        tr.push(np.array([[unit * (2 * t + 1), 0.3], [0.3, unit * 3]]))
        diag = np.diag(tr.release()) / unit
        assert np.array_equal(diag, np.round(diag)) and np.all(diag % 2 == 0)


def test_discrete_blt_through_the_python_api():
    m = kn.make_prefix_mechanism("blt", 3, 16, noise="discrete_gaussian", scale=2.0, seed=0)
    for t in range(10):
        m.push(np.full(3, 0.1 * t))
    assert np.all(np.abs(m.release() - m.exact_sum()) < 50.0)
    with pytest.raises(PrivacyParameterError):
        kn.make_prefix_mechanism("blt", 3, 16, noise="discrete_laplace", scale=2.0, seed=0)


def test_zcdp_mu_inverts_the_conversion_and_beats_the_simple_bound():
    from privrl.privacy import accounting as a

    for eps, delta in ((1.0, 1e-5), (10.0, 1e-5), (0.1, 1e-8)):
        mu = a.zcdp_mu(eps, delta)
        assert a.zcdp_epsilon(0.5 * mu * mu, delta) == pytest.approx(eps, rel=1e-9)
        # Bun & Steinke's eps = rho + 2 sqrt(rho log(1/delta)) solved for rho by hand
        L = math.log(1 / delta)
        rho_simple = (math.sqrt(L + eps) - math.sqrt(L)) ** 2
        assert mu >= math.sqrt(2 * rho_simple)
    # zCDP is a valid, looser accounting than the exact Gaussian curve of one release
    assert a.zcdp_mu(1.0, 1e-5) < a.gaussian_mu(1.0, 1e-5)


def test_paper_pure_scales_pay_the_rounding_by_hand():
    from privrl.agents.ucrl_vtr import calibration as ucrl_vtr

    H, d, eps = 2, 2, 1.0
    cal = ucrl_vtr.calibrate_ucrl_vtr("ldp", eps, 0.0, H, 10, d, 1.0, sampler="discrete")
    flt = ucrl_vtr.calibrate_ucrl_vtr("ldp", eps, 0.0, H, 10, d, 1.0, sampler="float")
    # per user and step one matrix draw (2^-24 (c/2) d^2, c = 2) and one vector draw (2^-24 d)
    rounding = H * (2.0**-24 * d * d + 2.0**-24 * d)
    assert cal.sigma_B / flt.sigma_B == pytest.approx(eps / (eps - rounding), rel=1e-12)
    assert cal.sigma_g / flt.sigma_g == pytest.approx(eps / (eps - rounding), rel=1e-12)


def test_the_kernels_default_law_is_the_agents_discrete_sampler_and_the_agents_names_are_pointed_at_it():
    """The kernels' default law (noise=None) is a default agent's "discrete_gaussian" (it was the
    continuous "gaussian", sampler="float"): with the agent's sigma_B a default TreeAggregator
    releases on the agent's lattice, as with the agent's own node_noise, and the float law off it.
    The agents' sampler names "discrete" / "float" were refused with the bare list of laws; now
    the refusal gives the mapping."""
    cal = UCRLVTR(MIX, JointDP(1.0, 1e-5), episodes=20, seed=0).calibration
    floated = UCRLVTR(MIX, JointDP(1.0, 1e-5, sampler="float"), episodes=20, seed=0).calibration
    assert cal.node_noise == "discrete_gaussian" and floated.node_noise == "gaussian"
    sigma, unit = cal.sigma_B, cal.sigma_B * 2.0**-cal.grid_bits
    leaf = np.full(4, 0.3)
    for noise, on_lattice in ((None, True), (floated.node_noise, False), (cal.node_noise, True)):
        extra = {} if noise is None else {"noise": noise}
        tree = kn.TreeAggregator(4, 8, scale=sigma, seed=1, grid_bits=cal.grid_bits, **extra)
        assert tree.noise_kind == (noise or cal.node_noise)
        tree.push(leaf)
        units = tree.release() / unit
        assert (np.abs(units - np.round(units)).max() < 1e-6) == on_lattice
    for name in ("discrete", "float"):
        with pytest.raises(PrivacyParameterError, match=r"agent\.calibration\.node_noise"):
            kn.TreeAggregator(4, 8, noise=name)
        with pytest.raises(PrivacyParameterError, match="'discrete_gaussian' / 'discrete_laplace'"):
            kn.NoiseStream(name)


def _nearest_even_multiple(v: float, unit: float, parity: int = 1) -> float:
    """The multiple of parity * unit nearest to v, halves to the even multiple: the float
    coordinate v / (parity * unit) rounded from the definition with Python's fractions,
    independently of numpy's rounding."""
    from fractions import Fraction

    q = Fraction(v / (parity * unit))
    lo = math.floor(q)
    frac = q - lo
    k = lo + 1 if frac > Fraction(1, 2) or (frac == Fraction(1, 2) and lo % 2 == 1) else lo
    return float(k * parity) * unit


@pytest.mark.parametrize(
    ("noise", "scale", "bits", "symmetric"),
    [
        ("discrete_gaussian", 1.0, 4, False),
        ("discrete_gaussian", 3.0, 24, False),
        ("discrete_laplace", 2.0, 6, True),
    ],
)
def test_round_to_grid_is_the_nearest_lattice_point_halves_to_even(noise, scale, bits, symmetric):
    """The data side of the discrete samplers' lattice (what a user's message is rounded to before
    the exact integer noise): the nearest lattice point, exact halves to the even one, and for
    symmetric discrete Laplace matrices an even multiple on the diagonal. Checked on exact halves,
    negatives, zeros and random values, on both of round_to_grid's paths (below and above
    unit * 1e300)."""
    st = kn.NoiseStream(noise, scale, seed=0, grid_bits=bits)
    unit = st.lattice_unit(symmetric)
    rng = np.random.default_rng(1)
    halves = (np.arange(-6, 7) + 0.5) * unit  # exact ties: k + 1/2 units
    x = np.concatenate([halves, [0.0, -0.0, unit, -unit], rng.normal(0.0, 40 * unit, 40)])
    if symmetric:
        d = 7
        m = rng.normal(0.0, 40 * unit, (3, d, d))
        m = m + np.swapaxes(m, 1, 2)
        m[0, np.arange(d), np.arange(d)] = halves[:d] * 2  # odd multiples: ties for the even rule
        got = st.round_to_grid(m, symmetric=True)
        for idx in np.ndindex(m.shape):
            parity = 2 if idx[1] == idx[2] else 1
            assert got[idx] == _nearest_even_multiple(float(m[idx]), unit, parity), idx
    got = st.round_to_grid(x, symmetric=symmetric)
    want = [_nearest_even_multiple(float(v), unit) for v in x]
    assert got.tolist() == want
    plain = st.lattice_unit()  # the errstate path (above unit * 1e300): the same rule
    big = np.array([3.5, -2.5, 7.25]) * plain * 1e300
    if np.isfinite(big).all():
        assert st.round_to_grid(big).tolist() == [_nearest_even_multiple(float(v), plain) for v in big]


@pytest.mark.parametrize("noise", ["gaussian", "discrete_gaussian", "discrete_laplace"])
def test_round_to_grid_keeps_the_input_shape(noise):
    """round_to_grid returns an array of x's shape, as a numpy ufunc would: a 0-d array for a Python
    or numpy scalar or a 0-d array (it was shape (1,)), and each value is the one the same number
    gets inside a 1-D array. (grid_bits only for the discrete laws: "gaussian" has no lattice and
    refuses one.)"""
    bits = 3 if noise.startswith("discrete") else kn.DEFAULT_GRID_BITS
    st = kn.NoiseStream(noise, 1.0, seed=0, grid_bits=bits)
    for x in (0.3, -2, True, np.float64(0.3), np.float32(-1.7), np.array(0.3), [0.3], np.full((2, 3), 0.7)):
        got = st.round_to_grid(x)
        assert isinstance(got, np.ndarray) and got.shape == np.shape(x), repr(x)
        flat = st.round_to_grid(np.ravel(np.asarray(x, dtype=np.float64)))
        assert np.array_equal(got.ravel(), flat), repr(x)


@pytest.mark.parametrize("noise", ["discrete_gaussian", "discrete_laplace", "gaussian", "laplace"])
def test_the_default_divisor_is_one_the_sampler_draws_with(noise):
    """divisor=None is 2 for discrete Laplace (the only integer divisor in the paper; its sampler
    refuses sqrt(2)) and continuous Laplace (App. "Pure DP", tests/test_default_divisor.py) and
    sqrt(2) for the Gaussian laws, on NoiseStream and the continual mechanisms alike: with the
    defaults privatize(m, symmetric=True) raised for discrete Laplace, and lattice_unit(True)
    answered grid / sqrt(2), a lattice no draw lives on."""
    want = 2.0 if noise in ("discrete_laplace", "laplace") else math.sqrt(2.0)
    m = np.eye(3)[None] * 0.3
    for call in ("symmetric", "privatize"):
        a, b = kn.NoiseStream(noise, 1.0, seed=0), kn.NoiseStream(noise, 1.0, seed=0)
        args = (1, 3) if call == "symmetric" else (m,)
        kw = {} if call == "symmetric" else {"symmetric": True}
        got, ref = getattr(a, call)(*args, **kw), getattr(b, call)(*args, divisor=want, **kw)
        assert got.tolist() == ref.tolist()
    st = kn.NoiseStream(noise, 1.0, seed=0)
    assert st.lattice_unit(True) == st.lattice_unit(True, want)
    assert st.round_to_grid(m, symmetric=True).tolist() == st.round_to_grid(m, True, want).tolist()
    if noise == "discrete_laplace":
        assert st.lattice_unit(True) == 2.0**-24 / 2
    tree = kn.TreeAggregator((3, 3), 4, noise=noise, seed=0)
    kind = {"discrete_laplace": "tree", "laplace": "honaker"}.get(noise, "blt")  # kinds it takes
    other = kn.make_prefix_mechanism(kind, (3, 3), 4, noise=noise, seed=0)
    assert tree.divisor == other.divisor == want


@pytest.mark.parametrize(
    ("noise", "divisor"),
    [
        ("discrete_laplace", 1.5),
        ("discrete_laplace", math.sqrt(2.0)),
        ("discrete_laplace", 65.0),
        ("discrete_gaussian", 1.5),
        ("discrete_gaussian", 9.0),
    ],
)
def test_lattice_unit_refuses_a_divisor_the_sampler_refuses(noise, divisor):
    """lattice_unit / round_to_grid answered for any divisor (grid / 1.5 for discrete Laplace),
    though the sampler refuses it: no draw lives on that lattice. They now ask the sampler's own
    rule (the same message as a draw's)."""
    st = kn.NoiseStream(noise, 1.0, seed=0)
    with pytest.raises(PrivacyParameterError, match="divisor") as drawn:
        st.symmetric(1, 2, divisor)
    for call in (
        lambda: st.lattice_unit(True, divisor),
        lambda: st.round_to_grid(np.eye(2), symmetric=True, divisor=divisor),
    ):
        with pytest.raises(PrivacyParameterError, match="divisor") as got:
            call()
        assert str(got.value) == str(drawn.value)
    assert st.lattice_unit(False, divisor) == 2.0**-24  # vectors take no divisor
