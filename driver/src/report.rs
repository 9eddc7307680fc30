/// `profcc report FILE...`: returns the process exit code.
pub fn run(args: &[String]) -> i32 {
    let _ = args;
    eprintln!("profcc report: not written yet");
    1
}
