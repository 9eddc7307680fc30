//! Unit tests of `profcc report` over synthetic profiles (built in code), plus symbolisation of a
//! real binary compiled here with clang-22.

use super::merge::{Input, Merged};
use super::sections::Options;
use super::*;
use profcc_schema::{
    AccessKind, AccessSite, AllocSite, Module, Profile, Stack, Thread, Totals, FORMAT, VERSION,
};
use serde_json::Value;
use std::path::{Path, PathBuf};

#[allow(clippy::too_many_arguments)]
pub(super) fn site(
    file: &str,
    line: u32,
    col: u32,
    func: &str,
    kind: AccessKind,
    size: u32,
    count: u64,
    threads: u32,
) -> AccessSite {
    AccessSite {
        file: file.into(),
        line,
        col,
        function: func.into(),
        inlined_at: None,
        kind,
        size,
        count,
        bytes: count * size as u64,
        threads,
    }
}

fn totals_of(p: &mut Profile) {
    let mut t = Totals {
        threads: p.threads.len().max(1) as u32,
        ..p.totals.clone()
    };
    (t.accesses, t.reads, t.writes, t.bytes_read, t.bytes_written) = (0, 0, 0, 0, 0);
    for s in &p.sites {
        t.accesses += s.count;
        if s.kind.reads() {
            t.reads += s.count;
            t.bytes_read += s.bytes;
        }
        if s.kind.writes() {
            t.writes += s.count;
            t.bytes_written += s.bytes;
        }
    }
    p.totals = t;
}

pub(super) fn profile(pid: u32, sites: Vec<AccessSite>) -> Profile {
    let mut p = Profile {
        format: FORMAT.into(),
        version: VERSION,
        exe: "/bin/kernel".into(),
        pid,
        host: "h".into(),
        argv: vec!["kernel".into()],
        duration_ns: 1_500_000_000,
        trigger: "exit".into(),
        threads: vec![
            Thread {
                id: 0,
                parent: None,
                created_at: None,
                accesses: 10,
                start_routine: None,
            },
            Thread {
                id: 1,
                parent: Some(0),
                created_at: None,
                accesses: 20,
                start_routine: None,
            },
        ],
        sites,
        ..Default::default()
    };
    totals_of(&mut p);
    p
}

/// Render to JSON and parse it back.
pub(super) fn json_of(inputs: Vec<Input>, opts: &Options) -> Value {
    let report = sections::build(&Merged::new(inputs), opts);
    let mut bytes = Vec::new();
    render::json::write(&report, &mut bytes).unwrap();
    let back: Report = serde_json::from_slice(&bytes).expect("the JSON reads back as a Report");
    assert_eq!(back, report, "model -> JSON -> model");
    let text = String::from_utf8(bytes).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("invalid JSON ({e}):\n{text}"))
}

pub(super) fn text_of(inputs: Vec<Input>, opts: &Options) -> String {
    let report = sections::build(&Merged::new(inputs), opts);
    render::text::render(&report, &render::text::TextOptions::default())
}

/// `profcc report ARGS` as the driver runs it (parsing and its usage errors are tested on the
/// binary, in driver/tests/cli.rs).
pub(super) fn run_args(args: &[&str]) -> (i32, String, String) {
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        report: ReportArgs,
    }
    let cli = <Cli as clap::Parser>::try_parse_from(
        std::iter::once("report").chain(args.iter().copied()),
    )
    .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = run_with(&cli.report, &mut out, &mut err);
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

#[test]
fn aggregates_by_line() {
    use AccessKind::*;
    // Line 12 unrolled into four sites (two loads, a store, an atomic); line 30 one site.
    let p = profile(
        1,
        vec![
            site("k.c", 12, 5, "sum", Read, 8, 100, 2),
            site("k.c", 12, 9, "sum", Read, 8, 100, 1),
            site("k.c", 12, 3, "sum", Write, 4, 50, 2),
            site("k.c", 12, 3, "sum", Atomic, 4, 10, 1),
            site("k.c", 30, 1, "_ZN2ns4initEPii", Write, 4, 40, 1),
        ],
    );
    let j = json_of(vec![Input::new("a.json", p, None)], &Options::default());
    let a = &j["access_sites"];
    assert_eq!(a["total_accesses"], 300);
    assert_eq!(a["lines_total"], 2);
    let lines = a["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 2);
    let l = &lines[0];
    assert_eq!(
        (l["rank"].as_u64(), l["file"].as_str(), l["line"].as_u64()),
        (Some(1), Some("k.c"), Some(12))
    );
    assert_eq!(l["accesses"], 260);
    assert_eq!(l["reads"], 210); // two loads + the atomic
    assert_eq!(l["writes"], 60); // store + atomic
    assert_eq!(l["bytes"], 800 + 800 + 200 + 40);
    assert_eq!(l["bytes_read"], 800 + 800 + 40);
    assert_eq!(l["threads"], 2); // largest site count: a lower bound, not a sum
    assert!((l["percent"].as_f64().unwrap() - 260.0 * 100.0 / 300.0).abs() < 1e-9);
    assert_eq!(l["sites"].as_array().unwrap().len(), 4);
    assert_eq!(l["function"], "sum");
    // C++ names are demangled.
    assert_eq!(lines[1]["function"], "ns::init(int*, int)");

    // --top 1 keeps the first line, and says how many there were.
    let j = json_of(
        vec![Input::new(
            "a.json",
            profile(
                1,
                vec![
                    site("k.c", 1, 1, "f", Read, 1, 1, 1),
                    site("k.c", 2, 1, "f", Read, 1, 5, 1),
                ],
            ),
            None,
        )],
        &Options {
            top: 1,
            ..Options::default()
        },
    );
    assert_eq!(j["access_sites"]["lines"].as_array().unwrap().len(), 1);
    assert_eq!(j["access_sites"]["lines"][0]["line"], 2);
    assert_eq!(j["access_sites"]["lines_total"], 2);
}

#[test]
fn text_report_names_lines_functions_and_threads() {
    use AccessKind::*;
    let p = profile(
        77,
        vec![
            site("src/k.c", 12, 5, "sum", Read, 8, 1000, 2),
            site("src/k.c", 12, 7, "sum", Read, 8, 500, 2),
        ],
    );
    let t = text_of(vec![Input::new("a.json", p, None)], &Options::default());
    assert!(
        t.starts_with(
            "profcc report: /bin/kernel (pid 77 on h), 1.50 s, 2 threads, written at exit\n"
        ),
        "{t}"
    );
    assert!(t.contains("accesses 1,500 (reads 1,500 = 11.7 KiB"), "{t}");
    let row = t
        .lines()
        .find(|l| l.contains("src/k.c:12"))
        .expect("line row");
    assert!(
        row.contains("1,500") && row.contains("100.0%") && row.ends_with("sum"),
        "{row}"
    );
    assert!(t.contains("Threads (2)"), "{t}");
    assert!(t.contains("(main thread)"), "{t}");
}

#[test]
fn merges_two_files() {
    use AccessKind::*;
    let mut a = profile(
        100,
        vec![
            site("k.c", 12, 5, "sum", Read, 8, 100, 2),
            site("k.c", 20, 1, "g", Write, 4, 7, 1),
        ],
    );
    let mut b = profile(
        200,
        vec![
            site("k.c", 12, 5, "sum", Read, 8, 300, 4),
            site("k.c", 12, 6, "sum", Read, 8, 1, 1),
        ],
    );
    // The same allocation call in both processes: a binary that is not there, loaded at
    // different addresses (ASLR); the same offset in the module merges them.
    let module = |base: u64| Module {
        path: "/nonexistent/kernel".into(),
        base,
        start: base + 0x1000,
        end: base + 0x9000,
    };
    a.modules = vec![module(0x5555_0000_0000)];
    b.modules = vec![module(0x6666_0000_0000)];
    a.stacks = vec![Stack {
        id: 1,
        frames: vec![0x5555_0000_1234, 0x5555_0000_2000],
    }];
    b.stacks = vec![Stack {
        id: 9,
        frames: vec![0x6666_0000_1234, 0x6666_0000_2000],
    }];
    let alloc = |stack, count| AllocSite {
        stack,
        kind: "malloc".into(),
        count,
        bytes: count * 64,
        frees: count,
        max_size: 64,
        live_bytes_peak: 640,
        live_bytes_at_exit: 0,
        live_objects_at_exit: 0,
        threads: 1,
        cycles: 0,
        lifetime: None,
    };
    a.alloc_sites = vec![alloc(1, 10)];
    b.alloc_sites = vec![alloc(9, 30)];
    a.totals.allocations = 10;
    b.totals.allocations = 30;
    a.notes = vec!["same note".into()];
    b.notes = vec!["same note".into()];

    let j = json_of(
        vec![Input::new("a.json", a, None), Input::new("b.json", b, None)],
        &Options::default(),
    );
    let lines = j["access_sites"]["lines"].as_array().unwrap();
    assert_eq!(lines[0]["line"], 12);
    assert_eq!(lines[0]["accesses"], 401);
    // Per file the largest site count (2, then 4), summed over the two processes.
    assert_eq!(lines[0]["threads"], 6);
    assert_eq!(
        lines[0]["sites"].as_array().unwrap().len(),
        2,
        "equal sites summed, distinct kept"
    );
    assert_eq!(lines[0]["sites"][0]["count"], 400);
    assert_eq!(lines[1]["line"], 20);

    let t = &j["summary"]["totals"];
    assert_eq!(t["accesses"], 408);
    assert_eq!(t["allocations"], 40);
    assert_eq!(t["threads"], 4);
    let inputs = j["summary"]["inputs"].as_array().unwrap();
    assert_eq!(inputs.len(), 2);
    assert_eq!(
        (inputs[0]["pid"].as_u64(), inputs[1]["pid"].as_u64()),
        (Some(100), Some(200))
    );

    let allocs = j["alloc_sites"]["sites"].as_array().unwrap();
    assert_eq!(allocs.len(), 1, "merged by symbolised stack: {allocs:?}");
    assert_eq!(allocs[0]["count"], 40);
    assert_eq!(allocs[0]["bytes"], 40 * 64);
    assert_eq!(allocs[0]["live_bytes_peak"], 1280);
    let f0 = &allocs[0]["stack"][0];
    assert_eq!(f0["module"], "/nonexistent/kernel");
    assert_eq!(f0["offset"], 0x1234);
    assert!(f0["function"].is_null());

    // Threads listed per file.
    let threads = j["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 4);
    assert_eq!(
        (threads[2]["input"].as_u64(), threads[2]["pid"].as_u64()),
        (Some(1), Some(200))
    );

    // The missing binary is said once, not per frame; the runtime's note once, not per file.
    let notes = &j["notes"];
    assert_eq!(notes["warnings"].as_array().unwrap().len(), 1, "{notes}");
    assert!(notes["warnings"][0]
        .as_str()
        .unwrap()
        .contains("/nonexistent/kernel: missing"));
    assert_eq!(notes["notes"], serde_json::json!(["same note"]));
}

#[test]
fn json_shape_is_stable() {
    let p = profile(
        5,
        vec![site("k.c", 1, 1, "f", AccessKind::CopyWrite, 0, 3, 1)],
    );
    let j = json_of(vec![Input::new("a.json", p, None)], &Options::default());
    assert_eq!(j["format"], REPORT_FORMAT);
    assert_eq!(j["version"], REPORT_VERSION);
    let keys: Vec<&str> = j.as_object().unwrap().keys().map(String::as_str).collect();
    for k in [
        "format",
        "version",
        "summary",
        "access_sites",
        "alloc_sites",
        "threads",
        "notes",
    ] {
        assert!(keys.contains(&k), "missing {k} in {keys:?}");
    }
    let s = &j["summary"];
    for k in [
        "path",
        "exe",
        "pid",
        "host",
        "argv",
        "duration_ns",
        "trigger",
        "threads",
        "accesses",
    ] {
        assert!(s["inputs"][0].get(k).is_some(), "summary.inputs[].{k}");
    }
    for k in [
        "accesses",
        "reads",
        "writes",
        "bytes_read",
        "bytes_written",
        "unattributed",
        "allocations",
        "frees",
        "bytes_allocated",
        "live_bytes_peak",
        "threads",
    ] {
        assert!(s["totals"][k].is_u64(), "summary.totals.{k}");
    }
    let l = &j["access_sites"]["lines"][0];
    for k in [
        "rank",
        "line",
        "accesses",
        "reads",
        "writes",
        "bytes",
        "bytes_read",
        "bytes_written",
        "threads",
    ] {
        assert!(l[k].is_u64(), "access_sites.lines[].{k}");
    }
    assert!(l["percent"].is_f64());
    for k in ["file", "function"] {
        assert!(l[k].is_string(), "access_sites.lines[].{k}");
    }
    assert!(l["functions"].is_array() && l["inlined_at"].is_array());
    let site = &l["sites"][0];
    assert_eq!(site["kind"], "copy_write");
    for k in ["col", "size", "count", "bytes"] {
        assert!(site[k].is_u64(), "access_sites.lines[].sites[].{k}");
    }
    assert!(j["alloc_sites"]["sites_total"].is_u64() && j["alloc_sites"]["sites"].is_array());
    let t = &j["threads"][0];
    for k in ["input", "pid", "id", "accesses"] {
        assert!(t[k].is_u64(), "threads[].{k}");
    }
    assert!(t["parent"].is_null() && t["created_at"].is_array());
    assert!(j["notes"]["notes"].is_array() && j["notes"]["warnings"].is_array());
}

fn write_profile(dir: &Path, name: &str, p: &Profile) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string(p).unwrap()).unwrap();
    path
}

#[test]
fn cli_reads_files_and_writes_output() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_profile(
        dir.path(),
        "profcc.k.1.json",
        &profile(1, vec![site("k.c", 3, 1, "f", AccessKind::Read, 4, 9, 1)]),
    );
    let b = write_profile(
        dir.path(),
        "profcc.k.2.json",
        &profile(2, vec![site("k.c", 3, 1, "f", AccessKind::Read, 4, 1, 1)]),
    );
    let (code, out, err) = run_args(&[
        "--format",
        "json",
        "--top=5",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
    ]);
    assert_eq!((code, err.as_str()), (0, ""));
    let j: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["access_sites"]["lines"][0]["accesses"], 10);

    let o = dir.path().join("report.txt");
    let (code, out, _) = run_args(&["-o", o.to_str().unwrap(), a.to_str().unwrap()]);
    assert_eq!((code, out.as_str()), (0, ""));
    assert!(std::fs::read_to_string(&o).unwrap().contains("k.c:3"));

    // `-o` naming one of the profiles read (through another spelling of its path) is refused
    // and leaves it as it was.
    let before = std::fs::read(&b).unwrap();
    let other = dir.path().join(".").join("profcc.k.2.json");
    let (code, _, err) = run_args(&[
        "-o",
        other.to_str().unwrap(),
        a.to_str().unwrap(),
        b.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("is one of the profiles read"), "{err}");
    assert_eq!(std::fs::read(&b).unwrap(), before);
}

#[test]
fn truncated_foreign_missing_files_fail_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = serde_json::to_string(&profile(
        1,
        vec![site("k.c", 3, 1, "f", AccessKind::Read, 4, 9, 1)],
    ))
    .unwrap();
    let cut = dir.path().join("cut.json");
    std::fs::write(&cut, &text[..text.len() / 2]).unwrap();
    let (code, out, err) = run_args(&[cut.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert_eq!(out, "");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "profcc report: {}: the profile is truncated",
            cut.display()
        )),
        "{err}"
    );

    let foreign = dir.path().join("foreign.json");
    std::fs::write(&foreign, "{\"hello\": 1}").unwrap();
    let (code, _, err) = run_args(&[foreign.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        err.contains("not a profcc profile") && err.lines().count() == 1,
        "{err}"
    );

    let mut newer = profile(1, vec![]);
    newer.version = VERSION + 1;
    let newer = write_profile(dir.path(), "newer.json", &newer);
    let (code, _, err) = run_args(&[newer.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        err.contains("is newer than this profcc") && err.lines().count() == 1,
        "{err}"
    );

    let (code, _, err) = run_args(&["/nonexistent/profcc.x.1.json"]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("profcc report: /nonexistent/profcc.x.1.json: cannot read it:"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// Symbolisation against a real binary.

const CLANG: &str = "/usr/bin/clang-22";

/// Compile `src` (C, or C++ with `cxx`) with `-g` into `dir`, return the executable's path.
pub(super) fn compile(dir: &Path, name: &str, src: &str, extra: &[&str]) -> PathBuf {
    assert!(
        Path::new(CLANG).exists(),
        "{CLANG} is needed for the symbolisation tests (cargo xtask setup)"
    );
    let file = dir.join(name);
    std::fs::write(&file, src).unwrap();
    let exe = dir.join(format!("{name}.out"));
    let st = std::process::Command::new(CLANG)
        .arg("-g")
        .args(extra)
        .arg(&file)
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("run clang-22");
    assert!(st.success(), "clang-22 failed on {name}");
    exe
}

/// File address and size of a symbol, and the executable range of the file.
pub(super) fn symbol(exe: &Path, name: &str) -> (u64, u64, (u64, u64)) {
    use object::{Object, ObjectSymbol};
    let data = std::fs::read(exe).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let sym = file
        .symbols()
        .find(|s| s.name() == Ok(name))
        .unwrap_or_else(|| panic!("no symbol {name}"));
    (
        sym.address(),
        sym.size(),
        symbolize::exec_range_of(&data).unwrap(),
    )
}

/// A profile whose module is `exe` loaded at `base`, with one allocation site whose stack is
/// `frames` (file addresses; `base` is added).
fn profile_with_stack(exe: &Path, base: u64, range: (u64, u64), frames: &[u64]) -> Profile {
    let mut p = profile(3, vec![]);
    p.exe = exe.display().to_string();
    p.modules = vec![Module {
        path: exe.display().to_string(),
        base,
        start: base + range.0,
        end: base + range.1,
    }];
    p.stacks = vec![Stack {
        id: 4,
        frames: frames.iter().map(|f| f + base).collect(),
    }];
    p.alloc_sites = vec![AllocSite {
        stack: 4,
        kind: "malloc".into(),
        count: 1,
        bytes: 16,
        threads: 1,
        ..Default::default()
    }];
    p.threads[1].created_at = Some(4);
    p
}

const C_SRC: &str = "#include <stdlib.h>
int sink;
__attribute__((noinline)) int leaf(int x) { sink = x; return x * 3 + 1; }
int main(int argc, char **argv) { (void)argv; return leaf(argc) > 100; }
";

#[test]
fn symbolises_a_return_address_with_clang_debug_info() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "leaf.c", C_SRC, &["-O0"]);
    let (addr, size, range) = symbol(&exe, "leaf");
    assert!(size > 4);
    // A return address two bytes into `leaf`: the "call" is one byte before it, still inside.
    let base = 0x5600_0000_0000;
    let p = profile_with_stack(&exe, base, range, &[addr + 2]);
    let j = json_of(
        vec![Input::new("a.json", p.clone(), None)],
        &Options::default(),
    );
    let f = &j["alloc_sites"]["sites"][0]["stack"][0];
    assert_eq!(f["function"], "leaf", "{f}");
    assert!(f["file"].as_str().unwrap().ends_with("leaf.c"), "{f}");
    assert_eq!(f["line"], 3);
    assert_eq!(f["offset"], addr + 2);
    assert_eq!(f["inlined"], false);
    assert!(
        j["notes"]["warnings"].as_array().unwrap().is_empty(),
        "{}",
        j["notes"]
    );

    let t = text_of(vec![Input::new("a.json", p, None)], &Options::default());
    assert!(t.contains("leaf  ") && t.contains("leaf.c:3"), "{t}");
    // Thread 1 was created at the same stack.
    let threads = &t[t.find("Threads (").unwrap()..];
    let row = threads
        .lines()
        .find(|l| l.trim_start().starts_with("1 "))
        .unwrap();
    assert!(row.contains("leaf.c:3"), "{row}");
}

#[test]
fn changed_or_missing_binary_gives_raw_frames_and_one_warning() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "leaf.c", C_SRC, &["-O0"]);
    let (addr, _, range) = symbol(&exe, "leaf");
    // The recorded executable range no longer fits the file: the binary was rebuilt.
    let p = profile_with_stack(
        &exe,
        0x1000_0000,
        (range.0, range.1 + 0x1000),
        &[addr + 2, addr + 3],
    );
    let j = json_of(vec![Input::new("a.json", p, None)], &Options::default());
    let f = &j["alloc_sites"]["sites"][0]["stack"][0];
    assert!(f["function"].is_null(), "{f}");
    assert_eq!(f["offset"], addr + 2);
    let w = j["notes"]["warnings"].as_array().unwrap();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].as_str().unwrap().contains("changed since the run"),
        "{w:?}"
    );

    // Missing: the text shows module+offset.
    std::fs::remove_file(&exe).unwrap();
    let p = profile_with_stack(&exe, 0x1000_0000, range, &[addr + 2]);
    let t = text_of(vec![Input::new("a.json", p, None)], &Options::default());
    assert!(
        t.contains(&format!("??  leaf.c.out+{:#x}", addr + 2)),
        "{t}"
    );
    assert_eq!(t.matches("missing (").count(), 1, "{t}");
}

#[test]
fn symbolises_inlined_frames_and_cpp_names() {
    let src = "namespace ns {
static inline int helper(const int *p) {
  return p[0] * 7 + p[1];
}
__attribute__((noinline)) int outer(const int *p) {
  return helper(p) + 1;
}
}
int main() { int a[2] = {1, 2}; return ns::outer(a) == 3; }
";
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "inl.cc", src, &["-x", "c++", "-O2"]);
    let (addr, size, range) = symbol(&exe, "_ZN2ns5outerEPKi");
    let modules = vec![Module {
        path: exe.display().to_string(),
        base: 0,
        start: range.0,
        end: range.1,
    }];
    let mut sym = symbolize::Symbolizer::new();
    // Some instruction of `outer` comes from the inlined `helper`.
    let frames = (addr + 1..addr + size + 1)
        .map(|ra| sym.frames(&modules, ra, None))
        .find(|f| f.len() == 2)
        .expect("an address inside the inlined helper");
    assert_eq!(
        frames[0].function.as_deref(),
        Some("ns::helper(int const*)"),
        "{frames:?}"
    );
    assert!(frames[0].inlined);
    assert_eq!(frames[0].line, Some(3));
    assert_eq!(
        frames[1].function.as_deref(),
        Some("ns::outer(int const*)"),
        "{frames:?}"
    );
    assert!(!frames[1].inlined);
    assert_eq!(
        frames[1].line,
        Some(6),
        "the call site of the inlined helper"
    );
}

/// A real process: its module map as the runtime records it (dl_iterate_phdr, PIE under ASLR)
/// and a real return address; the report must name the calling function and line.
#[test]
fn symbolises_a_real_return_address_from_a_running_process() {
    let src = r#"#define _GNU_SOURCE
#include <link.h>
#include <stdio.h>
static int cb(struct dl_phdr_info *info, size_t sz, void *data) {
  unsigned long lo = ~0UL, hi = 0;
  (void)sz; (void)data;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
      unsigned long s = info->dlpi_addr + ph->p_vaddr, e = s + ph->p_memsz;
      if (s < lo) lo = s;
      if (e > hi) hi = e;
    }
  }
  if (lo != ~0UL) printf("module %s %lx %lx %lx\n", info->dlpi_name[0] ? info->dlpi_name : "-", (unsigned long)info->dlpi_addr, lo, hi);
  return 0;
}
__attribute__((noinline)) void record(void) { printf("ra %lx\n", (unsigned long)__builtin_return_address(0)); }
__attribute__((noinline)) void caller(void) {
  record();
  __asm__ volatile("");
}
int main(void) { dl_iterate_phdr(cb, 0); caller(); return 0; }
"#;
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(
        dir.path(),
        "real.c",
        src,
        &["-O0", "-fno-omit-frame-pointer"],
    );
    let out = std::process::Command::new(&exe)
        .output()
        .expect("run the test program");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let hex = |s: &str| u64::from_str_radix(s, 16).unwrap();
    let mut modules = Vec::new();
    let mut ra = 0;
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["module", name, base, start, end] => modules.push(Module {
                path: if *name == "-" && modules.is_empty() {
                    exe.display().to_string()
                } else {
                    name.to_string()
                },
                base: hex(base),
                start: hex(start),
                end: hex(end),
            }),
            ["ra", a] => ra = hex(a),
            _ => {}
        }
    }
    let modules: Vec<Module> = modules
        .into_iter()
        .filter(|m| m.path != "-" && !m.path.starts_with("linux-vdso"))
        .collect();
    assert!(ra != 0 && modules.len() >= 2, "{text}");
    let mut p = profile(9, vec![]);
    p.modules = modules;
    p.stacks = vec![Stack {
        id: 1,
        frames: vec![ra],
    }];
    p.alloc_sites = vec![AllocSite {
        stack: 1,
        kind: "malloc".into(),
        count: 1,
        bytes: 8,
        ..Default::default()
    }];
    let j = json_of(vec![Input::new("a.json", p, None)], &Options::default());
    let f = &j["alloc_sites"]["sites"][0]["stack"][0];
    assert_eq!(f["function"], "caller", "{f}");
    assert!(f["file"].as_str().unwrap().ends_with("real.c"), "{f}");
    assert_eq!(f["line"], 20, "{f}");
    assert!(
        j["notes"]["warnings"].as_array().unwrap().is_empty(),
        "{}",
        j["notes"]
    );
}

#[test]
fn paths_are_normalised() {
    use symbolize::normalize_path as n;
    assert_eq!(
        n("/usr/lib/gcc/x86_64-linux-gnu/12/../../../../include/c++/12/bits/stl_vector.h"),
        "/usr/include/c++/12/bits/stl_vector.h"
    );
    assert_eq!(n("/a/./b//c"), "/a/b/c");
    assert_eq!(n("../x/../y.c"), "../y.c");
    assert_eq!(n("./k.c"), "k.c");
    assert_eq!(n("/.."), "/");
    assert_eq!(n("src/k.c"), "src/k.c");
    // Two spellings of one file are one line.
    let p = profile(
        1,
        vec![
            site("/s/a/../k.c", 3, 1, "f", AccessKind::Read, 4, 1, 1),
            site("/s/k.c", 3, 2, "f", AccessKind::Read, 4, 1, 1),
        ],
    );
    let j = json_of(vec![Input::new("a.json", p, None)], &Options::default());
    assert_eq!(j["access_sites"]["lines_total"], 1);
    assert_eq!(j["access_sites"]["lines"][0]["file"], "/s/k.c");
}

#[test]
fn without_debug_info_the_sized_symbol_table_names_the_function() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "nodebug.c", C_SRC, &["-O0", "-g0"]);
    let (addr, size, range) = symbol(&exe, "leaf");
    let modules = vec![Module {
        path: exe.display().to_string(),
        base: 0x1000,
        start: 0x1000 + range.0,
        end: 0x1000 + range.1,
    }];
    let mut sym = symbolize::Symbolizer::new();
    let f = &sym.frames(&modules, 0x1000 + addr + 2, None)[0];
    assert_eq!(
        (f.function.as_deref(), f.file.as_deref()),
        (Some("leaf"), None),
        "{f:?}"
    );
    // Past the end of the last function symbol: no name rather than a wrong one.
    let (_, _, (_, hi)) = (addr, size, range);
    let past = sym.frames(&modules, 0x1000 + hi, None);
    assert!(past[0].function.as_deref() != Some("leaf"), "{past:?}");
    assert!(sym.warnings().is_empty(), "{:?}", sym.warnings());
}

// ---------------------------------------------------------------------------------------------
// The model and its renderers.

/// A report with a row in every table and every kind of object, latent and plain findings:
/// for round trips and table shapes.
pub(crate) fn sample_report() -> Report {
    use crate::model::*;
    use profcc_analysis::sharing::{Confidence, Kind, Latent};
    use profcc_schema::sharing::Settings;
    let frame = |function: &str, line: u32| Frame {
        address: 0x5600_0000_1234,
        module: Some("/bin/k".into()),
        offset: Some(0x1234),
        function: Some(function.into()),
        file: Some("/src/k.c".into()),
        line: Some(line),
        column: Some(3),
        inlined: false,
    };
    let raw = Frame {
        address: 0x7f00_0000_0001,
        module: None,
        offset: None,
        function: None,
        file: None,
        line: None,
        column: None,
        inlined: true,
    };
    let heap = Object {
        alloc_kind: Some("malloc".into()),
        alloc_thread: Some(0),
        alloc_site: Some("/src/k.c:21".into()),
        alloc_stack: vec!["make /src/k.c:21".into(), "main /src/k.c:40".into()],
        function: Some("make".into()),
        ..Object::new(ObjectKind::Heap, 0x7000_0000_0000, 24)
    };
    let global = Object {
        name: Some("counters".into()),
        ..Object::new(ObjectKind::Global, 0x5600_0000_4000, 64)
    };
    let stack = Object {
        stack_thread: Some(2),
        function: Some("worker(void*)".into()),
        ..Object::new(ObjectKind::Stack, 0x7ffc_0000_0000, 8 << 20)
    };
    let word = |object: Option<usize>, field: Option<&str>, writer: u32| Word {
        object,
        object_offset: object.map(|_| 8 * writer as u64),
        line: 0x5600_0000_4000,
        line_offset: 8 * writer,
        size: 8,
        field: field.map(String::from),
        reads: 3,
        writes: 1000,
        readers: vec![writer, 9],
        writers: vec![writer],
    };
    let finding = |rank: usize, kind: Kind, objects: Vec<Object>, latent: Option<Latent>| Finding {
        rank,
        input: rank % 2,
        kind,
        kind_text: kind.as_str().into(),
        allocator_induced: rank == 2,
        latent,
        lines: vec![0x5600_0000_4000, 0x5600_0000_4040],
        invalidations: 1_200_000,
        reads: 7,
        writes: 2_000_000,
        threads: vec![1, 2],
        more_threads: false,
        words: vec![word(Some(0), Some("counters[1]"), 1), word(None, None, 2)],
        objects,
        places: vec![Place {
            file: "/src/k.c".into(),
            line: 30,
            function: "worker".into(),
            reads: 0,
            writes: 2_000_000,
        }],
        stride: Some(8),
        predicted_saving_ns: 36_000_000,
        predicted_speedup: 1.8,
        prediction: Default::default(),
        confidence: Confidence::High,
        fix: "`counters`: pad, \"quoted\", and a comma".into(),
    };
    Report {
        format: REPORT_FORMAT.into(),
        version: REPORT_VERSION,
        objects: vec![ObjectRow {
            kind: "heap".into(),
            name: "init.c:12".into(),
            allocations: Some(4),
            bytes: Some(4096),
            sharing: vec!["false_sharing".into()],
            findings: vec!["sharing/false_sharing/heap:init.c:12@k.c:30".into()],
            ..Default::default()
        }],
        findings: vec![profcc_analysis::findings::Finding::new(
            profcc_analysis::findings::Analysis::Numa,
            "serial_first_touch",
            "serial first touch: thread 0 touched 100% of the pages first".into(),
            vec![profcc_analysis::findings::Object::run()],
            vec!["/src/k/init.c:12".into()],
            vec![],
            profcc_analysis::findings::Impact {
                seconds: 0.25,
                bytes: 0,
                formula: "remote_overhead_share".into(),
                inputs: vec![],
                confidence: Confidence::Low,
            },
            "touch the data first in parallel, \"quoted\", with a comma".into(),
        )],
        summary: Summary {
            inputs: vec![InputInfo {
                path: "p.json".into(),
                exe: "/bin/k".into(),
                pid: 42,
                host: "h".into(),
                rank: Some(1),
                argv: vec!["k".into(), "4".into()],
                duration_ns: 1_500_000_000,
                trigger: "exit".into(),
                threads: 3,
                accesses: 1000,
                exit_summary: vec![],
                allocator: None,
                options: Default::default(),
            }],
            totals: Totals {
                accesses: 1000,
                reads: 600,
                writes: 400,
                threads: 3,
                ..Default::default()
            },
        },
        access_sites: AccessSites {
            total_accesses: 1000,
            lines_total: 1,
            counted_modules: Some(1),
            lines: vec![Line {
                rank: 1,
                file: "/src/k.c".into(),
                line: 30,
                function: "worker".into(),
                functions: vec!["worker".into(), "ns::f(int)".into()],
                inlined_at: vec!["/src/k.c:44".into()],
                accesses: 1000,
                reads: 600,
                writes: 400,
                bytes: 8000,
                bytes_read: 4800,
                bytes_written: 3200,
                percent: 100.0 / 3.0,
                threads: 2,
                sites: vec![Site {
                    col: 5,
                    kind: AccessKind::Atomic,
                    size: 8,
                    count: 1000,
                    bytes: 8000,
                    function: "worker".into(),
                    inlined_at: Some("/src/k.c:44".into()),
                    by_input: Vec::new(),
                }],
            }],
        },
        alloc_sites: AllocSites {
            sites_total: 1,
            sites: vec![AllocSite {
                rank: 1,
                kind: "new[]".into(),
                count: 10,
                bytes: 640,
                frees: 9,
                max_size: 64,
                live_bytes_peak: 128,
                live_bytes_at_exit: 64,
                live_objects_at_exit: 1,
                threads: 2,
                merged_sites: 2,
                stack: vec![raw.clone(), frame("make", 21), frame("main", 40)],
                wrapper_frames: 0,
                allocator_ns: 0.0,
                by_input: Vec::new(),
                lifetime: Some(profcc_schema::Lifetime {
                    freed: 9,
                    sum: 40,
                    min: 0,
                    max: 20,
                    temporary: 3,
                    unmeasured: 0,
                    histogram: vec![3, 2, 1, 0, 1, 2],
                }),
            }],
        },
        sharing: Some(Sharing {
            settings: Settings::default(),
            lines_tracked: 12,
            dropped_lines: 1,
            findings_total: 3,
            min_speedup: 1.01,
            below_threshold: vec![BelowThreshold {
                kind: Kind::ReadMostly,
                findings: 364,
                lines: 412,
                below_speedup: 1.01,
                largest_speedup: 1.004,
                largest_at: Some("t.c:21".into()),
            }],
            findings: vec![
                finding(1, Kind::FalseSharing, vec![global.clone()], None),
                finding(2, Kind::TrueSharing, vec![heap, stack], None),
                finding(
                    3,
                    Kind::LatentFalseSharing,
                    vec![global],
                    Some(Latent {
                        prefetch_pair: true,
                        shift: Some(8),
                    }),
                ),
            ],
        }),
        numa: Some(crate::model::Numa {
            inputs: vec![crate::model::NumaInput {
                input: 0,
                model: "emulate".into(),
                nodes: 2,
                pages: 300,
                huge_pages: 0,
                local: 900,
                remote: 100,
                threads: vec![
                    crate::model::NumaThread {
                        thread: 0,
                        node: Some(0),
                        local: 900,
                        remote: 0,
                        first_touches: 300,
                        by_node: vec![(Some(0), 900)],
                        waits: Default::default(),
                        migrations: 0,
                        routine: None,
                        pinned: false,
                    },
                    crate::model::NumaThread {
                        thread: 1,
                        node: Some(1),
                        local: 0,
                        remote: 100,
                        first_touches: 0,
                        by_node: vec![(Some(0), 100)],
                        waits: Default::default(),
                        migrations: 0,
                        routine: Some("worker".into()),
                        pinned: true,
                    },
                ],
                node_matrix: vec![vec![900, 0], vec![100, 0]],
                first_touch: vec![],
                advice: None,
                remote_invalidations: 3,
                groups: vec![],
                plan: vec![crate::model::NumaCluster {
                    node: 0,
                    first_cpu: 0,
                    cpus: 4,
                    cpu_list: "0-3".into(),
                    threads: vec![1],
                    unbalanced: vec![1],
                }],
                plan_lines: vec![],
                plan_basis: String::new(),
                migration: None,
                unpinned_thread: 900,
                unpinned_page: 1000,
                unpinned_both: 900,
                objects: vec![crate::model::NumaObject {
                    object: "heap block allocated at a.c:3".into(),
                    allocated_at: Some("a.c:3".into()),
                    address: 0x10000,
                    bytes: 8192,
                    instances: 1,
                    pages: 2,
                    local: 900,
                    remote: 100,
                    unpinned_page: 1000,
                    remote_invalidations: 3,
                    score: 15.5,
                    first_touch_thread: Some(0),
                    first_touch_at: Some("a.c:4".into()),
                    first_touch_pages: 2,
                    threads: vec![crate::model::NumaRange {
                        thread: 1,
                        start: 0,
                        end: 8192,
                        pages: 2,
                    }],
                    by_thread: Vec::new(),
                    unsplit: 0,
                    shared_pages: 0,
                    kept_pages: 0,
                    moved_pages: 2,
                    reused_pages: 0,
                    kind: Some("first touch".into()),
                    fix: Some("touch it first in thread 1".into()),
                }],
                sites: vec![crate::model::NumaSite {
                    place: Some("a.c:9".into()),
                    function: Some("worker".into()),
                    accesses: 100,
                    remote: 100,
                    unpinned_thread: 0,
                    unpinned_page: 100,
                }],
                below: Default::default(),
            }],
        }),
        allocator: Some(crate::model::AllocatorAnalysis {
            inputs: vec![crate::model::AllocatorInput {
                input: 0,
                allocator: "glibc 2.36".into(),
                description: "shipped configs/allocators/glibc-2.36.toml".into(),
                kinds_approximate: false,
                ops: vec![crate::model::AllocOpRow {
                    op: "malloc".into(),
                    size_kind: "small".into(),
                    reuse: "reused".into(),
                    phase: "serial".into(),
                    count: 1000,
                    timed: 16,
                    mean_ns: 10.5,
                    total_ns: 10500.0,
                }],
                total_ns: 10500.0,
                duration_ns: 2_000_000,
                first_calls: 1,
                channels: vec![crate::model::AllocChannel {
                    channel: "mmap".into(),
                    observable: false,
                    why_not: Some("libc.so.6 makes these calls inside itself, not through its PLT".into()),
                    count: 0,
                    total_ns: 0.0,
                    by_op: vec![],
                }],
                overhead: vec![crate::model::AllocOverhead {
                    moment: "peak".into(),
                    requested: 1000,
                    usable: 1200,
                    internal_fragmentation: 200,
                    blowup: 64,
                    heap_rss: 135168,
                    external_and_metadata: 133904,
                    lines: Some(20),
                    pages: Some(1),
                    line_utilisation: Some(1000.0 / 1280.0),
                    page_utilisation: Some(1000.0 / 4096.0),
                    touched: None,
                    untouched: None,
                }],
                predictions: vec![crate::model::AllocPrediction {
                    allocator: "mimalloc 2.0.9".into(),
                    predicted_ns: 8000.0,
                    change_ns: -2500.0,
                    change_of_run: -0.00125,
                    how: "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2.0 PROGRAM, or link with -lmimalloc".into(),
                }],
                self_check_ns: Some(11000.0),
                advice: None,
                events: None,
                induced_sharing: None,
                locks: vec![crate::model::AllocLock {
                    addr: 0x7f00_0000_1040,
                    place: "arena_lock+64 (liballoc.so)".into(),
                    taken: 900,
                    waited: 12,
                    wait_ns: 3400.5,
                    busy: 30,
                    held: 900,
                    hold_ns: 45000.0,
                }],
                locks_total: 2,
                locks_untracked: 0,
                reuse_estimated: 0,
                measured_ns: 10500.0,
                capped: false,
                cpu_ns: Some(3_000_000),
                share_of: "the threads' CPU time".into(),
                interrupted: 2,
                bracket_ns: 9.5,
                costs: "shipped".into(),
                no_advice: None,
            }],
            top_sites: vec![crate::model::AllocSiteCost {
                site: "make t.c:21".into(),
                count: 1000,
                allocator_ns: 10500.0,
                share: 1.0,
            }],
        }),
        regions: Some(crate::model::Regions {
            rows: vec![crate::model::RegionRow {
                input: 0,
                region: "triad".into(),
                thread: 1,
                executions: 100,
                seconds: 0.25,
                counted_executions: None,
                sampled_calls: None,
                time_samples: Some(6),
                counts: Some(profcc_schema::regions::Counts {
                    instructions: 900,
                    loads: [200, 0, 0, 10],
                    stores: [100, 0, 0, 0],
                    load_bytes: [1600, 0, 0, 40],
                    store_bytes: [800, 0, 0, 0],
                    fp_ops: 200,
                    calls: 1,
                    ..Default::default()
                }),
                gbytes_per_s: Some(2400.0 / 0.25 / 1e9),
                correction_factor: Some(1.0),
                gbytes_per_s_corrected: Some(2400.0 / 0.25 / 1e9),
                machine_share: None,
                events: Some(profcc_schema::regions::RowEvents {
                    executions: 1,
                    values: vec![0, 0, 0, 12],
                }),
            }],
            dropped: 0,
            unmatched_ends: 0,
            sample_period: 1,
            time_min_us: 1,
            events: Some(profcc_schema::regions::EventStatus {
                mode: "software".into(),
                why: Some("hardware counters refused (No such file or directory (os error 2)): the machine gives this process no such counters (a virtual machine often has none)".into()),
                counted: vec!["page_faults".into()],
                min_us: 100,
            }),
            snapshots: Vec::new(),
            machine_bandwidth: vec![None],
            totals: vec![crate::model::RegionTotal {
                input: 0,
                region: "triad".into(),
                threads: 1,
                executions: 1,
                bytes: Some(4096),
                seconds: 0.001,
                gbytes_per_s: Some(0.004096),
                machine_share: None,
            }],
        }),
        threads: vec![
            Thread {
                input: 0,
                pid: 42,
                id: 0,
                parent: None,
                accesses: 10,
                created_at: vec![],
            },
            Thread {
                input: 0,
                pid: 42,
                id: 1,
                parent: Some(0),
                accesses: 990,
                created_at: vec![raw, frame("main", 45)],
            },
        ],
        ranks: Some(crate::model::Ranks {
            rows: vec![crate::model::RankRow {
                rank: Some(1),
                input: 0,
                host: "node, 1".into(),
                pid: 7,
                threads: 2,
                accesses: 1000,
                allocations: 4,
                bytes_allocated: 4096,
                peak_bytes: 4096,
                remote_accesses: 100,
                invalidations: 0,
                seconds: 1.5,
            }],
            metrics: vec![],
            spreads: vec![crate::model::RankSpread {
                what: "object".into(),
                key: "heap:init.c:12".into(),
                metric: "bytes".into(),
                spread: crate::model::Spread::of(&[4096.0], &[Some(1)]),
            }],
        }),
        notes: Notes {
            notes: vec!["a note".into()],
            warnings: vec!["/bin/k: missing".into()],
        },
    }
}

/// Model -> JSON -> model gives the model back, with and without the optional sharing section
/// (every report the tests above render goes through the same check in `json_of`).
#[test]
fn json_round_trips_the_model() {
    let mut r = sample_report();
    for _ in 0..2 {
        let mut bytes = Vec::new();
        render::json::write(&r, &mut bytes).unwrap();
        let back: Report = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(back, r);
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v.get("sharing").is_some(), r.sharing.is_some(), "{v}");
        r.sharing = None;
    }
    // The enums are written as docs/report.md says.
    let v = serde_json::to_value(sample_report()).unwrap();
    let f = &v["sharing"]["findings"];
    assert_eq!(f[0]["kind"], "false_sharing");
    assert_eq!(f[0]["objects"][0]["kind"], "global");
    assert_eq!(f[1]["objects"][0]["kind"], "heap");
    assert_eq!(f[1]["objects"][1]["kind"], "stack");
    assert_eq!(
        f[2]["latent"],
        serde_json::json!({"prefetch_pair": true, "shift": 8})
    );
    assert_eq!(f[0]["confidence"], "high");
    assert_eq!(v["access_sites"]["lines"][0]["sites"][0]["kind"], "atomic");
}

/// A mutex of the allocator in words: its place, acquisitions, waits with their time, busy
/// trylocks and mean hold time; how many were listed of how many.
#[test]
fn text_lists_the_allocators_mutexes() {
    let text = render::text::render(&sample_report(), &render::text::TextOptions::default());
    assert!(
        text.contains("the allocator's mutexes (1 of 2, the most contended first):\n    0x7f0000001040 arena_lock+64 (liballoc.so): taken 900, waited for 12 times (3.4 µs), found held by 30 trylocks, held 50 ns on average\n"),
        "{text}"
    );
    // The docs give the place of a mutex without a symbol as the report writes it.
    let doc = [
        include_str!("../../docs/report.md"),
        include_str!("../../docs/csv.md"),
    ]
    .concat();
    assert!(doc.contains(crate::sections::allocator::UNNAMED_LOCK));
}

/// An exit summary the program kept in its profile (stderr was not a terminal) is shown in the
/// text header and kept in the JSON; an older (version 2) profile without one reads as before.
#[test]
fn exit_summary_kept_in_the_profile_is_shown() {
    let mut p = profile(1, vec![site("k.c", 3, 1, "f", AccessKind::Read, 4, 9, 1)]);
    p.exit_summary = vec![
        "profcc: 9 accesses (9 reads, 0 writes) by 2 threads; 0 allocations, 0 B live at peak"
            .into(),
    ];
    let text = text_of(
        vec![Input::new("p.json", p.clone(), None)],
        &Options::default(),
    );
    let at = text
        .find("exit summary (kept in the profile")
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        text[at..].contains("\n    profcc: 9 accesses (9 reads"),
        "{text}"
    );
    let j = json_of(
        vec![Input::new("p.json", p.clone(), None)],
        &Options::default(),
    );
    assert_eq!(
        j["summary"]["inputs"][0]["exit_summary"][0],
        p.exit_summary[0]
    );

    let mut old = p;
    old.exit_summary.clear();
    old.version = 2;
    let text = text_of(vec![Input::new("p.json", old, None)], &Options::default());
    assert!(!text.contains("exit summary"), "{text}");
}

/// Many files are read on every core and merged in command-line order: the inputs, the
/// Ranks rows and the per-line sums are those of the files as given, and a line's threads are
/// per file the largest of its sites' counts, summed over the files.
#[test]
fn many_files_merge_in_command_line_order() {
    let dir = tempfile::tempdir().unwrap();
    let n = 13u64;
    // Given in reverse rank order, so command-line order and rank order differ.
    let paths: Vec<PathBuf> = (0..n)
        .rev()
        .map(|r| {
            let mut p = profile(
                1000 + r as u32,
                vec![
                    site("k.c", 7, 1, "f", AccessKind::Read, 8, 10 * (r + 1), 2),
                    site("k.c", 7, 9, "f", AccessKind::Write, 8, r + 1, 3),
                    site("z.c", 1, 1, "g", AccessKind::Read, 4, 1, 1),
                ],
            );
            p.rank = Some(r as u32);
            p.ranks = Some(n as u32);
            write_profile(dir.path(), &format!("prof.{r}.json"), &p)
        })
        .collect();
    let mut args = vec!["--format", "json", "--top=0"];
    args.extend(paths.iter().map(|p| p.to_str().unwrap()));
    let (code, out, err) = run_args(&args);
    assert_eq!((code, err.as_str()), (0, ""));
    let j: Value = serde_json::from_str(&out).unwrap();
    let given: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let inputs: Vec<&str> = j["summary"]["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .collect();
    assert_eq!(inputs, given);
    let pids: Vec<u64> = j["summary"]["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["pid"].as_u64().unwrap())
        .collect();
    assert_eq!(pids, (0..n).rev().map(|r| 1000 + r).collect::<Vec<_>>());
    // Ranks rows by rank; input n-1-r holds rank r.
    let rows = j["ranks"]["rows"].as_array().unwrap();
    assert_eq!(rows.len() as u64, n);
    for (r, row) in rows.iter().enumerate() {
        let r = r as u64;
        assert_eq!(row["rank"], r);
        assert_eq!(row["input"], n - 1 - r);
        assert_eq!(row["accesses"], 11 * (r + 1) + 1);
    }
    let line = j["access_sites"]["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["file"] == "k.c" && l["line"] == 7)
        .unwrap();
    assert_eq!(line["accesses"], 11 * n * (n + 1) / 2);
    assert_eq!(line["threads"], 3 * n);
    assert_eq!(line["sites"].as_array().unwrap().len(), 2);
    let z = j["access_sites"]["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["file"] == "z.c")
        .unwrap();
    assert_eq!(
        (z["accesses"].as_u64(), z["threads"].as_u64()),
        (Some(n), Some(n))
    );
}

/// With several unreadable files, the first in command-line order is the one named, whichever
/// worker read it, and nothing is printed.
#[test]
fn the_first_unreadable_file_in_order_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let good: Vec<PathBuf> = (0..6)
        .map(|i| {
            write_profile(
                dir.path(),
                &format!("ok.{i}.json"),
                &profile(i, vec![site("k.c", 3, 1, "f", AccessKind::Read, 4, 9, 1)]),
            )
        })
        .collect();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"hello\": 1}").unwrap();
    let missing = dir.path().join("missing.json");
    let mut args: Vec<&str> = good[..5].iter().map(|p| p.to_str().unwrap()).collect();
    args.push(bad.to_str().unwrap());
    args.push(good[5].to_str().unwrap());
    args.push(missing.to_str().unwrap());
    let (code, out, err) = run_args(&args);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "profcc report: {}: not a profcc profile",
            bad.display()
        )),
        "{err}"
    );
    args.swap(5, 7);
    let (code, _, err) = run_args(&args);
    assert_eq!(code, 1);
    assert!(
        err.starts_with(&format!(
            "profcc report: {}: cannot read it:",
            missing.display()
        )),
        "{err}"
    );
}

/// A merged input keeps only what the sections read per input: no allocation sites, only
/// the access sites its sharing records name (renumbered in order; an index past the end
/// stays past the end), and only the stacks a thread's creation or a sharing object names.
#[test]
fn merged_inputs_are_reduced() {
    use profcc_schema::sharing::{LineRecord, LineSite, ObjectKind, ObjectRef, Sharing};
    let sites: Vec<AccessSite> = (0..6)
        .map(|i| site("k.c", 10 + i, 1, "f", AccessKind::Write, 8, 100, 1))
        .collect();
    let mut p = profile(5, sites.clone());
    p.stacks = (1..=4)
        .map(|id| Stack {
            id,
            frames: vec![0x1000 + id as u64],
        })
        .collect();
    p.threads[1].created_at = Some(2);
    p.alloc_sites = vec![AllocSite {
        stack: 1,
        kind: "malloc".into(),
        count: 1,
        bytes: 8,
        ..Default::default()
    }];
    let ls = |site| LineSite {
        site,
        reads: 0,
        writes: 1,
    };
    p.sharing = Some(Sharing {
        lines: vec![LineRecord {
            addr: 0x40,
            sites: vec![ls(5), ls(2), ls(99)],
            objects: vec![ObjectRef {
                kind: ObjectKind::Heap,
                alloc_stack: Some(3),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    });
    let m = Merged::new(vec![Input::new("a.json", p, None)]);
    let q = &m.inputs[0].profile;
    assert!(q.alloc_sites.is_empty() && q.stacks.is_empty());
    assert_eq!(q.sites, vec![sites[2].clone(), sites[5].clone()]);
    let renumbered: Vec<u32> = q.sharing.as_ref().unwrap().lines[0]
        .sites
        .iter()
        .map(|s| s.site)
        .collect();
    assert_eq!(renumbered, [1, 0, 2]);
    assert!(q.sites.get(2).is_none());
    // Stacks 2 (a thread's creation) and 3 (a sharing object) stay; 1 and 4 go.
    assert!(!m.stack(0, 2).is_empty() && !m.stack(0, 3).is_empty());
    assert!(m.stack(0, 1).is_empty() && m.stack(0, 4).is_empty());
    // Merged before reducing: the access sites and the allocation site are all there.
    assert_eq!(m.sites.len(), 6);
    assert_eq!((m.alloc_sites.len(), m.alloc_sites[0].count), (1, 1));
}
