//! Allocation sites end to end: exact counts and bytes per site, the call stack's first
//! frame at the allocating line (symbolised offline by `profcc report`), live objects at exit.

use profcc_tests::*;
use serde_json::Value;
use std::process::Command;

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

fn report_json(profile: &std::path::Path) -> Value {
    let out = Command::new(profcc())
        .args(["report", "--format", "json", "--top", "0"])
        .arg(profile)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The allocation site whose stack's innermost frame in alloc.cpp is at `line`.
fn site_at<'a>(r: &'a Value, line: u32, kind: &str) -> &'a Value {
    r["alloc_sites"]["sites"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            s["kind"] == kind
                && s["stack"].as_array().unwrap().iter().any(|f| {
                    f["file"].as_str().is_some_and(|x| x.ends_with("alloc.cpp"))
                        && f["line"] == line
                })
        })
        .unwrap_or_else(|| {
            panic!(
                "no {kind} site at alloc.cpp:{line}:\n{}",
                serde_json::to_string_pretty(&r["alloc_sites"]).unwrap()
            )
        })
}

#[test]
fn allocation_sites_exact() {
    for opt in ["-O0", "-O2"] {
        let s = Scratch::new();
        s.write("alloc.cpp", ALLOC_CPP);
        s.compile(&profcxx(), &[opt, "-g", "alloc.cpp", "-o", "alloc"]);
        let (out, _) = s.run_profiled("alloc", &[], "summary=0");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "0 0\n");
        let r = report_json(&s.path("alloc.profile.json"));

        let m = site_at(&r, line_of(ALLOC_CPP, "MARK_MAKE"), "malloc");
        assert_eq!(m["count"], 10, "{opt}");
        assert_eq!(m["bytes"], 1000, "{opt}");
        assert_eq!(m["frees"], 5, "{opt}");
        assert_eq!(m["live_objects_at_exit"], 5, "{opt}");
        assert_eq!(m["live_bytes_at_exit"], 500, "{opt}");
        // The caller of make() is on the stack too (inlined or not).
        let loop_line = line_of(ALLOC_CPP, "MARK_LOOP");
        assert!(
            m["stack"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["line"] == loop_line),
            "{opt}: {m}"
        );

        // new/new[] are recorded once, as new, never again as the malloc inside them.
        for site in r["alloc_sites"]["sites"].as_array().unwrap() {
            for f in site["stack"].as_array().unwrap() {
                assert!(
                    !f["file"].as_str().unwrap_or("").contains("/rt/"),
                    "{opt}: runtime frame in {site}"
                );
            }
        }
        let c = site_at(&r, line_of(ALLOC_CPP, "MARK_CALLOC"), "calloc");
        assert_eq!(
            (
                c["count"].as_u64(),
                c["bytes"].as_u64(),
                c["frees"].as_u64()
            ),
            (Some(1), Some(21), Some(1))
        );
        let n = site_at(&r, line_of(ALLOC_CPP, "MARK_NEW"), "new");
        assert_eq!(
            (
                n["count"].as_u64(),
                n["bytes"].as_u64(),
                n["frees"].as_u64()
            ),
            (Some(1), Some(32), Some(1))
        );
        let a = site_at(&r, line_of(ALLOC_CPP, "MARK_NEW_ARRAY"), "new[]");
        assert_eq!(
            (
                a["count"].as_u64(),
                a["bytes"].as_u64(),
                a["frees"].as_u64()
            ),
            (Some(1), Some(96), Some(1))
        );
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
