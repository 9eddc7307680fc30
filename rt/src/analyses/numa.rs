//! The NUMA analysis (docs/numa.md), first part: the `thread` model (NumaPerf: each thread is
//! its own node). Modules built with `PROFCC_INSTRUMENT=numa` run hooks/numa.c before every
//! access: one load of the page's shadow entry (0: untouched, else the page's home) and one
//! increment of the thread's row of the thread x home matrix. An untouched page goes
//! through [`__profcc_first_touch`], which makes the calling thread its first toucher.
//!
//! Homes (a page's entry and a thread's home are the same numbers):
//! - `thread`: thread id t has home t + 1 (ids of `MAX_HOMES` - 1 and more share the last
//!   home, `MAX_HOMES`, which also means "no home");
//! - `emulate` (`numa_nodes` = N): node + 1, where a thread bound to CPUs of one node is on
//!   that node (CPU c of n on node c x N / n) and any other thread t is on node t mod N; a page
//!   is on its first toucher's node. The mask is read when the thread starts and again at a
//!   first touch made on a CPU of another node than its home (a binding made later); the
//!   accesses made before such a move count against the home the thread had then;
//! - `real` (NUMAPROF): node + 1 of the machine's nodes: a thread's node is the one it runs on
//!   (getcpu, read at its start and at each first touch), a page's the one `move_pages` reports
//!   at its first touch, or the toucher's when it is not populated yet (the default first-touch
//!   policy); cached, never refreshed (kernel migrations and huge pages are not followed). On
//!   a one-node machine, or where the calls fail, everything is node 0: all local;
//! - `off`: every thread `MAX_HOMES`.
//! A page's home never changes once set (no migration in these models).
//!
//! Not yet: memory policies, per-site
//! and per-object counts, remote invalidations, migration risk, imbalance, the binding plan
//! (docs/numa.md).

use crate::analysis::{Analysis, DumpContext, ThreadStart};
use crate::mem::SpinLock;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use profcc_abi::{MAX_HOMES, PAGE_SHADOW, PAGE_SHADOW_SIZE};
use std::collections::HashMap;

/// The model in force, set by `init` from the `numa` option.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Model {
    Thread,
    Emulate,
    Real,
    Off,
}

static MODEL: AtomicU32 = AtomicU32::new(0); // 0: Thread, 1: Off, 2: Emulate
/// `numa_nodes` (emulate).
static NODES: AtomicU32 = AtomicU32::new(4);
/// 1: the page shadow is mapped; 2: it could not be.
static SHADOW: AtomicU32 = AtomicU32::new(0);
/// Pages given a home.
static PAGES: AtomicU64 = AtomicU64::new(0);

/// First touches by place: (the access's code address, thread id, allocation stack of the
/// object holding the page or `u32::MAX`) -> (pages, the address of the first such access).
type FirstTouches = HashMap<(u64, u32, u32), (u64, u64)>;
static FIRST_TOUCHES: SpinLock<Option<FirstTouches>> = SpinLock::new(None);
/// Most places kept; first touches at further places are counted in `PAGES` only.
const MAX_FIRST_TOUCH_PLACES: usize = 4096;

fn model() -> Model {
    match MODEL.load(Relaxed) {
        1 => Model::Off,
        2 => Model::Emulate,
        3 => Model::Real,
        _ => Model::Thread,
    }
}

/// CPUs configured (`_SC_NPROCESSORS_CONF`), read on first use.
static NCPUS: AtomicU32 = AtomicU32::new(0);

fn ncpus() -> usize {
    let mut n = NCPUS.load(Relaxed);
    if n == 0 {
        n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1) as u32;
        NCPUS.store(n, Relaxed);
    }
    n as usize
}

/// `real`: the node the calling thread runs on now (getcpu), 0 when the kernel does not say.
fn current_node() -> u32 {
    let (mut cpu, mut node) = (0u32, 0u32);
    let r = unsafe {
        libc::syscall(
            libc::SYS_getcpu,
            &mut cpu as *mut u32,
            &mut node as *mut u32,
            core::ptr::null_mut::<libc::c_void>(),
        )
    };
    if r == 0 {
        node.min(MAX_HOMES - 2)
    } else {
        0
    }
}

/// `real`: the node of the page holding `p` (move_pages without targets). A page not yet
/// populated (the access that follows populates it) or a kernel that does not answer: the
/// calling thread's node, where the default first-touch policy puts it.
fn page_node(p: *const u8, here: u32) -> u32 {
    let page = (p as usize & !((1usize << profcc_abi::PAGE_SHIFT) - 1)) as *mut libc::c_void;
    let mut pages = [page];
    let mut status = [-1i32];
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            0,
            1usize,
            pages.as_mut_ptr(),
            core::ptr::null::<i32>(),
            status.as_mut_ptr(),
            0,
        )
    };
    if r == 0 && status[0] >= 0 {
        (status[0] as u32).min(MAX_HOMES - 2)
    } else {
        here
    }
}

/// `real`: nodes online (/sys/devices/system/node/online, "0" or "0-3"), 1 when unknown.
fn nodes_online() -> u32 {
    std::fs::read_to_string("/sys/devices/system/node/online")
        .ok()
        .and_then(|s| {
            s.trim()
                .split(',')
                .filter_map(|r| r.rsplit('-').next()?.trim().parse::<u32>().ok())
                .max()
        })
        .map_or(1, |m| m + 1)
}

/// The emulated node of CPU `c`.
fn node_of_cpu(c: usize, nodes: u32) -> u32 {
    (c * nodes as usize / ncpus()) as u32
}

/// The emulated node of the calling thread (dense id `id`): the node of the CPUs its affinity
/// mask allows when they are all on one node and are not all the CPUs, else `id` mod nodes.
fn emulated_node(id: u32, nodes: u32) -> u32 {
    let ncpus = ncpus();
    let mut set: libc::cpu_set_t = unsafe { core::mem::zeroed() };
    let ok =
        unsafe { libc::sched_getaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &mut set) }
            == 0;
    if ok {
        let allowed: Vec<usize> = (0..ncpus.min(libc::CPU_SETSIZE as usize))
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect();
        if !allowed.is_empty() && allowed.len() < ncpus {
            let first = node_of_cpu(allowed[0], nodes);
            if allowed.iter().all(|&c| node_of_cpu(c, nodes) == first) {
                return first;
            }
        }
    }
    id % nodes
}

const ROW: usize = MAX_HOMES as usize + 1;

/// A thread's part of the analysis: its home, its first touches and its row.
#[repr(C)]
struct ThreadState {
    id: AtomicU32,
    home: AtomicU32,
    first_touches: AtomicU64,
    /// Accesses counted against earlier homes (a thread bound after it started).
    local_before: AtomicU64,
    remote_before: AtomicU64,
    /// `row[home]` and the row's sum when the current home was set.
    home_since: AtomicU64,
    total_since: AtomicU64,
    row: [u64; ROW],
}

impl ThreadState {
    /// The row as it is now (read while its thread may be counting: each value at most a few
    /// accesses short).
    fn row_now(&self) -> Vec<u64> {
        (0..ROW)
            .map(|i| unsafe { core::ptr::read_volatile(self.row.as_ptr().add(i)) })
            .collect()
    }

    /// Local and remote accesses so far: against each home for the accesses made while it
    /// was the thread's home.
    fn local_remote(&self, row: &[u64]) -> (u64, u64) {
        let home = self.home.load(Relaxed) as usize;
        let total: u64 = row.iter().sum();
        let (l0, r0) = (
            self.local_before.load(Relaxed),
            self.remote_before.load(Relaxed),
        );
        if home >= MAX_HOMES as usize {
            return (l0, r0);
        }
        let local = row[home].saturating_sub(self.home_since.load(Relaxed));
        let since = total.saturating_sub(self.total_since.load(Relaxed));
        (l0 + local, r0 + since.saturating_sub(local))
    }

    /// The thread (on itself) moves to `home`: what it counted so far stays with the old one.
    fn move_to(&self, home: u32) {
        let row = self.row_now();
        let (l, r) = self.local_remote(&row);
        self.local_before.store(l, Relaxed);
        self.remote_before.store(r, Relaxed);
        self.home_since
            .store(row.get(home as usize).copied().unwrap_or(0), Relaxed);
        self.total_since.store(row.iter().sum(), Relaxed);
        self.home.store(home, Relaxed);
    }
}

extern "C" {
    fn profcc_numa_row_slot() -> *mut *mut u64;
}

/// Reserve the page shadow (128 GiB of address space, nothing committed) before any
/// initialiser runs (rt/csrc/tls.c's `.preinit_array` entry).
#[no_mangle]
pub extern "C" fn profcc_numa_preinit() {
    if SHADOW.load(Relaxed) != 0 {
        return;
    }
    let ok = crate::mem::map_fixed_zero(PAGE_SHADOW, PAGE_SHADOW_SIZE).is_ok();
    SHADOW.store(if ok { 1 } else { 2 }, Relaxed);
}

/// The NUMA hook's door (`__profcc_first_touch` in rt/csrc/tls.c, which adds the caller's
/// address `pc`): the first access of any thread to the page holding `p` (its entry read 0).
/// The calling thread becomes the page's first toucher unless another thread won the race;
/// returns the page's entry either way.
#[no_mangle]
pub extern "C" fn profcc_numa_first_touch(p: *const u8, pc: *const u8) -> u32 {
    let st = crate::analysis::current_state(&NUMA) as *const ThreadState;
    let st = unsafe { st.as_ref() };
    let mut home = st.map_or(MAX_HOMES, |s| s.home.load(Relaxed));
    // `emulate`: a thread may have been bound after it started (OpenMP runtimes bind their
    // threads themselves, some through the raw system call): when it runs on a CPU of
    // another node than its home, its mask is read again.
    if let (Some(s), Model::Real) = (st, model()) {
        let now = current_node() + 1;
        if now != home {
            s.move_to(now);
            home = now;
        }
    }
    if let (Some(s), Model::Emulate) = (st, model()) {
        let nodes = NODES.load(Relaxed);
        let cpu = unsafe { libc::sched_getcpu() };
        if cpu >= 0 && node_of_cpu(cpu as usize, nodes) + 1 != home {
            let now = emulated_node(s.id.load(Relaxed), nodes) + 1;
            if now != home {
                s.move_to(now);
                home = now;
            }
        }
    }
    // The page's home: the toucher's, except under `real`, where the kernel says.
    let page_home = match model() {
        Model::Real => page_node(p, home.saturating_sub(1)) + 1,
        _ => home,
    };
    let entry = unsafe { &*(profcc_abi::page_shadow(p as u64) as *const AtomicU32) };
    match entry.compare_exchange(0, page_home, Relaxed, Relaxed) {
        Ok(_) => {
            PAGES.fetch_add(1, Relaxed);
            let tid = st.map_or(u32::MAX, |s| {
                s.first_touches.fetch_add(1, Relaxed);
                s.id.load(Relaxed)
            });
            // The object holding the page (a heap block or mapping), for "first touched at
            // this line" per allocation site. Once per page: the lookup's locks are cheap here.
            let stack = crate::alloc::lookup(p as u64).map_or(u32::MAX, |o| o.stack);
            let _g = crate::threads::RtGuard::enter();
            let mut t = FIRST_TOUCHES.lock();
            let t = t.get_or_insert_with(HashMap::new);
            let key = (pc as u64, tid, stack);
            if let Some(e) = t.get_mut(&key) {
                e.0 += 1;
            } else if t.len() < MAX_FIRST_TOUCH_PLACES {
                t.insert(key, (1, p as u64));
            }
            page_home
        }
        Err(h) => h,
    }
}

/// The NUMA analysis in the registry (`analyses/mod.rs`).
pub struct Numa;
pub static NUMA: Numa = Numa;

impl Analysis for Numa {
    fn name(&self) -> &'static str {
        "numa"
    }
    fn thread_state_bytes(&self) -> usize {
        core::mem::size_of::<ThreadState>()
    }
    fn init(&self) {
        let o = crate::options::get();
        let m = match o.numa.as_str() {
            "off" => 1,
            "thread" => 0,
            "emulate" => 2,
            "real" => 3,
            other => {
                crate::writer::stderr_line(&format!(
                    "profcc: numa={other} is not a NUMA model (thread, emulate, real or off): using thread"
                ));
                0
            }
        };
        MODEL.store(m, Relaxed);
        NODES.store(o.numa_nodes.clamp(1, MAX_HOMES - 1), Relaxed);
    }
    fn module_registered(&self, flags: u32) {
        if flags & profcc_abi::FLAG_NUMA != 0 && SHADOW.load(Relaxed) != 1 {
            crate::writer::stderr_line(&format!(
                "profcc: the NUMA page shadow ({} GiB of address space at {PAGE_SHADOW:#x}) could not be reserved: a module built with PROFCC_INSTRUMENT=numa cannot run; rebuild it without numa",
                PAGE_SHADOW_SIZE >> 30
            ));
            unsafe { libc::_exit(125) };
        }
    }
    fn thread_start(&self, t: &ThreadStart) {
        let Some(st) = (unsafe { (t.state as *mut ThreadState).as_mut() }) else {
            return;
        };
        let home = match model() {
            Model::Thread => (t.id + 1).min(MAX_HOMES),
            Model::Emulate => emulated_node(t.id, NODES.load(Relaxed)) + 1,
            Model::Real => current_node() + 1,
            Model::Off => MAX_HOMES,
        };
        st.home.store(home, Relaxed);
        st.id.store(t.id, Relaxed);
        unsafe { *profcc_numa_row_slot() = st.row.as_mut_ptr() };
    }
    fn dump(&self, _cx: &DumpContext, p: &mut profcc_schema::Profile) {
        let mut threads = Vec::new();
        crate::analysis::each_state(&NUMA, |tid, s| {
            let s = unsafe { &*(s as *const ThreadState) };
            let home = s.home.load(Relaxed);
            let row = s.row_now();
            let by_home: Vec<(u32, u64)> = row
                .iter()
                .enumerate()
                .filter(|(_, &n)| n > 0)
                .map(|(h, &n)| (h as u32, n))
                .collect();
            let (local, remote) = s.local_remote(&row);
            if !by_home.is_empty() || s.first_touches.load(Relaxed) > 0 {
                threads.push(profcc_schema::numa::NumaThread {
                    thread: tid,
                    home,
                    local,
                    remote,
                    first_touches: s.first_touches.load(Relaxed),
                    by_home,
                });
            }
        });
        if threads.is_empty() {
            return;
        }
        threads.sort_by_key(|t| t.thread);
        let mut first_touch: Vec<profcc_schema::numa::FirstTouch> = FIRST_TOUCHES
            .lock()
            .iter()
            .flatten()
            .map(
                |(&(pc, tid, stack), &(pages, addr))| profcc_schema::numa::FirstTouch {
                    pc,
                    thread: (tid != u32::MAX).then_some(tid),
                    alloc_stack: (stack != u32::MAX).then_some(stack),
                    pages,
                    address: addr,
                },
            )
            .collect();
        first_touch.sort_by(|a, b| b.pages.cmp(&a.pages).then(a.pc.cmp(&b.pc)));
        p.numa = Some(profcc_schema::numa::Numa {
            model: match model() {
                Model::Thread => "thread",
                Model::Emulate => "emulate",
                Model::Real => "real",
                Model::Off => "off",
            }
            .into(),
            nodes: match model() {
                Model::Emulate => NODES.load(Relaxed),
                Model::Real => nodes_online(),
                _ => 0,
            },
            pages: PAGES.load(Relaxed),
            threads,
            first_touch,
        });
    }
}
