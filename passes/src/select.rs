//! Selection: which memory accesses to instrument, and a counted reason for each one skipped.

use crate::abi::{AccessKind, MAX_MODULE_SITES};
use crate::llvm::{for_each_function, for_each_instruction, name_of};
use crate::Stats;
use llvm_sys::core::*;
use llvm_sys::prelude::*;
use llvm_sys::target::{LLVMGetModuleDataLayout, LLVMStoreSizeOfType};
use llvm_sys::LLVMOpcode;
use std::collections::{HashMap, HashSet};

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
    /// Accesses with the same `group` run the same number of times: one basic block, no
    /// call between them that might not return. They share one execution counter.
    pub group: u32,
    /// Accesses with the same `epoch` (inside one group) have no atomic, fence or call
    /// between them: a repeated check of the same address tells the runtime nothing new.
    pub epoch: u32,
    /// Filled by [`plan`]: the access whose counter this one shares (itself when it leads
    /// its group or has a run-time length).
    pub leader: usize,
    /// Filled by [`plan`]: check the cache-line shadow for this access (false when an
    /// access to the same address in the same epoch covers it).
    pub check: bool,
    /// Filled by [`plan`]: the unchecked reads and writes of the same address this checked
    /// access stands for.
    pub extra_reads: u32,
    pub extra_writes: u32,
    /// Filled by [`plan`]: the checked write that takes its group's write-volume sample (one
    /// per group execution, so that two stores of one unrolled iteration are not two samples
    /// of the line).
    pub samples: bool,
    /// The size in blocks of the innermost loop (cycle of the control-flow graph) the access
    /// lies on; 0: none. A check in a small loop is inlined (see [`INLINE_LOOP_BLOCKS`]);
    /// elsewhere it is a call of a shared checker.
    pub loop_blocks: u32,
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
    /// The innermost loop size of the current function's blocks that lie on a loop.
    loops: HashMap<LLVMBasicBlockRef, u32>,
    group: u32,
    epoch: u32,
    block: LLVMBasicBlockRef,
}

impl Selector {
    unsafe fn base_of(&mut self, p: LLVMValueRef) -> Base {
        let p = underlying(p);
        if is_thread_local_address(p) {
            return Base::ThreadLocal;
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

/// The object an address is computed from: `p` without its GEPs and pointer casts
/// (instructions or constant expressions), at most 32 deep.
pub(crate) unsafe fn underlying(mut p: LLVMValueRef) -> LLVMValueRef {
    for _ in 0..32 {
        let strip = !LLVMIsAGetElementPtrInst(p).is_null()
            || !LLVMIsABitCastInst(p).is_null()
            || !LLVMIsAAddrSpaceCastInst(p).is_null()
            || (!LLVMIsAConstantExpr(p).is_null()
                && matches!(
                    LLVMGetConstOpcode(p),
                    LLVMOpcode::LLVMGetElementPtr
                        | LLVMOpcode::LLVMBitCast
                        | LLVMOpcode::LLVMAddrSpaceCast
                ));
        if !strip {
            break;
        }
        p = LLVMGetOperand(p, 0);
    }
    p
}

/// `llvm.threadlocal.address(@tls)`: a thread-local variable's address.
pub(crate) unsafe fn is_thread_local_address(p: LLVMValueRef) -> bool {
    if LLVMIsACallInst(p).is_null() {
        return false;
    }
    let callee = LLVMGetCalledValue(p);
    !callee.is_null() && name_of(callee).starts_with("llvm.threadlocal.address")
}

/// Does the address `v` (an alloca or derived from one) leave the function's sight?
/// Loads through it, stores *to* it, GEPs/casts of it (recursively) and lifetime/debug
/// intrinsics do not; anything else (stored as a value, passed to a call, ptrtoint, phi,
/// select, returned) does.
pub(crate) unsafe fn escapes(v: LLVMValueRef, depth: u32) -> bool {
    escapes_past(v, depth, false)
}

/// [`escapes`]; with `openmp_runtime`, passing the address to the OpenMP runtime's loop and
/// reduction calls (`__kmpc_*`, which fill the bounds and never keep the address) does not
/// count as leaving (the region counters: a -O0 outlined loop's bounds are its own slots).
pub(crate) unsafe fn escapes_past(v: LLVMValueRef, depth: u32, openmp_runtime: bool) -> bool {
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
            !escapes_past(user, depth + 1, openmp_runtime)
        } else if !LLVMIsACallInst(user).is_null() {
            let callee = LLVMGetCalledValue(user);
            let name = if callee.is_null() {
                String::new()
            } else {
                name_of(callee)
            };
            name.starts_with("llvm.lifetime.")
                || name.starts_with("llvm.dbg.")
                || (openmp_runtime && name.starts_with("__kmpc_"))
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
        loops: HashMap::new(),
        group: 0,
        epoch: 0,
        block: std::ptr::null_mut(),
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
            selector.loops = innermost_loops(func);
            for_each_instruction(func, |inst| {
                selector.boundaries(inst);
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
    let index = sel.accesses.len();
    sel.accesses.push(Access {
        inst,
        func,
        ptr,
        kind,
        size,
        group: selector.group,
        epoch: selector.epoch,
        leader: index,
        check: true,
        extra_reads: 0,
        extra_writes: 0,
        samples: false,
        loop_blocks: selector
            .loops
            .get(&LLVMGetInstructionParent(inst))
            .copied()
            .unwrap_or(0),
    });
}

impl Selector {
    /// Start a new group at each basic block and after each call that might not return; a
    /// new epoch also after other calls (but `nosync` intrinsics), atomics and fences (the
    /// instruction itself stays in the old one).
    unsafe fn boundaries(&mut self, inst: LLVMValueRef) {
        let block = LLVMGetInstructionParent(inst);
        if block != self.block {
            self.block = block;
            self.group += 1;
            self.epoch += 1;
            return;
        }
        let prev = LLVMGetPreviousInstruction(inst);
        if prev.is_null() {
            return;
        }
        if !LLVMIsACallInst(prev).is_null() {
            let callee = LLVMGetCalledValue(prev);
            let intrinsic = !callee.is_null()
                && !LLVMIsAFunction(callee).is_null()
                && name_of(callee).starts_with("llvm.");
            if !intrinsic {
                self.group += 1;
            }
            // An intrinsic that does not synchronise (`nosync`: llvm.fmuladd, lifetime
            // markers, vector reductions) keeps the epoch: another thread's access cannot be
            // ordered between the accesses around it, so one check still stands for them (an
            // unrolled `*sum += x[i] * x[i]` checks one store of four).
            if !(intrinsic && has_attr(callee, "nosync")) {
                self.epoch += 1;
            }
        } else if !LLVMIsAFenceInst(prev).is_null()
            || !LLVMIsAAtomicRMWInst(prev).is_null()
            || !LLVMIsAAtomicCmpXchgInst(prev).is_null()
            || ((!LLVMIsALoadInst(prev).is_null() || !LLVMIsAStoreInst(prev).is_null())
                && LLVMGetOrdering(prev)
                    != llvm_sys::LLVMAtomicOrdering::LLVMAtomicOrderingNotAtomic)
        {
            self.epoch += 1;
        }
    }
}

/// The size (in blocks) of the innermost cycle each block of `func` lies on, for the blocks
/// that lie on one. The cycles are the strongly connected components of the control-flow
/// graph, then, recursively, those of each component without its entry blocks (a natural
/// loop's header): a loop nest, irreducible cycles included.
unsafe fn innermost_loops(func: LLVMValueRef) -> HashMap<LLVMBasicBlockRef, u32> {
    let mut blocks = Vec::new();
    let mut bb = LLVMGetFirstBasicBlock(func);
    while !bb.is_null() {
        blocks.push(bb);
        bb = LLVMGetNextBasicBlock(bb);
    }
    let index: HashMap<LLVMBasicBlockRef, usize> =
        blocks.iter().enumerate().map(|(i, b)| (*b, i)).collect();
    let succs: Vec<Vec<usize>> = blocks
        .iter()
        .map(|&b| {
            let term = LLVMGetBasicBlockTerminator(b);
            if term.is_null() {
                return Vec::new();
            }
            (0..LLVMGetNumSuccessors(term))
                .filter_map(|i| index.get(&LLVMGetSuccessor(term, i)).copied())
                .collect()
        })
        .collect();
    let mut preds = vec![Vec::new(); blocks.len()];
    for (v, ss) in succs.iter().enumerate() {
        for &w in ss {
            preds[w].push(v);
        }
    }
    let mut size = vec![0u32; blocks.len()];
    let mut todo = vec![(0..blocks.len()).collect::<Vec<_>>()];
    while let Some(nodes) = todo.pop() {
        for scc in components(&succs, &nodes) {
            if scc.len() == 1 && !succs[scc[0]].contains(&scc[0]) {
                continue;
            }
            let inside: HashSet<usize> = scc.iter().copied().collect();
            for &v in &scc {
                size[v] = scc.len() as u32;
            }
            let entry = |v: &usize| preds[*v].iter().any(|p| !inside.contains(p));
            let mut rest: Vec<usize> = scc.iter().copied().filter(|v| !entry(v)).collect();
            if rest.len() == scc.len() {
                rest.retain(|&v| v != scc[0]);
            }
            if !rest.is_empty() {
                todo.push(rest);
            }
        }
    }
    blocks
        .iter()
        .zip(size)
        .filter(|(_, n)| *n > 0)
        .map(|(b, n)| (*b, n))
        .collect()
}

/// The strongly connected components of the subgraph of `succs` on `nodes` (Tarjan's
/// algorithm, iterative).
fn components(succs: &[Vec<usize>], nodes: &[usize]) -> Vec<Vec<usize>> {
    const NONE: usize = usize::MAX;
    let n = succs.len();
    let mut member = vec![false; n];
    for &v in nodes {
        member[v] = true;
    }
    let (mut idx, mut low, mut on) = (vec![NONE; n], vec![0; n], vec![false; n]);
    let (mut stack, mut next, mut out) = (Vec::new(), 0, Vec::new());
    for &root in nodes {
        if idx[root] != NONE {
            continue;
        }
        // (node, next successor to visit)
        let mut work = vec![(root, 0usize)];
        idx[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on[root] = true;
        while let Some(top) = work.last_mut() {
            let v = top.0;
            if top.1 < succs[v].len() {
                let w = succs[v][top.1];
                top.1 += 1;
                if !member[w] {
                    continue;
                }
                if idx[w] == NONE {
                    idx[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on[w] = true;
                    work.push((w, 0));
                } else if on[w] {
                    low[v] = low[v].min(idx[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(u, _)) = work.last() {
                low[u] = low[u].min(low[v]);
            }
            if low[v] == idx[v] {
                let mut scc = Vec::new();
                loop {
                    let w = stack.pop().unwrap();
                    on[w] = false;
                    scc.push(w);
                    if w == v {
                        break;
                    }
                }
                out.push(scc);
            }
        }
    }
    out
}

/// Share counters inside groups and drop repeated checks:
/// - every fixed-size access of a group counts with the group's first one;
/// - of the plain loads and stores of one address and size in one epoch, one is checked and
///   stands for the others (after ThreadSanitizer's same-block rule): the first write if there
///   is one (a load, add, store checks only the store), else the first read. It carries the
///   number of reads and writes it stands for, so the runtime's per-byte counts stay whole,
///   e.g. for a loop body unrolled four times.
///
/// Atomics are never dropped and never stand for another access. Counting stays exact: the
/// accesses of a group execute the same number of times.
pub fn plan(sel: &mut Selection, stats: &mut Stats) {
    let a = &mut sel.accesses;
    let mut start = 0;
    while start < a.len() {
        let mut end = start + 1;
        while end < a.len() && a[end].group == a[start].group && a[end].func == a[start].func {
            end += 1;
        }
        let mut leader = None;
        for i in start..end {
            if matches!(a[i].size, Size::Const(_)) {
                let l = *leader.get_or_insert(i);
                a[i].leader = l;
            }
        }
        // The checked access standing for each (epoch, address, size).
        let mut rep: HashMap<(u32, LLVMValueRef, u64), usize> = HashMap::new();
        for j in start..end {
            let Size::Const(n) = a[j].size else { continue };
            if n > crate::abi::LINE_SIZE || !plain(a[j].kind) {
                continue;
            }
            let key = (a[j].epoch, a[j].ptr, n);
            let Some(&i) = rep.get(&key) else {
                rep.insert(key, j);
                continue;
            };
            let j_writes = a[j].kind == AccessKind::Write;
            if a[i].kind == AccessKind::Write || !j_writes {
                // Stands for j (a read or write after a write, a read after a read).
                let extra = if j_writes {
                    &mut a[i].extra_writes
                } else {
                    &mut a[i].extra_reads
                };
                if *extra < MAX_EXTRA {
                    *extra += 1;
                    a[j].check = false;
                } else {
                    rep.insert(key, j);
                }
            } else if a[i].extra_reads < MAX_EXTRA {
                // The first write after reads checks for them.
                a[j].extra_reads = a[i].extra_reads + 1;
                a[i].check = false;
                rep.insert(key, j);
            } else {
                rep.insert(key, j);
            }
        }
        let sampler = (start..end).find(|&i| {
            a[i].check
                && a[i].kind.writes()
                && matches!(a[i].size, Size::Const(n) if n <= crate::abi::LINE_SIZE)
        });
        if let Some(i) = sampler {
            a[i].samples = true;
        }
        start = end;
    }
    let shared = a.iter().enumerate().filter(|(i, x)| x.leader != *i).count();
    let covered = a.iter().filter(|x| !x.check).count();
    stats.bump("counter-shared-in-block", shared as u64);
    stats.bump("check-covered-same-address", covered as u64);
}

/// Checks are inlined in loops of at most this many blocks (innermost loop): a short loop
/// body runs often and pays little for the inlined fast path; a large loop (an interpreter's
/// dispatch loop) and straight-line code call the checker instead, which keeps the code and
/// the compile time small.
pub const INLINE_LOOP_BLOCKS: u32 = 4;

/// Most extra reads (and writes) one checked access stands for: 6 bits of `info` each.
pub const MAX_EXTRA: u32 = crate::abi::INFO_EXTRA_MAX;

fn plain(k: AccessKind) -> bool {
    matches!(k, AccessKind::Read | AccessKind::Write)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An access for `plan` alone: it compares addresses and functions by handle only.
    fn acc(ptr: usize, kind: AccessKind, group: u32, epoch: u32) -> Access {
        Access {
            inst: std::ptr::null_mut(),
            func: 1 as LLVMValueRef,
            ptr: ptr as LLVMValueRef,
            kind,
            size: Size::Const(8),
            group,
            epoch,
            leader: 0,
            check: true,
            extra_reads: 0,
            extra_writes: 0,
            samples: false,
            loop_blocks: 0,
        }
    }

    #[test]
    fn plan_shares_counters_covers_repeats_and_picks_one_sampler() {
        use AccessKind::{Atomic, Read, Write};
        // Group 1, one epoch: an unrolled `p[0] += 1` twice (R W R W of p), then a read of q.
        // Group 2: a write of p, an atomic (ends the epoch), a write of p again.
        let mut sel = Selection {
            accesses: vec![
                acc(0x10, Read, 1, 1),
                acc(0x10, Write, 1, 1),
                acc(0x10, Read, 1, 1),
                acc(0x10, Write, 1, 1),
                acc(0x20, Read, 1, 1),
                acc(0x10, Write, 2, 2),
                acc(0x30, Atomic, 2, 2),
                acc(0x10, Write, 2, 3),
            ],
        };
        for (i, a) in sel.accesses.iter_mut().enumerate() {
            a.leader = i;
        }
        let mut stats = Stats::default();
        plan(&mut sel, &mut stats);
        let a = &sel.accesses;
        let leaders: Vec<usize> = a.iter().map(|x| x.leader).collect();
        assert_eq!(leaders, [0, 0, 0, 0, 0, 5, 5, 5]);
        let checked: Vec<bool> = a.iter().map(|x| x.check).collect();
        assert_eq!(checked, [false, true, false, false, true, true, true, true]);
        // The first write stands for both reads and the second write of p.
        assert_eq!((a[1].extra_reads, a[1].extra_writes), (2, 1));
        assert_eq!((a[4].extra_reads, a[4].extra_writes), (0, 0));
        // One sampling write per group: the first checked one.
        let samplers: Vec<usize> = (0..a.len()).filter(|&i| a[i].samples).collect();
        assert_eq!(samplers, [1, 5]);
        assert_eq!(stats.get("counter-shared-in-block"), 4 + 2);
        assert_eq!(stats.get("check-covered-same-address"), 3);
    }
}
