//! Rewriting: a call of the hook before each selected access. The call is inlined later.

use crate::select::{Selection, Size};
use crate::Stats;
use llvm_sys::core::*;
use llvm_sys::debuginfo::*;
use llvm_sys::prelude::*;
use std::collections::HashMap;

/// # Safety
/// All handles must be valid and belong to `ctx`; `hook` is `void(i64, i32, i64)`.
pub unsafe fn rewrite(
    ctx: LLVMContextRef,
    _m: LLVMModuleRef,
    hook: LLVMValueRef,
    site_base: LLVMValueRef,
    sel: &Selection,
    stats: &mut Stats,
) {
    let i32t = LLVMInt32TypeInContext(ctx);
    let i64t = LLVMInt64TypeInContext(ctx);
    let hook_ty = LLVMGlobalGetValueType(hook);
    let empty = c"".as_ptr();
    let b = LLVMCreateBuilderInContext(ctx);
    // The module's site base, loaded once per function at entry.
    let mut bases: HashMap<LLVMValueRef, LLVMValueRef> = HashMap::new();
    for (local, a) in sel.accesses.iter().enumerate() {
        let base = *bases.entry(a.func).or_insert_with(|| {
            let entry = LLVMGetEntryBasicBlock(a.func);
            LLVMPositionBuilderBefore(b, LLVMGetFirstInstruction(entry));
            LLVMSetCurrentDebugLocation2(b, std::ptr::null_mut());
            LLVMBuildLoad2(b, i32t, site_base, c"profcc.base".as_ptr())
        });
        LLVMPositionBuilderBefore(b, a.inst);
        let mut loc = LLVMInstructionGetDebugLoc(a.inst);
        if loc.is_null() {
            let sp = llvm_sys::debuginfo::LLVMGetSubprogram(a.func);
            if !sp.is_null() {
                loc = LLVMDIBuilderCreateDebugLocation(ctx, 0, 0, sp, std::ptr::null_mut());
            }
        }
        LLVMSetCurrentDebugLocation2(b, loc);
        let gsite = LLVMBuildAdd(b, base, LLVMConstInt(i32t, local as u64, 0), empty);
        let addr = LLVMBuildPtrToInt(b, a.ptr, i64t, empty);
        let size = match a.size {
            Size::Const(n) => LLVMConstInt(i64t, n, 0),
            Size::Dyn(len) => LLVMBuildZExtOrBitCast(b, len, i64t, empty),
        };
        let mut args = [addr, gsite, size];
        LLVMBuildCall2(b, hook_ty, hook, args.as_mut_ptr(), 3, empty);
    }
    LLVMDisposeBuilder(b);
    stats.bump("functions-instrumented", bases.len() as u64);
}
