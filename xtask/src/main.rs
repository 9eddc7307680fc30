//! `cargo xtask <command>`: the project's scripts, in Rust.
//!
//! - `setup`: install the LLVM 22 toolchain and the packages the tests need (apt-get).
//! - `build`: build the driver and the runtime (release) and the `profcc++` link.
//! - `demo`: setup + build, profile the bundled example, print the report.
//! - `test`: setup + build, then every test of the workspace.
//! - `bench`: setup + build, then the benchmarks (ratios measured side by side).
//! - `faithful [case,...]`: setup + build, then the faithful test set (tests/tests/faithful.rs:
//!   each case built with clang-22 and with profcc, runs compared); prints the table of cases
//!   it writes to target/faithful.md.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

mod bench;

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
    // The faithful test set's expat-like project (tests/tests/faithful.rs): autoreconf + libtool.
    "automake",
    "libtool",
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cmd = args.first().map(String::as_str).unwrap_or("help");
    let rest = &args[args.len().min(1)..];
    let result = match cmd {
        "setup" => setup(true),
        "build" => setup(false).and_then(|_| build()),
        "demo" => setup(false).and_then(|_| build()).and_then(|_| demo()),
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
    ]))?;
    let link = bin_dir().join("profcc++");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink("profcc", &link)
        .map_err(|e| format!("cannot create {}: {e}", link.display()))
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
