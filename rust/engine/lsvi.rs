//! LSVI-UCB (Alg. 2) episodes between two releases in one call: every user of the block runs
//! the same policy (the billboard changes only at the end of a batch), sends phi(s_h, a_h) and
//! r_h through the sensitivity guard, and the server adds them to its sums. The release itself
//! (once per batch) stays in Python: `privrl.agents.lsvi_ucb.LSVIServer.release_batch`.

use crate::errors::CoreError;
use crate::rank_one::ShermanMorrison;

use super::{numpy_sum, EpisodeLog, FiniteModel, Guard, RegretCache, Stop, Trajectory};

/// The raw records the per-sample planning path reads (the first `capacity` episodes).
pub struct Records<'a> {
    pub states: &'a mut [i64],
    pub actions: &'a mut [i64],
    pub rewards: &'a mut [f64],
    pub capacity: usize,
}

/// LSVIServer's sums (`receive`).
pub struct LsviSums<'a> {
    /// The running batch's Gram per h (H x d x d), private servers only.
    pub batch_gram: Option<&'a mut [f64]>,
    /// Sherman–Morrison per h, non-private servers only.
    pub exact: Vec<&'a mut ShermanMorrison>,
    /// sum_i phi_i r_i per h (H x d).
    pub reward_sum: &'a mut [f64],
    /// sum_{i: s'_i = s'} phi_i per h and s' (H x S x d).
    pub next_sum: &'a mut [f64],
    pub records: Records<'a>,
    /// Episodes received so far.
    pub n: usize,
}

/// Run `uniforms.len() / (H + 1)` episodes of the policy `pi` (H x S). `table`: the public
/// (clipped) feature rows, S * A rows of d. Returns the guard's clip count.
#[allow(clippy::too_many_arguments)]
pub fn run(
    model: &FiniteModel,
    table: &[f64],
    d: usize,
    guard: &Guard,
    pi: &[usize],
    sums: &mut LsviSums<'_>,
    cache: &mut RegretCache,
    v_star: &[f64],
    uniforms: &[f64],
    log: EpisodeLog<'_>,
) -> Result<usize, Stop> {
    let (h_n, s_n, a_n) = (model.h, model.s, model.a);
    let mut traj = Trajectory::new(h_n);
    let mut phi = vec![0.0; h_n * d];
    let mut r = vec![0.0; h_n];
    let mut norms = Vec::with_capacity(h_n);
    let mut clips = 0;
    cache.set_policy(model, pi);
    for (e, u) in uniforms.chunks_exact(h_n + 1).enumerate() {
        model.rollout(pi, u, &mut traj);
        let s0 = traj.states[0];
        log.gaps[e] = v_star[s0] - cache.value(s0);
        log.returns[e] = numpy_sum(&traj.rewards);
        log.starts[e] = s0 as i64;
        for h in 0..h_n {
            let row = (traj.states[h] * a_n + traj.actions[h]) * d;
            phi[h * d..(h + 1) * d].copy_from_slice(&table[row..row + d]);
        }
        r.copy_from_slice(&traj.rewards);
        clips += guard
            .apply(&mut phi, d, Some(&mut r), &mut norms)
            .map_err(|f| (e, f))?;
        let i = sums.n;
        let rec = &mut sums.records;
        if i < rec.capacity {
            for (k, &s) in traj.states.iter().enumerate() {
                rec.states[i * (h_n + 1) + k] = s as i64;
            }
            let row = i * h_n..(i + 1) * h_n;
            for (dst, &a) in rec.actions[row.clone()].iter_mut().zip(&traj.actions) {
                *dst = a as i64;
            }
            rec.rewards[row].copy_from_slice(&r);
        }
        for (h, ph) in phi.chunks_exact(d).enumerate() {
            if let Some(bg) = sums.batch_gram.as_deref_mut() {
                let g = &mut bg[h * d * d..(h + 1) * d * d];
                for a in 0..d {
                    for b in 0..d {
                        g[a * d + b] += ph[a] * ph[b];
                    }
                }
            }
            let rs = &mut sums.reward_sum[h * d..(h + 1) * d];
            rs.iter_mut().zip(ph).for_each(|(t, p)| *t += p * r[h]);
            let ns_row = (h * s_n + traj.states[h + 1]) * d;
            let ns = &mut sums.next_sum[ns_row..ns_row + d];
            ns.iter_mut().zip(ph).for_each(|(t, p)| *t += p);
        }
        for (sm, ph) in sums.exact.iter_mut().zip(phi.chunks_exact(d)) {
            sm.update(ph).map_err(|e2: CoreError| (e, e2.into()))?;
        }
        sums.n += 1;
    }
    Ok(clips)
}
