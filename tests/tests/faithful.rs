//! The faithful test set (issue 9): profcc promises that swapping the compiler changes nothing
//! but the profile. Every case below is built with clang-22 and with profcc (same sources, same
//! flags, same build commands), run the same ways, and compared on stdout, stderr, the exit
//! status and, for configure/CMake builds, the probe results (`config.h`, CMake's cache).
//!
//! The table of cases (native vs profcc: same or not) is written to `target/faithful.md`;
//! `cargo xtask faithful` builds the toolchain, runs this test and prints it.
//! `PROFCC_FAITHFUL=name,name` runs only the cases whose name contains one of the words;
//! `PROFCC_TEST_KEEP=1` keeps the build directories (path printed).
//!
//! stderr is compared with the summary at its default: runs here write stderr to a pipe, so the
//! summary goes into the profile, never into the compared output.

use profcc_tests::faithful::*;
use profcc_tests::{compile_many, crate_dir, fixture, root};
use std::path::{Path, PathBuf};
use std::process::Command;

fn c_case(name: &'static str, source: &str, runs: Vec<Run>) -> Case {
    Case {
        name,
        build: Build::Compile {
            sources: vec![source.into()],
            flags: vec!["-O2".into(), "-pthread".into()],
            exe: name.into(),
            cxx: source.ends_with(".cpp"),
        },
        runs,
        files: vec![],
    }
}

/// Deterministic text: lines of pseudo-random words of varying lengths.
fn text_input(lines: usize) -> Vec<u8> {
    let words = [
        "alpha", "beta", "gamma", "delta", "profile", "compiler", "x", "", "faithful", "loop",
    ];
    let mut s: u64 = 12345;
    let mut out = String::new();
    for _ in 0..lines {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let n = (s >> 33) % 14;
        for w in 0..n {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if w > 0 {
                out.push(' ');
            }
            out.push_str(words[((s >> 40) % words.len() as u64) as usize]);
        }
        out.push('\n');
    }
    out.into_bytes()
}

// ---------------------------------------------------------------------------------------------
// Real projects: sources from the crates realsrc/ depends on.

fn lua_build(tc: &Toolchain, dir: &Path) -> Result<(), String> {
    let src = crate_dir("lua-src").join("lua-5.4.8");
    let mut srcs: Vec<PathBuf> = std::fs::read_dir(&src)
        .map_err(|e| e.to_string())?
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .filter(|p| !matches!(p.file_name().unwrap().to_str(), Some("lua.c" | "luac.c")))
        .collect();
    srcs.sort();
    let flags = ["-O2", "-DLUA_USE_LINUX"];
    let objs = compile_many(&tc.cc, &flags, &srcs, &dir.join("obj"), 2);
    step(
        Command::new("llvm-ar-22")
            .arg("rcs")
            .arg(dir.join("liblua.a"))
            .args(&objs),
    )?;
    step(
        command(tc, dir, &tc.cc)
            .args(flags)
            .arg(format!("-I{}", src.display()))
            .arg(fixture("real/lua_host.c"))
            .args(["liblua.a", "-o", "lua", "-lm", "-ldl"]),
    )
    .map(|_| ())
}

fn lua_case() -> Case {
    let runs = ["strings", "coroutines", "gc", "errors", "math", "exit_code"]
        .iter()
        .map(|s| {
            let script = fixture(&format!("faithful/lua/{s}.lua"));
            let mut r = Run::new("lua", &[script.to_str().unwrap()]);
            r.label = format!("lua {s}.lua");
            r
        })
        .collect();
    Case {
        name: "lua-5.4-scripts",
        build: Build::Steps(lua_build),
        runs,
        files: vec![],
    }
}

const ZLIB_SOURCES: &[&str] = &[
    "adler32", "compress", "crc32", "deflate", "infback", "inffast", "inflate", "inftrees",
    "trees", "uncompr", "zutil", "gzclose", "gzlib", "gzread", "gzwrite",
];

fn zlib_build(tc: &Toolchain, dir: &Path) -> Result<(), String> {
    let z = crate_dir("libz-sys").join("src/zlib");
    let mut srcs: Vec<PathBuf> = ZLIB_SOURCES
        .iter()
        .map(|n| z.join(format!("{n}.c")))
        .collect();
    srcs.push(fixture("faithful/minigzip.c"));
    let inc = format!("-I{}", z.display());
    let flags = [
        "-O2",
        "-D_LARGEFILE64_SOURCE=1",
        "-DHAVE_UNISTD_H",
        "-DHAVE_STDARG_H",
        inc.as_str(),
    ];
    let objs = compile_many(&tc.cc, &flags, &srcs, &dir.join("obj"), 2);
    step(
        command(tc, dir, &tc.cc)
            .args(&objs)
            .args(["-o", "minigzip"]),
    )
    .map(|_| ())
}

fn zlib_case() -> Case {
    let input = text_input(20_000);
    let mut gz = Run::new("minigzip", &["-c"]).stdin(input.clone());
    gz.label = "minigzip -c < text".into();
    let mut t = Run::new("minigzip", &["-t", "round.gz"]).stdin(input);
    t.label = "minigzip -t round.gz < text".into();
    let mut bad = Run::new("minigzip", &["-d"]).stdin(b"\x1f\x8b\x08\x00garbage".to_vec());
    bad.label = "minigzip -d < corrupt".into();
    Case {
        name: "zlib-minigzip",
        build: Build::Steps(zlib_build),
        runs: vec![gz, t, bad],
        files: vec![FileCheck {
            path: "round.gz".into(),
            filter: whole,
        }],
    }
}

// ---------------------------------------------------------------------------------------------
// Programs of the shape of the real projects issue 9 names.

fn stencil_build(tc: &Toolchain, dir: &Path) -> Result<(), String> {
    step(
        command(tc, dir, "cmake")
            .arg("-S")
            .arg(fixture("faithful/stencil"))
            .args(["-B", "build", "-DCMAKE_BUILD_TYPE=Release"])
            .args(&tc.cmake_args),
    )?;
    step(command(tc, dir, "cmake").args(["--build", "build", "-j2"])).map(|_| ())
}

/// The probe results of a CMake cache (`HAVE_*` entries), not its paths and tools.
fn cmake_probes(cache: &str) -> String {
    cache
        .lines()
        .filter(|l| l.starts_with("HAVE_"))
        .map(|l| format!("{l}\n"))
        .collect()
}

fn minixml_build(tc: &Toolchain, dir: &Path) -> Result<(), String> {
    step(
        Command::new("cp")
            .arg("-r")
            .arg(fixture("faithful/minixml"))
            .arg(dir.join("src")),
    )?;
    let src = dir.join("src");
    step(command(tc, &src, "autoreconf").arg("-fi"))?;
    step(command(tc, &src, "./configure").arg(format!("CC={}", tc.cc.display())))?;
    step(command(tc, &src, "make").arg("-j2")).map(|_| ())
}

fn xml_run(label: &str, doc: &str) -> Run {
    let mut r = Run::new("src/xmlcheck", &[]).stdin(doc.as_bytes().to_vec());
    r.label = format!("xmlcheck < {label}");
    r
}

fn minixml_case() -> Case {
    let mut big = String::from("<?xml version=\"1.0\"?>\n<catalog>\n");
    for i in 0..2000 {
        big.push_str(&format!(
            "  <item id=\"{i}\" kind='{}'>text &amp; more &#{};</item>\n",
            ["a", "b&lt;c", "d"][i % 3],
            0x41 + i % 26
        ));
    }
    big.push_str("</catalog>\n");
    Case {
        name: "expat-like-libtool",
        build: Build::Steps(minixml_build),
        runs: vec![
            Run::new("src/xmlcheck", &["-v"]),
            xml_run(
                "small.xml",
                "<a x=\"1\"><!-- c --><b>hi &lt;there&gt;</b><c/></a>\n",
            ),
            xml_run("catalog.xml (2000 items)", &big),
            xml_run("mismatched.xml", "<a>\n <b>\n </a>\n"),
            xml_run("entity.xml", "<a>&nope;</a>"),
            xml_run("junk.xml", "<a/><b/>"),
        ],
        files: vec![FileCheck {
            path: "src/config.h".into(),
            filter: whole,
        }],
    }
}

fn cases() -> Vec<Case> {
    let env = |exe: &str, args: &[&str], k: &str, v: &str| Run::new(exe, args).env(k, v);
    let mut stdin_run = Run::new("stdin", &[]).stdin(text_input(5000));
    stdin_run.label = "stdin < 5000 lines".into();
    let mut empty = Run::new("stdin", &[]);
    empty.label = "stdin < empty input".into();
    vec![
        // Small hostile programs (issue 9: "already work, must stay working").
        c_case("fork", "fork.c", vec![Run::new("fork", &[])]),
        c_case(
            "signals",
            "signals.c",
            ["handler", "term", "int", "ignored", "blocked"]
                .iter()
                .map(|m| Run::new("signals", &[*m]))
                .collect(),
        ),
        Case {
            name: "cxx-exceptions-threads",
            build: Build::Compile {
                sources: vec!["exceptions_threads.cpp".into()],
                flags: vec!["-O2".into(), "-std=c++17".into(), "-pthread".into()],
                exe: "exceptions".into(),
                cxx: true,
            },
            runs: vec![
                Run::new("exceptions", &[]),
                Run::new("exceptions", &["uncaught"]),
            ],
            files: vec![],
        },
        c_case(
            "threads-256",
            "threads256.c",
            vec![Run::new("threads-256", &[])],
        ),
        c_case(
            "tls-destructors",
            "tls_dtors.cpp",
            vec![Run::new("tls-destructors", &[])],
        ),
        c_case(
            "static-destructors",
            "static_dtors.cpp",
            vec![Run::new("static-destructors", &[])],
        ),
        c_case(
            "exit-codes",
            "exit_codes.c",
            [
                &["exit", "0"][..],
                &["exit", "3"],
                &["exit", "255"],
                &["return", "0"],
                &["return", "3"],
                &["return", "255"],
                &[],
            ]
            .iter()
            .map(|a| Run::new("exit-codes", a))
            .collect(),
        ),
        c_case("stdin", "stdin_reader.c", vec![stdin_run, empty]),
        c_case(
            "atexit-order",
            "atexit_order.c",
            vec![Run::new("atexit-order", &[])],
        ),
        c_case(
            "setjmp-longjmp",
            "setjmp_longjmp.c",
            vec![Run::new("setjmp-longjmp", &[])],
        ),
        c_case(
            "vfork-exec",
            "vfork_exec.c",
            vec![Run::new("vfork-exec", &[])],
        ),
        c_case(
            "posix-spawn",
            "posix_spawn.c",
            vec![Run::new("posix-spawn", &[])],
        ),
        // Real projects, sources through crates.
        lua_case(),
        zlib_case(),
        // Programs of the same shape as the real projects issue 9 names.
        Case {
            name: "gapbs-like-bfs-pr-openmp",
            build: Build::Compile {
                sources: vec!["bfs_graph.cpp".into()],
                flags: vec!["-O2".into(), "-std=c++17".into(), "-fopenmp".into()],
                exe: "bfs".into(),
                cxx: true,
            },
            runs: vec![
                env("bfs", &["14", "4"], "OMP_NUM_THREADS", "2"),
                env("bfs", &["12", "3"], "OMP_NUM_THREADS", "4"),
                env("bfs", &["14", "2", "pr"], "OMP_NUM_THREADS", "2"),
            ],
            files: vec![],
        },
        Case {
            name: "lulesh-like-cmake",
            build: Build::Steps(stencil_build),
            runs: vec![
                Run::new("build/stencil", &[]),
                Run::new("build/stencil", &["16", "100"]),
            ],
            files: vec![
                FileCheck {
                    path: "build/config.h".into(),
                    filter: whole,
                },
                FileCheck {
                    path: "build/CMakeCache.txt".into(),
                    filter: cmake_probes,
                },
            ],
        },
        c_case(
            "redis-like-event-loop",
            "eventloop.c",
            vec![
                Run::new("redis-like-event-loop", &[]),
                Run::new("redis-like-event-loop", &["20000"]),
            ],
        ),
        minixml_case(),
        c_case(
            "allocator-stress",
            "alloc_stress.c",
            vec![
                Run::new("allocator-stress", &[]),
                env(
                    "allocator-stress",
                    &[],
                    "LD_PRELOAD",
                    "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
                ),
            ],
        ),
    ]
}

#[test]
fn faithful_cases_match_clang22() {
    let mut cases = cases();
    let all = cases.len();
    if let Ok(filter) = std::env::var("PROFCC_FAITHFUL") {
        let words: Vec<&str> = filter.split(',').filter(|w| !w.is_empty()).collect();
        cases.retain(|c| words.iter().any(|w| c.name.contains(w)));
    }
    let keep = std::env::var("PROFCC_TEST_KEEP").is_ok_and(|v| v == "1");
    let work = tempfile::Builder::new()
        .prefix("profcc-faithful")
        .tempdir()
        .unwrap();
    let t0 = std::time::Instant::now();
    let rows = run_all(&cases, work.path(), 2);
    let md = format!(
        "Native (clang-22) vs profcc, same flags; produced by `cargo xtask faithful` \
         (tests/tests/faithful.rs), {} of {all} cases, {:.0} s on {} cores.\n\n{}",
        rows.len(),
        t0.elapsed().as_secs_f64(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        table(&rows)
    );
    let out = root().join("target/faithful.md");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    std::fs::write(&out, &md).unwrap();
    eprintln!("{md}\n(written to {})", out.display());
    if keep {
        eprintln!("[faithful] kept {}", work.keep().display());
    }
    let bad: Vec<String> = rows
        .iter()
        .filter(|r| !r.same())
        .map(|r| match &r.build_error {
            Some(e) => format!("{}: {e}", r.case),
            None => r.details.join("\n"),
        })
        .collect();
    assert!(
        bad.is_empty(),
        "cases where the profcc build is not faithful:\n{}",
        bad.join("\n")
    );
}
