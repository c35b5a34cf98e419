//! `cargo xtask same --base=OLD [--bin=NEW]`: do two builds of blkqos give
//! the same results, byte for byte?
//!
//! A change that should not change behaviour (a faster hot path, code moved
//! between crates) is checked with it: every command of
//! `xtask/same-output.txt` runs with both builds, each in a fresh empty
//! directory, and its stdout, exit status and every file it wrote (named
//! and compared byte for byte) must be equal. stderr is not compared (it
//! names files and may carry wall times); `SOURCE_DATE_EPOCH` pins the
//! reports' dates. The first difference of each
//! command is printed; the exit status is non-zero if any command differs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

pub const USAGE: &str =
    "usage: cargo xtask same --base=OLD_BLKQOS [--bin=NEW_BLKQOS] [--only=SUBSTRING]\n\
    every command of xtask/same-output.txt with both builds in fresh directories: stdout,\n\
    exit status and written files must be equal byte for byte (--bin default: this tree's\n\
    release build)\n";

/// What one command produced.
#[derive(PartialEq, Eq)]
struct Outcome {
    status: Option<i32>,
    stdout: Vec<u8>,
    /// Every file the run wrote, by path relative to its directory.
    files: BTreeMap<String, Vec<u8>>,
}

/// Split a corpus line into arguments: whitespace separates, `'...'` quotes.
fn split_args(line: &str) -> Result<Vec<String>, String> {
    let mut args = Vec::new();
    let mut cur = String::new();
    let (mut in_quote, mut any) = (false, false);
    for c in line.chars() {
        match c {
            '\'' => {
                in_quote = !in_quote;
                any = true;
            }
            c if c.is_whitespace() && !in_quote => {
                if any {
                    args.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if in_quote {
        return Err(format!("unclosed quote in `{line}`"));
    }
    if any {
        args.push(cur);
    }
    Ok(args)
}

/// The corpus's commands: (line number, arguments), comments and blank
/// lines skipped, `{root}` replaced.
fn corpus(text: &str, root: &Path) -> Result<Vec<(usize, Vec<String>)>, String> {
    let root = root.display().to_string();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let args = split_args(&line.replace("{root}", &root))
            .map_err(|e| format!("xtask/same-output.txt:{}: {e}", i + 1))?;
        out.push((i + 1, args));
    }
    Ok(out)
}

fn read_tree(
    dir: &Path,
    prefix: &str,
    files: &mut BTreeMap<String, Vec<u8>>,
) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
        let path = entry.path();
        if path.is_dir() {
            read_tree(&path, &format!("{name}/"), files)?;
        } else {
            let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            files.insert(name, bytes);
        }
    }
    Ok(())
}

fn run_in(bin: &Path, args: &[String], dir: &Path) -> Result<Outcome, String> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let out = Command::new(bin)
        .args(args)
        .current_dir(dir)
        // reports carry the time they were written: pin it
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    let mut files = BTreeMap::new();
    read_tree(dir, "", &mut files)?;
    Ok(Outcome {
        status: out.status.code(),
        stdout: out.stdout,
        files,
    })
}

/// The first difference between two outcomes, in words.
fn first_difference(base: &Outcome, new: &Outcome) -> Option<String> {
    if base.status != new.status {
        return Some(format!("exit status {:?} vs {:?}", base.status, new.status));
    }
    if base.stdout != new.stdout {
        return Some(format!(
            "stdout differs{}",
            where_differs(&base.stdout, &new.stdout)
        ));
    }
    let names = |o: &Outcome| o.files.keys().cloned().collect::<Vec<_>>();
    if names(base) != names(new) {
        return Some(format!(
            "files written: {:?} vs {:?}",
            names(base),
            names(new)
        ));
    }
    base.files.iter().find_map(|(name, bytes)| {
        let other = &new.files[name];
        (bytes != other).then(|| format!("{name} differs{}", where_differs(bytes, other)))
    })
}

fn where_differs(a: &[u8], b: &[u8]) -> String {
    let line = |s: &[u8]| {
        String::from_utf8_lossy(s)
            .lines()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let (la, lb) = (line(a), line(b));
    match la.iter().zip(&lb).position(|(x, y)| x != y) {
        Some(i) => format!(" at line {}:\n  - {}\n  + {}", i + 1, la[i], lb[i]),
        None => format!(": {} lines vs {}", la.len(), lb.len()),
    }
}

/// `path` (a blkqos build) as an absolute path, or why it cannot be run.
fn existing_build(option: &str, path: &Path) -> Result<PathBuf, String> {
    path.canonicalize()
        .map_err(|e| format!("cargo xtask same: {option}={}: {e}", path.display()))
}

pub fn main(args: &[String], workspace: &Path) -> Result<(), String> {
    let (mut base, mut bin, mut only) = (None::<PathBuf>, None::<PathBuf>, None::<String>);
    for a in args {
        if let Some(v) = a.strip_prefix("--base=") {
            base = Some(PathBuf::from(v));
        } else if let Some(v) = a.strip_prefix("--bin=") {
            bin = Some(PathBuf::from(v));
        } else if let Some(v) = a.strip_prefix("--only=") {
            only = Some(v.to_owned());
        } else {
            return Err(format!("cargo xtask same: bad option `{a}`\n{USAGE}"));
        }
    }
    let base = base.ok_or_else(|| format!("cargo xtask same: --base is required\n{USAGE}"))?;
    // each command runs in a directory of its own: a build named relative
    // to where this was called must be found from there
    let base = existing_build("--base", &base)?;
    let bin = match bin {
        Some(b) => existing_build("--bin", &b)?,
        None => super::instructions::build_release(workspace)?,
    };
    let root = workspace
        .canonicalize()
        .map_err(|e| format!("{}: {e}", workspace.display()))?;
    let list = root.join("xtask/same-output.txt");
    let text = std::fs::read_to_string(&list).map_err(|e| format!("{}: {e}", list.display()))?;
    let scratch = super::target_dir().join("same-output");
    let (mut same, mut differ) = (0, 0);
    for (line, args) in corpus(&text, &root)? {
        if only
            .as_ref()
            .is_some_and(|o| !args.join(" ").contains(o.as_str()))
        {
            continue;
        }
        let old = run_in(&base, &args, &scratch.join("base"))?;
        let new = run_in(&bin, &args, &scratch.join("new"))?;
        match first_difference(&old, &new) {
            None => same += 1,
            Some(d) => {
                differ += 1;
                println!("line {line}: {}\n  {d}", args.join(" "));
            }
        }
    }
    println!("same output: {same} commands; different: {differ}");
    if differ > 0 {
        return Err(format!("{differ} commands differ"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_keep_spaces_and_comments_are_skipped() {
        let got = corpus(
            "# c\n\nrun {root}/x.toml --io-max='253:0 riops=5' --a\n",
            Path::new("/r"),
        )
        .unwrap();
        assert_eq!(
            got,
            vec![(
                3,
                vec![
                    "run".into(),
                    "/r/x.toml".into(),
                    "--io-max=253:0 riops=5".into(),
                    "--a".into()
                ]
            )]
        );
        assert!(split_args("a 'b").is_err());
    }

    #[test]
    fn a_changed_file_is_the_difference_named() {
        let mk = |f: &[u8]| Outcome {
            status: Some(0),
            stdout: b"x\n".to_vec(),
            files: BTreeMap::from([("a.json".to_owned(), f.to_vec())]),
        };
        assert_eq!(first_difference(&mk(b"1\n2\n"), &mk(b"1\n2\n")), None);
        let d = first_difference(&mk(b"1\n2\n"), &mk(b"1\n3\n")).unwrap();
        assert!(d.starts_with("a.json differs at line 2"), "{d}");
    }
}
