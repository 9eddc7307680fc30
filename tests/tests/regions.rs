//! Regions of interest end to end (docs/regions.md): `<profcc.h>`'s markers, found through
//! the driver's include directory, counted per thread, and doing nothing under clang-22.

use profcc_tests::*;
use std::process::Command;

/// Executions per region and thread are exact; an inner region's time fits inside its outer
/// one's; recursion counts both executions; an end with no begin is counted apart; the plain
/// clang-22 build (the header only, no runtime) prints the same.
#[test]
fn nested_regions_are_counted_per_thread() {
    let s = Scratch::new();
    let src = fixture("regions/nested.c");
    let src = src.to_str().unwrap();
    s.compile(&profcc(), &["-O2", "-g", "-pthread", src, "-o", "nested"]);
    let include = root().join("include");
    let out = Command::new("clang-22")
        .args(["-O2", "-pthread", "-I"])
        .arg(&include)
        .args([src, "-o"])
        .arg(s.path("native"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let native = s.run_plain("native", &[]);
    let (profiled, p) = s.run_profiled("nested", &[], "summary=0");
    assert_same_run("nested regions", &native, &profiled);
    let g = p.regions.as_ref().expect("a regions section");
    assert_eq!((g.dropped, g.unmatched_ends), (0, 1));
    let row = |region: &str, thread: u32| {
        g.rows
            .iter()
            .find(|r| r.region == region && r.thread == thread)
            .unwrap_or_else(|| panic!("no row for {region} in thread {thread}: {:?}", g.rows))
    };
    assert_eq!(row("outer", 0).executions, 10);
    assert_eq!(row("inner", 0).executions, 30);
    assert_eq!(row("outer", 1).executions, 11);
    assert_eq!(row("inner", 1).executions, 33);
    assert_eq!(row("recursive", 0).executions, 2);
    assert_eq!(g.rows.len(), 5, "{:?}", g.rows);
    for t in [0, 1] {
        let (o, i) = (row("outer", t).ticks, row("inner", t).ticks);
        assert!(i > 0 && i <= o, "thread {t}: inner {i} ticks, outer {o}");
    }
    // The report: per region and thread, in seconds.
    let r = report(&s.path("nested.profile.json"), &[]);
    let rg = r.regions.expect("the report's regions");
    assert_eq!(rg.rows.len(), 5);
    let inner1 = rg
        .rows
        .iter()
        .find(|r| r.region == "inner" && r.thread == 1)
        .unwrap();
    assert_eq!(inner1.executions, 33);
    assert!(
        inner1.seconds > 0.0 && inner1.seconds < 10.0,
        "{}",
        inner1.seconds
    );
    assert_eq!(rg.unmatched_ends, 1);
}
