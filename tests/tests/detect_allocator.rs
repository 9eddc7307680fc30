//! `profcc detect-allocator` (driver/src/detect.rs, allocator-probe/): each allocator the
//! probe measures here must match its shipped description in configs/allocators/ (a test
//! fails when a shipped file drifts from what the probe measures) and the values measured on
//! Debian 12 (docs/allocators.md); `--exe` finds the allocator a program links, dynamically or
//! statically and `je_`-prefixed; every bad input is one line on stderr, exit code 2, and no
//! output file.

use profcc_allocator_probe::{from_toml, size_kind, Description};
use profcc_tests::{build_prefixed_static_jemalloc, fixture, output_within, profcc, Scratch};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const LIBDIR: &str = "/usr/lib/x86_64-linux-gnu";

fn shipped(file: &str) -> Description {
    profcc_allocator_probe::shipped()
        .into_iter()
        .find(|(f, _)| *f == file)
        .unwrap_or_else(|| panic!("{file} is not in profcc_allocator_probe::SHIPPED"))
        .1
}

fn run_detect(s: &Scratch, args: &[&str], out: &str) -> Output {
    output_within(
        Command::new(profcc())
            .current_dir(s.dir.path())
            .arg("detect-allocator")
            .args(args)
            .arg("-o")
            .arg(s.path(out)),
    )
}

/// Run `profcc detect-allocator ARGS -o FILE` and read FILE.
fn detect(s: &Scratch, args: &[&str]) -> Description {
    let out = run_detect(s, args, "alloc.toml");
    assert!(
        out.status.success(),
        "detect-allocator {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(s.path("alloc.toml")).unwrap();
    from_toml(&text).unwrap_or_else(|e| panic!("{e}:\n{text}"))
}

/// The installed library, or None after saying why the test is skipped.
fn installed(lib: &str) -> Option<String> {
    let p = Path::new(LIBDIR).join(lib);
    if p.exists() {
        Some(p.display().to_string())
    } else {
        eprintln!(
            "skipped: {} is not installed (`cargo xtask setup` installs it)",
            p.display()
        );
        None
    }
}

/// The keys the runtime uses are those of the shipped file; the probe took under 5 s.
fn assert_matches_shipped(d: &Description, file: &str) {
    let s = shipped(file);
    assert_eq!(d.name, s.name, "{file}: name");
    assert_eq!(d.version, s.version, "{file}: version");
    assert_eq!(d.style, s.style, "{file}: style");
    assert_eq!(d.size_classes, s.size_classes, "{file}: size_classes");
    assert_eq!(d.granularity, s.granularity, "{file}: granularity");
    assert_eq!(d.min_size, s.min_size, "{file}: min_size");
    assert_eq!(d.small_max, s.small_max, "{file}: small_max");
    assert_eq!(
        d.large_threshold, s.large_threshold,
        "{file}: large_threshold"
    );
    assert_eq!(d.big_via, s.big_via, "{file}: big_via");
    assert_eq!(d.channels.imports, s.channels.imports, "{file}: channels");
    assert_eq!(
        d.realloc_check, "agrees",
        "{file}: realloc disagrees with the classes"
    );
    assert!(
        d.probe.wall_ms < 5000.0,
        "{file}: the probe took {} ms",
        d.probe.wall_ms
    );
}

fn classes_up_to(d: &Description) -> (usize, u64) {
    (d.size_classes.len(), *d.size_classes.last().unwrap())
}

#[test]
fn glibc_matches_shipped_description() {
    let s = Scratch::new();
    let d = detect(&s, &[]);
    assert_matches_shipped(&d, "glibc-2.36.toml");
    assert_eq!(d.name, "glibc");
    assert_eq!(d.version.as_deref(), Some("2.36"));
    assert_eq!(d.identified_by, "symbol gnu_get_libc_version");
    assert_eq!(d.style, "sequential");
    assert_eq!((d.min_size, d.granularity), (Some(24), Some(16)));
    assert!(d.size_classes.is_empty());
    // 128 KiB chunks: a request of 128 KiB - 23 bytes (8 of header, rounded to 16).
    assert_eq!((d.small_max, d.large_threshold), (131048, 131049));
    assert_eq!(d.large_threshold_thread, Some(131049));
    assert_eq!(d.big_via, "mmap");
    // Up to 32 MiB chunks: the largest request whose free raises the threshold.
    assert_eq!(d.mmap_threshold_slides_to, Some(32 * 1024 * 1024 - 8192));
    assert!(d.brk_heap);
    // glibc's malloc calls mmap, futex... inside libc: none of it goes through a PLT.
    assert!(d.channels.imports.is_empty(), "{:?}", d.channels);
    assert_eq!(d.probe.mode, "system");
}

#[test]
fn jemalloc_matches_shipped_description() {
    let Some(lib) = installed("libjemalloc.so.2") else {
        return;
    };
    let s = Scratch::new();
    let d = detect(&s, &["--preload", &lib]);
    assert_matches_shipped(&d, "jemalloc-5.3.0.toml");
    assert_eq!(d.name, "jemalloc");
    assert_eq!(d.version.as_deref(), Some("5.3.0"));
    assert_eq!(d.identified_by, "symbol mallctl");
    assert_eq!(d.style, "bibop");
    assert_eq!(classes_up_to(&d), (36, 14336));
    assert_eq!(d.small_max_by, "isolated objects");
    assert_eq!(d.large_threshold, 14337);
    assert_eq!(d.first_big_size, Some(16384));
    assert_eq!(d.big_via, "extent");
    assert!(!d.brk_heap);
    assert!(d.channels.mmap && d.channels.madvise && d.channels.pthread_mutex_lock);
}

#[test]
fn tcmalloc_matches_shipped_description() {
    let Some(lib) = installed("libtcmalloc_minimal.so.4") else {
        return;
    };
    let s = Scratch::new();
    let d = detect(&s, &["--preload", &lib]);
    assert_matches_shipped(&d, "tcmalloc-2.10.toml");
    assert_eq!(d.name, "tcmalloc");
    assert_eq!(d.version.as_deref(), Some("2.10"));
    assert_eq!(d.style, "bibop");
    assert_eq!(classes_up_to(&d), (85, 256 * 1024));
    assert_eq!(d.small_max_by, "shared page heap");
    assert_eq!(d.large_threshold, 256 * 1024 + 1);
    assert_eq!(d.first_big_size, Some(256 * 1024 + 8192));
    assert_eq!(d.big_via, "page-heap");
    assert!(d.brk_heap, "sbrk before mmap");
    // sbrk through the PLT, mmap through syscall().
    assert!(d.channels.sbrk && d.channels.syscall && !d.channels.mmap);
}

#[test]
fn mimalloc_matches_shipped_description() {
    let Some(lib) = installed("libmimalloc.so.2") else {
        return;
    };
    let s = Scratch::new();
    let d = detect(&s, &["--preload", &lib]);
    assert_matches_shipped(&d, "mimalloc-2.0.9.toml");
    assert_eq!(d.name, "mimalloc");
    assert_eq!(d.version.as_deref(), Some("2.0.9"));
    assert_eq!(d.style, "bibop");
    assert_eq!(classes_up_to(&d), (49, 128 * 1024));
    assert_eq!(d.small_max_by, "coarse step");
    assert_eq!(d.first_big_size, Some(192 * 1024));
    assert_eq!(d.large_threshold, 16 * 1024 * 1024 + 1);
    assert_eq!(d.big_via, "mmap");
    assert_eq!(d.mmap_threshold_slides_to, None);
    assert!(d.channels.mmap && d.channels.munmap);
}

#[test]
fn tbbmalloc_matches_shipped_description() {
    let Some(lib) = installed("libtbbmalloc.so.2") else {
        return;
    };
    let s = Scratch::new();
    let d = detect(&s, &["--preload", &lib]);
    assert_matches_shipped(&d, "tbbmalloc-2021.8.toml");
    assert_eq!(d.name, "tbbmalloc");
    assert_eq!(d.version, None, "no tbbmalloc symbol gives a version");
    assert_eq!(d.identified_by, "symbol scalable_malloc");
    // libtbbmalloc.so.2 defines no malloc: measured through scalable_malloc & co.
    assert_eq!(
        d.probe.functions.get("malloc").map(String::as_str),
        Some("scalable_malloc")
    );
    assert_eq!(d.style, "bibop");
    assert_eq!(classes_up_to(&d), (26, 8128));
    assert_eq!(d.small_max_by, "exact sizes");
    assert_eq!(d.first_big_size, Some(8129));
    // Above 4 MiB with its header: a mapping per object, unmapped by free.
    assert_eq!(d.large_threshold, 4194137);
    assert_eq!(d.big_via, "mmap");
    assert!(d.channels.mremap);
}

/// Build tests/fixtures/alloc/detect_exe.c with clang-22 and `extra` (libraries, defines).
fn build_fixture(s: &Scratch, out: &str, extra: &[&str]) -> PathBuf {
    let src = fixture("alloc/detect_exe.c");
    let mut args = vec!["-O1", src.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-o", out]);
    s.compile(Path::new("clang-22"), &args);
    s.path(out)
}

#[test]
fn exe_linked_with_jemalloc() {
    let Some(lib) = installed("libjemalloc.so.2") else {
        return;
    };
    let s = Scratch::new();
    let exe = build_fixture(&s, "uses_jemalloc", &[&lib]);
    let plain = output_within(&mut Command::new(&exe));
    assert_eq!(String::from_utf8_lossy(&plain.stdout), "main ran\n");
    let d = detect(&s, &["--exe", exe.to_str().unwrap()]);
    assert_matches_shipped(&d, "jemalloc-5.3.0.toml");
    assert_eq!(
        d.object,
        std::fs::canonicalize(&lib).unwrap().display().to_string()
    );
    assert_eq!(d.probe.mode, format!("exe {}", exe.display()));
}

/// A static jemalloc built with `--with-jemalloc-prefix=je_` (as redis links it), from the
/// tikv-jemalloc-sys sources (realsrc/): the probe finds je_malloc & co. by their addresses in
/// the program's symbol table.
#[test]
fn exe_with_static_prefixed_jemalloc() {
    let s = Scratch::new();
    let lib = build_prefixed_static_jemalloc(&s);
    let exe = build_fixture(
        &s,
        "je_static",
        &[
            "-DPREFIXED",
            lib.to_str().unwrap(),
            "-lpthread",
            "-lm",
            "-ldl",
        ],
    );
    let d = detect(&s, &["--exe", exe.to_str().unwrap()]);
    assert_eq!(d.name, "jemalloc");
    assert_eq!(d.version.as_deref(), Some("5.3.0"));
    assert_eq!(d.identified_by, "symbol je_mallctl");
    assert_eq!(d.object, exe.display().to_string());
    for role in ["malloc", "free", "realloc", "usable", "mallctl"] {
        assert!(
            d.probe.functions[role].starts_with('@'),
            "{role}: {:?}",
            d.probe.functions
        );
    }
    // The same jemalloc as Debian's: the same classes and large objects.
    let deb = shipped("jemalloc-5.3.0.toml");
    assert_eq!(d.size_classes, deb.size_classes);
    assert_eq!(
        (d.small_max, d.large_threshold, d.big_via.as_str()),
        (14336, 14337, "extent")
    );
    // Its mmap & co. go through the program's own PLT.
    assert!(d.channels.mmap && d.channels.munmap, "{:?}", d.channels);
}

/// One line on stderr naming the problem, exit code 2, no output file.
fn assert_usage_error(s: &Scratch, args: &[&str], out: &str, says: &str) {
    let o = run_detect(s, args, out);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(
        err.starts_with("profcc detect-allocator: ") && err.contains(says),
        "{args:?}: {err}"
    );
    assert!(o.stdout.is_empty(), "{args:?}");
    assert!(!s.path(out).exists(), "{args:?} left {out}");
    let left: Vec<_> = std::fs::read_dir(s.dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".detect-allocator"))
        .collect();
    assert!(left.is_empty(), "{args:?} left {left:?}");
}

#[test]
fn bad_inputs_are_one_line_errors() {
    let s = Scratch::new();
    assert_usage_error(
        &s,
        &["--preload", "/nonexistent/libnone.so"],
        "a.toml",
        "no such file",
    );
    let text = s.write("notelf.so", "not a library\n");
    assert_usage_error(
        &s,
        &["--preload", text.to_str().unwrap()],
        "a.toml",
        "not an ELF file",
    );
    // A library that is no allocator.
    let libm = Path::new(LIBDIR).join("libm.so.6");
    assert_usage_error(
        &s,
        &["--preload", libm.to_str().unwrap()],
        "a.toml",
        "defines no malloc",
    );
    // A library ld.so cannot load: its dependency is gone.
    s.write("dep.c", "void *dep(unsigned long n) { return 0; }\n");
    s.write(
        "bad.c",
        "void *dep(unsigned long);\nvoid *malloc(unsigned long n) { return dep(n); }\n",
    );
    s.compile(
        Path::new("clang-22"),
        &["-shared", "-fPIC", "dep.c", "-o", "libdep.so"],
    );
    s.compile(
        Path::new("clang-22"),
        &[
            "-shared",
            "-fPIC",
            "bad.c",
            "-L.",
            "-ldep",
            "-o",
            "libbad.so",
        ],
    );
    std::fs::remove_file(s.path("libdep.so")).unwrap();
    let bad = s.path("libbad.so");
    assert_usage_error(
        &s,
        &["--preload", bad.to_str().unwrap()],
        "a.toml",
        "cannot load it",
    );
    // An allocator without malloc_usable_size: glibc's would get its pointers.
    s.write(
        "bump.c",
        "static char pool[1 << 20]; static unsigned long top;\n\
         void *malloc(unsigned long n) { void *p = pool + top; top += (n + 15) & ~15ul; return p; }\n\
         void free(void *p) { (void)p; }\n",
    );
    s.compile(
        Path::new("clang-22"),
        &["-shared", "-fPIC", "bump.c", "-o", "libbump.so"],
    );
    let bump = s.path("libbump.so");
    assert_usage_error(
        &s,
        &["--preload", bump.to_str().unwrap()],
        "a.toml",
        "malloc_usable_size is not in the file that defines malloc",
    );
    assert_usage_error(
        &s,
        &["--exe", "/nonexistent/program"],
        "a.toml",
        "no such file",
    );
    let script = s.write("script.sh", "#!/bin/sh\necho hi\n");
    assert_usage_error(
        &s,
        &["--exe", script.to_str().unwrap()],
        "a.toml",
        "not an ELF file",
    );
    let fully_static = build_fixture(&s, "static", &["-static"]);
    assert_usage_error(
        &s,
        &["--exe", fully_static.to_str().unwrap()],
        "a.toml",
        "statically linked",
    );
    assert_usage_error(
        &s,
        &[
            "--preload",
            libm.to_str().unwrap(),
            "--exe",
            fully_static.to_str().unwrap(),
        ],
        "a.toml",
        "--preload and --exe both given",
    );
    assert_usage_error(&s, &[], "missing/a.toml", "does not exist");
    assert!(!s.path("missing").exists());
}

/// `-o FILE` holds what stdout would (timings aside) and nothing is left beside it.
#[test]
fn output_file_is_the_description() {
    let s = Scratch::new();
    let d = detect(&s, &[]);
    let out = output_within(Command::new(profcc()).arg("detect-allocator"));
    assert!(out.status.success());
    let mut from_stdout = from_toml(&String::from_utf8_lossy(&out.stdout)).unwrap();
    from_stdout.probe = d.probe.clone();
    assert_eq!(from_stdout, d);
    let names: Vec<String> = std::fs::read_dir(s.dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["alloc.toml"]);
}

/// `--bench`: malloc and free timed for each request size, address reuse and phase, each row
/// filed under the description's size kind; a fresh 20 MiB block (glibc maps it: a system
/// call and page-table work) costs more than a reused 64-byte one (a tcache pop in the churn).
#[test]
fn bench_times_every_cell_and_files_it_by_kind() {
    let s = Scratch::new();
    let d = detect(&s, &["--bench"]);
    // Every power of two from 16 B to 1 MiB, then 4 and 20 MiB (probe.c, BENCH_SIZES).
    let sizes: Vec<u64> = (4..=20)
        .map(|k| 1u64 << k)
        .chain([4 << 20, 20 << 20])
        .collect();
    assert_eq!(d.bench.len(), sizes.len() * 2 * 2 * 2, "{:#?}", d.bench);
    for &size in &sizes {
        for op in ["malloc", "free"] {
            for reuse in ["new", "reused"] {
                for phase in ["serial", "parallel"] {
                    let rows: Vec<_> = d
                        .bench
                        .iter()
                        .filter(|r| {
                            (r.size, r.op.as_str(), r.reuse.as_str(), r.phase.as_str())
                                == (size, op, reuse, phase)
                        })
                        .collect();
                    assert_eq!(rows.len(), 1, "{size} {op} {reuse} {phase}");
                    let r = rows[0];
                    // A churn's call less the timer's own cost may round to 0 ns.
                    assert!(r.ns.is_finite() && r.ns >= 0.0 && r.calls >= 16, "{r:?}");
                    assert_eq!(r.kind, size_kind(&d, size), "{r:?}");
                }
            }
        }
    }
    // glibc 2.36: up to 131048 bytes from the heap, from 131049 a mapping each.
    let kinds: Vec<&str> = sizes
        .iter()
        .map(|&z| {
            d.bench
                .iter()
                .find(|r| r.size == z)
                .map(|r| r.kind.as_str())
                .unwrap()
        })
        .collect();
    let mut want = vec!["small"; 13]; // 16 B .. 64 KiB
    want.extend(["big"; 6]); // 128 KiB .. 20 MiB
    assert_eq!(kinds, want);
    let ns = |op: &str, size: u64, reuse: &str| {
        d.bench
            .iter()
            .find(|r| r.op == op && r.size == size && r.reuse == reuse && r.phase == "serial")
            .unwrap()
            .ns
    };
    assert!(
        ns("malloc", 20 << 20, "new") > ns("malloc", 64, "reused"),
        "{:#?}",
        d.bench
    );
}
