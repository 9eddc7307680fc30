//! Builds the two C artefacts of the probe into OUT_DIR: `profcc-allocator-probe` (an
//! executable) and `libprofcc_allocator_probe.so` (its preloadable form). `cargo xtask build`
//! copies them next to the driver (it finds OUT_DIR in cargo's JSON messages).

use std::path::Path;

fn link(out: &Path, name: &str, extra: &[&str], sources: &[&str]) {
    let compiler = cc::Build::new().opt_level(1).get_compiler();
    let mut cmd = compiler.to_command();
    // The runtime's timing rules, which `--bench`'s churn times calls by (probe.c, "bench"):
    // defined once, in profcc-schema.
    use profcc_schema::allocator::{BRACKET_SAMPLES, INTERRUPTED_FROM_NS, TIME_ALL_FROM};
    cmd.args(["-O1", "-g", "-Wall", "-fno-builtin"])
        .arg(format!("-DBRACKET_SAMPLES={BRACKET_SAMPLES}"))
        .arg(format!("-DINTERRUPTED_FROM_NS={INTERRUPTED_FROM_NS}ull"))
        .arg(format!("-DTIME_ALL_FROM={TIME_ALL_FROM}u"))
        .args(extra)
        .args(sources.iter().map(|s| format!("csrc/{s}")))
        .arg("-o")
        .arg(out.join(name))
        .args(["-ldl", "-lpthread"]);
    let st = cmd
        .status()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(st.success(), "{cmd:?} failed");
}

fn main() {
    println!("cargo:rerun-if-changed=csrc");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    link(
        &out,
        "profcc-allocator-probe",
        &[],
        &["main.c", "probe.c", "ident.c"],
    );
    link(
        &out,
        "libprofcc_allocator_probe.so",
        &["-shared", "-fPIC"],
        &["preload.c", "probe.c", "ident.c"],
    );
}
