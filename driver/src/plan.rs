//! Classification of a parsed command line into a plan: either run clang unchanged (with a
//! named reason, as ccache's `argprocessing.cpp` names every give-up), or a build of compile
//! jobs (frontend → instrument → codegen) and an optional link.
//!
//! Pure: no environment, no file system. The executor (`exec.rs`) runs the plan.

use crate::args::{self, Dep, Item, Role, CG, FE, LK};

/// Why a command line goes to clang unchanged. Every reason is one variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// `PROFCC_DISABLE=1`.
    Disabled,
    /// profcc found itself nested inside another profcc call.
    Nested,
    /// `-print-*`, `-dump*`, `--help`, `--version`, `-###`: a query, not a build.
    Query,
    /// `-E`: preprocessing only.
    Preprocess,
    /// `-M`/`-MM`: dependency output only.
    DepsOnly,
    /// `-fsyntax-only`.
    SyntaxOnly,
    /// `-v` with no input.
    VerboseNoInputs,
    /// No input file at all (clang reports the error).
    NoInputs,
    /// Source from stdin (`-`) without `-x` (clang reports the error).
    Stdin,
    /// Assembler sources only (`.s`, `.S`, `-x assembler`), or any with `-c`/`-S`.
    AssemblerInput,
    /// LLVM IR sources (`.ll`, `.bc`, `-x ir`) only, or any with `-c`/`-S`.
    IrInput,
    /// `-emit-llvm`: the user asked for IR, not objects.
    EmitLlvm,
    /// A language profcc does not instrument (headers/PCH, Objective-C, CUDA, OpenCL, ...).
    UnsupportedLanguage,
    /// A C++20 module unit (`.cppm`, `-x c++-module`, `.pcm`, `--precompile`).
    CxxModule,
    /// An option the table does not know.
    UnknownOption,
    /// An option whose separate argument is missing (clang reports it).
    MissingArgument,
    /// An `@file` that could not be read (clang reports it).
    ResponseFile,
    /// `-fsanitize=`: a sanitizer runtime and profcc's runtime both interpose malloc.
    Sanitizer,
    /// `--coverage`, `-fprofile-arcs`, `-ftest-coverage`: side files named after the output.
    Coverage,
    /// `-save-temps`: intermediate files beside the output.
    SaveTemps,
    /// `-gsplit-dwarf`: `.dwo` files named after the output.
    SplitDwarf,
    /// Offloading (`-fopenmp-targets=`).
    Offload,
    /// `-MJ`: compilation database entry would name profcc's temporaries.
    CompilationDatabase,
    /// An option whose side effects profcc is not sure to keep (`-emit-*`, `-ftime-trace`, ...).
    UnsureOption,
    /// `-Xclang` with an option that changes clang's action (`-emit-pch`, `-plugin`, ...).
    XclangAction,
    /// `-o` with several outputs (clang reports it).
    MultipleOutputs,
    /// `-c`/`-S` without any source file (clang warns and does nothing).
    NoSources,
    /// `-c`/`-S` with object files among the inputs (clang warns and ignores them).
    LinkerInputWithCompile,
    /// A target other than x86-64 Linux (`-m32`, `-mx32`, `--target=aarch64-...`): the
    /// runtime and the hooks exist for x86-64 only.
    ForeignTarget,
}

impl Reason {
    pub fn describe(self) -> &'static str {
        use Reason::*;
        match self {
            Disabled => "PROFCC_DISABLE is set",
            Nested => "profcc is nested inside profcc",
            Query => "a query (-print-*, -dump*, --help, --version, -###)",
            Preprocess => "preprocessing only (-E)",
            DepsOnly => "dependency output only (-M/-MM)",
            SyntaxOnly => "syntax check only (-fsyntax-only)",
            VerboseNoInputs => "-v without input",
            NoInputs => "no input file",
            Stdin => "source from stdin (-) without -x",
            AssemblerInput => "assembler input",
            IrInput => "LLVM IR input",
            EmitLlvm => "-emit-llvm",
            UnsupportedLanguage => "language not instrumented",
            CxxModule => "C++ module unit",
            UnknownOption => "option not in profcc's table",
            MissingArgument => "option without its argument",
            ResponseFile => "unreadable response file",
            Sanitizer => "sanitizer (-fsanitize=)",
            Coverage => "gcov coverage",
            SaveTemps => "-save-temps",
            SplitDwarf => "-gsplit-dwarf",
            Offload => "offloading",
            CompilationDatabase => "-MJ",
            UnsureOption => "option with output side effects",
            XclangAction => "-Xclang changes the action",
            MultipleOutputs => "-o with several outputs",
            NoSources => "-c/-S without a source",
            LinkerInputWithCompile => "linker input with -c/-S",
            ForeignTarget => "target other than x86-64",
        }
    }
}

impl Reason {
    /// For a pass-through that compiles code the user expects to be profiled: what to do to
    /// get a profile (the driver prints it in one line, see `exec::notice_unprofiled`). None
    /// for the reasons that compile no code (queries, preprocessing, errors clang reports,
    /// assembler/IR, an explicit PROFCC_DISABLE). The words avoid what configure probes match
    /// in compiler output (CMake's "unknown .*option", "option .*not supported", ...).
    pub fn unprofiled_fix(self) -> Option<&'static str> {
        use Reason::*;
        Some(match self {
            Sanitizer => "a sanitizer runtime and profcc's runtime both replace malloc; build without -fsanitize= to profile",
            SaveTemps => "build without -save-temps to profile (PROFCC_KEEP_TEMPS=1 keeps profcc's own intermediate files)",
            CxxModule => "profcc compiles no C++ module units; put the code to profile in an ordinary translation unit",
            Coverage => "build without --coverage/-fprofile-arcs/-ftest-coverage to profile",
            SplitDwarf => "build without -gsplit-dwarf to profile",
            Offload => "build without -fopenmp-targets= to profile",
            CompilationDatabase => "build without -MJ to profile (CMake/bear can write compile_commands.json)",
            UnsureOption => "build without that option to profile",
            UnknownOption => "build without that option to profile, or add it to profcc's table (driver/src/args.rs)",
            ForeignTarget => "profcc instruments x86-64 Linux code only",
            UnsupportedLanguage => "profcc instruments C and C++ only",
            _ => return None,
        })
    }
}

/// The first argument that names a C/C++ source (a file, or `-` under `-x c`/`-x c++`): a
/// pass-through of such a command line compiles code that gets no profile. Does not stop at
/// options the table does not know (their values may be taken for inputs: only a hint).
pub fn source_named(args: &[String]) -> Option<String> {
    let mut lang: Option<String> = None;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "-" || !a.starts_with('-') {
            if !a.starts_with('@')
                && matches!(
                    classify_input(a, lang.as_deref()),
                    InputClass::Instrument | InputClass::Unsupported | InputClass::CxxModule
                )
                && !matches!(classify_header(a, lang.as_deref()), Some(true))
            {
                return Some(a.clone());
            }
            continue;
        }
        if let Some(opt) = args::lookup(a) {
            if matches!(opt.kind, args::Kind::Sep | args::Kind::JoinedOrSep)
                && a.len() == opt.name.len()
            {
                let v = args.get(i).cloned().unwrap_or_default();
                i += 1;
                if opt.role == Role::Lang {
                    lang = (v != "none").then_some(v);
                }
            } else if opt.role == Role::Lang {
                let v = a[opt.name.len()..].to_string();
                lang = (v != "none").then_some(v);
            }
        }
    }
    None
}

/// Is this input a header (compiled to a PCH, no code)? None when it is not a source at all.
fn classify_header(path: &str, lang: Option<&str>) -> Option<bool> {
    if let Some(l) = lang {
        return Some(l.ends_with("-header") || l.ends_with("header-unit"));
    }
    let ext = std::path::Path::new(path)
        .extension()
        .and_then(|e| e.to_str())?;
    Some(matches!(
        ext,
        "h" | "hh" | "hpp" | "hxx" | "H" | "h++" | "tcc"
    ))
}

#[derive(Debug, PartialEq)]
pub enum Plan {
    /// Exec clang with the original argv. The string names the argument that decided it.
    PassThrough(Reason, String),
    Build(Build),
}

#[derive(Debug, PartialEq, Default)]
pub struct Build {
    pub jobs: Vec<Job>,
    /// The link step's arguments (after the clang program), if there is a link.
    pub link: Option<Vec<LinkArg>>,
    /// Append profcc's runtime to the link.
    pub runtime: bool,
    /// The link makes a shared library (`-shared`, `-Wl,-shared`, `-Xlinker -shared`): it gets
    /// the hook stubs instead of the runtime.
    pub shared: bool,
    /// One line each on stderr before the build.
    pub notices: Vec<String>,
}

#[derive(Debug, PartialEq, Clone)]
pub enum LinkArg {
    Arg(String),
    /// The temporary object of compile job N.
    Object(usize),
}

#[derive(Debug, PartialEq)]
pub struct Job {
    pub source: String,
    /// The `-x` language in force for the source, if any.
    pub lang: Option<String>,
    /// false: an assembler/IR source of a compile+link call, compiled by clang unchanged.
    pub instrument: bool,
    /// `-S`: the job's output is assembly.
    pub asm: bool,
    /// The user's output path; None = a temporary object for the link step.
    pub output: Option<String>,
    /// Frontend flags (without `-c -emit-llvm`, `-x`, the source and `-o`).
    pub frontend: Vec<String>,
    /// Codegen flags (without the fixed `-Xclang -disable-llvm-passes ...`, input and `-o`).
    pub codegen: Vec<String>,
}

/// What kind of input a file is.
#[derive(Debug, PartialEq, Clone, Copy)]
enum InputClass {
    Instrument,
    Asm,
    Ir,
    Unsupported,
    CxxModule,
    Linker,
    Stdin,
}

fn classify_input(path: &str, lang: Option<&str>) -> InputClass {
    use InputClass::*;
    if let Some(l) = lang {
        // `-x c -`: the frontend reads stdin itself (it inherits profcc's), so the source
        // is instrumented like a file and clang's diagnostics still name `<stdin>`.
        return match l {
            "c" | "c++" | "cpp-output" | "c-cpp-output" | "c++-cpp-output" => Instrument,
            "assembler" | "assembler-with-cpp" => Asm,
            "ir" => Ir,
            "c++-module" | "c++-module-cpp-output" => CxxModule,
            _ => Unsupported,
        };
    }
    if path == "-" {
        return Stdin;
    }
    let ext = std::path::Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("");
    match ext {
        "c" | "i" | "cc" | "cp" | "cxx" | "cpp" | "CPP" | "c++" | "C" | "ii" => Instrument,
        "s" | "S" | "sx" => Asm,
        "ll" | "bc" => Ir,
        "h" | "hh" | "hpp" | "hxx" | "H" | "h++" | "tcc" | "m" | "mm" | "M" | "mi" | "mii"
        | "cu" | "cuh" | "cl" | "clcpp" | "hip" | "hlsl" | "f" | "for" | "f90" | "f95" | "F"
        | "FOR" | "F90" | "F95" | "ads" | "adb" | "iim" | "ast" => Unsupported,
        "cppm" | "ccm" | "cxxm" | "c++m" | "pcm" => CxxModule,
        _ => Linker,
    }
}

/// `llvm::sys::path::replace_extension(p, "d")`.
fn replace_ext(p: &str, ext: &str) -> String {
    let fstart = p.rfind('/').map(|i| i + 1).unwrap_or(0);
    let fname = &p[fstart..];
    let base = match fname.rfind('.') {
        Some(i) if fname != "." && fname != ".." => &p[..fstart + i],
        _ => p,
    };
    format!("{base}.{ext}")
}

/// The file name without directory and last extension (clang's `getBaseInputStem`).
fn stem(p: &str) -> String {
    let f = p.rsplit('/').next().unwrap_or(p);
    match f.rfind('.') {
        Some(i) if i > 0 => f[..i].to_string(),
        _ => f.to_string(),
    }
}

const XCLANG_ACTIONS: &[&str] = &[
    "-E",
    "-S",
    "-analyze",
    "-plugin",
    "-fsyntax-only",
    "-init-only",
    "-rewrite-objc",
    "-Eonly",
    "-module-file-info",
    "-verify",
    "-dump-tokens",
    "-dump-raw-tokens",
    "-print-preamble",
    "-print-stats",
    "-test-io",
    "-print-decl-contexts",
    "-templight-dump",
];

/// Classify a command line (argv without argv[0], response files expanded);
/// `frame_pointers`: the compile jobs add `-fno-omit-frame-pointer`
/// (after the user's flags). The ROI-only build leaves the user's choice alone
/// (`exec::frame_pointers`, docs/regions.md "The ROI-only build").
pub fn classify_with(args: &[String], frame_pointers: bool) -> Plan {
    let items = match args::parse(args) {
        Ok(i) => i,
        Err((r, a)) => return Plan::PassThrough(r, a),
    };

    let mut compile_only = false;
    let mut asm = false;
    let mut output: Option<String> = None;
    let mut user_debug = false;
    let mut verbose = false;
    let mut no_runtime = false;
    let mut shared = false;
    let is_shared = |w: &str| matches!(w, "-shared" | "--shared" | "-Bshareable");
    let (mut md, mut mf, mut mt) = (false, false, false);
    let mut sources = Vec::new();
    let mut linker_inputs = 0;
    let mut has_plain = None;

    for it in &items {
        match it {
            Item::Opt { opt, tokens, value } => {
                let v = value.as_deref().unwrap_or("");
                match opt.role {
                    Role::PassThrough(r) => return Plan::PassThrough(r, tokens.join(" ")),
                    Role::EmitLlvm => return Plan::PassThrough(Reason::EmitLlvm, tokens.join(" ")),
                    Role::Xclang
                        if v.starts_with("-emit-")
                            || v.starts_with("-ast-")
                            || XCLANG_ACTIONS.contains(&v) =>
                    {
                        return Plan::PassThrough(Reason::XclangAction, tokens.join(" "))
                    }
                    Role::CompileOnly => compile_only = true,
                    Role::Assembly => asm = true,
                    Role::Output => output = Some(v.to_string()),
                    Role::Debug => user_debug = true,
                    Role::Verbose => verbose = true,
                    Role::NoRuntime => {
                        no_runtime = true;
                        shared |= is_shared(opt.name);
                    }
                    Role::Dep(Dep::MD | Dep::MMD) => md = true,
                    Role::Dep(Dep::MF) => mf = true,
                    Role::Dep(Dep::MT | Dep::MQ) => mt = true,
                    Role::LinkerFlags
                        if v.split(',').any(|w| {
                            matches!(
                                w,
                                "-shared"
                                    | "--shared"
                                    | "-Bshareable"
                                    | "-r"
                                    | "-i"
                                    | "--relocatable"
                            )
                        }) =>
                    {
                        no_runtime = true;
                        shared |= v.split(',').any(is_shared);
                    }
                    Role::Steps(_)
                        if (opt.name == "-m" && matches!(v, "32" | "x32" | "16"))
                            || (matches!(opt.name, "-target" | "--target=")
                                && !(v.starts_with("x86_64") && v.contains("linux"))) =>
                    {
                        return Plan::PassThrough(Reason::ForeignTarget, tokens.join(" "))
                    }
                    // clang rewrites -Wp,-MD,FILE to -MD -MF FILE: the target still needs -MQ.
                    Role::Steps(_)
                        if opt.name == "-Wp,"
                            && (v.starts_with("-MD,") || v.starts_with("-MMD,")) =>
                    {
                        md = true;
                        mf = true;
                    }
                    Role::Steps(_) if opt.name == "-Xlinker" => {
                        if matches!(v, "-shared" | "--shared" | "-r" | "--relocatable") {
                            no_runtime = true;
                            shared |= is_shared(v);
                        }
                    }
                    Role::LinkInput => linker_inputs += 1,
                    _ => {}
                }
            }
            Item::Input { path, lang } => match classify_input(path, lang.as_deref()) {
                InputClass::Stdin => return Plan::PassThrough(Reason::Stdin, path.clone()),
                InputClass::Unsupported => {
                    return Plan::PassThrough(Reason::UnsupportedLanguage, path.clone())
                }
                InputClass::CxxModule => return Plan::PassThrough(Reason::CxxModule, path.clone()),
                InputClass::Linker => linker_inputs += 1,
                c @ (InputClass::Asm | InputClass::Ir) => {
                    has_plain.get_or_insert((c, path.clone()));
                    sources.push(it);
                }
                InputClass::Instrument => sources.push(it),
            },
        }
    }

    let plain_reason = |c: InputClass| {
        if c == InputClass::Asm {
            Reason::AssemblerInput
        } else {
            Reason::IrInput
        }
    };
    if sources.is_empty() && linker_inputs == 0 {
        let r = if verbose {
            Reason::VerboseNoInputs
        } else {
            Reason::NoInputs
        };
        return Plan::PassThrough(r, String::new());
    }
    let compile_only = compile_only || asm;
    if compile_only {
        if sources.is_empty() {
            return Plan::PassThrough(Reason::NoSources, String::new());
        }
        if let Some((c, p)) = has_plain {
            return Plan::PassThrough(plain_reason(c), p);
        }
        if items.iter().any(|i| matches!(i, Item::Input { path, lang } if classify_input(path, lang.as_deref()) == InputClass::Linker)) {
            return Plan::PassThrough(Reason::LinkerInputWithCompile, String::new());
        }
        if output.is_some() && sources.len() > 1 {
            return Plan::PassThrough(Reason::MultipleOutputs, output.unwrap_or_default());
        }
    } else if !sources.is_empty() && sources.iter().all(|s| matches!(s, Item::Input { path, lang } if classify_input(path, lang.as_deref()) != InputClass::Instrument)) {
        let (c, p) = has_plain.expect("plain sources");
        return Plan::PassThrough(plain_reason(c), p);
    }

    let mut b = Build::default();

    // Flags per step, in the user's order.
    let mut frontend = Vec::new();
    let mut codegen = Vec::new();
    for it in &items {
        let Item::Opt { opt, tokens, .. } = it else {
            continue;
        };
        let bits = match opt.role {
            Role::Steps(b) => b,
            Role::Debug | Role::Verbose => FE | CG | LK,
            Role::Xclang | Role::Dep(_) => FE,
            Role::LinkInput | Role::LinkerFlags | Role::NoRuntime | Role::Static => LK,
            _ => 0,
        };
        // In a compile-only call the frontend sees every flag clang would have seen, so its
        // diagnostics (e.g. "argument unused during compilation: '-L...'") stay the same.
        if bits & FE != 0 || (compile_only && bits != 0) {
            frontend.extend(tokens.iter().cloned());
        }
        if bits & CG != 0 {
            codegen.extend(tokens.iter().cloned());
        }
    }
    if !user_debug {
        frontend.push("-gline-tables-only".into());
    }
    if frame_pointers {
        frontend.push("-fno-omit-frame-pointer".into());
    }

    for (n, s) in sources.iter().enumerate() {
        let Item::Input { path, lang } = s else {
            unreachable!()
        };
        let instrument = classify_input(path, lang.as_deref()) == InputClass::Instrument;
        let out = if compile_only {
            Some(
                output
                    .clone()
                    .unwrap_or_else(|| format!("{}.{}", stem(path), if asm { "s" } else { "o" })),
            )
        } else {
            None
        };
        let mut fe = if instrument {
            frontend.clone()
        } else {
            // Plain jobs: the user's flags only, nothing injected.
            let k = frontend.len() - if user_debug { 1 } else { 2 };
            frontend[..k].to_vec()
        };
        if md {
            // clang derives the depfile name and target from -o, which is now a temporary:
            // compute what it would have used for the real output.
            if !mf {
                let d = match &output {
                    Some(o) => replace_ext(o, "d"),
                    None => format!("{}.d", stem(path)),
                };
                fe.extend(["-MF".to_string(), d]);
            }
            if !mt {
                let t = match &output {
                    Some(o) => o.clone(),
                    None => format!("{}.o", stem(path)),
                };
                fe.extend(["-MQ".to_string(), t]);
            }
        }
        let _ = n;
        b.jobs.push(Job {
            source: path.clone(),
            lang: lang.clone(),
            instrument,
            asm,
            output: out,
            frontend: fe,
            codegen: codegen.clone(),
        });
    }

    if !compile_only {
        let mut link = Vec::new();
        if !sources.is_empty() {
            link.push(LinkArg::Arg("-Wno-unused-command-line-argument".into()));
        }
        let mut job = 0;
        for it in &items {
            match it {
                Item::Opt { opt, tokens, .. } => {
                    let keep = match opt.role {
                        Role::Steps(b) => b & LK != 0,
                        Role::Debug | Role::Verbose | Role::Output => true,
                        Role::LinkInput | Role::LinkerFlags | Role::NoRuntime | Role::Static => {
                            true
                        }
                        _ => false,
                    };
                    if keep {
                        link.extend(tokens.iter().cloned().map(LinkArg::Arg));
                    }
                }
                Item::Input { path, lang } => {
                    if classify_input(path, lang.as_deref()) == InputClass::Linker {
                        link.push(LinkArg::Arg(path.clone()));
                    } else {
                        link.push(LinkArg::Object(job));
                        job += 1;
                    }
                }
            }
        }
        b.link = Some(link);
        b.runtime = !no_runtime;
        b.shared = shared;
    }
    Plan::Build(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }
    fn plan(s: &str) -> Plan {
        classify_with(&sv(s), true)
    }
    fn build(s: &str) -> Build {
        match plan(s) {
            Plan::Build(b) => b,
            p => panic!("{s}: expected a build, got {p:?}"),
        }
    }
    fn link_strs(b: &Build) -> Vec<String> {
        b.link
            .as_ref()
            .unwrap()
            .iter()
            .map(|a| match a {
                LinkArg::Arg(s) => s.clone(),
                LinkArg::Object(i) => format!("<obj{i}>"),
            })
            .collect()
    }

    /// `passes!(argv => Reason)`: the command line goes to clang unchanged for that reason.
    macro_rules! passes {
        ($($name:ident: $argv:expr => $reason:ident;)*) => {$(
            #[test]
            fn $name() {
                match plan($argv) {
                    Plan::PassThrough(r, _) => assert_eq!(r, Reason::$reason, "{}", $argv),
                    p => panic!("{}: expected pass-through {:?}, got {p:?}", $argv, Reason::$reason),
                }
            }
        )*};
    }

    passes! {
        pt_preprocess: "-E a.c" => Preprocess;
        pt_preprocess_with_c: "-c -E a.c -o a.i" => Preprocess;
        pt_dep_m: "-M a.c" => DepsOnly;
        pt_dep_mm: "-MM -MF a.d a.c" => DepsOnly;
        pt_syntax_only: "-fsyntax-only a.c" => SyntaxOnly;
        pt_print_search_dirs: "-print-search-dirs" => Query;
        pt_print_file_name: "-print-file-name=libgcc.a" => Query;
        pt_long_print: "--print-resource-dir" => Query;
        pt_dumpmachine: "-dumpmachine" => Query;
        pt_dumpversion: "-dumpversion" => Query;
        pt_hash3: "-### -c a.c" => Query;
        pt_help: "--help" => Query;
        pt_version: "--version" => Query;
        pt_version_with_input: "--version a.c" => Query;
        pt_v_alone: "-v" => VerboseNoInputs;
        pt_no_inputs: "-O2 -Wall" => NoInputs;
        pt_nothing: "" => NoInputs;
        pt_stdin_without_x: "-c - -o a.o" => Stdin;
        pt_module_unit: "-std=c++20 -c m.cppm -o m.o" => CxxModule;
        pt_module_x: "-std=c++20 -x c++-module -c m.cc" => CxxModule;
        pt_module_precompile: "-std=c++20 --precompile m.cppm -o m.pcm" => CxxModule;
        pt_module_pcm: "-c m.pcm -o m.o" => CxxModule;
        pt_asm_c: "-c a.s" => AssemblerInput;
        pt_asm_cpp_c: "-c a.S -o a.o" => AssemblerInput;
        pt_asm_x: "-c -x assembler-with-cpp a.foo" => AssemblerInput;
        pt_asm_link: "a.S -o prog" => AssemblerInput;
        pt_asm_mixed_c: "-c a.c b.s" => AssemblerInput;
        pt_ir_c: "-c a.ll" => IrInput;
        pt_emit_llvm_s: "-S -emit-llvm a.c" => EmitLlvm;
        pt_emit_llvm_c: "-c -emit-llvm a.c -o a.bc" => EmitLlvm;
        pt_header: "-x c-header a.h -o a.pch" => UnsupportedLanguage;
        pt_header_ext: "-c a.h" => UnsupportedLanguage;
        pt_objc: "-c a.m" => UnsupportedLanguage;
        pt_cuda: "-c a.cu" => UnsupportedLanguage;
        pt_unknown: "-arch x86_64 -c a.c" => UnknownOption;
        pt_unknown_q: "-Qfoo -c a.c" => UnknownOption;
        pt_missing_arg: "-c a.c -o" => MissingArgument;
        pt_rsp_missing: "-c a.c @missing.rsp" => ResponseFile;
        pt_asan: "-fsanitize=address -c a.c" => Sanitizer;
        pt_coverage: "--coverage -c a.c" => Coverage;
        pt_profile_arcs: "-fprofile-arcs -c a.c" => Coverage;
        pt_save_temps: "-save-temps=obj -c a.c" => SaveTemps;
        pt_split_dwarf: "-g -gsplit-dwarf -c a.c" => SplitDwarf;
        pt_offload: "-fopenmp -fopenmp-targets=nvptx64 -c a.c" => Offload;
        pt_mj: "-MJ a.json -c a.c" => CompilationDatabase;
        pt_time_trace: "-ftime-trace -c a.c" => UnsureOption;
        pt_emit_pch: "-Xclang -emit-pch -c a.c" => XclangAction;
        pt_emit_ast: "-emit-ast a.c" => UnsureOption;
        pt_multi_o: "-c a.c b.c -o x.o" => MultipleOutputs;
        pt_c_no_sources: "-c a.o" => NoSources;
        pt_c_with_object: "-c a.c b.o" => LinkerInputWithCompile;
        pt_m32: "-m32 -c a.c" => ForeignTarget;
        pt_aarch64: "--target=aarch64-linux-gnu -c a.c" => ForeignTarget;
        pt_target_sep: "-target armv7-none-eabi a.c" => ForeignTarget;
    }

    #[test]
    fn compile_with_o_in_every_spelling() {
        for argv in [
            "-c a.c -o out/a.o",
            "-c a.c -oout/a.o",
            "-c --output out/a.o a.c",
            "-c a.c --output=out/a.o",
        ] {
            let b = build(argv);
            assert_eq!(b.jobs.len(), 1, "{argv}");
            assert_eq!(b.jobs[0].output.as_deref(), Some("out/a.o"), "{argv}");
            assert_eq!(b.jobs[0].source, "a.c");
            assert!(b.link.is_none());
        }
    }

    #[test]
    fn compile_injects_line_tables_and_frame_pointers() {
        let b = build("-O2 -DX=1 -Iinc -c a.c -o a.o");
        let j = &b.jobs[0];
        assert!(j.instrument && !j.asm);
        assert_eq!(
            j.frontend,
            sv("-O2 -DX=1 -Iinc -gline-tables-only -fno-omit-frame-pointer")
        );
        assert_eq!(j.codegen, sv("-O2"));
    }

    #[test]
    fn roi_only_builds_keep_the_users_frame_pointer_choice() {
        let Plan::Build(b) = classify_with(&sv("-O2 -fomit-frame-pointer -c a.c -o a.o"), false)
        else {
            panic!("expected a build")
        };
        assert_eq!(
            b.jobs[0].frontend,
            sv("-O2 -fomit-frame-pointer -gline-tables-only")
        );
    }

    #[test]
    fn user_debug_flag_suppresses_line_tables() {
        let b = build("-g3 -c a.c");
        assert_eq!(b.jobs[0].frontend, sv("-g3 -fno-omit-frame-pointer"));
        assert_eq!(b.jobs[0].codegen, sv("-g3"));
        // -gz is not a request for debug info
        assert!(build("-gz -c a.c").jobs[0]
            .frontend
            .contains(&"-gline-tables-only".to_string()));
    }

    #[test]
    fn codegen_gets_target_and_codegen_flags_only() {
        let b = build("-std=c11 -march=native -fPIC -ffunction-sections -Wall -Werror -include x.h -isystem /s -Wa,--noexecstack -mllvm -x86-asm-syntax=intel -c a.c");
        assert_eq!(
            b.jobs[0].codegen,
            sv("-march=native -fPIC -ffunction-sections -Wall -Werror -Wa,--noexecstack -mllvm -x86-asm-syntax=intel")
        );
        assert!(b.jobs[0].frontend.contains(&"-std=c11".to_string()));
        assert!(b.jobs[0]
            .frontend
            .contains(&"-Wa,--noexecstack".to_string()));
    }

    #[test]
    fn multiple_sources_without_o_go_to_cwd() {
        let b = build("-c src/a.c ../b.cpp");
        let outs: Vec<_> = b.jobs.iter().map(|j| j.output.clone().unwrap()).collect();
        assert_eq!(outs, vec!["a.o", "b.o"]);
    }

    #[test]
    fn assembly_output() {
        let b = build("-S src/a.c");
        assert!(b.jobs[0].asm);
        assert_eq!(b.jobs[0].output.as_deref(), Some("a.s"));
        let b = build("-S a.c -o x.s");
        assert_eq!(b.jobs[0].output.as_deref(), Some("x.s"));
    }

    #[test]
    fn depfile_names_the_real_object() {
        let b = build("-MD -c src/a.c -o obj/a.o");
        assert_eq!(
            b.jobs[0].frontend,
            sv("-MD -gline-tables-only -fno-omit-frame-pointer -MF obj/a.d -MQ obj/a.o")
        );
        let b = build("-MMD -MP -c src/a.c");
        assert!(b.jobs[0].frontend.ends_with(&sv("-MF a.d -MQ a.o")));
        // user's own -MF/-MT are kept, nothing added
        let b = build("-MD -MF x.d -MT tgt -c a.c -o a.o");
        assert_eq!(
            b.jobs[0].frontend,
            sv("-MD -MF x.d -MT tgt -gline-tables-only -fno-omit-frame-pointer")
        );
        // codegen never sees dep flags
        assert!(b.jobs[0].codegen.is_empty());
        // -MQ only: no -MQ added, -MF computed
        let b = build("-MMD -MQ q -c a.c -o dir.x/a");
        assert!(b.jobs[0].frontend.ends_with(&sv(
            "-MQ q -gline-tables-only -fno-omit-frame-pointer -MF dir.x/a.d"
        )));
    }

    #[test]
    fn wp_md_gets_the_real_target() {
        let b = build("-Wp,-MMD,.a.o.d -c a.c -o a.o");
        assert_eq!(
            b.jobs[0].frontend,
            sv("-Wp,-MMD,.a.o.d -gline-tables-only -fno-omit-frame-pointer -MQ a.o")
        );
    }

    #[test]
    fn depfile_in_compile_and_link_follows_clang() {
        // clang names prog.d with target prog for each source (the last one wins)
        let b = build("-MD a.c b.c -o prog");
        assert!(b.jobs[0].frontend.ends_with(&sv("-MF prog.d -MQ prog")));
        let b = build("-MD a.c b.c");
        assert!(b.jobs[1].frontend.ends_with(&sv("-MF b.d -MQ b.o")));
    }

    #[test]
    fn compile_and_link_keeps_input_order() {
        let b = build("-O2 -Iinc x.o a.c -L/lib -lfoo b.cc libz.a -Wl,--as-needed -o prog -lm");
        assert_eq!(b.jobs.len(), 2);
        assert!(b.jobs.iter().all(|j| j.output.is_none() && j.instrument));
        assert_eq!(
            link_strs(&b),
            sv("-Wno-unused-command-line-argument -O2 x.o <obj0> -L/lib -lfoo <obj1> libz.a -Wl,--as-needed -o prog -lm")
        );
        assert!(b.runtime);
        // link-only flags do not reach the frontend of a compile+link call
        assert_eq!(
            b.jobs[0].frontend,
            sv("-O2 -Iinc -gline-tables-only -fno-omit-frame-pointer")
        );
    }

    #[test]
    fn link_only() {
        let b = build("a.o b.o -o prog -lpthread");
        assert!(b.jobs.is_empty());
        assert_eq!(link_strs(&b), sv("a.o b.o -o prog -lpthread"));
        assert!(b.runtime);
    }

    #[test]
    fn no_runtime_for_dsos_and_nostdlib() {
        for argv in [
            "-shared -fPIC a.c -o liba.so",
            "-fPIC a.o -shared -o liba.so",
            "-Wl,-shared a.o -o liba.so",
            "-r a.o b.o -o c.o",
            "-nostdlib a.c -o x",
            "-nodefaultlibs a.o -o x",
            "-Xlinker -shared a.o -o x",
        ] {
            assert!(!build(argv).runtime, "{argv}");
        }
        for (argv, shared) in [
            ("-shared -fPIC a.c -o liba.so", true),
            ("-Wl,-shared a.o -o liba.so", true),
            ("-Xlinker -shared a.o -o x", true),
            ("-r a.o b.o -o c.o", false),
            ("-nostdlib a.c -o x", false),
            ("a.c -o x", false),
        ] {
            assert_eq!(build(argv).shared, shared, "{argv}");
        }
        // -shared still instruments the code
        let b = build("-shared -fPIC a.c -o liba.so");
        assert!(b.jobs[0].instrument);
        assert!(b.jobs[0].codegen.contains(&"-fPIC".to_string()));
        assert!(build("-static a.c -o x").runtime);
    }

    #[test]
    fn x_lang_applies_to_following_inputs() {
        let b = build("-x c foo.txt -x none b.c");
        assert_eq!(b.jobs[0].lang.as_deref(), Some("c"));
        assert_eq!(b.jobs[1].lang, None);
        assert_eq!(
            link_strs(&b),
            sv("-Wno-unused-command-line-argument <obj0> <obj1>")
        );
        // -x c makes an unusual extension a source; before -x it is a linker input
        let b = build("foo.txt -xc bar.txt");
        assert_eq!(b.jobs.len(), 1);
        assert_eq!(b.jobs[0].source, "bar.txt");
    }

    #[test]
    fn asm_in_compile_and_link_is_a_plain_job() {
        let b = build("-O2 a.c start.S -o prog");
        assert!(b.jobs[0].instrument);
        assert!(!b.jobs[1].instrument);
        assert_eq!(b.jobs[1].frontend, sv("-O2"));
    }

    #[test]
    fn lto_reaches_every_step() {
        // objects are bitcode as with clang-22: a link without -flto fails the same way
        let b = build("-flto=thin -O2 -c a.c");
        assert!(b.notices.is_empty());
        assert!(b.jobs[0].frontend.contains(&"-flto=thin".to_string()));
        assert!(b.jobs[0].codegen.contains(&"-flto=thin".to_string()));
        let b = build("-flto a.c -o p");
        assert!(link_strs(&b).contains(&"-flto".to_string()));
    }

    #[test]
    fn stdin_with_x_is_instrumented() {
        let b = build("-x c -c - -o a.o");
        assert_eq!(b.jobs.len(), 1);
        assert_eq!(b.jobs[0].source, "-");
        assert_eq!(b.jobs[0].lang.as_deref(), Some("c"));
        assert!(b.jobs[0].instrument);
        // clang's default output for `-c -` is `-.o`
        assert_eq!(build("-xc -c -").jobs[0].output.as_deref(), Some("-.o"));
        let b = build("-O2 -x c - -o prog");
        assert!(b.jobs[0].output.is_none() && b.runtime);
    }

    #[test]
    fn unprofiled_pass_throughs_name_a_fix() {
        for r in [
            Reason::Sanitizer,
            Reason::SaveTemps,
            Reason::CxxModule,
            Reason::UnknownOption,
        ] {
            let fix = r.unprofiled_fix().unwrap();
            // nothing configure probes read as "flag rejected" (CMake's FAIL_REGEX list)
            for bad in ["not supported", "nknown", "nrecogni", "ignored", "arning"] {
                assert!(!fix.contains(bad) && !r.describe().contains(bad), "{r:?}");
            }
        }
        for r in [
            Reason::Query,
            Reason::Preprocess,
            Reason::Disabled,
            Reason::Stdin,
        ] {
            assert!(r.unprofiled_fix().is_none(), "{r:?}");
        }
        assert_eq!(
            source_named(&sv("-fsanitize=address -I inc -c src/a.c -o a.o")).as_deref(),
            Some("src/a.c")
        );
        assert_eq!(source_named(&sv("-x c -c -")).as_deref(), Some("-"));
        assert_eq!(source_named(&sv("-c - -o x.o")), None);
        assert_eq!(source_named(&sv("-fsanitize=address a.o -o p")), None);
        assert_eq!(source_named(&sv("-x c-header a.h -o a.pch")), None);
        assert_eq!(source_named(&sv("-c m.cppm")).as_deref(), Some("m.cppm"));
    }

    #[test]
    fn openmp_pthread_reach_every_step() {
        let b = build("-fopenmp -pthread a.c -o p");
        assert!(b.jobs[0].frontend.starts_with(&sv("-fopenmp -pthread")));
        assert_eq!(link_strs(&b)[1..3], sv("-fopenmp -pthread")[..]);
    }

    #[test]
    fn compile_only_frontend_sees_link_flags_like_clang_would() {
        let b = build("-c a.c -L/x -lm -Wl,-z,now");
        assert_eq!(
            b.jobs[0].frontend,
            sv("-L/x -lm -Wl,-z,now -gline-tables-only -fno-omit-frame-pointer")
        );
        assert!(b.jobs[0].codegen.is_empty());
    }

    #[test]
    fn separate_values_are_not_inputs() {
        let b = build("-c -I inc -D X -include pre.h -MF a.d -MD -Xclang -fno-pch-timestamp -target x86_64-linux-gnu a.c");
        assert_eq!(b.jobs.len(), 1);
        assert_eq!(b.jobs[0].source, "a.c");
        assert_eq!(b.jobs[0].codegen, sv("-target x86_64-linux-gnu"));
    }

    #[test]
    fn double_dash_ends_options() {
        let b = build("-c -- -weird.c");
        assert_eq!(b.jobs[0].source, "-weird.c");
    }

    #[test]
    fn verbose_reaches_every_step() {
        let b = build("-v a.c -o p");
        assert!(b.jobs[0].frontend.contains(&"-v".to_string()));
        assert!(b.jobs[0].codegen.contains(&"-v".to_string()));
        assert!(link_strs(&b).contains(&"-v".to_string()));
    }

    #[test]
    fn helpers() {
        assert_eq!(replace_ext("obj/a.o", "d"), "obj/a.d");
        assert_eq!(replace_ext("dir.x/a", "d"), "dir.x/a.d");
        assert_eq!(replace_ext("a.b.c", "d"), "a.b.d");
        assert_eq!(stem("src/a.c"), "a");
        assert_eq!(stem("x"), "x");
        assert_eq!(stem(".hidden.c"), ".hidden");
    }
}
