//! End-to-end tests: kapi served over TLS on `127.0.0.1:0` inside the test
//! process, driven by the real `kube` client. One binary, one server per test
//! (`harness.rs`); modules group the tests by the behaviour they check.

mod admission;
mod admission_pss;
mod admission_quota;
mod apf;
mod apply;
mod audit;
mod auth;
mod auth2;
mod batch;
mod chain;
mod componentstatus;
mod controllers;
mod crd;
mod crd_lifecycle;
mod crd_schema;
mod crud;
mod defaults;
mod discovery;
mod errors;
mod eviction;
mod groups;
mod groups2;
mod harness;
mod lifecycle;
mod limits;
mod lists;
mod masters;
mod metrics;
mod patch;
mod podsubs;
mod protobuf;
mod rbac;
mod reviews;
mod smoke;
mod subresources;
mod vap;
mod versions;
mod watch;
mod webhook_server;
mod webhooks;
