//! The one findings model end to end (docs/report.md, "Findings"): every analysis's known
//! answer comes out as a finding of one shape, keys are the same in another run (ASLR on) and
//! after an unrelated rebuild, and the exit summary names a NUMA build's serial first touch.

use profcc_analysis::findings::{Analysis, Finding};
use profcc_tests::*;
use std::collections::BTreeSet;
use std::process::Command;

/// Build `main_src` (a fixture under findings/ or sharing/) with `other` (findings/other.c or
/// other_more.c) as `prog`, with `PROFCC_INSTRUMENT=instrument`.
fn build(s: &Scratch, main_src: &str, other: &str, instrument: &str) {
    for f in [main_src, other] {
        std::fs::copy(fixture(f), s.path(f.rsplit('/').next().unwrap())).unwrap();
    }
    let main_name = main_src.rsplit('/').next().unwrap();
    let other_name = other.rsplit('/').next().unwrap();
    s.compile_env(
        &profcc(),
        &["-O2", "-g", "-pthread", main_name, other_name, "-o", "prog"],
        &[("PROFCC_INSTRUMENT", instrument)],
    );
}

/// Run `prog` and read its report (every finding listed: `--top 0 --min-speedup 0`).
fn findings_of(s: &Scratch, args: &[&str], options: &str) -> (Vec<Finding>, String) {
    let (r, stderr) = report_of(s, args, options);
    (r.findings, stderr)
}

/// Run `prog`; its whole report (JSON read back into the model) and its stderr.
fn report_of(s: &Scratch, args: &[&str], options: &str) -> (profcc_report::Report, String) {
    let (out, _) = s.run_profiled("prog", args, options);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = report(
        &s.path("prog.profile.json"),
        &["--top", "0", "--min-speedup", "0"],
    );
    (r, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn keys(v: &[Finding]) -> BTreeSet<String> {
    v.iter().map(|f| f.key.clone()).collect()
}

/// The same program run twice, and once more after adding an unrelated function to another
/// file (its lines move, its code and addresses change), gives the same finding keys: for the
/// sharing analysis's false sharing on a heap array and NUMA's serial first touch.
#[test]
fn finding_keys_survive_another_run_and_an_unrelated_rebuild() {
    for (main_src, instrument, args, kind) in [
        (
            "sharing/counters_heap.c",
            "sharing",
            &["malloc", "2"][..],
            "false_sharing",
        ),
        (
            "findings/first_touch.c",
            "numa",
            &[][..],
            "serial_first_touch",
        ),
    ] {
        let a = Scratch::new();
        build(&a, main_src, "findings/other.c", instrument);
        let (first, _) = findings_of(&a, args, "summary=0");
        let (second, _) = findings_of(&a, args, "summary=0");
        let b = Scratch::new();
        build(&b, main_src, "findings/other_more.c", instrument);
        let (rebuilt, _) = findings_of(&b, args, "summary=0");
        assert!(
            first.iter().any(|f| f.kind == kind),
            "{main_src}: no {kind} finding: {:#?}",
            keys(&first)
        );
        for k in keys(&first) {
            assert!(!k.contains("0x") && !k.contains("/tmp/"), "{k}");
        }
        assert_eq!(keys(&first), keys(&second), "{main_src}: a second run");
        assert_eq!(
            keys(&first),
            keys(&rebuilt),
            "{main_src}: after the rebuild"
        );
    }
}

/// NUMA: the serial first touch is the run's finding, at the init loop, and the array is a
/// first-touch finding named by its allocation line; the exit summary names the pattern.
#[test]
fn numa_serial_first_touch_is_a_finding_and_named_at_exit() {
    let s = Scratch::new();
    build(&s, "findings/first_touch.c", "findings/other.c", "numa");
    let (r, stderr) = report_of(&s, &[], "summary=1");
    let found = r.findings.clone();
    let src = std::fs::read_to_string(fixture("findings/first_touch.c")).unwrap();
    let (alloc, touch) = (
        line_of(&src, "MARK_ALLOC"),
        line_of(&src, "MARK_FIRST_TOUCH"),
    );
    let numa: Vec<&Finding> = found
        .iter()
        .filter(|f| f.analysis == Analysis::Numa)
        .collect();
    let run = numa
        .iter()
        .find(|f| f.kind == "serial_first_touch")
        .unwrap_or_else(|| panic!("{numa:#?}"));
    assert!(
        run.title
            .starts_with("serial first touch: thread 0 touched"),
        "{}",
        run.title
    );
    assert!(
        run.place().ends_with(&format!("first_touch.c:{touch}")),
        "{run:?}"
    );
    assert!(
        run.impact.seconds > 0.0 && run.impact.formula == "remote_overhead_share",
        "{run:?}"
    );
    let array = numa
        .iter()
        .find(|f| f.kind == "first_touch")
        .unwrap_or_else(|| panic!("{numa:#?}"));
    assert_eq!(array.objects[0].kind, "heap");
    assert!(
        array.objects[0]
            .name
            .ends_with(&format!("first_touch.c:{alloc}")),
        "{array:?}"
    );
    // The object table joins the allocation site's figures, NUMA's and the finding on the
    // array's identity.
    let row = r
        .objects
        .iter()
        .find(|o| o.kind == "heap" && o.name == format!("first_touch.c:{alloc}"))
        .unwrap_or_else(|| panic!("{:#?}", r.objects));
    assert_eq!(
        (row.allocations, row.bytes),
        (Some(1), Some(8 << 20)),
        "{row:?}"
    );
    // Every worker load is remote, the main thread's stores local (vector accesses count once).
    assert!(
        row.numa_remote.unwrap_or(0) > 3 * row.numa_local.unwrap_or(0),
        "{row:?}"
    );
    assert_eq!(row.first_touch_thread, Some(0), "{row:?}");
    assert!(row.findings.contains(&array.key), "{row:?}");
    // The exit summary (summary=1: on stderr although it is a pipe here).
    let lines: Vec<&str> = stderr.lines().collect();
    let title = lines
        .iter()
        .position(|l| *l == "profcc: NUMA locality (top findings):")
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        lines[title + 1].starts_with("profcc:   numa: serial first touch: thread 0 touched"),
        "{stderr}"
    );
    assert!(lines.len() <= 10, "{stderr}");
}

/// Regions: the pointer chase is far below the stream's bandwidth, and the region whose
/// second thread does three times the work per execution is imbalanced; both in the report's
/// findings, in findings.csv with the documented columns, and JSON reads back into the model.
#[test]
fn region_findings_low_bandwidth_and_thread_imbalance() {
    let s = Scratch::new();
    std::fs::copy(fixture("findings/regions.c"), s.path("regions.c")).unwrap();
    s.compile_env(
        &profcc(),
        &["-O2", "-g", "-pthread", "regions.c", "-o", "prog"],
        &[("PROFCC_INSTRUMENT", "roi")],
    );
    let (found, _) = findings_of(&s, &[], "summary=0");
    let regions: Vec<(&str, &str)> = found
        .iter()
        .filter(|f| f.analysis == Analysis::Regions)
        .map(|f| (f.kind.as_str(), f.objects[0].name.as_str()))
        .collect();
    assert!(regions.contains(&("low_bandwidth", "chase")), "{found:#?}");
    assert!(
        !regions.contains(&("low_bandwidth", "stream")),
        "{found:#?}"
    );
    assert!(
        regions.contains(&("thread_imbalance", "uneven")),
        "{found:#?}"
    );
    let imb = found.iter().find(|f| f.kind == "thread_imbalance").unwrap();
    let per = |name: &str| imb.evidence.iter().find(|e| e.name == name).unwrap().value;
    let ratio = per("max_bytes_per_execution") / per("min_bytes_per_execution");
    assert!((ratio - 3.0).abs() < 0.01, "{ratio}: {imb:?}");
    // CSV: the columns docs/report.md lists, a row per finding in the same order.
    let dir = s.path("csv");
    sh(Command::new(profcc())
        .env("XDG_CACHE_HOME", probe_cache_home())
        .args(["report", "--top", "0", "--min-speedup", "0", "--csv"])
        .arg(&dir)
        .arg(s.path("prog.profile.json")));
    let text = std::fs::read_to_string(dir.join("findings.csv")).unwrap();
    // The columns the issue asks for, in the header the file really has (docs/report.md's
    // list is compared with the writer's by report/src/render/csv.rs's unit test).
    let mut rows = text.lines();
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    for want in [
        "key",
        "analysis",
        "kind",
        "impact_s",
        "confidence",
        "place",
        "object",
        "fix",
    ] {
        assert!(header.contains(&want), "{want} missing: {header:?}");
    }
    // One row per finding, in the JSON's order: its rank first, then its analysis and kind.
    let rows: Vec<&str> = rows.collect();
    assert_eq!(rows.len(), found.len(), "{text}");
    for (n, (row, f)) in rows.iter().zip(&found).enumerate() {
        assert!(row.starts_with(&format!("{},", n + 1)), "{row}");
        assert!(
            row.contains(f.analysis.as_str()) && row.contains(&f.kind),
            "{row}"
        );
    }
    // The text report shows them first.
    let t = sh(Command::new(profcc())
        .env("XDG_CACHE_HOME", probe_cache_home())
        .arg("report")
        .arg(s.path("prog.profile.json")));
    let t = String::from_utf8_lossy(&t.stdout);
    let top = t.find("Top findings").unwrap_or_else(|| panic!("{t}"));
    assert!(t[top..].contains("regions: region `chase` moves"), "{t}");
    // Each listed finding says the threshold it crossed, the words of the JSON's `threshold`.
    let chase = found
        .iter()
        .find(|f| f.kind == "low_bandwidth" && f.objects[0].name == "chase")
        .unwrap();
    assert!(!chase.threshold.is_empty(), "{chase:?}");
    assert!(
        t[top..].contains(&format!("    crossed: {}\n", chase.threshold)),
        "{t}"
    );
}

/// Adding an analysis is a checklist (ARCHITECTURE.md, "Adding an analysis"); this fails when
/// an analysis in the runtime's registry is missing from one of its places: the findings
/// model (`findings::Analysis`), the options table (a flag it reads), the profile schema and
/// the report model (its section), the CSV docs (its tables) and the findings docs (each
/// kind of finding it produces), its report section and CSV tables, and its exit-summary hook.
#[test]
fn every_registered_analysis_is_wired_through() {
    let read = |p: &str| std::fs::read_to_string(root().join(p)).unwrap();
    // The registry's analyses by their `name()`.
    let registry = read("rt/src/analyses/mod.rs");
    let mut names = Vec::new();
    for module in registry
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|m| m.trim_end_matches(';'))
    {
        let src =
            std::fs::read_to_string(root().join(format!("rt/src/analyses/{module}.rs"))).unwrap();
        let at = src
            .find("fn name(&self) -> &'static str {")
            .unwrap_or_else(|| panic!("analyses/{module}.rs has no name()"));
        let name = src[at..].split('"').nth(1).unwrap().to_string();
        assert!(
            src.contains("fn summary("),
            "analyses/{module}.rs has no exit-summary hook (`summary`)"
        );
        assert!(
            registry.contains(&format!("&{module}::")),
            "analyses/{module}.rs is declared but not in ANALYSES"
        );
        names.push(name);
    }
    names.sort();
    let mut model: Vec<&str> = Analysis::ALL.iter().map(|a| a.as_str()).collect();
    model.sort();
    assert_eq!(names, model, "the registry and findings::Analysis::ALL");
    let (options, schema, report_model, docs) = (
        read("rt/src/options.rs"),
        read("schema/src/lib.rs"),
        read("report/src/model.rs"),
        read("docs/report.md") + &read("docs/csv.md"),
    );
    for a in Analysis::ALL {
        let n = a.as_str();
        assert!(
            options.contains(&format!(", \"{n}\", \"")),
            "{n}: no run-time flag read by it in rt/src/options.rs"
        );
        assert!(
            schema.contains(&format!("pub {}: Option<", a.profile_field())),
            "{n}: no `{}` section in the profile schema",
            a.profile_field()
        );
        assert!(
            report_model.contains(&format!("pub {}: Option<", a.report_field())),
            "{n}: no `{}` section in the report model",
            a.report_field()
        );
        assert!(
            root()
                .join(format!("report/src/sections/{}.rs", a.report_field()))
                .exists(),
            "{n}: no report/src/sections/{}.rs",
            a.report_field()
        );
        let csv = read("report/src/render/csv.rs");
        assert!(
            csv.contains(&format!("file: \"{}", a.csv_prefix())),
            "{n}: report/src/render/csv.rs writes no table of it"
        );
        assert!(
            docs.contains(&format!("### `{}", a.csv_prefix())),
            "{n}: docs/csv.md lists no CSV table of it"
        );
        for k in a.kinds() {
            assert!(
                docs.contains(&format!("`{k}`")),
                "{n}: docs/report.md and docs/csv.md do not name its finding kind `{k}`"
            );
        }
    }
}
