//! A headless Chromium for the HTML pages' tests (`profcc report --format html`,
//! `profcc diff --format html`): Debian's `chromium-headless-shell` loads a page from
//! `file://`; `--dump-dom` prints the DOM its script built, `--screenshot` a PNG; and readers
//! of the dumped DOM (a table's rows, a tab's section, the text of a fragment), with the checks
//! every page must pass (no script error, nothing outside the page).

use crate::{sh, Scratch};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The headless browser, or None (the test then fails saying how to install it).
pub fn chromium() -> PathBuf {
    for p in ["/usr/bin/chromium-headless-shell", "/usr/bin/chromium"] {
        if Path::new(p).is_file() {
            return PathBuf::from(p);
        }
    }
    panic!("no headless Chromium: install Debian's chromium-headless-shell (cargo xtask setup)")
}

/// Chromium's command with the flags every run needs (as root: no sandbox), its profile
/// directory in `s`.
pub fn browser(s: &Scratch) -> Command {
    let mut c = Command::new(chromium());
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", s.path("chromium").display()))
    .env("HOME", s.path(""));
    c
}

/// The DOM after the page's script ran.
pub fn dump_dom(s: &Scratch, page: &Path) -> String {
    let out = sh(browser(s)
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display())));
    String::from_utf8(out.stdout).unwrap()
}

/// A screenshot of `page#tab` at 1280x900, decoded: (width, height, RGB pixels).
pub fn screenshot(s: &Scratch, page: &Path, tab: &str) -> (u32, u32, Vec<[u8; 3]>) {
    let png = s.path(&format!("{tab}.png"));
    sh(browser(s)
        .arg(format!("--screenshot={}", png.display()))
        .arg("--window-size=1280,900")
        .arg(format!("file://{}#{tab}", page.display())));
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let step = info.color_type.samples();
    assert!(
        step >= 3,
        "{tab}: a grey screenshot ({:?})",
        info.color_type
    );
    let px = buf[..info.buffer_size()]
        .chunks(step)
        .map(|c| [c[0], c[1], c[2]])
        .collect();
    (info.width, info.height, px)
}

/// Text of an HTML fragment: tags dropped, the entities the DOM dump writes decoded.
pub fn text(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    // Numeric references (the noscript part escapes `/`, `:` and `h` of `http`), then names.
    let mut decoded = String::new();
    let mut rest = out.as_str();
    while let Some(at) = rest.find("&#") {
        decoded.push_str(&rest[..at]);
        let tail = &rest[at + 2..];
        match tail
            .find(';')
            .and_then(|e| Some((e, char::from_u32(tail[..e].parse().ok()?)?)))
        {
            Some((e, c)) => {
                decoded.push(c);
                rest = &tail[e + 1..];
            }
            None => {
                decoded.push_str("&#");
                rest = tail;
            }
        }
    }
    decoded.push_str(rest);
    decoded
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&")
}

/// The element whose opening tag holds `marker` (an attribute), up to `end`.
pub fn fragment<'a>(dom: &'a str, marker: &str, end: &str) -> &'a str {
    let at = dom
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker} in the page"));
    let rest = &dom[at..];
    &rest[..rest.find(end).unwrap_or(rest.len())]
}

/// The body rows of the table that follows `marker`, each as its cells' text.
pub fn rows(dom: &str, marker: &str) -> Vec<Vec<String>> {
    let t = fragment(dom, marker, "</table>");
    t.split("<tr")
        .skip(1)
        .map(|r| {
            r.split("<td")
                .skip(1)
                .map(|c| text(&format!("<td{}", &c[..c.find("</td>").unwrap_or(c.len())])))
                .map(|c| c.trim().to_string())
                .collect::<Vec<String>>()
        })
        .filter(|r| !r.is_empty())
        .collect()
}

/// The header cells' text of the table that follows `marker` (a sort arrow left out), to find
/// a column by its name.
pub fn header(dom: &str, marker: &str) -> Vec<String> {
    let t = fragment(dom, marker, "</thead>");
    t.split("<th")
        .skip(1)
        .filter(|c| c.starts_with('>') || c.starts_with(' '))
        .map(|c| text(&format!("<th{}", &c[..c.find("</th>").unwrap_or(c.len())])))
        .map(|c| c.trim_end_matches(['▲', '▼']).trim().to_string())
        .collect()
}

/// The index of the column named `name` in the table that follows `marker`.
pub fn column(dom: &str, marker: &str, name: &str) -> usize {
    let h = header(dom, marker);
    h.iter()
        .position(|c| c == name)
        .unwrap_or_else(|| panic!("no column {name} in {h:?}"))
}

/// One tab's section of the DOM.
pub fn section<'a>(dom: &'a str, tab: &str) -> &'a str {
    fragment(dom, &format!("id=\"tab-{tab}\""), "<section")
}

pub fn thousands(n: u64) -> String {
    profcc_report::fmt::count(n)
}

/// The page's own script recorded no error (window.onerror, unhandled rejections, a tab that
/// threw).
pub fn assert_no_script_error(dom: &str) {
    let errors = text(fragment(dom, "id=\"profcc-errors\"", "</pre>"));
    let errors = errors.split_once('>').map_or("", |(_, e)| e);
    assert!(errors.trim().is_empty(), "script errors: {errors}");
}

/// The page names nothing outside itself: no scheme, no `//host`, no resource attribute.
pub fn assert_self_contained(page: &str) {
    for bad in [
        "http:", "https:", "//", " src=", "<link", "url(", "@import", "<iframe", "<img",
    ] {
        assert!(
            !page.contains(bad),
            "the page names {bad:?}: {}",
            &page[page.find(bad).unwrap().saturating_sub(80)..][..160.min(page.len())]
        );
    }
}

/// The text of the flame graph's boxes in `dom`'s Flame graph tab.
pub fn flame_text(dom: &str) -> String {
    text(fragment(
        section(dom, "flame"),
        "data-flame",
        "</div></div>",
    ))
}
