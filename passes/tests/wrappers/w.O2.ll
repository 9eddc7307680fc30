; ModuleID = 'w.c'
source_filename = "w.c"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

@.str = private unnamed_addr constant [2 x i8] c"x\00", align 1
@g = dso_local local_unnamed_addr global ptr null, align 8
@.str.1 = private unnamed_addr constant [2 x i8] c"t\00", align 1
@.str.2 = private unnamed_addr constant [4 x i8] c"w.c\00", align 1
@__PRETTY_FUNCTION__.CALLOC = private unnamed_addr constant [29 x i8] c"void *CALLOC(size_t, size_t)\00", align 1

; Function Attrs: nofree nounwind uwtable
define dso_local noalias nonnull ptr @xmalloc(i64 noundef %0) local_unnamed_addr #0 !dbg !13 {
  %2 = tail call noalias ptr @malloc(i64 noundef %0) #8, !dbg !16
  %3 = icmp eq ptr %2, null, !dbg !17
  br i1 %3, label %4, label %5, !dbg !18

4:                                                ; preds = %1
  tail call void @perror(ptr noundef nonnull @.str) #9, !dbg !19
  tail call void @exit(i32 noundef 1) #10, !dbg !20
  unreachable, !dbg !20

5:                                                ; preds = %1
  ret ptr %2, !dbg !21
}

; Function Attrs: mustprogress nofree nounwind willreturn allockind("alloc,uninitialized") allocsize(0) memory(inaccessiblemem: readwrite)
declare !dbg !22 noalias noundef ptr @malloc(i64 noundef) local_unnamed_addr #1

; Function Attrs: nofree nounwind
declare !dbg !24 void @perror(ptr noundef readonly captures(none)) local_unnamed_addr #2

; Function Attrs: nofree noreturn nounwind
declare void @exit(i32 noundef) local_unnamed_addr #3

; Function Attrs: nofree nounwind uwtable
define dso_local noalias nonnull ptr @xxmalloc(i64 noundef %0) local_unnamed_addr #0 !dbg !26 {
  %2 = tail call noalias ptr @malloc(i64 noundef %0) #8, !dbg !27
  %3 = icmp eq ptr %2, null, !dbg !29
  br i1 %3, label %4, label %5, !dbg !30

4:                                                ; preds = %1
  tail call void @perror(ptr noundef nonnull @.str) #9, !dbg !31
  tail call void @exit(i32 noundef 1) #10, !dbg !32
  unreachable, !dbg !32

5:                                                ; preds = %1
  ret ptr %2, !dbg !33
}

; Function Attrs: mustprogress nofree nounwind willreturn memory(write, argmem: none, inaccessiblemem: readwrite, target_mem0: none, target_mem1: none) uwtable
define dso_local noalias noundef ptr @notwrap(i64 noundef %0) local_unnamed_addr #4 !dbg !34 {
  %2 = tail call noalias ptr @malloc(i64 noundef %0) #8, !dbg !35
  store i64 1, ptr %2, align 8, !dbg !36, !tbaa !37
  ret ptr %2, !dbg !39
}

; Function Attrs: nounwind uwtable
define dso_local noundef i32 @main() local_unnamed_addr #5 !dbg !40 {
  %1 = tail call noalias dereferenceable_or_null(32) ptr @calloc(i64 noundef 4, i64 noundef 8) #11, !dbg !41
  %2 = icmp eq ptr %1, null, !dbg !44
  br i1 %2, label %3, label %4, !dbg !45

3:                                                ; preds = %0
  tail call void @__assert_fail(ptr noundef nonnull @.str.1, ptr noundef nonnull @.str.2, i32 noundef 4, ptr noundef nonnull @__PRETTY_FUNCTION__.CALLOC) #12, !dbg !46
  unreachable, !dbg !46

4:                                                ; preds = %0
  store ptr %1, ptr @g, align 8, !dbg !47, !tbaa !48
  %5 = getelementptr inbounds nuw i8, ptr %1, i64 8, !dbg !51
  store i64 2, ptr %5, align 8, !dbg !52, !tbaa !37
  %6 = tail call noalias noundef dereferenceable_or_null(8) ptr @malloc(i64 noundef 8) #8, !dbg !53
  store i64 1, ptr %6, align 8, !dbg !55, !tbaa !37
  %7 = ptrtoint ptr %6 to i64, !dbg !56
  %8 = trunc i64 %7 to i32, !dbg !57
  ret i32 %8, !dbg !58
}

; Function Attrs: mustprogress nofree nounwind willreturn allockind("alloc,zeroed") allocsize(0,1) memory(inaccessiblemem: readwrite)
declare !dbg !59 noalias noundef ptr @calloc(i64 noundef, i64 noundef) local_unnamed_addr #6

; Function Attrs: noreturn nounwind
declare void @__assert_fail(ptr noundef, ptr noundef, i32 noundef, ptr noundef) local_unnamed_addr #7

attributes #0 = { nofree nounwind uwtable "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #1 = { mustprogress nofree nounwind willreturn allockind("alloc,uninitialized") allocsize(0) memory(inaccessiblemem: readwrite) "alloc-family"="malloc" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #2 = { nofree nounwind "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #3 = { nofree noreturn nounwind "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #4 = { mustprogress nofree nounwind willreturn memory(write, argmem: none, inaccessiblemem: readwrite, target_mem0: none, target_mem1: none) uwtable "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #5 = { nounwind uwtable "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #6 = { mustprogress nofree nounwind willreturn allockind("alloc,zeroed") allocsize(0,1) memory(inaccessiblemem: readwrite) "alloc-family"="malloc" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #7 = { noreturn nounwind "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #8 = { nounwind allocsize(0) }
attributes #9 = { cold }
attributes #10 = { cold noreturn nounwind }
attributes #11 = { nounwind allocsize(0,1) }
attributes #12 = { noreturn nounwind }

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!2, !3, !4, !5, !6, !7}
!llvm.errno.tbaa = !{!9}

!0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, producer: "Debian clang version 22.1.8 (1~deb12u1)", isOptimized: true, runtimeVersion: 0, emissionKind: LineTablesOnly, splitDebugInlining: false, nameTableKind: None)
!1 = !DIFile(filename: "w.c", directory: "/src", checksumkind: CSK_MD5, checksum: "7ec0de1e1ec4e51ab70ae979f07b69be")
!2 = !{i32 7, !"Dwarf Version", i32 5}
!3 = !{i32 2, !"Debug Info Version", i32 3}
!4 = !{i32 1, !"wchar_size", i32 4}
!5 = !{i32 8, !"PIC Level", i32 2}
!6 = !{i32 7, !"PIE Level", i32 2}
!7 = !{i32 7, !"uwtable", i32 2}
!9 = !{!10, !10, i64 0}
!10 = !{!"int", !11, i64 0}
!11 = !{!"omnipotent char", !12, i64 0}
!12 = !{!"Simple C/C++ TBAA"}
!13 = distinct !DISubprogram(name: "xmalloc", scope: !1, file: !1, line: 5, type: !14, scopeLine: 5, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0, keyInstructions: true)
!14 = !DISubroutineType(types: !15)
!15 = !{}
!16 = !DILocation(line: 5, column: 37, scope: !13, atomGroup: 1, atomRank: 2)
!17 = !DILocation(line: 5, column: 53, scope: !13, atomGroup: 2, atomRank: 2)
!18 = !DILocation(line: 5, column: 52, scope: !13, atomGroup: 2, atomRank: 1)
!19 = !DILocation(line: 5, column: 58, scope: !13)
!20 = !DILocation(line: 5, column: 71, scope: !13)
!21 = !DILocation(line: 5, column: 82, scope: !13, atomGroup: 4, atomRank: 1)
!22 = !DISubprogram(name: "malloc", scope: !23, file: !23, line: 553, type: !14, flags: DIFlagPrototyped, spFlags: DISPFlagOptimized)
!23 = !DIFile(filename: "/usr/include/stdlib.h", directory: "", checksumkind: CSK_MD5, checksum: "4b47dc81a92f1fe77a152c0aac236718")
!24 = !DISubprogram(name: "perror", scope: !25, file: !25, line: 804, type: !14, flags: DIFlagPrototyped, spFlags: DISPFlagOptimized)
!25 = !DIFile(filename: "/usr/include/stdio.h", directory: "", checksumkind: CSK_MD5, checksum: "b5a90985555f47bfb88eff5a8f0f5b72")
!26 = distinct !DISubprogram(name: "xxmalloc", scope: !1, file: !1, line: 6, type: !14, scopeLine: 6, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0, keyInstructions: true)
!27 = !DILocation(line: 5, column: 37, scope: !13, inlinedAt: !28, atomGroup: 1, atomRank: 2)
!28 = distinct !DILocation(line: 6, column: 35, scope: !26)
!29 = !DILocation(line: 5, column: 53, scope: !13, inlinedAt: !28, atomGroup: 2, atomRank: 2)
!30 = !DILocation(line: 5, column: 52, scope: !13, inlinedAt: !28, atomGroup: 2, atomRank: 1)
!31 = !DILocation(line: 5, column: 58, scope: !13, inlinedAt: !28)
!32 = !DILocation(line: 5, column: 71, scope: !13, inlinedAt: !28)
!33 = !DILocation(line: 6, column: 28, scope: !26, atomGroup: 1, atomRank: 1)
!34 = distinct !DISubprogram(name: "notwrap", scope: !1, file: !1, line: 7, type: !14, scopeLine: 7, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0, keyInstructions: true)
!35 = !DILocation(line: 7, column: 37, scope: !34, atomGroup: 1, atomRank: 2)
!36 = !DILocation(line: 7, column: 53, scope: !34, atomGroup: 2, atomRank: 1)
!37 = !{!38, !38, i64 0}
!38 = !{!"long", !11, i64 0}
!39 = !DILocation(line: 7, column: 58, scope: !34, atomGroup: 4, atomRank: 1)
!40 = distinct !DISubprogram(name: "main", scope: !1, file: !1, line: 9, type: !14, scopeLine: 9, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0, keyInstructions: true)
!41 = !DILocation(line: 4, column: 60, scope: !42, inlinedAt: !43, atomGroup: 1, atomRank: 2)
!42 = distinct !DISubprogram(name: "CALLOC", scope: !1, file: !1, line: 4, type: !14, scopeLine: 4, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagLocalToUnit | DISPFlagDefinition | DISPFlagOptimized, unit: !0, keyInstructions: true)
!43 = distinct !DILocation(line: 9, column: 22, scope: !40)
!44 = !DILocation(line: 4, column: 81, scope: !42, inlinedAt: !43, atomGroup: 2, atomRank: 2)
!45 = !DILocation(line: 4, column: 81, scope: !42, inlinedAt: !43, atomGroup: 2, atomRank: 1)
!46 = !DILocation(line: 4, column: 74, scope: !42, inlinedAt: !43)
!47 = !DILocation(line: 9, column: 20, scope: !40, atomGroup: 1, atomRank: 1)
!48 = !{!49, !49, i64 0}
!49 = !{!"p1 long", !50, i64 0}
!50 = !{!"any pointer", !11, i64 0}
!51 = !DILocation(line: 9, column: 36, scope: !40)
!52 = !DILocation(line: 9, column: 41, scope: !40, atomGroup: 2, atomRank: 1)
!53 = !DILocation(line: 7, column: 37, scope: !34, inlinedAt: !54, atomGroup: 1, atomRank: 2)
!54 = distinct !DILocation(line: 9, column: 95, scope: !40)
!55 = !DILocation(line: 7, column: 53, scope: !34, inlinedAt: !54, atomGroup: 2, atomRank: 1)
!56 = !DILocation(line: 9, column: 89, scope: !40, atomGroup: 6, atomRank: 3)
!57 = !DILocation(line: 9, column: 84, scope: !40, atomGroup: 6, atomRank: 2)
!58 = !DILocation(line: 9, column: 77, scope: !40, atomGroup: 6, atomRank: 1)
!59 = !DISubprogram(name: "calloc", scope: !23, file: !23, line: 556, type: !14, flags: DIFlagPrototyped, spFlags: DISPFlagOptimized)
