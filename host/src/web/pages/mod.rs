//! One module per area of the web app; each handler reads through the API and renders a page.

pub(super) mod account;
pub(super) mod admin;
pub(super) mod agents;
pub(super) mod auth;
pub(super) mod dungeon;
pub(super) mod home;
pub(super) mod keys;
pub(super) mod tournaments;
