//! `profcc calibrate`: measure what moving a cache line between two CPUs costs on this
//! machine, and keep it where instrumented programs find it at their dump
//! (`profcc_analysis::sharing::calibration_file`, keyed by CPU model and online CPUs). The
//! sharing analysis caps its latency samples with it and grades its predictions by it
//! (docs/model.md).
//!
//! Per pair of CPUs (the first 8 the process may run on): two threads pinned one to each
//! bounce a counter on one line; a round trip moves the line twice. The least time of a few
//! batches counts (a batch during which another program took one of the CPUs is slower, never
//! faster).
//!
//! Then the contended slowdown of each kind of line (`LineAccess`), on the first pair: two
//! threads pinned one to each access their own word, once of one line (8 bytes apart) and once
//! of separate lines, alternating: store-only (`w[id] = i`), load-and-store (one thread loads
//! its word while the other stores to its own: the load waits for the line), read-modify-write
//! (`w[id]++`, each thread on its own word) and locked read-modify-write (`fetch_add` on its
//! own word); the ratio of the mean times of the rounds in which both threads ran at once
//! throughout.
//!
//! Last, the memory bandwidth (`profcc_schema::regions::Bandwidth`, the regions' share of
//! it): STREAM's copy (`a[i] = b[i]`) and triad (`a[i] = b[i] + s * c[i]`) over three arrays
//! of doubles each 4 times the last-level cache and at least 128 MiB (at most a sixth of the
//! available memory each), once with one thread and once with one thread per CPU the process
//! may run on (each pinned, each on its own slice, which it first touched); the best of
//! `--stream-repetitions` runs of each, bytes counted as STREAM counts them (16 per element for
//! copy, 24 for triad), in GB/s (10^9 bytes per second).

use profcc_analysis::sharing::{calibration_file, machine_key, Calibration, LineAccess};
use profcc_schema::sharing::Slowdowns;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct CalibrateArgs {
    /// Round trips per batch.
    #[arg(long, default_value_t = 500)]
    pub round_trips: u64,
    /// Batches per pair (the fastest counts).
    #[arg(long, default_value_t = 40)]
    pub batches: u32,
    /// Accesses per thread in one batch of the contended-slowdown measurements (a tenth of it
    /// for locked read-modify-writes).
    #[arg(long, default_value_t = 5_000_000)]
    pub increments: u64,
    /// Runs of each memory-bandwidth kernel (copy, triad; one thread, all threads); the
    /// fastest counts.
    #[arg(long, default_value_t = 5)]
    pub stream_repetitions: u32,
}

pub const ABOUT: &str =
    "Measure this machine's cache-line transfer cost and contended slowdown for the sharing predictions, and its memory bandwidth for the regions";

#[repr(align(64))]
struct Line(AtomicU64);

fn pin(cpu: u32) {
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn allowed_cpus() -> Vec<u32> {
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as u32)
            .filter(|&c| libc::CPU_ISSET(c as usize, &set))
            .collect()
    }
}

/// A batch taking longer than this was disturbed (another program had one of the CPUs): it
/// is abandoned.
const BATCH_LIMIT: std::time::Duration = std::time::Duration::from_millis(200);

/// ns per line transfer between `a` and `b` in one batch: its time over 2 × round trips; None
/// when the batch was abandoned.
fn batch(a: u32, b: u32, round_trips: u64) -> Option<f64> {
    let line = Arc::new(Line(AtomicU64::new(0)));
    let stop = Arc::new(AtomicU64::new(0));
    let other = {
        let (line, stop) = (line.clone(), stop.clone());
        std::thread::spawn(move || {
            pin(b);
            stop.store(1, Ordering::Release); // ready
            for i in 0..round_trips {
                while line.0.load(Ordering::Acquire) != 2 * i + 1 {
                    if stop.load(Ordering::Relaxed) == 2 {
                        return;
                    }
                    std::hint::spin_loop();
                }
                line.0.store(2 * i + 2, Ordering::Release);
            }
        })
    };
    pin(a);
    // Start the clock once the partner runs on its CPU.
    let wait = Instant::now();
    while stop.load(Ordering::Acquire) != 1 {
        if wait.elapsed() > BATCH_LIMIT {
            stop.store(2, Ordering::Relaxed);
            let _ = other.join();
            return None;
        }
        std::hint::spin_loop();
    }
    let t = Instant::now();
    let mut done = true;
    'outer: for i in 0..round_trips {
        line.0.store(2 * i + 1, Ordering::Release);
        let mut spins = 0u32;
        while line.0.load(Ordering::Acquire) != 2 * i + 2 {
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(4096) && t.elapsed() > BATCH_LIMIT {
                done = false;
                break 'outer;
            }
            std::hint::spin_loop();
        }
    }
    let ns = t.elapsed().as_nanos() as f64 / (2 * round_trips) as f64;
    stop.store(2, Ordering::Relaxed);
    let _ = other.join();
    done.then_some(ns)
}

/// A thread's CPU time, ns.
fn thread_cpu_ns() -> u64 {
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Rounds of each layout (one line, separate lines) of each kind's contended-slowdown
/// measurement: about 3 s in all on the project's 2-vCPU VM.
const CONTENDED_ROUNDS: u32 = 60;

/// Words of 8 bytes between the two threads' counters: on one line, and on separate lines.
const SAME_LINE: usize = 1;
const APART: usize = 8;

/// One batch of the contended-slowdown measurement of `kind`: threads pinned to `a` and `b`
/// each access their own word `n` times (volatile accesses, as through a volatile pointer),
/// the words `gap` words apart. The slower thread's time in ns; None when the two did not run
/// at once throughout (their intervals overlap less than 90% of the longer, or either used
/// under 90% of its interval on its CPU).
fn hammer(kind: LineAccess, a: u32, b: u32, gap: usize, n: u64) -> Option<f64> {
    #[repr(align(128))]
    struct Words([u64; 32]);
    let mut words = Box::new(Words([0; 32]));
    let base = words.0.as_mut_ptr() as usize;
    let go = Arc::new(AtomicU64::new(0));
    let run = move |cpu: u32, slot: usize, go: Arc<AtomicU64>| {
        pin(cpu);
        go.fetch_add(1, Ordering::AcqRel);
        while go.load(Ordering::Acquire) < 2 {
            std::hint::spin_loop();
        }
        let p = (base + slot * 8) as *mut u64;
        let (c0, t0) = (thread_cpu_ns(), Instant::now());
        // Each thread has its own word; nothing else touches it while the batch runs.
        match kind {
            LineAccess::Store => {
                for i in 0..n {
                    unsafe { std::ptr::write_volatile(p, i) };
                }
            }
            // The first thread loads, the second stores until the loads are done (its stores
            // run at another speed, and must cover the loads' whole time): the loads wait for
            // the line.
            LineAccess::LoadStore if slot == 0 => {
                let mut sum = 0u64;
                for _ in 0..n {
                    sum = sum.wrapping_add(unsafe { std::ptr::read_volatile(p) });
                }
                std::hint::black_box(sum);
                go.store(3, Ordering::Release);
            }
            LineAccess::LoadStore => {
                let mut i = 0u64;
                while go.load(Ordering::Relaxed) < 3 {
                    for _ in 0..64 {
                        unsafe { std::ptr::write_volatile(p, i) };
                        i = i.wrapping_add(1);
                    }
                }
            }
            // `x++` as clang emits it from -O1 on x86-64: one memory-destination add, whose
            // load asks for the line exclusive (a separate load and store ask twice).
            #[cfg(target_arch = "x86_64")]
            LineAccess::Rmw => {
                for _ in 0..n {
                    unsafe { std::arch::asm!("inc qword ptr [{0}]", in(reg) p, options(nostack)) };
                }
            }
            #[cfg(not(target_arch = "x86_64"))]
            LineAccess::Rmw => {
                for _ in 0..n {
                    unsafe {
                        std::ptr::write_volatile(p, std::ptr::read_volatile(p).wrapping_add(1))
                    };
                }
            }
            LineAccess::Atomic => {
                let w = unsafe { &*(p as *const AtomicU64) };
                for _ in 0..n {
                    w.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        let t1 = Instant::now();
        (t0, t1, thread_cpu_ns() - c0)
    };
    let other = {
        let go = go.clone();
        std::thread::spawn(move || run(b, gap, go))
    };
    let mine = run(a, 0, go);
    let theirs = other.join().ok()?;
    drop(words); // after both threads are done with it
    let span = |x: &(Instant, Instant, u64)| x.1.duration_since(x.0).as_nanos() as f64;
    let longer = span(&mine).max(span(&theirs));
    let shared = mine
        .1
        .min(theirs.1)
        .saturating_duration_since(mine.0.max(theirs.0));
    let ran = |x: &(Instant, Instant, u64)| x.2 as f64 >= 0.9 * span(x);
    (shared.as_nanos() as f64 >= 0.9 * longer && ran(&mine) && ran(&theirs)).then_some(longer)
}

/// Contended over apart, the means of `batches` alternating batches in which both threads ran
/// at once (None: fewer than 3 such batches of either kind).
fn contended_slowdown(kind: LineAccess, a: u32, b: u32, n: u64, batches: u32) -> Option<f64> {
    let (mut same, mut apart) = (Vec::new(), Vec::new());
    hammer(kind, a, b, SAME_LINE, n); // warm-up: the CPUs' clocks, the pages
    for _ in 0..batches {
        same.extend(hammer(kind, a, b, SAME_LINE, n));
        apart.extend(hammer(kind, a, b, APART, n));
    }
    // Means, not medians: the machine may change state from round to round (a VM's two vCPUs
    // on one core's SMT siblings or on two cores), and a program's run spans such changes too.
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    (same.len() >= 3 && apart.len() >= 3).then(|| mean(&same) / mean(&apart))
}

/// The fastest of `batches` batches between `a` and `b` (None: every one was abandoned).
fn pair(a: u32, b: u32, round_trips: u64, batches: u32) -> Option<f64> {
    (0..batches)
        .filter_map(|_| batch(a, b, round_trips))
        .min_by(|x, y| x.total_cmp(y))
}

pub fn run(a: &CalibrateArgs) -> i32 {
    // Before any pinning: the measurements below pin this thread.
    let all_cpus = allowed_cpus();
    let cpus: Vec<u32> = all_cpus.iter().copied().take(8).collect();
    if cpus.len() < 2 {
        eprintln!(
            "profcc calibrate: this process may run on fewer than 2 CPUs; nothing to measure"
        );
        return 1;
    }
    let mut pairs = Vec::new();
    for (i, &x) in cpus.iter().enumerate() {
        for &y in &cpus[i + 1..] {
            match pair(x, y, a.round_trips.max(100), a.batches.max(1)) {
                Some(ns) => {
                    println!("cpu {x} <-> cpu {y}: {ns:.1} ns per line transfer");
                    pairs.push((x, y, ns));
                }
                None => println!(
                    "cpu {x} <-> cpu {y}: not measured (every batch took over {} ms: the CPUs are busy)",
                    BATCH_LIMIT.as_millis()
                ),
            }
        }
    }
    if pairs.is_empty() {
        eprintln!("profcc calibrate: no pair of CPUs could be measured; run it again when the machine is quieter");
        return 1;
    }
    let mut slowdowns = Slowdowns::default();
    for kind in LineAccess::ALL {
        // A locked add is about 20 times slower than a plain access: fewer of them.
        let n = match kind {
            LineAccess::Atomic => a.increments / 10,
            _ => a.increments,
        }
        .max(100_000);
        let x = contended_slowdown(kind, cpus[0], cpus[1], n, CONTENDED_ROUNDS);
        slowdowns.set(kind, x);
        match x {
            Some(x) => println!(
                "cpu {} and cpu {}: {} accesses to their own words of one line are {x:.2}x slower than of separate lines",
                cpus[0], cpus[1], kind.as_str()
            ),
            None => println!(
                "cpu {} and cpu {}: {} contended slowdown not measured (the two threads did not run at once: the CPUs are busy)",
                cpus[0], cpus[1], kind.as_str()
            ),
        }
    }
    let t = Instant::now();
    let bandwidth = bandwidth(&all_cpus, a.stream_repetitions.max(1));
    match &bandwidth {
        Some(b) => println!(
            "memory bandwidth (STREAM, 3 arrays of {} MiB, {:.1} s): 1 thread copy {:.1} GB/s, triad {:.1} GB/s; {} threads copy {:.1} GB/s, triad {:.1} GB/s",
            b.array_bytes >> 20,
            t.elapsed().as_secs_f64(),
            b.copy_single,
            b.triad_single,
            b.threads,
            b.copy_all,
            b.triad_all
        ),
        None => println!("memory bandwidth not measured: not enough memory available for its arrays"),
    }
    let mut v: Vec<f64> = pairs.iter().map(|p| p.2).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    let transfer_ns = v[v.len() / 2];
    let key = machine_key(
        &std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default(),
        unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(0) as u32,
    );
    let Some(file) = calibration_file(
        std::env::var_os("XDG_CACHE_HOME").as_deref(),
        std::env::var_os("HOME").as_deref(),
    ) else {
        eprintln!(
            "profcc calibrate: neither XDG_CACHE_HOME nor HOME is set; nowhere to keep the result"
        );
        return 1;
    };
    let mut list: Vec<Calibration> = std::fs::read_to_string(&file)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    list.retain(|c| c.key != key);
    list.push(Calibration {
        key: key.clone(),
        transfer_ns,
        pairs,
        contended_slowdown: slowdowns.rmw,
        slowdowns: Some(slowdowns),
        bandwidth,
    });
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(file.parent().unwrap())?;
        let tmp = file.with_extension("json.tmp");
        std::fs::write(
            &tmp,
            serde_json::to_string_pretty(&list).unwrap_or_default(),
        )?;
        std::fs::rename(&tmp, &file)
    };
    if let Err(e) = write() {
        eprintln!("profcc calibrate: cannot write {}: {e}", file.display());
        return 1;
    }
    println!(
        "{key}: {transfer_ns:.1} ns per line transfer (median over CPU pairs); kept in {}",
        file.display()
    );
    0
}

/// The last-level cache's size in bytes, from sysfs (the highest level of CPU 0's data or
/// unified caches); None when sysfs does not say.
fn llc_bytes() -> Option<u64> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    let mut best: Option<(u32, u64)> = None;
    for e in dir.flatten() {
        let p = e.path();
        let read = |f: &str| std::fs::read_to_string(p.join(f)).ok();
        let (Some(level), Some(size), Some(kind)) = (read("level"), read("size"), read("type"))
        else {
            continue;
        };
        if kind.trim() == "Instruction" {
            continue;
        }
        let (Ok(level), Some(size)) = (level.trim().parse::<u32>(), parse_size(size.trim())) else {
            continue;
        };
        if best.is_none_or(|(l, _)| level > l) {
            best = Some((level, size));
        }
    }
    best.map(|b| b.1)
}

/// sysfs's cache size text: `32768K`, `8M`, `512`.
fn parse_size(s: &str) -> Option<u64> {
    let (n, unit) = match s.char_indices().find(|c| !c.1.is_ascii_digit()) {
        Some((i, _)) => (&s[..i], &s[i..]),
        None => (s, ""),
    };
    let n: u64 = n.parse().ok()?;
    let k = match unit {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return None,
    };
    Some(n * k)
}

/// MemAvailable from /proc/meminfo, bytes.
fn mem_available() -> Option<u64> {
    let t = std::fs::read_to_string("/proc/meminfo").ok()?;
    let l = t.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = l.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Bytes of each of the three arrays: 4 x the last-level cache and at least 128 MiB (32 MiB
/// of cache assumed when sysfs does not say), at most a sixth of the available memory; None
/// under 8 MiB.
fn stream_array_bytes(llc: Option<u64>, available: Option<u64>) -> Option<u64> {
    let want = (4 * llc.unwrap_or(32 << 20)).max(128 << 20);
    let cap = available.map_or(want, |a| a / 6);
    let n = want.min(cap) & !4095;
    (n >= 8 << 20).then_some(n)
}

#[derive(Clone, Copy)]
enum Kernel {
    Copy,
    Triad,
}

/// The fastest of `reps` runs of each kernel by `cpus.len()` threads (each pinned to its CPU,
/// on its own slice of the arrays, first touched by it): (copy, triad) in GB/s.
fn stream(a: &mut [f64], b: &mut [f64], c: &mut [f64], cpus: &[u32], reps: u32) -> (f64, f64) {
    let threads = cpus.len().max(1);
    let chunk = a.len().div_ceil(threads);
    let barrier = std::sync::Barrier::new(threads + 1);
    let mut best = [f64::INFINITY; 2];
    std::thread::scope(|s| {
        for (((a, b), c), &cpu) in a
            .chunks_mut(chunk)
            .zip(b.chunks_mut(chunk))
            .zip(c.chunks_mut(chunk))
            .zip(cpus)
        {
            let barrier = &barrier;
            s.spawn(move || {
                pin(cpu);
                a.fill(0.0);
                b.fill(1.0);
                c.fill(2.0);
                barrier.wait();
                for kernel in [Kernel::Copy, Kernel::Triad] {
                    for _ in 0..reps {
                        barrier.wait();
                        match kernel {
                            Kernel::Copy => {
                                for (x, y) in a.iter_mut().zip(b.iter()) {
                                    *x = *y;
                                }
                            }
                            Kernel::Triad => {
                                let q = std::hint::black_box(3.0);
                                for ((x, y), z) in a.iter_mut().zip(b.iter()).zip(c.iter()) {
                                    *x = *y + q * *z;
                                }
                            }
                        }
                        std::hint::black_box(&mut *a);
                        barrier.wait();
                    }
                }
            });
        }
        barrier.wait(); // the arrays are in place
        for (k, _) in [Kernel::Copy, Kernel::Triad].iter().enumerate() {
            for _ in 0..reps {
                let t = Instant::now();
                barrier.wait();
                barrier.wait();
                best[k] = best[k].min(t.elapsed().as_secs_f64());
            }
        }
    });
    let n = a.len() as f64;
    (16.0 * n / best[0] / 1e9, 24.0 * n / best[1] / 1e9)
}

/// The machine's memory bandwidth: STREAM's copy and triad, one thread (on the first of
/// `cpus`) and one per CPU of `cpus`; None when the arrays do not fit in the available memory.
fn bandwidth(cpus: &[u32], reps: u32) -> Option<profcc_schema::regions::Bandwidth> {
    let bytes = stream_array_bytes(llc_bytes(), mem_available())?;
    let n = bytes as usize / 8;
    let (mut a, mut b, mut c) = (vec![0f64; n], vec![0f64; n], vec![0f64; n]);
    let all: Vec<u32> = if cpus.is_empty() {
        vec![0]
    } else {
        cpus.to_vec()
    };
    // All threads first: each first touches its own slice (on a NUMA machine, its node's).
    let (copy_all, triad_all) = stream(&mut a, &mut b, &mut c, &all, reps);
    let (copy_single, triad_single) = stream(&mut a, &mut b, &mut c, &all[..1], reps);
    Some(profcc_schema::regions::Bandwidth {
        copy_single,
        triad_single,
        copy_all,
        triad_all,
        threads: all.len() as u32,
        array_bytes: bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_arrays_are_four_llcs_within_memory() {
        assert_eq!(parse_size("32768K"), Some(32 << 20));
        assert_eq!(parse_size("8M"), Some(8 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("x"), None);
        // 4 x 32 MiB, plenty of memory.
        assert_eq!(
            stream_array_bytes(Some(32 << 20), Some(64 << 30)),
            Some(128 << 20)
        );
        // A small cache: at least 128 MiB.
        assert_eq!(stream_array_bytes(Some(8 << 20), None), Some(128 << 20));
        // 4 x 256 MiB wanted, 1.2 GiB available: a sixth of it.
        assert_eq!(
            stream_array_bytes(Some(256 << 20), Some(1200 << 20)),
            Some(200 << 20)
        );
        assert_eq!(stream_array_bytes(Some(32 << 20), Some(30 << 20)), None);
    }
}
