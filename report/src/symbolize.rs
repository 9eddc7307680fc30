//! Offline symbolisation of stack frames (the profiled process only records addresses and its
//! module map; heaptrack's recorder/analyser split).
//!
//! A frame is an absolute return address. We find the module whose executable range holds it,
//! subtract the module's load bias and one byte (return address → inside the call instruction),
//! and ask DWARF (via `addr2line`) for the function, inlined frames and file:line. Each module
//! file is opened once; each (module, offset) is looked up once.
//!
//! A module file that is missing, unreadable or no longer has the executable layout the profile
//! recorded is not an error: its frames are shown as `module+0xoffset`, and one warning per
//! module says why.

pub use crate::model::Frame;
use profcc_schema::Module;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::SystemTime;

impl Frame {
    fn raw(address: u64, module: Option<&Module>) -> Frame {
        Frame {
            address,
            module: module.map(|m| m.path.clone()),
            offset: module.map(|m| address.wrapping_sub(m.base)),
            function: None,
            file: None,
            line: None,
            column: None,
            inlined: false,
        }
    }

    /// `file:line` when known.
    pub fn place(&self) -> Option<String> {
        match (&self.file, self.line) {
            (Some(f), Some(l)) if l > 0 => Some(format!("{f}:{l}")),
            (Some(f), _) => Some(f.clone()),
            _ => None,
        }
    }

    /// `module+0xoffset` or the bare address.
    pub fn raw_place(&self) -> String {
        match (&self.module, self.offset) {
            (Some(m), Some(o)) => {
                let name = Path::new(m)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned());
                format!("{}+{:#x}", name.unwrap_or_else(|| m.clone()), o)
            }
            _ => format!("{:#x}", self.address),
        }
    }

    /// `function file:line` (or the raw place), `??` for an unknown function: a frame inside
    /// one string (a sharing object's `alloc_stack`, a CSV cell).
    pub fn short(&self) -> String {
        format!(
            "{} {}",
            self.function.as_deref().unwrap_or("??"),
            self.place().unwrap_or_else(|| self.raw_place())
        )
    }

    /// One line for text output: `function  file:line`, falling back to the raw place.
    pub fn describe(&self) -> String {
        let func = self.function.as_deref().unwrap_or("??");
        let place = self.place().unwrap_or_else(|| self.raw_place());
        let inl = if self.inlined { " [inlined]" } else { "" };
        format!("{func}  {place}{inl}")
    }

    /// What identifies the frame when merging stacks across processes (ASLR moves addresses).
    pub fn key(&self) -> FrameKey {
        if self.function.is_some() || self.file.is_some() {
            FrameKey::Source(self.function.clone(), self.file.clone(), self.line)
        } else if let (Some(m), Some(o)) = (&self.module, self.offset) {
            FrameKey::Module(m.clone(), o)
        } else {
            FrameKey::Address(self.address)
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FrameKey {
    Source(Option<String>, Option<String>, Option<u32>),
    Module(String, u64),
    Address(u64),
}

/// What we know about one module file on disk.
struct ModFile {
    loader: Option<addr2line::Loader>,
    /// Function symbols with a size, sorted by address: (address, size, demangled name).
    symbols: Vec<(u64, u64, String)>,
    /// Data (`STT_OBJECT`) symbols with a size, sorted by address: (address, size, demangled name).
    data_symbols: Vec<(u64, u64, String)>,
    /// File address ranges of all PT_LOAD segments (`[vaddr, vaddr + memsz)`).
    loads: Vec<(u64, u64)>,
    /// Lowest and highest (exclusive) file address of its executable PT_LOAD segments.
    exec_range: Option<(u64, u64)>,
    /// Why the file cannot be used at all.
    unusable: Option<String>,
    mtime: Option<SystemTime>,
}

impl ModFile {
    fn unusable(why: String, exec_range: Option<(u64, u64)>, mtime: Option<SystemTime>) -> ModFile {
        ModFile {
            loader: None,
            symbols: Vec::new(),
            data_symbols: Vec::new(),
            loads: Vec::new(),
            exec_range,
            unusable: Some(why),
            mtime,
        }
    }
}

#[derive(Default)]
pub struct Symbolizer {
    files: HashMap<String, ModFile>,
    cache: HashMap<(String, u64), Vec<Frame>>,
    /// Modules already judged for a given recorded layout: usable or not.
    layout_ok: HashMap<(String, u64, u64), bool>,
    warned: HashSet<String>,
    warnings: Vec<String>,
}

impl Symbolizer {
    pub fn new() -> Self {
        Self::default()
    }

    /// One line per module that could not be used (or may be stale), in first-seen order.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    fn warn(&mut self, path: &str, msg: String) {
        if self.warned.insert(path.to_string()) {
            self.warnings.push(msg);
        }
    }

    fn open(path: &str) -> ModFile {
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) => return ModFile::unusable(format!("missing ({e})"), None, None),
        };
        let mtime = meta.modified().ok();
        let data = match std::fs::read(path) {
            Ok(d) => d,
            Err(e) => return ModFile::unusable(format!("unreadable ({e})"), None, mtime),
        };
        let Some(range) = exec_range_of(&data) else {
            return ModFile::unusable(
                "not an ELF object with executable segments".into(),
                None,
                mtime,
            );
        };
        match addr2line::Loader::new(path) {
            Ok(l) => ModFile {
                loader: Some(l),
                symbols: function_symbols(&data),
                data_symbols: data_symbols(&data),
                loads: load_ranges(&data),
                exec_range: Some(range),
                unusable: None,
                mtime,
            },
            // No readable debug information: its ELF symbols still name its functions.
            Err(e) => {
                let symbols = function_symbols(&data);
                if symbols.is_empty() {
                    ModFile::unusable(
                        format!("its debug information cannot be read ({e})"),
                        Some(range),
                        mtime,
                    )
                } else {
                    ModFile {
                        loader: None,
                        symbols,
                        data_symbols: data_symbols(&data),
                        loads: load_ranges(&data),
                        exec_range: Some(range),
                        unusable: None,
                        mtime,
                    }
                }
            }
        }
    }

    /// Check a recorded module against its file once; warn once per path when it does not fit.
    fn usable(&mut self, m: &Module, profile_time: Option<SystemTime>) -> bool {
        let key = (
            m.path.clone(),
            m.start.wrapping_sub(m.base),
            m.end.wrapping_sub(m.base),
        );
        if let Some(&ok) = self.layout_ok.get(&key) {
            return ok;
        }
        let f = self
            .files
            .entry(m.path.clone())
            .or_insert_with(|| Self::open(&m.path));
        let (ok, msg) = if let Some(why) = &f.unusable {
            (
                false,
                Some(format!(
                    "{}: {why}; its frames are shown as module+offset",
                    m.path
                )),
            )
        } else if f.exec_range != Some((key.1, key.2)) {
            (
                false,
                Some(format!(
                    "{}: changed since the run (its executable segments no longer match the profile); its frames are shown as module+offset",
                    m.path
                )),
            )
        } else {
            let stale = match (f.mtime, profile_time) {
                (Some(bin), Some(prof)) => bin > prof,
                _ => false,
            };
            (
                true,
                stale.then(|| {
                    format!(
                        "{}: modified after the profile was written; its symbols may be wrong",
                        m.path
                    )
                }),
            )
        };
        if let Some(msg) = msg {
            self.warn(&m.path, msg);
        }
        self.layout_ok.insert(key, ok);
        ok
    }

    /// Symbolise one return address against a process's module map. Never fails: what cannot be
    /// resolved comes back as a raw frame.
    pub fn frames(
        &mut self,
        modules: &[Module],
        address: u64,
        profile_time: Option<SystemTime>,
    ) -> Vec<Frame> {
        let probe_abs = address.wrapping_sub(1);
        let Some(m) = modules
            .iter()
            .find(|m| m.start <= probe_abs && probe_abs < m.end)
        else {
            return vec![Frame::raw(address, None)];
        };
        if !self.usable(m, profile_time) {
            return vec![Frame::raw(address, Some(m))];
        }
        let offset = address.wrapping_sub(m.base);
        let ck = (m.path.clone(), offset);
        if let Some(cached) = self.cache.get(&ck) {
            return cached
                .iter()
                .cloned()
                .map(|mut f| {
                    f.address = address;
                    f
                })
                .collect();
        }
        let f = self.files.get(&m.path).expect("usable module was opened");
        let out = match f.loader.as_ref() {
            Some(loader) => lookup(loader, &f.symbols, address, m, offset - 1),
            None => {
                let mut raw = Frame::raw(address, Some(m));
                raw.function = symbol_name(&f.symbols, offset - 1);
                vec![raw]
            }
        };
        self.cache.insert(ck, out.clone());
        out
    }

    /// The global or static variable (an `STT_OBJECT` symbol of `.symtab` or `.dynsym`) that holds
    /// the runtime data address `address`, in the module whose loaded segments hold it. `None` when
    /// no module's file is usable or no sized symbol contains the address.
    pub fn global(
        &mut self,
        modules: &[Module],
        address: u64,
        profile_time: Option<SystemTime>,
    ) -> Option<Global> {
        // Open files without judging them first: a missing library that holds no data address
        // of interest is not worth a warning.
        let m = modules.iter().find(|m| {
            let f = self
                .files
                .entry(m.path.clone())
                .or_insert_with(|| Self::open(&m.path));
            let fa = address.wrapping_sub(m.base);
            f.loads.iter().any(|&(lo, hi)| lo <= fa && fa < hi)
        })?;
        if !self.usable(m, profile_time) {
            return None;
        }
        let f = self.files.get(&m.path)?;
        let fa = address.wrapping_sub(m.base);
        let i = f.data_symbols.partition_point(|s| s.0 <= fa);
        let (addr, size, name) = i.checked_sub(1).map(|i| &f.data_symbols[i])?;
        (fa < addr + size).then(|| Global {
            name: name.clone(),
            module: m.path.clone(),
            file_address: *addr,
            start: addr.wrapping_add(m.base),
            size: *size,
        })
    }

    /// Symbolise a whole stack (innermost first), flattening inlined frames.
    pub fn stack(
        &mut self,
        modules: &[Module],
        addresses: &[u64],
        profile_time: Option<SystemTime>,
    ) -> Vec<Frame> {
        addresses
            .iter()
            .flat_map(|&a| self.frames(modules, a, profile_time))
            .collect()
    }
}

/// A global or static variable named by the symbol table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Global {
    /// Demangled symbol name (`counters`, `ns::table`, `main::calls` for a function's static).
    pub name: String,
    /// The module file that defines it.
    pub module: String,
    /// Its address in the file (the symbol value) and at run time.
    pub file_address: u64,
    pub start: u64,
    pub size: u64,
}

/// The frame that best says where a call came from in the program: the innermost one in the
/// program's own source (allocator wrappers, std::thread and libstdc++ frames from `/usr/`
/// come first), else any with a source place, else any with a name, else the innermost.
pub fn user_frame(stack: &[Frame]) -> Option<&Frame> {
    user_frame_index(stack, &|_| false).map(|i| &stack[i])
}

/// [`user_frame`] among the frames `skip` does not reject (its index in `stack`); when `skip`
/// rejects every frame that has a place or name, among all frames.
pub fn user_frame_index(stack: &[Frame], skip: &dyn Fn(&Frame) -> bool) -> Option<usize> {
    let system = |f: &Frame| f.file.as_deref().is_some_and(|p| p.starts_with("/usr/"));
    let pick = |skip: &dyn Fn(&Frame) -> bool| {
        stack
            .iter()
            .position(|f| !skip(f) && f.file.is_some() && !system(f))
            .or_else(|| stack.iter().position(|f| !skip(f) && f.file.is_some()))
            .or_else(|| stack.iter().position(|f| !skip(f) && f.function.is_some()))
    };
    pick(skip)
        .or_else(|| pick(&|_| false))
        .or(if stack.is_empty() { None } else { Some(0) })
}

/// Whether `f` is one of the allocation wrappers `wrappers` names: linkage names as the
/// profile lists them (demangled here) or names a user gave, with or without the parameter
/// list (`xmalloc` matches `xmalloc(unsigned long)`).
pub fn is_wrapper(f: &Frame, wrappers: &[String]) -> bool {
    let Some(func) = f.function.as_deref() else {
        return false;
    };
    let bare = func.split('(').next().unwrap_or(func);
    wrappers.iter().any(|w| {
        let d = demangle(w);
        d == func || d == bare || w == func || w == bare
    })
}

fn lookup(
    loader: &addr2line::Loader,
    symbols: &[(u64, u64, String)],
    address: u64,
    m: &Module,
    probe: u64,
) -> Vec<Frame> {
    let mut out: Vec<Frame> = Vec::new();
    if let Ok(mut iter) = loader.find_frames(probe) {
        while let Ok(Some(f)) = iter.next() {
            let function = f
                .function
                .as_ref()
                .and_then(|n| n.demangle().ok())
                .map(|s| s.into_owned());
            let (file, line, column) = match &f.location {
                Some(l) => (l.file.map(str::to_owned), l.line, l.column),
                None => (None, None, None),
            };
            out.push(Frame {
                address,
                module: Some(m.path.clone()),
                offset: Some(probe + 1),
                function,
                file,
                line,
                column,
                inlined: true,
            });
        }
    }
    if let Some(last) = out.last_mut() {
        last.inlined = false;
    }
    if out.is_empty() {
        out.push(Frame::raw(address, Some(m)));
    }
    // No DWARF function (e.g. a library without -g, or a distribution's libc whose debug
    // file is not installed): the symbol table names it. A symbol whose extent holds the
    // address gives its name; otherwise the address is in an internal function a stripped
    // library keeps no name for, shown as the nearest symbol below plus the offset, as
    // glibc's backtrace_symbols and perf do (`mrand48_r+0x2b3`: code after mrand48_r).
    if out.last().is_some_and(|f| f.function.is_none()) {
        out.last_mut().unwrap().function = symbol_name(symbols, probe);
    }
    for f in &mut out {
        if let Some(file) = &mut f.file {
            *file = normalize_path(file);
        }
    }
    out
}

/// The function symbol that holds file address `probe`, else the nearest one below it with
/// the offset (`name+0x2b3`); None below the first symbol.
fn symbol_name(symbols: &[(u64, u64, String)], probe: u64) -> Option<String> {
    let i = symbols.partition_point(|s| s.0 <= probe);
    let (addr, size, name) = i.checked_sub(1).map(|i| &symbols[i])?;
    Some(if probe < addr + size {
        name.clone()
    } else {
        // The return address's offset (probe is one byte before it).
        format!("{name}+{:#x}", probe + 1 - addr)
    })
}

/// Function symbols with a size (the static table, else the dynamic one), sorted by address.
fn function_symbols(data: &[u8]) -> Vec<(u64, u64, String)> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let Ok(file) = object::File::parse(data) else {
        return Vec::new();
    };
    let collect = |syms: &mut dyn Iterator<Item = object::Symbol<'_, '_>>| {
        syms.filter(|s| s.kind() == SymbolKind::Text && s.size() > 0 && s.is_definition())
            .filter_map(|s| Some((s.address(), s.size(), demangle(s.name().ok()?))))
            .collect::<Vec<_>>()
    };
    let mut v = collect(&mut file.symbols());
    if v.is_empty() {
        v = collect(&mut file.dynamic_symbols());
    }
    v.sort_by_key(|s| s.0);
    v.dedup_by_key(|s| s.0);
    v
}

/// Data (`STT_OBJECT`) symbols with a size from `.symtab` and `.dynsym`, sorted by address
/// (one per address, the static table's name first).
fn data_symbols(data: &[u8]) -> Vec<(u64, u64, String)> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let Ok(file) = object::File::parse(data) else {
        return Vec::new();
    };
    let mut v: Vec<(u64, u64, String)> = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Data && s.size() > 0 && s.is_definition())
        .filter_map(|s| Some((s.address(), s.size(), demangle(s.name().ok()?))))
        .collect();
    // Stable: for equal addresses the `.symtab` entry (first) is kept.
    v.sort_by_key(|s| s.0);
    v.dedup_by_key(|s| s.0);
    v
}

/// File address ranges of the PT_LOAD segments.
fn load_ranges(data: &[u8]) -> Vec<(u64, u64)> {
    use object::{Object, ObjectSegment};
    let Ok(file) = object::File::parse(data) else {
        return Vec::new();
    };
    file.segments()
        .map(|s| (s.address(), s.address() + s.size()))
        .filter(|r| r.0 < r.1)
        .collect()
}

/// Resolve `.` and `..` lexically for display and aggregation:
/// `/usr/lib/gcc/x/12/../../../../include/a.h` → `/usr/include/a.h`. Relative paths keep
/// leading `..`.
pub fn normalize_path(path: &str) -> String {
    if !path.contains("/.") && !path.starts_with("./") {
        return path.to_string();
    }
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            c => parts.push(c),
        }
    }
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else if joined.is_empty() {
        ".".into()
    } else {
        joined
    }
}

/// Lowest and highest (exclusive) file virtual address of the executable PT_LOAD segments, the
/// same range the runtime records (minus the load bias).
pub fn exec_range_of(data: &[u8]) -> Option<(u64, u64)> {
    use object::{Object, ObjectSegment, SegmentFlags};
    let file = object::File::parse(data).ok()?;
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    for seg in file.segments() {
        let exec = match seg.flags() {
            SegmentFlags::Elf { p_flags } => p_flags & object::elf::PF_X != 0,
            _ => false,
        };
        if exec {
            lo = lo.min(seg.address());
            hi = hi.max(seg.address() + seg.size());
        }
    }
    (lo < hi).then_some((lo, hi))
}

/// Demangle a C++ (Itanium) or Rust symbol name; other names come back unchanged. Only
/// mangled-looking names are tried: a C symbol `s` or `i` would otherwise demangle as the
/// type encoding (`short`, `int`).
pub fn demangle(name: &str) -> String {
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            if let Ok(s) = sym.demangle(&cpp_demangle::DemangleOptions::default()) {
                return s;
            }
        }
        return addr2line::demangle_auto(name.into(), None).into_owned();
    }
    if name.starts_with("_R") {
        if let Some(s) = addr2line::demangle(name, addr2line::gimli::DW_LANG_Rust) {
            return s;
        }
    }
    name.to_string()
}

#[cfg(test)]
mod names_tests {
    use super::*;

    #[test]
    fn stripped_code_is_named_by_the_nearest_symbol_below() {
        let syms = vec![
            (0x1000, 0x20, "strdup".to_string()),
            (0x2000, 0x10, "qsort_r".to_string()),
        ];
        assert_eq!(symbol_name(&syms, 0x1010).as_deref(), Some("strdup"));
        // Past qsort_r's extent: an internal function (msort_with_tmp), return address 0x22b4.
        assert_eq!(symbol_name(&syms, 0x22b3).as_deref(), Some("qsort_r+0x2b4"));
        assert_eq!(symbol_name(&syms, 0x800), None);
    }

    #[test]
    fn wrappers_match_by_linkage_name_or_name() {
        let f = |name: &str| Frame {
            function: Some(name.into()),
            ..Frame::raw(0x1000, None)
        };
        let w = vec!["_Z7xmallocm".to_string(), "pool_get".to_string()];
        assert!(is_wrapper(&f("xmalloc(unsigned long)"), &w));
        assert!(is_wrapper(&f("pool_get"), &w));
        assert!(!is_wrapper(&f("main"), &w));
        // The first frame outside them names the object.
        let stack = vec![
            Frame {
                file: Some("/src/m.c".into()),
                line: Some(3),
                ..f("pool_get")
            },
            Frame {
                file: Some("/src/main.c".into()),
                line: Some(88),
                ..f("main")
            },
        ];
        assert_eq!(user_frame_index(&stack, &|x| is_wrapper(x, &w)), Some(1));
        assert_eq!(user_frame_index(&stack, &|_| false), Some(0));
        // Only wrappers: the stack as it is.
        assert_eq!(
            user_frame_index(&stack[..1], &|x| is_wrapper(x, &w)),
            Some(0)
        );
    }
}
