//! The analyses: each one a module behind the core's `Analysis` interface.

pub mod sharing;
