//! Cache-line sharing analysis: the line shadow, the cold door the inlined hooks call, the
//! tracked-line table, and the profile's `sharing` section.
//!
//! The address map (the line shadow and its neighbours) and the line's shadow word
//! ([`ShadowWord`]: owner, reader mask, field, hot/retired) are part of the hook ABI, defined
//! and tested in the profcc-abi crate (abi/src/lib.rs). The line shadow is reserved with
//! `MAP_FIXED_NOREPLACE`, so it never clobbers a mapping.
//!
//! The inlined hooks (hooks/sharing.c) leave at once when a write finds the word
//! equal to the thread's owner word (it wrote last and nobody read since; counters masked
//! out) and when a read finds its reader bit set on a cold line. Everything else comes here:
//! ownership changes (Cheetah's rule: a write after another thread's access is one
//! invalidation), first reads, every access to a hot line, and one write in `fs_watch` per
//! site and thread as a write-volume sample (for latent false sharing, after Predator).
//!
//! Tracked (hot) lines keep Cheetah's two-entry table (thread, read/write) for exact
//! invalidations and per-byte reader/writer sets and counts (one access in `fs_sample`).
//! A line becomes hot after `fs_threshold` invalidations (contended), or after
//! `fs_watch_samples` volume samples while a neighbouring line has another owner or after two
//! invalidations (watched: latent sharing, or a heavily written line two threads took turns
//! on); a watched line that stays uncontended for `fs_budget` accesses is retired (cold again,
//! its record kept) unless two threads are on its record: then it is contended. A retired line
//! is watched again at its next invalidation, so each thread that writes it is recorded
//! however the schedule interleaved them.
//!
//! Nothing is counted while only one thread exists (initialisation before `pthread_create`
//! and the serial tail after the last join are not sharing), and the checks read no shadow
//! then (`set_checks`).

use crate::analysis::{Analysis, DumpContext, ObjectEvents, SummarySection, ThreadStart};
use crate::mem::SpinLock;
use crate::threads;
use core::sync::atomic::{
    AtomicBool, AtomicU32, AtomicU64,
    Ordering::{Relaxed, SeqCst},
};
use profcc_abi::{
    line_shadow as shadow_of, ShadowWord, APP_LIMIT, COUNTER_STRIDE, FLAG_SHARING, INFO_ATOMIC,
    INFO_EXTRA_MAX, INFO_EXTRA_READS_SHIFT, INFO_EXTRA_WRITES_SHIFT, INFO_SAMPLED, INFO_SITE_SHIFT,
    INFO_SIZE_MASK, INFO_WRITE, LINE_SHADOW, LINE_SHADOW_SIZE,
};
use profcc_schema::sharing as schema;

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
    fn profcc_alone_slot() -> *mut u64;
}

/// `__profcc_alone` (rt/csrc/tls.c): nonzero while the program's one thread runs alone. Then
/// the checkers count and return without reading the shadow, and a loop's inlined check gives
/// a line its owner or reader itself (hooks/sharing.c): what one thread does alone is not
/// sharing (`multi`), so nothing it would have counted is lost. The lines a lone thread's
/// straight-line code wrote have no owner when the next thread comes; that thread's first
/// write to one is then not an invalidation, as it was not before either (one thread: not
/// counted). Only set once the shadow is reserved: the inlined checks store to it.
fn set_checks(on: bool) {
    let w = unsafe { &*(profcc_alone_slot() as *const AtomicU64) };
    w.store((!on && SHADOW.load(Relaxed) == 1) as u64, SeqCst);
}

/// In the creating thread, before the real `pthread_create`: its own next accesses are
/// checked, so the lines it writes have their owner when the new thread starts.
pub fn thread_coming() {
    set_checks(true);
}

/// In the creating thread, after the real `pthread_create` failed: alone again if no other
/// thread runs (as when the last one ends, `thread_exiting`).
pub fn thread_failed() {
    if LIVE.load(SeqCst) == 1 {
        set_checks(false);
        if LIVE.load(SeqCst) > 1 {
            set_checks(true);
        }
    }
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

// Copies of the flags the cold path reads, at their defaults until `init` (rt/src/options.rs
// defines each flag, its default and its range once).
const D: crate::options::Options = crate::options::Options::DEFAULT;
static THRESHOLD: AtomicU32 = AtomicU32::new(D.fs_threshold);
static SAMPLE: AtomicU32 = AtomicU32::new(D.fs_sample);
static WATCH: AtomicU32 = AtomicU32::new(D.fs_watch);
static WATCH_SAMPLES: AtomicU32 = AtomicU32::new(D.fs_watch_samples);
static BUDGET: AtomicU32 = AtomicU32::new(D.fs_budget);
static MAX_LINES: AtomicU32 = AtomicU32::new(D.fs_max_lines);
static INV_NS: AtomicU32 = AtomicU32::new(D.fs_inv_ns);

/// 0: not reserved yet, 1: reserved, 2: reservation failed.
static SHADOW: AtomicU32 = AtomicU32::new(0);
/// A module built with the sharing checks registered: only then can a line's shadow be other
/// than zero, and a free has lines to reset (a build without them skips that work per free).
static CHECKED_MODULE: AtomicBool = AtomicBool::new(false);
static SHADOW_ERRNO: AtomicU32 = AtomicU32::new(0);

/// Threads alive that the runtime knows of, and the time spent with more than one.
static LIVE: AtomicU32 = AtomicU32::new(1);
static PARALLEL_SINCE: AtomicU64 = AtomicU64::new(0);
static PARALLEL_NS: AtomicU64 = AtomicU64::new(0);

/// From `.preinit_array` (rt/csrc/tls.c), before any constructor: reserve the line shadow.
#[no_mangle]
pub extern "C" fn profcc_sharing_preinit() {
    reserve();
    set_checks(false);
}

fn reserve() {
    if SHADOW.load(Relaxed) != 0 {
        return;
    }
    match crate::mem::map_fixed_zero(LINE_SHADOW, LINE_SHADOW_SIZE) {
        Ok(()) => SHADOW.store(1, Relaxed),
        Err(errno) => {
            SHADOW_ERRNO.store(errno as u32, Relaxed);
            SHADOW.store(2, Relaxed);
        }
    }
}

/// A module registers: if it reads the shadow and the shadow could not be reserved, the
/// program cannot run instrumented; say why and how to fix it, and stop.
pub fn check_module(flags: u32) {
    if flags & FLAG_SHARING == 0 {
        return;
    }
    CHECKED_MODULE.store(true, Relaxed);
    reserve();
    if SHADOW.load(Relaxed) == 1 {
        crate::alloc::frees_clear_lines();
    }
    if SHADOW.load(Relaxed) == 2 {
        crate::log::stderr_line(&format!(
            "profcc: cannot reserve {} TiB of address space at {LINE_SHADOW:#x} for the cache-line shadow ({}); lift `ulimit -v`, use vm.overcommit_memory=0 or 1, or rebuild with PROFCC_INSTRUMENT=accesses",
            LINE_SHADOW_SIZE >> 40,
            match SHADOW_ERRNO.load(Relaxed) {
                0 => "the kernel placed it elsewhere".to_string(),
                e => std::io::Error::from_raw_os_error(e as i32).to_string(),
            }
        ));
        unsafe { libc::_exit(1) };
    }
}

/// From `ensure_init`: read the settings.
pub fn init() {
    let o = crate::options::get();
    THRESHOLD.store(o.fs_threshold, Relaxed);
    SAMPLE.store(o.fs_sample, Relaxed);
    WATCH.store(
        if o.fs_watch == 0 {
            0
        } else {
            o.fs_watch.next_power_of_two()
        },
        Relaxed,
    );
    WATCH_SAMPLES.store(o.fs_watch_samples, Relaxed);
    BUDGET.store(o.fs_budget, Relaxed);
    MAX_LINES.store(o.fs_max_lines, Relaxed);
    INV_NS.store(o.fs_inv_ns, Relaxed);
    init_clock();
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
    let me = ShadowWord::thread(id);
    let v = tvars();
    let w = WATCH.load(Relaxed) as u64;
    unsafe {
        *v.me = me.0;
        *v.rb = me.readers();
        *v.wmask = if w == 0 { u64::MAX } else { w - 1 };
        *v.countdown = next_period();
    }
    let _ = (stack_lo, stack_hi); // in the per-thread state (`Sharing::thread_start`)
    if !is_main {
        if LIVE.fetch_add(1, SeqCst) == 1 {
            PARALLEL_SINCE.store(crate::clock::now_ns(), Relaxed);
        }
        set_checks(true);
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
    if LIVE.fetch_sub(1, SeqCst) == 2 {
        // Off, unless a thread started meanwhile (its own store then comes after this load,
        // or this load sees it: the checks stay on whenever two threads run).
        set_checks(false);
        if LIVE.load(SeqCst) > 1 {
            set_checks(true);
        }
        let since = PARALLEL_SINCE.swap(0, Relaxed);
        if since != 0 {
            PARALLEL_NS.fetch_add(crate::clock::now_ns().saturating_sub(since), Relaxed);
        }
    }
}

/// After fork, in the child: one thread, and a profile of the child's own accesses (its
/// counts restart from zero too), so the parent's lines are not reported twice by a merged
/// report: the line shadow and the tracked-line table go back to zero pages. (The
/// tracked-line table and the settings are atomics; the analysis's one lock is `ENDED`'s.)
pub fn after_fork_child() {
    LIVE.store(1, Relaxed);
    set_checks(false);
    PARALLEL_SINCE.store(0, Relaxed);
    PARALLEL_NS.store(0, Relaxed);
    if SHADOW.load(Relaxed) == 1 {
        unsafe {
            libc::madvise(
                LINE_SHADOW as *mut libc::c_void,
                LINE_SHADOW_SIZE as usize,
                libc::MADV_DONTNEED,
            )
        };
    }
    let t = TABLE.load(Relaxed);
    if t != 0 {
        let len = MAX_LINES.load(Relaxed) as usize * core::mem::size_of::<Record>();
        unsafe { libc::madvise(t as *mut libc::c_void, len.max(4096), libc::MADV_DONTNEED) };
    }
    NEXT.store(0, Relaxed);
    DROPPED.store(0, Relaxed);
}

/// Per-thread state (the core's per-thread block): the thread's stack, for naming stack
/// objects, and when and where it ran, for the prediction (`ThreadTime` in the profile).
/// (The hooks' per-thread words are the hook ABI's TLS in rt/csrc/tls.c.)
#[repr(C)]
struct ThreadState {
    id: AtomicU32,
    /// Kernel thread id, to read a live thread's CPU clock at the dump.
    ktid: AtomicU32,
    stack_lo: AtomicU64,
    stack_hi: AtomicU64,
    start_ns: AtomicU64,
    /// 0 while the thread runs.
    end_ns: AtomicU64,
    cpu_ns: AtomicU64,
    /// Time it waited on a run queue, runnable but not running, up to its end (+1; 0: unknown).
    wait_ns: AtomicU64,
    /// CPUs seen: bit `c % 64` of word `c / 64` for CPU `c` (`c < CPU_SET_BITS`).
    cpus: CpuSet,
}

/// CPUs a set records exactly: glibc's `CPU_SETSIZE`, the most `sched_getcpu` reports on a
/// kernel built with the default `NR_CPUS` limit for distributions (higher numbers wrap).
const CPU_SET_BITS: usize = 1024;

/// The CPUs a thread was seen on (written by its own thread, read at the dump).
struct CpuSet([AtomicU64; CPU_SET_BITS / 64]);

impl CpuSet {
    /// Records the calling thread's current CPU.
    fn note_current(&self) {
        let c = unsafe { libc::sched_getcpu() };
        if c >= 0 {
            self.note(c as usize);
        }
    }

    fn note(&self, c: usize) {
        let c = c % CPU_SET_BITS;
        let (w, b) = (&self.0[c / 64], 1u64 << (c % 64));
        if w.load(Relaxed) & b == 0 {
            w.fetch_or(b, Relaxed);
        }
    }

    fn list(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for (i, w) in self.0.iter().enumerate() {
            let m = w.load(Relaxed);
            out.extend(
                (0..64)
                    .filter(|b| m & (1u64 << b) != 0)
                    .map(|b| (i * 64 + b) as u32),
            );
        }
        out
    }
}

// ---- measurements for the prediction (docs/model.md) ----

/// CPU time of the thread with kernel id `ktid` (a thread of this process), ns.
fn thread_cpu_ns(ktid: u32) -> u64 {
    // The kernel's per-thread CPU clock id: ~tid << 3 | CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED.
    let clock = ((!(ktid as i32)) << 3) | 6;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    if unsafe { libc::clock_gettime(clock as libc::clockid_t, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A thread that lived less than this (ns) is not asked for its run-queue wait at its end:
/// its wait counts as 0, off by at most this much. Reading `schedstat` (an `open` of a
/// `/proc` path, a read, a close) cost about 45 µs per thread on a 2-vCPU VM, more than
/// creating and joining the thread (docs/model.md, "Thread times").
pub const RUNQ_READ_FROM_NS: u64 = 1_000_000;

/// The time thread `ktid` (None: the calling thread) waited on a run queue while runnable,
/// ns: the second field of its `schedstat` (None without `CONFIG_SCHEDSTATS`). Without the
/// program's allocator: a stack buffer and plain system calls.
fn runq_wait_ns(ktid: Option<u32>) -> Option<u64> {
    use std::io::Write;
    let mut path = [0u8; 64];
    {
        let mut w = &mut path[..63];
        match ktid {
            None => write!(w, "/proc/thread-self/schedstat"),
            Some(t) => write!(w, "/proc/self/task/{t}/schedstat"),
        }
        .ok()?;
    }
    let fd = unsafe {
        libc::open(
            path.as_ptr() as *const libc::c_char,
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return None;
    }
    let mut buf = [0u8; 96];
    let n = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
    unsafe { libc::close(fd) };
    let text = core::str::from_utf8(buf.get(..usize::try_from(n).ok()?)?).ok()?;
    text.split_ascii_whitespace().nth(1)?.parse().ok()
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn ticks() -> u64 {
    let mut aux = 0u32;
    // rdtscp waits for the instructions before it (the timed load) to complete.
    unsafe { core::arch::x86_64::__rdtscp(&mut aux) }
}
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn ticks() -> u64 {
    crate::clock::now_ns()
}

/// The TSC and the monotonic clock at initialisation, for ticks per ns.
static TICKS0: AtomicU64 = AtomicU64::new(0);
static NS0: AtomicU64 = AtomicU64::new(0);
/// Ticks per ns (f64 bits; 0: not known yet, see [`ticks_per_ns`]).
static TPN: AtomicU64 = AtomicU64::new(0);
/// Ticks of a timed reload that hits (the least of a few at initialisation).
static HIT_TICKS: AtomicU64 = AtomicU64::new(0);

/// Ticks per ns, from the TSC and the monotonic clock since initialisation once a
/// millisecond has passed (before: 1, a placeholder for the first samples' clamp).
fn ticks_per_ns() -> f64 {
    let v = f64::from_bits(TPN.load(Relaxed));
    if v > 0.0 {
        return v;
    }
    let (t0, n0) = (TICKS0.load(Relaxed), NS0.load(Relaxed));
    let (t1, n1) = (ticks(), crate::clock::now_ns());
    if n0 == 0 || n1 < n0 + 1_000_000 || t1 <= t0 {
        return 1.0;
    }
    let v = (t1 - t0) as f64 / (n1 - n0) as f64;
    TPN.store(v.to_bits(), Relaxed);
    v
}

/// Ticks of one timed reload of `p`.
#[inline(always)]
fn timed_reload(p: *const u8) -> u64 {
    let t0 = ticks();
    unsafe { core::ptr::read_volatile(p) };
    ticks().saturating_sub(t0)
}

fn init_clock() {
    TICKS0.store(ticks(), Relaxed);
    NS0.store(crate::clock::now_ns(), Relaxed);
    let x = 0u8;
    let _ = timed_reload(&x);
    let hit = (0..32).map(|_| timed_reload(&x)).min().unwrap_or(0);
    HIT_TICKS.store(hit, Relaxed);
}

/// A sampled access to a tracked line, whose reload the door timed at `dt` ticks (the
/// program's own access comes right after the hook): add the latency beyond a hit to the
/// line's samples of its kind.
fn latency_sample(r: &Record, dt: u64, info: u64) {
    let write = info & INFO_WRITE != 0;
    let rmw = write && (info >> INFO_EXTRA_READS_SHIFT) & INFO_EXTRA_MAX as u64 != 0;
    let slot = &r.lat[if info & INFO_ATOMIC != 0 {
        3
    } else if rmw {
        2
    } else if write {
        1
    } else {
        0
    }];
    // A plain load and store, not an atomic add: the count is a sample size, and a lost
    // increment between two threads costs nothing, a locked add on a shared line per sample
    // would (the misses below are rare and exact).
    let n = slot.samples.load(Relaxed);
    slot.samples.store(n + 1, Relaxed);
    let hit = HIT_TICKS.load(Relaxed);
    // Only a miss costs: a hit's few ns over the fastest hit are the clock's own jitter.
    if dt > hit {
        let extra_ps = ((dt - hit) as f64 * 1000.0 / ticks_per_ns()) as u64;
        let extra_ps = extra_ps.min(profcc_analysis::sharing::MAX_LATENCY_SAMPLE_NS * 1000);
        if extra_ps >= profcc_analysis::sharing::MISS_NS * 1000 {
            slot.misses.fetch_add(1, Relaxed);
            slot.extra_ps.fetch_add(extra_ps, Relaxed);
        }
    }
    // Where the thread runs, for the profile's `ThreadTime::cpus`: now and then.
    if n.is_multiple_of(CPU_SAMPLE_EVERY) {
        let st = crate::analysis::current_state(&SHARING) as *const ThreadState;
        if let Some(st) = unsafe { st.as_ref() } {
            st.cpus.note_current();
        }
    }
}

/// Latency samples of a line between two looks at the sampling thread's CPU.
const CPU_SAMPLE_EVERY: u64 = 256;

/// A thread's figures for the prediction (None: it never started).
fn time_of(st: &ThreadState, now: u64) -> Option<schema::ThreadTime> {
    let start = st.start_ns.load(Relaxed);
    if start == 0 {
        return None;
    }
    let end = st.end_ns.load(Relaxed);
    let (end, cpu, wait) = if end == 0 {
        let k = st.ktid.load(Relaxed);
        (now, thread_cpu_ns(k), runq_wait_ns(Some(k)))
    } else {
        let w = st.wait_ns.load(Relaxed);
        (end, st.cpu_ns.load(Relaxed), w.checked_sub(1))
    };
    Some(schema::ThreadTime {
        id: st.id.load(Relaxed),
        start_ns: start,
        end_ns: end,
        cpu_ns: cpu,
        cpus: st.cpus.list(),
        accesses: 0, // filled from the thread table at the dump
        wait_ns: wait,
    })
}

/// What the dump needs of a thread that ended (its block went to a later thread): its
/// figures and its stack (id, lo, hi).
static ENDED: SpinLock<Vec<(schema::ThreadTime, (u32, u64, u64))>> = SpinLock::new(Vec::new());

/// The prediction's figures of every started thread.
fn thread_times() -> Vec<schema::ThreadTime> {
    let now = crate::clock::now_ns();
    let mut out = Vec::new();
    crate::analysis::each_state(&SHARING, |_, p| {
        out.extend(time_of(unsafe { &*(p as *const ThreadState) }, now));
    });
    // An ended one listed twice (it ended while its block was read): its final figures.
    let ended = ENDED.lock();
    out.retain(|t| !ended.iter().any(|e| e.0.id == t.id));
    out.extend(ended.iter().map(|e| e.0.clone()));
    drop(ended);
    out.sort_by_key(|t| t.id);
    out
}

/// This machine's key and `profcc calibrate`'s calibration of it, when its cache has one
/// (read at the dump: the sharing analysis's transfer costs, the regions' bandwidth).
pub fn calibration() -> (String, Option<profcc_analysis::sharing::Calibration>) {
    let key = profcc_analysis::sharing::machine_key(
        &std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default(),
        unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(0) as u32,
    );
    let cal = profcc_analysis::sharing::calibration_file(
        crate::env("XDG_CACHE_HOME")
            .as_deref()
            .map(std::ffi::OsStr::new),
        crate::env("HOME").as_deref().map(std::ffi::OsStr::new),
    )
    .and_then(|f| std::fs::read_to_string(f).ok())
    .and_then(|t| profcc_analysis::sharing::calibration_for(&t, &key));
    (key, cal)
}

/// The machine's figures: the hit baseline, the clock, and `profcc calibrate`'s transfer cost
/// when its cache has this machine.
fn machine() -> schema::Machine {
    let tpn = ticks_per_ns();
    let (key, cal) = calibration();
    schema::Machine {
        hit_ns: HIT_TICKS.load(Relaxed) as f64 / tpn,
        ticks_per_ns: tpn,
        transfer_ns: cal.as_ref().map(|c| c.transfer_ns),
        contended_slowdown: cal.as_ref().and_then(|c| c.contended_slowdown),
        slowdowns: cal.as_ref().and_then(|c| c.slowdowns),
        calibration: cal.map(|_| key),
    }
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
    out.extend(ENDED.lock().iter().map(|e| e.1).filter(|s| s.2 > s.1));
    out
}

/// The sharing analysis in the registry (`analyses/mod.rs`).
pub struct Sharing;
pub static SHARING: Sharing = Sharing;

impl Analysis for Sharing {
    fn name(&self) -> &'static str {
        "sharing"
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
    fn thread_coming(&self) {
        thread_coming();
    }
    fn thread_failed(&self) {
        thread_failed();
    }
    fn thread_start(&self, t: &ThreadStart) {
        // The thread's stack, for naming stack objects in the dump.
        if let Some(st) = unsafe { (t.state as *const ThreadState).as_ref() } {
            st.id.store(t.id, Relaxed);
            st.stack_lo.store(t.stack_lo, Relaxed);
            st.stack_hi.store(t.stack_hi, Relaxed);
            st.ktid.store(unsafe { libc::gettid() } as u32, Relaxed);
            st.start_ns.store(crate::clock::now_ns(), Relaxed);
            st.cpus.note_current();
        }
        thread_started(t.id, t.stack_lo as usize, t.stack_hi as usize, t.is_main);
    }
    fn thread_exit(&self) {
        let st = crate::analysis::current_state(&SHARING) as *const ThreadState;
        if let Some(st) = unsafe { st.as_ref() } {
            st.cpu_ns
                .store(thread_cpu_ns(unsafe { libc::gettid() } as u32), Relaxed);
            let end = crate::clock::now_ns();
            // A short life's wait is not read (it is at most that life).
            let wait = if end.saturating_sub(st.start_ns.load(Relaxed)) < RUNQ_READ_FROM_NS {
                Some(0)
            } else {
                runq_wait_ns(None)
            };
            st.wait_ns.store(wait.map_or(0, |w| w + 1), Relaxed);
            st.cpus.note_current();
            st.end_ns.store(end, Relaxed);
        }
        thread_exiting();
    }
    fn thread_retire(&self, _tid: u32, state: *mut u8) -> bool {
        let st = unsafe { &*(state as *const ThreadState) };
        if let Some(t) = time_of(st, crate::clock::now_ns()) {
            let stack = (
                st.id.load(Relaxed),
                st.stack_lo.load(Relaxed),
                st.stack_hi.load(Relaxed),
            );
            ENDED.lock().push((t, stack));
        }
        false
    }
    fn object_events(&self) -> ObjectEvents {
        ObjectEvents {
            alloc: false,
            free: true,
        }
    }
    fn object_free(&self, o: &crate::analysis::ObjectInfo) {
        object_freed(o);
    }
    fn fork_prepare(&self) {
        core::mem::forget(ENDED.lock());
    }
    fn fork_parent(&self) {
        unsafe { ENDED.force_unlock() };
    }
    fn fork_child(&self) {
        unsafe { ENDED.force_unlock() };
        // The parent's ended threads are the parent's profile's.
        ENDED.lock().clear();
        after_fork_child();
    }
    fn dump(&self, cx: &DumpContext, p: &mut profcc_schema::Profile) {
        p.sharing = snapshot(cx.site_index);
        if let Some(s) = &mut p.sharing {
            // The thread table's exact access counts (sorted by id), for the prediction's
            // access share: `predict` reads the sharing section only.
            for t in &mut s.threads {
                if let Ok(i) = p.threads.binary_search_by_key(&t.id, |x| x.id) {
                    t.accesses = p.threads[i].accesses;
                }
            }
        }
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
            lines: profcc_analysis::sharing::summary_lines(p, top),
        })
    }
}

// ---- tracked lines ----

#[repr(C)]
struct ByteSlot {
    /// The byte's readers and writers, one bit per thread id modulo 64: exact while no thread
    /// id of 64 or more touched the byte; then `ids` names them ([`ByteIds`]).
    readers: AtomicU64,
    writers: AtomicU64,
    /// [`ByteIds`]: the first two writers' and the first reader's real ids, and flags.
    ids: AtomicU64,
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

/// Latency samples of one kind of access (`schema::Latency`; the sum in picoseconds).
#[repr(C)]
struct LatSlot {
    samples: AtomicU64,
    misses: AtomicU64,
    extra_ps: AtomicU64,
}

#[repr(C)]
struct Record {
    addr: AtomicU64,
    /// Two-entry history: two u32 entries, each (id+1) << 1 | write; 0 = empty.
    table: AtomicU64,
    invalidations: AtomicU64,
    volume: AtomicU64,
    contended: AtomicU32,
    budget: AtomicU32,
    sites: [SiteSlot; SITE_SLOTS],
    objs: [ObjSlot; OBJ_SLOTS],
    bytes: [ByteSlot; 64],
    /// Loads, stores, read-modify-writes, atomics (`schema::LineLatency`).
    lat: [LatSlot; 4],
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

fn note_object(r: &Record, o: &crate::analysis::ObjectInfo) {
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

/// A freed block at most this many lines long has its lines' shadow words walked one by one;
/// a longer one has the tracked-line table searched instead (at most `fs_max_lines` records)
/// and its shadow pages given back whole.
const FREE_SCAN_LINES: u64 = 4096;
/// A freed block of fewer lines than a shadow page has words cannot free a whole shadow page:
/// `object_freed` does it in one pass over its words.
const ONE_PASS_LINES: u64 = (1 << profcc_abi::PAGE_SHIFT) >> profcc_abi::SHADOW_WORD_SHIFT;

/// A heap block is being freed. Tracked lines inside it learn the block, so the report names
/// its allocation site after it is gone (whatever its size). Then the lines wholly inside it
/// start afresh: the next block allocated there (by any thread) is a new object, and the
/// accesses of the freed one's threads must not count against it (no invalidation, no
/// shared byte across two lifetimes). A tracked line keeps its record (the freed block's
/// history, reported with the block); a new lifetime that contends gets a record of its own.
/// Lines the block shares with its neighbours are reset too, unless a live neighbour's record
/// needs them. One exception, for blocks under `ONE_PASS_LINES`: a cold line whose word is
/// the freeing thread's own owner word (it wrote the line last and no other thread accessed
/// it since) gets a freed word (`ShadowWord::freed`, as interpose.c's tail-path free does):
/// the thread that reuses its own line keeps writing it on the fast path, and [`slow`] takes
/// the word as a line nobody accessed for any other thread. Zeroing the word cost a
/// malloc-write-free loop a cold-door call and a compare-and-swap on a shadow line shared
/// with its neighbours' every round (docs/history/default.md, "Keeping the freeing thread's
/// own line word").
pub fn object_freed(o: &crate::analysis::ObjectInfo) {
    if !CHECKED_MODULE.load(Relaxed)
        || SHADOW.load(Relaxed) != 1
        || o.start >= APP_LIMIT
        || o.size == 0
    {
        return;
    }
    let first = o.start & !63;
    let end = o.start.saturating_add(o.size).min(APP_LIMIT);
    // Records the table holds (a word can name one past them when the table was full).
    let records = || {
        if TABLE.load(Relaxed) == 0 {
            0
        } else {
            (NEXT.load(Relaxed).min(MAX_LINES.load(Relaxed))) as u64
        }
    };
    let lines = (end - first).div_ceil(64);
    if lines < ONE_PASS_LINES {
        // The freeing thread's owner word (0: it has none, keep nothing).
        let me = unsafe { *tvars().me };
        // Most frees: every line's word once. A line with a record learns the block; a line
        // wholly inside the block goes to zero, one it shares with a neighbour (or the
        // allocator's headers) too, unless it is tracked and bytes outside the block were
        // accessed (a live neighbour's record stays; a cold neighbour loses at most the one
        // invalidation its next write would have been).
        let mut line = first;
        while line < end {
            let sh = word(line);
            let w = ShadowWord(sh.load(Relaxed));
            if w.0 != 0 {
                let inside = line >= o.start && line + 64 <= end;
                // What the word becomes, if it changes: zero, or the freeing thread's freed
                // word on its own line (it wrote last, nobody else accessed it since).
                let to = match w.record() {
                    None if me != 0 && w.is_fast_write(me) => Some(ShadowWord::freed(me).0),
                    None => Some(0),
                    Some(i) if i < records() => {
                        note_object(record(i), o);
                        (inside || !used_outside(record(i), line, o.start, end)).then_some(0)
                    }
                    Some(_) => inside.then_some(0),
                };
                if let Some(to) = to.filter(|&to| to != w.0) {
                    sh.store(to, Relaxed);
                }
            }
            line += 64;
        }
        return;
    }
    // A longer block: the same, with its inside lines' whole shadow pages given back.
    let n = records();
    if lines <= FREE_SCAN_LINES || lines <= n {
        let mut line = first;
        while line < end {
            let w = ShadowWord(word(line).load(Relaxed));
            if let Some(i) = w.record().filter(|&i| i < n) {
                note_object(record(i), o);
            }
            line += 64;
        }
    } else {
        for i in 0..n {
            let r = record(i);
            let a = r.addr.load(Relaxed);
            if first <= a && a < end {
                note_object(r, o);
            }
        }
    }
    // Lines wholly inside [o.start, end).
    let lo = (o.start + 63) & !63;
    let hi = end & !63;
    if lo < hi {
        clear_shadow(lo, hi);
    }
    // Lines it shares with its neighbours, as above.
    let last = (end - 1) & !63;
    let edges = [Some(first), (last != first).then_some(last)];
    for line in edges.into_iter().flatten() {
        if line >= o.start && line + 64 <= end {
            continue; // wholly inside: done above
        }
        let sh = word(line);
        let w = ShadowWord(sh.load(Relaxed));
        let keep = match w.record() {
            None => false,
            Some(i) if i < n => used_outside(record(i), line, o.start, end),
            Some(_) => true,
        };
        if !keep && w.0 != 0 {
            sh.store(0, Relaxed);
        }
    }
}

/// Were bytes of `line` outside `[start, end)` accessed while the line was tracked?
fn used_outside(r: &Record, line: u64, start: u64, end: u64) -> bool {
    r.bytes.iter().enumerate().any(|(off, b)| {
        let a = line + off as u64;
        (a < start || a >= end) && b.reads.load(Relaxed) + b.writes.load(Relaxed) != 0
    })
}

/// Reset the shadow words of the lines `[lo, hi)` to zero (cold, no owner, no reader):
/// whole shadow pages go back to the kernel, the words at the edges are stored (only if
/// not zero already, so untouched shadow stays unmapped).
fn clear_shadow(lo: u64, hi: u64) {
    const PAGE: u64 = 4096;
    let (a, b) = (shadow_of(lo), shadow_of(hi));
    let (pa, pb) = ((a + PAGE - 1) & !(PAGE - 1), b & !(PAGE - 1));
    let store = |from: u64, to: u64| {
        let mut x = from;
        while x < to {
            let w = unsafe { &*(x as *const AtomicU64) };
            if w.load(Relaxed) != 0 {
                w.store(0, Relaxed);
            }
            x += 8;
        }
    };
    if pb > pa {
        store(a, pa);
        unsafe {
            libc::madvise(
                pa as *mut libc::c_void,
                (pb - pa) as usize,
                libc::MADV_DONTNEED,
            )
        };
        store(pb, b);
    } else {
        store(a, b);
    }
}

/// A heavily written cold line (`fs_watch_samples` write-volume samples) whose writer changed
/// this many times is watched (tracked per byte until its budget is spent). With the
/// `fs_threshold` rule alone the verdict depended on the schedule: two threads taking turns on
/// a busy machine hand a line over once per time slice, not thousands of times, and a short
/// run never reached the threshold.
const PATTERN_INVALIDATIONS: u64 = 2;

/// Two threads are on the line's record: two writers, or a writer and a thread that only read
/// (thread ids modulo 64, as the per-byte masks keep them). Such a line is never retired.
fn shared_pattern(r: &Record) -> bool {
    let (mut w, mut rd) = (0u64, 0u64);
    for b in &r.bytes {
        w |= b.writers.load(Relaxed);
        rd |= b.readers.load(Relaxed);
    }
    w.count_ones() >= 2 || (w != 0 && rd & !w != 0)
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
        let w = ShadowWord(word(n).load(Relaxed));
        if w.is_hot() {
            let tb = record(w.hot_index()).table.load(Relaxed);
            return [tb & 0xffff_ffff, tb >> 32]
                .into_iter()
                .any(|e| e & 1 != 0 && e >> 1 != 0 && e >> 1 != t);
        }
        let o = w.owner();
        o != 0 && o != t
    })
}

/// Global site id of the access: `slot` is its group's counter in the thread's array, and
/// `info >> INFO_SITE_SHIFT` the access's distance from the group's first site.
fn site_of(slot: *mut u64, info: u64) -> u32 {
    let base = unsafe { *profcc_counts_slot() } as usize;
    (((slot as usize).wrapping_sub(base) / (COUNTER_STRIDE * 8)) as u32)
        .wrapping_add((info >> INFO_SITE_SHIFT) as u32)
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
    // 2 + ticks: the door timed a reload of the hot line (hooks/sharing_door.c).
    let timed = if due >= 2 { Some(due as u64 - 2) } else { None };
    slow(addr, info, me, slot, due != 0, timed);
}

/// Every line of [p, p+len) through the same checks as the inlined hooks: the range hooks'
/// door (`__profcc_range_slow`, hooks/sharing_door.c) calls it when one of them needs more
/// than the check.
#[no_mangle]
#[cold]
pub unsafe extern "C" fn profcc_range_lines(p: *const u8, len: u64, info: u64, slot: *mut u64) {
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
        let w = ShadowWord(word(a).load(Relaxed));
        let fast = if write {
            w.is_fast_write(me)
        } else {
            w.is_fast_read(rb)
        };
        // A tracked line's access is analysed when the thread's countdown runs out, as the
        // inlined hooks' are: its counts are scaled by `fs_sample`, so a range that went on
        // every time counted each of its accesses `fs_sample` times.
        let due = !fast && (!w.is_hot() || hot_due(v.countdown));
        if due {
            slow(
                a,
                (info & !INFO_SIZE_MASK) | n.min(INFO_SIZE_MASK),
                me,
                slot,
                true,
                None,
            );
        }
        a = next;
    }
}

/// One access of the calling thread to a tracked line: whether it is the sampled one (its
/// countdown ran out: re-armed here), as `--__profcc_hot_cd == 0` in the hooks.
unsafe fn hot_due(countdown: *mut u64) -> bool {
    *countdown = (*countdown).wrapping_sub(1);
    if *countdown == 0 {
        *countdown = next_period();
        true
    } else {
        false
    }
}

/// `due`: a hot line's access is the thread's sampled one (else it came for a volume sample).
#[allow(clippy::too_many_arguments)]
/// `timed`: the ticks of the door's reload of a hot line, for its latency samples.
unsafe fn slow(addr: u64, info: u64, me: u64, slot: *mut u64, due: bool, timed: Option<u64>) {
    let line = addr & !63;
    let sh = word(line);
    let t = ShadowWord(me).owner();
    let rb = ShadowWord(me).readers();
    let write = info & INFO_WRITE != 0;
    let sampled = info & INFO_SAMPLED != 0; // set for writes only (hooks/sharing_door.c)
    let multi = multi();
    for _ in 0..8 {
        let cur = sh.load(Relaxed);
        // A freed word stands for a line nobody accessed since the free but the other
        // threads that read it after (`object_freed`). Its owner's writes are fast, so the
        // first other thread's write after the owner's reuse counts no invalidation: at most
        // one lost per lifetime. The owner's own slow-path accesses end it too.
        let w = ShadowWord(cur);
        let w = if w.is_freed() {
            ShadowWord(w.readers() & !ShadowWord::reader_bit(w.owner()))
        } else {
            w
        };
        if w.is_hot() {
            let r = record(w.hot_index());
            if sampled && multi {
                r.volume.fetch_add(1, Relaxed);
            }
            if due {
                if let (true, Some(dt)) = (multi, timed) {
                    latency_sample(r, dt, info);
                }
                hot_access(r, w.hot_index(), sh, addr, info, me, slot, multi);
            }
            return;
        }
        if !write {
            // First read of the line by this thread since its last write.
            if sh
                .compare_exchange_weak(cur, cur | rb, Relaxed, Relaxed)
                .is_ok()
            {
                return;
            }
            continue;
        }
        let owner = w.owner();
        // A write after another thread's access: one invalidation (counted while >1 thread).
        let inval = multi && ((owner != 0 && owner != t) || (w.readers() & !rb) != 0);
        let volume = multi && sampled;
        let field = w.field();
        let mut new;
        let mut heat: Option<u64> = None; // index of the record the line becomes hot with
        if w.is_retired() {
            if field != ShadowWord::NO_RECORD {
                let r = record(field);
                if volume {
                    r.volume.fetch_add(1, Relaxed);
                }
                if inval {
                    // Tracked again at once: the next thread to write it after another is
                    // recorded too, so two threads that took turns both end up on record.
                    r.invalidations.fetch_add(1, Relaxed);
                    heat = Some(field);
                }
            }
            new = ShadowWord::retired(me, field).0;
        } else {
            let inv = w.invalidations() + inval as u64;
            let vol = (w.volume_samples() + volume as u64).min(ShadowWord::VOLUME_MAX);
            new = ShadowWord::cold(me, inv.min(ShadowWord::INVALIDATIONS_MAX), vol).0;
            let contended = inv >= THRESHOLD.load(Relaxed) as u64;
            let heavy = volume && vol >= WATCH_SAMPLES.load(Relaxed) as u64;
            let watch = !contended
                && heavy
                && (inv >= PATTERN_INVALIDATIONS || neighbour_of_other(line, t));
            if contended || watch {
                match new_record(line, contended, inv) {
                    Some(i) => {
                        record(i).volume.store(vol, Relaxed);
                        heat = Some(i);
                    }
                    None => new = ShadowWord::retired(me, ShadowWord::NO_RECORD).0,
                }
            }
        }
        if let Some(i) = heat {
            let r = record(i);
            r.budget.store(0, Relaxed);
            new = ShadowWord::hot(i).0;
            if sh.compare_exchange(cur, new, Relaxed, Relaxed).is_ok() {
                // The table starts with this write.
                r.table.store((t << 1) | 1, Relaxed);
                record_bytes(r, addr, info, slot);
                return;
            }
            continue;
        }
        if sh.compare_exchange_weak(cur, new, Relaxed, Relaxed).is_ok() {
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
    let t = ShadowWord(me).owner();
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
    record_bytes(r, addr, info, slot);
    // A watched line that stays uncontended is let go after its budget.
    if r.contended.load(Relaxed) == 0 {
        if r.invalidations.load(Relaxed) >= THRESHOLD.load(Relaxed) as u64 {
            r.contended.store(1, Relaxed);
        } else if r.budget.fetch_add(1, Relaxed) + 1 >= BUDGET.load(Relaxed) {
            if shared_pattern(r) {
                // Two threads' accesses are on record: the line stays tracked, whatever the
                // number of times the schedule let them alternate.
                r.contended.store(1, Relaxed);
                return;
            }
            let w = ShadowWord::hot(idx).0;
            let cold = ShadowWord::retired(me, idx).0;
            let _ = sh.compare_exchange(w, cold, Relaxed, Relaxed);
        }
    }
}

unsafe fn record_bytes(r: &Record, addr: u64, info: u64, slot: *mut u64) {
    let write = info & INFO_WRITE != 0;
    let off = (addr & 63) as usize;
    let size = (info & INFO_SIZE_MASK).max(1);
    // The real dense id + 1 (the owner word's id wraps at 65535; ids here never wrap).
    let me = threads::tls().tid_plus1 as u64;
    let b = &r.bytes[off];
    let extra_reads = ((info >> INFO_EXTRA_READS_SHIFT) & INFO_EXTRA_MAX as u64) as u32;
    let extra_writes = ((info >> INFO_EXTRA_WRITES_SHIFT) & INFO_EXTRA_MAX as u64) as u32;
    let id = me - 1;
    let bit = 1u64 << (id % 64);
    let mask = if write { &b.writers } else { &b.readers };
    if mask.load(Relaxed) & bit == 0 {
        mask.fetch_or(bit, Relaxed);
    }
    ByteIds::add(&b.ids, me, write);
    if write && extra_reads != 0 {
        if b.readers.load(Relaxed) & bit == 0 {
            b.readers.fetch_or(bit, Relaxed);
        }
        ByteIds::add(&b.ids, me, false);
    }
    if write {
        b.writes.fetch_add(1 + extra_writes, Relaxed);
        if extra_reads != 0 {
            b.reads.fetch_add(extra_reads, Relaxed);
        }
    } else {
        b.reads.fetch_add(1 + extra_reads, Relaxed);
        let w = b.writers.load(Relaxed);
        let ids = ByteIds(b.ids.load(Relaxed));
        if w != 0 && !ids.wrote(me, w) {
            b.cross_reads.fetch_add(1 + extra_reads, Relaxed);
        }
    }
    // Low half: the largest access starting here; high half: the largest write. The
    // writers' extent is the writes' own: a wide read (say a vectorised reduction over
    // several threads' counters) must not stretch one thread's writes over its neighbours'
    // bytes, which made false sharing look like true sharing.
    let size = size as u32;
    let cur = b.size.load(Relaxed);
    if cur & 0xffff < size || (write && cur >> 16 < size) {
        let _ = b.size.fetch_update(Relaxed, Relaxed, |v| {
            let any = (v & 0xffff).max(size);
            let w = if write { (v >> 16).max(size) } else { v >> 16 };
            Some(any | w << 16)
        });
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

/// The real ids behind a byte's residue masks, bounded whatever the number of threads: the
/// first two distinct writers and the first reader (id + 1 each, 20 bits, 0 = none; ids from
/// 2^20 - 1 up share the last value), a flag for a third writer, and flags saying a thread
/// with an id of 64 or more wrote / read the byte (then the masks are ambiguous: thread 65
/// has thread 1's bit). That is all the classification needs: one writer alone, two threads
/// writing the same byte, reads by a thread that is not a writer.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct ByteIds(u64);

impl ByteIds {
    const ID: u64 = 0xf_ffff;
    const W2_SHIFT: u32 = 20;
    const R1_SHIFT: u32 = 40;
    const MORE_W: u64 = 1 << 60;
    const BIG_W: u64 = 1 << 61;
    const BIG_R: u64 = 1 << 62;

    fn w1(self) -> u64 {
        self.0 & Self::ID
    }
    fn w2(self) -> u64 {
        (self.0 >> Self::W2_SHIFT) & Self::ID
    }
    fn r1(self) -> u64 {
        (self.0 >> Self::R1_SHIFT) & Self::ID
    }
    /// The word after thread `t` (id + 1) wrote or read the byte.
    fn with(self, t: u64, write: bool) -> ByteIds {
        let big = t > 64;
        let t = t.min(Self::ID);
        let mut v = self.0;
        if write {
            if big {
                v |= Self::BIG_W;
            }
            if self.w1() == t || self.w2() == t {
            } else if self.w1() == 0 {
                v |= t;
            } else if self.w2() == 0 {
                v |= t << Self::W2_SHIFT;
            } else {
                v |= Self::MORE_W;
            }
        } else {
            if big {
                v |= Self::BIG_R;
            }
            if self.r1() == 0 {
                v |= t << Self::R1_SHIFT;
            }
        }
        ByteIds(v)
    }
    /// Record thread `t`'s access in `a`; stores only when the word changes.
    fn add(a: &AtomicU64, t: u64, write: bool) {
        let mut cur = a.load(Relaxed);
        loop {
            let new = ByteIds(cur).with(t, write).0;
            if new == cur {
                return;
            }
            match a.compare_exchange_weak(cur, new, Relaxed, Relaxed) {
                Ok(_) => return,
                Err(x) => cur = x,
            }
        }
    }
    /// Whether thread `t` (id + 1) is among the writers (`wmask` the residue mask).
    fn wrote(self, t: u64, wmask: u64) -> bool {
        let bit = wmask & (1 << ((t - 1) % 64)) != 0;
        if self.0 & Self::BIG_W == 0 {
            bit
        } else {
            let t = t.min(Self::ID);
            self.w1() == t || self.w2() == t || (self.0 & Self::MORE_W != 0 && bit)
        }
    }
    /// Writers as real ids and whether more wrote than listed.
    fn writers(self, wmask: u64) -> (Vec<u32>, bool) {
        if self.0 & Self::BIG_W == 0 {
            return (ids(wmask), false);
        }
        let mut v: Vec<u32> = [self.w1(), self.w2()]
            .into_iter()
            .filter(|&t| t != 0)
            .map(|t| (t - 1) as u32)
            .collect();
        v.sort_unstable();
        (v, self.0 & Self::MORE_W != 0)
    }
    /// Readers as real ids and whether more read than listed.
    fn readers(self, rmask: u64) -> (Vec<u32>, bool) {
        if self.0 & Self::BIG_R == 0 {
            return (ids(rmask), false);
        }
        let v: Vec<u32> = (self.r1() != 0)
            .then(|| (self.r1() - 1) as u32)
            .into_iter()
            .collect();
        (v, rmask.count_ones() > 1)
    }
}

fn ids(mask: u64) -> Vec<u32> {
    (0..64).filter(|b| mask & (1u64 << b) != 0).collect()
}

// ---- the profile section ----

/// The `sharing` section: settings and every tracked line. `site_index` maps a global site id
/// to its index in the profile's `sites`.
pub fn snapshot(site_index: &dyn Fn(u32) -> Option<u32>) -> Option<schema::Sharing> {
    // No module with the checks: nothing was measured (no section, not an empty one; and
    // no reading of /proc/cpuinfo for the machine's key at every exit).
    if SHADOW.load(Relaxed) != 1 || !CHECKED_MODULE.load(Relaxed) {
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
        parallel_ns += crate::clock::now_ns().saturating_sub(since);
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
            let ids = ByteIds(b.ids.load(Relaxed));
            let readers = ids.readers(b.readers.load(Relaxed));
            let writers = ids.writers(b.writers.load(Relaxed));
            bytes.push(schema::ByteUse {
                offset: off as u32,
                size: {
                    let v = b.size.load(Relaxed);
                    if v >> 16 != 0 {
                        v >> 16
                    } else {
                        v & 0xffff
                    }
                },
                reads,
                writes,
                readers: readers.0,
                writers: writers.0,
                more_readers: readers.1,
                more_writers: writers.1,
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
            latency: {
                let lat = |k: usize| schema::Latency {
                    samples: r.lat[k].samples.load(Relaxed),
                    misses: r.lat[k].misses.load(Relaxed),
                    extra_ns: r.lat[k].extra_ps.load(Relaxed) / 1000,
                };
                schema::LineLatency {
                    load: lat(0),
                    store: lat(1),
                    rmw: lat(2),
                    atomic: lat(3),
                }
            },
        });
    }
    lines.sort_by_key(|l| l.addr);
    Some(schema::Sharing {
        settings,
        parallel_ns,
        lines,
        dropped_lines: DROPPED.load(Relaxed),
        threads: thread_times(),
        machine: Some(machine()),
    })
}

fn object_at(r: &Record, a: u64, line: u64, stacks: &[(u32, u64, u64)]) -> schema::ObjectRef {
    let noted = r.objs.iter().find_map(|s| {
        let start = s.start.load(Relaxed);
        let size = s.size.load(Relaxed);
        (start != 0 && start <= a && a < start + size.max(1)).then(|| crate::analysis::ObjectInfo {
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
            alloc_thread: (o.tid != crate::analysis::UNKNOWN_TID).then_some(o.tid),
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

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_sets_keep_cpus_above_63_apart() {
        let set = CpuSet([const { AtomicU64::new(0) }; CPU_SET_BITS / 64]);
        for c in [3, 67, 3, 1023, 1024 + 5] {
            set.note(c);
        }
        // 3 and 67 were one bit before (cpu % 64): on a 128-CPU machine two threads on them
        // looked like one CPU and their overlap was taken as none.
        assert_eq!(set.list(), vec![3, 5, 67, 1023]);
    }

    use super::*;

    #[test]
    fn shadow_words_are_the_abis() {
        // The address map and the word are tested in profcc-abi (abi/tests/address_map.rs);
        // here, that this module reads them through it.
        assert_eq!(shadow_of(0), LINE_SHADOW);
        assert_eq!(shadow_of(APP_LIMIT - 1), LINE_SHADOW + LINE_SHADOW_SIZE - 8);
        assert_eq!(ShadowWord::NO_RECORD, ShadowWord::FIELD);
    }

    #[test]
    fn byte_ids_are_exact_below_64_and_real_beyond() {
        // Threads 1..4: the residue masks are the ids.
        let (ids, mut w) = (AtomicU64::new(0), 0u64);
        for t in [2u64, 3, 4, 5] {
            ByteIds::add(&ids, t, true);
            w |= 1 << ((t - 1) % 64);
        }
        let b = ByteIds(ids.load(Relaxed));
        assert_eq!(b.writers(w), (vec![1, 2, 3, 4], false));
        assert!(b.wrote(3, w) && !b.wrote(6, w));
        // Threads 1 and 65 share bit 1 of the mask; the ids tell them apart.
        let ids = AtomicU64::new(0);
        ByteIds::add(&ids, 2, true);
        ByteIds::add(&ids, 66, true);
        ByteIds::add(&ids, 2, true);
        let b = ByteIds(ids.load(Relaxed));
        assert_eq!(b.writers(1 << 1), (vec![1, 65], false));
        assert!(b.wrote(66, 1 << 1) && !b.wrote(130, 1 << 1));
        ByteIds::add(&ids, 1000, true);
        assert_eq!(
            ByteIds(ids.load(Relaxed)).writers(1 << 1),
            (vec![1, 65], true)
        );
        // One reader above 63.
        let ids = AtomicU64::new(0);
        ByteIds::add(&ids, 394, false);
        assert_eq!(
            ByteIds(ids.load(Relaxed)).readers(1 << 9),
            (vec![393], false)
        );
    }

    #[test]
    fn table_record_is_small() {
        // fs_max_lines' help says "about 3.5 KiB each" (rt/src/options.rs).
        let n = core::mem::size_of::<Record>();
        assert!((3400..=3648).contains(&n), "{n}");
    }
}
