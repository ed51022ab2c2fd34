//! Private tabular PSRL on a time-homogeneous release (work in progress; the numpy oracle is
//! `privrl.agents.psrl.reference`, the design docs/algorithms.md "PSRL").
//!
//! Users come in B batches (bounds fixed in advance). Each user counts only its first `m` visits
//! of each (s, a) (the public cap): `dN[s, a, s']` and `dR[s, a]` (rewards in [0, 1]), added to
//! the running batch's increment. At the end of batches 1..B-1 the server publishes the batch's
//! increment plus noise of scale sigma per cell into the billboard's running sums `N~`, `R~`, from
//! the privacy [`NoiseStream`] by the calibration's [`Sampler`]: the agents' exact discrete
//! Gaussian (the increment, S A S counts then S A reward sums as one vector, rounded to the lattice
//! sigma 2^-grid_bits and integer noise added: [`NoiseStream::privatize`], every discrete release's
//! operation) or float N(0, sigma^2) (S A S unit normals for the counts, then S A for the reward
//! sums, scaled by sigma: the numpy reference's draws).
//! Each user then draws a model from the posterior given the billboard from its own exploration
//! stream, in the reference's order: S A S normals (counts ~ N(N~, j sigma^2), each row projected
//! on the nonnegative simplex of its released total), S A normals (reward sums, clipped to
//! [0, n]), S A S gammas (Dirichlet(alpha0 + N)), S A gammas (1 + R), S A gammas (n - R)
//! (r ~ Beta(1 + R, n - R) by the gamma ratio: the optimistic reward prior of
//! `formulas.psrl_reward_prior`, one pseudo-observation paying 1, so an unvisited pair draws
//! r = 1; a gamma of shape 0 is the point 0, no draw); then H-step value iteration h = H-1..0
//! with one (S, A) block of uniforms per step breaking ties (within `TIE` of the maximum: the
//! largest uniform wins).

use rand::Rng;
use rand_distr::{Distribution, Gamma};
use serde::{Deserialize, Serialize};

use super::{Episodic, Guard, Stream, Trajectory};
use crate::errors::{CoreError, CoreResult};
use crate::noise::{
    round_half_even, NodeNoise, NodeShape, NoiseStream, LATTICE_LIMIT, MAX_GRID_BITS, MAX_NODE_LEN,
};

/// Q values within this of the step's maximum are ties (the reference's `TIE`).
pub const TIE: f64 = 1e-12;

/// The kind of one recorded draw (the reference's `DrawLog` names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrawKind {
    Normal,
    Gamma,
    Uniform,
    /// A discrete-sampler release's noise, in integer lattice units.
    DiscreteGaussian,
}

impl DrawKind {
    pub fn name(self) -> &'static str {
        match self {
            DrawKind::Normal => "normal",
            DrawKind::Gamma => "gamma",
            DrawKind::Uniform => "uniform",
            DrawKind::DiscreteGaussian => "discrete_gaussian",
        }
    }
}

/// How a release draws its noise (the calibration's sampler).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sampler {
    /// Float N(0, sigma^2): unit normals (S A S, then S A) scaled by sigma; sigma 0 still draws.
    Float,
    /// The agents' exact discrete Gaussian with variance parameter sigma^2 on the lattice
    /// `sigma 2^-grid_bits`, the increment rounded to it (one vector node of S A S + S A entries
    /// per release); sigma > 0.
    Discrete { grid_bits: u32 },
}

/// One call's draws: its kind, the array shape asked, the gamma shape parameters (empty for the
/// others) and the values (standard normals / gammas of scale 1 / uniforms on [0, 1) / a discrete
/// release's integer noise in lattice units).
#[derive(Debug, Clone)]
pub struct DrawRecord {
    pub kind: DrawKind,
    pub shape: Vec<usize>,
    pub params: Vec<f64>,
    pub values: Vec<f64>,
}

/// The debug record of both streams' draws (off by default; not saved).
#[derive(Debug, Clone, Default)]
pub struct DrawLog {
    pub noise: Vec<DrawRecord>,
    pub explore: Vec<DrawRecord>,
}

/// What a PSRL agent is built from.
pub struct PsrlParts {
    pub s: usize,
    pub a: usize,
    pub h: usize,
    pub episodes: u64,
    pub m: u32,
    /// The release's noise scale (0: non-private, the float noise still drawn and multiplied by 0).
    pub sigma: f64,
    pub sampler: Sampler,
    /// The batches' user bounds 0 = b_0 < ... < b_B = K (the reference's psrl_batch_bounds).
    pub bounds: Vec<u64>,
    /// Rewards refused (true) or clipped and counted (false) outside [0, 1].
    pub reject: bool,
    pub alpha0: f64,
    pub noise_seed: [u8; 32],
    pub exploration_seed: [u8; 32],
}

/// A PSRL agent: the billboard, the running batch's increment, both streams and the current
/// user's policy.
#[derive(Serialize, Deserialize)]
pub struct PsrlAgent {
    pub s: usize,
    pub a: usize,
    pub h: usize,
    pub episodes: u64,
    pub m: u32,
    pub sigma: f64,
    pub alpha0: f64,
    pub bounds: Vec<u64>,
    guard: Guard,
    pub clips: u64,
    /// The billboard: cumulative noisy counts N~ (S A S) and reward sums R~ (S A).
    pub board_n: Vec<f64>,
    pub board_r: Vec<f64>,
    /// Releases so far (j): the billboard's noise variance per cell is j sigma^2.
    pub releases: u64,
    /// The running batch's capped increment.
    inc_n: Vec<f64>,
    inc_r: Vec<f64>,
    /// The privacy noise: unit Gaussian (float, scaled by sigma at the release) or the discrete
    /// Gaussian of scale sigma (its law says which: [`PsrlAgent::sampler`]).
    noise: NoiseStream,
    explore: Stream,
    pub k: u64,
    /// The batch user k belongs to.
    batch: usize,
    pi: Vec<usize>,
    pi_for: Option<u64>,
    pub policy_updates: u64,
    #[serde(skip)]
    pub record: Option<DrawLog>,
}

fn invalid(msg: String) -> CoreError {
    CoreError::InvalidParameter(msg)
}

impl PsrlAgent {
    pub fn new(p: PsrlParts) -> CoreResult<Self> {
        if p.s == 0 || p.a == 0 || p.h == 0 || p.episodes == 0 || p.m == 0 {
            return Err(invalid(format!(
                "PSRL needs S, A, H, K, m >= 1, got S {}, A {}, H {}, K {}, m {}",
                p.s, p.a, p.h, p.episodes, p.m
            )));
        }
        if !(p.sigma.is_finite() && p.sigma >= 0.0) {
            return Err(invalid(format!(
                "sigma must be finite >= 0, got {}",
                p.sigma
            )));
        }
        if !(p.alpha0.is_finite() && p.alpha0 > 0.0) {
            return Err(invalid(format!(
                "alpha0 must be finite > 0, got {}",
                p.alpha0
            )));
        }
        check_bounds(&p.bounds, p.episodes)?;
        let sas = p.s.checked_mul(p.a).and_then(|x| x.checked_mul(p.s));
        let sas = match sas {
            Some(n) if n <= MAX_NODE_LEN => n,
            _ => {
                return Err(invalid(format!(
                    "PSRL's billboard holds S A S = {} x {} x {} counts: more than the {} a \
                     release can draw",
                    p.s, p.a, p.s, MAX_NODE_LEN
                )))
            }
        };
        let sa = p.s * p.a;
        let Some(hs) = p.h.checked_mul(p.s) else {
            return Err(invalid(format!(
                "PSRL's policy holds H S = {} x {} actions: more than memory can hold",
                p.h, p.s
            )));
        };
        let law = noise_law(p.sampler, p.sigma, sas + sa, p.episodes, p.m, p.h)?;
        Ok(PsrlAgent {
            s: p.s,
            a: p.a,
            h: p.h,
            episodes: p.episodes,
            m: p.m,
            sigma: p.sigma,
            alpha0: p.alpha0,
            bounds: p.bounds,
            guard: Guard {
                x_bound: 1.0,
                y_low: 0.0,
                y_high: 1.0,
                reject: p.reject,
            },
            clips: 0,
            board_n: vec![0.0; sas],
            board_r: vec![0.0; sa],
            releases: 0,
            inc_n: vec![0.0; sas],
            inc_r: vec![0.0; sa],
            noise: NoiseStream::new(law, p.noise_seed)?,
            explore: Stream::new(p.exploration_seed),
            k: 0,
            batch: 0,
            pi: vec![0; hs],
            pi_for: None,
            policy_updates: 0,
            record: None,
        })
    }

    /// A restored agent is one `new` could have built and `observe` reached: its buffers hold the
    /// entries its dimensions give (products checked: a dimension whose product wraps is refused,
    /// not read), its bounds rise from 0 to K, its batch is the one user k belongs to and its
    /// releases the batches closed before it, its policy's actions are in range, and its sigma,
    /// alpha0, m and noise law are the calibration's kind. Anything else is "not a consistent
    /// saved PSRL state".
    pub fn check_restored(&self) -> CoreResult<()> {
        const WHAT: &str = "PSRL";
        let refuse = |what: &str| {
            Err(invalid(format!(
                "not a consistent saved {WHAT} state: {what}"
            )))
        };
        self.guard.check_restored(WHAT)?;
        let (s, a, h) = (self.s, self.a, self.h);
        if s == 0 || a == 0 || h == 0 {
            return refuse("a dimension S, A or H of 0");
        }
        crate::state::check_sizes(
            WHAT,
            &[
                ("N~", self.board_n.len(), &[s, a, s]),
                ("its increment dN", self.inc_n.len(), &[s, a, s]),
                ("R~", self.board_r.len(), &[s, a]),
                ("its increment dR", self.inc_r.len(), &[s, a]),
                ("its policy", self.pi.len(), &[h, s]),
            ],
        )?;
        let (sa, sas) = (self.board_r.len(), self.board_n.len());
        if check_bounds(&self.bounds, self.episodes).is_err() {
            return refuse("its batch bounds do not rise strictly from 0 to K");
        }
        // user k is in batch b: bounds[b] <= k < bounds[b + 1], or b = B after the last user;
        // b batches have closed, each but the last with a release
        let b = self.num_batches();
        let schedule = match self.batch {
            x if x < b => self.bounds[x] <= self.k && self.k < self.bounds[x + 1],
            x => x == b && self.k == self.episodes,
        };
        if !(schedule && self.releases == self.batch.min(b - 1) as u64) {
            return refuse("its batch, user count and releases disagree");
        }
        if self.pi.iter().any(|&x| x >= a) {
            return refuse("its policy (an action out of range)");
        }
        // the billboard is noisy but finite; the increment holds counts and reward sums of at
        // most K users' min(m, H) counted visits of a cell
        let cap = self.episodes as f64 * f64::from(self.m).min(h as f64);
        let mut board = self.board_n.iter().chain(&self.board_r);
        let mut inc = self.inc_n.iter().chain(&self.inc_r);
        if !(board.all(|x| x.is_finite()) && inc.all(|&x| (0.0..=cap).contains(&x))) {
            return refuse("its billboard (not finite) or increment (outside [0, K min(m, H)])");
        }
        let ok = self.m >= 1
            && self.sigma.is_finite()
            && self.sigma >= 0.0
            && self.alpha0.is_finite()
            && self.alpha0 > 0.0
            && sas <= MAX_NODE_LEN
            && self.sampler().is_some_and(|smp| {
                let law = noise_law(smp, self.sigma, sas + sa, self.episodes, self.m, self.h);
                law.is_ok_and(|law| law == self.noise.noise())
            });
        if ok {
            Ok(())
        } else {
            refuse("its m, sigma, alpha0 or noise law")
        }
    }

    /// Start (or stop, `false`) the debug record of every draw.
    pub fn set_record(&mut self, on: bool) {
        self.record = on.then(DrawLog::default);
    }

    /// The release's sampler, read from the noise stream's law (None: a law PSRL never draws).
    pub fn sampler(&self) -> Option<Sampler> {
        match self.noise.noise() {
            NodeNoise::Gaussian { sigma: 1.0 } => Some(Sampler::Float),
            NodeNoise::DiscreteGaussian { grid_bits, .. } => Some(Sampler::Discrete { grid_bits }),
            _ => None,
        }
    }

    /// The number of batches B.
    pub fn num_batches(&self) -> usize {
        self.bounds.len() - 1
    }

    /// The billboard's noise variance per cell, j sigma^2.
    pub fn variance(&self) -> f64 {
        self.releases as f64 * (self.sigma * self.sigma)
    }

    /// The running batch's capped increment (dN, dR).
    pub fn increment(&self) -> (&[f64], &[f64]) {
        (&self.inc_n, &self.inc_r)
    }

    fn log(&mut self, noise: bool, kind: DrawKind, shape: Vec<usize>, params: &[f64], v: &[f64]) {
        if let Some(r) = &mut self.record {
            let rec = DrawRecord {
                kind,
                shape,
                params: params.to_vec(),
                values: v.to_vec(),
            };
            if noise { &mut r.noise } else { &mut r.explore }.push(rec);
        }
    }

    fn normals(&mut self, shape: Vec<usize>) -> Vec<f64> {
        let mut z = vec![0.0; shape.iter().product()];
        self.explore.normals(&mut z);
        self.log(false, DrawKind::Normal, shape, &[], &z);
        z
    }

    fn gammas(&mut self, shape: Vec<usize>, params: &[f64]) -> CoreResult<Vec<f64>> {
        let g = gamma_draws(&mut self.explore.0, params)?;
        self.log(false, DrawKind::Gamma, shape, params, &g);
        Ok(g)
    }

    fn uniforms(&mut self, n: usize) -> Vec<f64> {
        let u: Vec<f64> = (0..n).map(|_| self.explore.0.random::<f64>()).collect();
        self.log(false, DrawKind::Uniform, vec![self.s, self.a], &[], &u);
        u
    }

    /// One draw (P, r) from the posterior given the billboard (the module doc's order).
    pub fn posterior_model(&mut self) -> CoreResult<(Vec<f64>, Vec<f64>)> {
        let (s, a) = (self.s, self.a);
        let sd = self.variance().sqrt();
        let zn = self.normals(vec![s, a, s]);
        let mut y: Vec<f64> = self
            .board_n
            .iter()
            .zip(&zn)
            .map(|(b, z)| b + sd * z)
            .collect();
        for row in y.chunks_exact_mut(s) {
            simplex_project(row);
        }
        let counts = y;
        let n: Vec<f64> = counts.chunks_exact(s).map(|r| r.iter().sum()).collect();
        let zr = self.normals(vec![s, a]);
        let rs: Vec<f64> = (0..s * a)
            .map(|i| (self.board_r[i] + sd * zr[i]).max(0.0).min(n[i]))
            .collect();
        let shapes: Vec<f64> = counts.iter().map(|c| self.alpha0 + c).collect();
        let mut p = self.gammas(vec![s, a, s], &shapes)?;
        for row in p.chunks_exact_mut(s) {
            let t: f64 = row.iter().sum();
            row.iter_mut().for_each(|g| *g /= t);
        }
        // r ~ Beta(1 + R, n - R) (formulas.psrl_reward_prior): ga > 0 (shape >= 1), gb = 0 where
        // R = n (an unvisited pair: r = 1, the top of [0, 1])
        let sh_a: Vec<f64> = rs.iter().map(|r| 1.0 + r).collect();
        let sh_b: Vec<f64> = rs.iter().zip(&n).map(|(r, n)| n - r).collect();
        let ga = self.gammas(vec![s, a], &sh_a)?;
        let gb = self.gammas(vec![s, a], &sh_b)?;
        let r = ga.iter().zip(&gb).map(|(x, y)| x / (x + y)).collect();
        Ok((p, r))
    }

    /// The greedy H-step plan of (P, r) into `self.pi` (h = H-1..0, one (S, A) block of
    /// uniforms per step for the ties).
    fn greedy_plan(&mut self, p: &[f64], r: &[f64]) {
        let (s, a) = (self.s, self.a);
        let mut v = vec![0.0; s];
        let mut q = vec![0.0; s * a];
        for h in (0..self.h).rev() {
            for (i, qi) in q.iter_mut().enumerate() {
                let row = &p[i * s..(i + 1) * s];
                *qi = r[i] + row.iter().zip(&v).map(|(x, y)| x * y).sum::<f64>();
            }
            let u = self.uniforms(s * a);
            for st in 0..s {
                let qs = &q[st * a..(st + 1) * a];
                let top = qs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let mut best = (0, f64::NEG_INFINITY);
                for (act, &qa) in qs.iter().enumerate() {
                    let key = if qa - top >= -TIE {
                        u[st * a + act]
                    } else {
                        -1.0
                    };
                    if key > best.1 {
                        best = (act, key);
                    }
                }
                self.pi[h * s + st] = best.0;
                v[st] = top;
            }
        }
    }

    /// The greedy (H, S) policy of the billboard's plug-in model, no draw, lowest-index ties:
    /// counts N = each row of N~ projected on the nonnegative simplex of its released total,
    /// R = R~ clipped to [0, n], P = (alpha0 + N) / (S alpha0 + n), r = (1 + R) / (1 + n) (the
    /// Dirichlet and Beta(1 + R, n - R) means at the projected counts: an unvisited pair's r is 1;
    /// not the exact posterior mean, which the projection's nonlinearity moves). Reads the agent
    /// only.
    pub fn greedy_policy(&self) -> Vec<usize> {
        let (s, a) = (self.s, self.a);
        let mut p = self.board_n.clone();
        let mut r = vec![0.0; s * a];
        for (i, row) in p.chunks_exact_mut(s).enumerate() {
            simplex_project(row);
            let n: f64 = row.iter().sum();
            let rs = self.board_r[i].max(0.0).min(n);
            let total = s as f64 * self.alpha0 + n;
            row.iter_mut().for_each(|c| *c = (self.alpha0 + *c) / total);
            r[i] = (1.0 + rs) / (1.0 + n);
        }
        let mut pi = vec![0; self.h * s];
        let mut v = vec![0.0; s];
        let mut q = vec![0.0; a];
        for h in (0..self.h).rev() {
            let mut next = vec![0.0; s];
            for st in 0..s {
                for (act, qa) in q.iter_mut().enumerate() {
                    let i = st * a + act;
                    let row = &p[i * s..(i + 1) * s];
                    *qa = r[i] + row.iter().zip(&v).map(|(x, y)| x * y).sum::<f64>();
                }
                let (best, top) =
                    q.iter()
                        .enumerate()
                        .fold(
                            (0, f64::NEG_INFINITY),
                            |b, (i, &x)| {
                                if x > b.1 {
                                    (i, x)
                                } else {
                                    b
                                }
                            },
                        );
                pi[h * s + st] = best;
                next[st] = top;
            }
            v = next;
        }
        pi
    }

    fn ensure_policy(&mut self) -> CoreResult<()> {
        if self.pi_for == Some(self.k) {
            return Ok(());
        }
        let (p, r) = self.posterior_model()?;
        self.greedy_plan(&p, &r);
        self.pi_for = Some(self.k);
        self.policy_updates += 1;
        Ok(())
    }

    /// Add one user's capped statistic to the running increment (rewards through the guard).
    fn receive(&mut self, t: &Trajectory) -> CoreResult<()> {
        let (s, a, h) = (self.s, self.a, self.h);
        let bad_len = t.states.len() != h + 1 || t.actions.len() != h || t.rewards.len() != h;
        let bad_idx = t.states.iter().any(|&x| x >= s) || t.actions.iter().any(|&x| x >= a);
        if bad_len || bad_idx {
            return Err(CoreError::Shape(format!(
                "a PSRL trajectory has H + 1 = {} states in [0, {s}) and H = {h} actions in \
                 [0, {a}) and rewards",
                h + 1
            )));
        }
        let mut rewards = t.rewards.clone();
        let bad = self.guard.apply(&mut [], 1, Some(&mut rewards))?;
        for x in rewards.iter_mut() {
            *x = x.clamp(0.0, 1.0);
        }
        self.clips += bad as u64;
        let mut seen = vec![0u32; s * a];
        for (step, r) in rewards.iter().enumerate() {
            let (st, ac, s2) = (t.states[step], t.actions[step], t.states[step + 1]);
            let sa = st * a + ac;
            if seen[sa] < self.m {
                self.inc_n[sa * s + s2] += 1.0;
                self.inc_r[sa] += r;
            }
            seen[sa] += 1;
        }
        Ok(())
    }

    /// Publish the running increment plus noise per cell (counts, then reward sums): float
    /// N(0, sigma^2), or the discrete sampler's release ([`PsrlAgent::release_discrete`]).
    fn release(&mut self) -> CoreResult<()> {
        if let Some(Sampler::Discrete { .. }) = self.sampler() {
            return self.release_discrete();
        }
        let (sa, sas) = (self.s * self.a, self.s * self.a * self.s);
        let mut zn = vec![0.0; sas];
        let mut zr = vec![0.0; sa];
        self.noise.fill(NodeShape::Vector(sas), &mut zn)?;
        self.noise.fill(NodeShape::Vector(sa), &mut zr)?;
        let (s, a) = (self.s, self.a);
        self.log(true, DrawKind::Normal, vec![s, a, s], &[], &zn);
        self.log(true, DrawKind::Normal, vec![s, a], &[], &zr);
        let sigma = self.sigma;
        for ((b, d), z) in self.board_n.iter_mut().zip(&self.inc_n).zip(&zn) {
            *b = *b + d + sigma * z;
        }
        for ((b, d), z) in self.board_r.iter_mut().zip(&self.inc_r).zip(&zr) {
            *b = *b + d + sigma * z;
        }
        self.inc_n.iter_mut().for_each(|x| *x = 0.0);
        self.inc_r.iter_mut().for_each(|x| *x = 0.0);
        self.releases += 1;
        Ok(())
    }

    /// The discrete sampler's release: the increment x (S A S counts then S A reward sums, one
    /// vector of n entries) rounded to the lattice u = sigma 2^-grid_bits (half to even) plus the
    /// exact integer noise z, scaled once, `(round(x / u) + z) u` ([`NoiseStream::privatize`]: the
    /// released increment is a function of the integer release alone), added to the billboard.
    fn release_discrete(&mut self) -> CoreResult<()> {
        let sas = self.inc_n.len();
        let n = sas + self.inc_r.len();
        let shape = NodeShape::Vector(n);
        let mut x: Vec<f64> = self.inc_n.iter().chain(&self.inc_r).copied().collect();
        let mut rounded = vec![0.0; n];
        self.noise.privatize(shape, &mut x, &mut rounded)?;
        if self.record.is_some() {
            // z = released / u - round(x / u): exact while |round(x / u) + z| < 2^51 (new() keeps
            // every entry of x within 2^50 lattice units; z is ~ 2^grid_bits)
            let u = self.noise.noise().lattice_unit(shape)?.unwrap_or(1.0);
            let z: Vec<f64> = x
                .iter()
                .zip(&rounded)
                .map(|(v, r)| round_half_even(v / u) - r)
                .collect();
            self.log(true, DrawKind::DiscreteGaussian, vec![n], &[], &z);
        }
        let board = self.board_n.iter_mut().chain(self.board_r.iter_mut());
        for (b, v) in board.zip(&x) {
            *b += v;
        }
        self.inc_n.iter_mut().for_each(|x| *x = 0.0);
        self.inc_r.iter_mut().for_each(|x| *x = 0.0);
        self.releases += 1;
        Ok(())
    }
}

/// The noise stream's law for `sampler` on a release of `n` = S A S + S A entries: unit Gaussian
/// (float) or the discrete Gaussian of scale sigma > 0 on its lattice, refused when a batch's
/// largest entry (K users' min(m, H) counted visits) could exceed 2^50 lattice units (the lattice's
/// exact range is 2^52: a release would fail mid-run, or the record's noise be inexact).
fn noise_law(
    sampler: Sampler,
    sigma: f64,
    n: usize,
    k: u64,
    m: u32,
    h: usize,
) -> CoreResult<NodeNoise> {
    let Sampler::Discrete { grid_bits } = sampler else {
        return Ok(NodeNoise::Gaussian { sigma: 1.0 });
    };
    if !(sigma > 0.0 && grid_bits <= MAX_GRID_BITS && n <= MAX_NODE_LEN) {
        return Err(invalid(format!(
            "the discrete sampler needs sigma > 0 (a non-private PSRL draws with the float \
             sampler), grid_bits <= {MAX_GRID_BITS} and S A S + S A <= {MAX_NODE_LEN}; got \
             sigma {sigma}, grid_bits {grid_bits}, {n} entries"
        )));
    }
    let law = NodeNoise::DiscreteGaussian { sigma, grid_bits };
    law.validate()?;
    let unit = law.lattice_unit(NodeShape::Vector(n))?.unwrap_or(1.0);
    let largest = k as f64 * (m as f64).min(h as f64);
    if largest / unit > LATTICE_LIMIT / 4.0 {
        return Err(invalid(format!(
            "the discrete sampler's lattice sigma 2^-{grid_bits} = {unit:e} is too fine for a \
             batch of up to K = {k} users' counts (up to {largest} in one cell): use a larger \
             sigma, fewer grid bits or the float sampler"
        )));
    }
    Ok(law)
}

impl Episodic for PsrlAgent {
    fn policy(&mut self) -> CoreResult<&[usize]> {
        if self.k >= self.episodes {
            return Err(CoreError::Capacity(format!(
                "this PSRL agent was calibrated for {} users: all have been served",
                self.episodes
            )));
        }
        self.ensure_policy()?;
        Ok(&self.pi)
    }

    fn observe(&mut self, t: &Trajectory) -> CoreResult<()> {
        if self.k >= self.episodes {
            return Err(CoreError::Capacity(format!(
                "this PSRL agent was calibrated for {} users: all have been observed",
                self.episodes
            )));
        }
        self.receive(t)?;
        self.k += 1;
        if self.k == self.bounds[self.batch + 1] {
            if self.batch + 1 < self.num_batches() {
                self.release()?;
            }
            self.batch += 1;
        }
        Ok(())
    }
}

fn check_bounds(bounds: &[u64], k: u64) -> CoreResult<()> {
    let ok = bounds.len() >= 2
        && bounds[0] == 0
        && bounds[bounds.len() - 1] == k
        && bounds.windows(2).all(|w| w[0] < w[1]);
    if ok {
        Ok(())
    } else {
        Err(invalid(format!(
            "batch bounds must rise strictly from 0 to K = {k}, got {bounds:?}"
        )))
    }
}

/// Gamma(shape, 1) draws, one per shape parameter (rand_distr: Marsaglia-Tsang). A shape of
/// exactly 0 is the point 0 and consumes no randomness, as numpy's `gamma(0.0)` (rand_distr
/// refuses it); a negative or NaN shape is an error.
pub fn gamma_draws<R: Rng + ?Sized>(rng: &mut R, shapes: &[f64]) -> CoreResult<Vec<f64>> {
    shapes
        .iter()
        .map(|&k| {
            if k == 0.0 {
                return Ok(0.0);
            }
            Gamma::new(k, 1.0)
                .map(|g| g.sample(rng))
                .map_err(|_| CoreError::NonFinite(format!("gamma shape parameter {k}")))
        })
        .collect()
}

/// Euclidean projection of `row` on `{x >= 0, sum x = max(sum row, 0)}` in place (the
/// reference's `simplex_project`; a row of total <= 0 projects on {0}).
pub fn simplex_project(row: &mut [f64]) {
    let z = row.iter().sum::<f64>().max(0.0);
    if z <= 0.0 {
        row.iter_mut().for_each(|x| *x = 0.0);
        return;
    }
    let mut u = row.to_vec();
    u.sort_by(|x, y| y.total_cmp(x));
    let (mut css, mut theta) = (0.0, 0.0);
    for (i, ui) in u.iter().enumerate() {
        css += ui;
        let c = css - z;
        if ui - c / (i + 1) as f64 > 0.0 {
            theta = c / (i + 1) as f64;
        }
    }
    row.iter_mut().for_each(|x| *x = (*x - theta).max(0.0));
}

#[cfg(test)]
mod tests;
