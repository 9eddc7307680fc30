//! Module registration and per-thread access-site counters.
//!
//! Address map of the counter array (one per thread, `MAP_NORESERVE`, never freed so that
//! the exit dump can read the counts of threads that have ended):
//!
//! ```text
//! slot 2*g     executions of global site g      g in [0, MAX_SITES)            registered sites
//! slot 2*g+1   bytes of run-time-length         g in [LIMBO, LIMBO+MAX_MODULE_SITES)  accesses made
//!              accesses (memory intrinsics)                                     before their module registered
//! ```
//!
//! Fixed-size sites only bump the count; their bytes are count x size, computed here.
//! Before a thread has its own array, `__profcc_counts` points at a static scratch array of
//! the same layout (rt/csrc/tls.c), so the inlined fast path never needs a branch.
//!
//! ```text
//! ```
//!
//! Invariants (tested in `tests`): a module's sites get the global ids
//! `[base, base + nsites)` with `base + nsites <= MAX_SITES`; an unregistered module's base
//! reads `LIMBO`, so `LIMBO + local` stays inside the array because the pass never gives a
//! module more than `MAX_MODULE_SITES` sites.

use crate::mem::{self, SpinLock};
use core::sync::atomic::{AtomicU32, Ordering};
use profcc_schema::{AccessKind, AccessSite};

pub use profcc_abi::{
    ModuleDesc, SiteDesc, ABI_VERSION, LIMBO, MAX_MODULE_SITES, MAX_SITES, SLOTS,
};
use profcc_abi::{COUNTER_STRIDE, NO_STRING};

pub(crate) struct Registered {
    desc: *const ModuleDesc,
    base: u32,
}
unsafe impl Send for Registered {}

pub(crate) static MODULES: SpinLock<Vec<Registered>> = SpinLock::new(Vec::new());
static NEXT_BASE: AtomicU32 = AtomicU32::new(0);
static DROPPED_SITES: AtomicU32 = AtomicU32::new(0);

pub(crate) struct ThreadCounts {
    tid: u32,
    counts: *mut u64,
}
unsafe impl Send for ThreadCounts {}
pub(crate) static THREAD_COUNTS: SpinLock<Vec<ThreadCounts>> = SpinLock::new(Vec::new());

extern "C" {
    fn profcc_counts_slot() -> *mut *mut u64;
    fn profcc_scratch() -> *mut u64;
}

/// Pseudo thread id of the scratch array (threads the runtime never saw start).
pub const SCRATCH_TID: u32 = u32::MAX;

/// Called by every instrumented module's constructor (priority 1).
#[no_mangle]
pub unsafe extern "C" fn __profcc_register_module(m: *mut ModuleDesc) {
    crate::ensure_init();
    crate::writer::start_dumper(); // a constructor: no allocator lock is held here
    if m.is_null() || (*m).abi_version != ABI_VERSION {
        crate::writer::stderr_line(
            "profcc: an object was instrumented by a different profcc version; its accesses are not counted (rebuild it)",
        );
        return;
    }
    for a in crate::analysis::all() {
        a.module_registered((*m).flags);
    }
    let n = (*m).nsites.min(MAX_MODULE_SITES);
    let base = NEXT_BASE.fetch_add(n, Ordering::Relaxed);
    if base.checked_add(n).is_none_or(|end| end > MAX_SITES) {
        DROPPED_SITES.fetch_add(n, Ordering::Relaxed);
        return;
    }
    *(*m).site_base = base;
    MODULES.lock().push(Registered { desc: m, base });
}

/// Give the calling thread its own counter array (idempotent). Called for the main thread
/// during initialisation and for every other thread in its start trampoline, before user
/// code runs on it. If mapping fails the thread keeps counting in the scratch array.
pub fn thread_counts() -> *mut u64 {
    unsafe {
        let slot = profcc_counts_slot();
        let scratch = profcc_scratch();
        if *slot != scratch && !(*slot).is_null() {
            return *slot;
        }
        let p = mem::map(SLOTS * 8, true) as *mut u64;
        if p.is_null() {
            return *slot;
        }
        // Before the lock: a thread's first id may start it (analyses' callbacks), and the
        // core calls analyses with none of its locks held (see fork.rs).
        let tid = crate::threads::current_id();
        let mut all = THREAD_COUNTS.lock();
        if all.is_empty() {
            all.push(ThreadCounts {
                tid: SCRATCH_TID,
                counts: scratch,
            });
        }
        all.push(ThreadCounts { tid, counts: p });
        *slot = p;
        p
    }
}

/// After `fork`, in the child (locks released): the counts so far are the parent's
/// history, which the parent's own profile reports; the child starts from zero
/// (`MADV_DONTNEED` turns the calling thread's private pages back into zero pages without
/// touching the untouched ones). The other threads' arrays belong to threads the child
/// does not have: they are unmapped and leave the list.
pub(crate) unsafe fn after_fork_child() {
    let mine = *profcc_counts_slot();
    THREAD_COUNTS.lock().retain(|t| {
        if t.tid == SCRATCH_TID {
            return true;
        }
        if t.counts == mine {
            libc::madvise(
                t.counts as *mut libc::c_void,
                SLOTS * 8,
                libc::MADV_DONTNEED,
            );
            return true;
        }
        mem::unmap(t.counts as *mut u8, SLOTS * 8);
        false
    });
}

fn kind_of(k: u8) -> AccessKind {
    use profcc_abi::AccessKind as K;
    match K::from_code(k) {
        Some(K::Read) => AccessKind::Read,
        Some(K::Write) => AccessKind::Write,
        Some(K::Atomic) => AccessKind::Atomic,
        Some(K::CopyRead) => AccessKind::CopyRead,
        Some(K::CopyWrite) | None => AccessKind::CopyWrite,
    }
}

unsafe fn string_at(strings: *const u8, off: u32) -> String {
    if off == NO_STRING {
        return String::new();
    }
    let p = strings.add(off as usize) as *const libc::c_char;
    core::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
}

pub struct Snapshot {
    pub sites: Vec<AccessSite>,
    /// Global site id of each entry of `sites`.
    pub global_ids: Vec<u32>,
    /// Accesses per dense thread id.
    pub per_thread: Vec<(u32, u64)>,
    pub unattributed: u64,
    pub dropped_sites: u32,
}

/// Merge every thread's counters. Threads still running may add counts while this reads.
pub fn snapshot() -> Snapshot {
    let threads: Vec<(u32, *mut u64)> = THREAD_COUNTS
        .lock()
        .iter()
        .map(|t| (t.tid, t.counts))
        .collect();
    let modules: Vec<(*const ModuleDesc, u32)> =
        MODULES.lock().iter().map(|m| (m.desc, m.base)).collect();
    let mut per_thread: Vec<(u32, u64)> = threads.iter().map(|t| (t.0, 0)).collect();
    let mut sites = Vec::new();
    let mut global_ids = Vec::new();
    let mut max_local = 0u32;
    for &(desc, base) in &modules {
        let d = unsafe { &*desc };
        max_local = max_local.max(d.nsites.min(MAX_MODULE_SITES));
        for local in 0..d.nsites.min(MAX_MODULE_SITES) {
            let s = unsafe { *d.sites.add(local as usize) };
            let leader = if s.leader < d.nsites { s.leader } else { local };
            let g = (base + leader) as usize;
            let (mut count, mut bytes, mut nthreads) = (0u64, 0u64, 0u32);
            for (i, &(_, c)) in threads.iter().enumerate() {
                let n = unsafe { *c.add(COUNTER_STRIDE * g) };
                if n != 0 {
                    count += n;
                    bytes += unsafe { *c.add(COUNTER_STRIDE * g + profcc_abi::BYTES_SLOT) };
                    nthreads += 1;
                    per_thread[i].1 += n;
                }
            }
            if count == 0 {
                continue;
            }
            if s.size != 0 {
                bytes = count * s.size as u64;
            }
            let inl = unsafe { string_at(d.strings, s.inlined_at) };
            global_ids.push(base + local);
            sites.push(AccessSite {
                file: unsafe { string_at(d.strings, s.file) },
                line: s.line,
                col: s.col,
                function: unsafe { string_at(d.strings, s.func) },
                inlined_at: if inl.is_empty() { None } else { Some(inl) },
                kind: kind_of(s.kind),
                size: s.size as u32,
                count,
                bytes,
                threads: nthreads,
            });
        }
    }
    let mut unattributed = 0;
    for (i, &(_, c)) in threads.iter().enumerate() {
        for local in 0..max_local.max(1) {
            let g = (LIMBO + local) as usize;
            let n = unsafe { *c.add(COUNTER_STRIDE * g) };
            unattributed += n;
            per_thread[i].1 += n;
        }
    }
    Snapshot {
        sites,
        global_ids,
        per_thread,
        unattributed,
        dropped_sites: DROPPED_SITES.load(Ordering::Relaxed),
    }
}
