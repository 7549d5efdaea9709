//! CEL's lexical rules the API shares: the reserved words (cel-go's grammar,
//! the set Kubernetes also escapes property names against) and what an
//! identifier is. Policy variable names must be identifiers
//! (`kapi-resources`' admissionregistration validation); CRD property names
//! that are reserved words are exposed to CEL as `__<word>__`
//! (`kapi-apiextensions`' structural CEL values).

/// Words CEL's grammar reserves: the literals, `in`, and words kept for
/// future use (`namespace` among them, which Kubernetes uses heavily).
pub const RESERVED_WORDS: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// Whether `name` is a CEL reserved word.
pub fn is_reserved(name: &str) -> bool {
    RESERVED_WORDS.contains(&name)
}

/// Whether `name` is a CEL identifier: `[_a-zA-Z][_a-zA-Z0-9]*`, not reserved.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !is_reserved(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers() {
        assert!(is_identifier("foo_1"));
        assert!(is_identifier("_x"));
        assert!(!is_identifier("1foo"));
        assert!(!is_identifier("in"));
        assert!(!is_identifier("namespace"));
        assert!(!is_identifier("a-b"));
        assert!(!is_identifier(""));
        assert!(is_reserved("while") && !is_reserved("object"));
    }
}
