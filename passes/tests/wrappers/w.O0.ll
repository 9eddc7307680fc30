; ModuleID = 'w.c'
source_filename = "w.c"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

@.str = private unnamed_addr constant [2 x i8] c"x\00", align 1
@g = dso_local global ptr null, align 8
@.str.1 = private unnamed_addr constant [2 x i8] c"t\00", align 1
@.str.2 = private unnamed_addr constant [4 x i8] c"w.c\00", align 1
@__PRETTY_FUNCTION__.CALLOC = private unnamed_addr constant [29 x i8] c"void *CALLOC(size_t, size_t)\00", align 1

; Function Attrs: noinline nounwind optnone uwtable
define dso_local ptr @xmalloc(i64 noundef %0) #0 !dbg !10 {
  %2 = alloca i64, align 8
  %3 = alloca ptr, align 8
  store i64 %0, ptr %2, align 8
  %4 = load i64, ptr %2, align 8, !dbg !13
  %5 = call noalias ptr @malloc(i64 noundef %4) #5, !dbg !14
  store ptr %5, ptr %3, align 8, !dbg !15
  %6 = load ptr, ptr %3, align 8, !dbg !16
  %7 = icmp ne ptr %6, null, !dbg !16
  br i1 %7, label %9, label %8, !dbg !17

8:                                                ; preds = %1
  call void @perror(ptr noundef @.str), !dbg !18
  call void @exit(i32 noundef 1) #6, !dbg !19
  unreachable, !dbg !19

9:                                                ; preds = %1
  %10 = load ptr, ptr %3, align 8, !dbg !20
  ret ptr %10, !dbg !21
}

; Function Attrs: nounwind allocsize(0)
declare noalias ptr @malloc(i64 noundef) #1

declare void @perror(ptr noundef) #2

; Function Attrs: noreturn nounwind
declare void @exit(i32 noundef) #3

; Function Attrs: noinline nounwind optnone uwtable
define dso_local ptr @xxmalloc(i64 noundef %0) #0 !dbg !22 {
  %2 = alloca i64, align 8
  store i64 %0, ptr %2, align 8
  %3 = load i64, ptr %2, align 8, !dbg !23
  %4 = call ptr @xmalloc(i64 noundef %3), !dbg !24
  ret ptr %4, !dbg !25
}

; Function Attrs: noinline nounwind optnone uwtable
define dso_local ptr @notwrap(i64 noundef %0) #0 !dbg !26 {
  %2 = alloca i64, align 8
  %3 = alloca ptr, align 8
  store i64 %0, ptr %2, align 8
  %4 = load i64, ptr %2, align 8, !dbg !27
  %5 = call noalias ptr @malloc(i64 noundef %4) #5, !dbg !28
  store ptr %5, ptr %3, align 8, !dbg !29
  %6 = load ptr, ptr %3, align 8, !dbg !30
  %7 = getelementptr inbounds i64, ptr %6, i64 0, !dbg !30
  store i64 1, ptr %7, align 8, !dbg !31
  %8 = load ptr, ptr %3, align 8, !dbg !32
  ret ptr %8, !dbg !33
}

; Function Attrs: noinline nounwind optnone uwtable
define dso_local i32 @main() #0 !dbg !34 {
  %1 = alloca i32, align 4
  %2 = alloca ptr, align 8
  store i32 0, ptr %1, align 4
  %3 = call ptr @CALLOC(i64 noundef 4, i64 noundef 8), !dbg !35
  store ptr %3, ptr @g, align 8, !dbg !36
  %4 = load ptr, ptr @g, align 8, !dbg !37
  %5 = getelementptr inbounds i64, ptr %4, i64 1, !dbg !37
  store i64 2, ptr %5, align 8, !dbg !38
  %6 = call ptr @xxmalloc(i64 noundef 8), !dbg !39
  store ptr %6, ptr %2, align 8, !dbg !40
  %7 = load ptr, ptr %2, align 8, !dbg !41
  store i64 3, ptr %7, align 8, !dbg !42
  %8 = call ptr @notwrap(i64 noundef 8), !dbg !43
  %9 = ptrtoint ptr %8 to i64, !dbg !44
  %10 = trunc i64 %9 to i32, !dbg !45
  ret i32 %10, !dbg !46
}

; Function Attrs: noinline nounwind optnone uwtable
define internal ptr @CALLOC(i64 noundef %0, i64 noundef %1) #0 !dbg !47 {
  %3 = alloca i64, align 8
  %4 = alloca i64, align 8
  %5 = alloca ptr, align 8
  store i64 %0, ptr %3, align 8
  store i64 %1, ptr %4, align 8
  %6 = load i64, ptr %3, align 8, !dbg !48
  %7 = load i64, ptr %4, align 8, !dbg !49
  %8 = call noalias ptr @calloc(i64 noundef %6, i64 noundef %7) #7, !dbg !50
  store ptr %8, ptr %5, align 8, !dbg !51
  %9 = load ptr, ptr %5, align 8, !dbg !52
  %10 = icmp ne ptr %9, null, !dbg !52
  br i1 %10, label %11, label %12, !dbg !52

11:                                               ; preds = %2
  br label %13, !dbg !52

12:                                               ; preds = %2
  call void @__assert_fail(ptr noundef @.str.1, ptr noundef @.str.2, i32 noundef 4, ptr noundef @__PRETTY_FUNCTION__.CALLOC) #6, !dbg !53
  unreachable, !dbg !53

13:                                               ; preds = %11
  %14 = load ptr, ptr %5, align 8, !dbg !54
  ret ptr %14, !dbg !55
}

; Function Attrs: nounwind allocsize(0,1)
declare noalias ptr @calloc(i64 noundef, i64 noundef) #4

; Function Attrs: noreturn nounwind
declare void @__assert_fail(ptr noundef, ptr noundef, i32 noundef, ptr noundef) #3

attributes #0 = { noinline nounwind optnone uwtable "frame-pointer"="all" "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #1 = { nounwind allocsize(0) "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #2 = { "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #3 = { noreturn nounwind "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #4 = { nounwind allocsize(0,1) "frame-pointer"="all" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="x86-64" "target-features"="+cmov,+cx8,+fxsr,+mmx,+sse,+sse2,+x87" "tune-cpu"="generic" }
attributes #5 = { nounwind allocsize(0) }
attributes #6 = { noreturn nounwind }
attributes #7 = { nounwind allocsize(0,1) }

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!2, !3, !4, !5, !6, !7, !8}

!0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, producer: "Debian clang version 22.1.8 (1~deb12u1)", isOptimized: false, runtimeVersion: 0, emissionKind: LineTablesOnly, splitDebugInlining: false, nameTableKind: None)
!1 = !DIFile(filename: "w.c", directory: "/src", checksumkind: CSK_MD5, checksum: "7ec0de1e1ec4e51ab70ae979f07b69be")
!2 = !{i32 7, !"Dwarf Version", i32 5}
!3 = !{i32 2, !"Debug Info Version", i32 3}
!4 = !{i32 1, !"wchar_size", i32 4}
!5 = !{i32 8, !"PIC Level", i32 2}
!6 = !{i32 7, !"PIE Level", i32 2}
!7 = !{i32 7, !"uwtable", i32 2}
!8 = !{i32 7, !"frame-pointer", i32 2}
!10 = distinct !DISubprogram(name: "xmalloc", scope: !1, file: !1, line: 5, type: !11, scopeLine: 5, flags: DIFlagPrototyped, spFlags: DISPFlagDefinition, unit: !0)
!11 = !DISubroutineType(types: !12)
!12 = !{}
!13 = !DILocation(line: 5, column: 44, scope: !10)
!14 = !DILocation(line: 5, column: 37, scope: !10)
!15 = !DILocation(line: 5, column: 33, scope: !10)
!16 = !DILocation(line: 5, column: 53, scope: !10)
!17 = !DILocation(line: 5, column: 52, scope: !10)
!18 = !DILocation(line: 5, column: 58, scope: !10)
!19 = !DILocation(line: 5, column: 71, scope: !10)
!20 = !DILocation(line: 5, column: 89, scope: !10)
!21 = !DILocation(line: 5, column: 82, scope: !10)
!22 = distinct !DISubprogram(name: "xxmalloc", scope: !1, file: !1, line: 6, type: !11, scopeLine: 6, flags: DIFlagPrototyped, spFlags: DISPFlagDefinition, unit: !0)
!23 = !DILocation(line: 6, column: 43, scope: !22)
!24 = !DILocation(line: 6, column: 35, scope: !22)
!25 = !DILocation(line: 6, column: 28, scope: !22)
!26 = distinct !DISubprogram(name: "notwrap", scope: !1, file: !1, line: 7, type: !11, scopeLine: 7, flags: DIFlagPrototyped, spFlags: DISPFlagDefinition, unit: !0)
!27 = !DILocation(line: 7, column: 44, scope: !26)
!28 = !DILocation(line: 7, column: 37, scope: !26)
!29 = !DILocation(line: 7, column: 33, scope: !26)
!30 = !DILocation(line: 7, column: 48, scope: !26)
!31 = !DILocation(line: 7, column: 53, scope: !26)
!32 = !DILocation(line: 7, column: 65, scope: !26)
!33 = !DILocation(line: 7, column: 58, scope: !26)
!34 = distinct !DISubprogram(name: "main", scope: !1, file: !1, line: 9, type: !11, scopeLine: 9, flags: DIFlagPrototyped, spFlags: DISPFlagDefinition, unit: !0)
!35 = !DILocation(line: 9, column: 22, scope: !34)
!36 = !DILocation(line: 9, column: 20, scope: !34)
!37 = !DILocation(line: 9, column: 36, scope: !34)
!38 = !DILocation(line: 9, column: 41, scope: !34)
!39 = !DILocation(line: 9, column: 56, scope: !34)
!40 = !DILocation(line: 9, column: 52, scope: !34)
!41 = !DILocation(line: 9, column: 70, scope: !34)
!42 = !DILocation(line: 9, column: 72, scope: !34)
!43 = !DILocation(line: 9, column: 95, scope: !34)
!44 = !DILocation(line: 9, column: 89, scope: !34)
!45 = !DILocation(line: 9, column: 84, scope: !34)
!46 = !DILocation(line: 9, column: 77, scope: !34)
!47 = distinct !DISubprogram(name: "CALLOC", scope: !1, file: !1, line: 4, type: !11, scopeLine: 4, flags: DIFlagPrototyped, spFlags: DISPFlagLocalToUnit | DISPFlagDefinition, unit: !0)
!48 = !DILocation(line: 4, column: 67, scope: !47)
!49 = !DILocation(line: 4, column: 70, scope: !47)
!50 = !DILocation(line: 4, column: 60, scope: !47)
!51 = !DILocation(line: 4, column: 56, scope: !47)
!52 = !DILocation(line: 4, column: 81, scope: !47)
!53 = !DILocation(line: 4, column: 74, scope: !47)
!54 = !DILocation(line: 4, column: 92, scope: !47)
!55 = !DILocation(line: 4, column: 85, scope: !47)
