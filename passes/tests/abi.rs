//! The pass and the runtime agree through profcc-abi: the module descriptor and site records
//! the pass emits have the layout (LLVM's data layout for x86-64) of the structs the runtime
//! reads, and every golden test's descriptor carries the crate's ABI version.

use llvm_sys::core::*;
use llvm_sys::ir_reader::LLVMParseIRInContext2;
use llvm_sys::prelude::*;
use llvm_sys::target::*;
use profcc_abi::sites::SiteReader;
use profcc_abi::{AccessKind, ModuleDesc, SiteDesc, ABI_VERSION, FLAG_SHARING, LIMBO, NO_STRING};
use std::ffi::CString;
use std::mem::{offset_of, size_of};
use std::path::PathBuf;

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// An LLVM module parsed from textual IR, with its context.
struct Parsed {
    ctx: LLVMContextRef,
    m: LLVMModuleRef,
}

impl Parsed {
    fn new(ir: &str) -> Parsed {
        unsafe {
            let ctx = LLVMContextCreate();
            let name = CString::new("ir").unwrap();
            let buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(
                ir.as_ptr() as *const _,
                ir.len(),
                name.as_ptr(),
            );
            let mut m = std::ptr::null_mut();
            let mut msg = std::ptr::null_mut();
            let failed = LLVMParseIRInContext2(ctx, buf, &mut m, &mut msg);
            LLVMDisposeMemoryBuffer(buf);
            assert_eq!(failed, 0);
            Parsed { ctx, m }
        }
    }

    fn global(&self, name: &str) -> LLVMValueRef {
        let n = CString::new(name).unwrap();
        let g = unsafe { LLVMGetNamedGlobal(self.m, n.as_ptr()) };
        assert!(!g.is_null(), "{name} missing");
        g
    }
}

impl Drop for Parsed {
    fn drop(&mut self) {
        unsafe {
            LLVMDisposeModule(self.m);
            LLVMContextDispose(self.ctx);
        }
    }
}

unsafe fn int_at(aggregate: LLVMValueRef, i: u32) -> u64 {
    LLVMConstIntGetZExtValue(LLVMGetAggregateElement(aggregate, i))
}

#[test]
fn emitted_descriptor_and_site_records_are_the_runtime_structs() {
    let input = std::fs::read_to_string(golden_dir().join("load_store.ll")).unwrap();
    let (ir, _) = profcc_passes::instrument_ir(&input, &Default::default()).unwrap();
    let p = Parsed::new(&ir);
    unsafe {
        let layout = LLVMGetDataLayoutStr(p.m);
        let td = LLVMCreateTargetData(layout);

        // The descriptor: same size and field offsets as profcc_abi::ModuleDesc.
        let desc = p.global("__profcc_module");
        let ty = LLVMGlobalGetValueType(desc);
        assert_eq!(LLVMCountStructElementTypes(ty), 9);
        let offsets = [
            offset_of!(ModuleDesc, abi_version),
            offset_of!(ModuleDesc, nsites),
            offset_of!(ModuleDesc, sites),
            offset_of!(ModuleDesc, strings),
            offset_of!(ModuleDesc, site_base),
            offset_of!(ModuleDesc, flags),
            offset_of!(ModuleDesc, wrappers),
            offset_of!(ModuleDesc, sites_bytes),
            offset_of!(ModuleDesc, sites_raw_bytes),
        ];
        for (i, off) in offsets.iter().enumerate() {
            assert_eq!(
                LLVMOffsetOfElement(td, ty, i as u32) as usize,
                *off,
                "field {i}"
            );
        }
        assert_eq!(LLVMABISizeOfType(td, ty) as usize, size_of::<ModuleDesc>());

        let init = LLVMGetInitializer(desc);
        assert_eq!(int_at(init, 0), ABI_VERSION as u64);
        let nsites = int_at(init, 1) as usize;
        assert_eq!(nsites, 2);
        assert_eq!(int_at(init, 5), FLAG_SHARING as u64);
        assert_eq!(
            int_at(init, 6),
            NO_STRING as u64,
            "load_store.ll has no wrappers"
        );
        let base = p.global("__profcc_site_base");
        assert_eq!(
            LLVMConstIntGetZExtValue(LLVMGetInitializer(base)),
            LIMBO as u64
        );

        // The site table: sites_bytes bytes that expand to a record stream of sites_raw_bytes
        // bytes, which decodes to nsites sites.
        let bytes_of = |g: LLVMValueRef| {
            let s = LLVMGetInitializer(g);
            let mut len = 0usize;
            let ptr = LLVMGetAsString(s, &mut len);
            std::slice::from_raw_parts(ptr as *const u8, len).to_vec()
        };
        let packed = bytes_of(p.global("__profcc_sites"));
        assert_eq!(int_at(init, 7) as usize, packed.len(), "sites_bytes");
        let mut stream = vec![0u8; int_at(init, 8) as usize];
        assert!(
            profcc_abi::lz::expand(&packed, &mut stream),
            "sites_raw_bytes"
        );
        let strings = bytes_of(p.global("__profcc_strings"));
        // Read the stream as the runtime does: f's load (4 bytes) and store (8 bytes, sharing
        // the load's counter).
        let read: Vec<SiteDesc> = SiteReader::new(&stream).collect();
        assert_eq!(read.len(), nsites);
        for (s, want) in read
            .iter()
            .zip([(AccessKind::Read, 4, 0), (AccessKind::Write, 8, 0)])
        {
            assert_eq!(AccessKind::from_code(s.kind), Some(want.0), "{s:?}");
            assert_eq!((s.size, s.leader), (want.1, want.2), "{s:?}");
            assert_eq!(s.inlined_file, NO_STRING);
            let f = &strings[s.func as usize..];
            assert_eq!(&f[..2], b"f\0", "function name at the func offset");
        }
        LLVMDisposeTargetData(td);
    }
}

#[test]
fn golden_descriptors_carry_the_crates_abi_version() {
    let prefix =
        "@__profcc_module = private constant { i32, i32, ptr, ptr, ptr, i32, i32, i32, i32 } { i32 ";
    let mut seen = 0;
    for e in std::fs::read_dir(golden_dir()).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_none_or(|x| x != "expected") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for line in text
            .lines()
            .filter(|l| l.starts_with("@__profcc_module = "))
        {
            let version = line
                .strip_prefix(prefix)
                .and_then(|r| r.split(',').next())
                .unwrap_or_else(|| panic!("{}: unexpected descriptor {line}", path.display()));
            assert_eq!(
                version,
                ABI_VERSION.to_string(),
                "{}: bless the golden files after changing profcc_abi::ABI_VERSION",
                path.display()
            );
            seen += 1;
        }
    }
    assert!(seen >= 8, "descriptors found in {seen} golden files");
}
