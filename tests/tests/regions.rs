//! Regions of interest end to end (docs/regions.md): `<profcc.h>`'s markers, found through
//! the driver's include directory, counted per thread, and doing nothing under clang-22.

use profcc_schema::regions::Counts;
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

/// Builds `args` with `PROFCC_INSTRUMENT=roi` in `s`'s directory; the pass's statistics
/// (`PROFCC_STATS=1`).
fn roi_build(s: &Scratch, args: &[&str]) -> String {
    let out = output_within(
        Command::new(profcc())
            .current_dir(s.path(""))
            .args(args)
            .env("PROFCC_INSTRUMENT", "roi")
            .env("PROFCC_STATS", "1"),
    );
    let stats = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stats}");
    stats
}

/// Statistic `name` of the pass's `name=value` words (0 when absent).
fn stat_of(stats: &str, name: &str) -> u64 {
    stats
        .split(|c: char| c.is_whitespace())
        .find_map(|w| w.strip_prefix(&format!("{name}=")))
        .map_or(0, |v| v.parse().unwrap())
}

/// The counts of every region of a profile, by (region, thread).
fn counts_of(
    p: &profcc_schema::Profile,
) -> Vec<(String, u32, u64, profcc_schema::regions::Counts)> {
    let g = p.regions.as_ref().expect("a regions section");
    let mut v: Vec<_> = g
        .rows
        .iter()
        .map(|r| {
            let c = r
                .counts
                .clone()
                .unwrap_or_else(|| panic!("region {} has no counts", r.region));
            (r.region.clone(), r.thread, r.executions, c)
        })
        .collect();
    v.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    v
}

/// The derived build's rows equal the oracle build's in every field but the counters' own
/// increments (what the placements differ in).
fn assert_derived_equals_oracle(
    derived: &[(String, u32, u64, Counts)],
    oracle: &[(String, u32, u64, Counts)],
    what: &str,
) {
    let but_increments = |rows: &[(String, u32, u64, Counts)]| {
        let mut rows = rows.to_vec();
        for r in rows.iter_mut() {
            r.3.counter_increments = 0;
        }
        rows
    };
    assert_eq!(
        but_increments(derived),
        but_increments(oracle),
        "{what}: the derived counts differ from the oracle's"
    );
}

/// Bytes read and written per execution of each kernel of kernels.c (n = 1000 doubles): the
/// kernel's own traffic plus, per execution, the 8-byte loads of the global pointer variables
/// main passes to it (real loads at every optimisation level: the markers are calls).
const KERNEL_BYTES: [(&str, u64, u64); 20] = [
    ("init", 8, 8000),
    ("sum", 8000 + 8, 0),
    ("dot", 16000 + 16, 0),
    ("daxpy", 16000 + 16, 8000),
    ("stream_copy", 8000 + 16, 8000),
    ("stream_scale", 8000 + 16, 8000),
    ("stream_add", 16000 + 24, 8000),
    ("stream_triad", 16000 + 24, 8000),
    // 48 x 48 doubles each way.
    ("transpose", 18432 + 16, 18432),
    // 1001 row bounds (4 bytes), 3000 entries x (value 8 + column 4 + x 8), five pointers.
    ("spmv", 4004 + 60000 + 40, 8000),
    // 1000 steps of an 8-byte next pointer (the ring is main's own: no pointer load).
    ("chase", 8000, 0),
    // The same ring walked by an uncountable loop (its counters kept in registers).
    ("walk", 8000, 0),
    ("memcpy_const", 4096, 4096),
    ("memcpy_n", 8000 + 16, 8000),
    ("memset_n", 8, 8000),
    // One helper, two regions: each gets its own calls' bytes.
    ("helper_small", 800 + 8, 0),
    ("helper_large", 8000 + 8, 0),
    // ZRay's inline-asm markers.
    ("zray_7", 400 + 8, 0),
    // The arms of an if, their common tail merged by -O2 (run 3 and 2 times of 5).
    ("arm_a", 800 + 8, 0),
    ("arm_b", 2400 + 8, 0),
];

/// Region counters end to end: each kernel's bytes read and written are exact at -O0 and -O2
/// (the -O0 build's own stack slots counted apart), every execution counted, and the counts
/// derived from the spanning-tree counters equal the oracle build's (a counter on every block)
/// in every field: instructions, loads, stores, bytes by space, operation mix, calls.
#[test]
fn kernel_bytes_are_exact_and_derived_counts_equal_the_oracle() {
    let s = Scratch::new();
    let src = fixture("regions/kernels.c");
    let src = src.to_str().unwrap();
    let mut by_level = Vec::new();
    for level in ["-O0", "-O2"] {
        let mut modes = Vec::new();
        for mode in ["roi", "roi-oracle"] {
            let exe = format!("kernels{level}-{mode}");
            s.compile_env(
                &profcc(),
                &[level, "-g", src, "-o", &exe],
                &[("PROFCC_INSTRUMENT", mode)],
            );
            let (_, p) = s.run_profiled(&exe, &[], "summary=0");
            modes.push(counts_of(&p));
        }
        // The counters' own increments are what the placements differ in: the oracle counts
        // every block of init's loop over 1000 elements; the derived placement counts the loop
        // once per entry at -O2 (countable: its trip count is added in the preheader) and
        // one edge per iteration at -O0 (its induction variable lives in memory).
        let init_increments = |rows: &[(String, u32, u64, Counts)]| {
            let r = rows.iter().find(|r| r.0 == "init").unwrap();
            r.3.counter_increments / r.2
        };
        let (derived, oracle) = (init_increments(&modes[0]), init_increments(&modes[1]));
        // -O2 vectorises the loop: 250 iterations of 4 elements.
        let (derived_max, oracle_min) = if level == "-O2" {
            (8, 250)
        } else {
            (1010, 2000)
        };
        assert!(
            derived <= derived_max && oracle >= oracle_min,
            "{level}: init's counter increments per execution: derived {derived}, oracle {oracle}"
        );
        assert_derived_equals_oracle(&modes[0], &modes[1], level);
        let rows = modes.swap_remove(0);
        assert_eq!(rows.len(), KERNEL_BYTES.len(), "{level}: {rows:?}");
        for (name, read, written) in KERNEL_BYTES {
            let (_, thread, executions, c) = rows
                .iter()
                .find(|r| r.0 == name)
                .unwrap_or_else(|| panic!("{level}: no row for {name}"));
            let runs = match name {
                "arm_a" => 3,
                "arm_b" => 2,
                _ => 5,
            };
            assert_eq!((*thread, *executions), (0, runs), "{level} {name}");
            assert_eq!(
                (c.bytes_read() / runs, c.bytes_written() / runs),
                (read, written),
                "{level} {name}: bytes read and written per execution ({c:?})"
            );
            assert_eq!(c.uncovered_calls, 0, "{level} {name}");
        }
        by_level.push(rows);
    }
    // The same bytes at both levels, by construction of the table above; the -O0 build keeps
    // its locals in stack slots: counted, but apart.
    let local = profcc_schema::regions::LOCAL;
    let o0_local: u64 = by_level[0].iter().map(|r| r.3.load_bytes[local]).sum();
    assert!(
        o0_local > 0,
        "the -O0 build's own stack slots are counted apart"
    );
}

/// Regions in threads, at -O0 and -O2: a pthread's region counts its own slice; an OpenMP loop
/// in a region counts in each team thread's row (the workers' rows have no executions of
/// their own); the markers are LIKWID's, declared by the program, with no LIKWID linked.
#[test]
fn pthreads_openmp_and_likwid_markers_count_exact_bytes() {
    let s = Scratch::new();
    let src = fixture("regions/parallel.c");
    let src = src.to_str().unwrap();
    for level in ["-O0", "-O2"] {
        let exe = format!("parallel{level}");
        s.compile_env(
            &profcc(),
            &[level, "-g", "-fopenmp", "-pthread", src, "-o", &exe],
            &[("PROFCC_INSTRUMENT", "roi")],
        );
        let (out, p) = s.run_profiled(&exe, &[], "summary=0");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "4 4002\n");
        let rows = counts_of(&p);
        let pthread: Vec<_> = rows.iter().filter(|r| r.0 == "pthread_triad").collect();
        assert_eq!(pthread.len(), 2, "{level}: {rows:?}");
        for r in &pthread {
            // 3 repetitions x 2000 elements: 16 bytes read and 8 written each.
            assert_eq!(r.2, 3, "{level}");
            assert_eq!(
                (r.3.bytes_read(), r.3.bytes_written()),
                (96000, 48000),
                "{level} {r:?}"
            );
        }
        let omp: Vec<_> = rows.iter().filter(|r| r.0 == "omp_triad").collect();
        assert_eq!(omp.len(), 2, "{level}: {rows:?}");
        assert_eq!(
            omp.iter().map(|r| r.2).collect::<Vec<_>>(),
            vec![3, 0],
            "{level}: the master ran the markers, the worker did not"
        );
        for r in &omp {
            // Each thread's half of the loop; plus the 4-byte thread id the OpenMP runtime
            // hands the outlined function by reference, read once per execution.
            assert_eq!(
                (r.3.bytes_read(), r.3.bytes_written()),
                (96000 + 12, 48000),
                "{level} {r:?}"
            );
        }
        // Sampled (roi_sample=2: the first 2 executions counted, the third with probability
        // 1/2 and then standing for 2): the team's worker counts in the class of the master's
        // execution, so both rows scale alike.
        let (_, p) = s.run_profiled(&exe, &[], "summary=0:roi_sample=2");
        let g = p.regions.as_ref().unwrap();
        let master = g
            .rows
            .iter()
            .find(|r| r.region == "omp_triad" && r.executions == 3)
            .unwrap();
        let k = master.counted_executions.unwrap();
        assert!(k == 2 || k == 3, "{level}: {k}");
        let stands_for = 2 + 2 * (k - 2);
        for r in g.rows.iter().filter(|r| r.region == "omp_triad") {
            let c = r.counts.as_ref().unwrap();
            assert_eq!(
                (c.bytes_read(), c.bytes_written()),
                (32004 * stands_for, 16000 * stands_for),
                "{level} thread {}: {k} counted",
                r.thread
            );
        }
    }
}

/// `roi_sample=10`, at -O0 and -O2: executions stay exact; the first 10 executions of each
/// region are counted, then one in 10 from a random start, and those counts are multiplied by
/// 10. Every execution here does the same work (16000 bytes read, 8000 written), so the
/// scaled bytes must equal `(10 + 10 x (counted - 10))` executions' worth exactly: `daxpy`'s
/// 990 later executions hold exactly 99 sampled ones whatever the start (its estimate is the
/// true total), `rare`'s 133 hold 13 or 14.
#[test]
fn sampled_regions_scale_counts_back() {
    let s = Scratch::new();
    let src = fixture("regions/sampled.c");
    let src = src.to_str().unwrap();
    for level in ["-O0", "-O2"] {
        let exe = format!("sampled{level}");
        s.compile_env(
            &profcc(),
            &[level, "-g", src, "-o", &exe],
            &[("PROFCC_INSTRUMENT", "roi")],
        );
        let (out, p) = s.run_profiled(&exe, &["1000"], "summary=0:roi_sample=10");
        assert!(out.status.success());
        let g = p.regions.as_ref().expect("a regions section");
        assert_eq!(g.sample_period, 10);
        let row = |name: &str| g.rows.iter().find(|r| r.region == name).unwrap();
        for (name, executions, counted) in [("daxpy", 1000, &[109][..]), ("rare", 143, &[23, 24])] {
            let r = row(name);
            assert_eq!(r.executions, executions, "{level} {name}");
            let k = r
                .counted_executions
                .expect("counted executions under sampling");
            assert!(counted.contains(&k), "{level} {name}: {k} counted");
            let c = r.counts.as_ref().unwrap();
            let stands_for = 10 + 10 * (k - 10);
            assert_eq!(
                (c.bytes_read(), c.bytes_written()),
                (16000 * stands_for, 8000 * stands_for),
                "{level} {name}: {k} counted executions"
            );
        }
        assert_eq!(
            row("daxpy").counts.as_ref().unwrap().bytes_read(),
            16000 * 1000
        );
        // Without sampling every execution counts.
        let (_, p) = s.run_profiled(&exe, &["1000"], "summary=0");
        let g = p.regions.as_ref().unwrap();
        let rare = g.rows.iter().find(|r| r.region == "rare").unwrap();
        assert_eq!((g.sample_period, rare.counted_executions), (1, None));
        assert_eq!(rare.counts.as_ref().unwrap().bytes_read(), 16000 * 143);
    }
}

/// `roi_time` (docs/regions.md, "Time"): with a threshold no execution reaches, each region's
/// first 256 executions in the thread are timed, then one in 16 at random, each weighing 16:
/// about (executions - 256) / 16 timed so, the bytes still exact, the time of the same order
/// as when every execution is timed (a time missing its weight would be 16 times short), and
/// the report saying how it was taken. `roi_time=0` times every execution.
#[test]
fn short_regions_are_timed_one_in_sixteen() {
    let s = Scratch::new();
    let src = fixture("regions/sampled.c");
    let src = src.to_str().unwrap();
    roi_build(&s, &["-O2", "-g", src, "-o", "timed"]);
    // A million repetitions (about 0.4 s): a preemption (a few ms, often on a loaded machine)
    // that lands in a timed execution weighs 16, so a short run's estimate would be at its
    // mercy.
    let reps = "1000000";
    let (out, p) = s.run_profiled("timed", &[reps], "summary=0:roi_time=1000000");
    assert!(out.status.success());
    let g = p.regions.as_ref().expect("a regions section");
    assert_eq!(g.time_min_us, 1_000_000);
    let row = |g: &profcc_schema::regions::Regions, name: &str| {
        g.rows.iter().find(|r| r.region == name).unwrap().clone()
    };
    // Binomial: daxpy's 999,744 executions past the first 256 give 62,484 timed (σ 242),
    // rare's 142,602 give 8,913 (σ 91); the bounds are 6σ.
    for (name, executions, bounds) in [
        ("daxpy", 1_000_000, 61_030..63_940),
        ("rare", 142_858, 8_360..9_466),
    ] {
        let r = row(g, name);
        assert_eq!(r.executions, executions, "{name}");
        let k = r.time_samples.expect("time samples");
        assert!(
            bounds.contains(&k),
            "{name}: {k} executions timed one in 16"
        );
        let c = r.counts.as_ref().unwrap();
        assert_eq!(c.bytes_read(), 16000 * executions, "{name}");
    }
    let text = sh(Command::new(profcc())
        .arg("report")
        .arg(s.path("timed.profile.json")));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("time sampled (roi_time=1000000)") && text.contains("timed one in 16"),
        "{text}"
    );
    let sampled_ticks = row(g, "daxpy").ticks;
    let (_, p) = s.run_profiled("timed", &[reps], "summary=0:roi_time=0");
    let g = p.regions.as_ref().unwrap();
    assert_eq!(g.time_min_us, 0);
    let all = row(g, "daxpy");
    assert_eq!(all.time_samples, None);
    let ratio = sampled_ticks as f64 / all.ticks as f64;
    assert!(
        (0.25..4.0).contains(&ratio),
        "daxpy's time, timed one in 16 over every execution timed: {ratio:.3}"
    );
}

/// `roi_sample`'s inlined begin (docs/regions.md, "Sampling"), ROI-only at -O0 and -O2: every
/// sampled region of regions/skip.c gets the skip test (the build's stats say so), and the
/// plain executions it runs without calling the runtime are counted exactly however the
/// slot comes home: in two threads that end before the dump, a region nested in one that
/// runs plain (one execution, nothing opened) or counted (the outer's class), behind
/// LIKWID's marker, and two regions whose names share a slot. Each execution does the same
/// work (4000 bytes read, 2000 written), so the scaled bytes equal the counted executions'
/// worth exactly.
#[test]
fn skipped_plain_executions_are_counted_exactly() {
    use profcc_abi::roi::skip_key;
    // The fixture's two clashing names share a slot (pick others if the hash changes); the
    // other regions have slots of their own.
    let slot = |n: &str| skip_key(n.as_bytes()).0;
    assert_eq!(slot("clash_am"), slot("clash_ar"));
    let mut others: Vec<u32> = ["worker", "outer", "inner", "likwid_scale", "clash_am"]
        .iter()
        .map(|n| slot(n))
        .collect();
    others.sort_unstable();
    others.dedup();
    assert_eq!(others.len(), 5, "slots {others:?}");
    let s = Scratch::new();
    let src = fixture("regions/skip.c");
    let src = src.to_str().unwrap();
    for level in ["-O0", "-O2"] {
        let exe = format!("skip{level}");
        let stats = roi_build(&s, &[level, "-g", "-pthread", src, "-o", &exe]);
        let stat = |name: &str| stat_of(&stats, name);
        // worker, outer, likwid_scale and the two clashes; inner is inside outer.
        assert_eq!(stat("roi-regions-sampled"), 5, "{level}: {stats}");
        assert_eq!(stat("roi-fast-begins"), 5, "{level}: {stats}");
        let (out, p) = s.run_profiled(&exe, &["1000"], "summary=0:roi_sample=10");
        assert!(out.status.success());
        let g = p.regions.as_ref().expect("a regions section");
        let bytes = |r: &profcc_schema::regions::Row| {
            let c = r.counts.as_ref().unwrap();
            (c.bytes_read(), c.bytes_written())
        };
        let rows = |name: &str| -> Vec<&profcc_schema::regions::Row> {
            g.rows.iter().filter(|r| r.region == name).collect()
        };
        for name in ["worker", "likwid_scale", "clash_am", "clash_ar"] {
            let want_rows = if name == "worker" { 2 } else { 1 };
            assert_eq!(rows(name).len(), want_rows, "{level} {name}");
            for r in rows(name) {
                assert_eq!(r.executions, 1000, "{level} {name} thread {}", r.thread);
                // 990 executions after the first 10 hold exactly 99 sampled ones.
                assert_eq!(r.counted_executions, Some(109), "{level} {name}");
                assert_eq!(bytes(r), (4000 * 1000, 2000 * 1000), "{level} {name}");
            }
        }
        let (outer, inner) = (rows("outer")[0], rows("inner")[0]);
        assert_eq!((outer.executions, inner.executions), (1000, 334), "{level}");
        assert_eq!(outer.counted_executions, Some(109), "{level}");
        // inner counts in its outer's class: exact in the outer's first 10 executions
        // (repetitions 0, 3, 6, 9), sampled after.
        let k = inner.counted_executions.unwrap();
        let inner_stands = 4 + 10 * (k - 4);
        assert_eq!(
            bytes(inner),
            (4000 * inner_stands, 2000 * inner_stands),
            "{level}: inner counted {k}"
        );
        assert_eq!(
            bytes(outer),
            (
                4000 * 1000 + 4000 * inner_stands,
                2000 * 1000 + 2000 * inner_stands
            ),
            "{level}"
        );
        // Without sampling the same build counts every execution.
        let (_, p) = s.run_profiled(&exe, &["1000"], "summary=0");
        let g = p.regions.as_ref().unwrap();
        let outer = g.rows.iter().find(|r| r.region == "outer").unwrap();
        assert_eq!(outer.counted_executions, None);
        assert_eq!(
            outer.counts.as_ref().unwrap().bytes_read(),
            4000 * 1000 + 4000 * 334,
            "{level}"
        );
    }
}

/// Perf events around regions (docs/regions.md, "Hardware counters"), in the ROI-only build
/// at -O0 and -O2: `touch` takes exactly 512 page faults per execution (the software event
/// every Linux kernel gives: profcc's own counter arrays are resident before the region
/// touches them) and reads the events on every execution (each lasts far more than
/// roi_events' 100 µs); `tiny` reads them on its first execution only. Hardware counters are
/// named as counted or as refused with the kernel's reason; where the machine gives them,
/// `touch` retired at least one instruction per page. `roi_events=0` reads nothing.
#[test]
fn region_perf_events_count_page_faults_exactly() {
    let s = Scratch::new();
    let src = fixture("regions/events.c");
    let src = src.to_str().unwrap();
    for level in ["-O0", "-O2"] {
        let exe = format!("events{level}");
        s.compile_env(
            &profcc(),
            &[level, "-g", src, "-o", &exe],
            &[("PROFCC_INSTRUMENT", "roi")],
        );
        let (out, p) = s.run_profiled(&exe, &["3"], "summary=0");
        assert!(out.status.success());
        let g = p.regions.as_ref().expect("a regions section");
        let st = g.events.as_ref().expect("the events' status");
        assert_eq!(st.min_us, 100);
        assert!(
            st.counted.iter().any(|e| e == "page_faults"),
            "{level}: {st:?}"
        );
        match st.mode.as_str() {
            "hardware" => assert!(st.counted.iter().any(|e| e == "instructions"), "{st:?}"),
            "software" => assert!(
                st.why
                    .as_deref()
                    .is_some_and(|w| w.starts_with("hardware counters refused")),
                "{st:?}"
            ),
            m => panic!("{level}: mode {m}: {st:?}"),
        }
        let row = |name: &str| g.rows.iter().find(|r| r.region == name).unwrap();
        let pf = profcc_schema::regions::EVENTS
            .iter()
            .position(|&e| e == "page_faults")
            .unwrap();
        let touch = row("touch").events.as_ref().expect("touch read its events");
        assert_eq!(touch.executions, 3, "{level}");
        assert_eq!(touch.values[pf], 3 * 512, "{level}: {touch:?}");
        if st.mode == "hardware" {
            assert!(touch.values[0] >= 3 * 512, "{level}: {touch:?}");
        }
        let tiny = row("tiny");
        assert_eq!(tiny.executions, 1000);
        let te = tiny.events.as_ref().expect("tiny's first execution");
        assert_eq!((te.executions, te.values[pf]), (1, 0), "{level}");
        // The report's table: 512 page faults per execution of touch.
        let text = sh(Command::new(profcc())
            .args(["report"])
            .arg(s.path(&format!("{exe}.profile.json"))));
        let text = String::from_utf8_lossy(&text.stdout);
        let table = &text[text.find("(per execution)").expect("the events table")..];
        let line = table
            .lines()
            .find(|l| l.trim_start().starts_with("touch"))
            .unwrap_or_else(|| panic!("no events line for touch:\n{text}"));
        assert!(line.trim_end().ends_with(" 512"), "{line}");
        // Off: nothing read, no status.
        let (_, p) = s.run_profiled(&exe, &["3"], "summary=0:roi_events=0");
        let g = p.regions.as_ref().unwrap();
        assert!(g.events.is_none() && g.rows.iter().all(|r| r.events.is_none()));
    }
}

/// Region snapshots (docs/regions.md, "Snapshots"): with `roi_interval=20` the profile keeps
/// a snapshot per interval and one at the dump; every cumulative count only grows, and the
/// last snapshot is exactly the profile's rows, and each has the heap's totals and live bytes
/// then (the triad's arrays live while it runs). `profcc report --trace` turns them into a
/// Chrome trace whose slices' bytes add up to each thread's total; it refuses to write over
/// a profile it reads. While the program runs, it publishes its counts for `profcc monitor
/// PID`, which prints both threads' triad bandwidth; the published file is gone at exit.
#[test]
fn region_snapshots_make_a_trace_and_feed_the_monitor() {
    // One reading of `profcc monitor PID`, 0.2 s apart.
    let monitor_once = |pid: u32| {
        let m = sh(Command::new(profcc()).args([
            "monitor",
            &pid.to_string(),
            "--interval",
            "0.2",
            "--count",
            "1",
        ]));
        String::from_utf8_lossy(&m.stdout).into_owned()
    };
    let s = Scratch::new();
    // live.c, 20000 repetitions, with PROFCC_OPTIONS `opts`, once its first is done.
    let start_live = |ready: &str, opts: &str| {
        let ready = s.path(ready);
        let child = Command::new(s.path("live"))
            .current_dir(s.path(""))
            .args(["20000", ready.to_str().unwrap()])
            .env("PROFCC_OPTIONS", opts)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        while !ready.exists() {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        child
    };
    let src = fixture("regions/live.c");
    s.compile_env(
        &profcc(),
        &["-O2", "-g", "-pthread", src.to_str().unwrap(), "-o", "live"],
        &[("PROFCC_INSTRUMENT", "roi")],
    );
    let reps: u64 = 3000;
    let per_exec_read = 2 * 8 * (1 << 18);
    let (out, p) = s.run_profiled("live", &[&reps.to_string()], "summary=0:roi_interval=20");
    assert!(out.status.success());
    let g = p.regions.as_ref().unwrap();
    assert_eq!(g.interval_ms, 20);
    assert!(g.snapshots.len() >= 2, "{} snapshots", g.snapshots.len());
    for w in g.snapshots.windows(2) {
        assert!(w[0].ns < w[1].ns);
        for r in &w[1].rows {
            if let Some(b) = w[0]
                .rows
                .iter()
                .find(|b| (&b.region, b.thread) == (&r.region, r.thread))
            {
                assert!(
                    b.executions <= r.executions
                        && b.bytes_read <= r.bytes_read
                        && b.ticks <= r.ticks,
                    "{b:?} then {r:?}"
                );
            }
        }
    }
    // Each snapshot has the heap then: cumulative counts that only grow, and the bytes live
    // then; while both threads run the triad their six 2 MiB arrays are live.
    let heaps: Vec<_> = g
        .snapshots
        .iter()
        .map(|s| s.heap.expect("every snapshot has the heap"))
        .collect();
    for w in heaps.windows(2) {
        assert!(
            w[0].allocations <= w[1].allocations
                && w[0].frees <= w[1].frees
                && w[0].bytes_allocated <= w[1].bytes_allocated,
            "{w:?}"
        );
    }
    let arrays = 2 * 3 * 8 * (1u64 << 18);
    let most = heaps.iter().map(|h| h.live_bytes).max().unwrap();
    assert!(
        (arrays..=p.totals.live_bytes_peak).contains(&most),
        "{most} live at most, {arrays} arrays, peak {}",
        p.totals.live_bytes_peak
    );
    assert!(heaps.last().unwrap().allocations <= p.totals.allocations);
    let last = g.snapshots.last().unwrap();
    for t in [0, 1] {
        let row = g
            .rows
            .iter()
            .find(|r| r.region == "triad" && r.thread == t)
            .unwrap();
        let c = row.counts.as_ref().unwrap();
        assert_eq!(c.bytes_read(), reps * per_exec_read);
        let snap = last
            .rows
            .iter()
            .find(|r| r.region == "triad" && r.thread == t)
            .unwrap();
        assert_eq!(
            (
                snap.executions,
                snap.ticks,
                snap.bytes_read,
                snap.bytes_written,
                snap.instructions
            ),
            (
                row.executions,
                row.ticks,
                c.bytes_read(),
                c.bytes_written(),
                c.instructions
            )
        );
    }
    assert!(!std::path::Path::new(&profcc_schema::regions::live_path(p.pid)).exists());

    // The Chrome trace.
    let profile = s.path("live.profile.json");
    let trace = s.path("live.trace.json");
    let o = sh(Command::new(profcc())
        .arg("report")
        .arg(&profile)
        .arg("--trace")
        .arg(&trace));
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let t: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let events = t["traceEvents"].as_array().unwrap();
    assert!(events
        .iter()
        .any(|e| e["ph"] == "M" && e["name"] == "process_name"));
    assert!(events
        .iter()
        .any(|e| e["ph"] == "C" && e["name"] == "triad GB/s (thread 1)"));
    // The heap counter: one sample per snapshot, each the snapshot's live bytes.
    let live: Vec<u64> = events
        .iter()
        .filter(|e| e["ph"] == "C" && e["name"] == "heap live bytes")
        .map(|e| e["args"]["bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(
        live,
        heaps.iter().map(|h| h.live_bytes).collect::<Vec<_>>(),
        "heap live bytes"
    );
    for tid in [0, 1] {
        let read: u64 = events
            .iter()
            .filter(|e| e["ph"] == "X" && e["name"] == "triad" && e["tid"] == tid)
            .map(|e| e["args"]["bytes_read"].as_u64().unwrap())
            .sum();
        assert_eq!(read, reps * per_exec_read, "thread {tid}");
    }
    let before = std::fs::read(&profile).unwrap();
    let o = Command::new(profcc())
        .arg("report")
        .arg(&profile)
        .arg("--trace")
        .arg(&profile)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is one of the profiles read"));
    assert_eq!(std::fs::read(&profile).unwrap(), before);

    // The monitor, while the program runs.
    let mut child = start_live("ready", "summary=0:write=0:roi_interval=50");
    let pid = child.id();
    // The first snapshot is published an interval after the start.
    while !std::path::Path::new(&profcc_schema::regions::live_path(pid)).exists() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let text = monitor_once(pid);
    for t in [0, 1] {
        let line = text
            .lines()
            .find(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                w.first() == Some(&"triad") && w.get(1) == Some(&t.to_string().as_str())
            })
            .unwrap_or_else(|| panic!("no triad line for thread {t}:\n{text}"));
        let read_gbs: f64 = line.split_whitespace().nth(3).unwrap().parse().unwrap();
        assert!(read_gbs > 0.0, "{line}");
    }
    assert!(child.wait().unwrap().success());
    assert!(!std::path::Path::new(&profcc_schema::regions::live_path(pid)).exists());

    // Attached to a program started without roi_interval: the monitor asks, the runtime
    // starts publishing (a snapshot every half --interval), and the profile keeps the
    // snapshots from then on, the last equal to the rows.
    let attached = s.path("attached.json");
    let mut child = start_live("ready2", &format!("summary=0:out={}", attached.display()));
    let pid = child.id();
    assert!(!std::path::Path::new(&profcc_schema::regions::live_path(pid)).exists());
    let text = monitor_once(pid);
    assert!(text.contains("a snapshot every 100 ms"), "{text}");
    assert_eq!(
        text.lines()
            .filter(|l| l.trim_start().starts_with("triad "))
            .count(),
        2,
        "{text}"
    );
    assert!(!std::path::Path::new(&profcc_schema::regions::want_path(pid)).exists());
    assert!(child.wait().unwrap().success());
    let p = profcc_schema::read(&attached).unwrap();
    let g = p.regions.as_ref().unwrap();
    assert_eq!(g.interval_ms, 100);
    let last = g
        .snapshots
        .last()
        .expect("snapshots since the monitor asked");
    for t in [0, 1] {
        let row = g
            .rows
            .iter()
            .find(|r| r.region == "triad" && r.thread == t)
            .unwrap();
        let snap = last
            .rows
            .iter()
            .find(|r| r.region == "triad" && r.thread == t)
            .unwrap();
        assert_eq!(snap.executions, row.executions);
        assert_eq!(snap.bytes_read, row.counts.as_ref().unwrap().bytes_read());
        assert_eq!(row.executions, 20000);
    }
    assert!(!std::path::Path::new(&profcc_schema::regions::live_path(pid)).exists());
    // A process that publishes nothing and answers no request: one line, exit 1, no
    // request left behind.
    let mut quiet = Command::new("sleep").arg("30").spawn().unwrap();
    let o = Command::new(profcc())
        .args(["monitor", &quiet.id().to_string(), "--interval", "0.02"])
        .output()
        .unwrap();
    let _ = quiet.kill();
    let _ = quiet.wait();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("roi_interval=100"), "{err}");
    assert!(!std::path::Path::new(&profcc_schema::regions::want_path(quiet.id())).exists());
}

/// `roi_sample` inside one execution (docs/regions.md, "Sampling inside an execution"), in
/// the ROI-only build at -O0 and -O2 (tests/fixtures/regions/calls.c): each region runs once.
/// With `roi_sample=99`, `flat`'s first 99 calls count exactly and each later call is
/// counted with probability 1/99, weighing 99, so its bytes are exactly
/// `(99 + 99 × sampled_calls)` steps' worth; `nested`'s calls of `pair` (each calling `half`
/// twice: its first 99 calls are 33 pairs) are `(33 + 99 × sampled_calls)` pairs' worth, the
/// halves counted inside a sampled pair and never sampled again; `few` (9 calls) is exact. The number sampled is binomial: 20,000
/// calls past the first give 201 on average (σ 14); the bounds are 7σ. Without sampling
/// every byte is counted.
/// The call-sampling tests' regions run once, making `CALLS` calls, at `roi_sample=CALL_N`:
/// past the first `CALL_N`, the calls sampled are binomial, 201 on average (σ 14);
/// `SAMPLED_CALLS` is 7σ either side.
const CALLS: u64 = 20_000;
const CALL_N: u64 = 99;
const SAMPLED_CALLS: std::ops::RangeInclusive<u64> = 100..=300;

#[test]
fn calls_inside_one_execution_are_sampled_without_bias() {
    const STEPS: u64 = CALLS;
    const N: u64 = CALL_N;
    let (read, written) = (1600u64, 800u64);
    let s = Scratch::new();
    let src = fixture("regions/calls.c");
    let src = src.to_str().unwrap();
    for level in ["-O0", "-O2"] {
        let exe = format!("calls{level}");
        let stats = roi_build(&s, &[level, "-g", src, "-o", &exe]);
        // Every clone gets the prologue: step (flat's), pair and half (nested's and few's).
        assert_eq!(
            stat_of(&stats, "roi-sampled-callees"),
            5,
            "{level}: {stats}"
        );
        let (out, p) = s.run_profiled(
            &exe,
            &[&STEPS.to_string()],
            &format!("summary=0:roi_sample={N}"),
        );
        assert!(out.status.success());
        let g = p.regions.as_ref().expect("a regions section");
        let row = |name: &str| {
            g.rows
                .iter()
                .find(|r| r.region == name)
                .unwrap_or_else(|| panic!("{level}: no {name} row: {:?}", g.rows))
        };
        let bytes = |r: &profcc_schema::regions::Row| {
            let c = r.counts.as_ref().unwrap();
            (c.bytes_read(), c.bytes_written())
        };
        // flat's first 99 calls are 99 steps; nested's are 33 pairs and their 66 halves.
        for (name, exact) in [("flat", N), ("nested", N / 3)] {
            let r = row(name);
            assert_eq!(r.executions, 1, "{level} {name}");
            let k = r.sampled_calls.expect("sampled_calls with roi_sample > 1");
            assert!(
                SAMPLED_CALLS.contains(&k),
                "{level} {name}: {k} calls sampled"
            );
            let stands = exact + N * k;
            assert_eq!(
                bytes(r),
                (read * stands, written * stands),
                "{level} {name}: {k} sampled calls"
            );
        }
        let few = row("few");
        assert_eq!(few.sampled_calls, Some(0), "{level}");
        assert_eq!(bytes(few), (3 * read, 3 * written), "{level}");
        // The report says how the calls were counted.
        let text = sh(Command::new(profcc())
            .args(["report"])
            .arg(s.path(&format!("{exe}.profile.json"))));
        let text = String::from_utf8_lossy(&text.stdout);
        assert!(
            text.contains("were counted one in 99 on average"),
            "{level}: {text}"
        );
        // Every call counted without sampling.
        let (_, p) = s.run_profiled(&exe, &[&STEPS.to_string()], "summary=0");
        let g = p.regions.as_ref().unwrap();
        for (name, calls) in [("flat", STEPS), ("nested", STEPS), ("few", 3)] {
            let r = g.rows.iter().find(|r| r.region == name).unwrap();
            assert_eq!(r.sampled_calls, None, "{level} {name}");
            assert_eq!(bytes(r), (read * calls, written * calls), "{level} {name}");
        }
    }
}

/// The ROI-only build keeps the program's own code (docs/regions.md, "The ROI-only build";
/// tests/fixtures/regions/own_code.c), at -O2: no `-fno-omit-frame-pointer`, so the
/// functions the region reaches keep clang-22's instructions exactly (their counted copies are
/// extra functions), where profcc's default build gives `twice` a frame pointer. The run
/// counts the region's 8000 bytes, and the allocation stack keeps one frame, the malloc's
/// own line in `make` (a frame-pointer walk through code without them could return someone's
/// data as frames), with the report's note saying so; the default build walks on to `main`.
/// The ROI-only build's report says its accesses were not counted, and why.
#[test]
fn roi_only_build_keeps_the_programs_own_code() {
    let s = Scratch::new();
    let src = fixture("regions/own_code.c");
    let src = src.to_str().unwrap();
    let include = root().join("include");
    let disassemble = |obj: &str, function: &str| {
        let out = sh(Command::new("objdump")
            .args(["-d", "--no-addresses", "--no-show-raw-insn"])
            .arg(s.path(obj)));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let head = format!("<{function}>:");
        let mut body: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with(&head))
            .take_while(|l| !l.is_empty())
            .collect();
        // The padding up to the next function's alignment is not the function's.
        while body.last().is_some_and(|l| {
            let l = l.trim_start();
            l.starts_with("nop")
                || l.starts_with("cs nop")
                || l.starts_with("data16")
                || l == "int3"
        }) {
            body.pop();
        }
        assert!(body.len() > 2, "{obj}: no {function}:\n{text}");
        body.join("\n")
    };
    let out = output_within(
        Command::new("clang-22")
            .args(["-O2", "-c", "-I"])
            .arg(&include)
            .args([src, "-o"])
            .arg(s.path("native.o")),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    s.compile_env(
        &profcc(),
        &["-O2", "-c", src, "-o", "roi.o"],
        &[("PROFCC_INSTRUMENT", "roi")],
    );
    s.compile(&profcc(), &["-O2", "-c", src, "-o", "default.o"]);
    for function in ["make", "sum", "twice"] {
        assert_eq!(
            disassemble("roi.o", function),
            disassemble("native.o", function),
            "{function}"
        );
    }
    let framed = disassemble("default.o", "twice");
    assert!(
        framed.contains("push   %rbp\n\tmov    %rsp,%rbp"),
        "{framed}"
    );
    // The run: exact bytes, one frame per allocation stack.
    let line = std::fs::read_to_string(src)
        .unwrap()
        .lines()
        .position(|l| l.contains("MARK_MALLOC"))
        .unwrap() as u32
        + 1;
    for (mode, frames) in [("roi", 1), ("sharing", 2)] {
        let exe = format!("own_code-{mode}");
        s.compile_env(
            &profcc(),
            &["-O2", "-g", src, "-o", &exe],
            &[("PROFCC_INSTRUMENT", mode)],
        );
        let (out, p) = s.run_profiled(&exe, &[], "summary=0");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "499500\n", "{mode}");
        let g = p.regions.as_ref().expect("a regions section");
        let c = g.rows[0].counts.as_ref().expect("counts");
        assert_eq!(
            (g.rows[0].region.as_str(), c.bytes_read()),
            ("twice", 8000),
            "{mode}"
        );
        let r = report(&s.path(&format!("{exe}.profile.json")), &["--top", "0"]);
        let site = r
            .alloc_sites
            .sites
            .iter()
            .find(|a| a.kind == "malloc" && a.bytes == 8000)
            .unwrap_or_else(|| panic!("{mode}: no 8000-byte malloc: {:#?}", r.alloc_sites));
        let own: Vec<_> = site
            .stack
            .iter()
            .filter(|f| f.file.as_deref().is_some_and(|x| x.ends_with("own_code.c")))
            .map(|f| (f.function.as_deref().unwrap_or(""), f.line))
            .collect();
        // The malloc's own line in `make`, then (with frame pointers) its caller.
        let names: Vec<&str> = own.iter().map(|f| f.0).collect();
        assert_eq!(
            names,
            ["make", "main"][..frames],
            "{mode}: {:#?}",
            site.stack
        );
        assert_eq!(own[0].1, Some(line), "{mode}: {:#?}", site.stack);
        let noted = r
            .notes
            .notes
            .iter()
            .any(|n| n.contains("allocation stacks have one frame"));
        assert_eq!(noted, mode == "roi", "{mode}: {:?}", r.notes.notes);
        // The ROI-only build counts no access, and the report says why instead of asking
        // whether the program was built with profcc.
        assert_eq!(r.access_sites.not_counted(), mode == "roi", "{mode}");
        let text = sh(Command::new(profcc())
            .arg("report")
            .arg(s.path(&format!("{exe}.profile.json"))));
        let text = String::from_utf8_lossy(&text.stdout);
        assert!(
            !text.contains("was the program built with profcc"),
            "{text}"
        );
        assert_eq!(
            text.contains("Access sites: not counted: the program was built with PROFCC_INSTRUMENT=roi or none"),
            mode == "roi",
            "{mode}: {text}"
        );
    }
}

/// An exception out of a sampled call ends the sample (docs/regions.md, "Sampling inside an
/// execution"), in the ROI-only C++ build at -O0 and -O2 (tests/fixtures/regions/cxx_calls.cpp):
/// every one of the region's 20,000 calls reads 1600 bytes, writes 804 and throws, caught
/// in the region. With `roi_sample=99` the first 99 calls count exactly and each later one
/// with probability 1/99 (201 on average, σ 14; the bounds are 7σ), so the bytes are exactly
/// `(99 + 99 × sampled_calls)` calls' worth. Before the sampled call was invoked, the first
/// sampled call's exception left the sample open: one call sampled, the rest counted in full.
#[test]
fn a_sampled_call_that_throws_ends_its_sample() {
    const STEPS: u64 = CALLS;
    const N: u64 = CALL_N;
    let (read, written) = (1600u64, 804u64);
    let s = Scratch::new();
    let src = fixture("regions/cxx_calls.cpp");
    let src = src.to_str().unwrap();
    for level in ["-O0", "-O2"] {
        let exe = format!("cxx_calls{level}");
        s.compile_env(
            &profcxx(),
            &[level, "-g", src, "-o", &exe],
            &[("PROFCC_INSTRUMENT", "roi")],
        );
        let row = |opts: &str| {
            let (out, p) = s.run_profiled(&exe, &[&STEPS.to_string()], opts);
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                format!("1.98 {STEPS}\n"),
                "{level} {opts}"
            );
            let g = p.regions.expect("a regions section");
            assert_eq!(g.rows.len(), 1, "{level} {opts}: {:?}", g.rows);
            let r = g.rows.into_iter().next().unwrap();
            assert_eq!((r.region.as_str(), r.executions), ("throws", 1), "{level}");
            let c = r.counts.as_ref().expect("counts");
            (r.sampled_calls, c.bytes_read(), c.bytes_written())
        };
        assert_eq!(
            row("summary=0"),
            (None, read * STEPS, written * STEPS),
            "{level}: every call counted"
        );
        let (k, r, w) = row(&format!("summary=0:roi_sample={N}"));
        let k = k.expect("sampled_calls with roi_sample > 1");
        assert!(SAMPLED_CALLS.contains(&k), "{level}: {k} calls sampled");
        let stands = N + N * k;
        assert_eq!(
            (r, w),
            (read * stands, written * stands),
            "{level}: {k} sampled"
        );
    }
}

/// Caliper's (`cali_begin_region`/`cali_end_region`) and PAPI's high-level markers
/// (`PAPI_hl_region_begin`/`_end`, whose result the program checks), declared by the program
/// with neither library linked, at -O0 and -O2: the program links, prints what it would, and
/// each region's triad reads 2 x 8 and writes 8 bytes per element, exactly.
#[test]
fn caliper_and_papi_markers_count_exact_bytes() {
    let s = Scratch::new();
    let src = fixture("regions/markers.c");
    let src = src.to_str().unwrap();
    for level in ["-O0", "-O2"] {
        let exe = format!("markers{level}");
        roi_build(&s, &[level, "-g", src, "-o", &exe]);
        let (out, p) = s.run_profiled(&exe, &[], "summary=0");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{level}: PAPI's markers return PAPI_OK"
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), "3 4001\n", "{level}");
        let rows = counts_of(&p);
        let names: Vec<_> = rows.iter().map(|r| (r.0.as_str(), r.1, r.2)).collect();
        assert_eq!(
            names,
            [("cali_triad", 0, 3), ("papi_triad", 0, 3)],
            "{level}: {rows:?}"
        );
        for r in &rows {
            // 3 executions x 4000 elements.
            assert_eq!(
                (r.3.bytes_read(), r.3.bytes_written()),
                (3 * 4000 * 16, 3 * 4000 * 8),
                "{level} {}: {:?}",
                r.0,
                r.3
            );
            assert_eq!(r.3.uncovered_calls, 0, "{level} {}", r.0);
        }
    }
}

/// A real program: sqlite3.c in one unit with its driver (bench/programs/sqlite_roi.c), a
/// region around the query loop, built at -O1 by clang-22, by profcc with the derived
/// placement and by profcc with a counter on every block. The region follows the calls into
/// sqlite (hundreds of clones); both profcc builds print what clang-22's does; the counts
/// derived from the spanning-tree counters equal the oracle's in every field, with fewer
/// increments; the B-tree's heap pages and sqlite's globals are read; the calls through
/// sqlite's method tables count as uncovered. Sampled by call (`roi_sample=100`: about 810
/// of the one execution's calls into counted functions are sampled), the output is the same
/// and the estimate is within a factor of 2 of the exact count (8 runs: 0.979 to 1.058).
#[test]
fn sqlite_query_loop_region_counts_equal_the_oracle() {
    let s = Scratch::new();
    let sqlite = crate_dir("libsqlite3-sys").join("sqlite3");
    let driver = root().join("bench/programs/sqlite_roi.c");
    let include = root().join("include");
    let common = |c: &mut Command| {
        c.current_dir(s.path(""))
            .args([
                "-O1",
                "-DSQLITE_OMIT_LOAD_EXTENSION",
                "-DSQLITE_THREADSAFE=0",
                "-I",
            ])
            .arg(&sqlite)
            .arg(&driver)
            .arg("-lm");
    };
    // The three builds side by side (about 30 s each on this machine).
    let stats = std::thread::scope(|scope| {
        let native = scope.spawn(|| {
            let mut c = Command::new("clang-22");
            common(&mut c);
            let out = output_within(c.arg("-I").arg(&include).args(["-o", "native"]));
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        });
        let oracle = scope.spawn(|| {
            let mut c = Command::new(profcc());
            common(&mut c);
            let out = output_within(
                c.args(["-o", "oracle"])
                    .env("PROFCC_INSTRUMENT", "roi-oracle"),
            );
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        });
        let mut c = Command::new(profcc());
        common(&mut c);
        let out = output_within(
            c.args(["-o", "derived"])
                .env("PROFCC_INSTRUMENT", "roi")
                .env("PROFCC_STATS", "1"),
        );
        let stats = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stats}");
        native.join().unwrap();
        oracle.join().unwrap();
        stats
    });
    assert!(
        stat_of(&stats, "roi-clones") >= 500,
        "the region follows the calls into sqlite: {stats}"
    );
    // The table keeps each distinct mix once (the runtime expands it at start).
    assert!(
        stat_of(&stats, "roi-mixes") * 4 < stat_of(&stats, "roi-blocks"),
        "{stats}"
    );
    let args = ["2000", "20000"];
    let native = s.run_plain("native", &args);
    assert!(native.status.success());
    let mut runs = Vec::new();
    for exe in ["derived", "oracle"] {
        let (out, p) = s.run_profiled(exe, &args, "summary=0");
        assert_same_run(exe, &native, &out);
        let mut rows = counts_of(&p);
        assert_eq!(rows.len(), 1, "{exe}: {rows:?}");
        runs.push(rows.remove(0));
    }
    let (derived, oracle) = (&runs[0], &runs[1]);
    assert_eq!(
        (derived.0.as_str(), derived.1, derived.2),
        ("query_loop", 0, 1)
    );
    let (d, o) = (derived.3.counter_increments, oracle.3.counter_increments);
    assert!(
        d > 0 && d * 10 < o * 7,
        "derived placement {d} counter increments, oracle {o}"
    );
    assert_derived_equals_oracle(&runs[..1], &runs[1..], "sqlite");
    let c = &derived.3;
    use profcc_abi::roi::Space;
    let (heap, global) = (Space::Heap as usize, Space::Global as usize);
    assert!(
        c.load_bytes[heap] > 1_000_000 && c.load_bytes[global] > 0,
        "heap and global bytes read: {c:?}"
    );
    assert!(
        c.bytes_written() > 0 && c.bytes_written() < c.bytes_read(),
        "{c:?}"
    );
    assert!(
        c.uncovered_calls > 0 && c.uncovered_calls < c.calls,
        "calls through sqlite's method tables are uncovered: {c:?}"
    );
    // Sampled by call: the same output, the one execution exact, the bytes scaled back.
    let (out, p) = s.run_profiled("derived", &args, "summary=0:roi_sample=100");
    assert_same_run("derived, roi_sample=100", &native, &out);
    let g = p.regions.as_ref().unwrap();
    let r = &g.rows[0];
    assert_eq!(r.executions, 1);
    let k = r.sampled_calls.unwrap();
    assert!((400..1600).contains(&k), "{k} calls sampled");
    let ratio = r.counts.as_ref().unwrap().bytes_read() as f64 / c.bytes_read() as f64;
    assert!(
        (0.5..2.0).contains(&ratio),
        "bytes read, sampled over exact: {ratio:.3} ({k} calls sampled)"
    );
}

/// Regions in C++ at -O0 and -O2 (tests/fixtures/regions/cxx.cpp): markers where an exception
/// may unwind (profcc's, declared nothrow, and LIKWID's, declared without it: clang makes
/// those `invoke`s) and a kernel called inside a `try` (an `invoke`, followed into its clone
/// like a call). The output equals clang++-22's; the derived counts equal the oracle's; the
/// region whose calls never throw reads exactly 8000 bytes per execution; the one whose
/// fourth call throws counts its four sums and the throwing path, with the exception's own
/// calls (into libstdc++) uncovered.
#[test]
fn cxx_regions_with_exceptions_count_their_calls() {
    let s = Scratch::new();
    let src = fixture("regions/cxx.cpp");
    let src = src.to_str().unwrap();
    let include = root().join("include");
    // No LIKWID here: the native build gets markers that do nothing, as liblikwid's do
    // without LIKWID_PERFMON.
    let stubs = s.write(
        "likwid.c",
        "int likwid_markerStartRegion(const char *t) { return 0; }\n\
         int likwid_markerStopRegion(const char *t) { return 0; }\n",
    );
    let out = output_within(
        Command::new("clang++-22")
            .args(["-O2", "-I"])
            .arg(&include)
            .args([src, "-x", "c"])
            .arg(&stubs)
            .arg("-o")
            .arg(s.path("native")),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let native = s.run_plain("native", &[]);
    for level in ["-O0", "-O2"] {
        let mut modes = Vec::new();
        for mode in ["roi", "roi-oracle"] {
            let exe = format!("cxx{level}-{mode}");
            s.compile_env(
                &profcxx(),
                &[level, "-g", src, "-o", &exe],
                &[("PROFCC_INSTRUMENT", mode)],
            );
            let (out, p) = s.run_profiled(&exe, &[], "summary=0");
            assert_same_run(&exe, &native, &out);
            modes.push(counts_of(&p));
        }
        assert_derived_equals_oracle(&modes[0], &modes[1], level);
        let rows = &modes[0];
        let names: Vec<_> = rows.iter().map(|r| (r.0.as_str(), r.1, r.2)).collect();
        assert_eq!(
            names,
            [("cxx_likwid", 0, 5), ("cxx_profcc", 0, 5)],
            "{level}"
        );
        let likwid = &rows[0].3;
        assert_eq!(
            (
                likwid.bytes_read(),
                likwid.bytes_written(),
                likwid.uncovered_calls
            ),
            (5 * 8000, 0, 0),
            "{level}: {likwid:?}"
        );
        let profcc = &rows[1].3;
        assert!(
            profcc.bytes_read() >= 4 * 8000 && profcc.uncovered_calls > 0,
            "{level}: {profcc:?}"
        );
    }
}

/// Against the machine's bandwidth (docs/regions.md): with `profcc calibrate`'s cache holding
/// this machine's bandwidth (1 thread 10 GB/s, 2 threads 16 GB/s: `CALIBRATED_BANDWIDTH`), the
/// program keeps it in its profile, and the report gives each thread's row its GB/s over 10
/// and each region's threads together (bytes over the longest thread's time) their GB/s over
/// 16, in the JSON, the text and both CSV tables; without a calibration every share is absent
/// and the text says once that the bandwidth was not measured.
#[test]
fn region_bandwidth_is_a_share_of_the_calibrated_machine() {
    let s = Scratch::new();
    let src = fixture("regions/parallel.c");
    s.compile_env(
        &profcc(),
        &[
            "-O2",
            "-g",
            "-fopenmp",
            "-pthread",
            src.to_str().unwrap(),
            "-o",
            "parallel",
        ],
        &[("PROFCC_INSTRUMENT", "roi")],
    );
    let cache = tempfile::tempdir().unwrap();
    write_calibration(&cache.path().join("profcc/calibration.json"));
    let (out, p) = s.run_profiled_env(
        "parallel",
        &[],
        "summary=0",
        &[("XDG_CACHE_HOME", cache.path().as_os_str())],
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "4 4002\n");
    let g = p.regions.as_ref().unwrap();
    assert_eq!(g.machine_bandwidth, Some(CALIBRATED_BANDWIDTH));
    let profile = s.path("parallel.profile.json");
    let r = report(&profile, &[]).regions.unwrap();
    assert_eq!(r.machine_bandwidth, vec![Some(CALIBRATED_BANDWIDTH)]);
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs();
    // Each pthread: 3 x 2000 elements, 16 bytes read and 8 written each, in its own time.
    let threads: Vec<_> = r
        .rows
        .iter()
        .filter(|x| x.region == "pthread_triad")
        .collect();
    assert_eq!(threads.len(), 2, "{:?}", r.rows);
    for t in &threads {
        assert_eq!(t.counts.as_ref().unwrap().bytes_moved(), 144_000);
        let gbps = 144_000.0 / t.seconds / 1e9;
        assert!(close(t.gbytes_per_s.unwrap(), gbps), "{t:?}");
        assert!(close(t.machine_share.unwrap(), gbps / 10.0), "{t:?}");
    }
    let longest = threads.iter().map(|t| t.seconds).fold(0.0, f64::max);
    let total = r
        .totals
        .iter()
        .find(|x| x.region == "pthread_triad")
        .unwrap();
    assert_eq!((total.threads, total.bytes), (2, Some(288_000)));
    assert_eq!(total.seconds, longest);
    let all = 288_000.0 / longest / 1e9;
    assert!(close(total.machine_share.unwrap(), all / 16.0), "{total:?}");
    // The OpenMP loop: the master's row has the time, the worker's its share of the bytes.
    let omp = r.totals.iter().find(|x| x.region == "omp_triad").unwrap();
    assert_eq!((omp.threads, omp.bytes), (2, Some(2 * (96_012 + 48_000))));

    // The text: the figures, each row's and total's percentage.
    let text =
        String::from_utf8(sh(Command::new(profcc()).arg("report").arg(&profile)).stdout).unwrap();
    assert!(
        text.contains("machine bandwidth (profcc calibrate, STREAM): 1 thread 10.00 GB/s, 2 threads 16.00 GB/s"),
        "{text}"
    );
    assert!(!text.contains("machine bandwidth not measured"), "{text}");
    let pct = |x: f64| format!("{:.1}%", 100.0 * x);
    let total_line = text
        .lines()
        .skip_while(|l| !l.contains("all threads (bytes over the longest thread's time)"))
        .find(|l| l.trim_start().starts_with("pthread_triad"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        total_line.ends_with(&pct(total.machine_share.unwrap())),
        "{total_line}"
    );
    // The CSV tables.
    let csv = s.path("csv");
    sh(Command::new(profcc())
        .args(["report", "--csv"])
        .arg(&csv)
        .arg(&profile));
    let table = |file: &str| -> Vec<Vec<String>> {
        std::fs::read_to_string(csv.join(file))
            .unwrap()
            .lines()
            .map(|l| l.split(',').map(str::to_string).collect())
            .collect()
    };
    let totals = table("region_totals.csv");
    let col = |t: &[Vec<String>], name: &str| t[0].iter().position(|c| c == name).unwrap();
    let row = totals.iter().find(|x| x[1] == "pthread_triad").unwrap();
    assert_eq!(row[col(&totals, "bytes")], "288000");
    let share: f64 = row[col(&totals, "machine_share")].parse().unwrap();
    assert!(
        (share - total.machine_share.unwrap()).abs() < 1e-6,
        "{row:?}"
    );
    let per = table("regions.csv");
    for x in per.iter().filter(|x| x[1] == "pthread_triad") {
        let gbps: f64 = x[col(&per, "gbytes_per_s")].parse().unwrap();
        let share: f64 = x[col(&per, "machine_share")].parse().unwrap();
        assert!((share - gbps / 10.0).abs() < 1e-3, "{x:?}");
    }

    // Without a calibration: no share anywhere, one line saying so.
    let empty = tempfile::tempdir().unwrap();
    s.run_profiled_env(
        "parallel",
        &[],
        "summary=0",
        &[("XDG_CACHE_HOME", empty.path().as_os_str())],
    );
    let r = report(&profile, &[]).regions.unwrap();
    assert_eq!(r.machine_bandwidth, vec![None]);
    assert!(r.rows.iter().all(|x| x.machine_share.is_none()));
    assert!(r.totals.iter().all(|x| x.machine_share.is_none()));
    let text =
        String::from_utf8(sh(Command::new(profcc()).arg("report").arg(&profile)).stdout).unwrap();
    assert_eq!(
        text.matches("machine bandwidth not measured: run profcc calibrate")
            .count(),
        1,
        "{text}"
    );
    assert!(!text.contains("machine bandwidth (profcc"), "{text}");
}
