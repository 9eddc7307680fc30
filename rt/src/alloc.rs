//! Allocation interposition and the object map. (stub: being written)

pub fn snapshot() -> (Vec<profcc_schema::AllocSite>, AllocTotals) {
    (Vec::new(), AllocTotals::default())
}

#[derive(Default, Debug, Clone)]
pub struct AllocTotals {
    pub allocations: u64,
    pub frees: u64,
    pub bytes_allocated: u64,
    pub live_bytes_peak: u64,
}
