//! The BLT's buffers (entry-major in memory, buffer-major when saved) and the decoder step.

/// One step of the decoder A C^{-1} on the innovation `x` (overwritten by the decoded value):
/// `x_t = x - sum_i omega_i s_i ; s_i <- theta_i s_i + x_t ; acc += x_t`, entry by entry (each
/// entry's sum in a register, buffers in order).
pub(super) fn decode_step(
    theta: &[f64],
    omega: &[f64],
    state: &mut Buffers,
    acc: &mut [f64],
    x: &mut [f64],
) {
    for (k, (v, a)) in x.iter_mut().zip(acc.iter_mut()).enumerate() {
        let row = state.entry_mut(k);
        let mut u = *v;
        for (sv, w) in row.iter().zip(omega) {
            u -= w * sv;
        }
        for (sv, th) in row.iter_mut().zip(theta) {
            *sv = th * *sv + u;
        }
        *v = u;
        *a += u;
    }
}

/// `m` buffers of `p` packed entries, held entry-major (`v[k * m + i]`: the m buffers of entry
/// k side by side, for the per-entry loops above) and saved buffer-major, as the `Vec<Vec<f64>>`
/// of m vectors of p entries they were held in before, so saved states read as they did.
#[derive(Debug, Clone, Default)]
pub(super) struct Buffers {
    pub(super) m: usize,
    pub(super) p: usize,
    pub(super) v: Vec<f64>,
}

impl Buffers {
    pub(super) fn zeros(m: usize, p: usize) -> Self {
        Buffers {
            m,
            p,
            v: vec![0.0; m * p],
        }
    }

    /// Entry k of every buffer.
    #[inline]
    pub(super) fn entry(&self, k: usize) -> &[f64] {
        &self.v[k * self.m..(k + 1) * self.m]
    }

    #[inline]
    pub(super) fn entry_mut(&mut self, k: usize) -> &mut [f64] {
        &mut self.v[k * self.m..(k + 1) * self.m]
    }
}

impl serde::Serialize for Buffers {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let nested: Vec<Vec<f64>> = (0..self.m)
            .map(|i| (0..self.p).map(|k| self.v[k * self.m + i]).collect())
            .collect();
        nested.serialize(ser)
    }
}

impl<'de> serde::Deserialize<'de> for Buffers {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let nested = Vec::<Vec<f64>>::deserialize(de)?;
        let (m, p) = (nested.len(), nested.first().map_or(0, Vec::len));
        if nested.iter().any(|b| b.len() != p) {
            return Err(serde::de::Error::custom("BLT buffers of unequal lengths"));
        }
        let mut v = vec![0.0; m * p];
        for (i, b) in nested.iter().enumerate() {
            for (k, x) in b.iter().enumerate() {
                v[k * m + i] = *x;
            }
        }
        Ok(Buffers { m, p, v })
    }
}
