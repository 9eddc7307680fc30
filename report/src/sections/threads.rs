//! Threads, per input file: id, parent, accesses, where they were created.

use super::Options;
use crate::merge::Merged;
use crate::model::Thread;

pub fn build(m: &Merged, _: &Options) -> Vec<Thread> {
    m.threads.clone()
}
