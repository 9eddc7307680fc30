//! Allocation interposition (the entry points are in `csrc/interpose.c`) and the object map.
//!
//! Data structures, all in runtime memory (`mem::map` or the runtime heap), never the
//! program's malloc:
//!
//! - [`OBJECTS`], 256 shards, each a spin lock over two open-addressing tables (linear
//!   probing, backward-shift deletion, doubles at half load). An object's shard is its 1 MiB
//!   region's, hashed, plus its 16-byte granule's index modulo 16 ([`shard_of`]): a thread's
//!   objects keep to a few shards of its own, and neighbouring objects of two threads (one
//!   line apart, as in the cache-scratch kernel) still take different locks.
//! - The primary table: object start -> [`Obj`] (size, site, allocating thread). Every
//!   malloc-family object and every `operator new` object is here.
//! - The big table: the containment index for objects larger than [`SMALL_MAX`]. An object of size
//!   class `c` (size in `[2^(c-1), 2^c)`) gets the key `(c, start >> (c-1))`; since objects do
//!   not overlap and each is at least one block long, no two objects share a key, and an
//!   object covering address `a` starts in block `(a >> (c-1)) - k` for `k` in 0..3.
//!   Objects up to `SMALL_MAX` bytes are found by probing the primary tables backwards at 8-byte steps.
//! - `MMAPS`: mmap'ed regions by start (a `BTreeMap` under one lock: mmap is a system call
//!   anyway), page granular, split by partial `munmap`.
//! - Sites: one [`Site`] per (stack id, kind), found through the direct array `SITE_OF`
//!   indexed by `stack * 16 + kind` (lock-free; a lost race wastes one site slot, which
//!   `snapshot` skips). Counters are relaxed atomics.
//!
//! The map is updated *before* memory goes back to the real allocator (see interpose.c), so
//! an address reused by another thread cannot lose its fresh entry.

use crate::analysis::ObjectInfo;
use crate::mem::{self, SpinLock};

mod stats;
use crate::stack;
use crate::threads;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
/// The runtime's logarithm (no libm), shared with the regions' call sampling.
pub(crate) use stats::ln;
pub use stats::SiteCounts;
pub use stats::LIVE_FLUSH;
/// Sites' thread ids past 255 (a lock of `fork.rs`'s order).
pub(crate) use stats::THREAD_SET;
pub(crate) use stats::{fork_prepare as stats_fork_prepare, fork_release as stats_fork_release};
pub use stats::{life_bucket, LIFE_BUCKETS};
use stats::{mix, Site, Sites, TOTALS};
use std::collections::BTreeMap;

/// Objects up to this size are found by backward probing; larger ones also go to the big tables.
pub const SMALL_MAX: u64 = 256;
const SHARDS: usize = 256;
const MAX_SITES: usize = 1 << 20;
const KINDS: usize = 16;
pub(crate) use profcc_schema::allocator::PAGE;

pub const KIND_NAMES: [&str; 13] = [
    "malloc",
    "calloc",
    "realloc",
    "posix_memalign",
    "aligned_alloc",
    "memalign",
    "valloc",
    "pvalloc",
    "new",
    "new[]",
    "mmap",
    "strdup",
    "strndup",
];
pub const KIND_MMAP: u32 = 10;

/// The definition's expansion here (see alloc/c_structs.rs): [`Obj`], which is C's
/// `struct profcc_obj` (stats.rs expands `SampleHead`).
macro_rules! profcc_c_structs {
    ($($(#[doc = $sdoc:literal])* $cname:ident: $rname:ident {
        $($(#[doc = $doc:literal])* $name:ident: $ty:ty,)*
    })*) => {
        $(c_struct_obj! { $cname [$($sdoc)*] $rname { $([$($doc)*] $name: $ty,)* } })*
        #[cfg(test)]
        const C_OFFSETS: &[(&str, &[(&str, usize)])] = &[$((
            stringify!($cname),
            &[$((stringify!($name), core::mem::offset_of!(c_struct_rust!($cname), $name)),)*],
        ),)*];
    };
}
/// `profcc_obj` expanded as Rust's [`Obj`]; the other structs are expanded elsewhere.
macro_rules! c_struct_obj {
    (profcc_obj [$($sdoc:literal)*] $rname:ident { $([$($doc:literal)*] $name:ident: $ty:ty,)* }) => {
        $(#[doc = $sdoc])*
        #[repr(C)]
        #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
        pub struct $rname {
            $($(#[doc = $doc])* pub $name: $ty,)*
        }
    };
    ($($other:tt)*) => {};
}
/// The Rust type of each C struct of the definition (for the layout test).
#[cfg(test)]
macro_rules! c_struct_rust {
    (profcc_obj) => {
        Obj
    };
    (sample_head) => {
        stats::SampleHead
    };
    (count_entry) => {
        stats::CountEntry
    };
}
include!("alloc/c_structs.rs");

// ---------------------------------------------------------------------------------------------
// Open-addressing table keyed by `Obj::addr` (0 = empty).

pub struct Table {
    slots: *mut Obj,
    cap: usize,
    len: usize,
}
unsafe impl Send for Table {}

impl Default for Table {
    fn default() -> Table {
        Table::new()
    }
}

impl Table {
    pub const fn new() -> Table {
        Table {
            slots: core::ptr::null_mut(),
            cap: 0,
            len: 0,
        }
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        (mix(key) as usize) & (self.cap - 1)
    }

    fn slot(&self, i: usize) -> &Obj {
        unsafe { &*self.slots.add(i) }
    }

    fn slot_mut(&mut self, i: usize) -> &mut Obj {
        unsafe { &mut *self.slots.add(i) }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn find(&self, key: u64) -> Option<usize> {
        if self.cap == 0 || key == 0 {
            return None;
        }
        let mut i = self.home(key);
        loop {
            let a = self.slot(i).addr;
            if a == key {
                return Some(i);
            }
            if a == 0 {
                return None;
            }
            i = (i + 1) & (self.cap - 1);
        }
    }

    pub fn get(&self, key: u64) -> Option<Obj> {
        self.find(key).map(|i| *self.slot(i))
    }

    /// Insert or replace; returns the replaced entry. `Err` only when out of memory.
    #[allow(clippy::result_unit_err)]
    pub fn insert(&mut self, o: Obj) -> Result<Option<Obj>, ()> {
        if (self.len + 1) * 2 > self.cap && !self.grow() {
            return Err(());
        }
        let mut i = self.home(o.addr);
        loop {
            let s = self.slot_mut(i);
            if s.addr == o.addr {
                let old = *s;
                *s = o;
                return Ok(Some(old));
            }
            if s.addr == 0 {
                *s = o;
                self.len += 1;
                return Ok(None);
            }
            i = (i + 1) & (self.cap - 1);
        }
    }

    pub fn remove(&mut self, key: u64) -> Option<Obj> {
        let i = self.find(key)?;
        let old = *self.slot(i);
        let mask = self.cap - 1;
        let mut hole = i;
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let e = *self.slot(j);
            if e.addr == 0 {
                break;
            }
            let home = self.home(e.addr);
            // Move `e` into the hole unless its home lies cyclically in (hole, j].
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(hole) & mask) {
                *self.slot_mut(hole) = e;
                hole = j;
            }
        }
        *self.slot_mut(hole) = Obj::default();
        self.len -= 1;
        Some(old)
    }

    fn grow(&mut self) -> bool {
        let ncap = if self.cap == 0 {
            FIRST_CAP.load(Ordering::Relaxed)
        } else {
            self.cap * 2
        };
        let p = mem::map(ncap * core::mem::size_of::<Obj>(), false) as *mut Obj;
        if p.is_null() {
            return false;
        }
        let (old, ocap) = (self.slots, self.cap);
        self.slots = p;
        self.cap = ncap;
        self.len = 0;
        for i in 0..ocap {
            let e = unsafe { *old.add(i) };
            if e.addr != 0 {
                let _ = self.insert(e);
            }
        }
        if !old.is_null() {
            mem::unmap(old as *mut u8, ocap * core::mem::size_of::<Obj>());
        }
        true
    }

    pub fn for_each(&self, mut f: impl FnMut(&Obj)) {
        for i in 0..self.cap {
            let e = self.slot(i);
            if e.addr != 0 {
                f(e);
            }
        }
    }
}

/// A shard table's first capacity: 1024 slots when every allocation is recorded (a first
/// table of 64 measured 1.10x slower on alloc_pairs: growing it), 64 under `alloc_sample`,
/// which records few: 64 tables of 1024 slots are 640 pages, each touched by the first
/// recorded object that hashes there (two page faults, a TLB shootdown each once a second
/// thread runs).
static FIRST_CAP: AtomicUsize = AtomicUsize::new(1024);
const FIRST_CAP_SAMPLED: usize = 64;

/// The map is sharded by the 1 MiB region an object starts in (and its granule, below), not
/// by a hash of its address: a thread's objects come from its allocator's own arenas or slabs,
/// so its map operations find their shard's lock and slots in its own cache, where a shard per
/// hashed address sent both to the other core on most calls of two threads (the larson-like
/// kernel spent 58% of its time in the map, most of it on the locks' and slots' lines).
const REGION_SHIFT: u32 = 20;

/// An address's shard: its region's, hashed, plus its 16-byte granule modulo 16, so two
/// threads' neighbouring blocks (main's blocks handed out one per thread) take two locks.
#[inline]
fn shard_of(addr: u64) -> usize {
    ((mix((addr >> REGION_SHIFT) ^ 0x5555) >> 56) as usize + ((addr >> 4) as usize & 15)) % SHARDS
}

/// A shard's two tables, under one lock: exact starts, and the containment entries whose
/// block starts in the shard ([`big_shard`]).
struct Tables {
    primary: Table,
    big: Table,
}

#[repr(align(64))]
struct Shard(SpinLock<Tables>);

/// Size class of a size: `c` with `size` in `[2^(c-1), 2^c)`.
#[inline]
fn class_of(size: u64) -> u32 {
    64 - size.leading_zeros()
}

#[inline]
fn big_key(class: u32, block: u64) -> u64 {
    ((class as u64) << 56) | (block & ((1 << 56) - 1))
}

/// The shard of the containment entry for the object of class `c` that starts in `block`:
/// the shard of the block's first byte, all a lookup knows. It is the object's own only when
/// the object starts at a multiple of 256 bytes in the same region (a page-aligned block's);
/// other objects over [`SMALL_MAX`] take a second lock for it.
#[inline]
fn big_shard(c: u32, block: u64) -> usize {
    shard_of(block << (c - 1))
}

/// `o`'s containment entry, if it is large enough to have one: its shard and key.
#[inline]
fn big_entry(o: &Obj) -> Option<(usize, u64)> {
    (o.size > SMALL_MAX).then(|| {
        let c = class_of(o.size);
        let b = o.addr >> (c - 1);
        (big_shard(c, b), big_key(c, b))
    })
}

/// A containment entry: its key, and the object's start in `size`.
fn big_obj(key: u64, start: u64) -> Obj {
    Obj {
        addr: key,
        size: start,
        ..Obj::default()
    }
}

/// The object map: exact-start entries plus the containment index.
pub struct ObjectMap {
    shards: [Shard; SHARDS],
    /// Size classes that ever had a containment entry (`containing` probes only those). Set
    /// once, read after: a flag, not a count, so the allocation path writes no shared line.
    class_seen: [AtomicBool; 65],
}

impl Default for ObjectMap {
    fn default() -> ObjectMap {
        ObjectMap::new()
    }
}

impl ObjectMap {
    pub const fn new() -> ObjectMap {
        ObjectMap {
            shards: [const {
                Shard(SpinLock::new(Tables {
                    primary: Table::new(),
                    big: Table::new(),
                }))
            }; SHARDS],
            class_seen: [const { AtomicBool::new(false) }; 65],
        }
    }

    fn lock(&self, shard: usize) -> crate::mem::SpinGuard<'_, Tables> {
        self.shards[shard].0.lock()
    }

    /// Insert a new object; returns a stale entry at the same address (its free was not seen).
    pub fn insert(&self, o: Obj) -> Option<Obj> {
        let home = shard_of(o.addr);
        // Containment entries in another shard than the start's ([`big_shard`]), done after
        // the home lock.
        let mut far: [Option<(usize, u64, Option<u64>)>; 2] = [None, None];
        let old = {
            let mut t = self.lock(home);
            let old = t.primary.insert(o).ok().flatten();
            if let Some((s, k)) = old.as_ref().and_then(big_entry) {
                if s == home {
                    t.big.remove(k);
                } else {
                    far[0] = Some((s, k, None));
                }
            }
            if let Some((s, k)) = big_entry(&o) {
                let seen = &self.class_seen[class_of(o.size) as usize];
                if !seen.load(Ordering::Relaxed) {
                    seen.store(true, Ordering::Relaxed);
                }
                if s == home {
                    let _ = t.big.insert(big_obj(k, o.addr));
                } else {
                    far[1] = Some((s, k, Some(o.addr)));
                }
            }
            old
        };
        for (s, k, start) in far.into_iter().flatten() {
            let mut t = self.lock(s);
            match start {
                Some(a) => {
                    let _ = t.big.insert(big_obj(k, a));
                }
                None => {
                    t.big.remove(k);
                }
            }
        }
        old
    }

    pub fn remove(&self, addr: u64) -> Option<Obj> {
        let home = shard_of(addr);
        let (o, far) = {
            let mut t = self.lock(home);
            let o = t.primary.remove(addr)?;
            let far = match big_entry(&o) {
                Some((s, k)) if s == home => {
                    t.big.remove(k);
                    None
                }
                other => other,
            };
            (o, far)
        };
        if let Some((s, k)) = far {
            self.lock(s).big.remove(k);
        }
        Some(o)
    }

    pub fn get(&self, addr: u64) -> Option<Obj> {
        self.lock(shard_of(addr)).primary.get(addr)
    }

    /// The object that contains `a` (an interior pointer is fine).
    pub fn containing(&self, a: u64) -> Option<Obj> {
        let contains = |o: &Obj| a >= o.addr && a < o.addr + o.size.max(1);
        if a == 0 {
            return None;
        }
        if let Some(o) = self.get(a) {
            return Some(o);
        }
        let mut cand = a & !7;
        if cand == a {
            cand = cand.wrapping_sub(8);
        }
        while cand != 0 && a - cand <= SMALL_MAX {
            if let Some(o) = self.get(cand) {
                if contains(&o) {
                    return Some(o);
                }
                break;
            }
            cand -= 8;
        }
        for c in (class_of(SMALL_MAX + 1)..=64)
            .filter(|&c| self.class_seen[c as usize].load(Ordering::Relaxed))
        {
            let block = a >> (c - 1);
            for k in 0..3u64 {
                let Some(b) = block.checked_sub(k) else { break };
                let e = self.lock(big_shard(c, b)).big.get(big_key(c, b));
                if let Some(e) = e {
                    if let Some(o) = self.get(e.size) {
                        if contains(&o) {
                            return Some(o);
                        }
                    }
                }
            }
        }
        None
    }

    /// Every object, shard by shard under its lock.
    pub fn for_each(&self, mut f: impl FnMut(&Obj)) {
        for s in &self.shards {
            s.0.lock().primary.for_each(&mut f);
        }
    }

    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.0.lock().primary.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn lock_all(&self) {
        for s in &self.shards {
            core::mem::forget(s.0.lock());
        }
    }
    pub(crate) unsafe fn unlock_all(&self) {
        for s in &self.shards {
            s.0.force_unlock();
        }
    }
}

pub(crate) static OBJECTS: ObjectMap = ObjectMap::new();
pub(crate) static MMAPS: SpinLock<BTreeMap<u64, Region>> = SpinLock::new(BTreeMap::new());

// ---------------------------------------------------------------------------------------------
// Sites and totals.

const SITE_OF_BYTES: usize = stack::MAX_STACKS * KINDS * 4;
const SITES_BYTES: usize = MAX_SITES * core::mem::size_of::<Site>();

static SITES: AtomicPtr<Sites> = AtomicPtr::new(core::ptr::null_mut());

/// The site table (made on the first call; None when no memory could be had). Inlined: the
/// allocation and free paths ask several times per call.
#[inline]
fn sites() -> Option<&'static Sites> {
    let p = SITES.load(Ordering::Acquire);
    if !p.is_null() {
        return Some(unsafe { &*p });
    }
    make_sites()
}

#[cold]
#[inline(never)]
fn make_sites() -> Option<&'static Sites> {
    let mem = mem::map(SITE_OF_BYTES + SITES_BYTES, true);
    if mem.is_null() {
        return None;
    }
    let hdr = mem::map(core::mem::size_of::<Sites>(), false) as *mut Sites;
    if hdr.is_null() {
        mem::unmap(mem, SITE_OF_BYTES + SITES_BYTES);
        return None;
    }
    let s = Sites {
        site_of: mem as *const AtomicU32,
        sites: unsafe { mem.add(SITE_OF_BYTES) } as *const Site,
        next: AtomicU32::new(KINDS as u32),
    };
    // Sites 0..KINDS: (stack 0, kind k), the fallback when the site array is full.
    for k in 0..KINDS {
        unsafe {
            let site = &*s.sites.add(k);
            site.kind.store(k as u32, Ordering::Relaxed);
            site.state.store(1, Ordering::Relaxed);
            (*s.site_of.add(k)).store(k as u32 + 1, Ordering::Relaxed);
        }
    }
    unsafe { hdr.write(s) };
    match SITES.compare_exchange(
        core::ptr::null_mut(),
        hdr,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        Ok(_) => Some(unsafe { &*hdr }),
        Err(other) => {
            mem::unmap(mem, SITE_OF_BYTES + SITES_BYTES);
            mem::unmap(hdr as *mut u8, core::mem::size_of::<Sites>());
            Some(unsafe { &*other })
        }
    }
}

impl Sites {
    fn index(&self, stack: u32, kind: u32) -> u32 {
        let stack = if (stack as usize) < stack::MAX_STACKS {
            stack
        } else {
            0
        };
        let slot = unsafe { &*self.site_of.add(stack as usize * KINDS + kind as usize) };
        let v = slot.load(Ordering::Acquire);
        if v != 0 {
            return v - 1;
        }
        let idx = self.next.fetch_add(1, Ordering::Relaxed);
        if idx as usize >= MAX_SITES {
            return kind; // the (stack 0, kind) site
        }
        let s = self.site(idx);
        s.stack.store(stack, Ordering::Relaxed);
        s.kind.store(kind, Ordering::Relaxed);
        s.state.store(1, Ordering::Release);
        match slot.compare_exchange(0, idx + 1, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => idx,
            Err(winner) => {
                s.state.store(2, Ordering::Release);
                winner - 1
            }
        }
    }
}

/// Count an allocation; returns the thread's allocation clock after it (`Obj::born`; 0:
/// none).
fn account_alloc(site_idx: u32, tid: u32, size: u64, w: u64, totals: bool) -> u64 {
    match sites() {
        Some(ss) => stats::alloc(ss, site_idx, tid, size, w, totals),
        None => 0,
    }
}

/// `size` bytes of an object of `site` went away; `whole`: the object itself is gone, freed
/// now by the calling thread; `measured`: its lifetime ends now (not a stale entry whose free
/// was not seen).
fn account_release(o: &Obj, size: u64, whole: bool, measured: bool) {
    if o.tid & IDENT != 0 && !exact_counts() {
        return;
    }
    if let Some(ss) = sites() {
        let (w, totals) = weight_of(o);
        let born = if measured { o.born } else { 0 };
        stats::release(
            ss,
            o.site,
            size,
            whole,
            w,
            totals,
            (o.tid & !FILTERED, born),
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Sampling (`alloc_sample`).
//
// With `alloc_sample=N` > 0 every allocation call is counted in the thread's totals, and one
// in about N bytes is recorded (site, stack, object map) with the weight 1 / (1 - exp(-n/N))
// of an n-byte request (`stats::count_call`). A free looks in the object map only when the
// counting filter (the address's byte in the filter part of `GRANULES`, counting the recorded
// objects that start in it; a saturated count stays set) says a recorded object may start there.
// The sharing and NUMA analyses need every object: when a module built with their checks
// registers, the blocks sampling does not record get start words ("Start words" below). Only
// when the start shadow cannot be reserved does sampling stop for good (`module_registered`);
// objects recorded while it ran keep their weight (`SAMPLED` in `Obj::tid`), later ones are
// exact.

/// `Obj::tid`'s bit for an object recorded by sampling (its weight follows from its size).
const SAMPLED: u32 = 1 << 31;
/// `Obj::tid`'s bit for an object in the map for its identity only (sampling did not pick it,
/// start words run and it has no start word: [`record_identity`]): no site figure counts it.
const IDENT: u32 = 1 << 30;
/// The bits whose objects the sampling filter counts.
const FILTERED: u32 = SAMPLED | IDENT;
/// Mean bytes between recorded allocations; 0: every allocation is recorded.
#[export_name = "profcc_sample_mean"] // read by interpose.c's sampling fast path
static SAMPLE_MEAN: AtomicU64 = AtomicU64::new(0);
/// What `alloc_sample` asked for (kept after sampling stopped: the weights of old objects).
static SAMPLE_ASKED: AtomicU64 = AtomicU64::new(0);
/// The granule table, one mapping in two parts (interpose.c's `granule` and `freed_in`), each
/// a byte for each 16-byte granule of the address space modulo 2^GRANULE_BITS granules (a
/// 16 MiB window, placed at a hash of the address's upper bits: interpose.c's
/// `granule_index`, which Rust calls too). The filter part counts the recorded objects that
/// start in the granule; its pages nothing was recorded in stay the kernel's zero page. Then,
/// [`REUSE_AT`] bytes in, the allocator analysis's reuse state (a tag and a freed bit).
/// Mapped once (2 MiB of address space, pages touched as used) when either needs it.
/// interpose.c's copies of the constants are checked by a unit test.
pub(crate) const GRANULE_BITS: u32 = 20;
/// Where the table's reuse part starts (interpose.c's `REUSE_AT`): after the filter's bytes.
pub(crate) const REUSE_AT: usize = 1 << GRANULE_BITS;
#[export_name = "profcc_granules"] // read by interpose.c's fast paths
static GRANULES: AtomicPtr<core::sync::atomic::AtomicU8> = AtomicPtr::new(core::ptr::null_mut());

extern "C" {
    /// interpose.c: the granule of an address (its fast paths use the same one).
    fn profcc_granule_index(addr: u64) -> u64;
    /// interpose.c: count the runtime's own blocks handed out before the table existed.
    fn profcc_pin_own_blocks();
}

/// Map the granule table (from initialisation, which runs on one thread); false when the
/// system refused the memory.
pub(crate) fn map_granules() -> bool {
    if !GRANULES.load(Ordering::Relaxed).is_null() {
        return true;
    }
    let g = mem::map(2 * REUSE_AT, true);
    if g.is_null() {
        return false;
    }
    GRANULES.store(g as *mut core::sync::atomic::AtomicU8, Ordering::SeqCst);
    // The runtime's own blocks handed out before the table: their frees must find the
    // filter set (interpose.c's `tail_free`).
    unsafe { profcc_pin_own_blocks() };
    true
}

/// Whether `alloc_sample` asks for sampling and it can start: its filter, the granule table,
/// is mapped (without it every allocation is recorded). Mapped here on the first call.
pub(crate) fn sampling_can_start() -> bool {
    crate::options::get().alloc_sample != 0 && map_granules()
}

/// From `ensure_init`, after the options are read.
pub(crate) fn init_sampling() {
    let n = crate::options::get().alloc_sample as u64;
    if !sampling_can_start() {
        return;
    }
    // Before the first sampled call: every block sampling does not pick is counted.
    start_words_begin(START_COUNTS);
    FIRST_CAP.store(FIRST_CAP_SAMPLED, Ordering::Relaxed);
    SAMPLE_ASKED.store(n, Ordering::Relaxed);
    SAMPLE_MEAN.store(n, Ordering::Release);
}

/// A module registered with `flags`: one with access checks stops sampling (for good:
/// `SAMPLE_ASKED` stays, so sampling ran and stopped iff it is set and `SAMPLE_MEAN` is 0).
pub(crate) fn module_registered(flags: u32) {
    use profcc_abi::{FLAG_NUMA, FLAG_SHARING};
    if flags & (FLAG_SHARING | FLAG_NUMA) == 0 || SAMPLE_MEAN.load(Ordering::Acquire) == 0 {
        return;
    }
    if start_words_begin(0) {
        return; // sampling goes on; the blocks it does not record keep their identity
    }
    // Sampling's tail paths (interpose.c `tail_ready`) do not read the mean; they stop on
    // what they do read. First the filter, saturated (a saturated count stays set), so a
    // free of an object recorded exactly from now on never passes it; then every block's
    // countdown, run out, so a malloc takes the full path (a thread whose call was under way
    // may store its old countdown over it: it stops when that one runs out); then the mean.
    let g = GRANULES.load(Ordering::Acquire);
    if !g.is_null() {
        let words = g as *const core::sync::atomic::AtomicU64;
        for i in 0..REUSE_AT / 8 {
            unsafe { &*words.add(i) }.store(u64::MAX, Ordering::Relaxed);
        }
    }
    stats::run_out_countdowns();
    SAMPLE_MEAN.store(0, Ordering::SeqCst);
}

// ---------------------------------------------------------------------------------------------
// Start words: the identity of the blocks sampling does not record.
//
// The sharing and NUMA analyses need an object's allocation site only when one of its lines
// becomes contended or one of its pages is first touched; the allocation path need only leave
// enough to find it then. While sampling runs beside a module with their checks, a block of
// fewer than 2^START_SIZE_BITS bytes that sampling did not pick gets a start word
// (`profcc_abi::start_word`: site, size, which half of its 16-byte granule it starts in) in
// the start shadow, written after the real call by interpose.c's tail path (`start_put`) or
// by [`record_identity`] on the full path, and cleared by its free, with the block's line
// words as the sharing analysis's free would (interpose.c `start_clear`; a line with a record
// sends the free to the full path, where [`start_freed`] tells the analyses). [`lookup`] finds
// such a block by scanning back from the address over at most [`START_SCAN`] granules. A larger
// block sampling did not pick goes into the map for its identity alone (`IDENT`).
// The tail path's site comes from a per-thread cache keyed by the kind and the caller's two
// return addresses (interpose.c `start_site`): its deeper frames are those of the first stack
// walked for that key. The allocating thread and the lifetime of a block with a start word are
// not known; the sites' figures stay sampling's estimates.

/// Bit `START_ON`: start words are written; bit `START_LINES`: a tail-path free clears the
/// block's line words (a module with the sharing checks registered); bit `START_COUNTS`: the
/// blocks with a start word are counted in their sites' figures ([`exact_counts`]). Read by
/// interpose.c.
#[export_name = "profcc_start_words"]
static START_WORDS: AtomicU32 = AtomicU32::new(0);
const START_ON: u32 = 1;
const START_LINES: u32 = 2;
const START_COUNTS: u32 = 4;

/// Whether sampling counts every allocation and free in its site's figures (start words began
/// with sampling, so every block it does not pick has its site in a start word or, for a
/// larger one, an identity entry in the map): the sites' counts, bytes, frees, live bytes and
/// peaks are then what exact recording gives, and a picked object weighs 1. Without it (the
/// start shadow refused at first) the sites' figures are sampling's weighted estimates.
#[inline]
fn exact_counts() -> bool {
    START_WORDS.load(Ordering::Relaxed) & START_COUNTS != 0
}

/// interpose.c's `count_slot` (guard set, `START_COUNTS` set): the calling thread's count
/// slot for `site` holds another site; `alloc`: an allocation asks (stats.rs, "Counts of
/// unpicked blocks").
#[no_mangle]
pub extern "C" fn profcc_count_slot(site: u32, alloc: u32) {
    if let Some(ss) = sites() {
        stats::count_slot_taken(ss, site, alloc != 0);
    }
}
/// interpose.c's `count_net` (guard set): the calling thread's count slot of `site` has freed
/// `LIVE_FLUSH` bytes more than it allocated and moves now (stats.rs `count_move`).
#[no_mangle]
pub extern "C" fn profcc_count_move(site: u32) {
    if let Some(ss) = sites() {
        stats::count_move(ss, site);
    }
}
/// Granules a lookup scans back: a start word's block is shorter than this many.
const START_SCAN: u64 = 1 << (profcc_abi::START_SIZE_BITS - profcc_abi::START_SHIFT);

fn start_slot(addr: u64) -> &'static AtomicU32 {
    unsafe { &*(profcc_abi::start_shadow(addr) as *const AtomicU32) }
}

/// Start words begin (sampling starts, with `counts` = `START_COUNTS`; or a module with
/// access checks registered while sampling runs without them), the start shadow reserved by
/// the first call: false when it cannot be (sampling then stops at the registration, so no
/// later one asks again). `START_ON` is set only once the shadow is there.
fn start_words_begin(counts: u32) -> bool {
    if START_WORDS.load(Ordering::Acquire) & START_ON != 0 {
        return true;
    }
    if mem::map_fixed_zero(profcc_abi::START_SHADOW, profcc_abi::START_SHADOW_SIZE).is_err() {
        return false;
    }
    let lines = if LINES_KEPT.load(Ordering::SeqCst) {
        START_LINES
    } else {
        0
    };
    START_WORDS.fetch_or(START_ON | lines | counts, Ordering::SeqCst);
    true
}

/// The sharing analysis keeps line words (set by [`frees_clear_lines`]).
static LINES_KEPT: AtomicBool = AtomicBool::new(false);

/// The sharing analysis keeps line words (a module with its checks registered and the line
/// shadow reserved): a tail-path free clears its block's, as the analysis's free would.
/// `START_WORDS` stays 0 until start words begin, so interpose.c tests it whole.
pub(crate) fn frees_clear_lines() {
    LINES_KEPT.store(true, Ordering::SeqCst);
    if START_WORDS.load(Ordering::SeqCst) & START_ON != 0 {
        START_WORDS.fetch_or(START_LINES, Ordering::SeqCst);
    }
}

/// The site of a tail-path allocation whose key the thread's cache did not hold (interpose.c
/// `start_site`, guard set): `NO_SITE` when it cannot have a start word.
#[no_mangle]
pub unsafe extern "C" fn profcc_start_site(kind: u32, fp: *mut libc::c_void) -> u32 {
    let _ = threads::current_id();
    match site_for(kind, fp) {
        Some(s) if s < profcc_abi::START_SITES => s,
        _ => NO_SITE,
    }
}

/// A full-path allocation sampling did not pick, while start words run: its start word, or
/// for a larger block an identity entry in the map.
fn record_identity(p: u64, n: u64, kind: u32, fp: *mut libc::c_void) {
    let Some(site) = site_for(kind, fp) else {
        return;
    };
    if n < 1 << profcc_abi::START_SIZE_BITS
        && site < profcc_abi::START_SITES
        && p < profcc_abi::APP_LIMIT
    {
        start_slot(p).store(profcc_abi::start_word(p, n, site), Ordering::Relaxed);
        if let Some(ss) = sites().filter(|_| exact_counts()) {
            stats::count_unpicked_alloc(ss, site, n);
        }
        return;
    }
    let tid = threads::current_id();
    // Counted (and its lifetime measured: it is in the map) when sampling counts every block.
    let born = if exact_counts() {
        account_alloc(site, tid, n, 1, false)
    } else {
        0
    };
    let o = Obj {
        addr: p,
        size: n,
        site,
        tid: tid | IDENT,
        born,
    };
    filter_add(o.addr);
    insert_object(o);
}

/// Put `o` in the map; an entry it replaces (a block whose free was not seen) goes.
fn insert_object(o: Obj) {
    if let Some(stale) = OBJECTS.insert(o) {
        if stale.tid & FILTERED != 0 {
            filter_remove(stale.addr);
        }
        account_release(&stale, stale.size, true, false);
    }
}

/// interpose.c's `on_alloc`: a full-path allocation sampling did not pick.
#[no_mangle]
pub unsafe extern "C" fn profcc_start_record(
    p: *mut libc::c_void,
    n: usize,
    kind: u32,
    fp: *mut libc::c_void,
) {
    record_identity(p as u64, n as u64, kind, fp);
}

/// The block at `p` is being freed and is not in the map: if it has a start word, the word
/// goes and the analyses that watch frees hear of it (the full path: a tail-path free did
/// this itself, or found a line with a record and came here).
fn start_freed(p: u64) {
    if START_WORDS.load(Ordering::Relaxed) == 0 || p >= profcc_abi::APP_LIMIT {
        return;
    }
    let slot = start_slot(p);
    let w = slot.load(Ordering::Relaxed);
    if w == 0 {
        return;
    }
    let (start, size, site) = profcc_abi::start_block(p & !15, w);
    if start != p {
        return; // the word is the other half's block
    }
    slot.store(0, Ordering::Relaxed);
    if let Some(ss) = sites().filter(|_| exact_counts()) {
        stats::count_unpicked_free(ss, site, size);
    }
    crate::analysis::unseen_object_freed(|| start_info(start, size, site));
}

/// interpose.c's `take_obj`: a free the sampling filter cleared found a start word at `p`.
#[no_mangle]
pub extern "C" fn profcc_start_freed(p: *mut libc::c_void) {
    start_freed(p as u64);
}

fn start_info(start: u64, size: u64, site: u32) -> ObjectInfo {
    let o = Obj {
        addr: start,
        size,
        site,
        tid: IDENT,
        born: 0,
    };
    info(&o)
}

/// The block with a start word that holds `addr`, if any.
fn start_block_containing(addr: u64) -> Option<ObjectInfo> {
    if START_WORDS.load(Ordering::Acquire) & START_ON == 0 || addr >= profcc_abi::APP_LIMIT {
        return None;
    }
    let g = addr & !15;
    for k in 0..START_SCAN.min(g / 16 + 1) {
        let base = g - k * 16;
        let w = start_slot(base).load(Ordering::Relaxed);
        if w == 0 {
            continue;
        }
        let (start, size, site) = profcc_abi::start_block(base, w);
        if start > addr {
            continue; // the second half of addr's own granule
        }
        // Blocks do not overlap: the nearest start below is the only one that can hold addr.
        return (addr < start + size.max(1)).then(|| start_info(start, size, site));
    }
    None
}

/// What the profile's notes say of sampling.
pub fn sampling_note() -> Option<String> {
    let n = SAMPLE_ASKED.load(Ordering::Relaxed);
    if n == 0 {
        return None;
    }
    Some(if SAMPLE_MEAN.load(Ordering::Relaxed) == 0 {
        format!("alloc_sample={n} stopped when a module built with access checks registered (they need every object) and the start shadow could not be reserved: allocations before it were sampled (their sites' figures are estimates), those after it are exact")
    } else {
        let named = if START_WORDS.load(Ordering::Relaxed) & START_ON != 0 {
            "; the blocks not recorded are named for the sharing and NUMA analyses by their start words (site and size; allocating thread unknown)"
        } else {
            ""
        };
        if exact_counts() {
            format!("allocation sites sampled (alloc_sample={n}): one allocation recorded per {n} bytes on average, with its allocating thread and lifetime; every allocation and free is counted in its site's figures: counts, bytes, frees, live bytes and the totals are exact, peaks are taken when a thread's counts move (at each recorded allocation) and can be low by what the thread allocated since, lifetimes are the recorded blocks'{named}")
        } else {
            format!("allocation sites sampled (alloc_sample={n}): one allocation recorded per {n} bytes on average, standing for 1/(1-exp(-size/{n})) allocations; per-site counts, bytes, frees, live bytes and peaks are estimates, the totals of allocations, bytes and frees are exact{named}")
        }
    })
}

#[inline]
fn filter_slot(addr: u64) -> Option<&'static core::sync::atomic::AtomicU8> {
    let g = GRANULES.load(Ordering::Acquire);
    if g.is_null() {
        return None;
    }
    Some(unsafe { &*g.add(profcc_granule_index(addr) as usize) })
}

/// Also interpose.c's, which counts the runtime's own blocks (the bootstrap pool's, the dtv
/// side blocks) here, so sampling's tail path sends their frees to the full path.
#[export_name = "profcc_filter_add"]
extern "C" fn filter_add(addr: u64) {
    if let Some(c) = filter_slot(addr) {
        let _ = c.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |v| v.checked_add(1));
    }
}

/// Also interpose.c's (see [`filter_add`]).
#[export_name = "profcc_filter_remove"]
extern "C" fn filter_remove(addr: u64) {
    if let Some(c) = filter_slot(addr) {
        let _ = c.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |v| {
            (v != 0 && v != u8::MAX).then(|| v - 1)
        });
    }
}

/// The weight of a recorded object, and whether its free is counted in the totals here (not
/// while sampling runs: `profcc_take` counted it).
fn weight_of(o: &Obj) -> (u64, bool) {
    let w = if o.tid & SAMPLED != 0 && !exact_counts() {
        stats::weight(o.size, SAMPLE_ASKED.load(Ordering::Relaxed), o.addr)
    } else {
        1
    };
    (w, SAMPLE_MEAN.load(Ordering::Relaxed) == 0)
}

/// The calling thread ends (`threads::profcc_thread_exiting`).
pub(crate) fn thread_exit() {
    stats::thread_exit(sites());
}

/// The site of an allocation made at `fp` (the caller has the thread's id already:
/// `threads::current_id` gives the walker the thread's stack bounds).
fn site_for(kind: u32, fp: *mut libc::c_void) -> Option<u32> {
    let mut buf = core::mem::MaybeUninit::uninit();
    let f = stack::walk_from(fp, &mut buf);
    let n = f.len();
    // The thread's recent sites: an allocation-heavy loop calls malloc from a few places,
    // and a hit skips the stack depot's hash and probe.
    let first = f.first().copied().unwrap_or(0);
    let slot = ((first ^ (first >> 7)) as usize) % SITE_CACHE;
    let hit = SITE_CACHE_OF.with(|c| {
        let e = unsafe { &(*c.get())[slot] };
        // Compared frame by frame from the innermost: a different caller differs early, and
        // a slice compare of a few words would be a call to memcmp.
        (n > 0
            && e.n as usize == n
            && e.kind == kind
            && e.frames[..n].iter().zip(f).all(|(a, b)| a == b))
        .then_some(e.site)
    });
    if hit.is_some() {
        return hit;
    }
    let site = sites()?.index(stack::intern(f), kind);
    if n == 0 {
        return Some(site);
    }
    SITE_CACHE_OF.with(|c| {
        let e = unsafe { &mut (*c.get())[slot] };
        e.n = n as u32;
        e.kind = kind;
        e.site = site;
        e.frames[..n].copy_from_slice(f);
    });
    Some(site)
}

/// Entries of a thread's cache of recent allocation sites ([`site_for`]).
const SITE_CACHE: usize = 8;

/// An allocation's walked frames and kind, and the site they gave (`n` 0: empty; a walk of
/// no frame is never cached).
#[derive(Clone, Copy)]
struct CachedSite {
    n: u32,
    kind: u32,
    site: u32,
    frames: [u64; stack::MAX_FRAMES],
}

thread_local! {
    /// The calling thread's recent sites, direct-mapped by the allocation's call site. A site
    /// index is fixed for the run (and the same in a forked child), so an entry never goes
    /// stale; a frame list compares whole, so a hit is the site the depot would give.
    static SITE_CACHE_OF: core::cell::UnsafeCell<[CachedSite; SITE_CACHE]> = const {
        core::cell::UnsafeCell::new(
            [CachedSite { n: 0, kind: 0, site: 0, frames: [0; stack::MAX_FRAMES] }; SITE_CACHE],
        )
    };
}

// ---------------------------------------------------------------------------------------------
// Entry points from interpose.c (the re-entrancy guard is set while they run).

#[no_mangle]
pub unsafe extern "C" fn profcc_on_alloc(
    p: *mut libc::c_void,
    n: usize,
    kind: u32,
    fp: *mut libc::c_void,
) -> u32 {
    #[cfg(not(test))] // the unit-test binary is interposed too; it must not write profiles
    crate::ensure_init();
    let mean = SAMPLE_MEAN.load(Ordering::Relaxed);
    let (w, sampled) = if mean == 0 {
        (1, 0)
    } else {
        if !stats::count_call(n as u64, mean) {
            if START_WORDS.load(Ordering::Relaxed) != 0 {
                record_identity(p as u64, n as u64, kind, fp);
            }
            return NO_SITE;
        }
        let w = if exact_counts() {
            if let Some(ss) = sites() {
                stats::move_all_counts(ss); // (the peaks: stats.rs, "Counts of unpicked blocks")
            }
            1
        } else {
            stats::weight(n as u64, mean, p as u64)
        };
        (w, SAMPLED)
    };
    let tid = threads::current_id();
    let Some(site) = site_for(kind, fp) else {
        return NO_SITE;
    };
    let born = account_alloc(site, tid, n as u64, w, sampled == 0);
    let o = Obj {
        addr: p as u64,
        size: n as u64,
        site,
        tid: tid | sampled,
        born,
    };
    if sampled != 0 {
        filter_add(o.addr);
    }
    insert_object(o);
    crate::analysis::object_allocated(|| info(&o));
    site
}

/// What `profcc_on_alloc` returns for an allocation it did not record (`NO_SITE` in
/// interpose.c).
pub const NO_SITE: u32 = u32::MAX;

/// Add `cycles` of allocator time to `site`'s counters (the allocator analysis's "who pays").
pub fn add_site_cycles(site: u32, cycles: u64) {
    if let Some(ss) = sites() {
        stats::cycles(ss, site, cycles);
    }
}

/// Remove `p` from the object map (before the real free); 1 when it was there.
#[no_mangle]
pub unsafe extern "C" fn profcc_take(p: *mut libc::c_void, out: *mut Obj) -> i32 {
    if SAMPLE_MEAN.load(Ordering::Relaxed) != 0 {
        stats::count_free();
        // While sampling runs every recorded object is in the filter (after it stopped, the
        // exact ones are not: the map is asked).
        if filter_slot(p as u64).is_some_and(|c| c.load(Ordering::Relaxed) == 0) {
            start_freed(p as u64);
            return 0; // no recorded object starts in this bucket
        }
    }
    match OBJECTS.remove(p as u64) {
        Some(o) => {
            if o.tid & FILTERED != 0 {
                filter_remove(o.addr);
            }
            *out = o;
            1
        }
        None => {
            start_freed(p as u64);
            0
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn profcc_account_free(o: *const Obj) {
    let o = &*o;
    if o.tid & IDENT != 0 {
        crate::analysis::unseen_object_freed(|| info(o));
        account_release(o, o.size, true, true); // counted when sampling counts every block
        return;
    }
    crate::analysis::object_freed(|| info(o));
    account_release(o, o.size, true, true);
}

/// A failed realloc: the old block is still the program's.
#[no_mangle]
pub unsafe extern "C" fn profcc_put_back(o: *const Obj) {
    if (*o).tid & FILTERED != 0 {
        filter_add((*o).addr);
    }
    OBJECTS.insert(*o);
}

fn round_page(n: u64) -> u64 {
    (n + PAGE - 1) & !(PAGE - 1)
}

/// A piece of an mmap'ed region. A region that a partial `munmap` cuts in two keeps one
/// piece as the object; the other is a fragment: it holds bytes but is no object of its own
/// (so every mapping counts one allocation and at most one free).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub obj: Obj,
    pub fragment: bool,
}

/// Remove `[a, a+len)` from the mmap registry, splitting regions it cuts; with `free`, the
/// bytes removed leave the live counts, and a non-fragment piece that disappears counts as a
/// free. Returns the parts removed.
fn unmap_range(m: &mut BTreeMap<u64, Region>, a: u64, len: u64, free: bool) -> Vec<Obj> {
    let end = a.saturating_add(round_page(len));
    let mut hit = Vec::new();
    for (_, r) in m.range(..end).rev() {
        if r.obj.addr + r.obj.size <= a {
            break;
        }
        hit.push(*r);
    }
    let mut removed = Vec::new();
    for r in hit {
        let o = r.obj;
        m.remove(&o.addr);
        let left = a.saturating_sub(o.addr).min(o.size);
        let right = (o.addr + o.size).saturating_sub(end).min(o.size - left);
        let gone = o.size - left - right;
        if left > 0 {
            m.insert(
                o.addr,
                Region {
                    obj: Obj { size: left, ..o },
                    fragment: r.fragment,
                },
            );
        }
        if right > 0 {
            // With a left piece kept, the right one is a fragment.
            m.insert(
                end,
                Region {
                    obj: Obj {
                        addr: end,
                        size: right,
                        ..o
                    },
                    fragment: r.fragment || left > 0,
                },
            );
        }
        if free {
            account_release(&o, gone, left == 0 && right == 0 && !r.fragment, true);
        }
        removed.push(Obj {
            addr: o.addr.max(a),
            size: gone,
            ..o
        });
    }
    removed
}

#[no_mangle]
pub unsafe extern "C" fn profcc_on_mmap(p: *mut libc::c_void, n: usize, fp: *mut libc::c_void) {
    #[cfg(not(test))] // the unit-test binary is interposed too; it must not write profiles
    crate::ensure_init();
    let tid = threads::current_id();
    let Some(site) = site_for(KIND_MMAP, fp) else {
        return;
    };
    let size = round_page(n as u64);
    let born = account_alloc(site, tid, size, 1, true);
    let obj = Obj {
        addr: p as u64,
        size,
        site,
        tid,
        born,
    };
    let mut m = MMAPS.lock();
    let replaced = unmap_range(&mut m, p as u64, size, true); // MAP_FIXED over an old region
    m.insert(
        p as u64,
        Region {
            obj,
            fragment: false,
        },
    );
    drop(m);
    tell_analyses(&replaced, Some(&obj));
}

/// Mapped regions to the analyses (after the map's lock is released): `gone` pieces freed,
/// then `new` allocated.
fn tell_analyses(gone: &[Obj], new: Option<&Obj>) {
    for o in gone {
        crate::analysis::object_freed(|| info(o));
    }
    if let Some(o) = new {
        crate::analysis::object_allocated(|| info(o));
    }
}

#[no_mangle]
pub unsafe extern "C" fn profcc_on_munmap(p: *mut libc::c_void, n: usize) {
    let mut m = MMAPS.lock();
    if !m.is_empty() {
        let gone = unmap_range(&mut m, p as u64, n as u64, true);
        drop(m);
        tell_analyses(&gone, None);
    }
}

#[no_mangle]
pub unsafe extern "C" fn profcc_on_mremap(
    old: *mut libc::c_void,
    old_n: usize,
    p: *mut libc::c_void,
    n: usize,
) {
    let mut m = MMAPS.lock();
    let gone = unmap_range(&mut m, old as u64, old_n as u64, false);
    let Some(first) = gone.first().copied() else {
        return;
    };
    let removed: u64 = gone.iter().map(|o| o.size).sum();
    let size = round_page(n as u64);
    let replaced = unmap_range(&mut m, p as u64, size, true);
    let obj = Obj {
        addr: p as u64,
        size,
        ..first
    };
    m.insert(
        p as u64,
        Region {
            obj,
            fragment: false,
        },
    );
    drop(m);
    // The analyses see a move as the old pieces freed and the new region allocated.
    tell_analyses(&[&gone[..], &replaced[..]].concat(), Some(&obj));
    if let Some(ss) = sites() {
        stats::resize(ss, first.site, size.wrapping_sub(removed) as i64, size);
    }
}

// ---------------------------------------------------------------------------------------------
// Queries.

fn info(o: &Obj) -> ObjectInfo {
    let (stack, kind) = sites()
        .map(|s| {
            let site = s.site(o.site);
            (
                site.stack.load(Ordering::Relaxed),
                site.kind.load(Ordering::Relaxed),
            )
        })
        .unwrap_or((0, 0));
    ObjectInfo {
        start: o.addr,
        size: o.size,
        stack,
        tid: if o.tid & IDENT != 0 {
            crate::analysis::UNKNOWN_TID
        } else {
            o.tid & !SAMPLED
        },
        kind,
        site: o.site,
    }
}

/// The live object containing `addr` (start or interior address), from any thread, on a cold
/// path: a handful of shard locks for small objects, up to three probes per populated size
/// class for larger ones, one lock for mmap regions.
pub fn lookup(addr: u64) -> Option<ObjectInfo> {
    let _g = threads::RtGuard::enter();
    if let Some(o) = OBJECTS.containing(addr) {
        return Some(info(&o));
    }
    {
        let m = MMAPS.lock();
        if let Some((_, r)) = m.range(..=addr).next_back() {
            if addr < r.obj.addr + r.obj.size {
                return Some(info(&r.obj));
            }
        }
    }
    start_block_containing(addr)
}

/// Every live heap object and mmap region that `keep(start, size)` selects, given to `f`
/// after the locks are released (a cold path: the dump).
pub fn each_live(keep: impl Fn(u64, u64) -> bool, mut f: impl FnMut(ObjectInfo)) {
    let _g = threads::RtGuard::enter();
    let mut objs = Vec::new();
    OBJECTS.for_each(|o| {
        if keep(o.addr, o.size) {
            objs.push(*o);
        }
    });
    for r in MMAPS.lock().values() {
        if keep(r.obj.addr, r.obj.size) {
            objs.push(r.obj);
        }
    }
    for o in &objs {
        f(info(o));
    }
}

/// C view of [`lookup`] for tests and debugging: fills `out` with start, size, stack id,
/// thread id and kind (index into `KIND_NAMES`); returns 1 when `addr` is inside a live object.
#[no_mangle]
pub unsafe extern "C" fn __profcc_object_at(addr: *const libc::c_void, out: *mut u64) -> i32 {
    match lookup(addr as u64) {
        Some(i) => {
            if !out.is_null() {
                for (k, v) in [i.start, i.size, i.stack as u64, i.tid as u64, i.kind as u64]
                    .into_iter()
                    .enumerate()
                {
                    *out.add(k) = v;
                }
            }
            1
        }
        None => 0,
    }
}

/// The process's allocation totals now and the bytes live now (region snapshots, while the
/// program runs).
pub fn heap_now() -> profcc_schema::regions::HeapNow {
    let _g = threads::RtGuard::enter();
    let tp = stats::pending_totals();
    let live = (TOTALS.live.load(Ordering::Relaxed) as i64).wrapping_add(tp.live_bytes);
    stats::seen_live(live);
    profcc_schema::regions::HeapNow {
        allocations: TOTALS.allocations.load(Ordering::Relaxed) + tp.count,
        frees: TOTALS.frees.load(Ordering::Relaxed) + tp.frees,
        bytes_allocated: TOTALS.bytes.load(Ordering::Relaxed) + tp.bytes,
        live_bytes: live.max(0) as u64,
    }
}

/// Every allocation site's stack id and cumulative counts now, by site index (region
/// snapshots, while the program runs; `stats::sites_now`).
pub fn sites_now() -> Vec<(u32, stats::SiteCounts)> {
    let _g = threads::RtGuard::enter();
    let p = SITES.load(Ordering::Acquire);
    if p.is_null() {
        return Vec::new();
    }
    let ss = unsafe { &*p };
    let n = (ss.next.load(Ordering::Acquire) as usize).min(MAX_SITES);
    let mut counts = vec![stats::SiteCounts::default(); n];
    stats::sites_now(ss, &mut counts);
    counts
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let s = ss.site(i as u32);
            // A slot still being claimed, or one that lost a race: no stack yet.
            let stack = if s.state.load(Ordering::Acquire) == 1 {
                s.stack.load(Ordering::Relaxed)
            } else {
                u32::MAX
            };
            (stack, c)
        })
        .collect()
}

pub fn snapshot() -> (Vec<profcc_schema::AllocSite>, AllocTotals) {
    let _g = threads::RtGuard::enter();
    // Shared counters plus every thread's unflushed deltas (`stats`).
    let (pending, tp) = stats::pending();
    let live = (TOTALS.live.load(Ordering::Relaxed) as i64).wrapping_add(tp.live_bytes);
    let totals = AllocTotals {
        allocations: TOTALS.allocations.load(Ordering::Relaxed) + tp.count,
        frees: TOTALS.frees.load(Ordering::Relaxed) + tp.frees,
        bytes_allocated: TOTALS.bytes.load(Ordering::Relaxed) + tp.bytes,
        live_bytes_peak: TOTALS.peak.load(Ordering::Relaxed).max(live.max(0) as u64),
    };
    let p = SITES.load(Ordering::Acquire);
    if p.is_null() {
        return (Vec::new(), totals);
    }
    let ss = unsafe { &*p };
    let n = (ss.next.load(Ordering::Acquire) as usize).min(MAX_SITES) as u32;
    let mut out = Vec::new();
    for i in 0..n {
        let s = ss.site(i);
        let d = pending.get(&i).copied().unwrap_or_default();
        let count = s.count.load(Ordering::Relaxed) + d.count;
        let frees = s.frees.load(Ordering::Relaxed) + d.frees;
        // (A fork child lists the sites it freed inherited objects of, even if it allocated
        // nothing there: see `after_fork_child`.)
        if s.state.load(Ordering::Acquire) != 1 || (count == 0 && frees == 0) {
            continue;
        }
        let live = (s.live_bytes.load(Ordering::Relaxed) as i64).wrapping_add(d.live_bytes);
        let live_objects =
            (s.live_objects.load(Ordering::Relaxed) as i64).wrapping_add(d.live_objects);
        let kind = s.kind.load(Ordering::Relaxed) as usize;
        let threads = s
            .tbits
            .iter()
            .map(|b| b.load(Ordering::Relaxed).count_ones())
            .sum::<u32>()
            + s.extra_threads.load(Ordering::Relaxed);
        out.push(profcc_schema::AllocSite {
            stack: s.stack.load(Ordering::Relaxed),
            kind: KIND_NAMES.get(kind).unwrap_or(&"malloc").to_string(),
            count,
            bytes: s.bytes.load(Ordering::Relaxed) + d.bytes,
            frees,
            max_size: s.max_size.load(Ordering::Relaxed).max(d.max_size),
            live_bytes_peak: s.live_peak.load(Ordering::Relaxed).max(live.max(0) as u64),
            live_bytes_at_exit: live.max(0) as u64,
            live_objects_at_exit: live_objects.max(0) as u64,
            threads,
            cycles: s.cycles.load(Ordering::Relaxed) + d.cycles,
            lifetime: lifetime_of(s.life.read(), d.life),
        });
    }
    out.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.stack.cmp(&b.stack)));
    (out, totals)
}

/// A site's lifetimes (shared sums plus the threads' deltas) as the profile writes them:
/// None when none of its frees was seen.
fn lifetime_of(mut shared: stats::LifeSums, d: stats::LifeSums) -> Option<profcc_schema::Lifetime> {
    shared.merge(&d);
    let l = shared;
    if l.measured == 0 && l.unmeasured == 0 {
        return None;
    }
    let last = l.hist.iter().rposition(|&h| h != 0).map_or(0, |i| i + 1);
    Some(profcc_schema::Lifetime {
        freed: l.measured,
        sum: l.sum,
        min: if l.measured == 0 { 0 } else { l.min },
        max: l.max,
        temporary: l.temporary,
        unmeasured: l.unmeasured,
        histogram: l.hist[..last].to_vec(),
    })
}

/// After `fork`, in the child (locks released): the child's profile reports what happens in
/// the child, like its access counts (`counts::after_fork_child`), so a report merging the
/// parent's and the child's profiles counts every allocation once. The statistics restart
/// from zero; the objects inherited from the parent stay in the object map (they are live
/// in the child too), so the child's frees of them are recognised and counted as the
/// child's frees. Live bytes stay what is live; peaks restart from there.
pub(crate) fn after_fork_child() {
    stats::after_fork_child(sites());
    let z = |a: &AtomicU64| a.store(0, Ordering::Relaxed);
    z(&TOTALS.allocations);
    z(&TOTALS.frees);
    z(&TOTALS.bytes);
    TOTALS
        .peak
        .store(TOTALS.live.load(Ordering::Relaxed), Ordering::Relaxed);
    THREAD_SET.lock().clear();
    let p = SITES.load(Ordering::Acquire);
    if p.is_null() {
        return;
    }
    let ss = unsafe { &*p };
    let n = (ss.next.load(Ordering::Acquire) as usize).min(MAX_SITES) as u32;
    for i in 0..n {
        let s = ss.site(i);
        z(&s.count);
        z(&s.bytes);
        z(&s.frees);
        z(&s.max_size);
        z(&s.cycles);
        s.life.zero();
        s.extra_threads.store(0, Ordering::Relaxed);
        for b in &s.tbits {
            z(b);
        }
        s.live_peak
            .store(s.live_bytes.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}

/// Number of live objects in the object map (not counting mmap regions).
pub fn live_objects() -> usize {
    OBJECTS.len()
}

#[derive(Default, Debug, Clone)]
pub struct AllocTotals {
    pub allocations: u64,
    pub frees: u64,
    pub bytes_allocated: u64,
    pub live_bytes_peak: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The granule table interpose.c indexes is the one this file maps, and its reuse part
    /// starts where this file's does, after the filter's bytes.
    #[test]
    fn interpose_cs_granule_table_is_this_one() {
        let c = include_str!("../csrc/interpose.c");
        assert!(c.contains(&format!("#define GRANULE_BITS {GRANULE_BITS}\n")));
        assert!(c.contains(&format!(
            "#define REUSE_AT ({}u << GRANULE_BITS)\n",
            REUSE_AT >> GRANULE_BITS
        )));
    }

    /// The structs of alloc/c_structs.rs as C lays them out are Rust's: the generated header
    /// asserts each field's offset and each size as rt/build.rs computed them (a C compile of
    /// interpose.c fails otherwise); here those figures are the runtime's own (`Obj`,
    /// stats.rs's `SampleHead` with its atomics), and interpose.c takes the structs from the
    /// header.
    #[test]
    fn alloc_layout_is_the_c_headers() {
        let h = include_str!(concat!(env!("OUT_DIR"), "/profcc_alloc.h"));
        for (name, offsets) in C_OFFSETS {
            let prefix = format!("_Static_assert(offsetof(struct {name}, ");
            let asserted: Vec<(&str, usize)> = h
                .lines()
                .filter_map(|l| l.strip_prefix(prefix.as_str()))
                .map(|l| {
                    let (field, rest) = l.split_once(')').unwrap();
                    let n = rest.trim_start_matches(" == ").split(',').next().unwrap();
                    (field, n.parse().unwrap())
                })
                .collect();
            assert_eq!(&asserted, offsets, "struct {name}");
        }
        let sizes = [
            ("profcc_obj", core::mem::size_of::<Obj>()),
            ("sample_head", core::mem::size_of::<stats::SampleHead>()),
            ("count_entry", core::mem::size_of::<stats::CountEntry>()),
        ];
        assert_eq!(C_OFFSETS.len(), sizes.len());
        for (name, size) in sizes {
            let line = format!("_Static_assert(sizeof(struct {name}) == {size},");
            assert!(h.contains(&line), "{line}\n{h}");
        }
        let c = include_str!("../csrc/interpose.c");
        assert!(c.contains("#include \"profcc_alloc.h\""));
        for (name, _) in C_OFFSETS {
            assert!(
                !c.contains(&format!("struct {name} {{")),
                "a copy of struct {name} in interpose.c"
            );
        }
    }

    fn o(addr: u64, size: u64) -> Obj {
        Obj {
            addr,
            size,
            site: 3,
            tid: 1,
            born: 0,
        }
    }

    #[test]
    fn table_insert_remove_get() {
        let mut t = Table::new();
        for i in 1..5000u64 {
            assert_eq!(t.insert(o(i * 16, i)).unwrap(), None);
        }
        assert_eq!(t.len(), 4999);
        for i in (1..5000u64).step_by(3) {
            assert_eq!(t.remove(i * 16).unwrap().size, i);
        }
        for i in 1..5000u64 {
            let want = if (i - 1) % 3 == 0 { None } else { Some(i) };
            assert_eq!(t.get(i * 16).map(|e| e.size), want, "key {i}");
        }
        assert_eq!(t.insert(o(32, 99)).unwrap(), Some(o(32, 2)));
        assert_eq!(t.remove(16), None);
    }

    #[test]
    fn map_containment() {
        let m = ObjectMap::new();
        m.insert(o(0x10000, 24));
        m.insert(o(0x10020, 200));
        m.insert(o(0x20000, 5000));
        m.insert(o(0x40000, 1 << 20));
        m.insert(o(0x200010, 0));
        assert_eq!(m.containing(0x10000).unwrap().addr, 0x10000);
        assert_eq!(m.containing(0x10017).unwrap().addr, 0x10000);
        assert_eq!(m.containing(0x10018), None);
        assert_eq!(m.containing(0x100e7).unwrap().addr, 0x10020);
        assert_eq!(m.containing(0x100e8), None);
        assert_eq!(m.containing(0x20000 + 4999).unwrap().addr, 0x20000);
        assert_eq!(m.containing(0x20000 + 5000), None);
        assert_eq!(m.containing(0x40000 + (1 << 20) - 1).unwrap().addr, 0x40000);
        assert_eq!(m.containing(0x40000 + 12345).unwrap().size, 1 << 20);
        assert_eq!(m.containing(0x200010).unwrap().addr, 0x200010);
        assert_eq!(m.containing(0x200011), None);
        assert_eq!(m.remove(0x40000).unwrap().size, 1 << 20);
        assert_eq!(m.containing(0x40000 + 12345), None);
        assert_eq!(m.len(), 4);
    }

    /// Containment entries of all the map's tables.
    fn big_len(m: &ObjectMap) -> usize {
        m.shards.iter().map(|s| s.0.lock().big.len()).sum()
    }

    #[test]
    fn containment_entries_follow_their_objects_across_shards() {
        let m = ObjectMap::new();
        // Objects over SMALL_MAX not 256-byte aligned keep their containment entry in another
        // shard than their start (the block's first byte decides); small neighbours of one
        // line spread over shards.
        let (a, b) = (0x7f00_0012_3450u64, 0x7f00_0123_4560u64);
        assert!(big_entry(&o(a, 3 << 20)).is_some_and(|(s, _)| s != shard_of(a)));
        assert_ne!(shard_of(0x5000_0010), shard_of(0x5000_0020));
        m.insert(o(a, 3 << 20));
        m.insert(o(b, 5000));
        m.insert(o(0x5000_0010, 16));
        m.insert(o(0x5000_0020, 16));
        assert_eq!(big_len(&m), 2);
        assert_eq!(m.containing(a + (3 << 20) - 1).map(|x| x.addr), Some(a));
        assert_eq!(m.containing(a + (3 << 20)), None);
        assert_eq!(m.containing(b + 4999).map(|x| x.addr), Some(b));
        assert_eq!(m.containing(0x5000_001f).map(|x| x.addr), Some(0x5000_0010));
        // A stale entry replaced at the same start: its containment entry goes with it.
        assert_eq!(m.insert(o(a, 300)).map(|x| x.size), Some(3 << 20));
        assert_eq!(big_len(&m), 2);
        assert_eq!(m.containing(a + 1000), None);
        assert_eq!(m.containing(a + 299).map(|x| x.size), Some(300));
        assert_eq!(m.remove(a).map(|x| x.size), Some(300));
        assert_eq!(m.remove(b).map(|x| x.size), Some(5000));
        assert_eq!((big_len(&m), m.len()), (0, 2));
    }

    #[test]
    fn big_index_every_offset() {
        let m = ObjectMap::new();
        // Adjacent objects of assorted sizes: every byte maps to its own object.
        let sizes = [257u64, 300, 511, 512, 513, 1000, 4096, 4097, 70000];
        let mut a = 0x1000_0000u64;
        let mut objs = Vec::new();
        for &s in &sizes {
            m.insert(o(a, s));
            objs.push((a, s));
            a += s;
        }
        for &(start, s) in &objs {
            for off in (0..s).step_by(7).chain([s - 1]) {
                assert_eq!(
                    m.containing(start + off).map(|x| x.addr),
                    Some(start),
                    "{start:#x}+{off}"
                );
            }
        }
        assert_eq!(m.containing(a), None);
    }

    #[test]
    fn mmap_ranges_split() {
        let mut m = BTreeMap::new();
        m.insert(
            0x10000,
            Region {
                obj: o(0x10000, 0x4000),
                fragment: false,
            },
        );
        let gone = unmap_range(&mut m, 0x11000, 0x1000, false);
        assert_eq!(
            gone,
            vec![Obj {
                addr: 0x11000,
                size: 0x1000,
                site: 3,
                tid: 1,
                born: 0,
            }]
        );
        assert_eq!(m.len(), 2);
        assert_eq!(
            (m[&0x10000].obj.size, m[&0x10000].fragment),
            (0x1000, false)
        );
        assert_eq!((m[&0x12000].obj.size, m[&0x12000].fragment), (0x2000, true));
        // The object piece going counts the free; the fragment stays, holding bytes only.
        let gone = unmap_range(&mut m, 0x10000, 0x800, false);
        assert_eq!(gone[0].size, 0x1000, "page granular");
        assert_eq!(m.len(), 1);
        unmap_range(&mut m, 0, 0x100000, false);
        assert!(m.is_empty());
    }
}
