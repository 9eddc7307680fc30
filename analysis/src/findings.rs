//! One shape for what every analysis found (docs/report.md, "Findings").
//!
//! A [`Finding`] names the analysis and the kind, the objects and the `file:line` places it is
//! about, the numbers behind it (evidence), what fixing it is worth (impact: seconds saved or
//! bytes, the formula's name, its inputs and a confidence) and the fix. Its [`key`] is the
//! kind plus the objects' identities and the places: never an address, pid, thread id or file
//! offset, so the same problem has the same key in another run and after an unrelated rebuild.
//!
//! Each analysis's module turns its records into findings with the constructors here
//! (`sharing::unified`, `numa::run_finding`, the `allocator` module,
//! `regions::findings`); `profcc report` ranks them in one list ([`rank_order`]) and
//! the runtime's exit summary prints the top ones with [`summary_line`]. Every threshold is in
//! the module of its analysis, once.

use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

/// How sure a finding, a figure or a prediction is.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    Low,
    Medium,
    High,
}

impl Confidence {
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::Low => "low",
            Confidence::Medium => "medium",
            Confidence::High => "high",
        }
    }
}

/// The analysis a finding comes from.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Analysis {
    Sharing,
    Numa,
    Allocator,
    Regions,
}

impl Analysis {
    pub const ALL: [Analysis; 4] = [
        Analysis::Sharing,
        Analysis::Numa,
        Analysis::Allocator,
        Analysis::Regions,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            Analysis::Sharing => "sharing",
            Analysis::Numa => "numa",
            Analysis::Allocator => "allocator",
            Analysis::Regions => "regions",
        }
    }
    /// Its section of the profile (`profcc_schema::Profile`).
    pub fn profile_field(self) -> &'static str {
        match self {
            Analysis::Sharing => "sharing",
            Analysis::Numa => "numa",
            Analysis::Allocator => "allocator_ops",
            Analysis::Regions => "regions",
        }
    }
    /// Its section of the report model (`profcc_report::Report`).
    pub fn report_field(self) -> &'static str {
        match self {
            Analysis::Sharing => "sharing",
            Analysis::Numa => "numa",
            Analysis::Allocator => "allocator",
            Analysis::Regions => "regions",
        }
    }
    /// The prefix of its CSV tables (`profcc report --csv`; docs/report.md lists them).
    pub fn csv_prefix(self) -> &'static str {
        match self {
            Analysis::Sharing => "sharing_",
            Analysis::Numa => "numa_",
            Analysis::Allocator => "alloc_",
            Analysis::Regions => "regions",
        }
    }
    /// Every kind of finding the analysis produces (docs/report.md lists them; a test keeps
    /// the list and the constructors together).
    pub fn kinds(self) -> &'static [&'static str] {
        match self {
            Analysis::Sharing => &[
                "false_sharing",
                "true_sharing",
                "read_mostly",
                "latent_false_sharing",
                "allocator_induced_sharing",
            ],
            Analysis::Numa => &[
                "serial_first_touch",
                "remote_access",
                "first_touch",
                "reused_pages",
                "shared_stack",
                "binding",
                "imbalance",
            ],
            Analysis::Allocator => &[
                "allocator_switch",
                "fragmentation",
                "blowup",
                "allocator_induced_sharing",
                "lock_contention",
            ],
            Analysis::Regions => &["low_bandwidth", "thread_imbalance"],
        }
    }
}

/// What a finding is about: its kind (`heap`, `global`, `stack`, `memory`, `region`, `routine`,
/// `lock`, `allocator`, `run`) and its identity ([`heap_identity`] for a heap object, a
/// global's, region's or routine's name, the function that writes a stack object; empty for
/// the whole run or heap).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Object {
    pub kind: String,
    pub name: String,
}

impl Object {
    pub fn new(kind: &str, name: impl Into<String>) -> Object {
        Object {
            kind: kind.into(),
            name: name.into(),
        }
    }
    /// The whole run (a pattern of every thread's accesses, not one object's).
    pub fn run() -> Object {
        Object::new("run", "")
    }
    pub fn text(&self) -> String {
        match self.kind.as_str() {
            _ if self.name.is_empty() => format!("the {}", self.kind),
            "heap" => format!("heap object allocated at {}", self.name),
            "global" | "region" => format!("{} `{}`", self.kind, self.name),
            _ => format!("{} {}", self.kind, self.name),
        }
    }
}

/// One number behind a finding.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Evidence {
    pub name: String,
    pub value: f64,
    pub unit: String,
}

impl Evidence {
    pub fn new(name: &str, value: f64, unit: &str) -> Evidence {
        Evidence {
            name: name.into(),
            value,
            unit: unit.into(),
        }
    }
}

/// What fixing a finding is worth.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Impact {
    /// Estimated wall-clock seconds the fix saves (0: the finding costs memory, not time, or
    /// no estimate).
    pub seconds: f64,
    /// Bytes the fix gives back (memory findings; 0 otherwise).
    pub bytes: u64,
    /// The formula's name (docs/report.md, "Findings", lists each).
    pub formula: String,
    pub inputs: Vec<Evidence>,
    pub confidence: Confidence,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Finding {
    /// `analysis/kind/objects@places`: stable across runs and unrelated rebuilds ([`key`]).
    pub key: String,
    pub analysis: Analysis,
    /// One of [`Analysis::kinds`].
    pub kind: String,
    /// One line: the kind and its object, in words.
    pub title: String,
    pub objects: Vec<Object>,
    /// `file:line` places, most important first.
    pub places: Vec<String>,
    pub evidence: Vec<Evidence>,
    pub impact: Impact,
    pub fix: String,
    /// What made it a finding: the rule and the threshold its figures crossed, in words with
    /// the constants' values; not part of the key.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub threshold: String,
    /// The profile it comes from (index of `profcc report`'s inputs); not part of the key.
    #[serde(default)]
    pub input: usize,
}

impl Finding {
    /// A finding with its key computed from the other fields.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        analysis: Analysis,
        kind: &str,
        title: String,
        objects: Vec<Object>,
        places: Vec<String>,
        evidence: Vec<Evidence>,
        impact: Impact,
        fix: String,
    ) -> Finding {
        debug_assert!(analysis.kinds().contains(&kind), "{kind}");
        Finding {
            key: key(analysis, kind, &objects, &places),
            analysis,
            kind: kind.into(),
            title,
            objects,
            places,
            evidence,
            impact,
            fix,
            threshold: String::new(),
            input: 0,
        }
    }

    /// The finding with the threshold it crossed ([`Finding::threshold`]).
    pub fn crossed(mut self, threshold: String) -> Finding {
        self.threshold = threshold;
        self
    }

    /// The first place, or `?`.
    pub fn place(&self) -> &str {
        self.places.first().map(String::as_str).unwrap_or("?")
    }
}

/// The stable key: `analysis/kind/object;object@place,place`, the places as their file's name
/// and line (a build in another directory keeps them), sorted. Any
/// hexadecimal address left in a name (an unsymbolised frame) becomes `?`, so a key never
/// holds one.
pub fn key(analysis: Analysis, kind: &str, objects: &[Object], places: &[String]) -> String {
    let mut objs: Vec<String> = objects
        .iter()
        .map(|o| format!("{}:{}", o.kind, scrub(&o.name)))
        .collect();
    objs.sort();
    objs.dedup();
    let mut at: Vec<String> = places.iter().map(|p| short_place(&scrub(p))).collect();
    at.sort();
    at.dedup();
    format!(
        "{}/{}/{}@{}",
        analysis.as_str(),
        kind,
        objs.join(";"),
        at.join(",")
    )
}

/// A heap object's identity: the `file:line` (file name only) of its allocation call in the
/// program's own code, else that frame's function. The same in every analysis, so their
/// per-object figures join on it (`profcc report`'s object table).
pub fn heap_identity(place: Option<&str>, function: Option<&str>) -> String {
    match (place, function) {
        (Some(p), _) => short_place(p),
        (None, Some(f)) => f.to_string(),
        (None, None) => "?".into(),
    }
}

/// `a/b/c/file.c:12` -> `file.c:12`: a checkout in another directory, or a build that
/// records paths relative to another one, keeps it.
pub fn short_place(p: &str) -> String {
    p.rsplit('/').next().unwrap_or(p).to_string()
}

/// Every `0x` followed by hex digits becomes `?`.
fn scrub(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find("0x") {
        let digits = rest[at + 2..]
            .bytes()
            .take_while(u8::is_ascii_hexdigit)
            .count();
        out.push_str(&rest[..at]);
        out.push_str(if digits > 0 { "?" } else { "0x" });
        rest = &rest[at + 2 + digits..];
    }
    out.push_str(rest);
    out
}

/// The one ranking of findings across analyses: time saved, then confidence, then bytes,
/// then key (so equal findings keep one order in every run).
pub fn rank_order(a: &Finding, b: &Finding) -> Ordering {
    b.impact
        .seconds
        .total_cmp(&a.impact.seconds)
        .then_with(|| b.impact.confidence.cmp(&a.impact.confidence))
        .then_with(|| b.impact.bytes.cmp(&a.impact.bytes))
        .then_with(|| a.key.cmp(&b.key))
        .then_with(|| a.input.cmp(&b.input))
}

/// Sorted by [`rank_order`].
pub fn ranked(mut v: Vec<Finding>) -> Vec<Finding> {
    v.sort_by(rank_order);
    v
}

/// The impact in words: `fixing it saves about 1.20 s (formula, high confidence)` or `fixing
/// it gives back about 3.00 MiB (...)`.
pub fn impact_text(i: &Impact) -> String {
    let what = if i.seconds > 0.0 {
        format!(
            "fixing it saves about {}",
            crate::fmt::duration((i.seconds * 1e9) as u64)
        )
    } else if i.bytes > 0 {
        format!("fixing it gives back about {}", crate::fmt::bytes(i.bytes))
    } else {
        "no estimate of the gain".into()
    };
    format!(
        "{what} ({}, {} confidence)",
        i.formula,
        i.confidence.as_str()
    )
}

/// One line of the exit summary for a finding:
/// `  numa: serial first touch of the run at a.c:12: fixing it saves about 1.2 s (...)`.
pub fn summary_line(f: &Finding) -> String {
    let at = match f.places.first() {
        Some(p) => format!(" at {}", p.rsplit('/').next().unwrap_or(p)),
        None => String::new(),
    };
    format!(
        "  {}: {}{at}: {}",
        f.analysis.as_str(),
        f.title,
        impact_text(&f.impact)
    )
}

/// The exit summary's lines for one analysis's findings: the first `top` by rank.
pub fn summary_lines(findings: Vec<Finding>, top: usize) -> Vec<String> {
    ranked(findings)
        .iter()
        .take(top)
        .map(summary_line)
        .collect()
}

/// The columns of `findings.csv` (docs/report.md lists them; a test compares).
pub const CSV_COLUMNS: &[&str] = &[
    "rank",
    "key",
    "analysis",
    "kind",
    "impact_s",
    "impact_bytes",
    "confidence",
    "formula",
    "place",
    "object",
    "title",
    "fix",
    "input",
    "mpi_rank",
    "threshold",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn impact(seconds: f64, confidence: Confidence) -> Impact {
        Impact {
            seconds,
            bytes: 0,
            formula: "test".into(),
            inputs: vec![],
            confidence,
        }
    }

    #[test]
    fn key_has_no_address_and_ignores_directories_and_order() {
        let a = key(
            Analysis::Sharing,
            "false_sharing",
            &[Object::new("heap", "make (src/a.c:12) 0x7ffd1234")],
            &["/home/u/p/src/a.c:30".into(), "/home/u/p/src/a.c:31".into()],
        );
        let b = key(
            Analysis::Sharing,
            "false_sharing",
            &[Object::new("heap", "make (src/a.c:12) 0x5555aaaa")],
            &["/ci/build/src/a.c:31".into(), "/ci/build/src/a.c:30".into()],
        );
        assert_eq!(a, b);
        assert_eq!(
            a,
            "sharing/false_sharing/heap:make (src/a.c:12) ?@a.c:30,a.c:31"
        );
        // Not an address: kept, whatever the characters around it.
        assert_eq!(scrub("naïve 0xg 0x"), "naïve 0xg 0x");
    }

    #[test]
    fn rank_is_time_then_confidence_then_key() {
        let mk = |k: &str, s: f64, c: Confidence| {
            let mut f = Finding::new(
                Analysis::Regions,
                "low_bandwidth",
                k.into(),
                vec![Object::new("region", k)],
                vec![],
                vec![],
                impact(s, c),
                String::new(),
            );
            f.key = k.into();
            f
        };
        let v = ranked(vec![
            mk("c", 1.0, Confidence::Low),
            mk("b", 2.0, Confidence::Low),
            mk("a", 1.0, Confidence::High),
            mk("d", 1.0, Confidence::Low),
        ]);
        let keys: Vec<&str> = v.iter().map(|f| f.key.as_str()).collect();
        assert_eq!(keys, ["b", "a", "c", "d"]);
    }

    #[test]
    fn json_round_trips() {
        let f = Finding::new(
            Analysis::Numa,
            "serial_first_touch",
            "serial first touch".into(),
            vec![Object::run()],
            vec!["a.c:3".into()],
            vec![Evidence::new("remote_share", 0.5, "fraction")],
            impact(0.25, Confidence::Medium),
            "touch in parallel".into(),
        );
        let text = serde_json::to_string(&f).unwrap();
        assert_eq!(serde_json::from_str::<Finding>(&text).unwrap(), f);
    }
}
