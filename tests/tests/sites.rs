//! The site table end to end: every site record the pass encodes (abi/src/sites.rs) reads back
//! in the profile with its file, line, column, function, inlined-at call, size and kind, and
//! with its group's exact count (sites that share a leader's counter).

use profcc_schema::AccessKind::{self, *};
use profcc_tests::*;

const SITES_H: &str = r#"static inline long get(const long *p) { return *p; } /* MARK_H_LOAD */
static inline void put(short *p, short v) { *p = v; } /* MARK_H_STORE */
"#;

const SITES_C: &str = r#"#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include "sites.h"
struct big { char b[40]; };
volatile int vi[8];
long g[4] = {1, 2, 3, 4};
short sh[4];
_Atomic long counter;
struct big bs[2];
__attribute__((noinline)) long work(int n, char *dst, const char *src) {
  long s = 0;
  for (int i = 0; i < n; i++) {
    s += get(&g[i & 3]); /* MARK_CALL_GET */
    put(&sh[i & 3], (short)i); /* MARK_CALL_PUT */
    vi[i & 7] = i; /* MARK_INT_STORE */
    atomic_fetch_add(&counter, 1); /* MARK_ATOMIC */
  }
  memcpy(dst, src, (size_t)n); /* MARK_MEMCPY */
  bs[0] = bs[1]; /* MARK_STRUCT_COPY */
  return s;
}
int main(int argc, char **argv) {
  char a[64], b[64] = {1};
  long s = work(10 + argc, a, b);
  printf("%ld %d %d\n", s, a[0], sh[1]);
  return 0;
}
"#;

/// One expected access: where (marker's line, the column of `token` in it), what, how often.
struct Want {
    header: bool,
    marker: &'static str,
    token: &'static str,
    /// The inline function it is written in (header sites), whose call is `call_marker`.
    inline_fn: Option<(&'static str, &'static str)>,
    kind: AccessKind,
    size: u32,
    count: u64,
    bytes: u64,
}

/// `work(11, ...)`: 11 loop iterations, an 11-byte memcpy, a 40-byte struct copy.
const WANT: [Want; 8] = [
    Want {
        header: true,
        marker: "MARK_H_LOAD",
        token: "*p;",
        inline_fn: Some(("get", "MARK_CALL_GET")),
        kind: Read,
        size: 8,
        count: 11,
        bytes: 88,
    },
    Want {
        header: true,
        marker: "MARK_H_STORE",
        token: "= v",
        inline_fn: Some(("put", "MARK_CALL_PUT")),
        kind: Write,
        size: 2,
        count: 11,
        bytes: 22,
    },
    Want {
        header: false,
        marker: "MARK_INT_STORE",
        token: "= i",
        inline_fn: None,
        kind: Write,
        size: 4,
        count: 11,
        bytes: 44,
    },
    Want {
        header: false,
        marker: "MARK_ATOMIC",
        token: "atomic_fetch_add",
        inline_fn: None,
        kind: Atomic,
        size: 8,
        count: 11,
        bytes: 88,
    },
    Want {
        header: false,
        marker: "MARK_MEMCPY",
        token: "memcpy",
        inline_fn: None,
        kind: CopyRead,
        size: 0,
        count: 1,
        bytes: 11,
    },
    Want {
        header: false,
        marker: "MARK_MEMCPY",
        token: "memcpy",
        inline_fn: None,
        kind: CopyWrite,
        size: 0,
        count: 1,
        bytes: 11,
    },
    Want {
        header: false,
        marker: "MARK_STRUCT_COPY",
        token: "bs[1]",
        inline_fn: None,
        kind: CopyRead,
        size: 40,
        count: 1,
        bytes: 40,
    },
    Want {
        header: false,
        marker: "MARK_STRUCT_COPY",
        token: "bs[1]",
        inline_fn: None,
        kind: CopyWrite,
        size: 40,
        count: 1,
        bytes: 40,
    },
];

fn column_of(text: &str, marker: &str, token: &str) -> u32 {
    let line = text.lines().find(|l| l.contains(marker)).unwrap();
    line.find(token).unwrap() as u32 + 1
}

fn check(opt: &str) {
    let s = Scratch::new();
    s.write("sites.h", SITES_H);
    s.write("sites.c", SITES_C);
    s.compile(&profcc(), &[opt, "-g", "sites.c", "-o", "sites"]);
    let (out, p) = s.run_profiled("sites", &[], "summary=0");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "26 1 9\n");
    let optimised = opt != "-O0";
    let work_lines = line_of(SITES_C, "noinline")..=line_of(SITES_C, "return s;");
    let mine: Vec<_> = p
        .sites
        .iter()
        .filter(|x| {
            x.file.ends_with("/sites.h")
                || (x.file.ends_with("/sites.c") && work_lines.contains(&x.line))
        })
        .collect();
    for w in &WANT {
        let text = if w.header { SITES_H } else { SITES_C };
        let file = if w.header { "/sites.h" } else { "/sites.c" };
        let line = line_of(text, w.marker);
        let at: Vec<_> = mine
            .iter()
            .filter(|x| x.file.ends_with(file) && x.line == line && x.kind == w.kind)
            .collect();
        let what = format!("{opt} {}:{line} {:?}", w.marker, w.kind);
        assert!(!at.is_empty(), "{what}: no site in {mine:#?}");
        let (function, inlined_at) = match w.inline_fn {
            Some((f, _)) if !optimised => (f.to_string(), None),
            Some((_, call)) => (
                "work".to_string(),
                Some(format!("/sites.c:{}", line_of(SITES_C, call))),
            ),
            None => ("work".to_string(), None),
        };
        for x in &at {
            assert_eq!(x.col, column_of(text, w.marker, w.token), "{what}: column");
            assert_eq!(x.function, function, "{what}: function");
            match &inlined_at {
                None => assert_eq!(x.inlined_at, None, "{what}"),
                Some(suffix) => {
                    let got = x.inlined_at.as_deref().unwrap_or("");
                    assert!(
                        got.ends_with(suffix.as_str()) && got.starts_with('/'),
                        "{what}: inlined at {got:?}, want .../sites.c and the call's line"
                    );
                }
            }
            assert_eq!(x.size, w.size, "{what}: size");
        }
        assert_eq!(
            at.iter().map(|x| x.count).sum::<u64>(),
            w.count,
            "{what}: count"
        );
        assert_eq!(
            at.iter().map(|x| x.bytes).sum::<u64>(),
            w.bytes,
            "{what}: bytes"
        );
    }
    // Nothing else in work(): every site read back is one of the expected.
    for x in &mine {
        assert!(
            WANT.iter().any(|w| {
                let (text, file) = if w.header {
                    (SITES_H, "/sites.h")
                } else {
                    (SITES_C, "/sites.c")
                };
                x.file.ends_with(file) && x.line == line_of(text, w.marker) && x.kind == w.kind
            }),
            "{opt}: unexpected site {x:?}"
        );
    }
}

#[test]
fn site_records_read_back_at_o0() {
    check("-O0");
}

#[test]
fn site_records_read_back_at_o2() {
    check("-O2");
}
