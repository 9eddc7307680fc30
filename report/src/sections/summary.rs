//! Header: what was profiled (one entry per input file) and the summed totals.

use super::Options;
use crate::merge::Merged;
use crate::model::{InputInfo, Summary};

pub fn build(m: &Merged, _: &Options) -> Summary {
    let inputs = m
        .inputs
        .iter()
        .map(|i| {
            let p = &i.profile;
            InputInfo {
                path: i.path.clone(),
                exe: p.exe.clone(),
                pid: p.pid,
                host: p.host.clone(),
                argv: p.argv.clone(),
                duration_ns: p.duration_ns,
                trigger: p.trigger.clone(),
                threads: p.totals.threads.max(p.threads.len() as u32),
                accesses: p.totals.accesses,
                exit_summary: p.exit_summary.clone(),
            }
        })
        .collect();
    Summary {
        inputs,
        totals: m.totals.clone(),
    }
}
