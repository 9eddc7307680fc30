; Shadow checks once per address per block: the read of %p before its write keeps only the
; write's check; the second write of %p and the re-read of %q are counted but not checked;
; after the call, %p is checked again.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"
declare void @g()
define void @f(ptr %p, ptr %q) {
  %a = load i64, ptr %p
  %b = add i64 %a, 1
  store i64 %b, ptr %p
  store i64 %a, ptr %p
  %c = load i32, ptr %q
  %d = load i32, ptr %q
  call void @g()
  store i64 %b, ptr %p
  ret void
}
