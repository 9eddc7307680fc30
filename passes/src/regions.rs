//! Region counters (issue 13; docs/regions.md, the encoding in `profcc_abi::roi`).
//!
//! 1. Markers: calls of `__profcc_roi_begin/_end` (include/profcc.h), LIKWID's, Caliper's and
//!    PAPI's region calls, with a constant string as the name. Each marker call gets a block
//!    of its own (`[call; br]`); the header's null test of its weak reference is folded (the
//!    runtime, or the stub archive, defines the markers in every profcc link). A foreign
//!    marker also gets a `__profcc_roi_begin/_end` call beside it, for the region's time.
//! 2. Instances: a function with markers, and every function a region's code calls directly,
//!    cloned once per *context* (the set of regions it runs in). A clone takes the thread's
//!    counter array as a new first parameter; an OpenMP outlined function (behind
//!    `__kmpc_fork_call`, run by other threads) gets it from the runtime at entry, as does a
//!    function with markers. Indirect calls and calls out of the module are not followed:
//!    each counts as an uncovered call.
//! 3. Per instance, a graph of the blocks in a region (node 0 the outside) with each block's
//!    static mix; counters either on every block (oracle) or on the edges off a
//!    maximum-weight spanning tree (derived: Knuth–Stevenson), a countable loop's back edge
//!    counted once per entry with its trip count in the preheader.
//! 4. The table, a slot the runtime writes and a descriptor, registered by a constructor.
//!
//! The pass runs before the access instrumentation (clones are instrumented like any code).

use crate::abi::names;
use crate::abi::roi::{self, Dyn, Graph, Mix, Space, Table, NONE};
use crate::llvm::name_of;
use crate::shim;
use crate::Stats;
use llvm_sys::core::*;
use llvm_sys::debuginfo::{LLVMInstructionGetDebugLoc, LLVMInstructionSetDebugLoc};
use llvm_sys::prelude::*;
use llvm_sys::target::{LLVMGetModuleDataLayout, LLVMStoreSizeOfType, LLVMTargetDataRef};
use llvm_sys::{LLVMIntPredicate, LLVMLinkage, LLVMOpcode, LLVMTypeKind};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::ffi::CString;

/// Where counters go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// A counter on every block: the reference the tests hold the derived counts to.
    Oracle,
    /// Counters off a maximum-weight spanning tree, loops counted at entry when countable.
    Derived,
}

/// Marker functions: (name, begins).
const MARKERS: [(&str, bool); 11] = [
    (names::ROI_BEGIN, true),
    // What profcc's markers of a constant name become (`isolate_markers`), and what the
    // sampling puts in place of the begin (`Pass::version`).
    (names::ROI_BEGIN_LIT, true),
    (names::ROI_END_LIT, false),
    (names::ROI_BEGIN_TAKE, true),
    (names::ROI_END, false),
    ("likwid_markerStartRegion", true),
    ("likwid_markerStopRegion", false),
    ("cali_begin_region", true),
    ("cali_end_region", false),
    ("PAPI_hl_region_begin", true),
    ("PAPI_hl_region_end", false),
];

/// libc copies and fills followed like `llvm.mem*`: (name, destination, source or none,
/// length operand).
const LIBC_MEM: [(&str, u32, Option<u32>, u32); 4] = [
    ("memcpy", 0, Some(1), 2),
    ("memmove", 0, Some(1), 2),
    ("memset", 0, None, 2),
    ("bzero", 0, None, 1),
];

const FORK_CALL: &str = "__kmpc_fork_call";

fn cstr(s: &str) -> CString {
    CString::new(s).unwrap_or_default()
}

/// ZRay's markers (its include/zray.h): inline-asm comments `#ZRAY_ROI_BEGIN <group>` and
/// `#ZRAY_ROI_END <group>`; the region is named `zray_<group>`.
const ZRAY_BEGIN: &str = "#ZRAY_ROI_BEGIN ";
const ZRAY_END: &str = "#ZRAY_ROI_END ";

/// A ZRay marker: begins?, region name.
unsafe fn zray_marker(inst: LLVMValueRef) -> Option<(bool, String)> {
    let callee = LLVMGetCalledValue(inst);
    if callee.is_null() || LLVMIsAInlineAsm(callee).is_null() {
        return None;
    }
    let mut len = 0usize;
    let p = llvm_sys::core::LLVMGetInlineAsmAsmString(callee, &mut len);
    if p.is_null() {
        return None;
    }
    let text = String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len));
    let text = text.trim();
    let (begins, group) = if let Some(g) = text.strip_prefix(ZRAY_BEGIN) {
        (true, g)
    } else {
        (false, text.strip_prefix(ZRAY_END)?)
    };
    Some((begins, format!("zray_{}", group.trim())))
}

/// A marker call: begins?, region name.
unsafe fn marker(inst: LLVMValueRef) -> Option<(bool, String)> {
    if LLVMIsACallInst(inst).is_null() {
        return None;
    }
    if let Some(z) = zray_marker(inst) {
        return Some(z);
    }
    let callee = LLVMGetCalledValue(inst);
    if callee.is_null() || LLVMIsAFunction(callee).is_null() {
        return None;
    }
    let name = name_of(callee);
    let &(_, begins) = MARKERS.iter().find(|m| m.0 == name)?;
    if LLVMGetNumArgOperands(inst) < 1 {
        return None;
    }
    Some((begins, constant_string(LLVMGetOperand(inst, 0))?))
}

/// The text of a pointer to a constant C string.
unsafe fn constant_string(mut v: LLVMValueRef) -> Option<String> {
    for _ in 0..4 {
        if !LLVMIsAConstantExpr(v).is_null()
            && matches!(
                LLVMGetConstOpcode(v),
                LLVMOpcode::LLVMGetElementPtr | LLVMOpcode::LLVMBitCast
            )
        {
            v = LLVMGetOperand(v, 0);
        }
    }
    if LLVMIsAGlobalVariable(v).is_null() || LLVMIsGlobalConstant(v) == 0 {
        return None;
    }
    let init = LLVMGetInitializer(v);
    if init.is_null() || LLVMIsConstantString(init) == 0 {
        return None;
    }
    let mut len = 0usize;
    let p = LLVMGetAsString(init, &mut len);
    let bytes = std::slice::from_raw_parts(p as *const u8, len);
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(len);
    Some(String::from_utf8_lossy(&bytes[..end]).into_owned())
}

unsafe fn blocks(f: LLVMValueRef) -> Vec<LLVMBasicBlockRef> {
    let mut v = Vec::new();
    let mut b = LLVMGetFirstBasicBlock(f);
    while !b.is_null() {
        v.push(b);
        b = LLVMGetNextBasicBlock(b);
    }
    v
}

unsafe fn successors(b: LLVMBasicBlockRef) -> Vec<LLVMBasicBlockRef> {
    let t = LLVMGetBasicBlockTerminator(b);
    if t.is_null() {
        return Vec::new();
    }
    (0..LLVMGetNumSuccessors(t))
        .map(|i| LLVMGetSuccessor(t, i))
        .collect()
}

/// A region's way on from its begin block: a sampled begin (`Pass::version`) branches to
/// the counted copy (its first successor) or the plain one, which is no region's code.
unsafe fn region_successors(b: LLVMBasicBlockRef) -> Vec<LLVMBasicBlockRef> {
    let t = LLVMGetBasicBlockTerminator(b);
    if !t.is_null()
        && LLVMGetInstructionOpcode(t) == LLVMOpcode::LLVMBr
        && LLVMIsConditional(t) != 0
    {
        let c = LLVMGetCondition(t);
        if !LLVMIsAICmpInst(c).is_null() {
            let v = LLVMGetOperand(c, 0);
            if !LLVMIsACallInst(v).is_null() && callee_name(v) == names::ROI_BEGIN_TAKE {
                return vec![LLVMGetSuccessor(t, 0)];
            }
        }
    }
    successors(b)
}

/// The function `name` of type `ty` in `m`, declared if it is not there yet.
unsafe fn declare(m: LLVMModuleRef, name: &str, ty: LLVMTypeRef) -> LLVMValueRef {
    let f = LLVMGetNamedFunction(m, cstr(name).as_ptr());
    if f.is_null() {
        LLVMAddFunction(m, cstr(name).as_ptr(), ty)
    } else {
        f
    }
}

/// The blocks of region `r` begun at block `begin`: those reachable from it (past a sampled
/// begin, its counted copy only) without passing an end of `r`, in the order found.
unsafe fn region_blocks(
    bbs: &[LLVMBasicBlockRef],
    index: &HashMap<LLVMBasicBlockRef, usize>,
    begin: usize,
    r: u32,
    marks: &[Option<(bool, u32)>],
) -> Vec<usize> {
    let mut seen = vec![false; bbs.len()];
    let mut set = Vec::new();
    let mut stack: Vec<usize> = region_successors(bbs[begin])
        .iter()
        .map(|s| index[s])
        .collect();
    while let Some(j) = stack.pop() {
        if seen[j] || marks[j] == Some((false, r)) {
            continue;
        }
        seen[j] = true;
        set.push(j);
        stack.extend(successors(bbs[j]).iter().map(|s| index[s]));
    }
    set
}

/// The callee's name of a direct call ("" otherwise).
unsafe fn callee_name(call: LLVMValueRef) -> String {
    let c = LLVMGetCalledValue(call);
    if c.is_null() || LLVMIsAFunction(c).is_null() {
        String::new()
    } else {
        name_of(c)
    }
}

/// Intrinsics that are no instruction of the program's.
fn ignored_intrinsic(name: &str) -> bool {
    [
        "llvm.dbg.",
        "llvm.lifetime.",
        "llvm.assume",
        "llvm.experimental.noalias.scope.decl",
    ]
    .iter()
    .any(|p| name.starts_with(p))
        || name == "llvm.pseudoprobe"
}

/// Step 1: give every marker call a block of its own and fold the header's null tests.
/// Returns the region names in first-seen order.
unsafe fn isolate_markers(m: LLVMModuleRef, ctx: LLVMContextRef) -> Vec<String> {
    let mut folded: HashSet<LLVMValueRef> = HashSet::new();
    // C++ calls a marker not declared nothrow through an `invoke` wherever an exception
    // could unwind (any function with objects to destroy: LIKWID's, Caliper's and PAPI's
    // headers declare theirs without it). No marker throws (the runtime's, the stubs'), so
    // the invoke becomes a call and its unwind edge goes; a landing pad left unreachable
    // goes with the blocks the folds below cut off.
    for (name, _) in MARKERS {
        let f = LLVMGetNamedFunction(m, cstr(name).as_ptr());
        if f.is_null() {
            continue;
        }
        let mut invokes = Vec::new();
        let mut u = LLVMGetFirstUse(f);
        while !u.is_null() {
            let user = LLVMGetUser(u);
            if !LLVMIsAInvokeInst(user).is_null() && LLVMGetCalledValue(user) == f {
                invokes.push(user);
            }
            u = LLVMGetNextUse(u);
        }
        for i in invokes {
            folded.insert(LLVMGetBasicBlockParent(LLVMGetInstructionParent(i)));
            shim::invoke_to_call(i);
        }
    }
    // `if (__profcc_roi_begin)`: the reference is strong in a profcc link.
    for name in [names::ROI_BEGIN, names::ROI_END] {
        let f = LLVMGetNamedFunction(m, cstr(name).as_ptr());
        if f.is_null() {
            continue;
        }
        if LLVMGetLinkage(f) == LLVMLinkage::LLVMExternalWeakLinkage {
            LLVMSetLinkage(f, LLVMLinkage::LLVMExternalLinkage);
        }
        // `f == null`, or `ptrtoint f == 0` as the optimiser may write it.
        let mut refs = vec![f];
        let mut u = LLVMGetFirstUse(f);
        while !u.is_null() {
            let user = LLVMGetUser(u);
            if !LLVMIsAConstantExpr(user).is_null()
                && LLVMGetConstOpcode(user) == LLVMOpcode::LLVMPtrToInt
            {
                refs.push(user);
            }
            u = LLVMGetNextUse(u);
        }
        let mut tests = Vec::new();
        for &r in &refs {
            let mut u = LLVMGetFirstUse(r);
            while !u.is_null() {
                let user = LLVMGetUser(u);
                if !LLVMIsAICmpInst(user).is_null() {
                    let other = if LLVMGetOperand(user, 0) == r {
                        LLVMGetOperand(user, 1)
                    } else {
                        LLVMGetOperand(user, 0)
                    };
                    let eq_ne = matches!(
                        LLVMGetICmpPredicate(user),
                        LLVMIntPredicate::LLVMIntEQ | LLVMIntPredicate::LLVMIntNE
                    );
                    if eq_ne && LLVMIsNull(other) != 0 {
                        tests.push(user);
                    }
                }
                u = LLVMGetNextUse(u);
            }
        }
        let i1 = LLVMInt1TypeInContext(ctx);
        for t in tests {
            let ne = LLVMGetICmpPredicate(t) == LLVMIntPredicate::LLVMIntNE;
            // The branches on the test (LICM may have hoisted it out of their blocks).
            let mut branches = Vec::new();
            let mut u = LLVMGetFirstUse(t);
            while !u.is_null() {
                let user = LLVMGetUser(u);
                if !LLVMIsATerminatorInst(user).is_null() {
                    branches.push(LLVMGetInstructionParent(user));
                }
                u = LLVMGetNextUse(u);
            }
            LLVMReplaceAllUsesWith(t, LLVMConstInt(i1, ne as u64, 0));
            LLVMInstructionEraseFromParent(t);
            for bb in branches {
                if shim::fold_terminator(bb) {
                    folded.insert(LLVMGetBasicBlockParent(bb));
                }
            }
        }
    }
    // The blocks the folds cut off go: a dead block branching into a region would be one
    // more way in, and the region could not be versioned for sampling.
    for f in folded {
        shim::remove_unreachable(f);
    }
    unsink_markers(m);
    let mut names_seen: Vec<String> = Vec::new();
    let mut calls = Vec::new();
    crate::llvm::for_each_function(m, |f| {
        crate::llvm::for_each_instruction(f, |i| {
            if let Some((begins, name)) = marker(i) {
                calls.push((i, begins, name));
            }
        })
    });
    let begin_ty = {
        let mut p = [LLVMPointerTypeInContext(ctx, 0)];
        LLVMFunctionType(LLVMVoidTypeInContext(ctx), p.as_mut_ptr(), 1, 0)
    };
    for (call, begins, name) in calls {
        if !names_seen.contains(&name) {
            names_seen.push(name.clone());
        }
        let own = callee_name(call);
        let mut first = call;
        // profcc's markers of a constant name become their `_lit` forms (the runtime keys the
        // name by its address); a foreign marker gets one beside it, for the time.
        let lit = if begins {
            names::ROI_BEGIN_LIT
        } else {
            names::ROI_END_LIT
        };
        let f = declare(m, lit, begin_ty);
        if own == names::ROI_BEGIN || own == names::ROI_END {
            LLVMSetOperand(call, LLVMGetNumOperands(call) as u32 - 1, f);
        } else {
            let b = LLVMCreateBuilderInContext(ctx);
            LLVMPositionBuilderBefore(b, call);
            let name_arg = if zray_marker(call).is_some() {
                LLVMBuildGlobalString(b, cstr(&name).as_ptr(), c"profcc.zray".as_ptr())
            } else {
                LLVMGetOperand(call, 0)
            };
            let mut args = [name_arg];
            first = LLVMBuildCall2(b, begin_ty, f, args.as_mut_ptr(), 1, c"".as_ptr());
            LLVMDisposeBuilder(b);
        }
        let bb = LLVMGetInstructionParent(first);
        if LLVMGetFirstInstruction(bb) != first {
            shim::split_before(first);
        }
        let next = LLVMGetNextInstruction(call);
        if !next.is_null() {
            shim::split_before(next);
        }
    }
    names_seen
}

/// Undo SimplifyCFG's sinking of marker calls: `-O2` merges the `PROFCC_ROI_END("a")` and
/// `PROFCC_ROI_END("b")` that end the arms of an `if` or a `switch` into one call whose name
/// is a phi of the constants, together with the arms' common code before it (the same
/// kernel called with other arguments). Each incoming edge gets its own copy of the block up
/// to the call, with the edge's constant name (`shim::unsink`), so every marker names its
/// region again and the code before it is in that region. A phi with a non-constant incoming
/// value, a used result (PAPI's status) or a predecessor with two edges into the block stays
/// as it is (that marker is not recognised: docs/regions.md, limits).
unsafe fn unsink_markers(m: LLVMModuleRef) {
    // The last such call of each block: its copies take the block's earlier ones along.
    let mut sunk: Vec<LLVMValueRef> = Vec::new();
    crate::llvm::for_each_function(m, |f| {
        crate::llvm::for_each_instruction(f, |i| {
            if LLVMIsACallInst(i).is_null() || LLVMGetNumArgOperands(i) < 1 {
                return;
            }
            let name = callee_name(i);
            let phi = LLVMGetOperand(i, 0);
            if MARKERS.iter().any(|m| m.0 == name)
                && !LLVMIsAPHINode(phi).is_null()
                && LLVMGetInstructionParent(phi) == LLVMGetInstructionParent(i)
            {
                match sunk.last_mut() {
                    Some(last)
                        if LLVMGetInstructionParent(*last) == LLVMGetInstructionParent(i) =>
                    {
                        *last = i
                    }
                    _ => sunk.push(i),
                }
            }
        })
    });
    for call in sunk {
        let phi = LLVMGetOperand(call, 0);
        let block = LLVMGetInstructionParent(call);
        let incoming: Vec<(LLVMValueRef, LLVMBasicBlockRef)> = (0..LLVMCountIncoming(phi))
            .map(|k| (LLVMGetIncomingValue(phi, k), LLVMGetIncomingBlock(phi, k)))
            .collect();
        let constant = incoming.iter().all(|&(v, _)| constant_string(v).is_some());
        let distinct: HashSet<LLVMBasicBlockRef> = incoming.iter().map(|&(_, b)| b).collect();
        let own_edges = incoming.iter().all(|&(_, p)| {
            p != block && successors(p).iter().filter(|&&s| s == block).count() == 1
        });
        // A used result (PAPI's status) stays: one call cannot give it on every edge.
        let unused = LLVMGetFirstUse(call).is_null();
        if !constant || distinct.len() != incoming.len() || !own_edges || !unused {
            continue;
        }
        shim::unsink(call);
    }
}

/// A call of `f` (type `ty`) with `args`, named `name`, put before `at`, at the source line
/// of `like` (the call it stands for).
unsafe fn call_before(
    at: LLVMValueRef,
    like: LLVMValueRef,
    f: LLVMValueRef,
    ty: LLVMTypeRef,
    args: &[LLVMValueRef],
    name: &str,
) -> LLVMValueRef {
    let b = LLVMCreateBuilderInContext(LLVMGetTypeContext(ty));
    LLVMPositionBuilderBefore(b, at);
    let mut args = args.to_vec();
    let call = LLVMBuildCall2(
        b,
        ty,
        f,
        args.as_mut_ptr(),
        args.len() as u32,
        cstr(name).as_ptr(),
    );
    LLVMDisposeBuilder(b);
    at_line_of(call, like)
}

/// `i`, given `like`'s source line (when it has one).
unsafe fn at_line_of(i: LLVMValueRef, like: LLVMValueRef) -> LLVMValueRef {
    let dbg = LLVMInstructionGetDebugLoc(like);
    if !dbg.is_null() {
        LLVMInstructionSetDebugLoc(i, dbg);
    }
    i
}

/// Whether `b` calls `__profcc_roi_begin`/`_end` with a name that is not a constant (no
/// marker the pass sees).
unsafe fn dynamic_marker(b: LLVMBasicBlockRef) -> bool {
    let mut i = LLVMGetFirstInstruction(b);
    while !i.is_null() {
        if !LLVMIsACallInst(i).is_null() {
            let c = callee_name(i);
            if (c == names::ROI_BEGIN || c == names::ROI_END) && marker(i).is_none() {
                return true;
            }
        }
        i = LLVMGetNextInstruction(i);
    }
    false
}

/// The marker call a block starts with, if any (after `isolate_markers`, its only call; the
/// versioning may have put phis before it).
unsafe fn block_marker(b: LLVMBasicBlockRef) -> Option<(bool, String)> {
    let mut i = LLVMGetFirstNonPHI_(b);
    while !i.is_null() {
        if let Some(m) = marker(i) {
            return Some(m);
        }
        if LLVMIsACallInst(i).is_null() {
            return None;
        }
        i = LLVMGetNextInstruction(i);
    }
    None
}

/// One function instance as the placement sees it.
#[derive(Clone, Copy)]
struct Shape<'a> {
    f: LLVMValueRef,
    bbs: &'a [LLVMBasicBlockRef],
    index: &'a HashMap<LLVMBasicBlockRef, usize>,
    /// Each block's node (0: not in a region).
    node_of: &'a [u32],
    /// The thread's counter array in each region block (null elsewhere).
    counters: &'a [LLVMValueRef],
}

struct Pass {
    ctx: LLVMContextRef,
    m: LLVMModuleRef,
    dl: LLVMTargetDataRef,
    placement: Placement,
    /// Grows as the pass goes: names first, then contexts, mixes, graphs and byte counters.
    table: Table,
    /// Each distinct mix's index in `table.mixes`.
    mix_index: HashMap<Mix, u32>,
    /// (original function, context, counters as parameter) -> its clone.
    clones: HashMap<(LLVMValueRef, u32, bool), LLVMValueRef>,
    /// Instances still to process: (function, context, counters as parameter).
    work: Vec<(LLVMValueRef, u32, bool)>,
    counters_fn: LLVMValueRef,
    counters_ty: LLVMTypeRef,
    desc: LLVMValueRef,
    escapes: HashMap<LLVMValueRef, bool>,
    /// Parameters that stand for a caller's own stack slot (an OpenMP outlined function's
    /// captured variables, passed by reference): accesses through them are `Local`, as the
    /// caller's own accesses to the slot are (-O0 keeps captured scalars there).
    captured: HashSet<LLVMValueRef>,
    full: bool,
    /// Sampled begins to inline (`shim::fast_take`, once the counters are placed): the take
    /// call, the region's skip slot and tag, the plain copy's entry.
    fast_takes: Vec<(LLVMValueRef, u32, u32, LLVMBasicBlockRef)>,
    /// The plain copies' blocks: no region's code, whatever markers they still hold (a
    /// foreign marker of a region nested inside).
    plain_blocks: HashSet<LLVMBasicBlockRef>,
    plain_fn: LLVMValueRef,
    plain_ty: LLVMTypeRef,
    /// `roi_sample`'s versioning: the counter array each block of a sampled region's counted
    /// copy uses (fetched by class after the begin).
    sampled_counters: HashMap<LLVMBasicBlockRef, LLVMValueRef>,
    counters_of_fn: LLVMValueRef,
    counters_of_ty: LLVMTypeRef,
    take_fn: LLVMValueRef,
    take_ty: LLVMTypeRef,
    /// Functions with counter bumps (their call-free loops get the counters in registers).
    bumped: std::cell::RefCell<Vec<LLVMValueRef>>,
    /// Metadata kind of a bump's load and store (`profcc.counter`).
    counter_kind: u32,
}

impl Pass {
    fn context(&mut self, set: &BTreeSet<u32>) -> u32 {
        let v: Vec<u32> = set.iter().copied().collect();
        let contexts = &mut self.table.contexts;
        if let Some(i) = contexts.iter().position(|c| *c == v) {
            return i as u32;
        }
        contexts.push(v);
        (contexts.len() - 1) as u32
    }

    fn counter(&mut self) -> u32 {
        self.table.counters += 1;
        self.table.counters - 1
    }

    unsafe fn space(&mut self, p: LLVMValueRef) -> Space {
        let p = crate::select::underlying(p);
        if crate::select::is_thread_local_address(p) {
            return Space::Global;
        }
        if !LLVMIsAGlobalVariable(p).is_null() {
            return Space::Global;
        }
        if self.captured.contains(&p) || self.reloaded_capture(p) {
            return Space::Local;
        }
        if !LLVMIsAAllocaInst(p).is_null() {
            let esc = *self
                .escapes
                .entry(p)
                .or_insert_with(|| crate::select::escapes_past(p, 0, true));
            return if esc { Space::Stack } else { Space::Local };
        }
        Space::Heap
    }

    unsafe fn size_of(&self, ty: LLVMTypeRef) -> u32 {
        LLVMStoreSizeOfType(self.dl, ty).min(u32::MAX as u64) as u32
    }

    /// A load of a captured parameter from the stack slot -O0 spilled it to.
    unsafe fn reloaded_capture(&self, p: LLVMValueRef) -> bool {
        if LLVMIsALoadInst(p).is_null() {
            return false;
        }
        let slot = LLVMGetOperand(p, 0);
        if LLVMIsAAllocaInst(slot).is_null() {
            return false;
        }
        let mut stored = false;
        let mut u = LLVMGetFirstUse(slot);
        while !u.is_null() {
            let user = LLVMGetUser(u);
            if !LLVMIsAStoreInst(user).is_null() {
                if LLVMGetOperand(user, 1) != slot
                    || !self.captured.contains(&LLVMGetOperand(user, 0))
                {
                    return false;
                }
                stored = true;
            } else if LLVMIsALoadInst(user).is_null() {
                return false;
            }
            u = LLVMGetNextUse(u);
        }
        stored
    }

    /// A scalar stack slot of the calling function itself (not an array or a struct), or a
    /// parameter that already stands for one.
    unsafe fn own_slot(&self, v: LLVMValueRef) -> bool {
        if self.captured.contains(&v) {
            return true;
        }
        if LLVMIsAAllocaInst(v).is_null() {
            return false;
        }
        !matches!(
            LLVMGetTypeKind(LLVMGetAllocatedType(v)),
            LLVMTypeKind::LLVMArrayTypeKind | LLVMTypeKind::LLVMStructTypeKind
        )
    }

    /// The counter array's value in `f`: its parameter, or a call at entry (an OpenMP
    /// outlined function's clone, `cx` != 0: the array of the class its team counts in).
    unsafe fn counters_value(&self, f: LLVMValueRef, cx: u32, param: bool) -> LLVMValueRef {
        if param {
            return LLVMGetParam(f, 0);
        }
        let entry = LLVMGetEntryBasicBlock(f);
        if cx != 0 {
            return self.counters_of(
                first_insertion(entry),
                LLVMConstInt(LLVMInt32TypeInContext(self.ctx), roi::TEAM as u64, 0),
            );
        }
        let b = LLVMCreateBuilderInContext(self.ctx);
        LLVMPositionBuilderBefore(b, first_insertion(entry));
        let mut args = [self.desc];
        let v = LLVMBuildCall2(
            b,
            self.counters_ty,
            self.counters_fn,
            args.as_mut_ptr(),
            1,
            c"profcc.roi".as_ptr(),
        );
        LLVMDisposeBuilder(b);
        v
    }

    /// `__profcc_roi_counters_of(desc, class)` before `at`.
    unsafe fn counters_of(&self, at: LLVMValueRef, class: LLVMValueRef) -> LLVMValueRef {
        let b = LLVMCreateBuilderInContext(self.ctx);
        LLVMPositionBuilderBefore(b, at);
        let mut args = [self.desc, class];
        let v = LLVMBuildCall2(
            b,
            self.counters_of_ty,
            self.counters_of_fn,
            args.as_mut_ptr(),
            2,
            c"profcc.roi".as_ptr(),
        );
        LLVMDisposeBuilder(b);
        v
    }

    /// `counters[id] += by` before `at`.
    unsafe fn bump(&self, at: LLVMValueRef, c: LLVMValueRef, id: u32, by: Option<LLVMValueRef>) {
        let i64t = LLVMInt64TypeInContext(self.ctx);
        let b = LLVMCreateBuilderInContext(self.ctx);
        LLVMPositionBuilderBefore(b, at);
        let mut idx = [LLVMConstInt(i64t, id as u64, 0)];
        let p = LLVMBuildInBoundsGEP2(b, i64t, c, idx.as_mut_ptr(), 1, c"".as_ptr());
        let old = LLVMBuildLoad2(b, i64t, p, c"".as_ptr());
        let by = match by {
            Some(v) if LLVMTypeOf(v) != i64t => LLVMBuildZExt(b, v, i64t, c"".as_ptr()),
            Some(v) => v,
            None => LLVMConstInt(i64t, 1, 0),
        };
        let new = LLVMBuildAdd(b, old, by, c"".as_ptr());
        let st = LLVMBuildStore(b, new, p);
        LLVMDisposeBuilder(b);
        let tag = LLVMMDNodeInContext2(self.ctx, std::ptr::null_mut(), 0);
        let tag = LLVMMetadataAsValue(self.ctx, tag);
        LLVMSetMetadata(old, self.counter_kind, tag);
        LLVMSetMetadata(st, self.counter_kind, tag);
        let f = LLVMGetBasicBlockParent(LLVMGetInstructionParent(at));
        let mut bumped = self.bumped.borrow_mut();
        if bumped.last() != Some(&f) && !bumped.contains(&f) {
            bumped.push(f);
        }
    }

    /// The clone of `f` for context `cx` (made and queued on first use).
    unsafe fn clone_of(&mut self, f: LLVMValueRef, cx: u32, param: bool) -> Option<LLVMValueRef> {
        if let Some(&c) = self.clones.get(&(f, cx, param)) {
            return Some(c);
        }
        if self.table.counters >= roi::MAX_COUNTERS / 2 {
            self.full = true;
            return None;
        }
        let name = format!("{}.profcc.roi{}", name_of(f), cx);
        let c = shim::clone_function(f, &name, param);
        self.clones.insert((f, cx, param), c);
        self.work.push((c, cx, param));
        Some(c)
    }

    /// Can a call to `f` be followed (a definition that no other module can replace)?
    unsafe fn followable(f: LLVMValueRef) -> bool {
        if LLVMIsDeclaration(f) != 0 || LLVMGetIntrinsicID(f) != 0 {
            return false;
        }
        !matches!(
            LLVMGetLinkage(f),
            LLVMLinkage::LLVMExternalWeakLinkage
                | LLVMLinkage::LLVMWeakAnyLinkage
                | LLVMLinkage::LLVMLinkOnceAnyLinkage
                | LLVMLinkage::LLVMAvailableExternallyLinkage
                | LLVMLinkage::LLVMCommonLinkage
        )
    }

    /// `roi_sample` (docs/regions.md, "Sampling"): each outermost region of a function with
    /// markers gets a plain copy of its blocks (`shim::version_region`); its begin becomes
    /// `__profcc_roi_begin_take`, whose class picks the copy (`PLAIN`) or the counted
    /// original, which fetches the class's counter array right after. A region is left
    /// unversioned (always counted, in the `EXACT` array) when its blocks are not entered
    /// only through the begin, overlap another's, or hold exception or indirect-branch edges.
    unsafe fn version(&mut self, f: LLVMValueRef, stats: &mut Stats) {
        let bbs = blocks(f);
        let index: HashMap<LLVMBasicBlockRef, usize> =
            bbs.iter().enumerate().map(|(i, &b)| (b, i)).collect();
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); bbs.len()];
        for (i, &b) in bbs.iter().enumerate() {
            for s in successors(b) {
                preds[index[&s]].push(i);
            }
        }
        let marks = self.marks(&bbs);
        let sets: Vec<(usize, Vec<usize>)> = marks
            .iter()
            .enumerate()
            .filter_map(|(i, mk)| match *mk {
                Some((true, r)) => Some((i, region_blocks(&bbs, &index, i, r, &marks))),
                _ => None,
            })
            .collect();
        let inside: HashSet<usize> = sets.iter().flat_map(|(_, s)| s.iter().copied()).collect();
        let mut taken: HashSet<usize> = HashSet::new();
        let ty_i32 = LLVMInt32TypeInContext(self.ctx);
        for (b, mut set) in sets {
            let r = match marks[b] {
                Some((true, r)) => r,
                _ => continue,
            };
            // The plain copy takes the region's ends along (the copy calls none: a plain
            // execution opens nothing in the runtime), so they too must be entered only from
            // the region.
            let mut ends: Vec<usize> = set
                .iter()
                .flat_map(|&j| successors(bbs[j]))
                .map(|x| index[&x])
                .filter(|&x| marks[x] == Some((false, r)))
                .collect();
            ends.sort_unstable();
            ends.dedup();
            // A region ended inside that was begun outside, or a marker of a name known only
            // at run time: the copy could not leave them out.
            let begun: HashSet<u32> = set
                .iter()
                .filter_map(|&j| match marks[j] {
                    Some((true, q)) => Some(q),
                    _ => None,
                })
                .collect();
            let nested = set.iter().all(|&j| match marks[j] {
                Some((false, q)) => begun.contains(&q),
                _ => true,
            }) && set.iter().chain(&ends).all(|&j| !dynamic_marker(bbs[j]));
            set.extend(&ends);
            let succ = successors(bbs[b]);
            let single_entry = |set: &[usize], s0: usize| {
                let members: HashSet<usize> = set.iter().copied().collect();
                preds[s0] == [b]
                    && set.iter().all(|&j| {
                        let t = LLVMGetBasicBlockTerminator(bbs[j]);
                        (j == s0 || preds[j].iter().all(|p| members.contains(p)))
                            && !is_eh_pad(bbs[j])
                            && !t.is_null()
                            && matches!(
                                LLVMGetInstructionOpcode(t),
                                LLVMOpcode::LLVMBr
                                    | LLVMOpcode::LLVMSwitch
                                    | LLVMOpcode::LLVMRet
                                    | LLVMOpcode::LLVMUnreachable
                            )
                    })
            };
            let ok = !inside.contains(&b)
                && nested
                && succ.len() == 1
                && !set.is_empty()
                && set.iter().all(|j| !taken.contains(j))
                && single_entry(&set, index[&succ[0]]);
            if !ok {
                stats.bump("roi-regions-unsampled", 1);
                continue;
            }
            let s0 = index[&succ[0]];
            set.sort_unstable();
            set.retain(|&j| j != s0);
            set.insert(0, s0);
            // The begin call becomes the take; its class picks the copy.
            let mut call = LLVMGetFirstInstruction(bbs[b]);
            while !call.is_null()
                && (LLVMIsACallInst(call).is_null() || callee_name(call) != names::ROI_BEGIN_LIT)
            {
                call = LLVMGetNextInstruction(call);
            }
            if call.is_null() {
                continue;
            }
            // At the block's end: after a foreign marker beside it (LIKWID's, ZRay's), which
            // both copies run, so the inlined skip test can go straight to the plain copy.
            let (slot, tag) = roi::skip_key(self.table.names[r as usize].as_bytes());
            let args = [
                LLVMGetOperand(call, 0),
                LLVMConstInt(ty_i32, slot as u64, 0),
                LLVMConstInt(ty_i32, tag as u64, 0),
            ];
            let end = LLVMGetBasicBlockTerminator(bbs[b]);
            let cls = call_before(end, call, self.take_fn, self.take_ty, &args, "profcc.class");
            LLVMInstructionEraseFromParent(call);
            let builder = LLVMCreateBuilderInContext(self.ctx);
            LLVMPositionBuilderBefore(builder, end);
            let on = LLVMBuildICmp(
                builder,
                LLVMIntPredicate::LLVMIntNE,
                cls,
                LLVMConstInt(ty_i32, roi::PLAIN as u64, 0),
                c"".as_ptr(),
            );
            LLVMDisposeBuilder(builder);
            let region: Vec<LLVMBasicBlockRef> = set.iter().map(|&j| bbs[j]).collect();
            let copies = shim::version_region(&region, on);
            for &c in &copies {
                self.plain_markers(c);
            }
            self.plain_blocks.extend(&copies);
            taken.extend(&ends);
            self.fast_takes.push((cls, slot, tag, copies[0]));
            // The ends stay out of the region's own blocks.
            set.retain(|j| !ends.contains(j));
            let region: Vec<LLVMBasicBlockRef> = set.iter().map(|&j| bbs[j]).collect();
            let p = self.counters_of(first_insertion(bbs[s0]), cls);
            for &rb in &region {
                self.sampled_counters.insert(rb, p);
            }
            taken.extend(set);
            stats.bump("roi-regions-sampled", 1);
        }
    }

    /// A plain copy's markers: a begin (a region nested in the one running uncounted) counts
    /// an execution and opens nothing (`__profcc_roi_plain`), an end goes.
    unsafe fn plain_markers(&self, b: LLVMBasicBlockRef) {
        let mut i = LLVMGetFirstInstruction(b);
        while !i.is_null() {
            let next = LLVMGetNextInstruction(i);
            if !LLVMIsACallInst(i).is_null() {
                let callee = callee_name(i);
                if callee == names::ROI_BEGIN_LIT {
                    let name = [LLVMGetOperand(i, 0)];
                    call_before(i, i, self.plain_fn, self.plain_ty, &name, "");
                    LLVMInstructionEraseFromParent(i);
                } else if callee == names::ROI_END_LIT {
                    LLVMInstructionEraseFromParent(i);
                }
            }
            i = next;
        }
    }

    /// Each block's marker: (begins, region id).
    unsafe fn marks(&self, bbs: &[LLVMBasicBlockRef]) -> Vec<Option<(bool, u32)>> {
        bbs.iter()
            .map(|&b| {
                if self.plain_blocks.contains(&b) {
                    return None;
                }
                block_marker(b).map(|(begins, n)| {
                    let id = self.table.names.iter().position(|x| *x == n).unwrap_or(0) as u32;
                    (begins, id)
                })
            })
            .collect()
    }

    /// One function instance: its region blocks, their mixes, its calls redirected, its
    /// counters placed.
    unsafe fn instance(&mut self, f: LLVMValueRef, cx: u32, param: bool, stats: &mut Stats) {
        let bbs = blocks(f);
        let index: HashMap<LLVMBasicBlockRef, usize> =
            bbs.iter().enumerate().map(|(i, &b)| (b, i)).collect();
        // Regions opened in this function around each block.
        let mut inner: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); bbs.len()];
        let marks = self.marks(&bbs);
        for (i, mk) in marks.iter().enumerate() {
            let Some((true, r)) = *mk else { continue };
            for j in region_blocks(&bbs, &index, i, r, &marks) {
                inner[j].insert(r);
            }
        }
        let base: BTreeSet<u32> = self.table.contexts[cx as usize].iter().copied().collect();
        let node_cx: Vec<Option<u32>> = (0..bbs.len())
            .map(|i| {
                let set: BTreeSet<u32> = base.union(&inner[i]).copied().collect();
                (!set.is_empty()).then(|| self.context(&set))
            })
            .collect();
        if node_cx.iter().all(Option::is_none) {
            return;
        }
        // A sampled region's counted copy uses the array its begin fetched by class; the rest
        // the parameter or a fetch at entry.
        let own = |b: &LLVMBasicBlockRef| {
            (!param && cx == 0)
                .then(|| self.sampled_counters.get(b).copied())
                .flatten()
        };
        let entry_needed = (0..bbs.len()).any(|i| node_cx[i].is_some() && own(&bbs[i]).is_none());
        let fallback = if entry_needed {
            self.counters_value(f, cx, param)
        } else {
            std::ptr::null_mut()
        };
        let counters: Vec<LLVMValueRef> = bbs.iter().map(|b| own(b).unwrap_or(fallback)).collect();
        let mut graph = Graph::default();
        let mut node_of: Vec<u32> = vec![0; bbs.len()];
        for (i, c) in node_cx.iter().enumerate() {
            if let Some(c) = *c {
                let mix = self.block(bbs[i], c, counters[i], stats);
                // One entry per distinct mix, shared by every block that has it (sqlite's
                // region: 3,945 mixes for 34,255 blocks).
                let mixes = &mut self.table.mixes;
                let k = *self.mix_index.entry(mix).or_insert_with(|| {
                    mixes.push(mix);
                    (mixes.len() - 1) as u32
                });
                graph.nodes.push((k, NONE, c));
                node_of[i] = graph.nodes.len() as u32;
            }
        }
        stats.bump("roi-blocks", graph.nodes.len() as u64);
        let shape = Shape {
            f,
            bbs: &bbs,
            index: &index,
            node_of: &node_of,
            counters: &counters,
        };
        self.place(&shape, &mut graph, stats);
        self.table.graphs.push(graph);
    }

    /// A block's static mix; its calls redirected to their clones, run-time lengths counted.
    unsafe fn block(
        &mut self,
        b: LLVMBasicBlockRef,
        cx: u32,
        counters: LLVMValueRef,
        stats: &mut Stats,
    ) -> Mix {
        let mut mix = Mix::default();
        let mut i = LLVMGetFirstInstruction(b);
        while !i.is_null() {
            let next = LLVMGetNextInstruction(i);
            self.instruction(i, cx, counters, &mut mix, stats);
            i = next;
        }
        mix
    }

    unsafe fn instruction(
        &mut self,
        i: LLVMValueRef,
        cx: u32,
        counters: LLVMValueRef,
        mix: &mut Mix,
        stats: &mut Stats,
    ) {
        if !LLVMIsAPHINode(i).is_null() {
            return;
        }
        let op = LLVMGetInstructionOpcode(i);
        let ty = LLVMTypeOf(i);
        match op {
            LLVMOpcode::LLVMLoad => {
                let s = self.space(LLVMGetOperand(i, 0)) as usize;
                mix.loads[s] += 1;
                mix.load_bytes[s] += self.size_of(ty);
            }
            LLVMOpcode::LLVMStore => {
                let s = self.space(LLVMGetOperand(i, 1)) as usize;
                mix.stores[s] += 1;
                mix.store_bytes[s] += self.size_of(LLVMTypeOf(LLVMGetOperand(i, 0)));
            }
            LLVMOpcode::LLVMAtomicRMW | LLVMOpcode::LLVMAtomicCmpXchg => {
                let s = self.space(LLVMGetOperand(i, 0)) as usize;
                let size = self.size_of(LLVMTypeOf(LLVMGetOperand(i, 1)));
                mix.loads[s] += 1;
                mix.stores[s] += 1;
                mix.load_bytes[s] += size;
                mix.store_bytes[s] += size;
            }
            LLVMOpcode::LLVMCall | LLVMOpcode::LLVMInvoke => {
                if !self.call(i, cx, counters, mix, stats) {
                    return;
                }
            }
            LLVMOpcode::LLVMBr => {
                if LLVMIsConditional(i) != 0 {
                    mix.branches += 1;
                }
            }
            LLVMOpcode::LLVMSwitch | LLVMOpcode::LLVMIndirectBr => mix.branches += 1,
            _ => {
                let arith = !LLVMIsABinaryOperator(i).is_null()
                    || !LLVMIsACastInst(i).is_null()
                    || !LLVMIsACmpInst(i).is_null()
                    || !LLVMIsAUnaryOperator(i).is_null()
                    || !LLVMIsASelectInst(i).is_null()
                    || !LLVMIsAGetElementPtrInst(i).is_null()
                    || matches!(
                        op,
                        LLVMOpcode::LLVMExtractElement
                            | LLVMOpcode::LLVMInsertElement
                            | LLVMOpcode::LLVMShuffleVector
                    );
                if arith {
                    op_class(i, mix);
                }
            }
        }
        mix.instructions += 1;
    }

    /// A call's share of the mix; false: not an instruction of the program's (a marker, a
    /// debug or lifetime intrinsic).
    unsafe fn call(
        &mut self,
        i: LLVMValueRef,
        cx: u32,
        counters: LLVMValueRef,
        mix: &mut Mix,
        stats: &mut Stats,
    ) -> bool {
        let callee = LLVMGetCalledValue(i);
        let direct = !callee.is_null() && !LLVMIsAFunction(callee).is_null();
        let name = if direct {
            name_of(callee)
        } else {
            String::new()
        };
        // Markers (profcc's beside a foreign one included) and the counter array's fetches.
        let fetch = name == names::ROI_COUNTERS || name == names::ROI_COUNTERS_OF;
        let zray = !direct && zray_marker(i).is_some();
        if fetch || zray || MARKERS.iter().any(|m| m.0 == name) || ignored_intrinsic(&name) {
            return false;
        }
        if direct && LLVMGetIntrinsicID(callee) != 0 {
            let copy = name.starts_with("llvm.memcpy") || name.starts_with("llvm.memmove");
            if copy || name.starts_with("llvm.memset") {
                self.mem(i, 0, copy.then_some(1), 2, cx, counters, mix);
                return true;
            }
            op_class(i, mix);
            return true;
        }
        mix.calls += 1;
        if let Some(&(_, dst, src, len)) = LIBC_MEM.iter().find(|l| l.0 == name) {
            if LLVMGetNumArgOperands(i) as u32 > len {
                self.mem(i, dst, src, len, cx, counters, mix);
            }
            return true;
        }
        if name == FORK_CALL && LLVMGetNumArgOperands(i) >= 3 {
            let outlined = LLVMGetOperand(i, 2);
            if !LLVMIsAFunction(outlined).is_null() && Self::followable(outlined) {
                if let Some(c) = self.clone_of(outlined, cx, false) {
                    // The shared arguments follow the two thread-id parameters.
                    for k in 3..LLVMGetNumArgOperands(i) {
                        if self.own_slot(LLVMGetOperand(i, k)) && k - 1 < LLVMCountParams(c) {
                            self.captured.insert(LLVMGetParam(c, k - 1));
                        }
                    }
                    LLVMSetOperand(i, 2, c);
                    stats.bump("roi-outlined-cloned", 1);
                    return true;
                }
            }
            mix.uncovered_calls += 1;
            return true;
        }
        if direct && Self::followable(callee) {
            if let Some(c) = self.clone_of(callee, cx, true) {
                // A captured variable passed on (-O0's outlined function calls its body).
                for k in 0..LLVMGetNumArgOperands(i) {
                    let arg = LLVMGetOperand(i, k);
                    let captured = self.captured.contains(&arg) || self.reloaded_capture(arg);
                    if captured && k + 1 < LLVMCountParams(c) {
                        self.captured.insert(LLVMGetParam(c, k + 1));
                    }
                }
                self.redirect(i, c, counters);
                stats.bump("roi-calls-followed", 1);
                return true;
            }
        }
        mix.uncovered_calls += 1;
        true
    }

    /// Replace call `i` with a call of `clone` with the counters first (an invoke with an
    /// invoke to the same destinations: C++ code where an exception may unwind).
    unsafe fn redirect(&self, i: LLVMValueRef, clone: LLVMValueRef, counters: LLVMValueRef) {
        let n = LLVMGetNumArgOperands(i);
        let mut args: Vec<LLVMValueRef> = std::iter::once(counters)
            .chain((0..n).map(|k| LLVMGetOperand(i, k)))
            .collect();
        let ty = LLVMGlobalGetValueType(clone);
        let call = if LLVMIsAInvokeInst(i).is_null() {
            call_before(i, i, clone, ty, &args, &name_of(i))
        } else {
            let b = LLVMCreateBuilderInContext(LLVMGetTypeContext(ty));
            LLVMPositionBuilderBefore(b, i);
            let inv = LLVMBuildInvoke2(
                b,
                ty,
                clone,
                args.as_mut_ptr(),
                args.len() as u32,
                LLVMGetNormalDest(i),
                LLVMGetUnwindDest(i),
                cstr(&name_of(i)).as_ptr(),
            );
            LLVMDisposeBuilder(b);
            at_line_of(inv, i)
        };
        LLVMSetInstructionCallConv(call, LLVMGetInstructionCallConv(i));
        if LLVMIsTailCall(i) != 0 {
            LLVMSetTailCall(call, 1);
        }
        LLVMReplaceAllUsesWith(i, call);
        LLVMInstructionEraseFromParent(i);
    }

    /// A copy or fill: constant length in the mix, run-time length on a byte counter.
    #[allow(clippy::too_many_arguments)]
    unsafe fn mem(
        &mut self,
        i: LLVMValueRef,
        dst: u32,
        src: Option<u32>,
        len: u32,
        cx: u32,
        counters: LLVMValueRef,
        mix: &mut Mix,
    ) {
        let ds = self.space(LLVMGetOperand(i, dst)) as usize;
        let ss = src.map(|s| self.space(LLVMGetOperand(i, s)) as usize);
        let n = LLVMGetOperand(i, len);
        if LLVMIsAConstantInt(n).is_null() {
            let counter = self.counter();
            self.table.dyns.push(Dyn {
                counter,
                context: cx,
                read: ss.map_or(NONE, |s| s as u32),
                write: ds as u32,
            });
            self.bump(i, counters, counter, Some(n));
            return;
        }
        let n = LLVMConstIntGetZExtValue(n).min(u32::MAX as u64) as u32;
        mix.store_bytes[ds] += n;
        if let Some(s) = ss {
            mix.load_bytes[s] += n;
        }
    }

    /// Counters for one graph: on every node (oracle), or off a spanning tree (derived).
    unsafe fn place(&mut self, at: &Shape, g: &mut Graph, stats: &mut Stats) {
        let Shape {
            bbs,
            node_of,
            counters,
            ..
        } = *at;
        if self.placement == Placement::Derived && self.derive(at, g, stats) {
            return;
        }
        for (i, &n) in node_of.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let c = self.counter();
            g.nodes[n as usize - 1].1 = c;
            self.bump(first_insertion(bbs[i]), counters[i], c, None);
        }
        stats.bump("roi-counters", g.nodes.len() as u64);
    }

    /// Knuth–Stevenson placement; false (no counter placed) when an edge off the tree cannot
    /// take a counter (an exception edge, an indirect branch, a duplicate switch edge) or a
    /// trip count cannot be expanded: the caller counts every block (a trip count already
    /// expanded is then dead code the code generator drops).
    unsafe fn derive(&mut self, at: &Shape, g: &mut Graph, stats: &mut Stats) -> bool {
        let Shape {
            f,
            bbs,
            index,
            node_of,
            counters,
        } = *at;
        let depth = shim::block_depths(f, bbs.len());
        // Logical edges between nodes (0: outside), each with the CFG edges it stands for.
        let mut edges: Vec<(u32, u32)> = Vec::new();
        let mut cfg: Vec<Vec<(usize, Option<usize>)>> = Vec::new();
        let mut edge_at: HashMap<(u32, u32), usize> = HashMap::new();
        let mut add = |a: u32, b: u32, from: usize, to: Option<usize>| {
            let k = *edge_at.entry((a, b)).or_insert_with(|| {
                edges.push((a, b));
                cfg.push(Vec::new());
                edges.len() - 1
            });
            cfg[k].push((from, to));
        };
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); bbs.len()];
        for (i, &b) in bbs.iter().enumerate() {
            for s in successors(b) {
                preds[index[&s]].push(i);
            }
        }
        // Every CFG edge that touches a region block; a block without successors (return,
        // unreachable) exits to the outside, and the function's entry (`from` usize::MAX) is
        // entered from it.
        for (i, &b) in bbs.iter().enumerate() {
            let succ = successors(b);
            if node_of[i] != 0 && succ.is_empty() {
                add(node_of[i], 0, i, None);
            }
            for s in &succ {
                let j = index[s];
                if node_of[i] != 0 || node_of[j] != 0 {
                    add(node_of[i], node_of[j], i, Some(j));
                }
            }
        }
        if node_of[0] != 0 {
            add(0, node_of[0], usize::MAX, Some(0));
        }
        // Countable loops: the back edge (latch -> header) counted by its trip count.
        let mut hoist: HashMap<usize, LLVMBasicBlockRef> = HashMap::new();
        for (h, latch) in shim::countable_loops(f) {
            let (hi, li) = (index[&h], index[&latch]);
            if node_of[hi] == 0 || node_of[li] == 0 {
                continue;
            }
            if let Some(&k) = edge_at.get(&(node_of[li], node_of[hi])) {
                if cfg[k].len() == 1 {
                    hoist.insert(k, h);
                }
            }
        }
        let mut node_depth = vec![0u32; g.nodes.len() + 1];
        for (i, &n) in node_of.iter().enumerate() {
            node_depth[n as usize] = depth[i];
        }
        // Maximum-weight spanning tree (Kruskal): heavy edges first; hoisted back edges last.
        let weight = |k: usize| -> u64 {
            if hoist.contains_key(&k) {
                return 0;
            }
            let (a, b) = edges[k];
            if a == 0 || b == 0 {
                1
            } else {
                10u64.saturating_pow(node_depth[a as usize].min(node_depth[b as usize]) + 1)
            }
        };
        let mut order: Vec<usize> = (0..edges.len()).collect();
        order.sort_by_key(|&k| std::cmp::Reverse(weight(k)));
        let mut parent: Vec<usize> = (0..=g.nodes.len()).collect();
        fn find(p: &mut [usize], mut x: usize) -> usize {
            while p[x] != x {
                p[x] = p[p[x]];
                x = p[x];
            }
            x
        }
        let mut tree = vec![false; edges.len()];
        for &k in &order {
            let (a, b) = edges[k];
            let (ra, rb) = (find(&mut parent, a as usize), find(&mut parent, b as usize));
            if ra != rb {
                parent[ra] = rb;
                tree[k] = true;
            }
        }
        // Where each counted edge's counter goes; give up before changing anything.
        enum At {
            Before(LLVMValueRef, LLVMValueRef),
            Split(usize, usize),
            Hoist(LLVMBasicBlockRef),
        }
        // The counter array at an edge's site: the region block's (a block outside that
        // the site is in is dominated by it: the edge's only source or target).
        let pick = |from: usize, to: usize| {
            if from != usize::MAX && node_of[from] != 0 {
                counters[from]
            } else {
                counters[to]
            }
        };
        let mut sites: Vec<(usize, Vec<At>)> = Vec::new();
        for k in 0..edges.len() {
            if tree[k] {
                continue;
            }
            if let Some(&h) = hoist.get(&k) {
                sites.push((k, vec![At::Hoist(h)]));
                continue;
            }
            let mut at = Vec::new();
            for &(from, to) in &cfg[k] {
                let Some(to) = to else {
                    at.push(At::Before(
                        LLVMGetBasicBlockTerminator(bbs[from]),
                        counters[from],
                    ));
                    continue;
                };
                if from == usize::MAX {
                    at.push(At::Before(first_insertion(bbs[to]), counters[to]));
                    continue;
                }
                let succ = successors(bbs[from]);
                let all_same = succ.iter().all(|s| index[s] == to);
                let only_pred = preds[to].iter().all(|&p| p == from);
                if all_same {
                    at.push(At::Before(
                        LLVMGetBasicBlockTerminator(bbs[from]),
                        pick(from, to),
                    ));
                } else if only_pred && !is_eh_pad(bbs[to]) {
                    at.push(At::Before(first_insertion(bbs[to]), pick(from, to)));
                } else {
                    let t = LLVMGetBasicBlockTerminator(bbs[from]);
                    let dup = succ.iter().filter(|s| index[*s] == to).count() > 1;
                    let splittable = matches!(
                        LLVMGetInstructionOpcode(t),
                        LLVMOpcode::LLVMBr | LLVMOpcode::LLVMSwitch
                    ) && !is_eh_pad(bbs[to])
                        && !dup;
                    if !splittable {
                        stats.bump("roi-graphs-oracle-fallback", 1);
                        return false;
                    }
                    at.push(At::Split(from, to));
                }
            }
            sites.push((k, at));
        }
        // Trip counts first (the shim's analyses read the function as it is).
        let mut trips: HashMap<usize, (LLVMValueRef, LLVMValueRef)> = HashMap::new();
        for (k, at) in &sites {
            if let [At::Hoist(h)] = at[..] {
                match shim::expand_trips(f, h) {
                    Some((v, pre)) => {
                        trips.insert(*k, (v, LLVMGetBasicBlockTerminator(pre)));
                    }
                    None => {
                        stats.bump("roi-graphs-oracle-fallback", 1);
                        return false;
                    }
                }
            }
        }
        for (k, at) in sites {
            let c = self.counter();
            let flag = if matches!(at[..], [At::Hoist(_)]) {
                roi::HOISTED
            } else {
                0
            };
            g.edges.push((edges[k].0, edges[k].1, c | flag));
            for a in at {
                match a {
                    At::Before(i, cs) => self.bump(i, cs, c, None),
                    At::Split(from, to) => {
                        let nb = shim::split_edge(bbs[from], bbs[to]);
                        self.bump(LLVMGetBasicBlockTerminator(nb), pick(from, to), c, None);
                    }
                    At::Hoist(h) => {
                        let (v, t) = trips[&k];
                        self.bump(t, counters[index[&h]], c, Some(v));
                        stats.bump("roi-loops-hoisted", 1);
                    }
                }
            }
        }
        for k in 0..edges.len() {
            if tree[k] {
                g.edges.push((edges[k].0, edges[k].1, NONE));
            }
        }
        stats.bump(
            "roi-counters",
            (edges.len() - tree.iter().filter(|&&t| t).count()) as u64,
        );
        true
    }
}

/// Counts an operation (arithmetic, comparison, cast, math intrinsic) as vector, floating
/// point or integer, by its result's and its first operand's types.
unsafe fn op_class(i: LLVMValueRef, mix: &mut Mix) {
    let vector = |t: LLVMTypeRef| {
        matches!(
            LLVMGetTypeKind(t),
            LLVMTypeKind::LLVMVectorTypeKind | LLVMTypeKind::LLVMScalableVectorTypeKind
        )
    };
    let fp = |t: LLVMTypeRef| {
        matches!(
            LLVMGetTypeKind(t),
            LLVMTypeKind::LLVMHalfTypeKind
                | LLVMTypeKind::LLVMBFloatTypeKind
                | LLVMTypeKind::LLVMFloatTypeKind
                | LLVMTypeKind::LLVMDoubleTypeKind
                | LLVMTypeKind::LLVMX86_FP80TypeKind
                | LLVMTypeKind::LLVMFP128TypeKind
        )
    };
    let ty = LLVMTypeOf(i);
    let operand = if LLVMGetNumOperands(i) > 0 {
        LLVMTypeOf(LLVMGetOperand(i, 0))
    } else {
        ty
    };
    if vector(ty) || vector(operand) {
        mix.vector_ops += 1;
    } else if fp(ty) || fp(operand) {
        mix.fp_ops += 1;
    } else {
        mix.int_ops += 1;
    }
}

unsafe fn is_eh_pad(b: LLVMBasicBlockRef) -> bool {
    let i = LLVMGetFirstNonPHI_(b);
    !i.is_null()
        && matches!(
            LLVMGetInstructionOpcode(i),
            LLVMOpcode::LLVMLandingPad
                | LLVMOpcode::LLVMCatchPad
                | LLVMOpcode::LLVMCleanupPad
                | LLVMOpcode::LLVMCatchSwitch
        )
}

#[allow(non_snake_case)]
unsafe fn LLVMGetFirstNonPHI_(b: LLVMBasicBlockRef) -> LLVMValueRef {
    let mut i = LLVMGetFirstInstruction(b);
    while !i.is_null() && !LLVMIsAPHINode(i).is_null() {
        i = LLVMGetNextInstruction(i);
    }
    i
}

/// The first place a new instruction may go: after the phis, a landing pad and the call that
/// fetches the counter array.
unsafe fn first_insertion(b: LLVMBasicBlockRef) -> LLVMValueRef {
    let mut i = LLVMGetFirstNonPHI_(b);
    if !i.is_null() && LLVMGetInstructionOpcode(i) == LLVMOpcode::LLVMLandingPad {
        i = LLVMGetNextInstruction(i);
    }
    if !i.is_null()
        && !LLVMIsACallInst(i).is_null()
        && matches!(
            callee_name(i).as_str(),
            names::ROI_COUNTERS | names::ROI_COUNTERS_OF
        )
    {
        i = LLVMGetNextInstruction(i);
    }
    i
}

/// Instrument the module's regions; false when it has none. An error when the module would
/// need more counters than `roi::MAX_COUNTERS` (the driver then compiles it uninstrumented).
pub unsafe fn instrument(
    ctx: LLVMContextRef,
    m: LLVMModuleRef,
    placement: Placement,
    stats: &mut Stats,
) -> Result<bool, String> {
    let region_names = isolate_markers(m, ctx);
    if region_names.is_empty() {
        return Ok(false);
    }
    let ptr = LLVMPointerTypeInContext(ctx, 0);
    let i32t = LLVMInt32TypeInContext(ctx);
    // The runtime's entry points: (function, type).
    let entry = |name: &str, ret: LLVMTypeRef, params: &mut [LLVMTypeRef]| {
        let ty = LLVMFunctionType(ret, params.as_mut_ptr(), params.len() as u32, 0);
        (declare(m, name, ty), ty)
    };
    let (counters_fn, counters_ty) = entry(names::ROI_COUNTERS, ptr, &mut [ptr]);
    let (counters_of_fn, counters_of_ty) = entry(names::ROI_COUNTERS_OF, ptr, &mut [ptr, i32t]);
    let (take_fn, take_ty) = entry(names::ROI_BEGIN_TAKE, i32t, &mut [ptr, i32t, i32t]);
    let (plain_fn, plain_ty) = entry(names::ROI_PLAIN, LLVMVoidTypeInContext(ctx), &mut [ptr]);
    // The descriptor's body is set at the end, once the table is known.
    let mut fields = [i32t, i32t, ptr, i32t, ptr];
    let desc_ty = LLVMStructTypeInContext(ctx, fields.as_mut_ptr(), fields.len() as u32, 0);
    let desc = LLVMAddGlobal(m, desc_ty, c"__profcc_roi_module".as_ptr());
    let mut pass = Pass {
        ctx,
        m,
        dl: LLVMGetModuleDataLayout(m),
        placement,
        table: Table {
            names: region_names,
            contexts: vec![Vec::new()],
            ..Table::default()
        },
        mix_index: HashMap::new(),
        clones: HashMap::new(),
        work: Vec::new(),
        counters_fn,
        counters_ty,
        desc,
        escapes: HashMap::new(),
        captured: HashSet::new(),
        full: false,
        sampled_counters: HashMap::new(),
        counters_of_fn,
        counters_of_ty,
        take_fn,
        take_ty,
        fast_takes: Vec::new(),
        plain_blocks: HashSet::new(),
        plain_fn,
        plain_ty,
        bumped: Default::default(),
        counter_kind: LLVMGetMDKindIDInContext(ctx, c"profcc.counter".as_ptr(), 14),
    };
    // Functions with markers, in module order (the empty context: counted where inside).
    let mut roots = Vec::new();
    crate::llvm::for_each_function(m, |f| {
        let mut has = false;
        crate::llvm::for_each_instruction(f, |i| has |= marker(i).is_some());
        if has {
            roots.push(f);
        }
    });
    // Each instance is queued once: a root here, a clone when it is made.
    for &f in &roots {
        pass.version(f, stats);
    }
    for f in roots.into_iter().rev() {
        pass.work.push((f, 0, false));
    }
    while let Some((f, cx, param)) = pass.work.pop() {
        pass.escapes.clear();
        pass.instance(f, cx, param, stats);
    }
    if pass.full {
        stats.bump("roi-clones-over-limit", 1);
    }
    if pass.table.counters > roi::MAX_COUNTERS {
        return Err(format!(
            "{} region counters, more than the {} a module may have (the scratch arrays' size)",
            pass.table.counters,
            roi::MAX_COUNTERS
        ));
    }
    // Counters in registers in call-free loops (the oracle keeps every one in memory: it is
    // the reference the derived counts are checked against).
    if placement != Placement::Oracle {
        for &f in pass.bumped.borrow().iter() {
            stats.bump(
                "roi-counters-in-registers",
                shim::promote_counters(f, pass.counter_kind) as u64,
            );
        }
    }
    // `roi_sample` inside an execution: each clone a direct call reaches gets the prologue
    // that runs the original instead, counts it as the execution does, or counts it in the
    // sampled array (docs/regions.md, "Sampling inside an execution").
    // In the clones' name order: the functions it adds go into the module in a build-to-build
    // stable order (the map's is not).
    let mut direct: Vec<(String, LLVMValueRef, LLVMValueRef)> = pass
        .clones
        .iter()
        .filter(|(k, _)| k.2)
        .map(|(k, &c)| (name_of(c), k.0, c))
        .collect();
    direct.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    if !direct.is_empty() {
        let word = LLVMAddGlobal(
            m,
            LLVMInt64TypeInContext(ctx),
            cstr(names::ROI_CALLS).as_ptr(),
        );
        LLVMSetThreadLocal(word, 1);
        LLVMSetThreadLocalMode(word, llvm_sys::LLVMThreadLocalMode::LLVMInitialExecTLSModel);
        let (ask, _) = entry(names::ROI_CALL, ptr, &mut [ptr, ptr]);
        let (done, _) = entry(names::ROI_CALL_DONE, LLVMVoidTypeInContext(ctx), &mut []);
        for (_, orig, clone) in direct {
            if shim::call_prologue(clone, orig, word, ask, done, desc) {
                stats.bump("roi-sampled-callees", 1);
            }
        }
    }
    // Last, the counters placed: the sampled begins' inlined skip test.
    if !pass.fast_takes.is_empty() {
        let words = roi::SKIP_WORDS as u32;
        let ty = LLVMArrayType2(LLVMInt64TypeInContext(ctx), words as u64);
        let skip = LLVMAddGlobal(m, ty, cstr(names::ROI_SKIP).as_ptr());
        LLVMSetThreadLocal(skip, 1);
        LLVMSetThreadLocalMode(skip, llvm_sys::LLVMThreadLocalMode::LLVMInitialExecTLSModel);
        for &(take, slot, tag, plain) in &pass.fast_takes {
            if shim::fast_take(take, skip, slot, tag, plain) {
                stats.bump("roi-fast-begins", 1);
            }
        }
    }
    emit(&pass, desc, desc_ty);
    stats.bump("roi-regions", pass.table.names.len() as u64);
    stats.bump("roi-clones", pass.clones.len() as u64);
    stats.bump("roi-mixes", pass.table.mixes.len() as u64);
    Ok(true)
}

/// The table, the slot and the descriptor; a constructor registers them.
unsafe fn emit(p: &Pass, desc: LLVMValueRef, desc_ty: LLVMTypeRef) {
    let ctx = p.ctx;
    let m = p.m;
    let i32t = LLVMInt32TypeInContext(ctx);
    let ptr = LLVMPointerTypeInContext(ctx, 0);
    let words = p.table.pack();
    let mut vals: Vec<LLVMValueRef> = words
        .iter()
        .map(|&w| LLVMConstInt(i32t, w as u64, 0))
        .collect();
    let table = LLVMAddGlobal(
        m,
        LLVMArrayType2(i32t, words.len() as u64),
        c"__profcc_roi_table".as_ptr(),
    );
    LLVMSetInitializer(
        table,
        LLVMConstArray2(i32t, vals.as_mut_ptr(), vals.len() as u64),
    );
    LLVMSetGlobalConstant(table, 1);
    LLVMSetLinkage(table, LLVMLinkage::LLVMPrivateLinkage);
    let slot = LLVMAddGlobal(m, i32t, c"__profcc_roi_slot".as_ptr());
    LLVMSetInitializer(slot, LLVMConstInt(i32t, NONE as u64, 0));
    LLVMSetLinkage(slot, LLVMLinkage::LLVMInternalLinkage);
    // Runtime data after the program's .bss (driver/src/layout.rs): native layout kept.
    LLVMSetSection(slot, c".profcc.data".as_ptr());
    let mut dv = [
        LLVMConstInt(i32t, roi::VERSION as u64, 0),
        LLVMConstInt(i32t, p.table.counters as u64, 0),
        table,
        LLVMConstInt(i32t, words.len() as u64, 0),
        slot,
    ];
    LLVMSetInitializer(
        desc,
        LLVMConstNamedStruct(desc_ty, dv.as_mut_ptr(), dv.len() as u32),
    );
    LLVMSetGlobalConstant(desc, 1);
    LLVMSetLinkage(desc, LLVMLinkage::LLVMPrivateLinkage);

    let void = LLVMVoidTypeInContext(ctx);
    let mut params = [ptr];
    let reg_ty = LLVMFunctionType(void, params.as_mut_ptr(), 1, 0);
    let reg = declare(m, names::ROI_REGISTER, reg_ty);
    let ctor_ty = LLVMFunctionType(void, std::ptr::null_mut(), 0, 0);
    let ctor = LLVMAddFunction(m, c"profcc.roi_ctor".as_ptr(), ctor_ty);
    LLVMSetLinkage(ctor, LLVMLinkage::LLVMInternalLinkage);
    let bb = LLVMAppendBasicBlockInContext(ctx, ctor, c"entry".as_ptr());
    let b = LLVMCreateBuilderInContext(ctx);
    LLVMPositionBuilderAtEnd(b, bb);
    let mut args = [desc];
    LLVMBuildCall2(b, reg_ty, reg, args.as_mut_ptr(), 1, c"".as_ptr());
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
    crate::metadata::append_global_xtor(
        ctx,
        m,
        ctor,
        crate::abi::CTOR_PRIORITY,
        "llvm.global_ctors",
    );
}
