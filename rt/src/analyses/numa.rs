//! The NUMA analysis (docs/numa.md). Modules built with `PROFCC_INSTRUMENT=numa` run
//! hooks/numa.c before every access: the access's page is compared with its slot in the
//! thread's page cache and the slot's count goes up by one. A page not in its slot goes
//! through the door, [`profcc_numa_page_miss`], which adds the slot's count to the page it held
//! (the page's record in the page shadow: accesses, remote accesses, who accessed it; and the
//! thread's row of the thread x home matrix), gives an untouched page its home (the calling
//! thread is its first toucher), and hands the slot to the new page. Counts still in a cache
//! are added when the thread ends, when it frees a block, and (read, not added) at the dump.
//!
//! A page's accesses belong to the object that holds its middle byte: a heap block or mapping
//! takes its pages' counts when it is freed (the counts are then cleared for the next block;
//! the home stays, as the kernel keeps the page), live ones at the dump; pages no object
//! takes are reported as runs of consecutive pages (globals, stacks, other mappings).
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
//!   (getcpu, read at its start, at each first touch and after each wait), a page's the one
//!   `move_pages` reports at its first touch, or the toucher's when it is not populated yet
//!   (the default first-touch policy), a transparent huge page's pages at once ([`huge_page`]);
//!   cached, never refreshed (kernel migrations are not
//!   followed). On a one-node machine, or where the calls fail, everything is node 0: all
//!   local;
//! - `off`: every thread `MAX_HOMES`.
//!
//! A page's home changes only through the program's own `move_pages` (and is cleared by
//! `munmap`).
//!
//! Each slot also remembers the code address that brought its page in; a flush credits that
//! site ([`SITES`]). Memory policies (`emulate`), waits, objects: see their sections below.

use crate::analysis::{Analysis, DumpContext, ThreadStart};
use crate::mem::SpinLock;
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};
use profcc_abi::{
    PageRecord, APP_LIMIT, MAX_HOMES, NUMA_NO_PAGE, NUMA_SLOTS, PAGE_SHADOW, PAGE_SHADOW_SIZE,
    PAGE_SHIFT,
};
use std::collections::{BTreeMap, HashMap, HashSet};

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
/// Pages that hold a home now: given one, less those whose home an unmapping took away (the
/// allocator analysis's pages touched, `touched_bytes`).
static HOMED_NOW: AtomicU64 = AtomicU64::new(0);

/// `n` pages were given a home.
fn homed(n: u64) {
    PAGES.fetch_add(n, Relaxed);
    HOMED_NOW.fetch_add(n, Relaxed);
}

/// Bytes of the pages the program's instrumented code has touched and that are still mapped
/// (the access shadow's pages with a home: heap, stacks, globals; a page the allocator unmaps
/// itself keeps its home), None without a module built with `numa`.
pub(crate) fn touched_bytes() -> Option<u64> {
    (IN_USE.load(Relaxed) != 0).then(|| HOMED_NOW.load(Relaxed) << PAGE_SHIFT)
}
/// 1 once a module built with `numa` registered: until then no page is counted, and frees
/// and the dump have nothing to do (every program has the analysis in its registry).
static IN_USE: AtomicU32 = AtomicU32::new(0);

/// First touches by place, and the pages touched (for the dump's walk).
#[derive(Default)]
struct Places {
    /// (the access's code address, thread id, allocation stack of the object holding the page
    /// or `u32::MAX`) -> index in `list`.
    index: HashMap<(u64, u32, u32), u32>,
    /// Per place: its key, pages, the address of the first such access.
    list: Vec<((u64, u32, u32), u64, u64)>,
    /// Every page given a home, in first-touch order.
    touched: Vec<u64>,
}
static PLACES: SpinLock<Option<Places>> = SpinLock::new(None);
/// Most places kept; first touches at further places are counted in `PAGES` only.
const MAX_FIRST_TOUCH_PLACES: usize = 4096;
const _: () = assert!(MAX_FIRST_TOUCH_PLACES < PageRecord::MAX_PLACES as usize);

/// A page's record in the page shadow.
fn record(page: u64) -> &'static PageRecord {
    unsafe { &*(profcc_abi::page_shadow(page << PAGE_SHIFT) as *const PageRecord) }
}

/// What blocks of one allocation stack took of their pages when they were freed.
static FREED: SpinLock<Option<HashMap<u32, Credit>>> = SpinLock::new(None);

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
/// Whether the page is populated already is the second value.
fn page_node(p: *const u8, here: u32) -> (u32, bool) {
    let mut status = [-1i32];
    if query_nodes(p as u64 >> PAGE_SHIFT, &mut status) && status[0] >= 0 {
        ((status[0] as u32).min(MAX_HOMES - 2), true)
    } else {
        (here, false)
    }
}

/// `move_pages` without targets for `status.len()` pages from `first` (page numbers): each
/// page's node, or a negative errno (not populated, not mapped). False: the call failed.
fn query_nodes(first: u64, status: &mut [i32]) -> bool {
    let mut pages: [*mut libc::c_void; HUGE_PAGES] = [core::ptr::null_mut(); HUGE_PAGES];
    let n = status.len().min(HUGE_PAGES);
    for (k, q) in pages[..n].iter_mut().enumerate() {
        *q = ((first + k as u64) << PAGE_SHIFT) as *mut libc::c_void;
    }
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            0,
            n,
            pages.as_mut_ptr(),
            core::ptr::null::<i32>(),
            status.as_mut_ptr(),
            0,
        )
    };
    r == 0
}

const HUGE_PAGES: usize = profcc_abi::HUGE_PAGE_PAGES as usize;
/// `real`: huge pages recognised (NUMAPROF's rule, docs/numa.md "Huge pages").
static HUGE: AtomicU64 = AtomicU64::new(0);
/// 1 when transparent huge pages are possible (not `never` in
/// /sys/kernel/mm/transparent_hugepage/enabled; read at `init` under `real`).
static THP: AtomicU32 = AtomicU32::new(0);

/// `real`, at the first touch of a page that is populated already (by an access that did not
/// go through the door for it, such as the fault of another 4 KiB page of a huge page): when
/// every page of its aligned 2 MiB is present on one node, it is a huge page. Its pages
/// without a home get that node, and the first toucher and place of the page of it that was
/// touched first: one first touch for the whole huge page (NUMAPROF). True: it is one.
fn huge_page(p: u64) -> bool {
    let first = (p >> PAGE_SHIFT) & !(HUGE_PAGES as u64 - 1);
    let mut status = [-1i32; HUGE_PAGES];
    if !query_nodes(first, &mut status) || status[0] < 0 || status.iter().any(|&s| s != status[0]) {
        return false;
    }
    let home = (status[0] as u32).min(MAX_HOMES - 2) + 1;
    // The toucher and place of the huge page: those of its first page with a home.
    let (toucher, place) = (first..first + HUGE_PAGES as u64)
        .map(record)
        .find(|r| r.home() != 0)
        .map_or((0, 0), |r| (r.toucher.load(Relaxed), r.place()));
    let mut filled = Vec::new();
    for q in first..first + HUGE_PAGES as u64 {
        let r = record(q);
        if r.claim(home).is_ok() {
            r.toucher.store(toucher, Relaxed);
            r.set_place(place);
            filled.push(q);
        }
    }
    if filled.is_empty() {
        return true;
    }
    HUGE.fetch_add(1, Relaxed);
    homed(filled.len() as u64);
    let _g = crate::threads::RtGuard::enter();
    let mut t = PLACES.lock();
    let t = t.get_or_insert_with(Places::default);
    if place > 0 && (place as usize) <= t.list.len() {
        t.list[place as usize - 1].1 += filled.len() as u64;
    }
    t.touched.extend(filled);
    true
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

/// The CPUs the process could run on when the runtime started (its affinity mask; the first
/// 1024 CPUs), for the binding plan.
static ALLOWED: [AtomicU64; 16] = [const { AtomicU64::new(0) }; 16];

/// Read the calling thread's affinity mask into [`ALLOWED`].
fn read_allowed() {
    let mut set: libc::cpu_set_t = unsafe { core::mem::zeroed() };
    if unsafe { libc::sched_getaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0
    {
        return;
    }
    for c in 0..(libc::CPU_SETSIZE as usize).min(ALLOWED.len() * 64) {
        if unsafe { libc::CPU_ISSET(c, &set) } {
            ALLOWED[c / 64].fetch_or(1 << (c % 64), Relaxed);
        }
    }
}

/// The node the calling thread is bound to: the one node of all the CPUs its affinity mask
/// allows, when they are not all the CPUs (NUMAPROF's pinned thread); the node of CPU `c` is
/// `node(c)`. None: unbound, bound to CPUs of several nodes, or the mask cannot be read.
fn bound_node(node: impl Fn(usize) -> u32) -> Option<u32> {
    let ncpus = ncpus();
    let mut set: libc::cpu_set_t = unsafe { core::mem::zeroed() };
    if unsafe { libc::sched_getaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0
    {
        return None;
    }
    let allowed: Vec<usize> = (0..ncpus.min(libc::CPU_SETSIZE as usize))
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect();
    let first = node(*allowed.first()?);
    (allowed.len() < ncpus && allowed.iter().all(|&c| node(c) == first)).then_some(first)
}

/// The node of CPU `c` on this machine (/sys/devices/system/cpu/cpuC/nodeN), 0 if unknown.
fn real_node_of_cpu(c: usize) -> u32 {
    std::fs::read_dir(format!("/sys/devices/system/cpu/cpu{c}"))
        .ok()
        .and_then(|d| {
            d.flatten().find_map(|e| {
                e.file_name()
                    .to_str()?
                    .strip_prefix("node")?
                    .parse::<u32>()
                    .ok()
            })
        })
        .unwrap_or(0)
}

/// The calling thread is pinned now, under the model in force.
fn thread_pinned() -> bool {
    match model() {
        Model::Emulate => {
            let nodes = NODES.load(Relaxed);
            bound_node(|c| node_of_cpu(c, nodes)).is_some()
        }
        Model::Real => bound_node(real_node_of_cpu).is_some(),
        _ => false,
    }
}

/// The emulated node of the calling thread (dense id `id`): the node of the CPUs it is bound
/// to ([`bound_node`]), else `id` mod nodes.
fn emulated_node(id: u32, nodes: u32) -> u32 {
    bound_node(|c| node_of_cpu(c, nodes)).unwrap_or(id % nodes)
}

const ROW: usize = MAX_HOMES as usize + 1;

/// A slot of the page cache (`struct profcc_page_slot`, hooks/profcc_hooks.h). The hook
/// compares and increments it with plain loads and stores on its own thread.
#[repr(C)]
struct Slot {
    page: AtomicU64,
    count: AtomicU64,
}

/// A thread's part of the analysis: its page cache, home, first touches and row.
#[repr(C)]
struct ThreadState {
    /// First: the block is 64-byte aligned, and so are the cache's lines.
    cache: [Slot; NUMA_SLOTS as usize],
    /// The home of each slot's page.
    slot_home: [AtomicU32; NUMA_SLOTS as usize],
    /// The code address whose access brought each slot's page in (its counts go to that site).
    slot_pc: [AtomicU64; NUMA_SLOTS as usize],
    /// Per slot, when this thread touched its page first: [`MINE_ALONE`] (no other thread
    /// had used it when the slot took it), [`MINE_JOINED`] (another had: the slot's counts
    /// are the toucher's kept accesses); 0 otherwise.
    slot_mine: [AtomicU8; NUMA_SLOTS as usize],
    /// The next slot the door looks at for a page another thread came to meanwhile.
    recheck: AtomicU32,
    id: AtomicU32,
    home: AtomicU32,
    /// 1 once `thread_start` gave the thread its cache.
    ready: AtomicU32,
    first_touches: AtomicU64,
    /// Accesses counted against earlier homes (a thread bound after it started).
    local_before: AtomicU64,
    remote_before: AtomicU64,
    /// `row[home]` and the row's sum when the current home was set.
    home_since: AtomicU64,
    total_since: AtomicU64,
    stack_lo: AtomicU64,
    stack_hi: AtomicU64,
    /// Its memory policy (`set_mempolicy`, emulate): mode, emulated nodes, next interleave.
    pol_mode: AtomicU32,
    pol_nodes: AtomicU64,
    pol_next: AtomicU64,
    /// Waits by kind (numa/waits.h: mutex, spin, cond, barrier, sem) and, under
    /// `real`, the wakes on another node.
    waits: [AtomicU64; 5],
    migrations: AtomicU64,
    /// `emulate`, `real`: 1 while its CPUs are all on one node (NUMAPROF: pinned); its
    /// accesses while it was not, and its accesses to pages no policy bound.
    pinned: AtomicU32,
    unpinned_thread: AtomicU64,
    unpinned_page: AtomicU64,
    /// Accesses by the thread while unpinned to pages no policy bound (both unpinned).
    unpinned_both: AtomicU64,
    /// 1 while the thread is in the door.
    busy: AtomicU32,
    /// The thread's own site cells: flushes add here without locked instructions; a cell
    /// taken by another site goes to [`SITES`] first, and so do all at the thread's end.
    sites: [SiteCell; LOCAL_SITES],
    row: [AtomicU64; ROW],
}

/// [`ThreadState::slot_mine`]: the thread touched the slot's page first, alone so far.
const MINE_ALONE: u8 = 1;
/// [`ThreadState::slot_mine`]: the thread touched the slot's page first, and another thread
/// had used it when the slot took it (or when the door looked again).
const MINE_JOINED: u8 = 2;

/// Site cells of a thread (direct-mapped by code address).
const LOCAL_SITES: usize = 64;

impl ThreadState {
    /// On its own thread: add slot `i`'s count to its page's record and to the row.
    fn flush(&self, i: usize) {
        let n = self.cache[i].count.load(Relaxed);
        let page = self.cache[i].page.load(Relaxed);
        if n == 0 || page == NUMA_NO_PAGE {
            return;
        }
        self.cache[i].count.store(0, Relaxed);
        let e = self.slot_home[i].load(Relaxed);
        // The thread's own counters (row, unpinned): a load and a store, no locked add (only
        // this thread writes them).
        let add = |c: &AtomicU64| c.store(c.load(Relaxed) + n, Relaxed);
        add(&self.row[(e as usize).min(ROW - 1)]);
        let rec = record(page);
        rec.accesses.fetch_add(n, Relaxed);
        let (remote, thread_free, page_free) = self.slot_state(i, page);
        if remote {
            rec.remote.fetch_add(n, Relaxed);
        }
        self.site_add(
            self.slot_pc[i].load(Relaxed),
            &SiteCounts::of(n, remote, thread_free, page_free),
        );
        if thread_free {
            add(&self.unpinned_thread);
        }
        if page_free {
            add(&self.unpinned_page);
        }
        if thread_free && page_free {
            add(&self.unpinned_both);
        }
        // The balance of the first toucher's accesses once another thread had used the page
        // against the other threads'; the one thread besides the first toucher that used it,
        // or several (set at its first access, in the door; again here for the next block on
        // a freed page).
        let me = self.id.load(Relaxed).saturating_add(1);
        if rec.toucher.load(Relaxed) == me {
            // Only the counts of a slot that took the page after the other thread came: a
            // slot that held it across that time (the toucher's initialisation still in its
            // cache) counts as before.
            if self.slot_mine[i].load(Relaxed) == MINE_JOINED {
                rec.add_balance(2 * n as i64);
            }
        } else {
            rec.add_balance(-(n as i64));
            note_user(rec, me);
            others_add(page, me - 1, n);
        }
    }

    /// On its own thread, in the door: the slot just given `page` (`rec`), and one other
    /// slot in turn: a page of its own first touch that another thread has used since the
    /// slot took it is flushed (those counts as before the other came) and counts as kept
    /// from now on. So a slot that holds such a page for long (a working set that fits the
    /// cache) splits its counts within `NUMA_SLOTS` door calls of the other's arrival.
    fn note_slot(&self, i: usize, rec: &PageRecord) {
        let me = self.id.load(Relaxed).saturating_add(1);
        let mine = if rec.toucher.load(Relaxed) != me {
            0
        } else if rec.accessor.load(Relaxed) != 0 {
            MINE_JOINED
        } else {
            MINE_ALONE
        };
        self.slot_mine[i].store(mine, Relaxed);
        let j = self.recheck.load(Relaxed) as usize % NUMA_SLOTS as usize;
        self.recheck.store((j + 1) as u32, Relaxed);
        if j != i {
            self.recheck_slot(j);
        }
    }

    /// On its own thread: slot `j`, if it holds a page of the thread's own first touch that
    /// another thread has used since the slot took it: flushed (those counts as before the
    /// other came), kept from now on.
    fn recheck_slot(&self, j: usize) {
        if self.slot_mine[j].load(Relaxed) == MINE_ALONE {
            let page = self.cache[j].page.load(Relaxed);
            if page != NUMA_NO_PAGE && record(page).accessor.load(Relaxed) != 0 {
                self.flush(j);
                self.slot_mine[j].store(MINE_JOINED, Relaxed);
            }
        }
    }

    /// Slot `i`, holding `page`: whether its accesses are remote (the slot's home is not the
    /// thread's), made by an unpinned thread, and to an unpinned page.
    fn slot_state(&self, i: usize, page: u64) -> (bool, bool, bool) {
        (
            self.slot_home[i].load(Relaxed) != self.home.load(Relaxed),
            self.pinned.load(Relaxed) == 0,
            !record(page).has(PageRecord::PINNED),
        )
    }

    /// On its own thread: `c` for site `pc`, in its own cell (the cell's old site, if any,
    /// goes to the shared table first).
    fn site_add(&self, pc: u64, c: &SiteCounts) {
        let k = (pc.wrapping_mul(profcc_abi::NUMA_SLOT_HASH) >> 58) as usize % LOCAL_SITES;
        let cell = &self.sites[k];
        let old = cell.pc.load(Relaxed);
        if old != pc {
            if old != 0 || cell.counts[0].load(Relaxed) != 0 {
                site_cell(old).add(&cell.take());
            }
            cell.pc.store(pc, Relaxed);
        }
        for (a, b) in cell.counts.iter().zip(c.0) {
            a.store(a.load(Relaxed) + b, Relaxed);
        }
    }

    /// On its own thread (its end): its site cells to the shared table.
    fn drain_sites(&self) {
        for cell in &self.sites {
            let c = cell.take();
            if c.0[0] > 0 {
                site_cell(cell.pc.load(Relaxed)).add(&c);
            }
        }
    }

    /// The thread's row of the profile (None: it made no checked access and no first touch).
    fn thread_row(&self, tid: u32) -> Option<profcc_schema::numa::NumaThread> {
        let row = self.row_now();
        let by_home: Vec<(u32, u64)> = row
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(h, &n)| (h as u32, n))
            .collect();
        let (local, remote) = self.local_remote(&row);
        let first_touches = self.first_touches.load(Relaxed);
        if by_home.is_empty() && first_touches == 0 {
            return None;
        }
        Some(profcc_schema::numa::NumaThread {
            thread: tid,
            home: self.home.load(Relaxed),
            local,
            remote,
            first_touches,
            by_home,
            waits: profcc_schema::numa::Waits {
                mutex: self.waits[0].load(Relaxed),
                spin: self.waits[1].load(Relaxed),
                cond: self.waits[2].load(Relaxed),
                barrier: self.waits[3].load(Relaxed),
                sem: self.waits[4].load(Relaxed),
            },
            migrations: self.migrations.load(Relaxed),
            pinned: self.pinned.load(Relaxed) == 1,
            unpinned_thread: self.unpinned_thread.load(Relaxed),
            unpinned_page: self.unpinned_page.load(Relaxed),
            unpinned_both: self.unpinned_both.load(Relaxed),
        })
    }

    /// Counts not yet in the shared tables (in its cache or its site cells)?
    fn holds_counts(&self) -> bool {
        self.cache.iter().any(|s| s.count.load(Relaxed) > 0)
            || self.sites.iter().any(|c| c.read().0[0] > 0)
    }

    /// On its own thread: every slot.
    fn flush_all(&self) {
        if self.ready.load(Relaxed) == 1 {
            (0..NUMA_SLOTS as usize).for_each(|i| self.flush(i));
        }
    }

    /// The row as it is now, counts still in the cache included (read while its thread may
    /// be counting: each value at most a few accesses short).
    fn row_now(&self) -> Vec<u64> {
        let mut row: Vec<u64> = self.row.iter().map(|r| r.load(Relaxed)).collect();
        for (i, s) in self.cache.iter().enumerate() {
            if s.page.load(Relaxed) != NUMA_NO_PAGE {
                let e = (self.slot_home[i].load(Relaxed) as usize).min(ROW - 1);
                row[e] += s.count.load(Relaxed);
            }
        }
        row
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
        self.flush_all();
        let row = self.row_now();
        let (l, r) = self.local_remote(&row);
        self.local_before.store(l, Relaxed);
        self.remote_before.store(r, Relaxed);
        self.home_since
            .store(row.get(home as usize).copied().unwrap_or(0), Relaxed);
        self.total_since.store(row.iter().sum(), Relaxed);
        self.home.store(home, Relaxed);
        self.pinned.store(thread_pinned() as u32, Relaxed);
    }
}

/// Accesses by site: a cell per code address (the return address of the door's call, just
/// after the access), counting every access a thread's cache slot counted while that access's
/// page was in it (the site that brought the page in takes the accesses of the other sites of
/// the loop to that page: docs/numa.md, "Sites"). Filled in the door, a flushed slot at a time.
struct SiteCell {
    pc: AtomicU64,
    /// Accesses, remote ones, ones by a thread not bound to one node, ones to a page no
    /// policy bound (as [`SiteCounts`]).
    counts: [AtomicU64; 4],
}
const SITE_CELLS: usize = 4096;
/// Cells looked at for a code address before its counts go to the last cell (code address 0:
/// "other sites").
const SITE_PROBES: usize = 32;
static SITES: [SiteCell; SITE_CELLS] = [const {
    SiteCell {
        pc: AtomicU64::new(0),
        counts: [const { AtomicU64::new(0) }; 4],
    }
}; SITE_CELLS];

/// A site's counts: accesses, remote, unpinned thread, unpinned page.
#[derive(Clone, Copy, Default)]
struct SiteCounts([u64; 4]);

impl SiteCounts {
    /// `n` accesses by a thread to one page.
    fn of(n: u64, remote: bool, thread_free: bool, page_free: bool) -> SiteCounts {
        SiteCounts([
            n,
            n * remote as u64,
            n * thread_free as u64,
            n * page_free as u64,
        ])
    }
    fn merge(&mut self, o: &SiteCounts) {
        for (a, b) in self.0.iter_mut().zip(o.0) {
            *a += b;
        }
    }
}

impl SiteCell {
    fn add(&self, c: &SiteCounts) {
        for (a, b) in self.counts.iter().zip(c.0) {
            if b > 0 {
                a.fetch_add(b, Relaxed);
            }
        }
    }
    fn read(&self) -> SiteCounts {
        SiteCounts(core::array::from_fn(|k| self.counts[k].load(Relaxed)))
    }
    /// A thread's own cell: its counts, now zero.
    fn take(&self) -> SiteCounts {
        SiteCounts(core::array::from_fn(|k| self.counts[k].swap(0, Relaxed)))
    }
}

/// The cell of `pc`, taken if it has none; the overflow cell (the last, code address 0) when
/// `SITE_PROBES` cells from its own are others'.
fn site_cell(pc: u64) -> &'static SiteCell {
    let last = &SITES[SITE_CELLS - 1];
    if pc == 0 {
        return last;
    }
    let start = (pc.wrapping_mul(profcc_abi::NUMA_SLOT_HASH) >> 40) as usize % (SITE_CELLS - 1);
    for k in 0..SITE_PROBES {
        let c = &SITES[(start + k) % (SITE_CELLS - 1)];
        match c.pc.load(Relaxed) {
            x if x == pc => return c,
            0 => match c.pc.compare_exchange(0, pc, Relaxed, Relaxed) {
                Ok(_) => return c,
                Err(x) if x == pc => return c,
                Err(_) => {}
            },
            _ => {}
        }
    }
    last
}

extern "C" {
    fn profcc_numa_cache_slot() -> *mut *mut Slot;
    /// rt/csrc/tls.c: the cache of a thread with none of its own (its slots hold no page).
    static mut profcc_numa_scratch: [u8; 0];
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

/// The NUMA hook's door (`__profcc_page_miss` in rt/csrc/tls.c, which adds the caller's
/// address `pc`): the page holding `p` is not in its slot of the calling thread's cache. The
/// slot's count goes to the page it held, the new page gets its home if it has none (the
/// calling thread touched it first, unless another thread won the race), and the slot is
/// handed to it with count 0 (the hook then counts this access).
#[no_mangle]
pub extern "C" fn profcc_numa_page_miss(p: *const u8, pc: *const u8) {
    if p as u64 >= APP_LIMIT || SHADOW.load(Relaxed) != 1 {
        return;
    }
    let st = crate::analysis::current_state(&NUMA) as *const ThreadState;
    let st = unsafe { st.as_ref() }.filter(|s| s.ready.load(Relaxed) == 1);
    let page = p as u64 >> PAGE_SHIFT;
    let Some(s) = st else {
        // A thread without a cache (not started yet, or the runtime's own): the page gets a
        // home, the access is not counted.
        home_of(p, pc, None);
        return;
    };
    // A signal handler's access while this thread is in the door: leave at once (its count
    // lands on whatever page its slot holds) rather than spin on a lock this thread holds or
    // flush a slot twice.
    if s.busy.swap(1, Relaxed) == 1 {
        return;
    }
    let i = profcc_abi::numa_slot(page);
    s.flush(i);
    let home = home_of(p, pc, Some(s));
    // Another thread than the first toucher uses the page from now on: from this access,
    // the toucher's accesses count as kept.
    let rec = record(page);
    let me = s.id.load(Relaxed).saturating_add(1);
    if rec.toucher.load(Relaxed) != me {
        note_user(rec, me);
    }
    s.note_slot(i, rec);
    s.slot_home[i].store(home, Relaxed);
    s.slot_pc[i].store(pc as u64, Relaxed);
    s.cache[i].page.store(page, Relaxed);
    s.busy.store(0, Relaxed);
}

/// Thread `me` (id + 1), not the first toucher, used the page of `rec`: it is the page's
/// one other user, or the page has several.
fn note_user(rec: &PageRecord, me: u32) {
    let a = rec.accessor.load(Relaxed);
    if a != me && a != PageRecord::SEVERAL {
        if let Err(other) = rec.accessor.compare_exchange(0, me, Relaxed, Relaxed) {
            if other != me {
                rec.accessor.store(PageRecord::SEVERAL, Relaxed);
            }
        }
    }
}

/// The home of the page holding `p`, given at its first touch (by the thread `st`, at `pc`).
fn home_of(p: *const u8, pc: *const u8, st: Option<&ThreadState>) -> u32 {
    let rec = record(p as u64 >> PAGE_SHIFT);
    let h = rec.home();
    if h != 0 {
        return h;
    }
    let mut home = st.map_or(MAX_HOMES, |s| s.home.load(Relaxed));
    // `real`: the thread runs where getcpu says; `emulate`: a thread may have been bound
    // after it started (OpenMP runtimes bind their threads themselves, some through the raw
    // system call): when it runs on a CPU of another node than its home, its mask is read
    // again.
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
    // The page's home: the toucher's, except under `real`, where the kernel says, and under
    // `emulate` where a memory policy says otherwise.
    let page_home = match model() {
        Model::Real => {
            let (node, populated) = page_node(p, home.saturating_sub(1));
            if populated && THP.load(Relaxed) == 1 && huge_page(p as u64) {
                // Its home, toucher and place are the huge page's now.
                return rec.home();
            }
            node + 1
        }
        Model::Emulate => match policy_node(p as u64, st, home.saturating_sub(1)) {
            Some((n, bound)) => {
                if bound {
                    rec.set(PageRecord::PINNED);
                }
                n + 1
            }
            None => home,
        },
        _ => home,
    };
    match rec.claim(page_home) {
        Ok(()) => {
            homed(1);
            let tid = st.map_or(u32::MAX, |s| {
                s.first_touches.fetch_add(1, Relaxed);
                s.id.load(Relaxed)
            });
            rec.toucher.store(tid.wrapping_add(1), Relaxed);
            // The object holding the page (a heap block or mapping), for "first touched at
            // this line" per allocation site. Once per page: the lookup's locks are cheap here.
            let stack = crate::alloc::lookup(p as u64).map_or(u32::MAX, |o| o.stack);
            let _g = crate::threads::RtGuard::enter();
            let mut t = PLACES.lock();
            let t = t.get_or_insert_with(Places::default);
            t.touched.push(p as u64 >> PAGE_SHIFT);
            let key = (pc as u64, tid, stack);
            let at = match t.index.get(&key) {
                Some(&i) => Some(i),
                None if t.list.len() < MAX_FIRST_TOUCH_PLACES => {
                    t.list.push((key, 0, p as u64));
                    t.index.insert(key, t.list.len() as u32 - 1);
                    Some(t.list.len() as u32 - 1)
                }
                None => None,
            };
            if let Some(i) = at {
                t.list[i as usize].1 += 1;
                // Keep the PINNED bit a binding policy set above.
                rec.set_place(i + 1);
            }
            page_home
        }
        Err(h) => h,
    }
}

// ---- memory policies (`emulate`; under `real` the kernel places pages and says where) ----

const MPOL_PREFERRED: u32 = 1;
const MPOL_BIND: u32 = 2;
const MPOL_INTERLEAVE: u32 = 3;
const MPOL_PREFERRED_MANY: u32 = 5;
/// The mode flags (`MPOL_F_STATIC_NODES`, `MPOL_F_RELATIVE_NODES`, `MPOL_F_NUMA_BALANCING`).
const MPOL_MODE_FLAGS: i32 = (1 << 15) | (1 << 14) | (1 << 13);

/// A policy: its mode, the emulated nodes it names (bit n: node n), and for a range the page
/// its interleaving counts from.
#[derive(Clone, Copy, Debug)]
struct Policy {
    mode: u32,
    nodes: u64,
    base: u64,
}

/// `mbind` ranges: start -> (end, policy), page-aligned, not overlapping.
static RANGES: SpinLock<Option<BTreeMap<u64, (u64, Policy)>>> = SpinLock::new(None);
/// 1 once a range was set: until then a first touch takes no lock for the ranges.
static ANY_RANGE: AtomicU32 = AtomicU32::new(0);

/// Nodes of the machine (`real`) or 0: not read yet.
static ONLINE: AtomicU32 = AtomicU32::new(0);

fn online() -> u32 {
    let mut n = ONLINE.load(Relaxed);
    if n == 0 {
        n = nodes_online().max(1);
        ONLINE.store(n, Relaxed);
    }
    n
}

/// The first 64 nodes of a kernel node mask of `maxnode` bits.
fn read_mask(mask: *const u64, maxnode: u64) -> u64 {
    if mask.is_null() || maxnode == 0 {
        return 0;
    }
    let w = unsafe { core::ptr::read_unaligned(mask) };
    if maxnode < 64 {
        w & ((1u64 << maxnode) - 1)
    } else {
        w
    }
}

/// The emulated nodes a mask names: its bits as node numbers, except that a mask holding
/// every node of the machine (libnuma's `numa_all_nodes`, "interleave over all") means every
/// emulated node.
fn emulated_nodes(mask: u64) -> u64 {
    let bits = |n: u32| if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
    let (all_emulated, all_real) = (bits(NODES.load(Relaxed)), bits(online()));
    if mask != 0 && mask & all_real == all_real {
        all_emulated
    } else {
        mask & all_emulated
    }
}

/// `mbind(addr, len, mode, mask, maxnode)` was called (rt/csrc/interpose.c): under `emulate`
/// the range's policy for the pages touched from now on (`MPOL_DEFAULT` removes it).
#[no_mangle]
pub extern "C" fn profcc_numa_mbind(
    addr: *const u8,
    len: u64,
    mode: i32,
    mask: *const u64,
    maxnode: u64,
) {
    if model() != Model::Emulate || len == 0 {
        return;
    }
    let page = (1u64 << PAGE_SHIFT) - 1;
    let (start, end) = (
        addr as u64 & !page,
        (addr as u64).saturating_add(len).saturating_add(page) & !page,
    );
    let pol = Policy {
        mode: (mode & !MPOL_MODE_FLAGS) as u32,
        nodes: emulated_nodes(read_mask(mask, maxnode)),
        base: start >> PAGE_SHIFT,
    };
    let _g = crate::threads::RtGuard::enter();
    let mut r = RANGES.lock();
    let r = r.get_or_insert_with(BTreeMap::new);
    let cut: Vec<u64> = r
        .range(..end)
        .filter(|(_, &(e, _))| e > start)
        .map(|(&s, _)| s)
        .collect();
    for s in cut {
        let (e, p) = r.remove(&s).unwrap();
        if s < start {
            r.insert(s, (start, p));
        }
        if e > end {
            r.insert(end, (e, p));
        }
    }
    if pol.mode != 0 {
        r.insert(start, (end, pol));
        ANY_RANGE.store(1, Relaxed);
    }
}

/// `set_mempolicy(mode, mask, maxnode)`: under `emulate`, the calling thread's policy for the
/// pages it touches first from now on (outside `mbind` ranges).
#[no_mangle]
pub extern "C" fn profcc_numa_set_mempolicy(mode: i32, mask: *const u64, maxnode: u64) {
    let st = crate::analysis::current_state(&NUMA) as *const ThreadState;
    let (Some(s), Model::Emulate) = (unsafe { st.as_ref() }, model()) else {
        return;
    };
    s.pol_nodes
        .store(emulated_nodes(read_mask(mask, maxnode)), Relaxed);
    s.pol_mode.store((mode & !MPOL_MODE_FLAGS) as u32, Relaxed);
}

/// `move_pages(0, count, pages, nodes, status)` returned `result`: under `emulate` each page
/// moves to the emulated node asked for (the kernel may have refused a node this machine does
/// not have); under `real` each page's home is the node the kernel reports in `status`.
#[no_mangle]
pub extern "C" fn profcc_numa_move_pages(
    count: u64,
    pages: *const *const u8,
    nodes: *const i32,
    status: *const i32,
    result: i64,
) {
    if pages.is_null() {
        return;
    }
    let n = NODES.load(Relaxed) as i32;
    for i in 0..count as usize {
        let p = unsafe { *pages.add(i) } as u64;
        if p >= APP_LIMIT {
            continue;
        }
        let node = match model() {
            Model::Emulate if !nodes.is_null() => unsafe { *nodes.add(i) },
            Model::Real if !status.is_null() && result >= 0 => unsafe { *status.add(i) },
            _ => continue,
        };
        if node < 0 || (model() == Model::Emulate && node >= n) {
            continue;
        }
        let home = (node as u32).min(MAX_HOMES - 2) + 1;
        let rec = record(p >> PAGE_SHIFT);
        if model() == Model::Emulate {
            rec.set(PageRecord::PINNED);
        }
        if rec.move_home(home) == 0 {
            homed(1);
            let _g = crate::threads::RtGuard::enter();
            PLACES
                .lock()
                .get_or_insert_with(Places::default)
                .touched
                .push(p >> PAGE_SHIFT);
        }
    }
}

/// `emulate`: the node a memory policy puts the page holding `p` on, first touched by the
/// thread `st` running on node `here`, and whether the policy binds it there (`MPOL_BIND`);
/// None: no policy (or a local one): the toucher's.
fn policy_node(p: u64, st: Option<&ThreadState>, here: u32) -> Option<(u32, bool)> {
    let ranged = if ANY_RANGE.load(Relaxed) == 0 {
        None
    } else {
        let _g = crate::threads::RtGuard::enter();
        let r = RANGES.lock();
        r.as_ref().and_then(|r| {
            r.range(..=p)
                .next_back()
                .filter(|(_, &(e, _))| p < e)
                .map(|(_, &(_, pol))| pol)
        })
    };
    let (pol, ranged) = match (ranged, st) {
        (Some(pol), _) => (pol, true),
        (None, Some(s)) if s.pol_mode.load(Relaxed) != 0 => (
            Policy {
                mode: s.pol_mode.load(Relaxed),
                nodes: s.pol_nodes.load(Relaxed),
                base: 0,
            },
            false,
        ),
        _ => return None,
    };
    let nodes: Vec<u32> = (0..64).filter(|&b| pol.nodes >> b & 1 == 1).collect();
    if nodes.is_empty() {
        return None;
    }
    match pol.mode {
        MPOL_INTERLEAVE => {
            let k = if ranged {
                (p >> PAGE_SHIFT).saturating_sub(pol.base)
            } else {
                st.map_or(0, |s| s.pol_next.fetch_add(1, Relaxed))
            };
            Some((nodes[(k % nodes.len() as u64) as usize], false))
        }
        MPOL_PREFERRED | MPOL_BIND | MPOL_PREFERRED_MANY => Some((
            if nodes.contains(&here) {
                here
            } else {
                nodes[0]
            },
            pol.mode == MPOL_BIND,
        )),
        _ => None,
    }
}

/// The calling thread waited (the wait interposers of numa/waits.h, compiled inside
/// rt/csrc/interpose.c; `kind` as its `WAIT_*`). Under `real` it may have woken on another
/// node: its home follows. `WAIT_MET` (5, the last arrival at a barrier) is not a wait: only
/// the page cache is looked at again.
#[no_mangle]
pub extern "C" fn profcc_numa_waited(kind: i32) {
    let st = crate::analysis::current_state(&NUMA) as *const ThreadState;
    let Some(s) = (unsafe { st.as_ref() }).filter(|s| s.ready.load(Relaxed) == 1) else {
        return;
    };
    if let Some(w) = s.waits.get(kind as usize) {
        w.fetch_add(1, Relaxed);
    }
    // Threads meet at waits: every slot of its own pages is looked at again (a working set
    // that fits the cache makes no door calls).
    if s.busy.swap(1, Relaxed) == 0 {
        (0..NUMA_SLOTS as usize).for_each(|j| s.recheck_slot(j));
        s.busy.store(0, Relaxed);
    }
    if model() == Model::Real && kind < 5 {
        let now = current_node() + 1;
        if now != s.home.load(Relaxed) {
            s.move_to(now);
            s.migrations.fetch_add(1, Relaxed);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Accesses per thread: a page's record counts all its accesses; the threads other than its
// first toucher that used it have theirs here too (added at each flush), so that an object's
// accesses split exactly by thread: the toucher's are the page's count less the others'.

/// Page -> (thread id, accesses flushed) of each thread besides the first toucher that used
/// it, and (`UNSPLIT`, accesses) past `MAX_OTHERS_PER_PAGE` threads. In shards by page.
type OthersMap = HashMap<u64, PageOthers, core::hash::BuildHasherDefault<PageHash>>;

/// One page's other threads: the first inline (most pages have at most one: no allocation,
/// one cache line), the rest in `more`.
#[derive(Default, Clone)]
struct PageOthers {
    first: (u32, u64),
    more: Vec<(u32, u64)>,
}

impl PageOthers {
    fn add(&mut self, tid: u32, n: u64) {
        if self.first.1 == 0 || self.first.0 == tid {
            self.first = (tid, self.first.1 + n);
            return;
        }
        if let Some(x) = self.more.iter_mut().find(|x| x.0 == tid) {
            x.1 += n;
            return;
        }
        let who = if self.more.len() + 1 >= MAX_OTHERS_PER_PAGE {
            UNSPLIT
        } else {
            tid
        };
        match self.more.iter_mut().find(|x| x.0 == who) {
            Some(x) => x.1 += n,
            None => self.more.push((who, n)),
        }
    }

    fn list(&self) -> Vec<(u32, u64)> {
        let mut v = self.more.clone();
        if self.first.1 > 0 {
            v.push(self.first);
        }
        v
    }
}

/// A page number's hash: one multiply (the keys are page numbers nobody chooses, so the
/// default SipHash's resistance to chosen keys buys nothing).
#[derive(Default)]
struct PageHash(u64);
impl core::hash::Hasher for PageHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(0x51_7CC1_B727_220A_95);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = x.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(26);
    }
}
const OTHER_SHARDS: usize = 64;
static OTHERS: [SpinLock<Option<OthersMap>>; OTHER_SHARDS] =
    [const { SpinLock::new(None) }; OTHER_SHARDS];
/// Pages with an entry in `OTHERS`, and at most how many (then a new page's other threads go
/// uncounted by thread, and `OTHERS_FULL` says so).
static OTHER_PAGES: AtomicU64 = AtomicU64::new(0);
const MAX_OTHER_PAGES: u64 = 1 << 20;
static OTHERS_FULL: AtomicU32 = AtomicU32::new(0);
/// Threads listed per page; the accesses of more go to `UNSPLIT`.
const MAX_OTHERS_PER_PAGE: usize = 16;
/// An `OTHERS` entry's thread for accesses not split by thread.
const UNSPLIT: u32 = u32::MAX;

fn others_shard(page: u64) -> &'static SpinLock<Option<OthersMap>> {
    &OTHERS[(page.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize % OTHER_SHARDS]
}

/// Thread `tid` (not the page's first toucher) counted `n` accesses on `page` (a flush).
fn others_add(page: u64, tid: u32, n: u64) {
    let _g = crate::threads::RtGuard::enter();
    let mut m = others_shard(page).lock();
    let m = m.get_or_insert_with(Default::default);
    match m.get_mut(&page) {
        Some(l) => l.add(tid, n),
        None => {
            if OTHER_PAGES.fetch_add(1, Relaxed) >= MAX_OTHER_PAGES {
                OTHER_PAGES.fetch_sub(1, Relaxed);
                OTHERS_FULL.store(1, Relaxed);
                return;
            }
            m.entry(page).or_default().add(tid, n);
        }
    }
}

/// The other threads' accesses on `page` so far.
fn others_of(page: u64) -> Vec<(u32, u64)> {
    let _g = crate::threads::RtGuard::enter();
    let m = others_shard(page).lock();
    m.as_ref()
        .and_then(|m| m.get(&page).map(PageOthers::list))
        .unwrap_or_default()
}

/// A freed block took `page`'s counts: the next one starts without other threads.
fn others_clear(page: u64) {
    let _g = crate::threads::RtGuard::enter();
    let mut m = others_shard(page).lock();
    if m.as_mut().and_then(|m| m.remove(&page)).is_some() {
        OTHER_PAGES.fetch_sub(1, Relaxed);
    }
}

/// What the pages of one object (or of all blocks of one allocation stack) counted.
#[derive(Default, Clone)]
struct Credit {
    instances: u64,
    address: u64,
    bytes: u64,
    pages: u64,
    accesses: u64,
    remote: u64,
    /// Accesses to its pages that no policy bound.
    unpinned_page: u64,
    /// First-touch place index + 1 (0: none) -> pages.
    places: BTreeMap<u32, u64>,
    /// Thread id -> (first offset, end offset, pages) of the pages it alone accessed.
    threads: BTreeMap<u32, (u64, u64, u64)>,
    shared_pages: u64,
    /// Of the shared pages, those used by their first toucher and one other thread, both
    /// all along ([`profcc_analysis::numa::kept_using`]).
    kept_pages: u64,
    moved_pages: u64,
    /// Pages a freed heap block held before (their home is an earlier lifetime's).
    reused_pages: u64,
    /// Each counted page, when `detail` (runs of other memory).
    per_page: Vec<profcc_schema::numa::PageCount>,
    detail: bool,
    /// Thread id -> its accesses to the pages; and those not split by thread (`UNSPLIT`).
    by_thread: BTreeMap<u32, u64>,
}

/// Counts still in other threads' caches, read at the dump: page -> (accesses, remote, id + 1
/// of the one thread or `SEVERAL`, their part of the page's balance
/// ([`profcc_abi::PageRecord::balance`]), each thread's accesses by id).
type Pending = HashMap<u64, (u64, u64, u32, i64, Vec<(u32, u64)>)>;

impl Credit {
    /// Add the page `page` (at offset `off` of the object) with its record's counts and the
    /// pending ones.
    fn add_page(&mut self, page: u64, off: u64, pending: Option<&Pending>) {
        let rec = record(page);
        let (mut n, mut remote, mut acc, mut balance) = (
            rec.accesses.load(Relaxed),
            rec.remote.load(Relaxed),
            rec.accessor.load(Relaxed),
            rec.balance.load(Relaxed) as i64,
        );
        let toucher = rec.toucher.load(Relaxed);
        // A page no other thread used (its accessor unset) has no side-map entry: no lookup.
        let mut others = if acc != 0 {
            others_of(page)
        } else {
            Vec::new()
        };
        if let Some((pn, pr, pa, pk, by)) = pending.and_then(|m| m.get(&page)) {
            let pa = *pa;
            n += pn;
            remote += pr;
            balance += pk;
            acc = match acc {
                _ if pa == 0 || pa == toucher => acc,
                0 => pa,
                a if a == pa => a,
                _ => PageRecord::SEVERAL,
            };
            for &(t, c) in by {
                if t.saturating_add(1) == toucher {
                    continue;
                }
                match others.iter_mut().find(|x| x.0 == t) {
                    Some(x) => x.1 += c,
                    None => others.push((t, c)),
                }
            }
        }
        if n == 0 && rec.home() == 0 {
            return;
        }
        // By thread: the other threads' as listed; the first toucher's the rest (unless the
        // list was full when another thread came: then the rest is not split).
        let listed: u64 = others.iter().map(|x| x.1).sum();
        let lost = acc != 0 && others.is_empty() && OTHERS_FULL.load(Relaxed) != 0;
        let rest = n.saturating_sub(listed);
        let first = if toucher == 0 || lost {
            UNSPLIT
        } else {
            toucher - 1
        };
        let mut page_by: Vec<(u32, u64)> = others;
        match page_by.iter_mut().find(|x| x.0 == first) {
            Some(x) => x.1 += rest,
            None => page_by.push((first, rest)),
        }
        page_by.retain(|x| x.1 > 0);
        page_by.sort_unstable();
        for &(t, c) in &page_by {
            *self.by_thread.entry(t).or_default() += c;
        }
        self.pages += 1;
        self.accesses += n;
        self.remote += remote;
        let pinned = rec.has(PageRecord::PINNED);
        if rec.has(PageRecord::REUSED) {
            self.reused_pages += 1;
        }
        if !pinned {
            self.unpinned_page += n;
        }
        *self.places.entry(rec.place()).or_default() += 1;
        // The page's user: its one other thread (a moved page), else its first toucher. A
        // page its toucher kept using with one other thread is shared by the two.
        let two =
            acc != 0 && acc != PageRecord::SEVERAL && profcc_analysis::numa::kept_using(balance);
        let user = match acc {
            PageRecord::SEVERAL => {
                self.shared_pages += 1;
                0
            }
            0 => toucher,
            _ if two => {
                self.shared_pages += 1;
                self.kept_pages += 1;
                0
            }
            a => {
                self.moved_pages += 1;
                a
            }
        };
        if self.detail && self.per_page.len() < profcc_schema::numa::MAX_RUN_DETAIL as usize {
            self.per_page.push(profcc_schema::numa::PageCount {
                offset: off,
                accesses: n,
                remote,
                shared: acc == PageRecord::SEVERAL || two,
                moved: acc != 0 && acc != PageRecord::SEVERAL && !two,
                kept: two,
                pinned,
                by_thread: page_by
                    .iter()
                    .filter(|x| x.0 != UNSPLIT)
                    .map(|&(thread, accesses)| profcc_schema::numa::ThreadAccesses {
                        thread,
                        accesses,
                    })
                    .collect(),
                unsplit: page_by.iter().find(|x| x.0 == UNSPLIT).map_or(0, |x| x.1),
            });
        }
        if user != 0 {
            let t = self.threads.entry(user - 1).or_insert((u64::MAX, 0, 0));
            t.0 = t.0.min(off);
            t.1 = t.1.max(off + (1 << PAGE_SHIFT));
            t.2 += 1;
        }
    }

    /// The pages whose middle byte lies in `[start, start + size)`.
    fn of_object(start: u64, size: u64, pending: Option<&Pending>) -> Credit {
        let mut c = Credit {
            instances: 1,
            address: start,
            bytes: size,
            ..Credit::default()
        };
        for page in pages_of(start, size) {
            c.add_page(page, (page << PAGE_SHIFT).saturating_sub(start), pending);
        }
        c
    }

    fn merge(&mut self, o: Credit) {
        self.instances += o.instances;
        if self.address == 0 {
            self.address = o.address;
        }
        self.bytes = self.bytes.max(o.bytes);
        self.pages += o.pages;
        self.accesses += o.accesses;
        self.remote += o.remote;
        self.unpinned_page += o.unpinned_page;
        for (k, v) in o.places {
            *self.places.entry(k).or_default() += v;
        }
        for (k, (a, b, n)) in o.threads {
            let t = self.threads.entry(k).or_insert((u64::MAX, 0, 0));
            t.0 = t.0.min(a);
            t.1 = t.1.max(b);
            t.2 += n;
        }
        for (k, v) in o.by_thread {
            *self.by_thread.entry(k).or_default() += v;
        }
        self.shared_pages += o.shared_pages;
        self.kept_pages += o.kept_pages;
        self.moved_pages += o.moved_pages;
        self.reused_pages += o.reused_pages;
        self.per_page.clear();
    }
}

/// The first page middle at or after `start`.
fn first_middle(start: u64) -> u64 {
    let half = 1u64 << (PAGE_SHIFT - 1);
    ((start + half - 1) & !((1u64 << PAGE_SHIFT) - 1)) + half
}

/// The pages an object `[start, start + size)` takes: those whose middle byte it holds.
fn pages_of(start: u64, size: u64) -> impl Iterator<Item = u64> {
    let end = start.saturating_add(size).min(APP_LIMIT);
    (first_middle(start)..end)
        .step_by(1 << PAGE_SHIFT)
        .map(|mid| mid >> PAGE_SHIFT)
}

/// A block is being freed: it takes its pages' counts, which are cleared for the next one.
fn object_freed(o: &crate::analysis::ObjectInfo) {
    if IN_USE.load(Relaxed) == 0
        || SHADOW.load(Relaxed) != 1
        || pages_of(o.start, o.size).next().is_none()
    {
        return;
    }
    let st = crate::analysis::current_state(&NUMA) as *const ThreadState;
    let st = unsafe { st.as_ref() };
    // In the door till the end: a signal handler's access meanwhile must not come in and wait
    // for a lock held here (`OTHERS`). Inside the door already (a handler freeing), the slots
    // are left alone.
    let entered = st.is_some_and(|s| s.busy.swap(1, Relaxed) == 0);
    struct Leave<'a>(Option<&'a ThreadState>, bool);
    impl Drop for Leave<'_> {
        fn drop(&mut self) {
            if let (Some(s), true) = (self.0, self.1) {
                s.busy.store(0, Relaxed);
            }
        }
    }
    let _leave = Leave(st, entered);
    if let (Some(s), true) = (st, entered) {
        s.flush_all();
    }
    let c = Credit::of_object(o.start, o.size, None);
    if c.pages == 0 {
        return;
    }
    for page in pages_of(o.start, o.size) {
        let rec = record(page);
        rec.accesses.store(0, Relaxed);
        rec.remote.store(0, Relaxed);
        rec.accessor.store(0, Relaxed);
        rec.balance.store(0, Relaxed);
        others_clear(page);
        if o.kind == crate::alloc::KIND_MMAP {
            // Unmapped: the kernel frees the page; the next mapping here is touched anew
            // (its home, place and flags go).
            if rec.state.swap(0, Relaxed) & PageRecord::HOME_MASK != 0 {
                HOMED_NOW.fetch_sub(1, Relaxed);
            }
            rec.toucher.store(0, Relaxed);
        } else if rec.home() != 0 {
            // The page keeps its home: the next block here reuses it.
            rec.set(PageRecord::REUSED);
        }
    }
    let mut f = FREED.lock();
    let f = f.get_or_insert_with(HashMap::new);
    match f.get_mut(&o.stack) {
        Some(e) => e.merge(c),
        None => {
            f.insert(o.stack, c);
        }
    }
}

/// Most objects and runs in the profile (the most remote accesses first).
const MAX_OBJECTS: usize = 1000;

/// Every object with counted pages: (allocation stack, stack of thread, credit). Blocks and
/// mappings by allocation stack, freed and live together; then the pages no live object holds,
/// as runs of consecutive pages (split where a thread's stack begins or ends).
fn objects(
    pending: &Pending,
    stacks: &[(u64, u64, u32)],
) -> Vec<(Option<u32>, Option<u32>, Credit)> {
    let mut by_stack: HashMap<u32, Credit> = FREED.lock().clone().unwrap_or_default();
    let mut claimed: HashSet<u64> = HashSet::new();
    let mut live = Vec::new();
    crate::alloc::each_live(
        |start, size| pages_of(start, size).next().is_some(),
        |o| live.push(o),
    );
    for o in live {
        let c = Credit::of_object(o.start, o.size, Some(pending));
        if c.pages == 0 {
            continue;
        }
        claimed.extend(pages_of(o.start, o.size));
        match by_stack.get_mut(&o.stack) {
            Some(e) => e.merge(c),
            None => {
                by_stack.insert(o.stack, c);
            }
        }
    }
    let mut out: Vec<(Option<u32>, Option<u32>, Credit)> = by_stack
        .into_iter()
        .map(|(k, c)| (Some(k), None, c))
        .collect();
    let mut pages: Vec<u64> = PLACES
        .lock()
        .as_ref()
        .map_or(Vec::new(), |t| t.touched.clone());
    pages.sort_unstable();
    pages.dedup();
    let stack_of = |page: u64| {
        let a = page << PAGE_SHIFT;
        stacks
            .iter()
            .find(|&&(lo, hi, _)| lo <= a && a < hi)
            .map(|&(_, _, t)| t)
    };
    let mut run: Option<(u64, u64, Option<u32>, Credit)> = None; // (first, next page, stack of)
    for page in pages.into_iter().filter(|p| !claimed.contains(p)) {
        let owner = stack_of(page);
        if let Some((first, next, o, c)) = run.take() {
            if next == page && o == owner {
                let mut c = c;
                c.add_page(page, (page - first) << PAGE_SHIFT, Some(pending));
                run = Some((first, page + 1, o, c));
                continue;
            }
            let mut c = c;
            c.bytes = (next - first) << PAGE_SHIFT;
            if c.pages > 0 {
                out.push((None, o, c));
            }
        }
        let mut c = Credit {
            instances: 1,
            address: page << PAGE_SHIFT,
            detail: true,
            ..Credit::default()
        };
        c.add_page(page, 0, Some(pending));
        run = Some((page, page + 1, owner, c));
    }
    if let Some((first, next, o, mut c)) = run {
        c.bytes = (next - first) << PAGE_SHIFT;
        if c.pages > 0 {
            out.push((None, o, c));
        }
    }
    out.sort_by(|a, b| {
        (b.2.remote, b.2.accesses, a.2.address).cmp(&(a.2.remote, a.2.accesses, b.2.address))
    });
    out.truncate(MAX_OBJECTS);
    out
}

/// What the dump needs of a thread that ended (its block went to a later thread): its row,
/// its stack (lo, hi) and its id.
static ENDED: SpinLock<Vec<(Option<profcc_schema::numa::NumaThread>, (u64, u64), u32)>> =
    SpinLock::new(Vec::new());

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
                crate::log::stderr_line(&format!(
                    "profcc: numa={other} is not a NUMA model (thread, emulate, real or off): using thread"
                ));
                0
            }
        };
        MODEL.store(m, Relaxed);
        if m == 3 {
            let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled");
            let possible = thp.is_ok_and(|t| !t.contains("[never]"));
            THP.store(possible as u32, Relaxed);
        }
        NODES.store(o.numa_nodes.clamp(1, MAX_HOMES - 1), Relaxed);
        read_allowed();
    }
    fn module_registered(&self, flags: u32) {
        if flags & profcc_abi::FLAG_NUMA != 0 {
            IN_USE.store(1, Relaxed);
        }
        if flags & profcc_abi::FLAG_NUMA != 0 && SHADOW.load(Relaxed) != 1 {
            crate::log::stderr_line(&format!(
                "profcc: the NUMA page shadow ({} GiB of address space at {PAGE_SHADOW:#x}) could not be reserved: a module built with PROFCC_INSTRUMENT=numa cannot run; rebuild it without numa",
                PAGE_SHADOW_SIZE >> 30
            ));
            unsafe { libc::_exit(125) };
        }
    }
    fn thread_start(&self, t: &ThreadStart) {
        let Some(st) = (unsafe { (t.state as *mut ThreadState).as_ref() }) else {
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
        st.pinned.store(thread_pinned() as u32, Relaxed);
        st.stack_lo.store(t.stack_lo, Relaxed);
        st.stack_hi.store(t.stack_hi, Relaxed);
        st.ready.store(1, Relaxed);
        unsafe { *profcc_numa_cache_slot() = st.cache.as_ptr() as *mut Slot };
    }
    fn thread_exit(&self) {
        let st = crate::analysis::current_state(&NUMA) as *const ThreadState;
        if let Some(s) = unsafe { st.as_ref() } {
            s.flush_all();
            s.drain_sites();
        }
    }
    fn thread_retire(&self, tid: u32, state: *mut u8) -> bool {
        let s = unsafe { &*(state as *const ThreadState) };
        if s.holds_counts() {
            return true; // (its exit callback flushed and drained them: not expected)
        }
        // Its later accesses (a TLS destructor's) go through the door, as before its start.
        unsafe {
            *profcc_numa_cache_slot() = core::ptr::addr_of_mut!(profcc_numa_scratch) as *mut Slot
        };
        // Nothing to keep while no module has the page check (the default build).
        if SHADOW.load(Relaxed) == 1 && IN_USE.load(Relaxed) != 0 {
            let stack = (s.stack_lo.load(Relaxed), s.stack_hi.load(Relaxed));
            ENDED.lock().push((s.thread_row(tid), stack, tid));
        }
        false
    }
    fn object_events(&self) -> crate::analysis::ObjectEvents {
        crate::analysis::ObjectEvents {
            alloc: false,
            free: true,
        }
    }
    fn object_free(&self, o: &crate::analysis::ObjectInfo) {
        object_freed(o);
    }
    fn fork_prepare(&self) {
        core::mem::forget(ENDED.lock());
        core::mem::forget(RANGES.lock());
        core::mem::forget(PLACES.lock());
        core::mem::forget(FREED.lock());
        for o in &OTHERS {
            core::mem::forget(o.lock());
        }
    }
    fn fork_parent(&self) {
        unsafe {
            for o in OTHERS.iter().rev() {
                o.force_unlock();
            }
            FREED.force_unlock();
            PLACES.force_unlock();
            RANGES.force_unlock();
            ENDED.force_unlock();
        }
    }
    fn fork_child(&self) {
        unsafe {
            for o in OTHERS.iter().rev() {
                o.force_unlock();
            }
            FREED.force_unlock();
            PLACES.force_unlock();
            RANGES.force_unlock();
            ENDED.force_unlock();
        }
        // The parent's ended threads are the parent's profile's.
        ENDED.lock().clear();
    }
    fn summary(
        &self,
        p: &profcc_schema::Profile,
        top: usize,
    ) -> Option<crate::analysis::SummarySection> {
        let n = p.numa.as_ref()?;
        let found = profcc_analysis::numa::run_finding(n, p.duration_ns, None);
        Some(crate::analysis::SummarySection {
            title: "NUMA locality (top findings):".into(),
            lines: profcc_analysis::findings::summary_lines(found.into_iter().collect(), top),
        })
    }
    fn dump(&self, _cx: &DumpContext, p: &mut profcc_schema::Profile) {
        if SHADOW.load(Relaxed) != 1 || IN_USE.load(Relaxed) == 0 {
            return;
        }
        let me = crate::analysis::current_state(&NUMA) as *const ThreadState;
        if let Some(s) = unsafe { me.as_ref() } {
            s.flush_all();
        }
        let mut threads = Vec::new();
        let mut pending = Pending::new();
        let mut stacks: Vec<(u64, u64, u32)> = Vec::new();
        // Sites: the flushed counts, then (below) those still in running threads' caches.
        let mut sites: HashMap<u64, SiteCounts> = HashMap::new();
        for c in SITES.iter() {
            let counts = c.read();
            if counts.0[0] > 0 {
                sites.entry(c.pc.load(Relaxed)).or_default().merge(&counts);
            }
        }
        crate::analysis::each_state(&NUMA, |tid, s| {
            let s = unsafe { &*(s as *const ThreadState) };
            threads.extend(s.thread_row(tid));
            let (lo, hi) = (s.stack_lo.load(Relaxed), s.stack_hi.load(Relaxed));
            if lo < hi {
                stacks.push((lo, hi, tid));
            }
            // Its own site cells (read, not added: a running thread may still add to them).
            for cell in &s.sites {
                let c = cell.read();
                if c.0[0] > 0 {
                    sites.entry(cell.pc.load(Relaxed)).or_default().merge(&c);
                }
            }
            // Counts still in the cache of a thread that is running (or ended without its
            // exit callback): read, not added.
            if s.ready.load(Relaxed) == 1 {
                for (i, slot) in s.cache.iter().enumerate() {
                    let (page, n) = (slot.page.load(Relaxed), slot.count.load(Relaxed));
                    if page == NUMA_NO_PAGE || n == 0 {
                        continue;
                    }
                    let (is_remote, thread_free, page_free) = s.slot_state(i, page);
                    let remote = if is_remote { n } else { 0 };
                    sites
                        .entry(s.slot_pc[i].load(Relaxed))
                        .or_default()
                        .merge(&SiteCounts::of(n, is_remote, thread_free, page_free));
                    let who = tid.saturating_add(1);
                    let rec = record(page);
                    let toucher = rec.toucher.load(Relaxed);
                    let e = pending.entry(page).or_insert((0, 0, 0, 0, Vec::new()));
                    e.0 += n;
                    e.1 += remote;
                    e.4.push((tid, n));
                    if who == toucher {
                        if s.slot_mine[i].load(Relaxed) == MINE_JOINED {
                            e.3 += 2 * n as i64;
                        }
                    } else {
                        e.3 -= n as i64;
                        if e.2 == 0 {
                            e.2 = who;
                        } else if e.2 != who {
                            e.2 = PageRecord::SEVERAL;
                        }
                    }
                }
            }
        });
        {
            // Threads whose blocks went to later ones (an ended one read above as well:
            // its final row).
            let ended = ENDED.lock();
            threads.retain(|t| !ended.iter().any(|e| e.2 == t.thread));
            stacks.retain(|s| !ended.iter().any(|e| e.2 == s.2));
            for (row, stack, tid) in ended.iter() {
                threads.extend(row.clone());
                if stack.0 < stack.1 {
                    stacks.push((stack.0, stack.1, *tid));
                }
            }
        }
        if threads.is_empty() {
            return;
        }
        threads.sort_by_key(|t| t.thread);
        let objects = objects(&pending, &stacks);
        let places = PLACES.lock();
        let list: &[((u64, u32, u32), u64, u64)] = places.as_ref().map_or(&[], |t| &t.list);
        let mut first_touch: Vec<profcc_schema::numa::FirstTouch> = list
            .iter()
            .map(
                |&((pc, tid, stack), pages, addr)| profcc_schema::numa::FirstTouch {
                    pc,
                    thread: (tid != u32::MAX).then_some(tid),
                    alloc_stack: (stack != u32::MAX).then_some(stack),
                    pages,
                    address: addr,
                },
            )
            .collect();
        first_touch.sort_by(|a, b| b.pages.cmp(&a.pages).then(a.pc.cmp(&b.pc)));
        let objects: Vec<profcc_schema::numa::NumaObject> = objects
            .into_iter()
            .map(|(alloc_stack, stack_of, c)| {
                let mut touches: Vec<profcc_schema::numa::ObjectTouch> = c
                    .places
                    .iter()
                    .filter(|(&k, _)| k > 0 && (k as usize) <= list.len())
                    .map(|(&k, &pages)| {
                        let ((pc, tid, _), _, _) = list[k as usize - 1];
                        profcc_schema::numa::ObjectTouch {
                            pc,
                            thread: (tid != u32::MAX).then_some(tid),
                            pages,
                        }
                    })
                    .collect();
                touches.sort_by(|a, b| b.pages.cmp(&a.pages).then(a.pc.cmp(&b.pc)));
                profcc_schema::numa::NumaObject {
                    alloc_stack,
                    stack_of,
                    address: c.address,
                    bytes: c.bytes,
                    instances: c.instances,
                    pages: c.pages,
                    accesses: c.accesses,
                    remote: c.remote,
                    unpinned_page: c.unpinned_page,
                    first_touch: touches,
                    threads: c
                        .threads
                        .iter()
                        .map(|(&t, &(a, b, n))| profcc_schema::numa::ThreadRange {
                            thread: t,
                            start: a,
                            end: b,
                            pages: n,
                        })
                        .collect(),
                    by_thread: c
                        .by_thread
                        .iter()
                        .filter(|x| *x.0 != UNSPLIT)
                        .map(|(&thread, &accesses)| profcc_schema::numa::ThreadAccesses {
                            thread,
                            accesses,
                        })
                        .collect(),
                    unsplit: c.by_thread.get(&UNSPLIT).copied().unwrap_or(0),
                    shared_pages: c.shared_pages,
                    kept_pages: c.kept_pages,
                    reused_pages: c.reused_pages,
                    moved_pages: c.moved_pages,
                    page_counts: if alloc_stack.is_none()
                        && c.bytes >> PAGE_SHIFT <= profcc_schema::numa::MAX_RUN_DETAIL
                    {
                        c.per_page
                    } else {
                        Vec::new()
                    },
                }
            })
            .collect();
        drop(places);
        let mut sites: Vec<profcc_schema::numa::NumaSite> = sites
            .into_iter()
            .map(|(pc, SiteCounts([accesses, remote, thread, page]))| {
                profcc_schema::numa::NumaSite {
                    pc,
                    accesses,
                    remote,
                    unpinned_thread: thread,
                    unpinned_page: page,
                }
            })
            .collect();
        sites.sort_by(|a, b| (b.remote, b.accesses, a.pc).cmp(&(a.remote, a.accesses, b.pc)));
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
            huge_pages: HUGE.load(Relaxed),
            cpus: ncpus() as u32,
            plan_nodes: NODES.load(Relaxed),
            allowed_cpus: (0..ALLOWED.len() * 64)
                .filter(|&c| ALLOWED[c / 64].load(Relaxed) >> (c % 64) & 1 == 1)
                .map(|c| c as u32)
                .collect(),
            threads,
            first_touch,
            objects,
            sites,
        });
    }
}
