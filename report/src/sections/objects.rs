//! One object table: every analysis's per-object figures joined on the object's identity
//! (`profcc_analysis::findings::Object`), the rows an Objects view shows: allocation
//! figures and allocator time (every recorded allocation site), sharing kinds and
//! invalidations, NUMA local/remote accesses and first toucher, region bytes, and the keys of
//! the findings about each. Ordered by findings, then allocator time, then bytes.

use super::findings::sharing_object;
use super::numa::numa_object;
use super::Options;
use crate::merge::Merged;
use crate::model::{ObjectRow, Report};
use crate::symbolize::user_frame;
use profcc_analysis::findings::{heap_identity, Object};
use std::collections::BTreeMap;

pub fn build(m: &Merged, r: &Report, opts: &Options) -> Vec<ObjectRow> {
    let mut rows: BTreeMap<Object, ObjectRow> = BTreeMap::new();
    for s in &m.alloc_sites {
        let rest = &s.stack[s.wrapper_frames.min(s.stack.len())..];
        let Some(f) = user_frame(rest).or(rest.first()) else {
            continue;
        };
        let o = Object::new(
            "heap",
            heap_identity(f.place().as_deref(), f.function.as_deref()),
        );
        let x = row(&mut rows, &o);
        *x.allocations.get_or_insert(0) += s.count;
        *x.bytes.get_or_insert(0) += s.bytes;
        *x.live_bytes_peak.get_or_insert(0) += s.live_bytes_peak;
        if s.allocator_ns > 0.0 {
            *x.allocator_ns.get_or_insert(0.0) += s.allocator_ns;
        }
        if let Some(l) = &s.lifetime {
            x.lifetime.get_or_insert_with(Default::default).merge(l);
        }
    }
    for f in r.sharing.iter().flat_map(|s| &s.findings) {
        for o in &f.objects {
            let x = row(&mut rows, &sharing_object(o));
            let kind = f.kind.as_str().to_string();
            if !x.sharing.contains(&kind) {
                x.sharing.push(kind);
            }
            *x.invalidations.get_or_insert(0) += f.invalidations;
        }
    }
    for o in r
        .numa
        .iter()
        .flat_map(|n| &n.inputs)
        .flat_map(|i| &i.objects)
    {
        let x = row(&mut rows, &numa_object(o));
        *x.numa_local.get_or_insert(0) += o.local;
        *x.numa_remote.get_or_insert(0) += o.remote;
        x.first_touch_thread = x.first_touch_thread.or(o.first_touch_thread);
    }
    for g in r.regions.iter().flat_map(|g| &g.rows) {
        if let Some(c) = &g.counts {
            let x = row(&mut rows, &Object::new("region", g.region.clone()));
            *x.region_bytes.get_or_insert(0) += c.bytes_moved();
        }
    }
    for f in &r.findings {
        for o in &f.objects {
            if let Some(x) = rows.get_mut(o) {
                if !x.findings.contains(&f.key) {
                    x.findings.push(f.key.clone());
                }
            }
        }
    }
    let mut out: Vec<ObjectRow> = rows.into_values().collect();
    out.sort_by(|a, b| {
        b.findings
            .len()
            .cmp(&a.findings.len())
            .then_with(|| {
                b.allocator_ns
                    .unwrap_or(0.0)
                    .total_cmp(&a.allocator_ns.unwrap_or(0.0))
            })
            .then_with(|| b.bytes.cmp(&a.bytes))
            .then_with(|| (&a.kind, &a.name).cmp(&(&b.kind, &b.name)))
    });
    out.truncate(opts.limit(out.len()));
    out
}

fn row<'a>(rows: &'a mut BTreeMap<Object, ObjectRow>, o: &Object) -> &'a mut ObjectRow {
    rows.entry(o.clone()).or_insert_with(|| ObjectRow {
        kind: o.kind.clone(),
        name: o.name.clone(),
        ..Default::default()
    })
}
