//! The NUMA analysis's section of the profile (rt/src/analyses/numa.rs; docs/numa.md).
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Numa {
    /// The topology model: `thread` (each thread its own node), `emulate` or `off`.
    pub model: String,
    /// Nodes of the `emulate` model (0 otherwise: `thread` has one home per thread).
    #[serde(default)]
    pub nodes: u32,
    /// Pages first touched (given a home).
    pub pages: u64,
    /// `real`: transparent huge pages recognised (every 4 KiB page of an aligned 2 MiB on one
    /// node at the first touch of one that was populated already): their pages are in
    /// `pages`, their first touch counted once, for the thread that touched them first.
    #[serde(default)]
    pub huge_pages: u64,
    /// CPUs of the machine, and the nodes a binding plan is made for (`numa_nodes`).
    #[serde(default)]
    pub cpus: u32,
    #[serde(default)]
    pub plan_nodes: u32,
    /// The CPUs the process could run on (its affinity mask when the runtime started), in
    /// order: the binding plan names only these (empty in profiles written before them).
    #[serde(default)]
    pub allowed_cpus: Vec<u32>,
    /// Per thread, in thread id order.
    pub threads: Vec<NumaThread>,
    /// Where pages were first touched: per (code address, thread, object), most pages first.
    #[serde(default)]
    pub first_touch: Vec<FirstTouch>,
    /// Accesses per object: heap blocks and mappings by allocation stack (freed ones
    /// included), other memory (globals, stacks, mappings made before the runtime) as runs of
    /// pages; most remote accesses first. A page's accesses belong to the object holding its
    /// middle byte (docs/numa.md).
    #[serde(default)]
    pub objects: Vec<NumaObject>,
    /// Accesses by code site: each slot of a thread's page cache counts for the site whose
    /// access brought its page in (docs/numa.md, "Sites"); most remote first. They add up to
    /// the threads' accesses; pc 0 holds the sites beyond the runtime's table.
    #[serde(default)]
    pub sites: Vec<NumaSite>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct NumaObject {
    /// Allocation stack of the heap blocks or mappings (None: a run of other memory).
    pub alloc_stack: Option<u32>,
    /// The thread whose stack the run is (None: not a stack).
    pub stack_of: Option<u32>,
    /// The first page's address (a run) or the first block's start.
    pub address: u64,
    /// Bytes: the run's pages, or the largest block's size.
    pub bytes: u64,
    /// Blocks allocated at the stack that held counted pages (1 for a run).
    pub instances: u64,
    /// Pages credited to it.
    pub pages: u64,
    /// Accesses to those pages, and of those the ones from threads of another home.
    pub accesses: u64,
    pub remote: u64,
    /// Of its accesses, those to pages no policy bound (NUMAPROF's unpinned pages; all of
    /// them under `thread`, where policies do not apply).
    #[serde(default)]
    pub unpinned_page: u64,
    /// Where its pages were first touched, most pages first.
    pub first_touch: Vec<ObjectTouch>,
    /// Per thread, the pages it used: those it touched first that no other thread
    /// accessed, and those one other thread than their first toucher accessed (moved pages):
    /// the byte range they span (offsets from the block's or run's start, over all blocks)
    /// and their number.
    pub threads: Vec<ThreadRange>,
    /// Its accesses by thread, exact (each page's first toucher's and every other thread's;
    /// the pages' counts that sat in another thread's cache when a block was freed are not
    /// in them, as in `accesses`), by thread id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_thread: Vec<ThreadAccesses>,
    /// Of `accesses`, those not split by thread: made by a thread the runtime did not know,
    /// or by other threads than the first toucher past the runtime's bounds (16 threads per
    /// page, 2^20 pages with other threads).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unsplit: u64,
    /// Pages two or more threads besides their first toucher accessed, and pages their first
    /// toucher kept using with one other thread (`kept_pages`).
    pub shared_pages: u64,
    /// Of `shared_pages`, those of the first toucher and one other thread, both using the
    /// page after the other came (docs/numa.md, "Objects").
    #[serde(default)]
    pub kept_pages: u64,
    /// Pages that one thread other than their first toucher accessed, their first toucher
    /// hardly after it came (taken over).
    pub moved_pages: u64,
    /// Pages a freed heap block held before (they kept the home an earlier block's first
    /// touch gave them): per-iteration temporaries reuse their pages.
    #[serde(default)]
    pub reused_pages: u64,
    /// A run of at most `MAX_RUN_DETAIL` pages: each counted page, for the report to split
    /// the run at the globals it holds (empty for blocks and longer runs).
    #[serde(default)]
    pub page_counts: Vec<PageCount>,
}

/// Most pages of a run given one by one ([`NumaObject::page_counts`]).
pub const MAX_RUN_DETAIL: u64 = 256;

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct PageCount {
    /// Offset of the page from the run's start.
    pub offset: u64,
    pub accesses: u64,
    pub remote: u64,
    /// Two or more threads besides its first toucher accessed it, or its toucher kept using
    /// it with one other thread.
    pub shared: bool,
    /// One thread other than its first toucher took it over.
    pub moved: bool,
    /// Shared by its first toucher and one other thread that both kept using it.
    #[serde(default)]
    pub kept: bool,
    /// A policy bound it to its node.
    #[serde(default)]
    pub pinned: bool,
    /// Its accesses by thread, and those not split by thread (as [`NumaObject::by_thread`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_thread: Vec<ThreadAccesses>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unsplit: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct ObjectTouch {
    /// As [`FirstTouch::pc`].
    pub pc: u64,
    pub thread: Option<u32>,
    pub pages: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct ThreadAccesses {
    pub thread: u32,
    pub accesses: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct ThreadRange {
    pub thread: u32,
    /// Offsets: first byte of its first page, end of its last page.
    pub start: u64,
    pub end: u64,
    pub pages: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct FirstTouch {
    /// Return address of the first-touch door's call: just after the access that touched
    /// the pages (symbolise `pc - 1`).
    pub pc: u64,
    /// The thread that touched them (None: a thread the runtime did not see start).
    pub thread: Option<u32>,
    /// Allocation stack (stack id) of the heap object or mapping holding the first page;
    /// None: not a recorded object (a global, a stack, a mapping made before the runtime).
    pub alloc_stack: Option<u32>,
    pub pages: u64,
    /// The address the first of those accesses touched (names a global).
    pub address: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct NumaSite {
    /// Return address of the door's call, just after the access (symbolise `pc - 1`); 0:
    /// the sites the runtime had no room for.
    pub pc: u64,
    pub accesses: u64,
    pub remote: u64,
    /// NUMAPROF's categories, as [`NumaThread`]'s: accesses by threads not bound to one node,
    /// and accesses to pages no policy bound.
    #[serde(default)]
    pub unpinned_thread: u64,
    #[serde(default)]
    pub unpinned_page: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct NumaThread {
    /// Thread id (as in the thread table).
    pub thread: u32,
    /// The thread's home: its node + 1 (`emulate`) or its id + 1 (`thread`), 1..=MAX_HOMES;
    /// MAX_HOMES: none (`off`, or a thread beyond the last home).
    pub home: u32,
    /// Accesses to pages of the thread's own home.
    pub local: u64,
    /// Accesses to pages of other homes.
    pub remote: u64,
    /// Pages this thread touched first.
    pub first_touches: u64,
    /// Its accesses by page home, `(home, accesses)`, homes in increasing order, zeros left
    /// out: the thread's row of the thread x home matrix.
    pub by_home: Vec<(u32, u64)>,
    /// Its waits (NumaPerf's proxy for migrations): contended mutexes and spin locks,
    /// condition-variable waits, barrier waits, semaphore waits at zero.
    #[serde(default)]
    pub waits: Waits,
    /// `real`: the times it woke from a wait on another node than before.
    #[serde(default)]
    pub migrations: u64,
    /// NUMAPROF's categories (`emulate`, `real`): whether its CPUs are on one node at the
    /// end; its accesses made while they were not (an unpinned thread), and its accesses to
    /// pages no policy bound (unpinned pages). Counted when its page cache is flushed.
    #[serde(default)]
    pub pinned: bool,
    #[serde(default)]
    pub unpinned_thread: u64,
    #[serde(default)]
    pub unpinned_page: u64,
    /// Of those, the accesses by an unpinned thread to an unpinned page.
    #[serde(default)]
    pub unpinned_both: u64,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, Default, PartialEq, Eq)]
pub struct Waits {
    pub mutex: u64,
    pub spin: u64,
    pub cond: u64,
    pub barrier: u64,
    pub sem: u64,
}

impl Waits {
    pub fn total(&self) -> u64 {
        self.mutex + self.spin + self.cond + self.barrier + self.sem
    }
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}
