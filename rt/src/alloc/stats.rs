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
//!   process where one thread allocates at a time, and otherwise low by at most
//!   (threads - 1) x `LIVE_FLUSH` (the other threads' unflushed deltas).
//! - An entry is flushed when another site takes its slot, and all of a block when its
//!   thread exits (the block then goes back to a pool; what the exiting thread does later,
//!   e.g. in TLS destructors, goes to the shared counters directly).
//! - Locks (after `alloc::THREAD_SET` in `fork.rs`'s order): `ALL`, then the blocks' own
//!   locks, then `FREE`; under none of them is another runtime lock taken, except the runtime
//!   heap when `ALL` grows.
//! - Blocks live in runtime memory and are never freed: a process creating threads forever
//!   holds as many blocks as it had threads alive at once.

use super::{fetch_max, note_thread, Sites, TOTALS};
use crate::mem::SpinLock;
use crate::threads;
use core::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::collections::HashMap;

/// Sites a thread keeps deltas for at once (direct-mapped by site index).
pub(crate) const ENTRIES: usize = 256;
/// A live-bytes delta larger than this (either sign) is flushed at once: the bound on how far
/// another thread's view of live bytes, and so a peak, can lag.
pub const LIVE_FLUSH: i64 = 1 << 20;

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
}

#[repr(C, align(64))]
pub(crate) struct Block {
    lock: SpinLock<()>,
    allocations: AtomicU64,
    frees: AtomicU64,
    bytes: AtomicU64,
    live: AtomicI64,
    entries: [Entry; ENTRIES],
}

/// Every block ever made (addresses), and the ones no thread holds.
static ALL: SpinLock<Vec<usize>> = SpinLock::new(Vec::new());
static FREE: SpinLock<Vec<usize>> = SpinLock::new(Vec::new());

/// The thread's `alloc_stats` after it exited: use the shared counters.
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
    let t = threads::tls();
    match t.alloc_stats {
        0 => new_block(),
        EXITED => None,
        p => Some(unsafe { &*(p as *const Block) }),
    }
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
    threads::tls().alloc_stats = p;
    Some(unsafe { &*(p as *const Block) })
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

/// Add `e`'s deltas to its site and zero them (the caller holds the block's lock).
fn flush_entry(ss: &Sites, e: &Entry) {
    let Some(i) = e.site_plus1.load(Relaxed).checked_sub(1) else {
        return;
    };
    let s = ss.site(i);
    let take_u = |a: &AtomicU64| a.swap(0, Relaxed);
    let take_i = |a: &AtomicI64| a.swap(0, Relaxed);
    let (c, b, f) = (take_u(&e.count), take_u(&e.bytes), take_u(&e.frees));
    if c != 0 {
        s.count.fetch_add(c, Relaxed);
        s.bytes.fetch_add(b, Relaxed);
    }
    if f != 0 {
        s.frees.fetch_add(f, Relaxed);
    }
    fetch_max(&s.max_size, take_u(&e.max_size));
    let (lb, lo) = (take_i(&e.live_bytes), take_i(&e.live_objects));
    if lb != 0 {
        s.live_bytes.fetch_add(lb as u64, Relaxed);
    }
    if lo != 0 {
        s.live_objects.fetch_add(lo as u64, Relaxed);
    }
}

/// Move the block's totals into `TOTALS` (the caller holds the block's lock).
fn flush_totals(b: &Block) {
    TOTALS
        .allocations
        .fetch_add(b.allocations.swap(0, Relaxed), Relaxed);
    TOTALS.frees.fetch_add(b.frees.swap(0, Relaxed), Relaxed);
    TOTALS.bytes.fetch_add(b.bytes.swap(0, Relaxed), Relaxed);
    TOTALS
        .live
        .fetch_add(b.live.swap(0, Relaxed) as u64, Relaxed);
}

/// `shared + delta` as a live-byte count, compared with `peak`.
#[inline]
fn check_peak(shared: &AtomicU64, delta: i64, peak: &AtomicU64) {
    let live = (shared.load(Relaxed) as i64).wrapping_add(delta);
    if live > 0 {
        fetch_max(peak, live as u64);
    }
}

/// An object of `size` bytes was allocated at `site` by thread `tid`.
pub(super) fn alloc(ss: &Sites, site: u32, tid: u32, size: u64) {
    let s = ss.site(site);
    let Some(b) = mine() else {
        shared_alloc(ss, site, tid, size);
        return;
    };
    let e = b.entry(ss, site);
    if e.count.load(Relaxed) == 0 {
        note_thread(site, s, tid);
    }
    add_u(&e.count, 1);
    add_u(&e.bytes, size);
    if e.max_size.load(Relaxed) < size {
        e.max_size.store(size, Relaxed);
    }
    add_i(&e.live_objects, 1);
    add_i(&e.live_bytes, size as i64);
    if e.live_bytes.load(Relaxed) > LIVE_FLUSH {
        let _g = b.lock.lock();
        s.live_bytes
            .fetch_add(e.live_bytes.swap(0, Relaxed) as u64, Relaxed);
    }
    check_peak(&s.live_bytes, e.live_bytes.load(Relaxed), &s.live_peak);
    add_u(&b.allocations, 1);
    add_u(&b.bytes, size);
    add_i(&b.live, size as i64);
    if b.live.load(Relaxed) > LIVE_FLUSH {
        let _g = b.lock.lock();
        TOTALS
            .live
            .fetch_add(b.live.swap(0, Relaxed) as u64, Relaxed);
    }
    check_peak(&TOTALS.live, b.live.load(Relaxed), &TOTALS.peak);
}

/// `size` bytes of an object of `site` went away; `whole`: the object itself is gone.
pub(super) fn release(ss: &Sites, site: u32, size: u64, whole: bool) {
    let Some(b) = mine() else {
        shared_release(ss, site, size, whole);
        return;
    };
    let e = b.entry(ss, site);
    add_i(&e.live_bytes, (size as i64).wrapping_neg());
    if whole {
        add_u(&e.frees, 1);
        add_i(&e.live_objects, -1);
        add_u(&b.frees, 1);
    }
    if e.live_bytes.load(Relaxed) < -LIVE_FLUSH {
        let _g = b.lock.lock();
        s_add(ss, site, e.live_bytes.swap(0, Relaxed));
    }
    add_i(&b.live, (size as i64).wrapping_neg());
    if b.live.load(Relaxed) < -LIVE_FLUSH {
        let _g = b.lock.lock();
        TOTALS
            .live
            .fetch_add(b.live.swap(0, Relaxed) as u64, Relaxed);
    }
}

fn s_add(ss: &Sites, site: u32, d: i64) {
    ss.site(site).live_bytes.fetch_add(d as u64, Relaxed);
}

/// A mapping of `site` grew (`d` > 0) or shrank in place: the shared counters directly (a
/// system call happened anyway).
pub(super) fn resize(ss: &Sites, site: u32, d: i64, size: u64) {
    let s = ss.site(site);
    let live = s
        .live_bytes
        .fetch_add(d as u64, Relaxed)
        .wrapping_add(d as u64);
    let total = TOTALS
        .live
        .fetch_add(d as u64, Relaxed)
        .wrapping_add(d as u64);
    if d > 0 {
        let own = mine().map_or((0, 0), |b| {
            let e = &b.entries[site as usize % ENTRIES];
            let el = if e.site_plus1.load(Relaxed) == site + 1 {
                e.live_bytes.load(Relaxed)
            } else {
                0
            };
            (el, b.live.load(Relaxed))
        });
        check_peak(&AtomicU64::new(live), own.0, &s.live_peak);
        check_peak(&AtomicU64::new(total), own.1, &TOTALS.peak);
    }
    fetch_max(&s.max_size, size);
}

fn shared_alloc(ss: &Sites, site: u32, tid: u32, size: u64) {
    let s = ss.site(site);
    s.count.fetch_add(1, Relaxed);
    s.bytes.fetch_add(size, Relaxed);
    fetch_max(&s.max_size, size);
    let live = s.live_bytes.fetch_add(size, Relaxed).wrapping_add(size);
    check_peak(&AtomicU64::new(live), 0, &s.live_peak);
    s.live_objects.fetch_add(1, Relaxed);
    note_thread(site, s, tid);
    TOTALS.allocations.fetch_add(1, Relaxed);
    TOTALS.bytes.fetch_add(size, Relaxed);
    let live = TOTALS.live.fetch_add(size, Relaxed).wrapping_add(size);
    check_peak(&AtomicU64::new(live), 0, &TOTALS.peak);
}

fn shared_release(ss: &Sites, site: u32, size: u64, whole: bool) {
    let s = ss.site(site);
    s.live_bytes.fetch_sub(size, Relaxed);
    TOTALS.live.fetch_sub(size, Relaxed);
    if whole {
        s.frees.fetch_add(1, Relaxed);
        s.live_objects.fetch_sub(1, Relaxed);
        TOTALS.frees.fetch_add(1, Relaxed);
    }
}

/// The calling thread ends: its deltas go to the shared counters and its block to the pool.
pub(crate) fn thread_exit(ss: Option<&Sites>) {
    let t = threads::tls();
    let p = t.alloc_stats;
    if p == 0 || p == EXITED {
        t.alloc_stats = EXITED;
        return;
    }
    let b = unsafe { &*(p as *const Block) };
    {
        let _g = b.lock.lock();
        if let Some(ss) = ss {
            for e in &b.entries {
                flush_entry(ss, e);
                e.site_plus1.store(0, Relaxed);
            }
        }
        flush_totals(b);
    }
    t.alloc_stats = EXITED;
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
        }
        tot.count += b.allocations.load(Relaxed);
        tot.frees += b.frees.load(Relaxed);
        tot.bytes += b.bytes.load(Relaxed);
        tot.live_bytes += b.live.load(Relaxed);
    }
    (sites, tot)
}

/// In a fork child (locks free, one thread): every block's live deltas go to the shared
/// counters (the objects are still live), the rest is dropped (the child's statistics start
/// from zero, see `alloc::after_fork_child`); only the calling thread keeps a block.
pub(super) fn after_fork_child(ss: Option<&Sites>) {
    let mine = threads::tls().alloc_stats;
    let all: Vec<usize> = ALL.lock().clone();
    let mut free = FREE.lock();
    free.clear();
    for p in all {
        let b = unsafe { &*(p as *const Block) };
        for e in &b.entries {
            if let (Some(ss), Some(i)) = (ss, e.site_plus1.load(Relaxed).checked_sub(1)) {
                let s = ss.site(i);
                s.live_bytes
                    .fetch_add(e.live_bytes.load(Relaxed) as u64, Relaxed);
                s.live_objects
                    .fetch_add(e.live_objects.load(Relaxed) as u64, Relaxed);
            }
            e.site_plus1.store(0, Relaxed);
            for a in [&e.count, &e.bytes, &e.frees, &e.max_size] {
                a.store(0, Relaxed);
            }
            e.live_bytes.store(0, Relaxed);
            e.live_objects.store(0, Relaxed);
        }
        TOTALS.live.fetch_add(b.live.load(Relaxed) as u64, Relaxed);
        for a in [&b.allocations, &b.frees, &b.bytes] {
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
