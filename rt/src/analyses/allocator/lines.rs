//! Allocator-induced false sharing (docs/allocators.md, "Allocator-induced false sharing"):
//! cache lines on which the allocator placed live objects of different threads.
//!
//! Only an object's first and last line can hold another object, so a table keyed by line
//! address keeps, for those edge lines, which threads own live objects there (up to three,
//! with counts) and which thread last freed another thread's object on the line. When an
//! allocation puts thread t's object on an edge line that holds a live object of another
//! thread, the line becomes shared (counted once until its last object is freed):
//! - passive when t itself had freed another thread's object on that line (the allocator
//!   handed a block that t freed remotely back to t, next to its owner's live objects:
//!   glibc's tcache, jemalloc's and tcmalloc's thread caches do this; mimalloc and oneTBB
//!   return a remote free to the owning thread's page);
//! - active otherwise (the allocator gave neighbouring blocks to different threads: one
//!   shared arena, as glibc's with `arena_max=1` or more threads than arenas).
//!
//! The table is set-associative (2^18 sets of 4 entries, 32 MiB of address space, touched
//! as used) under 1024 striped spin locks; a line whose set is full of live lines is not
//! tracked (`untracked`). A fourth thread on one line is counted as "another thread" but not
//! tracked further (its objects are not removed at free).

use crate::mem::SpinLock;
use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering::Relaxed};

use profcc_schema::sharing::LINE;
const SET_BITS: u32 = 18;
const WAYS: usize = 4;
const LOCK_BITS: u32 = 10;
/// Lines listed in the profile (the counts are over every line).
pub const MAX_LISTED: usize = 4096;

/// Owner slot: thread id + 1 in the low 24 bits, live objects in the top 8 (saturating).
const TID_MASK: u32 = (1 << 24) - 1;
/// `flags`: a fourth thread had an object here; the line was counted (this episode).
const OVERFLOW: u32 = 1;
const COUNTED: u32 = 2;

#[repr(C)]
struct Entry {
    /// Line address (0: empty).
    line: u64,
    owners: [u32; 3],
    /// Thread id + 1 of the last thread that freed another thread's object on this line.
    remote: u32,
    flags: u32,
    _pad: u32,
}

static TABLE: AtomicPtr<Entry> = AtomicPtr::new(core::ptr::null_mut());
/// One cache line each: threads working on different lines must not contend on their locks.
#[repr(align(64))]
struct Lock(SpinLock<()>);
static LOCKS: [Lock; 1 << LOCK_BITS] = [const { Lock(SpinLock::new(())) }; 1 << LOCK_BITS];

pub static ACTIVE: AtomicU64 = AtomicU64::new(0);
pub static PASSIVE: AtomicU64 = AtomicU64::new(0);
pub static UNTRACKED: AtomicU64 = AtomicU64::new(0);

/// A line that became shared: the first [`MAX_LISTED`] of the run.
#[derive(Clone, Copy)]
pub struct Listed {
    pub line: u64,
    pub passive: bool,
    /// The thread whose allocation made the line shared, and one other owner (None: only
    /// an untracked fourth thread).
    pub thread: u32,
    pub other: Option<u32>,
    /// Stack depot id of the new object's allocation call.
    pub stack: u32,
}
pub static LISTED: SpinLock<Vec<Listed>> = SpinLock::new(Vec::new());

/// The table is mapped: every object is recorded (see the allocator analysis's init).
pub fn tracking() -> bool {
    !TABLE.load(Relaxed).is_null()
}

pub fn init() {
    let p = crate::mem::map(
        (core::mem::size_of::<Entry>() * WAYS) << SET_BITS as usize,
        true,
    );
    if !p.is_null() {
        TABLE.store(p as *mut Entry, Relaxed);
    }
}

#[inline]
fn set_of(line: u64) -> usize {
    ((line / LINE).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SET_BITS)) as usize
}

/// The first and the last line of [start, start + size) (once when they are the same).
fn edges(start: u64, size: u64) -> impl Iterator<Item = u64> {
    super::pages::edges(start, size, LINE)
}

/// Runs `f` on the entry of `line` (inserted when `insert`), under its set's lock.
fn with_entry(line: u64, insert: bool, f: impl FnOnce(&mut Entry)) {
    let t = TABLE.load(Relaxed);
    if t.is_null() {
        return;
    }
    let s = set_of(line);
    let _g = LOCKS[s & ((1 << LOCK_BITS) - 1)].0.lock();
    let set = unsafe { core::slice::from_raw_parts_mut(t.add(s * WAYS), WAYS) };
    if let Some(e) = set.iter_mut().find(|e| e.line == line) {
        return f(e);
    }
    if !insert {
        return;
    }
    match set.iter_mut().find(|e| e.line == 0) {
        Some(e) => {
            *e = Entry {
                line,
                owners: [0; 3],
                remote: 0,
                flags: 0,
                _pad: 0,
            };
            f(e)
        }
        None => {
            UNTRACKED.fetch_add(1, Relaxed);
        }
    }
}

/// Live objects the entry knows on its line (a fourth thread's are not counted).
fn live(e: &Entry) -> u32 {
    e.owners.iter().map(|o| o >> 24).sum()
}

/// Thread `tid` allocated [start, start + size) (from the call stack `stack`). Returns how
/// many of its edge lines already held a live object (see `pages.rs`).
pub fn allocated(start: u64, size: u64, tid: u32, stack: u32) -> u64 {
    let me = (tid & TID_MASK) + 1;
    let mut held = 0;
    for line in edges(start, size) {
        with_entry(line, true, |e| {
            held += (live(e) != 0 || e.flags & OVERFLOW != 0) as u64;
            let other = e
                .owners
                .iter()
                .find(|&&o| o & TID_MASK != me && o >> 24 != 0)
                .map(|o| (o & TID_MASK) - 1);
            let shared = other.is_some() || e.flags & OVERFLOW != 0;
            match e.owners.iter_mut().find(|o| **o & TID_MASK == me) {
                Some(o) => {
                    if *o >> 24 != 255 {
                        *o += 1 << 24;
                    }
                }
                None => match e.owners.iter_mut().find(|o| **o >> 24 == 0) {
                    Some(o) => *o = me | 1 << 24,
                    None => e.flags |= OVERFLOW,
                },
            }
            if shared && e.flags & COUNTED == 0 {
                e.flags |= COUNTED;
                let passive = e.remote == me;
                if passive { &PASSIVE } else { &ACTIVE }.fetch_add(1, Relaxed);
                let mut l = LISTED.lock();
                if l.len() < MAX_LISTED {
                    l.push(Listed {
                        line,
                        passive,
                        thread: tid,
                        other,
                        stack,
                    });
                }
            }
        });
    }
    held
}

/// Thread `by` frees [start, start + size), which thread `owner` allocated. Returns how many
/// of its edge lines still hold another live object.
pub fn freed(start: u64, size: u64, owner: u32, by: u32) -> u64 {
    let (own, by) = ((owner & TID_MASK) + 1, (by & TID_MASK) + 1);
    let mut held = 0;
    for line in edges(start, size) {
        with_entry(line, false, |e| {
            if let Some(o) = e.owners.iter_mut().find(|o| **o & TID_MASK == own) {
                if *o >> 24 != 0 {
                    *o -= 1 << 24;
                }
            }
            if own != by {
                e.remote = by;
            }
            if live(e) == 0 {
                e.line = 0; // the line's episode ends with its last tracked object
            } else {
                held += 1;
            }
        });
    }
    held
}

pub fn fork_prepare() {
    for l in &LOCKS {
        core::mem::forget(l.0.lock());
    }
    core::mem::forget(LISTED.lock());
}

pub fn fork_parent() {
    unsafe {
        LISTED.force_unlock();
        for l in &LOCKS {
            l.0.force_unlock();
        }
    }
}

/// The child reports its own run: counts and list from zero (the table, which describes the
/// heap it inherited, stays).
pub fn fork_child() {
    fork_parent();
    ACTIVE.store(0, Relaxed);
    PASSIVE.store(0, Relaxed);
    UNTRACKED.store(0, Relaxed);
    LISTED.lock().clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test owns the global table (tests in this module run in one function).
    #[test]
    fn active_passive_and_episodes() {
        init();
        let base = 0x7000_0000_0000u64;
        // Threads 1 and 2 alternate 24-byte objects 32 bytes apart: lines 0..4 shared.
        for i in 0..8u64 {
            allocated(base + 16 + 32 * i, 24, 1 + (i % 2) as u32, 7);
        }
        assert_eq!(ACTIVE.load(Relaxed), 4);
        assert_eq!(PASSIVE.load(Relaxed), 0);
        // Thread 2 frees thread 1's object on the next line group and gets it back: passive.
        let b2 = base + 0x1000;
        allocated(b2, 24, 1, 7);
        allocated(b2 + 32, 24, 1, 7);
        freed(b2 + 32, 24, 1, 2);
        allocated(b2 + 32, 24, 2, 8);
        assert_eq!(PASSIVE.load(Relaxed), 1);
        // Counted once per episode: another object of thread 2 on the line adds nothing.
        freed(b2 + 32, 24, 2, 2);
        allocated(b2 + 32, 24, 2, 8);
        assert_eq!(PASSIVE.load(Relaxed), 1);
        // The line empties: its episode ends; a single thread's objects share nothing.
        freed(b2 + 32, 24, 2, 2);
        freed(b2, 24, 1, 1);
        allocated(b2, 24, 3, 9);
        allocated(b2 + 32, 24, 3, 9);
        assert_eq!((ACTIVE.load(Relaxed), PASSIVE.load(Relaxed)), (4, 1));
        let l = LISTED.lock();
        assert_eq!(l.len(), 5);
        assert!(l[4].passive && l[4].thread == 2 && l[4].other == Some(1) && l[4].stack == 8);
        // An object spanning many lines only touches its edge lines.
        assert_eq!(
            edges(0x40, 64 * 10).collect::<Vec<_>>(),
            vec![0x40, 0x40 + 64 * 9]
        );
        assert_eq!(edges(0x48, 8).collect::<Vec<_>>(), vec![0x40]);
    }
}
