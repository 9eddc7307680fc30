//! The exports of `profcc report --format callgrind|pprof|speedscope|collapsed` (issue 44;
//! docs/report.md, "Exports") end to end: a program with known allocations and accesses is built
//! with profcc, run twice, and each export is opened with the tool its users open it with
//! (callgrind_annotate, go tool pprof, inferno's flame graph) or checked against its format's rules
//! (speedscope's schema, flamegraph.pl's collapsed lines), with the exact counts the program makes.
//! Each format on an empty profile, a merged one and an older profile version.

use profcc_report::Report;
use profcc_tests::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// 8 blocks of 1000 longs from make(), each filled once (8000 writes at MARK_FILL) and summed
/// twice (16000 reads at MARK_SUM); one calloc of 30 bytes in main.
const SRC: &str = r#"
#include <stdio.h>
#include <stdlib.h>
long *volatile keep[8];
__attribute__((noinline)) static long *make(size_t n) { return malloc(n * sizeof(long)); } /* MARK_MAKE */
__attribute__((noinline)) void fill(long *a, int n) {
  for (int i = 0; i < n; i++) a[i] = i; /* MARK_FILL */
}
__attribute__((noinline)) long sum(long *a, int n) {
  long s = 0;
  for (int r = 0; r < 2; r++)
    for (int i = 0; i < n; i++) s += a[i]; /* MARK_SUM */
  return s;
}
int main(void) {
  long total = 0;
  for (int k = 0; k < 8; k++) {
    long *a = make(1000); /* MARK_LOOP */
    keep[k] = a;
    fill(a, 1000);
    total += sum(a, 1000);
  }
  char *volatile c = calloc(10, 3); /* MARK_CALLOC */
  printf("%ld %d\n", total, c[0]);
  free(c);
  for (int k = 0; k < 8; k++) free(keep[k]);
  return 0;
}
"#;

/// The built program, its two profiles (two runs) and the first one's report (every site).
struct Built {
    s: Scratch,
    p1: PathBuf,
    p2: PathBuf,
    report: Report,
}

fn built() -> &'static Built {
    static B: OnceLock<Built> = OnceLock::new();
    B.get_or_init(|| {
        let s = Scratch::new();
        s.write("exports.c", SRC);
        // No sibling call: make() keeps its frame on malloc's stack.
        s.compile(
            &profcc(),
            &[
                "-O1",
                "-g",
                "-fno-optimize-sibling-calls",
                "exports.c",
                "-o",
                "exports",
            ],
        );
        for _ in 0..2 {
            let (out, _) = s.run_profiled("exports", &[], "summary=0");
            assert_eq!(String::from_utf8_lossy(&out.stdout), "7992000 0\n");
            let n = if s.path("p1.json").exists() { 2 } else { 1 };
            std::fs::rename(
                s.path("exports.profile.json"),
                s.path(&format!("p{n}.json")),
            )
            .unwrap();
        }
        let (p1, p2) = (s.path("p1.json"), s.path("p2.json"));
        let report = report(&p1, &["--top", "0"]);
        Built { s, p1, p2, report }
    })
}

/// `profcc report ARGS...` (not asserting success).
fn run_report(args: &[&str], profiles: &[&Path]) -> Output {
    Command::new(profcc())
        .env("XDG_CACHE_HOME", probe_cache_home())
        .arg("report")
        .args(args)
        .args(profiles)
        .output()
        .unwrap()
}

/// `profcc report ARGS... PROFILES` that must succeed: its standard output.
fn export(args: &[&str], profiles: &[&Path]) -> Vec<u8> {
    let out = run_report(args, profiles);
    assert!(
        out.status.success(),
        "profcc report {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `profcc report ARGS... -o FILE PROFILES` that must succeed: FILE.
fn export_file(args: &[&str], profiles: &[&Path], file: &Path) -> PathBuf {
    let mut a = args.to_vec();
    a.extend(["-o", file.to_str().unwrap()]);
    let out = export(&a, profiles);
    assert!(out.is_empty());
    file.to_path_buf()
}

fn line(marker: &str) -> u32 {
    line_of(SRC, marker)
}

/// The source file as the report names it (the path the compiler recorded).
fn src_file(r: &Report) -> String {
    r.access_sites
        .lines
        .iter()
        .find(|l| l.file.ends_with("exports.c"))
        .map(|l| l.file.clone())
        .expect("an access line in exports.c")
}

/// Collapsed lines as (frames root first, count); asserts each line's shape.
fn parse_collapsed(text: &str) -> Vec<(Vec<String>, u64)> {
    text.lines()
        .map(|l| {
            let (stack, n) = l
                .rsplit_once(' ')
                .unwrap_or_else(|| panic!("no count in {l:?}"));
            let n: u64 = n.parse().unwrap_or_else(|_| panic!("count of {l:?}"));
            assert!(n > 0, "{l:?}");
            let frames: Vec<String> = stack.split(';').map(str::to_string).collect();
            assert!(frames.iter().all(|f| !f.is_empty()), "{l:?}");
            (frames, n)
        })
        .collect()
}

/// The count of the collapsed stacks whose last frames are `tail`, summed.
fn count_ending(lines: &[(Vec<String>, u64)], tail: &[&str]) -> u64 {
    lines
        .iter()
        .filter(|(f, _)| f.len() >= tail.len() && f[f.len() - tail.len()..] == *tail)
        .map(|(_, n)| n)
        .sum()
}

/// `--format collapsed` per cost type: the counts sum to the report's totals, and the
/// program's stacks carry its exact bytes, calls, reads and writes; a cost the profile does
/// not have is a one-line error naming those it has; `--cost` without collapsed is a usage
/// error.
#[test]
fn collapsed_stacks_sum_to_the_report_totals() {
    let b = built();
    let t = &b.report.summary.totals;
    let file = src_file(&b.report);
    let (fill, sum) = (
        format!("{file}:{}", line("MARK_FILL")),
        format!("{file}:{}", line("MARK_SUM")),
    );

    // The default cost: allocated bytes.
    let bytes =
        parse_collapsed(&String::from_utf8(export(&["--format", "collapsed"], &[&b.p1])).unwrap());
    assert_eq!(bytes.iter().map(|x| x.1).sum::<u64>(), t.bytes_allocated);
    assert_eq!(count_ending(&bytes, &["main", "make"]), 64000, "{bytes:?}");
    let calloc = bytes
        .iter()
        .filter(|(f, _)| f.last().map(String::as_str) == Some("main"))
        .map(|x| x.1)
        .sum::<u64>();
    assert_eq!(calloc, 30, "{bytes:?}");

    let cost = |c: &str| {
        parse_collapsed(
            &String::from_utf8(export(&["--format", "collapsed", "--cost", c], &[&b.p1])).unwrap(),
        )
    };
    let calls = cost("alloc-calls");
    assert_eq!(calls.iter().map(|x| x.1).sum::<u64>(), t.allocations);
    assert_eq!(count_ending(&calls, &["main", "make"]), 8);

    let accesses = cost("accesses");
    assert_eq!(
        accesses.iter().map(|x| x.1).sum::<u64>() + t.unattributed,
        t.accesses
    );
    assert_eq!(
        count_ending(&accesses, &["sum", &sum]),
        16000,
        "{accesses:?}"
    );
    assert_eq!(
        count_ending(&accesses, &["fill", &fill]),
        8000,
        "{accesses:?}"
    );
    let reads = cost("reads");
    assert_eq!(reads.iter().map(|x| x.1).sum::<u64>(), t.reads);
    assert_eq!(count_ending(&reads, &["sum", &sum]), 16000);
    assert_eq!(count_ending(&reads, &["fill", &fill]), 0);
    let writes = cost("writes");
    assert_eq!(writes.iter().map(|x| x.1).sum::<u64>(), t.writes);
    assert_eq!(count_ending(&writes, &["fill", &fill]), 8000);
    assert_eq!(count_ending(&writes, &["sum", &sum]), 0);

    let out = run_report(
        &["--format", "collapsed", "--cost", "remote-accesses"],
        &[&b.p1],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(out.stdout.is_empty());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("no remote accesses")
            && err.contains("it has: alloc-bytes, alloc-calls, accesses, reads, writes"),
        "{err}"
    );
    let out = run_report(&["--format", "json", "--cost", "accesses"], &[&b.p1]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--cost") && err.contains("--format collapsed"),
        "{err}"
    );
}

/// The boxes of an SVG flame graph as (name, count): its `<title>`s, `NAME (COUNT UNIT, P%)`.
fn flame_boxes(svg: &str) -> Vec<(String, u64)> {
    svg.split("<title>")
        .skip(1)
        .filter_map(|t| {
            let t = t.split("</title>").next()?;
            let (name, rest) = t.rsplit_once(" (")?;
            let count = rest.split(' ').next()?.replace(',', "");
            Some((name.to_string(), count.parse().ok()?))
        })
        .collect()
}

/// inferno (the Rust port of flamegraph.pl; `inferno-flamegraph FILE` runs this function on
/// the file's lines) draws the collapsed accesses: the SVG's boxes for `sum` and `fill` carry
/// their exact 16,000 and 8,000 accesses, and the whole graph the accesses the report
/// attributes to a site.
#[test]
fn inferno_draws_the_collapsed_export_with_its_counts() {
    let b = built();
    let t = &b.report.summary.totals;
    let text = String::from_utf8(export(
        &["--format", "collapsed", "--cost", "accesses"],
        &[&b.p1],
    ))
    .unwrap();
    let mut opts = inferno::flamegraph::Options::default();
    opts.count_name = "accesses".into();
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut opts, text.lines(), &mut svg)
        .expect("inferno reads the collapsed export");
    let svg = String::from_utf8(svg).unwrap();
    let boxes = flame_boxes(&svg);
    let of =
        |name: &str| -> Vec<u64> { boxes.iter().filter(|b| b.0 == name).map(|b| b.1).collect() };
    assert_eq!(of("sum"), [16000], "{boxes:?}");
    assert_eq!(of("fill"), [8000], "{boxes:?}");
    let all = t.accesses - t.unattributed;
    assert_eq!(of("all"), [all], "{boxes:?}");
    // An access's stack is its function and line (docs/report.md, "Exports"): main's box
    // holds its own accesses, the rest of the whole.
    assert_eq!(of("main"), [all - 24000], "{boxes:?}");
}

/// What speedscope's schema requires of a file (https://www.speedscope.app/file-format-schema.json:
/// `$schema`, `shared.frames[].name`, and per sampled profile `type`, `name`, `unit`,
/// `startValue`, `endValue`, `samples` of frame indices, `weights` as many), checked here;
/// returns the profiles by name as (unit, endValue, stacks of frame names with weights).
#[allow(clippy::type_complexity)]
fn check_speedscope(bytes: &[u8]) -> BTreeMap<String, (String, u64, Vec<(Vec<String>, u64)>)> {
    let v: serde_json::Value = serde_json::from_slice(bytes).expect("speedscope JSON");
    assert_eq!(
        v["$schema"],
        "https://www.speedscope.app/file-format-schema.json"
    );
    assert!(v["exporter"].as_str().unwrap().starts_with("profcc "));
    assert!(v["name"].is_string());
    let frames = v["shared"]["frames"].as_array().expect("shared.frames");
    let names: Vec<String> = frames
        .iter()
        .map(|f| {
            if let Some(line) = f.get("line") {
                assert!(line.is_u64(), "{f}");
            }
            if let Some(file) = f.get("file") {
                assert!(file.is_string(), "{f}");
            }
            f["name"].as_str().expect("frame name").to_string()
        })
        .collect();
    let profiles = v["profiles"].as_array().expect("profiles");
    assert!(!profiles.is_empty());
    assert!(v["activeProfileIndex"].as_u64().unwrap() < profiles.len() as u64);
    let mut out = BTreeMap::new();
    for p in profiles {
        assert_eq!(p["type"], "sampled", "{p}");
        let unit = p["unit"].as_str().unwrap().to_string();
        assert!(
            [
                "none",
                "nanoseconds",
                "microseconds",
                "milliseconds",
                "seconds",
                "bytes"
            ]
            .contains(&unit.as_str()),
            "{unit}"
        );
        let start = p["startValue"].as_u64().expect("startValue");
        let end = p["endValue"].as_u64().expect("endValue");
        let samples = p["samples"].as_array().expect("samples");
        let weights = p["weights"].as_array().expect("weights");
        assert_eq!(samples.len(), weights.len());
        let stacks: Vec<(Vec<String>, u64)> = samples
            .iter()
            .zip(weights)
            .map(|(s, w)| {
                let frames: Vec<String> = s
                    .as_array()
                    .expect("a sample is a list of frame indices")
                    .iter()
                    .map(|i| names[i.as_u64().expect("frame index") as usize].clone())
                    .collect();
                assert!(!frames.is_empty());
                (frames, w.as_u64().expect("weight"))
            })
            .collect();
        assert_eq!(stacks.iter().map(|s| s.1).sum::<u64>(), end - start);
        let name = p["name"].as_str().expect("profile name").to_string();
        assert!(out.insert(name, (unit, end, stacks)).is_none());
    }
    out
}

/// `--format speedscope`: the schema's required fields, one profile per cost type the
/// profile has (bytes for allocated bytes, none for counts), each summing to the report's
/// totals, with the program's stacks and exact counts.
#[test]
fn speedscope_export_has_the_schemas_required_fields() {
    let b = built();
    let t = &b.report.summary.totals;
    let file = src_file(&b.report);
    let profiles = check_speedscope(&export(&["--format", "speedscope"], &[&b.p1]));
    assert_eq!(
        profiles.keys().collect::<Vec<_>>(),
        [
            "accesses",
            "allocated bytes",
            "allocation calls",
            "reads",
            "writes"
        ]
    );
    let (unit, end, stacks) = &profiles["allocated bytes"];
    assert_eq!((unit.as_str(), *end), ("bytes", t.bytes_allocated));
    assert!(
        stacks
            .iter()
            .any(|(f, w)| f.ends_with(&["main".to_string(), "make".to_string()]) && *w == 64000),
        "{stacks:?}"
    );
    let (unit, end, stacks) = &profiles["accesses"];
    assert_eq!((unit.as_str(), *end + t.unattributed), ("none", t.accesses));
    let hot = stacks.iter().max_by_key(|s| s.1).unwrap();
    assert_eq!(
        hot,
        &(
            vec!["sum".to_string(), format!("{file}:{}", line("MARK_SUM"))],
            16000
        )
    );
    assert_eq!(profiles["allocation calls"].1, t.allocations);
    assert_eq!(profiles["reads"].1, t.reads);
    assert_eq!(profiles["writes"].1, t.writes);
}

/// `callgrind_annotate FILE` (valgrind's) reads the callgrind export.
fn callgrind_annotate(args: &[&str], file: &Path) -> String {
    let out = sh(Command::new("callgrind_annotate")
        .current_dir(built().s.path(""))
        .args(args)
        .arg(file));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The line of `text` that contains every one of `words`.
fn line_with<'a>(text: &'a str, words: &[&str]) -> &'a str {
    text.lines()
        .find(|l| words.iter().all(|w| l.contains(w)))
        .unwrap_or_else(|| panic!("no line with {words:?} in:\n{text}"))
}

/// `--format callgrind`: callgrind_annotate lists the hot function by accesses (sum, 16,000)
/// and by allocated bytes (make, 64,000), annotates the source's hot line with its count,
/// and shows main's call to make (8 calls); its program totals are the report's.
#[test]
fn callgrind_annotate_lists_the_hot_line_and_function() {
    let b = built();
    let t = &b.report.summary.totals;
    let f = export_file(
        &["--format", "callgrind"],
        &[&b.p1],
        &b.s.path("callgrind.out"),
    );
    let by_accesses = callgrind_annotate(&["--sort=Accesses"], &f);
    // The function table's first row: the hot function.
    let first = by_accesses
        .lines()
        .skip_while(|l| !l.contains("file:function"))
        .nth(2)
        .unwrap();
    assert!(
        first.contains("16,000") && first.ends_with("exports.c:sum"),
        "{first}\n{by_accesses}"
    );
    assert!(line_with(&by_accesses, &["8,000", "exports.c:fill"]).starts_with("     0"));
    // The annotated source: the hot line with its reads, fill's line with its writes.
    let hot = line_with(&by_accesses, &["MARK_SUM", "for (int i"]);
    assert!(hot.contains("16,000 (66."), "{hot}");
    let totals = line_with(&by_accesses, &["PROGRAM TOTALS"]);
    let fmt = |n: u64| {
        let s = n.to_string();
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    };
    for n in [t.bytes_allocated, t.accesses, t.reads, t.writes] {
        assert!(totals.contains(&fmt(n)), "{} in {totals}", fmt(n));
    }

    let by_bytes = callgrind_annotate(&[], &f);
    let first = by_bytes
        .lines()
        .skip_while(|l| !l.contains("file:function"))
        .nth(2)
        .unwrap();
    assert!(
        first.starts_with("64,000") && first.contains("8 (") && first.ends_with("exports.c:make"),
        "{first}\n{by_bytes}"
    );
    let call = line_with(&by_bytes, &["=> ", "exports.c:make (8x)"]);
    assert!(call.starts_with("64,000"), "{call}");
    let calloc = line_with(&by_bytes, &["MARK_CALLOC"]);
    assert!(calloc.trim_start().starts_with("30 "), "{calloc}");
}

/// `go tool pprof ARGS FILE` with a writable home and caches in the scratch directory.
fn pprof(args: &[&str], file: &Path) -> String {
    let s = &built().s;
    let home = s.path("gohome");
    std::fs::create_dir_all(&home).unwrap();
    let out = sh(Command::new("go")
        .current_dir(s.path(""))
        .env("HOME", &home)
        .env("GOCACHE", home.join("cache"))
        .env("GOPATH", home.join("path"))
        .env("GOTOOLCHAIN", "local")
        .args(["tool", "pprof"])
        .args(args)
        .arg(file));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The first row of `go tool pprof -top`'s table: (flat, function).
fn top_row(top: &str) -> (String, String) {
    let row = top
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .nth(1)
        .unwrap_or_else(|| panic!("no rows in:\n{top}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    (cells[0].to_string(), cells[5..].join(" "))
}

/// `--format pprof` (needs -o FILE): `go tool pprof -top` lists make with its 64000 bytes by
/// default (alloc_space), sum with its 16000 accesses under `-sample_index=accesses`, make's
/// 8 calls under `alloc_objects`; `-tagfocus` on the kind and object labels keeps only the
/// calloc in main; `-diff_base` of two runs of the same program is 0.
#[test]
fn go_tool_pprof_lists_the_hot_function() {
    let b = built();
    let out = run_report(&["--format", "pprof"], &[&b.p1]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("-o FILE"));
    let f1 = export_file(&["--format", "pprof"], &[&b.p1], &b.s.path("p1.pb.gz"));
    let f2 = export_file(&["--format", "pprof"], &[&b.p2], &b.s.path("p2.pb.gz"));
    let top = pprof(&["-top", "-unit=B"], &f1);
    assert!(top.contains("Type: alloc_space"), "{top}");
    assert_eq!(top_row(&top), ("64000B".into(), "make".into()), "{top}");
    let t = &b.report.summary.totals;
    assert!(
        top.contains(&format!("Total samples = {}B", t.bytes_allocated)),
        "{top}"
    );
    let top = pprof(&["-top", "-sample_index=accesses"], &f1);
    assert!(top.contains("Type: accesses"), "{top}");
    assert_eq!(top_row(&top), ("16000".into(), "sum".into()), "{top}");
    let top = pprof(&["-top", "-sample_index=alloc_objects"], &f1);
    assert_eq!(top_row(&top), ("8".into(), "make".into()), "{top}");
    for focus in [
        "kind=calloc".to_string(),
        format!("object=exports.c:{}$", line("MARK_CALLOC")),
    ] {
        let top = pprof(&["-top", "-unit=B", &format!("-tagfocus={focus}")], &f1);
        assert!(
            top.contains("Showing nodes accounting for 30B"),
            "{focus}: {top}"
        );
        assert_eq!(
            top_row(&top),
            ("30B".into(), "main".into()),
            "{focus}: {top}"
        );
    }
    let diff = pprof(&["-top", &format!("-diff_base={}", f1.display())], &f2);
    assert!(
        diff.contains("Showing nodes accounting for 0, 0%"),
        "{diff}"
    );
}

/// Every export of an empty profile is a one-line error (exit 1, no file); of two merged
/// profiles, each cost is the sum of both; of a profile from an older version (version 1,
/// without the sections added since), the same file as from the current one.
#[test]
fn every_format_on_an_empty_merged_and_older_profile() {
    let b = built();
    let s = Scratch::new();
    let empty = s.write(
        "empty.json",
        &serde_json::to_string(&profcc_schema::Profile {
            format: profcc_schema::FORMAT.into(),
            version: profcc_schema::VERSION,
            exe: "/bin/empty".into(),
            ..Default::default()
        })
        .unwrap(),
    );
    for format in ["callgrind", "pprof", "speedscope", "collapsed"] {
        let file = s.path(&format!("empty.{format}"));
        let out = run_report(
            &["--format", format, "-o", file.to_str().unwrap()],
            &[&empty],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{format}: {err}");
        assert_eq!(err.lines().count(), 1, "{format}: {err}");
        assert!(
            err.starts_with(&format!(
                "profcc report: --format {format}: nothing to export"
            )),
            "{err}"
        );
        assert!(!file.exists(), "{format}");
    }

    // Merged: every stack's cost summed over both runs.
    let both: [&Path; 2] = [&b.p1, &b.p2];
    let merged =
        parse_collapsed(&String::from_utf8(export(&["--format", "collapsed"], &both)).unwrap());
    assert_eq!(count_ending(&merged, &["main", "make"]), 128000);
    let single = report(&b.p2, &["--top", "0"]);
    assert_eq!(
        merged.iter().map(|x| x.1).sum::<u64>(),
        b.report.summary.totals.bytes_allocated + single.summary.totals.bytes_allocated
    );
    let profiles = check_speedscope(&export(&["--format", "speedscope"], &both));
    assert_eq!(
        profiles["accesses"].1,
        b.report.summary.totals.accesses + single.summary.totals.accesses
    );
    let f = export_file(
        &["--format", "callgrind"],
        &both,
        &s.path("merged.callgrind"),
    );
    let by_bytes = callgrind_annotate(&[], &f);
    assert!(
        line_with(&by_bytes, &["exports.c:make"]).starts_with("128,000"),
        "{by_bytes}"
    );
    let f = export_file(&["--format", "pprof"], &both, &s.path("merged.pb.gz"));
    let top = pprof(&["-top", "-unit=B"], &f);
    assert_eq!(top_row(&top), ("128000B".into(), "make".into()), "{top}");

    // Older: version 1, none of the fields added since.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&b.p1).unwrap()).unwrap();
    v["version"] = 1.into();
    let o = v.as_object_mut().unwrap();
    for k in [
        "exit_summary",
        "sharing",
        "numa",
        "alloc_wrappers",
        "allocator",
        "allocator_ops",
        "regions",
    ] {
        o.remove(k);
    }
    for t in o["threads"].as_array_mut().unwrap() {
        t.as_object_mut().unwrap().remove("start_routine");
    }
    let old = s.write("old.json", &v.to_string());
    for format in ["callgrind", "speedscope", "collapsed"] {
        assert_eq!(
            String::from_utf8(export(&["--format", format], &[&old])).unwrap(),
            String::from_utf8(export(&["--format", format], &[&b.p1])).unwrap(),
            "{format}"
        );
    }
    let f = export_file(&["--format", "pprof"], &[&old], &s.path("old.pb.gz"));
    let top = pprof(&["-top", "-sample_index=accesses"], &f);
    assert_eq!(top_row(&top), ("16000".into(), "sum".into()), "{top}");
}

/// `-o FILE` makes a file with the mode the user's umask gives (0666 less it), as the user's
/// other files get; it was 0600.
#[test]
fn outputs_get_the_mode_the_umask_gives() {
    use std::os::unix::fs::PermissionsExt;
    let b = built();
    let s = Scratch::new();
    for (umask, mode) in [("022", 0o644), ("027", 0o640), ("077", 0o600)] {
        let file = s.path(&format!("out.{umask}.txt"));
        let out = Command::new("sh")
            .env("XDG_CACHE_HOME", probe_cache_home())
            .arg("-c")
            .arg(format!(
                "umask {umask} && exec \"$0\" report --format collapsed -o \"$1\" \"$2\""
            ))
            .arg(profcc())
            .arg(&file)
            .arg(&b.p1)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let m = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(m, mode, "umask {umask}: {m:o}");
    }
}

/// `--trace FILE` of two inputs with the same pid (two runs): two processes, named with the
/// real pid and the input; a thread's region slices are laid one after another from the
/// interval's start (name order), cut at the interval's end, so none overlaps another, each
/// with its interval's exact bytes; the file gets the umask's mode.
#[test]
fn trace_slices_do_not_overlap_and_each_input_is_a_process() {
    use profcc_schema::regions::{Regions, SnapRow, Snapshot};
    let row = |region: &str, thread: u32, executions: u64, ms: u64, bytes_read: u64| SnapRow {
        region: region.into(),
        thread,
        executions,
        // tsc_hz below is 1e9: a tick is a nanosecond.
        ticks: ms * 1_000_000,
        bytes_read,
        bytes_written: 0,
        instructions: 0,
    };
    let profile = profcc_schema::Profile {
        format: profcc_schema::FORMAT.into(),
        version: profcc_schema::VERSION,
        exe: "/bin/prog".into(),
        pid: 4242,
        regions: Some(Regions {
            tsc_hz: 1e9,
            interval_ms: 10,
            snapshots: vec![
                Snapshot {
                    ns: 10_000_000,
                    rows: vec![
                        row("outer", 0, 1, 6, 1000),
                        row("inner", 0, 1, 3, 400),
                        row("other", 1, 2, 2, 50),
                    ],
                    heap: None,
                    sites: Vec::new(),
                },
                Snapshot {
                    ns: 20_000_000,
                    rows: vec![
                        row("outer", 0, 2, 14, 3000),
                        row("inner", 0, 2, 9, 1400),
                        row("other", 1, 2, 2, 50),
                    ],
                    heap: None,
                    sites: Vec::new(),
                },
            ],
            ..Default::default()
        }),
        ..Default::default()
    };
    let s = Scratch::new();
    let text = serde_json::to_string(&profile).unwrap();
    let (a, b) = (s.write("a.json", &text), s.write("b.json", &text));
    let trace = s.path("t.json");
    let out = Command::new("sh")
        .arg("-c")
        .arg("umask 027 && exec \"$0\" report --trace \"$1\" \"$2\" \"$3\"")
        .arg(profcc())
        .arg(&trace)
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    {
        use std::os::unix::fs::PermissionsExt;
        let m = std::fs::metadata(&trace).unwrap().permissions().mode() & 0o777;
        assert_eq!(m, 0o640, "{m:o}");
    }
    let t: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let events = t["traceEvents"].as_array().unwrap();
    let processes: BTreeMap<u64, String> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
        .map(|e| {
            (
                e["pid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut names: Vec<&String> = processes.values().collect();
    names.sort();
    assert_eq!(
        names,
        ["prog (pid 4242, input 0)", "prog (pid 4242, input 1)"],
        "{processes:?}"
    );
    for pid in processes.keys() {
        // Per thread, its slices by start: (region, ts µs, dur µs, bytes read).
        let mut by_thread: BTreeMap<u64, Vec<(String, f64, f64, u64)>> = BTreeMap::new();
        for e in events.iter().filter(|e| e["ph"] == "X" && e["pid"] == *pid) {
            by_thread
                .entry(e["tid"].as_u64().unwrap())
                .or_default()
                .push((
                    e["name"].as_str().unwrap().to_string(),
                    e["ts"].as_f64().unwrap(),
                    e["dur"].as_f64().unwrap(),
                    e["args"]["bytes_read"].as_u64().unwrap(),
                ));
        }
        for slices in by_thread.values_mut() {
            slices.sort_by(|x, y| x.1.total_cmp(&y.1));
            for w in slices.windows(2) {
                assert!(w[0].1 + w[0].2 <= w[1].1, "overlap: {w:?}");
            }
        }
        let s = |r: &str, ts: f64, dur: f64, bytes: u64| (r.to_string(), ts, dur, bytes);
        assert_eq!(
            by_thread[&0],
            [
                s("inner", 0.0, 3000.0, 400),
                s("outer", 3000.0, 6000.0, 1000),
                s("inner", 10000.0, 6000.0, 1000),
                s("outer", 16000.0, 4000.0, 2000),
            ]
        );
        assert_eq!(by_thread[&1], [s("other", 0.0, 2000.0, 50)]);
    }
}

/// Main allocates and first touches N longs, a second thread reads them all: under
/// `numa=emulate:numa_nodes=2` (thread t on node t mod 2) every read at MARK_REMOTE is remote.
const NUMA_SRC: &str = r#"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define N (1 << 16)
static long *a;
static void *reader(void *arg) {
  long s = 0;
  for (long i = 0; i < N; i++) s += a[i]; /* MARK_REMOTE */
  *(long *)arg = s;
  return NULL;
}
int main(void) {
  a = malloc(N * sizeof(long)); /* MARK_ALLOC */
  for (long i = 0; i < N; i++) a[i] = i; /* MARK_TOUCH */
  long s = 0;
  pthread_t t;
  pthread_create(&t, NULL, reader, &s);
  pthread_join(t, NULL);
  printf("%ld\n", s);
  free(a);
  return 0;
}
"#;

/// The NUMA and sharing costs: remote accesses and first touches (a NUMA build, two runs
/// merged) and invalidations (tests/fixtures/sharing/counters_global.c, two threads) reach
/// the exports with the report's figures: collapsed sums equal the NUMA section's remote
/// accesses and pages and the sharing findings' invalidations, at the lines that made them;
/// pprof's `rank`, `thread` and `object` labels select an input, a thread and an object;
/// callgrind_annotate sorts by `RemoteAccesses`; speedscope has a profile per cost.
#[test]
fn numa_and_sharing_costs_reach_every_export() {
    let s = Scratch::new();
    s.write("numa.c", NUMA_SRC);
    s.compile_env(
        &profcc(),
        &["-O1", "-g", "-pthread", "numa.c", "-o", "numa"],
        &[("PROFCC_INSTRUMENT", "numa")],
    );
    let mut runs = Vec::new();
    for n in 1..=2 {
        let (out, _) = s.run_profiled("numa", &[], "summary=0:numa=emulate:numa_nodes=2");
        assert!(out.status.success());
        let p = s.path(&format!("n{n}.json"));
        std::fs::rename(s.path("numa.profile.json"), &p).unwrap();
        runs.push(p);
    }
    let (n1, n2) = (runs[0].as_path(), runs[1].as_path());
    let r1 = report(n1, &["--top", "0"]);
    let r2 = report(n2, &["--top", "0"]);
    let numa1 = &r1.numa.as_ref().expect("a NUMA section").inputs[0];
    let numa2 = &r2.numa.as_ref().unwrap().inputs[0];
    let file = r1
        .access_sites
        .lines
        .iter()
        .find(|l| l.file.ends_with("numa.c"))
        .unwrap()
        .file
        .clone();
    let at = |m: &str| format!("{file}:{}", line_of(NUMA_SRC, m));
    let collapsed = |cost: &str, p: &[&Path]| {
        parse_collapsed(
            &String::from_utf8(export(&["--format", "collapsed", "--cost", cost], p)).unwrap(),
        )
    };

    let remote = collapsed("remote-accesses", &[n1]);
    assert_eq!(remote.iter().map(|x| x.1).sum::<u64>(), numa1.remote);
    let site = numa1
        .sites
        .iter()
        .find(|x| x.place.as_deref() == Some(at("MARK_REMOTE").as_str()))
        .unwrap();
    assert_eq!(site.remote, 1 << 16, "{site:?}");
    assert_eq!(
        count_ending(&remote, &["reader", &at("MARK_REMOTE")]),
        1 << 16
    );
    let touches = collapsed("first-touches", &[n1]);
    assert_eq!(touches.iter().map(|x| x.1).sum::<u64>(), numa1.pages);
    let touch = numa1
        .first_touch
        .iter()
        .find(|x| x.place.as_deref() == Some(at("MARK_TOUCH").as_str()))
        .unwrap();
    assert!(touch.pages >= 128, "{touch:?}");
    assert_eq!(
        count_ending(&touches, &["main", &at("MARK_TOUCH")]),
        touch.pages
    );

    // Merged: rank selects an input, thread and object the first touches.
    let f = export_file(&["--format", "pprof"], &[n1, n2], &s.path("numa.pb.gz"));
    let top = pprof(&["-top", "-sample_index=remote_accesses"], &f);
    assert_eq!(
        top_row(&top),
        ((numa1.remote + numa2.remote).to_string(), "reader".into()),
        "{top}"
    );
    for (rank, numa) in [(0, numa1), (1, numa2)] {
        let top = pprof(
            &[
                "-top",
                "-sample_index=remote_accesses",
                &format!("-tagfocus=rank={rank}"),
            ],
            &f,
        );
        assert_eq!(
            top_row(&top),
            (numa.remote.to_string(), "reader".into()),
            "rank {rank}: {top}"
        );
    }
    let top = pprof(
        &["-top", "-sample_index=first_touches", "-tagfocus=thread=0"],
        &f,
    );
    assert_eq!(
        top_row(&top),
        (format!("{}pages", numa1.pages + numa2.pages), "main".into()),
        "{top}"
    );
    let top = pprof(
        &[
            "-top",
            "-sample_index=first_touches",
            "-tagfocus=object=heap block allocated at",
        ],
        &f,
    );
    assert!(
        top.contains(&format!(
            "Showing nodes accounting for {}pages",
            2 * touch.pages
        )),
        "{top}"
    );
    let cg = export_file(&["--format", "callgrind"], &[n1], &s.path("numa.callgrind"));
    let by_remote = String::from_utf8_lossy(
        &sh(Command::new("callgrind_annotate")
            .current_dir(s.path(""))
            .arg("--sort=RemoteAccesses")
            .arg(&cg))
        .stdout,
    )
    .into_owned();
    let first = by_remote
        .lines()
        .skip_while(|l| !l.contains("file:function"))
        .nth(2)
        .unwrap();
    assert!(first.ends_with("numa.c:reader"), "{by_remote}");
    let profiles = check_speedscope(&export(&["--format", "speedscope"], &[n1]));
    assert_eq!(profiles["remote accesses"].1, numa1.remote);
    assert_eq!(profiles["pages first touched"].1, numa1.pages);

    // Sharing: counters_global.c's false sharing on `counters`, written at MARK_STORE.
    let src = fixture("sharing/counters_global.c");
    s.compile(
        &profcc(),
        &[
            "-O1",
            "-g",
            "-pthread",
            src.to_str().unwrap(),
            "-o",
            "counters",
        ],
    );
    let (out, _) = s.run_profiled("counters", &["2"], "summary=0");
    assert!(out.status.success());
    let p = s.path("counters.profile.json");
    // Every finding listed and exported, whatever its predicted gain: on a machine so busy
    // that the two workers hardly ran at once the gain predicted from this run's overlap
    // falls under the listing threshold (issue 43), and this test is about the exports.
    let all = ["--min-speedup", "0"];
    let r = report(&p, &["--top", "0", all[0], all[1]]);
    let findings = &r.sharing.as_ref().expect("a sharing section").findings;
    let invalidations: u64 = findings.iter().map(|f| f.invalidations).sum();
    assert!(invalidations > 0, "{findings:?}");
    let store = format!(
        "{}:{}",
        findings[0].places[0].file,
        line_of(&std::fs::read_to_string(&src).unwrap(), "MARK_STORE")
    );
    let inv = parse_collapsed(
        &String::from_utf8(export(
            &[
                "--format",
                "collapsed",
                "--cost",
                "invalidations",
                all[0],
                all[1],
            ],
            &[&p],
        ))
        .unwrap(),
    );
    assert_eq!(inv.iter().map(|x| x.1).sum::<u64>(), invalidations);
    assert_eq!(
        count_ending(&inv, &["worker", &store]),
        findings[0].invalidations,
        "{inv:?}"
    );
    let f = export_file(
        &["--format", "pprof", all[0], all[1]],
        &[&p],
        &s.path("counters.pb.gz"),
    );
    for focus in ["object=^counters$", "thread=2"] {
        let top = pprof(
            &[
                "-top",
                "-sample_index=invalidations",
                &format!("-tagfocus={focus}"),
            ],
            &f,
        );
        assert_eq!(
            top_row(&top),
            (findings[0].invalidations.to_string(), "worker".into()),
            "{focus}: {top}"
        );
    }
}

/// Three ranks (the launcher's variables, no MPI) of 1, 2 and 3 x WORK elements, given out
/// of rank order: callgrind has one part per rank, in rank order, each with its pid, its
/// rank and that rank's exact costs at the fill, sum and allocation lines, and
/// callgrind_annotate reads the file (warning only about the later parts' headers) with the
/// job's totals and the sum line's accesses of all ranks; pprof's `rank` label selects one
/// rank's accesses; threads.csv and findings.csv carry the rank next to the input.
#[test]
fn rank_profiles_keep_their_rank_in_callgrind_pprof_and_csv() {
    const WORK: u64 = 20_000;
    let s = Scratch::new();
    let ranked = fake_ranks(&s, "ranks", 3, |r| WORK * (r as u64 + 1));
    let profiles: Vec<&Path> = [2, 0, 1].iter().map(|&r| ranked[r].as_path()).collect();
    let read = |r: usize| profcc_schema::read(&ranked[r]).unwrap();
    let (fill, work, alloc) = (
        line_of(RANK_WORK_SRC, "// fill"),
        line_of(RANK_WORK_SRC, "// work"),
        line_of(RANK_WORK_SRC, "// alloc"),
    );

    let cg = export_file(
        &["--format", "callgrind"],
        &profiles,
        &s.path("ranks.callgrind"),
    );
    let text = std::fs::read_to_string(&cg).unwrap();
    let parts: Vec<&str> = text.split("\npart: ").skip(1).collect();
    assert_eq!(parts.len(), 3, "{text}");
    for (r, part) in parts.iter().enumerate() {
        let p = read(r);
        let n = WORK * (r as u64 + 1);
        assert!(
            part.starts_with(&format!("{}\npid: {}\n", r + 1, p.pid)),
            "{part}"
        );
        assert!(
            part.contains(&format!("desc: Rank: rank {r} ({}), profile ", p.host)),
            "{part}"
        );
        // Events: AllocBytes AllocCalls Accesses Reads Writes (trailing zeros left out).
        assert!(
            part.contains(&format!("\n{work} 0 0 {n} {n}\n")),
            "rank {r}: {part}"
        );
        assert!(
            part.contains(&format!("\n{fill} 0 0 {n} 0 {n}\n")),
            "rank {r}: {part}"
        );
        assert!(
            part.contains(&format!("\n{alloc} {} 1\n", 8 * n)),
            "rank {r}: {part}"
        );
    }
    let merged = report(
        profiles[0],
        &[
            "--top",
            "0",
            profiles[1].to_str().unwrap(),
            profiles[2].to_str().unwrap(),
        ],
    );
    let out = Command::new("callgrind_annotate")
        .current_dir(s.path(""))
        .arg("--sort=Accesses")
        .arg(&cg)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Four header lines of each later part: part, pid, desc, events.
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("WARNING: line ") && l.ends_with(" malformed, ignoring"))
        .collect();
    assert_eq!(warnings.len(), 2 * 4, "{stderr}");
    for l in stderr.lines() {
        assert!(
            l.starts_with("WARNING: line ") || l.starts_with("    line: '"),
            "{stderr}"
        );
    }
    let annotated = String::from_utf8_lossy(&out.stdout);
    let thousands = profcc_report::fmt::count;
    let totals = line_with(&annotated, &["PROGRAM TOTALS"]);
    for v in [
        merged.summary.totals.accesses,
        merged.summary.totals.bytes_allocated,
    ] {
        assert!(
            totals.contains(&thousands(v)),
            "{} in {totals}",
            thousands(v)
        );
    }
    // The sum line: no bytes or calls, then its accesses and reads over all ranks.
    let sum_line = line_with(&annotated, &["// work"]);
    let cells: Vec<&str> = sum_line.split_whitespace().collect();
    assert_eq!(
        (cells[0], cells[1], cells[2], cells[4]),
        (
            "0",
            "0",
            thousands(6 * WORK).as_str(),
            thousands(6 * WORK).as_str()
        ),
        "{sum_line}"
    );

    // pprof: -tagfocus=rank=R keeps rank R's accesses, all of its sites' counts.
    let pb = export_file(&["--format", "pprof"], &profiles, &s.path("ranks.pb.gz"));
    for r in 0..3 {
        let sites: u64 = read(r).sites.iter().map(|x| x.count).sum();
        let top = pprof(
            &[
                "-top",
                "-sample_index=accesses",
                &format!("-tagfocus=rank={r}"),
            ],
            &pb,
        );
        assert!(
            top.contains(&format!("Showing nodes accounting for {sites}, ")),
            "rank {r}: {sites}\n{top}"
        );
        assert_eq!(top_row(&top), (sites.to_string(), "main".into()), "{top}");
    }

    // CSV: input 0 is rank 2's profile; its thread's row says so.
    let dir = s.path("csv");
    export(&["--csv", dir.to_str().unwrap()], &profiles);
    let mut rd = csv::Reader::from_path(dir.join("threads.csv")).unwrap();
    let header = rd.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    assert_eq!(col("rank"), col("input") + 1);
    let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
    for (input, rank) in [(0usize, 2usize), (1, 0), (2, 1)] {
        let p = read(rank);
        let main: Vec<&csv::StringRecord> = rows
            .iter()
            .filter(|x| x[col("input")] == input.to_string())
            .collect();
        assert_eq!(main.len(), 1, "{rows:?}");
        assert_eq!(&main[0][col("rank")], rank.to_string(), "{rows:?}");
        assert_eq!(&main[0][col("pid")], p.pid.to_string(), "{rows:?}");
        assert_eq!(
            &main[0][col("accesses")],
            p.threads[0].accesses.to_string(),
            "{rows:?}"
        );
    }
    let mut rd = csv::Reader::from_path(dir.join("findings.csv")).unwrap();
    let header: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
    let at = header.iter().position(|h| h == "input").unwrap();
    assert_eq!(header[at + 1], "mpi_rank", "{header:?}");
}

/// `--trace FILE` of two rank profiles (given rank 1 first): each process is named
/// `rank N (host)`, its program, pid and input as its labels, sorted by rank, with its own
/// rank's slices.
#[test]
fn trace_names_each_rank_process_by_rank_and_host() {
    use profcc_schema::regions::{Regions, SnapRow, Snapshot};
    let profile = |rank: u32, host: &str, bytes_read: u64| profcc_schema::Profile {
        format: profcc_schema::FORMAT.into(),
        version: profcc_schema::VERSION,
        exe: "/bin/prog".into(),
        pid: 4242,
        host: host.into(),
        rank: Some(rank),
        ranks: Some(2),
        regions: Some(Regions {
            tsc_hz: 1e9,
            interval_ms: 10,
            snapshots: vec![Snapshot {
                ns: 10_000_000,
                rows: vec![SnapRow {
                    region: "solve".into(),
                    thread: 0,
                    executions: 1,
                    ticks: 4_000_000,
                    bytes_read,
                    bytes_written: 0,
                    instructions: 0,
                }],
                heap: None,
                sites: Vec::new(),
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let s = Scratch::new();
    let one = s.write(
        "r1.json",
        &serde_json::to_string(&profile(1, "nodeA", 2000)).unwrap(),
    );
    let zero = s.write(
        "r0.json",
        &serde_json::to_string(&profile(0, "nodeB", 1000)).unwrap(),
    );
    let trace = s.path("t.json");
    export(&["--trace", trace.to_str().unwrap()], &[&one, &zero]);
    let t: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let events = t["traceEvents"].as_array().unwrap();
    let meta = |name: &str, key: &str| -> BTreeMap<u64, serde_json::Value> {
        events
            .iter()
            .filter(|e| e["ph"] == "M" && e["name"] == name)
            .map(|e| (e["pid"].as_u64().unwrap(), e["args"][key].clone()))
            .collect()
    };
    let names = meta("process_name", "name");
    let sort = meta("process_sort_index", "sort_index");
    let labels = meta("process_labels", "labels");
    assert_eq!(names.len(), 2, "{names:?}");
    for (pid, name) in &names {
        let slices: Vec<u64> = events
            .iter()
            .filter(|e| e["ph"] == "X" && e["pid"] == *pid)
            .map(|e| e["args"]["bytes_read"].as_u64().unwrap())
            .collect();
        match name.as_str().unwrap() {
            "rank 0 (nodeB)" => {
                assert_eq!(sort[pid], 0);
                assert_eq!(labels[pid], "prog (pid 4242, input 1)");
                assert_eq!(slices, [1000]);
            }
            "rank 1 (nodeA)" => {
                assert_eq!(sort[pid], 1);
                assert_eq!(labels[pid], "prog (pid 4242, input 0)");
                assert_eq!(slices, [2000]);
            }
            other => panic!("process {other:?} in {names:?}"),
        }
    }
}

/// Two threads each first touch their own part of one heap block (NUMA emulated on two
/// nodes): main half of it at MARK_MAIN, the worker the rest at MARK_WORKER.
const TOUCH_SRC: &str = r#"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define N (1 << 17)
static long *a;
static void *worker(void *arg) {
  for (long i = N / 2; i < N; i++) a[i] = i; /* MARK_WORKER */
  return arg;
}
int main(void) {
  a = malloc(N * sizeof(long));
  for (long i = 0; i < N / 2; i++) a[i] = i; /* MARK_MAIN */
  pthread_t t;
  pthread_create(&t, NULL, worker, NULL);
  pthread_join(t, NULL);
  long s = 0;
  for (long i = 0; i < N; i++) s += a[i];
  printf("%ld\n", s);
  free(a);
  return 0;
}
"#;

/// `go tool pprof -tags` and `-tagfocus=thread=N` on first touches: the pages under each
/// thread are exactly that thread's first touches in the NUMA section (`numa.threads[]`), its
/// node label is the thread's node, and the top line under the worker's thread is its own
/// loop. Merged from two runs, `rank` splits them the same way.
#[test]
fn pprof_thread_labels_hold_each_threads_exact_first_touches() {
    let s = Scratch::new();
    s.write("touch.c", TOUCH_SRC);
    s.compile_env(
        &profcc(),
        &["-O1", "-g", "-pthread", "touch.c", "-o", "touch"],
        &[("PROFCC_INSTRUMENT", "numa")],
    );
    let mut runs = Vec::new();
    for n in 1..=2 {
        let (out, _) = s.run_profiled("touch", &[], "summary=0:numa=emulate:numa_nodes=2");
        assert!(out.status.success());
        let p = s.path(&format!("t{n}.json"));
        std::fs::rename(s.path("touch.profile.json"), &p).unwrap();
        runs.push(p);
    }
    let r = report(&runs[0], &["--top", "0"]);
    let numa = &r.numa.as_ref().unwrap().inputs[0];
    let pages = |t: u32| {
        numa.threads
            .iter()
            .find(|x| x.thread == t)
            .map_or(0, |x| x.first_touches)
    };
    let (main, worker) = (pages(0), pages(1));
    // 1 MiB: 256 pages, about half each (the page holding the middle goes to main).
    assert!(main >= 120 && worker >= 120, "{:?}", numa.threads);
    let f = export_file(&["--format", "pprof"], &[&runs[0]], &s.path("one.pb.gz"));
    // -tags: the thread label's values with their pages.
    let tags = pprof(&["-tags", "-sample_index=first_touches"], &f);
    let tag_value = |key: &str, value: &str| -> u64 {
        let block: Vec<&str> = tags
            .lines()
            .skip_while(|l| !l.trim_start().starts_with(&format!("{key}:")))
            .skip(1)
            .take_while(|l| !l.trim().is_empty() && !l.trim_start().contains(": Total"))
            .collect();
        let line = block
            .iter()
            .find(|l| l.trim_end().ends_with(&format!(": {value}")))
            .unwrap_or_else(|| panic!("no {key}={value} in:\n{tags}"));
        // `131.0 (50.58%): 0`: the pages, printed as a float.
        let v: f64 = line
            .split_whitespace()
            .next()
            .unwrap()
            .trim_end_matches("pages")
            .parse()
            .unwrap_or_else(|e| panic!("{line}: {e}"));
        assert_eq!(v.fract(), 0.0, "{line}");
        v as u64
    };
    assert_eq!(tag_value("thread", "0"), main, "{tags}");
    assert_eq!(tag_value("thread", "1"), worker, "{tags}");
    let node = |t: u32| {
        numa.threads
            .iter()
            .find(|x| x.thread == t)
            .unwrap()
            .node
            .unwrap()
    };
    assert_ne!(node(0), node(1), "{:?}", numa.threads);
    assert_eq!(tag_value("node", &node(1).to_string()), worker, "{tags}");
    // -tagfocus=thread=1: the worker's pages, at its loop.
    let top = pprof(
        &["-top", "-sample_index=first_touches", "-tagfocus=thread=1"],
        &f,
    );
    assert_eq!(
        top_row(&top),
        (format!("{worker}pages"), "worker".into()),
        "{top}"
    );
    let top = pprof(
        &["-top", "-sample_index=first_touches", "-tagfocus=thread=0"],
        &f,
    );
    assert_eq!(
        top_row(&top),
        (format!("{main}pages"), "main".into()),
        "{top}"
    );

    // Merged: thread 1 of rank 1 is the second run's worker alone.
    let r2 = report(&runs[1], &["--top", "0"]);
    let worker2 = r2.numa.as_ref().unwrap().inputs[0]
        .threads
        .iter()
        .find(|x| x.thread == 1)
        .unwrap()
        .first_touches;
    let both = export_file(
        &["--format", "pprof"],
        &[&runs[0], &runs[1]],
        &s.path("both.pb.gz"),
    );
    let top = pprof(
        &["-top", "-sample_index=first_touches", "-tagfocus=thread=1"],
        &both,
    );
    assert_eq!(
        top_row(&top),
        (format!("{}pages", worker + worker2), "worker".into()),
        "{top}"
    );
    let top = pprof(
        &[
            "-top",
            "-sample_index=first_touches",
            "-tagfocus=rank=1",
            "-tagignore=thread=0",
        ],
        &both,
    );
    assert_eq!(
        top_row(&top),
        (format!("{worker2}pages"), "worker".into()),
        "{top}"
    );
}
