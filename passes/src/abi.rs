//! The contract between instrumented code and the runtime (`rt/src/counts.rs` is the other
//! side; both must change together, and `ABI_VERSION` with them).

/// Hook bodies (passes/hooks/fastpath.c), inlined: function prologue, fixed-size access,
/// run-time-length access.
pub const FN_COUNTERS: &str = "__profcc_fn_counters";
pub const COUNT: &str = "__profcc_count";
pub const COUNT_N: &str = "__profcc_count_n";
pub const HOOKS: [&str; 3] = [FN_COUNTERS, COUNT, COUNT_N];
/// Runtime entry the module constructor calls with the module descriptor.
pub const REGISTER: &str = "__profcc_register_module";
/// Per-module global holding the module's first global site id.
pub const SITE_BASE: &str = "__profcc_site_base";
pub const ABI_VERSION: u32 = 2;
/// Base of a module that has not registered yet (counted as unattributed).
pub const LIMBO: u32 = 1 << 22;
/// Most sites one module may have; further accesses are skipped with a counted reason.
pub const MAX_MODULE_SITES: u32 = 1 << 20;
/// Constructor priority: before C++ static constructors (65535) so the runtime's `atexit`
/// runs after their destructors.
pub const CTOR_PRIORITY: u64 = 1;
/// 32-bit words per site record: file, line, col, func, inlined_at, size|kind<<16.
pub const SITE_WORDS: usize = 6;
pub const NO_STRING: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum AccessKind {
    Read = 0,
    Write = 1,
    Atomic = 2,
    CopyRead = 3,
    CopyWrite = 4,
}
