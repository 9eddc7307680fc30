; A vector load is one 32-byte access; a masked load is skipped with a counted reason.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"
declare <8 x float> @llvm.masked.load.v8f32.p0(ptr, <8 x i1>, <8 x float>)
define <8 x float> @f(ptr %p, <8 x i1> %m) {
  %v = load <8 x float>, ptr %p
  %w = call <8 x float> @llvm.masked.load.v8f32.p0(ptr align 4 %p, <8 x i1> %m, <8 x float> %v)
  ret <8 x float> %w
}
