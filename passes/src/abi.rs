//! The contract between instrumented code and the runtime (`rt/src/counts.rs` is the other
//! side; both must change together, and `ABI_VERSION` with them).

/// Hook bodies (passes/hooks/fastpath.c), inlined: function prologue values, counting-only
/// accesses, and the sharing-analysis accesses (read, write, ranges).
pub const FN_COUNTERS: &str = "__profcc_fn_counters";
pub const FN_ME: &str = "__profcc_fn_me";
pub const FN_RB: &str = "__profcc_fn_rb";
pub const FN_WMASK: &str = "__profcc_fn_wmask";
pub const COUNT: &str = "__profcc_count";
pub const COUNT_N: &str = "__profcc_count_n";
pub const READ: &str = "__profcc_read";
pub const WRITE: &str = "__profcc_write";
pub const RANGE: &str = "__profcc_range";
pub const RANGE_N: &str = "__profcc_range_n";
pub const HOOKS: [&str; 10] = [
    FN_COUNTERS,
    FN_ME,
    FN_RB,
    FN_WMASK,
    COUNT,
    COUNT_N,
    READ,
    WRITE,
    RANGE,
    RANGE_N,
];
/// Accesses longer than this go through the range hook (every line they cover).
pub const LINE: u64 = 64;
/// `info` argument of the sharing hooks: size (bits 0-7, capped) | write << 8 | atomic << 10
/// | extra reads << 12 | extra writes << 18 (6 bits each: the unchecked accesses of the same
/// address this one stands for) | (site - group leader) << 32. Bit 9 is the runtime's.
pub const INFO_WRITE: u64 = 1 << 8;
pub const INFO_ATOMIC: u64 = 1 << 10;
pub const INFO_EXTRA_READS_SHIFT: u32 = 12;
pub const INFO_EXTRA_WRITES_SHIFT: u32 = 18;
pub const INFO_SITE_SHIFT: u32 = 32;
/// Runtime entry the module constructor calls with the module descriptor.
pub const REGISTER: &str = "__profcc_register_module";
/// Per-module global holding the module's first global site id.
pub const SITE_BASE: &str = "__profcc_site_base";
pub const ABI_VERSION: u32 = 4;
/// Module descriptor flag: the module's accesses read the cache-line shadow.
pub const FLAG_SHARING: u32 = 1;
/// Base of a module that has not registered yet (counted as unattributed).
pub const LIMBO: u32 = 1 << 22;
/// Most sites one module may have; further accesses are skipped with a counted reason.
pub const MAX_MODULE_SITES: u32 = 1 << 20;
/// Constructor priority: before C++ static constructors (65535) so the runtime's `atexit`
/// runs after their destructors.
pub const CTOR_PRIORITY: u64 = 1;
/// 32-bit words per site record: file, line, col, func, inlined_at, size|kind<<16, leader
/// (the module-local site whose counter this site shares; itself when it has its own).
pub const SITE_WORDS: usize = 7;
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

impl AccessKind {
    /// Does the access write memory (stores, atomics, memcpy/memset destinations)?
    pub fn writes(self) -> bool {
        matches!(
            self,
            AccessKind::Write | AccessKind::Atomic | AccessKind::CopyWrite
        )
    }
}
