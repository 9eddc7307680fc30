//! Allocation statistics with no shared write per call.
//!
//! Each allocation and free changes its site's counters and the process totals. Done with
//! shared atomics, a `malloc(40)`/`free` pair cost 82 ns against 9.5 ns native in one thread,
//! and two threads spent 70% of their time bouncing the totals' and the site's cache lines.
//! Here each thread keeps its changes as deltas in its own [`Block`]: a direct-mapped table of
//! [`ENTRIES`] sites plus its share of the totals. Only the owner writes them (a relaxed load
//! and store, no locked instruction); a flush adds them to the shared counters.
//!
//! Invariants:
//! - For every counter, the true value is the shared counter plus the deltas of every block.
//!   A flush moves a delta under its block's lock, and [`pending`] reads the blocks under the
//!   same lock, so a delta is never seen twice or missed.
//! - A block's live-bytes deltas (per entry and in the totals) stay within
//!   [`LIVE_FLUSH`]: past it they are flushed at once. Each allocation compares the shared
//!   value plus its own thread's delta with the peak. The peak is therefore exact in a
//!   process where one thread allocates at a time, and otherwise off by at most
//!   (threads - 1) x `LIVE_FLUSH` (the other threads' unflushed deltas: low by their
//!   allocations, high by their frees of blocks others allocated).
//! - An entry is flushed when another site takes its slot, and all of a block when its
//!   thread exits (the block then goes back to a pool; what the exiting thread does later,
//!   e.g. in TLS destructors, goes to the shared counters directly).
//! - Locks (after `alloc::THREAD_SET` in `fork.rs`'s order): `ALL`, then the blocks' own
//!   locks, then `FREE`; under none of them is another runtime lock taken, except the runtime
//!   heap when `ALL` grows.
//! - Blocks live in runtime memory and are never freed: a process creating threads forever
//!   holds as many blocks as it had threads alive at once.
//!
//! Lifetimes ([`Life`]): the clock is the allocating thread's count of allocation calls
//! (`Block::clock`: its block's `allocations`, which the path increments anyway, plus what earlier
//! resets moved into `clock_base`), stamped in the object (`Obj::born`) after its allocation
//! counted. A free by that same thread reads its clock again: the difference is how many
//! allocations the thread made while the block lived, 0 being heaptrack's "temporary". No
//! clock is read that the path did not read already, and no shared line is written. A free
//! by another thread (or by a thread past its exit, or of an object without a stamp) is
//! counted as not measured.

use crate::mem::SpinLock;
use crate::threads;
use core::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::collections::{BTreeSet, HashMap};

// ---------------------------------------------------------------------------------------------
// The shared counters: sites and totals.

/// One allocation site's shared counters (one per (stack, kind): alloc.rs's `Sites::index`).
#[repr(C, align(64))]
pub(super) struct Site {
    /// 0 free, 1 in use, 2 lost a race (never used).
    pub(super) state: AtomicU32,
    pub(super) stack: AtomicU32,
    pub(super) kind: AtomicU32,
    pub(super) extra_threads: AtomicU32,
    pub(super) count: AtomicU64,
    pub(super) bytes: AtomicU64,
    pub(super) frees: AtomicU64,
    pub(super) max_size: AtomicU64,
    pub(super) live_bytes: AtomicU64,
    pub(super) live_peak: AtomicU64,
    pub(super) live_objects: AtomicU64,
    /// TSC ticks the allocator spent on this site's objects (allocator analysis).
    pub(super) cycles: AtomicU64,
    /// Bit t: thread t allocated here (t < 256); higher ids go to `THREAD_SET`.
    pub(super) tbits: [AtomicU64; 4],
    /// Lifetimes of its freed blocks.
    pub(super) life: Life,
}

/// Buckets of the lifetime histogram: 0 holds lifetime 0, bucket k >= 1 lifetimes in
/// [2^(k-1), 2^k), the last one everything from 2^(LIFE_BUCKETS-2) on.
pub const LIFE_BUCKETS: usize = 32;

/// The bucket of a lifetime (in the allocating thread's allocations).
#[inline]
pub fn life_bucket(life: u64) -> usize {
    ((64 - life.leading_zeros()) as usize).min(LIFE_BUCKETS - 1)
}

/// Lifetimes of a site's freed blocks: a thread's deltas ([`Entry`]) or the shared sums
/// ([`Site`]); the module's "Lifetimes".
#[repr(C)]
pub(super) struct Life {
    /// The measured lifetimes' sum and largest (their count is the histogram's sum, the
    /// temporary blocks its bucket 0: fewer stores per free).
    sum: AtomicU64,
    max: AtomicU64,
    /// The smallest lifetime, inverted (`!min`): 0 is none yet, and a maximum of the
    /// inverses is the minimum.
    min_inv: AtomicU64,
    /// Frees whose lifetime was not measured (another thread freed the block, ...).
    unmeasured: AtomicU64,
    hist: [AtomicU64; LIFE_BUCKETS],
}

/// A [`Life`] read out (plain numbers; `min` is meaningless while `measured` is 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LifeSums {
    pub measured: u64,
    pub sum: u64,
    pub max: u64,
    pub min: u64,
    pub temporary: u64,
    pub unmeasured: u64,
    pub hist: [u64; LIFE_BUCKETS],
}

impl Default for LifeSums {
    fn default() -> LifeSums {
        LifeSums {
            measured: 0,
            sum: 0,
            max: 0,
            min: u64::MAX,
            temporary: 0,
            unmeasured: 0,
            hist: [0; LIFE_BUCKETS],
        }
    }
}

impl LifeSums {
    /// Adds another read-out (a thread's pending deltas to the shared sums).
    pub fn merge(&mut self, d: &LifeSums) {
        self.measured += d.measured;
        self.sum = self.sum.wrapping_add(d.sum);
        self.max = self.max.max(d.max);
        self.min = self.min.min(d.min);
        self.temporary += d.temporary;
        self.unmeasured += d.unmeasured;
        for (a, b) in self.hist.iter_mut().zip(d.hist) {
            *a += b;
        }
    }

    fn add(&mut self, l: &Life) {
        let h0 = l.hist[0].load(Relaxed);
        self.measured += h0;
        self.temporary += h0;
        self.sum = self.sum.wrapping_add(l.sum.load(Relaxed));
        self.max = self.max.max(l.max.load(Relaxed));
        let inv = l.min_inv.load(Relaxed);
        if inv != 0 {
            self.min = self.min.min(!inv);
        }
        self.unmeasured += l.unmeasured.load(Relaxed);
        for (k, (h, a)) in self.hist.iter_mut().zip(&l.hist).enumerate() {
            let n = a.load(Relaxed);
            *h += n;
            if k > 0 {
                self.measured += n;
            }
        }
    }
}

impl Life {
    /// `w` blocks freed after `life` allocations (`None`: not measured). `add` and `max`
    /// update one counter: the owner's plain store, or a shared atomic.
    #[inline]
    fn note(
        &self,
        life: Option<u64>,
        w: u64,
        add: impl Fn(&AtomicU64, u64),
        max: impl Fn(&AtomicU64, u64),
    ) {
        let Some(l) = life else {
            add(&self.unmeasured, w);
            return;
        };
        add(&self.sum, w.wrapping_mul(l));
        max(&self.max, l);
        max(&self.min_inv, !l);
        add(&self.hist[life_bucket(l)], w);
    }

    /// Move these deltas into the shared `to` and zero them.
    fn flush_into(&self, to: &Life) {
        let take = |a: &AtomicU64| a.swap(0, Relaxed);
        let pairs = [(&self.sum, &to.sum), (&self.unmeasured, &to.unmeasured)];
        for (a, b) in pairs.into_iter().chain(self.hist.iter().zip(&to.hist)) {
            let d = take(a);
            if d != 0 {
                b.fetch_add(d, Relaxed);
            }
        }
        fetch_max(&to.max, take(&self.max));
        fetch_max(&to.min_inv, take(&self.min_inv));
    }

    pub(super) fn zero(&self) {
        let fields = [&self.sum, &self.max, &self.min_inv, &self.unmeasured];
        for a in fields.into_iter().chain(&self.hist) {
            a.store(0, Relaxed);
        }
    }

    pub(super) fn read(&self) -> LifeSums {
        let mut s = LifeSums::default();
        s.add(self);
        s
    }
}

/// The site table (alloc.rs maps it and hands out its indices, `Sites::index`).
pub(super) struct Sites {
    pub(super) site_of: *const AtomicU32,
    pub(super) sites: *const Site,
    pub(super) next: AtomicU32,
}

impl Sites {
    pub(super) fn site(&self, i: u32) -> &Site {
        unsafe { &*self.sites.add(i as usize) }
    }
}

/// Sites' thread ids past 255 (site << 32 | id), counted once each in `extra_threads`.
pub(crate) static THREAD_SET: SpinLock<BTreeSet<u64>> = SpinLock::new(BTreeSet::new());

/// The process's shared totals.
#[repr(align(64))]
pub(super) struct Totals {
    pub(super) allocations: AtomicU64,
    pub(super) frees: AtomicU64,
    pub(super) bytes: AtomicU64,
    pub(super) live: AtomicU64,
    pub(super) peak: AtomicU64,
}
pub(super) static TOTALS: Totals = Totals {
    allocations: AtomicU64::new(0),
    frees: AtomicU64::new(0),
    bytes: AtomicU64::new(0),
    live: AtomicU64::new(0),
    peak: AtomicU64::new(0),
};

#[inline]
pub(super) fn fetch_max(a: &AtomicU64, v: u64) {
    if a.load(Relaxed) < v {
        a.fetch_max(v, Relaxed);
    }
}

pub(super) fn note_thread(site_idx: u32, s: &Site, tid: u32) {
    if tid < 256 {
        let (w, b) = ((tid / 64) as usize, 1u64 << (tid % 64));
        if s.tbits[w].load(Relaxed) & b == 0 {
            s.tbits[w].fetch_or(b, Relaxed);
        }
    } else if tid != threads::INTERNAL
        && THREAD_SET
            .lock()
            .insert(((site_idx as u64) << 32) | tid as u64)
    {
        s.extra_threads.fetch_add(1, Relaxed);
    }
}

/// The 64-bit mixer of the object map's hashing and sampling's coin.
#[inline]
pub(super) fn mix(k: u64) -> u64 {
    let h = k.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h ^ (h >> 29) ^ (h >> 47)
}

/// Sites a thread keeps deltas for at once (direct-mapped by site index).
pub(crate) const ENTRIES: usize = 256;
/// Sites a thread counts unpicked blocks of at once (interpose.c's `COUNT_CACHE`, checked by a
/// unit test).
pub(crate) const COUNT_CACHE: usize = 64;
/// A live-bytes delta larger than this (either sign) is flushed at once, and a count slot
/// that has freed this many bytes more than it allocated moves at once (interpose.c's copy
/// `LIVE_FLUSH`, checked by a unit test): the bound on how far another thread's view of live
/// bytes, and so a peak, can be off. Low by a thread's allocations not flushed yet, high by a
/// thread's frees not flushed yet (a consumer freeing what a producer allocates). 1 MiB until
/// 2026-11-30: a producer and a consumer passing one 1000-byte block at a time read a peak of
/// 1,049,000 bytes exact, 19,969,000 under sampling (whose count slots had no bound), for
/// 1,000 (`malloc_heavy_kernels_count_exactly_under_sampling`).
pub const LIVE_FLUSH: i64 = 1 << 16;

#[repr(C, align(64))]
struct Entry {
    /// Site index + 1; 0: unused.
    site_plus1: AtomicU32,
    count: AtomicU64,
    bytes: AtomicU64,
    frees: AtomicU64,
    max_size: AtomicU64,
    live_bytes: AtomicI64,
    live_objects: AtomicI64,
    /// TSC ticks the allocator spent on this site's objects (the allocator analysis).
    cycles: AtomicU64,
    /// Lifetimes of the site's blocks this thread freed.
    life: Life,
}

/// The definition's expansion here (see c_structs.rs): [`SampleHead`] (C's `struct
/// sample_head`, the head of [`Block`]) and [`CountEntry`] (C's `struct count_entry`), their
/// fields relaxed atomics (alloc.rs expands `Obj`).
macro_rules! profcc_c_structs {
    ($($(#[doc = $sdoc:literal])* $cname:ident: $rname:ident {
        $($(#[doc = $doc:literal])* $name:ident: $ty:tt,)*
    })*) => {
        $(c_struct_relaxed! { $cname [$($sdoc)*] $rname { $([$($doc)*] $name: $ty,)* } })*
    };
}
/// One struct of the definition with relaxed atomics (`profcc_obj` is alloc.rs's).
macro_rules! c_struct_relaxed {
    (profcc_obj $($other:tt)*) => {};
    ($cname:ident [$($sdoc:literal)*] $rname:ident { $([$($doc:literal)*] $name:ident: $ty:tt,)* }) => {
        $(#[doc = $sdoc])*
        #[repr(C)]
        pub(crate) struct $rname {
            $($(#[doc = $doc])* pub(crate) $name: relaxed_atomic!($ty),)*
        }
    };
}
macro_rules! relaxed_atomic {
    (u32) => {
        AtomicU32
    };
    (u64) => {
        AtomicU64
    };
    (i64) => {
        AtomicI64
    };
}
include!("c_structs.rs");

#[repr(C, align(64))]
pub(crate) struct Block {
    /// C's `struct sample_head` (interpose.c's sampling fast path counts there).
    head: SampleHead,
    /// Right after the head (interpose.c finds them there): the counts of unpicked blocks,
    /// direct-mapped by site.
    counts: [CountEntry; COUNT_CACHE],
    lock: SpinLock<()>,
    live: AtomicI64,
    /// The thread's allocation calls counted before `head.allocations` was last zeroed (a
    /// fork child's restart, a thread exit): `Block::clock` never goes back.
    clock_base: AtomicU64,
    /// The id of the thread that holds the block (a free by it measures a lifetime).
    tid: AtomicU32,
    entries: [Entry; ENTRIES],
}

impl Block {
    /// The thread's allocation clock: its allocation calls so far, counting the one just
    /// counted.
    #[inline]
    fn clock(&self) -> u64 {
        self.clock_base
            .load(Relaxed)
            .wrapping_add(self.head.allocations.load(Relaxed))
    }
}

/// Zero the block's count of allocation calls, keeping its clock.
fn zero_allocations(b: &Block) {
    let n = b.head.allocations.swap(0, Relaxed);
    add_u(&b.clock_base, n);
}

/// Every block ever made (addresses), and the ones no thread holds.
static ALL: SpinLock<Vec<usize>> = SpinLock::new(Vec::new());
static FREE: SpinLock<Vec<usize>> = SpinLock::new(Vec::new());

/// `BLOCK` after its thread exited: use the shared counters.
const EXITED: usize = 1;

#[inline]
fn add_u(a: &AtomicU64, d: u64) {
    a.store(a.load(Relaxed).wrapping_add(d), Relaxed);
}
#[inline]
fn add_i(a: &AtomicI64, d: i64) {
    a.store(a.load(Relaxed).wrapping_add(d), Relaxed);
}

/// The calling thread's block, made on its first call; `None` after it exited (or when
/// no memory could be had).
#[inline]
fn mine() -> Option<&'static Block> {
    match BLOCK.with(|b| b.get()) {
        0 => new_block(),
        EXITED => None,
        p => Some(unsafe { &*(p as *const Block) }),
    }
}

thread_local! {
    /// The thread's block: 0 none yet, [`EXITED`], else its address. A constant-initialised
    /// Rust thread-local without destructor: a plain TLS word the fast path reads inline
    /// (the C `tls` struct costs a call across the languages), usable in TLS destructors.
    static BLOCK: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
}

extern "C" {
    /// interpose.c: the calling thread's block for its sampling fast path (null: none).
    fn profcc_sample_set_block(b: *mut libc::c_void);
}

#[cold]
fn new_block() -> Option<&'static Block> {
    let reused = FREE.lock().pop();
    let p = match reused {
        Some(p) => p,
        None => {
            let l = std::alloc::Layout::new::<Block>();
            // From the runtime heap; all zero is a valid empty block.
            let p = unsafe { std::alloc::alloc_zeroed(l) } as usize;
            if p == 0 {
                return None;
            }
            ALL.lock().push(p);
            p
        }
    };
    BLOCK.with(|b| b.set(p));
    unsafe { profcc_sample_set_block(p as *mut libc::c_void) };
    let b = unsafe { &*(p as *const Block) };
    b.tid.store(threads::current_id(), Relaxed);
    Some(b)
}

impl Block {
    /// The entry of `site`, taking its slot from the site there (flushed) if needed.
    #[inline]
    fn entry(&self, ss: &Sites, site: u32) -> &Entry {
        let e = &self.entries[site as usize % ENTRIES];
        if e.site_plus1.load(Relaxed) != site + 1 {
            let _g = self.lock.lock();
            flush_entry(ss, e);
            e.site_plus1.store(site + 1, Relaxed);
        }
        e
    }
}

/// Add deltas to site `s`'s shared counters (a flush, or a call with no block of its own).
fn apply_site(s: &Site, count: u64, bytes: u64, frees: u64, live_bytes: i64, live_objects: i64) {
    for (a, d) in [
        (&s.count, count),
        (&s.bytes, bytes),
        (&s.frees, frees),
        (&s.live_bytes, live_bytes as u64),
        (&s.live_objects, live_objects as u64),
    ] {
        if d != 0 {
            a.fetch_add(d, Relaxed);
        }
    }
}

/// Add `e`'s deltas to its site and zero them (the caller holds the block's lock).
fn flush_entry(ss: &Sites, e: &Entry) {
    let Some(i) = e.site_plus1.load(Relaxed).checked_sub(1) else {
        return;
    };
    let s = ss.site(i);
    let take_u = |a: &AtomicU64| a.swap(0, Relaxed);
    let take_i = |a: &AtomicI64| a.swap(0, Relaxed);
    fetch_max(&s.max_size, take_u(&e.max_size));
    let c = take_u(&e.cycles);
    if c != 0 {
        s.cycles.fetch_add(c, Relaxed);
    }
    e.life.flush_into(&s.life);
    apply_site(
        s,
        take_u(&e.count),
        take_u(&e.bytes),
        take_u(&e.frees),
        take_i(&e.live_bytes),
        take_i(&e.live_objects),
    );
}

/// Move the block's totals into `TOTALS` (the caller holds the block's lock).
fn flush_totals(b: &Block) {
    let n = b.head.allocations.load(Relaxed);
    zero_allocations(b);
    TOTALS.allocations.fetch_add(n, Relaxed);
    TOTALS
        .frees
        .fetch_add(b.head.frees.swap(0, Relaxed), Relaxed);
    TOTALS
        .bytes
        .fetch_add(b.head.bytes.swap(0, Relaxed), Relaxed);
    TOTALS
        .live
        .fetch_add(b.live.swap(0, Relaxed) as u64, Relaxed);
}

/// A live-byte count (shared plus some thread's unflushed delta), compared with `peak`.
#[inline]
fn note_peak(peak: &AtomicU64, live: i64) {
    if live > 0 {
        fetch_max(peak, live as u64);
    }
}

/// The process's live bytes as a reader summed them (every block's deltas and count slots:
/// a region snapshot), compared with the peak, which is otherwise compared as each thread
/// sees the live bytes (so a snapshot never shows more live bytes than the peak).
pub(super) fn seen_live(live: i64) {
    note_peak(&TOTALS.peak, live);
}

/// Add `d` to the block's live-bytes delta `delta` of the shared counter `shared`; a delta
/// past [`LIVE_FLUSH`] (either sign) moves into `shared`, under the block's lock (so
/// [`pending`] never sees it twice). Returns the delta left.
#[inline(always)]
fn live_add(b: &Block, delta: &AtomicI64, shared: &AtomicU64, d: i64) -> i64 {
    let v = delta.load(Relaxed).wrapping_add(d);
    if v.abs() > LIVE_FLUSH {
        let _g = b.lock.lock();
        shared.fetch_add(v as u64, Relaxed);
        delta.store(0, Relaxed);
        return 0;
    }
    delta.store(v, Relaxed);
    v
}

/// After an allocation: add `d` to the delta, then compare shared + delta (the live bytes as
/// this thread sees them) with the peak.
#[inline(always)]
fn grew(b: &Block, delta: &AtomicI64, shared: &AtomicU64, peak: &AtomicU64, d: i64) {
    let v = live_add(b, delta, shared, d);
    note_peak(peak, (shared.load(Relaxed) as i64).wrapping_add(v));
}

/// An object of `size` bytes was allocated at `site` by thread `tid`, standing for `w`
/// allocations (1, or a sampled allocation's weight); `totals`: count the call in the totals
/// (a sampled call was counted by [`count_call`] already).
/// Returns the thread's allocation clock after the call (`Block::clock`; 0: the thread has no
/// block).
pub(super) fn alloc(ss: &Sites, site: u32, tid: u32, size: u64, w: u64, totals: bool) -> u64 {
    let s = ss.site(site);
    let Some(b) = mine() else {
        shared_alloc(ss, site, tid, size, w, totals);
        return 0;
    };
    let ws = w.wrapping_mul(size);
    let e = b.entry(ss, site);
    if e.count.load(Relaxed) == 0 {
        note_thread(site, s, tid);
    }
    add_u(&e.count, w);
    add_u(&e.bytes, ws);
    if e.max_size.load(Relaxed) < size {
        e.max_size.store(size, Relaxed);
    }
    add_i(&e.live_objects, w as i64);
    grew(b, &e.live_bytes, &s.live_bytes, &s.live_peak, ws as i64);
    if totals {
        add_u(&b.head.allocations, 1);
        add_u(&b.head.bytes, size);
    }
    grew(b, &b.live, &TOTALS.live, &TOTALS.peak, ws as i64);
    b.clock()
}

// ---------------------------------------------------------------------------------------------
// Counts of unpicked blocks.
//
// While sampling counts every block (alloc.rs `exact_counts`), the blocks it does not pick
// and that have start words are counted in the thread's `counts` ([`CountEntry`],
// direct-mapped by site): by interpose.c on the tail path, a few plain adds and no call, and by
// [`count_unpicked_alloc`] and [`count_unpicked_free`] on the full path. (Larger unpicked blocks
// are in the object map and count as its objects do.) An entry moves into the thread's [`Entry`] of its site when another
// site takes its slot, at each allocation sampling picks (so at least once per `alloc_sample`
// bytes the thread allocates on average), and at the thread's exit; [`pending`] reads what has
// not moved, and once the slot has freed [`LIVE_FLUSH`] bytes more than it allocated. The
// move, under the block's lock, nets the entry's allocations and frees: the live bytes (and
// so the peaks) are compared at each move, not at each call, so a peak can be low by what the
// thread allocated since its last move, and high by at most 2 x `LIVE_FLUSH` of its frees (the
// slot's and the entry's delta); counts, bytes, frees and live bytes are exact.

/// Move `c`'s counts into the block's entry of its site and zero them (the owner).
fn move_counts(ss: &Sites, b: &Block, c: &CountEntry) {
    let Some(site) = c.site_plus1.load(Relaxed).checked_sub(1) else {
        return;
    };
    if c.allocs.load(Relaxed) == 0 && c.frees.load(Relaxed) == 0 {
        return;
    }
    let e = b.entry(ss, site);
    let net = {
        let _g = b.lock.lock();
        let take = |a: &AtomicU64| a.swap(0, Relaxed);
        let (allocs, bytes, frees, freed) = (
            take(&c.allocs),
            take(&c.bytes),
            take(&c.frees),
            take(&c.freed),
        );
        let max = c.max_size.swap(0, Relaxed) as u64;
        add_u(&e.count, allocs);
        add_u(&e.bytes, bytes);
        add_u(&e.frees, frees);
        if e.max_size.load(Relaxed) < max {
            e.max_size.store(max, Relaxed);
        }
        add_i(&e.live_objects, allocs.wrapping_sub(frees) as i64);
        bytes.wrapping_sub(freed) as i64
    };
    let s = ss.site(site);
    grew(b, &e.live_bytes, &s.live_bytes, &s.live_peak, net);
    grew(b, &b.live, &TOTALS.live, &TOTALS.peak, net);
}

/// The calling thread's counts of unpicked blocks move into its entries (a picked allocation).
pub(super) fn move_all_counts(ss: &Sites) {
    if let Some(b) = mine() {
        for c in &b.counts {
            move_counts(ss, b, c);
        }
    }
}

/// `b`'s count slot for `site` (direct-mapped, as interpose.c's `count_slot`), whichever site
/// holds it now.
fn slot_for(b: &Block, site: u32) -> &CountEntry {
    &b.counts[site as usize % COUNT_CACHE]
}

/// The calling thread's count slot of `site`, taken from the site there (its counts moved)
/// if needed: interpose.c's `count_slot`, and the full path's unpicked blocks (`alloc`: the
/// thread allocates at `site`).
fn count_slot<'a>(ss: &Sites, b: &'a Block, site: u32, alloc: bool) -> &'a CountEntry {
    let c = slot_for(b, site);
    if c.site_plus1.load(Relaxed) != site + 1 {
        move_counts(ss, b, c);
        let _g = b.lock.lock();
        c.site_plus1.store(site + 1, Relaxed);
        drop(_g);
        if alloc {
            note_thread(site, ss.site(site), b.tid.load(Relaxed));
        }
    }
    c
}

/// interpose.c's `count_slot`: the calling thread's slot for `site` holds another site (or
/// none).
pub(super) fn count_slot_taken(ss: &Sites, site: u32, alloc: bool) {
    if let Some(b) = mine() {
        count_slot(ss, b, site, alloc);
    }
}

/// An unpicked block of the full path (a start word's), counted as interpose.c counts the
/// tail path's; its call is in the totals already.
pub(super) fn count_unpicked_alloc(ss: &Sites, site: u32, size: u64) {
    let Some(b) = mine() else {
        shared_alloc(ss, site, threads::current_id(), size, 1, false);
        return;
    };
    let c = count_slot(ss, b, site, true);
    add_u(&c.allocs, 1);
    add_u(&c.bytes, size);
    if (c.max_size.load(Relaxed) as u64) < size {
        c.max_size.store(size as u32, Relaxed); // (below 1 << START_SIZE_BITS)
    }
}

/// The free of a start word's block on the full path ([`count_unpicked_alloc`]'s).
pub(super) fn count_unpicked_free(ss: &Sites, site: u32, size: u64) {
    let Some(b) = mine() else {
        shared_release(ss, site, size, true, 1, false, false);
        return;
    };
    let c = count_slot(ss, b, site, false);
    add_u(&c.frees, 1);
    add_u(&c.freed, size);
    if freed_past_flush(c) {
        move_counts(ss, b, c);
    }
}

/// A count slot that has freed [`LIVE_FLUSH`] bytes more than it allocated moves now (here on
/// the full path, by interpose.c's `count_net` on the tail path, which spells the same
/// compare): a thread that frees what others allocate, and allocates nothing sampling picks,
/// would otherwise hold its frees until it exits, and every other thread's view of the live
/// bytes, and the peak, would be high by them.
fn freed_past_flush(c: &CountEntry) -> bool {
    (c.freed.load(Relaxed).wrapping_sub(c.bytes.load(Relaxed)) as i64) > LIVE_FLUSH
}

/// interpose.c's `count_net`: the calling thread's slot of `site` has freed [`LIVE_FLUSH`]
/// bytes more than it allocated.
pub(super) fn count_move(ss: &Sites, site: u32) {
    if let Some(b) = mine() {
        let c = slot_for(b, site);
        if c.site_plus1.load(Relaxed) == site + 1 {
            move_counts(ss, b, c);
        }
    }
}

/// The lifetime of a block freed now by `b`'s thread, which thread `owner` allocated at
/// clock `born` (module doc, "Lifetimes"): None when not measured.
#[inline]
fn lifetime(b: &Block, owner: u32, born: u64) -> Option<u64> {
    if born == 0 || b.tid.load(Relaxed) != owner {
        return None;
    }
    b.clock().checked_sub(born)
}

/// `size` bytes of an object of `site` (standing for `w` objects) went away; `whole`: the
/// object itself is gone (freed by the calling thread; thread `owner` allocated it at clock
/// `born`, 0: unknown); `totals`: count the free in the totals.
pub(super) fn release(
    ss: &Sites,
    site: u32,
    size: u64,
    whole: bool,
    w: u64,
    totals: bool,
    (owner, born): (u32, u64),
) {
    let Some(b) = mine() else {
        shared_release(ss, site, size, whole, w, totals, true);
        return;
    };
    let e = b.entry(ss, site);
    let ws = w.wrapping_mul(size);
    if whole {
        add_u(&e.frees, w);
        add_i(&e.live_objects, -(w as i64));
        if totals {
            add_u(&b.head.frees, 1);
        }
        let max = |a: &AtomicU64, v: u64| {
            if a.load(Relaxed) < v {
                a.store(v, Relaxed);
            }
        };
        e.life.note(lifetime(b, owner, born), w, add_u, max);
    }
    let d = (ws as i64).wrapping_neg();
    live_add(b, &e.live_bytes, &ss.site(site).live_bytes, d);
    live_add(b, &b.live, &TOTALS.live, d);
}

/// A mapping of `site` grew (`d` > 0) or shrank in place: the shared counters directly (a
/// system call happened anyway), the peaks with the calling thread's own deltas.
pub(super) fn resize(ss: &Sites, site: u32, d: i64, size: u64) {
    let s = ss.site(site);
    let live = s
        .live_bytes
        .fetch_add(d as u64, Relaxed)
        .wrapping_add(d as u64) as i64;
    let total = TOTALS
        .live
        .fetch_add(d as u64, Relaxed)
        .wrapping_add(d as u64) as i64;
    if d > 0 {
        let (own_site, own_total) = mine().map_or((0, 0), |b| {
            let e = &b.entries[site as usize % ENTRIES];
            let mine = e.site_plus1.load(Relaxed) == site + 1;
            (
                if mine { e.live_bytes.load(Relaxed) } else { 0 },
                b.live.load(Relaxed),
            )
        });
        note_peak(&s.live_peak, live.wrapping_add(own_site));
        note_peak(&TOTALS.peak, total.wrapping_add(own_total));
    }
    fetch_max(&s.max_size, size);
}

/// The allocator spent `c` ticks on an operation on an object of `site`.
pub(super) fn cycles(ss: &Sites, site: u32, c: u64) {
    match mine() {
        Some(b) => add_u(&b.entry(ss, site).cycles, c),
        None => {
            ss.site(site).cycles.fetch_add(c, Relaxed);
        }
    }
}

/// [`alloc`] for a thread without a block (after its exit): the shared counters directly.
fn shared_alloc(ss: &Sites, site: u32, tid: u32, size: u64, w: u64, totals: bool) {
    let s = ss.site(site);
    let ws = w.wrapping_mul(size);
    apply_site(s, w, ws, 0, ws as i64, w as i64);
    fetch_max(&s.max_size, size);
    note_peak(&s.live_peak, s.live_bytes.load(Relaxed) as i64);
    note_thread(site, s, tid);
    if totals {
        TOTALS.allocations.fetch_add(1, Relaxed);
        TOTALS.bytes.fetch_add(size, Relaxed);
    }
    let live = TOTALS.live.fetch_add(ws, Relaxed).wrapping_add(ws);
    note_peak(&TOTALS.peak, live as i64);
}

/// [`release`] for a thread without a block (`life`: note the free in the lifetimes, as not
/// measured).
fn shared_release(ss: &Sites, site: u32, size: u64, whole: bool, w: u64, totals: bool, life: bool) {
    let ws = w.wrapping_mul(size) as i64;
    let (frees, objects) = if whole { (w, -(w as i64)) } else { (0, 0) };
    apply_site(ss.site(site), 0, 0, frees, -ws, objects);
    if whole && life {
        // A thread past its exit has no clock: not measured.
        let add = |a: &AtomicU64, d: u64| {
            a.fetch_add(d, Relaxed);
        };
        ss.site(site).life.note(None, w, add, fetch_max);
    }
    TOTALS.live.fetch_sub(ws as u64, Relaxed);
    if whole && totals {
        TOTALS.frees.fetch_add(1, Relaxed);
    }
}

/// Sampling (`alloc_sample`): count an allocation call of `size` bytes in the totals, and say
/// whether to record it: when the thread's byte countdown ran out (the next
/// countdown drawn from an exponential distribution of mean `mean`, so an allocation of `n`
/// bytes is recorded with probability 1 - exp(-n / mean) and stands for the inverse of it).
#[inline]
pub(super) fn count_call(size: u64, mean: u64) -> bool {
    let Some(b) = mine() else {
        TOTALS.allocations.fetch_add(1, Relaxed);
        TOTALS.bytes.fetch_add(size, Relaxed);
        return true;
    };
    add_u(&b.head.allocations, 1);
    add_u(&b.head.bytes, size);
    if b.head.rng.load(Relaxed) == 0 {
        // The thread's first call: seed, then a first countdown (not 0: that would record
        // the first allocation whatever its size, with a weight it did not earn).
        b.head.left.store(next_countdown(b, mean), Relaxed);
    }
    let left = b.head.left.load(Relaxed) - size as i64;
    if left > 0 {
        b.head.left.store(left, Relaxed);
        return false;
    }
    b.head.left.store(next_countdown(b, mean), Relaxed);
    true
}

/// Sampling stops for good (`module_registered`): every block's countdown runs out, so its
/// thread's next malloc leaves interpose.c's tail path.
pub(super) fn run_out_countdowns() {
    for &p in ALL.lock().iter() {
        let b = unsafe { &*(p as *const Block) };
        b.head.left.store(i64::MIN / 2, Relaxed);
    }
}

/// Sampling: count a free call in the totals.
#[inline]
pub(super) fn count_free() {
    match mine() {
        Some(b) => add_u(&b.head.frees, 1),
        None => {
            TOTALS.frees.fetch_add(1, Relaxed);
        }
    }
}

/// How many allocations of `size` bytes one recorded at `addr` under sampling of mean `mean`
/// stands for: 1 / (1 - exp(-size / mean)), rounded down or up with the probability that
/// keeps it unbiased, the coin being a hash of the address (so its free, which recomputes the
/// weight, takes back exactly what its allocation added).
pub fn weight(size: u64, mean: u64, addr: u64) -> u64 {
    if mean == 0 {
        return 1;
    }
    let inv = 1.0 / one_minus_exp_neg(size.max(1) as f64 / mean as f64);
    let (whole, frac) = (inv as u64, inv - (inv as u64) as f64);
    let coin = (mix(addr ^ 0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64;
    whole + u64::from(coin < frac)
}

/// The next countdown: exponential with mean `mean` bytes, from the block's own xorshift
/// state (seeded by the thread id when the block was taken, so a run repeats its samples).
fn next_countdown(b: &Block, mean: u64) -> i64 {
    let mut x = b.head.rng.load(Relaxed);
    if x == 0 {
        x = 0x9E37_79B9_7F4A_7C15
            ^ (threads::current_id() as u64 + 1).wrapping_mul(0xff51_afd7_ed55_8ccd);
    }
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b.head.rng.store(x, Relaxed);
    // Uniform in (0, 1] from the top 53 bits.
    let u = ((x >> 11) + 1) as f64 / (1u64 << 53) as f64;
    ((-ln(u) * mean as f64) as i64).max(1)
}

// The runtime links no libm (a C program need not link -lm): the two functions sampling needs,
// to about 1e-12 relative (tested against std's).

/// Natural logarithm of `x` > 0: x = m 2^e with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(t),
/// t = (m - 1) / (m + 1), |t| < 0.172: the series to t^23.
pub(crate) fn ln(x: f64) -> f64 {
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52));
    if m > core::f64::consts::SQRT_2 {
        m /= 2.0;
        e += 1;
    }
    let t = (m - 1.0) / (m + 1.0);
    let t2 = t * t;
    let (mut sum, mut pow) = (0.0, t);
    for k in 0..12 {
        sum += pow / (2 * k + 1) as f64;
        pow *= t2;
    }
    2.0 * sum + e as f64 * core::f64::consts::LN_2
}

/// 1 - exp(-x) for x >= 0, without cancellation for small x.
pub(crate) fn one_minus_exp_neg(x: f64) -> f64 {
    if x < 0.5 {
        // -(expm1(-x)) = x - x^2/2! + x^3/3! - ...
        let (mut sum, mut term) = (0.0, x);
        for k in 1..20 {
            sum += term;
            term *= -x / (k + 1) as f64;
        }
        return sum;
    }
    if x > 700.0 {
        return 1.0;
    }
    // exp(-x) = 2^-k exp(-r), x = k ln 2 + r, r in [0, ln 2): a short Taylor series.
    let k = (x / core::f64::consts::LN_2) as i32;
    let r = x - k as f64 * core::f64::consts::LN_2;
    let (mut e, mut term) = (0.0, 1.0);
    for j in 0..20 {
        e += term;
        term *= -r / (j + 1) as f64;
    }
    1.0 - e * f64::powi(0.5, k)
}

/// The calling thread ends: its deltas go to the shared counters and its block to the pool.
pub(crate) fn thread_exit(ss: Option<&Sites>) {
    let p = BLOCK.with(|b| b.get());
    if p == 0 || p == EXITED {
        BLOCK.with(|b| b.set(EXITED));
        return;
    }
    let b = unsafe { &*(p as *const Block) };
    if let Some(ss) = ss {
        for c in &b.counts {
            move_counts(ss, b, c);
        }
    }
    {
        let _g = b.lock.lock();
        for c in &b.counts {
            c.site_plus1.store(0, Relaxed);
        }
        if let Some(ss) = ss {
            for e in &b.entries {
                flush_entry(ss, e);
                e.site_plus1.store(0, Relaxed);
            }
        }
        flush_totals(b);
    }
    BLOCK.with(|b| b.set(EXITED));
    unsafe { profcc_sample_set_block(core::ptr::null_mut()) };
    b.head.rng.store(0, Relaxed); // the next thread to take the block seeds it with its own id
    FREE.lock().push(p);
}

/// Deltas not yet in the shared counters, summed over every block.
#[derive(Default, Clone, Copy, Debug)]
pub(super) struct Pending {
    pub count: u64,
    pub bytes: u64,
    pub frees: u64,
    pub max_size: u64,
    pub live_bytes: i64,
    pub live_objects: i64,
    pub cycles: u64,
    pub life: LifeSums,
}

/// Per site, and for the totals (`allocations` in `count`, `live` in `live_bytes`).
pub(super) fn pending() -> (HashMap<u32, Pending>, Pending) {
    let blocks: Vec<usize> = ALL.lock().clone();
    let mut sites: HashMap<u32, Pending> = HashMap::new();
    let mut tot = Pending::default();
    for p in blocks {
        let b = unsafe { &*(p as *const Block) };
        let _g = b.lock.lock();
        for e in &b.entries {
            let Some(i) = e.site_plus1.load(Relaxed).checked_sub(1) else {
                continue;
            };
            let d = sites.entry(i).or_default();
            d.count += e.count.load(Relaxed);
            d.bytes += e.bytes.load(Relaxed);
            d.frees += e.frees.load(Relaxed);
            d.max_size = d.max_size.max(e.max_size.load(Relaxed));
            d.live_bytes += e.live_bytes.load(Relaxed);
            d.live_objects += e.live_objects.load(Relaxed);
            d.cycles += e.cycles.load(Relaxed);
            d.life.add(&e.life);
        }
        for (i, c) in b.counts.iter().filter_map(slot_counts) {
            let d = sites.entry(i).or_default();
            d.count += c.allocs;
            d.bytes += c.bytes;
            d.frees += c.frees;
            d.max_size = d.max_size.max(c.max_size);
            d.live_bytes += c.live_bytes();
            d.live_objects += c.live_objects();
        }
        add_block_totals(b, &mut tot);
    }
    (sites, tot)
}

/// A block's deltas of the totals, added to `tot` (allocations in `count`, live bytes in
/// `live_bytes`, its count slots' included).
fn add_block_totals(b: &Block, tot: &mut Pending) {
    tot.count += b.head.allocations.load(Relaxed);
    tot.frees += b.head.frees.load(Relaxed);
    tot.bytes += b.head.bytes.load(Relaxed);
    tot.live_bytes += b.live.load(Relaxed);
    for (_, c) in b.counts.iter().filter_map(slot_counts) {
        tot.live_bytes += c.live_bytes();
    }
}

/// What a count slot holds and has not moved into its block's entries.
#[derive(Clone, Copy)]
struct SlotCounts {
    allocs: u64,
    bytes: u64,
    frees: u64,
    freed: u64,
    max_size: u64,
}

impl SlotCounts {
    fn live_bytes(&self) -> i64 {
        self.bytes.wrapping_sub(self.freed) as i64
    }
    fn live_objects(&self) -> i64 {
        self.allocs.wrapping_sub(self.frees) as i64
    }
}

/// A count slot's site and counts (None: unused). The one reader of a slot's fields besides
/// [`move_counts`], which takes them.
fn slot_counts(c: &CountEntry) -> Option<(u32, SlotCounts)> {
    let site = c.site_plus1.load(Relaxed).checked_sub(1)?;
    Some((
        site,
        SlotCounts {
            allocs: c.allocs.load(Relaxed),
            bytes: c.bytes.load(Relaxed),
            frees: c.frees.load(Relaxed),
            freed: c.freed.load(Relaxed),
            max_size: c.max_size.load(Relaxed) as u64,
        },
    ))
}

/// Every site's allocations, bytes, frees and live bytes now, the shared counters plus every
/// block's deltas (`out[i]` for site `i < out.len()`, sites past it left out), read while the
/// threads run (region snapshots). Every block's lock is held while the shared counters are
/// read too, so that a flush can neither count its deltas twice nor hide them; nothing is
/// allocated under the locks.
pub(super) fn sites_now(ss: &Sites, out: &mut [SiteCounts]) {
    let blocks: Vec<usize> = ALL.lock().clone();
    let mut held = Vec::with_capacity(blocks.len());
    for &p in &blocks {
        held.push(unsafe { &*(p as *const Block) }.lock.lock());
    }
    for (i, o) in out.iter_mut().enumerate() {
        let s = ss.site(i as u32);
        *o = SiteCounts {
            count: s.count.load(Relaxed),
            bytes: s.bytes.load(Relaxed),
            frees: s.frees.load(Relaxed),
            live_bytes: s.live_bytes.load(Relaxed) as i64,
        };
    }
    for &p in &blocks {
        let b = unsafe { &*(p as *const Block) };
        for e in &b.entries {
            let Some(i) = e.site_plus1.load(Relaxed).checked_sub(1) else {
                continue;
            };
            let Some(o) = out.get_mut(i as usize) else {
                continue;
            };
            o.count += e.count.load(Relaxed);
            o.bytes += e.bytes.load(Relaxed);
            o.frees += e.frees.load(Relaxed);
            o.live_bytes = o.live_bytes.wrapping_add(e.live_bytes.load(Relaxed));
        }
        // Its count slots (the unpicked blocks under sampling): they move into the entries
        // under the lock held here, so nothing is counted twice.
        for (i, c) in b.counts.iter().filter_map(slot_counts) {
            let Some(o) = out.get_mut(i as usize) else {
                continue;
            };
            o.count += c.allocs;
            o.bytes += c.bytes;
            o.frees += c.frees;
            o.live_bytes = o.live_bytes.wrapping_add(c.live_bytes());
        }
    }
    drop(held);
}

/// One site's cumulative counts ([`sites_now`]).
#[derive(Default, Clone, Copy, Debug, PartialEq)]
pub struct SiteCounts {
    pub count: u64,
    pub bytes: u64,
    pub frees: u64,
    pub live_bytes: i64,
}

/// The totals' deltas alone ([`pending`]'s second half, without the per-site sums).
pub(super) fn pending_totals() -> Pending {
    let blocks: Vec<usize> = ALL.lock().clone();
    let mut tot = Pending::default();
    for p in blocks {
        add_block_totals(unsafe { &*(p as *const Block) }, &mut tot);
    }
    tot
}

/// In a fork child (locks free, one thread): every block's live deltas go to the shared
/// counters (the objects are still live), the rest is dropped (the child's statistics start
/// from zero, see `alloc::after_fork_child`); only the calling thread keeps a block.
pub(super) fn after_fork_child(ss: Option<&Sites>) {
    let mine = BLOCK.with(|b| b.get());
    let all: Vec<usize> = ALL.lock().clone();
    let mut free = FREE.lock();
    free.clear();
    for p in all {
        let b = unsafe { &*(p as *const Block) };
        for e in &b.entries {
            if let (Some(ss), Some(i)) = (ss, e.site_plus1.load(Relaxed).checked_sub(1)) {
                let live = (e.live_bytes.load(Relaxed), e.live_objects.load(Relaxed));
                apply_site(ss.site(i), 0, 0, 0, live.0, live.1);
            }
            e.site_plus1.store(0, Relaxed);
            for a in [&e.count, &e.bytes, &e.frees, &e.max_size, &e.cycles] {
                a.store(0, Relaxed);
            }
            e.life.zero();
            e.live_bytes.store(0, Relaxed);
            e.live_objects.store(0, Relaxed);
        }
        for c in &b.counts {
            if let (Some(ss), Some((i, n))) = (ss, slot_counts(c)) {
                apply_site(ss.site(i), 0, 0, 0, n.live_bytes(), n.live_objects());
                TOTALS.live.fetch_add(n.live_bytes() as u64, Relaxed);
            }
            for a in [&c.allocs, &c.bytes, &c.frees, &c.freed] {
                a.store(0, Relaxed);
            }
            c.site_plus1.store(0, Relaxed);
            c.max_size.store(0, Relaxed);
        }
        TOTALS.live.fetch_add(b.live.load(Relaxed) as u64, Relaxed);
        zero_allocations(b);
        for a in [&b.head.frees, &b.head.bytes] {
            a.store(0, Relaxed);
        }
        b.live.store(0, Relaxed);
        if p != mine {
            free.push(p);
        }
    }
}

/// `fork.rs`'s prepare step: every statistics lock, in this module's order.
pub(crate) fn fork_prepare() {
    core::mem::forget(ALL.lock());
    for &p in unsafe { &*ALL.data_ptr() } {
        core::mem::forget(unsafe { &*(p as *const Block) }.lock.lock());
    }
    core::mem::forget(FREE.lock());
}

/// Release what [`fork_prepare`] took (in parent and child).
pub(crate) unsafe fn fork_release() {
    FREE.force_unlock();
    for &p in &*ALL.data_ptr() {
        (*(p as *const Block)).lock.force_unlock();
    }
    ALL.force_unlock();
}

#[cfg(test)]
mod tests {
    /// C's `struct sample_head` (alloc/c_structs.rs; its layout is checked in alloc.rs,
    /// `alloc_layout_is_the_c_headers`) is the head of `Block`: interpose.c gets the block's
    /// address.
    #[test]
    fn sample_head_is_blocks_head() {
        assert_eq!(core::mem::offset_of!(super::Block, head), 0);
        // interpose.c's `count_slot`: the counts right after the head, as many as it says.
        assert_eq!(
            core::mem::offset_of!(super::Block, counts),
            core::mem::size_of::<super::SampleHead>()
        );
        let c = include_str!("../../csrc/interpose.c");
        for line in [
            format!("#define COUNT_CACHE {}\n", super::COUNT_CACHE),
            format!("#define LIVE_FLUSH {}\n", super::LIVE_FLUSH),
        ] {
            assert!(c.contains(&line), "interpose.c lacks {line:?}");
        }
    }

    #[test]
    fn sampling_math_matches_std() {
        for &x in &[
            1e-9, 1e-4, 0.1, 0.5, 0.7071, 1.0, 1.5, 2.0, 3.7, 1e3, 1e9, 123456.789,
        ] {
            let (a, b) = (super::ln(x), x.ln());
            assert!(
                (a - b).abs() <= 1e-12 * b.abs().max(1.0),
                "ln({x}) = {a}, std {b}"
            );
        }
        for &x in &[
            0.0, 1e-12, 7.6e-5, 0.01, 0.3, 0.49, 0.5, 1.0, 2.5, 16.0, 40.0, 800.0,
        ] {
            let (a, b) = (super::one_minus_exp_neg(x), -(-x).exp_m1());
            assert!(
                (a - b).abs() <= 1e-12 * b.abs().max(1e-300),
                "1-exp(-{x}) = {a}, std {b}"
            );
        }
    }

    #[test]
    fn weights_are_inverse_probabilities() {
        use super::weight;
        assert_eq!(weight(40, 0, 0x1000), 1);
        // 16 MiB at a mean of 512 KiB: recorded with probability 1 - 1e-14.
        assert_eq!(weight(1 << 24, 524288, 0x1000), 1);
        // 40 bytes at a mean of 512 KiB: recorded with probability 7.63e-5, 1/p = 13107.7.
        let w = weight(40, 524288, 0x1000);
        assert!(w == 13107 || w == 13108, "{w}");
        // Unbiased over addresses: 1/p = 1.5820 for a request of the mean's size.
        let n = 100_000u64;
        let sum: u64 = (0..n)
            .map(|i| weight(524288, 524288, 0x7f00_0000_0000 + i * 16))
            .sum();
        let mean = sum as f64 / n as f64;
        assert!(
            (mean - 1.0 / (1.0 - (-1.0f64).exp())).abs() < 0.01,
            "{mean}"
        );
    }
}
