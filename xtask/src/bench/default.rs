//! The `default` part of `cargo xtask bench` (issue 46): what the default build (`CC=profcc`,
//! nothing else changed) costs, clang-22 against profcc with the same flags, each run with
//! `PROFCC_OPTIONS=out=FILE` (the profile written and the exit summary printed, as a user
//! gets them), alternating, medians; ThreadSanitizer (`clang-22 -fsanitize=thread`, its
//! reports off) in the same rounds where the program builds with it.
//!
//! - Programs (`PROGRAMS`): the malloc-heavy kernels (target: each at most `MALLOC_TARGET`)
//!   and real programs and their shapes (target: geomean at most `PROGRAM_GEOMEAN`, none above
//!   `PROGRAM_MAX`); for each the exit tail, the share of the wall time after the runtime's
//!   clock stopped (`duration_ns`: the dump and what follows it; target at most `TAIL_MAX`),
//!   and peak RSS against `RSS_FACTOR` x native + `RSS_PLUS_MIB`.
//!   Beside it, the same binary with `EXACT` (every allocation recorded with its stack, as
//!   the default was before allocation sampling became it), in the same rounds.
//! - Thread churn: bench/kernels/thread_churn.c, 10,000, 100,000 and 160,000 threads created
//!   and joined one after another. Target: at most `CHURN_TARGET` at every count (no growth
//!   with the number of threads ever started).

use super::{measure, median, side_by_side, Row};
use crate::run as sh;
use std::path::Path;
use std::process::Command;

const CHURN_TARGET: f64 = 1.5;
const THREADS: [u64; 3] = [10_000, 100_000, 160_000];
const MALLOC_TARGET: f64 = 2.0;
const PROGRAM_GEOMEAN: f64 = 2.5;
const PROGRAM_MAX: f64 = 4.0;
const TAIL_MAX: f64 = 0.05;
const RSS_FACTOR: f64 = 2.0;
const RSS_PLUS_MIB: f64 = 64.0;
/// A ThreadSanitizer run is stopped after this many seconds, and one that fails or is stopped
/// leaves its program's TSan columns saying so: the anchor must not stop the bench (at
/// 44d9091 TSan's Lua build spun in its stack depot's `Put` on every run).
const TSAN_LIMIT_S: u32 = 120;
/// The same build with every allocation recorded (the default samples them: docs/report.md,
/// "Sampling"), in the same rounds.
const EXACT: &str = "alloc_sample=0";

/// One program of the table.
struct Program {
    name: &'static str,
    /// As `super::program_sources` takes them.
    sources: &'static [&'static str],
    cxx: bool,
    /// Flags besides the common ones (`super::program_sources`), for every build.
    flags: &'static [&'static str],
    /// `ROOT/` is the repository, `WORK/` the bench's work directory.
    args: &'static [&'static str],
    env: &'static [(&'static str, &'static str)],
    malloc_heavy: bool,
}

const fn program(name: &'static str, sources: &'static [&'static str]) -> Program {
    Program {
        name,
        sources,
        cxx: false,
        flags: &[],
        args: &[],
        env: &[],
        malloc_heavy: false,
    }
}

/// The list: the malloc-heavy kernels, then real programs and programs of their shapes.
/// The kernels run 2-10 times their own default work (a few tenths of a second natively): at
/// 0.03-0.2 s a kernel's native median moved by up to 2x between two bench runs an hour apart.
/// gapbs and LULESH are not among the crates this repository reaches offline: their shapes
/// stand in (tests/fixtures/faithful/bfs_graph.cpp, an R-MAT graph's OpenMP BFS and pull
/// PageRank as gapbs's `bfs -g 17 -n 3` and `pr -g 17 -n 3`; stencil/stencil.cc, a LULESH-like
/// Sedov blast, single-threaded). expat's `xmlwf` is built from expat-sys's sources on a
/// generated 96 MB document ([`xml_input`]).
const PROGRAMS: &[Program] = &[
    Program {
        args: &["2"],
        flags: &["-DPAIRS=40000000L"],
        malloc_heavy: true,
        ..program("alloc_pairs", &["bench/kernels/alloc_pairs.c"])
    },
    Program {
        args: &["2"],
        flags: &["-DROUNDS=6000000L"],
        malloc_heavy: true,
        ..program("alloc_larson", &["bench/kernels/alloc_larson.c"])
    },
    Program {
        args: &["2"],
        flags: &["-DROUNDS=10000000"],
        malloc_heavy: true,
        ..program(
            "alloc_cache_scratch",
            &["bench/kernels/alloc_cache_scratch.c"],
        )
    },
    Program {
        cxx: true,
        args: &["2"],
        flags: &["-DROUNDS=16"],
        malloc_heavy: true,
        ..program("alloc_cxx_map", &["bench/kernels/alloc_cxx_map.cpp"])
    },
    Program {
        args: &["ROOT/bench/programs/lua_tables.lua"],
        ..program("lua_tables", &["tests/fixtures/real/lua_host.c", "LUA/*"])
    },
    Program {
        args: &["2", "200000"],
        ..program(
            "sqlite_driver",
            &["tests/fixtures/real/sqlite_driver.c", "SQLITE/sqlite3.c"],
        )
    },
    Program {
        args: &["WORK/document.xml"],
        flags: &["-DHAVE_EXPAT_CONFIG_H", "-IWORK"],
        ..program("xmlwf", &["EXPAT/*"])
    },
    Program {
        cxx: true,
        flags: &["-std=c++17", "-fopenmp"],
        args: &["17", "3"],
        env: &[("OMP_NUM_THREADS", "2")],
        ..program(
            "gapbs_like_bfs (2 threads)",
            &["tests/fixtures/faithful/bfs_graph.cpp"],
        )
    },
    Program {
        cxx: true,
        flags: &["-std=c++17", "-fopenmp"],
        args: &["17", "3", "pr"],
        env: &[("OMP_NUM_THREADS", "2")],
        ..program(
            "gapbs_like_pr (2 threads)",
            &["tests/fixtures/faithful/bfs_graph.cpp"],
        )
    },
    Program {
        cxx: true,
        flags: &["-IWORK"],
        args: &["60", "200"],
        ..program(
            "lulesh_like_stencil",
            &["tests/fixtures/faithful/stencil/stencil.cc"],
        )
    },
    program("histogram", &["bench/kernels/fs_histogram.c"]),
    program(
        "linear_regression",
        &["bench/kernels/fs_linear_regression.c"],
    ),
    program("kmeans", &["bench/kernels/kmeans_loop.c"]),
];

/// expat's configuration for this machine (what its `configure` finds on Debian 12), the
/// stencil's empty `config.h`, and xmlwf's input: a 96 MB catalogue of 450,000 items with
/// attributes, a namespace, an internal entity, character references and CDATA, the same
/// bytes in every run (a fixed linear congruential sequence).
fn xml_input(work: &Path) -> Result<(), String> {
    let w = |name: &str, text: &[u8]| {
        std::fs::write(work.join(name), text).map_err(|e| format!("{name}: {e}"))
    };
    w(
        "expat_config.h",
        b"#define BYTEORDER 1234\n#define HAVE_MEMMOVE 1\n#define HAVE_MMAP 1\n#define HAVE_FCNTL_H 1\n#define HAVE_UNISTD_H 1\n#define HAVE_STDLIB_H 1\n#define HAVE_STRING_H 1\n#define HAVE_GETPAGESIZE 1\n#define XML_CONTEXT_BYTES 1024\n#define XML_DTD 1\n#define XML_NS 1\n",
    )?;
    w("config.h", b"")?;
    let mut x: u64 = 7;
    let mut next = |n: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % n
    };
    let mut doc = String::from(
        "<?xml version=\"1.0\"?>\n<!DOCTYPE catalog [<!ENTITY co \"Example &amp; Co\">]>\n<catalog xmlns:x=\"urn:x\">\n",
    );
    for i in 0..450_000u64 {
        let kind = ["a", "b", "c"][next(3) as usize];
        doc.push_str(&format!(
            "<item id=\"i{i}\" x:kind=\"{kind}\" price=\"{}.{:02}\"><name>Item &co; {i}</name><tags>",
            next(100),
            next(100)
        ));
        for t in 0..1 + next(5) {
            doc.push_str(&format!("<tag n=\"{t}\">t{}</tag>", next(100)));
        }
        doc.push_str(
            "</tags><desc><![CDATA[some <text> here]]> and &#x41;&#66; more</desc></item>\n",
        );
    }
    doc.push_str("</catalog>\n");
    w("document.xml", doc.as_bytes())
}

/// The programs' table.
fn programs(
    root: &Path,
    profcc: &Path,
    work: &Path,
    runs: usize,
    out: &mut String,
) -> Result<(), String> {
    out.push_str(&format!(
        "Default build, programs (malloc-heavy: each ≤ {MALLOC_TARGET}x; the others: geomean ≤ {PROGRAM_GEOMEAN}x, none above {PROGRAM_MAX}x; exit tail ≤ {:.0}%; peak RSS ≤ {RSS_FACTOR}x native + {RSS_PLUS_MIB} MiB); `{EXACT}`: the same binary with that option\n\n| program | native s | profcc s | ratio | {EXACT} ratio | TSan s | TSan ratio | exit tail | native RSS MiB | profcc RSS MiB |\n|---|---|---|---|---|---|---|---|---|---|\n",
        TAIL_MAX * 100.0
    ));
    let (mut log, mut count, mut tsan_log, mut tsan_count) = (0.0f64, 0usize, 0.0f64, 0usize);
    let mut exact_log = 0.0f64;
    xml_input(work)?;
    let paths = |a: &str| {
        a.replace("ROOT/", &format!("{}/", root.display()))
            .replace("WORK", &work.display().to_string())
    };
    for Program {
        name,
        sources,
        cxx,
        flags: extra_flags,
        args,
        env,
        malloc_heavy,
    } in PROGRAMS
    {
        let (srcs, mut flags) = super::program_sources(root, sources)?;
        flags.extend(extra_flags.iter().map(|f| paths(f)));
        let args: Vec<String> = args.iter().map(|a| paths(a)).collect();
        let (cc, pcc) = if *cxx {
            ("clang++-22", profcc.with_file_name("profcc++"))
        } else {
            ("clang-22", profcc.to_path_buf())
        };
        let build = |compiler: &Path, extra: &[&str], exe: &Path| {
            sh(Command::new(compiler)
                .args(&flags)
                .args(extra)
                .args(&srcs)
                .arg("-o")
                .arg(exe)
                .args(["-lm", "-ldl"]))
        };
        let native = work.join(format!("{name}.native"));
        let prof = work.join(format!("{name}.default"));
        let tsan = work.join(format!("{name}.tsan"));
        build(Path::new(cc), &[], &native)?;
        build(&pcc, &[], &prof)?;
        let tsan = build(Path::new(cc), &["-fsanitize=thread"], &tsan)
            .ok()
            .map(|_| tsan);
        let profile = work.join(format!("{name}.profile.json"));
        let (mut b, mut p, mut t, mut tails) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut exact = Vec::new();
        let (mut brss, mut prss) = (0i64, 0i64);
        let mut tsan_failed = false;
        for _ in 0..runs {
            let s = measure(
                Command::new(&native)
                    .args(&args)
                    .envs(env.iter().copied())
                    .stdout(std::process::Stdio::null()),
            )?;
            b.push(s.secs);
            brss = brss.max(s.max_rss_kib);
            let _ = std::fs::remove_file(&profile);
            // The profcc build with PROFCC_OPTIONS=out=PROFILE and `more`.
            let profiled = |more: &str| {
                measure(
                    Command::new(&prof)
                        .args(&args)
                        .envs(env.iter().copied())
                        .stdout(std::process::Stdio::null())
                        .stderr(std::process::Stdio::null())
                        .env("PROFCC_OPTIONS", format!("out={}{more}", profile.display())),
                )
            };
            let s = profiled("")?;
            p.push(s.secs);
            prss = prss.max(s.max_rss_kib);
            let text = std::fs::read_to_string(&profile).map_err(|e| format!("{name}: {e}"))?;
            let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
            let ran = v["duration_ns"].as_f64().unwrap_or(0.0) / 1e9;
            tails.push(((s.secs - ran) / s.secs).max(0.0));
            exact.push(profiled(&format!(":{EXACT}"))?.secs);
            if let (Some(exe), false) = (&tsan, tsan_failed) {
                match measure(
                    Command::new("timeout")
                        .arg(TSAN_LIMIT_S.to_string())
                        .arg(exe)
                        .args(&args)
                        .envs(env.iter().copied())
                        .stdout(std::process::Stdio::null())
                        .stderr(std::process::Stdio::null())
                        .env("TSAN_OPTIONS", "report_bugs=0:exitcode=0"),
                ) {
                    Ok(s) => t.push(s.secs),
                    Err(_) => tsan_failed = true,
                }
            }
        }
        let (b, p, tail) = (median(b), median(p), median(tails));
        let ratio = p / b;
        let exact_ratio = median(exact) / b;
        let target = if *malloc_heavy {
            MALLOC_TARGET
        } else {
            PROGRAM_MAX
        };
        if !malloc_heavy {
            log += ratio.ln();
            exact_log += exact_ratio.ln();
            count += 1;
        }
        let (tsan_s, tsan_ratio) = if tsan_failed {
            (format!("failed or over {TSAN_LIMIT_S} s"), "-".to_string())
        } else if t.is_empty() {
            ("-".to_string(), "-".to_string())
        } else {
            let m = median(t);
            if !malloc_heavy {
                tsan_log += (m / b).ln();
                tsan_count += 1;
            }
            (format!("{m:.2}"), format!("{:.2}x", m / b))
        };
        let rss_over = prss as f64 / 1024.0 > RSS_FACTOR * brss as f64 / 1024.0 + RSS_PLUS_MIB;
        out.push_str(&format!(
            "| {name} | {b:.2} | {p:.2} | {ratio:.2}x{} | {exact_ratio:.2}x | {tsan_s} | {tsan_ratio} | {:.1}%{} | {:.1} | {:.1}{} |\n",
            if ratio > target { " (over)" } else { "" },
            tail * 100.0,
            if tail > TAIL_MAX { " (over)" } else { "" },
            brss as f64 / 1024.0,
            prss as f64 / 1024.0,
            if rss_over { " (over)" } else { "" },
        ));
    }
    if count > 0 {
        let g = (log / count as f64).exp();
        out.push_str(&format!(
            "\nReal programs and their shapes: geomean {g:.2}x (target ≤ {PROGRAM_GEOMEAN}x), with `{EXACT}` {:.2}x; ThreadSanitizer {:.2}x over the {tsan_count} it builds.\n\n",
            (exact_log / count as f64).exp(),
            (tsan_log / tsan_count.max(1) as f64).exp()
        ));
    }
    Ok(())
}

pub fn run(
    root: &Path,
    profcc: &Path,
    work: &Path,
    runs: usize,
    out: &mut String,
) -> Result<(), String> {
    programs(root, profcc, work, runs, out)?;
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
