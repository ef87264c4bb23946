//! The daily dungeon (DESIGN §10). This module currently owns only the pure game engine in
//! [`game`]; the HTTP endpoints, paid entry, per-run keys, storage and the watch stream are built on
//! top of it elsewhere and must never leak I/O, clocks or randomness into it.

pub mod game;
