//! Region counters (issue 13; docs/regions.md): what the pass embeds in a module for the
//! code its regions of interest run, and how the runtime turns a thread's counters into
//! per-region totals. One definition for both sides: [`Table::pack`] encodes, [`Table::unpack`]
//! decodes, [`Graph::node_counts`] derives block counts from edge counters.
//!
//! A module's region code is a set of *graphs*, one per function instance that runs in a
//! region (a function with markers, or a callee's per-region clone). A graph's nodes are the
//! blocks in a region, plus node 0, the outside (the super-node that closes the region over its
//! boundary edges). Each node has a static instruction [`Mix`]; its *context* is the list of
//! regions its executions count for (nested regions: all that enclose it).
//!
//! Counting, per thread, in one `u64` array per module:
//! - oracle placement: every node has a counter, incremented when the block runs;
//! - derived placement (Knuth–Stevenson): only the edges off a maximum-weight spanning tree
//!   have counters (a countable loop's back edge adds its trip count once per entry, in the
//!   preheader); every other edge and every node count follows from flow conservation.
//!
//! Run-time-sized copies and fills (`llvm.mem*`, libc's `memcpy`/`memmove`/`memset`) add
//! their length to a byte counter of their own ([`Dyn`]).

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

/// Bumped when the encoding changes.
pub const VERSION: u32 = 4;
/// "No counter", "no mix".
pub const NONE: u32 = u32::MAX;
/// An edge counter's flag: the counter is a countable loop's back edge, added its trip count
/// once per loop entry (its value is the back edge's traversals, not its increments).
pub const HOISTED: u32 = 1 << 31;
/// Counters in one module (the pass stops cloning past it).
pub const MAX_COUNTERS: u32 = 1 << 20;

/// A region execution's class (`__profcc_roi_begin_take`): its code runs uncounted...
pub const PLAIN: u32 = 0;
/// ...counted, standing for itself...
pub const EXACT: u32 = 1;
/// ...or counted, standing for `roi_sample` executions. A thread's counter array of a
/// module holds the `EXACT` counts, then (at `+ counters`) the `SAMPLED` ones.
pub const SAMPLED: u32 = 2;
/// `__profcc_roi_counters_of`'s class for an OpenMP team thread: the class of the execution
/// that forked the team.
pub const TEAM: u32 = 3;
/// Classes with an array of their own (`EXACT`, `SAMPLED`).
pub const ARRAYS: usize = 2;

/// Words (`u64`) of a thread's skip array (`__profcc_roi_skip`, initial-exec TLS in the
/// runtime; docs/regions.md, "Sampling"). Word 0 is the gate: [`SKIP_OPEN`] while no counted
/// region is open in the thread, 0 otherwise (and before the runtime saw the thread). Each
/// other word is a sampled region's slot: `run << 32 | tag` when the runtime armed it with
/// `run` plain executions for the region whose [`skip_key`] tag is `tag`, 0 otherwise. The
/// region's inlined begin runs its plain copy without a call, and takes one off `run`, while
/// `rotate(slot ^ tag, 32) - 1 < gate`: a slot armed for another region (a name hashed to the
/// same slot) never passes, so its begin calls the runtime, which then stops arming the slot.
pub const SKIP_WORDS: usize = 16;
/// The gate's value while the inlined begins may skip.
pub const SKIP_OPEN: u64 = u32::MAX as u64;

/// A region name's skip slot (1..SKIP_WORDS) and tag: FNV-1a (64-bit) of its bytes, the
/// slot from the high half, the tag the low half.
pub const fn skip_key(name: &[u8]) -> (u32, u32) {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < name.len() {
        h ^= name[i] as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    (1 + ((h >> 32) % (SKIP_WORDS as u64 - 1)) as u32, h as u32)
}

/// Where an access's address points (the pass classifies the address's base object).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Space {
    /// Through a pointer the function did not make itself: heap, or anything a caller passed.
    Heap = 0,
    /// A global variable (thread-local ones included).
    Global = 1,
    /// A stack object whose address escapes the function.
    Stack = 2,
    /// A stack slot whose address never leaves the function (what -O0 keeps in memory and
    /// -O2 in registers): counted apart from the bytes a region reaches.
    Local = 3,
}
pub const SPACES: usize = 4;
pub const SPACE_NAMES: [&str; SPACES] = ["heap", "global", "stack", "local"];

/// The static instruction mix of a block (or of a clone's share of one).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Mix {
    /// IR instructions (debug and lifetime intrinsics not counted).
    pub instructions: u32,
    pub loads: [u32; SPACES],
    pub stores: [u32; SPACES],
    pub load_bytes: [u32; SPACES],
    pub store_bytes: [u32; SPACES],
    /// Integer arithmetic, comparisons and casts.
    pub int_ops: u32,
    /// Floating-point arithmetic, comparisons, casts and math intrinsics.
    pub fp_ops: u32,
    /// Instructions on vector values.
    pub vector_ops: u32,
    /// Conditional branches and switches.
    pub branches: u32,
    pub calls: u32,
    /// Calls the counters do not follow: indirect, or to code outside the module.
    pub uncovered_calls: u32,
}

/// Words a [`Mix`] takes in the encoding.
pub const MIX_WORDS: usize = 7 + 4 * SPACES;

impl Mix {
    pub fn words(&self) -> [u32; MIX_WORDS] {
        let mut w = [0u32; MIX_WORDS];
        w[0] = self.instructions;
        w[1] = self.int_ops;
        w[2] = self.fp_ops;
        w[3] = self.vector_ops;
        w[4] = self.branches;
        w[5] = self.calls;
        w[6] = self.uncovered_calls;
        for s in 0..SPACES {
            w[7 + s] = self.loads[s];
            w[7 + SPACES + s] = self.stores[s];
            w[7 + 2 * SPACES + s] = self.load_bytes[s];
            w[7 + 3 * SPACES + s] = self.store_bytes[s];
        }
        w
    }
    pub fn from_words(w: &[u32]) -> Mix {
        let mut m = Mix {
            instructions: w[0],
            int_ops: w[1],
            fp_ops: w[2],
            vector_ops: w[3],
            branches: w[4],
            calls: w[5],
            uncovered_calls: w[6],
            ..Mix::default()
        };
        for s in 0..SPACES {
            m.loads[s] = w[7 + s];
            m.stores[s] = w[7 + SPACES + s];
            m.load_bytes[s] = w[7 + 2 * SPACES + s];
            m.store_bytes[s] = w[7 + 3 * SPACES + s];
        }
        m
    }
}

/// One function instance's region code.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Graph {
    /// Per node (node `i + 1` is `nodes[i]`), `(mix, counter, context)`: the mix index, its
    /// counter (`NONE`: derived) and the regions its executions count for (an index into
    /// [`Table::contexts`]: the clone's regions and those opened around it in the function).
    pub nodes: Vec<(u32, u32, u32)>,
    /// `(from, to, counter)`; node 0 is the outside; `counter` `NONE`: a spanning-tree edge;
    /// with [`HOISTED`] set: a countable loop's back edge, counted at loop entry.
    pub edges: Vec<(u32, u32, u32)>,
}

/// A counter word's index in the array (`NONE`: none).
fn index(c: u32) -> Option<usize> {
    (c != NONE).then_some((c & !HOISTED) as usize)
}

impl Graph {
    /// Every node's executions, from the counters: a node's own counter, else the sum of its
    /// incoming edges, the tree edges solved by flow conservation (in = out at every node,
    /// the outside included). Wrapping arithmetic: a region still open when the counters are
    /// read can leave an edge unbalanced, never a panic. None: the edges do not determine it.
    pub fn node_counts(&self, counters: &[u64]) -> Option<Vec<u64>> {
        let n = self.nodes.len() + 1;
        let get = |c: u32| index(c).and_then(|i| counters.get(i).copied()).unwrap_or(0);
        // An instance that never ran (most clones in a big program): the solution is linear
        // in the counters, so all of them 0 give every node 0.
        if self.nodes.iter().all(|&(_, c, _)| get(c) == 0)
            && self.edges.iter().all(|&(_, _, c)| get(c) == 0)
        {
            return Some(vec![0; self.nodes.len()]);
        }
        if self.nodes.iter().all(|&(_, c, _)| c != NONE) {
            return Some(self.nodes.iter().map(|&(_, c, _)| get(c)).collect());
        }
        let mut val: Vec<Option<u64>> = self
            .edges
            .iter()
            .map(|&(_, _, c)| (c != NONE).then(|| get(c)))
            .collect();
        // Incident edges per node, and how many of them are unknown.
        let mut incident: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, &(a, b, _)) in self.edges.iter().enumerate() {
            incident[a as usize].push(i);
            if b != a {
                incident[b as usize].push(i);
            }
        }
        let mut unknown: Vec<usize> = incident
            .iter()
            .map(|es| es.iter().filter(|&&e| val[e].is_none()).count())
            .collect();
        let mut work: Vec<usize> = (0..n).filter(|&v| unknown[v] == 1).collect();
        while let Some(v) = work.pop() {
            if unknown[v] != 1 {
                continue;
            }
            let Some(&e) = incident[v].iter().find(|&&e| val[e].is_none()) else {
                continue;
            };
            let (a, b, _) = self.edges[e];
            if a == b {
                return None; // a self-loop without a counter: no equation determines it
            }
            // in - out over the known edges; the unknown one balances it.
            let mut net: u64 = 0;
            for &k in &incident[v] {
                if let Some(x) = val[k] {
                    let (ka, kb, _) = self.edges[k];
                    if kb as usize == v {
                        net = net.wrapping_add(x);
                    }
                    if ka as usize == v {
                        net = net.wrapping_sub(x);
                    }
                }
            }
            val[e] = Some(if b as usize == v {
                net.wrapping_neg()
            } else {
                net
            });
            for end in [a as usize, b as usize] {
                unknown[end] -= 1;
                if unknown[end] == 1 {
                    work.push(end);
                }
            }
        }
        let mut counts = vec![0u64; n];
        for (i, &(_, b, _)) in self.edges.iter().enumerate() {
            counts[b as usize] = counts[b as usize].wrapping_add(val[i]?);
        }
        Some(
            self.nodes
                .iter()
                .enumerate()
                .map(|(i, &(_, c, _))| if c != NONE { get(c) } else { counts[i + 1] })
                .collect(),
        )
    }

    /// The counter increments the instance executed, by node (for its regions; an edge's go
    /// to its target, or its source when that is the outside): a node counter's value, an
    /// edge counter's traversals, a hoisted back edge's loop entries (its header's count
    /// less its traversals). `counts` from [`Graph::node_counts`]. The overhead correction
    /// factor's counter count (docs/regions.md).
    pub fn increments(&self, counters: &[u64], counts: &[u64]) -> Vec<u64> {
        let get = |c: u32| index(c).and_then(|i| counters.get(i).copied()).unwrap_or(0);
        let count = |node: u32| {
            (node as usize)
                .checked_sub(1)
                .and_then(|i| counts.get(i).copied())
                .unwrap_or(0)
        };
        let mut inc = vec![0u64; self.nodes.len()];
        for (i, &(_, c, _)) in self.nodes.iter().enumerate() {
            if c != NONE {
                inc[i] = get(c);
            }
        }
        for &(a, b, c) in &self.edges {
            if c == NONE {
                continue;
            }
            let at = if b != 0 { b } else { a };
            let Some(slot) = (at as usize).checked_sub(1).and_then(|i| inc.get_mut(i)) else {
                continue;
            };
            let n = if c & HOISTED != 0 {
                count(b).saturating_sub(get(c))
            } else {
                get(c)
            };
            *slot = slot.wrapping_add(n);
        }
        inc
    }
}

/// A byte counter of run-time length: what it adds to which space, read and/or written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dyn {
    pub counter: u32,
    /// Context index (the regions it counts for).
    pub context: u32,
    /// `Space as u32` read / written, `NONE` for neither.
    pub read: u32,
    pub write: u32,
}

/// A module's region code, decoded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    pub names: Vec<String>,
    /// Each a list of indices into `names`.
    pub contexts: Vec<Vec<u32>>,
    pub mixes: Vec<Mix>,
    pub graphs: Vec<Graph>,
    pub dyns: Vec<Dyn>,
    pub counters: u32,
}

/// The region descriptor a module hands to `__profcc_roi_register` (the pass lays it out the
/// same; passes/tests/abi.rs checks).
#[repr(C)]
pub struct RoiDesc {
    pub version: u32,
    pub counters: u32,
    /// The packed [`Table`] ([`Table::pack`]), `words` u32s.
    pub table: *const u32,
    pub words: u32,
    /// Written by the runtime at registration: the module's slot (`NONE` before).
    pub slot: *mut u32,
}

impl Table {
    /// The encoding: a header, then names, contexts, mixes, graphs and byte counters.
    pub fn encode(&self) -> Vec<u32> {
        let mut w = vec![
            VERSION,
            self.names.len() as u32,
            self.contexts.len() as u32,
            self.mixes.len() as u32,
            self.graphs.len() as u32,
            self.dyns.len() as u32,
            self.counters,
        ];
        for n in &self.names {
            w.push(n.len() as u32);
            for chunk in n.as_bytes().chunks(4) {
                let mut b = [0u8; 4];
                b[..chunk.len()].copy_from_slice(chunk);
                w.push(u32::from_le_bytes(b));
            }
        }
        for c in &self.contexts {
            w.push(c.len() as u32);
            w.extend_from_slice(c);
        }
        for m in &self.mixes {
            w.extend_from_slice(&m.words());
        }
        for g in &self.graphs {
            w.extend([g.nodes.len() as u32, g.edges.len() as u32]);
            for &(m, c, x) in &g.nodes {
                w.extend([m, c, x]);
            }
            for &(a, b, c) in &g.edges {
                w.extend([a, b, c]);
            }
        }
        for d in &self.dyns {
            w.extend([d.counter, d.context, d.read, d.write]);
        }
        w
    }

    /// What a module embeds (`RoiDesc::table`): [`Table::encode`]'s words as LEB128 varints of
    /// `word + 1` (`NONE` is one byte), that byte stream compressed by [`crate::lz`], and in
    /// front two words, the stream's length and the compressed length. The words are mostly
    /// small (a block's mix, node and edge numbers, `NONE`), and the mixes of unrolled or
    /// inlined code repeat: sqlite3.c's table with a region around its query loop goes from
    /// 1,044,364 words (4.2 MB) to 106,786 (427 KB; the varint stream is 1.15 MB).
    pub fn pack(&self) -> Vec<u32> {
        let mut stream = Vec::new();
        for w in self.encode() {
            crate::lz::put_leb(w.wrapping_add(1) as u64, &mut |b| stream.push(b));
        }
        let mut head = vec![0u32; crate::lz::HASH_SIZE];
        let mut prev = vec![0u32; stream.len()];
        let mut packed = Vec::new();
        crate::lz::compress(&stream, &mut head, &mut prev, &mut |b| packed.push(b));
        let mut out = Vec::with_capacity(2 + packed.len().div_ceil(4));
        out.extend([stream.len() as u32, packed.len() as u32]);
        for chunk in packed.chunks(4) {
            let mut b = [0u8; 4];
            b[..chunk.len()].copy_from_slice(chunk);
            out.push(u32::from_le_bytes(b));
        }
        out
    }

    /// Reads what [`Table::pack`] wrote; None when the words are not such a table.
    pub fn unpack(w: &[u32]) -> Option<Table> {
        let (n, k) = (*w.first()? as usize, *w.get(1)? as usize);
        // A token of 2 bytes or more expands to at most `MAX_MATCH` bytes.
        if k > (w.len() - 2) * 4 || n > k.saturating_mul(crate::lz::MAX_MATCH) {
            return None;
        }
        let mut packed = Vec::with_capacity(k + 4);
        for x in &w[2..] {
            packed.extend_from_slice(&x.to_le_bytes());
        }
        packed.truncate(k);
        let mut stream = vec![0u8; n];
        if !crate::lz::expand(&packed, &mut stream) {
            return None;
        }
        // The words straight from the varints (no array of them: sqlite's would be 4 MB);
        // most are one byte.
        let mut at = 0;
        let varint = || {
            let b = *stream.get(at)?;
            if b < 0x80 {
                at += 1;
                return Some((b as u32).wrapping_sub(1));
            }
            let v = crate::lz::get_leb(|| {
                let b = stream.get(at).copied();
                at += 1;
                b
            })?;
            Some(u32::try_from(v).ok()?.wrapping_sub(1))
        };
        Table::decode_from(varint, n)
    }

    /// Decodes what [`Table::encode`] wrote; None when the words are not such a table.
    pub fn decode(w: &[u32]) -> Option<Table> {
        let mut r = w.iter().copied();
        Table::decode_from(|| r.next(), w.len())
    }

    /// Decodes the words `next` yields (at most `bound` of them).
    fn decode_from(mut next: impl FnMut() -> Option<u32>, bound: usize) -> Option<Table> {
        if next()? != VERSION {
            return None;
        }
        let (nn, nc, nm, ng, nd, counters) = (next()?, next()?, next()?, next()?, next()?, next()?);
        // Capacities from the header, bounded by what the words can hold.
        let cap = |n: u32| (n as usize).min(bound);
        let mut t = Table {
            counters,
            names: Vec::with_capacity(cap(nn)),
            contexts: Vec::with_capacity(cap(nc)),
            mixes: Vec::with_capacity(cap(nm)),
            graphs: Vec::with_capacity(cap(ng)),
            dyns: Vec::with_capacity(cap(nd)),
        };
        for _ in 0..nn {
            let len = next()? as usize;
            let mut bytes = Vec::with_capacity(len);
            for _ in 0..len.div_ceil(4) {
                bytes.extend_from_slice(&next()?.to_le_bytes());
            }
            bytes.truncate(len);
            t.names.push(String::from_utf8_lossy(&bytes).into_owned());
        }
        for _ in 0..nc {
            let len = next()?;
            let mut c = Vec::with_capacity(cap(len));
            for _ in 0..len {
                c.push(next()?);
            }
            t.contexts.push(c);
        }
        for _ in 0..nm {
            let mut m = [0u32; MIX_WORDS];
            for x in m.iter_mut() {
                *x = next()?;
            }
            t.mixes.push(Mix::from_words(&m));
        }
        for _ in 0..ng {
            let (nodes, edges) = (next()?, next()?);
            let mut g = Graph {
                nodes: Vec::with_capacity(cap(nodes)),
                edges: Vec::with_capacity(cap(edges)),
            };
            for _ in 0..nodes {
                g.nodes.push((next()?, next()?, next()?));
            }
            for _ in 0..edges {
                g.edges.push((next()?, next()?, next()?));
            }
            t.graphs.push(g);
        }
        for _ in 0..nd {
            t.dyns.push(Dyn {
                counter: next()?,
                context: next()?,
                read: next()?,
                write: next()?,
            });
        }
        Some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn a_table_survives_its_encoding() {
        let t = Table {
            names: vec!["outer".into(), "a much longer region name".into()],
            contexts: vec![vec![0], vec![0, 1]],
            mixes: vec![Mix {
                instructions: 7,
                loads: [1, 2, 3, 4],
                store_bytes: [8, 0, 0, 16],
                calls: 2,
                ..Mix::default()
            }],
            graphs: vec![Graph {
                nodes: vec![(0, 0, 1), (0, NONE, 0)],
                edges: vec![(0, 1, NONE), (1, 2, 1), (2, 0, NONE)],
            }],
            dyns: vec![Dyn {
                counter: 2,
                context: 0,
                read: Space::Heap as u32,
                write: NONE,
            }],
            counters: 3,
        };
        assert_eq!(Table::decode(&t.encode()), Some(t.clone()));
        // Packed: the same table back; a cut or altered packing is refused, never a panic.
        let packed = t.pack();
        assert!(packed.len() < t.encode().len());
        assert_eq!(Table::unpack(&packed), Some(t));
        for cut in 0..packed.len() {
            assert_eq!(Table::unpack(&packed[..cut]), None, "cut at {cut}");
        }
        let mut bad = packed.clone();
        bad[0] += 1;
        assert_eq!(Table::unpack(&bad), None);
    }

    /// A loop: outside -> 1 (entry), 1 -> 2 (body), 2 -> 2 (back edge), 2 -> 3, 3 -> outside,
    /// plus 1 -> 3 (loop skipped). 10 entries: 4 skip the loop, 6 run it with 99 back edges
    /// in all. A spanning tree of the 4 nodes leaves 3 edges with counters (6 - 4 + 1).
    #[test]
    fn tree_edges_follow_from_flow_conservation() {
        let mut g = Graph {
            nodes: vec![(0, NONE, 0); 3],
            edges: vec![
                (0, 1, NONE),
                (1, 2, NONE),
                (2, 2, 0),
                (2, 3, NONE),
                (3, 0, NONE),
                (1, 3, 1),
            ],
        };
        assert_eq!(
            g.node_counts(&[99, 4]),
            None,
            "two counters do not determine the entries"
        );
        g.edges[0].2 = 2;
        assert_eq!(g.node_counts(&[99, 4, 10]), Some(vec![10, 6 + 99, 10]));
        // The same with the entry derived and the exit counted instead.
        g.edges[0].2 = NONE;
        g.edges[4].2 = 2;
        assert_eq!(g.node_counts(&[99, 4, 10]), Some(vec![10, 6 + 99, 10]));
    }

    /// A graph whose every node has a counter reads them as they are (the oracle placement).
    #[test]
    fn node_counters_are_read_as_they_are() {
        let g = Graph {
            nodes: vec![(0, 1, 0), (0, 0, 0)],
            edges: vec![(0, 1, NONE), (1, 2, NONE), (2, 0, NONE)],
        };
        assert_eq!(g.node_counts(&[7, 5]), Some(vec![5, 7]));
    }

    /// A hoisted back edge counts its loop's entries, a plain edge counter its traversals, a
    /// node counter its value; each on its edge's target node.
    #[test]
    fn increments_count_loop_entries_for_hoisted_edges() {
        // 0 -> 1 (entry, counter 0), 1 -> 2, 2 -> 2 (hoisted back edge, counter 1), 2 -> 0.
        let g = Graph {
            nodes: vec![(0, NONE, 0), (0, NONE, 0)],
            edges: vec![(0, 1, 0), (1, 2, NONE), (2, 2, 1 | HOISTED), (2, 0, NONE)],
        };
        // 3 entries, 3 x 99 back-edge traversals.
        let counters = [3u64, 297];
        let counts = g.node_counts(&counters).unwrap();
        assert_eq!(counts, vec![3, 300]);
        assert_eq!(g.increments(&counters, &counts), vec![3, 3]);
    }
}
