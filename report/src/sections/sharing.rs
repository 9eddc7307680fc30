//! Cache-line sharing (false sharing, true sharing, read-mostly lines, latent false sharing):
//! the schema's `analyze` turns each profile's line records into findings; this section ranks
//! the findings of all inputs together and names what they are about: access sites as
//! `file:line` and function, heap objects by their allocation call, globals by the symbol
//! table (fields inside them by DWARF), stack objects by their thread.
//!
//! Line records refer to their own profile (site indices, stack ids, addresses), so findings
//! are analysed and resolved per input, before they are ranked together.

use super::{section, Options, Section};
use crate::dwarf;
use crate::fmt;
use crate::merge::Merged;
use crate::symbolize::{demangle, normalize_path, user_frame, Frame, Global};
use profcc_schema::sharing::{self, Confidence, Finding, Kind, Latent, ObjectKind, Settings};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

#[derive(Serialize)]
pub struct Sharing {
    /// The first input's settings (`fs_*` run-time options).
    pub settings: Settings,
    /// Lines tracked in detail, summed over inputs.
    pub lines_tracked: u64,
    /// Lines that passed a threshold after the runtime's table was full, summed over inputs.
    pub dropped_lines: u64,
    /// Findings of all inputs before `--top`.
    pub findings_total: usize,
    /// Actual findings by invalidations then writes, latent ones after them; at most `--top`.
    pub findings: Vec<FindingOut>,
    #[serde(skip)]
    several_inputs: bool,
}

#[derive(Serialize)]
pub struct FindingOut {
    pub rank: usize,
    /// Index of the input file the finding comes from (see `summary.inputs`).
    pub input: usize,
    pub kind: Kind,
    /// `Kind::as_str`: "false sharing", "true sharing", "read-mostly", "latent false sharing".
    pub kind_text: String,
    pub allocator_induced: bool,
    pub latent: Option<Latent>,
    /// Addresses of the line(s): one, or two for a latent pair.
    pub lines: Vec<u64>,
    pub invalidations: u64,
    pub reads: u64,
    pub writes: u64,
    pub threads: Vec<u32>,
    pub objects: Vec<ObjectOut>,
    pub words: Vec<WordOut>,
    pub places: Vec<Place>,
    pub stride: Option<u64>,
    pub predicted_saving_ns: u64,
    pub predicted_speedup: f64,
    pub confidence: Confidence,
    /// What to change, the object named in front (`` `counters`: threads write ... ``).
    pub fix: String,
}

#[derive(Serialize, Clone)]
pub struct ObjectOut {
    /// "heap", "global" (globals and statics) or "stack".
    pub kind: &'static str,
    /// Global: the symbol's demangled name (null when no symbol holds the address).
    pub name: Option<String>,
    /// Runtime address and size: the allocation, the symbol, or the thread's stack.
    pub start: u64,
    pub size: u64,
    pub alloc_kind: Option<String>,
    pub alloc_thread: Option<u32>,
    /// Heap: `file:line` of the allocation call's first frame in the program's own source.
    pub alloc_site: Option<String>,
    /// Heap: the allocation call stack, innermost first, as `function file:line`.
    pub alloc_stack: Vec<String>,
    pub stack_thread: Option<u32>,
    /// Heap: the function of `alloc_site`; stack: the function of the first place that writes
    /// the line.
    pub function: Option<String>,
}

#[derive(Serialize, Clone)]
pub struct WordOut {
    /// Index into the finding's `objects`.
    pub object: Option<usize>,
    pub object_offset: Option<u64>,
    /// The line's address and the word's offset inside it.
    pub line: u64,
    pub line_offset: u32,
    pub size: u32,
    /// Globals with DWARF types: `counters[1]`, `workers[2].count`, `s.b`.
    pub field: Option<String>,
    pub reads: u64,
    pub writes: u64,
    pub readers: Vec<u32>,
    pub writers: Vec<u32>,
}

#[derive(Serialize, Clone)]
pub struct Place {
    /// As in `access_sites`: the path the compiler recorded, `.`/`..` resolved.
    pub file: String,
    pub line: u32,
    pub function: String,
    /// Estimated accesses to the line(s) from this place while tracked.
    pub reads: u64,
    pub writes: u64,
}

pub fn build(m: &Merged, opts: &Options) -> Option<Box<dyn Section>> {
    let mut settings: Option<Settings> = None;
    let (mut lines_tracked, mut dropped_lines) = (0u64, 0u64);
    let mut all: Vec<(usize, Finding)> = Vec::new();
    for (i, inp) in m.inputs.iter().enumerate() {
        let Some(s) = &inp.profile.sharing else {
            continue;
        };
        settings.get_or_insert_with(|| s.settings.clone());
        lines_tracked += s.lines.len() as u64;
        dropped_lines += s.dropped_lines;
        all.extend(
            sharing::analyze_with(s, inp.profile.duration_ns, &|a| {
                m.global(i, a).map(|g| g.start)
            })
            .into_iter()
            .map(|f| (i, f)),
        );
    }
    let settings = settings?;
    // Stable: equal findings keep their input's order.
    all.sort_by(|(_, a), (_, b)| {
        let latent = |f: &Finding| f.kind == Kind::LatentFalseSharing;
        latent(a)
            .cmp(&latent(b))
            .then(b.invalidations.cmp(&a.invalidations))
            .then(b.writes.cmp(&a.writes))
    });
    let findings_total = all.len();
    all.truncate(opts.limit(findings_total));
    let mut fields = FieldRequests::default();
    let mut findings: Vec<FindingOut> = all
        .iter()
        .enumerate()
        .map(|(n, (i, f))| resolve(m, *i, f, n, &mut fields))
        .collect();
    fields.answer(&mut findings);
    for f in &mut findings {
        f.fix = format!("{}{}", subject(&f.objects), f.fix);
    }
    Some(Box::new(Sharing {
        settings,
        lines_tracked,
        dropped_lines,
        findings_total,
        findings,
        several_inputs: m.inputs.len() > 1,
    }))
}

section!(Sharing, "sharing");

/// A word inside a global: (finding, word, variable's file address, offset, variable's name).
type FieldRequest = (usize, usize, u64, u64, String);

/// Words inside globals whose field names DWARF may know, asked per module file at once.
#[derive(Default)]
struct FieldRequests {
    by_module: BTreeMap<String, Vec<FieldRequest>>,
}

impl FieldRequests {
    fn answer(self, findings: &mut [FindingOut]) {
        for (module, reqs) in self.by_module {
            let q: Vec<(u64, u64)> = reqs.iter().map(|r| (r.2, r.3)).collect();
            let paths = dwarf::field_paths(&module, &q);
            for ((f, w, _, _, name), path) in reqs.into_iter().zip(paths) {
                if let Some(p) = path {
                    findings[f].words[w].field = Some(format!("{name}{p}"));
                }
            }
        }
    }
}

/// Where a word's object ends up in the finding's object list.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Slot {
    /// An object of the finding as analysed (heap, stack, or a static line nothing names).
    Orig(usize),
    /// A global found in the symbol table, by runtime start.
    Global(u64),
}

fn resolve(
    m: &Merged,
    input: usize,
    f: &Finding,
    n: usize,
    fields: &mut FieldRequests,
) -> FindingOut {
    let p = &m.inputs[input].profile;
    let sample = p
        .sharing
        .as_ref()
        .map_or(1, |s| s.settings.sample.max(1) as u64);

    // Places: the line's sites by file:line and function, most accesses first.
    let mut places: Vec<Place> = Vec::new();
    for ls in &f.sites {
        let Some(s) = p.sites.get(ls.site as usize) else {
            continue;
        };
        let (file, function) = (normalize_path(&s.file), demangle(&s.function));
        let at = match places
            .iter()
            .position(|x| x.file == file && x.line == s.line && x.function == function)
        {
            Some(at) => at,
            None => {
                places.push(Place {
                    file,
                    line: s.line,
                    function,
                    reads: 0,
                    writes: 0,
                });
                places.len() - 1
            }
        };
        places[at].reads += ls.reads * sample;
        places[at].writes += ls.writes * sample;
    }
    places.sort_by(|a, b| {
        (b.reads + b.writes)
            .cmp(&(a.reads + a.writes))
            .then_with(|| a.file.cmp(&b.file))
            .then(a.line.cmp(&b.line))
    });
    let writing_function = places
        .iter()
        .find(|x| x.writes > 0)
        .or(places.first())
        .map(|x| x.function.clone());

    // Objects: statics are split by the symbols that hold the words.
    let mut slots: Vec<(Slot, ObjectOut, Option<Global>)> = Vec::new();
    let mut globals: HashMap<u64, Option<Global>> = HashMap::new();
    let mut slot_of = |slot: Slot, make: &dyn Fn() -> (ObjectOut, Option<Global>)| -> usize {
        if let Some(i) = slots.iter().position(|s| s.0 == slot) {
            return i;
        }
        let (o, g) = make();
        slots.push((slot, o, g));
        slots.len() - 1
    };
    let orig = |o: usize| (object_out(m, input, &f.objects[o], &writing_function), None);
    let mut words: Vec<(Option<usize>, WordOut)> = Vec::new();
    for w in &f.words {
        let addr = w.line + w.offset as u64;
        let kind = w.object.map(|o| f.objects[o].kind);
        let global = match kind {
            Some(ObjectKind::Heap) | Some(ObjectKind::Stack) => None,
            _ => globals
                .entry(addr)
                .or_insert_with(|| m.global(input, addr))
                .clone(),
        };
        let (slot, offset) = match (global, w.object) {
            (Some(g), _) => {
                let off = addr - g.start;
                let s = slot_of(Slot::Global(g.start), &|| {
                    (
                        ObjectOut {
                            kind: "global",
                            name: Some(g.name.clone()),
                            start: g.start,
                            size: g.size,
                            ..empty_object()
                        },
                        Some(g.clone()),
                    )
                });
                (Some(s), Some(off))
            }
            (None, Some(o)) => (Some(slot_of(Slot::Orig(o), &|| orig(o))), w.object_offset),
            (None, None) => (None, None),
        };
        words.push((
            slot,
            WordOut {
                object: slot,
                object_offset: offset,
                line: w.line,
                line_offset: w.offset,
                size: w.size,
                field: None,
                reads: w.reads,
                writes: w.writes,
                readers: w.readers.clone(),
                writers: w.writers.clone(),
            },
        ));
    }
    // Heap and stack objects no word points into (a latent finding keeps written words only).
    for (o, r) in f.objects.iter().enumerate() {
        if r.kind != ObjectKind::Static {
            slot_of(Slot::Orig(o), &|| orig(o));
        }
    }
    // Address order, and the words follow.
    let mut order: Vec<usize> = (0..slots.len()).collect();
    order.sort_by_key(|&i| slots[i].1.start);
    let mut new_index = vec![0; slots.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new;
    }
    let mut objects: Vec<ObjectOut> = Vec::with_capacity(slots.len());
    let mut global_of: Vec<Option<Global>> = Vec::with_capacity(slots.len());
    for &i in &order {
        objects.push(slots[i].1.clone());
        global_of.push(slots[i].2.clone());
    }
    let words: Vec<WordOut> = words
        .into_iter()
        .enumerate()
        .map(|(wi, (slot, mut w))| {
            w.object = slot.map(|s| new_index[s]);
            if let (Some(o), Some(off)) = (w.object, w.object_offset) {
                if let Some(g) = &global_of[o] {
                    fields.by_module.entry(g.module.clone()).or_default().push((
                        n,
                        wi,
                        g.file_address,
                        off,
                        g.name.clone(),
                    ));
                }
            }
            w
        })
        .collect();

    FindingOut {
        rank: n + 1,
        input,
        kind: f.kind,
        kind_text: f.kind.as_str().to_string(),
        allocator_induced: f.allocator_induced,
        latent: f.latent.clone(),
        lines: f.lines.clone(),
        invalidations: f.invalidations,
        reads: f.reads,
        writes: f.writes,
        threads: f.threads.clone(),
        objects,
        words,
        places,
        stride: f.stride,
        predicted_saving_ns: f.predicted_saving_ns,
        predicted_speedup: f.predicted_speedup,
        confidence: f.confidence,
        fix: f.fix.clone(),
    }
}

fn empty_object() -> ObjectOut {
    ObjectOut {
        kind: "global",
        name: None,
        start: 0,
        size: 0,
        alloc_kind: None,
        alloc_thread: None,
        alloc_site: None,
        alloc_stack: Vec::new(),
        stack_thread: None,
        function: None,
    }
}

fn object_out(
    m: &Merged,
    input: usize,
    o: &sharing::ObjectRef,
    writing_function: &Option<String>,
) -> ObjectOut {
    let base = ObjectOut {
        start: o.start,
        size: o.size,
        ..empty_object()
    };
    match o.kind {
        ObjectKind::Heap => {
            let stack: Vec<Frame> = o
                .alloc_stack
                .map(|id| m.stack(input, id))
                .unwrap_or_default();
            let user = user_frame(&stack);
            ObjectOut {
                kind: "heap",
                alloc_kind: o.alloc_kind.clone(),
                alloc_thread: o.alloc_thread,
                alloc_site: user.and_then(Frame::place),
                alloc_stack: stack.iter().map(frame_text).collect(),
                function: user.and_then(|f| f.function.clone()),
                ..base
            }
        }
        ObjectKind::Stack => ObjectOut {
            kind: "stack",
            stack_thread: o.stack_thread,
            function: writing_function.clone(),
            ..base
        },
        ObjectKind::Static => base,
    }
}

/// `function file:line` (or the raw place) for JSON stacks.
fn frame_text(f: &Frame) -> String {
    format!(
        "{} {}",
        f.function.as_deref().unwrap_or("??"),
        f.place().unwrap_or_else(|| f.raw_place())
    )
}

/// What the fix is about, to put in front of the schema's fix text.
fn subject(objects: &[ObjectOut]) -> String {
    let mut names: Vec<String> = Vec::new();
    for o in objects {
        let s = match (o.kind, &o.name) {
            ("global", Some(n)) => format!("`{n}`"),
            ("global", None) => format!("the static data at {:#x}", o.start),
            ("stack", _) => match o.stack_thread {
                Some(t) => format!("the stack of thread {t}"),
                None => "a thread's stack".into(),
            },
            _ => match (&o.alloc_kind, &o.alloc_site) {
                (Some(k), Some(s)) => format!("the {k} block from {s}"),
                (None, Some(s)) => format!("the heap block from {s}"),
                _ => format!("the heap block at {:#x}", o.start),
            },
        };
        if !names.contains(&s) {
            names.push(s);
        }
    }
    match names.len() {
        0 => String::new(),
        1 => format!("{}: ", names[0]),
        _ => {
            let last = names.pop().unwrap();
            format!("{} and {last}: ", names.join(", "))
        }
    }
}

fn ids(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

fn threads_text(v: &[u32]) -> String {
    format!("thread{} {}", if v.len() == 1 { "" } else { "s" }, ids(v))
}

fn object_text(o: &ObjectOut) -> String {
    match o.kind {
        "heap" => {
            let mut s = format!("heap {}", fmt::bytes(o.size));
            if let Some(k) = &o.alloc_kind {
                s.push_str(&format!(" from {k}"));
            }
            match &o.alloc_site {
                Some(site) => s.push_str(&format!(" at {site}")),
                None if o.alloc_stack.is_empty() => s.push_str(" (no allocation stack)"),
                None => {}
            }
            if let Some(f) = &o.function {
                s.push_str(&format!(" in {f}"));
            }
            if let Some(t) = o.alloc_thread {
                s.push_str(&format!(" (thread {t})"));
            }
            s
        }
        "stack" => {
            let mut s = match o.stack_thread {
                Some(t) => format!("stack of thread {t}"),
                None => "a thread's stack".into(),
            };
            if let Some(f) = &o.function {
                s.push_str(&format!(", written by {f}"));
            }
            s
        }
        _ => match &o.name {
            Some(n) => format!("global `{n}` ({})", fmt::bytes(o.size)),
            None => format!(
                "static data at {:#x} (no symbol holds it: thread-local, an anonymous mapping, or a stripped binary)",
                o.start
            ),
        },
    }
}

fn word_text(w: &WordOut, objects: &[ObjectOut]) -> String {
    let label = match (&w.field, w.object, w.object_offset) {
        (Some(f), _, _) => f.clone(),
        (None, Some(o), Some(off)) if objects[o].kind != "stack" => {
            let name = match (&objects[o].name, objects.len()) {
                (Some(n), _) => n.clone(),
                (None, 1) => String::new(),
                (None, _) => format!("[{}]", o + 1),
            };
            format!("{name}+{off}..{}", off + w.size.max(1) as u64)
        }
        _ => format!(
            "{:#x}+{}..{}",
            w.line,
            w.line_offset,
            w.line_offset + w.size.max(1)
        ),
    };
    let only_readers: Vec<u32> = w
        .readers
        .iter()
        .copied()
        .filter(|r| !w.writers.contains(r))
        .collect();
    let mut who = Vec::new();
    if !w.writers.is_empty() {
        who.push(format!("written by {}", threads_text(&w.writers)));
    }
    if !only_readers.is_empty() {
        who.push(format!("read by {}", threads_text(&only_readers)));
    }
    format!("{label} {}", who.join(", "))
}

fn counts_text(reads: u64, writes: u64) -> String {
    match (reads, writes) {
        (0, w) => format!("{} writes", fmt::short(w)),
        (r, 0) => format!("{} reads", fmt::short(r)),
        (r, w) => format!("{} reads, {} writes", fmt::short(r), fmt::short(w)),
    }
}

impl Sharing {
    fn render(&self, out: &mut String) {
        let s = &self.settings;
        out.push('\n');
        if self.findings.is_empty() {
            out.push_str(&format!(
                "Cache-line sharing: no contended lines ({} lines tracked; threshold {} invalidations)\n",
                self.lines_tracked, s.threshold
            ));
            return;
        }
        let shown = if self.findings.len() < self.findings_total {
            format!(
                ", {} of {} findings",
                self.findings.len(),
                self.findings_total
            )
        } else {
            String::new()
        };
        out.push_str(&format!(
            "Cache-line sharing (model: each thread its own core; {} ns per invalidation assumed{shown})\n",
            s.invalidation_ns
        ));
        if s.sample > 1 {
            out.push_str(&format!(
                "  one access in {} per thread to a tracked line was analysed; counts are estimates\n",
                s.sample
            ));
        }
        if self.dropped_lines > 0 {
            out.push_str(&format!(
                "  {} more contended lines were not tracked: the table of {} lines was full (raise fs_max_lines)\n",
                fmt::count(self.dropped_lines),
                s.max_lines
            ));
        }
        for f in &self.findings {
            self.render_finding(f, out);
        }
    }

    fn render_finding(&self, f: &FindingOut, out: &mut String) {
        let input = if self.several_inputs {
            format!("[{}] ", f.input)
        } else {
            String::new()
        };
        let mut kind = f.kind_text.clone();
        if f.allocator_induced {
            kind.push_str(" (allocator-induced)");
        }
        let conf = match f.confidence {
            Confidence::High => "high",
            Confidence::Medium => "medium",
            Confidence::Low => "low",
        };
        match &f.latent {
            Some(l) => {
                let mut why = Vec::new();
                if l.prefetch_pair {
                    why.push("adjacent-line prefetch pair".to_string());
                }
                if let Some(d) = l.shift {
                    why.push(format!("{d}-byte shift of the data would share a line"));
                }
                out.push_str(&format!(
                    " #{} {input}{kind} ({}): no invalidations yet, about {} writes, {}; lines {} (finding confidence {conf})\n",
                    f.rank,
                    why.join("; "),
                    fmt::short(f.writes),
                    threads_text(&f.threads),
                    f.lines
                        .iter()
                        .map(|l| format!("{l:#x}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                ));
            }
            None => {
                let gain = if f.predicted_speedup >= 1.1 {
                    format!("up to {:.1}x faster", f.predicted_speedup)
                } else if f.predicted_saving_ns > 0 {
                    format!(
                        "saves up to {} ({:.2}x)",
                        fmt::duration(f.predicted_saving_ns),
                        f.predicted_speedup
                    )
                } else {
                    "little gain expected".into()
                };
                out.push_str(&format!(
                    " #{} {input}{kind}: {} invalidations, {}; fixing it: {gain} (finding confidence {conf})\n",
                    f.rank,
                    fmt::short(f.invalidations),
                    threads_text(&f.threads),
                ));
            }
        }
        match f.objects.as_slice() {
            [] => {}
            [one] => out.push_str(&format!("    object: {}\n", object_text(one))),
            many => {
                for (i, o) in many.iter().enumerate() {
                    out.push_str(&format!("    object [{}]: {}\n", i + 1, object_text(o)));
                }
            }
        }
        const WORDS: usize = 8;
        if !f.words.is_empty() {
            let mut w: Vec<String> = f
                .words
                .iter()
                .take(WORDS)
                .map(|w| word_text(w, &f.objects))
                .collect();
            if f.words.len() > WORDS {
                w.push(format!("+{} more", f.words.len() - WORDS));
            }
            out.push_str(&format!("    words: {}\n", w.join("; ")));
        }
        const PLACES: usize = 4;
        if !f.places.is_empty() {
            let mut p: Vec<String> = f
                .places
                .iter()
                .take(PLACES)
                .map(|p| {
                    let at = if p.line > 0 {
                        format!("{}:{}", p.file, p.line)
                    } else if p.file.is_empty() {
                        "(no debug location)".into()
                    } else {
                        p.file.clone()
                    };
                    format!(
                        "{at} in {} ({})",
                        p.function,
                        counts_text(p.reads, p.writes)
                    )
                })
                .collect();
            if f.places.len() > PLACES {
                p.push(format!("+{} more", f.places.len() - PLACES));
            }
            out.push_str(&format!("    at: {}\n", p.join(", ")));
        }
        out.push_str(&format!("    fix: {}\n", f.fix));
    }
}
