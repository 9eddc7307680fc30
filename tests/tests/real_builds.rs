//! Real builds (issue 2, section 6): real C/C++ projects built with profcc and with plain
//! clang-22 (same flags), both run, same stdout and exit code, and the profile checked for the
//! right source files, functions, lines, allocation sites and threads.
//!
//! The projects' sources come from crates `realsrc/` depends on (`crate_dir`). Run with
//! `cargo test --release -p profcc-tests --test real_builds` after `cargo xtask build`.
//! Set `PROFCC_TEST_KEEP=1` to keep every scratch directory (their paths are printed).

use profcc_schema::{AccessKind, Profile};
use profcc_tests::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const CLANG: &str = "clang-22";
const CLANGXX: &str = "clang++-22";

fn clang() -> PathBuf {
    PathBuf::from(CLANG)
}

fn clangxx() -> PathBuf {
    PathBuf::from(CLANGXX)
}

/// A scratch directory that stays on disk (path printed) when `PROFCC_TEST_KEEP=1`.
struct TestDir {
    scratch: std::mem::ManuallyDrop<Scratch>,
    keep: bool,
}

impl std::ops::Deref for TestDir {
    type Target = Scratch;
    fn deref(&self) -> &Scratch {
        &self.scratch
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        if self.keep {
            eprintln!("[real_builds] kept {}", self.scratch.dir.path().display());
        } else {
            // SAFETY: dropped once, here.
            unsafe { std::mem::ManuallyDrop::drop(&mut self.scratch) };
        }
    }
}

fn scratch(_name: &str) -> TestDir {
    TestDir {
        scratch: std::mem::ManuallyDrop::new(Scratch::new()),
        keep: std::env::var("PROFCC_TEST_KEEP").is_ok_and(|v| v == "1"),
    }
}

fn timed<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let r = f();
    eprintln!("[real_builds] {what}: {:.1} s", t.elapsed().as_secs_f64());
    r
}

/// The line range `[start, end]` of the C function whose definition starts with the line
/// `header`, up to the first line that is exactly `}` or, with `end_marker`, up to the line
/// before the first line starting with it (sqlite's VDBE has `}` in column 0 inside).
fn function_lines(source: &str, header: &str, end_marker: Option<&str>) -> (u32, u32) {
    let lines: Vec<&str> = source.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim_end() == header)
        .unwrap_or_else(|| panic!("{header} not found"));
    let end = match end_marker {
        None => (start..lines.len()).find(|&i| lines[i] == "}").unwrap(),
        Some(m) => {
            (start..lines.len())
                .find(|&i| lines[i].starts_with(m))
                .unwrap()
                - 1
        }
    };
    (start as u32 + 1, end as u32 + 1)
}

/// Accesses of sites compiled into `function` (not inlined from elsewhere) whose line is
/// inside / outside `range`; sites without a line (0) are counted apart.
fn split_by_range(
    p: &Profile,
    file_suffix: &str,
    function: &str,
    range: (u32, u32),
) -> (u64, u64, u64) {
    let (mut inside, mut outside, mut no_line) = (0, 0, 0);
    for s in p
        .sites
        .iter()
        .filter(|s| s.function == function && s.inlined_at.is_none())
    {
        if s.line == 0 {
            no_line += s.count;
        } else if s.file.ends_with(file_suffix) && (range.0..=range.1).contains(&s.line) {
            inside += s.count;
        } else {
            outside += s.count;
        }
    }
    (inside, outside, no_line)
}

/// Every site's file exists on disk and every line is within that file (or 0 = no line).
fn assert_sites_point_into_sources(p: &Profile, file_suffix: &str) {
    let mut checked = std::collections::HashMap::<String, u32>::new();
    for s in p.sites.iter().filter(|s| s.file.ends_with(file_suffix)) {
        let n = *checked.entry(s.file.clone()).or_insert_with(|| {
            let text = std::fs::read_to_string(&s.file)
                .unwrap_or_else(|e| panic!("site file {} cannot be read: {e}", s.file));
            text.lines().count() as u32
        });
        assert!(
            s.line <= n,
            "site {}:{} is past the end of the file ({n} lines)",
            s.file,
            s.line
        );
    }
    assert!(!checked.is_empty(), "no sites in *{file_suffix}");
}

fn threads_summary(p: &Profile) -> String {
    p.threads
        .iter()
        .map(|t| format!("{}(parent {:?}, {} accesses)", t.id, t.parent, t.accesses))
        .collect::<Vec<_>>()
        .join(", ")
}

// ---------------------------------------------------------------------------------------------
// 1. sqlite3.c with a multithreaded driver

#[test]
fn sqlite3_multithreaded_driver() {
    let s = scratch("sqlite3");
    let dir = crate_dir("libsqlite3-sys").join("sqlite3");
    let sqlite_c = dir.join("sqlite3.c");
    let driver = fixture("real/sqlite_driver.c");
    let inc = format!("-I{}", dir.display());
    // sqlite3.c is big: compile it once per compiler, both at the same time; -O1 keeps the
    // profcc compile near a minute on two cores.
    let flags = ["-O1", "-pthread", "-DSQLITE_OMIT_LOAD_EXTENSION"];
    timed(
        "sqlite3: compile sqlite3.c (profcc and clang-22 in parallel)",
        || {
            std::thread::scope(|sc| {
                for (cc, obj) in [(profcc(), "sqlite3.profcc.o"), (clang(), "sqlite3.clang.o")] {
                    let (s, flags, src) = (&s, &flags, &sqlite_c);
                    sc.spawn(move || {
                        s.compile(
                            &cc,
                            &[&flags[..], &["-c", src.to_str().unwrap(), "-o", obj]].concat(),
                        )
                    });
                }
            });
        },
    );
    for (cc, obj, exe) in [
        (profcc(), "sqlite3.profcc.o", "drv_profcc"),
        (clang(), "sqlite3.clang.o", "drv_clang"),
    ] {
        s.compile(
            &cc,
            &[
                &flags[..],
                &[
                    inc.as_str(),
                    driver.to_str().unwrap(),
                    obj,
                    "-o",
                    exe,
                    "-lm",
                ],
            ]
            .concat(),
        );
    }
    let args = ["3", "3000"];
    let native = s.run_plain("drv_clang", &args);
    let (out, p) = timed("sqlite3: run profcc build", || {
        s.run_profiled("drv_profcc", &args, "")
    });
    assert_same_run("sqlite3 driver", &native, &out);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).matches("rc=0").count(),
        3
    );

    // Threads: main plus the driver's three, each doing the work.
    assert_eq!(p.threads.len(), 4, "{}", threads_summary(&p));
    for t in &p.threads[1..] {
        assert_eq!(t.parent, Some(0), "{}", threads_summary(&p));
        assert!(t.accesses > 100_000, "{}", threads_summary(&p));
    }
    assert_eq!(p.totals.unattributed, 0);

    // Sites: the VDBE interpreter, the b-tree, the page cache, all in sqlite3.c, executed by
    // the three workers.
    assert_sites_point_into_sources(&p, "sqlite3/sqlite3.c");
    for f in [
        "sqlite3VdbeExec",
        "sqlite3BtreeInsert",
        "sqlite3BtreeIndexMoveto",
        "sqlite3VdbeRecordCompareWithSkip",
    ] {
        let n = count_in(&p, "sqlite3.c", f);
        assert!(n > 1000, "{f}: {n} accesses in sqlite3.c");
    }
    let vdbe: Vec<_> = p
        .sites
        .iter()
        .filter(|s| s.function == "sqlite3VdbeExec")
        .collect();
    assert!(vdbe
        .iter()
        .any(|s| s.threads == 3 && s.kind == AccessKind::Read));
    assert!(vdbe
        .iter()
        .any(|s| s.threads == 3 && s.kind == AccessKind::Write));
    // Accesses compiled into sqlite3VdbeExec itself (not inlined) are on its own lines.
    let text = std::fs::read_to_string(&sqlite_c).unwrap();
    let range = function_lines(
        &text,
        "SQLITE_PRIVATE int sqlite3VdbeExec(",
        Some("/************** End of vdbe.c"),
    );
    let (inside, outside, no_line) = split_by_range(&p, "sqlite3.c", "sqlite3VdbeExec", range);
    assert!(
        inside > 100_000 && outside == 0,
        "sqlite3VdbeExec lines {range:?}: inside {inside}, outside {outside}, no line {no_line}"
    );
    // The driver's own code is attributed to the driver.
    assert!(
        count_in(&p, "sqlite_driver.c", "main") > 0 || count_in(&p, "sqlite_driver.c", "run") > 0
    );

    // Allocation sites: sqlite's allocator wrapper, from the worker threads, symbolised.
    assert!(p.totals.allocations > 100 && p.totals.frees > 100);
    let r = report(&s.path("drv_profcc.profile.json"), &[]);
    let sites = &r.alloc_sites.sites;
    let mem_malloc: Vec<_> = sites
        .iter()
        .filter(|a| frame_functions(&a.stack, 1) == ["sqlite3MemMalloc"])
        .collect();
    assert!(
        !mem_malloc.is_empty(),
        "no allocation site in sqlite3MemMalloc"
    );
    let total: u64 = mem_malloc.iter().map(|a| a.count).sum();
    assert!(total > 100, "{total} allocations from sqlite3MemMalloc");
    assert!(mem_malloc.iter().any(|a| a.threads == 3 && a.bytes > 0));
    assert!(mem_malloc.iter().all(|a| a
        .stack
        .first()
        .and_then(|f| f.file.as_deref())
        .unwrap_or("")
        .ends_with("sqlite3.c")));
    // Worker threads were created in the driver's main.
    for t in r.threads.iter().filter(|t| t.id != 0) {
        let first = t.created_at.first().unwrap_or_else(|| panic!("{t:?}"));
        assert_eq!(first.function.as_deref(), Some("main"), "{t:?}");
        assert!(
            first.file.as_deref().unwrap().ends_with("sqlite_driver.c"),
            "{t:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 2. Lua 5.4 as a static archive driven by a host program

fn lua_sources() -> (PathBuf, Vec<PathBuf>) {
    let dir = crate_dir("lua-src").join("lua-5.4.8");
    let mut srcs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .filter(|p| !matches!(p.file_name().unwrap().to_str().unwrap(), "lua.c" | "luac.c"))
        .collect();
    srcs.sort();
    assert!(
        srcs.len() >= 30,
        "{} Lua sources in {}",
        srcs.len(),
        dir.display()
    );
    (dir, srcs)
}

#[test]
fn lua_static_archive_with_host_program() {
    let s = scratch("lua");
    let (dir, srcs) = lua_sources();
    let flags = ["-O2", "-DLUA_USE_LINUX"];
    let inc = format!("-I{}", dir.display());
    let script = fixture("real/lua_script.lua");
    let host = fixture("real/lua_host.c");
    for (cc, tag) in [(profcc(), "profcc"), (clang(), "clang")] {
        let objs = timed(
            &format!("lua: compile {} sources with {tag}", srcs.len()),
            || compile_many(&cc, &flags, &srcs, &s.path(&format!("obj-{tag}")), 2),
        );
        let lib = s.path(&format!("liblua-{tag}.a"));
        sh(Command::new("llvm-ar-22").arg("rcs").arg(&lib).args(&objs));
        let exe = format!("lua_{tag}");
        s.compile(
            &cc,
            &[
                &flags[..],
                &[
                    inc.as_str(),
                    host.to_str().unwrap(),
                    lib.to_str().unwrap(),
                    "-o",
                    &exe,
                    "-lm",
                    "-ldl",
                ],
            ]
            .concat(),
        );
    }
    let args = [script.to_str().unwrap()];
    let native = s.run_plain("lua_clang", &args);
    let (out, p) = s.run_profiled("lua_profcc", &args, "");
    assert_same_run("lua host", &native, &out);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("primes below 200000: 17984") && stdout.contains("host: checksum="),
        "{stdout}"
    );

    // The interpreter loop, tables, strings, the collector and the string library, each in
    // its own file.
    assert_sites_point_into_sources(&p, "lua-5.4.8/lvm.c");
    for (file, func, min) in [
        ("lvm.c", "luaV_execute", 1_000_000),
        ("ltable.c", "luaH_getshortstr", 10_000),
        ("ltable.c", "luaH_newkey", 1_000),
        ("lstring.c", "luaS_newlstr", 10_000),
        ("lgc.c", "propagatemark", 10_000),
        ("lstrlib.c", "match", 10_000),
        ("lstrlib.c", "str_format", 100),
    ] {
        let n = count_in(&p, &format!("lua-5.4.8/{file}"), func);
        assert!(n > min, "{file}:{func}: {n} accesses (want > {min})");
    }
    let text = std::fs::read_to_string(dir.join("lvm.c")).unwrap();
    let range = function_lines(
        &text,
        "void luaV_execute (lua_State *L, CallInfo *ci) {",
        None,
    );
    let (inside, outside, no_line) = split_by_range(&p, "lvm.c", "luaV_execute", range);
    assert!(
        inside > 1_000_000 && outside == 0,
        "luaV_execute lines {range:?}: inside {inside}, outside {outside}, no line {no_line}"
    );
    // The host's own code.
    assert!(count_in_file(&p, "lua_host.c") > 0);

    // Lua allocates through l_alloc (lauxlib.c), whose realloc is a tail call: the first frame
    // of its allocation sites is l_alloc or, tail-called away, Lua's luaM_* in lmem.c.
    let r = report(&s.path("lua_profcc.profile.json"), &[]);
    let sites = &r.alloc_sites.sites;
    let lua_sites: Vec<_> = sites
        .iter()
        .filter(|a| {
            let f = a.stack.first();
            let (func, file) = (
                f.and_then(|f| f.function.as_deref()).unwrap_or(""),
                f.and_then(|f| f.file.as_deref()).unwrap_or(""),
            );
            (func == "l_alloc" && file.ends_with("lua-5.4.8/lauxlib.c"))
                || (func.starts_with("luaM_") && file.ends_with("lua-5.4.8/lmem.c"))
        })
        .collect();
    let count: u64 = lua_sites.iter().map(|a| a.count).sum();
    let frees: u64 = lua_sites.iter().map(|a| a.frees).sum();
    let firsts: Vec<_> = sites.iter().map(|a| frame_functions(&a.stack, 2)).collect();
    assert!(
        count > 10_000 && frees > 1_000,
        "Lua's allocation sites: {count} allocations, {frees} frees; first frames {firsts:?}"
    );
    assert_eq!(p.threads.len(), 1);
}

// ---------------------------------------------------------------------------------------------
// 3. zlib as a shared library with profcc, linked into an instrumented executable

const ZLIB_SOURCES: &[&str] = &[
    "adler32", "compress", "crc32", "deflate", "infback", "inffast", "inflate", "inftrees",
    "trees", "uncompr", "zutil", "gzclose", "gzlib", "gzread", "gzwrite",
];

#[test]
fn zlib_shared_library_round_trip() {
    let s = scratch("zlib");
    let zdir = crate_dir("libz-sys").join("src/zlib");
    let srcs: Vec<PathBuf> = ZLIB_SOURCES
        .iter()
        .map(|n| zdir.join(format!("{n}.c")))
        .collect();
    let flags = [
        "-O2",
        "-fPIC",
        "-D_LARGEFILE64_SOURCE=1",
        "-DHAVE_UNISTD_H",
        "-DHAVE_STDARG_H",
    ];
    let inc = format!("-I{}", zdir.display());
    let host = fixture("real/zlib_roundtrip.c");
    for (cc, tag) in [(profcc(), "profcc"), (clang(), "clang")] {
        let objs = timed(&format!("zlib: compile with {tag}"), || {
            compile_many(&cc, &flags, &srcs, &s.path(&format!("obj-{tag}")), 2)
        });
        std::fs::create_dir(s.path(tag)).unwrap();
        let so = format!("{tag}/libz.so.1");
        let mut link: Vec<&str> = vec!["-shared", "-fPIC", "-Wl,-soname,libz.so.1", "-o", &so];
        link.extend(objs.iter().map(|o| o.to_str().unwrap()));
        s.compile(&cc, &link);
        let exe = format!("{tag}/zlib_roundtrip");
        s.compile(
            &cc,
            &[
                "-O2",
                &inc,
                host.to_str().unwrap(),
                "-o",
                &exe,
                &format!("-L{tag}"),
                "-l:libz.so.1",
                "-Wl,-rpath,$ORIGIN",
            ],
        );
    }
    // The DSO carries instrumentation but not the runtime: its hooks resolve against the
    // executable's runtime; it defines only weak stubs of them (hooks/stub.c), no runtime.
    let nm = sh(Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(s.path("profcc/libz.so.1")));
    let defined = String::from_utf8_lossy(&nm.stdout);
    assert!(
        !defined.contains(" T malloc")
            && !defined.contains("__profcc_runtime")
            && !defined.contains("__profcc_force_link")
            && defined
                .lines()
                .filter(|l| l.contains("__profcc_"))
                .all(|l| l.contains(" W ") || l.contains(" V ")),
        "the runtime was linked into libz.so.1:\n{defined}"
    );
    // Exported (preemptible), so the executable's runtime registers the library's sites.
    assert!(defined.contains("W __profcc_register_module"), "{defined}");

    let native = s.run_plain("clang/zlib_roundtrip", &[]);
    let (out, p) = s.run_profiled("profcc/zlib_roundtrip", &[], "");
    assert_same_run("zlib round trip", &native, &out);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("roundtrip=ok"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(out.status.success());
    assert!(
        p.modules
            .iter()
            .any(|m| m.path.ends_with("profcc/libz.so.1")),
        "libz.so.1 not in the module map"
    );

    // Accesses inside the DSO are attributed to zlib's own source lines.
    assert_sites_point_into_sources(&p, "src/zlib/deflate.c");
    for (file, func, min) in [
        ("deflate.c", "longest_match", 1_000_000),
        ("deflate.c", "deflate_slow", 1_000_000),
        ("trees.c", "compress_block", 100_000),
        ("inffast.c", "inflate_fast", 100_000),
        ("inflate.c", "inflate", 100),
        ("adler32.c", "adler32_z", 100_000),
        ("crc32.c", "crc32_z", 1_000),
    ] {
        let n = count_in(&p, &format!("src/zlib/{file}"), func);
        assert!(n > min, "{file}:{func}: {n} accesses (want > {min})");
    }
    let text = std::fs::read_to_string(zdir.join("deflate.c")).unwrap();
    let range = function_lines(
        &text,
        "local uInt longest_match(deflate_state *s, IPos cur_match) {",
        None,
    );
    let (inside, outside, no_line) = split_by_range(&p, "deflate.c", "longest_match", range);
    assert!(
        inside > 1_000_000 && outside == 0,
        "longest_match lines {range:?}: inside {inside}, outside {outside}, no line {no_line}"
    );
    // The executable's own accesses (filling the buffer) are there too.
    assert!(count_in(&p, "zlib_roundtrip.c", "main") >= 1 << 20);

    // deflate's windows are allocated inside the DSO, symbolised to deflate.c.
    let r = report(&s.path("profcc/zlib_roundtrip.profile.json"), &[]);
    let sites = &r.alloc_sites.sites;
    let in_deflate: Vec<_> = sites
        .iter()
        .filter(|a| frame_functions(&a.stack, 1) == ["deflateInit2_"])
        .collect();
    assert!(
        in_deflate.len() >= 4,
        "allocation sites in deflateInit2_: {in_deflate:?}"
    );
    for a in &in_deflate {
        assert!(a.count > 0 && a.frees == a.count, "{a:?}");
        let first = &a.stack[0];
        assert!(
            first.file.as_deref().unwrap().ends_with("deflate.c"),
            "{a:?}"
        );
        assert!(
            first.module.as_deref().unwrap().ends_with("libz.so.1"),
            "{a:?}"
        );
    }
    assert!(sites
        .iter()
        .any(|a| frame_functions(&a.stack, 1) == ["inflateInit2_"]));
}

// ---------------------------------------------------------------------------------------------
// 4. jemalloc: autogen.sh (autoconf + configure) and make with CC=profcc

/// The configure summary jemalloc prints, minus lines naming the compiler or the directory.
fn jemalloc_summary(log: &str) -> Vec<String> {
    log.lines()
        .skip_while(|l| !l.starts_with("===="))
        .filter(|l| {
            let key = l.split(':').next().unwrap_or("").trim();
            !matches!(key, "CONFIG" | "CC" | "CXX" | "abs_srcroot" | "abs_objroot")
        })
        .map(String::from)
        .collect()
}

#[test]
fn jemalloc_autogen_configure_make() {
    let s = scratch("jemalloc");
    let src = crate_dir("tikv-jemalloc-sys").join("jemalloc");
    let profcc_dir = s.path("je-profcc");
    let clang_dir = s.path("je-clang");
    copy_tree(&src, &profcc_dir);
    copy_tree(&src, &clang_dir);
    // autogen.sh runs autoconf then ./configure; once with profcc, once with clang-22 for the
    // comparison of what configure found, in parallel.
    let logs = timed(
        "jemalloc: autogen.sh + configure (profcc and clang-22 in parallel)",
        || {
            std::thread::scope(|sc| {
                let a = sc.spawn(|| {
                    sh(Command::new("./autogen.sh")
                        .current_dir(&profcc_dir)
                        .env("CC", profcc())
                        .env("CXX", profcxx()))
                });
                let b = sc.spawn(|| {
                    sh(Command::new("./autogen.sh")
                        .current_dir(&clang_dir)
                        .env("CC", CLANG)
                        .env("CXX", CLANGXX))
                });
                (a.join().unwrap(), b.join().unwrap())
            })
        },
    );
    let (log_p, log_c) = (
        String::from_utf8_lossy(&logs.0.stdout).into_owned(),
        String::from_utf8_lossy(&logs.1.stdout).into_owned(),
    );
    assert!(
        log_p.contains(&format!("CC                 : {}", profcc().display())),
        "{}",
        tail(&log_p, 40)
    );
    assert_eq!(
        jemalloc_summary(&log_p),
        jemalloc_summary(&log_c),
        "configure found different things with profcc and clang-22"
    );
    for h in [
        "include/jemalloc/internal/jemalloc_internal_defs.h",
        "include/jemalloc/jemalloc_defs.h",
    ] {
        assert_eq!(
            std::fs::read_to_string(profcc_dir.join(h)).unwrap(),
            std::fs::read_to_string(clang_dir.join(h)).unwrap(),
            "{h} differs between profcc and clang-22"
        );
    }

    // The static library only (the .so and the docs would double the build time).
    let make = timed("jemalloc: make -j2 lib/libjemalloc.a with profcc", || {
        sh(Command::new("make")
            .args(["-j2", "lib/libjemalloc.a"])
            .current_dir(&profcc_dir))
    });
    let lib = profcc_dir.join("lib/libjemalloc.a");
    assert!(
        lib.exists(),
        "no lib/libjemalloc.a:\n{}",
        tail(&String::from_utf8_lossy(&make.stdout), 20)
    );
    let err = String::from_utf8_lossy(&make.stderr);
    assert!(
        !err.contains("profcc:"),
        "profcc said something during the build:\n{}",
        tail(&err, 40)
    );
    // Objects carry profcc's module registration.
    let nm = sh(Command::new("nm").arg(profcc_dir.join("src/arena.o")));
    assert!(String::from_utf8_lossy(&nm.stdout).contains("__profcc_register_module"));

    // A program using the instrumented jemalloc as its malloc runs and is profiled.
    let user = fixture("real/jemalloc_user.c");
    s.compile(
        &profcc(),
        &[
            "-O1",
            user.to_str().unwrap(),
            lib.to_str().unwrap(),
            "-o",
            "je_user",
            "-pthread",
            "-ldl",
            "-lm",
            "-lstdc++",
        ],
    );
    let (out, p) = s.run_profiled("je_user", &[], "");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout == "jemalloc (version string present): sum=62252 big=ok\n",
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let in_jemalloc: u64 = p
        .sites
        .iter()
        .filter(|s| {
            s.file.contains("je-profcc/src/") || s.file.contains("je-profcc/include/jemalloc/")
        })
        .map(|s| s.count)
        .sum();
    assert!(in_jemalloc > 1000, "{in_jemalloc} accesses inside jemalloc");
    assert!(count_in(&p, "jemalloc_user.c", "main") > 1000);
}

// ---------------------------------------------------------------------------------------------
// 5. mimalloc with CMake through the toolchain file

fn cmake_compiler_id(build: &Path, lang: &str) -> String {
    let files = std::fs::read_dir(build.join("CMakeFiles")).unwrap();
    for e in files {
        let f = e.unwrap().path().join(format!("CMake{lang}Compiler.cmake"));
        if let Ok(text) = std::fs::read_to_string(&f) {
            let key = format!("set(CMAKE_{lang}_COMPILER_ID \"");
            if let Some(l) = text.lines().find(|l| l.starts_with(&key)) {
                return l[key.len()..].trim_end_matches("\")").to_string();
            }
        }
    }
    panic!("no CMAKE_{lang}_COMPILER_ID under {}", build.display())
}

fn toolchain_file() -> String {
    let out = sh(Command::new(profcc()).arg("--print-cmake-toolchain"));
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        Path::new(&path).is_file(),
        "--print-cmake-toolchain printed {path:?}"
    );
    path
}

/// Configure and build a CMake project twice: through profcc's toolchain file (`build-profcc`)
/// and with plain clang-22 (`build-clang`). Returns the profcc configure output.
fn cmake_both(s: &Scratch, source: &Path, build_type: &str, defs: &[String]) -> String {
    let mut profcc_log = String::new();
    let mut warnings = Vec::new();
    for tag in ["profcc", "clang"] {
        let build = s.path(&format!("build-{tag}"));
        let mut c = Command::new("cmake");
        c.arg("-S")
            .arg(source)
            .arg("-B")
            .arg(&build)
            .arg(format!("-DCMAKE_BUILD_TYPE={build_type}"))
            .args(defs);
        if tag == "profcc" {
            c.arg(format!("-DCMAKE_TOOLCHAIN_FILE={}", toolchain_file()));
        } else {
            c.arg(format!("-DCMAKE_C_COMPILER={CLANG}"))
                .arg(format!("-DCMAKE_CXX_COMPILER={CLANGXX}"));
        }
        let out = timed(&format!("cmake configure ({tag})"), || sh(&mut c));
        if tag == "profcc" {
            profcc_log = String::from_utf8_lossy(&out.stdout).into_owned();
        }
        let out = timed(&format!("cmake --build ({tag})"), || {
            sh(Command::new("cmake").arg("--build").arg(&build).arg("-j2"))
        });
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        warnings.push(
            text.lines()
                .filter(|l| l.contains("warning:"))
                .map(String::from)
                .collect::<Vec<_>>(),
        );
    }
    // profcc injects nothing that warns: the same warnings as clang-22 (-Werror builds stay clean).
    assert_eq!(
        warnings[0].len(),
        warnings[1].len(),
        "warnings differ:\nprofcc: {:#?}\nclang-22: {:#?}",
        warnings[0],
        warnings[1]
    );
    profcc_log
}

#[test]
fn mimalloc_cmake_toolchain() {
    let s = scratch("mimalloc");
    let src = s.path("mimalloc-src");
    copy_tree(
        &crate_dir("libmimalloc-sys").join("c_src/mimalloc/v2"),
        &src,
    );
    // The crate leaves out mimalloc's cmake/ helpers; stand-ins live with the fixture.
    std::fs::create_dir_all(src.join("cmake")).unwrap();
    for f in ["mimalloc-config-version.cmake", "JoinPaths.cmake"] {
        std::fs::copy(
            fixture(&format!("real/mimalloc/{f}")),
            src.join("cmake").join(f),
        )
        .unwrap();
    }
    let log = cmake_both(
        &s,
        &fixture("real/mimalloc"),
        "Release",
        &[format!("-DMIMALLOC_SRC={}", src.display())],
    );
    assert!(
        log.contains("The C compiler identification is Clang 22"),
        "{log}"
    );
    let build = s.path("build-profcc");
    assert_eq!(cmake_compiler_id(&build, "C"), "Clang");
    assert_eq!(cmake_compiler_id(&build, "CXX"), "Clang");
    let cache = std::fs::read_to_string(build.join("CMakeCache.txt")).unwrap();
    assert!(
        cache.contains(&format!(
            "PROFCC_EXECUTABLE:FILEPATH={}",
            profcc().canonicalize().unwrap().display()
        )),
        "profcc not chosen by the toolchain file"
    );
    assert!(build.join("mimalloc/libmimalloc.a").exists());
    let nm = sh(Command::new("nm").arg(build.join("mimalloc/libmimalloc.a")));
    assert!(
        String::from_utf8_lossy(&nm.stdout).contains("__profcc_register_module"),
        "libmimalloc.a is not instrumented"
    );

    let native = s.run_plain("build-clang/mi_test", &[]);
    let (out, p) = s.run_profiled("build-profcc/mi_test", &[], "");
    assert_same_run("mimalloc test", &native, &out);
    assert!(
        out.status.success()
            && String::from_utf8_lossy(&out.stdout).starts_with("mimalloc 20302: sum=")
    );
    assert_sites_point_into_sources(&p, "mimalloc-src/src/page.c");
    assert!(count_in_file(&p, "mimalloc-src/src/alloc.c") > 100);
    assert!(count_in_file(&p, "mimalloc-src/src/heap.c") > 100);
    assert!(count_in(&p, "mi_test.c", "main") > 1000);
}

// ---------------------------------------------------------------------------------------------
// 6. C++ (iostream, std::thread, exceptions, static destructors) and OpenMP C

#[test]
fn cxx_iostream_threads_exceptions_static_dtors() {
    let s = scratch("cxx");
    let src = fixture("rt/cxx_new_delete_threads.cpp");
    let text = std::fs::read_to_string(&src).unwrap();
    let flags = ["-O1", "-std=c++17", "-pthread", src.to_str().unwrap()];
    s.compile(&profcxx(), &[&flags[..], &["-o", "cxx_profcc"]].concat());
    s.compile(&clangxx(), &[&flags[..], &["-o", "cxx_clang"]].concat());
    let native = s.run_plain("cxx_clang", &[]);
    let (out, p) = s.run_profiled("cxx_profcc", &[], "");
    assert_same_run("C++ fixture", &native, &out);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "caught boom\ntotal 2044\nstatic dtor\n"
    );
    assert!(out.status.success());

    // Threads: main and four std::threads it created.
    assert_eq!(p.threads.len(), 5, "{}", threads_summary(&p));
    assert!(
        p.threads[1..]
            .iter()
            .all(|t| t.parent == Some(0) && t.accesses > 0),
        "{}",
        threads_summary(&p)
    );
    // Sites: make_node's stores, fill()'s vector writes on all four threads.
    let new_line = line_of(&text, "// SITE new");
    assert!(
        count_at(
            &p,
            "cxx_new_delete_threads.cpp",
            new_line,
            AccessKind::Write
        ) >= 1000
    );
    let fill = line_of(&text, "for (int i = 0; i < n; i++) v.push_back(i);");
    let fill_sites: Vec<_> = p
        .sites
        .iter()
        .filter(|s| {
            s.inlined_at
                .as_deref()
                .is_some_and(|a| a.ends_with(&format!("cxx_new_delete_threads.cpp:{fill}")))
                || (s.file.ends_with("cxx_new_delete_threads.cpp") && s.line == fill)
        })
        .collect();
    assert!(
        fill_sites.iter().any(|s| s.threads == 4),
        "no site of fill() ran on 4 threads: {fill_sites:?}"
    );
    // libstdc++ headers inlined into the program are attributed to them.
    assert!(p
        .sites
        .iter()
        .any(|s| s.file.contains("/c++/") && s.file.ends_with(".h")));

    // Allocation sites, symbolised: new in make_node, new[] in Global's constructor freed by
    // the static destructor before the profile was written, vector growth on 4 threads.
    let r = report(&s.path("cxx_profcc.profile.json"), &[]);
    let sites = &r.alloc_sites.sites;
    let find = |first: &str, kind: &str| {
        sites
            .iter()
            .find(|a| a.kind == kind && frame_functions(&a.stack, 1)[0].starts_with(first))
            .unwrap_or_else(|| panic!("no {kind} site in {first}: {sites:?}"))
    };
    let node = find("make_node", "new");
    assert_eq!((node.count, node.frees), (1000, 1000));
    let global = find("Global", "new[]");
    assert_eq!(
        (global.bytes, global.frees, global.live_objects_at_exit),
        (100, 1, 0)
    );
    assert!(
        sites
            .iter()
            .any(|a| a.kind == "new" && a.threads == 4 && a.count == 40),
        "vector growth site"
    );
    assert!(sites
        .iter()
        .any(|a| frame_functions(&a.stack, 1)[0] == "__cxa_allocate_exception"));
}

#[test]
fn openmp_c_program() {
    let s = scratch("openmp");
    let src = fixture("rt/openmp_threads.c");
    let text = std::fs::read_to_string(&src).unwrap();
    let flags = ["-O1", "-fopenmp", src.to_str().unwrap()];
    s.compile(&profcc(), &[&flags[..], &["-o", "omp_profcc"]].concat());
    s.compile(&clang(), &[&flags[..], &["-o", "omp_clang"]].concat());
    let native = s.run_plain("omp_clang", &[]);
    let (out, p) = s.run_profiled("omp_profcc", &[], "");
    assert_same_run("OpenMP fixture", &native, &out);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "sum=2016\n");
    check_openmp_fixture_profile(&s, &p, &text, "omp_profcc.profile.json");
}

fn check_openmp_fixture_profile(s: &Scratch, p: &Profile, text: &str, profile: &str) {
    // libomp's three workers are registered, children of the main thread, and ran work().
    assert_eq!(p.threads.len(), 4, "{}", threads_summary(p));
    assert!(
        p.threads[1..]
            .iter()
            .all(|t| t.parent == Some(0) && t.accesses > 0),
        "{}",
        threads_summary(p)
    );
    let store = line_of(text, "/* SITE per-iteration */") + 2; // p[0] = i;
    assert_eq!(
        count_at(p, "openmp_threads.c", store, AccessKind::Write),
        64
    );
    let site = p
        .sites
        .iter()
        .find(|s| s.file.ends_with("openmp_threads.c") && s.line == store)
        .unwrap();
    assert_eq!(site.threads, 4);
    assert!(p
        .sites
        .iter()
        .any(|s| s.function.contains(".omp_outlined") && s.threads == 4));
    let r = report(&s.path(profile), &[]);
    let a = r
        .alloc_sites
        .sites
        .iter()
        .find(|a| frame_functions(&a.stack, 1) == ["work"])
        .expect("no allocation site in work()");
    assert_eq!(
        (a.count, a.bytes, a.frees, a.threads),
        (64, 64 * 256, 64, 4)
    );
}

// ---------------------------------------------------------------------------------------------
// CMake's find_package(OpenMP) through the toolchain file; autoconf with CC=profcc

#[test]
fn cmake_find_package_openmp() {
    let s = scratch("cmake-openmp");
    // Debug (-O0 -g): the fixture's exact counts hold (at -O2 the store before free is dead).
    let log = cmake_both(&s, &fixture("real/cmake_openmp"), "Debug", &[]);
    assert!(
        log.contains("Found OpenMP_C: -fopenmp") && log.contains("Found OpenMP_CXX: -fopenmp"),
        "{log}"
    );
    let build = s.path("build-profcc");
    assert_eq!(cmake_compiler_id(&build, "C"), "Clang");
    assert_eq!(cmake_compiler_id(&build, "CXX"), "Clang");

    let text = std::fs::read_to_string(fixture("rt/openmp_threads.c")).unwrap();
    let native = s.run_plain("build-clang/omp_c", &[]);
    let (out, p) = s.run_profiled("build-profcc/omp_c", &[], "");
    assert_same_run("CMake omp_c", &native, &out);
    check_openmp_fixture_profile(&s, &p, &text, "build-profcc/omp_c.profile.json");

    let cxx = std::fs::read_to_string(fixture("real/cmake_openmp/omp_histogram.cpp")).unwrap();
    let native = s.run_plain("build-clang/omp_cxx", &[]);
    let (out, p) = s.run_profiled("build-profcc/omp_cxx", &[], "");
    assert_same_run("CMake omp_cxx", &native, &out);
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).ends_with("total 200000\n")
    );
    assert_eq!(p.threads.len(), 3, "{}", threads_summary(&p));
    let line = line_of(&cxx, "MARK_LOCAL");
    let sites: Vec<_> = p
        .sites
        .iter()
        .filter(|s| s.file.ends_with("omp_histogram.cpp") && s.line == line)
        .collect();
    let reads: u64 = sites
        .iter()
        .filter(|s| s.kind == AccessKind::Read)
        .map(|s| s.count)
        .sum();
    assert!(
        reads >= 200_000,
        "reads at omp_histogram.cpp:{line}: {reads}"
    );
    assert!(sites.iter().all(|s| s.threads == 3), "{sites:?}");
}

#[test]
fn autoconf_configure_make_tiny() {
    let s = scratch("autoconf");
    for tag in ["profcc", "clang"] {
        let dir = s.path(tag);
        copy_tree(&fixture("real/autoconf_tiny"), &dir);
        sh(Command::new("autoconf").current_dir(&dir));
        sh(Command::new("autoheader").current_dir(&dir));
        let cc = if tag == "profcc" {
            profcc().display().to_string()
        } else {
            CLANG.to_string()
        };
        timed(&format!("autoconf: configure ({tag})"), || {
            sh(Command::new("./configure")
                .arg(format!("CC={cc}"))
                .arg("CFLAGS=-O1 -g")
                .current_dir(&dir))
        });
        sh(Command::new("make").current_dir(&dir));
    }
    let read = |tag: &str, f: &str| std::fs::read_to_string(s.path(tag).join(f)).unwrap();
    assert_eq!(
        read("profcc", "config.h"),
        read("clang", "config.h"),
        "config.h differs between CC=profcc and CC=clang-22"
    );
    let libs = |tag: &str| {
        read(tag, "Makefile")
            .lines()
            .find(|l| l.starts_with("LIBS ="))
            .unwrap()
            .to_string()
    };
    assert_eq!(
        libs("profcc"),
        libs("clang"),
        "configure's LIBS differ between CC=profcc and CC=clang-22"
    );
    assert!(
        read("profcc", "config.log").contains("CC='")
            && read("profcc", "Makefile").contains("profcc")
    );
    // configure's conftest programs ran instrumented but stayed silent and left no profile.
    let stray: Vec<_> = std::fs::read_dir(s.path("profcc"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("profcc.") && n.ends_with(".json"))
        .collect();
    assert!(
        stray.is_empty(),
        "configure left profiles behind: {stray:?}"
    );
    assert!(
        !read("profcc", "config.log").contains("profcc: "),
        "runtime summary in config.log"
    );

    let native = s.run_plain("clang/tiny", &[]);
    let (out, p) = s.run_profiled("profcc/tiny", &[], "");
    assert_same_run("autoconf tiny", &native, &out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("posix_memalign: yes"));
    let text = read("profcc", "tiny.c");
    assert_eq!(
        count_at(&p, "tiny.c", line_of(&text, "MARK_COS"), AccessKind::Write),
        64
    );
}

// ---------------------------------------------------------------------------------------------
// The smallest form of what jemalloc's build showed: a program's own allocator that mmaps
// under its own lock, entered from libstdc++'s constructor before the executable's. The
// runtime initialised lazily from the mmap interposer and spawned its dumper thread there;
// pthread_create's calloc then waited for the allocator's lock forever.

#[test]
fn own_allocator_mmapping_under_its_lock() {
    let s = scratch("own-malloc");
    let src = fixture("real/own_malloc_lock.c");
    s.compile(
        &profcc(),
        &["-O1", src.to_str().unwrap(), "-o", "own_profcc", "-lstdc++"],
    );
    s.compile(
        &clang(),
        &["-O1", src.to_str().unwrap(), "-o", "own_clang", "-lstdc++"],
    );
    let native = s.run_plain("own_clang", &[]);
    let (out, p) = s.run_profiled("own_profcc", &[], "");
    assert_same_run("own allocator", &native, &out);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n");
    assert!(count_in(&p, "own_malloc_lock.c", "malloc") > 0);
}

/// libexpat 2.1.0 (the `expat-sys` crate's bundled sources), built as upstream ships it:
/// `./configure` (autoconf + libtool, shared library), `make`, `make check` (its own test
/// suites, C and C++, linked against the shared library), then `xmlwf` (a libtool wrapper
/// over the shared libexpat, lazily bound) on well-formed and malformed documents. The
/// profcc build must print and exit exactly as the clang-22 build, and profile the library.
#[test]
fn libexpat_libtool_shared_library_xmlwf_and_test_suite() {
    let s = scratch("expat");
    let src = crate_dir("expat-sys").join("expat");
    let good = s.write(
        "good.xml",
        "<?xml version=\"1.0\"?>\n<doc a=\"1\"><item>one &amp; two</item><item b='x'/><!-- c --></doc>\n",
    );
    let bad = s.write("bad.xml", "<doc><item></doc>\n");
    let mut runs = Vec::new();
    for (cc, cxx, tag) in [
        (clang(), clangxx(), "clang"),
        (profcc(), profcxx(), "profcc"),
    ] {
        let dir = s.path(tag);
        copy_tree(&src, &dir);
        let env = [
            ("CC", cc.display().to_string()),
            ("CXX", cxx.display().to_string()),
        ];
        timed(&format!("expat: configure + make with {tag}"), || {
            sh(Command::new("./configure")
                .current_dir(&dir)
                .envs(env.iter().cloned())
                .env("CFLAGS", "-O2")
                .env("CXXFLAGS", "-O2"));
            sh(Command::new("make").arg("-j2").current_dir(&dir));
        });
        assert!(
            dir.join(".libs/libexpat.so").exists(),
            "{tag}: no shared libexpat"
        );
        let profile = s.path(&format!("{tag}.%p.json"));
        let opts = format!("out={}", profile.display());
        let check = output_within(
            Command::new("make")
                .arg("check")
                .current_dir(&dir)
                .env("PROFCC_OPTIONS", &opts),
        );
        let xmlwf = |args: &[&Path], out_dir: Option<&Path>| {
            let mut c = Command::new(dir.join("xmlwf/xmlwf"));
            if let Some(d) = out_dir {
                std::fs::create_dir_all(d).unwrap();
                c.arg("-d").arg(d);
            }
            output_within(
                c.args(args)
                    .current_dir(s.dir.path())
                    .env("PROFCC_OPTIONS", &opts),
            )
        };
        let canon_dir = s.path(&format!("canon-{tag}"));
        let both = xmlwf(&[&good, &bad], None);
        let canon = xmlwf(&[&good], Some(&canon_dir));
        let canonical = std::fs::read(canon_dir.join("good.xml")).unwrap_or_default();
        runs.push((tag, check, both, canon, canonical));
    }
    let (n, p) = (&runs[0], &runs[1]);
    // make's own lines name the directory; the test programs' output is what is compared.
    let suite = |o: &std::process::Output| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter(|l| l.contains("Checks:"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert!(
        n.1.status.success(),
        "clang-22 make check failed:\n{}",
        tail(&String::from_utf8_lossy(&n.1.stdout), 30)
    );
    assert_eq!(
        suite(&n.1).len(),
        2,
        "runtests and runtestspp: {:?}",
        suite(&n.1)
    );
    assert_eq!(
        suite(&p.1),
        suite(&n.1),
        "make check: the test suites' results differ"
    );
    assert_eq!(p.1.status.code(), n.1.status.code());
    assert_same_run("xmlwf good.xml bad.xml", &n.2, &p.2);
    assert!(
        format!(
            "{}{}",
            String::from_utf8_lossy(&n.2.stdout),
            String::from_utf8_lossy(&n.2.stderr)
        )
        .contains("bad.xml:1:"),
        "xmlwf reports the malformed document: {:?}",
        n.2
    );
    assert_same_run("xmlwf -d", &n.3, &p.3);
    assert!(
        !n.4.is_empty() && p.4 == n.4,
        "canonical output differs or is empty"
    );
    // The profcc runs wrote profiles that count accesses in the shared library's parser.
    let profiles: Vec<Profile> = std::fs::read_dir(s.dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("profcc."))
        .filter_map(|e| profcc_schema::read(&e.path()).ok())
        .collect();
    assert!(
        !profiles.is_empty(),
        "no profile from the profcc-built xmlwf or test suites"
    );
    let in_lib: u64 = profiles
        .iter()
        .map(|p| count_in_file(p, "lib/xmlparse.c"))
        .sum();
    assert!(in_lib > 0, "no access counted in libexpat's xmlparse.c");
}
