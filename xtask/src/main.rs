//! `cargo xtask <command>`: the project's scripts, in Rust.
//!
//! - `setup`: install the LLVM 22 toolchain and the packages the tests need (apt-get).
//! - `build`: build the driver and the runtime (release) and the `profcc++` link.
//! - `demo`: setup + build, profile the bundled example, print the report.
//! - `test`: setup + build, then every test of the workspace. `test --stress [N]` (default 20):
//!   the sharing tests only, N times each under a CPU hog per core, with a table of how often
//!   each gave its verdict (`stress.rs`).
//! - `bench`: setup + build, then the benchmarks (ratios measured side by side).
//! - `faithful [case,...]`: setup + build, then the faithful test set (tests/tests/faithful.rs:
//!   each case built with clang-22 and with profcc, runs compared); prints the table of cases
//!   it writes to target/faithful.md.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

mod bench;
mod stress;

/// Debian packages: the toolchain, then what the tests build and run with.
const TOOLCHAIN: &[&str] = &["clang-22", "llvm-22-dev", "libomp-22-dev"];
const TEST_PACKAGES: &[&str] = &[
    "cmake",
    "autoconf",
    "make",
    "libnuma-dev",
    "pkg-config",
    "binutils",
    // The program's own allocator (tests/tests/alloc.rs), linked by soname: no -dev needed.
    "libjemalloc2",
    "libmimalloc2.0",
    "libtcmalloc-minimal4",
    // `profcc detect-allocator --preload libtbbmalloc.so.2` (tests/tests/detect_allocator.rs).
    "libtbbmalloc2",
    // The anchor of the allocation-path bench (xtask/src/bench/alloc.rs).
    "heaptrack",
    // ThreadSanitizer's runtime, the anchor of the default-build bench
    // (xtask/src/bench/default.rs).
    "libclang-rt-22-dev",
    // The faithful test set's expat-like project (tests/tests/faithful.rs): autoreconf + libtool.
    "automake",
    "libtool",
    // The report's exports and HTML page, opened by the tools users open them with
    // (tests/tests/exports.rs, tests/tests/html.rs): callgrind_annotate, go tool pprof, a
    // headless Chromium.
    "valgrind",
    "golang-go",
    "chromium-headless-shell",
    // MPI jobs merged by rank (tests/tests/mpi.rs): mpicc with OMPI_CC=profcc, mpirun.
    "openmpi-bin",
    "libopenmpi-dev",
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cmd = args.first().map(String::as_str).unwrap_or("help");
    let rest = &args[args.len().min(1)..];
    let result = match cmd {
        "setup" => setup(true),
        "build" => setup(false).and_then(|_| build()),
        "demo" => setup(false).and_then(|_| build()).and_then(|_| demo()),
        "test" if rest.first().is_some_and(|a| a == "--stress") => setup(true)
            .and_then(|_| build())
            .and_then(|_| stress::run(&rest[1..])),
        "test" => setup(true).and_then(|_| build()).and_then(|_| test(rest)),
        "faithful" => setup(true)
            .and_then(|_| build())
            .and_then(|_| faithful(rest)),
        "bench" => setup(true)
            .and_then(|_| build())
            .and_then(|_| bench::run(&root(), rest)),
        _ => {
            eprintln!("usage: cargo xtask <setup|build|demo|test|faithful|bench>");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask {cmd}: {e}");
            ExitCode::FAILURE
        }
    }
}

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

pub fn run(cmd: &mut Command) -> Result<(), String> {
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed ({status})"))
    }
}

fn installed(pkg: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", pkg])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        .unwrap_or(false)
}

/// Install whatever is missing with apt-get (as root, or through sudo).
fn setup(with_test_packages: bool) -> Result<(), String> {
    let mut want: Vec<&str> = TOOLCHAIN.to_vec();
    if with_test_packages {
        want.extend_from_slice(TEST_PACKAGES);
    }
    let missing: Vec<&str> = want.into_iter().filter(|p| !installed(p)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!("xtask: installing {}", missing.join(" "));
    let root = unsafe_geteuid() == 0;
    let apt = |args: &[&str]| {
        let mut c = if root {
            Command::new("apt-get")
        } else {
            let mut c = Command::new("sudo");
            c.arg("apt-get");
            c
        };
        c.args(args).env("DEBIAN_FRONTEND", "noninteractive");
        c
    };
    run(apt(&["update", "-q"]).stdout(std::process::Stdio::null())).map_err(|e| {
        format!(
            "{e}; run as root or with sudo so apt-get can install {}",
            missing.join(" ")
        )
    })?;
    let mut install = apt(&["install", "-y", "-q", "--no-install-recommends"]);
    install.args(&missing).stdout(std::process::Stdio::null());
    run(&mut install)
}

fn unsafe_geteuid() -> u32 {
    // No libc dependency: read the effective uid from /proc.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).and_then(|u| u.parse().ok()))
        })
        .unwrap_or(1)
}

pub fn bin_dir() -> PathBuf {
    root().join("target/release")
}

fn build() -> Result<(), String> {
    run(Command::new(env!("CARGO")).current_dir(root()).args([
        "build",
        "--release",
        "--quiet",
        "-p",
        "profcc",
        "-p",
        "profcc-rt",
        "-p",
        "profcc-allocator-probe",
    ]))?;
    runtime_archive()?;
    allocator_probe()?;
    headers()?;
    let link = bin_dir().join("profcc++");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink("profcc", &link)
        .map_err(|e| format!("cannot create {}: {e}", link.display()))
}

/// profcc's headers (include/: `profcc.h`), copied to `include/` beside the driver, which
/// puts that directory on every compile line it instruments.
fn headers() -> Result<(), String> {
    let dir = bin_dir().join("include");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for name in ["profcc.h"] {
        let (from, to) = (root().join("include").join(name), dir.join(name));
        let tmp = to.with_extension("tmp");
        std::fs::copy(&from, &tmp)
            .and_then(|_| std::fs::rename(&tmp, &to))
            .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))?;
    }
    Ok(())
}

/// The allocator probe's executable and preloadable object (`profcc detect-allocator` looks
/// for them next to itself): copied from the build script's OUT_DIR, which cargo names in its
/// JSON messages.
fn allocator_probe() -> Result<(), String> {
    let messages = output(Command::new(env!("CARGO")).current_dir(root()).args([
        "build",
        "--release",
        "--quiet",
        "-p",
        "profcc-allocator-probe",
        "--message-format=json",
    ]))?;
    let out_dir = messages
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|m| {
            m["reason"] == "build-script-executed"
                && m["package_id"]
                    .as_str()
                    .is_some_and(|p| p.contains("allocator-probe"))
        })
        .and_then(|m| m["out_dir"].as_str().map(PathBuf::from))
        .ok_or("cargo named no OUT_DIR for profcc-allocator-probe")?;
    for name in ["profcc-allocator-probe", "libprofcc_allocator_probe.so"] {
        let (from, to) = (out_dir.join(name), bin_dir().join(name));
        let tmp = to.with_extension("tmp");
        std::fs::copy(&from, &tmp)
            .and_then(|_| std::fs::rename(&tmp, &to))
            .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))?;
    }
    Ok(())
}

/// cargo's staticlib of the runtime (the runtime, Rust std, compiler-builtins, serde...).
pub const RAW_RUNTIME: &str = "libprofcc_rt_raw.a";
/// The archive the driver links: the same code partially linked into one object whose only
/// global symbols are the runtime's own.
pub const RUNTIME: &str = "libprofcc_rt.a";

/// The names the runtime archive leaves undefined, one a line (written beside it).
pub const RUNTIME_IMPORTS: &str = "libprofcc_rt.imports";

/// Whether the runtime archive keeps `name` global: the runtime's entry points (`__profcc_*`,
/// `profcc_*`) and the interposers (`interposers`, the `#pragma weak` names of
/// rt/csrc/interpose.c). Everything else (std, compiler-builtins' libm: `cbrt`, `floor`...)
/// would otherwise win over the program's libraries or satisfy its link where clang-22's fails.
pub fn runtime_exports(name: &str, interposers: &[String]) -> bool {
    name.starts_with("__profcc_")
        || name.starts_with("profcc_")
        || name.starts_with("__wrap_")
        || interposers.iter().any(|i| i == name)
}

/// The interposers: every `#pragma weak NAME` line of rt/csrc/interpose.c.
pub fn interposers(root: &Path) -> Result<Vec<String>, String> {
    let p = root.join("rt/csrc/interpose.c");
    let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    Ok(text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("#pragma weak "))
        .map(|n| n.trim().to_string())
        .collect())
}

fn output(cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Turn cargo's staticlib into the archive the driver links (target/release/libprofcc_rt.a):
/// 1. drop the LLVM bitcode std's objects embed (`.llvmbc`: the system ld's LLVM plugin may be
///    older than rustc's LLVM and fail on it);
/// 2. `ld -r --gc-sections` of every member into one object, rooted at the exported symbols:
///    std pieces the runtime never calls (`env::home_dir` -> getpwuid_r, `net` -> getaddrinfo,
///    whose glibc link warnings a `-static` link would print) are not linked at all;
/// 3. every other global symbol becomes local (`--keep-global-symbols`), and undefined symbols
///    no kept section uses are dropped.
///
/// The result is written beside and renamed into place; the driver refuses an archive older
/// than cargo's staticlib (a `cargo build` without this step).
fn runtime_archive() -> Result<(), String> {
    let dir = bin_dir();
    let raw = dir.join(RAW_RUNTIME);
    let work = dir.join("rt-archive.tmp");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let nobc = work.join("nobc.a");
    run(Command::new("llvm-objcopy-22")
        .args(["--remove-section=.llvmbc", "--remove-section=.llvmcmd"])
        .arg(&raw)
        .arg(&nobc))?;
    let interposers = interposers(&root())?;
    let names = output(
        Command::new("llvm-nm-22")
            .args(["-g", "--defined-only", "-j"])
            .arg(&nobc),
    )?;
    let keep: std::collections::BTreeSet<&str> = names
        .lines()
        .map(str::trim)
        .filter(|n| !n.ends_with(':') && runtime_exports(n, &interposers))
        .collect();
    if !keep.contains("__profcc_force_link") {
        return Err(format!("{}: no __profcc_force_link", raw.display()));
    }
    let obj = work.join("profcc_rt.o");
    let script = work.join("sections.ld");
    std::fs::write(&script, RUNTIME_SECTIONS).map_err(|e| format!("{}: {e}", script.display()))?;
    let mut ld = Command::new("ld.bfd");
    ld.args(["-r", "--gc-sections", "-T"])
        .arg(&script)
        .arg("-o")
        .arg(&obj);
    for k in &keep {
        ld.arg(format!("--undefined={k}"));
    }
    ld.arg("--whole-archive")
        .arg(&nobc)
        .arg("--no-whole-archive");
    run(&mut ld)?;
    // COMDAT members (`.data.DW.ref.rust_eh_personality`) keep their names through `ld -r`.
    let headers = output(Command::new("llvm-readelf-22").arg("-SW").arg(&obj))?;
    let mut rename = Command::new("llvm-objcopy-22");
    for name in headers
        .lines()
        .filter_map(|l| l.split_once(']').map(|(_, r)| r.split_whitespace().next()))
        .flatten()
    {
        if name.starts_with(".data") || name.starts_with(".bss") {
            let to = if name.starts_with(".bss") {
                ".profcc.bss"
            } else {
                ".profcc.data"
            };
            rename.arg(format!("--rename-section={name}={to}"));
        }
    }
    run(rename.arg(&obj))?;
    plt_thunks(&work, &obj)?;
    // `ld -r` keeps the undefined symbols of the sections it collected (getaddrinfo,
    // getpwuid_r...) in the symbol table; one that no relocation uses would still pull its
    // libc.a member (and glibc's warning) into a -static link: strip those.
    let undefined = output(Command::new("llvm-nm-22").args(["-u", "-j"]).arg(&obj))?;
    let write = |name: &str, lines: Vec<&str>| -> Result<PathBuf, String> {
        let p = work.join(name);
        let text: String = lines.iter().map(|k| format!("{k}\n")).collect();
        std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
        Ok(p)
    };
    let keep_list = write("keep.txt", keep.iter().copied().collect())?;
    let undef_list = write("undefined.txt", undefined.lines().map(str::trim).collect())?;
    run(Command::new("llvm-objcopy-22")
        .arg(format!("--strip-unneeded-symbols={}", undef_list.display()))
        .arg(format!("--keep-global-symbols={}", keep_list.display()))
        .arg(&obj))?;
    let ar = work.join(RUNTIME);
    run(Command::new("llvm-ar-22").arg("rcsD").arg(&ar).arg(&obj))?;
    // The functions the runtime imports (through the GOT): a program's PLT call of one of them
    // takes no `.got.plt` slot in the executable (ld's `.plt.got` serves both), so the driver
    // counts them among the filler slots (driver/src/layout.rs).
    let imports = output(Command::new("llvm-nm-22").args(["-u", "-j"]).arg(&obj))?;
    let list = dir.join(RUNTIME_IMPORTS);
    std::fs::write(&list, imports).map_err(|e| format!("{}: {e}", list.display()))?;
    let out = dir.join(RUNTIME);
    std::fs::rename(&ar, &out).map_err(|e| format!("{}: {e}", out.display()))?;
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}

/// The `ld -r` script of the runtime archive: the runtime's writable data (initialised, relro
/// and zero-filled) leaves the program's output sections for its own, which the driver's link
/// script (`driver/src/exec.rs`, `LAYOUT_SCRIPT`) places after the program's `.bss`. So the
/// program's `.data` and `.bss` keep the addresses (mod 4096) of its clang-22 build.
///
/// The runtime's thread-locals join the executable's TLS block, after the program's (its
/// `.tdata` after the program's `.tdata`, its `.tbss` last): each is padded to a multiple of
/// 4096 bytes, so the program's thread-locals keep their offsets from the thread pointer mod
/// 4096, and so do the static TLS size and with it each thread's stack top.
const RUNTIME_SECTIONS: &str = "SECTIONS {
  .profcc.data : { *(.data .data.* .data.rel .data.rel.* .data.rel.ro .data.rel.ro.*) }
  .profcc.bss : { *(.bss .bss.* COMMON) }
  .tdata : { pcc_tdata_start = .; *(.tdata .tdata.*) . = . + (4096 - (. - pcc_tdata_start) % 4096) % 4096; }
  .tbss : { pcc_tbss_start = .; *(.tbss .tbss.*) . = . + (4096 - (. - pcc_tbss_start) % 4096) % 4096; }
}
";

/// The runtime adds no `.got.plt` slot to the program (that would move the program's `.data`,
/// which starts that many bytes after a page boundary): C is built with `-fno-plt`
/// (rt/build.rs); Rust's calls of undefined functions through the PLT (`_Unwind_Resume`,
/// `memcpy`...) are renamed to local thunks that jump through the GOT (relro), `jmp
/// *name@GOTPCREL(%rip)`. Weak undefined names keep their calls, and so does `__tls_get_addr`
/// (ld relaxes std's general-dynamic accesses only when they call it by name), whose one slot
/// ld 2.40 keeps although no call is left: the driver's filler slots count it
/// (`driver/src/exec.rs`, `RUNTIME_PLT_SLOTS`).
const TLS_GET_ADDR: &str = "__tls_get_addr";

fn plt_thunks(work: &Path, obj: &Path) -> Result<(), String> {
    let relocs = output(Command::new("llvm-readelf-22").args(["-rW"]).arg(obj))?;
    let strong_undefined = output(Command::new("llvm-nm-22").args(["-u"]).arg(obj))?;
    let strong: std::collections::BTreeSet<&str> = strong_undefined
        .lines()
        .filter_map(|l| l.trim().strip_prefix("U "))
        .collect();
    let names: std::collections::BTreeSet<&str> = relocs
        .lines()
        .filter(|l| l.contains("R_X86_64_PLT32"))
        .filter_map(|l| l.split_whitespace().nth(4))
        .filter(|n| strong.contains(n) && *n != TLS_GET_ADDR)
        .collect();
    if names.is_empty() {
        return Ok(());
    }
    let mut asm = String::new();
    let mut redefine = String::new();
    for (i, n) in names.iter().enumerate() {
        asm.push_str(&format!(
            "\t.section .text.pcc_thunk_{i},\"ax\",@progbits\n\t.globl pcc_thunk_{i}\n\t.type pcc_thunk_{i},@function\npcc_thunk_{i}:\n\tjmp *{n}@GOTPCREL(%rip)\n"
        ));
        redefine.push_str(&format!("{n} pcc_thunk_{i}\n"));
    }
    asm.push_str("\t.section .note.GNU-stack,\"\",@progbits\n");
    let s = work.join("thunks.s");
    std::fs::write(&s, asm).map_err(|e| format!("{}: {e}", s.display()))?;
    let thunks = work.join("thunks.o");
    run(Command::new("clang-22")
        .arg("-c")
        .arg(&s)
        .arg("-o")
        .arg(&thunks))?;
    let r = work.join("redefine.txt");
    std::fs::write(&r, redefine).map_err(|e| format!("{}: {e}", r.display()))?;
    run(Command::new("llvm-objcopy-22")
        .arg(format!("--redefine-syms={}", r.display()))
        .arg(obj))?;
    let merged = work.join("merged.o");
    run(Command::new("ld.bfd")
        .arg("-r")
        .arg(obj)
        .arg(&thunks)
        .arg("-o")
        .arg(&merged))?;
    std::fs::rename(&merged, obj).map_err(|e| format!("{}: {e}", obj.display()))
}

fn demo() -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("profcc-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let src = root().join("examples/demo.c");
    let exe = dir.join("demo");
    let profcc = bin_dir().join("profcc");
    eprintln!(
        "xtask: profcc -O2 -pthread {} -o {}",
        src.display(),
        exe.display()
    );
    run(Command::new(&profcc)
        .args(["-O2", "-pthread"])
        .arg(&src)
        .arg("-o")
        .arg(&exe))?;
    eprintln!("xtask: running {}", exe.display());
    let out = Command::new(&exe)
        .current_dir(&dir)
        .env("PROFCC_OPTIONS", "out=demo.profile.json")
        .status()
        .map_err(|e| e.to_string())?;
    if !out.success() {
        return Err(format!("demo exited with {out}"));
    }
    println!();
    run(Command::new(&profcc)
        .arg("report")
        .arg(dir.join("demo.profile.json")))?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

fn test(rest: &[String]) -> Result<(), String> {
    let mut c = Command::new(env!("CARGO"));
    c.current_dir(root()).args([
        "test",
        "--release",
        "--workspace",
        "--exclude",
        "profcc-realsrc",
        "--no-fail-fast",
    ]);
    c.args(rest);
    run(&mut c)
}

/// The faithful test set; `rest` may name cases (substrings, comma-separated). Prints the table
/// the test writes (also when some case differs: the table says which).
fn faithful(rest: &[String]) -> Result<(), String> {
    let table = root().join("target/faithful.md");
    let _ = std::fs::remove_file(&table);
    let mut c = Command::new(env!("CARGO"));
    c.current_dir(root()).args([
        "test",
        "--release",
        "-p",
        "profcc-tests",
        "--test",
        "faithful",
    ]);
    if !rest.is_empty() {
        c.env("PROFCC_FAITHFUL", rest.join(","));
    }
    let result = run(&mut c);
    match std::fs::read_to_string(&table) {
        Ok(text) => println!("{text}"),
        Err(e) => eprintln!("xtask faithful: no table ({}: {e})", table.display()),
    }
    result
}
