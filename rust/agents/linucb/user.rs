//! LinUCB's user side under LDP, apart from the server (Zheng et al. 2020): the randomizer of a
//! user's guarded (x, a, r) — every arm's block noised, its own arm's `x x^T`, `x r` and zeros
//! elsewhere, so that the server does not learn the arm — which the agent's `observe` and a
//! [`LinUcbClient`] (a user's device, its own streams) both run; and the server's
//! [`LinUcb::receive`] of such a message.

use serde::{Deserialize, Serialize};

use super::{BanditServer, LinUcb};
use crate::agents::Guard;
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
/// bound), the arm of every context on the billboard it was made on, the guard and the
/// randomizer's laws, and its own streams once keyed.
#[derive(Serialize, Deserialize)]
pub struct LinUcbClient {
    pub arms: usize,
    pub p: usize,
    pub n: usize,
    contexts: Vec<f64>,
    guard: Guard,
    pub pi: Vec<usize>,
    laws: (NodeNoise, NodeNoise, f64),
    streams: Option<(NoiseStream, NoiseStream)>,
    pub clips: u64,
    /// The users the billboard it was made on follows (the message's release index).
    pub release: u64,
}

impl LinUcbClient {
    /// Key the randomizer: two 32-byte seeds (matrix, vector).
    pub fn key(&mut self, seeds: &[[u8; 32]]) -> CoreResult<()> {
        check_len("client seeds", seeds.len(), 2)?;
        self.streams = Some((
            NoiseStream::new(self.laws.0, seeds[0])?,
            NoiseStream::new(self.laws.1, seeds[1])?,
        ));
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
        self.clips = other.clips;
        Ok(())
    }

    /// The message of the user of context `s` who played arm `a` and got reward `r`: the guard
    /// (clip and count, or refuse), then the randomizer (the agent's own code).
    pub fn privatize(&mut self, s: usize, a: usize, r: f64) -> CoreResult<(Vec<f64>, Vec<f64>)> {
        let p = self.p;
        if s >= self.n || a >= self.arms {
            return Err(CoreError::Shape(format!(
                "context {s} / arm {a} out of range (n = {}, arms = {})",
                self.n, self.arms
            )));
        }
        let Some((matrix, vector)) = &mut self.streams else {
            return Err(CoreError::InvalidParameter(
                "the client has no noise streams yet (key it first)".into(),
            ));
        };
        let mut xs = self.contexts[s * p..(s + 1) * p].to_vec();
        let mut y = [r];
        let bad = self.guard.apply(&mut xs, p, Some(&mut y))? as u64;
        let (mut gram, mut target) = (vec![], vec![]);
        let rz = (matrix, vector, self.laws.2);
        ldp_message(&xs, a, y[0], self.arms, rz, &mut gram, &mut target)?;
        self.clips += bad;
        Ok((gram, target))
    }

    /// A restored client's sizes against its dimensions.
    pub fn check_restored(&self) -> CoreResult<()> {
        const WHAT: &str = "LinUCB client";
        self.guard.check_restored(WHAT)?;
        crate::state::check_sizes(
            WHAT,
            &[
                ("contexts", self.contexts.len(), &[self.n, self.p]),
                ("policy", self.pi.len(), &[self.n]),
            ],
        )?;
        if self.p == 0 || self.pi.iter().any(|&a| a >= self.arms) {
            return Err(CoreError::InvalidParameter(format!(
                "not a consistent saved {WHAT} state: its policy"
            )));
        }
        Ok(())
    }
}

impl LinUcb {
    /// The arriving user's LDP client: the arm of every context on the current billboard (the
    /// user's exploration draws, taken here: the server never learns the context to take them
    /// at `receive`), the table, the guard and the randomizer's laws, no stream keyed.
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
        let pi = (0..self.n).map(|s| self.peek(|a| a.action(s))).collect();
        if let Some(st) = &mut self.exploration {
            let mut z = [0.0];
            for _ in 0..self.arms {
                st.normals(&mut z); // one user's draws, as `choose` takes them
            }
        }
        Ok(LinUcbClient {
            arms: self.arms,
            p: self.p,
            n: self.n,
            contexts: self.contexts.clone(),
            guard: self.guard,
            pi,
            laws,
            streams: None,
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
