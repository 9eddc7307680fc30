//! Events per allocator operation (`alloc_events=N`, docs/allocators.md, "Events per
//! operation"): one timed operation in N per thread is bracketed by two reads of a perf event
//! group opened for the thread (`perf_event_open`, user space only): instructions, cache
//! misses, dTLB load misses and page faults where the machine gives hardware counters, page
//! faults alone (a software event) where it does not. The reads happen outside the operation's
//! TSC interval, in timing.h's `timing_start`/`timing_end`; what the two reads themselves
//! count (measured per thread when its group opens: the least of eight empty brackets) is
//! taken off every sample.

use crate::perf::{Group, Spec, Status, MAX};
use core::cell::Cell;

pub use profcc_schema::allocator::EVENTS;
pub const NEV: usize = EVENTS.len();
/// [`EVENTS`] as perf events.
const SPECS: [Spec; NEV] = [
    Spec::INSTRUCTIONS,
    Spec::CACHE_MISSES,
    Spec::DTLB_READ_MISSES,
    Spec::PAGE_FAULTS,
];

/// What this process's groups could count.
pub static STATUS: Status = Status::new();

extern "C" {
    static mut profcc_alloc_event_period: u32;
}

pub fn init(period: u32) {
    unsafe {
        core::ptr::write_volatile(core::ptr::addr_of_mut!(profcc_alloc_event_period), period)
    };
}

/// The thread's group (not tried yet, refused, or open), the values at the bracket's start.
struct Thread {
    group: Cell<Option<Option<Group>>>,
    start: Cell<[u64; MAX]>,
    /// A bracket is open (its start was read).
    open: Cell<bool>,
    /// The last bracket's counts, waiting for `profcc_alloc_op` to file them.
    pending: Cell<Option<[u64; NEV]>>,
}

thread_local! {
    static G: Thread = const {
        Thread {
            group: Cell::new(None),
            start: Cell::new([0; MAX]),
            open: Cell::new(false),
            pending: Cell::new(None),
        }
    };
}

fn group(t: &Thread) -> Option<Group> {
    match t.group.get() {
        Some(g) => g,
        None => {
            let g = Group::open(&SPECS, &STATUS);
            t.group.set(Some(g));
            g
        }
    }
}

/// timing.h, a sampled operation's start (guard set, before the TSC read).
#[no_mangle]
pub extern "C" fn profcc_alloc_events_begin() {
    let _ = G.try_with(|t| {
        if let Some(v) = group(t).and_then(|g| g.read()) {
            t.start.set(v);
            t.open.set(true);
        }
    });
}

/// timing.h, the sampled operation's end (after the TSC read).
#[no_mangle]
pub extern "C" fn profcc_alloc_events_end() {
    let _ = G.try_with(|t| {
        if !t.open.replace(false) {
            return;
        }
        let Some(g) = group(t) else { return };
        if let Some(v) = g.read() {
            let d = g.between(&t.start.get(), &v);
            let mut out = [0u64; NEV];
            out.copy_from_slice(&d[..NEV]);
            t.pending.set(Some(out));
        }
    });
}

/// The counts of the thread's last sampled operation, once (None: it was not sampled).
#[inline]
pub fn take() -> Option<[u64; NEV]> {
    G.try_with(|t| t.pending.take()).ok().flatten()
}

/// The thread ends, or a fork child starts (its inherited group counts the parent's thread).
pub fn close_thread() {
    let _ = G.try_with(|t| {
        if let Some(Some(g)) = t.group.take() {
            g.close();
        }
        t.open.set(false);
        t.pending.set(None);
    });
}

/// The profile's word for what was counted.
pub fn mode_name() -> &'static str {
    STATUS.mode_name("not sampled")
}
