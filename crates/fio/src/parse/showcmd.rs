//! `fio --showcmd`: a job file rendered as command-line options (mirrors
//! fio 3.33 `init.c: dump_print_option`, `dump_opt_list`).

/// Renders an option list: `--name=value ` per option (the value of
/// `description` in double quotes), `--flag ` for a bare flag.
pub(crate) fn render_opts(opts: &[(String, Option<String>)]) -> String {
    let mut out = String::new();
    for (name, value) in opts {
        match value {
            Some(v) if name == "description" => out.push_str(&format!("--{name}=\"{v}\" ")),
            Some(v) => out.push_str(&format!("--{name}={v} ")),
            None => out.push_str(&format!("--{name} ")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_like_fio() {
        let opts = vec![
            ("bs".to_string(), Some("4k".to_string())),
            ("time_based".to_string(), None),
            ("description".to_string(), Some("a b".to_string())),
        ];
        assert_eq!(
            render_opts(&opts),
            "--bs=4k --time_based --description=\"a b\" "
        );
    }
}
