//! NUMA findings from the profile's `numa` section (docs/numa.md): which pattern the run
//! shows, with the numbers that say so. The report names the places; the rule lives here.

use crate::findings::{Analysis, Confidence, Evidence, Finding, Impact, Object};
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

/// A line or an object is significant, listed and given a fix, when both hold: at least
/// [`REMOTE_ADVICE_SHARE`] of its accesses are remote, and at least this many are. Below,
/// the report sums it into one line (the page on the boundary of two threads' halves, a
/// stack variable read a few times).
pub const SIGNIFICANT_REMOTE: u64 = 1024;

/// Whether `remote` of `accesses` is significant ([`SIGNIFICANT_REMOTE`]).
pub fn significant(remote: u64, accesses: u64) -> bool {
    remote >= SIGNIFICANT_REMOTE && remote as f64 >= REMOTE_ADVICE_SHARE * accesses as f64
}

/// The share of an object's pages that decides its class (reused, moved, shared, used by
/// their first toucher). Two threads splitting data evenly put half the pages on each side
/// of a 1/2 cut, so objects of one pattern (LULESH's `m_x`, `m_y`, `m_z`) fell on both
/// sides of it; at 2/3 they do not.
pub const CLEAR_SHARE: f64 = 2.0 / 3.0;

/// Whether a page's first toucher kept using it with the one other thread that used it
/// (the page is shared by the two) rather than that thread taking it over (a moved page):
/// of the accesses made once the other thread had come, the toucher made more than
/// `1 - CLEAR_SHARE` (a third). `balance` is the page record's: twice the toucher's accesses
/// since the other came (a cache slot that held the page across its arrival counts as
/// before) less the other's accesses, so the toucher's share is above a third exactly when
/// it is above 0. Two threads both reading and writing a page all along make about half
/// each, however late the other came; a page one thread initialised and another then used
/// has a balance near minus the other's accesses.
pub fn kept_using(balance: i64) -> bool {
    // k / (k + o) > 1 - CLEAR_SHARE = 1/3  <=>  2k - o > 0.
    balance > 0
}

/// Whether the model lets a thread's node change during the run: `real` yes; `emulate` only
/// when a thread is bound to one node's CPUs (its node is then its CPUs', read again after
/// the binding); `thread` (a thread is its own node) and `off` never.
pub fn threads_can_move(n: &Numa) -> bool {
    match n.model.as_str() {
        "real" => true,
        "emulate" => n.threads.iter().any(|t| t.pinned),
        _ => false,
    }
}

/// What to change for one object (docs/numa.md, "Objects").
#[derive(Debug, Clone, PartialEq)]
pub enum ObjectFix {
    /// Not [`significant`].
    None,
    /// A thread's stack read by other threads (the main thread's variables shared into a
    /// parallel region): a private copy per thread, or accept it; nothing array-like.
    Stack,
    /// Blocks allocated again and again at one site, most of their pages recycled from
    /// freed blocks ([`CLEAR_SHARE`]): an earlier lifetime's first touch placed them. Hoist
    /// the allocation, or keep a buffer per thread.
    Reused,
    /// Its pages are mostly used by one thread other than the one that touched them first
    /// (more moved pages than shared ones): touch each page first by the thread that uses it.
    FirstTouch { layout: Layout },
    /// Its pages are mostly used by two or more threads besides their first toucher (at
    /// least as many shared pages as moved ones): interleave it, or replicate it when it is
    /// read-mostly.
    Interleave,
    /// Threads can move ([`threads_can_move`]) and at least [`CLEAR_SHARE`] of its pages are
    /// used by their first toucher alone, yet accesses are remote: the threads ran on other
    /// nodes than where they touched (bind them).
    Bind,
}

/// The fix that fits an object's evidence, in this order: significance, a stack, reused
/// pages, pages used by their toucher alone (only where threads can move), then moved
/// against shared pages. Ratios only: objects of one pattern get one class whatever
/// their size or the order they come in.
pub fn object_fix(o: &NumaObject, can_move: bool) -> ObjectFix {
    if !significant(o.remote, o.accesses) || o.pages == 0 {
        return ObjectFix::None;
    }
    if o.stack_of.is_some() {
        return ObjectFix::Stack;
    }
    let share = |x: u64| x as f64 / o.pages as f64;
    // Several blocks of one site, or freed heap pages no block holds at the end (the counts
    // left in threads' page caches when their block was freed land there).
    let recycled = o.instances > 1 || o.alloc_stack.is_none();
    if recycled && share(o.reused_pages) >= CLEAR_SHARE {
        return ObjectFix::Reused;
    }
    let own = o.pages.saturating_sub(o.moved_pages + o.shared_pages);
    if can_move && share(own) >= CLEAR_SHARE {
        return ObjectFix::Bind;
    }
    if o.shared_pages > 0 && o.shared_pages >= o.moved_pages {
        return ObjectFix::Interleave;
    }
    if o.moved_pages == 0 {
        // Pages used by their toucher alone, remote where threads cannot move: a memory
        // policy placed them (interleaving chosen by the program).
        return ObjectFix::None;
    }
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
    ObjectFix::FirstTouch { layout }
}

/// NumaPerf's remote latency over local latency in the overhead of a thread (`RL`).
pub const REMOTE_LATENCY: f64 = 2.0;

/// NumaPerf's memory access overhead of a thread: `Opt = local + remote x REMOTE_LATENCY`.
pub fn overhead(local: u64, remote: u64) -> f64 {
    local as f64 + remote as f64 * REMOTE_LATENCY
}

/// One group of threads (same start routine) and its share of the work.
#[derive(Debug, Clone, PartialEq)]
pub struct Group<K> {
    pub key: K,
    pub threads: u32,
    /// Sum of its threads' overheads (NumaPerf's `Opg`).
    pub overhead: f64,
    /// The thread count its overhead share asks for.
    pub recommended: u32,
}

/// Load imbalance between thread groups (NumaPerf): each group's overhead, and the thread
/// count proportional to it: `round(W x Opg / sum Opg)` of the W threads of all groups, at
/// least 1, rounded so that the counts add up to W (largest remainders first). None with one
/// group or none.
pub fn imbalance<K: Clone + Ord>(threads: &[(K, f64)]) -> Option<Vec<Group<K>>> {
    let mut groups: std::collections::BTreeMap<K, (u32, f64)> = Default::default();
    for (k, o) in threads {
        let g = groups.entry(k.clone()).or_default();
        g.0 += 1;
        g.1 += o;
    }
    if groups.len() < 2 {
        return None;
    }
    let w: u32 = groups.values().map(|g| g.0).sum();
    let total: f64 = groups.values().map(|g| g.1).sum();
    let mut out: Vec<Group<K>> = groups
        .into_iter()
        .map(|(key, (n, o))| Group {
            key,
            threads: n,
            overhead: o,
            recommended: 0,
        })
        .collect();
    let want: Vec<f64> = out
        .iter()
        .map(|g| {
            if total > 0.0 {
                w as f64 * g.overhead / total
            } else {
                g.threads as f64
            }
        })
        .collect();
    for (g, x) in out.iter_mut().zip(&want) {
        g.recommended = (x.floor() as u32).max(1);
    }
    let mut order: Vec<usize> = (0..out.len()).collect();
    order.sort_by(|&a, &b| (want[b] - want[b].floor()).total_cmp(&(want[a] - want[a].floor())));
    let mut left = w as i64 - out.iter().map(|g| g.recommended as i64).sum::<i64>();
    for &k in order.iter().cycle().take(out.len() * 4) {
        if left > 0 {
            out[k].recommended += 1;
            left -= 1;
        } else if left < 0 && out[k].recommended > 1 {
            out[k].recommended -= 1;
            left += 1;
        }
    }
    Some(out)
}

/// Round 1 of the balance rule: a thread whose closeness to the others deviates from its
/// mean by at most this share of the mean is balanced (close to all alike).
pub const BALANCED_DEVIATION: f64 = 0.5;

/// The binding plan (NumaPerf; docs/numa.md, "Binding plan"): `close[a][b]` is the closeness
/// of worker threads a and b (their remote accesses to each other's pages). Each thread's
/// relative mean deviation `r` (mean |close[a][b] - its mean| over the others, over that
/// mean; 0 when it has no remote accesses). Round 1: `r <= BALANCED_DEVIATION` is balanced.
/// Round 2, over the others: `r` below half their mean `r` is balanced, the rest unbalanced.
/// Unbalanced threads start as clusters of one; the two clusters with the most closeness
/// between them merge while the result has at most `per_node` threads, until at most `nodes`
/// clusters are left or no merge fits; balanced threads then join the smallest clusters.
/// Returns the clusters (indices into `close`), at most `nodes` unless merges ran out, and
/// which threads were unbalanced.
pub fn binding_plan(
    close: &[Vec<f64>],
    nodes: usize,
    per_node: usize,
) -> (Vec<Vec<usize>>, Vec<bool>) {
    let n = close.len();
    let r: Vec<f64> = (0..n)
        .map(|a| {
            let others: Vec<f64> = (0..n).filter(|&b| b != a).map(|b| close[a][b]).collect();
            if others.is_empty() {
                return 0.0;
            }
            let m = others.iter().sum::<f64>() / others.len() as f64;
            if m <= 0.0 {
                return 0.0;
            }
            others.iter().map(|x| (x - m).abs()).sum::<f64>() / others.len() as f64 / m
        })
        .collect();
    let mut balanced: Vec<bool> = r.iter().map(|&x| x <= BALANCED_DEVIATION).collect();
    let rest: Vec<usize> = (0..n).filter(|&a| !balanced[a]).collect();
    if !rest.is_empty() {
        let m = rest.iter().map(|&a| r[a]).sum::<f64>() / rest.len() as f64;
        for &a in &rest {
            balanced[a] = r[a] < m / 2.0;
        }
    }
    let per_node = per_node.max(1);
    let mut clusters: Vec<Vec<usize>> = (0..n).filter(|&a| !balanced[a]).map(|a| vec![a]).collect();
    while clusters.len() > nodes.max(1) {
        let mut best: Option<(f64, usize, usize)> = None;
        for i in 0..clusters.len() {
            for j in i + 1..clusters.len() {
                if clusters[i].len() + clusters[j].len() > per_node {
                    continue;
                }
                let c: f64 = clusters[i]
                    .iter()
                    .flat_map(|&a| clusters[j].iter().map(move |&b| (a, b)))
                    .map(|(a, b)| close[a][b] + close[b][a])
                    .sum();
                if best.is_none_or(|(bc, _, _)| c > bc) {
                    best = Some((c, i, j));
                }
            }
        }
        let Some((_, i, j)) = best else { break };
        let moved = clusters.remove(j);
        clusters[i].extend(moved);
    }
    for a in (0..n).filter(|&a| balanced[a]) {
        if clusters.len() < nodes.max(1) {
            clusters.push(vec![a]);
        } else if let Some(c) = clusters.iter_mut().min_by_key(|c| c.len()) {
            c.push(a);
        }
    }
    for c in &mut clusters {
        c.sort_unstable();
    }
    (clusters, balanced.iter().map(|b| !b).collect())
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
            ..Default::default()
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
            accesses: 10_000,
            remote: 5_000,
            moved_pages: 4,
            threads: vec![range(2, 8192, 16384), range(1, 0, 8192)],
            ..Default::default()
        };
        assert_eq!(
            object_fix(&o, false),
            ObjectFix::FirstTouch {
                layout: Layout::Blocks(vec![(1, 0, 8192), (2, 8192, 16384)])
            }
        );
        o.threads = vec![range(1, 0, 16384), range(2, 4096, 12288)];
        assert_eq!(
            object_fix(&o, false),
            ObjectFix::FirstTouch {
                layout: Layout::Permuted
            }
        );
        o.moved_pages = 1;
        o.shared_pages = 3;
        assert_eq!(object_fix(&o, false), ObjectFix::Interleave);
        // Pages used by their toucher alone yet remote: the threads moved, where they can.
        o.shared_pages = 0;
        assert_eq!(object_fix(&o, true), ObjectFix::Bind);
        assert_eq!(
            object_fix(&o, false),
            ObjectFix::FirstTouch {
                layout: Layout::Permuted
            },
            "no binding where threads cannot move: the moved page is the evidence left"
        );
        o.moved_pages = 0;
        assert_eq!(object_fix(&o, false), ObjectFix::None, "a policy's pages");
        o.moved_pages = 1;
        o.remote = 999;
        assert_eq!(object_fix(&o, true), ObjectFix::None, "below 10% remote");
        o.remote = SIGNIFICANT_REMOTE - 1;
        o.accesses = SIGNIFICANT_REMOTE;
        assert_eq!(object_fix(&o, true), ObjectFix::None, "too few remote");
    }

    #[test]
    fn a_toucher_that_kept_using_its_page_shares_it() {
        let balance = |kept: i64, other: i64| 2 * kept - other;
        // Both used it all along, whether the other came early or late.
        assert!(kept_using(balance(4 * 1024, 4 * 1024)));
        // Initialised by one thread, then used by the other: nothing kept.
        assert!(!kept_using(balance(0, 8 * 1024)));
        // The cut: more than a third of the accesses since the other came.
        assert!(kept_using(balance(1001, 2000)));
        assert!(!kept_using(balance(1000, 2000)));
        assert!(!kept_using(0));
    }

    #[test]
    fn stacks_and_reused_temporaries_get_their_own_class() {
        let mut o = NumaObject {
            stack_of: Some(0),
            pages: 2,
            accesses: 100_000,
            remote: 50_000,
            moved_pages: 2,
            ..Default::default()
        };
        assert_eq!(object_fix(&o, false), ObjectFix::Stack);
        // 10 blocks allocated in turn at one site, 9 of every 10 pages recycled.
        o = NumaObject {
            alloc_stack: Some(7),
            instances: 10,
            pages: 160,
            reused_pages: 144,
            moved_pages: 80,
            accesses: 1_000_000,
            remote: 400_000,
            ..Default::default()
        };
        assert_eq!(object_fix(&o, true), ObjectFix::Reused);
        // Freed heap pages no block holds at the end: the same.
        o.alloc_stack = None;
        o.instances = 1;
        assert_eq!(object_fix(&o, false), ObjectFix::Reused);
        // One block on recycled pages is not a per-iteration temporary.
        o.alloc_stack = Some(7);
        assert!(matches!(
            object_fix(&o, false),
            ObjectFix::FirstTouch { .. }
        ));
    }

    /// LULESH's `m_x`, `m_y`, `m_z`: touched serially by the main thread, half of each used
    /// by the other thread; a page more or less on either side gives the same class.
    #[test]
    fn one_pattern_one_class_across_small_differences() {
        for can_move in [false, true] {
            let classes: Vec<ObjectFix> = [(100, 49), (100, 50), (100, 51), (101, 50)]
                .iter()
                .map(|&(pages, moved)| {
                    object_fix(
                        &NumaObject {
                            pages,
                            moved_pages: moved,
                            accesses: 1_000_000,
                            remote: 480_000,
                            threads: vec![range(0, 0, 4096 * 50), range(1, 4096 * 50, 4096 * 100)],
                            ..Default::default()
                        },
                        can_move,
                    )
                })
                .collect();
            assert!(classes.windows(2).all(|w| w[0] == w[1]), "{classes:?}");
            assert!(matches!(classes[0], ObjectFix::FirstTouch { .. }));
        }
    }

    #[test]
    fn only_real_and_bound_emulated_threads_can_move() {
        let mut n = Numa {
            model: "thread".into(),
            threads: vec![thread(0, 1, 1, 1), thread(1, 1, 1, 1)],
            ..Default::default()
        };
        assert!(!threads_can_move(&n));
        n.model = "emulate".into();
        assert!(!threads_can_move(&n));
        n.threads[1].pinned = true;
        assert!(threads_can_move(&n));
        n.model = "real".into();
        assert!(threads_can_move(&n));
    }

    #[test]
    fn imbalance_recommends_threads_by_overhead_share() {
        // Group "a": 2 threads doing 3/4 of the work; group "b": 2 threads doing 1/4.
        let t = [("a", 300.0), ("a", 300.0), ("b", 100.0), ("b", 100.0)];
        let g = imbalance(&t).unwrap();
        let got: Vec<(&str, u32, u32)> = g
            .iter()
            .map(|g| (g.key, g.threads, g.recommended))
            .collect();
        assert_eq!(got, vec![("a", 2, 3), ("b", 2, 1)]);
        assert_eq!(imbalance(&[("a", 1.0), ("a", 5.0)]), None, "one group");
        assert_eq!(overhead(10, 5), 20.0);
    }

    #[test]
    fn binding_plan_clusters_threads_that_share_pages() {
        // Threads 0-1 and 2-3 each read each other's pages; nothing across the pairs.
        let mut c = vec![vec![0.0; 4]; 4];
        for (a, b) in [(0, 1), (2, 3)] {
            c[a][b] = 100.0;
            c[b][a] = 100.0;
        }
        let (clusters, unbalanced) = binding_plan(&c, 2, 2);
        assert_eq!(clusters, vec![vec![0, 1], vec![2, 3]]);
        assert_eq!(unbalanced, vec![true; 4]);
        // All alike: balanced, spread over the nodes.
        let all = vec![vec![10.0; 4]; 4];
        let (clusters, unbalanced) = binding_plan(&all, 2, 2);
        assert_eq!(unbalanced, vec![false; 4]);
        assert_eq!(clusters.iter().map(|c| c.len()).sum::<usize>(), 4);
        assert!(clusters.iter().all(|c| c.len() == 2), "{clusters:?}");
    }

    #[test]
    fn score_is_numaperfs_rate_per_millisecond() {
        // 8000 remote accesses (1000 assumed misses) and 500 remote invalidations in 3 ms.
        assert_eq!(score(8000, 500, 3_000_000), 500.0);
        assert_eq!(score(0, 0, 0), 0.0);
    }
}

// ---------------------------------------------------------------------------------------------
// Findings (`crate::findings`).
// ---------------------------------------------------------------------------------------------

/// Seconds the run would save if `remote` of the run's `local + remote` accesses were local,
/// the run being memory-bound (an upper bound): its NumaPerf overhead share,
/// `remote x (REMOTE_LATENCY - 1) / overhead(local, remote)`, of the wall-clock time.
pub fn remote_saving_s(remote: u64, local: u64, all_remote: u64, duration_ns: u64) -> f64 {
    let o = overhead(local, all_remote);
    if o <= 0.0 {
        return 0.0;
    }
    duration_ns as f64 / 1e9 * remote as f64 * (REMOTE_LATENCY - 1.0) / o
}

fn remote_impact(remote: u64, local: u64, all_remote: u64, duration_ns: u64) -> Impact {
    Impact {
        seconds: remote_saving_s(remote, local, all_remote, duration_ns),
        bytes: 0,
        formula: "remote_overhead_share".into(),
        inputs: vec![
            Evidence::new("remote", remote as f64, "accesses"),
            Evidence::new("run_local", local as f64, "accesses"),
            Evidence::new("run_remote", all_remote as f64, "accesses"),
            Evidence::new("remote_latency", REMOTE_LATENCY, "x local"),
        ],
        confidence: Confidence::Low,
    }
}

/// The run's pattern as a finding ([`pattern`]); `place`: where most pages were first
/// touched, when known. Both `profcc report` and the runtime's exit summary call it.
pub fn run_finding(n: &Numa, duration_ns: u64, place: Option<String>) -> Option<Finding> {
    let local: u64 = n.threads.iter().map(|t| t.local).sum();
    let remote: u64 = n.threads.iter().map(|t| t.remote).sum();
    let places: Vec<String> = place.into_iter().collect();
    let at = places
        .first()
        .map(|p| format!(" (most at {p})"))
        .unwrap_or_default();
    match pattern(n) {
        Pattern::Fine => None,
        Pattern::SerialFirstTouch {
            thread,
            first_touch_share,
            remote_share,
        } => Some(Finding::new(
            Analysis::Numa,
            "serial_first_touch",
            format!(
                "serial first touch: thread {thread} touched {:.0}% of the pages first{at} and {:.0}% of all accesses are remote",
                first_touch_share * 100.0,
                remote_share * 100.0
            ),
            vec![Object::run()],
            places,
            vec![
                Evidence::new("first_touch_share", first_touch_share, "fraction"),
                Evidence::new("remote_share", remote_share, "fraction"),
            ],
            remote_impact(remote, local, remote, duration_ns),
            "touch the data first in parallel, each thread the part it later uses (the loop that uses it, with the same schedule), or interleave it (numactl --interleave=all)".into(),
        ).crossed(format!(
            "at least {:.0}% of all accesses remote, and one thread touched at least {:.0}% of the pages first",
            REMOTE_ADVICE_SHARE * 100.0,
            SERIAL_FIRST_TOUCH_SHARE * 100.0
        ))),
        Pattern::Remote { remote_share } => Some(Finding::new(
            Analysis::Numa,
            "remote_access",
            format!("{:.0}% of all accesses are remote", remote_share * 100.0),
            vec![Object::run()],
            places,
            vec![Evidence::new("remote_share", remote_share, "fraction")],
            remote_impact(remote, local, remote, duration_ns),
            format!(
                "place each thread's data on its node (first touch by the thread that uses it), interleave data all threads share{}",
                if threads_can_move(n) {
                    ", or bind threads near their data"
                } else {
                    ""
                }
            ),
        ).crossed(format!(
            "at least {:.0}% of all accesses remote",
            REMOTE_ADVICE_SHARE * 100.0
        ))),
    }
}

/// One object's finding: `how` its [`object_fix`], `object` its identity, `places` where it
/// is accessed remotely most, `fix` the report's words for the fix; `run_local`/`run_remote`
/// the run's accesses.
#[allow(clippy::too_many_arguments)]
pub fn object_finding(
    o: &NumaObject,
    how: &ObjectFix,
    object: Object,
    places: Vec<String>,
    fix: String,
    run_local: u64,
    run_remote: u64,
    duration_ns: u64,
) -> Option<Finding> {
    let (kind, what) = match how {
        ObjectFix::None => return None,
        ObjectFix::FirstTouch { .. } => (
            "first_touch",
            "pages first touched by another thread than the one using them",
        ),
        ObjectFix::Interleave => (
            "remote_access",
            "pages used by several threads, remote for most",
        ),
        ObjectFix::Reused => (
            "reused_pages",
            "blocks allocated again and again on pages an earlier block's first touch placed",
        ),
        ObjectFix::Stack => ("shared_stack", "a thread's stack read by other threads"),
        ObjectFix::Bind => (
            "binding",
            "remote accesses from threads that moved away from their pages",
        ),
    };
    Some(
        Finding::new(
            Analysis::Numa,
            kind,
            format!(
                "{}: {what}; {:.0}% of its accesses remote",
                object.text(),
                o.remote as f64 / o.accesses.max(1) as f64 * 100.0
            ),
            vec![object],
            places,
            vec![
                Evidence::new("accesses", o.accesses as f64, "accesses"),
                Evidence::new("remote", o.remote as f64, "accesses"),
                Evidence::new("pages", o.pages as f64, "pages"),
                Evidence::new("moved_pages", o.moved_pages as f64, "pages"),
                Evidence::new("shared_pages", o.shared_pages as f64, "pages"),
                Evidence::new("reused_pages", o.reused_pages as f64, "pages"),
                Evidence::new("instances", o.instances as f64, "blocks"),
            ],
            remote_impact(o.remote, run_local, run_remote, duration_ns),
            fix,
        )
        .crossed(format!(
        "at least {SIGNIFICANT_REMOTE} remote accesses and {:.0}% of the object's accesses remote",
        REMOTE_ADVICE_SHARE * 100.0
    )),
    )
}

/// Load imbalance between thread groups ([`imbalance`]) as a finding, when a group's
/// recommended thread count differs from its count: the run then waits for the group with
/// the most overhead per thread. Saved time: `1 - max(Opg / recommended) / max(Opg / threads)`
/// of the run.
pub fn imbalance_finding(groups: &[Group<String>], duration_ns: u64) -> Option<Finding> {
    if groups.iter().all(|g| g.recommended == g.threads) {
        return None;
    }
    let worst = |per: &dyn Fn(&Group<String>) -> u32| {
        groups
            .iter()
            .map(|g| g.overhead / per(g).max(1) as f64)
            .fold(0.0, f64::max)
    };
    let now = worst(&|g| g.threads);
    let balanced = worst(&|g| g.recommended);
    let share = if now > 0.0 {
        (1.0 - balanced / now).max(0.0)
    } else {
        0.0
    };
    let text: Vec<String> = groups
        .iter()
        .map(|g| {
            format!(
                "{}: {} threads, {} recommended",
                g.key, g.threads, g.recommended
            )
        })
        .collect();
    Some(Finding::new(
        Analysis::Numa,
        "imbalance",
        format!(
            "thread groups' work is out of proportion to their threads ({})",
            text.join("; ")
        ),
        groups
            .iter()
            .map(|g| Object::new("routine", g.key.clone()))
            .collect(),
        vec![],
        groups
            .iter()
            .map(|g| Evidence::new(&format!("overhead {}", g.key), g.overhead, "accesses"))
            .collect(),
        Impact {
            seconds: share * duration_ns as f64 / 1e9,
            bytes: 0,
            formula: "group_overhead_per_thread".into(),
            inputs: vec![
                Evidence::new("max_overhead_per_thread", now, "accesses"),
                Evidence::new("balanced_overhead_per_thread", balanced, "accesses"),
            ],
            confidence: Confidence::Low,
        },
        "give each thread group threads in proportion to its work (the recommended counts)".into(),
    )
    .crossed(format!(
        "a group's recommended thread count (its share of the run's memory overhead) differs from its count; groups within {:.0}% of the mean overhead per thread count as balanced",
        BALANCED_DEVIATION * 100.0
    )))
}
