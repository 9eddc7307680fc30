//! The allocator analysis's section of a profile (`rt/src/analyses/allocator.rs` writes it,
//! `profcc report` reads it; docs/allocators.md has the formulas).

use serde::{Deserialize, Serialize};

/// `OpCell::op` values, in the runtime's order (rt/src/analyses/allocator/timing.h's `OP_`
/// enum follows it; a unit test in rt/src/analyses/allocator.rs reads that enum).
pub const OPS: [&str; 7] = [
    "malloc", "calloc", "realloc", "free", "new", "delete", "aligned",
];
/// `ChannelCell::channel` values, in the runtime's order (timing.h's `CH_` enum).
pub const CHANNELS: [&str; 11] = [
    "mmap",
    "munmap",
    "mremap",
    "mutex",
    "mutex_wait",
    "mutex_try",
    "mutex_busy",
    "mutex_hold",
    "madvise",
    "mprotect",
    "sbrk",
];

/// `EventCell::values` order (rt/src/analyses/allocator/events.rs opens them).
pub const EVENTS: [&str; 4] = ["instructions", "cache_misses", "dtlb_misses", "page_faults"];

/// Events counted on a sample of operations (`alloc_events=N`).
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Events {
    /// "hardware" (the CPU's counters and page faults), "software" (page faults only: the
    /// machine gives no hardware counters to this process), "unavailable"
    /// (`perf_event_open` refused), or "not sampled" (no operation was).
    pub mode: String,
    /// Why hardware counters or all events are missing (the refused call's error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// One operation in `period` per thread is sampled.
    pub period: u64,
    /// The events counted, in `EVENTS` order (a subset of it).
    pub counted: Vec<String>,
    pub cells: Vec<EventCell>,
}

/// Sampled operations of one op and request-size bucket (as `OpCell`) and their summed
/// events, in `EVENTS` order (0 for an event not counted).
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct EventCell {
    pub op: String,
    pub lo: u64,
    pub hi: u64,
    pub samples: u64,
    pub values: Vec<u64>,
}

/// Time the program's allocator spent per operation, by request size, address reuse and
/// phase, with the system calls and locks it made inside them, and its memory overhead.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Allocator {
    /// TSC ticks per second, measured against `CLOCK_MONOTONIC` over the run.
    pub tsc_hz: f64,
    /// One row per (operation, request-size range, reuse, phase) that happened.
    pub ops: Vec<OpCell>,
    /// What the allocator did through the calls profcc interposes, per operation.
    pub channels: Vec<ChannelCell>,
    /// Each thread's first timed operation (the allocator's per-thread initialisation),
    /// left out of `ops`.
    pub first_calls: u64,
    /// The description given with `allocator=FILE` (its text), when one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Memory at the peak of live requested bytes and at the dump.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead: Option<Overhead>,
    /// Events per operation on a sample of operations (None: `alloc_events=0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<Events>,
    /// Cache lines the allocator shared between threads (None: under `alloc_sample`, which
    /// records only some objects; kept when sampling could not start and every object was
    /// recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub induced_sharing: Option<InducedSharing>,
    /// Each mutex the allocator took inside the program's operations (its `mutex*` channels
    /// per lock; absent in profiles written before they were kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub locks: Vec<LockCell>,
    /// Mutex calls on locks the runtime's table had no room for (in `channels`, not `locks`).
    #[serde(default, skip_serializing_if = "crate::is_zero")]
    pub locks_untracked: u64,
    /// Calls whose address reuse was not seen (under `alloc_sample`, the allocations of the
    /// tail path: malloc, calloc, realloc(0, n), new and new[]; their address is never
    /// looked at), filed in `ops` as new and reused
    /// in the proportion of the calls of their operation, size range and phase whose reuse
    /// was seen.
    #[serde(default, skip_serializing_if = "crate::is_zero")]
    pub reuse_estimated: u64,
    /// What an empty timing bracket (two TSC reads, nothing between) costs, in ticks: the
    /// median of [`BRACKET_SAMPLES`] measured at the analysis's start, taken off every timed
    /// call (a call cheaper than it counts 0). Absent in profiles written before it was.
    #[serde(default, skip_serializing_if = "crate::is_zero")]
    pub bracket_ticks: u64,
    /// Sampled timed calls (each standing for more than one call) that took longer than
    /// [`INTERRUPTED_FROM_NS`] (or whose TSC ran backwards: moved to another CPU): the
    /// thread was preempted or the call met a page-fault storm. They are left out of the
    /// means (still counted in `count`).
    #[serde(default, skip_serializing_if = "crate::is_zero")]
    pub interrupted: u64,
    /// The process's CPU time (user + system, every thread, ended ones too) at the dump, in
    /// nanoseconds: the allocator's time cannot exceed it (the report caps it there). None:
    /// a profile written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_ns: Option<u64>,
}

/// Empty timing brackets measured at the analysis's start ([`Allocator::bracket_ticks`]).
pub const BRACKET_SAMPLES: usize = 63;

/// A sampled timed call longer than this is taken as interrupted (preemption, a page-fault
/// storm) and left out of the means ([`Allocator::interrupted`]): 25 µs is about a thousand
/// times a small malloc or free and well under a scheduler's time slice (milliseconds). Only
/// calls that stand for more than one call are tested: one interrupted call timed at one in
/// 1,024 would add 1,024 times its interruption. Calls of `TIME_ALL_FROM` bytes or more
/// (weight 1; a big calloc legitimately takes milliseconds) are kept.
pub const INTERRUPTED_FROM_NS: u64 = 25_000;

/// One mutex the allocator took: its `mutex*` channels (see [`ChannelCell`]), over all
/// operations.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct LockCell {
    /// The mutex's address (the report names a static one by its symbol).
    pub addr: u64,
    /// Non-zero channels only, each with its count and ticks.
    pub channels: Vec<LockChannel>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct LockChannel {
    pub channel: String,
    pub count: u64,
    pub cycles: u64,
}

/// The channels kept per lock: `CHANNELS[MUTEX_FIRST..MUTEX_FIRST + MUTEX_CHANNELS]` (a unit
/// test checks they are the `mutex*` ones).
pub const MUTEX_FIRST: usize = 3;
pub const MUTEX_CHANNELS: usize = 5;

#[cfg(test)]
#[test]
fn mutex_channels_are_the_mutex_ones() {
    let named: Vec<usize> = (0..CHANNELS.len())
        .filter(|&i| CHANNELS[i].starts_with("mutex"))
        .collect();
    assert_eq!(
        named,
        (MUTEX_FIRST..MUTEX_FIRST + MUTEX_CHANNELS).collect::<Vec<_>>()
    );
}

/// Allocator-induced false sharing: cache lines that came to hold live objects of different
/// threads, each counted once until its last object was freed (docs/allocators.md).
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct InducedSharing {
    /// The allocator handed neighbouring blocks to different threads.
    pub active_lines: u64,
    /// A thread got back a block it had freed for another thread, next to that thread's
    /// live objects.
    pub passive_lines: u64,
    /// Edge lines the runtime's table had no room for (not counted).
    pub untracked_lines: u64,
    /// The first `max_listed` lines that became shared.
    pub lines: Vec<InducedLine>,
    pub max_listed: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct InducedLine {
    /// Cache line address.
    pub addr: u64,
    pub passive: bool,
    /// The thread whose allocation shared the line, and another owner (None: a fourth
    /// thread, not tracked).
    pub thread: u32,
    pub other_thread: Option<u32>,
    /// Stack id (the profile's `stacks`) of the new object's allocation call.
    pub alloc_stack: u32,
}

/// Requests of this many bytes or more are timed on every call, whatever `alloc_time` says
/// (they are rare and slow: a sample would miss them, and the two TSC reads cost them
/// little). A power of two, so a size bucket's calls are all timed or all sampled (a runtime
/// unit test checks it is a bucket edge, and that rt/src/analyses/allocator/timing.h's copy
/// is this value).
pub const TIME_ALL_FROM: u64 = 4096;

/// The timing gap grows as a thread makes timed calls: one call in about `alloc_time` for its
/// first `TIME_LEVEL_DRAWS` timed calls, then one in 2 x `alloc_time` for the next as many,
/// and so on up to one in 2^`TIME_MAX_SHIFT` x `alloc_time` (`alloc_time=1`: every call, no
/// growth). Each timed call stands for the calls of the gap it closed (its weight), so a
/// cell's mean is weighted (`OpCell::cycles`). rt/src/analyses/allocator/timing.h's copies
/// are these values (a runtime unit test reads them).
pub const TIME_LEVEL_DRAWS: u32 = 256;
pub const TIME_MAX_SHIFT: u32 = 4;

/// The page of `Usage::pages` (and of the runtime's page rounding): x86-64's 4 KiB.
pub const PAGE: u64 = 4096;

/// Operations of one kind, the allocator's time in TSC ticks.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct OpCell {
    /// malloc, calloc, realloc, free, new, delete, aligned.
    pub op: String,
    /// Request bytes in [lo, hi) (`hi` = u64::MAX: unbounded); lo = hi = 0: unknown (a free
    /// of an object the runtime had not recorded).
    pub lo: u64,
    pub hi: u64,
    /// "new" (an address not seen freed before) or "reused" (the address of a recently freed
    /// block, or realloc in place).
    pub reuse: String,
    /// "serial" (one program thread running) or "parallel".
    pub phase: String,
    pub count: u64,
    /// How many of the `count` calls were timed (`alloc_time`: one call in about N at first,
    /// the gap growing with the thread's timed calls, [`TIME_LEVEL_DRAWS`]; every call of
    /// 4096 bytes or more), and their ticks in the allocator, each timed call's ticks weighted
    /// by the calls it stands for and scaled back to `timed` calls (`cycles` = timed x
    /// sum(ticks x weight) / sum(weight)): the cell's mean is `cycles / timed`, its estimated
    /// total `count x cycles / timed`.
    pub timed: u64,
    pub cycles: u64,
}

/// Calls the allocator made through one channel inside the program's operations of `op`.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct ChannelCell {
    /// mmap, munmap, mremap, madvise, mprotect (system calls), sbrk; mutex
    /// (pthread_mutex_lock calls that got the lock at once), mutex_wait (calls that had to
    /// wait; `cycles`: the wait), mutex_try (pthread_mutex_trylock calls that got it),
    /// mutex_busy (trylock calls that found it held: contention), mutex_hold (unlocks of a
    /// mutex taken inside the same operation; `cycles`: from taking it to its unlock).
    pub channel: String,
    pub op: String,
    pub count: u64,
    pub cycles: u64,
}

/// Heap memory at two moments.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Overhead {
    /// At the highest live requested bytes (taken each time it grew by `step` bytes; None:
    /// live requested bytes never reached `step`, no peak was taken).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak: Option<Usage>,
    /// At the dump.
    pub exit: Usage,
    pub step: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Usage {
    /// Bytes the program asked for, live.
    pub requested: u64,
    /// `malloc_usable_size` of the same objects (class size; for big objects up to the
    /// page end).
    pub usable: u64,
    /// Usable bytes freed and not yet handed out again, summed per size class (the blowup
    /// estimate).
    pub cached_free: u64,
    /// Resident set size, and what it was when the runtime started.
    pub rss: u64,
    pub rss_at_start: u64,
    /// Cache lines (64 bytes) and pages (4 KiB) holding at least one byte of a live heap
    /// object (mmap regions the program made itself are not heap objects): with `requested`
    /// the line and page utilisation (docs/allocators.md, "Utilisation"). None: not measured
    /// (`alloc_sample` recorded only some objects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages: Option<u64>,
    /// Bytes of the pages the program's instrumented code has touched, still mapped, from
    /// the access shadow (heap, stacks and globals alike; docs/allocators.md, "Memory
    /// overhead"). None: no module was built with `numa`, the one that keeps it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub touched: Option<u64>,
}
