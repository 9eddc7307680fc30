; Sites carry file:line:col from the debug location; an inlined access names the outermost call;
; an access at line 0 (hoisted code) takes the nearest located instruction of its block.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"
@g = global i32 0
define void @f() !dbg !5 {
  store i32 1, ptr @g, !dbg !8
  store i32 2, ptr @g, !dbg !9
  store i32 3, ptr @g, !dbg !13
  ret void
}
!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3, !4}
!0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, emissionKind: LineTablesOnly)
!1 = !DIFile(filename: "src/x.c", directory: "/home/u/proj")
!3 = !{i32 2, !"Debug Info Version", i32 3}
!4 = !{i32 7, !"Dwarf Version", i32 5}
!5 = distinct !DISubprogram(name: "f", scope: !1, file: !1, line: 3, type: !6, unit: !0, spFlags: DISPFlagDefinition)
!6 = !DISubroutineType(types: !7)
!7 = !{}
!8 = !DILocation(line: 4, column: 5, scope: !5)
!10 = distinct !DISubprogram(name: "h", scope: !11, file: !11, line: 1, type: !6, unit: !0, spFlags: DISPFlagDefinition)
!11 = !DIFile(filename: "/usr/include/h.h", directory: "/")
!9 = !DILocation(line: 2, column: 7, scope: !10, inlinedAt: !12)
!12 = !DILocation(line: 6, column: 3, scope: !5)
!13 = !DILocation(line: 0, scope: !5)
