//! Region snapshots (`roi_interval=ms`; docs/regions.md, "Snapshots"): a runtime thread
//! (not the program's: `threads::spawn_internal`) wakes every interval, takes every thread's
//! cumulative counts (`super::snapshot`), keeps them for the profile (at most
//! `MAX_SNAPSHOTS`: then every other one goes and the interval doubles) and publishes the
//! latest for `profcc monitor PID` as `/dev/shm/profcc-roi-PID.json`, replaced whole
//! (written aside, then renamed), removed at the dump. A fork child takes none. Each kept
//! snapshot lists the allocation sites that changed most since they were last listed
//! (`changed_sites`), the dump's last one all that changed.

use crate::mem::SpinLock;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use profcc_schema::regions::{self as schema, MAX_SNAPSHOTS, MAX_SNAPSHOT_SITES};

struct Kept {
    snapshots: Vec<schema::Snapshot>,
    /// Per allocation site (by index): its allocations and frees when a snapshot last listed it.
    listed: Vec<(u64, u64)>,
    /// The sampler stopped (the dump, or a fork child): no more snapshots or publishing.
    stopped: bool,
}

/// Held while a snapshot is taken and published, and while the dump stops the sampler.
static KEPT: SpinLock<Kept> = SpinLock::new(Kept {
    snapshots: Vec::new(),
    listed: Vec::new(),
    stopped: false,
});
static INTERVAL_MS: AtomicU64 = AtomicU64::new(0);
static STARTED: AtomicBool = AtomicBool::new(false);

/// `init`: starts the sampler when `roi_interval` asks for one; otherwise the first look
/// for a monitor's request is due about a second from now.
pub fn start() {
    // A setuid or setgid program looks for no request and publishes nothing (`secure`).
    if crate::secure::on() {
        return;
    }
    NEXT_POLL.store(
        crate::clock::tsc().saturating_add(FIRST_POLL_TICKS),
        Relaxed,
    );
    start_with(crate::options::get().roi_interval as u64);
}

fn start_with(ms: u64) {
    if ms == 0 || STARTED.swap(true, Relaxed) {
        return;
    }
    INTERVAL_MS.store(ms, Relaxed);
    // Running: the markers look for no request any more.
    NEXT_POLL.store(u64::MAX, Relaxed);
    let _g = crate::threads::RtGuard::enter();
    if !crate::threads::spawn_internal(run, core::ptr::null_mut()) {
        INTERVAL_MS.store(0, Relaxed);
    }
}

/// The TSC reading from which a counted end (or a sampled call) looks for `profcc monitor`'s
/// request (`schema::want_path`); `u64::MAX` once the sampler runs.
static NEXT_POLL: AtomicU64 = AtomicU64::new(u64::MAX);
/// The first look: 2^31 ticks after the start (0.5 to 1 s at this era's TSC rates), so that
/// short programs never look and no early look waits for the tick rate.
const FIRST_POLL_TICKS: u64 = 1 << 31;

/// A monitor's request, looked for at most once a second (one compare on the markers' path).
#[inline]
pub fn poll(now: u64) {
    if now >= NEXT_POLL.load(Relaxed) {
        poll_request(now);
    }
}

#[cold]
#[inline(never)]
fn poll_request(now: u64) {
    let second = crate::clock::early_ticks_per_us().saturating_mul(1_000_000);
    NEXT_POLL.store(now.saturating_add(second), Relaxed);
    // On the program's thread, inside its markers: the path's allocation is the runtime's.
    let _g = crate::threads::RtGuard::enter();
    let mut path = [0u8; 64];
    let text = schema::want_path(pid());
    if text.len() >= path.len() {
        return;
    }
    path[..text.len()].copy_from_slice(text.as_bytes());
    let p = path.as_ptr() as *const libc::c_char;
    unsafe {
        let mut st: libc::stat = core::mem::zeroed();
        if libc::stat(p, &mut st) != 0 || (st.st_mode & libc::S_IFMT) != libc::S_IFREG {
            return;
        }
        // Only the process's own user may ask (/dev/shm is everyone's).
        if st.st_uid != libc::geteuid() {
            return;
        }
        let fd = libc::open(p, libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW);
        if fd < 0 {
            return;
        }
        let mut buf = [0u8; 24];
        let n = libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len());
        libc::close(fd);
        libc::unlink(p);
        let ms = if n > 0 {
            parse_ms(&buf[..n as usize])
        } else {
            None
        };
        if let Some(ms) = ms {
            start_with(ms);
        }
    }
}

/// The request's interval: decimal milliseconds, 1 to `MAX_INTERVAL_MS`, a newline allowed.
fn parse_ms(b: &[u8]) -> Option<u64> {
    let t = core::str::from_utf8(b).ok()?.trim();
    let ms: u64 = t.parse().ok()?;
    (1..=schema::MAX_INTERVAL_MS).contains(&ms).then_some(ms)
}

extern "C" fn run(_: *mut libc::c_void) -> *mut libc::c_void {
    loop {
        let ms = INTERVAL_MS.load(Relaxed);
        std::thread::sleep(std::time::Duration::from_millis(ms.max(1)));
        let mut k = KEPT.lock();
        if k.stopped {
            return core::ptr::null_mut();
        }
        // The sites before the heap's totals: a snapshot's sites are never ahead of its heap.
        let sites = crate::alloc::sites_now();
        let mut snap = super::snapshot(crate::clock::since_start_ns());
        publish(&snap);
        snap.sites = changed_sites(&mut k.listed, sites, MAX_SNAPSHOT_SITES);
        keep(&mut k, snap);
    }
}

/// Of the sites' counts `now`, those whose allocations or frees changed since they were last
/// listed, at most `most` of them (those that changed most); `listed` is updated for those
/// returned.
fn changed_sites(
    listed: &mut Vec<(u64, u64)>,
    now: Vec<(u32, crate::alloc::SiteCounts)>,
    most: usize,
) -> Vec<schema::SiteNow> {
    if listed.len() < now.len() {
        listed.resize(now.len(), (0, 0));
    }
    let mut changed: Vec<(u64, usize)> = now
        .iter()
        .enumerate()
        .filter(|(i, (stack, c))| *stack != u32::MAX && (c.count, c.frees) != listed[*i])
        .map(|(i, (_, c))| {
            let (n, f) = listed[i];
            (c.count.abs_diff(n) + c.frees.abs_diff(f), i)
        })
        .collect();
    changed.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    changed.truncate(most);
    let mut out: Vec<schema::SiteNow> = changed
        .into_iter()
        .map(|(_, i)| {
            let (stack, c) = now[i];
            listed[i] = (c.count, c.frees);
            schema::SiteNow {
                stack,
                allocations: c.count,
                bytes: c.bytes,
                frees: c.frees,
                live_bytes: c.live_bytes.max(0) as u64,
            }
        })
        .collect();
    out.sort_by_key(|x| x.stack);
    out
}

fn keep(k: &mut Kept, snap: schema::Snapshot) {
    k.snapshots.push(snap);
    if k.snapshots.len() >= MAX_SNAPSHOTS {
        thin(&mut k.snapshots);
        INTERVAL_MS.store(INTERVAL_MS.load(Relaxed) * 2, Relaxed);
    }
}

/// Drops every other snapshot, the latest kept. A dropped snapshot's sites that the next one
/// does not list move into it: each site keeps its last listed counts.
fn thin(snapshots: &mut Vec<schema::Snapshot>) {
    let last = snapshots.len() - 1;
    for i in (0..last).filter(|i| i % 2 != last % 2) {
        let (dropped, next) = snapshots.split_at_mut(i + 1);
        let next = &mut next[0];
        for s in core::mem::take(&mut dropped[i].sites) {
            if !next.sites.iter().any(|x| x.stack == s.stack) {
                next.sites.push(s);
            }
        }
        next.sites.sort_by_key(|x| x.stack);
    }
    let mut i = 0;
    snapshots.retain(|_| {
        i += 1;
        (i - 1) % 2 == last % 2
    });
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
        let sites = crate::alloc::sites_now();
        let mut snap = super::snapshot(crate::clock::since_start_ns());
        snap.sites = changed_sites(&mut k.listed, sites, usize::MAX);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_holds_milliseconds_in_range() {
        assert_eq!(super::parse_ms(b"250\n"), Some(250));
        assert_eq!(super::parse_ms(b"1"), Some(1));
        // The request's bound is roi_interval's own.
        let flag = crate::options::FLAGS
            .iter()
            .find(|f| f.name == "roi_interval")
            .unwrap();
        assert_eq!(flag.range, Some((0, super::schema::MAX_INTERVAL_MS)));
        for bad in [&b"0"[..], b"", b"-5", b"1.5", b"3600001", b"x"] {
            assert_eq!(super::parse_ms(bad), None, "{:?}", bad);
        }
    }

    fn snap(ns: u64, sites: &[(u32, u64)]) -> schema::Snapshot {
        schema::Snapshot {
            ns,
            sites: sites
                .iter()
                .map(|&(stack, allocations)| schema::SiteNow {
                    stack,
                    allocations,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    fn listed(s: &schema::Snapshot) -> Vec<(u32, u64)> {
        s.sites.iter().map(|x| (x.stack, x.allocations)).collect()
    }

    /// Thinning keeps every site's last listed counts: a dropped snapshot's sites move into
    /// the next one, unless it lists them itself (with newer counts).
    #[test]
    fn thinning_moves_a_dropped_snapshots_sites_into_the_next() {
        let mut s = vec![
            snap(10, &[(7, 1)]),
            snap(20, &[(9, 5)]),
            snap(30, &[(7, 3), (9, 6)]),
            snap(40, &[(9, 8)]),
            snap(50, &[]),
        ];
        thin(&mut s);
        assert_eq!(s.iter().map(|x| x.ns).collect::<Vec<_>>(), [10, 30, 50]);
        assert_eq!(listed(&s[0]), [(7, 1)]);
        assert_eq!(listed(&s[1]), [(7, 3), (9, 6)]);
        assert_eq!(listed(&s[2]), [(9, 8)]);
    }
}
