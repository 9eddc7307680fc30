//! Threads, per input file: id, parent, accesses, where they were created.

use super::{section, Options, Section};
use crate::fmt;
use crate::merge::Merged;
use crate::symbolize::{user_frame, Frame};
use serde::Serialize;

#[derive(Serialize)]
#[serde(transparent)]
pub struct Threads {
    pub threads: Vec<Thread>,
    #[serde(skip)]
    several_inputs: bool,
}

#[derive(Serialize)]
pub struct Thread {
    /// Index of the input file (see `summary.inputs`).
    pub input: usize,
    pub pid: u32,
    /// Dense id within its process: 0 is the main thread.
    pub id: u32,
    pub parent: Option<u32>,
    pub accesses: u64,
    /// Symbolised `pthread_create` call stack, innermost first; empty for the main thread.
    pub created_at: Vec<Frame>,
}

pub fn build(m: &Merged, _: &Options) -> Option<Box<dyn Section>> {
    let threads = m
        .threads
        .iter()
        .map(|t| Thread {
            input: t.input,
            pid: t.pid,
            id: t.id,
            parent: t.parent,
            accesses: t.accesses,
            created_at: t.created_at.clone(),
        })
        .collect();
    Some(Box::new(Threads {
        threads,
        several_inputs: m.inputs.len() > 1,
    }))
}

section!(Threads, "threads");

impl Threads {
    fn render(&self, out: &mut String) {
        out.push('\n');
        if self.threads.is_empty() {
            out.push_str("Threads: none recorded\n");
            return;
        }
        out.push_str(&format!("Threads ({})\n", self.threads.len()));
        let pid_col = if self.several_inputs {
            format!("{:>8}  ", "pid")
        } else {
            String::new()
        };
        out.push_str(&format!(
            "  {pid_col}{:>5}  {:>6}  {:>14}  {}\n",
            "id", "parent", "accesses", "created at"
        ));
        for t in &self.threads {
            let pid = if self.several_inputs {
                format!("{:>8}  ", t.pid)
            } else {
                String::new()
            };
            let parent = t
                .parent
                .map(|p| p.to_string())
                .unwrap_or_else(|| "-".into());
            let created = user_frame(&t.created_at)
                .map(Frame::describe)
                .unwrap_or_else(|| {
                    if t.id == 0 {
                        "(main thread)".into()
                    } else {
                        "-".into()
                    }
                });
            out.push_str(&format!(
                "  {pid}{:>5}  {:>6}  {:>14}  {}\n",
                t.id,
                parent,
                fmt::count(t.accesses),
                created
            ));
        }
    }
}
