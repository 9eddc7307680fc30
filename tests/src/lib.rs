//! Helpers for the end-to-end tests in tests/tests/*.rs: build C/C++ programs with profcc
//! (and with plain clang-22 for comparison), run them, read their profiles.

pub mod browser;
pub mod faithful;

use profcc_schema::Profile;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The release binaries `cargo xtask build` made.
pub fn bin(name: &str) -> PathBuf {
    let p = root().join("target/release").join(name);
    assert!(
        p.exists(),
        "{} missing: run `cargo xtask build` (or `cargo xtask test`)",
        p.display()
    );
    p
}

pub fn profcc() -> PathBuf {
    bin("profcc")
}

pub fn profcxx() -> PathBuf {
    bin("profcc++")
}

pub fn fixture(rel: &str) -> PathBuf {
    root().join("tests/fixtures").join(rel)
}

/// A scratch directory with helpers to build and run programs in it.
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Default for Scratch {
    fn default() -> Self {
        Self::new()
    }
}

impl Scratch {
    pub fn new() -> Self {
        Scratch {
            dir: tempfile::Builder::new()
                .prefix("profcc-test")
                .tempdir()
                .unwrap(),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// Run a compiler with args in the scratch dir; panic with its stderr on failure.
    ///
    /// With `PROFCC_BUILD_CACHE=<dir>` (set by `cargo xtask test --stress`, which builds the
    /// toolchain once and runs the tests many times) an output (`-o FILE`) built before from
    /// the same compiler, arguments and input files is copied from the cache instead.
    pub fn compile(&self, compiler: &Path, args: &[&str]) -> Output {
        self.compile_env(compiler, args, &[])
    }

    /// [`Scratch::compile`] with environment variables set for the compiler (e.g.
    /// `PROFCC_INSTRUMENT`); they are part of the build cache's key.
    pub fn compile_env(&self, compiler: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
        let key: Vec<String> = env.iter().map(|(k, v)| format!("env:{k}={v}")).collect();
        let keyed: Vec<&str> = args
            .iter()
            .copied()
            .chain(key.iter().map(|k| k.as_str()))
            .collect();
        let cached = build_cache_entry(self.dir.path(), compiler, &keyed);
        if let Some((entry, out)) = &cached {
            if copy_executable(entry, &self.path(out)) {
                return Output {
                    status: Default::default(),
                    stdout: Vec::new(),
                    stderr: Vec::new(),
                };
            }
        }
        let out = Command::new(compiler)
            .current_dir(self.dir.path())
            .args(args)
            .envs(env.iter().copied())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{} {:?} failed:\n{}",
            compiler.display(),
            args,
            String::from_utf8_lossy(&out.stderr)
        );
        if let Some((entry, o)) = cached {
            // Written beside and renamed: a concurrent test never copies half a file.
            let tmp = entry.with_extension(format!("tmp{}", std::process::id()));
            if std::fs::copy(self.path(&o), &tmp).is_ok() {
                let _ = std::fs::rename(&tmp, &entry);
            }
        }
        out
    }

    /// Run a built program with `PROFCC_OPTIONS=out=<name>.json[:extra]`; return its output
    /// and its profile.
    pub fn run_profiled(&self, exe: &str, args: &[&str], extra_options: &str) -> (Output, Profile) {
        self.run_profiled_env(exe, args, extra_options, &[])
    }

    /// [`Scratch::run_profiled`] with more environment variables.
    pub fn run_profiled_env(
        &self,
        exe: &str,
        args: &[&str],
        extra_options: &str,
        env: &[(&str, &std::ffi::OsStr)],
    ) -> (Output, Profile) {
        let profile = self.path(&format!("{exe}.profile.json"));
        let _ = std::fs::remove_file(&profile);
        let mut opts = format!("out={}", profile.display());
        if !extra_options.is_empty() {
            opts.push(':');
            opts.push_str(extra_options);
        }
        let out = output_within(
            Command::new(self.path(exe))
                .current_dir(self.dir.path())
                .args(args)
                .env("PROFCC_OPTIONS", opts)
                .envs(env.iter().copied()),
        );
        let p = profcc_schema::read(&profile).unwrap_or_else(|e| {
            panic!(
                "{exe}: no profile ({e}); stderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (out, p)
    }

    pub fn run_plain(&self, exe: &str, args: &[&str]) -> Output {
        output_within(
            Command::new(self.path(exe))
                .current_dir(self.dir.path())
                .args(args),
        )
    }
}

/// The cache file for a compile ([`Scratch::compile`]) and its output's name, when
/// Copies a cached executable by a `cp` child, never through a descriptor of this process:
/// another test thread forking while this process held the new file open for writing would
/// pass the descriptor to its child, and exec'ing the copy before that child's own exec
/// fails with ETXTBSY ("Text file busy": run 4 of a 20-run stress failed so).
fn copy_executable(from: &Path, to: &Path) -> bool {
    Command::new("cp")
        .arg("--")
        .arg(from)
        .arg(to)
        .status()
        .is_ok_and(|s| s.success())
}

/// `PROFCC_BUILD_CACHE` names a directory and the arguments have `-o FILE`: keyed by the
/// compiler, the arguments and the contents of every argument that is a file (sources, headers
/// named on the line). Headers included by name are not in the key: the cache is for one
/// `cargo xtask test --stress` run, whose sources do not change while it runs.
fn build_cache_entry(dir: &Path, compiler: &Path, args: &[&str]) -> Option<(PathBuf, String)> {
    use std::hash::{Hash, Hasher};
    let cache = PathBuf::from(std::env::var_os("PROFCC_BUILD_CACHE")?);
    let out = args
        .iter()
        .position(|a| *a == "-o")
        .and_then(|i| args.get(i + 1))?;
    // SipHash with fixed keys: the same in every test process.
    #[allow(deprecated)]
    let mut h = std::hash::SipHasher::new();
    compiler.hash(&mut h);
    for a in args {
        a.hash(&mut h);
        let p = dir.join(a);
        if p.is_file() && *a != *out {
            std::fs::read(&p).ok()?.hash(&mut h);
        }
    }
    std::fs::create_dir_all(&cache).ok()?;
    Some((cache.join(format!("{:016x}", h.finish())), out.to_string()))
}

/// `cmd.output()`, but a program still running after `PROFCC_TEST_TIMEOUT` seconds (default
/// 300) is killed and the test fails naming it: a deadlocked program fails the test instead
/// of hanging the whole run.
pub fn output_within(cmd: &mut Command) -> Output {
    let secs: u64 = std::env::var("PROFCC_TEST_TIMEOUT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let pid = child.id();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if done_rx
            .recv_timeout(std::time::Duration::from_secs(secs))
            .is_err()
        {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            return true;
        }
        false
    });
    let out = child.wait_with_output().unwrap();
    let _ = done_tx.send(());
    let timed_out = watchdog.join().unwrap();
    assert!(
        !timed_out,
        "{cmd:?} did not finish within {secs} s (killed; deadlock?); stderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Sum of counts of the sites at `file_suffix:line` with the given kind.
pub fn count_at(p: &Profile, file_suffix: &str, line: u32, kind: profcc_schema::AccessKind) -> u64 {
    p.sites
        .iter()
        .filter(|s| s.file.ends_with(file_suffix) && s.line == line && s.kind == kind)
        .map(|s| s.count)
        .sum()
}

/// The line number of the first line containing `marker` in `text` (1-based).
pub fn line_of(text: &str, marker: &str) -> u32 {
    text.lines()
        .position(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("marker {marker} not found")) as u32
        + 1
}

// ---------------------------------------------------------------------------------------------
// Real builds (tests/tests/real_builds.rs): sources of real C projects, shell-style commands,
// parallel compiles, the symbolised report.

/// Directory of a crate that `realsrc/` depends on (its sources are real C projects), found
/// with `cargo metadata` as `xtask/src/bench.rs` does. Cached for the test process.
pub fn crate_dir(name: &str) -> PathBuf {
    static META: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    let meta = META.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let out = Command::new(cargo)
            .current_dir(root())
            .args(["metadata", "--format-version", "1"])
            .output()
            .expect("cannot run cargo metadata");
        assert!(
            out.status.success(),
            "cargo metadata failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("cargo metadata output is not JSON")
    });
    for p in meta["packages"].as_array().into_iter().flatten() {
        if p["name"] == name {
            let manifest = PathBuf::from(p["manifest_path"].as_str().unwrap_or_default());
            return manifest.parent().unwrap().to_path_buf();
        }
    }
    panic!("crate {name} not found in cargo metadata (is it a dependency of realsrc/?)")
}

/// Run a command to completion; panic with its command line, stdout and stderr on failure.
pub fn sh(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        tail(&String::from_utf8_lossy(&out.stdout), 60),
        tail(&String::from_utf8_lossy(&out.stderr), 60)
    );
    out
}

/// The last `n` lines of `text`.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Copy a directory tree (`cp -r`, keeps modes so `./autogen.sh` stays executable).
pub fn copy_tree(from: &Path, to: &Path) {
    sh(Command::new("cp").arg("-r").arg(from).arg(to));
}

/// Compile each source to `<out_dir>/<stem>.o` with `compiler flags -c`, `jobs` at a time.
/// Returns the objects in the order of `sources`.
pub fn compile_many(
    compiler: &Path,
    flags: &[&str],
    sources: &[PathBuf],
    out_dir: &Path,
    jobs: usize,
) -> Vec<PathBuf> {
    std::fs::create_dir_all(out_dir).unwrap();
    let objects: Vec<PathBuf> = sources
        .iter()
        .map(|s| out_dir.join(format!("{}.o", s.file_stem().unwrap().to_string_lossy())))
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if i >= sources.len() {
                    break;
                }
                sh(Command::new(compiler)
                    .args(flags)
                    .arg("-c")
                    .arg(&sources[i])
                    .arg("-o")
                    .arg(&objects[i]));
            });
        }
    });
    objects
}

/// `profcc report --format json ARGS... PROFILE`, read back into the report model (the profile
/// with its stacks symbolised, ranked, its findings named).
pub fn report(profile: &Path, args: &[&str]) -> profcc_report::Report {
    let out = sh(Command::new(profcc())
        .env("XDG_CACHE_HOME", probe_cache_home())
        .args(["report", "--format", "json"])
        .args(args)
        .arg(profile));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "profcc report --format json printed no report ({e}):\n{}",
            tail(&String::from_utf8_lossy(&out.stdout), 40)
        )
    })
}

/// The `XDG_CACHE_HOME` of the reports a test process runs (the live probe keeps its
/// descriptions there, not in the user's cache): one directory per test process.
pub fn probe_cache_home() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        tempfile::Builder::new()
            .prefix("profcc-test-cache")
            .tempdir()
            .expect("a temporary directory")
            .keep()
    })
}

/// Function names of the first `depth` symbolised frames of a report stack (`?` if unknown).
pub fn frame_functions(stack: &[profcc_report::model::Frame], depth: usize) -> Vec<String> {
    stack
        .iter()
        .take(depth)
        .map(|f| f.function.as_deref().unwrap_or("?").to_string())
        .collect()
}

/// Total access count of the sites in files ending in `file_suffix` compiled into `function`.
pub fn count_in(p: &Profile, file_suffix: &str, function: &str) -> u64 {
    p.sites
        .iter()
        .filter(|s| s.file.ends_with(file_suffix) && s.function == function)
        .map(|s| s.count)
        .sum()
}

/// Total access count of the sites in files ending in `file_suffix`.
pub fn count_in_file(p: &Profile, file_suffix: &str) -> u64 {
    p.sites
        .iter()
        .filter(|s| s.file.ends_with(file_suffix))
        .map(|s| s.count)
        .sum()
}

/// Assert that two runs of the same program (plain clang-22 build, profcc build) printed the
/// same stdout and exited the same way.
pub fn assert_same_run(what: &str, native: &Output, profiled: &Output) {
    assert_eq!(
        String::from_utf8_lossy(&native.stdout),
        String::from_utf8_lossy(&profiled.stdout),
        "{what}: stdout differs between the clang-22 and the profcc build; profcc stderr:\n{}",
        tail(&String::from_utf8_lossy(&profiled.stderr), 30)
    );
    assert_eq!(
        native.status.code(),
        profiled.status.code(),
        "{what}: exit status differs"
    );
}

/// A static jemalloc built with `--with-jemalloc-prefix=je_` (as redis links it) in `s`, from
/// the tikv-jemalloc-sys sources (realsrc/); returns the path of its `libjemalloc.a`.
pub fn build_prefixed_static_jemalloc(s: &Scratch) -> PathBuf {
    let je = s.path("jemalloc");
    copy_tree(&crate_dir("tikv-jemalloc-sys").join("jemalloc"), &je);
    // Outside git, configure takes the version from this file (the crate's 5.3.0 sources).
    std::fs::write(
        je.join("VERSION"),
        "5.3.0-1-ge13ca993e8ccb9ba9847cc330696e02839f328f7\n",
    )
    .unwrap();
    sh(Command::new("./autogen.sh")
        .args([
            "--with-jemalloc-prefix=je_",
            "--disable-cxx",
            "--disable-doc",
        ])
        .current_dir(&je)
        .env("CC", "clang-22")
        .env("CXX", "clang++-22"));
    sh(Command::new("make")
        .args(["-j2", "lib/libjemalloc.a"])
        .current_dir(&je));
    je.join("lib/libjemalloc.a")
}

/// This machine's key in the calibration cache (`profcc_analysis::sharing::machine_key`), with
/// the online CPUs counted as `sysconf(_SC_NPROCESSORS_ONLN)` counts them (glibc reads
/// /sys/devices/system/cpu/online).
pub fn this_machine_key() -> String {
    let online: u32 = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .unwrap()
        .trim()
        .split(',')
        .map(|r| match r.split_once('-') {
            Some((a, b)) => b.parse::<u32>().unwrap() - a.parse::<u32>().unwrap() + 1,
            None => 1,
        })
        .sum();
    profcc_analysis::sharing::machine_key(
        &std::fs::read_to_string("/proc/cpuinfo").unwrap(),
        online,
    )
}

/// The memory bandwidth of [`write_calibration`]'s file: one thread's best 10 GB/s (triad),
/// all threads' 16 GB/s (copy).
pub const CALIBRATED_BANDWIDTH: profcc_schema::regions::Bandwidth =
    profcc_schema::regions::Bandwidth {
        copy_single: 8.0,
        triad_single: 10.0,
        copy_all: 16.0,
        triad_all: 12.5,
        threads: 2,
        array_bytes: 1 << 28,
    };

/// A hand-written calibration cache file at `file` for this machine: 77 ns per line
/// transfer, contended slowdowns of 1.25x (store-only lines), 2.25x (load-and-store), 3.25x
/// (read-modify-write) and 5.25x (locked read-modify-writes), [`CALIBRATED_BANDWIDTH`].
/// Returns the machine's key.
pub fn write_calibration(file: &Path) -> String {
    let key = this_machine_key();
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(
        file,
        serde_json::to_string(&vec![profcc_analysis::sharing::Calibration {
            key: key.clone(),
            transfer_ns: 77.0,
            pairs: vec![(0, 1, 77.0)],
            contended_slowdown: Some(3.25),
            slowdowns: Some(profcc_schema::sharing::Slowdowns {
                store: Some(1.25),
                load_store: Some(2.25),
                rmw: Some(3.25),
                atomic: Some(5.25),
            }),
            bandwidth: Some(CALIBRATED_BANDWIDTH),
        }])
        .unwrap(),
    )
    .unwrap();
    key
}

/// A program for rank tests without an MPI launcher: it allocates `argv[1]` longs, fills them
/// (`// fill`: one write each) and sums them (`// work`: one read each).
pub const RANK_WORK_SRC: &str = r#"#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000;
  long *a = malloc(n * sizeof *a); // alloc
  for (long i = 0; i < n; i++) a[i] = i; // fill
  long s = 0;
  for (long i = 0; i < n; i++) s += a[i]; // work
  printf("%ld\n", s);
  free(a);
  return 0;
}
"#;

/// [`RANK_WORK_SRC`] built with profcc into `s` and run once per rank in `0..n` with the
/// variables an Open MPI launcher sets (`OMPI_COMM_WORLD_RANK`, `OMPI_COMM_WORLD_SIZE`), rank
/// r working on `work(r)` elements; each profile named by its rank (`out=DIR/rank.%r.json`,
/// `dir` in `s`). Returns the profiles in rank order.
pub fn fake_ranks(s: &Scratch, dir: &str, n: u32, work: impl Fn(u32) -> u64) -> Vec<PathBuf> {
    s.write("rankwork.c", RANK_WORK_SRC);
    if !s.path("rankwork").exists() {
        s.compile(&profcc(), &["-O1", "-g", "rankwork.c", "-o", "rankwork"]);
    }
    let dir = s.path(dir);
    std::fs::create_dir_all(&dir).unwrap();
    (0..n)
        .map(|r| {
            let mut cmd = Command::new(s.path("rankwork"));
            for v in [
                "PMI_RANK",
                "PMIX_RANK",
                "MV2_COMM_WORLD_RANK",
                "SLURM_PROCID",
            ] {
                cmd.env_remove(v);
            }
            let out = output_within(
                cmd.current_dir(s.dir.path())
                    .arg(work(r).to_string())
                    .env("OMPI_COMM_WORLD_RANK", r.to_string())
                    .env("OMPI_COMM_WORLD_SIZE", n.to_string())
                    .env(
                        "PROFCC_OPTIONS",
                        format!("out={}/rank.%r.json:summary=0", dir.display()),
                    ),
            );
            assert!(out.status.success(), "rank {r}: {out:?}");
            let p = dir.join(format!("rank.{r}.json"));
            assert!(p.is_file(), "rank {r} wrote no {}", p.display());
            p
        })
        .collect()
}

/// tests/fixtures/alloc/lifetimes.c (allocation sites of exactly known lifetimes) built with
/// profcc -O2 and run once in `s`: its profile, `life.profile.json`.
pub fn profile_lifetimes_fixture(s: &Scratch) -> PathBuf {
    let path = fixture("alloc/lifetimes.c");
    s.compile(
        &profcc(),
        &[
            "-O2",
            "-g",
            path.to_str().unwrap(),
            "-o",
            "life",
            "-pthread",
        ],
    );
    // Every block's lifetime: exact recording (sampling keeps the recorded blocks' alone).
    let (out, _) = s.run_profiled("life", &[], "summary=0:alloc_sample=0");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "done\n");
    s.path("life.profile.json")
}

/// (name, LD_PRELOAD, description) of every allocator installed here: glibc, then the Debian
/// allocators of the shipped descriptions whose file exists.
pub fn installed_allocators() -> Vec<(String, Option<String>, profcc_allocator_probe::Description)>
{
    let mut out = Vec::new();
    for (_, d) in profcc_allocator_probe::shipped() {
        if d.name == "glibc" {
            out.push((d.name.clone(), None, d));
        } else if Path::new(&profcc_allocator_probe::preload_of(&d)).exists() {
            out.push((
                d.name.clone(),
                Some(profcc_allocator_probe::preload_of(&d)),
                d,
            ));
        } else {
            eprintln!(
                "skipped {}: {} is not installed (`cargo xtask setup` installs it)",
                d.name,
                profcc_allocator_probe::preload_of(&d)
            );
        }
    }
    out
}

/// The allocator section's first input of a report.
pub fn allocator_input(r: &profcc_report::Report) -> &profcc_report::model::AllocatorInput {
    &r.allocator.as_ref().expect("an allocator section").inputs[0]
}
