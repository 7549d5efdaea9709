//! Table-driven tests of `kapi_apiextensions::structural`: one module per concern,
//! each case with upstream's exact error text.

mod cel;
mod nav;
mod prune_default;
mod schema;
mod validate;

use kapi_apiextensions::structural::Structural;
use serde_json::Value;

/// Parse a schema written as JSON text.
pub fn schema(v: Value) -> Structural {
    Structural::from_json(&v).expect("schema parses")
}

/// The errors as upstream prints them.
pub fn messages(errs: &[kapi_machinery::validation::FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}
