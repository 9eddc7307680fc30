//! Tidy checks: the committed C header is what the crate generates, and no C or Rust file of
//! the hooks or the runtime keeps a copy of an ABI constant.

use std::path::{Path, PathBuf};

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn repo() -> PathBuf {
    crate_dir().parent().unwrap().to_path_buf()
}

#[test]
fn committed_c_header_is_current() {
    let mut want = String::new();
    profcc_abi::header::write_c_header(&mut want).unwrap();
    let path = crate_dir().join(profcc_abi::header::PATH);
    if std::env::var_os("UPDATE_ABI_HEADER").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} differs from what the profcc-abi crate generates: regenerate it with `{}` and commit it",
        path.display(),
        profcc_abi::header::REGENERATE
    );
}

/// Files under `dir` (recursively) whose names end in one of `exts`.
fn files(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, exts, out);
        } else if exts.iter().any(|x| p.extension().is_some_and(|e| e == *x)) {
            out.push(p);
        }
    }
}

/// The integer literals of `line` (C or Rust spelling: hex or decimal, `_` separators,
/// `u`/`ull`/`u64` suffixes).
fn literals(line: &str) -> Vec<u64> {
    line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter_map(|tok| {
            let t = tok.replace('_', "").to_ascii_lowercase();
            let (digits, radix) = match t.strip_prefix("0x") {
                Some(h) => (h.to_string(), 16),
                None => (t.clone(), 10),
            };
            let digits = digits
                .trim_end_matches("u64")
                .trim_end_matches("usize")
                .trim_end_matches(['u', 'l']);
            if digits.is_empty() || !digits.chars().next().unwrap().is_ascii_digit() {
                return None;
            }
            u64::from_str_radix(digits, radix).ok()
        })
        .collect()
}

/// Shadow bases spelled as numbers, or as shifts of one (`1 << 44`).
fn hard_codes_a_shadow_base(line: &str) -> bool {
    let bases = [profcc_abi::LINE_SHADOW, profcc_abi::PAGE_SHADOW];
    let squeezed: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    literals(line).iter().any(|v| bases.contains(v))
        || bases
            .iter()
            .any(|b| squeezed.contains(&format!("<<{}", b.trailing_zeros())))
}

/// `#define PROFCC_... value` (an include guard has no value).
fn defines_an_abi_constant(line: &str) -> bool {
    line.trim_start()
        .strip_prefix('#')
        .map(|r| r.trim_start())
        .and_then(|r| r.strip_prefix("define"))
        .map(|r| r.split_whitespace().collect::<Vec<_>>())
        .is_some_and(|w| w.len() > 1 && w[0].starts_with("PROFCC_"))
}

#[test]
fn c_sources_take_the_abi_from_the_generated_header() {
    let mut c = Vec::new();
    for dir in ["hooks", "passes/hooks", "rt/csrc", "rt/src/analyses"] {
        files(&repo().join(dir), &["c", "h"], &mut c);
    }
    assert!(c.len() >= 4, "C sources not found: {c:?}");
    let mut bad = Vec::new();
    for f in &c {
        let text = std::fs::read_to_string(f).unwrap();
        for (i, line) in text.lines().enumerate() {
            if defines_an_abi_constant(line) || hard_codes_a_shadow_base(line) {
                bad.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "C files define ABI constants themselves; `#include \"profcc_abi.h\"` (abi/include, \
         generated from the profcc-abi crate) instead:\n{}",
        bad.join("\n")
    );
}

#[test]
fn rust_sources_import_the_abi_constants() {
    // Names the crate defines; a `const` of the same name elsewhere is a copy.
    let names = [
        "ABI_VERSION",
        "LIMBO",
        "SLOTS",
        "MAX_MODULE_SITES",
        "SITE_WORDS",
        "LINE_SHADOW",
        "LINE_SHADOW_SIZE",
        "PAGE_SHADOW",
        "APP_LIMIT",
        "HOT",
        "RETIRED",
        "OWNER",
        "READERS",
        "FIELD_SHIFT",
        "NO_RECORD",
        "INFO_WRITE",
        "INFO_SAMPLED",
        "INFO_ATOMIC",
        "INFO_EXTRA_READS_SHIFT",
        "INFO_EXTRA_WRITES_SHIFT",
        "INFO_SITE_SHIFT",
        "FLAG_SHARING",
        "CTOR_PRIORITY",
    ];
    let mut rs = Vec::new();
    for dir in ["passes/src", "rt/src"] {
        files(&repo().join(dir), &["rs"], &mut rs);
    }
    assert!(rs.len() >= 4, "Rust sources not found: {rs:?}");
    let mut bad = Vec::new();
    for f in &rs {
        let text = std::fs::read_to_string(f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let t = line.trim_start();
            let t = t.strip_prefix("pub ").unwrap_or(t);
            let t = t.strip_prefix("pub(crate) ").unwrap_or(t);
            let copy = t.strip_prefix("const ").is_some_and(|r| {
                let name = r.split(|c: char| c == ':' || c.is_whitespace()).next();
                names.iter().any(|n| Some(*n) == name)
            });
            if copy || hard_codes_a_shadow_base(line) {
                bad.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "Rust files define ABI constants themselves; import them from profcc-abi:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_tidy_scans_recognise_copies() {
    // The checks above would pass vacuously if these did not match.
    assert!(hard_codes_a_shadow_base(
        "  return (uint64_t *)(0x100000000000ull + ((p >> 6) << 3));"
    ));
    assert!(hard_codes_a_shadow_base(
        "const BASE: u64 = 0x1000_0000_0000;"
    ));
    assert!(hard_codes_a_shadow_base("x = 17592186044416;"));
    assert!(hard_codes_a_shadow_base("x = (1ull << 44) + y;"));
    assert!(hard_codes_a_shadow_base("#define P 0x200000000000ULL"));
    assert!(!hard_codes_a_shadow_base("#define PROFCC_SLOTS 10485760u"));
    assert!(!hard_codes_a_shadow_base(
        "x = PROFCC_LINE_SHADOW_OF(p) + 0x1000;"
    ));
}
