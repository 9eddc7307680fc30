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
    /// Checks merged into one call ([`merge_plan`]), and each access's merge.
    merges: Vec<Merge>,
    merge_of: Vec<Option<usize>>,
    /// The accesses' addresses (a merged call passes its members').
    ptrs: Vec<LLVMValueRef>,
    /// Each single-block loop's iteration count, once built ([`Rewriter::loop_trip`]).
    trips: HashMap<LLVMBasicBlockRef, Option<Trip>>,
    /// The last load of `__profcc_alone` a gate used: a later gate in its block with no call
    /// of the program's in between uses it too ([`Self::alone_now`]).
    alone_last: Option<LLVMValueRef>,
}

/// A single-block loop's iteration count in registers ([`Rewriter::loop_trip`]).
#[derive(Clone, Copy)]
struct Trip {
    /// In the loop: the count of the iteration under way (1 on the first).
    next: LLVMValueRef,
    /// At the exit: the iterations of the loop just left (0 when the exit was reached from
    /// elsewhere).
    total: LLVMValueRef,
    /// The exit's first instruction after its phis: code using `total` goes before it.
    at: LLVMValueRef,
    /// The exit is reached from the loop only.
    only_exit: bool,
}

/// Plain accesses of one epoch checked by one call of a merged checker, before the first of
/// them (abi::merged_checker_arg).
struct Merge {
    members: Vec<usize>,
    /// The merged checker's last argument.
    arg: u64,
    /// The member that is its group's sampling write (its first checked write).
    sampling: Option<usize>,
}

/// Can the access's check share a call with others of its epoch: an out-of-line check of a
/// plain access of 1, 2, 4 or 8 bytes that stands for itself alone.
fn mergeable(a: &Access) -> bool {
    a.check
        && matches!(a.kind, AccessKind::Read | AccessKind::Write)
        && matches!(a.size, Size::Const(1 | 2 | 4 | 8))
        && a.extra_reads == 0
        && a.extra_writes == 0
        && !(a.loop_blocks > 0 && a.loop_blocks <= crate::select::INLINE_LOOP_BLOCKS)
}

/// The merged checker call of `members` (in access order, one group and epoch), or None
/// when their sites are not consecutive or an address is computed after the first member's
/// access (the call goes before it: every member is checked before its access, as alone).
fn merge_of(acc: &[Access], members: &[usize]) -> Option<Merge> {
    let first = members[0];
    let leader = acc[first].leader;
    if members.iter().enumerate().any(|(k, &i)| i != first + k) {
        return None;
    }
    let at = acc[first].inst;
    if members[1..]
        .iter()
        .any(|&i| unsafe { !make_available(acc[i].ptr, at, 0) })
    {
        return None;
    }
    let fields: Vec<(bool, u64)> = members
        .iter()
        .map(|&i| {
            let Size::Const(n) = acc[i].size else {
                unreachable!()
            };
            (acc[i].kind == AccessKind::Write, n)
        })
        .collect();
    let arg = crate::abi::merged_checker_arg(first as u64, (first - leader) as u64, &fields)?;
    let sampling = members.iter().position(|&i| acc[i].samples);
    Some(Merge {
        members: members.to_vec(),
        arg,
        sampling,
    })
}

/// Is `v` computed before `at` runs: not an instruction, an instruction of another block (it
/// dominates `at`'s block, which uses it), or one before `at` in the same block?
unsafe fn available_before(v: LLVMValueRef, at: LLVMValueRef) -> bool {
    if LLVMIsAInstruction(v).is_null()
        || LLVMGetInstructionParent(v) != LLVMGetInstructionParent(at)
    {
        return true;
    }
    let mut x = LLVMGetNextInstruction(v);
    while !x.is_null() {
        if x == at {
            return true;
        }
        x = LLVMGetNextInstruction(x);
    }
    false
}

/// Make `v` computed before `at` runs: when it is an address computation (GEP, cast) of the
/// same block after `at` whose operands can be, move it before `at` (it has no side effect;
/// the access still folds it into its addressing mode). False when it cannot (e.g. a pointer
/// loaded in between).
unsafe fn make_available(v: LLVMValueRef, at: LLVMValueRef, depth: u32) -> bool {
    if available_before(v, at) {
        return true;
    }
    if depth > 4 || (LLVMIsAGetElementPtrInst(v).is_null() && LLVMIsACastInst(v).is_null()) {
        return false;
    }
    let n = LLVMGetNumOperands(v);
    if !(0..n).all(|k| make_available(LLVMGetOperand(v, k as u32), at, depth + 1)) {
        return false;
    }
    let b = LLVMCreateBuilderInContext(LLVMGetTypeContext(LLVMTypeOf(v)));
    LLVMPositionBuilderBefore(b, at);
    let mut len = 0;
    let name = LLVMGetValueName2(v, &mut len);
    let name = std::ffi::CString::new(std::slice::from_raw_parts(name as *const u8, len))
        .unwrap_or_default();
    LLVMInstructionRemoveFromParent(v);
    // (Inserting renames it; keep its name.)
    LLVMInsertIntoBuilderWithName(b, v, name.as_ptr());
    LLVMDisposeBuilder(b);
    true
}

/// Merge the out-of-line checks of each epoch: runs of [`mergeable`] checks with no other
/// check between them (covered accesses do not count), cut into calls of four, three or
/// two. One call instead of several saves a call and a site immediate per check; each member
/// is still checked on its own in the checker, in access order, before its access: the door
/// sees the same accesses with the same sites and info, a few instructions earlier (no call,
/// atomic or fence in between: one epoch).
fn merge_plan(acc: &[Access]) -> (Vec<Merge>, Vec<Option<usize>>) {
    let mut merges = Vec::new();
    let mut merge_of_access = vec![None; acc.len()];
    let mut run: Vec<usize> = Vec::new();
    let mut flush = |run: &mut Vec<usize>| {
        let mut i = 0;
        while i < run.len() {
            let want = match run.len() - i {
                n @ 1..=3 => n,
                5 => 3,
                _ => 4,
            };
            let mut k = want;
            let mut merge = None;
            while k >= 2 {
                merge = merge_of(acc, &run[i..i + k]);
                if merge.is_some() {
                    break;
                }
                k -= 1;
            }
            if let Some(m) = merge {
                for &j in &m.members {
                    merge_of_access[j] = Some(merges.len());
                }
                merges.push(m);
                i += k;
            } else {
                i += 1;
            }
        }
        run.clear();
    };
    for (i, a) in acc.iter().enumerate() {
        if let Some(&last) = run.last() {
            let l = &acc[last];
            if l.func != a.func || l.group != a.group || l.epoch != a.epoch {
                flush(&mut run);
            }
        }
        if mergeable(a) {
            run.push(i);
        } else if a.check {
            flush(&mut run);
        }
    }
    flush(&mut run);
    (merges, merge_of_access)
}

/// Is `to` reached from `from` (earlier in one block) without a call that could start a
/// thread: anything but the runtime's hooks and checkers and LLVM's intrinsics?
unsafe fn no_call_between(from: LLVMValueRef, to: LLVMValueRef) -> bool {
    let mut i = LLVMGetNextInstruction(from);
    while !i.is_null() && i != to {
        if !LLVMIsACallInst(i).is_null() {
            let callee = LLVMGetCalledValue(i);
            let mut len = 0;
            let name = LLVMGetValueName2(callee, &mut len);
            let name = std::slice::from_raw_parts(name as *const u8, len);
            if !(name.starts_with(b"__profcc_") || name.starts_with(b"llvm.")) {
                return false;
            }
        }
        i = LLVMGetNextInstruction(i);
    }
    i == to
}

impl Rewriter {
    fn hook(&self, name: &str) -> LLVMValueRef {
        let i = crate::abi::names::HOOKS
            .iter()
            .chain(&crate::abi::names::CHECKERS)
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
        let call = LLVMBuildCall2(
            self.b,
            LLVMGlobalGetValueType(f),
            f,
            args.as_mut_ptr(),
            args.len() as u32,
            name.as_ptr(),
        );
        // The checkers' preserve_most convention.
        LLVMSetInstructionCallConv(call, LLVMGetFunctionCallConv(f));
        call
    }

    /// A straight-line access's checker call, through its gate (hooks/sharing.c, "The
    /// gates"): the checker is called only while more than one thread runs, so a lone
    /// thread pays a branch per check, not a call (the Lua interpreter 0.84 s -> 0.46 s with
    /// `alloc_sample=65536`, native 0.22 s). Its group counts in place, never in the checker.
    unsafe fn check_call(&mut self, checker: &str, args: &[LLVMValueRef]) {
        use crate::abi::names::{GATE, GATE_K, GATE_MERGED};
        let empty = c"";
        let i64t = LLVMInt64TypeInContext(self.ctx);
        let gate = match args.len() {
            2 => GATE_K,
            3 if LLVMTypeOf(args[1]) == i64t => GATE,
            n => GATE_MERGED[n - 3],
        };
        let mut with = args.to_vec();
        with.push(self.hook(checker));
        with.push(self.alone_now());
        self.call(gate, &mut with, empty);
    }

    /// `__profcc_alone` at the builder's position: a relaxed load, or the block's last one
    /// when no call but the runtime's hooks and LLVM's intrinsics lies between (a second
    /// thread starts only in a call of this thread's; a stale "not alone", the other threads
    /// ended since, costs a whole check).
    unsafe fn alone_now(&mut self) -> LLVMValueRef {
        let i64t = LLVMInt64TypeInContext(self.ctx);
        let block = LLVMGetInsertBlock(self.b);
        let module = LLVMGetGlobalParent(LLVMGetBasicBlockParent(block));
        let g = LLVMGetNamedGlobal(module, c"__profcc_alone".as_ptr());
        assert!(!g.is_null(), "the hooks declare __profcc_alone");
        let fresh = LLVMBuildLoad2(self.b, i64t, g, c"profcc.alone".as_ptr());
        LLVMSetOrdering(
            fresh,
            llvm_sys::LLVMAtomicOrdering::LLVMAtomicOrderingMonotonic,
        );
        LLVMSetAlignment(fresh, 8);
        if let Some(prev) = self.alone_last {
            if LLVMGetInstructionParent(prev) == block && no_call_between(prev, fresh) {
                LLVMInstructionEraseFromParent(fresh);
                return prev;
            }
        }
        self.alone_last = Some(fresh);
        fresh
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

    /// The iteration count of a single-block loop, built once per block and shared by every
    /// hook of it that counts in a register: a phi at the block's top (0 on entry) and one add
    /// after it (`next`, the iteration's count: 1 on the first), and its total at the top of
    /// the loop's exit block (through a phi there when other blocks reach it too: they give
    /// 0), with the place after the exit's phis where the totals are used. Only for a block
    /// that loops to itself and leaves to one other block, with no call that might not return
    /// (nothing but intrinsics and profcc's own hooks): every iteration that starts reaches
    /// the exit edge, so counts added there stay exact. None when the block does not qualify.
    unsafe fn loop_trip(&mut self, bb: LLVMBasicBlockRef) -> Option<Trip> {
        if let Some(t) = self.trips.get(&bb) {
            return *t;
        }
        let t = self.build_loop_trip(bb);
        self.trips.insert(bb, t);
        t
    }

    unsafe fn build_loop_trip(&mut self, bb: LLVMBasicBlockRef) -> Option<Trip> {
        let term = LLVMGetBasicBlockTerminator(bb);
        if term.is_null() || LLVMGetNumSuccessors(term) != 2 || LLVMIsABranchInst(term).is_null() {
            return None;
        }
        let (s0, s1) = (LLVMGetSuccessor(term, 0), LLVMGetSuccessor(term, 1));
        let exit = match (s0 == bb, s1 == bb) {
            (true, false) => s1,
            (false, true) => s0,
            _ => return None,
        };
        // The exit's predecessors, one per edge (only terminators may name it).
        let mut exit_preds = Vec::new();
        let mut u = LLVMGetFirstUse(LLVMBasicBlockAsValue(exit));
        while !u.is_null() {
            let user = LLVMGetUser(u);
            if LLVMIsATerminatorInst(user).is_null() {
                return None;
            }
            exit_preds.push(LLVMGetInstructionParent(user));
            u = LLVMGetNextUse(u);
        }
        // No calls other than intrinsics and the hooks already inserted before earlier
        // accesses of the block (they all return).
        let mut inst = LLVMGetFirstInstruction(bb);
        while !inst.is_null() {
            if !LLVMIsACallInst(inst).is_null()
                || !LLVMIsAInvokeInst(inst).is_null()
                || !LLVMIsACallBrInst(inst).is_null()
            {
                let callee = LLVMGetCalledValue(inst);
                // Our own hooks are the functions `call` inserts: `self.hooks`.
                if callee.is_null()
                    || LLVMIsAFunction(callee).is_null()
                    || !(self.hooks.contains(&callee)
                        || crate::llvm::name_of(callee).starts_with("llvm."))
                {
                    return None;
                }
            }
            inst = LLVMGetNextInstruction(inst);
        }
        // The predecessors, one entry per edge; only branches and switches may reach it.
        let mut preds = Vec::new();
        let mut u = LLVMGetFirstUse(LLVMBasicBlockAsValue(bb));
        while !u.is_null() {
            let user = LLVMGetUser(u);
            if LLVMIsATerminatorInst(user).is_null()
                || (LLVMIsABranchInst(user).is_null() && LLVMIsASwitchInst(user).is_null())
            {
                return None;
            }
            preds.push(LLVMGetInstructionParent(user));
            u = LLVMGetNextUse(u);
        }
        let i64t = LLVMInt64TypeInContext(self.ctx);
        LLVMPositionBuilderBeforeInstrAndDbgRecords(self.b, LLVMGetFirstInstruction(bb));
        LLVMSetCurrentDebugLocation2(self.b, std::ptr::null_mut());
        let phi = LLVMBuildPhi(self.b, i64t, c"profcc.iter".as_ptr());
        let mut body = LLVMGetFirstInstruction(bb);
        while !LLVMIsAPHINode(body).is_null() {
            body = LLVMGetNextInstruction(body);
        }
        LLVMPositionBuilderBefore(self.b, body);
        let one = LLVMConstInt(i64t, 1, 0);
        let next = LLVMBuildAdd(self.b, phi, one, c"profcc.iter.next".as_ptr());
        let zero = LLVMConstInt(i64t, 0, 0);
        for p in preds {
            let (mut v, mut b) = if p == bb { (next, p) } else { (zero, p) };
            LLVMAddIncoming(phi, &mut v, &mut b, 1);
        }
        // At the exit's top, after its phis: the total of the iterations once. An exit that
        // other blocks reach too takes it through a phi (0 from them), so that no block is
        // added on the edge and none of the exit's phis is rebuilt (later accesses may name
        // them, and LLVM-C cannot rename a phi's incoming block).
        let mut at = LLVMGetFirstInstruction(exit);
        while !at.is_null() && !LLVMIsAPHINode(at).is_null() {
            at = LLVMGetNextInstruction(at);
        }
        let only_exit = exit_preds.iter().all(|&p| p == bb);
        let total = if only_exit {
            next
        } else {
            // Before the debug records of the block's first instruction too: a phi takes none.
            LLVMPositionBuilderBeforeInstrAndDbgRecords(self.b, LLVMGetFirstInstruction(exit));
            let phi = LLVMBuildPhi(self.b, i64t, c"profcc.loop.iters".as_ptr());
            for p in exit_preds {
                let mut v = if p == bb { next } else { zero };
                LLVMAddIncoming(phi, &mut v, &mut { p }, 1);
            }
            phi
        };
        Some(Trip {
            next,
            total,
            at,
            only_exit,
        })
    }

    /// Count a group that is the body of a single-block loop in a register ([`loop_trip`]):
    /// the total added to the group's counter once, at the top of the loop's exit block.
    /// Returns the iteration's count or None when the block does not qualify.
    unsafe fn hoist_loop_count(&mut self, a: &Access, local: usize) -> Option<LLVMValueRef> {
        let trip = self.loop_trip(LLVMGetInstructionParent(a.inst))?;
        let i64t = LLVMInt64TypeInContext(self.ctx);
        let c = self.entry_value(a.func, 0);
        LLVMPositionBuilderBefore(self.b, trip.at);
        LLVMSetCurrentDebugLocation2(self.b, std::ptr::null_mut());
        let stride = crate::abi::COUNTER_STRIDE as u64;
        let mut idx = [LLVMConstInt(i64t, stride * local as u64, 0)];
        let slot = LLVMBuildInBoundsGEP2(self.b, i64t, c, idx.as_mut_ptr(), 1, c"".as_ptr());
        let old = LLVMBuildLoad2(self.b, i64t, slot, c"".as_ptr());
        let sum = LLVMBuildAdd(self.b, old, trip.total, c"profcc.loop.count".as_ptr());
        LLVMBuildStore(self.b, sum, slot);
        Some(trip.next)
    }

    /// Put the builder right before the access, with its debug location (a function with
    /// debug info needs one on every inlinable call: line 0 of the function when the access
    /// has none).
    unsafe fn position_before_access(&mut self, a: &Access) -> LLVMMetadataRef {
        LLVMPositionBuilderBefore(self.b, a.inst);
        let mut loc = LLVMInstructionGetDebugLoc(a.inst);
        let sp = LLVMGetSubprogram(a.func);
        if loc.is_null() && !sp.is_null() {
            loc = LLVMDIBuilderCreateDebugLocation(self.ctx, 0, 0, sp, std::ptr::null_mut());
        }
        LLVMSetCurrentDebugLocation2(self.b, loc);
        loc
    }

    /// The NUMA page count (hooks/numa.c) right before an access: the page of its first
    /// byte. An access covered by an earlier one to the same address in the same epoch
    /// (`!a.check`) is counted by that one (`__profcc_numa_n` with its extra reads and
    /// writes): same page, and no call between them that could end the thread.
    unsafe fn numa_check(&mut self, a: &Access, stats: &mut Stats) {
        if LLVMGetTypeKind(LLVMTypeOf(a.ptr)) != llvm_sys::LLVMTypeKind::LLVMPointerTypeKind {
            return;
        }
        if !a.check {
            stats.bump("numa-covered", 1);
            return;
        }
        let n = 1 + a.extra_reads as u64 + a.extra_writes as u64;
        if self.numa_check_at_exit(a, n) {
            stats.bump("numa-page-hoisted-loop", 1);
            return;
        }
        self.position_before_access(a);
        // Inlined in short loops, as the sharing checks are; a call of the out-of-line count
        // elsewhere (a few bytes at each access).
        let inline = a.loop_blocks > 0 && a.loop_blocks <= crate::select::INLINE_LOOP_BLOCKS;
        use crate::abi::names::{NUMA, NUMA_CHECK, NUMA_CHECK_N, NUMA_N};
        let (name, mut args) = if n == 1 {
            (if inline { NUMA } else { NUMA_CHECK }, vec![a.ptr])
        } else {
            let i64t = LLVMInt64TypeInContext(self.ctx);
            (
                if inline { NUMA_N } else { NUMA_CHECK_N },
                vec![a.ptr, LLVMConstInt(i64t, n, 0)],
            )
        };
        // `call` gives the out-of-line count its preserve_most convention.
        self.call(name, &mut args, c"");
        stats.bump(
            if inline {
                "numa-page-check"
            } else {
                "numa-page-call"
            },
            1,
        );
    }

    /// The page count of an access whose address is the same in every iteration of a
    /// single-block loop, once at the loop's exit for all its iterations (one out-of-line
    /// count of the iterations times `n`) instead of a cache lookup per iteration: a partial
    /// sum or counter updated in a loop. Only where the address is known at the exit: defined
    /// outside the loop, and the exit reached from the loop only or the address an argument,
    /// a global or a value of the function's entry block. The page's first touch, if this is
    /// it, is taken at the exit (the loop's line, the thread that left the loop). An exit
    /// reached from elsewhere counts 0 there, which the count skips (hooks/numa.c).
    unsafe fn numa_check_at_exit(&mut self, a: &Access, n: u64) -> bool {
        let bb = LLVMGetInstructionParent(a.inst);
        let def = LLVMIsAInstruction(a.ptr);
        if !def.is_null() && LLVMGetInstructionParent(def) == bb {
            return false;
        }
        let Some(trip) = self.loop_trip(bb) else {
            return false;
        };
        let entry = LLVMGetEntryBasicBlock(a.func);
        if !trip.only_exit && !def.is_null() && LLVMGetInstructionParent(def) != entry {
            return false;
        }
        let loc = self.position_before_access(a);
        LLVMPositionBuilderBefore(self.b, trip.at);
        LLVMSetCurrentDebugLocation2(self.b, loc);
        let i64t = LLVMInt64TypeInContext(self.ctx);
        let total = if n == 1 {
            trip.total
        } else {
            LLVMBuildMul(self.b, trip.total, LLVMConstInt(i64t, n, 0), c"".as_ptr())
        };
        self.call(crate::abi::names::NUMA_CHECK_N, &mut [a.ptr, total], c"");
        true
    }

    unsafe fn access(
        &mut self,
        local: usize,
        a: &Access,
        sharing: bool,
        hoist: bool,
        stats: &mut Stats,
    ) {
        let i64t = LLVMInt64TypeInContext(self.ctx);
        let fixed_line = matches!(a.size, Size::Const(n) if n <= LINE_SIZE);
        let check = sharing && a.check;
        // Outside small loops a check is one call of a checker, which reads the thread's words
        // itself; in small loops the hook is inlined, the words computed once per function.
        let inline = check
            && fixed_line
            && a.loop_blocks > 0
            && a.loop_blocks <= crate::select::INLINE_LOOP_BLOCKS;
        let (me, rb, wmask) = if !inline {
            (None, None, None)
        } else if a.kind.writes() {
            let wmask = a.samples.then(|| self.entry_value(a.func, 3));
            (Some(self.entry_value(a.func, 1)), None, wmask)
        } else {
            (None, Some(self.entry_value(a.func, 2)), None)
        };
        if check && fixed_line {
            stats.bump(
                if inline {
                    "check-inline-in-loop"
                } else {
                    "check-out-of-line"
                },
                1,
            );
        }
        let loc = self.position_before_access(a);
        let localv = LLVMConstInt(i64t, local as u64, 0);
        let leaderv = LLVMConstInt(i64t, a.leader as u64, 0);
        let mut info = if a.kind.writes() { INFO_WRITE } else { 0 };
        if a.kind == AccessKind::Atomic {
            info |= INFO_ATOMIC;
        }
        info |= (a.extra_reads as u64) << INFO_EXTRA_READS_SHIFT;
        info |= (a.extra_writes as u64) << INFO_EXTRA_WRITES_SHIFT;
        // The door's `slot` names the site with info's distance from it. A write's slot is its
        // group's counter (the door reads the count for the volume sample); a read's is its
        // own (never read), so its info has no distance and fits in 32 bits: a shorter
        // immediate at every call.
        let slot_site = if a.kind == AccessKind::Read {
            local
        } else {
            a.leader
        };
        info |= ((local - slot_site) as u64) << INFO_SITE_SHIFT;
        let empty = c"";
        // The group's count, once, at its first access (run-time lengths count on their own).
        if let Size::Dyn(len) = a.size {
            let c = self.entry_value(a.func, 0);
            LLVMPositionBuilderBefore(self.b, a.inst);
            LLVMSetCurrentDebugLocation2(self.b, loc);
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
            let hoisted = if hoist {
                self.hoist_loop_count(a, local)
            } else {
                None
            };
            if hoisted.is_some() {
                stats.bump("counter-hoisted-loop", 1);
            }
            let c = self.entry_value(a.func, 0);
            // `__profcc_count` (hooks/counting.c) built in place: tens of thousands of calls
            // left for the inliner cost a module like sqlite3.c's about a second.
            LLVMPositionBuilderBefore(self.b, a.inst);
            LLVMSetCurrentDebugLocation2(self.b, loc);
            let n = hoisted.unwrap_or_else(|| {
                let stride = crate::abi::COUNTER_STRIDE as u64;
                let slot = (local as u64) * stride + crate::abi::COUNT_SLOT as u64;
                let mut idx = [LLVMConstInt(i64t, slot, 0)];
                let p = LLVMBuildInBoundsGEP2(self.b, i64t, c, idx.as_mut_ptr(), 1, empty.as_ptr());
                let old = LLVMBuildLoad2(self.b, i64t, p, empty.as_ptr());
                let n = LLVMBuildAdd(self.b, old, LLVMConstInt(i64t, 1, 0), c"profcc.n".as_ptr());
                LLVMBuildStore(self.b, n, p);
                n
            });
            self.group_count = Some(n);
        }
        let Size::Const(n) = a.size else { return };
        if !check {
            return;
        }
        if let Some(m) = self.merge_of[local].map(|m| &self.merges[m]) {
            // Checked by the merged call before the first member.
            if m.members[0] != local {
                return;
            }
            let sampling = m.sampling.map_or(-1, |j| j as i32);
            let checker = crate::abi::names::CHECK_MERGED
                .iter()
                .find(|x| (x.0, x.1) == (m.members.len(), sampling))
                .expect("two to four members")
                .2;
            let mut args: Vec<LLVMValueRef> = m.members.iter().map(|&i| self.ptrs[i]).collect();
            args.push(LLVMConstInt(i64t, m.arg, 0));
            stats.bump("check-merged-call", 1);
            stats.bump("check-merged", m.members.len() as u64);
            self.check_call(checker, &args);
            return;
        }
        if n <= LINE_SIZE {
            let infov = LLVMConstInt(i64t, info | n.min(255), 0);
            use crate::abi::names::*;
            let info = info | n.min(255);
            // A read that stands for itself alone: its size is its info.
            let sized = CHECK_READ_SIZED
                .iter()
                .find(|x| x.0 == info)
                .filter(|_| !a.kind.writes());
            // A plain write: its size, its leader, its distance from it and the extra accesses
            // it stands for are its info (one packed immediate).
            let extras_mask = (1 << INFO_EXTRA_READS_SHIFT) - 1;
            let packed = (a.kind == AccessKind::Write)
                .then(|| {
                    CHECK_WRITE_SIZED
                        .iter()
                        .find(|x| INFO_WRITE | x.0 == info & extras_mask)
                })
                .flatten()
                .zip(crate::abi::packed_write_site(
                    slot_site as u64,
                    (local - slot_site) as u64,
                    a.extra_reads as u64,
                    a.extra_writes as u64,
                ));
            if !inline {
                // The checker finds the site's counter itself: no counter base at the call.
                let slot = LLVMConstInt(i64t, slot_site as u64, 0);
                if let Some(&(_, plain)) = sized {
                    self.check_call(plain, &[a.ptr, slot]);
                } else if let Some(((_, names), x)) = packed {
                    let checker = names[a.samples as usize];
                    let x = LLVMConstInt(i64t, x, 0);
                    self.check_call(checker, &[a.ptr, x]);
                } else {
                    let checker = match (a.kind.writes(), a.samples) {
                        (false, _) => CHECK_READ,
                        (true, false) => CHECK_WRITE,
                        (true, true) => CHECK_WRITE_SAMPLE,
                    };
                    self.check_call(checker, &[a.ptr, slot, infov]);
                }
                return;
            }
            // Inlined: the shadow word tested in place, the checker called on the cold side;
            // the sized and packed checkers when the info allows (no info immediate there).
            let count = || {
                self.group_count
                    .expect("an inlined check's group counts at its first access")
            };
            if let (true, Some(((_, names), x))) = (a.kind.writes(), packed) {
                let x = LLVMConstInt(i64t, x, 0);
                let checker = self.hook(names[a.samples as usize]);
                if a.samples {
                    let mut args = [x, count(), a.ptr, me.unwrap(), wmask.unwrap(), checker];
                    self.call(WRITE_SAMPLE_PACKED, &mut args, empty);
                } else {
                    let mut args = [x, a.ptr, me.unwrap(), checker];
                    self.call(WRITE_PACKED, &mut args, empty);
                }
            } else if a.kind.writes() && a.samples {
                let mut args = [leaderv, count(), a.ptr, infov, me.unwrap(), wmask.unwrap()];
                self.call(WRITE_SAMPLE, &mut args, empty);
            } else if a.kind.writes() {
                let mut args = [leaderv, a.ptr, infov, me.unwrap()];
                self.call(WRITE, &mut args, empty);
            } else if let Some(&(_, plain)) = sized {
                let checker = self.hook(plain);
                let mut args = [localv, a.ptr, rb.unwrap(), checker];
                self.call(READ_SIZED, &mut args, empty);
            } else {
                let mut args = [localv, a.ptr, infov, rb.unwrap()];
                self.call(READ, &mut args, empty);
            }
        } else {
            let c = self.entry_value(a.func, 0);
            LLVMPositionBuilderBefore(self.b, a.inst);
            LLVMSetCurrentDebugLocation2(self.b, loc);
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
    numa: bool,
    stats: &mut Stats,
) {
    let mut r = Rewriter {
        ctx,
        b: LLVMCreateBuilderInContext(ctx),
        hooks: hooks.to_vec(),
        site_base,
        prologues: HashMap::new(),
        group_count: None,
        merges: Vec::new(),
        merge_of: vec![None; sel.accesses.len()],
        ptrs: sel.accesses.iter().map(|a| a.ptr).collect(),
        trips: HashMap::new(),
        alone_last: None,
    };
    let acc = &sel.accesses;
    if sharing {
        (r.merges, r.merge_of) = merge_plan(acc);
    }
    for (local, a) in acc.iter().enumerate() {
        // A group's count stays in a register in a single-block loop, unless the group has
        // sharing checks: a sampling write's checker reads the counter in memory, and beside
        // inlined checks the register costs more (spills) than the increment it saves.
        let hoist = a.leader == local
            && matches!(a.size, Size::Const(_))
            && !(sharing
                && acc[local..]
                    .iter()
                    .take_while(|x| x.leader == local || matches!(x.size, Size::Dyn(_)))
                    .any(|x| x.leader == local && x.check));
        r.access(local, a, sharing, hoist, stats);
        if numa {
            r.numa_check(a, stats);
        }
    }
    LLVMDisposeBuilder(r.b);
    stats.bump("functions-instrumented", r.prologues.len() as u64);
}
