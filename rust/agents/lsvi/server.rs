//! The server of Alg. 2: its sums, records and releases, and the response vector u_h.

use serde::{Deserialize, Serialize};

use super::{Planning, Private};
use crate::errors::CoreResult;
use crate::kernels::rank_one::ShermanMorrison;
use crate::kernels::sparse::SparseRows;
use crate::noise::NodeShape;

/// The server of Alg. 2.
#[derive(Serialize, Deserialize)]
pub struct Server {
    pub private: Option<Private>,
    /// Non-private: Lambda_h with its inverse.
    pub exact: Vec<ShermanMorrison>,
    /// The running batch's Gram per h (private).
    pub batch_gram: Vec<f64>,
    /// sum_i phi_i r_i per h (H x d); sum_{i: s'_i = s'} phi_i per h, s' (H x S x d).
    pub reward_sum: Vec<f64>,
    pub next_sum: Vec<f64>,
    /// The columns of every next_sum row (h, s') that were ever nonzero (a superset of its
    /// nonzeros and of next_count's, no repeats; rebuilt after a load): u_h's sum and the
    /// targets' variance skip the rest.
    #[serde(skip)]
    pub next_cols: Vec<Vec<usize>>,
    /// The targets' second moments, kept by a non-private adaptive agent on one-hot rows (empty
    /// otherwise): per step h and coordinate j over the users with phi_j != 0, the sum of r^2
    /// (H x d) and, per next state s', their count and the sum of r (H x S x d).
    pub reward_sq: Vec<f64>,
    pub next_count: Vec<f64>,
    pub next_reward: Vec<f64>,
    /// The (s, a, r) of the first `record_capacity` users, for the per-sample path.
    pub record_capacity: u64,
    pub states: Vec<usize>,
    pub actions: Vec<usize>,
    pub rewards: Vec<f64>,
    pub planning: Planning,
    /// Users received.
    pub n: u64,
    /// Releases published (the initial billboard not counted), the tree nodes summed in each,
    /// the path each planned with (true: aggregated) and the users of every billboard.
    pub releases: u64,
    pub nodes_history: Vec<u64>,
    pub paths: Vec<bool>,
    pub release_users: Vec<u64>,
    /// The eta of the last release (H x d).
    pub last_eta: Vec<f64>,
    /// Non-private: `phi_r^T Lambda_h^{-1} phi_r` for every step h and table row r (H x S A),
    /// kept current by the rank-one updates (a bonus costs O(d) per row, not O(d^2)); under the
    /// adaptive rule, whose widths come from its posterior, left at their initial values.
    pub forms: Vec<f64>,
    /// sqrt(max(form, 0)) of every form, kept with it (rebuilt from forms after a load).
    #[serde(skip)]
    pub widths: Vec<f64>,
}

impl Server {
    /// next_cols for every (h, s') row of next_sum (built once; after a load, from next_sum's
    /// nonzeros and, for an agent that keeps them, next_count's).
    pub(super) fn next_columns_ready(&mut self, s_n: usize, d: usize) {
        let rows = self.next_sum.len() / d.max(1);
        if self.next_cols.len() == rows {
            return;
        }
        debug_assert_eq!(rows % s_n.max(1), 0);
        let counts = !self.next_count.is_empty();
        self.next_cols = self
            .next_sum
            .chunks_exact(d)
            .enumerate()
            .map(|(i, row)| {
                (0..d)
                    .filter(|&j| row[j] != 0.0 || (counts && self.next_count[i * d + j] != 0.0))
                    .collect()
            })
            .collect();
    }
}

/// u_h = sum_i phi_i [r_i + V_{h+1}(s'_i)] by the chosen path, from `next` = V_{h+1} at every
/// state (None at the last step, where V_{H+1} = 0): aggregated, reward_sum + next_sum^T V; per
/// sample, over the stored transitions.
#[allow(clippy::too_many_arguments)]
pub(super) fn response(
    srv: &Server,
    table: &SparseRows,
    aggregated: bool,
    h: usize,
    next: Option<&[f64]>,
    u: &mut [f64],
    a_n: usize,
    s_n: usize,
    d: usize,
) {
    let h_n = srv.reward_sum.len() / d;
    if aggregated {
        u.copy_from_slice(&srv.reward_sum[h * d..(h + 1) * d]);
        if let Some(v) = next {
            // over each row's columns that were ever nonzero, rows in order: the dense sum
            // bit for bit (a skipped term is 0 * V = +-0 and u is never -0)
            let ns = &srv.next_sum[h * s_n * d..(h + 1) * s_n * d];
            let cols = &srv.next_cols[h * s_n..(h + 1) * s_n];
            for ((row, c), &vs) in ns.chunks_exact(d).zip(cols).zip(v) {
                if c.len() == d {
                    u.iter_mut().zip(row).for_each(|(x, r)| *x += r * vs); // every column: dense
                } else {
                    c.iter().for_each(|&j| u[j] += row[j] * vs);
                }
            }
        }
        return;
    }
    let n = srv.n.min(srv.record_capacity) as usize;
    u.iter_mut().for_each(|x| *x = 0.0);
    for i in 0..n {
        let row = srv.states[i * (h_n + 1) + h] * a_n + srv.actions[i * h_n + h];
        let vi = next.map_or(0.0, |v| v[srv.states[i * (h_n + 1) + h + 1]]);
        let target = srv.rewards[i * h_n + h] + vi;
        // over the row's nonzeros: the dense sum bit for bit (a skipped term is 0 * target,
        // +-0, and u starts at +0 and is never -0), in O(nnz) instead of O(d)
        let (cols, vals) = table.row(row);
        if cols.len() == d {
            u.iter_mut().zip(vals).for_each(|(x, p)| *x += p * target); // a dense row
        } else {
            cols.iter().zip(vals).for_each(|(&j, p)| u[j] += p * target);
        }
    }
}

impl super::LsviAgent {
    /// A restored state's sizes against its dimensions (`crate::state::check_sizes`).
    pub fn check_restored(&self) -> crate::errors::CoreResult<()> {
        const WHAT: &str = "LSVI-UCB agent";
        let (h, s, a, d) = (self.h, self.s, self.a, self.d);
        let (srv, board) = (&self.server, &self.board);
        let np = if srv.private.is_some() { 0 } else { 1 };
        crate::state::check_sizes(
            WHAT,
            &[
                ("features", self.table.len(), &[s, a, d]),
                ("feature rows", self.sparse.len(), &[s, a]),
                ("reward sums", srv.reward_sum.len(), &[h, d]),
                ("next-state sums", srv.next_sum.len(), &[h, s, d]),
                ("weights", board.weights.len(), &[h, d]),
                ("exact Gram matrices", srv.exact.len(), &[h, np]),
            ],
        )?;
        self.guard.check_restored(WHAT)?;
        let cap = usize::try_from(srv.record_capacity).unwrap_or(usize::MAX);
        let private = usize::from(srv.private.is_some());
        let forms = if srv.private.is_some() { 0 } else { s * a };
        crate::state::check_sizes(
            WHAT,
            &[
                ("recorded states", srv.states.len(), &[cap, h + 1]),
                ("recorded actions", srv.actions.len(), &[cap, h]),
                ("recorded rewards", srv.rewards.len(), &[cap, h]),
                (
                    "batch Gram matrices",
                    srv.batch_gram.len(),
                    &[private, h, d, d],
                ),
                ("forms", srv.forms.len(), &[h, forms]),
                ("policy", self.pi.len(), &[h, s]),
            ],
        )?;
        let bad = |what: &str| {
            Err(crate::errors::CoreError::InvalidParameter(format!(
                "not a consistent saved {WHAT} state: its {what}"
            )))
        };
        if !self.sparse.consistent(d) {
            return bad("feature rows");
        }
        if srv.states.iter().any(|&x| x >= s) || srv.actions.iter().any(|&x| x >= a) {
            return bad("recorded states or actions (out of range)");
        }
        if self.pi.iter().any(|&x| x >= a) {
            return bad("policy (an action out of range)");
        }
        // the one-hot adaptive agent's moments: none, or H x d and H x S x d (twice)
        let kept = |v: &[f64], n: usize| v.is_empty() || v.len() == n;
        if !kept(&srv.reward_sq, h * d)
            || !kept(&srv.next_count, h * s * d)
            || srv.next_reward.len() != srv.next_count.len()
        {
            return bad("target moments");
        }
        let dims = srv.exact.iter().map(|m| m.dim());
        let trees = srv
            .private
            .iter()
            .flat_map(|p| p.trees.iter().map(|m| m.dim()));
        crate::state::check_dims(WHAT, dims.chain(trees), d)
    }
}

impl super::LsviAgent {
    /// eta_h for every step, one fresh d-vector each (private servers; every release rule draws
    /// them here, in this order): the lattice unit of a discrete sampler, None otherwise.
    pub(super) fn draw_eta(&mut self) -> CoreResult<Option<f64>> {
        let (h_n, d) = (self.h, self.d);
        let Some(p) = &mut self.server.private else {
            return Ok(None);
        };
        self.server.last_eta.resize(h_n * d, 0.0);
        for hh in 0..h_n {
            let e = &mut self.server.last_eta[hh * d..(hh + 1) * d];
            p.eta.fill(NodeShape::Vector(d), e)?;
        }
        p.eta.noise().lattice_unit(NodeShape::Vector(d))
    }

    /// The release's variance factor of the Lambda mechanisms after t leaves (0 non-private).
    pub fn variance_factor(&self, t: u64) -> f64 {
        self.server
            .private
            .as_ref()
            .map_or(0.0, |p| p.trees[0].0.variance_factor(t))
    }
}
