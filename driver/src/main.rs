//! `profcc` / `profcc++`: a drop-in replacement for clang-22 that instruments what it compiles.
//!
//! ```text
//! profcc ARGS...                 clang-22 ARGS, instrumented (C++ mode when argv[0] ends in ++)
//! profcc clang-22 ARGS...        prefix mode (CMAKE_<LANG>_COMPILER_LAUNCHER; also set
//!                                CMAKE_<LANG>_LINKER_LAUNCHER, CMake >= 3.21, so the link
//!                                gets the runtime)
//! profcc report PROFILE...       the report of profiles (text, JSON, CSV); `--help` for more
//! profcc detect-allocator [--preload LIB.so | --exe PROGRAM] [-o FILE]
//!                                measure an allocator, describe it in TOML (docs/allocators.md)
//! profcc --profcc-version        profcc's own version
//! profcc --print-cmake-toolchain path of configs/profcc.cmake
//! profcc --profcc-clang          path of the clang-22 profcc runs
//! ```
//!
//! Environment: PROFCC_DISABLE=1 (plain clang), PROFCC_CLANG=/path (another clang-22),
//! PROFCC_INSTRUMENT=sharing|accesses|none, PROFCC_LOG=1|path, PROFCC_DRY_RUN=1, PROFCC_KEEP_TEMPS=1,
//! PROFCC_STATS=1.
//!
//! Executables (not `-shared`, `-r`, `-nostdlib`, `-nodefaultlibs`, `-nolibc`) are linked with
//! `-Wl,@<tmp>/runtime.rsp -Wl,-u,__profcc_force_link -Wl,--export-dynamic-symbol=__profcc_*`
//! appended (the response file names `<dir of profcc>/libprofcc_rt.a`, so CMake does not
//! take the archive for an implicit library of the compiler), so instrumented shared
//! libraries (linked or dlopen'ed) resolve the hooks against the executable.
//! `-flto` reaches every step: objects are instrumented bitcode, as clang-22's are bitcode.
//! `-x c -` is instrumented (the frontend reads stdin). A command line that compiles C/C++
//! but goes to clang unchanged (`-fsanitize=`, `-save-temps`, C++ module units, an option
//! profcc's table does not know, ...) prints one line on stderr naming the reason and the
//! fix, except in configure probes (`conftest*` files, cwd under `CMakeFiles/` or
//! `meson-private/`), whose checks read compiler output; `PROFCC_LOG` always gets it.
//! Compile jobs add `-gline-tables-only` (when no `-g*` was given) and `-fno-omit-frame-pointer`
//! (after the user's flags, so it wins over `-fomit-frame-pointer`; not in the ROI-only build,
//! `exec::frame_pointers`).

mod args;
mod calibrate;
mod detect;
mod exec;
mod layout;
mod monitor;
mod plan;
mod prefixed;
mod subcommands;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

fn main() {
    let argv: Vec<OsString> = std::env::args_os().collect();
    if argv.get(1).is_some_and(subcommands::is_subcommand) {
        std::process::exit(subcommands::run(argv));
    }
    std::process::exit(driver(argv));
}

/// Does this argv element name a compiler (prefix mode)?
fn names_compiler(a: &str) -> bool {
    if a.starts_with('-') {
        return false;
    }
    let name = Path::new(a)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    let rest = name
        .strip_prefix("clang++")
        .or_else(|| name.strip_prefix("clang"))
        .or_else(|| {
            name.strip_prefix("profcc++")
                .or_else(|| name.strip_prefix("profcc"))
        });
    match rest {
        Some("") => true,
        Some(r) => r
            .strip_prefix('-')
            .map(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.'))
            .unwrap_or(false),
        None => false,
    }
}

fn driver(argv: Vec<OsString>) -> i32 {
    let argv0 = argv
        .first()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_else(|| "profcc".into());
    let mut cxx = argv0.ends_with("++");
    let mut rest: Vec<OsString> = argv.into_iter().skip(1).collect();

    match rest.first().and_then(|a| a.to_str()) {
        Some("--profcc-version") => {
            println!(
                "profcc {} (drives clang-22; see --print-cmake-toolchain, PROFCC_* variables)",
                env!("CARGO_PKG_VERSION")
            );
            return 0;
        }
        Some("--print-cmake-toolchain") => return print_toolchain(),
        Some("--profcc-clang") => {
            // The clang profcc runs (as found, symlinks kept): the toolchain file derives the
            // directory and version suffix CMake searches llvm-ar-22 & co. with from it.
            return match exec::find_clang(None, cxx) {
                Ok(c) => {
                    println!("{}", c.path.display());
                    0
                }
                Err(e) => {
                    eprintln!("{e}");
                    1
                }
            };
        }
        _ => {}
    }

    // Prefix mode: `profcc clang-22 ARGS`, `profcc /usr/bin/clang++-22 ARGS`. A leading
    // `profcc`/`profcc++` (launcher and compiler both profcc) is dropped.
    let mut named: Option<String> = None;
    while let Some(first) = rest.first().and_then(|a| a.to_str()).map(String::from) {
        if !names_compiler(&first) {
            break;
        }
        let resolves_to_self = exec::which(&first)
            .map(|p| exec::is_self(&p))
            .unwrap_or(false);
        let fname = Path::new(&first)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if !resolves_to_self && fname.starts_with("profcc") {
            break; // a source called "profcc"? leave it to clang
        }
        cxx = fname.ends_with("++");
        rest.remove(0);
        if resolves_to_self {
            named = None;
            continue;
        }
        named = Some(first);
        break;
    }

    if named.is_none() {
        if let Some(first) = rest.first().and_then(|a| a.to_str()) {
            let f = Path::new(first)
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("");
            let base = f.split('-').next().unwrap_or("");
            if matches!(base, "gcc" | "g++" | "cc" | "c++")
                && !first.starts_with('-')
                && Path::new(first).extension().is_none()
            {
                eprintln!("profcc: error: prefix mode needs clang-22 as the compiler, not '{first}'; use CC=clang-22 CXX=clang++-22 with the launcher, or profcc/profcc++ as the compiler");
                return 1;
            }
        }
    }

    // Nested inside a clang that profcc started: behave as plain clang-22.
    let nested = exec::env_on(exec::NESTED_ENV);
    let clang = if nested {
        let p = PathBuf::from(if cxx {
            "/usr/bin/clang++-22"
        } else {
            "/usr/bin/clang-22"
        });
        if exec::is_self(&p) || !p.is_file() {
            eprintln!("profcc: error: profcc called itself through its clang (PROFCC_CLANG or PATH points back to profcc); set PROFCC_CLANG=/path/to/real/clang-22");
            return 1;
        }
        exec::Clang {
            path: p,
            pre: Vec::new(),
        }
    } else {
        match exec::find_clang(named.as_deref(), cxx) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("{e}");
                return 1;
            }
        }
    };
    if nested {
        return exec::exec_clang(&clang, &rest, plan::Reason::Nested, "");
    }
    if exec::env_on("PROFCC_DISABLE") {
        return exec::exec_clang(&clang, &rest, plan::Reason::Disabled, "");
    }
    // `--help`: clang's help, then what profcc adds.
    if rest.iter().any(|a| a == "--help" || a == "-help") {
        use std::io::Write;
        let status = clang.command().args(&rest).status();
        let _ = std::io::stdout().flush();
        print!("{}", subcommands::help_section());
        return match status {
            Ok(s) => s.code().unwrap_or(1),
            Err(e) => {
                eprintln!("profcc: error: cannot run {}: {e}", clang.path.display());
                1
            }
        };
    }

    let Some(strs) = rest
        .iter()
        .map(|a| a.to_str().map(String::from))
        .collect::<Option<Vec<String>>>()
    else {
        return exec::exec_clang(
            &clang,
            &rest,
            plan::Reason::UnsureOption,
            "argument not UTF-8",
        );
    };
    let expanded = args::expand_response_files(&strs);
    let cwd = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    exec::log(&format!(
        "{}: {} {}",
        cwd,
        clang.path.display(),
        strs.iter()
            .map(|a| args::quote_sh(a))
            .collect::<Vec<_>>()
            .join(" ")
    ));
    match plan::classify_with(&expanded, exec::frame_pointers()) {
        plan::Plan::PassThrough(r, detail) => {
            exec::notice_unprofiled(r, &detail, &expanded);
            exec::exec_clang(&clang, &rest, r, &detail)
        }
        plan::Plan::Build(b) => {
            exec::log(&format!(
                "build: {} compile job(s){}",
                b.jobs.len(),
                if b.link.is_some() { ", link" } else { "" }
            ));
            exec::catch_signals();
            let rc = exec::run_build(&clang, &b, &strs);
            exec::finish_interrupted();
            rc
        }
    }
}

/// Print the absolute path of the CMake toolchain file, and make sure `profcc++` exists beside
/// the executable (the toolchain file needs it).
fn print_toolchain() -> i32 {
    let exe = exec::self_exe();
    if let Some(e) = &exe {
        let cxx = e.with_file_name("profcc++");
        if std::fs::symlink_metadata(&cxx).is_err() {
            let _ = std::os::unix::fs::symlink("profcc", &cxx);
        }
    }
    let mut cands = vec![PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../configs/profcc.cmake"
    ))];
    if let Some(e) = &exe {
        let d = e.parent().unwrap();
        cands.push(d.join("profcc.cmake"));
        cands.push(d.join("../../configs/profcc.cmake"));
        cands.push(d.join("../share/profcc/profcc.cmake"));
    }
    for c in cands {
        if let Ok(p) = c.canonicalize() {
            println!("{}", p.display());
            return 0;
        }
    }
    eprintln!("profcc: error: profcc.cmake not found (looked in the source tree's configs/ and beside the executable); rebuild from a checkout with `cargo build --release`");
    1
}

#[cfg(test)]
mod tests {
    #[test]
    fn compiler_names() {
        for n in [
            "clang-22",
            "clang++-22",
            "/usr/bin/clang-22",
            "clang",
            "clang++",
            "clang-22.1",
        ] {
            assert!(super::names_compiler(n), "{n}");
        }
        for n in [
            "a.c",
            "-c",
            "clang-tidy",
            "clangd",
            "gcc",
            "clang-",
            "main.o",
        ] {
            assert!(!super::names_compiler(n), "{n}");
        }
    }
}
