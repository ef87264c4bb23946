//! One module per area of the web app; each handler reads through the API and renders a page.

pub mod account;
pub mod admin;
pub mod agents;
pub mod auth;
pub mod dungeon;
pub mod home;
pub mod keys;
pub mod tournaments;
