//! Header: what was profiled (one entry per input file) and the summed totals.

use super::{section, Options, Section};
use crate::fmt;
use crate::merge::Merged;
use profcc_schema::Totals;
use serde::Serialize;

#[derive(Serialize)]
pub struct Summary {
    pub inputs: Vec<InputInfo>,
    /// Totals summed over inputs (`live_bytes_peak` and `threads` too).
    pub totals: Totals,
}

#[derive(Serialize)]
pub struct InputInfo {
    pub path: String,
    pub exe: String,
    pub pid: u32,
    pub host: String,
    pub argv: Vec<String>,
    pub duration_ns: u64,
    pub trigger: String,
    pub threads: u32,
    pub accesses: u64,
}

pub fn build(m: &Merged, _: &Options) -> Option<Box<dyn Section>> {
    let inputs = m
        .inputs
        .iter()
        .map(|i| {
            let p = &i.profile;
            InputInfo {
                path: i.path.clone(),
                exe: p.exe.clone(),
                pid: p.pid,
                host: p.host.clone(),
                argv: p.argv.clone(),
                duration_ns: p.duration_ns,
                trigger: p.trigger.clone(),
                threads: p.totals.threads.max(p.threads.len() as u32),
                accesses: p.totals.accesses,
            }
        })
        .collect();
    Some(Box::new(Summary {
        inputs,
        totals: m.totals.clone(),
    }))
}

section!(Summary, "summary");

impl Summary {
    fn render(&self, out: &mut String) {
        let t = &self.totals;
        match self.inputs.as_slice() {
            [one] => {
                out.push_str(&format!(
                    "profcc report: {} (pid {}{}), {}, {} thread{}, {}\n",
                    one.exe,
                    one.pid,
                    if one.host.is_empty() {
                        String::new()
                    } else {
                        format!(" on {}", one.host)
                    },
                    fmt::duration(one.duration_ns),
                    one.threads,
                    if one.threads == 1 { "" } else { "s" },
                    written(&one.trigger),
                ));
                if one.argv.len() > 1 {
                    out.push_str(&format!("  command: {}\n", one.argv.join(" ")));
                }
            }
            many => {
                let pids: Vec<String> = many.iter().map(|i| i.pid.to_string()).collect();
                let mut exes: Vec<&str> = Vec::new();
                for i in many {
                    if !exes.contains(&i.exe.as_str()) {
                        exes.push(&i.exe);
                    }
                }
                out.push_str(&format!(
                    "profcc report: {} profiles merged: {} (pids {}), {} threads in all\n",
                    many.len(),
                    exes.join(", "),
                    pids.join(", "),
                    t.threads,
                ));
                for (n, i) in many.iter().enumerate() {
                    out.push_str(&format!(
                        "  [{n}] {}: pid {}{}, {}, {} threads, {} accesses, {}\n",
                        i.path,
                        i.pid,
                        if i.host.is_empty() {
                            String::new()
                        } else {
                            format!(" on {}", i.host)
                        },
                        fmt::duration(i.duration_ns),
                        i.threads,
                        fmt::count(i.accesses),
                        written(&i.trigger),
                    ));
                }
            }
        }
        out.push_str(&format!(
            "  accesses {} (reads {} = {}, writes {} = {}){}\n",
            fmt::count(t.accesses),
            fmt::count(t.reads),
            fmt::bytes(t.bytes_read),
            fmt::count(t.writes),
            fmt::bytes(t.bytes_written),
            if t.unattributed > 0 {
                format!(", {} unattributed", fmt::count(t.unattributed))
            } else {
                String::new()
            },
        ));
        out.push_str(&format!(
            "  allocations {} ({}), frees {}, peak live {}\n",
            fmt::count(t.allocations),
            fmt::bytes(t.bytes_allocated),
            fmt::count(t.frees),
            fmt::bytes(t.live_bytes_peak),
        ));
    }
}

fn written(trigger: &str) -> String {
    match trigger {
        "exit" => "written at exit".into(),
        "signal" => "written on signal (the program was still running)".into(),
        "" => "written at an unknown point".into(),
        other => format!("written on {other}"),
    }
}
