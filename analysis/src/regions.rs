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
/// many times another's.
pub const IMBALANCE_RATIO: f64 = 2.0;

/// One thread's part of a region.
struct ThreadPart {
    bytes: u64,
    executions: u64,
    seconds: f64,
}

impl ThreadPart {
    fn bytes_per_execution(&self) -> f64 {
        self.bytes as f64 / self.executions as f64
    }
}

/// A region over all its threads.
#[derive(Default)]
struct Region {
    seconds: f64,
    bytes: u64,
    /// Threads that completed an execution.
    threads: Vec<ThreadPart>,
}

impl Region {
    /// Bytes per second.
    fn bandwidth(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// The run's region findings. `duration_ns`: the run's wall-clock time.
pub fn findings(r: &Regions, duration_ns: u64) -> Vec<Finding> {
    if r.tsc_hz <= 0.0 {
        return Vec::new();
    }
    let mut by: BTreeMap<&str, Region> = BTreeMap::new();
    for row in &r.rows {
        let Some(c) = &row.counts else { continue };
        let g = by.entry(row.region.as_str()).or_default();
        let part = ThreadPart {
            bytes: c.bytes_moved(),
            executions: row.executions,
            seconds: row.seconds(r.tsc_hz),
        };
        g.seconds += part.seconds;
        g.bytes += part.bytes;
        if part.executions > 0 {
            g.threads.push(part);
        }
    }
    // The best bandwidth among the regions that moved enough (ties: the first name).
    let best = by
        .iter()
        .filter(|(_, g)| g.bytes >= MIN_BYTES)
        .map(|(n, g)| (g.bandwidth(), *n))
        .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(a.1)));
    let run_s = duration_ns as f64 / 1e9;
    let mut out = Vec::new();
    for (name, g) in &by {
        if g.bytes < MIN_BYTES {
            continue;
        }
        if let Some((top, top_name)) = best {
            if *name != top_name
                && g.seconds >= MIN_TIME_SHARE * run_s
                && g.bandwidth() < LOW_BANDWIDTH_SHARE * top
            {
                out.push(low_bandwidth(name, g, top_name, top));
            }
        }
        out.extend(thread_imbalance(name, g));
    }
    out
}

fn low_bandwidth(name: &str, g: &Region, top_name: &str, top: f64) -> Finding {
    let share = g.bandwidth() / top;
    Finding::new(
        Analysis::Regions,
        "low_bandwidth",
        format!(
            "region `{name}` moves {:.2} GB/s, {:.0}% of the run's best region `{top_name}` ({:.2} GB/s)",
            g.bandwidth() / 1e9,
            share * 100.0,
            top / 1e9
        ),
        vec![Object::new("region", name)],
        vec![],
        vec![
            Evidence::new("bandwidth", g.bandwidth() / 1e9, "GB/s"),
            Evidence::new("best_bandwidth", top / 1e9, "GB/s"),
            Evidence::new("seconds", g.seconds, "s"),
            Evidence::new("bytes", g.bytes as f64, "B"),
        ],
        Impact {
            seconds: g.seconds * (1.0 - share),
            bytes: 0,
            formula: "region_time_at_best_bandwidth".into(),
            inputs: vec![
                Evidence::new("seconds", g.seconds, "s"),
                Evidence::new("bandwidth_share", share, "fraction"),
            ],
            confidence: Confidence::Low,
        },
        format!(
            "`{name}` is latency-bound or compute-bound, not bandwidth-bound: look for dependent loads (pointer chasing, indirect indices), strided or scattered accesses and divisions in its loop; make the accesses unit-stride and independent, or block it for the cache"
        ),
    )
    .crossed(format!(
        "under {:.0}% of the best region's GB/s, at least {:.0}% of the run's time and {} MiB moved",
        LOW_BANDWIDTH_SHARE * 100.0,
        MIN_TIME_SHARE * 100.0,
        MIN_BYTES >> 20
    ))
}

fn thread_imbalance(name: &str, g: &Region) -> Option<Finding> {
    if g.threads.len() < 2 {
        return None;
    }
    let per: Vec<f64> = g
        .threads
        .iter()
        .map(ThreadPart::bytes_per_execution)
        .collect();
    let max = per.iter().copied().fold(0.0, f64::max);
    let min = per.iter().copied().fold(f64::INFINITY, f64::min).max(1.0);
    if max < IMBALANCE_RATIO * min {
        return None;
    }
    let n = g.threads.len();
    let mean_s = g.threads.iter().map(|t| t.seconds).sum::<f64>() / n as f64;
    let slowest = g.threads.iter().map(|t| t.seconds).fold(0.0, f64::max);
    Some(Finding::new(
        Analysis::Regions,
        "thread_imbalance",
        format!(
            "region `{name}`: one thread moves {:.1}x the bytes per execution of another ({n} threads)",
            max / min
        ),
        vec![Object::new("region", name)],
        vec![],
        vec![
            Evidence::new("max_bytes_per_execution", max, "B"),
            Evidence::new("min_bytes_per_execution", min, "B"),
            Evidence::new("threads", n as f64, "threads"),
        ],
        Impact {
            seconds: slowest - mean_s,
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
    )
    .crossed(format!(
        "one thread's bytes per execution at least {IMBALANCE_RATIO}x another's, in a region that moved at least {} MiB",
        MIN_BYTES >> 20
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use profcc_schema::regions::{Counts, Row, LOCAL};

    /// A row of `region` in `thread`: `bytes` loaded (not from the stack), `ms` milliseconds
    /// at a 1 GHz clock.
    fn row(region: &str, thread: u32, executions: u64, bytes: u64, ms: u64) -> Row {
        let mut c = Counts::default();
        c.load_bytes[(LOCAL + 1) % c.load_bytes.len()] = bytes;
        Row {
            region: region.into(),
            thread,
            executions,
            ticks: ms * 1_000_000,
            counts: Some(c),
            ..Default::default()
        }
    }

    fn regions(rows: Vec<Row>) -> Regions {
        Regions {
            tsc_hz: 1e9,
            rows,
            ..Default::default()
        }
    }

    #[test]
    fn slow_region_beside_a_fast_one_is_low_bandwidth() {
        // stream: 1 GB in 100 ms (10 GB/s); chase: 16 MB in 100 ms (0.16 GB/s); tiny: below
        // 1 MiB, never a finding nor the reference.
        let f = findings(
            &regions(vec![
                row("stream", 0, 1, 1 << 30, 100),
                row("chase", 0, 1, 16 << 20, 100),
                row("tiny", 0, 1, 1000, 1),
            ]),
            1_000_000_000,
        );
        let kinds: Vec<(&str, &str)> = f
            .iter()
            .map(|f| (f.kind.as_str(), f.objects[0].name.as_str()))
            .collect();
        assert_eq!(kinds, [("low_bandwidth", "chase")]);
        // Its time at the best bandwidth: 100 ms x (1 - 1/64).
        assert!((f[0].impact.seconds - 0.1 * (1.0 - 1.0 / 64.0)).abs() < 1e-9);
        // Below 1% of the run: none.
        assert!(findings(
            &regions(vec![
                row("stream", 0, 1, 1 << 30, 100),
                row("chase", 0, 1, 16 << 20, 100),
            ]),
            20_000_000_000,
        )
        .is_empty());
    }

    #[test]
    fn threads_with_unequal_bytes_per_execution_are_imbalanced() {
        let f = findings(
            &regions(vec![
                row("uneven", 1, 4, 4 << 20, 10),
                row("uneven", 2, 4, 12 << 20, 30),
            ]),
            1_000_000_000,
        );
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].kind, "thread_imbalance");
        assert_eq!(f[0].evidence[0].value / f[0].evidence[1].value, 3.0);
        // The slowest thread (30 ms) against the mean (20 ms).
        assert!((f[0].impact.seconds - 0.010).abs() < 1e-12);
        // Less than twice: balanced.
        assert!(findings(
            &regions(vec![
                row("even", 1, 4, 4 << 20, 10),
                row("even", 2, 4, 7 << 20, 17),
            ]),
            1_000_000_000,
        )
        .is_empty());
    }
}
