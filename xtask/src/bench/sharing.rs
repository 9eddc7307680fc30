//! The `sharing` part of `cargo xtask bench`: multithreaded kernels (bench/kernels/fs_*, mt_*,
//! ts_*) built with clang-22 and with profcc (PROFCC_INSTRUMENT=sharing) at -O2.
//!
//! Per kernel, every round runs the native build, then the instrumented build with default
//! run-time options, then with `fs_sample=N` for each N of [`SAMPLES`]; `runs` rounds, medians.
//! Every instrumented run writes its profile; `profcc report --format json` gives its top
//! cache-line sharing finding. Two tables come out: overhead and RSS with default options
//! (with the targets and whether each is met; a missed target is reported, not an error),
//! and per `fs_sample` the overhead and the findings, so one sees what sampling trades.

use super::{measure, median, report_json};
use crate::run as sh;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

pub(super) struct Kernel {
    pub(super) name: &'static str,
    /// Worker threads the kernel starts (the main thread waits).
    threads: u32,
    /// Extra compile flags (both builds).
    pub(super) flags: &'static [&'static str],
    /// What the kernel is written to show.
    expect: &'static str,
}

pub(super) const KERNELS: &[Kernel] = &[
    Kernel {
        name: "fs_heap_counters",
        threads: 2,
        flags: &[],
        expect: "false sharing (heap counters)",
    },
    Kernel {
        name: "fs_global_struct",
        threads: 2,
        flags: &[],
        expect: "false sharing (struct fields)",
    },
    Kernel {
        name: "fs_omp_partial",
        threads: 2,
        flags: &["-fopenmp"],
        expect: "false sharing (OpenMP partial[])",
    },
    Kernel {
        name: "mt_stream",
        threads: 2,
        flags: &[],
        expect: "none (own chunks)",
    },
    Kernel {
        name: "mt_read_mostly",
        threads: 4,
        flags: &[],
        expect: "read-mostly or none",
    },
    Kernel {
        name: "mt_mutex",
        threads: 2,
        flags: &[],
        expect: "true sharing (locked counter)",
    },
    Kernel {
        name: "ts_atomic",
        threads: 2,
        flags: &[],
        expect: "true sharing (atomic counter)",
    },
];

/// The `fs_sample` values of the sampling table.
const SAMPLES: &[u32] = &[1, 16, 64, 256];

/// Targets (default run-time options).
const GEOMEAN_TARGET: f64 = 3.0;
const KERNEL_TARGET: f64 = 8.0;
const RSS_FACTOR: f64 = 2.0;
const RSS_PLUS_MIB: f64 = 64.0;

/// The top finding of one run's report (None: the report has no findings).
struct Top {
    kind: String,
    invalidations: u64,
    object: String,
    speedup: f64,
}

struct RunReport {
    top: Option<Top>,
    findings_total: u64,
    lines_tracked: u64,
    settings: Option<serde_json::Value>,
}

/// Timings, peak RSS and reports of one configuration over all rounds.
#[derive(Default)]
struct Series {
    secs: Vec<f64>,
    /// CPU time / wall time of each run: about the number of threads that ran at once.
    par: Vec<f64>,
    max_rss_kib: i64,
    reports: Vec<RunReport>,
}

impl Series {
    fn median(&self) -> f64 {
        median(self.secs.clone())
    }
    fn par(&self) -> f64 {
        median(self.par.clone())
    }
    fn push(&mut self, s: &super::Sample) {
        self.secs.push(s.secs);
        self.par.push(s.cpu_secs / s.secs.max(1e-9));
        self.max_rss_kib = self.max_rss_kib.max(s.max_rss_kib);
    }
}

/// Instrumented configurations: (label, extra PROFCC_OPTIONS).
fn variants() -> Vec<(String, String)> {
    std::iter::once(("default".to_string(), String::new()))
        .chain(
            SAMPLES
                .iter()
                .map(|n| (format!("fs_sample={n}"), format!(":fs_sample={n}"))),
        )
        .collect()
}

pub fn run(
    root: &Path,
    profcc: &Path,
    work: &Path,
    runs: usize,
    out: &mut String,
) -> Result<(), String> {
    // Predicted gain vs padding first (docs/model.md).
    let src_dir = root.join("bench/kernels");
    let prof_dir = work.join("sharing");
    let _ = std::fs::remove_dir_all(&prof_dir);
    std::fs::create_dir_all(&prof_dir).map_err(|e| e.to_string())?;

    let variants = variants();
    // Per kernel: native series, then one series per variant.
    let mut results: Vec<(Series, Vec<Series>)> = Vec::new();
    for k in KERNELS {
        let src = src_dir.join(format!("{}.c", k.name));
        let native = work.join(format!("{}.native", k.name));
        let inst = work.join(format!("{}.profcc", k.name));
        sh(Command::new("clang-22")
            .args(["-O2", "-pthread"])
            .args(k.flags)
            .arg(&src)
            .arg("-o")
            .arg(&native))?;
        sh(Command::new(profcc)
            .env("PROFCC_INSTRUMENT", "sharing")
            .args(["-O2", "-pthread"])
            .args(k.flags)
            .arg(&src)
            .arg("-o")
            .arg(&inst))?;

        let mut base = Series::default();
        let mut series: Vec<Series> = variants.iter().map(|_| Series::default()).collect();
        let mut profiles: Vec<Vec<PathBuf>> = variants.iter().map(|_| Vec::new()).collect();
        for round in 0..runs {
            base.push(&measure(&mut Command::new(&native))?);
            for (v, (_, extra)) in variants.iter().enumerate() {
                let profile = prof_dir.join(format!("{}.{v}.{round}.json", k.name));
                let opts = format!("out={}:summary=0{extra}", profile.display());
                series[v].push(&measure(Command::new(&inst).env("PROFCC_OPTIONS", &opts))?);
                profiles[v].push(profile);
            }
        }
        for (v, files) in profiles.iter().enumerate() {
            for f in files {
                series[v].reports.push(report(profcc, f)?);
                let _ = std::fs::remove_file(f);
            }
        }
        let b = base.median();
        eprintln!(
            "bench: {}: native {b:.3}s; {}",
            k.name,
            variants
                .iter()
                .zip(&series)
                .map(|((label, _), s)| format!("{label} {:.2}x", s.median() / b))
                .collect::<Vec<_>>()
                .join(", ")
        );
        results.push((base, series));
    }

    write_tables(&results, &variants, runs, out);
    Ok(())
}

/// `profcc report --format json --top 1 --min-speedup 0 FILE`: the top finding and the sharing
/// totals.
fn report(profcc: &Path, profile: &Path) -> Result<RunReport, String> {
    let v = report_json(profcc, profile, &["--top", "1"])?;
    let s = &v["sharing"];
    let top = s["findings"].as_array().and_then(|f| f.first()).map(|f| {
        let kind = f["kind_text"].as_str().unwrap_or("?").to_string();
        let kind = if f["allocator_induced"].as_bool() == Some(true) {
            format!("{kind} (allocator-induced)")
        } else {
            kind
        };
        Top {
            kind,
            invalidations: f["invalidations"].as_u64().unwrap_or(0),
            object: object_text(&f["objects"]),
            speedup: f["predicted_speedup"].as_f64().unwrap_or(1.0),
        }
    });
    Ok(RunReport {
        top,
        findings_total: s["findings_total"].as_u64().unwrap_or(0),
        lines_tracked: s["lines_tracked"].as_u64().unwrap_or(0),
        settings: s.get("settings").cloned(),
    })
}

/// The finding's first object as the report names it, plus how many others.
fn object_text(objects: &serde_json::Value) -> String {
    let Some(list) = objects.as_array().filter(|l| !l.is_empty()) else {
        return "-".into();
    };
    let o = &list[0];
    let size = o["size"].as_u64().unwrap_or(0);
    let mut t = match o["kind"].as_str().unwrap_or("?") {
        "heap" => {
            let site = o["alloc_site"]
                .as_str()
                .map(|s| s.rsplit('/').next().unwrap_or(s).to_string())
                .unwrap_or_else(|| "?".into());
            format!(
                "heap {size} B, {} at {site}",
                o["alloc_kind"].as_str().unwrap_or("?")
            )
        }
        "global" => match o["name"].as_str() {
            Some(n) => format!("global `{n}` ({size} B)"),
            None => format!("global/static, no symbol ({size} B)"),
        },
        "stack" => format!("stack of thread {}", o["stack_thread"]),
        other => other.to_string(),
    };
    if list.len() > 1 {
        t.push_str(&format!(" +{} more", list.len() - 1));
    }
    t
}

/// 1234 -> "1234", 12345 -> "12.3K", 4.5e6 -> "4.5M".
fn si(n: u64) -> String {
    let f = n as f64;
    if n < 10_000 {
        n.to_string()
    } else if f < 1e6 {
        format!("{:.1}K", f / 1e3)
    } else if f < 1e9 {
        format!("{:.1}M", f / 1e6)
    } else {
        format!("{:.1}G", f / 1e9)
    }
}

fn median_u64(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

/// "a" when every value is the same, else "min–max".
fn range_text(v: &[u64], fmt: fn(u64) -> String) -> String {
    let (lo, hi) = (v.iter().min().copied(), v.iter().max().copied());
    match (lo, hi) {
        (Some(lo), Some(hi)) if lo == hi => fmt(lo),
        (Some(lo), Some(hi)) => format!("{}–{}", fmt(lo), fmt(hi)),
        _ => "-".into(),
    }
}

/// The findings of a series of runs, summarised for a table cell.
struct FindingCells {
    kind: String,
    object: String,
    invalidations: String,
    speedup: String,
    findings: String,
    lines: String,
}

fn finding_cells(reports: &[RunReport]) -> FindingCells {
    let n = reports.len();
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    let mut objects: BTreeMap<String, usize> = BTreeMap::new();
    for r in reports {
        let k = r
            .top
            .as_ref()
            .map_or("none".to_string(), |t| t.kind.clone());
        *kinds.entry(k).or_default() += 1;
        if let Some(t) = &r.top {
            *objects.entry(t.object.clone()).or_default() += 1;
        }
    }
    let mut kinds: Vec<(String, usize)> = kinds.into_iter().collect();
    kinds.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let kind = if kinds.len() == 1 {
        format!("{} ({n}/{n})", kinds[0].0)
    } else {
        kinds
            .iter()
            .map(|(k, c)| format!("{k} ({c}/{n})"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let object = objects
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        .map(|(o, _)| o)
        .unwrap_or_else(|| "-".into());
    let tops: Vec<&Top> = reports.iter().filter_map(|r| r.top.as_ref()).collect();
    let (invalidations, speedup) = if tops.is_empty() {
        ("-".to_string(), "-".to_string())
    } else {
        let inv: Vec<u64> = tops.iter().map(|t| t.invalidations).collect();
        let sp = median(tops.iter().map(|t| t.speedup).collect());
        let (lo, hi) = (
            tops.iter().map(|t| t.speedup).fold(f64::MAX, f64::min),
            tops.iter().map(|t| t.speedup).fold(f64::MIN, f64::max),
        );
        (
            format!("{} [{}]", si(median_u64(inv.clone())), range_text(&inv, si)),
            if hi - lo < 0.005 {
                format!("{sp:.2}x")
            } else {
                format!("{sp:.2}x [{lo:.2}–{hi:.2}]")
            },
        )
    };
    let totals: Vec<u64> = reports.iter().map(|r| r.findings_total).collect();
    let lines: Vec<u64> = reports.iter().map(|r| r.lines_tracked).collect();
    FindingCells {
        kind,
        object,
        invalidations,
        speedup,
        findings: range_text(&totals, |n| n.to_string()),
        lines: range_text(&lines, |n| n.to_string()),
    }
}

fn mib(kib: i64) -> f64 {
    kib as f64 / 1024.0
}

fn write_tables(
    results: &[(Series, Vec<Series>)],
    variants: &[(String, String)],
    runs: usize,
    out: &mut String,
) {
    out.push_str(&format!(
        "### Cache-line sharing analysis: overhead with default run-time options\n\n\
         Builds: `clang-22 -O2 -pthread` vs `profcc -O2 -pthread` (PROFCC_INSTRUMENT=sharing); \
         instrumented runs with `PROFCC_OPTIONS=out=FILE:summary=0`. Medians of {runs} rounds; \
         each round runs native, default, then fs_sample=1/16/64/256 back to back. RSS is the \
         peak over all rounds. CPU/wall (user + system time over wall time, median) tells how \
         many threads really ran at once: near 1 on this 2-core machine means they mostly took \
         turns (another load, or a lock), and then few invalidations happen to be seen. Top finding: the first finding of `profcc report --format json` \
         for each run (how many runs gave it).\n\n"
    ));
    out.push_str(&format!(
        "| kernel | threads | written to show | native s | profcc s | ratio (≤ {KERNEL_TARGET:.0}x) | CPU/wall native, profcc | native RSS MiB | profcc RSS MiB | RSS limit ({RSS_FACTOR:.0}x + {RSS_PLUS_MIB:.0}) | top finding | invalidations, median [range] |\n"
    ));
    out.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    let mut logsum = 0.0;
    let mut over_ratio = Vec::new();
    let mut over_rss = Vec::new();
    let mut worst = ("", 0.0f64);
    let mut settings = None;
    for (k, (base, series)) in KERNELS.iter().zip(results) {
        let def = &series[0];
        let b = base.median();
        let i = def.median();
        let ratio = i / b;
        logsum += ratio.ln();
        if ratio > worst.1 {
            worst = (k.name, ratio);
        }
        if ratio > KERNEL_TARGET {
            over_ratio.push(format!("{} {ratio:.2}x", k.name));
        }
        let limit = mib(base.max_rss_kib) * RSS_FACTOR + RSS_PLUS_MIB;
        let rss_ok = mib(def.max_rss_kib) <= limit;
        if !rss_ok {
            over_rss.push(format!(
                "{} {:.1} MiB > {limit:.1}",
                k.name,
                mib(def.max_rss_kib)
            ));
        }
        if settings.is_none() {
            settings = def.reports.iter().find_map(|r| r.settings.clone());
        }
        let f = finding_cells(&def.reports);
        let obj = if f.object == "-" {
            String::new()
        } else {
            format!(" on {}", f.object)
        };
        out.push_str(&format!(
            "| {} | {} | {} | {b:.3} | {i:.3} | {ratio:.2}x{} | {:.2}, {:.2} | {:.1} | {:.1} | {limit:.1} {} | {}{obj} | {} |\n",
            k.name,
            k.threads,
            k.expect,
            if ratio > KERNEL_TARGET { " OVER" } else { "" },
            base.par(),
            def.par(),
            mib(base.max_rss_kib),
            mib(def.max_rss_kib),
            if rss_ok { "ok" } else { "OVER" },
            f.kind,
            f.invalidations,
        ));
    }
    let geo = (logsum / results.len().max(1) as f64).exp();
    let met = |ok: bool| if ok { "met" } else { "NOT met" };
    out.push_str(&format!(
        "\nTargets (default options): geomean ratio {geo:.2}x, target ≤ {GEOMEAN_TARGET:.0}x: {}; \
         no kernel over {KERNEL_TARGET:.0}x (worst: {} {:.2}x): {}{}; \
         peak RSS ≤ {RSS_FACTOR:.0}x native + {RSS_PLUS_MIB:.0} MiB: {}{}.\n",
        met(geo <= GEOMEAN_TARGET),
        worst.0,
        worst.1,
        met(over_ratio.is_empty()),
        if over_ratio.is_empty() {
            String::new()
        } else {
            format!(" (over: {})", over_ratio.join(", "))
        },
        met(over_rss.is_empty()),
        if over_rss.is_empty() {
            String::new()
        } else {
            format!(" (over: {})", over_rss.join(", "))
        },
    ));
    if let Some(s) = settings {
        let fields: Vec<String> = s
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        out.push_str(&format!(
            "\nDefault sharing settings in force (the profiles' `sharing.settings`): {}.\n",
            fields.join(", ")
        ));
    }

    out.push_str(
        "\n### Sampling: `PROFCC_OPTIONS=fs_sample=N`\n\n\
         fs_sample=N analyses one access in N per thread to a tracked line and scales the \
         counts by N. Ratio against the same native median as above. Findings are the top \
         finding's kind (runs that gave it), its object, invalidations and predicted speedup \
         (median [range over runs]), then the number of findings and tracked lines per run.\n\n",
    );
    out.push_str("| kernel | fs_sample | profcc s | ratio | CPU/wall | top finding | object | invalidations, median [range] | predicted speedup | findings | lines tracked |\n");
    out.push_str("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (k, (base, series)) in KERNELS.iter().zip(results) {
        let b = base.median();
        for (v, (label, _)) in variants.iter().enumerate().skip(1) {
            let s = &series[v];
            let i = s.median();
            let f = finding_cells(&s.reports);
            out.push_str(&format!(
                "| {} | {} | {i:.3} | {:.2}x | {:.2} | {} | {} | {} | {} | {} | {} |\n",
                k.name,
                label.trim_start_matches("fs_sample="),
                i / b,
                s.par(),
                f.kind,
                f.object,
                f.invalidations,
                f.speedup,
                f.findings,
                f.lines,
            ));
        }
    }
    out.push('\n');
}
