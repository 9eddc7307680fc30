//! Fork handling, all of it: the runtime's one `pthread_atfork` registration.
//!
//! `prepare` takes every runtime lock, in the order below, so that no other thread is
//! halfway through changing a runtime table when the process is copied; `parent` and
//! `child` release them all (spin locks: a plain store, the holder need not be alive);
//! the child then resets what it must not inherit.
//!
//! # Lock order (outermost first; `prepare` takes them in this order)
//!
//! 1. `writer::DUMPING`: held for a whole dump, which takes everything below. A signal dump
//!    does not start while a fork waits for it (`writer::FORKS_WAITING`).
//! 2. Each analysis's own locks (`Analysis::fork_prepare`, registry order). Analyses may call
//!    the core while holding their locks; the core never calls an analysis while holding
//!    one of its own, except `DUMPING`.
//! 3. `counts::MODULES`, then `counts::THREAD_COUNTS`.
//! 4. `analysis::BLOCKS` (per-thread state blocks).
//! 5. `threads::REG` (thread registry).
//! 6. The object map: `alloc::OBJECTS` (64 primary shards, then 64 containment shards),
//!    `alloc::MMAPS`, `alloc::THREAD_SET` (the sites' thread ids past 255, kept in
//!    `alloc/stats.rs` with the site counters).
//! 7. The allocation statistics (`alloc/stats.rs`): the list of blocks, each block, the pool.
//! 8. `mem::HEAP`, last: every lock above may be held while the runtime allocates.
//!
//! The options need no lock: they are fixed once at initialisation (`options::init`).
//!
//! A runtime lock is never taken while one later in this order is held (each is a leaf
//! except through allocation, and the heap is last), so `prepare` cannot deadlock with a
//! thread that holds some of them: it waits until that thread lets go.
//!
//! The stack depot has no lock: an insertion another thread was making at the fork shows in
//! the child as a BUSY table slot, which the child turns into a tombstone
//! (`stack::after_fork_child`). The counter arrays, the line shadow and the tracked-line
//! table are written with plain or atomic stores and need no lock.
//!
//! # What the child resets (after the release)
//!
//! The child has one thread, the one that called `fork`: the thread registry, the counter
//! arrays (`counts`) and the per-thread blocks keep only that thread. The child's profile
//! reports what happens in the child, the parent's the history before the fork, so a report
//! merging both counts everything once: the counts (ended threads' and unloaded modules'
//! included), the allocation statistics (`alloc::after_fork_child`; inherited objects stay
//! known, so their frees in the child count there) and the sharing analysis's lines restart
//! from zero. The stack depot drops abandoned
//! slots; the writer forgets the dumper thread (SIGUSR2 is ignored in the child) and restarts
//! the run's clock; each analysis resets its own state (`Analysis::fork_child`). The output
//! name is expanded at dump time, so `%p` is the child's pid.
//!
//! Handlers registered after the runtime's (libomp's, the program's) run their prepare step
//! before this one and their parent/child steps after, so they may allocate freely. One
//! registered before it (by a library constructor that runs before the runtime initialises)
//! runs its prepare step after this one: if it allocates through the interposers it waits
//! for the object map's locks forever (not seen so far).
//!
//! Tested end to end by `fork_storm_children_all_write_their_profiles` (tests/tests/runtime.rs).

use crate::mem::SpinLock;
use core::sync::atomic::Ordering;

/// Take a spin lock and keep it past the guard (released by [`release_core`]).
fn hold<T>(l: &SpinLock<T>) {
    core::mem::forget(l.lock());
}

unsafe extern "C" fn prepare() {
    crate::writer::FORKS_WAITING.fetch_add(1, Ordering::AcqRel);
    hold(&crate::writer::DUMPING);
    crate::writer::FORKS_WAITING.fetch_sub(1, Ordering::AcqRel);
    for a in crate::analysis::all() {
        a.fork_prepare();
    }
    hold(&crate::counts::MODULES);
    hold(&crate::counts::THREAD_COUNTS);
    hold(&crate::analysis::BLOCKS);
    hold(&crate::threads::REG);
    crate::alloc::OBJECTS.lock_all();
    hold(&crate::alloc::MMAPS);
    hold(&crate::alloc::THREAD_SET);
    crate::alloc::stats_fork_prepare();
    hold(&crate::mem::HEAP);
}

/// Release everything `prepare` took except the analyses' locks (their own callbacks do).
unsafe fn release_core() {
    crate::mem::HEAP.force_unlock();
    crate::alloc::stats_fork_release();
    crate::alloc::THREAD_SET.force_unlock();
    crate::alloc::MMAPS.force_unlock();
    crate::alloc::OBJECTS.unlock_all();
    crate::threads::REG.force_unlock();
    crate::analysis::BLOCKS.force_unlock();
    crate::counts::THREAD_COUNTS.force_unlock();
    crate::counts::MODULES.force_unlock();
}

unsafe extern "C" fn parent() {
    release_core();
    for a in crate::analysis::all().iter().rev() {
        a.fork_parent();
    }
    crate::writer::DUMPING.force_unlock();
}

unsafe extern "C" fn child() {
    release_core();
    // The core's resets (they take the core's locks, free again, and call no analysis),
    // then each analysis releases its locks and resets, seeing the core already reset.
    let _g = crate::threads::RtGuard::enter();
    crate::threads::after_fork_child();
    crate::counts::after_fork_child();
    crate::alloc::after_fork_child();
    crate::analysis::blocks_after_fork_child();
    crate::stack::after_fork_child();
    crate::writer::after_fork_child();
    for a in crate::analysis::all().iter().rev() {
        a.fork_child();
    }
    crate::writer::DUMPING.force_unlock();
}

extern "C" {
    /// `pthread_atfork` without libc_nonshared's wrapper (rt/csrc/tls.c: no PLT slot).
    fn profcc_atfork(
        prepare: unsafe extern "C" fn(),
        parent: unsafe extern "C" fn(),
        child: unsafe extern "C" fn(),
    ) -> libc::c_int;
}

/// Once, from `ensure_init`.
pub fn install() {
    unsafe { profcc_atfork(prepare, parent, child) };
}
