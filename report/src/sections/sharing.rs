//! Cache-line sharing (false sharing, true sharing, read-mostly lines, latent false sharing):
//! `profcc_analysis` turns each profile's line records into ranked findings (the same ones the
//! exit summary prints); this section orders the findings of all inputs with the analysis's
//! ranking and names what they are about: access sites as
//! `file:line` and function, heap objects by their allocation call, globals by the symbol
//! table (fields inside them by DWARF), stack objects by their thread.
//!
//! Line records refer to their own profile (site indices, stack ids, addresses), so findings
//! are analysed and resolved per input, before they are ranked together.

use super::Options;
use crate::dwarf;
use crate::merge::Merged;
// The model's finding, object and word; `Finding`, `ObjectKind` here are the analysis's.
use crate::model::{
    self, Finding as FindingOut, Object as ObjectOut, Place, Sharing, Word as WordOut,
};
use crate::symbolize::{demangle, is_wrapper, normalize_path, user_frame_index, Frame, Global};
use profcc_analysis::sharing::{self as analysis, Finding};
use profcc_schema::sharing::{self, ObjectKind, Settings};
use std::collections::{BTreeMap, HashMap};

pub fn build(m: &Merged, opts: &Options) -> Option<Sharing> {
    let mut settings: Option<Settings> = None;
    let (mut lines_tracked, mut dropped_lines) = (0u64, 0u64);
    let mut all: Vec<(usize, Finding)> = Vec::new();
    let mut below: Vec<analysis::BelowThreshold> = Vec::new();
    for (i, inp) in m.inputs.iter().enumerate() {
        let Some(s) = &inp.profile.sharing else {
            continue;
        };
        settings.get_or_insert_with(|| s.settings.clone());
        lines_tracked += s.lines.len() as u64;
        dropped_lines += s.dropped_lines;
        let (listed, b) = analysis::split_listed(
            analysis::findings(&inp.profile, &|a| m.global(i, a).map(|g| g.start)),
            &inp.profile.sites,
            opts.min_speedup,
        );
        all.extend(listed.into_iter().map(|f| (i, f)));
        add_below(&mut below, b);
    }
    let settings = settings?;
    // The analysis's ranking; stable: equal findings keep their input's order.
    all.sort_by(|(_, a), (_, b)| analysis::rank_order(a, b));
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
    Some(Sharing {
        settings,
        lines_tracked,
        dropped_lines,
        findings_total,
        findings,
        min_speedup: opts.min_speedup,
        below_threshold: below,
    })
}

/// Add one input's below-threshold counts to those of the inputs before it (per kind).
fn add_below(all: &mut Vec<analysis::BelowThreshold>, more: Vec<analysis::BelowThreshold>) {
    for b in more {
        match all.iter_mut().find(|x| x.kind == b.kind) {
            Some(x) => {
                x.findings += b.findings;
                x.lines += b.lines;
                if b.largest_speedup > x.largest_speedup {
                    x.largest_speedup = b.largest_speedup;
                    x.largest_at = b.largest_at;
                }
            }
            None => all.push(b),
        }
    }
    all.sort_by_key(|b| b.kind);
}

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
        places[at].reads += ls.reads;
        places[at].writes += ls.writes;
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
                            kind: model::ObjectKind::Global,
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
        more_threads: f.more_threads,
        objects,
        words,
        places,
        stride: f.stride,
        predicted_saving_ns: f.predicted_saving_ns,
        predicted_speedup: f.predicted_speedup,
        prediction: f.prediction.clone(),
        confidence: f.confidence,
        fix: f.fix.clone(),
    }
}

fn empty_object() -> ObjectOut {
    ObjectOut {
        kind: model::ObjectKind::Global,
        name: None,
        start: 0,
        size: 0,
        alloc_kind: None,
        alloc_thread: None,
        alloc_site: None,
        alloc_stack: Vec::new(),
        alloc_wrappers: Vec::new(),
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
            // The first frame outside allocation wrappers names it; the wrappers it skipped
            // are listed ("calloc in mem_calloc (memory.c:12), called from main.c:88").
            let wrappers = &m.inputs[input].profile.alloc_wrappers;
            let at = user_frame_index(&stack, &|f| is_wrapper(f, wrappers));
            let user = at.map(|i| &stack[i]);
            let skipped = stack[..at.unwrap_or(0)]
                .iter()
                .filter(|f| is_wrapper(f, wrappers))
                .map(|f| {
                    let name = f.function.as_deref().unwrap_or("??");
                    match f.place() {
                        Some(p) => format!("{name} ({p})"),
                        None => name.to_string(),
                    }
                })
                .collect();
            ObjectOut {
                kind: model::ObjectKind::Heap,
                alloc_kind: o.alloc_kind.clone(),
                alloc_thread: o.alloc_thread,
                alloc_site: user.and_then(Frame::place),
                alloc_stack: stack.iter().map(Frame::short).collect(),
                alloc_wrappers: skipped,
                function: user.and_then(|f| f.function.clone()),
                ..base
            }
        }
        ObjectKind::Stack => ObjectOut {
            kind: model::ObjectKind::Stack,
            stack_thread: o.stack_thread,
            function: writing_function.clone(),
            ..base
        },
        ObjectKind::Static => base,
    }
}

/// What the fix is about, to put in front of the analysis's fix text.
fn subject(objects: &[ObjectOut]) -> String {
    let mut names: Vec<String> = Vec::new();
    for o in objects {
        let s = match (o.kind, &o.name) {
            (model::ObjectKind::Global, Some(n)) => format!("`{n}`"),
            (model::ObjectKind::Global, None) => format!("the static data at {:#x}", o.start),
            (model::ObjectKind::Stack, _) => match o.stack_thread {
                Some(t) => format!("the stack of thread {t}"),
                None => "a thread's stack".into(),
            },
            (model::ObjectKind::Heap, _) => match (&o.alloc_kind, &o.alloc_site) {
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
