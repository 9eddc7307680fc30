//! Run-time flags: one table, parsed once from `PROFCC_OPTIONS=key=value:key=value`.
//!
//! The table ([`options!`] below) is the only place a flag is defined: it generates the typed
//! [`Options`] struct with its defaults, the parser, `help=1`'s text and `docs/options.md`
//! (a test fails when that file is stale or the table is unsorted). An unknown key or a bad
//! value (wrong type, out of range, too long) prints one warning line and the flag keeps its
//! default; the program runs on. The values are fixed at initialisation and read without a
//! lock ([`get`]), so nothing here needs handling at `fork`.

use std::sync::OnceLock;

/// A flag's value type: how it is parsed, checked against its range and shown.
pub trait Kind: Sized + Copy {
    const NAME: &'static str;
    /// Does the table's range apply (whole numbers)?
    const RANGED: bool = false;
    fn parse(v: &str, lo: u64, hi: u64) -> Result<Self, String>;
    fn show(&self) -> String;
}

impl Kind for bool {
    const NAME: &'static str = "bool";
    fn parse(v: &str, _: u64, _: u64) -> Result<Self, String> {
        match v {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err("expected 0 or 1".into()),
        }
    }
    fn show(&self) -> String {
        (*self as u8).to_string()
    }
}

impl Kind for u32 {
    const NAME: &'static str = "uint";
    const RANGED: bool = true;
    fn parse(v: &str, lo: u64, hi: u64) -> Result<Self, String> {
        let range = || format!("expected a whole number from {lo} to {hi}");
        if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
            return Err(range());
        }
        match v.parse::<u64>() {
            Ok(n) if (lo..=hi).contains(&n) => Ok(n as u32),
            _ => Err(range()),
        }
    }
    fn show(&self) -> String {
        self.to_string()
    }
}

/// Text of at most [`Text::MAX`] bytes, stored inline (the table is a `const`).
#[derive(Clone, Copy)]
pub struct Text {
    buf: [u8; Text::MAX],
    len: usize,
}

impl Text {
    pub const MAX: usize = 255;
    pub const fn new(s: &str) -> Text {
        let b = s.as_bytes();
        assert!(b.len() <= Text::MAX);
        let mut buf = [0u8; Text::MAX];
        let mut i = 0;
        while i < b.len() {
            buf[i] = b[i];
            i += 1;
        }
        Text { buf, len: b.len() }
    }
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl Kind for Text {
    const NAME: &'static str = "text";
    fn parse(v: &str, _: u64, _: u64) -> Result<Self, String> {
        if v.len() > Text::MAX {
            return Err(format!("longer than {} bytes", Text::MAX));
        }
        Ok(Text::new(v))
    }
    fn show(&self) -> String {
        self.as_str().to_string()
    }
}

/// Where the exit summary goes (`summary`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Summary {
    /// On stderr when stderr is the terminal the program started with (and still is at
    /// exit); otherwise into the profile, where `profcc report` shows it.
    Auto,
    /// On stderr, wherever it points (what the user asked for).
    Always,
    /// Nowhere.
    Never,
}

impl Kind for Summary {
    const NAME: &'static str = "when";
    fn parse(v: &str, _: u64, _: u64) -> Result<Self, String> {
        match v {
            "auto" => Ok(Summary::Auto),
            _ => bool::parse(v, 0, 0)
                .map(|b| if b { Summary::Always } else { Summary::Never })
                .map_err(|_| "expected 0 or 1, or auto".into()),
        }
    }
    fn show(&self) -> String {
        match self {
            Summary::Auto => "auto",
            Summary::Always => "1",
            Summary::Never => "0",
        }
        .into()
    }
}

/// A flag whose default follows other flags (`auto`): [`Options::resolved`] gives it its value
/// at initialisation, so the profile records what was in force.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Auto<T> {
    Auto,
    Is(T),
}
pub type AutoBool = Auto<bool>;
pub type AutoUint = Auto<u32>;

/// A kind a flag may also leave to `auto`, and that pair's name.
pub trait AutoKind: Kind {
    const AUTO_NAME: &'static str;
}
impl AutoKind for bool {
    const AUTO_NAME: &'static str = "bool|auto";
}
impl AutoKind for u32 {
    const AUTO_NAME: &'static str = "uint|auto";
}

impl<T: AutoKind> Kind for Auto<T> {
    const NAME: &'static str = T::AUTO_NAME;
    const RANGED: bool = T::RANGED;
    fn parse(v: &str, lo: u64, hi: u64) -> Result<Self, String> {
        if v == "auto" {
            return Ok(Auto::Auto);
        }
        T::parse(v, lo, hi)
            .map(Auto::Is)
            .map_err(|e| format!("{e}, or auto"))
    }
    fn show(&self) -> String {
        match self {
            Auto::Auto => "auto".into(),
            Auto::Is(v) => v.show(),
        }
    }
}

/// `alloc_events`'s period where `auto` gives one (exact recording).
pub const ALLOC_EVENTS_EXACT: u32 = 100;

impl Options {
    /// Is the allocator analysis on? `auto`: on the sampled path (`alloc_sample`), where its
    /// overhead target holds (docs/allocators.md, "Cost"); off with exact recording, where
    /// it would about double the core's cost on malloc-heavy programs.
    pub fn alloc_ops(&self) -> bool {
        match self.alloc_ops {
            Auto::Is(b) => b,
            Auto::Auto => self.alloc_sample > 0,
        }
    }
    /// One operation in this many has its events counted (0: none). `auto`: none on the
    /// sampled path (two read system calls per counted call cost several times what the
    /// sampled path does), one in ALLOC_EVENTS_EXACT with exact recording.
    pub fn alloc_events(&self) -> u32 {
        match self.alloc_events {
            Auto::Is(n) => n,
            Auto::Auto if self.alloc_sample > 0 => 0,
            Auto::Auto => ALLOC_EVENTS_EXACT,
        }
    }
    /// Every `auto` flag given its value in force.
    pub fn resolved(mut self) -> Options {
        self.alloc_ops = Auto::Is(self.alloc_ops());
        self.alloc_events = Auto::Is(self.alloc_events());
        self
    }
}

/// A signal number (`dump_signal`); 0: none.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Signal(pub i32);

impl Signal {
    /// The names `dump_signal` accepts (with or without `SIG`): signals whose default action
    /// ends the program and that nothing in the runtime or the C library sends by itself.
    const NAMES: &'static [(&'static str, i32)] = &[
        ("HUP", libc::SIGHUP),
        ("INT", libc::SIGINT),
        ("QUIT", libc::SIGQUIT),
        ("USR1", libc::SIGUSR1),
        ("USR2", libc::SIGUSR2),
        ("ALRM", libc::SIGALRM),
        ("TERM", libc::SIGTERM),
    ];
}

impl Kind for Signal {
    const NAME: &'static str = "sig";
    fn parse(v: &str, _: u64, _: u64) -> Result<Self, String> {
        if v == "0" || v == "off" {
            return Ok(Signal(0));
        }
        let name = v.strip_prefix("SIG").unwrap_or(v);
        if let Some(&(_, n)) = Signal::NAMES.iter().find(|(s, _)| *s == name) {
            return Ok(Signal(n));
        }
        match v.parse::<i32>() {
            Ok(n)
                if (libc::SIGRTMIN()..=libc::SIGRTMAX()).contains(&n)
                    || Signal::NAMES.iter().any(|&(_, s)| s == n) =>
            {
                Ok(Signal(n))
            }
            _ => Err(
                "expected off, USR1, USR2, HUP, INT, QUIT, ALRM, TERM or a real-time signal number"
                    .into(),
            ),
        }
    }
    fn show(&self) -> String {
        match Signal::NAMES.iter().find(|&&(_, n)| n == self.0) {
            _ if self.0 == 0 => "off".into(),
            Some((name, _)) => (*name).into(),
            None => self.0.to_string(),
        }
    }
}

/// One row of the table, for `help=1`, the docs and the profile.
pub struct Flag {
    pub name: &'static str,
    pub kind: &'static str,
    /// Inclusive range of a `uint` flag.
    pub range: Option<(u64, u64)>,
    /// `core`, or the analysis that reads the flag.
    pub owner: &'static str,
    pub help: &'static str,
    /// The value as text in `o`.
    pub show: fn(&Options) -> String,
}

macro_rules! options {
    ($( $name:ident : $ty:ident = $default:expr, $lo:literal ..= $hi:literal, $owner:literal, $help:literal; )*) => {
        /// The values in force, one field per flag.
        #[derive(Clone, Copy)]
        pub struct Options { $( pub $name: $ty, )* }

        impl Options {
            /// Every flag at its default.
            pub const DEFAULT: Options = Options { $( $name: $default, )* };

            /// Set one flag from text. `None`: no such flag.
            fn set(&mut self, key: &str, value: &str) -> Option<Result<(), String>> {
                match key {
                    $( stringify!($name) => Some(<$ty as Kind>::parse(value, $lo, $hi).map(|v| self.$name = v)), )*
                    _ => None,
                }
            }
        }

        /// The table, in the order written (sorted by name; a test checks).
        pub const FLAGS: &[Flag] = &[ $( Flag {
            name: stringify!($name),
            kind: <$ty as Kind>::NAME,
            range: if <$ty as Kind>::RANGED { Some(($lo, $hi)) } else { None },
            owner: $owner,
            help: $help,
            show: |o: &Options| o.$name.show(),
        }, )* ];
    };
}

// name: type = default, range (uints), owner, help. Keep sorted by name.
options! {
    alloc_events: AutoUint = Auto::Auto, 0..=4294967295, "allocator", "with the allocator analysis on: count events (instructions, cache misses, dTLB misses and page faults where the machine gives hardware counters, page faults alone otherwise) on one allocator operation in N per thread, read with perf_event_open around the real call (two read system calls per sampled call; docs/allocators.md); 0: none; auto: 100 with exact recording, none with alloc_sample, where the calls would cost several times the sampled path itself";
    alloc_ops: AutoBool = Auto::Auto, 0..=1, "allocator", "the allocator analysis: count every malloc-family and new/delete call and time a sample of them in the program's allocator (alloc_time), by operation, request size, address reuse and phase, with the allocator's own mmap/munmap/mremap and mutex calls inside them (docs/allocators.md); off: no counts and no `allocator_ops` section; auto: on with alloc_sample, where its overhead target holds, off with exact recording, where it would about double the core's cost on malloc-heavy programs (docs/allocators.md, \"Cost\")";
    alloc_sample: u32 = 65536, 0..=4294967295, "core", "record one allocation per this many bytes on average in the object map (geometric sampling), or 0 = every allocation (peaks exact to 64 KiB per other thread, every lifetime, every object's allocating thread, the allocator analysis's memory split; 1.5-3x the cost on malloc-heavy programs). The blocks not recorded keep their allocation site in a start word and are counted in their site's figures: counts, bytes, frees, live bytes and totals stay exact, peaks and lifetimes become estimates (docs/report.md, \"Sampling\"); when the start shadow cannot be reserved the sites' figures are estimates and sampling stops at a module built with access checks";
    alloc_time: u32 = 64, 1..=4294967295, "allocator", "with the allocator analysis on: read the allocator's time (two TSC reads around the real call) on one program operation in about N per thread (jittered gaps), the gap doubling after every 256 timed calls of the thread up to 16 x N, and on every request of 4096 bytes or more; 1: every call. Counts stay exact; a kind's mean time is its timed calls' mean, each weighted by the calls it stands for (docs/allocators.md)";
    alloc_wrappers: Text = Text::new(""), 0..=0, "core", "more allocation wrappers, comma-separated function names (`xmalloc,pool_get`): a heap object is named by the first frame of its allocation stack outside them and the wrappers the compiler recognised (a C++ name as the report prints it, e.g. `make_block(unsigned long)`)";
    allocator: Text = Text::new(""), 0..=0, "allocator", "an allocator description (`profcc detect-allocator -o FILE`) for the program's allocator: its size-kind boundaries split the analysis's size buckets and the report uses it instead of the shipped description it would pick; for an allocator profcc ships none for";
    dump_signal: Signal = Signal(0), 0..=0, "core", "write the profile (trigger `signal`) each time this signal arrives (USR2, USR1, ...; the runtime then has a handler for it and one helper thread); off: the signal keeps the program's disposition";
    exit_dump: bool = true, 0..=1, "core", "write the profile at exit, at `_exit`/`_Exit`, and before `abort` or a failed `assert` (a `dump_signal` dump happens either way; off, the exit waits up to 10 s for a signal dump still being written)";
    fatal_dump: bool = false, 0..=1, "core", "on SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS, SIGTERM, SIGINT, SIGHUP, SIGQUIT (those left at their default at start): write the profile, then let the signal act as it would have; off: such a death loses the profile";
    fs_budget: u32 = 4096, 1..=4294967295, "sharing", "accesses recorded on a watched (uncontended) line before it is let go";
    fs_inv_ns: u32 = 60, 1..=100000, "sharing", "unused since profile version 5 (the predicted gain is measured: docs/model.md); accepted and recorded";
    fs_max_lines: u32 = 8192, 0..=16382, "sharing", "most cache lines tracked in detail (about 3.5 KiB each)";
    fs_sample: u32 = 64, 1..=1048576, "sharing", "analyse one access in N per thread to a tracked line (1 = every access; counts are scaled by N)";
    fs_threshold: u32 = 16, 1..=255, "sharing", "invalidations after which a line is tracked per byte";
    fs_watch: u32 = 256, 0..=1073741824, "sharing", "one write in N per site and thread samples write volume, for latent false sharing (rounded up to a power of 2; 0 = off)";
    fs_watch_samples: u32 = 2, 1..=63, "sharing", "volume samples after which a line next to another thread's line is watched";
    help: bool = false, 0..=1, "core", "print this table on stderr and run on";
    numa: Text = Text::new("thread"), 0..=0, "numa", "NUMA model for modules built with PROFCC_INSTRUMENT=numa (docs/numa.md): thread = each thread is its own node (NumaPerf); emulate = numa_nodes nodes, a thread on the node of the CPUs it is bound to, else thread id mod numa_nodes, a page on its first toucher's node or where a memory policy puts it; real = the machine's nodes (getcpu, move_pages; all local on one node); off = no homes (accesses counted, none local or remote)";
    numa_nodes: u32 = 4, 1..=1023, "numa", "nodes of numa=emulate (CPU c of n is on node c x numa_nodes / n), and the nodes the binding plan of numa=thread is made for";
    out: Text = Text::new("profcc.%e.%p.json"), 0..=0, "core", "profile path; %p pid, %h host name, %e executable name, %r MPI rank from the launcher's environment (OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, MV2_COMM_WORLD_RANK, SLURM_PROCID; `pid` and the pid without one), %% a percent sign";
    roi_events: u32 = 100, 0..=1000000000, "regions", "read perf events (instructions, L1D read misses, LLC misses where the machine gives hardware counters; page faults) around a region's counted executions while they last at least this many microseconds on average (and on its first; the two reads cost about 1 us: docs/regions.md, \"Hardware counters\"); 0: never";
    roi_interval: u32 = 0, 0..=3600000, "regions", "every N ms, a runtime thread snapshots every region's counts per thread: kept in the profile (profcc report --trace FILE makes a Chrome trace of them) and published in /dev/shm/profcc-roi-PID.json for profcc monitor PID (docs/regions.md, \"Snapshots\"); 0: none until profcc monitor asks";
    roi_sample: u32 = 1, 1..=1048576, "regions", "count the bytes and instruction mix of a region (PROFCC_ROI_BEGIN/END, LIKWID, Caliper, PAPI markers) on every execution for its first N executions per thread, then on one in N (a random start, every Nth after; those counts and times are scaled by N; executions stay exact; docs/regions.md, \"Sampling\"); 1: every execution";
    roi_time: u32 = 1, 0..=1000000000, "regions", "time every counted execution of a region while its executions last at least this many microseconds on average (and its first 256 in each thread); shorter ones are timed one in 16 at random, each weighing 16 in the region's time (two TSC reads are most of what a counted execution of a 64-element loop costs: docs/regions.md, \"Time\"); 0: time every execution";
    summary: Summary = Summary::Auto, 0..=0, "core", "exit summary of at most 10 lines: auto = on stderr when stderr is the terminal the program started with, otherwise into the profile (`profcc report` shows it); 1 = on stderr wherever it points; 0 = nowhere";
    top: u32 = 5, 0..=1000, "core", "how many entries each summary section lists";
    verbose: bool = false, 0..=1, "core", "say where the profile went and why";
    write: bool = true, 0..=1, "core", "write the profile file at all";
}

/// What [`parse`] made of an option string.
pub struct Parsed {
    pub options: Options,
    /// Flags the string named with a valid value (bit i: `FLAGS[i]`).
    pub given: u64,
    /// One line per ignored entry.
    pub warnings: Vec<String>,
}

const _: () = assert!(FLAGS.len() <= 64, "Parsed::given has one bit per flag");

/// Parse `key=value:key=value` (a bare `key` means `key=1`). Never fails: what cannot be used
/// is a warning and the flag keeps its default.
pub fn parse(spec: &str) -> Parsed {
    let mut p = Parsed {
        options: Options::DEFAULT,
        given: 0,
        warnings: Vec::new(),
    };
    for item in spec.split(':').filter(|s| !s.is_empty()) {
        let (key, value) = item.split_once('=').unwrap_or((item, "1"));
        match p.options.set(key, value) {
            None => {
                let names: Vec<&str> = FLAGS.iter().map(|f| f.name).collect();
                p.warnings.push(format!(
                    "profcc: unknown option '{key}' in PROFCC_OPTIONS ignored; valid options: {} (help=1 lists them)",
                    names.join(", ")
                ));
            }
            Some(Err(why)) => {
                let default = FLAGS
                    .iter()
                    .find(|f| f.name == key)
                    .map(|f| (f.show)(&Options::DEFAULT));
                p.warnings.push(format!(
                    "profcc: option '{key}={value}' is not valid in PROFCC_OPTIONS ({why}); using the default {}",
                    default.unwrap_or_default()
                ));
            }
            Some(Ok(())) => {
                if let Some(i) = FLAGS.iter().position(|f| f.name == key) {
                    p.given |= 1 << i;
                }
            }
        }
    }
    p
}

static PARSED: OnceLock<(Options, u64)> = OnceLock::new();

/// Fix the values in force (once, at initialisation; later calls change nothing). Returns the
/// warnings to print.
pub fn init(spec: &str) -> Vec<String> {
    let p = parse(spec);
    let _ = PARSED.set((p.options.resolved(), p.given));
    p.warnings
}

/// The values in force; the defaults before initialisation. No lock.
#[inline]
pub fn get() -> &'static Options {
    PARSED.get().map_or(&Options::DEFAULT, |p| &p.0)
}

/// Did `PROFCC_OPTIONS` set the flag `name` (with a valid value)?
pub fn given(name: &str) -> bool {
    let bits = PARSED.get().map_or(0, |p| p.1);
    FLAGS
        .iter()
        .position(|f| f.name == name)
        .is_some_and(|i| bits & (1 << i) != 0)
}

/// All flags as (name, value) text, for the profile.
pub fn all() -> Vec<(String, String)> {
    let o = get();
    FLAGS
        .iter()
        .map(|f| (f.name.to_string(), (f.show)(o)))
        .collect()
}

fn range_text(f: &Flag) -> String {
    f.range
        .map_or(String::new(), |(lo, hi)| format!("{lo}-{hi}"))
}

pub fn help_text() -> String {
    let mut s = String::from("profcc run-time options (PROFCC_OPTIONS=key=value:key=value):\n");
    for f in FLAGS {
        s.push_str(&format!(
            "  {:<17} {:<4} {:<12} default {:<18} {}\n",
            f.name,
            f.kind,
            range_text(f),
            (f.show)(&Options::DEFAULT),
            f.help
        ));
    }
    s
}

/// `docs/options.md`, generated from the table (a test keeps the committed file fresh).
pub fn docs_markdown() -> String {
    let mut s = String::from(
        "# Run-time options\n\n\
         <!-- Generated from rt/src/options.rs by `UPDATE_DOCS=1 cargo test -p profcc-rt options`; do not edit. -->\n\n\
         An instrumented program reads one variable, `PROFCC_OPTIONS=key=value:key=value` (a bare\n\
         `key` means `key=1`), once at start. An unknown key or a bad value (wrong type, out of\n\
         range) prints one warning on stderr and the flag keeps its default; the program runs on.\n\
         `PROFCC_OPTIONS=help=1` prints this table. The profile records every value in force\n\
         (`options`).\n\n\
         | flag | type | range | default | read by | meaning |\n\
         |---|---|---|---|---|---|\n",
    );
    for f in FLAGS {
        s.push_str(&format!(
            "| `{}` | {} | {} | `{}` | {} | {} |\n",
            f.name,
            f.kind,
            range_text(f),
            (f.show)(&Options::DEFAULT),
            f.owner,
            f.help
        ));
    }
    s.push_str(SETUID_SECTION);
    s
}

/// What the runtime does in a setuid or setgid program (`secure.rs`), for docs/options.md.
const SETUID_SECTION: &str = "\n## Setuid and setgid programs\n\n\
    A program that runs with privileges its caller lacks (installed setuid or setgid, or with\n\
    file capabilities: the kernel's secure-execution mode, `AT_SECURE`) reads no\n\
    `PROFCC_OPTIONS` and writes no profile. Its caller chooses its environment, working\n\
    directory and `$HOME`; honouring `out=` there would let any user replace a file the\n\
    program's owner can write (`out=/etc/passwd`), and `dump_signal`, `fatal_dump`, the\n\
    calibration cache under `$HOME` and `profcc monitor`'s request files would likewise act\n\
    or read on the caller's behalf. So every option keeps its default, no cache or request\n\
    file is read, and the exit dump writes nothing; the analyses still run, and the program's\n\
    output, exit code and signals are as without profcc. When stderr is a terminal at start\n\
    the runtime says so in one line. glibc treats its own `MALLOC_*` tunables and\n\
    `LD_PRELOAD` in such processes the same way.\n\n\
    To profile such a program, run it as the user it runs as (root for a setuid-root\n\
    program), or install a copy without the setuid bit for the profiling run.\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_names_are_unique() {
        for w in FLAGS.windows(2) {
            assert!(
                w[0].name < w[1].name,
                "{} before {}: keep FLAGS sorted",
                w[0].name,
                w[1].name
            );
        }
    }

    #[test]
    fn docs_are_generated_from_the_table() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/options.md");
        let want = docs_markdown();
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(path, &want).unwrap();
        }
        let have = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            have == want,
            "docs/options.md is stale: run `UPDATE_DOCS=1 cargo test -p profcc-rt options`"
        );
    }

    /// A value for every flag that differs from its default and is valid.
    fn other_value(f: &Flag) -> String {
        match (f.kind, f.range) {
            ("bool", _) => if (f.show)(&Options::DEFAULT) == "1" {
                "0"
            } else {
                "1"
            }
            .into(),
            ("uint", Some((_, hi))) => {
                let d: u64 = (f.show)(&Options::DEFAULT).parse().unwrap();
                if d == hi { hi - 1 } else { d + 1 }.to_string()
            }
            ("when", _) => "0".into(),
            ("sig", _) => "USR2".into(),
            ("bool|auto", _) => "1".into(),
            ("uint|auto", _) => "7".into(),
            _ => "x.%p.json".into(),
        }
    }

    #[test]
    fn every_flag_can_be_set() {
        let spec: Vec<String> = FLAGS
            .iter()
            .map(|f| format!("{}={}", f.name, other_value(f)))
            .collect();
        let p = parse(&spec.join(":"));
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        assert_eq!(p.given, (1u64 << FLAGS.len()) - 1);
        for f in FLAGS {
            assert_eq!((f.show)(&p.options), other_value(f), "{}", f.name);
            assert_ne!(
                (f.show)(&p.options),
                (f.show)(&Options::DEFAULT),
                "{}",
                f.name
            );
        }
    }

    #[test]
    fn bad_entries_warn_once_and_keep_the_default() {
        let p = parse("fs_sample=0:fs_threshold=300:summary=maybe:nosuch=1:top=12:out=");
        assert_eq!(p.warnings.len(), 4, "{:#?}", p.warnings);
        assert!(p.warnings[0].contains("'fs_sample=0'") && p.warnings[0].contains("1 to 1048576"));
        assert!(
            p.warnings[0].ends_with("using the default 64"),
            "{}",
            p.warnings[0]
        );
        assert!(p.warnings[1].contains("'fs_threshold=300'"));
        assert!(p.warnings[2].contains("expected 0 or 1"));
        assert!(p.warnings[3].contains("unknown option 'nosuch'"));
        assert_eq!(p.options.fs_sample, Options::DEFAULT.fs_sample);
        assert_eq!(p.options.fs_threshold, Options::DEFAULT.fs_threshold);
        assert_eq!(p.options.summary, Summary::Auto);
        assert_eq!(p.options.top, 12);
        assert_eq!(p.options.out.as_str(), "");
        let long = format!("out={}", "a".repeat(Text::MAX + 1));
        let p = parse(&long);
        assert_eq!(p.warnings.len(), 1);
        assert_eq!(p.options.out.as_str(), "profcc.%e.%p.json");
        assert!(parse("help").options.help, "a bare key means key=1");
        assert_eq!(parse("summary").options.summary, Summary::Always);
        assert_eq!(
            parse("dump_signal=SIGUSR2").options.dump_signal,
            Signal(libc::SIGUSR2)
        );
        assert_eq!(
            parse("dump_signal=12").options.dump_signal,
            Signal(libc::SIGUSR2)
        );
        assert_eq!(
            parse("dump_signal=9").warnings.len(),
            1,
            "SIGKILL cannot be caught"
        );
    }

    /// `auto` follows `alloc_sample`; a value given wins; what the profile records is the
    /// value in force; the help text names the period `auto` gives.
    #[test]
    fn auto_flags_follow_alloc_sample() {
        let on = |spec: &str| {
            let o = parse(spec).options;
            (o.alloc_ops(), o.alloc_events())
        };
        // The default samples (alloc_sample=65536).
        assert_eq!(on(""), (true, 0));
        assert_eq!(on("alloc_sample=0"), (false, ALLOC_EVENTS_EXACT));
        assert_eq!(on("alloc_sample=65536"), (true, 0));
        assert_eq!(on("alloc_sample=65536:alloc_ops=0"), (false, 0));
        assert_eq!(on("alloc_sample=0:alloc_ops=1"), (true, ALLOC_EVENTS_EXACT));
        assert_eq!(on("alloc_ops=1"), (true, 0));
        assert_eq!(on("alloc_sample=1:alloc_events=100"), (true, 100));
        assert_eq!(
            on("alloc_sample=0:alloc_ops=auto:alloc_events=auto"),
            (false, ALLOC_EVENTS_EXACT)
        );
        let o = parse("alloc_sample=65536").options.resolved();
        let shown = |name: &str| {
            let f = FLAGS.iter().find(|f| f.name == name).unwrap();
            (f.show)(&o)
        };
        assert_eq!(
            (shown("alloc_ops"), shown("alloc_events")),
            ("1".into(), "0".into())
        );
        assert_eq!(
            (FLAGS.iter().find(|f| f.name == "alloc_ops").unwrap().show)(&Options::DEFAULT),
            "auto"
        );
        let help = FLAGS
            .iter()
            .find(|f| f.name == "alloc_events")
            .unwrap()
            .help;
        assert!(
            help.contains(&format!("auto: {ALLOC_EVENTS_EXACT} with exact recording")),
            "{help}"
        );
        assert!(parse("alloc_ops=maybe").warnings[0].contains("expected 0 or 1, or auto"));
    }

    #[test]
    fn max_lines_range_fits_the_shadow_word_field() {
        let f = FLAGS.iter().find(|f| f.name == "fs_max_lines").unwrap();
        assert_eq!(f.range, Some((0, profcc_abi::ShadowWord::FREED)));
    }

    /// The profile's sharing settings default to the same values when an older profile lacks
    /// them: the schema's copy must not drift from the table.
    #[test]
    fn schema_sharing_defaults_match_the_table() {
        let s = profcc_schema::sharing::Settings::default();
        let o = Options::DEFAULT;
        assert_eq!(s.threshold, o.fs_threshold);
        assert_eq!(s.sample, o.fs_sample);
        assert_eq!(s.watch_interval, o.fs_watch);
        assert_eq!(s.watch_samples, o.fs_watch_samples);
        assert_eq!(s.watch_budget, o.fs_budget);
        assert_eq!(s.max_lines, o.fs_max_lines);
        assert_eq!(s.invalidation_ns, o.fs_inv_ns);
    }
}
