; atomicrmw and cmpxchg are one "atomic" access each, sized by the value type.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"
define i32 @f(ptr %p) {
  %old = atomicrmw add ptr %p, i32 1 seq_cst
  %pair = cmpxchg ptr %p, i32 0, i32 1 seq_cst seq_cst
  ret i32 %old
}
