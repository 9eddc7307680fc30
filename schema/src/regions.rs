//! Regions of interest (`PROFCC_ROI_BEGIN`/`PROFCC_ROI_END`; docs/regions.md): the runtime's
//! per-thread counts of each region.

use serde::{Deserialize, Serialize};

/// Address classes of the by-space arrays in [`Counts`], in order (heap, global, stack,
/// local: docs/regions.md).
pub use profcc_abi::roi::{SPACES, SPACE_NAMES};
/// The index of the non-escaping stack slots, counted apart from the bytes a region reaches.
pub const LOCAL: usize = profcc_abi::roi::Space::Local as usize;

/// The runtime's limits (rt/src/analyses/regions.rs), named in the report: most distinct
/// region names in a run, most regions open at once in a thread, longest name kept (bytes).
pub const MAX_REGIONS: usize = 256;
pub const MAX_DEPTH: usize = 32;
pub const NAME_MAX: usize = 63;

/// Time sampling (`roi_time`; docs/regions.md, "Time"): a region's executions shorter than
/// `roi_time` microseconds on average are timed one in `TIME_SAMPLE` at random, each timed one
/// weighing `TIME_SAMPLE`...
pub const TIME_SAMPLE: u64 = 16;
/// ...once this many of them were counted in the thread (all timed).
pub const TIME_EXACT_FIRST: u64 = 256;

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Regions {
    /// TSC ticks per second, calibrated over the run against CLOCK_MONOTONIC.
    pub tsc_hz: f64,
    /// One row per region and thread that completed at least one execution.
    pub rows: Vec<Row>,
    /// Markers that could not be filed: a name past `MAX_REGIONS`, a begin past `MAX_DEPTH`,
    /// a marker before the thread was known to the runtime.
    #[serde(default)]
    pub dropped: u64,
    /// Ends with no open region of that name in the thread.
    #[serde(default)]
    pub unmatched_ends: u64,
    /// `roi_sample`: after its first `sample_period` executions in a thread, a region's code
    /// is counted and timed on one execution in `sample_period`, and those counts and ticks
    /// are multiplied by it (1: every execution; docs/regions.md, "Sampling").
    #[serde(default = "default_sample_period")]
    pub sample_period: u64,
    /// `roi_time` (microseconds): executions of a region shorter than this on average are
    /// timed one in `TIME_SAMPLE` (`Row::time_samples`; 0: every execution timed; absent in
    /// profiles from before it).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub time_min_us: u64,
    /// What the perf events of `Row::events` could count (absent: `roi_events=0`, or a
    /// profile from before them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<EventStatus>,
    /// `roi_interval` (ms; 0: no snapshots). After `MAX_SNAPSHOTS` the runtime keeps every
    /// other snapshot and doubles it: this is the interval at the end.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub interval_ms: u64,
    /// Every thread's cumulative counts at each interval, and once more at the dump
    /// (docs/regions.md, "Snapshots"): `profcc report --trace` makes a Chrome trace of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub snapshots: Vec<Snapshot>,
    /// The machine's memory bandwidth as `profcc calibrate` measured it, from its cache when
    /// the program dumped (absent: this machine was not calibrated, or a calibration or a
    /// profile from before the bandwidth was measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_bandwidth: Option<Bandwidth>,
}

/// STREAM-shaped memory bandwidth (`profcc calibrate`; docs/regions.md, "Against the
/// machine's bandwidth"): GB/s (10^9 bytes/s), bytes counted as STREAM counts them (copy
/// `a[i] = b[i]`: 16 bytes per element, triad `a[i] = b[i] + s * c[i]`: 24), the best of a few
/// repetitions, one thread and one thread per online CPU.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, Default, PartialEq)]
pub struct Bandwidth {
    pub copy_single: f64,
    pub triad_single: f64,
    pub copy_all: f64,
    pub triad_all: f64,
    /// Threads of the all-threads figures.
    pub threads: u32,
    /// Bytes of each of the kernels' arrays.
    pub array_bytes: u64,
}

impl Bandwidth {
    /// The best one thread reached (the larger of copy and triad), GB/s.
    pub fn single_gbps(&self) -> f64 {
        self.copy_single.max(self.triad_single)
    }
    /// The best every thread together reached, GB/s.
    pub fn all_gbps(&self) -> f64 {
        self.copy_all.max(self.triad_all)
    }
}

/// `gbps` as a share of the machine's `machine_gbps` (1.0: as fast as the machine's best;
/// None when the machine's figure is not positive).
pub fn bandwidth_share(gbps: f64, machine_gbps: f64) -> Option<f64> {
    (machine_gbps > 0.0 && gbps.is_finite()).then(|| gbps / machine_gbps)
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

/// Snapshots a profile keeps at most (then every other one is dropped).
pub const MAX_SNAPSHOTS: usize = 2048;

/// The cumulative counts of every region and thread at one moment.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Snapshot {
    /// Nanoseconds since the runtime started (CLOCK_MONOTONIC).
    pub ns: u64,
    pub rows: Vec<SnapRow>,
    /// The whole process's heap at that moment (absent in profiles before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heap: Option<HeapNow>,
    /// Allocation sites whose counts changed since the snapshot that last listed them, with
    /// their cumulative counts now: at most [`MAX_SNAPSHOT_SITES`], those that changed most,
    /// except in the dump's own last snapshot, which lists every change. A site's counts are
    /// exact at the snapshots that list it; between them its changes wait for the next one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sites: Vec<SiteNow>,
}

/// Most allocation sites one snapshot lists ([`Snapshot::sites`]).
pub const MAX_SNAPSHOT_SITES: usize = 32;

/// One allocation site's counts since the start, at a snapshot (as its `alloc_sites` entry).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, Default, PartialEq)]
pub struct SiteNow {
    /// The site's stack id (its `AllocSite::stack`).
    pub stack: u32,
    pub allocations: u64,
    pub bytes: u64,
    pub frees: u64,
    pub live_bytes: u64,
}

/// The process's allocation totals at a snapshot, cumulative since the start (as the
/// profile's `totals`), and the bytes live then.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, Default, PartialEq)]
pub struct HeapNow {
    pub allocations: u64,
    pub frees: u64,
    pub bytes_allocated: u64,
    pub live_bytes: u64,
}

/// One region in one thread, cumulative since the start: executions completed, TSC ticks
/// inside it (the executions still open included, up to the snapshot), and what its code
/// did (scaled as the dump's are under sampling). A countable loop counts its iterations
/// at its entry, and an execution in progress may leave a few blocks' counts for the next
/// snapshot: a snapshot's bytes are exact only between executions.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct SnapRow {
    pub region: String,
    pub thread: u32,
    pub executions: u64,
    pub ticks: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub instructions: u64,
}

/// What a running program publishes for `profcc monitor` (`/dev/shm/profcc-roi-PID.json`,
/// replaced whole at each `roi_interval`).
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Live {
    pub pid: u32,
    pub exe: String,
    /// TSC ticks per second so far.
    pub tsc_hz: f64,
    pub interval_ms: u64,
    pub snapshot: Snapshot,
}

/// Where process `pid` publishes its `Live` counts.
pub fn live_path(pid: u32) -> String {
    format!("/dev/shm/profcc-roi-{pid}.json")
}

/// Where `profcc monitor` asks process `pid`, started without `roi_interval`, to begin
/// publishing: the file holds the interval in milliseconds (decimal); the runtime looks for it
/// at most once a second, at a timed region's end or a call it samples, takes it only from
/// the process's own user, and removes it.
pub fn want_path(pid: u32) -> String {
    format!("/dev/shm/profcc-roi-{pid}.want")
}

/// Longest snapshot interval a request may ask for (as `roi_interval`'s bound).
pub const MAX_INTERVAL_MS: u64 = 3_600_000;

/// `Row::events` order (rt/src/analyses/regions.rs opens them: instructions retired, L1D
/// read misses, last-level cache misses, page faults).
pub const EVENTS: [&str; 4] = [
    "instructions",
    "l1d_read_misses",
    "llc_misses",
    "page_faults",
];

/// The perf events read around counted executions (`roi_events`; docs/regions.md,
/// "Hardware counters").
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct EventStatus {
    /// "hardware" (the CPU's counters and page faults), "software" (page faults only: the
    /// machine gives this process no hardware counters), "unavailable" (`perf_event_open`
    /// refused every event), or "not read" (no execution was long enough).
    pub mode: String,
    /// Why hardware counters or all events are missing (the refused call's error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// The events counted, in `EVENTS` order (a subset of it).
    pub counted: Vec<String>,
    /// `roi_events`: events are read on a counted execution when the region's counted
    /// executions so far lasted this many microseconds on average (and on its first).
    pub min_us: u64,
}

/// A profile without `sample_period` counted every execution.
pub fn default_sample_period() -> u64 {
    1
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Row {
    /// The name given to the markers (at most `NAME_MAX` bytes).
    pub region: String,
    /// Dense thread id (as in `threads`).
    pub thread: u32,
    /// Completed executions (a begin matched by its end).
    pub executions: u64,
    /// TSC ticks inside the region, begin to end (a region nested in itself: from its
    /// outermost begin). Sampled (`sample_period` > 1): the exact executions' ticks plus
    /// `sample_period` times the sampled ones'.
    pub ticks: u64,
    /// Executions whose code was counted and timed: each of the first `sample_period`, then
    /// the sampled ones (equal to `executions` without sampling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted_executions: Option<u64>,
    /// With `sample_period` > 1: calls into counted functions counted at 1 in
    /// `sample_period` (each weighs `sample_period` in `counts`) while this region was the
    /// innermost open one: the calls past each exact execution's first `sample_period`
    /// (docs/regions.md, "Sampling inside an execution").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampled_calls: Option<u64>,
    /// Executions timed at one in `TIME_SAMPLE` (each weighs `TIME_SAMPLE` in `ticks`):
    /// those of a region shorter than `roi_time` on average (docs/regions.md, "Time").
    /// Absent: every counted execution was timed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_samples: Option<u64>,
    /// What the region's code did in this thread (absent: the module has no region
    /// counters), derived from the pass's counters and each block's static mix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<Counts>,
    /// Executions whose perf events were read (weighed as `ticks`: the exact ones, plus
    /// `sample_period` times the sampled ones) and the events summed over them, in `EVENTS`
    /// order (0 for an event not counted). Absent: no execution read them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<RowEvents>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct RowEvents {
    pub executions: u64,
    pub values: Vec<u64>,
}

impl Row {
    /// Seconds inside the region (its ticks at the profile's `tsc_hz`; 0 when that is unknown).
    pub fn seconds(&self, tsc_hz: f64) -> f64 {
        if tsc_hz > 0.0 {
            self.ticks as f64 / tsc_hz
        } else {
            0.0
        }
    }
}

impl RowEvents {
    /// Event `i` over all the row's executions: the mean of those that read it times
    /// `executions` (the same as the sum when every execution read them).
    pub fn estimate(&self, i: usize, executions: u64) -> f64 {
        if self.executions == 0 {
            return 0.0;
        }
        self.values.get(i).copied().unwrap_or(0) as f64 * executions.max(self.executions) as f64
            / self.executions as f64
    }
}

/// A region's dynamic instruction mix in one thread; the by-space arrays are indexed as
/// [`SPACE_NAMES`].
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq, Eq)]
pub struct Counts {
    /// IR instructions executed (phis, debug and lifetime intrinsics not counted).
    pub instructions: u64,
    pub loads: [u64; SPACES],
    pub stores: [u64; SPACES],
    pub load_bytes: [u64; SPACES],
    pub store_bytes: [u64; SPACES],
    pub int_ops: u64,
    pub fp_ops: u64,
    pub vector_ops: u64,
    pub branches: u64,
    pub calls: u64,
    /// Calls the counters do not follow (indirect, or out of the instrumented modules).
    pub uncovered_calls: u64,
    /// Counter increments the region's code executed (the pass's own read-modify-writes),
    /// for the overhead correction factor.
    #[serde(default)]
    pub counter_increments: u64,
}

impl Counts {
    /// Bytes read through pointers and globals (and escaping stack objects): every space but
    /// the function's own non-escaping stack slots.
    pub fn bytes_read(&self) -> u64 {
        (0..SPACES)
            .filter(|&s| s != LOCAL)
            .map(|s| self.load_bytes[s])
            .sum()
    }
    pub fn bytes_written(&self) -> u64 {
        (0..SPACES)
            .filter(|&s| s != LOCAL)
            .map(|s| self.store_bytes[s])
            .sum()
    }
    /// Bytes read and written: the bytes a bandwidth is of.
    pub fn bytes_moved(&self) -> u64 {
        self.bytes_read() + self.bytes_written()
    }
    pub fn loads_total(&self) -> u64 {
        self.loads.iter().sum()
    }
    pub fn stores_total(&self) -> u64 {
        self.stores.iter().sum()
    }

    /// Examem's overhead correction factor (docs/regions.md, "Bandwidth"): with I the
    /// instructions, M the loads and stores and C the counter increments,
    /// OMAF = M / I, NMAF = (2C + M) / (2C + I), MF = NMAF / OMAF and
    /// CF = (I + C x MF) / I. The corrected bandwidth is CF x bytes / time. 1 when the region
    /// executed no instruction or no memory access.
    pub fn correction_factor(&self) -> f64 {
        let i = self.instructions as f64;
        let m = (self.loads_total() + self.stores_total()) as f64;
        let c = self.counter_increments as f64;
        if i == 0.0 || m == 0.0 {
            return 1.0;
        }
        let omaf = m / i;
        let nmaf = (2.0 * c + m) / (2.0 * c + i);
        (i + c * (nmaf / omaf)) / i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/regions.md states the limits: it must not drift from the constants.
    #[test]
    fn docs_state_the_limits() {
        let doc = include_str!("../../docs/regions.md").replace('\n', " ");
        for want in [
            format!("at most {MAX_REGIONS} per run and {NAME_MAX} bytes each"),
            format!("at most {MAX_DEPTH} open regions"),
        ] {
            assert!(doc.contains(&want), "docs/regions.md does not say {want:?}");
        }
    }

    /// The correction factor as docs/regions.md states it, on round figures: I = 100,
    /// M = 40, C = 10: OMAF 0.4, NMAF 60 / 120 = 0.5, MF 1.25, CF (100 + 12.5) / 100.
    #[test]
    fn correction_factor_follows_the_formula() {
        let c = Counts {
            instructions: 100,
            loads: [30, 0, 0, 0],
            stores: [0, 0, 0, 10],
            counter_increments: 10,
            ..Counts::default()
        };
        assert!((c.correction_factor() - 1.125).abs() < 1e-12);
        assert_eq!(Counts::default().correction_factor(), 1.0);
    }

    /// A region's share of the machine's bandwidth: its GB/s over the best STREAM kernel's
    /// (single-thread for a thread's row, all threads for a region's total).
    #[test]
    fn bandwidth_share_is_gbps_over_the_best_kernel() {
        let b = Bandwidth {
            copy_single: 8.0,
            triad_single: 10.0,
            copy_all: 16.0,
            triad_all: 12.5,
            threads: 2,
            array_bytes: 1 << 28,
        };
        assert_eq!(b.single_gbps(), 10.0);
        assert_eq!(b.all_gbps(), 16.0);
        assert_eq!(bandwidth_share(2.5, b.single_gbps()), Some(0.25));
        assert_eq!(bandwidth_share(24.0, b.all_gbps()), Some(1.5));
        assert_eq!(bandwidth_share(1.0, 0.0), None);
        assert_eq!(bandwidth_share(f64::NAN, 1.0), None);
    }
}
