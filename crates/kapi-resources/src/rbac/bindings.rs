//! RoleBindings and ClusterRoleBindings: `roleRef` and subject defaulting and
//! validation, `roleRef` immutability, and the `NAME ROLE AGE` table with the
//! wide `USERS GROUPS SERVICEACCOUNTS` columns.
//!
//! Invariant: a ClusterRoleBinding may only reference a ClusterRole, and its
//! ServiceAccount subjects must name a namespace; a RoleBinding's may omit it.

use kapi_machinery::validation::{
    go_quote, name_is_dns_subdomain, validate_path_segment_name, ErrorList, FieldError, FieldPath,
    ValidateNameFn,
};
use kapi_registry::{Column, Strategy};
use serde_json::{json, Value};

use super::GROUP;
use crate::core::table::{age_cell, age_column, name_cell, name_column, string_column};
use crate::core::util::{arr_at, child_obj, for_each_item, str_at};

pub struct RoleBindingStrategy;
pub struct ClusterRoleBindingStrategy;

const ROLE_REF_DOC: &str = "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error. This field is immutable.";
const CLUSTER_ROLE_REF_DOC: &str = "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error. This field is immutable.";

/// Upstream `SetDefaults_RoleBinding` / `_ClusterRoleBinding` / `_Subject`.
fn default_binding(obj: &mut Value) {
    if let Some(role_ref) = child_obj(obj, "roleRef") {
        if str_at(role_ref, "/apiGroup").is_empty() {
            role_ref["apiGroup"] = GROUP.into();
        }
    }
    for_each_item(obj, "subjects", |s| {
        if str_at(s, "/apiGroup").is_empty() {
            match str_at(s, "/kind") {
                "User" | "Group" => s["apiGroup"] = GROUP.into(),
                _ => {
                    if let Some(m) = s.as_object_mut() {
                        m.remove("apiGroup");
                    }
                }
            }
        }
    });
}

fn validate_binding(obj: &Value, namespaced: bool) -> ErrorList {
    let mut errs = ErrorList::new();
    let role_ref = FieldPath::new("roleRef");
    let api_group = str_at(obj, "/roleRef/apiGroup");
    if api_group != GROUP {
        errs.push(FieldError::not_supported(
            &role_ref.child("apiGroup"),
            api_group,
            &[GROUP],
        ));
    }
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    let kind = str_at(obj, "/roleRef/kind");
    if !kinds.contains(&kind) {
        errs.push(FieldError::not_supported(
            &role_ref.child("kind"),
            kind,
            kinds,
        ));
    }
    let name = str_at(obj, "/roleRef/name");
    if name.is_empty() {
        errs.push(FieldError::required(&role_ref.child("name"), ""));
    }
    for msg in validate_path_segment_name(name, false) {
        errs.push(FieldError::invalid(&role_ref.child("name"), name, msg));
    }
    let subjects = FieldPath::new("subjects");
    for (i, s) in arr_at(obj, "/subjects").iter().enumerate() {
        errs.extend(validate_subject(s, namespaced, &subjects.index(i)));
    }
    errs
}

/// Upstream `ValidateRoleBindingSubject`.
pub fn validate_subject(s: &Value, namespaced: bool, path: &FieldPath) -> ErrorList {
    let mut errs = ErrorList::new();
    let name = str_at(s, "/name");
    let api_group = str_at(s, "/apiGroup");
    if name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    }
    match str_at(s, "/kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                for msg in name_is_dns_subdomain(name, false) {
                    errs.push(FieldError::invalid(&path.child("name"), name, msg));
                }
            }
            if !api_group.is_empty() {
                errs.push(FieldError::not_supported(
                    &path.child("apiGroup"),
                    api_group,
                    &[""],
                ));
            }
            if !namespaced && str_at(s, "/namespace").is_empty() {
                errs.push(FieldError::required(&path.child("namespace"), ""));
            }
        }
        "User" | "Group" if api_group != GROUP => errs.push(FieldError::not_supported(
            &path.child("apiGroup"),
            api_group,
            &[GROUP],
        )),
        "User" | "Group" => {}
        other => errs.push(FieldError::not_supported(
            &path.child("kind"),
            other,
            &["ServiceAccount", "User", "Group"],
        )),
    }
    errs
}

fn role_ref_immutable(new: &Value, old: &Value) -> ErrorList {
    let (new_ref, old_ref) = (new.get("roleRef"), old.get("roleRef"));
    if new_ref == old_ref {
        return ErrorList::new();
    }
    // Upstream prints the Go struct (`%#v`); the value rides in the detail so the
    // message is byte-for-byte the same.
    let r = |f: &str| {
        go_quote(
            new_ref
                .and_then(|v| v.get(f))
                .and_then(Value::as_str)
                .unwrap_or(""),
        )
    };
    let mut err = FieldError::invalid(&FieldPath::new("roleRef"), Value::Null, "");
    err.bad_value = None;
    err.detail = format!(
        "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}: cannot change roleRef",
        r("apiGroup"),
        r("kind"),
        r("name")
    );
    vec![err]
}

/// Upstream `rbac.SubjectsStrings`: users, groups, service accounts (`ns/name`).
pub fn subjects_strings(obj: &Value) -> [String; 3] {
    let mut out: [Vec<String>; 3] = Default::default();
    for s in arr_at(obj, "/subjects") {
        let name = str_at(s, "/name").to_string();
        match str_at(s, "/kind") {
            "User" => out[0].push(name),
            "Group" => out[1].push(name),
            "ServiceAccount" => out[2].push(format!("{}/{name}", str_at(s, "/namespace"))),
            _ => {}
        }
    }
    out.map(|v| v.join(", "))
}

fn columns(role_doc: &'static str) -> Vec<Column> {
    vec![
        name_column(),
        string_column("Role", role_doc),
        age_column(),
        string_column("Users", "Users in the roleBinding").wide(),
        string_column("Groups", "Groups in the roleBinding").wide(),
        string_column("ServiceAccounts", "ServiceAccounts in the roleBinding").wide(),
    ]
}

fn cells(obj: &Value) -> Vec<Value> {
    let role = format!(
        "{}/{}",
        str_at(obj, "/roleRef/kind"),
        str_at(obj, "/roleRef/name")
    );
    let [users, groups, sas] = subjects_strings(obj);
    vec![
        name_cell(obj),
        json!(role),
        age_cell(obj),
        json!(users),
        json!(groups),
        json!(sas),
    ]
}

impl Strategy for RoleBindingStrategy {
    fn default(&self, obj: &mut Value) {
        default_binding(obj);
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        validate_binding(obj, true)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = self.validate(new);
        errs.extend(role_ref_immutable(new, old));
        errs
    }

    fn name_rule(&self) -> ValidateNameFn {
        validate_path_segment_name
    }

    fn columns(&self) -> Vec<Column> {
        columns(ROLE_REF_DOC)
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        cells(obj)
    }
}

impl Strategy for ClusterRoleBindingStrategy {
    fn default(&self, obj: &mut Value) {
        default_binding(obj);
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        validate_binding(obj, false)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = self.validate(new);
        errs.extend(role_ref_immutable(new, old));
        errs
    }

    fn name_rule(&self) -> ValidateNameFn {
        validate_path_segment_name
    }

    fn columns(&self) -> Vec<Column> {
        columns(CLUSTER_ROLE_REF_DOC)
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        cells(obj)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(errs: ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn binding() -> Value {
        json!({
            "metadata": {"name": "b", "namespace": "default"},
            "roleRef": {"kind": "Role", "name": "r"},
            "subjects": [
                {"kind": "User", "name": "alice"},
                {"kind": "Group", "name": "devs"},
                {"kind": "ServiceAccount", "name": "sa", "namespace": "ns1"},
            ],
        })
    }

    #[test]
    fn defaults_api_groups() {
        let mut b = binding();
        RoleBindingStrategy.default(&mut b);
        assert_eq!(b["roleRef"]["apiGroup"], GROUP);
        assert_eq!(b["subjects"][0]["apiGroup"], GROUP);
        assert_eq!(b["subjects"][1]["apiGroup"], GROUP);
        assert!(b["subjects"][2].get("apiGroup").is_none());
        assert!(RoleBindingStrategy.validate(&b).is_empty());
    }

    #[test]
    fn validation_messages() {
        let mut b = binding();
        RoleBindingStrategy.default(&mut b);
        b["roleRef"]["kind"] = "Pod".into();
        b["subjects"][0]["kind"] = "Robot".into();
        b["subjects"][2]["name"] = "Bad_Name".into();
        let errs = msgs(RoleBindingStrategy.validate(&b));
        assert_eq!(
            errs[0],
            "roleRef.kind: Unsupported value: \"Pod\": supported values: \"Role\", \"ClusterRole\""
        );
        assert_eq!(errs[1], "subjects[0].kind: Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"");
        assert!(errs[2].starts_with("subjects[2].name: Invalid value: \"Bad_Name\""));
        let mut c = binding();
        c["roleRef"]["kind"] = "Role".into();
        c["subjects"][2]
            .as_object_mut()
            .unwrap()
            .remove("namespace");
        ClusterRoleBindingStrategy.default(&mut c);
        assert_eq!(
            msgs(ClusterRoleBindingStrategy.validate(&c)),
            vec![
                "roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"",
                "subjects[2].namespace: Required value",
            ]
        );
    }

    #[test]
    fn role_ref_is_immutable() {
        let mut old = binding();
        RoleBindingStrategy.default(&mut old);
        let mut new = old.clone();
        new["roleRef"]["name"] = "other".into();
        let errs = msgs(RoleBindingStrategy.validate_update(&new, &old));
        assert_eq!(errs, vec!["roleRef: Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"Role\", Name:\"other\"}: cannot change roleRef"]);
    }

    #[test]
    fn table_cells() {
        let b = binding();
        let cells = RoleBindingStrategy.cells(&b);
        assert_eq!(cells[1], "Role/r");
        assert_eq!(cells[3..], [json!("alice"), json!("devs"), json!("ns1/sa")]);
        assert_eq!(RoleBindingStrategy.columns()[3].priority, 1);
    }
}
