//! `cargo xtask test --stress [N] [FILTER...]`: are the sharing verdicts and the NUMA counts
//! stable? Every test that asserts a sharing finding (tests/tests/sharing.rs, and the sharing
//! assertions of other test files), every NUMA test (tests/tests/numa.rs) and every allocator
//! analysis test (tests/tests/allocator_analysis.rs): [`SUITES`], runs N
//! times (default 20) while a CPU hog runs on every core, the profiled
//! programs built once (`PROFCC_BUILD_CACHE`, tests/src/lib.rs) and run N times. Prints a table
//! test x (runs that gave the expected verdict / N), keeps the output of every failed run in
//! target/stress/, and fails if any test is below N.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The test binaries (tests/tests/<name>.rs) and, where not all of a file is about sharing,
/// the tests of it that assert sharing findings.
const SUITES: &[(&str, &[&str])] = &[
    ("sharing", &[]),
    // The NUMA counts are exact whatever the load: they must not move under it either.
    ("numa", &[]),
    // The allocator analysis's exact counts and its allocator-induced sharing verdicts.
    ("allocator_analysis", &[]),
    (
        "faithful_lifetimes",
        &[
            "freed_large_block_keeps_its_heap_site",
            "reused_block_carries_no_state_across_lifetimes",
            "block_freed_by_its_writer_starts_afresh_for_the_next_thread",
            "own_reused_neighbouring_blocks_open_no_watch_records",
            "freed_word_does_not_hide_the_next_lifetimes_sharing",
        ],
    ),
    // The sampled path's per-site counts and peak bounds on the malloc-heavy kernels.
    (
        "alloc",
        &["malloc_heavy_kernels_count_exactly_under_sampling"],
    ),
];

/// Runs of each test when `--stress` has no count.
const DEFAULT_RUNS: usize = 20;

/// The CPU hogs: one busy process per core (`yes > /dev/null`), killed when dropped.
struct Hogs(Vec<Child>);

impl Hogs {
    fn start() -> Result<Hogs, String> {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut hogs = Hogs(Vec::new());
        for _ in 0..n {
            let mut c = Command::new("yes");
            c.stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            // Killed with xtask too, also when xtask itself is killed (no Drop then).
            unsafe {
                use std::os::unix::process::CommandExt;
                c.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                });
            }
            let c = c.spawn().map_err(|e| format!("cannot start `yes`: {e}"))?;
            hogs.0.push(c);
        }
        Ok(hogs)
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

pub fn run(args: &[String]) -> Result<(), String> {
    // `--stress [N] [FILTER...]`: FILTERs (substrings of test names) pick some tests.
    let (count, filters) = match args.first() {
        Some(n) if n.parse::<usize>().is_ok() => (Some(n), &args[1..]),
        _ => (None, args),
    };
    let runs = match count {
        Some(n) => n
            .parse::<usize>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("--stress {n}: expected a positive number of runs"))?,
        None => DEFAULT_RUNS,
    };
    let root = crate::root();
    let out_dir = root.join("target/stress");
    let _ = std::fs::remove_dir_all(&out_dir);
    let cache = out_dir.join("build-cache");
    std::fs::create_dir_all(&cache).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    // Build the test binaries before the hogs start, and run them directly: a change to the
    // sources while the runs go on (another build in this tree) does not mix into them.
    let mut exes = test_binaries(&root)?;
    for exe in exes.values_mut() {
        // A copy: a `cargo test` in this tree while the runs go on rewrites the original.
        let copy = out_dir.join(exe.file_name().unwrap_or_default());
        std::fs::copy(&*exe, &copy).map_err(|e| format!("{}: {e}", copy.display()))?;
        *exe = copy;
    }
    let hogs = Hogs::start()?;
    eprintln!(
        "xtask: {runs} runs of the sharing and NUMA tests under {} CPU hog(s)",
        hogs.0.len()
    );
    // test -> runs that passed, and the names in order of first appearance.
    let mut passed: BTreeMap<String, usize> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let start = std::time::Instant::now();
    for i in 1..=runs {
        for (suite, names) in SUITES {
            let mut c = Command::new(&exes[suite]);
            c.current_dir(root.join("tests"));
            if !names.is_empty() {
                let picked: Vec<&&str> = names
                    .iter()
                    .filter(|n| {
                        filters.is_empty() || filters.iter().any(|f| n.contains(f.as_str()))
                    })
                    .collect();
                if picked.is_empty() {
                    continue;
                }
                c.arg("--exact").args(picked);
            } else {
                c.args(filters);
            }
            c.env("PROFCC_BUILD_CACHE", &cache);
            let out = c
                .output()
                .map_err(|e| format!("cannot run cargo test: {e}"))?;
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let results = results(&text);
            // A filter that names no test of this suite (`numa` picks none of sharing.rs):
            // nothing to count here.
            if results.is_empty() && out.status.success() && !filters.is_empty() {
                continue;
            }
            if results.is_empty() {
                return Err(format!(
                    "run {i} of {suite}: no test results ({}):\n{}{}",
                    out.status,
                    text,
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            for (name, ok) in results {
                let key = format!("{suite}::{name}");
                if !order.contains(&key) {
                    order.push(key.clone());
                }
                let n = passed.entry(key.clone()).or_default();
                if ok {
                    *n += 1;
                } else {
                    let log = out_dir.join(format!("{key}.run{i}.txt"));
                    let _ = std::fs::write(&log, &text);
                    eprintln!("xtask: run {i}: {key} FAILED ({})", log.display());
                }
            }
        }
        eprintln!(
            "xtask: run {i}/{runs} done ({:.0} s)",
            start.elapsed().as_secs_f64()
        );
    }
    drop(hogs);
    let width = order.iter().map(String::len).max().unwrap_or(4);
    println!("| {:width$} | same verdict |", "test");
    println!("|{}|--------------|", "-".repeat(width + 2));
    let mut below = Vec::new();
    for key in &order {
        let n = passed[key];
        println!("| {key:width$} | {:>12} |", format!("{n}/{runs}"));
        if n < runs {
            below.push(format!("{key} ({n}/{runs})"));
        }
    }
    if below.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "verdicts not stable: {} (outputs in {})",
            below.join(", "),
            out_dir.display()
        ))
    }
}

/// The test binary of each of [`SUITES`], built (`cargo test --no-run`).
fn test_binaries(root: &std::path::Path) -> Result<BTreeMap<&'static str, PathBuf>, String> {
    let mut c = Command::new(env!("CARGO"));
    c.current_dir(root).args([
        "test",
        "--release",
        "-p",
        "profcc-tests",
        "--no-run",
        "--message-format=json",
    ]);
    for (suite, _) in SUITES {
        c.args(["--test", suite]);
    }
    let out = c
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo test --no-run: {e}"))?;
    if !out.status.success() {
        return Err(format!("cargo test --no-run failed ({})", out.status));
    }
    let mut exes = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let (Some(name), Some(exe)) = (v["target"]["name"].as_str(), v["executable"].as_str())
        else {
            continue;
        };
        if let Some((suite, _)) = SUITES.iter().find(|(s, _)| *s == name) {
            exes.insert(*suite, PathBuf::from(exe));
        }
    }
    match SUITES.iter().find(|(s, _)| !exes.contains_key(s)) {
        Some((s, _)) => Err(format!("cargo test --no-run built no test binary `{s}`")),
        None => Ok(exes),
    }
}

/// `test NAME ... ok` / `... FAILED` lines of libtest's output.
fn results(stdout: &str) -> Vec<(String, bool)> {
    stdout
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("test ")?;
            let (name, verdict) = rest.rsplit_once(" ... ")?;
            match verdict.trim() {
                "ok" => Some((name.to_string(), true)),
                "FAILED" => Some((name.to_string(), false)),
                _ => None,
            }
        })
        .collect()
}
