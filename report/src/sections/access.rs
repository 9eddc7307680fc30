//! Top access sites, aggregated by file:line (unrolling and vectorisation split one source line
//! into many sites; the user thinks in lines).

use super::Options;
use crate::merge::Merged;
use crate::model::{AccessSites, InputCount, Line, Site};
use crate::symbolize::demangle;
use std::collections::HashMap;

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
    sites: Vec<Site>,
}

pub fn build(m: &Merged, opts: &Options) -> AccessSites {
    let mut by_line: HashMap<(&str, u32), Acc> = HashMap::new();
    let mut demangled: HashMap<&str, String> = HashMap::new();
    let several = m.inputs.len() > 1;
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
        a.sites.push(Site {
            col: s.col,
            kind: s.kind,
            size: s.size,
            count: s.count,
            bytes: s.bytes,
            function,
            inlined_at: s.inlined_at.clone(),
            by_input: if several {
                s.count_by_input
                    .iter()
                    .filter(|x| x.1 > 0)
                    .map(|&(input, count)| InputCount { input, count })
                    .collect()
            } else {
                Vec::new()
            },
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
                threads: m.line_threads(file, line),
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
    AccessSites {
        total_accesses: total,
        lines_total,
        lines,
        counted_modules: m.inputs.iter().map(|i| i.profile.counted_modules).sum(),
    }
}
