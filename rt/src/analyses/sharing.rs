//! Cache-line sharing analysis: the line shadow, the cold door the inlined hooks call, the
//! tracked-line table, and the profile's `sharing` section.
//!
//! # Address map (x86-64, 47-bit user space)
//!
//! ```text
//! [0x0000_0000_0000, 0x1000_0000_0000)  application (low: non-PIE executables, brk heap)
//! [0x1000_0000_0000, 0x2000_0000_0000)  LINE SHADOW, 16 TiB, MAP_NORESERVE: 8 bytes per 64-byte line
//!                                       shadow(a) = 0x1000_0000_0000 + (a >> 6) * 8
//! [0x2000_0000_0000, 0x2020_0000_0000)  page shadow, 128 GiB (reserved for the NUMA analysis:
//!                                       4 bytes per 4 KiB page; not mapped yet)
//! [0x2020_0000_0000, 0x8000_0000_0000)  application (PIE executables, mmap, stacks)
//! ```
//! Invariants (tested below): shadow(a) lies in the line-shadow range for every user address;
//! the shadow of the shadow range is never read (the runtime's own memory is not instrumented);
//! the reservation uses `MAP_FIXED_NOREPLACE`, so it never clobbers a mapping.
//!
//! # The line's shadow word
//!
//! ```text
//! cold:  bit 63 = 0 | bit 62 retired | bits 48-61 field | bits 16-47 reader mask | bits 0-15 owner
//! hot:   bit 63 = 1 | bits 0-62 index of the line's record in the tracked-line table
//! ```
//! - owner: id+1 of the line's last writer (0: never written). Thread ids beyond 65534 wrap.
//! - reader mask: bit 16 + (id+1) % 32 for each thread that accessed the line since its last
//!   write; the writer's own bit is set by its write. With more than 32 threads, threads that
//!   share a bit hide each other's reads of cold lines (tracked lines are exact).
//! - field, cold line: invalidations (bits 48-55) and write-volume samples (56-61) so far;
//!   retired line (tracked once, let go): its table index (0x3fff: table was full).
//!
//! The inlined hooks (passes/hooks/fastpath.c) leave at once when a write finds the word
//! equal to the thread's owner word (it wrote last and nobody read since; counters masked
//! out) and when a read finds its reader bit set on a cold line. Everything else comes here:
//! ownership changes (Cheetah's rule: a write after another thread's access is one
//! invalidation), first reads, every access to a hot line, and one write in `fs_watch` per
//! site and thread as a write-volume sample (for latent false sharing, after Predator).
//!
//! Tracked (hot) lines keep Cheetah's two-entry table (thread, read/write) for exact
//! invalidations and per-byte reader/writer sets and counts (one access in `fs_sample`).
//! A line becomes hot after `fs_threshold` invalidations (contended), or after
//! `fs_watch_samples` volume samples while a neighbouring line has another owner (watched,
//! for latent sharing); a watched line that stays uncontended for `fs_budget` accesses is
//! retired: cold again, its record kept.
//!
//! Nothing is counted while only one thread exists (initialisation before `pthread_create`
//! and the serial tail after the last join are not sharing).

use crate::analysis::{Analysis, DumpContext, ObjectEvents, SummarySection, ThreadStart};
use crate::threads;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use profcc_schema::sharing as schema;

pub const LINE_SHADOW: u64 = 0x1000_0000_0000;
pub const LINE_SHADOW_SIZE: u64 = 1 << 44;
pub const PAGE_SHADOW: u64 = 0x2000_0000_0000;
pub const APP_LIMIT: u64 = 1 << 47;

const HOT: u64 = 1 << 63;
const RETIRED: u64 = 1 << 62;
const OWNER: u64 = 0xffff;
const READERS: u64 = 0xffff_ffff << 16;
const FIELD_SHIFT: u32 = 48;
const FIELD: u64 = 0x3fff;
const NO_RECORD: u64 = 0x3fff;
const INFO_WRITE: u64 = 1 << 8;
const INFO_SAMPLED: u64 = 1 << 9;
/// The unchecked reads and writes of the same bytes in the same basic block that the access
/// stands for (6 bits each; e.g. the load of a load/add/store, or an unrolled loop's copies).
const INFO_EXTRA_READS_SHIFT: u32 = 12;
const INFO_EXTRA_WRITES_SHIFT: u32 = 18;

#[inline]
pub fn shadow_of(addr: u64) -> u64 {
    LINE_SHADOW + ((addr >> 6) << 3)
}

#[inline]
fn word(addr: u64) -> &'static AtomicU64 {
    unsafe { &*(shadow_of(addr) as *const AtomicU64) }
}

extern "C" {
    fn profcc_sharing_tls(
        me: *mut *mut u64,
        rb: *mut *mut u64,
        wmask: *mut *mut u64,
        countdown: *mut *mut u64,
    );
    fn profcc_counts_slot() -> *mut *mut u64;
}

struct ThreadVars {
    me: *mut u64,
    rb: *mut u64,
    wmask: *mut u64,
    countdown: *mut u64,
}

#[inline]
fn tvars() -> ThreadVars {
    let mut v = ThreadVars {
        me: core::ptr::null_mut(),
        rb: core::ptr::null_mut(),
        wmask: core::ptr::null_mut(),
        countdown: core::ptr::null_mut(),
    };
    unsafe { profcc_sharing_tls(&mut v.me, &mut v.rb, &mut v.wmask, &mut v.countdown) };
    v
}

// ---- settings (from PROFCC_OPTIONS, fixed at initialisation) ----

static THRESHOLD: AtomicU32 = AtomicU32::new(16);
static SAMPLE: AtomicU32 = AtomicU32::new(1);
static WATCH: AtomicU32 = AtomicU32::new(256);
static WATCH_SAMPLES: AtomicU32 = AtomicU32::new(2);
static BUDGET: AtomicU32 = AtomicU32::new(4096);
static MAX_LINES: AtomicU32 = AtomicU32::new(8192);
static INV_NS: AtomicU32 = AtomicU32::new(60);

/// 0: not reserved yet, 1: reserved, 2: reservation failed.
static SHADOW: AtomicU32 = AtomicU32::new(0);
static SHADOW_ERRNO: AtomicU32 = AtomicU32::new(0);

/// Threads alive that the runtime knows of, and the time spent with more than one.
static LIVE: AtomicU32 = AtomicU32::new(1);
static PARALLEL_SINCE: AtomicU64 = AtomicU64::new(0);
static PARALLEL_NS: AtomicU64 = AtomicU64::new(0);

/// From `.preinit_array` (rt/csrc/tls.c), before any constructor: reserve the line shadow.
#[no_mangle]
pub extern "C" fn profcc_sharing_preinit() {
    reserve();
}

fn reserve() {
    if SHADOW.load(Relaxed) != 0 {
        return;
    }
    const MAP_FIXED_NOREPLACE: i32 = 0x100000;
    let p = unsafe {
        libc::syscall(
            libc::SYS_mmap,
            LINE_SHADOW as usize,
            LINE_SHADOW_SIZE as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | MAP_FIXED_NOREPLACE,
            -1i64,
            0usize,
        )
    };
    if p as u64 == LINE_SHADOW {
        SHADOW.store(1, Relaxed);
    } else {
        if p > 0 {
            // An old kernel without MAP_FIXED_NOREPLACE placed it elsewhere: give it back.
            unsafe { libc::syscall(libc::SYS_munmap, p as usize, LINE_SHADOW_SIZE as usize) };
        }
        SHADOW_ERRNO.store((-p).max(0) as u32, Relaxed);
        SHADOW.store(2, Relaxed);
    }
}

/// A module registers: if it reads the shadow and the shadow could not be reserved, the
/// program cannot run instrumented; say why and how to fix it, and stop.
pub fn check_module(flags: u32) {
    if flags & 1 == 0 {
        return;
    }
    reserve();
    if SHADOW.load(Relaxed) == 2 {
        crate::writer::stderr_line(&format!(
            "profcc: cannot reserve 16 TiB of address space at {LINE_SHADOW:#x} for the cache-line shadow (errno {}); lift `ulimit -v`, use vm.overcommit_memory=0 or 1, or rebuild with PROFCC_INSTRUMENT=accesses",
            SHADOW_ERRNO.load(Relaxed)
        ));
        unsafe { libc::_exit(1) };
    }
}

/// From `ensure_init`: read the settings.
pub fn init() {
    use crate::options::get_uint;
    let clamp = |v: u64, lo: u64, hi: u64| v.clamp(lo, hi) as u32;
    THRESHOLD.store(clamp(get_uint("fs_threshold"), 1, 255), Relaxed);
    SAMPLE.store(clamp(get_uint("fs_sample"), 1, 1 << 20), Relaxed);
    let watch = get_uint("fs_watch");
    WATCH.store(
        if watch == 0 {
            0
        } else {
            clamp(watch.next_power_of_two(), 1, 1 << 30)
        },
        Relaxed,
    );
    WATCH_SAMPLES.store(clamp(get_uint("fs_watch_samples"), 1, 63), Relaxed);
    BUDGET.store(clamp(get_uint("fs_budget"), 1, u32::MAX as u64), Relaxed);
    MAX_LINES.store(clamp(get_uint("fs_max_lines"), 0, NO_RECORD - 1), Relaxed);
    INV_NS.store(clamp(get_uint("fs_inv_ns"), 1, 100_000), Relaxed);
    reserve();
    // The tracked-line table: address space now (no lock on the cold path, which may run in a
    // signal handler), memory only for the records used.
    let len = MAX_LINES.load(Relaxed) as usize * core::mem::size_of::<Record>();
    let p = crate::mem::map(len.max(4096), true);
    if !p.is_null() {
        TABLE.store(p as u64, Relaxed);
    }
}

/// The calling thread got its dense id (main thread at initialisation, others in their start
/// trampoline): set its owner word, reader bit and sample mask; record its stack.
pub fn thread_started(id: u32, stack_lo: usize, stack_hi: usize, is_main: bool) {
    let t = (id as u64 % 0xffff) + 1;
    let rb = 1u64 << (16 + t % 32);
    let v = tvars();
    let w = WATCH.load(Relaxed) as u64;
    unsafe {
        *v.me = t | rb;
        *v.rb = rb;
        *v.wmask = if w == 0 { u64::MAX } else { w - 1 };
        *v.countdown = next_period();
    }
    let _ = (stack_lo, stack_hi); // in the per-thread state (`Sharing::thread_start`)
    if !is_main && LIVE.fetch_add(1, Relaxed) == 1 {
        PARALLEL_SINCE.store(crate::writer::now_ns(), Relaxed);
    }
}

/// The calling thread's start routine returned.
pub fn thread_exiting() {
    let v = tvars();
    unsafe {
        *v.me = 0;
        *v.rb = 0;
        *v.wmask = u64::MAX;
    }
    if LIVE.fetch_sub(1, Relaxed) == 2 {
        let since = PARALLEL_SINCE.swap(0, Relaxed);
        if since != 0 {
            PARALLEL_NS.fetch_add(crate::writer::now_ns().saturating_sub(since), Relaxed);
        }
    }
}

/// After fork, in the child: one thread. (The analysis has no lock of its own: the
/// tracked-line table and the settings are atomics.)
pub fn after_fork_child() {
    LIVE.store(1, Relaxed);
    PARALLEL_SINCE.store(0, Relaxed);
}

/// Per-thread state (the core's per-thread block): the thread's stack, for naming stack
/// objects. (The hooks' per-thread words are the hook ABI's TLS in rt/csrc/tls.c.)
#[repr(C)]
struct ThreadState {
    id: AtomicU32,
    stack_lo: AtomicU64,
    stack_hi: AtomicU64,
}

/// Every started thread's stack: (id, lo, hi).
fn stacks() -> Vec<(u32, u64, u64)> {
    let mut out = Vec::new();
    crate::analysis::each_state(&SHARING, |_, p| {
        let st = unsafe { &*(p as *const ThreadState) };
        let (lo, hi) = (st.stack_lo.load(Relaxed), st.stack_hi.load(Relaxed));
        if hi > lo {
            out.push((st.id.load(Relaxed), lo, hi));
        }
    });
    out
}

/// The sharing analysis in the registry (`analyses/mod.rs`).
pub struct Sharing;
pub static SHARING: Sharing = Sharing;

/// The flags of `options::FLAGS` this analysis reads (at initialisation).
const OPTIONS: &[&str] = &[
    "fs_budget",
    "fs_inv_ns",
    "fs_max_lines",
    "fs_sample",
    "fs_threshold",
    "fs_watch",
    "fs_watch_samples",
];

impl Analysis for Sharing {
    fn name(&self) -> &'static str {
        "sharing"
    }
    fn options(&self) -> &'static [&'static str] {
        OPTIONS
    }
    fn thread_state_bytes(&self) -> usize {
        core::mem::size_of::<ThreadState>()
    }
    fn init(&self) {
        init();
    }
    fn module_registered(&self, flags: u32) {
        check_module(flags);
    }
    fn thread_start(&self, t: &ThreadStart) {
        // The thread's stack, for naming stack objects in the dump.
        if let Some(st) = unsafe { (t.state as *const ThreadState).as_ref() } {
            st.id.store(t.id, Relaxed);
            st.stack_lo.store(t.stack_lo, Relaxed);
            st.stack_hi.store(t.stack_hi, Relaxed);
        }
        thread_started(t.id, t.stack_lo as usize, t.stack_hi as usize, t.is_main);
    }
    fn thread_exit(&self) {
        thread_exiting();
    }
    fn object_events(&self) -> ObjectEvents {
        ObjectEvents {
            alloc: false,
            free: true,
        }
    }
    fn object_free(&self, o: &crate::alloc::ObjectInfo) {
        object_freed(o);
    }
    fn fork_child(&self) {
        after_fork_child();
    }
    fn dump(&self, cx: &DumpContext, p: &mut profcc_schema::Profile) {
        p.sharing = snapshot(cx.site_index);
        if let Some(s) = &p.sharing {
            if s.dropped_lines > 0 {
                p.notes.push(format!(
                    "{} cache lines passed a sharing threshold after the table of tracked lines was full (raise fs_max_lines)",
                    s.dropped_lines
                ));
            }
        }
    }
    fn summary(&self, p: &profcc_schema::Profile, top: usize) -> Option<SummarySection> {
        Some(SummarySection {
            title: "cache-line sharing (top findings):".into(),
            lines: summary_lines(p, top),
        })
    }
}

// ---- tracked lines ----

#[repr(C)]
struct ByteSlot {
    readers: AtomicU64,
    writers: AtomicU64,
    reads: AtomicU32,
    writes: AtomicU32,
    size: AtomicU32,
    /// Reads by a thread that had not written the byte while another thread had.
    cross_reads: AtomicU32,
}

#[repr(C)]
struct SiteSlot {
    /// Global site id + 1 (0: free).
    site: AtomicU32,
    reads: AtomicU64,
    writes: AtomicU64,
}

const SITE_SLOTS: usize = 32;
const OBJ_SLOTS: usize = 4;

/// A heap object seen on the line when it was freed (the object map forgets it then).
#[repr(C)]
struct ObjSlot {
    start: AtomicU64,
    size: AtomicU64,
    stack: AtomicU32,
    tid: AtomicU32,
    kind: AtomicU32,
    _pad: u32,
}

#[repr(C)]
struct Record {
    addr: AtomicU64,
    /// Two-entry history: two u32 entries, each (id+1) << 1 | write; 0 = empty.
    table: AtomicU64,
    invalidations: AtomicU64,
    volume: AtomicU64,
    /// Invalidations since it was retired (re-heats at the threshold).
    since_retired: AtomicU32,
    contended: AtomicU32,
    budget: AtomicU32,
    _pad: u32,
    sites: [SiteSlot; SITE_SLOTS],
    objs: [ObjSlot; OBJ_SLOTS],
    bytes: [ByteSlot; 64],
}

static TABLE: AtomicU64 = AtomicU64::new(0);
static NEXT: AtomicU32 = AtomicU32::new(0);
static DROPPED: AtomicU64 = AtomicU64::new(0);

fn record(i: u64) -> &'static Record {
    unsafe { &*((TABLE.load(Relaxed) as *const Record).add(i as usize)) }
}

/// A new record for `line` (index), or None when the table is full.
#[cold]
fn new_record(line: u64, contended: bool, invalidations: u64) -> Option<u64> {
    let max = MAX_LINES.load(Relaxed);
    if TABLE.load(Relaxed) == 0 {
        return None;
    }
    let i = NEXT.fetch_add(1, Relaxed);
    if i >= max {
        NEXT.store(max, Relaxed);
        DROPPED.fetch_add(1, Relaxed);
        return None;
    }
    let r = record(i as u64);
    r.addr.store(line, Relaxed);
    r.invalidations.store(invalidations, Relaxed);
    r.contended.store(contended as u32, Relaxed);
    Some(i as u64)
}

fn note_object(r: &Record, o: &crate::alloc::ObjectInfo) {
    for s in &r.objs {
        let cur = s.start.load(Relaxed);
        if cur == o.start {
            return;
        }
        if cur == 0 {
            match s.start.compare_exchange(0, o.start, Relaxed, Relaxed) {
                Ok(_) => {
                    s.size.store(o.size, Relaxed);
                    s.stack.store(o.stack, Relaxed);
                    s.tid.store(o.tid, Relaxed);
                    s.kind.store(o.kind, Relaxed);
                    return;
                }
                Err(x) if x == o.start => return,
                Err(_) => {}
            }
        }
    }
}

/// Most lines of a freed block whose records learn the block (larger blocks are named only
/// if still live when the profile is written).
const FREE_SCAN_LINES: u64 = 4096;

/// A heap block is being freed: tracked lines inside it keep its name for the report.
pub fn object_freed(o: &crate::alloc::ObjectInfo) {
    if TABLE.load(Relaxed) == 0 || SHADOW.load(Relaxed) != 1 || o.start >= APP_LIMIT {
        return;
    }
    let first = o.start & !63;
    let end = o
        .start
        .saturating_add(o.size)
        .min(first + FREE_SCAN_LINES * 64)
        .min(APP_LIMIT);
    let n = NEXT.load(Relaxed) as u64;
    let mut line = first;
    while line < end {
        let w = word(line).load(Relaxed);
        let idx = if w & HOT != 0 {
            Some(w & !HOT)
        } else if w & RETIRED != 0 && (w >> FIELD_SHIFT) & FIELD != NO_RECORD {
            Some((w >> FIELD_SHIFT) & FIELD)
        } else {
            None
        };
        if let Some(i) = idx.filter(|&i| i < n) {
            note_object(record(i), o);
        }
        line += 64;
    }
}

/// Length of the next sampling period on hot lines: uniform in [1, 2*fs_sample - 1], mean
/// fs_sample, so that loops whose period divides fs_sample are not always sampled at the
/// same access.
fn next_period() -> u64 {
    let s = SAMPLE.load(Relaxed) as u64;
    if s <= 1 {
        return 1;
    }
    let mut x = unsafe { core::arch::x86_64::_rdtsc() };
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    1 + x % (2 * s - 1)
}

fn multi() -> bool {
    LIVE.load(Relaxed) > 1
}

/// Does a neighbour of `line` belong to another writer? For a tracked neighbour, its
/// history table says who wrote it last (a tracked line by itself is no reason: that would
/// spread watches along an array one thread streams through).
fn neighbour_of_other(line: u64, t: u64) -> bool {
    [line.wrapping_sub(64), line + 64].into_iter().any(|n| {
        if n >= APP_LIMIT {
            return false;
        }
        let w = word(n).load(Relaxed);
        if w & HOT != 0 {
            let tb = record(w & !HOT).table.load(Relaxed);
            return [tb & 0xffff_ffff, tb >> 32]
                .into_iter()
                .any(|e| e & 1 != 0 && e >> 1 != 0 && e >> 1 != t);
        }
        let o = w & OWNER;
        o != 0 && o != t
    })
}

/// Global site id of the access: `slot` is its group's counter in the thread's array, and
/// `info >> 32` the access's distance from the group's first site.
fn site_of(slot: *mut u64, info: u64) -> u32 {
    let base = unsafe { *profcc_counts_slot() } as usize;
    (((slot as usize).wrapping_sub(base) / 16) as u32).wrapping_add((info >> 32) as u32)
}

/// The cold door, after the C part (`__profcc_slow` in rt/csrc/tls.c) let through a hot
/// line's sampled access (`due`) or anything on a cold line; see the module documentation.
#[no_mangle]
#[cold]
pub unsafe extern "C" fn profcc_line_slow(p: *const u8, info: u64, slot: *mut u64, due: i32) {
    let addr = p as u64;
    if addr >= APP_LIMIT || SHADOW.load(Relaxed) != 1 {
        return;
    }
    let v = tvars();
    let me = *v.me;
    if me == 0 {
        return; // a thread the runtime has not seen
    }
    if due != 0 {
        *v.countdown = next_period();
    }
    slow(addr, info, me, slot, due != 0);
}

/// Every line of [p, p+len) through the same checks as the inlined hooks.
#[no_mangle]
#[cold]
pub unsafe extern "C" fn __profcc_range_slow(p: *const u8, len: u64, info: u64, slot: *mut u64) {
    let start = p as u64;
    let end = start.saturating_add(len).min(APP_LIMIT);
    if start >= end || SHADOW.load(Relaxed) != 1 {
        return;
    }
    let v = tvars();
    let me = *v.me;
    if me == 0 {
        return;
    }
    let rb = *v.rb;
    let write = info & INFO_WRITE != 0;
    let mut a = start;
    while a < end {
        let next = (a & !63) + 64;
        let n = next.min(end) - a;
        let w = word(a).load(Relaxed);
        let fast = if write {
            w & (HOT | READERS | OWNER) == me
        } else {
            w & (HOT | rb) == rb
        };
        if !fast {
            slow(a, (info & !0xff) | n.min(255), me, slot, true);
        }
        a = next;
    }
}

/// `due`: a hot line's access is the thread's sampled one (else it came for a volume sample).
#[allow(clippy::too_many_arguments)]
unsafe fn slow(addr: u64, info: u64, me: u64, slot: *mut u64, due: bool) {
    let line = addr & !63;
    let sh = word(line);
    let t = me & OWNER;
    let rb = me & READERS;
    let write = info & INFO_WRITE != 0;
    let sampled = info & INFO_SAMPLED != 0; // set for writes only (rt/csrc/tls.c)
    let multi = multi();
    for _ in 0..8 {
        let w = sh.load(Relaxed);
        if w & HOT != 0 {
            let r = record(w & !HOT);
            if sampled && multi {
                r.volume.fetch_add(1, Relaxed);
            }
            if due {
                hot_access(r, w & !HOT, sh, addr, info, me, slot, multi);
            }
            return;
        }
        if !write {
            // First read of the line by this thread since its last write.
            if sh
                .compare_exchange_weak(w, w | rb, Relaxed, Relaxed)
                .is_ok()
            {
                return;
            }
            continue;
        }
        let owner = w & OWNER;
        // A write after another thread's access: one invalidation (counted while >1 thread).
        let inval = multi && ((owner != 0 && owner != t) || (w & READERS & !rb) != 0);
        let volume = multi && sampled;
        let field = (w >> FIELD_SHIFT) & FIELD;
        let mut new = me;
        let mut heat: Option<u64> = None; // index of the record the line becomes hot with
        if w & RETIRED != 0 {
            if field != NO_RECORD {
                let r = record(field);
                if volume {
                    r.volume.fetch_add(1, Relaxed);
                }
                if inval {
                    r.invalidations.fetch_add(1, Relaxed);
                    if r.since_retired.fetch_add(1, Relaxed) + 1 >= THRESHOLD.load(Relaxed) {
                        heat = Some(field);
                    }
                }
            }
            new |= RETIRED | (field << FIELD_SHIFT);
        } else {
            let inv = (field & 0xff) + inval as u64;
            let vol = ((field >> 8) + volume as u64).min(63);
            new |= (inv.min(255) | (vol << 8)) << FIELD_SHIFT;
            let contended = inv >= THRESHOLD.load(Relaxed) as u64;
            let watch = !contended
                && volume
                && vol >= WATCH_SAMPLES.load(Relaxed) as u64
                && neighbour_of_other(line, t);
            if contended || watch {
                match new_record(line, contended, inv) {
                    Some(i) => {
                        record(i).volume.store(vol, Relaxed);
                        heat = Some(i);
                    }
                    None => new = me | RETIRED | (NO_RECORD << FIELD_SHIFT),
                }
            }
        }
        if let Some(i) = heat {
            let r = record(i);
            if w & RETIRED != 0 {
                r.contended.store(1, Relaxed);
                r.since_retired.store(0, Relaxed);
            }
            r.budget.store(0, Relaxed);
            new = HOT | i;
            if sh.compare_exchange(w, new, Relaxed, Relaxed).is_ok() {
                // The table starts with this write.
                r.table.store((t << 1) | 1, Relaxed);
                record_bytes(r, addr, info, t, slot);
                return;
            }
            continue;
        }
        if sh.compare_exchange_weak(w, new, Relaxed, Relaxed).is_ok() {
            return;
        }
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn hot_access(
    r: &Record,
    idx: u64,
    sh: &AtomicU64,
    addr: u64,
    info: u64,
    me: u64,
    slot: *mut u64,
    multi: bool,
) {
    let t = me & OWNER;
    let write = info & INFO_WRITE != 0;
    if !multi {
        return;
    }
    // Cheetah's two-entry table: a write by a thread when another thread has an entry is
    // one invalidation and leaves the writer alone in the table; a read adds the reader if
    // the table has room. Nothing is stored when nothing changes.
    let mine = (t << 1) | write as u64;
    let mut tb = r.table.load(Relaxed);
    loop {
        let (e0, e1) = (tb & 0xffff_ffff, tb >> 32);
        let (new, inval) = if write {
            let other = (e0 != 0 && e0 >> 1 != t) || (e1 != 0 && e1 >> 1 != t);
            (mine, other)
        } else if e0 >> 1 == t || e1 >> 1 == t {
            (tb, false)
        } else if e0 == 0 {
            (mine, false)
        } else if e1 == 0 {
            (e0 | (mine << 32), false)
        } else {
            (tb, false)
        };
        if new == tb {
            break;
        }
        match r.table.compare_exchange_weak(tb, new, Relaxed, Relaxed) {
            Ok(_) => {
                if inval {
                    // One sampled invalidation stands for fs_sample of them.
                    r.invalidations
                        .fetch_add(SAMPLE.load(Relaxed) as u64, Relaxed);
                }
                break;
            }
            Err(x) => tb = x,
        }
    }
    // Per-byte detail: the hooks already sampled (one access in fs_sample per thread).
    record_bytes(r, addr, info, t, slot);
    // A watched line that stays uncontended is let go after its budget.
    if r.contended.load(Relaxed) == 0 {
        if r.invalidations.load(Relaxed) >= THRESHOLD.load(Relaxed) as u64 {
            r.contended.store(1, Relaxed);
        } else if r.budget.fetch_add(1, Relaxed) + 1 >= BUDGET.load(Relaxed) {
            let w = HOT | idx;
            let cold = me | RETIRED | (idx << FIELD_SHIFT);
            let _ = sh.compare_exchange(w, cold, Relaxed, Relaxed);
        }
    }
}

unsafe fn record_bytes(r: &Record, addr: u64, info: u64, t: u64, slot: *mut u64) {
    let write = info & INFO_WRITE != 0;
    let off = (addr & 63) as usize;
    let size = (info & 0xff).max(1);
    let bit = 1u64 << ((t - 1) % 64);
    let b = &r.bytes[off];
    let extra_reads = ((info >> INFO_EXTRA_READS_SHIFT) & 63) as u32;
    let extra_writes = ((info >> INFO_EXTRA_WRITES_SHIFT) & 63) as u32;
    let set = if write { &b.writers } else { &b.readers };
    if set.load(Relaxed) & bit == 0 {
        set.fetch_or(bit, Relaxed);
    }
    if write && extra_reads != 0 && b.readers.load(Relaxed) & bit == 0 {
        b.readers.fetch_or(bit, Relaxed);
    }
    if write {
        b.writes.fetch_add(1 + extra_writes, Relaxed);
        if extra_reads != 0 {
            b.reads.fetch_add(extra_reads, Relaxed);
        }
    } else {
        b.reads.fetch_add(1 + extra_reads, Relaxed);
        let w = b.writers.load(Relaxed);
        if w != 0 && w & bit == 0 {
            b.cross_reads.fetch_add(1 + extra_reads, Relaxed);
        }
    }
    if (b.size.load(Relaxed) as u64) < size {
        b.size.fetch_max(size as u32, Relaxed);
    }
    let site = site_of(slot, info) + 1;
    for s in &r.sites {
        let cur = s.site.load(Relaxed);
        let mine = cur == site
            || (cur == 0
                && match s.site.compare_exchange(0, site, Relaxed, Relaxed) {
                    Ok(_) => true,
                    Err(x) => x == site,
                });
        if mine {
            if write {
                s.writes.fetch_add(1 + extra_writes as u64, Relaxed);
                if extra_reads != 0 {
                    s.reads.fetch_add(extra_reads as u64, Relaxed);
                }
            } else {
                s.reads.fetch_add(1 + extra_reads as u64, Relaxed);
            }
            return;
        }
    }
}

// ---- the profile section ----

fn ids(mask: u64) -> Vec<u32> {
    (0..64).filter(|b| mask & (1u64 << b) != 0).collect()
}

/// The `sharing` section: settings and every tracked line. `site_index` maps a global site id
/// to its index in the profile's `sites`.
pub fn snapshot(site_index: &dyn Fn(u32) -> Option<u32>) -> Option<schema::Sharing> {
    if SHADOW.load(Relaxed) != 1 {
        return None;
    }
    let _g = threads::RtGuard::enter();
    let settings = schema::Settings {
        threshold: THRESHOLD.load(Relaxed),
        sample: SAMPLE.load(Relaxed),
        watch_interval: WATCH.load(Relaxed),
        watch_samples: WATCH_SAMPLES.load(Relaxed),
        watch_budget: BUDGET.load(Relaxed),
        max_lines: MAX_LINES.load(Relaxed),
        invalidation_ns: INV_NS.load(Relaxed),
    };
    let mut parallel_ns = PARALLEL_NS.load(Relaxed);
    let since = PARALLEL_SINCE.load(Relaxed);
    if since != 0 {
        parallel_ns += crate::writer::now_ns().saturating_sub(since);
    }
    let stacks = stacks();
    let n = if TABLE.load(Relaxed) == 0 {
        0
    } else {
        NEXT.load(Relaxed).min(MAX_LINES.load(Relaxed))
    };
    let mut lines = Vec::new();
    for i in 0..n as u64 {
        let r = record(i);
        let addr = r.addr.load(Relaxed);
        let mut bytes = Vec::new();
        for (off, b) in r.bytes.iter().enumerate() {
            let (reads, writes) = (b.reads.load(Relaxed) as u64, b.writes.load(Relaxed) as u64);
            if reads + writes == 0 {
                continue;
            }
            bytes.push(schema::ByteUse {
                offset: off as u32,
                size: b.size.load(Relaxed),
                reads,
                writes,
                readers: ids(b.readers.load(Relaxed)),
                writers: ids(b.writers.load(Relaxed)),
                cross_reads: b.cross_reads.load(Relaxed) as u64,
            });
        }
        if bytes.is_empty() {
            continue;
        }
        let mut sites: Vec<schema::LineSite> = r
            .sites
            .iter()
            .filter_map(|s| {
                let id = s.site.load(Relaxed);
                if id == 0 {
                    return None;
                }
                Some(schema::LineSite {
                    site: site_index(id - 1)?,
                    reads: s.reads.load(Relaxed),
                    writes: s.writes.load(Relaxed),
                })
            })
            .collect();
        sites.sort_by_key(|s| std::cmp::Reverse(s.reads + s.writes));
        let mut objects: Vec<schema::ObjectRef> = Vec::new();
        for b in &bytes {
            let a = addr + b.offset as u64;
            if objects
                .iter()
                .any(|o| o.start <= a && a < o.start + o.size.max(1))
            {
                continue;
            }
            objects.push(object_at(r, a, addr, &stacks));
        }
        objects.sort_by_key(|o| o.start);
        objects.dedup();
        lines.push(schema::LineRecord {
            addr,
            invalidations: r.invalidations.load(Relaxed),
            contended: r.contended.load(Relaxed) != 0,
            volume_samples: r.volume.load(Relaxed),
            bytes,
            sites,
            objects,
        });
    }
    lines.sort_by_key(|l| l.addr);
    Some(schema::Sharing {
        settings,
        parallel_ns,
        lines,
        dropped_lines: DROPPED.load(Relaxed),
    })
}

fn object_at(r: &Record, a: u64, line: u64, stacks: &[(u32, u64, u64)]) -> schema::ObjectRef {
    let noted = r.objs.iter().find_map(|s| {
        let start = s.start.load(Relaxed);
        let size = s.size.load(Relaxed);
        (start != 0 && start <= a && a < start + size.max(1)).then(|| crate::alloc::ObjectInfo {
            start,
            size,
            stack: s.stack.load(Relaxed),
            tid: s.tid.load(Relaxed),
            kind: s.kind.load(Relaxed),
            site: 0,
        })
    });
    if let Some(o) = noted.or_else(|| crate::alloc::lookup(a)) {
        return schema::ObjectRef {
            kind: schema::ObjectKind::Heap,
            start: o.start,
            size: o.size,
            alloc_stack: Some(o.stack),
            alloc_thread: Some(o.tid),
            alloc_kind: crate::alloc::KIND_NAMES
                .get(o.kind as usize)
                .map(|s| s.to_string()),
            stack_thread: None,
        };
    }
    if let Some(&(id, lo, hi)) = stacks.iter().find(|s| s.1 <= a && a < s.2) {
        return schema::ObjectRef {
            kind: schema::ObjectKind::Stack,
            start: lo,
            size: hi - lo,
            stack_thread: Some(id),
            ..Default::default()
        };
    }
    schema::ObjectRef {
        kind: schema::ObjectKind::Static,
        start: line,
        size: 64,
        ..Default::default()
    }
}

/// Top findings for the exit summary, one line each.
pub fn summary_lines(p: &profcc_schema::Profile, top: usize) -> Vec<String> {
    let Some(s) = &p.sharing else {
        return Vec::new();
    };
    // One summary line per thing to fix. Heap blocks are merged by the analysis; a global's
    // lines are not (the symbol table is the report's), so statics that read the same here
    // (kind, place, threads) are added up, as the report would merge them by variable.
    struct Row {
        latent: bool,
        /// What the line says, where, the object's kind, the threads.
        key: (String, &'static str, String),
        lines: usize,
        invalidations: u64,
        threads: usize,
    }
    let mut rows: Vec<Row> = Vec::new();
    for f in schema::analyze(s, p.duration_ns) {
        let place = f
            .sites
            .iter()
            .filter_map(|ls| p.sites.get(ls.site as usize))
            .next()
            .map(|s| format!("{}:{}", basename(&s.file), s.line))
            .unwrap_or_else(|| "?".into());
        let obj = match f.objects.first().map(|o| o.kind) {
            Some(schema::ObjectKind::Heap) => "heap object",
            Some(schema::ObjectKind::Stack) => "stack object",
            _ => "global/static",
        };
        let key = (
            format!(
                "{}{} at {place}",
                f.kind.as_str(),
                if f.allocator_induced {
                    " (allocator-induced)"
                } else {
                    ""
                }
            ),
            obj,
            f.threads
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(","),
        );
        let latent = f.latent.is_some();
        let same = rows
            .iter()
            .position(|r| obj == "global/static" && !latent && !r.latent && r.key == key);
        match same {
            Some(i) => {
                let r = &mut rows[i];
                r.lines += f.lines.len();
                r.invalidations += f.invalidations;
            }
            None => rows.push(Row {
                latent,
                key,
                lines: f.lines.len(),
                invalidations: f.invalidations,
                threads: f.threads.len(),
            }),
        }
    }
    rows.sort_by(|a, b| {
        a.latent
            .cmp(&b.latent)
            .then(b.invalidations.cmp(&a.invalidations))
    });
    rows.iter()
        .take(top)
        .map(|r| {
            // The analysis's own model, on the added-up invalidations.
            let (_, speedup) = schema::predict(s, r.invalidations, r.threads, p.duration_ns);
            let gain = if speedup >= 1.01 {
                format!(", fixing it: up to {speedup:.2}x faster")
            } else {
                String::new()
            };
            let (what, obj, threads) = &r.key;
            let lines = if r.lines > 1 {
                format!(", {} lines", r.lines)
            } else {
                String::new()
            };
            format!(
                "  {what} ({obj}{lines}, threads {threads}): {} invalidations{gain}",
                r.invalidations
            )
        })
        .collect()
}

fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_adds_up_the_lines_of_one_static_variable() {
        use schema::{ByteUse, LineRecord, LineSite, ObjectKind, ObjectRef, Sharing};
        // Three read-mostly lines of one static table, read at one site: one summary line.
        let line = |addr: u64, inv: u64| LineRecord {
            addr,
            invalidations: inv,
            contended: true,
            volume_samples: 0,
            bytes: vec![ByteUse {
                offset: 0,
                size: 8,
                reads: 90_000,
                writes: 100,
                readers: vec![1, 2, 3],
                writers: vec![1],
                cross_reads: 90_000,
            }],
            sites: vec![LineSite {
                site: 0,
                reads: 90_000,
                writes: 100,
            }],
            objects: vec![ObjectRef {
                kind: ObjectKind::Static,
                start: addr,
                size: 64,
                ..ObjectRef::default()
            }],
        };
        let p = profcc_schema::Profile {
            duration_ns: 1_000_000_000,
            sites: vec![profcc_schema::AccessSite {
                file: "/src/t.c".into(),
                line: 21,
                col: 3,
                function: "work".into(),
                inlined_at: None,
                kind: profcc_schema::AccessKind::Read,
                size: 8,
                count: 1,
                bytes: 8,
                threads: 3,
            }],
            sharing: Some(Sharing {
                parallel_ns: 1_000_000_000,
                lines: vec![line(0x5000, 300), line(0x5040, 200), line(0x5080, 100)],
                ..Sharing::default()
            }),
            ..profcc_schema::Profile::default()
        };
        let rows = summary_lines(&p, 3);
        assert_eq!(
            rows,
            vec!["  read-mostly at t.c:21 (global/static, 3 lines, threads 1,2,3): 600 invalidations"]
        );
    }

    #[test]
    fn address_map_invariants() {
        // Every user address maps into the line shadow, in order, 8 bytes per line.
        assert_eq!(shadow_of(0), LINE_SHADOW);
        assert_eq!(shadow_of(APP_LIMIT - 1), LINE_SHADOW + LINE_SHADOW_SIZE - 8);
        assert_eq!(shadow_of(64) - shadow_of(0), 8);
        assert_eq!(shadow_of(63), shadow_of(0));
        // The shadow and the page shadow do not overlap, and neither reaches the usual
        // places of PIE executables (0x55..), mmap and stacks (0x7f..).
        assert!(LINE_SHADOW + LINE_SHADOW_SIZE <= PAGE_SHADOW);
        assert!(PAGE_SHADOW + (APP_LIMIT >> 12) * 4 < 0x5500_0000_0000);
        // Owner, reader mask, field and flags do not overlap.
        assert_eq!(OWNER & READERS, 0);
        assert_eq!(
            (FIELD << FIELD_SHIFT) & (READERS | OWNER | HOT | RETIRED),
            0
        );
        assert_eq!(HOT & RETIRED, 0);
        // The write hook's mask (passes/hooks/fastpath.c): hot, readers and owner; a retired
        // line's field and flag do not slow its owner down.
        assert_eq!(0x8000_ffff_ffff_ffffu64, HOT | READERS | OWNER);
    }

    #[test]
    fn table_record_is_small() {
        assert!(core::mem::size_of::<Record>() <= 3584);
    }
}
