//! Thin owning wrappers over the LLVM-C handles the pass needs, and small helpers.

use llvm_sys::analysis::{LLVMVerifierFailureAction, LLVMVerifyModule};
use llvm_sys::bit_reader::LLVMParseBitcodeInContext2;
use llvm_sys::bit_writer::LLVMWriteBitcodeToFile;
use llvm_sys::core::*;
use llvm_sys::ir_reader::LLVMParseIRInContext2;
use llvm_sys::linker::LLVMLinkModules2;
use llvm_sys::prelude::*;
use llvm_sys::transforms::pass_builder::*;
use llvm_sys::{LLVMLinkage, LLVMVisibility};
use std::ffi::{CStr, CString};
use std::path::Path;

/// The hook bodies (hooks/counting.c, hooks/sharing.c), compiled by build.rs.
static HOOK_BITCODE: [(&str, &[u8]); 3] = [
    (
        "counting.bc",
        include_bytes!(concat!(env!("OUT_DIR"), "/counting.bc")),
    ),
    (
        "sharing.bc",
        include_bytes!(concat!(env!("OUT_DIR"), "/sharing.bc")),
    ),
    (
        "numa.bc",
        include_bytes!(concat!(env!("OUT_DIR"), "/numa.bc")),
    ),
];

pub struct Context(LLVMContextRef);

pub struct Module<'c> {
    m: LLVMModuleRef,
    _ctx: std::marker::PhantomData<&'c Context>,
}

impl Default for Context {
    fn default() -> Self {
        Self::new()
    }
}

unsafe fn take_message(msg: *mut std::os::raw::c_char) -> String {
    if msg.is_null() {
        return String::new();
    }
    let s = CStr::from_ptr(msg).to_string_lossy().into_owned();
    LLVMDisposeMessage(msg);
    s
}

impl Context {
    pub fn new() -> Self {
        Context(unsafe { LLVMContextCreate() })
    }

    pub fn raw(&self) -> LLVMContextRef {
        self.0
    }

    fn buffer(bytes: &[u8], name: &str) -> LLVMMemoryBufferRef {
        let name = CString::new(name).unwrap_or_default();
        unsafe {
            LLVMCreateMemoryBufferWithMemoryRangeCopy(
                bytes.as_ptr() as *const _,
                bytes.len(),
                name.as_ptr(),
            )
        }
    }

    fn parse_bitcode(&self, bytes: &[u8], name: &str) -> Result<Module<'_>, String> {
        let buf = Self::buffer(bytes, name);
        let mut m = std::ptr::null_mut();
        let failed = unsafe { LLVMParseBitcodeInContext2(self.0, buf, &mut m) };
        unsafe { LLVMDisposeMemoryBuffer(buf) };
        if failed != 0 || m.is_null() {
            return Err(format!("{name}: not LLVM 22 bitcode"));
        }
        Ok(Module {
            m,
            _ctx: std::marker::PhantomData,
        })
    }

    pub fn parse_bitcode_file(&self, path: &Path) -> Result<Module<'_>, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        self.parse_bitcode(&bytes, &path.display().to_string())
    }

    pub fn parse_ir(&self, ir: &str) -> Result<Module<'_>, String> {
        // The buffer must be NUL-terminated; LLVMParseIRInContext2 does not consume it.
        let mut text = ir.as_bytes().to_vec();
        text.push(0);
        let name = CString::new("input.ll").unwrap();
        let buf = unsafe {
            LLVMCreateMemoryBufferWithMemoryRangeCopy(
                text.as_ptr() as *const _,
                text.len() - 1,
                name.as_ptr(),
            )
        };
        let mut m = std::ptr::null_mut();
        let mut msg = std::ptr::null_mut();
        let failed = unsafe { LLVMParseIRInContext2(self.0, buf, &mut m, &mut msg) };
        unsafe { LLVMDisposeMemoryBuffer(buf) };
        if failed != 0 {
            return Err(unsafe { take_message(msg) });
        }
        Ok(Module {
            m,
            _ctx: std::marker::PhantomData,
        })
    }

    /// Link the hook bodies into `module`, make them internal (the hooks always-inline, the
    /// checkers never), and return them in the order of `abi::names::HOOKS` then `CHECKERS`.
    ///
    /// # Safety
    /// `module` must belong to this context.
    pub unsafe fn link_hooks(&self, module: &Module<'_>) -> Result<Vec<LLVMValueRef>, String> {
        for (name, bitcode) in HOOK_BITCODE {
            let hooks = self.parse_bitcode(bitcode, name)?;
            // Same layout and triple as the user's module, so the linker has nothing to warn
            // about.
            LLVMSetDataLayout(hooks.m, LLVMGetDataLayoutStr(module.m));
            LLVMSetTarget(hooks.m, LLVMGetTarget(module.m));
            let src = hooks.m;
            std::mem::forget(hooks); // LLVMLinkModules2 destroys the source module
            if LLVMLinkModules2(module.m, src) != 0 {
                return Err(format!("linking the hook bodies ({name}) failed"));
            }
        }
        // The doors: bound at load time (see `abi::names::DOORS`).
        let nonlazybind = LLVMGetEnumAttributeKindForName("nonlazybind".as_ptr() as *const _, 11);
        for name in crate::abi::names::DOORS {
            let cname = CString::new(name).unwrap();
            let door = LLVMGetNamedFunction(module.m, cname.as_ptr());
            if door.is_null() {
                return Err(format!("hook door {name} missing after linking"));
            }
            LLVMAddAttributeAtIndex(
                door,
                u32::MAX,
                LLVMCreateEnumAttribute(self.0, nonlazybind, 0),
            );
        }
        let mut out = Vec::new();
        let all = crate::abi::names::HOOKS
            .iter()
            .map(|n| (n, true))
            .chain(crate::abi::names::CHECKERS.iter().map(|n| (n, false)));
        for (name, inline) in all {
            let cname = CString::new(*name).unwrap();
            let hook = LLVMGetNamedFunction(module.m, cname.as_ptr());
            if hook.is_null() {
                return Err(format!("hook body {name} missing after linking"));
            }
            LLVMSetLinkage(hook, LLVMLinkage::LLVMInternalLinkage);
            for attr in ["target-cpu", "target-features", "tune-cpu"] {
                LLVMRemoveStringAttributeAtIndex(
                    hook,
                    u32::MAX,
                    attr.as_ptr() as *const _,
                    attr.len() as u32,
                );
            }
            // The checkers keep their `noinline` (and their preserve_most convention).
            let drop: &[&str] = if inline {
                &["noinline", "optnone"]
            } else {
                &["optnone"]
            };
            for attr in drop {
                let kind = LLVMGetEnumAttributeKindForName(attr.as_ptr() as *const _, attr.len());
                LLVMRemoveEnumAttributeAtIndex(hook, u32::MAX, kind);
            }
            if inline {
                let kind = LLVMGetEnumAttributeKindForName("alwaysinline".as_ptr() as *const _, 12);
                LLVMAddAttributeAtIndex(hook, u32::MAX, LLVMCreateEnumAttribute(self.0, kind, 0));
            }
            out.push(hook);
        }
        // The checkers' doors: internal like the checkers (not returned: the pass never
        // calls them itself).
        for name in crate::abi::names::CHECKER_DOORS {
            let cname = CString::new(name).unwrap();
            let door = LLVMGetNamedFunction(module.m, cname.as_ptr());
            if door.is_null() {
                return Err(format!("checker door {name} missing after linking"));
            }
            LLVMSetLinkage(door, LLVMLinkage::LLVMInternalLinkage);
            for attr in ["target-cpu", "target-features", "tune-cpu"] {
                LLVMRemoveStringAttributeAtIndex(
                    door,
                    u32::MAX,
                    attr.as_ptr() as *const _,
                    attr.len() as u32,
                );
            }
            let kind = LLVMGetEnumAttributeKindForName("optnone".as_ptr() as *const _, 7);
            LLVMRemoveEnumAttributeAtIndex(door, u32::MAX, kind);
        }
        Ok(out)
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        unsafe { LLVMContextDispose(self.0) }
    }
}

impl Module<'_> {
    pub fn raw(&self) -> LLVMModuleRef {
        self.m
    }

    pub fn has_function(&self, name: &str) -> bool {
        let n = CString::new(name).unwrap();
        unsafe { !LLVMGetNamedFunction(self.m, n.as_ptr()).is_null() }
    }

    pub fn has_global(&self, name: &str) -> bool {
        let n = CString::new(name).unwrap();
        unsafe { !LLVMGetNamedGlobal(self.m, n.as_ptr()).is_null() }
    }

    pub fn to_ir(&self) -> String {
        unsafe { take_message(LLVMPrintModuleToString(self.m)) }
    }

    pub fn write_bitcode(&self, path: &Path) -> Result<(), String> {
        let p = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string())?;
        if unsafe { LLVMWriteBitcodeToFile(self.m, p.as_ptr()) } != 0 {
            return Err(format!("cannot write {}", path.display()));
        }
        Ok(())
    }

    pub fn verify(&self) -> Result<(), String> {
        let mut msg = std::ptr::null_mut();
        let bad = unsafe {
            LLVMVerifyModule(
                self.m,
                LLVMVerifierFailureAction::LLVMReturnStatusAction,
                &mut msg,
            )
        };
        let text = unsafe { take_message(msg) };
        if bad != 0 {
            Err(text.lines().next().unwrap_or("").to_string())
        } else {
            Ok(())
        }
    }

    /// Run a new-pass-manager pipeline (e.g. "always-inline") over the module.
    pub fn run_passes(&self, pipeline: &str) -> Result<(), String> {
        let p = CString::new(pipeline).unwrap();
        unsafe {
            let opts = LLVMCreatePassBuilderOptions();
            let err = LLVMRunPasses(self.m, p.as_ptr(), std::ptr::null_mut(), opts);
            LLVMDisposePassBuilderOptions(opts);
            if !err.is_null() {
                let msg = llvm_sys::error::LLVMGetErrorMessage(err);
                return Err(take_message(msg));
            }
        }
        Ok(())
    }
}

impl Drop for Module<'_> {
    fn drop(&mut self) {
        unsafe { LLVMDisposeModule(self.m) }
    }
}

/// Delete the named function if it still exists and nothing refers to it.
///
/// # Safety
/// `m` must be a valid module.
pub unsafe fn delete_unused_function(m: LLVMModuleRef, name: &str) {
    let n = CString::new(name).unwrap();
    let f = LLVMGetNamedFunction(m, n.as_ptr());
    if !f.is_null() && LLVMGetFirstUse(f).is_null() {
        LLVMDeleteFunction(f);
    }
}

/// Delete the global variable `name` of `m` if it exists and nothing uses it.
///
/// # Safety
/// `m` must be a valid module.
pub unsafe fn delete_unused_global(m: LLVMModuleRef, name: &str) {
    let n = CString::new(name).unwrap();
    let g = LLVMGetNamedGlobal(m, n.as_ptr());
    if !g.is_null() && LLVMGetFirstUse(g).is_null() {
        LLVMDeleteGlobal(g);
    }
}

/// Whether some function defined in `m` may leave `rbp` without a frame pointer: its
/// `"frame-pointer"` attribute is absent, `none` or `reserved` (only `all` and `non-leaf`
/// keep one wherever a call is made, which is all the allocation stacks walk through).
///
/// # Safety
/// `m` must be a valid module.
pub unsafe fn lacks_frame_pointers(m: LLVMModuleRef) -> bool {
    let key = "frame-pointer";
    let mut lacks = false;
    for_each_function(m, |f| {
        let a =
            LLVMGetStringAttributeAtIndex(f, u32::MAX, key.as_ptr() as *const _, key.len() as u32);
        let keeps = !a.is_null() && {
            let mut len = 0u32;
            let v = LLVMGetStringAttributeValue(a, &mut len);
            matches!(
                std::slice::from_raw_parts(v as *const u8, len as usize),
                b"all" | b"non-leaf"
            )
        };
        lacks |= !keeps;
    });
    lacks
}

/// Define the empty weak hidden function `name` (a flag the runtime reads by its address).
///
/// # Safety
/// `ctx` and `m` must be valid and belong together.
pub unsafe fn define_flag_function(ctx: LLVMContextRef, m: LLVMModuleRef, name: &str) {
    let n = CString::new(name).unwrap();
    if !LLVMGetNamedFunction(m, n.as_ptr()).is_null() {
        return;
    }
    let ty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), std::ptr::null_mut(), 0, 0);
    let f = LLVMAddFunction(m, n.as_ptr(), ty);
    LLVMSetLinkage(f, LLVMLinkage::LLVMWeakAnyLinkage);
    LLVMSetVisibility(f, LLVMVisibility::LLVMHiddenVisibility);
    let b = LLVMCreateBuilderInContext(ctx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, f, c"entry".as_ptr()));
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
}

/// The name of a value (empty when it has none).
///
/// # Safety
/// `v` must be a valid value.
pub unsafe fn name_of(v: LLVMValueRef) -> String {
    let mut len = 0usize;
    let p = LLVMGetValueName2(v, &mut len);
    if p.is_null() {
        return String::new();
    }
    String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len)).into_owned()
}

/// Iterate the instructions of every defined function.
///
/// # Safety
/// `m` must be a valid module; the callback must not delete instructions.
pub unsafe fn for_each_function(m: LLVMModuleRef, mut f: impl FnMut(LLVMValueRef)) {
    let mut func = LLVMGetFirstFunction(m);
    while !func.is_null() {
        let next = LLVMGetNextFunction(func);
        if LLVMIsDeclaration(func) == 0 {
            f(func);
        }
        func = next;
    }
}

/// # Safety
/// `func` must be a valid function definition.
pub unsafe fn for_each_instruction(func: LLVMValueRef, mut f: impl FnMut(LLVMValueRef)) {
    let mut bb = LLVMGetFirstBasicBlock(func);
    while !bb.is_null() {
        let mut inst = LLVMGetFirstInstruction(bb);
        while !inst.is_null() {
            f(inst);
            inst = LLVMGetNextInstruction(inst);
        }
        bb = LLVMGetNextBasicBlock(bb);
    }
}
