//! The site record the pass emits (`SITE_WORDS` u32 words) is the struct the runtime reads;
//! the module descriptor has the C layout the pass's LLVM struct type gives it
//! (passes/tests/abi.rs checks the pass's side against LLVM's data layout).

use core::mem::{align_of, offset_of, size_of};
use profcc_abi::*;

#[test]
fn site_record_words_are_the_runtime_struct() {
    assert_eq!(size_of::<SiteDesc>(), SITE_WORDS * 4);
    assert_eq!(align_of::<SiteDesc>(), 4, "the pass aligns the table to 4");
    assert_eq!(offset_of!(SiteDesc, file), SITE_FILE * 4);
    assert_eq!(offset_of!(SiteDesc, line), SITE_LINE * 4);
    assert_eq!(offset_of!(SiteDesc, col), SITE_COL * 4);
    assert_eq!(offset_of!(SiteDesc, func), SITE_FUNC * 4);
    assert_eq!(offset_of!(SiteDesc, inlined_at), SITE_INLINED_AT * 4);
    // size | kind << 16, little-endian.
    assert_eq!(offset_of!(SiteDesc, size), SITE_SIZE_KIND * 4);
    assert_eq!(
        offset_of!(SiteDesc, kind),
        SITE_SIZE_KIND * 4 + SITE_KIND_SHIFT as usize / 8
    );
    assert_eq!(offset_of!(SiteDesc, leader), SITE_LEADER * 4);

    for kind in AccessKind::ALL {
        let s = SiteDesc {
            file: 1,
            line: 0x0203_0405,
            col: 77,
            func: 9,
            inlined_at: NO_STRING,
            size: 0xfffe,
            kind: kind as u8,
            pad: 0,
            leader: 123_456,
        };
        let words = s.words();
        // What the runtime sees when it reads the emitted words as a SiteDesc.
        let read: SiteDesc = unsafe { core::mem::transmute(words) };
        assert_eq!(read, s);
        assert_eq!(AccessKind::from_code(read.kind), Some(kind));
    }
}

#[test]
fn access_kind_codes_round_trip() {
    for (i, k) in AccessKind::ALL.iter().enumerate() {
        assert_eq!(*k as u8 as usize, i);
        assert_eq!(AccessKind::from_code(i as u8), Some(*k));
    }
    assert_eq!(AccessKind::from_code(AccessKind::ALL.len() as u8), None);
}

#[test]
fn module_descriptor_is_c_layout() {
    // { u32 abi, u32 nsites, ptr sites, ptr strings, ptr site_base, u32 flags } on LP64.
    assert_eq!(offset_of!(ModuleDesc, abi_version), 0);
    assert_eq!(offset_of!(ModuleDesc, nsites), 4);
    assert_eq!(offset_of!(ModuleDesc, sites), 8);
    assert_eq!(offset_of!(ModuleDesc, strings), 16);
    assert_eq!(offset_of!(ModuleDesc, site_base), 24);
    assert_eq!(offset_of!(ModuleDesc, flags), 32);
    assert_eq!(size_of::<ModuleDesc>(), 40);
}

#[test]
fn counter_array_holds_registered_sites_and_limbo() {
    assert_eq!(LIMBO, MAX_SITES);
    assert_eq!(
        SLOTS,
        COUNTER_STRIDE * (LIMBO + MAX_MODULE_SITES) as usize,
        "an unregistered module's last site fits"
    );
    let slots = [COUNT_SLOT, BYTES_SLOT];
    assert!(slots.iter().all(|&s| s < COUNTER_STRIDE));
    assert_ne!(slots[0], slots[1]);
}
