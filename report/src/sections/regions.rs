//! Regions of interest (docs/regions.md): each input's per-thread executions and time of
//! every region, as the runtime counted them.

use super::Options;
use crate::merge::Merged;
use crate::model::{RegionRow, Regions};

pub fn build(m: &Merged, _: &Options) -> Option<Regions> {
    let mut out = Regions {
        rows: Vec::new(),
        dropped: 0,
        unmatched_ends: 0,
        sample_period: 1,
        time_min_us: 0,
        events: None,
        snapshots: Vec::new(),
    };
    let mut any = false;
    for (input, i) in m.inputs.iter().enumerate() {
        let Some(r) = &i.profile.regions else {
            continue;
        };
        any = true;
        if !r.snapshots.is_empty() {
            out.snapshots.push(crate::model::RegionSnapshots {
                input,
                tsc_hz: r.tsc_hz,
                snapshots: r.snapshots.clone(),
            });
        }
        out.dropped += r.dropped;
        out.unmatched_ends += r.unmatched_ends;
        out.sample_period = out.sample_period.max(r.sample_period);
        out.time_min_us = out.time_min_us.max(r.time_min_us);
        // The first input whose events were read, else the first that tried.
        if let Some(e) = &r.events {
            let better = out
                .events
                .as_ref()
                .map_or(true, |o| o.counted.is_empty() && !e.counted.is_empty());
            if better {
                out.events = Some(e.clone());
            }
        }
        let mut rows: Vec<RegionRow> = r
            .rows
            .iter()
            .map(|row| {
                let seconds = row.seconds(r.tsc_hz);
                let gbytes_per_s = row
                    .counts
                    .as_ref()
                    .filter(|_| seconds > 0.0)
                    .map(|c| c.bytes_moved() as f64 / seconds / 1e9);
                let correction_factor = row.counts.as_ref().map(|c| c.correction_factor());
                RegionRow {
                    input,
                    region: row.region.clone(),
                    thread: row.thread,
                    executions: row.executions,
                    seconds,
                    counted_executions: row.counted_executions,
                    sampled_calls: row.sampled_calls,
                    time_samples: row.time_samples,
                    gbytes_per_s,
                    correction_factor,
                    gbytes_per_s_corrected: gbytes_per_s.zip(correction_factor).map(|(g, f)| g * f),
                    counts: row.counts.clone(),
                    events: row.events.clone(),
                }
            })
            .collect();
        rows.sort_by(|a, b| (&a.region, a.thread).cmp(&(&b.region, b.thread)));
        out.rows.extend(rows);
    }
    any.then_some(out)
}
