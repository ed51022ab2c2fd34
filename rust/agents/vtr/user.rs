//! The user side of UCRL-VTR / UCRL-VTR+ under LDP, apart from the server: a user's statistics
//! from public values only (its planned V, the mixture features and, for UCRL-VTR+, the two
//! billboards' sigma-bar inputs), then the intake (guard, randomizer: `Intake::process`). The
//! agent's `observe` runs these functions on its own state; a [`VtrClient`] runs them on a copy
//! of the public values with its own noise streams (a user's device), and its message enters the
//! server through [`VtrAgent::receive`] (Alg. 1 / Alg. 3 under Cor. 2: only the message leaves
//! the user).

use serde::{Deserialize, Serialize};

use super::{Intake, PlusSpec, Randomizer, Server, VtrAgent, FLAT};
use crate::agents::{Guard, Trajectory};
use crate::errors::{check_len, CoreError, CoreResult};
use crate::kernels::mixture::MixtureFeatures;
use crate::kernels::variance::{sigma_bar, VarianceInputs};
use crate::noise::{NodeNoise, NoiseStream};

/// A user's statistics: X_h, y_h (H x d, H), UCRL-VTR+'s second moments, the normalized
/// targets f_h (H x S, the adaptive rule) and sigma-bar (H). Scratch space, not state.
#[derive(Default)]
pub(super) struct UserWork {
    pub(super) x: Vec<f64>,
    pub(super) y: Vec<f64>,
    pub(super) x2: Vec<f64>,
    pub(super) y2: Vec<f64>,
    pub(super) v2: Vec<f64>,
    pub(super) f: Vec<f64>,
    pub(super) sig: Vec<f64>,
}

impl UserWork {
    pub(super) fn new(h: usize, s: usize, d: usize) -> Self {
        UserWork {
            x: vec![0.0; h * d],
            y: vec![0.0; h],
            x2: vec![0.0; h * d],
            y2: vec![0.0; h],
            v2: vec![0.0; s],
            f: vec![0.0; h * s],
            sig: vec![0.0; h],
        }
    }
}

/// UCRL-VTR+'s sigma-bar inputs: the radii and the two billboards' parts it reads.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlusBoards {
    pub spec: PlusSpec,
    pub hat_weights: Vec<f64>,
    pub hat_inverse: Vec<f64>,
    pub hat_gamma: Vec<f64>,
    pub tilde_weights: Vec<f64>,
    pub tilde_explore: Vec<f64>,
}

impl PlusBoards {
    /// sigma-bar's inputs (`crate::kernels::variance`), read from these parts.
    pub(super) fn inputs(&self, d: usize) -> VarianceInputs<'_> {
        variance_inputs(
            d,
            &self.spec,
            VtrBoards {
                hat_weights: &self.hat_weights,
                hat_inverse: &self.hat_inverse,
                hat_gamma: &self.hat_gamma,
                tilde_weights: &self.tilde_weights,
                tilde_explore: &self.tilde_explore,
            },
        )
    }
}

/// The billboards' parts sigma-bar reads (the agent's own, or a client's copy).
pub(super) struct VtrBoards<'a> {
    pub(super) hat_weights: &'a [f64],
    pub(super) hat_inverse: &'a [f64],
    pub(super) hat_gamma: &'a [f64],
    pub(super) tilde_weights: &'a [f64],
    pub(super) tilde_explore: &'a [f64],
}

/// sigma-bar's inputs from the two billboards (one home for the agent and its clients).
pub(super) fn variance_inputs<'a>(
    d: usize,
    spec: &PlusSpec,
    b: VtrBoards<'a>,
) -> VarianceInputs<'a> {
    VarianceInputs {
        d,
        hat_weights: b.hat_weights,
        hat_inverse: b.hat_inverse,
        hat_gamma: (!b.hat_gamma.is_empty()).then_some(b.hat_gamma),
        tilde_weights: b.tilde_weights,
        tilde_form: b.tilde_explore,
        tilde_radius: 1.0,
        beta_check: spec.beta_check,
    }
}

/// What a user's statistics are computed from (all public: the billboard and what the user
/// planned from it).
pub(super) struct UserInputs<'a> {
    pub(super) h: usize,
    pub(super) s: usize,
    pub(super) a: usize,
    pub(super) d: usize,
    pub(super) features: &'a MixtureFeatures,
    /// V_h(s), (H + 1) x S.
    pub(super) v: &'a [f64],
    /// phi_{V_{h+1}}(s, a) for every step and pair, H x S x A x d.
    pub(super) phis: &'a [f64],
    /// The adaptive rule's normalized target in place of V_{h+1}.
    pub(super) normalized: bool,
    pub(super) plus: Option<VarianceInputs<'a>>,
}

/// The user's statistics X_h, y_h (and UCRL-VTR+'s weighting and second moments) from its plan
/// and trajectory, into `w`.
pub(super) fn statistics(p: &UserInputs<'_>, t: &Trajectory, w: &mut UserWork) -> CoreResult<()> {
    let (h_n, s_n, a_n, d) = (p.h, p.s, p.a, p.d);
    let rows = s_n * a_n;
    for h in 0..h_n {
        let next = &p.v[(h + 1) * s_n..(h + 2) * s_n];
        if p.normalized {
            // the adaptive rule's target: V_{h+1} shifted by its minimum over the pair's
            // support and amplified to fill [0, H] there (module doc of `super`)
            let row = t.states[h] * a_n + t.actions[h];
            let f = &mut w.f[h * s_n..(h + 1) * s_n];
            p.features.normalized_target(row, next, FLAT, h_n as f64, f);
            p.features.phi_v_row(row, f, &mut w.x[h * d..(h + 1) * d])?;
            w.y[h] = f[t.states[h + 1]];
        } else {
            let row = (h * rows + t.states[h] * a_n + t.actions[h]) * d;
            w.x[h * d..(h + 1) * d].copy_from_slice(&p.phis[row..row + d]);
            w.y[h] = next[t.states[h + 1]];
        }
    }
    let Some(inputs) = &p.plus else {
        return Ok(());
    };
    // UCRL-VTR+: phi_{V^2}, V^2 for the second moments (of the normalized target f under the
    // adaptive rule); sigma-bar from both billboards; (X / sigma-bar, y / sigma-bar) for the
    // first regression
    for h in 0..h_n {
        let next = if p.normalized {
            &w.f[h * s_n..(h + 1) * s_n]
        } else {
            &p.v[(h + 1) * s_n..(h + 2) * s_n]
        };
        w.v2.iter_mut().zip(next).for_each(|(a, b)| *a = b * b);
        let row = t.states[h] * a_n + t.actions[h];
        p.features
            .phi_v_row(row, &w.v2, &mut w.x2[h * d..(h + 1) * d])?;
        w.y2[h] = w.y[h] * w.y[h];
    }
    sigma_bar(inputs, &w.x, &w.x2, &mut w.sig)?;
    for ((xh, yh), s) in w.x.chunks_exact_mut(d).zip(w.y.iter_mut()).zip(&w.sig) {
        xh.iter_mut().for_each(|v| *v /= s);
        *yh /= s;
    }
    Ok(())
}

/// One regression's user side on a device: the guard and the randomizer's laws, and the
/// randomizer itself once keyed (its own streams: never the agent's).
#[derive(Serialize, Deserialize)]
pub struct ClientIntake {
    pub guard: Option<Guard>,
    pub matrix: NodeNoise,
    pub vector: NodeNoise,
    pub divisor: f64,
    pub intake: Option<Intake>,
}

/// The user side of one LDP user (a device): the public values of the billboard it was built
/// from (release index `release`), and its own noise streams.
#[derive(Serialize, Deserialize)]
pub struct VtrClient {
    pub h: usize,
    pub s: usize,
    pub a: usize,
    pub d: usize,
    /// The users the billboard it was built from includes (the message's release index).
    pub release: u64,
    features: MixtureFeatures,
    pub v: Vec<f64>,
    phis: Vec<f64>,
    pub pi: Vec<usize>,
    normalized: bool,
    plus: Option<PlusBoards>,
    pub regs: Vec<ClientIntake>,
    /// UCRL-VTR+: sigma-bar of the last trajectory privatized (H), empty before.
    pub last_sigma_bar: Vec<f64>,
    #[serde(skip)]
    work: UserWork,
}

/// One message: per regression the privatized (gram (H x d x d), target (H x d)).
pub type Message = Vec<(Vec<f64>, Vec<f64>)>;

impl VtrClient {
    /// A restored client's sizes against its dimensions (`crate::state::check_sizes`).
    pub fn check_restored(&self) -> CoreResult<()> {
        const WHAT: &str = "UCRL-VTR client";
        let (h, s, a, d) = (self.h, self.s, self.a, self.d);
        self.features.check_consistent()?;
        crate::state::check_sizes(
            WHAT,
            &[
                ("feature rows", self.features.n_rows(), &[s, a]),
                ("feature states", self.features.n_states(), &[s]),
                ("feature dimension", self.features.dim(), &[d]),
                ("values", self.v.len(), &[h + 1, s]),
                ("plan's features", self.phis.len(), &[h, s, a, d]),
                ("policy", self.pi.len(), &[h, s]),
            ],
        )?;
        if let Some(p) = &self.plus {
            crate::state::check_sizes(
                WHAT,
                &[
                    ("hat weights", p.hat_weights.len(), &[h, d]),
                    ("hat inverse", p.hat_inverse.len(), &[h, d, d]),
                    ("tilde weights", p.tilde_weights.len(), &[h, d]),
                    ("tilde explore", p.tilde_explore.len(), &[h, d, d]),
                ],
            )?;
        }
        if self.pi.iter().any(|&x| x >= a) {
            return Err(CoreError::InvalidParameter(format!(
                "not a consistent saved {WHAT} state: its policy (an action out of range)"
            )));
        }
        if self.regs.len() != if self.plus.is_some() { 2 } else { 1 } {
            return Err(CoreError::InvalidParameter(format!(
                "not a consistent saved {WHAT} state: its regressions"
            )));
        }
        for r in &self.regs {
            if let Some(g) = &r.guard {
                g.check_restored(WHAT)?;
            }
        }
        Ok(())
    }

    /// Key the randomizers: two 32-byte seeds (matrix, vector) per regression, in order.
    pub fn key(&mut self, seeds: &[[u8; 32]]) -> CoreResult<()> {
        check_len("client seeds", seeds.len(), 2 * self.regs.len())?;
        for (r, pair) in self.regs.iter_mut().zip(seeds.chunks_exact(2)) {
            r.intake = Some(Intake {
                guard: r.guard,
                randomizer: Some(Randomizer {
                    matrix: NoiseStream::new(r.matrix, pair[0])?,
                    vector: NoiseStream::new(r.vector, pair[1])?,
                    divisor: r.divisor,
                    spare: Default::default(),
                }),
                clips: 0,
            });
        }
        Ok(())
    }

    pub fn keyed(&self) -> bool {
        self.regs.iter().all(|r| r.intake.is_some())
    }

    /// Values clipped by each regression's guard on this device.
    pub fn clips(&self) -> Vec<u64> {
        let n = |r: &ClientIntake| r.intake.as_ref().map_or(0, |i| i.clips);
        self.regs.iter().map(n).collect()
    }

    /// This client continues `other`'s streams (and clip counts), which `other` gives up.
    pub fn take_streams(&mut self, other: &mut VtrClient) -> CoreResult<()> {
        if other.regs.len() != self.regs.len() || !other.keyed() {
            return Err(CoreError::InvalidParameter(
                "the streams must come from a keyed client of the same agent kind".into(),
            ));
        }
        for (mine, theirs) in self.regs.iter_mut().zip(other.regs.iter_mut()) {
            if (mine.matrix, mine.vector, mine.divisor)
                != (theirs.matrix, theirs.vector, theirs.divisor)
            {
                return Err(CoreError::InvalidParameter(
                    "the streams come from a client of another calibration".into(),
                ));
            }
        }
        for (mine, theirs) in self.regs.iter_mut().zip(other.regs.iter_mut()) {
            let mut intake = theirs.intake.take();
            if let Some(i) = &mut intake {
                i.guard = mine.guard;
            }
            mine.intake = intake;
        }
        Ok(())
    }

    /// The user's message from its trajectory: its statistics from the public values, through
    /// every regression's guard and randomizer (the agent's own code).
    pub fn privatize(&mut self, t: &Trajectory) -> CoreResult<Message> {
        let (h, s, d) = (self.h, self.s, self.d);
        if !self.keyed() {
            return Err(CoreError::InvalidParameter(
                "the client has no noise streams yet (key it first)".into(),
            ));
        }
        if self.work.x.len() != h * d {
            self.work = UserWork::new(h, s, d);
        }
        let inputs = UserInputs {
            h,
            s,
            a: self.a,
            d,
            features: &self.features,
            v: &self.v,
            phis: &self.phis,
            normalized: self.normalized,
            plus: self.plus.as_ref().map(|p| p.inputs(d)),
        };
        statistics(&inputs, t, &mut self.work)?;
        if self.plus.is_some() {
            self.last_sigma_bar.clone_from(&self.work.sig);
        }
        let w = &self.work;
        let mut leaf = vec![0.0; d * d];
        let mut out = Vec::with_capacity(self.regs.len());
        for (i, r) in self.regs.iter_mut().enumerate() {
            let (mut mx, mut my) = if i == 0 {
                (w.x.clone(), w.y.clone())
            } else {
                (w.x2.clone(), w.y2.clone())
            };
            let intake = r.intake.as_mut().expect("keyed");
            intake.clips += intake.process(&mut mx, &mut my, h, d, &mut leaf)?;
            out.push((mx, my));
        }
        Ok(out)
    }
}

impl VtrAgent {
    /// The user side of the arriving user under LDP: the public values it needs (its planned V,
    /// the features, the billboards' sigma-bar inputs, the guards, the randomizers' laws), with
    /// no stream keyed. Plans the arriving user if it is not planned yet (as `policy` does).
    pub fn client(&mut self) -> CoreResult<VtrClient> {
        let mut regs = Vec::with_capacity(self.regs.len());
        for reg in &self.regs {
            let (Server::Ldp { .. }, Some(r)) = (&reg.server, &reg.intake.randomizer) else {
                return Err(CoreError::InvalidParameter(
                    "only an LDP agent has a user-side randomizer for a client".into(),
                ));
            };
            regs.push(ClientIntake {
                guard: reg.intake.guard,
                matrix: r.matrix.noise(),
                vector: r.vector.noise(),
                divisor: r.divisor,
                intake: None,
            });
        }
        self.ensure_plan()?;
        let plus = self.plus_boards();
        Ok(VtrClient {
            h: self.h,
            s: self.s,
            a: self.a,
            d: self.d,
            release: self.k,
            features: self.features.clone(),
            v: self.plan.v.clone(),
            phis: self.plan.phis.clone(),
            pi: self.plan.pi.clone(),
            normalized: self.adaptive().is_some(),
            plus,
            regs,
            last_sigma_bar: vec![],
            work: UserWork::default(),
        })
    }

    pub(super) fn plus_boards(&self) -> Option<PlusBoards> {
        let spec = self.plus?;
        let (hat, tilde) = (&self.regs[0].board, &self.regs[1].board);
        Some(PlusBoards {
            spec,
            hat_weights: hat.weights.clone(),
            hat_inverse: hat.inverse.clone(),
            hat_gamma: hat.gamma.clone(),
            tilde_weights: tilde.weights.clone(),
            tilde_explore: tilde.explore.clone(),
        })
    }

    /// The server side under LDP: one user's message (per regression the privatized gram (H x d
    /// x d) and target (H x d)), built on the billboard of release index `release` <= k (an
    /// earlier billboard is accepted: its V is still fixed before the user's transitions),
    /// added to the sums; then the next billboards, as `observe` does.
    pub fn receive(&mut self, release: u64, message: &Message) -> CoreResult<()> {
        crate::agents::check_room(self.k, self.episodes)?;
        if release > self.k {
            return Err(CoreError::InvalidParameter(format!(
                "the message was built on billboard {release}, but this agent has released only \
                 {} (from another agent?)",
                self.k
            )));
        }
        let (h, d) = (self.h, self.d);
        check_len("message regressions", message.len(), self.regs.len())?;
        for (reg, (g, t)) in self.regs.iter().zip(message) {
            if !matches!(reg.server, Server::Ldp { .. }) {
                return Err(CoreError::InvalidParameter(
                    "only an LDP server receives privatized messages".into(),
                ));
            }
            check_len("privatized Gram matrices", g.len(), h * d * d)?;
            check_len("privatized targets", t.len(), h * d)?;
            if crate::errors::any_non_finite(g) || crate::errors::any_non_finite(t) {
                return Err(CoreError::NonFinite(
                    "the message contains NaN or inf".into(),
                ));
            }
        }
        self.work_ready();
        if self.adaptive().is_some() {
            // the messages' normalized targets span [0, H] (the spread planning sets,
            // `ensure_plan`): a server that never planned (a copy, a restored save) releases
            // as the one whose clients sent them
            let top = self.h as f64;
            self.spread.iter_mut().for_each(|s| *s = top);
        }
        self.serve(message)
    }
}
