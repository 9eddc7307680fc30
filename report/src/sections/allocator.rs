//! The allocator analysis (docs/allocators.md, "The allocator analysis"): the runtime's
//! per-operation timings filed by the size kinds of the allocator's description, the channels
//! the allocator's work goes through, who pays, and the predicted change of switching to each
//! shipped allocator at its reference costs.

use super::Options;
use crate::merge::Merged;
use crate::model::{
    AllocChannel, AllocEventRow, AllocEvents, AllocInducedSharing, AllocInducedSite, AllocLock,
    AllocOpRow, AllocOverhead, AllocPrediction, AllocSiteCost, AllocatorAnalysis, AllocatorInput,
};
use crate::symbolize::user_frame;
use profcc_allocator_probe::{self as probe, Description};
use profcc_schema::{allocator::PAGE, sharing::LINE};
use std::collections::BTreeMap;

/// The description the kinds come from: `allocator=FILE`'s text kept in the profile, else the
/// shipped one of the identified allocator, else the live probe's (`opts.live_probe`: the
/// allocator probe run now, on the allocator the profile names).
fn description(
    p: &profcc_schema::Profile,
    a: &profcc_schema::allocator::Allocator,
    name: &str,
    version: Option<&str>,
    opts: &Options,
    probed: &mut BTreeMap<(Vec<String>, String), Result<(Description, String), String>>,
) -> (Option<Description>, String) {
    if let Some(text) = &a.description {
        return match probe::from_toml(text) {
            Ok(d) => (Some(d), "allocator=FILE (given at run time)".into()),
            Err(e) => (None, format!("allocator=FILE does not parse ({e})")),
        };
    }
    if let Some((f, d)) = probe::shipped_for(name, version) {
        return (Some(d), format!("shipped configs/allocators/{f}"));
    }
    let generic = format!(
        "size kinds are by the generic rule (small up to {GENERIC_SMALL_MAX} bytes, big from \
         {GENERIC_BIG})"
    );
    let save = "`profcc detect-allocator --exe PROGRAM -o FILE`, then run with \
                PROFCC_OPTIONS=allocator=FILE";
    // Once per allocator and program in a report (merged profiles of one program share it).
    let live = opts.live_probe.map(|probe| {
        probed
            .entry((p.allocator.clone(), p.exe.clone()))
            .or_insert_with(|| probe(&p.allocator, &p.exe))
            .clone()
    });
    match live {
        Some(Ok((d, kept))) => (
            Some(d),
            format!(
                "live probe of this machine's {name} allocator ({kept}; no shipped \
                 description; {save} to give it at run time)"
            ),
        ),
        Some(Err(e)) => (
            None,
            format!("none for {name}, and the live probe failed ({e}); {save}; {generic}"),
        ),
        None => (None, format!("none for {name}: {save}; {generic}")),
    }
}

/// The reference descriptions with this machine's `[[bench]]` rows where `profcc
/// detect-allocator --bench` kept them (`probe::costs_file`, keyed by
/// `profcc_analysis::sharing::machine_key`), else the shipped rows; and where they came from,
/// in words.
fn reference_costs(
    shipped: &[(&'static str, Description)],
) -> (Vec<(&'static str, Description)>, String) {
    let machine = profcc_analysis::sharing::machine_key(
        &std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default(),
        std::thread::available_parallelism().map_or(0, |n| n.get() as u32),
    );
    let file = probe::costs_file(
        std::env::var_os("XDG_CACHE_HOME").as_deref(),
        std::env::var_os("HOME").as_deref(),
    );
    let text = file
        .as_ref()
        .and_then(|f| std::fs::read_to_string(f).ok())
        .unwrap_or_default();
    let (mut here, mut away) = (Vec::new(), Vec::new());
    let refs = shipped
        .iter()
        .map(|(f, d)| {
            let mut d = d.clone();
            let label = format!("{} {}", d.name, d.version.clone().unwrap_or_default());
            match probe::costs_for(&text, &machine, &d) {
                Some(c) => {
                    d.bench = c.bench;
                    here.push(label.trim().to_string());
                }
                None => away.push(label.trim().to_string()),
            }
            (*f, d)
        })
        .collect();
    let mut words = Vec::new();
    if !here.is_empty() {
        words.push(format!(
            "this machine's ({machine}; `profcc detect-allocator --bench`, kept in {}) for {}",
            file.as_ref()
                .map_or("?".into(), |f| f.display().to_string()),
            here.join(", ")
        ));
    }
    if !away.is_empty() {
        words.push(format!(
            "shipped, measured on {}, for {}: run `profcc detect-allocator --bench` (and `--preload LIB.so --bench` for each other allocator) to measure this machine's",
            probe::SHIPPED_COSTS_MACHINE,
            away.join(", ")
        ));
    }
    (refs, words.join("; "))
}

/// Without a description: small up to this (the classes every allocator above has) ...
pub const GENERIC_SMALL_MAX: u64 = 1024;
/// ... big from this (glibc's default mmap threshold).
pub const GENERIC_BIG: u64 = 128 * 1024;

fn kind(d: Option<&Description>, size: u64) -> &'static str {
    match d {
        Some(d) => probe::size_kind(d, size),
        None if size <= GENERIC_SMALL_MAX => "small",
        None if size >= GENERIC_BIG => "big",
        None => "medium",
    }
}

/// A cell's estimated ticks over all its calls: its timed calls' mean times its count (0 when
/// none was timed).
fn cell_cycles(c: &profcc_schema::allocator::OpCell) -> f64 {
    if c.timed == 0 {
        return 0.0;
    }
    c.cycles as f64 * c.count as f64 / c.timed as f64
}

/// The size a bucket [lo, hi) is priced at: its geometric middle (2 x lo when unbounded).
fn bucket_size(lo: u64, hi: u64) -> u64 {
    let hi = if hi == u64::MAX { lo.max(1) * 2 } else { hi };
    ((lo.max(1) as f64) * (hi as f64)).sqrt() as u64
}

/// The sizes a free of unknown size is priced at: the allocations' buckets (their
/// `bucket_size`) with their shares of the allocations of known size, less the frees of
/// known size in each (those objects were recorded); 64 bytes alone when there are none.
fn unknown_size_mix(ops: &[profcc_schema::allocator::OpCell]) -> Vec<(u64, f64)> {
    let mut left: BTreeMap<u64, f64> = BTreeMap::new();
    for c in ops.iter().filter(|c| !(c.lo == 0 && c.hi == 0)) {
        let sign = if probe::bench_op(&c.op) == "free" {
            -1.0
        } else {
            1.0
        };
        *left.entry(bucket_size(c.lo, c.hi)).or_default() += sign * c.count as f64;
    }
    left.retain(|_, n| *n > 0.0);
    let total: f64 = left.values().sum();
    if total <= 0.0 {
        return vec![(64, 1.0)];
    }
    left.into_iter()
        .map(|(size, n)| (size, n / total))
        .collect()
}

/// Each channel of `profcc_schema::allocator::CHANNELS` and the PLT import through which
/// profcc sees it.
type Imported = fn(&probe::Channels) -> bool;
const CHANNEL_IMPORTS: [(&str, Imported); 11] = [
    ("mmap", |c| c.mmap),
    ("munmap", |c| c.munmap),
    ("mremap", |c| c.mremap),
    ("mutex", |c| c.pthread_mutex_lock),
    ("mutex_wait", |c| c.pthread_mutex_lock),
    ("mutex_try", |c| c.pthread_mutex_trylock),
    ("mutex_busy", |c| c.pthread_mutex_trylock),
    ("mutex_hold", |c| {
        c.pthread_mutex_unlock && (c.pthread_mutex_lock || c.pthread_mutex_trylock)
    }),
    ("madvise", |c| c.madvise),
    ("mprotect", |c| c.mprotect),
    ("sbrk", |c| c.sbrk || c.brk),
];

#[cfg(test)]
#[test]
fn channel_imports_name_every_channel() {
    let names: Vec<&str> = CHANNEL_IMPORTS.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, profcc_schema::allocator::CHANNELS);
}

/// Every channel with what the description says of it.
fn channel_rows(
    a: &profcc_schema::allocator::Allocator,
    d: Option<&Description>,
    ns: &dyn Fn(u64) -> f64,
) -> Vec<AllocChannel> {
    let mut out = Vec::new();
    // What the allocator must import for each channel of `CHANNELS` to see its calls (a
    // unit test checks the two lists name the same channels).
    for (name, imported) in CHANNEL_IMPORTS {
        let cells: Vec<_> = a.channels.iter().filter(|c| c.channel == name).collect();
        let count: u64 = cells.iter().map(|c| c.count).sum();
        let cycles: u64 = cells.iter().map(|c| c.cycles).sum();
        let (observable, why_not) = match d {
            _ if count > 0 => (true, None),
            Some(d) if !imported(&d.channels) => (
                false,
                Some(format!(
                    "{} makes these calls inside itself, not through its PLT",
                    d.channels.file
                )),
            ),
            Some(_) => (true, None),
            None => (
                false,
                Some("no description of this allocator says how it calls the kernel".into()),
            ),
        };
        out.push(AllocChannel {
            channel: name.into(),
            observable,
            why_not,
            count,
            total_ns: ns(cycles),
            by_op: cells
                .iter()
                .map(|c| (c.op.clone(), c.count, ns(c.cycles)))
                .collect(),
        });
    }
    out
}

/// How to run a program with the allocator of description `d`.
fn how_to_use(d: &Description) -> String {
    if d.name == "glibc" {
        return "the system's malloc: drop the LD_PRELOAD or -l flag that brings the current one"
            .into();
    }
    let preload = probe::preload_of(d);
    let lib = std::path::Path::new(&preload)
        .file_name()
        .and_then(|f| f.to_str())
        .and_then(|f| f.strip_prefix("lib"))
        .and_then(|f| f.split(".so").next())
        .unwrap_or("?");
    format!("LD_PRELOAD={preload} PROGRAM, or link with -l{lib}")
}

/// Sampled events per op and size kind, as means per operation of the counted events.
fn event_rows(e: &profcc_schema::allocator::Events, d: Option<&Description>) -> AllocEvents {
    let idx: Vec<usize> = e
        .counted
        .iter()
        .filter_map(|n| profcc_schema::allocator::EVENTS.iter().position(|x| x == n))
        .collect();
    let mut rows: BTreeMap<(String, &str), (u64, Vec<u64>)> = BTreeMap::new();
    for c in &e.cells {
        let k = if c.lo == 0 && c.hi == 0 {
            "unknown"
        } else {
            kind(d, c.lo)
        };
        let r = rows
            .entry((c.op.clone(), k))
            .or_insert_with(|| (0, vec![0; idx.len()]));
        r.0 += c.samples;
        for (sum, &i) in r.1.iter_mut().zip(&idx) {
            *sum += c.values.get(i).copied().unwrap_or(0);
        }
    }
    AllocEvents {
        mode: e.mode.clone(),
        why: e.why.clone(),
        period: e.period,
        counted: e.counted.clone(),
        rows: rows
            .into_iter()
            .map(|((op, k), (samples, sums))| AllocEventRow {
                op,
                size_kind: k.into(),
                samples,
                per_op: sums
                    .iter()
                    .map(|&v| v as f64 / samples.max(1) as f64)
                    .collect(),
            })
            .collect(),
    }
}

/// The lines the allocator shared between threads, by allocation site, joined with the
/// sharing analysis's invalidations on the same lines when it ran.
fn induced_sharing(
    m: &Merged,
    i: usize,
    s: &profcc_schema::allocator::InducedSharing,
    shipped: &[(&str, Description)],
    opts: &Options,
) -> AllocInducedSharing {
    let p = &m.inputs[i].profile;
    let inval: Option<std::collections::HashMap<u64, u64>> = p
        .sharing
        .as_ref()
        .map(|sh| sh.lines.iter().map(|l| (l.addr, l.invalidations)).collect());
    let of = |addr: u64| inval.as_ref().map(|t| t.get(&addr).copied().unwrap_or(0));
    let mut by_site: BTreeMap<String, AllocInducedSite> = BTreeMap::new();
    for l in &s.lines {
        let stack = m.stack(i, l.alloc_stack);
        let name = user_frame(&stack)
            .or(stack.first())
            .map(|f| f.short())
            .unwrap_or_else(|| "?".into());
        let e = by_site.entry(name.clone()).or_insert(AllocInducedSite {
            site: name,
            active: 0,
            passive: 0,
            invalidations: inval.as_ref().map(|_| 0),
        });
        if l.passive {
            e.passive += 1;
        } else {
            e.active += 1;
        }
        if let (Some(t), Some(n)) = (&mut e.invalidations, of(l.addr)) {
            *t += n;
        }
    }
    let mut sites: Vec<AllocInducedSite> = by_site.into_values().collect();
    sites.sort_by_key(|x| std::cmp::Reverse((x.active + x.passive, x.invalidations)));
    sites.truncate(opts.limit(sites.len()));
    let contended_lines = inval.as_ref().map(|_| {
        s.lines
            .iter()
            .filter(|l| of(l.addr).unwrap_or(0) > 0)
            .count() as u64
    });
    let invalidations = inval
        .as_ref()
        .map(|_| s.lines.iter().map(|l| of(l.addr).unwrap_or(0)).sum());
    let owner_returning = shipped
        .iter()
        .find(|(_, d)| d.name == "mimalloc")
        .map(|(_, d)| format!(" ({})", how_to_use(d)))
        .unwrap_or_default();
    let mut advice = Vec::new();
    if s.active_lines > 0 {
        advice.push(format!(
            "the allocator put objects of different threads next to each other on {} cache lines: allocate objects that threads write on their own lines (size and alignment rounded to 64 bytes, aligned_alloc(64, ...)) or use an allocator with per-thread heaps (jemalloc, tcmalloc, mimalloc); under glibc a higher glibc.malloc.arena_max keeps threads in separate arenas",
            s.active_lines
        ));
    }
    if s.passive_lines > 0 {
        advice.push(format!(
            "{} cache lines got back a block that a thread freed for another thread, next to that thread's live objects: free objects in the thread that allocated them, or use an allocator that returns a remote free to its owner's page, as mimalloc and oneTBB's do{owner_returning}",
            s.passive_lines
        ));
    }
    AllocInducedSharing {
        active_lines: s.active_lines,
        passive_lines: s.passive_lines,
        untracked_lines: s.untracked_lines,
        listed: s.lines.len() as u64,
        max_listed: s.max_listed,
        contended_lines,
        invalidations,
        sites,
        advice: (!advice.is_empty()).then(|| advice.join("; ")),
    }
}

/// Where a mutex with no data symbol lives.
/// Live requested bytes over the bytes of the `n` units (lines or pages) that hold them
/// (docs/allocators.md, "Utilisation"; None: not measured or nothing live).
pub fn utilisation(requested: u64, n: Option<u64>, unit: u64) -> Option<f64> {
    n.filter(|&n| n > 0)
        .map(|n| requested as f64 / (n * unit) as f64)
}

pub const UNNAMED_LOCK: &str = "no symbol (heap, anonymous memory or a stripped library)";

/// Each mutex of the profile, the most contended first (waits and busy trylocks, then wait
/// time, then acquisitions).
fn lock_rows(
    m: &Merged,
    input: usize,
    a: &profcc_schema::allocator::Allocator,
    ns: &dyn Fn(u64) -> f64,
) -> Vec<AllocLock> {
    let mut rows: Vec<AllocLock> = a
        .locks
        .iter()
        .map(|l| {
            let ch = |n: &str| {
                l.channels
                    .iter()
                    .find(|c| c.channel == n)
                    .map_or((0, 0), |c| (c.count, c.cycles))
            };
            let (now, wait, tried, busy, hold) = (
                ch("mutex"),
                ch("mutex_wait"),
                ch("mutex_try"),
                ch("mutex_busy"),
                ch("mutex_hold"),
            );
            // The profile's modules span only their code: a mutex is named through the
            // symboliser's data symbols, or not at all.
            let place = match m.global(input, l.addr) {
                Some(g) => {
                    let file = g.module.rsplit('/').next().unwrap_or(&g.module);
                    format!("{}+{} ({file})", g.name, l.addr - g.start)
                }
                None => UNNAMED_LOCK.to_string(),
            };
            AllocLock {
                addr: l.addr,
                place,
                taken: now.0 + wait.0 + tried.0,
                waited: wait.0,
                wait_ns: ns(wait.1),
                busy: busy.0,
                held: hold.0,
                hold_ns: ns(hold.1),
            }
        })
        .collect();
    rows.sort_by(|x, y| {
        (y.waited + y.busy)
            .cmp(&(x.waited + x.busy))
            .then(y.wait_ns.total_cmp(&x.wait_ns))
            .then(y.taken.cmp(&x.taken))
            .then(x.addr.cmp(&y.addr))
    });
    rows
}

pub fn build(m: &Merged, opts: &Options) -> Option<AllocatorAnalysis> {
    let mut inputs = Vec::new();
    let shipped = probe::shipped();
    let mut probed = BTreeMap::new();
    for (i, input) in m.inputs.iter().enumerate() {
        let p = &input.profile;
        let Some(a) = p.allocator_ops.as_ref() else {
            continue;
        };
        let hz = if a.tsc_hz > 0.0 { a.tsc_hz } else { 1e9 };
        let ns_of = |c: f64| c * 1e9 / hz;
        let ns = |c: u64| ns_of(c as f64);
        let ident = probe::identify_by_symbols(&p.allocator);
        let (name, version) = match &ident {
            Some(i) => (i.name.clone(), i.version.clone()),
            None => ("unknown".to_string(), None),
        };
        let (d, source) = description(p, a, &name, version.as_deref(), opts, &mut probed);
        let shown = match (&d, &version) {
            (Some(d), _) if a.description.is_some() => {
                format!("{} {}", d.name, d.version.clone().unwrap_or_default())
            }
            (_, Some(v)) => format!("{name} {v}"),
            _ => name.clone(),
        };
        let mut approx = false;
        // Per row: calls, calls timed, the timed cells' estimated ticks and their calls.
        let mut rows: BTreeMap<(String, &str, String, String), (u64, u64, f64, u64)> =
            BTreeMap::new();
        for c in &a.ops {
            let k = if c.lo == 0 && c.hi == 0 {
                "unknown"
            } else {
                let k = kind(d.as_ref(), c.lo);
                if c.hi != u64::MAX && kind(d.as_ref(), c.hi - 1) != k {
                    approx = true;
                }
                k
            };
            let e = rows
                .entry((c.op.clone(), k, c.reuse.clone(), c.phase.clone()))
                .or_default();
            e.0 += c.count;
            e.1 += c.timed;
            if c.timed > 0 {
                e.2 += cell_cycles(c);
                e.3 += c.count;
            }
        }
        let ops: Vec<AllocOpRow> = rows
            .into_iter()
            .map(
                |((op, k, reuse, phase), (count, timed, cycles, timed_cells))| {
                    let mean_ns = ns_of(cycles) / timed_cells.max(1) as f64;
                    AllocOpRow {
                        op,
                        size_kind: k.into(),
                        reuse,
                        phase,
                        count,
                        timed,
                        mean_ns,
                        total_ns: mean_ns * count as f64,
                    }
                },
            )
            .collect();
        let measured_ns: f64 = ops.iter().map(|r| r.total_ns).sum();
        // The allocator's time cannot exceed the threads' CPU time: capped there (what is
        // above it was time the timed calls spent off the CPU).
        let total_ns = match a.cpu_ns {
            Some(c) => measured_ns.min(c as f64),
            None => measured_ns,
        };
        let (basis_ns, share_of) = profcc_analysis::allocator::share_basis(a.cpu_ns, p.duration_ns);
        // This machine's reference costs where `profcc detect-allocator --bench` kept them,
        // else the shipped descriptions' (another machine's).
        let (refs, costs) = reference_costs(&shipped);
        // Prediction: each operation at a reference allocator's cost for its size, reuse
        // and phase. A free of unknown size (an object sampling did not record) frees one of
        // the program's allocations: priced at their sizes, in their proportions
        // (`unknown_size_mix`).
        let mix = unknown_size_mix(&a.ops);
        let price = |r: &Description| -> Option<f64> {
            let mut sum = 0.0;
            for c in &a.ops {
                let cost = if c.lo == 0 && c.hi == 0 {
                    let mut cost = 0.0;
                    for &(size, share) in &mix {
                        cost += share * probe::reference_ns(r, &c.op, size, &c.reuse, &c.phase)?;
                    }
                    cost
                } else {
                    probe::reference_ns(r, &c.op, bucket_size(c.lo, c.hi), &c.reuse, &c.phase)?
                };
                sum += c.count as f64 * cost;
            }
            Some(sum)
        };
        let duration_ns = p.duration_ns;
        let in_use = |r: &Description| r.name == name;
        let self_check_ns = refs
            .iter()
            .find(|(_, r)| in_use(r))
            .and_then(|(_, r)| price(r));
        // Each alternative at its reference costs, scaled into this run's terms by the in-use
        // allocator's measured time over its own reference costs (`scaled_prediction`);
        // none without that check.
        let mut predictions: Vec<AllocPrediction> = refs
            .iter()
            .filter(|(_, r)| !in_use(r))
            .filter_map(|(_, r)| {
                let predicted_ns = profcc_analysis::allocator::scaled_prediction(
                    price(r)?,
                    self_check_ns?,
                    total_ns,
                );
                let change_ns = predicted_ns - total_ns;
                Some(AllocPrediction {
                    allocator: format!("{} {}", r.name, r.version.clone().unwrap_or_default())
                        .trim()
                        .to_string(),
                    predicted_ns,
                    change_ns,
                    change_of_run: change_ns / basis_ns.max(1) as f64,
                    how: how_to_use(r),
                })
            })
            .collect();
        predictions.sort_by(|x, y| x.change_ns.total_cmp(&y.change_ns));
        // The allocator analysis's rule and words (`profcc_analysis::allocator`): advice only
        // when the in-use allocator's own reference costs describe this run.
        let advice = predictions.first().and_then(|best| {
            profcc_analysis::allocator::switch_finding(
                &name,
                &best.allocator,
                best.predicted_ns,
                total_ns,
                self_check_ns,
                basis_ns,
                share_of,
                &best.how,
            )
            .map(|f| f.fix)
        });
        // Some alternative prices these operations: then no advice needs its reason.
        let priced = refs.iter().any(|(_, r)| !in_use(r) && price(r).is_some());
        let no_advice = if !priced {
            None
        } else {
            profcc_analysis::allocator::no_switch_reason(&name, self_check_ns, total_ns)
        };
        // Predictions from reference costs that do not describe this run would point
        // anywhere: none are given, the reason is.
        if no_advice.is_some() {
            predictions.clear();
        }
        let overhead = a
            .overhead
            .iter()
            // No peak row when live requested bytes never reached the first step.
            .flat_map(|o| {
                let peak = o.peak.as_ref().map(|u| ("peak", u));
                peak.into_iter().chain([("exit", &o.exit)])
            })
            .map(|(moment, u)| {
                let heap_rss = u.rss.saturating_sub(u.rss_at_start);
                AllocOverhead {
                    moment: moment.into(),
                    requested: u.requested,
                    usable: u.usable,
                    internal_fragmentation: u.usable.saturating_sub(u.requested),
                    blowup: u.cached_free,
                    heap_rss,
                    external_and_metadata: heap_rss.saturating_sub(u.usable + u.cached_free),
                    lines: u.lines,
                    pages: u.pages,
                    line_utilisation: utilisation(u.requested, u.lines, LINE),
                    page_utilisation: utilisation(u.requested, u.pages, PAGE),
                    touched: u.touched,
                    untouched: u.touched.map(|t| heap_rss.saturating_sub(t)),
                }
            })
            .collect();
        let mut locks = lock_rows(m, i, a, &ns);
        let locks_total = locks.len();
        locks.truncate(opts.limit(locks.len()));
        inputs.push(AllocatorInput {
            locks,
            locks_total,
            locks_untracked: a.locks_untracked,
            reuse_estimated: a.reuse_estimated,
            measured_ns,
            capped: total_ns < measured_ns,
            cpu_ns: a.cpu_ns,
            share_of: share_of.into(),
            interrupted: a.interrupted,
            bracket_ns: ns(a.bracket_ticks),
            costs,
            no_advice,
            overhead,
            input: i,
            allocator: shown,
            description: source,
            kinds_approximate: approx,
            ops,
            total_ns,
            duration_ns,
            first_calls: a.first_calls,
            channels: channel_rows(a, d.as_ref(), &ns),
            predictions,
            self_check_ns,
            advice,
            events: a.events.as_ref().map(|e| event_rows(e, d.as_ref())),
            induced_sharing: a
                .induced_sharing
                .as_ref()
                .map(|s| induced_sharing(m, i, s, &shipped, opts)),
        });
    }
    if inputs.is_empty() {
        return None;
    }
    let total: f64 = m.alloc_sites.iter().map(|s| s.allocator_ns).sum();
    let mut sites: Vec<AllocSiteCost> = m
        .alloc_sites
        .iter()
        .filter(|s| s.allocator_ns > 0.0)
        .map(|s| {
            let rest = &s.stack[s.wrapper_frames.min(s.stack.len())..];
            let site = user_frame(rest)
                .or(rest.first())
                .map(|f| f.short())
                .unwrap_or_else(|| "?".into());
            AllocSiteCost {
                site,
                count: s.count,
                allocator_ns: s.allocator_ns,
                share: s.allocator_ns / total.max(1e-9),
            }
        })
        .collect();
    sites.sort_by(|x, y| y.allocator_ns.total_cmp(&x.allocator_ns));
    sites.truncate(opts.limit(sites.len()));
    Some(AllocatorAnalysis {
        inputs,
        top_sites: sites,
    })
}
