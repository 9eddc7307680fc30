//! clang's command line: the option table, `@response` file expansion, and the parse of an
//! argv into items (options with their values, inputs) in their original order.
//!
//! The table imitates sccache's `src/compiler/gcc.rs`: one sorted array of known options, each
//! with how it takes its argument and which role it plays. An option the table does not know
//! sends the whole command line to clang unchanged (see `plan::Reason::UnknownOption`).

use crate::plan::Reason;

/// How an option takes its argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `-c`: no argument, exact spelling only.
    Flag,
    /// `-Xclang X`: the argument is the next argv element.
    Sep,
    /// `-Wl,X`, `-std=X`: the argument is attached (the name is a prefix).
    Joined,
    /// `-I X` or `-IX`.
    JoinedOrSep,
}

/// Steps an option is handed to (bit set).
pub const FE: u8 = 1; // frontend: clang -emit-llvm -c
pub const CG: u8 = 2; // codegen: clang -Xclang -disable-llvm-passes -c x.bc
pub const LK: u8 = 4; // link
pub const ALL: u8 = FE | CG | LK;

/// What an option means to profcc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// An ordinary option: handed unchanged to the steps in the bit set.
    Steps(u8),
    /// `-g*` that asks for debug info (all steps; suppresses the injected `-gline-tables-only`).
    Debug,
    /// `-o`, `--output`.
    Output,
    /// `-x LANG`.
    Lang,
    /// `-c`.
    CompileOnly,
    /// `-S`.
    Assembly,
    /// `-emit-llvm`.
    EmitLlvm,
    /// `-MD -MMD -MF -MT -MQ -MP -MG -MV`: frontend only, see `plan::DepFix`.
    Dep(Dep),
    /// `-shared`, `-r`, `-nostdlib`, `-nodefaultlibs`, `-nolibc`: link step, no runtime.
    NoRuntime,
    /// `-static`: link step; the runtime is linked statically too.
    Static,
    /// `-lfoo`: a linker input, kept in order with the other inputs.
    LinkInput,
    /// `-Wl,...`: link step; scanned for `-shared`/`-r`.
    LinkerFlags,
    /// `-v`, `--verbose`: every step; pass-through when there is no input.
    Verbose,
    /// `-Xclang X`: frontend only, unless X asks for another action.
    Xclang,
    /// Always run clang unchanged.
    PassThrough(Reason),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(clippy::upper_case_acronyms)]
pub enum Dep {
    MD,
    MMD,
    MF,
    MT,
    MQ,
    Other,
}

#[derive(Debug, PartialEq)]
pub struct Opt {
    pub name: &'static str,
    pub kind: Kind,
    pub role: Role,
}

const fn o(name: &'static str, kind: Kind, role: Role) -> Opt {
    Opt { name, kind, role }
}

use Kind::*;
use Role::*;

const S_FE: Role = Steps(FE);
const S_CG: Role = Steps(CG);
const S_LK: Role = Steps(LK);
const S_ALL: Role = Steps(ALL);
const S_FE_LK: Role = Steps(FE | LK);
const QUERY: Role = PassThrough(Reason::Query);
const UNSURE: Role = PassThrough(Reason::UnsureOption);

/// Known options, sorted by name (byte order; a unit test checks it). Lookup: exact name
/// first, then the longest name that is a prefix of the argument among `Joined`/`JoinedOrSep`.
/// `-f`, `-m`, `-W`, `-O`, `-g` are namespace entries: any option in them is known.
pub static TABLE: &[Opt] = &[
    o("-###", Flag, QUERY),
    o("--coverage", Flag, PassThrough(Reason::Coverage)),
    o("--driver-mode=", Joined, S_ALL),
    o("--gcc-install-dir=", Joined, S_ALL),
    o("--gcc-toolchain=", Joined, S_ALL),
    o("--help", Flag, QUERY),
    o("--help-hidden", Flag, QUERY),
    o("--ld-path=", Joined, S_LK),
    o("--output", Sep, Output),
    o("--output=", Joined, Output),
    o("--precompile", Flag, PassThrough(Reason::CxxModule)),
    o("--print-", Joined, QUERY),
    o("--rtlib=", Joined, S_LK),
    o("--save-temps", Flag, PassThrough(Reason::SaveTemps)),
    o("--std=", Joined, S_FE),
    o("--stdlib=", Joined, S_ALL),
    o("--sysroot", Sep, S_ALL),
    o("--sysroot=", Joined, S_ALL),
    o("--target=", Joined, S_ALL),
    o("--unwindlib=", Joined, S_LK),
    o("--verbose", Flag, Verbose),
    o("--version", Flag, QUERY),
    o("-A", JoinedOrSep, S_FE),
    o("-B", JoinedOrSep, S_ALL),
    o("-C", Flag, S_FE),
    o("-CC", Flag, S_FE),
    o("-D", JoinedOrSep, S_FE),
    o("-E", Flag, PassThrough(Reason::Preprocess)),
    o("-F", JoinedOrSep, S_FE_LK),
    o("-H", Flag, S_FE),
    o("-I", JoinedOrSep, S_FE),
    o("-I-", Flag, S_FE),
    o("-L", JoinedOrSep, S_LK),
    o("-M", Flag, PassThrough(Reason::DepsOnly)),
    o("-MD", Flag, Dep(Dep::MD)),
    o("-MF", JoinedOrSep, Dep(Dep::MF)),
    o("-MG", Flag, Dep(Dep::Other)),
    o("-MJ", JoinedOrSep, PassThrough(Reason::CompilationDatabase)),
    o("-MM", Flag, PassThrough(Reason::DepsOnly)),
    o("-MMD", Flag, Dep(Dep::MMD)),
    o("-MP", Flag, Dep(Dep::Other)),
    o("-MQ", JoinedOrSep, Dep(Dep::MQ)),
    o("-MT", JoinedOrSep, Dep(Dep::MT)),
    o("-MV", Flag, Dep(Dep::Other)),
    o("-O", Joined, S_ALL),
    o("-P", Flag, S_FE),
    o("-Qunused-arguments", Flag, S_ALL),
    o("-S", Flag, Assembly),
    o("-T", JoinedOrSep, S_LK),
    o("-U", JoinedOrSep, S_FE),
    o("-W", Joined, S_ALL),
    o("-Wa,", Joined, S_CG),
    o("-Wl,", Joined, LinkerFlags),
    o("-Wp,", Joined, S_FE),
    o("-Xassembler", Sep, S_CG),
    o("-Xclang", Sep, Xclang),
    o("-Xlinker", Sep, S_LK),
    o("-Xpreprocessor", Sep, S_FE),
    o("-ansi", Flag, S_FE),
    o("-c", Flag, CompileOnly),
    o("-dD", Flag, S_FE),
    o("-dI", Flag, S_FE),
    o("-dM", Flag, S_FE),
    o("-dN", Flag, S_FE),
    o("-dU", Flag, S_FE),
    o("-dump", Joined, QUERY),
    o("-e", JoinedOrSep, S_LK),
    o("-emit-", Joined, UNSURE),
    o("-emit-llvm", Flag, EmitLlvm),
    o("-f", Joined, S_ALL),
    o("-fdriver-only", Flag, QUERY),
    // -flto reaches every step: objects are (instrumented) bitcode as with clang-22, so a link
    // without -flto fails where clang-22's fails (CMake's check_c_compiler_flag(-flto)).
    o("-flto", Joined, S_ALL),
    o("-fno-lto", Flag, S_ALL),
    o("-fopenmp-targets=", Joined, PassThrough(Reason::Offload)),
    o("-foptimization-record-file=", Joined, UNSURE),
    o("-fprofile-arcs", Flag, PassThrough(Reason::Coverage)),
    o("-fsanitize=", Joined, PassThrough(Reason::Sanitizer)),
    o("-fsave-optimization-record", Joined, UNSURE),
    o("-fstack-usage", Flag, UNSURE),
    o("-fsyntax-only", Flag, PassThrough(Reason::SyntaxOnly)),
    o("-ftest-coverage", Flag, PassThrough(Reason::Coverage)),
    o("-fthinlto-index=", Joined, UNSURE),
    o("-ftime-trace", Joined, UNSURE),
    o("-g", Joined, Debug),
    o("-gsplit-dwarf", Joined, PassThrough(Reason::SplitDwarf)),
    o("-gz", Joined, S_ALL),
    o("-help", Flag, QUERY),
    o("-idirafter", JoinedOrSep, S_FE),
    o("-iframework", JoinedOrSep, S_FE),
    o("-imacros", JoinedOrSep, S_FE),
    o("-include", JoinedOrSep, S_FE),
    o("-include-pch", Sep, S_FE),
    o("-integrated-as", Flag, S_CG),
    o("-iprefix", JoinedOrSep, S_FE),
    o("-iquote", JoinedOrSep, S_FE),
    o("-isysroot", JoinedOrSep, S_ALL),
    o("-isystem", JoinedOrSep, S_FE),
    o("-isystem-after", JoinedOrSep, S_FE),
    o("-ivfsoverlay", JoinedOrSep, S_FE),
    o("-iwithprefix", JoinedOrSep, S_FE),
    o("-iwithprefixbefore", JoinedOrSep, S_FE),
    o("-iwithsysroot", JoinedOrSep, S_FE),
    o("-l", JoinedOrSep, LinkInput),
    o("-m", Joined, S_ALL),
    o("-mllvm", Sep, S_ALL),
    o("-no-integrated-as", Flag, S_CG),
    o("-no-pie", Flag, S_LK),
    o("-nobuiltininc", Flag, S_FE),
    o("-nodefaultlibs", Flag, NoRuntime),
    o("-nolibc", Flag, NoRuntime),
    o("-nostartfiles", Flag, S_LK),
    o("-nostdinc", Flag, S_FE),
    o("-nostdinc++", Flag, S_FE),
    o("-nostdlib", Flag, NoRuntime),
    o("-nostdlib++", Flag, S_LK),
    o("-nostdlibinc", Flag, S_FE),
    o("-o", JoinedOrSep, Output),
    o("-p", Flag, S_ALL),
    o("-pedantic", Flag, S_FE),
    o("-pedantic-errors", Flag, S_FE),
    o("-pg", Flag, S_ALL),
    o("-pie", Flag, S_LK),
    o("-pipe", Flag, S_ALL),
    o("-print-", Joined, QUERY),
    o("-pthread", Flag, S_ALL),
    o("-r", Flag, NoRuntime),
    o("-rdynamic", Flag, S_LK),
    o("-rtlib=", Joined, S_LK),
    o("-s", Flag, S_LK),
    o("-save-temps", Joined, PassThrough(Reason::SaveTemps)),
    o("-shared", Flag, NoRuntime),
    o("-shared-libgcc", Flag, S_LK),
    o("-static", Flag, Static),
    o("-static-libgcc", Flag, S_LK),
    o("-static-libstdc++", Flag, S_LK),
    o("-static-openmp", Flag, S_LK),
    o("-static-pie", Flag, Static),
    o("-std=", Joined, S_FE),
    o("-stdlib=", Joined, S_ALL),
    o("-target", Sep, S_ALL),
    o("-trigraphs", Flag, S_FE),
    o("-u", JoinedOrSep, S_LK),
    o("-undef", Flag, S_FE),
    o("-unwindlib=", Joined, S_LK),
    o("-v", Flag, Verbose),
    o("-w", Flag, S_ALL),
    o("-x", JoinedOrSep, Lang),
    o("-z", JoinedOrSep, S_LK),
];

fn find_exact(name: &str) -> Option<&'static Opt> {
    TABLE
        .binary_search_by(|e| e.name.cmp(name))
        .ok()
        .map(|i| &TABLE[i])
}

/// Find the table entry for one argv element: exact match, else the longest prefix that takes
/// a joined argument.
pub fn lookup(arg: &str) -> Option<&'static Opt> {
    if let Some(e) = find_exact(arg) {
        return Some(e);
    }
    (1..arg.len())
        .rev()
        .filter(|&n| arg.is_char_boundary(n))
        .filter_map(|n| find_exact(&arg[..n]))
        .find(|e| matches!(e.kind, Joined | JoinedOrSep))
}

/// One element of the parsed command line.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// An option; `tokens` are the argv elements as written (one, or two for a separate value).
    Opt {
        opt: &'static Opt,
        tokens: Vec<String>,
        value: Option<String>,
    },
    /// An input file (or `-` for stdin), with the `-x` language in force for it.
    Input { path: String, lang: Option<String> },
}

/// Parse argv (without argv[0], response files already expanded). An error is a reason to
/// pass the command line through unchanged.
pub fn parse(args: &[String]) -> Result<Vec<Item>, (Reason, String)> {
    let mut items = Vec::new();
    let mut lang: Option<String> = None;
    let mut i = 0;
    let mut only_inputs = false;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if only_inputs || a == "-" || !a.starts_with('-') {
            if a.starts_with('@') && !only_inputs {
                // A response file that could not be read: let clang report it.
                return Err((Reason::ResponseFile, a.clone()));
            }
            items.push(Item::Input {
                path: a.clone(),
                lang: lang.clone(),
            });
            continue;
        }
        if a == "--" {
            only_inputs = true;
            continue;
        }
        let Some(opt) = lookup(a) else {
            return Err((Reason::UnknownOption, a.clone()));
        };
        let (tokens, value) = match opt.kind {
            Flag => (vec![a.clone()], None),
            Joined => (vec![a.clone()], Some(a[opt.name.len()..].to_string())),
            Sep | JoinedOrSep if a.len() > opt.name.len() => {
                (vec![a.clone()], Some(a[opt.name.len()..].to_string()))
            }
            Sep | JoinedOrSep => {
                let Some(v) = args.get(i) else {
                    return Err((Reason::MissingArgument, a.clone()));
                };
                i += 1;
                (vec![a.clone(), v.clone()], Some(v.clone()))
            }
        };
        if opt.role == Role::Lang {
            let v = value.clone().unwrap_or_default();
            lang = if v == "none" { None } else { Some(v) };
        }
        items.push(Item::Opt { opt, tokens, value });
    }
    Ok(items)
}

/// Expand `@file` arguments (GNU rules, as libiberty's `buildargv` and LLVM's
/// `TokenizeGNUCommandLine`: whitespace separates, '...' and "..." quote, backslash escapes the
/// next character everywhere). Nested response files are read relative to the current
/// directory, then to the including file's directory. An unreadable `@file` stays as it is.
pub fn expand_response_files(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    expand_into(args, None, 0, &mut out);
    out
}

fn expand_into(args: &[String], base: Option<&std::path::Path>, depth: u32, out: &mut Vec<String>) {
    for a in args {
        if let Some(name) = a.strip_prefix('@').filter(|n| !n.is_empty() && depth < 32) {
            let mut path = std::path::PathBuf::from(name);
            if !path.exists() {
                if let Some(b) = base {
                    path = b.join(name);
                }
            }
            if let Ok(text) = std::fs::read_to_string(&path) {
                let toks = tokenize_gnu(&text);
                let dir = path.parent().map(|p| p.to_path_buf());
                expand_into(&toks, dir.as_deref(), depth + 1, out);
                continue;
            }
        }
        out.push(a.clone());
    }
}

pub fn tokenize_gnu(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_tok = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                in_tok = true;
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            '\'' | '"' => {
                in_tok = true;
                while let Some(n) = chars.next() {
                    if n == c {
                        break;
                    }
                    if n == '\\' {
                        if let Some(m) = chars.next() {
                            cur.push(m);
                        }
                        continue;
                    }
                    cur.push(n);
                }
            }
            c if c.is_whitespace() => {
                if in_tok {
                    out.push(std::mem::take(&mut cur));
                    in_tok = false;
                }
            }
            c => {
                in_tok = true;
                cur.push(c);
            }
        }
    }
    if in_tok {
        out.push(cur);
    }
    out
}

/// Quote one argument for a GNU response file.
pub fn quote_gnu(a: &str) -> String {
    let mut s = String::with_capacity(a.len() + 2);
    if a.is_empty() {
        return "\"\"".into();
    }
    for c in a.chars() {
        if c.is_whitespace() || matches!(c, '\\' | '\'' | '"') {
            s.push('\\');
        }
        s.push(c);
    }
    s
}

/// Quote one argument for display as a shell word.
pub fn quote_sh(a: &str) -> String {
    let safe = !a.is_empty()
        && a.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=+,:@%^".contains(c));
    if safe {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_unique() {
        for w in TABLE.windows(2) {
            assert!(
                w[0].name < w[1].name,
                "{} must sort before {}",
                w[0].name,
                w[1].name
            );
        }
    }

    #[test]
    fn lookup_prefers_exact_then_longest_prefix() {
        assert_eq!(lookup("-include-pch").unwrap().name, "-include-pch");
        assert_eq!(lookup("-includefoo.h").unwrap().name, "-include");
        assert_eq!(lookup("-Wl,-z,now").unwrap().name, "-Wl,");
        assert_eq!(lookup("-Wall").unwrap().name, "-W");
        assert_eq!(lookup("-flto=thin").unwrap().name, "-flto");
        assert_eq!(lookup("-fsanitize=address").unwrap().name, "-fsanitize=");
        assert_eq!(lookup("-fsanitize-trap=all").unwrap().name, "-f");
        assert_eq!(lookup("-emit-llvm").unwrap().name, "-emit-llvm");
        assert_eq!(lookup("-emit-pch").unwrap().name, "-emit-");
        assert_eq!(lookup("-mllvm").unwrap().name, "-mllvm");
        assert_eq!(lookup("-march=native").unwrap().name, "-m");
        assert!(lookup("-frobnicate").is_some());
        assert!(lookup("-arch").is_none());
        assert!(lookup("-Q").is_none());
    }

    #[test]
    fn gnu_tokenizer() {
        assert_eq!(
            tokenize_gnu("a 'b c' \"d e\"\n f\\ g h\\\\ 'i\\'j' \"\" k"),
            vec!["a", "b c", "d e", "f g", "h\\", "i'j", "", "k"]
        );
        for a in ["x y", "q'uote", "back\\slash", "", "plain"] {
            assert_eq!(tokenize_gnu(&quote_gnu(a)), vec![a.to_string()]);
        }
    }
}
