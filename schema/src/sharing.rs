//! Cache-line sharing: what the runtime records per tracked line, and the analysis that turns
//! records into findings (classification, latent and allocator-induced sharing, predicted
//! gain, fix). Shared by the runtime's exit summary and `profcc report`, so both say the same.
//!
//! Model (Cheetah, Predator): every thread runs on its own core with an infinite private
//! cache; a write to a line that another thread accessed since the line's last write is one
//! invalidation. Only lines whose invalidations pass a threshold (contended lines), or which
//! neighbour a line written by another thread (watched, for latent sharing), are tracked per
//! byte.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

pub const LINE: u64 = 64;

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Sharing {
    pub settings: Settings,
    /// Wall-clock time during which more than one thread existed, nanoseconds.
    pub parallel_ns: u64,
    /// Lines tracked in detail, in address order.
    pub lines: Vec<LineRecord>,
    /// Lines that passed a threshold after the table of tracked lines was full.
    pub dropped_lines: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Settings {
    /// Invalidations after which a line is tracked per byte (`fs_threshold`).
    pub threshold: u32,
    /// One in this many accesses per thread to a tracked line is analysed (`fs_sample`);
    /// invalidations and byte counts on tracked lines are scaled by it.
    pub sample: u32,
    /// A thread samples one write in this many per site for write volume (`fs_watch`; a power of 2).
    pub watch_interval: u32,
    /// Volume samples after which a line next to another thread's line is watched.
    pub watch_samples: u32,
    /// Accesses recorded on a watched, uncontended line before it is let go (`fs_budget`).
    pub watch_budget: u32,
    /// Most lines tracked in detail (`fs_max_lines`).
    pub max_lines: u32,
    /// Assumed cost of one invalidation, for the predicted gain (`fs_inv_ns`).
    pub invalidation_ns: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            threshold: 16,
            sample: 64,
            watch_interval: 256,
            watch_samples: 2,
            watch_budget: 4096,
            max_lines: 8192,
            invalidation_ns: 60,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct LineRecord {
    /// Address of the line (a multiple of 64).
    pub addr: u64,
    /// Invalidations counted while more than one thread existed, before and after tracking began.
    pub invalidations: u64,
    /// Tracked because of invalidations (else only watched for latent sharing).
    pub contended: bool,
    /// Write-volume samples that landed on the line (each stands for `watch_interval` writes).
    pub volume_samples: u64,
    /// Bytes accessed while tracked, in offset order.
    pub bytes: Vec<ByteUse>,
    /// Access sites seen on the line while tracked (at most 32), most accesses first; counts
    /// are the analysed sample (multiply by `settings.sample`).
    pub sites: Vec<LineSite>,
    /// Objects overlapping the accessed bytes, in address order.
    pub objects: Vec<ObjectRef>,
}

/// Accesses recorded at one byte offset of a tracked line (counts are the recorded sample;
/// multiply by `settings.sample` for an estimate of all accesses).
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct ByteUse {
    pub offset: u32,
    /// Largest access that started at this byte.
    pub size: u32,
    pub reads: u64,
    pub writes: u64,
    /// Threads that read / wrote any byte of [offset, offset+size) — ids modulo 64.
    pub readers: Vec<u32>,
    pub writers: Vec<u32>,
    /// Reads (recorded) by a thread that did not write the byte, after another thread had.
    #[serde(default)]
    pub cross_reads: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct LineSite {
    /// Index into `Profile::sites`.
    pub site: u32,
    pub reads: u64,
    pub writes: u64,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum ObjectKind {
    Heap,
    Stack,
    /// Not heap or stack: a global or static (the report names it from the symbol table).
    #[default]
    Static,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct ObjectRef {
    pub kind: ObjectKind,
    /// Start and size (heap: the allocation; stack: the thread's stack; static: the line).
    pub start: u64,
    pub size: u64,
    /// Heap: stack id of the allocation call, allocating thread, allocation function.
    pub alloc_stack: Option<u32>,
    pub alloc_thread: Option<u32>,
    pub alloc_kind: Option<String>,
    /// Stack: the thread whose stack it is.
    pub stack_thread: Option<u32>,
}

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

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    Low,
    Medium,
    High,
}

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
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Word {
    pub line: u64,
    /// Offset inside the line and inside the object it belongs to (if known).
    pub offset: u32,
    pub object_offset: Option<u64>,
    /// Index into `Finding::objects`.
    pub object: Option<usize>,
    pub size: u32,
    /// Estimated accesses (recorded x sample).
    pub reads: u64,
    pub writes: u64,
    pub readers: Vec<u32>,
    pub writers: Vec<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Finding {
    pub kind: Kind,
    /// Different threads write different heap objects that the allocator put on one line.
    pub allocator_induced: bool,
    pub latent: Option<Latent>,
    pub lines: Vec<u64>,
    pub invalidations: u64,
    /// Estimated accesses to the line(s) while tracked.
    pub reads: u64,
    pub writes: u64,
    pub threads: Vec<u32>,
    pub objects: Vec<ObjectRef>,
    pub words: Vec<Word>,
    pub sites: Vec<LineSite>,
    /// Element stride seen between different threads' words (bytes), when they form an array.
    pub stride: Option<u64>,
    /// Cycles lost to invalidations as wall-clock time, and the run's speed-up if they vanish:
    /// an upper bound, as in Cheetah. Without hardware latencies every counted invalidation
    /// costs `invalidation_ns`; a core that batches its stores to the line while it holds it
    /// loses less (docs/benchmarks.md compares the bound with padding, measured).
    pub predicted_saving_ns: u64,
    pub predicted_speedup: f64,
    /// How sure the finding (its kind and object) is: from the invalidations and the recorded
    /// accesses behind it; it does not grade the predicted speed-up.
    pub confidence: Confidence,
    pub fix: String,
}

/// Reads are this many times the writes, or more, for a shared line to count as read-mostly.
pub const READ_MOSTLY_RATIO: u64 = 8;

/// Recorded accesses on a watched line below which it is ignored for latent sharing.
const LATENT_MIN_WRITES: u64 = 16;

/// Findings for one profile, most important first.
pub fn analyze(s: &Sharing, duration_ns: u64) -> Vec<Finding> {
    analyze_with(s, duration_ns, &|_| None)
}

/// [`analyze`], with `global_of(addr)` giving the start of the global or static variable that
/// holds a run-time address (from the symbol table, which only the report reads): contended
/// lines of one global then make one finding, as lines of one heap block do.
pub fn analyze_with(
    s: &Sharing,
    duration_ns: u64,
    global_of: &dyn Fn(u64) -> Option<u64>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let by_addr: BTreeMap<u64, &LineRecord> = s.lines.iter().map(|l| (l.addr, l)).collect();
    let mut contended_lines = BTreeSet::new();
    for l in &s.lines {
        if !l.contended || l.invalidations < s.settings.threshold as u64 {
            continue;
        }
        if let Some(f) = classify_line(s, l, duration_ns) {
            contended_lines.insert(l.addr);
            out.push(f);
        }
    }
    let mut out = merge_by_object(out, s, duration_ns, global_of);
    for l in &s.lines {
        let Some(r) = by_addr.get(&(l.addr + LINE)) else {
            continue;
        };
        if contended_lines.contains(&l.addr) || contended_lines.contains(&r.addr) {
            continue;
        }
        if let Some(f) = latent_pair(s, l, r) {
            out.push(f);
        }
    }
    out.sort_by(|a, b| {
        rank(b)
            .partial_cmp(&rank(a))
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.lines.cmp(&b.lines))
    });
    out
}

/// One finding per object and kind: a heap block or global that spans several contended lines
/// is one thing to fix. A static line's object is the global holding its first word.
fn merge_by_object(
    found: Vec<Finding>,
    s: &Sharing,
    duration_ns: u64,
    global_of: &dyn Fn(u64) -> Option<u64>,
) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    let key = |x: &Finding| {
        let o = x.objects.first()?;
        let start = if o.kind == ObjectKind::Static {
            let w = x.words.first()?;
            global_of(w.line + w.offset as u64)?
        } else {
            o.start
        };
        Some((x.kind, x.allocator_induced, o.kind, start))
    };
    let mut keys = Vec::new();
    for f in found {
        let k = key(&f);
        let target = k.and_then(|k| keys.iter().position(|x| *x == Some(k)));
        let Some(m) = target.map(|i| &mut out[i]) else {
            keys.push(k);
            out.push(f);
            continue;
        };
        m.lines.extend(f.lines.iter().copied());
        m.invalidations += f.invalidations;
        m.reads += f.reads;
        m.writes += f.writes;
        let threads: BTreeSet<u32> = m.threads.iter().chain(&f.threads).copied().collect();
        m.threads = threads.into_iter().collect();
        let base = m.objects.len();
        for o in &f.objects {
            if !m.objects.contains(o) {
                m.objects.push(o.clone());
            }
        }
        for mut w in f.words {
            w.object = w.object.and_then(|i| {
                let o = &f.objects[i];
                m.objects.iter().position(|x| x == o).or(Some(base + i))
            });
            m.words.push(w);
        }
        add_sites(&mut m.sites, &f.sites);
        m.confidence = m.confidence.max(f.confidence);
        m.stride = stride_of(&m.words);
        (m.predicted_saving_ns, m.predicted_speedup) =
            predict(s, m.invalidations, m.threads.len(), duration_ns);
        m.fix = fix_text(m);
    }
    out
}

/// Cheetah-style gain, an upper bound: the invalidations' cost (`invalidation_ns` each) spread
/// over the threads involved, as wall-clock time saved (at most 90% of the parallel time), and
/// the run's speed-up if that time vanished.
pub fn predict(s: &Sharing, invalidations: u64, threads: usize, duration_ns: u64) -> (u64, f64) {
    let lost =
        invalidations.saturating_mul(s.settings.invalidation_ns as u64) / threads.max(1) as u64;
    let window = if s.parallel_ns > 0 {
        s.parallel_ns.min(duration_ns.max(1))
    } else {
        duration_ns
    };
    let saving = lost.min(window * 9 / 10);
    let speedup = if duration_ns > saving && duration_ns > 0 {
        duration_ns as f64 / (duration_ns - saving) as f64
    } else {
        1.0
    };
    (saving, speedup)
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

fn rank(f: &Finding) -> (u8, u64, u64) {
    let actual = f.kind != Kind::LatentFalseSharing;
    (actual as u8, f.invalidations, f.writes)
}

fn ids(mask: &[u32]) -> BTreeSet<u32> {
    mask.iter().copied().collect()
}

/// Threads that wrote / read each byte of a line (a byte written by one access of size n at
/// offset o covers [o, o+n)).
fn byte_sets(l: &LineRecord) -> (Vec<BTreeSet<u32>>, Vec<BTreeSet<u32>>) {
    let mut w = vec![BTreeSet::new(); LINE as usize];
    let mut r = vec![BTreeSet::new(); LINE as usize];
    for b in &l.bytes {
        let end = (b.offset + b.size.max(1)).min(LINE as u32);
        for i in b.offset..end {
            w[i as usize].extend(ids(&b.writers));
            r[i as usize].extend(ids(&b.readers));
        }
    }
    (w, r)
}

fn classify_line(s: &Sharing, l: &LineRecord, duration_ns: u64) -> Option<Finding> {
    let (w, r) = byte_sets(l);
    let writers: BTreeSet<u32> = w.iter().flatten().copied().collect();
    let readers: BTreeSet<u32> = r.iter().flatten().copied().collect();
    let threads: BTreeSet<u32> = writers.union(&readers).copied().collect();
    if threads.len() < 2 || writers.is_empty() {
        return None;
    }
    let sample = s.settings.sample.max(1) as u64;
    let reads: u64 = l.bytes.iter().map(|b| b.reads).sum::<u64>() * sample;
    let writes: u64 = l.bytes.iter().map(|b| b.writes).sum::<u64>() * sample;
    // A byte written by two threads, or written by one and read by another, is truly shared.
    let write_shared = w.iter().any(|s| s.len() >= 2);
    // Reads of another thread's bytes count when they are more than a trace (1% of the
    // line's recorded accesses): a reduction that reads per-thread slots once after a
    // parallel loop does not share the slots.
    let recorded: u64 = l.bytes.iter().map(|b| b.reads + b.writes).sum();
    let cross: u64 = l.bytes.iter().map(|b| b.cross_reads).sum();
    let read_shared = cross * 100 >= recorded.max(1)
        && (0..LINE as usize).any(|i| !w[i].is_empty() && r[i].difference(&w[i]).next().is_some());
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
    let words = words_of(l, &objects, sample);
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
    let (saving, speedup) = predict(s, l.invalidations, threads.len(), duration_ns);
    let confidence = if l.invalidations >= 100 * s.settings.threshold as u64 && recorded >= 1000 {
        Confidence::High
    } else if recorded >= 100 {
        Confidence::Medium
    } else {
        Confidence::Low
    };
    let mut f = Finding {
        kind,
        allocator_induced,
        latent: None,
        lines: vec![l.addr],
        invalidations: l.invalidations,
        reads,
        writes,
        threads: threads.into_iter().collect(),
        objects,
        words,
        sites: l.sites.clone(),
        stride,
        predicted_saving_ns: saving,
        predicted_speedup: speedup,
        confidence,
        fix: String::new(),
    };
    f.fix = fix_text(&f);
    Some(f)
}

/// Contended words: byte uses merged per (object, offset), with estimated counts.
fn words_of(l: &LineRecord, objects: &[ObjectRef], sample: u64) -> Vec<Word> {
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
                reads: b.reads * sample,
                writes: b.writes * sample,
                readers: b.readers.clone(),
                writers: b.writers.clone(),
            }
        })
        .collect()
}

/// Distance between the first written words of consecutive writer threads, if it is regular.
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
    (gaps.len() == 1).then(|| *gaps.iter().next().unwrap())
}

fn latent_pair(s: &Sharing, a: &LineRecord, b: &LineRecord) -> Option<Finding> {
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
    let shift = (1..8u32).map(|k| k * 8).find(|&d| {
        let win = &w[(LINE as usize - d as usize)..(2 * LINE as usize - d as usize)];
        let all: BTreeSet<u32> = win.iter().flatten().copied().collect();
        all.len() >= 2 && win.iter().all(|s| s.len() <= 1)
    });
    if !prefetch_pair && shift.is_none() {
        return None;
    }
    let sample = s.settings.sample.max(1) as u64;
    let mut objects: Vec<ObjectRef> = a.objects.clone();
    for o in &b.objects {
        if !objects.contains(o) {
            objects.push(o.clone());
        }
    }
    let mut words = words_of(a, &objects, sample);
    words.extend(words_of(b, &objects, sample));
    words.retain(|w| !w.writers.is_empty());
    let threads: BTreeSet<u32> = wr.union(&wl).copied().collect();
    let mut sites = a.sites.clone();
    add_sites(&mut sites, &b.sites);
    let vol = a.volume_samples.min(b.volume_samples) * s.settings.watch_interval as u64;
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
        writes: vol.max((writes_a.min(writes_b)) * sample),
        threads: threads.into_iter().collect(),
        objects,
        words,
        sites,
        stride,
        predicted_saving_ns: 0,
        predicted_speedup: 1.0,
        confidence: Confidence::Low,
        fix: String::new(),
    };
    f.fix = fix_text(&f);
    Some(f)
}

/// What to change, in words (the report adds the object's name in front).
pub fn fix_text(f: &Finding) -> String {
    match f.kind {
        Kind::FalseSharing if f.allocator_induced => {
            "the allocator placed objects written by different threads on one line: allocate them 64-byte aligned and rounded up to 64 bytes (aligned_alloc(64, ...)), or use an allocator with per-thread heaps (jemalloc, tcmalloc, mimalloc)".into()
        }
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
            let mut why = Vec::new();
            if l.prefetch_pair {
                why.push("adjacent-line prefetch moves both lines together".to_string());
            }
            if let Some(d) = l.shift {
                why.push(format!("the data {d} bytes off its current 64-byte alignment would put two threads' words on one line"));
            }
            format!(
                "no sharing now, but {}: align the object to 128 bytes and pad per-thread elements to 128 bytes",
                why.join(", and ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            // Reads by threads that are not writers of the byte.
            cross_reads: if readers.iter().any(|t| !writers.contains(t)) {
                reads
            } else {
                0
            },
        }
    }

    fn line(addr: u64, inv: u64, bytes: Vec<ByteUse>) -> LineRecord {
        LineRecord {
            addr,
            invalidations: inv,
            contended: inv > 0,
            volume_samples: 4,
            bytes,
            sites: vec![],
            objects: vec![ObjectRef {
                kind: ObjectKind::Heap,
                start: 0x1000,
                size: 256,
                alloc_stack: Some(1),
                alloc_thread: Some(0),
                alloc_kind: Some("malloc".into()),
                stack_thread: None,
            }],
        }
    }

    fn sharing(lines: Vec<LineRecord>) -> Sharing {
        Sharing {
            settings: Settings::default(),
            parallel_ns: 1_000_000_000,
            lines,
            dropped_lines: 0,
        }
    }

    #[test]
    fn disjoint_writers_are_false_sharing_with_stride() {
        let s = sharing(vec![line(
            0x1000,
            100_000,
            vec![
                byte(0, 8, 0, 5000, &[], &[1]),
                byte(8, 8, 0, 5000, &[], &[2]),
            ],
        )]);
        let f = analyze(&s, 2_000_000_000);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].kind, Kind::FalseSharing);
        assert_eq!(f[0].stride, Some(8));
        assert_eq!(f[0].words[1].object_offset, Some(8));
        assert!(f[0].predicted_speedup > 1.0);
        assert!(f[0].fix.contains("56 bytes of padding"), "{}", f[0].fix);
    }

    #[test]
    fn same_word_is_true_sharing_and_reads_make_read_mostly() {
        let s = sharing(vec![line(
            0x1000,
            5000,
            vec![byte(0, 8, 10, 5000, &[1, 2], &[1, 2])],
        )]);
        assert_eq!(analyze(&s, 1)[0].kind, Kind::TrueSharing);
        let s = sharing(vec![line(
            0x1000,
            5000,
            vec![byte(0, 8, 90_000, 100, &[1, 2, 3], &[0])],
        )]);
        assert_eq!(analyze(&s, 1)[0].kind, Kind::ReadMostly);
    }

    #[test]
    fn lines_of_one_global_make_one_finding_when_the_symbol_is_known() {
        // Two read-mostly lines of a static table at 0x5000..0x5080 (the runtime only knows
        // the lines; the report's symbol table knows the variable).
        let table_line = |addr: u64, inv: u64| {
            let mut l = line(addr, inv, vec![byte(0, 8, 90_000, 100, &[1, 2, 3], &[1])]);
            l.objects = vec![ObjectRef {
                kind: ObjectKind::Static,
                start: addr,
                size: 64,
                ..ObjectRef::default()
            }];
            l
        };
        let s = sharing(vec![table_line(0x5000, 300), table_line(0x5040, 200)]);
        assert_eq!(
            analyze(&s, 1).len(),
            2,
            "without symbols: one finding per line"
        );
        let table = |a: u64| (0x5000..0x5080).contains(&a).then_some(0x5000);
        let f = analyze_with(&s, 1, &table);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].kind, Kind::ReadMostly);
        assert_eq!(f[0].lines, vec![0x5000, 0x5040]);
        assert_eq!(f[0].invalidations, 500);
        // A line of another variable stays apart.
        let s = sharing(vec![table_line(0x5000, 300), table_line(0x5080, 200)]);
        assert_eq!(analyze_with(&s, 1, &table).len(), 2);
    }

    #[test]
    fn a_trace_of_reads_by_another_thread_leaves_false_sharing_false() {
        // Two writers of their own slots; thread 0 reads both once at the end (a reduction).
        let mut a = byte(0, 8, 5000, 5000, &[0, 1], &[1]);
        a.cross_reads = 1;
        let mut b = byte(8, 8, 5000, 5000, &[0, 2], &[2]);
        b.cross_reads = 1;
        let s = sharing(vec![line(0x1000, 100_000, vec![a, b])]);
        assert_eq!(analyze(&s, 1)[0].kind, Kind::FalseSharing);
    }

    #[test]
    fn one_thread_or_few_invalidations_is_nothing() {
        let s = sharing(vec![line(
            0x1000,
            5000,
            vec![byte(0, 8, 0, 5000, &[], &[1])],
        )]);
        assert!(analyze(&s, 1).is_empty());
        let s = sharing(vec![line(
            0x1000,
            3,
            vec![byte(0, 8, 0, 50, &[], &[1]), byte(8, 8, 0, 50, &[], &[2])],
        )]);
        assert!(analyze(&s, 1).is_empty());
    }

    #[test]
    fn one_object_over_two_lines_is_one_finding() {
        let a = line(
            0x1000,
            50_000,
            vec![
                byte(48, 8, 0, 5000, &[], &[1]),
                byte(56, 8, 0, 5000, &[], &[2]),
            ],
        );
        let b = line(
            0x1040,
            70_000,
            vec![
                byte(0, 8, 0, 5000, &[], &[3]),
                byte(8, 8, 0, 5000, &[], &[4]),
            ],
        );
        let f = analyze(&sharing(vec![a, b]), 2_000_000_000);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].lines, vec![0x1000, 0x1040]);
        assert_eq!(f[0].invalidations, 120_000);
        assert_eq!(f[0].threads, vec![1, 2, 3, 4]);
        assert_eq!(f[0].stride, Some(8));
        assert_eq!(f[0].words.len(), 4);
    }

    #[test]
    fn neighbouring_lines_of_two_writers_are_latent() {
        let mut a = line(0x1000, 0, vec![byte(56, 8, 0, 500, &[], &[1])]);
        let mut b = line(0x1040, 0, vec![byte(0, 8, 0, 500, &[], &[2])]);
        a.contended = false;
        b.contended = false;
        let f = analyze(&sharing(vec![a, b]), 1);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].kind, Kind::LatentFalseSharing);
        let l = f[0].latent.clone().unwrap();
        assert!(l.prefetch_pair);
        assert_eq!(l.shift, Some(8));
    }

    #[test]
    fn two_heap_objects_of_two_threads_are_allocator_induced() {
        let mut l = line(
            0x1000,
            10_000,
            vec![
                byte(16, 8, 0, 900, &[], &[1]),
                byte(48, 8, 0, 900, &[], &[2]),
            ],
        );
        let obj = |start, t| ObjectRef {
            kind: ObjectKind::Heap,
            start,
            size: 24,
            alloc_stack: Some(t),
            alloc_thread: Some(t),
            alloc_kind: Some("malloc".into()),
            stack_thread: None,
        };
        l.objects = vec![obj(0x1010, 1), obj(0x1030, 2)];
        let f = analyze(&sharing(vec![l]), 1);
        assert!(f[0].allocator_induced);
        assert_eq!(f[0].words[1].object, Some(1));
        assert_eq!(f[0].words[1].object_offset, Some(0));
    }
}
