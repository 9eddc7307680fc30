//! Cache-line sharing: the analysis that turns the runtime's line records (the profile's
//! `sharing` section, `profcc_schema::sharing`) into findings — classification (false, true,
//! read-mostly; latent and allocator-induced sharing), merging (one finding per thing to fix),
//! ranking, predicted gain, confidence and fix text — and the exit summary's lines.
//!
//! Model (Cheetah, Predator): every thread runs on its own core with an infinite private
//! cache; a write to a line that another thread accessed since the line's last write is one
//! invalidation. Only lines whose invalidations pass a threshold (contended lines), or which
//! neighbour a line written by another thread (watched, for latent sharing), are tracked per
//! byte.
//!
//! Counts on tracked lines are a sample (one access in `fs_sample` per thread);
//! [`estimate`] is the one place they are scaled, and findings carry estimates only.

pub use profcc_schema::sharing::LineAccess;
use profcc_schema::sharing::{
    ByteUse, LineRecord, LineSite, Machine, ObjectKind, ObjectRef, Settings, Sharing, Slowdowns,
    ThreadTime, LINE,
};
use profcc_schema::{AccessSite, Profile};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

// ---------------------------------------------------------------------------------------------
// Thresholds. Each is defined here and nowhere else; the runtime's summary and the report use
// these through the functions below.
// ---------------------------------------------------------------------------------------------

/// Smallest predicted speed-up shown as a gain, by the exit summary (", fixing it: up to 1.34x
/// faster") and the report ("up to 1.3x faster"); below it the report gives the saved time
/// instead and the summary says nothing.
///
/// Why 1.1: the prediction is an upper bound (every invalidation costs `fs_inv_ns`), and the
/// gains measured by padding were well under it (docs/history/sharing.md, "The reading of the
/// issue-3 run": 4.2x for a bound of 9.8x; 1.0x for bounds of 9.9x and 6.8x). A bound under 10%
/// therefore promises a gain too small to tell from the noise of timing one run, and saying
/// "faster" for it would send users after nothing. The summary used to show gains from 1.01x
/// and the report from 1.1x; this is now the one value, the report's.
pub const MIN_SHOWN_SPEEDUP: f64 = 1.1;

/// Smallest predicted speed-up ([`impact`]) for a finding to be listed, by the exit summary and
/// the report; findings below it are counted in one line per kind ([`BelowThreshold`]).
///
/// Why 1.01: a finding whose fix saves under 1% of the run is not worth a user's reading
/// (kmeans gave 558 findings, 364 of them read-mostly lines each predicted under 1.01x), yet
/// 1% is well inside what one run measures, so nothing that a fix measurably speeds up is cut.
/// `profcc report --min-speedup 0` lists every finding.
pub const MIN_LISTED_SPEEDUP: f64 = 1.01;

/// Reads are this many times the writes, or more, for a shared line to count as read-mostly.
pub const READ_MOSTLY_RATIO: u64 = 8;

/// Reads of another thread's bytes make a line truly shared only when they are at least this
/// percentage of the line's recorded accesses: a reduction that reads per-thread slots once
/// after a parallel loop does not share the slots.
pub const CROSS_READ_MIN_PERCENT: u64 = 1;

/// Recorded writes on each of two watched lines below which the pair is ignored for latent
/// sharing.
pub const LATENT_MIN_WRITES: u64 = 16;

/// The shifts of the data against the line grid tried for latent sharing: multiples of this
/// many bytes (a word), below one line.
pub const LATENT_SHIFT_STEP: u32 = 8;

/// Confidence is high when the invalidations reach this many times `fs_threshold` and the
/// recorded accesses reach [`HIGH_CONFIDENCE_RECORDED`].
pub const HIGH_CONFIDENCE_THRESHOLDS: u64 = 100;
/// Recorded accesses behind a high-confidence finding.
pub const HIGH_CONFIDENCE_RECORDED: u64 = 1000;
/// Recorded accesses behind a medium-confidence finding (fewer: low).
pub const MEDIUM_CONFIDENCE_RECORDED: u64 = 100;

/// Thread ids a line of text lists before it says how many more there are ([`threads_list`]).
pub const LISTED_THREADS: usize = 8;

/// The predicted saving is at most this percentage of the time the contending threads
/// overlapped (as in Cheetah: the threads still do their work once the line is no longer
/// shared).
pub const MAX_SAVING_PERCENT: u64 = 90;

/// A timed reload slower than a hit by at least this much is a miss (the line was not in the
/// thread's cache): the runtime counts misses with it; an L2 hit costs well under it, a
/// transfer between cores well over.
pub const MISS_NS: u64 = 20;

/// One latency sample counts at most this much (an interrupt or a preemption between the two
/// clock reads would otherwise stand for thousands of accesses).
pub const MAX_LATENCY_SAMPLE_NS: u64 = 1000;

/// With a calibration, one sample counts at most this many line transfers.
pub const TRANSFER_CAP: f64 = 2.0;

/// Percentage of a store-only miss that the program waits for: a plain store retires into the
/// store buffer and the core goes on while the line comes (loads and read-modify-writes wait
/// for it whole).
pub const STORE_VISIBLE_PERCENT: u64 = 5;

/// Timed accesses of a line that are atomics, percent, from which the line counts as a locked
/// read-modify-write line ([`line_access`]).
pub const ATOMIC_LINE_PERCENT: u64 = 50;

/// Timed accesses of a line that are plain stores, percent, from which the line counts as
/// store-only ([`line_access`]): a few loads (a reduction after the loop) do not make the
/// threads wait on the line.
pub const STORE_ONLY_PERCENT: u64 = 90;

/// Timed accesses of a line that are plain read-modify-writes (`x++`), percent, from which the
/// line counts as a read-modify-write line ([`line_access`]).
pub const RMW_LINE_PERCENT: u64 = 50;

/// Below this overlap (percent of the contending threads' CPU time) the prediction is no
/// gain, with low confidence: threads that run one after another do not contend.
pub const MIN_OVERLAP_PERCENT: u64 = 10;
/// Overlap (percent) from which a prediction can have high confidence.
pub const HIGH_OVERLAP_PERCENT: u64 = 50;
/// Latency samples behind a prediction of medium confidence (fewer: low).
pub const MEDIUM_PREDICTION_SAMPLES: u64 = 20;
/// Latency samples behind a prediction of high confidence (and a calibration).
pub const HIGH_PREDICTION_SAMPLES: u64 = 200;

// ---------------------------------------------------------------------------------------------
// Findings.
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    FalseSharing,
    TrueSharing,
    ReadMostly,
    LatentFalseSharing,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::FalseSharing => "false sharing",
            Kind::TrueSharing => "true sharing",
            Kind::ReadMostly => "read-mostly",
            Kind::LatentFalseSharing => "latent false sharing",
        }
    }
}

pub use crate::findings::Confidence;

/// Why a latent finding would share.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Latent {
    /// The two lines form one 128-byte unit that adjacent-line prefetch moves together.
    pub prefetch_pair: bool,
    /// Smallest shift (bytes, multiple of 8) of the data against the line grid that puts two
    /// threads' written bytes in one line.
    pub shift: Option<u32>,
}

/// One contended word (or byte range) of a finding.
#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub struct Word {
    pub line: u64,
    /// Offset inside the line and inside the object it belongs to (if known).
    pub offset: u32,
    pub object_offset: Option<u64>,
    /// Index into `Finding::objects`.
    pub object: Option<usize>,
    pub size: u32,
    /// Estimated accesses ([`estimate`]).
    pub reads: u64,
    pub writes: u64,
    pub readers: Vec<u32>,
    pub writers: Vec<u32>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Finding {
    pub kind: Kind,
    /// Different threads write different heap objects that the allocator put on one line.
    pub allocator_induced: bool,
    pub latent: Option<Latent>,
    pub lines: Vec<u64>,
    pub invalidations: u64,
    /// Estimated accesses to the line(s) while tracked ([`estimate`]).
    pub reads: u64,
    pub writes: u64,
    /// Threads that accessed the line(s), real ids.
    pub threads: Vec<u32>,
    /// Some byte had more readers or writers than the runtime names (two per byte): `threads`
    /// lists the ones it named.
    pub more_threads: bool,
    pub objects: Vec<ObjectRef>,
    pub words: Vec<Word>,
    /// Access sites of the line(s), most accesses first per line; estimated counts
    /// ([`estimate`]).
    pub sites: Vec<LineSite>,
    /// Element stride seen between different threads' words (bytes), when they form an array.
    pub stride: Option<u64>,
    /// Wall-clock time the fix saves and the run's speed-up, from the line's measured access
    /// latencies and the contending threads' overlap ([`predict`], docs/model.md).
    pub predicted_saving_ns: u64,
    pub predicted_speedup: f64,
    /// How the prediction was computed, and how sure it is.
    pub prediction: Prediction,
    /// How sure the finding (its kind and object) is: from the invalidations and the recorded
    /// accesses behind it; it does not grade the predicted speed-up.
    pub confidence: Confidence,
    pub fix: String,
}

/// The figures behind a finding's predicted gain ([`predict`]).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Prediction {
    /// Timed reloads of the finding's lines (all kinds).
    pub latency_samples: u64,
    /// Of them, misses ([`MISS_NS`]).
    pub latency_misses: u64,
    /// Charged latency per access to the lines (stores weighted by
    /// [`STORE_VISIBLE_PERCENT`]), ns.
    pub charged_ns_per_access: f64,
    /// Estimated accesses to the lines (recorded × `fs_sample`).
    pub accesses: u64,
    /// Share of the lines' timed accesses that were plain stores, percent.
    pub store_percent: u64,
    /// Contending threads, and the longest time two of them ran at once (ns): the wall-clock
    /// interval they shared, bounded by each one's CPU time.
    pub threads: usize,
    pub overlap_ns: u64,
    /// `overlap_ns` against the busiest contending thread's CPU time, percent.
    pub overlap_percent: u64,
    /// The calibrated line-transfer cost on this machine (`profcc calibrate`), if known.
    pub transfer_ns: Option<f64>,
    /// The contending threads' accesses (exact, all addresses; 0: not in the profile).
    pub thread_accesses: u64,
    /// Accesses of the run's other threads (counted as serial work by the access-share
    /// estimate).
    pub other_accesses: u64,
    /// `accesses` over `thread_accesses`, at most 1 (0 when unknown).
    pub access_share: f64,
    /// The access-share estimate's speed-up ([`share_speedup`]; 0 when unknown).
    pub share_speedup: f64,
    /// What the threads do to the lines ([`line_access`]): the calibration's kind.
    pub access: LineAccess,
    /// The contended slowdown the access-share estimate used: calibrated for `access`, else
    /// [`uncalibrated_slowdown`].
    pub contended_slowdown: f64,
    /// The share of the time the threads would run at once on their own cores, percent
    /// ([`own_overlap_percent`]): this run's, less the time they waited for a CPU.
    pub own_overlap_percent: u64,
    /// Every contending thread's run-queue wait was known (else `own_overlap_percent` counts
    /// it as none).
    pub waits_known: bool,
    /// What the sharing cost in this run: the latency estimate, within the time the threads
    /// ran at once (0 when they hardly did), ns.
    pub seen_saving_ns: u64,
    /// The saving is the access-share estimate's (the prediction for the threads on their own
    /// cores); false only for a profile without per-thread access counts.
    pub share_bound: bool,
    /// How sure the predicted gain is: overlap, latency samples, calibration.
    pub confidence: Confidence,
    /// One sentence: how the figure was computed, or why there is none.
    pub basis: String,
}

impl Default for Prediction {
    fn default() -> Self {
        Prediction {
            latency_samples: 0,
            latency_misses: 0,
            charged_ns_per_access: 0.0,
            accesses: 0,
            store_percent: 0,
            threads: 0,
            overlap_ns: 0,
            overlap_percent: 0,
            transfer_ns: None,
            thread_accesses: 0,
            other_accesses: 0,
            access_share: 0.0,
            share_speedup: 0.0,
            access: LineAccess::LoadStore,
            contended_slowdown: 0.0,
            own_overlap_percent: 0,
            waits_known: false,
            seen_saving_ns: 0,
            share_bound: false,
            confidence: Confidence::Low,
            basis: "no prediction".into(),
        }
    }
}

/// Whether a predicted speed-up is shown as a gain ([`MIN_SHOWN_SPEEDUP`]).
pub fn gain_shown(speedup: f64) -> bool {
    speedup >= MIN_SHOWN_SPEEDUP
}

/// All accesses estimated from recorded ones: on a tracked line one access in `fs_sample` per
/// thread is recorded. The only place a count is scaled by `fs_sample`.
pub fn estimate(settings: &Settings, recorded: u64) -> u64 {
    recorded.saturating_mul(settings.sample.max(1) as u64)
}

/// A finding's impact by the machine's model: the predicted speed-up of the run if it is fixed
/// (for a latent finding: if the layout shifted into sharing). The one function the threshold
/// ([`MIN_LISTED_SPEEDUP`]) is applied through, so a new prediction formula changes it here.
pub fn impact(f: &Finding) -> f64 {
    f.predicted_speedup
}

/// Findings of one kind below the listing threshold: counted, not listed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BelowThreshold {
    pub kind: Kind,
    /// Findings (after merging) and the cache lines they cover.
    pub findings: usize,
    pub lines: usize,
    /// The threshold they are below ([`MIN_LISTED_SPEEDUP`] unless the caller chose another).
    pub below_speedup: f64,
    /// The largest of them ([`impact`]) and its first access site (`file:line`, file's base
    /// name), if the profile has it.
    pub largest_speedup: f64,
    pub largest_at: Option<String>,
}

/// Split ranked findings into those listed (impact at least `min_speedup`, order kept) and a
/// summary per kind of the others (in [`Kind`] order).
pub fn split_listed(
    found: Vec<Finding>,
    sites: &[AccessSite],
    min_speedup: f64,
) -> (Vec<Finding>, Vec<BelowThreshold>) {
    let mut listed = Vec::new();
    let mut below: BTreeMap<Kind, BelowThreshold> = BTreeMap::new();
    for f in found {
        if impact(&f) >= min_speedup {
            listed.push(f);
            continue;
        }
        let b = below.entry(f.kind).or_insert(BelowThreshold {
            kind: f.kind,
            findings: 0,
            lines: 0,
            below_speedup: min_speedup,
            largest_speedup: 0.0,
            largest_at: None,
        });
        b.findings += 1;
        b.lines += f.lines.len();
        if impact(&f) > b.largest_speedup {
            b.largest_speedup = impact(&f);
            b.largest_at =
                first_site(sites, &f).map(|s| format!("{}:{}", basename(&s.file), s.line));
        }
    }
    (listed, below.into_values().collect())
}

/// One line per kind of [`split_listed`]'s summary: `+ 364 read-mostly findings (412 lines)
/// below 1.01x predicted gain, the largest at kmeans.c:120`.
pub fn below_threshold_line(b: &BelowThreshold) -> String {
    let s = |n: usize| if n == 1 { "" } else { "s" };
    let at = match &b.largest_at {
        Some(at) if b.findings == 1 => format!(", at {at}"),
        Some(at) => format!(", the largest at {at}"),
        None => String::new(),
    };
    format!(
        "+ {} {} finding{} ({} line{}) below {:.2}x predicted gain{at}",
        b.findings,
        b.kind.as_str(),
        s(b.findings),
        b.lines,
        s(b.lines),
        b.below_speedup
    )
}

/// The order of findings, most important first: actual sharing before latent, then by
/// invalidations, then by writes, then by line address. The exit summary and the report (also
/// across several profiles) rank with this and nothing else.
pub fn rank_order(a: &Finding, b: &Finding) -> Ordering {
    let latent = |f: &Finding| f.kind == Kind::LatentFalseSharing;
    latent(a)
        .cmp(&latent(b))
        .then(b.invalidations.cmp(&a.invalidations))
        .then(b.writes.cmp(&a.writes))
        .then_with(|| a.lines.cmp(&b.lines))
}

/// Findings of one profile, ranked ([`rank_order`]); none when it has no sharing records.
///
/// `global_of(addr)` gives the start of the global or static variable that holds a run-time
/// address, when the caller knows the symbol table (the report does, the runtime does not):
/// the contended lines of one global then make one finding, as lines of one heap block do.
/// Static lines that no symbol is known for make one finding when they read the same: same
/// kind, same first access site (`file:line`) and same threads — the lines of one array
/// walked by one loop.
pub fn findings(p: &Profile, global_of: &dyn Fn(u64) -> Option<u64>) -> Vec<Finding> {
    match &p.sharing {
        Some(s) => analyze(s, &p.sites, p.duration_ns, global_of),
        None => Vec::new(),
    }
}

fn analyze(
    s: &Sharing,
    sites: &[AccessSite],
    duration_ns: u64,
    global_of: &dyn Fn(u64) -> Option<u64>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let by_addr: BTreeMap<u64, &LineRecord> = s.lines.iter().map(|l| (l.addr, l)).collect();
    let mut contended_lines = BTreeSet::new();
    for l in &s.lines {
        if !l.contended {
            continue;
        }
        if let Some(f) = classify_line(s, l, duration_ns) {
            contended_lines.insert(l.addr);
            out.push(f);
        }
    }
    let mut out = merge(out, s, sites, duration_ns, global_of);
    let mut latent = Vec::new();
    for l in &s.lines {
        let Some(r) = by_addr.get(&(l.addr + LINE)) else {
            continue;
        };
        if contended_lines.contains(&l.addr) || contended_lines.contains(&r.addr) {
            continue;
        }
        if let Some(f) = latent_pair(s, l, r, duration_ns) {
            latent.push(f);
        }
    }
    // A latent finding on an object (or allocation site) that already has an actual finding
    // says nothing new: fixing the actual one is the advice.
    let actual: Vec<(ObjectKind, u64)> = out.iter().flat_map(object_ids).collect();
    let latent: Vec<Finding> = merge(latent, s, sites, duration_ns, global_of)
        .into_iter()
        .filter(|f| !object_ids(f).any(|id| actual.contains(&id)))
        .collect();
    out.extend(latent);
    out.sort_by(rank_order);
    out
}

/// What a finding's objects are, for telling two findings about the same thing: a heap block
/// by its allocation site (stack id; its start without one), anything else by its start.
fn object_ids(f: &Finding) -> impl Iterator<Item = (ObjectKind, u64)> + '_ {
    f.objects.iter().map(|o| match (o.kind, o.alloc_stack) {
        (ObjectKind::Heap, Some(stack)) => (o.kind, stack as u64),
        _ => (o.kind, o.start),
    })
}

/// The first of a finding's access sites that the profile has.
fn first_site<'a>(sites: &'a [AccessSite], f: &Finding) -> Option<&'a AccessSite> {
    f.sites.iter().find_map(|ls| sites.get(ls.site as usize))
}

/// What merges two findings: the same object, or for a static line no symbol is known for,
/// the same place and threads.
#[derive(PartialEq, Eq, Hash)]
enum MergeKey {
    Object(Kind, bool, ObjectKind, u64),
    /// A heap allocation site (stack id).
    Site(Kind, bool, u32),
    Place(Kind, bool, String, u32, Vec<u32>),
}

/// What a finding merges by ([`merge`]): one key per thing to fix.
/// - heap: the allocation site (call stack), so the blocks one site allocates again and again
///   (per iteration, per thread) are one finding; a block without a recorded stack by itself;
/// - stack: the place (`file:line`) of its first access site, so the same local of every
///   thread's stack is one finding;
/// - static: the global holding the first word; failing that, the place and threads.
fn merge_key(
    x: &Finding,
    sites: &[AccessSite],
    global_of: &dyn Fn(u64) -> Option<u64>,
) -> Option<MergeKey> {
    let o = x.objects.first()?;
    let object = |id: u64| Some(MergeKey::Object(x.kind, x.allocator_induced, o.kind, id));
    match o.kind {
        ObjectKind::Heap => match o.alloc_stack {
            Some(stack) => Some(MergeKey::Site(x.kind, x.allocator_induced, stack)),
            None => object(o.start),
        },
        ObjectKind::Stack => match first_site(sites, x) {
            Some(site) => Some(MergeKey::Place(
                x.kind,
                x.allocator_induced,
                site.file.clone(),
                site.line,
                Vec::new(),
            )),
            None => object(o.start),
        },
        ObjectKind::Static => {
            let w = x.words.first()?;
            if let Some(start) = global_of(w.line + w.offset as u64) {
                return object(start);
            }
            let site = first_site(sites, x)?;
            Some(MergeKey::Place(
                x.kind,
                x.allocator_induced,
                site.file.clone(),
                site.line,
                x.threads.clone(),
            ))
        }
    }
}

/// One finding per thing to fix: a heap block, global or stack that spans several contended
/// lines is one finding per kind. A static line's object is the global holding its first
/// word; failing that, its place and threads ([`findings`]).
fn merge(
    found: Vec<Finding>,
    s: &Sharing,
    sites: &[AccessSite],
    duration_ns: u64,
    global_of: &dyn Fn(u64) -> Option<u64>,
) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    let mut index: HashMap<MergeKey, usize> = HashMap::new();
    // Per merged finding, its parts' (threads, lines), and the lines and words (line,
    // offset) it has: a site's blocks can be thousands of lines (gapbs bfs's frontier: 8,192
    // tracked lines in one finding), so membership is looked up, and the stride and fix text
    // are worked out once, after the last part.
    let mut parts: Vec<Vec<(Vec<u32>, Vec<u64>)>> = Vec::new();
    let mut seen_lines: Vec<HashSet<u64>> = Vec::new();
    let mut seen_words: Vec<HashSet<(u64, u32)>> = Vec::new();
    for f in found {
        let k = merge_key(&f, sites, global_of);
        let Some(&i) = k.as_ref().and_then(|k| index.get(k)) else {
            if let Some(k) = k {
                index.insert(k, out.len());
            }
            parts.push(vec![(f.threads.clone(), f.lines.clone())]);
            seen_lines.push(f.lines.iter().copied().collect());
            seen_words.push(f.words.iter().map(|w| (w.line, w.offset)).collect());
            out.push(f);
            continue;
        };
        let m = &mut out[i];
        parts[i].push((f.threads.clone(), f.lines.clone()));
        // Latent pairs overlap (lines a+b, b+c): each line and word once.
        for l in &f.lines {
            if seen_lines[i].insert(*l) {
                m.lines.push(*l);
            }
        }
        m.invalidations += f.invalidations;
        m.reads += f.reads;
        m.writes += f.writes;
        let threads: BTreeSet<u32> = m.threads.iter().chain(&f.threads).copied().collect();
        m.threads = threads.into_iter().collect();
        m.more_threads |= f.more_threads;
        // Where each of f's objects is in m's list (added when new).
        let at: Vec<usize> = f
            .objects
            .iter()
            .map(|o| match m.objects.iter().position(|x| x == o) {
                Some(p) => p,
                None => {
                    m.objects.push(o.clone());
                    m.objects.len() - 1
                }
            })
            .collect();
        for mut w in f.words {
            if !seen_words[i].insert((w.line, w.offset)) {
                continue;
            }
            w.object = w.object.and_then(|j| at.get(j).copied());
            m.words.push(w);
        }
        add_sites(&mut m.sites, &f.sites);
        m.confidence = m.confidence.max(f.confidence);
    }
    for (m, parts) in out.iter_mut().zip(&parts) {
        if parts.len() > 1 {
            m.stride = stride_of(&m.words);
            m.fix = fix_text(m);
            if m.latent.is_none() {
                repredict(m, parts, s, duration_ns);
                m.fix = fix_text(m);
            }
        }
    }
    out
}

/// The predicted gain of a merged finding. Parts contended by the same threads are one
/// contention (their lines predicted together, [`predict`]); parts of different threads (a
/// site's blocks of 30 iterations x 8 threads are not one line shared by 240 threads) add
/// their savings, at most [`MAX_SAVING_PERCENT`] of the run. The basis shown is that of the
/// largest part.
fn repredict(m: &mut Finding, parts: &[(Vec<u32>, Vec<u64>)], s: &Sharing, duration_ns: u64) {
    let mut groups: BTreeMap<&[u32], Vec<u64>> = BTreeMap::new();
    for (threads, lines) in parts {
        let g = groups.entry(threads.as_slice()).or_default();
        for l in lines {
            if !g.contains(l) {
                g.push(*l);
            }
        }
    }
    let mut total = 0u64;
    let mut largest: Option<Predicted> = None;
    for (threads, lines) in &groups {
        let p = predict(s, lines, threads, duration_ns);
        total = total.saturating_add(p.saving_ns);
        if largest.as_ref().is_none_or(|l| p.saving_ns > l.saving_ns) {
            largest = Some(p);
        }
    }
    let saving = total.min(duration_ns.saturating_mul(MAX_SAVING_PERCENT) / 100);
    m.predicted_saving_ns = saving;
    m.predicted_speedup = speedup_of(duration_ns, saving);
    if let Some(p) = largest {
        m.prediction = p.prediction;
        if groups.len() > 1 {
            m.prediction.basis = format!(
                "{} groups of threads, savings added; the largest: {}",
                groups.len(),
                m.prediction.basis
            );
        }
    }
}

/// The run's speed-up if `saving_ns` of its `duration_ns` vanished.
pub fn speedup_of(duration_ns: u64, saving_ns: u64) -> f64 {
    if duration_ns > saving_ns && duration_ns > 0 {
        duration_ns as f64 / (duration_ns - saving_ns) as f64
    } else {
        1.0
    }
}

/// A predicted gain: the time saved, the run's speed-up, and how it was computed.
#[derive(Debug, Clone, PartialEq)]
pub struct Predicted {
    pub saving_ns: u64,
    /// The stall per thread before the overlap bound (what the fix could save if the threads
    /// ran at once throughout).
    pub stall_ns: u64,
    pub speedup: f64,
    pub prediction: Prediction,
}

/// The time two threads surely ran at once. In the wall-clock interval they shared, each used
/// its CPU time in proportion (`cpu × shared / lifetime`); two threads that used `x` and `y`
/// of an interval `i` ran at once for at least `x + y − i`. A thread blocked in a join shares
/// an interval but runs nothing; two threads that took turns on a busy machine used less than
/// the interval between them; two threads only ever seen on one and the same CPU never ran at
/// once.
pub fn overlap_ns(a: &ThreadTime, b: &ThreadTime) -> u64 {
    let shared = a
        .end_ns
        .min(b.end_ns)
        .saturating_sub(a.start_ns.max(b.start_ns));
    if shared == 0 || (a.cpus.len() == 1 && a.cpus == b.cpus) {
        return 0;
    }
    let used = |t: &ThreadTime| {
        let life = t.end_ns.saturating_sub(t.start_ns).max(1);
        ((t.cpu_ns as u128 * shared as u128 / life as u128) as u64).min(shared)
    };
    let (x, y) = (used(a), used(b));
    (x + y).saturating_sub(shared).min(x).min(y)
}

/// The predicted gain of fixing the sharing of `lines` among `threads` in a run of
/// `duration_ns` — the one formula (docs/model.md, "Predicted gain"):
///
/// ```text
/// charged_l = Σ_kind w_kind · min(extra_kind, samples_kind · cap) / samples_l
///             (w: 1 for loads and read-modify-writes, STORE_VISIBLE_PERCENT/100 for stores;
///              cap: TRANSFER_CAP × calibrated transfer, else MAX_LATENCY_SAMPLE_NS)
/// stall    = Σ_l charged_l · accesses_l            (accesses_l = recorded × fs_sample)
/// latency  = min(stall / threads, MAX_SAVING_PERCENT% · overlap)
/// shared   = duration × (1 − 1 / share_speedup(...))     (the access-share estimate)
/// saving   = shared if shared < stall / threads (and the profile has per-thread counts),
///            else latency
/// speedup  = duration / (duration − saving)
/// ```
///
/// `extra` is the time a timed reload of the line took beyond a cache hit, sampled on one
/// access in `fs_sample` per thread while more than one thread existed; `overlap` is the
/// longest time two of `threads` ran at once ([`overlap_ns`]). The stall is measured in the
/// instrumented run and the duration is the instrumented run's: the hooks slow the threads'
/// work and stretch the interval between their accesses alike, so a line moves as often per
/// unit of time and the stall's share of the run is the native one (docs/model.md says when
/// it is not). Threads that hardly overlapped (below [`MIN_OVERLAP_PERCENT`] of their CPU
/// time) get no gain.
pub fn predict(s: &Sharing, lines: &[u64], threads: &[u32], duration_ns: u64) -> Predicted {
    let mut p = Prediction {
        transfer_ns: s.machine.as_ref().and_then(|m| m.transfer_ns),
        access: line_access(s, lines),
        ..Prediction::default()
    };
    let cap = |samples: u64| match p.transfer_ns {
        Some(t) => samples as f64 * t * TRANSFER_CAP,
        None => (samples * MAX_LATENCY_SAMPLE_NS) as f64,
    };
    let mut stall = 0.0;
    let mut stores = 0;
    for &a in lines {
        // The runtime writes lines in address order; a hand-made profile may not.
        let found = s.lines.binary_search_by_key(&a, |l| l.addr).ok();
        let Some(i) = found.or_else(|| s.lines.iter().position(|l| l.addr == a)) else {
            continue;
        };
        let l = &s.lines[i];
        let lat = &l.latency;
        let samples: u64 = lat.all().iter().map(|x| x.samples).sum();
        let accesses = estimate(
            &s.settings,
            l.bytes.iter().map(|b| b.reads + b.writes).sum(),
        );
        p.accesses += accesses;
        if samples == 0 {
            continue;
        }
        let part = |x: &profcc_schema::sharing::Latency| (x.extra_ns as f64).min(cap(x.samples));
        let charged = (part(&lat.load)
            + part(&lat.rmw)
            + part(&lat.atomic)
            + part(&lat.store) * STORE_VISIBLE_PERCENT as f64 / 100.0)
            / samples as f64;
        stall += charged * accesses as f64;
        p.latency_samples += samples;
        p.latency_misses += lat.all().iter().map(|x| x.misses).sum::<u64>();
        stores += lat.store.samples;
    }
    if p.accesses > 0 {
        p.charged_ns_per_access = stall / p.accesses as f64;
    }
    p.store_percent = stores * 100 / p.latency_samples.max(1);
    // Overlap of the contending threads in this run.
    let times: Vec<&ThreadTime> = s
        .threads
        .iter()
        .filter(|t| threads.contains(&t.id))
        .collect();
    p.threads = threads.len();
    for (i, a) in times.iter().enumerate() {
        for b in &times[i + 1..] {
            p.overlap_ns = p.overlap_ns.max(overlap_ns(a, b));
            p.own_overlap_percent = p.own_overlap_percent.max(own_overlap_percent(a, b));
        }
    }
    p.waits_known = !times.is_empty() && times.iter().all(|t| t.wait_ns.is_some());
    let busiest = times.iter().map(|t| t.cpu_ns).max().unwrap_or(0);
    p.overlap_percent = p.overlap_ns * 100 / busiest.max(1);
    let overlapped = p.overlap_percent >= MIN_OVERLAP_PERCENT;
    // Seen in this run: the latency estimate, within the time the threads ran at once.
    let latency_unbounded = (stall / threads.len().max(1) as f64) as u64;
    p.seen_saving_ns = if overlapped && threads.len() >= 2 {
        latency_unbounded.min(p.overlap_ns.saturating_mul(MAX_SAVING_PERCENT) / 100)
    } else {
        0
    };
    // Predicted on their own cores: the access-share estimate at the contended slowdown of
    // what the threads do to the lines, for the time they would run at once.
    let (slowdown, calibrated) = line_slowdown(s, lines, p.access);
    p.contended_slowdown = slowdown;
    p.thread_accesses = times.iter().map(|t| t.accesses).sum();
    let mut saving = p.seen_saving_ns;
    if p.thread_accesses > 0 {
        let all: u64 = s.threads.iter().map(|t| t.accesses).sum();
        p.other_accesses = all.saturating_sub(p.thread_accesses);
        p.access_share = (p.accesses as f64 / p.thread_accesses as f64).min(1.0);
        p.share_speedup = share_speedup(
            p.access_share,
            p.contended_slowdown,
            p.own_overlap_percent.min(100) as f64 / 100.0,
            p.thread_accesses as f64 / times.len() as f64,
            p.other_accesses as f64,
        );
        if threads.len() >= 2 {
            saving = (duration_ns as f64 * (1.0 - 1.0 / p.share_speedup)) as u64;
            p.share_bound = true;
        }
    }
    p.confidence = if !calibrated
        || p.thread_accesses == 0
        || p.own_overlap_percent < MIN_OVERLAP_PERCENT
        || p.latency_samples < MEDIUM_PREDICTION_SAMPLES
    {
        Confidence::Low
    } else if p.own_overlap_percent >= HIGH_OVERLAP_PERCENT
        && p.latency_samples >= HIGH_PREDICTION_SAMPLES
        && p.waits_known
    {
        Confidence::High
    } else {
        Confidence::Medium
    };
    let seen = if s.threads.is_empty() {
        String::new()
    } else if !overlapped {
        format!(
            "seen in this run: the threads ran at once for {} ms, {}% of their CPU time (under {MIN_OVERLAP_PERCENT}%: they hardly overlapped, so this run paid little for the line)",
            fmt_ms(p.overlap_ns),
            p.overlap_percent
        )
    } else if p.latency_samples == 0 {
        "seen in this run: no latency samples on the lines".into()
    } else {
        format!(
            "seen in this run: {} ms, {} accesses × {:.2} ns measured beyond a cache hit ({} timed reloads, {} misses, {}% stores counted at {STORE_VISIBLE_PERCENT}%{}) / {} threads, within {MAX_SAVING_PERCENT}% of the {} ms they ran at once ({}% of their CPU time)",
            fmt_ms(p.seen_saving_ns),
            p.accesses,
            p.charged_ns_per_access,
            p.latency_samples,
            p.latency_misses,
            p.store_percent,
            match p.transfer_ns {
                Some(t) => format!("; calibrated transfer {t:.0} ns"),
                None => "; machine not calibrated (profcc calibrate)".into(),
            },
            threads.len(),
            fmt_ms(p.overlap_ns),
            p.overlap_percent
        )
    };
    p.basis = if s.threads.is_empty() {
        "no prediction: the profile has no thread times or latency samples (written by a profcc older than profile version 5)".into()
    } else if threads.len() < 2 {
        format!("no gain: one thread; {seen}")
    } else if p.thread_accesses == 0 {
        format!(
            "{seen}; no prediction for their own cores (the profile has no per-thread access counts)"
        )
    } else {
        format!("{}; {seen}", share_basis(&p, calibrated, saving))
    };
    Predicted {
        saving_ns: saving,
        stall_ns: latency_unbounded,
        speedup: speedup_of(duration_ns, saving),
        prediction: p,
    }
}

/// Some two of `threads` lived at the same time (or the profile has no thread times to tell):
/// sharing needs overlapping lifetimes. Threads started one after another, each joined before
/// the next, hand a line over but never share it, whatever the schedule.
fn lives_overlap(s: &Sharing, threads: &BTreeSet<u32>) -> bool {
    let times: Vec<&ThreadTime> = s
        .threads
        .iter()
        .filter(|t| threads.contains(&t.id))
        .collect();
    if times.len() < threads.len() {
        return true;
    }
    times.iter().enumerate().any(|(i, a)| {
        times[i + 1..]
            .iter()
            .any(|b| a.end_ns.min(b.end_ns) > a.start_ns.max(b.start_ns))
    })
}

/// The share of the time two threads would run at once on their own cores, percent: in the
/// interval both lived, each runs `cpu / (lifetime − waits)` of it (the rest it is blocked, by
/// the program's own logic: a join, a lock, I/O); two that run `x` and `y` of it run at once
/// for at least `x + y − 1`. The waits are what a busy machine adds, and are taken out: the
/// thread's own run-queue wait (another program or thread had the CPU), and the time it may
/// have been blocked on the other while that one waited for a CPU (a barrier or a lock the
/// other would have reached or released sooner on its own core): the other's run-queue wait
/// within the interval, at most the thread's own blocked time. Without the second, two threads
/// that meet at a barrier on a machine with fewer free CPUs than threads looked blocked by
/// their own logic, and a real false sharing was predicted no gain. Unknown waits count as
/// none (a busy machine then lowers the figure). Threads whose lives did not overlap: 0.
pub fn own_overlap_percent(a: &ThreadTime, b: &ThreadTime) -> u64 {
    let shared = a
        .end_ns
        .min(b.end_ns)
        .saturating_sub(a.start_ns.max(b.start_ns));
    if shared == 0 {
        return 0;
    }
    // The part of `t`'s run-queue wait that fell in the shared interval (spread evenly).
    let wait_in_shared = |t: &ThreadTime| {
        let life = t.end_ns.saturating_sub(t.start_ns).max(1);
        (t.wait_ns.unwrap_or(0) as u128 * shared as u128 / life as u128) as u64
    };
    let runs = |t: &ThreadTime, other: &ThreadTime| {
        let life = t.end_ns.saturating_sub(t.start_ns);
        let wait = t.wait_ns.unwrap_or(0);
        let blocked = life.saturating_sub(wait).saturating_sub(t.cpu_ns);
        let on_other = wait_in_shared(other).min(blocked);
        let active = life.saturating_sub(wait).saturating_sub(on_other).max(1);
        (t.cpu_ns as f64 / active as f64).min(1.0)
    };
    (((runs(a, b) + runs(b, a) - 1.0).max(0.0)) * 100.0).round() as u64
}

/// What the threads of `lines` do to them, from the timed accesses (every sampled access of
/// each kind has the same chance to be timed): mostly atomics, only stores, mostly plain
/// read-modify-writes, else loads of what others store ([`ATOMIC_LINE_PERCENT`],
/// [`STORE_ONLY_PERCENT`], [`RMW_LINE_PERCENT`]). Untimed lines: by the recorded reads.
pub fn line_access(s: &Sharing, lines: &[u64]) -> LineAccess {
    let n = timed_by_kind(s, lines);
    let all: u64 = n.iter().sum();
    let share = |k: LineAccess| n[k as usize] * 100;
    if all == 0 {
        let reads: u64 = records_of(s, lines)
            .into_iter()
            .flat_map(|l| &l.bytes)
            .map(|b| b.reads)
            .sum();
        return if reads == 0 {
            LineAccess::Store
        } else {
            LineAccess::LoadStore
        };
    }
    if share(LineAccess::Atomic) >= ATOMIC_LINE_PERCENT * all {
        LineAccess::Atomic
    } else if share(LineAccess::Store) >= STORE_ONLY_PERCENT * all {
        LineAccess::Store
    } else if share(LineAccess::Rmw) >= RMW_LINE_PERCENT * all {
        LineAccess::Rmw
    } else {
        LineAccess::LoadStore
    }
}

/// The records of `lines` among the run's tracked lines, each record once. They are searched for
/// (the profile keeps them in address order): every line's prediction asks, and a merged
/// finding can hold thousands of lines (gapbs bfs: 8,192), so a scan of every record for each
/// made the analysis quadratic. A line the search misses (a profile not in order) sends the
/// lookup through every record.
fn records_of<'a>(s: &'a Sharing, lines: &[u64]) -> Vec<&'a LineRecord> {
    let mut want = lines.to_vec();
    want.sort_unstable();
    want.dedup();
    // Every record of each line (a line can have two: tracked again after its object was
    // freed and its address reused).
    let mut found: Vec<&LineRecord> = Vec::with_capacity(want.len());
    let mut all_found = true;
    for &a in &want {
        let from = s.lines.partition_point(|l| l.addr < a);
        let before = found.len();
        found.extend(s.lines[from..].iter().take_while(|l| l.addr == a));
        all_found &= found.len() > before;
    }
    if all_found {
        return found;
    }
    let set: HashSet<u64> = want.into_iter().collect();
    s.lines.iter().filter(|l| set.contains(&l.addr)).collect()
}

/// The timed accesses of `lines` per kind, indexed by `LineAccess as usize`.
fn timed_by_kind(s: &Sharing, lines: &[u64]) -> [u64; 4] {
    let mut n = [0u64; 4];
    for l in records_of(s, lines) {
        for k in LineAccess::ALL {
            n[k as usize] += l.latency.of(k).samples;
        }
    }
    n
}

/// The contended slowdown of `lines`: each kind's slowdown ([`slowdown_of`]) weighted by its
/// share of the lines' timed accesses (a line whose threads load some fields and increment
/// others pays some of each); untimed lines take `kind`'s. Whether every figure used was
/// calibrated.
pub fn line_slowdown(s: &Sharing, lines: &[u64], kind: LineAccess) -> (f64, bool) {
    let m = s.machine.as_ref();
    let n = timed_by_kind(s, lines);
    let all: u64 = n.iter().sum();
    if all == 0 {
        return slowdown_of(m, kind);
    }
    let (mut g, mut calibrated) = (0.0, true);
    for k in LineAccess::ALL.into_iter().filter(|&k| n[k as usize] > 0) {
        let (x, cal) = slowdown_of(m, k);
        g += x * n[k as usize] as f64 / all as f64;
        calibrated &= cal;
    }
    (g, calibrated)
}

/// The contended slowdown of a kind of line on the run's machine and whether it was measured
/// (`profcc calibrate`; a calibration from before the kinds were measured apart has the
/// read-modify-write figure only), else the assumed one ([`uncalibrated_slowdown`]).
pub fn slowdown_of(m: Option<&Machine>, k: LineAccess) -> (f64, bool) {
    let measured = m.and_then(|m| {
        m.slowdowns.and_then(|x| x.of(k)).or(match k {
            LineAccess::Rmw => m.contended_slowdown,
            _ => None,
        })
    });
    match measured {
        Some(x) => (x, true),
        None => (uncalibrated_slowdown(k), false),
    }
}

/// The contended slowdown assumed for a kind of line when the machine is not calibrated: a
/// plain store's is mostly hidden by the store buffer (1.06x measured natively for a
/// store-only line on the project's VM), a load waits for the line (2.2x calibrated there),
/// a thread's own `x++` waits and then stores (the vector-of-counters case at -O0 gained 3.3x
/// by padding), a locked add holds it (an atomic counter: 5.6-6.7x).
pub fn uncalibrated_slowdown(k: LineAccess) -> f64 {
    match k {
        LineAccess::Store => 1.1,
        LineAccess::LoadStore => 2.0,
        LineAccess::Rmw => 3.0,
        LineAccess::Atomic => 5.0,
    }
}

/// The access-share estimate of the program's speed-up, with one access as the unit of native
/// time: each contending thread makes `per_thread` accesses, `overlapped` of them while the
/// others ran, and those cost `gain = 1 + share × (slowdown − 1)` each (`share` of them on
/// the lines, each `slowdown` times a private line's); the other threads' `other` accesses
/// are counted as serial work:
///
/// ```text
/// speed-up = (other + per_thread × (1 − overlapped + overlapped × gain)) / (other + per_thread)
/// ```
pub fn share_speedup(
    share: f64,
    slowdown: f64,
    overlapped: f64,
    per_thread: f64,
    other: f64,
) -> f64 {
    let gain = 1.0 + share.clamp(0.0, 1.0) * (slowdown - 1.0).max(0.0);
    let ov = overlapped.clamp(0.0, 1.0);
    let (other, per_thread) = (other.max(0.0), per_thread.max(0.0));
    if other + per_thread <= 0.0 {
        return 1.0;
    }
    (other + per_thread * (1.0 - ov + ov * gain)) / (other + per_thread)
}

/// The access-share part of a prediction's basis: its figures, its saving and whether the
/// saving took it.
fn share_basis(p: &Prediction, calibrated: bool, share_saving: u64) -> String {
    format!(
        "on their own cores: {:.2}x, {} ms: {:.1}% of the threads' {} accesses on the line, {} lines {:.2}x slower contended ({}), the threads running at once {}% of the time ({}), {} accesses by other threads",
        p.share_speedup,
        fmt_ms(share_saving),
        p.access_share * 100.0,
        p.thread_accesses,
        p.access.as_str(),
        p.contended_slowdown,
        if calibrated {
            "calibrated on this machine"
        } else {
            "assumed: run profcc calibrate"
        },
        p.own_overlap_percent.min(100),
        if p.waits_known {
            "this run's, less their waits for a CPU"
        } else {
            "this run's: their waits for a CPU are not known"
        },
        p.other_accesses,
    )
}

fn fmt_ms(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1e6)
}

/// The key of this machine's calibration: CPU model and topology (online CPUs), from the
/// text of /proc/cpuinfo.
pub fn machine_key(cpuinfo: &str, cpus: u32) -> String {
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "model name").then(|| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    format!("{model}, {cpus} CPUs")
}

/// Where `profcc calibrate` keeps its results: `$XDG_CACHE_HOME/profcc/calibration.json`, or
/// `$HOME/.cache/profcc/calibration.json`.
pub fn calibration_file(
    xdg_cache_home: Option<&std::ffi::OsStr>,
    home: Option<&std::ffi::OsStr>,
) -> Option<std::path::PathBuf> {
    profcc_schema::cache_file(xdg_cache_home, home, "calibration.json")
}

/// One machine's calibration in the cache file (a JSON list of them).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Calibration {
    /// [`machine_key`].
    pub key: String,
    /// Median cost of moving a line from one CPU to another, ns (half a ping-pong round trip).
    pub transfer_ns: f64,
    /// Each CPU pair measured: (from, to, ns).
    pub pairs: Vec<(u32, u32, f64)>,
    /// Two threads incrementing their own words of one line against the same on separate
    /// lines: how many times slower (None: not measured, e.g. the CPUs were busy).
    #[serde(default)]
    pub contended_slowdown: Option<f64>,
    /// The same for each kind of line ([`LineAccess`]); `contended_slowdown` is the
    /// load-and-store figure (absent in a calibration older than the kinds).
    #[serde(default)]
    pub slowdowns: Option<Slowdowns>,
    /// The memory bandwidth (absent: not measured, a calibration from before it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<profcc_schema::regions::Bandwidth>,
}

/// The calibration the cache file's text holds for the machine `key` (one with a transfer
/// cost).
pub fn calibration_for(text: &str, key: &str) -> Option<Calibration> {
    let list: Vec<Calibration> = serde_json::from_str(text).ok()?;
    list.into_iter()
        .find(|c| c.key == key && c.transfer_ns > 0.0)
}

/// Line transfer cost assumed for a latent finding's prediction when the machine is not
/// calibrated (`profcc calibrate`), ns: a typical cost of moving a line between two cores of
/// one x86 socket.
pub const UNCALIBRATED_TRANSFER_NS: f64 = 100.0;

/// A latent finding's predicted gain: nothing is contended yet, so nothing was timed. If the
/// layout shifted into sharing, every write of the less written side would move the line
/// once: `writes × transfer × STORE_VISIBLE_PERCENT/100`, over the threads, within
/// [`MAX_SAVING_PERCENT`] of the time they overlapped, as in [`predict`] (whose overlap it
/// uses); threads that hardly overlapped gain nothing.
fn predict_latent(s: &Sharing, f: &Finding, duration_ns: u64) -> Predicted {
    let mut base = predict(s, &[], &f.threads, duration_ns);
    let p = &mut base.prediction;
    let (transfer, how) = match p.transfer_ns {
        Some(t) => (t, format!("calibrated transfer {t:.0} ns")),
        None => (
            UNCALIBRATED_TRANSFER_NS,
            format!("an assumed {UNCALIBRATED_TRANSFER_NS:.0} ns transfer (profcc calibrate)"),
        ),
    };
    let stall = f.writes as f64 * transfer * STORE_VISIBLE_PERCENT as f64 / 100.0;
    base.stall_ns = (stall / f.threads.len().max(1) as f64) as u64;
    // On their own cores: the threads' time at once is their shared CPU time at the share
    // they would run together (the run's own overlap depends on the machine's load).
    let cpu = s
        .threads
        .iter()
        .filter(|t| f.threads.contains(&t.id))
        .map(|t| t.cpu_ns)
        .max()
        .unwrap_or(0);
    let together = cpu.saturating_mul(p.own_overlap_percent.min(100)) / 100;
    let overlapped = p.own_overlap_percent >= MIN_OVERLAP_PERCENT && f.threads.len() >= 2;
    let saving = if overlapped {
        base.stall_ns
            .min(together.saturating_mul(MAX_SAVING_PERCENT) / 100)
    } else {
        0
    };
    p.share_bound = false;
    p.seen_saving_ns = 0;
    p.confidence = Confidence::Low;
    p.basis = format!(
        "if shifted into sharing: {} writes × {how} at {STORE_VISIBLE_PERCENT}% (stores) / {} threads, within {MAX_SAVING_PERCENT}% of the {} ms they would run at once on their own cores ({}% of their time{})",
        f.writes,
        f.threads.len(),
        fmt_ms(together),
        p.own_overlap_percent,
        if overlapped { "" } else { ": no gain, under the minimum" }
    );
    base.saving_ns = saving;
    base.speedup = speedup_of(duration_ns, saving);
    base
}

/// How sure a finding is, from the invalidations and the recorded accesses behind it.
fn confidence(s: &Settings, invalidations: u64, recorded: u64) -> Confidence {
    if invalidations >= HIGH_CONFIDENCE_THRESHOLDS * s.threshold as u64
        && recorded >= HIGH_CONFIDENCE_RECORDED
    {
        Confidence::High
    } else if recorded >= MEDIUM_CONFIDENCE_RECORDED {
        Confidence::Medium
    } else {
        Confidence::Low
    }
}

/// A line's recorded site counts as estimates.
fn estimated_sites(s: &Settings, sites: &[LineSite]) -> Vec<LineSite> {
    sites
        .iter()
        .map(|x| LineSite {
            site: x.site,
            reads: estimate(s, x.reads),
            writes: estimate(s, x.writes),
        })
        .collect()
}

/// Add `more` to `sites`, summing the counts of a site present in both.
fn add_sites(sites: &mut Vec<LineSite>, more: &[LineSite]) {
    for x in more {
        match sites.iter_mut().find(|y| y.site == x.site) {
            Some(y) => {
                y.reads += x.reads;
                y.writes += x.writes;
            }
            None => sites.push(x.clone()),
        }
    }
}

// Per-byte thread sets. The runtime keeps, per byte, the first two threads (real ids) that
// read and that wrote it, and whether a third came ([`ByteUse`]); the classification reads them
// only through these accessors.

/// Threads known to have written the byte range (real ids).
pub fn byte_writers(b: &ByteUse) -> BTreeSet<u32> {
    b.writers.iter().copied().collect()
}

/// Threads known to have read the byte range (real ids).
pub fn byte_readers(b: &ByteUse) -> BTreeSet<u32> {
    b.readers.iter().copied().collect()
}

/// Two or more threads wrote the same byte.
pub fn written_by_several(b: &ByteUse) -> bool {
    b.writers.len() >= 2 || b.more_writers
}

/// Threads that wrote / read each byte of a line (a byte written by one access of size n at
/// offset o covers [o, o+n)); the second vector's sets also say whether a reader that is not a
/// writer of the byte is known to exist beyond the listed ids.
fn byte_sets(l: &LineRecord) -> (Vec<BTreeSet<u32>>, Vec<BTreeSet<u32>>) {
    let mut w = vec![BTreeSet::new(); LINE as usize];
    let mut r = vec![BTreeSet::new(); LINE as usize];
    for b in &l.bytes {
        let end = (b.offset + b.size.max(1)).min(LINE as u32);
        for i in b.offset..end {
            w[i as usize].extend(byte_writers(b));
            r[i as usize].extend(byte_readers(b));
        }
    }
    (w, r)
}

/// Some byte has a reader that is not among its writers: a listed reader that wrote nothing
/// there, or more than two readers while at most two threads wrote it.
fn read_by_non_writer(l: &LineRecord, w: &[BTreeSet<u32>], r: &[BTreeSet<u32>]) -> bool {
    (0..LINE as usize).any(|i| !w[i].is_empty() && r[i].difference(&w[i]).next().is_some())
        || l.bytes
            .iter()
            .any(|b| b.more_readers && !b.writers.is_empty() && !b.more_writers)
}

fn classify_line(s: &Sharing, l: &LineRecord, duration_ns: u64) -> Option<Finding> {
    let (w, r) = byte_sets(l);
    let writers: BTreeSet<u32> = w.iter().flatten().copied().collect();
    let readers: BTreeSet<u32> = r.iter().flatten().copied().collect();
    let threads: BTreeSet<u32> = writers.union(&readers).copied().collect();
    if threads.len() < 2 || writers.is_empty() || !lives_overlap(s, &threads) {
        return None;
    }
    let reads = estimate(&s.settings, l.bytes.iter().map(|b| b.reads).sum());
    let writes = estimate(&s.settings, l.bytes.iter().map(|b| b.writes).sum());
    // A byte written by two threads, or written by one and read by another, is truly shared.
    let write_shared = w.iter().any(|s| s.len() >= 2) || l.bytes.iter().any(written_by_several);
    // Reads of another thread's bytes count when they are more than a trace.
    let recorded: u64 = l.bytes.iter().map(|b| b.reads + b.writes).sum();
    let cross: u64 = l.bytes.iter().map(|b| b.cross_reads).sum();
    let read_shared =
        cross * 100 >= CROSS_READ_MIN_PERCENT * recorded.max(1) && read_by_non_writer(l, &w, &r);
    let kind = if (write_shared || read_shared)
        && reads >= READ_MOSTLY_RATIO * writes.max(1)
        && readers.len() >= 2
    {
        Kind::ReadMostly
    } else if write_shared || read_shared {
        Kind::TrueSharing
    } else {
        Kind::FalseSharing
    };
    let objects = l.objects.clone();
    let words = words_of(s, l, &objects);
    // Allocator-induced: different threads write different heap objects on this line.
    let mut writer_objects: BTreeMap<usize, BTreeSet<u32>> = BTreeMap::new();
    for wd in &words {
        if let (Some(o), false) = (wd.object, wd.writers.is_empty()) {
            if objects[o].kind == ObjectKind::Heap {
                writer_objects
                    .entry(o)
                    .or_default()
                    .extend(wd.writers.iter().copied());
            }
        }
    }
    let allocator_induced = kind == Kind::FalseSharing
        && writer_objects.len() >= 2
        && writer_objects.values().collect::<BTreeSet<_>>().len() >= 2;
    let stride = stride_of(&words);
    let threads: Vec<u32> = threads.into_iter().collect();
    let p = predict(s, &[l.addr], &threads, duration_ns);
    let mut f = Finding {
        kind,
        allocator_induced,
        latent: None,
        lines: vec![l.addr],
        invalidations: l.invalidations,
        reads,
        writes,
        threads,
        more_threads: l.bytes.iter().any(|b| b.more_readers || b.more_writers),
        objects,
        words,
        sites: estimated_sites(&s.settings, &l.sites),
        stride,
        predicted_saving_ns: p.saving_ns,
        predicted_speedup: p.speedup,
        prediction: p.prediction,
        confidence: confidence(&s.settings, l.invalidations, recorded),
        fix: String::new(),
    };
    f.fix = fix_text(&f);
    Some(f)
}

/// Contended words: byte uses merged per (object, offset), with estimated counts.
fn words_of(s: &Sharing, l: &LineRecord, objects: &[ObjectRef]) -> Vec<Word> {
    l.bytes
        .iter()
        .map(|b| {
            let a = l.addr + b.offset as u64;
            let object = objects
                .iter()
                .position(|o| o.start <= a && a < o.start + o.size.max(1));
            Word {
                line: l.addr,
                offset: b.offset,
                object_offset: object.map(|o| a - objects[o].start),
                object,
                size: b.size,
                reads: estimate(&s.settings, b.reads),
                writes: estimate(&s.settings, b.writes),
                readers: b.readers.clone(),
                writers: b.writers.clone(),
            }
        })
        .collect()
}

/// Distance between the first written words of consecutive writer threads, if it is regular
/// (every gap a multiple of the smallest: some threads may not have been sampled).
fn stride_of(words: &[Word]) -> Option<u64> {
    let mut firsts: BTreeMap<u32, u64> = BTreeMap::new();
    for w in words.iter().filter(|w| w.writers.len() == 1) {
        let a = w.line + w.offset as u64;
        let e = firsts.entry(w.writers[0]).or_insert(a);
        *e = (*e).min(a);
    }
    let mut addrs: Vec<u64> = firsts.values().copied().collect();
    addrs.sort();
    let gaps: BTreeSet<u64> = addrs.windows(2).map(|p| p[1] - p[0]).collect();
    // The smallest gap, when every other is a multiple of it: a thread whose words were not
    // sampled (it ran before the line was tracked) leaves a gap of two elements, not another
    // layout.
    let step = *gaps.first()?;
    (step > 0 && gaps.iter().all(|g| g % step == 0)).then_some(step)
}

/// Allocation functions whose blocks are 64-byte aligned by chance only (they promise 16): a
/// line-sized element stride in them may still shift off the grid in another run.
const UNALIGNED_ALLOCATORS: &[&str] = &["malloc", "calloc", "realloc", "new", "new[]"];

/// Per-thread elements a whole number of lines apart in an object whose alignment is the
/// program's (a global, a stack, an aligned allocation): padded and aligned as they should be,
/// so no shift of the data can happen and no latent finding is due.
fn aligned_by_design(objects: &[ObjectRef], words: &[Word]) -> bool {
    let Some(stride) = stride_of(words) else {
        return false;
    };
    let chance = words.iter().any(|w| {
        w.object
            .and_then(|o| objects.get(o))
            .and_then(|o| o.alloc_kind.as_deref())
            .is_some_and(|k| UNALIGNED_ALLOCATORS.contains(&k))
    });
    stride.is_multiple_of(LINE) && !chance
}

/// Latent false sharing on neighbouring lines `a` and `b` (no invalidations now), reported
/// only where the model predicts a gain: some shift of the data against the line grid puts two
/// threads' written words on one line, the elements are not aligned by design
/// ([`aligned_by_design`]), and the predicted speed-up if they shared is above 1. Lines that
/// are only an adjacent-line prefetch pair are not reported: the profile has no measurement
/// of contention between two lines.
fn latent_pair(s: &Sharing, a: &LineRecord, b: &LineRecord, duration_ns: u64) -> Option<Finding> {
    let (wa, _) = byte_sets(a);
    let (wb, _) = byte_sets(b);
    let wr: BTreeSet<u32> = wa.iter().flatten().copied().collect();
    let wl: BTreeSet<u32> = wb.iter().flatten().copied().collect();
    let writes_a: u64 = a.bytes.iter().map(|x| x.writes).sum();
    let writes_b: u64 = b.bytes.iter().map(|x| x.writes).sum();
    if writes_a < LATENT_MIN_WRITES
        || writes_b < LATENT_MIN_WRITES
        || wr.is_empty()
        || wl.is_empty()
    {
        return None;
    }
    // Some thread writes one line that another thread (not writing it) writes the other of.
    if wr == wl && wr.len() == 1 {
        return None;
    }
    let mut w: Vec<BTreeSet<u32>> = wa;
    w.extend(wb);
    let prefetch_pair =
        a.addr.is_multiple_of(2 * LINE) && wr.symmetric_difference(&wl).next().is_some();
    // Shift the grid: does some 64-byte window across the boundary hold two threads' writes
    // on disjoint bytes?
    let shift = (1..LINE as u32 / LATENT_SHIFT_STEP)
        .map(|k| k * LATENT_SHIFT_STEP)
        .find(|&d| {
            let win = &w[(LINE as usize - d as usize)..(2 * LINE as usize - d as usize)];
            let all: BTreeSet<u32> = win.iter().flatten().copied().collect();
            all.len() >= 2 && win.iter().all(|s| s.len() <= 1)
        });
    shift?;
    let mut objects: Vec<ObjectRef> = a.objects.clone();
    for o in &b.objects {
        if !objects.contains(o) {
            objects.push(o.clone());
        }
    }
    let mut words = words_of(s, a, &objects);
    words.extend(words_of(s, b, &objects));
    words.retain(|w| !w.writers.is_empty());
    let threads: BTreeSet<u32> = wr.union(&wl).copied().collect();
    let mut sites = estimated_sites(&s.settings, &a.sites);
    add_sites(&mut sites, &estimated_sites(&s.settings, &b.sites));
    // Each volume sample stands for `watch_interval` writes (not an `fs_sample` estimate).
    let vol = a.volume_samples.min(b.volume_samples) * s.settings.watch_interval as u64;
    if aligned_by_design(&objects, &words) {
        return None;
    }
    let stride = stride_of(&words);
    let mut f = Finding {
        kind: Kind::LatentFalseSharing,
        allocator_induced: false,
        latent: Some(Latent {
            prefetch_pair,
            shift,
        }),
        lines: vec![a.addr, b.addr],
        invalidations: 0,
        reads: 0,
        writes: vol.max(estimate(&s.settings, writes_a.min(writes_b))),
        threads: threads.into_iter().collect(),
        more_threads: false,
        objects,
        words,
        sites,
        stride,
        predicted_saving_ns: 0,
        predicted_speedup: 1.0,
        prediction: Prediction {
            basis: "no prediction: latent sharing has no invalidations to measure".into(),
            ..Prediction::default()
        },
        confidence: Confidence::Low,
        fix: String::new(),
    };
    let p = predict_latent(s, &f, duration_ns);
    (f.predicted_saving_ns, f.predicted_speedup) = (p.saving_ns, p.speedup);
    f.prediction = p.prediction;
    // The finding stands when the shifted layout would cost something; whether this run's
    // threads overlapped enough to gain from the fix is the prediction's business (a loaded
    // machine must not change the verdict).
    if p.stall_ns == 0 {
        return None;
    }
    f.fix = fix_text(&f);
    Some(f)
}

/// What to change, in words (the report adds the object's name in front).
/// The one thread that writes the finding's words, when it writes only words no other thread
/// reads or writes and other threads read other words of the line (one writer, readers of
/// neighbouring fields); None when two or more threads write.
fn sole_writer(f: &Finding) -> Option<u32> {
    let writers: BTreeSet<u32> = f
        .words
        .iter()
        .flat_map(|w| w.writers.iter().copied())
        .collect();
    let &[w] = writers.iter().copied().collect::<Vec<_>>().as_slice() else {
        return None;
    };
    let others_read = f
        .words
        .iter()
        .any(|x| x.writers.is_empty() && x.readers.iter().any(|&r| r != w));
    let written_alone = f
        .words
        .iter()
        .filter(|x| !x.writers.is_empty())
        .all(|x| x.readers.iter().all(|&r| r == w));
    (others_read && written_alone).then_some(w)
}

pub fn fix_text(f: &Finding) -> String {
    match f.kind {
        Kind::FalseSharing if f.allocator_induced => {
            "the allocator placed objects written by different threads on one line: allocate them 64-byte aligned and rounded up to 64 bytes (aligned_alloc(64, ...)), or use an allocator with per-thread heaps (jemalloc, tcmalloc, mimalloc)".into()
        }
        Kind::FalseSharing if sole_writer(f).is_some() => format!(
            "one thread ({}) writes fields that other threads only read, on one line: every write invalidates their copies; move the written fields onto their own 64-byte line (alignas(64)), away from the fields the others read, or write them less often",
            sole_writer(f).unwrap_or_default()
        ),
        Kind::FalseSharing => match f.stride {
            Some(s) if s < LINE => format!(
                "threads write neighbouring elements {s} bytes apart: pad or align each per-thread element to 64 bytes (alignas(64), or {} bytes of padding after it), or accumulate in a local variable and store once",
                LINE - s
            ),
            _ => "threads write different fields of one line: move the fields each thread writes onto their own 64-byte line (alignas(64) on each, or reorder and pad), or keep them in thread-local copies".into(),
        },
        Kind::TrueSharing => {
            "threads update the same word: give each thread its own copy (a per-thread counter, reduced at the end, or an OpenMP reduction), or update it less often".into()
        }
        Kind::ReadMostly => {
            "read by many threads and written rarely: every write invalidates all the readers' copies; replicate it per thread (or per NUMA node), or move the written field to a line of its own".into()
        }
        Kind::LatentFalseSharing => {
            let l = f.latent.clone().unwrap_or_default();
            let d = l.shift.unwrap_or(LATENT_SHIFT_STEP);
            format!(
                "no sharing now, but the data {d} bytes off its current 64-byte alignment would put two threads' words on one line: align the object to 64 bytes and pad per-thread elements to 64 bytes"
            )
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The exit summary.
// ---------------------------------------------------------------------------------------------

/// The findings the runtime's exit summary lists: the first `top` of [`findings`] without a
/// symbol table (the runtime has none, so static lines merge by place and threads) that reach
/// [`MIN_LISTED_SPEEDUP`], and the per-kind summary of those that do not.
pub fn summary_findings(p: &Profile, top: usize) -> (Vec<Finding>, Vec<BelowThreshold>) {
    let (mut f, below) = split_listed(findings(p, &|_| None), &p.sites, MIN_LISTED_SPEEDUP);
    f.truncate(top);
    (f, below)
}

/// The exit summary's sharing lines, one per listed finding of [`summary_findings`]:
/// `  false sharing at t.c:21 (heap object, threads 1,2): 1200 invalidations, fixing it: up to
/// 1.34x faster`, then one per kind below the threshold ([`below_threshold_line`]).
pub fn summary_lines(p: &Profile, top: usize) -> Vec<String> {
    let (listed, below) = summary_findings(p, top);
    listed
        .iter()
        .map(|f| summary_line(p, f))
        .chain(
            below
                .iter()
                .map(|b| format!("  {}", below_threshold_line(b))),
        )
        .collect()
}

fn summary_line(p: &Profile, f: &Finding) -> String {
    let place = first_site(&p.sites, f)
        .map(|s| format!("{}:{}", basename(&s.file), s.line))
        .unwrap_or_else(|| "?".into());
    let obj = match f.objects.first().map(|o| o.kind) {
        Some(ObjectKind::Heap) => "heap object",
        Some(ObjectKind::Stack) => "stack object",
        _ => "global/static",
    };
    let induced = if f.allocator_induced {
        " (allocator-induced)"
    } else {
        ""
    };
    let lines = if f.lines.len() > 1 {
        format!(", {} lines", f.lines.len())
    } else {
        String::new()
    };
    let mut threads = threads_list(&f.threads);
    if f.more_threads {
        threads.push_str(",+others");
    }
    let gain = if gain_shown(f.predicted_speedup) {
        format!(", fixing it: up to {:.2}x faster", f.predicted_speedup)
    } else {
        String::new()
    };
    format!(
        "  {}{induced} at {place} ({obj}{lines}, threads {threads}): {} invalidations{gain}",
        f.kind.as_str(),
        f.invalidations
    )
}

/// Thread ids listed in one line of text: at most [`LISTED_THREADS`], then how many more
/// (`1,2,3,+390 more`).
pub fn threads_list(threads: &[u32]) -> String {
    let mut s = threads
        .iter()
        .take(LISTED_THREADS)
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(",");
    if threads.len() > LISTED_THREADS {
        s.push_str(&format!(",+{} more", threads.len() - LISTED_THREADS));
    }
    s
}

fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

#[cfg(test)]
mod tests;

// ---------------------------------------------------------------------------------------------
// The one findings model (`crate::findings`).
// ---------------------------------------------------------------------------------------------

/// A sharing finding in the one model: `objects` and `places` as the caller resolved them,
/// the impact the prediction's saving ([`predict`]; docs/model.md) with its confidence.
#[allow(clippy::too_many_arguments)]
pub fn unified(
    kind: Kind,
    allocator_induced: bool,
    objects: Vec<crate::findings::Object>,
    places: Vec<String>,
    invalidations: u64,
    saving_ns: u64,
    speedup: f64,
    prediction: &Prediction,
    fix: String,
) -> crate::findings::Finding {
    use crate::findings::{Analysis, Evidence, Finding, Impact};
    let name = if allocator_induced {
        "allocator_induced_sharing"
    } else {
        match kind {
            Kind::FalseSharing => "false_sharing",
            Kind::TrueSharing => "true_sharing",
            Kind::ReadMostly => "read_mostly",
            Kind::LatentFalseSharing => "latent_false_sharing",
        }
    };
    let on = objects
        .first()
        .map(|o| format!(" on {}", o.text()))
        .unwrap_or_default();
    let induced = if allocator_induced {
        " (allocator-induced)"
    } else {
        ""
    };
    Finding::new(
        Analysis::Sharing,
        name,
        format!(
            "{}{induced}{on}: {invalidations} invalidations",
            kind.as_str()
        ),
        objects,
        places,
        vec![
            Evidence::new("invalidations", invalidations as f64, "invalidations"),
            Evidence::new("predicted_speedup", speedup, "x"),
            Evidence::new(
                "latency_samples",
                prediction.latency_samples as f64,
                "samples",
            ),
            Evidence::new("overlap_percent", prediction.overlap_percent as f64, "%"),
            Evidence::new(
                "own_overlap_percent",
                prediction.own_overlap_percent as f64,
                "%",
            ),
            Evidence::new("seen_saving_s", prediction.seen_saving_ns as f64 / 1e9, "s"),
        ],
        Impact {
            seconds: saving_ns as f64 / 1e9,
            bytes: 0,
            formula: if prediction.share_bound {
                format!(
                    "sharing_own_cores_{}",
                    prediction.access.as_str().replace(['-', ' '], "_")
                )
            } else {
                "sharing_latency_overlap".into()
            },
            inputs: vec![
                Evidence::new(
                    "charged_ns_per_access",
                    prediction.charged_ns_per_access,
                    "ns",
                ),
                Evidence::new("accesses", prediction.accesses as f64, "accesses"),
                Evidence::new("overlap_ns", prediction.overlap_ns as f64, "ns"),
                Evidence::new("contended_slowdown", prediction.contended_slowdown, "x"),
                Evidence::new("access_share", prediction.access_share, "fraction"),
            ],
            confidence: prediction.confidence,
        },
        fix,
    )
    .crossed(match kind {
        Kind::LatentFalseSharing => "threads write distinct words of objects the allocator could place on one line: no contention in this run".into(),
        Kind::ReadMostly => format!(
            "two or more threads on record on the line while both lived, one writing, and at least {READ_MOSTLY_RATIO} reads per write; listed from a predicted speed-up of {MIN_LISTED_SPEEDUP}x (--min-speedup)"
        ),
        _ => format!(
            "two or more threads on record on the line while both lived, one of them writing; listed from a predicted speed-up of {MIN_LISTED_SPEEDUP}x (--min-speedup)"
        ),
    })
}
