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
