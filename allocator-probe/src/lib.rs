//! The allocator pre-run: what the C probe (csrc/probe.c) observed, turned into a
//! description of the allocator (TOML; docs/allocators.md describes every key and how it is
//! decided). The C side only measures and prints lines; every decision is made here, in pure
//! functions: [`parse`] reads the lines, [`describe`] classifies them, [`channels`] reads the
//! kernel and lock functions an allocator's file imports.
//!
//! The built probe: `profcc-allocator-probe` (an executable that measures the malloc it runs
//! with) and `libprofcc_allocator_probe.so` (the same, run by its constructor inside another
//! program when `PROFCC_PROBE_OUT` names the output file), built by build.rs into OUT_DIR;
//! `cargo xtask build` puts both next to the driver, where it looks for them.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The standalone probe's file name.
pub const PROBE_EXE: &str = "profcc-allocator-probe";
/// The preloadable probe's file name.
pub const PROBE_SO: &str = "libprofcc_allocator_probe.so";

/// Placement of `n` objects of one size, allocated in a row (a `place` line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub size: u64,
    pub n: u32,
    pub page_aligned: u32,
    /// Neighbours (sorted by address) exactly `size` apart.
    pub adjacent: u32,
    pub min_diff: u64,
    /// The fewest trailing zero bits of an address.
    pub align_log2: u32,
    /// Did a new thread get the object the main thread freed: Some(true) a heap the threads
    /// share (a page heap), Some(false) per-thread caches; None untested (small sizes).
    pub xthread: Option<bool>,
    /// realloc to `size` kept the object in place (None: not tested).
    pub realloc_stays: Option<bool>,
    /// realloc to `size + 1` moved it.
    pub realloc_moves: Option<bool>,
}

/// One `big` line: a fresh process allocating `req`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Big {
    pub thread: bool,
    pub req: u64,
    /// 0 no fresh mapping; 1 mapped for itself and unmapped by free; 2 mapped for itself and
    /// kept after free; 3 a fresh region larger than the object.
    pub result: u32,
}

/// Everything the probe printed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observations {
    /// The file defining the malloc in use (`main`: the program itself).
    pub object: Option<String>,
    /// role -> how it was found (a name, or `@offset`).
    pub funcs: BTreeMap<String, String>,
    /// Identifying symbols defined in `object`.
    pub syms: Vec<String>,
    /// version function -> what it returned.
    pub versions: BTreeMap<String, String>,
    /// Votes: sequential, BiBOP, neither.
    pub style: (u32, u32, u32),
    /// (request, usable size), in the probe's order.
    pub usable: Vec<(u64, u64)>,
    pub places: Vec<Place>,
    pub big: Vec<Big>,
    /// (request, mapped afresh again after a free of one).
    pub slides: Vec<(u64, bool)>,
    /// (size, inside the brk heap).
    pub brk: Vec<(u64, bool)>,
    pub done_us: Option<u64>,
    pub error: Option<String>,
    /// `--bench`: (op, request size, reuse, phase, mean ns, calls).
    pub bench: Vec<(String, u64, String, String, f64, u64)>,
}

fn num(it: &mut std::str::SplitWhitespace, line: &str) -> Result<u64, String> {
    it.next()
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| format!("malformed probe line '{line}'"))
}

/// Read the probe's lines: a whole run (it ended with `done`, no `error`).
pub fn parse(text: &str) -> Result<Observations, String> {
    let o = parse_lines(text)?;
    if let Some(e) = &o.error {
        return Err(format!("the probe failed: {e}"));
    }
    if o.done_us.is_none() {
        return Err("the probe's output ends early (it crashed or was killed)".into());
    }
    Ok(o)
}

/// Read probe lines, however many (a profile holds only the identification's).
fn parse_lines(text: &str) -> Result<Observations, String> {
    let mut o = Observations::default();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let Some(kind) = it.next() else { continue };
        let rest = line[kind.len()..].trim();
        match kind {
            "object" => o.object = Some(rest.to_string()),
            "func" => {
                let (role, how) = rest.split_once(' ').unwrap_or((rest, ""));
                o.funcs.insert(role.to_string(), how.to_string());
            }
            "sym" => o.syms.push(rest.to_string()),
            "version" => {
                let (f, v) = rest.split_once(' ').unwrap_or((rest, ""));
                o.versions.insert(f.to_string(), v.to_string());
            }
            "style" => {
                o.style = (
                    num(&mut it, line)? as u32,
                    num(&mut it, line)? as u32,
                    num(&mut it, line)? as u32,
                )
            }
            "u" => o.usable.push((num(&mut it, line)?, num(&mut it, line)?)),
            "place" => {
                let size = num(&mut it, line)?;
                let n = num(&mut it, line)? as u32;
                let page_aligned = num(&mut it, line)? as u32;
                let adjacent = num(&mut it, line)? as u32;
                let min_diff = num(&mut it, line)?;
                let align_log2 = num(&mut it, line)? as u32;
                let mut flag = || -> Option<bool> {
                    let x: i64 = it.next().and_then(|t| t.parse().ok()).unwrap_or(-1);
                    (x >= 0).then_some(x == 1)
                };
                let (xthread, realloc_stays, realloc_moves) = (flag(), flag(), flag());
                o.places.push(Place {
                    size,
                    n,
                    page_aligned,
                    adjacent,
                    min_diff,
                    align_log2,
                    xthread,
                    realloc_stays,
                    realloc_moves,
                });
            }
            "big" => {
                let thread = it.next() == Some("thread");
                let req = num(&mut it, line)?;
                let result = num(&mut it, line)? as u32;
                o.big.push(Big {
                    thread,
                    req,
                    result,
                });
            }
            "slide" => o
                .slides
                .push((num(&mut it, line)?, num(&mut it, line)? == 1)),
            "brk" => o.brk.push((num(&mut it, line)?, num(&mut it, line)? == 1)),
            "done" => o.done_us = Some(num(&mut it, line)?),
            "bench" => {
                let mut word = || {
                    it.next()
                        .map(str::to_string)
                        .ok_or_else(|| format!("malformed probe line '{line}'"))
                };
                let (op, size, reuse, phase, ns, n) =
                    (word()?, word()?, word()?, word()?, word()?, word()?);
                let bad = || format!("malformed probe line '{line}'");
                o.bench.push((
                    op,
                    size.parse().map_err(|_| bad())?,
                    reuse,
                    phase,
                    ns.parse().map_err(|_| bad())?,
                    n.parse().map_err(|_| bad())?,
                ));
            }
            "error" => o.error = Some(rest.to_string()),
            _ => {} // a later probe's line: ignored
        }
    }
    Ok(o)
}

/// The kernel and lock functions an allocator's file imports through its PLT (true) or calls
/// some other way the runtime cannot see (false): glibc's own malloc calls them inside libc.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Channels {
    /// The file whose dynamic symbol table was read.
    pub file: String,
    pub mmap: bool,
    pub munmap: bool,
    pub mremap: bool,
    pub madvise: bool,
    pub mprotect: bool,
    pub sbrk: bool,
    pub brk: bool,
    pub pthread_mutex_lock: bool,
    pub pthread_mutex_trylock: bool,
    pub pthread_mutex_unlock: bool,
    pub pthread_spin_lock: bool,
    pub sched_yield: bool,
    /// `syscall` (a raw futex or mmap goes through it).
    pub syscall: bool,
    /// The watched names imported, as the file spells them.
    pub imports: Vec<String>,
}

/// [`Channels`] from a file's undefined dynamic symbols (names without `@version`).
pub fn channels(file: &str, undefined: &[String]) -> Channels {
    let mut c = Channels {
        file: file.to_string(),
        ..Default::default()
    };
    let mut names: Vec<String> = Vec::new();
    for raw in undefined {
        let name = raw.split('@').next().unwrap_or(raw);
        let base = name.trim_start_matches('_');
        let slot = match base {
            "mmap" | "mmap64" => &mut c.mmap,
            "munmap" => &mut c.munmap,
            "mremap" => &mut c.mremap,
            "madvise" | "posix_madvise" => &mut c.madvise,
            "mprotect" => &mut c.mprotect,
            "sbrk" => &mut c.sbrk,
            "brk" => &mut c.brk,
            "pthread_mutex_lock" => &mut c.pthread_mutex_lock,
            "pthread_mutex_trylock" => &mut c.pthread_mutex_trylock,
            "pthread_mutex_unlock" => &mut c.pthread_mutex_unlock,
            "pthread_spin_lock" => &mut c.pthread_spin_lock,
            "sched_yield" => &mut c.sched_yield,
            "syscall" => &mut c.syscall,
            _ => continue,
        };
        *slot = true;
        names.push(name.to_string());
    }
    names.sort();
    names.dedup();
    c.imports = names;
    c
}

/// How the probe ran and how long it took.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeRun {
    /// `system`, `preload LIB` or `exe PROGRAM`.
    pub mode: String,
    /// The probe's own time (its `done` line), ms.
    pub probe_ms: f64,
    /// Wall time of the run the driver saw, ms (0 when unknown).
    pub wall_ms: f64,
    /// How the allocator's functions were found (role = how).
    pub functions: BTreeMap<String, String>,
    /// Votes of the layout probe: [sequential, BiBOP, neither].
    pub style_votes: [u32; 3],
}

/// The description `profcc detect-allocator` writes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Description {
    /// glibc, jemalloc, tcmalloc, mimalloc, tbbmalloc or unknown.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The version function and its full answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_source: Option<String>,
    /// `symbol NAME` or `behaviour: ...`.
    pub identified_by: String,
    /// The file defining the malloc in use.
    pub object: String,
    /// `bibop` or `sequential`.
    pub style: String,
    /// BiBOP: every size class up to small_max, ascending.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub size_classes: Vec<u64>,
    /// Sequential: usable sizes are min_size + k * granularity up to small_max.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub granularity: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_size: Option<u64>,
    /// Largest request served from a size class (sequential: from the heap).
    pub small_max: u64,
    /// What ended the class table: `exact sizes`, `coarse step`, `shared page heap`,
    /// `isolated objects`, `direct mmap` or `walk end`.
    pub small_max_by: String,
    /// Smallest request served as a big object.
    pub large_threshold: u64,
    /// The same measured in a fresh thread (direct mmap only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub large_threshold_thread: Option<u64>,
    /// The usable size of the first request past the class table (BiBOP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_big_size: Option<u64>,
    /// `mmap`, `page-heap` or `extent`.
    pub big_via: String,
    /// realloc's cross-check of the classes: `agrees` (a realloc to a class's own size stays,
    /// one byte more moves out of it; sequential: stays only), or what disagreed.
    pub realloc_check: String,
    /// Direct mmap: the largest request whose free raises the threshold over it (the
    /// threshold slides); absent when a free never does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mmap_threshold_slides_to: Option<u64>,
    /// Small objects lie in the brk heap (sbrk before mmap).
    pub brk_heap: bool,
    pub channels: Channels,
    pub probe: ProbeRun,
    /// `--bench`: the mean cost of malloc and free by request size, size kind, reuse and phase
    /// (machine-specific; docs/allocators.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bench: Vec<BenchRow>,
}

/// One cell of `--bench`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BenchRow {
    /// `malloc` or `free`.
    pub op: String,
    /// The request size.
    pub size: u64,
    /// `small` (up to `small_max`), `medium` (between), `big` (from `large_threshold`).
    pub kind: String,
    /// `new` (fresh addresses) or `reused` (the addresses just freed).
    pub reuse: String,
    /// `serial` (one thread) or `parallel` (two at once).
    pub phase: String,
    /// Mean nanoseconds per call.
    pub ns: f64,
    /// Calls timed.
    pub calls: u64,
}

/// The size kind of a request under description `d`.
pub fn size_kind(d: &Description, size: u64) -> &'static str {
    if size <= d.small_max {
        "small"
    } else if size >= d.large_threshold {
        "big"
    } else {
        "medium"
    }
}

const PAGE: u64 = 4096;

/// The class walk: (usable size, requests it serves) for the chained part of the walk, in
/// ascending order. A request that is one past the previous usable size continues the chain;
/// the skipped and sparse parts do not name every class and end it.
fn chain(usable: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut prev: Option<u64> = None;
    for &(req, u) in usable {
        match prev {
            None if req == 1 => out.push((u, u)),
            Some(p) if req == p + 1 && u >= req => out.push((u, u - p)),
            _ => break,
        }
        prev = Some(u);
    }
    out
}

fn first_direct_mmap(o: &Observations, thread: bool) -> Option<u64> {
    o.big
        .iter()
        .filter(|b| b.thread == thread && b.result == 1)
        .map(|b| b.req)
        .min()
}

struct TableEnd {
    /// Index of the first class past the table.
    index: usize,
    by: &'static str,
}

/// Where the class table ends, scanning the chained classes upwards (docs/allocators.md):
/// - exact sizes: two requests in a row get exactly what they asked for (tbbmalloc);
/// - coarse step: past 64 KiB, a step over a third of the size (fewer classes than a
///   class table has per doubling: mimalloc's 128 KiB -> 192 KiB);
/// - shared page heap: an object the main thread freed goes to a new thread (tcmalloc);
/// - isolated objects: objects of this size and the next are never neighbours while the
///   previous size's are (jemalloc's large extents).
fn table_end(classes: &[(u64, u64)], places: &[Place]) -> Option<TableEnd> {
    let place = |s: u64| places.iter().find(|p| p.size == s);
    for i in 1..classes.len() {
        let (c, range) = classes[i];
        let prev = classes[i - 1].0;
        let exact = range == 1 && classes.get(i + 1).is_some_and(|n| n.1 == 1);
        if exact {
            return Some(TableEnd {
                index: i,
                by: "exact sizes",
            });
        }
        if prev >= 64 << 10 && c - prev > prev / 3 {
            return Some(TableEnd {
                index: i,
                by: "coarse step",
            });
        }
        if place(c).and_then(|p| p.xthread) == Some(true) {
            return Some(TableEnd {
                index: i,
                by: "shared page heap",
            });
        }
        let lonely = |s: u64| place(s).is_some_and(|p| p.n >= 3 && p.adjacent == 0);
        let next_lonely = classes.get(i + 1).is_none_or(|n| lonely(n.0));
        if lonely(c) && next_lonely && place(prev).is_some_and(|p| p.adjacent > 0) {
            return Some(TableEnd {
                index: i,
                by: "isolated objects",
            });
        }
    }
    None
}

/// The most common value.
fn mode(v: impl Iterator<Item = u64>) -> Option<u64> {
    let mut counts: BTreeMap<u64, usize> = BTreeMap::new();
    for x in v {
        *counts.entry(x).or_default() += 1;
    }
    counts
        .into_iter()
        .max_by_key(|&(v, n)| (n, std::cmp::Reverse(v)))
        .map(|(v, _)| v)
}

/// An allocator named by its identifying symbols (what a profile records: the runtime sees
/// no behaviour).
#[derive(Debug, Clone, PartialEq)]
pub struct Identity {
    pub name: String,
    pub version: Option<String>,
    /// What the version function returned.
    pub version_source: Option<String>,
    /// `symbol NAME`.
    pub identified_by: String,
    /// The file defining the malloc in use (`main`: the program).
    pub object: Option<String>,
}

/// The allocator named by the probe's `object`/`sym`/`version` lines alone (a profile's
/// `allocator` lines); `None` when no identifying symbol is there.
pub fn identify_by_symbols(lines: &[String]) -> Option<Identity> {
    let o = parse_lines(&lines.join("\n")).ok()?;
    let (name, how) = by_symbol(&o)?;
    let (version, version_source) = version_of(&name, &o);
    Some(Identity {
        name,
        version,
        version_source,
        identified_by: how,
        object: o.object.clone(),
    })
}

/// The name from the first identifying symbol found, and `symbol NAME`.
fn by_symbol(o: &Observations) -> Option<(String, String)> {
    let has = |s: &str| o.syms.iter().any(|x| x == s);
    let by_symbol = [
        ("mallctl", "jemalloc"),
        ("je_mallctl", "jemalloc"),
        ("mi_version", "mimalloc"),
        ("tc_version", "tcmalloc"),
        ("MallocExtension_GetNumericProperty", "tcmalloc"),
        ("scalable_malloc", "tbbmalloc"),
        // oneTBB's proxy (libtbbmalloc_proxy.so): malloc there, scalable_malloc in the
        // library it loads.
        ("__TBB_malloc_proxy", "tbbmalloc"),
        ("gnu_get_libc_version", "glibc"),
    ];
    by_symbol
        .iter()
        .find(|(s, _)| has(s))
        .map(|(s, n)| (n.to_string(), format!("symbol {s}")))
}

/// The version of allocator `name` from the version functions the probe called, and what the
/// function returned.
fn version_of(name: &str, o: &Observations) -> (Option<String>, Option<String>) {
    match name {
        "jemalloc" => o.versions.get("mallctl").map(|v| {
            (
                v.split('-').next().unwrap_or(v).to_string(),
                format!("mallctl(\"version\") = {v}"),
            )
        }),
        "mimalloc" => o.versions.get("mi_version").and_then(|v| {
            let n: u32 = v.parse().ok()?;
            Some((
                format!("{}.{}.{}", n / 100, n / 10 % 10, n % 10),
                format!("mi_version() = {v}"),
            ))
        }),
        "tcmalloc" => o.versions.get("tc_version").map(|v| {
            (
                v.rsplit(' ').next().unwrap_or(v).to_string(),
                format!("tc_version() = {v}"),
            )
        }),
        "glibc" => o
            .versions
            .get("gnu_get_libc_version")
            .map(|v| (v.clone(), format!("gnu_get_libc_version() = {v}"))),
        _ => None,
    }
    .unzip()
}

/// The allocator's name and version from the symbols the probe found, else from behaviour.
fn identify(o: &Observations, d: &Description) -> (String, Option<String>, Option<String>, String) {
    let (name, how) = by_symbol(o).unwrap_or_else(|| behaviour(o, d));
    let (version, source) = version_of(&name, o);
    (name, version, source, how)
}

/// The name from behaviour alone (no identifying symbol: a stripped or renamed allocator).
fn behaviour(o: &Observations, d: &Description) -> (String, String) {
    let place = |s: u64| o.places.iter().find(|p| p.size == s);
    let name = if d.style == "sequential" {
        if d.min_size == Some(24) && d.granularity == Some(16) && d.big_via == "mmap" {
            ("glibc", "sequential, 24 + 16k usable sizes, direct mmap")
        } else {
            ("unknown", "sequential, not glibc's sizes")
        }
    } else {
        match d.small_max_by.as_str() {
            "exact sizes" => ("tbbmalloc", "exact-size objects past the class table"),
            // gperftools' class table: dozens of classes up to 256 KiB (a page heap alone
            // is no signature: any allocator with one lock and no thread caches has one).
            "shared page heap" if d.small_max == 256 << 10 && d.size_classes.len() >= 64 => (
                "tcmalloc",
                "a page heap shared by threads, dozens of classes up to 256 KiB",
            ),
            // jemalloc's large objects start at a random cache line of their first page;
            // mimalloc's at a 64 KiB slice, rounded to slices.
            "isolated objects"
                if d.first_big_size
                    .and_then(place)
                    .is_some_and(|p| 2 * p.page_aligned < p.n) =>
            {
                ("jemalloc", "large objects apart, not page aligned")
            }
            "coarse step"
                if d.first_big_size
                    .and_then(place)
                    .is_some_and(|p| p.align_log2 >= 16) =>
            {
                ("mimalloc", "64 KiB-aligned large objects rounded to 64 KiB")
            }
            _ => ("unknown", "no known behaviour"),
        }
    };
    (name.0.to_string(), format!("behaviour: {}", name.1))
}

/// Classify the observations. `channels` and `probe` come from the driver (it reads the
/// allocator's file and times the run).
pub fn describe(o: &Observations, channels: Channels, mut probe: ProbeRun) -> Description {
    let sequential = o.style.0 > o.style.1;
    let classes = chain(&o.usable);
    let direct = first_direct_mmap(o, false);
    let mut d = Description {
        object: o.object.clone().unwrap_or_default(),
        style: if sequential { "sequential" } else { "bibop" }.to_string(),
        large_threshold_thread: first_direct_mmap(o, true),
        brk_heap: !o.brk.is_empty() && o.brk.iter().all(|b| b.1),
        ..Default::default()
    };
    if sequential {
        // Usable sizes below the first big size: the first, and the usual step.
        let below: Vec<(u64, u64)> = classes
            .iter()
            .copied()
            .filter(|&(u, _)| direct.is_none_or(|t| u < t))
            .collect();
        d.min_size = below.first().map(|c| c.0);
        d.granularity = mode(below.windows(2).map(|w| w[1].0 - w[0].0));
        match direct {
            Some(t) => {
                d.large_threshold = t;
                d.small_max = t - 1;
                d.small_max_by = "direct mmap".into();
            }
            None => {
                // No big objects seen: the heap serves every request the walk made at the
                // granularity (the largest such request).
                let g = d.granularity.unwrap_or(16);
                d.small_max = o
                    .usable
                    .iter()
                    .filter(|&&(r, u)| u >= r && u - r < g.max(d.min_size.unwrap_or(0)))
                    .map(|&(r, _)| r)
                    .max()
                    .unwrap_or(0);
                d.large_threshold = d.small_max + 1;
                d.small_max_by = "walk end".into();
            }
        }
    } else {
        let end = table_end(&classes, &o.places);
        let n = end.as_ref().map_or(classes.len(), |e| e.index);
        d.size_classes = classes[..n].iter().map(|c| c.0).collect();
        d.small_max = d.size_classes.last().copied().unwrap_or(0);
        d.small_max_by = end.as_ref().map_or("walk end", |e| e.by).to_string();
        d.first_big_size = classes.get(n).map(|c| c.0);
        d.large_threshold = match direct {
            Some(t) if t > d.small_max => t,
            _ => d.small_max + 1,
        };
    }
    d.big_via = if direct.is_some() {
        "mmap"
    } else if d.small_max_by == "shared page heap" || page_rounded_past(&o.usable, d.small_max) {
        "page-heap"
    } else {
        "extent"
    }
    .to_string();
    if direct.is_some() {
        // The largest request that slid, if every smaller one tested slid too.
        let mut s = o.slides.clone();
        s.sort_unstable();
        d.mmap_threshold_slides_to = s.iter().take_while(|x| !x.1).map(|x| x.0).last();
    }
    d.realloc_check = realloc_check(&o.places, &d);
    let (name, version, source, how) = identify(o, &d);
    d.name = name;
    d.version = version;
    d.version_source = source;
    d.identified_by = how;
    d.channels = channels;
    probe.probe_ms = o.done_us.unwrap_or(0) as f64 / 1000.0;
    probe.functions = o.funcs.clone();
    probe.style_votes = [o.style.0, o.style.1, o.style.2];
    d.probe = probe;
    d.bench = o
        .bench
        .iter()
        .map(|(op, size, reuse, phase, ns, calls)| BenchRow {
            op: op.clone(),
            size: *size,
            kind: size_kind(&d, *size).to_string(),
            reuse: reuse.clone(),
            phase: phase.clone(),
            ns: *ns,
            calls: *calls,
        })
        .collect();
    d
}

/// realloc as a cross-check of the usable sizes: the first size that disagrees.
fn realloc_check(places: &[Place], d: &Description) -> String {
    let classes: Vec<u64> = if d.style == "sequential" {
        places
            .iter()
            .map(|p| p.size)
            .filter(|&s| s <= d.small_max)
            .collect()
    } else {
        d.size_classes.clone()
    };
    let mut checked = 0;
    for c in classes {
        let Some(p) = places.iter().find(|p| p.size == c) else {
            continue;
        };
        if p.realloc_stays == Some(false) {
            return format!("disagrees: realloc({c}) of a {c}-byte object moved it");
        }
        if d.style == "bibop" && p.realloc_moves == Some(false) {
            return format!("disagrees: realloc({}) of a {c}-byte object stayed", c + 1);
        }
        checked += usize::from(p.realloc_stays.is_some());
    }
    if checked == 0 {
        "untested".into()
    } else {
        "agrees".into()
    }
}

/// Past small_max, does the walk step by one whole number of pages every time (a page
/// heap's rounding)? At least 8 steps.
fn page_rounded_past(usable: &[(u64, u64)], small_max: u64) -> bool {
    let sizes: Vec<u64> = chain(usable)
        .into_iter()
        .map(|c| c.0)
        .filter(|&u| u > small_max)
        .collect();
    let steps: Vec<u64> = sizes.windows(2).map(|w| w[1] - w[0]).collect();
    steps.len() >= 8
        && steps[0] >= PAGE
        && steps[0].is_multiple_of(PAGE)
        && steps.iter().all(|&g| g == steps[0])
}

/// The description as TOML, with a comment naming what wrote it.
pub fn to_toml(d: &Description) -> String {
    let body = toml::to_string(d).expect("a description always serializes");
    format!(
        "# Allocator description written by `profcc detect-allocator` (docs/allocators.md).\n{body}"
    )
}

/// The descriptions shipped in `configs/allocators/` (file name, text); a test checks the
/// list against the directory.
pub const SHIPPED: &[(&str, &str)] = &[
    (
        "glibc-2.36.toml",
        include_str!("../../configs/allocators/glibc-2.36.toml"),
    ),
    (
        "jemalloc-5.3.0.toml",
        include_str!("../../configs/allocators/jemalloc-5.3.0.toml"),
    ),
    (
        "mimalloc-2.0.9.toml",
        include_str!("../../configs/allocators/mimalloc-2.0.9.toml"),
    ),
    (
        "tbbmalloc-2021.8.toml",
        include_str!("../../configs/allocators/tbbmalloc-2021.8.toml"),
    ),
    (
        "tcmalloc-2.10.toml",
        include_str!("../../configs/allocators/tcmalloc-2.10.toml"),
    ),
];

/// Every shipped description, parsed (file name, description).
pub fn shipped() -> Vec<(&'static str, Description)> {
    SHIPPED
        .iter()
        .map(|(f, t)| (*f, from_toml(t).unwrap_or_else(|e| panic!("{f}: {e}"))))
        .collect()
}

/// The shipped description of allocator `name` (the one of `version` if there is one).
pub fn shipped_for(name: &str, version: Option<&str>) -> Option<(&'static str, Description)> {
    let all: Vec<_> = shipped()
        .into_iter()
        .filter(|(_, d)| d.name == name)
        .collect();
    let exact = all
        .iter()
        .position(|(_, d)| version.is_some() && d.version.as_deref() == version);
    all.into_iter().nth(exact.unwrap_or(0))
}

/// The library a program preloads to run with the allocator of `d`: its object, except
/// oneTBB's, whose library has no malloc of its own (its proxy replaces the malloc family).
pub fn preload_of(d: &Description) -> String {
    if d.name == "tbbmalloc" {
        d.object.replace("libtbbmalloc.so", "libtbbmalloc_proxy.so")
    } else {
        d.object.clone()
    }
}

/// The bench row `op` a program operation is priced with: allocations by `malloc`'s rows,
/// frees (and deletes) by `free`'s.
pub fn bench_op(op: &str) -> &'static str {
    if op == "free" || op == "delete" {
        "free"
    } else {
        "malloc"
    }
}

/// The reference cost (ns) of one operation of `size` bytes under `d`'s bench rows with this
/// reuse and phase: linear in log(size) between the two rows around it, the nearest row
/// outside their range. None when `d` has no such rows.
pub fn reference_ns(d: &Description, op: &str, size: u64, reuse: &str, phase: &str) -> Option<f64> {
    let op = bench_op(op);
    let mut rows: Vec<(u64, f64)> = d
        .bench
        .iter()
        .filter(|r| r.op == op && r.reuse == reuse && r.phase == phase)
        .map(|r| (r.size, r.ns))
        .collect();
    rows.sort_by_key(|r| r.0);
    let (first, last) = (*rows.first()?, *rows.last()?);
    if size <= first.0 {
        return Some(first.1);
    }
    if size >= last.0 {
        return Some(last.1);
    }
    let i = rows.iter().position(|r| r.0 >= size)?;
    let (a, b) = (rows[i - 1], rows[i]);
    let t = ((size as f64).ln() - (a.0 as f64).ln()) / ((b.0 as f64).ln() - (a.0 as f64).ln());
    Some(a.1 + t * (b.1 - a.1))
}

/// Where the shipped descriptions' `[[bench]]` rows were measured: the fallback reference
/// costs are that machine's, not the user's.
pub const SHIPPED_COSTS_MACHINE: &str = "the project's 2-core Debian 12 VM, 2026-11-24";

/// One allocator's reference costs measured on one machine by `profcc detect-allocator
/// --bench` (docs/allocators.md, "Reference costs"): kept in [`costs_file`], one entry per
/// machine key (`profcc_analysis::sharing::machine_key`), allocator name and version.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineCosts {
    pub machine: String,
    pub allocator: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The library (or program) measured.
    pub object: String,
    /// When, in seconds since the Unix epoch.
    pub measured_at: u64,
    pub bench: Vec<BenchRow>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct CostsFile {
    #[serde(default)]
    costs: Vec<MachineCosts>,
}

/// The reference costs cache: `$XDG_CACHE_HOME/profcc/allocator_costs.toml`, else
/// `$HOME/.cache/profcc/allocator_costs.toml` (beside `profcc calibrate`'s calibration.json).
pub fn costs_file(
    xdg_cache_home: Option<&std::ffi::OsStr>,
    home: Option<&std::ffi::OsStr>,
) -> Option<std::path::PathBuf> {
    profcc_schema::cache_file(xdg_cache_home, home, "allocator_costs.toml")
}

/// Every entry of a cache file's text (none when it does not parse).
pub fn costs_in(text: &str) -> Vec<MachineCosts> {
    toml::from_str::<CostsFile>(text)
        .map(|f| f.costs)
        .unwrap_or_default()
}

/// The cache keeps this many measurements of one machine, allocator and version (the most
/// recent); the report prices with each cell's median over them (`costs_for`): one `--bench`
/// run on a machine that was busy for its few seconds moves the reference costs less.
pub const COSTS_KEPT: usize = 3;

/// The cache's text with `c` added to the entries of its machine, allocator and version, the
/// oldest beyond [`COSTS_KEPT`] dropped.
pub fn costs_with(text: &str, c: MachineCosts) -> String {
    let mut all = costs_in(text);
    let same = |x: &MachineCosts| {
        x.machine == c.machine && x.allocator == c.allocator && x.version == c.version
    };
    let mut older = all.iter().filter(|x| same(x)).count();
    // Entries are appended, so the first of its kind is the oldest.
    all.retain(|x| {
        if same(x) && older >= COSTS_KEPT {
            older -= 1;
            return false;
        }
        true
    });
    all.push(c);
    toml::to_string(&CostsFile { costs: all }).expect("costs always serialize")
}

/// This machine's costs of allocator `d` (its name and version) in the cache's text: the
/// most recent entry's rows, each cell's `ns` the median over the kept entries that measured
/// it (the lower middle of an even count).
pub fn costs_for(text: &str, machine: &str, d: &Description) -> Option<MachineCosts> {
    let kept: Vec<MachineCosts> = costs_in(text)
        .into_iter()
        .filter(|c| c.machine == machine && c.allocator == d.name && c.version == d.version)
        .filter(|c| !c.bench.is_empty())
        .collect();
    let mut last = kept.last()?.clone();
    for row in &mut last.bench {
        let mut v: Vec<f64> = kept
            .iter()
            .flat_map(|c| &c.bench)
            .filter(|r| {
                r.op == row.op && r.size == row.size && r.reuse == row.reuse && r.phase == row.phase
            })
            .map(|r| r.ns)
            .collect();
        v.sort_by(f64::total_cmp);
        row.ns = v[(v.len() - 1) / 2];
    }
    Some(last)
}

/// Read a description (a shipped file, or one written before).
pub fn from_toml(text: &str) -> Result<Description, String> {
    toml::from_str(text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cache keeps the last `COSTS_KEPT` measurements per machine, allocator and
    /// version; a new measurement drops the oldest of its own only; prices are each cell's
    /// median over them.
    #[test]
    fn machine_costs_round_trip_and_keep_the_last_three() {
        let d = |name: &str, version: Option<&str>| Description {
            name: name.into(),
            version: version.map(Into::into),
            ..Default::default()
        };
        let row = |ns| BenchRow {
            op: "malloc".into(),
            size: 64,
            kind: "small".into(),
            reuse: "reused".into(),
            phase: "serial".into(),
            ns,
            calls: 10,
        };
        let c = |m: &str, a: &str, ns| MachineCosts {
            machine: m.into(),
            allocator: a.into(),
            version: Some("1".into()),
            object: "/lib/x.so".into(),
            measured_at: 7,
            bench: vec![row(ns)],
        };
        let t = costs_with("", c("A, 2 CPUs", "glibc", 5.0));
        let t = costs_with(&t, c("B, 4 CPUs", "glibc", 6.0));
        let t = costs_with(&t, c("A, 2 CPUs", "glibc", 8.0));
        assert_eq!(costs_in(&t).len(), 3);
        let ns = |t: &str| {
            costs_for(t, "A, 2 CPUs", &d("glibc", Some("1")))
                .unwrap()
                .bench[0]
                .ns
        };
        // Two kept: the lower middle.
        assert_eq!(ns(&t), 5.0);
        let t = costs_with(&t, c("A, 2 CPUs", "glibc", 100.0));
        assert_eq!(ns(&t), 8.0);
        // A fourth drops the oldest (5.0): 8, 100, 9.
        let t = costs_with(&t, c("A, 2 CPUs", "glibc", 9.0));
        assert_eq!(costs_in(&t).len(), COSTS_KEPT + 1);
        assert_eq!(ns(&t), 9.0);
        assert_eq!(
            costs_for(&t, "B, 4 CPUs", &d("glibc", Some("1")))
                .unwrap()
                .bench[0]
                .ns,
            6.0
        );
        assert!(costs_for(&t, "A, 2 CPUs", &d("glibc", Some("2"))).is_none());
        assert!(costs_for(&t, "C, 2 CPUs", &d("glibc", Some("1"))).is_none());
        assert!(costs_in("not toml [").is_empty());
    }

    #[test]
    fn shipped_list_is_the_directory() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/allocators");
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|f| f.ends_with(".toml"))
            .collect();
        files.sort();
        let listed: Vec<String> = SHIPPED.iter().map(|(f, _)| f.to_string()).collect();
        assert_eq!(files, listed);
        assert_eq!(shipped().len(), SHIPPED.len());
        assert_eq!(
            shipped_for("jemalloc", Some("5.3.0")).unwrap().0,
            "jemalloc-5.3.0.toml"
        );
        assert!(shipped_for("hoard", None).is_none());
    }

    #[test]
    fn reference_cost_interpolates_in_log_size() {
        let row = |size, ns| BenchRow {
            op: "malloc".into(),
            size,
            kind: "small".into(),
            reuse: "new".into(),
            phase: "serial".into(),
            ns,
            calls: 1,
        };
        let d = Description {
            bench: vec![row(64, 10.0), row(4096, 40.0)],
            ..Default::default()
        };
        assert_eq!(reference_ns(&d, "new", 16, "new", "serial"), Some(10.0));
        assert_eq!(
            reference_ns(&d, "calloc", 1 << 20, "new", "serial"),
            Some(40.0)
        );
        // 512 is half way from 64 to 4096 in log size.
        assert!((reference_ns(&d, "malloc", 512, "new", "serial").unwrap() - 25.0).abs() < 1e-9);
        assert_eq!(reference_ns(&d, "free", 64, "new", "serial"), None);
        assert_eq!(reference_ns(&d, "malloc", 64, "reused", "serial"), None);
    }

    fn desc(raw: &str) -> Description {
        describe(
            &parse(raw).unwrap(),
            Channels::default(),
            ProbeRun::default(),
        )
    }

    #[test]
    fn recorded_glibc() {
        let d = desc(include_str!("../testdata/glibc-2.36.obs"));
        assert_eq!(d.name, "glibc");
        assert_eq!(d.version.as_deref(), Some("2.36"));
        assert_eq!(d.style, "sequential");
        assert_eq!((d.min_size, d.granularity), (Some(24), Some(16)));
        assert!(d.size_classes.is_empty());
        assert_eq!((d.small_max, d.large_threshold), (131048, 131049));
        assert_eq!(d.large_threshold_thread, Some(131049));
        assert_eq!(d.big_via, "mmap");
        assert_eq!(d.mmap_threshold_slides_to, Some(33546240));
        assert!(d.brk_heap);
    }

    #[test]
    fn recorded_jemalloc() {
        let d = desc(include_str!("../testdata/jemalloc-5.3.0.obs"));
        assert_eq!(d.name, "jemalloc");
        assert_eq!(d.version.as_deref(), Some("5.3.0"));
        assert_eq!(d.style, "bibop");
        assert_eq!(d.size_classes.len(), 36);
        assert_eq!(&d.size_classes[..9], [8, 16, 32, 48, 64, 80, 96, 112, 128]);
        assert_eq!((d.small_max, d.large_threshold), (14336, 14337));
        assert_eq!(d.first_big_size, Some(16384));
        assert_eq!(d.small_max_by, "isolated objects");
        assert_eq!(d.big_via, "extent");
        assert_eq!(d.realloc_check, "agrees");
        assert!(!d.brk_heap);
    }

    #[test]
    fn recorded_tcmalloc() {
        let d = desc(include_str!("../testdata/tcmalloc-2.10.obs"));
        assert_eq!(d.name, "tcmalloc");
        assert_eq!(d.version.as_deref(), Some("2.10"));
        assert_eq!(d.size_classes.len(), 85);
        assert_eq!((d.small_max, d.large_threshold), (262144, 262145));
        assert_eq!(d.first_big_size, Some(270336));
        assert_eq!(d.big_via, "page-heap");
        assert!(d.brk_heap);
    }

    #[test]
    fn recorded_mimalloc() {
        let d = desc(include_str!("../testdata/mimalloc-2.0.9.obs"));
        assert_eq!(d.name, "mimalloc");
        assert_eq!(d.version.as_deref(), Some("2.0.9"));
        assert_eq!(d.size_classes.len(), 49);
        assert_eq!(d.small_max, 131072);
        assert_eq!(d.small_max_by, "coarse step");
        assert_eq!(d.large_threshold, 16 * 1024 * 1024 + 1);
        assert_eq!(d.big_via, "mmap");
        assert_eq!(d.mmap_threshold_slides_to, None);
    }

    #[test]
    fn recorded_tbbmalloc() {
        let d = desc(include_str!("../testdata/tbbmalloc-2021.8.obs"));
        assert_eq!(d.name, "tbbmalloc");
        assert_eq!(d.version, None);
        assert_eq!(d.small_max, 8128);
        assert_eq!(d.small_max_by, "exact sizes");
        assert_eq!(d.size_classes.len(), 26);
    }

    /// With the identifying symbols gone, behaviour names each allocator the same.
    #[test]
    fn behaviour_names_them_without_symbols() {
        for (raw, name) in [
            (include_str!("../testdata/glibc-2.36.obs"), "glibc"),
            (include_str!("../testdata/jemalloc-5.3.0.obs"), "jemalloc"),
            (include_str!("../testdata/tcmalloc-2.10.obs"), "tcmalloc"),
            (include_str!("../testdata/mimalloc-2.0.9.obs"), "mimalloc"),
            (
                include_str!("../testdata/tbbmalloc-2021.8.obs"),
                "tbbmalloc",
            ),
        ] {
            let mut o = parse(raw).unwrap();
            o.syms.clear();
            let d = describe(&o, Channels::default(), ProbeRun::default());
            assert_eq!(d.name, name, "{}", d.identified_by);
            assert!(d.identified_by.starts_with("behaviour: "), "{name}");
        }
    }

    #[test]
    fn style_is_a_majority() {
        let mut o = parse(include_str!("../testdata/glibc-2.36.obs")).unwrap();
        o.style = (120, 70, 10); // some pairs straddled something: still sequential
        assert_eq!(
            describe(&o, Channels::default(), ProbeRun::default()).style,
            "sequential"
        );
        o.style = (20, 170, 10);
        assert_eq!(
            describe(&o, Channels::default(), ProbeRun::default()).style,
            "bibop"
        );
    }

    /// A sequential heap without big objects serves the whole walk (to 64 MiB).
    #[test]
    fn sequential_without_mmap_ends_at_the_walk() {
        let mut o = parse(include_str!("../testdata/glibc-2.36.obs")).unwrap();
        o.big.clear();
        o.usable.retain(|&(r, _)| r < 200_000);
        o.usable.push((64 << 20, (64 << 20) + 8));
        let d = describe(&o, Channels::default(), ProbeRun::default());
        assert_eq!(
            (d.style.as_str(), d.small_max_by.as_str()),
            ("sequential", "walk end")
        );
        assert_eq!(d.small_max, 64 << 20);
        assert_eq!(d.big_via, "extent");
    }

    #[test]
    fn chain_stops_at_skips() {
        assert_eq!(
            chain(&[(1, 8), (9, 16), (17, 32), (100, 112), (113, 128)]),
            [(8, 8), (16, 8), (32, 16)]
        );
    }

    #[test]
    fn channels_read_imports() {
        let c = channels(
            "lib.so",
            &[
                "__sbrk".into(),
                "madvise@GLIBC_2.2.5".into(),
                "syscall".into(),
                "printf".into(),
            ],
        );
        assert!(c.sbrk && c.madvise && c.syscall);
        assert!(!c.mmap && !c.pthread_mutex_lock);
        assert_eq!(c.imports, ["__sbrk", "madvise", "syscall"]);
    }

    #[test]
    fn toml_round_trips() {
        let d = desc(include_str!("../testdata/jemalloc-5.3.0.obs"));
        assert_eq!(from_toml(&to_toml(&d)).unwrap(), d);
    }

    #[test]
    fn truncated_output_is_an_error() {
        assert!(parse("object x\nu 1 8\n").is_err());
        assert!(parse("error no malloc\ndone 1\n").is_err());
    }
}
