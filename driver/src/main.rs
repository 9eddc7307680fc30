mod report;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("report") {
        std::process::exit(report::run(&args[2..]));
    }
    eprintln!("profcc: driver not written yet");
    std::process::exit(2);
}
