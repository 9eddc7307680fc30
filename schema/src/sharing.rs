//! Cache-line sharing records: what the runtime records per tracked line (the profile's
//! `sharing` section). The analysis that turns them into findings is `profcc-analysis`.
//!
//! Model (Cheetah, Predator): every thread runs on its own core with an infinite private
//! cache; a write to a line that another thread accessed since the line's last write is one
//! invalidation. Only lines whose invalidations pass a threshold (contended lines), or which
//! neighbour a line written by another thread (watched, for latent sharing), are tracked per
//! byte.

use serde::{Deserialize, Serialize};

/// Bytes per cache line; line addresses are multiples of it.
pub const LINE: u64 = 64;

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Sharing {
    pub settings: Settings,
    /// Wall-clock time during which more than one thread existed, nanoseconds.
    pub parallel_ns: u64,
    /// Lines tracked in detail, in address order.
    pub lines: Vec<LineRecord>,
    /// Lines that passed a threshold after the table of tracked lines was full.
    pub dropped_lines: u64,
    /// When each thread ran, for how much CPU time and on which CPUs: what the prediction
    /// needs to know whether contending threads overlapped (profile version 5; empty in
    /// older profiles, which then get no prediction).
    #[serde(default)]
    pub threads: Vec<ThreadTime>,
    /// What was measured on the machine for the prediction (version 5; absent before).
    #[serde(default)]
    pub machine: Option<Machine>,
}

/// One thread's run, as the sharing analysis saw it (times on the monotonic clock, ns).
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct ThreadTime {
    /// The thread's dense id (as in the byte records' reader/writer sets).
    pub id: u32,
    pub start_ns: u64,
    /// When its start routine returned, or the dump for a thread still alive.
    pub end_ns: u64,
    /// CPU time it used (user + system), up to its end.
    pub cpu_ns: u64,
    /// CPUs it was seen on (`sched_getcpu` in the cold path and at start and end), exact up
    /// to CPU 1023 (higher numbers wrap).
    pub cpus: Vec<u32>,
    /// Its accesses, exact (the profile's thread table; 0 in a profile older than version 6).
    #[serde(default)]
    pub accesses: u64,
    /// Time it waited on a run queue while runnable (other threads or programs had its CPU),
    /// up to its end (the kernel's schedstat; None: not known, or a profile older than
    /// version 8). The prediction takes it out: on their own cores the threads would not wait.
    #[serde(default)]
    pub wait_ns: Option<u64>,
}

/// Machine figures behind the predicted gain (docs/model.md).
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Machine {
    /// What a timed reload of a line already in the cache costs (the baseline subtracted from
    /// every latency sample), ns.
    pub hit_ns: f64,
    /// TSC ticks per ns, from the run's own clock (latency samples are taken in ticks).
    pub ticks_per_ns: f64,
    /// Cost of one cache-line transfer between two CPUs, ns, from `profcc calibrate`'s cache
    /// for this machine (None: not calibrated).
    pub transfer_ns: Option<f64>,
    /// The calibration's key (CPU model and topology), when one was found.
    pub calibration: Option<String>,
    /// How much slower two threads run that do nothing but increment their own words of one
    /// line than the same threads on separate lines, from `profcc calibrate` (None: not
    /// measured).
    #[serde(default)]
    pub contended_slowdown: Option<f64>,
    /// The contended slowdown of each kind of line (`profcc calibrate`, version 8; None: not
    /// measured). `contended_slowdown` is the read-modify-write kind's, kept for older readers.
    #[serde(default)]
    pub slowdowns: Option<Slowdowns>,
}

/// What the threads of a contended line do to it. The cost of sharing a line depends on it:
/// a plain store retires into the store buffer, a load waits for the line, a locked
/// read-modify-write waits and holds it; `profcc calibrate` measures each.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum LineAccess {
    /// Each thread only stores to its words (`a[id] = x`).
    Store,
    /// Loads of a line another core stores to (one thread writing what others read).
    LoadStore,
    /// Each thread loads and stores its own word (`a[id]++`, `s->sum += x`): a plain
    /// read-modify-write.
    Rmw,
    /// Locked read-modify-writes (`__atomic_fetch_add`, `std::atomic<T>::fetch_add`).
    Atomic,
}

impl LineAccess {
    pub const ALL: [LineAccess; 4] = [
        LineAccess::Store,
        LineAccess::LoadStore,
        LineAccess::Rmw,
        LineAccess::Atomic,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            LineAccess::Store => "store-only",
            LineAccess::LoadStore => "load-and-store",
            LineAccess::Rmw => "read-modify-write",
            LineAccess::Atomic => "locked read-modify-write",
        }
    }
}

/// The contended slowdown of two threads on one line against separate lines, per
/// [`LineAccess`]: how many times slower a thread that does nothing but that access runs.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, Default, PartialEq)]
pub struct Slowdowns {
    pub store: Option<f64>,
    pub load_store: Option<f64>,
    #[serde(default)]
    pub rmw: Option<f64>,
    pub atomic: Option<f64>,
}

impl Slowdowns {
    pub fn of(&self, k: LineAccess) -> Option<f64> {
        match k {
            LineAccess::Store => self.store,
            LineAccess::LoadStore => self.load_store,
            LineAccess::Rmw => self.rmw,
            LineAccess::Atomic => self.atomic,
        }
    }

    pub fn set(&mut self, k: LineAccess, v: Option<f64>) {
        match k {
            LineAccess::Store => self.store = v,
            LineAccess::LoadStore => self.load_store = v,
            LineAccess::Rmw => self.rmw = v,
            LineAccess::Atomic => self.atomic = v,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Settings {
    /// Invalidations after which a line is tracked per byte (`fs_threshold`).
    pub threshold: u32,
    /// One in this many accesses per thread to a tracked line is analysed (`fs_sample`);
    /// invalidations and byte counts on tracked lines are scaled by it.
    pub sample: u32,
    /// A thread samples one write in this many per site for write volume (`fs_watch`; a power of 2).
    pub watch_interval: u32,
    /// Volume samples after which a line next to another thread's line is watched.
    pub watch_samples: u32,
    /// Accesses recorded on a watched, uncontended line before it is let go (`fs_budget`).
    pub watch_budget: u32,
    /// Most lines tracked in detail (`fs_max_lines`).
    pub max_lines: u32,
    /// Assumed cost of one invalidation, for the predicted gain (`fs_inv_ns`).
    pub invalidation_ns: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            threshold: 16,
            sample: 64,
            watch_interval: 256,
            watch_samples: 2,
            watch_budget: 4096,
            max_lines: 8192,
            invalidation_ns: 60,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct LineRecord {
    /// Address of the line (a multiple of 64).
    pub addr: u64,
    /// Invalidations counted while more than one thread existed, before and after tracking began.
    pub invalidations: u64,
    /// Tracked because of invalidations (else only watched for latent sharing).
    pub contended: bool,
    /// Write-volume samples that landed on the line (each stands for `watch_interval` writes).
    pub volume_samples: u64,
    /// Bytes accessed while tracked, in offset order.
    pub bytes: Vec<ByteUse>,
    /// Access sites seen on the line while tracked (at most 32), most accesses first; counts
    /// are the analysed sample (multiply by `settings.sample`).
    pub sites: Vec<LineSite>,
    /// Objects overlapping the accessed bytes, in address order.
    pub objects: Vec<ObjectRef>,
    /// Timed reloads of the line in the cold path, on the sampled accesses while more than one
    /// thread existed: the latency beyond a cache hit, by what the access was (version 5).
    #[serde(default)]
    pub latency: LineLatency,
}

/// Latency samples of one tracked line, split by access: a plain store's miss is largely
/// hidden by the store buffer; a load (or the load of a read-modify-write) waits for it.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct LineLatency {
    /// Plain loads.
    pub load: Latency,
    /// Plain stores with no load of the same word by the same access (store-only).
    pub store: Latency,
    /// Read-modify-writes (`x++`: a load and a store of one word); before version 8 also
    /// the atomics.
    pub rmw: Latency,
    /// Atomics (locked read-modify-writes, version 8).
    #[serde(default)]
    pub atomic: Latency,
}

impl LineLatency {
    /// Every kind, for the sums the analysis makes.
    pub fn all(&self) -> [&Latency; 4] {
        [&self.load, &self.store, &self.rmw, &self.atomic]
    }

    /// The samples of one kind of access: a line of that kind is mostly these.
    pub fn of(&self, k: LineAccess) -> &Latency {
        match k {
            LineAccess::Store => &self.store,
            LineAccess::LoadStore => &self.load,
            LineAccess::Rmw => &self.rmw,
            LineAccess::Atomic => &self.atomic,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Latency {
    /// Timed accesses.
    pub samples: u64,
    /// Of them, slower than a hit by more than the analysis' miss threshold.
    pub misses: u64,
    /// Sum of the misses' time beyond a hit, ns (each clamped; see the analysis).
    pub extra_ns: u64,
}

/// Accesses recorded at one byte offset of a tracked line (counts are the recorded sample;
/// multiply by `settings.sample` for an estimate of all accesses).
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct ByteUse {
    pub offset: u32,
    /// Bytes the record covers: the largest write that started at this byte, or the largest
    /// read where no write did (a wider read by another thread does not widen the writers').
    pub size: u32,
    pub reads: u64,
    pub writes: u64,
    /// Threads that read / wrote the byte range, real thread ids: all of them while no thread
    /// id of 64 or more touched the byte; beyond, the runtime (whose per-byte state is bounded)
    /// names the first two writers and the first reader, and `more_*` says others did too.
    pub readers: Vec<u32>,
    pub writers: Vec<u32>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub more_readers: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub more_writers: bool,
    /// Reads (recorded) by a thread that did not write the byte, after another thread had.
    #[serde(default)]
    pub cross_reads: u64,
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct LineSite {
    /// Index into `Profile::sites`.
    pub site: u32,
    pub reads: u64,
    pub writes: u64,
}

#[derive(
    Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, Default, PartialOrd, Ord,
)]
#[serde(rename_all = "snake_case")]
pub enum ObjectKind {
    Heap,
    Stack,
    /// Not heap or stack: a global or static (the report names it from the symbol table).
    #[default]
    Static,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct ObjectRef {
    pub kind: ObjectKind,
    /// Start and size (heap: the allocation; stack: the thread's stack; static: the line).
    pub start: u64,
    pub size: u64,
    /// Heap: stack id of the allocation call, allocating thread, allocation function.
    pub alloc_stack: Option<u32>,
    pub alloc_thread: Option<u32>,
    pub alloc_kind: Option<String>,
    /// Stack: the thread whose stack it is.
    pub stack_thread: Option<u32>,
}
