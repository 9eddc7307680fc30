//! NUMA locality per thread (docs/numa.md): the profile's `numa` section, homes turned back
//! into nodes, and the node x node matrix of the `emulate` model.

use super::Options;
use crate::fmt::bytes;
use crate::merge::Merged;
use crate::model::{Numa, NumaFirstTouch, NumaInput, NumaObject, NumaRange, NumaThread};
use crate::symbolize::user_frame;
use profcc_abi::MAX_HOMES;
use profcc_analysis::findings::{heap_identity, Finding, Object};
use profcc_analysis::numa::{
    binding_plan, imbalance, imbalance_finding, object_finding, object_fix, overhead, run_finding,
    score, significant, threads_can_move, Group, Layout, ObjectFix, REMOTE_ADVICE_SHARE,
};
use std::collections::{BTreeSet, HashMap};

/// A home as a node: `thread`: the thread id (home - 1); `emulate`: the node (home - 1);
/// `MAX_HOMES` (or 0): none.
fn node_of(home: u32) -> Option<u32> {
    (home > 0 && home < MAX_HOMES).then(|| home - 1)
}

/// A NUMA object's identity in the findings (`profcc_analysis::findings::Object`): a heap
/// block by its allocation line, a global by its name; stacks and other memory by kind only.
pub(crate) fn numa_object(o: &NumaObject) -> Object {
    if let Some(at) = &o.allocated_at {
        Object::new("heap", heap_identity(Some(at), None))
    } else if let Some(g) = o.object.strip_prefix("global ") {
        Object::new("global", g)
    } else if o.object.starts_with("stack of thread") {
        Object::new("stack", "")
    } else {
        Object::new("memory", "")
    }
}

/// The section, and the findings of every input: the run's pattern (whose words are the
/// input's `advice`), each object's fix, the thread groups' imbalance. An input's part built
/// as it was merged ([`Merged::numa_part`]) is taken as built.
pub fn build(m: &Merged, opts: &Options) -> (Option<Numa>, Vec<Finding>) {
    let mut found: Vec<Finding> = Vec::new();
    let mut inputs: Vec<NumaInput> = Vec::new();
    for i in 0..m.inputs.len() {
        let part = match m.numa_part(i, opts) {
            Some(built) => Some(built.clone()),
            None => build_input(m, i, opts),
        };
        if let Some((n, f)) = part {
            inputs.push(n);
            found.extend(f);
        }
    }
    ((!inputs.is_empty()).then_some(Numa { inputs }), found)
}

/// Input `i`'s part of the section and its findings (each with `input` set to `i`), from its
/// profile's `numa` section; None without one.
pub(crate) fn build_input(
    m: &Merged,
    i: usize,
    opts: &Options,
) -> Option<(NumaInput, Vec<Finding>)> {
    let input = &m.inputs[i];
    let n = input.profile.numa.as_ref()?;
    let mut found: Vec<Finding> = Vec::new();
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
            waits: t.waits,
            migrations: t.migrations,
            routine: routine(m, i, t.thread),
            pinned: t.pinned,
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
            let (place, function) = code_place(m, i, f.pc);
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
                place,
                function,
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
    first_touch.shrink_to_fit(); // held per input until the report is built
    let (sites, mut below) = sites(m, i, n, opts);
    let duration = input.profile.duration_ns;
    let run = run_finding(
        n,
        duration,
        first_touch.first().and_then(|f| f.place.clone()),
    );
    let advice = run.as_ref().map(|f| format!("{}: {}", f.title, f.fix));
    let (mut objects, remote_invalidations, object_findings) = objects(m, i, n);
    for o in objects.iter().filter(|o| o.kind.is_none() && o.remote > 0) {
        below.objects += 1;
        below.objects_remote += o.remote;
    }
    objects.truncate(opts.limit(objects.len()));
    objects.shrink_to_fit(); // held per input until the report is built
    let groups = groups(&threads);
    let imbalanced = imbalance_finding(&groups, duration);
    found.extend(
        run.into_iter()
            .chain(object_findings)
            .chain(imbalanced)
            .map(|mut f| {
                f.input = i;
                f
            }),
    );
    let groups = groups
        .into_iter()
        .map(|g| crate::model::NumaGroup {
            routine: g.key,
            threads: g.threads,
            overhead: g.overhead,
            recommended: g.recommended,
        })
        .collect();
    let (plan, plan_lines, plan_basis) = plan(n);
    let migration = migration(
        &threads,
        &n.model,
        n.nodes,
        threads_can_move(n),
        !plan.is_empty(),
    );
    Some((
        NumaInput {
            input: i,
            model: n.model.clone(),
            nodes: n.nodes,
            pages: n.pages,
            huge_pages: n.huge_pages,
            local: threads.iter().map(|t| t.local).sum(),
            remote: threads.iter().map(|t| t.remote).sum(),
            threads,
            node_matrix,
            first_touch,
            advice,
            remote_invalidations,
            objects,
            groups,
            plan,
            plan_lines,
            plan_basis,
            migration,
            unpinned_thread: n.threads.iter().map(|t| t.unpinned_thread).sum(),
            unpinned_page: n.threads.iter().map(|t| t.unpinned_page).sum(),
            unpinned_both: n.threads.iter().map(|t| t.unpinned_both).sum(),
            sites,
            below,
        },
        found,
    ))
}

/// `file:line` and function of the access just before return address `pc` (the innermost
/// inlined frame with a place, else the first).
fn code_place(m: &Merged, i: usize, pc: u64) -> (Option<String>, Option<String>) {
    let frames = m.address(i, pc);
    let here = frames
        .iter()
        .find(|f| f.place().is_some())
        .or(frames.first());
    (
        here.and_then(|f| f.place()),
        here.and_then(|f| f.function.clone()),
    )
}

/// Accesses by line: the code addresses of one line and function merged (a vectorised loop
/// and its remainder), most remote first, then most accesses; and the lines with remote
/// accesses below significance, summed.
fn sites(
    m: &Merged,
    i: usize,
    n: &profcc_schema::numa::Numa,
    opts: &Options,
) -> (Vec<crate::model::NumaSite>, crate::model::NumaBelow) {
    let mut out: Vec<crate::model::NumaSite> = Vec::new();
    let mut index: std::collections::HashMap<(Option<String>, Option<String>), usize> =
        std::collections::HashMap::new();
    for x in &n.sites {
        let (place, function) = if x.pc == 0 {
            (None, None)
        } else {
            code_place(m, i, x.pc)
        };
        match index.get(&(place.clone(), function.clone())) {
            Some(&k) => {
                out[k].accesses += x.accesses;
                out[k].remote += x.remote;
                out[k].unpinned_thread += x.unpinned_thread;
                out[k].unpinned_page += x.unpinned_page;
            }
            None => {
                index.insert((place.clone(), function.clone()), out.len());
                out.push(crate::model::NumaSite {
                    place,
                    function,
                    accesses: x.accesses,
                    remote: x.remote,
                    unpinned_thread: x.unpinned_thread,
                    unpinned_page: x.unpinned_page,
                });
            }
        }
    }
    out.sort_by(|a, b| (b.remote, b.accesses).cmp(&(a.remote, a.accesses)));
    let mut below = crate::model::NumaBelow::default();
    for x in out
        .iter()
        .filter(|x| x.remote > 0 && !significant(x.remote, x.accesses))
    {
        below.places += 1;
        below.places_remote += x.remote;
    }
    out.truncate(opts.limit(out.len()));
    out.shrink_to_fit(); // held per input until the report is built
    (out, below)
}

/// `[start, end)` as sizes, for a thread's range.
fn span(start: u64, end: u64) -> String {
    format!("[{}, {})", bytes(start), bytes(end))
}

/// The fix for one object, in words: its kind and what to change.
fn fix_words(
    o: &profcc_schema::numa::NumaObject,
    how: &ObjectFix,
    first: &str,
) -> (Option<String>, Option<String>) {
    match how {
        ObjectFix::None => (None, None),
        // No thread, or one, alone on its pages: no blocks to name.
        ObjectFix::FirstTouch { layout: Layout::Blocks(r) } if r.len() < 2 => (
            Some("first touch".into()),
            Some(format!(
                "{first}; its pages are used by a thread other than the one that touched them first: touch them first in the thread that uses them, or place them with move_pages/mbind"
            )),
        ),
        ObjectFix::FirstTouch { layout: Layout::Blocks(r) } => {
            let parts: Vec<String> = r
                .iter()
                .map(|&(t, a, b)| format!("thread {t} {}", span(a, b)))
                .collect();
            (
                Some("first touch".into()),
                Some(format!(
                    "{first}; each thread uses its own block ({}): touch each block first in the thread that uses it (initialise it in a parallel loop with the same schedule as the loop that uses it), or place the blocks with move_pages/mbind",
                    parts.join(", ")
                )),
            )
        }
        ObjectFix::FirstTouch {
            layout: Layout::Permuted,
        } if o.instances > 1 => (
            Some("first touch".into()),
            Some(format!(
                "{first}; most of its {} pages are used by one thread other than the one that touched them first: touch each block first in the thread that later uses it",
                o.pages
            )),
        ),
        ObjectFix::FirstTouch {
            layout: Layout::Permuted,
        } => (
            Some("first touch".into()),
            Some(format!(
                "{first}; each page is used by one thread, but the threads' pages interleave (a permuted or tiled assignment of blocks): touch each block first in the thread that later uses it, with the same block-to-thread assignment"
            )),
        ),
        ObjectFix::Interleave => (
            Some("remote access".into()),
            Some(format!(
                "{} of its {} pages are used by several threads: interleave it over the nodes (numa_alloc_interleaved, mbind MPOL_INTERLEAVE or numactl --interleave=all), or give each node a copy if it is read-mostly",
                o.shared_pages, o.pages
            )),
        ),
        ObjectFix::Reused => {
            let what = if o.alloc_stack.is_some() {
                format!(
                    "{} blocks allocated here in turn, {} of their {} pages recycled from freed blocks",
                    o.instances, o.reused_pages, o.pages
                )
            } else {
                format!(
                    "{} pages of freed heap blocks that no block holds at the end (accesses still in a thread's page cache when its block was freed are counted here)",
                    o.pages
                )
            };
            (
                Some("reused pages".into()),
                Some(format!(
                    "{what}: those pages kept the node an earlier block's first touch gave them, so touching them again places nothing; hoist the allocation out of the loop (allocate once, touch it first in parallel with the schedule that uses it) or keep a buffer per thread"
                )),
            )
        }
        ObjectFix::Stack => (
            Some("shared stack".into()),
            Some(format!(
                "variables on thread {}'s stack ({} pages) that other threads read: the variables of the thread that starts a parallel region, shared into it; give each thread its own copy (firstprivate, or a local copy at the region's start) when a hot loop reads them, else accept it (a few pages)",
                o.stack_of.unwrap_or(0),
                o.pages
            )),
        ),
        ObjectFix::Bind => (
            Some("binding".into()),
            Some(
                "its pages are used by the threads that touched them first, yet the accesses are remote: those threads ran on other nodes later; bind them (OMP_PROC_BIND=close with OMP_PLACES=cores, taskset or pthread_setaffinity_np)"
                    .into(),
            ),
        ),
    }
}

/// Per input: its objects by seriousness score, and the run's remote invalidations (the
/// invalidations of tracked lines whose threads are on two or more nodes; docs/numa.md).
fn objects(
    m: &Merged,
    i: usize,
    n: &profcc_schema::numa::Numa,
) -> (Vec<NumaObject>, u64, Vec<Finding>) {
    let profile = &m.inputs[i].profile;
    let can_move = threads_can_move(n);
    let run_local: u64 = n.threads.iter().map(|t| t.local).sum();
    let run_remote: u64 = n.threads.iter().map(|t| t.remote).sum();
    let mut found = Vec::new();
    let home: HashMap<u32, u32> = n.threads.iter().map(|t| (t.thread, t.home)).collect();
    // Runs of other memory given page by page are split at the globals they hold: each page
    // goes to the global holding its middle byte (pages of no global stay together).
    let mut pieces: Vec<profcc_schema::numa::NumaObject> = Vec::new();
    for o in &n.objects {
        if o.alloc_stack.is_some() || o.stack_of.is_some() || o.page_counts.is_empty() {
            pieces.push(o.clone());
            continue;
        }
        let mut parts: Vec<(Option<String>, profcc_schema::numa::NumaObject)> = Vec::new();
        for pc in &o.page_counts {
            let at = o.address + pc.offset;
            let name = m.global(i, at + 2048).map(|g| g.name);
            let part = match parts.iter_mut().find(|(n, _)| *n == name) {
                Some((_, p)) => p,
                None => {
                    parts.push((
                        name.clone(),
                        profcc_schema::numa::NumaObject {
                            address: at,
                            instances: 1,
                            first_touch: o.first_touch.clone(),
                            ..Default::default()
                        },
                    ));
                    &mut parts.last_mut().unwrap().1
                }
            };
            part.pages += 1;
            part.bytes = (at + 4096).saturating_sub(part.address);
            part.accesses += pc.accesses;
            part.remote += pc.remote;
            if !pc.pinned {
                part.unpinned_page += pc.accesses;
            }
            part.shared_pages += pc.shared as u64;
            part.kept_pages += pc.kept as u64;
            part.moved_pages += pc.moved as u64;
            add_by_thread(&mut part.by_thread, &pc.by_thread);
            part.unsplit += pc.unsplit;
        }
        if parts.len() == 1 {
            pieces.push(o.clone());
        } else {
            pieces.extend(parts.into_iter().map(|(_, p)| p));
        }
    }
    // Remote invalidations per object (index in n.objects) and in all.
    let mut inv: HashMap<usize, u64> = HashMap::new();
    let mut all_inv = 0u64;
    for line in profile.sharing.iter().flat_map(|s| &s.lines) {
        let homes: BTreeSet<u32> = line
            .bytes
            .iter()
            .flat_map(|b| b.readers.iter().chain(&b.writers))
            .filter_map(|t| home.get(t).copied())
            .filter(|&h| h > 0 && h < MAX_HOMES)
            .collect();
        if homes.len() < 2 || line.invalidations == 0 {
            continue;
        }
        all_inv += line.invalidations;
        let stack = line.objects.iter().find_map(|o| o.alloc_stack);
        let at = pieces.iter().position(|o| match (stack, o.alloc_stack) {
            (Some(a), Some(b)) => a == b,
            _ => {
                o.alloc_stack.is_none() && o.address <= line.addr && line.addr < o.address + o.bytes
            }
        });
        if let Some(k) = at {
            *inv.entry(k).or_default() += line.invalidations;
        }
    }
    // Names; pieces of one name merge (the blocks of one line allocated at several code
    // addresses, e.g. an unrolled loop; a global's pages in two runs).
    let mut named: Vec<(String, Option<String>, profcc_schema::numa::NumaObject, u64)> = Vec::new();
    for (k, o) in pieces.into_iter().enumerate() {
        let allocated_at = o.alloc_stack.and_then(|id| {
            let stack = m.stack(i, id);
            user_frame(&stack).and_then(|u| u.place())
        });
        let object = if let Some(t) = o.stack_of {
            format!("stack of thread {t}")
        } else if o.alloc_stack.is_some() {
            match &allocated_at {
                Some(p) => format!("heap block allocated at {p}"),
                None => "heap block".to_string(),
            }
        } else {
            // The global at the run's start or middle, else the one its first touch hit.
            let end = o.address + o.bytes;
            m.global(i, o.address)
                .or_else(|| m.global(i, o.address + o.bytes / 2))
                .or_else(|| {
                    n.first_touch
                        .iter()
                        .filter(|f| (o.address..end).contains(&f.address))
                        .find_map(|f| m.global(i, f.address))
                })
                .map(|g| format!("global {}", g.name))
                .unwrap_or_else(|| format!("memory at {:#x}", o.address))
        };
        let inv_k = inv.get(&k).copied().unwrap_or(0);
        match named
            .iter_mut()
            .find(|(n, a, _, _)| *n == object && *a == allocated_at)
        {
            Some((_, _, g, gi)) => {
                merge_object(g, &o);
                *gi += inv_k;
            }
            None => named.push((object, allocated_at, o, inv_k)),
        }
    }
    let mut out: Vec<NumaObject> = named
        .into_iter()
        .map(|(object, allocated_at, o, remote_invalidations)| {
            let top = o.first_touch.first();
            let first_touch_at = top.and_then(|t| code_place(m, i, t.pc).0);
            let mut touchers: Vec<u32> = Vec::new();
            for t in o.first_touch.iter().filter_map(|t| t.thread) {
                if !touchers.contains(&t) {
                    touchers.push(t);
                }
            }
            let who = match touchers.as_slice() {
                [] => "an unknown thread".to_string(),
                [t] => format!("thread {t}"),
                ts => format!(
                    "threads {}",
                    ts.iter()
                        .map(|t| t.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            let first = match &first_touch_at {
                Some(p) => format!("{who} touched it first (most at {p})"),
                None => format!("{who} touched it first"),
            };
            let how = object_fix(&o, can_move);
            let (kind, fix) = fix_words(&o, &how, &first);
            let row = NumaObject {
                object,
                allocated_at,
                address: o.address,
                bytes: o.bytes,
                instances: o.instances,
                pages: o.pages,
                local: o.accesses.saturating_sub(o.remote),
                remote: o.remote,
                unpinned_page: o.unpinned_page,
                remote_invalidations,
                score: score(o.remote, remote_invalidations, profile.duration_ns),
                first_touch_thread: top.and_then(|t| t.thread),
                first_touch_at,
                first_touch_pages: top.map_or(0, |t| t.pages),
                threads: o
                    .threads
                    .iter()
                    .map(|t| NumaRange {
                        thread: t.thread,
                        start: t.start,
                        end: t.end,
                        pages: t.pages,
                    })
                    .collect(),
                by_thread: o.by_thread.clone(),
                unsplit: o.unsplit,
                shared_pages: o.shared_pages,
                kept_pages: o.kept_pages,
                moved_pages: o.moved_pages,
                reused_pages: o.reused_pages,
                kind,
                fix,
            };
            found.extend(object_finding(
                &o,
                &how,
                numa_object(&row),
                row.first_touch_at.iter().cloned().collect(),
                row.fix.clone().unwrap_or_default(),
                run_local,
                run_remote,
                profile.duration_ns,
            ));
            row
        })
        .collect();
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.remote.cmp(&a.remote))
            .then(a.object.cmp(&b.object))
    });
    (out, all_inv, found)
}

/// Add `b`'s accesses by thread to `a`'s (kept in thread order).
fn add_by_thread(
    a: &mut Vec<profcc_schema::numa::ThreadAccesses>,
    b: &[profcc_schema::numa::ThreadAccesses],
) {
    for t in b {
        match a.iter_mut().find(|x| x.thread == t.thread) {
            Some(x) => x.accesses += t.accesses,
            None => a.push(t.clone()),
        }
    }
    a.sort_by_key(|x| x.thread);
}

/// Add object `b` to `a` (blocks of one allocation line, pieces of one global): counts, pages,
/// first touches by place, each thread's range.
fn merge_object(a: &mut profcc_schema::numa::NumaObject, b: &profcc_schema::numa::NumaObject) {
    a.instances += b.instances;
    a.bytes = a.bytes.max(b.bytes);
    a.pages += b.pages;
    a.accesses += b.accesses;
    a.remote += b.remote;
    a.unpinned_page += b.unpinned_page;
    a.shared_pages += b.shared_pages;
    a.kept_pages += b.kept_pages;
    a.moved_pages += b.moved_pages;
    a.reused_pages += b.reused_pages;
    add_by_thread(&mut a.by_thread, &b.by_thread);
    a.unsplit += b.unsplit;
    for t in &b.first_touch {
        match a
            .first_touch
            .iter_mut()
            .find(|x| (x.pc, x.thread) == (t.pc, t.thread))
        {
            Some(x) => x.pages += t.pages,
            None => a.first_touch.push(t.clone()),
        }
    }
    a.first_touch
        .sort_by(|x, y| y.pages.cmp(&x.pages).then(x.pc.cmp(&y.pc)));
    for t in &b.threads {
        match a.threads.iter_mut().find(|x| x.thread == t.thread) {
            Some(x) => {
                x.start = x.start.min(t.start);
                x.end = x.end.max(t.end);
                x.pages += t.pages;
            }
            None => a.threads.push(t.clone()),
        }
    }
    a.threads.sort_by_key(|t| t.thread);
    a.page_counts.clear();
}

/// The start routine of thread `id` of input `i`, by name (None: the main thread or unknown).
fn routine(m: &Merged, i: usize, id: u32) -> Option<String> {
    let t = m.inputs[i].profile.threads.iter().find(|t| t.id == id)?;
    let pc = t.start_routine?;
    // A function's address, not a return address: symbolise it as is (`address` looks up
    // `pc - 1`).
    let frames = m.address(i, pc + 1);
    Some(
        frames
            .first()
            .and_then(|f| f.function.clone())
            .unwrap_or_else(|| format!("{pc:#x}")),
    )
}

/// Load imbalance (NumaPerf): worker threads grouped by start routine, each group's overhead
/// `sum(local + remote x REMOTE_LATENCY)` and the thread count its share asks for; empty with
/// fewer than two groups.
/// The thread groups (by start routine) and their recommended counts (NumaPerf's imbalance).
fn groups(threads: &[NumaThread]) -> Vec<Group<String>> {
    let workers: Vec<(String, f64)> = threads
        .iter()
        .filter_map(|t| Some((t.routine.clone()?, overhead(t.local, t.remote))))
        .collect();
    imbalance(&workers).unwrap_or_default()
}

/// The binding plan of a `numa=thread` run whose workers make remote accesses: closeness of
/// two workers = each one's accesses to the pages the other touched first (home = id + 1).
fn plan(n: &profcc_schema::numa::Numa) -> (Vec<crate::model::NumaCluster>, Vec<String>, String) {
    let workers: Vec<&profcc_schema::numa::NumaThread> =
        n.threads.iter().filter(|t| t.thread != 0).collect();
    let remote: u64 = workers.iter().map(|t| t.remote).sum();
    let all: u64 = workers.iter().map(|t| t.local + t.remote).sum();
    if n.model != "thread"
        || workers.len() < 2
        || (remote as f64) < REMOTE_ADVICE_SHARE * all as f64
    {
        return (Vec::new(), Vec::new(), String::new());
    }
    let close: Vec<Vec<f64>> = workers
        .iter()
        .map(|a| {
            workers
                .iter()
                .map(|b| {
                    a.by_home
                        .iter()
                        .find(|&&(h, _)| h == b.thread + 1 && a.thread != b.thread)
                        .map_or(0.0, |&(_, c)| c as f64)
                })
                .collect()
        })
        .collect();
    // The machine: the CPUs this run could use (assumed 0..cpus when the profile does not
    // say), split in order into the plan's nodes; never more nodes than CPUs.
    let recorded = !n.allowed_cpus.is_empty();
    let allowed: Vec<u32> = if recorded {
        n.allowed_cpus.clone()
    } else {
        (0..n.cpus.max(1)).collect()
    };
    let asked = n.plan_nodes.max(1) as usize;
    let nodes = asked.min(allowed.len()).max(1);
    let mut node_cpus: Vec<&[u32]> = Vec::new();
    let mut at = 0;
    for k in 0..nodes {
        let m = allowed.len() / nodes + usize::from(k < allowed.len() % nodes);
        node_cpus.push(&allowed[at..at + m]);
        at += m;
    }
    // N: the CPUs of a node, or more when there are more workers than CPUs (oversubscribed).
    let per_node = (allowed.len() / nodes)
        .max(workers.len().div_ceil(nodes))
        .max(1);
    let (clusters, unbalanced) = binding_plan(&close, nodes, per_node);
    let out: Vec<crate::model::NumaCluster> = clusters
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let cpus = node_cpus[k % nodes];
            crate::model::NumaCluster {
                node: (k % nodes) as u32,
                first_cpu: cpus[0],
                cpus: cpus.len() as u32,
                cpu_list: cpu_list(cpus),
                threads: c.iter().map(|&a| workers[a].thread).collect(),
                unbalanced: c
                    .iter()
                    .filter(|&&a| unbalanced[a])
                    .map(|&a| workers[a].thread)
                    .collect(),
            }
        })
        .collect();
    // OpenMP: one place per thread in thread order (the main thread on the first node).
    let last = workers.iter().map(|t| t.thread).max().unwrap_or(0);
    let place = |t: u32| {
        let cpus = out
            .iter()
            .find(|c| c.threads.contains(&t))
            .map_or(node_cpus[0], |c| node_cpus[c.node as usize]);
        omp_place(cpus)
    };
    let places: Vec<String> = (0..=last).map(place).collect();
    let mut lines = vec![format!(
        "OpenMP (threads numbered as here, the main thread 0): OMP_PROC_BIND=true OMP_PLACES=\"{}\"",
        places.join(",")
    )];
    for c in &out {
        let ids: Vec<String> = c.threads.iter().map(|t| t.to_string()).collect();
        lines.push(format!(
            "pthreads: threads {} on node {}: pthread_setaffinity_np with CPUs {} in their start routine (or taskset -c {} for a process per node)",
            ids.join(", "),
            c.node,
            c.cpu_list,
            c.cpu_list
        ));
    }
    let machine = if recorded {
        format!(
            "the {} CPUs this run could use ({})",
            allowed.len(),
            cpu_list(&allowed)
        )
    } else {
        format!(
            "CPUs 0-{} assumed (the profile does not record the run's CPUs)",
            allowed.len() - 1
        )
    };
    let fewer = if nodes < asked {
        format!(", not the {asked} of numa_nodes: fewer CPUs than nodes")
    } else {
        String::new()
    };
    let basis = format!("{nodes} nodes{fewer}, over {machine}");
    (out, lines, basis)
}

/// CPUs as a CPU list: ranges of consecutive CPUs, `0-3,8`.
fn cpu_list(cpus: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut k = 0;
    while k < cpus.len() {
        let mut e = k;
        while e + 1 < cpus.len() && cpus[e + 1] == cpus[e] + 1 {
            e += 1;
        }
        parts.push(if e == k {
            cpus[k].to_string()
        } else {
            format!("{}-{}", cpus[k], cpus[e])
        });
        k = e + 1;
    }
    parts.join(",")
}

/// One OpenMP place holding `cpus`: `{first:count}` when they are consecutive, else the list.
fn omp_place(cpus: &[u32]) -> String {
    let consecutive = cpus.windows(2).all(|w| w[1] == w[0] + 1);
    if consecutive {
        format!("{{{}:{}}}", cpus[0], cpus.len())
    } else {
        let l: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
        format!("{{{}}}", l.join(","))
    }
}

/// Migration risk (NumaPerf's proxy): threads that wait may be woken on another node. The
/// words follow the model (`can_move`: [`threads_can_move`]): binding is advised only where
/// threads can move (`real` on a machine of several nodes; `emulate` with a bound thread);
/// where the model fixes each thread's node (`thread`, `emulate` without binding) the line
/// says a wait moves nothing here and names `numa=real`; the binding plan is named only when
/// the report prints one (`planned`).
fn migration(
    threads: &[NumaThread],
    model: &str,
    nodes: u32,
    can_move: bool,
    planned: bool,
) -> Option<String> {
    let mut w = profcc_schema::numa::Waits::default();
    for t in threads {
        w.mutex += t.waits.mutex;
        w.spin += t.waits.spin;
        w.cond += t.waits.cond;
        w.barrier += t.waits.barrier;
        w.sem += t.waits.sem;
    }
    if w.total() == 0 {
        return None;
    }
    let top = threads
        .iter()
        .max_by_key(|t| (t.waits.total(), u32::MAX - t.thread))?;
    let moved: u64 = threads.iter().map(|t| t.migrations).sum();
    let plan = if planned {
        "; the binding plan below places each thread with the threads it shares pages with"
    } else {
        ""
    };
    let seen = match model {
        "real" if nodes > 1 => format!(
            "; {moved} of those waits woke on another node: a thread that blocks may wake on another node, away from its pages; bind the threads (OMP_PROC_BIND=close with OMP_PLACES=cores, or pthread_setaffinity_np){plan}"
        ),
        "real" => format!(
            "; this machine has one node, so no wait moved a thread away from its pages; on a machine with NUMA nodes a thread that blocks may wake on another node (numa=real there counts it){plan}"
        ),
        "emulate" if can_move => format!(
            "; under emulate a thread's node follows its CPU mask, not the waits, so no wait moved one here; on a machine with NUMA nodes an unbound thread that blocks may wake on another node: bind every thread as the bound ones are (numa=real there counts the wakes){plan}"
        ),
        "emulate" => format!(
            "; under emulate without binding a thread's node is fixed (id mod nodes), so no wait moved one here; on a machine with NUMA nodes a thread that blocks may wake on another node (numa=real there counts it){plan}"
        ),
        "thread" => format!(
            "; under numa=thread each thread is its own node, so no wait moves one; on a machine with NUMA nodes a thread that blocks may wake on another node (numa=real there counts it){plan}"
        ),
        _ => String::new(),
    };
    Some(format!(
        "threads waited {} times (contended mutex {}, spin lock {}, condition variable {}, barrier {}, semaphore {}), thread {} most ({}){seen}; contended waits cost time on any machine: shorten the critical sections",
        w.total(),
        w.mutex,
        w.spin,
        w.cond,
        w.barrier,
        w.sem,
        top.thread,
        top.waits.total()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page one thread touched first and one other thread used (sqlite's `aSyscall` in a
    /// two-worker run): no blocks to list, so the fix names none.
    #[test]
    fn a_first_touch_without_blocks_names_none() {
        let o = profcc_schema::numa::NumaObject {
            pages: 1,
            moved_pages: 1,
            ..Default::default()
        };
        for r in [vec![], vec![(2, 0, 4096)]] {
            let (kind, fix) = fix_words(
                &o,
                &ObjectFix::FirstTouch {
                    layout: Layout::Blocks(r),
                },
                "thread 1 touched it first",
            );
            let fix = fix.unwrap();
            assert_eq!(kind.as_deref(), Some("first touch"));
            assert!(!fix.contains("()") && !fix.contains("own block"), "{fix}");
            assert!(
                fix.contains("touch them first in the thread that uses them"),
                "{fix}"
            );
        }
    }
}
