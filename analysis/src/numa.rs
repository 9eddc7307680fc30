//! NUMA findings from the profile's `numa` section (docs/numa.md): which pattern the run
//! shows, with the numbers that say so. The report names the places; the rule lives here.

use profcc_schema::numa::{Numa, NumaObject};

/// A run whose remote accesses are below this share of all its accesses gets no advice.
pub const REMOTE_ADVICE_SHARE: f64 = 0.10;
/// One thread that touched at least this share of the pages first made the placement serially
/// (two threads splitting the data evenly touch half each: not serial).
pub const SERIAL_FIRST_TOUCH_SHARE: f64 = 0.8;

/// What the run shows.
#[derive(Debug, Clone, PartialEq)]
pub enum Pattern {
    /// Remote accesses below [`REMOTE_ADVICE_SHARE`], or no homes (`off`).
    Fine,
    /// One thread touched most pages first and the others' accesses are remote.
    SerialFirstTouch {
        thread: u32,
        first_touch_share: f64,
        remote_share: f64,
    },
    /// Many remote accesses, first touches spread over threads.
    Remote { remote_share: f64 },
}

/// The run's pattern: remote share over all threads, and who touched the pages first.
pub fn pattern(n: &Numa) -> Pattern {
    let local: u64 = n.threads.iter().map(|t| t.local).sum();
    let remote: u64 = n.threads.iter().map(|t| t.remote).sum();
    if n.model == "off" || local + remote == 0 {
        return Pattern::Fine;
    }
    let remote_share = remote as f64 / (local + remote) as f64;
    if remote_share < REMOTE_ADVICE_SHARE {
        return Pattern::Fine;
    }
    let touched: u64 = n.threads.iter().map(|t| t.first_touches).sum();
    let top = n
        .threads
        .iter()
        .max_by_key(|t| (t.first_touches, u32::MAX - t.thread));
    match top {
        Some(t) if touched > 0 => {
            let share = t.first_touches as f64 / touched as f64;
            if share >= SERIAL_FIRST_TOUCH_SHARE {
                return Pattern::SerialFirstTouch {
                    thread: t.thread,
                    first_touch_share: share,
                    remote_share,
                };
            }
            Pattern::Remote { remote_share }
        }
        _ => Pattern::Remote { remote_share },
    }
}

/// The share of remote accesses that are assumed to miss the cache in the seriousness score
/// (NumaPerf's `CACHE_MISS_RATE`, which its paper leaves open): one access in eight, the
/// miss rate of a sweep over 8-byte words with 64-byte lines.
pub const REMOTE_MISS_RATE: f64 = 0.125;

/// NumaPerf's seriousness score of an object: remote accesses that miss the cache plus remote
/// invalidations, per millisecond of the run:
/// `(remote x REMOTE_MISS_RATE + remote_invalidations) / (duration_ns / 1e6)`.
pub fn score(remote: u64, remote_invalidations: u64, duration_ns: u64) -> f64 {
    let ms = (duration_ns as f64 / 1e6).max(1e-3);
    (remote as f64 * REMOTE_MISS_RATE + remote_invalidations as f64) / ms
}

/// How the threads' pages of an object lie.
#[derive(Debug, Clone, PartialEq)]
pub enum Layout {
    /// Each thread's pages form one range, the ranges do not overlap: `(thread, start, end)`
    /// byte offsets, in address order.
    Blocks(Vec<(u32, u64, u64)>),
    /// Each page has one user, but the threads' ranges interleave (a permuted or tiled
    /// assignment).
    Permuted,
}

/// What to change for one object (docs/numa.md, "Objects").
#[derive(Debug, Clone, PartialEq)]
pub enum ObjectFix {
    /// Remote accesses below [`REMOTE_ADVICE_SHARE`] of its accesses.
    None,
    /// At least half its pages are used by one thread other than the one that touched them
    /// first: touch each page first by the thread that uses it.
    FirstTouch { layout: Layout },
    /// At least half its pages are used by two or more threads besides their first toucher:
    /// interleave it, or replicate it when it is read-mostly.
    Interleave,
    /// Its pages are used by the threads that touched them, yet accesses are remote: the
    /// threads ran on other nodes than where they touched (bind them).
    Bind,
}

/// The fix that fits an object's pattern.
pub fn object_fix(o: &NumaObject) -> ObjectFix {
    if o.accesses == 0 || (o.remote as f64) < REMOTE_ADVICE_SHARE * o.accesses as f64 {
        return ObjectFix::None;
    }
    if o.moved_pages * 2 >= o.pages && o.moved_pages > 0 {
        let mut r: Vec<(u32, u64, u64)> = o
            .threads
            .iter()
            .map(|t| (t.thread, t.start, t.end))
            .collect();
        r.sort_by_key(|x| (x.1, x.2));
        let blocks = r.windows(2).all(|w| w[0].2 <= w[1].1);
        let layout = if blocks {
            Layout::Blocks(r)
        } else {
            Layout::Permuted
        };
        return ObjectFix::FirstTouch { layout };
    }
    if o.shared_pages * 2 >= o.pages && o.shared_pages > 0 {
        return ObjectFix::Interleave;
    }
    ObjectFix::Bind
}

#[cfg(test)]
mod tests {
    use super::*;
    use profcc_schema::numa::NumaThread;

    fn thread(id: u32, local: u64, remote: u64, first: u64) -> NumaThread {
        NumaThread {
            thread: id,
            home: id + 1,
            local,
            remote,
            first_touches: first,
            by_home: vec![],
        }
    }

    #[test]
    fn serial_first_touch_remote_and_fine() {
        let mut n = Numa {
            model: "thread".into(),
            threads: vec![
                thread(0, 100, 0, 90),
                thread(1, 0, 100, 5),
                thread(2, 0, 100, 5),
            ],
            ..Default::default()
        };
        assert_eq!(
            pattern(&n),
            Pattern::SerialFirstTouch {
                thread: 0,
                first_touch_share: 0.9,
                remote_share: 200.0 / 300.0
            }
        );
        n.threads[0].first_touches = 5;
        n.threads[1].first_touches = 5;
        assert_eq!(
            pattern(&n),
            Pattern::Remote {
                remote_share: 200.0 / 300.0
            }
        );
        n.threads[1].remote = 1;
        n.threads[2].remote = 1;
        n.threads[0].local = 1000;
        assert_eq!(pattern(&n), Pattern::Fine);
        n.model = "off".into();
        assert_eq!(pattern(&n), Pattern::Fine);
    }

    fn range(thread: u32, start: u64, end: u64) -> profcc_schema::numa::ThreadRange {
        profcc_schema::numa::ThreadRange {
            thread,
            start,
            end,
            pages: (end - start) / 4096,
        }
    }

    #[test]
    fn object_fixes_follow_the_pages() {
        let mut o = NumaObject {
            pages: 4,
            accesses: 100,
            remote: 50,
            moved_pages: 4,
            threads: vec![range(2, 8192, 16384), range(1, 0, 8192)],
            ..Default::default()
        };
        assert_eq!(
            object_fix(&o),
            ObjectFix::FirstTouch {
                layout: Layout::Blocks(vec![(1, 0, 8192), (2, 8192, 16384)])
            }
        );
        o.threads = vec![range(1, 0, 16384), range(2, 4096, 12288)];
        assert_eq!(
            object_fix(&o),
            ObjectFix::FirstTouch {
                layout: Layout::Permuted
            }
        );
        o.moved_pages = 1;
        o.shared_pages = 3;
        assert_eq!(object_fix(&o), ObjectFix::Interleave);
        o.shared_pages = 0;
        assert_eq!(object_fix(&o), ObjectFix::Bind);
        o.remote = 9;
        assert_eq!(object_fix(&o), ObjectFix::None, "below 10% remote");
    }

    #[test]
    fn score_is_numaperfs_rate_per_millisecond() {
        // 8000 remote accesses (1000 assumed misses) and 500 remote invalidations in 3 ms.
        assert_eq!(score(8000, 500, 3_000_000), 500.0);
        assert_eq!(score(0, 0, 0), 0.0);
    }
}
