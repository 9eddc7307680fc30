//! Builds the two C artefacts of the probe into OUT_DIR: `profcc-allocator-probe` (an
//! executable) and `libprofcc_allocator_probe.so` (its preloadable form). `cargo xtask build`
//! copies them next to the driver (it finds OUT_DIR in cargo's JSON messages).

use std::path::Path;

fn link(out: &Path, name: &str, extra: &[&str], sources: &[&str]) {
    let compiler = cc::Build::new().opt_level(1).get_compiler();
    let mut cmd = compiler.to_command();
    cmd.args(["-O1", "-g", "-Wall", "-fno-builtin"])
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
