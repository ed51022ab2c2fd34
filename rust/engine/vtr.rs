//! UCRL-VTR (Alg. 1) episodes in one call: per episode the user's optimistic planning for all
//! h on the current billboard, the rollout, the user's statistics (X_{k,h}, y_{k,h}) through the
//! sensitivity guard, the server's update under the privacy model and the next billboard. The
//! Python reference is `privrl.agents.ucrl_vtr.UCRLVTR` with `RegressionServer` and
//! `LocalRandomizer` (paper and tight calibrations; the practical release is Python-only).

use crate::continual::PrefixMechanism;
use crate::errors::any_non_finite;
use crate::mixture::MixtureFeatures;
use crate::noise::{NodeShape, NoiseStream};
use crate::practical::{floored_release, Floored};
use crate::qeval::{group_max, OptimisticQ, TieBreak};
use crate::rank_one::{batched_matvec, spd_inverse, ShermanMorrison};
use crate::variance::{sigma_bar, VarianceInputs};

use super::{
    numpy_sum, EngineFault, EpisodeLog, FiniteModel, Guard, RegretCache, Stop, Trajectory,
};

/// The server's statistics under one privacy model (RegressionServer's modes).
pub enum VtrServer<'a> {
    /// Non-private: Sherman–Morrison per h and the exact targets (H x d).
    Exact {
        sms: Vec<&'a mut ShermanMorrison>,
        target: &'a mut [f64],
    },
    /// JDP (Cor. 1): one mechanism of symmetric matrices and one of vectors per h.
    Tree {
        grams: Vec<&'a mut Box<dyn PrefixMechanism>>,
        targets: Vec<&'a mut Box<dyn PrefixMechanism>>,
    },
    /// LDP (Cor. 2): the user's randomizer streams and the server's sums of privatized messages.
    Local {
        gram: &'a mut [f64],
        target: &'a mut [f64],
        matrix_noise: &'a mut NoiseStream,
        vector_noise: &'a mut NoiseStream,
    },
}

/// The practical calibration's release rule (`PracticalRelease`): its public constants, with
/// `w0` the ridge's centre and, for Gaussian noise, the noise bounds after t users
/// `Upsilon_t = sigma_m sqrt(2 v_t) / divisor * k_m` and `C_t = sigma_v sqrt(v_t) * k_v`, v_t the
/// release's variance factor (the mechanism's profile under JDP, t under LDP); None: no noise.
#[derive(Debug, Clone)]
pub struct PracticalSpec {
    pub lam: f64,
    pub shift_mult: f64,
    /// beta^2 of the statistical part of the bonus.
    pub beta2: f64,
    pub c_w: f64,
    pub centre_distance: f64,
    pub noise_scale: f64,
    pub w0: Vec<f64>,
    pub bounds: NoiseBounds,
}

/// The noise bounds (Upsilon_t, C_t) of the practical release after t users.
#[derive(Debug, Clone)]
pub enum NoiseBounds {
    /// No noise (the non-private member of the family).
    Zero,
    /// Gaussian noise: (sigma_m, sigma_v, divisor, k_m, k_v), see [`PracticalSpec`].
    Gaussian(f64, f64, f64, f64, f64),
    /// Values computed by the caller for t = first, first + 1, ... (pure DP's Laplace sums).
    Table {
        first: u64,
        ups: Vec<f64>,
        c: Vec<f64>,
    },
}

impl PracticalSpec {
    /// (Upsilon_t, C_t) after t users, v the release's variance factor at t
    /// (privrl.privacy.practical.noise_bounds_at).
    fn bounds(&self, t: u64, v: f64) -> (f64, f64) {
        match &self.bounds {
            NoiseBounds::Zero => (0.0, 0.0),
            NoiseBounds::Gaussian(sm, sv, div, km, kv) => {
                (sm * (2.0 * v).sqrt() / div * km, sv * v.sqrt() * kv)
            }
            NoiseBounds::Table { first, ups, c } => {
                let i = (t - first) as usize;
                (ups[i], c[i])
            }
        }
    }
}

/// The public constants of the run.
#[derive(Debug, Clone)]
pub struct VtrSpec {
    pub d: usize,
    /// beta_k: the radius of the bonus beta ||phi||_{Lambda~^-1}.
    pub radius: f64,
    /// lam + shift, added to the diagonal of the released Gram sums (not in Exact mode).
    pub base: f64,
    /// The symmetric noise divisor of the LDP randomizer's matrices.
    pub divisor: f64,
    /// Where user statistics enter a mechanism (JDP, LDP); None for the non-private server.
    pub guard: Option<Guard>,
    /// The practical release rule; None: the paper's (shift `base`, bonus radius `radius`).
    pub practical: Option<PracticalSpec>,
}

/// The billboard (Lambda~_h, Lambda~_h^{-1}, w~_h)_h, row-major, read by planning and rewritten
/// by every release.
#[derive(Debug, Clone)]
pub struct Billboard {
    pub design: Vec<f64>,
    pub inverse: Vec<f64>,
    pub weights: Vec<f64>,
    /// The practical bonus matrices M_h (radius 1) and gamma_h; empty under the paper's rule.
    pub bonus: Vec<f64>,
    pub gamma: Vec<f64>,
    /// Users whose statistics the billboard includes.
    pub users: u64,
}

/// Scratch space of one episode.
struct Work {
    v: Vec<f64>,
    phis: Vec<f64>,
    q: Vec<f64>,
    pi: Vec<usize>,
    traj: Trajectory,
    x: Vec<f64>,
    y: Vec<f64>,
    leaf: Vec<f64>,
    noise: Vec<f64>,
    sums: Vec<f64>,
    gram: Vec<f64>,
    inverse2: Vec<f64>,
    correction: Vec<f64>,
    norms: Vec<f64>,
}

/// One ridge regression of the agent: its constants, its server and its billboard. UCRL-VTR has
/// one; UCRL-VTR+ two (the weighted first moments, "hat", then the second moments, "tilde").
pub struct Regression<'a> {
    pub spec: &'a VtrSpec,
    pub server: VtrServer<'a>,
    pub board: &'a mut Billboard,
}

/// UCRL-VTR+'s radii of the variance estimate's widths (UCRLVTRPlus.beta_check, .beta_tilde).
#[derive(Debug, Clone, Copy)]
pub struct PlusSpec {
    pub beta_check: f64,
    pub beta_tilde: f64,
}

/// Run `uniforms.len() / (H + 1)` episodes. `ties`: H seeds per episode, in the order the
/// Python planning draws them (h = H..1), or None for lowest-index ties. Planning reads the
/// first regression's billboard; with `plus` (UCRL-VTR+) the user's statistics are weighted by
/// sigma-bar and the second moments go to the second regression. Returns each guard's clip
/// count and the last episode's sigma-bar (UCRL-VTR+); stops at the first fault.
#[allow(clippy::too_many_arguments)]
pub fn run(
    model: &FiniteModel,
    features: &MixtureFeatures,
    regs: &mut [Regression<'_>],
    plus: Option<PlusSpec>,
    cache: &mut RegretCache,
    v_star: &[f64],
    uniforms: &[f64],
    ties: Option<&[u64]>,
    log: EpisodeLog<'_>,
) -> Result<(Vec<usize>, Vec<f64>), Stop> {
    let (h_n, s_n, a_n, d) = (model.h, model.s, model.a, regs[0].spec.d);
    let rows = s_n * a_n;
    let mut w = Work {
        v: vec![0.0; (h_n + 1) * s_n],
        phis: vec![0.0; h_n * rows * d],
        q: vec![0.0; rows],
        pi: vec![0; h_n * s_n],
        traj: Trajectory::new(h_n),
        x: vec![0.0; h_n * d],
        y: vec![0.0; h_n],
        leaf: vec![0.0; d * d],
        noise: vec![0.0; h_n * d * d],
        sums: vec![0.0; h_n * d],
        gram: vec![0.0; h_n * d * d],
        inverse2: vec![0.0; h_n * d * d],
        correction: vec![0.0; h_n],
        norms: Vec::with_capacity(h_n),
    };
    let mut clips = vec![0; regs.len()];
    let (mut x2, mut y2, mut sig) = (vec![0.0; h_n * d], vec![0.0; h_n], vec![0.0; h_n]);
    let mut v2 = vec![0.0; s_n];
    for (e, u) in uniforms.chunks_exact(h_n + 1).enumerate() {
        let tie = ties.map(|t| &t[e * h_n..(e + 1) * h_n]);
        plan(regs[0].spec, model, features, regs[0].board, tie, &mut w).map_err(|f| (e, f))?;
        cache.set_policy(model, &w.pi);
        model.rollout(&w.pi, u, &mut w.traj);
        let s0 = w.traj.states[0];
        log.gaps[e] = v_star[s0] - cache.value(s0);
        log.returns[e] = numpy_sum(&w.traj.rewards);
        log.starts[e] = s0 as i64;
        // the user's statistics: X_h = phi_{V~_{h+1}}(s_h, a_h), y_h = V~_{h+1}(s_{h+1})
        for h in 0..h_n {
            let row = (h * rows + w.traj.states[h] * a_n + w.traj.actions[h]) * d;
            w.x[h * d..(h + 1) * d].copy_from_slice(&w.phis[row..row + d]);
            w.y[h] = w.v[(h + 1) * s_n + w.traj.states[h + 1]];
        }
        if let Some(p) = plus {
            // UCRL-VTR+: phi_{V^2} and V^2 for the second moments, sigma-bar from both billboards,
            // then (X / sigma-bar, y / sigma-bar) to the first regression
            for h in 0..h_n {
                let next = &w.v[(h + 1) * s_n..(h + 2) * s_n];
                v2.iter_mut().zip(next).for_each(|(a, b)| *a = b * b);
                let row = w.traj.states[h] * a_n + w.traj.actions[h];
                features
                    .phi_v_row(row, &v2, &mut x2[h * d..(h + 1) * d])
                    .map_err(|f| (e, f.into()))?;
                y2[h] = w.y[h] * w.y[h];
            }
            let (hat, tilde) = (&*regs[0].board, &*regs[1].board);
            let practical = !tilde.bonus.is_empty();
            let inputs = VarianceInputs {
                d,
                hat_weights: &hat.weights,
                hat_inverse: &hat.inverse,
                hat_gamma: (!hat.gamma.is_empty()).then_some(&hat.gamma[..]),
                tilde_weights: &tilde.weights,
                tilde_form: if practical {
                    &tilde.bonus
                } else {
                    &tilde.inverse
                },
                tilde_radius: if practical { 1.0 } else { p.beta_tilde },
                beta_check: p.beta_check,
            };
            sigma_bar(&inputs, &w.x, &x2, &mut sig).map_err(|f| (e, f.into()))?;
            for ((xh, yh), s) in w.x.chunks_exact_mut(d).zip(w.y.iter_mut()).zip(&sig) {
                xh.iter_mut().for_each(|v| *v /= s);
                *yh /= s;
            }
        }
        for (i, reg) in regs.iter_mut().enumerate() {
            if i == 1 {
                w.x.copy_from_slice(&x2);
                w.y.copy_from_slice(&y2);
            }
            clips[i] += receive(reg.spec, &mut reg.server, &mut w).map_err(|f| (e, f))?;
        }
        for reg in regs.iter_mut() {
            release(reg.spec, &mut reg.server, reg.board, &mut w).map_err(|f| (e, f))?;
        }
    }
    Ok((clips, sig))
}

/// Q~_h = clip_[0, H](r_h + <phi_{V~_{h+1}}, w~_h> + beta ||phi_{V~_{h+1}}||_{Lambda~_h^-1}),
/// V~_h = max_a Q~_h, for h = H..1 (UCRLVTR._policy).
fn plan(
    spec: &VtrSpec,
    model: &FiniteModel,
    features: &MixtureFeatures,
    board: &Billboard,
    ties: Option<&[u64]>,
    w: &mut Work,
) -> Result<(), EngineFault> {
    let (h_n, s_n, d) = (model.h, model.s, spec.d);
    let rows = s_n * model.a;
    w.v[h_n * s_n..].iter_mut().for_each(|v| *v = 0.0);
    for h in (0..h_n).rev() {
        let (now, next) = w.v[h * s_n..].split_at_mut(s_n);
        let phi = &mut w.phis[h * rows * d..(h + 1) * rows * d];
        features.phi_v(&next[..s_n], phi)?;
        // the bonus: beta ||phi||_{Lambda~^-1}, or ||phi||_{M_h} under the practical rule
        let (bonus, radius) = if spec.practical.is_some() {
            (&board.bonus, 1.0)
        } else {
            (&board.inverse, spec.radius)
        };
        let q = OptimisticQ {
            d,
            w: &board.weights[h * d..(h + 1) * d],
            inv: &bonus[h * d * d..(h + 1) * d * d],
            beta: radius,
            lower: 0.0,
            upper: h_n as f64,
        };
        q.evaluate(phi, Some(model.rewards(h)), &mut w.q)?;
        let tie = ties.map_or(TieBreak::Lowest, |t| TieBreak::Random(t[h_n - 1 - h]));
        group_max(&w.q, model.a, tie, now, &mut w.pi[h * s_n..(h + 1) * s_n])?;
    }
    Ok(())
}

/// RegressionServer.receive (with LocalRandomizer.privatize under LDP); returns the clip count.
fn receive(spec: &VtrSpec, server: &mut VtrServer<'_>, w: &mut Work) -> Result<usize, EngineFault> {
    let d = spec.d;
    let mut clips = 0;
    if let Some(g) = &spec.guard {
        clips = g.apply(&mut w.x, d, Some(&mut w.y), &mut w.norms)?;
    } else if any_non_finite(&w.x) || any_non_finite(&w.y) {
        return Err(EngineFault::NonFinite);
    }
    let (x, y) = (&w.x, &w.y);
    match server {
        VtrServer::Exact { sms, target } => {
            for (sm, xh) in sms.iter_mut().zip(x.chunks_exact(d)) {
                sm.update(xh)?;
            }
            for ((t, xh), &yh) in target.chunks_exact_mut(d).zip(x.chunks_exact(d)).zip(y) {
                t.iter_mut().zip(xh).for_each(|(t, xi)| *t += xi * yh);
            }
        }
        VtrServer::Tree { grams, targets } => {
            for (h, xh) in x.chunks_exact(d).enumerate() {
                outer(xh, &mut w.leaf);
                grams[h].push(&w.leaf)?;
                let vec_leaf = &mut w.leaf[..d];
                vec_leaf
                    .iter_mut()
                    .zip(xh)
                    .for_each(|(l, xi)| *l = xi * y[h]);
                targets[h].push(vec_leaf)?;
            }
        }
        VtrServer::Local {
            gram,
            target,
            matrix_noise,
            vector_noise,
        } => {
            let shape = NodeShape::SymMatrix {
                d,
                divisor: spec.divisor,
            };
            // the user's messages (X X^T + B^1, X y + g^1), formed by the randomizer's own
            // kernel (on the lattice for a discrete sampler), then added to the sums
            for (h, xh) in x.chunks_exact(d).enumerate() {
                let m = &mut w.noise[h * d * d..(h + 1) * d * d];
                outer(xh, m);
                matrix_noise.privatize(shape, m, &mut w.leaf)?;
            }
            for (h, xh) in x.chunks_exact(d).enumerate() {
                let m = &mut w.sums[h * d..(h + 1) * d];
                m.iter_mut().zip(xh).for_each(|(v, xi)| *v = xi * y[h]);
                vector_noise.privatize(NodeShape::Vector(d), m, &mut w.leaf[..d])?;
            }
            for (g, m) in gram.iter_mut().zip(&w.noise) {
                *g += *m;
            }
            for (t, m) in target.iter_mut().zip(&w.sums) {
                *t += *m;
            }
        }
    }
    Ok(clips)
}

fn outer(x: &[f64], out: &mut [f64]) {
    let d = x.len();
    for i in 0..d {
        for j in 0..d {
            out[i * d + j] = x[i] * x[j];
        }
    }
}

/// RegressionServer.release: the next billboard.
fn release(
    spec: &VtrSpec,
    server: &mut VtrServer<'_>,
    board: &mut Billboard,
    w: &mut Work,
) -> Result<(), EngineFault> {
    let d = spec.d;
    let dd = d * d;
    board.users += 1;
    if let Some(p) = &spec.practical {
        return practical_release(p, d, server, board, w);
    }
    match server {
        VtrServer::Exact { sms, target } => {
            for (h, sm) in sms.iter().enumerate() {
                board.design[h * dd..(h + 1) * dd].copy_from_slice(sm.matrix());
                board.inverse[h * dd..(h + 1) * dd].copy_from_slice(sm.inverse());
            }
            batched_matvec(&board.inverse, target, d, &mut board.weights)?;
            return Ok(());
        }
        VtrServer::Tree { grams, targets } => {
            for (h, (g, t)) in grams.iter().zip(targets.iter()).enumerate() {
                g.release_into(&mut board.design[h * dd..(h + 1) * dd])?;
                t.release_into(&mut w.sums[h * d..(h + 1) * d])?;
            }
        }
        VtrServer::Local { gram, target, .. } => {
            board.design.copy_from_slice(gram);
            w.sums.copy_from_slice(target);
        }
    }
    // design = sums + (lam + shift) I (numpy adds the zero off-diagonal entries too)
    for (h, m) in board.design.chunks_exact_mut(dd).enumerate() {
        for i in 0..d {
            for j in 0..d {
                m[i * d + j] += if i == j { spec.base } else { 0.0 };
            }
        }
        let inv = spd_inverse(m, d).map_err(|_| EngineFault::NotPositiveDefinite { h })?;
        board.inverse[h * dd..(h + 1) * dd].copy_from_slice(&inv);
    }
    batched_matvec(&board.inverse, &w.sums, d, &mut board.weights)?;
    Ok(())
}

/// PracticalRelease: the floored release of the released sums after t = board.users users, its
/// per-step privacy width gamma_h and the bonus matrices beta^2 A^{-1} + gamma_h^2 A^{-2}.
fn practical_release(
    p: &PracticalSpec,
    d: usize,
    server: &mut VtrServer<'_>,
    board: &mut Billboard,
    w: &mut Work,
) -> Result<(), EngineFault> {
    let dd = d * d;
    let t = board.users;
    let variance = match server {
        VtrServer::Exact { sms, target } => {
            // the exact Lambda minus lam I: the Gram sums the release floors
            for (h, sm) in sms.iter().enumerate() {
                let g = &mut w.gram[h * dd..(h + 1) * dd];
                g.copy_from_slice(sm.matrix());
                for i in 0..d {
                    g[i * d + i] -= p.lam;
                }
            }
            w.sums.copy_from_slice(target);
            0.0
        }
        VtrServer::Tree { grams, targets } => {
            for (h, (g, tr)) in grams.iter().zip(targets.iter()).enumerate() {
                g.release_into(&mut w.gram[h * dd..(h + 1) * dd])?;
                tr.release_into(&mut w.sums[h * d..(h + 1) * d])?;
            }
            grams[0].variance_factor(t)
        }
        VtrServer::Local { gram, target, .. } => {
            w.gram.copy_from_slice(gram);
            w.sums.copy_from_slice(target);
            t as f64
        }
    };
    let (ups, c_t) = p.bounds(t, variance);
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
    let fixed = c_t + ups * p.c_w;
    for (h, (g, corr)) in board.gamma.iter_mut().zip(&w.correction).enumerate() {
        *g = p.noise_scale * (fixed + (shift + corr) * p.centre_distance);
        let g2 = *g * *g;
        let sl = h * dd..(h + 1) * dd;
        for ((b, i1), i2) in board.bonus[sl.clone()]
            .iter_mut()
            .zip(&board.inverse[sl.clone()])
            .zip(&w.inverse2[sl])
        {
            *b = p.beta2 * i1 + g2 * i2;
        }
    }
    Ok(())
}
