//! The `merge` part of `cargo xtask bench`: `profcc report` of many MPI rank profiles
//! (issue 45: 1,000 ranks merge in bounded memory at 100 MB/s of profile or more, on every
//! core). A small threaded program (`PROGRAM` below: two threads, allocations at several
//! call sites, a shared line) is built with profcc and run once; its profile is the template
//! of 1,000 synthetic rank profiles: each has `rank`, `ranks`, `pid` and `host` of its rank,
//! the template's access sites repeated on distinct lines up to about 530 KB (the size of a
//! real application's profile) with counts that differ by rank, and the template's real
//! allocation stacks, threads, modules and sharing records (so symbolisation and the sharing
//! analysis run as on a real job). `profcc report` (text) of the first 10, 100 and 1,000 is
//! timed: wall and CPU seconds, MB of profile read per second, and the peak RSS. Once for the
//! default build's profiles and once for the NUMA build's (each rank with a NUMA section).

use super::{measure, median};
use crate::run as sh;
use std::path::{Path, PathBuf};
use std::process::Command;

const PROGRAM: &str = r#"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define N 4096
static long counters[4];
static double *bufs[8];
static double *make(int n) { return malloc(n * sizeof(double)); }
static void *work(void *arg) {
  long id = (long)arg;
  double *a = make(N), s = 0;
  for (int r = 0; r < 200; r++)
    for (int i = 0; i < N; i++) { a[i] = i * 0.5 + r; s += a[i]; counters[id]++; }
  bufs[id] = a;
  return (void *)(long)s;
}
int main(void) {
  pthread_t t[2];
  for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, work, (void *)i);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  for (int i = 2; i < 8; i++) bufs[i] = calloc(64 * i, 8);
  char *text = malloc(100);
  snprintf(text, 100, "%ld", counters[0] + counters[1]);
  puts(text);
  for (int i = 0; i < 8; i++) free(bufs[i]);
  free(text);
  return 0;
}
"#;

/// Rank counts measured (the profiles of ranks 0..n).
const RANKS: &[usize] = &[10, 100, 1000];
/// About the size of each rank profile: the template's access sites are repeated (each copy
/// on its own lines) until the profile is about this large (the size the issue measured).
const PROFILE_BYTES: usize = 530_000;
/// Target (issue 45).
const TARGET_MB_S: f64 = 100.0;

/// The builds whose profiles are merged: (name in the table, `PROFCC_INSTRUMENT`, run-time
/// options). The NUMA build's profiles carry a NUMA section per rank, which the report turns
/// into that rank's NUMA part as it merges it.
const BUILDS: &[(&str, &str, &str)] = &[
    ("default", "", ""),
    (
        "NUMA (`sharing,numa`, `numa=emulate`)",
        "sharing,numa",
        "numa=emulate",
    ),
];

pub fn run(profcc: &Path, work: &Path, runs: usize, out: &mut String) -> Result<(), String> {
    out.push_str(
        "| build | ranks | MB of profile | s | CPU s | MB/s | cores used | peak RSS MiB | target |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut sizes = Vec::new();
    for &(build, instrument, options) in BUILDS {
        let dir = work.join("merge");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let src = dir.join("ranks.c");
        std::fs::write(&src, PROGRAM).map_err(|e| e.to_string())?;
        let exe = dir.join("ranks");
        let mut cc = Command::new(profcc);
        if !instrument.is_empty() {
            cc.env("PROFCC_INSTRUMENT", instrument);
        }
        sh(cc
            .args(["-O1", "-g", "-pthread"])
            .arg(&src)
            .arg("-o")
            .arg(&exe))?;
        let template = dir.join("template.json");
        sh(Command::new(&exe)
            .env(
                "PROFCC_OPTIONS",
                format!("out={}:summary=0:{options}", template.display()),
            )
            .stdout(std::process::Stdio::null()))?;
        let max = *RANKS.iter().max().unwrap();
        let files = synthesize(&template, &dir, max)?;
        for &n in RANKS {
            let paths = &files[..n];
            let bytes: u64 = paths
                .iter()
                .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
                .sum();
            let mb = bytes as f64 / 1e6;
            let (mut secs, mut cpu, mut rss) = (Vec::new(), Vec::new(), 0i64);
            for _ in 0..runs {
                let s = measure(Command::new(profcc).arg("report").args(paths))?;
                secs.push(s.secs);
                cpu.push(s.cpu_secs);
                rss = rss.max(s.max_rss_kib);
            }
            let (s, c) = (median(secs), median(cpu));
            eprintln!(
                "bench: merge {n} ranks ({build}): {mb:.1} MB in {s:.2} s ({:.0} MB/s), peak RSS {:.0} MiB",
                mb / s,
                rss as f64 / 1024.0
            );
            out.push_str(&format!(
                "| {build} | {n} | {mb:.1} | {s:.2} | {c:.2} | {:.0} | {:.2} | {:.0} | ≥ {TARGET_MB_S:.0} MB/s |\n",
                mb / s,
                c / s,
                rss as f64 / 1024.0
            ));
        }
        sizes.push(format!(
            "{build} {}",
            std::fs::metadata(&files[0]).map_or(0, |m| m.len())
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }
    out.push_str(&format!(
        "\n(`profcc report` of rank profiles of about {} bytes each ({}): the template's access sites repeated; medians of {runs} runs)\n\n",
        PROFILE_BYTES,
        sizes.join(", ")
    ));
    Ok(())
}

/// Write `n` rank profiles made from `template` into `dir`: `prof.R.json` for rank R.
fn synthesize(template: &Path, dir: &Path, n: usize) -> Result<Vec<PathBuf>, String> {
    let text = std::fs::read(template).map_err(|e| format!("{}: {e}", template.display()))?;
    let base: serde_json::Value = serde_json::from_slice(&text).map_err(|e| e.to_string())?;
    let sites = base["sites"]
        .as_array()
        .filter(|s| !s.is_empty())
        .ok_or("the template profile has no access sites")?
        .clone();
    let site_bytes = serde_json::to_vec(&sites).map_or(1, |v| v.len().max(1));
    let copies = (PROFILE_BYTES.saturating_sub(text.len()) / site_bytes).max(1);
    let mut files = Vec::with_capacity(n);
    for r in 0..n {
        let mut p = base.clone();
        let scale = 1 + (r % 7) as u64;
        let mut all = Vec::with_capacity(sites.len() * copies);
        let mut accesses = 0u64;
        for copy in 0..copies {
            for s in &sites {
                let mut s = s.clone();
                let line = s["line"].as_u64().unwrap_or(0) + 1000 * copy as u64;
                let count = s["count"].as_u64().unwrap_or(0) * scale + r as u64;
                let size = s["size"].as_u64().unwrap_or(0).max(1);
                s["line"] = line.into();
                s["count"] = count.into();
                s["bytes"] = (count * size).into();
                accesses += count;
                all.push(s);
            }
        }
        p["sites"] = all.into();
        p["totals"]["accesses"] = accesses.into();
        p["rank"] = r.into();
        p["ranks"] = n.into();
        p["pid"] = (100_000 + r).into();
        p["host"] = format!("node{}", r / 32).into();
        p["duration_ns"] = (p["duration_ns"].as_u64().unwrap_or(0) * scale).into();
        let f = dir.join(format!("prof.{r}.json"));
        let bytes = serde_json::to_vec(&p).map_err(|e| e.to_string())?;
        std::fs::write(&f, bytes).map_err(|e| format!("{}: {e}", f.display()))?;
        files.push(f);
    }
    Ok(files)
}
