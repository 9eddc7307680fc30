; NUMA page counts of a loop-invariant address: @acc's single-block loop reads a[i] and
; updates *sum (a partial sum the optimiser cannot keep in a register: a and sum may alias).
; a[i]'s page count stays in the loop (inlined); *sum's, one count of 2 per iteration (the
; store is covered by the load), moves to the loop's exit as one out-of-line count of the
; iterations times 2. The exit is reached from the entry too (n <= 0): the count is 0 there,
; which the out-of-line count skips. @acc_late's address is computed in a block that does not
; dominate the shared exit: its count stays in the loop.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"
define void @acc(ptr %sum, ptr %a, i64 %n) {
entry:
  %empty = icmp sle i64 %n, 0
  br i1 %empty, label %done, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %p = getelementptr inbounds double, ptr %a, i64 %i
  %v = load double, ptr %p
  %s = load double, ptr %sum
  %s.next = fadd double %s, %v
  store double %s.next, ptr %sum
  %i.next = add i64 %i, 1
  %more = icmp slt i64 %i.next, %n
  br i1 %more, label %loop, label %done
done:
  ret void
}
define void @acc_late(ptr %base, i64 %k, ptr %a, i64 %n) {
entry:
  %empty = icmp sle i64 %n, 0
  br i1 %empty, label %done, label %pre
pre:
  %sum = getelementptr inbounds double, ptr %base, i64 %k
  br label %loop
loop:
  %i = phi i64 [ 0, %pre ], [ %i.next, %loop ]
  %p = getelementptr inbounds double, ptr %a, i64 %i
  %v = load double, ptr %p
  %s = load double, ptr %sum
  %s.next = fadd double %s, %v
  store double %s.next, ptr %sum
  %i.next = add i64 %i, 1
  %more = icmp slt i64 %i.next, %n
  br i1 %more, label %loop, label %done
done:
  ret void
}
