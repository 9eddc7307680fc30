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

use crate::model::{AllocSite, Thread};
use crate::symbolize::{
    is_wrapper, normalize_path, user_frame_index, Frame, FrameKey, Global, Symbolizer,
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
}

impl Input {
    pub fn new(path: impl Into<String>, profile: Profile, mtime: Option<SystemTime>) -> Input {
        let stacks = profile
            .stacks
            .iter()
            .map(|s| (s.id, s.frames.clone()))
            .collect();
        Input {
            path: path.into(),
            profile,
            mtime,
            stacks,
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
    /// (input index, threads that executed the site in that process), by input index.
    pub threads_by_input: Vec<(usize, u32)>,
    /// (input index, its accesses at the site), by input index: the per-rank values.
    pub count_by_input: Vec<(usize, u64)>,
}

pub struct Merged {
    pub inputs: Vec<Input>,
    pub sites: Vec<MergedSite>,
    pub alloc_sites: Vec<AllocSite>,
    /// Per entry of `alloc_sites` (same index): (input index, allocations, bytes) of each
    /// input that allocated there, by input index: the per-rank values.
    pub alloc_by_input: Vec<Vec<(usize, u64, u64)>>,
    pub threads: Vec<Thread>,
    pub totals: Totals,
    /// The runtime's notes, deduplicated, plus anything merging noticed.
    pub notes: Vec<String>,
    sym: RefCell<Symbolizer>,
}

impl Merged {
    pub fn new(inputs: Vec<Input>) -> Merged {
        let mut m = Merged {
            inputs,
            sites: Vec::new(),
            alloc_sites: Vec::new(),
            alloc_by_input: Vec::new(),
            threads: Vec::new(),
            totals: Totals::default(),
            notes: Vec::new(),
            sym: RefCell::new(Symbolizer::new()),
        };
        m.merge_sites();
        m.merge_allocs();
        m.merge_threads();
        m.merge_totals_and_notes();
        m
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

    fn merge_sites(&mut self) {
        type Key = (String, u32, u32, String, Option<String>, AccessKind);
        let mut index: HashMap<Key, usize> = HashMap::new();
        for (i, inp) in self.inputs.iter().enumerate() {
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
                let file = &normalize_path(file);
                let inlined_at = &inlined_at.as_deref().map(normalize_path);
                let key = (
                    file.clone(),
                    *line,
                    *col,
                    function.clone(),
                    inlined_at.clone(),
                    *kind,
                );
                let at = *index.entry(key).or_insert_with(|| {
                    self.sites.push(MergedSite {
                        file: file.clone(),
                        line: *line,
                        col: *col,
                        function: function.clone(),
                        inlined_at: inlined_at.clone(),
                        kind: *kind,
                        size: *size,
                        count: 0,
                        bytes: 0,
                        threads_by_input: Vec::new(),
                        count_by_input: Vec::new(),
                    });
                    self.sites.len() - 1
                });
                let m = &mut self.sites[at];
                if m.size != *size {
                    m.size = 0;
                }
                m.count += count;
                m.bytes += bytes;
                // Inputs are merged in order, so this input's entry is the last one if any.
                match m.threads_by_input.last_mut() {
                    // The same key twice in one file (should not happen): the larger is a lower bound.
                    Some((j, t)) if *j == i => *t = (*t).max(*threads),
                    _ => m.threads_by_input.push((i, *threads)),
                }
                match m.count_by_input.last_mut() {
                    Some((j, c)) if *j == i => *c += count,
                    _ => m.count_by_input.push((i, *count)),
                }
            }
        }
    }

    fn merge_allocs(&mut self) {
        let mut index: HashMap<(String, Vec<FrameKey>), usize> = HashMap::new();
        let mut missing = 0usize;
        // Per merged site: the input last merged into it and its largest thread count there.
        let mut threads_seen: Vec<(Option<usize>, u32)> = Vec::new();
        for i in 0..self.inputs.len() {
            let sites = self.inputs[i].profile.alloc_sites.clone();
            let hz = self.inputs[i]
                .profile
                .allocator_ops
                .as_ref()
                .map_or(0.0, |a| a.tsc_hz);
            for a in &sites {
                if !self.inputs[i].stacks.contains_key(&a.stack) {
                    missing += 1;
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
                let at = *index.entry(key).or_insert_with(|| {
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
                        lifetime: None,
                    });
                    threads_seen.push((None, 0));
                    self.alloc_by_input.push(Vec::new());
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
                let seen = &mut threads_seen[at];
                if seen.0 == Some(i) {
                    m.threads += a.threads.saturating_sub(seen.1);
                    seen.1 = seen.1.max(a.threads);
                } else {
                    m.threads += a.threads;
                    *seen = (Some(i), a.threads);
                }
                m.merged_sites += 1;
                let per = &mut self.alloc_by_input[at];
                match per.last_mut() {
                    Some((j, c, b)) if *j == i => {
                        *c += a.count;
                        *b += a.bytes;
                    }
                    _ => per.push((i, a.count, a.bytes)),
                }
            }
        }
        if missing > 0 {
            self.notes.push(format!(
                "{missing} allocation sites refer to call stacks missing from the profile; they are shown without a stack"
            ));
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
