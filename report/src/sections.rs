//! The report is a list of sections. Each section is one function over the merged profile that
//! returns its part of the [`Report`] model; the renderers (`crate::render`) print the model.
//! Adding an analysis (NUMA, allocator, ...) to the report is one more module here, one more
//! field of [`Report`], and one function per renderer (a text block, a CSV table).

use crate::merge::Merged;
use crate::model::{Report, REPORT_FORMAT, REPORT_VERSION};

pub mod access;
pub mod alloc;
pub mod allocator;
pub mod findings;
pub mod notes;
pub mod numa;
pub mod objects;
pub mod ranks;
pub mod regions;
pub mod sharing;
pub mod summary;
pub mod threads;

/// Report settings that sections may use (what the model holds; how it is printed is the
/// renderers' business).
#[derive(Debug, Clone)]
pub struct Options {
    /// Rows per ranked table; 0 = all.
    pub top: usize,
    /// Sharing findings predicted below this speed-up are counted per kind, not listed
    /// (`--min-speedup`; default [`profcc_analysis::sharing::MIN_LISTED_SPEEDUP`]).
    pub min_speedup: f64,
    /// Describes an allocator no shipped description covers (the driver's live probe; None:
    /// the generic size rule).
    pub live_probe: Option<crate::LiveProbe>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            top: 10,
            min_speedup: profcc_analysis::sharing::MIN_LISTED_SPEEDUP,
            live_probe: None,
        }
    }
}

impl Options {
    pub fn limit(&self, n: usize) -> usize {
        if self.top == 0 {
            n
        } else {
            n.min(self.top)
        }
    }
}

/// Build every section over the merged view, in report order. `notes` comes last: it collects
/// the symbolisation warnings that the sections before it produced.
pub fn build(m: &Merged, opts: &Options) -> Report {
    let summary = summary::build(m, opts);
    let access_sites = access::build(m, opts);
    let alloc_sites = alloc::build(m, opts);
    let sharing = sharing::build(m, opts);
    let (numa, numa_findings) = numa::build(m, opts);
    let allocator = allocator::build(m, opts);
    let regions = regions::build(m, opts);
    let threads = threads::build(m, opts);
    let ranks = ranks::build(m, opts);
    let notes = notes::build(m, opts);
    let mut r = Report {
        format: REPORT_FORMAT.into(),
        version: REPORT_VERSION,
        summary,
        findings: Vec::new(),
        objects: Vec::new(),
        access_sites,
        alloc_sites,
        sharing,
        numa,
        allocator,
        regions,
        threads,
        ranks,
        notes,
    };
    r.findings = findings::build(m, &r, numa_findings);
    r.objects = objects::build(m, &r, opts);
    let spreads = ranks::spreads(m, &r);
    if let Some(k) = &mut r.ranks {
        k.spreads = spreads;
    }
    r
}
