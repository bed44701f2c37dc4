//! The harness is sbx::fuzzing::policy (also replayed by tests/fuzz_corpus.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sbx::fuzzing::policy(data));
