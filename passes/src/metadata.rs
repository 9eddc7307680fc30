//! Static metadata: the site table and string table, the module descriptor, and the
//! priority-1 constructor that registers them with the runtime.

use crate::abi::*;
use crate::llvm::name_of;
use crate::select::{Access, Selection, Size};
use llvm_sys::core::*;
use llvm_sys::debuginfo::*;
use llvm_sys::prelude::*;
use llvm_sys::LLVMLinkage;
use std::collections::HashMap;
use std::ffi::CString;

#[derive(Default)]
pub struct SiteTable {
    /// The sites' record stream (`profcc_abi::sites`).
    pub bytes: Vec<u8>,
    nsites: usize,
    writer: crate::abi::sites::SiteWriter,
    pub strings: Vec<u8>,
    index: HashMap<String, u32>,
    /// String offset of the allocation wrappers' names (`ModuleDesc::wrappers`).
    pub wrappers: u32,
}

impl SiteTable {
    pub fn len(&self) -> usize {
        self.nsites
    }

    /// List the module's allocation wrappers (linkage names) in the string table.
    pub fn set_wrappers(&mut self, names: &[String]) {
        self.wrappers = if names.is_empty() {
            NO_STRING
        } else {
            let sep = WRAPPER_SEPARATOR.to_string();
            self.intern(&names.join(&sep))
        };
    }

    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&off) = self.index.get(s) {
            return off;
        }
        let off = self.strings.len() as u32;
        self.strings.extend_from_slice(s.as_bytes());
        self.strings.push(0);
        self.index.insert(s.to_string(), off);
        off
    }

    pub fn build(_m: LLVMModuleRef, sel: &Selection) -> SiteTable {
        let mut t = SiteTable {
            wrappers: NO_STRING,
            ..Default::default()
        };
        let mut fn_names: HashMap<LLVMValueRef, u32> = HashMap::new();
        for a in &sel.accesses {
            let loc = unsafe { location(a) };
            let file = t.intern(&loc.file);
            let func = match fn_names.get(&a.func) {
                Some(&f) => f,
                None => {
                    let f = t.intern(&unsafe { name_of(a.func) });
                    fn_names.insert(a.func, f);
                    f
                }
            };
            let (inlined_file, inlined_line) = match &loc.inlined_at {
                Some((f, l)) => (t.intern(f), *l),
                None => (NO_STRING, 0),
            };
            let size = match a.size {
                Size::Const(n) => n.min(u16::MAX as u64) as u16,
                Size::Dyn(_) => 0,
            };
            let site = SiteDesc {
                file,
                line: loc.line,
                col: loc.col,
                func,
                inlined_file,
                inlined_line,
                size,
                kind: a.kind as u8,
                pad: 0,
                leader: a.leader as u32,
            };
            let bytes = &mut t.bytes;
            t.writer.push(&site, &mut |b| bytes.push(b));
            t.nsites += 1;
        }
        t
    }
}

struct Loc {
    file: String,
    line: u32,
    col: u32,
    /// File and line of the outermost inlined-at call.
    inlined_at: Option<(String, u32)>,
}

unsafe fn file_of_scope(scope: LLVMMetadataRef) -> String {
    if scope.is_null() {
        return String::new();
    }
    let file = LLVMDIScopeGetFile(scope);
    if file.is_null() {
        return String::new();
    }
    let mut len = 0u32;
    let name = LLVMDIFileGetFilename(file, &mut len);
    let name = if name.is_null() {
        String::new()
    } else {
        String::from_utf8_lossy(std::slice::from_raw_parts(name as *const u8, len as usize))
            .into_owned()
    };
    if name.starts_with('/') || name.is_empty() {
        return name;
    }
    let mut dlen = 0u32;
    let dir = LLVMDIFileGetDirectory(file, &mut dlen);
    if dir.is_null() || dlen == 0 {
        return name;
    }
    let dir = String::from_utf8_lossy(std::slice::from_raw_parts(dir as *const u8, dlen as usize))
        .into_owned();
    format!("{}/{}", dir.trim_end_matches('/'), name)
}

/// The debug location of `inst`, or, when it has none or line 0 (code the optimiser hoisted
/// or merged), the nearest located instruction of the same block: before it, else after it.
/// Profilers attribute such code the same way; it keeps hot loops on a real source line.
unsafe fn nearest_location(inst: LLVMValueRef) -> LLVMMetadataRef {
    let has_line = |i: LLVMValueRef| {
        let l = LLVMInstructionGetDebugLoc(i);
        (!l.is_null() && LLVMDILocationGetLine(l) != 0).then_some(l)
    };
    if let Some(l) = has_line(inst) {
        return l;
    }
    let mut i = LLVMGetPreviousInstruction(inst);
    while !i.is_null() {
        if let Some(l) = has_line(i) {
            return l;
        }
        i = LLVMGetPreviousInstruction(i);
    }
    let mut i = LLVMGetNextInstruction(inst);
    while !i.is_null() {
        if let Some(l) = has_line(i) {
            return l;
        }
        i = LLVMGetNextInstruction(i);
    }
    LLVMInstructionGetDebugLoc(inst)
}

unsafe fn location(a: &Access) -> Loc {
    let loc = nearest_location(a.inst);
    let sp_file = || {
        let sp = LLVMGetSubprogram(a.func);
        if sp.is_null() {
            String::new()
        } else {
            file_of_scope(sp)
        }
    };
    if loc.is_null() {
        // Hoisted or merged code has no location: name at least the function's file.
        return Loc {
            file: sp_file(),
            line: 0,
            col: 0,
            inlined_at: None,
        };
    }
    let mut file = file_of_scope(LLVMDILocationGetScope(loc));
    if file.is_empty() {
        file = sp_file();
    }
    // Outermost inlined-at location: the call in the function the code now lives in.
    let mut outer = LLVMDILocationGetInlinedAt(loc);
    let mut inlined_at = None;
    while !outer.is_null() {
        let next = LLVMDILocationGetInlinedAt(outer);
        if next.is_null() {
            let f = file_of_scope(LLVMDILocationGetScope(outer));
            inlined_at = Some((f, LLVMDILocationGetLine(outer)));
        }
        outer = next;
    }
    Loc {
        file,
        line: LLVMDILocationGetLine(loc),
        col: LLVMDILocationGetColumn(loc),
        inlined_at,
    }
}

/// Emit the tables, the descriptor and the constructor. Returns the site-base global.
///
/// # Safety
/// `ctx` and `m` must be valid and belong together.
pub unsafe fn emit(
    ctx: LLVMContextRef,
    m: LLVMModuleRef,
    t: &SiteTable,
    flags: u32,
) -> Result<LLVMValueRef, String> {
    let i8t = LLVMInt8TypeInContext(ctx);
    let i32t = LLVMInt32TypeInContext(ctx);
    let ptr = LLVMPointerTypeInContext(ctx, 0);
    let void = LLVMVoidTypeInContext(ctx);
    let cstr = |s: &str| CString::new(s).unwrap();

    let mut packed = Vec::new();
    let mut head = vec![0u32; crate::abi::lz::HASH_SIZE];
    let mut prev = vec![0u32; t.bytes.len()];
    crate::abi::lz::compress(&t.bytes, &mut head, &mut prev, &mut |b| packed.push(b));
    let sites_init = LLVMConstStringInContext2(ctx, packed.as_ptr() as *const _, packed.len(), 1);
    let sites = LLVMAddGlobal(
        m,
        LLVMArrayType2(i8t, packed.len() as u64),
        cstr("__profcc_sites").as_ptr(),
    );
    LLVMSetInitializer(sites, sites_init);
    LLVMSetGlobalConstant(sites, 1);
    LLVMSetLinkage(sites, LLVMLinkage::LLVMPrivateLinkage);
    LLVMSetAlignment(sites, 1);

    let strings_init =
        LLVMConstStringInContext2(ctx, t.strings.as_ptr() as *const _, t.strings.len(), 1);
    let strings = LLVMAddGlobal(
        m,
        LLVMArrayType2(i8t, t.strings.len() as u64),
        cstr("__profcc_strings").as_ptr(),
    );
    LLVMSetInitializer(strings, strings_init);
    LLVMSetGlobalConstant(strings, 1);
    LLVMSetLinkage(strings, LLVMLinkage::LLVMPrivateLinkage);

    // The checkers (hooks/sharing.c) declare it: define that declaration.
    let mut base = LLVMGetNamedGlobal(m, cstr(names::SITE_BASE).as_ptr());
    if base.is_null() {
        base = LLVMAddGlobal(m, i32t, cstr(names::SITE_BASE).as_ptr());
    }
    // The descriptor hands its address to the runtime, which writes it.
    LLVMSetUnnamedAddress(base, llvm_sys::LLVMUnnamedAddr::LLVMNoUnnamedAddr);
    LLVMSetInitializer(base, LLVMConstInt(i32t, LIMBO as u64, 0));
    LLVMSetLinkage(base, LLVMLinkage::LLVMInternalLinkage);
    // Runtime data, not the program's: the link places `.profcc.data` after the program's
    // `.bss` (driver/src/layout.rs), so the program's `.data` and `.bss` keep their layout.
    LLVMSetSection(base, c".profcc.data".as_ptr());

    // profcc_abi::ModuleDesc (passes/tests/abi.rs checks the layouts agree).
    let mut fields = [i32t, i32t, ptr, ptr, ptr, i32t, i32t, i32t, i32t];
    let desc_ty = LLVMStructTypeInContext(ctx, fields.as_mut_ptr(), fields.len() as u32, 0);
    let mut vals = [
        LLVMConstInt(i32t, ABI_VERSION as u64, 0),
        LLVMConstInt(i32t, t.len() as u64, 0),
        sites,
        strings,
        base,
        LLVMConstInt(i32t, flags as u64, 0),
        LLVMConstInt(i32t, t.wrappers as u64, 0),
        LLVMConstInt(i32t, packed.len() as u64, 0),
        LLVMConstInt(i32t, t.bytes.len() as u64, 0),
    ];
    let desc = LLVMAddGlobal(m, desc_ty, cstr("__profcc_module").as_ptr());
    LLVMSetInitializer(
        desc,
        LLVMConstNamedStruct(desc_ty, vals.as_mut_ptr(), vals.len() as u32),
    );
    LLVMSetGlobalConstant(desc, 1);
    LLVMSetLinkage(desc, LLVMLinkage::LLVMPrivateLinkage);

    // declare void @__profcc_register_module(ptr)
    let mut params = [ptr];
    let reg_ty = LLVMFunctionType(void, params.as_mut_ptr(), 1, 0);
    let reg_name = cstr(names::REGISTER);
    let mut reg = LLVMGetNamedFunction(m, reg_name.as_ptr());
    if reg.is_null() {
        reg = LLVMAddFunction(m, reg_name.as_ptr(), reg_ty);
    }

    // define internal void @profcc.module_ctor() { call @__profcc_register_module(@desc) }
    let ctor_ty = LLVMFunctionType(void, std::ptr::null_mut(), 0, 0);
    let ctor = LLVMAddFunction(m, cstr("profcc.module_ctor").as_ptr(), ctor_ty);
    LLVMSetLinkage(ctor, LLVMLinkage::LLVMInternalLinkage);
    let bb = LLVMAppendBasicBlockInContext(ctx, ctor, cstr("entry").as_ptr());
    let b = LLVMCreateBuilderInContext(ctx);
    LLVMPositionBuilderAtEnd(b, bb);
    let mut args = [desc];
    LLVMBuildCall2(b, reg_ty, reg, args.as_mut_ptr(), 1, cstr("").as_ptr());
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);

    append_global_xtor(ctx, m, ctor, CTOR_PRIORITY, "llvm.global_ctors");

    // define internal void @profcc.module_dtor() { call @__profcc_unregister_module(@desc) }
    // Same priority: it runs after the module's other destructors (and, at exit, after the
    // runtime's exit dump, which it then leaves alone); on `dlclose` the runtime copies the
    // module's counts and site records before the module is unmapped.
    let unreg_name = cstr(names::UNREGISTER);
    let mut unreg = LLVMGetNamedFunction(m, unreg_name.as_ptr());
    if unreg.is_null() {
        unreg = LLVMAddFunction(m, unreg_name.as_ptr(), reg_ty);
    }
    let dtor = LLVMAddFunction(m, cstr("profcc.module_dtor").as_ptr(), ctor_ty);
    LLVMSetLinkage(dtor, LLVMLinkage::LLVMInternalLinkage);
    let bb = LLVMAppendBasicBlockInContext(ctx, dtor, cstr("entry").as_ptr());
    let b = LLVMCreateBuilderInContext(ctx);
    LLVMPositionBuilderAtEnd(b, bb);
    let mut args = [desc];
    // Both called through the GOT, like the doors: a lazy PLT slot in a shared library's
    // `.got.plt` would move its `.data` (ARCHITECTURE.md, "Native layout").
    let nonlazybind = LLVMGetEnumAttributeKindForName(c"nonlazybind".as_ptr(), 11);
    for f in [reg, unreg] {
        LLVMAddAttributeAtIndex(f, u32::MAX, LLVMCreateEnumAttribute(ctx, nonlazybind, 0));
    }
    LLVMBuildCall2(b, reg_ty, unreg, args.as_mut_ptr(), 1, cstr("").as_ptr());
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
    append_global_xtor(ctx, m, dtor, CTOR_PRIORITY, "llvm.global_dtors");
    Ok(base)
}

/// Append `{priority, f, null}` to @llvm.global_ctors or @llvm.global_dtors (`list`),
/// rebuilding the array.
pub(crate) unsafe fn append_global_xtor(
    ctx: LLVMContextRef,
    m: LLVMModuleRef,
    f: LLVMValueRef,
    priority: u64,
    list: &str,
) {
    let i32t = LLVMInt32TypeInContext(ctx);
    let ptr = LLVMPointerTypeInContext(ctx, 0);
    let mut fields = [i32t, ptr, ptr];
    let entry_ty = LLVMStructTypeInContext(ctx, fields.as_mut_ptr(), 3, 0);
    let name = CString::new(list).unwrap();
    let mut entries: Vec<LLVMValueRef> = Vec::new();
    let old = LLVMGetNamedGlobal(m, name.as_ptr());
    if !old.is_null() {
        let init = LLVMGetInitializer(old);
        if !init.is_null() {
            let n = LLVMGetNumOperands(init);
            for i in 0..n {
                entries.push(LLVMGetOperand(init, i as u32));
            }
        }
        LLVMDeleteGlobal(old);
    }
    let mut vals = [LLVMConstInt(i32t, priority, 0), f, LLVMConstNull(ptr)];
    entries.push(LLVMConstStructInContext(ctx, vals.as_mut_ptr(), 3, 0));
    let arr_ty = LLVMArrayType2(entry_ty, entries.len() as u64);
    let g = LLVMAddGlobal(m, arr_ty, name.as_ptr());
    LLVMSetInitializer(
        g,
        LLVMConstArray2(entry_ty, entries.as_mut_ptr(), entries.len() as u64),
    );
    LLVMSetLinkage(g, LLVMLinkage::LLVMAppendingLinkage);
}
