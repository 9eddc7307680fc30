//! Unit tests of the cache-line sharing section: synthetic sharing records, resolved against a
//! real binary compiled here with clang-22 (globals by symbol and DWARF field, heap objects by
//! allocation stack).

use super::merge::Input;
use super::sections::Options;
use super::tests::{compile, json_of, profile, site, symbol, text_of};

/// Report options that list every finding (`--min-speedup 0`): these tests are about what
/// findings say, not about which pass the listing threshold.
fn all() -> Options {
    Options {
        min_speedup: 0.0,
        ..Options::default()
    }
}
use profcc_schema::sharing::{
    ByteUse, Latency, LineLatency, LineRecord, LineSite, ObjectKind, ObjectRef, Settings, Sharing,
    ThreadTime,
};
use profcc_schema::{AccessKind, Module, Profile, Stack};
use serde_json::Value;
use std::path::Path;

fn byte(
    offset: u32,
    size: u32,
    reads: u64,
    writes: u64,
    readers: &[u32],
    writers: &[u32],
) -> ByteUse {
    ByteUse {
        offset,
        size,
        reads,
        writes,
        readers: readers.to_vec(),
        writers: writers.to_vec(),
        cross_reads: if readers.iter().any(|t| !writers.contains(t)) {
            reads
        } else {
            0
        },
        ..Default::default()
    }
}

fn line(
    addr: u64,
    invalidations: u64,
    bytes: Vec<ByteUse>,
    sites: &[(u32, u64, u64)],
    objects: Vec<ObjectRef>,
) -> LineRecord {
    LineRecord {
        addr,
        invalidations,
        contended: invalidations > 0,
        volume_samples: 4,
        bytes,
        sites: sites
            .iter()
            .map(|&(site, reads, writes)| LineSite {
                site,
                reads,
                writes,
            })
            .collect(),
        objects,
        // 100 timed read-modify-writes, 50 ns each beyond a hit.
        latency: LineLatency {
            rmw: Latency {
                samples: 100,
                misses: 100,
                extra_ns: 5000,
            },
            ..LineLatency::default()
        },
    }
}

/// Thread `id` ran for the whole second of the run, on one CPU.
fn busy_thread(id: u32) -> ThreadTime {
    ThreadTime {
        id,
        start_ns: 0,
        end_ns: 1_000_000_000,
        cpu_ns: 1_000_000_000,
        cpus: vec![id % 2],
        accesses: 0,
        wait_ns: None,
    }
}

fn heap(start: u64, size: u64, stack: u32, kind: &str, thread: u32) -> ObjectRef {
    ObjectRef {
        kind: ObjectKind::Heap,
        start,
        size,
        alloc_stack: Some(stack),
        alloc_thread: Some(thread),
        alloc_kind: Some(kind.into()),
        stack_thread: None,
    }
}

/// What the runtime says about a line that is neither heap nor stack: the line itself.
fn static_line(addr: u64) -> ObjectRef {
    ObjectRef {
        kind: ObjectKind::Static,
        start: addr,
        size: 64,
        ..Default::default()
    }
}

fn sharing(lines: Vec<LineRecord>) -> Sharing {
    Sharing {
        // Explicit: the defaults may change; the assertions below count on these.
        settings: Settings {
            threshold: 16,
            sample: 1,
            invalidation_ns: 60,
            ..Settings::default()
        },
        parallel_ns: 1_000_000_000,
        lines,
        dropped_lines: 0,
        threads: (0..4).map(busy_thread).collect(),
        machine: None,
    }
}

const SRC: &str = "#include <stdlib.h>
struct worker { long count; long pad; };
__attribute__((aligned(64))) long counters[8];
__attribute__((aligned(64))) struct worker workers[4];
__attribute__((aligned(64))) struct { int a; int b; } s;
__attribute__((noinline)) void *make(void) { return calloc(32, 8); }
__attribute__((noinline)) void *make2(void) { return malloc(24); }
__attribute__((aligned(64))) long grid[4][2];
__attribute__((aligned(64))) long ga = 1;
long gb = 2;
int main(void) { counters[1] = 1; workers[1].pad = 2; s.b = 3; grid[1][1] = 4; ga++; gb++; return make() == make2(); }
";

const BASE: u64 = 0x5600_0000_0000;

/// A profile of the compiled program loaded at `BASE`: sites 0 (`/src/fs.c:30` in `worker`,
/// a write) and 1 (`/src/fs.c:41` in C++ `worker(void*)`, a write), allocation stacks 4
/// (in `make`, sh.c:6) and 5 (in `make2`, sh.c:7).
fn program(dir: &Path) -> (Profile, impl Fn(&str) -> u64) {
    let exe = compile(dir, "sh.c", SRC, &["-O0"]);
    let (_, _, range) = symbol(&exe, "main");
    let mut p = profile(
        7,
        vec![
            site(
                "/src/fs.c",
                30,
                5,
                "worker",
                AccessKind::Write,
                8,
                10_000,
                4,
            ),
            site(
                "/src/fs.c",
                41,
                3,
                "_Z6workerPv",
                AccessKind::Write,
                8,
                500,
                2,
            ),
        ],
    );
    p.exe = exe.display().to_string();
    p.modules = vec![Module {
        path: exe.display().to_string(),
        base: BASE,
        start: BASE + range.0,
        end: BASE + range.1,
    }];
    p.stacks = vec![
        Stack {
            id: 4,
            frames: vec![BASE + symbol(&exe, "make").0 + 2],
        },
        Stack {
            id: 5,
            frames: vec![BASE + symbol(&exe, "make2").0 + 2],
        },
    ];
    let exe2 = exe.clone();
    (p, move |name: &str| BASE + symbol(&exe2, name).0)
}

fn findings(j: &Value) -> &Vec<Value> {
    j["sharing"]["findings"]
        .as_array()
        .expect("sharing.findings")
}

#[test]
fn globals_are_named_by_symbol_and_fields_by_dwarf() {
    let dir = tempfile::tempdir().unwrap();
    let (mut p, addr) = program(dir.path());
    let (counters, workers, s, grid, ga, gb) = (
        addr("counters"),
        addr("workers"),
        addr("s"),
        addr("grid"),
        addr("ga"),
        addr("gb"),
    );
    assert_eq!(gb / 64, ga / 64, "ga and gb share a line");
    let w = |o: u32, t: u32| byte(o, 8, 0, 5000, &[], &[t]);
    p.sharing = Some(sharing(vec![
        line(
            counters,
            100_000,
            vec![w(0, 1), w(8, 2)],
            &[(0, 0, 10_000)],
            vec![static_line(counters)],
        ),
        line(
            workers,
            50_000,
            vec![w(16, 1), w(40, 2)],
            &[(0, 0, 10_000)],
            vec![static_line(workers)],
        ),
        line(
            s,
            40_000,
            vec![
                byte(0, 4, 0, 5000, &[], &[1]),
                byte(4, 4, 0, 5000, &[], &[2]),
            ],
            &[(0, 0, 10_000)],
            vec![static_line(s)],
        ),
        line(
            grid,
            30_000,
            vec![w(0, 1), w(24, 2)],
            &[],
            vec![static_line(grid)],
        ),
        line(
            ga,
            20_000,
            vec![w(0, 1), w((gb - ga) as u32, 2)],
            &[],
            vec![static_line(ga)],
        ),
    ]));
    p.sharing.as_mut().unwrap().lines.sort_by_key(|l| l.addr);
    let j = json_of(vec![Input::new("a.json", p.clone(), None)], &all());
    let f = findings(&j);
    assert_eq!(f.len(), 5, "{}", j["sharing"]);
    assert_eq!(j["notes"]["warnings"], serde_json::json!([]));

    let c = &f[0];
    assert_eq!(c["kind"], "false_sharing");
    assert_eq!(c["kind_text"], "false sharing");
    assert_eq!(c["invalidations"], 100_000);
    assert_eq!(c["objects"].as_array().unwrap().len(), 1);
    let o = &c["objects"][0];
    assert_eq!(
        (o["kind"].as_str(), o["name"].as_str()),
        (Some("global"), Some("counters"))
    );
    assert_eq!(
        (o["start"].as_u64(), o["size"].as_u64()),
        (Some(counters), Some(64))
    );
    assert_eq!(c["words"][0]["field"], "counters[0]");
    assert_eq!(c["words"][1]["field"], "counters[1]");
    assert_eq!(c["words"][1]["object"], 0);
    assert_eq!(c["words"][1]["object_offset"], 8);
    assert_eq!(c["words"][1]["writers"], serde_json::json!([2]));
    let pl = &c["places"][0];
    assert_eq!(
        (
            pl["file"].as_str(),
            pl["line"].as_u64(),
            pl["function"].as_str(),
            pl["writes"].as_u64()
        ),
        (Some("/src/fs.c"), Some(30), Some("worker"), Some(10_000))
    );
    assert_eq!(c["stride"], 8);
    assert!(
        c["fix"]
            .as_str()
            .unwrap()
            .starts_with("`counters`: threads write neighbouring elements 8 bytes apart"),
        "{}",
        c["fix"]
    );

    let fields = |k: usize| -> Vec<String> {
        f[k]["words"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["field"].as_str().unwrap_or("null").to_string())
            .collect()
    };
    assert_eq!(fields(1), ["workers[1].count", "workers[2].pad"]);
    assert_eq!(fields(2), ["s.a", "s.b"]);
    assert_eq!(fields(3), ["grid[0][0]", "grid[1][1]"]);
    // Two globals on one line: two objects, each named, each scalar word its variable.
    assert_eq!(fields(4), ["ga", "gb"]);
    let names: Vec<&str> = f[4]["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ga", "gb"]);
    assert_eq!(f[4]["words"][1]["object"], 1);
    assert_eq!(f[4]["words"][1]["object_offset"], 0);
    assert_eq!(f[4]["objects"][1]["size"], 8);

    let t = text_of(vec![Input::new("a.json", p, None)], &all());
    let sec = &t[t.find("Cache-line sharing").expect("section text")..];
    assert!(sec.starts_with("Cache-line sharing (model: each thread its own core; gains predicted for the threads on their own cores from their share of accesses on the lines and this machine's slowdown for what they do to them, beside what this run paid, docs/model.md)\n"), "{sec}");
    assert!(
        sec.contains(" #1 false sharing: 100K invalidations, threads 1,2; fixing it: "),
        "{sec}"
    );
    assert!(
        sec.contains("    object: global `counters` (64 B)\n"),
        "{sec}"
    );
    assert!(
        sec.contains(
            "    words: counters[0] written by thread 1; counters[1] written by thread 2\n"
        ),
        "{sec}"
    );
    assert!(
        sec.contains("    at: /src/fs.c:30 in worker (10.0K writes)\n"),
        "{sec}"
    );
    assert!(
        sec.contains("    object [1]: global `ga` (8 B)\n    object [2]: global `gb` (8 B)\n"),
        "{sec}"
    );
    // The section sits between the allocation sites and the threads.
    let (a, s, th) = (
        t.find("Allocation sites")
            .or(t.find("Top allocation"))
            .unwrap(),
        t.find("Cache-line sharing").unwrap(),
        t.find("Threads (").unwrap(),
    );
    assert!(a < s && s < th, "{t}");
}

#[test]
fn heap_stack_allocator_induced_and_latent_findings() {
    let dir = tempfile::tempdir().unwrap();
    let (mut p, _) = program(dir.path());
    let h = 0x7000_0000_0000u64;
    let stack_obj = ObjectRef {
        kind: ObjectKind::Stack,
        start: 0x7ffc_0000_0000,
        size: 8 << 20,
        stack_thread: Some(2),
        ..Default::default()
    };
    let mut a = line(
        0x7100_0000_0000,
        0,
        vec![byte(56, 8, 0, 500, &[], &[1])],
        &[(0, 0, 500)],
        // No allocation stack: another block than the calloc site's (a latent finding on a
        // site with an actual finding is not reported).
        vec![ObjectRef {
            alloc_stack: None,
            ..heap(0x7100_0000_0000, 128, 4, "malloc", 0)
        }],
    );
    let mut b = line(
        0x7100_0000_0040,
        0,
        vec![byte(0, 8, 0, 500, &[], &[2])],
        &[(0, 0, 500)],
        // No allocation stack: another block than the calloc site's (a latent finding on a
        // site with an actual finding is not reported).
        vec![ObjectRef {
            alloc_stack: None,
            ..heap(0x7100_0000_0000, 128, 4, "malloc", 0)
        }],
    );
    a.contended = false;
    b.contended = false;
    p.sharing = Some(sharing(vec![
        line(
            h,
            900_000,
            vec![
                byte(0, 8, 0, 90_000, &[], &[1]),
                byte(8, 8, 0, 90_000, &[], &[2]),
            ],
            &[(0, 0, 180_000)],
            vec![heap(h, 256, 4, "calloc", 0)],
        ),
        line(
            h + 0x1000,
            10_000,
            vec![
                byte(16, 8, 0, 900, &[], &[1]),
                byte(48, 8, 0, 900, &[], &[2]),
            ],
            &[(0, 0, 1800)],
            vec![
                heap(h + 0x1010, 24, 4, "calloc", 1),
                heap(h + 0x1030, 24, 5, "malloc", 2),
            ],
        ),
        a,
        b,
        line(
            0x7ffc_0010_0000,
            5_000,
            vec![byte(0, 8, 0, 400, &[], &[2]), byte(8, 8, 0, 400, &[], &[3])],
            &[(1, 0, 800)],
            vec![stack_obj],
        ),
    ]));
    let j = json_of(vec![Input::new("a.json", p.clone(), None)], &all());
    let f = findings(&j);
    assert_eq!(f.len(), 4, "{}", j["sharing"]);
    let kinds: Vec<&str> = f.iter().map(|x| x["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "false_sharing",
            "false_sharing",
            "false_sharing",
            "latent_false_sharing"
        ]
    );
    assert_eq!(j["sharing"]["lines_tracked"], 5);
    assert_eq!(j["sharing"]["settings"]["threshold"], 16);

    // Heap: allocation kind, size, thread, and the allocating frame in the program.
    let o = &f[0]["objects"][0];
    assert_eq!(o["kind"], "heap");
    assert_eq!(
        (
            o["alloc_kind"].as_str(),
            o["size"].as_u64(),
            o["alloc_thread"].as_u64()
        ),
        (Some("calloc"), Some(256), Some(0))
    );
    assert!(
        o["alloc_site"].as_str().unwrap().ends_with("/sh.c:6"),
        "{o}"
    );
    assert_eq!(o["function"], "make");
    assert!(
        o["alloc_stack"][0].as_str().unwrap().starts_with("make /")
            && o["alloc_stack"][0].as_str().unwrap().ends_with("sh.c:6"),
        "{o}"
    );
    assert!(o["name"].is_null() && o["stack_thread"].is_null());
    assert!(f[0]["words"][1]["field"].is_null());
    assert_eq!(f[0]["words"][1]["object_offset"], 8);
    assert_eq!(f[0]["allocator_induced"], false);
    assert!(f[0]["latent"].is_null());
    assert!(f[0]["predicted_speedup"].as_f64().unwrap() > 1.0);

    // Allocator-induced: both allocation sites named.
    let ai = &f[1];
    assert_eq!(ai["allocator_induced"], true);
    let sites: Vec<&str> = ai["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["alloc_site"].as_str().unwrap())
        .collect();
    assert!(
        sites[0].ends_with("sh.c:6") && sites[1].ends_with("sh.c:7"),
        "{sites:?}"
    );
    assert_eq!(ai["words"][1]["object"], 1);
    assert_eq!(ai["words"][1]["object_offset"], 0);

    // Stack: the thread, and the function of the place that writes it (demangled).
    let st = &f[2]["objects"][0];
    assert_eq!(
        (st["kind"].as_str(), st["stack_thread"].as_u64()),
        (Some("stack"), Some(2))
    );
    assert_eq!(st["function"], "worker(void*)");
    assert_eq!(f[2]["places"][0]["line"], 41);

    // Latent: after the actual ones, with its reasons.
    let l = &f[3];
    assert_eq!(l["kind_text"], "latent false sharing");
    assert_eq!(l["latent"]["prefetch_pair"], true);
    assert_eq!(l["latent"]["shift"], 8);
    assert_eq!(
        l["lines"],
        serde_json::json!([0x7100_0000_0000u64, 0x7100_0000_0040u64])
    );
    // Words of both lines in one heap object.
    assert_eq!(l["objects"].as_array().unwrap().len(), 1);
    assert_eq!(l["words"][1]["object_offset"], 64);

    let t = text_of(vec![Input::new("a.json", p.clone(), None)], &all());
    let sec = &t[t.find("Cache-line sharing").unwrap()..];
    assert!(sec.contains(" #1 false sharing: 900K invalidations, threads 1,2; fixing it: saves up to 4.5 ms (1.00x) (finding confidence high)\n    predicted: seen in this run: 4.5 ms, 180000 accesses × 50.00 ns measured beyond a cache hit (100 timed reloads, 100 misses, 0% stores counted at 5%; machine not calibrated (profcc calibrate)) / 2 threads, within 90% of the 1000.0 ms they ran at once (100% of their CPU time); no prediction for their own cores (the profile has no per-thread access counts) (prediction confidence low)\n"), "{sec}");
    let obj = sec
        .lines()
        .find(|l| l.starts_with("    object: heap 256 B"))
        .expect("heap object line");
    assert!(
        obj.contains(" from calloc at /") && obj.ends_with("sh.c:6 in make (thread 0)"),
        "{obj}"
    );
    assert!(
        sec.contains(" #2 false sharing (allocator-induced): "),
        "{sec}"
    );
    assert!(
        sec.contains("    object [1]: heap 24 B from calloc at ")
            && sec.contains("    object [2]: heap 24 B from malloc at "),
        "{sec}"
    );
    let fix2 = sec
        .lines()
        .filter(|l| l.starts_with("    fix: "))
        .nth(1)
        .unwrap();
    assert!(
        fix2.contains("sh.c:6 and the malloc block from")
            && fix2.contains("sh.c:7: the allocator placed"),
        "{fix2}"
    );
    assert!(
        sec.contains("    words: [1]+0..8 written by thread 1; [2]+0..8 written by thread 2\n"),
        "{sec}"
    );
    assert!(
        sec.contains("    object: stack of thread 2, written by worker(void*)\n"),
        "{sec}"
    );
    // Offsets into a whole stack say nothing: stack words are placed by address.
    assert!(sec.contains("    words: 0x7ffc00100000+0..8 written by thread 2; 0x7ffc00100000+8..16 written by thread 3\n"), "{sec}");
    assert!(sec.contains(" #4 latent false sharing (adjacent-line prefetch pair; 8-byte shift of the data would share a line): no invalidations yet"), "{sec}");

    // --top 2: the first two, and how many there were.
    let j = json_of(
        vec![Input::new("a.json", p, None)],
        &Options { top: 2, ..all() },
    );
    assert_eq!(findings(&j).len(), 2);
    assert_eq!(j["sharing"]["findings_total"], 4);
}

/// Profiles without sharing records print nothing; records without findings print one line.
#[test]
fn absent_or_quiet_sharing() {
    let p = profile(1, vec![site("k.c", 3, 1, "f", AccessKind::Read, 4, 9, 1)]);
    let j = json_of(vec![Input::new("a.json", p.clone(), None)], &all());
    assert!(j.get("sharing").is_none(), "{j}");
    let t = text_of(vec![Input::new("a.json", p.clone(), None)], &all());
    assert!(!t.contains("Cache-line sharing"), "{t}");

    let mut q = p;
    q.sharing = Some(sharing(vec![
        // One writer only.
        line(
            0x1000,
            5000,
            vec![byte(0, 8, 0, 5000, &[], &[1])],
            &[],
            vec![],
        ),
        // Two writers, but the runtime only watched the line (not contended).
        LineRecord {
            contended: false,
            ..line(
                0x2000,
                3,
                vec![byte(0, 8, 0, 50, &[], &[1]), byte(8, 8, 0, 50, &[], &[2])],
                &[],
                vec![],
            )
        },
    ]));
    let t = text_of(vec![Input::new("a.json", q.clone(), None)], &all());
    assert!(
        t.contains("\nCache-line sharing: none: no cache line had two threads on record, one of them writing, while both lived (2 lines tracked per byte, docs/model.md)\n"),
        "{t}"
    );
    let j = json_of(vec![Input::new("a.json", q, None)], &all());
    assert_eq!(j["sharing"]["findings"], serde_json::json!([]));
    assert_eq!(j["sharing"]["lines_tracked"], 2);
}

/// Each finding is resolved against its own profile's sites, and ranked with all the others.
#[test]
fn merged_profiles_keep_their_own_sites() {
    let w = |o: u32, t: u32| byte(o, 8, 0, 1000, &[], &[t]);
    let mut a = profile(
        100,
        vec![
            site("a.c", 10, 1, "fa", AccessKind::Read, 8, 5, 1),
            site("b.c", 20, 1, "fb", AccessKind::Write, 8, 2000, 2),
        ],
    );
    a.sharing = Some(sharing(vec![line(
        0x1000,
        1_000,
        vec![w(0, 1), w(8, 2)],
        &[(1, 0, 2000)],
        vec![],
    )]));
    let mut b = profile(
        200,
        vec![site("c.c", 30, 1, "fc", AccessKind::Write, 8, 2000, 2)],
    );
    b.sharing = Some(sharing(vec![line(
        0x1000,
        9_000,
        vec![w(0, 1), w(16, 2)],
        &[(0, 0, 2000)],
        vec![],
    )]));
    let inputs = || {
        vec![
            Input::new("a.json", a.clone(), None),
            Input::new("b.json", b.clone(), None),
        ]
    };
    let j = json_of(inputs(), &all());
    let f = findings(&j);
    assert_eq!(f.len(), 2);
    assert_eq!(
        (f[0]["input"].as_u64(), f[0]["rank"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(
        (
            f[0]["places"][0]["file"].as_str(),
            f[0]["places"][0]["line"].as_u64()
        ),
        (Some("c.c"), Some(30))
    );
    assert_eq!(f[1]["input"], 0);
    assert_eq!(
        (
            f[1]["places"][0]["file"].as_str(),
            f[1]["places"][0]["function"].as_str()
        ),
        (Some("b.c"), Some("fb"))
    );
    assert_eq!(j["sharing"]["lines_tracked"], 2);
    // No objects known: words are placed by line offset.
    assert!(f[0]["words"][0]["object"].is_null());
    assert_eq!(f[0]["words"][1]["line_offset"], 16);
    let t = text_of(inputs(), &all());
    assert!(
        t.contains(" #1 [1] false sharing: 9000 invalidations"),
        "{t}"
    );
    assert!(
        t.contains(
            "    words: 0x1000+0..8 written by thread 1; 0x1000+16..24 written by thread 2\n"
        ),
        "{t}"
    );
    assert!(
        t.contains(" #2 [0] false sharing: 1000 invalidations"),
        "{t}"
    );
    let j = json_of(inputs(), &Options { top: 1, ..all() });
    assert_eq!(findings(&j).len(), 1);
    assert_eq!(j["sharing"]["findings_total"], 2);
}

#[test]
fn json_shape_of_a_finding() {
    let mut p = profile(1, vec![site("k.c", 3, 1, "f", AccessKind::Write, 8, 9, 2)]);
    p.sharing = Some(sharing(vec![line(
        0x1000,
        5000,
        vec![
            byte(0, 8, 3, 500, &[3], &[1]),
            byte(8, 8, 0, 500, &[], &[2]),
        ],
        &[(0, 1, 1000)],
        vec![heap(0x1000, 64, 99, "malloc", 0)],
    )]));
    let j = json_of(vec![Input::new("a.json", p, None)], &all());
    let s = &j["sharing"];
    for k in [
        "threshold",
        "sample",
        "watch_interval",
        "watch_samples",
        "watch_budget",
        "max_lines",
        "invalidation_ns",
    ] {
        assert!(s["settings"][k].is_u64(), "settings.{k}");
    }
    for k in ["lines_tracked", "dropped_lines", "findings_total"] {
        assert!(s[k].is_u64(), "{k}");
    }
    let f = &s["findings"][0];
    for k in [
        "rank",
        "input",
        "invalidations",
        "reads",
        "writes",
        "predicted_saving_ns",
    ] {
        assert!(f[k].is_u64(), "findings[].{k}");
    }
    for k in ["kind", "kind_text", "confidence", "fix"] {
        assert!(f[k].is_string(), "findings[].{k}");
    }
    assert!(
        f["allocator_induced"].is_boolean()
            && f["latent"].is_null()
            && f["predicted_speedup"].is_f64()
    );
    assert!(f["stride"].is_u64() && f["threads"].is_array() && f["lines"].is_array());
    let o = &f["objects"][0];
    for k in [
        "kind",
        "name",
        "size",
        "alloc_kind",
        "alloc_thread",
        "alloc_site",
        "alloc_stack",
        "stack_thread",
        "function",
        "start",
    ] {
        assert!(o.get(k).is_some(), "objects[].{k}");
    }
    // An allocation stack the profile does not have: no site, no stack, still the object.
    assert!(o["alloc_site"].is_null() && o["alloc_stack"] == serde_json::json!([]));
    let w = &f["words"][0];
    for k in [
        "object",
        "object_offset",
        "line",
        "line_offset",
        "size",
        "field",
        "reads",
        "writes",
        "readers",
        "writers",
    ] {
        assert!(w.get(k).is_some(), "words[].{k}");
    }
    assert_eq!(w["readers"], serde_json::json!([3]));
    let pl = &f["places"][0];
    for k in ["file", "line", "function", "reads", "writes"] {
        assert!(pl.get(k).is_some(), "places[].{k}");
    }
    assert_eq!(f["confidence"], "high");

    // Sampled: places are scaled like the words (one recorded access stands for `sample`).
    let mut q = profile(1, vec![site("k.c", 3, 1, "f", AccessKind::Write, 8, 9, 2)]);
    let mut sh = sharing(vec![line(
        0x1000,
        5000,
        vec![byte(0, 8, 0, 500, &[], &[1]), byte(8, 8, 0, 500, &[], &[2])],
        &[(0, 1, 1000)],
        vec![],
    )]);
    sh.settings.sample = 4;
    q.sharing = Some(sh);
    let j = json_of(vec![Input::new("a.json", q.clone(), None)], &all());
    let f = &j["sharing"]["findings"][0];
    assert_eq!(
        (
            f["places"][0]["reads"].as_u64(),
            f["places"][0]["writes"].as_u64()
        ),
        (Some(4), Some(4000))
    );
    assert_eq!(f["words"][0]["writes"], 2000);
    let t = text_of(vec![Input::new("a.json", q, None)], &all());
    assert!(
        t.contains(
            "\n  one access in 4 per thread to a tracked line was analysed; counts are estimates\n"
        ),
        "{t}"
    );
}

/// C++: base classes add no name, static members are skipped, a function's static and a
/// namespace variable are named demangled, std::atomic stops at the user's element.
#[test]
fn cpp_globals_fields_through_bases_statics_and_atomics() {
    let src = "#include <atomic>
namespace ns { struct Base { long x; }; struct D : Base { long y; static int k; }; }
int ns::D::k = 3;
alignas(64) ns::D ds[2];
namespace ns { alignas(64) std::atomic<long> hits[8]; }
__attribute__((noinline)) long *bump() { alignas(64) static long local[8]; local[1]++; return local; }
int main() { ds[1].y = ns::D::k; ns::hits[2]++; return bump() == nullptr; }
";
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "cx.cc", src, &["-x", "c++", "-O0"]);
    let (_, _, range) = symbol(&exe, "main");
    let a = |n: &str| BASE + symbol(&exe, n).0;
    let (ds, hits, local) = (a("ds"), a("_ZN2ns4hitsE"), a("_ZZ4bumpvE5local"));
    let mut p = profile(3, vec![]);
    p.modules = vec![Module {
        path: exe.display().to_string(),
        base: BASE,
        start: BASE + range.0,
        end: BASE + range.1,
    }];
    let w = |o: u32, t: u32| byte(o, 8, 0, 5000, &[], &[t]);
    p.sharing = Some(sharing(vec![
        line(
            ds,
            30_000,
            vec![w(8, 1), w(16, 2)],
            &[],
            vec![static_line(ds)],
        ),
        line(
            hits,
            20_000,
            vec![w(0, 1), w(16, 2)],
            &[],
            vec![static_line(hits)],
        ),
        line(
            local,
            10_000,
            vec![w(0, 1), w(8, 2)],
            &[],
            vec![static_line(local)],
        ),
    ]));
    let j = json_of(vec![Input::new("a.json", p, None)], &all());
    let f = findings(&j);
    let fields = |k: usize| -> Vec<String> {
        f[k]["words"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["field"].as_str().unwrap_or("null").to_string())
            .collect()
    };
    assert_eq!(fields(0), ["ds[0].y", "ds[1].x"]);
    assert_eq!(f[1]["objects"][0]["name"], "ns::hits");
    assert_eq!(fields(1), ["ns::hits[0]", "ns::hits[2]"]);
    assert_eq!(f[2]["objects"][0]["name"], "bump()::local");
    assert_eq!(fields(2), ["bump()::local[0]", "bump()::local[1]"]);
}

/// The exit summary (the runtime prints `profcc_analysis::sharing::summary_lines`) and the
/// report's sharing section give the same findings of one profile in the same order, with the
/// same counts (scaled by `fs_sample` once), predictions and gain threshold.
#[test]
fn exit_summary_and_report_rank_the_same_findings() {
    use profcc_analysis::sharing::{summary_findings, summary_lines, Kind};
    let mut p = profile(
        5,
        vec![
            site(
                "/src/fs.c",
                30,
                5,
                "worker",
                AccessKind::Write,
                8,
                10_000,
                2,
            ),
            site("/src/t.c", 21, 3, "lookup", AccessKind::Read, 8, 90_000, 3),
            site("/src/u.c", 40, 3, "other", AccessKind::Write, 8, 10_000, 2),
        ],
    );
    let h = 0x7000_0000_0000u64;
    let w = |o: u32, t: u32| byte(o, 8, 0, 5000, &[], &[t]);
    let table = |addr: u64, inv: u64| {
        line(
            addr,
            inv,
            vec![byte(0, 8, 90_000, 100, &[1, 2, 3], &[1])],
            &[(1, 90_000, 100)],
            vec![static_line(addr)],
        )
    };
    let mut la = line(
        h + 0x2000,
        0,
        vec![byte(56, 8, 0, 500, &[], &[1])],
        &[(0, 0, 500)],
        vec![ObjectRef {
            alloc_stack: None,
            ..heap(h + 0x2000, 128, 4, "malloc", 0)
        }],
    );
    let mut lb = line(
        h + 0x2040,
        0,
        vec![byte(0, 8, 0, 500, &[], &[2])],
        &[(0, 0, 500)],
        vec![ObjectRef {
            alloc_stack: None,
            ..heap(h + 0x2000, 128, 4, "malloc", 0)
        }],
    );
    la.contended = false;
    lb.contended = false;
    // Heap false sharing: 5M invalidations by 2 threads, 40,000 accesses costing 1000 ns
    // each beyond a hit: 20 ms per thread of 200 ms: 1.11x, shown.
    let mut hot = line(
        h,
        5_000_000,
        vec![w(0, 1), w(8, 2)],
        &[(0, 0, 10_000)],
        vec![heap(h, 64, 4, "calloc", 0)],
    );
    hot.latency.rmw.extra_ns = 100_000;
    p.duration_ns = 200_000_000;
    let mut sh = sharing(vec![
        hot,
        // Allocator-induced: 2M, 40,000 accesses at 50 ns: 1 ms, 1.005x, a saving but no gain
        // shown (the summary used to show it from 1.01x).
        line(
            h + 0x1000,
            2_000_000,
            vec![w(16, 1), w(48, 2)],
            &[(0, 0, 10_000)],
            vec![
                heap(h + 0x1010, 24, 4, "calloc", 1),
                heap(h + 0x1030, 24, 5, "malloc", 2),
            ],
        ),
        la,
        lb,
        // Two static lines with equal counts at other places: ranked by address.
        line(
            0x5600_0000_1000,
            1000,
            vec![w(0, 3), w(8, 4)],
            &[(2, 0, 10_000)],
            vec![static_line(0x5600_0000_1000)],
        ),
        line(
            0x5600_0000_0f00,
            1000,
            vec![w(0, 1), w(8, 2)],
            &[(0, 0, 10_000)],
            vec![static_line(0x5600_0000_0f00)],
        ),
        // Three lines of one static table read at one place: one finding of 600.
        table(0x5600_0000_2000, 300),
        table(0x5600_0000_2040, 200),
        table(0x5600_0000_2080, 100),
    ]);
    sh.settings.sample = 4;
    sh.lines.sort_by_key(|l| l.addr);
    p.sharing = Some(sh);

    let j = json_of(
        vec![Input::new("a.json", p.clone(), None)],
        &Options::default(),
    );
    let report = findings(&j);
    let (summary, below) = summary_findings(&p, usize::MAX);
    let lines = |f: &Value| -> Vec<u64> {
        f["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_u64().unwrap())
            .collect()
    };
    // The expected ranking, so that the comparison below compares something. Every line
    // measured 50 ns per access beyond a hit (`line`), fs_sample 4, a 200 ms run: the hot heap
    // line (1.11x) and the table (3 lines x 360,400 accesses x 50 ns over 3 threads: 18 ms,
    // 1.099x) are listed; the allocator-induced heap line and the two static lines (40,000
    // accesses: 1 ms, 1.005x) and the latent pair (2000 writes x an assumed 100 ns at 5% over
    // 2 threads) are predicted below MIN_LISTED_SPEEDUP, counted per kind in both.
    let order: Vec<Vec<u64>> = report.iter().map(lines).collect();
    assert_eq!(
        order,
        vec![
            vec![h],
            vec![0x5600_0000_2000, 0x5600_0000_2040, 0x5600_0000_2080]
        ]
    );
    let counts: Vec<(Kind, usize, usize)> = below
        .iter()
        .map(|b| (b.kind, b.findings, b.lines))
        .collect();
    assert_eq!(
        counts,
        vec![(Kind::FalseSharing, 3, 3), (Kind::LatentFalseSharing, 1, 2)]
    );
    assert_eq!(j["sharing"]["below_threshold"], serde_json::json!(below));
    assert_eq!(summary.len(), report.len());
    for (r, s) in report.iter().zip(&summary) {
        let what = format!("report {r}\nsummary {s:?}");
        assert_eq!(lines(r), s.lines, "{what}");
        assert_eq!(r["kind"], serde_json::to_value(s.kind).unwrap(), "{what}");
        assert_eq!(r["allocator_induced"], s.allocator_induced, "{what}");
        assert_eq!(r["invalidations"], s.invalidations, "{what}");
        assert_eq!(r["threads"], serde_json::json!(s.threads), "{what}");
        // Estimates, scaled by fs_sample = 4 once.
        assert_eq!(
            (r["reads"].as_u64(), r["writes"].as_u64()),
            (Some(s.reads), Some(s.writes)),
            "{what}"
        );
        let sum = |k: &str| -> u64 {
            r["places"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x[k].as_u64().unwrap())
                .sum()
        };
        let site_sum = |f: fn(&LineSite) -> u64| s.sites.iter().map(f).sum::<u64>();
        assert_eq!(sum("reads"), site_sum(|x| x.reads), "{what}");
        assert_eq!(sum("writes"), site_sum(|x| x.writes), "{what}");
        assert_eq!(r["predicted_saving_ns"], s.predicted_saving_ns, "{what}");
        assert_eq!(
            r["predicted_speedup"].as_f64(),
            Some(s.predicted_speedup),
            "{what}"
        );
    }
    assert_eq!(report[0]["writes"], 40_000);
    assert_eq!(report[0]["places"][0]["writes"], 40_000);

    // The text: the summary's two listed lines and the report's first two findings say the same
    // kind and count, and show a gain for the same ones.
    let t = text_of(
        vec![Input::new("a.json", p.clone(), None)],
        &Options::default(),
    );
    let heads: Vec<&str> = t.lines().filter(|l| l.starts_with(" #")).collect();
    let sl = summary_lines(&p, 3);
    assert_eq!(sl.len(), 4, "{sl:?}");
    // The counted kinds: the same line in the summary and the text report.
    for b in &sl[2..] {
        assert!(
            b.starts_with("  + ") && t.contains(&format!("\n {}\n", b.trim())),
            "{b}\n{t}"
        );
    }
    for ((s, r), f) in sl.iter().zip(&heads).zip(report) {
        let kind = f["kind_text"].as_str().unwrap();
        assert!(
            s.starts_with(&format!("  {kind}")) && r.contains(kind),
            "{s}\n{r}"
        );
        assert!(
            s.contains(&format!("): {} invalidations", f["invalidations"])),
            "{s}"
        );
        assert_eq!(s.contains("faster"), r.contains("faster"), "{s}\n{r}");
    }
    assert!(
        sl[0].ends_with(", fixing it: up to 1.11x faster"),
        "{}",
        sl[0]
    );
    assert!(
        heads[0].contains("fixing it: up to 1.1x faster"),
        "{}",
        heads[0]
    );
    assert!(
        heads[1].contains("fixing it: saves up to 18.0 ms"),
        "{}",
        heads[1]
    );
    assert!(sl[1].ends_with(": 600 invalidations"), "{}", sl[1]);
}
