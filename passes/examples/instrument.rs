//! `cargo run -p profcc-passes --example instrument IN.bc OUT.bc`: run the pass by hand.
fn main() {
    let a: Vec<String> = std::env::args().collect();
    match profcc_passes::instrument_file(a[1].as_ref(), a[2].as_ref(), &Default::default()) {
        Ok(s) => eprintln!("{:?}", s.counts),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1)
        }
    }
}
