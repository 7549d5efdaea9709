//! Static bearer tokens, upstream's `--token-auth-file`: CSV rows
//! `token,user,uid[,"group1,group2"]`, parsed as Go's `encoding/csv` does.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use super::{UserDetails, UserInfo};

/// Error reading a token file.
#[derive(Debug, thiserror::Error)]
#[error("token file '{path}': {message}")]
pub struct TokenFileError {
    pub path: String,
    pub message: String,
}

/// Static tokens, upstream's `--token-auth-file` format: CSV rows
/// `token,user,uid[,"group1,group2"]`. Blank lines are skipped; rows with
/// fewer than 3 columns are an error; rows with an empty token are skipped;
/// for duplicate tokens the last row wins; empty group names are dropped.
#[derive(Clone, Debug, Default)]
pub struct TokenFile {
    tokens: HashMap<String, UserInfo>,
}

impl TokenFile {
    /// Read and parse the file at `path`.
    pub fn load(path: &Path) -> Result<Self, TokenFileError> {
        let text = std::fs::read_to_string(path).map_err(|e| TokenFileError {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Self::parse(&text).map_err(|mut e| {
            e.path = path.display().to_string();
            e
        })
    }

    /// Parse token file contents (the error's `path` is empty).
    pub fn parse(text: &str) -> Result<Self, TokenFileError> {
        let err = |message: String| TokenFileError {
            path: String::new(),
            message,
        };
        let mut tokens = HashMap::new();
        for (line, record) in csv_records(text).map_err(err)? {
            if record.len() < 3 {
                return Err(err(format!(
                    "line {line}: must have at least 3 columns (token, user name, user uid), found {}",
                    record.len()
                )));
            }
            if record[0].is_empty() {
                tracing::warn!(line, "empty token in token file; row skipped");
                continue;
            }
            let groups = record.get(3).map_or_else(Vec::new, |g| {
                g.split(',')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            });
            let user = UserInfo::from(UserDetails {
                name: record[1].clone(),
                uid: record[2].clone(),
                groups,
                extra: BTreeMap::new(),
            });
            if tokens.insert(record[0].clone(), user).is_some() {
                tracing::warn!(line, "duplicate token in token file; the later row wins");
            }
        }
        Ok(TokenFile { tokens })
    }

    /// The same tokens, each user changed by `f`.
    pub fn map_users(self, f: impl Fn(UserInfo) -> UserInfo) -> TokenFile {
        TokenFile {
            tokens: self.tokens.into_iter().map(|(t, u)| (t, f(u))).collect(),
        }
    }

    /// The user for `token`, if known.
    pub fn lookup(&self, token: &str) -> Option<&UserInfo> {
        self.tokens.get(token)
    }

    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

/// Parse CSV as Go's `encoding/csv` does with a variable field count:
/// `"`-quoted fields (with `""` escapes and embedded newlines/commas), blank
/// lines skipped, CRLF accepted. Returns `(line number, fields)` per record.
fn csv_records(text: &str) -> Result<Vec<(usize, Vec<String>)>, String> {
    let mut records = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1;
    while chars.peek().is_some() {
        let start_line = line;
        if let Some(fields) = csv_record(&mut chars, &mut line)? {
            records.push((start_line, fields));
        }
    }
    Ok(records)
}

/// One CSV record (up to and including its newline); `None` for a blank line.
fn csv_record(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    line: &mut usize,
) -> Result<Option<Vec<String>>, String> {
    let start_line = *line;
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false; // inside a quoted field
    let mut was_quoted = false; // the current field was quoted and closed
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => (quoted, was_quoted) = (false, true),
            (true, c) => {
                *line += usize::from(c == '\n');
                field.push(c);
            }
            (false, '"') if field.is_empty() && !was_quoted => quoted = true,
            (false, '"') => return Err(format!("line {line}: bare \" in non-quoted field")),
            (false, ',') => {
                fields.push(std::mem::take(&mut field));
                was_quoted = false;
            }
            (false, '\n') => {
                *line += 1;
                break;
            }
            (false, '\r') if chars.peek() == Some(&'\n') => {}
            (false, _) if was_quoted => {
                return Err(format!(
                    "line {line}: extraneous character after closing quote"
                ))
            }
            (false, c) => field.push(c),
        }
    }
    if quoted {
        return Err(format!("line {start_line}: unterminated quoted field"));
    }
    if fields.is_empty() && !was_quoted && field.trim().is_empty() {
        return Ok(None);
    }
    fields.push(field);
    Ok(Some(fields))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens() -> TokenFile {
        TokenFile::parse(
            "\n\
             tok1,alice,uid-1,\"dev,ops\"\n\
             \n\
             tok2,bob,uid-2\r\n\
             ,nobody,uid-0\n\
             tok3,carol,uid-3,\"system:masters\",extra-column\n",
        )
        .unwrap()
    }

    #[test]
    fn token_file_parses_upstream_format() {
        let t = tokens();
        assert_eq!(t.len(), 3);
        let alice = t.lookup("tok1").unwrap();
        assert_eq!(
            (alice.name.as_str(), alice.uid.as_str()),
            ("alice", "uid-1")
        );
        assert_eq!(alice.groups, vec!["dev", "ops"]);
        assert!(t.lookup("tok2").unwrap().groups.is_empty());
        assert_eq!(t.lookup("tok3").unwrap().groups, vec!["system:masters"]);
        assert!(t.lookup("").is_none());
    }

    #[test]
    fn token_file_errors_and_edge_cases() {
        let short = TokenFile::parse("tok,alice\n").unwrap_err();
        assert!(short.message.contains("at least 3 columns"), "{short}");
        assert!(TokenFile::parse("tok,\"alice,uid\n").is_err());
        assert!(TokenFile::parse("to\"k,alice,uid\n").is_err());
        assert!(TokenFile::parse("tok,\"al\"x,uid\n").is_err());
        let dup = TokenFile::parse("t,a,1\nt,b,2").unwrap();
        assert_eq!(dup.lookup("t").unwrap().name, "b");
        let escaped = TokenFile::parse("t,\"a\"\"b\",1,\"g1,,g2\"\n").unwrap();
        let user = escaped.lookup("t").unwrap();
        assert_eq!(user.name, "a\"b");
        assert_eq!(user.groups, vec!["g1", "g2"]);
        assert!(TokenFile::parse("").unwrap().is_empty());
    }
}
