//! Header: what was profiled (one entry per input file) and the summed totals.

use super::Options;
use crate::merge::Merged;
use crate::model::{self, InputInfo, Summary};

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
                rank: p.rank,
                argv: p.argv.clone(),
                duration_ns: p.duration_ns,
                trigger: p.trigger.clone(),
                threads: p.totals.threads.max(p.threads.len() as u32),
                accesses: p.totals.accesses,
                exit_summary: p.exit_summary.clone(),
                allocator: allocator(&p.allocator),
                options: p.options.clone(),
            }
        })
        .collect();
    Summary {
        inputs,
        totals: m.totals.clone(),
    }
}

/// Name the allocator from the profile's identification lines (the allocator probe's rules).
fn allocator(lines: &[String]) -> Option<model::Allocator> {
    if lines.is_empty() {
        return None;
    }
    Some(match profcc_allocator_probe::identify_by_symbols(lines) {
        Some(i) => model::Allocator {
            name: i.name,
            version: i.version,
            object: i.object.unwrap_or_else(|| "?".into()),
            identified_by: i.identified_by,
        },
        None => model::Allocator {
            name: "unknown".into(),
            version: None,
            object: lines
                .iter()
                .find_map(|l| l.strip_prefix("object "))
                .unwrap_or("?")
                .to_string(),
            identified_by:
                "no identifying symbol (profcc detect-allocator --exe PROGRAM measures it)".into(),
        },
    })
}
