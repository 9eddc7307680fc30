//! The profile file format shared by the runtime (writer) and the driver (reader).
//!
//! A profile is one JSON document. `format` is always [`FORMAT`]; `version` is bumped whenever
//! a field changes meaning or a required field is added. Readers reject other formats and
//! newer versions with one clear error.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub mod allocator;
pub mod numa;
pub mod regions;
pub mod sharing;

pub const FORMAT: &str = "profcc-profile";
/// 3: `exit_summary` added (older profiles read with it empty).
/// 4: the sharing section's per-byte `readers`/`writers` are real thread ids (at most two,
/// `more_readers`/`more_writers` for a third), no longer ids modulo 64; `alloc_wrappers` added.
/// 5: `sharing.threads`, `sharing.machine` and each line's `latency` added, for the predicted
/// gain (older profiles read with them empty; the report says it has no prediction for them).
/// 6: each `sharing.threads` entry's `accesses` and `sharing.machine.contended_slowdown`, for
/// the prediction's access-share estimate (older profiles read with them 0 / absent: the
/// prediction then rests on the latency samples alone).
/// 7: `allocator_ops.overhead.peak` is absent when live requested bytes never reached the
/// first step (older profiles carry the exit state there; read as a peak).
/// 8: each line's `latency.atomic` (atomics, before in `rmw`) and `sharing.machine.slowdowns`
/// (the contended slowdown per kind of line; older profiles read with them empty: atomics
/// count as read-modify-writes and only the load-and-store slowdown is known).
pub const VERSION: u32 = 8;

/// Where profcc keeps a per-machine cache file `name` (`profcc calibrate`'s calibration,
/// `profcc detect-allocator --bench`'s reference costs): `$XDG_CACHE_HOME/profcc/NAME`, else
/// `$HOME/.cache/profcc/NAME`; None when neither is set.
pub fn cache_file(
    xdg_cache_home: Option<&std::ffi::OsStr>,
    home: Option<&std::ffi::OsStr>,
    name: &str,
) -> Option<std::path::PathBuf> {
    let base = match xdg_cache_home.filter(|x| !x.is_empty()) {
        Some(x) => std::path::PathBuf::from(x),
        None => std::path::PathBuf::from(home.filter(|h| !h.is_empty())?).join(".cache"),
    };
    Some(base.join("profcc").join(name))
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Profile {
    pub format: String,
    pub version: u32,
    /// Path of the executable (`/proc/self/exe`).
    pub exe: String,
    pub pid: u32,
    pub host: String,
    /// The MPI rank, from the launcher's environment (`OMPI_COMM_WORLD_RANK`, `PMI_RANK`,
    /// `PMIX_RANK`, `MV2_COMM_WORLD_RANK`, `SLURM_PROCID`, the first set). Absent: the process
    /// was not started by an MPI launcher (or by one that sets none of them), and in profiles
    /// written before it was recorded; `profcc report` then orders such inputs after the
    /// ranked ones and shows no rank for them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// The job's number of ranks (`OMPI_COMM_WORLD_SIZE`, `PMI_SIZE`, `PMIX_SIZE`,
    /// `MV2_COMM_WORLD_SIZE`, `SLURM_NTASKS`); absent as `rank` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<u32>,
    pub argv: Vec<String>,
    /// Wall-clock run time up to the dump, nanoseconds.
    pub duration_ns: u64,
    /// Why the profile was written: "exit", "signal" (the `dump_signal` option), "_exit",
    /// "abort", "assert", or "fatal signal N" (the `fatal_dump` option).
    pub trigger: String,
    /// The exit summary, when it was not printed because stderr was not the terminal the
    /// program started with (`summary=auto`, the default); `profcc report` shows it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exit_summary: Vec<String>,
    /// Run-time options in force (every flag of the table, as text).
    pub options: BTreeMap<String, String>,
    /// ELF objects mapped in the process, for offline symbolisation of stack frames.
    pub modules: Vec<Module>,
    pub threads: Vec<Thread>,
    /// Access sites that executed at least once.
    pub sites: Vec<AccessSite>,
    /// Modules registered with access sites (0: every module was built without access
    /// counting, `PROFCC_INSTRUMENT=roi` or `none`; absent in profiles that do not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted_modules: Option<u32>,
    /// Deduplicated call stacks (absolute return addresses, innermost first).
    pub stacks: Vec<Stack>,
    pub alloc_sites: Vec<AllocSite>,
    pub totals: Totals,
    /// Things the runtime could not observe or had to drop, in words.
    pub notes: Vec<String>,
    /// Cache-line sharing records (absent when the program was built without the analysis).
    #[serde(default)]
    pub sharing: Option<sharing::Sharing>,
    /// NUMA analysis (absent unless a module was built with `PROFCC_INSTRUMENT=numa`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa: Option<numa::Numa>,
    /// Functions that only allocate and return the block (allocation wrappers): those the
    /// compiler pass recognised in the program's modules and those the `alloc_wrappers` option
    /// names. A heap object is named by the first frame of its allocation stack outside them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alloc_wrappers: Vec<String>,
    /// The allocator the program's malloc calls reach, as the allocator probe's lines
    /// (`object PATH`, `sym NAME`, `version KIND TEXT`: docs/allocators.md); `profcc report`
    /// names it. Found at the final dump only: empty in a `dump_signal` dump before it (finding
    /// it may malloc) and in a fatal-signal dump (not async-signal-safe).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allocator: Vec<String>,
    /// The allocator analysis (absent when it was off: `alloc_ops=0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocator_ops: Option<allocator::Allocator>,
    /// Regions of interest (absent when no region marker ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regions: Option<regions::Regions>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Module {
    pub path: String,
    /// Load bias: runtime address minus the address in the file.
    pub base: u64,
    /// Lowest and highest runtime addresses of its executable segments.
    pub start: u64,
    pub end: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Thread {
    /// Dense id: 0 is the main thread, then in creation order.
    pub id: u32,
    pub parent: Option<u32>,
    /// Stack id of the `pthread_create` call.
    pub created_at: Option<u32>,
    pub accesses: u64,
    /// Address of its start routine (None: the main thread, or a thread the runtime did not
    /// see created).
    #[serde(default)]
    pub start_routine: Option<u64>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum AccessKind {
    Read,
    Write,
    /// Atomic read-modify-write or compare-exchange: both reads and writes.
    Atomic,
    /// Source side of memcpy/memmove.
    CopyRead,
    /// Destination side of memcpy/memmove/memset.
    CopyWrite,
}

impl AccessKind {
    pub fn reads(self) -> bool {
        matches!(
            self,
            AccessKind::Read | AccessKind::Atomic | AccessKind::CopyRead
        )
    }
    pub fn writes(self) -> bool {
        matches!(
            self,
            AccessKind::Write | AccessKind::Atomic | AccessKind::CopyWrite
        )
    }
    pub fn as_str(self) -> &'static str {
        match self {
            AccessKind::Read => "read",
            AccessKind::Write => "write",
            AccessKind::Atomic => "atomic",
            AccessKind::CopyRead => "copy-read",
            AccessKind::CopyWrite => "copy-write",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AccessSite {
    pub file: String,
    pub line: u32,
    pub col: u32,
    /// The (mangled) function the access was compiled into.
    pub function: String,
    /// `file:line` of the call the access was inlined through, outermost caller.
    pub inlined_at: Option<String>,
    pub kind: AccessKind,
    /// Bytes per access; 0 for memory intrinsics with a run-time length.
    pub size: u32,
    pub count: u64,
    pub bytes: u64,
    /// Number of distinct threads that executed the site.
    pub threads: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Stack {
    pub id: u32,
    pub frames: Vec<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct AllocSite {
    /// Stack id of the allocation call (innermost frame first, starting in user code).
    pub stack: u32,
    /// malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign, valloc, pvalloc,
    /// new, new[], mmap.
    pub kind: String,
    pub count: u64,
    pub bytes: u64,
    pub frees: u64,
    pub max_size: u64,
    pub live_bytes_peak: u64,
    pub live_bytes_at_exit: u64,
    pub live_objects_at_exit: u64,
    /// Threads that allocated here.
    pub threads: u32,
    /// TSC ticks the allocator spent in the operations on this site's objects (allocations,
    /// reallocations, frees; the allocator analysis, `allocator.tsc_hz` converts).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cycles: u64,
    /// How long its freed blocks lived (absent when none was freed, and in profiles older
    /// than it; docs/allocators.md, "Lifetimes").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime: Option<Lifetime>,
}

/// Lifetimes of an allocation site's freed blocks, in allocations: a block's lifetime is the
/// number of allocation calls its allocating thread made after it until it was freed (0: none,
/// heaptrack's "temporary"). Measured when the allocating thread frees the block; blocks live
/// at exit are not in it.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Lifetime {
    /// Frees whose lifetime was measured, the sum of their lifetimes, the shortest and the
    /// longest (0 when none was).
    pub freed: u64,
    pub sum: u64,
    pub min: u64,
    pub max: u64,
    /// Freed before their thread's next allocation (lifetime 0).
    pub temporary: u64,
    /// Frees not measured: made by another thread than the allocating one (or by a thread
    /// after its exit).
    #[serde(default)]
    pub unmeasured: u64,
    /// Freed blocks by lifetime: entry 0 counts lifetime 0, entry k >= 1 lifetimes in
    /// [2^(k-1), 2^k); the last of [`LIFETIME_BUCKETS`] entries everything longer. Trailing
    /// zero entries are left out.
    #[serde(default)]
    pub histogram: Vec<u64>,
}

/// The lifetime histogram's buckets (see [`Lifetime::histogram`]).
pub const LIFETIME_BUCKETS: usize = 32;

impl Lifetime {
    /// The lower bound of histogram bucket `k` (in allocations).
    pub fn bucket_low(k: usize) -> u64 {
        if k == 0 {
            0
        } else {
            1u64 << (k - 1)
        }
    }

    /// Mean lifetime of the measured frees.
    pub fn mean(&self) -> Option<f64> {
        (self.freed > 0).then(|| self.sum as f64 / self.freed as f64)
    }

    /// Add `o` (another process's, or another merged site's, figures).
    pub fn merge(&mut self, o: &Lifetime) {
        if o.freed > 0 {
            self.min = if self.freed == 0 {
                o.min
            } else {
                self.min.min(o.min)
            };
            self.max = self.max.max(o.max);
        }
        self.freed += o.freed;
        self.sum = self.sum.wrapping_add(o.sum);
        self.temporary += o.temporary;
        self.unmeasured += o.unmeasured;
        if self.histogram.len() < o.histogram.len() {
            self.histogram.resize(o.histogram.len(), 0);
        }
        for (a, b) in self.histogram.iter_mut().zip(&o.histogram) {
            *a += b;
        }
    }
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Totals {
    pub accesses: u64,
    pub reads: u64,
    pub writes: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Accesses that ran before their module registered (not attributable to a site).
    pub unattributed: u64,
    pub allocations: u64,
    pub frees: u64,
    pub bytes_allocated: u64,
    pub live_bytes_peak: u64,
    pub threads: u32,
}

impl Totals {
    /// Count one access site into the access totals (reads, writes and their bytes).
    pub fn add_site(&mut self, s: &AccessSite) {
        self.accesses += s.count;
        if s.kind.reads() {
            self.reads += s.count;
            self.bytes_read += s.bytes;
        }
        if s.kind.writes() {
            self.writes += s.count;
            self.bytes_written += s.bytes;
        }
    }

    /// Add another profile's totals to these. Peaks are summed: an upper bound.
    pub fn merge(&mut self, o: &Totals) {
        self.accesses += o.accesses;
        self.reads += o.reads;
        self.writes += o.writes;
        self.bytes_read += o.bytes_read;
        self.bytes_written += o.bytes_written;
        self.unattributed += o.unattributed;
        self.allocations += o.allocations;
        self.frees += o.frees;
        self.bytes_allocated += o.bytes_allocated;
        self.live_bytes_peak += o.live_bytes_peak;
        self.threads += o.threads;
    }
}

#[derive(Debug)]
pub enum ReadError {
    Io(std::io::Error),
    NotAProfile(String),
    Truncated(String),
    TooNew(u32),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "cannot read it: {e}"),
            ReadError::NotAProfile(why) => write!(
                f,
                "not a profcc profile ({why}); pass a profcc.<exe>.<pid>.json written by a profcc-built program"
            ),
            ReadError::Truncated(why) => write!(
                f,
                "the profile is truncated or corrupt ({why}); run the program again to write a complete one"
            ),
            ReadError::TooNew(v) => write!(
                f,
                "profile version {v} is newer than this profcc understands ({VERSION}); use the profcc that built the program"
            ),
        }
    }
}

impl std::error::Error for ReadError {}

/// Parse a profile from text, checking the format marker and version.
///
/// A well-formed profile is parsed straight into [`Profile`]; only one that does not parse
/// (or a newer version) goes through `serde_json::Value` to say what is wrong with it.
pub fn from_str(text: &str) -> Result<Profile, ReadError> {
    if let Ok(p) = serde_json::from_str::<Profile>(text) {
        if p.format == FORMAT && p.version <= VERSION {
            return Ok(p);
        }
    }
    classify(text)
}

/// Why `text` is not a readable profile (or, when it reads through `Value`, the profile).
fn classify(text: &str) -> Result<Profile, ReadError> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        if e.is_eof() || (text.trim_start().starts_with('{') && text.contains(FORMAT)) {
            ReadError::Truncated(e.to_string())
        } else {
            ReadError::NotAProfile(e.to_string())
        }
    })?;
    match value.get("format").and_then(|v| v.as_str()) {
        Some(FORMAT) => {}
        Some(other) => return Err(ReadError::NotAProfile(format!("format is {other:?}"))),
        None => return Err(ReadError::NotAProfile("no \"format\" field".into())),
    }
    let version = value.get("version").and_then(|v| v.as_u64()).unwrap_or(0) as u32;
    if version > VERSION {
        return Err(ReadError::TooNew(version));
    }
    serde_json::from_value(value).map_err(|e| ReadError::Truncated(e.to_string()))
}

/// Read and parse one profile file (read whole, into a buffer of its size).
pub fn read(path: &std::path::Path) -> Result<Profile, ReadError> {
    let text = std::fs::read_to_string(path).map_err(ReadError::Io)?;
    from_str(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Profile {
        Profile {
            format: FORMAT.into(),
            version: VERSION,
            exe: "/bin/x".into(),
            pid: 7,
            ..Default::default()
        }
    }

    #[test]
    fn totals_classify_and_merge() {
        let site = |kind, count, bytes| AccessSite {
            file: String::new(),
            line: 1,
            col: 1,
            function: String::new(),
            inlined_at: None,
            kind,
            size: 0,
            count,
            bytes,
            threads: 1,
        };
        let mut t = Totals::default();
        t.add_site(&site(AccessKind::Read, 3, 24));
        t.add_site(&site(AccessKind::Atomic, 2, 8));
        t.add_site(&site(AccessKind::CopyWrite, 1, 100));
        assert_eq!((t.accesses, t.reads, t.writes), (6, 5, 3));
        assert_eq!((t.bytes_read, t.bytes_written), (32, 108));
        let mut sum = t.clone();
        sum.merge(&t);
        assert_eq!((sum.accesses, sum.bytes_written), (12, 216));
    }

    #[test]
    fn round_trip() {
        let p = sample();
        let text = serde_json::to_string(&p).unwrap();
        assert_eq!(from_str(&text).unwrap(), p);
    }

    #[test]
    fn truncated_is_named() {
        let text = serde_json::to_string(&sample()).unwrap();
        let cut = &text[..text.len() / 2];
        assert!(matches!(from_str(cut), Err(ReadError::Truncated(_))));
    }

    #[test]
    fn foreign_is_named() {
        assert!(matches!(from_str("hello"), Err(ReadError::NotAProfile(_))));
        assert!(matches!(
            from_str("{\"a\":1}"),
            Err(ReadError::NotAProfile(_))
        ));
    }

    /// A site of a profile older than lifetimes reads without one; merging lifetimes adds
    /// the counts and histograms and keeps the extremes (an empty side's min is not 0).
    #[test]
    fn lifetimes_read_old_and_merge() {
        let mut p = sample();
        p.alloc_sites.push(AllocSite {
            count: 2,
            ..Default::default()
        });
        let mut v = serde_json::to_value(&p).unwrap();
        assert!(v["alloc_sites"][0].get("lifetime").is_none());
        v["alloc_sites"][0]
            .as_object_mut()
            .unwrap()
            .remove("cycles");
        assert_eq!(
            from_str(&v.to_string()).unwrap().alloc_sites[0].lifetime,
            None
        );
        let a = Lifetime {
            freed: 3,
            sum: 30,
            min: 5,
            max: 20,
            temporary: 0,
            unmeasured: 1,
            histogram: vec![0, 0, 0, 1, 1, 1],
        };
        let mut m = Lifetime {
            unmeasured: 2,
            ..Default::default()
        };
        m.merge(&a);
        m.merge(&Lifetime {
            freed: 2,
            sum: 0,
            min: 0,
            max: 0,
            temporary: 2,
            unmeasured: 0,
            histogram: vec![2],
        });
        assert_eq!(
            m,
            Lifetime {
                freed: 5,
                sum: 30,
                min: 0,
                max: 20,
                temporary: 2,
                unmeasured: 3,
                histogram: vec![2, 0, 0, 1, 1, 1],
            }
        );
        assert_eq!(m.mean(), Some(6.0));
        assert_eq!(Lifetime::bucket_low(7), 64);
    }

    #[test]
    fn older_version_without_exit_summary_reads() {
        let mut v = serde_json::to_value(sample()).unwrap();
        v["version"] = 2.into();
        v.as_object_mut().unwrap().remove("exit_summary");
        let p = from_str(&v.to_string()).unwrap();
        assert_eq!(p.version, 2);
        assert!(p.exit_summary.is_empty());
    }

    #[test]
    fn version_3_sharing_reads_without_prediction_fields() {
        let mut p = sample();
        p.sharing = Some(sharing::Sharing {
            lines: vec![sharing::LineRecord {
                addr: 64,
                ..Default::default()
            }],
            ..Default::default()
        });
        let mut v = serde_json::to_value(&p).unwrap();
        v["version"] = 3.into();
        let s = v["sharing"].as_object_mut().unwrap();
        s.remove("threads");
        s.remove("machine");
        s["lines"][0].as_object_mut().unwrap().remove("latency");
        let q = from_str(&v.to_string()).unwrap();
        let s = q.sharing.unwrap();
        assert_eq!(q.version, 3);
        assert!(s.threads.is_empty() && s.machine.is_none());
        assert_eq!(s.lines[0].latency, sharing::LineLatency::default());
    }

    #[test]
    fn newer_version_rejected() {
        let mut p = sample();
        p.version = VERSION + 1;
        let text = serde_json::to_string(&p).unwrap();
        let e = from_str(&text).unwrap_err();
        assert!(matches!(e, ReadError::TooNew(_)));
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("version {}", VERSION + 1))
                && msg.contains(&format!("({VERSION})")),
            "{msg}"
        );
    }
}
