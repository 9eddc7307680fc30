; A single-block loop (%23, counting only) whose exit block (%28) is shared with two other
; paths and begins with an instruction that has a debug record attached: the pass takes the
; loop's count there through a phi, which goes before the record (a phi takes none).
; ModuleID = 'dbgx.c'
source_filename = "dbgx.c"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

; Function Attrs: nofree norecurse nosync nounwind memory(argmem: write) uwtable
define dso_local void @fill(ptr noundef writeonly captures(none) %0, i64 noundef %1, ptr noundef writeonly captures(none) %2, i64 noundef %3) local_unnamed_addr #0 !dbg !14 {
    #dbg_value(ptr %0, !20, !DIExpression(), !28)
    #dbg_value(i64 %1, !21, !DIExpression(), !28)
    #dbg_value(ptr %2, !22, !DIExpression(), !28)
    #dbg_value(i64 %3, !23, !DIExpression(), !28)
  %5 = icmp sgt i64 %1, 0, !dbg !29
  br i1 %5, label %6, label %28, !dbg !30

6:                                                ; preds = %4
  %7 = icmp ult i64 %1, 4, !dbg !31
  br i1 %7, label %21, label %8, !dbg !31

8:                                                ; preds = %6
  %9 = and i64 %1, 9223372036854775804
  br label %10, !dbg !31

10:                                               ; preds = %10, %8
  %11 = phi i64 [ 0, %8 ], [ %16, %10 ], !dbg !32
  %12 = phi <2 x i64> [ <i64 0, i64 1>, %8 ], [ %17, %10 ], !dbg !32
  %13 = add <2 x i64> %12, splat (i64 2), !dbg !32
  %14 = getelementptr inbounds nuw i64, ptr %0, i64 %11, !dbg !33
  %15 = getelementptr inbounds nuw i8, ptr %14, i64 16, !dbg !35
  store <2 x i64> %12, ptr %14, align 8, !dbg !35, !tbaa !36
  store <2 x i64> %13, ptr %15, align 8, !dbg !35, !tbaa !36
  %16 = add nuw i64 %11, 4, !dbg !32
  %17 = add <2 x i64> %12, splat (i64 4), !dbg !32
  %18 = icmp eq i64 %16, %9, !dbg !38
  br i1 %18, label %19, label %10, !dbg !38, !llvm.loop !39

19:                                               ; preds = %10
  %20 = icmp eq i64 %1, %9, !dbg !38
  br i1 %20, label %28, label %21, !dbg !38

21:                                               ; preds = %6, %19
  %22 = phi i64 [ 0, %6 ], [ %9, %19 ]
  br label %23, !dbg !38

23:                                               ; preds = %21, %23
  %24 = phi i64 [ %26, %23 ], [ %22, %21 ], !dbg !32
    #dbg_value(i64 %24, !24, !DIExpression(), !32)
  %25 = getelementptr inbounds nuw i64, ptr %0, i64 %24, !dbg !33
  store i64 %24, ptr %25, align 8, !dbg !35, !tbaa !36
  %26 = add nuw nsw i64 %24, 1, !dbg !43
    #dbg_value(i64 %26, !24, !DIExpression(), !32)
  %27 = icmp eq i64 %26, %1, !dbg !44
  br i1 %27, label %28, label %23, !dbg !38, !llvm.loop !45

28:                                               ; preds = %23, %19, %4
    #dbg_value(i64 %1, !21, !DIExpression(), !28)
  %29 = mul nsw i64 %3, %1, !dbg !46
    #dbg_value(i64 %29, !27, !DIExpression(), !28)
  store i64 %29, ptr %2, align 8, !dbg !47, !tbaa !36
  ret void, !dbg !48
}

attributes #0 = { nofree norecurse nosync nounwind memory(argmem: write) uwtable "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!2, !3, !4, !5, !6, !7, !8}
!llvm.ident = !{!9}
!llvm.errno.tbaa = !{!10}

!0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, producer: "Debian clang version 22.1.8 (1~deb12u1)", isOptimized: true, runtimeVersion: 0, emissionKind: FullDebug, splitDebugInlining: false, nameTableKind: None)
!1 = !DIFile(filename: "dbgx.c", directory: "/src", checksumkind: CSK_MD5, checksum: "a0f59d7f8f40c68b907d52272b117107")
!2 = !{i32 7, !"Dwarf Version", i32 5}
!3 = !{i32 2, !"Debug Info Version", i32 3}
!4 = !{i32 1, !"wchar_size", i32 4}
!5 = !{i32 8, !"PIC Level", i32 2}
!6 = !{i32 7, !"PIE Level", i32 2}
!7 = !{i32 7, !"uwtable", i32 2}
!8 = !{i32 7, !"debug-info-assignment-tracking", i1 true}
!9 = !{!"Debian clang version 22.1.8 (1~deb12u1)"}
!10 = !{!11, !11, i64 0}
!11 = !{!"int", !12, i64 0}
!12 = !{!"omnipotent char", !13, i64 0}
!13 = !{!"Simple C/C++ TBAA"}
!14 = distinct !DISubprogram(name: "fill", scope: !1, file: !1, line: 1, type: !15, scopeLine: 1, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0, retainedNodes: !19, keyInstructions: true)
!15 = !DISubroutineType(types: !16)
!16 = !{null, !17, !18, !17, !18}
!17 = !DIDerivedType(tag: DW_TAG_pointer_type, baseType: !18, size: 64)
!18 = !DIBasicType(name: "long", size: 64, encoding: DW_ATE_signed)
!19 = !{!20, !21, !22, !23, !24, !27}
!20 = !DILocalVariable(name: "a", arg: 1, scope: !14, file: !1, line: 1, type: !17)
!21 = !DILocalVariable(name: "n", arg: 2, scope: !14, file: !1, line: 1, type: !18)
!22 = !DILocalVariable(name: "out", arg: 3, scope: !14, file: !1, line: 1, type: !17)
!23 = !DILocalVariable(name: "k", arg: 4, scope: !14, file: !1, line: 1, type: !18)
!24 = !DILocalVariable(name: "i", scope: !25, file: !1, line: 3, type: !18)
!25 = distinct !DILexicalBlock(scope: !26, file: !1, line: 2, column: 14)
!26 = distinct !DILexicalBlock(scope: !14, file: !1, line: 2, column: 7)
!27 = !DILocalVariable(name: "m", scope: !14, file: !1, line: 6, type: !18)
!28 = !DILocation(line: 0, scope: !14)
!29 = !DILocation(line: 2, column: 9, scope: !26, atomGroup: 1, atomRank: 2)
!30 = !DILocation(line: 2, column: 9, scope: !26, atomGroup: 1, atomRank: 1)
!31 = !DILocation(line: 4, column: 5, scope: !25)
!32 = !DILocation(line: 0, scope: !25)
!33 = !DILocation(line: 4, column: 10, scope: !34)
!34 = distinct !DILexicalBlock(scope: !25, file: !1, line: 4, column: 8)
!35 = !DILocation(line: 4, column: 15, scope: !34, atomGroup: 3, atomRank: 1)
!36 = !{!37, !37, i64 0}
!37 = !{!"long", !12, i64 0}
!38 = !DILocation(line: 4, column: 25, scope: !34, atomGroup: 6, atomRank: 1)
!39 = distinct !{!39, !40, !41, !42}
!40 = !{!"llvm.loop.mustprogress"}
!41 = !{!"llvm.loop.isvectorized", i32 1}
!42 = !{!"llvm.loop.unroll.runtime.disable"}
!43 = !DILocation(line: 4, column: 21, scope: !34, atomGroup: 4, atomRank: 2)
!44 = !DILocation(line: 4, column: 36, scope: !25, atomGroup: 5, atomRank: 1)
!45 = distinct !{!45, !40, !42, !41}
!46 = !DILocation(line: 6, column: 14, scope: !14, atomGroup: 7, atomRank: 2)
!47 = !DILocation(line: 7, column: 10, scope: !14, atomGroup: 8, atomRank: 1)
!48 = !DILocation(line: 8, column: 1, scope: !14, atomGroup: 9, atomRank: 1)
