//! Number formatting for the text report.

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

/// Binary units: `1536` → `1.5 KiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if v >= 100.0 {
        format!("{v:.0} {}", UNITS[u])
    } else if v >= 10.0 {
        format!("{v:.1} {}", UNITS[u])
    } else {
        format!("{v:.2} {}", UNITS[u])
    }
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

pub fn duration(ns: u64) -> String {
    if ns >= 60_000_000_000 {
        let s = ns / 1_000_000_000;
        format!("{}m{:02}s", s / 60, s % 60)
    } else if ns >= 1_000_000_000 {
        format!("{:.2} s", ns as f64 / 1e9)
    } else if ns >= 1_000_000 {
        format!("{:.1} ms", ns as f64 / 1e6)
    } else if ns >= 1_000 {
        format!("{:.1} µs", ns as f64 / 1e3)
    } else {
        format!("{ns} ns")
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
