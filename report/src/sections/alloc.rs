//! Allocation sites with their symbolised call stacks.

use super::Options;
use crate::merge::Merged;
use crate::model::{AllocSites, Frame, InputAllocs};

pub fn build(m: &Merged, opts: &Options) -> AllocSites {
    let mut sites = m.alloc_sites.clone();
    if m.inputs.len() > 1 {
        for (s, per) in sites.iter_mut().zip(&m.alloc_by_input) {
            s.by_input = per
                .iter()
                .filter(|x| x.1 > 0 || x.2 > 0)
                .map(|&(input, count, bytes)| InputAllocs {
                    input,
                    count,
                    bytes,
                })
                .collect();
        }
    }
    sites.sort_by(|x, y| {
        y.bytes
            .cmp(&x.bytes)
            .then(y.count.cmp(&x.count))
            .then(y.live_bytes_peak.cmp(&x.live_bytes_peak))
            .then_with(|| {
                x.stack
                    .first()
                    .map(Frame::key)
                    .cmp(&y.stack.first().map(Frame::key))
            })
    });
    let sites_total = sites.len();
    sites.truncate(opts.limit(sites_total));
    for (n, s) in sites.iter_mut().enumerate() {
        s.rank = n + 1;
    }
    AllocSites { sites_total, sites }
}
