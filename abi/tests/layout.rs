//! The module descriptor has the C layout the pass's LLVM struct type gives it
//! (passes/tests/abi.rs checks the pass's side against LLVM's data layout).

use core::mem::{offset_of, size_of};
use profcc_abi::*;

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
    // { u32 abi, u32 nsites, ptr sites, ptr strings, ptr site_base, u32 flags, u32 wrappers,
    //   u32 sites_bytes, u32 sites_raw_bytes } on LP64.
    assert_eq!(offset_of!(ModuleDesc, abi_version), 0);
    assert_eq!(offset_of!(ModuleDesc, nsites), 4);
    assert_eq!(offset_of!(ModuleDesc, sites), 8);
    assert_eq!(offset_of!(ModuleDesc, strings), 16);
    assert_eq!(offset_of!(ModuleDesc, site_base), 24);
    assert_eq!(offset_of!(ModuleDesc, flags), 32);
    assert_eq!(offset_of!(ModuleDesc, wrappers), 36);
    assert_eq!(offset_of!(ModuleDesc, sites_bytes), 40);
    assert_eq!(offset_of!(ModuleDesc, sites_raw_bytes), 44);
    assert_eq!(size_of::<ModuleDesc>(), 48);
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
