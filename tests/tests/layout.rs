//! The instrumented program keeps the native layout (issue 10, item 1): its objects sit at the
//! same address modulo 4096 as in its clang-22 build, so the false sharing profcc measures is
//! the program's own. A program prints the residues of heap blocks, globals of several sizes,
//! alignments and sections, TLS and stacks; the clang-22 and profcc builds are compared at -O0
//! and -O2, PIE and -no-pie, C and C++, with ASLR on and off (`setarch -R`).

use profcc_analysis::sharing::Kind;
use profcc_tests::*;
use std::path::Path;
use std::process::Command;

/// Each line: a tag, then residues: `G`lobals, `H`eap blocks, `M`ain thread's and a `T`hread's
/// thread-locals, the thread's stac`K` top (pthread_attr_getstack) must match; the main
/// `S`tack (argv, environ) too with ASLR off (the kernel places the stack top at random
/// within its page when it is on, natively as well).
const RESIDUES_C: &str = r#"
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#define R(p) ((unsigned)((uintptr_t)(p) & 4095))
char g1[3]; int g2 = 5; double g3[7]; static long g4[100] = {1}; char g5[5000];
_Alignas(64) long g6[9]; static char g7 = 'x'; const int c1[50] = {1, 2}; static const char c2[] = "layout";
short g8; _Alignas(128) char g9[130] = {3};
__thread int t1; __thread char t2[100] = {1}; __thread long t3;
extern char **environ;
static void *th(void *a) {
  void *p = malloc(40), *q = calloc(3, 24);
  printf("H %u %u\n", R(p), R(q));
  printf("T %u %u %u\n", R(&t1), R(t2), R(&t3));
  pthread_attr_t at;
  void *lo; size_t n;
  pthread_getattr_np(pthread_self(), &at);
  pthread_attr_getstack(&at, &lo, &n);
  printf("K %u %u\n", R(lo), R((char *)lo + n));
  return 0;
}
int main(int argc, char **argv) {
  printf("G %u %u %u %u %u %u %u %u %u %u %u\n", R(g1), R(&g2), R(g3), R(g4), R(g5), R(g6), R(&g7),
         R(c1), R(c2), R(&g8), R(g9));
  printf("H %u %u %u %u\n", R(malloc(10)), R(calloc(18, 16)), R(malloc(100000)), R(malloc(64 * 4)));
  printf("S %u %u\n", R(argv), R(environ));
  printf("M %u %u %u\n", R(&t1), R(t2), R(&t3));
  pthread_t t;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, 100000); /* not a multiple of the page: residues show */
  pthread_create(&t, &a, th, 0);
  pthread_join(t, 0);
  printf("H %u %u\n", R(malloc(24)), R(calloc(5, 64)));
  return 0;
}
"#;

/// Without thread-locals of its own: glibc's per-thread vector, calloc'ed in the creating
/// thread, would have one entry more with the runtime's TLS module; the runtime serves it from a
/// side block and gives the program's heap the native-sized twin (rt/csrc/interpose.c), so the
/// blocks allocated after thread starts (`A`: threads started together, then one at a time with
/// a block allocated while each runs, whose stacks glibc reuses) keep their residues too.
const RESIDUES_NO_TLS: &str = r#"
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#define R(p) ((unsigned)((uintptr_t)(p) & 4095))
long counts[8];
static void *th(void *a) { counts[(long)a] += 1; return 0; }
int main(void) {
  printf("G %u\n", R(counts));
  void *first = malloc(10);
  pthread_t t[3];
  for (long i = 0; i < 3; i++) pthread_create(&t[i], 0, th, (void *)i);
  void *mid = calloc(4, 64);
  for (int i = 0; i < 3; i++) pthread_join(t[i], 0);
  printf("H %u\n", R(first));
  printf("A %u %u\n", R(mid), R(malloc(24)));
  unsigned each[4];
  for (long i = 0; i < 4; i++) {
    pthread_t one;
    pthread_create(&one, 0, th, (void *)i);
    each[i] = R(malloc(24));
    pthread_join(one, 0);
  }
  printf("A %u %u %u %u %u\n", each[0], each[1], each[2], each[3], R(calloc(3, 40)));
  return 0;
}
"#;

const RESIDUES_CXX: &str = r#"
#include <cstdint>
#include <cstdio>
#include <vector>
#define R(p) ((unsigned)((uintptr_t)(p) & 4095))
struct alignas(64) Counter { long n; };
Counter counters[4]; int plain = 7; static double zero[3];
int main() {
  printf("G %u %u %u\n", R(counters), R(&plain), R(zero));
  int *a = new int[10]; Counter *c = new Counter[3]; std::vector<long> v(33);
  printf("H %u %u %u\n", R(a), R(c), R(v.data()));
  return 0;
}
"#;

/// Build `src` with clang-22 and profcc (`flags` added), run both `runs` ways, and return
/// each build's output lines per run.
fn residues(
    s: &Scratch,
    name: &str,
    src: &str,
    cxx: bool,
    flags: &[&str],
) -> Vec<(bool, String, String)> {
    let ext = if cxx { "cpp" } else { "c" };
    let file = s.write(&format!("{name}.{ext}"), src);
    let file = file.to_str().unwrap();
    let native = s.path(&format!("{name}.native"));
    let profiled = s.path(&format!("{name}.profcc"));
    let clang = if cxx { "clang++-22" } else { "clang-22" };
    let mut args: Vec<&str> = vec!["-pthread", file, "-o"];
    let mut n = args.clone();
    n.push(native.to_str().unwrap());
    n.extend(flags);
    sh(Command::new(clang).args(&n));
    args.push(profiled.to_str().unwrap());
    args.extend(flags);
    s.compile(&if cxx { profcxx() } else { profcc() }, &args);
    let mut out = Vec::new();
    for aslr_off in [false, true] {
        let run = |exe: &Path| {
            let o = if aslr_off {
                output_within(
                    Command::new("setarch")
                        .arg("-R")
                        .arg(exe)
                        .current_dir(s.path(""))
                        .env("PROFCC_OPTIONS", "summary=0"),
                )
            } else {
                output_within(
                    Command::new(exe)
                        .current_dir(s.path(""))
                        .env("PROFCC_OPTIONS", "summary=0"),
                )
            };
            assert!(o.status.success(), "{}: {:?}", exe.display(), o);
            String::from_utf8_lossy(&o.stdout).into_owned()
        };
        out.push((aslr_off, run(&native), run(&profiled)));
    }
    out
}

fn checked(text: &str, aslr_off: bool) -> Vec<&str> {
    text.lines()
        .filter(|l| aslr_off || !l.starts_with("S "))
        .collect()
}

#[test]
fn globals_heap_tls_and_stacks_keep_their_native_residues() {
    let s = Scratch::new();
    let mut problems = Vec::new();
    for (cxx, src, lines) in [
        (false, RESIDUES_C, 8),
        (false, RESIDUES_NO_TLS, 4),
        (true, RESIDUES_CXX, 2),
    ] {
        for opt in ["-O0", "-O2"] {
            for pie in [None, Some("-no-pie")] {
                let mut flags = vec![opt];
                flags.extend(pie);
                let name = format!("res{}{lines}{}{}", cxx as u8, opt, pie.is_some() as u8);
                for (aslr_off, native, profiled) in residues(&s, &name, src, cxx, &flags) {
                    let (n, p) = (checked(&native, aslr_off), checked(&profiled, aslr_off));
                    if n != p || native.lines().count() != lines {
                        problems.push(format!(
                            "{} {flags:?}:\nclang-22:\n{native}profcc:\n{profiled}",
                            if cxx { "C++" } else { "C" }
                        ));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// linear_regression's pattern (Phoenix 2.0, -O0): a calloc'ed array of 64-byte per-thread
/// structs, which glibc places at 48 mod 64, so each straddles two lines; every thread updates
/// its own struct in a loop. Natively that is false sharing (padding gains 3.5x here); with
/// the native layout profcc sees the same straddling lines and says so.
#[test]
fn linear_regression_layout_is_false_sharing() {
    let s = Scratch::new();
    let src = s.write(
        "lreg.c",
        r#"
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
typedef struct { long long sx, sy, sxx, syy, sxy; int id; char *pts; int n; } lreg_args;
static pthread_barrier_t start; /* the threads overlap even on a loaded machine */
static void *worker(void *p) {
  lreg_args *a = p;
  pthread_barrier_wait(&start);
  for (int r = 0; r < 40; r++)
    for (int i = 0; i < a->n; i++) {
      long long x = a->pts[i], y = a->pts[i] + 1;
      a->sx += x; a->sy += y; a->sxx += x * x; a->syy += y * y; a->sxy += x * y;
    }
  return 0;
}
int main(void) {
  int nt = 2, n = 200000;
  char *pts = malloc(n);
  for (int i = 0; i < n; i++) pts[i] = (char)i;
  pthread_t *tid = malloc(9 * sizeof *tid); /* an 80-byte chunk: the calloc lands at 48 mod 64 */
  lreg_args *args = calloc(nt, sizeof *args);
  printf("args at %u mod 64\n", (unsigned)((uintptr_t)args & 63));
  pthread_barrier_init(&start, 0, nt);
  for (int i = 0; i < nt; i++) {
    args[i].id = i; args[i].pts = pts; args[i].n = n;
    pthread_create(&tid[i], 0, worker, &args[i]);
  }
  for (int i = 0; i < nt; i++) pthread_join(tid[i], 0);
  printf("%lld\n", args[0].sxy + args[1].sxy);
  return 0;
}
"#,
    );
    let exe = s.path("lreg");
    let native = s.path("lreg.native");
    sh(Command::new("clang-22")
        .args(["-O0", "-pthread"])
        .arg(&src)
        .arg("-o")
        .arg(&native));
    s.compile(
        &profcc(),
        &[
            "-O0",
            "-g",
            "-pthread",
            src.to_str().unwrap(),
            "-o",
            exe.to_str().unwrap(),
        ],
    );
    let nat = output_within(&mut Command::new(&native));
    let profile = s.path("lreg.json");
    let run = output_within(
        Command::new(&exe).env("PROFCC_OPTIONS", format!("out={}", profile.display())),
    );
    assert_same_run("lreg", &nat, &run);
    assert!(
        String::from_utf8_lossy(&run.stdout).starts_with("args at 48 mod 64"),
        "{run:?}"
    );
    // Every finding (the listing threshold depends on how much the threads ran at once).
    let r = report(&profile, &["--min-speedup", "0"]);
    let sharing = r.sharing.expect("a sharing section");
    let f = sharing
        .findings
        .iter()
        .find(|f| f.kind == Kind::FalseSharing)
        .unwrap_or_else(|| panic!("no false-sharing finding: {:#?}", sharing.findings));
    // The object is the calloc'ed array (128 bytes at 48 mod 64); both workers write it.
    let o = &f.objects[0];
    assert_eq!(o.kind, profcc_report::model::ObjectKind::Heap, "{f:#?}");
    assert_eq!(o.size, 128, "{f:#?}");
    assert_eq!(o.start % 64, 48, "{f:#?}");
    assert_eq!(o.alloc_kind.as_deref(), Some("calloc"), "{f:#?}");
    assert!(f.threads.len() >= 2, "{f:#?}");
}

/// An instrumented shared library keeps its own `.data`/`.bss` residues: its module
/// descriptor's `__profcc_site_base` goes to `.profcc.data` and its module constructor and
/// destructor call the runtime through the GOT (no lazy PLT slot of their own).
#[test]
fn shared_library_globals_keep_their_native_residues() {
    let s = Scratch::new();
    let lib = s.write(
        "lib.c",
        r#"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#define R(p) ((unsigned)((uintptr_t)(p) & 4095))
int d1 = 3; long b1[10]; static char b2[100]; const int c1[20] = {1};
void show(void) { b2[0]++; printf("G %u %u %u %u\nH %u\n", R(&d1), R(b1), R(b2), R(c1), R(malloc(10))); }
"#,
    );
    let main = s.write(
        "main.c",
        "void show(void);\nint main(void) { show(); return 0; }\n",
    );
    let mut outs = Vec::new();
    for (name, compiler) in [
        ("native", std::path::PathBuf::from("clang-22")),
        ("profcc", profcc()),
    ] {
        let so = s.path(&format!("lib{name}.so"));
        let exe = s.path(&format!("main-{name}"));
        sh(Command::new(&compiler)
            .args(["-O0", "-fPIC", "-shared"])
            .arg(&lib)
            .arg("-o")
            .arg(&so));
        sh(Command::new("clang-22")
            .arg(&main)
            .arg(&so)
            .arg("-o")
            .arg(&exe));
        outs.push(output_within(Command::new(&exe).current_dir(s.path(""))));
    }
    assert_same_run("shared library residues", &outs[0], &outs[1]);
}

/// A link with its own linker script gets no layout script from profcc (one logged line): it
/// links and runs as with clang-22.
#[test]
fn user_linker_script_links_without_the_layout_script() {
    let s = Scratch::new();
    let src = s.write(
        "p.c",
        "#include <stdio.h>\nint g = 4;\nint main(void) { printf(\"%d\\n\", g); return 0; }\n",
    );
    let script = s.path("default.ld");
    let text = sh(Command::new("ld").arg("--verbose")).stdout;
    let text = String::from_utf8_lossy(&text);
    let body: String = text
        .split("==================================================")
        .nth(1)
        .expect("ld --verbose prints its default script")
        .to_string();
    std::fs::write(&script, body).unwrap();
    let exe = s.path("p");
    let log = s.path("log");
    let out = output_within(
        Command::new(profcc())
            .env("PROFCC_LOG", &log)
            .arg(&src)
            .arg(format!("-Wl,-T,{}", script.display()))
            .arg("-o")
            .arg(&exe),
    );
    assert!(out.status.success(), "{out:?}");
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        logged.contains("native layout: the link has its own linker script"),
        "{logged}"
    );
    let run = output_within(Command::new(&exe).current_dir(s.path("")));
    assert_eq!(String::from_utf8_lossy(&run.stdout), "4\n", "{run:?}");
}
