//! The `default` part of `cargo xtask bench` (issue 46): what the default build (`CC=profcc`,
//! nothing else changed) costs. Today its thread-churn rows: bench/kernels/thread_churn.c,
//! 10,000, 100,000 and 160,000 threads created and joined one after another, clang-22 -O2
//! against profcc -O2 run with `PROFCC_OPTIONS=out=FILE:summary=0` (the profile written, its
//! exit dump timed), alternating, medians. Target: at most `CHURN_TARGET` at every count (no
//! growth with the number of threads ever started); peak RSS printed beside.

use super::{side_by_side, Row};
use crate::run as sh;
use std::path::Path;
use std::process::Command;

const CHURN_TARGET: f64 = 1.5;
const THREADS: [u64; 3] = [10_000, 100_000, 160_000];

pub fn run(
    root: &Path,
    profcc: &Path,
    work: &Path,
    runs: usize,
    out: &mut String,
) -> Result<(), String> {
    let src = root.join("bench/kernels/thread_churn.c");
    let native = work.join("thread_churn.native");
    let prof = work.join("thread_churn.profcc");
    sh(Command::new("clang-22")
        .args(["-O2"])
        .arg(&src)
        .arg("-o")
        .arg(&native)
        .arg("-lpthread"))?;
    sh(Command::new(profcc)
        .args(["-O2", "-g"])
        .arg(&src)
        .arg("-o")
        .arg(&prof)
        .arg("-lpthread"))?;
    let profile = work.join("thread_churn.profile.json");
    out.push_str(&format!(
        "Default build, thread churn (bench/kernels/thread_churn.c; target ≤ {CHURN_TARGET}x at every count)\n\n| threads | native s | profcc s | ratio | native peak RSS MiB | profcc peak RSS MiB | profile MB |\n|---|---|---|---|---|---|---|\n"
    ));
    for n in THREADS {
        let arg = n.to_string();
        let row: Row = side_by_side(
            &format!("thread_churn {n}"),
            runs,
            &mut || {
                let mut c = Command::new(&native);
                c.arg(&arg);
                c
            },
            &mut || {
                let mut c = Command::new(&prof);
                c.arg(&arg).env(
                    "PROFCC_OPTIONS",
                    format!("out={}:summary=0", profile.display()),
                );
                c
            },
        )?;
        let mb = std::fs::metadata(&profile).map_or(0.0, |m| m.len() as f64 / 1e6);
        let ratio = row.inst / row.base;
        out.push_str(&format!(
            "| {n} | {:.2} | {:.2} | {ratio:.2}x{} | {:.1} | {:.1} | {mb:.1} |\n",
            row.base,
            row.inst,
            if ratio <= CHURN_TARGET { "" } else { " (over)" },
            row.base_rss as f64 / 1024.0,
            row.inst_rss as f64 / 1024.0,
        ));
    }
    out.push('\n');
    Ok(())
}
