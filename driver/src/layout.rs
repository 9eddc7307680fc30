//! The native layout (ARCHITECTURE.md, "The instrumented program keeps the native layout"):
//! what the link adds so that the program's `.data`, `.bss` and heap land where its clang-22
//! build puts them (the same address mod 4096).
//!
//! - `SCRIPT`: the runtime's writable data (`.profcc.data`, `.profcc.bss`: xtask's
//!   `runtime_archive` and each instrumented module's `__profcc_site_base`) goes after the
//!   program's `.bss`, in a segment of its own (a page apart, so the program's `.bss` stays
//!   zero-fill and out of the file). Skipped, with one logged line, when the user gives a
//!   linker script of their own (the sections then land where ld puts orphans: the link works,
//!   the layout differs).
//! - Filler PLT slots: with lazy binding the program's `.data` starts `8 x (PLT slots)` bytes
//!   past a page boundary (`.got.plt` ends the relro region). The runtime defines the
//!   interposed names (malloc, calloc, new, pthread_create...), so the program's calls of them
//!   no longer take a slot; the runtime itself takes `RUNTIME_PLT_SLOTS`. The link gets back
//!   the difference as calls, never made, of libc functions (`FILLERS`).

use std::path::{Path, PathBuf};

/// Where the runtime's writable data goes: after the program's `.bss`, one page apart.
pub const SCRIPT: &str = "SECTIONS
{
  .profcc.data ALIGN(CONSTANT(MAXPAGESIZE)) + CONSTANT(MAXPAGESIZE) : { *(.profcc.data) }
  .profcc.bss (NOLOAD) : { *(.profcc.bss) }
}
INSERT AFTER .bss;
";

/// `.got.plt` slots the runtime archive adds to a dynamic executable: `__tls_get_addr`'s, which
/// ld 2.40 keeps after relaxing std's general-dynamic thread-local accesses (xtask's
/// `plt_thunks` removes every other).
pub const RUNTIME_PLT_SLOTS: usize = 1;

/// libc functions (GLIBC_2.2.5, in every glibc) a program practically never calls: one filler
/// slot each. A program that does call one gets one slot less than its clang-22 build.
pub const FILLERS: &[&str] = &[
    "__isalnum_l",
    "__isalpha_l",
    "__isblank_l",
    "__iscntrl_l",
    "__isdigit_l",
    "__isgraph_l",
    "__islower_l",
    "__isprint_l",
    "__ispunct_l",
    "__isspace_l",
    "__isupper_l",
    "__isxdigit_l",
    "__iswalnum_l",
    "__iswalpha_l",
    "__iswblank_l",
    "__iswcntrl_l",
    "__iswdigit_l",
    "__iswgraph_l",
    "__iswlower_l",
    "__iswprint_l",
    "__iswpunct_l",
    "__iswspace_l",
    "__iswupper_l",
    "__iswxdigit_l",
    "__finite",
    "__finitef",
    "__finitel",
    "__isinf",
    "__isinff",
    "__isinfl",
    "__isnan",
    "__isnanf",
    "__isnanl",
    "__argz_count",
    "__argz_next",
    "__argz_stringify",
    "__libc_mallinfo",
    "__libc_mallopt",
    "__libc_pvalloc",
    "__libc_valloc",
    "__libc_memalign",
    "__libc_calloc",
    "__libc_realloc",
    "__libc_free",
    "__libc_malloc",
];

/// The interposed names: the `#pragma weak` lines of rt/csrc/interpose.c (as xtask reads them).
pub fn interposers() -> Vec<&'static str> {
    include_str!("../../rt/csrc/interpose.c")
        .lines()
        .filter_map(|l| l.trim().strip_prefix("#pragma weak "))
        .map(str::trim)
        .collect()
}

/// Does the user's link line give a linker script (`-T`, `--script`, through `-Wl,` or
/// `-Xlinker`)? Then profcc adds none.
pub fn user_script(args: &[String]) -> bool {
    let is_script = |a: &str| {
        a == "-T"
            || a.starts_with("-T")
                && a.len() > 2
                && !a.starts_with("-Tbss")
                && !a.starts_with("-Tdata")
                && !a.starts_with("-Ttext")
            || a.starts_with("--script")
            || a.starts_with("-script")
    };
    let mut xlinker = false;
    for a in args {
        if xlinker {
            xlinker = false;
            if is_script(a) {
                return true;
            }
            continue;
        }
        if a == "-Xlinker" {
            xlinker = true;
        } else if let Some(rest) = a.strip_prefix("-Wl,") {
            if rest.split(',').any(is_script) {
                return true;
            }
        } else if is_script(a) {
            return true;
        }
    }
    false
}

/// The names the runtime imports (`libprofcc_rt.imports` beside the archive, written by
/// `cargo xtask build`).
pub fn runtime_imports(archive: &Path) -> Vec<String> {
    std::fs::read_to_string(archive.with_extension("imports"))
        .map(|t| {
            t.lines()
                .map(|l| l.trim().to_string())
                .filter(|l| !l.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// The names of `names` the objects call through the PLT (or, in a non-PIE link, whose address
/// they take with an absolute relocation: a canonical PLT entry): each one a slot in the
/// clang-22 build that the instrumented link does not make (an interposed name: the runtime
/// defines it; a runtime import: ld's `.plt.got` entry jumps through the runtime's GOT entry).
/// Archives are not read (their members' calls are not counted).
pub fn plt_names(
    objects: &[PathBuf],
    pie: bool,
    names: &[&str],
) -> std::collections::BTreeSet<String> {
    use object::{Object, ObjectSection, ObjectSymbol, RelocationFlags, RelocationTarget};
    let mut found = std::collections::BTreeSet::new();
    for path in objects {
        let Ok(data) = std::fs::read(path) else {
            continue;
        };
        let Ok(file) = object::File::parse(&*data) else {
            continue;
        };
        for section in file.sections() {
            for (_, r) in section.relocations() {
                let RelocationFlags::Elf { r_type } = r.flags() else {
                    continue;
                };
                let plt = matches!(
                    r_type,
                    object::elf::R_X86_64_PLT32 | object::elf::R_X86_64_PC32
                ) || !pie
                    && matches!(
                        r_type,
                        object::elf::R_X86_64_64
                            | object::elf::R_X86_64_32
                            | object::elf::R_X86_64_32S
                    );
                if !plt {
                    continue;
                }
                let RelocationTarget::Symbol(i) = r.target() else {
                    continue;
                };
                let Ok(sym) = file.symbol_by_index(i) else {
                    continue;
                };
                if !sym.is_undefined() {
                    continue;
                }
                if let Ok(n) = sym.name() {
                    if names.contains(&n) {
                        found.insert(n.to_string());
                    }
                }
            }
        }
    }
    found
}

/// Do the objects define thread-locals (a TLS section with contents or size)? Archives are not
/// read.
pub fn has_tls(objects: &[PathBuf]) -> bool {
    use object::{Object, ObjectSection, SectionFlags};
    objects.iter().any(|path| {
        let Ok(data) = std::fs::read(path) else { return false };
        let Ok(file) = object::File::parse(&*data) else { return false };
        file.sections().any(|s| {
            matches!(s.flags(), SectionFlags::Elf { sh_flags } if sh_flags & u64::from(object::elf::SHF_TLS) != 0)
                && s.size() > 0
        })
    })
}

/// The symbol that tells the runtime the program has no thread-locals of its own (rt/csrc/
/// interpose.c: each new thread's dynamic thread vector then gets its native size).
pub const NATIVE_TLS_ABSENT: &str = "-Wl,--defsym=__profcc_native_tls_absent=1";

/// How many filler slots a dynamic executable needs: the interposed names its objects call
/// through the PLT, less the runtime's own slots.
pub fn filler_count(interposed: usize) -> usize {
    interposed
        .saturating_sub(RUNTIME_PLT_SLOTS)
        .min(FILLERS.len())
}

/// The filler object's assembly: one `jmp NAME@PLT` per slot, in a function nothing calls.
pub fn filler_asm(n: usize) -> String {
    let mut s = String::from("\t.section .text.profcc_plt_fill,\"ax\",@progbits\n");
    s.push_str("profcc_plt_fill:\n");
    for name in &FILLERS[..n] {
        s.push_str(&format!("\tjmp {name}@PLT\n"));
    }
    s.push_str("\t.section .note.GNU-stack,\"\",@progbits\n");
    s
}

/// Write the layout script into the build's temp directory.
pub fn write_script(tmp: &Path) -> std::io::Result<PathBuf> {
    let p = tmp.join("profcc-layout.ld");
    std::fs::write(&p, SCRIPT)?;
    Ok(p)
}
