//! Who is asking: the user a request was authenticated as (upstream's
//! `k8s.io/apiserver/pkg/authentication/user`), and the well-known user and
//! group names every layer that decides on users shares. The authentication
//! filter (`kapi-auth`) puts a [`UserInfo`] into each request's extensions;
//! authorization, admission, flow control and audit read it from there.

use std::collections::BTreeMap;

pub const ANONYMOUS_USER: &str = "system:anonymous";
pub const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
pub const ALL_AUTHENTICATED: &str = "system:authenticated";
/// The group whose members every authorizer allows everything.
pub const SYSTEM_MASTERS: &str = "system:masters";

/// An authenticated (or anonymous) user.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The anonymous user: `system:anonymous`, groups `[system:unauthenticated]`.
    pub fn anonymous() -> Self {
        UserInfo {
            name: ANONYMOUS_USER.into(),
            groups: vec![ALL_UNAUTHENTICATED.into()],
            ..Default::default()
        }
    }

    /// [`UserInfo::anonymous`], built once: for a filter that reads the
    /// request's user by reference and needs a stand-in when there is none.
    pub fn anonymous_ref() -> &'static UserInfo {
        static ANONYMOUS: std::sync::LazyLock<UserInfo> =
            std::sync::LazyLock::new(UserInfo::anonymous);
        &ANONYMOUS
    }

    /// A user with `groups` and nothing else (tests build users this way).
    pub fn named(name: &str, groups: &[&str]) -> Self {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_anonymous_user_is_the_anonymous_user() {
        assert_eq!(UserInfo::anonymous_ref(), &UserInfo::anonymous());
        assert_eq!(UserInfo::anonymous_ref().name, "system:anonymous");
        assert_eq!(UserInfo::anonymous_ref().groups, ["system:unauthenticated"]);
    }
}
