//! The runtime's messages: one line to stderr at a time.

/// Write one line to stderr with a single `write` call.
pub fn stderr_line(s: &str) {
    let mut buf = Vec::with_capacity(s.len() + 1);
    buf.extend_from_slice(s.trim_end_matches('\n').as_bytes());
    buf.push(b'\n');
    unsafe {
        libc::write(2, buf.as_ptr() as *const libc::c_void, buf.len());
    }
}
