; A load and a store through pointer arguments: both instrumented, sizes 4 and 8. The
; fence intrinsic between them (not `nosync`) ends the epoch, so each has a call of its own
; (checks of one epoch share a merged checker's call: merged.ll; a `nosync` intrinsic such as
; llvm.fmuladd keeps the epoch: rmw.ll).
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"
define void @f(ptr %p, ptr %q) {
  %v = load i32, ptr %p
  call void @llvm.x86.sse2.mfence()
  store i64 1, ptr %q
  ret void
}
declare void @llvm.x86.sse2.mfence()
