//! `profcc report --trace FILE`: the region snapshots of every input (`roi_interval`;
//! docs/regions.md, "Snapshots") as a Chrome trace (the JSON object format Perfetto and
//! chrome://tracing open). Per input, a process; per profiled thread, a thread track with
//! one slice per region and interval the region ran in (its time inside the region in that
//! interval, from the interval's start; the interval's counts in its arguments); per region
//! and thread, a counter track of the bytes it moved per second of the interval.

use profcc_schema::regions::{SnapRow, Snapshot};
use profcc_schema::Profile;
use serde_json::{json, Value};
use std::collections::HashMap;

/// The trace of `profiles`' snapshots (None: no input has any).
pub fn build(profiles: &[&Profile]) -> Option<Value> {
    let mut events = Vec::new();
    let mut any = false;
    for p in profiles {
        let Some(g) = p.regions.as_ref().filter(|g| !g.snapshots.is_empty()) else {
            continue;
        };
        any = true;
        let pid = p.pid;
        let exe = p.exe.rsplit('/').next().unwrap_or(&p.exe);
        events.push(json!({"ph": "M", "name": "process_name", "pid": pid,
            "args": {"name": format!("{exe} (pid {pid})")}}));
        let mut threads: Vec<u32> = g
            .snapshots
            .iter()
            .flat_map(|s| s.rows.iter().map(|r| r.thread))
            .collect();
        threads.sort_unstable();
        threads.dedup();
        for t in threads {
            events.push(
                json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": t,
                "args": {"name": format!("thread {t}")}}),
            );
        }
        let zero = Snapshot::default();
        let mut prev = &zero;
        for cur in &g.snapshots {
            intervals(pid, g.tsc_hz, prev, cur, &mut events);
            prev = cur;
        }
        // Every counter back to 0 at the end.
        let end_us = prev.ns as f64 / 1e3;
        for r in &prev.rows {
            events.push(json!({"ph": "C", "name": counter_name(r), "pid": pid,
                "ts": end_us, "args": {"GB/s": 0.0}}));
        }
    }
    any.then(|| json!({"traceEvents": events, "displayTimeUnit": "ms"}))
}

fn counter_name(r: &SnapRow) -> String {
    format!("{} GB/s (thread {})", r.region, r.thread)
}

/// The slices and counter samples of the interval from `prev` to `cur`.
fn intervals(pid: u32, tsc_hz: f64, prev: &Snapshot, cur: &Snapshot, events: &mut Vec<Value>) {
    let before: HashMap<(&str, u32), &SnapRow> = prev
        .rows
        .iter()
        .map(|r| ((r.region.as_str(), r.thread), r))
        .collect();
    let dt_ns = cur.ns.saturating_sub(prev.ns);
    if dt_ns == 0 {
        return;
    }
    let ts = prev.ns as f64 / 1e3;
    for r in &cur.rows {
        let zero = SnapRow::default();
        let b = before
            .get(&(r.region.as_str(), r.thread))
            .copied()
            .unwrap_or(&zero);
        let d = |f: fn(&SnapRow) -> u64| f(r).saturating_sub(f(b));
        let (read, written) = (d(|x| x.bytes_read), d(|x| x.bytes_written));
        let (executions, ticks, instructions) =
            (d(|x| x.executions), d(|x| x.ticks), d(|x| x.instructions));
        let gbs = (read + written) as f64 / dt_ns as f64;
        events.push(
            json!({"ph": "C", "name": counter_name(r), "pid": pid, "ts": ts,
            "args": {"GB/s": gbs}}),
        );
        if read + written + executions + ticks + instructions == 0 {
            continue;
        }
        let inside_us = if tsc_hz > 0.0 {
            ticks as f64 / tsc_hz * 1e6
        } else {
            0.0
        };
        events.push(
            json!({"ph": "X", "name": r.region, "pid": pid, "tid": r.thread,
            "ts": ts, "dur": inside_us.min(dt_ns as f64 / 1e3),
            "args": {"executions": executions, "bytes_read": read, "bytes_written": written,
                     "instructions": instructions, "GB/s over the interval": gbs}}),
        );
    }
}
