//! LinUCB with disjoint arms (H = 1: one decision per user) under every privacy model.
//!
//! A user arrives with a context `x` (a row of the public context table, `||x|| <= 1`), picks an
//! arm `a` and receives a reward `r` in `[0, 1]`. Its feature is `phi = e_a (x) x` (disjoint
//! arms): the Gram matrix `sum phi phi^T` is block-diagonal with one `p x p` block per arm, and
//! the reward vector `sum phi r` one `p`-block per arm. The server keeps, per arm,
//!
//! * non-private: the exact `lam I + sum x x^T` with its Sherman–Morrison inverse and
//!   `sum x r`, updated after every user (Li et al. 2010);
//! * JDP (Shariff & Sheffet 2018): one continual-release mechanism per arm and family over
//!   leaves that are the sums of consecutive users between fixed ends (a schedule fixed in
//!   advance: uniform, or geometric);
//!   every arm's mechanisms receive a leaf at every batch end (zero for an arm nobody played),
//!   so the release schedule never depends on the data. The `A` blocks are the block-diagonal
//!   of one `d x d` mechanism (`d = A p`): a user changes one block, and the off-diagonal blocks
//!   are zero for every user, so the plan's sensitivity of the whole matrix is the block's;
//! * LDP (Zheng et al. 2020): the user randomizes every block (its own arm's statistics, the
//!   others' zeros: the server must not learn the arm) with the user-side randomizer; the server
//!   sums the messages.
//!
//! At every release the user-facing billboard is, per arm, `G~ = released + (lam + shift) I`
//! (`shift = const_shift + shift_mult * Upsilon_t`: the theorem's constant, or a multiple of
//! the high-probability bound of the noise released at t),
//! its inverse and `w~ = G~^{-1} b~`. A user's index of arm a is `x^T w~_a + beta * s_a(x)` with
//! `s_a(x)^2 = sigma_r^2 ||x||^2_{G~^{-1}} + gamma_t^2 ||G~^{-1} x||^2`: the reward noise
//! (`sigma_r`) and the released vector noise (std `gamma_t`) seen through the estimate. Under
//! `sampling` the user draws `z_a ~ N(0, 1)` per arm from its own stream and uses
//! `x^T w~_a + beta * s_a(x) * z_a` (Thompson sampling: the law of `x^T w_a` for `w_a ~
//! N(w~_a, beta^2 Sigma_a)`, post-processing of the billboard).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::bounds::NoiseBounds;
use super::{Guard, Mechanism, Stream, Ties};
use crate::errors::{CoreError, CoreResult};
use crate::kernels::rank_one::{spd_inverse, ShermanMorrison};
use crate::noise::NoiseStream;

pub mod policy;
pub mod user;

/// A live user's context vector `x` has length `p` and its arm `a` is one of `arms` (the
/// agent's `observe_x` and the LDP client's `privatize_x`).
fn check_context_arm(x: &[f64], a: usize, p: usize, arms: usize) -> CoreResult<()> {
    if x.len() != p || a >= arms {
        return Err(CoreError::Shape(format!(
            "context of length {} / arm {a} out of range (p = {p}, arms = {arms})",
            x.len()
        )));
    }
    Ok(())
}

/// The server's per-arm sums under each privacy model.
#[derive(Serialize, Deserialize)]
pub enum BanditServer {
    Exact {
        sms: Vec<ShermanMorrison>,
        sums: Vec<f64>,
    },
    Jdp {
        grams: Vec<Mechanism>,
        targets: Vec<Mechanism>,
        leaf_g: Vec<f64>,
        leaf_b: Vec<f64>,
    },
    Ldp {
        gram: Vec<f64>,
        target: Vec<f64>,
        matrix: Box<NoiseStream>,
        vector: Box<NoiseStream>,
        divisor: f64,
    },
}

/// Everything a LinUCB agent is built from.
pub struct LinUcbParts {
    pub arms: usize,
    pub p: usize,
    pub contexts: Vec<f64>,
    pub guard: Guard,
    pub lam: f64,
    pub beta: f64,
    pub sigma_r: f64,
    /// The user counts (1-based, increasing, the last = episodes) at which a leaf ends.
    pub ends: Vec<u64>,
    pub const_shift: f64,
    pub shift_mult: f64,
    pub bounds: NoiseBounds,
    pub server: BanditServer,
    pub ties: Ties,
    pub exploration: Option<Stream>,
    pub episodes: u64,
}

/// A user's context: an index into the agent's table, or a vector of length p.
#[derive(Clone, Copy)]
pub enum Context<'a> {
    Index(usize),
    Vector(&'a [f64]),
}

#[derive(Serialize, Deserialize)]
pub struct LinUcb {
    pub arms: usize,
    pub p: usize,
    pub n: usize,
    /// The table (shared with the clients; serialized as the plain vector).
    contexts: Arc<Vec<f64>>,
    guard: Guard,
    lam: f64,
    beta: f64,
    sigma_r: f64,
    ends: Vec<u64>,
    next_end: usize,
    const_shift: f64,
    shift_mult: f64,
    bounds: NoiseBounds,
    server: BanditServer,
    ties: Ties,
    exploration: Option<Stream>,
    episodes: u64,
    pub k: u64,
    pub clips: u64,
    pub releases: u64,
    pub release_users: u64,
    /// Billboard: per arm the inverse (p x p), the weights (p), the released design (p x p).
    inverse: Vec<f64>,
    weights: Vec<f64>,
    design: Vec<f64>,
    /// Variance of one released entry of the reward vector's noise (gamma_t^2).
    gamma2: f64,
    /// The shift added at the last release (lam excluded).
    pub shift: f64,
    #[serde(skip)]
    work: Vec<f64>,
    /// The last LDP message's buffers (gram, target), reused (not state).
    #[serde(skip)]
    message: (Vec<f64>, Vec<f64>),
}

impl LinUcb {
    pub fn new(parts: LinUcbParts) -> CoreResult<Self> {
        let LinUcbParts {
            arms,
            p,
            contexts,
            guard,
            lam,
            beta,
            sigma_r,
            ends,
            const_shift,
            shift_mult,
            bounds,
            server,
            ties,
            exploration,
            episodes,
        } = parts;
        if arms == 0 || p == 0 || contexts.is_empty() || contexts.len() % p != 0 {
            return Err(CoreError::Shape(
                "LinUCB needs >= 1 arm and a non-empty (n, p) context table".into(),
            ));
        }
        if episodes == 0
            || ends.last() != Some(&episodes)
            || ends.first() == Some(&0)
            || ends.windows(2).any(|w| w[0] >= w[1])
        {
            return Err(CoreError::InvalidParameter(
                "leaf ends must increase from >= 1 to the number of episodes".into(),
            ));
        }
        let mut table = contexts;
        let clips = guard.apply(&mut table, p, None)? as u64;
        let n = table.len() / p;
        let mut inverse = vec![0.0; arms * p * p];
        let mut design = vec![0.0; arms * p * p];
        for a in 0..arms {
            for i in 0..p {
                inverse[a * p * p + i * p + i] = 1.0 / lam;
                design[a * p * p + i * p + i] = lam;
            }
        }
        Ok(LinUcb {
            arms,
            p,
            n,
            contexts: Arc::new(table),
            guard,
            lam,
            beta,
            sigma_r,
            ends,
            next_end: 0,
            const_shift,
            shift_mult,
            bounds,
            server,
            ties,
            exploration,
            episodes,
            k: 0,
            clips,
            releases: 0,
            release_users: 0,
            inverse,
            weights: vec![0.0; arms * p],
            design,
            gamma2: 0.0,
            shift: 0.0,
            work: vec![],
            message: Default::default(),
        })
    }

    /// A restored state's sizes against its dimensions (`crate::state::check_sizes`).
    pub fn check_restored(&self) -> CoreResult<()> {
        const WHAT: &str = "LinUCB agent";
        let (arms, p) = (self.arms, self.p);
        self.guard.check_restored(WHAT)?;
        // a private agent's leaves end at increasing user counts, the last at K, the next after
        // the users so far (not read when non-private: every user refreshes the exact inverse)
        let exact = matches!(self.server, BanditServer::Exact { .. });
        let schedule = self.k <= self.episodes
            && (exact
                || (self.ends.windows(2).all(|w| w[0] < w[1])
                    && self.ends.last() == Some(&self.episodes)
                    && self.next_end <= self.ends.len()
                    && self.ends.get(self.next_end).is_none_or(|&e| e > self.k)));
        if !schedule {
            return Err(CoreError::InvalidParameter(format!(
                "not a consistent saved {WHAT} state: its release schedule"
            )));
        }
        crate::state::check_sizes(
            WHAT,
            &[
                ("contexts", self.contexts.len(), &[self.n, p]),
                ("inverse", self.inverse.len(), &[arms, p, p]),
                ("design", self.design.len(), &[arms, p, p]),
                ("weights", self.weights.len(), &[arms, p]),
            ],
        )?;
        let dims: Vec<usize> = match &self.server {
            BanditServer::Exact { sms, sums } => {
                crate::state::check_sizes(WHAT, &[("sums", sums.len(), &[arms, p])])?;
                sms.iter().map(|m| m.dim()).collect()
            }
            BanditServer::Jdp { grams, targets, .. } => {
                grams.iter().chain(targets).map(|m| m.dim()).collect()
            }
            BanditServer::Ldp { gram, target, .. } => {
                crate::state::check_sizes(
                    WHAT,
                    &[
                        ("gram", gram.len(), &[arms, p, p]),
                        ("target", target.len(), &[arms, p]),
                    ],
                )?;
                vec![]
            }
        };
        crate::state::check_dims(WHAT, dims, p)
    }

    /// Context row `s` (clipped to the guard's bound when the agent was built).
    pub fn context(&self, s: usize) -> &[f64] {
        &self.contexts[s * self.p..(s + 1) * self.p]
    }

    /// Per-arm (mean, width) of context `s` on the current billboard.
    pub fn scores(&mut self, s: usize, out: &mut [f64]) {
        let x = self.context(s).to_vec();
        self.scores_x(&x, out);
    }

    /// Per-arm (mean, width) of the context vector `x` (length p, `||x|| <= 1`).
    pub fn scores_x(&mut self, x: &[f64], out: &mut [f64]) {
        let (scorer, work, _) = self.user();
        scorer.scores(x, out, work);
    }

    /// What the arriving user reads: the billboard's [`policy::Scorer`], the scratch it uses and
    /// the agent's (exploration, tie) streams the user's draws come from.
    fn user(&mut self) -> (policy::Scorer<'_>, &mut Vec<f64>, policy::Draws<'_>) {
        let scorer = policy::Scorer {
            arms: self.arms,
            p: self.p,
            inverse: &self.inverse,
            weights: &self.weights,
            sigma_r: self.sigma_r,
            gamma2: self.gamma2,
            beta: self.beta,
        };
        (
            scorer,
            &mut self.work,
            (&mut self.exploration, &mut self.ties),
        )
    }

    /// `f` with the exploration and tie streams left as they were: a look at the arriving
    /// user's arm (its policy, an evaluation) that no later user's draw depends on. The user's
    /// own draws are taken when it is observed (`LinUCB.update`) or played (`run`).
    pub fn peek<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let saved = (self.exploration.clone(), self.ties.clone());
        let out = f(self);
        (self.exploration, self.ties) = saved;
        out
    }

    /// The arm the user with context `s` plays.
    pub fn action(&mut self, s: usize) -> usize {
        // the table's rows were brought inside the guard's bound when the agent was built
        let x = self.context(s).to_vec();
        self.choose(&x)
    }

    /// The arm the user with the context vector `x` plays (`x` clipped to the guard's bound).
    pub fn action_x(&mut self, x: &[f64]) -> usize {
        // a context outside the ball is projected on it, as the intake would
        match policy::project(self.guard, x, self.p) {
            Some(xs) => self.choose(&xs),
            None => 0,
        }
    }

    /// The argmax of the indices of a context inside the bound ([`policy::Scorer::choose`], the
    /// user's draws from the agent's exploration and tie streams).
    fn choose(&mut self, xs: &[f64]) -> usize {
        let (scorer, work, draws) = self.user();
        scorer.choose_drawing(xs, work, draws)
    }

    /// A user reported through the API (`LinUCB.update`, after a `peek`): its draws are taken
    /// as `run` takes them when it plays (`action` / `action_x` on the billboard it saw), then
    /// its data goes to the server; a refused user leaves the streams as they were.
    pub fn observe_user(&mut self, ctx: Context<'_>, a: usize, r: f64) -> CoreResult<()> {
        if matches!(ctx, Context::Index(s) if s >= self.n) {
            return Err(CoreError::Shape(format!(
                "context out of range (n = {})",
                self.n
            )));
        }
        let saved = (self.exploration.clone(), self.ties.clone());
        let out = match ctx {
            Context::Index(s) => {
                self.action(s);
                self.observe(s, a, r)
            }
            Context::Vector(x) => {
                self.action_x(x);
                self.observe_x(x, a, r)
            }
        };
        if out.is_err() {
            (self.exploration, self.ties) = saved;
        }
        out
    }

    /// The user of context `s` played arm `a` and got reward `r`: through the privacy model to
    /// the server (and the next billboard at a batch end).
    pub fn observe(&mut self, s: usize, a: usize, r: f64) -> CoreResult<()> {
        if s >= self.n {
            return Err(CoreError::Shape(format!(
                "context {s} out of range (n = {})",
                self.n
            )));
        }
        let x = self.context(s).to_vec();
        self.observe_x(&x, a, r)
    }

    /// The user of context vector `x` played arm `a` and got reward `r` (`x` and `r` through the
    /// guard: clipped and counted, or refused).
    pub fn observe_x(&mut self, x: &[f64], a: usize, r: f64) -> CoreResult<()> {
        check_context_arm(x, a, self.p, self.arms)?;
        if self.k >= self.episodes {
            return Err(CoreError::Capacity(format!(
                "the agent was calibrated for {} users",
                self.episodes
            )));
        }
        let mut y = [r];
        let mut xs = x.to_vec();
        let bad = self.guard.apply(&mut xs, self.p, Some(&mut y))? as u64;
        let r = y[0];
        let (p, pp) = (self.p, self.p * self.p);
        match &mut self.server {
            BanditServer::Exact { sms, sums } => {
                sms[a].update(&xs)?;
                sums[a * p..(a + 1) * p]
                    .iter_mut()
                    .zip(&xs)
                    .for_each(|(t, v)| *t += v * r);
            }
            BanditServer::Jdp { leaf_g, leaf_b, .. } => {
                let g = &mut leaf_g[a * pp..(a + 1) * pp];
                for i in 0..p {
                    for j in 0..p {
                        g[i * p + j] += xs[i] * xs[j];
                    }
                }
                leaf_b[a * p..(a + 1) * p]
                    .iter_mut()
                    .zip(&xs)
                    .for_each(|(t, v)| *t += v * r);
            }
            BanditServer::Ldp {
                gram,
                target,
                matrix,
                vector,
                divisor,
            } => {
                // the user side (`user::ldp_message`, a client's code too), then the sums
                let (mg, mt) = &mut self.message;
                let rz = (&mut **matrix, &mut **vector, *divisor);
                user::ldp_message(&xs, a, r, self.arms, rz, mg, mt)?;
                gram.iter_mut().zip(mg.iter()).for_each(|(g, v)| *g += v);
                target.iter_mut().zip(mt.iter()).for_each(|(t, x)| *t += x);
            }
        }
        self.clips += bad;
        self.finish_user(a)
    }

    /// A user's data is in the server's sums: count it, refresh (exact) or release at the
    /// schedule's next end.
    fn finish_user(&mut self, a: usize) -> CoreResult<()> {
        self.k += 1;
        match self.server {
            BanditServer::Exact { .. } => self.refresh_exact(a)?,
            _ => {
                if self.k == self.ends[self.next_end] {
                    self.next_end += 1;
                    self.end_batch()?;
                }
            }
        }
        Ok(())
    }

    fn refresh_exact(&mut self, a: usize) -> CoreResult<()> {
        let (p, pp) = (self.p, self.p * self.p);
        if let BanditServer::Exact { sms, sums } = &self.server {
            let inv = sms[a].inverse();
            self.inverse[a * pp..(a + 1) * pp].copy_from_slice(inv);
            self.design[a * pp..(a + 1) * pp].copy_from_slice(sms[a].matrix());
            let b = &sums[a * p..(a + 1) * p];
            for (wi, row) in self.weights[a * p..(a + 1) * p]
                .iter_mut()
                .zip(inv.chunks_exact(p))
            {
                *wi = row.iter().zip(b).map(|(m, v)| m * v).sum();
            }
        }
        self.releases += 1;
        self.release_users = self.k;
        Ok(())
    }

    /// A batch ends: JDP pushes every arm's leaf, then the billboard is released (unless no
    /// user is left to read it).
    fn end_batch(&mut self) -> CoreResult<()> {
        let (p, pp) = (self.p, self.p * self.p);
        if let BanditServer::Jdp {
            grams,
            targets,
            leaf_g,
            leaf_b,
        } = &mut self.server
        {
            for a in 0..self.arms {
                grams[a].0.push(&leaf_g[a * pp..(a + 1) * pp])?;
                targets[a].0.push(&leaf_b[a * p..(a + 1) * p])?;
            }
            leaf_g.iter_mut().for_each(|v| *v = 0.0);
            leaf_b.iter_mut().for_each(|v| *v = 0.0);
        }
        if self.k < self.episodes {
            self.release()?;
        }
        Ok(())
    }

    /// The released sums' variance factor now (the mechanism's profile at the leaves pushed,
    /// the number of users under LDP, 0 non-private).
    pub fn variance_factor(&self) -> f64 {
        match &self.server {
            BanditServer::Exact { .. } => 0.0,
            BanditServer::Jdp { grams, .. } => grams[0].0.variance_factor(grams[0].0.steps()),
            BanditServer::Ldp { .. } => self.k as f64,
        }
    }

    /// Per arm: the released (noisy) Gram block and reward block.
    pub fn released(&self, gram: &mut [f64], target: &mut [f64]) -> CoreResult<()> {
        let (p, pp) = (self.p, self.p * self.p);
        match &self.server {
            BanditServer::Exact { sms, sums } => {
                for (a, sm) in sms.iter().enumerate() {
                    let g = &mut gram[a * pp..(a + 1) * pp];
                    g.copy_from_slice(sm.matrix());
                    for i in 0..p {
                        g[i * p + i] -= self.lam;
                    }
                }
                target.copy_from_slice(sums);
            }
            BanditServer::Jdp { grams, targets, .. } => {
                for a in 0..self.arms {
                    grams[a].0.release_into(&mut gram[a * pp..(a + 1) * pp])?;
                    targets[a].0.release_into(&mut target[a * p..(a + 1) * p])?;
                }
            }
            BanditServer::Ldp {
                gram: g, target: t, ..
            } => {
                gram.copy_from_slice(g);
                target.copy_from_slice(t);
            }
        }
        Ok(())
    }

    fn release(&mut self) -> CoreResult<()> {
        let (p, pp) = (self.p, self.p * self.p);
        let mut gram = vec![0.0; self.arms * pp];
        let mut target = vec![0.0; self.arms * p];
        self.released(&mut gram, &mut target)?;
        let v = self.variance_factor();
        let (ups, _) = self.bounds.at(v);
        let sv = self.bounds.vector_std(v);
        self.gamma2 = sv * sv;
        self.shift = self.const_shift + self.shift_mult * ups;
        for a in 0..self.arms {
            let g = &mut gram[a * pp..(a + 1) * pp];
            for i in 0..p {
                g[i * p + i] += self.lam + self.shift;
            }
            // w.p. <= alpha the noise exceeds its bound: raise the shift until G~ is PD
            let mut extra = 0.0;
            let inv = loop {
                match spd_inverse(g, p) {
                    Ok(inv) => break inv,
                    Err(CoreError::NotPositiveDefinite(_)) if extra < 1e12 => {
                        let add = if extra == 0.0 {
                            self.lam.max(1e-6)
                        } else {
                            extra
                        };
                        for i in 0..p {
                            g[i * p + i] += add;
                        }
                        extra += add;
                    }
                    Err(e) => return Err(e),
                }
            };
            let b = &target[a * p..(a + 1) * p];
            for (wi, row) in self.weights[a * p..(a + 1) * p]
                .iter_mut()
                .zip(inv.chunks_exact(p))
            {
                *wi = row.iter().zip(b).map(|(m, v)| m * v).sum();
            }
            self.inverse[a * pp..(a + 1) * pp].copy_from_slice(&inv);
            self.design[a * pp..(a + 1) * pp].copy_from_slice(g);
        }
        self.releases += 1;
        self.release_users = self.k;
        Ok(())
    }

    /// The greedy arm of every context (n): the argmax over arms of the released estimate's
    /// mean reward `x^T w~_a` (no width, no draw), ties to the lowest arm. Post-processing of the
    /// billboard's weights only: no stream moves.
    pub fn greedy_policy(&self) -> Vec<usize> {
        let p = self.p;
        (0..self.n)
            .map(|s| {
                let x = self.context(s);
                let mut best = (0, f64::NEG_INFINITY);
                for (a, w) in self.weights.chunks_exact(p).enumerate() {
                    let m: f64 = w.iter().zip(x).map(|(a, b)| a * b).sum();
                    if m > best.1 {
                        best = (a, m);
                    }
                }
                best.0
            })
            .collect()
    }

    /// The billboard: per arm the design, its inverse, the weights.
    pub fn board(&self) -> (&[f64], &[f64], &[f64]) {
        (&self.design, &self.inverse, &self.weights)
    }

    /// `uniforms.len() / 2` users on a bandit whose expected rewards are `means` (n x arms):
    /// user i's context is `floor(u_{i,0} n)`, its reward `1{u_{i,1} < mean}`; logs the exact
    /// regret `max_b mean(s, b) - mean(s, a)`, the reward and the context.
    pub fn run(
        &mut self,
        means: &[f64],
        uniforms: &[f64],
        log: &mut super::EpisodeLog,
    ) -> Result<(), (usize, CoreError)> {
        for (e, u) in uniforms.chunks_exact(2).enumerate() {
            let s = ((u[0] * self.n as f64) as usize).min(self.n - 1);
            let a = self.action(s);
            let row = &means[s * self.arms..(s + 1) * self.arms];
            let best = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let r = if u[1] < row[a] { 1.0 } else { 0.0 };
            log.gaps.push(best - row[a]);
            log.returns.push(r);
            log.starts.push(s as i64);
            self.observe(s, a, r).map_err(|f| (e, f))?;
        }
        Ok(())
    }
}

/// `g_i = sum_k inv[i][k] x[k]` for every row i of the p x p `inv` (p = x.len()), each row's
/// products added in k order from Iterator::sum's neutral element, eight rows at a time: eight
/// independent sums in flight (one row alone waits on each addition's latency), then the rows
/// left one by one; the same bits as one `sum` per row.
#[inline]
pub(crate) fn inverse_times(inv: &[f64], x: &[f64], g: &mut [f64]) {
    let p = x.len();
    let zero: f64 = std::iter::empty::<f64>().sum();
    let mut i = 0;
    while i + 8 <= p {
        let rows: [&[f64]; 8] = std::array::from_fn(|q| &inv[(i + q) * p..(i + q + 1) * p]);
        let mut acc = [zero; 8];
        for (k, &xk) in x.iter().enumerate() {
            for (a, row) in acc.iter_mut().zip(&rows) {
                *a += row[k] * xk;
            }
        }
        g[i..i + 8].copy_from_slice(&acc);
        i += 8;
    }
    for (gi, row) in g[i..p].iter_mut().zip(inv[i * p..].chunks_exact(p)) {
        *gi = row.iter().zip(x).map(|(m, v)| m * v).sum();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn inverse_times_equals_one_sum_per_row_bit_for_bit() {
        // p across the blocks of eight and the tail (1 to 19, 64), an asymmetric matrix with
        // exact zeros and magnitudes that show the order of the additions; the oracle is the
        // previous loop (one Iterator::sum per row)
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for p in (1..20).chain([64]) {
            let mut val = || {
                let u: f64 = rng.random::<f64>() - 0.5;
                let e: i32 = rng.random_range(-8..8);
                if rng.random_range(0..8) == 0 {
                    0.0
                } else {
                    u * 10f64.powi(e)
                }
            };
            let inv: Vec<f64> = (0..p * p).map(|_| val()).collect();
            let x: Vec<f64> = (0..p).map(|_| val()).collect();
            let mut g = vec![f64::NAN; p];
            inverse_times(&inv, &x, &mut g);
            for (i, (gi, row)) in g.iter().zip(inv.chunks_exact(p)).enumerate() {
                let want: f64 = row.iter().zip(&x).map(|(m, v)| m * v).sum();
                assert_eq!(gi.to_bits(), want.to_bits(), "p {p}, row {i}");
            }
        }
    }

    use super::*;

    fn agent(exploration: Option<Stream>) -> LinUcb {
        let (arms, p) = (2, 2);
        LinUcb::new(LinUcbParts {
            arms,
            p,
            contexts: vec![1.0, 0.0, 0.0, 1.0],
            guard: Guard {
                x_bound: 1.0,
                y_low: 0.0,
                y_high: 1.0,
                reject: false,
            },
            lam: 1.0,
            beta: 1.0,
            sigma_r: 0.5,
            ends: (1..=10).collect(),
            const_shift: 0.0,
            shift_mult: 0.0,
            bounds: NoiseBounds::Zero,
            server: BanditServer::Exact {
                sms: (0..arms)
                    .map(|_| ShermanMorrison::new(p, 1.0, 1024).unwrap())
                    .collect(),
                sums: vec![0.0; arms * p],
            },
            ties: Ties(None),
            exploration,
            episodes: 10,
        })
        .unwrap()
    }

    #[test]
    fn exact_scores_by_hand() {
        let mut ag = agent(None);
        // arm 1 seen twice with context e1 and reward 1: G = I + 2 e1 e1^T, w = (2/3, 0)
        ag.observe(0, 1, 1.0).unwrap();
        ag.observe(0, 1, 1.0).unwrap();
        let mut sc = [0.0; 4];
        ag.scores(0, &mut sc);
        assert!((sc[2] - 2.0 / 3.0).abs() < 1e-12);
        // width: sigma_r sqrt(x^T G^-1 x) = 0.5 sqrt(1/3)
        assert!((sc[3] - 0.5 * (1.0f64 / 3.0).sqrt()).abs() < 1e-12);
        // arm 0 never played: mean 0, width 0.5
        assert!((sc[0]).abs() < 1e-15 && (sc[1] - 0.5).abs() < 1e-12);
        // optimism: 2/3 + 0.289 > 0.5
        assert_eq!(ag.action(0), 1);
        // a reward outside [0, 1] is clipped and counted
        ag.observe(1, 0, 3.0).unwrap();
        assert_eq!(ag.clips, 1);
    }

    #[test]
    fn a_live_context_or_arm_of_another_shape_is_refused() {
        // check_context_arm, shared with the LDP client's privatize_x
        let mut ag = agent(None);
        for (x, a) in [
            (&[1.0][..], 0),
            (&[1.0, 0.0, 0.0][..], 0),
            (&[1.0, 0.0][..], 2),
        ] {
            let err = ag.observe_x(x, a, 1.0).unwrap_err().to_string();
            let want = format!(
                "context of length {} / arm {a} out of range (p = 2, arms = 2)",
                x.len()
            );
            assert!(err.contains(&want), "{err}");
        }
        assert_eq!(ag.k, 0);
        ag.observe_x(&[1.0, 0.0], 1, 1.0).unwrap();
        assert_eq!(ag.k, 1);
    }
}
