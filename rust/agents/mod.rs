//! The agents: each algorithm's whole episode, once, in state the Python agent owns.
//!
//! An agent plays the paper's two roles in one object. The *user* of episode k computes its
//! policy from the current billboard (and, under `exploration = sampling`, fresh randomness of
//! its own stream), runs it, and hands its statistics to the privacy model's *intake* (the
//! sensitivity guard, and under LDP the user-side randomizer); the *server* adds what it
//! receives and publishes the next billboard.
//!
//! * [`vtr`]: UCRL-VTR (Alg. 1) and UCRL-VTR+ (Alg. 3) on a linear-mixture MDP.
//! * [`lsvi`]: LSVI-UCB with a static batch schedule (Alg. 2) on a linear MDP.
//! * [`model`]: the exact model of a finite MDP (sampling, exact policy values) for the runs
//!   of `privrl.run`.
//! * [`bounds`]: the high-probability noise bounds the practical release reads at each time.
//!
//! [`run_block`] is the one episode loop: plan, roll out on the model, score the exact regret,
//! observe. `privrl.run` calls it per block of users; `privrl.learn` drives `policy` /
//! `observe` one user at a time.

pub mod adaptive;
pub mod bounds;
mod factor;
pub mod linucb;
pub mod lsvi;
pub mod lsvi_adaptive;
pub mod model;
pub mod psrl;
pub mod vtr;

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha12Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::continual::{restore_mechanism, PrefixMechanism};
use crate::errors::{any_non_finite, CoreError, CoreResult};
use crate::kernels::qeval::TieBreak;

pub use model::{policy_values, Factors, FiniteModel, ValuesOnDemand};

/// `||x|| <= x_bound` for every row and `y in [y_low, y_high]`: the bounds the privacy noise is
/// calibrated for, enforced where user data enters a mechanism. Excesses within a relative 1e-9
/// (round-off of an in-bound computation) are projected silently and not counted.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Guard {
    pub x_bound: f64,
    pub y_low: f64,
    pub y_high: f64,
    /// Refuse (`CoreError::Assumption`) instead of clipping.
    pub reject: bool,
}

const GUARD_TOL: f64 = 1e-9;

/// ||row||: the plain sum of squares, or (where it overflows, finite entries above ~1e154) the
/// same norm with the row scaled by its largest entry first (the projection then shrinks it to
/// the bound instead of a division by inf zeroing it).
/// A number of a message, as `plain` writes it in the usual range and in scientific notation
/// outside it: `{}` and `{:.6}` wrote a reward of 1e300 as 301 digits.
fn readable(x: f64, plain: impl Fn(f64) -> String) -> String {
    let a = x.abs();
    if a == 0.0 || !a.is_finite() || (1e-4..1e6).contains(&a) {
        plain(x)
    } else {
        format!("{x:.6e}")
    }
}

fn row_norm(row: &[f64]) -> f64 {
    let n = row.iter().map(|v| v * v).sum::<f64>().sqrt();
    if n.is_finite() {
        return n;
    }
    let m = row.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    m * row.iter().map(|v| (v / m) * (v / m)).sum::<f64>().sqrt()
}

impl Guard {
    /// A restored guard's bounds (a positive finite x bound, y_low <= y_high, finite).
    pub fn check_restored(&self, what: &str) -> CoreResult<()> {
        let ok = self.x_bound.is_finite()
            && self.x_bound > 0.0
            && self.y_low.is_finite()
            && self.y_high.is_finite()
            && self.y_low <= self.y_high;
        if ok {
            return Ok(());
        }
        Err(CoreError::InvalidParameter(format!(
            "not a consistent saved {what} state: its sensitivity guard {self:?}"
        )))
    }

    /// Clip (or reject) the rows of `x` (n x d) and the entries of `y`; returns how many values
    /// were beyond the tolerance (the clip count).
    pub fn apply(&self, x: &mut [f64], d: usize, y: Option<&mut [f64]>) -> CoreResult<usize> {
        if any_non_finite(x) || y.as_ref().is_some_and(|y| any_non_finite(y)) {
            return Err(CoreError::NonFinite(
                "user statistic contains NaN or inf: it cannot be brought inside the sensitivity \
                 bound the noise is calibrated for"
                    .into(),
            ));
        }
        let loose = self.x_bound * (1.0 + GUARD_TOL);
        let lo_tol = self.y_low - GUARD_TOL * self.y_low.abs().max(1.0);
        let hi_tol = self.y_high + GUARD_TOL * self.y_high.abs().max(1.0);
        let mut bad = 0;
        let mut max_norm = 0.0f64;
        let mut clip = false;
        for row in x.chunks_exact(d) {
            let n = row_norm(row);
            max_norm = max_norm.max(n);
            bad += usize::from(n > loose);
            clip |= n > self.x_bound;
        }
        if let Some(y) = y.as_ref() {
            bad += y.iter().filter(|&&v| v < lo_tol || v > hi_tol).count();
        }
        if bad > 0 && self.reject {
            // name what broke the bound: the rows' largest norm, the targets' range
            let ys = y.as_deref().unwrap_or(&[]);
            let (y_min, y_max) = ys
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                    (a.min(v), b.max(v))
                });
            let mut found = vec![];
            if max_norm > loose {
                let norm = readable(max_norm, |v| format!("{v:.6}"));
                found.push(format!("max ||x|| = {norm}"));
            }
            if y_min < lo_tol || y_max > hi_tol {
                let (lo, hi) = (
                    readable(y_min, |v| v.to_string()),
                    readable(y_max, |v| v.to_string()),
                );
                found.push(format!("y in [{lo}, {hi}]"));
            }
            return Err(CoreError::Assumption(format!(
                "user statistic outside the sensitivity bound (||x|| <= {}, y in [{}, {}]): {}",
                self.x_bound,
                self.y_low,
                self.y_high,
                found.join(", ")
            )));
        }
        for row in x.chunks_exact_mut(d).filter(|_| clip) {
            let n = row_norm(row);
            if n > self.x_bound {
                let f = self.x_bound / n.max(1e-300);
                row.iter_mut().for_each(|v| *v *= f);
            }
        }
        if let Some(y) = y {
            y.iter_mut()
                .for_each(|v| *v = v.clamp(self.y_low, self.y_high));
        }
        Ok(bad)
    }
}

/// A random stream of the agent (ties, exploration) apart from its privacy noise: ChaCha12 from
/// a 32-byte seed, saved with the agent.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Stream(ChaCha12Rng);

impl Stream {
    pub fn new(seed: [u8; 32]) -> Self {
        Stream(ChaCha12Rng::from_seed(seed))
    }

    /// A tie-breaking seed for one call of `group_max`.
    pub fn tie(&mut self) -> TieBreak {
        TieBreak::Random(self.0.next_u64() >> 1)
    }

    /// `out` filled with i.i.d. standard normals.
    pub fn normals(&mut self, out: &mut [f64]) {
        for v in out.iter_mut() {
            *v = StandardNormal.sample(&mut self.0);
        }
    }

    /// A uniform index in `0..n` (n >= 1).
    pub fn below(&mut self, n: usize) -> usize {
        (self.0.next_u64() % n as u64) as usize
    }
}

/// Ties broken uniformly at random from the agent's own stream, or by lowest index.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ties(pub Option<Stream>);

impl Ties {
    pub fn draw(&mut self) -> TieBreak {
        match &mut self.0 {
            None => TieBreak::Lowest,
            Some(s) => s.tie(),
        }
    }
}

/// How a user turns the billboard into a policy.
#[derive(Serialize, Deserialize)]
pub enum Exploration {
    /// Greedy for the optimistic Q: the released estimate plus the bonus.
    Optimism,
    /// Greedy for a model drawn around the released estimate with the bonus's matrix as its
    /// covariance, from this stream (Thompson sampling: post-processing of the billboard with
    /// fresh randomness, never the privacy noise's streams).
    Sampling(Box<Stream>),
}

/// Scratch space of a model draw.
#[derive(Default)]
pub(crate) struct Draw {
    factor: Vec<f64>,
    z: Vec<f64>,
    /// [`Exploration::weights_kept`]'s factors, per step, of one version of the covariances.
    pub(crate) factors: factor::Factors,
}

impl Exploration {
    /// The weights a user plans step h with, into `out`, and the radius of the bonus
    /// `radius ||phi||_{cov}` to add: (mean, `radius`) under optimism; a draw from
    /// `N(mean, radius^2 cov)` and no bonus under sampling.
    pub(crate) fn weights(
        &mut self,
        mean: &[f64],
        cov: &[f64],
        radius: f64,
        draw: &mut Draw,
        out: &mut [f64],
    ) -> f64 {
        let d = mean.len();
        match self {
            Exploration::Optimism => {
                out.copy_from_slice(mean);
                radius
            }
            Exploration::Sampling(stream) => {
                draw.factor.resize(d * d, 0.0);
                draw.z.resize(d, 0.0);
                psd_factor(cov, d, &mut draw.factor);
                stream.normals(&mut draw.z);
                for ((o, m), row) in out.iter_mut().zip(mean).zip(draw.factor.chunks_exact(d)) {
                    *o = m + radius * row.iter().zip(&draw.z).map(|(l, z)| l * z).sum::<f64>();
                }
                0.0
            }
        }
    }

    /// [`Self::weights`] for step h of covariances at `version` (`plain`: `cov` is +0 off the
    /// diagonal, known): the factor is computed once per version and step and kept in `draw`
    /// (the same values, `factor`'s module doc); the caller clears it before `cov` changes.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn weights_kept(
        &mut self,
        mean: &[f64],
        cov: &[f64],
        radius: f64,
        draw: &mut Draw,
        out: &mut [f64],
        (version, h, plain): (u64, usize, bool),
    ) -> f64 {
        let d = mean.len();
        match self {
            Exploration::Optimism => self.weights(mean, cov, radius, draw, out),
            Exploration::Sampling(stream) => {
                let f = draw.factors.get(version, h, cov, d, plain);
                draw.z.resize(d, 0.0);
                stream.normals(&mut draw.z);
                f.draw(mean, radius, &draw.z, out);
                0.0
            }
        }
    }

    pub fn is_sampling(&self) -> bool {
        matches!(self, Exploration::Sampling(_))
    }
}

/// A continual-release mechanism owned by an agent; saved as its kind and its exact state.
pub struct Mechanism(pub Box<dyn PrefixMechanism>);

impl Serialize for Mechanism {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let bytes = self.0.to_state().map_err(serde::ser::Error::custom)?;
        (self.0.kind().name(), bytes).serialize(s)
    }
}

impl Mechanism {
    /// The entries of a node's side: n for vectors, d for d x d matrices.
    pub fn dim(&self) -> usize {
        match self.0.shape() {
            crate::noise::NodeShape::Vector(n) => n,
            crate::noise::NodeShape::SymMatrix { d, .. } => d,
        }
    }
}

impl<'de> Deserialize<'de> for Mechanism {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (kind, bytes): (String, Vec<u8>) = Deserialize::deserialize(d)?;
        restore_mechanism(&kind, &bytes)
            .map(Mechanism)
            .map_err(serde::de::Error::custom)
    }
}

/// One user's trajectory: H + 1 states, H actions, H rewards.
#[derive(Debug, Clone, Default)]
pub struct Trajectory {
    pub states: Vec<usize>,
    pub actions: Vec<usize>,
    pub rewards: Vec<f64>,
}

impl Trajectory {
    pub fn new(h: usize) -> Self {
        Trajectory {
            states: vec![0; h + 1],
            actions: vec![0; h],
            rewards: vec![0.0; h],
        }
    }
}

/// How often a run's policy changed: the distinct consecutive policies its users played (the
/// first user's counts). The one rule behind `privrl.run`'s count (through [`RegretCache`]) and
/// `privrl.learn`'s (the binding `PolicyChanges`, on the policies its users are handed).
#[derive(Debug, Clone, Default)]
pub struct PolicyChanges<T> {
    last: Vec<T>,
    seen: bool,
    /// Distinct consecutive policies seen.
    pub count: u64,
}

impl<T: PartialEq + Clone> PolicyChanges<T> {
    /// Count `pi` if it differs from the last policy seen (the first one always does); whether it did.
    pub fn see(&mut self, pi: &[T]) -> bool {
        if self.seen && self.last.as_slice() == pi {
            return false;
        }
        self.last.clear();
        self.last.extend_from_slice(pi);
        self.seen = true;
        self.count += 1;
        true
    }
}

/// Per-episode exact regret `V*_1(s_1) - V^{pi_k}_1(s_1)`, with `V^{pi_k}` recomputed only when
/// the policy changes: all of it, or, for a model with sparse rows, at the states the starts
/// asked for reach ([`ValuesOnDemand`]: the same values).
#[derive(Debug, Clone)]
pub struct RegretCache {
    v1: Vec<f64>,
    work: Vec<f64>,
    on_demand: Option<ValuesOnDemand>,
    /// The policies seen, and how often they changed.
    pub policy: PolicyChanges<usize>,
}

impl RegretCache {
    pub fn new(model: &FiniteModel) -> Self {
        RegretCache {
            v1: vec![0.0; model.s],
            work: vec![0.0; (model.h + 1) * model.s],
            on_demand: model.sparse_rows().then(ValuesOnDemand::default),
            policy: PolicyChanges::default(),
        }
    }

    /// Make `pi` the current policy (its exact values computed, or forgotten, if it changed).
    pub fn set_policy(&mut self, model: &FiniteModel, pi: &[usize]) {
        if !self.policy.see(pi) {
            return;
        }
        if let Some(c) = &mut self.on_demand {
            c.reset(model);
            return;
        }
        model.values_into(pi, &mut self.work);
        self.v1.copy_from_slice(&self.work[..model.s]);
    }

    /// `V^{pi}_1(s)` of the current policy.
    pub fn value(&mut self, model: &FiniteModel, s: usize) -> f64 {
        match &mut self.on_demand {
            Some(c) => model.value_on_demand(&self.policy.last, s, c),
            None => self.v1[s],
        }
    }
}

/// What every agent offers the episode loop.
pub trait Episodic {
    /// The (H x S) policy of the user arriving now, computed once per user.
    fn policy(&mut self) -> CoreResult<&[usize]>;
    /// That user's trajectory through the privacy model to the server (and the next billboard).
    fn observe(&mut self, t: &Trajectory) -> CoreResult<()>;
}

/// The per-episode outputs of a block, one entry per episode.
#[derive(Debug, Clone, Default)]
pub struct EpisodeLog {
    pub gaps: Vec<f64>,
    pub returns: Vec<f64>,
    pub starts: Vec<i64>,
}

/// The episode loop: `uniforms.len() / (H + 1)` users, each planned on the current billboard,
/// rolled out on the exact model with its H + 1 uniforms, scored (exact regret) and observed.
/// Stops at the first error, returning the episodes completed with it; the log holds them.
pub fn run_block<A: Episodic + ?Sized>(
    agent: &mut A,
    model: &FiniteModel,
    cache: &mut RegretCache,
    v_star: &[f64],
    uniforms: &[f64],
    log: &mut EpisodeLog,
) -> Result<(), (usize, CoreError)> {
    let mut traj = Trajectory::new(model.h);
    for (e, u) in uniforms.chunks_exact(model.h + 1).enumerate() {
        let pi = agent.policy().map_err(|f| (e, f))?;
        cache.set_policy(model, pi);
        model.rollout(pi, u, &mut traj);
        let s0 = traj.states[0];
        log.gaps.push(v_star[s0] - cache.value(model, s0));
        log.returns.push(traj.rewards.iter().sum());
        log.starts.push(s0 as i64);
        agent.observe(&traj).map_err(|f| (e, f))?;
    }
    Ok(())
}

/// Refuses episode k + 1 of an agent calibrated for `episodes` (LSVI-UCB, UCRL-VTR).
pub(crate) fn check_room(k: u64, episodes: u64) -> CoreResult<()> {
    if k >= episodes {
        return Err(CoreError::Capacity(format!(
            "the agent was calibrated for K = {episodes} episodes; episode {} would exceed its \
             privacy accounting",
            k + 1
        )));
    }
    Ok(())
}

/// `x x^T` into `out` (d x d, row-major).
pub(crate) fn outer(x: &[f64], out: &mut [f64]) {
    let d = x.len();
    for i in 0..d {
        for j in 0..d {
            out[i * d + j] = x[i] * x[j];
        }
    }
}

/// A lower-triangular factor `L` with `L L^T = m` for a symmetric positive semi-definite `m`
/// (Cholesky; eigenvalues clamped at 0 when round-off made it indefinite), row-major.
pub(crate) fn psd_factor(m: &[f64], d: usize, out: &mut [f64]) {
    let mut ok = true;
    out.iter_mut().for_each(|v| *v = 0.0);
    'outer: for i in 0..d {
        for j in 0..=i {
            let mut s = 0.5 * (m[i * d + j] + m[j * d + i]);
            for k in 0..j {
                s -= out[i * d + k] * out[j * d + k];
            }
            if i == j {
                if s.is_nan() || s <= 0.0 {
                    ok = false;
                    break 'outer;
                }
                out[i * d + i] = s.sqrt();
            } else {
                out[i * d + j] = s / out[j * d + j];
            }
        }
    }
    if ok {
        return;
    }
    // the symmetric square root V diag(sqrt(max(ev, 0))) V^T (not triangular, same covariance)
    let sym: Vec<f64> = (0..d * d)
        .map(|ij| 0.5 * (m[ij] + m[(ij % d) * d + ij / d]))
        .collect();
    let (mut ev, mut v) = (vec![0.0; d], vec![0.0; d * d]);
    crate::kernels::eigen::sym_eigen(&sym, d, &mut ev, &mut v);
    for i in 0..d {
        for j in 0..d {
            out[i * d + j] = (0..d)
                .map(|k| v[i * d + k] * ev[k].max(0.0).sqrt() * v[j * d + k])
                .sum();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_changes_count_distinct_consecutive_policies() {
        let mut c = PolicyChanges::default();
        let seen: Vec<bool> = [[0, 1], [0, 1], [1, 1], [0, 1], [0, 1]]
            .iter()
            .map(|pi| c.see(pi))
            .collect();
        assert_eq!(seen, [true, false, true, true, false]);
        assert_eq!(c.count, 3);
    }

    #[test]
    fn guard_clips_rows_and_values() {
        let g = Guard {
            x_bound: 1.0,
            y_low: 0.0,
            y_high: 1.0,
            reject: false,
        };
        let mut x = vec![3.0, 4.0, 0.6, 0.8];
        let mut y = vec![2.0, 0.5];
        assert_eq!(g.apply(&mut x, 2, Some(&mut y)).unwrap(), 2);
        assert_eq!(x, vec![3.0 * 0.2, 4.0 * 0.2, 0.6, 0.8]);
        assert_eq!(y, vec![1.0, 0.5]);
        let r = Guard { reject: true, ..g };
        assert!(matches!(
            r.apply(&mut [3.0, 4.0], 2, None),
            Err(CoreError::Assumption(_))
        ));
        assert!(matches!(
            g.apply(&mut [f64::NAN, 0.0], 2, None),
            Err(CoreError::NonFinite(_))
        ));
    }

    #[test]
    fn psd_factor_reproduces_the_matrix() {
        let m = [4.0, 2.0, 2.0, 3.0];
        let mut l = [0.0; 4];
        psd_factor(&m, 2, &mut l);
        for i in 0..2 {
            for j in 0..2 {
                let v: f64 = (0..2).map(|k| l[i * 2 + k] * l[j * 2 + k]).sum();
                assert!((v - m[i * 2 + j]).abs() < 1e-12);
            }
        }
        // rank one: Cholesky fails, the eigen route still gives L L^T = m
        let m = [1.0, 1.0, 1.0, 1.0];
        psd_factor(&m, 2, &mut l);
        for i in 0..2 {
            for j in 0..2 {
                let v: f64 = (0..2).map(|k| l[i * 2 + k] * l[j * 2 + k]).sum();
                assert!((v - m[i * 2 + j]).abs() < 1e-12);
            }
        }
    }
}
