//! UCRL-VTR (Alg. 1) and UCRL-VTR+ (Alg. 3): value-targeted regression on a linear-mixture MDP,
//! one implementation for every privacy model, calibration and exploration rule.
//!
//! Per user k:
//!   user    for h = H..1: phi_{V_{h+1}}(s, a) for every pair (`MixtureFeatures::phi_v`),
//!           Q_h = clip_[0, H](r_h + <phi, w_h> + ||phi||_{E_h}) (optimism) or with w_h drawn from
//!           N(w~_h, E_h) and no bonus (sampling), V_h = max_a Q_h; act greedily; then
//!           X_h = phi_{V_{h+1}}(s_h, a_h), y_h = V_{h+1}(s_{h+1}) (UCRL-VTR+: divided by its
//!           variance estimate sigma-bar, and the second moments phi_{V^2}, V^2 for a second
//!           regression); under the adaptive rule UCRL-VTR's target is normalized per pair:
//!           f = H (V_{h+1} - lo) / (hi - lo) with [lo, hi] the range of V_{h+1} over the support
//!           of (s_h, a_h) (f = H on a flat support), X_h = phi_f(s_h, a_h), y_h = f(s_{h+1}).
//!           In the plan's bounds and unbiased (`privrl.privacy.adaptive`); planning reads it too:
//!           Q_h = r_h + lo + (hi - lo) / H clip_[0, H](<phi_f, w_h> + bonus), exact ties to the
//!           largest pessimistic value;
//!   intake  the sensitivity guard (clip or reject), and under LDP the user-side randomizer
//!           (X X^T + B^1, X y + g^1, Cor. 2): only its output leaves the user;
//!   server  adds the message to its sums — exact (Sherman-Morrison), 2H continual-release
//!           mechanisms (JDP, Cor. 1) or sums of privatized messages (LDP) — and releases the
//!           next billboard (Lambda~_h, Lambda~_h^{-1}, w~_h, E_h)_h.
//!
//! The release rule is the paper's (design = sums + (lam + shift) I, E_h = beta^2 Lambda~^{-1}),
//! the practical one (`privrl.privacy.practical`: eigenvalue floor, ridge centred at w0, E_h =
//! beta^2 A^{-1} + gamma_t^2 A^{-2}) or the adaptive one (`super::adaptive`). `E_h` is the bonus
//! `||phi||_{E_h}` of optimism. Everything after the server's sums is post-processing.

use serde::{Deserialize, Serialize};

use super::adaptive::{self, max_over_draws, AdaptiveSpec, StepNoise, StepOut};
use super::bounds::NoiseBounds;
use super::{outer, Draw, Episodic, Exploration, Guard, Mechanism, Ties, Trajectory};
use crate::errors::{check_len, CoreError, CoreResult};
use crate::kernels::mixture::MixtureFeatures;
use crate::kernels::practical::{floored_release, Floored};
use crate::kernels::qeval::{group_max, OptimisticQ};
use crate::kernels::rank_one::{batched_matvec, min_eigenvalue, spd_inverse_into, ShermanMorrison};
use crate::noise::NoiseStream;

mod greedy;
mod server;
pub mod user;

/// A support over which V_{h+1} varies by at most this much is flat: its normalized target is
/// the constant H (the mass features, exact), not a ratio of rounding errors.
const FLAT: f64 = 1e-9;

/// The practical release rule's public constants (`privrl.privacy.practical`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PracticalSpec {
    pub lam: f64,
    /// S_t = shift_mult * Upsilon_t.
    pub shift_mult: f64,
    /// beta^2 of the statistical part of E_h.
    pub beta2: f64,
    pub c_w: f64,
    /// A bound on ||w - w0||.
    pub centre_distance: f64,
    /// The factor on the privacy part of the width (beta_scale).
    pub noise_scale: f64,
    /// The ridge's centre.
    pub w0: Vec<f64>,
    pub bounds: NoiseBounds,
    /// The adaptive rule (calibration "adaptive", `super::adaptive`) in place of the practical
    /// one's widths: same released sums, honest widths, the support clip when planning.
    pub adaptive: Option<AdaptiveSpec>,
}

/// How one regression releases its billboard.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RegressionSpec {
    /// The paper rule's bonus radius beta (E_h = beta^2 Lambda~^{-1}).
    pub radius: f64,
    /// The paper rule's lam + shift added to the released sums (JDP, LDP).
    pub base: f64,
    /// The practical rule, or None for the paper's.
    pub practical: Option<PracticalSpec>,
    /// What the paper rule's shift guards against, for a not-positive-definite error (e.g. "the
    /// shift 2*Upsilon, an event of probability <= p/3 under the paper's calibration").
    pub shift_name: String,
}

/// The server's statistics under each privacy model.
#[derive(Serialize, Deserialize)]
pub enum Server {
    /// Non-private: Lambda_h by Sherman-Morrison, the exact targets (H x d).
    Exact {
        sms: Vec<ShermanMorrison>,
        target: Vec<f64>,
    },
    /// JDP (Cor. 1): a continual-release mechanism of symmetric matrices and one of vectors per h.
    Jdp {
        grams: Vec<Mechanism>,
        targets: Vec<Mechanism>,
    },
    /// LDP (Cor. 2): the sums of the users' privatized messages (H x d x d, H x d).
    Ldp { gram: Vec<f64>, target: Vec<f64> },
}

/// The LDP user-side randomizer: its own noise streams and the symmetric divisor of B^1.
#[derive(Serialize, Deserialize)]
pub struct Randomizer {
    pub matrix: NoiseStream,
    pub vector: NoiseStream,
    pub divisor: f64,
    /// The buffers the last messages' (X, y) came in, reused for the next messages (not state).
    #[serde(skip)]
    pub spare: (Vec<f64>, Vec<f64>),
}

/// Where a user's statistics enter the privacy model: the guard (JDP, LDP) and, under LDP, the
/// user-side randomizer. Under LDP nothing of it is reachable from the [`Server`].
#[derive(Serialize, Deserialize)]
pub struct Intake {
    pub guard: Option<Guard>,
    pub randomizer: Option<Randomizer>,
    /// Values clipped so far.
    pub clips: u64,
}

/// A billboard, row-major per step: Lambda~_h, its inverse, w~_h, the exploration matrix E_h
/// and (practical rule) gamma_h, the privacy part of the width.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Billboard {
    pub design: Vec<f64>,
    pub inverse: Vec<f64>,
    pub weights: Vec<f64>,
    pub explore: Vec<f64>,
    pub gamma: Vec<f64>,
    /// Users whose statistics it includes.
    pub users: u64,
    /// Adaptive rule: the sampling factor V diag(r) V^T and the bias matrix V diag(b^2) V^T.
    pub factor: Vec<f64>,
    pub bias: Vec<f64>,
}

/// One ridge regression of the agent: UCRL-VTR has one; UCRL-VTR+ two (the weighted first
/// moments, "hat", then the second moments, "tilde").
#[derive(Serialize, Deserialize)]
pub struct Regression {
    pub spec: RegressionSpec,
    pub intake: Intake,
    pub server: Server,
    pub board: Billboard,
}

/// UCRL-VTR+'s radii of the variance estimate's widths.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct PlusSpec {
    pub beta_check: f64,
    pub beta_tilde: f64,
}

/// The arriving user's plan: V (H + 1 x S), phi_V for every pair and step, the policy.
#[derive(Default, Serialize, Deserialize)]
struct Plan {
    user: Option<u64>,
    v: Vec<f64>,
    phis: Vec<f64>,
    pi: Vec<usize>,
}

/// Scratch space, rebuilt after loading.
#[derive(Default)]
struct Work {
    q: Vec<f64>,
    w: Vec<f64>,
    draw: Draw,
    user: user::UserWork, // the user's statistics (X, y, ...: `user::statistics`)
    gram: Vec<f64>,
    sums: Vec<f64>,
    leaf: Vec<f64>,
    inverse2: Vec<f64>,
    correction: Vec<f64>,
    messages: Vec<(Vec<f64>, Vec<f64>)>,
    lo: Vec<f64>,
    hi: Vec<f64>,
    z: Vec<f64>,
    pert: Vec<f64>, // optimistic sampling's perturbations factor z_j (draws x d)
}

/// A UCRL-VTR or UCRL-VTR+ agent.
#[derive(Serialize, Deserialize)]
pub struct VtrAgent {
    pub h: usize,
    pub s: usize,
    pub a: usize,
    pub d: usize,
    features: MixtureFeatures,
    /// r_h(s, a), H x (S A).
    rewards: Vec<f64>,
    pub regs: Vec<Regression>,
    pub plus: Option<PlusSpec>,
    ties: Ties,
    exploration: Exploration,
    /// K, the users the noise is calibrated for, and k, the users observed.
    pub episodes: u64,
    pub k: u64,
    pub policy_updates: u64,
    pub last_sigma_bar: Vec<f64>,
    /// The spread of the users' targets over a pair's support per step (H; < 0: no plan yet;
    /// the normalized target's H once planned): the adaptive rule's statistical std.
    pub spread: Vec<f64>,
    plan: Plan,
    #[serde(skip)]
    work: Work,
}

/// The parts of a [`VtrAgent`], checked for consistency by [`VtrAgent::new`].
pub struct VtrParts {
    pub features: MixtureFeatures,
    pub rewards: Vec<f64>,
    pub h: usize,
    pub a: usize,
    pub regs: Vec<Regression>,
    pub plus: Option<PlusSpec>,
    pub ties: Ties,
    pub exploration: Exploration,
    pub episodes: u64,
}

impl VtrAgent {
    /// The agent before any user, with its initial billboards released.
    pub fn new(p: VtrParts) -> CoreResult<Self> {
        let (h, a, d) = (p.h, p.a, p.features.dim());
        let rows = p.features.n_rows();
        if h == 0 || a == 0 || !rows.is_multiple_of(a) || p.features.n_states() != rows / a {
            return Err(CoreError::Shape(format!(
                "mixture features of {rows} rows over {} states do not form S x A pairs with A = {a}",
                p.features.n_states()
            )));
        }
        let s = rows / a;
        check_len("rewards", p.rewards.len(), h * rows)?;
        let want = if p.plus.is_some() { 2 } else { 1 };
        if p.regs.len() != want {
            return Err(CoreError::InvalidParameter(format!(
                "expected {want} regressions, got {}",
                p.regs.len()
            )));
        }
        let mut agent = VtrAgent {
            h,
            s,
            a,
            d,
            features: p.features,
            rewards: p.rewards,
            regs: p.regs,
            plus: p.plus,
            ties: p.ties,
            exploration: p.exploration,
            episodes: p.episodes,
            k: 0,
            policy_updates: 0,
            last_sigma_bar: vec![],
            spread: vec![-1.0; h],
            plan: Plan::default(),
            work: Work::default(),
        };
        agent.work_ready();
        for i in 0..agent.regs.len() {
            let reg = &mut agent.regs[i];
            reg.board = Billboard::empty(h, d);
            release(reg, h, d, &agent.spread, &mut agent.work)?;
        }
        Ok(agent)
    }

    fn work_ready(&mut self) {
        let (h, s, a, d) = (self.h, self.s, self.a, self.d);
        if self.spread.len() != h {
            self.spread = vec![-1.0; h];
        }
        let w = &mut self.work;
        if w.q.len() == s * a {
            return;
        }
        *w = Work {
            q: vec![0.0; s * a],
            w: vec![0.0; d],
            draw: Draw::default(),
            user: user::UserWork::new(h, s, d),
            gram: vec![0.0; h * d * d],
            sums: vec![0.0; h * d],
            leaf: vec![0.0; d * d],
            inverse2: vec![0.0; h * d * d],
            correction: vec![0.0; h],
            messages: Vec::new(),
            lo: vec![0.0; s * a],
            hi: vec![0.0; s * a],
            z: vec![0.0; d],
            pert: Vec::new(),
        };
        if self.plan.v.len() != (h + 1) * s {
            self.plan.v = vec![0.0; (h + 1) * s];
            self.plan.phis = vec![0.0; h * s * a * d];
            self.plan.pi = vec![0; h * s];
        }
    }

    /// Plan the arriving user's policy if it is not planned yet.
    fn ensure_plan(&mut self) -> CoreResult<()> {
        self.work_ready();
        if self.plan.user == Some(self.k) {
            return Ok(());
        }
        let (h_n, s_n, a_n, d) = (self.h, self.s, self.a, self.d);
        let rows = s_n * a_n;
        let board = &self.regs[0].board;
        let draws = self.adaptive().map(|a| a.draws); // Some: the adaptive rule
        let adaptive = draws.is_some();
        let (plan, w) = (&mut self.plan, &mut self.work);
        plan.v[h_n * s_n..].iter_mut().for_each(|v| *v = 0.0);
        for h in (0..h_n).rev() {
            let (now, next) = plan.v[h * s_n..].split_at_mut(s_n);
            let phi = &mut plan.phis[h * rows * d..(h + 1) * rows * d];
            if adaptive {
                // the level is known (every admissible p(.|s, a) sums to one): Q_h(s, a) = r + lo
                // + (hi - lo) / H <phi_f, w> with f V_{h+1} normalized over the pair's support, the
                // users' target, so the width is that of phi_f, the direction the data measure
                self.features
                    .support_range(&next[..s_n], &mut w.lo, &mut w.hi)?;
                let amp = h_n as f64;
                self.features
                    .normalized_phi(&next[..s_n], &w.lo, &w.hi, FLAT, amp, phi)?;
            } else {
                self.features.phi_v(&next[..s_n], phi)?;
            }
            let sl = h * d * d..(h + 1) * d * d;
            let explore = &board.explore[sl.clone()];
            let mean = &board.weights[h * d..(h + 1) * d];
            let (inv, beta) = if !adaptive {
                let beta = self
                    .exploration
                    .weights(mean, explore, 1.0, &mut w.draw, &mut w.w);
                (explore, beta)
            } else {
                // adaptive sampling: `draws` normal vectors per user (each shared by every h) for
                // the random part, the bias bound a bonus, the largest Q per (s, a) (below)
                w.w.copy_from_slice(mean);
                match &mut self.exploration {
                    Exploration::Optimism => (explore, 1.0),
                    Exploration::Sampling(stream) => {
                        if h == h_n - 1 {
                            w.z.resize(draws.unwrap_or(1) * d, 0.0);
                            stream.normals(&mut w.z);
                        }
                        (&board.bias[sl.clone()], 1.0)
                    }
                }
            };
            let q = OptimisticQ {
                d,
                w: &w.w,
                inv,
                beta,
                lower: 0.0,
                upper: h_n as f64,
            };
            let r = &self.rewards[h * rows..(h + 1) * rows];
            if adaptive {
                // Q_h(s, a) in r + [min, max] of V_{h+1} over the support (every admissible model's)
                if self.exploration.is_sampling() {
                    let f = &board.factor[sl.clone()]; // the largest of the draws per (s, a)
                    w.pert.resize(w.z.len(), 0.0);
                    max_over_draws(d, phi, mean, f, inv, &w.z, q.upper, &mut w.pert, &mut w.q)?;
                } else {
                    q.evaluate(phi, None, &mut w.q)?;
                }
                for (((qv, rv), lo), hi) in w.q.iter_mut().zip(r).zip(&w.lo).zip(&w.hi) {
                    *qv = adaptive::on_support(*rv, *lo, *hi, *qv, h_n as f64); // exact at H
                }
                let (e, lo, hi) = (&board.explore[sl.clone()], &w.lo, &w.hi);
                adaptive::demote_dominated_ties(&mut w.q, a_n, |i| {
                    let low = adaptive::pessimistic(&phi[i * d..(i + 1) * d], mean, e, h_n as f64);
                    adaptive::on_support(r[i], lo[i], hi[i], low, h_n as f64)
                });
                // the normalized target spans [0, H] over every support it is not flat on
                self.spread[h] = h_n as f64;
            } else {
                q.evaluate(phi, Some(r), &mut w.q)?;
            }
            let tie = self.ties.draw();
            group_max(&w.q, a_n, tie, now, &mut plan.pi[h * s_n..(h + 1) * s_n])?;
        }
        plan.user = Some(self.k);
        self.policy_updates += 1;
        Ok(())
    }

    /// The adaptive rule's constants, if it is the release rule (its users send the normalized
    /// target; under sampling each draws `draws` models).
    fn adaptive(&self) -> Option<&AdaptiveSpec> {
        let p = self.regs[0].spec.practical.as_ref()?;
        p.adaptive.as_ref()
    }

    /// The planned optimistic values V_h(s) (H + 1 x S) of the arriving user.
    pub fn values(&mut self) -> CoreResult<&[f64]> {
        self.ensure_plan()?;
        Ok(&self.plan.v)
    }

    /// The user's statistics X_h, y_h (and UCRL-VTR+'s weighting and second moments) from its
    /// plan and trajectory, into the work buffers (`user::statistics`, a client's code too).
    fn statistics(&mut self, t: &Trajectory) -> CoreResult<()> {
        let plus = self.plus.map(|p| {
            let (hat, tilde) = (&self.regs[0].board, &self.regs[1].board);
            let boards = user::VtrBoards {
                hat_weights: &hat.weights,
                hat_inverse: &hat.inverse,
                hat_gamma: &hat.gamma,
                tilde_weights: &tilde.weights,
                tilde_explore: &tilde.explore,
            };
            user::variance_inputs(self.d, &p, boards)
        });
        let inputs = user::UserInputs {
            h: self.h,
            s: self.s,
            a: self.a,
            d: self.d,
            features: &self.features,
            v: &self.plan.v,
            phis: &self.plan.phis,
            normalized: self.adaptive().is_some(),
            plus,
        };
        user::statistics(&inputs, t, &mut self.work.user)?;
        if self.plus.is_some() {
            self.last_sigma_bar.clone_from(&self.work.user.sig);
        }
        Ok(())
    }

    /// The statistics in the work buffers through every regression's intake (all of them before
    /// any server changes, so a refused user leaves the agent as it was), then the servers'
    /// sums and the next billboards.
    fn submit(&mut self) -> CoreResult<()> {
        let (h, d) = (self.h, self.d);
        let w = &mut self.work;
        let mut messages = std::mem::take(&mut w.messages);
        messages.resize_with(self.regs.len(), Default::default);
        let mut clips = [0u64; 2];
        for (i, reg) in self.regs.iter_mut().enumerate() {
            let u = &w.user;
            let (x, y) = if i == 0 { (&u.x, &u.y) } else { (&u.x2, &u.y2) };
            let (mx, my) = &mut messages[i];
            mx.clone_from(x);
            my.clone_from(y);
            clips[i] = reg.intake.process(mx, my, h, d, &mut w.leaf)?;
        }
        for (i, reg) in self.regs.iter_mut().enumerate() {
            reg.intake.clips += clips[i];
        }
        let out = self.serve(&messages);
        self.work.messages = messages;
        out
    }

    /// One user's messages (per regression, what its intake made of its statistics) into the
    /// servers' sums, then the next billboards.
    fn serve(&mut self, messages: &[(Vec<f64>, Vec<f64>)]) -> CoreResult<()> {
        let (h, d) = (self.h, self.d);
        for (reg, (mx, my)) in self.regs.iter_mut().zip(messages) {
            reg.server.receive(mx, my, h, d, &mut self.work.leaf)?;
        }
        self.k += 1;
        self.plan.user = None;
        for reg in self.regs.iter_mut() {
            reg.board.users += 1;
            release(reg, h, d, &self.spread, &mut self.work)?;
        }
        Ok(())
    }

    /// An adversarial user (the audits): statistics X (H x d), y (H) sent to the first
    /// regression as they are, without planning.
    pub fn observe_statistics(&mut self, x: &[f64], y: &[f64]) -> CoreResult<()> {
        crate::agents::check_room(self.k, self.episodes)?;
        self.work_ready();
        if self.plus.is_some() {
            return Err(CoreError::InvalidParameter(
                "chosen statistics go to UCRL-VTR's single regression".into(),
            ));
        }
        check_len("X", x.len(), self.h * self.d)?;
        check_len("y", y.len(), self.h)?;
        self.work.user.x.copy_from_slice(x);
        self.work.user.y.copy_from_slice(y);
        self.submit()
    }
}

impl VtrAgent {
    /// What regression i's intake makes of chosen statistics X (H x d), y (H) — under LDP the
    /// user's message (X X^T + B^1, X y + g^1) — without sending it (the audits).
    pub fn user_message(
        &mut self,
        i: usize,
        x: &[f64],
        y: &[f64],
    ) -> CoreResult<(Vec<f64>, Vec<f64>)> {
        self.work_ready();
        check_len("X", x.len(), self.h * self.d)?;
        check_len("y", y.len(), self.h)?;
        let reg = self
            .regs
            .get_mut(i)
            .ok_or_else(|| CoreError::InvalidParameter(format!("no regression {i}")))?;
        let (mut mx, mut my) = (x.to_vec(), y.to_vec());
        let clips = reg
            .intake
            .process(&mut mx, &mut my, self.h, self.d, &mut self.work.leaf)?;
        reg.intake.clips += clips;
        Ok((mx, my))
    }
}

impl Episodic for VtrAgent {
    fn policy(&mut self) -> CoreResult<&[usize]> {
        self.ensure_plan()?;
        Ok(&self.plan.pi)
    }

    fn observe(&mut self, t: &Trajectory) -> CoreResult<()> {
        crate::agents::check_room(self.k, self.episodes)?;
        self.ensure_plan()?;
        self.statistics(t)?;
        self.submit()
    }
}

impl Billboard {
    fn empty(h: usize, d: usize) -> Self {
        Billboard {
            design: vec![0.0; h * d * d],
            inverse: vec![0.0; h * d * d],
            weights: vec![0.0; h * d],
            explore: vec![0.0; h * d * d],
            gamma: vec![],
            users: 0,
            factor: vec![],
            bias: vec![],
        }
    }
}

/// The next billboard of one regression (the paper's rule or the practical one).
fn release(
    reg: &mut Regression,
    h: usize,
    d: usize,
    spread: &[f64],
    w: &mut Work,
) -> CoreResult<()> {
    let dd = d * d;
    let board = &mut reg.board;
    let t = board.users;
    let spec = &reg.spec;
    if let Some(p) = &spec.practical {
        let v = reg
            .server
            .released_sums(t, p.lam, d, &mut w.gram, &mut w.sums)?;
        if let Some(a) = &p.adaptive {
            let (upsilon, _) = p.bounds.at(v);
            let noise = StepNoise {
                upsilon,
                s_m: p.bounds.matrix_std(v),
                s_v: p.bounds.vector_std(v),
                shift_mult: p.shift_mult,
                c_w: p.c_w,
                distance: p.centre_distance,
                w0: &p.w0,
            };
            board.gamma.resize(h, 0.0);
            board.factor.resize(h * dd, 0.0);
            board.bias.resize(h * dd, 0.0);
            for (hh, &spread_h) in spread.iter().enumerate().take(h) {
                let sl = hh * dd..(hh + 1) * dd;
                let out = StepOut {
                    design: &mut board.design[sl.clone()],
                    inverse: &mut board.inverse[sl.clone()],
                    weights: &mut board.weights[hh * d..(hh + 1) * d],
                    explore: &mut board.explore[sl.clone()],
                    factor: &mut board.factor[sl.clone()],
                    bias: &mut board.bias[sl],
                };
                board.gamma[hh] = a.release_step(
                    d,
                    &w.gram[hh * dd..(hh + 1) * dd],
                    &w.sums[hh * d..(hh + 1) * d],
                    spread_h,
                    &noise,
                    out,
                );
            }
            return Ok(());
        }
        let (ups, c_t) = p.bounds.at(v);
        let shift = p.shift_mult * ups;
        floored_release(
            &w.gram,
            &w.sums,
            d,
            p.lam,
            shift,
            &p.w0,
            Floored {
                design: &mut board.design,
                inverse: &mut board.inverse,
                inverse2: &mut w.inverse2,
                weights: &mut board.weights,
                correction: &mut w.correction,
            },
        )?;
        board.gamma.resize(h, 0.0);
        let fixed = c_t + ups * p.c_w;
        for (hh, (g, corr)) in board.gamma.iter_mut().zip(&w.correction).enumerate() {
            *g = p.noise_scale * (fixed + (shift + corr) * p.centre_distance);
            let g2 = *g * *g;
            let sl = hh * dd..(hh + 1) * dd;
            for ((e, i1), i2) in board.explore[sl.clone()]
                .iter_mut()
                .zip(&board.inverse[sl.clone()])
                .zip(&w.inverse2[sl])
            {
                *e = p.beta2 * i1 + g2 * i2;
            }
        }
        return Ok(());
    }
    match &reg.server {
        Server::Exact { sms, target } => {
            for (hh, sm) in sms.iter().enumerate() {
                board.design[hh * dd..(hh + 1) * dd].copy_from_slice(sm.matrix());
                board.inverse[hh * dd..(hh + 1) * dd].copy_from_slice(sm.inverse());
            }
            batched_matvec(&board.inverse, target, d, &mut board.weights)?;
        }
        server => {
            server.released_sums(t, 0.0, d, &mut board.design, &mut w.sums)?;
            for (hh, m) in board.design.chunks_exact_mut(dd).enumerate() {
                for i in 0..d {
                    m[i * d + i] += spec.base;
                }
                spd_inverse_into(m, d, &mut board.inverse[hh * dd..(hh + 1) * dd])
                    .map_err(|_| not_pd(m, d, hh, t, &spec.shift_name))?;
            }
            batched_matvec(&board.inverse, &w.sums, d, &mut board.weights)?;
        }
    }
    let r2 = spec.radius * spec.radius;
    board
        .explore
        .iter_mut()
        .zip(&board.inverse)
        .for_each(|(e, i)| *e = r2 * i);
    Ok(())
}

/// The named error of a released design matrix that is not positive definite.
pub(crate) fn not_pd(m: &[f64], d: usize, h: usize, users: u64, shift: &str) -> CoreError {
    let ev = min_eigenvalue(m, d).unwrap_or(f64::NAN);
    CoreError::NotPositiveDefinite(format!(
        "released design matrix of step h={} after {users} users is not positive definite \
         (min eigenvalue {ev:.4e}); the noise exceeded {shift}",
        h + 1
    ))
}

impl VtrAgent {
    /// Users observed by the billboards.
    pub fn users(&self) -> u64 {
        self.regs[0].board.users
    }
}

impl VtrAgent {
    /// A restored state's sizes against its dimensions (`crate::state::check_sizes`).
    pub fn check_restored(&self) -> CoreResult<()> {
        const WHAT: &str = "UCRL-VTR agent";
        let (h, s, a, d) = (self.h, self.s, self.a, self.d);
        self.features.check_consistent()?;
        let regs = if self.plus.is_some() { 2 } else { 1 };
        crate::state::check_sizes(
            WHAT,
            &[
                ("feature rows", self.features.n_rows(), &[s, a]),
                ("feature states", self.features.n_states(), &[s]),
                ("feature dimension", self.features.dim(), &[d]),
                ("rewards", self.rewards.len(), &[h, s, a]),
                ("regressions", self.regs.len(), &[regs]),
            ],
        )?;
        let plan = &self.plan;
        if !(plan.v.is_empty() && plan.phis.is_empty() && plan.pi.is_empty()) {
            crate::state::check_sizes(
                WHAT,
                &[
                    ("plan's values", plan.v.len(), &[h + 1, s]),
                    ("plan's features", plan.phis.len(), &[h, s, a, d]),
                    ("plan's policy", plan.pi.len(), &[h, s]),
                ],
            )?;
        }
        if plan.pi.iter().any(|&x| x >= a) {
            return Err(CoreError::InvalidParameter(format!(
                "not a consistent saved {WHAT} state: its plan's policy (an action out of range)"
            )));
        }
        for reg in &self.regs {
            if let Some(g) = &reg.intake.guard {
                g.check_restored(WHAT)?;
            }
            let b = &reg.board;
            crate::state::check_sizes(
                WHAT,
                &[
                    ("design", b.design.len(), &[h, d, d]),
                    ("inverse", b.inverse.len(), &[h, d, d]),
                    ("weights", b.weights.len(), &[h, d]),
                    ("explore", b.explore.len(), &[h, d, d]),
                ],
            )?;
            let dims: Vec<usize> = match &reg.server {
                Server::Exact { sms, target } => {
                    crate::state::check_sizes(WHAT, &[("targets", target.len(), &[h, d])])?;
                    sms.iter().map(|m| m.dim()).collect()
                }
                Server::Jdp { grams, targets } => {
                    grams.iter().chain(targets).map(|m| m.dim()).collect()
                }
                Server::Ldp { gram, target } => {
                    crate::state::check_sizes(
                        WHAT,
                        &[
                            ("gram", gram.len(), &[h, d, d]),
                            ("target", target.len(), &[h, d]),
                        ],
                    )?;
                    vec![]
                }
            };
            crate::state::check_dims(WHAT, dims, d)?;
        }
        Ok(())
    }
}
