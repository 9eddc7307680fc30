//! Regions of interest (`PROFCC_ROI_BEGIN`/`PROFCC_ROI_END`; docs/regions.md): the runtime's
//! per-thread counts of each region.

use serde::{Deserialize, Serialize};

/// The runtime's limits (rt/src/analyses/regions.rs), named in the report: most distinct
/// region names in a run, most regions open at once in a thread, longest name kept (bytes).
pub const MAX_REGIONS: usize = 256;
pub const MAX_DEPTH: usize = 32;
pub const NAME_MAX: usize = 63;

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Regions {
    /// TSC ticks per second, calibrated over the run against CLOCK_MONOTONIC.
    pub tsc_hz: f64,
    /// One row per region and thread that completed at least one execution.
    pub rows: Vec<Row>,
    /// Markers that could not be filed: a name past `MAX_REGIONS`, a begin past `MAX_DEPTH`,
    /// a marker before the thread was known to the runtime.
    #[serde(default)]
    pub dropped: u64,
    /// Ends with no open region of that name in the thread.
    #[serde(default)]
    pub unmatched_ends: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Row {
    /// The name given to the markers (at most `NAME_MAX` bytes).
    pub region: String,
    /// Dense thread id (as in `threads`).
    pub thread: u32,
    /// Completed executions (a begin matched by its end).
    pub executions: u64,
    /// TSC ticks inside the region, begin to end (a region nested in itself: from its
    /// outermost begin).
    pub ticks: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/regions.md states the limits: it must not drift from the constants.
    #[test]
    fn docs_state_the_limits() {
        let doc = include_str!("../../docs/regions.md").replace('\n', " ");
        for want in [
            format!("at most {MAX_REGIONS} per run and {NAME_MAX} bytes each"),
            format!("at most {MAX_DEPTH} open regions"),
        ] {
            assert!(doc.contains(&want), "docs/regions.md does not say {want:?}");
        }
    }
}
