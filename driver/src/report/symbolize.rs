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

use profcc_schema::Module;
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::SystemTime;

/// One symbolised frame. An address inside inlined code yields several frames: the inlined
/// callees first (`inlined: true`), then the function they were inlined into.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Frame {
    /// Absolute return address as recorded by the runtime.
    pub address: u64,
    /// Path of the module that holds the address; null when no recorded module does.
    pub module: Option<String>,
    /// Return address minus the module's load bias (the call instruction ends just before it).
    pub offset: Option<u64>,
    /// Demangled function name, from DWARF or else the symbol table.
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub column: Option<u32>,
    pub inlined: bool,
}

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
    /// Lowest and highest (exclusive) file address of its executable PT_LOAD segments.
    exec_range: Option<(u64, u64)>,
    /// Why the file cannot be used at all.
    unusable: Option<String>,
    mtime: Option<SystemTime>,
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
            Err(e) => {
                return ModFile {
                    loader: None,
                    exec_range: None,
                    unusable: Some(format!("missing ({e})")),
                    mtime: None,
                }
            }
        };
        let mtime = meta.modified().ok();
        let exec_range = match std::fs::read(path) {
            Ok(data) => exec_range_of(&data),
            Err(e) => {
                return ModFile {
                    loader: None,
                    exec_range: None,
                    unusable: Some(format!("unreadable ({e})")),
                    mtime,
                }
            }
        };
        let Some(range) = exec_range else {
            return ModFile {
                loader: None,
                exec_range: None,
                unusable: Some("not an ELF object with executable segments".into()),
                mtime,
            };
        };
        match addr2line::Loader::new(path) {
            Ok(l) => ModFile {
                loader: Some(l),
                exec_range: Some(range),
                unusable: None,
                mtime,
            },
            Err(e) => ModFile {
                loader: None,
                exec_range: Some(range),
                unusable: Some(format!("its debug information cannot be read ({e})")),
                mtime,
            },
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
        let loader = self
            .files
            .get(&m.path)
            .and_then(|f| f.loader.as_ref())
            .expect("usable module has a loader");
        let out = lookup(loader, address, m, offset - 1);
        self.cache.insert(ck, out.clone());
        out
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

fn lookup(loader: &addr2line::Loader, address: u64, m: &Module, probe: u64) -> Vec<Frame> {
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
    // No DWARF function (e.g. a library without -g): the symbol table still names it.
    if out.last().is_some_and(|f| f.function.is_none()) {
        if let Some(sym) = loader.find_symbol(probe) {
            let name = addr2line::demangle_auto(sym.into(), None).into_owned();
            out.last_mut().unwrap().function = Some(name);
        }
    }
    out
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

/// Demangle a C++ (Itanium) symbol name; other names come back unchanged.
pub fn demangle(name: &str) -> String {
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            if let Ok(s) = sym.demangle(&cpp_demangle::DemangleOptions::default()) {
                return s;
            }
        }
    }
    addr2line::demangle_auto(name.into(), None).into_owned()
}
