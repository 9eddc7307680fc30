//! The NUMA analysis end to end (docs/numa.md): a serial first touch then a parallel sweep,
//! under the `thread` model (NumaPerf's thread-as-node model: every worker access is remote)
//! and the `emulate` model (2 nodes: exactly the worker on the other node is remote).

use profcc_tests::*;

const SWEEP_C: &str = r#"
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#define N (1 << 18) /* 1 MiB of ints: 256 pages */
struct job { const int *a; int lo, hi; long sum; };
static void *worker(void *arg) {
  struct job *j = arg;
  long s = 0;
  for (int i = j->lo; i < j->hi; i++) s += j->a[i]; /* MARK_SWEEP */
  j->sum = s;
  return NULL;
}
int main(int argc, char **argv) {
  int *a = malloc(sizeof(int) * N);         /* MARK_ALLOC */
  for (int i = 0; i < N; i++) a[i] = i & 7; /* MARK_FIRST_TOUCH: serial, by the main thread */
  struct job *jobs = malloc(2 * sizeof *jobs);
  pthread_t t[2];
  for (int k = 0; k < 2; k++) {
    jobs[k].a = a;
    jobs[k].lo = k * (N / 2);
    jobs[k].hi = (k + 1) * (N / 2);
    jobs[k].sum = 0;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (argc > 1 && k == 1) { /* "bind": the second worker on the last CPU it may use */
      cpu_set_t mine, set;
      sched_getaffinity(0, sizeof mine, &mine);
      int last = 0;
      for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &mine)) last = c;
      CPU_ZERO(&set);
      CPU_SET(last, &set);
      pthread_attr_setaffinity_np(&attr, sizeof set, &set);
    }
    pthread_create(&t[k], &attr, worker, &jobs[k]);
    pthread_attr_destroy(&attr);
  }
  for (int k = 0; k < 2; k++) pthread_join(t[k], NULL);
  printf("%ld\n", jobs[0].sum + jobs[1].sum);
  return 0;
}
"#;

fn sweep(opt: &str, options: &str) -> (profcc_schema::Profile, profcc_schema::numa::Numa) {
    sweep_args(opt, &[], options)
}

fn sweep_args(
    opt: &str,
    args: &[&str],
    options: &str,
) -> (profcc_schema::Profile, profcc_schema::numa::Numa) {
    let s = Scratch::new();
    let (p, numa, _) = sweep_in(&s, opt, args, options);
    (p, numa)
}

/// The sweep built and run in `s`; also the profile's path.
fn sweep_in(
    s: &Scratch,
    opt: &str,
    args: &[&str],
    options: &str,
) -> (
    profcc_schema::Profile,
    profcc_schema::numa::Numa,
    std::path::PathBuf,
) {
    s.write("sweep.c", SWEEP_C);
    s.compile_env(
        &profcc(),
        &[opt, "-pthread", "sweep.c", "-o", "sweep"],
        &[("PROFCC_INSTRUMENT", "numa")],
    );
    let (out, p) = s.run_profiled("sweep", args, options);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "917504\n",
        "program output"
    );
    assert_eq!(out.status.code(), Some(0));
    let numa = p.numa.clone().expect("a numa section");
    assert_sites_add_up(&numa);
    (p, numa, s.path("sweep.profile.json"))
}

/// Every counted access is in exactly one line's counts (docs/numa.md, "Sites"): the lines
/// add up to the threads' rows (`numa=off` has no local or remote), remote ones and unpinned
/// ones too.
fn assert_sites_add_up(n: &profcc_schema::numa::Numa) {
    let sum = |f: fn(&profcc_schema::numa::NumaSite) -> u64| n.sites.iter().map(f).sum::<u64>();
    let threads =
        |f: fn(&profcc_schema::numa::NumaThread) -> u64| n.threads.iter().map(f).sum::<u64>();
    assert_eq!(
        (
            sum(|x| x.accesses),
            sum(|x| x.remote),
            sum(|x| x.unpinned_thread),
            sum(|x| x.unpinned_page)
        ),
        (
            threads(|t| t.by_home.iter().map(|h| h.1).sum()),
            threads(|t| t.remote),
            threads(|t| t.unpinned_thread),
            threads(|t| t.unpinned_page)
        ),
        "{:?}",
        n.sites
    );
}

#[test]
fn serial_first_touch_makes_every_worker_access_remote() {
    for opt in ["-O0", "-O2"] {
        let (p, numa) = sweep(opt, "summary=0");
        assert_eq!(numa.model, "thread");
        // Threads: the main thread (0) and the two workers (1, 2), homes id + 1.
        let ids: Vec<u32> = numa.threads.iter().map(|t| t.thread).collect();
        assert_eq!(ids, vec![0, 1, 2], "{opt}");
        let exact = |id: u32| exact(&p, id);
        let main = &numa.threads[0];
        assert_eq!(main.home, 1, "{opt}");
        // The main thread touched the array (256 pages) and the jobs first: all local.
        assert!(main.first_touches >= 256, "{opt}: {main:?}");
        assert_eq!(main.remote, 0, "{opt}: {main:?}");
        assert_eq!(
            main.local,
            exact(0),
            "{opt}: every access of main counted, all local"
        );
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
        // Accesses by thread, per object: each object's add up to its accesses, and each
        // thread's over the objects (no block was freed, every page is in one) to all it made.
        let mut per_thread = std::collections::BTreeMap::<u32, u64>::new();
        for o in &numa.objects {
            let by: u64 = o.by_thread.iter().map(|t| t.accesses).sum();
            assert_eq!((by, o.unsplit), (o.accesses, 0), "{opt}: {o:?}");
            for t in &o.by_thread {
                *per_thread.entry(t.thread).or_default() += t.accesses;
            }
        }
        for t in &numa.threads {
            assert_eq!(
                per_thread[&t.thread],
                t.local + t.remote,
                "{opt}: thread {}",
                t.thread
            );
        }
        // The array: the first worker read its half, wholly on the array's pages (the
        // second's last 4 ints share a page with no middle byte in the block), each element
        // once at -O0; main wrote it.
        let array = numa
            .objects
            .iter()
            .find(|o| o.pages == 256)
            .expect("the array");
        let by: Vec<u32> = array.by_thread.iter().map(|t| t.thread).collect();
        assert_eq!(by, [0, 1, 2], "{opt}: {array:?}");
        if opt == "-O0" {
            assert_eq!(array.by_thread[1].accesses, 1 << 17, "{opt}: {array:?}");
            assert_eq!(
                array.by_thread[0].accesses,
                (1 << 18) - 4,
                "{opt}: {array:?}"
            );
        }
    }
}

#[test]
fn numa_off_counts_accesses_without_homes() {
    let (p, numa) = sweep("-O2", "summary=0:numa=off");
    assert_eq!(numa.model, "off");
    let max = profcc_abi::MAX_HOMES;
    for t in &numa.threads {
        let exact = p
            .threads
            .iter()
            .find(|x| x.id == t.thread)
            .unwrap()
            .accesses;
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

/// Every object's accesses split by thread add up to them, none left unsplit.
fn assert_by_thread_adds_up(n: &profcc_report::model::NumaInput) {
    for o in &n.objects {
        let by: u64 = o.by_thread.iter().map(|t| t.accesses).sum();
        assert_eq!((by, o.unsplit), (o.local + o.remote, 0), "{o:?}");
    }
}

/// The exact accesses of thread `id` (the thread table).
fn exact(p: &profcc_schema::Profile, id: u32) -> u64 {
    p.threads.iter().find(|t| t.id == id).unwrap().accesses
}

#[test]
fn emulate_two_nodes_makes_exactly_the_other_nodes_worker_remote() {
    for opt in ["-O0", "-O2"] {
        let (p, numa) = sweep(opt, "summary=0:numa=emulate:numa_nodes=2");
        assert_eq!((numa.model.as_str(), numa.nodes), ("emulate", 2));
        // Unbound threads: t mod 2. Main (0) and worker 2 on node 0 (home 1), worker 1 on
        // node 1 (home 2): half of the workers' accesses are remote, all of worker 1's.
        let homes: Vec<(u32, u32)> = numa.threads.iter().map(|t| (t.thread, t.home)).collect();
        assert_eq!(homes, vec![(0, 1), (1, 2), (2, 1)], "{opt}");
        let (w1, w2) = (&numa.threads[1], &numa.threads[2]);
        assert_eq!((w1.local, w1.remote), (0, exact(&p, 1)), "{opt}: {w1:?}");
        assert_eq!((w2.local, w2.remote), (exact(&p, 2), 0), "{opt}: {w2:?}");
        assert_eq!(w1.remote, w2.local, "{opt}: equal halves of the sweep");
        assert_eq!(numa.threads[0].remote, 0, "{opt}");
    }
}

/// The CPUs this process may run on (`Cpus_allowed_list`) and the CPUs configured
/// (`getconf _NPROCESSORS_CONF`, what the runtime divides into nodes).
fn cpus() -> (Vec<usize>, usize) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim();
    let mut allowed = Vec::new();
    for part in list.split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        allowed.extend(a.trim().parse::<usize>().unwrap()..=b.trim().parse::<usize>().unwrap());
    }
    let conf = std::process::Command::new("getconf")
        .arg("_NPROCESSORS_CONF")
        .output()
        .unwrap();
    let conf = String::from_utf8_lossy(&conf.stdout)
        .trim()
        .parse()
        .unwrap();
    (allowed, conf)
}

#[test]
fn emulate_puts_a_bound_thread_on_the_node_of_its_cpus() {
    let (allowed, conf) = cpus();
    let (p, numa) = sweep_args("-O2", &["bind"], "summary=0:numa=emulate:numa_nodes=2");
    let w2 = &numa.threads[2];
    let last = *allowed.last().unwrap();
    // Bound to one CPU of all: on that CPU's node (c x 2 / conf); the only CPU there is:
    // unbound, t mod 2 = node 0.
    let node = if conf > 1 { last * 2 / conf } else { 0 };
    assert_eq!(w2.home, node as u32 + 1, "{w2:?} (CPU {last} of {conf})");
    // On node 1 its accesses to the main thread's pages (node 0) are all remote; on node 0,
    // all local.
    let want = if node == 1 {
        (0, exact(&p, 2))
    } else {
        (exact(&p, 2), 0)
    };
    assert_eq!((w2.local, w2.remote), want, "{w2:?}");
    // NUMAPROF's categories: the bound worker is pinned (when binding leaves it fewer CPUs
    // than all), the other worker is not and every access it made was by an unpinned thread;
    // no policy bound a page, so every access is to an unpinned page.
    let w1 = &numa.threads[1];
    assert_eq!(
        (w2.pinned, w2.unpinned_thread),
        (conf > 1, if conf > 1 { 0 } else { exact(&p, 2) }),
        "{w2:?}"
    );
    assert_eq!(
        (w1.pinned, w1.unpinned_thread),
        (false, exact(&p, 1)),
        "{w1:?}"
    );
    for t in &numa.threads {
        assert_eq!(t.unpinned_page, exact(&p, t.thread), "{t:?}");
        assert_eq!(
            t.unpinned_both, t.unpinned_thread,
            "every page unpinned: {t:?}"
        );
    }
}

#[test]
fn the_report_shows_each_threads_locality_in_text_json_and_csv() {
    let s = Scratch::new();
    let (p, _, profile) = sweep_in(&s, "-O2", &[], "summary=0:numa=emulate:numa_nodes=2");
    let (w1, w2) = (exact(&p, 1), exact(&p, 2));
    // JSON: the model's rows, nodes 0-based, and the node x node matrix (rows: the thread's
    // node; columns: the page's node): node 1's worker reads only node 0's pages.
    let r = report(&profile, &[]);
    let n = &r.numa.as_ref().expect("a numa section").inputs[0];
    assert_eq!((n.model.as_str(), n.nodes), ("emulate", 2));
    let rows: Vec<(u32, Option<u32>, u64, u64)> = n
        .threads
        .iter()
        .map(|t| (t.thread, t.node, t.local, t.remote))
        .collect();
    assert_eq!(
        rows,
        vec![
            (0, Some(0), exact(&p, 0), 0),
            (1, Some(1), 0, w1),
            (2, Some(0), w2, 0)
        ]
    );
    assert_eq!(n.node_matrix, vec![vec![exact(&p, 0) + w2, 0], vec![w1, 0]]);
    assert_eq!(n.remote, w1);
    // Text: the summary line and a row per thread.
    let text = sh(std::process::Command::new(profcc())
        .arg("report")
        .arg(&profile));
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    let all = exact(&p, 0) + w1 + w2;
    assert!(
        text.contains(&format!(
            "NUMA locality (model emulate: 2 nodes; docs/numa.md): {w1} of {all} accesses remote"
        )),
        "{text}"
    );
    // Where: the array's pages were first touched by the main thread in the init loop, the
    // allocation named by its malloc; the advice names the pattern.
    let (alloc, touch) = (
        line_of(SWEEP_C, "MARK_ALLOC"),
        line_of(SWEEP_C, "MARK_FIRST_TOUCH"),
    );
    let top = &n.first_touch[0];
    assert_eq!(top.thread, Some(0));
    assert!(top.pages >= 256, "{top:?}");
    let place = top.place.as_deref().unwrap_or_default();
    assert!(place.ends_with(&format!("sweep.c:{touch}")), "{top:?}");
    assert_eq!(top.function.as_deref(), Some("main"), "{top:?}");
    let object = top.object.as_deref().unwrap_or_default();
    assert!(
        object.starts_with("heap block allocated at ")
            && object.ends_with(&format!("sweep.c:{alloc}")),
        "{top:?}"
    );
    let advice = n.advice.as_deref().unwrap_or_default();
    assert!(
        advice.starts_with("serial first touch: thread 0 touched"),
        "{advice}"
    );
    assert!(advice.contains(&format!("sweep.c:{touch}")), "{advice}");
    assert!(
        text.contains(&format!(
            "  first touch: {} pages by thread 0 at ",
            top.pages
        )),
        "{text}"
    );
    // Sites: every access counted once (for the line that brought its page into the
    // thread's page cache), so the lines add up to the threads' accesses and their remote
    // ones to worker 1's. The sweep's line takes all of it but the final `j->sum` store,
    // which is counted there too unless its page left the cache in between (a slot
    // collision with an array page): at most one access elsewhere.
    let sweep_line = line_of(SWEEP_C, "MARK_SWEEP");
    let raw = &p.numa.as_ref().unwrap().sites;
    assert_eq!(raw.iter().map(|x| x.accesses).sum::<u64>(), all);
    assert_eq!(raw.iter().map(|x| x.remote).sum::<u64>(), w1);
    let top = &n.sites[0];
    assert!(
        top.place
            .as_deref()
            .unwrap_or_default()
            .ends_with(&format!("sweep.c:{sweep_line}"))
            && top.function.as_deref() == Some("worker"),
        "{:?}",
        n.sites
    );
    assert!(
        top.remote + 1 >= w1 && top.accesses - top.remote + 1 >= w2,
        "{top:?}: worker 1 {w1} remote, worker 2 {w2} local"
    );
    let init = n
        .sites
        .iter()
        .find(|x| {
            x.place
                .as_deref()
                .unwrap_or_default()
                .ends_with(&format!("sweep.c:{touch}"))
        })
        .expect("the init loop's line");
    assert_eq!(init.remote, 0, "{init:?}");
    assert!(init.accesses >= (1 << 18) / 4, "{init:?}");
    assert!(
        text.contains(&format!(
            "  remote access at {} in worker: {} of {} accesses remote",
            top.place.as_deref().unwrap(),
            top.remote,
            top.accesses
        )),
        "{text}"
    );
    // CSV: numa_threads.csv, one row per thread.
    let dir = s.path("csv");
    sh(std::process::Command::new(profcc())
        .args(["report", "--csv"])
        .arg(&dir)
        .arg(&profile));
    let csv = std::fs::read_to_string(dir.join("numa_threads.csv")).unwrap();
    let want = format!(
        "input,rank,thread,node,local,remote,first_touches,model\n0,,0,0,{},0,{},emulate\n0,,1,1,0,{w1},0,emulate\n0,,2,0,{w2},0,0,emulate\n",
        exact(&p, 0),
        p.numa.as_ref().unwrap().threads[0].first_touches
    );
    assert_eq!(csv, want);
    let csv = std::fs::read_to_string(dir.join("numa_sites.csv")).unwrap();
    assert!(
        csv.starts_with("input,rank,line,function,local,remote,unpinned_thread,unpinned_page\n")
            && csv.lines().nth(1)
                == Some(
                    format!(
                        // Unbound threads, no policy: every access unpinned both ways.
                        "0,,{},worker,{},{},{},{}",
                        top.place.as_deref().unwrap(),
                        top.accesses - top.remote,
                        top.remote,
                        top.accesses,
                        top.accesses
                    )
                    .as_str()
                ),
        "{csv}"
    );
}

const PARALLEL_C: &str = r#"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define N (1 << 18)
#define T 2
static int grid[N];               /* a global: its pages belong to who touches them first */
struct job { int *a; int lo, hi; long sum; const long *scale; };
static void *init(void *arg) {     /* parallel first touch: each thread its own part */
  struct job *j = arg;
  for (int i = j->lo; i < j->hi; i++) { j->a[i] = i & 7; grid[i] = 1; }
  return NULL;
}
static void *sweep(void *arg) {
  struct job *j = arg;
  long s = 0;
  for (int i = j->lo; i < j->hi; i++) s += j->a[i] * grid[i] * *j->scale;
  j->sum = s;
  return NULL;
}
int main(void) {
  long scale = 2;                  /* on the main thread's stack, read by every worker */
  int *a = malloc(sizeof(int) * N);
  struct job jobs[T];
  pthread_t t[T];
  for (int pass = 0; pass < 2; pass++) {
    for (int k = 0; k < T; k++) {
      jobs[k] = (struct job){a, k * (N / T), (k + 1) * (N / T), 0, &scale};
      pthread_create(&t[k], NULL, pass ? sweep : init, &jobs[k]);
    }
    for (int k = 0; k < T; k++) pthread_join(t[k], NULL);
  }
  printf("%ld\n", jobs[0].sum + jobs[1].sum);
  return 0;
}
"#;

/// Parallel first touch of a heap array and a global, then the same threads' schedule in the
/// sweep: the array and the global are local to the thread that touched each part; the only
/// remote accesses are to what the main thread owns (its stack's `scale`, the job array, the
/// heap block's first page). Under `numa=thread` the sweep threads are new threads (ids 3,
/// 4), so the test runs `emulate` with 2 nodes, where thread k of each pass is on node
/// (k + 1) mod 2 for the init pass and (k + 3) mod 2 for the sweep: the same node.
#[test]
fn parallel_first_touch_keeps_the_array_and_the_global_local() {
    let s = Scratch::new();
    s.write("par.c", PARALLEL_C);
    s.compile_env(
        &profcc(),
        &["-O2", "-pthread", "par.c", "-o", "par"],
        &[("PROFCC_INSTRUMENT", "numa")],
    );
    let (out, p) = s.run_profiled("par", &[], "summary=0:numa=emulate:numa_nodes=2");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "1835008\n");
    let numa = p.numa.clone().unwrap();
    let homes: Vec<(u32, u32)> = numa.threads.iter().map(|t| (t.thread, t.home)).collect();
    assert_eq!(homes, vec![(0, 1), (1, 2), (2, 1), (3, 2), (4, 1)]);
    // The init threads touched their halves first: 128 + 128 array pages, 128 + 128 grid
    // pages (a block boundary page may go either way), nothing remote but main's pages.
    for t in &numa.threads[1..3] {
        assert!(t.first_touches >= 250, "{t:?}");
    }
    // Sweep threads: all their array and grid reads are local; the remote ones are the
    // reads of `scale` (main's stack) and of their job (main's stack), one page each, at
    // most a few per iteration: far below the local ones.
    for t in &numa.threads[3..] {
        assert!(t.local > 0 && t.remote < t.local, "{t:?}");
        // Each sweep thread reads its half of the array and of the grid: N/2 each at -O2,
        // vectorised or not, at least N/8 vector loads of each are local.
        assert!(t.local >= (1 << 18) / 8, "{t:?}");
    }
    // The report names the global as the object of both init threads' first touches of it,
    // and does not call two threads' halves a serial first touch.
    let r = report(&s.path("par.profile.json"), &[]);
    let n = &r.numa.as_ref().unwrap().inputs[0];
    let grid: Vec<Option<u32>> = n
        .first_touch
        .iter()
        .filter(|f| f.object.as_deref() == Some("global grid"))
        .map(|f| f.thread)
        .collect();
    assert_eq!(grid.len(), 2, "{:?}", n.first_touch);
    assert!(
        grid.contains(&Some(1)) && grid.contains(&Some(2)),
        "{:?}",
        n.first_touch
    );
    let advice = n.advice.as_deref().unwrap_or_default();
    assert!(!advice.starts_with("serial first touch"), "{advice}");
}

const OMP_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#define N (1 << 20)
int main(void) {
  double *a = malloc(sizeof(double) * N);
  for (long i = 0; i < N; i++) a[i] = (double)(i & 7); /* serial first touch (master) */
  double s = 0;
#pragma omp parallel num_threads(2) reduction(+ : s)
  {
    /* A page of the thread's own, touched first once the OpenMP runtime bound it. */
    volatile char *mine = malloc(1 << 16);
    mine[0] = 1;
#pragma omp for schedule(static)
    for (long i = 0; i < N; i++) s += a[i];
    free((void *)mine);
  }
  printf("%.0f\n", s);
  return 0;
}
"#;

/// OpenMP, `emulate` with 2 nodes. Unbound, the master (thread 0) is on node 0 and the worker
/// (thread 1) on node 1, so the worker's half of the sweep is remote. With OMP_PROC_BIND and
/// places in reverse CPU order, the OpenMP runtime binds the threads itself once they run
/// (through the raw system call, not the mask they start with); the binding is noticed at
/// each thread's next first touch (its buffer's page): the master moves to the last CPU's
/// node, the worker is on the first CPU's node, and each thread's counts still add up to its
/// exact accesses.
#[test]
fn openmp_threads_bound_by_omp_proc_bind_move_to_their_cpus_nodes() {
    let (allowed, conf) = cpus();
    let s = Scratch::new();
    s.write("omp.c", OMP_C);
    s.compile_env(
        &profcc(),
        &["-O2", "-fopenmp", "omp.c", "-o", "omp"],
        &[("PROFCC_INSTRUMENT", "numa")],
    );
    let options = "summary=0:numa=emulate:numa_nodes=2";
    let (out, p) = s.run_profiled("omp", &[], options);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "3670016\n");
    let n = p.numa.clone().unwrap();
    let homes: Vec<(u32, u32)> = n.threads.iter().map(|t| (t.thread, t.home)).collect();
    assert_eq!(homes, vec![(0, 1), (1, 2)], "unbound: t mod 2");
    let worker = &n.threads[1];
    assert!(
        worker.remote >= (1 << 19),
        "the worker's half is remote: {worker:?}"
    );
    for t in &n.threads {
        assert_eq!(t.local + t.remote, exact(&p, t.thread), "{t:?}");
    }
    let (first, last) = (allowed[0], *allowed.last().unwrap());
    let node = |c: usize| if conf > 1 { c * 2 / conf } else { 0 } as u32;
    if node(first) == node(last) {
        return; // one CPU, or CPUs of one emulated node: nothing to tell apart
    }
    let out = output_within(
        std::process::Command::new(s.path("omp"))
            .env("OMP_PROC_BIND", "true")
            .env("OMP_PLACES", format!("{{{last}}},{{{first}}}"))
            .env(
                "PROFCC_OPTIONS",
                format!("out={}:{options}", s.path("bound.json").display()),
            ),
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "3670016\n");
    let p = profcc_schema::read(&s.path("bound.json")).unwrap();
    let n = p.numa.clone().unwrap();
    let homes: Vec<(u32, u32)> = n.threads.iter().map(|t| (t.thread, t.home)).collect();
    assert_eq!(
        homes,
        vec![(0, node(last) + 1), (1, node(first) + 1)],
        "bound by OMP_PLACES"
    );
    for t in &n.threads {
        assert_eq!(t.local + t.remote, exact(&p, t.thread), "{t:?}");
    }
}

/// `real` (NUMAPROF's model): page nodes from move_pages, thread nodes from getcpu. On a
/// one-node machine (this one, CI) everything is local and nothing fails, whether or not the
/// kernel answers move_pages; on a machine with more nodes the counts still add up.
#[test]
fn real_model_on_this_machine_counts_every_access_and_one_node_is_all_local() {
    let online = std::fs::read_to_string("/sys/devices/system/node/online").unwrap_or_default();
    let one_node = matches!(online.trim(), "" | "0");
    let (p, numa) = sweep("-O2", "summary=0:numa=real");
    assert_eq!(numa.model, "real");
    if one_node {
        assert_eq!(numa.nodes, 1);
    }
    for t in &numa.threads {
        assert_eq!(t.local + t.remote, exact(&p, t.thread), "{t:?}");
        if one_node {
            assert_eq!((t.home, t.remote), (1, 0), "{t:?}");
        }
    }
}

const THP_C: &str = r#"
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#define HUGE (2UL << 20)
#define REGIONS 4
/* What the kernel gave: AnonHugePages of the mapping holding p (/proc/self/smaps), in kB. */
static long huge_kib(char *p) {
  FILE *f = fopen("/proc/self/smaps", "r");
  char line[256];
  unsigned long lo, hi;
  int in = 0;
  long kib = 0;
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "%lx-%lx", &lo, &hi) == 2)
      in = lo <= (unsigned long)p && (unsigned long)p < hi;
    else if (in && sscanf(line, "AnonHugePages: %ld kB", &kib) == 1)
      break;
  }
  fclose(f);
  return kib;
}
int main(void) {
  char *raw = mmap(NULL, (REGIONS + 1) * HUGE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  char *p = (char *)(((unsigned long)raw + HUGE - 1) & ~(HUGE - 1));
  madvise(p, REGIONS * HUGE, MADV_HUGEPAGE);
  long sum = 0;
  for (unsigned long i = 0; i < REGIONS * HUGE; i += 4096) p[i] = 1; /* MARK_TOUCH */
  for (unsigned long i = 0; i < REGIONS * HUGE; i += 4096) sum += p[i];
  printf("%ld %ld\n", sum, huge_kib(p) / 2048);
  return 0;
}
"#;

/// `real` recognises transparent huge pages (NUMAPROF's rule): 8 MiB of 2 MiB-aligned memory
/// advised `MADV_HUGEPAGE`, one byte a page written: as many huge pages as the kernel's
/// smaps says it gave (4 where THP is on, 0 where it is `never`), each one first touch of
/// the main thread; all 2048 pages first touched at the writing line.
#[test]
fn real_model_recognises_transparent_huge_pages() {
    let s = Scratch::new();
    build_scalar(&s, "thp", THP_C, &[]);
    let (out, p) = s.run_profiled("thp", &[], "summary=0:numa=real");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let (sum, huge) = stdout.trim().split_once(' ').expect("two numbers");
    assert_eq!(sum, "2048");
    let huge: u64 = huge.parse().unwrap();
    let n = p.numa.as_ref().expect("a numa section");
    assert_eq!(n.huge_pages, huge, "as the kernel's smaps says");
    let main = &n.threads[0];
    let single = 2048 - huge * profcc_abi::HUGE_PAGE_PAGES;
    // The region's first touches (a huge page once), and a few pages of the stack and libc.
    assert!(
        (huge + single..huge + single + 8).contains(&main.first_touches),
        "{huge} huge pages: {main:?}"
    );
    let r = report(&s.path("thp.profile.json"), &[]);
    let i = &r.numa.as_ref().unwrap().inputs[0];
    let top = &i.first_touch[0];
    let touch = format!("thp.c:{}", line_of(THP_C, "MARK_TOUCH"));
    assert!(
        top.pages == 2048 && top.place.as_deref().is_some_and(|x| x.ends_with(&touch)),
        "{top:?}"
    );
    if huge > 0 {
        let text = sh(std::process::Command::new(profcc())
            .arg("report")
            .arg(s.path("thp.profile.json")));
        let text = String::from_utf8_lossy(&text.stdout).into_owned();
        assert!(
            text.contains(&format!(
                "({} in {huge} transparent huge pages, one first touch each)",
                huge * profcc_abi::HUGE_PAGE_PAGES
            )),
            "{text}"
        );
    }
}

/// Build `NAME.c` (`src`) with `PROFCC_INSTRUMENT=numa` at -O2 without vectorising (one
/// access per element, so that the counts are the elements), `extra` arguments last.
fn build_scalar(s: &Scratch, name: &str, src: &str, extra: &[&str]) {
    let file = format!("{name}.c");
    s.write(&file, src);
    let mut args = vec!["-O2", "-fno-vectorize", "-fno-slp-vectorize", "-g"];
    args.extend_from_slice(&[file.as_str(), "-o", name]);
    args.extend_from_slice(extra);
    s.compile_env(&profcc(), &args, &[("PROFCC_INSTRUMENT", "numa")]);
}

const BLOCKS_C: &str = r#"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define PAGE 4096
#define INTS (PAGE / sizeof(int))
#define BLOCKS 16
#define TABLE (4 * PAGE / sizeof(long))
static long table[TABLE] __attribute__((aligned(4096))); /* MARK_GLOBAL: read by both workers */
static int *tiles;
static int *shared_stack;
static long sums[2];
static pthread_barrier_t bar;
static void *worker(void *arg) {
  long k = (long)arg, s = 0;
  /* first touch in parallel: thread k the even (k = 0) or odd (k = 1) tiles */
  for (int b = (int)k; b < BLOCKS; b += 2)
    for (unsigned i = 0; i < INTS; i++) tiles[b * INTS + i] = b; /* MARK_TOUCH */
  pthread_barrier_wait(&bar);
  /* the sweep: each tile read by the other thread (a permuted assignment, b ^ 1) */
  for (int b = (int)k; b < BLOCKS; b += 2)
    for (unsigned i = 0; i < INTS; i++) s += tiles[(b ^ 1) * INTS + i];
  for (unsigned i = 0; i < TABLE; i++) s += table[i];
  for (unsigned i = 0; i < 4 * INTS; i++) s += shared_stack[i];
  sums[k] = s;
  return NULL;
}
int main(void) {
  int on_stack[4 * INTS]; /* MARK_STACK: the main thread's stack, read by both workers */
  for (unsigned i = 0; i < 4 * INTS; i++) on_stack[i] = 1;
  for (unsigned i = 0; i < TABLE; i++) table[i] = 2;
  shared_stack = on_stack;
  tiles = aligned_alloc(PAGE, BLOCKS * PAGE); /* MARK_TILES */
  pthread_barrier_init(&bar, NULL, 2);
  pthread_t t[2];
  for (long k = 0; k < 2; k++) pthread_create(&t[k], NULL, worker, (void *)k);
  for (int k = 0; k < 2; k++) pthread_join(t[k], NULL);
  printf("%ld\n", sums[0] + sums[1]);
  return 0;
}
"#;

/// Objects: tiles touched in parallel, then each read by the other thread (a permuted block
/// assignment, as Hydro's Morton-ordered tiles); a global and the main thread's stack that
/// both workers read. Under `numa=thread` every count is known: each worker writes 8 tiles
/// of 1024 ints (local) and reads the 8 others (remote), reads the 4-page table (2048 longs)
/// and the 4-page stack array (4096 ints), all remote.
#[test]
fn objects_name_permuted_tiles_a_shared_global_and_the_main_stack() {
    let s = Scratch::new();
    build_scalar(&s, "blocks", BLOCKS_C, &["-pthread"]);
    let (out, p) = s.run_profiled("blocks", &[], "summary=0");
    // Sums: each worker's 8 tiles of the other parity (tile b holds b: 64 and 56 x 1024), the
    // table (2 x 2048 each) and the stack array (1 x 4096 each).
    let sums = (64 + 56) * 1024 + 2 * (2 * 2048) + 2 * 4096;
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{sums}\n"));
    let profile = s.path("blocks.profile.json");
    let r = report(&profile, &[]);
    let n = &r.numa.as_ref().expect("a numa section").inputs[0];
    let find = |prefix: &str| {
        n.objects
            .iter()
            .find(|o| o.object.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} in {:#?}", n.objects))
    };
    // The tiles: 16 pages, 16 x 1024 local writes and 16 x 1024 remote reads, every page used
    // by the other thread than its first toucher, the two threads' pages interleaved.
    let tiles = find("heap block allocated at ");
    assert!(
        tiles
            .object
            .ends_with(&format!("blocks.c:{}", line_of(BLOCKS_C, "MARK_TILES"))),
        "{tiles:?}"
    );
    assert_eq!(
        (tiles.pages, tiles.local, tiles.remote, tiles.moved_pages),
        (16, 16 * 1024, 16 * 1024, 16),
        "{tiles:?}"
    );
    assert_eq!(tiles.kind.as_deref(), Some("first touch"));
    let fix = tiles.fix.as_deref().unwrap_or_default();
    assert!(fix.contains("permuted or tiled"), "{fix}");
    assert!(
        tiles
            .first_touch_at
            .as_deref()
            .unwrap_or_default()
            .ends_with(&format!("blocks.c:{}", line_of(BLOCKS_C, "MARK_TOUCH"))),
        "{tiles:?}"
    );
    assert!(matches!(tiles.first_touch_thread, Some(1) | Some(2)));
    let ranges: Vec<(u32, u64)> = tiles.threads.iter().map(|t| (t.thread, t.pages)).collect();
    assert_eq!(ranges, vec![(1, 8), (2, 8)], "each worker uses 8 tiles");
    // The global: written by main (local), read whole by both workers (remote), its 4 pages
    // shared: interleave.
    let table = find("global table");
    assert_eq!(
        (table.pages, table.local, table.remote, table.shared_pages),
        (4, 2048, 2 * 2048, 4),
        "{table:?}"
    );
    assert_eq!(table.kind.as_deref(), Some("remote access"));
    assert!(table
        .fix
        .as_deref()
        .unwrap_or_default()
        .contains("interleave"));
    // The main thread's stack: the workers' 2 x 4096 reads of its array are remote.
    let stack = find("stack of thread 0");
    assert_eq!(stack.remote, 2 * 4096, "{stack:?}");
    assert!(stack.local >= 4096, "the main thread's writes: {stack:?}");
    // Scores follow the formula, and the ranking is by score.
    let ms = p.duration_ns as f64 / 1e6;
    let rate = profcc_analysis::numa::REMOTE_MISS_RATE;
    assert!((tiles.score - (16.0 * 1024.0 * rate) / ms).abs() < 1e-6 * tiles.score);
    assert!(n.objects.windows(2).all(|w| w[0].score >= w[1].score));
    // CSV: numa_objects.csv has the tiles' row.
    let dir = s.path("csv");
    sh(std::process::Command::new(profcc())
        .args(["report", "--csv"])
        .arg(&dir)
        .arg(&profile));
    let csv = std::fs::read_to_string(dir.join("numa_objects.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("input,rank,object,allocation_site,first_touch_thread,first_touch_line,local,remote,unpinned_page,remote_invalidations,score,pages,kind")
    );
    assert!(
        csv.lines().any(|l| l.contains(&format!(
            ",{},{},{},0,{:.3},16,first touch",
            16 * 1024,
            16 * 1024,
            32 * 1024,
            tiles.score
        ))),
        "{csv}"
    );
}

const POLICY_C: &str = r#"
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define PAGE 4096
#define PAGES 64
#define LONGS (PAGE / sizeof(long))
static long sweep(long *a) {
  long s = 0;
  for (unsigned i = 0; i < PAGES * LONGS; i++) a[i] = i & 7;
  for (unsigned i = 0; i < PAGES * LONGS; i++) s += a[i];
  return s;
}
int main(void) {
  if (numa_available() < 0) { puts("no numa"); return 0; }
  /* libnuma: pages interleaved over every node */
  long *inter = numa_alloc_interleaved(PAGES * PAGE); /* MARK_INTERLEAVED */
  /* numa_alloc_local: pages on the node of the thread that touches them */
  long *local = numa_alloc_local(PAGES * PAGE); /* MARK_LOCAL */
  /* set_mempolicy: the thread's later first touches interleaved over every node */
  long *later = aligned_alloc(PAGE, PAGES * PAGE); /* MARK_LATER */
  /* numa_alloc_onnode: pages bound to node 0 (pinned pages, NUMAPROF's term) */
  long *bound = numa_alloc_onnode(PAGES * PAGE, 0); /* MARK_BOUND */
  long s = sweep(inter) + sweep(local) + sweep(bound);
  set_mempolicy(MPOL_INTERLEAVE, numa_all_nodes_ptr->maskp, numa_all_nodes_ptr->size + 1);
  s += sweep(later);
  set_mempolicy(MPOL_DEFAULT, NULL, 0);
  printf("%ld\n", s);
  numa_free(inter, PAGES * PAGE);
  numa_free(local, PAGES * PAGE);
  numa_free(bound, PAGES * PAGE);
  free(later);
  return 0;
}
"#;

/// Memory policies under `emulate` with 2 nodes: libnuma's interleaved pages alternate
/// between the nodes, so the main thread (node 0) finds exactly half of them remote; its
/// `numa_alloc_local` and `numa_alloc_onnode(.., 0)` pages are all local, the latter pinned;
/// after `set_mempolicy(MPOL_INTERLEAVE)` its first touches alternate too. Under `thread` (no
/// nodes) policies do not apply: all local.
#[test]
fn libnuma_interleave_and_set_mempolicy_place_pages_on_alternate_nodes() {
    let s = Scratch::new();
    build_scalar(&s, "policy", POLICY_C, &["-lnuma"]);
    let per = 64 * 512u64; // writes, then as many reads
    for (options, half) in [
        ("summary=0:numa=emulate:numa_nodes=2", true),
        ("summary=0", false),
    ] {
        let (out, prof) = s.run_profiled("policy", &[], options);
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("{}\n", 4 * 64 * 512 / 8 * 28),
            "the program's output"
        );
        let r = report(&s.path("policy.profile.json"), &[]);
        let n = &r.numa.as_ref().expect("a numa section").inputs[0];
        let at = |mark: &str| {
            let line = format!("policy.c:{}", line_of(POLICY_C, mark));
            n.objects
                .iter()
                .find(|o| {
                    o.allocated_at
                        .as_deref()
                        .is_some_and(|a| a.ends_with(&line))
                })
                .unwrap_or_else(|| panic!("{options}: no object at {line}: {:#?}", n.objects))
        };
        for mark in ["MARK_INTERLEAVED", "MARK_LATER"] {
            let o = at(mark);
            let remote = if half { per } else { 0 };
            assert_eq!(
                (o.pages, o.local, o.remote),
                (64, 2 * per - remote, remote),
                "{options}: {mark}: {o:?}"
            );
        }
        for mark in ["MARK_LOCAL", "MARK_BOUND"] {
            let o = at(mark);
            assert_eq!(
                (o.pages, o.local, o.remote),
                (64, 2 * per, 0),
                "{options}: {mark}: {o:?}"
            );
            // Only a binding policy pins pages, and only under `emulate`.
            let pinned = half && mark == "MARK_BOUND";
            assert_eq!(
                o.unpinned_page,
                if pinned { 0 } else { 2 * per },
                "{options}: {mark}: {o:?}"
            );
        }
        // Under `emulate` the bound block's pages are pinned: the main thread's accesses to
        // unpinned pages are all of its accesses but those.
        if half {
            let main = &prof.numa.as_ref().unwrap().threads[0];
            assert_eq!(main.thread, 0);
            assert_eq!(
                main.unpinned_page,
                main.local + main.remote - 2 * per,
                "{main:?}"
            );
        }
    }
}

/// The policy wrappers do not change what links: a program that calls `mbind` without
/// libnuma fails to link under profcc as under clang-22 (autoconf's `AC_SEARCH_LIBS` finds the
/// same library), and links under both with `-lnuma` or the library's path.
#[test]
fn mbind_without_libnuma_fails_to_link_as_with_clang() {
    let s = Scratch::new();
    s.write(
        "m.c",
        "long mbind(void *, unsigned long, int, const unsigned long *, unsigned long, unsigned);\nint main(void) { return (int)mbind(0, 0, 0, 0, 0, 0) == 12345; }\n",
    );
    let link = |cc: &std::path::Path, extra: &[&str]| {
        std::process::Command::new(cc)
            .current_dir(s.path(""))
            .args(["m.c", "-o", "m"])
            .args(extra)
            .env("PROFCC_INSTRUMENT", "numa")
            .output()
            .unwrap()
            .status
            .success()
    };
    let clang = std::path::PathBuf::from("clang-22");
    assert!(
        !link(&clang, &[]) && !link(&profcc(), &[]),
        "no libnuma: no link"
    );
    assert!(link(&clang, &["-lnuma"]) && link(&profcc(), &["-lnuma"]));
    let path = "/usr/lib/x86_64-linux-gnu/libnuma.so";
    assert!(link(&clang, &[path]) && link(&profcc(), &[path]));
}

const WAITS_C: &str = r#"
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#define ROUNDS 3
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t b;
static volatile int worker_tid, ready, counter;
/* Whether thread `tid` sleeps (blocked in the kernel): /proc/self/task/TID/stat's state. */
static int blocked(int tid) {
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *s = strrchr(buf, ')');
  return s && s[2] == 'S';
}
static void *worker(void *arg) {
  (void)arg;
  for (int r = 0; r < ROUNDS; r++) {
    pthread_barrier_wait(&b);              /* round start */
    __atomic_store_n(&worker_tid, (int)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&m);                /* MARK_CONTENDED: main holds it until we sleep */
    counter++;
    while (!ready) pthread_cond_wait(&c, &m); /* MARK_COND: main signals once we sleep */
    ready = 0;
    pthread_mutex_unlock(&m);
  }
  return NULL;
}
int main(void) {
  pthread_barrier_init(&b, NULL, 2);
  pthread_t t;
  pthread_create(&t, NULL, worker, NULL);
  for (int r = 0; r < ROUNDS; r++) {
    pthread_mutex_lock(&m);
    pthread_barrier_wait(&b);
    while (!__atomic_load_n(&worker_tid, __ATOMIC_SEQ_CST)) sched_yield();
    while (!blocked(worker_tid)) usleep(1000); /* the worker waits for the mutex */
    pthread_mutex_unlock(&m);
    for (;;) {                              /* the worker waits on the condition variable */
      pthread_mutex_lock(&m);
      int waiting = counter == r + 1 && blocked(worker_tid);
      if (waiting) { ready = 1; pthread_cond_signal(&c); }
      pthread_mutex_unlock(&m);
      if (waiting) break;
      usleep(1000);
    }
    while (ready) sched_yield();
    worker_tid = 0;
  }
  pthread_join(t, NULL);
  printf("%d\n", counter);
  return 0;
}
"#;

/// Migration risk: the waits of a lock-heavy program, counted per thread. The worker finds the
/// mutex held in each of 3 rounds (the main thread lets go only once the kernel says the
/// worker sleeps), waits on the condition variable once per round, and one of the two
/// threads waits at each round's barrier (the last to arrive does not).
#[test]
fn a_lock_heavy_program_counts_each_threads_waits() {
    let s = Scratch::new();
    s.write("waits.c", WAITS_C);
    s.compile_env(
        &profcc(),
        &["-O2", "-g", "-pthread", "waits.c", "-o", "waits"],
        &[("PROFCC_INSTRUMENT", "numa")],
    );
    let (out, p) = s.run_profiled("waits", &[], "summary=0");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "3\n");
    let n = p.numa.expect("a numa section");
    let (main, worker) = (&n.threads[0], &n.threads[1]);
    assert_eq!(
        (worker.waits.mutex, worker.waits.cond),
        (3, 3),
        "{worker:?}"
    );
    assert_eq!(main.waits.cond, 0, "{main:?}");
    assert_eq!(
        main.waits.barrier + worker.waits.barrier,
        3,
        "{main:?} {worker:?}"
    );
    let text = sh(std::process::Command::new(profcc())
        .arg("report")
        .arg(s.path("waits.profile.json")));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("  migration risk: threads waited "), "{text}");
}

const GROUPS_C: &str = r#"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define N 4096 /* ints: 4 pages per thread */
static int *arr[4];
static long sums[4];
static pthread_barrier_t b;
static long touch_and_read(int k, int own_reads) {
  long s = 0;
  for (int i = 0; i < N; i++) arr[k][i] = k + i;      /* first touch: its own pages */
  pthread_barrier_wait(&b);
  for (int r = 0; r < own_reads; r++)
    for (int i = 0; i < N; i++) s += arr[k][i];
  pthread_barrier_wait(&b);                           /* its partner is done with them */
  for (int i = 0; i < N; i++) s += arr[k ^ 1][i];     /* its partner's pages: remote */
  return s;
}
static void *heavy(void *a) { long k = (long)a; sums[k] = touch_and_read(k, 5); return NULL; }
static void *light(void *a) { long k = (long)a; sums[k] = touch_and_read(k, 0); return NULL; }
int main(void) {
  for (int k = 0; k < 4; k++) arr[k] = aligned_alloc(4096, N * sizeof(int));
  pthread_barrier_init(&b, NULL, 4);
  pthread_t t[4];
  for (long k = 0; k < 4; k++) pthread_create(&t[k], NULL, k < 2 ? heavy : light, (void *)k);
  long s = 0;
  for (int k = 0; k < 4; k++) { pthread_join(t[k], NULL); s += sums[k]; }
  printf("%ld\n", s);
  return 0;
}
"#;

/// Imbalance and the binding plan: two `heavy` threads (overhead about 8 N each: 6 N local,
/// N remote) and two `light` ones (about 3 N); the threads of each pair (1-2, 3-4) read each
/// other's pages. The groups' overheads ask for 3 heavy threads and 1 light one; the plan for
/// 2 nodes puts each pair on one node.
#[test]
fn two_thread_groups_with_unequal_work_get_recommended_counts_and_a_plan() {
    let s = Scratch::new();
    build_scalar(&s, "groups", GROUPS_C, &["-pthread"]);
    let (out, _) = s.run_profiled("groups", &[], "summary=0:numa_nodes=2");
    // Thread k's sum: its own array (k + i) read 5 times by the heavy ones, its partner's once.
    let array = |k: i64| 4096 * k + 4095 * 4096 / 2;
    let sums: i64 = (0..4)
        .map(|k| if k < 2 { 5 } else { 0 } * array(k) + array(k ^ 1))
        .sum();
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{sums}\n"));
    let profile = s.path("groups.profile.json");
    let r = report(&profile, &[]);
    let n = &r.numa.as_ref().expect("a numa section").inputs[0];
    let routines: Vec<Option<&str>> = n.threads.iter().map(|t| t.routine.as_deref()).collect();
    assert_eq!(
        routines,
        vec![
            None,
            Some("heavy"),
            Some("heavy"),
            Some("light"),
            Some("light")
        ]
    );
    let groups: Vec<(&str, u32, u32)> = n
        .groups
        .iter()
        .map(|g| (g.routine.as_str(), g.threads, g.recommended))
        .collect();
    assert_eq!(
        groups,
        vec![("heavy", 2, 3), ("light", 2, 1)],
        "{:?}",
        n.groups
    );
    // The four blocks (allocated in an unrolled loop: several code addresses, one line) are
    // one object: each written first by its thread (local), read 5 times more by the heavy
    // ones (local) and once by the partner (remote, a moved page).
    let blocks = n
        .objects
        .iter()
        .find(|o| o.object.starts_with("heap block allocated at "))
        .unwrap();
    assert_eq!(
        (blocks.instances, blocks.pages, blocks.moved_pages),
        (4, 16, 16),
        "{blocks:?}"
    );
    assert_eq!(
        (blocks.local, blocks.remote),
        (4 * 4096 + 2 * 5 * 4096, 4 * 4096),
        "{blocks:?}"
    );
    assert_eq!(blocks.kind.as_deref(), Some("first touch"));
    let clusters: Vec<(u32, Vec<u32>)> =
        n.plan.iter().map(|c| (c.node, c.threads.clone())).collect();
    assert_eq!(
        clusters,
        vec![(0, vec![1, 2]), (1, vec![3, 4])],
        "{:?}",
        n.plan
    );
    let text = sh(std::process::Command::new(profcc())
        .arg("report")
        .arg(&profile));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("  imbalance: thread groups by start routine"),
        "{text}"
    );
    assert!(text.contains("heavy (2 threads, overhead "), "{text}");
    assert!(
        text.contains("  binding: closest threads together"),
        "{text}"
    );
    assert!(text.contains("OMP_PLACES=\""), "{text}");
    // The binding file: one row per worker, on its cluster's node and that node's CPUs.
    let dir = s.path("csv");
    sh(std::process::Command::new(profcc())
        .args(["report", "--csv"])
        .arg(&dir)
        .arg(&profile));
    let csv = std::fs::read_to_string(dir.join("numa_binding.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    let nodes: Vec<(&str, &str)> = rows.iter().map(|r| (r[2], r[3])).collect();
    assert_eq!(
        nodes,
        vec![("1", "0"), ("2", "0"), ("3", "1"), ("4", "1")],
        "{csv}"
    );
    // A node's CPUs: the CPUs the run could use, split in order in 2 (fewer nodes when
    // there are fewer CPUs).
    let allowed = profcc_schema::read(&profile)
        .unwrap()
        .numa
        .unwrap()
        .allowed_cpus;
    let (mine, _) = cpus();
    assert_eq!(
        allowed,
        mine.iter().map(|&c| c as u32).collect::<Vec<_>>(),
        "the profile records the run's CPUs"
    );
    for r in &rows {
        let node: usize = r[3].parse().unwrap();
        assert_eq!(r[4], plan_cpus(&allowed, 2)[node], "{csv}");
    }
}

/// The plan's CPUs of each node (as a CPU list): `allowed` split in order into
/// `min(nodes, CPUs)` parts, the first ones a CPU larger when they do not divide evenly.
fn plan_cpus(allowed: &[u32], nodes: usize) -> Vec<String> {
    let nodes = nodes.min(allowed.len()).max(1);
    let mut out = Vec::new();
    let mut at = 0;
    for k in 0..nodes {
        let m = allowed.len() / nodes + usize::from(k < allowed.len() % nodes);
        let part = &allowed[at..at + m];
        at += m;
        let contiguous = part.windows(2).all(|w| w[1] == w[0] + 1);
        out.push(if !contiguous {
            part.iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(",")
        } else if m == 1 {
            part[0].to_string()
        } else {
            format!("{}-{}", part[0], part[m - 1])
        });
    }
    out
}

const MANY_C: &str = r#"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define T 256
#define INTS 1024 /* one page per thread */
static int *blocks[T];
static long sums[T];
static pthread_barrier_t b;
static void *worker(void *arg) {
  long k = (long)arg;
  for (int i = 0; i < INTS; i++) blocks[k][i] = (int)k;      /* its own page, first */
  pthread_barrier_wait(&b);
  long s = 0;
  for (int i = 0; i < INTS; i++) s += blocks[(k + 1) % T][i]; /* its neighbour's page */
  sums[k] = s;
  return NULL;
}
int main(void) {
  for (int k = 0; k < T; k++) blocks[k] = aligned_alloc(4096, INTS * sizeof(int));
  pthread_barrier_init(&b, NULL, T);
  pthread_t t[T];
  for (long k = 0; k < T; k++) pthread_create(&t[k], NULL, worker, (void *)k);
  long s = 0;
  for (int k = 0; k < T; k++) { pthread_join(t[k], NULL); s += sums[k]; }
  printf("%ld\n", s);
  return 0;
}
"#;

/// 256 threads (the issue's upper core count): each its own home under `numa=thread`, each
/// touches its page first and reads its neighbour's: the blocks' 256 pages have exactly
/// 256 x 1024 local writes and as many remote reads, every page moved to one other thread.
#[test]
fn two_hundred_fifty_six_threads_each_read_a_neighbours_page() {
    let s = Scratch::new();
    build_scalar(&s, "many", MANY_C, &["-pthread"]);
    let (out, p) = s.run_profiled("many", &[], "summary=0");
    let want: i64 = (0..256i64).map(|k| ((k + 1) % 256) * 1024).sum();
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{want}\n"));
    let n = p.numa.as_ref().expect("a numa section");
    assert_eq!(n.threads.len(), 257);
    assert_sites_add_up(n);
    let homes: std::collections::BTreeSet<u32> = n.threads.iter().map(|t| t.home).collect();
    assert_eq!(homes.len(), 257, "a home per thread");
    for t in &n.threads[1..] {
        // Its block's page, and for one of them the page of `sums` it writes first.
        assert!((1..=2).contains(&t.first_touches), "{t:?}");
        assert!(t.remote >= 1024, "{t:?}");
    }
    let r = report(&s.path("many.profile.json"), &[]);
    let objects = &r.numa.as_ref().unwrap().inputs[0].objects;
    let blocks = objects
        .iter()
        .find(|o| o.object.starts_with("heap block allocated at "))
        .unwrap();
    assert_eq!(
        (
            blocks.pages,
            blocks.local,
            blocks.remote,
            blocks.moved_pages
        ),
        (256, 256 * 1024, 256 * 1024, 256),
        "{blocks:?}"
    );
    // By thread: each worker its 1,024 writes to its own page and 1,024 reads of its
    // neighbour's, on pages of two threads each.
    let by: Vec<(u32, u64)> = blocks
        .by_thread
        .iter()
        .map(|t| (t.thread, t.accesses))
        .collect();
    assert_eq!(by, (1..=256).map(|t| (t, 2048)).collect::<Vec<_>>());
    assert_eq!(blocks.unsplit, 0);
}

const OMP_BARRIERS_C: &str = r#"
#include <omp.h>
#include <stdio.h>
#define ROUNDS 5
#define N 4096
static double a[N];
int main(void) {
  double s = 0;
#pragma omp parallel num_threads(2) reduction(+ : s)
  for (int r = 0; r < ROUNDS; r++) {
#pragma omp for schedule(static) /* MARK_FOR: an implicit barrier after each loop */
    for (int i = 0; i < N; i++) a[i] += i * r;
    s += a[omp_get_thread_num()];
  }
  printf("%.0f\n", s > 0 ? 1.0 : 0.0);
  return 0;
}
"#;

/// OpenMP's barriers are waits too (libomp's `__kmpc_barrier`, wrapped at the link): each of
/// the two threads of the team waits at the barrier after each of the 5 worksharing loops.
#[test]
fn openmp_barriers_count_as_waits() {
    let s = Scratch::new();
    s.write("ompb.c", OMP_BARRIERS_C);
    s.compile_env(
        &profcc(),
        &["-O2", "-g", "-fopenmp", "ompb.c", "-o", "ompb"],
        &[("PROFCC_INSTRUMENT", "numa")],
    );
    let (out, p) = s.run_profiled("ompb", &[], "summary=0");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "1\n");
    let n = p.numa.expect("a numa section");
    let barriers: Vec<u64> = n
        .threads
        .iter()
        .filter(|t| t.local + t.remote > 0)
        .map(|t| t.waits.barrier)
        .collect();
    assert_eq!(barriers, vec![5, 5], "{:?}", n.threads);
}

const OMP_LOCKS_C: &str = r#"
#include <omp.h>
#include <stdio.h>
#include <unistd.h>
#define ROUNDS 3
static int inside; /* the round thread 0 is holding the section or lock in */
static long total;
int main(void) {
  omp_lock_t lock;
  omp_init_lock(&lock);
#pragma omp parallel num_threads(2)
  {
    int me = omp_get_thread_num();
    for (int r = 1; r <= ROUNDS; r++) {
      /* Thread 0 takes the section first and holds it 200 ms; thread 1 asks for it only
         once thread 0 is inside, so it waits: exactly one contended entry per round. */
      if (me == 0) {
#pragma omp critical(update)
        {
          __atomic_store_n(&inside, 2 * r - 1, __ATOMIC_RELEASE);
          usleep(200000);
          total += r;
        }
      } else {
        while (__atomic_load_n(&inside, __ATOMIC_ACQUIRE) != 2 * r - 1) {
        }
#pragma omp critical(update)
        total += r;
      }
      /* The same with an OpenMP lock. */
      if (me == 0) {
        omp_set_lock(&lock);
        __atomic_store_n(&inside, 2 * r, __ATOMIC_RELEASE);
        usleep(200000);
        total += r;
        omp_unset_lock(&lock);
      } else {
        while (__atomic_load_n(&inside, __ATOMIC_ACQUIRE) != 2 * r) {
        }
        omp_set_lock(&lock);
        total += r;
        omp_unset_lock(&lock);
      }
    }
  }
  omp_destroy_lock(&lock);
  printf("%ld\n", total);
  return 0;
}
"#;

/// OpenMP's critical sections and locks count as mutex waits when contended: thread 1 asks
/// for each while thread 0 holds it (3 rounds of a section and a lock: 6 waits); thread 0
/// never finds them taken (0).
#[test]
fn openmp_critical_sections_and_locks_count_contended_entries() {
    let s = Scratch::new();
    s.write("ompl.c", OMP_LOCKS_C);
    s.compile_env(
        &profcc(),
        &["-O2", "-g", "-fopenmp", "ompl.c", "-o", "ompl"],
        &[("PROFCC_INSTRUMENT", "numa")],
    );
    let (out, p) = s.run_profiled("ompl", &[], "summary=0");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "24\n");
    let n = p.numa.expect("a numa section");
    let mutex: Vec<(u32, u64)> = n
        .threads
        .iter()
        .filter(|t| t.local + t.remote > 0)
        .map(|t| (t.thread, t.waits.mutex))
        .collect();
    assert_eq!(mutex.len(), 2, "{:?}", n.threads);
    assert_eq!((mutex[0].1, mutex[1].1), (0, 6), "{:?}", n.threads);
}

const ACCUMULATE_C: &str = r#"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define N 100000
/* A partial sum the optimiser cannot keep in a register (sum and a may alias): one store to
 * the same address per iteration, whose page count the pass moves to the loop's exit. */
__attribute__((noinline)) void accumulate(double *sum, const double *a, long n) {
  for (long i = 0; i < n; i++) *sum += a[i] * a[i];
}
static double *a, *sum;
static void *worker(void *arg) {
  (void)arg;
  accumulate(sum, a, N);
  return NULL;
}
int main(void) {
  a = malloc(N * sizeof *a);
  for (long i = 0; i < N; i++) a[i] = (double)(i & 3);
  sum = aligned_alloc(4096, 4096);
  *sum = 0;
  double *unused = aligned_alloc(4096, 4096);
  accumulate(unused, a, 0); /* no iteration: *unused is never read, its page never touched */
  pthread_t t;
  pthread_create(&t, NULL, worker, NULL);
  pthread_join(t, NULL);
  printf("%.0f %lx %lx\n", *sum, (unsigned long)sum, (unsigned long)unused);
  return 0;
}
"#;

/// A loop-invariant address counted once at its loop's exit (docs/numa.md, "Cost") keeps the
/// counts exact: the worker's N stores to the main thread's page and its one load before the
/// loop are all remote, the main thread's two accesses local; the call with no iteration
/// touches no page (the block it passes is never counted or first-touched).
#[test]
fn a_partial_sum_counted_at_its_loops_exit_keeps_exact_counts() {
    let s = Scratch::new();
    s.write("acc.c", ACCUMULATE_C);
    s.compile_env(
        &profcc(),
        &["-O2", "-g", "-pthread", "acc.c", "-o", "acc"],
        &[("PROFCC_INSTRUMENT", "numa")],
    );
    let (out, p) = s.run_profiled("acc", &[], "summary=0");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let words: Vec<&str> = stdout.split_whitespace().collect();
    assert_eq!(words[0], "350000");
    let addr = u64::from_str_radix(words[1], 16).unwrap();
    let unused = u64::from_str_radix(words[2], 16).unwrap();
    let numa = p.numa.clone().unwrap();
    assert_sites_add_up(&numa);
    for t in &numa.threads {
        assert_eq!(t.local + t.remote, exact(&p, t.thread), "{t:?}");
    }
    let o = numa.objects.iter().find(|o| o.address == addr).unwrap();
    assert_eq!((o.accesses, o.remote), (100_003, 100_001), "{o:?}");
    assert!(
        numa.first_touch
            .iter()
            .all(|f| f.address >> 12 != unused >> 12),
        "{:?}",
        numa.first_touch
    );
    assert!(
        numa.objects
            .iter()
            .all(|o| o.address != unused || (o.accesses, o.pages) == (0, 0)),
        "{:?}",
        numa.objects
    );
}

// ---- Fix classes by model (issue 43): the class follows the model and the evidence ----

/// Build fixture `numa/NAME.c` with `PROFCC_INSTRUMENT=numa` (scalar, as [`build_scalar`]),
/// run it under `options`, and return the report model, its text, the fixture's source and
/// the profile's path.
fn fix_case(
    s: &Scratch,
    name: &str,
    flag: &str,
    options: &str,
) -> (profcc_report::Report, String, String, std::path::PathBuf) {
    let src = std::fs::read_to_string(fixture(&format!("numa/{name}.c"))).unwrap();
    build_scalar(s, name, &src, &[flag]);
    let (out, _) = s.run_profiled(name, &[], options);
    assert_eq!(out.status.code(), Some(0), "{name}");
    let profile = s.path(&format!("{name}.profile.json"));
    let r = report(&profile, &[]);
    let text = sh(std::process::Command::new(profcc())
        .arg("report")
        .arg(&profile));
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert_plan_printed_where_named(&text);
    (r, text, src, profile)
}

/// The text names the binding plan only where it prints one.
fn assert_plan_printed_where_named(text: &str) {
    if text.contains("plan below") {
        assert!(
            text.contains("  binding: closest threads together"),
            "{text}"
        );
    }
    assert!(!text.contains("(the plan)"), "{text}");
}

/// The NUMA findings of a report as (kind, object name).
fn numa_findings(r: &profcc_report::Report) -> Vec<(String, String)> {
    r.findings
        .iter()
        .filter(|f| f.analysis == profcc_analysis::findings::Analysis::Numa)
        .map(|f| {
            (
                f.kind.clone(),
                f.objects
                    .first()
                    .map(|o| o.name.clone())
                    .unwrap_or_default(),
            )
        })
        .collect()
}

/// The models where a thread's node cannot change: `thread`, and `emulate` without binding.
const FIXED_MODELS: [&str; 2] = ["summary=0", "summary=0:numa=emulate:numa_nodes=2"];

/// An array all four workers read and write (gapbs's shared pvector): every page used by
/// all of them, so `remote access` (interleave), never `binding`, under both models.
/// Exact counts: the init writes N (local), then 4 rounds of a read and a write of each
/// element, 3/4 of them (thread model) or 1/2 (2 nodes) on another home; then the main
/// thread reads one int per page: 64 remote (thread model) or the 32 of node 1 (2 nodes).
#[test]
fn an_array_all_threads_read_and_write_is_interleaved_not_bound() {
    const N: u64 = 64 * 1024;
    let remote = [3 * N * 4 * 2 / 4 + 64, N * 4 * 2 / 2 + 32];
    for (options, remote) in FIXED_MODELS.iter().zip(remote) {
        let s = Scratch::new();
        let (r, text, src, _) = fix_case(&s, "shared_rw", "-pthread", options);
        let n = &r.numa.as_ref().unwrap().inputs[0];
        let a = n
            .objects
            .iter()
            .find(|o| o.object.starts_with("heap block allocated at "))
            .unwrap();
        assert!(
            a.object
                .ends_with(&format!("shared_rw.c:{}", line_of(&src, "MARK_ALLOC"))),
            "{a:?}"
        );
        assert_eq!(
            (a.pages, a.shared_pages, a.moved_pages, a.remote),
            (64, 64, 0, remote),
            "{options}: {a:?}"
        );
        assert_eq!(a.local + a.remote, N + N * 4 * 2 + 64, "{options}: {a:?}");
        // Pages every thread used, split exactly by thread all the same.
        assert_by_thread_adds_up(n);
        assert!(a.by_thread.len() > 2, "{options}: {a:?}");
        assert_eq!(a.kind.as_deref(), Some("remote access"), "{options}");
        assert!(a.fix.as_deref().unwrap().contains("interleave"));
        let found = numa_findings(&r);
        assert!(
            found.iter().all(|(k, _)| k != "binding"),
            "{options}: {found:?}"
        );
        let at = format!("shared_rw.c:{}", line_of(&src, "MARK_ALLOC"));
        assert!(
            found
                .iter()
                .any(|(k, o)| k == "remote_access" && o.ends_with(&at)),
            "{options}: {found:?}"
        );
        let shared = line_of(&src, "MARK_SHARED");
        assert!(
            text.contains(&format!("shared_rw.c:{shared} in worker: ")),
            "{text}"
        );
        assert!(!text.contains("bind them"), "{text}");
    }
}

/// Per-iteration temporaries in an OpenMP program (LULESH's `Allocate`): the small
/// temporary lands on pages the big one's first touch placed, so thread 1's half of it is
/// remote. `reused pages` (hoist, or a buffer per thread), never `binding`, under both
/// models; every one of its pages recycled.
#[test]
fn per_iteration_temporaries_are_hoisted_not_bound() {
    for options in FIXED_MODELS {
        let s = Scratch::new();
        let (r, text, src, _) = fix_case(&s, "temporaries", "-fopenmp", options);
        let n = &r.numa.as_ref().unwrap().inputs[0];
        let at = format!("temporaries.c:{}", line_of(&src, "MARK_TMP"));
        let tmp = n
            .objects
            .iter()
            .find(|o| o.object.ends_with(&at))
            .unwrap_or_else(|| panic!("{options}: {:#?}", n.objects));
        assert_by_thread_adds_up(n);
        // 8 blocks of 512 pages, each on pages freed blocks held.
        assert_eq!(
            (tmp.instances, tmp.pages, tmp.reused_pages),
            (8, 8 * 512, 8 * 512),
            "{options}: {tmp:?}"
        );
        assert!(
            tmp.remote as f64 >= 0.1 * (tmp.local + tmp.remote) as f64,
            "{options}: {tmp:?}"
        );
        // Per thread: thread 1 writes and reads its half of every temporary (8 x N accesses,
        // all on pages thread 0 placed) and loads 6 of the regions' captured variables from
        // the main thread's stack per iteration; the one page where the big block's halves
        // meet (not page-aligned) goes to whichever thread touched it first, up to 2 x 512
        // more per iteration. Per object the temporary's share is a lower bound: thread 1's
        // counts still in its page cache when the main thread frees a temporary go to the
        // next block on those pages (docs/numa.md, "Objects"); every remote access is in
        // some object.
        const N: u64 = 256 * 1024;
        let t1 = n.threads.iter().find(|t| t.thread == 1).unwrap();
        assert!(
            (8 * N + 8 * 6..=8 * N + 8 * 6 + 8 * 2 * 512).contains(&t1.remote),
            "{options}: {t1:?}"
        );
        let main_stack = n
            .objects
            .iter()
            .find(|o| o.object == "stack of thread 0")
            .unwrap();
        assert_eq!(main_stack.remote, 8 * 6, "{options}: {main_stack:?}");
        assert_eq!(
            n.objects.iter().map(|o| o.remote).sum::<u64>(),
            n.remote,
            "{options}"
        );
        assert_eq!(tmp.kind.as_deref(), Some("reused pages"), "{options}");
        let fix = tmp.fix.as_deref().unwrap();
        assert!(
            fix.starts_with("8 blocks allocated here in turn, 4096 of their 4096 pages recycled")
                && fix.contains("hoist the allocation")
                && fix.contains("a buffer per thread"),
            "{fix}"
        );
        let found = numa_findings(&r);
        assert!(
            found
                .iter()
                .any(|(k, o)| k == "reused_pages" && o.ends_with(&at)),
            "{options}: {found:?}"
        );
        assert!(
            found.iter().all(|(k, _)| k != "binding"),
            "{options}: {found:?}"
        );
        assert!(!text.contains("bind them"), "{text}");
    }
}

/// Variables on the main thread's stack read by an OpenMP worker in every iteration
/// (gapbs's `Generator` fields): `shared stack` (a private copy, or accept), nothing
/// array-like (no parallel first-touch loop), under both models.
#[test]
fn main_stack_variables_shared_into_a_region_get_no_array_advice() {
    for options in FIXED_MODELS {
        let s = Scratch::new();
        let (r, text, _, _) = fix_case(&s, "main_stack", "-fopenmp", options);
        let n = &r.numa.as_ref().unwrap().inputs[0];
        let stack = n
            .objects
            .iter()
            .find(|o| o.object == "stack of thread 0")
            .unwrap();
        // Thread 1 reads the three fields for each of its N/2 iterations, and loads the
        // region's two captured variables (`g` and `out`, in fill's frame) once: all remote,
        // exactly, under both models (thread 1 is on node 1 of 2).
        assert_eq!(stack.remote, 3 * (1 << 17) + 2, "{options}: {stack:?}");
        assert_eq!(stack.kind.as_deref(), Some("shared stack"), "{options}");
        let fix = stack.fix.as_deref().unwrap();
        assert!(
            fix.contains("firstprivate") && fix.contains("accept it"),
            "{fix}"
        );
        assert!(!fix.contains("parallel loop"), "{fix}");
        let found = numa_findings(&r);
        assert!(
            found.contains(&("shared_stack".into(), String::new())),
            "{options}: {found:?}"
        );
        assert!(
            found
                .iter()
                .all(|(k, _)| k != "first_touch" && k != "binding"),
            "{options}: {found:?}"
        );
        assert!(!text.contains("initialise it in a parallel loop"), "{text}");
    }
}

/// Each worker touches its own half first: nothing to fix. The page where the halves meet
/// has a few remote accesses; they are summed below significance, not listed, under the
/// fixed models and under `real` (one node here: all local, nothing below either).
#[test]
fn halves_touched_by_their_workers_give_no_finding_and_sum_the_boundary_page() {
    for options in FIXED_MODELS.iter().copied().chain(["summary=0:numa=real"]) {
        let s = Scratch::new();
        let (r, text, _, _) = fix_case(&s, "halves", "-pthread", options);
        let n = &r.numa.as_ref().unwrap().inputs[0];
        assert_eq!(numa_findings(&r), vec![], "{options}");
        assert!(n.advice.is_none(), "{options}: {:?}", n.advice);
        assert!(!text.contains("  remote access at "), "{text}");
        if n.model == "real" && n.nodes > 1 {
            continue; // a NUMA machine: the threads' nodes are the kernel's
        }
        // The boundary page: at most one page's accesses per sweep (9 passes of 1024 ints).
        let b = &n.below;
        assert!(n.remote <= 9 * 1024, "{options}: {}", n.remote);
        assert_eq!(b.places_remote, n.remote, "{options}: {b:?}");
        assert_eq!(b.objects_remote, n.remote, "{options}: {b:?}");
        if n.remote > 0 {
            assert!(
                text.contains(&format!(
                    " more place{}, {} remote accesses (100.0% of the run's remote accesses) below significance (listed from {} remote accesses that are 10% of its accesses)",
                    if b.places == 1 { "" } else { "s" },
                    n.remote,
                    profcc_analysis::numa::SIGNIFICANT_REMOTE
                )),
                "{text}"
            );
        }
    }
}

/// Where threads can move (`emulate` with a thread bound after its first touch), binding
/// is the advice: the worker touched its block on node 1, bound itself to a CPU of node 0,
/// and swept it from there. Under `thread` the same run is all local: no finding.
#[test]
fn a_thread_bound_after_its_first_touch_gets_binding_only_where_threads_move() {
    let (allowed, conf) = cpus();
    let s = Scratch::new();
    let (r, _, _, _) = fix_case(&s, "rebind", "-pthread", "summary=0");
    assert_eq!(numa_findings(&r), vec![], "thread model: all local");
    if conf < 2 || !allowed.iter().any(|&c| c * 2 < conf) {
        eprintln!("skipped the emulate half: no CPU of node 0 allowed");
        return;
    }
    let s = Scratch::new();
    let (r, text, src, _) = fix_case(
        &s,
        "rebind",
        "-pthread",
        "summary=0:numa=emulate:numa_nodes=2",
    );
    let n = &r.numa.as_ref().unwrap().inputs[0];
    let at = format!("rebind.c:{}", line_of(&src, "MARK_ALLOC"));
    let a = n.objects.iter().find(|o| o.object.ends_with(&at)).unwrap();
    // 16 pages written once on node 1 (local), then read 4 times from node 0 (remote).
    const N: u64 = 16 * 1024;
    assert_eq!(
        (a.pages, a.moved_pages, a.shared_pages, a.local, a.remote),
        (16, 0, 0, N, 4 * N),
        "{a:?}"
    );
    assert_eq!(a.kind.as_deref(), Some("binding"));
    assert!(text.contains("bind them"), "{text}");
    assert!(
        numa_findings(&r)
            .iter()
            .any(|(k, o)| k == "binding" && o.ends_with(&at)),
        "{:?}",
        numa_findings(&r)
    );
}

/// The binding plan is printed where the text names it, and `numa_binding.csv` carries its
/// rows (one per worker, the cluster's node and CPUs; docs/report.md).
#[test]
fn the_binding_plan_is_printed_where_named_and_written_to_numa_binding_csv() {
    let s = Scratch::new();
    let (r, text, _, profile) = fix_case(&s, "shared_rw", "-pthread", "summary=0:numa_nodes=2");
    let n = &r.numa.as_ref().unwrap().inputs[0];
    assert!(!n.plan.is_empty(), "{n:?}");
    assert!(
        text.contains("the binding plan below places each thread"),
        "{text}"
    );
    assert!(
        text.contains("  binding: closest threads together"),
        "{text}"
    );
    for l in &n.plan_lines {
        assert!(text.contains(&format!("    {l}\n")), "{text}");
    }
    let dir = s.path("csv");
    sh(std::process::Command::new(profcc())
        .args(["report", "--csv"])
        .arg(&dir)
        .arg(&profile));
    let csv = std::fs::read_to_string(dir.join("numa_binding.csv")).unwrap();
    let mut want = vec!["input,rank,thread,node,cpus,unbalanced".to_string()];
    for c in &n.plan {
        for t in &c.threads {
            want.push(format!(
                "0,,{t},{},{},{}",
                c.node,
                c.cpu_list,
                c.unbalanced.contains(t)
            ));
        }
    }
    assert_eq!(csv.lines().collect::<Vec<_>>(), want, "{csv}");
    assert_plan_names_only_the_runs_cpus(&profile, n, &text, 2);
    let workers: Vec<u32> = {
        let mut w: Vec<u32> = n.plan.iter().flat_map(|c| c.threads.clone()).collect();
        w.sort();
        w
    };
    assert_eq!(workers, vec![1, 2, 3, 4]);
}

/// Two threads that both keep reading and writing an array (gapbs's `pvector.h:30` with 2
/// threads): each page is used by its first toucher and one other thread, and the toucher
/// kept using it after the other came, so the page is shared by the two (`kept_pages`), not
/// moved: `remote access` (interleave, or accept), never `first touch` or `binding`, under
/// both fixed models. Exact counts: each worker writes its half once (local), then in each
/// of 8 rounds reads and writes half the elements of every page, the other half's remote.
#[test]
fn two_threads_that_keep_using_each_others_pages_share_them() {
    const N: u64 = 128 * 1024;
    const ROUNDS: u64 = 8;
    shared_by_two("shared_two", (N + ROUNDS * N * 2, ROUNDS * N));
}

/// The same sharing, with the second thread joining late: worker 0 touches the array and
/// updates it 8 times alone before the other thread comes; then both keep reading and writing
/// it. The class compares the two threads after the other came (the page's balance), so the
/// toucher's long time alone does not make the pages look moved: `remote access`, never
/// `first touch`, as in the test above (sqlite's `aSyscall`, read by two workers started at
/// different times, was `remote access` or `first touch` from run to run when the toucher's
/// accesses after the other came were compared with all of the page's). Exact counts: N
/// writes, 8 rounds of a read and a write of every element by worker 0, then 8 rounds of
/// half the elements by each worker, worker 1's remote.
#[test]
fn a_thread_that_joins_late_shares_the_pages_its_toucher_keeps_using() {
    const N: u64 = 128 * 1024;
    const LONE: u64 = 8;
    const SHARED: u64 = 8;
    shared_by_two("late_join", (N + 2 * N * LONE + 2 * N * SHARED, N * SHARED));
}

/// Fixture `name`'s array (allocated on its `MARK_ALLOC` line, 128 pages) under both fixed
/// models: every page shared by its toucher and one other thread that kept using it, with
/// `(accesses, remote)`; `remote access` with interleave as its fix, its finding, no
/// `first touch` or `binding`.
fn shared_by_two(name: &str, (accesses, remote): (u64, u64)) {
    for options in FIXED_MODELS {
        let s = Scratch::new();
        let (r, text, src, _) = fix_case(&s, name, "-pthread", options);
        let n = &r.numa.as_ref().unwrap().inputs[0];
        let at = format!("{name}.c:{}", line_of(&src, "MARK_ALLOC"));
        let a = n
            .objects
            .iter()
            .find(|o| o.object.ends_with(&at))
            .unwrap_or_else(|| panic!("{options}: {:#?}", n.objects));
        assert_eq!(
            (
                a.pages,
                a.shared_pages,
                a.kept_pages,
                a.moved_pages,
                a.local + a.remote,
                a.remote
            ),
            (128, 128, 128, 0, accesses, remote),
            "{options}: {a:?}"
        );
        assert_eq!(a.kind.as_deref(), Some("remote access"), "{options}: {a:?}");
        let fix = a.fix.as_deref().unwrap();
        assert!(fix.contains("interleave"), "{fix}");
        let found = numa_findings(&r);
        assert!(
            found
                .iter()
                .any(|(k, o)| k == "remote_access" && o.ends_with(&at)),
            "{options}: {found:?}"
        );
        assert!(
            found
                .iter()
                .all(|(k, _)| k != "first_touch" && k != "binding"),
            "{options}: {found:?}"
        );
        assert!(!text.contains("bind them"), "{text}");
    }
}

/// An array the main thread initialises and a worker then reads and writes alone: each page
/// moved to the worker (its toucher never used it after the worker came), so `first touch`
/// with the worker's byte range, under both fixed models. Exact counts: N writes by main
/// (local), then 8 rounds of a read and a write of each element by the worker, all remote.
#[test]
fn an_array_one_thread_initialises_and_another_uses_is_first_touch() {
    const N: u64 = 128 * 1024;
    const ROUNDS: u64 = 8;
    for options in FIXED_MODELS {
        let s = Scratch::new();
        let (r, text, src, _) = fix_case(&s, "handed_over", "-pthread", options);
        let n = &r.numa.as_ref().unwrap().inputs[0];
        let at = format!("handed_over.c:{}", line_of(&src, "MARK_ALLOC"));
        let a = n
            .objects
            .iter()
            .find(|o| o.object.ends_with(&at))
            .unwrap_or_else(|| panic!("{options}: {:#?}", n.objects));
        assert_eq!(
            (
                a.pages,
                a.shared_pages,
                a.kept_pages,
                a.moved_pages,
                a.local,
                a.remote
            ),
            (128, 0, 0, 128, N, ROUNDS * N * 2),
            "{options}: {a:?}"
        );
        assert_eq!(a.kind.as_deref(), Some("first touch"), "{options}: {a:?}");
        let found = numa_findings(&r);
        assert!(
            found
                .iter()
                .any(|(k, o)| k == "first_touch" && o.ends_with(&at)),
            "{options}: {found:?}"
        );
        assert!(!text.contains("bind them"), "{text}");
        assert!(
            found
                .iter()
                .all(|(k, o)| k != "binding" && !(k == "remote_access" && o.ends_with(&at))),
            "{options}: {found:?}"
        );
    }
}

/// Every CPU the plan names (clusters, OpenMP places, pthread lines) is one the run could use
/// (the profile's `allowed_cpus`), and the plan says how many nodes it is for, over which CPUs.
fn assert_plan_names_only_the_runs_cpus(
    profile: &std::path::Path,
    n: &profcc_report::model::NumaInput,
    text: &str,
    asked: usize,
) {
    let allowed = profcc_schema::read(profile)
        .unwrap()
        .numa
        .unwrap()
        .allowed_cpus;
    assert!(!allowed.is_empty());
    let want = plan_cpus(&allowed, asked);
    for c in &n.plan {
        assert_eq!(c.cpu_list, want[c.node as usize], "{:?}", n.plan);
        assert!(
            text.contains(&format!("node {} (CPUs {})", c.node, c.cpu_list)),
            "{text}"
        );
        assert!(
            n.plan_lines
                .iter()
                .any(|l| l.contains(&format!("CPUs {} in their start routine", c.cpu_list))),
            "{:?}",
            n.plan_lines
        );
    }
    let nodes = asked.min(allowed.len());
    let list = want.join(",");
    assert!(
        text.contains(&format!("NumaPerf's plan for {nodes} nodes")),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "over the {} CPUs this run could use",
            allowed.len()
        )),
        "{text}"
    );
    if nodes < asked {
        assert!(
            text.contains(&format!(
                "not the {asked} of numa_nodes: fewer CPUs than nodes"
            )),
            "{text}"
        );
    }
    // OpenMP places name only allowed CPUs: {first:count} or {a,b,..}.
    let omp = n
        .plan_lines
        .iter()
        .find(|l| l.starts_with("OpenMP"))
        .unwrap();
    let places = omp
        .split("OMP_PLACES=\"")
        .nth(1)
        .unwrap()
        .trim_end_matches('"');
    for p in places.split("},{") {
        let p = p.trim_matches(|c| c == '{' || c == '}');
        let named: Vec<u32> = match p.split_once(':') {
            Some((a, k)) => {
                let (a, k): (u32, u32) = (a.parse().unwrap(), k.parse().unwrap());
                (a..a + k).collect()
            }
            None => p.split(',').map(|c| c.parse().unwrap()).collect(),
        };
        assert!(
            named.iter().all(|c| allowed.contains(c)),
            "{omp} {allowed:?} {list}"
        );
    }
}

/// With the default 4 plan nodes on a machine of fewer CPUs (this 2-CPU VM), the plan has as
/// many nodes as CPUs and names only CPUs the run could use, and says so.
#[test]
fn the_binding_plan_names_only_cpus_the_run_could_use() {
    let s = Scratch::new();
    let (r, text, _, profile) = fix_case(&s, "shared_rw", "-pthread", "summary=0");
    let n = &r.numa.as_ref().unwrap().inputs[0];
    assert!(!n.plan.is_empty(), "{n:?}");
    assert_plan_names_only_the_runs_cpus(&profile, n, &text, 4);
}

/// `profcc report` of many rank profiles builds each input's NUMA part as the input is
/// merged and drops its raw section (memory does not hold every rank's pages and sites,
/// issue 45): the report is the one built from the raw sections after the merge, in the
/// default listing and with every row.
#[test]
fn numa_parts_built_while_merging_equal_those_built_after() {
    let s = Scratch::new();
    sweep_in(&s, "-O2", &[], "summary=0");
    let mut paths = Vec::new();
    for rank in ["0", "1"] {
        let (out, _) = s.run_profiled_env(
            "sweep",
            &[],
            "summary=0:numa=emulate:numa_nodes=2",
            &[("OMPI_COMM_WORLD_RANK", rank.as_ref())],
        );
        assert_eq!(out.status.code(), Some(0));
        let to = s.path(&format!("prof.{rank}.json"));
        std::fs::rename(s.path("sweep.profile.json"), &to).unwrap();
        paths.push(to);
    }
    let read = |p: &std::path::PathBuf| {
        let profile = profcc_schema::read(p).unwrap();
        profcc_report::merge::Input::new(p.display().to_string(), profile, None)
    };
    for top in [10, 0] {
        let opts = profcc_report::sections::Options {
            top,
            live_probe: None,
            ..Default::default()
        };
        let after = profcc_report::merge::Merged::new(paths.iter().map(read).collect());
        let after = profcc_report::sections::build(&after, &opts);
        for per_input in [true, false] {
            let early = profcc_report::merge_files(&paths, per_input, &opts).unwrap();
            assert!(early.inputs.iter().all(|i| i.profile.numa.is_none()));
            let early = profcc_report::sections::build(&early, &opts);
            assert!(early.numa.as_ref().is_some_and(|n| n.inputs.len() == 2));
            assert_eq!(early.numa, after.numa, "top {top}");
            assert_eq!(early.findings, after.findings, "top {top}");
            assert_eq!(early.ranks, after.ranks, "top {top}");
            if per_input {
                assert_eq!(early, after, "top {top}");
            }
        }
    }
}
