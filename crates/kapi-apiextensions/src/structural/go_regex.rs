//! Go (RE2) regular expressions on the `regex` crate. The syntax is nearly the same;
//! the difference that matters for validation is that Go's `\d`, `\w`, `\s` and `\b`
//! are ASCII-only while the `regex` crate's are Unicode-aware, so `^\d+$` would
//! accept Arabic-Indic digits. [`compile`] rewrites those classes to their ASCII
//! forms before compiling.

use regex::Regex;

fn ascii_class(c: char, in_class: bool) -> Option<&'static str> {
    let (inner, negated) = match c {
        'd' => ("0-9", false),
        'D' => ("0-9", true),
        'w' => ("0-9A-Za-z_", false),
        'W' => ("0-9A-Za-z_", true),
        's' => ("\\t\\n\\f\\r ", false),
        'S' => ("\\t\\n\\f\\r ", true),
        _ => return None,
    };
    Some(match (in_class, negated, inner) {
        // Inside a class only the positive forms can be spliced in; a negated
        // one keeps the crate's ASCII-restricted spelling.
        (true, false, i) => i,
        (true, true, "0-9") => "[:^digit:]",
        (true, true, "0-9A-Za-z_") => "[:^word:]",
        (true, true, _) => "[:^space:]",
        (false, false, "0-9") => "[0-9]",
        (false, false, "0-9A-Za-z_") => "[0-9A-Za-z_]",
        (false, false, _) => "[\\t\\n\\f\\r ]",
        (false, true, "0-9") => "[^0-9]",
        (false, true, "0-9A-Za-z_") => "[^0-9A-Za-z_]",
        (false, true, _) => "[^\\t\\n\\f\\r ]",
    })
}

/// The pattern with Go's ASCII meaning of `\d \w \s \b` (and their negations).
pub(super) fn translate(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(next) = chars.next() else {
                    out.push('\\');
                    break;
                };
                if let Some(class) = ascii_class(next, in_class) {
                    out.push_str(class);
                } else if !in_class && (next == 'b' || next == 'B') {
                    out.push_str(if next == 'b' {
                        "(?-u:\\b)"
                    } else {
                        "(?-u:\\B)"
                    });
                } else {
                    out.push('\\');
                    out.push(next);
                }
            }
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                // A `]` right after `[` or `[^` is a literal.
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
                if chars.peek() == Some(&']') {
                    out.push(']');
                    chars.next();
                }
            }
            '[' if in_class && chars.peek() == Some(&':') => {
                // A POSIX class such as `[:alpha:]` inside a bracket expression.
                out.push('[');
                for d in chars.by_ref() {
                    out.push(d);
                    if d == ']' {
                        break;
                    }
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            other => out.push(other),
        }
    }
    out
}

/// Compile a Go regular expression.
pub(super) fn compile(pattern: &str) -> Result<Regex, regex::Error> {
    Regex::new(&translate(pattern))
}

/// Go's `regexp.Compile` error text for an invalid pattern
/// (`error parsing regexp: missing closing ]: `[a``), from the `regex` crate's
/// parse error; other errors keep the crate's own text.
pub(super) fn error_message(pattern: &str, err: &regex::Error) -> String {
    use regex_syntax::ast::ErrorKind as K;
    let Err(e) = regex_syntax::ast::parse::Parser::new().parse(pattern) else {
        return match err {
            regex::Error::CompiledTooBig(_) => "error parsing regexp: expression too large".into(),
            other => other.to_string(),
        };
    };
    let span = e.span();
    // An empty span points at one character (the operator without an argument).
    let at = |a: usize, b: usize| {
        let b = if b > a {
            b
        } else {
            a + pattern
                .get(a..)
                .and_then(|r| r.chars().next())
                .map_or(0, char::len_utf8)
        };
        pattern.get(a..b).unwrap_or("").to_string()
    };
    let (code, expr) = match e.kind() {
        K::ClassUnclosed => ("missing closing ]", at(span.start.offset, pattern.len())),
        K::GroupUnclosed => ("missing closing )", pattern.to_string()),
        K::GroupUnopened => ("unexpected )", pattern.to_string()),
        K::EscapeUnexpectedEof => ("trailing backslash at end of expression", String::new()),
        K::EscapeUnrecognized | K::ClassEscapeInvalid => (
            "invalid escape sequence",
            at(span.start.offset, span.end.offset),
        ),
        K::RepetitionMissing => (
            "missing argument to repetition operator",
            at(span.start.offset, span.end.offset),
        ),
        K::ClassRangeInvalid | K::ClassRangeLiteral => (
            "invalid character class range",
            at(span.start.offset, span.end.offset),
        ),
        K::RepetitionCountInvalid | K::RepetitionCountUnclosed | K::DecimalInvalid => (
            "invalid repeat count",
            at(span.start.offset, span.end.offset),
        ),
        K::UnsupportedLookAround | K::UnsupportedBackreference | K::FlagUnrecognized => (
            "invalid or unsupported Perl syntax",
            at(span.start.offset, span.end.offset),
        ),
        K::NestLimitExceeded(_) => ("expression nests too deeply", pattern.to_string()),
        _ => return err.to_string(),
    };
    format!("error parsing regexp: {code}: `{expr}`")
}
