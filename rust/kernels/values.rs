//! Optimistic state values for least-squares value iteration (Alg. 2, lines 19-21):
//! `V(s) = clip_[lower, upper](max_a phi(s,a)^T w + beta ||phi(s,a)||_{Lambda^-1})` at many
//! states in one call. Feature rows are read through a state index, so evaluating the
//! next state of every stored transition never materializes an (n * A, d) copy.

use crate::errors::{check_finite, check_len, CoreError, CoreResult};
use crate::kernels::qeval::OptimisticQ;

/// States evaluated per block: the gathered rows (BLOCK * A * d values) stay in L1/L2.
const BLOCK_ROWS: usize = 256;

/// `out[i] = V(states[i])` (or `V(i)` for every state of the table when `states` is None),
/// where the rows `s * n_actions .. (s + 1) * n_actions` of `table` (row-major, d columns)
/// hold phi(s, a) for the actions of state s. Only the max is formed (no argmax, no Q
/// array): the server needs the value, the user's greedy action comes from `qeval`.
pub fn state_values(
    q: &OptimisticQ<'_>,
    table: &[f64],
    n_actions: usize,
    states: Option<&[i64]>,
    out: &mut [f64],
) -> CoreResult<()> {
    let upper = q.prepare()?;
    let d = q.d;
    if n_actions == 0 {
        return Err(CoreError::Shape("number of actions must be >= 1".into()));
    }
    let group = n_actions * d;
    if !table.len().is_multiple_of(group) {
        return Err(CoreError::Shape(format!(
            "feature table: length {} is not a multiple of n_actions * d = {group}",
            table.len()
        )));
    }
    let n_states = table.len() / group;
    check_finite("feature table", table)?;
    let n = states.map_or(n_states, |s| s.len());
    check_len("output", out.len(), n)?;
    if let Some(idx) = states {
        if let Some(p) = idx.iter().position(|&s| s < 0 || s as usize >= n_states) {
            return Err(CoreError::Shape(format!(
                "state index {} at position {p} is outside 0..{n_states}",
                idx[p]
            )));
        }
    }
    let per_block = (BLOCK_ROWS / n_actions).max(1);
    let mut qbuf = vec![0.0; per_block * n_actions];
    let mut gathered = match states {
        Some(_) => vec![0.0; per_block * group],
        None => Vec::new(),
    };
    let mut start = 0;
    while start < n {
        let m = per_block.min(n - start);
        let rows: &[f64] = match states {
            None => &table[start * group..(start + m) * group],
            Some(idx) => {
                for (dst, &s) in gathered.chunks_exact_mut(group).zip(&idx[start..start + m]) {
                    let s = s as usize;
                    dst.copy_from_slice(&table[s * group..(s + 1) * group]);
                }
                &gathered[..m * group]
            }
        };
        let qv = &mut qbuf[..m * n_actions];
        q.evaluate_prepared(&upper, rows, None, qv);
        for (o, g) in out[start..start + m]
            .iter_mut()
            .zip(qv.chunks_exact(n_actions))
        {
            *o = g.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        }
        start += m;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn direct(q: &OptimisticQ<'_>, phi: &[f64]) -> f64 {
        let d = q.d;
        let lin: f64 = (0..d).map(|k| phi[k] * q.w[k]).sum();
        let mut quad = 0.0;
        for a in 0..d {
            for b in 0..d {
                quad += phi[a] * q.inv[a * d + b] * phi[b];
            }
        }
        (lin + q.beta * quad.max(0.0).sqrt())
            .min(q.upper)
            .max(q.lower)
    }

    #[test]
    fn indexed_values_match_direct_max() {
        let (d, a, s) = (3, 2, 5);
        let table: Vec<f64> = (0..s * a * d)
            .map(|i| ((i * 7919) % 13) as f64 / 13.0 - 0.4)
            .collect();
        let inv = [1.0, 0.2, 0.0, 0.2, 0.5, 0.1, 0.0, 0.1, 2.0];
        let w = [0.3, -1.0, 0.5];
        let q = OptimisticQ {
            d,
            w: &w,
            inv: &inv,
            beta: 0.7,
            lower: 0.0,
            upper: 1.0,
        };
        let states: Vec<i64> = (0..600).map(|i| (i * 3 % 5) as i64).collect();
        let mut out = vec![0.0; states.len()];
        state_values(&q, &table, a, Some(&states), &mut out).unwrap();
        let mut all = vec![0.0; s];
        state_values(&q, &table, a, None, &mut all).unwrap();
        for (i, &st) in states.iter().enumerate() {
            let st = st as usize;
            let want = (0..a)
                .map(|k| direct(&q, &table[(st * a + k) * d..(st * a + k + 1) * d]))
                .fold(f64::NEG_INFINITY, f64::max);
            assert!((out[i] - want).abs() < 1e-14);
            assert_eq!(out[i], all[st]);
        }
    }

    #[test]
    fn bad_index_is_an_error() {
        let q = OptimisticQ {
            d: 1,
            w: &[1.0],
            inv: &[1.0],
            beta: 0.0,
            lower: 0.0,
            upper: 1.0,
        };
        let mut out = [0.0];
        assert!(state_values(&q, &[0.5, 0.5], 2, Some(&[1]), &mut out).is_err());
        assert!(state_values(&q, &[0.5, 0.5], 2, Some(&[-1]), &mut out).is_err());
    }
}
