//! The greedy policy of the released estimate (`UCRLVTR.greedy_policy`, UCRL-VTR+ too): value
//! iteration on the billboard's w~_h with the users' planner, zero bonus and no draw. Post-
//! processing of the billboard only: it reads, and changes, no stream, plan or counter.

use super::{adaptive, VtrAgent, FLAT};
use crate::errors::CoreResult;
use crate::kernels::qeval::{group_max, OptimisticQ, TieBreak};

impl VtrAgent {
    /// Every step's greedy actions (H x S), ties to the lowest action. For h = H..1 from
    /// V_{H+1} = 0, on the first regression's released weights w~_h (UCRL-VTR+: the first
    /// moments' regression, the one its users plan on): paper / practical rules, Q_h(s, a) =
    /// Pi_[0, H](r_h(s, a) + <phi_{V_{h+1}}(s, a), w~_h>); adaptive rule, its planner's normalized
    /// target without the width, Q_h = r + lo + (hi - lo) / H Pi_[0, H](<phi_f(s, a), w~_h>)
    /// (capped at r + hi, [lo, hi] the range of V_{h+1} over the pair's support); V_h = max_a Q_h.
    pub fn greedy_policy(&self) -> CoreResult<Vec<usize>> {
        let (h_n, s_n, a_n, d) = (self.h, self.s, self.a, self.d);
        let rows = s_n * a_n;
        let board = &self.regs[0].board;
        let adaptive = self.adaptive().is_some();
        let (mut v, mut next) = (vec![0.0; s_n], vec![0.0; s_n]);
        let (mut phi, mut q) = (vec![0.0; rows * d], vec![0.0; rows]);
        let (mut lo, mut hi) = (vec![0.0; rows], vec![0.0; rows]);
        let mut pi = vec![0; h_n * s_n];
        let top = h_n as f64;
        for h in (0..h_n).rev() {
            if adaptive {
                self.features.support_range(&next, &mut lo, &mut hi)?;
                self.features
                    .normalized_phi(&next, &lo, &hi, FLAT, top, &mut phi)?;
            } else {
                self.features.phi_v(&next, &mut phi)?;
            }
            let q_of = OptimisticQ {
                d,
                w: &board.weights[h * d..(h + 1) * d],
                inv: &board.explore[h * d * d..(h + 1) * d * d],
                beta: 0.0,
                lower: 0.0,
                upper: top,
            };
            let r = &self.rewards[h * rows..(h + 1) * rows];
            if adaptive {
                q_of.evaluate(&phi, None, &mut q)?;
                for (((qv, rv), l), u) in q.iter_mut().zip(r).zip(&lo).zip(&hi) {
                    *qv = adaptive::on_support(*rv, *l, *u, *qv, top);
                }
            } else {
                q_of.evaluate(&phi, Some(r), &mut q)?;
            }
            let out = &mut pi[h * s_n..(h + 1) * s_n];
            group_max(&q, a_n, TieBreak::Lowest, &mut v, out)?;
            std::mem::swap(&mut v, &mut next);
        }
        Ok(pi)
    }
}
