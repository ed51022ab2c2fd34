//! LSVI-UCB with a static batch schedule (Alg. 2): LSVI-UCB (Jin et al. 2020, a release after
//! every user), batched LSVI-UCB (Wang et al. 2021), JDP and pure-JDP LSVI-UCB, one
//! implementation.
//!
//! Per user k: the user takes the billboard (Lambda~_{b,h}, w~_{b,h})_h of the current batch b
//! and acts greedily on Q_h = Pi_[0, H][w~^T phi + beta ||phi||_{Lambda~^{-1}}] (optimism; the
//! policy is computed once per release) or on w_h drawn from N(w~_h, beta^2 Lambda~_h^{-1})
//! (sampling; per user, from its own stream); its features phi(s_h, a_h) and rewards pass the
//! sensitivity guard into the server's sums. After the last user of a batch (k = i ceil(K/B),
//! a schedule fixed in advance), the server releases for h = H..1:
//!     Lambda~_h = Lambda_h + shift I + H^{b+1}_h   (the batch's Gram as the next leaf of tree h)
//!     u~_h = sum_i phi_i [r_i + V_{h+1}(s'_i)] + eta_h,   w~_h = Lambda~_h^{-1} u~_h,
//! with V_{h+1}(s) = Pi_[0, H] max_a (w~_{h+1}^T phi + beta ||phi||_{Lambda~_{h+1}^{-1}}).
//! Non-private: Lambda_h and its inverse by Sherman-Morrison, no shift, no noise.

use serde::{Deserialize, Serialize};

use super::bounds::NoiseBounds;
use super::vtr::not_pd;
use super::{outer, Draw, Episodic, Exploration, Guard, Mechanism, Ties, Trajectory};
use crate::errors::{check_len, CoreError, CoreResult};
use crate::lsvi::state_values;
use crate::noise::{NodeShape, NoiseStream};
use crate::qeval::{group_max, OptimisticQ};
use crate::rank_one::{spd_inverse, ShermanMorrison};

/// The regularization of a private release.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Shift {
    /// lam + c_K + Upsilon added to the diagonal (App. D).
    Constant(f64),
    /// The practical rule: lam + shift_mult * Upsilon_b at the noise released after b leaves,
    /// then the eigenvalues floored at lam.
    Practical { mult: f64, bounds: NoiseBounds },
}

/// The private parts of the server: H continual-release mechanisms of Lambda over the
/// releases, the eta stream (one fresh d-vector per release and step) and the shift.
#[derive(Serialize, Deserialize)]
pub struct Private {
    pub trees: Vec<Mechanism>,
    pub eta: NoiseStream,
    pub shift: Shift,
}

/// How the server forms u_h: from every stored transition, or from per-state counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Planning {
    /// Per sample while at most S users are stored, from counts afterwards.
    Auto,
    PerSample,
    Aggregated,
}

/// The billboard (Lambda~_h, Lambda~_h^{-1}, w~_h)_h.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Billboard {
    pub design: Vec<f64>,
    pub inverse: Vec<f64>,
    pub weights: Vec<f64>,
    pub users: u64,
}

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
}

/// An LSVI-UCB agent.
#[derive(Serialize, Deserialize)]
pub struct LsviAgent {
    pub h: usize,
    pub s: usize,
    pub a: usize,
    pub d: usize,
    /// phi(s, a), row s * A + a (S A x d), inside the guard's bound.
    table: Vec<f64>,
    pub guard: Guard,
    pub clips: u64,
    pub beta: f64,
    pub lam: f64,
    /// Users per batch, ceil(K / B): a release follows user k when k is a multiple and k < K.
    pub batch_len: u64,
    pub server: Server,
    pub board: Billboard,
    ties: Ties,
    exploration: Exploration,
    pub episodes: u64,
    pub k: u64,
    pub policy_updates: u64,
    /// The current policy and what it was computed for (the release count, or the user under
    /// sampling).
    pi: Vec<usize>,
    pi_for: Option<(u64, u64)>,
    #[serde(skip)]
    work: Work,
}

#[derive(Default)]
struct Work {
    phi: Vec<f64>,
    r: Vec<f64>,
    q: Vec<f64>,
    vmax: Vec<f64>,
    v: Vec<f64>,
    u: Vec<f64>,
    w: Vec<f64>,
    draw: Draw,
    leaf: Vec<f64>,
}

/// The parts of an [`LsviAgent`].
pub struct LsviParts {
    pub h: usize,
    pub a: usize,
    pub table: Vec<f64>,
    pub d: usize,
    pub guard: Guard,
    pub beta: f64,
    pub lam: f64,
    pub batch_len: u64,
    pub private: Option<Private>,
    pub planning: Planning,
    pub record_capacity: u64,
    pub ties: Ties,
    pub exploration: Exploration,
    pub episodes: u64,
}

impl LsviAgent {
    pub fn new(p: LsviParts) -> CoreResult<Self> {
        let (h, a, d) = (p.h, p.a, p.d);
        if h == 0 || a == 0 || d == 0 || !p.table.len().is_multiple_of(a * d) {
            return Err(CoreError::Shape(format!(
                "a feature table of {} values does not hold S x {a} rows of d = {d}",
                p.table.len()
            )));
        }
        let s = p.table.len() / (a * d);
        if p.batch_len == 0 {
            return Err(CoreError::InvalidParameter(
                "batch length must be >= 1".into(),
            ));
        }
        let cap = p.record_capacity as usize;
        let exact = if p.private.is_none() {
            (0..h)
                .map(|_| ShermanMorrison::new(d, p.lam, 1024))
                .collect::<CoreResult<Vec<_>>>()?
        } else {
            vec![]
        };
        let eye: Vec<f64> = (0..d * d)
            .map(|i| if i % (d + 1) == 0 { 1.0 } else { 0.0 })
            .collect();
        let board = Billboard {
            design: eye
                .iter()
                .map(|e| e * p.lam)
                .cycle()
                .take(h * d * d)
                .collect(),
            inverse: eye
                .iter()
                .map(|e| e / p.lam)
                .cycle()
                .take(h * d * d)
                .collect(),
            weights: vec![0.0; h * d],
            users: 0,
        };
        let private = p.private.is_some();
        Ok(LsviAgent {
            h,
            s,
            a,
            d,
            table: p.table,
            guard: p.guard,
            clips: 0,
            beta: p.beta,
            lam: p.lam,
            batch_len: p.batch_len,
            server: Server {
                private: p.private,
                exact,
                batch_gram: vec![0.0; if private { h * d * d } else { 0 }],
                reward_sum: vec![0.0; h * d],
                next_sum: vec![0.0; h * s * d],
                record_capacity: p.record_capacity,
                states: vec![0; cap * (h + 1)],
                actions: vec![0; cap * h],
                rewards: vec![0.0; cap * h],
                planning: p.planning,
                n: 0,
                releases: 0,
                nodes_history: vec![],
                paths: vec![],
                release_users: vec![0],
                last_eta: vec![],
            },
            board,
            ties: p.ties,
            exploration: p.exploration,
            episodes: p.episodes,
            k: 0,
            policy_updates: 0,
            pi: vec![0; h * s],
            pi_for: None,
            work: Work::default(),
        })
    }

    fn work_ready(&mut self) {
        let (h, s, a, d) = (self.h, self.s, self.a, self.d);
        if self.work.q.len() == s * a {
            return;
        }
        self.work = Work {
            phi: vec![0.0; h * d],
            r: vec![0.0; h],
            q: vec![0.0; s * a],
            vmax: vec![0.0; s],
            v: vec![0.0; s.max(self.server.record_capacity as usize)],
            u: vec![0.0; d],
            w: vec![0.0; d],
            draw: Draw::default(),
            leaf: vec![0.0; d * d],
        };
    }

    /// The greedy policy of the current billboard (optimism: once per release) or of a model
    /// drawn for this user (sampling).
    fn ensure_policy(&mut self) -> CoreResult<()> {
        self.work_ready();
        let key = (
            self.server.releases,
            if self.exploration.is_sampling() {
                self.k + 1
            } else {
                0
            },
        );
        if self.pi_for == Some(key) {
            return Ok(());
        }
        let (h_n, s_n, a_n, d) = (self.h, self.s, self.a, self.d);
        let w = &mut self.work;
        for h in 0..h_n {
            let inv = &self.board.inverse[h * d * d..(h + 1) * d * d];
            let mean = &self.board.weights[h * d..(h + 1) * d];
            let beta = self
                .exploration
                .weights(mean, inv, self.beta, &mut w.draw, &mut w.w);
            let q = OptimisticQ {
                d,
                w: &w.w,
                inv,
                beta,
                lower: 0.0,
                upper: h_n as f64,
            };
            q.evaluate(&self.table, None, &mut w.q)?;
            let tie = self.ties.draw();
            group_max(
                &w.q,
                a_n,
                tie,
                &mut w.vmax,
                &mut self.pi[h * s_n..(h + 1) * s_n],
            )?;
        }
        self.pi_for = Some(key);
        self.policy_updates += 1;
        Ok(())
    }

    fn check_room(&self) -> CoreResult<()> {
        if self.k >= self.episodes {
            return Err(CoreError::Capacity(format!(
                "the agent was calibrated for K = {} episodes; episode {} would exceed its \
                 privacy accounting",
                self.episodes,
                self.k + 1
            )));
        }
        Ok(())
    }

    /// The planning path of the next release (true: from counts).
    fn aggregated(&self) -> bool {
        match self.server.planning {
            Planning::Aggregated => true,
            Planning::PerSample => false,
            Planning::Auto => self.server.n > self.s as u64,
        }
    }

    /// The end of a batch (Alg. 2, lines 14-23): the perturbed LSVI over all data so far.
    fn release(&mut self) -> CoreResult<()> {
        self.work_ready();
        let (h_n, s_n, a_n, d) = (self.h, self.s, self.a, self.d);
        let dd = d * d;
        let aggregated = self.aggregated();
        let users = self.server.n;
        let board = &mut self.board;
        let srv = &mut self.server;
        let w = &mut self.work;
        // Lambda~_h and its inverse
        match &mut srv.private {
            None => {
                for (hh, sm) in srv.exact.iter().enumerate() {
                    board.design[hh * dd..(hh + 1) * dd].copy_from_slice(sm.matrix());
                    board.inverse[hh * dd..(hh + 1) * dd].copy_from_slice(sm.inverse());
                }
            }
            Some(p) => {
                for (hh, tree) in p.trees.iter_mut().enumerate() {
                    tree.0.push(&srv.batch_gram[hh * dd..(hh + 1) * dd])?;
                    tree.0
                        .release_into(&mut board.design[hh * dd..(hh + 1) * dd])?;
                }
                srv.nodes_history.push(p.trees[0].0.nodes_used());
                srv.batch_gram.iter_mut().for_each(|v| *v = 0.0);
                match &p.shift {
                    Shift::Constant(base) => {
                        for (hh, m) in board.design.chunks_exact_mut(dd).enumerate() {
                            for i in 0..d {
                                m[i * d + i] += base;
                            }
                            let inv = spd_inverse(m, d).map_err(|_| {
                                not_pd(m, d, hh, users, "the shift c_K + Upsilon, an event of probability <= p/3 under App. D's calibration")
                            })?;
                            board.inverse[hh * dd..(hh + 1) * dd].copy_from_slice(&inv);
                        }
                    }
                    Shift::Practical { mult, bounds } => {
                        let t = p.trees[0].0.steps();
                        let (ups, _) = bounds.at(p.trees[0].0.variance_factor(t));
                        let base = self.lam + mult * ups;
                        floor_release(&mut board.design, &mut board.inverse, d, base, self.lam);
                    }
                }
            }
        }
        // eta_h, one fresh vector per step
        let unit = match &mut srv.private {
            Some(p) => {
                srv.last_eta.resize(h_n * d, 0.0);
                for hh in 0..h_n {
                    p.eta.fill(
                        NodeShape::Vector(d),
                        &mut srv.last_eta[hh * d..(hh + 1) * d],
                    )?;
                }
                p.eta.noise().lattice_unit(NodeShape::Vector(d))?
            }
            None => None,
        };
        // w~_h for h = H..1 (V_{H+1} = 0)
        for hh in (0..h_n).rev() {
            let u = &mut w.u;
            if hh == h_n - 1 {
                response(srv, &self.table, aggregated, hh, None, u, a_n, s_n, d)?;
            } else {
                let q = OptimisticQ {
                    d,
                    w: &board.weights[(hh + 1) * d..(hh + 2) * d],
                    inv: &board.inverse[(hh + 1) * dd..(hh + 2) * dd],
                    beta: self.beta,
                    lower: 0.0,
                    upper: h_n as f64,
                };
                response(
                    srv,
                    &self.table,
                    aggregated,
                    hh,
                    Some((&q, &mut w.v)),
                    u,
                    a_n,
                    s_n,
                    d,
                )?;
            }
            if srv.private.is_some() {
                let eta = &srv.last_eta[hh * d..(hh + 1) * d];
                match unit {
                    // discrete samplers: u rounded to the lattice of the exact integer noise
                    Some(un) => u
                        .iter_mut()
                        .zip(eta)
                        .for_each(|(x, e)| *x = ((*x / un).round() + (e / un).round()) * un),
                    None => u.iter_mut().zip(eta).for_each(|(x, e)| *x += e),
                }
            }
            let inv = &board.inverse[hh * dd..(hh + 1) * dd];
            for i in 0..d {
                board.weights[hh * d + i] = inv[i * d..(i + 1) * d]
                    .iter()
                    .zip(u.iter())
                    .map(|(m, x)| m * x)
                    .sum();
            }
        }
        board.users = users;
        srv.releases += 1;
        srv.paths.push(aggregated);
        srv.release_users.push(users);
        Ok(())
    }

    /// The user's phi(s_h, a_h) and rewards through the guard into the server's sums.
    fn receive(&mut self, t: &Trajectory) -> CoreResult<()> {
        self.work_ready();
        let (h_n, s_n, a_n, d) = (self.h, self.s, self.a, self.d);
        let w = &mut self.work;
        for h in 0..h_n {
            let row = (t.states[h] * a_n + t.actions[h]) * d;
            w.phi[h * d..(h + 1) * d].copy_from_slice(&self.table[row..row + d]);
        }
        w.r.copy_from_slice(&t.rewards);
        let clips = self.guard.apply(&mut w.phi, d, Some(&mut w.r))?;
        self.clips += clips as u64;
        let srv = &mut self.server;
        let i = srv.n as usize;
        if srv.n < srv.record_capacity {
            srv.states[i * (h_n + 1)..(i + 1) * (h_n + 1)].copy_from_slice(&t.states);
            srv.actions[i * h_n..(i + 1) * h_n].copy_from_slice(&t.actions);
            srv.rewards[i * h_n..(i + 1) * h_n].copy_from_slice(&w.r);
        }
        for (h, ph) in w.phi.chunks_exact(d).enumerate() {
            if srv.private.is_some() {
                outer(ph, &mut w.leaf);
                let g = &mut srv.batch_gram[h * d * d..(h + 1) * d * d];
                g.iter_mut().zip(&w.leaf).for_each(|(a, b)| *a += b);
            } else {
                srv.exact[h].update(ph)?;
            }
            let rs = &mut srv.reward_sum[h * d..(h + 1) * d];
            rs.iter_mut().zip(ph).for_each(|(x, p)| *x += p * w.r[h]);
            let ns = (h * s_n + t.states[h + 1]) * d;
            srv.next_sum[ns..ns + d]
                .iter_mut()
                .zip(ph)
                .for_each(|(x, p)| *x += p);
        }
        srv.n += 1;
        Ok(())
    }

    /// After user k: a release if k ends a batch.
    fn end_of_batch(&mut self) -> CoreResult<()> {
        if self.k.is_multiple_of(self.batch_len) && self.k < self.episodes {
            self.release()?;
        }
        Ok(())
    }

    /// The features table (S A x d).
    pub fn table(&self) -> &[f64] {
        &self.table
    }
}

/// u_h = sum_i phi_i [r_i + V_{h+1}(s'_i)] by the chosen path (`next`: the optimistic Q of step
/// h + 1 and a value buffer; None at the last step, where V_{H+1} = 0).
#[allow(clippy::too_many_arguments)]
fn response(
    srv: &Server,
    table: &[f64],
    aggregated: bool,
    h: usize,
    next: Option<(&OptimisticQ<'_>, &mut Vec<f64>)>,
    u: &mut [f64],
    a_n: usize,
    s_n: usize,
    d: usize,
) -> CoreResult<()> {
    let h_n = srv.reward_sum.len() / d;
    if aggregated {
        // reward_sum + next_sum^T V, V evaluated once per state
        u.copy_from_slice(&srv.reward_sum[h * d..(h + 1) * d]);
        if let Some((q, v)) = next {
            state_values(q, table, a_n, None, &mut v[..s_n])?;
            let ns = &srv.next_sum[h * s_n * d..(h + 1) * s_n * d];
            for (row, &vs) in ns.chunks_exact(d).zip(v.iter()) {
                u.iter_mut().zip(row).for_each(|(x, p)| *x += p * vs);
            }
        }
        return Ok(());
    }
    let n = srv.n.min(srv.record_capacity) as usize;
    u.iter_mut().for_each(|x| *x = 0.0);
    let mut vals = vec![0.0; n];
    if let Some((q, _)) = next {
        let idx: Vec<i64> = (0..n)
            .map(|i| srv.states[i * (h_n + 1) + h + 1] as i64)
            .collect();
        state_values(q, table, a_n, Some(&idx), &mut vals)?;
    }
    for (i, vi) in vals.iter().enumerate() {
        let row = srv.states[i * (h_n + 1) + h] * a_n + srv.actions[i * h_n + h];
        let target = srv.rewards[i * h_n + h] + vi;
        u.iter_mut()
            .zip(&table[row * d..(row + 1) * d])
            .for_each(|(x, p)| *x += p * target);
    }
    Ok(())
}

/// The practical release of every step in place: the eigenvalues of `design + base I` floored
/// at `lam`, and the inverse of the floored matrix.
fn floor_release(design: &mut [f64], inverse: &mut [f64], d: usize, base: f64, lam: f64) {
    let dd = d * d;
    for (m, inv) in design
        .chunks_exact_mut(dd)
        .zip(inverse.chunks_exact_mut(dd))
    {
        let sym = nalgebra::DMatrix::from_fn(d, d, |i, j| {
            0.5 * (m[i * d + j] + m[j * d + i]) + if i == j { base } else { 0.0 }
        });
        let eig = sym.symmetric_eigen();
        let ev: Vec<f64> = eig.eigenvalues.iter().map(|e| e.max(lam)).collect();
        let v = &eig.eigenvectors;
        for i in 0..d {
            for j in i..d {
                let (mut a, mut b) = (0.0, 0.0);
                for k in 0..d {
                    let vv = v[(i, k)] * v[(j, k)];
                    a += vv * ev[k];
                    b += vv / ev[k];
                }
                m[i * d + j] = a;
                m[j * d + i] = a;
                inv[i * d + j] = b;
                inv[j * d + i] = b;
            }
        }
    }
}

impl Episodic for LsviAgent {
    fn policy(&mut self) -> CoreResult<&[usize]> {
        self.ensure_policy()?;
        Ok(&self.pi)
    }

    fn observe(&mut self, t: &Trajectory) -> CoreResult<()> {
        self.check_room()?;
        check_len("trajectory states", t.states.len(), self.h + 1)?;
        self.receive(t)?;
        self.k += 1;
        self.end_of_batch()
    }
}

impl LsviAgent {
    /// The release's variance factor of the Lambda mechanisms after t leaves (0 non-private).
    pub fn variance_factor(&self, t: u64) -> f64 {
        self.server
            .private
            .as_ref()
            .map_or(0.0, |p| p.trees[0].0.variance_factor(t))
    }
}
