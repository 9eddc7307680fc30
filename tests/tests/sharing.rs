//! Cache-line sharing end to end (issue 3): programs whose answer is known
//! (tests/fixtures/sharing/*, each file says what it expects) are built with profcc at -O0
//! and -O2, run with 2..4 threads, and the `sharing` section of `profcc report --format json`
//! is checked the way a user reads it: the kind of each finding, the object (heap:
//! allocation call and function; global: its name; stack: whose stack), the contended words
//! (object offsets and their writers) and the place (`file:line`) of the contended access.
//!
//! Each test checks every variant it runs and fails once at the end, listing every problem
//! with the findings of the run it saw, so one failure does not hide the others.

use profcc_analysis::sharing::Kind;
use profcc_report::model::{Finding, Object, ObjectKind, Word};
use profcc_report::Report;
use profcc_tests::*;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Command, Output};

const OPTS: [&str; 2] = ["-O0", "-O2"];

/// Increments per worker in the fixtures that count (ROUNDS x 1024).
const INCREMENTS: u64 = 4096 * 1024;

// ---------------------------------------------------------------------------------------------
// Building and running

/// A fixture of tests/fixtures/sharing built with profcc (profcc++ for .cpp) at each of `opts`.
struct Built {
    s: Scratch,
    file: String,
    text: String,
}

impl Built {
    fn new(file: &str, flags: &[&str]) -> Built {
        Built::with_opts(file, flags, &OPTS)
    }

    fn with_opts(file: &str, flags: &[&str], opts: &[&str]) -> Built {
        Built::at(&fixture(&format!("sharing/{file}")), flags, opts)
    }

    /// A source outside the sharing fixtures (e.g. examples/demo.c).
    fn at(src: &std::path::Path, flags: &[&str], opts: &[&str]) -> Built {
        let file = src.file_name().unwrap().to_str().unwrap().to_string();
        let text = std::fs::read_to_string(&src).unwrap();
        let s = Scratch::new();
        let compiler = if file.ends_with(".cpp") {
            profcxx()
        } else {
            profcc()
        };
        let src = src.to_str().unwrap();
        // The optimisation levels compile in parallel.
        std::thread::scope(|scope| {
            for opt in opts {
                let (s, compiler) = (&s, &compiler);
                scope.spawn(move || {
                    let exe = exe_name(opt);
                    let args: Vec<&str> = [&[*opt, "-g"][..], flags, &[src, "-o", &exe]].concat();
                    s.compile(compiler, &args);
                });
            }
        });
        Built { s, file, text }
    }

    fn line(&self, marker: &str) -> u32 {
        line_of(&self.text, marker)
    }

    /// Run the -O<opt> build with `PROFCC_OPTIONS=out=...:summary=0[:options]` and `env`;
    /// the program must succeed. Returns the run with its report.
    fn run(&self, opt: &str, args: &[&str], env: &[(&str, &str)], options: &str) -> Run {
        let what = format!(
            "{} {opt} {}{}",
            self.file,
            env.iter()
                .map(|(k, v)| format!("{k}={v} "))
                .collect::<String>(),
            args.join(" ")
        );
        let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let profile = self.s.path(&format!("run{n}.json"));
        let mut opts = format!("out={}:summary=0", profile.display());
        if !options.is_empty() {
            opts = format!("{opts}:{options}");
        }
        let out = output_within(
            Command::new(self.s.path(&exe_name(opt)))
                .current_dir(self.s.dir.path())
                .args(args)
                .envs(env.iter().copied())
                .env("PROFCC_OPTIONS", opts),
        );
        assert!(
            out.status.success() && profile.exists(),
            "{what}: exited with {} (profile written: {}); stderr:\n{}",
            out.status,
            profile.exists(),
            tail(&String::from_utf8_lossy(&out.stderr), 30)
        );
        // Every finding, also those predicted below MIN_LISTED_SPEEDUP: these tests check what
        // the findings say (the listing threshold has its own tests).
        let report = report(&profile, &["--top", "0", "--min-speedup", "0"]);
        Run {
            what,
            file: self.file.clone(),
            out,
            profile,
            report,
        }
    }
}

static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn exe_name(opt: &str) -> String {
    format!("prog{opt}")
}

struct Run {
    what: String,
    file: String,
    out: Output,
    profile: PathBuf,
    /// `profcc report --format json --top 0` (all findings).
    report: Report,
}

impl Run {
    fn findings(&self) -> Vec<&Finding> {
        self.report
            .sharing
            .iter()
            .flat_map(|s| &s.findings)
            .collect()
    }

    fn actual(&self) -> Vec<&Finding> {
        self.findings()
            .into_iter()
            .filter(|f| f.kind != Kind::LatentFalseSharing)
            .collect()
    }

    fn latent(&self) -> Vec<&Finding> {
        self.findings()
            .into_iter()
            .filter(|f| f.kind == Kind::LatentFalseSharing)
            .collect()
    }

    /// The evidence printed with a problem: the report's findings in short, and the
    /// profile's tracked lines.
    fn evidence(&self) -> String {
        let mut s = String::new();
        if self.report.sharing.is_none() {
            s.push_str("    report has no sharing section\n");
        }
        for f in self.findings() {
            s.push_str(&format!(
                "    finding #{} {:?}{} latent={:?} lines={} invalidations={} threads={:?} stride={:?} reads={} writes={}\n",
                f.rank,
                f.kind,
                if f.allocator_induced { " (allocator-induced)" } else { "" },
                f.latent,
                hex_list(&f.lines),
                f.invalidations,
                f.threads,
                f.stride,
                f.reads,
                f.writes
            ));
            for (i, o) in f.objects.iter().enumerate() {
                s.push_str(&format!(
                    "      object [{i}] {} name={:?} start={:#x} size={} alloc_kind={:?} alloc_site={:?} stack_thread={:?} function={:?}\n",
                    o.kind.as_str(),
                    o.name,
                    o.start,
                    o.size,
                    o.alloc_kind,
                    o.alloc_site,
                    o.stack_thread,
                    o.function
                ));
            }
            for w in &f.words {
                s.push_str(&format!(
                    "      word object={:?} object_offset={:?} line={:#x}+{} size={} field={:?} reads={} writes={} readers={:?} writers={:?}\n",
                    w.object,
                    w.object_offset,
                    w.line,
                    w.line_offset,
                    w.size,
                    w.field,
                    w.reads,
                    w.writes,
                    w.readers,
                    w.writers
                ));
            }
            for p in &f.places {
                s.push_str(&format!(
                    "      place {}:{} {} reads={} writes={}\n",
                    basename(&p.file),
                    p.line,
                    p.function,
                    p.reads,
                    p.writes
                ));
            }
        }
        // The raw records, for when the analysis had nothing (or the wrong thing) to say.
        if let Ok(p) = profcc_schema::read(&self.profile) {
            let sharing = p.sharing.unwrap_or_default();
            s.push_str(&format!(
                "    profile: parallel_ns={} dropped_lines={} duration_ns={}\n",
                sharing.parallel_ns, sharing.dropped_lines, p.duration_ns
            ));
            for l in sharing.lines.iter().take(12) {
                let bytes: Vec<String> = l
                    .bytes
                    .iter()
                    .map(|b| {
                        format!(
                            "+{}:{} r{} w{} readers{:?} writers{:?}",
                            b.offset, b.size, b.reads, b.writes, b.readers, b.writers
                        )
                    })
                    .collect();
                let objects: Vec<String> = l
                    .objects
                    .iter()
                    .map(|o| format!("{:?}@{:#x}", o.kind, o.start))
                    .collect();
                s.push_str(&format!(
                    "    line {:#x} invalidations={} contended={} volume_samples={} bytes=[{}] objects=[{}]\n",
                    l.addr,
                    l.invalidations,
                    l.contended,
                    l.volume_samples,
                    bytes.join(", "),
                    objects.join(", ")
                ));
            }
        }
        s
    }
}

fn hex_list(v: &[u64]) -> String {
    let items: Vec<String> = v.iter().map(|x| format!("{x:#x}")).collect();
    format!("[{}]", items.join(", "))
}

fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

// ---------------------------------------------------------------------------------------------
// Problems: every variant is checked; the test fails at the end with all of them.

#[derive(Default)]
struct Problems {
    text: String,
    count: usize,
}

impl Problems {
    /// Record the problems of one run (if any), with the run's evidence.
    fn run(&mut self, run: &Run, problems: Vec<String>) {
        if problems.is_empty() {
            return;
        }
        self.count += problems.len();
        self.text.push_str(&format!("\n--- {}\n", run.what));
        for p in problems {
            self.text.push_str(&format!("  * {p}\n"));
        }
        self.text.push_str(&run.evidence());
    }

    fn finish(self) {
        assert!(self.count == 0, "{} problem(s):{}", self.count, self.text);
    }
}

// ---------------------------------------------------------------------------------------------
// What a finding should say

/// The object a finding should name.
#[derive(Clone, Copy)]
enum Obj<'a> {
    /// A heap block: allocation function and the line of the allocation call in the fixture.
    Heap { kind: &'a str, line: u32 },
    /// A global, by name.
    Global(&'a str),
    /// A thread's stack, named by the function that writes it.
    Stack { thread: u32, function: &'a str },
}

impl Obj<'_> {
    fn matches(&self, o: &Object, file: &str) -> bool {
        match *self {
            Obj::Heap { kind, line } => {
                o.kind == ObjectKind::Heap
                    && o.alloc_kind.as_deref() == Some(kind)
                    && o.alloc_site
                        .as_deref()
                        .is_some_and(|s| s.ends_with(&format!("/{file}:{line}")))
            }
            Obj::Global(name) => o.kind == ObjectKind::Global && o.name.as_deref() == Some(name),
            Obj::Stack { thread, function } => {
                o.kind == ObjectKind::Stack
                    && o.stack_thread == Some(thread)
                    && o.function
                        .as_deref()
                        .is_some_and(|f| f == function || f.starts_with(&format!("{function}(")))
            }
        }
    }

    fn describe(&self, file: &str) -> String {
        match *self {
            Obj::Heap { kind, line } => format!("heap block from {kind} at {file}:{line}"),
            Obj::Global(name) => format!("global `{name}`"),
            Obj::Stack { thread, function } => {
                format!("stack of thread {thread} written in {function}")
            }
        }
    }
}

/// One per-thread element: its offset inside the array or struct, the thread that writes it
/// (None: some single thread, different for each element) and its DWARF field name.
struct Elem {
    offset: u64,
    writer: Option<u32>,
    field: Option<String>,
}

/// Elements `i` = 0..n of an array of `stride`-byte elements, the written word `field_offset`
/// bytes into each, written by runtime thread i+1 (workers created in order by the main
/// thread), named `name[i]` (+ `suffix`) when `name` is given.
fn array(n: u32, stride: u64, field_offset: u64, name: Option<&str>, suffix: &str) -> Vec<Elem> {
    (0..n)
        .map(|i| Elem {
            offset: i as u64 * stride + field_offset,
            writer: Some(i + 1),
            field: name.map(|n| format!("{n}[{i}]{suffix}")),
        })
        .collect()
}

/// Where the elements start: the named object's start, else (object not named) the address
/// of a contended word minus its element's offset.
fn base_of(run: &Run, obj: &Obj, elems: &[Elem], from_object: bool) -> Option<u64> {
    if from_object {
        for f in run.findings() {
            for o in &f.objects {
                if obj.matches(o, &run.file) {
                    return Some(o.start);
                }
            }
        }
    }
    for f in run.findings() {
        for w in &f.words {
            let addr = w.line + w.line_offset as u64;
            if let [t] = w.writers[..] {
                if let Some(e) = elems.iter().find(|e| e.writer == Some(t)) {
                    return Some(addr - e.offset);
                }
            }
        }
    }
    None
}

/// Places of a finding: each of `lines` is there (with writes if `writes`, else reads), and
/// every place is in the fixture at one of `allowed`.
fn check_places(
    p: &mut Vec<String>,
    f: &Finding,
    file: &str,
    required: &[(u32, bool)],
    allowed: &[u32],
) {
    for &(line, writes) in required {
        let key = if writes { "writes" } else { "reads" };
        let ok = f.places.iter().any(|pl| {
            pl.file.ends_with(&format!("/{file}"))
                && pl.line == line
                && (if writes { pl.writes } else { pl.reads }) > 0
        });
        if !ok {
            p.push(format!(
                "finding #{}: no place {file}:{line} with {key}",
                f.rank
            ));
        }
    }
    for pl in &f.places {
        let ok = pl.file.ends_with(&format!("/{file}")) && allowed.contains(&pl.line);
        if !ok {
            p.push(format!(
                "finding #{}: unexpected place {}:{} (expected only {file}:{allowed:?})",
                f.rank, pl.file, pl.line
            ));
        }
    }
}

/// The words of finding `f`, each as (object offset, writers, field), sorted.
fn words_of(f: &Finding) -> Vec<(Option<u64>, Vec<u32>, Option<String>)> {
    let mut v: Vec<_> = f
        .words
        .iter()
        .map(|w| (w.object_offset, w.writers.clone(), w.field.clone()))
        .collect();
    v.sort();
    v
}

/// False sharing among per-thread elements of one object. The contended lines are those
/// holding two or more elements; the findings on them (one per line, or one for the object
/// over all its lines) are false sharing, name the object and only it, have exactly those
/// elements as words (object offset, single writer, field name), the element stride, and the
/// store lines as places (plus, if at all, `also`: other lines that touch the elements while
/// other threads exist). Nothing else is reported.
#[allow(clippy::too_many_arguments)]
fn check_false_sharing(
    run: &Run,
    obj: Obj,
    elems: &[Elem],
    stride: Option<u64>,
    stores: &[u32],
    also: &[u32],
    // The object is the elements' container (heap block, global), so its start is theirs.
    object_is_container: bool,
) -> Vec<String> {
    let mut p = Vec::new();
    let file = &run.file;
    let Some(base) = base_of(run, &obj, elems, object_is_container) else {
        p.push(format!(
            "no finding names the {} or has a word of its elements: expected false sharing",
            obj.describe(file)
        ));
        return p;
    };
    let start = object_start(run, &obj, base);
    // Lines holding two or more elements, and those elements.
    let mut lines: Vec<(u64, Vec<&Elem>)> = Vec::new();
    for e in elems {
        let l = (base + e.offset) & !63;
        match lines.iter_mut().find(|x| x.0 == l) {
            Some(x) => x.1.push(e),
            None => lines.push((l, vec![e])),
        }
    }
    lines.retain(|x| x.1.len() >= 2);
    if lines.is_empty() {
        p.push("fixture error: no two elements share a line".into());
        return p;
    }
    let want_lines: BTreeSet<u64> = lines.iter().map(|x| x.0).collect();
    let mut covered: Vec<u64> = Vec::new();
    let mut got: Vec<(Option<u64>, Vec<u32>, Option<String>)> = Vec::new();
    for f in run.findings() {
        let flines = &f.lines;
        let rank = f.rank;
        if !flines.iter().any(|l| want_lines.contains(l)) {
            p.push(format!(
                "unexpected finding #{rank}: {:?} on {}",
                f.kind,
                hex_list(&f.lines)
            ));
            continue;
        }
        covered.extend(flines);
        if f.kind != Kind::FalseSharing {
            p.push(format!(
                "finding #{rank} on {}: kind {:?} (expected false_sharing)",
                hex_list(&f.lines),
                f.kind
            ));
        }
        if f.allocator_induced {
            p.push(format!("finding #{rank}: allocator_induced is not false"));
        }
        let objects = &f.objects;
        if objects.len() != 1 || !obj.matches(&objects[0], file) {
            p.push(format!(
                "finding #{rank}: objects should be exactly the {}",
                obj.describe(file)
            ));
        }
        got.extend(words_of(f));
        if let Some(s) = stride {
            if f.stride != Some(s) {
                p.push(format!(
                    "finding #{rank}: stride {:?}, expected {s}",
                    f.stride
                ));
            }
        }
        let required: Vec<(u32, bool)> = stores.iter().map(|&l| (l, true)).collect();
        let allowed: Vec<u32> = stores.iter().chain(also).copied().collect();
        check_places(&mut p, f, file, &required, &allowed);
    }
    covered.sort();
    let want_covered: Vec<u64> = want_lines.iter().copied().collect();
    if covered != want_covered {
        p.push(format!(
            "findings cover lines {}, expected the lines holding two or more elements: {}",
            hex_list(&covered),
            hex_list(&want_covered)
        ));
    }
    got.sort();
    let mut want: Vec<(Option<u64>, Vec<u32>, Option<String>)> = lines
        .iter()
        .flat_map(|x| x.1.iter())
        .map(|e| {
            (
                Some(base + e.offset - start),
                e.writer.map(|w| vec![w]).unwrap_or_default(),
                e.field.clone(),
            )
        })
        .collect();
    want.sort();
    if elems.iter().any(|e| e.writer.is_none()) {
        // Only the offsets are known in advance; each word has one writer of its own.
        let strip =
            |v: &[(Option<u64>, Vec<u32>, Option<String>)]| -> Vec<(Option<u64>, Option<String>)> {
                v.iter().map(|x| (x.0, x.2.clone())).collect()
            };
        if strip(&got) != strip(&want) {
            p.push(format!(
                "words (object offset, field) {:?}, expected {:?}",
                strip(&got),
                strip(&want)
            ));
        }
        let mut writers: Vec<u32> = Vec::new();
        for w in &got {
            if w.1.len() != 1 {
                p.push(format!(
                    "word at object offset {:?} has writers {:?}, expected one writer",
                    w.0, w.1
                ));
            } else {
                writers.push(w.1[0]);
            }
        }
        let n = writers.len();
        writers.sort();
        writers.dedup();
        if writers.len() != n {
            p.push("two words have the same single writer".into());
        }
    } else if got != want {
        p.push(format!(
            "words (object offset, writers, field) {got:?}, expected {want:?}"
        ));
    }
    p
}

/// Start of the object the words' object offsets count from: the named object's start, else
/// the elements' base (container objects start with their elements).
fn object_start(run: &Run, obj: &Obj, base: u64) -> u64 {
    for f in run.findings() {
        for o in &f.objects {
            if obj.matches(o, &run.file) {
                return o.start;
            }
        }
    }
    base
}

/// A fixture of per-thread counters (`counters[i] += 1` by worker i), 8 bytes apart.
fn counters(run: &Run, obj: Obj, n: u32, name: Option<&str>, store: u32) -> Vec<String> {
    check_false_sharing(
        run,
        obj,
        &array(n, 8, 0, name, ""),
        Some(8),
        &[store],
        &[],
        true,
    )
}

// ---------------------------------------------------------------------------------------------
// False sharing

#[test]
fn heap_calloc_counters_are_false_sharing() {
    let b = Built::new("counters_heap.c", &["-pthread"]);
    let obj = Obj::Heap {
        kind: "calloc",
        line: b.line("MARK_CALLOC"),
    };
    let mut probs = Problems::default();
    for opt in OPTS {
        for n in [2, 3, 4] {
            let r = b.run(opt, &["calloc", &n.to_string()], &[], "");
            let p = counters(&r, obj, n, None, b.line("MARK_STORE"));
            probs.run(&r, p);
        }
    }
    probs.finish();
}

/// The program `cargo xtask demo` profiles (examples/demo.c, the README's first command):
/// four workers' counters packed in one calloc'ed line are false sharing at the contended
/// store, also on a busy machine (before its workers started together and made several
/// passes, a loaded machine ran them one after another and the demo showed no finding).
#[test]
fn the_demo_shows_its_false_sharing() {
    let demo = fixture("sharing").join("../../../examples/demo.c");
    let b = Built::at(&demo, &["-pthread"], &OPTS);
    let obj = Obj::Heap {
        kind: "calloc",
        line: b.line("counters = calloc("),
    };
    let mut probs = Problems::default();
    for opt in OPTS {
        let r = b.run(opt, &[], &[], "");
        // main reads each counter after joining its worker, while the others may still
        // write the line: that read may be a place of the finding too.
        let p = check_false_sharing(
            &r,
            obj,
            &array(4, 8, 0, None, ""),
            Some(8),
            &[b.line("the contended store")],
            &[b.line("total += counters[i].hits")],
            true,
        );
        probs.run(&r, p);
    }
    probs.finish();
}

#[test]
fn heap_malloc_counters_are_false_sharing() {
    let b = Built::new("counters_heap.c", &["-pthread"]);
    let obj = Obj::Heap {
        kind: "malloc",
        line: b.line("MARK_MALLOC"),
    };
    let mut probs = Problems::default();
    for opt in OPTS {
        for n in [2, 4] {
            let r = b.run(opt, &["malloc", &n.to_string()], &[], "");
            let p = counters(&r, obj, n, None, b.line("MARK_STORE"));
            probs.run(&r, p);
        }
    }
    probs.finish();
}

/// Real programs free their counters before they exit; the block is still the object.
#[test]
fn heap_counters_freed_before_exit_are_still_named() {
    let b = Built::new("counters_heap.c", &["-pthread"]);
    let obj = Obj::Heap {
        kind: "calloc",
        line: b.line("MARK_CALLOC"),
    };
    let mut probs = Problems::default();
    for opt in OPTS {
        let r = b.run(opt, &["calloc", "2", "free"], &[], "");
        let p = counters(&r, obj, 2, None, b.line("MARK_STORE"));
        probs.run(&r, p);
    }
    probs.finish();
}

/// The same with the counters in an anonymous mmap region unmapped before exit: the
/// analyses learn of munmap as of free, so the region is still the object.
#[test]
fn mmap_counters_unmapped_before_exit_are_still_named() {
    let b = Built::new("counters_heap.c", &["-pthread"]);
    let obj = Obj::Heap {
        kind: "mmap",
        line: b.line("MARK_MMAP"),
    };
    let mut probs = Problems::default();
    for opt in OPTS {
        let r = b.run(opt, &["mmap", "2", "free"], &[], "");
        let p = counters(&r, obj, 2, None, b.line("MARK_STORE"));
        probs.run(&r, p);
    }
    probs.finish();
}

#[test]
fn cxx_new_array_counters_are_false_sharing() {
    let b = Built::new("counters_new.cpp", &["-pthread"]);
    let obj = Obj::Heap {
        kind: "new[]",
        line: b.line("MARK_NEW"),
    };
    let mut probs = Problems::default();
    for opt in OPTS {
        for n in [2, 3] {
            let r = b.run(opt, &[&n.to_string()], &[], "");
            let p = counters(&r, obj, n, None, b.line("MARK_STORE"));
            probs.run(&r, p);
        }
    }
    probs.finish();
}

/// While sampling runs beside the sharing checks, the blocks it does not record are named by
/// their start words (rt/src/alloc.rs, "Start words"). With a mean of 4 GB between recorded
/// allocations nothing is recorded (the sites' figures still count every block), so every
/// heap object below is named by its start word alone, without an allocating thread: calloc, malloc, new[], a block freed before exit (its free found a line with a
/// record and told the analysis), two allocator-placed blocks of two sites on one line, and a
/// block from a wrapper in another file (named by the wrapper's caller's line).
#[test]
fn heap_objects_sampling_did_not_record_are_named_by_their_start_words() {
    const NONE_RECORDED: &str = "alloc_sample=4000000000";
    let heap = Built::new("counters_heap.c", &["-pthread"]);
    let new = Built::new("counters_new.cpp", &["-pthread"]);
    let wrapped = built_with_wrappers();
    let mut probs = Problems::default();
    for opt in OPTS {
        for (kind, mark, args) in [
            ("calloc", "MARK_CALLOC", &["calloc", "3"][..]),
            ("malloc", "MARK_MALLOC", &["malloc", "2"][..]),
            ("calloc", "MARK_CALLOC", &["calloc", "2", "free"][..]),
        ] {
            let r = heap.run(opt, args, &[], NONE_RECORDED);
            let obj = Obj::Heap {
                kind,
                line: heap.line(mark),
            };
            let n = args[1].parse().unwrap();
            let mut p = counters(&r, obj, n, None, heap.line("MARK_STORE"));
            // Named by a start word: no allocating thread (an object in the map has one).
            for f in r.findings() {
                for o in f.objects.iter().filter(|o| o.alloc_thread.is_some()) {
                    p.push(format!(
                        "object at {:#x} has allocating thread {:?}, expected none (a start word's)",
                        o.start, o.alloc_thread
                    ));
                }
            }
            probs.run(&r, p);
        }
        let r = new.run(opt, &["2"], &[], NONE_RECORDED);
        let obj = Obj::Heap {
            kind: "new[]",
            line: new.line("MARK_NEW"),
        };
        let p = counters(&r, obj, 2, None, new.line("MARK_STORE"));
        probs.run(&r, p);
        let r = wrapped.run(opt, &["func", "4"], &[], NONE_RECORDED);
        let obj = Obj::Heap {
            kind: "calloc",
            line: wrapped.line("MARK_FUNC"),
        };
        let mut p = counters(&r, obj, 4, None, wrapped.line("MARK_STORE"));
        match wrappers_of_object(&r, &obj) {
            Ok(w) if w.len() == 1 && w[0].starts_with("mem_calloc (") => {}
            Ok(w) => p.push(format!("wrappers {w:?}, expected only mem_calloc")),
            Err(e) => p.push(e),
        }
        probs.run(&r, p);
    }
    probs.finish();
}

/// counters_global.c's expected finding: false sharing on `counters`, one element per thread.
fn global_counters(b: &Built, r: &Run, n: u32) -> Vec<String> {
    counters(
        r,
        Obj::Global("counters"),
        n,
        Some("counters"),
        b.line("MARK_STORE"),
    )
}

#[test]
fn global_counters_are_false_sharing() {
    let b = Built::new("counters_global.c", &["-pthread"]);
    let mut probs = Problems::default();
    for opt in OPTS {
        for n in [2, 4] {
            let r = b.run(opt, &[&n.to_string()], &[], "");
            let p = global_counters(&b, &r, n);
            probs.run(&r, p);
        }
    }
    probs.finish();
}

/// The main thread writes every counter alone, then updates its own beside the workers in the
/// frame that created them: its stores after `pthread_create` are checked (the checks start
/// with the first thread created, before the real call), and its lone writes are no finding.
#[test]
fn main_thread_that_joins_its_workers_in_its_own_frame_is_false_sharing() {
    let b = Built::new("main_joins.c", &["-pthread"]);
    let stores = [b.line("MARK_STORE_MAIN"), b.line("MARK_STORE_WORKER")];
    let mut probs = Problems::default();
    for opt in OPTS {
        for n in [2, 3] {
            let r = b.run(opt, &[&n.to_string()], &[], "");
            // counters[i] is written by thread i: main (0) and workers 1..n.
            let elems: Vec<Elem> = array(n, 8, 0, Some("counters"), "")
                .into_iter()
                .map(|e| Elem {
                    writer: e.writer.map(|w| w - 1),
                    ..e
                })
                .collect();
            let obj = Obj::Global("counters");
            let p = check_false_sharing(&r, obj, &elems, Some(8), &stores, &[], true);
            probs.run(&r, p);
        }
    }
    probs.finish();
}

/// A `pthread_create` that fails (a 64 TiB stack) leaves the program's one thread alone: its
/// accesses skip the line shadow again (`__profcc_alone`, rt/csrc/tls.c), as before the call
/// and as after its one real thread is joined.
#[test]
fn a_failed_pthread_create_leaves_the_thread_alone() {
    let s = Scratch::new();
    s.write(
        "fail.c",
        r#"#include <pthread.h>
#include <stdio.h>
extern unsigned long __profcc_alone;
static void *f(void *a) { return a; }
int main(void) {
    unsigned long before = __profcc_alone;
    pthread_attr_t at;
    pthread_attr_init(&at);
    int rc = pthread_attr_setstacksize(&at, (size_t)1 << 46);
    pthread_t t;
    int failed = pthread_create(&t, &at, f, 0) != 0;
    unsigned long after_failed = __profcc_alone;
    pthread_create(&t, 0, f, 0);
    pthread_join(t, 0);
    printf("%d %d %lu %lu %lu\n", rc, failed, before, after_failed, __profcc_alone);
    return 0;
}
"#,
    );
    s.compile(&profcc(), &["-O2", "-pthread", "fail.c", "-o", "fail"]);
    let (out, _) = s.run_profiled("fail", &[], "summary=0");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "0 1 1 1 1\n");
}

#[test]
fn stack_counters_are_false_sharing() {
    let b = Built::new("counters_stack.c", &["-pthread"]);
    let obj = Obj::Stack {
        thread: 0,
        function: "worker",
    };
    let mut probs = Problems::default();
    for opt in OPTS {
        let n = 3;
        let r = b.run(opt, &[&n.to_string()], &[], "");
        // The object is the whole stack: the array's place in it comes from the words.
        let p = check_false_sharing(
            &r,
            obj,
            &array(n, 8, 0, None, ""),
            Some(8),
            &[b.line("MARK_STORE")],
            &[],
            false,
        );
        probs.run(&r, p);
    }
    probs.finish();
}

#[test]
fn vector_of_structs_is_false_sharing() {
    let b = Built::new("vector_structs.cpp", &["-pthread"]);
    let obj = Obj::Heap {
        kind: "new",
        line: b.line("MARK_VECTOR"),
    };
    let mut probs = Problems::default();
    for opt in OPTS {
        // 16-byte elements: with 3 or more, two always share a line.
        for n in [3, 4] {
            let r = b.run(opt, &[&n.to_string()], &[], "");
            let p = check_false_sharing(
                &r,
                obj,
                &array(n, 16, 0, None, ""),
                Some(16),
                &[b.line("MARK_STORE")],
                &[],
                true,
            );
            probs.run(&r, p);
        }
    }
    probs.finish();
}

#[test]
fn fields_of_one_struct_are_false_sharing() {
    let b = Built::new("struct_fields.c", &["-pthread"]);
    let places = [b.line("MARK_A"), b.line("MARK_B")];
    let mut probs = Problems::default();
    for opt in OPTS {
        for (mode, obj, name) in [
            ("global", Obj::Global("pair"), Some("pair")),
            (
                "heap",
                Obj::Heap {
                    kind: "malloc",
                    line: b.line("MARK_MALLOC"),
                },
                None,
            ),
        ] {
            let r = b.run(opt, &[mode], &[], "");
            let elems: Vec<Elem> = [(0, 1, "a"), (8, 2, "b")]
                .into_iter()
                .map(|(offset, w, field)| Elem {
                    offset,
                    writer: Some(w),
                    field: name.map(|n| format!("{n}.{field}")),
                })
                .collect();
            let p = check_false_sharing(&r, obj, &elems, Some(8), &places, &[], true);
            probs.run(&r, p);
        }
    }
    probs.finish();
}

#[test]
fn openmp_partial_sums_are_false_sharing() {
    let b = Built::new("omp_partial.c", &["-fopenmp"]);
    let mut probs = Problems::default();
    // fs_sample=1: every access is analysed, so main's vectorised read of the partial sums
    // after the loop (one 16-byte load over two threads' words) is always recorded; it used
    // to stretch one thread's writes over its neighbour's word (true sharing, 1 run in 4 at
    // the default sampling, when that read happened to be sampled).
    let variants = OPTS
        .iter()
        .flat_map(|o| [(*o, 2u32, ""), (*o, 4, "")])
        .chain([("-O2", 4, "fs_sample=1")]);
    for (opt, n, options) in variants {
        {
            let threads = n.to_string();
            let r = b.run(opt, &[], &[("OMP_NUM_THREADS", &threads)], options);
            // Which runtime thread is which OpenMP thread is libomp's business: each word
            // has a writer of its own.
            let elems: Vec<Elem> = (0..n)
                .map(|t| Elem {
                    offset: 8 * t as u64,
                    writer: None,
                    field: Some(format!("partial[{t}]")),
                })
                .collect();
            let p = check_false_sharing(
                &r,
                Obj::Global("partial"),
                &elems,
                Some(8),
                &[b.line("MARK_STORE")],
                &[b.line("MARK_SUM")],
                true,
            );
            probs.run(&r, p);
        }
    }
    probs.finish();
}

/// Two small blocks from two allocation sites that the allocator put on one line, written
/// by two threads: false sharing, allocator-induced, both allocation calls named.
#[test]
fn small_blocks_on_one_line_are_allocator_induced() {
    let b = Built::new("alloc_induced.c", &["-pthread"]);
    let first = Obj::Heap {
        kind: "malloc",
        line: b.line("MARK_FIRST"),
    };
    let second = Obj::Heap {
        kind: "malloc",
        line: b.line("MARK_SECOND"),
    };
    let store = b.line("MARK_STORE");
    let mut probs = Problems::default();
    for opt in OPTS {
        let r = b.run(opt, &[], &[], "");
        let mut p = Vec::new();
        let all = r.findings();
        if all.len() != 1 {
            p.push(format!("{} findings, expected exactly one", all.len()));
        }
        if let Some(f) = all.first() {
            if f.kind != Kind::FalseSharing || !f.allocator_induced {
                p.push(format!(
                    "kind {:?} allocator_induced {}: expected allocator-induced false sharing",
                    f.kind, f.allocator_induced
                ));
            }
            let objects = &f.objects;
            let fi = objects.iter().position(|o| first.matches(o, &r.file));
            let si = objects.iter().position(|o| second.matches(o, &r.file));
            if objects.len() != 2 || fi.is_none() || si.is_none() {
                p.push(format!(
                    "objects should be the {} and the {}",
                    first.describe(&r.file),
                    second.describe(&r.file)
                ));
            }
            if let (Some(fi), Some(si)) = (fi, si) {
                let mut got: Vec<(Option<usize>, Option<u64>, Vec<u32>)> = f
                    .words
                    .iter()
                    .map(|w| (w.object, w.object_offset, w.writers.clone()))
                    .collect();
                got.sort_by_key(|w| w.0);
                let mut want = vec![(Some(fi), Some(0), vec![1]), (Some(si), Some(0), vec![2])];
                want.sort_by_key(|w| w.0);
                if got != want {
                    p.push(format!(
                        "words (object, object offset, writers) {got:?}, expected {want:?}"
                    ));
                }
            }
            check_places(&mut p, f, &r.file, &[(store, true)], &[store]);
        }
        probs.run(&r, p);
    }
    probs.finish();
}

// ---------------------------------------------------------------------------------------------
// True sharing and read-mostly lines

/// One word of a global written by every worker.
fn check_true_sharing(run: &Run, name: &str, n: u32, place: u32) -> Vec<String> {
    let mut p = Vec::new();
    let all = run.findings();
    if all.len() != 1 {
        p.push(format!("{} findings, expected exactly one", all.len()));
    }
    let Some(f) = all.first() else {
        return p;
    };
    if f.kind != Kind::TrueSharing {
        p.push(format!("kind {:?}, expected true_sharing", f.kind));
    }
    let objects = &f.objects;
    if objects.len() != 1 || !Obj::Global(name).matches(&objects[0], &run.file) {
        p.push(format!("objects should be exactly the global `{name}`"));
    }
    let words = &f.words;
    let everyone: Vec<u32> = (1..=n).collect();
    let ok = words.len() == 1
        && words[0].object_offset == Some(0)
        && words[0].size == 8
        && words[0].writers == everyone;
    if !ok {
        p.push(format!(
            "words should be one 8-byte word at object offset 0 written by threads {everyone:?}"
        ));
    }
    check_places(&mut p, f, &run.file, &[(place, true)], &[place]);
    p
}

/// Copies by `memcpy` with a run-time length into two threads' halves of one line: false
/// sharing on the global, at the copy, with at most one invalidation per copy. The range
/// hooks' runtime analysed every access to a tracked line and counted it `fs_sample` (64)
/// times, as if it were one sampled access of 64: about 30 invalidations per copy.
#[test]
fn copies_into_neighbouring_halves_are_false_sharing_counted_once() {
    let b = Built::new("range_copies.c", &["-pthread"]);
    let copies = 2 * 512 * 1024;
    let mut probs = Problems::default();
    for opt in OPTS {
        let r = b.run(opt, &[], &[], "");
        let mut p = Vec::new();
        let all = r.findings();
        match all.first() {
            Some(f) if all.len() == 1 => {
                if f.kind != Kind::FalseSharing {
                    p.push(format!("kind {:?}, expected false sharing", f.kind));
                }
                if f.objects.len() != 1 || !Obj::Global("buf").matches(&f.objects[0], &r.file) {
                    p.push("objects should be exactly the global `buf`".into());
                }
                if f.invalidations > copies {
                    p.push(format!(
                        "{} invalidations from {copies} copies",
                        f.invalidations
                    ));
                }
                let copy = b.line("MARK_COPY");
                check_places(&mut p, f, &r.file, &[(copy, true)], &[copy]);
            }
            _ => p.push(format!("{} findings, expected exactly one", all.len())),
        }
        probs.run(&r, p);
    }
    probs.finish();
}

#[test]
fn atomic_counter_is_true_sharing() {
    let b = Built::new("true_sharing.c", &["-pthread"]);
    let mut probs = Problems::default();
    for opt in OPTS {
        for (mode, name, mark, n) in [
            ("atomic", "hits", "MARK_ATOMIC", 2),
            ("atomic", "hits", "MARK_ATOMIC", 4),
            ("c11", "events", "MARK_C11", 3),
        ] {
            let r = b.run(opt, &[mode, &n.to_string()], &[], "");
            let p = check_true_sharing(&r, name, n, b.line(mark));
            probs.run(&r, p);
        }
    }
    probs.finish();
}

/// The line's kind (what its threads do to it) picks the calibration the prediction uses.
fn check_access(run: &Run, want: profcc_analysis::sharing::LineAccess) -> Vec<String> {
    run.findings()
        .iter()
        .filter(|f| f.prediction.access != want)
        .map(|f| {
            format!(
                "finding #{}: a {:?} line, expected {want:?}",
                f.rank, f.prediction.access
            )
        })
        .collect()
}

/// Millions of increments per thread in plain_vector.cpp and plain_atomic.c: enough for many
/// time slices of a busy machine at -O0.
const PLAIN_MILLIONS: &str = "20";

#[test]
fn plain_vector_counters_are_false_sharing_in_every_run() {
    // A held-out shape: nothing in the program paces its threads, so how often the line
    // changes hands depends on the machine's load; the verdict must not.
    let b = Built::new("plain_vector.cpp", &["-pthread"]);
    let obj = Obj::Heap {
        kind: "new",
        line: b.line("MARK_NEW"),
    };
    let mut probs = Problems::default();
    for opt in OPTS {
        let r = b.run(opt, &[PLAIN_MILLIONS], &[], "");
        let mut p = counters(&r, obj, 2, None, b.line("MARK_STORE"));
        p.extend(check_access(&r, profcc_analysis::sharing::LineAccess::Rmw));
        p.extend(check_prediction_bound(&r));
        probs.run(&r, p);
    }
    probs.finish();
}

#[test]
fn plain_atomic_counter_is_true_sharing_in_every_run() {
    let b = Built::new("plain_atomic.c", &["-pthread"]);
    let mut probs = Problems::default();
    for opt in OPTS {
        let r = b.run(opt, &["5"], &[], "");
        let mut p = check_true_sharing(&r, "hits", 2, b.line("MARK_ATOMIC"));
        p.extend(check_access(
            &r,
            profcc_analysis::sharing::LineAccess::Atomic,
        ));
        p.extend(check_prediction_bound(&r));
        probs.run(&r, p);
    }
    probs.finish();
}

#[test]
fn mutex_protected_counter_is_true_sharing() {
    let b = Built::new("true_sharing.c", &["-pthread"]);
    let mut probs = Problems::default();
    for opt in OPTS {
        for n in [2, 4] {
            let r = b.run(opt, &["mutex", &n.to_string()], &[], "");
            let p = check_true_sharing(&r, "total", n, b.line("MARK_MUTEX"));
            probs.run(&r, p);
        }
    }
    probs.finish();
}

/// A table read by every worker and rewritten by one every 100 reads.
fn check_read_mostly(run: &Run, n: u32, read: u32, write: u32) -> Vec<String> {
    let mut p = Vec::new();
    let all = run.findings();
    if all.len() != 1 {
        p.push(format!("{} findings, expected exactly one", all.len()));
    }
    let Some(f) = all.first() else {
        return p;
    };
    if f.kind != Kind::ReadMostly {
        p.push(format!("kind {:?}, expected read_mostly", f.kind));
    }
    let objects = &f.objects;
    if objects.len() != 1 || !Obj::Global("table").matches(&objects[0], &run.file) {
        p.push("objects should be exactly the global `table`".into());
    }
    let words: &[Word] = &f.words;
    let everyone: Vec<u32> = (1..=n).collect();
    match words.iter().find(|w| w.object_offset == Some(0)) {
        Some(w) => {
            if w.writers != [1] || w.readers != everyone || w.field.as_deref() != Some("table[0]") {
                p.push(format!(
                    "table[0] should be written by thread 1 only and read by threads {everyone:?}"
                ));
            }
        }
        None => p.push("no word at object offset 0 (table[0])".into()),
    }
    for w in words {
        if w.object_offset != Some(0) && !w.writers.is_empty() {
            p.push(format!("word {:?} is written, only table[0] is", w.field));
        }
    }
    check_places(
        &mut p,
        f,
        &run.file,
        &[(read, false), (write, true)],
        &[read, write],
    );
    p
}

#[test]
fn table_scanned_by_all_and_written_by_one_is_read_mostly() {
    let b = Built::new("read_mostly.c", &["-pthread"]);
    let mut probs = Problems::default();
    for opt in OPTS {
        let r = b.run(opt, &["scan", "3"], &[], "");
        let p = check_read_mostly(&r, 3, b.line("MARK_READ_SCAN"), b.line("MARK_WRITE_SCAN"));
        probs.run(&r, p);
    }
    probs.finish();
}

#[test]
fn table_read_at_random_by_all_and_written_by_one_is_read_mostly() {
    let b = Built::new("read_mostly.c", &["-pthread"]);
    let mut probs = Problems::default();
    for opt in OPTS {
        for n in [2, 4] {
            let r = b.run(opt, &["random", &n.to_string()], &[], "");
            let p = check_read_mostly(
                &r,
                n,
                b.line("MARK_READ_RANDOM"),
                b.line("MARK_WRITE_RANDOM"),
            );
            probs.run(&r, p);
        }
    }
    probs.finish();
}

// ---------------------------------------------------------------------------------------------
// Padded data (no false positives) and latent false sharing

/// Per-thread elements one line each (64-byte stride, 64-byte aligned), element i written
/// by thread i+1: no finding at all. Not even latent: the data is padded and aligned as it
/// should be, and an adjacent-line prefetch pair alone is no finding (the profile measures no
/// contention between two lines). These runs used to expect a latent "pad to 128 bytes"
/// finding on every 128-byte-aligned pair, which measured no gain (issue 10).
fn check_padded(run: &Run, _obj: Obj, n: u32, _fields: Option<&str>, _store: u32) -> Vec<String> {
    let mut p = Vec::new();
    for f in run.findings() {
        p.push(format!(
            "finding #{}: {:?} on padded data ({n} threads), expected none",
            f.rank, f.kind
        ));
    }
    // No finding must mean the analysis ran and saw the lines, not that it was off.
    if run.report.sharing.is_none() {
        p.push("the report has no sharing section".into());
    }
    p
}

#[test]
fn padded_counters_have_no_false_sharing() {
    let b = Built::new("padded_counters.c", &["-pthread"]);
    let store = b.line("MARK_STORE");
    let mut probs = Problems::default();
    for opt in OPTS {
        for n in [2, 4] {
            let r = b.run(opt, &["global", &n.to_string()], &[], "");
            let p = check_padded(&r, Obj::Global("slots"), n, Some("slots"), store);
            probs.run(&r, p);
        }
        let r = b.run(opt, &["memalign", "3"], &[], "");
        let obj = Obj::Heap {
            kind: "posix_memalign",
            line: b.line("MARK_MEMALIGN"),
        };
        let p = check_padded(&r, obj, 3, None, store);
        probs.run(&r, p);
    }
    probs.finish();
}

#[test]
fn vector_of_aligned_slots_has_no_false_sharing() {
    let b = Built::new("padded_vector.cpp", &["-pthread"]);
    let obj = Obj::Heap {
        kind: "new",
        line: b.line("MARK_VECTOR"),
    };
    let mut probs = Problems::default();
    for opt in OPTS {
        let r = b.run(opt, &["4"], &[], "");
        let p = check_padded(&r, obj, 4, None, b.line("MARK_STORE"));
        probs.run(&r, p);
    }
    probs.finish();
}

/// Two threads write the longs at offsets 56 and 64 of a 128-byte-aligned object: no sharing
/// now, one latent finding (adjacent-line prefetch pair, 8-byte shift).
#[test]
fn words_astride_a_line_boundary_are_latent_false_sharing() {
    let b = Built::new("latent.c", &["-pthread"]);
    let places = [b.line("MARK_LOW"), b.line("MARK_HIGH")];
    let mut probs = Problems::default();
    for opt in OPTS {
        for (mode, obj, name) in [
            ("global", Obj::Global("buf"), Some("buf")),
            (
                "heap",
                Obj::Heap {
                    kind: "aligned_alloc",
                    line: b.line("MARK_ALIGNED_ALLOC"),
                },
                None,
            ),
        ] {
            let r = b.run(opt, &[mode], &[], "");
            let mut p = Vec::new();
            for f in r.actual() {
                p.push(format!(
                    "finding #{}: {:?}, expected no actual sharing",
                    f.rank, f.kind
                ));
            }
            let latent = r.latent();
            if latent.len() != 1 {
                p.push(format!(
                    "{} latent findings, expected exactly one",
                    latent.len()
                ));
            }
            if let Some(f) = latent.first() {
                if !f
                    .latent
                    .as_ref()
                    .is_some_and(|l| l.prefetch_pair && l.shift == Some(8))
                {
                    p.push(format!(
                        "latent {:?}, expected prefetch_pair true and shift 8",
                        f.latent
                    ));
                }
                let objects = &f.objects;
                match objects.iter().find(|o| obj.matches(o, &r.file)) {
                    Some(o) if objects.len() == 1 => {
                        let s = o.start;
                        if !s.is_multiple_of(128) || f.lines != [s, s + 64] {
                            p.push(format!(
                                "lines {}, expected the object's first two lines ({s:#x}, {:#x})",
                                hex_list(&f.lines),
                                s + 64
                            ));
                        }
                    }
                    _ => p.push(format!(
                        "objects should be exactly the {}",
                        obj.describe(&r.file)
                    )),
                }
                let got = words_of(f);
                let want = vec![
                    (Some(56), vec![1], name.map(|n| format!("{n}[7]"))),
                    (Some(64), vec![2], name.map(|n| format!("{n}[8]"))),
                ];
                if got != want {
                    p.push(format!(
                        "words (object offset, writers, field) {got:?}, expected {want:?}"
                    ));
                }
                let required: Vec<(u32, bool)> = places.iter().map(|&l| (l, true)).collect();
                check_places(&mut p, f, &r.file, &required, &places);
            }
            probs.run(&r, p);
        }
    }
    probs.finish();
}

// ---------------------------------------------------------------------------------------------
// Counts, output, summary, settings

/// The estimated writes of a contended word (recorded sample x fs_sample) are within a
/// factor of 2 of what the program did: each worker writes its counter INCREMENTS times.
#[test]
fn contended_word_write_estimates_are_within_2x() {
    let b = Built::new("counters_heap.c", &["-pthread"]);
    let mut probs = Problems::default();
    for opt in OPTS {
        let r = b.run(opt, &["calloc", "2"], &[], "");
        let mut p = Vec::new();
        let words: Vec<&Word> = r.findings().into_iter().flat_map(|f| &f.words).collect();
        if words.is_empty() {
            p.push("no contended words".into());
        }
        for w in &words {
            let v = w.writes;
            if !(INCREMENTS / 2..=INCREMENTS * 2).contains(&v) {
                p.push(format!(
                    "word at object offset {:?} (writers {:?}): writes estimated {v}, the program did {INCREMENTS}",
                    w.object_offset, w.writers
                ));
            }
        }
        probs.run(&r, p);
    }
    probs.finish();
}

#[test]
fn profiled_program_prints_and_exits_as_the_clang_build() {
    let b = Built::with_opts("counters_heap.c", &["-pthread"], &["-O2"]);
    let src = fixture("sharing/counters_heap.c");
    b.s.compile(
        std::path::Path::new("clang-22"),
        &["-O2", "-pthread", src.to_str().unwrap(), "-o", "native"],
    );
    for args in [&["calloc", "3"][..], &["malloc", "2", "free"], &[]] {
        let native = b.s.run_plain("native", args);
        let profiled = output_within(
            Command::new(b.s.path(&exe_name("-O2")))
                .current_dir(b.s.dir.path())
                .args(args)
                .env("PROFCC_OPTIONS", "out=same.json"),
        );
        assert_same_run(&format!("counters_heap {args:?}"), &native, &profiled);
    }
    let native = b.s.run_plain("native", &["calloc", "3"]);
    assert_eq!(
        String::from_utf8_lossy(&native.stdout),
        format!("threads=3 sum={}\n", 3 * INCREMENTS)
    );
}

/// The exit summary's first sharing line names the kind and `file:line` of the top finding.
#[test]
fn exit_summary_names_the_top_finding() {
    let b = Built::with_opts("counters_global.c", &["-pthread"], &["-O2"]);
    let store = b.line("MARK_STORE");
    let mut probs = Problems::default();
    let r = b.run("-O2", &["2"], &[], "summary=1");
    let err = String::from_utf8_lossy(&r.out.stderr).to_string();
    let mut p = Vec::new();
    let lines: Vec<&str> = err.lines().collect();
    let head = lines.iter().position(|l| l.contains("cache-line sharing"));
    match head.and_then(|h| lines.get(h + 1)) {
        Some(top) => {
            // Listed (`false sharing at counters_global.c:N ...`) when its predicted gain
            // reaches MIN_LISTED_SPEEDUP, else counted (`+ 1 false sharing finding (1 line)
            // below 1.01x predicted gain, at counters_global.c:N`): on a loaded machine the
            // run is long and the gain small. Either way the line names the kind and place.
            let listed = format!("false sharing at counters_global.c:{store}");
            let counted = format!(
                "+ 1 false sharing finding (1 line) below {:.2}x predicted gain, at counters_global.c:{store}",
                profcc_analysis::sharing::MIN_LISTED_SPEEDUP
            );
            if !top.contains(&listed) && !top.contains(&counted) {
                p.push(format!(
                    "summary's top finding line {top:?} contains neither {listed:?} nor {counted:?}"
                ));
            }
        }
        None => p.push(format!(
            "no cache-line sharing lines in the summary:\n{err}"
        )),
    }
    match r.findings().first() {
        Some(f) if f.kind == Kind::FalseSharing => {}
        _ => p.push("the report's top finding is not false sharing".into()),
    }
    probs.run(&r, p);
    probs.finish();
}

/// fs_* options reach the run and the report says which were used.
/// SIGUSR2 while the program runs (after its threads are done, exit dump off): the signal's
/// profile has the same false sharing finding.
#[test]
fn sigusr2_profile_has_the_sharing_findings() {
    let b = Built::with_opts(
        "counters_global.c",
        &["-pthread", "-DSIGNAL_DUMP"],
        &["-O2"],
    );
    let mut probs = Problems::default();
    let r = b.run("-O2", &["2"], &[], "exit_dump=0:dump_signal=USR2");
    let profile = profcc_schema::read(&r.profile).unwrap();
    let mut p = Vec::new();
    if profile.trigger != "signal" {
        p.push(format!(
            "profile trigger {:?}, expected \"signal\"",
            profile.trigger
        ));
    }
    p.extend(global_counters(&b, &r, 2));
    probs.run(&r, p);
    probs.finish();
}

/// The struct-fields and OpenMP cases rebuilt with the fix the report gives (-DPADDED: the
/// second field on a line of its own; one line per thread's partial sum): no actual finding.
#[test]
fn padded_struct_fields_and_openmp_sums_have_no_sharing() {
    let fields = Built::new("struct_fields.c", &["-pthread", "-DPADDED"]);
    let omp = Built::new("omp_partial.c", &["-fopenmp", "-DPADDED"]);
    let mut probs = Problems::default();
    for opt in OPTS {
        let mut runs = vec![
            fields.run(opt, &["global"], &[], ""),
            fields.run(opt, &["heap"], &[], ""),
        ];
        for n in ["2", "4"] {
            runs.push(omp.run(opt, &[], &[("OMP_NUM_THREADS", n)], ""));
        }
        for r in &runs {
            let mut p: Vec<String> = r
                .actual()
                .iter()
                .map(|f| {
                    format!(
                        "finding #{}: {:?} on padded data, expected none",
                        f.rank, f.kind
                    )
                })
                .collect();
            // No finding must mean the analysis ran and saw the lines, not that it was off.
            if r.report.sharing.is_none() {
                p.push("the report has no sharing section".into());
            }
            probs.run(r, p);
        }
    }
    probs.finish();
}

#[test]
fn threads_streaming_their_own_chunks_share_nothing() {
    let b = Built::new("stream_chunks.c", &["-pthread"]);
    let mut probs = Problems::default();
    for opt in OPTS {
        let r = b.run(opt, &["2"], &[], "");
        let s = r.report.sharing.as_ref();
        let mut p = Vec::new();
        let findings = r.findings();
        if !findings.is_empty() {
            p.push(format!("{} finding(s), expected none", findings.len()));
        }
        // 16384 lines are written by two threads after the main thread: a cascade of
        // watches along the array would track thousands (it once filled the 8192-line table).
        let tracked = s.map_or(u64::MAX, |s| s.lines_tracked);
        if tracked > 64 {
            p.push(format!("{tracked} lines tracked, expected at most 64"));
        }
        probs.run(&r, p);
    }
    probs.finish();
}

#[test]
fn fs_options_are_recorded_in_the_report() {
    let b = Built::with_opts("counters_global.c", &["-pthread"], &["-O0"]);
    let store = b.line("MARK_STORE");
    let mut probs = Problems::default();
    let r = b.run(
        "-O0",
        &["2"],
        &[],
        "fs_threshold=40:fs_sample=16:fs_inv_ns=100:fs_watch=1024:fs_budget=777:fs_max_lines=99",
    );
    let mut p = Vec::new();
    match r.report.sharing.as_ref().map(|s| &s.settings) {
        Some(s) => {
            for (key, got, want) in [
                ("threshold", s.threshold, 40),
                ("sample", s.sample, 16),
                ("invalidation_ns", s.invalidation_ns, 100),
                ("watch_interval", s.watch_interval, 1024),
                ("watch_budget", s.watch_budget, 777),
                ("max_lines", s.max_lines, 99),
            ] {
                if got != want {
                    p.push(format!("settings.{key} = {got}, expected {want}"));
                }
            }
        }
        None => p.push("the report has no sharing section".into()),
    }
    // The analysis runs with them: still the same false sharing.
    p.extend(counters(
        &r,
        Obj::Global("counters"),
        2,
        Some("counters"),
        store,
    ));
    probs.run(&r, p);
    probs.finish();
}

// ---------------------------------------------------------------------------------------------
// names and thread ids

/// wrappers.c built with wrap_mem.c (the wrappers of another file) at -O0 and -O2.
fn built_with_wrappers() -> Built {
    let mem = fixture("sharing/wrap_mem.c");
    Built::new("wrappers.c", &["-pthread", mem.to_str().unwrap()])
}

/// The heap object of the run's false-sharing finding: its allocation wrappers as the report
/// lists them ("function (file:line)"), or a problem.
fn wrappers_of_object(r: &Run, obj: &Obj) -> Result<Vec<String>, String> {
    r.findings()
        .iter()
        .flat_map(|f| &f.objects)
        .find(|o| obj.matches(o, &r.file))
        .map(|o| o.alloc_wrappers.clone())
        .ok_or_else(|| format!("no object is the {}", obj.describe(&r.file)))
}

/// A heap block allocated through a wrapper is named by the caller's line, and the report says
/// which wrapper the call went through: a function of another file (Phoenix's `mem_calloc`), a
/// static inline function in a header (Phoenix's `MALLOC`, inlined at -O2), a macro.
#[test]
fn heap_blocks_from_allocation_wrappers_are_named_by_the_callers_line() {
    let b = built_with_wrappers();
    let mut probs = Problems::default();
    for opt in OPTS {
        for (mode, kind, mark, wrapper) in [
            ("func", "calloc", "MARK_FUNC", Some("mem_calloc")),
            ("inline", "malloc", "MARK_INLINE", Some("MALLOC")),
            ("macro", "calloc", "MARK_MACRO", None),
        ] {
            let r = b.run(opt, &[mode, "4"], &[], "");
            let obj = Obj::Heap {
                kind,
                line: b.line(mark),
            };
            let mut p = counters(&r, obj, 4, None, b.line("MARK_STORE"));
            match (wrappers_of_object(&r, &obj), wrapper) {
                (Err(e), _) => p.push(e),
                (Ok(w), None) if !w.is_empty() => {
                    p.push(format!("a macro is no frame, yet wrappers {w:?}"))
                }
                (Ok(w), Some(name))
                    if !(w.len() == 1 && w[0].starts_with(&format!("{name} ("))) =>
                {
                    p.push(format!("wrappers {w:?}, expected only {name}"))
                }
                _ => {}
            }
            // The allocation-site table marks the wrapper's frame: the site is the call after
            // it, on the caller's line.
            let line = b.line(mark);
            let site = r.report.alloc_sites.sites.iter().find(|s| {
                s.kind == kind
                    && s.stack.iter().any(|f| {
                        f.line == Some(line)
                            && f.file
                                .as_deref()
                                .is_some_and(|x| x.ends_with("/wrappers.c"))
                    })
            });
            match site {
                None => p.push(format!("no allocation site of {kind} at wrappers.c:{line}")),
                Some(s) => {
                    let want = usize::from(wrapper.is_some());
                    let named = s.stack.get(s.wrapper_frames);
                    if s.wrapper_frames != want || named.and_then(|f| f.line) != Some(line) {
                        p.push(format!(
                            "allocation site: {} wrapper frames (expected {want}), then {:?}",
                            s.wrapper_frames,
                            named.map(|f| (&f.function, f.line))
                        ));
                    }
                }
            }
            probs.run(&r, p);
        }
    }
    probs.finish();
}

/// A function that does more than allocate (pool_get counts its calls) is not a wrapper to
/// the compiler; `PROFCC_OPTIONS=alloc_wrappers=pool_get` makes it one, and the option is
/// recorded in the profile.
#[test]
fn alloc_wrappers_option_names_more_wrappers() {
    let b = built_with_wrappers();
    let mut probs = Problems::default();
    let pool = Obj::Heap {
        kind: "malloc",
        line: b.line("MARK_POOL"),
    };
    for opt in OPTS {
        let r = b.run(opt, &["pool", "2"], &[], "alloc_wrappers=pool_get");
        let mut p = counters(&r, pool, 2, None, b.line("MARK_STORE"));
        match wrappers_of_object(&r, &pool) {
            Ok(w) if w.len() == 1 && w[0].starts_with("pool_get (") => {}
            Ok(w) => p.push(format!("wrappers {w:?}, expected pool_get")),
            Err(e) => p.push(e),
        }
        let prof = profcc_schema::read(&r.profile).unwrap();
        if !prof.alloc_wrappers.iter().any(|w| w == "pool_get")
            || prof.options.get("alloc_wrappers").map(String::as_str) != Some("pool_get")
        {
            p.push(format!(
                "profile: alloc_wrappers {:?}, option {:?}",
                prof.alloc_wrappers,
                prof.options.get("alloc_wrappers")
            ));
        }
        probs.run(&r, p);
        // Without the option the block is pool_get's own malloc (wrap_mem.c).
        let r = b.run(opt, &["pool", "2"], &[], "");
        let text = std::fs::read_to_string(fixture("sharing/wrap_mem.c")).unwrap();
        let own = Obj::Heap {
            kind: "malloc",
            line: line_of(&text, "MARK_POOL_MALLOC"),
        };
        let named = r
            .findings()
            .iter()
            .flat_map(|f| &f.objects)
            .any(|o| own.matches(o, "wrap_mem.c"));
        probs.run(
            &r,
            if named {
                vec![]
            } else {
                vec!["without the option the block should be named by wrap_mem.c's malloc".into()]
            },
        );
    }
    probs.finish();
}

/// The runtime's own frames (the thread start trampoline in rt/csrc/interpose.c) never appear
/// in an allocation stack: a worker's malloc has the worker as its outermost frame.
#[test]
fn runtime_frames_never_appear_in_allocation_stacks() {
    let b = built_with_wrappers();
    let mut probs = Problems::default();
    let worker_line = b.line("MARK_WORKER_MALLOC");
    for opt in OPTS {
        let r = b.run(opt, &["func", "2"], &[], "");
        let mut p = Vec::new();
        for s in &r.report.alloc_sites.sites {
            for f in &s.stack {
                let runtime = f.function.as_deref() == Some("user_trampoline")
                    || f.file.as_deref().is_some_and(|x| x.contains("rt/csrc/"));
                if runtime {
                    p.push(format!(
                        "runtime frame {f:?} in the stack of a {} site",
                        s.kind
                    ));
                }
            }
        }
        let worker = r.report.alloc_sites.sites.iter().find(|s| {
            s.stack.first().is_some_and(|f| {
                f.file
                    .as_deref()
                    .is_some_and(|x| x.ends_with("/wrappers.c"))
                    && f.line == Some(worker_line)
            })
        });
        match worker {
            Some(s) if s.stack.len() == 1 && s.count == 2 => {}
            Some(s) => p.push(format!(
                "the workers' malloc: {} calls, stack {:?}; expected 2 calls, the worker frame only",
                s.count,
                s.stack.iter().map(|f| f.function.clone()).collect::<Vec<_>>()
            )),
            None => p.push(format!("no allocation site at wrappers.c:{worker_line}")),
        }
        probs.run(&r, p);
    }
    probs.finish();
}

/// libc has no debug information here (and no frame pointers): its frames are named from its
/// ELF symbols, never `??` — a malloc in qsort's comparison callback (whose caller is qsort's
/// internal merge sort, named after the nearest symbol). strdup, libc's own allocation
/// wrapper, is interposed: its block is named by the program's strdup call, kind strdup.
#[test]
fn libc_frames_in_allocation_stacks_are_symbolised() {
    let b = Built::new("libc_frames.c", &[]);
    let mut probs = Problems::default();
    let cmp_line = b.line("MARK_CMP_MALLOC");
    for opt in OPTS {
        let r = b.run(opt, &[], &[], "");
        let mut p = Vec::new();
        let libc = |f: &profcc_report::model::Frame| {
            f.module.as_deref().is_some_and(|m| m.contains("/libc.so"))
        };
        let sites = &r.report.alloc_sites.sites;
        for s in sites {
            for f in s.stack.iter().filter(|f| libc(f)) {
                if f.function.is_none() {
                    p.push(format!(
                        "unnamed libc frame {:#x} ({:?})",
                        f.address, f.offset
                    ));
                }
            }
        }
        // strdup is libc's allocation wrapper: the block is named by the program's call.
        let strdup_line = b.line("MARK_STRDUP");
        match sites.iter().find(|s| s.kind == "strdup") {
            Some(s)
                if s.count == 1
                    && s.bytes == 7
                    && s.stack.first().is_some_and(|f| {
                        f.file
                            .as_deref()
                            .is_some_and(|x| x.ends_with("/libc_frames.c"))
                            && f.line == Some(strdup_line)
                    }) => {}
            Some(s) => p.push(format!(
                "the strdup block: want 1 block of 7 B at libc_frames.c:{strdup_line}, got {} \
                 of {} B at {:?}",
                s.count,
                s.bytes,
                s.stack
                    .iter()
                    .map(|f| (f.function.clone(), f.line))
                    .collect::<Vec<_>>()
            )),
            None => p.push("no allocation site of kind strdup".into()),
        }
        let cmp = sites.iter().find(|s| {
            s.stack.first().is_some_and(|f| {
                f.file
                    .as_deref()
                    .is_some_and(|x| x.ends_with("/libc_frames.c"))
                    && f.line == Some(cmp_line)
            })
        });
        match cmp {
            Some(s)
                if s.stack
                    .get(1)
                    .is_some_and(|f| libc(f) && f.function.is_some()) => {}
            Some(s) => p.push(format!(
                "the callback's malloc: the frame after cmp should be a named libc frame: {:?}",
                s.stack
                    .iter()
                    .map(|f| (f.function.clone(), f.module.clone()))
                    .collect::<Vec<_>>()
            )),
            None => p.push(format!("no allocation site at libc_frames.c:{cmp_line}")),
        }
        probs.run(&r, p);
    }
    probs.finish();
}

/// 256 workers (started in overlapping waves of 32) each write their own counter of one
/// calloc'ed array: false sharing, never true sharing, with the real thread ids (not ids
/// modulo 64): every word has one writer, the worker whose counter it is.
#[test]
fn two_hundred_fifty_six_threads_are_false_sharing_with_real_ids() {
    let b = Built::new("many_threads.c", &["-pthread"]);
    let obj = Obj::Heap {
        kind: "calloc",
        line: b.line("MARK_CALLOC"),
    };
    let mut probs = Problems::default();
    for opt in OPTS {
        let r = b.run(opt, &[], &[], "");
        let mut p = Vec::new();
        let actual = r.actual();
        let mine: Vec<&&Finding> = actual
            .iter()
            .filter(|f| f.objects.iter().any(|o| obj.matches(o, &r.file)))
            .collect();
        if mine.is_empty() {
            p.push(format!("no finding names the {}", obj.describe(&r.file)));
        }
        for f in &mine {
            if f.kind != Kind::FalseSharing {
                p.push(format!(
                    "finding #{} is {:?}, expected false sharing",
                    f.rank, f.kind
                ));
            }
            let start = f
                .objects
                .iter()
                .find(|o| obj.matches(o, &r.file))
                .map(|o| o.start)
                .unwrap_or(0);
            for w in &f.words {
                let at = w.line + w.line_offset as u64;
                let owner = (at.wrapping_sub(start) / 8 + 1) as u32;
                if w.writers.len() > 1 || w.writers.iter().any(|&t| t != owner) {
                    p.push(format!(
                        "word at object offset {} written by {:?}, expected thread {owner} alone",
                        at.wrapping_sub(start),
                        w.writers
                    ));
                }
            }
        }
        let threads: BTreeSet<u32> = mine
            .iter()
            .flat_map(|f| f.threads.iter().copied())
            .collect();
        if threads.iter().filter(|&&t| t > 63).count() < 64 || threads.iter().any(|&t| t > 256) {
            p.push(format!(
                "threads named {} (max {:?}): expected most of 1..=256, many above 63",
                threads.len(),
                threads.iter().max()
            ));
        }
        probs.run(&r, p);
    }
    probs.finish();
}

// predictions
//
// The predicted gain comes from what the run measured (docs/model.md): latency samples of the
// contended lines, the threads' times and CPUs, the machine's calibration. What a user can
// check without timing anything: threads that never ran at once get no gain and a low
// prediction confidence; a padded layout is never predicted a larger gain than the shared
// one; every prediction stays within the bound the model states.

/// What the model promises of every finding of a run, whatever the machine's load: the
/// saving is at most `MAX_SAVING_PERCENT` of the overlap, the speed-up is the run's duration
/// over the duration less the saving, and a finding that predicts a gain says how.
fn check_prediction_bound(r: &Run) -> Vec<String> {
    use profcc_analysis::sharing::MAX_SAVING_PERCENT;
    let mut p = Vec::new();
    let profile = match profcc_schema::read(&r.profile) {
        Ok(x) => x,
        Err(e) => return vec![format!("profile unreadable: {e}")],
    };
    let Some(s) = profile.sharing.as_ref() else {
        return vec!["the profile has no sharing section".into()];
    };
    // The measurements behind the prediction are in the profile.
    if s.machine.as_ref().is_none_or(|m| m.ticks_per_ns <= 0.0) {
        p.push("sharing.machine missing or without a clock".into());
    }
    let workers: Vec<_> = s.threads.iter().filter(|t| t.id != 0).collect();
    if workers.is_empty()
        || workers
            .iter()
            .any(|t| t.end_ns < t.start_ns || t.cpus.is_empty())
    {
        p.push(format!("sharing.threads incomplete: {:?}", s.threads));
    }
    // Each thread's accesses are the thread table's, exact, and every worker made some.
    for t in &s.threads {
        let table = profile
            .threads
            .iter()
            .find(|x| x.id == t.id)
            .map(|x| x.accesses);
        if table != Some(t.accesses) || (t.id != 0 && t.accesses == 0) {
            p.push(format!(
                "thread {}: sharing.threads accesses {} vs the thread table's {table:?}",
                t.id, t.accesses
            ));
        }
    }
    let d = profile.duration_ns as f64;
    for f in r.findings() {
        let pr = &f.prediction;
        // The latency estimate's bound (the access-share estimate has its own, below).
        if !pr.share_bound
            && f.predicted_saving_ns as u128 * 100
                > pr.overlap_ns as u128 * MAX_SAVING_PERCENT as u128
        {
            p.push(format!(
                "finding #{}: saving {} ns over {MAX_SAVING_PERCENT}% of the {} ns overlap",
                f.rank, f.predicted_saving_ns, pr.overlap_ns
            ));
        }
        let want = if f.predicted_saving_ns > 0 {
            d / (d - f.predicted_saving_ns as f64)
        } else {
            1.0
        };
        if f.predicted_speedup < 1.0 || (f.predicted_speedup - want).abs() > 1e-6 * want {
            p.push(format!(
                "finding #{}: speed-up {} is not duration / (duration - saving) = {want}",
                f.rank, f.predicted_speedup
            ));
        }
        // What this run paid is the latency estimate: never without timed misses.
        if pr.seen_saving_ns > 0 && (pr.latency_samples == 0 || pr.latency_misses == 0) {
            p.push(format!(
                "finding #{}: a cost seen without latency samples or misses: {pr:?}",
                f.rank
            ));
        }
        // The prediction, for the threads on their own cores: the share is the lines' accesses
        // over the threads', at the slowdown of the line's kind, for the share of the time
        // they would run at once; the saving is never above what its speed-up gives (one
        // group of threads).
        if pr.thread_accesses > 0 && !pr.basis.contains("groups of threads") && f.latent.is_none() {
            let share = (pr.accesses as f64 / pr.thread_accesses as f64).min(1.0);
            let speedup = profcc_analysis::sharing::share_speedup(
                share,
                pr.contended_slowdown,
                pr.own_overlap_percent.min(100) as f64 / 100.0,
                pr.thread_accesses as f64 / pr.threads as f64,
                pr.other_accesses as f64,
            );
            let most = d * (1.0 - 1.0 / speedup);
            if (pr.access_share - share).abs() > 1e-9
                || (pr.share_speedup - speedup).abs() > 1e-9
                || f.predicted_saving_ns as f64 > most + 1.0
                || speedup > pr.contended_slowdown + 1e-9
            {
                p.push(format!(
                    "finding #{}: share {} (want {share}), share speed-up {} (want {speedup}), saving {} over the access-share estimate {most}",
                    f.rank, pr.access_share, pr.share_speedup, f.predicted_saving_ns
                ));
            }
        }
        if pr.basis.is_empty() {
            p.push(format!("finding #{}: no basis for its prediction", f.rank));
        }
    }
    p
}

#[test]
fn threads_that_never_overlap_share_nothing() {
    // Each worker is joined before the next starts: 48 hand-overs of the line, two threads'
    // words on it, but no two of them alive at once. Not sharing, in any run.
    let b = Built::new("sequential_counters.c", &["-pthread"]);
    let mut probs = Problems::default();
    for opt in OPTS {
        let r = b.run(opt, &["24"], &[], "");
        let mut p = check_prediction_bound(&r);
        for f in r.actual() {
            if f.objects
                .iter()
                .any(|o| o.kind == ObjectKind::Heap && o.alloc_kind.as_deref() == Some("calloc"))
            {
                p.push(format!(
                    "finding #{} names the calloc block of threads that never lived at once",
                    f.rank
                ));
            }
        }
        probs.run(&r, p);
    }
    probs.finish();
}

#[test]
fn padded_counters_are_never_predicted_more_than_shared_ones() {
    let shared = Built::new("counters_heap.c", &["-pthread"]);
    let padded = Built::new("padded_counters.c", &["-pthread"]);
    let top = |r: &Run| {
        r.actual()
            .iter()
            .map(|f| f.predicted_speedup)
            .fold(1.0f64, f64::max)
    };
    let mut probs = Problems::default();
    for opt in OPTS {
        let s = shared.run(opt, &["calloc", "2"], &[], "");
        let q = padded.run(opt, &["memalign", "2"], &[], "");
        let mut p = check_prediction_bound(&s);
        p.extend(check_prediction_bound(&q));
        if top(&q) > top(&s) {
            p.push(format!(
                "padded counters predicted {:.3}x, shared ones {:.3}x",
                top(&q),
                top(&s)
            ));
        }
        // Padded: no actual sharing, and latent findings never promise a gain.
        for f in q.findings() {
            if f.predicted_speedup != 1.0 {
                p.push(format!(
                    "padded: finding #{} ({:?}) predicts {:.3}x",
                    f.rank, f.kind, f.predicted_speedup
                ));
            }
        }
        probs.run(&s, p);
    }
    probs.finish();
}

/// Threads 1 and 65 (one residue modulo 64) update one counter: true sharing written by
/// both; ids taken modulo 64 saw one writer and no sharing at all.
#[test]
fn threads_1_and_65_on_one_word_are_true_sharing() {
    let b = Built::new("residue.c", &["-pthread"]);
    let mut probs = Problems::default();
    for opt in OPTS {
        let r = b.run(opt, &[], &[], "");
        let mut p = Vec::new();
        let all = r.findings();
        match all.first() {
            None => p.push("no finding".into()),
            Some(f) => {
                if all.len() != 1 || f.kind != Kind::TrueSharing {
                    p.push(format!(
                        "{} findings, first {:?}: expected one true sharing",
                        all.len(),
                        f.kind
                    ));
                }
                if f.objects.len() != 1
                    || !Obj::Global("shared_count").matches(&f.objects[0], &r.file)
                {
                    p.push("the object should be the global `shared_count`".into());
                }
                if f.threads != [1, 65] || f.words.len() != 1 || f.words[0].writers != [1, 65] {
                    p.push(format!(
                        "threads {:?}, words' writers {:?}: expected one word written by [1, 65]",
                        f.threads,
                        f.words
                            .iter()
                            .map(|w| w.writers.clone())
                            .collect::<Vec<_>>()
                    ));
                }
                check_places(
                    &mut p,
                    f,
                    &r.file,
                    &[(b.line("MARK_ADD"), true)],
                    &[b.line("MARK_ADD")],
                );
            }
        }
        probs.run(&r, p);
    }
    probs.finish();
}

#[test]
fn predictions_stay_within_the_bound_the_model_states() {
    let mut probs = Problems::default();
    let heap = Built::new("counters_heap.c", &["-pthread"]);
    let fields = Built::with_opts("struct_fields.c", &["-pthread"], &["-O2"]);
    let atomic = Built::with_opts("true_sharing.c", &["-pthread"], &["-O2"]);
    for opt in OPTS {
        let r = heap.run(opt, &["malloc", "4"], &[], "");
        let p = check_prediction_bound(&r);
        probs.run(&r, p);
    }
    for (b, args) in [(&fields, &["global"][..]), (&atomic, &["atomic", "2"][..])] {
        let r = b.run("-O2", args, &[], "");
        let p = check_prediction_bound(&r);
        probs.run(&r, p);
    }
    // Sampled more sparsely: the same bound.
    let r = heap.run("-O2", &["calloc", "2"], &[], "fs_sample=256");
    let p = check_prediction_bound(&r);
    probs.run(&r, p);
    probs.finish();
}

// grouping and thresholds

/// The report's text lines of the sharing section (from its header to the end of the report
/// or the next section).
fn sharing_text(profile: &std::path::Path, args: &[&str]) -> Vec<String> {
    let out = output_within(Command::new(profcc()).arg("report").args(args).arg(profile));
    assert!(out.status.success(), "profcc report failed");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let Some(start) = lines
        .iter()
        .position(|l| l.starts_with("Cache-line sharing"))
    else {
        return Vec::new();
    };
    lines[start..]
        .iter()
        .take_while(|l| !l.is_empty())
        .cloned()
        .collect()
}

/// A Phoenix-kmeans-shaped program (30 iterations x 8 new threads, per-thread sums in one
/// calloc'ed block per iteration, means rewritten by the main thread): the report's sharing
/// section fits on a screen (at most 40 lines) and still names the real false sharing, the
/// sums: as one finding over every iteration's block (object: the SUMS calloc, place: the ADD
/// store) when its predicted gain reaches the threshold, else in the per-kind line of the
/// findings below it (`largest_at` the ADD store). Every finding listed: the sums are one
/// finding, and there are few findings at all (they merge by allocation site and global).
#[test]
fn kmeans_like_report_fits_on_a_screen_and_names_the_sums() {
    let b = Built::new("kmeans_like.c", &["-pthread"]);
    let sums = Obj::Heap {
        kind: "calloc",
        line: b.line("MARK_SUMS"),
    };
    let store = b.line("MARK_ADD");
    let reduce = b.line("MARK_REDUCE");
    let mut probs = Problems::default();
    for opt in OPTS {
        let r = b.run(opt, &[], &[], "");
        let mut p = Vec::new();
        // Every finding (--min-speedup 0): the sums are one false-sharing finding over the
        // blocks of every iteration.
        let fs: Vec<&Finding> = r
            .actual()
            .into_iter()
            .filter(|f| f.objects.iter().any(|o| sums.matches(o, &r.file)))
            .collect();
        if fs.len() != 1 || fs[0].kind != Kind::FalseSharing {
            p.push(format!(
                "{} findings name the {}, expected one false-sharing finding",
                fs.len(),
                sums.describe(&r.file)
            ));
        }
        if let Some(f) = fs.first() {
            // One finding for the blocks of every iteration that shared: all from one site.
            if !f.objects.iter().all(|o| sums.matches(o, &r.file)) {
                p.push(format!(
                    "the sums finding has objects other than the {}",
                    sums.describe(&r.file)
                ));
            }
            check_places(&mut p, f, &r.file, &[(store, true)], &[store, reduce]);
        }
        let all = r.findings().len();
        if all > 10 {
            p.push(format!("{all} findings in all, expected at most 10"));
        }
        // What a user sees by default.
        let text = sharing_text(&r.profile, &[]);
        if text.len() > 40 {
            p.push(format!(
                "the sharing section has {} lines, expected at most 40:\n{}",
                text.len(),
                text.join("\n")
            ));
        }
        let dflt = report(&r.profile, &[]);
        let sh = dflt.sharing.as_ref();
        let listed = sh.is_some_and(|s| {
            s.findings.iter().any(|f| {
                f.kind == Kind::FalseSharing && f.objects.iter().any(|o| sums.matches(o, &r.file))
            })
        });
        let counted = sh.is_some_and(|s| {
            s.below_threshold.iter().any(|b| {
                b.kind == Kind::FalseSharing
                    && b.largest_at.as_deref() == Some(&format!("{}:{store}", r.file))
            })
        });
        if !listed && !counted {
            p.push(format!(
                "the default report neither lists the sums' false sharing nor counts it at {}:{store}:\n{}",
                r.file,
                text.join("\n")
            ));
        }
        probs.run(&r, p);
    }
    probs.finish();
}

/// Per-thread structs aligned to 64 bytes, two fields written by each thread: no finding, not
/// even latent (it used to say "pad to 128 bytes", which measured no gain).
#[test]
fn aligned_per_thread_structs_have_no_latent_finding() {
    let b = Built::new("aligned_struct.c", &["-pthread"]);
    let mut probs = Problems::default();
    for opt in OPTS {
        for (mode, n) in [("global", 4), ("heap", 3)] {
            let r = b.run(opt, &[mode, &n.to_string()], &[], "");
            let mut p: Vec<String> = r
                .findings()
                .iter()
                .map(|f| {
                    format!(
                        "finding #{}: {:?} on 64-byte-aligned per-thread structs, expected none",
                        f.rank, f.kind
                    )
                })
                .collect();
            if r.report.sharing.is_none() {
                p.push("the report has no sharing section".into());
            }
            probs.run(&r, p);
        }
    }
    probs.finish();
}

/// Four threads write interleaved elements of one calloc'ed block of 64 longs: one finding for
/// the block, over exactly the lines of the block that hold two or more threads' elements,
/// with the block's elements as words.
#[test]
fn lines_of_one_calloc_block_are_one_finding() {
    let b = Built::new("calloc_lines.c", &["-pthread"]);
    let obj = Obj::Heap {
        kind: "calloc",
        line: b.line("MARK_CALLOC"),
    };
    let store = b.line("MARK_STORE");
    let reduce = b.line("MARK_REDUCE");
    let mut probs = Problems::default();
    for opt in OPTS {
        let r = b.run(opt, &[], &[], "");
        let mut p = Vec::new();
        let all = r.findings();
        if all.len() != 1 {
            p.push(format!("{} findings, expected exactly one", all.len()));
        }
        if let Some(f) = all.first() {
            if let Some(o) = f.objects.iter().find(|o| obj.matches(o, &r.file)) {
                // Lines holding elements of two or more threads (k % 4).
                let mut want: Vec<u64> = Vec::new();
                for line in (o.start & !63..o.start + 512).step_by(64) {
                    let threads: BTreeSet<u64> = (0..64u64)
                        .filter(|k| (o.start + 8 * k) & !63 == line)
                        .map(|k| k % 4)
                        .collect();
                    if threads.len() >= 2 {
                        want.push(line);
                    }
                }
                let mut got = f.lines.clone();
                got.sort();
                if got != want {
                    p.push(format!(
                        "lines {}, expected the {} lines of the block holding two threads' elements: {}",
                        hex_list(&got),
                        want.len(),
                        hex_list(&want)
                    ));
                }
            }
            if f.kind != Kind::FalseSharing {
                p.push(format!("kind {:?}, expected false_sharing", f.kind));
            }
            if f.objects.len() != 1 || !obj.matches(&f.objects[0], &r.file) {
                p.push(format!(
                    "objects should be exactly the {}",
                    obj.describe(&r.file)
                ));
            }
            // Every word an element at its offset, written by thread k % 4 + 1 alone; the
            // words of three or four threads (one may finish before the lines are tracked).
            let mut writers = BTreeSet::new();
            for w in &f.words {
                let ok = w.object_offset.is_some_and(|o| {
                    o % 8 == 0 && o < 512 && w.writers == [(o / 8 % 4) as u32 + 1]
                });
                if !ok {
                    p.push(format!(
                        "word at object offset {:?} written by {:?}: expected element k at 8k written by thread k % 4 + 1",
                        w.object_offset, w.writers
                    ));
                }
                writers.extend(w.writers.iter().copied());
            }
            if writers.len() < 3 {
                p.push(format!(
                    "words of threads {writers:?}, expected three or four"
                ));
            }
            if f.stride != Some(8) {
                p.push(format!("stride {:?}, expected 8", f.stride));
            }
            check_places(&mut p, f, &r.file, &[(store, true)], &[store, reduce]);
        }
        probs.run(&r, p);
    }
    probs.finish();
}

// calibration

/// `profcc calibrate` keeps this machine's figures in `$XDG_CACHE_HOME/profcc/calibration.json`
/// as it printed them (or, on a machine too busy to measure, says so and writes nothing); an
/// instrumented program finds its machine's entry there, and the prediction of its false
/// sharing uses the entry's contended slowdown.
#[test]
fn calibration_reaches_the_prediction() {
    use profcc_analysis::sharing::Calibration;
    let cache = tempfile::tempdir().unwrap();
    let file = cache.path().join("profcc/calibration.json");
    let key = this_machine_key();
    let out = output_within(
        Command::new(profcc())
            .args(["calibrate", "--batches", "10", "--increments", "2000000"])
            .env("XDG_CACHE_HOME", cache.path()),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.success() {
        let list: Vec<Calibration> =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(list.len(), 1, "{list:?}");
        let c = &list[0];
        assert_eq!(c.key, key);
        assert!(
            stdout.contains(&format!("{key}: {:.1} ns per line transfer", c.transfer_ns)),
            "{stdout}"
        );
        match c.contended_slowdown {
            Some(x) => assert!(
                x > 0.0 && stdout.contains(&format!("{x:.2}x slower than of separate lines")),
                "{x} {stdout}"
            ),
            None => assert!(
                stdout.contains("contended slowdown not measured"),
                "{stdout}"
            ),
        }
    } else {
        // Too busy for a single pair of CPUs: nothing written.
        assert!(
            stderr.contains("run it again when the machine is quieter") && !file.exists(),
            "{stdout}{stderr}"
        );
    }
    // A hand-written entry for this machine: the profile carries it, and the prediction uses it.
    write_calibration(&file);
    let b = Built::new("counters_heap.c", &["-pthread"]);
    let cache_dir = cache.path().to_str().unwrap();
    let r = b.run(
        "-O2",
        &["malloc", "2"],
        &[("XDG_CACHE_HOME", cache_dir)],
        "",
    );
    let profile = profcc_schema::read(&r.profile).unwrap();
    let m = profile.sharing.as_ref().unwrap().machine.clone().unwrap();
    assert_eq!(
        (
            m.transfer_ns,
            m.contended_slowdown,
            m.calibration.as_deref()
        ),
        (Some(77.0), Some(3.25), Some(key.as_str()))
    );
    let fs: Vec<&Finding> = r
        .actual()
        .into_iter()
        .filter(|f| f.kind == Kind::FalseSharing)
        .collect();
    assert!(!fs.is_empty(), "{}", r.evidence());
    for f in fs {
        assert_eq!(
            (f.prediction.transfer_ns, f.prediction.contended_slowdown),
            (Some(77.0), 3.25),
            "{}",
            r.evidence()
        );
        // The prediction is for the threads on their own cores, whatever this run's overlap
        // (a loaded machine may run them in turns): its basis names the calibrated figure.
        assert!(
            f.prediction
                .basis
                .contains("3.25x slower contended (calibrated on this machine)"),
            "{}",
            f.prediction.basis
        );
    }
}
