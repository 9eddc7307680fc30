; Not instrumented: a stack slot whose address never escapes, a constant global, a
; thread-local. Instrumented: a stack slot whose address escapes into a call, a plain global.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"
@c = constant i32 7
@g = global i32 0
@t = thread_local global i32 0
declare void @sink(ptr)
define i32 @f() {
  %a = alloca i32
  %b = alloca i32
  store i32 1, ptr %a
  store i32 2, ptr %b
  call void @sink(ptr %b)
  %x = load i32, ptr @c
  %tp = call ptr @llvm.threadlocal.address.p0(ptr @t)
  %y = load i32, ptr %tp
  %z = load i32, ptr @g
  %r = load i32, ptr %a
  ret i32 %r
}
