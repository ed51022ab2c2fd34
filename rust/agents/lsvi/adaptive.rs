//! The adaptive rule inside [`LsviAgent`] (`crate::agents::lsvi_adaptive` has the formulas): the
//! initial billboard, the release and the users' plans.

use super::{group_max, response, Exploration, LsviAgent, Work};
use crate::agents::lsvi_adaptive::{shift_and_amplify, target_variance, DataMoments, StepIn};
use crate::errors::CoreResult;

fn min_max(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        })
}

impl LsviAgent {
    /// V_h(s) = Pi_[0, H - h] max_a (phi^T w~_h + ||phi||_{Sigma_h}) into `next`.
    fn adaptive_backup(&self, h: usize, next: &mut [f64]) {
        let (rows, a_n, d) = (self.s * self.a, self.a, self.d);
        let st = self.adaptive.as_ref().expect("adaptive state");
        let w = &self.board.weights[h * d..(h + 1) * d];
        let b = &st.bonus[h * rows..(h + 1) * rows];
        let vmax = (self.h - h) as f64;
        // dot_rows: dot_with's sums bit for bit, four dense rows at a time
        let mut q = vec![0.0; rows];
        self.sparse.dot_rows(w, &mut q, |r, m| m + b[r]);
        for (v, qs) in next.iter_mut().zip(q.chunks_exact(a_n)) {
            let best = qs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            *v = best.clamp(0.0, vmax);
        }
    }

    /// The billboard before any user: per step the prior N(c w1, tau^2 I) alone.
    pub(super) fn adaptive_initial(&mut self) {
        let (h_n, s_n, d) = (self.h, self.s, self.d);
        let mut next = vec![0.0; s_n];
        let mut sigma = vec![0.0; d * d];
        for h in (0..h_n).rev() {
            let last = h == h_n - 1;
            let (lo, hi) = if last { (0.0, 0.0) } else { min_max(&next) };
            let vmax = (h_n - h) as f64;
            let half = 0.5 * (1.0 + hi - lo).min(vmax);
            let st = self.adaptive.as_mut().expect("adaptive state");
            // the tabular posterior's prior is centred mid-range (`lsvi_adaptive`)
            let mid = if self.server.reward_sq.is_empty() {
                0.0
            } else {
                half
            };
            let level = if st.spec.value_shift {
                (lo + mid).min(vmax)
            } else {
                0.0
            };
            st.spec
                .centre(level, &mut self.board.weights[h * d..(h + 1) * d]);
            for i in 0..d {
                sigma[i * d + i] = half * half;
            }
            st.set_width(h, d, &sigma, &self.sparse);
            self.adaptive_backup(h, &mut next);
        }
    }

    /// The end of a batch under the adaptive rule (`crate::agents::lsvi_adaptive`).
    pub(super) fn release_adaptive(&mut self) -> CoreResult<()> {
        let (h_n, s_n, a_n, d) = (self.h, self.s, self.a, self.d);
        let aggregated = self.aggregated();
        let users = self.server.n;
        self.server.next_columns_ready(s_n, d);
        self.release_designs(users)?;
        let private = self.server.private.is_some();
        let unit = self.draw_eta()?; // the practical rule's draws, in its order
        let mut work: Work = std::mem::take(&mut self.work);
        let mut st = self.adaptive.take().expect("adaptive state");
        let (mut next, mut shifted, mut wts) = (vec![0.0; s_n], vec![0.0; s_n], vec![0.0; d]);
        let (mut gram, mut variance, mut scratch) = (vec![0.0; d], vec![0.0; d], vec![0.0; d]);
        let mut result = Ok(());
        for hh in (0..h_n).rev() {
            let last = hh == h_n - 1;
            let (lo, hi) = if last { (0.0, 0.0) } else { min_max(&next) };
            let (c, amp) =
                shift_and_amplify(&next, last, st.spec.value_shift, private, h_n, &mut shifted);
            let target = (!last).then_some(&shifted[..]);
            let u = &mut work.u;
            response(
                &self.server,
                &self.sparse,
                aggregated,
                hh,
                target,
                u,
                a_n,
                s_n,
                d,
            );
            if private {
                // the released statistic sum phi a (r + V - c), a (r + V - c) in [0, H + 1]
                let eta = &self.server.last_eta[hh * d..(hh + 1) * d];
                match unit {
                    Some(un) => u.iter_mut().zip(eta).for_each(|(x, e)| {
                        *x = ((amp * *x / un).round() + (e / un).round()) * un / amp
                    }),
                    None => u
                        .iter_mut()
                        .zip(eta)
                        .for_each(|(x, e)| *x = (amp * *x + e) / amp),
                }
            }
            let vmax = (h_n - hh) as f64;
            let half = 0.5 * (1.0 + hi - lo).min(vmax);
            let tabular = !self.server.reward_sq.is_empty();
            if tabular {
                let srv = &self.server;
                let design = self.board_design(hh);
                for (j, g) in gram.iter_mut().enumerate() {
                    *g = (design[j * d + j] - self.lam).max(0.0);
                }
                let snd = s_n * d;
                target_variance(
                    &srv.reward_sq[hh * d..(hh + 1) * d],
                    &srv.next_count[hh * snd..(hh + 1) * snd],
                    &srv.next_reward[hh * snd..(hh + 1) * snd],
                    &srv.next_cols[hh * s_n..(hh + 1) * s_n],
                    &shifted,
                    &work.u,
                    &gram,
                    half * half,
                    &mut scratch,
                    &mut variance,
                );
            }
            let x = StepIn {
                d,
                design: self.board_design(hh),
                inverse: self.board_inverse(hh),
                u: &work.u,
                c,
                amp,
                backup: &next,
                half,
                s_n: st.s_n,
                private,
                data: tabular.then_some(DataMoments {
                    gram: &gram,
                    variance: &variance,
                }),
            };
            st.release_step(hh, &x, &self.sparse, &mut wts);
            if wts.iter().any(|v| !v.is_finite()) {
                result = Err(crate::errors::CoreError::NonFinite(format!(
                    "the adaptive release of step h={} after {users} users is not finite",
                    hh + 1
                )));
                break;
            }
            self.board.weights[hh * d..(hh + 1) * d].copy_from_slice(&wts);
            self.adaptive = Some(st);
            self.adaptive_backup(hh, &mut next);
            st = self.adaptive.take().expect("adaptive state");
        }
        self.adaptive = Some(st);
        self.work = work;
        result?;
        self.board.users = users;
        let srv = &mut self.server;
        srv.releases += 1;
        srv.paths.push(aggregated);
        srv.release_users.push(users);
        Ok(())
    }

    /// Every step's greedy actions under the adaptive rule: optimism on min(phi^T w~ +
    /// ||phi||_Sigma, H - h), sampling on phi^T (w~ + Sigma^{1/2} g) with g from the stream.
    pub(super) fn plan_adaptive(
        &mut self,
        exploration: &mut Exploration,
        pi: &mut [usize],
        w: &mut Work,
    ) -> CoreResult<()> {
        let (h_n, s_n, a_n, d) = (self.h, self.s, self.a, self.d);
        let rows = s_n * a_n;
        for h in 0..h_n {
            let st = self.adaptive.as_ref().expect("adaptive state");
            let mean = &self.board.weights[h * d..(h + 1) * d];
            match exploration {
                Exploration::Optimism => {
                    let b = &st.bonus[h * rows..(h + 1) * rows];
                    let vmax = (h_n - h) as f64;
                    self.sparse
                        .dot_rows(mean, &mut w.q, |r, m| (m + b[r]).min(vmax));
                }
                Exploration::Sampling(stream) if st.spec.diagonal => {
                    stream.normals(&mut w.u);
                    let l = &st.factor[h * d..(h + 1) * d];
                    for (i, o) in w.w.iter_mut().enumerate() {
                        *o = mean[i] + l[i] * w.u[i];
                    }
                    self.sparse.dot_rows(&w.w, &mut w.q, |_, q| q);
                }
                Exploration::Sampling(stream) => {
                    stream.normals(&mut w.u);
                    let l = &st.factor[h * d * d..(h + 1) * d * d];
                    for (i, o) in w.w.iter_mut().enumerate() {
                        *o = mean[i]
                            + l[i * d..(i + 1) * d]
                                .iter()
                                .zip(&w.u)
                                .map(|(a, z)| a * z)
                                .sum::<f64>();
                    }
                    self.sparse.dot_rows(&w.w, &mut w.q, |_, q| q);
                }
            }
            let tie = self.ties.draw();
            group_max(&w.q, a_n, tie, &mut w.vmax, &mut pi[h * s_n..(h + 1) * s_n])?;
        }
        Ok(())
    }
}
