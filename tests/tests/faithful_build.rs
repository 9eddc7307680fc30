//! Faithful builds: what a build system finds out about profcc is what it finds out about
//! clang-22 (CMake's tool and implicit-library detection, flag and function checks, FindOpenMP;
//! autoconf's checks), and a command line profcc cannot instrument says so in one line instead
//! of silently giving no profile (issue 9, items 10 and 11).
//!
//! Every case is built once with clang-22 and once with profcc and compared as a user would
//! compare them: configure results, exit codes, stderr, the files left behind, the program's run.

use profcc_schema::AccessKind;
use profcc_tests::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

const CLANG: &str = "clang-22";
const CLANGXX: &str = "clang++-22";

/// Run a command (bounded by `output_within`), panic with its output when it fails.
fn run_ok(cmd: &mut Command) -> Output {
    let out = output_within(cmd);
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        tail(&String::from_utf8_lossy(&out.stdout), 60),
        tail(&String::from_utf8_lossy(&out.stderr), 60)
    );
    out
}

/// A shell command line in `dir` (for stdin redirections: `output_within` closes stdin).
fn shell(dir: &Path, line: &str) -> Output {
    output_within(Command::new("sh").arg("-c").arg(line).current_dir(dir))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// profcc's notes about a build it did not instrument.
fn notes(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("profcc: note:"))
        .collect()
}

/// stderr without profcc's notes.
fn without_notes(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| !l.starts_with("profcc: note:"))
        .map(|l| format!("{l}\n"))
        .collect()
}

fn cache_entries(build: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(build.join("CMakeCache.txt")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("//"))
        .filter_map(|l| {
            let (k, v) = l.split_once('=')?;
            let name = k.split(':').next().unwrap_or(k);
            Some((name.to_string(), v.to_string()))
        })
        .collect()
}

#[test]
fn cmake_results_match_clang22() {
    let s = Scratch::new();
    let toolchain = text(&run_ok(Command::new(profcc()).arg("--print-cmake-toolchain")).stdout);
    let toolchain = toolchain.trim();
    for tag in ["profcc", "clang"] {
        let mut c = Command::new("cmake");
        c.arg("-S")
            .arg(fixture("faithful/build/cmake"))
            .arg("-B")
            .arg(s.path(tag))
            .env_remove("CC")
            .env_remove("CFLAGS")
            .env_remove("LDFLAGS");
        if tag == "profcc" {
            c.arg(format!("-DCMAKE_TOOLCHAIN_FILE={toolchain}"));
        } else {
            c.arg(format!("-DCMAKE_C_COMPILER={CLANG}"));
        }
        run_ok(&mut c);
    }
    let read = |tag: &str| std::fs::read_to_string(s.path(tag).join("results.txt")).unwrap();
    assert_eq!(
        read("profcc"),
        read("clang"),
        "implicit link libraries/directories or FindOpenMP/Threads results differ"
    );
    assert!(
        read("clang").contains("OpenMP_C_FOUND=TRUE"),
        "{}",
        read("clang")
    );
    let (p, c) = (
        cache_entries(&s.path("profcc")),
        cache_entries(&s.path("clang")),
    );
    assert!(p.contains_key("PROFCC_EXECUTABLE") && !c.contains_key("PROFCC_EXECUTABLE"));
    let mut compared = 0;
    for (k, v) in &c {
        let tool = k.starts_with("CMAKE_")
            && [
                "_AR",
                "_NM",
                "_RANLIB",
                "_LINKER",
                "_OBJCOPY",
                "_OBJDUMP",
                "_READELF",
                "_STRIP",
                "_ADDR2LINE",
                "_DLLTOOL",
            ]
            .iter()
            .any(|t| k.ends_with(t));
        if tool || k.starts_with("HAVE_") || k.starts_with("OpenMP_") {
            assert_eq!(p.get(k), Some(v), "cache entry {k} differs");
            compared += 1;
        }
    }
    assert!(compared >= 15, "only {compared} cache entries compared");
    assert!(c["CMAKE_AR"].ends_with("llvm-ar-22"), "{}", c["CMAKE_AR"]);
    assert_eq!(
        c["HAVE_FLAG_FLTO"], "",
        "clang-22 -flto objects should not link without it"
    );
    assert_eq!(c["HAVE_FLAG_WALL"], "1");
}

#[test]
fn autoconf_results_match_clang22() {
    let s = Scratch::new();
    let src = s.path("src");
    copy_tree(&fixture("faithful/build/autoconf"), &src);
    run_ok(Command::new("autoconf").current_dir(&src));
    run_ok(Command::new("autoheader").current_dir(&src));
    for (tag, cc) in [
        ("profcc", profcc().display().to_string()),
        ("clang", CLANG.to_string()),
    ] {
        let dir = s.path(tag);
        std::fs::create_dir_all(&dir).unwrap();
        run_ok(
            Command::new(src.join("configure"))
                .arg(format!("CC={cc}"))
                .arg("CFLAGS=-O1")
                .env_remove("LIBS")
                .env_remove("LDFLAGS")
                .current_dir(&dir),
        );
    }
    let read = |tag: &str, f: &str| std::fs::read_to_string(s.path(tag).join(f)).unwrap();
    assert_eq!(
        read("profcc", "config.h"),
        read("clang", "config.h"),
        "config.h differs between CC=profcc and CC=clang-22"
    );
    assert!(read("clang", "config.h").contains("#define LINKS_FLTO \"no\""));
    // The cache variables config.log lists (results of every check), minus the compiler's name.
    let cache = |tag: &str| -> Vec<String> {
        read(tag, "config.log")
            .lines()
            .skip_while(|l| !l.contains("## Cache variables"))
            .take_while(|l| !l.contains("## Output variables"))
            .filter(|l| l.starts_with("ac_cv_") && !l.contains("_CC"))
            .map(String::from)
            .collect()
    };
    assert!(cache("clang").len() > 10, "{:?}", cache("clang"));
    assert_eq!(
        cache("profcc"),
        cache("clang"),
        "config.log cache variables differ"
    );
}

const COUNTER_C: &str = r#"#include <stdio.h>
volatile int sink[16];
int main(void) {
    int unused;
    for (int i = 0; i < 1000; i++)
        sink[i & 15] += i; // STORE
    printf("%d\n", sink[3]);
    return 0;
}
"#;

#[test]
fn stdin_source_is_instrumented() {
    let s = Scratch::new();
    s.write("counter.c", COUNTER_C);
    let dir = s.dir.path();
    let cc = profcc().display().to_string();
    // compile and link from stdin; diagnostics name <stdin> as clang-22's do
    let native = shell(
        dir,
        &format!("{CLANG} -Wall -O1 -x c - -o native < counter.c"),
    );
    let prof = shell(dir, &format!("{cc} -Wall -O1 -x c - -o prof < counter.c"));
    assert!(
        native.status.success() && prof.status.success(),
        "{}",
        text(&prof.stderr)
    );
    assert_eq!(
        text(&prof.stderr),
        text(&native.stderr),
        "diagnostics differ"
    );
    assert!(
        text(&native.stderr).contains("<stdin>"),
        "{}",
        text(&native.stderr)
    );
    let line = line_of(COUNTER_C, "// STORE");
    let (out, p) = s.run_profiled("prof", &[], "");
    assert_same_run("stdin build", &s.run_plain("native", &[]), &out);
    assert!(
        count_at(&p, "", line, AccessKind::Write) >= 1000,
        "expected 1000 writes at line {line}: {:?}",
        p.sites
    );
    // -c from stdin writes clang's `-.o`; linked, it profiles too
    let c = shell(dir, &format!("{cc} -O1 -x c -c - < counter.c"));
    assert!(c.status.success(), "{}", text(&c.stderr));
    assert!(s.path("-.o").is_file());
    s.compile(&profcc(), &["./-.o", "-o", "prof2"]);
    let (_, p) = s.run_profiled("prof2", &[], "");
    assert!(count_at(&p, "", line, AccessKind::Write) >= 1000);
}

#[test]
fn flto_objects_are_bitcode_as_with_clang22() {
    let s = Scratch::new();
    s.write("counter.c", COUNTER_C);
    let build = |cc: &Path, obj: &str| {
        s.compile(cc, &["-O2", "-flto", "-c", "counter.c", "-o", obj]);
        // linking bitcode without -flto fails for both
        let o = output_within(
            Command::new(cc)
                .args([obj, "-o", &format!("{obj}.nolto")])
                .current_dir(s.dir.path()),
        );
        assert!(
            !o.status.success(),
            "{} linked bitcode without -flto",
            cc.display()
        );
    };
    build(Path::new(CLANG), "native.o");
    build(&profcc(), "prof.o");
    s.compile(Path::new(CLANG), &["-flto", "native.o", "-o", "native"]);
    s.compile(&profcc(), &["-flto", "prof.o", "-o", "prof"]);
    let (out, p) = s.run_profiled("prof", &[], "");
    assert_same_run("-flto build", &s.run_plain("native", &[]), &out);
    assert!(
        p.sites.iter().map(|s| s.count).sum::<u64>() >= 1000,
        "{:?}",
        p.sites
    );
}

/// A command line profcc passes to clang unchanged: clang-22's stderr plus one note naming
/// the reason, the same exit code and the same files.
fn passes_through_with_a_note(compiler: &Path, clang: &str, args: &[&str], word: &str) {
    let s = Scratch::new();
    s.write("counter.c", COUNTER_C);
    s.write(
        "m.cppm",
        "export module m;\nexport int twice(int x) { return 2 * x; }\n",
    );
    for d in ["native", "prof"] {
        std::fs::create_dir_all(s.path(d)).unwrap();
        for f in ["counter.c", "m.cppm"] {
            std::fs::copy(s.path(f), s.path(d).join(f)).unwrap();
        }
    }
    let native = output_within(Command::new(clang).args(args).current_dir(s.path("native")));
    let prof = output_within(
        Command::new(compiler)
            .args(args)
            .current_dir(s.path("prof")),
    );
    assert_eq!(
        prof.status.code(),
        native.status.code(),
        "{args:?}: exit code"
    );
    let err = text(&prof.stderr);
    assert_eq!(
        without_notes(&err),
        text(&native.stderr),
        "{args:?}: stderr"
    );
    let n = notes(&err);
    assert_eq!(n.len(), 1, "{args:?}: expected one note, got:\n{err}");
    assert!(
        n[0].contains(word) && n[0].contains("no profile"),
        "{}",
        n[0]
    );
    let files = |d: &str| {
        let mut v: Vec<String> = std::fs::read_dir(s.path(d))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        files("prof"),
        files("native"),
        "{args:?}: files left behind"
    );
}

#[test]
fn sanitizer_says_so_in_one_line() {
    passes_through_with_a_note(
        &profcc(),
        CLANG,
        &["-fsanitize=address", "-O1", "counter.c", "-o", "asan"],
        "-fsanitize=address",
    );
}

#[test]
fn save_temps_keeps_clangs_temps_and_says_so() {
    passes_through_with_a_note(
        &profcc(),
        CLANG,
        &["-save-temps", "-O1", "-c", "counter.c"],
        "-save-temps",
    );
}

#[test]
fn cxx_module_unit_says_so_in_one_line() {
    passes_through_with_a_note(
        &profcxx(),
        CLANGXX,
        &["-std=c++20", "-c", "m.cppm", "-o", "m.o"],
        "module",
    );
}

#[test]
fn configure_probes_get_no_note() {
    // autoconf's file names: the probe's output stays clang-22's exactly
    let s = Scratch::new();
    s.write("conftest.c", COUNTER_C);
    for args in [
        &["-fsanitize=address", "-c", "conftest.c", "-o", "conftest.o"][..],
        &["-save-temps", "-c", "conftest.c"][..],
    ] {
        let native = output_within(Command::new(CLANG).args(args).current_dir(s.dir.path()));
        let prof = output_within(Command::new(profcc()).args(args).current_dir(s.dir.path()));
        assert_eq!(text(&prof.stderr), text(&native.stderr), "{args:?}");
        assert_eq!(prof.status.code(), native.status.code(), "{args:?}");
    }
}
