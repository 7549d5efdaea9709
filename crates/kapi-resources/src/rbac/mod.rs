//! The `rbac.authorization.k8s.io/v1` group: roles, clusterroles, rolebindings,
//! clusterrolebindings — upstream defaulting (`pkg/apis/rbac/v1/defaults.go`),
//! validation (`pkg/apis/rbac/validation`), immutable `roleRef`, and the
//! `NAME ROLE AGE` (+ wide `USERS GROUPS SERVICEACCOUNTS`) binding tables.
//!
//! Layout: `roles.rs` and `bindings.rs` hold the strategies; `rules.rs` the
//! rule-matching helpers an authorizer needs and the ClusterRole aggregation rule
//! (the controller that applies it lives in `kapi-server`).
//!
//! Invariants: names are path segments (`ValidateRBACName`), not DNS names, as
//! upstream; an empty `rules` reads as JSON `null`, as Go's encoder writes a nil
//! slice without `omitempty`.

pub mod bindings;
pub mod roles;
pub mod rules;

pub use bindings::{ClusterRoleBindingStrategy, RoleBindingStrategy};
pub use roles::{ClusterRoleStrategy, RoleStrategy};

/// The group name, which `roleRef.apiGroup` and user/group subjects carry.
pub const GROUP: &str = "rbac.authorization.k8s.io";
