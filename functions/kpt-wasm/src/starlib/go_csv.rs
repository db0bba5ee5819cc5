//! Go's `encoding/csv`, as starlib's `encoding/csv.star` runs it: the
//! reader's rules (a bare `"` in an unquoted field and a stray `"` in a
//! quoted one are errors unless `lazy_quotes`; every record has the first
//! one's number of fields unless `fields_per_record` says otherwise; empty
//! and comment lines are skipped; a lone `\r` ends a line, as starlib's
//! `replacecr` makes it) with Go's error texts, and the writer's quoting.
//!
//! Written here because the `csv` crate reads more leniently than Go (a
//! bare quote is kept, not refused) and words its errors its own way; a
//! program's results would differ from the catalog function's.

/// How `read_all` reads (its keyword arguments).
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// The field separator.
    pub comma: char,
    /// Lines starting with it are skipped.
    pub comment: Option<char>,
    /// Quotes may appear in unquoted fields, and unescaped in quoted ones.
    pub lazy_quotes: bool,
    /// Leading white space of a field is dropped.
    pub trim_leading_space: bool,
    /// Fields each record must have: 0 for the first record's number,
    /// negative for any.
    pub fields_per_record: i64,
    /// Records read and dropped first.
    pub skip: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            comma: ',',
            comment: None,
            lazy_quotes: false,
            trim_leading_space: false,
            fields_per_record: 0,
            skip: 0,
        }
    }
}

const BARE_QUOTE: &str = "bare \" in non-quoted-field";
const QUOTE: &str = "extraneous or missing \" in quoted-field";

/// Go's `csv.ParseError` text.
fn parse_error(start: usize, line: usize, column: usize, err: &str) -> String {
    if start != line {
        format!("record on line {start}; parse error on line {line}, column {column}: {err}")
    } else {
        format!("parse error on line {line}, column {column}: {err}")
    }
}

/// Whether Go accepts `c` as a delimiter.
fn valid_delim(c: char) -> bool {
    c != '\0' && c != '"' && c != '\r' && c != '\n' && c != char::REPLACEMENT_CHARACTER
}

/// The lines of `source` as Go's reader reads them: each with its `\n`
/// (a `\r\n` or a lone `\r` read as `\n`), the last without one when the
/// source does not end with it.
fn lines(source: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                current.push('\n');
                out.push(std::mem::take(&mut current));
            }
            '\n' => {
                current.push('\n');
                out.push(std::mem::take(&mut current));
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The length of a line's newline (0 or 1).
fn nl_len(line: &str) -> usize {
    usize::from(line.ends_with('\n'))
}

/// Reads every record of `source`, as Go's `Reader.ReadAll` after
/// `skip` calls of `Read`.
pub fn read_all(source: &str, o: &ReadOptions) -> Result<Vec<Vec<String>>, String> {
    if !valid_delim(o.comma) || o.comment.is_some_and(|c| !valid_delim(c) || c == o.comma) {
        return Err("csv: invalid field or comment delimiter".into());
    }
    let lines = lines(source);
    let mut next = 0;
    let mut fields_per_record = o.fields_per_record;
    let mut records = Vec::new();
    let mut read = 0usize;
    loop {
        let record = match read_record(&lines, &mut next, o) {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) if read < o.skip => {
                // A skipped record's error is not reported (starlib drops
                // what `Read` returns).
                read += 1;
                let _ = e;
                continue;
            }
            Err(e) => return Err(e),
        };
        let (start, fields) = record;
        if fields_per_record > 0 {
            if fields.len() as i64 != fields_per_record && read >= o.skip {
                return Err(format!("record on line {start}: wrong number of fields"));
            }
        } else if fields_per_record == 0 {
            fields_per_record = fields.len() as i64;
        }
        if read >= o.skip {
            records.push(fields);
        }
        read += 1;
    }
    Ok(records)
}

/// One record: its first line's number and its fields; `None` at the end.
fn read_record(
    lines: &[String],
    next: &mut usize,
    o: &ReadOptions,
) -> Result<Option<(usize, Vec<String>)>, String> {
    // Skip empty and comment lines.
    let mut line = loop {
        let Some(l) = lines.get(*next) else {
            return Ok(None);
        };
        *next += 1;
        if o.comment.is_some_and(|c| l.starts_with(c)) || l == "\n" {
            continue;
        }
        break l.as_str();
    };
    let start = *next;
    let (mut at_line, mut col) = (start, 1usize);
    let mut fields = Vec::new();
    'fields: loop {
        if o.trim_leading_space {
            let i = line
                .find(|c: char| !c.is_whitespace())
                .unwrap_or(line.len());
            if i == line.len() {
                col -= nl_len(line);
            }
            line = &line[i..];
            col += i;
        }
        if !line.starts_with('"') {
            let i = line.find(o.comma);
            let field = match i {
                Some(i) => &line[..i],
                None => &line[..line.len() - nl_len(line)],
            };
            if !o.lazy_quotes {
                if let Some(j) = field.find('"') {
                    return Err(parse_error(start, at_line, col + j, BARE_QUOTE));
                }
            }
            fields.push(field.to_string());
            match i {
                Some(i) => {
                    line = &line[i + o.comma.len_utf8()..];
                    col += i + o.comma.len_utf8();
                    continue 'fields;
                }
                None => break 'fields,
            }
        }
        // A quoted field, maybe over several lines.
        let mut field = String::new();
        line = &line[1..];
        col += 1;
        loop {
            if let Some(i) = line.find('"') {
                field.push_str(&line[..i]);
                line = &line[i + 1..];
                col += i + 1;
                let rest = line.chars().next();
                if rest == Some('"') {
                    field.push('"');
                    line = &line[1..];
                    col += 1;
                } else if rest == Some(o.comma) {
                    line = &line[o.comma.len_utf8()..];
                    col += o.comma.len_utf8();
                    fields.push(field);
                    continue 'fields;
                } else if nl_len(line) == line.len() {
                    fields.push(field);
                    break 'fields;
                } else if o.lazy_quotes {
                    field.push('"');
                } else {
                    return Err(parse_error(start, at_line, col - 1, QUOTE));
                }
            } else if !line.is_empty() {
                field.push_str(line);
                col += line.len();
                match lines.get(*next) {
                    Some(l) => {
                        *next += 1;
                        line = l.as_str();
                        at_line += 1;
                        col = 1;
                    }
                    None => {
                        // The source ends inside the quotes.
                        if !o.lazy_quotes {
                            return Err(parse_error(start, at_line, col, QUOTE));
                        }
                        fields.push(field);
                        break 'fields;
                    }
                }
            } else {
                if !o.lazy_quotes {
                    return Err(parse_error(start, at_line, col, QUOTE));
                }
                fields.push(field);
                break 'fields;
            }
        }
    }
    Ok(Some((start, fields)))
}

/// Whether Go's writer quotes `field`.
fn needs_quotes(field: &str, comma: char) -> bool {
    if field.is_empty() {
        return false;
    }
    if field == "\\." {
        return true;
    }
    if field.contains(comma) || field.contains(['"', '\r', '\n']) {
        return true;
    }
    field.chars().next().is_some_and(char::is_whitespace)
}

/// The records as Go's `Writer.WriteAll` writes them (`\n` line ends).
pub fn write_all(records: &[Vec<String>], comma: char) -> Result<String, String> {
    if !valid_delim(comma) {
        return Err("csv: invalid field or comment delimiter".into());
    }
    let mut out = String::new();
    for record in records {
        for (n, field) in record.iter().enumerate() {
            if n > 0 {
                out.push(comma);
            }
            if !needs_quotes(field, comma) {
                out.push_str(field);
                continue;
            }
            out.push('"');
            for c in field.chars() {
                match c {
                    '"' => out.push_str("\"\""),
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        out.push('\n');
    }
    Ok(out)
}

/// A value as Go's `fmt.Sprintf("%v", v)` prints what starlib's
/// `util.Unmarshal` makes of it.
pub fn go_value(v: &serde_json::Value) -> String {
    use serde_json::Value as J;
    match v {
        J::Null => "<nil>".into(),
        J::Bool(b) => b.to_string(),
        J::String(s) => s.clone(),
        J::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            (_, _, Some(f)) => go_float(f),
            _ => n.to_string(),
        },
        J::Array(items) => format!(
            "[{}]",
            items.iter().map(go_value).collect::<Vec<_>>().join(" ")
        ),
        J::Object(map) => {
            let mut pairs: Vec<_> = map.iter().collect();
            pairs.sort_by(|a, b| a.0.cmp(b.0));
            format!(
                "map[{}]",
                pairs
                    .iter()
                    .map(|(k, v)| format!("{k}:{}", go_value(v)))
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        }
    }
}

/// A float as Go's `%v` prints it (`strconv.FormatFloat(f, 'g', -1, 64)`):
/// the shortest digits, in `%e` form when the exponent is under -4 or at
/// least 6.
pub fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // Rust's `{:e}` gives the shortest digits: `d.ddde[-]x`.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        return go_exponent(mantissa, exp);
    }
    format!("{f}")
}

fn go_exponent(mantissa: &str, exp: i32) -> String {
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(source: &str) -> Result<Vec<Vec<String>>, String> {
        read_all(source, &ReadOptions::default())
    }

    fn rows(rows: &[&[&str]]) -> Vec<Vec<String>> {
        rows.iter()
            .map(|r| r.iter().map(|s| s.to_string()).collect())
            .collect()
    }

    #[test]
    fn starlibs_case_reads() {
        assert_eq!(
            read("a,b,c\n1,2,3\n4,5,6\n7,8,9\n").unwrap(),
            rows(&[
                &["a", "b", "c"],
                &["1", "2", "3"],
                &["4", "5", "6"],
                &["7", "8", "9"]
            ])
        );
    }

    // Cases from Go's encoding/csv reader tests (columns 1-based, as since
    // Go 1.17).
    #[test]
    fn quoted_fields_escapes_and_line_ends_read_as_go_reads_them() {
        assert_eq!(read("a,\"b\nc\"d,e").unwrap_err(), "record on line 1; parse error on line 2, column 2: extraneous or missing \" in quoted-field");
        assert_eq!(
            read("\"a \"\"word\"\"\",\"b,c\"\n").unwrap(),
            rows(&[&["a \"word\"", "b,c"]])
        );
        assert_eq!(
            read("\"two\nline\",\"one line\",\"three\nline\nfield\"").unwrap(),
            rows(&[&["two\nline", "one line", "three\nline\nfield"]])
        );
        assert_eq!(
            read("a,b,c\r\nd,e,f\r\n").unwrap(),
            rows(&[&["a", "b", "c"], &["d", "e", "f"]])
        );
        assert_eq!(read("a,b\rc,d").unwrap(), rows(&[&["a", "b"], &["c", "d"]]));
        assert_eq!(
            read("\n\na,b\n\nc,d\n").unwrap(),
            rows(&[&["a", "b"], &["c", "d"]])
        );
        assert_eq!(
            read("a,,\n,,\n").unwrap(),
            rows(&[&["a", "", ""], &["", "", ""]])
        );
    }

    #[test]
    fn bare_and_stray_quotes_are_refused_unless_lazy() {
        assert_eq!(
            read("a \"word\",\"b\"").unwrap_err(),
            "parse error on line 1, column 3: bare \" in non-quoted-field"
        );
        assert_eq!(
            read("\"a \"word\",\"b\"").unwrap_err(),
            "parse error on line 1, column 4: extraneous or missing \" in quoted-field"
        );
        assert_eq!(
            read("\"abc").unwrap_err(),
            "parse error on line 1, column 5: extraneous or missing \" in quoted-field"
        );
        let lazy = ReadOptions {
            lazy_quotes: true,
            ..ReadOptions::default()
        };
        assert_eq!(
            read_all("a \"word\",\"b\"", &lazy).unwrap(),
            rows(&[&["a \"word\"", "b"]])
        );
        assert_eq!(
            read_all("\"a \"word\",b", &lazy).unwrap(),
            rows(&[&["a \"word", "b"]])
        );
    }

    #[test]
    fn the_first_record_sets_the_number_of_fields() {
        assert_eq!(
            read("a,b\nc,d,e\n").unwrap_err(),
            "record on line 2: wrong number of fields"
        );
        let any = ReadOptions {
            fields_per_record: -1,
            ..ReadOptions::default()
        };
        assert_eq!(
            read_all("a,b\nc,d,e\n", &any).unwrap(),
            rows(&[&["a", "b"], &["c", "d", "e"]])
        );
        let two = ReadOptions {
            fields_per_record: 2,
            ..ReadOptions::default()
        };
        assert_eq!(
            read_all("a,b,c\n", &two).unwrap_err(),
            "record on line 1: wrong number of fields"
        );
    }

    #[test]
    fn separators_comments_spaces_and_skipped_records() {
        let o = ReadOptions {
            comma: ';',
            comment: Some('#'),
            trim_leading_space: true,
            skip: 1,
            ..ReadOptions::default()
        };
        assert_eq!(
            read_all("name;size\n# a comment\n  web; 2\napi;3\n", &o).unwrap(),
            rows(&[&["web", "2"], &["api", "3"]])
        );
        let bad = ReadOptions {
            comma: '"',
            ..ReadOptions::default()
        };
        assert_eq!(
            read_all("a", &bad).unwrap_err(),
            "csv: invalid field or comment delimiter"
        );
    }

    #[test]
    fn the_writer_quotes_as_go_does() {
        let records = rows(&[
            &["1", "2", "3"],
            &["a,b", "say \"hi\"", " lead"],
            &["", "two\nlines", "\\."],
        ]);
        assert_eq!(
            write_all(&records, ',').unwrap(),
            "1,2,3\n\"a,b\",\"say \"\"hi\"\"\",\" lead\"\n,\"two\nlines\",\"\\.\"\n"
        );
        assert_eq!(
            write_all(&rows(&[&["a;b", "c"]]), ';').unwrap(),
            "\"a;b\";c\n"
        );
    }

    #[test]
    fn values_print_as_gos_percent_v() {
        use serde_json::json;
        let cases = [
            (json!(1), "1"),
            (json!(1.5), "1.5"),
            (json!(3.0), "3"),
            (json!(1000000.0), "1e+06"),
            (json!(123456.0), "123456"),
            (json!(0.0001), "0.0001"),
            (json!(0.00001), "1e-05"),
            (json!(true), "true"),
            (json!(null), "<nil>"),
            (json!(["a", 1]), "[a 1]"),
            (json!({"b": 1, "a": "x"}), "map[a:x b:1]"),
        ];
        for (v, want) in cases {
            assert_eq!(go_value(&v), want, "{v}");
        }
    }
}
