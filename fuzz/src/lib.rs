//! The fuzz entry points live in `entry.rs`, which the stable-Rust random-input
//! test (`crates/kapi/tests/chaos/props.rs`) includes too, so both run the same code.

#[path = "entry.rs"]
pub mod entry;
