//! The site table's encoding: one record stream per module, written by the pass
//! ([`SiteWriter`], passes/src/metadata.rs) and read back once by the runtime when the module
//! registers ([`SiteReader`], rt/src/counts.rs). Consecutive sites mostly share their file,
//! function and inlined-at call, lie a few lines apart, and lead their own group or follow
//! a leader a few sites back, so a record is a few bytes instead of a [`SiteDesc`]'s 28.
//!
//! Each record, relative to the one before (the first one's predecessor is
//! [`SiteDesc::START`]):
//!
//! ```text
//! header byte   bits 0-2 kind | bit 3 own leader | bit 4 context changed | bits 5-7 size code
//! [context]     if bit 4: a byte, bit 0 file / bit 1 function / bit 2 inlined-at changed,
//!               then the changed ones as LEB128 (inlined-at: its file + 1, NO_STRING
//!               being 0, and the zigzag'ed difference of its line)
//! [size]        if size code 7: LEB128 size
//! line          LEB128 of the zigzag'ed difference to the previous site's line
//! col           LEB128
//! [leader]      if not bit 3: LEB128 zigzag of (site - leader)
//! ```
//!
//! Size codes 0-6 stand for sizes 0 (run-time length), 1, 2, 4, 8, 16, 32. Invariant: a
//! stream decodes to exactly the records encoded (tests: `random_tables_round_trip`,
//! `emitted_descriptor_and_site_records_are_the_runtime_structs`).
use crate::lz::put_leb;
use crate::{AccessKind, SiteDesc, NO_STRING};

const KIND_MASK: u8 = 0x7;
const OWN_LEADER: u8 = 1 << 3;
const CONTEXT: u8 = 1 << 4;
const SIZE_SHIFT: u32 = 5;
const SIZE_EXPLICIT: u8 = 7;
/// The sizes of codes 0-6.
const SIZES: [u16; 7] = [0, 1, 2, 4, 8, 16, 32];
const CTX_FILE: u8 = 1;
const CTX_FUNC: u8 = 2;
const CTX_INLINED_AT: u8 = 4;

impl SiteDesc {
    /// The predecessor of a stream's first record.
    pub const START: SiteDesc = SiteDesc {
        file: 0,
        line: 0,
        col: 0,
        func: 0,
        inlined_file: NO_STRING,
        inlined_line: 0,
        size: 0,
        kind: AccessKind::Read as u8,
        pad: 0,
        leader: 0,
    };
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

/// Encodes a module's sites in order (the `n`th pushed is module-local site `n`).
pub struct SiteWriter {
    prev: SiteDesc,
    next: u32,
}

impl Default for SiteWriter {
    fn default() -> Self {
        SiteWriter {
            prev: SiteDesc::START,
            next: 0,
        }
    }
}

impl SiteWriter {
    /// Append the next site's record to `out`, byte by byte. `s.pad` is not kept (it reads
    /// back as 0); `s.kind` must be below 8.
    pub fn push(&mut self, s: &SiteDesc, out: &mut impl FnMut(u8)) {
        let p = &self.prev;
        let code = SIZES
            .iter()
            .position(|&z| z == s.size)
            .unwrap_or(SIZE_EXPLICIT as usize) as u8;
        let mut ctx = 0;
        if s.file != p.file {
            ctx |= CTX_FILE;
        }
        if s.func != p.func {
            ctx |= CTX_FUNC;
        }
        if (s.inlined_file, s.inlined_line) != (p.inlined_file, p.inlined_line) {
            ctx |= CTX_INLINED_AT;
        }
        let own = s.leader == self.next;
        let mut h = (s.kind & KIND_MASK) | code << SIZE_SHIFT;
        if own {
            h |= OWN_LEADER;
        }
        if ctx != 0 {
            h |= CONTEXT;
        }
        out(h);
        if ctx != 0 {
            out(ctx);
            if ctx & CTX_FILE != 0 {
                put_leb(s.file as u64, out);
            }
            if ctx & CTX_FUNC != 0 {
                put_leb(s.func as u64, out);
            }
            if ctx & CTX_INLINED_AT != 0 {
                put_leb(s.inlined_file.wrapping_add(1) as u64, out);
                put_leb(zigzag(s.inlined_line as i64 - p.inlined_line as i64), out);
            }
        }
        if code == SIZE_EXPLICIT {
            put_leb(s.size as u64, out);
        }
        put_leb(zigzag(s.line as i64 - p.line as i64), out);
        put_leb(s.col as u64, out);
        if !own {
            put_leb(zigzag(self.next as i64 - s.leader as i64), out);
        }
        self.prev = SiteDesc { pad: 0, ..*s };
        self.next += 1;
    }
}

/// Decodes a stream [`SiteWriter`] wrote: yields the sites in order and stops at the end of
/// the bytes or at a malformed record.
pub struct SiteReader<'a> {
    bytes: &'a [u8],
    pos: usize,
    prev: SiteDesc,
    next: u32,
}

impl<'a> SiteReader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        SiteReader {
            bytes,
            pos: 0,
            prev: SiteDesc::START,
            next: 0,
        }
    }

    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    fn leb(&mut self) -> Option<u64> {
        crate::lz::get_leb(|| self.byte())
    }

    fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.leb()?).ok()
    }

    fn record(&mut self) -> Option<SiteDesc> {
        let h = self.byte()?;
        let mut s = self.prev;
        s.kind = h & KIND_MASK;
        if h & CONTEXT != 0 {
            let ctx = self.byte()?;
            if ctx & CTX_FILE != 0 {
                s.file = self.u32()?;
            }
            if ctx & CTX_FUNC != 0 {
                s.func = self.u32()?;
            }
            if ctx & CTX_INLINED_AT != 0 {
                s.inlined_file = self.u32()?.wrapping_sub(1);
                let d = unzigzag(self.leb()?);
                s.inlined_line = u32::try_from(s.inlined_line as i64 + d).ok()?;
            }
        }
        let code = h >> SIZE_SHIFT;
        s.size = if code == SIZE_EXPLICIT {
            u16::try_from(self.leb()?).ok()?
        } else {
            SIZES[code as usize]
        };
        s.line = u32::try_from(s.line as i64 + unzigzag(self.leb()?)).ok()?;
        s.col = self.u32()?;
        s.leader = if h & OWN_LEADER != 0 {
            self.next
        } else {
            u32::try_from(self.next as i64 - unzigzag(self.leb()?)).ok()?
        };
        Some(s)
    }
}

impl Iterator for SiteReader<'_> {
    type Item = SiteDesc;

    fn next(&mut self) -> Option<SiteDesc> {
        let s = self.record();
        match s {
            Some(s) => {
                self.prev = s;
                self.next += 1;
            }
            None => self.pos = self.bytes.len(),
        }
        s
    }
}
