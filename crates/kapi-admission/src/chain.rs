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
            if p.mutating() && p.handles(a.operation) {
                p.admit(a).await?;
            }
        }
        Ok(())
    }

    /// The validating phase: every plugin's [`Plugin::validate`], in order.
    pub async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        for p in &self.plugins {
            if p.validating() && p.handles(a.operation) {
                p.validate(a).await?;
            }
        }
        Ok(())
    }
}
