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
