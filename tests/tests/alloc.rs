//! Allocation sites end to end: exact counts and bytes per site, the call stack's first
//! frame at the allocating line (symbolised offline by `profcc report`), live objects at exit.

use profcc_report::model::AllocSite;
use profcc_report::Report;
use profcc_tests::*;
use std::process::Command;
use std::sync::OnceLock;

const ALLOC_CPP: &str = r#"
#include <cstdio>
#include <cstdlib>
#include <vector>
struct Node { long v[4]; };
// The optimiser deletes allocations nobody can see: publish them through volatile globals.
char *volatile keep[10];
Node *volatile seen[2];
static char *make(size_t n) { return (char *)malloc(n); }   // MARK_MAKE
int main() {
  for (int i = 0; i < 10; i++) keep[i] = make(100);           // MARK_LOOP
  for (int i = 0; i < 5; i++) free(keep[i]);
  char *volatile z = (char *)calloc(7, 3);                     // MARK_CALLOC
  Node *n = new Node();                                        // MARK_NEW
  Node *arr = new Node[3]();                                   // MARK_NEW_ARRAY
  seen[0] = n;
  seen[1] = arr;
  std::printf("%d %ld\n", z[0], seen[0]->v[0] + seen[1][2].v[1]);
  delete n;
  delete[] arr;
  free(z);
  return 0;
}
"#;

/// alloc.cpp built with profcc at each optimisation level, run once, and its report (all
/// sites), shared by the tests below.
fn reports() -> &'static [(&'static str, Report)] {
    static R: OnceLock<Vec<(&'static str, Report)>> = OnceLock::new();
    R.get_or_init(|| {
        ["-O0", "-O2"]
            .into_iter()
            .map(|opt| {
                let s = Scratch::new();
                s.write("alloc.cpp", ALLOC_CPP);
                s.compile(&profcxx(), &[opt, "-g", "alloc.cpp", "-o", "alloc"]);
                let (out, _) = s.run_profiled("alloc", &[], "summary=0");
                assert_eq!(String::from_utf8_lossy(&out.stdout), "0 0\n", "{opt}");
                (opt, report(&s.path("alloc.profile.json"), &["--top", "0"]))
            })
            .collect()
    })
}

/// The allocation site whose stack has a frame in alloc.cpp at `line`.
fn site_at<'a>(r: &'a Report, line: u32, kind: &str) -> &'a AllocSite {
    r.alloc_sites
        .sites
        .iter()
        .find(|s| {
            s.kind == kind
                && s.stack.iter().any(|f| {
                    f.file.as_deref().is_some_and(|x| x.ends_with("alloc.cpp"))
                        && f.line == Some(line)
                })
        })
        .unwrap_or_else(|| panic!("no {kind} site at alloc.cpp:{line}:\n{:#?}", r.alloc_sites))
}

/// (marker of the allocating line, kind, calls, bytes, frees, live objects at exit, live
/// bytes at exit): what alloc.cpp does, written once.
const EXPECTED: [(&str, &str, u64, u64, u64, u64, u64); 4] = [
    ("MARK_MAKE", "malloc", 10, 1000, 5, 5, 500),
    ("MARK_CALLOC", "calloc", 1, 21, 1, 0, 0),
    ("MARK_NEW", "new", 1, 32, 1, 0, 0),
    ("MARK_NEW_ARRAY", "new[]", 1, 96, 1, 0, 0),
];

#[test]
fn allocation_sites_exact() {
    for (opt, r) in reports() {
        for (marker, kind, count, bytes, frees, live_objects, live_bytes) in EXPECTED {
            let a = site_at(r, line_of(ALLOC_CPP, marker), kind);
            assert_eq!(
                (
                    a.count,
                    a.bytes,
                    a.frees,
                    a.live_objects_at_exit,
                    a.live_bytes_at_exit
                ),
                (count, bytes, frees, live_objects, live_bytes),
                "{opt} {marker} (count, bytes, frees, live objects, live bytes)"
            );
        }
    }
}

/// The caller of make() is on the malloc site's stack too (inlined or not).
#[test]
fn allocation_stack_has_the_caller() {
    let loop_line = line_of(ALLOC_CPP, "MARK_LOOP");
    for (opt, r) in reports() {
        let m = site_at(r, line_of(ALLOC_CPP, "MARK_MAKE"), "malloc");
        assert!(
            m.stack.iter().any(|f| f.line == Some(loop_line)),
            "{opt}: {m:#?}"
        );
    }
}

/// new/new[] are recorded once, as new, never again as the malloc inside them: no stack has
/// a frame of the runtime.
#[test]
fn no_runtime_frames_in_allocation_stacks() {
    for (opt, r) in reports() {
        for site in &r.alloc_sites.sites {
            for f in &site.stack {
                assert!(
                    !f.file.as_deref().unwrap_or("").contains("/rt/"),
                    "{opt}: runtime frame in {site:#?}"
                );
            }
        }
    }
}

#[test]
fn report_rejects_truncated_and_foreign_files() {
    let s = Scratch::new();
    let good = s.write("p.json", &{
        let p = profcc_schema::Profile {
            format: profcc_schema::FORMAT.into(),
            version: profcc_schema::VERSION,
            ..Default::default()
        };
        serde_json::to_string(&p).unwrap()
    });
    let text = std::fs::read_to_string(&good).unwrap();
    let cut = s.write("cut.json", &text[..text.len() / 2]);
    let foreign = s.write("foreign.json", "{\"hello\": 1}");
    for (f, word) in [(&cut, "truncated"), (&foreign, "not a profcc profile")] {
        let out = Command::new(profcc())
            .arg("report")
            .arg(f)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(word), "{err}");
        assert!(out.stdout.is_empty());
    }
}
