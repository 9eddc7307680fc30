//! A small LZ77 codec for the site table's record stream ([`crate::sites`]): the records of
//! unrolled or inlined code repeat byte for byte (same columns, same line steps, same
//! leaders), which this takes out (sqlite3.c: 289 KB -> about 195 KB). The pass compresses
//! ([`compress`]), the runtime expands once, when the module registers ([`expand`]).
//!
//! Tokens:
//!
//! ```text
//! 0x00-0x7f  literal run: t + 1 bytes follow
//! 0x80-0xff  match: copy (t & 0x7f) + MIN_MATCH bytes from `distance` bytes back, where
//!            distance (>= 1) follows as LEB128
//! ```
//!
//! Invariant: `expand(compress(x)) == x` (tests: `lz_round_trips`).

/// Shortest match worth a token.
pub const MIN_MATCH: usize = 3;
/// Longest match one token copies.
pub const MAX_MATCH: usize = 0x7f + MIN_MATCH;
const MAX_LITERALS: usize = 0x80;
/// How far back the encoder looks.
pub const WINDOW: usize = 1 << 16;
/// Candidates the encoder tries per position.
const CHAIN: usize = 16;
/// Size of the encoder's hash table ([`compress`]'s `head`).
pub const HASH_SIZE: usize = 1 << 15;

/// Writes `v` as LEB128 (7 bits a byte, low first, the high bit set on all but the last):
/// the one varint of the crate (this codec's distances, the site records, the region table).
pub fn put_leb(mut v: u64, out: &mut impl FnMut(u8)) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out(b);
            return;
        }
        out(b | 0x80);
    }
}

/// Reads a LEB128 value from the bytes `next` yields; None when they end first or it does
/// not fit 64 bits.
pub fn get_leb(mut next: impl FnMut() -> Option<u8>) -> Option<u64> {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let b = next()?;
        if shift >= 64 {
            return None;
        }
        v |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
        shift += 7;
    }
}

fn hash(b: &[u8]) -> usize {
    let v = b[0] as u32 | (b[1] as u32) << 8 | (b[2] as u32) << 16;
    (v.wrapping_mul(0x9e37_79b1) >> 17) as usize & (HASH_SIZE - 1)
}

/// Compress `input` into `out`, byte by byte. Scratch: `head` (`HASH_SIZE` entries) and
/// `prev` (`input.len()` entries), both overwritten.
pub fn compress(input: &[u8], head: &mut [u32], prev: &mut [u32], out: &mut impl FnMut(u8)) {
    const NONE: u32 = u32::MAX;
    assert!(head.len() == HASH_SIZE && prev.len() >= input.len());
    head.fill(NONE);
    let n = input.len();
    let mut literals = 0; // start of the pending literal run
    let flush = |from: usize, to: usize, out: &mut dyn FnMut(u8)| {
        let mut i = from;
        while i < to {
            let k = (to - i).min(MAX_LITERALS);
            out((k - 1) as u8);
            for &b in &input[i..i + k] {
                out(b);
            }
            i += k;
        }
    };
    let insert = |head: &mut [u32], prev: &mut [u32], p: usize| {
        if p + MIN_MATCH <= n {
            let h = hash(&input[p..]);
            prev[p] = head[h];
            head[h] = p as u32;
        }
    };
    let mut i = 0;
    while i < n {
        let (mut best, mut dist) = (0, 0);
        if i + MIN_MATCH <= n {
            let mut c = head[hash(&input[i..])];
            let mut tries = 0;
            while c != NONE && tries < CHAIN && i - c as usize <= WINDOW {
                let c0 = c as usize;
                let mut l = 0;
                while i + l < n && l < MAX_MATCH && input[c0 + l] == input[i + l] {
                    l += 1;
                }
                if l > best {
                    best = l;
                    dist = i - c0;
                }
                c = prev[c0];
                tries += 1;
            }
        }
        // A 3-byte match with a 2-byte distance saves nothing.
        if best >= MIN_MATCH && !(best == MIN_MATCH && dist >= 0x80) {
            flush(literals, i, out);
            out(0x80 | (best - MIN_MATCH) as u8);
            put_leb(dist as u64, out);
            for p in i..i + best {
                insert(head, prev, p);
            }
            i += best;
            literals = i;
        } else {
            insert(head, prev, i);
            i += 1;
        }
    }
    flush(literals, n, out);
}

/// Expand `input` into `out`, which must be exactly as long as the original. False (with
/// `out` partly written) when the input is malformed or does not fill `out` exactly.
pub fn expand(input: &[u8], out: &mut [u8]) -> bool {
    let (mut i, mut o) = (0, 0);
    while i < input.len() {
        let t = input[i] as usize;
        i += 1;
        if t < 0x80 {
            let k = t + 1;
            if i + k > input.len() || o + k > out.len() {
                return false;
            }
            out[o..o + k].copy_from_slice(&input[i..i + k]);
            i += k;
            o += k;
        } else {
            let len = (t & 0x7f) + MIN_MATCH;
            let next = || {
                let b = input.get(i).copied();
                i += 1;
                b
            };
            let Some(d) = get_leb(next).and_then(|d| usize::try_from(d).ok()) else {
                return false;
            };
            if d == 0 || d > o || o + len > out.len() {
                return false;
            }
            if d >= len {
                out.copy_within(o - d..o - d + len, o);
            } else {
                // Byte by byte: the match overlaps what it writes.
                for k in 0..len {
                    out[o + k] = out[o + k - d];
                }
            }
            o += len;
        }
    }
    o == out.len()
}
