//! What the runtime could not observe, and what the report could not symbolise.

use super::{section, Options, Section};
use crate::merge::Merged;
use serde::Serialize;

#[derive(Serialize)]
pub struct Notes {
    /// The runtime's notes (deduplicated over inputs) and merging remarks.
    pub notes: Vec<String>,
    /// Symbolisation problems, one per module (missing, changed, no debug info readable).
    pub warnings: Vec<String>,
}

pub fn build(m: &Merged, _: &Options) -> Option<Box<dyn Section>> {
    Some(Box::new(Notes {
        notes: m.notes.clone(),
        warnings: m.symbol_warnings(),
    }))
}

section!(Notes, "notes");

impl Notes {
    fn render(&self, out: &mut String) {
        if self.notes.is_empty() && self.warnings.is_empty() {
            return;
        }
        out.push_str("\nNotes\n");
        for n in self.warnings.iter().chain(&self.notes) {
            out.push_str(&format!("  - {n}\n"));
        }
    }
}
