//! From profile records to findings: pure functions, no I/O, no dependencies beyond the
//! profile schema and serde (the runtime links this crate into the user's process).
//!
//! Every analysis's findings have one shape, [`findings::Finding`]; each analysis's module
//! turns its records into them, and both consumers call the same functions, so they say the
//! same thing:
//! - the runtime's exit summary prints [`sharing::summary_lines`] and
//!   [`findings::summary_lines`] of [`numa::run_finding`] and [`regions::findings`];
//! - `profcc report` resolves names and places, builds every analysis's findings with the
//!   same constructors and ranks them in one list ([`findings::rank_order`]).
//!
//! Every threshold is a named constant in the module that uses it, defined once.

pub mod allocator;
pub mod findings;
pub mod fmt;
pub mod numa;
pub mod regions;
pub mod sharing;
