//! Ranks: one row of totals per input (an MPI rank's, or one process's, profile) and each
//! total's spread over them: which rank is heaviest and by how much (docs/report.md, "Ranks").

use super::Options;
use crate::merge::Merged;
use crate::model::{RankMetric, RankRow, RankSpread, Ranks, Report, Spread, RANK_METRICS};
use crate::symbolize::user_frame;
use profcc_analysis::findings::heap_identity;
use std::collections::BTreeMap;

/// Present when more than one profile was merged.
pub fn build(m: &Merged, _: &Options) -> Option<Ranks> {
    if m.inputs.len() < 2 {
        return None;
    }
    let mut rows: Vec<RankRow> = m
        .inputs
        .iter()
        .enumerate()
        .map(|(i, inp)| {
            let p = &inp.profile;
            RankRow {
                rank: p.rank,
                input: i,
                host: p.host.clone(),
                pid: p.pid,
                threads: p.totals.threads.max(p.threads.len() as u32),
                accesses: p.totals.accesses,
                allocations: p.totals.allocations,
                bytes_allocated: p.totals.bytes_allocated,
                peak_bytes: p.totals.live_bytes_peak,
                remote_accesses: p
                    .numa
                    .as_ref()
                    .map_or(0, |n| n.threads.iter().map(|t| t.remote).sum()),
                invalidations: p
                    .sharing
                    .as_ref()
                    .map_or(0, |s| s.lines.iter().map(|l| l.invalidations).sum()),
                seconds: p.duration_ns as f64 / 1e9,
            }
        })
        .collect();
    // By rank; inputs without one after, in command-line order.
    rows.sort_by_key(|r| (r.rank.is_none(), r.rank, r.input));
    let ranks: Vec<Option<u32>> = rows.iter().map(|r| r.rank).collect();
    let metrics = RANK_METRICS
        .iter()
        .map(|&name| {
            let values: Vec<f64> = rows.iter().map(|r| r.metric(name)).collect();
            let mut spread = Spread::of(&values, &ranks);
            // Spread::of indexes the rows; name the input.
            spread.worst_input = rows[spread.worst_input].input;
            RankMetric {
                metric: name.into(),
                spread,
            }
        })
        .collect();
    Some(Ranks {
        rows,
        metrics,
        spreads: Vec::new(),
    })
}

/// Per-input values of one keyed quantity, summed into a vector in row order.
struct Keyed<'a> {
    row_of: &'a [usize],
    values: BTreeMap<(String, &'static str), Vec<f64>>,
}

impl Keyed<'_> {
    fn add(&mut self, key: &str, metric: &'static str, input: usize, v: f64) {
        let n = self.row_of.len();
        let e = self
            .values
            .entry((key.to_string(), metric))
            .or_insert_with(|| vec![0.0; n]);
        if let Some(&row) = self.row_of.get(input) {
            e[row] += v;
        }
    }

    fn spreads(self, what: &str, ranks: &[Option<u32>], rows: &[RankRow]) -> Vec<RankSpread> {
        let mut v: Vec<RankSpread> = self
            .values
            .into_iter()
            .map(|((key, metric), values)| {
                let mut spread = Spread::of(&values, ranks);
                spread.worst_input = rows[spread.worst_input].input;
                RankSpread {
                    what: what.into(),
                    key,
                    metric: metric.into(),
                    spread,
                }
            })
            .collect();
        // Largest excess of the heaviest rank over the mean first: a 29-byte block on one
        // rank is more imbalanced than a 3 MiB array, not more worth a look.
        let excess = |x: &RankSpread| x.spread.max - x.spread.mean;
        v.sort_by(|a, b| {
            excess(b)
                .total_cmp(&excess(a))
                .then(b.spread.imbalance.total_cmp(&a.spread.imbalance))
                .then(a.key.cmp(&b.key))
                .then(a.metric.cmp(&b.metric))
        });
        v
    }
}

/// The spreads of the report's findings (impact by key), heap objects (allocations and bytes
/// by identity) and listed access lines (accesses by `file:line`) over the ranks: built after
/// the findings and objects.
pub fn spreads(m: &Merged, r: &Report) -> Vec<RankSpread> {
    let Some(k) = &r.ranks else {
        return Vec::new();
    };
    let ranks: Vec<Option<u32>> = k.rows.iter().map(|r| r.rank).collect();
    let mut row_of = vec![0usize; m.inputs.len()];
    for (at, row) in k.rows.iter().enumerate() {
        if let Some(x) = row_of.get_mut(row.input) {
            *x = at;
        }
    }
    let keyed = || Keyed {
        row_of: &row_of,
        values: BTreeMap::new(),
    };
    let mut findings = keyed();
    for f in &r.findings {
        findings.add(&f.key, "seconds", f.input, f.impact.seconds);
    }
    let mut objects = keyed();
    for (s, per) in m.alloc_sites.iter().zip(&m.alloc_by_input) {
        let rest = &s.stack[s.wrapper_frames.min(s.stack.len())..];
        let Some(f) = user_frame(rest).or(rest.first()) else {
            continue;
        };
        let id = format!(
            "heap:{}",
            heap_identity(f.place().as_deref(), f.function.as_deref())
        );
        for &(input, count, bytes) in per {
            objects.add(&id, "allocations", input, count as f64);
            objects.add(&id, "bytes", input, bytes as f64);
        }
    }
    let listed: std::collections::HashSet<(&str, u32)> = r
        .access_sites
        .lines
        .iter()
        .map(|l| (l.file.as_str(), l.line))
        .collect();
    let mut lines = keyed();
    for s in &m.sites {
        if !listed.contains(&(s.file.as_str(), s.line)) {
            continue;
        }
        let key = format!("{}:{}", s.file, s.line);
        for &(input, count) in &s.count_by_input {
            lines.add(&key, "accesses", input, count as f64);
        }
    }
    let mut v = findings.spreads("finding", &ranks, &k.rows);
    v.extend(objects.spreads("object", &ranks, &k.rows));
    v.extend(lines.spreads("line", &ranks, &k.rows));
    v
}

#[cfg(test)]
mod tests {
    use crate::merge::{Input, Merged};
    use crate::model::Spread;
    use crate::tests::{profile, site};
    use profcc_schema::AccessKind;

    #[test]
    fn spread_counts_absent_ranks_as_zero() {
        let s = Spread::of(&[1.0, 0.0, 3.0, 4.0], &[Some(0), Some(1), None, Some(3)]);
        assert_eq!((s.sum, s.min, s.mean, s.max), (8.0, 0.0, 2.0, 4.0));
        assert_eq!(s.imbalance, 2.0);
        assert!((s.cv - 2.5f64.sqrt() / 2.0).abs() < 1e-12, "{}", s.cv);
        assert_eq!((s.worst_rank, s.worst_input), (Some(3), 3));
        assert_eq!((s.present, s.of), (3, 4));
        // A tie names the first; the maximum on an input without a rank names no rank.
        let t = Spread::of(&[5.0, 5.0], &[None, Some(1)]);
        assert_eq!(
            (t.worst_rank, t.worst_input, t.imbalance, t.cv),
            (None, 0, 1.0, 0.0)
        );
        let z = Spread::of(&[0.0, 0.0], &[Some(0), Some(1)]);
        assert_eq!((z.imbalance, z.cv, z.present), (0.0, 0.0, 0));
        assert_eq!(Spread::of(&[], &[]), Spread::default());
    }

    /// Rows by rank, an input without a rank last; the metrics and a line's spread name the
    /// rank, and the input behind it; one profile has no Ranks section.
    #[test]
    fn rows_by_rank_and_spreads_name_the_heaviest() {
        let mk = |pid, rank: Option<u32>, count| {
            let mut p = profile(
                pid,
                vec![site("k.c", 10, 1, "hot", AccessKind::Read, 8, count, 1)],
            );
            p.rank = rank;
            p.ranks = rank.map(|_| 2);
            p.totals = Default::default();
            for s in &p.sites {
                p.totals.add_site(s);
            }
            p.totals.threads = 2;
            p
        };
        let inputs = vec![
            Input::new("none.json", mk(10, None, 5), None),
            Input::new("r1.json", mk(11, Some(1), 10), None),
            Input::new("r0.json", mk(12, Some(0), 45), None),
        ];
        let r = crate::sections::build(&Merged::new(inputs), &Default::default());
        let k = r.ranks.expect("several inputs: a Ranks section");
        let order: Vec<(Option<u32>, usize, u64)> = k
            .rows
            .iter()
            .map(|x| (x.rank, x.input, x.accesses))
            .collect();
        assert_eq!(order, [(Some(0), 2, 45), (Some(1), 1, 10), (None, 0, 5)]);
        let acc = k.metrics.iter().find(|m| m.metric == "accesses").unwrap();
        assert_eq!(
            (acc.spread.worst_rank, acc.spread.worst_input),
            (Some(0), 2)
        );
        assert_eq!(
            (acc.spread.sum, acc.spread.min, acc.spread.max),
            (60.0, 5.0, 45.0)
        );
        assert_eq!(acc.spread.imbalance, 45.0 / 20.0);
        let line = k
            .spreads
            .iter()
            .find(|x| x.what == "line" && x.key == "k.c:10")
            .unwrap();
        assert_eq!(line.metric, "accesses");
        assert_eq!((line.spread.sum, line.spread.worst_rank), (60.0, Some(0)));
        assert_eq!((line.spread.present, line.spread.of), (3, 3));
        // The text's title names the heaviest rank and its imbalance.
        let text = crate::render::text::render(
            &crate::model::Report {
                ranks: Some(k),
                ..r
            },
            &Default::default(),
        );
        assert!(
            text.contains("Ranks (3 profiles; heaviest by accesses: rank 0, 45 accesses, imbalance 2.25 (max/mean))"),
            "{text}"
        );
        let one = crate::sections::build(
            &Merged::new(vec![Input::new("p.json", mk(1, Some(0), 5), None)]),
            &Default::default(),
        );
        assert!(one.ranks.is_none());
    }
}
