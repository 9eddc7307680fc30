//! Several profiles (one per MPI rank, per fork, per run) merged into one view.
//!
//! - access sites with the same file, line, column, function, inlined-at and kind are summed;
//! - allocation sites are merged by their *symbolised* call stack and kind (addresses differ
//!   between processes under ASLR, source places do not);
//! - totals are summed (`live_bytes_peak` too: an upper bound when processes overlapped);
//! - threads stay per input file.
//!
//! The merged view keeps the symboliser, so a section that needs more stacks symbolised (the
//! sharing section naming an allocation site) asks [`Merged::stack`], and one that names a
//! global variable asks [`Merged::global`]; both take the input's index, since stack ids and
//! addresses belong to one process.

use crate::model::{rank_row_key, AllocSite, Spread, SpreadAcc, Thread};
use crate::symbolize::{
    is_wrapper, normalize_path, user_frame, user_frame_index, Frame, FrameKey, Global, Symbolizer,
};
use profcc_schema::{AccessKind, AccessSite, Profile, Totals};
use std::cell::RefCell;
use std::collections::HashMap;
use std::time::SystemTime;

/// One profile file as read.
pub struct Input {
    /// The path as given on the command line.
    pub path: String,
    pub profile: Profile,
    /// When the profile file was written (for the "binary changed since" check).
    pub mtime: Option<SystemTime>,
    /// Stack id → frames (addresses).
    stacks: HashMap<u32, Vec<u64>>,
    /// Allocation stack id → the heap object its site is (`heap_identity`, the Objects
    /// table's name), filled when its sites merge: the region snapshots' sites by object.
    pub heap_objects: HashMap<u32, String>,
}

impl Input {
    pub fn new(path: impl Into<String>, mut profile: Profile, mtime: Option<SystemTime>) -> Input {
        // The frames move into the map (the profile's list is not read again).
        let stacks = std::mem::take(&mut profile.stacks)
            .into_iter()
            .map(|s| (s.id, s.frames))
            .collect();
        Input {
            path: path.into(),
            profile,
            mtime,
            stacks,
            heap_objects: HashMap::new(),
        }
    }
}

/// An access site after merging equal sites of all inputs.
#[derive(Debug, Clone)]
pub struct MergedSite {
    pub file: String,
    pub line: u32,
    pub col: u32,
    /// Mangled, as recorded.
    pub function: String,
    pub inlined_at: Option<String>,
    pub kind: AccessKind,
    /// Bytes per access; 0 when run-time length or when inputs disagree.
    pub size: u32,
    pub count: u64,
    pub bytes: u64,
    /// (input index, its accesses at the site), by input index: the per-rank values; kept
    /// only when the output shows them ([`Merged::without_per_input`]).
    pub count_by_input: Vec<(usize, u64)>,
    /// Its `file:line`'s entry in the merged view's per-line thread counts.
    line_slot: usize,
}

/// `N` values of one key (a line's accesses; an object's allocations and bytes) over the
/// inputs merged so far, as inputs come in order: the current input's sums, folded into the
/// spreads ([`SpreadAcc`]) when the next input comes or at [`Merged::finish`].
#[derive(Debug, Clone)]
pub struct PerInput<const N: usize> {
    /// The input merged last and its rank.
    last: Option<(usize, Option<u32>)>,
    sums: [u64; N],
    spreads: [SpreadAcc; N],
}

impl<const N: usize> Default for PerInput<N> {
    fn default() -> Self {
        PerInput {
            last: None,
            sums: [0; N],
            spreads: std::array::from_fn(|_| SpreadAcc::default()),
        }
    }
}

impl<const N: usize> PerInput<N> {
    /// Input `i` (rank `rank`) adds `v`; true when `i` is a new input.
    fn add(&mut self, i: usize, rank: Option<u32>, v: [u64; N]) -> bool {
        let new = self.last.map(|l| l.0) != Some(i);
        if new {
            self.fold();
            self.last = Some((i, rank));
        }
        for (s, x) in self.sums.iter_mut().zip(v) {
            *s += x;
        }
        new
    }

    /// The last input's sums go into the spreads.
    fn fold(&mut self) {
        if let Some((i, rank)) = self.last {
            for (acc, s) in self.spreads.iter_mut().zip(&mut self.sums) {
                acc.add(i, rank, std::mem::take(s));
            }
        }
    }
}

/// One `file:line` over the inputs merged so far: its threads, summed over the inputs (per
/// input the largest thread count of its sites on the line: a lower bound, the same threads
/// may run several), and its accesses per input (the Ranks section's spread).
#[derive(Debug, Clone, Default)]
struct LineThreads {
    /// The largest thread count of the input merged last, and the sum over those before it.
    current: u32,
    before: u32,
    accesses: PerInput<1>,
}

/// A heap object's identity (`heap:` and its user frame's place, as the findings name it):
/// its allocations and bytes per input (the Ranks section's spreads).
pub type ObjectSpread = PerInput<2>;

pub struct Merged {
    /// Every input, reduced after merging to what the sections read (see [`Merged::add`]).
    pub inputs: Vec<Input>,
    pub sites: Vec<MergedSite>,
    pub alloc_sites: Vec<AllocSite>,
    /// Per entry of `alloc_sites` (same index): (input index, allocations, bytes) of each
    /// input that allocated there, by input index: the per-rank values (kept only when the
    /// output shows them, as `count_by_input`).
    pub alloc_by_input: Vec<Vec<(usize, u64, u64)>>,
    /// Heap identity (`heap:PLACE`) -> its allocations' and bytes' spreads over the inputs.
    pub object_spreads: std::collections::BTreeMap<String, ObjectSpread>,
    /// Per entry of `alloc_sites`: its identity's key in `object_spreads`, if it has one.
    alloc_identity: Vec<Option<String>>,
    pub threads: Vec<Thread>,
    pub totals: Totals,
    /// The runtime's notes, deduplicated, plus anything merging noticed.
    pub notes: Vec<String>,
    sym: RefCell<Symbolizer>,
    /// Merging state: access sites by a hash of their key, (file, line) → line slot, the
    /// per-line thread counts, allocation sites by kind and symbolised stack, the input last
    /// merged into each allocation site with its largest thread count there, allocation sites
    /// whose stack is missing.
    site_index: HashMap<u64, Vec<usize>>,
    line_index: HashMap<(String, u32), usize>,
    line_threads: Vec<LineThreads>,
    alloc_index: HashMap<(String, Vec<FrameKey>), usize>,
    alloc_threads_seen: Vec<(Option<usize>, u32)>,
    missing_stacks: usize,
    hasher: std::collections::hash_map::RandomState,
    /// Keep each site's per-input values (`count_by_input`, `alloc_by_input`)?
    per_input: bool,
    /// When set, each input's NUMA part is built with these options as the input is merged,
    /// and its raw `numa` section and the stacks it names are dropped ([`Merged::add`]).
    numa_early: Option<crate::sections::Options>,
    /// Input index -> its NUMA part and findings, built early.
    numa_parts: HashMap<usize, NumaPart>,
}

/// One input's part of the NUMA section and its findings.
pub type NumaPart = (
    crate::model::NumaInput,
    Vec<profcc_analysis::findings::Finding>,
);

impl Merged {
    /// Merge `inputs`, in order (as [`Merged::empty`], [`Merged::add`] each, [`Merged::finish`]).
    pub fn new(inputs: Vec<Input>) -> Merged {
        let mut m = Merged::empty();
        for i in inputs {
            m.add(i);
        }
        m.finish();
        m
    }

    /// Nothing merged yet.
    pub fn empty() -> Merged {
        Merged {
            inputs: Vec::new(),
            sites: Vec::new(),
            alloc_sites: Vec::new(),
            alloc_by_input: Vec::new(),
            object_spreads: Default::default(),
            alloc_identity: Vec::new(),
            threads: Vec::new(),
            totals: Totals::default(),
            notes: Vec::new(),
            sym: RefCell::new(Symbolizer::new()),
            site_index: HashMap::new(),
            line_index: HashMap::new(),
            line_threads: Vec::new(),
            alloc_index: HashMap::new(),
            alloc_threads_seen: Vec::new(),
            missing_stacks: 0,
            hasher: Default::default(),
            per_input: true,
            numa_early: None,
            numa_parts: HashMap::new(),
        }
    }

    /// Build each input's NUMA part with `opts` as it is merged (the options the report is
    /// built with), so that only the part, not the raw section, is held per input.
    pub fn with_numa_early(mut self, opts: &crate::sections::Options) -> Merged {
        self.numa_early = Some(opts.clone());
        self
    }

    /// Input `i`'s remote accesses (its NUMA threads'), from its NUMA part when that was
    /// built as it was merged.
    pub fn remote_accesses(&self, i: usize) -> u64 {
        match (self.numa_parts.get(&i), &self.inputs[i].profile.numa) {
            (Some((part, _)), _) => part.remote,
            (None, Some(n)) => n.threads.iter().map(|t| t.remote).sum(),
            (None, None) => 0,
        }
    }

    /// Input `i`'s NUMA part if it was built as the input was merged. Its options must be
    /// the report's: a part built with another `top` is a bug.
    pub fn numa_part(&self, i: usize, opts: &crate::sections::Options) -> Option<&NumaPart> {
        let part = self.numa_parts.get(&i)?;
        debug_assert_eq!(self.numa_early.as_ref().map(|o| o.top), Some(opts.top));
        Some(part)
    }

    /// Nothing merged yet, and no per-input values of access and allocation sites will be
    /// kept (the text and CSV outputs show none): the memory held per input then does not
    /// grow with its sites. The Ranks section's line and object spreads are built as the
    /// inputs come either way.
    pub fn without_per_input() -> Merged {
        Merged {
            per_input: false,
            ..Merged::empty()
        }
    }

    /// Merge one more input (the next in command-line order): its access and allocation sites
    /// are summed into the merged ones, then the input is reduced to what the sections read
    /// per input ([`reduce`]), so the memory held per input does not grow with its sites.
    pub fn add(&mut self, input: Input) {
        let i = self.inputs.len();
        self.inputs.push(input);
        self.merge_sites(i);
        self.merge_allocs(i);
        if let Some(opts) = &self.numa_early {
            if let Some(part) = crate::sections::numa::build_input(self, i, opts) {
                self.numa_parts.insert(i, part);
                self.inputs[i].profile.numa = None;
            }
        }
        reduce(&mut self.inputs[i]);
    }

    /// After the last [`Merged::add`]: threads, totals, notes and the line spreads.
    pub fn finish(&mut self) {
        for t in &mut self.line_threads {
            t.accesses.fold();
        }
        for o in self.object_spreads.values_mut() {
            o.fold();
        }
        if self.missing_stacks > 0 {
            self.notes.push(format!(
                "{} allocation sites refer to call stacks missing from the profile; they are shown without a stack",
                self.missing_stacks
            ));
            self.missing_stacks = 0;
        }
        self.merge_threads();
        self.merge_totals_and_notes();
    }

    /// Threads of the sites on `file:line` summed over the inputs (per input the largest
    /// count of its sites there); 0 for a line no site is on.
    pub fn line_threads(&self, file: &str, line: u32) -> u32 {
        self.line_index
            .get(&(file.to_string(), line))
            .map_or(0, |&at| {
                let t = &self.line_threads[at];
                t.before + t.current
            })
    }

    /// The spread of the accesses on `file:line` over the inputs (after [`Merged::finish`]).
    pub fn line_spread(&self, file: &str, line: u32) -> Option<Spread> {
        let at = *self.line_index.get(&(file.to_string(), line))?;
        let first = self.first_row();
        Some(self.line_threads[at].accesses.spreads[0].spread(self.inputs.len() as u32, first))
    }

    /// The allocations' and bytes' spreads of a heap identity over the inputs (after
    /// [`Merged::finish`]), as [`Merged::line_spread`].
    pub fn object_spread(&self, o: &ObjectSpread) -> (Spread, Spread) {
        let first = self.first_row();
        let of = self.inputs.len() as u32;
        (
            o.spreads[0].spread(of, first),
            o.spreads[1].spread(of, first),
        )
    }

    /// The first row of the Ranks table: (rank, input).
    fn first_row(&self) -> (Option<u32>, usize) {
        (0..self.inputs.len())
            .min_by_key(|&i| rank_row_key(self.inputs[i].profile.rank, i))
            .map_or((None, 0), |i| (self.inputs[i].profile.rank, i))
    }

    /// Symbolised frames of a stack id of one input. Unknown ids give an empty stack.
    pub fn stack(&self, input: usize, id: u32) -> Vec<Frame> {
        let inp = &self.inputs[input];
        match inp.stacks.get(&id) {
            Some(frames) => self
                .sym
                .borrow_mut()
                .stack(&inp.profile.modules, frames, inp.mtime),
            None => Vec::new(),
        }
    }

    /// Symbolised frames (inlined ones first) of one code address of one input: a return
    /// address, so its call's place.
    pub fn address(&self, input: usize, address: u64) -> Vec<Frame> {
        let inp = &self.inputs[input];
        self.sym
            .borrow_mut()
            .frames(&inp.profile.modules, address, inp.mtime)
    }

    /// The global or static variable of one input that holds a runtime data address.
    pub fn global(&self, input: usize, address: u64) -> Option<Global> {
        let inp = &self.inputs[input];
        self.sym
            .borrow_mut()
            .global(&inp.profile.modules, address, inp.mtime)
    }

    /// Symbolisation warnings so far (one per module that could not be used).
    pub fn symbol_warnings(&self) -> Vec<String> {
        self.sym.borrow().warnings().to_vec()
    }

    fn merge_sites(&mut self, i: usize) {
        use std::hash::BuildHasher;
        let inp = &self.inputs[i];
        for s in &inp.profile.sites {
            let AccessSite {
                file,
                line,
                col,
                function,
                inlined_at,
                kind,
                size,
                count,
                bytes,
                threads,
            } = s;
            let file = normalize_path(file);
            let inlined_at = inlined_at.as_deref().map(normalize_path);
            let h = self.hasher.hash_one((
                file.as_str(),
                *line,
                *col,
                function.as_str(),
                inlined_at.as_deref(),
                *kind,
            ));
            let candidates = self.site_index.entry(h).or_default();
            let found = candidates.iter().copied().find(|&at| {
                let m = &self.sites[at];
                m.line == *line
                    && m.col == *col
                    && m.kind == *kind
                    && m.file == file
                    && m.function == *function
                    && m.inlined_at == inlined_at
            });
            let at = match found {
                Some(at) => at,
                None => {
                    let slot = *self
                        .line_index
                        .entry((file.clone(), *line))
                        .or_insert_with(|| {
                            self.line_threads.push(LineThreads::default());
                            self.line_threads.len() - 1
                        });
                    self.sites.push(MergedSite {
                        file,
                        line: *line,
                        col: *col,
                        function: function.clone(),
                        inlined_at,
                        kind: *kind,
                        size: *size,
                        count: 0,
                        bytes: 0,
                        count_by_input: Vec::new(),
                        line_slot: slot,
                    });
                    candidates.push(self.sites.len() - 1);
                    self.sites.len() - 1
                }
            };
            let m = &mut self.sites[at];
            if m.size != *size {
                m.size = 0;
            }
            m.count += count;
            m.bytes += bytes;
            // Inputs are merged in order, so this input's entry is the last one if any.
            if self.per_input {
                match m.count_by_input.last_mut() {
                    Some((j, c)) if *j == i => *c += count,
                    _ => m.count_by_input.push((i, *count)),
                }
            }
            let t = &mut self.line_threads[m.line_slot];
            if t.accesses.add(i, inp.profile.rank, [*count]) {
                t.before += t.current;
                t.current = 0;
            }
            t.current = t.current.max(*threads);
        }
    }

    fn merge_allocs(&mut self, i: usize) {
        let sites = std::mem::take(&mut self.inputs[i].profile.alloc_sites);
        let hz = self.inputs[i]
            .profile
            .allocator_ops
            .as_ref()
            .map_or(0.0, |a| a.tsc_hz);
        for a in &sites {
            if !self.inputs[i].stacks.contains_key(&a.stack) {
                self.missing_stacks += 1;
            }
            let stack = self.stack(i, a.stack);
            let wrappers = &self.inputs[i].profile.alloc_wrappers;
            let wrapper_frames = if stack.first().is_some_and(|f| is_wrapper(f, wrappers)) {
                user_frame_index(&stack, &|f| is_wrapper(f, wrappers)).unwrap_or(0)
            } else {
                0
            };
            let key = (
                a.kind.clone(),
                stack.iter().map(Frame::key).collect::<Vec<_>>(),
            );
            let identity = {
                let rest = &stack[wrapper_frames.min(stack.len())..];
                user_frame(rest).or(rest.first()).map(|f| {
                    format!(
                        "heap:{}",
                        profcc_analysis::findings::heap_identity(
                            f.place().as_deref(),
                            f.function.as_deref()
                        )
                    )
                })
            };
            if let Some(id) = &identity {
                let name = id.strip_prefix("heap:").unwrap_or(id).to_string();
                self.inputs[i].heap_objects.insert(a.stack, name);
            }
            let at = *self.alloc_index.entry(key).or_insert_with(|| {
                self.alloc_sites.push(AllocSite {
                    rank: 0,
                    kind: a.kind.clone(),
                    stack,
                    count: 0,
                    bytes: 0,
                    frees: 0,
                    max_size: 0,
                    live_bytes_peak: 0,
                    live_bytes_at_exit: 0,
                    live_objects_at_exit: 0,
                    threads: 0,
                    merged_sites: 0,
                    wrapper_frames,
                    allocator_ns: 0.0,
                    by_input: Vec::new(),
                    lifetime: None,
                });
                self.alloc_threads_seen.push((None, 0));
                self.alloc_by_input.push(Vec::new());
                self.alloc_identity.push(identity);
                self.alloc_sites.len() - 1
            });
            let m = &mut self.alloc_sites[at];
            m.count += a.count;
            m.bytes += a.bytes;
            m.frees += a.frees;
            m.max_size = m.max_size.max(a.max_size);
            m.live_bytes_peak += a.live_bytes_peak;
            m.live_bytes_at_exit += a.live_bytes_at_exit;
            m.live_objects_at_exit += a.live_objects_at_exit;
            if hz > 0.0 {
                m.allocator_ns += a.cycles as f64 * 1e9 / hz;
            }
            if let Some(l) = &a.lifetime {
                m.lifetime.get_or_insert_with(Default::default).merge(l);
            }
            // Sites of one process with the same symbolised stack (a call the optimiser
            // unrolled or duplicated) may share their threads: the largest count is a
            // lower bound; processes add up.
            let seen = &mut self.alloc_threads_seen[at];
            if seen.0 == Some(i) {
                m.threads += a.threads.saturating_sub(seen.1);
                seen.1 = seen.1.max(a.threads);
            } else {
                m.threads += a.threads;
                *seen = (Some(i), a.threads);
            }
            m.merged_sites += 1;
            if self.per_input {
                let per = &mut self.alloc_by_input[at];
                match per.last_mut() {
                    Some((j, c, b)) if *j == i => {
                        *c += a.count;
                        *b += a.bytes;
                    }
                    _ => per.push((i, a.count, a.bytes)),
                }
            }
            if let Some(id) = &self.alloc_identity[at] {
                let rank = self.inputs[i].profile.rank;
                if !self.object_spreads.contains_key(id) {
                    self.object_spreads
                        .insert(id.clone(), ObjectSpread::default());
                }
                if let Some(o) = self.object_spreads.get_mut(id) {
                    o.add(i, rank, [a.count, a.bytes]);
                }
            }
        }
    }

    fn merge_threads(&mut self) {
        for i in 0..self.inputs.len() {
            let threads = self.inputs[i].profile.threads.clone();
            let pid = self.inputs[i].profile.pid;
            for t in threads {
                let created_at = t.created_at.map(|id| self.stack(i, id)).unwrap_or_default();
                self.threads.push(Thread {
                    input: i,
                    pid,
                    id: t.id,
                    parent: t.parent,
                    accesses: t.accesses,
                    created_at,
                });
            }
        }
    }

    fn merge_totals_and_notes(&mut self) {
        let mut t = Totals::default();
        let mut notes: Vec<String> = Vec::new();
        for inp in &self.inputs {
            t.merge(&inp.profile.totals);
            for n in &inp.profile.notes {
                if !notes.contains(n) {
                    notes.push(n.clone());
                }
            }
            if inp.profile.version < 5 && inp.profile.sharing.is_some() {
                let n = format!(
                    "profile version {} has no thread times or latency samples: its sharing findings have no predicted gain (run the program built by this profcc for one)",
                    inp.profile.version
                );
                if !notes.contains(&n) {
                    notes.push(n);
                }
            }
        }
        notes.append(&mut self.notes);
        self.notes = notes;
        self.totals = t;
    }

    /// Accesses that percentages are taken of: the recorded total, or the sum of the sites when
    /// a (hand-made or older) profile left the total at zero.
    pub fn access_total(&self) -> u64 {
        let sum: u64 = self.sites.iter().map(|s| s.count).sum();
        self.totals.accesses.max(sum)
    }
}

/// Drop what no section reads per input once the input is merged: its allocation sites
/// (merged), its access sites except those its sharing records name (renumbered in order, so
/// the analysis sees the same sites in the same order), and its call stacks except those a
/// thread's creation, a sharing object or (when present) the NUMA or allocator analysis
/// refers to.
fn reduce(inp: &mut Input) {
    let p = &mut inp.profile;
    p.alloc_sites = Vec::new();
    let sites = std::mem::take(&mut p.sites);
    let mut keep_stacks: std::collections::HashSet<u32> =
        p.threads.iter().filter_map(|t| t.created_at).collect();
    if let Some(s) = &mut p.sharing {
        let mut named: Vec<u32> = s
            .lines
            .iter()
            .flat_map(|l| l.sites.iter().map(|x| x.site))
            .collect();
        named.sort_unstable();
        named.dedup();
        // Indices past the end stay past the end (the analysis skips them alike).
        p.sites = named
            .iter()
            .filter_map(|&x| sites.get(x as usize).cloned())
            .collect();
        for l in &mut s.lines {
            for x in &mut l.sites {
                x.site = named.binary_search(&x.site).unwrap_or(0) as u32;
            }
            keep_stacks.extend(l.objects.iter().filter_map(|o| o.alloc_stack));
        }
    }
    if p.numa.is_none() && p.allocator_ops.is_none() {
        inp.stacks.retain(|id, _| keep_stacks.contains(id));
        inp.stacks.shrink_to_fit();
    }
}
