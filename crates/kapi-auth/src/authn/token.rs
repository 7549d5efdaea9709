//! Bearer tokens: which of the token authenticators accepts a token, in
//! upstream's order, and for which audiences. The static token file answers
//! without waiting; the others (service account JWTs, bootstrap tokens, the
//! JWT authenticators, the token webhook) may read the store, fetch keys or
//! call out, and run boxed apart from the request's future.

use super::{bootstrap, webhook, with_authenticated_group, Authenticator, UserInfo, UNKNOWN_TOKEN};

impl Authenticator {
    /// The API audiences (`--api-audiences`, default the service account issuer).
    fn api_audiences(&self) -> &[String] {
        self.service_accounts
            .as_ref()
            .map_or(&[], |(i, _)| i.audiences())
    }

    /// A bearer token's user and the audiences it is good for among
    /// `audiences` (empty: the server's API audiences), as a TokenReview asks.
    /// Every authenticator's refusal goes into the error, for the log.
    pub async fn authenticate_token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<(UserInfo, Vec<String>), String> {
        if let Some(user) = self.tokens.as_ref().and_then(|t| t.lookup(token)) {
            return self.audience_agnostic(user.clone(), audiences);
        }
        // The authenticators that may wait (reads, key sets, webhooks) boxed
        // apart: held inline, their state would make every request's future
        // several KiB larger, copied whole at each of its moves. (Boxed in a
        // statement of its own: a temporary of the awaiting statement would
        // be kept in this future's state across the await.)
        let waiting = Box::pin(self.authenticate_token_waiting(token, audiences));
        waiting.await
    }

    /// The audiences a token is asked for: `audiences`, or the API's when
    /// none are given.
    fn wanted_audiences<'a>(&'a self, audiences: &'a [String]) -> &'a [String] {
        if audiences.is_empty() {
            self.api_audiences()
        } else {
            audiences
        }
    }

    /// The user of an authenticator that does not know audiences, which
    /// vouches for the API's only.
    fn audience_agnostic(
        &self,
        user: UserInfo,
        audiences: &[String],
    ) -> Result<(UserInfo, Vec<String>), String> {
        let api_audiences = self.api_audiences();
        let matched: Vec<String> = self
            .wanted_audiences(audiences)
            .iter()
            .filter(|a| audiences.is_empty() || api_audiences.contains(a))
            .cloned()
            .collect();
        if !audiences.is_empty() && matched.is_empty() {
            return Err("token audiences are not the API audiences".into());
        }
        Ok((with_authenticated_group(user), matched))
    }

    /// [`Authenticator::authenticate_token`] past the token file.
    async fn authenticate_token_waiting(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<(UserInfo, Vec<String>), String> {
        let wanted = self.wanted_audiences(audiences);
        let agnostic = |user: UserInfo| self.audience_agnostic(user, audiences);
        let mut errors: Vec<String> = Vec::new();
        if let Some((issuer, apis)) = &self.service_accounts {
            match issuer.authenticate(apis, token, wanted).await {
                Ok((user, matched)) => return Ok((with_authenticated_group(user), matched)),
                Err(e) if e == UNKNOWN_TOKEN => {}
                Err(e) => errors.push(e),
            }
        }
        if let Some(apis) = &self.bootstrap {
            match bootstrap::authenticate(apis, token).await {
                Some(Ok(user)) => return agnostic(user),
                Some(Err(e)) => errors.push(e),
                None => {}
            }
        }
        if let Some(jwt) = &self.jwt {
            match jwt.authenticate(token).await {
                Some(Ok(user)) => return agnostic(user),
                Some(Err(e)) => errors.push(e),
                None => {}
            }
        }
        if let Some(hook) = &self.webhook {
            match hook.review(token, audiences).await {
                Ok(webhook::Review::Authenticated(user, matched)) => {
                    return Ok((with_authenticated_group(user), matched))
                }
                Ok(webhook::Review::Refused(Some(e))) => errors.push(e),
                Ok(webhook::Review::Refused(None)) => {}
                Err(e) => errors.push(format!("webhook token authentication: {e}")),
            }
        }
        match kapi_machinery::validation::aggregate_messages(&errors) {
            Some(msg) => Err(msg),
            None => Err(UNKNOWN_TOKEN.into()),
        }
    }
}

/// The token of an `Authorization: Bearer <token>` header (scheme
/// case-insensitive), or `None` when the header is not a non-empty bearer token.
pub(super) fn bearer_token(header: &str) -> Option<&str> {
    let mut parts = header.trim().splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}
