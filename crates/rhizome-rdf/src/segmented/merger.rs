//! The background merge: a thread per writable store that wakes when a
//! commit takes the delta past its size, or every so often to check its
//! age, and merges. It holds the store only while merging, and stops
//! (abandoning a merge under way, whose files go) when the store closes.

use super::backend::SegmentedBackend;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

#[derive(Default)]
struct Signal {
    /// (woken, stopping)
    state: Mutex<(bool, bool)>,
    changed: Condvar,
}

pub(crate) struct Merger {
    signal: Arc<Signal>,
    thread: Option<JoinHandle<()>>,
}

impl Merger {
    pub fn start(backend: Weak<SegmentedBackend>, tick: Duration) -> std::io::Result<Merger> {
        let signal = Arc::new(Signal::default());
        let theirs = signal.clone();
        let thread = std::thread::Builder::new().name("rhizome-merge".into()).spawn(move || run(backend, &theirs, tick))?;
        Ok(Merger { signal, thread: Some(thread) })
    }

    pub fn wake(&self) {
        let mut state = self.signal.state.lock().unwrap_or_else(|p| p.into_inner());
        state.0 = true;
        self.signal.changed.notify_one();
    }

    /// Stops the thread and waits for it.
    pub fn stop(&mut self) {
        {
            let mut state = self.signal.state.lock().unwrap_or_else(|p| p.into_inner());
            state.1 = true;
            self.signal.changed.notify_one();
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(backend: Weak<SegmentedBackend>, signal: &Signal, tick: Duration) {
    loop {
        {
            let mut state = signal.state.lock().unwrap_or_else(|p| p.into_inner());
            if !state.0 && !state.1 {
                state = signal.changed.wait_timeout(state, tick).unwrap_or_else(|p| p.into_inner()).0;
            }
            if state.1 {
                return;
            }
            state.0 = false;
        }
        let Some(backend) = backend.upgrade() else { return };
        if backend.merge_is_due() {
            if let Err(e) = backend.merge() {
                if !backend.is_closing() {
                    // Nothing is lost (the log still holds every change);
                    // the next wake tries again.
                    eprintln!("rhizome: merging the quad indexes' delta failed: {e}");
                }
            }
        }
    }
}
