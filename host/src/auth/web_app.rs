//! The web app acting for its signed-in account.
//!
//! The v1 agents API is for machines and takes only a v1 key. The web app shows and manages a
//! signed-in operator's own agents with the session alone, so no page ever asks for or holds a
//! key secret (docs/web.md, "Agents without a key"). It does so by forwarding the page's call
//! to the same v1 route with this marker in the request's extensions, set only by the web
//! app's same-origin, CSRF-checked `/web-api/…` forwarder (and its in-process page reads) once
//! the session resolved. Extensions never come from the network, so a client cannot forge it.

/// The account whose live browser session the web app is acting for.
#[derive(Debug, Clone)]
pub(crate) struct WebAppSession {
    pub account_id: String,
}
