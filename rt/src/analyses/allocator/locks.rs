//! Per-lock counts of the allocator's mutexes (docs/allocators.md, "Channels"): the `mutex*`
//! channels again, per mutex address, so the report can say which lock of the allocator is
//! contended (jemalloc's arena and bin mutexes; allocators with their own spin locks, as
//! tcmalloc and mimalloc, make no pthread mutex calls to count).
//!
//! Only a mutex call made inside a program's allocator operation arrives here, and the
//! allocator took or released that mutex anyway, so a shared table is proportionate: a fixed
//! open-addressed table of [`LOCK_SLOTS`] mutex addresses, claimed with a compare-exchange, counted
//! with relaxed adds. A mutex that finds no slot within [`LOCK_PROBES`] is counted in
//! [`UNTRACKED`] (still in the per-operation channels). Slots are never freed: a mutex that
//! went away and a new one at its address share a record.

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use profcc_schema::allocator::{LockCell, LockChannel, CHANNELS, MUTEX_CHANNELS, MUTEX_FIRST};

const LOCK_SLOTS: usize = 512;
const LOCK_PROBES: usize = 16;

struct Slot {
    /// 0: free.
    addr: AtomicU64,
    count: [AtomicU64; MUTEX_CHANNELS],
    cycles: [AtomicU64; MUTEX_CHANNELS],
}

static TABLE: [Slot; LOCK_SLOTS] = [const {
    Slot {
        addr: AtomicU64::new(0),
        count: [const { AtomicU64::new(0) }; MUTEX_CHANNELS],
        cycles: [const { AtomicU64::new(0) }; MUTEX_CHANNELS],
    }
}; LOCK_SLOTS];
static UNTRACKED: AtomicU64 = AtomicU64::new(0);

/// The slot of mutex `m`, claimed if it had none (None: the table is full around it).
fn slot(m: u64) -> Option<&'static Slot> {
    let h = (m >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - LOCK_SLOTS.trailing_zeros());
    for i in 0..LOCK_PROBES {
        let s = &TABLE[(h as usize + i) % LOCK_SLOTS];
        let a = s.addr.load(Relaxed);
        if a == m {
            return Some(s);
        }
        if a == 0 {
            match s.addr.compare_exchange(0, m, Relaxed, Relaxed) {
                Ok(_) => return Some(s),
                Err(won) if won == m => return Some(s),
                Err(_) => continue,
            }
        }
    }
    None
}

/// The allocator's call on mutex `m` went through channel `ch` (an index of `CHANNELS`),
/// taking `cycles` ticks (0: not timed).
pub fn note(m: u64, ch: usize, cycles: u64) {
    let Some(k) = ch.checked_sub(MUTEX_FIRST).filter(|&k| k < MUTEX_CHANNELS) else {
        return;
    };
    if m == 0 {
        return;
    }
    match slot(m) {
        Some(s) => {
            s.count[k].fetch_add(1, Relaxed);
            if cycles != 0 {
                s.cycles[k].fetch_add(cycles, Relaxed);
            }
        }
        None => {
            UNTRACKED.fetch_add(1, Relaxed);
        }
    }
}

/// Every tracked mutex with its non-zero channels, in address order; and the untracked calls.
pub fn cells() -> (Vec<LockCell>, u64) {
    let mut out: Vec<LockCell> = TABLE
        .iter()
        .filter(|s| s.addr.load(Relaxed) != 0)
        .map(|s| LockCell {
            addr: s.addr.load(Relaxed),
            channels: (0..MUTEX_CHANNELS)
                .filter(|&k| s.count[k].load(Relaxed) != 0)
                .map(|k| LockChannel {
                    channel: CHANNELS[MUTEX_FIRST + k].to_string(),
                    count: s.count[k].load(Relaxed),
                    cycles: s.cycles[k].load(Relaxed),
                })
                .collect(),
        })
        .filter(|c| !c.channels.is_empty())
        .collect();
    out.sort_by_key(|c| c.addr);
    (out, UNTRACKED.load(Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Calls on one mutex land in one record by channel; a full neighbourhood counts as
    /// untracked, never in another mutex's record.
    #[test]
    fn each_mutex_has_its_record() {
        let base = 0x7f00_dead_0000u64;
        note(base, MUTEX_FIRST, 0);
        note(base, MUTEX_FIRST + 1, 500);
        note(base, MUTEX_FIRST + 1, 300);
        note(base + 64, MUTEX_FIRST + 4, 40);
        note(base, 0, 7); // mmap: not a mutex channel
        let (all, _) = cells();
        let one = all.iter().find(|c| c.addr == base).unwrap();
        let names: Vec<(&str, u64, u64)> = one
            .channels
            .iter()
            .map(|c| (c.channel.as_str(), c.count, c.cycles))
            .collect();
        assert_eq!(names, [("mutex", 1, 0), ("mutex_wait", 2, 800)]);
        let two = all.iter().find(|c| c.addr == base + 64).unwrap();
        assert_eq!(two.channels[0].channel, "mutex_hold");
        // Fill the table: every later new mutex is untracked.
        let before = UNTRACKED.load(Relaxed);
        for i in 1..=(LOCK_SLOTS as u64 + LOCK_PROBES as u64) {
            note(0x1000_0000 + i * 8, MUTEX_FIRST, 0);
        }
        assert!(UNTRACKED.load(Relaxed) > before);
        let (all, _) = cells();
        assert_eq!(
            all.iter().find(|c| c.addr == base).unwrap().channels.len(),
            2
        );
    }
}
