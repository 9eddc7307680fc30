//! The "faithful" harness (issue 9): each case is built twice, with plain clang-22 and with
//! profcc (same sources, same flags, same build commands), every run of it is made against both
//! builds, and what a user would compare is compared: stdout, stderr, the exit status (code or
//! killing signal) and, where the case names them, files the build or the runs leave behind
//! (a configure `config.h`, CMake's probe results, a compressed output).
//!
//! `run_all` builds and runs the cases two at a time and returns one `Row` per case;
//! `table` renders the rows as the Markdown table the closing note of issue 9 quotes
//! (`| case | stdout | stderr | rc | files/cache | verdict |`).

use crate::{profcc, profcxx, root};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One of the two builds of a case.
pub struct Toolchain {
    /// `clang-22` or `profcc`: the column a difference is reported under.
    pub tag: &'static str,
    pub cc: PathBuf,
    pub cxx: PathBuf,
    /// How CMake is pointed at this toolchain (compilers, or profcc's toolchain file).
    pub cmake_args: Vec<String>,
    /// Environment for the build and the runs (for profcc: where the profile goes; the summary
    /// stays at its default, which keeps it off a stderr that is not the start terminal).
    pub env: Vec<(String, String)>,
}

impl Toolchain {
    pub fn native() -> Toolchain {
        Toolchain {
            tag: "clang-22",
            cc: PathBuf::from("clang-22"),
            cxx: PathBuf::from("clang++-22"),
            cmake_args: vec![
                "-DCMAKE_C_COMPILER=clang-22".into(),
                "-DCMAKE_CXX_COMPILER=clang++-22".into(),
            ],
            env: vec![],
        }
    }

    /// profcc, its profiles written under `profile_dir` (outside every compared directory).
    pub fn profcc(profile_dir: &Path) -> Toolchain {
        let toolchain_file = root().join("configs/profcc.cmake");
        Toolchain {
            tag: "profcc",
            cc: profcc(),
            cxx: profcxx(),
            cmake_args: vec![
                format!("-DCMAKE_TOOLCHAIN_FILE={}", toolchain_file.display()),
                format!("-DPROFCC_EXECUTABLE={}", profcc().display()),
            ],
            env: vec![(
                "PROFCC_OPTIONS".into(),
                format!("out={}/%e.%p.json", profile_dir.display()),
            )],
        }
    }

    pub fn is_profcc(&self) -> bool {
        self.tag == "profcc"
    }
}

/// How a case is built in its (empty) directory.
pub enum Build {
    /// Compile these sources (paths relative to `tests/fixtures/faithful/`, or absolute) with
    /// these flags into `exe`; C++ when `cxx`.
    Compile {
        sources: Vec<PathBuf>,
        flags: Vec<String>,
        exe: String,
        cxx: bool,
    },
    /// Anything else: shell-like steps run by a function (configure, CMake, archives).
    Steps(fn(&Toolchain, &Path) -> Result<(), String>),
}

/// One run of a built case.
pub struct Run {
    pub label: String,
    /// Program to run, relative to the build directory.
    pub exe: String,
    pub args: Vec<String>,
    pub stdin: Vec<u8>,
    pub env: Vec<(String, String)>,
}

impl Run {
    pub fn new(exe: &str, args: &[&str]) -> Run {
        Run {
            label: if args.is_empty() {
                exe.to_string()
            } else {
                format!("{exe} {}", args.join(" "))
            },
            exe: exe.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            stdin: vec![],
            env: vec![],
        }
    }

    pub fn stdin(mut self, bytes: Vec<u8>) -> Run {
        self.stdin = bytes;
        self
    }

    pub fn env(mut self, key: &str, value: &str) -> Run {
        self.env.push((key.into(), value.into()));
        self.label = format!("{key}={value} {}", self.label);
        self
    }
}

/// A file compared after the runs: its path in the build directory and a filter that keeps
/// what must match (e.g. the probe results of a CMake cache, not its compiler paths).
pub struct FileCheck {
    pub path: String,
    pub filter: fn(&str) -> String,
}

pub fn whole(text: &str) -> String {
    text.to_string()
}

pub struct Case {
    pub name: &'static str,
    pub build: Build,
    pub runs: Vec<Run>,
    pub files: Vec<FileCheck>,
}

/// How one column came out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Same,
    Differs(String),
    NotCompared,
}

impl Verdict {
    fn cell(&self) -> String {
        match self {
            Verdict::Same => "same".into(),
            Verdict::Differs(what) => format!("**differs** ({what})"),
            Verdict::NotCompared => "—".into(),
        }
    }
}

pub struct Row {
    pub case: String,
    pub runs: usize,
    pub stdout: Verdict,
    pub stderr: Verdict,
    pub rc: Verdict,
    pub files: Verdict,
    /// Set when a build failed: nothing was compared.
    pub build_error: Option<String>,
    /// The first differences in full, for the test's failure message.
    pub details: Vec<String>,
    pub seconds: f64,
}

impl Row {
    pub fn same(&self) -> bool {
        self.build_error.is_none()
            && [&self.stdout, &self.stderr, &self.rc, &self.files]
                .iter()
                .all(|v| !matches!(v, Verdict::Differs(_)))
    }
}

/// What a run printed and how it ended.
pub struct Outcome {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// `exit N`, `signal N` or `timeout`.
    pub status: String,
}

/// The status of a run that could not be started.
const NOT_RUN: &str = "not run";

/// Seconds a build step or a run may take before it is killed (`PROFCC_TEST_TIMEOUT`, default
/// 300, as `output_within`).
pub fn timeout() -> Duration {
    Duration::from_secs(
        std::env::var("PROFCC_TEST_TIMEOUT")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(300),
    )
}

/// Run `cmd` with `stdin`, killed (its process group) after `timeout()`.
pub fn run_cmd(cmd: &mut Command, stdin: &[u8]) -> Result<Outcome, String> {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    let pid = child.id();
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        // A program that does not read all its input is not an error here.
        let _ = input.write_all(&stdin);
    });
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let limit = timeout();
    let watchdog = std::thread::spawn(move || {
        if done_rx.recv_timeout(limit).is_err() {
            // The whole process group: a forked or spawned child dies too.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{pid}")])
                .status();
            return true;
        }
        false
    });
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let _ = done_tx.send(());
    let timed_out = watchdog.join().unwrap();
    let _ = writer.join();
    let status = if timed_out {
        format!("timeout after {} s", limit.as_secs())
    } else if let Some(c) = out.status.code() {
        format!("exit {c}")
    } else {
        format!("signal {}", out.status.signal().unwrap_or(0))
    };
    Ok(Outcome {
        stdout: out.stdout,
        stderr: out.stderr,
        status,
    })
}

/// Run a build step; an error carries its command, status and the end of its output.
pub fn step(cmd: &mut Command) -> Result<Outcome, String> {
    let o = run_cmd(cmd, &[])?;
    if o.status != "exit 0" {
        return Err(format!(
            "{cmd:?}: {}\n{}\n{}",
            o.status,
            crate::tail(&String::from_utf8_lossy(&o.stdout), 20),
            crate::tail(&String::from_utf8_lossy(&o.stderr), 20)
        ));
    }
    Ok(o)
}

/// A command in `dir` with the toolchain's environment.
pub fn command(tc: &Toolchain, dir: &Path, program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = Command::new(program);
    c.current_dir(dir);
    for (k, v) in &tc.env {
        c.env(k, v);
    }
    c
}

pub fn fixture_path(rel: &Path) -> PathBuf {
    if rel.is_absolute() {
        rel.to_path_buf()
    } else {
        crate::fixture("faithful").join(rel)
    }
}

fn build(case: &Case, tc: &Toolchain, dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    match &case.build {
        Build::Compile {
            sources,
            flags,
            exe,
            cxx,
        } => {
            let cc = if *cxx { &tc.cxx } else { &tc.cc };
            let mut c = command(tc, dir, cc);
            c.args(flags)
                .args(sources.iter().map(|s| fixture_path(s)))
                .arg("-o")
                .arg(exe);
            step(&mut c).map(|_| ())
        }
        Build::Steps(f) => f(tc, dir),
    }
}

fn first_difference(a: &[u8], b: &[u8]) -> String {
    let (a, b) = (String::from_utf8_lossy(a), String::from_utf8_lossy(b));
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    let i = (0..la.len().max(lb.len()))
        .find(|&i| la.get(i) != lb.get(i))
        .unwrap_or(0);
    format!(
        "line {}: clang-22 {:?}, profcc {:?} ({} vs {} bytes)",
        i + 1,
        la.get(i).unwrap_or(&"<end>"),
        lb.get(i).unwrap_or(&"<end>"),
        a.len(),
        b.len()
    )
}

/// Build a case with both toolchains under `work/<case>/`, run every run on both builds,
/// compare.
pub fn run_case(case: &Case, work: &Path) -> Row {
    let t0 = Instant::now();
    let base = work.join(case.name);
    let _ = std::fs::remove_dir_all(&base);
    let profiles = base.join("profiles");
    std::fs::create_dir_all(&profiles).unwrap();
    let tcs = [Toolchain::native(), Toolchain::profcc(&profiles)];
    let mut row = Row {
        case: case.name.into(),
        runs: case.runs.len(),
        stdout: Verdict::Same,
        stderr: Verdict::Same,
        rc: Verdict::Same,
        files: if case.files.is_empty() {
            Verdict::NotCompared
        } else {
            Verdict::Same
        },
        build_error: None,
        details: vec![],
        seconds: 0.0,
    };
    let dirs: Vec<PathBuf> = tcs.iter().map(|tc| base.join(tc.tag)).collect();
    for (tc, dir) in tcs.iter().zip(&dirs) {
        if let Err(e) = build(case, tc, dir) {
            row.build_error = Some(format!("{} build: {e}", tc.tag));
            row.seconds = t0.elapsed().as_secs_f64();
            return row;
        }
    }
    for run in &case.runs {
        let outs: Vec<Outcome> = tcs
            .iter()
            .zip(&dirs)
            .map(|(tc, dir)| {
                // Run as `./exe` from the build directory: argv[0] (in usage messages) is the
                // same for both builds.
                let mut c = command(tc, dir, Path::new(".").join(&run.exe));
                c.args(&run.args);
                for (k, v) in &run.env {
                    c.env(k, v);
                }
                run_cmd(&mut c, &run.stdin).unwrap_or_else(|e| Outcome {
                    stdout: vec![],
                    stderr: e.into_bytes(),
                    status: NOT_RUN.into(),
                })
            })
            .collect();
        let (n, p) = (&outs[0], &outs[1]);
        let mut mark = |v: &mut Verdict, what: &str, detail: String| {
            if *v == Verdict::Same {
                *v = Verdict::Differs(format!("`{}`", run.label));
            }
            row.details
                .push(format!("{} `{}`: {what} {detail}", case.name, run.label));
        };
        if n.stdout != p.stdout {
            mark(
                &mut row.stdout,
                "stdout",
                first_difference(&n.stdout, &p.stdout),
            );
        }
        if n.stderr != p.stderr {
            mark(
                &mut row.stderr,
                "stderr",
                first_difference(&n.stderr, &p.stderr),
            );
        }
        // A run that could not start is a harness error, never "same".
        if n.status != p.status || n.status == NOT_RUN {
            mark(
                &mut row.rc,
                "status",
                format!("clang-22 {}, profcc {}", n.status, p.status),
            );
        }
    }
    for f in &case.files {
        let texts: Vec<Result<String, String>> = dirs
            .iter()
            .map(|d| {
                std::fs::read(d.join(&f.path))
                    .map(|b| (f.filter)(&String::from_utf8_lossy(&b)))
                    .map_err(|e| format!("{}: {e}", f.path))
            })
            .collect();
        let differs = match (&texts[0], &texts[1]) {
            (Ok(a), Ok(b)) if a == b => None,
            (Ok(a), Ok(b)) => Some(first_difference(a.as_bytes(), b.as_bytes())),
            (a, b) => Some(format!("clang-22 {a:?}, profcc {b:?}")),
        };
        if let Some(d) = differs {
            if row.files == Verdict::Same {
                row.files = Verdict::Differs(format!("`{}`", f.path));
            }
            row.details
                .push(format!("{} file {}: {d}", case.name, f.path));
        }
    }
    row.seconds = t0.elapsed().as_secs_f64();
    row
}

/// Run the cases, `jobs` at a time, in `work/`; rows in the order of `cases`.
pub fn run_all(cases: &[Case], work: &Path, jobs: usize) -> Vec<Row> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let rows = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if i >= cases.len() {
                    break;
                }
                let row = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    run_case(&cases[i], work)
                }))
                .unwrap_or_else(|e| {
                    let msg = e
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    Row {
                        case: cases[i].name.into(),
                        runs: cases[i].runs.len(),
                        stdout: Verdict::NotCompared,
                        stderr: Verdict::NotCompared,
                        rc: Verdict::NotCompared,
                        files: Verdict::NotCompared,
                        build_error: Some(format!("panicked: {msg}")),
                        details: vec![],
                        seconds: 0.0,
                    }
                });
                eprintln!(
                    "[faithful] {}: {} ({:.1} s)",
                    row.case,
                    if row.same() { "same" } else { "DIFFERS" },
                    row.seconds
                );
                rows.lock().unwrap().push((i, row));
            });
        }
    });
    let mut rows = rows.into_inner().unwrap();
    rows.sort_by_key(|(i, _)| *i);
    rows.into_iter().map(|(_, r)| r).collect()
}

/// The Markdown table: one row per case, native (clang-22) against profcc.
pub fn table(rows: &[Row]) -> String {
    let mut t = String::from(
        "| case | stdout | stderr | rc | files/cache | verdict |\n|---|---|---|---|---|---|\n",
    );
    for r in rows {
        if let Some(e) = &r.build_error {
            let first = e.lines().next().unwrap_or("");
            t.push_str(&format!(
                "| {} | — | — | — | — | **build failed**: {} |\n",
                r.case,
                first.replace('|', "\\|")
            ));
            continue;
        }
        t.push_str(&format!(
            "| {} ({} run{}) | {} | {} | {} | {} | {} |\n",
            r.case,
            r.runs,
            if r.runs == 1 { "" } else { "s" },
            r.stdout.cell(),
            r.stderr.cell(),
            r.rc.cell(),
            r.files.cell(),
            if r.same() { "same" } else { "**NOT same**" }
        ));
    }
    t
}
