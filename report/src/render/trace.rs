//! `profcc report --trace FILE`: the region snapshots of every input (`roi_interval`;
//! docs/regions.md, "Snapshots") as a Chrome trace (the JSON object format Perfetto and
//! chrome://tracing open). Per input, a process (two inputs with the same pid, from two
//! machines or runs, are two processes: the second gets an unused id, its name keeps the
//! real pid); per profiled thread, a thread track with one slice per region and interval
//! the region ran in: its time inside the region in that interval, the thread's regions laid
//! one after another from the interval's start in name order, so that no two slices of a
//! thread overlap (nested regions are laid side by side too: snapshots do not say which
//! holds which), each cut at the interval's end; the interval's counts in its arguments. Per
//! region and thread, a counter track of the bytes it moved per second of the interval. Per
//! input, a counter track of the heap at each snapshot (`heap`: bytes live, and allocations
//! per second of the interval), where the profile records it. An MPI rank's process is named
//! `rank N (host)` (its program, pid and input as the process's labels) and the processes are
//! sorted by rank.

use profcc_schema::regions::{SnapRow, Snapshot};
use profcc_schema::Profile;
use serde_json::{json, Value};
use std::collections::HashMap;

/// The trace of `profiles`' snapshots (None: no input has any).
pub fn build(profiles: &[&Profile]) -> Option<Value> {
    let mut events = Vec::new();
    let mut any = false;
    // Trace process ids in use: each input's pid, or an unused id when another input has it.
    let mut used: std::collections::HashSet<u64> = std::collections::HashSet::new();
    let mut spare = profiles.iter().map(|p| p.pid as u64).max().unwrap_or(0);
    let ranked_max = profiles
        .iter()
        .filter_map(|p| p.rank)
        .max()
        .map_or(0, |k| k as u64);
    for (input, p) in profiles.iter().enumerate() {
        let Some(g) = p.regions.as_ref().filter(|g| !g.snapshots.is_empty()) else {
            continue;
        };
        any = true;
        let pid = if used.insert(p.pid as u64) {
            p.pid as u64
        } else {
            spare += 1;
            used.insert(spare);
            spare
        };
        let real = p.pid;
        let exe = p.exe.rsplit('/').next().unwrap_or(&p.exe);
        // An MPI rank's process is named by its rank and host, its program and pid as labels.
        let name = match p.rank {
            Some(k) => format!("rank {k} ({})", p.host),
            None if profiles.len() > 1 => format!("{exe} (pid {real}, input {input})"),
            None => format!("{exe} (pid {real})"),
        };
        events.push(json!({"ph": "M", "name": "process_name", "pid": pid,
            "args": {"name": name}}));
        if p.rank.is_some() {
            events.push(json!({"ph": "M", "name": "process_labels", "pid": pid,
                "args": {"labels": format!("{exe} (pid {real}, input {input})")}}));
        }
        // By rank, then inputs without one in command-line order.
        let sort_index = match p.rank {
            Some(k) => k as u64,
            None => ranked_max + 1 + input as u64,
        };
        events.push(json!({"ph": "M", "name": "process_sort_index", "pid": pid,
            "args": {"sort_index": sort_index}}));
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
            heap(pid, prev, cur, &mut events);
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

/// The heap counters at `cur` (none where the profile does not record the heap): the bytes
/// live then, and the allocations per second since `prev`.
fn heap(pid: u64, prev: &Snapshot, cur: &Snapshot, events: &mut Vec<Value>) {
    let Some(h) = cur.heap else {
        return;
    };
    let ts = cur.ns as f64 / 1e3;
    events.push(
        json!({"ph": "C", "name": "heap live bytes", "pid": pid, "ts": ts,
        "args": {"bytes": h.live_bytes}}),
    );
    let before = prev.heap.map_or(0, |p| p.allocations);
    let secs = cur.ns.saturating_sub(prev.ns) as f64 / 1e9;
    if secs > 0.0 {
        let rate = h.allocations.saturating_sub(before) as f64 / secs;
        events.push(
            json!({"ph": "C", "name": "heap allocations/s", "pid": pid, "ts": ts,
            "args": {"allocations/s": rate}}),
        );
    }
}

fn counter_name(r: &SnapRow) -> String {
    format!("{} GB/s (thread {})", r.region, r.thread)
}

/// The slices and counter samples of the interval from `prev` to `cur`.
fn intervals(pid: u64, tsc_hz: f64, prev: &Snapshot, cur: &Snapshot, events: &mut Vec<Value>) {
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
    let end = cur.ns as f64 / 1e3;
    // Per thread, where its next slice starts.
    let mut next: HashMap<u32, f64> = HashMap::new();
    let mut rows: Vec<&SnapRow> = cur.rows.iter().collect();
    rows.sort_by(|a, b| {
        a.thread
            .cmp(&b.thread)
            .then_with(|| a.region.cmp(&b.region))
    });
    for r in rows {
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
        let start = next.get(&r.thread).copied().unwrap_or(ts);
        let dur = inside_us.min(end - start).max(0.0);
        next.insert(r.thread, start + dur);
        events.push(
            json!({"ph": "X", "name": r.region, "pid": pid, "tid": r.thread,
            "ts": start, "dur": dur,
            "args": {"executions": executions, "bytes_read": read, "bytes_written": written,
                     "instructions": instructions, "GB/s over the interval": gbs}}),
        );
    }
}
