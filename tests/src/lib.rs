//! Helpers for the end-to-end tests in tests/tests/*.rs: build C/C++ programs with profcc
//! (and with plain clang-22 for comparison), run them, read their profiles.

use profcc_schema::Profile;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The release binaries `cargo xtask build` made.
pub fn bin(name: &str) -> PathBuf {
    let p = root().join("target/release").join(name);
    assert!(p.exists(), "{} missing: run `cargo xtask build` (or `cargo xtask test`)", p.display());
    p
}

pub fn profcc() -> PathBuf {
    bin("profcc")
}

pub fn profcxx() -> PathBuf {
    bin("profcc++")
}

pub fn fixture(rel: &str) -> PathBuf {
    root().join("tests/fixtures").join(rel)
}

/// A scratch directory with helpers to build and run programs in it.
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Default for Scratch {
    fn default() -> Self {
        Self::new()
    }
}

impl Scratch {
    pub fn new() -> Self {
        Scratch { dir: tempfile::Builder::new().prefix("profcc-test").tempdir().unwrap() }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// Run a compiler with args in the scratch dir; panic with its stderr on failure.
    pub fn compile(&self, compiler: &Path, args: &[&str]) -> Output {
        let out = Command::new(compiler).current_dir(self.dir.path()).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{} {:?} failed:\n{}",
            compiler.display(),
            args,
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Run a built program with `PROFCC_OPTIONS=out=<name>.json[:extra]`; return its output
    /// and its profile.
    pub fn run_profiled(&self, exe: &str, args: &[&str], extra_options: &str) -> (Output, Profile) {
        let profile = self.path(&format!("{exe}.profile.json"));
        let _ = std::fs::remove_file(&profile);
        let mut opts = format!("out={}", profile.display());
        if !extra_options.is_empty() {
            opts.push(':');
            opts.push_str(extra_options);
        }
        let out = Command::new(self.path(exe))
            .current_dir(self.dir.path())
            .args(args)
            .env("PROFCC_OPTIONS", opts)
            .output()
            .unwrap();
        let p = profcc_schema::read(&profile).unwrap_or_else(|e| {
            panic!("{exe}: no profile ({e}); stderr:\n{}", String::from_utf8_lossy(&out.stderr))
        });
        (out, p)
    }

    pub fn run_plain(&self, exe: &str, args: &[&str]) -> Output {
        Command::new(self.path(exe)).current_dir(self.dir.path()).args(args).output().unwrap()
    }
}

/// Sum of counts of the sites at `file_suffix:line` with the given kind.
pub fn count_at(p: &Profile, file_suffix: &str, line: u32, kind: profcc_schema::AccessKind) -> u64 {
    p.sites
        .iter()
        .filter(|s| s.file.ends_with(file_suffix) && s.line == line && s.kind == kind)
        .map(|s| s.count)
        .sum()
}

/// The line number of the first line containing `marker` in `text` (1-based).
pub fn line_of(text: &str, marker: &str) -> u32 {
    text.lines().position(|l| l.contains(marker)).unwrap_or_else(|| panic!("marker {marker} not found")) as u32 + 1
}
