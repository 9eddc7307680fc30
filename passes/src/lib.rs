//! Instrumentation of an LLVM module (optimised IR in, instrumented IR out).
//!
//! Structure, after LLVM's ThreadSanitizer.cpp:
//! - `select`: walks the module and decides, per memory access, whether to instrument it
//!   and why not; every decision has a counter in [`Stats`].
//! - `rewrite`: one call of `__profcc_fn_counters(site_base)` at each instrumented
//!   function's entry, and one call of `__profcc_count(counters, local_site)` (or
//!   `__profcc_count_n` with the run-time length) before each selected access. The bodies
//!   (hooks/counting.c and hooks/sharing.c at the top of the repository, compiled to
//!   bitcode at build time) are linked into the module and
//!   inlined by the `always-inline` pass, so the fast path is inline even in `-O0`
//!   (`optnone`) functions: one counter increment per access, no branch.
//! - `metadata`: the site table (file, line, column, function, inlined-at, kind, size) and a
//!   string table travel inside the object as private constants; a priority-1 constructor
//!   registers them with the runtime, which assigns the module's global site base.
//! - `wrappers`: the module's allocation wrappers (functions that only allocate and return the
//!   block), listed in the descriptor so the report names heap objects by their callers.
//!
//! The crate does no I/O except [`instrument_file`]'s reading and writing of the bitcode the
//! driver names, and never panics on valid IR.

/// The contract with the runtime (hook names, `info` bits, site records, descriptor).
pub(crate) use profcc_abi as abi;
mod llvm;
mod metadata;
mod regions;
mod rewrite;
mod select;
mod shim;
mod wrappers;

use std::path::Path;

pub use abi::{AccessKind, MAX_MODULE_SITES};
pub use regions::Placement;

/// hooks/stub.c in an archive (build.rs): weak definitions of every symbol an instrumented
/// module refers to, for shared links. A library links with `-z defs` and loads into a program
/// without profcc's runtime (not profiled there); in a profcc-built executable the runtime's
/// definitions win.
pub const STUB_ARCHIVE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libprofcc_stub.a"));

/// hooks/markers.c in an archive (build.rs): LIKWID's, Caliper's and PAPI's marker functions
/// as no-ops, one object per library, for instrumented links of programs that call them
/// without linking the library. Put last: a linked real library wins.
pub const MARKER_ARCHIVE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libprofcc_markers.a"));

#[derive(Debug, Clone)]
pub struct Options {
    /// Instrument memory accesses (loads, stores, atomics, memory intrinsics).
    pub accesses: bool,
    /// Also check each access against the cache-line shadow (sharing analysis).
    pub sharing: bool,
    /// Also check each access's page against the page shadow (NUMA analysis; docs/numa.md).
    pub numa: bool,
    /// Region counters (docs/regions.md): where they go; None: no region counters.
    pub regions: Option<Placement>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            accesses: true,
            sharing: true,
            numa: false,
            regions: Some(Placement::Derived),
        }
    }
}

/// What the pass did: one count per decision, in a fixed order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    pub counts: Vec<(&'static str, u64)>,
}

impl Stats {
    pub fn get(&self, name: &str) -> u64 {
        self.counts
            .iter()
            .find(|c| c.0 == name)
            .map(|c| c.1)
            .unwrap_or(0)
    }
    pub(crate) fn bump(&mut self, name: &'static str, by: u64) {
        match self.counts.iter_mut().find(|c| c.0 == name) {
            Some(c) => c.1 += by,
            None => self.counts.push((name, by)),
        }
    }
}

/// Read bitcode from `input`, instrument it, write bitcode to `output`.
pub fn instrument_file(input: &Path, output: &Path, opts: &Options) -> Result<Stats, String> {
    let ctx = llvm::Context::new();
    let module = ctx.parse_bitcode_file(input)?;
    let stats = instrument_module(&ctx, &module, opts)?;
    module.write_bitcode(output)?;
    Ok(stats)
}

/// Instrument textual IR and return textual IR (for golden tests and debugging).
pub fn instrument_ir(ir: &str, opts: &Options) -> Result<(String, Stats), String> {
    let ctx = llvm::Context::new();
    let module = ctx.parse_ir(ir)?;
    let stats = instrument_module(&ctx, &module, opts)?;
    Ok((module.to_ir(), stats))
}

/// Instrument one module in place.
pub fn instrument_module(
    ctx: &llvm::Context,
    module: &llvm::Module,
    opts: &Options,
) -> Result<Stats, String> {
    let mut stats = Stats::default();
    if module.has_function(abi::names::COUNT)
        || module.has_global(abi::names::SITE_BASE)
        || module.has_function(abi::names::ROI_REGISTER)
    {
        stats.bump("skipped-module-already-instrumented", 1);
        return Ok(stats);
    }
    // Code built without frame pointers (the ROI-only build, or the user's choice there):
    // the runtime then keeps one frame per allocation stack (rt/src/stack.rs).
    if unsafe { llvm::lacks_frame_pointers(module.raw()) } {
        unsafe {
            llvm::define_flag_function(ctx.raw(), module.raw(), abi::names::NO_FRAME_POINTERS)
        };
        stats.bump("module-without-frame-pointers", 1);
    }
    if let Some(placement) = opts.regions {
        // First: the clones it makes are then instrumented like the rest of the code.
        unsafe { regions::instrument(ctx.raw(), module.raw(), placement, &mut stats)? };
    }
    if !opts.accesses {
        module
            .verify()
            .map_err(|e| format!("instrumented module does not verify: {e}"))?;
        return Ok(stats);
    }
    let mut selection = select::select(module.raw(), &mut stats);
    select::plan(&mut selection, &mut stats);
    let wrappers = unsafe { wrappers::find(module.raw()) };
    if !wrappers.is_empty() {
        stats.bump("alloc-wrapper", wrappers.len() as u64);
    }
    if selection.accesses.is_empty() && wrappers.is_empty() {
        return Ok(stats);
    }
    let mut table = metadata::SiteTable::build(module.raw(), &selection);
    table.set_wrappers(&wrappers);
    unsafe {
        let hooks = ctx.link_hooks(module)?;
        let flags = if opts.sharing { abi::FLAG_SHARING } else { 0 }
            | if opts.numa { abi::FLAG_NUMA } else { 0 };
        let site_base = metadata::emit(ctx.raw(), module.raw(), &table, flags)?;
        rewrite::rewrite(
            ctx.raw(),
            &hooks,
            site_base,
            &selection,
            opts.sharing,
            opts.numa,
            &mut stats,
        );
        module.run_passes("always-inline")?;
        // The inliner deletes the hooks once they are dead; delete any that is not.
        // The checkers' doors after the checkers: a door is dead once its checkers are.
        for name in abi::names::HOOKS
            .iter()
            .chain(&abi::names::CHECKERS)
            .chain(&abi::names::CHECKER_DOORS)
        {
            llvm::delete_unused_function(module.raw(), name);
        }
        // What only the NUMA hook refers to, when the module has no NUMA checks.
        llvm::delete_unused_function(module.raw(), abi::names::PAGE_MISS);
        llvm::delete_unused_function(module.raw(), abi::names::PAGE_MISS_AT);
        llvm::delete_unused_global(module.raw(), abi::names::NUMA_CACHE);
    }
    module
        .verify()
        .map_err(|e| format!("instrumented module does not verify: {e}"))?;
    stats.bump("sites", table.len() as u64);
    Ok(stats)
}
