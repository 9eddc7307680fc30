//! The TSC as a clock: reads, and ticks per second calibrated against `CLOCK_MONOTONIC` over
//! the run (the allocator analysis's timed calls, the regions' times).

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// TSC and CLOCK_MONOTONIC at the first `mark_start` (0: not yet).
static START_TSC: AtomicU64 = AtomicU64::new(0);
static START_NS: AtomicU64 = AtomicU64::new(0);

pub fn now_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

#[inline]
pub fn tsc() -> u64 {
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Shortest span the tick rate is measured over; a shorter run waits at its dump. Each end
/// is a clock read between two TSC reads at most `PAIR_TICKS` apart (a read preempted in
/// between is taken again), so the rate is right to 2 x 2 µs / 1 ms = 0.4% or better.
const CALIBRATE_NS: u64 = 1_000_000;
const PAIR_TICKS: u64 = 5_000;

/// A TSC reading and `CLOCK_MONOTONIC` at the same moment (within `PAIR_TICKS`; the
/// closest of a few tries).
fn paired() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..16 {
        let a = tsc();
        let n = now_ns();
        let b = tsc();
        let gap = b.wrapping_sub(a);
        if gap < best.0 {
            best = (gap, a + gap / 2, n);
        }
        if gap < PAIR_TICKS {
            break;
        }
    }
    (best.1, best.2)
}

/// Nanoseconds of CLOCK_MONOTONIC since `mark_start`.
pub fn since_start_ns() -> u64 {
    mark_start();
    now_ns().saturating_sub(START_NS.load(Relaxed))
}

/// The calibration's start (an analysis's `init`; later calls change nothing).
pub fn mark_start() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let (t, n) = paired();
        START_TSC.store(t, Relaxed);
        START_NS.store(n, Relaxed);
    });
}

/// Shortest span `early_ticks_per_us` measures over: its ends' pairing error (2 x 2 µs at
/// most) makes it right to 4%, enough for a threshold.
const EARLY_NS: u64 = 100_000;

/// TSC ticks per microsecond, for thresholds (the dump's rate is `tsc_hz`): measured once,
/// from `mark_start` to at least `EARLY_NS` later (the first call waits if it comes sooner).
pub fn early_ticks_per_us() -> u64 {
    static EARLY: AtomicU64 = AtomicU64::new(0);
    let e = EARLY.load(Relaxed);
    if e != 0 {
        return e;
    }
    mark_start();
    let (t0, n0) = (START_TSC.load(Relaxed), START_NS.load(Relaxed));
    while now_ns() < n0 + EARLY_NS {
        core::hint::spin_loop();
    }
    let (t1, n1) = paired();
    let e = (t1.wrapping_sub(t0) * 1000 / (n1 - n0).max(1)).max(1);
    EARLY.store(e, Relaxed);
    e
}

/// TSC ticks per second from `mark_start` to now (waiting until `CALIBRATE_NS` has passed).
pub fn tsc_hz() -> f64 {
    mark_start();
    let (t0, n0) = (START_TSC.load(Relaxed), START_NS.load(Relaxed));
    while now_ns() < n0 + CALIBRATE_NS {
        core::hint::spin_loop();
    }
    let (t1, n1) = paired();
    (t1.wrapping_sub(t0)) as f64 * 1e9 / (n1 - n0) as f64
}
