//! Run-time flags: one table, parsed from `PROFCC_OPTIONS=key=value:key=value`.

use crate::mem::SpinLock;

#[derive(Clone, Copy)]
pub enum Kind {
    Bool,
    Uint,
    Str,
}

pub struct Flag {
    pub name: &'static str,
    pub kind: Kind,
    pub default: &'static str,
    pub help: &'static str,
}

/// The table of every run-time flag. Keep sorted by name.
pub const FLAGS: &[Flag] = &[
    Flag {
        name: "exit_dump",
        kind: Kind::Bool,
        default: "1",
        help: "write the profile at exit (SIGUSR2 dumps happen either way)",
    },
    Flag {
        name: "fs_budget",
        kind: Kind::Uint,
        default: "4096",
        help: "accesses recorded on a watched (uncontended) line before it is let go",
    },
    Flag {
        name: "fs_inv_ns",
        kind: Kind::Uint,
        default: "60",
        help: "assumed cost of one cache-line invalidation in ns, for the predicted gain",
    },
    Flag {
        name: "fs_max_lines",
        kind: Kind::Uint,
        default: "8192",
        help: "most cache lines tracked in detail (at most 16382; about 2.3 KiB each)",
    },
    Flag {
        name: "fs_sample",
        kind: Kind::Uint,
        default: "64",
        help: "analyse one access in N per thread to a tracked line (1 = every access; counts are scaled by N)",
    },
    Flag {
        name: "fs_threshold",
        kind: Kind::Uint,
        default: "16",
        help: "invalidations after which a line is tracked per byte (1-255)",
    },
    Flag {
        name: "fs_watch",
        kind: Kind::Uint,
        default: "256",
        help: "one write in N per site and thread samples write volume, for latent false sharing (power of 2; 0 = off)",
    },
    Flag {
        name: "fs_watch_samples",
        kind: Kind::Uint,
        default: "2",
        help: "volume samples after which a line next to another thread's line is watched (1-63)",
    },
    Flag {
        name: "help",
        kind: Kind::Bool,
        default: "0",
        help: "print this table on stderr and run on",
    },
    Flag {
        name: "out",
        kind: Kind::Str,
        default: "profcc.%e.%p.json",
        help: "profile path; %p pid, %h host, %e executable name",
    },
    Flag {
        name: "summary",
        kind: Kind::Bool,
        default: "1",
        help: "print a summary of at most 10 lines on stderr at exit",
    },
    Flag {
        name: "top",
        kind: Kind::Uint,
        default: "5",
        help: "how many entries each summary section lists",
    },
    Flag {
        name: "verbose",
        kind: Kind::Bool,
        default: "0",
        help: "say where the profile went and why",
    },
    Flag {
        name: "write",
        kind: Kind::Bool,
        default: "1",
        help: "write the profile file at all",
    },
];

/// Values in force, one per flag, in table order.
pub struct Options {
    pub values: [Value; FLAGS.len()],
}

#[derive(Clone, Copy)]
pub struct Value {
    buf: [u8; 256],
    len: usize,
}

impl Value {
    const fn empty() -> Self {
        Value {
            buf: [0; 256],
            len: 0,
        }
    }
    fn set(&mut self, s: &[u8]) -> bool {
        if s.len() > self.buf.len() {
            return false;
        }
        self.buf[..s.len()].copy_from_slice(s);
        self.len = s.len();
        true
    }
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

pub(crate) static OPTIONS: SpinLock<Options> = SpinLock::new(Options {
    values: [Value::empty(); FLAGS.len()],
});

fn index(name: &str) -> usize {
    FLAGS
        .iter()
        .position(|f| f.name == name)
        .expect("flag in table")
}

pub fn get_str(name: &str) -> String {
    OPTIONS.lock().values[index(name)].as_str().to_string()
}

pub fn get_bool(name: &str) -> bool {
    OPTIONS.lock().values[index(name)].as_str() == "1"
}

pub fn get_uint(name: &str) -> u64 {
    OPTIONS.lock().values[index(name)]
        .as_str()
        .parse()
        .unwrap_or(0)
}

/// All flags as (name, value) text, for the profile.
pub fn all() -> Vec<(String, String)> {
    let o = OPTIONS.lock();
    FLAGS
        .iter()
        .zip(o.values.iter())
        .map(|(f, v)| (f.name.to_string(), v.as_str().to_string()))
        .collect()
}

fn valid(kind: Kind, v: &str) -> Option<&'static str> {
    match kind {
        Kind::Bool => Some(match v {
            "1" | "true" | "yes" | "on" => "1",
            "0" | "false" | "no" | "off" => "0",
            _ => return None,
        }),
        Kind::Uint => {
            if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
                Some("")
            } else {
                None
            }
        }
        Kind::Str => Some(""),
    }
}

/// Parse the option string; returns warning lines (one per bad entry).
pub fn parse(spec: &str) -> Vec<String> {
    let mut warnings = Vec::new();
    let mut o = OPTIONS.lock();
    for (i, f) in FLAGS.iter().enumerate() {
        o.values[i].set(f.default.as_bytes());
    }
    for item in spec.split(':').filter(|s| !s.is_empty()) {
        let (key, value) = match item.split_once('=') {
            Some((k, v)) => (k, v),
            None => (item, "1"),
        };
        let Some(i) = FLAGS.iter().position(|f| f.name == key) else {
            let names: Vec<&str> = FLAGS.iter().map(|f| f.name).collect();
            warnings.push(format!(
                "profcc: unknown option '{key}' in PROFCC_OPTIONS ignored; valid options: {} (help=1 lists them)",
                names.join(", ")
            ));
            continue;
        };
        let f = &FLAGS[i];
        match valid(f.kind, value) {
            Some(canon) => {
                let v = if canon.is_empty() { value } else { canon };
                if !o.values[i].set(v.as_bytes()) {
                    warnings.push(format!(
                        "profcc: option '{key}' value too long (max 256 bytes); using {}",
                        f.default
                    ));
                }
            }
            None => {
                let expect = match f.kind {
                    Kind::Bool => "0 or 1",
                    Kind::Uint => "a whole number",
                    Kind::Str => "text",
                };
                warnings.push(format!(
                    "profcc: option '{key}={value}' is not valid, expected {expect}; using default {}",
                    f.default
                ));
            }
        }
    }
    warnings
}

pub fn help_text() -> String {
    let mut s = String::from("profcc run-time options (PROFCC_OPTIONS=key=value:key=value):\n");
    for f in FLAGS {
        let kind = match f.kind {
            Kind::Bool => "bool",
            Kind::Uint => "uint",
            Kind::Str => "string",
        };
        s.push_str(&format!(
            "  {:<10} {:<6} default {:<20} {}\n",
            f.name, kind, f.default, f.help
        ));
    }
    s
}
