//! Compile the hook bodies (../hooks/counting.c, ../hooks/sharing.c) to LLVM bitcode with
//! clang-22; the pass links them into every instrumented module. The ABI constants come from
//! the header the profcc-abi crate generates (../abi/include/profcc_abi.h).
//! Also the hook stubs (../hooks/stub.c) as an archive, libprofcc_stub.a, which the driver
//! adds to shared links (`profcc_passes::STUB_ARCHIVE`).
use std::path::PathBuf;
use std::process::Command;

/// The hook bodies, in the order the pass links them (src/llvm.rs, `HOOK_BITCODE`).
const HOOKS: [&str; 3] = ["counting", "sharing", "numa"];

fn main() {
    println!("cargo:rerun-if-changed=../hooks");
    println!("cargo:rerun-if-changed=../abi/include");
    println!("cargo:rerun-if-env-changed=PROFCC_CLANG");
    println!("cargo:rerun-if-env-changed=PROFCC_LLVM_AR");
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
    stub_archive(&clang, &out_dir);
    marker_archive(&clang, &out_dir);
    shim(&clang);
}

/// `clang -O2 -c FLAGS SRC -o OBJ`, or the build fails saying which file.
fn compile_object(clang: &str, flags: &[&str], src: &str, obj: &std::path::Path) {
    let status = Command::new(clang)
        .args(["-O2", "-c"])
        .args(flags)
        .arg(src)
        .arg("-o")
        .arg(obj)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {clang} ({e})"));
    assert!(status.success(), "{clang} failed to compile {src}");
}

/// ../hooks/markers.c, one object per marker family, as libprofcc_markers.a.
fn marker_archive(clang: &str, out_dir: &std::path::Path) {
    let mut objs = Vec::new();
    for family in ["LIKWID", "CALIPER", "PAPI"] {
        let obj = out_dir.join(format!("profcc_markers_{}.o", family.to_lowercase()));
        compile_object(
            clang,
            &["-fPIC", "-g0", &format!("-DFAMILY_{family}")],
            "../hooks/markers.c",
            &obj,
        );
        objs.push(obj);
    }
    archive(clang, &out_dir.join("libprofcc_markers.a"), &objs);
}

/// ../shim/shim.cpp (LLVM's loops, scalar evolution and cloning behind `extern "C"`), built
/// with clang++ of the same LLVM against its headers; libLLVM (linked by llvm-sys) has the
/// symbols.
fn shim(clang: &str) {
    println!("cargo:rerun-if-changed=shim/shim.cpp");
    let config = clang.replace("clang", "llvm-config");
    let out = Command::new(&config)
        .arg("--includedir")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {config} ({e}); run `cargo xtask setup`"));
    assert!(out.status.success(), "{config} --includedir failed");
    let include = String::from_utf8_lossy(&out.stdout).trim().to_string();
    cc::Build::new()
        .cpp(true)
        .compiler(clang.replace("clang", "clang++"))
        .file("shim/shim.cpp")
        .include(include)
        .flag("-std=c++17")
        .flag("-fno-exceptions")
        .flag("-fno-rtti")
        .flag("-Wno-unused-parameter")
        .define("_GNU_SOURCE", None)
        .define("__STDC_CONSTANT_MACROS", None)
        .define("__STDC_FORMAT_MACROS", None)
        .define("__STDC_LIMIT_MACROS", None)
        .compile("profcc_shim");
}

/// ../hooks/stub.c as an object in an archive: the linker takes it only for a library that
/// refers to the hooks' symbols.
fn stub_archive(clang: &str, out_dir: &std::path::Path) {
    let obj = out_dir.join("profcc_stub.o");
    compile_object(
        clang,
        &[
            "-fPIC",
            "-fno-stack-protector",
            "-g0",
            "-I",
            "../abi/include",
        ],
        "../hooks/stub.c",
        &obj,
    );
    archive(clang, &out_dir.join("libprofcc_stub.a"), &[obj]);
}

/// `lib`, made anew from `objs` by the llvm-ar of the same LLVM as clang (clang-22 ->
/// llvm-ar-22).
fn archive(clang: &str, lib: &std::path::Path, objs: &[PathBuf]) {
    let ar = std::env::var("PROFCC_LLVM_AR").unwrap_or_else(|_| clang.replace("clang", "llvm-ar"));
    let _ = std::fs::remove_file(lib);
    let status = Command::new(&ar)
        .arg("rcs")
        .arg(lib)
        .args(objs)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {ar} ({e})"));
    assert!(status.success(), "{ar} failed to make {}", lib.display());
}
