//! [`KeyMap`]: which resource a storage key belongs to, so the backend
//! decorator can pick that resource's transformer. Upstream chooses the
//! transformer when it builds a resource's storage; kapi's resources share one
//! backend (and one watch over the whole keyspace), so the choice is made per
//! key, from the key prefixes the resource table declares.
//!
//! Two kinds of entries: a resource's own prefix (`/secrets/` → `secrets`),
//! and a tree whose keys name their group and resource (`/` +
//! `<group>/<plural>/…`, where upstream keeps custom resources, so their keys
//! resolve before — and after — their definition is served). A tree only
//! holds groups with a dot, as every custom resource's group has, and is
//! asked only when no resource prefix matched: `/masterleases/…` or
//! `/ranges/…` are no custom resources. A key under neither belongs to no
//! resource and is stored as it is.
//! Several resources may share a prefix (core `events` and `events.k8s.io`
//! events): the first declared wins, which is the core group's, as upstream
//! stores `events.k8s.io` under the core resource.

use std::collections::HashMap;

use crate::GroupResource;

#[derive(Debug, Clone, Default)]
pub struct KeyMap {
    /// Prefix (ending in `/`) → resource.
    prefixes: HashMap<String, GroupResource>,
    /// Prefixes (ending in `/`) followed by `<group>/<resource>/`.
    trees: Vec<String>,
}

impl KeyMap {
    /// Keys under `prefix` (a resource's list prefix, ending in `/`) belong to
    /// `group`/`resource`, unless an earlier call claimed the prefix.
    pub fn resource(&mut self, prefix: &str, group: &str, resource: &str) {
        self.prefixes
            .entry(with_slash(prefix))
            .or_insert_with(|| GroupResource::new(group, resource));
    }

    /// Keys under `prefix` continue with `<group>/<resource>/`.
    pub fn tree(&mut self, prefix: &str) {
        self.trees.push(with_slash(prefix));
    }

    /// The resource `key` belongs to.
    pub fn lookup(&self, key: &str) -> Option<GroupResource> {
        // Try each prefix of the key ending at a `/`, shortest first; a
        // resource's prefix is at most a few segments deep.
        for (i, _) in key.match_indices('/').skip(1) {
            if let Some(gr) = self.prefixes.get(&key[..=i]) {
                return Some(gr.clone());
            }
        }
        self.trees.iter().find_map(|tree| {
            let rest = key.strip_prefix(tree.as_str())?;
            let mut parts = rest.splitn(3, '/');
            let (group, resource) = (parts.next()?, parts.next()?);
            parts.next()?;
            if !group.contains('.') {
                return None;
            }
            Some(GroupResource::new(group, resource))
        })
    }
}

fn with_slash(prefix: &str) -> String {
    if prefix.ends_with('/') {
        prefix.to_owned()
    } else {
        format!("{prefix}/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_trees_and_strangers() {
        let mut m = KeyMap::default();
        m.resource("/secrets/", "", "secrets");
        m.resource("/events", "", "events");
        m.resource("/events/", "events.k8s.io", "events");
        m.resource("/services/specs/", "", "services");
        m.tree("/");
        let gr = |k: &str| m.lookup(k).map(|g| g.to_string());
        assert_eq!(gr("/secrets/default/s").as_deref(), Some("secrets"));
        assert_eq!(gr("/secrets").as_deref(), None);
        assert_eq!(gr("/events/ns/e").as_deref(), Some("events"));
        assert_eq!(gr("/services/specs/ns/s").as_deref(), Some("services"));
        assert_eq!(gr("/services/endpoints/ns/s"), None);
        assert_eq!(
            gr("/example.com/widgets/ns/w").as_deref(),
            Some("widgets.example.com")
        );
        assert_eq!(gr("/example.com/widgets"), None);
        assert_eq!(gr("/ranges/serviceips/x"), None, "a group has a dot");
        assert_eq!(gr("/masterleases/10.0.0.1"), None);
    }
}
