//! Profile assembly and output, and the dump lifecycle: when a profile is written.
//!
//! - At exit (after C++ static destructors: the `atexit` is registered from the priority-1
//!   constructor, before any static constructor registers its destructor).
//! - At `_exit`/`_Exit`, and before `abort` and a failed `assert` (interposers in
//!   `csrc/interpose.c` call [`before_exit`]), once per process, only in the process the
//!   runtime started in or a `fork` child (never in a `vfork`/`clone` child, which shares the
//!   parent's memory: it runs no fork handler, so its pid differs from [`PID`]).
//! - On `dump_signal` (off by default): the handler only writes a byte to a pipe; a runtime
//!   thread, started only then, does the dump, so nothing allocates or locks inside the
//!   handler. By default the runtime has no thread and no signal handler.
//! - On a fatal signal with `fatal_dump=1` (off by default): a handler on each fatal signal
//!   left at its default at start dumps, puts the default back and raises the signal again.
//!
//! The exit summary goes to stderr only when stderr is the terminal it was at start (same
//! device and inode at exit: a program that closed fd 2 and opened a data file gets nothing in
//! it); otherwise it goes into the profile (`Profile::exit_summary`), which `profcc report`
//! shows. `summary=1` prints it on stderr wherever that points; `summary=0` drops it.

use crate::clock::now_ns;
use crate::log::stderr_line;
use crate::{counts, mem::SpinLock, options};
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use profcc_schema as schema;
use std::io::Write;

static START_NS: AtomicU64 = AtomicU64::new(0);
static PIPE_W: AtomicI32 = AtomicI32::new(-1);
pub(crate) static DUMPING: SpinLock<()> = SpinLock::new(());
/// Threads in `fork` waiting for `DUMPING` (fork.rs): the next signal dump waits for them,
/// so a stream of signals cannot keep a fork waiting (the spin lock is not fair).
pub(crate) static FORKS_WAITING: AtomicU32 = AtomicU32::new(0);
/// Dump signals received, and how many of them a finished signal dump covers: a signal dump
/// still pending at exit is waited for (with `exit_dump=0` it is the only profile the user
/// asked for).
static SIGNALS: AtomicU64 = AtomicU64::new(0);
static SIGNALS_DUMPED: AtomicU64 = AtomicU64::new(0);
/// How long the exit waits for a pending signal dump.
const SIGNAL_DUMP_WAIT_NS: u64 = 10_000_000_000;
// Whether the final dump (exit, `_exit`, abort, fatal signal) has begun in this process is
// the lifecycle's (`analysis::begin_final_dump`): a module unregistering reads it too.
/// The process whose final dump is ours: set at start and in a fork child.
static PID: AtomicI32 = AtomicI32::new(0);
/// stderr at start when it was a terminal: device and inode (`TTY_SET` says it was).
static TTY_SET: AtomicBool = AtomicBool::new(false);
static TTY_DEV: AtomicU64 = AtomicU64::new(0);
static TTY_INO: AtomicU64 = AtomicU64::new(0);

/// Device and inode of what fd 2 is, when it is a terminal.
fn stderr_terminal() -> Option<(u64, u64)> {
    unsafe {
        if libc::isatty(2) != 1 {
            return None;
        }
        let mut st: libc::stat = core::mem::zeroed();
        if libc::fstat(2, &mut st) != 0 {
            return None;
        }
        Some((st.st_rdev, st.st_ino))
    }
}

/// Is stderr still the terminal it was at start?
fn stderr_is_start_terminal() -> bool {
    TTY_SET.load(Ordering::Relaxed)
        && stderr_terminal().is_some_and(|(dev, ino)| {
            dev == TTY_DEV.load(Ordering::Relaxed) && ino == TTY_INO.load(Ordering::Relaxed)
        })
}

extern "C" {
    /// `atexit` without libc_nonshared's wrapper (rt/csrc/tls.c: no PLT slot).
    fn profcc_atexit(f: extern "C" fn()) -> libc::c_int;
}

extern "C" fn at_exit() {
    if crate::analysis::begin_final_dump() {
        return;
    }
    if options::get().exit_dump {
        dump("exit");
    } else {
        wait_for_signal_dump();
    }
}

/// Without an exit dump, a dump signal received before the exit is still owed a profile: wait
/// (at most `SIGNAL_DUMP_WAIT_NS`) until the dumper thread has written it.
fn wait_for_signal_dump() {
    let seen = SIGNALS.load(Ordering::Acquire);
    let deadline = now_ns() + SIGNAL_DUMP_WAIT_NS;
    while SIGNALS_DUMPED.load(Ordering::Acquire) < seen
        && PIPE_W.load(Ordering::Acquire) >= 0
        && now_ns() < deadline
    {
        unsafe { libc::usleep(1000) };
    }
}

/// From the `_exit`/`_Exit`/`abort`/`__assert_fail` interposers, before the real call: the
/// final dump, unless it already ran, the runtime is not initialised, the caller is the
/// runtime itself, or this is a child that shares its parent's memory (vfork).
#[no_mangle]
pub extern "C" fn profcc_before_exit(how: u32) {
    if !crate::initialised()
        || crate::threads::tls().in_rt != 0
        || unsafe { libc::getpid() } != PID.load(Ordering::Relaxed)
        || crate::analysis::begin_final_dump()
    {
        return;
    }
    if options::get().exit_dump {
        dump(match how {
            0 => "_exit",
            1 => "abort",
            _ => "assert",
        });
    } else {
        wait_for_signal_dump();
    }
}

extern "C" fn on_dump_signal(_: libc::c_int) {
    let fd = PIPE_W.load(Ordering::Relaxed);
    if fd >= 0 {
        SIGNALS.fetch_add(1, Ordering::AcqRel); // lock-free: safe in a handler
        let b = 1u8;
        let e = unsafe { *libc::__errno_location() };
        unsafe { libc::write(fd, &b as *const u8 as *const libc::c_void, 1) };
        unsafe { *libc::__errno_location() = e };
    }
}

extern "C" fn dumper(arg: *mut libc::c_void) -> *mut libc::c_void {
    let fd = arg as usize as i32;
    // One read takes every signal pending so far: signals that arrived during a dump make
    // one more dump, not one each.
    let mut buf = [0u8; 256];
    loop {
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ready = unsafe { libc::poll(&mut pfd, 1, 1000) };
        if ready == 0 {
            if main_thread_gone() {
                // `main` called pthread_exit: natively the process ends with its last
                // thread, so this one must not stay. The signal gets its old disposition.
                stop_dump_signal();
                return core::ptr::null_mut();
            }
            continue;
        }
        let n = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
        // Each byte read was written after its signal was counted.
        let seen = SIGNALS.load(Ordering::Acquire);
        // After the exit began, only without an exit dump (the exit waits for this one).
        if n >= 1 && (!crate::analysis::final_dump_begun() || !options::get().exit_dump) {
            while FORKS_WAITING.load(Ordering::Acquire) != 0 {
                unsafe { libc::sched_yield() };
            }
            dump("signal");
            SIGNALS_DUMPED.fetch_max(seen, Ordering::AcqRel);
        } else if n <= 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return core::ptr::null_mut();
        }
    }
}

/// Has the main thread ended (`pthread_exit` from `main`: it stays a zombie until the last
/// thread ends)? Read with plain syscalls: nothing from the program's allocator.
fn main_thread_gone() -> bool {
    let pid = unsafe { libc::getpid() };
    let stat = std::fs::read_to_string(format!("/proc/self/task/{pid}/stat")).unwrap_or_default();
    matches!(
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next()),
        Some("Z" | "X") | None
    )
}

/// The signal's disposition before `start_dumper` took it.
static OLD_DISPOSITION: SpinLock<Option<libc::sigaction>> = SpinLock::new(None);

fn stop_dump_signal() {
    let sig = options::get().dump_signal.0;
    if let Some(old) = *OLD_DISPOSITION.lock() {
        unsafe { libc::sigaction(sig, &old, core::ptr::null_mut()) };
    }
    let fd = PIPE_W.swap(-1, Ordering::AcqRel);
    if fd >= 0 {
        unsafe { libc::close(fd) };
    }
}

/// In the child after fork (locks released): the dumper thread did not survive the fork,
/// so the dump signal in the child is ignored quietly; the child's run starts now, and its
/// final dump is its own.
pub(crate) fn after_fork_child() {
    PIPE_W.store(-1, Ordering::Relaxed);
    START_NS.store(now_ns(), Ordering::Relaxed);
    PID.store(unsafe { libc::getpid() }, Ordering::Relaxed);
}

/// At initialisation: no thread, no allocation through the program's allocator, and no signal
/// handler unless `fatal_dump` asks for one.
pub fn install() {
    START_NS.store(now_ns(), Ordering::Relaxed);
    PID.store(unsafe { libc::getpid() }, Ordering::Relaxed);
    if let Some((dev, ino)) = stderr_terminal() {
        TTY_DEV.store(dev, Ordering::Relaxed);
        TTY_INO.store(ino, Ordering::Relaxed);
        TTY_SET.store(true, Ordering::Relaxed);
        if crate::secure::on() {
            stderr_line(crate::secure::NOTICE);
        }
    }
    unsafe {
        profcc_atexit(at_exit);
    }
    if options::get().fatal_dump {
        install_fatal_handlers();
    }
}

/// The signals `fatal_dump` catches (`options.rs` names them in its help).
const FATAL: [libc::c_int; 11] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGILL,
    libc::SIGABRT,
    libc::SIGTRAP,
    libc::SIGSYS,
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
];

fn install_fatal_handlers() {
    for sig in FATAL {
        unsafe {
            let mut old: libc::sigaction = core::mem::zeroed();
            if libc::sigaction(sig, core::ptr::null(), &mut old) != 0
                || old.sa_sigaction != libc::SIG_DFL
            {
                continue; // ignored or handled already: not ours to change
            }
            let mut sa: libc::sigaction = core::mem::zeroed();
            sa.sa_sigaction = on_fatal as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigaction(sig, &sa, core::ptr::null_mut());
        }
    }
}

/// A fatal signal with `fatal_dump=1`: the final dump (not when the signal hit the runtime
/// itself, which may hold the locks the dump needs: one line says so), then the default
/// disposition back and the signal again, so the program dies as it would have (status,
/// core file). The signal is blocked while this runs, so the raised one acts on return.
extern "C" fn on_fatal(sig: libc::c_int, _: *mut libc::siginfo_t, _: *mut libc::c_void) {
    let e = unsafe { *libc::__errno_location() };
    if crate::threads::tls().in_rt != 0 {
        stderr_line(&format!(
            "profcc: fatal signal {sig} arrived inside the runtime: profile not written"
        ));
    } else if unsafe { libc::getpid() } == PID.load(Ordering::Relaxed)
        && !crate::analysis::begin_final_dump()
    {
        dump(&format!("fatal signal {sig}"));
    }
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
        *libc::__errno_location() = e;
    }
}

/// From the runtime's constructor (`csrc/interpose.c`, priority 101).
#[no_mangle]
pub extern "C" fn profcc_ctor_init() {
    #[cfg(not(test))] // the unit-test binary is interposed too; it must not write profiles
    {
        crate::ensure_init();
        start_dumper();
    }
}

static DUMPER_STARTED: AtomicBool = AtomicBool::new(false);

/// Start the dump-signal thread and handler, once, when `dump_signal` asks for them. Only
/// from constructors, never from `install` (which may run inside an interposer called by the
/// program's own allocator under its lock, e.g. jemalloc's `malloc_init_hard` mmapping):
/// `pthread_create` callocs the new thread's DTV, and that calloc would wait for the same lock
/// forever.
pub fn start_dumper() {
    let sig = options::get().dump_signal.0;
    if sig == 0 || DUMPER_STARTED.swap(true, Ordering::AcqRel) {
        return;
    }
    let _guard = crate::threads::RtGuard::enter();
    unsafe {
        let mut fds = [0i32; 2];
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) == 0 {
            if crate::threads::spawn_internal(dumper, fds[0] as usize as *mut libc::c_void) {
                PIPE_W.store(fds[1], Ordering::Relaxed);
                let mut sa: libc::sigaction = core::mem::zeroed();
                sa.sa_sigaction = on_dump_signal as *const () as usize;
                sa.sa_flags = libc::SA_RESTART;
                let mut old: libc::sigaction = core::mem::zeroed();
                if libc::sigaction(sig, &sa, &mut old) == 0 {
                    *OLD_DISPOSITION.lock() = Some(old);
                }
            } else {
                libc::close(fds[0]);
                libc::close(fds[1]);
                stderr_line(
                    "profcc: cannot start the dump_signal thread; the signal keeps its disposition",
                );
            }
        }
    }
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

fn argv() -> Vec<String> {
    std::fs::read("/proc/self/cmdline")
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The launchers' environment variables that give a process its MPI rank, in the order they
/// are read (Open MPI, MPICH/Intel MPI's PMI, PMIx, MVAPICH2, Slurm's `srun`).
pub const RANK_VARS: &[&str] = &[
    "OMPI_COMM_WORLD_RANK",
    "PMI_RANK",
    "PMIX_RANK",
    "MV2_COMM_WORLD_RANK",
    "SLURM_PROCID",
];
/// The same for the number of ranks (the job's size).
pub const SIZE_VARS: &[&str] = &[
    "OMPI_COMM_WORLD_SIZE",
    "PMI_SIZE",
    "PMIX_SIZE",
    "MV2_COMM_WORLD_SIZE",
    "SLURM_NTASKS",
];

/// The first of `vars` that is set to a number: no MPI library is called, the launcher's
/// environment is read (`get` is the environment lookup).
pub fn from_env(vars: &[&str], get: impl Fn(&str) -> Option<String>) -> Option<u32> {
    vars.iter()
        .find_map(|v| get(v).and_then(|s| s.trim().parse::<u32>().ok()))
}

/// This process's MPI rank and job size, from its launcher's environment (None: not started by
/// a launcher that says).
pub fn mpi_rank() -> Option<u32> {
    from_env(RANK_VARS, crate::env)
}
pub fn mpi_size() -> Option<u32> {
    from_env(SIZE_VARS, crate::env)
}

/// Expand `%p`, `%h`, `%e`, `%r`, `%%` in the output pattern. `%r` is the MPI rank; a process
/// with no rank in its environment gets `pid` and its pid there (`prof.%r.json` then names
/// `prof.pid1234.json`: distinct files, never one that looks like a rank's).
pub fn expand(pattern: &str, pid: u32, host: &str, exe: &str, rank: Option<u32>) -> String {
    let name = exe.rsplit('/').next().unwrap_or(exe);
    let mut out = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('p') => out.push_str(&pid.to_string()),
            Some('h') => out.push_str(host),
            Some('e') => out.push_str(name),
            Some('r') => match rank {
                Some(r) => out.push_str(&r.to_string()),
                None => out.push_str(&format!("pid{pid}")),
            },
            Some('%') => out.push('%'),
            Some(o) => {
                out.push('%');
                out.push(o);
            }
            None => out.push('%'),
        }
    }
    out
}

extern "C" {
    fn profcc_allocator_lines(buf: *mut u8, cap: usize) -> usize;
}

/// The allocator's identification lines (rt/csrc/interpose.c), found once, at the final dump
/// (exit, `_exit`, abort, assert). Not in a fatal signal's (dladdr/dlsym and the allocator's
/// version functions are not async-signal-safe), nor in a `dump_signal` dump while the program
/// runs on: a failed dlsym mallocs its error message, and the program's heap must not change
/// under it.
fn allocator_lines(trigger: &str) -> Vec<String> {
    static LINES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    if trigger.starts_with("fatal") || trigger == "signal" {
        return LINES.get().cloned().unwrap_or_default();
    }
    LINES
        .get_or_init(|| {
            let mut buf = [0u8; 2048];
            let n = unsafe { profcc_allocator_lines(buf.as_mut_ptr(), buf.len()) }.min(buf.len());
            String::from_utf8_lossy(&buf[..n])
                .lines()
                .map(String::from)
                .collect()
        })
        .clone()
}

pub fn build_profile(trigger: &str) -> schema::Profile {
    let snap = counts::snapshot();
    let (alloc_sites, at) = crate::alloc::snapshot();
    let mut threads = crate::threads::snapshot();
    // A map, not a search per thread: a program may have started 100k threads.
    let mut per_thread: std::collections::HashMap<u32, u64> = std::collections::HashMap::new();
    for &(tid, n) in &snap.per_thread {
        *per_thread.entry(tid).or_default() += n;
    }
    for t in threads.iter_mut() {
        t.accesses = per_thread.get(&t.id).copied().unwrap_or(0);
    }
    let mut totals = schema::Totals {
        unattributed: snap.unattributed,
        allocations: at.allocations,
        frees: at.frees,
        bytes_allocated: at.bytes_allocated,
        live_bytes_peak: at.live_bytes_peak,
        threads: threads.len().max(1) as u32,
        ..Default::default()
    };
    for s in &snap.sites {
        totals.add_site(s);
    }
    let mut notes = Vec::new();
    if snap.dropped_sites > 0 {
        notes.push(format!(
            "{} access sites beyond the runtime's limit were not counted",
            snap.dropped_sites
        ));
    }
    notes.push(
        "allocations made inside glibc (its own mmap/brk) and accesses in uninstrumented libraries are not observed".into(),
    );
    notes.extend(crate::alloc::sampling_note());
    notes.extend(crate::stack::shallow_note());
    let ids: std::collections::HashMap<u32, u32> = snap
        .global_ids
        .iter()
        .enumerate()
        .map(|(i, &g)| (g, i as u32))
        .collect();
    let exe = counts::exe_path();
    let mut p = schema::Profile {
        format: schema::FORMAT.into(),
        version: schema::VERSION,
        pid: unsafe { libc::getpid() } as u32,
        host: hostname(),
        rank: mpi_rank(),
        ranks: mpi_size(),
        argv: argv(),
        duration_ns: now_ns().saturating_sub(START_NS.load(Ordering::Relaxed)),
        trigger: trigger.into(),
        options: options::all().into_iter().collect(),
        modules: counts::with_unloaded(counts::loaded_modules()),
        threads,
        sites: snap.sites,
        counted_modules: Some(counts::counted_modules()),
        stacks: crate::stack::snapshot(),
        alloc_sites,
        totals,
        notes,
        exe,
        alloc_wrappers: counts::alloc_wrappers(),
        allocator: allocator_lines(trigger),
        ..Default::default()
    };
    // Each analysis adds its section and notes.
    let cx = crate::analysis::DumpContext {
        site_index: &|g| ids.get(&g).copied(),
    };
    for a in crate::analysis::all() {
        a.dump(&cx, &mut p);
    }
    p
}

/// Write the profile atomically: a temporary file in the target directory, then rename (a
/// reader, or a later run, sees the old file or the whole new one, never a part). Not synced
/// to the disk: that made the program's exit wait for the device (gapbs bfs's 6.8 MB profile:
/// `fdatasync` 135 ms of its 260 ms between the last output and the exit), and a profile need
/// not survive a power cut. A path that exists and is not a regular file (`/dev/null`,
/// `/dev/stdout`, a FIFO) is written in place: renaming over it would replace the device with
/// a regular file.
pub(crate) fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomically_with(path, &|f| f.write_all(bytes))
}

/// [`write_atomically`], the contents written by `write` (the profile is serialised straight
/// into the file, through a buffer: the whole JSON text is never held, which was the dump's
/// largest allocation, 31 MB for 160,000 threads' rows).
pub(crate) fn write_atomically_with(
    path: &std::path::Path,
    write: &dyn Fn(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return write(&mut std::fs::OpenOptions::new().write(true).open(path)?);
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", unsafe { libc::getpid() }));
    let r = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        write(&mut f)?;
        std::fs::rename(&tmp, path)
    })();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

/// Programs that build systems compile and run to probe the platform (autoconf's
/// `conftest`, CMake's `try_run` `cmTC_*`): they stay silent and leave no file behind unless
/// the user named an output path, so configure results and build trees are as with clang.
pub fn is_build_probe(exe: &str) -> bool {
    let name = exe.rsplit('/').next().unwrap_or(exe);
    name.starts_with("conftest") || name.starts_with("cmTC_")
}

pub fn dump(trigger: &str) {
    // A setuid or setgid program writes no profile: every place it could go is the caller's.
    if crate::secure::on() {
        return;
    }
    // What libc allocates for the dump is not the program's; an `abort` inside it is not a
    // second final dump.
    let _rt = crate::threads::RtGuard::enter();
    let _g = DUMPING.lock();
    if !options::given("out") && is_build_probe(&counts::exe_path()) {
        if options::get().verbose {
            stderr_line("profcc: a build system's probe program: no profile (set PROFCC_OPTIONS=out=PATH to keep one)");
        }
        return;
    }
    let mut p = build_profile(trigger);
    let on_stderr = match options::get().summary {
        options::Summary::Always => true,
        options::Summary::Never => false,
        options::Summary::Auto => stderr_is_start_terminal(),
    };
    let lines = match options::get().summary {
        options::Summary::Never => Vec::new(),
        _ => summary(&p),
    };
    if !on_stderr {
        p.exit_summary = lines.clone();
    }
    let mut written: Option<String> = None;
    if options::get().write {
        let json = |f: &mut dyn Write| -> std::io::Result<()> {
            let mut b = std::io::BufWriter::with_capacity(1 << 16, f);
            serde_json::to_writer(&mut b, &p).map_err(std::io::Error::other)?;
            b.flush()
        };
        let target = expand(options::get().out.as_str(), p.pid, &p.host, &p.exe, p.rank);
        match write_atomically_with(std::path::Path::new(&target), &json) {
            Ok(()) => written = Some(target),
            Err(e) => {
                let tmpdir = crate::env("TMPDIR")
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| "/tmp".into());
                let base = std::path::Path::new(&target)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned());
                let fallback = std::path::Path::new(&tmpdir)
                    .join(base.unwrap_or_else(|| format!("profcc.{}.json", p.pid)));
                match write_atomically_with(&fallback, &json) {
                    Ok(()) => {
                        stderr_line(&format!(
                            "profcc: cannot write {target} ({e}); profile written to {} instead (set PROFCC_OPTIONS=out=DIR/profcc.%e.%p.json)",
                            fallback.display()
                        ));
                        written = Some(fallback.display().to_string());
                    }
                    Err(e2) => stderr_line(&format!(
                        "profcc: cannot write the profile to {target} ({e}) nor to {} ({e2}); set PROFCC_OPTIONS=out=PATH to a writable place",
                        fallback.display()
                    )),
                }
            }
        }
    }
    if options::get().verbose {
        stderr_line(&match (&written, options::get().write) {
            (Some(path), _) => format!("profcc: {trigger} profile written to {path}"),
            (None, false) => format!("profcc: {trigger} profile not written (write=0)"),
            (None, true) => format!("profcc: {trigger} profile lost (see the error above)"),
        });
    }
    if on_stderr {
        for line in &lines {
            stderr_line(line);
        }
        stderr_line(&match written {
            Some(path) => format!("profcc: profile {path}; full report: profcc report {path}"),
            None => "profcc: no profile written".into(),
        });
    }
}

fn human(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{:.1}K", n as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.1}M", n as f64 / 1e6),
        _ => format!("{:.1}G", n as f64 / 1e9),
    }
}

fn bytes(n: u64) -> String {
    match n {
        0..=1023 => format!("{n} B"),
        1024..=1_048_575 => format!("{:.1} KiB", n as f64 / 1024.0),
        1_048_576..=1_073_741_823 => format!("{:.1} MiB", n as f64 / 1048576.0),
        _ => format!("{:.1} GiB", n as f64 / 1073741824.0),
    }
}

/// At most 9 lines; the dump adds a tenth, where the profile went, when it prints them.
pub fn summary(p: &schema::Profile) -> Vec<String> {
    let t = &p.totals;
    let accesses = if p.counted_modules == Some(0) {
        "accesses not counted (built with PROFCC_INSTRUMENT=roi or none)".to_string()
    } else {
        format!(
            "{} accesses ({} reads, {} writes)",
            human(t.accesses),
            human(t.reads),
            human(t.writes)
        )
    };
    let mut out = vec![format!(
        "profcc: {accesses} by {} thread{}; {} allocations, {} live at peak",
        t.threads,
        if t.threads == 1 { "" } else { "s" },
        human(t.allocations),
        bytes(t.live_bytes_peak)
    )];
    let sections: Vec<crate::analysis::SummarySection> = crate::analysis::all()
        .iter()
        .filter_map(|a| a.summary(p, 3))
        .filter(|s| !s.lines.is_empty())
        .collect();
    // Nine lines in all: the header, each analysis's title and findings, then the hottest
    // lines. Every analysis that has something to say keeps its title and first finding
    // (the longest lists lose their last lines first), and one hot line stays.
    let mut sections = sections;
    let size = |v: &[crate::analysis::SummarySection]| -> usize {
        v.iter().map(|s| 1 + s.lines.len()).sum()
    };
    while size(&sections) > SUMMARY_LINES - 2 {
        let Some(k) = (0..sections.len())
            .filter(|&k| sections[k].lines.len() > 1)
            .max_by_key(|&k| (sections[k].lines.len(), k))
        else {
            break;
        };
        sections[k].lines.pop();
    }
    let room = SUMMARY_LINES.saturating_sub(1 + size(&sections)).max(1);
    let top = (options::get().top as usize)
        .min(if sections.is_empty() { 6 } else { 3 })
        .min(room);
    // Aggregate by file:line (unrolling splits one line into many sites).
    // A map, not a list search: sqlite3 has tens of thousands of sites.
    let mut lines: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
    for s in &p.sites {
        let key = if s.line == 0 {
            format!(
                "{} (in {}, no line)",
                s.file.rsplit('/').next().unwrap_or(""),
                s.function
            )
        } else {
            format!("{}:{}", s.file, s.line)
        };
        *lines.entry(key).or_default() += s.count;
    }
    let mut by_line: Vec<(String, u64)> = lines.into_iter().collect();
    by_line.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    for (key, n) in by_line.iter().take(top) {
        let pct = if t.accesses > 0 {
            100.0 * *n as f64 / t.accesses as f64
        } else {
            0.0
        };
        out.push(format!(
            "profcc:   {:>8} accesses ({pct:4.1}%) at {key}",
            human(*n)
        ));
    }
    for s in sections {
        out.push(format!("profcc: {}", s.title));
        out.extend(s.lines.into_iter().map(|l| format!("profcc: {l}")));
    }
    out.truncate(SUMMARY_LINES);
    out
}

/// Lines of the exit summary before the line naming the profile.
const SUMMARY_LINES: usize = 9;

#[cfg(test)]
mod tests {
    #[test]
    fn build_probes_are_recognised() {
        assert!(super::is_build_probe("/tmp/x/conftest"));
        assert!(super::is_build_probe(
            "/b/CMakeFiles/CMakeScratch/TryCompile-1/cmTC_8a2f1"
        ));
        assert!(!super::is_build_probe("/usr/bin/myconftest"));
        assert!(!super::is_build_probe("/usr/bin/prog"));
    }

    #[test]
    fn expand_pattern() {
        assert_eq!(
            super::expand("a.%e.%p.%h.%%.json", 42, "box", "/usr/bin/prog", None),
            "a.prog.42.box.%.json"
        );
        assert_eq!(
            super::expand("out/prof.%r.%h.json", 42, "node7", "/x/prog", Some(3)),
            "out/prof.3.node7.json"
        );
        // No launcher rank: the pid, marked as such.
        assert_eq!(
            super::expand("prof.%r.json", 42, "box", "/x/prog", None),
            "prof.pid42.json"
        );
        assert_eq!(super::expand("a%q%", 1, "h", "e", Some(0)), "a%q%");
    }

    #[test]
    fn rank_from_launcher_environment() {
        use super::{from_env, RANK_VARS, SIZE_VARS};
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(from_env(RANK_VARS, env(&[])), None);
        assert_eq!(
            from_env(RANK_VARS, env(&[("OMPI_COMM_WORLD_RANK", "5")])),
            Some(5)
        );
        assert_eq!(from_env(RANK_VARS, env(&[("PMI_RANK", "2")])), Some(2));
        assert_eq!(from_env(RANK_VARS, env(&[("PMIX_RANK", "7")])), Some(7));
        assert_eq!(
            from_env(RANK_VARS, env(&[("MV2_COMM_WORLD_RANK", "1")])),
            Some(1)
        );
        assert_eq!(from_env(RANK_VARS, env(&[("SLURM_PROCID", "9")])), Some(9));
        // Open MPI's own variable wins over Slurm's (mpirun inside an allocation).
        assert_eq!(
            from_env(
                RANK_VARS,
                env(&[("SLURM_PROCID", "0"), ("OMPI_COMM_WORLD_RANK", "3")])
            ),
            Some(3)
        );
        // A value that is not a number is skipped.
        assert_eq!(
            from_env(RANK_VARS, env(&[("PMI_RANK", "x"), ("SLURM_PROCID", "4")])),
            Some(4)
        );
        assert_eq!(
            from_env(SIZE_VARS, env(&[("OMPI_COMM_WORLD_SIZE", "4")])),
            Some(4)
        );
        assert_eq!(
            from_env(SIZE_VARS, env(&[("SLURM_NTASKS", "16")])),
            Some(16)
        );
    }
}

#[cfg(test)]
mod atomic_write_tests {
    use super::write_atomically;

    /// A profile replaces an existing file whole (a reader sees the old or the new bytes,
    /// never a mix), leaves no temporary behind, and a failed write leaves nothing either.
    #[test]
    fn written_atomically_replaces_whole_files() {
        let dir = std::env::temp_dir().join(format!("profcc-rt-atomic-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("p.json");
        std::fs::write(&target, b"old profile, longer than the new one").unwrap();
        write_atomically(&target, b"{\"new\":1}").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"{\"new\":1}");
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["p.json"], "no temporary file stays behind");
        assert!(write_atomically(&dir.join("missing/p.json"), b"x").is_err());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        // Not a regular file (a pipe, /dev/stdout): written in place, never replaced.
        write_atomically(std::path::Path::new("/dev/null"), b"x").unwrap();
        assert!(!std::fs::metadata("/dev/null").unwrap().is_file());
        // A profile whose serialisation fails half-way (written straight into the file)
        // leaves the old file and no temporary.
        let failed = super::write_atomically_with(&target, &|f| {
            f.write_all(b"{\"half\":")?;
            Err(std::io::Error::other("serialisation failed"))
        });
        assert!(failed.is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"{\"new\":1}");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
