//! A statically linked allocator with a prefixed API (jemalloc built with
//! `--with-jemalloc-prefix=je_`, as redis links it): the link arguments that send the
//! program's calls of it through the runtime (rt/csrc/prefixed.h).
//!
//! Such an allocator's `je_malloc` is defined inside the executable, so no definition of the
//! runtime can preempt it; the link redirects the program's references instead. When the
//! link's objects (or archive members) call one of [`PREFIXED_WRAPPED`] and its objects or
//! archives define `je_malloc`, each name NAME the program calls and the link defines gets
//! `-Wl,--wrap=NAME` (the program's calls reach the runtime's `__wrap_NAME`; the allocator's
//! calls inside its own object stay its own), `-Wl,-u,NAME` (the allocator's archive member
//! is pulled as the program's own reference pulled it natively: `--wrap` made that reference
//! one of `__wrap_NAME`) and `-Wl,--defsym=__profcc_real_NAME=__real_NAME` (the runtime's
//! hidden weak reference to the real function: it makes neither `NAME` hidden, which a
//! `__real_NAME` reference would, nor, in every other link, adds a dynamic symbol or GOT
//! entry). The runtime's two helpers, the usable size and `mallctl` (its version), are
//! defined for it even when the program does not call them (`-u` and `--defsym` to NAME).
//!
//! Why the link, not the pass: `--wrap` reaches every object of the link, instrumented or
//! not, through archives, and leaves the program's code, data and the allocator itself as
//! clang-22 builds them (only the call's target changes). Bitcode objects (`-flto`) are read
//! with `llvm-nm-22`.

use std::path::{Path, PathBuf};

/// The prefixed allocator's functions the link wraps (rt/csrc/prefixed.h `__wrap_NAME`).
pub const PREFIXED_WRAPPED: &[&str] = &[
    "je_malloc",
    "je_calloc",
    "je_realloc",
    "je_free",
    "je_posix_memalign",
    "je_aligned_alloc",
    "je_memalign",
    "je_valloc",
    "je_mallocx",
    "je_rallocx",
    "je_dallocx",
    "je_sdallocx",
    "je_malloc_usable_size",
    "je_mallctl",
];

/// The names the runtime calls itself (usable size, version): defined for it when the link
/// defines them, called by the program or not.
const HELPERS: &[&str] = &["je_malloc_usable_size", "je_mallctl"];

/// What the link's inputs say about the wrapped names.
#[derive(Default, Debug)]
struct Seen {
    defined: std::collections::BTreeSet<String>,
    referenced: std::collections::BTreeSet<String>,
    bitcode: Vec<PathBuf>,
}

fn wrapped(name: &[u8]) -> Option<&'static str> {
    PREFIXED_WRAPPED
        .iter()
        .copied()
        .find(|n| n.as_bytes() == name)
}

/// An ELF relocatable object's defined and undefined wrapped names; bitcode is noted.
fn scan_object(data: &[u8], path: &Path, seen: &mut Seen) {
    use object::{Object, ObjectSymbol};
    if data.starts_with(b"BC\xc0\xde") {
        seen.bitcode.push(path.to_path_buf());
        return;
    }
    let Ok(file) = object::File::parse(data) else {
        return;
    };
    if file.kind() != object::ObjectKind::Relocatable {
        return;
    }
    for sym in file.symbols() {
        let Some(n) = sym.name_bytes().ok().and_then(wrapped) else {
            continue;
        };
        if sym.is_undefined() {
            seen.referenced.insert(n.to_string());
        } else if sym.is_global() {
            seen.defined.insert(n.to_string());
        }
    }
}

/// An archive: its symbol index names what it defines; its members' references are read
/// (a bitcode member's through llvm-nm-22, with the archive).
fn scan_archive(data: &[u8], path: &Path, seen: &mut Seen) {
    let Ok(ar) = object::read::archive::ArchiveFile::parse(data) else {
        return;
    };
    if let Ok(Some(index)) = ar.symbols() {
        for s in index.flatten() {
            if let Some(n) = wrapped(s.name()) {
                seen.defined.insert(n.to_string());
            }
        }
    }
    if ar.is_thin() {
        return;
    }
    let mut bitcode = false;
    for m in ar.members().flatten() {
        let Ok(d) = m.data(data) else { continue };
        if d.starts_with(b"BC\xc0\xde") {
            bitcode = true;
            continue;
        }
        let mut inner = Seen::default();
        scan_object(d, path, &mut inner);
        seen.referenced.extend(inner.referenced);
    }
    if bitcode {
        seen.bitcode.push(path.to_path_buf());
    }
}

fn scan_file(path: &Path, seen: &mut Seen) {
    let Ok(data) = std::fs::read(path) else {
        return;
    };
    if data.starts_with(b"!<arch>\n") {
        scan_archive(&data, path, seen);
    } else {
        scan_object(&data, path, seen);
    }
}

/// The archive `-lNAME` names (searched in the `-L` directories, then the usual ones; a
/// shared library found first, outside `-static`, ends the search: it is not read).
fn archive_of(name: &str, dirs: &[PathBuf], static_link: bool) -> Option<PathBuf> {
    let (so, a) = match name.strip_prefix(':') {
        Some(file) => (file.to_string(), file.to_string()),
        None => (format!("lib{name}.so"), format!("lib{name}.a")),
    };
    for d in dirs {
        if !static_link && !so.ends_with(".a") && d.join(&so).is_file() {
            return None;
        }
        if a.ends_with(".a") && d.join(&a).is_file() {
            return Some(d.join(&a));
        }
    }
    None
}

/// The link's inputs: objects and archives named by path (the argument after `-o` is the
/// output) and the archives `-l` names.
fn scan_link(args: &[String]) -> Seen {
    let mut seen = Seen::default();
    let static_link = args.iter().any(|a| a == "-static");
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut libs: Vec<String> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let next = args.get(i + 1);
        match a.as_str() {
            "-o" | "-Xlinker" | "-T" | "-MF" | "-MT" | "-MQ" | "-x" | "-include" => i += 1,
            "-L" => {
                dirs.extend(next.map(PathBuf::from));
                i += 1;
            }
            "-l" => {
                libs.extend(next.cloned());
                i += 1;
            }
            _ if a.starts_with("-L") => dirs.push(PathBuf::from(&a[2..])),
            _ if a.starts_with("-l") => libs.push(a[2..].to_string()),
            _ if !a.starts_with('-') => scan_file(Path::new(a), &mut seen),
            _ => {}
        }
        i += 1;
    }
    for d in [
        "/usr/local/lib/x86_64-linux-gnu",
        "/usr/local/lib",
        "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib",
    ] {
        dirs.push(PathBuf::from(d));
    }
    for l in libs {
        if let Some(p) = archive_of(&l, &dirs, static_link) {
            scan_file(&p, &mut seen);
        }
    }
    if !seen.bitcode.is_empty() {
        bitcode_references(&mut seen);
    }
    seen
}

/// The undefined and defined wrapped names of bitcode objects (`-flto`), from llvm-nm-22.
fn bitcode_references(seen: &mut Seen) {
    let out = std::process::Command::new("llvm-nm-22")
        .args(["-g", "--no-sort"])
        .args(&seen.bitcode)
        .output();
    let Ok(out) = out else {
        crate::exec::log("prefixed allocator: llvm-nm-22 did not run; bitcode objects not read");
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut w = line.split_whitespace().rev();
        let (Some(name), Some(kind)) = (w.next(), w.next()) else {
            continue;
        };
        let Some(n) = wrapped(name.as_bytes()) else {
            continue;
        };
        if kind == "U" {
            seen.referenced.insert(n.to_string());
        } else if kind != "w" && kind != "v" {
            seen.defined.insert(n.to_string());
        }
    }
}

/// The link arguments that wrap the prefixed allocator (none when the link does not both
/// call one of its functions and define `je_malloc`).
pub fn link_flags(args: &[String]) -> Vec<String> {
    flags_for(&scan_link(args))
}

fn flags_for(seen: &Seen) -> Vec<String> {
    let mut v = Vec::new();
    if !seen.defined.contains("je_malloc") || seen.referenced.is_empty() {
        return v;
    }
    for n in PREFIXED_WRAPPED {
        if !seen.defined.contains(*n) {
            continue;
        }
        if seen.referenced.contains(*n) {
            v.push(format!("-Wl,--wrap={n}"));
            v.push(format!("-Wl,-u,{n}"));
            v.push(format!("-Wl,--defsym=__profcc_real_{n}=__real_{n}"));
        } else if HELPERS.contains(n) {
            v.push(format!("-Wl,-u,{n}"));
            v.push(format!("-Wl,--defsym=__profcc_real_{n}={n}"));
        }
    }
    if !v.is_empty() {
        crate::exec::log(&format!(
            "prefixed allocator: the link defines je_malloc; wrapped: {}",
            seen.referenced
                .iter()
                .filter(|n| seen.defined.contains(*n))
                .cloned()
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(defined: &[&str], referenced: &[&str]) -> Seen {
        Seen {
            defined: defined.iter().map(|s| s.to_string()).collect(),
            referenced: referenced.iter().map(|s| s.to_string()).collect(),
            bitcode: vec![],
        }
    }

    #[test]
    fn wraps_only_what_the_program_calls_and_the_link_defines() {
        let all: Vec<&str> = PREFIXED_WRAPPED.to_vec();
        let f = flags_for(&seen(&all, &["je_malloc", "je_free"]));
        assert_eq!(
            f,
            [
                "-Wl,--wrap=je_malloc",
                "-Wl,-u,je_malloc",
                "-Wl,--defsym=__profcc_real_je_malloc=__real_je_malloc",
                "-Wl,--wrap=je_free",
                "-Wl,-u,je_free",
                "-Wl,--defsym=__profcc_real_je_free=__real_je_free",
                "-Wl,-u,je_malloc_usable_size",
                "-Wl,--defsym=__profcc_real_je_malloc_usable_size=je_malloc_usable_size",
                "-Wl,-u,je_mallctl",
                "-Wl,--defsym=__profcc_real_je_mallctl=je_mallctl",
            ]
        );
    }

    #[test]
    fn nothing_without_a_definition_or_a_call() {
        assert!(flags_for(&seen(&[], &["je_malloc"])).is_empty());
        assert!(flags_for(&seen(&["je_malloc", "je_free"], &[])).is_empty());
        assert!(flags_for(&seen(&[], &[])).is_empty());
    }

    #[test]
    fn a_plain_program_gets_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let o = dir.path().join("a.o");
        let st = std::process::Command::new("clang-22")
            .args(["-x", "c", "-c", "-", "-o"])
            .arg(&o)
            .stdin(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(
                    b"#include <stdlib.h>\nint main(void){free(malloc(3));return 0;}\n",
                )?;
                c.wait()
            });
        if !st.is_ok_and(|s| s.success()) {
            return; // no clang-22 here
        }
        let args = vec![o.display().to_string(), "-o".into(), "a".into()];
        let s = scan_link(&args);
        assert!(s.defined.is_empty() && s.referenced.is_empty(), "{s:?}");
        assert!(link_flags(&args).is_empty());
    }
}
