//! LinUCB's user side under LDP, apart from the server (Zheng et al. 2020): the randomizer of a
//! user's guarded (x, a, r) — every arm's block noised, its own arm's `x x^T`, `x r` and zeros
//! elsewhere, so that the server does not learn the arm — which the agent's `observe` and a
//! [`LinUcbClient`] (a user's device, its own streams) both run; and the server's
//! [`LinUcb::receive`] of such a message.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::policy::Board;
use super::{check_context_arm, BanditServer, LinUcb};
use crate::agents::{Guard, Stream, Ties};
use crate::errors::{check_len, CoreError, CoreResult};
use crate::noise::{NodeNoise, NodeShape, NoiseStream};

/// The user's message of its guarded context `xs` (p), arm `a` and reward `r`: `gram` (arms x p x
/// p) and `target` (arms x p), every block through the randomizer's streams in arm order (matrix,
/// then vector, per arm).
pub(super) fn ldp_message(
    xs: &[f64],
    a: usize,
    r: f64,
    arms: usize,
    (matrix, vector, divisor): (&mut NoiseStream, &mut NoiseStream, f64),
    gram: &mut Vec<f64>,
    target: &mut Vec<f64>,
) -> CoreResult<()> {
    let p = xs.len();
    let pp = p * p;
    gram.clear();
    gram.resize(arms * pp, 0.0);
    target.clear();
    target.resize(arms * p, 0.0);
    let shape = NodeShape::SymMatrix { d: p, divisor };
    let mut scratch = vec![0.0; pp];
    for b in 0..arms {
        let m = &mut gram[b * pp..(b + 1) * pp];
        if b == a {
            for i in 0..p {
                for j in 0..p {
                    m[i * p + j] = xs[i] * xs[j];
                }
            }
        }
        matrix.privatize(shape, m, &mut scratch)?;
        let v = &mut target[b * p..(b + 1) * p];
        if b == a {
            v.iter_mut().zip(xs).for_each(|(t, x)| *t = x * r);
        }
        vector.privatize(NodeShape::Vector(p), v, &mut scratch[..p])?;
    }
    Ok(())
}

/// The user side of one LDP LinUCB user: the public context table (rows inside the guard's
/// bound, shared with the agent; not saved: a restored client reads the device's own copy of the
/// public table, [`LinUcbClient::attach_contexts`]), a copy of the billboard it was made on (per arm the inverse and
/// weights, the widths' constants: what [`super::policy::Scorer`] reads), the user's exploration draws the agent
/// took when it made the client (and the tie picks its tie stream would give, one per number of
/// tied arms), the guard and the randomizer's laws, and its own streams once keyed.
#[derive(Serialize, Deserialize)]
pub struct LinUcbClient {
    pub arms: usize,
    pub p: usize,
    pub n: usize,
    /// The table (n x p) the table users' contexts index, or empty: a saved client carries no
    /// table (0.9 MB of the digits bandit's), only what a user needs to act and privatize.
    #[serde(skip)]
    contexts: Arc<Vec<f64>>,
    guard: Guard,
    board: Board,
    /// The user's exploration factors, one per arm (`None`: optimism, every factor 1).
    z: Option<Vec<f64>>,
    /// `picks[t - 2]`: the agent's tie stream's pick among `t` tied arms (`None`: the lowest).
    picks: Option<Vec<usize>>,
    laws: (NodeNoise, NodeNoise, f64),
    streams: Option<(NoiseStream, NoiseStream)>,
    /// Whether the agent explores by sampling and breaks ties at random (which own streams a
    /// live user's draws come from).
    sampling: bool,
    random_ties: bool,
    /// The live user's own (exploration, tie) streams, keyed with the noise streams.
    draws: Option<(Option<Stream>, Ties)>,
    pub clips: u64,
    /// The users the billboard it was made on follows (the message's release index).
    pub release: u64,
}

impl LinUcbClient {
    /// Key the client: four 32-byte seeds, the randomizer's (matrix, vector), then the live
    /// user's exploration and tie streams (read only under sampling / random ties).
    pub fn key(&mut self, seeds: &[[u8; 32]]) -> CoreResult<()> {
        check_len("client seeds", seeds.len(), 4)?;
        self.streams = Some((
            NoiseStream::new(self.laws.0, seeds[0])?,
            NoiseStream::new(self.laws.1, seeds[1])?,
        ));
        let exploration = self.sampling.then(|| Stream::new(seeds[2]));
        let ties = Ties(self.random_ties.then(|| Stream::new(seeds[3])));
        self.draws = Some((exploration, ties));
        Ok(())
    }

    pub fn keyed(&self) -> bool {
        self.streams.is_some()
    }

    /// This client continues `other`'s streams (and clip count), which `other` gives up.
    pub fn take_streams(&mut self, other: &mut LinUcbClient) -> CoreResult<()> {
        if other.laws != self.laws || !other.keyed() {
            return Err(CoreError::InvalidParameter(
                "the streams must come from a keyed client of the same calibration".into(),
            ));
        }
        self.streams = other.streams.take();
        self.draws = other.draws.take();
        self.clips = other.clips;
        Ok(())
    }

    /// Whether the client holds the context table (a restored one holds none until attached).
    pub fn has_contexts(&self) -> bool {
        self.contexts.len() == self.n * self.p
    }

    /// Attach the public context table `table` (n x p, the agent's, as the environment holds
    /// it) to a restored client: projected on the guard's ball as the agent's own table was
    /// when the agent was built (clip, or refuse a row outside under "reject"), so its rows are
    /// the agent's bit for bit.
    pub fn attach_contexts(&mut self, table: Vec<f64>) -> CoreResult<()> {
        check_len("context table", table.len(), self.n * self.p)?;
        let mut table = table;
        self.guard.apply(&mut table, self.p, None)?;
        self.contexts = Arc::new(table);
        Ok(())
    }

    fn table(&self) -> CoreResult<&[f64]> {
        if !self.has_contexts() {
            return Err(CoreError::InvalidParameter(
                "the client holds no context table (attach the public table first)".into(),
            ));
        }
        Ok(&self.contexts)
    }

    /// The message of the user of context `s` who played arm `a` and got reward `r`: the guard
    /// (clip and count, or refuse), then the randomizer (the agent's own code).
    pub fn privatize(&mut self, s: usize, a: usize, r: f64) -> CoreResult<(Vec<f64>, Vec<f64>)> {
        if s >= self.n || a >= self.arms {
            return Err(CoreError::Shape(format!(
                "context {s} / arm {a} out of range (n = {}, arms = {})",
                self.n, self.arms
            )));
        }
        self.table()?;
        let table = Arc::clone(&self.contexts);
        self.message(&table[s * self.p..(s + 1) * self.p], a, r)
    }

    /// The guard on `(x, r)` (clip and count, or refuse), then the randomizer.
    fn message(&mut self, x: &[f64], a: usize, r: f64) -> CoreResult<(Vec<f64>, Vec<f64>)> {
        let Some((matrix, vector)) = &mut self.streams else {
            return Err(CoreError::InvalidParameter(
                "the client has no noise streams yet (key it first)".into(),
            ));
        };
        let mut xs = x.to_vec();
        let mut y = [r];
        let bad = self.guard.apply(&mut xs, self.p, Some(&mut y))? as u64;
        let (mut gram, mut target) = (vec![], vec![]);
        let rz = (matrix, vector, self.laws.2);
        ldp_message(&xs, a, y[0], self.arms, rz, &mut gram, &mut target)?;
        self.clips += bad;
        Ok((gram, target))
    }

    /// The arm of the live user of context vector `x` (length p, finite; projected on the
    /// guard's ball as the agent's `action_x`), on the client's billboard with the user's own
    /// draws looked at, not taken: the agent's `choose(x)`.
    pub fn choose_x(&self, x: &[f64]) -> CoreResult<usize> {
        let xs = self.live(x)?;
        let Some((exploration, ties)) = &self.draws else {
            return Err(CoreError::InvalidParameter(
                "the client has no streams yet (key it first)".into(),
            ));
        };
        let (mut e, mut t) = (exploration.clone(), ties.clone());
        let scorer = self.board.scorer(self.arms, self.p);
        Ok(scorer.choose_drawing(&xs, &mut vec![], (&mut e, &mut t)))
    }

    /// The message of the live user of context vector `x` who played arm `a` and got reward
    /// `r`: its draws taken (as the agent's `update(x, a, r)` takes them), then the guard and
    /// the randomizer; a refused user leaves the draws as they were.
    pub fn privatize_x(&mut self, x: &[f64], a: usize, r: f64) -> CoreResult<(Vec<f64>, Vec<f64>)> {
        check_context_arm(x, a, self.p, self.arms)?;
        let xs = self.live(x)?;
        let Some((exploration, ties)) = &mut self.draws else {
            return Err(CoreError::InvalidParameter(
                "the client has no streams yet (key it first)".into(),
            ));
        };
        let saved = (exploration.clone(), ties.clone());
        let scorer = self.board.scorer(self.arms, self.p);
        scorer.choose_drawing(&xs, &mut vec![], (exploration, ties));
        let out = self.message(x, a, r);
        if out.is_err() {
            self.draws = Some(saved);
        }
        out
    }

    /// A live context of length p projected on the guard's ball ([`super::policy::project`]).
    fn live(&self, x: &[f64]) -> CoreResult<Vec<f64>> {
        if x.len() != self.p {
            return Err(CoreError::Shape(format!(
                "a context vector must have length {}, got {}",
                self.p,
                x.len()
            )));
        }
        super::policy::project(self.guard, x, self.p)
            .ok_or_else(|| CoreError::NonFinite("a context vector must be finite".into()))
    }

    /// The arm of the user of context `s` (a table row) on the billboard the client was made
    /// on, with the draws the agent took for it ([`super::policy::Scorer::choose`], the agent's code).
    pub fn action(&self, s: usize, work: &mut Vec<f64>) -> usize {
        let x = &self.contexts[s * self.p..(s + 1) * self.p];
        let mut z = self.z.iter().flatten();
        let z = || z.next().copied().unwrap_or(1.0);
        let pick = |t: usize| self.picks.as_ref().map_or(0, |v| v[t - 2]);
        self.board
            .scorer(self.arms, self.p)
            .choose(x, work, z, pick)
    }

    /// The arm of every context of the table (n).
    pub fn policy(&self) -> CoreResult<Vec<usize>> {
        self.table()?;
        let mut work = vec![];
        Ok((0..self.n).map(|s| self.action(s, &mut work)).collect())
    }

    /// A restored client's sizes against its dimensions.
    pub fn check_restored(&self) -> CoreResult<()> {
        const WHAT: &str = "LinUCB client";
        self.guard.check_restored(WHAT)?;
        crate::state::check_sizes(
            WHAT,
            &[
                (
                    "inverse",
                    self.board.inverse.len(),
                    &[self.arms, self.p, self.p],
                ),
                ("weights", self.board.weights.len(), &[self.arms, self.p]),
            ],
        )?;
        let picks_ok = self.picks.as_ref().is_none_or(|v| {
            v.len() == self.arms.saturating_sub(1) && v.iter().enumerate().all(|(i, &k)| k < i + 2)
        });
        let z_ok = self.z.as_ref().is_none_or(|z| z.len() == self.arms);
        let draws_ok = self.streams.is_some() == self.draws.is_some()
            && self.draws.as_ref().is_none_or(|(e, t)| {
                e.is_some() == self.sampling && t.0.is_some() == self.random_ties
            });
        if self.p == 0 || self.arms == 0 || !picks_ok || !z_ok || !draws_ok {
            return Err(CoreError::InvalidParameter(format!(
                "not a consistent saved {WHAT} state: its draws"
            )));
        }
        Ok(())
    }
}

impl LinUcb {
    /// The arriving user's LDP client: a copy of the current billboard (O(arms p^2)), the user's
    /// exploration draws (taken here: the server never learns the context to take them at
    /// `receive`), the table (shared), the guard and the randomizer's laws, no stream keyed.
    pub fn client(&mut self) -> CoreResult<LinUcbClient> {
        let BanditServer::Ldp {
            matrix,
            vector,
            divisor,
            ..
        } = &self.server
        else {
            return Err(CoreError::InvalidParameter(
                "only an LDP agent has a user-side randomizer for a client".into(),
            ));
        };
        let laws = (matrix.noise(), vector.noise(), *divisor);
        // the user's draws, as `choose` takes them: a normal per arm; the tie stream's pick for
        // every number of tied arms, looked at (the server never learns the context to take one)
        let z = self.exploration.as_mut().map(|st| {
            let mut z = vec![0.0; self.arms];
            for v in z.iter_mut() {
                st.normals(std::slice::from_mut(v));
            }
            z
        });
        let picks = self
            .ties
            .0
            .as_ref()
            .map(|st| (2..=self.arms).map(|t| st.clone().below(t)).collect());
        let board = Board {
            inverse: self.inverse.clone(),
            weights: self.weights.clone(),
            sigma_r: self.sigma_r,
            gamma2: self.gamma2,
            beta: self.beta,
        };
        Ok(LinUcbClient {
            arms: self.arms,
            p: self.p,
            n: self.n,
            contexts: Arc::clone(&self.contexts),
            guard: self.guard,
            board,
            z,
            picks,
            laws,
            streams: None,
            sampling: self.exploration.is_some(),
            random_ties: self.ties.0.is_some(),
            draws: None,
            clips: 0,
            release: self.k,
        })
    }

    /// The server side under LDP: one user's message (gram arms x p x p, target arms x p) built
    /// on the billboard after `release <= k` users, added to the sums; the billboard is released
    /// at the schedule's next end, as `observe` does.
    pub fn receive(&mut self, release: u64, g: &[f64], t: &[f64]) -> CoreResult<()> {
        let (arms, p) = (self.arms, self.p);
        let BanditServer::Ldp { gram, target, .. } = &mut self.server else {
            return Err(CoreError::InvalidParameter(
                "only an LDP server receives privatized messages".into(),
            ));
        };
        if self.k >= self.episodes {
            return Err(CoreError::Capacity(format!(
                "the agent was calibrated for {} users",
                self.episodes
            )));
        }
        if release > self.k {
            return Err(CoreError::InvalidParameter(format!(
                "the message was built on billboard {release}, but this agent has seen only {} \
                 users (from another agent?)",
                self.k
            )));
        }
        check_len("privatized Gram matrices", g.len(), arms * p * p)?;
        check_len("privatized targets", t.len(), arms * p)?;
        if crate::errors::any_non_finite(g) || crate::errors::any_non_finite(t) {
            return Err(CoreError::NonFinite(
                "the message contains NaN or inf".into(),
            ));
        }
        gram.iter_mut().zip(g).for_each(|(s, v)| *s += v);
        target.iter_mut().zip(t).for_each(|(s, v)| *s += v);
        self.finish_user(0)
    }
}
