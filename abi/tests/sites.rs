//! The site table's record stream (abi/src/sites.rs) decodes to exactly what was encoded.

use profcc_abi::sites::{SiteReader, SiteWriter};
use profcc_abi::{AccessKind, SiteDesc, NO_STRING};

fn encode(sites: &[SiteDesc]) -> Vec<u8> {
    let mut w = SiteWriter::default();
    let mut out = Vec::new();
    for s in sites {
        w.push(s, &mut |b| out.push(b));
    }
    out
}

/// xorshift64: a fixed, dependency-free sequence.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A table like the pass's: runs of one function, lines near each other, groups whose
/// leader is their first site; with edge values mixed in (any u32 string offset, NO_STRING,
/// lines (inlined-at lines too) jumping both ways by up to 2^32 - 1, any u16 size, any leader).
fn random_table(rng: &mut Rng, n: usize) -> Vec<SiteDesc> {
    let mut v = Vec::with_capacity(n);
    let mut s = SiteDesc::START;
    let mut leader = 0;
    for i in 0..n as u32 {
        let edge = rng.below(16) == 0;
        if rng.below(8) == 0 {
            s.func = rng.below(5000) as u32;
            s.file = rng.below(4) as u32;
        }
        if rng.below(6) == 0 {
            (s.inlined_file, s.inlined_line) = if rng.below(2) == 0 {
                (NO_STRING, 0)
            } else {
                (rng.below(4) as u32, rng.below(300_000) as u32)
            };
        }
        if edge {
            s.file = rng.next() as u32;
            s.func = [0, u32::MAX, NO_STRING - 1][rng.below(3) as usize];
            s.inlined_line = rng.next() as u32;
        }
        s.line = if edge {
            [0, u32::MAX, rng.next() as u32][rng.below(3) as usize]
        } else {
            (s.line as i64 + rng.below(40) as i64 - 10).clamp(0, 300_000) as u32
        };
        s.col = if edge {
            rng.next() as u32
        } else {
            rng.below(90) as u32
        };
        s.size = if edge {
            rng.next() as u16
        } else {
            [0, 1, 2, 4, 8, 16, 32, 3, 12, 64, 4096][rng.below(11) as usize]
        };
        s.kind = AccessKind::ALL[rng.below(AccessKind::ALL.len() as u64) as usize] as u8;
        if rng.below(3) == 0 {
            leader = i;
        }
        s.leader = if edge {
            [0, u32::MAX, i + 1][rng.below(3) as usize]
        } else {
            leader
        };
        v.push(s);
    }
    v
}

#[test]
fn random_tables_round_trip() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for n in [0, 1, 2, 3, 17, 1000, 20_000] {
        let sites = random_table(&mut rng, n);
        let bytes = encode(&sites);
        let back: Vec<SiteDesc> = SiteReader::new(&bytes).collect();
        assert_eq!(back.len(), sites.len());
        for (i, (a, b)) in back.iter().zip(&sites).enumerate() {
            assert_eq!(a, b, "site {i} of {n}");
        }
    }
}

#[test]
fn typical_sites_take_a_few_bytes() {
    // Same function and file, a line further, own leader, a 4-byte read: header, line, col.
    let mut s = SiteDesc::START;
    let mut sites = Vec::new();
    for i in 0..100u32 {
        s.line = 1000 + i;
        s.col = 7;
        s.size = 4;
        s.leader = i;
        sites.push(s);
    }
    let bytes = encode(&sites);
    // The first record also carries its context and a two-byte line.
    assert!(bytes.len() <= 3 * 100 + 6, "{} bytes", bytes.len());
    assert_eq!(SiteReader::new(&bytes).collect::<Vec<_>>(), sites);
}

#[test]
fn truncated_streams_stop_without_panicking() {
    let mut rng = Rng(7);
    let sites = random_table(&mut rng, 300);
    let bytes = encode(&sites);
    for cut in [0, 1, bytes.len() / 3, bytes.len() - 1] {
        let back: Vec<SiteDesc> = SiteReader::new(&bytes[..cut]).collect();
        assert!(back.len() < sites.len());
        assert_eq!(back[..], sites[..back.len()], "a prefix reads back exactly");
    }
}

fn lz(bytes: &[u8]) -> Vec<u8> {
    let mut head = vec![0u32; profcc_abi::lz::HASH_SIZE];
    let mut prev = vec![0u32; bytes.len()];
    let mut out = Vec::new();
    profcc_abi::lz::compress(bytes, &mut head, &mut prev, &mut |b| out.push(b));
    out
}

fn unlz(packed: &[u8], len: usize) -> Option<Vec<u8>> {
    let mut out = vec![0u8; len];
    profcc_abi::lz::expand(packed, &mut out).then_some(out)
}

#[test]
fn lz_round_trips() {
    let mut rng = Rng(0x51_7e);
    let mut inputs: Vec<Vec<u8>> = vec![
        vec![],
        vec![7],
        vec![0; 1000],
        (0..=255u8).collect(),
        (0..70_000u32).map(|i| (i % 251) as u8).collect(),
        (0..5000).map(|_| rng.next() as u8).collect(),
    ];
    // Site streams, long ones with repeats (the window is 64 KiB).
    for n in [10, 5000, 60_000] {
        inputs.push(encode(&random_table(&mut rng, n)));
    }
    for x in &inputs {
        let packed = lz(x);
        assert_eq!(
            unlz(&packed, x.len()).as_deref(),
            Some(&x[..]),
            "{} bytes",
            x.len()
        );
        if x.len() > 1000 && x.iter().all(|&b| b == 0) {
            assert!(packed.len() < 40, "runs compress: {}", packed.len());
        }
    }
    // A wrong length or a cut stream is refused, never a panic.
    let x = &inputs[4];
    let packed = lz(x);
    assert!(unlz(&packed, x.len() - 1).is_none());
    assert!(unlz(&packed, x.len() + 1).is_none());
    for cut in [1, packed.len() / 2, packed.len() - 1] {
        assert!(unlz(&packed[..cut], x.len()).is_none());
    }
    assert!(
        unlz(&[0x85, 0x03], 8).is_none(),
        "a match before any output"
    );
}
