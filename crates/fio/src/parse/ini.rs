//! The job-file structure: `[sections]`, comments, `include` (mirrors fio
//! 3.33 `init.c: __parse_jobs_ini`, `is_empty_or_comment` and `parse.c:
//! strip_blank_front`, `strip_blank_end`).
//!
//! This stage only splits a file into sections of raw `name=value` lines;
//! substitution and option parsing happen later, per section.

use std::io;

use super::error::{Loc, ParseError};

/// How deep `include` may nest (fio has no limit and recurses forever on an
/// include loop).
const MAX_INCLUDE_DEPTH: usize = 16;

/// File access for `include` and for job files named on the command line.
pub(crate) trait Fs {
    /// fio's `access(path, F_OK)`.
    fn exists(&self, path: &str) -> bool;
    fn read(&self, path: &str) -> io::Result<String>;
}

/// The real file system (`std::fs`).
pub(crate) struct RealFs;

impl Fs for RealFs {
    fn exists(&self, path: &str) -> bool {
        !path.is_empty() && std::path::Path::new(path).exists()
    }
    fn read(&self, path: &str) -> io::Result<String> {
        std::fs::read_to_string(path)
    }
}

/// One option line of a section, as written (comments and blanks stripped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RawOpt {
    pub text: String,
    pub loc: Loc,
}

/// A `[name]` section and its option lines (including those pulled in by
/// `include`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Section {
    pub name: String,
    /// fio: `!strncmp(name, "global", 6)`, so `[global-x]` is global too.
    pub global: bool,
    pub loc: Loc,
    pub opts: Vec<RawOpt>,
}

/// C `isspace` in the C locale.
fn is_c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

/// `strip_blank_front`.
pub(crate) fn strip_blank_front(s: &str) -> &str {
    s.trim_start_matches(is_c_space)
}

/// `strip_blank_end`: cuts at the first `;` and then at the first `#`
/// (anywhere, not only after a blank: `size=1m;x` is `1m`), then drops
/// trailing blanks and control characters.
pub(crate) fn strip_blank_end(s: &str) -> &str {
    let s = s.find(';').map_or(s, |i| &s[..i]);
    let s = s.find('#').map_or(s, |i| &s[..i]);
    s.trim_end_matches(|c: char| is_c_space(c) || c.is_ascii_control())
}

/// `is_empty_or_comment`: only blanks, or a `;`/`#` before anything else.
pub(crate) fn is_empty_or_comment(s: &str) -> bool {
    for c in s.chars() {
        if c == ';' || c == '#' {
            return true;
        }
        if !is_c_space(c) && !c.is_ascii_control() {
            return false;
        }
    }
    true
}

/// `sscanf(p, "[%255[^\n]]", name)` followed by dropping the last character:
/// fio never checks for the closing `]`, so `[x] y` names the job `x] `.
fn parse_header(p: &str, loc: Loc) -> Result<Section, ParseError> {
    let content = match p.strip_prefix('[') {
        Some(c) if !c.is_empty() => c,
        _ => return Err(loc.error(format!("option <{p}> outside of [] job section"))),
    };
    let mut end = content.len().min(255);
    while !content.is_char_boundary(end) {
        end -= 1;
    }
    let mut name = content[..end].to_string();
    name.pop();
    Ok(Section {
        global: name.starts_with("global"),
        name,
        loc,
        opts: Vec::new(),
    })
}

/// Splits a job file into sections.
pub(crate) fn read_sections(
    path: &str,
    text: &str,
    fs: &dyn Fs,
) -> Result<Vec<Section>, ParseError> {
    let mut sections: Vec<Section> = Vec::new();
    for (i, raw) in text.split('\n').enumerate() {
        let loc = Loc::new(path, i + 1);
        if let Some(cur) = sections.last_mut() {
            // Inside a section (the inner loop of __parse_jobs_ini).
            if is_empty_or_comment(raw) {
                continue;
            }
            if !strip_blank_front(raw).starts_with('[') {
                option_line(raw, loc, path, fs, &mut cur.opts, 0)?;
                continue;
            }
        }
        let p = strip_blank_end(strip_blank_front(raw));
        if is_empty_or_comment(p) {
            continue;
        }
        sections.push(parse_header(p, loc)?);
    }
    Ok(sections)
}

/// An option line inside a section: `include FILE` or a `name[=value]`.
fn option_line(
    raw: &str,
    loc: Loc,
    path: &str,
    fs: &dyn Fs,
    out: &mut Vec<RawOpt>,
    depth: usize,
) -> Result<(), ParseError> {
    let p = strip_blank_end(strip_blank_front(raw));
    if p.starts_with("include") {
        return include(p, loc, path, fs, out, depth);
    }
    out.push(RawOpt {
        text: p.to_string(),
        loc,
    });
    Ok(())
}

/// `include FILE`: the file name starts one character after `include`. A
/// relative name is tried against the working directory first and then
/// against the including file's directory, as fio does.
fn include(
    p: &str,
    loc: Loc,
    path: &str,
    fs: &dyn Fs,
    out: &mut Vec<RawOpt>,
    depth: usize,
) -> Result<(), ParseError> {
    let name = match p.get("include".len() + 1..) {
        Some(n) if !n.is_empty() => n,
        _ => return Err(loc.error(format!("`{p}`: include needs a file name"))),
    };
    if depth >= MAX_INCLUDE_DEPTH {
        return Err(loc.error(format!(
            "include of `{name}` nested more than {MAX_INCLUDE_DEPTH} deep (include loop?)"
        )));
    }
    let resolved = match path.rfind('/') {
        Some(slash) if !fs.exists(name) => format!("{}{}", &path[..=slash], name),
        _ => name.to_string(),
    };
    let text = fs
        .read(&resolved)
        .map_err(|e| loc.error(format!("unable to open include file `{resolved}`: {e}")))?;
    for (i, raw) in text.split('\n').enumerate() {
        let iloc = Loc::new(&resolved, i + 1);
        if is_empty_or_comment(raw) {
            continue;
        }
        if strip_blank_front(raw).starts_with('[') {
            return Err(iloc.error("No new sections in included files"));
        }
        option_line(raw, iloc, &resolved, fs, out, depth + 1)?;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::HashMap;

    /// An in-memory file system for include tests.
    #[derive(Default)]
    pub(crate) struct MemFs(pub HashMap<String, String>);

    impl Fs for MemFs {
        fn exists(&self, path: &str) -> bool {
            self.0.contains_key(path)
        }
        fn read(&self, path: &str) -> io::Result<String> {
            self.0
                .get(path)
                .cloned()
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "No such file or directory"))
        }
    }

    fn opts(s: &Section) -> Vec<&str> {
        s.opts.iter().map(|o| o.text.as_str()).collect()
    }

    #[test]
    fn strips_like_fio() {
        assert_eq!(strip_blank_end("size=1m ; x"), "size=1m");
        assert_eq!(strip_blank_end("size=1m;x"), "size=1m");
        assert_eq!(strip_blank_end("size=1m#x"), "size=1m");
        assert_eq!(strip_blank_end("a=b\t\r"), "a=b");
        assert_eq!(strip_blank_front(" \t a"), "a");
        assert!(is_empty_or_comment("   ; x"));
        assert!(is_empty_or_comment("  # x"));
        assert!(is_empty_or_comment(" \r"));
        assert!(!is_empty_or_comment(" a ; x"));
    }

    #[test]
    fn sections_and_comments() {
        let text = "; leading comment\n\n[global]\nbs=4k ; inline\n# c\n  rw=read  \n[job1]\r\nsize=1m#x\n[x] y\n[globalfoo]\n";
        let s = read_sections("j.fio", text, &MemFs::default()).unwrap();
        let names: Vec<_> = s
            .iter()
            .map(|s| (s.name.as_str(), s.global, s.loc.line))
            .collect();
        assert_eq!(
            names,
            [
                ("global", true, 3),
                ("job1", false, 7),
                ("x] ", false, 9),
                ("globalfoo", true, 10)
            ]
        );
        assert_eq!(opts(&s[0]), ["bs=4k", "rw=read"]);
        assert_eq!(s[0].opts[1].loc.line, 6);
        assert_eq!(opts(&s[1]), ["size=1m"]);
    }

    #[test]
    fn odd_headers() {
        let s = read_sections("j", "[]\n[x\n", &MemFs::default()).unwrap();
        assert_eq!(s[0].name, "");
        assert_eq!(s[1].name, "", "fio drops the last character whatever it is");
        let e = read_sections("j", "bs=4k\n[x]\n", &MemFs::default()).unwrap_err();
        assert_eq!(
            (e.line, e.message.as_str()),
            (1, "option <bs=4k> outside of [] job section")
        );
        assert!(read_sections("j", "[\n", &MemFs::default()).is_err());
        let long = format!("[{}]", "n".repeat(300));
        let s = read_sections("j", &long, &MemFs::default()).unwrap();
        assert_eq!(s[0].name.len(), 254);
    }

    #[test]
    fn includes() {
        let mut fs = MemFs::default();
        fs.0.insert(
            "dir/inc.fio".into(),
            "; c\nbs=8k\ninclude deeper.fio\n".into(),
        );
        fs.0.insert("dir/deeper.fio".into(), "rw=write\n".into());
        fs.0.insert("dir/bad.fio".into(), "[sect]\n".into());
        fs.0.insert("dir/loop.fio".into(), "include loop.fio\n".into());
        let s = read_sections(
            "dir/j.fio",
            "[a]\nsize=1m\ninclude inc.fio\niodepth=2\n",
            &fs,
        )
        .unwrap();
        assert_eq!(opts(&s[0]), ["size=1m", "bs=8k", "rw=write", "iodepth=2"]);
        assert_eq!(s[0].opts[1].loc, Loc::new("dir/inc.fio", 2));
        assert_eq!(s[0].opts[2].loc, Loc::new("dir/deeper.fio", 1));

        let e = read_sections("dir/j.fio", "[a]\ninclude missing.fio\n", &fs).unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("dir/j.fio", 2));
        assert!(e.message.contains("dir/missing.fio"), "{e}");
        let e = read_sections("dir/j.fio", "[a]\ninclude bad.fio\n", &fs).unwrap_err();
        assert_eq!(e.message, "No new sections in included files");
        let e = read_sections("dir/j.fio", "[a]\ninclude loop.fio\n", &fs).unwrap_err();
        assert!(e.message.contains("nested"), "{e}");
        assert!(read_sections("j", "[a]\ninclude\n", &fs).is_err());
        // An include outside a section is an option outside a section.
        assert!(read_sections("dir/j.fio", "include inc.fio\n[a]\n", &fs).is_err());
    }
}
