//! `profcc monitor PID`: live per-region bandwidth of a running program. The program's
//! runtime publishes every thread's cumulative region counts each `roi_interval`
//! (`profcc_schema::regions::Live` in `/dev/shm/profcc-roi-PID.json`, replaced whole); this
//! reads it every `--interval` seconds and prints, per region and thread, what changed since
//! the previous snapshot it saw: executions per second, bytes read and written per second of
//! the interval, the share of the interval spent inside the region, and the bandwidth while
//! inside it (docs/regions.md, "Snapshots").

use profcc_schema::regions::{live_path, want_path, Live, SnapRow, MAX_INTERVAL_MS};
use std::collections::HashMap;
use std::io::Write;

#[derive(clap::Args, Debug)]
pub struct MonitorArgs {
    /// The process to watch (built with profcc; started with PROFCC_OPTIONS=roi_interval=MS,
    /// or asked to begin publishing now)
    pub pid: u32,
    /// Seconds between two readings
    #[arg(long, default_value_t = 1.0, value_name = "SECONDS")]
    pub interval: f64,
    /// Stop after N readings (0: until the process ends)
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub count: u64,
}

pub const ABOUT: &str =
    "Print the live bandwidth of each region (PROFCC_ROI markers) per thread of a running profcc-built program";

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// The published counts (None: no file, or caught between its write and rename).
fn read(pid: u32) -> Option<Live> {
    let bytes = std::fs::read(live_path(pid)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

pub fn run(a: &MonitorArgs) -> i32 {
    if !(a.interval > 0.0 && a.interval <= 3600.0) {
        eprintln!(
            "profcc monitor: --interval {}: give seconds between 0 and 3600",
            a.interval
        );
        return 2;
    }
    if !alive(a.pid) {
        eprintln!("profcc monitor: no process {}", a.pid);
        return 1;
    }
    let mut prev = match read(a.pid).or_else(|| ask(a.pid, a.interval)) {
        Some(l) => l,
        None => {
            eprintln!(
                "profcc monitor: process {} publishes no region counts and did not answer the request in {} (it is not built with profcc, has no region marked with PROFCC_ROI_BEGIN/END or LIKWID, Caliper, PAPI markers, or ended none in the last seconds): start it with PROFCC_OPTIONS=roi_interval=100 to publish from the start",
                a.pid,
                want_path(a.pid)
            );
            return 1;
        }
    };
    let out = std::io::stdout();
    let mut out = out.lock();
    let _ = writeln!(
        out,
        "profcc monitor: pid {} ({}), a snapshot every {} ms",
        a.pid, prev.exe, prev.interval_ms
    );
    let mut printed = 0;
    loop {
        std::thread::sleep(std::time::Duration::from_secs_f64(a.interval));
        let Some(cur) = read(a.pid) else {
            if !alive(a.pid) || !std::path::Path::new(&live_path(a.pid)).exists() {
                let _ = writeln!(out, "process {} ended", a.pid);
                return 0;
            }
            continue;
        };
        if cur.snapshot.ns <= prev.snapshot.ns {
            continue;
        }
        let _ = out.write_all(block(&prev, &cur).as_bytes());
        let _ = out.flush();
        prev = cur;
        printed += 1;
        if a.count > 0 && printed >= a.count {
            return 0;
        }
    }
}

/// Asks process `pid` to begin publishing (`want_path`: a snapshot every half `interval`
/// seconds) and waits for its first snapshot: a few seconds, as the runtime looks for the
/// request at most once a second at a region's end. Removes the request when unanswered.
fn ask(pid: u32, interval: f64) -> Option<Live> {
    let ms = ((interval * 500.0) as u64).clamp(10, MAX_INTERVAL_MS);
    let want = want_path(pid);
    let dir = std::path::Path::new(&want).parent()?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).ok()?;
    writeln!(tmp, "{ms}").ok()?;
    tmp.persist(&want).ok()?;
    let deadline = std::time::Instant::now()
        + std::time::Duration::from_secs_f64(3.0 + 2.0 * ms as f64 / 1000.0);
    while std::time::Instant::now() < deadline && alive(pid) {
        std::thread::sleep(std::time::Duration::from_millis(50));
        if let Some(l) = read(pid) {
            return Some(l);
        }
    }
    let _ = std::fs::remove_file(&want);
    None
}

/// What changed from `prev` to `cur`, one line per region and thread that ran.
fn block(prev: &Live, cur: &Live) -> String {
    let before: HashMap<(&str, u32), &SnapRow> = prev
        .snapshot
        .rows
        .iter()
        .map(|r| ((r.region.as_str(), r.thread), r))
        .collect();
    let dt = (cur.snapshot.ns - prev.snapshot.ns) as f64 / 1e9;
    let mut s = format!(
        "\nt = {:.2} s\n  {:<24} {:>6} {:>12} {:>10} {:>10} {:>7} {:>12}\n",
        cur.snapshot.ns as f64 / 1e9,
        "region",
        "thread",
        "exec/s",
        "read GB/s",
        "write GB/s",
        "inside",
        "GB/s inside"
    );
    let mut rows: Vec<&SnapRow> = cur.snapshot.rows.iter().collect();
    rows.sort_by(|a, b| (&a.region, a.thread).cmp(&(&b.region, b.thread)));
    let zero = SnapRow::default();
    for r in rows {
        let b = before
            .get(&(r.region.as_str(), r.thread))
            .copied()
            .unwrap_or(&zero);
        let d = |f: fn(&SnapRow) -> u64| f(r).saturating_sub(f(b)) as f64;
        let (read, written, execs, ticks) = (
            d(|x| x.bytes_read),
            d(|x| x.bytes_written),
            d(|x| x.executions),
            d(|x| x.ticks),
        );
        if read + written + execs + ticks == 0.0 {
            continue;
        }
        let inside = if cur.tsc_hz > 0.0 {
            ticks / cur.tsc_hz
        } else {
            0.0
        };
        s.push_str(&format!(
            "  {:<24} {:>6} {:>12.0} {:>10.2} {:>10.2} {:>6.0}% {:>12}\n",
            r.region,
            r.thread,
            execs / dt,
            read / dt / 1e9,
            written / dt / 1e9,
            (inside / dt * 100.0).min(100.0),
            if inside > 0.0 {
                format!("{:.2}", (read + written) / inside / 1e9)
            } else {
                "-".into()
            }
        ));
    }
    s
}
