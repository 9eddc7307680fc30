//! The C view of the contract: `include/profcc_abi.h`, generated from the constants of this
//! crate so the hook bodies and the runtime's C parts never hold copies of their own.
//!
//! The committed header must equal [`write_c_header`]'s output (tests/header.rs fails
//! otherwise); `UPDATE_ABI_HEADER=1 cargo test -p profcc-abi` rewrites it.

use crate::*;
use core::fmt::{Result, Write};

/// Where the header lives, relative to the crate.
pub const PATH: &str = "include/profcc_abi.h";
/// How to regenerate it.
pub const REGENERATE: &str = "UPDATE_ABI_HEADER=1 cargo test -p profcc-abi";

enum Item {
    Section(&'static str),
    /// Name (without `PROFCC_`), value, C suffix (`ull`, `u`, or none), hex?, comment.
    Def(&'static str, u64, &'static str, bool, &'static str),
    /// A macro with arguments, verbatim.
    Macro(&'static str, &'static str, &'static str),
}
use Item::*;

const fn hex(name: &'static str, v: u64, comment: &'static str) -> Item {
    Def(name, v, "ull", true, comment)
}
const fn int(name: &'static str, v: u64, comment: &'static str) -> Item {
    Def(name, v, "", false, comment)
}
const fn uint(name: &'static str, v: u64, comment: &'static str) -> Item {
    Def(name, v, "u", false, comment)
}

const ITEMS: &[Item] = &[
    Section("Address map (profcc-abi: abi/src/lib.rs)"),
    int(
        "APP_BITS",
        APP_BITS as u64,
        "user space is [0, 1 << APP_BITS)",
    ),
    hex("APP_LIMIT", APP_LIMIT, ""),
    int("LINE_SHIFT", LINE_SHIFT as u64, "64-byte cache lines"),
    int(
        "SHADOW_WORD_SHIFT",
        SHADOW_WORD_SHIFT as u64,
        "8-byte shadow words",
    ),
    hex("LINE_SHADOW", LINE_SHADOW, "16 TiB: one word per line"),
    hex("LINE_SHADOW_SIZE", LINE_SHADOW_SIZE, ""),
    Macro(
        "LINE_SHADOW_OF(a)",
        "(PROFCC_LINE_SHADOW + (((uint64_t)(a) >> PROFCC_LINE_SHIFT) << PROFCC_SHADOW_WORD_SHIFT))",
        "address of the shadow word of the line holding a",
    ),
    int("PAGE_SHIFT", PAGE_SHIFT as u64, "4 KiB pages"),
    int(
        "PAGE_ENTRY_SHIFT",
        PAGE_ENTRY_SHIFT as u64,
        "32-byte page records",
    ),
    hex("PAGE_SHADOW", PAGE_SHADOW, "1 TiB: one record per page"),
    hex("PAGE_SHADOW_SIZE", PAGE_SHADOW_SIZE, ""),
    int("START_SHIFT", START_SHIFT as u64, "16-byte granules"),
    hex(
        "START_SHADOW",
        START_SHADOW,
        "32 TiB: a start word per granule",
    ),
    hex("START_SHADOW_SIZE", START_SHADOW_SIZE, ""),
    int(
        "START_SPREAD",
        START_SPREAD,
        "granules whose start words are spread over 16 shadow lines",
    ),
    Section("A heap block's start word"),
    int("START_SIZE_BITS", START_SIZE_BITS as u64, "bits 0-11: size"),
    hex(
        "START_HALF",
        START_HALF as u64,
        "the block starts at the granule's byte 8",
    ),
    int(
        "START_SITE_SHIFT",
        START_SITE_SHIFT as u64,
        "the allocation site's index",
    ),
    hex(
        "START_SITES",
        START_SITES as u64,
        "sites from here have no start word",
    ),
    Macro(
        "START_SHADOW_OF(a)",
        "(PROFCC_START_SHADOW + (((((uint64_t)(a) >> PROFCC_START_SHIFT) & ~(uint64_t)(PROFCC_START_SPREAD - 1)) | (uint8_t)((uint8_t)((uint64_t)(a) >> PROFCC_START_SHIFT) << 4 | (uint8_t)((uint64_t)(a) >> PROFCC_START_SHIFT) >> 4)) << 2))",
        "address of the start word of the granule holding a (start_shadow: spread over 16 shadow lines per 256 granules)",
    ),
    Macro(
        "START_WORD(a, n, site)",
        "((uint32_t)(site) << PROFCC_START_SITE_SHIFT | (uint32_t)(((uint64_t)(a) & 8) << (PROFCC_START_SIZE_BITS - 3)) | (uint32_t)(n))",
        "the start word of an n-byte block at a of site (start_word)",
    ),
    Macro(
        "START_SIZE(w)",
        "((w) & (PROFCC_START_HALF - 1))",
        "the size of start word w's block (start_block)",
    ),
    Macro(
        "START_SITE(w)",
        "((uint32_t)(w) >> PROFCC_START_SITE_SHIFT)",
        "the allocation site of start word w's block (start_block)",
    ),
    Macro(
        "START_AT(w, a)",
        "((((w) & PROFCC_START_HALF) != 0) == (((uint64_t)(a) & 8) != 0))",
        "whether start word w (nonzero) is the block starting at a (start_block)",
    ),
    Section("The line's shadow word"),
    hex(
        "HOT",
        ShadowWord::HOT,
        "tracked line: the rest is its record index",
    ),
    hex("RETIRED", ShadowWord::RETIRED, ""),
    int("FIELD_SHIFT", ShadowWord::FIELD_SHIFT as u64, ""),
    hex("FIELD", ShadowWord::FIELD, ""),
    hex(
        "FREED",
        ShadowWord::FREED,
        "a retired line's field: its owner freed the block on it (ShadowWord::freed)",
    ),
    Macro(
        "FREED_WORD(me)",
        "((uint64_t)(me) | PROFCC_RETIRED | PROFCC_FREED << PROFCC_FIELD_SHIFT)",
        "the word a free leaves on a line its owner word me wrote last (ShadowWord::freed)",
    ),
    hex("READERS", ShadowWord::READERS, "reader mask"),
    hex("OWNER", ShadowWord::OWNER, "last writer's id+1"),
    hex(
        "WRITE_MASK",
        ShadowWord::WRITE_MASK,
        "a write leaves at once when (word & WRITE_MASK) == owner word",
    ),
    Section("The `info` argument of the sharing hooks"),
    hex(
        "INFO_SIZE_MASK",
        INFO_SIZE_MASK,
        "access size, capped at 255",
    ),
    hex("INFO_WRITE", INFO_WRITE, ""),
    int(
        "INFO_SAMPLED_SHIFT",
        INFO_SAMPLED_SHIFT as u64,
        "set by the door",
    ),
    hex("INFO_SAMPLED", INFO_SAMPLED, ""),
    hex("INFO_ATOMIC", INFO_ATOMIC, ""),
    int("INFO_EXTRA_READS_SHIFT", INFO_EXTRA_READS_SHIFT as u64, ""),
    int(
        "INFO_EXTRA_WRITES_SHIFT",
        INFO_EXTRA_WRITES_SHIFT as u64,
        "",
    ),
    int("INFO_EXTRA_MAX", INFO_EXTRA_MAX as u64, ""),
    int(
        "INFO_SITE_SHIFT",
        INFO_SITE_SHIFT as u64,
        "site - group leader",
    ),
    int(
        "PACKED_DISTANCE_SHIFT",
        PACKED_DISTANCE_SHIFT as u64,
        "packed write checker: leader | distance << this",
    ),
    int(
        "PACKED_EXTRA_READS_SHIFT",
        PACKED_EXTRA_READS_SHIFT as u64,
        "| extra reads << this",
    ),
    int(
        "PACKED_EXTRA_WRITES_SHIFT",
        PACKED_EXTRA_WRITES_SHIFT as u64,
        "| extra writes << this",
    ),
    int(
        "MERGED_SHIFT",
        MERGED_SHIFT as u64,
        "merged checker: first site | members << this",
    ),
    int(
        "MERGED_FIELD_BITS",
        MERGED_FIELD_BITS as u64,
        "a member: write | log2(size) << 1",
    ),
    Section("Counter arrays"),
    int(
        "COUNTER_STRIDE",
        COUNTER_STRIDE as u64,
        "u64 slots per site",
    ),
    int("COUNT_SLOT", COUNT_SLOT as u64, "executions"),
    int(
        "BYTES_SLOT",
        BYTES_SLOT as u64,
        "bytes of run-time-length accesses",
    ),
    uint("MAX_SITES", MAX_SITES as u64, ""),
    uint("MAX_MODULE_SITES", MAX_MODULE_SITES as u64, ""),
    uint("LIMBO", LIMBO as u64, "site base of an unregistered module"),
    uint(
        "SLOTS",
        SLOTS as u64,
        "u64 slots of one thread's counter array",
    ),
    Section("Module descriptor"),
    uint("ABI_VERSION", ABI_VERSION as u64, ""),
    uint(
        "FLAG_SHARING",
        FLAG_SHARING as u64,
        "the module reads the line shadow",
    ),
    uint(
        "FLAG_NUMA",
        FLAG_NUMA as u64,
        "the module reads the page shadow",
    ),
    uint(
        "MAX_HOMES",
        MAX_HOMES as u64,
        "page homes: entries 1..=MAX_HOMES",
    ),
    uint(
        "NUMA_SLOTS",
        NUMA_SLOTS as u64,
        "slots of a thread's page cache",
    ),
    hex("NUMA_NO_PAGE", NUMA_NO_PAGE, "a cache slot holding no page"),
    int("NUMA_SLOT_BITS", NUMA_SLOT_BITS as u64, ""),
    hex(
        "NUMA_SLOT_HASH",
        NUMA_SLOT_HASH,
        "Fibonacci hashing of page numbers",
    ),
    Macro(
        "NUMA_SLOT_OF(page)",
        "((uint64_t)((uint64_t)(page) * PROFCC_NUMA_SLOT_HASH) >> (64 - PROFCC_NUMA_SLOT_BITS))",
        "the page cache slot of a page number",
    ),
    int("CTOR_PRIORITY", CTOR_PRIORITY, ""),
    int(
        "ROI_MAX_COUNTERS",
        crate::roi::MAX_COUNTERS as u64,
        "region counters in one module",
    ),
    int(
        "ROI_ARRAYS",
        crate::roi::ARRAYS as u64,
        "a module's region counter arrays per thread (exact, sampled)",
    ),
    int(
        "ROI_PLAIN",
        crate::roi::PLAIN as u64,
        "a region execution that counts nothing",
    ),
    int(
        "ROI_SKIP_WORDS",
        crate::roi::SKIP_WORDS as u64,
        "a thread's skip array (uint64_t): the gate, then the sampled regions' slots",
    ),
];

/// Write the header.
pub fn write_c_header(out: &mut dyn Write) -> Result {
    out.write_str(
        "/* profcc's hook ABI for C: GENERATED from the profcc-abi crate (abi/src/header.rs).\n",
    )?;
    writeln!(out, " * Do not edit; regenerate with `{REGENERATE}`. */")?;
    out.write_str("#ifndef PROFCC_ABI_H\n#define PROFCC_ABI_H\n\n#include <stdint.h>\n")?;
    for item in ITEMS {
        match *item {
            Section(title) => writeln!(out, "\n/* {title} */")?,
            Def(name, v, suffix, is_hex, comment) => {
                if is_hex {
                    write!(out, "#define PROFCC_{name} {v:#x}{suffix}")?;
                } else {
                    write!(out, "#define PROFCC_{name} {v}{suffix}")?;
                }
                end_line(out, comment)?;
            }
            Macro(name, body, comment) => {
                write!(out, "#define PROFCC_{name} {body}")?;
                end_line(out, comment)?;
            }
        }
    }
    out.write_str("\n#endif /* PROFCC_ABI_H */\n")
}

fn end_line(out: &mut dyn Write, comment: &str) -> Result {
    if !comment.is_empty() {
        write!(out, " /* {comment} */")?;
    }
    out.write_str("\n")
}
