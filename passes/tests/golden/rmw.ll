; Counter sharing and covered checks.
; @rmw: load/add/store of one address (counters[id]++): one counter, one check (the store's,
; marked read-modify-write), then a second store to the same address (covered) and a load
; of another address (checked).
; @calls: a call that may not return splits the block's counter; an atomic ends the epoch,
; so the store after it is checked again.
; @unrolled: `*sum += x * x` twice (an unrolled loop's body): the llvm.fmuladd calls are
; `nosync` intrinsics and keep the epoch, so the first store stands for the load and the
; second store.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"
declare void @g()
define i64 @rmw(ptr %p, ptr %q) {
  %v = load volatile i64, ptr %p
  %w = add i64 %v, 1
  store volatile i64 %w, ptr %p
  store i64 0, ptr %p
  %x = load i64, ptr %q
  ret i64 %x
}
define void @calls(ptr %p, ptr %a) {
  store i64 1, ptr %p
  call void @g()
  store i64 2, ptr %p
  %o = atomicrmw add ptr %a, i64 1 seq_cst
  store i64 3, ptr %p
  ret void
}
declare double @llvm.fmuladd.f64(double, double, double)
define void @unrolled(ptr %sum, double %x, double %y) {
  %s0 = load double, ptr %sum
  %s1 = call double @llvm.fmuladd.f64(double %x, double %x, double %s0)
  store double %s1, ptr %sum
  %s2 = call double @llvm.fmuladd.f64(double %y, double %y, double %s1)
  store double %s2, ptr %sum
  ret void
}
