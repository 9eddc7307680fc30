//! profcc runtime: linked into profiled executables (never into shared libraries).
//!
//! Code map:
//! - `mem`: the runtime's own mmap-backed heap (`#[global_allocator]`) and spin lock.
//! - `options`: the `PROFCC_OPTIONS` flag table.
//! - `counts`: module registration and the per-thread access-site counters that the
//!   inlined fast path bumps (branch-free: a static scratch array until a thread has its own).
//! - `threads`: `pthread_create` interposition, dense thread ids, stack bounds; the per-thread
//!   state shared with C (`Tls`, one definition in `threads/tls.rs` for both halves).
//! - `stack`: frame-pointer stack capture and the stack depot.
//! - `alloc`: the malloc family / operator new/delete / mmap interposers and the object map.
//! - `writer`: profile assembly, atomic write, the exit summary, and when dumps happen (exit,
//!   `_exit`/abort, the opt-in dump signal and fatal signals).
//! - `secure`: secure-execution mode (setuid, setgid): no instruction from the environment,
//!   no profile.
//! - `fork`: the one `pthread_atfork` registration: every runtime lock, in one order.
//! - `log`: the runtime's lines on stderr.
//! - `analysis`: the lifecycle fan-out: the interface the core calls the analyses through,
//!   per-thread state, the core's own upper parts (`CoreParts`, filled here).
//! - `analyses`: the analyses (`sharing`: the cache-line shadow, the hooks' cold door,
//!   tracked lines) and the registry `analyses::ANALYSES`. Core modules never import them.

#![allow(clippy::missing_safety_doc)]

pub mod alloc;
pub mod analyses;
pub mod analysis;
pub mod clock;
pub mod counts;
pub mod fork;
pub mod log;
pub mod mem;
pub mod options;
pub mod perf;
pub mod secure;
pub mod stack;
pub mod threads;
pub mod writer;

#[global_allocator]
static GLOBAL: mem::RtAlloc = mem::RtAlloc;

use core::sync::atomic::{AtomicU32, Ordering};

const UNINIT: u32 = 0;
const RUNNING: u32 = 1;
const DONE: u32 = 2;
static INIT: AtomicU32 = AtomicU32::new(UNINIT);

/// Initialise once. Safe to call from any hook, before `main`, and re-entrantly: a call made
/// while initialisation runs (say, from a malloc that `atexit` makes) returns at once.
#[inline]
pub fn ensure_init() {
    if INIT.load(Ordering::Acquire) == DONE {
        return;
    }
    init_slow();
}

/// Has initialisation finished?
pub fn initialised() -> bool {
    INIT.load(Ordering::Acquire) == DONE
}

/// The core's parts above threads and counts, as the lifecycle fan-out (`analysis`) calls
/// them at the events those lower modules see first.
static CORE: analysis::CoreParts = analysis::CoreParts {
    constructor: writer::start_dumper,
    thread_begins: || {
        counts::thread_counts();
    },
    thread_ended: || {
        // Its counter array goes back to the pool for the next thread (counts folded in).
        let _g = threads::RtGuard::enter();
        counts::thread_ended();
        alloc::thread_exit();
    },
    module_registered: alloc::module_registered,
};

#[cold]
fn init_slow() {
    // First, and on every call (the same table): whoever finds initialisation begun finds
    // the core's parts installed.
    analysis::install_core(&CORE);
    if INIT
        .compare_exchange(UNINIT, RUNNING, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return;
    }
    // Whatever libc allocates for the runtime during initialisation is not the program's.
    let _guard = threads::RtGuard::enter();
    let spec = env("PROFCC_OPTIONS").unwrap_or_default();
    for w in options::init(&spec) {
        log::stderr_line(&w);
    }
    // After the options: an analysis's `object_events` may depend on them.
    analysis::install(&analyses::ANALYSES);
    if options::get().help {
        log::stderr_line(&options::help_text());
    }
    for a in analysis::all() {
        a.init();
    }
    alloc::init_sampling();
    fork::install();
    threads::init_main_thread();
    counts::thread_counts();
    writer::install();
    INIT.store(DONE, Ordering::Release);
}

/// `getenv` without allocation; `None` for every variable in secure-execution mode (a
/// setuid or setgid program: `secure`), as glibc's `secure_getenv`.
pub fn env(name: &str) -> Option<String> {
    if secure::on() {
        return None;
    }
    let mut key = [0u8; 64];
    key[..name.len()].copy_from_slice(name.as_bytes());
    let p = unsafe { libc::getenv(key.as_ptr() as *const libc::c_char) };
    if p.is_null() {
        return None;
    }
    let s = unsafe { core::ffi::CStr::from_ptr(p) };
    Some(s.to_string_lossy().into_owned())
}

/// Referenced by the driver's link line (`-Wl,-u,__profcc_force_link`) so the runtime's
/// object, with every interposer in it, is always pulled out of the archive.
#[no_mangle]
pub static __profcc_force_link: u8 = 0;
