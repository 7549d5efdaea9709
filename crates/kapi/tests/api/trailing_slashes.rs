//! A trailing slash names the same thing, as upstream's router has it: the
//! discovery documents of `/api/v1/`, `/apis/<group>/` and
//! `/apis/<group>/<version>/` are those without the slash, and so are
//! collections and objects.

use crate::harness;

#[tokio::test]
async fn paths_with_a_trailing_slash_serve_the_same_answer() {
    let s = harness::start().await;
    for path in [
        "/api",
        "/apis",
        "/api/v1",
        "/apis/apps",
        "/apis/apps/v1",
        "/apis/rbac.authorization.k8s.io/v1",
        "/api/v1/namespaces",
        "/api/v1/namespaces/default",
        "/apis/apps/v1/namespaces/default/deployments",
    ] {
        let (code, plain) = s.get_json(path).await;
        let (slash_code, slashed) = s.get_json(&format!("{path}/")).await;
        assert_eq!((code, slash_code), (200, 200), "{path}: {slashed}");
        if plain
            .get("kind")
            .is_some_and(|k| k.as_str().unwrap().ends_with("List"))
        {
            assert_eq!(plain["kind"], slashed["kind"], "{path}");
            assert_eq!(plain["items"], slashed["items"], "{path}");
        } else {
            assert_eq!(plain, slashed, "{path}");
        }
    }
    let (code, _) = s.get_json("/apis/apps/v9/").await;
    assert_eq!(code, 404);
}
