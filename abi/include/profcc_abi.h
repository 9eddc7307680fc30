/* profcc's hook ABI for C: GENERATED from the profcc-abi crate (abi/src/header.rs).
 * Do not edit; regenerate with `UPDATE_ABI_HEADER=1 cargo test -p profcc-abi`. */
#ifndef PROFCC_ABI_H
#define PROFCC_ABI_H

#include <stdint.h>

/* Address map (profcc-abi: abi/src/lib.rs) */
#define PROFCC_APP_BITS 47 /* user space is [0, 1 << APP_BITS) */
#define PROFCC_APP_LIMIT 0x800000000000ull
#define PROFCC_LINE_SHIFT 6 /* 64-byte cache lines */
#define PROFCC_SHADOW_WORD_SHIFT 3 /* 8-byte shadow words */
#define PROFCC_LINE_SHADOW 0x100000000000ull /* 16 TiB: one word per line */
#define PROFCC_LINE_SHADOW_SIZE 0x100000000000ull
#define PROFCC_LINE_SHADOW_OF(a) (PROFCC_LINE_SHADOW + (((uint64_t)(a) >> PROFCC_LINE_SHIFT) << PROFCC_SHADOW_WORD_SHIFT)) /* address of the shadow word of the line holding a */
#define PROFCC_PAGE_SHIFT 12 /* 4 KiB pages */
#define PROFCC_PAGE_ENTRY_SHIFT 5 /* 32-byte page records */
#define PROFCC_PAGE_SHADOW 0x200000000000ull /* 1 TiB: one record per page */
#define PROFCC_PAGE_SHADOW_SIZE 0x10000000000ull
#define PROFCC_START_SHIFT 4 /* 16-byte granules */
#define PROFCC_START_SHADOW 0x210000000000ull /* 32 TiB: a start word per granule */
#define PROFCC_START_SHADOW_SIZE 0x200000000000ull
#define PROFCC_START_SPREAD 256 /* granules whose start words are spread over 16 shadow lines */

/* A heap block's start word */
#define PROFCC_START_SIZE_BITS 12 /* bits 0-11: size */
#define PROFCC_START_HALF 0x1000ull /* the block starts at the granule's byte 8 */
#define PROFCC_START_SITE_SHIFT 13 /* the allocation site's index */
#define PROFCC_START_SITES 0x80000ull /* sites from here have no start word */
#define PROFCC_START_SHADOW_OF(a) (PROFCC_START_SHADOW + (((((uint64_t)(a) >> PROFCC_START_SHIFT) & ~(uint64_t)(PROFCC_START_SPREAD - 1)) | (uint8_t)((uint8_t)((uint64_t)(a) >> PROFCC_START_SHIFT) << 4 | (uint8_t)((uint64_t)(a) >> PROFCC_START_SHIFT) >> 4)) << 2)) /* address of the start word of the granule holding a (start_shadow: spread over 16 shadow lines per 256 granules) */
#define PROFCC_START_WORD(a, n, site) ((uint32_t)(site) << PROFCC_START_SITE_SHIFT | (uint32_t)(((uint64_t)(a) & 8) << (PROFCC_START_SIZE_BITS - 3)) | (uint32_t)(n)) /* the start word of an n-byte block at a of site (start_word) */
#define PROFCC_START_SIZE(w) ((w) & (PROFCC_START_HALF - 1)) /* the size of start word w's block (start_block) */
#define PROFCC_START_SITE(w) ((uint32_t)(w) >> PROFCC_START_SITE_SHIFT) /* the allocation site of start word w's block (start_block) */
#define PROFCC_START_AT(w, a) ((((w) & PROFCC_START_HALF) != 0) == (((uint64_t)(a) & 8) != 0)) /* whether start word w (nonzero) is the block starting at a (start_block) */

/* The line's shadow word */
#define PROFCC_HOT 0x8000000000000000ull /* tracked line: the rest is its record index */
#define PROFCC_RETIRED 0x4000000000000000ull
#define PROFCC_FIELD_SHIFT 48
#define PROFCC_FIELD 0x3fffull
#define PROFCC_FREED 0x3ffeull /* a retired line's field: its owner freed the block on it (ShadowWord::freed) */
#define PROFCC_FREED_WORD(me) ((uint64_t)(me) | PROFCC_RETIRED | PROFCC_FREED << PROFCC_FIELD_SHIFT) /* the word a free leaves on a line its owner word me wrote last (ShadowWord::freed) */
#define PROFCC_READERS 0xffffffff0000ull /* reader mask */
#define PROFCC_OWNER 0xffffull /* last writer's id+1 */
#define PROFCC_WRITE_MASK 0x8000ffffffffffffull /* a write leaves at once when (word & WRITE_MASK) == owner word */

/* The `info` argument of the sharing hooks */
#define PROFCC_INFO_SIZE_MASK 0xffull /* access size, capped at 255 */
#define PROFCC_INFO_WRITE 0x100ull
#define PROFCC_INFO_SAMPLED_SHIFT 9 /* set by the door */
#define PROFCC_INFO_SAMPLED 0x200ull
#define PROFCC_INFO_ATOMIC 0x400ull
#define PROFCC_INFO_EXTRA_READS_SHIFT 12
#define PROFCC_INFO_EXTRA_WRITES_SHIFT 18
#define PROFCC_INFO_EXTRA_MAX 63
#define PROFCC_INFO_SITE_SHIFT 24 /* site - group leader */
#define PROFCC_PACKED_DISTANCE_SHIFT 20 /* packed write checker: leader | distance << this */
#define PROFCC_PACKED_EXTRA_READS_SHIFT 26 /* | extra reads << this */
#define PROFCC_PACKED_EXTRA_WRITES_SHIFT 29 /* | extra writes << this */
#define PROFCC_MERGED_SHIFT 20 /* merged checker: first site | members << this */
#define PROFCC_MERGED_FIELD_BITS 3 /* a member: write | log2(size) << 1 */

/* Counter arrays */
#define PROFCC_COUNTER_STRIDE 2 /* u64 slots per site */
#define PROFCC_COUNT_SLOT 0 /* executions */
#define PROFCC_BYTES_SLOT 1 /* bytes of run-time-length accesses */
#define PROFCC_MAX_SITES 4194304u
#define PROFCC_MAX_MODULE_SITES 1048576u
#define PROFCC_LIMBO 4194304u /* site base of an unregistered module */
#define PROFCC_SLOTS 10485760u /* u64 slots of one thread's counter array */

/* Module descriptor */
#define PROFCC_ABI_VERSION 8u
#define PROFCC_FLAG_SHARING 1u /* the module reads the line shadow */
#define PROFCC_FLAG_NUMA 2u /* the module reads the page shadow */
#define PROFCC_MAX_HOMES 1024u /* page homes: entries 1..=MAX_HOMES */
#define PROFCC_NUMA_SLOTS 256u /* slots of a thread's page cache */
#define PROFCC_NUMA_NO_PAGE 0x0ull /* a cache slot holding no page */
#define PROFCC_NUMA_SLOT_BITS 8
#define PROFCC_NUMA_SLOT_HASH 0x9e3779b97f4a7c15ull /* Fibonacci hashing of page numbers */
#define PROFCC_NUMA_SLOT_OF(page) ((uint64_t)((uint64_t)(page) * PROFCC_NUMA_SLOT_HASH) >> (64 - PROFCC_NUMA_SLOT_BITS)) /* the page cache slot of a page number */
#define PROFCC_CTOR_PRIORITY 1
#define PROFCC_ROI_MAX_COUNTERS 1048576 /* region counters in one module */
#define PROFCC_ROI_ARRAYS 2 /* a module's region counter arrays per thread (exact, sampled) */
#define PROFCC_ROI_PLAIN 0 /* a region execution that counts nothing */
#define PROFCC_ROI_SKIP_WORDS 16 /* a thread's skip array (uint64_t): the gate, then the sampled regions' slots */

#endif /* PROFCC_ABI_H */
