//! Kubernetes label selectors written as strings (k8s.io/apimachinery's
//! `labels.Parse`, as kyaml vendors it): `a=b`, `a!=b`, `a in (x,y)`,
//! `a notin (x)`, `a`, `!a`, `a>1`, `a<1`, comma-separated, with the
//! apimachinery's validation of keys and values and its error texts.
//! apply-replacements' `labelSelector` and `annotationSelector` and the
//! CLI's `--selector` both read them.

use std::collections::BTreeMap;

/// A parsed selector: every requirement must hold.
#[derive(Debug, Clone, Default)]
pub struct LabelSelector(Vec<Requirement>);

impl LabelSelector {
    /// Parses `s` (`""` selects everything).
    pub fn parse(s: &str) -> Result<LabelSelector, String> {
        parse_label_selector(s).map(LabelSelector)
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        selector_matches(&self.0, labels)
    }
}

/// Go's `strconv.Atoi`.
pub(crate) fn go_atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.strip_prefix('+').unwrap_or(s).parse().ok()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Error,
    End,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn keyword(s: &str) -> Option<Token> {
    Some(match s {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "in" => Token::In,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "notin" => Token::NotIn,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Splits a selector into tokens (the lexer stops at the end or a NUL).
fn lex(s: &str) -> Vec<(Token, String)> {
    let bytes = s.as_bytes();
    let at = |i: usize| bytes.get(i).copied().unwrap_or(0);
    let text =
        |a: usize, b: usize| String::from_utf8_lossy(bytes.get(a..b).unwrap_or(&[])).into_owned();
    let mut pos = 0;
    let mut tokens = Vec::new();
    loop {
        while is_whitespace(at(pos)) {
            pos += 1;
        }
        let start = pos;
        let b = at(pos);
        if b == 0 {
            tokens.push((Token::End, String::new()));
            return tokens;
        }
        if is_special(b) {
            let mut last: Option<(Token, usize)> = None;
            while is_special(at(pos)) {
                pos += 1;
                match keyword(&text(start, pos)) {
                    Some(t) => last = Some((t, pos)),
                    None if last.is_some() => {
                        pos -= 1;
                        break;
                    }
                    None => {}
                }
            }
            match last {
                Some((t, end)) => {
                    pos = end;
                    tokens.push((t, text(start, end)));
                }
                None => tokens.push((
                    Token::Error,
                    format!("error expected: keyword found '{}'", text(start, pos)),
                )),
            }
        } else {
            while at(pos) != 0 && !is_special(at(pos)) && !is_whitespace(at(pos)) {
                pos += 1;
            }
            let word = text(start, pos);
            let token = keyword(&word).unwrap_or(Token::Identifier);
            tokens.push((token, word));
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    In,
    NotIn,
    Equals,
    NotEquals,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

/// One requirement of a label selector.
#[derive(Debug, Clone)]
struct Requirement {
    key: String,
    op: Op,
    values: Vec<String>,
}

struct SelectorParser {
    tokens: Vec<(Token, String)>,
    pos: usize,
}

impl SelectorParser {
    fn item(&self, values: bool) -> (Token, String) {
        let (t, lit) = self
            .tokens
            .get(self.pos)
            .cloned()
            .unwrap_or((Token::End, String::new()));
        let t = match t {
            Token::In | Token::NotIn if values => Token::Identifier,
            t => t,
        };
        (t, lit)
    }

    fn lookahead(&self) -> (Token, String) {
        self.item(true)
    }

    fn consume(&mut self, values: bool) -> (Token, String) {
        let item = self.item(values);
        self.pos += 1;
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut reqs = Vec::new();
        loop {
            let (t, lit) = self.lookahead();
            match t {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self
                        .requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    reqs.push(r);
                    let (t, l) = self.consume(true);
                    match t {
                        Token::End => return Ok(reqs),
                        Token::Comma => {
                            let (t2, l2) = self.lookahead();
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(format!(
                                    "found '{l2}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => return Err(format!("found '{l}', expected: ',' or 'end of string'")),
                    }
                }
                Token::End => return Ok(reqs),
                _ => {
                    return Err(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    ))
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let mut op = None;
        let (mut t, mut key) = self.consume(true);
        if t == Token::DoesNotExist {
            op = Some(Op::DoesNotExist);
            (t, key) = self.consume(true);
        }
        if t != Token::Identifier {
            return Err(format!("found '{key}', expected: identifier"));
        }
        validate_label_key(&key)?;
        let (next, _) = self.lookahead();
        if op.is_some() || next == Token::End || next == Token::Comma {
            return Ok(Requirement {
                key,
                op: op.unwrap_or(Op::Exists),
                values: Vec::new(),
            });
        }
        let (t, lit) = self.consume(false);
        let op = match t {
            Token::In => Op::In,
            Token::Equals | Token::DoubleEquals => Op::Equals,
            Token::GreaterThan => Op::GreaterThan,
            Token::LessThan => Op::LessThan,
            Token::NotIn => Op::NotIn,
            Token::NotEquals => Op::NotEquals,
            _ => {
                return Err(format!(
                    "found '{lit}', expected: '=', '!=', '==', 'in', notin'"
                ))
            }
        };
        let mut values = match op {
            Op::In | Op::NotIn => self.set_values()?,
            _ => self.exact_value()?,
        };
        values.sort();
        values.dedup();
        match op {
            Op::In | Op::NotIn if values.is_empty() => {
                return Err("for 'in', 'notin' operators, values set can't be empty".into())
            }
            Op::GreaterThan | Op::LessThan => {
                if values.len() != 1 {
                    return Err("for 'Gt', 'Lt' operators, exactly one value is required".into());
                }
                if values.iter().any(|v| go_atoi(v).is_none()) {
                    return Err("for 'Gt', 'Lt' operators, the value must be an integer".into());
                }
            }
            _ => {}
        }
        for v in &values {
            validate_label_value(&key, v)?;
        }
        Ok(Requirement { key, op, values })
    }

    fn set_values(&mut self) -> Result<Vec<String>, String> {
        let (t, lit) = self.consume(true);
        if t != Token::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (t, lit) = self.lookahead();
        match t {
            Token::Identifier | Token::Comma => {
                let values = self.identifiers()?;
                if self.consume(true).0 != Token::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(values)
            }
            Token::ClosedPar => {
                self.consume(true);
                Ok(vec![String::new()])
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    fn identifiers(&mut self) -> Result<Vec<String>, String> {
        let mut values: Vec<String> = Vec::new();
        loop {
            let (t, lit) = self.consume(true);
            match t {
                Token::Identifier => {
                    values.push(lit);
                    let (t2, l2) = self.lookahead();
                    match t2 {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(values),
                        _ => return Err(format!("found '{l2}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if values.is_empty() {
                        values.push(String::new());
                    }
                    let (t2, _) = self.lookahead();
                    if t2 == Token::ClosedPar {
                        values.push(String::new());
                        return Ok(values);
                    }
                    if t2 == Token::Comma {
                        self.consume(true);
                        values.push(String::new());
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    fn exact_value(&mut self) -> Result<Vec<String>, String> {
        let (t, _) = self.lookahead();
        if t == Token::End || t == Token::Comma {
            return Ok(vec![String::new()]);
        }
        let (t, lit) = self.consume(true);
        if t == Token::Identifier {
            return Ok(vec![lit]);
        }
        Err(format!("found '{lit}', expected: identifier"))
    }
}

/// `labels.Parse`: the requirements of a selector (none for `""`).
fn parse_label_selector(s: &str) -> Result<Vec<Requirement>, String> {
    if s.is_empty() {
        return Ok(Vec::new());
    }
    SelectorParser {
        tokens: lex(s),
        pos: 0,
    }
    .parse()
}

fn selector_matches(reqs: &[Requirement], labels: &BTreeMap<String, String>) -> bool {
    reqs.iter().all(|r| {
        let value = labels.get(&r.key);
        let has = |v: &String| r.values.contains(v);
        match r.op {
            Op::In | Op::Equals => value.is_some_and(has),
            Op::NotIn | Op::NotEquals => !value.is_some_and(has),
            Op::Exists => value.is_some(),
            Op::DoesNotExist => value.is_none(),
            Op::GreaterThan | Op::LessThan => {
                let Some(have) = value.and_then(|v| go_atoi(v)) else {
                    return false;
                };
                let Some(want) = r.values.first().and_then(|v| go_atoi(v)) else {
                    return false;
                };
                if r.op == Op::GreaterThan {
                    have > want
                } else {
                    have < want
                }
            }
        }
    })
}

const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', \
     and must start and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const DNS1123_SUBDOMAIN_ERR: &str = "a DNS-1123 subdomain must consist of lower case \
     alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of \
     alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric \
     character";

/// `validation.RegexError`.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{fmt}')",
        examples.join(" or ")
    )
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]` (non-empty): a label value,
/// or the name part of a qualified name.
pub(crate) fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// The form of `validation.IsDNS1123Subdomain` (not its length): dot
/// separated labels of lower case alphanumerics and `-`, each starting and
/// ending with an alphanumeric.
pub(crate) fn is_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(|label| {
        let b = label.as_bytes();
        let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        match (b.first(), b.last()) {
            (Some(f), Some(l)) => edge(f) && edge(l) && b.iter().all(|c| edge(c) || *c == b'-'),
            _ => false,
        }
    })
}

/// `validation.IsQualifiedName`, as `invalid label key` errors.
fn validate_label_key(key: &str) -> Result<(), String> {
    let mut errs: Vec<String> = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".into());
            } else {
                if prefix.len() > 253 {
                    errs.push("prefix part must be no more than 253 characters".into());
                }
                if !is_dns1123_subdomain(prefix) {
                    errs.push(format!(
                        "prefix part {}",
                        regex_error(
                            DNS1123_SUBDOMAIN_ERR,
                            DNS1123_SUBDOMAIN_FMT,
                            &["example.com"]
                        )
                    ));
                }
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. \
                 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_ERR,
                    QUALIFIED_NAME_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            ));
            return Err(format!("invalid label key {key:?}: {}", errs.join("; ")));
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".into());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 characters".into());
    }
    if !is_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(format!("invalid label key {key:?}: {}", errs.join("; ")))
    }
}

/// `validation.IsValidLabelValue`, as `invalid label value` errors.
fn validate_label_value(key: &str, value: &str) -> Result<(), String> {
    let mut errs: Vec<String> = Vec::new();
    if value.len() > 63 {
        errs.push("must be no more than 63 characters".into());
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            &format!("({QUALIFIED_NAME_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "invalid label value: {value:?}: at key: {key:?}: {}",
            errs.join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_selectors() {
        let labels: BTreeMap<String, String> = [("a", "1"), ("b", "x")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let m = |s: &str| selector_matches(&parse_label_selector(s).expect("parses"), &labels);
        assert!(m("a=1,b!=y,b in (x,z),!c"));
        assert!(m("a>0,a<2,b notin (y)"));
        assert!(!m("c"));
        assert!(!m("a==2"));
        assert_eq!(
            parse_label_selector("a=1 b").err().as_deref(),
            Some("found 'b', expected: ',' or 'end of string'")
        );
        assert_eq!(
            parse_label_selector("a,").err().as_deref(),
            Some("found '', expected: identifier after ','")
        );
    }
}
