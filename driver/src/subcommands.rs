//! profcc's own subcommands (`profcc report ...`), parsed with clap. Only an argv whose first
//! argument is exactly a subcommand name comes here ([`is_subcommand`]); every other command
//! line is clang's and keeps the table-driven path (`args.rs`, `plan.rs`).
//!
//! A subcommand is one variant of [`Command`] with its arguments' type and one arm in [`run`].
//! Usage errors are one line on stderr naming the problem and the way out, exit code 2.

use clap::{CommandFactory, Parser, Subcommand};
use std::ffi::OsString;

#[derive(Parser, Debug)]
#[command(
    name = "profcc",
    bin_name = "profcc",
    about = "profcc's own commands; any other command line is a clang-22 one",
    disable_help_subcommand = true,
    disable_version_flag = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    #[command(
        about = profcc_report::ABOUT,
        long_about = profcc_report::LONG_ABOUT,
        after_help = profcc_report::AFTER_HELP
    )]
    Report(profcc_report::ReportArgs),
    #[command(
        about = profcc_report::diff::DIFF_ABOUT,
        long_about = profcc_report::diff::DIFF_LONG_ABOUT,
        after_help = profcc_report::diff::DIFF_AFTER_HELP
    )]
    Diff(profcc_report::diff::DiffArgs),
    #[command(
        about = profcc_report::diff::CHECK_ABOUT,
        long_about = profcc_report::diff::CHECK_LONG_ABOUT,
        after_help = profcc_report::diff::CHECK_AFTER_HELP
    )]
    Check(profcc_report::diff::CheckArgs),
    #[command(about = crate::calibrate::ABOUT)]
    Calibrate(crate::calibrate::CalibrateArgs),
    #[command(about = crate::detect::ABOUT)]
    DetectAllocator(crate::detect::DetectArgs),
    #[command(about = crate::monitor::ABOUT)]
    Monitor(crate::monitor::MonitorArgs),
}

/// The section `profcc --help` prints after clang's help: what profcc adds to clang.
pub fn help_section() -> String {
    let mut s = String::from(
        "\nPROFCC (this compiler is profcc: clang-22 that instruments what it compiles and links \
         a runtime that writes a profile)\n\nSUBCOMMANDS:\n",
    );
    for c in Cli::command().get_subcommands() {
        let about = c.get_about().map(|a| a.to_string()).unwrap_or_default();
        s.push_str(&format!("  profcc {:<18} {about}\n", c.get_name()));
    }
    s.push_str("  (profcc SUBCOMMAND --help for each one's options)\n\nPROFCC_INSTRUMENT=FAMILY[,FAMILY] at build time:\n");
    for (name, what) in crate::exec::FAMILIES {
        s.push_str(&format!("  {name:<12} {what}\n"));
    }
    s.push_str(
        "\nPROFCC_OPTIONS=key=value:key=value at run time (the instrumented program's options: \
         PROFCC_OPTIONS=help=1 ./program prints them); PROFCC_DISABLE=1 builds with plain clang.\n",
    );
    let docs = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs");
    s.push_str(&match std::fs::canonicalize(docs) {
        Ok(d) => format!(
            "\nDocs: {} (options.md, report.md, diff.md, model.md, numa.md, allocators.md, regions.md)\n",
            d.display()
        ),
        Err(_) => {
            "\nDocs: docs/ in profcc's source tree (options.md, report.md, model.md)\n".into()
        }
    });
    s
}

/// Is `arg` (argv[1]) exactly the name of one of profcc's subcommands?
pub fn is_subcommand(arg: &OsString) -> bool {
    let Some(name) = arg.to_str() else {
        return false;
    };
    Cli::command()
        .get_subcommands()
        .any(|c| c.get_name() == name)
}

/// Parse `argv` (argv[0], subcommand, arguments) and run the subcommand; returns the exit code.
pub fn run(argv: Vec<OsString>) -> i32 {
    let sub = argv
        .get(1)
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_default();
    let cli = match Cli::try_parse_from(argv) {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                print!("{}", e.render());
                return 0;
            }
            eprintln!("{}", one_line(&sub, &e));
            return 2;
        }
    };
    match cli.command {
        Command::Report(mut a) => {
            a.live_probe = Some(crate::detect::live_probe);
            profcc_report::run(&a)
        }
        Command::Diff(mut a) => {
            a.live_probe = Some(crate::detect::live_probe);
            let (o, e) = (std::io::stdout(), std::io::stderr());
            profcc_report::diff::run_diff(&a, &mut o.lock(), &mut e.lock())
        }
        Command::Check(mut a) => {
            a.live_probe = Some(crate::detect::live_probe);
            let (o, e) = (std::io::stdout(), std::io::stderr());
            profcc_report::diff::run_check(&a, &mut o.lock(), &mut e.lock())
        }
        Command::Calibrate(a) => crate::calibrate::run(&a),
        Command::DetectAllocator(a) => crate::detect::run(&a),
        Command::Monitor(a) => crate::monitor::run(&a),
    }
}

/// clap's error on one line: `profcc SUB: <problem>; <tips>; usage: ...; see 'profcc SUB --help'`.
fn one_line(sub: &str, e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let mut parts: Vec<String> = Vec::new();
    for line in rendered.lines().map(str::trim) {
        if line.is_empty() || line.starts_with("For more information") {
            continue;
        }
        let line = line.strip_prefix("error: ").unwrap_or(line);
        let line = match line.strip_prefix("Usage: ") {
            Some(u) => format!("usage: {u}"),
            None => line.to_string(),
        };
        // "the following required arguments were not provided:" + the list on the next lines.
        match parts.last_mut() {
            Some(prev) if prev.ends_with(':') => {
                prev.push(' ');
                prev.push_str(&line);
            }
            _ => parts.push(line),
        }
    }
    parts.push(format!("see 'profcc {sub} --help'"));
    format!("profcc {sub}: {}", parts.join("; "))
}

#[cfg(test)]
mod tests {
    #[test]
    fn subcommand_names_are_exact() {
        assert!(super::is_subcommand(&"report".into()));
        assert!(super::is_subcommand(&"diff".into()));
        assert!(super::is_subcommand(&"check".into()));
        for a in ["Report", "report.c", "reports", "-report", "--help", ""] {
            assert!(!super::is_subcommand(&a.into()), "{a}");
        }
    }

    #[test]
    fn clap_definition_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
