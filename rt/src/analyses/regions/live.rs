//! Region snapshots (`roi_interval=ms`; docs/regions.md, "Snapshots"): a runtime thread
//! (not the program's: `threads::spawn_internal`) wakes every interval, takes every thread's
//! cumulative counts (`super::snapshot`), keeps them for the profile (at most
//! `MAX_SNAPSHOTS`: then every other one goes and the interval doubles) and publishes the
//! latest for `profcc monitor PID` as `/dev/shm/profcc-roi-PID.json`, replaced whole
//! (written aside, then renamed), removed at the dump. A fork child takes none.

use crate::mem::SpinLock;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use profcc_schema::regions::{self as schema, MAX_SNAPSHOTS};

struct Kept {
    snapshots: Vec<schema::Snapshot>,
    /// The sampler stopped (the dump, or a fork child): no more snapshots or publishing.
    stopped: bool,
}

/// Held while a snapshot is taken and published, and while the dump stops the sampler.
static KEPT: SpinLock<Kept> = SpinLock::new(Kept {
    snapshots: Vec::new(),
    stopped: false,
});
static INTERVAL_MS: AtomicU64 = AtomicU64::new(0);
static STARTED: AtomicBool = AtomicBool::new(false);

/// `init`: starts the sampler when `roi_interval` asks for one.
pub fn start() {
    let ms = crate::options::get().roi_interval as u64;
    if ms == 0 || STARTED.swap(true, Relaxed) {
        return;
    }
    INTERVAL_MS.store(ms, Relaxed);
    if !crate::threads::spawn_internal(run, core::ptr::null_mut()) {
        INTERVAL_MS.store(0, Relaxed);
    }
}

extern "C" fn run(_: *mut libc::c_void) -> *mut libc::c_void {
    loop {
        let ms = INTERVAL_MS.load(Relaxed);
        std::thread::sleep(std::time::Duration::from_millis(ms.max(1)));
        let mut k = KEPT.lock();
        if k.stopped {
            return core::ptr::null_mut();
        }
        let snap = super::snapshot(crate::clock::since_start_ns());
        publish(&snap);
        keep(&mut k, snap);
    }
}

fn keep(k: &mut Kept, snap: schema::Snapshot) {
    k.snapshots.push(snap);
    if k.snapshots.len() >= MAX_SNAPSHOTS {
        // Every other one, the latest kept; the interval doubles.
        let mut i = 0;
        let last = k.snapshots.len() - 1;
        k.snapshots.retain(|_| {
            i += 1;
            (i - 1) % 2 == last % 2
        });
        INTERVAL_MS.store(INTERVAL_MS.load(Relaxed) * 2, Relaxed);
    }
}

fn pid() -> u32 {
    unsafe { libc::getpid() as u32 }
}

fn publish(snap: &schema::Snapshot) {
    let live = schema::Live {
        pid: pid(),
        exe: std::fs::read_link("/proc/self/exe")
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default(),
        tsc_hz: crate::clock::tsc_hz(),
        interval_ms: INTERVAL_MS.load(Relaxed),
        snapshot: snap.clone(),
    };
    if let Ok(json) = serde_json::to_vec(&live) {
        let _ = crate::writer::write_atomically(
            std::path::Path::new(&schema::live_path(live.pid)),
            &json,
        );
    }
}

/// The dump: stops the sampler, removes the published file, and returns the interval and
/// the snapshots with the dump's own last (none when `roi_interval` is 0).
pub fn finish() -> (u64, Vec<schema::Snapshot>) {
    let ms = INTERVAL_MS.load(Relaxed);
    if ms == 0 {
        return (0, Vec::new());
    }
    let mut k = KEPT.lock();
    if !k.stopped {
        k.stopped = true;
        let _ = std::fs::remove_file(schema::live_path(pid()));
        let snap = super::snapshot(crate::clock::since_start_ns());
        k.snapshots.push(snap);
    }
    (ms, k.snapshots.clone())
}

pub fn fork_prepare() {
    core::mem::forget(KEPT.lock());
}

pub fn fork_parent() {
    unsafe { KEPT.force_unlock() };
}

/// The child has no sampler: it keeps no snapshot of its parent's and takes none.
pub fn fork_child() {
    unsafe { KEPT.force_unlock() };
    let mut k = KEPT.lock();
    k.snapshots.clear();
    k.stopped = true;
    INTERVAL_MS.store(0, Relaxed);
}
