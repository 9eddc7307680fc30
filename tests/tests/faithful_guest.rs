//! A quiet guest: the runtime adds no thread, no signal handler and no heap block of its own to
//! the program, keeps its exit summary out of the program's output, and writes the profile on
//! the ways out that run no atexit handler. Each case is built with clang-22 and with profcc
//! (fixtures in tests/fixtures/faithful/guest/) and run the same way; the runs must print the
//! same stdout and stderr and end the same way (exit code or signal). Every run is bounded.

use profcc_tests::*;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one run of a fixture may take (they all take milliseconds).
const RUN_LIMIT: Duration = Duration::from_secs(60);

/// What a user compares between two runs.
#[derive(Debug, PartialEq)]
struct Run {
    stdout: String,
    stderr: String,
    code: Option<i32>,
    signal: Option<i32>,
}

/// One fixture built twice, in `native/` (clang-22) and `profcc/` (profcc), under the same
/// executable name, from the same source path (so `assert` messages match).
struct Pair {
    s: Scratch,
    name: String,
}

impl Pair {
    fn new(fixture_name: &str, extra: &[&str]) -> Pair {
        let s = Scratch::new();
        let src = fixture(&format!("faithful/guest/{fixture_name}"));
        let name = fixture_name.trim_end_matches(".c").to_string();
        for (dir, cc) in [("native", PathBuf::from("clang-22")), ("profcc", profcc())] {
            std::fs::create_dir_all(s.path(dir)).unwrap();
            let exe = format!("{dir}/{name}");
            let mut args = vec!["-O1", "-g", src.to_str().unwrap(), "-o", &exe];
            args.extend_from_slice(extra);
            s.compile(&cc, &args);
        }
        Pair { s, name }
    }

    fn dir(&self, which: &str) -> PathBuf {
        self.s.path(which)
    }

    fn profile(&self) -> PathBuf {
        self.s.path("profcc/profile.json")
    }

    /// Run `which`'s build in its directory, stdout and stderr to files there,
    /// `PROFCC_OPTIONS=out=<profcc/profile.json>[:opts]` (the clang-22 build ignores it).
    fn run(&self, which: &str, args: &[&str], opts: &str, no_aslr: bool) -> Run {
        let dir = self.dir(which);
        let exe = dir.join(&self.name);
        let _ = std::fs::remove_file(self.profile());
        let mut cmd = if no_aslr && setarch_works() {
            let mut c = Command::new("setarch");
            c.args([std::env::consts::ARCH, "-R"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        let mut options = format!("out={}", self.profile().display());
        if !opts.is_empty() {
            options = format!("{options}:{opts}");
        }
        cmd.args(args)
            .current_dir(&dir)
            .env("PROFCC_OPTIONS", options);
        run_bounded(&mut cmd, &dir)
    }

    /// Both builds, the same way; they must agree. Returns the profcc run.
    fn same(&self, args: &[&str], opts: &str, no_aslr: bool) -> Run {
        let native = self.run("native", args, opts, no_aslr);
        let profiled = self.run("profcc", args, opts, no_aslr);
        assert_eq!(
            native, profiled,
            "{} {args:?}: the clang-22 build (left) and the profcc build (right) differ",
            self.name
        );
        profiled
    }
}

/// Run with stdout/stderr to files in `dir` (`out.txt`, `err.txt`), killed after [`RUN_LIMIT`].
fn run_bounded(cmd: &mut Command, dir: &Path) -> Run {
    let (out, err) = (dir.join("out.txt"), dir.join("err.txt"));
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{cmd:?} still running after {} s (killed); stderr:\n{}",
                RUN_LIMIT.as_secs(),
                std::fs::read_to_string(&err).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        stdout: std::fs::read_to_string(&out).unwrap(),
        stderr: std::fs::read_to_string(&err).unwrap(),
        code: status.code(),
        signal: status.signal(),
    }
}

/// `setarch <arch> -R` turns address randomisation off (not allowed in some containers).
fn setarch_works() -> bool {
    Command::new("setarch")
        .args([std::env::consts::ARCH, "-R", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn read_profile(p: &Pair) -> profcc_schema::Profile {
    profcc_schema::read(&p.profile()).unwrap_or_else(|e| panic!("{}: no profile ({e})", p.name))
}

/// `profcc report PROFILE` as a user runs it: its text.
fn report_text(profile: &Path) -> String {
    let out = output_within(Command::new(profcc()).arg("report").arg(profile));
    assert!(
        out.status.success(),
        "profcc report: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `int main(){ ... pthread_exit(0); }` ends (when its last thread does) and writes its profile;
/// a runtime thread would keep the process alive forever.
#[test]
fn pthread_exit_from_main_ends_the_program() {
    let p = Pair::new("pthread_exit_main.c", &["-pthread"]);
    let r = p.same(&[], "", false);
    assert_eq!(r.code, Some(0));
    assert_eq!(read_profile(&p).trigger, "exit");
    // With the dump signal asked for, its thread leaves when main has left.
    let r = p.same(&[], "dump_signal=USR2", false);
    assert_eq!(r.code, Some(0));
    assert_eq!(read_profile(&p).trigger, "exit");
}

/// SIGUSR2 left at its default disposition kills the program, as natively.
#[test]
fn raise_sigusr2_with_default_disposition_kills() {
    let p = Pair::new("raise_usr2.c", &[]);
    let r = p.same(&[], "", false);
    assert_eq!(r.signal, Some(12), "{r:?}"); // SIGUSR2
    assert_eq!(r.stdout, "SIGUSR2 handler at main: default\n");
}

/// One thread at main (no runtime thread), no signal handler, and `unshare(CLONE_NEWUSER)`
/// (which needs a single-threaded process) gives what it gives natively.
#[test]
fn one_thread_no_handlers_at_main_and_unshare_as_native() {
    let p = Pair::new("threads_unshare.c", &[]);
    let r = p.same(&[], "", false);
    assert!(r.stdout.contains("Threads:\t1\n"), "{}", r.stdout);
    assert!(
        r.stdout.contains("signals with a handler: 0\n"),
        "{}",
        r.stdout
    );
}

/// The first heap blocks land at the same page offsets and distances as in the clang-22
/// build (address randomisation off where `setarch -R` works): the runtime allocated nothing
/// from the program's heap before main.
#[test]
fn first_heap_blocks_land_where_they_do_natively() {
    let p = Pair::new("heap_layout.c", &[]);
    let r = p.same(&[], "", true);
    assert_eq!(r.stdout.lines().count(), 8, "{}", r.stdout);
}

/// stderr redirected to a file: it holds the program's own stderr only; the summary is in the
/// profile and `profcc report` shows it. `summary=1` still prints it there, `summary=0`
/// keeps it out of both.
#[test]
fn summary_goes_into_the_profile_when_stderr_is_not_a_terminal() {
    let p = Pair::new("stderr_output.c", &[]);
    let r = p.same(&[], "", false);
    assert_eq!(r.stderr, "diagnostic: all good\n");
    let prof = read_profile(&p);
    assert!(
        prof.exit_summary.iter().any(|l| l.contains("accesses")),
        "{:?}",
        prof.exit_summary
    );
    let text = report_text(&p.profile());
    assert!(
        text.contains("exit summary (kept in the profile") && text.contains(&prof.exit_summary[0]),
        "{text}"
    );

    // The same with stderr a pipe.
    for dir in ["native", "profcc"] {
        let out = output_within(
            Command::new(p.dir(dir).join(&p.name))
                .current_dir(p.dir(dir))
                .env("PROFCC_OPTIONS", format!("out={}", p.profile().display())),
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "diagnostic: all good\n"
        );
    }

    // summary=1: asked for on stderr wherever it points; summary=0: nowhere.
    let loud = p.run("profcc", &[], "summary=1", false);
    assert!(
        loud.stderr.starts_with("diagnostic: all good\nprofcc: "),
        "{}",
        loud.stderr
    );
    assert!(read_profile(&p).exit_summary.is_empty());
    let quiet = p.run("profcc", &[], "summary=0", false);
    assert_eq!(quiet.stderr, "diagnostic: all good\n");
    assert!(read_profile(&p).exit_summary.is_empty());
}

/// `script` gives the program a terminal (a pty) as stdin, stdout and stderr; None where it
/// cannot run here.
fn in_terminal(dir: &Path, exe: &Path, opts: &str) -> Option<String> {
    let ok = Command::new("script")
        .args(["-qec", "true", "/dev/null"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("`script` cannot give a terminal here: the terminal part is skipped");
        return None;
    }
    let out = output_within(
        Command::new("script")
            .arg("-qec")
            .arg(exe)
            .arg("/dev/null")
            .current_dir(dir)
            .env("PROFCC_OPTIONS", opts),
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A program that closes fd 2 and opens a data file (which becomes fd 2) gets nothing but its
/// data in that file, even when stderr was a terminal at start; with stderr a terminal all
/// along, the summary does appear on it.
#[test]
fn closed_stderr_data_file_gets_no_summary() {
    let p = Pair::new("closed_stderr_data.c", &[]);
    let r = p.same(&[], "", false);
    assert_eq!(r.stdout, "data written\n");
    let data = |which: &str| std::fs::read_to_string(p.dir(which).join("data.txt")).unwrap();
    assert_eq!(data("profcc"), "record 1\nrecord 2\n");
    assert_eq!(data("native"), data("profcc"));

    let opts = format!("out={}", p.profile().display());
    let exe = p.dir("profcc").join(&p.name);
    if let Some(tty) = in_terminal(&p.dir("profcc"), &exe, &opts) {
        assert!(tty.contains("data written"), "{tty}");
        assert!(!tty.contains("profcc:"), "{tty}");
        assert_eq!(data("profcc"), "record 1\nrecord 2\n");
        assert!(!read_profile(&p).exit_summary.is_empty());
        // The terminal all along: the summary is printed there, and not kept in the profile.
        let other = Pair::new("stderr_output.c", &[]);
        let exe = other.dir("profcc").join(&other.name);
        let opts = format!("out={}", other.profile().display());
        let tty = in_terminal(&other.dir("profcc"), &exe, &opts).unwrap();
        assert!(tty.contains("diagnostic: all good"), "{tty}");
        assert!(tty.contains("profcc: "), "{tty}");
        assert!(read_profile(&other).exit_summary.is_empty());
    }
}

/// `_exit(3)` and `_Exit(4)` keep their exit codes and write the profile.
#[test]
fn underscore_exit_keeps_rc_and_writes_the_profile() {
    let p = Pair::new("exit_paths.c", &[]);
    for (how, rc) in [("_exit", 3), ("_Exit", 4)] {
        let r = p.same(&[how], "", false);
        assert_eq!(r.code, Some(rc), "{how}");
        let prof = read_profile(&p);
        assert_eq!(prof.trigger, "_exit", "{how}");
        assert!(prof.totals.accesses >= 100, "{how}: {:?}", prof.totals);
    }
}

/// `abort` and a failed `assert` die as natively (SIGABRT, glibc's assert message) and write
/// the profile first; a fatal signal writes it with `fatal_dump=1` and still kills the
/// program with that signal; without it the profile is lost (documented).
#[test]
fn abort_assert_and_fatal_signals() {
    let p = Pair::new("exit_paths.c", &[]);
    for (how, trigger) in [("abort", "abort"), ("assert", "assert")] {
        let r = p.same(&[how], "", false);
        assert_eq!(r.signal, Some(6), "{how}: {r:?}");
        assert_eq!(read_profile(&p).trigger, trigger, "{how}");
    }
    for (how, sig) in [("segv", 11), ("term", 15)] {
        let r = p.same(&[how], "fatal_dump=1", false);
        assert_eq!(r.signal, Some(sig), "{how}: {r:?}");
        assert_eq!(
            read_profile(&p).trigger,
            format!("fatal signal {sig}"),
            "{how}"
        );
        let r = p.same(&[how], "", false);
        assert_eq!(r.signal, Some(sig), "{how}: {r:?}");
        assert!(!p.profile().exists(), "{how}: no handler, no profile");
    }
}
