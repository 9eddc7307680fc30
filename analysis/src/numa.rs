//! NUMA findings from the profile's `numa` section (docs/numa.md): which pattern the run
//! shows, with the numbers that say so. The report names the places; the rule lives here.

use profcc_schema::numa::Numa;

/// A run whose remote accesses are below this share of all its accesses gets no advice.
pub const REMOTE_ADVICE_SHARE: f64 = 0.10;
/// One thread that touched at least this share of the pages first made the placement serially
/// (two threads splitting the data evenly touch half each: not serial).
pub const SERIAL_FIRST_TOUCH_SHARE: f64 = 0.8;

/// What the run shows.
#[derive(Debug, Clone, PartialEq)]
pub enum Pattern {
    /// Remote accesses below [`REMOTE_ADVICE_SHARE`], or no homes (`off`).
    Fine,
    /// One thread touched most pages first and the others' accesses are remote.
    SerialFirstTouch {
        thread: u32,
        first_touch_share: f64,
        remote_share: f64,
    },
    /// Many remote accesses, first touches spread over threads.
    Remote { remote_share: f64 },
}

/// The run's pattern: remote share over all threads, and who touched the pages first.
pub fn pattern(n: &Numa) -> Pattern {
    let local: u64 = n.threads.iter().map(|t| t.local).sum();
    let remote: u64 = n.threads.iter().map(|t| t.remote).sum();
    if n.model == "off" || local + remote == 0 {
        return Pattern::Fine;
    }
    let remote_share = remote as f64 / (local + remote) as f64;
    if remote_share < REMOTE_ADVICE_SHARE {
        return Pattern::Fine;
    }
    let touched: u64 = n.threads.iter().map(|t| t.first_touches).sum();
    let top = n
        .threads
        .iter()
        .max_by_key(|t| (t.first_touches, u32::MAX - t.thread));
    match top {
        Some(t) if touched > 0 => {
            let share = t.first_touches as f64 / touched as f64;
            if share >= SERIAL_FIRST_TOUCH_SHARE {
                return Pattern::SerialFirstTouch {
                    thread: t.thread,
                    first_touch_share: share,
                    remote_share,
                };
            }
            Pattern::Remote { remote_share }
        }
        _ => Pattern::Remote { remote_share },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use profcc_schema::numa::NumaThread;

    fn thread(id: u32, local: u64, remote: u64, first: u64) -> NumaThread {
        NumaThread {
            thread: id,
            home: id + 1,
            local,
            remote,
            first_touches: first,
            by_home: vec![],
        }
    }

    #[test]
    fn serial_first_touch_remote_and_fine() {
        let mut n = Numa {
            model: "thread".into(),
            threads: vec![
                thread(0, 100, 0, 90),
                thread(1, 0, 100, 5),
                thread(2, 0, 100, 5),
            ],
            ..Default::default()
        };
        assert_eq!(
            pattern(&n),
            Pattern::SerialFirstTouch {
                thread: 0,
                first_touch_share: 0.9,
                remote_share: 200.0 / 300.0
            }
        );
        n.threads[0].first_touches = 5;
        n.threads[1].first_touches = 5;
        assert_eq!(
            pattern(&n),
            Pattern::Remote {
                remote_share: 200.0 / 300.0
            }
        );
        n.threads[1].remote = 1;
        n.threads[2].remote = 1;
        n.threads[0].local = 1000;
        assert_eq!(pattern(&n), Pattern::Fine);
        n.model = "off".into();
        assert_eq!(pattern(&n), Pattern::Fine);
    }
}
