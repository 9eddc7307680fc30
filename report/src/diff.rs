//! `profcc diff BASE NEW` and the CI gate `profcc check --baseline BASE NEW` (docs/diff.md).
//!
//! Both compare two sides built on the report model: each side's profiles become
//! [`Report`]s (`sections::build` over `merge::Merged`, as `profcc report` builds them, with
//! every row and every finding: `--top 0 --min-speedup 0`). Findings are matched by their
//! stable key (`profcc_analysis::findings::key`), objects by identity (the report's
//! `objects`: a heap object's allocation `file:line`, a global's name), access sites by
//! `file:line`, regions by name. Each side's figures are [`Metric`]s (a name, a scope, a value
//! and which way is better); [`compare`] lines them up into a [`Diff`]; [`gate`] applies the
//! default findings rule and the limits of a `profcc-gate.toml` ([`GateConfig`]) to a diff and
//! gives the [`Verdict`].
//!
//! `profcc diff` merges each side's profiles as `profcc report` does (counts summed).
//! `profcc check` treats each profile of a side as one run of the same program: a side's
//! figure is the mean of its runs and its spread the runs' min..max; a change inside the
//! baseline's spread is not a regression.

use crate::model::Report;
use crate::{merge, sections};
use profcc_analysis::findings::Finding;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

pub const DIFF_FORMAT: &str = "profcc-diff";
pub const CHECK_FORMAT: &str = "profcc-check";
pub const DIFF_VERSION: u32 = 1;

/// A relative change below this is "same" in `profcc diff` (the gate uses its limits).
pub const SAME_WITHIN: f64 = 0.01;
/// A finding whose time impact moved by more than this share (and `CHANGED_FLOOR_S`) is
/// "changed".
pub const CHANGED_SHARE: f64 = 0.25;
pub const CHANGED_FLOOR_S: f64 = 0.001;

/// Finding kinds that cost time: a new one is a regression whatever its size, unless the gate
/// file names other kinds (`[findings] regress = [...]`).
pub const COSTLY_KINDS: &[&str] = &[
    "false_sharing",
    "true_sharing",
    "allocator_induced_sharing",
    "remote_access",
    "first_touch",
    "serial_first_touch",
    "fragmentation",
];

/// Which way a metric improves.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Lower,
    Higher,
    /// Neither way is better (executions): any change past a limit counts.
    Either,
}

/// One figure of one side: `name` within `scope` (`total`, `object:KIND NAME`,
/// `file:PATH:LINE`, `region:NAME`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Metric {
    pub name: String,
    pub scope: String,
    pub value: f64,
    pub unit: String,
    pub better: Better,
    /// Grows with the amount of work (counts, bytes moved, time): scaled by `--normalize`.
    pub extensive: bool,
}

fn metric(name: &str, scope: String, value: f64, unit: &str, better: Better, ext: bool) -> Metric {
    Metric {
        name: name.into(),
        scope,
        value,
        unit: unit.into(),
        better,
        extensive: ext,
    }
}

/// Every headline figure of a report: totals, per region, per object, per access line.
pub fn metrics(r: &Report) -> Vec<Metric> {
    use Better::*;
    let t = "total".to_string();
    let mut v = Vec::new();
    let seconds: f64 = r
        .summary
        .inputs
        .iter()
        .map(|i| i.duration_ns as f64 / 1e9)
        .sum();
    v.push(metric("seconds", t.clone(), seconds, "s", Lower, true));
    if !r.access_sites.not_counted() {
        let tt = &r.summary.totals;
        v.push(metric(
            "accesses",
            t.clone(),
            tt.accesses as f64,
            "",
            Lower,
            true,
        ));
        let moved = (tt.bytes_read + tt.bytes_written) as f64;
        v.push(metric("bytes_accessed", t.clone(), moved, "B", Lower, true));
    }
    let tt = &r.summary.totals;
    v.push(metric(
        "allocations",
        t.clone(),
        tt.allocations as f64,
        "",
        Lower,
        true,
    ));
    v.push(metric(
        "bytes_allocated",
        t.clone(),
        tt.bytes_allocated as f64,
        "B",
        Lower,
        true,
    ));
    v.push(metric(
        "peak_bytes",
        t.clone(),
        tt.live_bytes_peak as f64,
        "B",
        Lower,
        false,
    ));
    if let Some(s) = &r.sharing {
        let inv: u64 = s.findings.iter().map(|f| f.invalidations).sum();
        v.push(metric(
            "invalidations",
            t.clone(),
            inv as f64,
            "",
            Lower,
            true,
        ));
    }
    if let Some(n) = &r.numa {
        let local: u64 = n.inputs.iter().map(|i| i.local).sum();
        let remote: u64 = n.inputs.iter().map(|i| i.remote).sum();
        v.push(metric(
            "remote_accesses",
            t.clone(),
            remote as f64,
            "",
            Lower,
            true,
        ));
        if local + remote > 0 {
            let pct = 100.0 * remote as f64 / (local + remote) as f64;
            v.push(metric("remote_percent", t.clone(), pct, "%", Lower, false));
        }
    }
    if let Some(a) = &r.allocator {
        let ns: f64 = a.inputs.iter().map(|i| i.total_ns).sum();
        v.push(metric(
            "allocator_seconds",
            t.clone(),
            ns / 1e9,
            "s",
            Lower,
            true,
        ));
        let frag: u64 = a
            .inputs
            .iter()
            .flat_map(|i| i.overhead.iter().filter(|o| o.moment == "peak"))
            .map(|o| o.internal_fragmentation + o.blowup + o.external_and_metadata)
            .sum();
        v.push(metric(
            "fragmentation_bytes",
            t.clone(),
            frag as f64,
            "B",
            Lower,
            false,
        ));
    }
    if let Some(g) = &r.regions {
        // name -> (executions, bytes, max thread seconds, seconds summed)
        let mut by: BTreeMap<&str, (u64, u64, f64, f64)> = BTreeMap::new();
        for row in &g.rows {
            let e = by.entry(row.region.as_str()).or_default();
            e.0 += row.executions;
            if let Some(c) = &row.counts {
                e.1 += c.bytes_read() + c.bytes_written();
            }
            e.2 = e.2.max(row.seconds);
            e.3 += row.seconds;
        }
        for (name, (execs, bytes, wall, secs)) in by {
            let s = format!("region:{name}");
            v.push(metric(
                "executions",
                s.clone(),
                execs as f64,
                "",
                Either,
                true,
            ));
            v.push(metric("seconds", s.clone(), secs, "s", Lower, true));
            if bytes > 0 {
                v.push(metric("bytes", s.clone(), bytes as f64, "B", Lower, true));
                if wall > 0.0 {
                    let gbs = bytes as f64 / wall / 1e9;
                    v.push(metric(
                        "gbytes_per_s",
                        s.clone(),
                        gbs,
                        "GB/s",
                        Higher,
                        false,
                    ));
                }
            }
        }
    }
    for o in &r.objects {
        let s = format!("object:{} {}", o.kind, o.name);
        let mut put = |name: &str, x: Option<f64>, unit: &str| {
            if let Some(x) = x {
                v.push(metric(name, s.clone(), x, unit, Lower, true));
            }
        };
        put("allocations", o.allocations.map(|x| x as f64), "");
        put("bytes_allocated", o.bytes.map(|x| x as f64), "B");
        put("invalidations", o.invalidations.map(|x| x as f64), "");
        put("remote_accesses", o.numa_remote.map(|x| x as f64), "");
        put("allocator_seconds", o.allocator_ns.map(|x| x / 1e9), "s");
        put("region_bytes", o.region_bytes.map(|x| x as f64), "B");
    }
    for l in &r.access_sites.lines {
        let s = format!("file:{}:{}", l.file, l.line);
        v.push(metric("accesses", s, l.accesses as f64, "", Lower, true));
    }
    // Per MPI rank (a report of rank profiles): its headline totals, matched by rank.
    for row in r.ranks.iter().flat_map(|k| &k.rows) {
        let Some(rank) = row.rank else {
            continue;
        };
        let s = format!("rank:{rank}");
        for (name, unit, ext) in RANK_DIFF_METRICS {
            v.push(metric(name, s.clone(), row.metric(name), unit, Lower, *ext));
        }
    }
    v
}

/// The per-rank metrics (scope `rank:N`): name (a [`crate::model::RANK_METRICS`] counter),
/// unit, scaled by `--normalize`.
pub const RANK_DIFF_METRICS: &[(&str, &str, bool)] = &[
    ("accesses", "", true),
    ("allocations", "", true),
    ("bytes_allocated", "B", true),
    ("peak_bytes", "B", false),
    ("remote_accesses", "", true),
    ("invalidations", "", true),
    ("seconds", "s", true),
];

/// Does a side's report hold MPI ranks (a profile with a rank among several)?
fn has_ranks(reports: &[Report]) -> bool {
    reports.iter().any(|r| {
        r.ranks
            .as_ref()
            .is_some_and(|k| k.rows.iter().any(|x| x.rank.is_some()))
    })
}

/// A finding of one side, as the diff lists it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FindingRow {
    pub key: String,
    pub analysis: String,
    pub kind: String,
    pub title: String,
    /// `file:line` places, most important first.
    pub places: Vec<String>,
    /// The impact's seconds and bytes on this side (mean over runs).
    pub seconds: f64,
    pub bytes: u64,
}

/// A finding on both sides whose impact moved by more than [`CHANGED_SHARE`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FindingChange {
    pub key: String,
    pub kind: String,
    pub title: String,
    pub places: Vec<String>,
    pub base_seconds: f64,
    pub new_seconds: f64,
    pub base_bytes: u64,
    pub new_bytes: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct FindingChanges {
    pub new: Vec<FindingRow>,
    pub gone: Vec<FindingRow>,
    pub changed: Vec<FindingChange>,
    /// Findings on both sides whose impact did not move much.
    pub unchanged: usize,
}

/// One metric on both sides.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MetricChange {
    pub metric: String,
    pub scope: String,
    pub unit: String,
    pub better: Better,
    /// The side's value (several runs: their mean; NEW scaled by `--normalize`); null: the
    /// side has no such figure.
    pub base: Option<f64>,
    pub new: Option<f64>,
    /// The runs' spread (min, max); equal to the value with one run.
    pub base_spread: Option<(f64, f64)>,
    pub new_spread: Option<(f64, f64)>,
    /// new - base, and that over base (null when base is 0).
    pub change: f64,
    pub relative: Option<f64>,
    /// better, worse, same (within 1 %), new, gone.
    pub verdict: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SideInfo {
    pub profiles: Vec<String>,
    /// The program's file name (every profile of the side).
    pub exe: String,
}

/// `--normalize`: what NEW was scaled by.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Normalization {
    /// `time`, `accesses` or `region:NAME`.
    pub by: String,
    pub base: f64,
    pub new: f64,
    /// base / new: NEW's work-sized figures were multiplied by it.
    pub factor: f64,
}

/// `profcc diff`'s result (its JSON output).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Diff {
    /// Always [`DIFF_FORMAT`].
    pub format: String,
    pub version: u32,
    pub base: SideInfo,
    pub new: SideInfo,
    pub normalize: Option<Normalization>,
    pub findings: FindingChanges,
    /// Totals first, then regions, objects and access lines; within each, by name.
    pub metrics: Vec<MetricChange>,
}

/// One side: its reports (one merged report for `diff`, one per run for `check`).
pub struct Side {
    pub info: SideInfo,
    pub reports: Vec<Report>,
}

/// Load `paths` (bad input: `Err` with a one-line message, exit 2) and build their reports:
/// one merged report (`per_run` false) or one per run: a profile, or for MPI rank profiles
/// (every profile has a rank) one job, the n-th profile of each rank merged.
pub fn load_side(
    paths: &[PathBuf],
    per_run: bool,
    live_probe: Option<crate::LiveProbe>,
) -> Result<Side, String> {
    let opts = sections::Options {
        top: 0,
        min_speedup: 0.0,
        live_probe,
    };
    let info = |exe| SideInfo {
        profiles: paths.iter().map(|p| p.display().to_string()).collect(),
        exe,
    };
    if !per_run {
        // One merged report: the profiles are read on every core and merged as they come,
        // each reduced at once (memory does not grow with their access sites).
        let m = crate::merge_files(paths, false, &opts)
            .map_err(|(i, e)| format!("{}: {e}", paths[i].display()))?;
        let exe = one_program(&m.inputs)?;
        return Ok(Side {
            info: info(exe),
            reports: vec![sections::build(&m, &opts)],
        });
    }
    // One profile in memory at a time: each is read, its report built (a plain profile) or
    // its rank noted, and dropped. Rank profiles are read again, one job at a time, when every
    // profile has a rank: the job's merge keeps the per-rank rows.
    let build_one = |i: merge::Input| sections::build(&merge::Merged::new(vec![i]), &opts);
    let read = |p: &PathBuf| -> Result<merge::Input, String> {
        let profile = profcc_schema::read(p).map_err(|e| format!("{}: {e}", p.display()))?;
        let mtime = std::fs::metadata(p).and_then(|m| m.modified()).ok();
        Ok(merge::Input::new(p.display().to_string(), profile, mtime))
    };
    let mut exe: Option<(String, String)> = None; // (program, the path of its first profile)
    let mut built: Vec<Option<Report>> = Vec::new();
    let mut ranks: Vec<Option<u32>> = Vec::new();
    for p in paths {
        let input = read(p)?;
        let name = exe_name(&input.profile.exe);
        match &exe {
            None => exe = Some((name, input.path.clone())),
            Some((first, first_path)) if *first != name => {
                return Err(two_programs(first_path, first, &input.path, &name))
            }
            Some(_) => {}
        }
        ranks.push(input.profile.rank);
        built.push(input.profile.rank.is_none().then(|| build_one(input)));
    }
    let info = info(exe.map(|e| e.0).unwrap_or_default());
    let reports = if paths.len() > 1 && ranks.iter().all(Option::is_some) {
        // Rank profiles: a run is one job, the n-th profile of each rank (command-line
        // order), merged; its report keeps the per-rank rows.
        let mut runs: Vec<Vec<PathBuf>> = Vec::new();
        let mut seen: BTreeMap<u32, usize> = BTreeMap::new();
        for (p, rank) in paths.iter().zip(&ranks) {
            let n = seen.entry(rank.unwrap_or(0)).or_default();
            if runs.len() <= *n {
                runs.push(Vec::new());
            }
            runs[*n].push(p.clone());
            *n += 1;
        }
        let mut reports = Vec::new();
        for job in runs {
            let m = crate::merge_files(&job, true, &opts)
                .map_err(|(i, e)| format!("{}: {e}", job[i].display()))?;
            reports.push(sections::build(&m, &opts));
        }
        reports
    } else {
        let mut reports = Vec::new();
        for (p, r) in paths.iter().zip(built) {
            reports.push(match r {
                Some(r) => r,
                None => build_one(read(p)?),
            });
        }
        reports
    };
    Ok(Side { info, reports })
}

/// The program every input is a profile of, or the one-line error naming two that differ.
fn one_program(inputs: &[merge::Input]) -> Result<String, String> {
    let exe = exe_name(&inputs[0].profile.exe);
    if let Some(other) = inputs.iter().find(|i| exe_name(&i.profile.exe) != exe) {
        return Err(two_programs(
            &inputs[0].path,
            &exe,
            &other.path,
            &exe_name(&other.profile.exe),
        ));
    }
    Ok(exe)
}

/// The one-line error of a side whose profiles are of two programs.
fn two_programs(path: &str, exe: &str, other_path: &str, other: &str) -> String {
    format!(
        "{path} is a profile of {exe} but {other_path} of {other}: one side is runs of one program"
    )
}

fn exe_name(exe: &str) -> String {
    Path::new(exe)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| exe.to_string())
}

/// The quantity `--normalize` names, on one report.
fn quantity(r: &Report, by: &str) -> Result<f64, String> {
    match by {
        "time" => Ok(r
            .summary
            .inputs
            .iter()
            .map(|i| i.duration_ns as f64 / 1e9)
            .sum()),
        "accesses" => Ok(r.summary.totals.accesses as f64),
        _ => match by.strip_prefix("region:") {
            Some(name) => {
                let rows: Vec<_> = r
                    .regions
                    .iter()
                    .flat_map(|g| g.rows.iter())
                    .filter(|row| row.region == name)
                    .collect();
                if rows.is_empty() {
                    return Err(format!(
                        "--normalize region:{name}: no region `{name}` in the profiles"
                    ));
                }
                Ok(rows.iter().map(|row| row.executions as f64).sum())
            }
            None => Err(format!(
                "--normalize {by}: not a quantity; use time, accesses or region:NAME"
            )),
        },
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Each metric of a side: (template, per-run values); a run without it counts 0.
fn side_metrics(
    reports: &[Report],
    factor: f64,
) -> BTreeMap<(u8, String, String), (Metric, Vec<f64>)> {
    let mut m: BTreeMap<(u8, String, String), (Metric, Vec<f64>)> = BTreeMap::new();
    for (i, r) in reports.iter().enumerate() {
        for mut x in metrics(r) {
            if x.extensive {
                x.value *= factor;
            }
            let order = match x.scope.split(':').next() {
                Some("total") => 0,
                Some("region") | Some("rank") => 1,
                Some("object") => 2,
                _ => 3,
            };
            let e = m
                .entry((order, x.scope.clone(), x.name.clone()))
                .or_insert_with(|| (x.clone(), vec![0.0; reports.len()]));
            e.1[i] += x.value;
        }
    }
    m
}

fn finding_rows(reports: &[Report]) -> BTreeMap<String, FindingRow> {
    let mut by: BTreeMap<String, (FindingRow, usize)> = BTreeMap::new();
    for r in reports {
        for f in &r.findings {
            let e = by.entry(f.key.clone()).or_insert_with(|| (row(f), 0));
            if e.1 > 0 {
                e.0.seconds += f.impact.seconds;
                e.0.bytes += f.impact.bytes;
            }
            e.1 += 1;
        }
    }
    // The mean over the runs that have it.
    by.into_iter()
        .map(|(k, (mut r, n))| {
            r.seconds /= n as f64;
            r.bytes /= n as u64;
            (k, r)
        })
        .collect()
}

fn row(f: &Finding) -> FindingRow {
    FindingRow {
        key: f.key.clone(),
        analysis: f.analysis.as_str().into(),
        kind: f.kind.clone(),
        title: f.title.clone(),
        places: f.places.clone(),
        seconds: f.impact.seconds,
        bytes: f.impact.bytes,
    }
}

/// Compare two sides. `normalize`: scale NEW's work-sized figures by BASE's quantity over
/// NEW's (`time`, `accesses`, `region:NAME`).
pub fn compare(base: &Side, new: &Side, normalize: Option<&str>) -> Result<Diff, String> {
    let normalization = match normalize {
        None => None,
        Some(by) => {
            let b = mean(
                &base
                    .reports
                    .iter()
                    .map(|r| quantity(r, by))
                    .collect::<Result<Vec<_>, _>>()?,
            );
            let n = mean(
                &new.reports
                    .iter()
                    .map(|r| quantity(r, by))
                    .collect::<Result<Vec<_>, _>>()?,
            );
            if b <= 0.0 || n <= 0.0 {
                return Err(format!(
                    "--normalize {by}: the quantity is 0 in {} (base {b}, new {n}); normalise by another",
                    if b <= 0.0 { "BASE" } else { "NEW" }
                ));
            }
            Some(Normalization {
                by: by.into(),
                base: b,
                new: n,
                factor: b / n,
            })
        }
    };
    let factor = normalization.as_ref().map_or(1.0, |n| n.factor);
    let bm = side_metrics(&base.reports, 1.0);
    let nm = side_metrics(&new.reports, factor);
    let mut keys: Vec<&(u8, String, String)> = bm.keys().chain(nm.keys()).collect();
    keys.sort();
    keys.dedup();
    // Ranks are matched by rank only when both sides are rank profiles.
    let ranks = has_ranks(&base.reports) && has_ranks(&new.reports);
    keys.retain(|k| ranks || !k.1.starts_with("rank:"));
    // Each metric's total on BASE: an entry's change below SAME_WITHIN of it is "same".
    let totals: BTreeMap<&str, f64> = bm
        .iter()
        .filter(|(k, _)| k.0 == 0)
        .map(|(k, (_, v))| (k.2.as_str(), mean(v)))
        .collect();
    let mut changes = Vec::new();
    for k in keys {
        let b = bm.get(k);
        let n = nm.get(k);
        let tmpl = &b.or(n).expect("a key of one side").0;
        let val = |s: Option<&(Metric, Vec<f64>)>| s.map(|(_, v)| mean(v));
        let spread = |s: Option<&(Metric, Vec<f64>)>| {
            s.map(|(_, v)| {
                (
                    v.iter().cloned().fold(f64::INFINITY, f64::min),
                    v.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
                )
            })
        };
        let (bv, nv) = (val(b), val(n));
        if bv.unwrap_or(0.0) == 0.0 && nv.unwrap_or(0.0) == 0.0 {
            continue;
        }
        let change = nv.unwrap_or(0.0) - bv.unwrap_or(0.0);
        let relative = bv.filter(|b| *b != 0.0).map(|b| change / b.abs());
        let verdict = match (bv, nv) {
            (None, _) => "new",
            (_, None) => "gone",
            _ if relative.map_or(change == 0.0, |r| r.abs() < SAME_WITHIN) => "same",
            _ if k.0 >= 2
                && totals
                    .get(k.2.as_str())
                    .is_some_and(|t| change.abs() < SAME_WITHIN * t.abs()) =>
            {
                "same"
            }
            _ => match (tmpl.better, change > 0.0) {
                (Better::Lower, true) | (Better::Higher, false) => "worse",
                (Better::Lower, false) | (Better::Higher, true) => "better",
                (Better::Either, _) => "changed",
            },
        };
        changes.push(MetricChange {
            metric: tmpl.name.clone(),
            scope: tmpl.scope.clone(),
            unit: tmpl.unit.clone(),
            better: tmpl.better,
            base: bv,
            new: nv,
            base_spread: spread(b),
            new_spread: spread(n),
            change,
            relative,
            verdict: verdict.into(),
        });
    }
    let bf = finding_rows(&base.reports);
    let mut nf = finding_rows(&new.reports);
    for f in nf.values_mut() {
        f.seconds *= factor;
    }
    let mut fc = FindingChanges::default();
    for (k, n) in &nf {
        match bf.get(k) {
            None => fc.new.push(n.clone()),
            Some(b) => {
                let d = (n.seconds - b.seconds).abs();
                let moved = d > CHANGED_FLOOR_S && d > CHANGED_SHARE * b.seconds.abs();
                let bytes_moved = n.bytes.abs_diff(b.bytes) as f64 > CHANGED_SHARE * b.bytes as f64;
                if moved || bytes_moved {
                    fc.changed.push(FindingChange {
                        key: k.clone(),
                        kind: n.kind.clone(),
                        title: n.title.clone(),
                        places: n.places.clone(),
                        base_seconds: b.seconds,
                        new_seconds: n.seconds,
                        base_bytes: b.bytes,
                        new_bytes: n.bytes,
                    });
                } else {
                    fc.unchanged += 1;
                }
            }
        }
    }
    fc.gone = bf
        .iter()
        .filter(|(k, _)| !nf.contains_key(*k))
        .map(|(_, b)| b.clone())
        .collect();
    Ok(Diff {
        format: DIFF_FORMAT.into(),
        version: DIFF_VERSION,
        base: base.info.clone(),
        new: new.info.clone(),
        normalize: normalization,
        findings: fc,
        metrics: changes,
    })
}

// ---------------------------------------------------------------------------------------
// The gate.

/// `profcc-gate.toml` (docs/diff.md, "The gate file").
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct GateConfig {
    #[serde(default)]
    pub findings: FindingsRule,
    #[serde(default, rename = "limit")]
    pub limits: Vec<Limit>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FindingsRule {
    /// Kinds whose new finding is a regression whatever its size (default [`COSTLY_KINDS`]).
    #[serde(default = "costly_kinds")]
    pub regress: Vec<String>,
}

impl Default for FindingsRule {
    fn default() -> Self {
        FindingsRule {
            regress: costly_kinds(),
        }
    }
}

fn costly_kinds() -> Vec<String> {
    COSTLY_KINDS.iter().map(|s| s.to_string()).collect()
}

/// One limit: a metric (glob) in a scope (glob), how much worse it may get.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Limit {
    /// Metric name or glob (`accesses`, `*`).
    pub metric: String,
    /// `total` (default), `object:GLOB`, `file:GLOB` (an access line `path:line`),
    /// `region:GLOB`, `rank:GLOB` (an MPI rank: `rank:*` every rank, `rank:3` one).
    #[serde(default = "total")]
    pub scope: String,
    /// Fails when the change the bad way exceeds this share of BASE (0.10: 10 %).
    #[serde(default)]
    pub relative: Option<f64>,
    /// Changes up to this absolute amount are noise (in the metric's unit).
    #[serde(default)]
    pub floor: f64,
    /// `lower` (lower is better: an increase is bad), `higher`, `either`; default the
    /// metric's own.
    #[serde(default)]
    pub direction: Option<Better>,
}

fn total() -> String {
    "total".into()
}

impl Limit {
    /// How the limit reads in messages.
    pub fn text(&self) -> String {
        let mut s = format!("limit {} in {}", self.metric, self.scope);
        if let Some(r) = self.relative {
            s.push_str(&format!(" relative {}%", trim(r * 100.0)));
        }
        if self.floor > 0.0 {
            s.push_str(&format!(" floor {}", trim(self.floor)));
        }
        if let Some(d) = self.direction {
            s.push_str(&format!(
                " direction {}",
                match d {
                    Better::Lower => "lower",
                    Better::Higher => "higher",
                    Better::Either => "either",
                }
            ));
        }
        s
    }

    fn matches(&self, m: &MetricChange) -> bool {
        if !glob(&self.metric, &m.metric) {
            return false;
        }
        if self.scope == "total" {
            return m.scope == "total";
        }
        let (want_kind, want) = self.scope.split_once(':').unwrap_or((&self.scope, "*"));
        let (kind, name) = m.scope.split_once(':').unwrap_or((&m.scope, ""));
        want_kind == kind && glob(want, name)
    }
}

/// Read and check a gate file: a clear one-line error on a bad one.
pub fn read_config(path: &Path) -> Result<GateConfig, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let c: GateConfig = toml::from_str(&text).map_err(|e| {
        format!(
            "{}: not a gate file: {} (docs/diff.md, \"The gate file\")",
            path.display(),
            e.to_string().lines().next().unwrap_or("").trim()
        )
    })?;
    for (i, l) in c.limits.iter().enumerate() {
        let kind = l.scope.split(':').next().unwrap_or("");
        if !(l.scope == "total"
            || ["object", "file", "region", "rank"].contains(&kind) && l.scope.contains(':'))
        {
            return Err(format!(
                "{}: limit {}: scope `{}`: use total, object:GLOB, file:GLOB, region:GLOB or rank:GLOB",
                path.display(),
                i + 1,
                l.scope
            ));
        }
        if l.relative.is_none() && l.floor <= 0.0 {
            return Err(format!(
                "{}: limit {} ({}): give `relative` or `floor` (or both)",
                path.display(),
                i + 1,
                l.metric
            ));
        }
    }
    Ok(c)
}

/// `*` any run of characters, `?` one; everything else literal.
pub fn glob(pattern: &str, s: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = s.chars().collect();
    let (mut i, mut j) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while j < t.len() {
        if i < p.len() && (p[i] == '?' || p[i] == t[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|c| *c == '*')
}

/// One change the gate looked at.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GateLine {
    /// `finding` or `metric`.
    pub what: String,
    /// One line: the change in words.
    pub change: String,
    /// `file:line` places (findings) or the metric's scope.
    pub at: String,
    /// regression, improvement, within (a limit or the spread), info.
    pub status: String,
    /// The rule or limit it crossed (regressions) or why it passed.
    pub rule: String,
}

/// `profcc check`'s verdict (its JSON output).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Verdict {
    /// Always [`CHECK_FORMAT`].
    pub format: String,
    pub version: u32,
    /// `pass` or `regressed`; the exit code is 0 or 1.
    pub verdict: String,
    pub regressions: usize,
    pub improvements: usize,
    /// The gate file read, if any.
    pub config: Option<String>,
    /// Every change, regressions first.
    pub lines: Vec<GateLine>,
    pub diff: Diff,
}

/// Apply the findings rule and the limits to a diff.
pub fn gate(d: &Diff, c: &GateConfig, config: Option<String>) -> Verdict {
    let mut lines = Vec::new();
    for f in &d.findings.new {
        let costly = c.findings.regress.contains(&f.kind);
        lines.push(GateLine {
            what: "finding".into(),
            change: format!("new: {}", f.title),
            at: f.places.join(", "),
            status: if costly { "regression" } else { "info" }.into(),
            rule: if costly {
                format!("a new {} is a regression whatever its size", f.kind)
            } else {
                format!("{} is not a kind the gate fails on", f.kind)
            },
        });
    }
    for f in &d.findings.gone {
        lines.push(GateLine {
            what: "finding".into(),
            change: format!("gone: {}", f.title),
            at: f.places.join(", "),
            status: "improvement".into(),
            rule: "a vanished finding is an improvement".into(),
        });
    }
    for f in &d.findings.changed {
        lines.push(GateLine {
            what: "finding".into(),
            change: format!(
                "changed: {}: {} -> {} s",
                f.title,
                trim(f.base_seconds),
                trim(f.new_seconds)
            ),
            at: f.places.join(", "),
            status: "info".into(),
            rule: "a finding present on both sides is gated by its metrics' limits".into(),
        });
    }
    for m in &d.metrics {
        let limits: Vec<&Limit> = c.limits.iter().filter(|l| l.matches(m)).collect();
        if limits.is_empty() && m.verdict == "same" {
            continue;
        }
        let change = format!(
            "{}: {} -> {} ({}{})",
            m.metric,
            num(m.base, &m.unit),
            num(m.new, &m.unit),
            m.relative
                .map(|r| format!("{:+.1}%, ", r * 100.0))
                .unwrap_or_default(),
            m.verdict
        );
        let mut status = match m.verdict.as_str() {
            "better" | "gone" if m.better != Better::Either => "improvement",
            _ => "info",
        };
        let mut rule = String::new();
        for l in limits {
            let dir = l.direction.unwrap_or(m.better);
            let (lo, hi) = m.base_spread.unwrap_or((0.0, 0.0));
            let nv = m.new.unwrap_or(0.0);
            // The change the bad way, measured from the baseline run that is worst that way:
            // a value inside the baseline's spread is no change.
            let (worse, from) = match dir {
                Better::Lower => (nv - hi, hi),
                Better::Higher => (lo - nv, lo),
                Better::Either => {
                    if nv > hi {
                        (nv - hi, hi)
                    } else {
                        (lo - nv, lo)
                    }
                }
            };
            let spread = m.base_spread.is_some_and(|(a, b)| a < b);
            if worse <= 0.0 {
                if status == "info" {
                    status = "within";
                    rule = if spread && nv >= lo && nv <= hi {
                        format!(
                            "inside the baseline's spread {}..{}",
                            num(Some(lo), &m.unit),
                            num(Some(hi), &m.unit)
                        )
                    } else {
                        format!("{}: not worse", l.text())
                    };
                }
                continue;
            }
            if worse <= l.floor {
                if status != "regression" {
                    status = "within";
                    rule = format!(
                        "{}: {} is below the floor",
                        l.text(),
                        num(Some(worse), &m.unit)
                    );
                }
                continue;
            }
            let rel = if from != 0.0 {
                worse / from.abs()
            } else {
                f64::INFINITY
            };
            match l.relative {
                Some(r) if rel <= r => {
                    if status != "regression" {
                        status = "within";
                        rule = format!("{}: {:.1}% worse", l.text(), rel * 100.0);
                    }
                }
                _ => {
                    status = "regression";
                    let past = if spread {
                        " past the baseline's worst run"
                    } else {
                        ""
                    };
                    rule = format!(
                        "crossed {}: {} worse{past}{}",
                        l.text(),
                        num(Some(worse), &m.unit),
                        if rel.is_finite() {
                            format!(" ({:.1}%)", rel * 100.0)
                        } else {
                            String::new()
                        }
                    );
                }
            }
        }
        lines.push(GateLine {
            what: "metric".into(),
            change,
            at: m.scope.clone(),
            status: status.into(),
            rule,
        });
    }
    let order = |s: &str| match s {
        "regression" => 0,
        "improvement" => 1,
        "within" => 2,
        _ => 3,
    };
    lines.sort_by_key(|l| order(&l.status));
    let regressions = lines.iter().filter(|l| l.status == "regression").count();
    let improvements = lines.iter().filter(|l| l.status == "improvement").count();
    Verdict {
        format: CHECK_FORMAT.into(),
        version: DIFF_VERSION,
        verdict: if regressions > 0 { "regressed" } else { "pass" }.into(),
        regressions,
        improvements,
        config,
        lines,
        diff: d.clone(),
    }
}

// ---------------------------------------------------------------------------------------
// Rendering.

fn trim(x: f64) -> String {
    if x == x.trunc() && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.4}")
    }
}

fn num(x: Option<f64>, unit: &str) -> String {
    match x {
        None => "-".into(),
        Some(x) => {
            let s = if unit == "B" || unit.is_empty() {
                if x.abs() >= 100.0 && x >= 0.0 {
                    crate::fmt::count(x.round() as u64)
                } else {
                    trim(x)
                }
            } else {
                trim(x)
            };
            match unit {
                "" => s,
                "%" => format!("{s}%"),
                u => format!("{s} {u}"),
            }
        }
    }
}

fn rel(m: &MetricChange) -> String {
    match m.relative {
        Some(r) => format!("{:+.1}%", r * 100.0),
        None => "-".into(),
    }
}

fn header(d: &Diff) -> String {
    let side = |s: &SideInfo| format!("{} ({})", s.exe, s.profiles.join(", "));
    let mut h = format!("base {} -> new {}", side(&d.base), side(&d.new));
    if let Some(n) = &d.normalize {
        h.push_str(&format!(
            "; new normalised by {} (x{})",
            n.by,
            trim(n.factor)
        ));
    }
    h
}

/// Text: the findings that are new, gone and changed, then every metric that moved (totals
/// and regions all; objects and lines at most `top`, largest change first; 0 = all).
pub fn render_text(d: &Diff, top: usize) -> String {
    let mut s = format!("profcc diff: {}\n\n", header(d));
    let f = &d.findings;
    s.push_str(&format!(
        "Findings: {} new, {} gone, {} changed, {} unchanged\n",
        f.new.len(),
        f.gone.len(),
        f.changed.len(),
        f.unchanged
    ));
    for (tag, rows) in [("new ", &f.new), ("gone", &f.gone)] {
        for r in rows.iter() {
            s.push_str(&format!(
                "  {tag}  {} at {}  ({} s)\n",
                r.title,
                r.places.first().map(String::as_str).unwrap_or("?"),
                trim(r.seconds)
            ));
        }
    }
    for c in &f.changed {
        s.push_str(&format!(
            "  changed  {} at {}: {} s -> {} s\n",
            c.title,
            c.places.first().map(String::as_str).unwrap_or("?"),
            trim(c.base_seconds),
            trim(c.new_seconds)
        ));
    }
    let (head, entries): (Vec<&MetricChange>, Vec<&MetricChange>) =
        d.metrics.iter().partition(|m| {
            m.scope == "total" || m.scope.starts_with("region:") || m.scope.starts_with("rank:")
        });
    s.push_str("\nTotals, ranks and regions:\n");
    s.push_str(&format!(
        "  {:<20} {:<30} {:>14} {:>14} {:>9}  {}\n",
        "metric", "scope", "base", "new", "change", "verdict"
    ));
    for m in &head {
        s.push_str(&metric_line(m));
    }
    let mut moved: Vec<&&MetricChange> = entries.iter().filter(|m| m.verdict != "same").collect();
    moved.sort_by(|a, b| {
        b.relative
            .unwrap_or(f64::INFINITY)
            .abs()
            .total_cmp(&a.relative.unwrap_or(f64::INFINITY).abs())
    });
    let shown = if top == 0 {
        moved.len()
    } else {
        moved.len().min(top)
    };
    s.push_str(&format!(
        "\nObjects and access lines that changed by {}% or more: {} (of {} compared){}\n",
        trim(SAME_WITHIN * 100.0),
        moved.len(),
        entries.len(),
        if shown < moved.len() {
            format!(", the {shown} largest (--top)")
        } else {
            String::new()
        }
    ));
    for m in moved.iter().take(shown) {
        s.push_str(&metric_line(m));
    }
    s
}

fn metric_line(m: &MetricChange) -> String {
    format!(
        "  {:<20} {:<30} {:>14} {:>14} {:>9}  {}\n",
        m.metric,
        crate::fmt::tail(&m.scope, 30),
        num(m.base, &m.unit),
        num(m.new, &m.unit),
        rel(m),
        m.verdict
    )
}

fn md(s: &str) -> String {
    s.replace('|', "\\|")
}

/// Markdown for a pull-request comment: a findings table and a metrics table (the metrics
/// that moved; totals always).
pub fn render_markdown(d: &Diff, top: usize) -> String {
    let mut s = format!("### profcc diff\n\n{}\n\n", md(&header(d)));
    let f = &d.findings;
    s.push_str(&format!(
        "**Findings:** {} new, {} gone, {} changed, {} unchanged\n\n",
        f.new.len(),
        f.gone.len(),
        f.changed.len(),
        f.unchanged
    ));
    if !(f.new.is_empty() && f.gone.is_empty() && f.changed.is_empty()) {
        s.push_str("| | finding | at | base s | new s |\n|---|---|---|---:|---:|\n");
        for r in &f.new {
            s.push_str(&format!(
                "| 🆕 new | {} | `{}` | - | {} |\n",
                md(&r.title),
                r.places.first().map(String::as_str).unwrap_or("?"),
                trim(r.seconds)
            ));
        }
        for r in &f.gone {
            s.push_str(&format!(
                "| ✅ gone | {} | `{}` | {} | - |\n",
                md(&r.title),
                r.places.first().map(String::as_str).unwrap_or("?"),
                trim(r.seconds)
            ));
        }
        for c in &f.changed {
            s.push_str(&format!(
                "| changed | {} | `{}` | {} | {} |\n",
                md(&c.title),
                c.places.first().map(String::as_str).unwrap_or("?"),
                trim(c.base_seconds),
                trim(c.new_seconds)
            ));
        }
        s.push('\n');
    }
    s.push_str("| metric | scope | base | new | change | |\n|---|---|---:|---:|---:|---|\n");
    let mut n = 0;
    for m in &d.metrics {
        let head =
            m.scope == "total" || m.scope.starts_with("region:") || m.scope.starts_with("rank:");
        if !head && m.verdict == "same" {
            continue;
        }
        if !head {
            n += 1;
            if top != 0 && n > top {
                continue;
            }
        }
        let mark = match m.verdict.as_str() {
            "worse" => "🔴 worse",
            "better" => "🟢 better",
            v => v,
        };
        s.push_str(&format!(
            "| {} | `{}` | {} | {} | {} | {} |\n",
            m.metric,
            md(&m.scope),
            num(m.base, &m.unit),
            num(m.new, &m.unit),
            rel(m),
            mark
        ));
    }
    if top != 0 && n > top {
        s.push_str(&format!(
            "\n{} more changed entries (--top 0 lists all)\n",
            n - top
        ));
    }
    s
}

/// `profcc check` as text: the verdict, then every change, regressions first.
pub fn render_verdict_text(v: &Verdict) -> String {
    let mut s = format!(
        "profcc check: {} ({} regression{}, {} improvement{}); {}{}\n",
        if v.verdict == "pass" {
            "PASS"
        } else {
            "REGRESSED"
        },
        v.regressions,
        if v.regressions == 1 { "" } else { "s" },
        v.improvements,
        if v.improvements == 1 { "" } else { "s" },
        header(&v.diff),
        v.config
            .as_ref()
            .map(|c| format!("; limits from {c}"))
            .unwrap_or_else(|| "; no gate file (findings rule only)".into())
    );
    for l in &v.lines {
        let tag = match l.status.as_str() {
            "regression" => "FAIL",
            "improvement" => "good",
            "within" => "ok  ",
            _ => "info",
        };
        s.push_str(&format!("{tag} {} [{}]", l.change, l.at));
        if !l.rule.is_empty() {
            s.push_str(&format!(": {}", l.rule));
        }
        s.push('\n');
    }
    s
}

// ---------------------------------------------------------------------------------------
// The subcommands.

/// `profcc diff`'s and `profcc check`'s output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffFormat {
    /// For people (default)
    Text,
    /// The comparison as JSON (docs/diff.md)
    Json,
    /// Tables fit for a pull-request comment
    Markdown,
    /// One self-contained page: change columns, new/gone badges, a differential flame graph
    /// (`profcc diff` only)
    Html,
}

pub const DIFF_ABOUT: &str =
    "Compare two sets of profiles: findings new, gone and changed, and every headline number";
pub const DIFF_LONG_ABOUT: &str = "\
Compare profiles of a program before (BASE) and after (NEW) a change: the findings that are
new, gone or changed (matched by their stable keys), and each analysis's headline numbers
(accesses, invalidations, remote accesses, allocator time, fragmentation, peak bytes, region
bytes and GB/s) in total, per object, per access line and per region, each with its direction
(fewer remote accesses is better, more bandwidth is better).

  profcc diff base.json new.json
  profcc diff rank0.json rank1.json -- rank0.new.json rank1.new.json

Several profiles on a side are merged as `profcc report` merges them.";
pub const DIFF_AFTER_HELP: &str = "\
docs/diff.md describes the output. --format html writes one self-contained page (open it in
a browser): the headline numbers, the findings with NEW/GONE/CHANGED badges, every object and
access line with its change, and a differential flame graph.

Exit codes: 0 the comparison was printed (whatever it found), 2 bad input (a missing or
unreadable profile, a bad option).";

/// `profcc diff`'s command line.
#[derive(Debug, Clone, clap::Args)]
pub struct DiffArgs {
    /// BASE then NEW profile; with more than one per side, BASE... -- NEW...
    #[arg(value_name = "PROFILE", required = true)]
    pub profiles: Vec<PathBuf>,
    /// The NEW profiles (after `--`)
    #[arg(value_name = "NEW", last = true)]
    pub new: Vec<PathBuf>,
    /// Scale NEW to BASE by a quantity before comparing: time (run time), accesses (total
    /// accesses) or region:NAME (the region's executions)
    #[arg(long, value_name = "BY")]
    pub normalize: Option<String>,
    /// Output format
    #[arg(short = 'f', long, value_enum, default_value_t = DiffFormat::Text)]
    pub format: DiffFormat,
    /// Changed objects and access lines listed in text and Markdown (0 = all); JSON and HTML
    /// have all
    #[arg(short = 'n', long, value_name = "N", default_value_t = 20)]
    pub top: usize,
    /// Write to FILE instead of standard output
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[arg(skip)]
    pub live_probe: Option<crate::LiveProbe>,
}

pub const CHECK_ABOUT: &str =
    "CI gate: exit 1 when NEW regressed against the baseline (new costly findings, limits of profcc-gate.toml)";
pub const CHECK_LONG_ABOUT: &str = "\
Compare NEW profiles against baseline ones and fail (exit 1) on a regression: a new finding of
a kind that costs time (false or true sharing, allocator-induced sharing, remote access, first
touch, fragmentation) whatever its size, or a metric past a limit of the gate file. Every
change is printed; only those past a limit count, each naming the limit it crossed.

  profcc check --baseline base.json new.json
  profcc check --baseline b1.json b2.json b3.json new.json
  profcc check --baseline b1.json b2.json -- n1.json n2.json

Each profile of a side is one run: a side's figure is the mean of its runs, and a change inside
the baseline runs' spread (min..max) is not a regression. MPI rank profiles (each with a rank)
are one run per job (the n-th profile of each rank), and each rank is compared with the same
rank (scope rank:N).";
pub const CHECK_AFTER_HELP: &str = "\
The gate file (profcc-gate.toml in the current directory, or --config FILE) sets limits per
metric: scope, relative limit, absolute floor, direction; docs/diff.md has an example.

Exit codes: 0 nothing regressed, 1 something regressed, 2 bad input (a missing or unreadable
profile, profiles of different programs, an incompatible profile version, a bad gate file).";

/// `profcc check`'s command line.
#[derive(Debug, Clone, clap::Args)]
pub struct CheckArgs {
    /// Baseline profiles (runs); without NEW after `--`, the last one is NEW
    #[arg(long, value_name = "PROFILE", num_args = 1.., required = true)]
    pub baseline: Vec<PathBuf>,
    /// The NEW profiles (runs)
    #[arg(value_name = "NEW")]
    pub new: Vec<PathBuf>,
    /// The gate file (default: profcc-gate.toml in the current directory, if there is one)
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Scale NEW to BASE before gating (as `profcc diff --normalize`)
    #[arg(long, value_name = "BY")]
    pub normalize: Option<String>,
    /// Output format (json carries the same verdict as the exit code)
    #[arg(short = 'f', long, value_enum, default_value_t = DiffFormat::Text)]
    pub format: DiffFormat,
    /// Write to FILE instead of standard output
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[arg(skip)]
    pub live_probe: Option<crate::LiveProbe>,
}

fn emit(
    cmd: &str,
    bytes: &[u8],
    output: Option<&Path>,
    profiles: &[PathBuf],
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    match output {
        None => {
            if let Err(e) = out.write_all(bytes).and_then(|_| out.flush()) {
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    let _ = writeln!(err, "profcc {cmd}: cannot write the output: {e}");
                    return 2;
                }
            }
            0
        }
        Some(p) => match crate::write_output(cmd, "-o", p, bytes, profiles, err) {
            0 => 0,
            _ => 2,
        },
    }
}

/// `profcc diff`: 0 on valid input, 2 on bad input.
pub fn run_diff(a: &DiffArgs, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let (base, new): (Vec<PathBuf>, Vec<PathBuf>) = if a.new.is_empty() {
        if a.profiles.len() != 2 {
            let _ = writeln!(
                err,
                "profcc diff: {} profiles and no `--`: give BASE NEW, or BASE... -- NEW...",
                a.profiles.len()
            );
            return 2;
        }
        (vec![a.profiles[0].clone()], vec![a.profiles[1].clone()])
    } else {
        (a.profiles.clone(), a.new.clone())
    };
    let sides = load_side(&base, false, a.live_probe)
        .and_then(|b| Ok((b, load_side(&new, false, a.live_probe)?)));
    let compared = sides.and_then(|(b, n)| {
        let d = compare(&b, &n, a.normalize.as_deref())?;
        Ok((d, b, n))
    });
    let bytes = compared.and_then(|(d, b, n)| match a.format {
        DiffFormat::Text => Ok(render_text(&d, a.top).into_bytes()),
        DiffFormat::Markdown => Ok(render_markdown(&d, a.top).into_bytes()),
        DiffFormat::Json => Ok(serde_json::to_vec_pretty(&d).expect("JSON into memory")),
        DiffFormat::Html => crate::render::html::render_diff(
            &d,
            &b.reports[0],
            &n.reports[0],
            crate::render::html::MAX_BYTES,
        ),
    });
    let bytes = match bytes {
        Ok(b) => b,
        Err(e) => {
            let _ = writeln!(err, "profcc diff: {e}");
            return 2;
        }
    };
    let all: Vec<PathBuf> = base.iter().chain(new.iter()).cloned().collect();
    emit("diff", &bytes, a.output.as_deref(), &all, out, err)
}

/// `profcc check`: 0 pass, 1 regressed, 2 bad input.
pub fn run_check(a: &CheckArgs, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let (base, new): (Vec<PathBuf>, Vec<PathBuf>) = if a.new.is_empty() {
        if a.baseline.len() < 2 {
            let _ = writeln!(
                err,
                "profcc check: no NEW profile: give --baseline BASE... NEW (or --baseline BASE... -- NEW...)"
            );
            return 2;
        }
        let (n, b) = a.baseline.split_last().expect("two or more");
        (b.to_vec(), vec![n.clone()])
    } else {
        (a.baseline.clone(), a.new.clone())
    };
    if a.format == DiffFormat::Html {
        let _ = writeln!(
            err,
            "profcc check: --format html is for profcc diff; use text, json or markdown (profcc diff --format html BASE NEW draws the page)"
        );
        return 2;
    }
    let config_path = match &a.config {
        Some(p) => Some(p.clone()),
        None => Some(PathBuf::from("profcc-gate.toml")).filter(|p| p.is_file()),
    };
    let config = match &config_path {
        Some(p) => match read_config(p) {
            Ok(c) => c,
            Err(e) => {
                let _ = writeln!(err, "profcc check: {e}");
                return 2;
            }
        },
        None => GateConfig::default(),
    };
    let sides = load_side(&base, true, a.live_probe).and_then(|b| {
        let n = load_side(&new, true, a.live_probe)?;
        if b.info.exe != n.info.exe {
            return Err(format!(
                "the baseline is {} but NEW is {}: compare runs of one program",
                b.info.exe, n.info.exe
            ));
        }
        Ok((b, n))
    });
    let d = sides.and_then(|(b, n)| compare(&b, &n, a.normalize.as_deref()));
    let d = match d {
        Ok(d) => d,
        Err(e) => {
            let _ = writeln!(err, "profcc check: {e}");
            return 2;
        }
    };
    let v = gate(&d, &config, config_path.map(|p| p.display().to_string()));
    let bytes = match a.format {
        DiffFormat::Text => render_verdict_text(&v).into_bytes(),
        DiffFormat::Markdown => {
            let mut s = format!(
                "**profcc check: {}** ({} regressions, {} improvements)\n\n",
                if v.verdict == "pass" {
                    "pass"
                } else {
                    "REGRESSED"
                },
                v.regressions,
                v.improvements
            );
            for l in v.lines.iter().filter(|l| l.status == "regression") {
                s.push_str(&format!(
                    "- 🔴 {} (`{}`): {}\n",
                    md(&l.change),
                    l.at,
                    md(&l.rule)
                ));
            }
            s.push('\n');
            s.push_str(&render_markdown(&d, 20));
            s.into_bytes()
        }
        DiffFormat::Json => serde_json::to_vec_pretty(&v).expect("JSON into memory"),
        DiffFormat::Html => unreachable!("refused above"),
    };
    let all: Vec<PathBuf> = base.iter().chain(new.iter()).cloned().collect();
    match emit("check", &bytes, a.output.as_deref(), &all, out, err) {
        0 => i32::from(v.regressions > 0),
        e => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_matches_stars_and_marks() {
        assert!(glob("*", "anything"));
        assert!(glob("heap slots.c:*", "heap slots.c:50"));
        assert!(glob("src/*.c:1?", "src/a.c:12"));
        assert!(!glob("src/*.c:1?", "src/a.c:123"));
        assert!(!glob("heap a.c:*", "heap b.c:1"));
        assert!(glob("*solve*", "region_solve_2"));
    }

    /// The gate file example of docs/diff.md reads, with the limits it shows.
    #[test]
    fn the_documented_gate_file_reads() {
        let doc = include_str!("../../docs/diff.md");
        let start = doc.find("```toml\n").expect("a toml block") + 8;
        let end = start + doc[start..].find("```").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("profcc-gate.toml");
        std::fs::write(&p, &doc[start..end]).unwrap();
        let c = read_config(&p).unwrap();
        assert_eq!(c.findings.regress.len(), 3);
        let scopes: Vec<&str> = c.limits.iter().map(|l| l.scope.as_str()).collect();
        assert_eq!(
            scopes,
            [
                "total",
                "object:*",
                "region:solve",
                "rank:*",
                "file:*src/*.c:*"
            ]
        );
        assert_eq!(c.limits[4].floor, 1e6);
    }

    #[test]
    fn gate_files_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("g.toml");
        std::fs::write(
            &p,
            "[[limit]]\nmetric = \"accesses\"\nscope = \"file:*.c:*\"\nrelative = 0.1\nfloor = 100\ndirection = \"lower\"\n",
        )
        .unwrap();
        let c = read_config(&p).unwrap();
        assert_eq!(c.limits.len(), 1);
        assert_eq!(c.limits[0].direction, Some(Better::Lower));
        assert_eq!(c.findings.regress, costly_kinds());
        std::fs::write(
            &p,
            "[[limit]]\nmetric = \"accesses\"\nscope = \"function:x\"\nrelative = 0.1\n",
        )
        .unwrap();
        let e = read_config(&p).unwrap_err();
        assert!(e.contains("scope `function:x`"), "{e}");
        std::fs::write(&p, "[[limit]]\nmetric = \"accesses\"\nrelativ = 0.1\n").unwrap();
        let e = read_config(&p).unwrap_err();
        assert!(e.contains("not a gate file") && !e.contains('\n'), "{e}");
    }
}
