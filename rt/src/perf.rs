//! Hardware and software event counts through `perf_event_open` (user space only), for the
//! analyses that bracket some of the program's work with two reads: the allocator's sampled
//! operations (`alloc_events`) and the regions' counted executions (`roi_events`). One group
//! per thread and analysis (`Group`, opened by the thread that reads it): the hardware events
//! the machine gives, then software events, which every Linux kernel with perf events has.
//! What a read of the group itself counts is measured when it opens (the least of eight empty
//! brackets) and taken off every bracket. Each analysis keeps a `Status`: what its groups
//! could count in this process and, when the kernel refused, why.

use core::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// One event: `perf_event_attr.type` and `.config`.
#[derive(Clone, Copy)]
pub struct Spec {
    pub type_: u32,
    pub config: u64,
}

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_TYPE_HW_CACHE: u32 = 3;

impl Spec {
    pub const INSTRUCTIONS: Spec = Spec {
        type_: PERF_TYPE_HARDWARE,
        config: 1,
    };
    /// The generic cache misses (the last-level cache's on x86).
    pub const CACHE_MISSES: Spec = Spec {
        type_: PERF_TYPE_HARDWARE,
        config: 3,
    };
    /// L1D (0) | read (0) << 8 | miss (1) << 16.
    pub const L1D_READ_MISSES: Spec = Spec {
        type_: PERF_TYPE_HW_CACHE,
        config: 1 << 16,
    };
    /// dTLB (3) | read (0) << 8 | miss (1) << 16.
    pub const DTLB_READ_MISSES: Spec = Spec {
        type_: PERF_TYPE_HW_CACHE,
        config: 3 | (1 << 16),
    };
    pub const PAGE_FAULTS: Spec = Spec {
        type_: PERF_TYPE_SOFTWARE,
        config: 2,
    };

    fn hardware(&self) -> bool {
        self.type_ != PERF_TYPE_SOFTWARE
    }
}

const PERF_FORMAT_GROUP: u64 = 1 << 3;
const PERF_FLAG_FD_CLOEXEC: u64 = 1 << 3;
/// attr.flags bits: exclude_kernel 5, exclude_hv 6.
const EXCLUDE_KERNEL: u64 = 1 << 5;
const EXCLUDE_HV: u64 = 1 << 6;

/// `struct perf_event_attr` up to the fields profcc sets (size PERF_ATTR_SIZE_VER0 = 64).
#[repr(C)]
#[derive(Default)]
struct Attr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

fn open(s: Spec, group: i32) -> Result<i32, i32> {
    let a = Attr {
        type_: s.type_,
        size: core::mem::size_of::<Attr>() as u32,
        config: s.config,
        read_format: PERF_FORMAT_GROUP,
        flags: EXCLUDE_KERNEL | EXCLUDE_HV,
        ..Default::default()
    };
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &a as *const Attr,
            0, // this thread
            -1,
            group,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        Err(unsafe { *libc::__errno_location() })
    } else {
        Ok(fd as i32)
    }
}

/// What an analysis's groups could count in this process.
pub struct Status {
    /// 0: no group opened yet, else one of `HARDWARE`, `SOFTWARE`, `UNAVAILABLE`.
    mode: AtomicU32,
    /// errno of the refused `perf_event_open` (all of them, or the first hardware event's).
    refused: AtomicU32,
    /// Bit i: the analysis's event i was counted by some thread's group.
    counted: AtomicU32,
}

const HARDWARE: u32 = 1;
const SOFTWARE: u32 = 2;
const UNAVAILABLE: u32 = 3;

impl Status {
    pub const fn new() -> Status {
        Status {
            mode: AtomicU32::new(0),
            refused: AtomicU32::new(0),
            counted: AtomicU32::new(0),
        }
    }

    /// "hardware" (some hardware event was counted), "software" (software events only: the
    /// machine gave this process no hardware counters), "unavailable" (`perf_event_open`
    /// refused every event) or `idle` (no group was opened).
    pub fn mode_name(&self, idle: &'static str) -> &'static str {
        match self.mode.load(Relaxed) {
            HARDWARE => "hardware",
            SOFTWARE => "software",
            UNAVAILABLE => "unavailable",
            _ => idle,
        }
    }

    /// The names of the events some group counted (`names[i]` is event i's).
    pub fn counted_names(&self, names: &[&str]) -> Vec<String> {
        let counted = self.counted.load(Relaxed);
        names
            .iter()
            .enumerate()
            .filter(|(i, _)| counted & (1 << i) != 0)
            .map(|(_, n)| n.to_string())
            .collect()
    }

    /// Why hardware counters, or all events, are missing: the refused call's error and what
    /// it usually means (None: nothing was refused).
    pub fn why(&self) -> Option<String> {
        let errno = self.refused.load(Relaxed) as i32;
        let mode = self.mode.load(Relaxed);
        if errno == 0 || mode == HARDWARE {
            return None;
        }
        let what = if mode == SOFTWARE {
            "hardware counters"
        } else {
            "perf_event_open"
        };
        let cause = match errno {
            libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV => {
                "the machine gives this process no such counters (a virtual machine often has none)"
            }
            libc::EACCES | libc::EPERM => {
                "not permitted (kernel.perf_event_paranoid, or a seccomp filter as in containers)"
            }
            libc::ENOSYS => "the kernel has no perf events",
            _ => "",
        };
        Some(format!(
            "{what} refused ({}){}{cause}",
            std::io::Error::from_raw_os_error(errno),
            if cause.is_empty() { "" } else { ": " }
        ))
    }
}

/// Most events in one group.
pub const MAX: usize = 8;

/// A thread's open group: its leader, which of the analysis's events each value of a read
/// is, and what a read itself counts.
#[derive(Clone, Copy)]
pub struct Group {
    leader: i32,
    fds: [i32; MAX],
    which: [u8; MAX],
    n: usize,
    bias: [u64; MAX],
}

impl Group {
    /// Opens `specs` for the calling thread, hardware events first as listed (the first one
    /// refused stops the hardware ones: the machine has none to give), then the software
    /// ones; records what it got in `status`. None: not one event could be opened.
    pub fn open(specs: &[Spec], status: &Status) -> Option<Group> {
        let mut g = Group {
            leader: -1,
            fds: [-1; MAX],
            which: [0; MAX],
            n: 0,
            bias: [0; MAX],
        };
        let mut hardware_refused = false;
        let mut any_hardware = false;
        for hw in [true, false] {
            for (i, &s) in specs.iter().enumerate().take(MAX) {
                if s.hardware() != hw || (hw && hardware_refused) {
                    continue;
                }
                match open(s, g.leader) {
                    Ok(fd) => {
                        if g.leader < 0 {
                            g.leader = fd;
                        }
                        g.which[g.n] = i as u8;
                        g.fds[g.n] = fd;
                        g.n += 1;
                        any_hardware |= hw;
                    }
                    Err(e) if g.leader < 0 => {
                        status.refused.store(e as u32, Relaxed);
                        hardware_refused |= hw;
                    }
                    Err(_) => {}
                }
            }
        }
        if g.leader < 0 {
            let _ = status
                .mode
                .compare_exchange(0, UNAVAILABLE, Relaxed, Relaxed);
            return None;
        }
        let mode = if any_hardware { HARDWARE } else { SOFTWARE };
        // A thread that got hardware counters wins over one that did not.
        let _ = status.mode.fetch_update(Relaxed, Relaxed, |m| {
            (m == 0 || m == UNAVAILABLE || (m == SOFTWARE && mode == HARDWARE)).then_some(mode)
        });
        status.counted.fetch_or(
            g.which[..g.n].iter().map(|&w| 1u32 << w).sum::<u32>(),
            Relaxed,
        );
        // What a bracket with nothing inside counts.
        let mut bias = [u64::MAX; MAX];
        for _ in 0..8 {
            if let (Some(a), Some(b)) = (g.read(), g.read()) {
                for i in 0..MAX {
                    bias[i] = bias[i].min(b[i].wrapping_sub(a[i]));
                }
            }
        }
        g.bias = bias.map(|b| if b == u64::MAX { 0 } else { b });
        Some(g)
    }

    /// The group's values, indexed as the specs it was opened with (0: not counted; None:
    /// the read failed).
    pub fn read(&self) -> Option<[u64; MAX]> {
        let mut buf = [0u64; MAX + 1];
        let want = (self.n + 1) * 8;
        let r = unsafe { libc::read(self.leader, buf.as_mut_ptr() as *mut libc::c_void, want) };
        if r < 0 || r as usize != want {
            return None;
        }
        let mut out = [0u64; MAX];
        for (i, &w) in self.which[..self.n].iter().enumerate() {
            out[w as usize] = buf[1 + i];
        }
        Some(out)
    }

    /// Counts between two reads, less what the reads themselves count.
    /// (The first `start.len()` events.)
    pub fn between(&self, start: &[u64], end: &[u64]) -> [u64; MAX] {
        let mut d = [0u64; MAX];
        for (i, (s, e)) in start.iter().zip(end).enumerate().take(MAX) {
            d[i] = e.wrapping_sub(*s).saturating_sub(self.bias[i]);
        }
        d
    }

    pub fn close(&self) {
        for &fd in &self.fds[..self.n] {
            unsafe { libc::close(fd) };
        }
    }
}
