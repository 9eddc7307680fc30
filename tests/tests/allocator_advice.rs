//! Issue 43's switching advice against native runs: a timing test in a binary of its own, so
//! cargo runs it alone (the other allocator tests, run beside it on 2 cores, moved its own
//! reference costs and its profiled runs apart: glibc's check read 0.65x in CI).

use profcc_report::model::Report;
use profcc_tests::*;
use std::path::Path;
use std::process::Command;

/// Issue 43's known answer: two churn programs built without access checks, run under
/// glibc, jemalloc, mimalloc and tcmalloc with `alloc_sample`: the larson-like one
/// (tests/fixtures/alloc/larson_like.c: two threads, windows of live 16-512-byte blocks, one
/// in 16 freed by the other thread) and a big-block one (tests/fixtures/alloc/big_churn.c:
/// windows of 16 blocks of 8 KiB-1 MiB, one in 4 freed by the other thread). The reference
/// costs are this machine's, measured first as a user would (`profcc detect-allocator
/// --bench` for each allocator, into the test's cache, as many times as the cache keeps).
/// Natively (`LD_PRELOAD`, the median of several runs, each allocator in turn so a load on the
/// machine falls on all of them), for the larson-like program: wherever two allocators differ
/// by more than `NATIVE_GAP`, the report's advice and each prediction it lists towards an
/// allocator whose own reference costs describe the program (its own run's check agrees)
/// point the way the native runs do, and no advice names an allocator that is slower
/// natively; under glibc, natively the slowest (about 2.5x), the report
/// advises a switch, or says in one line that glibc's own reference costs do not describe
/// the run (its time here is mostly lock waits that move from run to run). The big-block churn's directions are printed, not asserted (see
/// `PROGRAMS`). A report that gives no advice says why in one line. Each allocator's profile is the median of
/// `PROFILED_RUNS` by allocator time (a load on the machine moves one run's timing). Also: the
/// allocator's time is at most the threads' CPU time and its share is of it. The table it
/// prints: `cargo test --release -p profcc-tests --test allocator_advice --
/// --nocapture`.
#[test]
fn switching_advice_points_the_way_the_native_runs_do() {
    /// Native times closer than this (either way) are no direction; nor is a predicted
    /// change of less than `NATIVE_GAP - 1` of the allocator's measured time.
    const NATIVE_GAP: f64 = 1.10;
    const NATIVE_RUNS: usize = 5;
    const PROFILED_RUNS: usize = 3;
    /// Fixture, rounds per thread, and whether the directions are asserted (the larson-like
    /// program: and glibc must be advised to switch). The larson-like program runs 0.09-0.27 s
    /// natively: at 0.02-0.05 s (1.5M rounds) start-up and noise outweighed the allocators'
    /// differences, and the test failed in two of seven runs (docs/allocators.md). The big-block churn's are printed, not
    /// asserted: `--bench`'s one-octave rows do not describe a page heap's cost over a mix of
    /// seven octaves (tcmalloc's own reference costs price it at a fifth of its measured
    /// time), so advice from another allocator's agreeing check can point to tcmalloc when it
    /// is slower natively (docs/allocators.md, "When it advises").
    const PROGRAMS: [(&str, &str, bool); 2] = [
        ("alloc/larson_like.c", "7500000", true),
        ("alloc/big_churn.c", "100000", false),
    ];
    let s = Scratch::new();
    let wanted = ["glibc", "jemalloc", "mimalloc", "tcmalloc"];
    let allocs: Vec<(String, Option<String>)> = installed_allocators()
        .into_iter()
        .filter(|(n, ..)| wanted.contains(&n.as_str()))
        .map(|(n, p, _)| (n, p))
        .collect();
    // This machine's reference costs, in the cache the test's reports read: as many
    // measurements as the cache keeps, the allocators in turn (each cell's median prices).
    for _ in 0..profcc_allocator_probe::COSTS_KEPT {
        for (name, preload) in &allocs {
            let mut cmd = Command::new(profcc());
            cmd.env("XDG_CACHE_HOME", probe_cache_home())
                .args(["detect-allocator", "--bench", "-o"])
                .arg(s.path(&format!("{name}.toml")));
            if let Some(p) = preload {
                cmd.arg("--preload").arg(p);
            }
            sh(&mut cmd);
        }
    }
    let mut table = Vec::new();
    let mut wrong = Vec::new();
    let mut unasserted = Vec::new();
    for (fixture_name, rounds, asserted) in PROGRAMS {
        let stem = Path::new(fixture_name)
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let src = fixture(fixture_name);
        let src = src.to_str().unwrap();
        let native_exe = format!("{stem}-native");
        let prof_exe = format!("{stem}-prof");
        sh(Command::new("clang-22")
            .args(["-O2", "-g", src, "-o"])
            .arg(s.path(&native_exe))
            .arg("-lpthread"));
        s.compile_env(
            &profcc(),
            &["-O2", "-g", src, "-o", &prof_exe, "-lpthread"],
            &[("PROFCC_INSTRUMENT", "none")],
        );
        let run = |exe: &str, preload: &Option<String>, options: Option<&str>| -> f64 {
            let mut cmd = Command::new(s.path(exe));
            cmd.arg(rounds);
            if let Some(p) = preload {
                cmd.env("LD_PRELOAD", p);
            }
            if let Some(o) = options {
                cmd.env("PROFCC_OPTIONS", o);
            }
            let t = std::time::Instant::now();
            let out = output_within(&mut cmd);
            let secs = t.elapsed().as_secs_f64();
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                "ok\n",
                "{exe} {preload:?}"
            );
            secs
        };
        let mut native: Vec<Vec<f64>> = vec![Vec::new(); allocs.len()];
        for _ in 0..NATIVE_RUNS {
            for (k, (_, preload)) in allocs.iter().enumerate() {
                native[k].push(run(&native_exe, preload, None));
            }
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let native: Vec<f64> = native.iter_mut().map(median).collect();
        let native_of = |label: &str| -> Option<f64> {
            let name = label.split_whitespace().next()?;
            allocs
                .iter()
                .position(|(n, _)| n == name)
                .map(|k| native[k])
        };
        // Does switching from `from` to `to` go the way the native runs do? None: no
        // direction (within NATIVE_GAP, or not measured natively).
        let faster = |from: f64, to: f64| -> Option<bool> {
            if to * NATIVE_GAP < from {
                Some(true)
            } else if from * NATIVE_GAP < to {
                Some(false)
            } else {
                None
            }
        };
        // The profiled runs, allocators in turn; each allocator's median by allocator time.
        let mut reports: Vec<Vec<Report>> = (0..allocs.len()).map(|_| Vec::new()).collect();
        for n in 0..PROFILED_RUNS {
            for (k, (name, preload)) in allocs.iter().enumerate() {
                let profile = s.path(&format!("{stem}-{name}-{n}.json"));
                run(
                    &prof_exe,
                    preload,
                    Some(&format!(
                        "out={}:summary=0:alloc_sample=524288",
                        profile.display()
                    )),
                );
                reports[k].push(report(&profile, &["--top", "0"]));
            }
        }
        // Each allocator's run of median allocator time.
        let medians: Vec<Report> = reports
            .iter_mut()
            .map(|rs| {
                rs.sort_by(|a, b| {
                    allocator_input(a)
                        .total_ns
                        .total_cmp(&allocator_input(b).total_ns)
                });
                rs.swap_remove(rs.len() / 2)
            })
            .collect();
        // Whose reference costs describe this program: its own run's check agrees with its
        // measured time (`reference_agrees`). A prediction prices the operations at the
        // alternative's reference costs, and only the in-use allocator's are checked
        // (docs/allocators.md, "When it advises"): a prediction towards an allocator whose
        // own run said its costs do not describe the program is printed, not asserted (in
        // CI, tcmalloc's priced its larson-like run at 4.59x its measured time, and
        // jemalloc's report predicted tcmalloc 118 ms slower where it ran 19% faster).
        let describes: Vec<bool> = medians
            .iter()
            .map(|r| {
                let i = allocator_input(r);
                i.self_check_ns
                    .is_some_and(|c| profcc_analysis::allocator::reference_agrees(c, i.total_ns))
            })
            .collect();
        // An allocator whose reference costs do not describe the larson-like program: its
        // cached reference rows of that program's sizes, each measurement's, printed for the
        // record (CI's log could not say why tcmalloc's priced its run at 4.59x; here
        // jemalloc's `malloc 16 reused parallel` was 16.3, 2.6 and 1.3 ns in three
        // measurements seconds apart).
        let cache = profcc_allocator_probe::costs_file(Some(probe_cache_home().as_os_str()), None)
            .and_then(|f| std::fs::read_to_string(f).ok())
            .unwrap_or_default();
        let cached = profcc_allocator_probe::costs_in(&cache);
        for (k, (name, _)) in allocs.iter().enumerate() {
            if describes[k] || !asserted {
                continue;
            }
            for c in cached.iter().filter(|c| &c.allocator == name) {
                let rows: Vec<String> = c
                    .bench
                    .iter()
                    .filter(|r| r.reuse == "reused" && r.size <= 512)
                    .map(|r| format!("{} {} {} {:.1} ns", r.op, r.size, r.phase, r.ns))
                    .collect();
                eprintln!(
                    "{stem}: {name}'s reference rows (measured at {}): {}",
                    c.measured_at,
                    rows.join(", ")
                );
            }
        }
        let described_of = |label: &str| -> bool {
            let name = label.split_whitespace().next().unwrap_or_default();
            allocs
                .iter()
                .position(|(n, _)| n == name)
                .is_some_and(|k| describes[k])
        };
        for (k, (name, _)) in allocs.iter().enumerate() {
            let i = allocator_input(&medians[k]);
            // Possible time: at most the threads' CPU time, and said to be a share of it.
            let cpu = i.cpu_ns.expect("the profile keeps the CPU time") as f64;
            assert!(i.total_ns <= cpu, "{stem} {name}: {} > {cpu}", i.total_ns);
            assert_eq!(i.share_of, "the threads' CPU time", "{stem} {name}");
            assert!(
                i.bracket_ns > 0.0,
                "{stem} {name}: the empty bracket was measured"
            );
            assert!(
                i.costs.starts_with("this machine's") && i.costs.contains(name.as_str()),
                "{stem} {name}: {}",
                i.costs
            );
            let mut said = Vec::new();
            let mut against = Vec::new();
            for p in &i.predictions {
                if let Some(to) = native_of(&p.allocator) {
                    // A predicted change smaller than the same share of the threads' CPU
                    // time is no direction either: the native gap is of whole runs, and the
                    // prediction prices the allocator's calls only (a 5% saving was 13% the
                    // other way natively once; the report advises from 10% of the CPU time).
                    let predicted =
                        (p.change_ns.abs() > (NATIVE_GAP - 1.0) * cpu).then_some(p.change_ns < 0.0);
                    if let (Some(way), Some(said)) = (faster(native[k], to), predicted) {
                        if way != said {
                            let line = format!(
                                "{stem} under {name} ({:.3} s): {} {:+.1} ms, natively {to:.3} s",
                                native[k],
                                p.allocator,
                                p.change_ns / 1e6
                            );
                            if described_of(&p.allocator) {
                                against.push(line);
                            } else {
                                unasserted.push(format!(
                                    "{line} ({}'s own reference costs do not describe this program)",
                                    p.allocator
                                ));
                            }
                        }
                    }
                }
                said.push(format!("{} {:+.0} ms", p.allocator, p.change_ns / 1e6));
            }
            match &i.advice {
                Some(a) => {
                    let to = a
                        .strip_prefix("try ")
                        .and_then(native_of)
                        .unwrap_or_else(|| {
                            panic!("{stem} {name}: advice names no known allocator: {a}")
                        });
                    if faster(native[k], to) == Some(false) {
                        against.push(format!(
                            "{stem} under {name} ({:.3} s): advice {a}, natively {to:.3} s",
                            native[k]
                        ));
                    }
                }
                None => {
                    // No advice: the predictions say none saves enough, or one line says why.
                    if let Some(why) = &i.no_advice {
                        assert!(
                            why.starts_with("no switching advice: ") && !why.contains('\n'),
                            "{stem} {name}: {why}"
                        );
                        assert!(i.predictions.is_empty(), "{stem} {name}");
                    }
                }
            }
            if asserted {
                wrong.append(&mut against);
            } else {
                unasserted.append(&mut against);
            }
            if name == "glibc" && asserted {
                // The slowest natively, by more than NATIVE_GAP: a switch must be advised, to
                // an allocator faster natively (checked above), unless the report says in
                // its line that glibc's own reference costs do not describe this run. That
                // happens on this 2-vCPU VM: glibc's time on this program is mostly its arena
                // lock under the two threads' remote frees, and moved 148-375 ms between
                // quiet runs of the same program (its reference 93-208 ms).
                assert!(
                    allocs
                        .iter()
                        .enumerate()
                        .all(|(o, _)| o == k || faster(native[k], native[o]) == Some(true)),
                    "{stem}: glibc ({:.3} s) is not the slowest natively by {NATIVE_GAP}x: {native:?}",
                    native[k]
                );
                let declined = i.no_advice.as_deref().is_some_and(|w| {
                    w.starts_with("no switching advice: glibc's own reference costs give")
                });
                assert!(
                    i.advice.is_some() || declined,
                    "{stem}: no advice under glibc ({:.3} s natively, the slowest): {:?}; reference check {:?} ms, measured {:.1} ms",
                    native[k],
                    i.no_advice,
                    i.self_check_ns.map(|c| c / 1e6),
                    i.total_ns / 1e6
                );
                if declined {
                    eprintln!(
                        "{stem}: no advice under glibc this run: {}",
                        i.no_advice.as_deref().unwrap_or_default()
                    );
                }
            }
            let advice = i
                .advice
                .as_deref()
                .map(|a| a.split(':').next().unwrap_or(a).to_string())
                .or(i
                    .no_advice
                    .as_deref()
                    .map(|w| w.split(" (more than").next().unwrap_or(w).to_string()))
                .unwrap_or_else(|| "none (no saving worth advising)".into());
            table.push(format!(
                "| {stem} | {name} | {:.3} | {:.1} ms of {:.1} ms CPU | {} | {advice}{}{} |",
                native[k],
                i.total_ns / 1e6,
                cpu / 1e6,
                i.self_check_ns
                    .map_or("-".into(), |c| format!("{:.1} ms", c / 1e6)),
                if said.is_empty() { "" } else { "; " },
                said.join(", ")
            ));
        }
    }
    eprintln!(
        "| program | allocator | native s (median of {NATIVE_RUNS}) | allocator time (median of {PROFILED_RUNS} runs) | own reference | advice; predictions |\n|---|---|---|---|---|---|\n{}",
        table.join("\n")
    );
    if !unasserted.is_empty() {
        eprintln!(
            "against the native direction, not asserted:\n{}",
            unasserted.join("\n")
        );
    }
    assert!(
        wrong.is_empty(),
        "switches against the native direction:\n{}",
        wrong.join("\n")
    );
}
