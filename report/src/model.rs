//! The report model: what `profcc report` found, as plain serialisable data. The sections
//! (`sections/*.rs`) build it from the merged profiles; the renderers (`render/*.rs`: text,
//! JSON, CSV) take it and nothing else. JSON is this model as serde writes it
//! (`docs/report.md` shows the shape), and reads back into it, so programs (and the
//! end-to-end tests) can use these types instead of JSON paths.
//!
//! One type per concept: an allocation site is [`AllocSite`] from merging to every renderer,
//! a thread is [`Thread`], a sharing finding is [`Finding`].

pub use profcc_analysis::sharing::BelowThreshold;
use profcc_analysis::sharing::{Confidence, Kind, Latent, Prediction};
use profcc_schema::sharing::Settings;
use profcc_schema::{AccessKind, Totals};
use serde::{Deserialize, Serialize};

pub const REPORT_FORMAT: &str = "profcc-report";
/// Bumped when a JSON field changes meaning or is removed; adding fields does not bump it.
pub const REPORT_VERSION: u32 = 1;

/// The whole report, in output order.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Report {
    /// Always [`REPORT_FORMAT`].
    pub format: String,
    /// [`REPORT_VERSION`] of the profcc that wrote it.
    pub version: u32,
    pub summary: Summary,
    /// Every analysis's findings in one list, ranked by impact, then confidence
    /// (`profcc_analysis::findings`; docs/report.md, "Findings").
    #[serde(default)]
    pub findings: Vec<profcc_analysis::findings::Finding>,
    /// Every analysis's per-object figures joined on the object's identity (docs/report.md,
    /// "Objects").
    #[serde(default)]
    pub objects: Vec<ObjectRow>,
    pub access_sites: AccessSites,
    pub alloc_sites: AllocSites,
    /// Only when an input has sharing records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharing: Option<Sharing>,
    /// Only when an input has NUMA records (`PROFCC_INSTRUMENT=numa`; docs/numa.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa: Option<Numa>,
    /// Only when an input has the allocator analysis's records (docs/allocators.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocator: Option<AllocatorAnalysis>,
    /// Only when an input has region markers' records (docs/regions.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regions: Option<Regions>,
    /// Every thread of every input.
    pub threads: Vec<Thread>,
    /// Per-rank totals; only when several profiles were merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<Ranks>,
    pub notes: Notes,
}

/// What was profiled (one entry per input file) and the summed totals.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub inputs: Vec<InputInfo>,
    /// Totals summed over inputs (`live_bytes_peak` and `threads` too).
    pub totals: Totals,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct InputInfo {
    pub path: String,
    pub exe: String,
    pub pid: u32,
    pub host: String,
    /// The MPI rank its launcher gave the process (the profile's `rank`; absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    pub argv: Vec<String>,
    pub duration_ns: u64,
    /// "exit", "signal", "_exit", "abort", "assert" or "fatal signal N".
    pub trigger: String,
    pub threads: u32,
    pub accesses: u64,
    /// The exit summary the program kept in its profile instead of printing it (its stderr
    /// was not a terminal).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exit_summary: Vec<String>,
    /// The allocator the program's malloc calls reached (absent in profiles that do not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocator: Option<Allocator>,
    /// The run-time options in force (`PROFCC_OPTIONS` and defaults, as the profile records
    /// them; docs/options.md).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub options: std::collections::BTreeMap<String, String>,
}

impl InputInfo {
    /// Whether the run sampled its allocations (`alloc_sample` not 0, the default): its
    /// peaks and lifetimes are estimates (docs/report.md, "Sampling").
    pub fn alloc_sampled(&self) -> bool {
        self.options.get("alloc_sample").is_some_and(|v| v != "0")
    }
}

/// An allocator, as the runtime identified it (docs/allocators.md).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Allocator {
    /// glibc, jemalloc, tcmalloc, mimalloc, tbbmalloc, or unknown.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The file that defines the malloc in use (`main`: the program itself).
    pub object: String,
    /// `symbol NAME`, or why it is unknown.
    pub identified_by: String,
}

/// Top access sites, aggregated by file:line.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AccessSites {
    /// Accesses that `percent` is relative to (all accesses of all inputs).
    pub total_accesses: u64,
    /// Distinct file:line pairs with at least one access.
    pub lines_total: usize,
    /// The top lines, by accesses (then bytes), at most `--top`.
    pub lines: Vec<Line>,
    /// Modules of the inputs registered with access sites (0: every module was built without
    /// access counting, `PROFCC_INSTRUMENT=roi` or `none`); absent when an input does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted_modules: Option<u32>,
}

impl AccessSites {
    /// No module of any input counts accesses: the build chose not to (`roi`, `none`).
    pub fn not_counted(&self) -> bool {
        self.counted_modules == Some(0)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Line {
    pub rank: usize,
    pub file: String,
    pub line: u32,
    /// Demangled function with the most accesses on this line.
    pub function: String,
    /// All functions the line's accesses were compiled into, most accesses first.
    pub functions: Vec<String>,
    /// Distinct inlined-at places (`file:line`), if the code was inlined.
    pub inlined_at: Vec<String>,
    pub accesses: u64,
    /// Accesses that read (read, atomic, copy-read).
    pub reads: u64,
    /// Accesses that write (write, atomic, copy-write).
    pub writes: u64,
    pub bytes: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Share of all accesses, 0–100.
    pub percent: f64,
    /// Threads that executed the line: per input the largest site count (a lower bound), summed
    /// over inputs.
    pub threads: u32,
    /// The individual sites, most accesses first.
    pub sites: Vec<Site>,
}

/// One access site of a [`Line`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Site {
    pub col: u32,
    /// read, write, atomic, copy_read, copy_write (as in the profile).
    pub kind: AccessKind,
    /// Bytes per access; 0 when the length is known only at run time.
    pub size: u32,
    pub count: u64,
    pub bytes: u64,
    pub function: String,
    pub inlined_at: Option<String>,
    /// A report of several profiles: each input's accesses at the site, by input index
    /// (inputs without any left out; empty for one profile).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_input: Vec<InputCount>,
}

/// One input's share of a merged row: its index on the command line and its count.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct InputCount {
    pub input: usize,
    pub count: u64,
}

/// One input's allocations at a merged allocation site.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct InputAllocs {
    pub input: usize,
    pub count: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AllocSites {
    /// Distinct allocation sites after merging by symbolised stack.
    pub sites_total: usize,
    /// The top sites by bytes allocated (then count), at most `--top`.
    pub sites: Vec<AllocSite>,
}

/// An allocation site after merging the inputs' sites by symbolised stack and kind.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AllocSite {
    /// Position in the ranking, from 1 (0 before ranking).
    pub rank: usize,
    /// malloc, calloc, realloc, new, new[], mmap, ...
    pub kind: String,
    pub count: u64,
    pub bytes: u64,
    pub frees: u64,
    pub max_size: u64,
    /// Summed over merged sites/processes: an upper bound when several were merged.
    pub live_bytes_peak: u64,
    pub live_bytes_at_exit: u64,
    pub live_objects_at_exit: u64,
    /// Threads that allocated here: per process the largest count of its merged sites (a
    /// lower bound: copies of one call made by the optimiser share threads), summed over
    /// processes.
    pub threads: u32,
    /// How many recorded sites (over all inputs) were merged into this one.
    pub merged_sites: u32,
    /// Call stack, innermost first, inlined frames expanded.
    pub stack: Vec<Frame>,
    /// How many of the innermost frames are allocation wrappers (the profile's
    /// `alloc_wrappers`): the site is the program's call after them.
    #[serde(default)]
    pub wrapper_frames: usize,
    /// Nanoseconds the program's allocator spent on this site's objects (allocations,
    /// reallocations and frees; the allocator analysis), summed over merged sites.
    #[serde(default)]
    pub allocator_ns: f64,
    /// A report of several profiles: each input's allocations and bytes here, by input index
    /// (inputs without any left out; empty for one profile).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_input: Vec<InputAllocs>,
    /// Lifetimes of its freed blocks in allocations (docs/allocators.md, "Lifetimes"), merged
    /// over its sites; null when no free was seen (or the profiles are older than it).
    #[serde(default)]
    pub lifetime: Option<profcc_schema::Lifetime>,
}

/// One symbolised frame. An address inside inlined code yields several frames: the inlined
/// callees first (`inlined: true`), then the function they were inlined into.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Frame {
    /// Absolute return address as recorded by the runtime.
    pub address: u64,
    /// Path of the module that holds the address; null when no recorded module does.
    pub module: Option<String>,
    /// Return address minus the module's load bias (the call instruction ends just before it).
    pub offset: Option<u64>,
    /// Demangled function name, from DWARF or else the symbol table.
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub column: Option<u32>,
    pub inlined: bool,
}

/// Cache-line sharing findings of all inputs, ranked together.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Sharing {
    /// The first input's settings (`fs_*` run-time options).
    pub settings: Settings,
    /// Lines tracked in detail, summed over inputs.
    pub lines_tracked: u64,
    /// Lines that passed a threshold after the runtime's table was full, summed over inputs.
    pub dropped_lines: u64,
    /// Listed findings of all inputs before `--top`.
    pub findings_total: usize,
    /// Actual findings by invalidations then writes, latent ones after them; at most `--top`.
    /// Only those predicted at `min_speedup` or more.
    pub findings: Vec<Finding>,
    /// The listing threshold (`--min-speedup`).
    #[serde(default)]
    pub min_speedup: f64,
    /// Findings below `min_speedup`, counted per kind (all inputs).
    #[serde(default)]
    pub below_threshold: Vec<BelowThreshold>,
}

/// One finding of the sharing analysis with its objects, words and places named.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Finding {
    pub rank: usize,
    /// Index of the input file the finding comes from (see `summary.inputs`).
    pub input: usize,
    pub kind: Kind,
    /// `Kind::as_str`: "false sharing", "true sharing", "read-mostly", "latent false sharing".
    pub kind_text: String,
    pub allocator_induced: bool,
    pub latent: Option<Latent>,
    /// Addresses of the line(s): one, or two for a latent pair.
    pub lines: Vec<u64>,
    pub invalidations: u64,
    pub reads: u64,
    pub writes: u64,
    /// Real thread ids; `more_threads`: some byte had more readers or writers than the runtime
    /// names beyond id 63 (its per-byte state is bounded).
    pub threads: Vec<u32>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub more_threads: bool,
    pub objects: Vec<Object>,
    pub words: Vec<Word>,
    pub places: Vec<Place>,
    pub stride: Option<u64>,
    pub predicted_saving_ns: u64,
    pub predicted_speedup: f64,
    /// How the predicted gain was computed from what the run measured, and how sure it is
    /// (docs/model.md).
    #[serde(default)]
    pub prediction: Prediction,
    pub confidence: Confidence,
    /// What to change, the object named in front (`` `counters`: threads write ... ``).
    pub fix: String,
}

/// What an object of a finding is.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum ObjectKind {
    Heap,
    /// A global or static variable (or static data no symbol holds).
    Global,
    Stack,
}

impl ObjectKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectKind::Heap => "heap",
            ObjectKind::Global => "global",
            ObjectKind::Stack => "stack",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Object {
    pub kind: ObjectKind,
    /// Global: the symbol's demangled name (null when no symbol holds the address).
    pub name: Option<String>,
    /// Runtime address and size: the allocation, the symbol, or the thread's stack.
    pub start: u64,
    pub size: u64,
    pub alloc_kind: Option<String>,
    pub alloc_thread: Option<u32>,
    /// Heap: `file:line` of the allocation call's first frame in the program's own source.
    pub alloc_site: Option<String>,
    /// Heap: the allocation call stack, innermost first, as `function file:line`.
    pub alloc_stack: Vec<String>,
    /// Heap: the allocation wrappers the call went through before `alloc_site`, innermost
    /// first, as `function (file:line)` (the profile's `alloc_wrappers`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alloc_wrappers: Vec<String>,
    pub stack_thread: Option<u32>,
    /// Heap: the function of `alloc_site`; stack: the function of the first place that writes
    /// the line.
    pub function: Option<String>,
}

impl Object {
    /// An object of `kind` at `start` with nothing else known yet.
    pub fn new(kind: ObjectKind, start: u64, size: u64) -> Object {
        Object {
            kind,
            name: None,
            start,
            size,
            alloc_kind: None,
            alloc_thread: None,
            alloc_site: None,
            alloc_stack: Vec::new(),
            alloc_wrappers: Vec::new(),
            stack_thread: None,
            function: None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Word {
    /// Index into the finding's `objects`.
    pub object: Option<usize>,
    pub object_offset: Option<u64>,
    /// The line's address and the word's offset inside it.
    pub line: u64,
    pub line_offset: u32,
    pub size: u32,
    /// Globals with DWARF types: `counters[1]`, `workers[2].count`, `s.b`.
    pub field: Option<String>,
    pub reads: u64,
    pub writes: u64,
    pub readers: Vec<u32>,
    pub writers: Vec<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Place {
    /// As in `access_sites`: the path the compiler recorded, `.`/`..` resolved.
    pub file: String,
    pub line: u32,
    pub function: String,
    /// Estimated accesses to the line(s) from this place while tracked.
    pub reads: u64,
    pub writes: u64,
}

/// A thread of one input.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Thread {
    /// Index of the input file (see `summary.inputs`).
    pub input: usize,
    pub pid: u32,
    /// Dense id within its process: 0 is the main thread.
    pub id: u32,
    pub parent: Option<u32>,
    pub accesses: u64,
    /// Symbolised `pthread_create` call stack, innermost first; empty for the main thread.
    pub created_at: Vec<Frame>,
}

/// The NUMA analysis: per input with NUMA records, its model and per-thread locality.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Numa {
    pub inputs: Vec<NumaInput>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct NumaInput {
    /// Index of the input file (see `summary.inputs`).
    pub input: usize,
    /// `thread` (each thread its own node), `emulate` (`nodes` nodes) or `off`.
    pub model: String,
    pub nodes: u32,
    /// Pages given a home (first touched).
    pub pages: u64,
    /// `real`: transparent huge pages recognised, each one first touch (docs/numa.md).
    pub huge_pages: u64,
    pub local: u64,
    pub remote: u64,
    pub threads: Vec<NumaThread>,
    /// `emulate`: accesses by the accessing thread's node (rows) and the page's node
    /// (columns), `nodes` x `nodes`; empty for the other models.
    pub node_matrix: Vec<Vec<u64>>,
    /// Where pages were first touched, most pages first (at most `--top`).
    pub first_touch: Vec<NumaFirstTouch>,
    /// What to change, when the run shows a pattern (docs/numa.md); None: nothing to say.
    pub advice: Option<String>,
    /// Remote invalidations of the run (tracked lines used by threads of two or more nodes).
    pub remote_invalidations: u64,
    /// Load imbalance between thread groups (start routines), when there are two or more.
    pub groups: Vec<NumaGroup>,
    /// The binding plan (`numa=thread` runs with remote accesses): one cluster per node.
    pub plan: Vec<NumaCluster>,
    /// Lines that apply the plan (OpenMP places, pthread affinity).
    pub plan_lines: Vec<String>,
    /// What machine the plan is for: its nodes and the CPUs it names (this run's, or assumed
    /// when the profile does not record them).
    #[serde(default)]
    pub plan_basis: String,
    /// Migration risk: what the waits say, None without waits.
    pub migration: Option<String>,
    /// NUMAPROF's unpinned categories (`emulate`, `real`): accesses by threads whose CPUs
    /// were not on one node, and accesses to pages no policy bound.
    pub unpinned_thread: u64,
    pub unpinned_page: u64,
    /// Accesses by unpinned threads to unpinned pages.
    pub unpinned_both: u64,
    /// Objects by seriousness score, highest first (at most `--top`).
    pub objects: Vec<NumaObject>,
    /// Accesses by source line, most remote first (at most `--top`): each counted for the
    /// line whose access brought its page into the thread's page cache (docs/numa.md, "Sites").
    pub sites: Vec<NumaSite>,
    /// Lines and objects with remote accesses below significance
    /// (`profcc_analysis::numa::significant`), summed: the text lists none of them.
    #[serde(default)]
    pub below: NumaBelow,
}

/// Lines and objects below significance, summed (docs/numa.md, "Significance").
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct NumaBelow {
    /// Lines with remote accesses, and those remote accesses.
    pub places: u64,
    pub places_remote: u64,
    /// Objects with remote accesses, and those remote accesses.
    pub objects: u64,
    pub objects_remote: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NumaSite {
    /// `file:line` of the access (None: not symbolised, or the sites beyond the runtime's
    /// table).
    pub place: Option<String>,
    pub function: Option<String>,
    pub accesses: u64,
    pub remote: u64,
    /// NUMAPROF's categories: accesses by threads not bound to one node, to pages no policy
    /// bound.
    pub unpinned_thread: u64,
    pub unpinned_page: u64,
}

/// One object of the NUMA analysis: a heap block's allocation site (its blocks together), a
/// global, a thread's stack, or a run of other pages.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NumaObject {
    /// `heap block allocated at file:line`, `global name`, `stack of thread N` or
    /// `memory at 0x...`.
    pub object: String,
    /// `file:line` of the allocation (heap blocks and mappings).
    pub allocated_at: Option<String>,
    pub address: u64,
    pub bytes: u64,
    pub instances: u64,
    pub pages: u64,
    pub local: u64,
    pub remote: u64,
    /// Accesses to its pages that no policy bound (NUMAPROF's unpinned pages).
    pub unpinned_page: u64,
    /// Invalidations of its tracked lines that used threads of two or more nodes.
    pub remote_invalidations: u64,
    /// `(remote x REMOTE_MISS_RATE + remote_invalidations) / ms` (docs/numa.md).
    pub score: f64,
    /// The thread and the line that touched most of its pages first, and how many.
    pub first_touch_thread: Option<u32>,
    pub first_touch_at: Option<String>,
    pub first_touch_pages: u64,
    /// Per thread, the byte range (offsets from the object's start) of the pages it used.
    pub threads: Vec<NumaRange>,
    /// Its accesses by thread, exact (the profile's `by_thread`), by thread id; and those not
    /// split by thread (`unsplit`; docs/numa.md, "Objects").
    #[serde(default)]
    pub by_thread: Vec<profcc_schema::numa::ThreadAccesses>,
    #[serde(default)]
    pub unsplit: u64,
    /// Pages used by two or more threads besides their first toucher, or by their toucher
    /// and one other thread that both kept using them (of those, `kept_pages`).
    pub shared_pages: u64,
    #[serde(default)]
    pub kept_pages: u64,
    /// Pages one thread other than their first toucher took over.
    pub moved_pages: u64,
    /// Pages a freed heap block held before (an earlier lifetime's first touch placed them).
    #[serde(default)]
    pub reused_pages: u64,
    /// `first touch`, `remote access`, `reused pages`, `shared stack` or `binding`
    /// (docs/numa.md, "Objects"); None: nothing to change or not significant.
    pub kind: Option<String>,
    pub fix: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NumaGroup {
    /// The threads' start routine (function name, or its address).
    pub routine: String,
    pub threads: u32,
    /// Sum of `local + remote x 2` over its threads (NumaPerf's `Opg`).
    pub overhead: f64,
    pub recommended: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NumaCluster {
    pub node: u32,
    /// The node's first CPU and how many it has.
    pub first_cpu: u32,
    pub cpus: u32,
    /// The node's CPUs as a CPU list (`0-3,8`, as taskset and numactl take it): CPUs the run
    /// could use.
    #[serde(default)]
    pub cpu_list: String,
    pub threads: Vec<u32>,
    /// Of those, the unbalanced ones (close to some threads, far from others).
    pub unbalanced: Vec<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NumaRange {
    pub thread: u32,
    pub start: u64,
    pub end: u64,
    pub pages: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NumaFirstTouch {
    pub thread: Option<u32>,
    pub pages: u64,
    /// `file:line` of the access that touched them first (None: not symbolised).
    pub place: Option<String>,
    pub function: Option<String>,
    /// The memory: `heap block allocated at file:line`, `global name`, or None.
    pub object: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NumaThread {
    pub thread: u32,
    /// Its node: the thread itself under `thread` (the id), the emulated node under
    /// `emulate`; None: no home (`off`).
    pub node: Option<u32>,
    pub local: u64,
    pub remote: u64,
    pub first_touches: u64,
    /// Accesses by the page's node (as `node`), `(node, accesses)`; None: pages without a
    /// home.
    pub by_node: Vec<(Option<u32>, u64)>,
    /// Waits (contended mutexes and spin locks, condition variables, barriers, semaphores)
    /// and, under `real`, wakes on another node.
    pub waits: profcc_schema::numa::Waits,
    pub migrations: u64,
    /// Its start routine (None: the main thread or not known).
    pub routine: Option<String>,
    /// Its CPUs are on one node (`emulate`, `real`).
    pub pinned: bool,
}

/// What the runtime could not observe, and what the report could not symbolise.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Notes {
    /// The runtime's notes (deduplicated over inputs) and merging remarks.
    pub notes: Vec<String>,
    /// Symbolisation problems, one per module (missing, changed, no debug info readable).
    pub warnings: Vec<String>,
}

/// The allocator analysis of every input that has it (docs/allocators.md, "The allocator
/// analysis").
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AllocatorAnalysis {
    pub inputs: Vec<AllocatorInput>,
    /// The allocation sites whose objects cost the allocator most, over all inputs (at most
    /// `--top`): who pays.
    pub top_sites: Vec<AllocSiteCost>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AllocatorInput {
    /// Index into `summary.inputs`.
    pub input: usize,
    /// The allocator in use ("glibc 2.36"; "unknown").
    pub allocator: String,
    /// Where the size kinds come from: `shipped FILE`, `allocator=FILE`, or why none.
    pub description: String,
    /// Whether a description's kind boundary falls inside a size bucket (then the rows near
    /// it are filed by the bucket's lower end).
    pub kinds_approximate: bool,
    /// Operations by op, size kind, reuse and phase (the first call of each thread left out).
    pub ops: Vec<AllocOpRow>,
    /// Nanoseconds in the allocator, summed over threads and rows.
    pub total_ns: f64,
    /// The run's wall-clock time.
    pub duration_ns: u64,
    pub first_calls: u64,
    /// Channels the allocator's work goes through, observable or not.
    pub channels: Vec<AllocChannel>,
    /// Memory at the peak of live requested bytes and at exit (docs/allocators.md, "Memory
    /// overhead").
    pub overhead: Vec<AllocOverhead>,
    /// Switching to each allocator with reference costs, best first.
    pub predictions: Vec<AllocPrediction>,
    /// The in-use allocator's own reference costs over the same operations (None: no rows).
    pub self_check_ns: Option<f64>,
    /// What to do, in words (None: nothing worth changing).
    pub advice: Option<String>,
    /// Events per operation on a sample of operations (None: not counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<AllocEvents>,
    /// Cache lines the allocator shared between threads (None: the profile has no count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub induced_sharing: Option<AllocInducedSharing>,
    /// The mutexes the allocator took inside the program's operations, the most contended
    /// first (at most `--top`; `locks_total` in all).
    #[serde(default)]
    pub locks: Vec<AllocLock>,
    #[serde(default)]
    pub locks_total: usize,
    /// Mutex calls on locks the runtime had no room to keep apart (in the channels only).
    #[serde(default)]
    pub locks_untracked: u64,
    /// Calls whose address reuse the runtime did not see, split between the rows' new and
    /// reused (the profile's `reuse_estimated`).
    #[serde(default)]
    pub reuse_estimated: u64,
    /// The rows' time summed before the cap: `total_ns` is this, at most the threads' CPU
    /// time (`capped` when it was more).
    #[serde(default)]
    pub measured_ns: f64,
    #[serde(default)]
    pub capped: bool,
    /// The process's CPU time, all threads (None: a profile without it; shares are then of
    /// the wall-clock time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_ns: Option<u64>,
    /// What the shares are of: "the threads' CPU time" or "the run's wall-clock time".
    #[serde(default)]
    pub share_of: String,
    /// Sampled timed calls left out as interrupted (preempted, a page-fault storm), and the
    /// empty timing bracket's cost taken off every timed call (ns).
    #[serde(default)]
    pub interrupted: u64,
    #[serde(default)]
    pub bracket_ns: f64,
    /// Where the reference costs come from: this machine's (`profcc detect-allocator
    /// --bench`, cached) or the shipped ones (another machine's), per allocator.
    #[serde(default)]
    pub costs: String,
    /// Why no switching advice is given though predictions exist (the reference costs do not
    /// describe this run within `REFERENCE_AGREEMENT`), one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_advice: Option<String>,
}

/// One mutex of the allocator (docs/allocators.md, "Channels").
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AllocLock {
    pub addr: u64,
    /// Where it lives: `symbol+offset (library)` for a static one with a symbol, else
    /// `sections::allocator::UNNAMED_LOCK`.
    pub place: String,
    /// Acquisitions: pthread_mutex_lock at once (`mutex`), after a wait (`mutex_wait`), and
    /// trylocks that got it (`mutex_try`).
    pub taken: u64,
    pub waited: u64,
    pub wait_ns: f64,
    /// Trylocks that found it held.
    pub busy: u64,
    /// Releases inside the operation that took it, and the time from taking to release.
    pub held: u64,
    pub hold_ns: f64,
}

/// Events per sampled operation (docs/allocators.md, "Events per operation").
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AllocEvents {
    /// hardware, software (page faults only), unavailable, not sampled.
    pub mode: String,
    pub why: Option<String>,
    /// One operation in `period` per thread sampled.
    pub period: u64,
    /// The events counted (`profcc_schema::allocator::EVENTS` names).
    pub counted: Vec<String>,
    /// Per op and size kind: samples and each counted event's mean per operation.
    pub rows: Vec<AllocEventRow>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AllocEventRow {
    pub op: String,
    pub size_kind: String,
    pub samples: u64,
    /// Mean per sampled operation, in `counted` order.
    pub per_op: Vec<f64>,
}

/// Allocator-induced false sharing (docs/allocators.md, "Allocator-induced false sharing").
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AllocInducedSharing {
    pub active_lines: u64,
    pub passive_lines: u64,
    /// Lines the runtime's table had no room for (not counted).
    pub untracked_lines: u64,
    /// Lines listed in the profile (the first `max_listed` shared), which the sites and the
    /// invalidations below are over.
    pub listed: u64,
    pub max_listed: u64,
    /// With the sharing analysis in the same run: listed lines it saw invalidated, and their
    /// invalidations (None: it did not run).
    pub contended_lines: Option<u64>,
    pub invalidations: Option<u64>,
    /// Allocation sites whose objects made lines shared, most lines first (at most `--top`).
    pub sites: Vec<AllocInducedSite>,
    /// What to do, in words (None: no shared line).
    pub advice: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AllocInducedSite {
    pub site: String,
    pub active: u64,
    pub passive: u64,
    /// Invalidations the sharing analysis saw on these lines (None: it did not run).
    pub invalidations: Option<u64>,
}

/// An allocator operation's mean below this many ns is below what a timing bracket (two TSC
/// reads) resolves: mimalloc's malloc and free of 32 bytes take about what the empty bracket
/// takes, and their rows read between 0 and about 0.5 ns (tests/tests/allocator_analysis.rs).
/// The text and the page show such a mean as `< 1`, the JSON and CSV the number.
pub const TIMER_FLOOR_NS: f64 = 1.0;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AllocOpRow {
    /// malloc, calloc, realloc, free, new, delete, aligned.
    pub op: String,
    /// small, medium, big; "unknown" for frees of objects the runtime had not recorded.
    pub size_kind: String,
    pub reuse: String,
    pub phase: String,
    pub count: u64,
    /// Calls whose time was read (`alloc_time`); `mean_ns` is theirs, `total_ns` the mean
    /// times `count`.
    pub timed: u64,
    pub mean_ns: f64,
    pub total_ns: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AllocChannel {
    /// mmap, munmap, mremap, madvise, mprotect, sbrk, mutex, mutex_wait.
    pub channel: String,
    /// False: the allocator makes these calls where profcc cannot see them.
    pub observable: bool,
    /// Why not, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
    pub count: u64,
    pub total_ns: f64,
    /// Calls per operation: (op, count, ns).
    pub by_op: Vec<(String, u64, f64)>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AllocSiteCost {
    /// The program's call (first frame outside allocation wrappers), "file:line function".
    pub site: String,
    pub count: u64,
    pub allocator_ns: f64,
    pub share: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AllocPrediction {
    /// "jemalloc 5.3.0".
    pub allocator: String,
    /// Nanoseconds the same operations would take at its reference costs, scaled by the
    /// measured time over the in-use allocator's own (`scaled_prediction`).
    pub predicted_ns: f64,
    /// predicted - measured (negative: faster).
    pub change_ns: f64,
    /// change / the input's `share_of` basis (the threads' CPU time; the wall-clock time for
    /// a profile without it).
    pub change_of_run: f64,
    /// How to try it.
    pub how: String,
}

/// Heap memory at one moment, split (docs/allocators.md, "Memory overhead"):
/// heap_rss = usable + blowup + external_and_metadata, usable = requested +
/// internal_fragmentation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AllocOverhead {
    /// "peak" or "exit".
    pub moment: String,
    pub requested: u64,
    pub usable: u64,
    pub internal_fragmentation: u64,
    /// Usable bytes freed and not allocated again by the freeing thread, per size bucket.
    pub blowup: u64,
    /// Resident set size above what it was when the runtime started.
    pub heap_rss: u64,
    /// heap_rss - usable - blowup (0 when negative): free space between blocks, allocator
    /// metadata, and whatever else the program touched since it started.
    pub external_and_metadata: u64,
    /// Cache lines and pages holding live heap objects, and their utilisation: requested /
    /// (64 x lines), requested / (4096 x pages) (docs/allocators.md, "Utilisation"; None: not
    /// measured, as under `alloc_sample`).
    pub lines: Option<u64>,
    pub pages: Option<u64>,
    pub line_utilisation: Option<f64>,
    pub page_utilisation: Option<f64>,
    /// Bytes of the pages the program's instrumented code touched, still mapped, from the
    /// access shadow (None: no module built with `numa`); `untouched` = heap_rss - touched
    /// (0 when negative): resident memory the program's code never touched (allocator
    /// metadata, memory the allocator itself wrote or zeroed, uninstrumented code's pages,
    /// profcc's own tables).
    pub touched: Option<u64>,
    pub untouched: Option<u64>,
}

/// Regions of interest (`PROFCC_ROI_BEGIN`/`PROFCC_ROI_END`; docs/regions.md).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Regions {
    /// One row per input, region and thread, by input, region name, thread.
    pub rows: Vec<RegionRow>,
    /// Markers the runtime could not file, summed over inputs (see the notes).
    pub dropped: u64,
    /// Ends with no open region of that name in their thread, summed over inputs.
    pub unmatched_ends: u64,
    /// The largest `roi_sample` of the inputs (1: every execution counted).
    #[serde(default = "profcc_schema::regions::default_sample_period")]
    pub sample_period: u64,
    /// The largest `roi_time` of the inputs (microseconds; 0: every execution timed):
    /// executions of a region shorter than this on average were timed one in
    /// `TIME_SAMPLE` (`RegionRow::time_samples`; docs/regions.md, "Time").
    #[serde(default)]
    pub time_min_us: u64,
    /// What the perf events could count (the first input that read any; absent:
    /// `roi_events=0` in every input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<profcc_schema::regions::EventStatus>,
    /// The inputs' snapshots over time (`roi_interval`; docs/regions.md, "Snapshots"): the
    /// HTML report's Timeline. Absent when no input has any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub snapshots: Vec<RegionSnapshots>,
    /// Per input (by index), the machine's memory bandwidth `profcc calibrate` measured, as
    /// the program found it at its dump (null: not measured; docs/regions.md, "Against the
    /// machine's bandwidth").
    #[serde(default)]
    pub machine_bandwidth: Vec<Option<profcc_schema::regions::Bandwidth>>,
    /// One row per input and region, all its threads together.
    #[serde(default)]
    pub totals: Vec<RegionTotal>,
}

/// A region's threads together: their bytes over the longest thread's time in it (the
/// region's time when its threads run it at once, as an OpenMP team does under the
/// master's markers).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RegionTotal {
    /// Index in `summary.inputs`.
    pub input: usize,
    pub region: String,
    /// Threads with a row of the region.
    pub threads: u32,
    pub executions: u64,
    /// `bytes_read + bytes_written` over the threads whose code was counted (absent: none was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The longest thread's time inside the region.
    pub seconds: f64,
    /// `bytes / seconds / 1e9`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gbytes_per_s: Option<f64>,
    /// `gbytes_per_s` over the machine's all-threads bandwidth (`Bandwidth::all_gbps`; 1.0:
    /// as fast as STREAM's best with every CPU). Absent: not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_share: Option<f64>,
}

/// One input's region snapshots, cumulative counts per region and thread at each moment.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RegionSnapshots {
    /// Index in `summary.inputs`.
    pub input: usize,
    /// TSC ticks per second (a row's `ticks` over it: seconds inside the region).
    pub tsc_hz: f64,
    pub snapshots: Vec<profcc_schema::regions::Snapshot>,
    /// The heap object (an Objects row's `name`) of each allocation stack id the snapshots'
    /// `sites` list.
    #[serde(default)]
    pub heap_objects: std::collections::BTreeMap<u32, String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RegionRow {
    /// Index in `summary.inputs`.
    pub input: usize,
    pub region: String,
    pub thread: u32,
    /// Completed executions (a begin and its end).
    pub executions: u64,
    /// Time inside the region, begin to end, TSC ticks over the run's calibrated rate
    /// (sampled: scaled as the counts are).
    pub seconds: f64,
    /// With `roi_sample` > 1: the executions whose code was counted and timed (the counts
    /// and the time stand for all `executions`; docs/regions.md, "Sampling").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted_executions: Option<u64>,
    /// With `roi_sample` > 1: calls counted at 1 in N inside the exact executions
    /// (docs/regions.md, "Sampling inside an execution").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampled_calls: Option<u64>,
    /// Executions timed at one in `TIME_SAMPLE`, each weighing it in `seconds` (absent:
    /// every counted execution was timed; docs/regions.md, "Time").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_samples: Option<u64>,
    /// What the region's code did in this thread (absent: built without region counters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<profcc_schema::regions::Counts>,
    /// `(bytes_read + bytes_written) / seconds / 1e9`, when both are known: the measured
    /// time, which includes the counters' own cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gbytes_per_s: Option<f64>,
    /// The overhead correction factor (`Counts::correction_factor`, docs/regions.md
    /// "Bandwidth") and `gbytes_per_s` times it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correction_factor: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gbytes_per_s_corrected: Option<f64>,
    /// `gbytes_per_s` over the machine's one-thread bandwidth (`Bandwidth::single_gbps`; 1.0:
    /// as fast as STREAM's best on one CPU). Absent: not measured, or no GB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_share: Option<f64>,
    /// Perf events of the executions that read them (`profcc_schema::regions::EVENTS`
    /// order; docs/regions.md, "Hardware counters").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<profcc_schema::regions::RowEvents>,
}

/// One object's figures from every analysis, joined on its identity
/// (`profcc_analysis::findings::Object`: a heap object's allocation `file:line`, a global's
/// or a region's name). A figure an analysis did not measure is null.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ObjectRow {
    pub kind: String,
    pub name: String,
    /// Heap: allocations, bytes and live peak of its sites (all recorded sites merged by
    /// identity), and the allocator's time on them.
    pub allocations: Option<u64>,
    pub bytes: Option<u64>,
    pub live_bytes_peak: Option<u64>,
    pub allocator_ns: Option<f64>,
    /// Heap: the lifetimes of its freed blocks in allocations (its sites' merged).
    #[serde(default)]
    pub lifetime: Option<profcc_schema::Lifetime>,
    /// The sharing findings' kinds on it and their invalidations.
    pub sharing: Vec<String>,
    pub invalidations: Option<u64>,
    /// NUMA: accesses to its pages, local and remote, and who touched them first.
    pub numa_local: Option<u64>,
    pub numa_remote: Option<u64>,
    pub first_touch_thread: Option<u32>,
    /// Regions: bytes read and written inside the region (all threads).
    pub region_bytes: Option<u64>,
    /// Keys of the findings about it.
    pub findings: Vec<String>,
}

/// Per-rank totals of a report of several processes (one MPI rank, or one forked process, per
/// input; docs/report.md, "Ranks").
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Ranks {
    /// One row per input, by rank (inputs without a rank last, in command-line order).
    pub rows: Vec<RankRow>,
    /// Per metric (the [`RankRow`] counters, in [`RANK_METRICS`] order): its spread over the
    /// rows and the heaviest one.
    pub metrics: Vec<RankMetric>,
    /// Per finding (its impact in seconds, by key), heap object (allocations and bytes, by
    /// identity) and listed access line (accesses, by `file:line`): its spread over the ranks.
    /// Findings first, then objects, then lines; each by the heaviest rank's excess over the mean (max - mean), largest first.
    #[serde(default)]
    pub spreads: Vec<RankSpread>,
}

/// One finding's, object's or line's quantity over the ranks.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct RankSpread {
    /// `finding`, `object` or `line`.
    pub what: String,
    /// The finding's key, the object's identity (`heap:file:line`), or `file:line`.
    pub key: String,
    /// `seconds` (a finding's impact), `allocations`, `bytes`, `accesses`.
    pub metric: String,
    #[serde(flatten)]
    pub spread: Spread,
}

/// The metrics of [`RankRow`] that [`Ranks::metrics`] spreads, by name.
pub const RANK_METRICS: &[&str] = &[
    "threads",
    "accesses",
    "allocations",
    "bytes_allocated",
    "peak_bytes",
    "remote_accesses",
    "invalidations",
    "seconds",
];

/// One process's totals.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct RankRow {
    /// The MPI rank its launcher gave it (absent: not started by one; the profile's `rank`).
    pub rank: Option<u32>,
    /// Index of the profile on the command line, from 0.
    pub input: usize,
    pub host: String,
    pub pid: u32,
    pub threads: u32,
    pub accesses: u64,
    pub allocations: u64,
    pub bytes_allocated: u64,
    /// Its live heap peak (the profile's `live_bytes_peak`).
    pub peak_bytes: u64,
    /// NUMA analysis: accesses to pages of another home (0 without the analysis).
    pub remote_accesses: u64,
    /// Sharing analysis: invalidations on the lines it recorded (0 without the analysis).
    pub invalidations: u64,
    /// Wall-clock run time up to its dump.
    pub seconds: f64,
}

impl RankRow {
    /// The value of one of [`RANK_METRICS`].
    pub fn metric(&self, name: &str) -> f64 {
        match name {
            "threads" => self.threads as f64,
            "accesses" => self.accesses as f64,
            "allocations" => self.allocations as f64,
            "bytes_allocated" => self.bytes_allocated as f64,
            "peak_bytes" => self.peak_bytes as f64,
            "remote_accesses" => self.remote_accesses as f64,
            "invalidations" => self.invalidations as f64,
            "seconds" => self.seconds,
            _ => 0.0,
        }
    }
}

/// One metric over the ranks.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct RankMetric {
    pub metric: String,
    #[serde(flatten)]
    pub spread: Spread,
}

/// How one quantity spreads over the inputs (ranks) of a report: a rank where it does not
/// occur counts as 0 (in `min`, `mean` and the coefficient of variation).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Spread {
    pub sum: f64,
    pub min: f64,
    pub mean: f64,
    pub max: f64,
    /// Coefficient of variation: population standard deviation / mean (0 when the mean is 0).
    pub cv: f64,
    /// max / mean (1: balanced; the number of ranks: all of it on one; 0 when the mean is 0).
    pub imbalance: f64,
    /// The rank holding the maximum (the first one on a tie); absent for an input without a
    /// rank, then `worst_input` names it.
    pub worst_rank: Option<u32>,
    /// Index of the input holding the maximum.
    pub worst_input: usize,
    /// Inputs (ranks) where it is not 0, and of how many.
    pub present: u32,
    pub of: u32,
}

impl Spread {
    /// The spread of `values` (one per input, in input order; `ranks[i]` is input i's rank).
    pub fn of(values: &[f64], ranks: &[Option<u32>]) -> Spread {
        let n = values.len();
        if n == 0 {
            return Spread::default();
        }
        let sum: f64 = values.iter().sum();
        let mean = sum / n as f64;
        let (mut worst, mut max, mut min) = (0usize, values[0], values[0]);
        for (i, &v) in values.iter().enumerate() {
            if v > max {
                (worst, max) = (i, v);
            }
            min = min.min(v);
        }
        let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
        Spread::from_moments(
            (sum, min, max, var),
            (ranks.get(worst).copied().flatten(), worst),
            values.iter().filter(|&&v| v != 0.0).count() as u32,
            n as u32,
        )
    }

    /// The spread of `of` values with this sum, minimum, maximum and population variance, the
    /// maximum on `worst` (rank, input or row), `present` of them not 0.
    fn from_moments(
        (sum, min, max, var): (f64, f64, f64, f64),
        worst: (Option<u32>, usize),
        present: u32,
        of: u32,
    ) -> Spread {
        let mean = sum / of as f64;
        let (cv, imbalance) = if mean > 0.0 {
            (var.sqrt() / mean, max / mean)
        } else {
            (0.0, 0.0)
        };
        Spread {
            sum,
            min,
            mean,
            max,
            cv,
            imbalance,
            worst_rank: worst.0,
            worst_input: worst.1,
            present,
            of,
        }
    }
}

/// Where an input's row comes in the Ranks table: by rank, inputs without one after, in
/// command-line order. A tie for a spread's maximum names the first row.
pub fn rank_row_key(rank: Option<u32>, input: usize) -> (bool, Option<u32>, usize) {
    (rank.is_none(), rank, input)
}

/// A [`Spread`] of counts built one input at a time, in any order, without keeping the
/// values: each input's count is given once ([`SpreadAcc::add`]), inputs never given count
/// as 0. The sums are exact integers, so the variance is too (up to its conversion).
#[derive(Debug, Clone)]
pub struct SpreadAcc {
    present: u32,
    sum: u128,
    /// Sum of squares; None once it would overflow (then `sumsq_f` holds it).
    sumsq: Option<u128>,
    sumsq_f: f64,
    min: u64,
    /// The largest count, its input's row key ([`rank_row_key`]).
    max: Option<(u64, (bool, Option<u32>, usize))>,
}

impl Default for SpreadAcc {
    fn default() -> SpreadAcc {
        SpreadAcc {
            present: 0,
            sum: 0,
            sumsq: Some(0),
            sumsq_f: 0.0,
            min: 0,
            max: None,
        }
    }
}

impl SpreadAcc {
    /// Input `input` (rank `rank`) has `v`.
    pub fn add(&mut self, input: usize, rank: Option<u32>, v: u64) {
        if v == 0 {
            return;
        }
        let sq = v as u128 * v as u128;
        self.min = if self.present == 0 {
            v
        } else {
            self.min.min(v)
        };
        self.present += 1;
        self.sum += v as u128;
        self.sumsq = self.sumsq.and_then(|s| s.checked_add(sq));
        self.sumsq_f += sq as f64;
        let key = rank_row_key(rank, input);
        if self.max.is_none_or(|(m, k)| v > m || (v == m && key < k)) {
            self.max = Some((v, key));
        }
    }

    /// The spread over `of` inputs; `first` (rank, input) is the first row's, named when
    /// every value is 0.
    pub fn spread(&self, of: u32, first: (Option<u32>, usize)) -> Spread {
        if of == 0 {
            return Spread::default();
        }
        let n = of as u128;
        let min = if self.present < of { 0 } else { self.min };
        let (max, worst) = match self.max {
            Some((m, (_, rank, input))) => (m, (rank, input)),
            None => (0, first),
        };
        // n * sum(v^2) - sum(v)^2 over n^2, exactly while it fits.
        let var = match self
            .sumsq
            .and_then(|q| q.checked_mul(n))
            .zip(self.sum.checked_mul(self.sum))
        {
            Some((a, b)) => a.saturating_sub(b) as f64 / (n * n) as f64,
            None => {
                let mean = self.sum as f64 / of as f64;
                (self.sumsq_f / of as f64 - mean * mean).max(0.0)
            }
        };
        Spread::from_moments(
            (self.sum as f64, min as f64, max as f64, var),
            worst,
            self.present,
            of,
        )
    }
}
