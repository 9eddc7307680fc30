fn main() {
    println!("cargo:rerun-if-changed=csrc");
    println!("cargo:rerun-if-changed=../hooks");
    println!("cargo:rerun-if-changed=../allocator-probe/csrc/ident.c");
    println!("cargo:rerun-if-changed=../abi/include");
    println!("cargo:rerun-if-env-changed=PROFCC_CLANG");
    let mut build = cc::Build::new();
    // clang: the hooks' cold door uses the preserve_most calling convention (gcc has none).
    build.compiler(std::env::var("PROFCC_CLANG").unwrap_or_else(|_| "clang-22".into()));
    for entry in std::fs::read_dir("csrc").unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "c") {
            build.file(path);
        }
    }
    // The sharing hooks' cold door lives next to the hook bodies (the pass inlines those).
    build.file("../hooks/sharing_door.c");
    // Which allocator malloc reaches: the allocator probe's identification, shared.
    build.file("../allocator-probe/csrc/ident.c");
    build
        // profcc_abi.h (generated from the profcc-abi crate) and the hooks' declarations.
        .include("../abi/include")
        .include("../hooks")
        .flag("-fno-omit-frame-pointer")
        // The interposers call malloc/free with the re-entrancy guard set; as builtins the
        // compiler may assume malloc cannot see the guard and drop the store.
        .flag("-fno-builtin")
        .flag("-fPIC")
        // Calls of libc through the GOT: a PLT slot would move the program's `.data`
        // (xtask's `plt_thunks` does the same for the Rust code's calls).
        .flag("-fno-plt")
        .opt_level(2)
        .compile("profcc_shim");
}
