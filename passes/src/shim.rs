//! The C++ shim (../shim/shim.cpp): LLVM's loops, scalar evolution, block and edge splitting
//! and function cloning, which LLVM-C does not offer.

use llvm_sys::prelude::*;

extern "C" {
    fn profcc_split_before(inst: LLVMValueRef) -> LLVMBasicBlockRef;
    fn profcc_fold_terminator(b: LLVMBasicBlockRef) -> i32;
    fn profcc_remove_unreachable(f: LLVMValueRef) -> i32;
    fn profcc_invoke_to_call(inst: LLVMValueRef);
    fn profcc_split_edge(from: LLVMBasicBlockRef, to: LLVMBasicBlockRef) -> LLVMBasicBlockRef;
    fn profcc_clone_function(
        f: LLVMValueRef,
        name: *const std::os::raw::c_char,
        counters_param: i32,
    ) -> LLVMValueRef;
    fn profcc_unsink(call: LLVMValueRef) -> i32;
    fn profcc_version_region(
        bbs: *const LLVMBasicBlockRef,
        n: usize,
        cond: LLVMValueRef,
        out: *mut LLVMBasicBlockRef,
    ) -> LLVMBasicBlockRef;
    fn profcc_fast_take(
        take: LLVMValueRef,
        skip: LLVMValueRef,
        slot: u32,
        tag: u32,
        plain: LLVMBasicBlockRef,
    ) -> i32;
    fn profcc_promote_counters(f: LLVMValueRef, kind: u32) -> usize;
    fn profcc_call_prologue(
        clone: LLVMValueRef,
        orig: LLVMValueRef,
        word: LLVMValueRef,
        ask: LLVMValueRef,
        done: LLVMValueRef,
        desc: LLVMValueRef,
    ) -> i32;
    fn profcc_block_depths(f: LLVMValueRef, out: *mut u32, n: usize);
    fn profcc_countable_loops(f: LLVMValueRef, out: *mut LLVMBasicBlockRef, cap: usize) -> usize;
    fn profcc_expand_trips(
        f: LLVMValueRef,
        header: LLVMBasicBlockRef,
        pre: *mut LLVMBasicBlockRef,
    ) -> LLVMValueRef;
}

/// Splits `inst`'s block before it; the returned block starts with `inst`.
pub unsafe fn split_before(inst: LLVMValueRef) -> LLVMBasicBlockRef {
    profcc_split_before(inst)
}

/// Folds `b`'s branch on a constant into an unconditional one.
pub unsafe fn fold_terminator(b: LLVMBasicBlockRef) -> bool {
    profcc_fold_terminator(b) != 0
}

/// Turns the invoke `i` into a call and a branch to its normal destination (its unwind
/// edge goes).
pub unsafe fn invoke_to_call(i: LLVMValueRef) {
    profcc_invoke_to_call(i)
}

/// Deletes the blocks of `f` no path from its entry reaches.
pub unsafe fn remove_unreachable(f: LLVMValueRef) -> bool {
    profcc_remove_unreachable(f) != 0
}

/// A new block on the edge `from -> to`.
pub unsafe fn split_edge(from: LLVMBasicBlockRef, to: LLVMBasicBlockRef) -> LLVMBasicBlockRef {
    profcc_split_edge(from, to)
}

/// Copies `call`'s block, from its first non-phi through `call`, onto each incoming edge
/// (the caller checks there is one edge per predecessor); the number of copies.
pub unsafe fn unsink(call: LLVMValueRef) -> usize {
    profcc_unsink(call) as usize
}

/// Gives a single-entry set of blocks (`bbs[0]` its entry, entered from one predecessor by
/// an unconditional branch) a plain copy; the predecessor branches on `cond` to the original
/// or the copy. The copy's blocks are named `*.profcc.plain`; returns each block's copy.
pub unsafe fn version_region(
    bbs: &[LLVMBasicBlockRef],
    cond: LLVMValueRef,
) -> Vec<LLVMBasicBlockRef> {
    let mut out = vec![std::ptr::null_mut(); bbs.len()];
    profcc_version_region(bbs.as_ptr(), bbs.len(), cond, out.as_mut_ptr());
    out
}

/// Inlines a sampled begin's fast way (`profcc_abi::roi::SKIP_WORDS`): before `take`, while
/// the thread's skip slot `slot` of `skip` holds runs armed for `tag` and the gate is open,
/// take one off and go to `plain` without the call. Whether it could (the take's block does
/// nothing else after the call).
pub unsafe fn fast_take(
    take: LLVMValueRef,
    skip: LLVMValueRef,
    slot: u32,
    tag: u32,
    plain: LLVMBasicBlockRef,
) -> bool {
    profcc_fast_take(take, skip, slot, tag, plain) != 0
}

/// Keeps the counters bumped in `f`'s call-free loops (load and store tagged with metadata
/// `kind`) in registers, stored on the loops' exits; how many were.
pub unsafe fn promote_counters(f: LLVMValueRef, kind: u32) -> usize {
    profcc_promote_counters(f, kind)
}

/// `roi_sample`'s calls (docs/regions.md, "Sampling inside an execution"): `clone` (of
/// `orig`, the counter array its first parameter) becomes a test of the thread's word `word`
/// that jumps to its body, moved to `<clone>.body`, at 0, and otherwise to a cold
/// `<clone>.calls`: above 1 it takes one off and runs `orig`; at 1 it asks the runtime
/// (`ask(desc, array)`: null runs `orig`, the array given runs the body, another array runs
/// the body with it and then `done()`). False, changing nothing, for a function whose
/// arguments cannot be forwarded (varargs, inalloca, preallocated, swifterror, naked).
pub unsafe fn call_prologue(
    clone: LLVMValueRef,
    orig: LLVMValueRef,
    word: LLVMValueRef,
    ask: LLVMValueRef,
    done: LLVMValueRef,
    desc: LLVMValueRef,
) -> bool {
    profcc_call_prologue(clone, orig, word, ask, done, desc) != 0
}

/// An internal copy of `f` named `name`; with `counters_param`, a leading `ptr` parameter.
pub unsafe fn clone_function(f: LLVMValueRef, name: &str, counters_param: bool) -> LLVMValueRef {
    let name = std::ffi::CString::new(name).unwrap_or_default();
    profcc_clone_function(f, name.as_ptr(), counters_param as i32)
}

/// The loop depth of each of `f`'s `n` blocks, in block order.
pub unsafe fn block_depths(f: LLVMValueRef, n: usize) -> Vec<u32> {
    let mut v = vec![0u32; n];
    profcc_block_depths(f, v.as_mut_ptr(), n);
    v
}

/// (header, latch) of the loops whose back edge runs a count known at entry.
pub unsafe fn countable_loops(f: LLVMValueRef) -> Vec<(LLVMBasicBlockRef, LLVMBasicBlockRef)> {
    let n = profcc_countable_loops(f, std::ptr::null_mut(), 0);
    let mut v = vec![std::ptr::null_mut(); 2 * n];
    let got = profcc_countable_loops(f, v.as_mut_ptr(), n);
    v.chunks(2).take(got.min(n)).map(|c| (c[0], c[1])).collect()
}

/// The back-edge-taken count of the loop at `header`, an i64 computed at the end of its
/// preheader (returned with it).
pub unsafe fn expand_trips(
    f: LLVMValueRef,
    header: LLVMBasicBlockRef,
) -> Option<(LLVMValueRef, LLVMBasicBlockRef)> {
    let mut pre = std::ptr::null_mut();
    let v = profcc_expand_trips(f, header, &mut pre);
    (!v.is_null()).then_some((v, pre))
}
