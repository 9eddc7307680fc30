//! Lifetimes in the runtime core (issue 9, items 2, 9 and 12): modules that are unloaded
//! before exit, threads that come and go, heap blocks freed before exit or reused, fork
//! children, an address-space limit too small for the shadow. Each case is built with
//! clang-22 and with profcc; what a user compares (stdout, exit code) must be the same, and
//! the profile must say what happened. Fixtures: tests/fixtures/faithful/lifetimes/.

use profcc_analysis::sharing::Kind;
use profcc_report::model::{Finding, ObjectKind, Sharing};
use profcc_schema::AccessKind::*;
use profcc_tests::*;
use std::process::Command;

const DIR: &str = "faithful/lifetimes";

fn source(s: &Scratch, name: &str) -> String {
    let text = std::fs::read_to_string(fixture(&format!("{DIR}/{name}"))).unwrap();
    s.write(name, &text);
    text
}

fn clang() -> std::path::PathBuf {
    "clang-22".into()
}

/// `dlclose` of an instrumented library, then a normal exit: the exit dump must not read
/// the unmapped library (it crashed with rc 139 and lost the buffered stdout), and the
/// profile keeps the library's counts.
#[test]
fn dlclose_then_exit_keeps_output_and_the_librarys_counts() {
    let s = Scratch::new();
    let plugin = source(&s, "plugin.c");
    source(&s, "dlclose_main.c");
    s.compile(
        &clang(),
        &["-O1", "-fPIC", "-shared", "plugin.c", "-o", "libnative.so"],
    );
    s.compile(&clang(), &["-O1", "dlclose_main.c", "-o", "native"]);
    s.compile(
        &profcc(),
        &["-O1", "-fPIC", "-shared", "plugin.c", "-o", "libplugin.so"],
    );
    s.compile(&profcc(), &["-O1", "dlclose_main.c", "-o", "profiled"]);
    let native = s.run_plain("native", &["./libnative.so"]);
    assert_eq!(
        String::from_utf8_lossy(&native.stdout),
        "start\nsum 499500\ndlclose 0\n"
    );
    let (out, p) = s.run_profiled("profiled", &["./libplugin.so"], "summary=0");
    assert_same_run("dlopen/dlclose of an instrumented library", &native, &out);
    assert_eq!(
        count_at(&p, "plugin.c", line_of(&plugin, "MARK_STORE"), Write),
        1000,
        "the unloaded library's stores are in the profile"
    );
    // The clang-built library, closed before exit, still names its allocation: the runtime
    // kept where it was mapped when the program closed it (an MPI library's components).
    let (out, _) = s.run_profiled("profiled", &["./libnative.so"], "summary=0");
    assert_same_run("dlopen/dlclose of a clang-built library", &native, &out);
    let r = report(&s.path("profiled.profile.json"), &["--top", "0"]);
    let site = r
        .alloc_sites
        .sites
        .iter()
        .find(|a| a.bytes == 4000)
        .expect("the library's 4000-byte block");
    let top = &site.stack[0];
    assert_eq!(top.function.as_deref(), Some("plugin_work"), "{site:?}");
    assert!(
        top.module
            .as_deref()
            .is_some_and(|m| m.ends_with("libnative.so")),
        "{site:?}"
    );
}

/// VmPeak (kB) that `thread_churn` printed on stderr.
fn vm_peak(out: &std::process::Output) -> u64 {
    let err = String::from_utf8_lossy(&out.stderr);
    err.lines()
        .find_map(|l| l.strip_prefix("VmPeak:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmPeak on stderr:\n{err}"))
}

/// Thread churn: every thread used to keep its counter array (about 80 MB of address space)
/// for the life of the process. Now an ended thread's counts are folded in and its array is
/// reused: the address space does not grow with the number of threads created, the output is
/// the native one, and every thread's count is in the profile.
#[test]
fn thread_churn_runs_in_bounded_address_space() {
    let s = Scratch::new();
    let text = source(&s, "thread_churn.c");
    s.compile(
        &clang(),
        &["-O1", "-pthread", "thread_churn.c", "-o", "native"],
    );
    s.compile(
        &profcc(),
        &["-O1", "-pthread", "thread_churn.c", "-o", "profiled"],
    );
    let line = line_of(&text, "MARK_STORE");
    let (few, many) = (1000u64, 20000u64);
    let native = s.run_plain("native", &[&many.to_string()]);
    let (small, _) = s.run_profiled("profiled", &[&few.to_string()], "summary=0");
    let (large, p) = s.run_profiled("profiled", &[&many.to_string()], "summary=0");
    assert_same_run("20k threads created and joined", &native, &large);
    assert_eq!(count_at(&p, "thread_churn.c", line, Write), many);
    assert_eq!(count_at(&p, "thread_churn.c", line, Read), many);
    // Every thread is listed with its own accesses (one read and one write each).
    let with_accesses = p.threads.iter().filter(|t| t.accesses == 2).count() as u64;
    assert_eq!(with_accesses, many, "threads with their 2 accesses");
    let growth_kb = vm_peak(&large).saturating_sub(vm_peak(&small));
    assert!(
        growth_kb < 4 << 20,
        "VmPeak grew by {growth_kb} kB from {few} to {many} threads (was ~80 MB per thread)"
    );
}

struct Built {
    s: Scratch,
    text: String,
}

impl Built {
    /// heap_lifetimes.c's `mode` profiled with `options`: its stdout and exit code are the
    /// native build's (`what` says what the mode does), and its report.
    fn profiled(&self, mode: &str, options: &str, what: &str) -> profcc_report::Report {
        let native = self.s.run_plain("native", &[mode]);
        let (out, _) = self.s.run_profiled("profiled", &[mode], options);
        assert_same_run(what, &native, &out);
        report(
            &self.s.path("profiled.profile.json"),
            &["--top", "0", "--min-speedup", "0"],
        )
    }
}

/// The sharing findings with a place at `line`.
fn findings_at(s: &Sharing, line: u32) -> Vec<&Finding> {
    s.findings
        .iter()
        .filter(|f| f.places.iter().any(|p| p.line == line))
        .collect()
}

/// Whether the finding names the heap block allocated at `site` (`file:line`).
fn names_heap_block(f: &Finding, site: &str) -> bool {
    f.objects.iter().any(|o| {
        o.kind == ObjectKind::Heap && o.alloc_site.as_deref().is_some_and(|a| a.ends_with(site))
    })
}

fn heap_lifetimes() -> Built {
    let s = Scratch::new();
    let text = source(&s, "heap_lifetimes.c");
    s.compile(
        &clang(),
        &["-O1", "-pthread", "heap_lifetimes.c", "-o", "native"],
    );
    s.compile(
        &profcc(),
        &["-O1", "-pthread", "heap_lifetimes.c", "-o", "profiled"],
    );
    Built { s, text }
}

/// A 1 MiB block, false sharing 640 KiB into it, freed before exit: the finding names the
/// heap block and its allocation site (lines past the first 4096 of a freed block used to be
/// "static data, no symbol").
#[test]
fn freed_large_block_keeps_its_heap_site() {
    let b = heap_lifetimes();
    let r = b.profiled("big", "summary=0", "false sharing in a freed 1 MiB block");
    let sharing = r.sharing.expect("a sharing section");
    let site = format!("heap_lifetimes.c:{}", line_of(&b.text, "MARK_BIG_ALLOC"));
    let found = findings_at(&sharing, line_of(&b.text, "MARK_BIG_STORE"));
    let f = found
        .first()
        .unwrap_or_else(|| panic!("no finding at the store: {:#?}", sharing.findings));
    assert_eq!(f.kind, Kind::FalseSharing, "{f:#?}");
    assert!(
        names_heap_block(f, &site),
        "the object is the heap block from {site}: {:#?}",
        f.objects
    );
}

/// One block reused by 200 threads that never run at once: each lifetime starts afresh, so
/// no sharing is reported (the lines used to carry their owners and writers across frees,
/// and the threads came out as true sharing).
#[test]
fn reused_block_carries_no_state_across_lifetimes() {
    let b = heap_lifetimes();
    let r = b.profiled(
        "reuse",
        "summary=0",
        "a block reused by threads that never overlap",
    );
    let store = line_of(&b.text, "MARK_REUSE_STORE");
    let findings = r
        .sharing
        .as_ref()
        .map(|s| findings_at(s, store))
        .unwrap_or_default();
    assert!(
        findings.iter().all(|f| f.kind != Kind::TrueSharing),
        "threads that never overlapped reported as true sharing: {findings:#?}"
    );
    assert!(findings.is_empty(), "{findings:#?}");
}

/// One block reused by 200 threads one after another, each freeing it itself (the last
/// writer of every line): the next thread's lifetime still starts afresh. The free leaves a
/// freed word on a line whose last writer frees it (`ShadowWord::freed`: its owner's writes
/// stay fast), which the sharing analysis takes as a line nobody accessed when another thread
/// comes (rt/src/analyses/sharing.rs `slow`); when the free kept the plain owner word, 854
/// lines were tracked from invalidations between threads that never ran at once
/// (docs/history/default.md). Exact, and sampled, where interpose.c's tail-path free does it.
#[test]
fn block_freed_by_its_writer_starts_afresh_for_the_next_thread() {
    let b = heap_lifetimes();
    for options in ["summary=0:alloc_sample=0", "summary=0"] {
        let r = b.profiled("reuse_own", options, "a block each thread frees itself");
        let sharing = r.sharing.expect("a sharing section");
        let findings = findings_at(&sharing, line_of(&b.text, "MARK_REUSE_OWN_STORE"));
        assert!(findings.is_empty(), "{options}: {findings:#?}");
        // The block's 64 lines would be tracked (each invalidated by 199 threads); the
        // program's few other lines may be.
        assert!(
            sharing.lines_tracked < 8,
            "{options}: {} lines tracked",
            sharing.lines_tracked
        );
    }
}

/// A block its owner freed and took back (its lines hold the owner's freed word), then
/// written by two threads at once: the freed word stands for a line nobody accessed for the
/// first of them, and the sharing after it is found, on the heap block at its allocation
/// line. Exact and default.
#[test]
fn freed_word_does_not_hide_the_next_lifetimes_sharing() {
    let b = heap_lifetimes();
    for options in ["summary=0:alloc_sample=0", "summary=0"] {
        let r = b.profiled(
            "reuse_then_share",
            options,
            "a reused block shared by two threads",
        );
        let site = format!("heap_lifetimes.c:{}", line_of(&b.text, "MARK_SHARED_ALLOC"));
        let sharing = r.sharing.expect("a sharing section");
        let found = findings_at(&sharing, line_of(&b.text, "MARK_SHARED_STORE"));
        assert_eq!(found.len(), 1, "{options}: {:#?}", sharing.findings);
        let f = found[0];
        assert_eq!(f.kind, Kind::FalseSharing, "{options}");
        assert!(names_heap_block(f, &site), "{options}: {:#?}", f.objects);
    }
}

/// Two threads each reuse their own 8-byte block on neighbouring lines (the bench's
/// cache-scratch kernel: main allocates the blocks in a row, glibc hands each thread its
/// block back every round), so each free leaves the thread's freed word. Its counters still
/// end with each lifetime: when a kept word's counters added up across rounds, every few
/// hundred writes the line was watched (its neighbour has another owner) and the free closed
/// the record, 7,811 lines tracked here and 8,192 in the bench's run (docs/history/default.md).
/// Nothing is shared: no finding, no line tracked, nothing dropped; exact and sampled.
#[test]
fn own_reused_neighbouring_blocks_open_no_watch_records() {
    let s = Scratch::new();
    let text = std::fs::read_to_string(root().join("bench/kernels/alloc_cache_scratch.c")).unwrap();
    s.write("cs.c", &text);
    let flags = ["-O2", "-pthread", "-DROUNDS=200000", "cs.c", "-o"];
    s.compile(&clang(), &[&flags[..], &["native"]].concat());
    s.compile(&profcc(), &[&flags[..], &["profiled"]].concat());
    let native = s.run_plain("native", &["2"]);
    for options in ["summary=0:alloc_sample=0", "summary=0"] {
        let (out, _) = s.run_profiled("profiled", &["2"], options);
        assert_same_run("cache-scratch", &native, &out);
        let r = report(
            &s.path("profiled.profile.json"),
            &["--top", "0", "--min-speedup", "0"],
        );
        let sharing = r.sharing.expect("a sharing section");
        assert!(
            sharing.findings.is_empty(),
            "{options}: {:#?}",
            sharing.findings
        );
        assert_eq!(
            (sharing.lines_tracked, sharing.dropped_lines),
            (0, 0),
            "{options}: lines tracked, dropped"
        );
    }
}

/// The fork child's profile reports the child's allocations and accesses only (it kept the
/// parent's allocations but not its accesses): the two profiles merged count each once.
#[test]
fn fork_child_profile_counts_only_the_child() {
    let s = Scratch::new();
    let text = source(&s, "fork_allocs.c");
    s.compile(&clang(), &["-O1", "fork_allocs.c", "-o", "native"]);
    s.compile(&profcc(), &["-O1", "fork_allocs.c", "-o", "profiled"]);
    let native = s.run_plain("native", &[]);
    let out = output_within(
        Command::new(s.path("profiled"))
            .current_dir(s.dir.path())
            .env("PROFCC_OPTIONS", "out=f.%p.json:summary=0"),
    );
    assert_same_run("fork", &native, &out);
    let files: Vec<std::path::PathBuf> = std::fs::read_dir(s.dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("f."))
        .collect();
    assert_eq!(files.len(), 2, "{files:?}");
    let line = |m: &str| line_of(&text, m);
    let r = report(&files[0], &["--top", "0", files[1].to_str().unwrap()]);
    let allocs_at = |l: u32| -> (u64, u64) {
        r.alloc_sites
            .sites
            .iter()
            .filter(|a| {
                a.stack.iter().any(|f| {
                    f.line == Some(l)
                        && f.file
                            .as_deref()
                            .is_some_and(|x| x.ends_with("fork_allocs.c"))
                })
            })
            .fold((0, 0), |(c, f), a| (c + a.count, f + a.frees))
    };
    assert_eq!(
        allocs_at(line("MARK_PARENT_ALLOC")),
        (10, 10),
        "parent's blocks"
    );
    assert_eq!(
        allocs_at(line("MARK_CHILD_ALLOC")),
        (3, 0),
        "child's blocks"
    );
    let writes_at = |l: u32| -> u64 {
        r.access_sites
            .lines
            .iter()
            .filter(|x| x.line == l && x.file.ends_with("fork_allocs.c"))
            .map(|x| x.writes)
            .sum()
    };
    assert_eq!(writes_at(line("MARK_PARENT_STORE")), 20);
    assert_eq!(writes_at(line("MARK_CHILD_STORE")), 30);
}

/// Under an address-space limit too small for the cache-line shadow, the program stops with
/// one line that names the cause as the kernel gave it (it said "errno 1" for ENOMEM).
#[test]
fn shadow_reservation_failure_names_enomem() {
    let s = Scratch::new();
    s.write(
        "tiny.c",
        "#include <stdio.h>\nvolatile int g;\nint main(void) { g = 1; printf(\"ok\\n\"); return 0; }\n",
    );
    s.compile(&clang(), &["-O1", "tiny.c", "-o", "native"]);
    s.compile(&profcc(), &["-O1", "tiny.c", "-o", "profiled"]);
    let limited = |exe: &str| {
        output_within(
            Command::new("sh")
                .current_dir(s.dir.path())
                .args(["-c", &format!("ulimit -v 4000000 && exec ./{exe}")])
                .env("PROFCC_OPTIONS", "summary=0"),
        )
    };
    let native = limited("native");
    assert_eq!(String::from_utf8_lossy(&native.stdout), "ok\n");
    let out = limited("profiled");
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("profcc:")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("cache-line shadow") && lines[0].contains("Cannot allocate memory"),
        "{err}"
    );
    assert!(!lines[0].contains("errno 1)"), "{err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
}
