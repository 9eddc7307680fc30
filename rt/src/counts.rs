//! Module registration and per-thread access-site counters.
//!
//! Address map of the counter array (one per live thread, `MAP_NORESERVE`):
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
//! Lifetimes:
//! - A thread that ends (its start routine returned) adds its counts to the ended threads'
//!   sums (one array of the same layout, plus how many ended threads ran each site), records
//!   its accesses, and leaves its array zeroed (`MADV_DONTNEED`) on a free list the next
//!   thread takes: a process that creates threads forever uses the address space of the
//!   threads alive at once, not of every thread it ever had.
//! - A module that unregisters before exit (its priority-1 destructor, run by `dlclose`)
//!   leaves a copy of its sites with their counts (strings included) and of where it was
//!   mapped; the dump never reads an unloaded module's memory. Global site ids are never
//!   handed out twice, so its slots in the counter arrays are simply not read again.
//!
//! Invariants (tested in `tests`): a module's sites get the global ids
//! `[base, base + nsites)` with `base + nsites <= MAX_SITES`; an unregistered module's base
//! reads `LIMBO`, so `LIMBO + local` stays inside the array because the pass never gives a
//! module more than `MAX_MODULE_SITES` sites.

use crate::mem::{self, SpinLock};
use core::sync::atomic::{AtomicU32, Ordering};
use profcc_schema::{AccessKind, AccessSite};

use profcc_abi::sites::SiteReader;
pub use profcc_abi::{
    ModuleDesc, SiteDesc, ABI_VERSION, LIMBO, MAX_MODULE_SITES, MAX_SITES, SLOTS,
};
use profcc_abi::{COUNTER_STRIDE, NO_STRING};

pub(crate) struct Registered {
    desc: *const ModuleDesc,
    base: u32,
    /// The module's sites, decoded from its record stream when it registered.
    sites: Vec<SiteDesc>,
}
unsafe impl Send for Registered {}

/// The registered modules, and what unloaded modules left behind (copied when they
/// unregistered: their memory may be gone by the time the profile is written).
pub(crate) struct Modules {
    live: Vec<Registered>,
    /// Sites of unloaded modules, with their global ids, counts final.
    gone_sites: Vec<(u32, AccessSite)>,
    /// Accesses of unloaded modules' sites per thread (threads alive when it unloaded).
    gone_accesses: Vec<(u32, u64)>,
    /// Where the unloaded modules were mapped (for symbolising their code addresses).
    gone_maps: Vec<profcc_schema::Module>,
    /// Allocation wrappers the pass listed in registered modules (linkage names, sorted,
    /// unique; kept after a module unloads).
    wrappers: Vec<String>,
}
unsafe impl Send for Modules {}

pub(crate) static MODULES: SpinLock<Modules> = SpinLock::new(Modules {
    live: Vec::new(),
    gone_sites: Vec::new(),
    gone_accesses: Vec::new(),
    gone_maps: Vec::new(),
    wrappers: Vec::new(),
});
static NEXT_BASE: AtomicU32 = AtomicU32::new(0);
static DROPPED_SITES: AtomicU32 = AtomicU32::new(0);
/// Modules registered with access sites (the profile's `counted_modules`).
static COUNTED_MODULES: AtomicU32 = AtomicU32::new(0);

/// How many modules registered with access sites so far.
pub fn counted_modules() -> u32 {
    COUNTED_MODULES.load(Ordering::Relaxed)
}
/// Most sites of one registered module (the limbo range in use is `[LIMBO, LIMBO + this)`).
static MAX_LOCAL: AtomicU32 = AtomicU32::new(0);

pub(crate) struct ThreadCounts {
    tid: u32,
    counts: *mut u64,
}

/// Counter arrays: the live threads' (and the scratch array), arrays of ended threads ready
/// for reuse (zeroed), and the sums of ended threads.
pub(crate) struct Counters {
    live: Vec<ThreadCounts>,
    free: Vec<*mut u64>,
    /// Counts of ended threads, summed (the counter array's layout); null until one ends.
    retired: *mut u64,
    /// Per global site: how many ended threads executed it (`SLOTS / COUNTER_STRIDE` u32).
    retired_threads: *mut u32,
    /// Accesses of each ended thread.
    retired_accesses: Vec<(u32, u64)>,
}
unsafe impl Send for Counters {}
pub(crate) static THREAD_COUNTS: SpinLock<Counters> = SpinLock::new(Counters {
    live: Vec::new(),
    free: Vec::new(),
    retired: core::ptr::null_mut(),
    retired_threads: core::ptr::null_mut(),
    retired_accesses: Vec::new(),
});

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
    crate::analysis::constructor(); // no allocator lock is held here
    if m.is_null() || (*m).abi_version != ABI_VERSION {
        crate::log::stderr_line(
            "profcc: an object was instrumented by a different profcc version; its accesses are not counted (rebuild it)",
        );
        return;
    }
    crate::analysis::module_registered((*m).flags);
    note_wrappers(&*m);
    let n = (*m).nsites.min(MAX_MODULE_SITES);
    if n > 0 {
        COUNTED_MODULES.fetch_add(1, Ordering::Relaxed);
    }
    // Bases are never handed out twice (a module loaded again gets a new range), so the
    // slots of an unloaded module are simply never read again.
    let base = NEXT_BASE.fetch_add(n, Ordering::Relaxed);
    if base.checked_add(n).is_none_or(|end| end > MAX_SITES) {
        DROPPED_SITES.fetch_add(n, Ordering::Relaxed);
        return;
    }
    MAX_LOCAL.fetch_max(n, Ordering::Relaxed);
    // Expanded and decoded before the lock, into the runtime's own heap (a malformed table
    // leaves the module without sites: its counts are not reported).
    let packed = core::slice::from_raw_parts((*m).sites, (*m).sites_bytes as usize);
    let mut stream = vec![0u8; (*m).sites_raw_bytes as usize];
    let mut sites = Vec::with_capacity(n as usize);
    if profcc_abi::lz::expand(packed, &mut stream) {
        sites.extend(SiteReader::new(&stream).take(n as usize));
    }
    *(*m).site_base = base;
    MODULES.lock().live.push(Registered {
        desc: m,
        base,
        sites,
    });
}

/// Called by every instrumented module's destructor (priority 1): on `dlclose`, before the
/// module is unmapped, copy its sites (strings included) with their counts so far, and
/// where it was mapped. At exit the profile is already written (the exit dump is an
/// `atexit` handler, which runs before the destructors), so there is nothing to do.
#[no_mangle]
pub unsafe extern "C" fn __profcc_unregister_module(m: *mut ModuleDesc) {
    if m.is_null() || crate::analysis::final_dump_begun() {
        return;
    }
    let _g = crate::threads::RtGuard::enter();
    let map = mapping_of(m as *const u8);
    let mut modules = MODULES.lock();
    let Some(i) = modules.live.iter().position(|r| r.desc == m as *const _) else {
        return;
    };
    let r = modules.live.remove(i);
    let counters = THREAD_COUNTS.lock();
    let mut per_thread: Vec<(u32, u64)> = counters.live.iter().map(|t| (t.tid, 0)).collect();
    let mut out = Vec::new();
    module_sites(&r, &counters, &mut per_thread, |g, s| out.push((g, s)));
    drop(counters);
    modules.gone_sites.extend(out);
    modules
        .gone_accesses
        .extend(per_thread.into_iter().filter(|t| t.1 != 0));
    modules.gone_maps.extend(map);
}

/// Before the program's `dlclose` (rt/csrc/interpose.c): the modules loaded now, for
/// [`profcc_modules_after_dlclose`]. Null once the final dump has begun.
#[no_mangle]
pub unsafe extern "C" fn profcc_modules_before_dlclose() -> *mut Vec<profcc_schema::Module> {
    if crate::analysis::final_dump_begun() {
        return core::ptr::null_mut();
    }
    let _g = crate::threads::RtGuard::enter();
    Box::into_raw(Box::new(loaded_modules()))
}

/// After it: the modules of `before` that are no longer loaded are kept with where they were
/// mapped, so that the code addresses recorded in them (an MPI library's components, opened
/// and closed by `MPI_Init` and `MPI_Finalize`) still name their library in the profile.
#[no_mangle]
pub unsafe extern "C" fn profcc_modules_after_dlclose(before: *mut Vec<profcc_schema::Module>) {
    if before.is_null() {
        return;
    }
    let _g = crate::threads::RtGuard::enter();
    let before = unsafe { Box::from_raw(before) };
    let now = loaded_modules();
    let mut modules = MODULES.lock();
    for m in *before {
        let same = |x: &profcc_schema::Module| x.start == m.start && x.path == m.path;
        if !now.iter().any(same) && !modules.gone_maps.iter().any(same) {
            modules.gone_maps.push(m);
        }
    }
}

/// The loaded object that contains `p` (by its path, as the profile lists modules).
fn mapping_of(p: *const u8) -> Option<profcc_schema::Module> {
    let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
    if unsafe { libc::dladdr(p as *const libc::c_void, &mut info) } == 0 || info.dli_fname.is_null()
    {
        return None;
    }
    let name = unsafe { core::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy();
    let name = absolute(name.into_owned());
    loaded_modules().into_iter().find(|x| x.path == name)
}

/// A library the program opened by a relative path (`dlopen("./libx.so")`) as an absolute
/// one, so that `profcc report` run elsewhere finds it: joined to the working directory (the
/// one `dlopen` resolved it against, unless the program changed directory since).
fn absolute(name: String) -> String {
    if name.is_empty() || name.starts_with('/') {
        return name;
    }
    match std::env::current_dir() {
        Ok(dir) => {
            let rest = name.trim_start_matches("./");
            format!("{}/{rest}", dir.to_string_lossy().trim_end_matches('/'))
        }
        Err(_) => name,
    }
}

/// The executable's path (the first of the loaded objects).
pub(crate) fn exe_path() -> String {
    std::fs::read_link("/proc/self/exe")
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The loaded objects with executable code (the profile's `modules`).
pub(crate) fn loaded_modules() -> Vec<profcc_schema::Module> {
    unsafe extern "C" fn cb(
        info: *mut libc::dl_phdr_info,
        _: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        let out = &mut *(data as *mut Vec<profcc_schema::Module>);
        let info = &*info;
        let name = if info.dlpi_name.is_null() {
            String::new()
        } else {
            absolute(
                core::ffi::CStr::from_ptr(info.dlpi_name)
                    .to_string_lossy()
                    .into_owned(),
            )
        };
        let (mut start, mut end) = (u64::MAX, 0u64);
        for i in 0..info.dlpi_phnum as usize {
            let ph = &*info.dlpi_phdr.add(i);
            if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_X != 0 {
                start = start.min(info.dlpi_addr + ph.p_vaddr);
                end = end.max(info.dlpi_addr + ph.p_vaddr + ph.p_memsz);
            }
        }
        if start == u64::MAX {
            return 0;
        }
        let path = if name.is_empty() && out.is_empty() {
            exe_path()
        } else {
            name
        };
        if path.is_empty() || path.starts_with("linux-vdso") {
            return 0;
        }
        out.push(profcc_schema::Module {
            path,
            base: info.dlpi_addr,
            start,
            end,
        });
        0
    }
    let mut out: Vec<profcc_schema::Module> = Vec::new();
    unsafe { libc::dl_iterate_phdr(Some(cb), &mut out as *mut _ as *mut libc::c_void) };
    out
}

/// The profile's module list plus the modules that were unloaded before it was written.
pub(crate) fn with_unloaded(mut loaded: Vec<profcc_schema::Module>) -> Vec<profcc_schema::Module> {
    let modules = MODULES.lock();
    for g in &modules.gone_maps {
        if !loaded
            .iter()
            .any(|l| l.start == g.start && l.path == g.path)
        {
            loaded.push(g.clone());
        }
    }
    loaded
}

/// Give the calling thread its own counter array (idempotent): an ended thread's array if
/// one is free, else a new mapping. Called for the main thread during initialisation and
/// for every other thread in its start trampoline, before user code runs on it. If mapping
/// fails the thread keeps counting in the scratch array.
pub fn thread_counts() -> *mut u64 {
    unsafe {
        let slot = profcc_counts_slot();
        let scratch = profcc_scratch();
        if *slot != scratch && !(*slot).is_null() {
            return *slot;
        }
        // Before the lock: a thread's first id may start it (analyses' callbacks), and the
        // core calls analyses with none of its locks held (see fork.rs).
        let tid = crate::threads::current_id();
        let mut all = THREAD_COUNTS.lock();
        let p = match all.free.pop() {
            Some(p) => p,
            None => {
                let p = mem::map(SLOTS * 8, true) as *mut u64;
                if p.is_null() {
                    return *slot;
                }
                p
            }
        };
        if all.live.is_empty() {
            all.live.push(ThreadCounts {
                tid: SCRATCH_TID,
                counts: scratch,
            });
        }
        all.live.push(ThreadCounts { tid, counts: p });
        *slot = p;
        p
    }
}

/// The calling thread is ending (its start routine returned): add its counts to the ended
/// threads' sums, record its accesses, and put its array, zeroed, on the free list for the
/// next thread. Whatever the thread still runs (TLS destructors) counts in the scratch
/// array. Without this every thread ever created kept its array (about 80 MB of address
/// space) and its row in every dump.
pub fn thread_ended() {
    unsafe {
        let slot = profcc_counts_slot();
        let scratch = profcc_scratch();
        let c = *slot;
        if c == scratch || c.is_null() {
            return;
        }
        let tid = crate::threads::current_id();
        let modules = MODULES.lock();
        let mut all = THREAD_COUNTS.lock();
        let Some(i) = all.live.iter().rposition(|t| t.counts == c) else {
            return;
        };
        if all.retired.is_null() {
            let r = mem::map(SLOTS * 8, true) as *mut u64;
            let t = mem::map(SLOTS / COUNTER_STRIDE * 4, true) as *mut u32;
            if r.is_null() || t.is_null() {
                return; // keep the row: the counts stay readable where they are
            }
            all.retired = r;
            all.retired_threads = t;
        }
        *slot = scratch;
        let mut accesses = 0u64;
        for r in &modules.live {
            let n = r.sites.len() as u32;
            for (local, s) in (0..).zip(&r.sites) {
                let leader = if s.leader < n { s.leader } else { local };
                accesses += *c.add(COUNTER_STRIDE * (r.base + leader) as usize);
            }
        }
        let used = NEXT_BASE.load(Ordering::Relaxed).min(MAX_SITES) as usize;
        for g in 0..used {
            let n = *c.add(COUNTER_STRIDE * g);
            if n != 0 {
                *all.retired.add(COUNTER_STRIDE * g) += n;
                *all.retired.add(COUNTER_STRIDE * g + profcc_abi::BYTES_SLOT) +=
                    *c.add(COUNTER_STRIDE * g + profcc_abi::BYTES_SLOT);
                *all.retired_threads.add(g) += 1;
            }
        }
        let limbo = MAX_LOCAL.load(Ordering::Relaxed).max(1) as usize;
        for local in 0..limbo {
            let g = LIMBO as usize + local;
            let n = *c.add(COUNTER_STRIDE * g);
            *all.retired.add(COUNTER_STRIDE * g) += n;
            accesses += n;
        }
        zero(c, 0, used);
        zero(c, LIMBO as usize, limbo);
        all.live.swap_remove(i);
        all.free.push(c);
        all.retired_accesses.push((tid, accesses));
    }
}

/// Below this many bytes [`zero`] stores zeros: cheaper than `madvise` and the faults of
/// the next thread's first reads and writes of the pages it gave back (a program that
/// starts and joins threads one after another paid both on every thread).
const ZERO_BY_STORES: usize = 16 << 10;

/// Zero the slots of global sites `[first, first + n)` of a counter array: a few pages with
/// stores, more by giving the pages back to the kernel (they read as zero again).
unsafe fn zero(c: *mut u64, first: usize, n: usize) {
    let page = 4096usize;
    let start = c as usize + first * COUNTER_STRIDE * 8;
    let end = start + n * COUNTER_STRIDE * 8;
    if end - start <= ZERO_BY_STORES {
        core::ptr::write_bytes(start as *mut u8, 0, end - start);
        return;
    }
    let lo = start & !(page - 1);
    let hi = (end + page - 1) & !(page - 1);
    libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_DONTNEED);
}

/// After `fork`, in the child (locks released): the counts so far are the parent's
/// history, which the parent's own profile reports; the child starts from zero
/// (`MADV_DONTNEED` turns the calling thread's private pages back into zero pages without
/// touching the untouched ones), and so do the ended threads' sums and the unloaded
/// modules' copies. The other threads' arrays belong to threads the child does not have:
/// they are unmapped and leave the list.
pub(crate) unsafe fn after_fork_child() {
    let mine = *profcc_counts_slot();
    {
        let mut m = MODULES.lock();
        m.gone_sites.clear();
        m.gone_accesses.clear();
    }
    let mut all = THREAD_COUNTS.lock();
    all.live.retain(|t| {
        if t.tid == SCRATCH_TID {
            return true; // static storage next to the program's: kept as it is
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
    if !all.retired.is_null() {
        libc::madvise(
            all.retired as *mut libc::c_void,
            SLOTS * 8,
            libc::MADV_DONTNEED,
        );
        libc::madvise(
            all.retired_threads as *mut libc::c_void,
            SLOTS / COUNTER_STRIDE * 4,
            libc::MADV_DONTNEED,
        );
    }
    all.retired_accesses.clear();
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

unsafe fn note_wrappers(d: &ModuleDesc) {
    if d.wrappers == NO_STRING {
        return;
    }
    let list = string_at(d.strings, d.wrappers);
    let mut m = MODULES.lock();
    let w = &mut m.wrappers;
    for name in list.split(profcc_abi::WRAPPER_SEPARATOR) {
        if let Err(at) = w.binary_search_by(|x| x.as_str().cmp(name)) {
            w.insert(at, name.to_string());
        }
    }
}

/// The allocation wrappers of every module registered so far, and those the `alloc_wrappers`
/// option names (comma-separated), sorted and unique.
pub fn alloc_wrappers() -> Vec<String> {
    let mut v = MODULES.lock().wrappers.clone();
    for name in crate::options::get().alloc_wrappers.as_str().split(',') {
        let name = name.trim();
        if !name.is_empty() && !v.iter().any(|x| x == name) {
            v.push(name.to_string());
        }
    }
    v.sort();
    v
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

/// One module's sites with counts (live threads' plus ended threads'), each as
/// `f(global id, site)`; adds each live thread's accesses to `per_thread` (in
/// `counters.live` order).
unsafe fn module_sites(
    r: &Registered,
    counters: &Counters,
    per_thread: &mut [(u32, u64)],
    mut f: impl FnMut(u32, AccessSite),
) {
    let d = &*r.desc;
    let base = r.base;
    let n = r.sites.len() as u32;
    for (local, s) in (0..).zip(&r.sites) {
        let leader = if s.leader < n { s.leader } else { local };
        let g = (base + leader) as usize;
        let (mut count, mut bytes, mut nthreads) = (0u64, 0u64, 0u32);
        for (i, t) in counters.live.iter().enumerate() {
            let c = t.counts;
            let n = *c.add(COUNTER_STRIDE * g);
            if n != 0 {
                count += n;
                bytes += *c.add(COUNTER_STRIDE * g + profcc_abi::BYTES_SLOT);
                nthreads += 1;
                per_thread[i].1 += n;
            }
        }
        if !counters.retired.is_null() {
            count += *counters.retired.add(COUNTER_STRIDE * g);
            bytes += *counters
                .retired
                .add(COUNTER_STRIDE * g + profcc_abi::BYTES_SLOT);
            nthreads += *counters.retired_threads.add(g);
        }
        if count == 0 {
            continue;
        }
        if s.size != 0 {
            bytes = count * s.size as u64;
        }
        // As the profile has always named it: "file:line" of the outermost inlined-at call.
        let inl = (s.inlined_file != NO_STRING).then(|| {
            format!(
                "{}:{}",
                string_at(d.strings, s.inlined_file),
                s.inlined_line
            )
        });
        f(
            base + local,
            AccessSite {
                file: string_at(d.strings, s.file),
                line: s.line,
                col: s.col,
                function: string_at(d.strings, s.func),
                inlined_at: inl,
                kind: kind_of(s.kind),
                size: s.size as u32,
                count,
                bytes,
                threads: nthreads,
            },
        );
    }
}

/// Merge every thread's counters (live, ended) and the unloaded modules' copies. Threads
/// still running may add counts while this reads; none starts or ends meanwhile (the locks
/// are held throughout, so no array changes hands while it is read).
pub fn snapshot() -> Snapshot {
    let modules = MODULES.lock();
    let counters = THREAD_COUNTS.lock();
    let mut per_thread: Vec<(u32, u64)> = counters.live.iter().map(|t| (t.tid, 0)).collect();
    let mut sites = Vec::new();
    let mut global_ids = Vec::new();
    for r in &modules.live {
        unsafe {
            module_sites(r, &counters, &mut per_thread, |g, s| {
                global_ids.push(g);
                sites.push(s);
            })
        };
    }
    for (g, s) in &modules.gone_sites {
        global_ids.push(*g);
        sites.push(s.clone());
    }
    let mut unattributed = 0;
    let limbo = MAX_LOCAL.load(Ordering::Relaxed).max(1);
    for (i, t) in counters.live.iter().enumerate() {
        for local in 0..limbo {
            let g = (LIMBO + local) as usize;
            let n = unsafe { *t.counts.add(COUNTER_STRIDE * g) };
            unattributed += n;
            per_thread[i].1 += n;
        }
    }
    if !counters.retired.is_null() {
        for local in 0..limbo {
            let g = (LIMBO + local) as usize;
            unattributed += unsafe { *counters.retired.add(COUNTER_STRIDE * g) };
        }
    }
    per_thread.extend_from_slice(&counters.retired_accesses);
    per_thread.extend_from_slice(&modules.gone_accesses);
    Snapshot {
        sites,
        global_ids,
        per_thread,
        unattributed,
        dropped_sites: DROPPED_SITES.load(Ordering::Relaxed),
    }
}
