//! Impersonation headers that cannot be honoured, through the whole chain:
//! upstream answers them with `responsewriters.InternalError`, a plain-text 500
//! naming the request URI as Go's `RequestURI` holds it (path and query, even
//! when the request line carried an absolute URI, as over HTTP/2).

use axum::body::Body;
use axum::http::Request;
use kapi_server::ChainOptions;

use crate::chain;

#[tokio::test]
async fn a_group_without_a_user_is_a_plain_text_500_naming_the_path() {
    let c = chain::start(ChainOptions::default()).await;
    for uri in ["/api?watch=0", "https://127.0.0.1:6443/api?watch=0"] {
        let req = Request::builder()
            .uri(uri)
            .header("authorization", "Bearer admin-token")
            .header("impersonate-group", "devs")
            .body(Body::empty())
            .unwrap();
        let resp = c.call(req).await;
        assert_eq!(resp.status(), 500, "{uri}");
        assert_eq!(resp.headers()["content-type"], "text/plain; charset=utf-8");
        let text = chain::text(resp).await;
        assert!(
            text.starts_with("Internal Server Error: \"/api?watch=0\": requested impersonation"),
            "{uri}: {text}"
        );
    }
}
