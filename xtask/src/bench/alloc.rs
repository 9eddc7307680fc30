//! The `alloc` part of `cargo xtask bench`: what the allocation path costs (issue 12, "make
//! the path cheap first"). Two malloc-heavy kernels (bench/kernels/alloc_pairs.c: malloc(40)/
//! free pairs; alloc_larson.c: larson-like churn of random sizes with cross-thread frees) and
//! three programs (alloc_cxx_map.cpp: C++ strings, vectors and an unordered_map built and
//! erased; the sqlite driver, tests/fixtures/real/sqlite_driver.c, 100,000 rows per thread;
//! bench/programs/lua_threads.c: the Lua 5.4 interpreter from lua-src, one state per thread,
//! allocating through realloc),
//! with one and two threads, under glibc and under Debian's jemalloc (`LD_PRELOAD`), each built with
//! clang-22 and with profcc at -O2 twice: the default build (sharing) and `PROFCC_INSTRUMENT=none`
//! (the allocation path alone: no access hooks), the latter also run with
//! `PROFCC_OPTIONS=alloc_sample=524288:alloc_ops=0` (one allocation recorded per 512 KiB on
//! average, the sites estimated; the totals stay exact; the allocator analysis off). Debian's heaptrack runs the native build
//! side by side (it unwinds every call and streams it to a file: the anchor of issue 12,
//! 14x and 38x on malloc/free pairs). Each round runs every build once; `runs` rounds,
//! medians. The allocator analysis runs on the exact path (`alloc_ops=1`) and on the sampled
//! path, where it is on by default (`alloc_sample=524288` alone: what a user gets).
//! Target (issue 12, the allocator analysis): at most 1.25x geomean over every row;
//! peak RSS at most 1.5x native + 64 MiB. The programs' own geomean is printed beside it.

use super::{measure, median};
use crate::run as sh;
use std::path::Path;
use std::process::Command;

const GEOMEAN_TARGET: f64 = 1.25;
const RSS_FACTOR: f64 = 1.5;
const RSS_PLUS_MIB: f64 = 64.0;
/// The programs: (name, sources relative to the root, in sqlite's directory (`SQLITE/`) or
/// every library source of Lua's (`LUA/*`), C++?, extra arguments after the thread count).
/// Two kernels, then three malloc-heavy programs (`KERNELS` rows first).
const PROGRAMS: &[(&str, &[&str], bool, &[&str])] = &[
    ("alloc_pairs", &["bench/kernels/alloc_pairs.c"], false, &[]),
    (
        "alloc_larson",
        &["bench/kernels/alloc_larson.c"],
        false,
        &[],
    ),
    (
        "alloc_cxx_map",
        &["bench/kernels/alloc_cxx_map.cpp"],
        true,
        &[],
    ),
    (
        "sqlite_driver",
        &["tests/fixtures/real/sqlite_driver.c", "SQLITE/sqlite3.c"],
        false,
        &["100000"],
    ),
    (
        "lua_threads",
        &["bench/programs/lua_threads.c", "LUA/*"],
        false,
        &[],
    ),
];
/// How many of `PROGRAMS` are kernels (the rest are programs).
const KERNELS: usize = 2;
const THREADS: &[&str] = &["1", "2"];
/// (name, library to preload; empty: the system's glibc).
const ALLOCATORS: &[(&str, &str)] = &[
    ("glibc", ""),
    ("jemalloc", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"),
];
/// The builds: `PROFCC_INSTRUMENT` values.
const MODES: [&str; 2] = ["sharing", "none"];
/// The profiled runs, in table order: (build in `MODES`, extra run-time options); the first
/// two record every allocation (`alloc_sample=0`; the default samples at 65536). The last
/// two are the allocator analysis on the exact path (`alloc_ops=1`) and on the sampled path
/// (by default there), with event sampling off (`alloc_events=0`, the default on the sampled
/// path): the target is for that setting.
const RUNS: [(usize, &str); 5] = [
    (0, ":alloc_sample=0"),
    (1, ":alloc_sample=0"),
    (1, ":alloc_sample=524288:alloc_ops=0"),
    (1, ":alloc_sample=0:alloc_ops=1:alloc_events=0"),
    (1, ":alloc_sample=524288"),
];

pub fn run(
    root: &Path,
    profcc: &Path,
    work: &Path,
    runs: usize,
    out: &mut String,
) -> Result<(), String> {
    let heaptrack = which::which("heaptrack").ok();
    out.push_str(
        "| kernel | threads | allocator | native s | profcc (sharing) | profcc (none) | profcc (none, sampled) | analysis (none) | analysis (none, sampled) | heaptrack | native RSS MiB | profcc RSS MiB |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let (mut logs, mut n, mut rss_ok) = ([0.0f64; RUNS.len()], 0.0f64, true);
    let (mut prog_log, mut prog_n) = (0.0f64, 0.0f64);
    for (index, (k, sources, cxx, extra)) in PROGRAMS.iter().enumerate() {
        let (srcs, flags) = super::program_sources(root, sources)?;
        let build = |cc: &Path, mode: Option<&str>, out: &Path| {
            let mut c = Command::new(cc);
            if let Some(m) = mode {
                c.env("PROFCC_INSTRUMENT", m);
            }
            sh(c.args(&flags)
                .args(&srcs)
                .arg("-o")
                .arg(out)
                .args(["-lm", "-ldl"]))
        };
        let native = work.join(format!("{k}.native"));
        let clang = if *cxx { "clang++-22" } else { "clang-22" };
        build(Path::new(clang), None, &native)?;
        let driver = if *cxx {
            profcc.with_file_name("profcc++")
        } else {
            profcc.to_path_buf()
        };
        let mut builds = Vec::new();
        for mode in MODES {
            let b = work.join(format!("{k}.{mode}"));
            build(&driver, Some(mode), &b)?;
            builds.push(b);
        }
        for t in THREADS {
            for (alloc, preload) in ALLOCATORS {
                if !preload.is_empty() && !Path::new(preload).exists() {
                    out.push_str(&format!(
                        "| {k} | {t} | {alloc} | (not installed) ||||||||\n"
                    ));
                    continue;
                }
                let cmd = |exe: &Path, opts: &str| {
                    let mut c = Command::new(exe);
                    c.arg(t)
                        .args(*extra)
                        .env("PROFCC_OPTIONS", format!("write=0:summary=0{opts}"));
                    if !preload.is_empty() {
                        c.env("LD_PRELOAD", preload);
                    }
                    c
                };
                let (mut base, mut inst, mut ht) =
                    (Vec::new(), vec![Vec::new(); RUNS.len()], Vec::new());
                let (mut base_rss, mut inst_rss) = (0i64, 0i64);
                for _ in 0..runs {
                    let s = measure(&mut cmd(&native, ""))?;
                    base.push(s.secs);
                    base_rss = base_rss.max(s.max_rss_kib);
                    for (m, (build, opts)) in RUNS.iter().enumerate() {
                        let s = measure(&mut cmd(&builds[*build], opts))?;
                        inst[m].push(s.secs);
                        if m == 0 {
                            inst_rss = inst_rss.max(s.max_rss_kib);
                        }
                    }
                    if let Some(h) = &heaptrack {
                        let data = work.join(format!("{k}.heaptrack"));
                        let mut c = Command::new(h);
                        c.arg("-o").arg(&data).arg(&native).arg(t).args(*extra);
                        if !preload.is_empty() {
                            c.env("LD_PRELOAD", preload);
                        }
                        ht.push(measure(&mut c)?.secs);
                        for e in std::fs::read_dir(work)
                            .map_err(|e| e.to_string())?
                            .flatten()
                        {
                            if e.file_name()
                                .to_string_lossy()
                                .starts_with(&format!("{k}.heaptrack"))
                            {
                                let _ = std::fs::remove_file(e.path());
                            }
                        }
                    }
                }
                let b = median(base);
                let r: Vec<f64> = inst.into_iter().map(|v| median(v) / b).collect();
                let h = if ht.is_empty() {
                    "-".to_string()
                } else {
                    format!("{:.2}x", median(ht) / b)
                };
                for (l, x) in logs.iter_mut().zip(&r) {
                    *l += x.ln();
                }
                n += 1.0;
                if index >= KERNELS {
                    prog_log += r[4].ln();
                    prog_n += 1.0;
                }
                rss_ok &= inst_rss as f64 / 1024.0
                    <= base_rss as f64 / 1024.0 * RSS_FACTOR + RSS_PLUS_MIB;
                eprintln!(
                    "bench: alloc {k} {t} {alloc}: native {b:.3}s, sharing {:.2}x, none {:.2}x, sampled {:.2}x, analysis {:.2}x, analysis sampled {:.2}x, heaptrack {h}",
                    r[0], r[1], r[2], r[3], r[4]
                );
                out.push_str(&format!(
                    "| {k} | {t} | {alloc} | {b:.3} | {:.2}x | {:.2}x | {:.2}x | {:.2}x | {:.2}x | {h} | {:.1} | {:.1} |\n",
                    r[0],
                    r[1],
                    r[2],
                    r[3],
                    r[4],
                    base_rss as f64 / 1024.0,
                    inst_rss as f64 / 1024.0
                ));
            }
        }
    }
    let g: Vec<f64> = logs.iter().map(|l| (l / n.max(1.0)).exp()).collect();
    let met = |ok: bool| if ok { "met" } else { "MISSED" };
    out.push_str(&format!(
        "\nGeomean: profcc (sharing) {:.2}x, profcc (none) {:.2}x, sampled {:.2}x, allocator analysis {:.2}x, analysis on the sampled path {:.2}x (the programs' rows alone: {:.2}x); the allocator analysis's target is ≤ {GEOMEAN_TARGET}x over every row: {} (on the sampled path); peak RSS within {RSS_FACTOR}x native + {RSS_PLUS_MIB} MiB: {}\n\n",
        g[0],
        g[1],
        g[2],
        g[3],
        g[4],
        (prog_log / prog_n.max(1.0)).exp(),
        met(g[4] <= GEOMEAN_TARGET),
        met(rss_ok)
    ));
    Ok(())
}
