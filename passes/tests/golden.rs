//! Golden tests: each tests/golden/NAME.ll is instrumented and the result compared with
//! NAME.expected (the decision counts, then the instrumented IR). `PROFCC_BLESS=1` rewrites
//! the expected files; review the diff before committing. A few behaviours are also asserted
//! directly, so a wrong blessing cannot hide them.

use profcc_abi::sites::SiteReader;
use profcc_abi::{AccessKind, SiteDesc, NO_STRING};
use std::path::PathBuf;

/// The module's site records, decoded from `@__profcc_sites` in the IR text as the runtime
/// decodes them.
fn sites(ir: &str) -> Vec<SiteDesc> {
    let line = ir
        .lines()
        .find(|l| l.starts_with("@__profcc_sites = "))
        .expect("a site table");
    let mut bytes = Vec::new();
    if let Some(c) = line.split_once(" c\"").map(|x| x.1) {
        let c = &c[..c.find('"').unwrap()];
        let mut it = c.bytes();
        while let Some(b) = it.next() {
            if b == b'\\' {
                let hex = [it.next().unwrap(), it.next().unwrap()];
                bytes.push(u8::from_str_radix(std::str::from_utf8(&hex).unwrap(), 16).unwrap());
            } else {
                bytes.push(b);
            }
        }
    } else {
        let n: usize = line
            .split('[')
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(line.contains("zeroinitializer"), "{line}");
        bytes.resize(n, 0);
    }
    // The descriptor's last field: the length of the stream the table expands to.
    let raw: usize = ir
        .lines()
        .find(|l| l.starts_with("@__profcc_module = "))
        .and_then(|l| l.trim_end().trim_end_matches('}').rsplit("i32 ").next())
        .and_then(|v| v.trim().parse().ok())
        .expect("the descriptor's sites_raw_bytes");
    let mut stream = vec![0u8; raw];
    assert!(profcc_abi::lz::expand(&bytes, &mut stream), "{line}");
    SiteReader::new(&stream).collect()
}

/// (kind, size, leader) of each site.
fn shapes(ir: &str) -> Vec<(AccessKind, u16, u32)> {
    sites(ir)
        .iter()
        .map(|s| (AccessKind::from_code(s.kind).unwrap(), s.size, s.leader))
        .collect()
}

fn run(name: &str) -> (String, profcc_passes::Stats) {
    run_with(name, name, &Default::default())
}

/// Instrument `input.ll` with `opts` and compare with `expected.expected`.
fn run_with(
    input: &str,
    name: &str,
    opts: &profcc_passes::Options,
) -> (String, profcc_passes::Stats) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let input = std::fs::read_to_string(dir.join(format!("{input}.ll"))).unwrap();
    let (ir, stats) = profcc_passes::instrument_ir(&input, opts).unwrap();
    let mut text = String::new();
    for (k, v) in &stats.counts {
        text.push_str(&format!("; {k} = {v}\n"));
    }
    // The module identifier line differs between machines only in name; keep it stable.
    text.push_str(&ir);
    let expected_path = dir.join(format!("{name}.expected"));
    if std::env::var_os("PROFCC_BLESS").is_some() {
        std::fs::write(&expected_path, &text).unwrap();
    }
    let expected = std::fs::read_to_string(&expected_path).unwrap_or_else(|_| {
        panic!(
            "{} missing: run with PROFCC_BLESS=1 and review",
            expected_path.display()
        )
    });
    assert_eq!(
        text,
        expected,
        "{name}: instrumented IR differs from {}",
        expected_path.display()
    );
    (ir, stats)
}

/// The group counters' increments made in place (`%profcc.n`, `%profcc.n1`, ...).
fn increments(ir: &str) -> usize {
    ir.lines()
        .filter(|l| l.starts_with("  %profcc.n") && l.contains(" = add i64 %"))
        .count()
}

#[test]
fn load_store() {
    let (ir, s) = run("load_store");
    assert_eq!(s.get("instrumented-read"), 1);
    assert_eq!(s.get("instrumented-write"), 1);
    // One counter increment for the block (both accesses run equally often), in place;
    // per access one load of the line's shadow word (16 TiB + addr/8, 8-aligned) and one rarely taken
    // branch to the cold door, in the checkers; nothing is stored to the shadow inline.
    assert_eq!(s.get("counter-shared-in-block"), 1);
    assert_eq!(increments(&ir), 1, "{ir}");
    // The gates: @f loads __profcc_alone once (the fence between the accesses is an
    // intrinsic, which starts no thread) and calls each checker only when it is zero.
    let f = &ir[ir.find("define void @f").unwrap()..];
    let f = &f[..f.find("\n}").unwrap()];
    assert_eq!(
        f.matches("load atomic i64, ptr @__profcc_alone monotonic")
            .count(),
        1,
        "{ir}"
    );
    assert_eq!(f.matches("icmp eq i64 %profcc.alone, 0").count(), 2, "{ir}");
    // The checkers make the word's address in one register (hooks/sharing.c `checker_word`:
    // the base is one bit, set by the asm).
    let base = format!(
        "btsq $2, $0\", \"=r,i,i,0,~{{cc}},~{{dirflag}},~{{fpsr}},~{{flags}}\"(i32 {}, i32 {},",
        profcc_abi::LINE_SHIFT - profcc_abi::SHADOW_WORD_SHIFT,
        profcc_abi::LINE_SHADOW.trailing_zeros()
    );
    assert_eq!(ir.matches(base.as_str()).count(), 2, "{ir}");
    // Straight-line code: one gated call per access of a shared checker (address, site,
    // info = size | write << 8 | distance from the block's counting site << 24; a read or a
    // plain write that is its size alone calls its size's checker without info),
    // preserve_most so the caller spills nothing around it; the checkers (internal, never
    // inlined) hold the shadow loads and the one call each of the cold door.
    assert_eq!(
        ir.matches("call preserve_mostcc void @__profcc_check_read4(ptr noundef %p, ")
            .count(),
        1,
        "{ir}"
    );
    assert_eq!(
        ir.matches("call preserve_mostcc void @__profcc_check_write8_s(ptr noundef %q, ")
            .count(),
        1,
        "{ir}"
    );
    // Their slow sides: each checker's own door (the read's info 4; the write's rebuilt from
    // its packed immediate), then the one common door that calls the runtime's.
    assert_eq!(
        ir.matches("call preserve_mostcc void @__profcc_slow(")
            .count(),
        1,
        "{ir}"
    );
    assert!(
        ir.contains("@__profcc_door_read4(ptr noundef %0, i64 noundef %1)")
            && ir.contains("@__profcc_door_write8(ptr noundef %0, i64 noundef %1)"),
        "{ir}"
    );
    // The calls name the site (the load's own, the store's group leader: site 0) by its
    // module-local index; the checker finds its counter (a write's door reads the group's
    // count there). The store is a plain 8-byte write: one immediate packs its leader (0) and its distance
    // from it (1 << 20), and its checker rebuilds the info (8 | write | 1 << 24 = 16777480:
    // 264 and the distance shifted to bit 24, the extra reads and writes, 3 bits each from
    // bits 26 and 29, to bits 12 and 18).
    assert!(
        ir.contains("@__profcc_check_read4(ptr noundef %p, i64 noundef 0)")
            && ir.contains("@__profcc_check_write8_s(ptr noundef %q, i64 noundef 1048576)")
            && ir.contains("i64 noundef 4)")
            && ir.contains("%4 = shl i64 %1, 4\n  %5 = and i64 %4, 1056964608")
            && ir.contains("%12 = or disjoint i64 %11, 264"),
        "{ir}"
    );
    assert_eq!(f.matches("@__profcc_counts)").count(), 1, "{ir}");
    // The store's site record points at the load's counter (leader 0).
    assert_eq!(
        shapes(&ir),
        [(AccessKind::Read, 4, 0), (AccessKind::Write, 8, 0)],
        "{ir}"
    );
    // The write's volume sample: the site count tested against the thread's mask (loaded
    // where tested, in the checker's asm: hooks/sharing.c `CHECKER_TLS`).
    assert_eq!(
        ir.matches("load i64, ptr @__profcc_wmask").count()
            + ir.matches("threadlocal.address.p0(ptr align 8 @__profcc_wmask)")
                .count()
            + ir.matches("movq __profcc_wmask@gottpoff").count(),
        1,
        "{ir}"
    );
    assert!(!ir.contains("@__profcc_fn_counters("), "prologue inlined");
}

#[test]
fn merged() {
    let (ir, s) = run("merged");
    // @f: sites 0-2 in one call, addresses in access order, then first site 0 | the
    // members' fields from bit 20 (write | log2(size) << 1: 6, 4, 1) | distance of the first
    // from its leader (0): 6 << 20 | 4 << 23 | 1 << 26. Member 2 samples, the first counts.
    assert!(
        ir.contains(
            "call preserve_mostcc void @__profcc_check_m3_s2(ptr noundef %p, ptr noundef %q, ptr noundef %r, i64 noundef 106954752)"
        ),
        "{ir}"
    );
    // @g: site 3 alone, then sites 4 and 5: 4 | 6 << 20 | 2 << 23.
    assert!(
        ir.contains(
            "call preserve_mostcc void @__profcc_check_read8(ptr noundef %p, i64 noundef 3)"
        ),
        "{ir}"
    );
    assert!(
        ir.contains("call preserve_mostcc void @__profcc_check_m2(ptr noundef %q, ptr noundef %p, i64 noundef 23068676)"),
        "{ir}"
    );
    // @h: sites 6 and 7 (6 | 6 << 20 | 4 << 23) before the first load, the GEP moved up;
    // site 8 alone (its address is loaded by site 6's access).
    let call = "call preserve_mostcc void @__profcc_check_m2(ptr noundef %s, ptr noundef %f, i64 noundef 39845894) #";
    let after = &ir[ir.find(call).unwrap_or_else(|| panic!("{ir}")) + call.len()..];
    assert!(
        after[after.find('\n').unwrap()..].starts_with(
            "\n  br label %__profcc_gate_m2.exit\n\n__profcc_gate_m2.exit:                            ; preds = %0, %10\n  %a = load ptr, ptr %s"
        ),
        "{ir}"
    );
    assert!(
        ir.contains(
            "call preserve_mostcc void @__profcc_check_read4(ptr noundef %g, i64 noundef 8)"
        ),
        "{ir}"
    );
    assert_eq!(s.get("check-merged-call"), 3);
    assert_eq!(s.get("check-merged"), 7);
    // Every check still counts as one: 9 accesses, 9 checks.
    assert_eq!(s.get("check-out-of-line"), 9);
    // Each group counts in place, once: @f's, @g's two and @h's.
    assert_eq!(increments(&ir), 4, "{ir}");
    // @g's call of @ext between its two checks: the second gate loads __profcc_alone again.
    assert_eq!(
        ir.lines()
            .filter(|l| l.starts_with("  %profcc.alone") && l.contains("load atomic"))
            .count(),
        1 + 2 + 1,
        "{ir}"
    );
    // Each member's door: the member's own site and info (a read's size; a write's size,
    // write bit and distance from its leader).
    assert!(
        ir.contains("define internal preserve_mostcc void @__profcc_door_m3_2("),
        "{ir}"
    );
    assert_eq!(
        shapes(&ir),
        [
            (AccessKind::Read, 8, 0),
            (AccessKind::Read, 4, 0),
            (AccessKind::Write, 1, 0),
            (AccessKind::Read, 8, 3),
            (AccessKind::Read, 8, 4),
            (AccessKind::Read, 2, 4),
            (AccessKind::Read, 8, 6),
            (AccessKind::Read, 4, 6),
            (AccessKind::Read, 4, 6)
        ],
        "{ir}"
    );
}

#[test]
fn load_store_counting_only() {
    let opts = profcc_passes::Options {
        accesses: true,
        sharing: false,
        numa: false,
        regions: None,
    };
    let (ir, _) = run_with("load_store", "load_store.counting", &opts);
    // One counter increment for the block's two accesses, no call and no branch left.
    assert_eq!(ir.matches("add i64 %").count(), 1, "{ir}");
    assert!(
        !ir.contains("call void @__profcc_count"),
        "fast path inlined"
    );
    assert!(!ir.contains("@__profcc_fn_counters("), "prologue inlined");
    assert!(!ir.contains("br "), "branch-free");
}

#[test]
fn loops() {
    let (ir, s) = run("loops");
    // Both loops are small: their checks are inlined (the shadow word loaded in the loop,
    // the checker called on the cold side only); nothing is hoisted beside a check. The
    // 8-byte reads stand for themselves: the cold side calls the 8-byte read's checker,
    // the address and the site its only arguments (no info).
    assert_eq!(s.get("check-inline-in-loop"), 3);
    assert_eq!(s.get("check-out-of-line"), 1);
    assert_eq!(s.get("counter-hoisted-loop"), 0);
    assert_eq!(
        ir.matches("call preserve_mostcc void @__profcc_check_read8(ptr noundef %p, i64 noundef ")
            .count(),
        3,
        "{ir}"
    );
    assert!(!ir.contains("@__profcc_check_read("), "{ir}");
}

#[test]
fn loops_counting_only() {
    let opts = profcc_passes::Options {
        accesses: true,
        sharing: false,
        numa: false,
        regions: None,
    };
    let (ir, s) = run_with("loops", "loops.counting", &opts);
    // @sum: the count in a register (a phi from 0, +1 per iteration), added to the counter
    // once at the top of its dedicated exit block. @sum_shared's exit has another
    // predecessor: a phi there takes the count from the loop and 0 from the other, and the
    // exit's own phis stay as they were (%q, the address of a load there). @sum_exit (two
    // blocks) keeps its increment in the loop.
    assert_eq!(s.get("counter-hoisted-loop"), 2);
    assert!(
        ir.contains("%profcc.iter = phi i64 [ %profcc.iter.next, %loop ], [ 0, %entry ]"),
        "{ir}"
    );
    assert!(
        ir.contains("exit:                                             ; preds = %loop\n  %s.lcssa = phi i64 [ %s.next, %loop ]\n"),
        "{ir}"
    );
    assert!(
        ir.contains("%profcc.loop.iters = phi i64 [ %profcc.iter.next, %loop ], [ 0, %entry ]\n  %r = phi i64 [ 0, %entry ], [ %s.next, %loop ]\n  %q = phi ptr [ %a, %entry ], [ %p, %loop ]\n"),
        "{ir}"
    );
    assert_eq!(
        ir.matches("%profcc.loop.count = add i64 %").count(),
        2,
        "{ir}"
    );
    assert!(!ir.contains("profcc.loop.exit"), "no block added: {ir}");
    assert!(ir.contains("%w = load i64, ptr %q"), "{ir}");
}

#[test]
fn rmw() {
    let (ir, s) = run("rmw");
    // @rmw: 4 sites, one counter; @calls: counters for [store], [store, atomic, store];
    // @unrolled: 3 sites, one counter.
    assert_eq!(s.get("counter-shared-in-block"), 3 + 2 + 2);
    // The load before the store and the repeated store are covered, in @rmw and across
    // @unrolled's `nosync` intrinsics; the atomic never is.
    assert_eq!(s.get("check-covered-same-address"), 2 + 2);
    assert!(
        ir.contains(
            "call preserve_mostcc void @__profcc_check_write8_s(ptr noundef %sum, i64 noundef 605028360)"
        ),
        "@unrolled: one check, 1 extra read and 1 extra write: {ir}"
    );
    // Checks: @rmw's first store (8 bytes, 1 extra read, 1 extra write, site 1 with its
    // group's leader, site 0: the packed immediate 1 << 20 | 1 << 26 | 1 << 29, its
    // checker's info 8 | write | 1 << 12 | 1 << 18 | 1 << 24) and its load of %q (site 3: a read
    // names its own site, and no distance: the 8-byte read's checker, no info); @calls:
    // three stores and the atomic (which goes through the generic write checker with its
    // info; the plain stores call the 8-byte write's checkers, leader | distance << 20
    // packed in one immediate). Each is one call of a checker; the first check
    // of each group counts its group in its checker (@rmw's group leads with the covered
    // load: its store's checker names the leader, site 0, and counts it).
    assert!(
        ir.contains("call preserve_mostcc void @__profcc_check_write8_s(ptr noundef %p, i64 noundef 605028352)"),
        "{ir}"
    );
    assert!(
        ir.contains(
            "call preserve_mostcc void @__profcc_check_read8(ptr noundef %q, i64 noundef 3)"
        ),
        "{ir}"
    );
    assert_eq!(increments(&ir), 3 + 1, "{ir}");
    assert_eq!(
        ir.matches("call preserve_mostcc void @__profcc_check_")
            .count(),
        2 + 4 + 1,
        "{ir}"
    );
}

#[test]
fn atomics() {
    let (_, s) = run("atomics");
    assert_eq!(s.get("instrumented-atomic"), 2);
}

#[test]
fn memintrinsics() {
    let (ir, s) = run("memintrinsics");
    assert_eq!(s.get("instrumented-memintrinsic"), 3);
    // The run-time length reaches the hook as the size.
    assert_eq!(
        ir.matches("i64 1, i64 poison>, i64 %n, i64 1").count(),
        2,
        "count and run-time length added together: {ir}"
    );
    // Sites: copy-read and copy-write of run-time size 0, memset of constant size 16.
    assert_eq!(
        shapes(&ir),
        [
            (AccessKind::CopyRead, 0, 0),
            (AccessKind::CopyWrite, 0, 1),
            (AccessKind::CopyWrite, 16, 2)
        ],
        "{ir}"
    );
}

#[test]
fn skips() {
    let (_, s) = run("skips");
    assert_eq!(
        s.get("skipped-stack"),
        2,
        "store to and load from the non-escaping slot"
    );
    assert_eq!(s.get("skipped-constant"), 1);
    assert_eq!(s.get("skipped-thread-local"), 1);
    assert_eq!(s.get("instrumented-write"), 1, "escaping slot");
    assert_eq!(s.get("instrumented-read"), 1, "plain global");
}

#[test]
fn optnone() {
    let (ir, s) = run("optnone");
    assert_eq!(s.get("instrumented-write"), 1);
    assert!(
        !ir.contains("call void @__profcc_count"),
        "hook inlined into optnone function"
    );
}

#[test]
fn vector_masked() {
    let (ir, s) = run("vector_masked");
    assert_eq!(s.get("instrumented-read"), 1);
    assert_eq!(s.get("skipped-masked-or-vp-intrinsic"), 1);
    let s = sites(&ir);
    assert_eq!(s.len(), 1);
    assert_eq!(
        (s[0].inlined_file, s[0].size, s[0].kind, s[0].leader),
        (NO_STRING, 32, AccessKind::Read as u8, 0),
        "vector access is a 32-byte read site: {ir}"
    );
}

#[test]
fn ctors() {
    let (ir, _) = run("ctors");
    assert!(ir.contains(
        "{ i32 65535, ptr @init, ptr null }, { i32, ptr, ptr } { i32 1, ptr @profcc.module_ctor"
    ));
}

#[test]
fn debugloc() {
    let (ir, s) = run("debugloc");
    assert_eq!(s.get("sites"), 3);
    // The string table holds the joined paths and the function; the inlined sites name the
    // outer call's file and line.
    assert!(ir.contains("/home/u/proj/src/x.c\\00"), "{ir}");
    assert!(ir.contains("/usr/include/h.h\\00"));
    let strings = ir
        .lines()
        .find_map(|l| l.strip_prefix("@__profcc_strings = "))
        .unwrap();
    let at = strings.find("c\"").unwrap() + 2;
    let string = |off: u32| {
        let s = &strings[at + off as usize..];
        s[..s.find("\\00").unwrap()].to_string()
    };
    let inlined: Vec<Option<(String, u32)>> = sites(&ir)
        .iter()
        .map(|s| (s.inlined_file != NO_STRING).then(|| (string(s.inlined_file), s.inlined_line)))
        .collect();
    let x6 = Some(("/home/u/proj/src/x.c".to_string(), 6));
    assert_eq!(
        inlined,
        [None, x6.clone(), x6],
        "inlined-at names the outer call line"
    );
    // Site 0: line 4 col 5; site 1: line 2 col 7; site 2 (line 0) takes the previous
    // instruction's location, the inlined line 2 col 7.
    let lines: Vec<(u32, u32)> = sites(&ir).iter().map(|s| (s.line, s.col)).collect();
    assert_eq!(lines, [(4, 5), (2, 7), (2, 7)], "{ir}");
}

#[test]
fn not_instrumented_twice() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let input = std::fs::read_to_string(dir.join("load_store.ll")).unwrap();
    let (once, _) = profcc_passes::instrument_ir(&input, &Default::default()).unwrap();
    let (twice, s) = profcc_passes::instrument_ir(&once, &Default::default()).unwrap();
    assert_eq!(s.get("skipped-module-already-instrumented"), 1);
    let strip = |s: &str| {
        s.lines()
            .map(|l| l.split("; preds").next().unwrap().trim_end().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&once), strip(&twice));
}

#[test]
fn load_store_numa() {
    let opts = profcc_passes::Options {
        accesses: true,
        sharing: false,
        numa: true,
        regions: None,
    };
    let (ir, s) = run_with("load_store", "load_store.numa", &opts);
    // Both accesses (straight-line code) call the out-of-line page count (hooks/numa.c,
    // `__profcc_numa_check`, preserve_most): the access's page compared with its slot of the
    // thread's page cache (`numa_slot`: page x NUMA_SLOT_HASH, top bits), the door with the
    // caller's address on the cold side, one increment of the slot's count; the page shadow
    // is not read here.
    assert_eq!(s.get("numa-page-call"), 2);
    assert_eq!(s.get("numa-page-check"), 0);
    assert_eq!(
        ir.matches("call preserve_mostcc void @__profcc_numa_check(ptr %")
            .count(),
        2,
        "{ir}"
    );
    let base = profcc_abi::PAGE_SHADOW.to_string();
    assert_eq!(ir.matches(base.as_str()).count(), 0, "{ir}");
    let hash = format!(", {}", profcc_abi::NUMA_SLOT_HASH as i64);
    assert_eq!(ir.matches(hash.as_str()).count(), 1, "{ir}");
    assert!(ir.contains("@llvm.returnaddress(i32 0)"), "{ir}");
    assert_eq!(
        ir.matches("call preserve_mostcc void @__profcc_page_miss_at(")
            .count(),
        1,
        "{ir}"
    );
    assert!(
        ir.contains("@__profcc_numa_cache = external thread_local(initialexec)"),
        "{ir}"
    );
    assert!(
        !ir.contains("@__profcc_numa("),
        "the inlined hook is not used: {ir}"
    );
}

#[test]
fn rmw_numa_counts_covered_accesses_at_their_check() {
    let opts = profcc_passes::Options {
        accesses: true,
        sharing: false,
        numa: true,
        regions: None,
    };
    let (ir, s) = run_with("rmw", "rmw.numa", &opts);
    // @rmw: the load, the store and the second store of %p are one page count of 3 (the
    // store's check stands for the load before it and the store after it); the load of %q is
    // its own. @calls: the call and the atomic split the epochs, so no access is covered there.
    // @unrolled: one count of 3 for the load and the two stores.
    assert_eq!(s.get("check-covered-same-address"), 2 + 2);
    assert_eq!(s.get("numa-covered"), 2 + 2);
    assert_eq!(s.get("numa-page-call"), 6 + 1);
    assert!(
        ir.contains("call preserve_mostcc void @__profcc_numa_check_n(ptr %sum, i64 3)"),
        "{ir}"
    );
    assert!(
        ir.contains("call preserve_mostcc void @__profcc_numa_check_n(ptr %p, i64 3)"),
        "the slot's count goes up by 3: {ir}"
    );
}

#[test]
fn loop_exit_with_debug_records() {
    let opts = profcc_passes::Options {
        accesses: true,
        sharing: false,
        numa: false,
        regions: None,
    };
    // The module verifies (run_with fails otherwise): the exit's phi is above the debug
    // record of its first instruction.
    let (ir, s) = run_with("loop_exit_dbg", "loop_exit_dbg", &opts);
    assert_eq!(s.get("counter-hoisted-loop"), 2);
    let lines: Vec<&str> = ir.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("%profcc.loop.iters = phi i64 [ %profcc.iter.next"))
        .expect("the exit's phi");
    assert!(lines[at].contains("], [ 0, %"), "{ir}");
    assert!(lines[at + 1].starts_with("    #dbg_value(i64 %1,"), "{ir}");
}

#[test]
fn loop_invariant_numa_counts_move_to_the_loops_exit() {
    let opts = profcc_passes::Options {
        accesses: true,
        sharing: false,
        numa: true,
        regions: None,
    };
    let (ir, s) = run_with("loop_invariant", "loop_invariant.numa", &opts);
    // @acc: *sum's count (load and covered store: 2 per iteration) at the exit, a[i]'s in the
    // loop; @acc_late keeps both in the loop.
    assert_eq!(s.get("numa-page-hoisted-loop"), 1, "{ir}");
    assert_eq!(s.get("numa-page-check"), 3, "{ir}");
    let acc =
        &ir[ir.find("define void @acc(").unwrap()..ir.find("define void @acc_late(").unwrap()];
    assert!(
        acc.contains("%profcc.loop.iters = phi i64 [ %profcc.iter.next, %__profcc_numa.exit ], [ 0, %entry ]\n"),
        "{acc}"
    );
    assert!(
        acc.contains("%21 = mul i64 %profcc.loop.iters, 2\n  call preserve_mostcc void @__profcc_numa_check_n(ptr %sum, i64 %21)\n  ret void"),
        "{acc}"
    );
    assert_eq!(
        acc.matches("@__profcc_page_miss(ptr noundef %p)").count(),
        1,
        "{acc}"
    );
    assert!(
        !acc.contains("@__profcc_page_miss(ptr noundef %sum)"),
        "{acc}"
    );
    let late = &ir[ir.find("define void @acc_late(").unwrap()..];
    assert!(
        late.contains("@__profcc_page_miss(ptr noundef %sum)"),
        "{late}"
    );
    assert!(!late.contains("numa_check_n(ptr %sum"), "{late}");
}
