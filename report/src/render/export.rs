//! The exports other viewers open (issue 44; docs/report.md, "Exports"): KCachegrind's
//! callgrind format, pprof's gzipped `profile.proto`, speedscope's JSON and collapsed stacks
//! (flamegraph.pl, inferno).
//!
//! Every export is drawn from one list of [`Sample`]s built from the model by [`samples`]: a
//! call stack (innermost first) and its cost of each [`Cost`] type:
//! - an allocation site: its stack, with the bytes and calls it allocated;
//! - an access line (`access_sites`): the line's function at `file:line` (access sites have no
//!   call stacks), with its accesses, reads and writes, once per function the line was
//!   compiled into;
//! - a NUMA site: remote accesses at the line that brought the page in; a first-touch row:
//!   the pages first touched at a line, by a thread;
//! - a sharing finding: its invalidations, split over its places by their writes.
//!
//! Each export then lays the samples out in its viewer's format; none runs a process.

use crate::model::{Frame, Report};
use crate::symbolize::user_frame;
use std::collections::{BTreeMap, HashMap};
use std::io::Write;

/// A cost type: what a sample's value counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum Cost {
    /// Bytes allocated (allocation stacks)
    AllocBytes,
    /// Allocation calls (allocation stacks)
    AllocCalls,
    /// Memory accesses (function and source line)
    Accesses,
    /// Accesses that read
    Reads,
    /// Accesses that write
    Writes,
    /// NUMA remote accesses (needs PROFCC_INSTRUMENT=numa)
    RemoteAccesses,
    /// Pages first touched (needs PROFCC_INSTRUMENT=numa)
    FirstTouches,
    /// Cache-line invalidations of the sharing findings
    Invalidations,
}

/// Number of cost types (the length of [`Sample::values`]).
pub const COSTS: usize = 8;

impl Cost {
    /// Every cost type, in the order the exports list them.
    pub const ALL: [Cost; COSTS] = [
        Cost::AllocBytes,
        Cost::AllocCalls,
        Cost::Accesses,
        Cost::Reads,
        Cost::Writes,
        Cost::RemoteAccesses,
        Cost::FirstTouches,
        Cost::Invalidations,
    ];

    /// The `--cost` value.
    pub fn cli_name(self) -> &'static str {
        match self {
            Cost::AllocBytes => "alloc-bytes",
            Cost::AllocCalls => "alloc-calls",
            Cost::Accesses => "accesses",
            Cost::Reads => "reads",
            Cost::Writes => "writes",
            Cost::RemoteAccesses => "remote-accesses",
            Cost::FirstTouches => "first-touches",
            Cost::Invalidations => "invalidations",
        }
    }

    /// Words for a person (speedscope's profile names, messages).
    pub fn describe(self) -> &'static str {
        match self {
            Cost::AllocBytes => "allocated bytes",
            Cost::AllocCalls => "allocation calls",
            Cost::Accesses => "accesses",
            Cost::Reads => "reads",
            Cost::Writes => "writes",
            Cost::RemoteAccesses => "remote accesses",
            Cost::FirstTouches => "pages first touched",
            Cost::Invalidations => "invalidations",
        }
    }

    /// The callgrind event name.
    pub fn event(self) -> &'static str {
        match self {
            Cost::AllocBytes => "AllocBytes",
            Cost::AllocCalls => "AllocCalls",
            Cost::Accesses => "Accesses",
            Cost::Reads => "Reads",
            Cost::Writes => "Writes",
            Cost::RemoteAccesses => "RemoteAccesses",
            Cost::FirstTouches => "FirstTouches",
            Cost::Invalidations => "Invalidations",
        }
    }

    /// pprof's sample type and unit.
    pub fn pprof_type(self) -> (&'static str, &'static str) {
        match self {
            Cost::AllocBytes => ("alloc_space", "bytes"),
            Cost::AllocCalls => ("alloc_objects", "count"),
            Cost::Accesses => ("accesses", "count"),
            Cost::Reads => ("reads", "count"),
            Cost::Writes => ("writes", "count"),
            Cost::RemoteAccesses => ("remote_accesses", "count"),
            Cost::FirstTouches => ("first_touches", "pages"),
            Cost::Invalidations => ("invalidations", "count"),
        }
    }

    fn is_bytes(self) -> bool {
        self == Cost::AllocBytes
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One frame of a sample's stack: a function and the line in it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Loc {
    /// The demangled function, or `module+0xoffset` when it could not be symbolised.
    pub function: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    /// Inlined into the next frame of the stack (same return address).
    pub inlined: bool,
}

/// A label of a sample (pprof's labels).
#[derive(Debug, Clone, PartialEq)]
pub enum Label {
    Str(&'static str, String),
    Num(&'static str, i64),
}

/// One call stack and its costs.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Innermost first; never empty.
    pub stack: Vec<Loc>,
    /// The cost is per source line of the innermost function (access sites, NUMA sites,
    /// sharing places): flame graphs show `file:line` as a frame under the function.
    pub line_leaf: bool,
    /// Indexed by [`Cost`].
    pub values: [u64; COSTS],
    pub labels: Vec<Label>,
    /// The input (MPI rank's profile) it comes from, in a report of several profiles (None:
    /// one profile).
    pub input: Option<usize>,
}

const UNKNOWN: &str = "[unknown]";

fn loc_of(f: &Frame) -> Loc {
    Loc {
        function: f.function.clone().unwrap_or_else(|| f.raw_place()),
        file: f.file.clone(),
        line: f.line.filter(|&l| l > 0),
        inlined: f.inlined,
    }
}

/// `file:line` (as the NUMA and first-touch rows write places) into its parts.
fn split_place(place: &str) -> (Option<String>, Option<u32>) {
    match place.rsplit_once(':') {
        Some((file, line)) if line.parse::<u32>().is_ok() => {
            (Some(file.to_string()), line.parse().ok())
        }
        _ => (Some(place.to_string()), None),
    }
}

fn line_loc(function: Option<&str>, place: Option<&str>) -> Loc {
    let (file, line) = place.map(split_place).unwrap_or((None, None));
    Loc {
        function: function
            .filter(|f| !f.is_empty())
            .unwrap_or(UNKNOWN)
            .to_string(),
        file,
        line,
        inlined: false,
    }
}

fn one_cost(cost: Cost, v: u64) -> [u64; COSTS] {
    let mut values = [0; COSTS];
    values[cost.index()] = v;
    values
}

/// `total` split over `weights` in proportion, the remainder to the largest weight (the parts
/// sum to `total` exactly). All-zero weights split evenly.
fn split(total: u64, weights: &[u64]) -> Vec<u64> {
    if weights.is_empty() {
        return Vec::new();
    }
    let w: Vec<u64> = if weights.iter().all(|&w| w == 0) {
        vec![1; weights.len()]
    } else {
        weights.to_vec()
    };
    let sum: u128 = w.iter().map(|&x| x as u128).sum();
    let mut parts: Vec<u64> = w
        .iter()
        .map(|&x| (total as u128 * x as u128 / sum) as u64)
        .collect();
    let rest = total - parts.iter().sum::<u64>();
    let biggest = (0..w.len())
        .max_by_key(|&i| (w[i], usize::MAX - i))
        .unwrap();
    parts[biggest] += rest;
    parts
}

/// Every sample of the report, in model order. In a report of several profiles each sample
/// comes from one input (allocation sites and access lines split by their per-input counts)
/// and has a `rank` label: the MPI rank its launcher gave the process, the input's index
/// without one.
pub fn samples(r: &Report) -> Vec<Sample> {
    let several = r.summary.inputs.len() > 1;
    let one = |input: usize| several.then_some(input);
    // A thread's NUMA node (its input's NUMA section: the node its CPUs were on, or its home
    // under `emulate`), for the samples that name threads.
    let node_of = |input: usize, thread: u32| {
        r.numa
            .iter()
            .flat_map(|n| &n.inputs)
            .filter(|n| n.input == input)
            .flat_map(|n| &n.threads)
            .find(|x| x.thread == thread)
            .and_then(|x| x.node)
    };
    let mut out = Vec::new();
    // Allocation sites, access lines and NUMA access sites carry no thread or node: the
    // profile counts them per site over all threads (a site's `threads` is how many;
    // docs/report.md, "Exports").
    for a in &r.alloc_sites.sites {
        let mut stack: Vec<Loc> = a.stack.iter().map(loc_of).collect();
        if stack.is_empty() {
            stack.push(line_loc(None, None));
        }
        let mut labels = vec![Label::Str("kind", a.kind.clone())];
        if let Some(u) = user_frame(&a.stack) {
            labels.push(Label::Str(
                "object",
                format!(
                    "heap block allocated at {}",
                    u.place().unwrap_or_else(|| u.raw_place())
                ),
            ));
        }
        let per: Vec<(Option<usize>, u64, u64)> = if several && !a.by_input.is_empty() {
            a.by_input
                .iter()
                .map(|p| (Some(p.input), p.count, p.bytes))
                .collect()
        } else {
            vec![(None, a.count, a.bytes)]
        };
        for (input, count, bytes) in per {
            let mut values = one_cost(Cost::AllocBytes, bytes);
            values[Cost::AllocCalls.index()] = count;
            out.push(Sample {
                stack: stack.clone(),
                line_leaf: false,
                values,
                labels: labels.clone(),
                input,
            });
        }
    }
    for l in &r.access_sites.lines {
        // Per function the line was compiled into and input: (accesses, reads, writes).
        let mut by_function: BTreeMap<(&str, Option<usize>), [u64; 3]> = BTreeMap::new();
        for s in &l.sites {
            let per: Vec<(Option<usize>, u64)> = if several && !s.by_input.is_empty() {
                s.by_input
                    .iter()
                    .map(|p| (Some(p.input), p.count))
                    .collect()
            } else {
                vec![(None, s.count)]
            };
            for (input, count) in per {
                let e = by_function.entry((s.function.as_str(), input)).or_default();
                e[0] += count;
                if s.kind.reads() {
                    e[1] += count;
                }
                if s.kind.writes() {
                    e[2] += count;
                }
            }
        }
        for ((function, input), [accesses, reads, writes]) in by_function {
            let mut values = one_cost(Cost::Accesses, accesses);
            values[Cost::Reads.index()] = reads;
            values[Cost::Writes.index()] = writes;
            out.push(Sample {
                stack: vec![Loc {
                    function: if function.is_empty() {
                        UNKNOWN.to_string()
                    } else {
                        function.to_string()
                    },
                    file: Some(l.file.clone()),
                    line: Some(l.line).filter(|&n| n > 0),
                    inlined: false,
                }],
                line_leaf: true,
                values,
                labels: Vec::new(),
                input,
            });
        }
    }
    for n in r.numa.iter().flat_map(|n| &n.inputs) {
        for s in n.sites.iter().filter(|s| s.remote > 0) {
            let labels = Vec::new();
            out.push(Sample {
                stack: vec![line_loc(s.function.as_deref(), s.place.as_deref())],
                line_leaf: true,
                values: one_cost(Cost::RemoteAccesses, s.remote),
                labels,
                input: one(n.input),
            });
        }
        for t in n.first_touch.iter().filter(|t| t.pages > 0) {
            let mut labels = Vec::new();
            if let Some(thread) = t.thread {
                labels.push(Label::Num("thread", thread as i64));
                if let Some(node) = node_of(n.input, thread) {
                    labels.push(Label::Num("node", node as i64));
                }
            }
            if let Some(o) = &t.object {
                labels.push(Label::Str("object", o.clone()));
            }
            out.push(Sample {
                stack: vec![line_loc(t.function.as_deref(), t.place.as_deref())],
                line_leaf: true,
                values: one_cost(Cost::FirstTouches, t.pages),
                labels,
                input: one(n.input),
            });
        }
    }
    for f in r.sharing.iter().flat_map(|s| &s.findings) {
        if f.invalidations == 0 {
            continue;
        }
        let mut labels = vec![Label::Str("sharing", f.kind_text.clone())];
        for o in &f.objects {
            let name = o
                .name
                .clone()
                .or_else(|| {
                    o.alloc_site
                        .as_ref()
                        .map(|s| format!("heap block allocated at {s}"))
                })
                .unwrap_or_else(|| format!("{} object at {:#x}", o.kind.as_str(), o.start));
            labels.push(Label::Str("object", name));
        }
        let mut nodes = Vec::new();
        for &t in &f.threads {
            labels.push(Label::Num("thread", t as i64));
            if let Some(node) = node_of(f.input, t).filter(|n| !nodes.contains(n)) {
                nodes.push(node);
            }
        }
        for node in nodes {
            labels.push(Label::Num("node", node as i64));
        }
        let weights: Vec<u64> = f.places.iter().map(|p| p.writes).collect();
        let parts = split(f.invalidations, &weights);
        if f.places.is_empty() {
            out.push(Sample {
                stack: vec![line_loc(None, None)],
                line_leaf: true,
                values: one_cost(Cost::Invalidations, f.invalidations),
                labels,
                input: one(f.input),
            });
            continue;
        }
        for (p, part) in f.places.iter().zip(parts) {
            if part == 0 {
                continue;
            }
            out.push(Sample {
                stack: vec![Loc {
                    function: if p.function.is_empty() {
                        UNKNOWN.to_string()
                    } else {
                        p.function.clone()
                    },
                    file: Some(p.file.clone()),
                    line: Some(p.line).filter(|&n| n > 0),
                    inlined: false,
                }],
                line_leaf: true,
                values: one_cost(Cost::Invalidations, part),
                labels: labels.clone(),
                input: one(f.input),
            });
        }
    }
    for s in &mut out {
        if let Some(input) = s.input {
            s.labels.push(Label::Num("rank", rank_of(r, input) as i64));
        }
    }
    out
}

/// The MPI rank of an input's process; the input's index without one.
pub fn rank_of(r: &Report, input: usize) -> u32 {
    r.summary
        .inputs
        .get(input)
        .and_then(|i| i.rank)
        .unwrap_or(input as u32)
}

/// Each cost type's sum over `samples`.
pub fn totals(samples: &[Sample]) -> [u64; COSTS] {
    let mut t = [0u64; COSTS];
    for s in samples {
        for (x, v) in t.iter_mut().zip(s.values) {
            *x += v;
        }
    }
    t
}

/// The error of an export with nothing in it.
fn nothing() -> String {
    "nothing to export: the profile has no allocation, access, NUMA or sharing records \
     (was the program built with profcc?)"
        .to_string()
}

/// The cost types the samples have, as `--cost` names.
fn present(t: &[u64; COSTS]) -> String {
    Cost::ALL
        .iter()
        .filter(|c| t[c.index()] > 0)
        .map(|c| c.cli_name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A flame-graph frame name: no `;` (the frame separator) or line breaks.
fn frame_name(s: &str) -> String {
    s.replace(';', ":").replace(['\n', '\r'], " ")
}

/// `file:line` of a leaf, `file` or `[unknown]`.
fn place_of(l: &Loc) -> String {
    match (&l.file, l.line) {
        (Some(f), Some(n)) => format!("{f}:{n}"),
        (Some(f), None) => f.clone(),
        _ => UNKNOWN.to_string(),
    }
}

/// A sample's flame-graph frames, root first: function names, then `file:line` for line costs.
fn flame_frames(s: &Sample) -> Vec<String> {
    let mut v: Vec<String> = s
        .stack
        .iter()
        .rev()
        .map(|l| frame_name(&l.function))
        .collect();
    if s.line_leaf {
        v.push(frame_name(&place_of(&s.stack[0])));
    }
    v
}

/// Collapsed stacks of one cost type: `root;...;leaf value` lines, equal stacks summed, sorted.
pub fn collapsed(r: &Report, cost: Cost) -> Result<Vec<u8>, String> {
    let all = samples(r);
    let t = totals(&all);
    if t[cost.index()] == 0 {
        return Err(if t.iter().all(|&x| x == 0) {
            nothing()
        } else {
            format!(
                "no {} in this profile; it has: {} (choose one with --cost)",
                cost.describe(),
                present(&t)
            )
        });
    }
    let mut stacks: BTreeMap<String, u64> = BTreeMap::new();
    for s in &all {
        let v = s.values[cost.index()];
        if v > 0 {
            *stacks.entry(flame_frames(s).join(";")).or_default() += v;
        }
    }
    let mut out = String::new();
    for (stack, v) in stacks {
        out.push_str(&format!("{stack} {v}\n"));
    }
    Ok(out.into_bytes())
}

/// A name for the whole export: the program (or programs) profiled.
fn title(r: &Report) -> String {
    let mut exes: Vec<&str> = r
        .summary
        .inputs
        .iter()
        .map(|i| i.exe.rsplit('/').next().unwrap_or(&i.exe))
        .collect();
    exes.dedup();
    match r.summary.inputs.len() {
        0 => "profcc".to_string(),
        1 => format!("{} (pid {})", exes[0], r.summary.inputs[0].pid),
        n => format!("{} ({n} profiles)", exes.join(", ")),
    }
}

fn exporter() -> String {
    format!("profcc {}", env!("CARGO_PKG_VERSION"))
}

/// speedscope's file format: one sampled profile per cost type the report has, frames shared.
pub fn speedscope(r: &Report) -> Result<Vec<u8>, String> {
    let all = samples(r);
    let t = totals(&all);
    if t.iter().all(|&x| x == 0) {
        return Err(nothing());
    }
    // Frames: a function (by name and file), or a line of one (`file:line`).
    let mut frames: Vec<serde_json::Value> = Vec::new();
    let mut index: HashMap<(String, Option<String>, Option<u32>), usize> = HashMap::new();
    let mut frame = |name: String, file: Option<String>, line: Option<u32>| -> usize {
        *index
            .entry((name.clone(), file.clone(), line))
            .or_insert_with(|| {
                let mut f = serde_json::json!({ "name": name });
                if let Some(file) = file {
                    f["file"] = file.into();
                }
                if let Some(line) = line {
                    f["line"] = line.into();
                }
                frames.push(f);
                frames.len() - 1
            })
    };
    let stacks: Vec<Vec<usize>> = all
        .iter()
        .map(|s| {
            let mut v: Vec<usize> = s
                .stack
                .iter()
                .rev()
                .map(|l| frame(l.function.clone(), l.file.clone(), None))
                .collect();
            if s.line_leaf {
                let l = &s.stack[0];
                v.push(frame(place_of(l), l.file.clone(), l.line));
            }
            v
        })
        .collect();
    let mut profiles = Vec::new();
    for c in Cost::ALL.into_iter().filter(|c| t[c.index()] > 0) {
        let mut by_stack: BTreeMap<&[usize], u64> = BTreeMap::new();
        for (s, stack) in all.iter().zip(&stacks) {
            let v = s.values[c.index()];
            if v > 0 {
                *by_stack.entry(stack.as_slice()).or_default() += v;
            }
        }
        profiles.push(serde_json::json!({
            "type": "sampled",
            "name": c.describe(),
            "unit": if c.is_bytes() { "bytes" } else { "none" },
            "startValue": 0,
            "endValue": t[c.index()],
            "samples": by_stack.keys().collect::<Vec<_>>(),
            "weights": by_stack.values().collect::<Vec<_>>(),
        }));
    }
    let file = serde_json::json!({
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "shared": { "frames": frames },
        "profiles": profiles,
        "name": title(r),
        "activeProfileIndex": 0,
        "exporter": exporter(),
    });
    Ok(serde_json::to_vec(&file).expect("JSON into memory"))
}

/// A call from a line of a function: (call line, callee file, callee function).
type CgCallKey = (u32, String, String);

/// Its calls, the callee's line (where the call lands) and its inclusive cost.
type CgCall = (u64, u32, [u64; COSTS]);

/// Costs at one line of one function, and the calls it makes from there.
#[derive(Default)]
struct CgFunction {
    /// Self cost by line (0: no line known).
    lines: BTreeMap<u32, [u64; COSTS]>,
    calls: BTreeMap<CgCallKey, CgCall>,
}

fn add(to: &mut [u64; COSTS], v: &[u64; COSTS]) {
    for (x, y) in to.iter_mut().zip(v) {
        *x += y;
    }
}

/// Costs as a callgrind line's numbers (trailing zeros left out).
fn cg_costs(v: &[u64; COSTS]) -> String {
    let n = v.iter().rposition(|&x| x > 0).map_or(0, |i| i + 1);
    v[..n]
        .iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

/// KCachegrind's callgrind format: each sample's cost is the self cost of its innermost frame
/// at its line; every outer frame calls the one inside it, with the sample's cost as the
/// call's inclusive cost (allocation calls as the call count where the stack allocates).
///
/// A report of several profiles has one part per input (`part: N`, from 1, in rank order;
/// each with its `pid:`, a `desc: Rank:` line and its own `events:`; KCachegrind starts a part
/// at each `part:`; `positions:` and the events' long names only in the first), every part's
/// costs that input's. The first part's `summary:` and the
/// file's last `totals:` are the sum of all parts: callgrind_annotate reads the first part's
/// header, sums the functions of every part, and prints a warning for each later part's
/// header lines (as for callgrind's own `--combine-dumps=yes` files).
pub fn callgrind(r: &Report) -> Result<Vec<u8>, String> {
    let all = samples(r);
    let t = totals(&all);
    if t.iter().all(|&x| x == 0) {
        return Err(nothing());
    }
    let mut out = String::new();
    out.push_str("# callgrind format\nversion: 1\n");
    out.push_str(&format!("creator: {}\n", exporter()));
    // The positions and the events' long names once (they hold for the whole file); each
    // part its own `events:` line (KCachegrind maps a part's costs with it).
    let events = |out: &mut String, first: bool| {
        if first {
            out.push_str("positions: line\n");
            for c in Cost::ALL {
                out.push_str(&format!("event: {} : {}\n", c.event(), c.describe()));
            }
        }
        out.push_str(&format!(
            "events: {}\n",
            Cost::ALL.map(|c| c.event()).join(" ")
        ));
    };
    let summary = format!("summary: {}\n", t.map(|x| x.to_string()).join(" "));
    if let [one] = r.summary.inputs.as_slice() {
        out.push_str(&format!("pid: {}\n", one.pid));
        out.push_str(&format!("cmd: {}\n", one.argv.join(" ")));
        events(&mut out, true);
        out.push_str(&summary);
        cg_body(all.iter(), &mut out);
    } else {
        out.push_str(&format!("cmd: {}\n", title(r)));
        // Parts in rank order (inputs without a rank after, by index); samples of no one
        // input (none today) in a last part of their own.
        let mut order: Vec<usize> = (0..r.summary.inputs.len()).collect();
        order.sort_by_key(|&i| {
            (
                r.summary.inputs[i].rank.is_none(),
                r.summary.inputs[i].rank,
                i,
            )
        });
        let mut parts: Vec<(Option<usize>, Vec<&Sample>)> =
            order.into_iter().map(|i| (Some(i), Vec::new())).collect();
        let mut rest = Vec::new();
        for s in &all {
            match s
                .input
                .and_then(|i| parts.iter().position(|p| p.0 == Some(i)))
            {
                Some(at) => parts[at].1.push(s),
                None => rest.push(s),
            }
        }
        if !rest.is_empty() {
            parts.push((None, rest));
        }
        for (n, (input, samples)) in parts.iter().enumerate() {
            out.push_str(&format!("\npart: {}\n", n + 1));
            match input.and_then(|i| r.summary.inputs.get(i).map(|x| (i, x))) {
                Some((i, info)) => {
                    out.push_str(&format!("pid: {}\n", info.pid));
                    let who = match info.rank {
                        Some(k) => format!("rank {k} ({})", info.host),
                        None => format!("input {i} ({})", info.host),
                    };
                    out.push_str(&format!("desc: Rank: {who}, profile {}\n", info.path));
                }
                None => out.push_str("desc: Rank: costs of no single input\n"),
            }
            events(&mut out, n == 0);
            if n == 0 {
                out.push_str(&summary);
            }
            cg_body(samples.iter().copied(), &mut out);
        }
    }
    out.push_str(&format!(
        "\ntotals: {}\n",
        t.map(|x| x.to_string()).join(" ")
    ));
    Ok(out.into_bytes())
}

/// The `fl=`/`fn=` blocks of `samples`: self costs by line, calls with inclusive costs.
fn cg_body<'a>(samples: impl Iterator<Item = &'a Sample>, out: &mut String) {
    let file_of = |l: &Loc| l.file.clone().unwrap_or_else(|| "???".to_string());
    let mut fns: BTreeMap<(String, String), CgFunction> = BTreeMap::new();
    for s in samples {
        let inner = &s.stack[0];
        let f = fns
            .entry((file_of(inner), inner.function.clone()))
            .or_default();
        add(
            f.lines.entry(inner.line.unwrap_or(0)).or_default(),
            &s.values,
        );
        let calls = s.values[Cost::AllocCalls.index()].max(1);
        for w in s.stack.windows(2) {
            let (callee, caller) = (&w[0], &w[1]);
            let f = fns
                .entry((file_of(caller), caller.function.clone()))
                .or_default();
            let e = f
                .calls
                .entry((
                    caller.line.unwrap_or(0),
                    file_of(callee),
                    callee.function.clone(),
                ))
                .or_insert((0, callee.line.unwrap_or(0), [0; COSTS]));
            e.0 += calls;
            add(&mut e.2, &s.values);
        }
    }
    for ((file, function), f) in &fns {
        out.push_str(&format!("\nfl={file}\nfn={function}\n"));
        for (line, v) in &f.lines {
            out.push_str(&format!("{line} {}\n", cg_costs(v)));
        }
        for ((line, cfile, cfn), (calls, target, v)) in &f.calls {
            out.push_str(&format!(
                "cfl={cfile}\ncfn={cfn}\ncalls={calls} {target}\n{line} {}\n",
                cg_costs(v)
            ));
        }
    }
}

/// pprof's `profile.proto` messages (github.com/google/pprof, proto/profile.proto), written
/// out by hand for prost's derive: no protoc at build time.
mod proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        #[prost(message, repeated, tag = "3")]
        pub mapping: Vec<Mapping>,
        #[prost(message, repeated, tag = "4")]
        pub location: Vec<Location>,
        #[prost(message, repeated, tag = "5")]
        pub function: Vec<Function>,
        #[prost(string, repeated, tag = "6")]
        pub string_table: Vec<String>,
        #[prost(int64, tag = "7")]
        pub drop_frames: i64,
        #[prost(int64, tag = "8")]
        pub keep_frames: i64,
        #[prost(int64, tag = "9")]
        pub time_nanos: i64,
        #[prost(int64, tag = "10")]
        pub duration_nanos: i64,
        #[prost(message, optional, tag = "11")]
        pub period_type: Option<ValueType>,
        #[prost(int64, tag = "12")]
        pub period: i64,
        #[prost(int64, repeated, tag = "13")]
        pub comment: Vec<i64>,
        #[prost(int64, tag = "14")]
        pub default_sample_type: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ValueType {
        #[prost(int64, tag = "1")]
        pub r#type: i64,
        #[prost(int64, tag = "2")]
        pub unit: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        #[prost(uint64, repeated, tag = "1")]
        pub location_id: Vec<u64>,
        #[prost(int64, repeated, tag = "2")]
        pub value: Vec<i64>,
        #[prost(message, repeated, tag = "3")]
        pub label: Vec<Label>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Label {
        #[prost(int64, tag = "1")]
        pub key: i64,
        #[prost(int64, tag = "2")]
        pub str: i64,
        #[prost(int64, tag = "3")]
        pub num: i64,
        #[prost(int64, tag = "4")]
        pub num_unit: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Mapping {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(uint64, tag = "2")]
        pub memory_start: u64,
        #[prost(uint64, tag = "3")]
        pub memory_limit: u64,
        #[prost(uint64, tag = "4")]
        pub file_offset: u64,
        #[prost(int64, tag = "5")]
        pub filename: i64,
        #[prost(int64, tag = "6")]
        pub build_id: i64,
        #[prost(bool, tag = "7")]
        pub has_functions: bool,
        #[prost(bool, tag = "8")]
        pub has_filenames: bool,
        #[prost(bool, tag = "9")]
        pub has_line_numbers: bool,
        #[prost(bool, tag = "10")]
        pub has_inline_frames: bool,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Location {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(uint64, tag = "2")]
        pub mapping_id: u64,
        #[prost(uint64, tag = "3")]
        pub address: u64,
        #[prost(message, repeated, tag = "4")]
        pub line: Vec<Line>,
        #[prost(bool, tag = "5")]
        pub is_folded: bool,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Line {
        #[prost(uint64, tag = "1")]
        pub function_id: u64,
        #[prost(int64, tag = "2")]
        pub line: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Function {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(int64, tag = "2")]
        pub name: i64,
        #[prost(int64, tag = "3")]
        pub system_name: i64,
        #[prost(int64, tag = "4")]
        pub filename: i64,
        #[prost(int64, tag = "5")]
        pub start_line: i64,
    }
}

/// The string table of a pprof profile ("" first).
#[derive(Default)]
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Strings {
        let mut s = Strings::default();
        s.id("");
        s
    }

    fn id(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

/// The pprof profile as a message (before encoding), for the tests.
fn pprof_profile(r: &Report) -> Result<proto::Profile, String> {
    let all = samples(r);
    let t = totals(&all);
    if t.iter().all(|&x| x == 0) {
        return Err(nothing());
    }
    let mut strings = Strings::new();
    let sample_type = Cost::ALL
        .iter()
        .map(|c| {
            let (ty, unit) = c.pprof_type();
            proto::ValueType {
                r#type: strings.id(ty),
                unit: strings.id(unit),
            }
        })
        .collect();
    let mut functions: Vec<proto::Function> = Vec::new();
    let mut function_ids: HashMap<(String, Option<String>), u64> = HashMap::new();
    let mut locations: Vec<proto::Location> = Vec::new();
    let mut location_ids: HashMap<Vec<Loc>, u64> = HashMap::new();
    let mut out_samples = Vec::new();
    for s in &all {
        // One location per return address: inlined frames (innermost first) with the
        // function they were inlined into.
        let mut ids = Vec::new();
        let mut group: Vec<Loc> = Vec::new();
        for (i, l) in s.stack.iter().enumerate() {
            group.push(l.clone());
            // A stack cut inside inlined code ends its last location there.
            if l.inlined && i + 1 < s.stack.len() {
                continue;
            }
            let key = std::mem::take(&mut group);
            let next = locations.len() as u64 + 1;
            let id = *location_ids.entry(key.clone()).or_insert(next);
            if id == next {
                let line = key
                    .iter()
                    .map(|l| {
                        let fkey = (l.function.clone(), l.file.clone());
                        let next = functions.len() as u64 + 1;
                        let function_id = *function_ids.entry(fkey).or_insert(next);
                        if function_id == next {
                            functions.push(proto::Function {
                                id: function_id,
                                name: strings.id(&l.function),
                                system_name: strings.id(&l.function),
                                filename: strings.id(l.file.as_deref().unwrap_or("")),
                                start_line: 0,
                            });
                        }
                        proto::Line {
                            function_id,
                            line: l.line.unwrap_or(0) as i64,
                        }
                    })
                    .collect();
                locations.push(proto::Location {
                    id,
                    mapping_id: 1,
                    address: 0,
                    line,
                    is_folded: false,
                });
            }
            ids.push(id);
        }
        let label = s
            .labels
            .iter()
            .map(|l| match l {
                Label::Str(k, v) => proto::Label {
                    key: strings.id(k),
                    str: strings.id(v),
                    num: 0,
                    num_unit: 0,
                },
                Label::Num(k, v) => proto::Label {
                    key: strings.id(k),
                    str: 0,
                    num: *v,
                    num_unit: strings.id("count"),
                },
            })
            .collect();
        out_samples.push(proto::Sample {
            location_id: ids,
            value: s.values.iter().map(|&v| v as i64).collect(),
            label,
        });
    }
    let default = Cost::ALL
        .iter()
        .find(|c| t[c.index()] > 0)
        .map(|c| c.pprof_type().0)
        .unwrap_or("");
    let default_sample_type = strings.id(default);
    let comment = vec![strings.id(&format!("{} of {}", exporter(), title(r)))];
    let duration = r
        .summary
        .inputs
        .iter()
        .map(|i| i.duration_ns)
        .max()
        .unwrap_or(0);
    // One mapping that says every location is symbolised already (pprof then looks for no
    // binary): the first input's executable.
    let exe = r
        .summary
        .inputs
        .first()
        .map(|i| i.exe.as_str())
        .unwrap_or("");
    let mapping = vec![proto::Mapping {
        id: 1,
        filename: strings.id(exe),
        has_functions: true,
        has_filenames: true,
        has_line_numbers: true,
        has_inline_frames: true,
        ..Default::default()
    }];
    Ok(proto::Profile {
        sample_type,
        sample: out_samples,
        mapping,
        location: locations,
        function: functions,
        string_table: strings.table,
        duration_nanos: duration.min(i64::MAX as u64) as i64,
        comment,
        default_sample_type,
        ..Default::default()
    })
}

/// pprof's gzipped `profile.proto`: one sample type per cost type, a sample per stack.
pub fn pprof(r: &Report) -> Result<Vec<u8>, String> {
    use prost::Message;
    let p = pprof_profile(r)?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&p.encode_to_vec())
        .and_then(|_| gz.finish())
        .map_err(|e| format!("cannot compress the profile: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::{Input, Merged};
    use crate::model::AllocSite;
    use profcc_schema::AccessKind;

    fn frame(function: Option<&str>, line: u32, inlined: bool) -> Frame {
        Frame {
            address: 0x1000 + line as u64,
            module: Some("/bin/kernel".into()),
            offset: Some(line as u64),
            function: function.map(str::to_string),
            file: function.map(|_| "k.c".to_string()),
            line: function.map(|_| line),
            column: None,
            inlined,
        }
    }

    /// A report of two access lines (one compiled into two functions) and two allocation
    /// sites: one whose stack has an inlined frame and an unsymbolised caller, one cut inside
    /// inlined code.
    fn report() -> Report {
        let p = crate::tests::profile(
            7,
            vec![
                crate::tests::site("k.c", 10, 1, "hot", AccessKind::Read, 8, 900, 1),
                crate::tests::site("k.c", 10, 5, "hot", AccessKind::Write, 8, 100, 1),
                crate::tests::site("k.c", 10, 1, "other", AccessKind::Read, 8, 5, 1),
                crate::tests::site("k.c", 20, 1, "cold", AccessKind::Atomic, 8, 3, 1),
            ],
        );
        let mut r = crate::sections::build(
            &Merged::new(vec![Input::new("p.json", p, None)]),
            &crate::sections::Options {
                top: 0,
                ..Default::default()
            },
        );
        let site = |bytes, stack| AllocSite {
            rank: 0,
            kind: "malloc".into(),
            count: 2,
            bytes,
            frees: 0,
            max_size: bytes,
            live_bytes_peak: bytes,
            live_bytes_at_exit: 0,
            live_objects_at_exit: 0,
            threads: 1,
            merged_sites: 1,
            stack,
            wrapper_frames: 0,
            allocator_ns: 0.0,
            by_input: Vec::new(),
            lifetime: None,
        };
        r.alloc_sites.sites = vec![
            site(
                64,
                vec![
                    frame(Some("helper"), 3, true),
                    frame(Some("outer"), 6, false),
                    frame(None, 9, false),
                ],
            ),
            site(32, vec![frame(Some("helper"), 4, true)]),
        ];
        r
    }

    #[test]
    fn collapsed_lines_are_root_first_per_cost() {
        let r = report();
        let text = |c| String::from_utf8(collapsed(&r, c).unwrap()).unwrap();
        assert_eq!(
            text(Cost::AllocBytes),
            "helper 32\nkernel+0x9;outer;helper 64\n"
        );
        assert_eq!(
            text(Cost::Accesses),
            "cold;k.c:20 3\nhot;k.c:10 1000\nother;k.c:10 5\n"
        );
        assert_eq!(text(Cost::Writes), "cold;k.c:20 3\nhot;k.c:10 100\n");
        let e = collapsed(&r, Cost::Invalidations).unwrap_err();
        assert_eq!(
            e,
            "no invalidations in this profile; it has: alloc-bytes, alloc-calls, accesses, reads, writes (choose one with --cost)"
        );
    }

    /// One location per return address (inlined frames with their caller, innermost first),
    /// the string table starting with "", values in sample-type order; the gzipped bytes
    /// decode to the same message.
    #[test]
    fn pprof_locations_hold_inlined_frames() {
        use prost::Message;
        let r = report();
        let p = pprof_profile(&r).unwrap();
        assert_eq!(p.string_table[0], "");
        let name = |i: i64| p.string_table[i as usize].as_str();
        let function = |id: u64| name(p.function[id as usize - 1].name);
        let lines = |id: u64| -> Vec<(&str, i64)> {
            p.location[id as usize - 1]
                .line
                .iter()
                .map(|l| (function(l.function_id), l.line))
                .collect()
        };
        let first = &p.sample[0];
        assert_eq!(first.value, [64, 2, 0, 0, 0, 0, 0, 0]);
        assert_eq!(first.location_id.len(), 2);
        assert_eq!(lines(first.location_id[0]), [("helper", 3), ("outer", 6)]);
        assert_eq!(lines(first.location_id[1]), [("kernel+0x9", 0)]);
        let cut = &p.sample[1];
        assert_eq!(lines(cut.location_id[0]), [("helper", 4)]);
        assert_eq!(name(p.default_sample_type), "alloc_space");
        let hot = p
            .sample
            .iter()
            .find(|s| lines(s.location_id[0]) == [("hot", 10)])
            .unwrap();
        assert_eq!(hot.value, [0, 0, 1000, 900, 100, 0, 0, 0]);
        let mut raw = Vec::new();
        std::io::Read::read_to_end(
            &mut flate2::read::GzDecoder::new(pprof(&r).unwrap().as_slice()),
            &mut raw,
        )
        .unwrap();
        assert_eq!(proto::Profile::decode(raw.as_slice()).unwrap(), p);
    }

    /// Callgrind: self cost at the innermost frame's line, a call edge per outer frame with
    /// the site's calls and inclusive cost; the summary sums the self costs.
    #[test]
    fn callgrind_costs_and_calls() {
        let text = String::from_utf8(callgrind(&report()).unwrap()).unwrap();
        assert!(
            text.contains("\nsummary: 96 4 1008 908 103 0 0 0\n"),
            "{text}"
        );
        assert!(
            text.contains("\nfl=k.c\nfn=helper\n3 64 2\n4 32 2\n"),
            "{text}"
        );
        assert!(
            text.contains("\nfl=k.c\nfn=outer\ncfl=k.c\ncfn=helper\ncalls=2 3\n6 64 2\n"),
            "{text}"
        );
        assert!(
            text.contains("\nfl=k.c\nfn=hot\n10 0 0 1000 900 100\n"),
            "{text}"
        );
        assert!(
            text.contains("\nfl=???\nfn=kernel+0x9\ncfl=k.c\ncfn=outer\ncalls=2 6\n0 64 2\n"),
            "{text}"
        );
    }

    #[test]
    fn an_empty_report_is_an_error_in_every_export() {
        let mut r = report();
        r.alloc_sites.sites.clear();
        r.access_sites.lines.clear();
        for e in [
            callgrind(&r).map(|_| ()),
            pprof(&r).map(|_| ()),
            speedscope(&r).map(|_| ()),
            collapsed(&r, Cost::AllocBytes).map(|_| ()),
        ] {
            assert!(e.unwrap_err().starts_with("nothing to export"));
        }
    }

    #[test]
    fn split_sums_to_the_total() {
        assert_eq!(split(10, &[1, 1, 1]), vec![4, 3, 3]);
        assert_eq!(split(7, &[0, 0]), vec![4, 3]);
        assert_eq!(split(5, &[3, 0, 1]), vec![4, 0, 1]);
        assert_eq!(split(0, &[3, 2]), vec![0, 0]);
    }

    #[test]
    fn places_split_into_file_and_line() {
        assert_eq!(split_place("a/b.c:12"), (Some("a/b.c".into()), Some(12)));
        assert_eq!(split_place("b.c"), (Some("b.c".into()), None));
    }
}
