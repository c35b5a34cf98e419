//! No import cycles between modules: within every crate of the workspace,
//! the graph of `crate::`/`super::` references between sibling modules
//! (a module and its own ancestors or descendants aside: a parent declares
//! its children and children use their parent's items) has no cycle. A
//! cycle means two modules that cannot be understood, tested or moved
//! apart.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// `a::b::c` for `src/a/b/c.rs` or `src/a/b/c/mod.rs`; "" for the root.
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts.join("::")
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Paths after `crate::` or `super::` in `text` (brace groups expanded one
/// level), as (kind, segments).
fn references(text: &str) -> Vec<(&'static str, Vec<String>)> {
    let mut out = Vec::new();
    for kind in ["crate::", "super::"] {
        let mut rest = text;
        while let Some(i) = rest.find(kind) {
            let before = rest[..i].chars().last();
            rest = &rest[i + kind.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let mut supers = 1;
            let mut tail = rest;
            if kind == "super::" {
                while let Some(t) = tail.strip_prefix("super::") {
                    supers += 1;
                    tail = t;
                }
            }
            let groups: Vec<String> = if let Some(t) = tail.strip_prefix('{') {
                let end = t.find('}').unwrap_or(t.len());
                t[..end].split(',').map(|s| s.trim().to_string()).collect()
            } else {
                vec![tail
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                    .collect()]
            };
            for g in groups {
                let segs: Vec<String> = g
                    .split("::")
                    .map(|s| {
                        s.chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect::<String>()
                    })
                    .take_while(|s| !s.is_empty())
                    .collect();
                let mut v = vec!["super".to_string(); if kind == "super::" { supers } else { 0 }];
                v.extend(segs);
                out.push((if kind == "crate::" { "crate" } else { "super" }, v));
            }
        }
    }
    out
}

/// The longest known module that `segs` (absolute) starts with.
fn resolve(known: &BTreeSet<String>, segs: &[String]) -> Option<String> {
    (1..=segs.len())
        .rev()
        .map(|n| segs[..n].join("::"))
        .find(|m| known.contains(m))
}

fn related(a: &str, b: &str) -> bool {
    a.is_empty()
        || b.is_empty()
        || a.starts_with(&format!("{b}::"))
        || b.starts_with(&format!("{a}::"))
}

/// The groups of modules that reach each other (strongly connected
/// components with more than one module), each sorted.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(n) = todo.pop() {
            for m in graph.get(&n).into_iter().flatten() {
                if seen.insert(m.clone()) {
                    todo.push(m.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|n| (n, reach(n))).collect();
    let mut out: Vec<Vec<String>> = Vec::new();
    for (n, r) in &reaches {
        if !r.contains(*n) || out.iter().any(|c| c.contains(n)) {
            continue;
        }
        let comp: Vec<String> = r
            .iter()
            .filter(|m| reaches.get(m).is_some_and(|rm| rm.contains(*n)))
            .cloned()
            .collect();
        out.push(comp);
    }
    out
}

/// The two sibling modules (children of their lowest common ancestor)
/// that contain `a` and `b`: `report::page` and `metrics` are seen as
/// `report` and `metrics`.
fn siblings(a: &str, b: &str) -> (String, String) {
    let (sa, sb): (Vec<&str>, Vec<&str>) = (a.split("::").collect(), b.split("::").collect());
    let common = sa.iter().zip(&sb).take_while(|(x, y)| x == y).count();
    let up_to = |s: &[&str]| s[..(common + 1).min(s.len())].join("::");
    (up_to(&sa), up_to(&sb))
}

#[test]
fn a_child_module_imports_for_its_parent() {
    assert_eq!(
        siblings("report::page", "metrics"),
        ("report".to_string(), "metrics".to_string())
    );
    assert_eq!(
        siblings("sweep::apply", "sweep::run"),
        ("sweep::apply".to_string(), "sweep::run".to_string())
    );
    assert_eq!(
        siblings("a::b::c", "a::d"),
        ("a::b".to_string(), "a::d".to_string())
    );
}

#[test]
fn no_module_imports_another_that_imports_it_back() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut found = Vec::new();
    let mut crates = 0;
    for c in std::fs::read_dir(root.join("crates")).unwrap() {
        let src = c.unwrap().path().join("src");
        if !src.is_dir() {
            continue;
        }
        crates += 1;
        let mut files = Vec::new();
        rs_files(&src, &mut files);
        let known: BTreeSet<String> = files.iter().map(|f| module_of(&src, f)).collect();
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for f in &files {
            let me = module_of(&src, f);
            let text = std::fs::read_to_string(f).unwrap();
            // test modules may reach anywhere; comments (doc links) are
            // not imports
            let text: String = text
                .split("#[cfg(test)]")
                .next()
                .unwrap_or("")
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            let text = text.as_str();
            let base: Vec<String> =
                if f.ends_with("mod.rs") || f.ends_with("lib.rs") || f.ends_with("main.rs") {
                    me.split("::")
                        .filter(|s| !s.is_empty())
                        .map(String::from)
                        .collect()
                } else {
                    // a file module's `super` is its directory's module
                    let mut v: Vec<String> = me.split("::").map(String::from).collect();
                    v.pop();
                    v.push("<self>".into());
                    v
                };
            for (kind, segs) in references(text) {
                let abs: Vec<String> = if kind == "crate" {
                    segs
                } else {
                    let ups = segs.iter().take_while(|s| *s == "super").count();
                    let mut b = base.clone();
                    for _ in 0..ups {
                        b.pop();
                    }
                    b.retain(|s| s != "<self>");
                    b.extend(segs[ups..].iter().cloned());
                    b
                };
                if let Some(target) = resolve(&known, &abs) {
                    if target != me && !related(&me, &target) {
                        // between the siblings that contain them: a
                        // child's import is its parent module's, seen
                        // from a sibling of that parent
                        let (a, b) = siblings(&me, &target);
                        graph.entry(a).or_default().insert(b);
                    }
                }
            }
        }
        let name = src
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        for c in cycles(&graph) {
            let edges: Vec<String> = c
                .iter()
                .flat_map(|a| {
                    graph[a]
                        .iter()
                        .filter(|b| c.contains(b))
                        .map(move |b| format!("{a} -> {b}"))
                })
                .collect();
            found.push(format!("{name}: {}", edges.join(", ")));
        }
    }
    assert!(crates >= 8, "{crates} crates");
    assert!(found.is_empty(), "import cycles:\n{}", found.join("\n"));
}
