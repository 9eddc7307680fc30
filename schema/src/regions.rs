//! Regions of interest (`PROFCC_ROI_BEGIN`/`PROFCC_ROI_END`; docs/regions.md): the runtime's
//! per-thread counts of each region.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Regions {
    /// TSC ticks per second, calibrated over the run against CLOCK_MONOTONIC.
    pub tsc_hz: f64,
    /// One row per region and thread that completed at least one execution.
    pub rows: Vec<Row>,
    /// Markers that could not be filed: a name past the runtime's table of 256, a begin more
    /// than 32 deep, a marker before the thread was known to the runtime.
    #[serde(default)]
    pub dropped: u64,
    /// Ends with no open region of that name in the thread.
    #[serde(default)]
    pub unmatched_ends: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Row {
    /// The name given to the markers (at most 63 bytes).
    pub region: String,
    /// Dense thread id (as in `threads`).
    pub thread: u32,
    /// Completed executions (a begin matched by its end).
    pub executions: u64,
    /// TSC ticks inside the region, begin to end (a region nested in itself: from its
    /// outermost begin).
    pub ticks: u64,
}
