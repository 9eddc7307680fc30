//! Frame-pointer stack capture (the walker is `profcc_walk` in `csrc/interpose.c`) and the
//! stack depot: identical stacks share one dense id.
//!
//! Depot layout (one `MAP_NORESERVE` mapping, published by compare-and-swap on first use):
//!
//! ```text
//! [0, TABLE)             AtomicU32 × TABLE_SLOTS   open-addressing hash table: 0 empty,
//!                                                  BUSY being filled, TOMB abandoned, else id+1
//! [TABLE, +OFFSETS)      AtomicU64 × MAX_STACKS    id -> arena offset + 1 (0: not published)
//! [.., +ARENA)           records                   [hash u64][len u64][frames u64 × len]
//! ```
//!
//! Invariants: id 0 is the empty stack (published before the depot is); an id is published
//! (offset stored with Release) before its table slot holds it, so whoever reads an id from the
//! table can read its record; records are never changed or freed. Insertion is lock-free: a
//! new stack claims an empty slot with CAS (BUSY), takes the next id, writes its record,
//! publishes. Lookups that meet BUSY wait for it (the writer is a few stores away). A fork
//! can leave BUSY slots of threads that no longer exist: the child turns them into TOMB.

use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

pub const MAX_FRAMES: usize = 32;
const TABLE_SLOTS: usize = 1 << 22;
pub const MAX_STACKS: usize = 1 << 21;
const ARENA: usize = 1 << 30;
const BUSY: u32 = u32::MAX;
const TOMB: u32 = u32::MAX - 1;

const TABLE_BYTES: usize = TABLE_SLOTS * 4;
const OFFSETS_BYTES: usize = MAX_STACKS * 8;
const MAP_BYTES: usize = TABLE_BYTES + OFFSETS_BYTES + ARENA;

extern "C" {
    fn profcc_walk(start_fp: *mut libc::c_void, out: *mut u64, max: u32) -> u32;
    fn profcc_walk_here(out: *mut u64, max: u32) -> u32;
    fn profcc_shallow_stacks() -> i32;
}

/// The depot proper, over caller-provided memory (so tests can build small ones).
pub struct Depot {
    table: *const AtomicU32,
    table_mask: usize,
    offsets: *const AtomicU64,
    max_stacks: usize,
    arena: *mut u8,
    arena_len: usize,
    arena_used: AtomicUsize,
    next_id: AtomicU32,
    inflight: AtomicU32,
    dropped: AtomicU64,
}
unsafe impl Sync for Depot {}
unsafe impl Send for Depot {}

pub fn hash(frames: &[u64]) -> u64 {
    let mut h: u64 = 0x9E37_79B9_7F4A_7C15 ^ frames.len() as u64;
    for &f in frames {
        h = (h ^ f).wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 32;
    }
    h ^= h >> 29;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 32)
}

impl Depot {
    /// Lay a depot over `mem` (zeroed, `table_slots` a power of two).
    pub unsafe fn new(
        mem: *mut u8,
        table_slots: usize,
        max_stacks: usize,
        arena_len: usize,
    ) -> Depot {
        let d = Depot {
            table: mem as *const AtomicU32,
            table_mask: table_slots - 1,
            offsets: mem.add(table_slots * 4) as *const AtomicU64,
            max_stacks,
            arena: mem.add(table_slots * 4 + max_stacks * 8),
            arena_len,
            arena_used: AtomicUsize::new(16),
            next_id: AtomicU32::new(1),
            inflight: AtomicU32::new(0),
            dropped: AtomicU64::new(0),
        };
        // Id 0: the empty stack, at arena offset 0 (hash 0, len 0).
        (*d.offsets).store(1, Ordering::Release);
        d
    }

    fn slot(&self, i: usize) -> &AtomicU32 {
        unsafe { &*self.table.add(i) }
    }

    /// Frames of a published id.
    pub fn get(&self, id: u32) -> Option<&[u64]> {
        if id as usize >= self.max_stacks {
            return None;
        }
        let off = unsafe { (*self.offsets.add(id as usize)).load(Ordering::Acquire) };
        if off == 0 {
            return None;
        }
        unsafe {
            let rec = self.arena.add(off as usize - 1) as *const u64;
            let len = *rec.add(1) as usize;
            Some(core::slice::from_raw_parts(rec.add(2), len))
        }
    }

    fn matches(&self, id: u32, h: u64, frames: &[u64]) -> bool {
        let off = unsafe { (*self.offsets.add(id as usize)).load(Ordering::Acquire) };
        if off == 0 {
            return false;
        }
        unsafe {
            let rec = self.arena.add(off as usize - 1) as *const u64;
            *rec == h
                && *rec.add(1) as usize == frames.len()
                && core::slice::from_raw_parts(rec.add(2), frames.len()) == frames
        }
    }

    /// The id of `frames`, inserting it if new; 0 (the empty stack) when the depot is full.
    pub fn intern(&self, frames: &[u64]) -> u32 {
        if frames.is_empty() {
            return 0;
        }
        let h = hash(frames);
        let mut i = (h as usize) & self.table_mask;
        let mut probes = 0usize;
        let mut waits = 0u32;
        loop {
            let v = self.slot(i).load(Ordering::Acquire);
            if v == 0 {
                self.inflight.fetch_add(1, Ordering::AcqRel);
                if self
                    .slot(i)
                    .compare_exchange(0, BUSY, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    let id = self.publish(h, frames);
                    self.slot(i)
                        .store(if id == 0 { 0 } else { id + 1 }, Ordering::Release);
                    self.inflight.fetch_sub(1, Ordering::AcqRel);
                    if id == 0 {
                        self.dropped.fetch_add(1, Ordering::Relaxed);
                    }
                    return id;
                }
                self.inflight.fetch_sub(1, Ordering::AcqRel);
                continue; // someone else took the slot: look at it again
            }
            if v == BUSY {
                waits += 1;
                if waits > 1 << 16 {
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                    return 0;
                }
                if waits.is_multiple_of(64) {
                    unsafe { libc::sched_yield() };
                } else {
                    core::hint::spin_loop();
                }
                continue;
            }
            if v != TOMB && self.matches(v - 1, h, frames) {
                return v - 1;
            }
            probes += 1;
            if probes > self.table_mask {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return 0;
            }
            i = (i + 1) & self.table_mask;
        }
    }

    /// Write the record and publish a fresh id; 0 when out of ids or arena.
    fn publish(&self, h: u64, frames: &[u64]) -> u32 {
        if self.next_id.load(Ordering::Relaxed) as usize >= self.max_stacks {
            return 0;
        }
        let bytes = 16 + 8 * frames.len();
        let off = self.arena_used.fetch_add(bytes, Ordering::Relaxed);
        if off + bytes > self.arena_len {
            return 0;
        }
        let id = self.next_id.fetch_add(1, Ordering::AcqRel);
        if id as usize >= self.max_stacks {
            return 0;
        }
        unsafe {
            let rec = self.arena.add(off) as *mut u64;
            *rec = h;
            *rec.add(1) = frames.len() as u64;
            core::ptr::copy_nonoverlapping(frames.as_ptr(), rec.add(2), frames.len());
            (*self.offsets.add(id as usize)).store(off as u64 + 1, Ordering::Release);
        }
        id
    }

    pub fn len(&self) -> u32 {
        (self.next_id.load(Ordering::Acquire) as usize).min(self.max_stacks) as u32
    }

    /// Never empty: id 0 (the empty stack) always exists.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// In the child after fork: slots other threads were filling will never be filled.
    pub fn abandon_busy(&self) {
        if self.inflight.load(Ordering::Acquire) == 0 {
            return;
        }
        for i in 0..=self.table_mask {
            if self.slot(i).load(Ordering::Relaxed) == BUSY {
                self.slot(i).store(TOMB, Ordering::Relaxed);
            }
        }
        self.inflight.store(0, Ordering::Release);
    }

    pub fn snapshot(&self) -> Vec<profcc_schema::Stack> {
        (0..self.len())
            .filter_map(|id| {
                self.get(id).map(|f| profcc_schema::Stack {
                    id,
                    frames: f.to_vec(),
                })
            })
            .collect()
    }
}

static DEPOT: AtomicPtr<Depot> = AtomicPtr::new(core::ptr::null_mut());

fn depot() -> Option<&'static Depot> {
    let p = DEPOT.load(Ordering::Acquire);
    if !p.is_null() {
        return Some(unsafe { &*p });
    }
    let mem = crate::mem::map(MAP_BYTES, true);
    if mem.is_null() {
        return None;
    }
    let d = crate::mem::map(core::mem::size_of::<Depot>(), false) as *mut Depot;
    if d.is_null() {
        crate::mem::unmap(mem, MAP_BYTES);
        return None;
    }
    unsafe { d.write(Depot::new(mem, TABLE_SLOTS, MAX_STACKS, ARENA)) };
    match DEPOT.compare_exchange(
        core::ptr::null_mut(),
        d,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        Ok(_) => Some(unsafe { &*d }),
        Err(other) => {
            crate::mem::unmap(mem, MAP_BYTES);
            crate::mem::unmap(d as *mut u8, core::mem::size_of::<Depot>());
            Some(unsafe { &*other })
        }
    }
}

/// Intern a stack that was walked elsewhere.
pub fn intern(frames: &[u64]) -> u32 {
    depot().map_or(0, |d| d.intern(frames))
}

/// The profile's note when stacks keep their first frame only: some module of the program was
/// built without frame pointers (the ROI-only build; the walker in csrc/interpose.c).
pub fn shallow_note() -> Option<String> {
    (unsafe { profcc_shallow_stacks() } != 0).then(|| {
        "allocation stacks have one frame, the allocation's call site: the program has code built without frame pointers (PROFCC_INSTRUMENT=roi keeps the program's own; add -fno-omit-frame-pointer for whole stacks)".into()
    })
}

/// Capture the stack above `fp`, a frame pointer of one of the C interposers: the first frame
/// is the return address into the interposer's caller (the call site of malloc/new/...).
/// `fp` must be a live frame of the calling thread's stack (the walker validates the rest),
/// and the thread registered (`threads::current_id`, which gives the walker its stack bounds).
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn capture_from(fp: *mut libc::c_void) -> u32 {
    let mut frames = core::mem::MaybeUninit::<[u64; MAX_FRAMES]>::uninit();
    intern(walk_from(fp, &mut frames))
}

/// [`capture_from`]'s walk alone: the frames above `fp`, in `buf` (not zeroed first: the
/// walker writes exactly the frames it returns).
#[allow(clippy::not_unsafe_ptr_arg_deref)]
#[inline]
pub fn walk_from(
    fp: *mut libc::c_void,
    buf: &mut core::mem::MaybeUninit<[u64; MAX_FRAMES]>,
) -> &[u64] {
    let p = buf.as_mut_ptr() as *mut u64;
    unsafe {
        let n = profcc_walk(fp, p, MAX_FRAMES as u32) as usize;
        core::slice::from_raw_parts(p, n.min(MAX_FRAMES))
    }
}

/// Capture the caller's stack (skipping `skip` frames) and return its depot id.
///
/// Best effort: the runtime's Rust code is built without frame pointers, so the walk starts
/// at the return address into the caller of `capture` and then follows the nearest frame
/// pointers, which belong to C/C++ code built with them. Interposers use `capture_from`.
/// The calling thread must be registered, as for `capture_from`.
#[inline(never)]
pub fn capture(skip: usize) -> u32 {
    let mut frames = [0u64; MAX_FRAMES];
    let n = unsafe { profcc_walk_here(frames.as_mut_ptr(), MAX_FRAMES as u32) } as usize;
    let skip = skip.min(n);
    intern(&frames[skip..n])
}

/// Frames of a stack id.
pub fn frames(id: u32) -> Vec<u64> {
    depot()
        .and_then(|d| d.get(id).map(|f| f.to_vec()))
        .unwrap_or_default()
}

/// Stacks that did not fit (the depot was full or a slot was abandoned): recorded as id 0.
pub fn dropped() -> u64 {
    let p = DEPOT.load(Ordering::Acquire);
    if p.is_null() {
        0
    } else {
        unsafe { (*p).dropped.load(Ordering::Relaxed) }
    }
}

pub fn snapshot() -> Vec<profcc_schema::Stack> {
    let p = DEPOT.load(Ordering::Acquire);
    if p.is_null() {
        return vec![profcc_schema::Stack {
            id: 0,
            frames: Vec::new(),
        }];
    }
    unsafe { (*p).snapshot() }
}

pub fn after_fork_child() {
    let p = DEPOT.load(Ordering::Acquire);
    if !p.is_null() {
        unsafe { (*p).abandon_busy() };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Depot {
        let bytes = 64 * 4 + 16 * 8 + 4096;
        let mem = crate::mem::map(bytes, false);
        unsafe { Depot::new(mem, 64, 16, 4096) }
    }

    #[test]
    fn dedup_and_dense_ids() {
        let d = small();
        let a = [0x401000u64, 0x402000, 0x403000];
        let b = [0x401000u64, 0x402000];
        assert_eq!(d.intern(&[]), 0);
        let ia = d.intern(&a);
        let ib = d.intern(&b);
        assert_eq!((ia, ib), (1, 2));
        assert_eq!(d.intern(&a), ia);
        assert_eq!(d.intern(&b), ib);
        assert_eq!(d.get(ia).unwrap(), &a);
        assert_eq!(d.get(0).unwrap(), &[] as &[u64]);
        let s = d.snapshot();
        assert_eq!(s.len(), 3);
        assert_eq!(s[1].frames, a.to_vec());
    }

    #[test]
    fn full_depot_gives_zero() {
        let d = small();
        for i in 1..15u64 {
            assert_eq!(d.intern(&[i * 16]) as u64, i);
        }
        assert_eq!(d.intern(&[0x999]), 15);
        assert_eq!(d.intern(&[0x998]), 0);
        assert_eq!(d.intern(&[0x999]), 15);
        assert!(d.dropped.load(Ordering::Relaxed) >= 1);
    }

    #[test]
    fn concurrent_intern_is_deduplicated() {
        let d = std::sync::Arc::new({
            let bytes = 1024 * 4 + 1024 * 8 + (1 << 20);
            let mem = crate::mem::map(bytes, false);
            unsafe { Depot::new(mem, 1024, 1024, 1 << 20) }
        });
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let d = d.clone();
                std::thread::spawn(move || {
                    (1..200u64)
                        .map(|i| d.intern(&[i, i * 3, 7]))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let rs: Vec<Vec<u32>> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        for r in &rs[1..] {
            assert_eq!(r, &rs[0]);
        }
        assert_eq!(d.len(), 200);
        let mut ids = rs[0].clone();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 199);
    }

    #[test]
    fn abandoned_slot_after_fork() {
        let d = small();
        let h = hash(&[5]);
        d.slot(h as usize & d.table_mask)
            .store(BUSY, Ordering::Relaxed);
        d.inflight.store(1, Ordering::Relaxed);
        d.abandon_busy();
        assert_eq!(d.intern(&[5]), 1);
        assert_eq!(d.intern(&[5]), 1);
    }
}
