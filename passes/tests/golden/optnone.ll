; -O0 code is optnone/noinline: the hook body must still be inlined (no call of it remains).
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"
define void @f(ptr %p) #0 {
  store i8 1, ptr %p
  ret void
}
attributes #0 = { noinline optnone }
