//! `profcc report --format html` in a real browser (issue 44): Debian's
//! `chromium-headless-shell` loads the page from `file://` and `--dump-dom` prints what its
//! script built; the tests read what a user would read there (the top finding's `file:line`,
//! the NUMA matrix's numbers, the allocator's ops table, a region's exact bytes, a cache
//! line's word map with its writer threads), check that no script error was recorded and
//! that a screenshot is not blank.

use profcc_tests::browser::*;
use profcc_tests::*;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// The fixture built with sharing and NUMA instrumentation, run twice (NUMA emulated on two
/// nodes, the allocator analysis on), both profiles rendered as one page.
#[test]
fn html_report_of_two_merged_runs_in_a_browser() {
    let s = Scratch::new();
    std::fs::copy(fixture("html/all.c"), s.path("all.c")).unwrap();
    s.compile_env(
        &profcc(),
        &["-O2", "-g", "-pthread", "all.c", "-o", "all"],
        &[("PROFCC_INSTRUMENT", "sharing,numa")],
    );
    // Exact recording (`alloc_sample=0`): the allocator tab's memory split and utilisation.
    let options = "summary=0:numa=emulate:numa_nodes=2:alloc_sample=0:alloc_ops=1:roi_interval=5";
    let mut profiles = Vec::new();
    for run in ["one", "two"] {
        let (out, _) = s.run_profiled("all", &[], options);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let p = s.path(&format!("{run}.json"));
        // The first run's machine calibrated (its bandwidth: 1 thread 10 GB/s, 2 threads 16
        // GB/s), the second's not.
        let mut profile = profcc_schema::read(&s.path("all.profile.json")).unwrap();
        profile.regions.as_mut().unwrap().machine_bandwidth =
            (run == "one").then_some(CALIBRATED_BANDWIDTH);
        std::fs::write(&p, serde_json::to_vec(&profile).unwrap()).unwrap();
        profiles.push(p);
    }
    let page = s.path("report.html");
    sh(Command::new(profcc())
        .env("XDG_CACHE_HOME", probe_cache_home())
        .args(["report", "--format", "html", "-o"])
        .arg(&page)
        .arg("--sources")
        .arg(s.path(""))
        .args(&profiles));
    let model: profcc_report::Report = serde_json::from_slice(
        &sh(Command::new(profcc())
            .env("XDG_CACHE_HOME", probe_cache_home())
            .args(["report", "--format", "json"])
            .args(&profiles))
        .stdout,
    )
    .unwrap();
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    assert_eq!(
        html.matches("<script").count(),
        4,
        "data, meta, sources, code"
    );
    let src = std::fs::read_to_string(fixture("html/all.c")).unwrap();
    let mark_a = format!("all.c:{}", line_of(&src, "MARK_A"));
    // Without JavaScript: the findings with their places.
    let noscript = fragment(&html, "<noscript>", "</noscript>");
    assert!(
        text(noscript).contains(&mark_a),
        "noscript has no {mark_a}: {}",
        text(noscript)
    );

    let t0 = Instant::now();
    let dom = dump_dom(&s, &page);
    let took = t0.elapsed();
    eprintln!(
        "page {} bytes, headless render and DOM dump {:.2} s",
        html.len(),
        took.as_secs_f64()
    );
    assert_no_script_error(&dom);

    // Summary: the top finding, its file:line, both inputs' commands.
    let top = &model.findings[0];
    assert_eq!(top.kind, "false_sharing", "{:#?}", model.findings);
    let findings = rows(section(&dom, "summary"), "data-table=\"findings\"");
    // One row per key, as in the profile where it saves the most, with the profiles that
    // have it (the two runs are of one program: their common findings are one row each; a
    // finding's objects may differ between the runs, as `pair` alone or with `sums`).
    let mut inputs_of: std::collections::BTreeMap<&str, Vec<usize>> = Default::default();
    for f in &model.findings {
        inputs_of.entry(f.key.as_str()).or_default().push(f.input);
    }
    assert_eq!(findings.len(), inputs_of.len(), "{findings:?}");
    let mut want: Vec<String> = inputs_of
        .values()
        .map(|v| {
            let mut v = v.clone();
            v.sort_unstable();
            v.dedup();
            v.iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .collect();
    let mut got: Vec<String> = findings
        .iter()
        .map(|r| r.last().cloned().unwrap_or_default())
        .collect();
    want.sort();
    got.sort();
    assert_eq!(got, want, "{findings:?}");
    assert!(
        want.iter().any(|w| w == "0, 1"),
        "no finding in both runs: {:#?}",
        model.findings
    );
    // The finding's title with its fix and the threshold it crossed under it.
    assert!(top
        .threshold
        .contains("listed from a predicted speed-up of 1.01x"));
    assert_eq!(
        findings[0][3],
        format!("{}fix: {}crossed: {}", top.title, top.fix, top.threshold),
        "{findings:?}"
    );
    let mark_b = format!("all.c:{}", line_of(&src, "MARK_B"));
    assert!(
        findings[0][4].ends_with(&mark_a) || findings[0][4].ends_with(&mark_b),
        "{:?}",
        findings[0]
    );
    assert!(top.places.iter().any(|p| p.ends_with(&mark_a)));
    assert!(text(section(&dom, "summary")).contains("2 profiles merged"));

    // NUMA: node x node matrix of each input, the numbers as in the model.
    let numa = model.numa.as_ref().expect("NUMA section");
    assert_eq!(numa.inputs.len(), 2);
    for n in &numa.inputs {
        assert_eq!(n.model, "emulate");
        let m = rows(
            section(&dom, "numa"),
            &format!("data-matrix=\"node{}\"", n.input),
        );
        assert_eq!(m.len(), 2, "{m:?}");
        for (i, row) in n.node_matrix.iter().enumerate() {
            let want: Vec<String> = row
                .iter()
                .map(|&v| thousands(v))
                .chain([thousands(row.iter().sum())])
                .collect();
            assert_eq!(m[i], want, "node matrix row {i} of input {}", n.input);
        }
        // Thread 1 (node 1) reads its half of v, first touched by thread 0 (node 0).
        assert!(n.node_matrix[1][0] > 100_000, "{:?}", n.node_matrix);
    }

    // Allocator: the ops table lists malloc and free with the model's counts.
    let alloc = model.allocator.as_ref().expect("allocator section");
    let ops = rows(
        section(&dom, "allocator"),
        "data-table=\"alloc ops (input 0)\"",
    );
    assert_eq!(ops.len(), alloc.inputs[0].ops.len());
    for op in &alloc.inputs[0].ops {
        assert!(
            ops.iter().any(|r| r[0] == op.op
                && r[1] == op.size_kind
                && r[2] == op.reuse
                && r[3] == op.phase
                && r[4] == thousands(op.count)),
            "no row for {op:?} in {ops:?}"
        );
    }
    let calls = |name: &str| -> u64 {
        alloc.inputs[0]
            .ops
            .iter()
            .filter(|r| r.op == name)
            .map(|r| r.count)
            .sum()
    };
    assert!(
        calls("malloc") >= 20_000 && calls("free") >= 19_000,
        "{ops:?}"
    );

    // Regions: each worker's `sum` read exactly REPS x N/2 x 8 bytes.
    let bytes = 4u64 * (1 << 17) * 8;
    let regions = rows(section(&dom, "regions"), "data-table=\"region threads\"");
    let sums: Vec<&Vec<String>> = regions.iter().filter(|r| r[1] == "sum").collect();
    assert_eq!(sums.len(), 4, "2 inputs x 2 workers: {regions:?}");
    for r in sums {
        // input, region, thread, executions, time, mean, bytes read, bytes written
        assert_eq!(r[3], "4", "{r:?}");
        assert_eq!(r[6], thousands(bytes), "{r:?}");
    }
    // Against the machine: input 0's rows as the model's shares (a thread's GB/s over 10, a
    // region's threads together over 16), input 1's not measured, said once.
    let g = model.regions.as_ref().unwrap();
    let pct = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{:.1}%", 100.0 * x));
    for r in &regions {
        let m = g
            .rows
            .iter()
            .find(|m| {
                m.input.to_string() == r[0] && m.region == r[1] && m.thread.to_string() == r[2]
            })
            .unwrap();
        assert_eq!(r[11], pct(m.machine_share), "{r:?}");
        assert_eq!(
            m.machine_share.is_some(),
            m.input == 0 && m.gbytes_per_s.is_some()
        );
    }
    let totals = rows(section(&dom, "regions"), "data-table=\"regions\"");
    for t in &g.totals {
        let r = totals
            .iter()
            .find(|r| r[0] == t.input.to_string() && r[1] == t.region)
            .unwrap_or_else(|| panic!("no total of {t:?} in {totals:?}"));
        assert_eq!(r[9], pct(t.machine_share), "{r:?}");
    }
    let sum = g
        .totals
        .iter()
        .find(|t| t.input == 0 && t.region == "sum")
        .unwrap();
    assert!(sum.machine_share.is_some(), "{sum:?}");
    let tab = text(section(&dom, "regions"));
    assert!(
        tab.contains("Input 0: machine bandwidth (profcc calibrate, STREAM): 1 thread 10.00 GB/s, 2 threads 16.00 GB/s."),
        "{tab}"
    );
    assert_eq!(
        tab.matches("machine bandwidth not measured: run profcc calibrate")
            .count(),
        1,
        "{tab}"
    );

    // Cache lines: the word map of `pair`'s line: pair.a written by thread 1, pair.b by 2.
    let lines = section(&dom, "lines");
    assert_eq!(
        lines.matches("class=\"linemap\"").count(),
        2,
        "one per input"
    );
    let words = rows(lines, "data-table=\"words of line #1 input ");
    let word = |field: &str| {
        words
            .iter()
            .find(|w| w[3] == field)
            .unwrap_or_else(|| panic!("no word {field} in {words:?}"))
    };
    assert_eq!(word("pair.a")[7], "1", "pair.a's writers");
    assert_eq!(word("pair.b")[7], "2", "pair.b's writers");
    let map = fragment(lines, "class=\"linemap\"", "</div></div>");
    assert_eq!(map.matches("<div").count(), 64, "64 byte cells");
    assert!(
        map.contains(">1</div>") && map.contains(">2</div>"),
        "{map}"
    );

    // Objects: the global and the heap array joined over the analyses.
    let objects = rows(section(&dom, "objects"), "data-table=\"objects\"");
    let kinds = column(
        section(&dom, "objects"),
        "data-table=\"objects\"",
        "sharing",
    );
    assert!(
        objects
            .iter()
            .any(|o| o[1] == "pair" && o[kinds].contains("false")),
        "{objects:?}"
    );

    // An object's row opens to its accesses per thread: `v`'s in input 0, as the model's
    // NUMA object has them; each worker read its half REPS times (the second's last two
    // doubles lie on a page with no middle byte in the block).
    let alloc_line = line_of(&src, "MARK_ALLOC");
    let v = numa.inputs[0]
        .objects
        .iter()
        .find(|o| {
            o.allocated_at
                .as_deref()
                .is_some_and(|a| a.ends_with(&format!("all.c:{alloc_line}")))
        })
        .expect("v's NUMA object");
    assert_eq!(v.by_thread[1].accesses, 4 * (1 << 17), "{v:?}");
    let open = format!(
        "<script>window.addEventListener('load', function () {{
  var t = document.querySelector('#tab-objects [data-table=\"objects\"] table');
  [].forEach.call(t.querySelectorAll('tbody tr'), function (r) {{
    if (r.children[1] && r.children[1].textContent === 'all.c:{alloc_line}') r.firstChild.click();
  }});
}});</script></body>"
    );
    let opened = s.path("open.html");
    std::fs::write(&opened, html.replace("</body>", &open)).unwrap();
    let dom_open = dump_dom(&s, Path::new(&format!("{}#objects", opened.display())));
    assert_no_script_error(&dom_open);
    let per_thread = rows(
        section(&dom_open, "objects"),
        &format!("data-table=\"accesses of {}, input 0\"", v.object),
    );
    let mut want: Vec<(String, String)> = v
        .by_thread
        .iter()
        .map(|t| (t.thread.to_string(), thousands(t.accesses)))
        .collect();
    let mut got: Vec<(String, String)> = per_thread
        .iter()
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect();
    want.sort();
    got.sort();
    assert_eq!(got, want);

    // Timeline: a chart per input with snapshots.
    let timeline = section(&dom, "timeline");
    let snapshots = &model.regions.as_ref().unwrap().snapshots;
    assert_eq!(snapshots.len(), 2, "both inputs took snapshots");
    // Per input, its bandwidth chart and its heap chart, with the most bytes live at a
    // snapshot and the allocations by the last one, the model's figures.
    assert_eq!(timeline.matches("<canvas").count(), 4);
    let thousands = |n: u64| {
        let d = n.to_string();
        let mut out = String::new();
        for (i, c) in d.chars().enumerate() {
            if i > 0 && (d.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        out
    };
    for g in snapshots {
        assert!(timeline.contains(&format!("data-chart=\"live bytes {}\"", g.input)));
        let heaps: Vec<_> = g.snapshots.iter().map(|s| s.heap.unwrap()).collect();
        let most = heaps.iter().map(|h| h.live_bytes).max().unwrap();
        let last = heaps.last().unwrap();
        assert!(
            text(timeline).contains(&format!("({} bytes) at", thousands(most)))
                && text(timeline).contains(&format!(
                    "{} allocations, {} frees",
                    thousands(last.allocations),
                    thousands(last.frees)
                )),
            "input {}: {}",
            g.input,
            text(timeline)
        );
    }

    // Selecting a range on the first chart (mouse events dispatched after load) filters the
    // Regions tab to it.
    let drag = "<script>window.addEventListener('load', function () {
  var c = document.querySelector('canvas'), r = c.getBoundingClientRect();
  function ev(t, x) { (t === 'mouseup' ? window : c).dispatchEvent(new MouseEvent(t, { clientX: r.left + x * r.width, clientY: r.top + 50, bubbles: true })); }
  ev('mousedown', 0.0); ev('mousemove', 1.0); ev('mouseup', 1.0);
});</script></body>";
    let selecting = s.path("select.html");
    std::fs::write(&selecting, html.replace("</body>", drag)).unwrap();
    let selected = dump_dom(&s, Path::new(&format!("{}#timeline", selecting.display())));
    assert_no_script_error(&selected);
    let regions = section(&selected, "regions");
    assert!(
        text(regions).contains("Filtered to the Timeline's selection: input 0"),
        "{}",
        text(regions)
    );
    let picked = rows(regions, "data-table=\"region threads\"");
    assert!(!picked.is_empty() && picked.iter().all(|r| r[0] == "0" && r[1] == "sum"));

    // Flame graph: the allocation stacks, main above the call at the ALLOC mark.
    let flame = flame_text(&dom);
    let alloc_at = format!("malloc at all.c:{}", line_of(&src, "MARK_ALLOC"));
    assert!(
        flame.contains("main") && flame.contains(&alloc_at),
        "{flame}"
    );

    // Sources: all.c with the A mark's line annotated with its accesses.
    let line = line_of(&src, "MARK_A");
    let row = rows(section(&dom, "sources"), "data-source=")
        .into_iter()
        .find(|r| r[0] == line.to_string())
        .expect("the A mark's line");
    let accesses: u64 = model
        .access_sites
        .lines
        .iter()
        .filter(|l| l.file.ends_with("/all.c") && l.line == line)
        .map(|l| l.accesses)
        .sum();
    assert_eq!(row[1], thousands(accesses), "{row:?}");
    assert!(row[6].contains("MARK_A"), "{row:?}");

    // Screenshots are pictures, not one colour.
    for tab in ["summary", "lines", "numa", "timeline"] {
        let (w, h, px) = screenshot(&s, &page, tab);
        assert_eq!((w, h), (1280, 900));
        let mut counts = std::collections::HashMap::new();
        for p in &px {
            *counts.entry(*p).or_insert(0usize) += 1;
        }
        let most = counts.values().max().copied().unwrap_or(0);
        assert!(
            counts.len() > 50 && most < px.len() * 9 / 10,
            "{tab}: a blank screenshot ({} colours, the commonest on {most} of {} pixels)",
            counts.len(),
            px.len()
        );
    }
}

/// A program without regions run with snapshots (`roi_interval`): a range selected on its heap
/// chart holds exactly what its allocation sites did then. tests/fixtures/html/phases.c
/// allocates 1,000 blocks of 64 bytes at the A mark, pauses 300 ms, then 3,000 of 128 bytes at
/// the B mark; a range from inside the pause to the end shows the B site's 3,000 allocations
/// and 384,000 bytes, and no A, in the Timeline, the Objects tab and the Allocator tab; the
/// whole run shows both.
#[test]
fn a_timeline_range_filters_the_heap_objects_to_what_they_did_in_it() {
    let s = Scratch::new();
    std::fs::copy(fixture("html/phases.c"), s.path("phases.c")).unwrap();
    s.compile(&profcc(), &["-O2", "-g", "phases.c", "-o", "phases"]);
    let (out, profile) = s.run_profiled("phases", &[], "summary=0:roi_interval=10");
    assert!(out.status.success());
    let snaps = &profile.regions.as_ref().expect("snapshots alone").snapshots;
    let (a_count, b_count) = (1000u64, 3000u64);
    // The snapshots taken in the pause: all of A allocated, none of B.
    let pause: Vec<usize> = (0..snaps.len())
        .filter(|&i| snaps[i].heap.unwrap().allocations == a_count)
        .collect();
    let last = *pause.last().expect("a snapshot in the 300 ms pause");
    let from = (snaps[last].ns + snaps[last + 1].ns) as f64 / 2e9;
    let tmax = snaps.last().unwrap().ns as f64 / 1e9;
    // The dump's snapshot lists every site's final counts.
    let final_sites = &snaps.last().unwrap().sites;
    for a in &profile.alloc_sites {
        let x = final_sites.iter().find(|x| x.stack == a.stack);
        let listed = snaps
            .iter()
            .rev()
            .flat_map(|s| &s.sites)
            .find(|x| x.stack == a.stack);
        let x = x.or(listed).expect("a listed site");
        assert_eq!(
            (x.allocations, x.bytes, x.frees),
            (a.count, a.bytes, a.frees)
        );
    }

    let model = report(&s.path("phases.profile.json"), &[]);
    let page = s.path("phases.html");
    sh(Command::new(profcc())
        .args(["report", "--format", "html", "-o"])
        .arg(&page)
        .arg(s.path("phases.profile.json")));
    let html = std::fs::read_to_string(&page).unwrap();
    let src = std::fs::read_to_string(fixture("html/phases.c")).unwrap();
    let name = |mark: &str| {
        let line = format!(":{}", line_of(&src, mark));
        model
            .objects
            .iter()
            .find(|o| o.kind == "heap" && o.name.ends_with(&line))
            .unwrap_or_else(|| panic!("no heap object at {line}: {:?}", model.objects))
            .name
            .clone()
    };
    let (a, b) = (name("MARK_A"), name("MARK_B"));
    // Drag across the heap chart (x from 70 to 1090 of 1100 spans 0..tmax seconds).
    let select = |t0: f64, t1: f64, file: &str| {
        let drag = format!(
            "<script>window.addEventListener('load', function () {{
  var c = document.querySelector('canvas[data-chart=\"live bytes 0\"]'), r = c.getBoundingClientRect();
  function ev(t, s) {{ var x = r.left + (70 + 1020 * s / {tmax}) * r.width / 1100;
    (t === 'mouseup' ? window : c).dispatchEvent(new MouseEvent(t, {{ clientX: x, clientY: r.top + 50, bubbles: true }})); }}
  ev('mousedown', {t0}); ev('mousemove', {t1}); ev('mouseup', {t1});
}});</script></body>"
        );
        let p = s.path(file);
        std::fs::write(&p, html.replace("</body>", &drag)).unwrap();
        let dom = dump_dom(&s, Path::new(&format!("{}#timeline", p.display())));
        assert_no_script_error(&dom);
        dom
    };
    // Object, allocations, bytes of a table's rows.
    let heap_rows = |dom: &str, tab: &str, table: &str| -> Vec<(String, String, String)> {
        let marker = format!("data-table=\"{table}\"");
        let sec = section(dom, tab);
        let (o, n, by) = (
            column(sec, &marker, "object"),
            column(sec, &marker, "allocations"),
            column(sec, &marker, "bytes"),
        );
        rows(sec, &marker)
            .into_iter()
            .map(|r| (r[o].clone(), r[n].clone(), r[by].clone()))
            .collect()
    };
    let only_b = vec![(b.clone(), thousands(b_count), thousands(b_count * 128))];
    let dom = select(from, tmax, "late.html");
    assert_eq!(
        heap_rows(&dom, "timeline", "timeline heap selection 0"),
        only_b
    );
    assert_eq!(heap_rows(&dom, "allocator", "alloc selection"), only_b);
    let objects = section(&dom, "objects");
    assert!(
        text(objects).contains("Filtered to the Timeline's selection: input 0"),
        "{}",
        text(objects)
    );
    let heap: Vec<_> = heap_rows(&dom, "objects", "objects");
    assert_eq!(heap, only_b, "only the B site allocated in the range");

    // The whole run: both sites, as the report's allocation sites have them.
    let dom = select(0.0, tmax, "all.html");
    let mut both = heap_rows(&dom, "timeline", "timeline heap selection 0");
    both.sort();
    let mut want = vec![
        (a, thousands(a_count), thousands(a_count * 64)),
        (b, thousands(b_count), thousands(b_count * 128)),
    ];
    want.sort();
    assert_eq!(both, want);

    // The flame graph of accesses: the helper's stores under main, through the call they were
    // inlined at.
    let pick = "<script>window.addEventListener('load', function () {
  var s = document.querySelector('#tab-flame select');
  s.value = 'accesses'; s.dispatchEvent(new Event('change'));
});</script></body>";
    let p = s.path("flame.html");
    std::fs::write(&p, html.replace("</body>", pick)).unwrap();
    let dom = dump_dom(&s, Path::new(&format!("{}#flame", p.display())));
    assert_no_script_error(&dom);
    let flame = flame_text(&dom);
    let through = format!("inlined at phases.c:{}", line_of(&src, "MARK_FILL"));
    assert!(
        flame.contains("main") && flame.contains(&through),
        "{flame}"
    );
}

/// Markup and URLs in the program's own strings (a symbol, its command line) show as text,
/// end no script block and leave no `//` in the page.
#[test]
fn html_shows_markup_in_names_as_text() {
    let s = Scratch::new();
    s.write(
        "tiny.c",
        "#include <stdlib.h>\nint *g;\nint main(int c, char **v) { g = malloc(64); for (int i = 0; i < 16; i++) g[i] = i; return g[c] == 7; }\n",
    );
    s.compile(&profcc(), &["-O1", "-g", "tiny.c", "-o", "tiny"]);
    let (out, _) = s.run_profiled("tiny", &["https://example.org/x"], "summary=0");
    assert!(out.status.success());
    let mut model = report(&s.path("tiny.profile.json"), &[]);
    let evil = "</script><b>bold</b><script>window.profccPwned=1</script>";
    model.objects.push(profcc_report::model::ObjectRow {
        kind: "global".into(),
        name: evil.into(),
        bytes: Some(8),
        ..Default::default()
    });
    model.notes.notes.push(format!("note {evil}"));
    let bytes = profcc_report::render::html::render(&model, &Default::default()).expect("a page");
    let html = String::from_utf8(bytes).unwrap();
    assert_self_contained(&html);
    assert_eq!(html.matches("</script>").count(), 3);
    let page = s.path("evil.html");
    std::fs::write(&page, &html).unwrap();
    let dom = dump_dom(&s, &page);
    assert_no_script_error(&dom);
    assert!(!dom.contains("<b>bold</b>"), "markup became elements");
    assert!(
        dom.contains("&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;"),
        "the name is not shown as text"
    );
    assert!(text(section(&dom, "summary")).contains("https://example.org/x"));
}

/// An empty run (no access, no allocation), a profile from an older profcc and an empty file:
/// a page without a script error, or one clear line on stderr; never a panic.
#[test]
fn html_of_empty_and_older_profiles() {
    let s = Scratch::new();
    s.write("empty.c", "int main(void) { return 0; }\n");
    s.compile(&profcc(), &["-O1", "-g", "empty.c", "-o", "empty"]);
    let (out, _) = s.run_profiled("empty", &[], "summary=0");
    assert!(out.status.success());
    let empty = s.path("empty.profile.json");
    // An older profile: version 2, before the exit summary and every analysis section.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&empty).unwrap()).unwrap();
    v["version"] = 2.into();
    for k in [
        "sharing",
        "numa",
        "allocator",
        "allocator_ops",
        "regions",
        "exit_summary",
    ] {
        v.as_object_mut().unwrap().remove(k);
    }
    let older = s.write("older.json", &v.to_string());
    let blank = s.write("blank.json", "");
    for (name, inputs) in [
        ("empty", vec![&empty]),
        ("older", vec![&older]),
        ("merged", vec![&empty, &older]),
        ("blank", vec![&blank]),
    ] {
        let page = s.path(&format!("{name}.html"));
        let out = Command::new(profcc())
            .env("XDG_CACHE_HOME", probe_cache_home())
            .args(["report", "--format", "html", "-o"])
            .arg(&page)
            .args(inputs)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        match out.status.code() {
            Some(0) => {
                let dom = dump_dom(&s, &page);
                assert_no_script_error(&dom);
                assert!(dom.contains("id=\"tab-summary\""), "{name}");
                assert!(name != "blank", "an empty file made a page");
            }
            Some(1) => {
                assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
                assert!(stderr.starts_with("profcc report: "), "{name}: {stderr}");
                assert_eq!(name, "blank", "{name}: {stderr}");
            }
            c => panic!("{name}: exit {c:?}: {stderr}"),
        }
    }
}

/// Four ranks of 1, 2, 3 and 4 x WORK elements (the launcher's variables, no MPI): the Ranks
/// tab's heat map has each rank's exact access count, outlines rank 3 as the heaviest and
/// names it under the map; clicking rank 2 (a click dispatched after load) shows its values,
/// its allocation site's exact bytes and its line's exact accesses.
#[test]
fn html_ranks_tab_heat_map_and_a_clicked_rank() {
    const WORK: u64 = 50_000;
    let s = Scratch::new();
    let profiles = fake_ranks(&s, "ranks", 4, |r| WORK * (r as u64 + 1));
    let accesses: Vec<u64> = profiles
        .iter()
        .map(|p| profcc_schema::read(p).unwrap().totals.accesses)
        .collect();
    let bytes: Vec<u64> = profiles
        .iter()
        .map(|p| profcc_schema::read(p).unwrap().totals.bytes_allocated)
        .collect();
    let pids: Vec<u32> = profiles
        .iter()
        .map(|p| profcc_schema::read(p).unwrap().pid)
        .collect();
    let page = s.path("ranks.html");
    sh(Command::new(profcc())
        .env("XDG_CACHE_HOME", probe_cache_home())
        .arg("report")
        .args(&profiles)
        .args(["--format", "html", "-o"])
        .arg(&page));
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html);
    let click = "<script>window.addEventListener('load', function () {
  document.querySelector('tr[data-rank=\"rank 2\"] a').click();
});</script></body>";
    let clicked = s.path("clicked.html");
    std::fs::write(&clicked, html.replace("</body>", click)).unwrap();
    let dom = dump_dom(&s, Path::new(&format!("{}#ranks", clicked.display())));
    assert_no_script_error(&dom);
    let ranks = section(&dom, "ranks");

    // The map: one row per rank with its exact accesses, then the heaviest per metric.
    let map = rows(ranks, "data-table=\"rank heat map\"");
    assert_eq!(map.len(), 5, "{map:?}");
    for r in 0..4 {
        assert_eq!(map[r][0], format!("rank {r}"), "{map:?}");
        assert_eq!(map[r][2], pids[r].to_string(), "{map:?}");
        assert_eq!(map[r][4], thousands(accesses[r]), "{map:?}");
        // The array of rank r and the program's stdout buffer.
        assert_eq!(map[r][6], thousands(bytes[r]), "bytes: {map:?}");
        assert!(bytes[r] >= 8 * WORK * (r as u64 + 1), "{bytes:?}");
    }
    let sum: u64 = accesses.iter().sum();
    let imbalance = accesses[3] as f64 / (sum as f64 / 4.0);
    assert_eq!(map[4][1], format!("rank 3 ({imbalance:.2}x)"), "{map:?}");
    // One thread each: no heaviest rank for threads.
    assert_eq!(map[4][0], "all equal", "{map:?}");
    // The cell of rank 3's accesses is outlined as the heaviest; no other rank's is.
    for r in 0..4 {
        let row = fragment(ranks, &format!("data-rank=\"rank {r}\""), "</tr>");
        let cell = row
            .split("<td")
            .find(|c| c.contains("data-metric=\"accesses\""))
            .unwrap();
        assert_eq!(cell.contains("heaviest"), r == 3, "rank {r}: {cell}");
    }
    let heaviest = text(fragment(ranks, "data-heaviest", "</p>"));
    assert!(
        heaviest.contains(&format!(
            "Heaviest by accesses: rank 3 ({} accesses of {}, imbalance {imbalance:.2} (max/mean)",
            thousands(accesses[3]),
            thousands(sum)
        )),
        "{heaviest}"
    );

    // Rank 2, clicked: its values, its allocation site and its lines.
    let detail = fragment(ranks, "data-rank-detail=\"rank 2\"", "Most uneven");
    assert!(
        text(detail).contains(&format!("rank 2 ("))
            && text(detail).contains(&format!("pid {}", pids[2])),
        "{}",
        text(detail)
    );
    let values = rows(detail, "data-table=\"rank values\"");
    let acc = values.iter().find(|v| v[0] == "accesses").unwrap();
    assert_eq!(acc[1], thousands(accesses[2]), "{values:?}");
    assert_eq!(acc[4], "rank 3", "{values:?}");
    let alloc_line = line_of(RANK_WORK_SRC, "// alloc");
    let sites = rows(detail, "data-table=\"allocation sites of rank 2\"");
    assert_eq!(
        sites[0],
        [
            format!("rankwork.c:{alloc_line}"),
            thousands(8 * WORK * 3),
            "1".to_string(),
            thousands(8 * WORK * 10)
        ],
        "{sites:?}"
    );
    let work_line = line_of(RANK_WORK_SRC, "// work");
    let lines = rows(detail, "data-table=\"lines of rank 2\"");
    let work = lines
        .iter()
        .find(|l| l[0] == format!("rankwork.c:{work_line}"))
        .unwrap_or_else(|| panic!("no work line in {lines:?}"));
    assert_eq!(
        (work[1].as_str(), work[2].as_str()),
        (thousands(3 * WORK).as_str(), thousands(10 * WORK).as_str()),
        "{lines:?}"
    );
}

/// Allocation lifetimes on the page (tests/fixtures/alloc/lifetimes.c, whose lifetimes are
/// exact): the Allocator tab's lifetime histogram has the temporary blocks in its first bucket
/// and the long-lived site's blocks in 64-127; its temporary list puts a site of 1,000
/// temporary blocks first; the Objects tab gives the long-lived object's mean lifetime.
#[test]
fn html_shows_allocation_lifetimes() {
    let s = Scratch::new();
    let profile = profile_lifetimes_fixture(&s);
    let page = s.path("life.html");
    sh(Command::new(profcc())
        .env("XDG_CACHE_HOME", probe_cache_home())
        .args(["report", "--top", "0", "--format", "html", "-o"])
        .arg(&page)
        .arg(&profile));
    let dom = dump_dom(&s, &page);
    assert_no_script_error(&dom);
    let alloc = section(&dom, "allocator");
    let hist = rows(alloc, "data-hist=\"lifetimes\"");
    let bucket = |label: &str| {
        hist.iter()
            .find(|r| r[0] == label)
            .unwrap_or_else(|| panic!("no bucket {label}: {hist:?}"))[1]
            .clone()
    };
    // Lifetime 0: the temporary site's 1,000 and the filler's last of each round, 1,000.
    assert_eq!(bucket("0 (temporary)"), thousands(2000));
    // 64-127: the long site's 1,000 (lifetime 100) and the filler's 36 per round.
    assert_eq!(bucket("64-127"), thousands(1000 + 36 * 1000));
    let temp = rows(alloc, "data-table=\"alloc temporary");
    assert_eq!(temp[0][3], thousands(1000), "{temp:?}");
    let src = std::fs::read_to_string(fixture("alloc/lifetimes.c")).unwrap();
    let long = format!("lifetimes.c:{}", line_of(&src, "MARK_LONG"));
    let objects = rows(section(&dom, "objects"), "data-table=\"objects\"");
    let row = objects
        .iter()
        .find(|o| o[1].ends_with(&long))
        .unwrap_or_else(|| panic!("no {long}: {objects:?}"));
    assert_eq!(row[5], "100 allocs", "{row:?}");
}
