//! Exact policy values on demand: only the states one start reaches (`privrl.run`'s regret).

use super::{FiniteModel, Transitions};

/// `V^pi_h(s)` of one policy at the (h, s) reachable from the starts asked for, computed on demand
/// for a model with sparse rows (tabular dynamics reach few states from one start: a deterministic
/// model H of the H S), each by [`FiniteModel::values_into`]'s own expression (`r + sum_{s'}
/// P(s') V_{h+1}(s')` over the row's nonzeros in order, from +0): the same bits.
#[derive(Debug, Clone, Default)]
pub struct ValuesOnDemand {
    /// (H + 1) x S values, and their state: 0 unknown, 1 queued, 2 known.
    v: Vec<f64>,
    state: Vec<u8>,
    /// (h, s) as h S + s, level by level from a start.
    order: Vec<usize>,
}

impl ValuesOnDemand {
    /// A new policy: nothing known but V_{H+1} = 0.
    pub fn reset(&mut self, model: &FiniteModel) {
        let (h, s) = (model.h, model.s);
        self.v.resize((h + 1) * s, 0.0);
        self.state.clear();
        self.state.resize(h * s, 0);
        self.state.resize((h + 1) * s, 2);
        self.v[h * s..].iter_mut().for_each(|v| *v = 0.0);
    }
}

impl FiniteModel {
    /// P's rows are kept sparse (`ValuesOnDemand` applies).
    pub fn sparse_rows(&self) -> bool {
        matches!(self.p, Transitions::Sparse(_))
    }

    /// `V^pi_1(s0)` from `c` (reset for `pi`), computing the values it needs that `c` lacks: the
    /// (h, s) reachable from (1, s0) breadth first, then their values from the last level back.
    /// `values_into`'s value at (1, s0) for a model with sparse rows (NaN otherwise).
    pub fn value_on_demand(&self, pi: &[usize], s0: usize, c: &mut ValuesOnDemand) -> f64 {
        let Transitions::Sparse(p) = &self.p else {
            return f64::NAN;
        };
        let (s_n, a_n) = (self.s, self.a);
        if c.state[s0] != 2 {
            c.order.clear();
            c.order.push(s0);
            c.state[s0] = 1;
            let mut i = 0;
            while let Some(&k) = c.order.get(i) {
                i += 1;
                let row = k * a_n + pi[k]; // k = h S + s, so (h S + s) A + pi_h(s)
                for &j in p.row(row).0 {
                    let next = (k / s_n + 1) * s_n + j;
                    if c.state[next] == 0 {
                        c.state[next] = 1;
                        c.order.push(next);
                    }
                }
            }
            // breadth first from one start: the levels in order, so backwards every successor
            // is known when its predecessor is computed
            for &k in c.order.iter().rev() {
                let row = k * a_n + pi[k];
                let next = &c.v[(k / s_n + 1) * s_n..(k / s_n + 2) * s_n];
                let (cols, probs) = p.row(row);
                let mut acc = 0.0;
                for (q, &j) in probs.iter().zip(cols) {
                    acc += q * next[j];
                }
                c.v[k] = self.r[row] + acc;
                c.state[k] = 2;
            }
        }
        c.v[s0]
    }
}
