//! JSON: the report model as serde writes it (pretty-printed, fields in declaration order).
//! It reads back into [`Report`] with `serde_json::from_slice`; docs/report.md shows the shape.

use crate::model::Report;
use std::io::Write;

/// Write the report as pretty-printed JSON followed by a newline.
pub fn write(r: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, r)?;
    out.write_all(b"\n")
}
