//! `.krmignore`: gitignore patterns, relative to the package root, that hide
//! files and directories from render (kpt reads them with go-gitignore).
//!
//! Written here rather than taken from a crate: the gitignore crates walk
//! the file system, and render reads a package from memory.

/// The patterns of one `.krmignore`.
#[derive(Debug, Clone, Default)]
pub struct KrmIgnore {
    patterns: Vec<Pattern>,
}

#[derive(Debug, Clone)]
struct Pattern {
    /// The glob, without `!`, leading `/` or trailing `/`.
    glob: String,
    /// `!pattern`: re-includes what an earlier pattern excluded.
    negate: bool,
    /// Ends with `/`: matches directories only.
    dir_only: bool,
    /// Contains a `/` before its end: matched against the whole path from
    /// the root; otherwise against every path's last component.
    anchored: bool,
}

impl KrmIgnore {
    /// Parses a `.krmignore` file.
    pub fn parse(text: &str) -> KrmIgnore {
        let mut patterns = Vec::new();
        for raw in text.lines() {
            let line = raw.trim_end_matches('\r');
            let line = trim_trailing_spaces(line);
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (negate, rest) = match line.strip_prefix('!') {
                Some(rest) => (true, rest),
                None => (false, line.strip_prefix('\\').unwrap_or(line)),
            };
            let (dir_only, rest) = match rest.strip_suffix('/') {
                Some(rest) => (true, rest),
                None => (false, rest),
            };
            let anchored = rest.contains('/');
            let glob = rest.trim_start_matches('/').to_string();
            if glob.is_empty() {
                continue;
            }
            patterns.push(Pattern {
                glob,
                negate,
                dir_only,
                anchored,
            });
        }
        KrmIgnore { patterns }
    }

    /// Whether the file at `path` (slash-separated, relative to the package
    /// root) is ignored, itself or through one of its directories.
    pub fn ignores_file(&self, path: &str) -> bool {
        if self.patterns.is_empty() {
            return false;
        }
        let parts: Vec<&str> = path.split('/').collect();
        for end in 1..parts.len() {
            if self.matches(&parts[..end].join("/"), true) {
                return true;
            }
        }
        self.matches(path, false)
    }

    /// Whether the last pattern that matches `path` excludes it.
    fn matches(&self, path: &str, is_dir: bool) -> bool {
        let mut ignored = false;
        let name = path.rsplit('/').next().unwrap_or(path);
        for p in &self.patterns {
            if p.dir_only && !is_dir {
                continue;
            }
            let hit = if p.anchored {
                glob_match(p.glob.as_bytes(), path.as_bytes())
            } else {
                glob_match(p.glob.as_bytes(), name.as_bytes())
            };
            if hit {
                ignored = !p.negate;
            }
        }
        ignored
    }
}

/// gitignore drops trailing spaces unless escaped.
fn trim_trailing_spaces(line: &str) -> &str {
    let trimmed = line.trim_end_matches(' ');
    if trimmed.ends_with('\\') && trimmed.len() < line.len() {
        &line[..trimmed.len() + 1]
    } else {
        trimmed
    }
}

/// Matches a gitignore glob: `*` and `?` stay within one path component,
/// `**` spans components, `[...]` is a character class.
pub(crate) fn glob_match(pat: &[u8], text: &[u8]) -> bool {
    // Iterative matcher with backtracking on the last star, bounded by
    // pattern × text steps.
    let (mut p, mut t) = (0usize, 0usize);
    let mut star: Option<(usize, usize, bool)> = None;
    while t < text.len() {
        if p < pat.len() {
            match pat[p] {
                b'*' => {
                    let double = pat.get(p + 1) == Some(&b'*');
                    let mut next = p + if double { 2 } else { 1 };
                    if double && pat.get(next) == Some(&b'/') {
                        // `**/` also matches zero directories.
                        next += 1;
                    }
                    star = Some((next, t, double));
                    p = next;
                    continue;
                }
                b'?' if text[t] != b'/' => {
                    p += 1;
                    t += 1;
                    continue;
                }
                b'[' => {
                    if let Some((matched, len)) = class_match(&pat[p..], text[t]) {
                        if matched && text[t] != b'/' {
                            p += len;
                            t += 1;
                            continue;
                        }
                    } else if text[t] == b'[' {
                        p += 1;
                        t += 1;
                        continue;
                    }
                }
                b'\\' if pat.get(p + 1) == Some(&text[t]) => {
                    p += 2;
                    t += 1;
                    continue;
                }
                c if c == text[t] => {
                    p += 1;
                    t += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((sp, st, double)) if double || text[st] != b'/' => {
                star = Some((sp, st + 1, double));
                p = sp;
                t = st + 1;
            }
            _ => return false,
        }
    }
    pat[p..].iter().all(|&c| c == b'*' || c == b'/') && (p == pat.len() || pat[p..].contains(&b'*'))
}

/// A `[...]` class at the start of `pat`: whether `c` is in it and the
/// class's length; `None` when the class is not closed.
fn class_match(pat: &[u8], c: u8) -> Option<(bool, usize)> {
    let mut i = 1;
    let negate = matches!(pat.get(i), Some(b'!') | Some(b'^'));
    if negate {
        i += 1;
    }
    let mut found = false;
    let mut first = true;
    while i < pat.len() {
        if pat[i] == b']' && !first {
            return Some((found != negate, i + 1));
        }
        first = false;
        let lo = pat[i];
        if pat.get(i + 1) == Some(&b'-') && pat.get(i + 2).is_some_and(|&h| h != b']') {
            let hi = pat[i + 2];
            if lo <= c && c <= hi {
                found = true;
            }
            i += 3;
        } else {
            if lo == c {
                found = true;
            }
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_at_any_depth_and_directories_hide_their_files() {
        let ig = KrmIgnore::parse("# comment\n.expected\n*.tmp\nbuild/\n");
        assert!(ig.ignores_file(".expected/diff.patch"));
        assert!(ig.ignores_file("sub/.expected/results.yaml"));
        assert!(ig.ignores_file("a/b/c.tmp"));
        assert!(ig.ignores_file("build/x.yaml"));
        assert!(!ig.ignores_file("build.yaml"));
        assert!(!ig.ignores_file("resources.yaml"));
    }

    #[test]
    fn anchored_patterns_negation_and_double_stars() {
        let ig = KrmIgnore::parse("/only-root.yaml\nconf/*.yaml\n!conf/keep.yaml\n**/gen/**\n");
        assert!(ig.ignores_file("only-root.yaml"));
        assert!(!ig.ignores_file("sub/only-root.yaml"));
        assert!(ig.ignores_file("conf/a.yaml"));
        assert!(!ig.ignores_file("conf/keep.yaml"));
        assert!(!ig.ignores_file("conf/deep/a.yaml"));
        assert!(ig.ignores_file("x/gen/y.yaml"));
        assert!(ig.ignores_file("gen/y.yaml"));
    }

    #[test]
    fn classes_and_question_marks() {
        let ig = KrmIgnore::parse("file[0-9].yaml\nv?.yml\n");
        assert!(ig.ignores_file("file3.yaml"));
        assert!(!ig.ignores_file("filex.yaml"));
        assert!(ig.ignores_file("v1.yml"));
        assert!(!ig.ignores_file("v10.yml"));
    }
}
