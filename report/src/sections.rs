//! The report is a list of sections. Each section is one function over the merged profile that
//! returns a value knowing how to print itself as text and as JSON; adding an analysis (false
//! sharing, NUMA, allocator) to the report is one more module here and one more entry in
//! [`SECTIONS`].

use super::merge::Merged;

pub mod access;
pub mod alloc;
pub mod notes;
pub mod sharing;
pub mod summary;
pub mod threads;

/// Report settings that sections may use.
#[derive(Debug, Clone)]
pub struct Options {
    /// Rows per ranked table; 0 = all.
    pub top: usize,
    /// Frames per call stack in text output; 0 = all (JSON always has the whole stack).
    pub stack_depth: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            top: 10,
            stack_depth: 8,
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

pub trait Section {
    /// Its key in the JSON report (stable).
    fn key(&self) -> &'static str;
    /// Its JSON value, pretty-printed (fields in declaration order).
    fn json(&self) -> String;
    /// Its text, ending in a newline; empty to print nothing.
    fn text(&self, out: &mut String);
}

pub type Builder = fn(&Merged, &Options) -> Option<Box<dyn Section>>;

/// Sections in report order. `notes` stays last: it collects the symbolisation warnings that the
/// sections before it produced.
pub const SECTIONS: &[Builder] = &[
    summary::build,
    access::build,
    alloc::build,
    sharing::build,
    threads::build,
    notes::build,
];

/// Implements [`Section`] for a `Serialize` type with a text method.
macro_rules! section {
    ($ty:ty, $key:literal) => {
        impl $crate::sections::Section for $ty {
            fn key(&self) -> &'static str {
                $key
            }
            fn json(&self) -> String {
                serde_json::to_string_pretty(self).expect("section serialises")
            }
            fn text(&self, out: &mut String) {
                self.render(out)
            }
        }
    };
}
pub(crate) use section;
