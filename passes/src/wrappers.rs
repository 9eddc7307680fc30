//! Allocation wrappers: functions whose job is to call an allocator and return the block
//! (`xmalloc`, Phoenix's `MALLOC`/`CALLOC` and `mem_malloc`, sqlite's `sqlite3Malloc` chain).
//! The report names a heap object by the first frame of its allocation stack outside them,
//! the caller's line, so the pass lists the module's wrappers in its descriptor
//! (`ModuleDesc::wrappers`).
//!
//! A function is a wrapper when
//! - it returns a pointer, and every value it returns is the result of an allocator call or of
//!   a wrapper call, possibly through casts, a null check's phi/select (the other input null) or
//!   a local variable (an `alloca` every store to which is such a value: `-O0` code);
//! - it does nothing else: it stores only to its own local variables (and may `memset` the
//!   block, as `xcalloc` does), and calls only allocators, wrappers, intrinsics and functions
//!   that do not return; anything in a block that ends in `unreachable` (the failure path:
//!   `perror`, `fprintf(stderr, ...)`, then `exit`/`abort`/`assert`) is free.
//!
//! A wrapper the optimiser inlined everywhere and deleted (a `static inline` helper at `-O2`)
//! is found by its inlined code: an allocator call located in an inlined function whose other
//! inlined instructions (same inline instance) pass the same body rules; it is listed by its
//! debug-info name. Macros need nothing: clang gives a macro's code the location of its
//! expansion, the caller's line.
//!
//! Names are linkage names (C++ mangled); the report demangles them.

use crate::llvm::{for_each_function, for_each_instruction, name_of};
use llvm_sys::core::*;
use llvm_sys::debuginfo::*;
use llvm_sys::prelude::*;
use llvm_sys::{LLVMOpcode, LLVMTypeKind};
use std::collections::{BTreeSet, HashMap, HashSet};

/// Functions that return a fresh heap block (C, POSIX, C++ operator new in every form).
pub const ALLOCATORS: &[&str] = &[
    "malloc",
    "calloc",
    "realloc",
    "reallocarray",
    "aligned_alloc",
    "memalign",
    "valloc",
    "pvalloc",
    "strdup",
    "strndup",
    "_Znwm",
    "_Znam",
    "_ZnwmRKSt9nothrow_t",
    "_ZnamRKSt9nothrow_t",
    "_ZnwmSt11align_val_t",
    "_ZnamSt11align_val_t",
    "_ZnwmSt11align_val_tRKSt9nothrow_t",
    "_ZnamSt11align_val_tRKSt9nothrow_t",
];

/// The module's allocation wrappers, sorted: defined functions and inlined ones.
///
/// # Safety
/// `m` must be a valid module.
pub unsafe fn find(m: LLVMModuleRef) -> Vec<String> {
    let mut wrappers: HashSet<String> = HashSet::new();
    let mut defined: Vec<(LLVMValueRef, String)> = Vec::new();
    for_each_function(m, |f| {
        let n = name_of(f);
        if !n.starts_with("__profcc_") && !n.starts_with("profcc.") {
            defined.push((f, n));
        }
    });
    // A wrapper may call a wrapper defined after it: iterate to a fixed point.
    loop {
        let before = wrappers.len();
        for (f, n) in &defined {
            if !wrappers.contains(n) && is_wrapper(*f, &wrappers) {
                wrappers.insert(n.clone());
            }
        }
        if wrappers.len() == before {
            break;
        }
    }
    let mut out: BTreeSet<String> = wrappers.into_iter().collect();
    for (f, _) in &defined {
        inlined_wrappers(*f, &out.iter().cloned().collect(), &mut out);
    }
    out.into_iter().collect()
}

fn is_allocator(name: &str, wrappers: &HashSet<String>) -> bool {
    ALLOCATORS.contains(&name) || wrappers.contains(name)
}

/// The function a call instruction calls directly (empty for an indirect call).
unsafe fn callee_name(call: LLVMValueRef) -> String {
    let c = LLVMGetCalledValue(call);
    if c.is_null() || LLVMIsAFunction(c).is_null() {
        return String::new();
    }
    name_of(c)
}

unsafe fn is_call(i: LLVMValueRef) -> bool {
    !LLVMIsACallInst(i).is_null() || !LLVMIsAInvokeInst(i).is_null()
}

unsafe fn noreturn(call: LLVMValueRef) -> bool {
    let name = "noreturn";
    let kind = LLVMGetEnumAttributeKindForName(name.as_ptr() as *const _, name.len());
    if kind == 0 {
        return false;
    }
    if !LLVMGetCallSiteEnumAttribute(call, u32::MAX, kind).is_null() {
        return true;
    }
    let c = LLVMGetCalledValue(call);
    !c.is_null()
        && !LLVMIsAFunction(c).is_null()
        && !LLVMGetEnumAttributeAtIndex(c, u32::MAX, kind).is_null()
}

/// The block ends in `unreachable`: a failure path.
unsafe fn failure_block(i: LLVMValueRef) -> bool {
    let t = LLVMGetBasicBlockTerminator(LLVMGetInstructionParent(i));
    !t.is_null() && LLVMGetInstructionOpcode(t) == LLVMOpcode::LLVMUnreachable
}

/// Whether one instruction of a wrapper's body is allowed (see the module comment).
unsafe fn allowed(i: LLVMValueRef, wrappers: &HashSet<String>) -> bool {
    use LLVMOpcode::*;
    if failure_block(i) {
        return true;
    }
    match LLVMGetInstructionOpcode(i) {
        LLVMStore => {
            let p = strip(LLVMGetOperand(i, 1));
            !LLVMIsAAllocaInst(p).is_null()
        }
        LLVMCall | LLVMInvoke => {
            let n = callee_name(i);
            is_allocator(&n, wrappers)
                || n.starts_with("llvm.dbg")
                || n.starts_with("llvm.lifetime")
                || n.starts_with("llvm.memset")
                || n.starts_with("llvm.assume")
                || n.starts_with("llvm.experimental.noalias")
                || noreturn(i)
        }
        LLVMAtomicRMW | LLVMAtomicCmpXchg | LLVMFence => false,
        LLVMLoad => {
            // Its own locals (`-O0`); reading other memory means it does more than allocate.
            let p = strip(LLVMGetOperand(i, 0));
            !LLVMIsAAllocaInst(p).is_null()
        }
        _ => true,
    }
}

/// Look through casts and constant-offset-free GEPs.
unsafe fn strip(mut v: LLVMValueRef) -> LLVMValueRef {
    for _ in 0..8 {
        if !LLVMIsACastInst(v).is_null() {
            v = LLVMGetOperand(v, 0);
        } else {
            break;
        }
    }
    v
}

/// `v` is an allocator's or wrapper's result (or null, on a failure-check path).
unsafe fn from_allocator(
    v: LLVMValueRef,
    wrappers: &HashSet<String>,
    seen: &mut HashSet<LLVMValueRef>,
    null_ok: bool,
) -> bool {
    let v = strip(v);
    if !seen.insert(v) {
        return true; // a cycle through phis: decided by the other inputs
    }
    if null_ok && LLVMIsNull(v) != 0 {
        return true;
    }
    if is_call(v) {
        return is_allocator(&callee_name(v), wrappers);
    }
    if !LLVMIsAPHINode(v).is_null() {
        let n = LLVMCountIncoming(v);
        let mut any = false;
        for k in 0..n {
            let x = LLVMGetIncomingValue(v, k);
            if LLVMIsNull(strip(x)) != 0 {
                continue;
            }
            if !from_allocator(x, wrappers, seen, true) {
                return false;
            }
            any = true;
        }
        return any;
    }
    if !LLVMIsASelectInst(v).is_null() {
        return from_allocator(LLVMGetOperand(v, 1), wrappers, seen, true)
            && from_allocator(LLVMGetOperand(v, 2), wrappers, seen, true);
    }
    if !LLVMIsALoadInst(v).is_null() {
        // A local variable: every value stored to it comes from an allocator.
        let slot = strip(LLVMGetOperand(v, 0));
        if LLVMIsAAllocaInst(slot).is_null() {
            return false;
        }
        let mut any = false;
        let mut u = LLVMGetFirstUse(slot);
        while !u.is_null() {
            let user = LLVMGetUser(u);
            if !LLVMIsAStoreInst(user).is_null() && strip(LLVMGetOperand(user, 1)) == slot {
                let stored = LLVMGetOperand(user, 0);
                if !from_allocator(stored, wrappers, seen, true) {
                    return false;
                }
                any = true;
            }
            u = LLVMGetNextUse(u);
        }
        return any;
    }
    false
}

unsafe fn is_wrapper(f: LLVMValueRef, wrappers: &HashSet<String>) -> bool {
    let fty = LLVMGlobalGetValueType(f);
    if LLVMGetTypeKind(LLVMGetReturnType(fty)) != LLVMTypeKind::LLVMPointerTypeKind {
        return false;
    }
    let mut ok = true;
    let mut rets = 0;
    for_each_instruction(f, |i| {
        if !ok {
            return;
        }
        if LLVMGetInstructionOpcode(i) == LLVMOpcode::LLVMRet {
            rets += 1;
            let v = LLVMGetOperand(i, 0);
            if v.is_null() || !from_allocator(v, wrappers, &mut HashSet::new(), false) {
                ok = false;
            }
        } else if !allowed(i, wrappers) {
            ok = false;
        }
    });
    ok && rets > 0
}

/// Operand `k` of a metadata node as an MDString, when it is one.
unsafe fn md_string_operand(ctx: LLVMContextRef, md: LLVMMetadataRef, k: u32) -> Option<String> {
    let v = LLVMMetadataAsValue(ctx, md);
    let n = LLVMGetMDNodeNumOperands(v);
    if k >= n {
        return None;
    }
    let mut ops = vec![std::ptr::null_mut(); n as usize];
    LLVMGetMDNodeOperands(v, ops.as_mut_ptr());
    let op = ops[k as usize];
    if op.is_null() {
        return None;
    }
    let mut len = 0u32;
    let p = LLVMGetMDString(op, &mut len);
    if p.is_null() || len == 0 {
        return None;
    }
    Some(
        String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len as usize))
            .into_owned(),
    )
}

/// The subprogram a local scope belongs to (lexical blocks walked up through their scope).
unsafe fn subprogram_of(ctx: LLVMContextRef, mut scope: LLVMMetadataRef) -> LLVMMetadataRef {
    use llvm_sys::debuginfo::LLVMMetadataKind::*;
    for _ in 0..64 {
        if scope.is_null() {
            return scope;
        }
        match LLVMGetMetadataKind(scope) {
            LLVMDISubprogramMetadataKind => return scope,
            LLVMDILexicalBlockMetadataKind | LLVMDILexicalBlockFileMetadataKind => {
                // Operand 1 of a lexical block is its parent scope.
                let v = LLVMMetadataAsValue(ctx, scope);
                let n = LLVMGetMDNodeNumOperands(v);
                if n < 2 {
                    return std::ptr::null_mut();
                }
                let mut ops = vec![std::ptr::null_mut(); n as usize];
                LLVMGetMDNodeOperands(v, ops.as_mut_ptr());
                scope = if ops[1].is_null() {
                    std::ptr::null_mut()
                } else {
                    LLVMValueAsMetadata(ops[1])
                };
            }
            _ => return std::ptr::null_mut(),
        }
    }
    std::ptr::null_mut()
}

/// The linkage name of a subprogram, else its name (DISubprogram operands 3 and 2).
unsafe fn subprogram_name(ctx: LLVMContextRef, sp: LLVMMetadataRef) -> Option<String> {
    md_string_operand(ctx, sp, 3).or_else(|| md_string_operand(ctx, sp, 2))
}

/// Inlined wrappers in `f`: an allocator call whose location is inside an inlined function
/// (an inline instance: one `inlinedAt`) whose other instructions follow the body rules.
unsafe fn inlined_wrappers(
    f: LLVMValueRef,
    wrappers: &HashSet<String>,
    out: &mut BTreeSet<String>,
) {
    let ctx = LLVMGetModuleContext(LLVMGetGlobalParent(f));
    // Instructions per inline instance (the innermost inlinedAt location).
    let mut instances: HashMap<LLVMMetadataRef, (LLVMMetadataRef, Vec<LLVMValueRef>)> =
        HashMap::new();
    for_each_instruction(f, |i| {
        let loc = LLVMInstructionGetDebugLoc(i);
        if loc.is_null() {
            return;
        }
        let at = LLVMDILocationGetInlinedAt(loc);
        if at.is_null() {
            return;
        }
        let sp = subprogram_of(ctx, LLVMDILocationGetScope(loc));
        instances.entry(at).or_insert((sp, Vec::new())).1.push(i);
    });
    for (_, (sp, insts)) in instances {
        if sp.is_null() {
            continue;
        }
        let allocates = insts
            .iter()
            .any(|&i| is_call(i) && is_allocator(&callee_name(i), wrappers) && !failure_block(i));
        if !allocates {
            continue;
        }
        let clean = insts.iter().all(|&i| {
            // In optimised code the wrapper's `return p` is a no-op: the caller uses the call's
            // result directly. Stores anywhere but the failure path are the caller's business
            // only when they are not located in the wrapper, which they are not here.
            LLVMGetInstructionOpcode(i) == LLVMOpcode::LLVMRet || allowed(i, wrappers)
        });
        if clean {
            if let Some(n) = subprogram_name(ctx, sp) {
                out.insert(n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    /// passes/tests/wrappers/w.c through clang-22 -gline-tables-only at -O0 and -O2.
    fn wrappers_of(ir: &str) -> Vec<String> {
        let ctx = crate::llvm::Context::new();
        let m = ctx.parse_ir(ir).unwrap();
        unsafe { super::find(m.raw()) }
    }

    #[test]
    fn functions_that_only_allocate_and_return_are_wrappers() {
        // -O0: the static inline CALLOC (assert), xmalloc (perror + exit), xxmalloc (a wrapper
        // of a wrapper) are; notwrap, which writes the block, and main are not.
        assert_eq!(
            wrappers_of(include_str!("../tests/wrappers/w.O0.ll")),
            ["CALLOC", "xmalloc", "xxmalloc"]
        );
        // -O2: CALLOC exists only inlined into main (found by its debug-info name).
        assert_eq!(
            wrappers_of(include_str!("../tests/wrappers/w.O2.ll")),
            ["CALLOC", "xmalloc", "xxmalloc"]
        );
    }
}
