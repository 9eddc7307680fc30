// The few LLVM C++ facilities the regions pass needs and LLVM-C lacks (passes/src/shim.rs):
// splitting blocks and edges, cloning a function (optionally with a leading counters
// parameter), loops with their depth, and a loop's back-edge-taken count expanded in its
// preheader (scalar evolution). Built by passes/build.rs with the `cc` crate against
// llvm-22-dev; every entry point is `extern "C"` and takes LLVM-C handles.
#include "llvm-c/Core.h"
#include "llvm/Analysis/AssumptionCache.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/Analysis/DomTreeUpdater.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/Transforms/Utils/Local.h"
#include "llvm/Transforms/Utils/LoopSimplify.h"
#include "llvm/Transforms/Utils/SSAUpdater.h"
#include "llvm/Transforms/Utils/ScalarEvolutionExpander.h"

using namespace llvm;

namespace {
// LLVM-C's unwrap lives in headers that are per-type; these are the ones needed.
Function *fn(LLVMValueRef v) { return cast<Function>(reinterpret_cast<Value *>(v)); }
BasicBlock *bb(LLVMBasicBlockRef b) { return reinterpret_cast<BasicBlock *>(b); }
LLVMBasicBlockRef wrap_bb(BasicBlock *b) { return reinterpret_cast<LLVMBasicBlockRef>(b); }
LLVMValueRef wrap_v(Value *v) { return reinterpret_cast<LLVMValueRef>(v); }

// The analyses of one function, built fresh (the pass changes the IR between uses).
struct Analyses {
  DominatorTree dt;
  LoopInfo li;
  TargetLibraryInfoImpl tlii;
  TargetLibraryInfo tli;
  AssumptionCache ac;
  ScalarEvolution se;
  explicit Analyses(Function &f)
      : dt(f), li(dt), tlii(f.getParent()->getTargetTriple()), tli(tlii, &f), ac(f),
        se(f, tli, ac, dt, li) {}
};
} // namespace

extern "C" {

// Splits `inst`'s block before `inst`: the new block (returned) starts with `inst`.
LLVMBasicBlockRef profcc_split_before(LLVMValueRef inst) {
  auto *i = cast<Instruction>(reinterpret_cast<Value *>(inst));
  return wrap_bb(SplitBlock(i->getParent(), i->getIterator(), static_cast<DominatorTree *>(nullptr)));
}

// Folds a conditional branch or switch on a constant into an unconditional branch (the
// dead successor's phis lose their entry); true if it changed.
int profcc_fold_terminator(LLVMBasicBlockRef b) { return ConstantFoldTerminator(bb(b)); }

// Turns the invoke `inst` into a call followed by a branch to its normal destination; its
// unwind destination loses the edge (phis updated; a landing pad left with no way in is
// for profcc_remove_unreachable).
void profcc_invoke_to_call(LLVMValueRef inst) {
  changeToCall(cast<InvokeInst>(reinterpret_cast<Value *>(inst)));
}

// Deletes the blocks of `f` that no path from its entry reaches; whether there were any.
int profcc_remove_unreachable(LLVMValueRef f) { return removeUnreachableBlocks(*fn(f)); }

// A new block on the edge from -> to (phis in `to` updated); null if there is no such edge.
LLVMBasicBlockRef profcc_split_edge(LLVMBasicBlockRef from, LLVMBasicBlockRef to) {
  return wrap_bb(SplitEdge(bb(from), bb(to)));
}

// Undoes the sinking of the call `c` into its block: the block's instructions from its first
// non-phi through `c` are copied onto every incoming edge (its phis read as the edge's
// values, as CallSiteSplitting does), values they define that are used further on merge
// in new phis, and the originals go. The caller checks that every predecessor reaches the
// block by one edge. Returns the number of edges the call now sits on.
int profcc_unsink(LLVMValueRef c) {
  auto *call = cast<Instruction>(reinterpret_cast<Value *>(c));
  BasicBlock *b = call->getParent();
  SmallVector<BasicBlock *, 8> preds(predecessors(b));
  SmallVector<Instruction *, 16> prefix;
  for (Instruction &i : *b) {
    if (isa<PHINode>(i)) continue;
    prefix.push_back(&i);
    if (&i == call) break;
  }
  DomTreeUpdater dtu(static_cast<DominatorTree *>(nullptr), DomTreeUpdater::UpdateStrategy::Lazy);
  SmallVector<std::pair<BasicBlock *, ValueToValueMapTy *>, 8> copies;
  for (BasicBlock *p : preds) {
    auto *vmap = new ValueToValueMapTy();
    BasicBlock *nb = DuplicateInstructionsInSplitBetween(b, p, call->getNextNode(), *vmap, dtu);
    copies.push_back({nb, vmap});
  }
  SmallPtrSet<Instruction *, 16> in_prefix(prefix.begin(), prefix.end());
  for (Instruction *i : prefix) {
    if (i->use_empty()) continue;
    PHINode *phi = PHINode::Create(i->getType(), copies.size(), i->getName() + ".unsunk");
    phi->insertBefore(b->getFirstNonPHIIt());
    for (auto &[nb, vmap] : copies) phi->addIncoming((*vmap)[i], nb);
    // Uses within the prefix go with it; the rest read the merged value.
    i->replaceUsesWithIf(phi, [&](Use &u) {
      return u.getUser() != phi && !in_prefix.count(cast<Instruction>(u.getUser()));
    });
  }
  for (auto it = prefix.rbegin(); it != prefix.rend(); ++it) {
    (*it)->replaceAllUsesWith(PoisonValue::get((*it)->getType()));
    (*it)->eraseFromParent();
  }
  for (auto &[nb, vmap] : copies) delete vmap;
  // Phis only the prefix read.
  for (auto it = b->begin(); it != b->end();) {
    auto *phi = dyn_cast<PHINode>(&*it++);
    if (phi && phi->use_empty()) phi->eraseFromParent();
  }
  return copies.size();
}

// Versions a region for sampling: the blocks bbs[0..n) (bbs[0] entered only from its single
// predecessor, which ends in an unconditional branch to it; every other block entered only
// from the set) get a plain copy, each block named `<name>.profcc.plain`. The predecessor
// branches on `cond` to the original (true) or the copy (false). Exits from the copy reach
// the same blocks as the original's (their phis get the copy's values), and a value defined
// in the set and used past it reads a phi of both versions (SSAUpdater). Returns the copy of
// bbs[0]; `out` (n entries) gets each block's copy.
LLVMBasicBlockRef profcc_version_region(LLVMBasicBlockRef *bbs, size_t n, LLVMValueRef cond,
                                        LLVMBasicBlockRef *out) {
  SmallVector<BasicBlock *, 32> orig;
  for (size_t k = 0; k < n; k++) orig.push_back(bb(bbs[k]));
  SmallPtrSet<BasicBlock *, 32> in(orig.begin(), orig.end());
  Function *f = orig[0]->getParent();
  BasicBlock *pred = orig[0]->getSinglePredecessor();
  ValueToValueMapTy vmap;
  SmallVector<BasicBlock *, 32> copies;
  for (BasicBlock *b : orig) {
    BasicBlock *c = CloneBasicBlock(b, vmap, "", f);
    c->setName(b->getName() + ".profcc.plain");
    vmap[b] = c;
    copies.push_back(c);
  }
  remapInstructionsInBlocks(copies, vmap);
  SmallPtrSet<BasicBlock *, 32> copied(copies.begin(), copies.end());
  // The copies' exits: the targets' phis take the copy's value on the new edge.
  for (size_t k = 0; k < orig.size(); k++) {
    for (BasicBlock *x : successors(orig[k])) {
      if (in.count(x)) continue;
      for (PHINode &phi : x->phis()) {
        Value *v = phi.getIncomingValueForBlock(orig[k]);
        Value *m = vmap.lookup(v);
        phi.addIncoming(m ? m : v, copies[k]);
      }
    }
  }
  // Values defined in the set and used past it: a phi of both versions where they meet.
  for (size_t k = 0; k < orig.size(); k++) {
    for (Instruction &i : *orig[k]) {
      SmallVector<Use *, 8> outside;
      for (Use &u : i.uses()) {
        auto *user = cast<Instruction>(u.getUser());
        BasicBlock *at = user->getParent();
        if (auto *phi = dyn_cast<PHINode>(user)) at = phi->getIncomingBlock(u);
        if (!in.count(at) && !copied.count(at)) outside.push_back(&u);
      }
      if (outside.empty()) continue;
      SSAUpdater up;
      up.Initialize(i.getType(), i.getName());
      up.AddAvailableValue(orig[k], &i);
      up.AddAvailableValue(copies[k], cast<Value>(vmap[&i]));
      for (Use *u : outside) up.RewriteUse(*u);
    }
  }
  Instruction *t = pred->getTerminator();
  BranchInst::Create(orig[0], copies[0], reinterpret_cast<Value *>(cond), t->getIterator());
  t->eraseFromParent();
  for (size_t k = 0; k < n; k++) out[k] = wrap_bb(copies[k]);
  return wrap_bb(copies[0]);
}

// The inlined begin of a sampled region (docs/regions.md, "Sampling"; the words in
// profcc_abi::roi::SKIP_WORDS): before the take call `take` (whose block then only tests its
// result and branches to the counted copy or to `plain`, the plain copy's entry), a test of
// the thread's skip array `skip` (initial-exec TLS): while word `slot` holds a run armed for
// `tag` (rotate(word ^ tag, 32) - 1 below word 0, the gate), one is taken off the run and the
// plain copy runs without the call. Returns 0, changing nothing, when the block does more
// after the call or the plain copy's phis read a value the call's block defines after it.
int profcc_fast_take(LLVMValueRef take, LLVMValueRef skip, unsigned slot, unsigned tag,
                     LLVMBasicBlockRef plain) {
  auto *call = dyn_cast<CallInst>(reinterpret_cast<Value *>(take));
  auto *g = dyn_cast<GlobalVariable>(reinterpret_cast<Value *>(skip));
  BasicBlock *pl = bb(plain);
  if (!call || !g) return 0;
  BasicBlock *b = call->getParent();
  for (Instruction *i = call->getNextNode(); i && !i->isTerminator(); i = i->getNextNode())
    if (!isa<ICmpInst>(i)) return 0;
  auto *br = dyn_cast<BranchInst>(b->getTerminator());
  if (!br || !br->isConditional() || br->getSuccessor(1) != pl) return 0;
  for (PHINode &phi : pl->phis()) {
    auto *v = dyn_cast<Instruction>(phi.getIncomingValueForBlock(b));
    if (v && v->getParent() == b && !v->comesBefore(call)) return 0;
  }
  BasicBlock *slow = SplitBlock(b, call);
  slow->setName(b->getName() + ".profcc.take");
  LLVMContext &cx = b->getContext();
  BasicBlock *fast = BasicBlock::Create(cx, b->getName() + ".profcc.skip", b->getParent(), slow);
  IRBuilder<> ir(b->getTerminator());
  ir.SetCurrentDebugLocation(call->getDebugLoc());
  Value *base = ir.CreateThreadLocalAddress(g);
  Type *i64 = ir.getInt64Ty();
  Value *gate = ir.CreateLoad(i64, base, "profcc.gate");
  Value *at = ir.CreateConstInBoundsGEP2_32(g->getValueType(), base, 0, slot);
  Value *word = ir.CreateLoad(i64, at, "profcc.skip");
  Value *mine = ir.CreateXor(word, ConstantInt::get(i64, tag));
  Value *run = ir.CreateIntrinsic(Intrinsic::fshl, {i64}, {mine, mine, ConstantInt::get(i64, 32)});
  Value *skip_it = ir.CreateICmpULT(ir.CreateSub(run, ConstantInt::get(i64, 1)), gate);
  b->getTerminator()->eraseFromParent();
  BranchInst::Create(fast, slow, skip_it, b);
  IRBuilder<> fir(fast);
  fir.SetCurrentDebugLocation(call->getDebugLoc());
  fir.CreateStore(fir.CreateSub(word, ConstantInt::get(i64, 1ull << 32)), at);
  fir.CreateBr(pl);
  for (PHINode &phi : pl->phis()) phi.addIncoming(phi.getIncomingValueForBlock(slow), fast);
  return 1;
}

// A copy of `f` in its module, internal, named `name`; with `counters_param` its first
// parameter is a new `ptr` (the region's counter array), the others follow.
LLVMValueRef profcc_clone_function(LLVMValueRef f, const char *name, int counters_param) {
  Function *old = fn(f);
  std::vector<Type *> params;
  if (counters_param)
    params.push_back(PointerType::getUnqual(old->getContext()));
  for (Argument &a : old->args())
    params.push_back(a.getType());
  auto *ty = FunctionType::get(old->getReturnType(), params, old->isVarArg());
  Function *nf = Function::Create(ty, GlobalValue::InternalLinkage, old->getAddressSpace(), name,
                                  old->getParent());
  ValueToValueMapTy vmap;
  auto ni = nf->arg_begin();
  if (counters_param) {
    ni->setName("profcc.counters");
    ++ni;
  }
  for (Argument &a : old->args()) {
    ni->setName(a.getName());
    vmap[&a] = &*ni;
    ++ni;
  }
  SmallVector<ReturnInst *, 8> returns;
  CloneFunctionInto(nf, old, vmap, CloneFunctionChangeType::LocalChangesOnly, returns);
  nf->setLinkage(GlobalValue::InternalLinkage);
  nf->setVisibility(GlobalValue::DefaultVisibility);
  nf->setComdat(nullptr);
  nf->setDLLStorageClass(GlobalValue::DefaultStorageClass);
  return wrap_v(nf);
}

// Loop depth of every block of `f`, in the function's block order (0: in no loop).
void profcc_block_depths(LLVMValueRef f, unsigned *out, size_t n) {
  Function &func = *fn(f);
  DominatorTree dt(func);
  LoopInfo li(dt);
  size_t i = 0;
  for (BasicBlock &b : func) {
    if (i == n)
      break;
    out[i++] = li.getLoopDepth(&b);
  }
}

// Loops whose back edge runs a number of times known at entry: one preheader, one latch
// that is also the only exiting block, and a back-edge-taken count scalar evolution can
// compute and expand. Header and latch of each go to `out` (pairs, at most `cap` of them);
// returns how many there are.
size_t profcc_countable_loops(LLVMValueRef f, LLVMBasicBlockRef *out, size_t cap) {
  Function &func = *fn(f);
  Analyses a(func);
  SCEVExpander exp(a.se, "profcc.trips", false);
  size_t n = 0;
  for (Loop *l : a.li.getLoopsInPreorder()) {
    BasicBlock *latch = l->getLoopLatch();
    if (!l->getLoopPreheader() || !latch || l->getExitingBlock() != latch)
      continue;
    const SCEV *btc = a.se.getBackedgeTakenCount(l);
    if (isa<SCEVCouldNotCompute>(btc) || !exp.isSafeToExpand(btc))
      continue;
    if (n < cap) {
      out[2 * n] = wrap_bb(l->getHeader());
      out[2 * n + 1] = wrap_bb(latch);
    }
    n++;
  }
  return n;
}

// The back-edge-taken count of the loop headed by `header`, as an i64 computed at the end
// of its preheader (before the terminator; the preheader goes to `*pre_out`); null when it is
// not countable (see above).
LLVMValueRef profcc_expand_trips(LLVMValueRef f, LLVMBasicBlockRef header,
                                 LLVMBasicBlockRef *pre_out) {
  Function &func = *fn(f);
  Analyses a(func);
  Loop *l = a.li.getLoopFor(bb(header));
  if (!l || l->getHeader() != bb(header))
    return nullptr;
  BasicBlock *pre = l->getLoopPreheader();
  BasicBlock *latch = l->getLoopLatch();
  if (!pre || !latch || l->getExitingBlock() != latch)
    return nullptr;
  const SCEV *btc = a.se.getBackedgeTakenCount(l);
  SCEVExpander exp(a.se, "profcc.trips", false);
  if (isa<SCEVCouldNotCompute>(btc) || !exp.isSafeToExpand(btc))
    return nullptr;
  Type *i64 = Type::getInt64Ty(func.getContext());
  const SCEV *wide = a.se.getNoopOrZeroExtend(btc, i64);
  Value *v = exp.expandCodeFor(wide, i64, pre->getTerminator()->getIterator());
  exp.clear();
  *pre_out = wrap_bb(pre);
  return wrap_v(v);
}

// Keeps the region counters of loops that make no call in registers: each counter the pass
// bumped in such a loop (a load and a store tagged with metadata `kind`, through one GEP of
// a counters array and a constant index) is loaded once in the loop's preheader, carried
// through the loop in SSA values (phis placed by SSAUpdater) and stored on each exit. A
// loop with a call (other than an intrinsic) keeps its counters in memory: the callee may
// bump the same counter (recursion through a clone). Nested call-free loops are handled
// with their outermost call-free loop. Returns how many counters were promoted.
size_t profcc_promote_counters(LLVMValueRef f, unsigned kind) {
  Function &func = *fn(f);
  DominatorTree dt(func);
  LoopInfo li(dt);
  size_t promoted = 0;
  SmallVector<Loop *, 8> work(li.begin(), li.end());
  while (!work.empty()) {
    Loop *l = work.pop_back_val();
    bool calls = false;
    for (BasicBlock *b : l->blocks())
      for (Instruction &i : *b)
        if (auto *cb = dyn_cast<CallBase>(&i)) {
          Function *callee = cb->getCalledFunction();
          if (!callee || !callee->isIntrinsic() || isa<CallBrInst>(cb))
            calls = true;
        }
    if (calls) {
      for (Loop *sub : l->getSubLoops())
        work.push_back(sub);
      continue;
    }
    simplifyLoop(l, &dt, &li, nullptr, nullptr, nullptr, false);
    BasicBlock *pre = l->getLoopPreheader();
    if (!pre || !l->hasDedicatedExits())
      continue;
    // The bumps, by (array, index): their loads and stores.
    struct Bump {
      LoadInst *ld;
      StoreInst *st;
    };
    MapVector<std::pair<Value *, uint64_t>, SmallVector<Bump, 4>> groups;
    for (BasicBlock *b : l->blocks())
      for (Instruction &i : *b) {
        auto *st = dyn_cast<StoreInst>(&i);
        if (!st || !st->getMetadata(kind))
          continue;
        auto *gep = dyn_cast<GetElementPtrInst>(st->getPointerOperand());
        auto *add = dyn_cast<BinaryOperator>(st->getValueOperand());
        if (!gep || gep->getNumIndices() != 1 || !add)
          continue;
        auto *ld = dyn_cast<LoadInst>(add->getOperand(0));
        auto *idx = dyn_cast<ConstantInt>(gep->getOperand(1));
        if (!ld || !idx || ld->getPointerOperand() != gep || !ld->getMetadata(kind) ||
            ld->getParent() != b)
          continue;
        groups[{gep->getPointerOperand(), idx->getZExtValue()}].push_back({ld, st});
      }
    SmallVector<BasicBlock *, 4> exits;
    l->getUniqueExitBlocks(exits);
    for (auto &[key, bumps] : groups) {
      Value *base = key.first;
      auto *inst = dyn_cast<Instruction>(base);
      if (inst && !dt.dominates(inst, pre->getTerminator()))
        continue;
      SmallPtrSet<BasicBlock *, 8> seen;
      bool twice = false;
      for (auto &bp : bumps)
        twice |= !seen.insert(bp.st->getParent()).second;
      if (twice)
        continue;
      Type *i64 = bumps[0].ld->getType();
      IRBuilder<> b(pre->getTerminator());
      Value *p0 = b.CreateInBoundsGEP(i64, base, b.getInt64(key.second));
      Value *v0 = b.CreateLoad(i64, p0);
      SSAUpdater ssa;
      ssa.Initialize(i64, "profcc.counter");
      ssa.AddAvailableValue(pre, v0);
      for (auto &bp : bumps)
        ssa.AddAvailableValue(bp.st->getParent(), bp.st->getValueOperand());
      for (auto &bp : bumps) {
        Value *in = ssa.GetValueInMiddleOfBlock(bp.ld->getParent());
        bp.ld->replaceAllUsesWith(in);
      }
      for (BasicBlock *e : exits) {
        Value *out = ssa.GetValueInMiddleOfBlock(e);
        IRBuilder<> eb(&*e->getFirstInsertionPt());
        eb.CreateStore(out, eb.CreateInBoundsGEP(i64, base, eb.getInt64(key.second)));
      }
      for (auto &bp : bumps) {
        Value *gep = bp.st->getPointerOperand();
        bp.st->eraseFromParent();
        bp.ld->eraseFromParent();
        if (auto *g = dyn_cast<Instruction>(gep); g && g->use_empty())
          g->eraseFromParent();
      }
      promoted++;
    }
  }
  return promoted;
}
// `roi_sample`'s calls (docs/regions.md, "Sampling inside an execution"). `clone` is a copy of
// `orig` whose first parameter is the counter array. Its body moves to a new internal
// function `<clone>.body`, and `clone` becomes a frameless test of the thread's word `word`
// (initial-exec TLS): 0 jumps to the body with the array it was given (a sibling call);
// anything else jumps to `<clone>.calls`, a cold function that, above 1, takes one off and
// runs `orig` (uncounted), and at 1 asks the runtime (`ask`, with the descriptor `desc` and
// the array): null runs `orig`, the array given runs the body (one of the execution's first
// calls), another array (the sampled class's, the word being 0 now) runs the body with it and
// then calls `done`. Returns 0, changing nothing, for a function whose arguments cannot be
// forwarded (varargs, inalloca, preallocated, swifterror, naked).
int profcc_call_prologue(LLVMValueRef clone, LLVMValueRef orig, LLVMValueRef word,
                         LLVMValueRef ask, LLVMValueRef done, LLVMValueRef desc) {
  Function *f = fn(clone), *o = fn(orig);
  auto *g = dyn_cast<GlobalVariable>(reinterpret_cast<Value *>(word));
  if (!g || f->empty() || f->isVarArg() || f->hasFnAttribute(Attribute::Naked) ||
      f->arg_size() != o->arg_size() + 1)
    return 0;
  bool byval = false;
  for (Argument &a : f->args()) {
    if (a.hasInAllocaAttr() || a.hasPreallocatedAttr() || a.hasSwiftErrorAttr())
      return 0;
    byval |= a.hasByValAttr();
  }
  LLVMContext &cx = f->getContext();
  Module &m = *f->getParent();
  // The body, moved whole (its debug info with it: the two small functions have none).
  Function *body = Function::Create(f->getFunctionType(), GlobalValue::InternalLinkage,
                                    f->getAddressSpace(), f->getName() + ".body", &m);
  body->copyAttributesFrom(f);
  body->setLinkage(GlobalValue::InternalLinkage);
  body->setSubprogram(f->getSubprogram());
  f->setSubprogram(nullptr);
  body->splice(body->end(), f);
  for (unsigned k = 0; k < f->arg_size(); k++) {
    body->getArg(k)->setName(f->getArg(k)->getName());
    f->getArg(k)->replaceAllUsesWith(body->getArg(k));
  }
  Function *slow = Function::Create(f->getFunctionType(), GlobalValue::InternalLinkage,
                                    f->getAddressSpace(), f->getName() + ".calls", &m);
  slow->copyAttributesFrom(f);
  slow->setLinkage(GlobalValue::InternalLinkage);
  slow->setSubprogram(nullptr);
  slow->addFnAttr(Attribute::NoInline);
  slow->addFnAttr(Attribute::Cold);
  slow->removeFnAttr(Attribute::AlwaysInline);
  auto call = [&](IRBuilder<> &ir, Function *callee, ArrayRef<Value *> args, bool tail) {
    CallInst *c = ir.CreateCall(callee->getFunctionType(), callee, args);
    c->setAttributes(callee->getAttributes());
    c->setCallingConv(callee->getCallingConv());
    if (tail && !byval)
      c->setTailCall(true);
    return c;
  };
  auto ret = [&](IRBuilder<> &ir, Value *v) {
    if (f->getReturnType()->isVoidTy())
      ir.CreateRetVoid();
    else
      ir.CreateRet(v);
  };
  auto args_of = [](Function *fun, Value *first) {
    SmallVector<Value *, 8> v;
    if (first)
      v.push_back(first);
    for (unsigned k = 1; k < fun->arg_size(); k++)
      v.push_back(fun->getArg(k));
    return v;
  };
  Type *i64 = Type::getInt64Ty(cx);
  // The clone: the test, then a sibling call either way.
  {
    BasicBlock *entry = BasicBlock::Create(cx, "profcc.calls", f);
    BasicBlock *fast = BasicBlock::Create(cx, "profcc.calls.counted", f);
    BasicBlock *other = BasicBlock::Create(cx, "profcc.calls.other", f);
    IRBuilder<> ir(entry);
    Value *w = ir.CreateLoad(i64, ir.CreateThreadLocalAddress(g), "profcc.calls");
    ir.CreateCondBr(ir.CreateICmpEQ(w, ConstantInt::get(i64, 0)), fast, other);
    ir.SetInsertPoint(fast);
    ret(ir, call(ir, body, args_of(f, f->getArg(0)), true));
    ir.SetInsertPoint(other);
    ret(ir, call(ir, slow, args_of(f, f->getArg(0)), true));
  }
  // The cold way.
  {
    BasicBlock *entry = BasicBlock::Create(cx, "profcc.calls", slow);
    BasicBlock *dec = BasicBlock::Create(cx, "profcc.calls.skip", slow);
    BasicBlock *askb = BasicBlock::Create(cx, "profcc.calls.ask", slow);
    BasicBlock *which = BasicBlock::Create(cx, "profcc.calls.which", slow);
    BasicBlock *exact = BasicBlock::Create(cx, "profcc.calls.exact", slow);
    BasicBlock *smp = BasicBlock::Create(cx, "profcc.calls.sampled", slow);
    BasicBlock *pln = BasicBlock::Create(cx, "profcc.calls.plain", slow);
    Value *counters = slow->getArg(0);
    IRBuilder<> ir(entry);
    Value *at = ir.CreateThreadLocalAddress(g);
    Value *w = ir.CreateLoad(i64, at, "profcc.calls");
    ir.CreateCondBr(ir.CreateICmpUGT(w, ConstantInt::get(i64, 1)), dec, askb);
    ir.SetInsertPoint(dec);
    ir.CreateStore(ir.CreateSub(w, ConstantInt::get(i64, 1)), at);
    ir.CreateBr(pln);
    ir.SetInsertPoint(askb);
    Function *askf = cast<Function>(reinterpret_cast<Value *>(ask));
    Value *a = ir.CreateCall(askf->getFunctionType(), askf,
                             {reinterpret_cast<Value *>(desc), counters}, "profcc.calls.array");
    ir.CreateCondBr(ir.CreateIsNull(a), pln, which);
    ir.SetInsertPoint(which);
    ir.CreateCondBr(ir.CreateICmpEQ(a, counters), exact, smp);
    ir.SetInsertPoint(exact);
    ret(ir, call(ir, body, args_of(slow, counters), true));
    ir.SetInsertPoint(smp);
    Function *donef = cast<Function>(reinterpret_cast<Value *>(done));
    // A sampled call that may throw is invoked: an exception out of it calls `done` on its
    // way up, so the execution's later calls are sampled again. The personality is the
    // original's, else the module's; a module without one (no landing pad anywhere) keeps
    // the plain call (docs/regions.md, limits).
    Constant *pers = nullptr;
    if (!f->doesNotThrow()) {
      if (o->hasPersonalityFn())
        pers = o->getPersonalityFn();
      for (auto it = m.begin(); !pers && it != m.end(); ++it)
        if (it->hasPersonalityFn())
          pers = it->getPersonalityFn();
    }
    if (!pers) {
      CallInst *r = call(ir, body, args_of(slow, a), false);
      ir.CreateCall(donef->getFunctionType(), donef, {});
      ret(ir, r);
    } else {
      slow->setPersonalityFn(pers);
      BasicBlock *back = BasicBlock::Create(cx, "profcc.calls.sampled.back", slow);
      BasicBlock *unwind = BasicBlock::Create(cx, "profcc.calls.sampled.unwind", slow);
      InvokeInst *r = ir.CreateInvoke(body->getFunctionType(), body, back, unwind,
                                      args_of(slow, a));
      r->setAttributes(body->getAttributes());
      r->setCallingConv(body->getCallingConv());
      ir.SetInsertPoint(back);
      ir.CreateCall(donef->getFunctionType(), donef, {});
      ret(ir, r);
      ir.SetInsertPoint(unwind);
      LandingPadInst *pad = ir.CreateLandingPad(
          StructType::get(cx, {PointerType::getUnqual(cx), Type::getInt32Ty(cx)}), 0);
      pad->setCleanup(true);
      ir.CreateCall(donef->getFunctionType(), donef, {});
      ir.CreateResume(pad);
    }
    ir.SetInsertPoint(pln);
    ret(ir, call(ir, o, args_of(slow, nullptr), true));
  }
  return 1;
}
}
