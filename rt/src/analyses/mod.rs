//! The analyses: each one a module behind the core's [`Analysis`] interface
//! (`rt/src/analysis.rs` says what an analysis declares and may do).
//!
//! Adding one: write `analyses/NAME.rs` with a `static` implementing `Analysis`, declare the
//! module here and add it to `ANALYSES`. The core calls the analyses in this order at every
//! lifecycle event (initialisation, thread start/exit, object alloc/free, fork, dump,
//! summary); nothing else in the runtime names an analysis.

use crate::analysis::{Analysis, Registry};

pub mod allocator;
pub mod numa;
pub mod regions;
pub mod sharing;

/// The registry.
pub static ANALYSES: Registry = &[
    &sharing::SHARING as &dyn Analysis,
    &numa::NUMA,
    &allocator::ALLOCATOR,
    &regions::REGIONS,
];
