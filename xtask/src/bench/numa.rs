//! The `numa` part of `cargo xtask bench`: the cost of the NUMA page check (docs/numa.md).
//! The sharing part's kernels, two NUMA kernels (bench/kernels/numa_serial_touch.c and its
//! fix, numa_parallel_touch.c) and kmeans_loop are built with clang-22 and with profcc at -O2,
//! three times: `PROFCC_INSTRUMENT=sharing` (the default, what the page check is added to),
//! `numa` (NUMA alone) and `sharing,numa` (both analyses in one run). Each round runs the
//! native build, then the instrumented builds with default run-time options (`numa=thread`);
//! `runs` rounds, medians. Targets (issue 11): at most 3x geomean alone and
//! 4x together, no kernel above 8x, peak RSS at most 2x native + 64 MiB. The NUMA kernels'
//! remote share (from the report) says whether each shows what it is written to show.

use super::{measure, median, report_json};
use crate::run as sh;
use std::path::Path;
use std::process::Command;

const GEOMEAN_ALONE: f64 = 3.0;
const GEOMEAN_TOGETHER: f64 = 4.0;
const KERNEL_TARGET: f64 = 8.0;
const RSS_FACTOR: f64 = 2.0;
const RSS_PLUS_MIB: f64 = 64.0;

/// The NUMA kernels and kmeans_loop (its short loop is where the page check costs most):
/// (name, what they show).
const MORE_KERNELS: &[(&str, &str)] = &[
    ("numa_serial_touch", "serial first touch: workers remote"),
    ("numa_parallel_touch", "parallel first touch: local"),
    ("kmeans_loop", "short loop (single-threaded)"),
];

/// The builds measured against native, in table order: the default (what the page check is
/// added to), NUMA alone, both.
const SHARING: usize = 0;
const NUMA: usize = 1;
const BOTH: usize = 2;
const MODES: [&str; 3] = ["sharing", "numa", "sharing,numa"];

pub fn run(
    root: &Path,
    profcc: &Path,
    work: &Path,
    runs: usize,
    out: &mut String,
) -> Result<(), String> {
    let src_dir = root.join("bench/kernels");
    let mut kernels: Vec<(&str, &[&str], &str)> = super::sharing::KERNELS
        .iter()
        .map(|k| (k.name, k.flags, "-"))
        .collect();
    kernels.extend(MORE_KERNELS.iter().map(|(n, what)| (*n, &[][..], *what)));
    out.push_str(
        "| kernel | native s | sharing | numa | sharing,numa | native RSS MiB | sharing,numa RSS MiB | remote (numa=thread) | shows |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    let (mut log_alone, mut log_together, mut worst, mut rss_ok) = (0.0, 0.0, 0.0f64, true);
    for (name, flags, what) in &kernels {
        let src = src_dir.join(format!("{name}.c"));
        let native = work.join(format!("{name}.native"));
        sh(Command::new("clang-22")
            .args(["-O2", "-pthread"])
            .args(*flags)
            .arg(&src)
            .arg("-o")
            .arg(&native))?;
        let mut builds = Vec::new();
        for mode in MODES {
            let inst = work.join(format!("{name}.{}", mode.replace(',', "+")));
            sh(Command::new(profcc)
                .env("PROFCC_INSTRUMENT", mode)
                .args(["-O2", "-pthread"])
                .args(*flags)
                .arg(&src)
                .arg("-o")
                .arg(&inst))?;
            builds.push(inst);
        }
        let mut base = Vec::new();
        let mut inst = vec![Vec::new(); MODES.len()];
        let mut base_rss = 0i64;
        let mut inst_rss = vec![0i64; MODES.len()];
        let profile = work.join(format!("{name}.numa.json"));
        for _ in 0..runs {
            let s = measure(&mut Command::new(&native))?;
            base.push(s.secs);
            base_rss = base_rss.max(s.max_rss_kib);
            for (m, b) in builds.iter().enumerate() {
                let opts = format!("out={}:summary=0", profile.display());
                let s = measure(Command::new(b).env("PROFCC_OPTIONS", opts))?;
                inst[m].push(s.secs);
                inst_rss[m] = inst_rss[m].max(s.max_rss_kib);
            }
        }
        let b = median(base);
        let r: Vec<f64> = inst.into_iter().map(|v| median(v) / b).collect();
        log_alone += r[NUMA].ln();
        log_together += r[BOTH].ln();
        worst = worst.max(r[NUMA]).max(r[BOTH]);
        let limit = base_rss as f64 / 1024.0 * RSS_FACTOR + RSS_PLUS_MIB;
        rss_ok &= [NUMA, BOTH]
            .iter()
            .all(|&m| inst_rss[m] as f64 / 1024.0 <= limit);
        // The last run's profile (sharing,numa, the last build): the share of remote accesses.
        let remote = report_json(profcc, &profile, &[])
            .ok()
            .and_then(|r| {
                let i = r.get("numa")?.get("inputs")?.get(0)?.clone();
                let (l, rm) = (i.get("local")?.as_f64()?, i.get("remote")?.as_f64()?);
                Some(format!("{:.1}%", rm * 100.0 / (l + rm).max(1.0)))
            })
            .unwrap_or_else(|| "-".into());
        let _ = std::fs::remove_file(&profile);
        eprintln!(
            "bench: numa {name}: native {b:.3}s, sharing {:.2}x, numa {:.2}x, sharing,numa {:.2}x, remote {remote}",
            r[SHARING], r[NUMA], r[BOTH]
        );
        out.push_str(&format!(
            "| {name} | {b:.3} | {:.2}x | {:.2}x | {:.2}x | {:.1} | {:.1} | {remote} | {what} |\n",
            r[SHARING],
            r[NUMA],
            r[BOTH],
            base_rss as f64 / 1024.0,
            inst_rss[BOTH] as f64 / 1024.0,
        ));
    }
    let n = kernels.len() as f64;
    let (alone, together) = ((log_alone / n).exp(), (log_together / n).exp());
    let met = |ok: bool| if ok { "met" } else { "MISSED" };
    out.push_str(&format!(
        "\nGeomean: NUMA alone {alone:.2}x (target ≤ {GEOMEAN_ALONE}x: {}), with sharing {together:.2}x (target ≤ {GEOMEAN_TOGETHER}x: {}); worst kernel {worst:.2}x (target ≤ {KERNEL_TARGET}x: {}); peak RSS within {RSS_FACTOR}x native + {RSS_PLUS_MIB} MiB: {}\n\n",
        met(alone <= GEOMEAN_ALONE),
        met(together <= GEOMEAN_TOGETHER),
        met(worst <= KERNEL_TARGET),
        met(rss_ok)
    ));
    Ok(())
}
