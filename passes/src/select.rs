//! Selection: which memory accesses to instrument, and a counted reason for each one skipped.

use crate::abi::{AccessKind, MAX_MODULE_SITES};
use crate::llvm::{for_each_function, for_each_instruction, name_of};
use crate::Stats;
use llvm_sys::core::*;
use llvm_sys::prelude::*;
use llvm_sys::target::{LLVMGetModuleDataLayout, LLVMStoreSizeOfType};
use llvm_sys::LLVMOpcode;
use std::collections::HashMap;

#[derive(Clone, Copy)]
pub enum Size {
    Const(u64),
    /// Run-time length (memory intrinsics): the i64/i32 length operand.
    Dyn(LLVMValueRef),
}

pub struct Access {
    /// The instruction the hook call goes before.
    pub inst: LLVMValueRef,
    pub func: LLVMValueRef,
    /// The address accessed (address space 0).
    pub ptr: LLVMValueRef,
    pub kind: AccessKind,
    pub size: Size,
}

#[derive(Default)]
pub struct Selection {
    pub accesses: Vec<Access>,
}

/// What an address is based on, after stripping GEPs and casts.
enum Base {
    NonEscapingAlloca,
    ConstantGlobal,
    ThreadLocal,
    Other,
}

struct Selector {
    escapes: HashMap<LLVMValueRef, bool>,
}

impl Selector {
    unsafe fn base_of(&mut self, mut p: LLVMValueRef) -> Base {
        for _ in 0..32 {
            if !LLVMIsAGetElementPtrInst(p).is_null()
                || !LLVMIsABitCastInst(p).is_null()
                || !LLVMIsAAddrSpaceCastInst(p).is_null()
            {
                p = LLVMGetOperand(p, 0);
                continue;
            }
            if !LLVMIsAConstantExpr(p).is_null() {
                let op = LLVMGetConstOpcode(p);
                if matches!(
                    op,
                    LLVMOpcode::LLVMGetElementPtr
                        | LLVMOpcode::LLVMBitCast
                        | LLVMOpcode::LLVMAddrSpaceCast
                ) {
                    p = LLVMGetOperand(p, 0);
                    continue;
                }
            }
            if !LLVMIsACallInst(p).is_null() {
                let callee = LLVMGetCalledValue(p);
                if !callee.is_null() && name_of(callee).starts_with("llvm.threadlocal.address") {
                    return Base::ThreadLocal;
                }
            }
            break;
        }
        if !LLVMIsAAllocaInst(p).is_null() {
            let esc = match self.escapes.get(&p) {
                Some(&e) => e,
                None => {
                    let e = escapes(p, 0);
                    self.escapes.insert(p, e);
                    e
                }
            };
            return if esc {
                Base::Other
            } else {
                Base::NonEscapingAlloca
            };
        }
        if !LLVMIsAGlobalVariable(p).is_null() {
            if LLVMIsThreadLocal(p) != 0 {
                return Base::ThreadLocal;
            }
            if LLVMIsGlobalConstant(p) != 0 {
                return Base::ConstantGlobal;
            }
        }
        Base::Other
    }
}

/// Does the address `v` (an alloca or derived from one) leave the function's sight?
/// Loads through it, stores *to* it, GEPs/casts of it (recursively) and lifetime/debug
/// intrinsics do not; anything else (stored as a value, passed to a call, ptrtoint, phi,
/// select, returned) does.
unsafe fn escapes(v: LLVMValueRef, depth: u32) -> bool {
    if depth > 8 {
        return true;
    }
    let mut u = LLVMGetFirstUse(v);
    while !u.is_null() {
        let user = LLVMGetUser(u);
        let ok = if !LLVMIsALoadInst(user).is_null() {
            true
        } else if !LLVMIsAStoreInst(user).is_null() {
            LLVMGetOperand(user, 0) != v
        } else if !LLVMIsAGetElementPtrInst(user).is_null()
            || !LLVMIsABitCastInst(user).is_null()
            || !LLVMIsAAddrSpaceCastInst(user).is_null()
        {
            !escapes(user, depth + 1)
        } else if !LLVMIsACallInst(user).is_null() {
            let callee = LLVMGetCalledValue(user);
            let name = if callee.is_null() {
                String::new()
            } else {
                name_of(callee)
            };
            name.starts_with("llvm.lifetime.") || name.starts_with("llvm.dbg.")
        } else {
            false
        };
        if !ok {
            return true;
        }
        u = LLVMGetNextUse(u);
    }
    false
}

unsafe fn store_size(dl: llvm_sys::target::LLVMTargetDataRef, ty: LLVMTypeRef) -> u64 {
    LLVMStoreSizeOfType(dl, ty)
}

fn has_attr(func: LLVMValueRef, name: &str) -> bool {
    unsafe {
        let a = LLVMGetStringAttributeAtIndex(
            func,
            u32::MAX,
            name.as_ptr() as *const _,
            name.len() as u32,
        );
        if !a.is_null() {
            return true;
        }
        let kind = LLVMGetEnumAttributeKindForName(name.as_ptr() as *const _, name.len());
        kind != 0 && !LLVMGetEnumAttributeAtIndex(func, u32::MAX, kind).is_null()
    }
}

/// Walk the module and pick the accesses to instrument.
pub fn select(m: LLVMModuleRef, stats: &mut Stats) -> Selection {
    let mut sel = Selection::default();
    let mut selector = Selector {
        escapes: HashMap::new(),
    };
    unsafe {
        let dl = LLVMGetModuleDataLayout(m);
        for_each_function(m, |func| {
            let fname = name_of(func);
            if fname.starts_with("__profcc_") || fname.starts_with("profcc.") {
                return;
            }
            if has_attr(func, "disable_sanitizer_instrumentation") || has_attr(func, "naked") {
                stats.bump("skipped-function-attribute", 1);
                return;
            }
            stats.bump("functions", 1);
            for_each_instruction(func, |inst| {
                let (ptr, kind, size) = if !LLVMIsALoadInst(inst).is_null() {
                    (
                        LLVMGetOperand(inst, 0),
                        AccessKind::Read,
                        Size::Const(store_size(dl, LLVMTypeOf(inst))),
                    )
                } else if !LLVMIsAStoreInst(inst).is_null() {
                    let val = LLVMGetOperand(inst, 0);
                    (
                        LLVMGetOperand(inst, 1),
                        AccessKind::Write,
                        Size::Const(store_size(dl, LLVMTypeOf(val))),
                    )
                } else if !LLVMIsAAtomicRMWInst(inst).is_null()
                    || !LLVMIsAAtomicCmpXchgInst(inst).is_null()
                {
                    let val = LLVMGetOperand(inst, 1);
                    (
                        LLVMGetOperand(inst, 0),
                        AccessKind::Atomic,
                        Size::Const(store_size(dl, LLVMTypeOf(val))),
                    )
                } else if !LLVMIsACallInst(inst).is_null() {
                    let callee = LLVMGetCalledValue(inst);
                    if callee.is_null() || LLVMIsAFunction(callee).is_null() {
                        return;
                    }
                    let name = name_of(callee);
                    if !name.starts_with("llvm.") {
                        return;
                    }
                    let copy = name.starts_with("llvm.memcpy.")
                        || name.starts_with("llvm.memmove.")
                        || name.starts_with("llvm.memcpy.inline.");
                    let set = name.starts_with("llvm.memset.");
                    if name.starts_with("llvm.masked.")
                        || name.starts_with("llvm.vp.")
                        || name.contains("element.unordered.atomic")
                    {
                        stats.bump("skipped-masked-or-vp-intrinsic", 1);
                        return;
                    }
                    if !copy && !set {
                        return;
                    }
                    let len = LLVMGetOperand(inst, 2);
                    let size = if !LLVMIsAConstantInt(len).is_null() {
                        Size::Const(LLVMConstIntGetZExtValue(len))
                    } else {
                        Size::Dyn(len)
                    };
                    if copy {
                        push(
                            &mut sel,
                            &mut selector,
                            stats,
                            inst,
                            func,
                            LLVMGetOperand(inst, 1),
                            AccessKind::CopyRead,
                            size,
                        );
                    }
                    (LLVMGetOperand(inst, 0), AccessKind::CopyWrite, size)
                } else {
                    return;
                };
                push(&mut sel, &mut selector, stats, inst, func, ptr, kind, size);
            });
        });
    }
    sel
}

#[allow(clippy::too_many_arguments)]
unsafe fn push(
    sel: &mut Selection,
    selector: &mut Selector,
    stats: &mut Stats,
    inst: LLVMValueRef,
    func: LLVMValueRef,
    ptr: LLVMValueRef,
    kind: AccessKind,
    size: Size,
) {
    if LLVMGetPointerAddressSpace(LLVMTypeOf(ptr)) != 0 {
        stats.bump("skipped-address-space", 1);
        return;
    }
    match selector.base_of(ptr) {
        Base::NonEscapingAlloca => {
            stats.bump("skipped-stack", 1);
            return;
        }
        Base::ConstantGlobal => {
            stats.bump("skipped-constant", 1);
            return;
        }
        Base::ThreadLocal => {
            stats.bump("skipped-thread-local", 1);
            return;
        }
        Base::Other => {}
    }
    if sel.accesses.len() >= MAX_MODULE_SITES as usize {
        stats.bump("skipped-site-limit", 1);
        return;
    }
    stats.bump(
        match kind {
            AccessKind::Read => "instrumented-read",
            AccessKind::Write => "instrumented-write",
            AccessKind::Atomic => "instrumented-atomic",
            AccessKind::CopyRead | AccessKind::CopyWrite => "instrumented-memintrinsic",
        },
        1,
    );
    sel.accesses.push(Access {
        inst,
        func,
        ptr,
        kind,
        size,
    });
}
