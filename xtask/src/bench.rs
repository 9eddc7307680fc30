//! `cargo xtask bench [--runs N] [--skip-build-time] [--only PART,...]`: overhead ratios
//! measured side by side in one run (native and instrumented alternate), median of N runs
//! (default 5).
//!
//! Parts (all by default): `build` (sqlite3.c compile time and sqlite3.o code size),
//! `kernels` (single-threaded kernels, kmeans_loop counting only and with sharing, and the
//! sqlite driver), `predict` (the predicted gain of every false-sharing kernel against its
//! padded twin, `bench/predict.rs`), `sharing` (multithreaded kernels: cache-line sharing
//! analysis overhead, RSS, findings, and the `fs_sample` table; see `bench/sharing.rs`),
//! `numa` (the NUMA page check alone and with the sharing checks on the sharing kernels and
//! two NUMA kernels, `bench/numa.rs`), `alloc` (the allocation path on malloc-heavy kernels,
//! one and two threads, glibc and jemalloc, with Debian's heaptrack side by side,
//! `bench/alloc.rs`), `regions` (the ROI-only build on region kernels and a sqlite3 driver,
//! every execution counted and at 1% sampling, and its build time, `bench/regions.rs`), `merge`
//! (`profcc report` of 10, 100 and 1,000 synthetic MPI rank profiles: MB/s and peak RSS,
//! `bench/merge.rs`), `default` (what the default build costs, issue 46: thread churn,
//! `bench/default.rs`).
//!
//! Prints Markdown tables and writes them to target/bench/results.md.

use crate::bin_dir;
use crate::run as sh;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Directory of a crate's sources, from `cargo metadata` (the crates in `realsrc/`).
pub fn crate_dir(root: &Path, name: &str) -> Result<PathBuf, String> {
    let out = Command::new(env!("CARGO"))
        .current_dir(root)
        .args(["metadata", "--format-version", "1"])
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    for p in v["packages"].as_array().into_iter().flatten() {
        if p["name"] == name {
            let manifest = PathBuf::from(p["manifest_path"].as_str().unwrap_or_default());
            return Ok(manifest.parent().unwrap().to_path_buf());
        }
    }
    Err(format!("crate {name} not found in cargo metadata"))
}

mod alloc;
mod default;
mod merge;
mod numa;
mod predict;
mod regions;
mod sharing;

pub(crate) struct Sample {
    pub secs: f64,
    /// User + system CPU time of the process (all its threads).
    pub cpu_secs: f64,
    pub max_rss_kib: i64,
}

/// The peak resident set of a running process (`VmHWM`, KiB), None once it is gone.
fn vm_hwm_kib(pid: i32) -> Option<i64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// Run a command to completion, returning wall time, CPU time (wait4) and peak RSS.
///
/// Peak RSS is the largest `VmHWM` read from /proc every millisecond while the program runs,
/// not wait4's `ru_maxrss`: a child spawned (vfork + exec) from this process starts its
/// `ru_maxrss` at this process's own resident set (the kernel keeps the pre-exec address
/// space's high-water mark), which made every kernel's peak the same 65-68 MiB. A program
/// that ends before the first read reports 0.
pub(crate) fn measure(cmd: &mut Command) -> Result<Sample, String> {
    let start = Instant::now();
    let child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("{cmd:?}: {e}"))?;
    let pid = child.id() as i32;
    let mut status = 0;
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let mut hwm = 0i64;
    let r = loop {
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r != 0 {
            break r;
        }
        if let Some(k) = vm_hwm_kib(pid) {
            hwm = hwm.max(k);
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    let secs = start.elapsed().as_secs_f64();
    if r != pid || !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err(format!("{cmd:?} failed (status {status})"));
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Ok(Sample {
        secs,
        cpu_secs: tv(ru.ru_utime) + tv(ru.ru_stime),
        max_rss_kib: hwm,
    })
}

/// `profcc report --format json --min-speedup 0 [extra] FILE`: every finding, also those
/// below the listing threshold (the tables compare predictions).
pub(crate) fn report_json(
    profcc: &Path,
    profile: &Path,
    extra: &[&str],
) -> Result<serde_json::Value, String> {
    let o = Command::new(profcc)
        .args(["report", "--format", "json", "--min-speedup", "0"])
        .args(extra)
        .arg(profile)
        .output()
        .map_err(|e| format!("profcc report: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "profcc report {} failed: {}",
            profile.display(),
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    serde_json::from_slice(&o.stdout)
        .map_err(|e| format!("profcc report {}: {e}", profile.display()))
}

/// A program's sources (each a path from the root, `SQLITE/FILE` in the sqlite amalgamation's
/// directory, `LUA/*`: every library source of Lua's, or `EXPAT/*`: xmlwf and expat's library,
/// whose `-I` for `lib/` is among the flags) and the flags they build with
/// (`-O2 -g -pthread`, the two source directories, their defines).
pub(crate) fn program_sources(
    root: &Path,
    sources: &[&str],
) -> Result<(Vec<PathBuf>, Vec<String>), String> {
    let sqlite = crate_dir(root, "libsqlite3-sys")?.join("sqlite3");
    let lua = crate_dir(root, "lua-src")?.join("lua-5.4.8");
    let mut srcs: Vec<PathBuf> = Vec::new();
    for s in sources {
        if let Some(f) = s.strip_prefix("SQLITE/") {
            srcs.push(sqlite.join(f));
        } else if *s == "EXPAT/*" {
            // xmlwf and the library it parses with (the flags name the configuration).
            let expat = crate_dir(root, "expat-sys")?.join("expat");
            for f in [
                "xmlwf/xmlwf.c",
                "xmlwf/xmlfile.c",
                "xmlwf/codepage.c",
                "xmlwf/unixfilemap.c",
                "lib/xmlparse.c",
                "lib/xmlrole.c",
                "lib/xmltok.c",
            ] {
                srcs.push(expat.join(f));
            }
        } else if *s == "LUA/*" {
            let mut lib: Vec<_> = std::fs::read_dir(&lua)
                .map_err(|e| format!("{}: {e}", lua.display()))?
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "c"))
                .filter(|p| !p.ends_with("lua.c") && !p.ends_with("luac.c"))
                .collect();
            lib.sort();
            srcs.extend(lib);
        } else {
            srcs.push(root.join(s));
        }
    }
    let flags = [
        "-O2",
        "-g",
        "-pthread",
        "-DSQLITE_OMIT_LOAD_EXTENSION",
        "-DLUA_USE_LINUX",
    ]
    .iter()
    .map(|f| f.to_string())
    .chain(["-I".into(), sqlite.display().to_string()])
    .chain(["-I".into(), lua.display().to_string()])
    .chain([
        "-I".into(),
        crate_dir(root, "expat-sys")?
            .join("expat/lib")
            .display()
            .to_string(),
    ])
    .collect();
    Ok((srcs, flags))
}

pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

pub(crate) struct Row {
    name: String,
    base: f64,
    inst: f64,
    base_rss: i64,
    inst_rss: i64,
}

/// Alternate base and instrumented runs `runs` times; medians.
pub(crate) fn side_by_side(
    name: &str,
    runs: usize,
    base: &mut dyn FnMut() -> Command,
    inst: &mut dyn FnMut() -> Command,
) -> Result<Row, String> {
    let (mut b, mut i, mut brss, mut irss) = (Vec::new(), Vec::new(), 0, 0);
    for _ in 0..runs {
        let s = measure(&mut base())?;
        b.push(s.secs);
        brss = brss.max(s.max_rss_kib);
        let s = measure(&mut inst())?;
        i.push(s.secs);
        irss = irss.max(s.max_rss_kib);
    }
    let row = Row {
        name: name.into(),
        base: median(b),
        inst: median(i),
        base_rss: brss,
        inst_rss: irss,
    };
    eprintln!(
        "bench: {name}: {:.3}s vs {:.3}s ({:.2}x)",
        row.base,
        row.inst,
        row.inst / row.base
    );
    Ok(row)
}

/// The benchmark's parts, in the order they run.
const PARTS: &[&str] = &[
    "build", "kernels", "predict", "sharing", "numa", "alloc", "regions", "merge", "default",
];

pub fn run(root: &Path, args: &[String]) -> Result<(), String> {
    let mut runs = 5usize;
    let mut parts: Vec<&str> = PARTS.to_vec();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--runs" => {
                runs = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--runs takes a number >= 1")?
            }
            "--skip-build-time" => parts.retain(|p| *p != "build"),
            "--only" => {
                let list = it.next().ok_or("--only takes a list of parts")?;
                let mut only = Vec::new();
                for p in list.split(',').filter(|p| !p.is_empty()) {
                    let Some(&known) = PARTS.iter().find(|k| **k == p) else {
                        return Err(format!(
                            "unknown bench part {p}; valid: {}",
                            PARTS.join(", ")
                        ));
                    };
                    only.push(known);
                }
                parts.retain(|p| only.contains(p));
            }
            other => {
                return Err(format!(
                    "unknown bench option {other}; valid: --runs N, --skip-build-time, --only PART[,PART] (parts: {})",
                    PARTS.join(", ")
                ))
            }
        }
    }
    let work = root.join("target/bench");
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let profcc = bin_dir().join("profcc");
    let mut out = String::new();
    let cmdline = std::iter::once("cargo xtask bench".to_string())
        .chain(args.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ");
    out.push_str(&format!(
        "Command: `{cmdline}`; medians of {runs} alternating runs, 2-core machine.\n\n"
    ));

    if parts.contains(&"build") {
        let sqlite = crate_dir(root, "libsqlite3-sys")?.join("sqlite3");
        build_time(&profcc, &sqlite, &work, runs, &mut out)?;
    }
    if parts.contains(&"kernels") {
        let sqlite = crate_dir(root, "libsqlite3-sys")?.join("sqlite3");
        kernels(root, &profcc, &sqlite, &work, runs, &mut out)?;
    }
    if parts.contains(&"predict") {
        predict::run(root, &profcc, &work, runs, &mut out)?;
    }
    if parts.contains(&"sharing") {
        sharing::run(root, &profcc, &work, runs, &mut out)?;
    }
    if parts.contains(&"numa") {
        numa::run(root, &profcc, &work, runs, &mut out)?;
    }
    if parts.contains(&"alloc") {
        alloc::run(root, &profcc, &work, runs, &mut out)?;
    }
    if parts.contains(&"regions") {
        regions::run(root, &profcc, &work, runs, &mut out)?;
    }
    if parts.contains(&"merge") {
        merge::run(&profcc, &work, runs, &mut out)?;
    }
    if parts.contains(&"default") {
        default::run(root, &profcc, &work, runs, &mut out)?;
    }
    println!("{out}");
    std::fs::write(work.join("results.md"), &out).map_err(|e| e.to_string())?;
    Ok(())
}

/// sqlite3.c compile time, clang-22 vs profcc.
fn build_time(
    profcc: &Path,
    sqlite: &Path,
    work: &Path,
    runs: usize,
    out: &mut String,
) -> Result<(), String> {
    let src = sqlite.join("sqlite3.c");
    out.push_str("| build | clang-22 s | profcc s | ratio | target |\n|---|---|---|---|---|\n");
    // The default (sharing hooks) and counting only, each side by side with clang.
    for (mode, label, target) in [
        (
            "sharing",
            "sqlite3.c -O2 -c (default: sharing hooks)",
            "≤ 1.6x",
        ),
        (
            "accesses",
            "sqlite3.c -O2 -c (PROFCC_INSTRUMENT=accesses)",
            "≤ 1.6x",
        ),
    ] {
        let row = side_by_side(
            label,
            runs,
            &mut || {
                let mut c = Command::new("clang-22");
                c.args(["-O2", "-c"])
                    .arg(&src)
                    .arg("-o")
                    .arg(work.join("sqlite3.native.o"));
                c
            },
            &mut || {
                let mut c = Command::new(profcc);
                c.args(["-O2", "-c"])
                    .arg(&src)
                    .arg("-o")
                    .arg(work.join("sqlite3.profcc.o"))
                    .env("PROFCC_INSTRUMENT", mode);
                c
            },
        )?;
        out.push_str(&format!(
            "| {} | {:.2} | {:.2} | {:.2}x | {target} |\n",
            row.name,
            row.base,
            row.inst,
            row.inst / row.base
        ));
    }
    out.push('\n');
    code_size(profcc, &src, work, out)?;
    Ok(())
}

/// Code size of sqlite3.o, clang-22 vs profcc (default instrumentation), both with
/// `-O2 -c -gline-tables-only -fno-omit-frame-pointer`: `size`'s text (every read-only
/// allocated section: code, read-only data such as the site table, unwind tables) and the
/// .text section alone.
fn code_size(profcc: &Path, src: &Path, work: &Path, out: &mut String) -> Result<(), String> {
    let flags = ["-O2", "-c", "-gline-tables-only", "-fno-omit-frame-pointer"];
    let native = work.join("sqlite3.size.native.o");
    let inst = work.join("sqlite3.size.profcc.o");
    sh(Command::new("clang-22")
        .args(flags)
        .arg(src)
        .arg("-o")
        .arg(&native))?;
    sh(Command::new(profcc)
        .args(flags)
        .arg(src)
        .arg("-o")
        .arg(&inst))?;
    let (nt, ns) = (size_text(&native)?, section_size(&native, ".text")?);
    let (it, is) = (size_text(&inst)?, section_size(&inst, ".text")?);
    out.push_str(&format!(
        "| sqlite3.o code ({}) | clang-22 bytes | profcc bytes | ratio | target |\n|---|---|---|---|---|\n",
        flags.join(" ")
    ));
    out.push_str(&format!(
        "| `size` text | {nt} | {it} | {:.2}x | ≤ 2x |\n| .text section | {ns} | {is} | {:.2}x | |\n\n",
        it as f64 / nt as f64,
        is as f64 / ns as f64
    ));
    eprintln!(
        "bench: sqlite3.o size text {nt} vs {it} ({:.2}x), .text {ns} vs {is} ({:.2}x)",
        it as f64 / nt as f64,
        is as f64 / ns as f64
    );
    Ok(())
}

/// `size` (Berkeley format): the text column.
fn size_text(obj: &Path) -> Result<u64, String> {
    let o = Command::new("size")
        .arg(obj)
        .output()
        .map_err(|e| format!("size: {e}"))?;
    let text = String::from_utf8_lossy(&o.stdout);
    text.lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("size {}: unexpected output {text}", obj.display()))
}

/// One section's size (`size -A`).
fn section_size(obj: &Path, name: &str) -> Result<u64, String> {
    let o = Command::new("size")
        .arg("-A")
        .arg(obj)
        .output()
        .map_err(|e| format!("size: {e}"))?;
    let text = String::from_utf8_lossy(&o.stdout);
    text.lines()
        .find_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some(name)).then(|| w.next()?.parse().ok())?
        })
        .ok_or_else(|| format!("size -A {}: no {name}", obj.display()))
}

/// Run-time kernels (single-threaded ones, two_threads, the sqlite driver): build each
/// natively and with profcc (default instrumentation), run side by side.
fn kernels(
    root: &Path,
    profcc: &Path,
    sqlite: &Path,
    work: &Path,
    runs: usize,
    out: &mut String,
) -> Result<(), String> {
    // Run-time kernels: build each natively and with profcc.
    let kernels = root.join("bench/kernels");
    let mut programs: Vec<(String, PathBuf, PathBuf, Vec<String>)> = Vec::new();
    for k in [
        "stream_sum",
        "random_gather",
        "pointer_chase",
        "two_threads",
    ] {
        let src = kernels.join(format!("{k}.c"));
        let native = work.join(format!("{k}.native"));
        let inst = work.join(format!("{k}.profcc"));
        sh(Command::new("clang-22")
            .args(["-O2", "-pthread"])
            .arg(&src)
            .arg("-o")
            .arg(&native))?;
        sh(Command::new(profcc)
            .args(["-O2", "-pthread"])
            .arg(&src)
            .arg("-o")
            .arg(&inst))?;
        programs.push((k.into(), native, inst, vec![]));
    }
    {
        let driver = root.join("tests/fixtures/real/sqlite_driver.c");
        let native = work.join("sqlite_driver.native");
        let inst = work.join("sqlite_driver.profcc");
        let common = ["-O2", "-pthread", "-DSQLITE_OMIT_LOAD_EXTENSION", "-I"];
        sh(Command::new("clang-22")
            .args(common)
            .arg(sqlite)
            .arg(&driver)
            .arg(sqlite.join("sqlite3.c"))
            .arg("-o")
            .arg(&native))?;
        sh(Command::new(profcc)
            .args(common)
            .arg(sqlite)
            .arg(&driver)
            .arg(sqlite.join("sqlite3.c"))
            .arg("-o")
            .arg(&inst))?;
        programs.push((
            "sqlite_driver 4 100000".into(),
            native,
            inst,
            vec!["4".into(), "100000".into()],
        ));
    }
    // kmeans_loop: a 3-iteration inner loop inside loops over points and clusters, built
    // counting only and with the default sharing checks (targets 1.3x and 3x).
    let kmeans_rows = {
        let src = kernels.join("kmeans_loop.c");
        let native = work.join("kmeans_loop.native");
        sh(Command::new("clang-22")
            .arg("-O2")
            .arg(&src)
            .arg("-o")
            .arg(&native))?;
        let mut rows = String::new();
        for (mode, target) in [("accesses", "≤ 1.3x"), ("sharing", "≤ 3x")] {
            let inst = work.join(format!("kmeans_loop.{mode}"));
            sh(Command::new(profcc)
                .arg("-O2")
                .arg(&src)
                .arg("-o")
                .arg(&inst)
                .env("PROFCC_INSTRUMENT", mode))?;
            let opts = format!("out={}/bench.%e.%p.json:summary=0", work.display());
            let row = side_by_side(
                &format!("kmeans_loop (PROFCC_INSTRUMENT={mode})"),
                runs,
                &mut || Command::new(&native),
                &mut || {
                    let mut c = Command::new(&inst);
                    c.env("PROFCC_OPTIONS", &opts);
                    c
                },
            )?;
            rows.push_str(&format!(
                "| {} | {:.3} | {:.3} | {:.2}x | {target} |\n",
                row.name,
                row.base,
                row.inst,
                row.inst / row.base
            ));
        }
        rows
    };
    out.push_str("| short loops | native s | profcc s | ratio | target |\n|---|---|---|---|---|\n");
    out.push_str(&kmeans_rows);
    out.push('\n');
    out.push_str("| kernel | native s | profcc s | ratio | native RSS MiB | profcc RSS MiB | RSS limit (1.5x + 64) |\n");
    out.push_str("|---|---|---|---|---|---|---|\n");
    let mut logsum = 0.0;
    let opts = format!("out={}/bench.%e.%p.json:summary=0", work.display());
    for (name, native, inst, args) in &programs {
        let row = side_by_side(
            name,
            runs,
            &mut || {
                let mut c = Command::new(native);
                c.args(args);
                c
            },
            &mut || {
                let mut c = Command::new(inst);
                c.args(args).env("PROFCC_OPTIONS", &opts);
                c
            },
        )?;
        logsum += (row.inst / row.base).ln();
        let limit = row.base_rss as f64 / 1024.0 * 1.5 + 64.0;
        out.push_str(&format!(
            "| {} | {:.3} | {:.3} | {:.2}x | {:.1} | {:.1} | {:.1} {} |\n",
            row.name,
            row.base,
            row.inst,
            row.inst / row.base,
            row.base_rss as f64 / 1024.0,
            row.inst_rss as f64 / 1024.0,
            limit,
            if (row.inst_rss as f64 / 1024.0) <= limit {
                "ok"
            } else {
                "OVER"
            }
        ));
    }
    let geo = (logsum / programs.len() as f64).exp();
    let mode = match std::env::var("PROFCC_INSTRUMENT") {
        Ok(v) if !v.is_empty() => format!("PROFCC_INSTRUMENT={v}"),
        _ => "PROFCC_INSTRUMENT unset: the driver's default".to_string(),
    };
    out.push_str(&format!(
        "\nGeomean run-time ratio ({mode}): {geo:.2}x (target ≤ 2x)\n\n"
    ));
    for f in std::fs::read_dir(work).map_err(|e| e.to_string())? {
        let p = f.map_err(|e| e.to_string())?.path();
        if p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("bench."))
        {
            let _ = std::fs::remove_file(p);
        }
    }
    Ok(())
}
