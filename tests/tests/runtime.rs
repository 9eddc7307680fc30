//! Runtime behaviour a user relies on: options, output paths, fallback, SIGUSR2 dumps,
//! fork, C++ static destructors counted before the exit dump.

use profcc_schema::AccessKind::*;
use profcc_tests::*;
use std::process::Command;

const SIMPLE_C: &str = r#"
#include <stdio.h>
volatile int g[4];
int main(void) {
  for (int i = 0; i < 10; i++) g[i & 3] = i;   /* MARK_STORE */
  printf("done\n");
  return 0;
}
"#;

fn simple(s: &Scratch) {
    s.write("simple.c", SIMPLE_C);
    s.compile(&profcc(), &["-O1", "simple.c", "-o", "simple"]);
}

#[test]
fn bad_option_warns_once_and_runs_on() {
    let s = Scratch::new();
    simple(&s);
    let (out, p) = s.run_profiled("simple", &[], "bogus=1:summary=maybe");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "done\n");
    let unknown: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("unknown option 'bogus'"))
        .collect();
    assert_eq!(unknown.len(), 1, "{err}");
    assert!(
        unknown[0].contains("valid options:") && unknown[0].contains("summary"),
        "{err}"
    );
    assert!(
        err.lines()
            .any(|l| l.contains("'summary=maybe' is not valid") && l.contains("0 or 1")),
        "{err}"
    );
    // The default (auto: stderr is a pipe here, so into the profile) is used for the bad value.
    assert!(
        p.exit_summary.iter().any(|l| l.contains("accesses")),
        "{:?}",
        p.exit_summary
    );
    assert_eq!(
        count_at(&p, "simple.c", line_of(SIMPLE_C, "MARK_STORE"), Write),
        10
    );
}

#[test]
fn help_lists_every_flag() {
    let s = Scratch::new();
    simple(&s);
    let out = Command::new(s.path("simple"))
        .current_dir(s.dir.path())
        .env("PROFCC_OPTIONS", "help=1:write=0:summary=0")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    for flag in ["out", "summary", "top", "write", "help"] {
        assert!(
            err.lines().any(|l| l.trim_start().starts_with(flag)),
            "{flag} missing from help:\n{err}"
        );
    }
    assert_eq!(String::from_utf8_lossy(&out.stdout), "done\n");
}

/// Every flag `help=1` lists can be set, and the profile records the value in force.
#[test]
fn every_flag_is_recorded_in_the_profile() {
    let s = Scratch::new();
    simple(&s);
    let help = Command::new(s.path("simple"))
        .current_dir(s.dir.path())
        .env("PROFCC_OPTIONS", "help=1:write=0:summary=0")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stderr).into_owned();
    // Rows: name, type, [range], "default", value, help.
    let mut want = std::collections::BTreeMap::new();
    for row in help.lines().skip(1) {
        let w: Vec<&str> = row.split_whitespace().collect();
        let at = w.iter().position(|x| *x == "default").unwrap();
        let (name, kind, default) = (w[0], w[1], w[at + 1]);
        let value = match (name, kind) {
            // Flags that would keep the profile from being written keep their default.
            ("exit_dump" | "write" | "out", _) => default.to_string(),
            (_, "bool") => if default == "1" { "0" } else { "1" }.to_string(),
            (_, "when") => if default == "0" { "1" } else { "0" }.to_string(),
            (_, "sig") => if default == "USR2" { "USR1" } else { "USR2" }.to_string(),
            // `auto` (decided from other flags): a value of the flag's own type.
            (_, "bool|auto") => "1".to_string(),
            (_, "uint|auto") => "7".to_string(),
            // A text flag (its default may be empty): any other text.
            (_, "text") => "profcc_test_text".to_string(),
            (_, "uint") => {
                let (lo, hi) = w[2].split_once('-').unwrap();
                let (lo, hi, d): (u64, u64, u64) = (
                    lo.parse().unwrap(),
                    hi.parse().unwrap(),
                    default.parse().unwrap(),
                );
                if d < hi { d + 1 } else { lo }.to_string()
            }
            _ => panic!("unknown type {kind} in {row}"),
        };
        want.insert(name.to_string(), value);
    }
    assert!(want.len() >= 14 && want.contains_key("fs_sample"), "{help}");
    let spec: Vec<String> = want
        .iter()
        .filter(|(k, _)| k.as_str() != "out")
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let (out, p) = s.run_profiled("simple", &[], &spec.join(":"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("not valid") && !err.contains("unknown"),
        "{err}"
    );
    assert!(
        err.contains("profcc: exit profile written to"),
        "verbose=1: {err}"
    );
    want.insert("out".into(), p.options["out"].clone());
    assert_eq!(p.options, want);
    assert_eq!(
        p.sharing.as_ref().map(|sh| sh.settings.sample),
        want["fs_sample"].parse().ok()
    );
}

#[test]
fn summary_is_at_most_ten_lines_and_default_name_has_exe_and_pid() {
    let s = Scratch::new();
    simple(&s);
    // summary=1: on stderr although it is a pipe (the default puts it into the profile).
    let child = Command::new(s.path("simple"))
        .current_dir(s.dir.path())
        .env("PROFCC_OPTIONS", "summary=1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&child.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert!(!lines.is_empty() && lines.len() <= 10, "{err}");
    assert!(lines.iter().all(|l| l.starts_with("profcc:")), "{err}");
    let names: Vec<String> = std::fs::read_dir(s.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("profcc.simple.") && n.ends_with(".json"))
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    let pid: u32 = names[0]
        .trim_start_matches("profcc.simple.")
        .trim_end_matches(".json")
        .parse()
        .unwrap();
    let p = profcc_schema::read(&s.path(&names[0])).unwrap();
    assert_eq!(p.pid, pid);
    // No temporary files left next to it.
    assert!(std::fs::read_dir(s.dir.path()).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .ends_with(".tmp")));
}

#[test]
fn unwritable_directory_falls_back_to_tmpdir() {
    let s = Scratch::new();
    simple(&s);
    let tmp = s.path("fallback");
    std::fs::create_dir(&tmp).unwrap();
    let out = Command::new(s.path("simple"))
        .current_dir(s.dir.path())
        .env("PROFCC_OPTIONS", "out=/nonexistent/dir/p.%p.json")
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot write /nonexistent/dir/p.") && err.contains("instead"),
        "{err}"
    );
    let files: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let p = profcc_schema::read(&files[0]).unwrap();
    assert_eq!(
        count_at(&p, "simple.c", line_of(SIMPLE_C, "MARK_STORE"), Write),
        10
    );
}

#[test]
fn sigusr2_dumps_while_running() {
    let s = Scratch::new();
    s.write(
        "loop.c",
        r#"
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
volatile long x;
int main(int argc, char **argv) {
  for (int i = 0; i < 1000; i++) x = i;   /* before the signal */
  raise(SIGUSR2);
  for (int n = 0; argc < 3 && access(argv[1], F_OK) != 0 && n < 60000; n++) usleep(1000); /* the dump's thread */
  for (int i = 0; i < 500; i++) x = i;
  printf("still running\n");
  return 0;
}
"#,
    );
    s.compile(&profcc(), &["-O1", "loop.c", "-o", "loop"]);
    let sig = s.path("sig.json");
    let out = Command::new(s.path("loop"))
        .arg(&sig)
        .current_dir(s.dir.path())
        .env(
            "PROFCC_OPTIONS",
            format!("out={}:summary=0:dump_signal=USR2", sig.display()),
        )
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "still running\n");
    // The exit dump overwrote the signal dump: both were complete, the last has all counts.
    let p = profcc_schema::read(&sig).unwrap();
    assert_eq!(p.trigger, "exit");
    assert_eq!(
        count_at(&p, "loop.c", 7, Write) + count_at(&p, "loop.c", 10, Write),
        1500
    );

    // With the exit dump off, the file on disk is the signal dump with the first 1000 stores.
    let sig2 = s.path("sig2.json");
    let _ = Command::new(s.path("loop"))
        .arg(&sig2)
        .current_dir(s.dir.path())
        .env(
            "PROFCC_OPTIONS",
            format!(
                "out={}:summary=0:exit_dump=0:dump_signal=USR2",
                sig2.display()
            ),
        )
        .output()
        .unwrap();
    let p = profcc_schema::read(&sig2).unwrap();
    assert_eq!(p.trigger, "signal");
    assert_eq!(count_at(&p, "loop.c", 7, Write), 1000);
    assert_eq!(count_at(&p, "loop.c", 10, Write), 0);

    // A program that exits right after the signal, without an exit dump: the exit waits for
    // the signal dump it was sent, however busy the machine.
    let sig3 = s.path("sig3.json");
    let out = Command::new(s.path("loop"))
        .args([sig3.to_str().unwrap(), "no-wait"])
        .current_dir(s.dir.path())
        .env(
            "PROFCC_OPTIONS",
            format!(
                "out={}:summary=0:exit_dump=0:dump_signal=USR2",
                sig3.display()
            ),
        )
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "still running\n");
    let p = profcc_schema::read(&sig3).unwrap();
    assert_eq!(p.trigger, "signal");
    assert_eq!(count_at(&p, "loop.c", 7, Write), 1000);
}

#[test]
fn cxx_static_destructors_are_counted() {
    let s = Scratch::new();
    s.write(
        "dtor.cpp",
        r#"
#include <cstdio>
volatile int sink[8];
struct Guard {
  ~Guard() { for (int i = 0; i < 77; i++) sink[i & 7] = i; }   // MARK_DTOR
};
static Guard guard;
int main() { std::puts("main"); return 0; }
"#,
    );
    s.compile(&profcxx(), &["-O1", "dtor.cpp", "-o", "dtor"]);
    let (out, p) = s.run_profiled("dtor", &[], "summary=0");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "main\n");
    assert_eq!(
        count_at(&p, "dtor.cpp", 5, Write),
        77,
        "the exit dump runs after static destructors"
    );
}

#[test]
fn fork_child_writes_its_own_profile() {
    let s = Scratch::new();
    s.write("fork.c", FORK_C);
    let (child_line, parent_line) = (
        line_of(FORK_C, "MARK_CHILD"),
        line_of(FORK_C, "MARK_PARENT"),
    );
    s.compile(&profcc(), &["-O1", "fork.c", "-o", "fork"]);
    let out = Command::new(s.path("fork"))
        .current_dir(s.dir.path())
        .env("PROFCC_OPTIONS", "out=f.%p.json:summary=0")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "parent done\n");
    let mut profiles: Vec<_> = std::fs::read_dir(s.dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("f."))
        .map(|p| profcc_schema::read(&p).unwrap())
        .collect();
    assert_eq!(profiles.len(), 2);
    profiles.sort_by_key(|p| count_at(p, "fork.c", child_line, Write));
    assert_eq!(
        count_at(&profiles[0], "fork.c", child_line, Write),
        0,
        "parent did not run the child's loop"
    );
    assert_eq!(count_at(&profiles[0], "fork.c", parent_line, Write), 20);
    assert_eq!(count_at(&profiles[1], "fork.c", child_line, Write), 30);
    assert_eq!(count_at(&profiles[1], "fork.c", parent_line, Write), 0);
}

const FORK_C: &str = r#"
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
volatile int v;
int main(void) {
  pid_t pid = fork();
  if (pid == 0) { for (int i = 0; i < 30; i++) v = i; return 0; }   /* MARK_CHILD */
  int st; waitpid(pid, &st, 0);
  for (int i = 0; i < 20; i++) v = i;                               /* MARK_PARENT */
  printf("parent done\n");
  return 0;
}
"#;

/// 200 forks while other threads allocate, create threads and take SIGUSR2 dumps: every lock
/// of the runtime is busy somewhere at some fork (rt/src/fork.rs). Every child finishes (the
/// fixture kills and reports a child that hangs for 30 s; the run is bounded by an alarm and
/// by `output_within`) and writes its own profile with its pid, its own counts and threads.
#[test]
fn fork_storm_children_all_write_their_profiles() {
    let s = Scratch::new();
    let src = fixture("rt/fork_storm.c");
    let text = std::fs::read_to_string(&src).unwrap();
    s.compile(
        &profcc(),
        &["-O1", "-pthread", src.to_str().unwrap(), "-o", "storm"],
    );
    let out = output_within(Command::new(s.path("storm")).current_dir(s.dir.path()).env(
        "PROFCC_OPTIONS",
        "out=storm.%p.json:summary=0:dump_signal=USR2",
    ));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}\n{stderr}", out.status);
    assert!(stdout.ends_with("parent ok\n"), "{stdout}");
    let pids: Vec<u32> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("child "))
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 200, "{stdout}");
    let child_line = line_of(&text, "MARK_CHILD");
    for pid in pids {
        let path = s.path(&format!("storm.{pid}.json"));
        let p = profcc_schema::read(&path)
            .unwrap_or_else(|e| panic!("child {pid}: no profile ({e}); stderr:\n{stderr}"));
        assert_eq!(p.pid, pid);
        assert_eq!(p.trigger, "exit", "child {pid}");
        assert_eq!(
            count_at(&p, "fork_storm.c", child_line, Write),
            30,
            "child {pid}: the child's own loop, not the parent's counts"
        );
        // The child's threads: its main thread and the one it created (the parent's
        // allocator, creator and signaller threads are not in the child).
        assert_eq!(p.threads.len(), 2, "child {pid}: {:?}", p.threads);
        assert_eq!(p.threads[0].id, 0);
        assert_eq!(p.threads[1].parent, Some(0), "child {pid}: {:?}", p.threads);
    }
}

/// A setuid-root program run by an unprivileged user (`nobody`) takes no instruction from
/// its caller: `out=` can neither replace a root-only file nor create one in a root-only
/// directory, the default profile is not written into the caller's working directory,
/// `dump_signal` and `fatal_dump` take no signal, and a `$HOME` cache file is never opened
/// (it is a FIFO here: opening it would hang the run). The program's output and exit code are
/// its own; on a terminal the runtime says why in one line. The same binary without the
/// setuid bit honours every option.
#[test]
fn setuid_program_takes_no_instruction_from_its_caller() {
    use std::os::unix::fs::PermissionsExt;
    let uid = sh(Command::new("id").arg("-u"));
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        eprintln!("setuid_program_takes_no_instruction_from_its_caller: needs root (CI runs as root); not run");
        return;
    }
    let s = Scratch::new(); // 0700, root's: the root-only directory
    std::fs::copy(fixture("rt/setuid_probe.c"), s.path("setuid_probe.c")).unwrap();
    s.compile(
        &profcc(),
        &["-O1", "-pthread", "setuid_probe.c", "-o", "probe"],
    );
    let important = s.write("important.conf", "owner=root\n");
    let new_file = s.path("new.json");
    // A directory `nobody` can enter but not write: the binaries, the caller's cwd and HOME.
    let public = tempfile::Builder::new()
        .prefix("profcc-setuid")
        .tempdir()
        .unwrap();
    let chmod = |p: &std::path::Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    chmod(public.path(), 0o755);
    let setuid = public.path().join("probe-setuid");
    let plain = public.path().join("probe-plain");
    for exe in [&setuid, &plain] {
        std::fs::copy(s.path("probe"), exe).unwrap();
    }
    chmod(&setuid, 0o4755);
    chmod(&plain, 0o755);
    let home = public.path().join("home");
    std::fs::create_dir_all(home.join(".cache/profcc")).unwrap();
    let cache = home.join(".cache/profcc/calibration.json");
    sh(Command::new("mkfifo").arg(&cache));
    let listing = |d: &std::path::Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let (private_before, public_before) = (listing(s.dir.path()), listing(public.path()));
    let as_nobody = |options: &str| {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(&setuid)
            .current_dir(public.path())
            .env("PROFCC_OPTIONS", options)
            .env("HOME", &home)
            .env_remove("XDG_CACHE_HOME");
        c
    };
    let own = "sum=400000 usr2=default segv=default euid=0\n";
    for target in [&important, &new_file] {
        let out = output_within(&mut as_nobody(&format!(
            "out={}:dump_signal=USR2:fatal_dump=1:summary=1:verbose=1",
            target.display()
        )));
        assert_eq!(
            (
                String::from_utf8_lossy(&out.stdout).as_ref(),
                String::from_utf8_lossy(&out.stderr).as_ref(),
                out.status.code()
            ),
            (own, "", Some(3)),
            "out={}",
            target.display()
        );
        assert_eq!(std::fs::read_to_string(&important).unwrap(), "owner=root\n");
        assert!(!new_file.exists());
        assert_eq!(listing(s.dir.path()), private_before);
        assert_eq!(listing(public.path()), public_before);
    }
    // On a terminal (a pty from `script`): the program's line and the runtime's one notice.
    let tty = output_within(
        Command::new("script")
            .args(["-q", "-e", "-c"])
            .arg(format!(
                "setpriv --reuid=65534 --regid=65534 --clear-groups -- {}",
                setuid.display()
            ))
            .arg("/dev/null")
            .current_dir(public.path())
            .env("PROFCC_OPTIONS", format!("out={}", important.display()))
            .env("HOME", &home),
    );
    let text = String::from_utf8_lossy(&tty.stdout).replace('\r', "");
    let notices = text.lines().filter(|l| l.starts_with("profcc:")).count();
    assert!(
        notices == 1
            && text.contains("PROFCC_OPTIONS is ignored and no profile is written")
            && text.contains(own.trim_end())
            && tty.status.code() == Some(3),
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(&important).unwrap(), "owner=root\n");
    assert_eq!(listing(public.path()), public_before);

    // The same binary without the setuid bit: every option is honoured, the cache read.
    let xdg = tempfile::tempdir().unwrap();
    let key = write_calibration(&xdg.path().join("profcc/calibration.json"));
    let profile = s.path("plain.json");
    let out = output_within(
        Command::new(&plain)
            .current_dir(public.path())
            .env(
                "PROFCC_OPTIONS",
                format!("out={}:dump_signal=USR2:fatal_dump=1", profile.display()),
            )
            .env("XDG_CACHE_HOME", xdg.path()),
    );
    assert_eq!(
        (
            String::from_utf8_lossy(&out.stdout).as_ref(),
            out.status.code()
        ),
        ("sum=400000 usr2=taken segv=taken euid=0\n", Some(3))
    );
    let p = profcc_schema::read(&profile).unwrap();
    let m = p.sharing.as_ref().and_then(|s| s.machine.clone()).unwrap();
    assert_eq!(
        (m.transfer_ns, m.calibration.as_deref()),
        (Some(77.0), Some(key.as_str()))
    );
}

/// Threads started and joined one after another (tests/fixtures/threads/churn.c: a thread per
/// request): every thread is in the profile with its exact accesses and its times, and under
/// the NUMA check its row, though its per-thread block went to the next thread; the runtime
/// keeps a few hundred bytes per ended thread (the profile's rows), not a block per thread
/// (57 KiB each before: 20,000 threads peaked at 1.1 GB).
#[test]
fn thread_churn_keeps_every_thread_without_a_block_each() {
    let s = Scratch::new();
    let src = fixture("threads/churn.c");
    let src = src.to_str().unwrap();
    sh(Command::new("clang-22")
        .args(["-O2", src, "-o"])
        .arg(s.path("native"))
        .arg("-lpthread"));
    s.compile(&profcc(), &["-O2", "-g", src, "-o", "prof", "-lpthread"]);
    s.compile_env(
        &profcc(),
        &["-O2", "-g", src, "-o", "numa", "-lpthread"],
        &[("PROFCC_INSTRUMENT", "numa")],
    );
    // (stdout, peak resident KiB before the exit dump, profile)
    let run = |exe: &str, n: u64, options: &str| {
        let (out, p) = s.run_profiled(exe, &[&n.to_string()], options);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("{n}\n"),
            "{exe}"
        );
        let err = String::from_utf8_lossy(&out.stderr);
        let kib: u64 = err
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("{exe}: no VmHWM line: {err}"));
        (kib, p)
    };
    let native = |n: u64| {
        let out = output_within(Command::new(s.path("native")).arg(n.to_string()));
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        err.lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap()
    };
    let (few, many) = (500u64, 4500u64);
    let mut peak = Vec::new();
    for n in [few, many] {
        let (kib, p) = run("prof", n, "summary=0");
        peak.push(kib);
        // Every thread, the ended ones too: its exact accesses (its page's store, the page
        // and the counter read, the counter's store) and its times.
        assert_eq!(p.threads.len() as u64, n + 1);
        for t in &p.threads[1..] {
            assert_eq!(t.accesses, 4, "thread {}", t.id);
        }
        let times = &p.sharing.as_ref().expect("a sharing section").threads;
        let ids: Vec<u32> = times.iter().map(|t| t.id).collect();
        assert_eq!(ids, (0..=n as u32).collect::<Vec<_>>());
        for t in times {
            assert!(t.start_ns > 0 && t.end_ns >= t.start_ns, "{t:?}");
            assert!(t.wait_ns.is_some(), "{t:?}");
        }
    }
    let extra = (peak[1] - peak[0]) as i64 - (native(many) as i64 - native(few) as i64);
    let per_thread = extra * 1024 / (many - few) as i64;
    assert!(
        per_thread < 2048,
        "{per_thread} bytes per ended thread (peaks {peak:?} KiB)"
    );
    // Under the NUMA check: each thread's row, its own page first-touched.
    let n = 1000u64;
    let (_, p) = run("numa", n, "summary=0:numa=emulate:numa_nodes=2");
    let rows = &p.numa.as_ref().expect("a numa section").threads;
    for id in 1..=n as u32 {
        let t = rows
            .iter()
            .find(|t| t.thread == id)
            .unwrap_or_else(|| panic!("no row of thread {id}"));
        assert!(t.first_touches >= 1 && t.local + t.remote >= 4, "{t:?}");
    }
}
