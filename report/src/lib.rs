//! `profcc report PROFILE...`: the offline half of profcc (heaptrack's recorder/analyser
//! split). The profiled process writes addresses, counts and its module map; this reads one or
//! more profiles, merges them, symbolises call stacks with DWARF, ranks, and prints text, JSON
//! or CSV.
//!
//! Code map:
//! - [`merge`]: several profiles → one [`merge::Merged`] view (sites summed, allocation sites
//!   merged by symbolised stack, totals summed, threads per file);
//! - [`symbolize`]: return address → module → function/inlined frames/file:line (addr2line),
//!   cached per module and per offset; data address → global variable (ELF symbol table);
//! - [`dwarf`]: byte offset inside a global → field path (`[2].count`) from DWARF types;
//! - [`sections`]: one function per section over the merged view, each building its part of
//!   the [`model::Report`];
//! - [`model`]: the report as serialisable data (serde), one type per concept;
//! - [`render`]: the renderers, each taking the model and nothing else: [`render::text`],
//!   [`render::json`] (the model through serde), [`render::csv`] (one file per table),
//!   [`render::export`] (callgrind, pprof, speedscope, collapsed stacks), [`render::trace`]
//!   (the region snapshots as a Chrome trace), [`render::html`] (one self-contained page; its
//!   script and style in `render/html/`);
//! - [`fmt`]: number formatting for text.
//!
//! Exit codes: 0 success, 1 an input could not be read (or the output written), 2 usage error.

pub mod diff;
pub mod dwarf;
pub mod fmt;
pub mod merge;
pub mod model;
pub mod render;
pub mod sections;
pub mod symbolize;

#[cfg(test)]
mod sharing_tests;
#[cfg(test)]
mod tests;

pub use model::{Report, REPORT_FORMAT, REPORT_VERSION};

use std::io::Write;
use std::path::PathBuf;

/// One line for `profcc --help`'s list of subcommands.
pub const ABOUT: &str =
    "Turn profiles into a ranked report (text, JSON, CSV, HTML) or an export (callgrind, pprof, speedscope, collapsed stacks)";

/// `profcc report --help`: what comes before the options.
pub const LONG_ABOUT: &str = "\
Turn profcc profiles (profcc.<exe>.<pid>.json) into a ranked report. Several profiles
(one per MPI rank, per fork, ...) are merged into one report.";

/// `profcc report --help`: what comes after the options.
pub const AFTER_HELP: &str = "\
Call stacks are symbolised from the binaries named in the profile; when one is missing or was
rebuilt since the run, its frames are shown as module+offset and the report says so.
docs/report.md describes the JSON shape and every CSV column.

Exit codes: 0 success, 1 an input cannot be read or the output cannot be written, 2 usage error.";

/// How the report is printed (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// For people (default)
    Text,
    /// The report model as JSON (docs/report.md)
    Json,
    /// One self-contained HTML page (opens from file://, needs no network)
    Html,
    /// KCachegrind's callgrind format (callgrind_annotate, KCachegrind)
    Callgrind,
    /// pprof's gzipped profile.proto (go tool pprof); needs -o FILE
    Pprof,
    /// speedscope's JSON file format
    Speedscope,
    /// Collapsed stacks (`frame;frame count`) for flamegraph.pl and inferno
    Collapsed,
}

impl Format {
    /// Binary output: written only with `-o FILE`.
    pub fn is_binary(self) -> bool {
        matches!(self, Format::Pprof)
    }

    /// An export for another viewer (docs/report.md, "Exports"): every site, whatever `--top`.
    pub fn is_export(self) -> bool {
        matches!(
            self,
            Format::Callgrind | Format::Pprof | Format::Speedscope | Format::Collapsed
        )
    }

    /// The `--format` value.
    pub fn name(self) -> String {
        clap::ValueEnum::to_possible_value(&self)
            .map(|v| v.get_name().to_string())
            .unwrap_or_default()
    }
}

/// `profcc report`'s command line.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportArgs {
    /// Profiles to read; several are merged into one report
    #[arg(value_name = "PROFILE", required = true)]
    pub profiles: Vec<PathBuf>,
    /// Output format
    #[arg(short = 'f', long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Rows per ranked table (0 = all); applies to JSON and CSV too (the exports have all)
    #[arg(short = 'n', long, value_name = "N", default_value_t = 10)]
    pub top: usize,
    /// Sharing findings whose predicted speed-up is below X are counted in one line per kind
    /// instead of listed (0 = list all)
    #[arg(long, value_name = "X", default_value_t = profcc_analysis::sharing::MIN_LISTED_SPEEDUP)]
    pub min_speedup: f64,
    /// Call-stack frames per site in text output (0 = all); JSON and CSV have whole stacks
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub stack_depth: usize,
    /// The cost type of `--format collapsed`, one per file as flamegraph.pl and inferno expect
    /// (default: alloc-bytes)
    #[arg(long, value_enum, value_name = "COST")]
    pub cost: Option<render::export::Cost>,
    /// Write the report to FILE instead of standard output
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write one CSV file per table into DIR (created if missing) instead of printing the report
    #[arg(long, value_name = "DIR", conflicts_with_all = ["output", "format"])]
    pub csv: Option<PathBuf>,
    /// Write the region snapshots (taken with PROFCC_OPTIONS=roi_interval=MS) as a Chrome
    /// trace to FILE (open it in Perfetto or chrome://tracing) instead of printing the report
    #[arg(long, value_name = "FILE", conflicts_with_all = ["output", "format", "csv"])]
    pub trace: Option<PathBuf>,
    /// --format html: annotate the source files under DIR that the report names (the
    /// Sources tab; a long file's annotated lines with some around them; at most 4 MB)
    #[arg(long, value_name = "DIR")]
    pub sources: Option<PathBuf>,
    /// Do not run the allocator probe for an allocator no shipped description covers (its
    /// size kinds then follow the generic rule)
    #[arg(long)]
    pub no_probe: bool,
    /// The probe `profcc report` runs for such an allocator (set by the driver).
    #[arg(skip)]
    pub live_probe: Option<LiveProbe>,
}

/// Describe the allocator a profile names (its `allocator` lines) for the program at the given
/// path, by running the allocator probe: `profcc detect-allocator`'s description and where it
/// came from (measured now, or kept from an earlier report), or why not.
pub type LiveProbe =
    fn(&[String], &str) -> Result<(profcc_allocator_probe::Description, String), String>;

/// Writes `bytes` to `path` (`flag` names the option in messages) without clobbering an
/// input: a path that is one of `profiles` is refused (exit 2); a regular file is written
/// aside and renamed over it, so a failed write leaves the old one; a path that exists and
/// is not a regular file (`/dev/stdout`, a FIFO) is written in place. A new file gets the
/// mode the user's umask gives (0644 under umask 022).
pub(crate) fn write_output(
    cmd: &str,
    flag: &str,
    path: &std::path::Path,
    bytes: &[u8],
    profiles: &[PathBuf],
    err: &mut dyn Write,
) -> i32 {
    let target = std::fs::canonicalize(path).ok();
    if target.is_some()
        && profiles
            .iter()
            .any(|p| std::fs::canonicalize(p).ok() == target)
    {
        let _ = writeln!(
            err,
            "profcc {cmd}: {flag} {}: is one of the profiles read; name another file",
            path.display()
        );
        return 2;
    }
    let r = if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        std::fs::write(path, bytes)
    } else {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        // 0666 less the umask, as any file the user creates (tempfile's default is 0600).
        tempfile::Builder::new()
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
            .tempfile_in(dir)
            .and_then(|mut f| f.write_all(bytes).map(|_| f))
            .and_then(|f| f.persist(path).map(|_| ()).map_err(|e| e.error))
    };
    if let Err(e) = r {
        let _ = writeln!(err, "profcc {cmd}: cannot write {}: {e}", path.display());
        return 1;
    }
    0
}

/// `--trace FILE`: the inputs' region snapshots as a Chrome trace.
fn write_trace(
    file: &std::path::Path,
    inputs: &[merge::Input],
    profiles: &[PathBuf],
    err: &mut dyn Write,
) -> i32 {
    let all: Vec<&profcc_schema::Profile> = inputs.iter().map(|i| &i.profile).collect();
    let Some(trace) = render::trace::build(&all) else {
        let _ = writeln!(
            err,
            "profcc report: --trace: no region snapshots in {}: run the program with PROFCC_OPTIONS=roi_interval=100 (milliseconds)",
            inputs.iter().map(|i| i.path.as_str()).collect::<Vec<_>>().join(", ")
        );
        return 1;
    };
    let bytes = serde_json::to_vec(&trace).expect("JSON into memory");
    write_output("report", "--trace", file, &bytes, profiles, err)
}

/// `profcc report`: returns the process exit code.
pub fn run(args: &ReportArgs) -> i32 {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    run_with(args, &mut stdout.lock(), &mut stderr.lock())
}

/// [`run`] with the output streams given (for tests).
pub fn run_with(a: &ReportArgs, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    if let Some(Err(e)) = a.csv.as_deref().map(render::csv::check_dir) {
        let _ = writeln!(err, "profcc report: {e}");
        return 2;
    }
    if a.sources.is_some() && (a.format != Format::Html || a.csv.is_some() || a.trace.is_some()) {
        let _ = writeln!(
            err,
            "profcc report: --sources DIR is for --format html (its Sources tab)"
        );
        return 2;
    }
    if a.format.is_binary() && a.output.is_none() {
        let _ = writeln!(
            err,
            "profcc report: --format {}: binary output; name the file with -o FILE",
            a.format.name()
        );
        return 2;
    }
    if a.cost.is_some() && (a.format != Format::Collapsed || a.csv.is_some() || a.trace.is_some()) {
        let _ = writeln!(
            err,
            "profcc report: --cost chooses the cost of --format collapsed (the other exports have every cost); see 'profcc report --help'"
        );
        return 2;
    }
    if let Some(file) = &a.trace {
        let mut inputs = Vec::new();
        for f in &a.profiles {
            match load(f) {
                // Only what the trace reads is kept: memory grows with the snapshots, which
                // the trace holds anyway, not with each profile's sites and stacks.
                Ok(i) => {
                    let p = i.profile;
                    let kept = profcc_schema::Profile {
                        pid: p.pid,
                        rank: p.rank,
                        exe: p.exe,
                        host: p.host,
                        regions: p.regions,
                        ..Default::default()
                    };
                    inputs.push(merge::Input::new(i.path, kept, i.mtime));
                }
                Err(e) => {
                    let _ = writeln!(err, "profcc report: {}: {e}", f.display());
                    return 1;
                }
            }
        }
        return write_trace(file, &inputs, &a.profiles, err);
    }
    // Text and CSV show no per-input values of access sites: not kept (docs/report.md, "Ranks").
    let per_input = a.csv.is_none() && a.format != Format::Text;
    let opts = sections::Options {
        top: if a.format.is_export() { 0 } else { a.top },
        min_speedup: a.min_speedup,
        live_probe: if a.no_probe { None } else { a.live_probe },
    };
    let merged = match merge_files(&a.profiles, per_input, &opts) {
        Ok(m) => m,
        Err((i, e)) => {
            let _ = writeln!(err, "profcc report: {}: {e}", a.profiles[i].display());
            return 1;
        }
    };
    let report = sections::build(&merged, &opts);
    if let Some(dir) = &a.csv {
        return match render::csv::write_dir(&report, dir) {
            Ok(_) => 0,
            Err(e) => {
                let _ = writeln!(err, "profcc report: {e}");
                1
            }
        };
    }
    let mut bytes = Vec::new();
    match a.format {
        Format::Text => {
            let opts = render::text::TextOptions {
                stack_depth: a.stack_depth,
            };
            bytes = render::text::render(&report, &opts).into_bytes();
        }
        Format::Json => render::json::write(&report, &mut bytes).expect("JSON into memory"),
        Format::Html => {
            let mut opts = render::html::HtmlOptions::default();
            if let Some(dir) = &a.sources {
                match render::html::read_sources(&report, dir, render::html::SOURCES_MAX_BYTES) {
                    Ok((files, notes)) => (opts.sources, opts.sources_notes) = (files, notes),
                    Err(e) => {
                        let _ = writeln!(err, "profcc report: {e}");
                        return 2;
                    }
                }
            }
            match render::html::render(&report, &opts) {
                Ok(b) => bytes = b,
                Err(e) => {
                    let _ = writeln!(err, "profcc report: {e}");
                    return 1;
                }
            }
        }
        Format::Callgrind | Format::Pprof | Format::Speedscope | Format::Collapsed => {
            let r = match a.format {
                Format::Callgrind => render::export::callgrind(&report),
                Format::Pprof => render::export::pprof(&report),
                Format::Speedscope => render::export::speedscope(&report),
                _ => render::export::collapsed(
                    &report,
                    a.cost.unwrap_or(render::export::Cost::AllocBytes),
                ),
            };
            match r {
                Ok(b) => bytes = b,
                Err(e) => {
                    let _ = writeln!(err, "profcc report: --format {}: {e}", a.format.name());
                    return 1;
                }
            }
        }
    }
    match &a.output {
        None => {
            if let Err(e) = out.write_all(&bytes).and_then(|_| out.flush()) {
                // A closed pipe (`| head`) is not worth a message.
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    let _ = writeln!(err, "profcc report: cannot write the report: {e}");
                    return 1;
                }
            }
        }
        Some(path) => return write_output("report", "-o", path, &bytes, &a.profiles, err),
    }
    0
}

/// Read the profiles on every core and merge them in command-line order as they arrive
/// ([`merge::Merged::add`] reduces each to what the sections read per input): at most two
/// profiles per worker are read ahead of the merge, so memory does not grow with the number
/// of files. The first file (in command-line order) that cannot be read is the error.
/// Without `per_input`, the access sites' per-input values are not kept
/// ([`merge::Merged::without_per_input`]). Each input's NUMA part is built with `opts`, the
/// options the report will be built with, as it is merged ([`merge::Merged::with_numa_early`]).
pub fn merge_files(
    paths: &[PathBuf],
    per_input: bool,
    opts: &sections::Options,
) -> Result<merge::Merged, (usize, profcc_schema::ReadError)> {
    use std::collections::BTreeMap;
    use std::sync::{Condvar, Mutex, MutexGuard};
    struct State {
        /// The next file a worker takes, files merged so far, files read and not yet merged.
        next: usize,
        merged: usize,
        ready: BTreeMap<usize, Result<merge::Input, profcc_schema::ReadError>>,
        stop: bool,
    }
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, paths.len().max(1));
    let ahead = 2 * workers;
    let state = Mutex::new(State {
        next: 0,
        merged: 0,
        ready: BTreeMap::new(),
        stop: false,
    });
    let lock = || state.lock().unwrap_or_else(|e| e.into_inner());
    fn wait<'a>(g: MutexGuard<'a, State>, cv: &Condvar) -> MutexGuard<'a, State> {
        cv.wait(g).unwrap_or_else(|e| e.into_inner())
    }
    let cv = Condvar::new();
    let mut m = if per_input {
        merge::Merged::empty()
    } else {
        merge::Merged::without_per_input()
    }
    .with_numa_early(opts);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = {
                    let mut st = lock();
                    loop {
                        if st.stop || st.next >= paths.len() {
                            return;
                        }
                        if st.next < st.merged + ahead {
                            break;
                        }
                        st = wait(st, &cv);
                    }
                    st.next += 1;
                    st.next - 1
                };
                let r = load(&paths[i]);
                lock().ready.insert(i, r);
                cv.notify_all();
            });
        }
        let mut result = Ok(());
        for i in 0..paths.len() {
            let r = {
                let mut st = lock();
                loop {
                    if let Some(r) = st.ready.remove(&i) {
                        break r;
                    }
                    st = wait(st, &cv);
                }
            };
            let failed = r.is_err();
            match r {
                Ok(input) => m.add(input),
                Err(e) => result = Err((i, e)),
            }
            let mut st = lock();
            st.merged = i + 1;
            st.stop = failed;
            cv.notify_all();
            if failed {
                break;
            }
        }
        result
    })?;
    m.finish();
    Ok(m)
}

fn load(p: &std::path::Path) -> Result<merge::Input, profcc_schema::ReadError> {
    let profile = profcc_schema::read(p)?;
    let mtime = std::fs::metadata(p).and_then(|m| m.modified()).ok();
    Ok(merge::Input::new(p.display().to_string(), profile, mtime))
}
