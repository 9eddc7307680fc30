//! The runtime's lifecycle fan-out: the interface between the core and the analyses, the
//! core's side of the registry, and the events' types.
//!
//! The core (threads, objects, stacks, counters, options, the dump lifecycle, fork) never
//! names an analysis: it calls every analysis of the registry (`analyses::ANALYSES`, handed
//! to [`install`] once by `ensure_init`) through the [`Analysis`] trait at lifecycle events.
//! Analyses import the core; no core module imports an analysis. The per-access cold door
//! is not a lifecycle event: the inlined hooks call their analysis's door directly (for the
//! sharing analysis, `__profcc_slow` in rt/csrc/tls.c, then `profcc_line_slow`), so the hot
//! path and the door pay no dispatch.
//!
//! The core's own modules form layers, none importing one above it: `mem`, `log`, `options`,
//! `clock`, `secure`, `perf` at the bottom; this module; `stack`; `threads`; `counts`;
//! `alloc` (with `alloc/stats.rs`); `writer`; `fork` on top (tests/tests/tidy.rs,
//! `runtime_core_has_no_import_cycle`, checks there is no cycle). An event a lower module
//! sees first goes through this module's functions: [`thread_started`], [`thread_begins`],
//! [`thread_exit`], [`module_registered`], [`constructor`], [`object_allocated`],
//! [`object_freed`]. They call the analyses and the core's parts above that module
//! ([`CoreParts`], named once by lib.rs's `ensure_init`). Fork (fork.rs) and the dump
//! (writer.rs) are run by the top of the core, which calls the analyses through [`all`].
//! The object events are on the allocation path: a mask says which analyses asked, and with
//! none nothing is built or called; the other events are rare (a thread, a module).
//!
//! Rules for an analysis (each one a module under `analyses/` plus one line in the registry):
//! - Its callbacks run with the re-entrancy guard set or from runtime threads, and never
//!   while the core holds one of its locks other than the dump lock (`dump`, `summary` and
//!   the fork callbacks run under it; it is the outermost lock). So an analysis may call the
//!   core while it holds its own locks: see `fork.rs` for the lock order.
//! - Every lock it owns is taken in `fork_prepare` and released in `fork_parent` and
//!   `fork_child`; `fork_child` then resets what the child must not inherit.
//! - Its options are rows of the one table in `options.rs` whose owner column is the
//!   analysis's `name()`, read through `options::get()` (a unit test checks every owner is
//!   the core or a registered analysis).
//! - Its per-thread state is a zeroed part of `thread_state_bytes()` bytes of the block the
//!   core gives every thread (see [`ThreadStart::state`], [`current_state`], [`each_state`]).
//!   When the thread ends, `thread_retire` either keeps the part for the dump (`each_state`
//!   still lists it) or copies what the dump needs and lets it go; a block no analysis keeps
//!   is zeroed and given to the next thread, so a program that starts and joins threads one
//!   after another holds one block, not one per thread ever started.

use crate::mem::SpinLock;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering};
use std::cell::Cell;

/// A thread got its dense id (the main thread at initialisation, others in their start
/// trampoline, threads started behind the runtime's back at their first call into it).
pub struct ThreadStart {
    pub id: u32,
    pub stack_lo: u64,
    pub stack_hi: u64,
    pub is_main: bool,
    /// This analysis's zeroed per-thread block (null when it asked for none or memory ran out).
    pub state: *mut u8,
}

/// A heap object or an mmap region, as the object events and the object map's queries
/// (alloc.rs: `lookup`, `each_live`) describe it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectInfo {
    pub start: u64,
    pub size: u64,
    /// Stack depot id of the allocation call.
    pub stack: u32,
    /// Dense id of the allocating thread ([`UNKNOWN_TID`]: not known, for a block named by its
    /// start word or identity entry).
    pub tid: u32,
    /// Index into alloc.rs's `KIND_NAMES`.
    pub kind: u32,
    /// Allocation-site index (stable for the run).
    pub site: u32,
}

/// [`ObjectInfo::tid`] of a block whose allocating thread is not known.
pub const UNKNOWN_TID: u32 = u32::MAX;

/// What the dump gives an analysis besides the profile it adds its section to.
pub struct DumpContext<'a> {
    /// Index in the profile's `sites` of a global site id (None: the site has no count).
    pub site_index: &'a dyn Fn(u32) -> Option<u32>,
}

/// The object events an analysis asks for. They come with every allocation and free, so
/// the core builds and sends them only to the analyses that asked.
#[derive(Clone, Copy, Default)]
pub struct ObjectEvents {
    pub alloc: bool,
    pub free: bool,
}

/// An analysis's part of the exit summary: a title line and its findings, one line each.
pub struct SummarySection {
    pub title: String,
    pub lines: Vec<String>,
}

/// One analysis, as the core sees it. Every callback has an empty default.
pub trait Analysis: Sync {
    /// Short name (for messages and tests).
    fn name(&self) -> &'static str;
    /// Bytes of zeroed per-thread state (0: none). Blocks are 64-byte aligned.
    fn thread_state_bytes(&self) -> usize {
        0
    }
    /// Once, from `ensure_init`, after the options were parsed.
    fn init(&self) {}
    /// An instrumented module registered (`flags`: its descriptor's flags word).
    fn module_registered(&self, _flags: u32) {}
    /// On the creating thread, before the real `pthread_create` of a thread it will know.
    fn thread_coming(&self) {}
    /// In the creating thread, after the real `pthread_create` failed (no thread came).
    fn thread_failed(&self) {}
    /// On the thread that starts.
    fn thread_start(&self, _t: &ThreadStart) {}
    /// On the thread that ends (its start routine returned, or `pthread_exit`, or cancelled).
    fn thread_exit(&self) {}
    /// On the thread that ends, after every `thread_exit` and the core's own: may its part
    /// of the block (`state`, for thread `tid`) go to a later thread? Return true to keep it
    /// for the dump (`each_state` lists it), false when the analysis copied what it needs
    /// and dropped every pointer to it (the thread's own included: code that runs later on
    /// the thread, a TLS destructor, finds no state). The default keeps it.
    fn thread_retire(&self, _tid: u32, _state: *mut u8) -> bool {
        true
    }
    /// Which of `object_alloc` and `object_free` it wants called (default: neither); asked
    /// once, at installation, after the options were parsed.
    fn object_events(&self) -> ObjectEvents {
        ObjectEvents::default()
    }
    /// A heap object (malloc family, new) or an mmap region was recorded (a region that
    /// mremap moved or a MAP_FIXED mapping replaced: its old pieces are freed first).
    fn object_alloc(&self, _o: &ObjectInfo) {}
    /// A heap object is being freed (before the real free: still in the program's hands),
    /// or (pieces of) an mmap region were unmapped.
    fn object_free(&self, _o: &ObjectInfo) {}
    /// Take every lock the analysis owns (see `fork.rs` for when this runs).
    fn fork_prepare(&self) {}
    /// Release what `fork_prepare` took, in the parent.
    fn fork_parent(&self) {}
    /// Release what `fork_prepare` took, in the child, then reset what the child must not
    /// inherit (it has one thread: the one that called `fork`).
    fn fork_child(&self) {}
    /// Add the analysis's section (and notes) to the profile being written.
    fn dump(&self, _cx: &DumpContext, _p: &mut profcc_schema::Profile) {}
    /// Its part of the exit summary, at most `top` findings; None or no lines: nothing to say.
    fn summary(&self, _p: &profcc_schema::Profile, _top: usize) -> Option<SummarySection> {
        None
    }
}

pub type Registry = &'static [&'static dyn Analysis];

static REGISTRY: AtomicPtr<Registry> = AtomicPtr::new(core::ptr::null_mut());

/// Most analyses in the registry (per-thread block offsets are kept in a fixed array).
pub const MAX_ANALYSES: usize = 16;

/// Offset of each analysis's part of a thread's block, and the block's size (last entry).
static OFFSETS: [AtomicUsize; MAX_ANALYSES + 1] = [const { AtomicUsize::new(0) }; MAX_ANALYSES + 1];

/// Bit i: analysis i asked for object allocations (frees).
static WANT_ALLOC: AtomicU32 = AtomicU32::new(0);
static WANT_FREE: AtomicU32 = AtomicU32::new(0);

/// Once, from `ensure_init`, after the options were parsed and before any analysis's `init`:
/// the table the core calls.
pub fn install(registry: &'static Registry) {
    assert!(registry.len() <= MAX_ANALYSES, "raise MAX_ANALYSES");
    let mut off = 0usize;
    let (mut alloc, mut free) = (0u32, 0u32);
    for (i, a) in registry.iter().enumerate() {
        OFFSETS[i].store(off, Ordering::Relaxed);
        off += a.thread_state_bytes().next_multiple_of(64);
        let ev = a.object_events();
        alloc |= (ev.alloc as u32) << i;
        free |= (ev.free as u32) << i;
    }
    WANT_ALLOC.store(alloc, Ordering::Relaxed);
    WANT_FREE.store(free, Ordering::Relaxed);
    OFFSETS[registry.len()].store(off, Ordering::Relaxed);
    REGISTRY.store(
        registry as *const Registry as *mut Registry,
        Ordering::Release,
    );
}

/// Every analysis, in registry order (empty before `install`).
pub fn all() -> Registry {
    let p = REGISTRY.load(Ordering::Acquire);
    if p.is_null() {
        &[]
    } else {
        unsafe { *p }
    }
}

fn send(mut m: u32, o: impl FnOnce() -> ObjectInfo, f: impl Fn(&dyn Analysis, &ObjectInfo)) {
    if m == 0 {
        return;
    }
    let o = o();
    let reg = all();
    while m != 0 {
        if let Some(a) = reg.get(m.trailing_zeros() as usize) {
            f(*a, &o);
        }
        m &= m - 1;
    }
}

/// An object was allocated: `o` builds its description, only if some analysis asked.
#[inline]
pub fn object_allocated(o: impl FnOnce() -> ObjectInfo) {
    send(WANT_ALLOC.load(Ordering::Relaxed), o, |a, o| {
        a.object_alloc(o)
    });
}

/// An object is being freed: `o` builds its description, only if some analysis asked.
#[inline]
pub fn object_freed(o: impl FnOnce() -> ObjectInfo) {
    send(WANT_FREE.load(Ordering::Relaxed), o, |a, o| {
        a.object_free(o)
    });
}

/// An object whose allocation no analysis was told of (alloc.rs's start words and identity
/// entries) is being freed: only the analyses that watch frees and not allocations hear of it.
pub fn unseen_object_freed(o: impl FnOnce() -> ObjectInfo) {
    let m = WANT_FREE.load(Ordering::Relaxed) & !WANT_ALLOC.load(Ordering::Relaxed);
    send(m, o, |a, o| a.object_free(o));
}

// ---- the core's parts in the lifecycle ----

/// The core's parts above the modules that see an event first (threads, counts): what they
/// do at the event, as functions, so that a lower module calls an upper one only through
/// this table. lib.rs fills it and installs it when initialisation begins; before that
/// (and in the unit-test binary, which never initialises) the events reach no core part.
pub struct CoreParts {
    /// A constructor runs (the runtime's own, or an instrumented module's as it registers):
    /// no lock of the program's allocator is held, so a thread may be started (the writer's
    /// dump-signal thread).
    pub constructor: fn(),
    /// A thread the runtime started is about to run its start routine, after
    /// [`thread_started`] (its own counter array).
    pub thread_begins: fn(),
    /// The calling thread ends, after the analyses' `thread_exit` (its counts folded in and
    /// its counter array recycled, then its allocation statistics; the re-entrancy guard
    /// is theirs to set).
    pub thread_ended: fn(),
    /// A module registered, after the analyses' `module_registered` (`flags`: its
    /// descriptor's; one with access checks stops allocation sampling).
    pub module_registered: fn(u32),
}

static CORE: AtomicPtr<CoreParts> = AtomicPtr::new(core::ptr::null_mut());

/// When initialisation begins (lib.rs's `init_slow`, before anything else): the core's parts.
/// Idempotent (always the same table).
pub fn install_core(parts: &'static CoreParts) {
    CORE.store(
        parts as *const CoreParts as *mut CoreParts,
        Ordering::Release,
    );
}

fn core_parts() -> Option<&'static CoreParts> {
    let p = CORE.load(Ordering::Acquire);
    (!p.is_null()).then(|| unsafe { &*p })
}

/// From a constructor, after `ensure_init` (see [`CoreParts::constructor`]).
pub fn constructor() {
    if let Some(c) = core_parts() {
        (c.constructor)();
    }
}

/// The calling thread is about to create one (the `pthread_create` interposer, before the
/// real call): every analysis's `thread_coming`.
pub fn thread_coming() {
    for a in all() {
        a.thread_coming();
    }
}

/// The real `pthread_create` failed, after [`thread_coming`]: no thread came.
pub fn thread_failed() {
    for a in all() {
        a.thread_failed();
    }
}

/// A thread the runtime started is about to run its start routine (its trampoline, after
/// [`thread_started`]).
pub fn thread_begins() {
    if let Some(c) = core_parts() {
        (c.thread_begins)();
    }
}

/// The calling thread ends (its start routine returned, it called `pthread_exit` or it was
/// cancelled): every analysis's `thread_exit`, then the core's parts.
pub fn thread_exit() {
    for a in all() {
        a.thread_exit();
    }
    if let Some(c) = core_parts() {
        (c.thread_ended)();
    }
    retire_block();
}

/// An instrumented module registered: every analysis's `module_registered`, then the core's.
pub fn module_registered(flags: u32) {
    for a in all() {
        a.module_registered(flags);
    }
    if let Some(c) = core_parts() {
        (c.module_registered)(flags);
    }
}

/// The final dump (exit, `_exit`, abort, a failed assert, a fatal signal) has begun in this
/// process: the writer sets it, once; a module that unregisters after it has nothing left
/// to record (the profile is written).
static FINAL_DUMP: AtomicBool = AtomicBool::new(false);

/// Has the final dump begun?
pub fn final_dump_begun() -> bool {
    FINAL_DUMP.load(Ordering::Acquire)
}

/// Threads in [`retire_block`] past its check of [`FINAL_DUMP`].
static RETIRING: AtomicU32 = AtomicU32::new(0);

/// The writer, as the final dump begins: false the first time, true when it had begun. The
/// first time, it waits for threads retiring their blocks to finish (a block being zeroed
/// must not be read; one that finished is listed as ended), at most about 100 ms (a thread
/// stopped inside its retirement, as by the signal this dump reports, is not waited for).
pub fn begin_final_dump() -> bool {
    if FINAL_DUMP.swap(true, Ordering::SeqCst) {
        return true;
    }
    for _ in 0..100_000 {
        if RETIRING.load(Ordering::SeqCst) == 0 {
            break;
        }
        std::thread::yield_now();
    }
    false
}

fn index_of(a: &dyn Analysis) -> Option<usize> {
    all()
        .iter()
        .position(|x| core::ptr::addr_eq(*x as *const dyn Analysis, a as *const dyn Analysis))
}

// ---- per-thread state ----

/// A thread's block (every analysis's part) and the dense id of its thread.
pub(crate) struct Block {
    tid: u32,
    mem: *mut u8,
    /// 0 while the thread runs; after it ended, bit i: analysis i kept its part.
    kept: u32,
    ended: bool,
}
unsafe impl Send for Block {}

/// The blocks of running threads and those of ended threads some analysis kept.
pub(crate) static BLOCKS: SpinLock<Vec<Block>> = SpinLock::new(Vec::new());

/// Zeroed blocks of ended threads, for the next threads (under `BLOCKS`'s lock).
static SPARE: SpinLock<Vec<usize>> = SpinLock::new(Vec::new());

/// The calling thread ends: ask every analysis whether it keeps its part of the block; a
/// block none keeps is zeroed and goes to [`SPARE`]. The thread has no block after this.
fn retire_block() {
    // Once the final dump has begun it may be reading this block: the thread stays listed
    // as running (its exit callbacks ran: its figures are final). Announced before the check
    // (both sequentially consistent): the dump either sees this thread retiring and waits
    // for it, or this thread sees the dump begun.
    RETIRING.fetch_add(1, Ordering::SeqCst);
    if !FINAL_DUMP.load(Ordering::SeqCst) {
        retire_block_now();
    }
    RETIRING.fetch_sub(1, Ordering::SeqCst);
}

fn retire_block_now() {
    let mem = MINE.with(|m| m.replace(core::ptr::null_mut()));
    if mem.is_null() {
        return;
    }
    let tid = match BLOCKS.lock().iter().find(|b| b.mem == mem) {
        Some(b) => b.tid,
        None => return,
    };
    let mut kept = 0u32;
    for (i, a) in all().iter().enumerate() {
        if a.thread_state_bytes() > 0 {
            let part = unsafe { mem.add(OFFSETS[i].load(Ordering::Relaxed)) };
            if a.thread_retire(tid, part) {
                kept |= 1 << i;
            }
        }
    }
    if kept == 0 {
        let size = OFFSETS[all().len()].load(Ordering::Relaxed);
        unsafe { core::ptr::write_bytes(mem, 0, size) };
    }
    let mut blocks = BLOCKS.lock();
    if kept == 0 {
        blocks.retain(|b| b.mem != mem);
        SPARE.lock().push(mem as usize);
    } else if let Some(b) = blocks.iter_mut().find(|b| b.mem == mem) {
        b.kept = kept;
        b.ended = true;
    }
}

thread_local! {
    /// The calling thread's block (plain initial-exec TLS: no allocation, no destructor).
    static MINE: Cell<*mut u8> = const { Cell::new(core::ptr::null_mut()) };
}

/// The calling thread's part of `a`'s per-thread state (null before the thread started or
/// when `a` asked for none).
pub fn current_state(a: &dyn Analysis) -> *mut u8 {
    let (Some(i), p) = (index_of(a), MINE.with(|m| m.get())) else {
        return core::ptr::null_mut();
    };
    if p.is_null() || a.thread_state_bytes() == 0 {
        return core::ptr::null_mut();
    }
    unsafe { p.add(OFFSETS[i].load(Ordering::Relaxed)) }
}

/// `f(thread id, a's part of its block)` for every running thread and every ended one
/// whose part `a` kept (`thread_retire`), in start order (a reused block: where it is now).
pub fn each_state(a: &dyn Analysis, mut f: impl FnMut(u32, *mut u8)) {
    let Some(i) = index_of(a).filter(|_| a.thread_state_bytes() > 0) else {
        return;
    };
    let off = OFFSETS[i].load(Ordering::Relaxed);
    let blocks: Vec<(u32, *mut u8)> = BLOCKS
        .lock()
        .iter()
        .filter(|b| !b.ended || b.kept & (1 << i) != 0)
        .map(|b| (b.tid, b.mem))
        .collect();
    for (tid, mem) in blocks {
        f(tid, unsafe { mem.add(off) });
    }
}

/// The calling thread got its id: give it its block, then tell every analysis.
pub fn thread_started(id: u32, stack_lo: u64, stack_hi: u64, is_main: bool) {
    let reg = all();
    let size = OFFSETS[reg.len()].load(Ordering::Relaxed);
    let mut mem = MINE.with(|m| m.get());
    if mem.is_null() && size > 0 {
        // An ended thread's (zeroed), else from the runtime heap (packed, unlike one
        // mapping per thread).
        let spare = {
            let _b = BLOCKS.lock();
            SPARE.lock().pop()
        };
        mem = match spare {
            Some(p) => p as *mut u8,
            None => match std::alloc::Layout::from_size_align(size, 64) {
                Ok(l) => unsafe { std::alloc::alloc_zeroed(l) },
                Err(_) => core::ptr::null_mut(),
            },
        };
        if !mem.is_null() {
            MINE.with(|m| m.set(mem));
            BLOCKS.lock().push(Block {
                tid: id,
                mem,
                kept: 0,
                ended: false,
            });
        }
    }
    for (i, a) in reg.iter().enumerate() {
        let state = if mem.is_null() || a.thread_state_bytes() == 0 {
            core::ptr::null_mut()
        } else {
            unsafe { mem.add(OFFSETS[i].load(Ordering::Relaxed)) }
        };
        a.thread_start(&ThreadStart {
            id,
            stack_lo,
            stack_hi,
            is_main,
            state,
        });
    }
}

/// In the child after fork (lock released): only the calling thread's block stays listed,
/// and no other thread is retiring its block (the parent's were not copied).
pub(crate) fn blocks_after_fork_child() {
    let mine = MINE.with(|m| m.get());
    BLOCKS.lock().retain(|b| b.mem == mine);
    RETIRING.store(0, Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_option_belongs_to_the_core_or_a_registered_analysis() {
        for f in crate::options::FLAGS {
            assert!(
                f.owner == "core"
                    || crate::analyses::ANALYSES
                        .iter()
                        .any(|a| a.name() == f.owner),
                "option {} names owner {}, which is neither `core` nor a registered analysis",
                f.name,
                f.owner
            );
        }
    }

    /// Per-thread state: each analysis gets its own zeroed, 64-byte aligned part of the
    /// thread's block, handed to `thread_start`, found again by `current_state`, and listed
    /// by `each_state` after the thread ended.
    #[test]
    fn per_thread_state_blocks() {
        use super::*;
        use core::sync::atomic::AtomicU64;
        struct Fake(usize, AtomicU64);
        impl Analysis for Fake {
            fn name(&self) -> &'static str {
                "fake"
            }
            fn thread_state_bytes(&self) -> usize {
                self.0
            }
            fn thread_start(&self, t: &ThreadStart) {
                if !t.state.is_null() {
                    assert_eq!(t.state as usize % 64, 0);
                    // Zeroed (past the word a previous start of the same thread wrote).
                    assert!((4..self.0).all(|i| unsafe { *t.state.add(i) } == 0));
                    unsafe { *(t.state as *mut u32) = t.id + 1000 };
                }
                self.1.fetch_add(1, Ordering::Relaxed);
            }
        }
        static A: Fake = Fake(8, AtomicU64::new(0));
        static NONE: Fake = Fake(0, AtomicU64::new(0));
        static B: Fake = Fake(100, AtomicU64::new(0));
        static REG: Registry = &[&A, &NONE, &B];
        install(&REG);
        assert_eq!(OFFSETS[3].load(Ordering::Relaxed), 64 + 128);
        // (The unit-test binary's pthread_create is interposed too: the thread may already
        // have its id and block; starting it again keeps the block.)
        // The block keeps the id it was made with; the id given here is what `thread_start`
        // sees (this module is below the thread registry: it takes ids, never asks for them).
        const ID: u32 = 4000;
        let t = std::thread::spawn(|| {
            thread_started(ID, 0, 0, false);
            let (a, b) = (current_state(&A), current_state(&B));
            assert_eq!(b as usize - a as usize, 64);
            assert!(current_state(&NONE).is_null());
            unsafe { *(b as *const u32) }
        });
        assert_eq!(t.join().unwrap(), ID + 1000);
        assert!(NONE.1.load(Ordering::Relaxed) >= 1);
        let mut seen = Vec::new();
        each_state(&B, |tid, p| seen.push((tid, unsafe { *(p as *const u32) })));
        assert!(seen.iter().any(|&(_, v)| v == ID + 1000), "{seen:?}");

        // An analysis that lets its part go at the thread's end: the ended thread is no
        // longer listed, and the next thread's block (a reused one) is zeroed again
        // (`Fake::thread_start` checks).
        struct LetGo;
        impl Analysis for LetGo {
            fn name(&self) -> &'static str {
                "let-go"
            }
            fn thread_state_bytes(&self) -> usize {
                4096
            }
            fn thread_start(&self, t: &ThreadStart) {
                assert!((0..4096).all(|i| unsafe { *t.state.add(i) } == 0));
                unsafe { t.state.write_bytes(0xab, 4096) };
                unsafe { *(t.state as *mut u32) = t.id };
            }
            fn thread_retire(&self, _tid: u32, _state: *mut u8) -> bool {
                false
            }
        }
        static L: LetGo = LetGo;
        static REG2: Registry = &[&L];
        install(&REG2);
        let listed = |id: u32| {
            let mut ids = Vec::new();
            each_state(&L, |_, p| ids.push(unsafe { *(p as *const u32) }));
            ids.contains(&id)
        };
        for id in [ID + 1, ID + 2] {
            std::thread::spawn(move || {
                // A thread the interposer already gave a block (under this registry or the
                // one before) ends first, so this one gets a block of its own.
                thread_exit();
                thread_started(id, 0, 0, false);
                assert!(listed(id));
                thread_exit();
                assert!(current_state(&L).is_null());
                assert!(!listed(id));
            })
            .join()
            .unwrap();
        }
    }

    #[test]
    fn analysis_names_are_unique() {
        let names: Vec<&str> = crate::analyses::ANALYSES.iter().map(|a| a.name()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(names.len(), sorted.len(), "{names:?}");
    }
}
