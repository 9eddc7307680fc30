//! The contract between instrumented code and the runtime: one definition of everything the
//! pass (`passes/`), the C hook bodies (`hooks/*.c`) and the runtime (`rt/`) must agree on.
//!
//! The pass and the runtime import it; the C side includes `include/profcc_abi.h`, generated
//! from this crate by [`header::write_c_header`] (a test fails when the committed copy is
//! stale: `UPDATE_ABI_HEADER=1 cargo test -p profcc-abi` rewrites it). A change to anything
//! here that alters what an instrumented object contains or expects bumps [`ABI_VERSION`].
//!
//! # Address map (x86-64 Linux, 47-bit user space)
//!
//! ```text
//! start          end              size     region
//! 0000 0000 0000 - 1000 0000 0000:  16 TiB  APP_LOW      non-PIE executables (0x40_0000), their brk
//!                                                        heap, MAP_32BIT mappings
//! 1000 0000 0000 - 2000 0000 0000:  16 TiB  LINE_SHADOW  8 bytes per 64-byte line of user space;
//!                                                        reserved before any constructor runs
//!                                                        (MAP_NORESERVE | MAP_FIXED_NOREPLACE)
//! 2000 0000 0000 - 2100 0000 0000:   1 TiB  PAGE_SHADOW  a 32-byte record ([`PageRecord`]) per 4 KiB
//!                                                        page of user space, for the NUMA analysis;
//!                                                        reserved with the line shadow when a
//!                                                        module is built with numa
//! 2100 0000 0000 - 4100 0000 0000:  32 TiB  START_SHADOW a u32 per 16-byte granule: the identity of an
//!                                                        unrecorded heap block starting there
//!                                                        ([`start_word`]); reserved when sampling
//!                                                        runs beside a module with access checks
//! 4100 0000 0000 - 8000 0000 0000: ~63 TiB  APP_HIGH     PIE executables (0x55.., 0x56..), mmap,
//!                                                        shared libraries, stacks (0x7f..)
//!
//! line_shadow(a)  = 0x1000_0000_0000 + (a >> 6) * 8     line_of_shadow(s) = (s - 0x1000_0000_0000) / 8 * 64
//! page_shadow(a)  = 0x2000_0000_0000 + (a >> 12) * 32   page_of_shadow(s) = (s - 0x2000_0000_0000) / 32 * 4096
//! start_shadow(a) = 0x2100_0000_0000 + spread(a >> 4) * 4  (spread: [`start_shadow`])
//! ```
//!
//! Invariants (tests/address_map.rs): the regions tile `[0, 2^47)`; the shadow of every address
//! of an application region lies in the shadow region, and maps back to the address's line
//! (page) base; shadow regions are disjoint from each other and from the application regions.
//! Every user address has a shadow, the shadow regions' own included, but nothing reads those:
//! the runtime's memory is not instrumented, and the hooks' door drops addresses at or above
//! [`APP_LIMIT`].
//!
//! # The line's shadow word ([`ShadowWord`])
//!
//! ```text
//! cold:  bit 63 = 0 | bit 62 retired | bits 48-61 field | bits 16-47 reader mask | bits 0-15 owner
//! hot:   bit 63 = 1 | bits 0-62 index of the line's record in the tracked-line table
//! ```
//! - owner: id+1 of the line's last writer (0: never written). Thread ids beyond 65534 wrap.
//! - reader mask: bit 16 + (id+1) % 32 for each thread that accessed the line since its last
//!   write; the writer's own bit is set by its write. With more than 32 threads, threads that
//!   share a bit hide each other's reads of cold lines (tracked lines are exact).
//! - field, cold line: invalidations (bits 48-55) and write-volume samples (56-61) so far;
//!   retired line (tracked once, let go): its table index (0x3fff: table was full).
//!
//! A thread's *owner word* ([`ShadowWord::thread`]) has the layout of a cold word written by
//! that thread and read by nobody else: its id+1 and its own reader bit. The inlined hooks leave
//! at once when a write finds the line's word equal to it, counters masked out
//! ([`ShadowWord::is_fast_write`]), and when a read finds its reader bit set on a cold line
//! ([`ShadowWord::is_fast_read`]); everything else goes through the cold door.
//!
//! # Counter arrays
//!
//! One per thread, [`SLOTS`] u64 words, [`COUNTER_STRIDE`] per site:
//!
//! ```text
//! slot 2*g + COUNT_SLOT    executions of global site g    g in [0, MAX_SITES)                  registered sites
//! slot 2*g + BYTES_SLOT    bytes of run-time-length       g in [LIMBO, LIMBO + MAX_MODULE_SITES) sites of modules
//!                          accesses (memory intrinsics)                                         not registered yet
//! ```
//!
//! # Module descriptor and site records
//!
//! Each instrumented module carries one [`ModuleDesc`] (private constant) that its priority
//! [`CTOR_PRIORITY`] constructor passes to [`names::REGISTER`]; its `sites` are one record
//! stream ([`sites`]: a few bytes per site) compressed by [`lz`], which the runtime expands and
//! decodes into [`SiteDesc`]s once, when the module registers. The module's
//! destructor of the same priority passes it to [`names::UNREGISTER`], so a module that
//! `dlclose` unmaps has its counts and site records folded in (copied) before it goes.
#![no_std]

/// `roi` decodes into vectors (the runtime has an allocator when a module registers).
extern crate alloc;

pub mod header;
pub mod lz;
pub mod roi;
pub mod sites;

// ---- the address map ----

/// User space ends here (47-bit virtual addresses); the door drops addresses at or above it.
pub const APP_BITS: u32 = 47;
pub const APP_LIMIT: u64 = 1 << APP_BITS;
/// Cache lines are `1 << LINE_SHIFT` bytes.
pub const LINE_SHIFT: u32 = 6;
pub const LINE_SIZE: u64 = 1 << LINE_SHIFT;
/// A line's shadow word is `1 << SHADOW_WORD_SHIFT` bytes.
pub const SHADOW_WORD_SHIFT: u32 = 3;
pub const LINE_SHADOW: u64 = 0x1000_0000_0000;
pub const LINE_SHADOW_SIZE: u64 = (APP_LIMIT >> LINE_SHIFT) << SHADOW_WORD_SHIFT;
pub const LINE_SHADOW_END: u64 = LINE_SHADOW + LINE_SHADOW_SIZE;
/// Pages (first-touch owner, NUMA) are `1 << PAGE_SHIFT` bytes.
pub const PAGE_SHIFT: u32 = 12;
/// A page's shadow entry ([`PageRecord`]) is `1 << PAGE_ENTRY_SHIFT` bytes.
pub const PAGE_ENTRY_SHIFT: u32 = 5;
pub const PAGE_SHADOW: u64 = 0x2000_0000_0000;
pub const PAGE_SHADOW_SIZE: u64 = (APP_LIMIT >> PAGE_SHIFT) << PAGE_ENTRY_SHIFT;
pub const PAGE_SHADOW_END: u64 = PAGE_SHADOW + PAGE_SHADOW_SIZE;
/// Heap blocks' starts are tracked per `1 << START_SHIFT`-byte granule.
pub const START_SHIFT: u32 = 4;
pub const START_SHADOW: u64 = PAGE_SHADOW_END;
pub const START_SHADOW_SIZE: u64 = (APP_LIMIT >> START_SHIFT) << 2;
pub const START_SHADOW_END: u64 = START_SHADOW + START_SHADOW_SIZE;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegionKind {
    /// The program's memory: every address here may be accessed by instrumented code.
    App,
    LineShadow,
    PageShadow,
    StartShadow,
}

/// One region of the address map: `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub name: &'static str,
    pub kind: RegionKind,
    pub start: u64,
    pub end: u64,
}

/// The whole address map, in address order; the regions tile `[0, APP_LIMIT)`.
pub const REGIONS: [Region; 5] = [
    Region {
        name: "app (low)",
        kind: RegionKind::App,
        start: 0,
        end: LINE_SHADOW,
    },
    Region {
        name: "line shadow",
        kind: RegionKind::LineShadow,
        start: LINE_SHADOW,
        end: LINE_SHADOW_END,
    },
    Region {
        name: "page shadow",
        kind: RegionKind::PageShadow,
        start: PAGE_SHADOW,
        end: PAGE_SHADOW_END,
    },
    Region {
        name: "start shadow",
        kind: RegionKind::StartShadow,
        start: START_SHADOW,
        end: START_SHADOW_END,
    },
    Region {
        name: "app (high)",
        kind: RegionKind::App,
        start: START_SHADOW_END,
        end: APP_LIMIT,
    },
];

/// Address of the shadow word of the line holding `addr` (`addr < APP_LIMIT`).
#[inline(always)]
pub const fn line_shadow(addr: u64) -> u64 {
    LINE_SHADOW + ((addr >> LINE_SHIFT) << SHADOW_WORD_SHIFT)
}

/// The first byte of the line whose shadow word is at `shadow` (inverse of [`line_shadow`]).
#[inline]
pub const fn line_of_shadow(shadow: u64) -> u64 {
    ((shadow - LINE_SHADOW) >> SHADOW_WORD_SHIFT) << LINE_SHIFT
}

/// Address of the shadow entry of the page holding `addr` (`addr < APP_LIMIT`).
#[inline(always)]
pub const fn page_shadow(addr: u64) -> u64 {
    PAGE_SHADOW + ((addr >> PAGE_SHIFT) << PAGE_ENTRY_SHIFT)
}

/// The first byte of the page whose shadow entry is at `shadow` (inverse of [`page_shadow`]).
#[inline]
pub const fn page_of_shadow(shadow: u64) -> u64 {
    ((shadow - PAGE_SHADOW) >> PAGE_ENTRY_SHIFT) << PAGE_SHIFT
}

/// Start words are spread over their shadow lines: within each `START_SPREAD`-granule group
/// (4 KiB of user space, 1 KiB of shadow), the granule's low 4 bits pick the shadow line and
/// the next 4 bits the word in it (the granule number's low byte rotated by 4), so neighbouring granules' words lie on different shadow
/// lines and the 16 words of one shadow line are 256 user bytes apart. Two threads'
/// neighbouring small blocks (an allocator handing out a row of them, cache-scratch's shape)
/// then write their start words without passing a shadow line between their cores; with
/// words in address order, a 64-byte shadow line covered 256 user bytes.
pub const START_SPREAD: u64 = 256;

/// Address of the start word of the 16-byte granule holding `addr` (`addr < APP_LIMIT`).
#[inline(always)]
pub const fn start_shadow(addr: u64) -> u64 {
    let g = addr >> START_SHIFT;
    // The low byte's two nibbles swapped: one `rol` of a byte register.
    let spread = (g & !(START_SPREAD - 1)) | (g as u8).rotate_left(4) as u64;
    START_SHADOW + (spread << 2)
}

// ---- a heap block's start word ----

/// The start word of an unrecorded heap block (one the allocation path did not put in the
/// object map while sampling runs beside the sharing or NUMA analysis): what names the block
/// when one of its lines or pages needs it, written by the allocation and cleared by the free.
///
/// ```text
/// bits 13-31 allocation site index | bit 12 block starts at the granule's byte 8 | bits 0-11 size
/// ```
/// Only blocks under `1 << START_SIZE_BITS` bytes get one; a word of 0 is none.
pub const START_SIZE_BITS: u32 = 12;
pub const START_HALF: u32 = 1 << START_SIZE_BITS;
pub const START_SITE_SHIFT: u32 = START_SIZE_BITS + 1;
/// Sites at or past this index cannot be named by a start word.
pub const START_SITES: u32 = 1 << (32 - START_SITE_SHIFT);

/// The start word of a block of `size` bytes (`< 1 << START_SIZE_BITS`) at `addr` of `site`
/// (`< START_SITES`).
#[inline(always)]
pub const fn start_word(addr: u64, size: u64, site: u32) -> u32 {
    site << START_SITE_SHIFT | ((addr as u32 & 8) << (START_SIZE_BITS - 3)) | size as u32
}

/// The block a start word at the granule of `granule_base` describes: (start, size, site).
#[inline]
pub const fn start_block(granule_base: u64, w: u32) -> (u64, u64, u32) {
    let start = granule_base + if w & START_HALF != 0 { 8 } else { 0 };
    (start, (w & (START_HALF - 1)) as u64, w >> START_SITE_SHIFT)
}

// ---- the line's shadow word ----

/// A line's shadow word (layout in the crate documentation). Also the layout of a thread's
/// owner word ([`ShadowWord::thread`]), which the write hook compares with the line's word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct ShadowWord(pub u64);

impl ShadowWord {
    /// The line is tracked; the other bits are its record's index.
    pub const HOT: u64 = 1 << 63;
    /// Cold line that was tracked once; the field is its record's index.
    pub const RETIRED: u64 = 1 << 62;
    pub const FIELD_SHIFT: u32 = 48;
    pub const FIELD: u64 = 0x3fff;
    /// A retired line's field when the table had no room for its record.
    pub const NO_RECORD: u64 = 0x3fff;
    /// A retired line's field when its owner freed the heap block on it ([`ShadowWord::freed`]).
    /// Record indices stay below it (`fs_max_lines` at most this).
    pub const FREED: u64 = Self::NO_RECORD - 1;
    /// In a cold line's field: invalidations in bits 0-7, volume samples above.
    pub const INVALIDATIONS_MAX: u64 = 0xff;
    pub const VOLUME_SHIFT: u32 = 8;
    pub const VOLUME_MAX: u64 = 63;
    pub const READER_SHIFT: u32 = 16;
    /// Reader bits: threads beyond this share bits.
    pub const READER_BITS: u32 = 32;
    pub const READERS: u64 = 0xffff_ffff << Self::READER_SHIFT;
    pub const OWNER: u64 = 0xffff;
    /// What the write hook compares with the thread's owner word: a retired line's field and
    /// flag do not slow its owner down.
    pub const WRITE_MASK: u64 = Self::HOT | Self::READERS | Self::OWNER;

    /// The owner word of the thread with dense id `id`: id+1 (wrapping beyond 65534) and its
    /// reader bit.
    #[inline]
    pub const fn thread(id: u32) -> ShadowWord {
        let t = (id as u64 % Self::OWNER) + 1;
        ShadowWord(t | Self::reader_bit(t))
    }

    /// The reader bit of owner `t` (id+1).
    #[inline]
    pub const fn reader_bit(t: u64) -> u64 {
        1 << (Self::READER_SHIFT as u64 + t % Self::READER_BITS as u64)
    }

    /// A tracked line whose record is `index`.
    #[inline]
    pub const fn hot(index: u64) -> ShadowWord {
        ShadowWord(Self::HOT | index)
    }

    /// A cold line last written by the thread with owner word `me`, read by nobody since, with
    /// its counters (at most `INVALIDATIONS_MAX` and `VOLUME_MAX`: the caller caps them).
    #[inline]
    pub const fn cold(me: u64, invalidations: u64, volume: u64) -> ShadowWord {
        ShadowWord(me | ((invalidations | (volume << Self::VOLUME_SHIFT)) << Self::FIELD_SHIFT))
    }

    /// A retired line last written by `me`, its record `index` (or `NO_RECORD`).
    #[inline]
    pub const fn retired(me: u64, index: u64) -> ShadowWord {
        ShadowWord(me | (Self::RETIRED | (index << Self::FIELD_SHIFT)))
    }

    /// The word a free leaves on a line whose last writer, `me`, frees the block on it and
    /// nobody accessed since: its owner's writes stay fast (a thread reusing its own block
    /// keeps its fast path and never passes the word's shadow line to another core), and the
    /// sharing analysis treats it as a line nobody accessed (no owner, no counters) for any
    /// other thread, so nothing of the old lifetime counts against the next.
    #[inline]
    pub const fn freed(me: u64) -> ShadowWord {
        Self::retired(me, Self::FREED)
    }

    /// A word left by [`ShadowWord::freed`] (readers may have come since).
    #[inline]
    pub const fn is_freed(self) -> bool {
        self.is_retired() && !self.is_hot() && self.field() == Self::FREED
    }

    #[inline]
    pub const fn is_hot(self) -> bool {
        self.0 & Self::HOT != 0
    }

    /// A hot line's record index.
    #[inline]
    pub const fn hot_index(self) -> u64 {
        self.0 & !Self::HOT
    }

    #[inline]
    pub const fn is_retired(self) -> bool {
        self.0 & Self::RETIRED != 0
    }

    /// A cold line's field: counters, or a retired line's record index.
    #[inline]
    pub const fn field(self) -> u64 {
        (self.0 >> Self::FIELD_SHIFT) & Self::FIELD
    }

    /// Invalidations counted on a cold line (not retired).
    #[inline]
    pub const fn invalidations(self) -> u64 {
        self.field() & Self::INVALIDATIONS_MAX
    }

    /// Write-volume samples counted on a cold line (not retired).
    #[inline]
    pub const fn volume_samples(self) -> u64 {
        self.field() >> Self::VOLUME_SHIFT
    }

    /// id+1 of the last writer (0: never written); of a cold word or an owner word.
    #[inline]
    pub const fn owner(self) -> u64 {
        self.0 & Self::OWNER
    }

    /// The reader mask, in place (bits 16-47).
    #[inline]
    pub const fn readers(self) -> u64 {
        self.0 & Self::READERS
    }

    /// The line's record in the tracked-line table, if it has one: a hot line's, or a retired
    /// line's that found room.
    #[inline]
    pub const fn record(self) -> Option<u64> {
        if self.is_hot() {
            Some(self.hot_index())
        } else if self.is_retired() && self.field() < Self::FREED {
            Some(self.field())
        } else {
            None
        }
    }

    /// A read by the thread with reader bit `rb` needs nothing: the line is cold and the
    /// thread read it since its last write.
    #[inline(always)]
    pub const fn is_fast_read(self, rb: u64) -> bool {
        self.0 & (Self::HOT | rb) == rb
    }

    /// A write by the thread with owner word `me` needs nothing: the line is cold, the thread
    /// wrote it last and nobody read it since.
    #[inline(always)]
    pub const fn is_fast_write(self, me: u64) -> bool {
        self.0 & Self::WRITE_MASK == me
    }
}

// ---- the `info` argument of the sharing hooks ----

/// `info` = size (bits 0-7, capped at 255) | write << 8 | volume sample << 9 (set by the
/// door) | atomic << 10 | extra reads << 12 | extra writes << 18 (6 bits each: the unchecked
/// accesses of the same address this one stands for) | (site - group leader) << 24.
pub const INFO_SIZE_MASK: u64 = 0xff;
pub const INFO_WRITE: u64 = 1 << 8;
pub const INFO_SAMPLED_SHIFT: u32 = 9;
pub const INFO_SAMPLED: u64 = 1 << INFO_SAMPLED_SHIFT;
pub const INFO_ATOMIC: u64 = 1 << 10;
pub const INFO_EXTRA_READS_SHIFT: u32 = 12;
pub const INFO_EXTRA_WRITES_SHIFT: u32 = 18;
/// Most extra reads (and writes) one checked access stands for.
pub const INFO_EXTRA_MAX: u32 = 63;
/// Below 32 so that a write's info with a site distance under 256 is a 32-bit immediate (a
/// 5-byte `mov` at each call instead of a 10-byte `movabs`).
pub const INFO_SITE_SHIFT: u32 = 24;

/// The argument of a packed write checker ([`names::CHECK_WRITE_SIZED`]): its group leader
/// (module-local site, below [`MAX_MODULE_SITES`]) | its distance from it <<
/// `PACKED_DISTANCE_SHIFT` | the extra reads and writes it stands for (a load, add, store
/// checks its store, standing for the load) << `PACKED_EXTRA_READS_SHIFT` and
/// `PACKED_EXTRA_WRITES_SHIFT`, when each fits (one 32-bit immediate at the call: the
/// checker rebuilds the info).
pub const PACKED_DISTANCE_SHIFT: u32 = 20;
pub const PACKED_EXTRA_READS_SHIFT: u32 = 26;
pub const PACKED_EXTRA_WRITES_SHIFT: u32 = 29;
pub const MAX_PACKED_DISTANCE: u64 = 1 << (PACKED_EXTRA_READS_SHIFT - PACKED_DISTANCE_SHIFT);
pub const MAX_PACKED_EXTRA: u64 = 1 << (32 - PACKED_EXTRA_WRITES_SHIFT);
const _: () = assert!(MAX_MODULE_SITES <= 1 << PACKED_DISTANCE_SHIFT);
const _: () =
    assert!(PACKED_EXTRA_WRITES_SHIFT - PACKED_EXTRA_READS_SHIFT == 32 - PACKED_EXTRA_WRITES_SHIFT);

/// [`PACKED_DISTANCE_SHIFT`]'s packing, or None when the distance or an extra count does not
/// fit.
pub const fn packed_write_site(
    leader: u64,
    distance: u64,
    extra_reads: u64,
    extra_writes: u64,
) -> Option<u64> {
    if distance < MAX_PACKED_DISTANCE
        && leader < MAX_MODULE_SITES as u64
        && extra_reads < MAX_PACKED_EXTRA
        && extra_writes < MAX_PACKED_EXTRA
    {
        Some(
            leader
                | distance << PACKED_DISTANCE_SHIFT
                | extra_reads << PACKED_EXTRA_READS_SHIFT
                | extra_writes << PACKED_EXTRA_WRITES_SHIFT,
        )
    } else {
        None
    }
}

/// The last argument of a merged checker ([`names::CHECK_MERGED`]): one call checks two to
/// four plain accesses of one epoch with consecutive sites (the addresses are its first
/// arguments, in access order). `first | member_0 << MERGED_SHIFT | member_1 <<
/// (MERGED_SHIFT + 3) | ... | (first - leader) << (MERGED_SHIFT + 3 * members)`: the first
/// member's module-local site, then each member's `write | log2(size) << 1`
/// ([`MERGED_FIELD_BITS`] bits), then the first member's distance from its group leader (a
/// write's door slot is its leader's counter). Below 2^32 (a 5-byte `mov` at the call)
/// unless that distance is large.
pub const MERGED_SHIFT: u32 = 20;
pub const MERGED_FIELD_BITS: u32 = 3;
const _: () = assert!(MAX_MODULE_SITES <= 1 << MERGED_SHIFT);

/// [`MERGED_SHIFT`]'s packing of `(write, size)` members, or None when a size is not 1, 2,
/// 4 or 8 or there are not two to four members.
pub fn merged_checker_arg(
    first: u64,
    leader_distance: u64,
    members: &[(bool, u64)],
) -> Option<u64> {
    if !(2..=4).contains(&members.len()) || first >= MAX_MODULE_SITES as u64 {
        return None;
    }
    let mut x = first;
    let mut shift = MERGED_SHIFT;
    for &(write, size) in members {
        if !matches!(size, 1 | 2 | 4 | 8) {
            return None;
        }
        x |= (write as u64 | (size.trailing_zeros() as u64) << 1) << shift;
        shift += MERGED_FIELD_BITS;
    }
    if leader_distance >= 1 << (64 - shift) {
        return None;
    }
    Some(x | leader_distance << shift)
}

// ---- counter arrays ----

/// u64 slots per site in a thread's counter array.
pub const COUNTER_STRIDE: usize = 2;
/// Executions of the site (fixed-size sites: bytes are count x size).
pub const COUNT_SLOT: usize = 0;
/// Bytes of a run-time-length access (memory intrinsics).
pub const BYTES_SLOT: usize = 1;
/// Global site ids of registered modules: `[0, MAX_SITES)`.
pub const MAX_SITES: u32 = 1 << 22;
/// Most sites one module may have; further accesses are skipped with a counted reason.
pub const MAX_MODULE_SITES: u32 = 1 << 20;
/// Site base of a module that has not registered yet: its counts land in
/// `[LIMBO, LIMBO + MAX_MODULE_SITES)` and are reported as unattributed.
pub const LIMBO: u32 = MAX_SITES;
/// u64 slots of one thread's counter array.
pub const SLOTS: usize = COUNTER_STRIDE * (MAX_SITES + MAX_MODULE_SITES) as usize;

// ---- the module descriptor ----

/// 5: `ModuleDesc::wrappers` (the module's allocation wrappers). 6: the site table is a
/// record stream ([`sites`], compressed by [`lz`]), `ModuleDesc::sites_bytes` and
/// `sites_raw_bytes` its lengths; `INFO_SITE_SHIFT` 24. 7: the NUMA hook counts in a
/// per-thread page cache (`NUMA_SLOTS`), its door `__profcc_page_miss`; 32-byte page records.
/// 8: page counts outside short loops call `__profcc_numa_check`, whose door is
/// `__profcc_page_miss_at` (preserve_most, the access's address passed).
pub const ABI_VERSION: u32 = 8;
/// Module descriptor flag: the module's accesses read the line shadow.
pub const FLAG_SHARING: u32 = 1;
/// Module descriptor flag: the module's accesses are counted per page (NUMA analysis,
/// `PROFCC_INSTRUMENT=numa`; docs/numa.md).
pub const FLAG_NUMA: u32 = 2;
/// Page homes (NUMA analysis): a page record's home is 0 (untouched) or a home in
/// `1..=MAX_HOMES`; each thread counts its accesses in a row of `MAX_HOMES + 1` u64 indexed
/// by the home. Home `MAX_HOMES` also stands for "no home" (the analysis off, or a thread
/// beyond the last home).
pub const MAX_HOMES: u32 = 1024;

/// A page's record in the page shadow (NUMA analysis; written by the runtime only, never by
/// the hook). Zero: a page nobody touched.
#[repr(C)]
#[derive(Debug, Default)]
pub struct PageRecord {
    /// The page's home, `1..=MAX_HOMES` (0: untouched), in bits 0-10 ([`PageRecord::home`]);
    /// index + 1 of the first touch's place in the runtime's table (0: none) in bits 11-23
    /// ([`PageRecord::place`]); [`PageRecord::PINNED`] when a policy bound the page to its node
    /// (`MPOL_BIND`, `move_pages`), [`PageRecord::REUSED`] once a heap block holding it was
    /// freed. One word, so that a first touch claims the page with one compare-and-swap
    /// whatever flags a policy set before it.
    pub state: core::sync::atomic::AtomicU32,
    /// Id + 1 of the thread that touched it first (0: a thread the runtime did not know).
    pub toucher: core::sync::atomic::AtomicU32,
    /// Id + 1 of the one thread other than the first toucher that used the page (set at its
    /// first access, in the door), or [`PageRecord::SEVERAL`] (0: none: only the toucher, or
    /// nobody yet).
    pub accessor: core::sync::atomic::AtomicU32,
    /// The first toucher's accesses counted on the page once another thread had used it,
    /// twice, less the other threads' accesses (added when a cache slot is flushed, so a
    /// toucher's slot that held the page across the other thread's arrival counts whole as
    /// before; saturating): above 0 when the toucher kept making at least a third of the
    /// accesses after the other came (two threads that keep using a page), below when that
    /// thread took it over. Independent of when the other came.
    pub balance: core::sync::atomic::AtomicI32,
    /// Accesses counted on the page, and of those the ones made by threads of another home.
    pub accesses: core::sync::atomic::AtomicU64,
    pub remote: core::sync::atomic::AtomicU64,
}

impl PageRecord {
    /// `accessor` when more than one thread's accesses were counted.
    pub const SEVERAL: u32 = u32::MAX;
    /// The bits of `state` that hold the home.
    pub const HOME_MASK: u32 = (1 << 11) - 1;
    /// The first bit of `state` that holds the place's index + 1 (13 bits).
    pub const PLACE_SHIFT: u32 = 11;
    pub const PLACE_MASK: u32 = ((1 << 13) - 1) << Self::PLACE_SHIFT;
    /// The most places a record can name (index + 1 fits in 13 bits).
    pub const MAX_PLACES: u32 = (1 << 13) - 1;
    /// The bit of `state` that says a policy bound the page to its node.
    pub const PINNED: u32 = 1 << 31;
    /// The bit of `state` that says a freed heap block held the page: it keeps its home, so
    /// the next block there is placed by an earlier lifetime's first touch (a reused page).
    pub const REUSED: u32 = 1 << 30;

    /// The page's home (0: untouched).
    #[inline]
    pub fn home(&self) -> u32 {
        self.state.load(core::sync::atomic::Ordering::Relaxed) & Self::HOME_MASK
    }
    /// Index + 1 of its first touch's place (0: none).
    #[inline]
    pub fn place(&self) -> u32 {
        (self.state.load(core::sync::atomic::Ordering::Relaxed) & Self::PLACE_MASK)
            >> Self::PLACE_SHIFT
    }
    /// Whether flag `f` ([`PageRecord::PINNED`], [`PageRecord::REUSED`]) is set.
    #[inline]
    pub fn has(&self, f: u32) -> bool {
        self.state.load(core::sync::atomic::Ordering::Relaxed) & f != 0
    }
    /// Set flag `f`.
    #[inline]
    pub fn set(&self, f: u32) {
        self.state
            .fetch_or(f, core::sync::atomic::Ordering::Relaxed);
    }
    /// Name the place (index + 1, at most [`PageRecord::MAX_PLACES`]) of a page without one.
    #[inline]
    pub fn set_place(&self, place: u32) {
        self.set((place.min(Self::MAX_PLACES) << Self::PLACE_SHIFT) & Self::PLACE_MASK);
    }
    /// Give an untouched page `home` (`1..=MAX_HOMES`), keeping its flags: Ok if this call
    /// did, else the home it has.
    #[inline]
    pub fn claim(&self, home: u32) -> Result<(), u32> {
        use core::sync::atomic::Ordering::Relaxed;
        let mut w = self.state.load(Relaxed);
        loop {
            if w & Self::HOME_MASK != 0 {
                return Err(w & Self::HOME_MASK);
            }
            match self.state.compare_exchange_weak(
                w,
                w | (home & Self::HOME_MASK),
                Relaxed,
                Relaxed,
            ) {
                Ok(_) => return Ok(()),
                Err(x) => w = x,
            }
        }
    }
    /// Set the home of a page (a `move_pages`), keeping its place and flags: its old home.
    #[inline]
    pub fn move_home(&self, home: u32) -> u32 {
        use core::sync::atomic::Ordering::Relaxed;
        let old = self
            .state
            .fetch_update(Relaxed, Relaxed, |w| {
                Some((w & !Self::HOME_MASK) | (home & Self::HOME_MASK))
            })
            .unwrap_or(0);
        old & Self::HOME_MASK
    }
    /// Add `d` to [`PageRecord::balance`], saturating (the toucher adds twice its accesses
    /// since another thread came, the others subtract theirs; both may run at once).
    #[inline]
    pub fn add_balance(&self, d: i64) {
        use core::sync::atomic::Ordering::Relaxed;
        let _ = self.balance.fetch_update(Relaxed, Relaxed, |b| {
            Some((b as i64 + d).clamp(i32::MIN as i64, i32::MAX as i64) as i32)
        });
    }
}

const _: () = assert!(core::mem::size_of::<PageRecord>() == 1 << PAGE_ENTRY_SHIFT);
const _: () = assert!(MAX_HOMES <= PageRecord::HOME_MASK);

/// Pages (of `1 << PAGE_SHIFT` bytes) in a transparent huge page: 2 MiB on x86-64. The NUMA
/// analysis's `real` model recognises them (docs/numa.md, "Huge pages").
pub const HUGE_PAGE_PAGES: u64 = 512;

/// Slots of a thread's page cache (NUMA hook): slot [`numa_slot`]`(page)` holds the page number
/// of the page it counts (`NUMA_NO_PAGE`: none) and the accesses not yet added to its record.
pub const NUMA_SLOT_BITS: u32 = 8;
pub const NUMA_SLOTS: u32 = 1 << NUMA_SLOT_BITS;
/// The slot's hash multiplier (Fibonacci hashing: 2^64 / the golden ratio). A page number's
/// low bits alone would put the same element of arrays that lie a multiple of 64 pages apart
/// (2 MiB-aligned blocks) in one slot, and a loop over both would miss on every access.
pub const NUMA_SLOT_HASH: u64 = 0x9E37_79B9_7F4A_7C15;

/// The page cache slot of page number `page` (hooks/numa.c computes the same).
#[inline(always)]
pub const fn numa_slot(page: u64) -> usize {
    (page.wrapping_mul(NUMA_SLOT_HASH) >> (64 - NUMA_SLOT_BITS)) as usize
}
/// A cache slot's page number when it holds no page: page 0, which no access reaches (the
/// kernel never maps the first page, `vm.mmap_min_addr`), so a zeroed cache holds no page.
pub const NUMA_NO_PAGE: u64 = 0;
/// Constructor priority: before C++ static constructors (65535) so the runtime's `atexit`
/// runs after their destructors.
pub const CTOR_PRIORITY: u64 = 1;

/// What an instrumented module passes to `__profcc_register_module`.
#[repr(C)]
pub struct ModuleDesc {
    pub abi_version: u32,
    pub nsites: u32,
    /// `nsites` records encoded by [`sites::SiteWriter`] (`sites_raw_bytes` bytes), compressed
    /// by [`lz::compress`] (`sites_bytes` bytes).
    pub sites: *const u8,
    /// NUL-separated strings; offsets in [`SiteDesc`] point into it.
    pub strings: *const u8,
    /// The module's first global site id, `LIMBO` until the runtime assigns it.
    pub site_base: *mut u32,
    /// `FLAG_*` bits.
    pub flags: u32,
    /// String offset of the module's allocation wrappers (functions that only call an
    /// allocator, or another wrapper, and return the block): their linkage names separated by
    /// [`WRAPPER_SEPARATOR`]; `NO_STRING` when it has none.
    pub wrappers: u32,
    /// Length of `sites` in bytes.
    pub sites_bytes: u32,
    /// Length of the record stream `sites` expands to.
    pub sites_raw_bytes: u32,
}

/// Separates the names in [`ModuleDesc::wrappers`] (no linkage name contains it).
pub const WRAPPER_SEPARATOR: char = ' ';

/// A string offset for "none" (e.g. not inlined).
pub const NO_STRING: u32 = u32::MAX;

/// One access site: what the pass encodes ([`sites::SiteWriter`]) and the runtime decodes
/// ([`sites::SiteReader`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SiteDesc {
    /// String offsets: file, function.
    pub file: u32,
    pub line: u32,
    pub col: u32,
    pub func: u32,
    /// The outermost inlined-at call (the call in the function the code now lives in): its
    /// file's string offset (`NO_STRING`: not inlined) and line.
    pub inlined_file: u32,
    pub inlined_line: u32,
    /// Bytes accessed (0: run-time length, counted per access).
    pub size: u16,
    /// An [`AccessKind`].
    pub kind: u8,
    pub pad: u8,
    /// The module-local site whose counter this one shares (the first access of its group;
    /// itself for a site with its own counter). Sites of one group execute equally often.
    pub leader: u32,
}

/// `SiteDesc::kind`.
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
    pub const ALL: [AccessKind; 5] = [
        AccessKind::Read,
        AccessKind::Write,
        AccessKind::Atomic,
        AccessKind::CopyRead,
        AccessKind::CopyWrite,
    ];

    /// Does the access write memory (stores, atomics, memcpy/memset destinations)?
    pub const fn writes(self) -> bool {
        matches!(
            self,
            AccessKind::Write | AccessKind::Atomic | AccessKind::CopyWrite
        )
    }

    pub const fn from_code(code: u8) -> Option<AccessKind> {
        match code {
            0 => Some(AccessKind::Read),
            1 => Some(AccessKind::Write),
            2 => Some(AccessKind::Atomic),
            3 => Some(AccessKind::CopyRead),
            4 => Some(AccessKind::CopyWrite),
            _ => None,
        }
    }
}

// ---- names ----

/// Symbol names shared by the pass, the hook bodies and the runtime.
pub mod names {
    /// Defined (weak, hidden, empty) by every module with code built without frame pointers;
    /// the runtime's walker stops at the first frame when it exists (rt/csrc/interpose.c).
    pub const NO_FRAME_POINTERS: &str = "__profcc_no_frame_pointers";
    /// Region markers (include/profcc.h; rt/src/analyses/regions.rs).
    pub const ROI_BEGIN: &str = "__profcc_roi_begin";
    pub const ROI_END: &str = "__profcc_roi_end";
    /// A module's region descriptor ([`crate::roi::RoiDesc`]) registers with it...
    pub const ROI_REGISTER: &str = "__profcc_roi_register";
    /// ...and a function that counts for a region gets the thread's counter array from it
    /// (the exact class's: [`crate::roi::EXACT`]).
    pub const ROI_COUNTERS: &str = "__profcc_roi_counters";
    /// A sampled region's begin: the marker's work and the execution's class
    /// ([`crate::roi::PLAIN`], `EXACT` or `SAMPLED`; docs/regions.md, "Sampling").
    pub const ROI_BEGIN_TAKE: &str = "__profcc_roi_begin_take";
    /// `ROI_BEGIN` and `ROI_END` with a constant name (the pass rewrites those): the runtime
    /// keys the name by its address, as it does the take's.
    pub const ROI_BEGIN_LIT: &str = "__profcc_roi_begin_lit";
    pub const ROI_END_LIT: &str = "__profcc_roi_end_lit";
    /// The thread's counter array of a class (`crate::roi::TEAM`: the class of the region
    /// whose OpenMP team the thread is running in).
    pub const ROI_COUNTERS_OF: &str = "__profcc_roi_counters_of";
    /// A thread's skip array (initial-exec TLS, [`crate::roi::SKIP_WORDS`] `u64`s): a sampled
    /// region's inlined begin reads the gate and its slot, and runs the plain copy without a
    /// call while the slot holds runs armed for it and the gate is open.
    pub const ROI_SKIP: &str = "__profcc_roi_skip";
    /// A thread's call word (initial-exec TLS `u64`; docs/regions.md, "Sampling inside an
    /// execution"): a clone's prologue runs its counted body at 0, the original function
    /// (taking one off) above 1, and asks [`ROI_CALL`] at 1.
    pub const ROI_CALLS: &str = "__profcc_roi_calls";
    /// `(desc, counters) -> counters`: a call's array (the one given: counted as the
    /// execution; the sampled class's: counted at 1 in N, then [`ROI_CALL_DONE`]) or null
    /// (run the original).
    pub const ROI_CALL: &str = "__profcc_roi_call";
    pub const ROI_CALL_DONE: &str = "__profcc_roi_call_done";
    /// A region begun inside a plain copy (nested in a region running uncounted): counts an
    /// execution and opens nothing (the name is a constant, keyed by address).
    pub const ROI_PLAIN: &str = "__profcc_roi_plain";
    /// Hook bodies (hooks/counting.c, hooks/sharing.c), linked into each module and inlined:
    /// function prologue values, counting-only accesses, and the sharing accesses.
    pub const FN_COUNTERS: &str = "__profcc_fn_counters";
    pub const FN_ME: &str = "__profcc_fn_me";
    pub const FN_RB: &str = "__profcc_fn_rb";
    pub const FN_WMASK: &str = "__profcc_fn_wmask";
    pub const COUNT: &str = "__profcc_count";
    pub const COUNT_N: &str = "__profcc_count_n";
    pub const READ: &str = "__profcc_read";
    pub const WRITE: &str = "__profcc_write";
    /// The write that takes its group's write-volume sample.
    pub const WRITE_SAMPLE: &str = "__profcc_write_s";
    /// The same with a sized read's or packed write's checker on the cold side (its last
    /// argument): no info at the call.
    pub const READ_SIZED: &str = "__profcc_read_k";
    pub const WRITE_PACKED: &str = "__profcc_write_k";
    pub const WRITE_SAMPLE_PACKED: &str = "__profcc_write_s_k";
    pub const RANGE: &str = "__profcc_range";
    pub const RANGE_N: &str = "__profcc_range_n";
    /// The NUMA page count of one access (hooks/numa.c), and of an access and the `n - 1`
    /// accesses to the same address it covers.
    pub const NUMA: &str = "__profcc_numa";
    pub const NUMA_N: &str = "__profcc_numa_n";
    /// A straight-line access's checker (the last argument) called only while more than one
    /// thread runs, by the checker's signature: (address, x), (address, site, info), and the
    /// merged checkers' two to four addresses and x.
    pub const GATE_K: &str = "__profcc_gate_k";
    pub const GATE: &str = "__profcc_gate";
    pub const GATE_MERGED: [&str; 3] = ["__profcc_gate_m2", "__profcc_gate_m3", "__profcc_gate_m4"];
    pub const HOOKS: [&str; 21] = [
        FN_COUNTERS,
        FN_ME,
        FN_RB,
        FN_WMASK,
        COUNT,
        COUNT_N,
        READ,
        WRITE,
        WRITE_SAMPLE,
        READ_SIZED,
        WRITE_PACKED,
        WRITE_SAMPLE_PACKED,
        RANGE,
        RANGE_N,
        NUMA,
        NUMA_N,
        GATE_K,
        GATE,
        GATE_MERGED[0],
        GATE_MERGED[1],
        GATE_MERGED[2],
    ];
    /// Checkers (hooks/sharing.c): the whole check of one access, linked into each module as
    /// internal, never-inlined `preserve_most` functions. Accesses outside loops call them
    /// instead of an inlined hook; the inlined hooks call them on their cold side.
    pub const CHECK_READ: &str = "__profcc_check_read";
    pub const CHECK_WRITE: &str = "__profcc_check_write";
    pub const CHECK_WRITE_SAMPLE: &str = "__profcc_check_write_s";
    /// A read whose info is its size alone, without the info argument: `(size, checker)`.
    pub const CHECK_READ_SIZED: [(u64, &str); 5] = [
        (1, "__profcc_check_read1"),
        (2, "__profcc_check_read2"),
        (4, "__profcc_check_read4"),
        (8, "__profcc_check_read8"),
        (16, "__profcc_check_read16"),
    ];
    /// A plain write whose info is its size and its distance from its group leader alone:
    /// one argument after the address, [`super::packed_write_site`]. `(size, [checker,
    /// sampling checker])`.
    pub const CHECK_WRITE_SIZED: [(u64, [&str; 2]); 5] = [
        (1, ["__profcc_check_write1", "__profcc_check_write1_s"]),
        (2, ["__profcc_check_write2", "__profcc_check_write2_s"]),
        (4, ["__profcc_check_write4", "__profcc_check_write4_s"]),
        (8, ["__profcc_check_write8", "__profcc_check_write8_s"]),
        (16, ["__profcc_check_write16", "__profcc_check_write16_s"]),
    ];
    /// Two to four plain accesses of one epoch checked by one call (addresses, then
    /// [`super::merged_checker_arg`]): `(members, sampling member or -1, checker)`; the
    /// sampling member is its group's sampling write.
    pub const CHECK_MERGED: [(usize, i32, &str); 12] = [
        (2, -1, "__profcc_check_m2"),
        (2, 0, "__profcc_check_m2_s0"),
        (2, 1, "__profcc_check_m2_s1"),
        (3, -1, "__profcc_check_m3"),
        (3, 0, "__profcc_check_m3_s0"),
        (3, 1, "__profcc_check_m3_s1"),
        (3, 2, "__profcc_check_m3_s2"),
        (4, -1, "__profcc_check_m4"),
        (4, 0, "__profcc_check_m4_s0"),
        (4, 1, "__profcc_check_m4_s1"),
        (4, 2, "__profcc_check_m4_s2"),
        (4, 3, "__profcc_check_m4_s3"),
    ];
    /// The checkers' slow sides (hooks/sharing.c), linked like them (internal, never
    /// inlined, preserve_most) and deleted when unused, in this order: the sized checkers'
    /// doors, then the common one they call.
    pub const CHECKER_DOORS: [&str; 20] = [
        "__profcc_door_read1",
        "__profcc_door_read2",
        "__profcc_door_read4",
        "__profcc_door_read8",
        "__profcc_door_read16",
        "__profcc_door_write1",
        "__profcc_door_write2",
        "__profcc_door_write4",
        "__profcc_door_write8",
        "__profcc_door_write16",
        "__profcc_door_m2_0",
        "__profcc_door_m2_1",
        "__profcc_door_m3_0",
        "__profcc_door_m3_1",
        "__profcc_door_m3_2",
        "__profcc_door_m4_0",
        "__profcc_door_m4_1",
        "__profcc_door_m4_2",
        "__profcc_door_m4_3",
        "__profcc_door",
    ];
    /// The NUMA page count out of line (hooks/numa.c): one access, and one with the `n - 1`
    /// it covers.
    pub const NUMA_CHECK: &str = "__profcc_numa_check";
    pub const NUMA_CHECK_N: &str = "__profcc_numa_check_n";
    pub const CHECKERS: [&str; 32] = {
        let mut all = [""; 32];
        all[0] = CHECK_READ;
        all[1] = CHECK_WRITE;
        all[2] = CHECK_WRITE_SAMPLE;
        let mut n = 3;
        let mut i = 0;
        while i < CHECK_READ_SIZED.len() {
            all[n] = CHECK_READ_SIZED[i].1;
            n += 1;
            i += 1;
        }
        let mut i = 0;
        while i < CHECK_WRITE_SIZED.len() {
            all[n] = CHECK_WRITE_SIZED[i].1[0];
            all[n + 1] = CHECK_WRITE_SIZED[i].1[1];
            n += 2;
            i += 1;
        }
        let mut i = 0;
        while i < CHECK_MERGED.len() {
            all[n] = CHECK_MERGED[i].2;
            n += 1;
            i += 1;
        }
        all[n] = NUMA_CHECK;
        all[n + 1] = NUMA_CHECK_N;
        n += 2;
        assert!(n == all.len());
        all
    };
    /// The doors the hook bodies call (hooks/sharing.c): the `preserve_most` cold door of a
    /// checked access and the per-line loop of a range. Declared `nonlazybind` by the pass:
    /// from a shared library they are called through the GOT, bound at load time, never
    /// through a lazy PLT entry (the lazy resolver clobbers registers `preserve_most` keeps,
    /// e.g. r10); in an executable the linker relaxes the GOT call to a direct call.
    pub const SLOW: &str = "__profcc_slow";
    pub const RANGE_SLOW: &str = "__profcc_range_slow";
    /// The thread's page cache (TLS, rt/csrc/tls.c): `NUMA_SLOTS` slots of (page, count).
    pub const NUMA_CACHE: &str = "__profcc_numa_cache";
    /// The NUMA hook's door: the access's page is not in its cache slot.
    pub const PAGE_MISS: &str = "__profcc_page_miss";
    pub const PAGE_MISS_AT: &str = "__profcc_page_miss_at";
    pub const DOORS: [&str; 4] = [SLOW, RANGE_SLOW, PAGE_MISS, PAGE_MISS_AT];
    /// Runtime entry the module constructor calls with the module descriptor.
    pub const REGISTER: &str = "__profcc_register_module";
    /// Runtime entry the module destructor (priority `CTOR_PRIORITY`) calls with the same
    /// descriptor: the runtime copies what it needs of the module before it is unmapped.
    pub const UNREGISTER: &str = "__profcc_unregister_module";
    /// Per-module internal global holding the module's first global site id.
    pub const SITE_BASE: &str = "__profcc_site_base";
}
