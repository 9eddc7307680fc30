//! `profcc diff` and the CI gate `profcc check` end to end (docs/diff.md), on
//! fixtures/diff/slots.c: per-thread slots in one heap array, falsely shared, and the same
//! source built with `-DPAD` (each slot on a line of its own).

use profcc_report::diff::{Diff, Verdict};
use profcc_tests::browser;
use profcc_tests::*;
use std::process::{Command, Output};

const SRC: &str = "diff/slots.c";

/// Build slots.c as `DIR/prog` (the same program name on both sides), with extra flags.
fn build(s: &Scratch, dir: &str, flags: &[&str]) {
    std::fs::create_dir_all(s.path(dir)).unwrap();
    std::fs::copy(fixture(SRC), s.path("slots.c")).unwrap();
    let out = format!("{dir}/prog");
    let mut args = vec!["-O2", "-g", "-pthread"];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["slots.c", "-o", &out]);
    s.compile_env(&profcc(), &args, &[("PROFCC_INSTRUMENT", "sharing")]);
}

/// Run `DIR/prog THREADS ROUNDS`; the profile's path (scratch-relative name `NAME.json`).
fn run(s: &Scratch, dir: &str, threads: u32, rounds: u32, name: &str) -> String {
    let exe = format!("{dir}/prog");
    let (out, _) = s.run_profiled(
        &exe,
        &[&threads.to_string(), &rounds.to_string()],
        "summary=0",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = format!("{name}.json");
    std::fs::rename(s.path(&format!("{exe}.profile.json")), s.path(&file)).unwrap();
    file
}

/// `profcc ARGS` in the scratch directory (where a `profcc-gate.toml` is found).
fn profcc_in(s: &Scratch, args: &[&str]) -> Output {
    Command::new(profcc())
        .current_dir(s.dir.path())
        .env("XDG_CACHE_HOME", probe_cache_home())
        .args(args)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn diff_json(s: &Scratch, args: &[&str]) -> Diff {
    let mut a = vec!["diff", "--format", "json"];
    a.extend_from_slice(args);
    let o = profcc_in(s, &a);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Padding the slots: `profcc diff` names the false sharing on the array allocated at the
/// CALLOC line as gone (and nothing new of that kind); `profcc check --baseline after
/// before` fails (exit 1) naming that line and the rule; the reverse passes (exit 0); the
/// JSON verdict agrees with the exit code; Markdown has tables; a missing profile, a
/// profile of another program and a bad gate file are bad input (exit 2, one line).
#[test]
fn padding_the_slots_is_a_gone_finding_and_the_gate_sees_it() {
    let s = Scratch::new();
    build(&s, "before", &[]);
    build(&s, "after", &["-DPAD"]);
    let before = run(&s, "before", 2, 1024, "before");
    let after = run(&s, "after", 2, 1024, "after");
    let src = std::fs::read_to_string(fixture(SRC)).unwrap();
    let alloc = format!("slots.c:{}", line_of(&src, "MARK_CALLOC"));
    let store = format!("slots.c:{}", line_of(&src, "MARK_STORE"));

    let d = diff_json(&s, &[&before, &after]);
    let gone: Vec<_> = d
        .findings
        .gone
        .iter()
        .filter(|f| f.kind == "false_sharing")
        .collect();
    assert_eq!(gone.len(), 1, "{:#?}", d.findings);
    assert_eq!(
        gone[0].key,
        format!("sharing/false_sharing/heap:{alloc}@{store}")
    );
    assert!(gone[0].title.contains(&alloc), "{}", gone[0].title);
    assert!(
        !d.findings.new.iter().any(|f| f.kind == "false_sharing"),
        "{:#?}",
        d.findings.new
    );
    let inv = d
        .metrics
        .iter()
        .find(|m| m.metric == "invalidations" && m.scope == "total")
        .expect("total invalidations");
    assert!(
        inv.base.unwrap() > 1000.0 && inv.new == Some(0.0),
        "{inv:?}"
    );
    assert_eq!(inv.verdict, "better");
    // The same accesses on both sides: the padding changes layout, not work.
    let acc = d
        .metrics
        .iter()
        .find(|m| m.metric == "accesses" && m.scope == "total")
        .unwrap();
    assert_eq!(acc.base, acc.new, "{acc:?}");

    let t = profcc_in(&s, &["diff", &before, &after]);
    assert_eq!(code(&t), 0);
    let out = text(&t.stdout);
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("gone") && l.contains(&alloc)),
        "{out}"
    );

    let md = profcc_in(&s, &["diff", "--format", "markdown", &before, &after]);
    assert_eq!(code(&md), 0);
    let md = text(&md.stdout);
    assert!(
        md.contains("| metric | scope | base | new | change |"),
        "{md}"
    );
    assert!(md.contains("|---|---|---:|---:|---:|---|"), "{md}");
    assert!(
        md.lines()
            .any(|l| l.starts_with("| ✅ gone |") && l.contains(&alloc)),
        "{md}"
    );
    assert!(
        md.lines()
            .any(|l| l.starts_with("| invalidations | `total` |") && l.contains("better")),
        "{md}"
    );

    let worse = profcc_in(&s, &["check", "--baseline", &after, &before]);
    assert_eq!(
        code(&worse),
        1,
        "{}{}",
        text(&worse.stdout),
        text(&worse.stderr)
    );
    let out = text(&worse.stdout);
    let fails: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!(fails.len(), 1, "{out}");
    assert!(
        fails[0].contains(&alloc)
            && fails[0].contains(&store)
            && fails[0].contains("a new false_sharing is a regression whatever its size"),
        "{out}"
    );
    assert!(
        out.starts_with("profcc check: REGRESSED (1 regression"),
        "{out}"
    );

    let better = profcc_in(&s, &["check", "--baseline", &before, &after]);
    assert_eq!(
        code(&better),
        0,
        "{}{}",
        text(&better.stdout),
        text(&better.stderr)
    );
    let out = text(&better.stdout);
    assert!(
        out.starts_with("profcc check: PASS (0 regressions"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("good gone:") && l.contains(&alloc)),
        "{out}"
    );

    let j = profcc_in(
        &s,
        &["check", "--format", "json", "--baseline", &after, &before],
    );
    assert_eq!(code(&j), 1);
    let v: Verdict = serde_json::from_slice(&j.stdout).unwrap();
    assert_eq!((v.verdict.as_str(), v.regressions), ("regressed", 1));
    assert!(v.lines[0].at.contains(&store) && v.lines[0].change.contains(&alloc));

    // Bad input: exit 2 and one line naming the problem.
    for args in [
        vec!["diff", before.as_str(), "missing.json"],
        vec!["check", "--baseline", "missing.json", before.as_str()],
        vec!["diff", before.as_str(), after.as_str(), "third.json"],
    ] {
        let o = profcc_in(&s, &args);
        let e = text(&o.stderr);
        assert_eq!(code(&o), 2, "{args:?}: {e}");
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
        assert!(
            e.contains("missing.json") || e.contains("BASE... -- NEW..."),
            "{args:?}: {e}"
        );
    }
    // A profile of another program.
    std::fs::copy(s.path("before/prog"), s.path("other")).unwrap();
    let (o, _) = s.run_profiled("other", &["2", "64"], "summary=0");
    assert!(o.status.success());
    let o = profcc_in(&s, &["check", "--baseline", &before, "other.profile.json"]);
    let e = text(&o.stderr);
    assert_eq!(code(&o), 2, "{e}");
    assert!(
        e.contains("the baseline is prog but NEW is other") && e.lines().count() == 1,
        "{e}"
    );
    // A gate file that is not one.
    s.write(
        "bad.toml",
        "[[limit]]\nmetric = \"accesses\"\nrelativ = 0.1\n",
    );
    let o = profcc_in(
        &s,
        &[
            "check",
            "--config",
            "bad.toml",
            "--baseline",
            &before,
            &after,
        ],
    );
    let e = text(&o.stderr);
    assert_eq!(code(&o), 2, "{e}");
    assert!(
        e.contains("bad.toml: not a gate file") && e.lines().count() == 1,
        "{e}"
    );
}

/// The same program at two input sizes (1 thread, 256 and 1024 rounds: four times the
/// accesses, allocations and bytes) compares equal under `--normalize accesses`: no finding
/// new or gone, every figure except measured time "same"; without it the work figures are
/// worse.
#[test]
fn two_input_sizes_compare_equal_normalised_by_accesses() {
    let s = Scratch::new();
    build(&s, "b", &[]);
    let small = run(&s, "b", 1, 256, "small");
    let large = run(&s, "b", 1, 1024, "large");
    let d = diff_json(&s, &["--normalize", "accesses", &small, &large]);
    let n = d.normalize.as_ref().unwrap();
    assert_eq!(n.by, "accesses");
    assert!((n.factor - 0.25).abs() < 0.01, "{n:?}");
    assert!(
        d.findings.new.is_empty() && d.findings.gone.is_empty(),
        "{:#?}",
        d.findings
    );
    let mut compared = 0;
    for m in d.metrics.iter().filter(|m| !m.metric.contains("seconds")) {
        assert_eq!(m.verdict, "same", "{m:?}");
        compared += 1;
    }
    assert!(compared >= 5, "{:#?}", d.metrics);
    let raw = diff_json(&s, &[&small, &large]);
    for name in ["accesses", "allocations", "bytes_allocated"] {
        let m = raw
            .metrics
            .iter()
            .find(|m| m.metric == name && m.scope == "total")
            .unwrap();
        assert_eq!(m.verdict, "worse", "{m:?}");
        assert!((m.relative.unwrap() - 3.0).abs() < 0.05, "{m:?}");
    }
    let o = profcc_in(&s, &["diff", "--normalize", "region:solve", &small, &large]);
    assert_eq!(code(&o), 2);
    assert!(
        text(&o.stderr).contains("no region `solve`"),
        "{}",
        text(&o.stderr)
    );
}

const GATE: &str = "\
[[limit]]
metric = \"accesses\"
scope = \"total\"
relative = 0.10
floor = 1000
";

/// A limit of the gate file trips and is named: twice the rounds (1 thread) is +100 %
/// accesses, past `relative = 0.10`; the line names the limit. A change inside the spread
/// of three baseline runs (256, 384, 512 rounds; NEW 448) passes the same limit, and one
/// past the worst baseline run (640) fails; NEW 448 against the 256-round run alone fails.
#[test]
fn gate_limits_trip_and_a_change_inside_the_spread_passes() {
    let s = Scratch::new();
    s.write("profcc-gate.toml", GATE);
    build(&s, "b", &[]);
    let r256 = run(&s, "b", 1, 256, "r256");
    let r384 = run(&s, "b", 1, 384, "r384");
    let r512 = run(&s, "b", 1, 512, "r512");
    let r448 = run(&s, "b", 1, 448, "r448");
    let r640 = run(&s, "b", 1, 640, "r640");

    let o = profcc_in(&s, &["check", "--baseline", &r256, &r512]);
    let out = text(&o.stdout);
    assert_eq!(code(&o), 1, "{out}{}", text(&o.stderr));
    let fails: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!(fails.len(), 1, "{out}");
    assert!(
        fails[0].starts_with("FAIL accesses:")
            && fails[0].contains("[total]")
            && fails[0].contains("crossed limit accesses in total relative 10% floor 1000"),
        "{out}"
    );
    assert!(out.contains("limits from profcc-gate.toml"), "{out}");
    // The same limit from --config, somewhere else.
    std::fs::create_dir(s.path("ci")).unwrap();
    std::fs::rename(s.path("profcc-gate.toml"), s.path("ci/gate.toml")).unwrap();
    let o = profcc_in(&s, &["check", "--baseline", &r256, &r512]);
    assert_eq!(
        code(&o),
        0,
        "no gate file: the findings rule only: {}",
        text(&o.stdout)
    );
    let check = |base: &[&str], new: &str| {
        let mut a = vec!["check", "--config", "ci/gate.toml", "--baseline"];
        a.extend_from_slice(base);
        a.push(new);
        profcc_in(&s, &a)
    };
    let o = check(&[&r256], &r512);
    assert_eq!(code(&o), 1, "{}", text(&o.stdout));
    assert!(text(&o.stdout).contains("limits from ci/gate.toml"));

    let inside = check(&[&r256, &r384, &r512], &r448);
    let out = text(&inside.stdout);
    assert_eq!(code(&inside), 0, "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("ok   accesses:") && l.contains("inside the baseline's spread")),
        "{out}"
    );
    let past = check(&[&r256, &r384, &r512], &r640);
    let out = text(&past.stdout);
    assert_eq!(code(&past), 1, "{out}");
    assert!(
        out.lines().any(|l| l.starts_with("FAIL accesses:")
            && l.contains("past the baseline's worst run")),
        "{out}"
    );
    let alone = check(&[&r256], &r448);
    assert_eq!(code(&alone), 1, "{}", text(&alone.stdout));
}

/// The frames of the page's flame graph (`data-flame`): (class, title, name) of each.
fn flame_frames(dom: &str) -> Vec<(String, String, String)> {
    let box_ = browser::fragment(dom, "data-flame=\"1\"", "</section>");
    box_.split("<div ")
        .skip(1)
        .filter_map(|d| {
            let attr = |name: &str| {
                let at = d.find(&format!("{name}=\""))? + name.len() + 2;
                Some(browser::text(&d[at..at + d[at..].find('"')?]))
            };
            let name = browser::text(&d[d.find('>')? + 1..d.find("</div>")?]);
            Some((attr("class")?, attr("title").unwrap_or_default(), name))
        })
        .collect()
}

/// `profcc diff --format html` on the slots.c pair (before -> after) in a headless Chromium:
/// the page names nothing outside itself and is the same on standard output as with `-o`;
/// its script ran without error; the Findings tab lists the false sharing of the array
/// allocated at the CALLOC line with a GONE badge (and nothing else); the Summary's headline
/// table has total invalidations `better` (green class) down to 0 and the same total accesses
/// on both sides; the Objects and lines tab has the STORE line's exact access counts on both
/// sides (2 threads x 1024 rounds x 1024 increments, a load and a store each: 4,194,304), a
/// zero delta and `same`; the flame graph's cost selector lists the costs of either side and
/// opens on the one that changed most, the invalidations, all gone: BASE's frames (the total
/// as in the headline table, the fixture's `worker` and the STORE line) coloured
/// `diff-less diff-gone`. Two threads against four of the same program: `worker`'s frame is
/// `diff-more` (a + change in its tooltip), and the reverse `diff-less`.
#[test]
fn html_diff_of_padding_the_slots_in_a_browser() {
    let s = Scratch::new();
    build(&s, "before", &[]);
    build(&s, "after", &["-DPAD"]);
    let before = run(&s, "before", 2, 1024, "before");
    let after = run(&s, "after", 2, 1024, "after");
    let four = run(&s, "before", 4, 1024, "four");
    let src = std::fs::read_to_string(fixture(SRC)).unwrap();
    let alloc = format!("slots.c:{}", line_of(&src, "MARK_CALLOC"));
    let store = format!("slots.c:{}", line_of(&src, "MARK_STORE"));

    let o = profcc_in(
        &s,
        &[
            "diff",
            "--format",
            "html",
            "-o",
            "diff.html",
            &before,
            &after,
        ],
    );
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    assert!(o.stdout.is_empty() && o.stderr.is_empty());
    let html = std::fs::read_to_string(s.path("diff.html")).unwrap();
    browser::assert_self_contained(&html);
    eprintln!("diff page of the slots.c pair: {} bytes", html.len());
    let piped = profcc_in(&s, &["diff", "--format", "html", &before, &after]);
    assert_eq!(code(&piped), 0);
    assert!(piped.stdout == html.as_bytes(), "stdout differs from -o");
    let d = diff_json(&s, &[&before, &after]);

    let dom = browser::dump_dom(&s, &s.path("diff.html"));
    browser::assert_no_script_error(&dom);

    let findings = browser::rows(
        browser::section(&dom, "findings"),
        "data-table=\"findings\"",
    );
    assert_eq!(findings.len(), 1, "{findings:?}");
    let f = &findings[0];
    assert_eq!(f[0], "GONE", "{f:?}");
    assert_eq!(f[1], "false sharing", "{f:?}");
    assert!(f[2].contains(&format!("allocated at {alloc}")), "{f:?}");
    assert!(f[3].ends_with(&store), "{f:?}");
    assert_eq!(f[5], "-", "no NEW side: {f:?}");

    let head = browser::rows(browser::section(&dom, "summary"), "data-table=\"headline\"");
    let inv = head
        .iter()
        .find(|r| r[0] == "invalidations" && r[1] == "total")
        .expect("total invalidations");
    let m = d
        .metrics
        .iter()
        .find(|m| m.metric == "invalidations" && m.scope == "total")
        .unwrap();
    let base_inv = m.base.unwrap() as u64;
    assert!(base_inv > 1000, "{m:?}");
    assert_eq!(
        inv[2..],
        [
            browser::thousands(base_inv),
            "0".to_string(),
            format!("-{}", browser::thousands(base_inv)),
            "-100.0%".to_string(),
            "better".to_string()
        ],
        "{inv:?}"
    );
    assert!(
        browser::fragment(&dom, "data-table=\"headline\"", "</table>")
            .contains("<span class=\"verdict v-better\">better</span>"),
        "no green verdict"
    );
    let acc = head
        .iter()
        .find(|r| r[0] == "accesses" && r[1] == "total")
        .unwrap();
    assert_eq!(acc[2], acc[3], "{acc:?}");

    let lines = browser::rows(browser::section(&dom, "changes"), "data-table=\"changes\"");
    let at_store: Vec<_> = lines
        .iter()
        .filter(|r| r[0] == "accesses" && r[1].ends_with(&store))
        .collect();
    assert_eq!(at_store.len(), 1, "{lines:?}");
    let exact = browser::thousands(2 * 1024 * 1024 * 2);
    assert_eq!(
        at_store[0][2..],
        [
            exact.clone(),
            exact,
            "0".into(),
            "0.0%".into(),
            "same".into()
        ],
        "{:?}",
        at_store[0]
    );

    // The flame graph opens on the cost that changed most: the invalidations, all gone, drawn
    // at BASE's size: the fixture's worker and its store line, blue.
    let select = browser::fragment(&dom, "<select>", "</select>");
    assert!(
        select.contains("<option value=\"invalidations\" selected=\"selected\">"),
        "{select}"
    );
    let costs: Vec<String> = select
        .split("<option")
        .skip(1)
        .map(|o| browser::text(&format!("<option{o}")))
        .collect();
    assert_eq!(
        costs,
        [
            "allocated bytes",
            "allocations",
            "live bytes at exit",
            "accesses",
            "invalidations"
        ],
        "{select}"
    );
    let frames = flame_frames(&dom);
    let named = |name: &str| {
        frames
            .iter()
            .find(|f| f.2 == name)
            .unwrap_or_else(|| panic!("no frame {name}: {frames:?}"))
            .clone()
    };
    let all = named("all");
    assert_eq!(all.0, "diff-less diff-gone", "{all:?}");
    assert!(
        all.1.starts_with(&format!(
            "all: new none, base {} (gone",
            browser::thousands(base_inv)
        )),
        "{all:?}"
    );
    assert_eq!(named("worker").0, "diff-less diff-gone", "{frames:?}");
    assert_eq!(named(&store).0, "diff-less diff-gone", "{frames:?}");

    // Two threads against four: twice the scratch buffers; and back.
    for (base, new, class, change) in [
        (&before, &four, "diff-more", "+"),
        (&four, &before, "diff-less", "-"),
    ] {
        let page = format!("{class}.html");
        let o = profcc_in(&s, &["diff", "--format", "html", "-o", &page, base, new]);
        assert_eq!(code(&o), 0, "{}", text(&o.stderr));
        let dom = browser::dump_dom(&s, &s.path(&page));
        browser::assert_no_script_error(&dom);
        let frames = flame_frames(&dom);
        let worker = frames
            .iter()
            .find(|f| f.2 == "worker")
            .unwrap_or_else(|| panic!("{frames:?}"));
        assert_eq!(worker.0, class, "{worker:?}");
        assert!(worker.1.contains(&format!(", {change}")), "{worker:?}");
    }
}

/// Rank profiles on both sides are matched by rank (four launcher-variable ranks, no MPI):
/// rank 2 doing 1.4 times the work is its own `rank:2` accesses change with its exact counts,
/// the other ranks' are "same"; a gate limit on `rank:*` fails naming rank 2 and the limit,
/// while the same limit on the total, or on `rank:3` only, passes; a plain profile against
/// the rank profiles has no rank metrics.
#[test]
fn ranks_are_matched_by_rank_and_gated_per_rank() {
    const WORK: u64 = 50_000;
    let s = Scratch::new();
    let base = fake_ranks(&s, "base", 4, |_| WORK);
    let new = fake_ranks(&s, "new", 4, |r| if r == 2 { WORK * 14 / 10 } else { WORK });
    let acc = |p: &std::path::PathBuf| profcc_schema::read(p).unwrap().totals.accesses;
    let names = |v: &[std::path::PathBuf]| -> Vec<String> {
        v.iter().map(|p| p.display().to_string()).collect()
    };
    let (b, n) = (names(&base), names(&new));
    let mut args: Vec<&str> = b.iter().map(String::as_str).collect();
    args.push("--");
    args.extend(n.iter().map(String::as_str));

    let d = diff_json(&s, &args);
    let rank = |r: u32| {
        d.metrics
            .iter()
            .find(|m| m.metric == "accesses" && m.scope == format!("rank:{r}"))
            .unwrap_or_else(|| panic!("no rank:{r} accesses in {:#?}", d.metrics))
    };
    let two = rank(2);
    assert_eq!(two.base, Some(acc(&base[2]) as f64));
    assert_eq!(two.new, Some(acc(&new[2]) as f64));
    assert_eq!(two.verdict, "worse");
    let rel = (acc(&new[2]) as f64 - acc(&base[2]) as f64) / acc(&base[2]) as f64;
    assert!(
        (two.relative.unwrap() - rel).abs() < 1e-12 && rel > 0.39,
        "{rel}"
    );
    for r in [0, 1, 3] {
        assert_eq!(rank(r).verdict, "same", "rank {r}: {:?}", rank(r));
        assert_eq!(rank(r).new, Some(acc(&new[r as usize]) as f64));
    }
    let bytes2 = d
        .metrics
        .iter()
        .find(|m| m.metric == "bytes_allocated" && m.scope == "rank:2")
        .unwrap();
    assert_eq!(bytes2.change, (8 * WORK * 4 / 10) as f64, "{bytes2:?}");
    let total = d
        .metrics
        .iter()
        .find(|m| m.metric == "accesses" && m.scope == "total")
        .unwrap();
    assert!(total.relative.unwrap() < 0.11, "{total:?}");
    let mut t = vec!["diff"];
    t.extend_from_slice(&args);
    let out = text(&profcc_in(&s, &t).stdout);
    assert!(
        out.lines().any(|l| l.trim_start().starts_with("accesses")
            && l.contains("rank:2")
            && l.contains("worse")),
        "{out}"
    );

    // The gate: rank:* at 20 % fails on rank 2 only; the total or rank 3 at 20 % passes.
    let gate = |scope: &str| {
        s.write(
            "profcc-gate.toml",
            &format!("[[limit]]\nmetric = \"accesses\"\nscope = \"{scope}\"\nrelative = 0.20\n"),
        );
        let mut a = vec!["check", "--baseline"];
        a.extend_from_slice(&args);
        profcc_in(&s, &a)
    };
    let o = gate("rank:*");
    let v = text(&o.stdout);
    assert_eq!(code(&o), 1, "{v}{}", text(&o.stderr));
    let fails: Vec<&str> = v.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!(fails.len(), 1, "{v}");
    assert!(
        fails[0].contains("[rank:2]")
            && fails[0].contains("crossed limit accesses in rank:* relative 20%")
            && fails[0].contains(&profcc_report::fmt::count(acc(&new[2]))),
        "{v}"
    );
    for scope in ["total", "rank:3"] {
        let o = gate(scope);
        assert_eq!(code(&o), 0, "{scope}: {}", text(&o.stdout));
    }

    // JSON verdict of the failing gate names the same scope.
    s.write(
        "profcc-gate.toml",
        "[[limit]]\nmetric = \"accesses\"\nscope = \"rank:*\"\nrelative = 0.20\n",
    );
    let mut a = vec!["check", "--format", "json", "--baseline"];
    a.extend_from_slice(&args);
    let o = profcc_in(&s, &a);
    let verdict: Verdict = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(verdict.verdict, "regressed");
    let at: Vec<&str> = verdict
        .lines
        .iter()
        .filter(|l| l.status == "regression")
        .map(|l| l.at.as_str())
        .collect();
    assert_eq!(at, ["rank:2"]);

    // A plain profile against the rank profiles: nothing is matched by rank.
    let plain = s.write("plain.json", &{
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&base[0]).unwrap()).unwrap();
        v.as_object_mut().unwrap().remove("rank");
        v.to_string()
    });
    let p = plain.display().to_string();
    let d = diff_json(&s, &[&p, "--", &n[0], &n[1], &n[2], &n[3]]);
    assert!(
        d.metrics.iter().all(|m| !m.scope.starts_with("rank:")),
        "{:#?}",
        d.metrics
    );
}
