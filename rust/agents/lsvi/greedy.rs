//! The greedy policy of the released estimate (`LSVIUCB.greedy_policy`): what the agent has
//! learned, with no exploration. Post-processing of the billboard only (its weights w~_h), never
//! of the server's sums: it reads, and changes, no stream, cached policy or counter.

use super::LsviAgent;
use crate::errors::CoreResult;
use crate::kernels::qeval::{group_max, TieBreak};

impl LsviAgent {
    /// Every step's greedy actions (H x S, row h the step), ties to the lowest action: the
    /// agent's planner with radius 0 and no draw on the released weights w~_h. Paper / practical
    /// rules: Q_h(s, a) = Pi_[0, H](w~_h^T phi(s, a)); adaptive rule: min(phi^T w~_h, H - h) (its
    /// optimistic users' Q without the width). w~_h is the billboard's: the ridge regression of
    /// step h's targets r + V_{h+1}(s') (the release's backup, from V_{H+1} = 0).
    pub fn greedy_policy(&self) -> CoreResult<Vec<usize>> {
        let (h_n, s_n, a_n, d) = (self.h, self.s, self.a, self.d);
        let mut q = vec![0.0; s_n * a_n];
        let mut vmax = vec![0.0; s_n];
        let mut pi = vec![0; h_n * s_n];
        let adaptive = self.adaptive.is_some();
        for h in 0..h_n {
            let w = &self.board.weights[h * d..(h + 1) * d];
            if adaptive {
                let top = (h_n - h) as f64;
                self.sparse.dot_rows(w, &mut q, |_, m| m.min(top));
            } else {
                let top = h_n as f64;
                self.sparse.dot_rows(w, &mut q, |_, m| m.clamp(0.0, top));
            }
            let out = &mut pi[h * s_n..(h + 1) * s_n];
            group_max(&q, a_n, TieBreak::Lowest, &mut vmax, out)?;
        }
        Ok(pi)
    }
}
