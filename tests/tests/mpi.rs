//! MPI jobs: four Open MPI ranks of unequal, exactly known work, each writing its profile to a
//! file named by its rank (`out=DIR/prof.%r.json`); `profcc report` of the four names the
//! heaviest rank and its imbalance, and `ranks.csv` has each rank's exact access count.

use profcc_tests::*;
use std::process::Command;

/// Elements rank r reads and writes: WORK * (r + 1) (tests/fixtures/mpi/ranks.c).
const WORK: u64 = 100_000;
const RANKS: u64 = 4;

fn euid_is_root() -> bool {
    let out = sh(Command::new("id").arg("-u"));
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

/// mpirun on this machine only, whatever the environment: the isolated launcher (no ssh),
/// shared memory between the ranks, no hostfile, no single-copy mechanism needing ptrace
/// (containers); the job's profcc options passed to every rank.
fn mpirun(s: &Scratch, np: u64, exe: &str, options: &str) -> std::process::Output {
    let mut cmd = Command::new("mpirun");
    cmd.current_dir(s.dir.path())
        .env("PROFCC_OPTIONS", options)
        .env("OMPI_MCA_plm", "isolated")
        .env("OMPI_MCA_btl", "self,vader")
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .env(
            "OMPI_MCA_orte_default_hostfile",
            s.write("empty-hostfile", ""),
        )
        .env_remove("OMPI_MCA_orte_default_hostfile_path")
        .args(["-np", &np.to_string(), "--oversubscribe"]);
    if euid_is_root() {
        cmd.arg("--allow-run-as-root");
    }
    cmd.args(["-x", "PROFCC_OPTIONS", exe]);
    output_within(&mut cmd)
}

#[test]
fn four_ranks_named_by_rank_with_exact_per_rank_counts() {
    let s = Scratch::new();
    let src = fixture("mpi/ranks.c");
    let text = std::fs::read_to_string(&src).unwrap();
    let work_line = line_of(&text, "// work");
    let fill_line = line_of(&text, "// fill");
    let mpicc = Command::new("mpicc")
        .env("OMPI_CC", profcc())
        .current_dir(s.dir.path())
        .args(["-O1", "-g"])
        .arg(&src)
        .args(["-o", "ranks"])
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run mpicc ({e}): install openmpi-bin and libopenmpi-dev (cargo xtask setup)")
        });
    assert!(
        mpicc.status.success(),
        "OMPI_CC=profcc mpicc failed:\n{}",
        String::from_utf8_lossy(&mpicc.stderr)
    );
    let dir = s.path("prof");
    std::fs::create_dir(&dir).unwrap();
    let out = mpirun(
        &s,
        RANKS,
        "./ranks",
        &format!("out={}/prof.%r.json:summary=0", dir.display()),
    );
    assert!(
        out.status.success(),
        "mpirun failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Sum of 0..n-1 over the ranks' arrays.
    let total: u64 = (1..=RANKS).map(|r| (WORK * r) * (WORK * r - 1) / 2).sum();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("ranks {RANKS} total {total}\n")
    );

    // Four profiles, one per rank, named by it, each recording its rank and the job's size.
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["prof.0.json", "prof.1.json", "prof.2.json", "prof.3.json"]
    );
    let mut accesses = Vec::new();
    for r in 0..RANKS {
        let p: profcc_schema::Profile =
            serde_json::from_slice(&std::fs::read(dir.join(format!("prof.{r}.json"))).unwrap())
                .unwrap();
        assert_eq!(p.rank, Some(r as u32));
        assert_eq!(p.ranks, Some(RANKS as u32));
        let n = WORK * (r + 1);
        assert_eq!(
            count_at(&p, "ranks.c", work_line, profcc_schema::AccessKind::Read),
            n
        );
        assert_eq!(
            count_at(&p, "ranks.c", fill_line, profcc_schema::AccessKind::Write),
            n
        );
        accesses.push(p.totals.accesses);
        // Open MPI's components, dlopen'ed by MPI_Init and closed by MPI_Finalize, are in the
        // module list: every allocation's innermost frame lies in a listed module.
        let frames: std::collections::HashMap<u32, &Vec<u64>> =
            p.stacks.iter().map(|s| (s.id, &s.frames)).collect();
        for a in &p.alloc_sites {
            let Some(&pc) = frames.get(&a.stack).and_then(|f| f.first()) else {
                continue;
            };
            assert!(
                p.modules.iter().any(|m| m.start <= pc && pc < m.end),
                "rank {r}: {} site at {pc:#x} in no listed module: {:?}",
                a.kind,
                p.modules.iter().map(|m| &m.path).collect::<Vec<_>>()
            );
        }
    }
    // Beyond the two loops, every rank makes the same few accesses (MPI calls' arguments),
    // rank 0 a few more (its printf).
    let fixed = accesses[1] - 2 * WORK * 2;
    for r in 1..RANKS as usize {
        assert_eq!(accesses[r], 2 * WORK * (r as u64 + 1) + fixed, "rank {r}");
    }
    assert!(accesses[0] >= 2 * WORK + fixed && accesses[0] < 2 * WORK + fixed + 20);

    // ranks.csv: one row per rank, in rank order, with its exact accesses.
    let profiles: Vec<String> = (0..RANKS)
        .map(|r| dir.join(format!("prof.{r}.json")).display().to_string())
        .collect();
    let csv = s.path("csv");
    sh(Command::new(profcc())
        .env("XDG_CACHE_HOME", probe_cache_home())
        .arg("report")
        .args(&profiles)
        .arg("--csv")
        .arg(&csv));
    let table = std::fs::read_to_string(csv.join("ranks.csv")).unwrap();
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    for want in [
        "rank",
        "host",
        "pid",
        "threads",
        "accesses",
        "allocations",
        "bytes_allocated",
        "peak_bytes",
        "remote_accesses",
        "invalidations",
        "seconds",
    ] {
        col(want);
    }
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), RANKS as usize, "{table}");
    for (r, row) in rows.iter().enumerate() {
        assert_eq!(row[col("rank")], r.to_string(), "{table}");
        assert_eq!(row[col("accesses")], accesses[r].to_string(), "{table}");
        assert!(row[col("threads")].parse::<u32>().unwrap() >= 1, "{table}");
        assert!(!row[col("host")].is_empty(), "{table}");
    }

    // The text report's Ranks table names rank 3 as the heaviest and its imbalance:
    // max / mean of the accesses.
    let text = String::from_utf8_lossy(
        &sh(Command::new(profcc())
            .env("XDG_CACHE_HOME", probe_cache_home())
            .arg("report")
            .args(&profiles))
        .stdout,
    )
    .into_owned();
    let mean = accesses.iter().sum::<u64>() as f64 / RANKS as f64;
    let imbalance = accesses[3] as f64 / mean;
    assert!((imbalance - 1.6).abs() < 0.001, "{imbalance}");
    let title = format!(
        "Ranks (4 profiles; heaviest by accesses: rank 3, {} accesses, imbalance {imbalance:.2} (max/mean))",
        profcc_report::fmt::count(accesses[3])
    );
    assert!(text.contains(&title), "no '{title}' in:\n{text}");
    assert!(
        text.lines().any(|l| l.trim_start().starts_with("accesses")
            && l.contains("rank 3:")
            && l.contains(&format!("imbalance {imbalance:.2}"))),
        "{text}"
    );

    // JSON: the same spread, and the rows' ranks.
    let r = report(
        &dir.join("prof.0.json"),
        &profiles[1..].iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let k = r.ranks.expect("a Ranks section");
    assert_eq!(
        k.rows.iter().map(|r| r.rank).collect::<Vec<_>>(),
        [Some(0), Some(1), Some(2), Some(3)]
    );
    let acc = k.metrics.iter().find(|m| m.metric == "accesses").unwrap();
    assert_eq!(acc.spread.worst_rank, Some(3));
    assert_eq!(acc.spread.sum, accesses.iter().sum::<u64>() as f64);
    assert_eq!(acc.spread.min, accesses[0] as f64);
    assert_eq!(acc.spread.present, 4);
    // Per object and per line over the ranks: the array of rank r holds WORK * (r + 1) longs.
    let spread = |what: &str, key_end: &str, metric: &str| {
        k.spreads
            .iter()
            .find(|x| x.what == what && x.key.ends_with(key_end) && x.metric == metric)
            .unwrap_or_else(|| panic!("no {what} {key_end} {metric} in {:#?}", k.spreads))
            .spread
            .clone()
    };
    let alloc_line = line_of(&text_src(&src), "// alloc");
    let array = spread("object", &format!("ranks.c:{alloc_line}"), "bytes");
    assert_eq!(array.sum, (8 * WORK * (1 + 2 + 3 + 4)) as f64);
    assert_eq!(array.min, (8 * WORK) as f64);
    assert_eq!(array.max, (8 * WORK * 4) as f64);
    assert_eq!(array.worst_rank, Some(3));
    assert_eq!((array.present, array.of), (4, 4));
    assert!((array.imbalance - 1.6).abs() < 1e-9);
    let line = spread("line", &format!("ranks.c:{work_line}"), "accesses");
    assert_eq!(line.sum, (WORK * 10) as f64);
    assert_eq!(line.worst_rank, Some(3));
    // cv of 1, 2, 3, 4: sqrt(1.25) / 2.5.
    assert!((line.cv - 1.25f64.sqrt() / 2.5).abs() < 1e-9, "{}", line.cv);
    // The text lists the array among the most uneven objects.
    assert!(
        text.contains(&format!(
            "object heap:ranks.c:{alloc_line}: rank 3 holds 3.05 MiB of 7.63 MiB (in 4 of 4 ranks), imbalance 1.60"
        )),
        "{text}"
    );
}

fn text_src(p: &std::path::Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

/// A fork without exec under `out=f.%r.json` and no MPI launcher: each process names its file
/// by its pid (`f.pid<N>.json`); the child's profile counts only the child's allocations, so a
/// report of both counts the parent's allocations made before the fork once.
#[test]
fn fork_merged_counts_pre_fork_allocations_once() {
    const SRC: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
void *volatile keep[8];
int main(void) {
  for (int i = 0; i < 5; i++) keep[i] = malloc(1000);                        /* MARK_PRE */
  pid_t pid = fork();
  if (pid == 0) { for (int i = 0; i < 3; i++) keep[5 + i] = malloc(300); return 0; } /* MARK_CHILD */
  int st; waitpid(pid, &st, 0);
  keep[7] = malloc(70);                                                      /* MARK_PARENT */
  printf("parent done\n");
  return 0;
}
"#;
    let s = Scratch::new();
    s.write("forka.c", SRC);
    s.compile(&profcc(), &["-O1", "-g", "forka.c", "-o", "forka"]);
    let mut cmd = Command::new(s.path("forka"));
    for v in [
        "OMPI_COMM_WORLD_RANK",
        "PMI_RANK",
        "PMIX_RANK",
        "MV2_COMM_WORLD_RANK",
        "SLURM_PROCID",
    ] {
        cmd.env_remove(v);
    }
    let out = cmd
        .current_dir(s.dir.path())
        .env("PROFCC_OPTIONS", "out=f.%r.json:summary=0")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "parent done\n");
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(s.dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("f."))
        .collect();
    files.sort();
    assert_eq!(files.len(), 2, "{files:?}");
    for f in &files {
        let p = profcc_schema::read(f).unwrap();
        assert_eq!(p.rank, None);
        assert_eq!(
            f.file_name().unwrap().to_string_lossy(),
            format!("f.pid{}.json", p.pid)
        );
    }
    let (pre, child, parent) = (
        line_of(SRC, "MARK_PRE"),
        line_of(SRC, "MARK_CHILD"),
        line_of(SRC, "MARK_PARENT"),
    );
    let r = report(&files[0], &["--top", "0", files[1].to_str().unwrap()]);
    let at = |line: u32| -> (u64, u64) {
        r.alloc_sites
            .sites
            .iter()
            .filter(|a| {
                a.stack.iter().any(|f| {
                    f.line == Some(line)
                        && f.file.as_deref().is_some_and(|x| x.ends_with("forka.c"))
                })
            })
            .fold((0, 0), |(c, b), a| (c + a.count, b + a.bytes))
    };
    assert_eq!(at(pre), (5, 5000), "the pre-fork allocations, once");
    assert_eq!(at(child), (3, 900));
    assert_eq!(at(parent), (1, 70));
    // The Ranks section has both processes, without ranks.
    let k = r.ranks.expect("two inputs: a Ranks section");
    assert_eq!(
        k.rows.iter().map(|x| x.rank).collect::<Vec<_>>(),
        [None, None]
    );
    assert_eq!(
        k.rows.iter().map(|x| x.allocations).sum::<u64>(),
        r.summary.totals.allocations
    );
}
