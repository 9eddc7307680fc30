//! Allocation sites with their symbolised call stacks.

use super::{section, Options, Section};
use crate::fmt;
use crate::merge::Merged;
use crate::symbolize::Frame;
use serde::Serialize;

#[derive(Serialize)]
pub struct AllocSites {
    /// Distinct allocation sites after merging by symbolised stack.
    pub sites_total: usize,
    /// The top sites by bytes allocated (then count), at most `--top`.
    pub sites: Vec<AllocSite>,
    #[serde(skip)]
    stack_depth: usize,
}

#[derive(Serialize)]
pub struct AllocSite {
    pub rank: usize,
    /// malloc, calloc, realloc, new, new[], mmap, ...
    pub kind: String,
    pub count: u64,
    pub bytes: u64,
    pub frees: u64,
    pub max_size: u64,
    /// Summed over merged sites/processes: an upper bound when several were merged.
    pub live_bytes_peak: u64,
    pub live_bytes_at_exit: u64,
    pub live_objects_at_exit: u64,
    pub threads: u32,
    /// Call stack, innermost first, inlined frames expanded.
    pub stack: Vec<Frame>,
}

pub fn build(m: &Merged, opts: &Options) -> Option<Box<dyn Section>> {
    let mut sites: Vec<AllocSite> = m
        .alloc_sites
        .iter()
        .map(|a| AllocSite {
            rank: 0,
            kind: a.kind.clone(),
            count: a.count,
            bytes: a.bytes,
            frees: a.frees,
            max_size: a.max_size,
            live_bytes_peak: a.live_bytes_peak,
            live_bytes_at_exit: a.live_bytes_at_exit,
            live_objects_at_exit: a.live_objects_at_exit,
            threads: a.threads,
            stack: a.stack.clone(),
        })
        .collect();
    sites.sort_by(|x, y| {
        y.bytes
            .cmp(&x.bytes)
            .then(y.count.cmp(&x.count))
            .then(y.live_bytes_peak.cmp(&x.live_bytes_peak))
            .then_with(|| {
                x.stack
                    .first()
                    .map(Frame::key)
                    .cmp(&y.stack.first().map(Frame::key))
            })
    });
    let sites_total = sites.len();
    sites.truncate(opts.limit(sites_total));
    for (n, s) in sites.iter_mut().enumerate() {
        s.rank = n + 1;
    }
    Some(Box::new(AllocSites {
        sites_total,
        sites,
        stack_depth: opts.stack_depth,
    }))
}

section!(AllocSites, "alloc_sites");

impl AllocSites {
    fn render(&self, out: &mut String) {
        out.push('\n');
        if self.sites.is_empty() {
            out.push_str("Allocation sites: none recorded\n");
            return;
        }
        out.push_str(&format!(
            "Top allocation sites by bytes allocated ({} of {})\n",
            self.sites.len(),
            self.sites_total
        ));
        for s in &self.sites {
            out.push_str(&format!(
                "  {:>3}  {}: {} calls, {} (largest {}), peak live {}, live at exit {} in {} objects, {} frees, {} thread{}\n",
                s.rank,
                s.kind,
                fmt::count(s.count),
                fmt::bytes(s.bytes),
                fmt::bytes(s.max_size),
                fmt::bytes(s.live_bytes_peak),
                fmt::bytes(s.live_bytes_at_exit),
                fmt::count(s.live_objects_at_exit),
                fmt::count(s.frees),
                s.threads,
                if s.threads == 1 { "" } else { "s" },
            ));
            write_stack(out, &s.stack, self.stack_depth, "         ");
        }
    }
}

/// Print a stack one frame a line, `depth` frames at most (0 = all).
pub fn write_stack(out: &mut String, stack: &[Frame], depth: usize, indent: &str) {
    if stack.is_empty() {
        out.push_str(indent);
        out.push_str("(no call stack recorded)\n");
        return;
    }
    // Frames below `main` (libc's start-up code) say nothing; stop after it.
    let through_main = stack
        .iter()
        .position(|f| !f.inlined && f.function.as_deref() == Some("main"))
        .map_or(stack.len(), |i| i + 1);
    let stack = &stack[..through_main];
    let shown = if depth == 0 {
        stack.len()
    } else {
        stack.len().min(depth)
    };
    for f in &stack[..shown] {
        out.push_str(indent);
        out.push_str(&f.describe());
        out.push('\n');
    }
    if shown < stack.len() {
        out.push_str(&format!(
            "{indent}... {} more frames (--stack-depth 0 shows all)\n",
            stack.len() - shown
        ));
    }
}
