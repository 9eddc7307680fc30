//! Allocator findings (docs/allocators.md): when switching allocators is advised, when the
//! heap wastes memory (fragmentation, blowup), allocator-induced sharing and lock contention.
//! The report computes the figures (it has the allocator descriptions); the rules are here.

use crate::findings::{Analysis, Confidence, Evidence, Finding, Impact, Object};

/// Advise switching when the best reference allocator saves at least this share of the
/// allocator's measured time ...
pub const ADVISE_SHARE_OF_ALLOCATOR: f64 = 0.20;
/// ... and at least this share of the threads' CPU time (the run's wall-clock time for a
/// profile without it). The model prices the allocator's calls only; what an allocator does
/// to the rest of the run (its layout, its caches) moved whole runs by more than 10% the other
/// way: on the larson-like known answer, mimalloc's calls priced at jemalloc's costs saved 5%
/// of the CPU time, and jemalloc ran that program 13% slower natively.
pub const ADVISE_SHARE_OF_RUN: f64 = 0.10;
/// Advise switching only when the in-use allocator's own reference costs price this run's
/// operations within this factor of its measured time (either way): otherwise the reference
/// costs do not describe this run, and neither can they describe the others'.
pub const REFERENCE_AGREEMENT: f64 = 1.5;
/// The heap wastes memory when the bytes beyond the requested ones (rounding up to size
/// classes, or freed blocks kept) are at least this share of the bytes the allocator holds
/// for the program (usable plus kept) ...
pub const WASTE_SHARE: f64 = 0.30;
/// ... and at least this many bytes.
pub const WASTE_MIN_BYTES: u64 = 1 << 20;
/// A lock of the allocator's is contended when callers waited for it at least this many times.
pub const LOCK_MIN_WAITS: u64 = 10;

/// What the allocator's shares are of, and its words: the threads' CPU time (`cpu_ns`, all
/// threads' user + system time), or for a profile without it the run's wall-clock time.
pub fn share_basis(cpu_ns: Option<u64>, duration_ns: u64) -> (u64, &'static str) {
    match cpu_ns {
        Some(c) => (c, "the threads' CPU time"),
        None => (duration_ns, "the run's wall-clock time"),
    }
}

/// Is switching worth advising? `saves_ns`: the best reference allocator's saving;
/// `basis_ns`: the threads' CPU time (or the run's wall-clock time).
pub fn switch_advised(saves_ns: f64, total_ns: f64, basis_ns: u64) -> bool {
    saves_ns >= ADVISE_SHARE_OF_ALLOCATOR * total_ns
        && saves_ns >= ADVISE_SHARE_OF_RUN * basis_ns as f64
}

/// Do the in-use allocator's own reference costs (`self_check_ns` for this run's
/// operations) agree with its measured `total_ns` within [`REFERENCE_AGREEMENT`]?
pub fn reference_agrees(self_check_ns: f64, total_ns: f64) -> bool {
    self_check_ns > 0.0
        && total_ns > 0.0
        && self_check_ns <= REFERENCE_AGREEMENT * total_ns
        && total_ns <= REFERENCE_AGREEMENT * self_check_ns
}

/// Why the report gives no switching advice when the reference costs cannot be trusted for
/// this run (None: they can, [`reference_agrees`]); one line.
pub fn no_switch_reason(
    current: &str,
    self_check_ns: Option<f64>,
    total_ns: f64,
) -> Option<String> {
    match self_check_ns {
        None => Some(format!(
            "no switching advice: no reference costs of {current} to check the model against"
        )),
        Some(c) if !reference_agrees(c, total_ns) => Some(format!(
            "no switching advice: {current}'s own reference costs give {:.1} ms for these operations, {:.2}x the {:.1} ms measured (more than {REFERENCE_AGREEMENT}x apart either way: the reference costs do not describe this run)",
            c / 1e6,
            c / total_ns.max(1.0),
            total_ns / 1e6,
        )),
        Some(_) => None,
    }
}

/// An alternative allocator's time for this run's operations: its reference costs of them
/// (`reference_ns`) scaled by the in-use allocator's measured time over its own reference
/// costs of the same operations (`total_ns / self_check_ns`). Whether it is faster comes from
/// two reference totals measured alike on this machine; the figure is in this run's terms
/// (a run whose allocator was 0.7x its reference costs is assumed 0.7x under the other one).
pub fn scaled_prediction(reference_ns: f64, self_check_ns: f64, total_ns: f64) -> f64 {
    reference_ns * total_ns / self_check_ns.max(1.0)
}

/// The switching finding, when the reference costs describe this run
/// ([`reference_agrees`]: `self_check_ns`, the in-use allocator's own reference costs of
/// these operations) and [`switch_advised`]: `current` allocator's operations took
/// `total_ns`, the `best` allocator would take `predicted_ns` ([`scaled_prediction`]);
/// `basis_ns` is the threads' CPU time, `basis` its words; `how` says how to try it. Its fix
/// is the report's advice.
#[allow(clippy::too_many_arguments)]
pub fn switch_finding(
    current: &str,
    best: &str,
    predicted_ns: f64,
    total_ns: f64,
    self_check_ns: Option<f64>,
    basis_ns: u64,
    basis: &str,
    how: &str,
) -> Option<Finding> {
    let saves = total_ns - predicted_ns;
    let trusted = self_check_ns.is_some_and(|c| reference_agrees(c, total_ns));
    (trusted && switch_advised(saves, total_ns, basis_ns)).then(|| {
        let fix = format!(
            "try {best}: at its reference costs (scaled by {:.2}, this run's measured time over {current}'s own) these operations would take {:.1} ms instead of {:.1} ms ({:.0}% of {basis} less); {how}",
            total_ns / self_check_ns.unwrap_or(total_ns).max(1.0),
            predicted_ns / 1e6,
            total_ns / 1e6,
            saves / basis_ns.max(1) as f64 * 100.0,
        );
        Finding::new(
            Analysis::Allocator,
            "allocator_switch",
            format!(
                "the program's allocator ({current}) takes {:.1} ms; {best} would take {:.1} ms",
                total_ns / 1e6,
                predicted_ns / 1e6
            ),
            vec![Object::new("allocator", current)],
            vec![],
            vec![
                Evidence::new("allocator_ns", total_ns, "ns"),
                Evidence::new("predicted_ns", predicted_ns, "ns"),
                Evidence::new("basis_ns", basis_ns as f64, "ns"),
            ],
            Impact {
                seconds: saves / 1e9,
                bytes: 0,
                formula: "reference_costs".into(),
                inputs: vec![
                    Evidence::new("allocator_ns", total_ns, "ns"),
                    Evidence::new("predicted_ns", predicted_ns, "ns"),
                ],
                confidence: Confidence::Medium,
            },
            fix,
        )
        .crossed(format!(
            "switching saves at least {:.0}% of the allocator's time and {:.0}% of the run's, and the current allocator's reference costs agree with its measured time within {REFERENCE_AGREEMENT}x",
            ADVISE_SHARE_OF_ALLOCATOR * 100.0,
            ADVISE_SHARE_OF_RUN * 100.0
        ))
    })
}

/// The heap's figures at one moment (`peak` or `exit`): `requested` bytes live, `usable` of
/// them as the allocator handed them out, `cached_free` freed and kept by the allocator for
/// reuse, `heap_rss` the resident bytes the run added (evidence only: it holds the runtime's
/// own tables too, so no rule uses it).
#[derive(Debug, Clone, Copy)]
pub struct Moment<'a> {
    pub name: &'a str,
    pub requested: u64,
    pub usable: u64,
    pub cached_free: u64,
    pub heap_rss: u64,
}

/// Fragmentation and blowup: each at the moment where it is largest.
pub fn waste_findings(moments: &[Moment]) -> Vec<Finding> {
    let held = |m: &Moment| m.usable.max(m.requested) + m.cached_free;
    let big = |b: u64, m: &Moment| b >= WASTE_MIN_BYTES && b as f64 >= WASTE_SHARE * held(m) as f64;
    let waste = |m: &Moment| m.usable.saturating_sub(m.requested);
    let at_most = |f: &dyn Fn(&Moment) -> u64| {
        moments
            .iter()
            .filter(|m| big(f(m), m))
            .max_by_key(|m| f(m))
            .copied()
    };
    let ev = |m: &Moment| {
        vec![
            Evidence::new("requested", m.requested as f64, "B"),
            Evidence::new("usable", m.usable as f64, "B"),
            Evidence::new("cached_free", m.cached_free as f64, "B"),
            Evidence::new("heap_rss", m.heap_rss as f64, "B"),
        ]
    };
    let impact = |m: &Moment, bytes: u64, formula: &str| Impact {
        seconds: 0.0,
        bytes,
        formula: formula.into(),
        inputs: ev(m),
        confidence: Confidence::Medium,
    };
    let crossed = |what: &str| {
        format!(
            "{what} at least {} MiB and {:.0}% of the bytes the allocator holds",
            WASTE_MIN_BYTES >> 20,
            WASTE_SHARE * 100.0
        )
    };
    let mut out = Vec::new();
    if let Some(m) = at_most(&waste) {
        out.push(Finding::new(
            Analysis::Allocator,
            "fragmentation",
            format!(
                "at the {}, {:.0}% of the bytes the allocator handed out were not requested (rounding up to its size classes)",
                m.name,
                waste(&m) as f64 / held(&m).max(1) as f64 * 100.0
            ),
            vec![Object::new("heap", "")],
            vec![],
            ev(&m),
            impact(&m, waste(&m), "usable_minus_requested"),
            "request sizes at or just below the allocator's size classes (`profcc detect-allocator` lists them; docs/allocators.md), or pool the objects of one odd size".into(),
        ).crossed(crossed("bytes handed out but not requested")));
    }
    if let Some(m) = at_most(&|m: &Moment| m.cached_free) {
        out.push(Finding::new(
            Analysis::Allocator,
            "blowup",
            format!(
                "at the {}, the allocator keeps {:.0}% of the bytes it holds for the program as blocks freed by threads that never reused them",
                m.name,
                m.cached_free as f64 / held(&m).max(1) as f64 * 100.0
            ),
            vec![Object::new("heap", "")],
            vec![],
            ev(&m),
            impact(&m, m.cached_free, "cached_free_bytes"),
            "memory freed by one thread and not reused by another (blowup): free in the thread that allocates, or use an allocator that returns memory (jemalloc with dirty_decay_ms, glibc with M_TRIM_THRESHOLD or malloc_trim)".into(),
        ).crossed(crossed("freed bytes the allocator keeps")));
    }
    out
}

/// A contended allocator lock: `place` names the lock, waits and their time.
pub fn lock_finding(place: &str, taken: u64, waited: u64, wait_ns: f64) -> Option<Finding> {
    (waited >= LOCK_MIN_WAITS).then(|| {
        Finding::new(
            Analysis::Allocator,
            "lock_contention",
            format!("the allocator's lock {place}: {waited} of {taken} acquisitions waited"),
            vec![Object::new("lock", place)],
            vec![],
            vec![
                Evidence::new("taken", taken as f64, "calls"),
                Evidence::new("waited", waited as f64, "calls"),
                Evidence::new("wait_ns", wait_ns, "ns"),
            ],
            Impact {
                seconds: wait_ns / 1e9,
                bytes: 0,
                formula: "measured_wait".into(),
                inputs: vec![Evidence::new("wait_ns", wait_ns, "ns")],
                confidence: if waited >= 10 * LOCK_MIN_WAITS {
                    Confidence::High
                } else {
                    Confidence::Medium
                },
            },
            "threads wait for the allocator's lock: use a thread-caching allocator (jemalloc, tcmalloc, mimalloc), or allocate per thread from pools".into(),
        )
        .crossed(format!("at least {LOCK_MIN_WAITS} acquisitions of the lock waited"))
    })
}

/// Objects of an allocation site that share cache lines with other threads' objects because
/// the allocator put them side by side.
pub fn induced_sharing_finding(
    site: &str,
    active: u64,
    passive: u64,
    invalidations: Option<u64>,
    fix: String,
) -> Option<Finding> {
    (active + passive > 0).then(|| {
        Finding::new(
            Analysis::Allocator,
            "allocator_induced_sharing",
            format!(
                "objects allocated at {site} share {} cache lines with other threads' objects",
                active + passive
            ),
            vec![Object::new("heap", site)],
            vec![],
            vec![
                Evidence::new("active_lines", active as f64, "lines"),
                Evidence::new("passive_lines", passive as f64, "lines"),
                Evidence::new(
                    "invalidations",
                    invalidations.unwrap_or(0) as f64,
                    "invalidations",
                ),
            ],
            Impact {
                seconds: 0.0,
                bytes: 0,
                formula: "none: the sharing analysis predicts its time".into(),
                inputs: vec![],
                confidence: if invalidations.unwrap_or(0) > 0 {
                    Confidence::Medium
                } else {
                    Confidence::Low
                },
            },
            fix,
        )
        .crossed(
            "at least one cache line holds this site's object and another thread's object, both used"
                .into(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switching_is_advised_from_both_shares() {
        // 20% of the allocator's 100 ms and 10% of the threads' 200 ms.
        assert!(switch_advised(20e6, 100e6, 200_000_000));
        assert!(!switch_advised(19.9e6, 100e6, 200_000_000));
        assert!(!switch_advised(20e6, 100e6, 200_100_000));
        let cpu = "the threads' CPU time";
        let f = |self_check| {
            switch_finding(
                "glibc",
                "jemalloc 5.3.0",
                60e6,
                100e6,
                self_check,
                400_000_000,
                cpu,
                "LD_PRELOAD",
            )
        };
        // The model must price the in-use allocator within 1.5x of what was measured.
        assert!(f(None).is_none());
        assert!(f(Some(151e6)).is_none());
        assert!(f(Some(66e6)).is_none());
        assert!(f(Some(67e6)).is_some() && f(Some(150e6)).is_some());
        let f = f(Some(110e6)).unwrap();
        assert_eq!(
            (f.kind.as_str(), f.impact.seconds),
            ("allocator_switch", 0.04)
        );
        assert!(
            f.fix.starts_with("try jemalloc 5.3.0: at its reference costs (scaled by 0.91, this run's measured time over glibc's own) these operations would take 60.0 ms instead of 100.0 ms (10% of the threads' CPU time less)")
                && f.fix.ends_with("; LD_PRELOAD"),
            "{}",
            f.fix
        );
        assert_eq!(f.key, "allocator/allocator_switch/allocator:glibc@");
    }

    #[test]
    fn predictions_are_scaled_by_the_in_use_allocators_check() {
        // Measured 74 ms where its own reference costs give 100 ms: an alternative priced at
        // 84 ms by its reference costs is predicted 0.74 x 84 ms, faster, not 10 ms slower.
        let p = scaled_prediction(84e6, 100e6, 74e6);
        assert!((p - 62.16e6).abs() < 1.0, "{p}");
        assert_eq!(scaled_prediction(50e6, 100e6, 100e6), 50e6);
    }

    /// One line says why no advice is given, naming the factor; none when the model agrees.
    #[test]
    fn no_advice_says_why() {
        assert_eq!(no_switch_reason("glibc", Some(120e6), 100e6), None);
        let r = no_switch_reason("glibc", Some(245.7e6), 100e6).unwrap();
        assert!(
            r.starts_with("no switching advice: glibc's own reference costs give 245.7 ms for these operations, 2.46x the 100.0 ms measured"),
            "{r}"
        );
        assert!(!r.contains('\n'));
        assert!(no_switch_reason("glibc", None, 100e6).is_some());
    }

    #[test]
    fn waste_is_found_where_it_is_largest() {
        let m = |name, requested, usable, cached_free| Moment {
            name,
            requested,
            usable,
            cached_free,
            heap_rss: 1 << 40, // never a rule's basis
        };
        // Peak: 4 MiB requested in 6 MiB usable (33% rounding); exit: 5 MiB freed and kept.
        let v = waste_findings(&[m("peak", 4 << 20, 6 << 20, 0), m("exit", 0, 0, 5 << 20)]);
        let kinds: Vec<(&str, u64)> = v
            .iter()
            .map(|f| (f.kind.as_str(), f.impact.bytes))
            .collect();
        assert_eq!(kinds, [("fragmentation", 2 << 20), ("blowup", 5 << 20)]);
        assert!(v[0].title.starts_with("at the peak") && v[1].title.starts_with("at the exit"));
        // Below 1 MiB or below 30%: nothing.
        assert!(waste_findings(&[m("peak", 1 << 19, 1 << 20, 0)]).is_empty());
        assert!(waste_findings(&[m("peak", 10 << 20, 12 << 20, 0)]).is_empty());
    }

    #[test]
    fn a_lock_is_contended_from_ten_waits() {
        assert!(lock_finding("arena", 1000, 9, 1e6).is_none());
        let f = lock_finding("arena", 1000, 10, 2e6).unwrap();
        assert_eq!(
            (f.impact.seconds, f.impact.confidence),
            (0.002, Confidence::Medium)
        );
        assert_eq!(
            lock_finding("arena", 1000, 100, 0.0)
                .unwrap()
                .impact
                .confidence,
            Confidence::High
        );
    }
}
