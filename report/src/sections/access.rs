//! Top access sites, aggregated by file:line (unrolling and vectorisation split one source line
//! into many sites; the user thinks in lines).

use super::{section, Options, Section};
use crate::fmt;
use crate::merge::Merged;
use crate::symbolize::demangle;
use profcc_schema::AccessKind;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

#[derive(Serialize)]
pub struct AccessSites {
    /// Accesses that `percent` is relative to (all accesses of all inputs).
    pub total_accesses: u64,
    /// Distinct file:line pairs with at least one access.
    pub lines_total: usize,
    /// The top lines, by accesses (then bytes), at most `--top`.
    pub lines: Vec<Line>,
}

#[derive(Serialize)]
pub struct Line {
    pub rank: usize,
    pub file: String,
    pub line: u32,
    /// Demangled function with the most accesses on this line.
    pub function: String,
    /// All functions the line's accesses were compiled into, most accesses first.
    pub functions: Vec<String>,
    /// Distinct inlined-at places (`file:line`), if the code was inlined.
    pub inlined_at: Vec<String>,
    pub accesses: u64,
    /// Accesses that read (read, atomic, copy-read).
    pub reads: u64,
    /// Accesses that write (write, atomic, copy-write).
    pub writes: u64,
    pub bytes: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Share of all accesses, 0–100.
    pub percent: f64,
    /// Threads that executed the line: per input the largest site count (a lower bound), summed
    /// over inputs.
    pub threads: u32,
    /// The individual sites, most accesses first.
    pub sites: Vec<Site>,
}

#[derive(Serialize)]
pub struct Site {
    pub col: u32,
    /// read, write, atomic, copy_read, copy_write (as in the profile).
    pub kind: AccessKind,
    /// Bytes per access; 0 when the length is known only at run time.
    pub size: u32,
    pub count: u64,
    pub bytes: u64,
    pub function: String,
    pub inlined_at: Option<String>,
}

#[derive(Default)]
struct Acc {
    accesses: u64,
    reads: u64,
    writes: u64,
    bytes: u64,
    bytes_read: u64,
    bytes_written: u64,
    functions: HashMap<String, u64>,
    inlined_at: Vec<String>,
    threads: BTreeMap<usize, u32>,
    sites: Vec<Site>,
}

pub fn build(m: &Merged, opts: &Options) -> Option<Box<dyn Section>> {
    let mut by_line: HashMap<(&str, u32), Acc> = HashMap::new();
    let mut demangled: HashMap<&str, String> = HashMap::new();
    for s in &m.sites {
        let a = by_line.entry((s.file.as_str(), s.line)).or_default();
        a.accesses += s.count;
        a.bytes += s.bytes;
        if s.kind.reads() {
            a.reads += s.count;
            a.bytes_read += s.bytes;
        }
        if s.kind.writes() {
            a.writes += s.count;
            a.bytes_written += s.bytes;
        }
        let function = demangled
            .entry(s.function.as_str())
            .or_insert_with(|| demangle(&s.function))
            .clone();
        *a.functions.entry(function.clone()).or_default() += s.count;
        if let Some(at) = &s.inlined_at {
            if !a.inlined_at.contains(at) {
                a.inlined_at.push(at.clone());
            }
        }
        for &(i, t) in &s.threads_by_input {
            let e = a.threads.entry(i).or_default();
            *e = (*e).max(t);
        }
        a.sites.push(Site {
            col: s.col,
            kind: s.kind,
            size: s.size,
            count: s.count,
            bytes: s.bytes,
            function,
            inlined_at: s.inlined_at.clone(),
        });
    }
    let total = m.access_total();
    let mut lines: Vec<Line> = by_line
        .into_iter()
        .map(|((file, line), mut a)| {
            let mut functions: Vec<(String, u64)> = a.functions.into_iter().collect();
            functions.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
            a.sites.sort_by(|x, y| {
                y.count
                    .cmp(&x.count)
                    .then(x.col.cmp(&y.col))
                    .then(x.kind.cmp(&y.kind))
            });
            Line {
                rank: 0,
                file: file.to_string(),
                line,
                function: functions.first().map(|f| f.0.clone()).unwrap_or_default(),
                functions: functions.into_iter().map(|f| f.0).collect(),
                inlined_at: a.inlined_at,
                accesses: a.accesses,
                reads: a.reads,
                writes: a.writes,
                bytes: a.bytes,
                bytes_read: a.bytes_read,
                bytes_written: a.bytes_written,
                percent: if total == 0 {
                    0.0
                } else {
                    a.accesses as f64 * 100.0 / total as f64
                },
                threads: a.threads.values().sum(),
                sites: a.sites,
            }
        })
        .collect();
    lines.sort_by(|x, y| {
        y.accesses
            .cmp(&x.accesses)
            .then(y.bytes.cmp(&x.bytes))
            .then_with(|| x.file.cmp(&y.file))
            .then(x.line.cmp(&y.line))
    });
    let lines_total = lines.len();
    lines.truncate(opts.limit(lines_total));
    for (n, l) in lines.iter_mut().enumerate() {
        l.rank = n + 1;
    }
    Some(Box::new(AccessSites {
        total_accesses: total,
        lines_total,
        lines,
    }))
}

section!(AccessSites, "access_sites");

impl AccessSites {
    fn render(&self, out: &mut String) {
        out.push('\n');
        if self.lines.is_empty() {
            out.push_str("Access sites: none recorded (was the program built with profcc?)\n");
            return;
        }
        out.push_str(&format!(
            "Top access sites by line ({} of {} lines, {} accesses in all)\n",
            self.lines.len(),
            self.lines_total,
            fmt::count(self.total_accesses)
        ));
        let places: Vec<String> = self
            .lines
            .iter()
            .map(|l| fmt::tail(&place(&l.file, l.line), 48))
            .collect();
        let pw = places
            .iter()
            .map(|p| p.chars().count())
            .max()
            .unwrap_or(5)
            .max(5);
        out.push_str(&format!(
            "  {:>3}  {:>13}  {:>6}  {:>13}  {:>13}  {:>10}  {:>4}  {:<pw$}  {}\n",
            "#", "accesses", "%", "reads", "writes", "bytes", "thr", "place", "function"
        ));
        for (l, place) in self.lines.iter().zip(&places) {
            let more = if l.functions.len() > 1 {
                format!(" (+{} more)", l.functions.len() - 1)
            } else {
                String::new()
            };
            let inl = match l.inlined_at.as_slice() {
                [] => String::new(),
                [one] => format!(", via inlined call at {one}"),
                many => format!(
                    ", via inlined calls at {} and {} more",
                    many[0],
                    many.len() - 1
                ),
            };
            out.push_str(&format!(
                "  {:>3}  {:>13}  {:>6}  {:>13}  {:>13}  {:>10}  {:>4}  {:<pw$}  {}{}{}\n",
                l.rank,
                fmt::count(l.accesses),
                fmt::percent(l.percent),
                fmt::count(l.reads),
                fmt::count(l.writes),
                fmt::bytes(l.bytes),
                l.threads,
                place,
                l.function,
                more,
                inl,
            ));
        }
    }
}

fn place(file: &str, line: u32) -> String {
    match (file, line) {
        ("", _) => "(no debug location)".into(),
        (f, 0) => f.into(),
        (f, l) => format!("{f}:{l}"),
    }
}
