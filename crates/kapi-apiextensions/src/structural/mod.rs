//! Structural schemas: parsing, structural checks, validation, pruning, defaulting, CEL.
