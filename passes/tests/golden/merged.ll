; Checks of one epoch share one call of a merged checker (abi::merged_checker_arg).
; @f: two reads and a write with consecutive sites, the first leading its group, the write
; its group's sampling write: one call of the three-member checker that counts the group.
; @g: a read alone in its group (a call that may not return follows), then two reads of
; the next group: the single read's checker, then the two-member counting checker.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"
declare void @ext()
define void @f(ptr %p, ptr %q, ptr %r) {
  %a = load i64, ptr %p
  %b = load i32, ptr %q
  store i8 1, ptr %r
  ret void
}
define void @g(ptr %p, ptr %q) {
  %a = load i64, ptr %p
  call void @ext()
  %b = load i64, ptr %q
  %c = load i16, ptr %p
  ret void
}
