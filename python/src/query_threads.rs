//! Threads with the query stack, kept for the life of the process.
//!
//! SPARQL work runs on a thread whose stack holds the deepest request the
//! nesting limits let through (`rhizome_sparql::nesting`). Starting one
//! such thread per query (`run_with_query_stack`) cost about 0.3 ms of
//! kernel time (clone, mmap, page faults, scheduling), more than a lookup
//! query itself; here a few threads are started once and take jobs from a
//! queue, one per core so that Python threads still query in parallel.

use rhizome_sparql::nesting::QUERY_STACK_BYTES;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};

type Job = Box<dyn FnOnce() + Send + 'static>;

struct Pool {
    jobs: Mutex<Sender<Job>>,
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        let (tx, rx) = channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(2, 16);
        for i in 0..threads {
            let rx: Arc<Mutex<Receiver<Job>>> = rx.clone();
            // A thread that cannot start leaves the others to do the work;
            // with none at all, `run` falls back to a thread per job.
            let _ = std::thread::Builder::new().name(format!("rhizome-query-{i}")).stack_size(QUERY_STACK_BYTES).spawn(move || loop {
                let job = match rx.lock() {
                    Ok(rx) => rx.recv(),
                    Err(_) => return,
                };
                match job {
                    Ok(job) => job(),
                    Err(_) => return,
                }
            });
        }
        Pool { jobs: Mutex::new(tx) }
    })
}

/// Runs `f` on a query thread and waits for its result; a panic in `f` is
/// raised again here.
pub fn run<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = channel();
    let job: Job = Box::new(move || {
        let _ = tx.send(catch_unwind(AssertUnwindSafe(f)));
    });
    let sent = pool().jobs.lock().map(|jobs| jobs.send(job));
    match sent {
        Ok(Ok(())) => match rx.recv() {
            Ok(Ok(r)) => r,
            Ok(Err(panic)) => resume_unwind(panic),
            Err(_) => panic!("a query thread ended without an answer"),
        },
        // No pool (a poisoned lock, or no thread could start): the job
        // came back in the error; run it on a thread of its own.
        Ok(Err(std::sync::mpsc::SendError(job))) => {
            let handle = std::thread::Builder::new().stack_size(QUERY_STACK_BYTES).spawn(job).expect("a query thread starts");
            let _ = handle.join();
            match rx.recv() {
                Ok(Ok(r)) => r,
                Ok(Err(panic)) => resume_unwind(panic),
                Err(_) => panic!("a query thread ended without an answer"),
            }
        }
        Err(_) => panic!("the query thread queue's lock is poisoned"),
    }
}
