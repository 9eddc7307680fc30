//! What the runtime could not observe, and what the report could not symbolise.

use super::Options;
use crate::merge::Merged;
use crate::model::Notes;

pub fn build(m: &Merged, _: &Options) -> Notes {
    Notes {
        notes: m.notes.clone(),
        warnings: m.symbol_warnings(),
    }
}
