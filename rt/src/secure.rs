//! Secure-execution mode: a process that runs with privileges its caller lacks (setuid,
//! setgid, file capabilities; the kernel's `AT_SECURE`, as glibc's `secure_getenv` reads it).
//!
//! The caller controls such a process's environment, working directory and `$HOME`, so the
//! runtime takes nothing from them: [`crate::env`] answers `None` for every variable
//! (`PROFCC_OPTIONS` among them, so every option keeps its default: no `out=`, no
//! `dump_signal`, no `fatal_dump`, no `allocator=` file), no cache under `$HOME` or
//! `$XDG_CACHE_HOME` is read, the regions' monitor requests are not looked for, and no
//! profile is written at all (the default name lies in the caller's working directory). The
//! analyses still run, so the program behaves (and costs) as an ordinary run.
//! `writer::install` says so once on stderr, only when stderr is a terminal at start.
//! docs/options.md, "Setuid and setgid programs", says why.

use core::sync::atomic::{AtomicU8, Ordering::Relaxed};

/// 0: not read yet; 1: ordinary; 2: secure.
static MODE: AtomicU8 = AtomicU8::new(0);

/// Does this process run in secure-execution mode?
pub fn on() -> bool {
    match MODE.load(Relaxed) {
        0 => {
            let secure = unsafe { libc::getauxval(libc::AT_SECURE) } != 0;
            MODE.store(if secure { 2 } else { 1 }, Relaxed);
            secure
        }
        m => m == 2,
    }
}

/// The one line said on a terminal's stderr at start.
pub const NOTICE: &str = "profcc: this program runs with privileges its caller lacks \
    (setuid, setgid or file capabilities): PROFCC_OPTIONS is ignored and no profile is \
    written (docs/options.md, \"Setuid and setgid programs\")";
