//! Compile the hook bodies (../hooks/counting.c, ../hooks/sharing.c) to LLVM bitcode with
//! clang-22; the pass links them into every instrumented module. The ABI constants come from
//! the header the profcc-abi crate generates (../abi/include/profcc_abi.h).
use std::path::PathBuf;
use std::process::Command;

/// The hook bodies, in the order the pass links them (src/llvm.rs, `HOOK_BITCODE`).
const HOOKS: [&str; 2] = ["counting", "sharing"];

fn main() {
    println!("cargo:rerun-if-changed=../hooks");
    println!("cargo:rerun-if-changed=../abi/include");
    println!("cargo:rerun-if-env-changed=PROFCC_CLANG");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let clang = std::env::var("PROFCC_CLANG").unwrap_or_else(|_| "clang-22".into());
    for name in HOOKS {
        let src = format!("../hooks/{name}.c");
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
            .args(["-I", "../abi/include"])
            .arg(&src)
            .arg("-o")
            .arg(out_dir.join(format!("{name}.bc")))
            .status()
            .unwrap_or_else(|e| {
                panic!("cannot run {clang} ({e}); run `cargo xtask setup` to install LLVM 22")
            });
        assert!(status.success(), "{clang} failed to compile {src}");
    }
}
