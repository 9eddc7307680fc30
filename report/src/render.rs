//! Renderers: each takes the [`Report`](crate::model::Report) model and nothing else (plus its
//! own presentation settings), so a new one (HTML, callgrind) is one more module here.

pub mod csv;
pub mod export;
pub mod html;
pub mod json;
pub mod text;
pub mod trace;
