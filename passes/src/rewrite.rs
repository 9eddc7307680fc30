//! Rewriting: a prologue per instrumented function and a hook call before each selected
//! access. The calls are inlined afterwards.

use crate::select::{Selection, Size};
use crate::Stats;
use llvm_sys::core::*;
use llvm_sys::debuginfo::*;
use llvm_sys::prelude::*;
use std::collections::HashMap;

/// # Safety
/// All handles must be valid and belong to `ctx`; `hooks` are `abi::HOOKS` in order.
pub unsafe fn rewrite(
    ctx: LLVMContextRef,
    hooks: &[LLVMValueRef],
    site_base: LLVMValueRef,
    sel: &Selection,
    stats: &mut Stats,
) {
    let (fn_counters, count, count_n) = (hooks[0], hooks[1], hooks[2]);
    let i32t = LLVMInt32TypeInContext(ctx);
    let i64t = LLVMInt64TypeInContext(ctx);
    let empty = c"".as_ptr();
    let b = LLVMCreateBuilderInContext(ctx);
    // The thread's counters for this module, computed once per function at entry.
    let mut counters: HashMap<LLVMValueRef, LLVMValueRef> = HashMap::new();
    for (local, a) in sel.accesses.iter().enumerate() {
        let sp = LLVMGetSubprogram(a.func);
        let c = *counters.entry(a.func).or_insert_with(|| {
            let entry = LLVMGetEntryBasicBlock(a.func);
            LLVMPositionBuilderBefore(b, LLVMGetFirstInstruction(entry));
            // An inlinable call in a function with debug info needs a location.
            let loc = if sp.is_null() {
                std::ptr::null_mut()
            } else {
                LLVMDIBuilderCreateDebugLocation(ctx, 0, 0, sp, std::ptr::null_mut())
            };
            LLVMSetCurrentDebugLocation2(b, loc);
            let base = LLVMBuildLoad2(b, i32t, site_base, c"profcc.base".as_ptr());
            let mut args = [base];
            LLVMBuildCall2(
                b,
                LLVMGlobalGetValueType(fn_counters),
                fn_counters,
                args.as_mut_ptr(),
                1,
                c"profcc.counters".as_ptr(),
            )
        });
        LLVMPositionBuilderBefore(b, a.inst);
        let mut loc = LLVMInstructionGetDebugLoc(a.inst);
        if loc.is_null() && !sp.is_null() {
            loc = LLVMDIBuilderCreateDebugLocation(ctx, 0, 0, sp, std::ptr::null_mut());
        }
        LLVMSetCurrentDebugLocation2(b, loc);
        let local = LLVMConstInt(i64t, local as u64, 0);
        match a.size {
            Size::Const(_) => {
                let mut args = [c, local];
                LLVMBuildCall2(
                    b,
                    LLVMGlobalGetValueType(count),
                    count,
                    args.as_mut_ptr(),
                    2,
                    empty,
                );
            }
            Size::Dyn(len) => {
                let size = LLVMBuildZExtOrBitCast(b, len, i64t, empty);
                let mut args = [c, local, size];
                LLVMBuildCall2(
                    b,
                    LLVMGlobalGetValueType(count_n),
                    count_n,
                    args.as_mut_ptr(),
                    3,
                    empty,
                );
            }
        }
    }
    LLVMDisposeBuilder(b);
    stats.bump("functions-instrumented", counters.len() as u64);
}
