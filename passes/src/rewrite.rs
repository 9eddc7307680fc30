//! Rewriting: a prologue per instrumented function and a hook call before each selected
//! access. The calls are inlined afterwards.

use crate::abi::{
    AccessKind, INFO_ATOMIC, INFO_EXTRA_READS_SHIFT, INFO_EXTRA_WRITES_SHIFT, INFO_SITE_SHIFT,
    INFO_WRITE, LINE_SIZE,
};
use crate::select::{Access, Selection, Size};
use crate::Stats;
use llvm_sys::core::*;
use llvm_sys::debuginfo::*;
use llvm_sys::prelude::*;
use std::collections::HashMap;

/// Per-function values computed once at entry: counters, owner word, reader bit, write mask.
#[derive(Default, Clone, Copy)]
struct Prologue {
    counters: Option<LLVMValueRef>,
    me: Option<LLVMValueRef>,
    rb: Option<LLVMValueRef>,
    wmask: Option<LLVMValueRef>,
}

struct Rewriter {
    ctx: LLVMContextRef,
    b: LLVMBuilderRef,
    hooks: Vec<LLVMValueRef>,
    site_base: LLVMValueRef,
    prologues: HashMap<LLVMValueRef, Prologue>,
    /// The count returned at the current group's first access.
    group_count: Option<LLVMValueRef>,
}

impl Rewriter {
    fn hook(&self, name: &str) -> LLVMValueRef {
        let i = crate::abi::names::HOOKS
            .iter()
            .position(|h| *h == name)
            .expect("known hook");
        self.hooks[i]
    }

    unsafe fn call(
        &self,
        hook: &str,
        args: &mut [LLVMValueRef],
        name: &std::ffi::CStr,
    ) -> LLVMValueRef {
        let f = self.hook(hook);
        LLVMBuildCall2(
            self.b,
            LLVMGlobalGetValueType(f),
            f,
            args.as_mut_ptr(),
            args.len() as u32,
            name.as_ptr(),
        )
    }

    /// A prologue value of `func`, built at its entry on first use.
    unsafe fn entry_value(&mut self, func: LLVMValueRef, which: u8) -> LLVMValueRef {
        let p = self.prologues.entry(func).or_default();
        let slot = match which {
            0 => &mut p.counters,
            1 => &mut p.me,
            2 => &mut p.rb,
            _ => &mut p.wmask,
        };
        if let Some(v) = *slot {
            return v;
        }
        let entry = LLVMGetEntryBasicBlock(func);
        LLVMPositionBuilderBefore(self.b, LLVMGetFirstInstruction(entry));
        // An inlinable call in a function with debug info needs a location.
        let sp = LLVMGetSubprogram(func);
        let loc = if sp.is_null() {
            std::ptr::null_mut()
        } else {
            LLVMDIBuilderCreateDebugLocation(self.ctx, 0, 0, sp, std::ptr::null_mut())
        };
        LLVMSetCurrentDebugLocation2(self.b, loc);
        let v = match which {
            0 => {
                let i32t = LLVMInt32TypeInContext(self.ctx);
                let base = LLVMBuildLoad2(self.b, i32t, self.site_base, c"profcc.base".as_ptr());
                self.call(
                    crate::abi::names::FN_COUNTERS,
                    &mut [base],
                    c"profcc.counters",
                )
            }
            1 => self.call(crate::abi::names::FN_ME, &mut [], c"profcc.me"),
            2 => self.call(crate::abi::names::FN_RB, &mut [], c"profcc.rb"),
            _ => self.call(crate::abi::names::FN_WMASK, &mut [], c"profcc.wmask"),
        };
        let p = self.prologues.get_mut(&func).unwrap();
        *match which {
            0 => &mut p.counters,
            1 => &mut p.me,
            2 => &mut p.rb,
            _ => &mut p.wmask,
        } = Some(v);
        v
    }

    unsafe fn access(&mut self, local: usize, a: &Access, sharing: bool) {
        let i64t = LLVMInt64TypeInContext(self.ctx);
        let c = self.entry_value(a.func, 0);
        let fixed_line = matches!(a.size, Size::Const(n) if n <= LINE_SIZE);
        let check = sharing && a.check;
        let (me, rb, wmask) = if !check || !fixed_line {
            (None, None, None)
        } else if a.kind.writes() {
            // A write other than its group's sampler never samples: a mask of all ones.
            let wmask = if a.samples {
                self.entry_value(a.func, 3)
            } else {
                LLVMConstInt(i64t, u64::MAX, 0)
            };
            (Some(self.entry_value(a.func, 1)), None, Some(wmask))
        } else {
            (None, Some(self.entry_value(a.func, 2)), None)
        };
        LLVMPositionBuilderBefore(self.b, a.inst);
        let mut loc = LLVMInstructionGetDebugLoc(a.inst);
        let sp = LLVMGetSubprogram(a.func);
        if loc.is_null() && !sp.is_null() {
            loc = LLVMDIBuilderCreateDebugLocation(self.ctx, 0, 0, sp, std::ptr::null_mut());
        }
        LLVMSetCurrentDebugLocation2(self.b, loc);
        let localv = LLVMConstInt(i64t, local as u64, 0);
        let leaderv = LLVMConstInt(i64t, a.leader as u64, 0);
        let mut info = if a.kind.writes() { INFO_WRITE } else { 0 };
        if a.kind == AccessKind::Atomic {
            info |= INFO_ATOMIC;
        }
        info |= (a.extra_reads as u64) << INFO_EXTRA_READS_SHIFT;
        info |= (a.extra_writes as u64) << INFO_EXTRA_WRITES_SHIFT;
        info |= ((local - a.leader) as u64) << INFO_SITE_SHIFT;
        let empty = c"";
        // The group's count, once, at its first access (run-time lengths count on their own).
        if let Size::Dyn(len) = a.size {
            let size = LLVMBuildZExtOrBitCast(self.b, len, i64t, c"".as_ptr());
            if check {
                let infov = LLVMConstInt(i64t, info, 0);
                let mut args = [c, localv, a.ptr, size, infov];
                self.call(crate::abi::names::RANGE_N, &mut args, empty);
            } else {
                self.call(crate::abi::names::COUNT_N, &mut [c, localv, size], empty);
            }
            return;
        }
        if a.leader == local {
            let n = self.call(crate::abi::names::COUNT, &mut [c, localv], c"profcc.n");
            self.group_count = Some(n);
        }
        let Size::Const(n) = a.size else { return };
        if !check {
            return;
        }
        let count = self
            .group_count
            .expect("a group's first access comes first");
        if n <= LINE_SIZE {
            let infov = LLVMConstInt(i64t, info | n.min(255), 0);
            if a.kind.writes() {
                let mut args = [c, leaderv, count, a.ptr, infov, me.unwrap(), wmask.unwrap()];
                self.call(crate::abi::names::WRITE, &mut args, empty);
            } else {
                let mut args = [c, leaderv, a.ptr, infov, rb.unwrap()];
                self.call(crate::abi::names::READ, &mut args, empty);
            }
        } else {
            let lenv = LLVMConstInt(i64t, n, 0);
            let infov = LLVMConstInt(i64t, info, 0);
            let mut args = [c, leaderv, a.ptr, lenv, infov];
            self.call(crate::abi::names::RANGE, &mut args, empty);
        }
    }
}

/// # Safety
/// All handles must be valid and belong to `ctx`; `hooks` are `abi::names::HOOKS` in order.
pub unsafe fn rewrite(
    ctx: LLVMContextRef,
    hooks: &[LLVMValueRef],
    site_base: LLVMValueRef,
    sel: &Selection,
    sharing: bool,
    stats: &mut Stats,
) {
    let mut r = Rewriter {
        ctx,
        b: LLVMCreateBuilderInContext(ctx),
        hooks: hooks.to_vec(),
        site_base,
        prologues: HashMap::new(),
        group_count: None,
    };
    for (local, a) in sel.accesses.iter().enumerate() {
        r.access(local, a, sharing);
    }
    LLVMDisposeBuilder(r.b);
    stats.bump("functions-instrumented", r.prologues.len() as u64);
}
