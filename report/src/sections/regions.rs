//! Regions of interest (docs/regions.md): each input's per-thread executions and time of
//! every region, as the runtime counted them.

use super::Options;
use crate::merge::Merged;
use crate::model::{RegionRow, RegionTotal, Regions};
use profcc_schema::regions::bandwidth_share;

pub fn build(m: &Merged, _: &Options) -> Option<Regions> {
    let mut out = Regions {
        rows: Vec::new(),
        dropped: 0,
        unmatched_ends: 0,
        sample_period: 1,
        time_min_us: 0,
        events: None,
        snapshots: Vec::new(),
        machine_bandwidth: m
            .inputs
            .iter()
            .map(|i| i.profile.regions.as_ref().and_then(|r| r.machine_bandwidth))
            .collect(),
        totals: Vec::new(),
    };
    let mut any = false;
    for (input, i) in m.inputs.iter().enumerate() {
        let Some(r) = &i.profile.regions else {
            continue;
        };
        any = true;
        let machine = r.machine_bandwidth;
        if !r.snapshots.is_empty() {
            out.snapshots.push(crate::model::RegionSnapshots {
                input,
                tsc_hz: r.tsc_hz,
                snapshots: r.snapshots.clone(),
                heap_objects: r
                    .snapshots
                    .iter()
                    .flat_map(|s| &s.sites)
                    .filter_map(|x| Some((x.stack, i.heap_objects.get(&x.stack)?.clone())))
                    .collect(),
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
                    machine_share: gbytes_per_s
                        .zip(machine)
                        .and_then(|(g, b)| bandwidth_share(g, b.single_gbps())),
                    counts: row.counts.clone(),
                    events: row.events.clone(),
                }
            })
            .collect();
        rows.sort_by(|a, b| (&a.region, a.thread).cmp(&(&b.region, b.thread)));
        out.totals.extend(totals(input, &rows, machine));
        out.rows.extend(rows);
    }
    any.then_some(out)
}

/// Each region's threads together (`rows`: one input's, sorted by region).
fn totals(
    input: usize,
    rows: &[RegionRow],
    machine: Option<profcc_schema::regions::Bandwidth>,
) -> Vec<RegionTotal> {
    let mut out: Vec<RegionTotal> = Vec::new();
    for r in rows {
        if out.last().is_none_or(|t| t.region != r.region) {
            out.push(RegionTotal {
                input,
                region: r.region.clone(),
                threads: 0,
                executions: 0,
                bytes: None,
                seconds: 0.0,
                gbytes_per_s: None,
                machine_share: None,
            });
        }
        let t = out.last_mut().unwrap();
        t.threads += 1;
        t.executions += r.executions;
        t.seconds = t.seconds.max(r.seconds);
        if let Some(c) = &r.counts {
            t.bytes = Some(t.bytes.unwrap_or(0) + c.bytes_moved());
        }
    }
    for t in &mut out {
        t.gbytes_per_s = t
            .bytes
            .filter(|_| t.seconds > 0.0)
            .map(|b| b as f64 / t.seconds / 1e9);
        t.machine_share = t
            .gbytes_per_s
            .zip(machine)
            .and_then(|(g, b)| bandwidth_share(g, b.all_gbps()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use profcc_schema::regions::{Bandwidth, Counts};

    fn row(region: &str, thread: u32, seconds: f64, load_bytes: u64) -> RegionRow {
        RegionRow {
            input: 0,
            region: region.into(),
            thread,
            executions: 1,
            seconds,
            counted_executions: None,
            sampled_calls: None,
            time_samples: None,
            counts: Some(Counts {
                load_bytes: [load_bytes, 0, 0, 0],
                ..Counts::default()
            }),
            gbytes_per_s: None,
            correction_factor: None,
            gbytes_per_s_corrected: None,
            machine_share: None,
            events: None,
        }
    }

    /// A region's total: its threads' bytes over the longest thread's time, against the
    /// machine's all-threads figure.
    #[test]
    fn region_totals_are_bytes_over_the_longest_thread_against_all_threads() {
        let machine = Bandwidth {
            copy_single: 5.0,
            triad_single: 4.0,
            copy_all: 8.0,
            triad_all: 10.0,
            threads: 2,
            array_bytes: 1 << 27,
        };
        // 3 GB + 1 GB in 0.5 s (the longer thread): 8 GB/s, 80% of 10.
        let rows = [
            row("a", 0, 0.5, 3_000_000_000),
            row("a", 1, 0.25, 1_000_000_000),
            row("b", 0, 0.0, 10),
        ];
        let t = totals(0, &rows, Some(machine));
        assert_eq!(t.len(), 2);
        assert_eq!((t[0].threads, t[0].bytes), (2, Some(4_000_000_000)));
        assert_eq!(t[0].seconds, 0.5);
        assert_eq!(t[0].gbytes_per_s, Some(8.0));
        assert_eq!(t[0].machine_share, Some(0.8));
        // No time: no GB/s, no share; not calibrated: no share.
        assert_eq!((t[1].gbytes_per_s, t[1].machine_share), (None, None));
        assert_eq!(totals(0, &rows, None)[0].machine_share, None);
    }
}
