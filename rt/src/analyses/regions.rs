//! Regions of interest (issue 13): `PROFCC_ROI_BEGIN("name")` / `PROFCC_ROI_END("name")`
//! from `include/profcc.h`, per thread: how often each region ran and for how long (TSC,
//! calibrated; docs/regions.md). Nestable: a region open inside itself (recursion) counts
//! each execution and its time once, from the outermost begin to its end.
//!
//! Names are interned by content into one table of `MAX_REGIONS` (a literal's address
//! differs between translation units); each thread keeps its open regions on a stack of
//! `MAX_DEPTH` and its counts in its block. Nothing here allocates: a marker may run
//! anywhere the program runs.

use crate::analysis::{each_state, Analysis, DumpContext};
use crate::mem::SpinLock;
use crate::perf::{Group, Spec, Status};
use core::sync::atomic::{
    AtomicU32, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};
use profcc_abi::roi;
use profcc_schema::regions as schema;
use schema::{MAX_DEPTH, MAX_REGIONS, NAME_MAX};

mod live;

/// Modules with region counters a process can register (more: their counts are dropped).
const MAX_MODULES: usize = 64;

/// A registered module's region table, decoded when it registered (the dump never reads the
/// module's memory: it may be unloaded by then).
struct Module {
    table: roi::Table,
}
static MODULES: SpinLock<Vec<Module>> = SpinLock::new(Vec::new());
/// Counters of modules past `MAX_MODULES`, of threads without a block, and before the module
/// registered: nobody reads them. Mapped once, `MAX_COUNTERS` long (address space only).
static SCRATCH: core::sync::atomic::AtomicPtr<u64> =
    core::sync::atomic::AtomicPtr::new(core::ptr::null_mut());

fn scratch() -> *mut u64 {
    let p = SCRATCH.load(Acquire);
    if !p.is_null() {
        return p;
    }
    let bytes = roi::ARRAYS * roi::MAX_COUNTERS as usize * 8;
    let new = crate::mem::map(bytes, true) as *mut u64;
    match SCRATCH.compare_exchange(core::ptr::null_mut(), new, Release, Acquire) {
        Ok(_) => new,
        Err(won) => {
            crate::mem::unmap(new as *mut u8, bytes);
            won
        }
    }
}

/// The interned names: `NAMES[i]` holds region i's name, `COUNT` of them are in use. An entry
/// below `COUNT` never changes, so a lookup reads them without the lock (`COUNT` is published
/// after its entry is written); only adding a name takes it.
struct Names {
    text: [[u8; NAME_MAX]; MAX_REGIONS],
    len: [u8; MAX_REGIONS],
}
static NAMES: SpinLock<Names> = SpinLock::new(Names {
    text: [[0; NAME_MAX]; MAX_REGIONS],
    len: [0; MAX_REGIONS],
});
static COUNT: AtomicU32 = AtomicU32::new(0);
/// Markers that could not be filed: a name past `MAX_REGIONS`, a begin past `MAX_DEPTH`, a
/// marker before the thread had its block.
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// Ends with no open region of that name (the note says how many).
static UNMATCHED_ENDS: AtomicU64 = AtomicU64::new(0);

/// The class an OpenMP team's threads count in (`roi::TEAM`): the class of the last
/// execution that fetched its counters by class, in whichever thread (the fork follows).
static TEAM_CLASS: AtomicU32 = AtomicU32::new(roi::EXACT);

/// `schema::EVENTS` as perf events.
const NEV: usize = schema::EVENTS.len();
const SPECS: [Spec; NEV] = [
    Spec::INSTRUCTIONS,
    Spec::L1D_READ_MISSES,
    Spec::CACHE_MISSES,
    Spec::PAGE_FAULTS,
];
/// What this process's groups could count.
static EVENTS: Status = Status::new();

/// A thread's counts of one region.
#[repr(C)]
struct Cell {
    executions: AtomicU64,
    /// Ticks of the `EXACT` and of the `SAMPLED` executions (weighed apart at the dump), and
    /// how many executions were counted.
    ticks: [AtomicU64; roi::ARRAYS],
    counted: AtomicU64,
    /// Perf events of the counted executions that read them, by class as `ticks`, and how
    /// many did.
    events: [[AtomicU64; NEV]; roi::ARRAYS],
    event_executions: [AtomicU64; roi::ARRAYS],
    /// Calls into counted functions counted at 1 in `roi_sample` (each weighs N) while this
    /// region was the innermost open one (docs/regions.md, "Sampling inside an execution").
    call_samples: AtomicU64,
    /// Executions timed at one in `TIME_SAMPLE` (each weighs it in `ticks`; docs/regions.md,
    /// "Time").
    time_samples: AtomicU64,
}

/// Slots of a thread's cache of constant names' ids.
const LIT_SLOTS: usize = 16;

/// The id of the constant name at `name`: by its address once seen (`intern`: may add it).
#[inline(always)]
unsafe fn lit_id(s: &mut State, name: *const libc::c_char, intern_it: bool) -> Option<u32> {
    let key = name as usize;
    let slot = &s.lits[(key >> 3) % LIT_SLOTS];
    if slot.0 == key && key != 0 {
        return Some(slot.1);
    }
    lit_id_first(s, name, intern_it)
}

/// `lit_id` of a name not in the thread's cache: interned (or looked up) and cached.
#[cold]
#[inline(never)]
unsafe fn lit_id_first(s: &mut State, name: *const libc::c_char, intern_it: bool) -> Option<u32> {
    let key = name as usize;
    let slot = &mut s.lits[(key >> 3) % LIT_SLOTS];
    let id = if intern_it {
        intern(name_bytes(name))
    } else {
        lookup(name_bytes(name))
    }?;
    *slot = (key, id);
    Some(id)
}

/// An open region (a counted execution: a plain one opens nothing): its id, its class
/// (`EXACT` or `SAMPLED`), the TSC at its begin, what its time weighs (`time_weight`: 0 not
/// timed, then `t0` is 0), and whether it read the perf events at its begin (in
/// `State::event_start`).
#[derive(Clone, Copy)]
struct Open {
    id: u32,
    class: u32,
    t0: u64,
    w: u32,
    ev: bool,
}

/// A thread's block: its counts, then its stack of open regions.
#[repr(C)]
struct State {
    cells: [Cell; MAX_REGIONS],
    /// Open instances of each region in this thread (time is taken at the outermost).
    open: [u32; MAX_REGIONS],
    /// The countdown to each region's next sampled execution in this thread (0: not
    /// started).
    countdown: [u32; MAX_REGIONS],
    stack: [Open; MAX_DEPTH],
    /// The perf events at the begin of each open region that read them (`Open::ev`).
    event_start: [[u64; NEV]; MAX_DEPTH],
    depth: u32,
    /// Odd while `end` changes the stack and the counts: a snapshot read by another thread
    /// in the meantime is taken again (a sequence lock; the owner never waits).
    seq: AtomicU32,
    /// Region ids of constant names by address (the pass's take and literal end: a name the
    /// program cannot rewrite), direct-mapped; address 0: empty.
    lits: [(usize, u32); LIT_SLOTS],
    /// The thread's region counters of each registered module (null: not yet used; as long
    /// as the module's `table.counters`).
    arrays: [*mut u64; MAX_MODULES],
    /// The thread's perf event group: `GROUP_UNTRIED`, `GROUP_OPEN` (in `group`) or
    /// `GROUP_REFUSED`.
    group_state: u8,
    group: core::mem::MaybeUninit<Group>,
    /// The thread's `__profcc_roi_skip` (rt/csrc/tls.c; null before the thread started and
    /// after it ended): word 0 the gate, then the sampled regions' slots.
    skip: *mut u64,
    /// Each slot's region (id + 1; 0 free; `SHARED`: two regions' names hash to it, never
    /// armed again) and the run it was armed with: `skip_set - (*slot >> 32)` plain
    /// executions ran since without the runtime.
    skip_owner: [u32; roi::SKIP_WORDS],
    skip_set: [u32; roi::SKIP_WORDS],
    /// Held by the owner while it arms or reclaims a slot and by another thread reading the
    /// slots (the dump, a snapshot): a thread that ends clears `skip` under it, so nobody
    /// reads its thread-locals after they are gone.
    skip_lock: SpinLock<()>,
    /// The thread's `__profcc_roi_calls` (rt/csrc/tls.c; null before the thread started and
    /// after it ended; docs/regions.md, "Sampling inside an execution").
    calls: *mut u64,
    /// Calls of the innermost counted execution still counted exactly (its first N).
    call_budget: u32,
    /// The call word and `call_budget` when each open region began (back at its end; kept
    /// only with `roi_sample` > 1).
    saved_calls: [(u64, u32); MAX_DEPTH],
    /// Sampled calls running (their code counts in the sampled array; calls inside them are
    /// counted, not sampled again).
    call_depth: u32,
    /// The call word after the running sampled call (the next gap, drawn at its start), and
    /// the OpenMP team class before it.
    call_next: u64,
    call_team: u32,
    /// xorshift64 state for the gaps between sampled calls and timed executions (0: not
    /// seeded).
    rng: u64,
    /// Short executions (`time_weight`) until the next timed one, this one included (0: not
    /// drawn).
    time_gap: u64,
}

/// `State::skip_owner` of a slot two regions' names share.
const SHARED: u32 = u32::MAX;

extern "C" {
    /// The calling thread's `__profcc_roi_skip` (rt/csrc/tls.c).
    fn profcc_roi_skip_slot() -> *mut u64;
    /// The calling thread's `__profcc_roi_calls` (rt/csrc/tls.c).
    fn profcc_roi_calls_slot() -> *mut u64;
}

/// Sets the thread's call word (no-op before the thread started and after it ended).
#[inline]
fn set_calls(s: &State, v: u64) {
    if !s.calls.is_null() {
        unsafe { core::ptr::write_volatile(s.calls, v) };
    }
}

#[inline]
fn get_calls(s: &State) -> u64 {
    if s.calls.is_null() {
        return 0;
    }
    unsafe { core::ptr::read_volatile(s.calls) }
}

/// Calls (or executions) until the next sampled one, this one included: geometric with mean
/// `n` (each is sampled with probability exactly 1/n, independently of the others: no period
/// of the program's calls can line up with it).
fn call_gap(s: &mut State, n: u64) -> u64 {
    if s.rng == 0 {
        s.rng = (crate::clock::tsc() ^ (s as *const State as u64)) | 1;
    }
    let mut x = s.rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    s.rng = x;
    gap_of(x, n)
}

/// The geometric gap (mean `n`) for the random word `x`: 1 + floor(ln(u) / ln(1 - 1/n)),
/// u = (top 53 bits of x, plus 1) / 2^53 in (0, 1].
fn gap_of(x: u64, n: u64) -> u64 {
    if n <= 1 {
        return 1;
    }
    let u = ((x >> 11) + 1) as f64 / (1u64 << 53) as f64;
    let ln = crate::alloc::ln;
    let g = ln(u) / ln(1.0 - 1.0 / n as f64);
    1 + (g as u64).min(u64::MAX / 4)
}

/// Reclaims slot `slot` from its region: the plain executions it ran without the runtime go
/// into the region's executions, those it had left go back to the region's countdown, and the
/// slot is 0 (the next begin calls the runtime). The owner thread only.
fn reclaim(s: &mut State, slot: usize) {
    let owner = s.skip_owner[slot];
    if owner == 0 || owner == SHARED || s.skip.is_null() {
        return;
    }
    let id = owner as usize - 1;
    let _g = s.skip_lock.lock();
    let p = unsafe { s.skip.add(slot) };
    let left = (unsafe { core::ptr::read_volatile(p) } >> 32) as u32;
    let ran = s.skip_set[slot].wrapping_sub(left) as u64;
    let c = &s.cells[id].executions;
    c.store(c.load(Relaxed) + ran, Relaxed);
    s.countdown[id] += left;
    unsafe { core::ptr::write_volatile(p, 0) };
    s.skip_set[slot] = 0;
}

/// The plain executions of region `id` that ran without the runtime since their slots were
/// armed (another thread's, for the dump and snapshots). The caller holds `skip_lock`, and
/// reads the executions under it too: a reclaim moves these into them.
fn skipped(s: &State, id: usize) -> u64 {
    let mut out = 0;
    let p = unsafe { core::ptr::read_volatile(&s.skip) };
    if p.is_null() {
        return out;
    }
    for slot in 1..roi::SKIP_WORDS {
        let owner = unsafe { core::ptr::read_volatile(&s.skip_owner[slot]) };
        if owner == 0 || owner == SHARED {
            continue;
        }
        if owner as usize != id + 1 {
            continue;
        }
        let set = unsafe { core::ptr::read_volatile(&s.skip_set[slot]) };
        let left = (unsafe { core::ptr::read_volatile(p.add(slot)) } >> 32) as u32;
        out += set.wrapping_sub(left) as u64;
    }
    out
}

/// The thread's gate: shut (0) while a counted region is open in it, so that a sampled
/// region inside runs counted (it takes the enclosing execution's class).
#[inline]
fn set_gate(s: &State) {
    if !s.skip.is_null() {
        let v = if s.depth > 0 { 0 } else { roi::SKIP_OPEN };
        unsafe { core::ptr::write_volatile(s.skip, v) };
    }
}

const GROUP_UNTRIED: u8 = 0;
const GROUP_OPEN: u8 = 1;
const GROUP_REFUSED: u8 = 2;

/// The thread's perf event group, opened on first use.
fn group(s: &mut State) -> Option<Group> {
    if s.group_state == GROUP_UNTRIED {
        match Group::open(&SPECS, &EVENTS) {
            Some(g) => {
                s.group.write(g);
                s.group_state = GROUP_OPEN;
            }
            None => s.group_state = GROUP_REFUSED,
        }
    }
    (s.group_state == GROUP_OPEN).then(|| unsafe { s.group.assume_init() })
}

/// Closes the thread's group (its end, or a fork child's: an inherited group counts the
/// parent's thread).
fn close_group(s: &mut State) {
    if s.group_state == GROUP_OPEN {
        unsafe { s.group.assume_init() }.close();
    }
    s.group_state = GROUP_UNTRIED;
}

/// `roi_events`, read once (0: never).
fn events_min_us() -> u64 {
    crate::options::get().roi_events as u64
}

/// `roi_events` in TSC ticks: 0 not known yet, `u64::MAX` never read events.
static EVENT_TICKS: AtomicU64 = AtomicU64::new(0);

/// Does this counted execution of region `id` read perf events? Its first does; later ones
/// while the counted executions' mean time is at least `roi_events` microseconds. Inline:
/// a few loads and a multiply on every counted begin, the rest out of line.
#[inline]
fn wants_events(s: &State, id: usize) -> bool {
    let threshold = EVENT_TICKS.load(Relaxed);
    let c = &s.cells[id];
    let counted = c.counted.load(Relaxed);
    if threshold == 0 {
        return event_ticks() != u64::MAX && counted == 0;
    }
    threshold != u64::MAX && (counted == 0 || mean_at_least(c, counted, threshold))
}

/// The mean ticks of region `c`'s `counted` executions are at least `threshold` (without a
/// division; the ticks of executions timed at one in `TIME_SAMPLE` are weighed: unbiased).
#[inline]
fn mean_at_least(c: &Cell, counted: u64, threshold: u64) -> bool {
    c.ticks[0].load(Relaxed) + c.ticks[1].load(Relaxed) >= threshold.saturating_mul(counted)
}

/// `roi_time` in TSC ticks: 0 not known yet, `u64::MAX` time every execution.
static TIME_TICKS: AtomicU64 = AtomicU64::new(0);

/// What the time of this counted execution of region `id` weighs (the outermost instance of
/// it in the thread): 1, timed; `TIME_SAMPLE`, timed for itself and 15 others; 0, not timed.
/// Every execution is timed while the region's executions last at least `roi_time` on
/// average, and its first `TIME_EXACT_FIRST` in the thread; a shorter one is timed with
/// probability exactly 1/`TIME_SAMPLE` (geometric gaps over the thread's short executions),
/// decided before it runs: the weighed sum is an unbiased estimate of the time.
#[inline]
fn time_weight(s: &mut State, id: usize) -> u32 {
    let mut threshold = TIME_TICKS.load(Relaxed);
    if threshold == 0 {
        threshold = time_ticks();
    }
    let c = &s.cells[id];
    let counted = c.counted.load(Relaxed);
    if threshold == u64::MAX
        || counted < schema::TIME_EXACT_FIRST
        || mean_at_least(c, counted, threshold)
    {
        return 1;
    }
    if s.time_gap == 0 {
        s.time_gap = call_gap(s, schema::TIME_SAMPLE);
    }
    s.time_gap -= 1;
    if s.time_gap == 0 {
        schema::TIME_SAMPLE as u32
    } else {
        0
    }
}

/// Sets `TIME_TICKS` from `roi_time` (the tick rate measured once).
#[cold]
#[inline(never)]
fn time_ticks() -> u64 {
    let t = match crate::options::get().roi_time {
        0 => u64::MAX,
        us => (us as u64)
            .saturating_mul(crate::clock::early_ticks_per_us())
            .clamp(1, u64::MAX - 1),
    };
    TIME_TICKS.store(t, Relaxed);
    t
}

/// Sets `EVENT_TICKS` from `roi_events` (the tick rate measured once).
#[cold]
#[inline(never)]
fn event_ticks() -> u64 {
    let t = match events_min_us() {
        0 => u64::MAX,
        us => us.saturating_mul(crate::clock::early_ticks_per_us()).max(1),
    };
    EVENT_TICKS.store(t, Relaxed);
    t
}

/// Reads the perf events at the begin of a counted execution (the open region about to be
/// pushed); whether it did. Out of the markers' line.
#[cold]
#[inline(never)]
fn events_begin(s: &mut State) -> bool {
    let Some(v) = group(s).and_then(|g| g.read()) else {
        return false;
    };
    s.event_start[s.depth as usize].copy_from_slice(&v[..NEV]);
    true
}

/// A module's constructor: its region table (`profcc_abi::roi::RoiDesc`).
#[no_mangle]
pub unsafe extern "C" fn __profcc_roi_register(desc: *const roi::RoiDesc) {
    let d = &*desc;
    if d.version != roi::VERSION {
        DROPPED.fetch_add(1, Relaxed);
        return;
    }
    let words = core::slice::from_raw_parts(d.table, d.words as usize);
    // The descriptor's count sizes each thread's array; the table's is what the dump reads.
    let Some(table) = roi::Table::unpack(words).filter(|t| t.counters == d.counters) else {
        DROPPED.fetch_add(1, Relaxed);
        return;
    };
    let mut m = MODULES.lock();
    if m.len() == MAX_MODULES {
        DROPPED.fetch_add(1, Relaxed);
        return;
    }
    m.push(Module { table });
    *d.slot = (m.len() - 1) as u32;
}

/// The calling thread's `EXACT` counter array for a module (a function that counts for a
/// region it cannot sample calls it at entry; its clones get the array as their first
/// argument). Never null.
#[no_mangle]
pub unsafe extern "C" fn __profcc_roi_counters(desc: *const roi::RoiDesc) -> *mut u64 {
    counters_of(desc, roi::EXACT)
}

/// The calling thread's counter array of `class` for a module: a sampled region's counted
/// code fetches it after its begin; an OpenMP outlined function's clone fetches `roi::TEAM`
/// at entry (the class of the execution that forked it). Never null.
#[no_mangle]
pub unsafe extern "C" fn __profcc_roi_counters_of(
    desc: *const roi::RoiDesc,
    class: u32,
) -> *mut u64 {
    let class = if class == roi::TEAM {
        TEAM_CLASS.load(Relaxed)
    } else {
        if TEAM_CLASS.load(Relaxed) != class {
            TEAM_CLASS.store(class, Relaxed);
        }
        class
    };
    counters_of(desc, class)
}

#[inline(always)]
unsafe fn counters_of(desc: *const roi::RoiDesc, class: u32) -> *mut u64 {
    let d = &*desc;
    let slot = *d.slot as usize;
    let second = if class == roi::SAMPLED {
        d.counters as usize
    } else {
        0
    };
    let Some(s) = state().filter(|_| slot < MAX_MODULES) else {
        return scratch().add(second.min(roi::MAX_COUNTERS as usize));
    };
    if s.arrays[slot].is_null() {
        return first_counters(s, d, slot, second);
    }
    s.arrays[slot].add(second)
}

/// The thread's counter arrays of module `slot`, mapped on its first use (`counters_of`).
#[cold]
#[inline(never)]
unsafe fn first_counters(s: &mut State, d: &roi::RoiDesc, slot: usize, second: usize) -> *mut u64 {
    let bytes = (roi::ARRAYS * d.counters as usize * 8).max(8);
    // Resident from the start (up to `POPULATE_MAX`): the region whose code fetched them
    // takes no page fault of profcc's in its perf events.
    let p = if bytes <= POPULATE_MAX {
        crate::mem::map_populated(bytes)
    } else {
        crate::mem::map(bytes, true)
    } as *mut u64;
    if p.is_null() {
        return scratch().add(second.min(roi::MAX_COUNTERS as usize));
    }
    // Published for the dump, which reads other threads' blocks.
    core::ptr::write_volatile(&mut s.arrays[slot], p);
    p.add(second)
}

/// Largest counter arrays (bytes) mapped resident.
const POPULATE_MAX: usize = 1 << 20;

/// Adds `count` executions of `mix` to `c`.
fn add_mix(c: &mut schema::Counts, mix: &roi::Mix, count: u64) {
    c.instructions += count * mix.instructions as u64;
    for s in 0..roi::SPACES {
        c.loads[s] += count * mix.loads[s] as u64;
        c.stores[s] += count * mix.stores[s] as u64;
        c.load_bytes[s] += count * mix.load_bytes[s] as u64;
        c.store_bytes[s] += count * mix.store_bytes[s] as u64;
    }
    c.int_ops += count * mix.int_ops as u64;
    c.fp_ops += count * mix.fp_ops as u64;
    c.vector_ops += count * mix.vector_ops as u64;
    c.branches += count * mix.branches as u64;
    c.calls += count * mix.calls as u64;
    c.uncovered_calls += count * mix.uncovered_calls as u64;
}

/// Every region's counts in one thread, by region name, from its counter arrays. `live`: the
/// thread may be inside a region (a snapshot): a block count the unbalanced flow wrapped
/// below zero is taken as 0.
fn thread_counts(
    s: &State,
    modules: &[Module],
    period: u64,
    live: bool,
) -> Vec<(String, schema::Counts)> {
    let mut out: Vec<(String, schema::Counts)> = Vec::new();
    fn at(out: &mut Vec<(String, schema::Counts)>, name: &str) -> usize {
        match out.iter().position(|(n, _)| n == name) {
            Some(i) => i,
            None => {
                out.push((name.into(), schema::Counts::default()));
                out.len() - 1
            }
        }
    }
    for (slot, m) in modules.iter().enumerate() {
        let p = unsafe { core::ptr::read_volatile(&s.arrays[slot]) };
        if p.is_null() {
            continue;
        }
        let t = &m.table;
        let n = t.counters as usize;
        // EXACT + N x SAMPLED, counter by counter (the flow solution is linear in them).
        let arrays = unsafe { core::slice::from_raw_parts(p, roi::ARRAYS * n) };
        let (exact, sampled) = arrays.split_at(n);
        let counters: Vec<u64> = exact
            .iter()
            .zip(sampled)
            .map(|(&e, &x)| e.wrapping_add(x.wrapping_mul(period)))
            .collect();
        let counters = &counters[..];
        for g in &t.graphs {
            let Some(counts) = g.node_counts(counters) else {
                continue;
            };
            if counts.iter().all(|&c| c == 0) {
                continue;
            }
            let increments = g.increments(counters, &counts);
            for (&(_, _, cx), &k) in g.nodes.iter().zip(&increments) {
                for &r in t.contexts.get(cx as usize).map_or(&[][..], |v| &v[..]) {
                    if let (Some(name), true) = (t.names.get(r as usize), k > 0) {
                        let i = at(&mut out, name);
                        out[i].1.counter_increments += k;
                    }
                }
            }
            for (&(mix, _, cx), &n) in g.nodes.iter().zip(&counts) {
                if n == 0 || (live && n > 1 << 62) {
                    continue;
                }
                let (Some(mix), Some(regions)) =
                    (t.mixes.get(mix as usize), t.contexts.get(cx as usize))
                else {
                    continue;
                };
                for &r in regions {
                    if let Some(name) = t.names.get(r as usize) {
                        let i = at(&mut out, name);
                        add_mix(&mut out[i].1, mix, n);
                    }
                }
            }
        }
        for d in &t.dyns {
            let n = counters.get(d.counter as usize).copied().unwrap_or(0);
            if n == 0 {
                continue;
            }
            for &r in t
                .contexts
                .get(d.context as usize)
                .map_or(&[][..], |v| &v[..])
            {
                if let Some(name) = t.names.get(r as usize) {
                    let i = at(&mut out, name);
                    let c = &mut out[i].1;
                    if let Some(x) = c.load_bytes.get_mut(d.read as usize) {
                        *x += n;
                    }
                    if let Some(x) = c.store_bytes.get_mut(d.write as usize) {
                        *x += n;
                    }
                }
            }
        }
    }
    out
}

/// The C string's bytes, cut at `NAME_MAX`.
unsafe fn name_bytes<'a>(name: *const libc::c_char) -> &'a [u8] {
    if name.is_null() {
        return b"(null)";
    }
    let n = libc::strnlen(name, NAME_MAX);
    core::slice::from_raw_parts(name as *const u8, n)
}

/// The region id of `name` among the first `n` names.
fn find(name: &[u8], n: usize) -> Option<u32> {
    let t = NAMES.data_ptr() as *const Names;
    // Only entries below `n` are read: whoever adds a name writes the one at `n`.
    (0..n)
        .find(|&i| unsafe {
            let len = core::ptr::addr_of!((*t).len[i]).read() as usize;
            let text = &*core::ptr::addr_of!((*t).text[i]);
            &text[..len] == name
        })
        .map(|i| i as u32)
}

/// The region id of `name`, if it was ever seen.
fn lookup(name: &[u8]) -> Option<u32> {
    find(name, COUNT.load(Acquire) as usize)
}

/// The region id of `name`, interned on first sight (None: the table is full).
fn intern(name: &[u8]) -> Option<u32> {
    if let Some(id) = lookup(name) {
        return Some(id);
    }
    let mut t = NAMES.lock();
    let n = COUNT.load(Relaxed) as usize;
    if let Some(id) = find(name, n) {
        return Some(id);
    }
    if n == MAX_REGIONS {
        return None;
    }
    t.text[n][..name.len()].copy_from_slice(name);
    t.len[n] = name.len() as u8;
    COUNT.store(n as u32 + 1, Release);
    Some(n as u32)
}

std::thread_local! {
    /// The calling thread's block, set at its start (`current_state`'s answer, kept: the
    /// markers' hot path reads one thread-local instead of scanning the registry). A block
    /// this analysis keeps at the thread's end stays valid; one it lets go is unset here.
    static MINE: core::cell::Cell<*mut State> = const { core::cell::Cell::new(core::ptr::null_mut()) };
}

#[inline]
fn state() -> Option<&'static mut State> {
    let p = MINE.with(|m| m.get());
    unsafe { p.as_mut() }
}

/// `roi_sample` > 1, set at the runtime's start (the markers' hot path reads one byte, not
/// the options).
static CALL_SAMPLING: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// `roi_sample`, read once.
fn period() -> u64 {
    crate::options::get().roi_sample.max(1) as u64
}

/// The class of the next execution of region `id` in this thread that decides for itself:
/// the region's first `roi_sample` executions in the thread are `EXACT`; after them one in
/// `roi_sample` of those that decide, from a random start, is `SAMPLED` and the rest are
/// `PLAIN` (each is sampled with probability 1/N: the counts scaled by N are unbiased).
fn decide(s: &mut State, id: usize) -> u32 {
    let n = period();
    // Executions begun so far: the completed ones and those still open.
    let k = s.cells[id].executions.load(Relaxed) + s.open[id] as u64;
    if n == 1 || k < n {
        return roi::EXACT;
    }
    if s.countdown[id] == 0 {
        // The random start: the low bits of the TSC.
        s.countdown[id] = (crate::clock::tsc() % n) as u32 + 1;
    }
    s.countdown[id] -= 1;
    if s.countdown[id] == 0 {
        s.countdown[id] = n as u32;
        roi::SAMPLED
    } else {
        roi::PLAIN
    }
}

/// Opens region `name` (`literal`: a constant, keyed by address); `own`: the execution
/// decides its class (a sampled begin) unless an open counted region in this thread already
/// did; otherwise it takes the innermost open region's class (`EXACT` when none is open:
/// code that always counts).
unsafe fn begin(name: *const libc::c_char, literal: bool, own: bool, slot: u32, tag: u32) -> u32 {
    let Some(s) = state() else {
        DROPPED.fetch_add(1, Relaxed);
        return roi::PLAIN;
    };
    let id = if literal {
        lit_id(s, name, true)
    } else {
        intern(name_bytes(name))
    };
    let Some(id) = id else {
        DROPPED.fetch_add(1, Relaxed);
        return roi::PLAIN;
    };
    if s.depth as usize == MAX_DEPTH {
        DROPPED.fetch_add(1, Relaxed);
        return roi::PLAIN;
    }
    // Only counted executions are on the stack.
    let outer = (s.depth > 0).then(|| s.stack[s.depth as usize - 1].class);
    let class = match outer {
        Some(c) => c,
        None if own => take_own(s, id as usize, slot, tag),
        None => roi::EXACT,
    };
    if class == roi::PLAIN {
        // Its plain copy calls no end: the execution is counted now and opens nothing.
        count_plain(s, id);
        return class;
    }
    // Time (and events) are taken at the outermost instance of the region in the thread.
    let w = if s.open[id as usize] == 0 {
        time_weight(s, id as usize)
    } else {
        0
    };
    // Events are read before the TSC (and after it at the end): the time leaves the reads out.
    let ev = w != 0 && wants_events(s, id as usize) && events_begin(s);
    // The execution's calls: its first N counted as it is, then one in N (an `EXACT` one;
    // a `SAMPLED` one or one inside a sampled call counts every call).
    // Without sampling the word stays 0 and is neither saved nor restored.
    if CALL_SAMPLING.load(Relaxed) {
        let n = period();
        s.saved_calls[s.depth as usize] = (get_calls(s), s.call_budget);
        if class == roi::EXACT && s.call_depth == 0 {
            s.call_budget = n.min(u32::MAX as u64) as u32;
            set_calls(s, 1);
        } else {
            set_calls(s, 0);
        }
    }
    let t0 = if w != 0 { crate::clock::tsc() } else { 0 };
    s.stack[s.depth as usize] = Open {
        id,
        class,
        t0,
        w,
        ev,
    };
    s.depth += 1;
    s.open[id as usize] += 1;
    if s.depth == 1 {
        set_gate(s);
    }
    class
}

/// A sampled region's class when no counted region is open in the thread: `decide`'s, and
/// the run of plain executions its countdown leaves after this one goes into the region's
/// skip slot, which the inlined begin spends without calling the runtime (the last of the
/// countdown, the sampled execution, calls it again).
unsafe fn take_own(s: &mut State, id: usize, slot: u32, tag: u32) -> u32 {
    let slot = slot as usize;
    let armable = (1..roi::SKIP_WORDS).contains(&slot) && !s.skip.is_null();
    if armable && s.skip_owner[slot] == id as u32 + 1 {
        reclaim(s, slot);
    }
    let class = decide(s, id);
    if !armable || s.countdown[id] <= 1 {
        return class;
    }
    match s.skip_owner[slot] {
        0 => s.skip_owner[slot] = id as u32 + 1,
        o if o == id as u32 + 1 => {}
        SHARED => return class,
        _ => {
            // A second region on this slot: both take the slow way from now on.
            reclaim(s, slot);
            s.skip_owner[slot] = SHARED;
            return class;
        }
    }
    let run = s.countdown[id] - 1;
    let _g = s.skip_lock.lock();
    s.skip_set[slot] = run;
    s.countdown[id] = 1;
    core::ptr::write_volatile(s.skip.add(slot), (run as u64) << 32 | tag as u64);
    class
}

/// `PROFCC_ROI_BEGIN(name)`.
#[no_mangle]
pub unsafe extern "C" fn __profcc_roi_begin(name: *const libc::c_char) {
    begin(name, false, false, 0, 0);
}

/// `PROFCC_ROI_BEGIN` of a constant name that always counts (the pass rewrites those).
#[no_mangle]
pub unsafe extern "C" fn __profcc_roi_begin_lit(name: *const libc::c_char) {
    begin(name, true, false, 0, 0);
}

/// A sampled region's begin (the pass calls it in place of `__profcc_roi_begin` where it
/// gave the region a plain copy, when its skip slot `slot` holds no run armed for its `tag`
/// or the gate is shut; `roi::SKIP_WORDS`): the execution's class, `roi::PLAIN` to run the
/// copy (which calls no end).
#[no_mangle]
pub unsafe extern "C" fn __profcc_roi_begin_take(
    name: *const libc::c_char,
    slot: u32,
    tag: u32,
) -> u32 {
    begin(name, true, true, slot, tag)
}

/// A region begun inside a plain copy (the enclosing execution runs uncounted): one more
/// execution, nothing opened (the copy calls no end). The name is a constant (a region
/// holding a marker of a run-time name is not versioned).
#[no_mangle]
pub unsafe extern "C" fn __profcc_roi_plain(name: *const libc::c_char) {
    let Some(s) = state() else {
        DROPPED.fetch_add(1, Relaxed);
        return;
    };
    let Some(id) = lit_id(s, name, true) else {
        DROPPED.fetch_add(1, Relaxed);
        return;
    };
    count_plain(s, id);
}

/// One more execution of region `id` that runs plain (opens nothing, calls no end).
fn count_plain(s: &State, id: u32) {
    let c = &s.cells[id as usize].executions;
    c.store(c.load(Relaxed) + 1, Relaxed);
}

/// A clone's prologue found the call word at 1 (docs/regions.md, "Sampling inside an
/// execution"): `counters` (the caller's array: one of the execution's first N calls, or no
/// sampling here), the sampled class's array of the module (this call is sampled: the
/// prologue calls the clone with it, then `__profcc_roi_call_done`), or null (run the
/// original, uncounted).
#[no_mangle]
pub unsafe extern "C" fn __profcc_roi_call(
    desc: *const roi::RoiDesc,
    counters: *mut u64,
) -> *mut u64 {
    let Some(s) = state() else {
        return counters;
    };
    if s.depth == 0 || s.call_depth > 0 {
        set_calls(s, 0);
        return counters;
    }
    if s.call_budget > 0 {
        s.call_budget -= 1;
        if s.call_budget == 0 {
            let g = call_gap(s, period());
            set_calls(s, g);
        }
        return counters;
    }
    let top = s.stack[s.depth as usize - 1];
    let c = &s.cells[top.id as usize].call_samples;
    c.store(c.load(Relaxed) + 1, Relaxed);
    s.call_next = call_gap(s, period());
    s.call_depth = 1;
    live::poll(crate::clock::tsc());
    set_calls(s, 0);
    // An OpenMP team forked inside counts as this call does.
    s.call_team = TEAM_CLASS.load(Relaxed);
    if s.call_team != roi::SAMPLED {
        TEAM_CLASS.store(roi::SAMPLED, Relaxed);
    }
    counters_of(desc, roi::SAMPLED)
}

/// A sampled call returned: the calls after it are plain until the gap drawn at its start
/// runs out.
#[no_mangle]
pub unsafe extern "C" fn __profcc_roi_call_done() {
    let Some(s) = state() else {
        return;
    };
    if s.call_depth == 0 {
        return;
    }
    s.call_depth = 0;
    if TEAM_CLASS.load(Relaxed) != s.call_team {
        TEAM_CLASS.store(s.call_team, Relaxed);
    }
    set_calls(s, if s.depth > 0 { s.call_next } else { 0 });
}

/// `PROFCC_ROI_END(name)`: closes the innermost open region of that name (regions opened
/// inside it and not closed are closed with it).
#[no_mangle]
pub unsafe extern "C" fn __profcc_roi_end(name: *const libc::c_char) {
    end(name, false)
}

/// `PROFCC_ROI_END` of a constant name (the pass rewrites those).
#[no_mangle]
pub unsafe extern "C" fn __profcc_roi_end_lit(name: *const libc::c_char) {
    end(name, true)
}

unsafe fn end(name: *const libc::c_char, literal: bool) {
    let Some(s) = state() else {
        DROPPED.fetch_add(1, Relaxed);
        return;
    };
    // Looked up, not interned: an end with a name never begun takes no slot of the table.
    let id = if literal {
        lit_id(s, name, false)
    } else {
        lookup(name_bytes(name))
    };
    let open = id.and_then(|id| (0..s.depth as usize).rev().find(|&i| s.stack[i].id == id));
    let Some(at) = open else {
        UNMATCHED_ENDS.fetch_add(1, Relaxed);
        return;
    };
    // Odd while the stack and the counts change (a snapshot reads them from another thread).
    let seq = s.seq.load(Relaxed);
    s.seq.store(seq.wrapping_add(1), Relaxed);
    core::sync::atomic::compiler_fence(Release);
    // Did any closing region read events, is any timed.
    let closing = &s.stack[at..s.depth as usize];
    let ev = closing.iter().any(|o| o.ev);
    let now = if closing.iter().any(|o| o.w != 0) {
        crate::clock::tsc()
    } else {
        0
    };
    let group = if ev { group(s) } else { None };
    let e1 = group.and_then(|g| g.read());
    for i in (at..s.depth as usize).rev() {
        let o = &s.stack[i];
        let c = &s.cells[o.id as usize];
        s.open[o.id as usize] -= 1;
        c.executions.store(c.executions.load(Relaxed) + 1, Relaxed);
        let k = o.class as usize - 1;
        c.counted.store(c.counted.load(Relaxed) + 1, Relaxed);
        if o.w != 0 {
            let t = now.wrapping_sub(o.t0) * o.w as u64;
            c.ticks[k].store(c.ticks[k].load(Relaxed) + t, Relaxed);
            if o.w != 1 {
                c.time_samples
                    .store(c.time_samples.load(Relaxed) + 1, Relaxed);
            }
        }
        if !o.ev {
            continue;
        }
        if let (Some(g), Some(e1)) = (group.as_ref(), e1.as_ref()) {
            let d = g.between(&s.event_start[i], e1);
            for (x, &v) in c.events[k].iter().zip(&d) {
                x.store(x.load(Relaxed) + v, Relaxed);
            }
            let n = &c.event_executions[k];
            n.store(n.load(Relaxed) + 1, Relaxed);
        }
    }
    s.depth = at as u32;
    if CALL_SAMPLING.load(Relaxed) {
        let (calls, budget) = s.saved_calls[at];
        set_calls(s, calls);
        s.call_budget = budget;
        if at == 0 && s.call_depth > 0 {
            // A sampled call left by a jump (longjmp, an exception) never called done (the
            // word restored is the outermost begin's: 0).
            s.call_depth = 0;
            TEAM_CLASS.store(s.call_team, Relaxed);
        }
    }
    if at == 0 {
        set_gate(s);
    }
    s.seq.store(seq.wrapping_add(2), Release);
    if now != 0 {
        live::poll(now);
    }
}

/// Every thread's cumulative counts now (`roi_interval`; docs/regions.md, "Snapshots"),
/// read while the threads run: an execution in progress adds its time so far.
fn snapshot(ns: u64) -> schema::Snapshot {
    // Before any of this analysis's locks (the allocator statistics have their own).
    let heap = Some(crate::alloc::heap_now());
    let n = COUNT.load(Acquire) as usize;
    let names: Vec<String> = {
        let t = NAMES.data_ptr() as *const Names;
        // Entries below `COUNT` never change.
        (0..n)
            .map(|i| unsafe {
                let len = core::ptr::addr_of!((*t).len[i]).read() as usize;
                let text = &*core::ptr::addr_of!((*t).text[i]);
                String::from_utf8_lossy(&text[..len]).into_owned()
            })
            .collect()
    };
    let period = period();
    let modules = MODULES.lock();
    let mut rows = Vec::new();
    each_state(&REGIONS, |tid, mem| {
        let s = unsafe { &*(mem as *const State) };
        let counts = thread_counts(s, &modules, period, true);
        let cells = consistent_cells(s, names.len(), period);
        for (name, &(executions, ticks)) in names.iter().zip(&cells) {
            let mine = counts.iter().find(|(n, _)| n == name).map(|x| &x.1);
            if executions == 0 && mine.is_none() && ticks == 0 {
                continue;
            }
            rows.push(snap_row(name, tid, executions, ticks, mine));
        }
        for (name, c) in counts.iter().filter(|(n, _)| !names.contains(n)) {
            rows.push(snap_row(name, tid, 0, 0, Some(c)));
        }
    });
    schema::Snapshot {
        ns,
        rows,
        heap,
        sites: Vec::new(),
    }
}

/// Another thread's executions and ticks of its first `n` regions, the open counted
/// executions' time so far added (the outermost instance of each), read between two equal
/// even values of its `seq`: an execution is never both open and in the ticks, so a later
/// snapshot never has less. The owner may be descheduled inside `end`: the reader yields and
/// tries again for up to `SEQ_WAIT_NS`, then keeps its last read (a thread stopped inside
/// `end` must not stop the snapshots).
fn consistent_cells(s: &State, n: usize, period: u64) -> Vec<(u64, u64)> {
    use core::sync::atomic::fence;
    const SEQ_WAIT_NS: u64 = 100_000_000;
    let deadline = crate::clock::now_ns() + SEQ_WAIT_NS;
    let mut out = Vec::with_capacity(n);
    loop {
        let before = s.seq.load(Acquire);
        let last = crate::clock::now_ns() >= deadline;
        if before & 1 == 1 && !last {
            std::thread::yield_now();
            continue;
        }
        out.clear();
        let now = crate::clock::tsc();
        let depth = unsafe { core::ptr::read_volatile(&s.depth) as usize }.min(MAX_DEPTH);
        let mut open: Vec<(u32, u64)> = Vec::new();
        for i in 0..depth {
            let o = unsafe { core::ptr::read_volatile(&s.stack[i]) };
            if open.iter().any(|x| x.0 == o.id) {
                continue;
            }
            if o.w == 0 {
                continue;
            }
            let w = o.w as u64 * if o.class == roi::SAMPLED { period } else { 1 };
            open.push((o.id, now.saturating_sub(o.t0) * w));
        }
        let guard = s.skip_lock.lock();
        for (i, c) in s.cells[..n].iter().enumerate() {
            let running = open.iter().find(|x| x.0 == i as u32).map_or(0, |x| x.1);
            let [t1, t2] = [0, 1].map(|k| c.ticks[k].load(Relaxed));
            let executions = c.executions.load(Relaxed) + skipped(s, i);
            out.push((executions, t1 + period * t2 + running));
        }
        drop(guard);
        fence(Acquire);
        if s.seq.load(Relaxed) == before || last {
            return out;
        }
    }
}

fn snap_row(
    name: &str,
    thread: u32,
    executions: u64,
    ticks: u64,
    c: Option<&schema::Counts>,
) -> schema::SnapRow {
    schema::SnapRow {
        region: name.into(),
        thread,
        executions,
        ticks,
        bytes_read: c.map_or(0, |c| c.bytes_read()),
        bytes_written: c.map_or(0, |c| c.bytes_written()),
        instructions: c.map_or(0, |c| c.instructions),
    }
}

pub struct RegionsAnalysis;
pub static REGIONS: RegionsAnalysis = RegionsAnalysis;

impl Analysis for RegionsAnalysis {
    fn name(&self) -> &'static str {
        "regions"
    }

    fn thread_state_bytes(&self) -> usize {
        core::mem::size_of::<State>()
    }

    fn init(&self) {
        CALL_SAMPLING.store(period() > 1, Relaxed);
        crate::clock::mark_start();
        live::start();
    }

    fn fork_prepare(&self) {
        live::fork_prepare();
        core::mem::forget(NAMES.lock());
        core::mem::forget(MODULES.lock());
    }
    fn fork_parent(&self) {
        unsafe {
            NAMES.force_unlock();
            MODULES.force_unlock();
        }
        live::fork_parent();
    }
    fn fork_child(&self) {
        unsafe {
            NAMES.force_unlock();
            MODULES.force_unlock();
        }
        live::fork_child();
        if let Some(s) = state() {
            close_group(s);
        }
    }

    fn thread_start(&self, t: &crate::analysis::ThreadStart) {
        MINE.with(|m| m.set(t.state as *mut State));
        if let Some(s) = unsafe { (t.state as *mut State).as_mut() } {
            s.skip = unsafe { profcc_roi_skip_slot() };
            s.calls = unsafe { profcc_roi_calls_slot() };
            set_gate(s);
        }
    }

    fn thread_exit(&self) {
        if let Some(s) = state() {
            close_group(s);
            // Its thread-locals go with the thread: every slot's count comes home first.
            for slot in 1..roi::SKIP_WORDS {
                reclaim(s, slot);
            }
            let _g = s.skip_lock.lock();
            s.skip = core::ptr::null_mut();
            s.calls = core::ptr::null_mut();
        }
    }

    /// A thread that never executed a region, made no region counters and opened no perf
    /// group leaves nothing for the dump: its block may go to a later thread.
    fn thread_retire(&self, _tid: u32, state: *mut u8) -> bool {
        let s = unsafe { &*(state as *const State) };
        let used = s.group_state != GROUP_UNTRIED
            || s.depth != 0
            || s.arrays.iter().any(|a| !a.is_null())
            || s.cells.iter().any(|c| c.executions.load(Relaxed) != 0);
        if !used {
            MINE.with(|m| m.set(core::ptr::null_mut()));
        }
        used
    }

    fn summary(
        &self,
        p: &profcc_schema::Profile,
        top: usize,
    ) -> Option<crate::analysis::SummarySection> {
        let r = p.regions.as_ref()?;
        Some(crate::analysis::SummarySection {
            title: "regions (top findings):".into(),
            lines: profcc_analysis::findings::summary_lines(
                profcc_analysis::regions::findings(r, p.duration_ns),
                top,
            ),
        })
    }

    fn dump(&self, _cx: &DumpContext, p: &mut profcc_schema::Profile) {
        // The last snapshot first: the counts below are the same moment's or later.
        let (interval_ms, snapshots) = live::finish();
        let n = COUNT.load(Relaxed) as usize;
        let modules = MODULES.lock();
        // Snapshots alone (a program without regions run with `roi_interval`) still have its
        // heap over time.
        if n == 0
            && modules.is_empty()
            && DROPPED.load(Relaxed) == 0
            && UNMATCHED_ENDS.load(Relaxed) == 0
            && snapshots.is_empty()
        {
            return;
        }
        let names: Vec<String> = {
            let t = NAMES.lock();
            (0..n)
                .map(|i| String::from_utf8_lossy(&t.text[i][..t.len[i] as usize]).into_owned())
                .collect()
        };
        let n_period = period();
        let mut rows = Vec::new();
        each_state(&REGIONS, |tid, mem| {
            let s = unsafe { &*(mem as *const State) };
            let mut counts = thread_counts(s, &modules, n_period, false);
            let guard = s.skip_lock.lock();
            for (i, name) in names.iter().enumerate() {
                let c = &s.cells[i];
                let executions = c.executions.load(Relaxed) + skipped(s, i);
                let mine = counts.iter().position(|(n, _)| n == name);
                if executions == 0 && mine.is_none() {
                    continue;
                }
                let [t1, t2] = [0, 1].map(|k| c.ticks[k].load(Relaxed));
                let counted = c.counted.load(Relaxed);
                let [k1, k2] = [0, 1].map(|k| c.event_executions[k].load(Relaxed));
                let events = (k1 + k2 > 0).then(|| schema::RowEvents {
                    executions: k1 + n_period * k2,
                    values: (0..NEV)
                        .map(|e| {
                            let [v1, v2] = [0, 1].map(|k| c.events[k][e].load(Relaxed));
                            v1 + n_period * v2
                        })
                        .collect(),
                });
                rows.push(schema::Row {
                    region: name.clone(),
                    thread: tid,
                    executions,
                    ticks: t1 + n_period * t2,
                    counted_executions: (n_period > 1).then_some(counted),
                    sampled_calls: (n_period > 1).then(|| c.call_samples.load(Relaxed)),
                    time_samples: Some(c.time_samples.load(Relaxed)).filter(|&k| k > 0),
                    counts: mine.map(|i| counts.swap_remove(i).1),
                    events,
                });
            }
            drop(guard);
            // Regions whose code ran in this thread without a marker of theirs running here
            // (an OpenMP team's workers), or whose markers never ran at all.
            for (name, c) in counts {
                rows.push(schema::Row {
                    region: name,
                    thread: tid,
                    executions: 0,
                    ticks: 0,
                    counted_executions: None,
                    sampled_calls: None,
                    time_samples: None,
                    counts: Some(c),
                    events: None,
                });
            }
        });
        drop(modules);
        p.regions = Some(schema::Regions {
            tsc_hz: crate::clock::tsc_hz(),
            rows,
            dropped: DROPPED.load(Relaxed),
            unmatched_ends: UNMATCHED_ENDS.load(Relaxed),
            sample_period: n_period,
            time_min_us: crate::options::get().roi_time as u64,
            interval_ms,
            snapshots,
            machine_bandwidth: super::sharing::calibration().1.and_then(|c| c.bandwidth),
            events: (events_min_us() > 0).then(|| schema::EventStatus {
                mode: EVENTS.mode_name("not read").into(),
                why: EVENTS.why(),
                counted: EVENTS.counted_names(&schema::EVENTS),
                min_us: events_min_us(),
            }),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The gaps between sampled calls: geometric, mean N (the logarithm is the allocator
    /// sampling's, tested there).
    #[test]
    fn sampled_call_gaps_are_geometric_with_mean_n() {
        let mut r = 0x9e37_79b9_7f4a_7c15u64;
        let (n, k) = (99u64, 200_000u64);
        let mut sum = 0u64;
        for _ in 0..k {
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            sum += gap_of(r, n);
        }
        // Mean 99, standard deviation of the mean sqrt(99 × 98 / 200000) = 0.22.
        let mean = sum as f64 / k as f64;
        assert!((mean - 99.0).abs() < 1.5, "{mean}");
        assert_eq!(gap_of(r, 1), 1);
    }

    /// Time sampling: every execution is timed (weight 1) while the region has fewer than
    /// `TIME_EXACT_FIRST` counted executions, while their mean is at least `roi_time`, and
    /// with `roi_time=0`; a shorter region's executions are timed one in `TIME_SAMPLE` at
    /// random (weight `TIME_SAMPLE`, else 0), so the weights sum to the executions on average.
    /// The option's help names both constants.
    #[test]
    fn short_executions_are_timed_one_in_time_sample() {
        let mut s: Box<State> = unsafe { Box::new_zeroed().assume_init() };
        s.rng = 0x9e37_79b9_7f4a_7c15;
        TIME_TICKS.store(100, Relaxed);
        let c = &s.cells[3];
        c.counted.store(schema::TIME_EXACT_FIRST - 1, Relaxed);
        assert_eq!(time_weight(&mut s, 3), 1, "the first executions");
        // Mean 50 ticks: short.
        let c = &s.cells[3];
        c.counted.store(1000, Relaxed);
        c.ticks[0].store(50_000, Relaxed);
        let k = 160_000u64;
        let mut timed = 0u64;
        for _ in 0..k {
            let w = time_weight(&mut s, 3) as u64;
            assert!(w == 0 || w == schema::TIME_SAMPLE, "{w}");
            timed += (w > 0) as u64;
        }
        // 10,000 timed on average, standard deviation 97.
        assert!(
            timed.abs_diff(k / schema::TIME_SAMPLE) < 700,
            "{timed} timed"
        );
        // Mean 100 ticks: long enough.
        s.cells[3].ticks[1].store(50_000, Relaxed);
        assert!((0..100).all(|_| time_weight(&mut s, 3) == 1));
        s.cells[3].ticks[1].store(0, Relaxed);
        TIME_TICKS.store(u64::MAX, Relaxed);
        assert!((0..100).all(|_| time_weight(&mut s, 3) == 1), "roi_time=0");
        let flag = crate::options::FLAGS
            .iter()
            .find(|f| f.name == "roi_time")
            .unwrap();
        for words in [
            format!("one in {}", schema::TIME_SAMPLE),
            format!("weighing {}", schema::TIME_SAMPLE),
            format!("first {}", schema::TIME_EXACT_FIRST),
        ] {
            assert!(flag.help.contains(&words), "{words}: {}", flag.help);
        }
    }

    /// Every word of a block's mix lands in one field of the profile's counts, each in a
    /// different one: a field added to `roi::Mix` and not to `schema::Counts` (or to
    /// `add_mix`) fails here. `counter_increments` comes from the counters, not a mix.
    #[test]
    fn every_mix_word_reaches_its_own_count() {
        let words: Vec<u32> = (0..roi::MIX_WORDS as u32).map(|i| 1 << i).collect();
        let mut c = schema::Counts::default();
        add_mix(&mut c, &roi::Mix::from_words(&words), 1);
        let json = serde_json::to_value(&c).unwrap();
        let mut values = Vec::new();
        // The one count that is no block's mix: the counters' own increments.
        let fields = json.as_object().unwrap();
        assert_eq!(fields["counter_increments"], 0);
        for (_, v) in fields.iter().filter(|(k, _)| *k != "counter_increments") {
            match v {
                serde_json::Value::Array(a) => values.extend(a.iter().map(|x| x.as_u64().unwrap())),
                x => values.push(x.as_u64().unwrap()),
            }
        }
        assert_eq!(values.len(), roi::MIX_WORDS, "{json}");
        values.sort();
        let expected: Vec<u64> = words.iter().map(|&w| w as u64).collect();
        assert_eq!(values, expected, "{json}");
    }
}
