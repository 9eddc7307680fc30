//! `--format html`: one self-contained HTML page of the report (issue 44).
//!
//! The page is built by plain string building with one escape function ([`escape`]): the
//! static part is small (head, tab bar, the `<noscript>` findings and totals), so a template
//! crate would add a dependency and a build step for a few dozen lines. Everything else is
//! drawn in the browser by `html/report.js` (hand-written, vendored, included with
//! `include_str!`, run after `html/common.js`, the helpers, tables, tabs and flame graph it
//! shares with the diff page's `html/diff.js`, [`render_diff`]) from one embedded JSON block: the report model as `render::json` writes
//! it, with `<`, `>`, `&` and every `/` escaped as `\u003c`, `\u003e`, `\u0026` and `\/`
//! (JSON escapes, so the data reads back unchanged): a symbol containing `</script>` cannot
//! end the block, and no `//` (a URL's scheme separator) appears anywhere in the file, even
//! when the program's own strings (its command line, its symbols) hold a URL. The script
//! builds every node with `textContent`, never `innerHTML`, so markup in a symbol shows as
//! text.
//!
//! Above [`HtmlOptions::max_bytes`] the largest ranked lists lose their lowest rows (their
//! ends: every list is ranked) until the data fits, and the page says what was dropped.

use crate::model::Report;

const CSS: &str = include_str!("html/report.css");
/// The pages' shared script: helpers, tables, tabs, the flame graph.
const COMMON_JS: &str = include_str!("html/common.js");
const REPORT_JS: &str = include_str!("html/report.js");
const DIFF_JS: &str = include_str!("html/diff.js");

/// The page's presentation settings.
#[derive(Debug, Clone)]
pub struct HtmlOptions {
    /// The embedded data's size limit in bytes: above it the lowest-ranked rows are dropped.
    pub max_bytes: usize,
    /// Source files for the Sources tab ([`read_sources`]; empty: no tab content).
    pub sources: Vec<SourceFile>,
    /// Why some files were left out of `sources` (the cap, unreadable), one line each.
    pub sources_notes: Vec<String>,
}

/// One source file shown in the Sources tab: its path as the report names it, how many lines
/// it has, and its lines (number, text): all of a short file, else the annotated lines with
/// [`CONTEXT`] lines around each.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SourceFile {
    pub path: String,
    pub lines_total: usize,
    pub lines: Vec<(u32, String)>,
}

/// A file of at most this many lines is shown whole.
pub const WHOLE_FILE_LINES: usize = 400;
/// Lines shown before and after an annotated line of a longer file.
pub const CONTEXT: u32 = 5;

/// Default cap on the source text a page embeds (`--sources DIR`).
pub const SOURCES_MAX_BYTES: usize = 4_000_000;

/// Default [`HtmlOptions::max_bytes`]: 20 MB.
pub const MAX_BYTES: usize = 20_000_000;

impl Default for HtmlOptions {
    fn default() -> Self {
        HtmlOptions {
            max_bytes: MAX_BYTES,
            sources: Vec::new(),
            sources_notes: Vec::new(),
        }
    }
}

/// Does `b` spell `http` (any case) from byte `i`?
fn http_at(b: &[u8], i: usize) -> bool {
    b.len() >= i + 4 && b[i..i + 4].eq_ignore_ascii_case(b"http")
}

/// HTML-escapes `s` for text and attribute values: `& < > " '`, and `/`, `:` and the `h` of
/// `http` so that no URL in the program's strings appears as one in the page's source.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    let b = s.as_bytes();
    for (i, c) in s.char_indices() {
        match c {
            'h' | 'H' if http_at(b, i) => out.push_str(&format!("&#{};", c as u32)),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '/' => out.push_str("&#47;"),
            ':' => out.push_str("&#58;"),
            c => out.push(c),
        }
    }
    out
}

/// JSON text made safe inside `<script type="application/json">`: `<`, `>`, `&` as
/// `\u003c`..., `/` as `\/`, the `h` of `http` as `\u0068`. Only JSON string contents can
/// hold those characters, and there these escapes read back as the same characters.
pub fn script_safe_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len() + json.len() / 16);
    let b = json.as_bytes();
    for (i, c) in json.char_indices() {
        match c {
            // `http` only occurs inside JSON strings: its `h` as an escape, so no scheme of
            // a URL in the program's strings appears in the page's source.
            'h' | 'H' if http_at(b, i) => out.push_str(&format!("\\u{:04x}", c as u32)),
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '/' => out.push_str("\\/"),
            // Line and paragraph separators: valid JSON, but not in old JavaScript strings.
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// The model's data, dropping the lowest-ranked rows of the largest lists until its JSON is
/// at most `max` bytes. Returns the JSON and what was dropped, one line per list.
fn fitted(report: &Report, max: usize) -> Result<(String, Vec<String>, usize), String> {
    let json = |r: &Report| serde_json::to_string(r).map_err(|e| format!("--format html: {e}"));
    let mut text = json(report)?;
    if text.len() <= max {
        return Ok((text, Vec::new(), report.findings.len()));
    }
    let mut r = report.clone();
    let mut dropped: std::collections::BTreeMap<&'static str, usize> = Default::default();
    for _ in 0..64 {
        // The list whose JSON is largest loses its lower half.
        let sizes = lists(&r);
        let Some(&(name, len, _)) = sizes.iter().filter(|s| s.1 > 1).max_by_key(|s| s.2) else {
            break;
        };
        let keep = len / 2;
        truncate(&mut r, name, keep);
        *dropped.entry(name).or_default() += len - keep;
        text = json(&r)?;
        if text.len() <= max {
            let notes = dropped
                .iter()
                .map(|(name, n)| format!("{name}: the lowest-ranked {n} rows dropped"))
                .collect();
            return Ok((text, notes, r.findings.len()));
        }
    }
    Err(format!(
        "--format html: the report's data is {} bytes even with its lists cut (limit {max}); use --top N",
        text.len()
    ))
}

/// The ranked lists that can lose rows: name, length, JSON size.
fn lists(r: &Report) -> Vec<(&'static str, usize, usize)> {
    fn size<T: serde::Serialize>(v: &[T]) -> usize {
        serde_json::to_string(v).map_or(0, |s| s.len())
    }
    let mut v = vec![
        ("findings", r.findings.len(), size(&r.findings)),
        ("objects", r.objects.len(), size(&r.objects)),
        (
            "access lines",
            r.access_sites.lines.len(),
            size(&r.access_sites.lines),
        ),
        (
            "allocation sites",
            r.alloc_sites.sites.len(),
            size(&r.alloc_sites.sites),
        ),
        ("threads", r.threads.len(), size(&r.threads)),
    ];
    if let Some(s) = &r.sharing {
        v.push(("cache lines", s.findings.len(), size(&s.findings)));
    }
    if let Some(g) = &r.regions {
        v.push(("region rows", g.rows.len(), size(&g.rows)));
    }
    if let Some(n) = &r.numa {
        let objects: Vec<_> = n.inputs.iter().flat_map(|i| &i.objects).collect();
        let sites: Vec<_> = n.inputs.iter().flat_map(|i| &i.sites).collect();
        v.push(("NUMA objects", objects.len(), size(&objects)));
        v.push(("NUMA sites", sites.len(), size(&sites)));
    }
    v
}

fn truncate(r: &mut Report, name: &str, keep: usize) {
    match name {
        "findings" => r.findings.truncate(keep),
        "objects" => r.objects.truncate(keep),
        "access lines" => r.access_sites.lines.truncate(keep),
        "allocation sites" => r.alloc_sites.sites.truncate(keep),
        "threads" => r.threads.truncate(keep),
        "cache lines" => {
            if let Some(s) = &mut r.sharing {
                s.findings.truncate(keep)
            }
        }
        "region rows" => {
            if let Some(g) = &mut r.regions {
                g.rows.truncate(keep)
            }
        }
        "NUMA objects" | "NUMA sites" => {
            if let Some(n) = &mut r.numa {
                let per = keep.div_ceil(n.inputs.len().max(1));
                for i in &mut n.inputs {
                    if name == "NUMA objects" {
                        i.objects.truncate(per)
                    } else {
                        i.sites.truncate(per)
                    }
                }
            }
        }
        _ => {}
    }
}

/// The source files the report names (access lines, NUMA sites, sharing places, allocation
/// frames) that are under `dir`, most-accessed first, until `max_bytes` of text; and why any
/// was left out. `--sources DIR`: only files the user named a directory for are read.
pub fn read_sources(
    report: &Report,
    dir: &std::path::Path,
    max_bytes: usize,
) -> Result<(Vec<SourceFile>, Vec<String>), String> {
    let root =
        std::fs::canonicalize(dir).map_err(|e| format!("--sources {}: {e}", dir.display()))?;
    // Per file: its weight (what the report counts on it) and its annotated lines.
    let mut files: std::collections::HashMap<String, (u64, Vec<u32>)> = Default::default();
    let mut add = |file: &str, line: u32, w: u64| {
        if !file.is_empty() {
            let f = files.entry(file.to_string()).or_default();
            f.0 += w.max(1);
            f.1.push(line);
        }
    };
    for l in &report.access_sites.lines {
        add(&l.file, l.line, l.accesses);
    }
    if let Some(n) = &report.numa {
        for s in n.inputs.iter().flat_map(|i| &i.sites) {
            if let Some((f, l)) = s.place.as_deref().and_then(|p| p.rsplit_once(':')) {
                add(f, l.parse().unwrap_or(0), s.accesses);
            }
        }
    }
    if let Some(sh) = &report.sharing {
        for p in sh.findings.iter().flat_map(|f| &f.places) {
            add(&p.file, p.line, p.reads + p.writes);
        }
    }
    for s in &report.alloc_sites.sites {
        for f in &s.stack {
            if let Some(file) = &f.file {
                add(file, f.line.unwrap_or(0), s.count);
            }
        }
    }
    let mut files: Vec<(String, (u64, Vec<u32>))> = files.into_iter().collect();
    files.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then_with(|| a.0.cmp(&b.0)));
    let (mut out, mut notes, mut total) = (Vec::new(), Vec::new(), 0usize);
    for (path, (_, marked)) in files {
        let Ok(real) = std::fs::canonicalize(root.join(&path)) else {
            continue;
        };
        if !real.starts_with(&root) {
            continue;
        }
        let text = match std::fs::read(&real) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(e) => {
                notes.push(format!("{path}: {e}"));
                continue;
            }
        };
        let all: Vec<&str> = text.lines().collect();
        let keep = |n: u32| {
            all.len() <= WHOLE_FILE_LINES
                || marked
                    .iter()
                    .any(|&m| m > 0 && n + CONTEXT >= m && n <= m + CONTEXT)
        };
        let lines: Vec<(u32, String)> = all
            .iter()
            .enumerate()
            .map(|(i, t)| (i as u32 + 1, t))
            .filter(|(n, _)| keep(*n))
            .map(|(n, t)| (n, t.to_string()))
            .collect();
        let size: usize = lines.iter().map(|(_, t)| t.len() + 8).sum();
        if total + size > max_bytes {
            notes.push(format!(
                "{path}: left out ({size} bytes of lines to show; the page keeps at most {max_bytes} bytes of source)"
            ));
            continue;
        }
        total += size;
        out.push(SourceFile {
            path,
            lines_total: all.len(),
            lines,
        });
    }
    Ok((out, notes))
}

/// The Findings table's rows ([`crate::render::finding_groups`]) of the `kept` findings the
/// page's data holds (a report cut to fit keeps a prefix of the ranking).
fn finding_groups(report: &Report, kept: usize) -> Vec<crate::render::FindingGroup> {
    let mut g = crate::render::finding_groups(&report.findings, report.summary.inputs.len() > 1);
    g.retain(|g| g.head < kept);
    g
}

/// The page.
pub fn render(report: &Report, opts: &HtmlOptions) -> Result<Vec<u8>, String> {
    let (json, dropped, kept) = fitted(report, opts.max_bytes)?;
    let meta = serde_json::json!({
        "generator": format!("profcc {}", env!("CARGO_PKG_VERSION")),
        "dropped": dropped,
        "spaces": profcc_schema::regions::SPACE_NAMES,
        "local_space": profcc_schema::regions::LOCAL,
        "max_snapshot_sites": profcc_schema::regions::MAX_SNAPSHOT_SITES,
        "timer_floor_ns": crate::model::TIMER_FLOOR_NS,
        "finding_groups": finding_groups(report, kept),
    });
    let title = match report.summary.inputs.as_slice() {
        [] => "profcc report".to_string(),
        [one] => format!("profcc report: {}", base(&one.exe)),
        [one, ..] => format!(
            "profcc report: {} (+{} more)",
            base(&one.exe),
            report.summary.inputs.len() - 1
        ),
    };
    let mut before = String::new();
    dropped_notes(&dropped, opts.max_bytes, &mut before);
    noscript(report, &mut before);
    let meta = meta.to_string();
    let mut blocks = vec![("profcc-data", json), ("profcc-meta", meta)];
    if !opts.sources.is_empty() || !opts.sources_notes.is_empty() {
        let sources = serde_json::json!({"files": opts.sources, "notes": opts.sources_notes});
        blocks.push(("profcc-sources", sources.to_string()));
    }
    Ok(page(&title, &before, &blocks, REPORT_JS))
}

/// `profcc diff --format html` (docs/diff.md): the diff as its JSON output has it; each side's
/// allocation stacks, access sites, sharing and NUMA sites for the differential flame graph
/// (its report model with only those lists, cut as [`fitted`] cuts a report, to half of
/// `max_bytes` each); and the text diff for readers without JavaScript.
pub fn render_diff(
    d: &crate::diff::Diff,
    base_side: &Report,
    new_side: &Report,
    max_bytes: usize,
) -> Result<Vec<u8>, String> {
    let diff = serde_json::to_string(d).map_err(|e| format!("--format html: {e}"))?;
    let (b, mut dropped, _) = fitted(&flame_only(base_side), max_bytes / 2)?;
    let (n, more, _) = fitted(&flame_only(new_side), max_bytes / 2)?;
    dropped.extend(more);
    dropped.dedup();
    let title = format!("profcc diff: {}", d.new.exe);
    let mut before = String::new();
    dropped_notes(&dropped, max_bytes, &mut before);
    before.push_str("<noscript>\n<section class=\"noscript\">\n<p>JavaScript is off: the text diff follows; the tabs need JavaScript.</p>\n<pre>");
    before.push_str(&escape(&crate::diff::render_text(d, 0)));
    before.push_str("</pre>\n</section>\n</noscript>\n");
    let blocks = [("profcc-diff", diff), ("profcc-base", b), ("profcc-new", n)];
    Ok(page(&title, &before, &blocks, DIFF_JS))
}

/// A report with only what the flame graph draws (allocation sites, access lines, sharing,
/// NUMA).
fn flame_only(r: &Report) -> Report {
    let mut f = r.clone();
    f.findings.clear();
    f.objects.clear();
    f.threads.clear();
    f.summary.inputs.clear();
    f.allocator = None;
    f.regions = None;
    f.ranks = None;
    f.notes.notes.clear();
    f.notes.warnings.clear();
    if let Some(n) = &mut f.numa {
        for i in &mut n.inputs {
            i.objects.clear();
        }
    }
    f
}

fn dropped_notes(dropped: &[String], max_bytes: usize, p: &mut String) {
    for d in dropped {
        p.push_str(&format!(
            "<p class=\"dropped\">Page size limit ({max_bytes} bytes): {}</p>\n",
            escape(d)
        ));
    }
}

/// One page (the report's, the diff's): `title`; `before`, static HTML between the header
/// and the tabs (notes, the `<noscript>` part), already escaped; the JSON `blocks` (element
/// id, JSON text), each made [`script_safe_json`]; and the page's `script`, run after
/// `common.js` in one function (their names shared, none global).
fn page(title: &str, before: &str, blocks: &[(&str, String)], script: &str) -> Vec<u8> {
    let data: usize = blocks.iter().map(|b| b.1.len()).sum();
    let mut p = String::with_capacity(
        data + before.len() + CSS.len() + COMMON_JS.len() + script.len() + 4096,
    );
    p.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    p.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    p.push_str(&format!("<title>{}</title>\n", escape(title)));
    p.push_str("<style>\n");
    p.push_str(CSS);
    p.push_str("</style>\n</head>\n<body>\n");
    p.push_str(&format!(
        "<header><h1>{}</h1><span id=\"profcc-generator\">{}</span></header>\n",
        escape(title),
        escape(&format!("profcc {}", env!("CARGO_PKG_VERSION")))
    ));
    p.push_str("<pre id=\"profcc-errors\" class=\"errors\"></pre>\n");
    p.push_str(before);
    p.push_str("<nav id=\"tabs\"></nav>\n<main id=\"app\"></main>\n");
    for (id, json) in blocks {
        p.push_str(&format!("<script type=\"application/json\" id=\"{id}\">"));
        p.push_str(&script_safe_json(json));
        p.push_str("</script>\n");
    }
    p.push_str("<script>\n(function () {\n  'use strict';\n");
    p.push_str(COMMON_JS);
    p.push_str(script);
    p.push_str("})();\n</script>\n</body>\n</html>\n");
    p.into_bytes()
}

fn base(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The findings and totals without JavaScript.
fn noscript(r: &Report, p: &mut String) {
    let t = &r.summary.totals;
    p.push_str("<noscript>\n<section class=\"noscript\">\n<p>JavaScript is off: the findings and totals follow; the tabs need JavaScript.</p>\n");
    p.push_str("<h2>Run</h2>\n<table>\n");
    for i in &r.summary.inputs {
        p.push_str(&format!(
            "<tr><th>{}</th><td>{}</td></tr>\n",
            escape(&i.path),
            escape(&format!(
                "{} (pid {}, host {}, {} threads, {:.3} s, {})",
                i.argv.join(" "),
                i.pid,
                i.host,
                i.threads,
                i.duration_ns as f64 / 1e9,
                i.trigger
            ))
        ));
    }
    p.push_str("</table>\n<h2>Totals</h2>\n<table>\n");
    let rows: [(&str, u64); 6] = [
        ("accesses", t.accesses),
        ("allocations", t.allocations),
        ("bytes allocated", t.bytes_allocated),
        ("frees", t.frees),
        ("live bytes peak", t.live_bytes_peak),
        ("threads", t.threads as u64),
    ];
    for (k, v) in rows {
        p.push_str(&format!(
            "<tr><th>{k}</th><td class=\"num\">{}</td></tr>\n",
            crate::fmt::count(v)
        ));
    }
    p.push_str("</table>\n<h2>Findings</h2>\n");
    if r.findings.is_empty() {
        p.push_str("<p>No findings.</p>\n");
    } else {
        p.push_str("<ol>\n");
        for f in &r.findings {
            p.push_str(&format!(
                "<li><strong>{}</strong> {}{}<br>{}<br>fix: {}</li>\n",
                escape(f.analysis.as_str()),
                escape(&f.title),
                if f.places.is_empty() {
                    String::new()
                } else {
                    format!(" at {}", escape(&f.places.join(", ")))
                },
                escape(&profcc_analysis::findings::impact_text(&f.impact)),
                escape(&f.fix)
            ));
        }
        p.push_str("</ol>\n");
    }
    p.push_str("</section>\n</noscript>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_slashes() {
        assert_eq!(
            escape("</script><b>a&b\"'"),
            "&lt;&#47;script&gt;&lt;b&gt;a&amp;b&quot;&#39;"
        );
        assert!(!escape("see https://x.org").to_lowercase().contains("http"));
        let j = script_safe_json(r#"{"a":"</script><b>https://x HTTP:h"}"#);
        assert!(
            !j.contains('<') && !j.contains("//") && !j.to_lowercase().contains("http"),
            "{j}"
        );
        let back: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert_eq!(back["a"], "</script><b>https://x HTTP:h");
    }
}

#[cfg(test)]
mod page_tests {
    use super::*;

    /// A symbol and a command line with markup and a URL: the page's source holds neither as
    /// markup nor as a URL, and the data reads back unchanged.
    #[test]
    fn html_page_has_no_markup_or_url_from_the_data() {
        let mut r = crate::tests::sample_report();
        let evil = "</script><b>x</b><!-- https://evil.example/a";
        r.objects.push(crate::model::ObjectRow {
            kind: "global".into(),
            name: evil.into(),
            ..Default::default()
        });
        r.summary.inputs[0].argv.push(evil.into());
        let page = String::from_utf8(render(&r, &HtmlOptions::default()).unwrap()).unwrap();
        assert_eq!(page.matches("</script>").count(), 3);
        for bad in ["<b>", "<!--", "http", "//", " src=", "url("] {
            assert!(!page.contains(bad), "{bad}");
        }
        let data = page.split("id=\"profcc-data\">").nth(1).unwrap();
        let data = &data[..data.find("</script>").unwrap()];
        let back: Report = serde_json::from_str(data).unwrap();
        assert_eq!(back, r);
    }

    /// The diff page escapes as the report page does: an object named with markup and a URL
    /// (BASE only, so a `gone` figure) and an allocation frame so named (the flame data) show
    /// in neither form in the page's source, and the embedded diff reads back unchanged.
    #[test]
    fn html_diff_page_has_no_markup_or_url_from_the_data() {
        use crate::diff::{compare, Diff, Side, SideInfo};
        let evil = "</script><b>x</b><!-- https://evil.example/a";
        let mut b = crate::tests::sample_report();
        b.objects.push(crate::model::ObjectRow {
            kind: "global".into(),
            name: evil.into(),
            bytes: Some(8),
            ..Default::default()
        });
        b.alloc_sites.sites[0].stack[0].function = Some(evil.into());
        let n = crate::tests::sample_report();
        let side = |r: Report| Side {
            info: SideInfo {
                profiles: vec![format!("{evil}.json")],
                exe: "prog".into(),
            },
            reports: vec![r],
        };
        let (bs, ns) = (side(b), side(n));
        let d = compare(&bs, &ns, None).unwrap();
        assert!(d
            .metrics
            .iter()
            .any(|m| m.scope.contains(evil) && m.verdict == "gone"));
        let page = render_diff(&d, &bs.reports[0], &ns.reports[0], MAX_BYTES).unwrap();
        let page = String::from_utf8(page).unwrap();
        assert_eq!(page.matches("</script>").count(), 4);
        let flame = page.split("id=\"profcc-base\">").nth(1).unwrap();
        assert!(flame.starts_with('{') && flame.contains(r"\u003c\/script\u003e\u003cb\u003ex"));
        for bad in ["<b>", "<!--", "http", "//", " src=", "url("] {
            assert!(!page.contains(bad), "{bad}");
        }
        let data = page.split("id=\"profcc-diff\">").nth(1).unwrap();
        let back: Diff = serde_json::from_str(&data[..data.find("</script>").unwrap()]).unwrap();
        assert_eq!(back, d);
    }

    /// Above the size limit the largest lists lose their lowest rows, and the page says so.
    #[test]
    fn html_page_above_the_limit_drops_rows_and_says_so() {
        let mut r = crate::tests::sample_report();
        for i in 0..2000 {
            r.objects.push(crate::model::ObjectRow {
                kind: "heap".into(),
                name: format!("file{i}.c:{i}"),
                bytes: Some(i),
                ..Default::default()
            });
        }
        let full = serde_json::to_string(&r).unwrap().len();
        let page = render(
            &r,
            &HtmlOptions {
                max_bytes: full / 2,
                ..Default::default()
            },
        )
        .unwrap();
        let page = String::from_utf8(page).unwrap();
        assert!(page.contains("class=\"dropped\""), "no note");
        assert!(page.contains("objects: the lowest-ranked"));
        assert!(page.len() < full, "{} of {full}", page.len());
        let tiny = render(
            &r,
            &HtmlOptions {
                max_bytes: 10,
                ..Default::default()
            },
        );
        assert!(tiny.unwrap_err().contains("--top N"));
    }
}
