//! The `regions` part of `cargo xtask bench`: the cost of region counters in the ROI-only
//! build (`PROFCC_INSTRUMENT=roi`, docs/regions.md "Overhead"). The kernels of
//! bench/kernels/roi_kernels.c (one region execution per kernel call) and the sqlite3 driver
//! bench/programs/sqlite_roi.c (sqlite3.c in the same translation unit, so the region's
//! counters follow the calls into sqlite; the region around the query loop, and, built with
//! -DPER_QUERY, around each query) are built with clang-22 and with profcc at -O2; each round
//! runs the native build, the ROI build counting every execution and the ROI build with
//! `roi_sample=100` (1%); `runs` rounds, medians. Targets (issue 13): at most 1.30x geomean
//! counting everything, at most 1.03x at 1% sampling; the ROI-only build of the sqlite
//! driver at most 1.2x clang-22's build time. Each ROI run's bytes per execution are checked
//! against the kernel's analytic traffic where it has one.

use super::{crate_dir, measure, median};
use crate::run as sh;
use std::path::Path;
use std::process::Command;

const GEOMEAN_ALL: f64 = 1.30;
const GEOMEAN_SAMPLED: f64 = 1.03;
const BUILD_TARGET: f64 = 1.2;
const SAMPLE: &str = "roi_sample=100";

/// (kernel, N, REPS, bytes read and written per element when analytic: N elements).
const KERNELS: &[(&str, u64, u64, Option<(u64, u64)>)] = &[
    ("copy", 2_000_000, 200, Some((8, 8))),
    ("scale", 2_000_000, 200, Some((8, 8))),
    ("add", 2_000_000, 150, Some((16, 8))),
    ("triad", 2_000_000, 150, Some((16, 8))),
    ("dot", 64, 8_000_000, Some((16, 0))),
    ("daxpy", 64, 8_000_000, Some((16, 8))),
    ("spmv", 400_000, 20, None),
    ("transpose", 1500, 6, None),
    ("memcpy", 250_000, 4000, Some((8, 8))),
    ("chase", 2_000_000, 3, Some((8, 0))),
];

pub fn run(
    root: &Path,
    profcc: &Path,
    work: &Path,
    runs: usize,
    out: &mut String,
) -> Result<(), String> {
    let include = root.join("include");
    let src = root.join("bench/kernels/roi_kernels.c");
    let native = work.join("roi_kernels.native");
    let roi = work.join("roi_kernels.roi");
    sh(Command::new("clang-22")
        .args(["-O2", "-I"])
        .arg(&include)
        .arg(&src)
        .arg("-o")
        .arg(&native))?;
    sh(Command::new(profcc)
        .arg("-O2")
        .arg(&src)
        .arg("-o")
        .arg(&roi)
        .env("PROFCC_INSTRUMENT", "roi"))?;
    let mut programs: Vec<(String, std::path::PathBuf, std::path::PathBuf, Vec<String>)> = KERNELS
        .iter()
        .map(|(k, n, reps, _)| {
            (
                format!("{k} {n} {reps}"),
                native.clone(),
                roi.clone(),
                vec![k.to_string(), n.to_string(), reps.to_string()],
            )
        })
        .collect();
    // The sqlite driver, one translation unit with sqlite3.c; its build time side by side.
    let sqlite = crate_dir(root, "libsqlite3-sys")?.join("sqlite3");
    let driver = root.join("bench/programs/sqlite_roi.c");
    let flags = [
        "-O2",
        "-DSQLITE_OMIT_LOAD_EXTENSION",
        "-DSQLITE_THREADSAFE=0",
    ];
    let mut build = (Vec::new(), Vec::new());
    for (variant, define) in [("loop", None), ("per_query", Some("-DPER_QUERY"))] {
        let n = work.join(format!("sqlite_roi_{variant}.native"));
        let r = work.join(format!("sqlite_roi_{variant}.roi"));
        let native_cmd = || {
            let mut c = Command::new("clang-22");
            c.args(flags)
                .args(define)
                .arg("-I")
                .arg(&sqlite)
                .arg("-I")
                .arg(&include)
                .arg(&driver)
                .arg("-o")
                .arg(&n)
                .arg("-lm");
            c
        };
        let roi_cmd = || {
            let mut c = Command::new(profcc);
            c.args(flags)
                .args(define)
                .arg("-I")
                .arg(&sqlite)
                .arg(&driver)
                .arg("-o")
                .arg(&r)
                .arg("-lm")
                .env("PROFCC_INSTRUMENT", "roi");
            c
        };
        // Build time: the first variant, min(runs, 3) alternating builds.
        let rounds = if variant == "loop" { runs.min(3) } else { 1 };
        for _ in 0..rounds {
            build.0.push(measure(&mut native_cmd())?.secs);
            build.1.push(measure(&mut roi_cmd())?.secs);
        }
        programs.push((
            format!("sqlite_roi ({variant}) 100000 200000"),
            n,
            r,
            vec!["100000".into(), "200000".into()],
        ));
    }
    let (bn, bp) = (median(build.0), median(build.1));
    eprintln!(
        "bench: sqlite_roi build {bn:.2}s vs {bp:.2}s ({:.2}x)",
        bp / bn
    );

    out.push_str("| region kernel (args) | native s | ROI, every execution | ratio | ROI, roi_sample=100 | ratio | read/written per execution (all) |\n|---|---|---|---|---|---|---|\n");
    let (mut log_all, mut log_sampled) = (0.0, 0.0);
    let opts = |extra: &str| format!("out={}/bench.roi.%p.json:summary=0{extra}", work.display());
    for (i, (name, native, roi, args)) in programs.iter().enumerate() {
        let (mut tn, mut ta, mut ts) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            tn.push(measure(Command::new(native).args(args))?.secs);
            ta.push(measure(Command::new(roi).args(args).env("PROFCC_OPTIONS", opts("")))?.secs);
            ts.push(
                measure(
                    Command::new(roi)
                        .args(args)
                        .env("PROFCC_OPTIONS", opts(&format!(":{SAMPLE}"))),
                )?
                .secs,
            );
        }
        let (n, a, s) = (median(tn), median(ta), median(ts));
        log_all += (a / n).ln();
        log_sampled += (s / n).ln();
        // One more counted run, its profile read for the bytes per execution.
        let profile = work.join(format!("bench.roi.check.{i}.json"));
        sh(Command::new(roi).args(args).env(
            "PROFCC_OPTIONS",
            format!("out={}:summary=0", profile.display()),
        ))?;
        let bytes = per_execution(&profile)?;
        let check = KERNELS
            .get(i)
            .and_then(|(_, n, _, per)| per.map(|(r, w)| (n, r, w)))
            .map_or(String::new(), |(n, r, w)| {
                let ok = bytes.0 == (r * n) as f64 && bytes.1 == (w * n) as f64;
                format!(" ({} analytic)", if ok { "=" } else { "≠" })
            });
        eprintln!(
            "bench: {name}: {n:.3}s, all {a:.3}s ({:.2}x), sampled {s:.3}s ({:.2}x)",
            a / n,
            s / n
        );
        out.push_str(&format!(
            "| {name} | {n:.3} | {a:.3} | {:.2}x | {s:.3} | {:.2}x | {:.0} / {:.0}{check} |\n",
            a / n,
            s / n,
            bytes.0,
            bytes.1
        ));
    }
    let k = programs.len() as f64;
    let (ga, gs) = ((log_all / k).exp(), (log_sampled / k).exp());
    out.push_str(&format!(
        "\nGeomean (PROFCC_INSTRUMENT=roi): every execution counted {ga:.2}x (target ≤ {GEOMEAN_ALL:.2}x{}), {SAMPLE} {gs:.2}x (target ≤ {GEOMEAN_SAMPLED:.2}x{}).\n\n",
        if ga <= GEOMEAN_ALL { ", met" } else { ", NOT met" },
        if gs <= GEOMEAN_SAMPLED { ", met" } else { ", NOT met" },
    ));
    out.push_str(&format!(
        "| build | clang-22 s | profcc (PROFCC_INSTRUMENT=roi) s | ratio | target |\n|---|---|---|---|---|\n| sqlite_roi.c (sqlite3.c in one unit, region around the query loop) -O2 | {bn:.2} | {bp:.2} | {:.2}x | ≤ {BUILD_TARGET}x{} |\n\n",
        bp / bn,
        if bp / bn <= BUILD_TARGET { ", met" } else { ", NOT met" }
    ));
    for f in std::fs::read_dir(work).map_err(|e| e.to_string())? {
        let p = f.map_err(|e| e.to_string())?.path();
        if p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("bench.roi."))
        {
            let _ = std::fs::remove_file(p);
        }
    }
    Ok(())
}

/// Bytes read and written per execution of the profile's region that ran (all threads).
fn per_execution(profile: &Path) -> Result<(f64, f64), String> {
    let text =
        std::fs::read_to_string(profile).map_err(|e| format!("{}: {e}", profile.display()))?;
    let p: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", profile.display()))?;
    let rows = p["regions"]["rows"]
        .as_array()
        .ok_or_else(|| format!("{}: no regions", profile.display()))?;
    let (mut e, mut r, mut w) = (0u64, 0.0, 0.0);
    for row in rows {
        let ex = row["executions"].as_u64().unwrap_or(0);
        if ex == 0 {
            continue;
        }
        e += ex;
        let c = &row["counts"];
        // heap, global, stack: what a region reaches (local slots apart).
        let sum = |k: &str| -> f64 {
            c[k].as_array()
                .map(|v| v.iter().take(3).filter_map(|x| x.as_u64()).sum::<u64>() as f64)
                .unwrap_or(0.0)
        };
        r += sum("load_bytes");
        w += sum("store_bytes");
    }
    Ok((r / e.max(1) as f64, w / e.max(1) as f64))
}
