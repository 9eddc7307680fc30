//! The one ranked list of findings across analyses (`profcc_analysis::findings`): each
//! analysis's section has resolved names and places; this section turns them into findings
//! with the analysis crate's constructors (which hold every threshold and formula) and ranks
//! them together. Sharing findings are those the sharing section lists (`--top`).

use crate::merge::Merged;
use crate::model::{self, Report};
use profcc_analysis::findings::{heap_identity, ranked, Finding, Object};
use profcc_analysis::{allocator, regions, sharing};

/// `numa`: the NUMA section's findings (built with its objects, `sections::numa::build`).
pub fn build(m: &Merged, r: &Report, numa: Vec<Finding>) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(s) = &r.sharing {
        for f in &s.findings {
            let mut u = sharing::unified(
                f.kind,
                f.allocator_induced,
                f.objects.iter().map(sharing_object).collect(),
                f.places
                    .iter()
                    .map(|p| format!("{}:{}", p.file, p.line))
                    .collect(),
                f.invalidations,
                f.predicted_saving_ns,
                f.predicted_speedup,
                &f.prediction,
                f.fix.clone(),
            );
            u.input = f.input;
            out.push(u);
        }
    }
    out.extend(numa);
    if let Some(a) = &r.allocator {
        for ai in &a.inputs {
            let mut found: Vec<Finding> = Vec::new();
            if let Some(best) = ai.predictions.first() {
                let (basis_ns, share_of) = allocator::share_basis(ai.cpu_ns, ai.duration_ns);
                found.extend(allocator::switch_finding(
                    ai.allocator.split_whitespace().next().unwrap_or("?"),
                    &best.allocator,
                    best.predicted_ns,
                    ai.total_ns,
                    ai.self_check_ns,
                    basis_ns,
                    share_of,
                    &best.how,
                ));
            }
            let moments: Vec<allocator::Moment> = ai
                .overhead
                .iter()
                .map(|o| allocator::Moment {
                    name: &o.moment,
                    requested: o.requested,
                    usable: o.usable,
                    cached_free: o.blowup,
                    heap_rss: o.heap_rss,
                })
                .collect();
            found.extend(allocator::waste_findings(&moments));
            for l in &ai.locks {
                found.extend(allocator::lock_finding(
                    &l.place, l.taken, l.waited, l.wait_ns,
                ));
            }
            if let Some(s) = &ai.induced_sharing {
                for site in &s.sites {
                    found.extend(allocator::induced_sharing_finding(
                        &site.site,
                        site.active,
                        site.passive,
                        site.invalidations,
                        s.advice.clone().unwrap_or_default(),
                    ));
                }
            }
            out.extend(found.into_iter().map(|mut f| {
                f.input = ai.input;
                f
            }));
        }
    }
    for (i, inp) in m.inputs.iter().enumerate() {
        if let Some(g) = &inp.profile.regions {
            out.extend(
                regions::findings(g, inp.profile.duration_ns)
                    .into_iter()
                    .map(|mut f| {
                        f.input = i;
                        f
                    }),
            );
        }
    }
    ranked(out)
}

/// A sharing object's identity: a heap object by its allocation site, a global by its name,
/// a stack object by the function that writes it.
pub(crate) fn sharing_object(o: &model::Object) -> Object {
    match o.kind {
        model::ObjectKind::Heap => Object::new(
            "heap",
            heap_identity(o.alloc_site.as_deref(), o.function.as_deref()),
        ),
        model::ObjectKind::Global => {
            Object::new("global", o.name.clone().unwrap_or_else(|| "?".into()))
        }
        model::ObjectKind::Stack => {
            Object::new("stack", o.function.clone().unwrap_or_else(|| "?".into()))
        }
    }
}
