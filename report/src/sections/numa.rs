//! NUMA locality per thread (docs/numa.md): the profile's `numa` section, homes turned back
//! into nodes, and the node x node matrix of the `emulate` model.

use super::Options;
use crate::merge::Merged;
use crate::model::{Numa, NumaInput, NumaThread};
use profcc_abi::MAX_HOMES;

/// A home as a node: `thread`: the thread id (home - 1); `emulate`: the node (home - 1);
/// `MAX_HOMES` (or 0): none.
fn node_of(home: u32) -> Option<u32> {
    (home > 0 && home < MAX_HOMES).then(|| home - 1)
}

pub fn build(m: &Merged, _: &Options) -> Option<Numa> {
    let inputs: Vec<NumaInput> = m
        .inputs
        .iter()
        .enumerate()
        .filter_map(|(i, input)| {
            let n = input.profile.numa.as_ref()?;
            let threads: Vec<NumaThread> = n
                .threads
                .iter()
                .map(|t| NumaThread {
                    thread: t.thread,
                    node: node_of(t.home),
                    local: t.local,
                    remote: t.remote,
                    first_touches: t.first_touches,
                    by_node: t.by_home.iter().map(|&(h, c)| (node_of(h), c)).collect(),
                })
                .collect();
            let mut node_matrix = Vec::new();
            if n.model == "emulate" && n.nodes > 0 {
                let k = n.nodes as usize;
                node_matrix = vec![vec![0u64; k]; k];
                for t in &threads {
                    let Some(from) = t.node.filter(|&x| (x as usize) < k) else {
                        continue;
                    };
                    for &(to, c) in &t.by_node {
                        if let Some(to) = to.filter(|&x| (x as usize) < k) {
                            node_matrix[from as usize][to as usize] += c;
                        }
                    }
                }
            }
            Some(NumaInput {
                input: i,
                model: n.model.clone(),
                nodes: n.nodes,
                pages: n.pages,
                local: threads.iter().map(|t| t.local).sum(),
                remote: threads.iter().map(|t| t.remote).sum(),
                threads,
                node_matrix,
            })
        })
        .collect();
    (!inputs.is_empty()).then_some(Numa { inputs })
}
