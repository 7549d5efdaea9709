//! The chain: the enabled plugins in upstream's order, each phase running
//! every plugin that looks at the request's operation. Which plugins are in it
//! is decided where they are built (`kapi-admission-plugins`).

use std::sync::Arc;

use kapi_machinery::status::ApiError;

use crate::{Attributes, Operation, Plugin};

/// The enabled plugins, in order.
#[derive(Clone, Default)]
pub struct Chain {
    plugins: Vec<Arc<dyn Plugin>>,
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl Chain {
    /// A chain of the given plugins, in the given order (tests, embedding).
    pub fn of(plugins: Vec<Arc<dyn Plugin>>) -> Chain {
        Chain { plugins }
    }

    /// The names of the enabled plugins, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.plugins.iter().map(|p| p.name()).collect()
    }

    /// Whether any plugin mutates requests of `op`.
    pub fn mutates(&self, op: Operation) -> bool {
        self.plugins.iter().any(|p| p.mutating() && p.handles(op))
    }

    /// Whether any plugin validates requests of `op`.
    pub fn validates(&self, op: Operation) -> bool {
        self.plugins.iter().any(|p| p.validating() && p.handles(op))
    }

    /// The mutating phase: every plugin's [`Plugin::admit`], in order.
    pub async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        for p in &self.plugins {
            if p.mutating() && p.handles(a.operation) && p.concerns(a) {
                p.admit(a).await?;
            }
        }
        Ok(())
    }

    /// The validating phase: every plugin's [`Plugin::validate`], in order.
    pub async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        for p in &self.plugins {
            if p.validating() && p.handles(a.operation) && p.concerns(a) {
                p.validate(a).await?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use async_trait::async_trait;

    use super::*;
    use crate::{RequestAttributes, Warnings};

    /// Counts its calls; concerned with pods only.
    #[derive(Default)]
    struct PodsOnly {
        calls: AtomicUsize,
    }

    #[async_trait]
    impl Plugin for PodsOnly {
        fn name(&self) -> &'static str {
            "PodsOnly"
        }
        fn handles(&self, _: Operation) -> bool {
            true
        }
        fn concerns(&self, a: &Attributes) -> bool {
            a.is("", "pods")
        }
        async fn admit(&self, _: &mut Attributes) -> Result<(), ApiError> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
        async fn validate(&self, _: &Attributes) -> Result<(), ApiError> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
        fn mutating(&self) -> bool {
            true
        }
        fn validating(&self) -> bool {
            true
        }
    }

    fn attrs(resource: &str) -> Attributes {
        Attributes {
            operation: Operation::Create,
            name: "x".into(),
            options: Arc::new(serde_json::Value::Null),
            object: None,
            old_object: None,
            request: Arc::new(RequestAttributes {
                group: String::new(),
                version: "v1".into(),
                kind_group: String::new(),
                kind_version: "v1".into(),
                kind: String::new(),
                resource: resource.into(),
                subresource: String::new(),
                namespace: "ns".into(),
                user: None,
                dry_run: false,
                warnings: Warnings::default(),
                audit: None,
            }),
        }
    }

    /// A plugin not concerned with a request's resource is called in
    /// neither phase; one that is, in both.
    #[tokio::test]
    async fn plugins_run_only_for_what_concerns_them() {
        let plugin = Arc::new(PodsOnly::default());
        let chain = Chain::of(vec![plugin.clone()]);
        let mut cm = attrs("configmaps");
        chain.admit(&mut cm).await.unwrap();
        chain.validate(&cm).await.unwrap();
        assert_eq!(plugin.calls.load(Ordering::Relaxed), 0);
        let mut pod = attrs("pods");
        chain.admit(&mut pod).await.unwrap();
        chain.validate(&pod).await.unwrap();
        assert_eq!(plugin.calls.load(Ordering::Relaxed), 2);
    }
}
