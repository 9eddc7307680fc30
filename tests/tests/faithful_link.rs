//! The runtime archive exports only its own symbols, and `-static` links work: each case is built
//! with clang-22 and with profcc and compared as a user would (stdout, exit code, the link's
//! stderr, configure/CMake cache values). Fixtures: tests/fixtures/faithful/link/.

use profcc_tests::*;
use std::path::Path;
use std::process::{Command, Output};

const CLANG: &str = "clang-22";

fn link_fixture(name: &str) -> std::path::PathBuf {
    fixture(&format!("faithful/link/{name}"))
}

/// Run a compiler (bounded), in `dir`.
fn cc(dir: &Path, compiler: &Path, args: &[&str]) -> Output {
    output_within(Command::new(compiler).current_dir(dir).args(args))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A run of a profcc build: the profile goes to the scratch dir, no exit summary on stderr.
fn run_quiet(s: &Scratch, exe: &str) -> Output {
    output_within(
        Command::new(s.path(exe))
            .current_dir(s.dir.path())
            .env("PROFCC_OPTIONS", format!("out={exe}.json:summary=0")),
    )
}

/// The global symbols the runtime archive may define: its entry points and the interposers
/// (the `#pragma weak` names of rt/csrc/interpose.c).
fn allowed(name: &str, interposers: &[String]) -> bool {
    name.starts_with("__profcc_")
        || name.starts_with("profcc_")
        || interposers.iter().any(|i| i == name)
        || name
            .strip_prefix("__wrap_")
            .is_some_and(|w| numa_wrapped().iter().any(|n| n == w))
}

/// The driver's `NUMA_WRAPPED` and `OMP_WRAPPED` (driver/src/exec.rs) and
/// `PREFIXED_WRAPPED` (driver/src/prefixed.rs): the names it wraps with `--wrap`.
fn numa_wrapped() -> Vec<String> {
    [
        ("exec.rs", "NUMA_WRAPPED"),
        ("exec.rs", "OMP_WRAPPED"),
        ("prefixed.rs", "PREFIXED_WRAPPED"),
    ]
    .iter()
    .flat_map(|(file, name)| {
        let text = std::fs::read_to_string(root().join("driver/src").join(file)).unwrap();
        let list = text
            .split(&format!("pub const {name}: &[&str] = &["))
            .nth(1)
            .and_then(|t| t.split("];").next())
            .unwrap_or_else(|| panic!("{name} in driver/src/{file}"));
        list.split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect::<Vec<_>>()
    })
    .collect()
}

/// Every name the driver wraps has its wrapper in the runtime, and no other wrapper exists.
#[test]
fn every_wrapped_name_has_its_wrapper() {
    let archive = bin("libprofcc_rt.a");
    let out = sh(Command::new("llvm-nm-22")
        .args(["-g", "--defined-only", "-j"])
        .arg(&archive));
    let mut wrappers: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("__wrap_").map(str::to_string))
        .collect();
    wrappers.sort();
    let mut names = numa_wrapped();
    names.sort();
    assert!(names.iter().any(|n| n == "mbind"));
    assert_eq!(wrappers, names);
}

#[test]
fn archive_exports_only_runtime_symbols() {
    let text = std::fs::read_to_string(root().join("rt/csrc/interpose.c")).unwrap();
    let interposers: Vec<String> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("#pragma weak "))
        .map(|n| n.trim().to_string())
        .collect();
    assert!(interposers.iter().any(|i| i == "malloc"));
    let archive = bin("libprofcc_rt.a");
    let nm = |flags: &[&str]| {
        let out = sh(Command::new("llvm-nm-22").args(flags).arg(&archive));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty() && !l.ends_with(':'))
            .collect::<Vec<_>>()
    };
    let defined = nm(&["-g", "--defined-only", "-j"]);
    assert!(defined.iter().any(|n| n == "__profcc_force_link"));
    assert!(defined.iter().any(|n| n == "malloc"));
    let extra: Vec<&String> = defined
        .iter()
        .filter(|n| !allowed(n, &interposers))
        .collect();
    assert!(
        extra.is_empty(),
        "{} defines {} global symbols that are not the runtime's: {:?}",
        archive.display(),
        extra.len(),
        &extra[..extra.len().min(40)]
    );
    // No std piece that glibc warns about in a static link.
    let undefined = nm(&["-u", "-j"]);
    for bad in [
        "getpwuid_r",
        "getpwnam_r",
        "getaddrinfo",
        "dlopen",
        "gethostbyname",
    ] {
        assert!(
            !undefined.iter().any(|n| n == bad),
            "{} still references {bad}",
            archive.display()
        );
    }
}

#[test]
fn libm_is_glibcs_with_and_without_lm() {
    let s = Scratch::new();
    let src = link_fixture("libm.c");
    let src = src.to_str().unwrap();
    let profcc = profcc();
    for lm in [true, false] {
        let tag = if lm { "with -lm" } else { "without -lm" };
        let mut args = vec!["-O2", src, "-o"];
        let (n, p) = if lm { ("n_lm", "p_lm") } else { ("n", "p") };
        let mut na = args.clone();
        na.push(n);
        args.push(p);
        if lm {
            na.push("-lm");
            args.push("-lm");
        }
        let native = cc(s.dir.path(), Path::new(CLANG), &na);
        let prof = cc(s.dir.path(), &profcc, &args);
        assert_eq!(
            native.status.success(),
            prof.status.success(),
            "{tag}: clang-22 link {} but profcc link {}:\n--- clang-22\n{}\n--- profcc\n{}",
            if native.status.success() {
                "succeeds"
            } else {
                "fails"
            },
            if prof.status.success() {
                "succeeds"
            } else {
                "fails"
            },
            stderr(&native),
            stderr(&prof)
        );
        if native.status.success() {
            let a = s.run_plain(n, &[]);
            let b = run_quiet(&s, p);
            assert_same_run(&format!("libm.c {tag}"), &a, &b);
        }
    }
}

/// Cache values of a configure run (`ac_cv_*` lines of config.cache).
fn ac_cache(dir: &Path, compiler: &Path) -> Vec<String> {
    let out = output_within(
        Command::new("./configure")
            .current_dir(dir)
            .arg(format!("CC={}", compiler.display()))
            .arg("--cache-file=config.cache"),
    );
    assert!(
        out.status.success(),
        "configure with {} failed:\n{}",
        compiler.display(),
        tail(&String::from_utf8_lossy(&out.stdout), 30)
    );
    let cache = std::fs::read_to_string(dir.join("config.cache")).unwrap();
    cache
        .lines()
        .filter(|l| l.starts_with("ac_cv_search_") || l.starts_with("ac_cv_func_"))
        .map(String::from)
        .collect()
}

#[test]
fn autoconf_search_libs_floor() {
    let s = Scratch::new();
    let mut caches = Vec::new();
    for (tag, compiler) in [
        ("clang", Path::new(CLANG).to_path_buf()),
        ("profcc", profcc()),
    ] {
        let dir = s.path(tag);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(link_fixture("configure.ac"), dir.join("configure.ac")).unwrap();
        let ac = output_within(Command::new("autoconf").current_dir(&dir));
        assert!(ac.status.success(), "autoconf: {}", stderr(&ac));
        caches.push(ac_cache(&dir, &compiler));
    }
    assert!(
        caches[0]
            .iter()
            .any(|l| l.starts_with("ac_cv_search_floor=")),
        "no ac_cv_search_floor in {:?}",
        caches[0]
    );
    assert_eq!(
        caches[0], caches[1],
        "configure cache differs (clang-22 left, profcc right)"
    );
}

/// `HAVE_*` entries of a CMakeCache.txt.
fn cmake_have(build: &Path) -> Vec<String> {
    let cache = std::fs::read_to_string(build.join("CMakeCache.txt")).unwrap();
    cache
        .lines()
        .filter(|l| l.starts_with("HAVE_"))
        .map(String::from)
        .collect()
}

#[test]
fn cmake_check_function_exists_cbrt() {
    let s = Scratch::new();
    let src = link_fixture("");
    let mut caches = Vec::new();
    for (tag, compiler) in [
        ("clang", Path::new(CLANG).to_path_buf()),
        ("profcc", profcc()),
    ] {
        let build = s.path(&format!("build-{tag}"));
        let out = output_within(
            Command::new("cmake")
                .arg("-S")
                .arg(&src)
                .arg("-B")
                .arg(&build)
                .arg(format!("-DCMAKE_C_COMPILER={}", compiler.display())),
        );
        assert!(
            out.status.success(),
            "cmake with {tag} failed:\n{}",
            tail(&String::from_utf8_lossy(&out.stderr), 30)
        );
        caches.push(cmake_have(&build));
    }
    assert!(
        caches[0].iter().any(|l| l.starts_with("HAVE_CBRT:")),
        "no HAVE_CBRT in {:?}",
        caches[0]
    );
    assert_eq!(
        caches[0], caches[1],
        "CMake cache differs (clang-22 left, profcc right)"
    );
}

#[test]
fn static_link_with_threads() {
    let s = Scratch::new();
    let src = link_fixture("threads.c");
    let src = src.to_str().unwrap();
    let native = cc(
        s.dir.path(),
        Path::new(CLANG),
        &["-O2", "-static", "-pthread", src, "-o", "n"],
    );
    let prof = cc(
        s.dir.path(),
        &profcc(),
        &["-O2", "-static", "-pthread", src, "-o", "p"],
    );
    assert!(native.status.success(), "clang-22: {}", stderr(&native));
    assert!(prof.status.success(), "profcc: {}", stderr(&prof));
    assert_eq!(
        stderr(&native),
        stderr(&prof),
        "-static link: stderr differs (clang-22 left, profcc right)"
    );
    let a = s.run_plain("n", &[]);
    let b = run_quiet(&s, "p");
    assert_same_run("-static threads.c", &a, &b);
    assert!(
        String::from_utf8_lossy(&a.stdout).starts_with("total "),
        "{}",
        String::from_utf8_lossy(&a.stdout)
    );
}

/// libtool's "static flag works" probe: `$CC -static` of a trivial program must link with no
/// output at all (any warning turns `link_static_flag` off).
#[test]
fn libtool_static_flag_probe() {
    let s = Scratch::new();
    s.write("conftest.c", "int main(void) { return 0; }\n");
    for (tag, compiler) in [
        ("clang", Path::new(CLANG).to_path_buf()),
        ("profcc", profcc()),
    ] {
        let out = cc(
            s.dir.path(),
            &compiler,
            &["-static", "conftest.c", "-o", &format!("conftest-{tag}")],
        );
        assert!(out.status.success(), "{tag}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{tag} -static printed on stderr");
        assert!(out.stdout.is_empty(), "{tag} -static printed on stdout");
    }
}
