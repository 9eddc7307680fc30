//! Regions of interest (issue 13): `PROFCC_ROI_BEGIN("name")` / `PROFCC_ROI_END("name")`
//! from `include/profcc.h`, per thread: how often each region ran and for how long (TSC,
//! calibrated; docs/regions.md). Nestable: a region open inside itself (recursion) counts
//! each execution and its time once, from the outermost begin to its end.
//!
//! Names are interned by content into one table of `MAX_REGIONS` (a literal's address
//! differs between translation units); each thread keeps its open regions on a stack of
//! `MAX_DEPTH` and its counts in its block. Nothing here allocates: a marker may run
//! anywhere the program runs.

use crate::analysis::{current_state, each_state, Analysis, DumpContext};
use crate::mem::SpinLock;
use core::sync::atomic::{
    AtomicU32, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};
use profcc_schema::regions as schema;
use schema::{MAX_DEPTH, MAX_REGIONS, NAME_MAX};

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

/// A thread's counts of one region.
#[repr(C)]
struct Cell {
    executions: AtomicU64,
    ticks: AtomicU64,
}

/// A thread's block: its counts, then its stack of open regions (region id, TSC at begin).
#[repr(C)]
struct State {
    cells: [Cell; MAX_REGIONS],
    /// Open instances of each region in this thread (time is taken at the outermost).
    open: [u32; MAX_REGIONS],
    stack: [(u32, u64); MAX_DEPTH],
    depth: u32,
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

fn state() -> Option<&'static mut State> {
    let p = current_state(&REGIONS) as *mut State;
    unsafe { p.as_mut() }
}

/// `PROFCC_ROI_BEGIN(name)`.
#[no_mangle]
pub unsafe extern "C" fn __profcc_roi_begin(name: *const libc::c_char) {
    let now = crate::clock::tsc();
    let (Some(s), Some(id)) = (state(), intern(name_bytes(name))) else {
        DROPPED.fetch_add(1, Relaxed);
        return;
    };
    if s.depth as usize == MAX_DEPTH {
        DROPPED.fetch_add(1, Relaxed);
        return;
    }
    s.stack[s.depth as usize] = (id, now);
    s.depth += 1;
    s.open[id as usize] += 1;
}

/// `PROFCC_ROI_END(name)`: closes the innermost open region of that name (regions opened
/// inside it and not closed are closed with it).
#[no_mangle]
pub unsafe extern "C" fn __profcc_roi_end(name: *const libc::c_char) {
    let now = crate::clock::tsc();
    let Some(s) = state() else {
        DROPPED.fetch_add(1, Relaxed);
        return;
    };
    // Looked up, not interned: an end with a name never begun takes no slot of the table.
    let open = lookup(name_bytes(name))
        .and_then(|id| (0..s.depth as usize).rev().find(|&i| s.stack[i].0 == id));
    let Some(at) = open else {
        UNMATCHED_ENDS.fetch_add(1, Relaxed);
        return;
    };
    for i in (at..s.depth as usize).rev() {
        let (r, t0) = s.stack[i];
        let c = &s.cells[r as usize];
        s.open[r as usize] -= 1;
        c.executions.store(c.executions.load(Relaxed) + 1, Relaxed);
        if s.open[r as usize] == 0 {
            c.ticks
                .store(c.ticks.load(Relaxed) + now.wrapping_sub(t0), Relaxed);
        }
    }
    s.depth = at as u32;
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
        crate::clock::mark_start();
    }

    fn fork_prepare(&self) {
        core::mem::forget(NAMES.lock());
    }
    fn fork_parent(&self) {
        unsafe { NAMES.force_unlock() };
    }
    fn fork_child(&self) {
        unsafe { NAMES.force_unlock() };
    }

    fn dump(&self, _cx: &DumpContext, p: &mut profcc_schema::Profile) {
        let n = COUNT.load(Relaxed) as usize;
        if n == 0 && DROPPED.load(Relaxed) == 0 && UNMATCHED_ENDS.load(Relaxed) == 0 {
            return;
        }
        let names: Vec<String> = {
            let t = NAMES.lock();
            (0..n)
                .map(|i| String::from_utf8_lossy(&t.text[i][..t.len[i] as usize]).into_owned())
                .collect()
        };
        let mut rows = Vec::new();
        each_state(&REGIONS, |tid, mem| {
            let s = unsafe { &*(mem as *const State) };
            for (i, name) in names.iter().enumerate() {
                let c = &s.cells[i];
                let executions = c.executions.load(Relaxed);
                if executions == 0 {
                    continue;
                }
                rows.push(schema::Row {
                    region: name.clone(),
                    thread: tid,
                    executions,
                    ticks: c.ticks.load(Relaxed),
                });
            }
        });
        p.regions = Some(schema::Regions {
            tsc_hz: crate::clock::tsc_hz(),
            rows,
            dropped: DROPPED.load(Relaxed),
            unmatched_ends: UNMATCHED_ENDS.load(Relaxed),
        });
    }
}
