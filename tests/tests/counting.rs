//! The counting analysis end to end: exact per-site access counts at the right lines,
//! output and exit code unchanged, at -O0 and -O2, single and multi-threaded.

use profcc_schema::AccessKind::*;
use profcc_tests::*;

const COUNTS_C: &str = r#"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
volatile long table[64];
static void *worker(void *arg) {
  long id = (long)arg;
  for (int i = 0; i < 1000; i++)
    table[id * 8] = i;                      /* MARK_THREAD_STORE */
  return NULL;
}
int main(int argc, char **argv) {
  volatile long *heap = malloc(100 * sizeof(long));
  for (int i = 0; i < 100; i++)
    heap[i] = i;                            /* MARK_HEAP_STORE */
  long sum = 0;
  for (int i = 0; i < 100; i++)
    sum += heap[i];                         /* MARK_HEAP_LOAD */
  pthread_t t[3];
  for (long i = 0; i < 3; i++) pthread_create(&t[i], NULL, worker, (void *)i);
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  printf("sum=%ld last=%ld\n", sum, table[16]);
  free((void *)heap);
  return argc + 4;
}
"#;

fn check(opt: &str) {
    let s = Scratch::new();
    s.write("counts.c", COUNTS_C);
    s.compile(&profcc(), &[opt, "-pthread", "counts.c", "-o", "counts"]);
    s.compile(
        std::path::Path::new("clang-22"),
        &[opt, "-pthread", "counts.c", "-o", "native"],
    );
    let (out, p) = s.run_profiled("counts", &["x"], "summary=0");
    let native = s.run_plain("native", &["x"]);
    assert_eq!(out.stdout, native.stdout, "program output changed");
    assert_eq!(out.status.code(), Some(6));
    assert_eq!(native.status.code(), Some(6));
    assert!(
        out.stderr.is_empty(),
        "summary=0 keeps stderr clean: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let store = line_of(COUNTS_C, "MARK_THREAD_STORE");
    let heap_store = line_of(COUNTS_C, "MARK_HEAP_STORE");
    let heap_load = line_of(COUNTS_C, "MARK_HEAP_LOAD");
    assert_eq!(
        count_at(&p, "counts.c", store, Write),
        3000,
        "{opt}: 3 threads x 1000 stores"
    );
    assert_eq!(count_at(&p, "counts.c", heap_store, Write), 100, "{opt}");
    assert_eq!(count_at(&p, "counts.c", heap_load, Read), 100, "{opt}");
    let site = p
        .sites
        .iter()
        .find(|x| x.line == store && x.kind == Write)
        .unwrap();
    assert_eq!(site.threads, 3, "three threads executed the store");
    assert_eq!(site.size, 8);
    assert_eq!(site.function, "worker");
    let bytes: u64 = p
        .sites
        .iter()
        .filter(|x| x.line == store && x.kind == Write)
        .map(|x| x.bytes)
        .sum();
    assert_eq!(bytes, 24000);
    assert!(p.totals.writes >= 3100 && p.totals.reads >= 100);
    assert_eq!(p.trigger, "exit");
    assert_eq!(p.format, profcc_schema::FORMAT);
}

#[test]
fn exact_counts_o0() {
    check("-O0");
}

#[test]
fn exact_counts_o2() {
    check("-O2");
}

const LOOPS_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
volatile long data[1000];
int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 0;
  for (long i = 0; i < 1000; i++)
    data[i] = i;                            /* MARK_INIT */
  long s = 0;
  for (long i = 0; i < n; i++)
    s += data[i];                           /* MARK_RUNTIME */
  long at = -1;
  for (long i = 0; i < n; i++)
    if (data[i] == 7) {                     /* MARK_EARLY */
      at = i;
      break;
    }
  for (long i = 0; i < 30; i++)
    for (long j = 0; j < i % 4; j++)
      s += data[j];                         /* MARK_NESTED */
  printf("%ld %ld\n", s, at);
  return 0;
}
"#;

/// Loops whose count the pass keeps in a register and adds once on the exit edge (counting
/// only, -O2): a run-time trip count (also zero: the loop never entered), a loop left early,
/// an inner loop whose trip count changes with the outer index. Per-line counts are exact,
/// and the same as with the default instrumentation (sharing checks: counters in memory).
#[test]
fn hoisted_loop_counts_are_exact() {
    let s = Scratch::new();
    s.write("loops.c", LOOPS_C);
    let mut builds = Vec::new();
    // Full debug info too: the loops' variables have debug records, which a phi the pass
    // puts at a block's top must not take.
    for (mode, debug) in [("accesses", "-O2"), ("sharing", "-O2"), ("accesses", "-g")] {
        let exe = format!("loops_{mode}{debug}");
        let out = output_within(
            std::process::Command::new(profcc())
                .current_dir(s.path(""))
                .args(["-O2", debug, "loops.c", "-o", &exe])
                .env("PROFCC_INSTRUMENT", mode)
                .env("PROFCC_STATS", "1"),
        );
        let stats = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stats}");
        assert!(!stats.contains("instrumentation failed"), "{stats}");
        builds.push((exe, stats));
    }
    let hoisted = |stats: &str| -> u64 {
        stats
            .split(|c: char| c.is_whitespace())
            .find_map(|w| w.strip_prefix("counter-hoisted-loop="))
            .map_or(0, |v| v.parse().unwrap())
    };
    // Counting only: at least the run-time loop and the inner loop keep their count in a
    // register; with sharing checks in them, no loop does.
    assert!(hoisted(&builds[0].1) >= 2, "{}", builds[0].1);
    assert_eq!(hoisted(&builds[1].1), 0, "{}", builds[1].1);
    assert_eq!(
        hoisted(&builds[2].1),
        hoisted(&builds[0].1),
        "{}",
        builds[2].1
    );
    let init = line_of(LOOPS_C, "MARK_INIT");
    let runtime = line_of(LOOPS_C, "MARK_RUNTIME");
    let early = line_of(LOOPS_C, "MARK_EARLY");
    let nested = line_of(LOOPS_C, "MARK_NESTED");
    for (exe, _) in &builds {
        for (arg, reads, early_reads, stdout) in [
            ("500", 500, 8, "124778 7\n"),
            ("0", 0, 0, "28 -1\n"),
            ("5", 5, 5, "38 -1\n"),
        ] {
            let (out, p) = s.run_profiled(exe, &[arg], "summary=0");
            assert_eq!(String::from_utf8_lossy(&out.stdout), stdout, "{exe} {arg}");
            assert_eq!(count_at(&p, "loops.c", init, Write), 1000, "{exe} {arg}");
            assert_eq!(count_at(&p, "loops.c", runtime, Read), reads, "{exe} {arg}");
            assert_eq!(
                count_at(&p, "loops.c", early, Read),
                early_reads,
                "{exe} {arg}"
            );
            // sum over i < 30 of i % 4 = 7 * (0 + 1 + 2 + 3) + 0 + 1
            assert_eq!(count_at(&p, "loops.c", nested, Read), 43, "{exe} {arg}");
        }
    }
}
