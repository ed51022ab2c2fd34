"""The LDP user side apart from the server (Cor. 2; Alg. 1 and Alg. 3 under LDP): the client a
user's device runs (``agent.ldp_client()``), the message it sends (``LdpMessage``) and its checks.

Under LocalDP only the user's randomized message ever leaves the user. ``agent.observe`` simulates
that inside one process; for a deployment the user side runs on the device instead::

    client = agent.ldp_client()  # server: public values only, no noise key
    # ... pickle the client, ship it to the device ...
    trajectory = env.sample_episode(client.policy, rng)  # device: the user acts
    message = client.privatize(trajectory)  # device: guard + randomizer, its own OS-entropy noise
    agent.receive(message)  # server: adds the message, releases the next billboard

LinUCB's client also serves a live user with its own context vector ``x``, as the agent's
``choose`` / ``update`` do: ``arm = client.choose(x)``, ``message = client.privatize_update(x, arm,
reward)``. The client runs the agent's own Rust code for the user side (the statistics from the billboard,
the sensitivity guard, the randomizer): one implementation for ``observe`` and the client.
"""

from __future__ import annotations

import math
import os
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from privrl import _core
from privrl.common.checks import (
    all_finite,
    check_real,
    check_symmetric_stack,
    is_index,
    numeric_array,
    value_range,
)
from privrl.common.errors import AssumptionError, NonFiniteError, ShapeError
from privrl.common.kinds import array_value, integer_value
from privrl.envs.finite import Trajectory

__all__ = ["RECEIVED", "LdpClient", "LdpMessage", "ReceivedMessages", "check_context", "check_message"]


@dataclass(frozen=True)
class LdpMessage:
    """Everything that leaves a user's device under LocalDP, and nothing else.

    agent    the agent kind whose client built it ("UCRL-VTR", "UCRL-VTR+", "LinUCB");
    release  the agent's users when the client was made (``agent.k``; UCRL-VTR: the users of the
             billboard it was built on; LinUCB releases at its schedule's ends); public;
    grams    (n, H, d, d) float64: per regression n and step h the randomized Gram matrix
             ``X_h X_h^T + B_h`` (B_h the user's own symmetric noise, Cor. 2);
    targets  (n, H, d) float64: the randomized ``X_h y_h + g_h``;
    identity the public digest of the agent whose client built it (its kind, calibration, guards
             and environment's fingerprint: ``Agent.receive`` refuses another agent's messages).

    UCRL-VTR has n = 1 regression, UCRL-VTR+ n = 2 (the weighted first moments, then the second
    moments). No raw statistic, no trajectory, no noise key and no clip count is in it.
    """

    agent: str
    release: int
    grams: np.ndarray
    targets: np.ndarray
    identity: str

    def __repr__(self) -> str:
        return (
            f"LdpMessage(agent={self.agent!r}, release={self.release}, grams=<{self.grams.dtype} array "
            f"{self.grams.shape}>, targets=<{self.targets.dtype} array {self.targets.shape}>)"
        )


class LdpClient:
    """The user side of one LDP user: what it needs from the billboard it was made on (the policy
    and values planned on it, the features, the guards' bounds, the randomizer's calibrated noise
    laws) and its own noise streams. Made by ``agent.ldp_client(seed)``; holds no server state,
    and pickles (it goes to the device).

    ``seed=None``: the streams are keyed from OS entropy at the first :meth:`privatize`, on the
    device (a client shipped before that carries no key). A seed keys them as the agent built with
    that seed keys its own user side (its intake): ``agent.ldp_client(seed=s)`` on a fresh agent
    made with ``seed=s`` privatizes the first user exactly as that agent's ``observe`` does. For
    experiments only: a seeded key is known to whoever knows the seed.

    LinUCB (one decision per user, its own context vector x): :meth:`choose` and
    :meth:`privatize_update` mirror ``agent.choose(x)`` / ``agent.update(x, arm, reward)``, the
    user's exploration and tie draws from the client's own streams (keyed with its noise; a seed
    keys them as the agent of that seed keys its own).
    """

    def __init__(
        self,
        core: Any,
        agent: str,
        identity: str,
        shape: tuple[int, int, int],
        seeds: list[bytes] | None,
        n_keys: int,
        context: tuple[int, int | None, str] | None = None,
    ):
        H, S, A = shape
        self._core = core
        self.agent, self.identity = agent, identity
        self.H, self.S, self.A = H, S, A
        self._context = context  # LinUCB: (p, a raw-feature width for the hint, the table's digest)
        self._policy: np.ndarray | None = None
        if seeds is not None:
            self._core.key(seeds)
        self._n_keys = n_keys

    @property
    def release(self) -> int:
        """The billboard this client was made on (the users it includes)."""
        return int(self._core.release)

    @property
    def policy(self) -> np.ndarray:
        """The user's (H, S) policy, planned on the billboard (LinUCB: every table context's arm,
        computed on the device at the first look, O(n A p^2), then kept)."""
        if self._policy is None:
            self._attach_table()
            self._policy = self._core.policy()
        return self._policy.copy()

    @property
    def values(self) -> np.ndarray:
        """The user's planned values V_h(s), (H + 1, S) (V_{H+1} = 0); UCRL-VTR / UCRL-VTR+ only."""
        if not hasattr(self._core, "values"):
            raise AttributeError(f"a {self.agent} user plans no values: its client has only the policy")
        return self._core.values()

    @property
    def keyed(self) -> bool:
        """Whether the noise streams are keyed (at the first privatize without a seed)."""
        return bool(self._core.keyed)

    @property
    def clip_count(self) -> int:
        """Values this client's guards clipped (counted on the device: the server never sees it)."""
        return int(sum(self._core.clips))

    def privatize(self, trajectory: Trajectory) -> LdpMessage:
        """The message of the user's trajectory: its statistics from the billboard's values, the
        sensitivity guard (clip or reject, as the agent), the randomizer's noise. Each call draws
        fresh noise: one message per user."""
        s, a, r = check_trajectory(trajectory, self.H, self.S, self.A, "privatize()")
        self._attach_table()
        self._key_once()
        grams, targets = self._core.privatize(s, a, r)
        return LdpMessage(self.agent, self.release, grams, targets, self.identity)

    def choose(self, x: Any) -> int:
        """LinUCB: the arm of the live user of context vector ``x`` (length p, not necessarily in
        the table), as ``agent.choose(x)``: projected on ``||x|| <= 1``, scored on the billboard
        the client was made on (the agent's Rust code), under sampling with the user's own draws
        from the client's exploration stream, ties from its tie stream. A look: the same arm
        however often it is asked; :meth:`privatize_update` takes the draws."""
        v = self._live(x)
        self._key_once()
        return int(self._core.choose(v))

    def privatize_update(self, x: Any, arm: Any, reward: Any) -> LdpMessage:
        """LinUCB: the message of the live user of context vector ``x`` who played ``arm`` and got
        ``reward``, as ``agent.update(x, arm, reward)`` sends it: the user's draws taken from the
        client's streams (as the agent takes them), the sensitivity guard on ``(x, reward)``
        (clipped and counted in :attr:`clip_count`, or refused, as the agent), the randomizer's
        noise. One message per user; a refused user draws nothing."""
        v = self._live(x)
        a = integer_value(arm)  # a 0-d integer array too, as agent.update takes (gymnasium's Discrete)
        if a is None or not 0 <= a < self.A:
            raise ShapeError(f"arm must be an integer in [0, {self.A}), got {arm!r}")
        if isinstance(reward, np.ndarray) and reward.ndim == 0:  # np.array(0.5), as agent.update
            reward = reward[()]
        r = check_real(reward, "reward")
        if not math.isfinite(r):
            raise NonFiniteError("reward must be finite")
        self._key_once()
        grams, targets = self._core.privatize_x(v, a, float(r))
        return LdpMessage(self.agent, self.release, grams, targets, self.identity)

    def _live(self, x: Any) -> np.ndarray:
        if self._context is None:
            raise TypeError(
                f"a {self.agent} user has no context vector: its client privatizes a trajectory (privatize)"
            )
        p, raw, _ = self._context
        if is_index(x):
            raise ShapeError(
                f"a context vector must have shape ({p},), got the index {x!r} (a table context is "
                "privatized as a Trajectory: privatize)"
            )
        return check_context(x, p, raw)

    def _attach_table(self) -> None:
        """LinUCB: a client made by the agent shares the agent's context table; a restored one (a
        pickle carries the table's digest, not the table: 0.9 MB of the digits bandit's) reads the
        public table of a live bandit of that digest in this process, at its first table user."""
        if self._context is None or self._core.has_contexts:
            return
        from privrl.envs.bandit import find_contexts

        table = find_contexts(self._context[2])
        if table is None:
            raise AssumptionError(
                f"this {self.agent} client was restored where no ContextualBandit holds its context "
                f"table (digest {self._context[2]}): build or load that bandit in this process (its "
                "table is public; policy and privatize(trajectory) index it), or serve a live user "
                "with choose(x) and privatize_update(x, arm, reward), which need no table"
            )
        self._core.attach_contexts(table)

    def _key_once(self) -> None:
        """Key every stream from OS entropy, on the device, at the first use of an unkeyed client."""
        if not self.keyed:
            self._core.key([os.urandom(32) for _ in range(self._n_keys)])

    def take_streams(self, other: Any) -> None:
        """Continue ``other``'s noise streams (LinUCB: and its live users' exploration and tie
        streams; one device serving several users in turn, as the agent's own intake serves every
        user of ``observe``); ``other`` gives them up (its next privatize keys fresh streams
        from OS entropy, never the ones taken). With ``other`` seeded like the agent's intake,
        every message equals ``observe``'s (LinUCB live users: ``update``'s)."""
        if not isinstance(other, LdpClient) or other.agent != self.agent:
            raise TypeError(f"take_streams needs another {self.agent} LdpClient, got {other!r}")
        self._core.take_streams(other._core)

    def __repr__(self) -> str:
        return f"LdpClient(agent={self.agent!r}, release={self.release}, keyed={self.keyed})"


def check_context(x: Any, p: int, raw_width: int | None = None) -> np.ndarray:
    """A live user's context vector: p finite real numbers (``raw_width``: the width of a
    classification bandit's raw features, named in the hint when ``x`` has it)."""
    v = numeric_array(x, "context")
    if v.shape != (p,):
        hint = (
            f" (a row of {raw_width} raw features? map it with env.featurize(x) first)"
            if raw_width is not None and v.shape[-1:] == (raw_width,)
            else ""
        )
        raise ShapeError(f"a context vector must have shape ({p},), got {v.shape}{hint}")
    if not np.isfinite(v).all():
        raise NonFiniteError("a context vector must be finite")
    return np.ascontiguousarray(v, dtype=np.float64)


def check_trajectory(
    t: Any, H: int, S: int, A: int, caller: str = "observe()"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A user's trajectory must index the MDP: integer states in [0, S), actions in [0, A) (a
    negative index would silently select another state's features), finite rewards."""
    if not isinstance(t, Trajectory):
        raise TypeError(f"{caller} takes a privrl Trajectory, got {type(t).__name__}")
    out = []
    for name, arr, n, hi in (("states", t.states, H + 1, S), ("actions", t.actions, H, A)):
        x = array_value(arr, f"trajectory {name}")  # a ragged list: numpy's ValueError named nothing
        if x.shape != (n,):
            raise ShapeError(f"trajectory {name} must have shape ({n},) for H = {H}, got {x.shape}")
        if x.dtype.kind not in "iu":
            raise TypeError(f"trajectory {name} must be integers, got dtype {x.dtype}")
        lo, top = value_range(x) if n else (0, 0)
        if lo < 0 or top >= hi:
            raise ShapeError(f"trajectory {name} must lie in [0, {hi}), got values in [{x.min()}, {x.max()}]")
        out.append(np.ascontiguousarray(x, dtype=np.int64))
    r = array_value(t.rewards, "trajectory rewards")
    if r.shape != (H,) or r.dtype.kind not in "biuf":
        raise ShapeError(f"trajectory rewards must be {H} real numbers, got shape {r.shape}, dtype {r.dtype}")
    if not all_finite(r):
        raise NonFiniteError("trajectory rewards contain NaN or inf")
    return out[0], out[1], np.ascontiguousarray(r, dtype=np.float64)


#: The sums of an LDP server's K messages stay within this (the release is computed from them).
MESSAGE_RANGE = 1e300


def check_message(
    message: Any, agent: str, identity: str, shape: tuple[int, ...], k: int, K: int
) -> LdpMessage:
    """A message at the server's public edge: an LdpMessage of this agent kind and identity, built on a
    billboard this agent has released (``release <= k``; an earlier one is accepted, see
    ``Agent.receive``), grams ``(*lead, d, d)`` and targets ``(*lead, d)`` of finite float64
    values of size at most ``MESSAGE_RANGE / K``, for ``shape = (*lead, d)``."""
    if not isinstance(message, LdpMessage):
        got = type(message).__name__
        raise TypeError(f"receive() takes an LdpMessage (client.privatize(...)), got {got}")
    if message.agent != agent:
        raise AssumptionError(
            f"a message of a {message.agent!r} client cannot enter a {agent} agent: its statistics are "
            "another algorithm's"
        )
    if message.identity != identity:
        raise AssumptionError(
            f"the message was built by another {agent} agent (identity {message.identity!r}, this agent's "
            f"{identity!r}: another calibration, guard or environment); its noise and statistics are not "
            "the ones this agent's release is calibrated for"
        )
    release: Any = message.release
    if isinstance(release, (bool, np.bool_)) or not isinstance(release, (int, np.integer)) or release < 0:
        raise ShapeError(f"the message's release must be an int >= 0, got {release!r}")
    if release > k:
        raise AssumptionError(
            f"the message was built on billboard {release}, but this agent has released only billboard {k} "
            "(a message of another agent?)"
        )
    wants = (("grams", message.grams, (*shape, shape[-1])), ("targets", message.targets, shape))
    for name, value, want in wants:
        _check_message_array(value, f"the message's {name}", want, K, name == "grams")
    return message


def _check_message_array(value: Any, name: str, want: tuple[int, ...], K: int, symmetric: bool) -> None:
    """One of a message's arrays: shape `want`, float64, finite, symmetric matrices (`symmetric`: the
    grams) and of size at most MESSAGE_RANGE / K, so K messages' sums stay within MESSAGE_RANGE (an
    entry near a double's range, 8e307, was taken, and the sums or the release became inf / NaN, the
    agent unusable after it)."""
    arr = array_value(value, name)  # a ragged list: numpy's ValueError named none
    if arr.shape != want:
        raise ShapeError(f"{name} must have shape {want} for this agent, got {arr.shape}")
    if arr.dtype != np.float64:
        raise TypeError(f"{name} must be float64, got dtype {arr.dtype}")
    if not all_finite(arr):
        raise NonFiniteError(f"{name} contain NaN or inf")
    if symmetric:  # the grams, as every client's (x x^T plus symmetric noise): an asymmetric one
        # was taken, its asymmetry silently dropped (the release came out symmetric)
        check_symmetric_stack(np.ascontiguousarray(arr).reshape(-1, want[-1], want[-1]), name)
    top = _core.max_abs(arr) if arr.size else 0.0
    if top > MESSAGE_RANGE / K:
        raise NonFiniteError(
            f"{name} hold a value of size {top:g}, beyond {MESSAGE_RANGE:g} / K = {MESSAGE_RANGE / K:g}: "
            f"the sums of K = {K} messages could overflow (a client of this agent sends a clipped "
            "statistic plus the calibrated noise, far below)"
        )


class ReceivedMessages:
    """The message objects each server has taken (``Agent.receive``), by id, held weakly (an entry
    leaves with its message, so a reused id is never mistaken for it); kept beside the agent, not
    in it (its __dict__ is the save format): a copy or a restored save starts with none."""

    def __init__(self) -> None:
        self._seen: weakref.WeakKeyDictionary[Any, weakref.WeakValueDictionary[int, LdpMessage]] = (
            weakref.WeakKeyDictionary()
        )

    def refuse_again(self, message: LdpMessage, server: Any, label: str) -> None:
        """Refuse (AssumptionError) a message object ``server`` has already taken: it is one user's
        one contribution, and added again its statistics and its noise would count twice and take a
        second of the K users. A copy of a message (unpickled, re-sent) is another object, which the
        server cannot tell from another user's: delivering each message once is the transport's job."""
        seen = self._seen.get(server)
        if seen is not None and seen.get(id(message)) is message:
            raise AssumptionError(
                f"{label} already received this message (release {message.release}): a message is one "
                "user's one contribution, and receiving it again would count that user twice"
            )

    def add(self, message: LdpMessage, server: Any) -> None:
        """Record that ``server`` took ``message`` (after it was added: a refused one is not taken)."""
        seen = self._seen.get(server)
        if seen is None:
            seen = self._seen[server] = weakref.WeakValueDictionary()
        seen[id(message)] = message


#: The one record of the messages each agent received.
RECEIVED = ReceivedMessages()
