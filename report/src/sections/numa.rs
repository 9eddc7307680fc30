//! NUMA locality per thread (docs/numa.md): the profile's `numa` section, homes turned back
//! into nodes, and the node x node matrix of the `emulate` model.

use super::Options;
use crate::merge::Merged;
use crate::model::{Numa, NumaFirstTouch, NumaInput, NumaThread};
use crate::symbolize::user_frame;
use profcc_abi::MAX_HOMES;
use profcc_analysis::numa::{pattern, Pattern};

/// A home as a node: `thread`: the thread id (home - 1); `emulate`: the node (home - 1);
/// `MAX_HOMES` (or 0): none.
fn node_of(home: u32) -> Option<u32> {
    (home > 0 && home < MAX_HOMES).then(|| home - 1)
}

/// The advice for the run's pattern, naming the place of the most first touches.
fn advice(n: &profcc_schema::numa::Numa, first: Option<&NumaFirstTouch>) -> Option<String> {
    let at = first
        .and_then(|f| f.place.clone().map(|p| format!(" (most at {p})")))
        .unwrap_or_default();
    match pattern(n) {
        Pattern::Fine => None,
        Pattern::SerialFirstTouch {
            thread,
            first_touch_share,
            remote_share,
        } => Some(format!(
            "serial first touch: thread {thread} touched {:.0}% of the pages first{at} and {:.0}% of all accesses are remote: touch the data first in parallel, each thread the part it later uses (the loop that uses it, with the same schedule), or interleave it (numactl --interleave=all)",
            first_touch_share * 100.0,
            remote_share * 100.0
        )),
        Pattern::Remote { remote_share } => Some(format!(
            "{:.0}% of all accesses are remote: place each thread's data on its node (first touch by the thread that uses it), interleave data all threads share, or bind threads near their data",
            remote_share * 100.0
        )),
    }
}

pub fn build(m: &Merged, opts: &Options) -> Option<Numa> {
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
            if (n.model == "emulate" || n.model == "real") && n.nodes > 0 {
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
            let all: Vec<NumaFirstTouch> = n
                .first_touch
                .iter()
                .map(|f| {
                    let frames = m.address(i, f.pc);
                    let here = frames
                        .iter()
                        .find(|x| x.place().is_some())
                        .or(frames.first());
                    let object = match f.alloc_stack {
                        Some(id) => {
                            let stack = m.stack(i, id);
                            user_frame(&stack).map(|u| match u.place() {
                                Some(p) => format!("heap block allocated at {p}"),
                                None => format!("heap block allocated in {}", u.short()),
                            })
                        }
                        None => m.global(i, f.address).map(|g| format!("global {}", g.name)),
                    };
                    NumaFirstTouch {
                        thread: f.thread,
                        pages: f.pages,
                        place: here.and_then(|x| x.place()),
                        function: here.and_then(|x| x.function.clone()),
                        object,
                    }
                })
                .collect();
            // Rows of one place, thread and object merge (a vectorised loop and its remainder
            // are two code addresses of one line); most pages first.
            let mut first_touch: Vec<NumaFirstTouch> = Vec::new();
            for f in all {
                match first_touch.iter_mut().find(|g| {
                    (&g.place, g.thread, &g.function, &g.object)
                        == (&f.place, f.thread, &f.function, &f.object)
                }) {
                    Some(g) => g.pages += f.pages,
                    None => first_touch.push(f),
                }
            }
            first_touch.sort_by(|a, b| b.pages.cmp(&a.pages));
            first_touch.truncate(opts.limit(first_touch.len()));
            let advice = advice(n, first_touch.first());
            Some(NumaInput {
                input: i,
                model: n.model.clone(),
                nodes: n.nodes,
                pages: n.pages,
                local: threads.iter().map(|t| t.local).sum(),
                remote: threads.iter().map(|t| t.remote).sum(),
                threads,
                node_matrix,
                first_touch,
                advice,
            })
        })
        .collect();
    (!inputs.is_empty()).then_some(Numa { inputs })
}
