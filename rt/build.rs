fn main() {
    println!("cargo:rerun-if-changed=csrc");
    let mut build = cc::Build::new();
    for entry in std::fs::read_dir("csrc").unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "c") {
            build.file(path);
        }
    }
    build
        .flag("-fno-omit-frame-pointer")
        // The interposers call malloc/free with the re-entrancy guard set; as builtins the
        // compiler may assume malloc cannot see the guard and drop the store.
        .flag("-fno-builtin")
        .flag("-fPIC")
        .opt_level(2)
        .compile("profcc_shim");
}
