//! Tidy checks, run as plain tests: the documents that describe the code stay true to it.
//! (Generated files have their own freshness tests beside their generators: the ABI header
//! in `abi/`, `docs/options.md` in `rt/src/options.rs`.)

use profcc_tests::root;
use std::collections::BTreeSet;

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The lines of the `## title` section of a Markdown text.
fn section<'a>(text: &'a str, title: &str) -> Vec<&'a str> {
    let head = format!("## {title}");
    let mut lines = text.lines().skip_while(|l| l.trim_end() != head);
    assert!(lines.next().is_some(), "no section '{head}'");
    lines.take_while(|l| !l.starts_with("## ")).collect()
}

/// Top-level folders with tracked files (git's view in a checkout, else the file system).
fn top_level_folders() -> BTreeSet<String> {
    let out = std::process::Command::new("git")
        .current_dir(root())
        .args(["ls-files", "-z"])
        .output();
    let mut dirs = BTreeSet::new();
    match out {
        Ok(o) if o.status.success() => {
            for path in o.stdout.split(|b| *b == 0) {
                let path = String::from_utf8_lossy(path);
                if let Some((dir, _)) = path.split_once('/') {
                    dirs.insert(dir.to_string());
                }
            }
        }
        _ => {
            for e in std::fs::read_dir(root()).unwrap().flatten() {
                if e.path().is_dir() {
                    dirs.insert(e.file_name().to_string_lossy().into_owned());
                }
            }
        }
    }
    dirs.retain(|d| !d.starts_with('.') && d != "target");
    dirs
}

#[test]
fn code_map_lists_every_top_level_folder() {
    let arch = read("ARCHITECTURE.md");
    let map = section(&arch, "Code map").join("\n");
    let missing: Vec<String> = top_level_folders()
        .into_iter()
        .filter(|d| !map.contains(&format!("`{d}/")))
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's code map does not mention {missing:?}: add a row for each"
    );
}

/// Names of every `fn` defined in the workspace's Rust sources (tests included).
fn rust_fns() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let files = walkdir::WalkDir::new(root())
        .into_iter()
        .filter_entry(|e| {
            let n = e.file_name().to_string_lossy();
            e.depth() == 0 || !(n.starts_with('.') || n == "target")
        })
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "rs"));
    for e in files {
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        for (i, _) in text.match_indices("fn ") {
            let name: String = text[i + 3..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                names.insert(name);
            }
        }
    }
    names
}

/// Each bullet of "Architecture invariants" names, as ``Test: `name` ``, at least one test
/// that checks it, and every name given is a function of the workspace.
#[test]
fn every_invariant_names_an_existing_test() {
    let arch = read("ARCHITECTURE.md");
    let lines = section(&arch, "Architecture invariants");
    // Bullets, with their continuation lines joined.
    let mut bullets: Vec<String> = Vec::new();
    for l in lines {
        if let Some(b) = l.strip_prefix("- ") {
            bullets.push(b.to_string());
        } else if let (Some(last), false) = (bullets.last_mut(), l.trim().is_empty()) {
            last.push(' ');
            last.push_str(l.trim());
        }
    }
    assert!(bullets.len() >= 8, "{bullets:#?}");
    let fns = rust_fns();
    for b in &bullets {
        let Some(at) = b.find("Test: ").or_else(|| b.find("Tests: ")) else {
            panic!("invariant without 'Test: `name`': {b}");
        };
        let named: Vec<&str> = b[at..].split('`').skip(1).step_by(2).collect();
        assert!(!named.is_empty(), "invariant names no test: {b}");
        for n in named {
            let n = n.rsplit("::").next().unwrap();
            assert!(
                fns.contains(n),
                "invariant names `{n}`, which is not a function: {b}"
            );
        }
    }
}

/// Rust source with comments, string and character literals blanked (same length, lines
/// kept), so that only code is searched for paths.
fn rust_code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |n| i + n);
            blank(&mut out, i, end);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let (mut depth, mut j) = (0usize, i);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if let Some(hashes) = raw_string_at(b, i) {
            // r"...", r#"..."#
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let start = i + 2 + hashes;
            let end = b[start..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |n| start + n + close.len());
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, (j + 1).min(b.len()));
            i = j + 1;
        } else if b[i] == b'\'' {
            // A character literal ('x', '\n', '\''), not a lifetime ('a).
            let end = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .map(|n| i + 2 + n + 1)
            } else if b.get(i + 2) == Some(&b'\'') {
                Some(i + 3)
            } else {
                None
            };
            match end {
                Some(e) => {
                    blank(&mut out, i, e);
                    i = e;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The number of `#`s of a raw string literal starting at `i`, if one does.
fn raw_string_at(b: &[u8], i: usize) -> Option<usize> {
    let word_before = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
    if b[i] != b'r' || word_before {
        return None;
    }
    let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
    (b.get(i + 1 + hashes) == Some(&b'"')).then_some(hashes)
}

/// The identifier at the start of `s` (empty if none).
fn ident_at(s: &str) -> &str {
    let n = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..n]
}

/// The runtime's core modules never import each other in a circle: a lower layer (threads,
/// counts, stack, mem, ...) calls an upper one (alloc, writer) only through the lifecycle
/// fan-out in rt/src/analysis.rs. The graph: every rt/src/**/*.rs but rt/src/analyses/**
/// and lib.rs (the root, which puts the runtime together); an edge for each `crate::name`
/// path (`use` lines, groups and paths in code, tests included), for a `super::` at a
/// file's top level (its parent module) and for each `mod child;` (a parent declares its
/// children).
#[test]
fn runtime_core_has_no_import_cycle() {
    let src = root().join("rt/src");
    // Module path ("alloc::stats") -> file (relative to the root).
    let mut files = std::collections::BTreeMap::new();
    for e in walkdir::WalkDir::new(&src).into_iter().flatten() {
        let rel = e
            .path()
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if !rel.ends_with(".rs") || rel == "lib.rs" || rel.starts_with("analyses") {
            continue;
        }
        let module = rel
            .trim_end_matches(".rs")
            .trim_end_matches("/mod")
            .replace('/', "::");
        files.insert(module, format!("rt/src/{rel}"));
    }
    assert!(
        files.len() >= 10 && files.contains_key("alloc::stats"),
        "{files:?}"
    );
    // The longest core module a path of segments starts with.
    let resolve = |segs: &[&str]| -> Option<(String, String)> {
        (1..=segs.len()).rev().find_map(|n| {
            let m = segs[..n].join("::");
            files
                .contains_key(&m)
                .then(|| (m, segs.get(n).copied().unwrap_or("").to_string()))
        })
    };
    // Edges, each with a name it takes (for the message).
    let mut edges: std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>> =
        Default::default();
    for (module, file) in &files {
        let code = rust_code_only(&read(file));
        let mut add = |to: String, name: String| {
            if &to != module {
                edges
                    .entry(module.clone())
                    .or_default()
                    .entry(to)
                    .or_insert(name);
            }
        };
        // `crate::a::b::c` and `use crate::{a, b::c}`.
        for (i, _) in code.match_indices("crate::") {
            if i > 0 && {
                let c = code.as_bytes()[i - 1];
                c.is_ascii_alphanumeric() || c == b'_' || c == b'$'
            } {
                continue;
            }
            let rest = &code[i + "crate::".len()..];
            let paths: Vec<String> = if let Some(group) = rest.strip_prefix('{') {
                let body = &group[..group.find('}').unwrap_or(group.len())];
                body.split(',').map(|p| p.trim().to_string()).collect()
            } else {
                vec![rest.to_string()]
            };
            for p in paths {
                let mut segs = Vec::new();
                let mut r = p.as_str();
                loop {
                    let id = ident_at(r);
                    if id.is_empty() {
                        break;
                    }
                    segs.push(id);
                    match r[id.len()..].strip_prefix("::") {
                        Some(next) => r = next,
                        None => break,
                    }
                }
                if let Some((to, name)) = resolve(&segs) {
                    add(to, name);
                }
            }
        }
        // `super::` outside inline modules: the parent module.
        let parent = module.rsplit_once("::").map(|(p, _)| p.to_string());
        let mut inline_mods: Vec<usize> = Vec::new();
        let mut depth = 0usize;
        let bytes = code.as_bytes();
        for (i, &c) in bytes.iter().enumerate() {
            match c {
                b'{' => {
                    let before = code[..i].trim_end();
                    let word_start = before
                        .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .map_or(0, |n| n + 1);
                    if before[..word_start].trim_end().ends_with("mod")
                        && before[..word_start]
                            .trim_end()
                            .strip_suffix("mod")
                            .is_some_and(|b| {
                                b.ends_with(|c: char| c.is_whitespace()) || b.is_empty()
                            })
                    {
                        inline_mods.push(depth);
                    }
                    depth += 1;
                }
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if inline_mods.last() == Some(&depth) {
                        inline_mods.pop();
                    }
                }
                b's' if inline_mods.is_empty() && code[i..].starts_with("super::") => {
                    if i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_') {
                        continue;
                    }
                    if let Some(p) = &parent {
                        add(
                            p.clone(),
                            ident_at(&code[i + "super::".len()..]).to_string(),
                        );
                    }
                }
                _ => {}
            }
        }
        // `mod child;`
        for line in code.lines() {
            let l = line.trim();
            let l = l
                .strip_prefix("pub ")
                .or_else(|| l.strip_prefix("pub(crate) "))
                .unwrap_or(l);
            if let Some(child) = l.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
                let child = format!("{module}::{}", child.trim());
                if files.contains_key(&child) {
                    add(child, "mod".into());
                }
            }
        }
    }
    // Depth-first search; a grey target closes a cycle.
    fn visit(
        m: &str,
        edges: &std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>,
        state: &mut std::collections::BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(m.to_string(), 1);
        stack.push(m.to_string());
        for to in edges.get(m).into_iter().flat_map(|e| e.keys()) {
            match state.get(to.as_str()).copied().unwrap_or(0) {
                1 => {
                    let at = stack.iter().position(|s| s == to).unwrap();
                    let mut cycle = stack[at..].to_vec();
                    cycle.push(to.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(to, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(m.to_string(), 2);
        None
    }
    let mut state = Default::default();
    for m in files.keys() {
        if let Some(cycle) = visit(m, &edges, &mut state, &mut Vec::new()) {
            let steps: Vec<String> = cycle
                .windows(2)
                .map(|w| {
                    let name = &edges[&w[0]][&w[1]];
                    let name = if name.is_empty() { "use" } else { name };
                    format!("{} -> {} ({name})", files[&w[0]], files[&w[1]])
                })
                .collect();
            panic!(
                "the runtime's core imports in a circle (an upward call belongs in the lifecycle \
                 fan-out, rt/src/analysis.rs):\n  {}",
                steps.join("\n  ")
            );
        }
    }
}
