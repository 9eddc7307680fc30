//! The built `profcc` binary against the real clang-22: pass-through fidelity, compile jobs,
//! depfiles, compile+link, response files, `-x`, and no stray files.
//!
//! When the runtime archive has not been built beside the binary (`cargo test -p profcc`
//! alone does not build `profcc-rt`), the tests run a hard-linked copy of profcc next to an
//! empty archive with `PROFCC_INSTRUMENT=none`: they test the driver, not instrumentation.
//! `PROFCC_TEST_FAKE_RUNTIME=1` forces that mode.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

struct Bin {
    path: PathBuf,
    instrument_none: bool,
}

fn bin() -> &'static Bin {
    static B: OnceLock<Bin> = OnceLock::new();
    B.get_or_init(|| {
        let real = PathBuf::from(env!("CARGO_BIN_EXE_profcc"));
        let fake = std::env::var_os("PROFCC_TEST_FAKE_RUNTIME").is_some();
        if real.with_file_name("libprofcc_rt.a").is_file() && !fake {
            return Bin {
                path: real,
                instrument_none: false,
            };
        }
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("profcc-fake-runtime");
        std::fs::create_dir_all(&dir).unwrap();
        let copy = dir.join("profcc");
        let _ = std::fs::remove_file(&copy);
        if std::fs::hard_link(&real, &copy).is_err() {
            std::fs::copy(&real, &copy).unwrap();
        }
        std::fs::write(dir.join("libprofcc_rt.a"), b"!<arch>\n").unwrap();
        Bin {
            path: copy,
            instrument_none: true,
        }
    })
}

/// A scratch directory with its own TMPDIR inside (to check that temporaries are cleaned).
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        let dir = tempfile::Builder::new()
            .prefix("profcc-cli-")
            .tempdir()
            .unwrap();
        std::fs::create_dir(dir.path().join("tmp")).unwrap();
        std::fs::create_dir(dir.path().join("work")).unwrap();
        Scratch { dir }
    }
    fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }
    fn write(&self, name: &str, text: &str) {
        let p = self.work().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    fn profcc(&self, args: &[&str]) -> Output {
        let b = bin();
        let mut c = Command::new(&b.path);
        c.args(args)
            .current_dir(self.work())
            .env("TMPDIR", self.dir.path().join("tmp"));
        for v in [
            "PROFCC_DISABLE",
            "PROFCC_CLANG",
            "PROFCC_DRY_RUN",
            "PROFCC_KEEP_TEMPS",
            "PROFCC_LOG",
            "PROFCC_STATS",
            "PROFCC_NESTED",
        ] {
            c.env_remove(v);
        }
        if b.instrument_none {
            c.env("PROFCC_INSTRUMENT", "none");
        }
        // Keep profiled test programs quiet.
        c.env("PROFCC_OPTIONS", "summary=0:out=/dev/null");
        c.output().unwrap()
    }
    fn clang(&self, args: &[&str]) -> Output {
        Command::new("clang-22")
            .args(args)
            .current_dir(self.work())
            .output()
            .unwrap()
    }
    fn files(&self) -> Vec<String> {
        let mut v = Vec::new();
        walk(&self.work(), &self.work(), &mut v);
        v.sort();
        v
    }
    fn tmp_is_empty(&self) -> bool {
        std::fs::read_dir(self.dir.path().join("tmp"))
            .unwrap()
            .next()
            .is_none()
    }
}

fn walk(root: &Path, d: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(d).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(root, &p, out);
        } else {
            out.push(p.strip_prefix(root).unwrap().display().to_string());
        }
    }
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "failed: {}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
}

fn same(a: &Output, b: &Output) {
    assert_eq!(
        String::from_utf8_lossy(&a.stdout),
        String::from_utf8_lossy(&b.stdout),
        "stdout"
    );
    assert_eq!(
        String::from_utf8_lossy(&a.stderr),
        String::from_utf8_lossy(&b.stderr),
        "stderr"
    );
    assert_eq!(a.status.code(), b.status.code(), "exit code");
}

const LIB_C: &str = "int twice(int x) { return 2 * x; }\n";
const MAIN_C: &str = "#include <stdio.h>\n#include \"lib.h\"\nint main(void) { printf(\"%d\\n\", twice(21)); return 0; }\n";
const LIB_H: &str = "int twice(int x);\n";

#[test]
fn version_is_clangs() {
    let s = Scratch::new();
    same(&s.profcc(&["--version"]), &s.clang(&["--version"]));
    let o = s.profcc(&["--profcc-version"]);
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("profcc "));
}

/// `profcc --help` is clang's help, then a short profcc section a new user can start from:
/// the subcommands, the build-time families, the run-time options, the docs.
#[test]
fn help_is_clangs_then_profccs_own_section() {
    let s = Scratch::new();
    let (p, c) = (s.profcc(&["--help"]), s.clang(&["--help"]));
    ok(&p);
    let (p_out, c_out) = (
        String::from_utf8_lossy(&p.stdout),
        String::from_utf8_lossy(&c.stdout),
    );
    assert!(
        p_out.starts_with(&*c_out),
        "clang's help comes first, unchanged"
    );
    let ours = &p_out[c_out.len()..];
    for want in [
        "profcc report",
        "profcc calibrate",
        "profcc detect-allocator",
        "profcc monitor",
        "PROFCC_INSTRUMENT=",
        "roi-oracle",
        "PROFCC_OPTIONS=",
        "help=1",
        "Docs: ",
    ] {
        assert!(ours.contains(want), "{want} missing from:\n{ours}");
    }
    assert!(ours.lines().count() < 30, "short: {ours}");
    assert_eq!(p.status.code(), c.status.code());
}

#[test]
fn preprocess_is_byte_identical() {
    let s = Scratch::new();
    s.write("lib.h", LIB_H);
    s.write("main.c", MAIN_C);
    same(
        &s.profcc(&["-E", "-DX=1", "main.c"]),
        &s.clang(&["-E", "-DX=1", "main.c"]),
    );
    same(
        &s.profcc(&["-fsyntax-only", "-Wall", "main.c"]),
        &s.clang(&["-fsyntax-only", "-Wall", "main.c"]),
    );
    same(
        &s.profcc(&["-print-prog-name=ld"]),
        &s.clang(&["-print-prog-name=ld"]),
    );
}

#[test]
fn failing_compile_keeps_clangs_exit_code_and_leaves_no_output() {
    let s = Scratch::new();
    s.write("bad.c", "int main(void) { return undeclared; }\n");
    s.write("bad.o", "stale");
    let p = s.profcc(&["-c", "bad.c", "-o", "bad.o"]);
    let c = s.clang(&["-c", "bad.c", "-o", "bad.o"]);
    same(&p, &c);
    assert!(!p.status.success());
    assert_eq!(s.files(), vec!["bad.c"]);
    assert!(s.tmp_is_empty());
}

#[test]
fn compile_with_depfile_names_the_real_object() {
    let s = Scratch::new();
    s.write("src/lib.c", LIB_C);
    s.write("src/main.c", MAIN_C);
    s.write("src/lib.h", LIB_H);
    std::fs::create_dir(s.work().join("obj")).unwrap();
    ok(&s.profcc(&["-O2", "-MMD", "-MP", "-c", "src/main.c", "-o", "obj/main.o"]));
    let dep = std::fs::read_to_string(s.work().join("obj/main.d")).unwrap();
    assert!(dep.starts_with("obj/main.o:"), "{dep}");
    // exactly what clang writes
    ok(&s.clang(&["-O2", "-MMD", "-MP", "-c", "src/main.c", "-o", "obj/ref.o"]));
    let reference = std::fs::read_to_string(s.work().join("obj/ref.d")).unwrap();
    assert_eq!(dep, reference.replace("obj/ref.o", "obj/main.o"));
    let obj = std::fs::read(s.work().join("obj/main.o")).unwrap();
    assert_eq!(&obj[..4], b"\x7fELF", "native object");
    assert!(s.tmp_is_empty());
}

#[test]
fn compile_and_link_with_objects_in_order() {
    let s = Scratch::new();
    s.write("lib.c", LIB_C);
    s.write("lib.h", LIB_H);
    s.write("main.c", MAIN_C);
    ok(&s.clang(&["-c", "lib.c", "-o", "lib.o"])); // an object profcc did not build
    ok(&s.profcc(&["-O1", "main.c", "lib.o", "-lm", "-o", "prog"]));
    let run = Command::new(s.work().join("prog"))
        .env("PROFCC_OPTIONS", "summary=0:out=/dev/null")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&run.stdout), "42\n");
    assert_eq!(s.files(), vec!["lib.c", "lib.h", "lib.o", "main.c", "prog"]);
    assert!(s.tmp_is_empty());
}

#[test]
fn several_sources_with_c_go_to_cwd() {
    let s = Scratch::new();
    s.write("src/lib.c", LIB_C);
    s.write("src/main.c", MAIN_C);
    s.write("src/lib.h", LIB_H);
    ok(&s.profcc(&["-c", "src/lib.c", "src/main.c"]));
    assert_eq!(
        s.files(),
        vec!["lib.o", "main.o", "src/lib.c", "src/lib.h", "src/main.c"]
    );
    ok(&s.profcc(&["lib.o", "main.o", "-o", "prog"]));
    assert!(s.work().join("prog").is_file());
    assert!(s.tmp_is_empty());
}

#[test]
fn response_file_with_gnu_quoting() {
    let s = Scratch::new();
    s.write(
        "m.c",
        "#include <stdio.h>\nint main(void){ puts(MSG); return 0; }\n",
    );
    s.write(
        "args.rsp",
        "-O2 '-DMSG=\"hello world\"'\n-c m.c -o \"out file.o\"\n",
    );
    ok(&s.profcc(&["@args.rsp"]));
    assert!(s.work().join("out file.o").is_file());
    ok(&s.profcc(&["out file.o", "-o", "m"]));
    let run = Command::new(s.work().join("m"))
        .env("PROFCC_OPTIONS", "summary=0:out=/dev/null")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&run.stdout), "hello world\n");
}

#[test]
fn x_c_makes_any_file_a_c_source() {
    let s = Scratch::new();
    s.write("code.txt", LIB_C);
    ok(&s.profcc(&["-x", "c", "-c", "code.txt", "-o", "code.o"]));
    let obj = std::fs::read(s.work().join("code.o")).unwrap();
    assert_eq!(&obj[..4], b"\x7fELF");
    assert_eq!(s.files(), vec!["code.o", "code.txt"]);
}

#[test]
fn assembly_output_and_werror_stay_clean() {
    let s = Scratch::new();
    s.write("lib.c", LIB_C);
    let o = s.profcc(&["-Wall", "-Wextra", "-Werror", "-O2", "-S", "lib.c"]);
    ok(&o);
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr).trim()
    );
    let asm = std::fs::read_to_string(s.work().join("lib.s")).unwrap();
    assert!(asm.contains("twice"));
}

#[test]
fn disable_and_prefix_mode() {
    let s = Scratch::new();
    s.write("lib.c", LIB_C);
    let mut c = Command::new(&bin().path);
    c.args(["-c", "lib.c", "-o", "plain.o"])
        .current_dir(s.work())
        .env("PROFCC_DISABLE", "1");
    ok(&c.output().unwrap());
    assert!(s.work().join("plain.o").is_file());
    ok(&s.profcc(&["clang-22", "-c", "lib.c", "-o", "prefixed.o"]));
    assert!(s.work().join("prefixed.o").is_file());
    // prefix mode with --version still gives clang's output
    same(
        &s.profcc(&["clang-22", "--version"]),
        &s.clang(&["--version"]),
    );
}

#[test]
fn dry_run_does_nothing() {
    let s = Scratch::new();
    s.write("lib.c", LIB_C);
    let mut c = Command::new(&bin().path);
    c.args(["-c", "lib.c"])
        .current_dir(s.work())
        .env("PROFCC_DRY_RUN", "1");
    let o = c.output().unwrap();
    ok(&o);
    let plan = String::from_utf8_lossy(&o.stdout);
    assert!(
        plan.contains("-emit-llvm") && plan.contains("-disable-llvm-passes"),
        "{plan}"
    );
    assert_eq!(s.files(), vec!["lib.c"]);
}

// ---------------------------------------------------------------------------------------------
// Subcommands (clap): `profcc report ...`. Usage errors are one line naming the problem and the
// way out, exit code 2; a first argument that only looks like a subcommand stays clang's.

/// A minimal profile the report accepts.
const PROFILE: &str = r#"{"format": "profcc-profile", "version": 2, "exe": "/bin/k", "pid": 7,
  "host": "h", "argv": ["k"], "duration_ns": 1000, "trigger": "exit", "options": {},
  "modules": [], "threads": [{"id": 0, "parent": null, "created_at": null, "accesses": 1}],
  "sites": [{"file": "k.c", "line": 3, "col": 1, "function": "main", "inlined_at": null,
             "kind": "read", "size": 4, "count": 1, "bytes": 4, "threads": 1}],
  "stacks": [], "alloc_sites": [],
  "totals": {"accesses": 1, "reads": 1, "writes": 0, "bytes_read": 4, "bytes_written": 0,
             "unattributed": 0, "allocations": 0, "frees": 0, "bytes_allocated": 0,
             "live_bytes_peak": 0, "threads": 1},
  "notes": []}"#;

fn one_line_usage_error(o: &Output, wanted: &[&str]) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("profcc report: "), "{err}");
    assert!(
        err.contains("profcc report --help"),
        "names the way out: {err}"
    );
    for w in wanted {
        assert!(err.contains(w), "{w:?} missing from: {err}");
    }
    assert!(o.stdout.is_empty());
}

#[test]
fn report_usage_errors() {
    let s = Scratch::new();
    one_line_usage_error(
        &s.profcc(&["report"]),
        &["<PROFILE>", "usage: profcc report"],
    );
    one_line_usage_error(
        &s.profcc(&["report", "--format", "xml", "p.json"]),
        &["'xml'", "--format", "text, json"],
    );
    one_line_usage_error(
        &s.profcc(&["report", "--top", "many", "p.json"]),
        &["'many'", "--top"],
    );
    one_line_usage_error(
        &s.profcc(&["report", "--frobnicate", "p.json"]),
        &["'--frobnicate'"],
    );
    one_line_usage_error(
        &s.profcc(&["report", "--csv", "d", "-o", "f", "p.json"]),
        &["--csv", "--output"],
    );
    // --csv never replaces a file that is not a directory.
    s.write("p.json", PROFILE);
    s.write("taken.csv", "mine\n");
    let o = s.profcc(&["report", "--csv", "taken.csv", "p.json"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("taken.csv: exists and is not a directory"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(s.work().join("taken.csv")).unwrap(),
        "mine\n"
    );

    let o = s.profcc(&["report", "--help"]);
    ok(&o);
    let help = String::from_utf8_lossy(&o.stdout);
    for w in [
        "--format",
        "text",
        "json",
        "--top",
        "--stack-depth",
        "--output",
        "--csv",
    ] {
        assert!(help.contains(w), "{w} missing from --help:\n{help}");
    }
}

#[test]
fn report_csv_writes_one_file_per_table() {
    let s = Scratch::new();
    s.write("p.json", PROFILE);
    let o = s.profcc(&["report", "p.json", "--csv", "out/tables"]);
    ok(&o);
    assert!(o.stdout.is_empty());
    let mut files: Vec<String> = std::fs::read_dir(s.work().join("out/tables"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "access_sites.csv",
            "alloc_channels.csv",
            "alloc_locks.csv",
            "alloc_ops.csv",
            "alloc_overhead.csv",
            "alloc_sites.csv",
            "findings.csv",
            "numa_binding.csv",
            "numa_objects.csv",
            "numa_sites.csv",
            "numa_threads.csv",
            "objects.csv",
            "rank_spreads.csv",
            "ranks.csv",
            "region_totals.csv",
            "regions.csv",
            "sharing_below_threshold.csv",
            "sharing_findings.csv",
            "threads.csv"
        ]
    );
    let threads = std::fs::read_to_string(s.work().join("out/tables/threads.csv")).unwrap();
    assert!(
        threads.starts_with("input,rank,pid,id,parent,accesses,"),
        "{threads}"
    );
}

#[test]
fn only_an_exact_subcommand_name_leaves_clang_path() {
    // `profcc report.c -c` is a compile (clang's command line), not the report subcommand.
    let s = Scratch::new();
    s.write("report.c", "int f(void) { return 1; }\n");
    let o = s.profcc(&["report.c", "-c", "-o", "report.o"]);
    ok(&o);
    assert!(s.work().join("report.o").is_file());
}
