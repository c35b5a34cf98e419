//! A JSON tree printed exactly like fio's `json.c` (fio 3.33):
//! `json_print_object` / `json_print_pair` / `json_print_array` /
//! `json_print_value`.
//!
//! * objects and arrays open on the current line, one member per line,
//!   members indented two spaces per level, `"key" : value`, members
//!   separated by `",\n"`, the closing bracket on its own line at the
//!   parent's level (so an empty object prints `{\n\n}`);
//! * integers print as `%lld`, floats as `%f`;
//! * strings escape only `\` and `"` (`strdup_escape`), and an empty string
//!   is *not added at all* (`strdup_escape` returns NULL for "", so
//!   `json_object_add_value_string` fails silently).

use super::cfmt;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    Str(String),
    Obj(Obj),
    Arr(Vec<Value>),
}

/// An object: pairs in insertion order (fio never sorts or dedups).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Obj(pub Vec<(String, Value)>);

impl Obj {
    pub fn new() -> Self {
        Obj(Vec::new())
    }
    /// `json_object_add_value_int` (a `long long`; u64 values wrap as in C).
    pub fn int(&mut self, k: &str, v: i64) {
        self.0.push((k.to_string(), Value::Int(v)));
    }
    /// An unsigned counter passed to `json_object_add_value_int`.
    pub fn uint(&mut self, k: &str, v: u64) {
        self.int(k, v as i64);
    }
    /// `json_object_add_value_float`.
    pub fn float(&mut self, k: &str, v: f64) {
        self.0.push((k.to_string(), Value::Float(v)));
    }
    /// `json_object_add_value_string`: skipped when `v` is empty.
    pub fn str(&mut self, k: &str, v: &str) {
        if !v.is_empty() {
            self.0.push((k.to_string(), Value::Str(v.to_string())));
        }
    }
    pub fn obj(&mut self, k: &str, v: Obj) {
        self.0.push((k.to_string(), Value::Obj(v)));
    }
    pub fn arr(&mut self, k: &str, v: Vec<Value>) {
        self.0.push((k.to_string(), Value::Arr(v)));
    }
    pub fn get(&self, k: &str) -> Option<&Value> {
        self.0.iter().find(|(n, _)| n == k).map(|(_, v)| v)
    }
}

fn indent(level: usize, out: &mut String) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

fn escape(s: &str, out: &mut String) {
    for c in s.chars() {
        if c == '\\' || c == '"' {
            out.push('\\');
        }
        out.push(c);
    }
}

/// `json_print_object` of a root object (level 0). No trailing newline.
pub fn print_root(obj: &Obj, out: &mut String) {
    print_object(obj, 0, out);
}

/// `level` is the object's own level: members go one deeper, the closing
/// brace at `level`.
fn print_object(obj: &Obj, level: usize, out: &mut String) {
    out.push_str("{\n");
    for (i, (k, v)) in obj.0.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        // json_print_pair
        indent(level + 1, out);
        out.push('"');
        out.push_str(k);
        out.push_str("\" : ");
        print_value(v, level + 1, out);
    }
    out.push('\n');
    indent(level, out);
    out.push('}');
}

fn print_array(arr: &[Value], level: usize, out: &mut String) {
    out.push_str("[\n");
    for (i, v) in arr.iter().enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        indent(level + 1, out);
        print_value(v, level + 1, out);
    }
    out.push('\n');
    indent(level, out);
    out.push(']');
}

fn print_value(v: &Value, level: usize, out: &mut String) {
    match v {
        Value::Str(s) => {
            out.push('"');
            escape(s, out);
            out.push('"');
        }
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Float(f) => out.push_str(&cfmt::f6(*f)),
        Value::Obj(o) => print_object(o, level, out),
        Value::Arr(a) => print_array(a, level, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_like_json_c() {
        let mut inner = Obj::new();
        inner.int("a", 1);
        inner.float("b", 0.5);
        let mut el = Obj::new();
        el.str("name", "x\"y\\z");
        el.str("empty", "");
        let mut root = Obj::new();
        root.str("fio version", "fio-3.33");
        root.obj("o", inner);
        root.arr("jobs", vec![Value::Obj(el)]);
        root.obj("none", Obj::new());
        root.arr("nil", vec![]);
        let mut s = String::new();
        print_root(&root, &mut s);
        let want = "{\n  \"fio version\" : \"fio-3.33\",\n  \"o\" : {\n    \"a\" : 1,\n    \"b\" : 0.500000\n  },\n  \"jobs\" : [\n    {\n      \"name\" : \"x\\\"y\\\\z\"\n    }\n  ],\n  \"none\" : {\n\n  },\n  \"nil\" : [\n\n  ]\n}";
        assert_eq!(s, want);
    }

    #[test]
    fn ints_wrap_like_long_long() {
        let mut o = Obj::new();
        o.uint("x", u64::MAX);
        let mut s = String::new();
        print_root(&o, &mut s);
        assert_eq!(s, "{\n  \"x\" : -1\n}");
    }
}
