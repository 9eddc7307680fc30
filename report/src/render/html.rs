//! `--format html`: one self-contained HTML page of the report (issue 44; being written).

use crate::model::Report;

/// The page's presentation settings.
#[derive(Debug, Clone, Default)]
pub struct HtmlOptions {}

/// The page.
pub fn render(report: &Report, _opts: &HtmlOptions) -> Vec<u8> {
    let _ = report;
    b"<!doctype html><title>profcc report</title><p>The HTML report is not written yet.</p>\n"
        .to_vec()
}
