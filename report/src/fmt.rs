//! Number formatting for the text report (sizes and durations: `profcc_analysis::fmt`, which
//! the findings' words use too).

pub use profcc_analysis::fmt::{bytes, duration};

/// `12345678` → `12,345,678`.
pub fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Short counts for prose: `950`, `12K`, `1.2M`, `3.4G` (below 10,000 exact).
pub fn short(n: u64) -> String {
    if n < 10_000 {
        return n.to_string();
    }
    let (v, unit) = if n >= 1_000_000_000 {
        (n as f64 / 1e9, "G")
    } else if n >= 1_000_000 {
        (n as f64 / 1e6, "M")
    } else {
        (n as f64 / 1e3, "K")
    };
    if v >= 100.0 {
        format!("{v:.0}{unit}")
    } else {
        format!("{v:.1}{unit}")
    }
}

pub fn percent(p: f64) -> String {
    if p >= 10.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.2}%")
    }
}

/// Shorten a long string from the left, keeping its end (`…/src/kernel.c:12`).
pub fn tail(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max || max < 2 {
        return s.to_string();
    }
    let keep: String = s.chars().skip(n - (max - 1)).collect();
    format!("…{keep}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats() {
        assert_eq!(super::count(0), "0");
        assert_eq!(super::count(999), "999");
        assert_eq!(super::count(1000), "1,000");
        assert_eq!(super::count(12345678), "12,345,678");
        assert_eq!(super::bytes(1023), "1023 B");
        assert_eq!(super::bytes(1536), "1.50 KiB");
        assert_eq!(super::bytes(3 << 30), "3.00 GiB");
        assert_eq!(super::tail("abcdef", 4), "…def");
        assert_eq!(super::short(9999), "9999");
        assert_eq!(super::short(12_345), "12.3K");
        assert_eq!(super::short(1_234_567), "1.2M");
        assert_eq!(super::short(250_000_000), "250M");
    }
}
