//! Running a plan: finding clang, pass-through by `exec`, compile jobs (frontend → instrument →
//! codegen → rename into place), the link with profcc's runtime, temporaries in `$TMPDIR`.

use crate::args::{quote_gnu, quote_sh};
use crate::plan::{Build, Job, LinkArg, Reason};
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Set in the environment of every clang profcc runs; seeing it means profcc is nested.
pub const NESTED_ENV: &str = "PROFCC_NESTED";

/// The runtime's link arguments after the archive path. Only libraries the runtime needs:
/// anything more also resolves the program's own symbols, so a link that fails with clang-22
/// (e.g. `log` without `-lm`) would succeed, and autoconf's `AC_SEARCH_LIBS` would find
/// "none required" where clang-22 needs the library (configure results would differ).
/// No `-lpthread -ldl`: glibc >= 2.34 has both in libc (libpthread.a/libdl.a are empty), and
/// CMake would record them as implicit link libraries of the compiler.
/// The memory-policy calls the NUMA analysis wraps (rt/src/analyses/numa/wrap.c), in links that name
/// libnuma ([`links_libnuma`]): `--wrap` redirects only the program's own references. A
/// definition of `mbind` in the runtime instead would let a program that calls it link without
/// libnuma, where clang-22 fails (autoconf's `AC_SEARCH_LIBS([mbind], [numa])` would find
/// "none required"). libnuma's allocators are wrapped at the program's call: their own mbind
/// calls happen inside libnuma, where no wrapper sees them.
pub const NUMA_WRAPPED: &[&str] = &[
    "mbind",
    "set_mempolicy",
    "move_pages",
    "numa_alloc_interleaved",
    "numa_alloc_interleaved_subset",
    "numa_alloc_onnode",
    "numa_alloc_local",
    "numa_alloc",
    "numa_interleave_memory",
    "numa_tonode_memory",
];

/// OpenMP's waits, wrapped in links that use OpenMP ([`links_openmp`]) for the NUMA analysis's
/// migration risk (rt/src/analyses/numa/wrap.c), the same reasoning as [`NUMA_WRAPPED`]: libomp's
/// barrier (`__kmpc_barrier`, which clang calls at an explicit barrier and after a
/// worksharing loop without `nowait`), critical sections (`#pragma omp critical`) and the
/// program's own OpenMP locks.
pub const OMP_WRAPPED: &[&str] = &[
    "__kmpc_barrier",
    "__kmpc_critical",
    "__kmpc_critical_with_hint",
    "__kmpc_end_critical",
    "omp_set_lock",
    "omp_set_nest_lock",
];

pub const RUNTIME_LINK_FLAGS: &[&str] = &[
    "-Wl,-u,__profcc_force_link",
    "-Wl,--export-dynamic-symbol=__profcc_*",
];

/// The link names libnuma: `-lnuma` (also `-l numa`, `-l:libnuma.so.1`), or the library's
/// path (CMake passes `/usr/lib/.../libnuma.so`).
pub fn links_libnuma(args: &[String]) -> bool {
    args.iter().enumerate().any(|(i, a)| {
        let file = a.rsplit('/').next().unwrap_or(a);
        a == "-lnuma"
            || (a == "-l" && args.get(i + 1).is_some_and(|n| n == "numa"))
            || a.starts_with("-l:libnuma.")
            || file == "libnuma.a"
            || file == "libnuma.so"
            || file.starts_with("libnuma.so.")
    })
}

/// The link uses LLVM's OpenMP runtime: `-fopenmp` (clang-22 links libomp), `-lomp`, or
/// libomp's path.
pub fn links_openmp(args: &[String]) -> bool {
    args.iter().any(|a| {
        let file = a.rsplit('/').next().unwrap_or(a);
        a == "-fopenmp"
            || a == "-fopenmp=libomp"
            || a == "-lomp"
            || file == "libomp.so"
            || file.starts_with("libomp.so.")
    })
}

/// The linker response file that names the runtime archive (in the build's temp directory).
/// The link passes `-Wl,@FILE` instead of the archive's path: CMake parses the `-v` link
/// line of its compiler probe and records every `/path/lib*.a` as an implicit link library of
/// the compiler (`CMAKE_C_IMPLICIT_LINK_LIBRARIES`, which FindOpenMP and mixed-language links
/// then use); an `@file` it ignores, as clang-22's own link line has no such archive.
/// (`-Wl,`, not `-Xlinker @FILE`: clang expands every argument that starts with `@` itself.)
const RUNTIME_RSP: &str = "runtime.rsp";

/// A static link: the runtime's `pthread_create` interposer leaves glibc's (a weak alias of
/// `__pthread_create` in libc.a) out of the link, and there is no `dlsym(RTLD_NEXT)` to find it;
/// pull it in so the interposer can call it.
pub const STATIC_LINK_FLAGS: &[&str] = &[
    "-Wl,-u,__pthread_create",
    // The wait interposers' real functions (rt/src/analyses/numa/waits.h).
    "-Wl,-u,__pthread_cond_wait",
    "-Wl,-u,__pthread_cond_timedwait",
    "-Wl,-u,__pthread_barrier_wait",
    "-Wl,-u,__new_sem_wait",
    "-Wl,-u,__pthread_mutex_lock",
    "-Wl,-u,__pthread_mutex_trylock",
    "-Wl,-u,__pthread_mutex_unlock",
];

static INTERRUPTED: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    INTERRUPTED.store(sig, std::sync::atomic::Ordering::SeqCst);
}

/// While a build runs, SIGINT/SIGTERM/SIGHUP only mark the build interrupted: the running clang
/// gets the terminal's signal itself, profcc stops after it, removes its temporaries and then
/// dies of the same signal (`finish_interrupted`).
pub fn catch_signals() {
    for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installing a handler that only stores to an atomic.
        unsafe { libc::signal(s, on_signal as *const () as libc::sighandler_t) };
    }
}

fn interrupted() -> bool {
    INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) != 0
}

/// Die of the signal that interrupted the build, if any (after temporaries are gone).
pub fn finish_interrupted() {
    let s = INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst);
    if s != 0 {
        // SAFETY: restoring the default action and raising a signal.
        unsafe {
            libc::signal(s, libc::SIG_DFL);
            libc::raise(s);
        }
    }
}

pub fn env_on(name: &str) -> bool {
    matches!(std::env::var(name), Ok(v) if !v.is_empty() && v != "0")
}

/// One line to `PROFCC_LOG` (`1` = stderr, anything else = a file to append to).
pub fn log(msg: &str) {
    let Ok(dest) = std::env::var("PROFCC_LOG") else {
        return;
    };
    if dest.is_empty() || dest == "0" {
        return;
    }
    let line = format!("profcc[{}]: {msg}\n", std::process::id());
    if dest == "1" {
        let _ = std::io::stderr().write_all(line.as_bytes());
    } else if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&dest)
    {
        let _ = f.write_all(line.as_bytes());
    }
}

/// The clang to run: a program and arguments that go before the user's.
#[derive(Debug, Clone)]
pub struct Clang {
    pub path: PathBuf,
    pub pre: Vec<String>,
}

impl Clang {
    pub fn command(&self) -> Command {
        let mut c = Command::new(&self.path);
        c.args(&self.pre).env(NESTED_ENV, "1");
        c
    }
    fn display(&self) -> String {
        let mut s = quote_sh(&self.path.to_string_lossy());
        for p in &self.pre {
            s.push(' ');
            s.push_str(&quote_sh(p));
        }
        s
    }
}

/// Look a program up like `execvp` does (a name with a slash is taken as a path); only an
/// executable file is found.
pub fn which(prog: &str) -> Option<PathBuf> {
    which::which(prog).ok()
}

fn is_executable(p: &Path) -> bool {
    p.is_absolute() && which::which(p).is_ok()
}

pub fn self_exe() -> Option<PathBuf> {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.canonicalize().ok())
}

pub fn is_self(p: &Path) -> bool {
    match (p.canonicalize(), self_exe()) {
        (Ok(a), Some(b)) => a == b,
        _ => false,
    }
}

/// Find the clang to run. `named` is the compiler of prefix mode, else `PROFCC_CLANG`, else
/// `clang-22`/`clang++-22`. Errors are one line naming the fix.
pub fn find_clang(named: Option<&str>, cxx: bool) -> Result<Clang, String> {
    let default = if cxx { "clang++-22" } else { "clang-22" };
    let fallback = PathBuf::from(format!("/usr/bin/{default}"));
    let env = std::env::var("PROFCC_CLANG").ok().filter(|s| !s.is_empty());
    let (wanted, origin) = match (named, &env) {
        (Some(n), _) => (n.to_string(), "the compiler named on the command line"),
        (None, Some(e)) => (e.clone(), "PROFCC_CLANG"),
        (None, None) => (default.to_string(), "PATH"),
    };
    let Some(mut path) = which(&wanted) else {
        return Err(if origin == "PROFCC_CLANG" {
            format!("profcc: error: PROFCC_CLANG={wanted} is not an executable; point it at a clang-22 binary or unset it")
        } else {
            format!("profcc: error: {wanted} not found ({origin}); install it with `cargo xtask setup` (apt-get install clang-22) or set PROFCC_CLANG=/path/to/clang-22")
        });
    };
    let mut pre = Vec::new();
    if named.is_none() && env.is_some() && cxx {
        // PROFCC_CLANG names the C driver; use its C++ sibling, or the C driver in g++ mode.
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let sib = path.with_file_name(name.replacen("clang", "clang++", 1));
        if name.contains("clang") && !name.contains("clang++") && is_executable(&sib) {
            path = sib;
        } else if !name.contains("++") {
            pre.push("--driver-mode=g++".to_string());
        }
    }
    if is_self(&path) {
        log(&format!(
            "{} resolves to profcc itself; using {}",
            path.display(),
            fallback.display()
        ));
        if is_executable(&fallback) && !is_self(&fallback) {
            return Ok(Clang {
                path: fallback,
                pre: Vec::new(),
            });
        }
        return Err(format!(
            "profcc: error: {} resolves to profcc itself (recursion); set PROFCC_CLANG=/path/to/real/clang-22",
            path.display()
        ));
    }
    Ok(Clang { path, pre })
}

/// Is this compiler call a configure probe? autoconf/libtool name their files `conftest*`;
/// CMake's try_compile and compiler identification run under `CMakeFiles/`; Meson's checks
/// under `meson-private/`. Probes compare compiler output (CMake's check_*_compiler_flag
/// FAIL_REGEX, autoconf with AC_LANG_WERROR, libtool's `-c -o` check), so profcc adds no
/// line to it.
pub fn configure_probe(args: &[String]) -> bool {
    let cwd = std::env::current_dir().unwrap_or_default();
    let cwd = cwd.to_string_lossy();
    cwd.contains("/CMakeFiles/")
        || cwd.contains("/meson-private/")
        || args.iter().any(|a| {
            Path::new(a.strip_prefix("-o").unwrap_or(a))
                .file_name()
                .is_some_and(|f| f.to_string_lossy().starts_with("conftest"))
        })
}

/// A pass-through that compiles C/C++ code the user expects to be profiled says so in one
/// line on stderr: which source, why (the `Reason`), what to do. Not for configure probes
/// (`configure_probe`); always in `PROFCC_LOG`.
pub fn notice_unprofiled(reason: Reason, detail: &str, args: &[String]) {
    let (Some(fix), Some(src)) = (reason.unprofiled_fix(), crate::plan::source_named(args)) else {
        return;
    };
    let what = if detail.is_empty() || detail == src || reason.describe().contains(detail) {
        reason.describe().to_string()
    } else {
        format!("{}: {detail}", reason.describe())
    };
    let src = if src == "-" { "<stdin>" } else { &src };
    let line = format!("profcc: note: {src} compiled by clang-22 without instrumentation, so no profile ({what}); {fix}");
    log(&line);
    if !configure_probe(args) {
        eprintln!("{line}");
    }
}

/// Replace this process with clang and the original arguments.
pub fn exec_clang(clang: &Clang, args: &[OsString], reason: Reason, detail: &str) -> i32 {
    log(&format!(
        "pass-through ({}{}{detail})",
        reason.describe(),
        if detail.is_empty() { "" } else { ": " }
    ));
    if env_on("PROFCC_DRY_RUN") {
        let mut line = clang.display();
        for a in args {
            line.push(' ');
            line.push_str(&quote_sh(&a.to_string_lossy()));
        }
        println!("profcc: pass-through ({}): {line}", reason.describe());
        return 0;
    }
    let err = clang.command().args(args).exec();
    eprintln!("profcc: error: cannot run {}: {err}", clang.path.display());
    1
}

/// `PROFCC_INSTRUMENT`'s families and what each builds in ([`instrument_options`]'s error
/// and `profcc --help` list them).
pub const FAMILIES: &[(&str, &str)] = &[
    ("accesses", "counts only"),
    ("sharing", "counts and cache-line sharing; the default"),
    ("numa", "counts and NUMA page checks"),
    ("roi", "region counters only"),
    ("roi-oracle", "region counters on every block"),
    (
        "none",
        "no checks: the runtime's allocation and thread records only",
    ),
];

/// Instrumentation options from `PROFCC_INSTRUMENT` (comma list; default `sharing`, which
/// includes `accesses`). None = `none`: compile through the pipeline without instrumenting.
pub fn instrument_options() -> Result<Option<profcc_passes::Options>, String> {
    parse_instrument(&std::env::var("PROFCC_INSTRUMENT").unwrap_or_default())
}

/// [`instrument_options`] of the variable's value `spec`.
fn parse_instrument(spec: &str) -> Result<Option<profcc_passes::Options>, String> {
    if spec.trim().is_empty() {
        return Ok(Some(profcc_passes::Options::default()));
    }
    let mut opts = profcc_passes::Options {
        accesses: false,
        sharing: false,
        numa: false,
        regions: Some(profcc_passes::Placement::Derived),
    };
    let mut none = false;
    for w in spec.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        match w {
            "accesses" => opts.accesses = true,
            "sharing" => {
                opts.accesses = true;
                opts.sharing = true;
            }
            "numa" => {
                opts.accesses = true;
                opts.numa = true;
            }
            "none" => none = true,
            // Region counters alone (their placement is in every mode).
            "roi" => {}
            "roi-oracle" => opts.regions = Some(profcc_passes::Placement::Oracle),
            other => {
                let valid: Vec<String> = FAMILIES
                    .iter()
                    .map(|(name, what)| format!("{name} ({what})"))
                    .collect();
                return Err(format!(
                    "profcc: error: PROFCC_INSTRUMENT: unknown family '{other}'; valid: {} (comma-separated)",
                    valid.join(", ")
                ));
            }
        }
    }
    Ok(if none { None } else { Some(opts) })
}

/// Whether compile jobs add `-fno-omit-frame-pointer`: the allocation stacks are walked by
/// frame pointer. Not in the ROI-only build (`PROFCC_INSTRUMENT=roi` or `roi-oracle` alone),
/// the mode for continuous use: its code stays the program's own (frame pointers cost sqlite's
/// query loop 6% more instructions), and the runtime, told so by the module
/// (`__profcc_no_frame_pointers`), keeps one frame per allocation stack. A bad
/// `PROFCC_INSTRUMENT` is reported by the build itself.
pub fn frame_pointers() -> bool {
    !matches!(instrument_options(), Ok(Some(o)) if !o.accesses)
}

/// The runtime archive beside the profcc executable.
pub fn runtime_archive() -> Result<PathBuf, String> {
    let exe = self_exe().ok_or("profcc: error: cannot locate the profcc executable")?;
    let p = exe.with_file_name("libprofcc_rt.a");
    if !p.is_file() {
        return Err(format!(
            "profcc: error: runtime library {} is missing; build it with `cargo xtask build`",
            p.display()
        ));
    }
    // In a build tree, cargo's staticlib beside it (libprofcc_rt_raw.a) is what `cargo xtask
    // build` made it from: a newer one means a plain `cargo build` rebuilt the runtime since.
    let raw = exe.with_file_name("libprofcc_rt_raw.a");
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if let (Some(r), Some(a)) = (mtime(&raw), mtime(&p)) {
        if r > a {
            return Err(format!(
                "profcc: error: runtime library {} is older than {}; run `cargo xtask build`",
                p.display(),
                raw.display()
            ));
        }
    }
    Ok(p)
}

struct JobPaths {
    bc: PathBuf,
    inst: PathBuf,
    obj: PathBuf,
}

fn job_paths(tmp: &Path, i: usize, job: &Job) -> JobPaths {
    let stem: String = Path::new(&job.source)
        .file_stem()
        .map(|s| {
            s.to_string_lossy()
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect()
        })
        .unwrap_or_else(|| "src".into());
    let base = format!("{i}-{stem}");
    JobPaths {
        bc: tmp.join(format!("{base}.bc")),
        inst: tmp.join(format!("{base}.inst.bc")),
        obj: tmp.join(format!("{base}.{}", if job.asm { "s" } else { "o" })),
    }
}

/// Where codegen writes: a temporary renamed into place afterwards, or straight to the user's
/// output when that is stdout or not a regular file (`-o /dev/null`).
fn writes_direct(out: &str) -> bool {
    out == "-"
        || std::fs::metadata(out)
            .map(|m| !m.is_file())
            .unwrap_or(false)
}

/// profcc's headers (`profcc.h`: the region markers), beside the executable (`cargo xtask
/// build` puts them there). Searched after every directory of the user's and the system's
/// (`-idirafter`), so a header of the program's own of the same name wins. Left out of a
/// command that prints the search list (`frontend_cmd`).
fn include_dir() -> Option<PathBuf> {
    let dir = self_exe()?.with_file_name("include");
    dir.join("profcc.h").is_file().then_some(dir)
}

fn frontend_cmd(job: &Job, p: &JobPaths) -> Vec<String> {
    let mut v = job.frontend.clone();
    // Not when the compiler's search list is being read (`-v`, `-###`: CMake's and autotools'
    // compiler probes record it, and the build must see clang-22's own).
    let inspected = v.iter().any(|a| a == "-v" || a == "-###");
    if let Some(dir) = include_dir().filter(|_| !inspected) {
        v.extend(["-idirafter".to_string(), dir.display().to_string()]);
    }
    v.push("-c".into());
    if job.instrument {
        v.push("-emit-llvm".into());
    }
    if let Some(l) = &job.lang {
        v.extend(["-x".to_string(), l.clone()]);
    }
    v.push(job.source.clone());
    v.push("-o".into());
    v.push(if job.instrument {
        p.bc.display().to_string()
    } else {
        p.obj.display().to_string()
    });
    v
}

fn codegen_cmd(job: &Job, input: &Path, out: &str) -> Vec<String> {
    let mut v = job.codegen.clone();
    v.extend(
        [
            "-Xclang",
            "-disable-llvm-passes",
            "-Wno-unused-command-line-argument",
            if job.asm { "-S" } else { "-c" },
        ]
        .map(String::from),
    );
    v.push(input.display().to_string());
    v.push("-o".into());
    v.push(out.to_string());
    v
}

/// The link's arguments; `runtime` is the argument that names the runtime archive
/// (`runtime_link_arg`).
fn link_cmd(link: &[LinkArg], objs: &[PathBuf], runtime: Option<&str>) -> Vec<String> {
    let mut v: Vec<String> = link
        .iter()
        .map(|a| match a {
            LinkArg::Arg(s) => s.clone(),
            LinkArg::Object(i) => objs[*i].display().to_string(),
        })
        .collect();
    if let Some(rt) = runtime {
        v.push(rt.to_string());
        v.extend(RUNTIME_LINK_FLAGS.iter().map(|s| s.to_string()));
        if links_libnuma(&v) {
            v.extend(NUMA_WRAPPED.iter().map(|f| format!("-Wl,--wrap={f}")));
        }
        if links_openmp(&v) {
            v.extend(OMP_WRAPPED.iter().map(|f| format!("-Wl,--wrap={f}")));
        }
        // A statically linked, prefixed allocator the program calls (je_malloc...).
        let prefixed = crate::prefixed::link_flags(&v);
        v.extend(prefixed);
        if v.iter().any(|a| a == "-static" || a == "-static-pie") {
            v.extend(STATIC_LINK_FLAGS.iter().map(|f| f.to_string()));
        }
    }
    v
}

/// The link argument that names the runtime archive: `-Wl,@<tmp>/runtime.rsp`, after writing
/// that response file (`RUNTIME_RSP`).
fn runtime_link_arg(tmp: &Path, archive: &Path, dry: bool) -> Result<String, String> {
    let rsp = tmp.join(RUNTIME_RSP);
    if rsp.to_string_lossy().contains(',') {
        // `-Wl,` would split the path: name the archive itself (CMake then lists it).
        return Ok(archive.display().to_string());
    }
    let mut text = quote_gnu(&archive.display().to_string());
    // The marker stand-ins after it (`write_markers`): inside the response file, so build
    // systems that read the link line (CMake's implicit libraries) see clang-22's.
    if let Some(markers) = write_markers(tmp, dry) {
        text.push(' ');
        text.push_str(&quote_gnu(&markers.display().to_string()));
    }
    if dry {
        println!("  {} contains: {text}", rsp.display());
    } else if let Err(e) = std::fs::write(&rsp, format!("{text}\n")) {
        return Err(format!(
            "profcc: error: cannot write {}: {e}",
            rsp.display()
        ));
    }
    Ok(format!("-Wl,@{}", rsp.display()))
}

/// A shared link gets the hook stubs (hooks/stub.c, `profcc_passes::STUB_ARCHIVE`) last, so an
/// instrumented library links with `-z defs` and loads without the runtime, which only
/// executables link. An archive: a library without instrumented code takes nothing from it.
/// A shared link also gets the marker stand-ins (hooks/markers.c,
/// `profcc_passes::MARKER_ARCHIVE`), last, for a library that calls LIKWID's, Caliper's or
/// PAPI's markers without linking the library; an executable gets them in the runtime's
/// response file (`runtime_link_arg`).
fn with_hook_stubs(mut args: Vec<String>, shared: bool, tmp: &Path, dry: bool) -> Vec<String> {
    if shared {
        if let Some(markers) = write_markers(tmp, dry) {
            args.push(markers.display().to_string());
        }
        let stubs = tmp.join("libprofcc_stub.a");
        match if dry { Ok(()) } else { std::fs::write(&stubs, profcc_passes::STUB_ARCHIVE) } {
            Ok(()) => args.push(stubs.display().to_string()),
            Err(e) => eprintln!(
                "profcc: warning: cannot write {}: {e}; the library will load only into profcc-built programs",
                stubs.display()
            ),
        }
    }
    args
}

/// The marker stand-ins' archive written to the link's temporary directory (None, with a
/// warning, when it cannot be: a program calling those markers must then link the library).
fn write_markers(tmp: &Path, dry: bool) -> Option<PathBuf> {
    let markers = tmp.join("libprofcc_markers.a");
    match if dry {
        Ok(())
    } else {
        std::fs::write(&markers, profcc_passes::MARKER_ARCHIVE)
    } {
        Ok(()) => Some(markers),
        Err(e) => {
            eprintln!(
                "profcc: warning: cannot write {}: {e}; a program calling LIKWID, Caliper or PAPI markers must link the library",
                markers.display()
            );
            None
        }
    }
}

/// The link arguments that keep the program's native layout (`crate::layout`): the layout script
/// (executables with the runtime, and shared libraries, whose modules' `__profcc_site_base`
/// is runtime data too) and, for a dynamic executable, the filler PLT slots. Never fails the
/// link: what cannot be done is logged and left out.
fn with_native_layout(
    clang: &Clang,
    mut args: Vec<String>,
    objs: &[PathBuf],
    runtime: bool,
    shared: bool,
    tmp: &Path,
    dry: bool,
) -> Vec<String> {
    use crate::layout;
    if !runtime && !shared {
        return args;
    }
    if layout::user_script(&args) {
        log("native layout: the link has its own linker script; the runtime's data goes where ld puts orphan sections");
    } else {
        match if dry {
            Ok(tmp.join("profcc-layout.ld"))
        } else {
            layout::write_script(tmp)
        } {
            Ok(p) => args.push(format!("-Wl,-T,{}", p.display())),
            Err(e) => log(&format!(
                "native layout: cannot write the layout script: {e}"
            )),
        }
    }
    let has = |f: &str| args.iter().any(|a| a == f);
    if shared
        || !runtime
        || has("-static")
        || has("-static-pie")
        || has("-nostdlib")
        || has("-nodefaultlibs")
    {
        return args;
    }
    let pie = !(has("-no-pie") || has("-nopie"));
    let mut inputs: Vec<PathBuf> = objs.to_vec();
    inputs.extend(
        args.iter()
            .filter(|a| a.ends_with(".o") && !a.starts_with('-'))
            .map(PathBuf::from),
    );
    let imports = runtime_archive()
        .map(|a| layout::runtime_imports(&a))
        .unwrap_or_default();
    let mut lost: Vec<&str> = layout::interposers();
    lost.extend(imports.iter().map(String::as_str));
    if !layout::has_tls(&inputs) {
        args.push(layout::NATIVE_TLS_ABSENT.to_string());
    }
    let names = layout::plt_names(&inputs, pie, &lost);
    let n = layout::filler_count(names.len());
    log(&format!(
        "native layout: {} names the runtime defines or imports called through the PLT ({}), {n} filler slots",
        names.len(),
        names.iter().cloned().collect::<Vec<_>>().join(" ")
    ));
    if n == 0 {
        return args;
    }
    let s = tmp.join("profcc-plt-fill.s");
    let o = tmp.join("profcc-plt-fill.o");
    if dry {
        println!("  {} contains {n} filler calls", s.display());
        args.push(o.display().to_string());
        return args;
    }
    if let Err(e) = std::fs::write(&s, layout::filler_asm(n)) {
        log(&format!("native layout: cannot write {}: {e}", s.display()));
        return args;
    }
    let asm = [
        "-c".to_string(),
        s.display().to_string(),
        "-o".into(),
        o.display().to_string(),
    ];
    if run(clang, &asm, tmp) == 0 {
        args.push(o.display().to_string());
    } else {
        log("native layout: the filler object did not assemble; left out");
    }
    args
}

fn show(clang: &Clang, args: &[String]) -> String {
    let mut s = clang.display();
    for a in args {
        s.push(' ');
        s.push_str(&quote_sh(a));
    }
    s
}

/// Run clang; returns its exit code (1 when it could not run or died of a signal).
fn run(clang: &Clang, args: &[String], tmp: &Path) -> i32 {
    let total: usize = args.iter().map(|a| a.len() + 1).sum();
    let mut cmd = clang.command();
    if total > 100_000 {
        // Very long command lines go through a response file in the temp directory.
        let rsp = tmp.join(format!("args-{}.rsp", rand_suffix()));
        let text: Vec<String> = args.iter().map(|a| quote_gnu(a)).collect();
        if std::fs::write(&rsp, text.join("\n")).is_ok() {
            cmd.arg(format!("@{}", rsp.display()));
        } else {
            cmd.args(args);
        }
    } else {
        cmd.args(args);
    }
    log(&format!("run: {}", show(clang, args)));
    match cmd.status() {
        Ok(s) => s.code().unwrap_or(1),
        Err(e) => {
            eprintln!("profcc: error: cannot run {}: {e}", clang.path.display());
            1
        }
    }
}

fn rand_suffix() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    N.fetch_add(1, Ordering::Relaxed).to_string()
}

/// Move a finished temporary output into place atomically (rename, or copy into a hidden
/// temporary beside the target and rename when `$TMPDIR` is another file system).
fn install(from: &Path, to: &str) -> std::io::Result<()> {
    match std::fs::rename(from, to) {
        Ok(()) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc_exdev()) => {
            let dir = Path::new(to)
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let tmp = tempfile::Builder::new()
                .prefix(".profcc-")
                .tempfile_in(dir)?;
            std::fs::copy(from, tmp.path())?;
            tmp.persist(to).map_err(|e| e.error)?;
            Ok(())
        }
        Err(e) => Err(e),
    }
}

const fn libc_exdev() -> i32 {
    18 // EXDEV on Linux
}

fn remove_stale(out: &str) {
    if std::fs::metadata(out).map(|m| m.is_file()).unwrap_or(false) {
        let _ = std::fs::remove_file(out);
    }
}

/// Run a build plan. `orig` are the user's arguments as given (for a link-only call).
pub fn run_build(clang: &Clang, b: &Build, orig: &[String]) -> i32 {
    let opts = match instrument_options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    let runtime = if b.link.is_some() && b.runtime {
        match runtime_archive() {
            Ok(p) => Some(p),
            Err(e) => {
                eprintln!("{e}");
                return 1;
            }
        }
    } else {
        None
    };
    let dry = env_on("PROFCC_DRY_RUN");
    for n in &b.notices {
        eprintln!("{n}");
    }

    let tmpdir = if dry {
        None
    } else {
        match tempfile::Builder::new().prefix("profcc-").tempdir() {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!("profcc: error: cannot create a temporary directory in {}: {e}; set TMPDIR to a writable directory", std::env::temp_dir().display());
                return 1;
            }
        }
    };
    let tmp: PathBuf = tmpdir
        .as_ref()
        .map(|t| t.path().to_path_buf())
        .unwrap_or_else(|| PathBuf::from("$TMPDIR/profcc-XXXXXX"));
    let stats = env_on("PROFCC_STATS");

    let mut objs = Vec::new();
    let mut failed = 0;
    for (i, job) in b.jobs.iter().enumerate() {
        let p = job_paths(&tmp, i, job);
        objs.push(p.obj.clone());
        let direct = job.output.as_deref().filter(|o| writes_direct(o));
        if dry {
            println!(
                "[job {}] {} -> {}{}",
                i + 1,
                job.source,
                job.output.as_deref().unwrap_or("(temporary object)"),
                if job.instrument {
                    ""
                } else {
                    " (not instrumented)"
                }
            );
            println!("  {}", show(clang, &frontend_cmd(job, &p)));
            if job.instrument {
                let cg_in = match &opts {
                    Some(o) => {
                        println!(
                            "  instrument {} -> {} (accesses: {})",
                            p.bc.display(),
                            p.inst.display(),
                            o.accesses
                        );
                        &p.inst
                    }
                    None => &p.bc,
                };
                let out = direct
                    .map(String::from)
                    .unwrap_or_else(|| p.obj.display().to_string());
                println!("  {}", show(clang, &codegen_cmd(job, cg_in, &out)));
            }
            if let (Some(o), None) = (&job.output, direct) {
                println!("  rename {} -> {o}", p.obj.display());
            }
            continue;
        }
        let mut rc = run_job(clang, job, &p, opts.as_ref(), direct, stats, &tmp);
        if interrupted() {
            rc = 1;
        }
        if rc != 0 {
            if let Some(o) = &job.output {
                remove_stale(o);
            }
            if failed == 0 {
                failed = rc;
            }
        }
    }
    if failed != 0 || interrupted() {
        keep_temps(tmpdir);
        return failed.max(1);
    }
    let mut rc = 0;
    if let Some(link) = &b.link {
        let rt = match runtime.as_deref().map(|a| runtime_link_arg(&tmp, a, dry)) {
            Some(Ok(p)) => Some(p),
            Some(Err(e)) => {
                eprintln!("{e}");
                keep_temps(tmpdir);
                return 1;
            }
            None => None,
        };
        let args = if b.jobs.is_empty() {
            link_cmd(
                &orig.iter().cloned().map(LinkArg::Arg).collect::<Vec<_>>(),
                &objs,
                rt.as_deref(),
            )
        } else {
            link_cmd(link, &objs, rt.as_deref())
        };
        let args = with_hook_stubs(args, b.shared, &tmp, dry);
        let args = with_native_layout(clang, args, &objs, rt.is_some(), b.shared, &tmp, dry);
        if dry {
            println!("[link]\n  {}", show(clang, &args));
        } else {
            rc = run(clang, &args, &tmp);
        }
    }
    keep_temps(tmpdir);
    rc
}

fn keep_temps(t: Option<tempfile::TempDir>) {
    if let Some(t) = t {
        if env_on("PROFCC_KEEP_TEMPS") {
            let p = t.keep();
            eprintln!("profcc: temporaries kept in {}", p.display());
        }
    }
}

fn run_job(
    clang: &Clang,
    job: &Job,
    p: &JobPaths,
    opts: Option<&profcc_passes::Options>,
    direct: Option<&str>,
    stats: bool,
    tmp: &Path,
) -> i32 {
    let rc = run(clang, &frontend_cmd(job, p), tmp);
    if rc != 0 || !job.instrument || interrupted() {
        return rc;
    }
    let mut cg_in = p.bc.clone();
    if let Some(o) = opts {
        match profcc_passes::instrument_file(&p.bc, &p.inst, o) {
            Ok(s) => {
                cg_in = p.inst.clone();
                if stats {
                    let counts: Vec<String> =
                        s.counts.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    eprintln!("profcc: stats: {}: {}", job.source, counts.join(" "));
                }
            }
            Err(e) => {
                eprintln!(
                    "profcc: warning: {}: instrumentation failed ({e}); compiled without it",
                    job.source
                );
            }
        }
    }
    if interrupted() {
        return 1;
    }
    let out = direct
        .map(String::from)
        .unwrap_or_else(|| p.obj.display().to_string());
    let rc = run(clang, &codegen_cmd(job, &cg_in, &out), tmp);
    if rc != 0 || direct.is_some() || interrupted() {
        return rc;
    }
    if let Some(o) = &job.output {
        if let Err(e) = install(&p.obj, o) {
            eprintln!("profcc: error: cannot write {o}: {e}");
            return 1;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_family_is_one_the_build_takes() {
        for (name, _) in FAMILIES {
            assert!(parse_instrument(name).is_ok(), "{name}");
        }
        let e = parse_instrument("sharing,bogus").unwrap_err();
        for (name, what) in FAMILIES {
            assert!(e.contains(&format!("{name} ({what})")), "{e}");
        }
        assert!(parse_instrument("none").unwrap().is_none());
    }
}
