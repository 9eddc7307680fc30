//! Events per allocator operation (`alloc_events=N`, docs/allocators.md, "Events per
//! operation"): one timed operation in N per thread is bracketed by two reads of a perf event
//! group opened for the thread (`perf_event_open`, user space only): instructions, cache
//! misses, dTLB load misses and page faults where the machine gives hardware counters, page
//! faults alone (a software event) where it does not. The reads happen outside the operation's
//! TSC interval, in interpose.c's `timing_start`/`timing_end`; what the two reads themselves
//! count (measured per thread when its group opens: the least of eight empty brackets) is
//! taken off every sample.

use core::cell::Cell;
use core::sync::atomic::{AtomicU32, Ordering::Relaxed};

pub use profcc_schema::allocator::EVENTS;
pub const NEV: usize = EVENTS.len();

/// What this process could count: 0 not tried yet, else one of these.
pub const HARDWARE: u32 = 1;
pub const SOFTWARE: u32 = 2;
pub const UNAVAILABLE: u32 = 3;
pub static MODE: AtomicU32 = AtomicU32::new(0);
/// errno of the refused `perf_event_open` (UNAVAILABLE), or of the hardware leader (SOFTWARE).
pub static REFUSED: AtomicU32 = AtomicU32::new(0);
/// Bit i: [`EVENTS`]`[i]` was counted by some thread's group.
pub static COUNTED: AtomicU32 = AtomicU32::new(0);

extern "C" {
    static mut profcc_alloc_event_period: u32;
}

pub fn init(period: u32) {
    unsafe {
        core::ptr::write_volatile(core::ptr::addr_of_mut!(profcc_alloc_event_period), period)
    };
}

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_TYPE_HW_CACHE: u32 = 3;
const HW_INSTRUCTIONS: u64 = 1;
const HW_CACHE_MISSES: u64 = 3;
const SW_PAGE_FAULTS: u64 = 2;
/// dTLB (3) | read (0) << 8 | miss (1) << 16.
const HW_CACHE_DTLB_READ_MISS: u64 = 3 | (1 << 16);
const PERF_FORMAT_GROUP: u64 = 1 << 3;
const PERF_FLAG_FD_CLOEXEC: u64 = 1 << 3;
/// attr.flags bits: disabled 0, exclude_kernel 5, exclude_hv 6.
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

fn open(type_: u32, config: u64, group: i32) -> Result<i32, i32> {
    let a = Attr {
        type_,
        size: core::mem::size_of::<Attr>() as u32,
        config,
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

/// The thread's group: its leader (-1: not opened, -2: refused), which of [`EVENTS`] each
/// value of a read is, the values at the bracket's start, the read's own counts.
struct Group {
    fd: Cell<i32>,
    fds: Cell<[i32; NEV]>,
    which: Cell<[u8; NEV]>,
    n: Cell<usize>,
    start: Cell<[u64; NEV]>,
    bias: Cell<[u64; NEV]>,
    /// A bracket is open (its start was read).
    open: Cell<bool>,
    /// The last bracket's counts, waiting for `profcc_alloc_op` to file them.
    pending: Cell<Option<[u64; NEV]>>,
}

thread_local! {
    static G: Group = const {
        Group {
            fd: Cell::new(-1),
            fds: Cell::new([-1; NEV]),
            which: Cell::new([0; NEV]),
            n: Cell::new(0),
            start: Cell::new([0; NEV]),
            bias: Cell::new([0; NEV]),
            open: Cell::new(false),
            pending: Cell::new(None),
        }
    };
}

/// The group's values in [`EVENTS`] order (None: the read failed).
fn read(g: &Group) -> Option<[u64; NEV]> {
    let mut buf = [0u64; NEV + 1];
    let want = (g.n.get() + 1) * 8;
    let r = unsafe { libc::read(g.fd.get(), buf.as_mut_ptr() as *mut libc::c_void, want) };
    if r as usize != want {
        return None;
    }
    let mut out = [0u64; NEV];
    for (i, &w) in g.which.get()[..g.n.get()].iter().enumerate() {
        out[w as usize] = buf[1 + i];
    }
    Some(out)
}

fn open_group(g: &Group) {
    let mut which = [0u8; NEV];
    let mut fds = [-1; NEV];
    let mut n = 0;
    let hw: [(u32, u64, usize); 3] = [
        (PERF_TYPE_HARDWARE, HW_INSTRUCTIONS, 0),
        (PERF_TYPE_HARDWARE, HW_CACHE_MISSES, 1),
        (PERF_TYPE_HW_CACHE, HW_CACHE_DTLB_READ_MISS, 2),
    ];
    let mut leader = -1;
    for (t, c, w) in hw {
        match open(t, c, leader) {
            Ok(fd) => {
                if leader < 0 {
                    leader = fd;
                }
                which[n] = w as u8;
                fds[n] = fd;
                n += 1;
            }
            Err(e) if leader < 0 => {
                REFUSED.store(e as u32, Relaxed);
                break;
            }
            Err(_) => {}
        }
    }
    match open(PERF_TYPE_SOFTWARE, SW_PAGE_FAULTS, leader) {
        Ok(fd) => {
            if leader < 0 {
                leader = fd;
            }
            which[n] = 3;
            fds[n] = fd;
            n += 1;
        }
        Err(e) if leader < 0 => {
            REFUSED.store(e as u32, Relaxed);
            let _ = MODE.compare_exchange(0, UNAVAILABLE, Relaxed, Relaxed);
            g.fd.set(-2);
            return;
        }
        Err(_) => {}
    }
    let mode = if which[0] == 3 { SOFTWARE } else { HARDWARE };
    let _ = MODE.compare_exchange(0, mode, Relaxed, Relaxed);
    g.fd.set(leader);
    g.fds.set(fds);
    g.which.set(which);
    COUNTED.fetch_or(which[..n].iter().map(|&w| 1 << w).sum::<u32>(), Relaxed);
    g.n.set(n);
    // What a bracket with nothing inside counts.
    let mut bias = [u64::MAX; NEV];
    for _ in 0..8 {
        if let (Some(a), Some(b)) = (read(g), read(g)) {
            for i in 0..NEV {
                bias[i] = bias[i].min(b[i].wrapping_sub(a[i]));
            }
        }
    }
    g.bias.set(bias.map(|b| if b == u64::MAX { 0 } else { b }));
}

/// interpose.c, a sampled operation's start (guard set, before the TSC read).
#[no_mangle]
pub extern "C" fn profcc_alloc_events_begin() {
    let _ = G.try_with(|g| {
        if g.fd.get() == -1 {
            open_group(g);
        }
        if g.fd.get() >= 0 {
            if let Some(v) = read(g) {
                g.start.set(v);
                g.open.set(true);
            }
        }
    });
}

/// interpose.c, the sampled operation's end (after the TSC read).
#[no_mangle]
pub extern "C" fn profcc_alloc_events_end() {
    let _ = G.try_with(|g| {
        if !g.open.replace(false) {
            return;
        }
        if let Some(v) = read(g) {
            let (s, b) = (g.start.get(), g.bias.get());
            let mut d = [0u64; NEV];
            for i in 0..NEV {
                d[i] = v[i].wrapping_sub(s[i]).saturating_sub(b[i]);
            }
            g.pending.set(Some(d));
        }
    });
}

/// The counts of the thread's last sampled operation, once (None: it was not sampled).
#[inline]
pub fn take() -> Option<[u64; NEV]> {
    G.try_with(|g| g.pending.take()).ok().flatten()
}

/// The thread ends, or a fork child starts (its inherited group counts the parent's thread).
pub fn close_thread() {
    let _ = G.try_with(|g| {
        for fd in g.fds.get() {
            if fd >= 0 {
                unsafe { libc::close(fd) };
            }
        }
        g.fds.set([-1; NEV]);
        g.fd.set(-1);
        g.open.set(false);
        g.pending.set(None);
    });
}

/// The profile's word for [`MODE`].
pub fn mode_name() -> &'static str {
    match MODE.load(Relaxed) {
        HARDWARE => "hardware",
        SOFTWARE => "software",
        UNAVAILABLE => "unavailable",
        _ => "not sampled",
    }
}
