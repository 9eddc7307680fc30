//! The address map's invariants, after compiler-rt's tsan shadow test: walk every application
//! region (its ends and points inside), check that each address's shadow lies in its shadow
//! region and maps back to the address's line (page); shadow regions are disjoint from each
//! other and from the application.

use profcc_abi::*;

/// Points of `[start, end)` to check: both ends, their neighbours, line and page boundaries
/// near them, and a spread of points inside (a fixed pseudo-random walk and even steps).
fn samples(start: u64, end: u64) -> Vec<u64> {
    let mut v = vec![
        start,
        start + 1,
        start + 63,
        start + 64,
        start + 4095,
        start + 4096,
        end - 1,
        end - 2,
        end - 64,
        end - 65,
        end - 4096,
        end - 4097,
        start + (end - start) / 2,
    ];
    let len = end - start;
    for i in 1..1024u64 {
        v.push(start + len / 1024 * i + i % 64);
    }
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..4096 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.push(start + x % len);
    }
    v
}

fn region_of(a: u64) -> Option<&'static Region> {
    REGIONS.iter().find(|r| r.start <= a && a < r.end)
}

#[test]
fn regions_tile_user_space_in_order() {
    assert_eq!(REGIONS[0].start, 0);
    assert_eq!(REGIONS.last().unwrap().end, APP_LIMIT);
    for r in &REGIONS {
        assert!(r.start < r.end, "{r:?} is empty");
        // Boundaries on page boundaries (so each page, and line, lies in one region).
        assert_eq!(r.start % (1 << PAGE_SHIFT), 0, "{r:?}");
        assert_eq!(r.end % (1 << PAGE_SHIFT), 0, "{r:?}");
    }
    for w in REGIONS.windows(2) {
        assert_eq!(
            w[0].end, w[1].start,
            "{:?} and {:?} do not touch",
            w[0], w[1]
        );
    }
    // Exactly one region of each shadow kind, with the sizes the reservation uses.
    let one = |k: RegionKind| {
        let v: Vec<_> = REGIONS.iter().filter(|r| r.kind == k).collect();
        assert_eq!(v.len(), 1, "{k:?}");
        *v[0]
    };
    let line = one(RegionKind::LineShadow);
    assert_eq!(
        (line.start, line.end - line.start),
        (LINE_SHADOW, LINE_SHADOW_SIZE)
    );
    assert_eq!(LINE_SHADOW_SIZE, 16 << 40, "16 TiB");
    let page = one(RegionKind::PageShadow);
    assert_eq!(
        (page.start, page.end - page.start),
        (PAGE_SHADOW, PAGE_SHADOW_SIZE)
    );
    assert_eq!(PAGE_SHADOW_SIZE, 1 << 40, "1 TiB");
    let start = one(RegionKind::StartShadow);
    assert_eq!(
        (start.start, start.end - start.start),
        (START_SHADOW, START_SHADOW_SIZE)
    );
    assert_eq!(START_SHADOW_SIZE, 32 << 40, "32 TiB");
}

#[test]
fn regions_are_pairwise_disjoint() {
    for (i, a) in REGIONS.iter().enumerate() {
        for b in &REGIONS[i + 1..] {
            assert!(a.end <= b.start || b.end <= a.start, "{a:?} overlaps {b:?}");
        }
    }
}

#[test]
fn every_app_address_has_its_shadow_in_the_shadow_regions() {
    for r in REGIONS.iter().filter(|r| r.kind == RegionKind::App) {
        for a in samples(r.start, r.end) {
            assert_eq!(region_of(a).unwrap().kind, RegionKind::App, "{a:#x}");
            let s = line_shadow(a);
            assert_eq!(
                region_of(s).map(|r| r.kind),
                Some(RegionKind::LineShadow),
                "line shadow of {a:#x} is {s:#x}"
            );
            assert_eq!(s % 8, 0, "{a:#x}: shadow word unaligned");
            assert_eq!(line_of_shadow(s), a & !(LINE_SIZE - 1), "{a:#x}");
            // One word per line: the line's bytes share it, the next line has the next word.
            assert_eq!(line_shadow(a & !(LINE_SIZE - 1)), s);
            assert_eq!(line_shadow(a | (LINE_SIZE - 1)), s);
            if a + LINE_SIZE < APP_LIMIT {
                assert_eq!(line_shadow(a + LINE_SIZE), s + 8);
            }

            let p = page_shadow(a);
            assert_eq!(
                region_of(p).map(|r| r.kind),
                Some(RegionKind::PageShadow),
                "page shadow of {a:#x} is {p:#x}"
            );
            assert_eq!(p % 4, 0);
            assert_eq!(page_of_shadow(p), a & !((1 << PAGE_SHIFT) - 1), "{a:#x}");

            let w = start_shadow(a);
            assert_eq!(
                region_of(w).map(|r| r.kind),
                Some(RegionKind::StartShadow),
                "start shadow of {a:#x} is {w:#x}"
            );
            assert_eq!(w % 4, 0);
            assert_eq!(start_shadow(a & !15), w);
            // Spread: the group's 4 KiB of user space has its own 1 KiB of shadow, and the
            // next granule's word is on the next shadow line of it.
            let group = a & !(START_SPREAD * 16 - 1);
            let base = START_SHADOW + (group >> START_SHIFT) * 4;
            assert!(base <= w && w < base + START_SPREAD * 4, "{a:#x}");
            if (a & 0xf0) != 0xf0 && a + 16 < APP_LIMIT {
                assert_eq!(start_shadow(a + 16), w + 64, "{a:#x}");
            }
        }
    }
}

/// Every granule of a spread group has a word of its own, and the 16 granules of 256 user
/// bytes (two threads' neighbouring small blocks) have words on 16 different shadow lines.
#[test]
fn start_words_of_neighbouring_granules_are_on_different_shadow_lines() {
    let group = 0x5555_5555_0000u64;
    let mut seen = std::collections::HashSet::new();
    for g in 0..START_SPREAD {
        assert!(seen.insert(start_shadow(group + g * 16)), "granule {g}");
    }
    for first in [group, group + 0x540] {
        let lines: std::collections::HashSet<u64> =
            (0..16).map(|g| start_shadow(first + g * 16) / 64).collect();
        assert_eq!(lines.len(), 16, "{first:#x}");
    }
}

/// profcc_abi.h's `PROFCC_START_SHADOW_OF` is `start_shadow` and its `PROFCC_FREED_WORD` is
/// `ShadowWord::freed`: the C runtime writes the words the Rust runtime reads. Compiled with
/// the machine's C compiler, at the samples above.
#[test]
fn the_c_header_writes_start_and_freed_words_as_rust_does() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let src = dir.join("start.c");
    let addrs: Vec<u64> = REGIONS
        .iter()
        .filter(|r| r.kind == RegionKind::App)
        .flat_map(|r| samples(r.start, r.end))
        .collect();
    let list: Vec<String> = addrs.iter().map(|a| format!("{a:#x}ull")).collect();
    // Owner words of threads 0, 1, 63, 64 and the last id before the wrap.
    let owners: Vec<u64> = [0u32, 1, 63, 64, 65533]
        .iter()
        .map(|&id| ShadowWord::thread(id).0)
        .collect();
    std::fs::write(
        &src,
        format!(
            "#include <stdio.h>\n#include <stdint.h>\n#include \"profcc_abi.h\"\n\
             static const uint64_t a[] = {{{}}};\n\
             static const uint64_t me[] = {{{}}};\n\
             int main(void) {{ for (unsigned i = 0; i < sizeof a / sizeof a[0]; i++) \
             printf(\"%llx\\n\", (unsigned long long)PROFCC_START_SHADOW_OF(a[i])); \
             for (unsigned i = 0; i < sizeof me / sizeof me[0]; i++) \
             printf(\"%llx\\n\", (unsigned long long)PROFCC_FREED_WORD(me[i])); return 0; }}\n",
            list.join(","),
            owners
                .iter()
                .map(|w| format!("{w:#x}ull"))
                .collect::<Vec<_>>()
                .join(",")
        ),
    )
    .unwrap();
    let include = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let exe = dir.join("start");
    let st = std::process::Command::new("cc")
        .arg("-I")
        .arg(&include)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("cc (Debian's build-essential, which cargo xtask test installs)");
    assert!(st.success());
    let out = std::process::Command::new(&exe).output().unwrap();
    let got: Vec<u64> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| u64::from_str_radix(l, 16).unwrap())
        .collect();
    assert_eq!(got.len(), addrs.len() + owners.len());
    for (a, g) in addrs.iter().zip(&got) {
        assert_eq!(*g, start_shadow(*a), "PROFCC_START_SHADOW_OF({a:#x})");
    }
    for (me, g) in owners.iter().zip(&got[addrs.len()..]) {
        assert_eq!(*g, ShadowWord::freed(*me).0, "PROFCC_FREED_WORD({me:#x})");
    }
}

#[test]
fn start_words_give_back_the_block() {
    for (addr, size, site) in [
        (0x5555_0000_0010u64, 40u64, 13u32),
        (0x5555_0000_0018, 0, START_SITES - 1),
        (0x7f00_0000_0008, (1 << START_SIZE_BITS) - 1, 1 << 18),
    ] {
        let w = start_word(addr, size, site);
        assert_ne!(w, 0);
        assert_eq!(start_block(addr & !15, w), (addr, size, site), "{addr:#x}");
    }
}

#[test]
fn shadow_ranges_cover_exactly_user_space() {
    assert_eq!(line_shadow(0), LINE_SHADOW);
    assert_eq!(line_shadow(APP_LIMIT - 1), LINE_SHADOW_END - 8);
    assert_eq!(page_shadow(0), PAGE_SHADOW);
    assert_eq!(page_shadow(APP_LIMIT - 1), PAGE_SHADOW_END - 32);
    assert_eq!(start_shadow(0), START_SHADOW);
    assert_eq!(start_shadow(APP_LIMIT - 1), START_SHADOW_END - 4);
    // Even a stray access to shadow memory would read shadow, never an application page.
    for r in REGIONS.iter().filter(|r| r.kind != RegionKind::App) {
        for a in samples(r.start, r.end) {
            assert_eq!(
                region_of(line_shadow(a)).unwrap().kind,
                RegionKind::LineShadow
            );
            assert_eq!(
                region_of(page_shadow(a)).unwrap().kind,
                RegionKind::PageShadow
            );
        }
    }
}

#[test]
fn usual_program_addresses_are_application_memory() {
    for a in [
        0x40_0000u64,       // non-PIE executable
        0x60_0000_0000,     // a large brk heap
        0x5555_5555_4000,   // PIE executable (no ASLR)
        0x5600_0000_0000,   // PIE executable (ASLR)
        0x7f00_0000_0000,   // mmap, shared libraries
        0x7ffc_0000_0000,   // main thread stack
        APP_LIMIT - 0x1000, // the last page
    ] {
        assert_eq!(region_of(a).unwrap().kind, RegionKind::App, "{a:#x}");
    }
}

#[test]
fn shadow_word_fields_do_not_overlap() {
    type W = ShadowWord;
    let fields = [
        W::HOT,
        W::RETIRED,
        W::FIELD << W::FIELD_SHIFT,
        W::READERS,
        W::OWNER,
    ];
    for (i, a) in fields.iter().enumerate() {
        for b in &fields[i + 1..] {
            assert_eq!(a & b, 0, "{a:#x} & {b:#x}");
        }
    }
    assert_eq!(
        fields.iter().fold(0, |x, f| x | f),
        u64::MAX,
        "every bit is used"
    );
    // The write hook's mask: hot, readers and owner (a retired line's field and flag do not
    // slow its owner down).
    assert_eq!(W::WRITE_MASK, 0x8000_ffff_ffff_ffff);
    assert_eq!(W::READERS >> W::READER_SHIFT, (1 << W::READER_BITS) - 1);
    assert_eq!(
        W::INVALIDATIONS_MAX | (W::VOLUME_MAX << W::VOLUME_SHIFT),
        W::FIELD
    );
}

#[test]
fn owner_words_and_fast_paths() {
    type W = ShadowWord;
    for id in [0u32, 1, 30, 31, 32, 65533, 65534, 65535, u32::MAX] {
        let me = W::thread(id);
        let t = me.owner();
        assert!((1..=0xffff).contains(&t), "{id}: owner {t}");
        assert_eq!(t, (id as u64 % 0xffff) + 1);
        assert_eq!(me.readers().count_ones(), 1, "{id}");
        assert_eq!(me.readers(), W::reader_bit(t));
        assert_eq!(
            me.0,
            t | me.readers(),
            "an owner word is owner | own reader bit"
        );
        // Its own cold write, with counters or retired: the next write and read stay inline.
        for w in [
            W::cold(me.0, 0, 0),
            W::cold(me.0, 255, 63),
            W::retired(me.0, 7),
            W::retired(me.0, W::NO_RECORD),
        ] {
            assert!(w.is_fast_write(me.0), "{id}: {w:?}");
            assert!(w.is_fast_read(me.readers()), "{id}: {w:?}");
        }
        // Another thread read it: the write leaves through the door; the read stays inline.
        let other = W::thread(id ^ 1);
        assert_ne!(other.readers(), me.readers(), "{id}");
        let read = ShadowWord(W::cold(me.0, 0, 0).0 | other.readers());
        assert!(!read.is_fast_write(me.0));
        assert!(read.is_fast_read(me.readers()));
        assert!(!W::cold(other.0, 0, 0).is_fast_write(me.0));
        assert!(!W::cold(other.0, 0, 0).is_fast_read(me.readers()));
        // A hot line never passes inline, whatever its index's bits are.
        let hot = W::hot(me.0);
        assert!(!hot.is_fast_write(me.0) && !hot.is_fast_read(me.readers()));
    }
}

#[test]
fn shadow_word_accessors_read_back_what_was_built() {
    type W = ShadowWord;
    let me = W::thread(4).0;
    let c = W::cold(me, 17, 5);
    assert!(!c.is_hot() && !c.is_retired());
    assert_eq!(
        (c.invalidations(), c.volume_samples(), c.owner()),
        (17, 5, 5)
    );
    assert_eq!(c.record(), None);
    let r = W::retired(me, 123);
    assert!(r.is_retired() && !r.is_hot());
    assert_eq!((r.field(), r.record(), r.owner()), (123, Some(123), 5));
    assert_eq!(W::retired(me, W::NO_RECORD).record(), None);
    // A freed word: its owner reads and writes it on the fast path, nobody else does, and it
    // names no record; the highest record index is below it.
    let f = W::freed(me);
    assert!(f.is_freed() && !c.is_freed() && !r.is_freed() && !W::hot(W::FREED).is_freed());
    assert!(f.is_fast_write(me) && f.is_fast_read(ShadowWord(me).readers()));
    let other = W::thread(5).0;
    assert!(!f.is_fast_write(other) && !f.is_fast_read(ShadowWord(other).readers()));
    assert_eq!((f.record(), f.owner()), (None, 5));
    assert_eq!(W::retired(me, W::FREED - 1).record(), Some(W::FREED - 1));
    let h = W::hot(4242);
    assert!(h.is_hot());
    assert_eq!((h.hot_index(), h.record()), (4242, Some(4242)));
}

/// The page cache's slots: arrays 2 MiB apart (a multiple of 64 pages) do not share a slot
/// at the same index, and a sequential sweep spreads over the cache.
#[test]
fn numa_slots_spread_strided_and_sequential_pages() {
    use profcc_abi::{numa_slot, NUMA_SLOTS};
    let base = 0x7f12_3456_7000u64 >> 12;
    for stride in [64u64, 512, 4096, 1 << 18] {
        let slots: std::collections::HashSet<usize> =
            (0..4).map(|k| numa_slot(base + k * stride)).collect();
        assert_eq!(slots.len(), 4, "stride {stride} pages");
    }
    let seq: std::collections::HashSet<usize> = (0..NUMA_SLOTS as u64)
        .map(|k| numa_slot(base + k))
        .collect();
    assert!(seq.len() >= 40, "{} slots of 64", seq.len());
    assert!((0..1u64 << 20).all(|p| numa_slot(p) < NUMA_SLOTS as usize));
}
