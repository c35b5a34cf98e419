//! Substitutions applied to each job-file option line before it is parsed
//! (`options.c: dup_and_sub_options`): `${VAR}` environment expansion
//! (`fio_option_dup_subs`), then the `$pagesize`, `$mb_memory` and `$ncpus`
//! keywords (`fio_keyword_replace`), then, when a keyword was replaced and the
//! value contains `+ - * /`, integer arithmetic as fio does by piping the
//! value through `bc` (`bc_calc`).

use std::sync::OnceLock;

/// Values of fio's reserved keywords (`fio_keywords_init`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Keywords {
    pub pagesize: u64,
    pub mb_memory: Option<u64>,
    pub ncpus: u64,
}

impl Keywords {
    /// This machine's values, computed once.
    pub fn system() -> Keywords {
        static KW: OnceLock<Keywords> = OnceLock::new();
        *KW.get_or_init(|| Keywords {
            pagesize: 4096,
            mb_memory: mem_total_mb(),
            ncpus: cpus_configured(),
        })
    }
}

/// `os_phys_mem() / 1 MiB`, from `/proc/meminfo`.
fn mem_total_mb() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024)
}

/// `sysconf(_SC_NPROCESSORS_CONF)`: the `cpuN` entries in sysfs.
fn cpus_configured() -> u64 {
    let from_sysfs = std::fs::read_dir("/sys/devices/system/cpu")
        .ok()
        .map(|dir| {
            dir.filter_map(Result::ok)
                .filter(|e| {
                    let name = e.file_name();
                    let name = name.to_string_lossy();
                    name.strip_prefix("cpu")
                        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                })
                .count() as u64
        });
    match from_sysfs {
        Some(n) if n > 0 => n,
        _ => std::thread::available_parallelism().map_or(1, |n| n.get() as u64),
    }
}

/// Replaces every `${NAME}` by the variable's value, or by nothing if it is
/// unset (`fio_option_dup_subs`). A `${` without a closing `}` is kept.
pub(crate) fn expand_env(s: &str, env: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else { break };
        out.push_str(&rest[..start]);
        if let Some(v) = env(&after[..end]) {
            out.push_str(&v);
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// Replaces the reserved keywords in a whole `name=value` line and, if any
/// was replaced, evaluates arithmetic in the value (`fio_keyword_replace`).
pub(crate) fn replace_keywords(line: &str, kw: &Keywords) -> Result<String, String> {
    let mut out = line.to_string();
    let mut replaced = false;
    let values = [
        ("$pagesize", Some(kw.pagesize)),
        ("$mb_memory", kw.mb_memory),
        ("$ncpus", Some(kw.ncpus)),
    ];
    for (word, value) in values {
        if out.contains(word) {
            let value = value.ok_or_else(|| format!("cannot determine the value of {word}"))?;
            out = out.replace(word, &value.to_string());
            replaced = true;
        }
    }
    if replaced {
        bc_calc(&out)
    } else {
        Ok(out)
    }
}

/// fio's `bc_calc`: when the line has `+ - * /` and no `'`, the value (after
/// the first `=`) of a short line is replaced by what `bc` prints for it.
/// `bc` runs with `scale=0`, so this is integer arithmetic; anything this
/// evaluator cannot compute is an error, as a `bc` failure is in fio.
fn bc_calc(line: &str) -> Result<String, String> {
    if !line.contains(['+', '-', '*', '/']) || line.contains('\'') {
        return Ok(line.to_string());
    }
    let Some(eq) = line.find('=') else {
        return Ok(line.to_string());
    };
    let value = &line[eq + 1..];
    if line.len() >= 128 || value.len() > 100 {
        return Ok(line.to_string());
    }
    let result = eval_integer(value).map_err(|e| {
        format!("cannot evaluate `{value}` (fio passes values with $keywords and arithmetic to bc): {e}")
    })?;
    Ok(format!("{}{}", &line[..=eq], result))
}

/// Evaluates an integer expression with `+ - * / % ^`, unary minus and
/// parentheses, with `bc`'s precedence and truncating division.
pub(crate) fn eval_integer(s: &str) -> Result<i128, String> {
    let tokens = tokenize(s)?;
    let mut p = Parser {
        tokens,
        pos: 0,
        depth: 0,
    };
    let v = p.expr()?;
    if p.pos != p.tokens.len() {
        return Err("syntax error".into());
    }
    Ok(v)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tok {
    Num(i128),
    Op(char),
}

fn tokenize(s: &str) -> Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            ' ' | '\t' => {}
            '0'..='9' => {
                let mut end = i + 1;
                while let Some(&(j, d)) = chars.peek() {
                    if !d.is_ascii_digit() {
                        break;
                    }
                    end = j + 1;
                    chars.next();
                }
                let n = s[i..end].parse::<i128>().map_err(|_| "number too large")?;
                out.push(Tok::Num(n));
            }
            '+' | '-' | '*' | '/' | '%' | '^' | '(' | ')' => out.push(Tok::Op(c)),
            other => return Err(format!("unexpected `{other}`")),
        }
    }
    Ok(out)
}

struct Parser {
    tokens: Vec<Tok>,
    pos: usize,
    depth: usize,
}

impl Parser {
    fn peek_op(&self) -> Option<char> {
        match self.tokens.get(self.pos) {
            Some(Tok::Op(c)) => Some(*c),
            _ => None,
        }
    }

    fn expr(&mut self) -> Result<i128, String> {
        let mut v = self.term()?;
        while let Some(op @ ('+' | '-')) = self.peek_op() {
            self.pos += 1;
            let r = self.term()?;
            v = if op == '+' {
                v.checked_add(r)
            } else {
                v.checked_sub(r)
            }
            .ok_or("overflow")?;
        }
        Ok(v)
    }

    fn term(&mut self) -> Result<i128, String> {
        let mut v = self.power()?;
        while let Some(op @ ('*' | '/' | '%')) = self.peek_op() {
            self.pos += 1;
            let r = self.power()?;
            v = match op {
                '*' => v.checked_mul(r).ok_or("overflow")?,
                _ if r == 0 => return Err("divide by zero".into()),
                '/' => v.checked_div(r).ok_or("overflow")?,
                _ => v.checked_rem(r).ok_or("overflow")?,
            };
        }
        Ok(v)
    }

    /// `^` is right-associative and binds tighter than `*`.
    fn power(&mut self) -> Result<i128, String> {
        let base = self.unary()?;
        if self.peek_op() != Some('^') {
            return Ok(base);
        }
        self.pos += 1;
        let exp = self.enter(|p| p.power())?;
        let exp = u32::try_from(exp).map_err(|_| "unsupported exponent")?;
        base.checked_pow(exp).ok_or_else(|| "overflow".into())
    }

    fn unary(&mut self) -> Result<i128, String> {
        if self.peek_op() == Some('-') {
            self.pos += 1;
            return self
                .enter(|p| p.unary())?
                .checked_neg()
                .ok_or_else(|| "overflow".into());
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<i128, String> {
        match self.tokens.get(self.pos).copied() {
            Some(Tok::Num(n)) => {
                self.pos += 1;
                Ok(n)
            }
            Some(Tok::Op('(')) => {
                self.pos += 1;
                let v = self.enter(|p| p.expr())?;
                if self.peek_op() != Some(')') {
                    return Err("missing `)`".into());
                }
                self.pos += 1;
                Ok(v)
            }
            _ => Err("syntax error".into()),
        }
    }

    /// Bounds recursion so that hostile input cannot overflow the stack.
    fn enter(&mut self, f: impl FnOnce(&mut Self) -> Result<i128, String>) -> Result<i128, String> {
        if self.depth >= 64 {
            return Err("expression nested too deeply".into());
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "BS" => Some("8k".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn env_expansion() {
        assert_eq!(expand_env("bs=${BS}", &env), "bs=8k");
        assert_eq!(expand_env("bs=${NOPE}", &env), "bs=");
        assert_eq!(expand_env("a${EMPTY}b${BS}c", &env), "ab8kc");
        assert_eq!(expand_env("x=${}", &env), "x=");
        assert_eq!(expand_env("x=${BS", &env), "x=${BS");
        assert_eq!(expand_env("x=$BS", &env), "x=$BS");
    }

    #[test]
    fn keywords_and_bc() {
        let kw = Keywords {
            pagesize: 4096,
            mb_memory: Some(1000),
            ncpus: 4,
        };
        assert_eq!(replace_keywords("bs=$pagesize", &kw).unwrap(), "bs=4096");
        assert_eq!(replace_keywords("bs=$pagesize*2", &kw).unwrap(), "bs=8192");
        assert_eq!(
            replace_keywords("numjobs=$ncpus/3", &kw).unwrap(),
            "numjobs=1"
        );
        assert_eq!(
            replace_keywords("size=$mb_memory-1", &kw).unwrap(),
            "size=999"
        );
        assert_eq!(
            replace_keywords("size=($ncpus+1)^2", &kw).unwrap(),
            "size=25"
        );
        // No keyword: no arithmetic either.
        assert_eq!(
            replace_keywords("filename=/a-b", &kw).unwrap(),
            "filename=/a-b"
        );
        // A keyword in a value bc cannot read: error, as in fio.
        assert!(replace_keywords("filename=/tmp/$ncpus", &kw).is_err());
        assert!(replace_keywords("bs=$pagesize/0", &kw).is_err());
        let no_mem = Keywords {
            mb_memory: None,
            ..kw
        };
        assert!(replace_keywords("size=$mb_memory", &no_mem).is_err());
    }

    #[test]
    fn arithmetic() {
        assert_eq!(eval_integer("1+2*3"), Ok(7));
        assert_eq!(eval_integer("(1+2)*3"), Ok(9));
        assert_eq!(eval_integer("-2^2"), Ok(4));
        assert_eq!(eval_integer("2^3^2"), Ok(512));
        assert_eq!(eval_integer("7/2"), Ok(3));
        assert_eq!(eval_integer("-7/2"), Ok(-3));
        assert_eq!(eval_integer("7%3"), Ok(1));
        assert!(eval_integer("1+").is_err());
        assert!(eval_integer("(1").is_err());
        assert!(eval_integer("2^-1").is_err());
        assert!(eval_integer(&"(".repeat(500)).is_err());
        assert!(eval_integer(&"-".repeat(500)).is_err());
        assert!(eval_integer(&"2^".repeat(500)).is_err());
        assert!(eval_integer("99999999999999999999999999999999999999999").is_err());
    }
}
