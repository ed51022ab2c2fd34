//! What a user's statistics go through on the way to the billboard: the intake (guard, LDP
//! randomizer) and the server's sums under each privacy model.

use super::{outer, Intake, Server};
use crate::errors::{check_len, CoreError, CoreResult};
use crate::noise::NodeShape;

impl Intake {
    /// The guard on (X, y) in place, then under LDP the randomizer: (X, y) become the message
    /// (X X^T + B^1 (H x d x d), X y + g^1 (H x d)). Returns the clip count.
    pub(super) fn process(
        &mut self,
        x: &mut Vec<f64>,
        y: &mut Vec<f64>,
        h: usize,
        d: usize,
        leaf: &mut [f64],
    ) -> CoreResult<u64> {
        let clips = match &self.guard {
            Some(g) => g.apply(x, d, Some(y))? as u64,
            None => {
                if crate::errors::any_non_finite(x) || crate::errors::any_non_finite(y) {
                    return Err(CoreError::NonFinite(
                        "user statistic contains NaN or inf".into(),
                    ));
                }
                0
            }
        };
        if let Some(r) = &mut self.randomizer {
            // the message is written into the spare buffers, which then trade places with
            // (X, y): no allocation per user once both pairs have grown
            let (mut gram, mut target) = std::mem::take(&mut r.spare);
            gram.clear();
            gram.resize(h * d * d, 0.0);
            target.clear();
            target.resize(h * d, 0.0);
            let shape = NodeShape::SymMatrix {
                d,
                divisor: r.divisor,
            };
            for (hh, xh) in x.chunks_exact(d).enumerate() {
                let m = &mut gram[hh * d * d..(hh + 1) * d * d];
                outer(xh, m);
                r.matrix.privatize(shape, m, leaf)?;
            }
            for (hh, xh) in x.chunks_exact(d).enumerate() {
                let m = &mut target[hh * d..(hh + 1) * d];
                m.iter_mut().zip(xh).for_each(|(v, xi)| *v = xi * y[hh]);
                r.vector
                    .privatize(NodeShape::Vector(d), m, &mut leaf[..d])?;
            }
            r.spare = (std::mem::replace(x, gram), std::mem::replace(y, target));
        }
        Ok(clips)
    }
}

impl Server {
    /// One user's message: raw (X, y) for the exact and JDP servers, the privatized
    /// (gram, target) under LDP.
    pub(super) fn receive(
        &mut self,
        x: &[f64],
        y: &[f64],
        h: usize,
        d: usize,
        leaf: &mut [f64],
    ) -> CoreResult<()> {
        match self {
            Server::Exact { sms, target } => {
                for (sm, xh) in sms.iter_mut().zip(x.chunks_exact(d)) {
                    sm.update(xh)?;
                }
                for ((t, xh), &yh) in target.chunks_exact_mut(d).zip(x.chunks_exact(d)).zip(y) {
                    t.iter_mut().zip(xh).for_each(|(t, xi)| *t += xi * yh);
                }
            }
            Server::Jdp { grams, targets } => {
                for (hh, xh) in x.chunks_exact(d).enumerate() {
                    outer(xh, leaf);
                    grams[hh].0.push(leaf)?;
                    let v = &mut leaf[..d];
                    v.iter_mut().zip(xh).for_each(|(l, xi)| *l = xi * y[hh]);
                    targets[hh].0.push(v)?;
                }
            }
            Server::Ldp { gram, target } => {
                check_len("privatized Gram matrices", x.len(), h * d * d)?;
                check_len("privatized targets", y.len(), h * d)?;
                gram.iter_mut().zip(x).for_each(|(g, m)| *g += m);
                target.iter_mut().zip(y).for_each(|(t, m)| *t += m);
            }
        }
        Ok(())
    }

    /// The released Gram sums and targets into `gram`, `sums`; returns the release's variance
    /// factor (the mechanism's profile at t under JDP, t under LDP, 0 non-private).
    pub(super) fn released_sums(
        &self,
        t: u64,
        lam: f64,
        d: usize,
        gram: &mut [f64],
        sums: &mut [f64],
    ) -> CoreResult<f64> {
        let dd = d * d;
        Ok(match self {
            Server::Exact { sms, target } => {
                for (hh, sm) in sms.iter().enumerate() {
                    let g = &mut gram[hh * dd..(hh + 1) * dd];
                    g.copy_from_slice(sm.matrix());
                    for i in 0..d {
                        g[i * d + i] -= lam;
                    }
                }
                sums.copy_from_slice(target);
                0.0
            }
            Server::Jdp { grams, targets } => {
                for (hh, (g, tr)) in grams.iter().zip(targets.iter()).enumerate() {
                    g.0.release_into(&mut gram[hh * dd..(hh + 1) * dd])?;
                    tr.0.release_into(&mut sums[hh * d..(hh + 1) * d])?;
                }
                grams[0].0.variance_factor(t)
            }
            Server::Ldp { gram: g, target } => {
                gram.copy_from_slice(g);
                sums.copy_from_slice(target);
                t as f64
            }
        })
    }

    /// The release's variance factor after t users (see `released_sums`).
    pub fn variance_factor(&self, t: u64) -> f64 {
        match self {
            Server::Exact { .. } => 0.0,
            Server::Jdp { grams, .. } => grams[0].0.variance_factor(t),
            Server::Ldp { .. } => t as f64,
        }
    }
}
