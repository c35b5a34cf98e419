//! No function of the workspace (every crate's `src/`, and xtask's) is
//! longer than 80 lines (signature to closing brace): a long function is
//! split into named steps. Data tables are exempt by name ([`TABLES`]).
//! String and char literals and line comments are blanked before braces
//! are counted.

use std::path::{Path, PathBuf};

const MAX_LINES: usize = 80;

/// Functions that are data tables, one entry per line, exempt from the
/// limit: (file under the workspace root, function).
const TABLES: &[(&str, &str)] = &[
    // every device model parameter: name, default, range, help
    ("crates/sim/src/device/spec.rs", "params"),
    // errno to its message, as glibc's strerror words it
    ("crates/fio/src/report/cfmt.rs", "strerror"),
    // fio 3.33's default of every job option
    ("crates/workload/src/spec.rs", "new"),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The source with string and char literals and `//` comments blanked
/// (newlines kept), so that braces count code only.
fn code_only(src: &str) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == '/' && b.get(i + 1) == Some(&'/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '"' {
            // a string (raw strings have no `"` inside in this crate's code
            // that would matter: their contents are blanked the same way)
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                } else if b[i] == '\n' {
                    out.push('\n');
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
            continue;
        }
        if c == '\'' {
            // a char literal ('x', '\n', '{') — not a lifetime ('a)
            let end = if b.get(i + 1) == Some(&'\\') {
                i + 3
            } else {
                i + 2
            };
            if b.get(end) == Some(&'\'') {
                out.push_str("''");
                i = end + 1;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// `(name, first line, length in lines)` of every function with a body.
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        let t = t
            .strip_prefix("pub(crate) ")
            .or_else(|| t.strip_prefix("pub(super) "))
            .or_else(|| t.strip_prefix("pub "))
            .unwrap_or(t);
        let t = t.strip_prefix("const ").unwrap_or(t);
        let Some(rest) = t.strip_prefix("fn ") else {
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let (mut depth, mut started) = (0i64, false);
        for (j, l2) in lines.iter().enumerate().skip(i) {
            if !started && l2.trim_end().ends_with(';') && !l2.contains('{') {
                break; // a declaration without a body
            }
            for ch in l2.chars() {
                match ch {
                    '{' => {
                        depth += 1;
                        started = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if started && depth == 0 {
                out.push((name.clone(), i + 1, j - i + 1));
                break;
            }
        }
    }
    out
}

#[test]
fn no_function_is_over_80_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for e in std::fs::read_dir(root.join("crates"))
        .expect("read crates")
        .flatten()
    {
        rust_files(&e.path().join("src"), &mut files);
    }
    rust_files(&root.join("xtask/src"), &mut files);
    files.sort();
    assert!(files.len() > 100, "found only {} source files", files.len());
    let mut long = Vec::new();
    let mut tables_seen = vec![false; TABLES.len()];
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap_or(f).display().to_string();
        let code = code_only(&std::fs::read_to_string(f).expect("read"));
        for (name, line, len) in functions(&code) {
            if let Some(t) = TABLES
                .iter()
                .position(|&t| t == (rel.as_str(), name.as_str()))
            {
                tables_seen[t] = true;
                continue;
            }
            if len > MAX_LINES {
                long.push(format!("{rel}:{line} fn {name}: {len} lines"));
            }
        }
    }
    for (t, seen) in TABLES.iter().zip(&tables_seen) {
        assert!(seen, "exempt table {t:?} is gone: update TABLES");
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_LINES} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_counter_sees_a_long_function_and_ignores_braces_in_literals() {
    let body = "    let _x = 1;\n".repeat(90);
    let src =
        format!("fn long() {{\n    let _s = \"{{\"; let _c = '}}';\n{body}}}\nfn short() {{}}\n");
    let f = functions(&code_only(&src));
    assert_eq!(f.len(), 2, "{f:?}");
    assert_eq!(f[0], ("long".to_string(), 1, 93));
    assert_eq!(f[1].2, 1);
}
