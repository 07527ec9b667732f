//! Arbitrary bytes as a `_traverse` or `_path` body, and as a walk on a
//! small graph drawn from them: never a panic, and answers that keep
//! their shape (see `rhizome_server::fuzz_walk_request`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    rhizome_server::fuzz_walk_request(data);
});
