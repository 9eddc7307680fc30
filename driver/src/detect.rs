//! `profcc detect-allocator`: run the allocator probe (allocator-probe/) under an allocator
//! and write its description (TOML, docs/allocators.md).
//!
//! - no option: the standalone probe, under the system's malloc (glibc);
//! - `--preload LIB.so`: the standalone probe with `LD_PRELOAD=LIB.so`; a library without a
//!   `malloc` but with a known API of its own (`scalable_malloc`: tbbmalloc; `je_malloc`,
//!   `mi_malloc`, `tc_malloc`) is measured through that API;
//! - `--exe PROGRAM`: PROGRAM itself with the preloadable probe, whose constructor measures
//!   the malloc PROGRAM runs with before its main and ends it. A malloc statically linked into
//!   PROGRAM and not exported (or `je_`-prefixed, as redis links jemalloc) is named to the
//!   probe by its address in PROGRAM's file (the symbol table); the probe adds the load bias.
//!
//! The kernel and lock channels come from the undefined dynamic symbols of the file that
//! defines the malloc in use. Bad input: one line on stderr naming the problem and the fix,
//! exit code 2; the output file is written beside and renamed, never left half-written.

use object::{Object, ObjectSymbol};
use profcc_allocator_probe as probe;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(clap::Args, Debug)]
pub struct DetectArgs {
    /// Measure the allocator of this shared library (preloaded into the probe).
    #[arg(long, value_name = "LIB.so")]
    pub preload: Option<PathBuf>,
    /// Measure the allocator this program runs with (its libraries' or its own, statically
    /// linked one; the program's main does not run).
    #[arg(long, value_name = "PROGRAM")]
    pub exe: Option<PathBuf>,
    /// Write the description to FILE instead of stdout.
    #[arg(short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Also time malloc and free by request size, size kind, address reuse and phase (one
    /// thread, two at once; fresh addresses in a batch, reused ones in a churn): the
    /// `[[bench]]` rows, this machine's figures, added to its last measurements in the cache
    /// (the report prices with each cell's median over them).
    #[arg(long)]
    pub bench: bool,
}

pub const ABOUT: &str =
    "Measure an allocator (the system's, --preload LIB.so or --exe PROGRAM's) and describe it in TOML";

/// A run of PROGRAM that never reaches the probe (it ignores LD_PRELOAD) is stopped after this.
const EXE_LIMIT: Duration = Duration::from_secs(60);

/// A failure: the message and the exit code.
struct Fail(String, i32);

fn usage(msg: String) -> Fail {
    Fail(msg, 2)
}

pub fn run(args: &DetectArgs) -> i32 {
    match detect(args) {
        Ok(()) => 0,
        Err(Fail(msg, code)) => {
            eprintln!("profcc detect-allocator: {msg}");
            code
        }
    }
}

fn detect(args: &DetectArgs) -> Result<(), Fail> {
    if args.preload.is_some() && args.exe.is_some() {
        return Err(usage(
            "--preload and --exe both given: one allocator at a time (drop one of them)".into(),
        ));
    }
    if let Some(out) = &args.output {
        let dir = out_dir(out);
        if !dir.is_dir() {
            return Err(usage(format!(
                "-o {}: directory {} does not exist; create it or write elsewhere",
                out.display(),
                dir.display()
            )));
        }
    }
    let d = describe(args.preload.as_deref(), args.exe.as_deref(), args.bench)?;
    if args.bench {
        keep_costs(&d);
    }
    write_out(args.output.as_deref(), &probe::to_toml(&d))
}

/// `--bench`: keep the measured rows as this machine's reference costs of the allocator
/// (`probe::costs_file`, beside the last `probe::COSTS_KEPT - 1` measurements; `profcc
/// report` prices switching with each cell's median over them). A cache that cannot be
/// written is said on stderr and changes nothing else.
fn keep_costs(d: &probe::Description) {
    let machine = profcc_analysis::sharing::machine_key(
        &std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default(),
        unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(0) as u32,
    );
    let Some(file) = probe::costs_file(
        std::env::var_os("XDG_CACHE_HOME").as_deref(),
        std::env::var_os("HOME").as_deref(),
    ) else {
        eprintln!("profcc detect-allocator: neither XDG_CACHE_HOME nor HOME is set; the reference costs are not kept");
        return;
    };
    let entry = probe::MachineCosts {
        machine: machine.clone(),
        allocator: d.name.clone(),
        version: d.version.clone(),
        object: d.object.clone(),
        measured_at: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |t| t.as_secs()),
        bench: d.bench.clone(),
    };
    let text = probe::costs_with(&std::fs::read_to_string(&file).unwrap_or_default(), entry);
    let r = file
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .map_err(|e| Fail(format!("cannot create {}: {e}", file.display()), 1))
        .and_then(|()| write_out(Some(&file), &text));
    match r {
        Ok(()) => eprintln!(
            "profcc detect-allocator: {} {}'s reference costs on {machine} kept in {}",
            d.name,
            d.version.clone().unwrap_or_default(),
            file.display()
        ),
        Err(Fail(e, _)) => eprintln!("profcc detect-allocator: reference costs not kept ({e})"),
    }
}

/// Run the probe under the system's allocator, `preload` or `exe`'s, and describe it.
fn describe(
    preload: Option<&Path>,
    exe: Option<&Path>,
    bench: bool,
) -> Result<probe::Description, Fail> {
    let here = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    let artefact = |name: &str| -> Result<PathBuf, Fail> {
        let p = here.join(name);
        if p.is_file() {
            Ok(p)
        } else {
            Err(usage(format!(
                "{} missing next to profcc: run `cargo xtask build`",
                p.display()
            )))
        }
    };
    // The probe (standalone, or preloaded into PROGRAM) inherits it.
    if bench {
        std::env::set_var("PROFCC_PROBE_BENCH", "1");
    } else {
        std::env::remove_var("PROFCC_PROBE_BENCH");
    }
    let t0 = Instant::now();
    let (text, mode, exe) = if let Some(lib) = preload {
        let lib = check_library(lib)?;
        let funcs = library_functions(&lib)?;
        let mut cmd = Command::new(artefact(probe::PROBE_EXE)?);
        cmd.env("LD_PRELOAD", &lib);
        set_funcs(&mut cmd, &funcs);
        let text = run_standalone(cmd, Some(&lib))?;
        (text, format!("preload {}", lib.display()), None)
    } else if let Some(exe) = exe {
        let exe = check_program(exe)?;
        let funcs = program_functions(&exe)?;
        let text = run_in_program(&exe, &artefact(probe::PROBE_SO)?, &funcs)?;
        (text, format!("exe {}", exe.display()), Some(exe))
    } else {
        let mut cmd = Command::new(artefact(probe::PROBE_EXE)?);
        cmd.env_remove("LD_PRELOAD");
        (run_standalone(cmd, None)?, "system".to_string(), None)
    };
    let wall_ms = t0.elapsed().as_secs_f64() * 1000.0;
    let mut obs = probe::parse(&text).map_err(|e| Fail(e, 1))?;
    // dladdr names a file as the loader opened it (/lib/... for /usr/lib/...; the program as
    // started): its real path.
    let object = match obs.object.as_deref() {
        Some("main") => exe.clone().unwrap_or_default(),
        Some(p) => std::fs::canonicalize(p).unwrap_or_else(|_| PathBuf::from(p)),
        None => PathBuf::new(),
    };
    if exe.as_ref() == Some(&object) {
        for s in static_symbols(&object) {
            if !obs.syms.contains(&s) {
                obs.syms.push(s);
            }
        }
    }
    obs.object = Some(object.display().to_string());
    let channels = probe::channels(&object.display().to_string(), &imports(&object));
    let run = probe::ProbeRun {
        mode,
        wall_ms: (wall_ms * 10.0).round() / 10.0,
        ..Default::default()
    };
    Ok(probe::describe(&obs, channels, run))
}

/// `profcc report`'s live probe (`profcc_report::LiveProbe`): describe the allocator a profile
/// names (its `object PATH` line) when no description of it ships: the probe preloaded with
/// that library, or run inside `program` when the allocator is the program's own (the
/// program's `main` does not run; a profcc runtime in it writes no profile). The result is
/// kept in the probe cache ([`probe_cache_file`]) and used again while the measured file keeps
/// its path, size and modification time; the second value says which.
pub fn live_probe(lines: &[String], program: &str) -> Result<(probe::Description, String), String> {
    let object = lines
        .iter()
        .find_map(|l| l.strip_prefix("object "))
        .filter(|o| *o != "?")
        .ok_or("the profile does not name the allocator's file")?;
    let same = |a: &str, b: &str| {
        a == b
            || matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y)
    };
    let own = object == "main" || same(object, program);
    let measured = Path::new(if own { program } else { object });
    let cache = probe_cache_file(measured);
    if let Some(f) = &cache {
        if let Some(d) = std::fs::read_to_string(f)
            .ok()
            .and_then(|t| probe::from_toml(&t).ok())
        {
            return Ok((d, format!("kept from an earlier report in {}", f.display())));
        }
    }
    let r = if own {
        describe(None, Some(measured), false)
    } else {
        describe(Some(measured), None, false)
    };
    let d = r.map_err(|Fail(msg, _)| msg)?;
    let kept = match &cache {
        None => "measured now; not kept (no XDG_CACHE_HOME or HOME)".to_string(),
        Some(f) => match f
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .map_err(|e| Fail(format!("cannot create {}: {e}", f.display()), 1))
            .and_then(|()| write_out(Some(f), &probe::to_toml(&d)))
        {
            Ok(()) => {
                if let Some(dir) = f.parent() {
                    prune_probe_cache(dir, f);
                }
                format!("measured now, kept in {}", f.display())
            }
            Err(Fail(e, _)) => format!("measured now; not kept ({e})"),
        },
    };
    Ok((d, kept))
}

/// Descriptions the probe cache keeps (about 2 KB each); past this, the least recently
/// written go.
pub const PROBE_CACHE_KEEP: usize = 64;

/// Remove the oldest descriptions of the probe cache `dir` beyond [`PROBE_CACHE_KEEP`] (never
/// `just_written`; files that are not descriptions are left alone). A description whose
/// allocator was rebuilt or upgraded is never read again (its key changed): it leaves the
/// cache this way.
fn prune_probe_cache(dir: &Path, just_written: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml") && p != just_written)
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .collect();
    if files.len() < PROBE_CACHE_KEEP {
        return;
    }
    files.sort();
    for (_, p) in &files[..files.len() + 1 - PROBE_CACHE_KEEP] {
        let _ = std::fs::remove_file(p);
    }
}

/// Where the live probe keeps its description of `measured` (an allocator library, or a
/// program with its own allocator): `$XDG_CACHE_HOME/profcc/allocators/` (else
/// `$HOME/.cache/...`), one file per path, size and modification time of the file, so a
/// rebuilt or upgraded allocator is measured again. None: no cache directory, or the file
/// cannot be read.
pub fn probe_cache_file(measured: &Path) -> Option<PathBuf> {
    let dir = match std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("HOME").filter(|d| !d.is_empty())?).join(".cache"),
    };
    let path = std::fs::canonicalize(measured).ok()?;
    let meta = std::fs::metadata(&path).ok()?;
    let mtime = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos();
    // FNV-1a: the same name from one profcc version to the next (std's hasher is not).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let key = format!("{}\0{}\0{mtime}", path.display(), meta.len());
    for b in key.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    let name = path.file_name()?.to_string_lossy().into_owned();
    Some(
        dir.join("profcc/allocators")
            .join(format!("{name}-{h:016x}.toml")),
    )
}

fn out_dir(out: &Path) -> PathBuf {
    match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Write beside and rename: the file is the whole description or not there at all.
fn write_out(out: Option<&Path>, text: &str) -> Result<(), Fail> {
    let Some(out) = out else {
        print!("{text}");
        return Ok(());
    };
    let fail = |e: std::io::Error| Fail(format!("cannot write {}: {e}", out.display()), 1);
    let mut tmp = tempfile::Builder::new()
        .prefix(".detect-allocator")
        .tempfile_in(out_dir(out))
        .map_err(fail)?;
    tmp.write_all(text.as_bytes()).map_err(fail)?;
    tmp.persist(out).map_err(|e| fail(e.error))?;
    Ok(())
}

fn read_elf(path: &Path, what: &str, fix: &str) -> Result<Vec<u8>, Fail> {
    let data = std::fs::read(path).map_err(|e| {
        usage(format!(
            "{what} {}: {}; {fix}",
            path.display(),
            if e.kind() == std::io::ErrorKind::NotFound {
                "no such file".to_string()
            } else {
                e.to_string()
            }
        ))
    })?;
    if !data.starts_with(b"\x7fELF") {
        return Err(usage(format!(
            "{what} {}: not an ELF file; {fix}",
            path.display()
        )));
    }
    Ok(data)
}

fn check_library(lib: &Path) -> Result<PathBuf, Fail> {
    let fix = "name an allocator's shared library, e.g. /usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
    read_elf(lib, "--preload", fix)?;
    // LD_PRELOAD wants a path with a slash (a bare name is searched for).
    std::fs::canonicalize(lib).map_err(|e| usage(format!("--preload {}: {e}", lib.display())))
}

/// The roles the probe needs, from a library without `malloc` but with an API of its own.
const APIS: &[(&str, [&str; 4])] = &[
    (
        "scalable_malloc",
        [
            "scalable_malloc",
            "scalable_free",
            "scalable_realloc",
            "scalable_msize",
        ],
    ),
    (
        "je_malloc",
        [
            "je_malloc",
            "je_free",
            "je_realloc",
            "je_malloc_usable_size",
        ],
    ),
    (
        "mi_malloc",
        ["mi_malloc", "mi_free", "mi_realloc", "mi_usable_size"],
    ),
    (
        "tc_malloc",
        ["tc_malloc", "tc_free", "tc_realloc", "tc_malloc_size"],
    ),
];
const ROLES: [&str; 4] = ["malloc", "free", "realloc", "usable"];

fn library_functions(lib: &Path) -> Result<Vec<(String, String)>, Fail> {
    let data = read_elf(lib, "--preload", "name an allocator's shared library")?;
    let file = object::File::parse(&*data).map_err(|e| {
        usage(format!(
            "--preload {}: cannot read it ({e}); name an allocator's shared library",
            lib.display()
        ))
    })?;
    let defined: Vec<String> = file
        .dynamic_symbols()
        .filter(|s| s.is_definition())
        .filter_map(|s| s.name().ok().map(str::to_string))
        .collect();
    let has = |n: &str| defined.iter().any(|d| d == n);
    if has("malloc") {
        return Ok(Vec::new());
    }
    for (key, names) in APIS {
        if has(key) && names.iter().all(|n| has(n)) {
            let mut f: Vec<(String, String)> = ROLES
                .iter()
                .zip(names)
                .map(|(r, n)| (r.to_string(), n.to_string()))
                .collect();
            if *key == "je_malloc" && has("je_mallctl") {
                f.push(("mallctl".into(), "je_mallctl".into()));
            }
            return Ok(f);
        }
    }
    Err(usage(format!(
        "--preload {}: defines no malloc (nor scalable_malloc, je_malloc, mi_malloc, tc_malloc): \
         not an allocator; name the library that defines malloc",
        lib.display()
    )))
}

fn set_funcs(cmd: &mut Command, funcs: &[(String, String)]) {
    if funcs.is_empty() {
        cmd.env_remove("PROFCC_PROBE_FUNCS");
    } else {
        let spec: Vec<String> = funcs.iter().map(|(r, n)| format!("{r}={n}")).collect();
        cmd.env("PROFCC_PROBE_FUNCS", spec.join(","));
    }
}

/// The standalone probe's output; a library ld.so would not preload is a usage error.
fn run_standalone(mut cmd: Command, lib: Option<&Path>) -> Result<String, Fail> {
    let out = cmd.stdin(Stdio::null()).output().map_err(|e| {
        Fail(
            format!("cannot run the probe {:?}: {e}", cmd.get_program()),
            1,
        )
    })?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if let Some(lib) = lib {
        // ld.so ignores a library it cannot open ("cannot be preloaded") and stops at one
        // whose dependencies it cannot load.
        let refused = stderr.lines().find(|l| {
            l.contains("cannot be preloaded") || l.contains("error while loading shared libraries")
        });
        if let Some(line) = refused {
            return Err(usage(format!(
                "--preload {}: the dynamic loader cannot load it ({}); name a shared library \
                 for this machine",
                lib.display(),
                line.trim()
            )));
        }
    }
    if !out.status.success() {
        let stdout = String::from_utf8_lossy(&out.stdout);
        // The probe's own refusal: the library lacks what it needs.
        if let (Some(lib), Some(e)) = (lib, stdout.lines().find_map(|l| l.strip_prefix("error "))) {
            return Err(usage(format!(
                "--preload {}: {e}; the probe needs malloc, free and malloc_usable_size from one library",
                lib.display()
            )));
        }
        return Err(Fail(
            format!(
                "the probe failed ({}): {}",
                out.status,
                stderr.lines().last().unwrap_or("")
            ),
            1,
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn check_program(exe: &Path) -> Result<PathBuf, Fail> {
    let fix = "name a dynamically linked executable";
    let data = read_elf(exe, "--exe", fix)?;
    let file = object::File::parse(&*data).map_err(|e| {
        usage(format!(
            "--exe {}: cannot read it ({e}); {fix}",
            exe.display()
        ))
    })?;
    if file.kind() != object::ObjectKind::Executable && file.kind() != object::ObjectKind::Dynamic {
        return Err(usage(format!(
            "--exe {}: not an executable; {fix}",
            exe.display()
        )));
    }
    if file.section_by_name(".interp").is_none() {
        return Err(usage(format!(
            "--exe {}: no dynamic loader (statically linked, or a shared library), the probe \
             cannot be loaded into it; link it dynamically (without -static), or name an \
             allocator's library with --preload",
            exe.display()
        )));
    }
    std::fs::canonicalize(exe).map_err(|e| usage(format!("--exe {}: {e}", exe.display())))
}

/// A malloc PROGRAM defines but does not export, or a prefixed API linked into it (`je_`
/// as redis links jemalloc, `mi_`, `tc_`, `scalable_`): the roles by their addresses in the
/// file (`@HEX`). Empty: the dynamic loader finds malloc.
fn program_functions(exe: &Path) -> Result<Vec<(String, String)>, Fail> {
    let data = read_elf(exe, "--exe", "name a dynamically linked executable")?;
    let file = object::File::parse(&*data)
        .map_err(|e| usage(format!("--exe {}: cannot read it ({e})", exe.display())))?;
    let exported = file
        .dynamic_symbols()
        .any(|s| s.is_definition() && s.name() == Ok("malloc"));
    if exported {
        return Ok(Vec::new());
    }
    let address = |name: &str| -> Option<u64> {
        file.symbols()
            .chain(file.dynamic_symbols())
            .find(|s| {
                s.is_definition() && s.is_global() && s.name() == Ok(name) && s.address() != 0
            })
            .map(|s| s.address())
    };
    let plain = ["malloc", "free", "realloc", "malloc_usable_size"];
    for names in std::iter::once(&plain).chain(APIS.iter().map(|(_, n)| n)) {
        let prefix = names[0].strip_suffix("malloc").unwrap_or("");
        let addrs: Vec<Option<u64>> = names.iter().map(|n| address(n)).collect();
        if addrs[0].is_none() {
            continue;
        }
        if addrs.iter().any(Option::is_none) {
            return Err(usage(format!(
                "--exe {}: defines {prefix}malloc but not all of {}: the probe needs them; \
                 probe the allocator's library with --preload instead",
                exe.display(),
                names.join(", ")
            )));
        }
        let mut f: Vec<(String, String)> = ROLES
            .iter()
            .zip(&addrs)
            .map(|(r, a)| (r.to_string(), format!("@{:x}", a.unwrap())))
            .collect();
        if let Some(a) = address(&format!("{prefix}mallctl")) {
            f.push(("mallctl".into(), format!("@{a:x}")));
        }
        return Ok(f);
    }
    Ok(Vec::new())
}

/// PROGRAM with the preloaded probe; its observations come through a temporary file.
fn run_in_program(exe: &Path, so: &Path, funcs: &[(String, String)]) -> Result<String, Fail> {
    let tmp = tempfile::NamedTempFile::new()
        .map_err(|e| Fail(format!("cannot create a temporary file: {e}"), 1))?;
    let mut cmd = Command::new(exe);
    cmd.env("LD_PRELOAD", so)
        .env("PROFCC_PROBE_OUT", tmp.path())
        // A profcc-built PROGRAM: its runtime must not write a profile of the probe's run.
        .env("PROFCC_OPTIONS", "write=0:summary=0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    set_funcs(&mut cmd, funcs);
    let mut child = cmd
        .spawn()
        .map_err(|e| usage(format!("--exe {}: cannot run it ({e})", exe.display())))?;
    let t0 = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if t0.elapsed() < EXE_LIMIT => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Fail(
                    format!(
                        "--exe {}: the probe did not end it within {}s (does it ignore LD_PRELOAD, e.g. setuid?)",
                        exe.display(),
                        EXE_LIMIT.as_secs()
                    ),
                    1,
                ));
            }
        }
    };
    let text = std::fs::read_to_string(tmp.path()).unwrap_or_default();
    if text.is_empty() {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut e, &mut err);
        }
        return Err(Fail(
            format!(
                "--exe {}: the probe did not run inside it (exit {status}{}); it must be a \
                 dynamically linked program that honours LD_PRELOAD",
                exe.display(),
                err.lines()
                    .next()
                    .map(|l| format!(": {l}"))
                    .unwrap_or_default()
            ),
            2,
        ));
    }
    Ok(text)
}

/// Undefined dynamic symbols of a file (none when it cannot be read).
fn imports(path: &Path) -> Vec<String> {
    let Ok(data) = std::fs::read(path) else {
        return Vec::new();
    };
    let Ok(file) = object::File::parse(&*data) else {
        return Vec::new();
    };
    file.dynamic_symbols()
        .filter(|s| s.is_undefined())
        .filter_map(|s| s.name().ok().map(str::to_string))
        .collect()
}

/// A malloc linked into the program: the probe sees only exported symbols; the program's
/// symbol table may still name the allocator (`je_mallctl`, `mi_version`, ...).
fn static_symbols(exe: &Path) -> Vec<String> {
    let Ok(data) = std::fs::read(exe) else {
        return Vec::new();
    };
    let Ok(file) = object::File::parse(&*data) else {
        return Vec::new();
    };
    [
        "je_mallctl",
        "mallctl",
        "mi_version",
        "tc_version",
        "scalable_malloc",
    ]
    .into_iter()
    .filter(|n| {
        file.symbols()
            .any(|s| s.is_definition() && s.name() == Ok(*n))
    })
    .map(str::to_string)
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_cache_keeps_the_newest_descriptions() {
        let dir = tempfile::tempdir().unwrap();
        let at = |i: u64| std::time::UNIX_EPOCH + Duration::from_secs(1_000_000 + i);
        let n = PROBE_CACHE_KEEP as u64 + 5;
        for i in 0..n {
            let p = dir.path().join(format!("lib{i}.so-0.toml"));
            std::fs::write(&p, "name = \"unknown\"\n").unwrap();
            std::fs::File::options()
                .write(true)
                .open(&p)
                .unwrap()
                .set_modified(at(i))
                .unwrap();
        }
        std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
        let new = dir.path().join("libnew.so-0.toml");
        std::fs::write(&new, "name = \"unknown\"\n").unwrap();
        prune_probe_cache(dir.path(), &new);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        // The new one, the newest KEEP - 1 others, and the file that is not a description.
        assert_eq!(left.len(), PROBE_CACHE_KEEP + 1, "{left:?}");
        assert!(left.contains(&"libnew.so-0.toml".to_string()));
        assert!(left.contains(&"notes.txt".to_string()));
        assert!(left.contains(&format!("lib{}.so-0.toml", n - 1)));
        assert!(!left.contains(&format!("lib{}.so-0.toml", n - PROBE_CACHE_KEEP as u64)));
        assert!(left.contains(&format!("lib{}.so-0.toml", n - PROBE_CACHE_KEEP as u64 + 1)));
    }
}
