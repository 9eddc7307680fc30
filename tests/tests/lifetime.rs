//! Allocation lifetimes end to end (docs/allocators.md, "Lifetimes"): the fixture
//! tests/fixtures/alloc/lifetimes.c frees blocks after known numbers of its own allocations,
//! so every figure is exact in allocation units: the freed and temporary counts, the sum,
//! minimum, maximum and histogram of each site, the frees another thread made (not measured),
//! blocks live at exit (no lifetime); then a merged report, the text, CSV and JSON renders.

use profcc_report::model::AllocSite;
use profcc_report::Report;
use profcc_schema::Lifetime;
use profcc_tests::*;
use std::process::Command;
use std::sync::OnceLock;

const N: u64 = 1000;
const SPAN: u64 = 100;
const LEAK: u64 = 7;

fn src() -> String {
    std::fs::read_to_string(fixture("alloc/lifetimes.c")).unwrap()
}

/// The fixture built with profcc -O2, run once: its scratch directory (the profile is
/// `life.profile.json`) and its report (all sites).
fn run() -> &'static (Scratch, Report) {
    static R: OnceLock<(Scratch, Report)> = OnceLock::new();
    R.get_or_init(|| {
        let s = Scratch::new();
        let profile = profile_lifetimes_fixture(&s);
        let r = report(&profile, &["--top", "0"]);
        (s, r)
    })
}

/// The site whose stack has a frame at the fixture's line marked `marker`.
fn site<'a>(r: &'a Report, marker: &str) -> &'a AllocSite {
    let line = line_of(&src(), marker);
    r.alloc_sites
        .sites
        .iter()
        .find(|s| {
            s.kind == "malloc"
                && s.stack.iter().any(|f| {
                    f.file
                        .as_deref()
                        .is_some_and(|x| x.ends_with("lifetimes.c"))
                        && f.line == Some(line)
                })
        })
        .unwrap_or_else(|| panic!("no site at {marker} (line {line}):\n{:#?}", r.alloc_sites))
}

/// The histogram of `lifetimes` (each `n` times), as the profile writes it.
fn histogram(lifetimes: impl IntoIterator<Item = u64>, n: u64) -> Vec<u64> {
    let mut h = Vec::new();
    for l in lifetimes {
        let k = (64 - l.leading_zeros()) as usize;
        if h.len() <= k {
            h.resize(k + 1, 0);
        }
        h[k] += n;
    }
    h
}

/// The figures each site of the fixture must have, computed from what it does.
fn expected() -> [(&'static str, Lifetime); 4] {
    let fill = 0..SPAN; // filler j of a round lives SPAN - 1 - j allocations
    [
        (
            "MARK_TEMP",
            Lifetime {
                freed: N,
                sum: 0,
                min: 0,
                max: 0,
                temporary: N,
                unmeasured: 0,
                histogram: vec![N],
            },
        ),
        (
            "MARK_LONG",
            Lifetime {
                freed: N,
                sum: N * SPAN,
                min: SPAN,
                max: SPAN,
                temporary: 0,
                unmeasured: 0,
                histogram: histogram([SPAN], N),
            },
        ),
        (
            "MARK_FILL",
            Lifetime {
                freed: N * SPAN,
                sum: N * fill.clone().sum::<u64>(),
                min: 0,
                max: SPAN - 1,
                temporary: N,
                unmeasured: 0,
                histogram: histogram(fill, N),
            },
        ),
        (
            "MARK_CROSS",
            Lifetime {
                unmeasured: N,
                ..Default::default()
            },
        ),
    ]
}

/// Each site's lifetimes are exactly what the fixture does; blocks live at exit have none;
/// the means are ordered as the lifetimes are.
#[test]
fn lifetimes_are_exact_per_site() {
    let (_, r) = run();
    for (marker, want) in expected() {
        let s = site(r, marker);
        assert_eq!(s.lifetime.as_ref(), Some(&want), "{marker}");
        assert_eq!(s.frees, want.freed + want.unmeasured, "{marker}: frees");
    }
    let leak = site(r, "MARK_LEAK");
    assert_eq!((leak.count, leak.live_objects_at_exit), (LEAK, LEAK));
    assert_eq!(leak.lifetime, None, "blocks live at exit have no lifetime");
    let mean = |m| site(r, m).lifetime.as_ref().unwrap().mean().unwrap();
    assert_eq!(mean("MARK_TEMP"), 0.0);
    assert_eq!(mean("MARK_FILL"), (SPAN - 1) as f64 / 2.0);
    assert_eq!(mean("MARK_LONG"), SPAN as f64);
}

/// Two profiles merged: counts and histograms add up, the extremes stay; the objects table
/// carries the merged figures too.
#[test]
fn lifetimes_merge_over_profiles() {
    let (s, _) = run();
    let p = s.path("life.profile.json");
    let merged = report(&p, &["--top", "0", p.to_str().unwrap()]);
    for (marker, one) in expected() {
        let mut two = one.clone();
        two.merge(&one);
        let got = site(&merged, marker).lifetime.clone().unwrap();
        assert_eq!(got, two, "{marker}");
        assert_eq!(
            (got.freed, got.temporary, got.min, got.max),
            (2 * one.freed, 2 * one.temporary, one.min, one.max),
            "{marker}"
        );
    }
    let line = line_of(&src(), "MARK_LONG");
    let obj = merged
        .objects
        .iter()
        .find(|o| o.kind == "heap" && o.name.ends_with(&format!("lifetimes.c:{line}")))
        .unwrap_or_else(|| panic!("no object for MARK_LONG: {:#?}", merged.objects));
    let l = obj.lifetime.as_ref().expect("the object's lifetime");
    assert_eq!((l.freed, l.mean()), (2 * N, Some(SPAN as f64)));
}

/// The text report's allocation rows and `alloc_sites.csv` show the lifetimes.
#[test]
fn lifetimes_in_text_and_csv() {
    let (s, _) = run();
    let p = s.path("life.profile.json");
    let out = sh(Command::new(profcc())
        .env("XDG_CACHE_HOME", probe_cache_home())
        .args(["report", "--top", "0"])
        .arg(&p));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("1,000 frees, lifetime 0.0 allocs (1,000 temporary)"),
        "{text}"
    );
    assert!(
        text.contains("1,000 frees, lifetime 100.0 allocs (0 temporary)"),
        "{text}"
    );
    let dir = s.path("csv");
    sh(Command::new(profcc())
        .env("XDG_CACHE_HOME", probe_cache_home())
        .args(["report", "--top", "0", "--csv"])
        .arg(&dir)
        .arg(&p));
    let csv = std::fs::read_to_string(dir.join("alloc_sites.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let line = line_of(&src(), "MARK_FILL").to_string();
    let row: Vec<&str> = lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .find(|r| r[col("file")].ends_with("lifetimes.c") && r[col("line")] == line)
        .unwrap_or_else(|| panic!("no MARK_FILL row:\n{csv}"));
    let cell = |name: &str| row[col(name)];
    assert_eq!(
        [
            "lifetime_freed",
            "lifetime_mean",
            "lifetime_min",
            "lifetime_max",
            "temporary",
            "lifetime_unmeasured"
        ]
        .map(cell),
        ["100000", "49.50", "0", "99", "1000", "0"]
    );
}
