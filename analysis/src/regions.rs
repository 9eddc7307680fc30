//! Region findings (docs/regions.md, "Findings"): a region far below the bandwidth the run
//! reaches, and a region whose bytes per execution differ much between threads. From the
//! profile's `regions` records, for the report and the runtime's exit summary alike.

use crate::findings::{Analysis, Confidence, Evidence, Finding, Impact, Object};
use profcc_schema::regions::Regions;
use std::collections::BTreeMap;

/// A region whose bandwidth is below this share of the run's best region's is slow...
pub const LOW_BANDWIDTH_SHARE: f64 = 0.25;
/// ... when it holds at least this share of the run's wall-clock time (summed over threads),
/// and moved at least `MIN_BYTES`.
pub const MIN_TIME_SHARE: f64 = 0.01;
pub const MIN_BYTES: u64 = 1 << 20;
/// A region's threads are imbalanced when one thread's bytes per execution are at least this
/// many times another's (each with at least `MIN_EXECUTIONS`).
pub const IMBALANCE_RATIO: f64 = 2.0;
pub const MIN_EXECUTIONS: u64 = 1;

struct Sum {
    seconds: f64,
    bytes: u64,
    /// Per thread: (bytes, executions, seconds).
    threads: Vec<(u32, u64, u64, f64)>,
}

/// The run's region findings. `duration_ns`: the run's wall-clock time.
pub fn findings(r: &Regions, duration_ns: u64) -> Vec<Finding> {
    let hz = if r.tsc_hz > 0.0 {
        r.tsc_hz
    } else {
        return Vec::new();
    };
    let mut by: BTreeMap<&str, Sum> = BTreeMap::new();
    for row in &r.rows {
        let Some(c) = &row.counts else { continue };
        let s = by.entry(row.region.as_str()).or_insert(Sum {
            seconds: 0.0,
            bytes: 0,
            threads: Vec::new(),
        });
        let secs = row.ticks as f64 / hz;
        let b = c.bytes_read() + c.bytes_written();
        s.seconds += secs;
        s.bytes += b;
        s.threads.push((row.thread, b, row.executions, secs));
    }
    let bw = |s: &Sum| {
        if s.seconds > 0.0 {
            s.bytes as f64 / s.seconds
        } else {
            0.0
        }
    };
    let best = by
        .iter()
        .filter(|(_, s)| s.bytes >= MIN_BYTES)
        .map(|(n, s)| (bw(s), *n))
        .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(a.1)));
    let run_s = duration_ns as f64 / 1e9;
    let mut out = Vec::new();
    for (name, s) in &by {
        let gbs = bw(s) / 1e9;
        if let Some((top, top_name)) = best {
            if *name != top_name
                && s.bytes >= MIN_BYTES
                && s.seconds >= MIN_TIME_SHARE * run_s
                && bw(s) < LOW_BANDWIDTH_SHARE * top
            {
                let saved = s.seconds * (1.0 - bw(s) / top);
                out.push(Finding::new(
                    Analysis::Regions,
                    "low_bandwidth",
                    format!(
                        "region `{name}` moves {gbs:.2} GB/s, {:.0}% of the run's best region `{top_name}` ({:.2} GB/s)",
                        bw(s) / top * 100.0,
                        top / 1e9
                    ),
                    vec![Object::new("region", *name)],
                    vec![],
                    vec![
                        Evidence::new("bandwidth", gbs, "GB/s"),
                        Evidence::new("best_bandwidth", top / 1e9, "GB/s"),
                        Evidence::new("seconds", s.seconds, "s"),
                        Evidence::new("bytes", s.bytes as f64, "B"),
                    ],
                    Impact {
                        seconds: saved,
                        bytes: 0,
                        formula: "region_time_at_best_bandwidth".into(),
                        inputs: vec![
                            Evidence::new("seconds", s.seconds, "s"),
                            Evidence::new("bandwidth_share", bw(s) / top, "fraction"),
                        ],
                        confidence: Confidence::Low,
                    },
                    format!(
                        "`{name}` is latency-bound or compute-bound, not bandwidth-bound: look for dependent loads (pointer chasing, indirect indices), strided or scattered accesses and divisions in its loop; make the accesses unit-stride and independent, or block it for the cache"
                    ),
                ));
            }
        }
        let per_exec: Vec<(u32, f64, f64)> = s
            .threads
            .iter()
            .filter(|t| t.2 >= MIN_EXECUTIONS)
            .map(|t| (t.0, t.1 as f64 / t.2 as f64, t.3))
            .collect();
        if per_exec.len() >= 2 {
            let max = per_exec
                .iter()
                .max_by(|a, b| a.1.total_cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
                .unwrap();
            let min = per_exec
                .iter()
                .min_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)))
                .unwrap();
            if min.1 >= 0.0 && max.1 >= IMBALANCE_RATIO * min.1.max(1.0) && s.bytes >= MIN_BYTES {
                let mean_s = per_exec.iter().map(|t| t.2).sum::<f64>() / per_exec.len() as f64;
                let slowest = per_exec.iter().map(|t| t.2).fold(0.0, f64::max);
                out.push(Finding::new(
                    Analysis::Regions,
                    "thread_imbalance",
                    format!(
                        "region `{name}`: one thread moves {:.1}x the bytes per execution of another ({} threads)",
                        max.1 / min.1.max(1.0),
                        per_exec.len()
                    ),
                    vec![Object::new("region", *name)],
                    vec![],
                    vec![
                        Evidence::new("max_bytes_per_execution", max.1, "B"),
                        Evidence::new("min_bytes_per_execution", min.1, "B"),
                        Evidence::new("threads", per_exec.len() as f64, "threads"),
                    ],
                    Impact {
                        seconds: (slowest - mean_s).max(0.0),
                        bytes: 0,
                        formula: "slowest_thread_minus_mean".into(),
                        inputs: vec![
                            Evidence::new("slowest_thread_seconds", slowest, "s"),
                            Evidence::new("mean_thread_seconds", mean_s, "s"),
                        ],
                        confidence: Confidence::Medium,
                    },
                    format!(
                        "`{name}` gives its threads unequal work: split the iteration space by work, not by count (a dynamic or guided schedule, or partition by the bytes each part touches)"
                    ),
                ));
            }
        }
    }
    out
}
