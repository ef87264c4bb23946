//! The disk's flush latency while a load runs, beside the load's own tail.
//!
//! A write acknowledged only once durable waits for the disk's flush (`fdatasync` of
//! PostgreSQL's WAL or SQLite's), and every write whose batch is in flight while one flush
//! stalls waits for that stall: no batching gets a durable answer out sooner than the disk
//! allows. On the VMs these benches run on, a flush usually takes well under a millisecond but
//! now and then 15–190 ms (docs/benchmarks.md, session 50), and once such stalls fill more than
//! about 1 % of a load's time, its p99 is one of them. So a paced load reports the flushes of a
//! probe that ran beside it: a 4 KiB write and `fdatasync` every 10 ms to a file of its own on
//! the same disk, which tells whether the disk left room for the tail that was asked for. The
//! probe's thread is the bench process's, on the server's core, where it sleeps but for about a
//! hundred pairs of system calls a second.

use std::fmt;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Time between the probe's flushes.
const EVERY: Duration = Duration::from_millis(10);
/// The size of each write, and the file's length the writes go round.
const WRITE: usize = 4096;
const FILE_BYTES: u64 = 1 << 20;
/// A flush at least this long counts as a stall.
const STALL_MS: f64 = 10.0;

/// A probe flushing the disk under `dir` until [`FlushProbe::finish`].
pub struct FlushProbe {
    stop: Arc<AtomicBool>,
    started: Instant,
    thread: JoinHandle<Vec<f64>>,
}

impl FlushProbe {
    /// Start flushing a file of its own in `dir` (which should be on the database's disk).
    pub fn start(dir: &Path) -> Self {
        let path = dir.join("flush-probe.bin");
        let file = File::create(&path).expect("flush probe file");
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            let block = [0x5a_u8; WRITE];
            let mut latencies_ms = Vec::new();
            let mut offset = 0;
            while !stopped.load(Ordering::Relaxed) {
                let began = Instant::now();
                file.write_all_at(&block, offset).expect("probe write");
                file.sync_data().expect("probe flush");
                let took = began.elapsed();
                latencies_ms.push(took.as_secs_f64() * 1000.0);
                offset = (offset + WRITE as u64) % FILE_BYTES;
                std::thread::sleep(EVERY.saturating_sub(took));
            }
            latencies_ms
        });
        FlushProbe {
            stop,
            started: Instant::now(),
            thread,
        }
    }

    /// Stop flushing; what the flushes took.
    pub fn finish(self) -> Flushes {
        self.stop.store(true, Ordering::Relaxed);
        let seconds = self.started.elapsed().as_secs_f64();
        let mut latencies_ms = self.thread.join().expect("flush probe");
        latencies_ms.sort_by(f64::total_cmp);
        Flushes {
            latencies_ms,
            seconds,
        }
    }
}

/// The probe's flush latencies over a load, sorted.
pub struct Flushes {
    latencies_ms: Vec<f64>,
    seconds: f64,
}

impl Flushes {
    fn percentile(&self, share: f64) -> f64 {
        let last = self.latencies_ms.len().saturating_sub(1);
        self.latencies_ms
            .get(((last as f64) * share).round() as usize)
            .copied()
            .unwrap_or(0.0)
    }

    fn stalls(&self) -> impl Iterator<Item = f64> + '_ {
        self.latencies_ms
            .iter()
            .copied()
            .filter(|&ms| ms >= STALL_MS)
    }
}

impl fmt::Display for Flushes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stalled_ms = self.stalls().fold(0.0, |sum, ms| sum + ms);
        write!(
            f,
            "the disk's flushes meanwhile ({} probes): p50 {:.2} ms  p99 {:.2} ms  max {:.1} ms; \
             {} of {STALL_MS:.0} ms or more, {stalled_ms:.0} ms in all ({:.1} % of the load's time)",
            self.latencies_ms.len(),
            self.percentile(0.50),
            self.percentile(0.99),
            self.latencies_ms.last().copied().unwrap_or(0.0),
            self.stalls().count(),
            100.0 * stalled_ms / (self.seconds * 1000.0),
        )
    }
}
