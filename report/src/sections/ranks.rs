//! Ranks: one row of totals per input (an MPI rank's, or one process's, profile) and each
//! total's spread over them: which rank is heaviest and by how much (docs/report.md, "Ranks").

use super::Options;
use crate::merge::Merged;
use crate::model::{
    rank_row_key, RankMetric, RankRow, RankSpread, Ranks, Report, Spread, RANK_METRICS,
};
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
                remote_accesses: m.remote_accesses(i),
                invalidations: p
                    .sharing
                    .as_ref()
                    .map_or(0, |s| s.lines.iter().map(|l| l.invalidations).sum()),
                seconds: p.duration_ns as f64 / 1e9,
            }
        })
        .collect();
    // By rank; inputs without one after, in command-line order.
    rows.sort_by_key(|r| rank_row_key(r.rank, r.input));
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
        let v: Vec<RankSpread> = self
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
        sort_spreads(v)
    }
}

/// Largest excess of the heaviest rank over the mean first: a 29-byte block on one rank is
/// more imbalanced than a 3 MiB array, not more worth a look.
fn sort_spreads(mut v: Vec<RankSpread>) -> Vec<RankSpread> {
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
    let mut v = findings.spreads("finding", &ranks, &k.rows);
    // Heap objects' spreads (allocations and bytes by identity), built as the inputs were
    // merged.
    let mut objects = Vec::new();
    for (key, o) in &m.object_spreads {
        let (allocations, bytes) = m.object_spread(o);
        for (metric, spread) in [("allocations", allocations), ("bytes", bytes)] {
            objects.push(RankSpread {
                what: "object".into(),
                key: key.clone(),
                metric: metric.into(),
                spread,
            });
        }
    }
    v.extend(sort_spreads(objects));
    // The listed access lines' spreads, built as the inputs were merged.
    let mut lines: Vec<RankSpread> = r
        .access_sites
        .lines
        .iter()
        .filter_map(|l| {
            Some(RankSpread {
                what: "line".into(),
                key: format!("{}:{}", l.file, l.line),
                metric: "accesses".into(),
                spread: m.line_spread(&l.file, l.line)?,
            })
        })
        .collect();
    lines.sort_by(|a, b| a.key.cmp(&b.key));
    lines.dedup_by(|a, b| a.key == b.key);
    v.extend(sort_spreads(lines));
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

    /// The spread built one input at a time (as the merge builds a line's) is the spread of
    /// the whole vector: any input order, absent inputs as 0, a tie naming the first row,
    /// inputs without a rank after the ranked ones; the variance exact where the two-pass
    /// float one rounds.
    #[test]
    fn a_spread_built_input_by_input_is_the_whole_vectors() {
        use crate::model::{rank_row_key, SpreadAcc};
        let cases: Vec<Vec<(Option<u32>, u64)>> = vec![
            vec![(Some(0), 5), (Some(1), 0), (Some(2), 7), (Some(3), 7)],
            vec![(None, 9), (Some(1), 9), (Some(0), 3)],
            vec![(Some(2), 0), (Some(0), 0)],
            vec![
                (Some(0), 1 << 40),
                (Some(1), (1 << 40) + 1),
                (Some(2), 1 << 40),
            ],
            // Squares past u128: the float path.
            vec![(Some(3), u64::MAX), (Some(1), u64::MAX / 2)],
        ];
        for case in cases {
            // Rows in the Ranks table's order; Spread::of indexes them.
            let mut rows: Vec<usize> = (0..case.len()).collect();
            rows.sort_by_key(|&i| rank_row_key(case[i].0, i));
            let values: Vec<f64> = rows.iter().map(|&i| case[i].1 as f64).collect();
            let ranks: Vec<Option<u32>> = rows.iter().map(|&i| case[i].0).collect();
            let mut want = Spread::of(&values, &ranks);
            want.worst_input = rows[want.worst_input];
            for order in [false, true] {
                let mut acc = SpreadAcc::default();
                let mut ins: Vec<usize> = (0..case.len()).collect();
                if order {
                    ins.reverse();
                }
                for i in ins {
                    acc.add(i, case[i].0, case[i].1);
                }
                let first = (case[rows[0]].0, rows[0]);
                let got = acc.spread(case.len() as u32, first);
                // The two-pass float variance loses digits near 2^40 (checked exactly below).
                let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * a.abs().max(b.abs());
                assert!(close(got.cv, want.cv), "{case:?}: {got:?} {want:?}");
                assert_eq!(
                    Spread { cv: 0.0, ..got },
                    Spread {
                        cv: 0.0,
                        ..want.clone()
                    },
                    "{case:?}"
                );
            }
        }
        // Values a unit apart near 2^40: the integer variance is exact (cv = sqrt(2/9) /
        // (2^40 + 1/3)), where the two-pass float one is off in its 8th digit.
        let mut acc = SpreadAcc::default();
        for (i, v) in [1u64 << 40, (1 << 40) + 1, 1 << 40].into_iter().enumerate() {
            acc.add(i, Some(i as u32), v);
        }
        let s = acc.spread(3, (Some(0), 0));
        let want = (2.0f64 / 9.0).sqrt() / ((1u64 << 40) as f64 + 1.0 / 3.0);
        assert!((s.cv - want).abs() <= 1e-12 * want, "{} {want}", s.cv);
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
                ranks: Some(k.clone()),
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
        // The text merge keeps no per-input values of access sites; its report reads the same.
        let mut lean = Merged::without_per_input();
        for (name, pid, rank, count) in [
            ("none.json", 10, None, 5),
            ("r1.json", 11, Some(1), 10),
            ("r0.json", 12, Some(0), 45),
        ] {
            lean.add(Input::new(name, mk(pid, rank, count), None));
        }
        lean.finish();
        assert!(lean.sites.iter().all(|s| s.count_by_input.is_empty()));
        let lean = crate::sections::build(&lean, &Default::default());
        assert_eq!(lean.ranks, Some(k.clone()));
    }
}
