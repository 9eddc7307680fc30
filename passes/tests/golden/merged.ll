; Checks of one epoch share one call of a merged checker (abi::merged_checker_arg).
; @f: two reads and a write with consecutive sites, the first leading its group, the write
; its group's sampling write: one call of the three-member checker that counts the group.
; @g: a read alone in its group (a call that may not return follows), then two reads of
; the next group: the single read's checker, then the two-member counting checker.
; @h: the call goes before the first member's access, so the second member's address (a GEP
; computed after it) moves before it; the third member's address is loaded by the first
; access: it is checked alone.
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
define i32 @h(ptr %s) {
  %a = load ptr, ptr %s
  %f = getelementptr i8, ptr %s, i64 8
  %b = load i32, ptr %f
  %g = getelementptr i8, ptr %a, i64 4
  %c = load i32, ptr %g
  ret i32 %c
}
