//! `profcc report FILE...`: the offline half of profcc (heaptrack's recorder/analyser split).
//! The profiled process writes addresses, counts and its module map; this reads one or more
//! profiles, merges them, symbolises call stacks with DWARF, ranks, and prints text or JSON.
//!
//! Code map:
//! - [`merge`]: several profiles → one [`merge::Merged`] view (sites summed, allocation sites
//!   merged by symbolised stack, totals summed, threads per file);
//! - [`symbolize`]: return address → module → function/inlined frames/file:line (addr2line),
//!   cached per module and per offset; data address → global variable (ELF symbol table);
//! - [`dwarf`]: byte offset inside a global → field path (`[2].count`) from DWARF types;
//! - [`sections`]: the report, one function per section over the merged view; each section
//!   prints itself as text and as JSON;
//! - [`fmt`]: number formatting for text.
//!
//! JSON output (`--format json`) is one object:
//! `{"format": "profcc-report", "version": 1, "summary": …, "access_sites": …, "alloc_sites": …,
//! "sharing": … (only when a profile has sharing records), "threads": […], "notes": …}`;
//! docs/report.md describes every field.
//!
//! Exit codes: 0 success, 1 an input could not be read (or the output written), 2 usage error.

pub mod dwarf;
pub mod fmt;
pub mod merge;
pub mod sections;
pub mod symbolize;

#[cfg(test)]
mod sharing_tests;
#[cfg(test)]
mod tests;

use std::io::Write;

pub const REPORT_FORMAT: &str = "profcc-report";
/// Bumped when a JSON field changes meaning or is removed; adding fields does not bump it.
pub const REPORT_VERSION: u32 = 1;

const USAGE: &str =
    "usage: profcc report [--format text|json] [--top N] [--stack-depth N] [-o FILE] PROFILE...";

const HELP: &str = "\
Turn profcc profiles (profcc.<exe>.<pid>.json) into a ranked report. Several profiles
(one per MPI rank, per fork, ...) are merged into one report.

options:
  --format text|json   output format (default text); JSON is described in docs/report.md
  --top N              rows per ranked table (default 10; 0 = all)
  --stack-depth N      call-stack frames per site in text output (default 8; 0 = all)
  -o, --output FILE    write the report to FILE instead of standard output
  -h, --help           this help

Call stacks are symbolised from the binaries named in the profile; when one is missing or was
rebuilt since the run, its frames are shown as module+offset and the report says so.";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

#[derive(Debug)]
struct Args {
    format: Format,
    output: Option<String>,
    files: Vec<String>,
    opts: sections::Options,
    help: bool,
}

fn parse_number(opt: &str, v: &str) -> Result<usize, String> {
    v.parse::<usize>()
        .map_err(|_| format!("{opt} takes a whole number, not {v:?}"))
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        format: Format::Text,
        output: None,
        files: Vec::new(),
        opts: sections::Options::default(),
        help: false,
    };
    let mut it = args.iter();
    let mut only_files = false;
    while let Some(arg) = it.next() {
        if only_files || arg == "-" || !arg.starts_with('-') {
            a.files.push(arg.clone());
            continue;
        }
        if arg == "--" {
            only_files = true;
            continue;
        }
        // `--opt=value`, `--opt value`, `-oFILE`, `-o FILE`.
        let (name, inline): (&str, Option<&str>) = match arg.split_once('=') {
            Some((n, v)) if arg.starts_with("--") => (n, Some(v)),
            _ if arg.starts_with("-o") && arg.len() > 2 && !arg.starts_with("--") => {
                ("-o", Some(&arg[2..]))
            }
            _ => (arg.as_str(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            match inline {
                Some(v) => Ok(v.to_string()),
                None => it
                    .next()
                    .cloned()
                    .ok_or_else(|| format!("{name} needs a value")),
            }
        };
        match name {
            "-h" | "--help" => a.help = true,
            "--format" | "-f" => {
                let v = value(name)?;
                a.format = match v.as_str() {
                    "text" => Format::Text,
                    "json" => Format::Json,
                    other => return Err(format!("unknown format {other:?}; valid formats: text, json")),
                };
            }
            "--top" | "-n" => a.opts.top = parse_number(name, &value(name)?)?,
            "--stack-depth" => a.opts.stack_depth = parse_number(name, &value(name)?)?,
            "-o" | "--output" => a.output = Some(value(name)?),
            other => {
                return Err(format!(
                    "unknown option {other}; options: --format text|json, --top N, --stack-depth N, -o FILE, --help"
                ))
            }
        }
    }
    Ok(a)
}

/// `profcc report FILE...`: returns the process exit code.
pub fn run(args: &[String]) -> i32 {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    run_with(args, &mut stdout.lock(), &mut stderr.lock())
}

/// [`run`] with the output streams given (for tests).
pub fn run_with(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let a = match parse_args(args) {
        Ok(a) => a,
        Err(msg) => {
            let _ = writeln!(err, "profcc report: {msg}");
            let _ = writeln!(err, "{USAGE}");
            return 2;
        }
    };
    if a.help {
        let _ = writeln!(out, "{USAGE}\n\n{HELP}");
        return 0;
    }
    if a.files.is_empty() {
        let _ = writeln!(err, "{USAGE}");
        return 2;
    }
    let mut inputs = Vec::new();
    for f in &a.files {
        match load(f) {
            Ok(i) => inputs.push(i),
            Err(e) => {
                let _ = writeln!(err, "profcc report: {f}: {e}");
                return 1;
            }
        }
    }
    let merged = merge::Merged::new(inputs);
    let text = render(&merged, a.format, &a.opts);
    match &a.output {
        None => {
            if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
                // A closed pipe (`| head`) is not worth a message.
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    let _ = writeln!(err, "profcc report: cannot write the report: {e}");
                    return 1;
                }
            }
        }
        Some(path) => {
            if let Err(e) = std::fs::write(path, text.as_bytes()) {
                let _ = writeln!(err, "profcc report: cannot write {path}: {e}");
                return 1;
            }
        }
    }
    0
}

fn load(path: &str) -> Result<merge::Input, profcc_schema::ReadError> {
    let p = std::path::Path::new(path);
    let profile = profcc_schema::read(p)?;
    let mtime = std::fs::metadata(p).and_then(|m| m.modified()).ok();
    Ok(merge::Input::new(path, profile, mtime))
}

/// Build every section over the merged view and print them in the chosen format.
pub fn render(merged: &merge::Merged, format: Format, opts: &sections::Options) -> String {
    let built: Vec<Box<dyn sections::Section>> = sections::SECTIONS
        .iter()
        .filter_map(|b| b(merged, opts))
        .collect();
    let mut out = String::new();
    match format {
        Format::Text => {
            for s in &built {
                s.text(&mut out);
            }
        }
        Format::Json => {
            out.push_str(&format!(
                "{{\n  \"format\": \"{REPORT_FORMAT}\",\n  \"version\": {REPORT_VERSION}"
            ));
            for s in &built {
                let body = s.json().replace('\n', "\n  ");
                out.push_str(&format!(",\n  \"{}\": {}", s.key(), body));
            }
            out.push_str("\n}\n");
        }
    }
    out
}
