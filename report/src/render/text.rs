//! The text report: what a person reads in a terminal. One function per section, over the
//! model only.

use crate::fmt;
use crate::model::{
    AccessSites, AllocSites, Finding, Frame, Notes, Object, ObjectKind, Report, Sharing, Summary,
    Thread, Word,
};
use crate::symbolize::user_frame;

/// Text settings.
#[derive(Debug, Clone)]
pub struct TextOptions {
    /// Frames per call stack; 0 = all.
    pub stack_depth: usize,
}

impl Default for TextOptions {
    fn default() -> Self {
        TextOptions { stack_depth: 8 }
    }
}

/// The whole report as text, sections in model order.
pub fn render(r: &Report, opts: &TextOptions) -> String {
    let several_inputs = r.summary.inputs.len() > 1;
    let mut out = String::new();
    summary(&r.summary, r.access_sites.not_counted(), &mut out);
    if let Some(k) = &r.ranks {
        ranks(k, &mut out);
    }
    findings(&r.findings, several_inputs, &mut out);
    access_sites(&r.access_sites, &mut out);
    let sampled = r.summary.inputs.iter().any(|i| i.alloc_sampled());
    alloc_sites(&r.alloc_sites, opts.stack_depth, sampled, &mut out);
    if let Some(s) = &r.sharing {
        sharing(s, several_inputs, &mut out);
    }
    if let Some(n) = &r.numa {
        numa(n, several_inputs, &mut out);
    }
    if let Some(a) = &r.allocator {
        allocator_analysis(a, several_inputs, &mut out);
    }
    if let Some(g) = &r.regions {
        regions(g, several_inputs, &mut out);
    }
    threads(&r.threads, several_inputs, &mut out);
    notes(&r.notes, &mut out);
    out
}

/// Findings the text shows first (JSON and `findings.csv` carry all of them).
pub const TOP_FINDINGS: usize = 10;

/// The top findings of every analysis, in their one ranking. Of several profiles (ranks), a
/// finding with one key is listed once, as it is in the profile where it saves the most, with
/// the profiles that have it; JSON and `findings.csv` keep one finding per profile.
fn findings(v: &[profcc_analysis::findings::Finding], several_inputs: bool, out: &mut String) {
    if v.is_empty() {
        return;
    }
    let groups = crate::render::finding_groups(v, several_inputs);
    let mut more = if groups.len() > TOP_FINDINGS {
        format!(", the first {TOP_FINDINGS} of {}", groups.len())
    } else {
        String::new()
    };
    if groups.len() < v.len() {
        more.push_str(&format!(
            "; a finding several profiles have is listed once, {} in all",
            v.len()
        ));
    }
    out.push_str(&format!(
        "\nTop findings (every analysis, by estimated time saved, then confidence{more}; details in each analysis's section below)\n"
    ));
    for (n, g) in groups.iter().take(TOP_FINDINGS).enumerate() {
        let f = &v[g.head];
        let input = if several_inputs {
            format!("[{}] ", g.label)
        } else {
            String::new()
        };
        let at = if f.places.is_empty() {
            String::new()
        } else {
            format!(
                " at {}",
                f.places
                    .iter()
                    .take(3)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let in_which = if g.inputs.len() > 1 {
            format!(
                " in [{}], the most of the {} profiles with it",
                f.input,
                g.inputs.len()
            )
        } else {
            String::new()
        };
        out.push_str(&format!(
            " {:>2}. {input}{}: {}{at}\n    {}{in_which}\n",
            n + 1,
            f.analysis.as_str(),
            f.title,
            profcc_analysis::findings::impact_text(&f.impact)
        ));
        if !f.fix.is_empty() {
            out.push_str(&format!("    fix: {}\n", f.fix));
        }
        if !f.threshold.is_empty() {
            out.push_str(&format!("    crossed: {}\n", f.threshold));
        }
    }
}

/// `jemalloc 5.3.0 (/usr/lib/.../libjemalloc.so.2, symbol mallctl)`.
fn allocator(a: &crate::model::Allocator) -> String {
    format!(
        "{}{} ({}, {})",
        a.name,
        a.version
            .as_deref()
            .map(|v| format!(" {v}"))
            .unwrap_or_default(),
        a.object,
        a.identified_by
    )
}

fn summary(s: &Summary, not_counted: bool, out: &mut String) {
    let t = &s.totals;
    match s.inputs.as_slice() {
        [one] => {
            out.push_str(&format!(
                "profcc report: {} (pid {}{}), {}, {} thread{}, {}\n",
                one.exe,
                one.pid,
                if one.host.is_empty() {
                    String::new()
                } else {
                    format!(" on {}", one.host)
                },
                fmt::duration(one.duration_ns),
                one.threads,
                if one.threads == 1 { "" } else { "s" },
                written(&one.trigger),
            ));
            if one.argv.len() > 1 {
                out.push_str(&format!("  command: {}\n", one.argv.join(" ")));
            }
            if let Some(a) = &one.allocator {
                out.push_str(&format!("  allocator: {}\n", allocator(a)));
            }
        }
        many => {
            let pids: Vec<String> = many.iter().map(|i| i.pid.to_string()).collect();
            let mut exes: Vec<&str> = Vec::new();
            for i in many {
                if !exes.contains(&i.exe.as_str()) {
                    exes.push(&i.exe);
                }
            }
            out.push_str(&format!(
                "profcc report: {} profiles merged: {} (pids {}), {} threads in all\n",
                many.len(),
                exes.join(", "),
                pids.join(", "),
                t.threads,
            ));
            for (n, i) in many.iter().enumerate() {
                out.push_str(&format!(
                    "  [{n}] {}: pid {}{}, {}, {} threads, {} accesses, {}\n",
                    i.path,
                    i.pid,
                    if i.host.is_empty() {
                        String::new()
                    } else {
                        format!(" on {}", i.host)
                    },
                    fmt::duration(i.duration_ns),
                    i.threads,
                    fmt::count(i.accesses),
                    written(&i.trigger),
                ));
                if let Some(a) = &i.allocator {
                    out.push_str(&format!("      allocator: {}\n", allocator(a)));
                }
            }
        }
    }
    if not_counted {
        out.push_str(&format!("  accesses {NOT_COUNTED}\n"));
    } else {
        out.push_str(&format!(
            "  accesses {} (reads {} = {}, writes {} = {}){}\n",
            fmt::count(t.accesses),
            fmt::count(t.reads),
            fmt::bytes(t.bytes_read),
            fmt::count(t.writes),
            fmt::bytes(t.bytes_written),
            if t.unattributed > 0 {
                format!(", {} unattributed", fmt::count(t.unattributed))
            } else {
                String::new()
            },
        ));
    }
    out.push_str(&format!(
        "  allocations {} ({}), frees {}, peak live {}{}\n",
        fmt::count(t.allocations),
        fmt::bytes(t.bytes_allocated),
        fmt::count(t.frees),
        fmt::bytes(t.live_bytes_peak),
        if s.inputs.iter().any(|i| i.alloc_sampled()) {
            format!(" ({SAMPLED_ESTIMATES})")
        } else {
            String::new()
        },
    ));
    let several = s.inputs.len() > 1;
    for (n, i) in s.inputs.iter().enumerate() {
        if i.exit_summary.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "  exit summary{} (kept in the profile: the program's stderr was not a terminal):\n",
            if several {
                format!(" of [{n}]")
            } else {
                String::new()
            }
        ));
        for l in &i.exit_summary {
            out.push_str(&format!("    {l}\n"));
        }
    }
}

fn written(trigger: &str) -> String {
    match trigger {
        "exit" => "written at exit".into(),
        "signal" => "written on signal (the program was still running)".into(),
        "_exit" => "written at _exit".into(),
        "abort" => "written at abort".into(),
        "assert" => "written at a failed assert".into(),
        "" => "written at an unknown point".into(),
        other => format!("written on {other}"),
    }
}

/// What the text says of accesses when the build counted none (`PROFCC_INSTRUMENT=roi`,
/// `none`).
const NOT_COUNTED: &str = "not counted: the program was built with PROFCC_INSTRUMENT=roi or none (regions and allocations only; the default build counts every access)";

fn access_sites(a: &AccessSites, out: &mut String) {
    out.push('\n');
    if a.not_counted() {
        out.push_str(&format!("Access sites: {NOT_COUNTED}\n"));
        return;
    }
    if a.lines.is_empty() {
        out.push_str("Access sites: none recorded (was the program built with profcc?)\n");
        return;
    }
    out.push_str(&format!(
        "Top access sites by line ({} of {} lines, {} accesses in all)\n",
        a.lines.len(),
        a.lines_total,
        fmt::count(a.total_accesses)
    ));
    let places: Vec<String> = a
        .lines
        .iter()
        .map(|l| fmt::tail(&place(&l.file, l.line), 48))
        .collect();
    let pw = places
        .iter()
        .map(|p| p.chars().count())
        .max()
        .unwrap_or(5)
        .max(5);
    out.push_str(&format!(
        "  {:>3}  {:>13}  {:>6}  {:>13}  {:>13}  {:>10}  {:>4}  {:<pw$}  {}\n",
        "#", "accesses", "%", "reads", "writes", "bytes", "thr", "place", "function"
    ));
    for (l, place) in a.lines.iter().zip(&places) {
        let more = if l.functions.len() > 1 {
            format!(" (+{} more)", l.functions.len() - 1)
        } else {
            String::new()
        };
        let inl = match l.inlined_at.as_slice() {
            [] => String::new(),
            [one] => format!(", via inlined call at {one}"),
            many => format!(
                ", via inlined calls at {} and {} more",
                many[0],
                many.len() - 1
            ),
        };
        out.push_str(&format!(
            "  {:>3}  {:>13}  {:>6}  {:>13}  {:>13}  {:>10}  {:>4}  {:<pw$}  {}{}{}\n",
            l.rank,
            fmt::count(l.accesses),
            fmt::percent(l.percent),
            fmt::count(l.reads),
            fmt::count(l.writes),
            fmt::bytes(l.bytes),
            l.threads,
            place,
            l.function,
            more,
            inl,
        ));
    }
}

fn place(file: &str, line: u32) -> String {
    match (file, line) {
        ("", _) => "(no debug location)".into(),
        (f, 0) => f.into(),
        (f, l) => format!("{f}:{l}"),
    }
}

/// What the text adds to peaks under allocation sampling (`InputInfo::alloc_sampled`).
const SAMPLED_ESTIMATES: &str =
    "alloc_sample: peaks and lifetimes are estimates, counts and bytes exact";

/// `sampled`: some input sampled its allocations.
fn alloc_sites(a: &AllocSites, stack_depth: usize, sampled: bool, out: &mut String) {
    out.push('\n');
    if a.sites.is_empty() {
        out.push_str("Allocation sites: none recorded\n");
        return;
    }
    out.push_str(&format!(
        "Top allocation sites by bytes allocated ({} of {}{})\n",
        a.sites.len(),
        a.sites_total,
        if sampled {
            format!("; {SAMPLED_ESTIMATES}")
        } else {
            String::new()
        }
    ));
    for s in &a.sites {
        // Lifetimes: the mean in the thread's allocations and the temporary blocks.
        let life = match s.lifetime.as_ref().and_then(|l| Some((l, l.mean()?))) {
            Some((l, mean)) => format!(
                ", lifetime {mean:.1} allocs ({} temporary)",
                fmt::count(l.temporary)
            ),
            None => String::new(),
        };
        out.push_str(&format!(
            "  {:>3}  {}: {} calls, {} (largest {}), peak live {}, live at exit {} in {} objects, {} frees{life}, {} thread{}\n",
            s.rank,
            s.kind,
            fmt::count(s.count),
            fmt::bytes(s.bytes),
            fmt::bytes(s.max_size),
            fmt::bytes(s.live_bytes_peak),
            fmt::bytes(s.live_bytes_at_exit),
            fmt::count(s.live_objects_at_exit),
            fmt::count(s.frees),
            s.threads,
            if s.threads == 1 { "" } else { "s" },
        ));
        write_stack(out, &s.stack, stack_depth, "         ", s.wrapper_frames);
    }
}

/// Print a stack one frame a line, `depth` frames at most (0 = all); the first `wrappers`
/// frames are marked as allocation wrappers.
pub fn write_stack(out: &mut String, stack: &[Frame], depth: usize, indent: &str, wrappers: usize) {
    if stack.is_empty() {
        out.push_str(indent);
        out.push_str("(no call stack recorded)\n");
        return;
    }
    // Frames below `main` (libc's start-up code) say nothing; stop after it.
    let through_main = stack
        .iter()
        .position(|f| !f.inlined && f.function.as_deref() == Some("main"))
        .map_or(stack.len(), |i| i + 1);
    let stack = &stack[..through_main];
    let shown = if depth == 0 {
        stack.len()
    } else {
        stack.len().min(depth)
    };
    for (i, f) in stack[..shown].iter().enumerate() {
        out.push_str(indent);
        out.push_str(&f.describe());
        if i < wrappers {
            out.push_str("  [allocation wrapper]");
        }
        out.push('\n');
    }
    if shown < stack.len() {
        out.push_str(&format!(
            "{indent}... {} more frames (--stack-depth 0 shows all)\n",
            stack.len() - shown
        ));
    }
}

/// Events per sampled allocator operation.
fn events(e: &crate::model::AllocEvents, out: &mut String) {
    use crate::fmt::count;
    out.push_str(&format!(
        "  events per operation ({}, one timed operation in {} per thread sampled{}):\n",
        e.mode,
        e.period,
        e.why
            .as_deref()
            .map(|w| format!("; {w}"))
            .unwrap_or_default()
    ));
    if e.rows.is_empty() {
        return;
    }
    out.push_str(&format!("    {:<8} {:<8} {:>9}", "op", "kind", "samples"));
    for n in &e.counted {
        out.push_str(&format!(" {n:>13}"));
    }
    out.push('\n');
    for r in &e.rows {
        out.push_str(&format!(
            "    {:<8} {:<8} {:>9}",
            r.op,
            r.size_kind,
            count(r.samples)
        ));
        for v in &r.per_op {
            out.push_str(&format!(" {v:>13.2}"));
        }
        out.push('\n');
    }
}

/// Allocator-induced false sharing, under the allocator's input.
fn induced_sharing(s: &crate::model::AllocInducedSharing, out: &mut String) {
    use crate::fmt::count;
    if s.active_lines + s.passive_lines == 0 {
        out.push_str("  allocator-induced false sharing: none (no cache line came to hold live objects of two threads)\n");
        return;
    }
    out.push_str(&format!(
        "  allocator-induced false sharing: {} cache lines active (the allocator gave neighbouring blocks to different threads), {} passive (a thread got back a block it had freed for another thread, next to that thread's live objects){}\n",
        count(s.active_lines),
        count(s.passive_lines),
        if s.untracked_lines > 0 {
            format!("; {} lines not tracked (table full)", count(s.untracked_lines))
        } else {
            String::new()
        }
    ));
    if let (Some(l), Some(n)) = (s.contended_lines, s.invalidations) {
        out.push_str(&format!(
            "    the sharing analysis saw {} of the {} listed lines invalidated ({} invalidations)\n",
            count(l),
            count(s.listed),
            count(n)
        ));
    }
    for x in &s.sites {
        out.push_str(&format!(
            "    {}: {} active, {} passive{}\n",
            x.site,
            count(x.active),
            count(x.passive),
            x.invalidations
                .map(|n| format!(", {} invalidations", count(n)))
                .unwrap_or_default()
        ));
    }
    if s.listed < s.active_lines + s.passive_lines {
        out.push_str(&format!(
            "    (sites and invalidations over the first {} lines shared)\n",
            count(s.listed)
        ));
    }
    if let Some(a) = &s.advice {
        out.push_str(&format!("    advice: {a}\n"));
    }
}

/// The allocator analysis: operations by kind, channels, who pays, switching.
fn allocator_analysis(a: &crate::model::AllocatorAnalysis, several_inputs: bool, out: &mut String) {
    use crate::fmt::{count, duration};
    let ms = |ns: f64| duration(ns.max(0.0) as u64);
    for i in &a.inputs {
        out.push('\n');
        let of = if several_inputs {
            format!(" [input {}]", i.input)
        } else {
            String::new()
        };
        let n: u64 = i.ops.iter().map(|r| r.count).sum();
        out.push_str(&format!(
            "Allocator{of}: {} (size kinds: {}; docs/allocators.md)\n",
            i.allocator, i.description
        ));
        let timed: u64 = i.ops.iter().map(|r| r.timed).sum();
        let (basis_ns, _) = profcc_analysis::allocator::share_basis(i.cpu_ns, i.duration_ns);
        let share_of = if i.share_of.is_empty() {
            "the run's wall-clock time"
        } else {
            i.share_of.as_str()
        };
        out.push_str(&format!(
            "  {} operations spent {} in the allocator ({:.1}% of {share_of}, {}; the run took {} wall-clock; summed over threads, each thread's first call left out: {})\n",
            count(n),
            ms(i.total_ns),
            i.total_ns * 100.0 / basis_ns.max(1) as f64,
            duration(basis_ns),
            duration(i.duration_ns),
            i.first_calls
        ));
        if i.capped {
            out.push_str(&format!(
                "  capped at {share_of}: the timed calls' estimate was {} (time the timed calls spent off the CPU)\n",
                ms(i.measured_ns)
            ));
        }
        if i.interrupted > 0 || i.bracket_ns > 0.0 {
            out.push_str(&format!(
                "  timing: the empty bracket's {:.1} ns taken off every timed call; {} sampled timed calls left out as interrupted (over {} µs: preempted, or a page-fault storm)\n",
                i.bracket_ns,
                count(i.interrupted),
                profcc_schema::allocator::INTERRUPTED_FROM_NS / 1000
            ));
        }
        out.push_str(&format!(
            "  timed: {} of them (alloc_time: a sample of the requests under {}, every one from there up); a row's mean is its timed calls' mean, its total that mean times its count (-: no call of the row was timed, its time is left out)\n",
            count(timed),
            crate::fmt::bytes(profcc_schema::allocator::TIME_ALL_FROM)
        ));
        if i.kinds_approximate {
            out.push_str("  (a kind boundary of the description falls inside a size bucket: rows near it are filed by the bucket's lower end)\n");
        }
        if i.reuse_estimated > 0 {
            out.push_str(&format!(
                "  reuse estimated for {} calls: sampling's allocations that record nothing go straight to the allocator, their address unseen; they are split between new and reused as the calls of their row whose address was seen\n",
                count(i.reuse_estimated)
            ));
        }
        out.push_str(&format!(
            "  {:<8} {:<8} {:<7} {:<9} {:>12} {:>10} {:>10} {:>10}\n",
            "op", "kind", "reuse", "phase", "count", "timed", "mean ns", "total"
        ));
        let mut rows: Vec<_> = i.ops.iter().collect();
        rows.sort_by(|x, y| y.total_ns.total_cmp(&x.total_ns));
        for r in rows {
            out.push_str(&format!(
                "  {:<8} {:<8} {:<7} {:<9} {:>12} {:>10} {:>10} {:>10}\n",
                r.op,
                r.size_kind,
                r.reuse,
                r.phase,
                count(r.count),
                count(r.timed),
                if r.timed == 0 {
                    "-".into()
                } else if r.mean_ns < crate::model::TIMER_FLOOR_NS {
                    format!("< {}", crate::model::TIMER_FLOOR_NS)
                } else {
                    format!("{:.1}", r.mean_ns)
                },
                ms(r.total_ns)
            ));
        }
        for o in &i.overhead {
            out.push_str(&format!(
                "  memory at {}: {} requested, {} usable (internal fragmentation {}), blowup {}, heap RSS {} (external fragmentation, metadata and other memory {})\n",
                o.moment,
                crate::fmt::bytes(o.requested),
                crate::fmt::bytes(o.usable),
                crate::fmt::bytes(o.internal_fragmentation),
                crate::fmt::bytes(o.blowup),
                crate::fmt::bytes(o.heap_rss),
                crate::fmt::bytes(o.external_and_metadata)
            ));
            if let (Some(l), Some(p), Some(lu), Some(pu)) =
                (o.lines, o.pages, o.line_utilisation, o.page_utilisation)
            {
                out.push_str(&format!(
                    "    utilisation: live objects fill {} of the {} cache lines and {} of the {} pages they lie on (requested bytes / bytes of those lines, pages)\n",
                    crate::fmt::percent(100.0 * lu),
                    crate::fmt::count(l),
                    crate::fmt::percent(100.0 * pu),
                    crate::fmt::count(p)
                ));
            }
            if let (Some(t), Some(u)) = (o.touched, o.untouched) {
                out.push_str(&format!(
                    "    pages the program's code touched (access shadow): {}; resident but never touched by it: {} of the heap RSS (allocator metadata, memory the allocator wrote or zeroed itself, profcc's own tables)\n",
                    crate::fmt::bytes(t),
                    crate::fmt::bytes(u)
                ));
            }
        }
        let mut seen = Vec::new();
        let mut hidden: Vec<(String, Vec<String>)> = Vec::new();
        for c in &i.channels {
            if c.observable {
                let ops: Vec<String> = c
                    .by_op
                    .iter()
                    .map(|(op, n, _)| format!("{op} {}", count(*n)))
                    .collect();
                let what = if ops.is_empty() {
                    String::new()
                } else {
                    format!(" in {}", ops.join(", "))
                };
                seen.push(format!(
                    "{} {} ({}){what}",
                    c.channel,
                    count(c.count),
                    ms(c.total_ns)
                ));
            } else {
                let why = c.why_not.clone().unwrap_or_default();
                match hidden.iter_mut().find(|(w, _)| *w == why) {
                    Some((_, names)) => names.push(c.channel.clone()),
                    None => hidden.push((why, vec![c.channel.clone()])),
                }
            }
        }
        if !seen.is_empty() {
            out.push_str(&format!("  allocator's calls: {}\n", seen.join("; ")));
        }
        for (why, names) in &hidden {
            out.push_str(&format!(
                "  not observable with this allocator: {} ({why})\n",
                names.join(", ")
            ));
        }
        if !i.locks.is_empty() {
            out.push_str(&format!(
                "  the allocator's mutexes ({} of {}, the most contended first{}):\n",
                i.locks.len(),
                i.locks_total,
                if i.locks_untracked > 0 {
                    format!(
                        "; {} calls on mutexes not kept apart",
                        fmt::count(i.locks_untracked)
                    )
                } else {
                    String::new()
                }
            ));
            for l in &i.locks {
                let mut what = vec![format!("taken {}", fmt::count(l.taken))];
                if l.waited > 0 {
                    what.push(format!(
                        "waited for {} times ({})",
                        fmt::count(l.waited),
                        ms(l.wait_ns)
                    ));
                }
                if l.busy > 0 {
                    what.push(format!("found held by {} trylocks", fmt::count(l.busy)));
                }
                if l.held > 0 {
                    what.push(format!(
                        "held {:.0} ns on average",
                        l.hold_ns / l.held as f64
                    ));
                }
                out.push_str(&format!(
                    "    {:#x} {}: {}\n",
                    l.addr,
                    l.place,
                    what.join(", ")
                ));
            }
        }
        if !i.predictions.is_empty() {
            let p: Vec<String> = i
                .predictions
                .iter()
                .map(|p| {
                    format!(
                        "{} {}{} ({:+.1}% of {share_of})",
                        p.allocator,
                        if p.change_ns < 0.0 { "-" } else { "+" },
                        ms(p.change_ns.abs()),
                        p.change_of_run * 100.0
                    )
                })
                .collect();
            out.push_str(&format!(
                "  switching, at each allocator's reference costs scaled by the reference check: {}\n",
                p.join("; ")
            ));
        }
        if !i.costs.is_empty() {
            out.push_str(&format!("  reference costs: {}\n", i.costs));
        }
        if let Some(c) = i.self_check_ns {
            out.push_str(&format!(
                "  reference check: {}'s own reference costs give {} for these operations (measured {})\n",
                i.allocator,
                ms(c),
                ms(i.total_ns)
            ));
        }
        if let Some(adv) = &i.advice {
            out.push_str(&format!("  advice: {adv}\n"));
        }
        if let Some(why) = &i.no_advice {
            out.push_str(&format!("  {why}\n"));
        }
        if let Some(e) = &i.events {
            events(e, out);
        }
        match &i.induced_sharing {
            Some(s) => induced_sharing(s, out),
            None => out.push_str(
                "  memory split, utilisation and allocator-induced sharing: not measured (alloc_sample records only some objects, and their neighbours are unknown; run with alloc_sample=0 to measure them)\n",
            ),
        }
    }
    if !a.top_sites.is_empty() {
        out.push_str("  who pays (allocator time on each site's objects):\n");
        for s in &a.top_sites {
            out.push_str(&format!(
                "    {:>5.1}%  {}  ({} objects, {})\n",
                s.share * 100.0,
                s.site,
                count(s.count),
                ms(s.allocator_ns)
            ));
        }
    }
}

/// NUMA sections the text shows of many profiles (ranks): those with the most remote
/// accesses.
pub const MAX_NUMA_SECTIONS: usize = 8;

/// NUMA locality per thread, and the node x node matrix of the `emulate` model. Of more than
/// [`MAX_NUMA_SECTIONS`] profiles, those with the most remote accesses, in input order.
fn numa(n: &crate::model::Numa, several_inputs: bool, out: &mut String) {
    let mut shown: Vec<&crate::model::NumaInput> = n.inputs.iter().collect();
    if shown.len() > MAX_NUMA_SECTIONS {
        shown.sort_by_key(|i| (std::cmp::Reverse(i.remote), i.input));
        shown.truncate(MAX_NUMA_SECTIONS);
        shown.sort_by_key(|i| i.input);
        out.push_str(&format!(
            "\nNUMA locality of {} profiles: the {MAX_NUMA_SECTIONS} with the most remote accesses below; the Ranks table has every profile's remote accesses, the JSON every section\n",
            n.inputs.len()
        ));
    }
    for i in shown {
        out.push('\n');
        let model = match i.model.as_str() {
            "thread" => "thread: each thread its own node".to_string(),
            "emulate" => format!("emulate: {} nodes", i.nodes),
            "real" => format!(
                "real: {} node{} (getcpu, move_pages)",
                i.nodes,
                if i.nodes == 1 { "" } else { "s" }
            ),
            other => other.to_string(),
        };
        let of = if several_inputs {
            format!(" [input {}]", i.input)
        } else {
            String::new()
        };
        let all = i.local + i.remote;
        let pct = |a: u64, b: u64| {
            if b == 0 {
                0.0
            } else {
                a as f64 * 100.0 / b as f64
            }
        };
        let huge = if i.huge_pages > 0 {
            format!(
                " ({} in {} transparent huge page{}, one first touch each)",
                i.huge_pages * profcc_abi::HUGE_PAGE_PAGES,
                i.huge_pages,
                if i.huge_pages == 1 { "" } else { "s" }
            )
        } else {
            String::new()
        };
        out.push_str(&format!(
            "NUMA locality{of} (model {model}; docs/numa.md): {} of {} accesses remote ({:.1}%), {} pages first touched{huge}\n",
            i.remote,
            all,
            pct(i.remote, all),
            i.pages
        ));
        out.push_str(
            "  thread  node  local          remote         remote%  first touches  waits     start routine\n",
        );
        for t in i.threads.iter().take(MAX_THREAD_ROWS) {
            out.push_str(&format!(
                "  {:<6}  {:<4}  {:<13}  {:<13}  {:>6.1}%  {:<13}  {:<8}  {}\n",
                t.thread,
                t.node.map_or("-".to_string(), |x| x.to_string()),
                t.local,
                t.remote,
                pct(t.remote, t.local + t.remote),
                t.first_touches,
                t.waits.total(),
                t.routine.as_deref().unwrap_or("-")
            ));
        }
        if i.threads.len() > MAX_THREAD_ROWS {
            out.push_str(&format!(
                "  ... {} more threads (JSON and numa_threads.csv list every one)\n",
                i.threads.len() - MAX_THREAD_ROWS
            ));
        }
        for f in &i.first_touch {
            let who = f
                .thread
                .map_or("an unknown thread".to_string(), |t| format!("thread {t}"));
            let place = f.place.clone().unwrap_or_else(|| "an unknown place".into());
            let func = f
                .function
                .as_ref()
                .map(|x| format!(" in {x}"))
                .unwrap_or_default();
            let what = f
                .object
                .as_ref()
                .map(|x| format!(" ({x})"))
                .unwrap_or_default();
            out.push_str(&format!(
                "  first touch: {} page{} by {who} at {place}{func}{what}\n",
                f.pages,
                if f.pages == 1 { "" } else { "s" }
            ));
        }
        // The lines with remote accesses, at most MAX_SITE_LINES (JSON and numa_sites.csv
        // have every one up to --top).
        for x in i
            .sites
            .iter()
            .filter(|x| profcc_analysis::numa::significant(x.remote, x.accesses))
            .take(MAX_SITE_LINES)
        {
            let place = x.place.clone().unwrap_or_else(|| "other code".into());
            let func = x
                .function
                .as_ref()
                .map(|f| format!(" in {f}"))
                .unwrap_or_default();
            out.push_str(&format!(
                "  remote access at {place}{func}: {} of {} accesses remote ({:.1}%)\n",
                x.remote,
                x.accesses,
                pct(x.remote, x.accesses)
            ));
        }
        let below = |n: u64, what: &str, remote: u64| {
            format!(
                "  {n} more {what}{}, {remote} remote accesses ({:.1}% of the run's remote accesses) below significance (listed from {} remote accesses that are {:.0}% of its accesses)\n",
                if n == 1 { "" } else { "s" },
                pct(remote, i.remote),
                profcc_analysis::numa::SIGNIFICANT_REMOTE,
                profcc_analysis::numa::REMOTE_ADVICE_SHARE * 100.0,
            )
        };
        if i.below.places > 0 {
            out.push_str(&below(i.below.places, "place", i.below.places_remote));
        }
        if let Some(a) = &i.advice {
            out.push_str(&format!("  fix: {a}\n"));
        }
        // Objects with a fix (significant ones); the others are summed in one line.
        if i.objects.iter().any(|o| o.kind.is_some()) {
            out.push_str(&format!(
                "  objects by score = (remote x {} + remote invalidations) / ms ({} remote invalidations in all):\n",
                profcc_analysis::numa::REMOTE_MISS_RATE,
                i.remote_invalidations
            ));
        }
        for o in i.objects.iter().filter(|o| o.kind.is_some()) {
            let kind = o.kind.as_deref().unwrap_or_default();
            let size = if o.instances > 1 {
                format!("{} blocks, {} pages", o.instances, o.pages)
            } else {
                format!("{}, {} pages", crate::fmt::bytes(o.bytes), o.pages)
            };
            out.push_str(&format!(
                "  {kind}: {} ({size}): {} of {} accesses remote ({:.1}%), {} remote invalidations, score {:.1}/ms\n",
                o.object,
                o.remote,
                o.local + o.remote,
                pct(o.remote, o.local + o.remote),
                o.remote_invalidations,
                o.score
            ));
            if let Some(f) = &o.fix {
                out.push_str(&format!("    fix: {f}\n"));
            }
        }
        if i.below.objects > 0 {
            out.push_str(&below(i.below.objects, "object", i.below.objects_remote));
        }
        if !i.groups.is_empty() && i.groups.iter().any(|g| g.recommended != g.threads) {
            let parts: Vec<String> = i
                .groups
                .iter()
                .map(|g| {
                    format!(
                        "{} ({} threads, overhead {:.0}, recommended {})",
                        g.routine, g.threads, g.overhead, g.recommended
                    )
                })
                .collect();
            out.push_str(&format!(
                "  imbalance: thread groups by start routine, overhead = local + remote x {}: {}: give each group threads in proportion to its overhead\n",
                profcc_analysis::numa::REMOTE_LATENCY,
                parts.join("; ")
            ));
        }
        if i.model == "emulate" || i.model == "real" {
            out.push_str(&format!(
                "  unpinned (NUMAPROF): {:.1}% of accesses by threads not bound to one node's CPUs, {:.1}% to pages no policy bound to a node, {:.1}% both\n",
                pct(i.unpinned_thread, all),
                pct(i.unpinned_page, all),
                pct(i.unpinned_both, all)
            ));
        }
        if let Some(m) = &i.migration {
            out.push_str(&format!("  migration risk: {m}\n"));
        }
        if !i.plan.is_empty() {
            let parts: Vec<String> = i
                .plan
                .iter()
                .map(|c| {
                    let ids: Vec<String> = c.threads.iter().map(|t| t.to_string()).collect();
                    let cpus = if c.cpu_list.is_empty() {
                        format!("{}-{}", c.first_cpu, c.first_cpu + c.cpus.max(1) - 1)
                    } else {
                        c.cpu_list.clone()
                    };
                    format!("node {} (CPUs {cpus}): threads {}", c.node, ids.join(", "))
                })
                .collect();
            let basis = if i.plan_basis.is_empty() {
                format!("{} nodes", i.plan.len())
            } else {
                i.plan_basis.clone()
            };
            out.push_str(&format!(
                "  binding: closest threads together (NumaPerf's plan for {basis}; docs/numa.md): {}\n",
                parts.join("; ")
            ));
            for l in &i.plan_lines {
                out.push_str(&format!("    {l}\n"));
            }
        }
        if !i.node_matrix.is_empty() {
            out.push_str("  accesses by the thread's node (rows) and the page's node (columns):\n");
            for (from, row) in i.node_matrix.iter().enumerate() {
                let cells: Vec<String> = row.iter().map(|c| format!("{c:>12}")).collect();
                out.push_str(&format!("  node {from:<3}{}\n", cells.join("")));
            }
        }
    }
}

fn sharing(sh: &Sharing, several_inputs: bool, out: &mut String) {
    let s = &sh.settings;
    out.push('\n');
    if sh.findings.is_empty() && sh.below_threshold.is_empty() {
        out.push_str(&format!(
            "Cache-line sharing: none: no cache line had two threads on record, one of them writing, while both lived ({} lines tracked per byte, docs/model.md)\n",
            sh.lines_tracked
        ));
        return;
    }
    let shown = if sh.findings.len() < sh.findings_total {
        format!(", {} of {} findings", sh.findings.len(), sh.findings_total)
    } else {
        String::new()
    };
    out.push_str(&format!(
        "Cache-line sharing (model: each thread its own core; gains predicted for the threads on their own cores from their share of accesses on the lines and this machine's slowdown for what they do to them, beside what this run paid, docs/model.md{shown})\n"
    ));
    if s.sample > 1 {
        out.push_str(&format!(
            "  one access in {} per thread to a tracked line was analysed; counts are estimates\n",
            s.sample
        ));
    }
    if sh.dropped_lines > 0 {
        out.push_str(&format!(
            "  {} more contended lines were not tracked: the table of {} lines was full (raise fs_max_lines)\n",
            fmt::count(sh.dropped_lines),
            s.max_lines
        ));
    }
    for f in &sh.findings {
        finding(f, several_inputs, out);
    }
    for b in &sh.below_threshold {
        out.push_str(&format!(
            " {}\n",
            profcc_analysis::sharing::below_threshold_line(b)
        ));
    }
}

fn finding(f: &Finding, several_inputs: bool, out: &mut String) {
    let input = if several_inputs {
        format!("[{}] ", f.input)
    } else {
        String::new()
    };
    let mut kind = f.kind_text.clone();
    if f.allocator_induced {
        kind.push_str(" (allocator-induced)");
    }
    let conf = f.confidence.as_str();
    match &f.latent {
        Some(l) => {
            let mut why = Vec::new();
            if l.prefetch_pair {
                why.push("adjacent-line prefetch pair".to_string());
            }
            if let Some(d) = l.shift {
                why.push(format!("{d}-byte shift of the data would share a line"));
            }
            out.push_str(&format!(
                " #{} {input}{kind} ({}): no invalidations yet, about {} writes, {}; lines {} (finding confidence {conf})\n",
                f.rank,
                why.join("; "),
                fmt::short(f.writes),
                threads_text(&f.threads),
                {
                    let mut l: Vec<String> =
                        f.lines.iter().take(NAMED).map(|l| format!("{l:#x}")).collect();
                    if f.lines.len() > NAMED {
                        l.push(format!("+{} more", f.lines.len() - NAMED));
                    }
                    l.join(", ")
                },
            ));
        }
        None => {
            let gain = if profcc_analysis::sharing::gain_shown(f.predicted_speedup) {
                format!("up to {:.1}x faster", f.predicted_speedup)
            } else if f.predicted_saving_ns > 0 {
                format!(
                    "saves up to {} ({:.2}x)",
                    fmt::duration(f.predicted_saving_ns),
                    f.predicted_speedup
                )
            } else {
                "little gain expected".into()
            };
            let others = if f.more_threads { " and others" } else { "" };
            out.push_str(&format!(
                " #{} {input}{kind}: {} invalidations, {}{others}; fixing it: {gain} (finding confidence {conf})\n",
                f.rank,
                fmt::short(f.invalidations),
                threads_text(&f.threads),
            ));
            out.push_str(&format!(
                "    predicted: {} (prediction confidence {})\n",
                f.prediction.basis,
                f.prediction.confidence.as_str()
            ));
        }
    }
    match f.objects.as_slice() {
        [] => {}
        [one] => out.push_str(&format!("    object: {}\n", object_text(one))),
        many => {
            // A finding merged over the blocks of one allocation site has one object per
            // block: the first few name the site.
            const OBJECTS: usize = 3;
            for (i, o) in many.iter().take(OBJECTS).enumerate() {
                out.push_str(&format!("    object [{}]: {}\n", i + 1, object_text(o)));
            }
            if many.len() > OBJECTS {
                out.push_str(&format!("    +{} more objects\n", many.len() - OBJECTS));
            }
        }
    }
    const WORDS: usize = 8;
    if !f.words.is_empty() {
        let mut w: Vec<String> = f
            .words
            .iter()
            .take(WORDS)
            .map(|w| word_text(w, &f.objects))
            .collect();
        if f.words.len() > WORDS {
            w.push(format!("+{} more", f.words.len() - WORDS));
        }
        out.push_str(&format!("    words: {}\n", w.join("; ")));
    }
    const PLACES: usize = 4;
    if !f.places.is_empty() {
        let mut p: Vec<String> = f
            .places
            .iter()
            .take(PLACES)
            .map(|p| {
                let at = if p.line > 0 {
                    format!("{}:{}", p.file, p.line)
                } else if p.file.is_empty() {
                    "(no debug location)".into()
                } else {
                    p.file.clone()
                };
                format!(
                    "{at} in {} ({})",
                    p.function,
                    counts_text(p.reads, p.writes)
                )
            })
            .collect();
        if f.places.len() > PLACES {
            p.push(format!("+{} more", f.places.len() - PLACES));
        }
        out.push_str(&format!("    at: {}\n", p.join(", ")));
    }
    out.push_str(&format!("    fix: {}\n", f.fix));
}

/// At most `LISTED_THREADS` ids, then how many more (a finding of kmeans names 393 threads).
fn ids(v: &[u32]) -> String {
    profcc_analysis::sharing::threads_list(v)
}

/// At most this many threads or lines are named in a finding's first line; a finding merged
/// over many blocks or threads (kmeans: 240 threads) says how many more (JSON has all).
const NAMED: usize = 8;

fn threads_text(v: &[u32]) -> String {
    let more = if v.len() > NAMED {
        format!(" (+{} more)", v.len() - NAMED)
    } else {
        String::new()
    };
    format!(
        "thread{} {}{more}",
        if v.len() == 1 { "" } else { "s" },
        ids(&v[..v.len().min(NAMED)])
    )
}

pub(crate) fn object_text(o: &Object) -> String {
    match o.kind {
        ObjectKind::Heap => {
            let mut s = format!("heap {}", fmt::bytes(o.size));
            if let Some(k) = &o.alloc_kind {
                s.push_str(&format!(" from {k}"));
            }
            // The user's line first: "from calloc at main.c:88 in main, through mem_calloc
            // (memory.c:12)".
            match &o.alloc_site {
                Some(site) => s.push_str(&format!(" at {site}")),
                None if o.alloc_stack.is_empty() => s.push_str(" (no allocation stack)"),
                None => {}
            }
            if let Some(f) = &o.function {
                s.push_str(&format!(" in {f}"));
            }
            if !o.alloc_wrappers.is_empty() {
                s.push_str(&format!(", through {}", o.alloc_wrappers.join(" in ")));
            }
            if let Some(t) = o.alloc_thread {
                s.push_str(&format!(" (thread {t})"));
            }
            s
        }
        ObjectKind::Stack => {
            let mut s = match o.stack_thread {
                Some(t) => format!("stack of thread {t}"),
                None => "a thread's stack".into(),
            };
            if let Some(f) = &o.function {
                s.push_str(&format!(", written by {f}"));
            }
            s
        }
        ObjectKind::Global => match &o.name {
            Some(n) => format!("global `{n}` ({})", fmt::bytes(o.size)),
            None => format!(
                "static data at {:#x} (no symbol holds it: thread-local, an anonymous mapping, or a stripped binary)",
                o.start
            ),
        },
    }
}

pub(crate) fn word_text(w: &Word, objects: &[Object]) -> String {
    let label = match (&w.field, w.object, w.object_offset) {
        (Some(f), _, _) => f.clone(),
        (None, Some(o), Some(off)) if objects[o].kind != ObjectKind::Stack => {
            let name = match (&objects[o].name, objects.len()) {
                (Some(n), _) => n.clone(),
                (None, 1) => String::new(),
                (None, _) => format!("[{}]", o + 1),
            };
            format!("{name}+{off}..{}", off + w.size.max(1) as u64)
        }
        _ => format!(
            "{:#x}+{}..{}",
            w.line,
            w.line_offset,
            w.line_offset + w.size.max(1)
        ),
    };
    let only_readers: Vec<u32> = w
        .readers
        .iter()
        .copied()
        .filter(|r| !w.writers.contains(r))
        .collect();
    let mut who = Vec::new();
    if !w.writers.is_empty() {
        who.push(format!("written by {}", threads_text(&w.writers)));
    }
    if !only_readers.is_empty() {
        who.push(format!("read by {}", threads_text(&only_readers)));
    }
    format!("{label} {}", who.join(", "))
}

fn counts_text(reads: u64, writes: u64) -> String {
    match (reads, writes) {
        (0, w) => format!("{} writes", fmt::short(w)),
        (r, 0) => format!("{} reads", fmt::short(r)),
        (r, w) => format!("{} reads, {} writes", fmt::short(r), fmt::short(w)),
    }
}

/// Threads listed one a row; a program with more gets one row per creation place (the
/// JSON and CSV list every thread).
/// Most lines of the NUMA section's "remote access at" list.
pub const MAX_SITE_LINES: usize = 5;
pub const MAX_THREAD_ROWS: usize = 16;

/// Ranks listed in the text (JSON and `ranks.csv` carry every one).
pub const MAX_RANK_ROWS: usize = 32;

/// "rank 3", or "input 5 (no rank)" for a profile not started by an MPI launcher.
fn rank_name(rank: Option<u32>, input: usize) -> String {
    match rank {
        Some(r) => format!("rank {r}"),
        None => format!("input {input} (no rank)"),
    }
}

fn metric_value(metric: &str, v: f64) -> String {
    match metric {
        "bytes_allocated" | "peak_bytes" => fmt::bytes(v.round() as u64),
        "seconds" => format!("{v:.3} s"),
        "bytes" => fmt::bytes(v.round() as u64),
        _ => fmt::count(v.round() as u64),
    }
}

/// The Ranks table: a row per input, then per metric the heaviest rank and its imbalance.
fn ranks(k: &crate::model::Ranks, out: &mut String) {
    let heaviest = k.metrics.iter().find(|m| m.metric == "accesses");
    out.push_str(&format!("\nRanks ({} profiles", k.rows.len()));
    if let Some(h) = heaviest.filter(|h| h.spread.max > 0.0) {
        out.push_str(&format!(
            "; heaviest by accesses: {}, {} accesses, imbalance {:.2} (max/mean)",
            rank_name(h.spread.worst_rank, h.spread.worst_input),
            fmt::count(h.spread.max as u64),
            h.spread.imbalance
        ));
    }
    out.push_str(")\n");
    out.push_str(&format!(
        "  {:>5}  {:<16} {:>8}  {:>7}  {:>14}  {:>11}  {:>10}  {:>10}  {:>12}  {:>13}  {:>9}\n",
        "rank",
        "host",
        "pid",
        "threads",
        "accesses",
        "allocations",
        "allocated",
        "peak",
        "remote",
        "invalidations",
        "seconds"
    ));
    for row in k.rows.iter().take(MAX_RANK_ROWS) {
        out.push_str(&format!(
            "  {:>5}  {:<16} {:>8}  {:>7}  {:>14}  {:>11}  {:>10}  {:>10}  {:>12}  {:>13}  {:>9.3}\n",
            row.rank.map_or("-".to_string(), |r| r.to_string()),
            fmt::tail(&row.host, 16),
            row.pid,
            row.threads,
            fmt::count(row.accesses),
            fmt::count(row.allocations),
            fmt::bytes(row.bytes_allocated),
            fmt::bytes(row.peak_bytes),
            fmt::count(row.remote_accesses),
            fmt::count(row.invalidations),
            row.seconds
        ));
    }
    if k.rows.len() > MAX_RANK_ROWS {
        out.push_str(&format!(
            "  ... {} more ranks (JSON and ranks.csv list every one)\n",
            k.rows.len() - MAX_RANK_ROWS
        ));
    }
    out.push_str("  heaviest rank per metric (imbalance = max/mean, cv = std dev/mean):\n");
    for m in &k.metrics {
        let s = &m.spread;
        if s.max <= 0.0 {
            continue;
        }
        out.push_str(&format!(
            "    {:<16} {}: {} (mean {}, min {}), imbalance {:.2}, cv {:.2}\n",
            m.metric,
            rank_name(s.worst_rank, s.worst_input),
            metric_value(&m.metric, s.max),
            metric_value(&m.metric, s.mean),
            metric_value(&m.metric, s.min),
            s.imbalance,
            s.cv
        ));
    }
    let uneven: Vec<&crate::model::RankSpread> = ["finding", "object", "line"]
        .iter()
        .flat_map(|what| {
            k.spreads
                .iter()
                .filter(move |x| x.what == *what && x.metric != "allocations" && x.spread.max > 0.0)
                .take(MAX_SPREAD_ROWS)
        })
        .collect();
    if !uneven.is_empty() {
        out.push_str("  most uneven over the ranks (JSON and rank_spreads.csv list every finding, object and listed line):\n");
    }
    for x in uneven {
        let s = &x.spread;
        out.push_str(&format!(
            "    {} {}: {} holds {} of {} (in {} of {} ranks), imbalance {:.2}, cv {:.2}\n",
            x.what,
            fmt::tail(&x.key, 60),
            rank_name(s.worst_rank, s.worst_input),
            metric_value(&x.metric, s.max),
            metric_value(&x.metric, s.sum),
            s.present,
            s.of,
            s.imbalance,
            s.cv
        ));
    }
}

/// Findings, objects and lines the Ranks table lists as most uneven, of each.
pub const MAX_SPREAD_ROWS: usize = 5;

fn threads(threads: &[Thread], several_inputs: bool, out: &mut String) {
    out.push('\n');
    if threads.is_empty() {
        out.push_str("Threads: none recorded\n");
        return;
    }
    if threads.len() > MAX_THREAD_ROWS {
        return thread_groups(threads, several_inputs, out);
    }
    out.push_str(&format!("Threads ({})\n", threads.len()));
    let pid_col = pid_cell(several_inputs, "pid");
    out.push_str(&format!(
        "  {pid_col}{:>5}  {:>6}  {:>14}  {}\n",
        "id", "parent", "accesses", "created at"
    ));
    for t in threads {
        let pid = pid_cell(several_inputs, t.pid);
        let parent = t
            .parent
            .map(|p| p.to_string())
            .unwrap_or_else(|| "-".into());
        out.push_str(&format!(
            "  {pid}{:>5}  {:>6}  {:>14}  {}\n",
            t.id,
            parent,
            fmt::count(t.accesses),
            created_text(t)
        ));
    }
}

/// The pid column of the thread table: only when the report merges several processes.
fn pid_cell(several_inputs: bool, v: impl std::fmt::Display) -> String {
    if several_inputs {
        format!("{v:>8}  ")
    } else {
        String::new()
    }
}

fn created_text(t: &Thread) -> String {
    user_frame(&t.created_at)
        .map(Frame::describe)
        .unwrap_or_else(|| {
            if t.id == 0 {
                "(main thread)".into()
            } else {
                "-".into()
            }
        })
}

/// One row per (process, parent, creation place), in the order of their first thread.
fn thread_groups(threads: &[Thread], several_inputs: bool, out: &mut String) {
    let mut groups: Vec<((u32, Option<u32>, String), Vec<&Thread>)> = Vec::new();
    for t in threads {
        let key = (t.pid, t.parent, created_text(t));
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(t),
            None => groups.push((key, vec![t])),
        }
    }
    out.push_str(&format!(
        "Threads ({}, in {} groups by where they were created; JSON and CSV list each)\n",
        threads.len(),
        groups.len()
    ));
    let pid_col = pid_cell(several_inputs, "pid");
    out.push_str(&format!(
        "  {pid_col}{:>7}  {:<24}  {:>6}  {:>14}  {:>21}  {}\n",
        "threads", "ids", "parent", "accesses", "each (min-max)", "created at"
    ));
    for ((pid, parent, created), g) in &groups {
        let pid = pid_cell(several_inputs, pid);
        let ids: Vec<u32> = g.iter().map(|t| t.id).collect();
        let total: u64 = g.iter().map(|t| t.accesses).sum();
        let min = g.iter().map(|t| t.accesses).min().unwrap_or(0);
        let max = g.iter().map(|t| t.accesses).max().unwrap_or(0);
        out.push_str(&format!(
            "  {pid}{:>7}  {:<24}  {:>6}  {:>14}  {:>21}  {}\n",
            g.len(),
            id_ranges(&ids, 24),
            parent.map(|p| p.to_string()).unwrap_or_else(|| "-".into()),
            fmt::count(total),
            format!("{}-{}", fmt::short(min), fmt::short(max)),
            created
        ));
    }
}

/// Ascending ids as ranges (`1-2,5-6,9`), cut with `…` to at most `width` characters.
fn id_ranges(ids: &[u32], width: usize) -> String {
    let mut v = ids.to_vec();
    v.sort_unstable();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}-{}", v[i], v[j])
        } else {
            v[i].to_string()
        });
        i = j + 1;
    }
    let mut s = String::new();
    for (k, p) in parts.iter().enumerate() {
        let sep = if k == 0 { "" } else { "," };
        if s.chars().count() + sep.len() + p.len() + if k + 1 < parts.len() { 2 } else { 0 } > width
        {
            s.push_str(",…");
            break;
        }
        s.push_str(sep);
        s.push_str(p);
    }
    s
}

#[cfg(test)]
mod thread_table_tests {
    use super::*;

    #[test]
    fn id_ranges_join_runs_and_cut_long_lists() {
        assert_eq!(id_ranges(&[5, 1, 2, 3, 9], 24), "1-3,5,9");
        assert_eq!(id_ranges(&[0], 24), "0");
        let every_other: Vec<u32> = (1..400).step_by(2).collect();
        let s = id_ranges(&every_other, 24);
        assert!(s.starts_with("1,3,5,") && s.ends_with(",…"), "{s}");
        assert!(s.chars().count() <= 24, "{s}");
    }

    fn thread(id: u32, accesses: u64, line: Option<u32>) -> Thread {
        Thread {
            input: 0,
            pid: 7,
            id,
            parent: line.map(|_| 0),
            accesses,
            created_at: line
                .map(|l| Frame {
                    address: 0x1000 + l as u64,
                    module: Some("/p/km".into()),
                    offset: Some(l as u64),
                    function: Some("main".into()),
                    file: Some("/p/km.c".into()),
                    line: Some(l),
                    column: None,
                    inlined: false,
                })
                .into_iter()
                .collect(),
        }
    }

    #[test]
    fn many_threads_make_one_row_per_creation_place() {
        // kmeans' shape: rounds of workers created at two lines, alternating.
        let mut ts = vec![thread(0, 1_000, None)];
        for id in 1..=40u32 {
            let (line, acc) = if id % 2 == 1 {
                (311, 7_000 + id as u64)
            } else {
                (334, 1_100)
            };
            ts.push(thread(id, acc, Some(line)));
        }
        let mut out = String::new();
        threads(&ts, false, &mut out);
        let lines: Vec<&str> = out.lines().filter(|l| !l.is_empty()).collect();
        assert_eq!(lines.len(), 5, "{out}");
        assert!(lines[0].starts_with("Threads (41, in 3 groups"), "{out}");
        assert!(
            lines[2].contains("(main thread)") && lines[2].contains("1,000"),
            "{out}"
        );
        let odd = lines[3];
        assert!(odd.trim_start().starts_with("20  1,3,5,"), "{odd}");
        // 20 threads: 7,001 + 7,003 + ... + 7,039 accesses.
        let total: u64 = (1..=40u64).step_by(2).map(|i| 7_000 + i).sum();
        assert!(
            odd.contains(&fmt::count(total)) && odd.contains("km.c:311"),
            "{odd}"
        );
        assert!(
            lines[4].contains("22,000") && lines[4].contains("km.c:334"),
            "{}",
            lines[4]
        );
        // At the limit, one row each.
        let mut out = String::new();
        threads(&ts[..MAX_THREAD_ROWS], false, &mut out);
        assert_eq!(
            out.lines().filter(|l| !l.is_empty()).count(),
            MAX_THREAD_ROWS + 2,
            "{out}"
        );
    }
}

fn notes(n: &Notes, out: &mut String) {
    if n.notes.is_empty() && n.warnings.is_empty() {
        return;
    }
    out.push_str("\nNotes\n");
    for n in n.warnings.iter().chain(&n.notes) {
        out.push_str(&format!("  - {n}\n"));
    }
}

/// Regions of interest: one line per region and thread.
/// The regions' perf events: what could be counted and, per row that read them, each
/// event's mean per execution that read it.
fn region_events(
    g: &crate::model::Regions,
    e: &profcc_schema::regions::EventStatus,
    several_inputs: bool,
    out: &mut String,
) {
    use profcc_schema::regions::EVENTS;
    let what = if e.counted.is_empty() {
        "none".to_string()
    } else {
        e.counted.join(", ")
    };
    out.push_str(&format!(
        "  perf events ({}; roi_events={}: read around a region's first counted execution and those while they last {} us or more on average): {what}\n",
        e.mode, e.min_us, e.min_us
    ));
    if let Some(why) = &e.why {
        out.push_str(&format!("    {why}\n"));
    }
    let rows: Vec<_> = g.rows.iter().filter(|r| r.events.is_some()).collect();
    if rows.is_empty() || e.counted.is_empty() {
        return;
    }
    let line = |input: String, cells: [String; 7]| {
        let [region, thread, read, i, l1, llc, pf] = cells;
        format!(
            "    {input}{region:<24} {thread:>6} {read:>10} {i:>14} {l1:>14} {llc:>14} {pf:>12}"
        )
    };
    let head = [
        "region",
        "thread",
        "read on",
        "instructions",
        "L1D misses",
        "LLC misses",
        "page faults",
    ]
    .map(String::from);
    out.push_str(&line(
        if several_inputs {
            "input ".into()
        } else {
            String::new()
        },
        head,
    ));
    out.push_str("  (per execution)\n");
    for r in rows {
        let ev = r.events.as_ref().unwrap();
        let cell = |i: usize| {
            if !e.counted.iter().any(|c| c == EVENTS[i]) {
                return "n/a".to_string();
            }
            let v = ev.values.get(i).copied().unwrap_or(0) as f64 / ev.executions.max(1) as f64;
            if v >= 100.0 || v == 0.0 {
                format!("{v:.0}")
            } else {
                format!("{v:.2}")
            }
        };
        let input = if several_inputs {
            format!("{:<6}", r.input)
        } else {
            String::new()
        };
        out.push_str(&line(
            input,
            [
                r.region.clone(),
                r.thread.to_string(),
                crate::fmt::count(ev.executions),
                cell(0),
                cell(1),
                cell(2),
                cell(3),
            ],
        ));
        out.push('\n');
    }
}

/// A share of the machine's bandwidth as a percentage ("-": not measured).
fn share(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{:.1}%", 100.0 * x))
}

/// Each region's threads together against the machine's all-threads bandwidth, and what the
/// machine's bandwidth is (or that it was not measured, once).
fn region_totals(g: &crate::model::Regions, several_inputs: bool, out: &mut String) {
    use crate::fmt::duration;
    if !g.totals.is_empty() {
        out.push_str(&format!(
            "  all threads (bytes over the longest thread's time):\n  {}{:<24} {:>7} {:>12} {:>12} {:>8} {:>8}\n",
            if several_inputs { "input " } else { "" },
            "region",
            "threads",
            "moved",
            "time",
            "GB/s",
            "machine"
        ));
        for t in &g.totals {
            out.push_str(&format!(
                "  {}{:<24} {:>7} {:>12} {:>12} {:>8} {:>8}\n",
                if several_inputs {
                    format!("{:<6}", t.input)
                } else {
                    String::new()
                },
                t.region,
                t.threads,
                t.bytes.map_or("-".into(), crate::fmt::bytes),
                duration((t.seconds * 1e9).max(0.0) as u64),
                t.gbytes_per_s.map_or("-".into(), |g| format!("{g:.2}")),
                share(t.machine_share)
            ));
        }
    }
    let mut seen = Vec::new();
    for b in g.machine_bandwidth.iter().flatten() {
        if !seen.contains(b) {
            seen.push(*b);
            out.push_str(&format!(
                "  machine bandwidth (profcc calibrate, STREAM): 1 thread {:.2} GB/s, {} threads {:.2} GB/s; \"machine\" is a thread's GB/s against the first, a region's (all threads) against the second\n",
                b.single_gbps(),
                b.threads,
                b.all_gbps()
            ));
        }
    }
    if g.machine_bandwidth.iter().any(|b| b.is_none()) {
        out.push_str("  machine bandwidth not measured: run profcc calibrate (the program reads it when it writes its profile)\n");
    }
}

fn regions(g: &crate::model::Regions, several_inputs: bool, out: &mut String) {
    use crate::fmt::{count, duration};
    use profcc_schema::regions::{MAX_DEPTH, MAX_REGIONS};
    out.push_str("\nRegions of interest (PROFCC_ROI_BEGIN/END; docs/regions.md)\n");
    if g.rows.is_empty() {
        out.push_str("  none completed\n");
    } else {
        out.push_str(&format!(
            "  {}{:<24} {:>6} {:>12} {:>12} {:>12} {:>12} {:>12} {:>8} {:>6} {:>9} {:>8}\n",
            if several_inputs { "input " } else { "" },
            "region",
            "thread",
            "executions",
            "time",
            "mean",
            "read",
            "written",
            "GB/s",
            "CF",
            "GB/s x CF",
            "machine"
        ));
    }
    let ns = |s: f64| (s * 1e9).max(0.0) as u64;
    for r in &g.rows {
        let (read, written) = r.counts.as_ref().map_or(("-".into(), "-".into()), |c| {
            (
                crate::fmt::bytes(c.bytes_read()),
                crate::fmt::bytes(c.bytes_written()),
            )
        });
        out.push_str(&format!(
            "  {}{:<24} {:>6} {:>12} {:>12} {:>12} {:>12} {:>12} {:>8} {:>6} {:>9} {:>8}\n",
            if several_inputs {
                format!("{:<6}", r.input)
            } else {
                String::new()
            },
            r.region,
            r.thread,
            count(r.executions),
            duration(ns(r.seconds)),
            duration(ns(r.seconds) / r.executions.max(1)),
            read,
            written,
            r.gbytes_per_s.map_or("-".into(), |g| format!("{g:.2}")),
            r.correction_factor
                .map_or("-".into(), |f| format!("{f:.3}")),
            r.gbytes_per_s_corrected
                .map_or("-".into(), |g| format!("{g:.2}")),
            share(r.machine_share)
        ));
    }
    region_totals(g, several_inputs, out);
    if let Some(e) = &g.events {
        region_events(g, e, several_inputs, out);
    }
    if g.sample_period > 1 {
        let counted: u64 = g.rows.iter().filter_map(|r| r.counted_executions).sum();
        let all: u64 = g.rows.iter().map(|r| r.executions).sum();
        out.push_str(&format!(
            "  sampled (roi_sample={}): after its first {} executions in a thread, a region was counted and timed on one execution in {}; read, written and time are those executions' scaled back ({} of {} executions counted; executions are exact)\n",
            g.sample_period,
            g.sample_period,
            g.sample_period,
            count(counted),
            count(all)
        ));
        let calls: u64 = g.rows.iter().filter_map(|r| r.sampled_calls).sum();
        if calls > 0 {
            out.push_str(&format!(
                "  inside the counted executions, calls past each one's first {} were counted one in {} on average (at random, each weighing {}): {} such calls counted\n",
                g.sample_period,
                g.sample_period,
                g.sample_period,
                count(calls)
            ));
        }
    }
    let timed: u64 = g.rows.iter().filter_map(|r| r.time_samples).sum();
    if timed > 0 {
        let names: std::collections::BTreeSet<&str> = g
            .rows
            .iter()
            .filter(|r| r.time_samples.is_some())
            .map(|r| r.region.as_str())
            .collect();
        out.push_str(&format!(
            "  time sampled (roi_time={}): executions shorter than {} us on average, past a region's first {} in a thread, were timed one in {} at random, each weighing {} ({} timed so; regions {}); roi_time=0 times every execution\n",
            g.time_min_us,
            g.time_min_us,
            profcc_schema::regions::TIME_EXACT_FIRST,
            profcc_schema::regions::TIME_SAMPLE,
            profcc_schema::regions::TIME_SAMPLE,
            count(timed),
            names.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    if g.dropped > 0 {
        out.push_str(&format!(
            "  {} markers not filed (more than {MAX_REGIONS} region names, regions nested more than {MAX_DEPTH} deep, or a marker before the runtime knew its thread)\n",
            count(g.dropped)
        ));
    }
    if g.unmatched_ends > 0 {
        out.push_str(&format!(
            "  {} PROFCC_ROI_END with no open region of that name in its thread (ignored)\n",
            count(g.unmatched_ends)
        ));
    }
}

#[cfg(test)]
mod top_findings_tests {
    use super::*;
    use profcc_analysis::findings::{ranked, Analysis, Confidence, Finding, Impact, Object};

    fn finding(global: &str, input: usize, seconds: f64) -> Finding {
        let mut f = Finding::new(
            Analysis::Numa,
            "remote_access",
            format!("global `{global}`"),
            vec![Object::new("global", global)],
            vec!["a.c:7".into()],
            vec![],
            Impact {
                seconds,
                bytes: 0,
                formula: "remote_overhead_share".into(),
                inputs: vec![],
                confidence: Confidence::Low,
            },
            String::new(),
        );
        f.input = input;
        f
    }

    /// Of three ranks with the same finding, the text lists it once, as the rank where it
    /// saves the most, naming the ranks that have it; a finding of one rank stays as it was.
    #[test]
    fn a_finding_several_profiles_have_is_listed_once() {
        let v = ranked(vec![
            finding("x", 0, 0.001),
            finding("x", 1, 0.003),
            finding("x", 2, 0.002),
            finding("y", 2, 0.0005),
        ]);
        let mut out = String::new();
        findings(&v, true, &mut out);
        assert!(out.contains("is listed once, 4 in all"), "{out}");
        assert_eq!(out.matches("global `x`").count(), 1, "{out}");
        assert!(
            out.contains(" 1. [0, 1, 2] numa: global `x` at a.c:7\n    fixing it saves about 3.0 ms (remote_overhead_share, low confidence) in [1], the most of the 3 profiles with it\n"),
            "{out}"
        );
        assert!(
            out.contains(" 2. [2] numa: global `y` at a.c:7\n    fixing it saves about 500.0 µs (remote_overhead_share, low confidence)\n"),
            "{out}"
        );
        // One profile: every finding as it is.
        let mut one = String::new();
        findings(&ranked(vec![finding("x", 0, 0.001)]), false, &mut one);
        assert!(one.contains(" 1. numa: global `x` at a.c:7\n"), "{one}");
        assert!(!one.contains("listed once"), "{one}");
        assert_eq!(
            crate::render::input_list(&(0..8).collect::<Vec<_>>()),
            "0, 1, 2, 3, 4 and 3 more"
        );
        // Grouped: the profiles sorted and each once, whatever order the ranking met them in.
        let v = ranked(vec![
            finding("x", 3, 0.004),
            finding("x", 1, 0.003),
            finding("y", 2, 0.002),
            finding("x", 1, 0.001),
        ]);
        let g = crate::render::finding_groups(&v, true);
        assert_eq!(
            g.iter()
                .map(|g| (v[g.head].key.as_str(), g.inputs.clone(), g.label.as_str()))
                .collect::<Vec<_>>(),
            [
                (v[g[0].head].key.as_str(), vec![1, 3], "1, 3"),
                (v[g[1].head].key.as_str(), vec![2], "2")
            ]
        );
        assert_eq!(crate::render::finding_groups(&v, false).len(), 4);
    }

    /// Of twelve ranks' NUMA sections the text shows the eight with the most remote accesses,
    /// in input order; of eight, every one.
    #[test]
    fn many_ranks_show_the_numa_sections_with_most_remote_accesses() {
        let inputs = |n: usize| crate::model::Numa {
            inputs: (0..n)
                .map(|i| crate::model::NumaInput {
                    input: i,
                    model: "emulate".into(),
                    nodes: 2,
                    remote: [5, 90, 7, 80, 1, 70, 60, 50, 2, 40, 30, 3][i],
                    ..Default::default()
                })
                .collect(),
        };
        let mut out = String::new();
        numa(&inputs(12), true, &mut out);
        assert!(
            out.contains("NUMA locality of 12 profiles: the 8 with the most remote"),
            "{out}"
        );
        let shown: Vec<&str> = out
            .lines()
            .filter_map(|l| l.strip_prefix("NUMA locality [input "))
            .map(|l| l.split(']').next().unwrap())
            .collect();
        assert_eq!(shown, ["1", "2", "3", "5", "6", "7", "9", "10"]);
        let mut out = String::new();
        numa(&inputs(8), true, &mut out);
        assert_eq!(out.matches("NUMA locality [input ").count(), 8, "{out}");
        assert!(!out.contains("profiles: the"), "{out}");
    }
}
