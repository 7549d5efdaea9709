//! The label selector lexer and parser (upstream's `labels.Parser` grammar).

use super::*;

pub(super) fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

pub(super) fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

pub(super) fn symbol_token(s: &str) -> Option<Token> {
    Some(match s {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

/// Splits the input into tokens, always ending with `EndOfString`. Symbols are matched
/// longest-first (`!=` before `!`); anything else up to a blank or symbol is an
/// identifier, with `in`/`notin` recognised as keywords.
pub(super) fn lex(s: &str) -> Vec<Item> {
    let bytes = s.as_bytes();
    let mut items = Vec::new();
    let mut pos = 0;
    loop {
        while pos < bytes.len() && is_blank(bytes[pos]) {
            pos += 1;
        }
        if pos == bytes.len() {
            items.push(Item {
                tok: Token::EndOfString,
                lit: String::new(),
            });
            return items;
        }
        let start = pos;
        if is_special(bytes[pos]) {
            pos += 1;
            // Two-byte symbols are ASCII; a multi-byte character after a symbol
            // is not one (and slicing into it would panic).
            let two = pos < bytes.len()
                && bytes[pos].is_ascii()
                && symbol_token(&s[start..pos + 1]).is_some();
            if two {
                pos += 1;
            }
        } else {
            while pos < bytes.len() && !is_special(bytes[pos]) && !is_blank(bytes[pos]) {
                pos += 1;
            }
        }
        let lit = &s[start..pos];
        let tok = symbol_token(lit).unwrap_or(match lit {
            "in" => Token::In,
            "notin" => Token::NotIn,
            _ => Token::Identifier,
        });
        items.push(Item {
            tok,
            lit: lit.to_string(),
        });
    }
}

// ---------------------------------------------------------------------------
// Parser

/// Where the parser is: `in`/`notin` are operators after a key but plain identifiers
/// wherever a key or value is expected (so `in=notin` and `x in (in)` are valid).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ctx {
    KeyAndOperator,
    Values,
}

pub(super) struct Parser {
    pub(super) items: Vec<Item>,
    pub(super) pos: usize,
}

type Step<T> = Result<T, String>;

impl Parser {
    fn peek(&self, ctx: Ctx) -> (Token, String) {
        // The lexer always ends with EndOfString, and parsing stops there.
        let item = &self.items[self.pos.min(self.items.len() - 1)];
        let tok = match (ctx, item.tok) {
            (Ctx::Values, Token::In | Token::NotIn) => Token::Identifier,
            (_, tok) => tok,
        };
        (tok, item.lit.clone())
    }

    fn next(&mut self, ctx: Ctx) -> (Token, String) {
        let item = self.peek(ctx);
        self.pos += 1;
        item
    }

    pub(super) fn parse_all(&mut self) -> Result<Vec<Requirement>, SelectorError> {
        let mut requirements = Vec::new();
        loop {
            let (tok, lit) = self.peek(Ctx::Values);
            match tok {
                Token::Identifier | Token::DoesNotExist => {
                    let req = self.parse_requirement().map_err(|e| {
                        SelectorError::new(format!("unable to parse requirement: {e}"))
                    })?;
                    requirements.push(req);
                    let (tok, lit) = self.next(Ctx::Values);
                    match tok {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (tok, lit) = self.peek(Ctx::Values);
                            if tok != Token::Identifier && tok != Token::DoesNotExist {
                                return Err(SelectorError::new(format!(
                                    "found '{lit}', expected: identifier after ','"
                                )));
                            }
                        }
                        _ => {
                            return Err(SelectorError::new(format!(
                                "found '{lit}', expected: ',' or 'end of string'"
                            )))
                        }
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(SelectorError::new(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    )))
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Step<Requirement> {
        let (key, inferred) = self.parse_key_and_infer_operator()?;
        if let Some(op) = inferred {
            return Requirement::new(key, op, Vec::new()).map_err(|e| e.message);
        }
        let op = self.parse_operator()?;
        let values = match op {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        Requirement::new(key, op, values).map_err(|e| e.message)
    }

    /// Reads `[!]key`; a key followed by `,` or the end is an existence test.
    fn parse_key_and_infer_operator(&mut self) -> Step<(String, Option<Operator>)> {
        let mut op = None;
        let (mut tok, mut lit) = self.next(Ctx::Values);
        if tok == Token::DoesNotExist {
            op = Some(Operator::DoesNotExist);
            (tok, lit) = self.next(Ctx::Values);
        }
        if tok != Token::Identifier {
            return Err(format!("found '{lit}', expected: identifier"));
        }
        // Upstream validates here with a nil field path, hence the "<nil>" prefix.
        if let Some(err) = key_error(&lit, "<nil>") {
            return Err(err);
        }
        let (next, _) = self.peek(Ctx::Values);
        if op.is_none() && matches!(next, Token::EndOfString | Token::Comma) {
            op = Some(Operator::Exists);
        }
        Ok((lit, op))
    }

    fn parse_operator(&mut self) -> Step<Operator> {
        let (tok, lit) = self.next(Ctx::KeyAndOperator);
        Ok(match tok {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => {
                return Err(format!(
                    "found '{lit}', expected: in, notin, =, ==, !=, gt, lt"
                ))
            }
        })
    }

    /// Reads `( v1, v2, ... )`; empty slots (`()`, `(a,)`, `(,a)`) mean the empty value.
    fn parse_values(&mut self) -> Step<Vec<String>> {
        let (tok, lit) = self.next(Ctx::Values);
        if tok != Token::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.peek(Ctx::Values);
        match tok {
            Token::Identifier | Token::Comma => {
                let values = self.parse_identifiers_list()?;
                let (tok, _) = self.next(Ctx::Values);
                if tok != Token::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(values.into_iter().collect())
            }
            Token::ClosedPar => {
                self.next(Ctx::Values);
                Ok(vec![String::new()])
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    /// Returns a sorted, deduplicated set, like upstream's `sets.String`.
    fn parse_identifiers_list(&mut self) -> Step<BTreeSet<String>> {
        let mut set = BTreeSet::new();
        loop {
            let (tok, lit) = self.next(Ctx::Values);
            match tok {
                Token::Identifier => {
                    set.insert(lit);
                    let (tok, lit) = self.peek(Ctx::Values);
                    match tok {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(set),
                        _ => return Err(format!("found '{lit}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    let (tok, _) = self.peek(Ctx::Values);
                    if tok == Token::ClosedPar {
                        set.insert(String::new());
                        return Ok(set);
                    }
                    if tok == Token::Comma {
                        set.insert(String::new());
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    /// Reads the single value after `=`, `==`, `!=`, `>` or `<`; nothing means "".
    fn parse_exact_value(&mut self) -> Step<Vec<String>> {
        let (tok, _) = self.peek(Ctx::Values);
        if matches!(tok, Token::EndOfString | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        let (tok, lit) = self.next(Ctx::Values);
        if tok == Token::Identifier {
            Ok(vec![lit])
        } else {
            Err(format!("found '{lit}', expected: identifier"))
        }
    }
}

// ---------------------------------------------------------------------------
// Validation (upstream `content.IsLabelKey`, `IsLabelValue`, `IsDNS1123Subdomain`)
