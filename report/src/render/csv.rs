//! CSV: `profcc report PROFILE... --csv DIR` writes one file per table, each with a header row
//! (for spreadsheets, pandas, SQL imports). Every table is one function in [`TABLES`] that
//! returns its file name, its header and its rows from the model; adding a table is adding
//! one. docs/report.md lists every file and column, and a unit test compares that list with
//! the headers here.
//!
//! Lists inside a cell (functions, stack frames, threads, objects) are joined with `; `;
//! numbers are written as in JSON (addresses in hex, `0x...`, as in the text report).

use crate::model::{Frame, Report};
use crate::render::text;
use crate::symbolize::user_frame;
use std::path::{Path, PathBuf};

/// One CSV file: its name inside DIR, the header row and the data rows (each as long as the
/// header).
pub struct Table {
    pub file: &'static str,
    pub header: &'static [&'static str],
    pub rows: Vec<Vec<String>>,
}

/// Every table, in the order they are written. A table whose section is absent from the
/// report (no sharing records) is still written, with its header only, so that a directory
/// never mixes files from two reports.
pub const TABLES: &[fn(&Report) -> Table] = &[
    findings,
    objects,
    access_sites,
    alloc_sites,
    threads,
    ranks,
    rank_spreads,
    sharing_findings,
    sharing_below_threshold,
    numa_threads,
    numa_objects,
    numa_sites,
    numa_binding,
    alloc_ops,
    alloc_channels,
    alloc_locks,
    alloc_overhead,
    regions,
    region_totals,
];

/// Cells that hold several values are joined with this.
const LIST: &str = "; ";

/// The `rank` cell of a row of one input: the MPI rank its launcher gave the process, empty
/// without one.
fn rank_cell(r: &Report, input: usize) -> String {
    opt(&r.summary.inputs.get(input).and_then(|i| i.rank))
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map(T::to_string).unwrap_or_default()
}

/// The columns that locate a call stack: its frame in the program's own source (function,
/// file, line) and the whole stack.
fn stack_cells(stack: &[Frame]) -> [String; 4] {
    let u = user_frame(stack);
    [
        u.and_then(|f| f.function.clone()).unwrap_or_default(),
        u.and_then(|f| f.file.clone()).unwrap_or_default(),
        u.and_then(|f| f.line)
            .map(|l| l.to_string())
            .unwrap_or_default(),
        stack
            .iter()
            .map(Frame::short)
            .collect::<Vec<_>>()
            .join(LIST),
    ]
}

/// `access_sites.csv`: the ranked source lines of `access_sites`.
pub fn access_sites(r: &Report) -> Table {
    let rows = r
        .access_sites
        .lines
        .iter()
        .map(|l| {
            vec![
                l.rank.to_string(),
                l.file.clone(),
                l.line.to_string(),
                l.function.clone(),
                l.functions.join(LIST),
                l.inlined_at.join(LIST),
                l.accesses.to_string(),
                l.reads.to_string(),
                l.writes.to_string(),
                l.bytes.to_string(),
                l.bytes_read.to_string(),
                l.bytes_written.to_string(),
                l.percent.to_string(),
                l.threads.to_string(),
                l.sites.len().to_string(),
            ]
        })
        .collect();
    Table {
        file: "access_sites.csv",
        header: &[
            "rank",
            "file",
            "line",
            "function",
            "functions",
            "inlined_at",
            "accesses",
            "reads",
            "writes",
            "bytes",
            "bytes_read",
            "bytes_written",
            "percent",
            "threads",
            "sites",
        ],
        rows,
    }
}

/// `alloc_sites.csv`: the ranked allocation sites.
pub fn alloc_sites(r: &Report) -> Table {
    let rows = r
        .alloc_sites
        .sites
        .iter()
        .map(|a| {
            let mut row = vec![
                a.rank.to_string(),
                a.kind.clone(),
                a.count.to_string(),
                a.bytes.to_string(),
                a.frees.to_string(),
                a.max_size.to_string(),
                a.live_bytes_peak.to_string(),
                a.live_bytes_at_exit.to_string(),
                a.live_objects_at_exit.to_string(),
                a.threads.to_string(),
                a.merged_sites.to_string(),
            ];
            row.extend(lifetime_cells(a.lifetime.as_ref()));
            row.extend(stack_cells(&a.stack));
            row
        })
        .collect();
    Table {
        file: "alloc_sites.csv",
        header: &[
            "rank",
            "kind",
            "count",
            "bytes",
            "frees",
            "max_size",
            "live_bytes_peak",
            "live_bytes_at_exit",
            "live_objects_at_exit",
            "threads",
            "merged_sites",
            "lifetime_freed",
            "lifetime_mean",
            "lifetime_min",
            "lifetime_max",
            "temporary",
            "lifetime_unmeasured",
            "function",
            "file",
            "line",
            "stack",
        ],
        rows,
    }
}

/// `alloc_sites.csv`'s lifetime columns (empty without lifetimes; the mean, min and max
/// empty when no free was measured).
fn lifetime_cells(l: Option<&profcc_schema::Lifetime>) -> Vec<String> {
    let Some(l) = l else {
        return vec![String::new(); 6];
    };
    let measured = |v: u64| {
        if l.freed > 0 {
            v.to_string()
        } else {
            String::new()
        }
    };
    vec![
        l.freed.to_string(),
        l.mean().map_or(String::new(), |m| format!("{m:.2}")),
        measured(l.min),
        measured(l.max),
        l.temporary.to_string(),
        l.unmeasured.to_string(),
    ]
}

/// `threads.csv`: every thread of every input.
/// One row per input (MPI rank) of a report of several profiles; header only for one.
pub fn ranks(r: &Report) -> Table {
    let rows = r
        .ranks
        .iter()
        .flat_map(|k| &k.rows)
        .map(|k| {
            vec![
                opt(&k.rank),
                k.input.to_string(),
                k.host.clone(),
                k.pid.to_string(),
                k.threads.to_string(),
                k.accesses.to_string(),
                k.allocations.to_string(),
                k.bytes_allocated.to_string(),
                k.peak_bytes.to_string(),
                k.remote_accesses.to_string(),
                k.invalidations.to_string(),
                format!("{:.6}", k.seconds),
            ]
        })
        .collect();
    Table {
        file: "ranks.csv",
        header: &[
            "rank",
            "input",
            "host",
            "pid",
            "threads",
            "accesses",
            "allocations",
            "bytes_allocated",
            "peak_bytes",
            "remote_accesses",
            "invalidations",
            "seconds",
        ],
        rows,
    }
}

/// Per finding, heap object and listed access line: its spread over the ranks (header only
/// for one input).
pub fn rank_spreads(r: &Report) -> Table {
    let rows = r
        .ranks
        .iter()
        .flat_map(|k| &k.spreads)
        .map(|x| {
            let s = &x.spread;
            vec![
                x.what.clone(),
                x.key.clone(),
                x.metric.clone(),
                s.sum.to_string(),
                s.min.to_string(),
                s.mean.to_string(),
                s.max.to_string(),
                format!("{:.4}", s.cv),
                format!("{:.4}", s.imbalance),
                opt(&s.worst_rank),
                s.worst_input.to_string(),
                s.present.to_string(),
                s.of.to_string(),
            ]
        })
        .collect();
    Table {
        file: "rank_spreads.csv",
        header: &[
            "what",
            "key",
            "metric",
            "sum",
            "min",
            "mean",
            "max",
            "cv",
            "imbalance",
            "worst_rank",
            "worst_input",
            "ranks_present",
            "ranks",
        ],
        rows,
    }
}

pub fn threads(r: &Report) -> Table {
    let rows = r
        .threads
        .iter()
        .map(|t| {
            let mut row = vec![
                t.input.to_string(),
                rank_cell(r, t.input),
                t.pid.to_string(),
                t.id.to_string(),
                opt(&t.parent),
                t.accesses.to_string(),
            ];
            row.extend(stack_cells(&t.created_at));
            row
        })
        .collect();
    Table {
        file: "threads.csv",
        header: &[
            "input",
            "rank",
            "pid",
            "id",
            "parent",
            "accesses",
            "created_function",
            "created_file",
            "created_line",
            "created_stack",
        ],
        rows,
    }
}

/// `sharing_findings.csv`: the ranked cache-line sharing findings (header only when the
/// profiles have no sharing records).
/// Every analysis's findings in their one ranking (`profcc_analysis::findings::CSV_COLUMNS`).
pub fn findings(r: &Report) -> Table {
    let rows = r
        .findings
        .iter()
        .enumerate()
        .map(|(n, f)| {
            vec![
                (n + 1).to_string(),
                f.key.clone(),
                f.analysis.as_str().to_string(),
                f.kind.clone(),
                format!("{:.6}", f.impact.seconds),
                f.impact.bytes.to_string(),
                serde_plain(&f.impact.confidence),
                f.impact.formula.clone(),
                f.places.join(LIST),
                f.objects
                    .iter()
                    .map(|o| o.text())
                    .collect::<Vec<_>>()
                    .join(LIST),
                f.title.clone(),
                f.fix.clone(),
                f.input.to_string(),
                rank_cell(r, f.input),
                f.threshold.clone(),
            ]
        })
        .collect();
    Table {
        file: "findings.csv",
        header: profcc_analysis::findings::CSV_COLUMNS,
        rows,
    }
}

/// The object table: every analysis's figures per object.
pub fn objects(r: &Report) -> Table {
    let rows = r
        .objects
        .iter()
        .map(|o| {
            vec![
                o.kind.clone(),
                o.name.clone(),
                opt(&o.allocations),
                opt(&o.bytes),
                opt(&o.live_bytes_peak),
                opt(&o.allocator_ns.map(|x| format!("{x:.0}"))),
                opt(&o
                    .lifetime
                    .as_ref()
                    .and_then(|l| l.mean())
                    .map(|m| format!("{m:.2}"))),
                opt(&o.lifetime.as_ref().map(|l| l.temporary)),
                o.sharing.join(LIST),
                opt(&o.invalidations),
                opt(&o.numa_local),
                opt(&o.numa_remote),
                opt(&o.first_touch_thread),
                opt(&o.region_bytes),
                o.findings.join(LIST),
            ]
        })
        .collect();
    Table {
        file: "objects.csv",
        header: &[
            "kind",
            "name",
            "allocations",
            "bytes",
            "live_bytes_peak",
            "allocator_ns",
            "lifetime_mean",
            "temporary",
            "sharing",
            "invalidations",
            "numa_local",
            "numa_remote",
            "first_touch_thread",
            "region_bytes",
            "findings",
        ],
        rows,
    }
}

pub fn sharing_findings(r: &Report) -> Table {
    let findings = r.sharing.iter().flat_map(|s| &s.findings);
    let rows = findings
        .map(|f| {
            let ids = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(LIST);
            let latent = f.latent.as_ref().map(|l| {
                let mut why = Vec::new();
                if l.prefetch_pair {
                    why.push("prefetch pair".to_string());
                }
                if let Some(d) = l.shift {
                    why.push(format!("shift {d}"));
                }
                why.join(LIST)
            });
            vec![
                f.rank.to_string(),
                f.input.to_string(),
                rank_cell(r, f.input),
                serde_plain(&f.kind),
                f.allocator_induced.to_string(),
                latent.unwrap_or_default(),
                f.lines
                    .iter()
                    .map(|l| format!("{l:#x}"))
                    .collect::<Vec<_>>()
                    .join(LIST),
                f.invalidations.to_string(),
                f.reads.to_string(),
                f.writes.to_string(),
                ids(&f.threads),
                f.objects
                    .iter()
                    .map(text::object_text)
                    .collect::<Vec<_>>()
                    .join(LIST),
                f.words
                    .iter()
                    .map(|w| text::word_text(w, &f.objects))
                    .collect::<Vec<_>>()
                    .join(LIST),
                f.places
                    .iter()
                    .map(|p| format!("{}:{} in {}", p.file, p.line, p.function))
                    .collect::<Vec<_>>()
                    .join(LIST),
                opt(&f.stride),
                f.predicted_saving_ns.to_string(),
                f.predicted_speedup.to_string(),
                serde_plain(&f.prediction.confidence),
                serde_plain(&f.prediction.access),
                format!("{:.3}", f.prediction.contended_slowdown),
                f.prediction.own_overlap_percent.to_string(),
                f.prediction.seen_saving_ns.to_string(),
                format!("{:.3}", f.prediction.charged_ns_per_access),
                f.prediction.latency_samples.to_string(),
                f.prediction.overlap_ns.to_string(),
                opt(&f.prediction.transfer_ns),
                f.prediction.basis.clone(),
                serde_plain(&f.confidence),
                f.fix.clone(),
            ]
        })
        .collect();
    Table {
        file: "sharing_findings.csv",
        header: &[
            "rank",
            "input",
            "mpi_rank",
            "kind",
            "allocator_induced",
            "latent",
            "lines",
            "invalidations",
            "reads",
            "writes",
            "threads",
            "objects",
            "words",
            "places",
            "stride",
            "predicted_saving_ns",
            "predicted_speedup",
            "prediction_confidence",
            "line_access",
            "contended_slowdown",
            "own_overlap_percent",
            "seen_saving_ns",
            "charged_ns_per_access",
            "latency_samples",
            "overlap_ns",
            "transfer_ns",
            "prediction_basis",
            "confidence",
            "fix",
        ],
        rows,
    }
}

/// `sharing_below_threshold.csv`: the findings predicted below `--min-speedup`, counted per
/// kind instead of listed (header only when there are none).
pub fn sharing_below_threshold(r: &Report) -> Table {
    let rows = r
        .sharing
        .iter()
        .flat_map(|s| &s.below_threshold)
        .map(|b| {
            vec![
                serde_plain(&b.kind),
                b.findings.to_string(),
                b.lines.to_string(),
                b.below_speedup.to_string(),
                b.largest_speedup.to_string(),
                b.largest_at.clone().unwrap_or_default(),
            ]
        })
        .collect();
    Table {
        file: "sharing_below_threshold.csv",
        header: &[
            "kind",
            "findings",
            "lines",
            "below_speedup",
            "largest_speedup",
            "largest_at",
        ],
        rows,
    }
}

/// One row per thread of every input with NUMA records: its node and its local and remote
/// accesses (docs/numa.md).
pub fn numa_threads(r: &Report) -> Table {
    let rows = r
        .numa
        .iter()
        .flat_map(|n| &n.inputs)
        .flat_map(|i| {
            i.threads.iter().map(move |t| {
                vec![
                    i.input.to_string(),
                    rank_cell(r, i.input),
                    t.thread.to_string(),
                    opt(&t.node),
                    t.local.to_string(),
                    t.remote.to_string(),
                    t.first_touches.to_string(),
                    i.model.clone(),
                ]
            })
        })
        .collect();
    Table {
        file: "numa_threads.csv",
        header: &[
            "input",
            "rank",
            "thread",
            "node",
            "local",
            "remote",
            "first_touches",
            "model",
        ],
        rows,
    }
}

/// The binding plan as a file (docs/numa.md, "Imbalance and binding"): one row per worker
/// thread of every input with a plan, its node and CPUs.
pub fn numa_binding(r: &Report) -> Table {
    let rows = r
        .numa
        .iter()
        .flat_map(|n| &n.inputs)
        .flat_map(|i| {
            i.plan.iter().flat_map(move |c| {
                c.threads.iter().map(move |t| {
                    vec![
                        i.input.to_string(),
                        rank_cell(r, i.input),
                        t.to_string(),
                        c.node.to_string(),
                        if c.cpu_list.is_empty() {
                            format!("{}-{}", c.first_cpu, c.first_cpu + c.cpus.max(1) - 1)
                        } else {
                            c.cpu_list.clone()
                        },
                        c.unbalanced.contains(t).to_string(),
                    ]
                })
            })
        })
        .collect();
    Table {
        file: "numa_binding.csv",
        header: &["input", "rank", "thread", "node", "cpus", "unbalanced"],
        rows,
    }
}

/// One row per source line with counted accesses of every input with NUMA records (at most
/// `--top` per input): its accesses and the remote ones, each access counted for the line
/// that brought its page into the thread's page cache (docs/numa.md, "Sites").
pub fn numa_sites(r: &Report) -> Table {
    let rows = r
        .numa
        .iter()
        .flat_map(|n| &n.inputs)
        .flat_map(|i| {
            i.sites.iter().map(move |x| {
                vec![
                    i.input.to_string(),
                    rank_cell(r, i.input),
                    opt(&x.place),
                    opt(&x.function),
                    (x.accesses - x.remote).to_string(),
                    x.remote.to_string(),
                    x.unpinned_thread.to_string(),
                    x.unpinned_page.to_string(),
                ]
            })
        })
        .collect();
    Table {
        file: "numa_sites.csv",
        header: &[
            "input",
            "rank",
            "line",
            "function",
            "local",
            "remote",
            "unpinned_thread",
            "unpinned_page",
        ],
        rows,
    }
}

/// One row per object of every input with NUMA records: the memory, where it was allocated
/// and first touched, its local and remote accesses and its seriousness score (docs/numa.md).
pub fn numa_objects(r: &Report) -> Table {
    let rows = r
        .numa
        .iter()
        .flat_map(|n| &n.inputs)
        .flat_map(|i| {
            i.objects.iter().map(move |o| {
                vec![
                    i.input.to_string(),
                    rank_cell(r, i.input),
                    o.object.clone(),
                    opt(&o.allocated_at),
                    opt(&o.first_touch_thread),
                    opt(&o.first_touch_at),
                    o.local.to_string(),
                    o.remote.to_string(),
                    o.unpinned_page.to_string(),
                    o.remote_invalidations.to_string(),
                    format!("{:.3}", o.score),
                    o.pages.to_string(),
                    opt(&o.kind),
                ]
            })
        })
        .collect();
    Table {
        file: "numa_objects.csv",
        header: &[
            "input",
            "rank",
            "object",
            "allocation_site",
            "first_touch_thread",
            "first_touch_line",
            "local",
            "remote",
            "unpinned_page",
            "remote_invalidations",
            "score",
            "pages",
            "kind",
        ],
        rows,
    }
}

/// A unit enum as its JSON name (`false_sharing`, `high`): one spelling for JSON and CSV.
fn serde_plain<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// Why the CSV files could not be written.
#[derive(Debug)]
pub struct CsvError(String);

impl std::fmt::Display for CsvError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// `--csv DIR` must be a directory or nothing yet: a file of that name is never replaced.
pub fn check_dir(dir: &Path) -> Result<(), CsvError> {
    if dir.exists() && !dir.is_dir() {
        return Err(CsvError(format!(
            "--csv {}: exists and is not a directory; give a directory (created if missing)",
            dir.display()
        )));
    }
    Ok(())
}

/// One row per operation kind of every input with the allocator analysis
/// (docs/allocators.md): op, size kind, reuse, phase, count and the allocator's time.
pub fn alloc_ops(r: &Report) -> Table {
    let rows = r
        .allocator
        .iter()
        .flat_map(|a| &a.inputs)
        .flat_map(|i| {
            i.ops.iter().map(move |o| {
                vec![
                    i.input.to_string(),
                    rank_cell(r, i.input),
                    o.op.clone(),
                    o.size_kind.clone(),
                    o.reuse.clone(),
                    o.phase.clone(),
                    o.count.to_string(),
                    o.timed.to_string(),
                    // Empty: no call of the row was timed.
                    if o.timed > 0 {
                        format!("{:.2}", o.mean_ns)
                    } else {
                        String::new()
                    },
                    format!("{:.0}", o.total_ns),
                ]
            })
        })
        .collect();
    Table {
        file: "alloc_ops.csv",
        header: &[
            "input",
            "rank",
            "op",
            "size_kind",
            "reuse",
            "phase",
            "count",
            "timed",
            "mean_ns",
            "total_ns",
        ],
        rows,
    }
}

/// One row per channel (system call or lock the allocator's work goes through) of every input
/// with the allocator analysis; `observable` false: the allocator makes these calls where
/// profcc cannot see them (never read as zero).
pub fn alloc_channels(r: &Report) -> Table {
    let rows = r
        .allocator
        .iter()
        .flat_map(|a| &a.inputs)
        .flat_map(|i| {
            i.channels.iter().map(move |c| {
                vec![
                    i.input.to_string(),
                    rank_cell(r, i.input),
                    c.channel.clone(),
                    c.observable.to_string(),
                    if c.observable {
                        c.count.to_string()
                    } else {
                        String::new()
                    },
                    if c.observable {
                        format!("{:.0}", c.total_ns)
                    } else {
                        String::new()
                    },
                    c.why_not.clone().unwrap_or_default(),
                ]
            })
        })
        .collect();
    Table {
        file: "alloc_channels.csv",
        header: &[
            "input",
            "rank",
            "channel",
            "observable",
            "count",
            "total_ns",
            "why_not",
        ],
        rows,
    }
}

/// One row per mutex the allocator took inside the program's operations (the report's list:
/// the most contended first, at most `--top`).
pub fn alloc_locks(r: &Report) -> Table {
    let rows = r
        .allocator
        .iter()
        .flat_map(|a| &a.inputs)
        .flat_map(|i| {
            i.locks.iter().map(move |l| {
                vec![
                    i.input.to_string(),
                    rank_cell(r, i.input),
                    format!("{:#x}", l.addr),
                    l.place.clone(),
                    l.taken.to_string(),
                    l.waited.to_string(),
                    format!("{:.0}", l.wait_ns),
                    l.busy.to_string(),
                    l.held.to_string(),
                    format!("{:.0}", l.hold_ns),
                ]
            })
        })
        .collect();
    Table {
        file: "alloc_locks.csv",
        header: &[
            "input", "rank", "addr", "place", "taken", "waited", "wait_ns", "busy", "held",
            "hold_ns",
        ],
        rows,
    }
}

/// The heap's memory at the peak of live requested bytes and at exit, split into what the
/// program asked for, internal fragmentation, freed-but-cached blocks and the rest
/// (docs/allocators.md, "Memory overhead").
pub fn alloc_overhead(r: &Report) -> Table {
    let rows = r
        .allocator
        .iter()
        .flat_map(|a| &a.inputs)
        .flat_map(|i| {
            i.overhead.iter().map(move |o| {
                vec![
                    i.input.to_string(),
                    rank_cell(r, i.input),
                    o.moment.clone(),
                    o.requested.to_string(),
                    o.usable.to_string(),
                    o.internal_fragmentation.to_string(),
                    o.blowup.to_string(),
                    o.heap_rss.to_string(),
                    o.external_and_metadata.to_string(),
                    opt(&o.lines),
                    opt(&o.pages),
                    opt(&o.line_utilisation.map(|x| format!("{x:.4}"))),
                    opt(&o.page_utilisation.map(|x| format!("{x:.4}"))),
                    opt(&o.touched),
                    opt(&o.untouched),
                ]
            })
        })
        .collect();
    Table {
        file: "alloc_overhead.csv",
        header: &[
            "input",
            "rank",
            "moment",
            "requested",
            "usable",
            "internal_fragmentation",
            "blowup",
            "heap_rss",
            "external_and_metadata",
            "lines",
            "pages",
            "line_utilisation",
            "page_utilisation",
            "touched",
            "untouched",
        ],
        rows,
    }
}

/// Write every table into `dir` (created if missing; an error if it exists and is not a
/// directory). Returns the files written, in [`TABLES`] order.
pub fn write_dir(r: &Report, dir: &Path) -> Result<Vec<PathBuf>, CsvError> {
    check_dir(dir)?;
    std::fs::create_dir_all(dir)
        .map_err(|e| CsvError(format!("cannot create {}: {e}", dir.display())))?;
    let mut written = Vec::new();
    for table in TABLES {
        let t = table(r);
        let path = dir.join(t.file);
        let fail =
            |e: &dyn std::fmt::Display| CsvError(format!("cannot write {}: {e}", path.display()));
        let mut w = csv::Writer::from_path(&path).map_err(|e| fail(&e))?;
        w.write_record(t.header).map_err(|e| fail(&e))?;
        for row in &t.rows {
            debug_assert_eq!(row.len(), t.header.len(), "{}", t.file);
            w.write_record(row).map_err(|e| fail(&e))?;
        }
        w.flush().map_err(|e| fail(&e))?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    /// ranks.csv's metric columns are the model's list of rank metrics, in its order.
    #[test]
    fn ranks_csv_columns_are_the_rank_metrics() {
        let t = super::ranks(&crate::tests::sample_report());
        assert_eq!(&t.header[4..], crate::model::RANK_METRICS);
    }

    use super::*;
    use crate::tests::sample_report;

    /// `docs/csv.md`'s CSV tables: (file, columns) in document order.
    fn documented() -> Vec<(String, Vec<String>)> {
        let doc = include_str!("../../../docs/csv.md");
        let csv = &doc[doc.find("## CSV files").expect("docs/csv.md: ## CSV files")..];
        let csv = &csv[..csv[3..].find("\n## ").map_or(csv.len(), |i| i + 3)];
        let mut tables: Vec<(String, Vec<String>)> = Vec::new();
        for line in csv.lines() {
            if let Some(name) = line.strip_prefix("### `").and_then(|l| l.strip_suffix('`')) {
                tables.push((name.to_string(), Vec::new()));
            } else if let (Some(t), Some(cell)) = (tables.last_mut(), line.strip_prefix("| `")) {
                let col = cell.split('`').next().unwrap();
                t.1.push(col.to_string());
            }
        }
        tables
    }

    /// One place for the column list: the doc's tables are the headers written here.
    #[test]
    fn headers_match_docs_report_md() {
        let r = sample_report();
        let written: Vec<(String, Vec<String>)> = TABLES
            .iter()
            .map(|t| {
                let t = t(&r);
                (
                    t.file.to_string(),
                    t.header.iter().map(|h| h.to_string()).collect(),
                )
            })
            .collect();
        let doc = documented();
        assert_eq!(
            doc.iter().map(|d| &d.0).collect::<Vec<_>>(),
            written.iter().map(|w| &w.0).collect::<Vec<_>>(),
            "CSV files in docs/csv.md vs TABLES"
        );
        for (d, w) in doc.iter().zip(&written) {
            assert_eq!(d.1, w.1, "columns of {} in docs/csv.md vs the header", d.0);
        }
    }

    /// The perf event columns of regions.csv are the schema's events, in order.
    #[test]
    fn region_event_columns_are_the_schema_events() {
        let t = regions(&sample_report());
        let cols: Vec<&str> =
            t.header[t.header.len() - profcc_schema::regions::EVENTS.len()..].to_vec();
        let want: Vec<String> = profcc_schema::regions::EVENTS
            .iter()
            .map(|e| format!("event_{e}"))
            .collect();
        assert_eq!(cols, want);
    }

    /// The score's miss rate in docs/report.md is the analysis's constant.
    #[test]
    fn docs_state_the_scores_miss_rate() {
        let read = |f: &str| {
            std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(f))
                .unwrap()
        };
        let doc = read("../docs/report.md") + &read("../docs/csv.md");
        let rate = profcc_analysis::numa::REMOTE_MISS_RATE;
        assert!(doc.contains(&format!("(remote x {rate} + remote_invalidations) / ms")));
    }

    /// Every row has the header's width, quoting survives commas and quotes, and a directory
    /// is created, reused, or refused when it is a file.
    #[test]
    fn tables_written_and_read_back() {
        let r = sample_report();
        for t in TABLES {
            let t = t(&r);
            assert!(!t.rows.is_empty(), "{} has no row in the sample", t.file);
            for row in &t.rows {
                assert_eq!(row.len(), t.header.len(), "{}: {row:?}", t.file);
            }
        }
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        let files = write_dir(&r, &dir).unwrap();
        assert_eq!(files.len(), TABLES.len());
        let mut rd = csv::Reader::from_path(dir.join("sharing_findings.csv")).unwrap();
        let header = rd.headers().unwrap().clone();
        let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 3);
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        assert_eq!(&rows[0][col("kind")], "false_sharing");
        assert_eq!(
            &rows[0][col("fix")],
            "`counters`: pad, \"quoted\", and a comma"
        );
        assert_eq!(&rows[0][col("threads")], "1; 2");
        assert_eq!(&rows[0][col("lines")], "0x560000004000; 0x560000004040");
        assert_eq!(&rows[2][col("latent")], "prefetch pair; shift 8");
        assert_eq!(&rows[0][col("objects")], "global `counters` (64 B)");
        let mut rd = csv::Reader::from_path(dir.join("ranks.csv")).unwrap();
        let header = rd.headers().unwrap().clone();
        let row = rd.records().next().unwrap().unwrap();
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        assert_eq!((&row[col("rank")], &row[col("host")]), ("1", "node, 1"));
        assert_eq!(
            (&row[col("accesses")], &row[col("seconds")]),
            ("1000", "1.500000")
        );
        let mut rd = csv::Reader::from_path(dir.join("rank_spreads.csv")).unwrap();
        let header = rd.headers().unwrap().clone();
        let row = rd.records().next().unwrap().unwrap();
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        assert_eq!(
            (&row[col("key")], &row[col("max")], &row[col("worst_rank")]),
            ("heap:init.c:12", "4096", "1")
        );
        let mut rd = csv::Reader::from_path(dir.join("alloc_sites.csv")).unwrap();
        let header = rd.headers().unwrap().clone();
        let row = rd.records().next().unwrap().unwrap();
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        // The program's own frame, past the unsymbolised one.
        assert_eq!(
            (&row[col("function")], &row[col("file")], &row[col("line")]),
            ("make", "/src/k.c", "21")
        );
        assert_eq!(
            &row[col("stack")],
            "?? 0x7f0000000001; make /src/k.c:21; main /src/k.c:40"
        );
        // The lifetimes: 9 measured frees of lifetimes summing to 40.
        let life = [
            "lifetime_freed",
            "lifetime_mean",
            "lifetime_min",
            "lifetime_max",
            "temporary",
            "lifetime_unmeasured",
        ];
        assert_eq!(
            life.map(|c| &row[col(c)]),
            ["9", "4.44", "0", "20", "3", "0"]
        );

        // Again into the same directory, beside a file of the user's: it stays.
        std::fs::write(dir.join("mine.txt"), "mine").unwrap();
        let mut no_sharing = r.clone();
        no_sharing.sharing = None;
        write_dir(&no_sharing, &dir).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("mine.txt")).unwrap(),
            "mine"
        );
        // No stale findings from the first report: the header only.
        let text = std::fs::read_to_string(dir.join("sharing_findings.csv")).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");

        let file = tmp.path().join("f.csv");
        std::fs::write(&file, "user data").unwrap();
        let e = write_dir(&r, &file).unwrap_err().to_string();
        assert!(e.contains("exists and is not a directory"), "{e}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "user data");
    }
}

/// One row per input and region, its threads together (docs/regions.md).
pub fn region_totals(r: &Report) -> Table {
    let rows = r
        .regions
        .iter()
        .flat_map(|g| &g.totals)
        .map(|t| {
            vec![
                t.input.to_string(),
                t.region.clone(),
                t.threads.to_string(),
                t.executions.to_string(),
                opt(&t.bytes),
                format!("{:.9}", t.seconds),
                t.gbytes_per_s.map_or(String::new(), |g| format!("{g:.3}")),
                t.machine_share.map_or(String::new(), |x| format!("{x:.6}")),
            ]
        })
        .collect();
    Table {
        file: "region_totals.csv",
        header: &[
            "input",
            "region",
            "threads",
            "executions",
            "bytes",
            "seconds",
            "gbytes_per_s",
            "machine_share",
        ],
        rows,
    }
}

/// One row per input, region and thread (docs/regions.md).
pub fn regions(r: &Report) -> Table {
    let rows = r
        .regions
        .iter()
        .flat_map(|g| g.rows.iter().map(move |row| (g, row)))
        .map(|(g, row)| {
            let c = row.counts.as_ref();
            let n = |f: &dyn Fn(&profcc_schema::regions::Counts) -> u64| {
                c.map_or(String::new(), |c| f(c).to_string())
            };
            let mut cells = vec![
                row.input.to_string(),
                rank_cell(r, row.input),
                row.region.clone(),
                row.thread.to_string(),
                row.executions.to_string(),
                n(&|c| c.bytes_read()),
                n(&|c| c.bytes_written()),
                n(&|c| c.loads_total()),
                n(&|c| c.stores_total()),
                n(&|c| c.instructions),
                format!("{:.9}", row.seconds),
                row.gbytes_per_s
                    .map_or(String::new(), |g| format!("{g:.3}")),
                n(&|c| c.load_bytes[profcc_schema::regions::LOCAL]),
                n(&|c| c.store_bytes[profcc_schema::regions::LOCAL]),
                n(&|c| c.int_ops),
                n(&|c| c.fp_ops),
                n(&|c| c.vector_ops),
                n(&|c| c.branches),
                n(&|c| c.calls),
                n(&|c| c.uncovered_calls),
                row.counted_executions
                    .map_or(String::new(), |k| k.to_string()),
                n(&|c| c.counter_increments),
                row.correction_factor
                    .map_or(String::new(), |f| format!("{f:.6}")),
                row.gbytes_per_s_corrected
                    .map_or(String::new(), |g| format!("{g:.3}")),
                row.sampled_calls.map_or(String::new(), |k| k.to_string()),
                row.time_samples.map_or(String::new(), |k| k.to_string()),
                row.machine_share
                    .map_or(String::new(), |x| format!("{x:.6}")),
            ];
            // The perf events, summed over the executions that read them; empty when the
            // event was not counted.
            let counted = |i: usize| {
                g.events.as_ref().is_some_and(|e| {
                    e.counted
                        .iter()
                        .any(|c| c == profcc_schema::regions::EVENTS[i])
                })
            };
            let ev = row.events.as_ref();
            cells.push(ev.map_or(String::new(), |e| e.executions.to_string()));
            for i in 0..profcc_schema::regions::EVENTS.len() {
                cells.push(ev.filter(|_| counted(i)).map_or(String::new(), |e| {
                    e.values.get(i).copied().unwrap_or(0).to_string()
                }));
            }
            cells
        })
        .collect();
    Table {
        file: "regions.csv",
        header: &[
            "input",
            "rank",
            "region",
            "thread",
            "executions",
            "bytes_read",
            "bytes_written",
            "loads",
            "stores",
            "instructions",
            "seconds",
            "gbytes_per_s",
            "local_bytes_read",
            "local_bytes_written",
            "int_ops",
            "fp_ops",
            "vector_ops",
            "branches",
            "calls",
            "uncovered_calls",
            "counted_executions",
            "counter_increments",
            "correction_factor",
            "gbytes_per_s_corrected",
            "sampled_calls",
            "time_samples",
            "machine_share",
            "event_executions",
            "event_instructions",
            "event_l1d_read_misses",
            "event_llc_misses",
            "event_page_faults",
        ],
        rows,
    }
}
