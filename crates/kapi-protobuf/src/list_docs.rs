//! The documentation of the list kinds (`PodList`), as upstream's OpenAPI
//! gives it, from the doc comments of the `k8s-pb` dependency (generated at
//! build time, `build_list_docs.rs`): the OpenAPI definitions `k8s-openapi`
//! provides have no per-kind list types, so the server builds those and
//! takes their words from here.

include!(concat!(env!("OUT_DIR"), "/list_docs.rs"));

/// The documentation of one list kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListDocs {
    pub kind: &'static str,
    pub metadata: &'static str,
    pub items: &'static str,
}

/// The documentation of list definition `def` (`io.k8s.api.core.v1.PodList`).
pub fn list_docs(def: &str) -> Option<ListDocs> {
    LIST_DOCS
        .iter()
        .find(|(name, ..)| *name == def)
        .map(|(_, kind, metadata, items)| ListDocs {
            kind,
            metadata,
            items,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_docs_read_as_upstreams_openapi() {
        let pods = list_docs("io.k8s.api.core.v1.PodList").expect("PodList");
        assert_eq!(pods.kind, "PodList is a list of Pods.");
        assert_eq!(pods.items, "List of pods. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md");
        assert_eq!(pods.metadata, "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds");
        let services = list_docs("io.k8s.api.core.v1.ServiceList").expect("ServiceList");
        assert_eq!(services.items, "List of services");
        assert!(list_docs("io.k8s.api.core.v1.Pod").is_none());
    }
}
