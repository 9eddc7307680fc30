//! From profile records to findings: pure functions, no I/O, no dependencies beyond the
//! profile schema and serde (the runtime links this crate into the user's process).
//!
//! Both consumers call the same functions, so they say the same thing:
//! - the runtime's exit summary prints [`sharing::summary_lines`];
//! - `profcc report`'s sharing section resolves the findings of [`sharing::findings`] (names,
//!   places, fields) and orders several inputs' findings with [`sharing::rank_order`].
//!
//! Every threshold is a named constant in the module that uses it, defined once.

pub mod numa;
pub mod sharing;
