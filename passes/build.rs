//! Compile the hook fast path (hooks/*.c) to LLVM bitcode with clang-22; the pass links it
//! into every instrumented module.
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=hooks");
    println!("cargo:rerun-if-env-changed=PROFCC_CLANG");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("fastpath.bc");
    let clang = std::env::var("PROFCC_CLANG").unwrap_or_else(|_| "clang-22".into());
    let status = Command::new(&clang)
        .args([
            "-O2",
            "-emit-llvm",
            "-c",
            "-fno-stack-protector",
            "-fPIC",
            "-fno-exceptions",
            "-g0",
        ])
        .args(["-fno-unwind-tables", "-fno-asynchronous-unwind-tables"])
        .arg("hooks/fastpath.c")
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap_or_else(|e| {
            panic!("cannot run {clang} ({e}); run `cargo xtask setup` to install LLVM 22")
        });
    assert!(
        status.success(),
        "{clang} failed to compile hooks/fastpath.c"
    );
}
