//! The NUMA analysis end to end (docs/numa.md), `thread` model: a serial first touch then a
//! parallel sweep (NumaPerf's thread-as-node model: every worker access is remote).

use profcc_tests::*;

const SWEEP_C: &str = r#"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define N (1 << 18) /* 1 MiB of ints: 256 pages */
struct job { const int *a; int lo, hi; long sum; };
static void *worker(void *arg) {
  struct job *j = arg;
  long s = 0;
  for (int i = j->lo; i < j->hi; i++) s += j->a[i];
  j->sum = s;
  return NULL;
}
int main(void) {
  int *a = malloc(sizeof(int) * N);
  for (int i = 0; i < N; i++) a[i] = i & 7; /* serial first touch by the main thread */
  struct job *jobs = malloc(2 * sizeof *jobs);
  pthread_t t[2];
  for (int k = 0; k < 2; k++) {
    jobs[k].a = a;
    jobs[k].lo = k * (N / 2);
    jobs[k].hi = (k + 1) * (N / 2);
    jobs[k].sum = 0;
    pthread_create(&t[k], NULL, worker, &jobs[k]);
  }
  for (int k = 0; k < 2; k++) pthread_join(t[k], NULL);
  printf("%ld\n", jobs[0].sum + jobs[1].sum);
  return 0;
}
"#;

fn sweep(opt: &str, options: &str) -> (profcc_schema::Profile, profcc_schema::numa::Numa) {
    let s = Scratch::new();
    s.write("sweep.c", SWEEP_C);
    s.compile_env(
        &profcc(),
        &[opt, "-pthread", "sweep.c", "-o", "sweep"],
        &[("PROFCC_INSTRUMENT", "numa")],
    );
    let (out, p) = s.run_profiled("sweep", &[], options);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "917504\n", "program output");
    assert_eq!(out.status.code(), Some(0));
    let numa = p.numa.clone().expect("a numa section");
    (p, numa)
}

#[test]
fn serial_first_touch_makes_every_worker_access_remote() {
    for opt in ["-O0", "-O2"] {
        let (p, numa) = sweep(opt, "summary=0");
        assert_eq!(numa.model, "thread");
        // Threads: the main thread (0) and the two workers (1, 2), homes id + 1.
        let ids: Vec<u32> = numa.threads.iter().map(|t| t.thread).collect();
        assert_eq!(ids, vec![0, 1, 2], "{opt}");
        let exact = |id: u32| p.threads.iter().find(|t| t.id == id).unwrap().accesses;
        let main = &numa.threads[0];
        assert_eq!(main.home, 1, "{opt}");
        // The main thread touched the array (256 pages) and the jobs first: all local.
        assert!(main.first_touches >= 256, "{opt}: {main:?}");
        assert_eq!(main.remote, 0, "{opt}: {main:?}");
        assert_eq!(main.local, exact(0), "{opt}: every access of main counted, all local");
        for w in &numa.threads[1..] {
            assert_eq!(w.home, w.thread + 1, "{opt}");
            // Every access of a worker is to the main thread's pages: remote, each one.
            assert_eq!(w.local, 0, "{opt}: {w:?}");
            assert_eq!(w.remote, exact(w.thread), "{opt}: {w:?}");
            assert_eq!(w.by_home, vec![(1, w.remote)], "{opt}: {w:?}");
            assert_eq!(w.first_touches, 0, "{opt}: {w:?}");
        }
        // 256 array pages, the jobs' page, and whatever else the main thread touched first.
        assert!(numa.pages >= 257, "{opt}: {}", numa.pages);
    }
}

#[test]
fn numa_off_counts_accesses_without_homes() {
    let (p, numa) = sweep("-O2", "summary=0:numa=off");
    assert_eq!(numa.model, "off");
    let max = profcc_abi::MAX_HOMES;
    for t in &numa.threads {
        let exact = p.threads.iter().find(|x| x.id == t.thread).unwrap().accesses;
        assert_eq!((t.home, t.local, t.remote), (max, 0, 0), "{t:?}");
        assert_eq!(t.by_home, vec![(max, exact)], "{t:?}");
    }
}

#[test]
fn the_default_build_has_no_numa_section() {
    let s = Scratch::new();
    s.write("sweep.c", SWEEP_C);
    s.compile(&profcc(), &["-O2", "-pthread", "sweep.c", "-o", "sweep"]);
    let (_, p) = s.run_profiled("sweep", &[], "summary=0");
    assert!(p.numa.is_none());
}
