//! Renderers: each takes the [`Report`](crate::model::Report) model and nothing else (plus its
//! own presentation settings), so a new one (HTML, callgrind) is one more module here.

pub mod csv;
pub mod export;
pub mod html;
pub mod json;
pub mod text;
pub mod trace;

use profcc_analysis::findings::Finding;

/// Findings as the text and the page list them: of several profiles (ranks), the findings of
/// one key are one entry, the first in the ranking (the profile where it saves the most) with
/// every profile that has it; of one profile, each finding is its own entry. JSON and
/// `findings.csv` keep one finding per profile.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FindingGroup {
    /// Index in the report's findings of the one that stands for the key.
    pub head: usize,
    /// The profiles with the key, sorted, each once.
    pub inputs: Vec<usize>,
    /// `inputs` as the report prints them ([`input_list`]).
    pub label: String,
}

/// The entries of `v` (ranked) in ranking order ([`FindingGroup`]).
pub fn finding_groups(v: &[Finding], several_inputs: bool) -> Vec<FindingGroup> {
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut of_key: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, f) in v.iter().enumerate() {
        match of_key.get(f.key.as_str()) {
            Some(&g) if several_inputs => groups[g].1.push(f.input),
            _ => {
                of_key.insert(&f.key, groups.len());
                groups.push((i, vec![f.input]));
            }
        }
    }
    groups
        .into_iter()
        .map(|(head, mut inputs)| {
            inputs.sort_unstable();
            inputs.dedup();
            let label = input_list(&inputs);
            FindingGroup {
                head,
                inputs,
                label,
            }
        })
        .collect()
}

/// Profiles a grouped finding names before "and N more".
pub const LISTED_INPUTS: usize = 5;

/// Sorted, distinct profiles as `0`, `0, 2, 3`, or past [`LISTED_INPUTS`]
/// `0, 1, 2, 3, 4 and 95 more`.
pub fn input_list(inputs: &[usize]) -> String {
    let shown: Vec<String> = inputs
        .iter()
        .take(LISTED_INPUTS)
        .map(|i| i.to_string())
        .collect();
    let rest = if inputs.len() > LISTED_INPUTS {
        format!(" and {} more", inputs.len() - LISTED_INPUTS)
    } else {
        String::new()
    };
    format!("{}{rest}", shown.join(", "))
}
