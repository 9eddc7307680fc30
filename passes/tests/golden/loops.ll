; Loops: @sum's body is a single-block loop (a load of a[i], n times): its check is inlined
; (one shadow load and compare per iteration, the checker on the cold side) and, counting
; only, its count is kept in a register and added to the counter once at the top of its
; dedicated exit block (as LoopSimplify leaves loops). @sum_shared is the same loop whose
; exit block has another predecessor: its counter stays in memory, and the exit's phis are
; left alone (one of them is the address of an access there, %q). @sum_exit has an early
; exit (two blocks in the loop): its counter stays in memory.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"
define i64 @sum(ptr %a, i64 %n) {
entry:
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %done, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %s = phi i64 [ 0, %entry ], [ %s.next, %loop ]
  %p = getelementptr inbounds i64, ptr %a, i64 %i
  %v = load i64, ptr %p
  %s.next = add i64 %s, %v
  %i.next = add i64 %i, 1
  %more = icmp ult i64 %i.next, %n
  br i1 %more, label %loop, label %exit
exit:
  %s.lcssa = phi i64 [ %s.next, %loop ]
  br label %done
done:
  %r = phi i64 [ 0, %entry ], [ %s.lcssa, %exit ]
  ret i64 %r
}
define i64 @sum_shared(ptr %a, i64 %n) {
entry:
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %done, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %s = phi i64 [ 0, %entry ], [ %s.next, %loop ]
  %p = getelementptr inbounds i64, ptr %a, i64 %i
  %v = load i64, ptr %p
  %s.next = add i64 %s, %v
  %i.next = add i64 %i, 1
  %more = icmp ult i64 %i.next, %n
  br i1 %more, label %loop, label %done
done:
  %r = phi i64 [ 0, %entry ], [ %s.next, %loop ]
  %q = phi ptr [ %a, %entry ], [ %p, %loop ]
  %w = load i64, ptr %q
  %rw = add i64 %r, %w
  ret i64 %rw
}
define i64 @sum_exit(ptr %a, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %p = getelementptr inbounds i64, ptr %a, i64 %i
  %v = load i64, ptr %p
  %zero = icmp eq i64 %v, 0
  br i1 %zero, label %done, label %latch
latch:
  %i.next = add i64 %i, 1
  %more = icmp ult i64 %i.next, %n
  br i1 %more, label %loop, label %done
done:
  ret i64 %i
}
