//! Instrumented shared libraries (issue 9, items 1 and 8): built with profcc they behave as
//! their clang-22 build under lazy binding, link with `-z defs`, load into programs without
//! profcc's runtime (linked and by `dlopen`), and are still profiled in a profcc-built
//! executable. Fixtures: tests/fixtures/faithful/dso/ (a library with a struct-filling
//! function, a main that calls it, a main that dlopens it).

use profcc_schema::AccessKind::Write;
use profcc_tests::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn clang() -> PathBuf {
    PathBuf::from("clang-22")
}

fn src(name: &str) -> String {
    fixture("faithful/dso").join(name).display().to_string()
}

/// `dir/libdso.so` built by `cc` from the fixture (`-O2 -fPIC -shared`, plus `extra`).
fn build_lib(s: &Scratch, cc: &Path, dir: &str, extra: &[&str]) -> PathBuf {
    std::fs::create_dir_all(s.path(dir)).unwrap();
    let out = format!("{dir}/libdso.so");
    let lib = src("dso.c");
    let mut args = vec!["-O2", "-fPIC", "-shared", lib.as_str(), "-o", out.as_str()];
    args.extend_from_slice(extra);
    s.compile(cc, &args);
    s.path(&out)
}

/// `exe` built by `cc` from the fixture's main.c, linked against `lib_dir/libdso.so` (run path
/// set, lazy binding: the default).
fn build_main(s: &Scratch, cc: &Path, lib_dir: &str, exe: &str) {
    let dir = s.path(lib_dir).display().to_string();
    let (main, inc) = (src("main.c"), fixture("faithful/dso").display().to_string());
    let rpath = format!("-Wl,-rpath,{dir}");
    s.compile(
        cc,
        &[
            "-O2", "-I", &inc, &main, "-L", &dir, "-ldso", &rpath, "-o", exe,
        ],
    );
}

/// Run a program of the scratch directory without `LD_BIND_NOW` (lazy binding).
fn run_lazy(s: &Scratch, exe: &str, args: &[&str]) -> Output {
    output_within(
        Command::new(s.path(exe))
            .current_dir(s.path(""))
            .args(args)
            .env_remove("LD_BIND_NOW")
            .env("PROFCC_OPTIONS", "summary=0"),
    )
}

fn assert_same_all(what: &str, native: &Output, other: &Output) {
    assert_same_run(what, native, other);
    assert_eq!(
        String::from_utf8_lossy(&native.stderr),
        String::from_utf8_lossy(&other.stderr),
        "{what}: stderr differs"
    );
}

/// The two-file repro: the library's first sampled access reached the `preserve_most` door
/// through a lazy PLT entry, whose resolver clobbered r10 (rc 139). The door must be bound at
/// load time: no JUMP_SLOT relocation for it.
#[test]
fn lazy_binding_two_file_repro() {
    let s = Scratch::new();
    build_lib(&s, &clang(), "native", &[]);
    let lib = build_lib(&s, &profcc(), "profcc", &[]);
    build_main(&s, &clang(), "native", "main_native");
    build_main(&s, &profcc(), "profcc", "main_profcc");
    for n in ["100", "7", "3000"] {
        let native = run_lazy(&s, "main_native", &[n]);
        let profiled = run_lazy(&s, "main_profcc", &[n]);
        assert_eq!(native.status.code(), Some(3));
        assert_same_run(&format!("two-file repro, n={n}"), &native, &profiled);
    }
    let relocs = sh(Command::new("llvm-readelf-22").arg("-r").arg(&lib));
    let text = String::from_utf8_lossy(&relocs.stdout);
    // The doors (custom calling convention) must be bound at load time; plain C entries such
    // as the module destructor's `__profcc_unregister_module` may bind lazily.
    let doors = ["__profcc_slow", "__profcc_range_slow"];
    for line in text
        .lines()
        .filter(|l| l.split_whitespace().any(|w| doors.contains(&w)))
    {
        assert!(
            !line.contains("JUMP_SLOT"),
            "a door of the instrumented library goes through a lazy PLT entry:\n{line}"
        );
    }
    assert!(
        text.lines()
            .any(|l| l.contains("__profcc_slow") && l.contains("GLOB_DAT")),
        "the library calls the door through the GOT:\n{text}"
    );
}

/// `-z defs` (Meson's default) and a libtool-style link (objects compiled first, then a
/// link-only `-shared` call with `--no-undefined` and a soname) succeed as with clang-22.
#[test]
fn z_defs_shared_link() {
    let s = Scratch::new();
    for cc in [clang(), profcc()] {
        build_lib(&s, &cc, "zdefs", &["-Wl,-z,defs"]);
        std::fs::create_dir_all(s.path("libtool/.libs")).unwrap();
        let lib = src("dso.c");
        s.compile(
            &cc,
            &[
                "-O2",
                "-fPIC",
                "-DPIC",
                "-c",
                &lib,
                "-o",
                "libtool/.libs/dso.o",
            ],
        );
        s.compile(
            &cc,
            &[
                "-shared",
                "-fPIC",
                "-DPIC",
                "libtool/.libs/dso.o",
                "-O2",
                "-Wl,--no-undefined",
                "-Wl,-soname",
                "-Wl,libdso.so.1",
                "-o",
                "libtool/.libs/libdso.so.1.0.0",
            ],
        );
    }
    // Only the hooks' symbols come from the stubs: nothing else is defined for the library.
    let dynsym = sh(Command::new("llvm-nm-22")
        .args(["-D", "--defined-only"])
        .arg(s.path("libtool/.libs/libdso.so.1.0.0")));
    for line in String::from_utf8_lossy(&dynsym.stdout).lines() {
        let name = line.rsplit(' ').next().unwrap_or("");
        assert!(
            name.starts_with("dso_")
                || name.starts_with("__profcc_")
                || ["_init", "_fini", "_edata", "_end", "__bss_start"].contains(&name),
            "unexpected exported symbol {name}"
        );
    }
}

/// A clang-22 main linked against the profcc-built library runs as with the clang-22 library:
/// same stdout, stderr and exit code (the library is not profiled there).
#[test]
fn uninstrumented_main_links_profcc_so() {
    let s = Scratch::new();
    build_lib(&s, &clang(), "native", &[]);
    build_lib(&s, &profcc(), "profcc", &[]);
    build_main(&s, &clang(), "native", "with_native_lib");
    build_main(&s, &clang(), "profcc", "with_profcc_lib");
    for n in ["100", "3000"] {
        let native = run_lazy(&s, "with_native_lib", &[n]);
        let other = run_lazy(&s, "with_profcc_lib", &[n]);
        assert_same_all(
            &format!("clang-22 main + profcc library, n={n}"),
            &native,
            &other,
        );
    }
    let profiles: Vec<_> = std::fs::read_dir(s.path(""))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .collect();
    assert!(
        profiles.is_empty(),
        "no profile without the runtime: {profiles:?}"
    );
}

/// The same through `dlopen(RTLD_LAZY)` from a clang-22 program that was never linked
/// against the library.
#[test]
fn uninstrumented_main_dlopens_profcc_so() {
    let s = Scratch::new();
    let native_lib = build_lib(&s, &clang(), "native", &[]);
    let profcc_lib = build_lib(&s, &profcc(), "profcc", &[]);
    let inc = fixture("faithful/dso").display().to_string();
    s.compile(
        &clang(),
        &[
            "-O2",
            "-I",
            &inc,
            &src("main_dlopen.c"),
            "-ldl",
            "-o",
            "loader",
        ],
    );
    let native = run_lazy(&s, "loader", &[&native_lib.display().to_string()]);
    let other = run_lazy(&s, "loader", &[&profcc_lib.display().to_string()]);
    assert_eq!(native.status.code(), Some(4), "{native:?}");
    assert_same_all("dlopen of the profcc library", &native, &other);
}

/// A profcc-built executable with the profcc-built library: the library's accesses are in
/// the profile, exactly.
#[test]
fn instrumented_exe_profiles_so_accesses() {
    let s = Scratch::new();
    build_lib(&s, &profcc(), "profcc", &[]);
    build_main(&s, &profcc(), "profcc", "main");
    let (out, p) = s.run_profiled("main", &[], "summary=0");
    assert_eq!(out.status.code(), Some(3));
    let text = std::fs::read_to_string(fixture("faithful/dso/dso.c")).unwrap();
    let line = line_of(&text, "MARK_DSO_STORE");
    assert_eq!(
        count_at(&p, "dso.c", line, Write),
        1000,
        "the library's volatile store, 1000 rounds"
    );
}

/// A library whose version script makes everything else local also hides its hook stubs: it
/// binds to them and is not profiled even in a profcc-built executable. It still runs as its
/// clang-22 build, and says so in one line.
#[test]
fn version_script_hiding_the_hooks_says_so() {
    let s = Scratch::new();
    s.write("dso.map", "DSO_1 { global: dso_*; local: *; };\n");
    let script = format!("-Wl,--version-script,{}", s.path("dso.map").display());
    build_lib(&s, &clang(), "native", &[&script]);
    build_lib(&s, &profcc(), "profcc", &[&script]);
    build_main(&s, &clang(), "native", "main_native");
    build_main(&s, &profcc(), "profcc", "main_profcc");
    let native = run_lazy(&s, "main_native", &[]);
    let profiled = run_lazy(&s, "main_profcc", &[]);
    assert_same_run("version script", &native, &profiled);
    let err = String::from_utf8_lossy(&profiled.stderr);
    assert_eq!(
        err.lines().filter(|l| l.contains("version script")).count(),
        1,
        "{err}"
    );
}
