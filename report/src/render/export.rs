//! The exports other viewers open (issue 44; being written): callgrind, pprof, speedscope,
//! collapsed stacks.

use crate::model::Report;

pub fn callgrind(_report: &Report) -> Vec<u8> {
    Vec::new()
}

pub fn pprof(_report: &Report) -> Vec<u8> {
    Vec::new()
}

pub fn speedscope(_report: &Report) -> Vec<u8> {
    Vec::new()
}

pub fn collapsed(_report: &Report) -> Vec<u8> {
    Vec::new()
}
