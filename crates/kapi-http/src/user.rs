//! Who is asking: the user a request was authenticated as (upstream's
//! `k8s.io/apiserver/pkg/authentication/user`), and the well-known user and
//! group names every layer that decides on users shares. The authentication
//! filter (`kapi-auth`) puts a [`UserInfo`] into each request's extensions;
//! authorization, admission, flow control and audit read it from there.

use std::collections::BTreeMap;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

pub const ANONYMOUS_USER: &str = "system:anonymous";
pub const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
pub const ALL_AUTHENTICATED: &str = "system:authenticated";
/// The group whose members every authorizer allows everything.
pub const SYSTEM_MASTERS: &str = "system:masters";

/// An authenticated (or anonymous) user: its [`UserDetails`], shared.
///
/// A request's user is read by every layer and kept by several (the
/// authorizer's attributes, the handler's context, admission's attributes,
/// audit), so a copy shares the details instead of copying the strings; a
/// change through a copy (`user.groups.push(..)`) copies them first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo(Arc<UserDetails>);

/// Who a user is: name, UID, groups and extra attributes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserDetails {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl From<UserDetails> for UserInfo {
    fn from(details: UserDetails) -> UserInfo {
        UserInfo(Arc::new(details))
    }
}

impl Deref for UserInfo {
    type Target = UserDetails;

    fn deref(&self) -> &UserDetails {
        &self.0
    }
}

impl DerefMut for UserInfo {
    fn deref_mut(&mut self) -> &mut UserDetails {
        Arc::make_mut(&mut self.0)
    }
}

impl UserInfo {
    /// The anonymous user: `system:anonymous`, groups `[system:unauthenticated]`.
    pub fn anonymous() -> Self {
        UserInfo::from(UserDetails {
            name: ANONYMOUS_USER.into(),
            groups: vec![ALL_UNAUTHENTICATED.into()],
            ..Default::default()
        })
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
        UserInfo::from(UserDetails {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        })
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

    #[test]
    fn a_copy_shares_the_details_until_it_is_changed() {
        let a = UserInfo::named("alice", &["dev"]);
        let mut b = a.clone();
        assert!(std::ptr::eq(&a.name, &b.name));
        b.groups.push("ops".into());
        assert_eq!(a.groups, ["dev"]);
        assert_eq!(b.groups, ["dev", "ops"]);
        assert_eq!(b.name, "alice");
        assert_ne!(a, b);
    }
}
