//! The allocator analysis (`alloc_ops`; by default on with `alloc_sample`, where its overhead
//! target holds, off with exact recording):
//! what the program's own allocator costs it, per operation, by request size, address reuse
//! and phase, and what the allocator does inside those operations through the calls profcc
//! interposes.
//!
//! How it measures (its C half, beside this file and compiled inside rt/csrc/interpose.c's
//! interposers: allocator/timing.h, allocator/cells.h, allocator/channels.h):
//! every program call of the malloc family and of operator new/delete is counted; one in
//! about `alloc_time` (jittered gaps), and every request of `TIME_ALL_FROM` bytes or more, is
//! timed: the TSC is read just before and just after the real allocator's call (`rdtsc`, not
//! serialising: an average over many calls is right to a few ticks, a single call is not), so
//! profcc's own bookkeeping is not counted. cells.h's `op_done` files the call in its cell
//! of the thread's [`Cells`] and counts it there; [`profcc_alloc_op`] sees only the calls that
//! need more (timed, recorded object, counted events, the thread's first). A cell is:
//! - operation: `profcc_schema::allocator::OPS` (the C enum in timing.h follows it; a
//!   unit test reads it);
//! - request size: a bucket of [`EDGES`] (powers of two from 16 bytes, plus the kind
//!   boundaries of every shipped allocator description and of `allocator=FILE`), so the
//!   report can sum buckets into the description's small/medium/big without straddling;
//! - reuse: "reused" when the address is one the program freed before (cells.h's
//!   `handed_out`: the address's byte in the reuse part of the granule table,
//!   rt/src/alloc.rs `GRANULES`; an address pushed out of its byte by a later free 16 MiB
//!   away counts as new), or a realloc that stayed in place; a free is "reused" when its
//!   block had come back that way; "unknown" for a malloc of sampling's tail path (its
//!   address is never seen), split at the dump ([`split_unknown`]);
//! - phase: "parallel" while more than one program thread runs (`threads::LIVE`).
//!
//! Each thread's first counted call is left out (`first_calls`): the allocator sets up its
//! per-thread state then (glibc's tcache, jemalloc's tsd). Per allocation site, the ticks of
//! the timed operations on the site's objects, each times the calls it stands for, are added
//! to the site's `cycles`.
//!
//! Channels: while the real call runs, `tls.alloc_op` says which operation it is, so the
//! interposed mmap, munmap, mremap and pthread_mutex_lock count (and time) the allocator's
//! own calls, the mutex calls also per mutex (`locks`). Calls the allocator makes inside its
//! library (glibc's malloc calls its internal mmap and locks) never reach an interposer: the
//! report marks those channels "not observable with this allocator" from the description's
//! PLT imports, never as zero.
//!
//! Per-thread cells ([`Cells`], about 30 KiB) are written by their thread only (relaxed load
//! and store); the dump sums every block. A thread's block goes back to a pool when it ends
//! and the next thread keeps adding to it (only sums are reported), so a process holds as
//! many blocks as it had threads alive at once.

use crate::analysis::{Analysis, DumpContext};
use crate::mem::SpinLock;
use core::sync::atomic::{
    AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed,
};
use std::cell::Cell;

use profcc_schema::allocator::{
    BRACKET_SAMPLES, CHANNELS as CHANNEL_NAMES, INTERRUPTED_FROM_NS, OPS as OP_NAMES, TIME_ALL_FROM,
};
use profcc_schema::sharing::LINE;

mod events;
mod lines;
mod locks;
mod pages;
const OPS: usize = OP_NAMES.len();
const CHANNELS: usize = CHANNEL_NAMES.len();
const OP_REALLOC: u32 = 2;
const OP_FREE: u32 = 3;
const OP_DELETE: u32 = 5;

/// Size buckets per operation; the last one is "size unknown".
const BUCKETS: usize = 64;
const UNKNOWN: usize = BUCKETS - 1;
/// Reuse (new, reused, unknown) x phase: a cell's index is reuse * 2 + phase.
const RP: usize = 6;
/// cells.h's `REUSE_UNKNOWN`: an allocation of the tail path, whose address is never seen.
const REUSE_UNKNOWN: usize = 2;
/// The index in a bucket's `RP` cells of `reuse` (0 new, 1 reused, `REUSE_UNKNOWN`) and
/// `phase` (0 serial, 1 parallel); cells.h's `cell_of` files by the same rule.
const fn rp(reuse: usize, phase: usize) -> usize {
    reuse * 2 + phase
}

// SHIPPED_KINDS: (small_max, large_threshold) of configs/allocators/*.toml (rt/build.rs).
include!(concat!(env!("OUT_DIR"), "/alloc_kinds.rs"));

/// Where a description's kinds start: medium at small_max + 1, big at large_threshold.
fn kind_starts((small_max, large_threshold): (u64, u64)) -> [u64; 2] {
    [small_max + 1, large_threshold]
}

/// Bucket edges, ascending: bucket i holds requests in [EDGES[i-1] (0 for i = 0), EDGES[i])
/// (the last one up to u64::MAX). Set once by `init`.
#[export_name = "profcc_alloc_edges"]
static EDGES: [AtomicU64; BUCKETS - 2] = [const { AtomicU64::new(0) }; BUCKETS - 2];
#[export_name = "profcc_alloc_nedges"]
static NEDGES: AtomicU32 = AtomicU32::new(0);

/// The set the edges are made of: every power of two from 16 bytes to 1 TiB, and where the
/// kinds of every shipped description and of `extra` start.
fn edge_set(extra: Option<(u64, u64)>) -> Vec<u64> {
    let mut e: Vec<u64> = (4..=40).map(|s| 1u64 << s).collect();
    for k in SHIPPED_KINDS.iter().copied().chain(extra) {
        e.extend(kind_starts(k));
    }
    e.sort_unstable();
    e.dedup();
    e.truncate(BUCKETS - 2);
    e
}

/// Per floor(log2(n)): the number of edges at or below 2^that (where `bucket` starts).
#[export_name = "profcc_alloc_below_pow2"]
static BELOW_POW2: [AtomicU32; 64] = [const { AtomicU32::new(0) }; 64];

/// The bucket of every request below `TIME_ALL_FROM` bytes, one byte each (4 KiB): the
/// interposers' common case is one load (cells.h's `bucket_of`).
#[export_name = "profcc_alloc_small_bucket"]
static SMALL_BUCKET: [AtomicU8; TIME_ALL_FROM as usize] =
    [const { AtomicU8::new(0) }; TIME_ALL_FROM as usize];

fn set_edges(edges: &[u64]) {
    for (i, &e) in edges.iter().enumerate() {
        EDGES[i].store(e, Relaxed);
    }
    NEDGES.store(edges.len() as u32, Relaxed);
    for (l, b) in BELOW_POW2.iter().enumerate() {
        b.store(
            edges.iter().filter(|&&e| e <= 1u64 << l).count() as u32,
            Relaxed,
        );
    }
    let mut below = 0;
    for (n, b) in SMALL_BUCKET.iter().enumerate() {
        while below < edges.len() && edges[below] <= n as u64 {
            below += 1;
        }
        b.store(below as u8, Relaxed);
    }
}

extern "C" {
    /// interpose.c: the bucket of an n-byte request (the number of edges at or below n).
    fn profcc_alloc_bucket(n: u64) -> u32;
    /// interpose.c: the calling thread's block (null: none, calls go to `profcc_alloc_op`).
    fn profcc_alloc_set_cells(cells: *mut u64);
}

/// The bucket of an n-byte request (interpose.c files every operation with it).
fn bucket(n: u64) -> usize {
    unsafe { profcc_alloc_bucket(n) as usize }
}

fn bucket_range(b: usize) -> (u64, u64) {
    if b == UNKNOWN {
        return (0, 0);
    }
    let k = NEDGES.load(Relaxed) as usize;
    let lo = if b == 0 {
        0
    } else {
        EDGES[b - 1].load(Relaxed)
    };
    let hi = if b < k {
        EDGES[b].load(Relaxed)
    } else {
        u64::MAX
    };
    (lo, hi)
}

#[repr(C)]
struct Pair {
    count: AtomicU64,
    cycles: AtomicU64,
}

/// Operations of one kind: all of them, those timed, the timed ones' ticks each times the
/// calls it stands for, and those calls (`schema::allocator::TIME_LEVEL_DRAWS`).
#[repr(C)]
struct OpPair {
    count: AtomicU64,
    timed: AtomicU64,
    cycles: AtomicU64,
    weight: AtomicU64,
}

#[repr(C, align(64))]
struct Cells {
    ops: [[[OpPair; RP]; BUCKETS]; OPS],
    channels: [[Pair; OPS]; CHANNELS],
    first_calls: AtomicU64,
    /// Live requested and usable bytes of the objects this thread allocated minus those it
    /// freed (summed over threads they are the process's).
    requested: AtomicI64,
    usable: AtomicI64,
    /// Per size bucket: usable bytes this thread freed and has not allocated again (never
    /// below zero).
    cached: [AtomicI64; BUCKETS],
    /// Requested bytes not yet added to `LIVE_REQUESTED`.
    pending: AtomicI64,
    /// Lines and pages holding live heap objects that this thread's allocations added minus
    /// those its frees took away (`pages.rs`; summed over threads: the process's).
    lines: AtomicI64,
    pages: AtomicI64,
    /// Sampled operations (`alloc_events`) per op and bucket: their count, then their summed
    /// events in `events::EVENTS` order.
    events: [[[AtomicU64; events::NEV + 1]; BUCKETS]; OPS],
    /// Sampled timed calls left out as interrupted (`INTERRUPTED_FROM_NS`).
    interrupted: AtomicU64,
}

/// What an empty timing bracket costs (ticks; `bracket_ticks` in the profile): set by `init`,
/// taken off every timed call.
static BRACKET: AtomicU64 = AtomicU64::new(0);
/// A sampled timed call of more ticks than this was interrupted (`INTERRUPTED_FROM_NS` at
/// the TSC's early rate; set by `init`, u64::MAX before).
static INTERRUPTED_TICKS: AtomicU64 = AtomicU64::new(u64::MAX);

/// The median of `BRACKET_SAMPLES` empty brackets: two TSC reads as timing.h takes them
/// around the real call, with nothing between.
fn measure_bracket() -> u64 {
    let mut v = [0u64; BRACKET_SAMPLES];
    for x in v.iter_mut() {
        let a = crate::clock::tsc();
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
        let b = crate::clock::tsc();
        *x = b.wrapping_sub(a);
    }
    v.sort_unstable();
    v[BRACKET_SAMPLES / 2]
}

/// A timed call's ticks in the allocator: its bracket less the empty bracket's cost (at
/// least 0), or None when it was interrupted: a call standing for more than one (`weight`)
/// longer than `limit` ticks, or one whose TSC ran backwards (moved to a CPU whose TSC is
/// behind: the unsigned difference is huge).
fn call_ticks(raw: u64, weight: u32, bracket: u64, limit: u64) -> Option<u64> {
    if raw > i64::MAX as u64 || (weight > 1 && raw > limit) {
        return None;
    }
    Some(raw.saturating_sub(bracket))
}

/// The process's CPU time (user + system, all threads, ended ones too), ns.
fn process_cpu_ns() -> Option<u64> {
    let mut u: libc::rusage = unsafe { core::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return None;
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    Some(tv(u.ru_utime) + tv(u.ru_stime))
}

/// Every block ever made, and those no thread holds.
static ALL: SpinLock<Vec<usize>> = SpinLock::new(Vec::new());
static FREE: SpinLock<Vec<usize>> = SpinLock::new(Vec::new());
/// For calls after the thread's block went back (TLS destructors): locked adds.
static SHARED: AtomicPtr<Cells> = AtomicPtr::new(core::ptr::null_mut());
const EXITED: usize = 1;

thread_local! {
    /// The thread's block: 0 none yet, [`EXITED`], else its address (also in interpose.c's
    /// `tls.alloc_cells`, where the thread's calls are counted).
    static MINE: Cell<usize> = const { Cell::new(0) };
}

fn new_cells() -> usize {
    let l = std::alloc::Layout::new::<Cells>();
    unsafe { std::alloc::alloc_zeroed(l) as usize }
}

/// The calling thread's cells and whether it owns them (else: the shared block, locked adds).
#[inline]
fn mine() -> Option<(&'static Cells, bool)> {
    let p = MINE.with(|m| m.get());
    if p > EXITED {
        return Some((unsafe { &*(p as *const Cells) }, true));
    }
    mine_slow(p)
}

/// The thread has no block yet, or gave it back.
#[cold]
#[inline(never)]
fn mine_slow(p: usize) -> Option<(&'static Cells, bool)> {
    if p == EXITED {
        return unsafe { SHARED.load(Relaxed).as_ref() }.map(|c| (c, false));
    }
    let p = match FREE.lock().pop() {
        Some(p) => p,
        None => {
            let p = new_cells();
            if p == 0 {
                return None;
            }
            ALL.lock().push(p);
            p
        }
    };
    MINE.with(|m| m.set(p));
    unsafe { profcc_alloc_set_cells(p as *mut u64) };
    Some((unsafe { &*(p as *const Cells) }, true))
}

#[inline]
fn add_i(a: &AtomicI64, v: i64, own: bool) {
    if own {
        a.store(a.load(Relaxed).wrapping_add(v), Relaxed);
    } else {
        a.fetch_add(v, Relaxed);
    }
}

#[inline]
fn add(a: &AtomicU64, v: u64, own: bool) {
    if own {
        a.store(a.load(Relaxed).wrapping_add(v), Relaxed);
    } else {
        a.fetch_add(v, Relaxed);
    }
}

// ---------------------------------------------------------------------------------------------
// Entry points from interpose.c (guard set).

extern "C" {
    static mut profcc_alloc_timing: u32;
    static mut profcc_alloc_time_period: u32;
}

/// `profcc_alloc_op`'s `flags` bits (timing.h's `OP_EVENTS`, `OP_FIRST`): the
/// operation's events were counted; it is the thread's first.
const EVENTS_BIT: u32 = 1 << 8;
const FIRST_BIT: u32 = 1 << 9;

/// What cells.h's `op_done` does not count itself: the program's operation filed in
/// `cell` (an index into `Cells::ops`: operation, size bucket, reuse, phase), with `flags`
/// ([`EVENTS_BIT`] | [`FIRST_BIT`]), on `n` bytes at `p`; `old_n`: realloc's old block's
/// size (`NO_SIZE`: not recorded); `cycles`: ticks in the allocator when timed, standing for
/// `weight` calls (0: not timed); `site`: the object's allocation site (`alloc::NO_SITE`: not
/// recorded).
#[no_mangle]
pub extern "C" fn profcc_alloc_op(
    flags: u32,
    cell: u32,
    n: usize,
    p: *mut libc::c_void,
    old_n: usize,
    cycles: u64,
    weight: u32,
    site: u32,
) {
    let cell = cell as usize;
    if cell >= OPS * BUCKETS * RP {
        return;
    }
    let op = (cell / (BUCKETS * RP)) as u32;
    let Some((c, own)) = mine() else {
        return;
    };
    let sampled = if flags & EVENTS_BIT != 0 {
        events::take()
    } else {
        None
    };
    let (p, n) = (p as u64, n as u64);
    let b = cell / RP % BUCKETS;
    let recorded = site != crate::alloc::NO_SITE;
    // The memory split (usable, requested, blowup, peaks): every object's, or none.
    if EVERY_OBJECT.load(Relaxed) {
        if op == OP_FREE || op == OP_DELETE {
            if recorded {
                released(c, own, n, b);
            }
        } else if p != 0 {
            if op == OP_REALLOC && old_n != NO_SIZE {
                released(c, own, old_n as u64, bucket(old_n as u64));
            }
            if recorded {
                acquired(c, own, p, n, b);
            }
        }
    }
    // The thread's first operation is its allocator's set-up: not counted with the others.
    if flags & FIRST_BIT != 0 {
        add(&c.first_calls, 1, own);
        return;
    }
    let x = &c.ops[cell / (BUCKETS * RP)][b][cell % RP];
    add(&x.count, 1, own);
    let mut weight = weight;
    let mut cycles = cycles;
    if weight != 0 {
        match call_ticks(
            cycles,
            weight,
            BRACKET.load(Relaxed),
            INTERRUPTED_TICKS.load(Relaxed),
        ) {
            Some(t) => {
                cycles = t;
                add(&x.timed, 1, own);
                add(&x.cycles, cycles.saturating_mul(weight as u64), own);
                add(&x.weight, weight as u64, own);
            }
            None => {
                add(&c.interrupted, 1, own);
                weight = 0;
            }
        }
    }
    if let Some(d) = sampled {
        let e = &c.events[op as usize][b];
        add(&e[0], 1, own);
        for (x, v) in e[1..].iter().zip(d) {
            add(x, v, own);
        }
    }
    if recorded && weight != 0 {
        crate::alloc::add_site_cycles(site, cycles.saturating_mul(weight as u64));
    }
}

/// A recorded n-byte block (bucket `b`) was freed: its usable bytes leave the live count and
/// join the thread's freed-not-reused bytes of its bucket.
fn released(c: &Cells, own: bool, n: u64, b: usize) {
    let u = usable_after_free(n) as i64;
    add_i(&c.usable, -u, own);
    add_i(&c.cached[b], u, own);
    live_changed(c, own, -(n as i64));
}

/// A recorded n-byte block at `p` (bucket `b`) was handed out: its usable bytes join the
/// live count and, as far as the thread had freed such blocks, leave its freed-not-reused.
fn acquired(c: &Cells, own: bool, p: u64, n: u64, b: usize) {
    let u = usable_of(p, n) as i64;
    add_i(&c.usable, u, own);
    let slot = &c.cached[b];
    let had = slot.load(Relaxed);
    if had > 0 {
        add_i(slot, -had.min(u), own);
    }
    live_changed(c, own, n as i64);
}

/// timing.h's `NO_SIZE`: realloc's old block was not recorded.
const NO_SIZE: usize = usize::MAX;

/// The allocator called through channel `ch` inside the program's operation `op`; `m`: the
/// mutex of a `mutex*` call (also counted per mutex, [`locks`]), else null.
#[no_mangle]
pub extern "C" fn profcc_alloc_channel(ch: u32, op: u32, cycles: u64, m: *const libc::c_void) {
    let (ch, op) = (ch as usize, op as usize);
    if ch >= CHANNELS || op >= OPS {
        return;
    }
    if let Some((c, own)) = mine() {
        let cell = &c.channels[ch][op];
        add(&cell.count, 1, own);
        add(&cell.cycles, cycles, own);
    }
    locks::note(m as u64, ch, cycles);
}

// ---------------------------------------------------------------------------------------------
// Memory overhead (docs/allocators.md, "Memory overhead").

/// Usage is taken again each time live requested bytes pass their last peak by this much.
pub const OVERHEAD_STEP: i64 = 1 << 20;
/// A thread adds its requested-bytes delta to the process's count past this (either sign):
/// the peak is seen late by at most (threads - 1) x this.
const PENDING_FLUSH: i64 = 256 << 10;
/// Requests up to this size remember the usable size of their first block (one
/// `malloc_usable_size` call per request size); larger ones ask the allocator every time.
const USABLE_MEMO: usize = 32 << 10;
static MEMO: AtomicPtr<AtomicU32> = AtomicPtr::new(core::ptr::null_mut());
static LIVE_REQUESTED: AtomicI64 = AtomicI64::new(0);
static NEXT_SNAPSHOT: AtomicI64 = AtomicI64::new(OVERHEAD_STEP);
static PEAK: SpinLock<Option<profcc_schema::allocator::Usage>> = SpinLock::new(None);
static RSS_AT_START: AtomicU64 = AtomicU64::new(0);
/// Every object is recorded (sampling could not start): the memory split, lines and pages
/// are measured. Under `alloc_sample` a recorded block's free is seldom followed by a recorded
/// allocation that reuses it, so the split's blowup counter would only grow.
static EVERY_OBJECT: AtomicBool = AtomicBool::new(false);

extern "C" {
    /// The program's allocator's `malloc_usable_size` (interpose.c).
    fn profcc_usable(p: *mut libc::c_void) -> usize;
}

/// The memo slot of an n-byte request (None above `USABLE_MEMO`); 0: not known yet.
fn memo(size: u64) -> Option<&'static AtomicU32> {
    let m = MEMO.load(Relaxed);
    (size as usize <= USABLE_MEMO && !m.is_null()).then(|| unsafe { &*m.add(size as usize) })
}

/// The usable size of the live n-byte block at `addr`.
fn usable_of(addr: u64, size: u64) -> u64 {
    let slot = memo(size);
    match slot.map(|m| m.load(Relaxed)) {
        Some(u) if u != 0 => u as u64,
        _ => {
            let u = unsafe { profcc_usable(addr as *mut libc::c_void) } as u64;
            if let Some(m) = slot {
                m.store(u.min(u32::MAX as u64) as u32, Relaxed);
            }
            u
        }
    }
}

/// The usable size an n-byte block had, when it can no longer be asked (after its free):
/// the memo up to `USABLE_MEMO` (filled when such a block was allocated), else the request
/// rounded up to its page end (big blocks).
fn usable_after_free(size: u64) -> u64 {
    match memo(size).map(|m| m.load(Relaxed)) {
        Some(u) if u != 0 => u as u64,
        Some(_) => size,
        None => (size + 4095) & !4095,
    }
}

/// Resident set size (bytes), from /proc/self/statm.
fn rss() -> u64 {
    let Ok(t) = std::fs::read_to_string("/proc/self/statm") else {
        return 0;
    };
    let pages: u64 = t
        .split_whitespace()
        .nth(1)
        .and_then(|x| x.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// The process's usage now (every thread's cells summed).
fn usage() -> profcc_schema::allocator::Usage {
    let blocks = ALL.lock().clone();
    let (mut requested, mut usable, mut lines, mut pages) = (0i64, 0i64, 0i64, 0i64);
    let mut cached = [0i64; BUCKETS];
    for &b in &blocks {
        let c = unsafe { &*(b as *const Cells) };
        requested += c.requested.load(Relaxed);
        usable += c.usable.load(Relaxed);
        lines += c.lines.load(Relaxed);
        pages += c.pages.load(Relaxed);
        for (s, x) in cached.iter_mut().zip(&c.cached) {
            *s += x.load(Relaxed);
        }
    }
    profcc_schema::allocator::Usage {
        requested: requested.max(0) as u64,
        usable: usable.max(0) as u64,
        cached_free: cached.iter().map(|&x| x.max(0) as u64).sum(),
        rss: rss(),
        rss_at_start: RSS_AT_START.load(Relaxed),
        lines: utilisation().then_some(lines.max(0) as u64),
        pages: utilisation().then_some(pages.max(0) as u64),
        touched: super::numa::touched_bytes(),
    }
}

/// Lines and pages holding live objects are counted (`pages.rs`): only when every object is
/// recorded (sampling records some; the others' lines and pages are unknown), the one case
/// `init` maps the page shadow in.
fn utilisation() -> bool {
    pages::tracking()
}

/// Live requested bytes changed by `d` in this thread: past a new peak, take the usage.
fn live_changed(c: &Cells, own: bool, d: i64) {
    add_i(&c.requested, d, own);
    let p = c.pending.load(Relaxed).wrapping_add(d);
    if own && p.abs() < PENDING_FLUSH {
        c.pending.store(p, Relaxed);
        return;
    }
    if own {
        c.pending.store(0, Relaxed);
    }
    let live = LIVE_REQUESTED.fetch_add(if own { p } else { d }, Relaxed) + if own { p } else { d };
    let next = NEXT_SNAPSHOT.load(Relaxed);
    if live >= next
        && NEXT_SNAPSHOT
            .compare_exchange(next, live + OVERHEAD_STEP, Relaxed, Relaxed)
            .is_ok()
    {
        let u = usage();
        let mut peak = PEAK.lock();
        if peak.as_ref().is_none_or(|p| u.requested >= p.requested) {
            *peak = Some(u);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The description given with `allocator=FILE`.

static DESCRIPTION: SpinLock<Option<String>> = SpinLock::new(None);

/// The top-level integer `key = N` of a description (the part before its first table). The
/// runtime reads only these keys and does not link a TOML parser (its dependencies stay
/// small); `profcc report` reads the whole file with the `toml` crate, and a test checks the
/// two agree on every shipped description.
pub fn top_level_int(text: &str, key: &str) -> Option<u64> {
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            return None;
        }
        if let Some((k, v)) = l.split_once('=') {
            if k.trim() == key {
                return v.split('#').next()?.trim().parse().ok();
            }
        }
    }
    None
}

/// A description's (small_max, large_threshold); None when it lacks either.
pub fn kinds_of(text: &str) -> Option<(u64, u64)> {
    Some((
        top_level_int(text, "small_max")?,
        top_level_int(text, "large_threshold")?,
    ))
}

// ---------------------------------------------------------------------------------------------

/// Release this file's locks that `fork_prepare` took (`lines` has its own).
fn unlock_after_fork() {
    unsafe {
        PEAK.force_unlock();
        DESCRIPTION.force_unlock();
        FREE.force_unlock();
        ALL.force_unlock();
    }
}

/// `unknown` calls whose reuse was not seen (the tail path's mallocs), split between new and
/// reused in the proportion of `seen` (the cell's calls whose reuse was seen: new, reused),
/// or of `fallback` (the same over the operation's buckets) when the cell saw none; all new
/// when neither saw any. Returns (new, reused).
fn split_unknown(unknown: u64, seen: (u64, u64), fallback: (u64, u64)) -> (u64, u64) {
    let (n, r) = if seen.0 + seen.1 > 0 { seen } else { fallback };
    if n + r == 0 {
        return (unknown, 0);
    }
    let reused = ((unknown as u128 * r as u128 + (n + r) as u128 / 2) / (n + r) as u128) as u64;
    (unknown - reused, reused)
}

/// A cell's ticks as the profile states them (`OpCell::cycles`): `timed` calls at the
/// weighted mean `cycles / weight` (`cycles`: the sum of ticks x weight).
fn weighted_cycles(timed: u64, cycles: u64, weight: u64) -> u64 {
    if weight == 0 {
        return 0;
    }
    (cycles as u128 * timed as u128 / weight as u128) as u64
}

/// The counters `cell` picks from each block, summed over `blocks`.
fn summed<const N: usize>(blocks: &[usize], cell: impl Fn(&Cells) -> [&AtomicU64; N]) -> [u64; N] {
    let mut sum = [0u64; N];
    for &b in blocks {
        for (s, x) in sum.iter_mut().zip(cell(unsafe { &*(b as *const Cells) })) {
            *s += x.load(Relaxed);
        }
    }
    sum
}

pub struct AllocatorAnalysis;
pub static ALLOCATOR: AllocatorAnalysis = AllocatorAnalysis;

impl Analysis for AllocatorAnalysis {
    fn name(&self) -> &'static str {
        "allocator"
    }

    fn init(&self) {
        let o = crate::options::get();
        if !o.alloc_ops() {
            return;
        }
        let mut extra = None;
        let path = o.allocator.as_str();
        if !path.is_empty() {
            match std::fs::read_to_string(path) {
                Ok(t) if kinds_of(&t).is_some() => {
                    extra = kinds_of(&t);
                    *DESCRIPTION.lock() = Some(t);
                }
                Ok(_) => crate::log::stderr_line(&format!(
                    "profcc: allocator={path}: not an allocator description (no small_max or \
                     large_threshold); write one with `profcc detect-allocator -o FILE`"
                )),
                Err(e) => crate::log::stderr_line(&format!(
                    "profcc: allocator={path}: cannot read it ({e}); give the path of a \
                     `profcc detect-allocator` description"
                )),
            }
        }
        set_edges(&edge_set(extra));
        // Lines and pages shared or filled by neighbouring objects need every object: under
        // `alloc_sample` two recorded objects almost never meet on a line, and the line
        // table's 32 MiB would take a page fault per recorded object (a TLB shootdown each
        // with two threads: alloc_larson, 2 threads, jemalloc, 2.7x native with it). Kept
        // when sampling cannot start (its table refused): every object is recorded then.
        if !crate::alloc::sampling_can_start() {
            EVERY_OBJECT.store(true, Relaxed);
            lines::init();
            pages::init();
        }
        events::init(o.alloc_events());
        // Reuse is filed in the granule table (cells.h's `freed_mark` and `handed_out`);
        // without it every address counts as new.
        crate::alloc::map_granules();
        let m = crate::mem::map(4 * (USABLE_MEMO + 1), true);
        if !m.is_null() {
            MEMO.store(m as *mut AtomicU32, Relaxed);
        }
        RSS_AT_START.store(rss(), Relaxed);
        let shared = new_cells();
        if shared != 0 {
            ALL.lock().push(shared);
            SHARED.store(shared as *mut Cells, Relaxed);
        }
        crate::clock::mark_start();
        BRACKET.store(measure_bracket(), Relaxed);
        INTERRUPTED_TICKS.store(
            INTERRUPTED_FROM_NS * crate::clock::early_ticks_per_us() / 1000,
            Relaxed,
        );
        unsafe {
            core::ptr::write_volatile(
                core::ptr::addr_of_mut!(profcc_alloc_time_period),
                o.alloc_time.max(1),
            );
            core::ptr::write_volatile(core::ptr::addr_of_mut!(profcc_alloc_timing), 1);
        }
    }

    fn object_events(&self) -> crate::analysis::ObjectEvents {
        let on = crate::options::get().alloc_ops();
        crate::analysis::ObjectEvents {
            alloc: on,
            free: on,
        }
    }

    fn object_alloc(&self, o: &crate::analysis::ObjectInfo) {
        if o.kind == crate::alloc::KIND_MMAP {
            return;
        }
        let held = lines::allocated(o.start, o.size, o.tid, o.stack);
        if utilisation() {
            if let Some((c, own)) = mine() {
                let (.., n) = pages::span(o.start, o.size, LINE);
                add_i(&c.lines, n as i64 - held as i64, own);
                add_i(&c.pages, pages::allocated(o.start, o.size), own);
            }
        }
    }

    fn object_free(&self, o: &crate::analysis::ObjectInfo) {
        if o.kind == crate::alloc::KIND_MMAP {
            return;
        }
        let held = lines::freed(o.start, o.size, o.tid, crate::threads::current_id());
        if utilisation() {
            if let Some((c, own)) = mine() {
                let (.., n) = pages::span(o.start, o.size, LINE);
                add_i(&c.lines, held as i64 - n as i64, own);
                add_i(&c.pages, -pages::freed(o.start, o.size), own);
            }
        }
    }

    fn thread_exit(&self) {
        events::close_thread();
        let p = MINE.with(|m| m.replace(EXITED));
        unsafe { profcc_alloc_set_cells(core::ptr::null_mut()) };
        if p > EXITED {
            FREE.lock().push(p);
        }
    }

    fn fork_prepare(&self) {
        core::mem::forget(ALL.lock());
        core::mem::forget(FREE.lock());
        core::mem::forget(DESCRIPTION.lock());
        core::mem::forget(PEAK.lock());
        lines::fork_prepare();
    }

    fn fork_parent(&self) {
        lines::fork_parent();
        unlock_after_fork();
    }

    fn fork_child(&self) {
        unlock_after_fork();
        lines::fork_child();
        events::close_thread();
        // The child reports its own operations: every block from zero, the others' blocks
        // free for its threads.
        let me = MINE.with(|m| m.get());
        let shared = SHARED.load(Relaxed) as usize;
        let all = ALL.lock().clone();
        let mut free = FREE.lock();
        free.clear();
        for p in all {
            unsafe { core::ptr::write_bytes(p as *mut Cells, 0, 1) };
            if p != me && p != shared {
                free.push(p);
            }
        }
    }

    fn summary(
        &self,
        p: &profcc_schema::Profile,
        top: usize,
    ) -> Option<crate::analysis::SummarySection> {
        let o = p.allocator_ops.as_ref()?.overhead.as_ref()?;
        let moment =
            |name, u: &profcc_schema::allocator::Usage| profcc_analysis::allocator::Moment {
                name,
                requested: u.requested,
                usable: u.usable,
                cached_free: u.cached_free,
                heap_rss: u.rss.saturating_sub(u.rss_at_start),
            };
        let mut moments: Vec<profcc_analysis::allocator::Moment> =
            o.peak.iter().map(|u| moment("peak", u)).collect();
        moments.push(moment("exit", &o.exit));
        Some(crate::analysis::SummarySection {
            title: "allocator (top findings):".into(),
            lines: profcc_analysis::findings::summary_lines(
                profcc_analysis::allocator::waste_findings(&moments),
                top,
            ),
        })
    }

    fn dump(&self, _cx: &DumpContext, p: &mut profcc_schema::Profile) {
        if NEDGES.load(Relaxed) == 0 {
            return; // off
        }
        let blocks = ALL.lock().clone();
        let mut ops = Vec::new();
        let mut reuse_estimated = 0;
        for (op, name) in OP_NAMES.iter().enumerate() {
            let cells: Vec<[[u64; 3]; RP]> = (0..BUCKETS)
                .map(|b| {
                    core::array::from_fn(|rp| {
                        let [count, timed, cycles, weight] = summed(&blocks, |c| {
                            let x = &c.ops[op][b][rp];
                            [&x.count, &x.timed, &x.cycles, &x.weight]
                        });
                        [count, timed, weighted_cycles(timed, cycles, weight)]
                    })
                })
                .collect();
            for phase in 0..2 {
                // The op's calls of this phase whose reuse was seen, over every bucket: the
                // proportion for a bucket that saw none.
                let all_seen = cells.iter().fold((0, 0), |(n, r), c| {
                    (n + c[rp(0, phase)][0], r + c[rp(1, phase)][0])
                });
                for (b, c) in cells.iter().enumerate() {
                    let unknown = c[rp(REUSE_UNKNOWN, phase)][0];
                    reuse_estimated += unknown;
                    let seen = (c[rp(0, phase)][0], c[rp(1, phase)][0]);
                    let (new, reused) = split_unknown(unknown, seen, all_seen);
                    for (reuse, extra) in [(0, new), (1, reused)] {
                        let [count, timed, cycles] = c[rp(reuse, phase)];
                        if count + extra == 0 {
                            continue;
                        }
                        let (lo, hi) = bucket_range(b);
                        ops.push(profcc_schema::allocator::OpCell {
                            op: name.to_string(),
                            lo,
                            hi,
                            reuse: if reuse == 1 { "reused" } else { "new" }.into(),
                            phase: if phase == 1 { "parallel" } else { "serial" }.into(),
                            count: count + extra,
                            timed,
                            cycles,
                        });
                    }
                }
            }
        }
        let mut channels = Vec::new();
        for (ch, chn) in CHANNEL_NAMES.iter().enumerate() {
            for (op, opn) in OP_NAMES.iter().enumerate() {
                let [count, cycles] = summed(&blocks, |c| {
                    let x = &c.channels[ch][op];
                    [&x.count, &x.cycles]
                });
                if count > 0 {
                    channels.push(profcc_schema::allocator::ChannelCell {
                        channel: chn.to_string(),
                        op: opn.to_string(),
                        count,
                        cycles,
                    });
                }
            }
        }
        let [first_calls, interrupted] = summed(&blocks, |c| [&c.first_calls, &c.interrupted]);
        let (locks, locks_untracked) = locks::cells();
        p.allocator_ops = Some(profcc_schema::allocator::Allocator {
            tsc_hz: crate::clock::tsc_hz(),
            ops,
            channels,
            first_calls,
            description: DESCRIPTION.lock().clone(),
            overhead: EVERY_OBJECT
                .load(Relaxed)
                .then(|| profcc_schema::allocator::Overhead {
                    peak: PEAK.lock().clone(),
                    exit: usage(),
                    step: OVERHEAD_STEP as u64,
                }),
            events: events_section(&blocks),
            induced_sharing: lines::tracking().then(induced_sharing),
            locks,
            locks_untracked,
            reuse_estimated,
            bracket_ticks: BRACKET.load(Relaxed),
            interrupted,
            cpu_ns: process_cpu_ns(),
        });
    }
}

/// The sampled operations' events, for the profile (None: `alloc_events=0`).
fn events_section(blocks: &[usize]) -> Option<profcc_schema::allocator::Events> {
    let period = crate::options::get().alloc_events();
    if period == 0 {
        return None;
    }
    let mut cells = Vec::new();
    for (op, name) in OP_NAMES.iter().enumerate() {
        for b in 0..BUCKETS {
            let sum = summed(blocks, |c| c.events[op][b].each_ref());
            if sum[0] == 0 {
                continue;
            }
            let (lo, hi) = bucket_range(b);
            cells.push(profcc_schema::allocator::EventCell {
                op: name.to_string(),
                lo,
                hi,
                samples: sum[0],
                values: sum[1..].to_vec(),
            });
        }
    }
    let mode = events::mode_name();
    let why = events::STATUS.why();
    Some(profcc_schema::allocator::Events {
        mode: mode.into(),
        why,
        period: period as u64,
        counted: events::STATUS.counted_names(&events::EVENTS),
        cells,
    })
}

/// The lines the allocator shared between threads (`lines`), for the profile.
fn induced_sharing() -> profcc_schema::allocator::InducedSharing {
    let listed = lines::LISTED.lock().clone();
    profcc_schema::allocator::InducedSharing {
        active_lines: lines::ACTIVE.load(Relaxed),
        passive_lines: lines::PASSIVE.load(Relaxed),
        untracked_lines: lines::UNTRACKED.load(Relaxed),
        lines: listed
            .iter()
            .map(|l| profcc_schema::allocator::InducedLine {
                addr: l.line,
                passive: l.passive,
                thread: l.thread,
                other_thread: l.other,
                alloc_stack: l.stack,
            })
            .collect(),
        max_listed: lines::MAX_LISTED as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The analysis's C half (compiled inside rt/csrc/interpose.c).
    const TIMING_H: &str = include_str!("allocator/timing.h");
    const CELLS_H: &str = include_str!("allocator/cells.h");

    use crate::alloc::GRANULE_BITS;
    extern "C" {
        fn profcc_reuse_freed(a: u64) -> i32;
        fn profcc_reuse_handed_out(a: u64) -> i32;
        fn profcc_granule_index(a: u64) -> u64;
    }

    /// The reuse state: each granule has its own mark, so a neighbour's free neither makes a
    /// block's free reused nor hides its own; a granule of another window with another tag on
    /// the same byte pushes the mark out.
    #[test]
    fn reuse_marks_each_granule() {
        assert!(crate::alloc::map_granules());
        let idx = |a: u64| unsafe { profcc_granule_index(a) };
        let f = |a: u64| unsafe { profcc_reuse_freed(a) };
        let h = |a: u64| unsafe { profcc_reuse_handed_out(a) };
        // Neighbouring granules, in address space no other test frees.
        let base: u64 = 0x7e00_0000_0040;
        let nb: Vec<u64> = (0..4).map(|k| base + 16 * k).collect();
        assert_eq!(h(nb[0]), 0, "nothing freed yet");
        assert_eq!(f(nb[0]), 0, "a first free is of a new block");
        assert_eq!(h(nb[0]), 1, "the freed address comes back reused");
        assert_eq!(h(nb[1]), 0, "its neighbour was never freed");
        assert_eq!(f(nb[1]), 0, "the neighbour's first free is new");
        assert_eq!(f(nb[0]), 1, "the block's second free is reused");
        assert_eq!(h(nb[1]), 1);
        assert_eq!(h(nb[3]), 0);
        // The next window (another tag): its granule on the same byte.
        let (granules, window) = (1u64 << GRANULE_BITS, 16u64 << GRANULE_BITS);
        let w = (base + window) & !(window - 1);
        let far = w + 16 * ((idx(base) + granules - idx(w)) & (granules - 1));
        assert_eq!(idx(far), idx(base));
        assert_eq!(f(far), 0, "another window's first free is new");
        assert_eq!(h(nb[0]), 0, "another tag pushed the mark out");
        assert_eq!(h(far), 1);
        assert_eq!(h(nb[1]), 1, "the neighbour's mark stays");
    }

    /// The tail path's mallocs join new and reused in the proportion their cell saw, else
    /// their operation's, else all new; the rounding loses no call.
    #[test]
    fn unknown_reuse_splits_by_what_was_seen() {
        assert_eq!(split_unknown(1000, (1, 3), (50, 50)), (250, 750));
        assert_eq!(split_unknown(1000, (0, 0), (1, 1)), (500, 500));
        assert_eq!(split_unknown(7, (0, 0), (0, 0)), (7, 0));
        assert_eq!(split_unknown(0, (5, 5), (0, 0)), (0, 0));
        assert_eq!(split_unknown(3, (1, 2), (0, 0)), (1, 2));
        let (n, r) = split_unknown(u64::MAX, (u64::MAX / 2, u64::MAX / 2), (0, 0));
        assert_eq!(n + r, u64::MAX);
    }

    /// The C half (timing.h, cells.h) files operations in `Cells::ops` with its own copy of
    /// the layout.
    #[test]
    fn c_cell_layout_is_this_one() {
        let c = [TIMING_H, CELLS_H].concat();
        for (name, v) in [("OP_EVENTS", EVENTS_BIT), ("OP_FIRST", FIRST_BIT)] {
            let shift = v.trailing_zeros();
            assert_eq!(v, 1 << shift);
            assert!(
                c.contains(&format!("#define {name} (1u << {shift})")),
                "{name}"
            );
        }
        for (name, v) in [
            ("A_BUCKETS", BUCKETS),
            ("A_RP", RP),
            ("REUSE_UNKNOWN", REUSE_UNKNOWN),
            ("A_CELL_WORDS", core::mem::size_of::<OpPair>() / 8),
        ] {
            assert!(
                c.contains(&format!("#define {name} {v} "))
                    || c.contains(&format!("#define {name} {v}\n")),
                "{name}"
            );
        }
        assert_eq!(core::mem::offset_of!(Cells, ops), 0);
        assert_eq!(core::mem::offset_of!(OpPair, count), 0);
    }

    /// The size from which every call is timed: timing.h's copy, the option's help, and a
    /// bucket edge.
    #[test]
    fn time_all_from_is_stated_and_an_edge() {
        let f = crate::options::FLAGS
            .iter()
            .find(|f| f.name == "alloc_time")
            .unwrap();
        assert!(f.help.contains(&format!("{TIME_ALL_FROM} bytes or more")));
        assert!(edge_set(None).contains(&TIME_ALL_FROM));
        assert!(TIMING_H.contains(&format!("#define TIME_ALL_FROM {TIME_ALL_FROM}\n")));
    }

    /// The timing gap's growth: timing.h's copies and the option's help.
    #[test]
    fn time_growth_is_stated() {
        use profcc_schema::allocator::{TIME_LEVEL_DRAWS, TIME_MAX_SHIFT};
        let c = TIMING_H;
        assert!(c.contains(&format!("#define TIME_LEVEL_DRAWS {TIME_LEVEL_DRAWS}\n")));
        assert!(c.contains(&format!("#define TIME_MAX_SHIFT {TIME_MAX_SHIFT}\n")));
        let f = crate::options::FLAGS
            .iter()
            .find(|f| f.name == "alloc_time")
            .unwrap();
        assert!(f.help.contains(&format!(
            "doubling after every {TIME_LEVEL_DRAWS} timed calls of the thread up to {} x N",
            1u32 << TIME_MAX_SHIFT
        )));
    }

    /// A cell's weighted mean: two timed calls, 100 ticks standing for 1 call and 10 ticks
    /// standing for 9, have the mean of the 10 calls (19 ticks), stated as 2 timed calls.
    #[test]
    fn timed_calls_are_weighted() {
        assert_eq!(weighted_cycles(2, 100 + 10 * 9, 10), 38);
        assert_eq!(weighted_cycles(0, 0, 0), 0);
    }

    /// A timed call loses the empty bracket's cost (never below 0); a sampled call past the
    /// limit, or one whose TSC ran backwards (the unsigned difference wraps), is interrupted;
    /// a call of weight 1 (a big request) is kept however long it took.
    #[test]
    fn timed_calls_lose_the_bracket_and_interrupted_ones_are_left_out() {
        assert_eq!(call_ticks(100, 64, 30, 1000), Some(70));
        assert_eq!(call_ticks(20, 64, 30, 1000), Some(0));
        assert_eq!(call_ticks(1001, 64, 30, 1000), None);
        assert_eq!(call_ticks(1_000_000, 1, 30, 1000), Some(999_970));
        assert_eq!(call_ticks(5u64.wrapping_sub(9), 1, 30, 1000), None);
        assert_eq!(call_ticks(5u64.wrapping_sub(9), 64, 30, 1000), None);
        let b = measure_bracket();
        assert!(b > 0 && b < 100_000, "{b}");
    }

    /// timing.h's enums name the operations and channels in this file's order.
    #[test]
    fn c_enums_follow_the_names() {
        let c = TIMING_H;
        // The enum's names from `enum {` to `};`, on one line or several.
        let line = |first: &str| {
            let at = c
                .find(&format!("enum {{ {first}"))
                .or_else(|| c.find(&format!("enum {{\n    {first}")))
                .unwrap_or_else(|| panic!("no enum starting with {first} in timing.h"));
            let text = &c[at..at + c[at..].find("};").unwrap() + 2];
            text.split_whitespace().collect::<Vec<_>>().join(" ")
        };
        let ops = line("OP_MALLOC");
        let want: Vec<String> = OP_NAMES
            .iter()
            .map(|n| format!("OP_{}", n.to_uppercase()))
            .collect();
        assert_eq!(ops, format!("enum {{ {} }};", want.join(", ")));
        let chs = line("CH_MMAP");
        let want: Vec<String> = CHANNEL_NAMES
            .iter()
            .map(|n| format!("CH_{}", n.to_uppercase()))
            .collect();
        assert_eq!(chs, format!("enum {{ {} }};", want.join(", ")));
    }

    #[test]
    fn buckets_split_at_every_edge() {
        let e = edge_set(Some((99, 100)));
        set_edges(&e);
        for n in (0..70_000u64).chain([u64::MAX, 1 << 40, (1 << 40) - 1]) {
            assert_eq!(bucket(n), e.iter().filter(|&&x| x <= n).count(), "{n}");
        }
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(15), 0);
        assert_eq!(bucket(16), 1);
        assert_eq!(bucket_range(bucket(99)), (64, 100));
        assert_eq!(bucket_range(bucket(100)), (100, 128));
        for x in SHIPPED_KINDS.iter().flat_map(|&k| kind_starts(k)) {
            let (lo, hi) = bucket_range(bucket(x));
            assert_eq!(lo, x, "a shipped boundary starts a bucket");
            assert!(hi > x);
            assert!(bucket_range(bucket(x - 1)).1 == x);
        }
        assert_eq!(bucket_range(bucket(u64::MAX)).1, u64::MAX);
        assert!(e.len() <= BUCKETS - 2);
    }

    /// The runtime's scan of a description reads what the `toml` crate reads, in every
    /// shipped file (and so in what `profcc detect-allocator` writes).
    #[test]
    fn scanner_agrees_with_toml_on_shipped_descriptions() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/allocators");
        let mut n = 0;
        for f in std::fs::read_dir(dir).unwrap() {
            let text = std::fs::read_to_string(f.unwrap().path()).unwrap();
            let v: toml::Table = toml::from_str(&text).unwrap();
            for key in ["small_max", "large_threshold"] {
                let want = v.get(key).and_then(|x| x.as_integer()).map(|x| x as u64);
                assert!(want.is_some());
                assert_eq!(top_level_int(&text, key), want, "{key}");
            }
            n += 1;
        }
        assert!(n >= 5);
    }

    #[test]
    fn description_keys_are_read_before_the_first_table() {
        let t = "name = \"x\"\nsmall_max = 14336\nlarge_threshold = 14337 # c\n[channels]\nsmall_max = 1\n";
        assert_eq!(top_level_int(t, "small_max"), Some(14336));
        assert_eq!(kinds_of(t), Some((14336, 14337)));
        assert_eq!(top_level_int(t, "missing"), None);
    }
}
