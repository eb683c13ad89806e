//! The trace loader on arbitrary bytes: a trace it accepts is safe to use
//! (every later stage indexes without checking again), so the op log, the
//! initial inodes and every op applied through the store must not panic.
#![no_main]

use blackout_oplog::contents::Data;
use blackout_oplog::ops::OpKind;
use blackout_oplog::store::{self, Halves};
use blackout_oplog::trace::Trace;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(trace) = Trace::read(data) {
        let _ = trace.op_log_text();
        let mut inodes = trace.initial_inodes();
        for op in &trace.ops {
            // File contents are sparse and name the blob's bytes: a write
            // at any offset costs no more than its extent.
            let data = match op.kind {
                OpKind::Write { data, .. } => Data::Blob(&trace.data, data),
                _ => Data::Bytes(&[]),
            };
            store::apply(&mut inodes, &op.kind, data, Halves::BOTH);
        }
    }
});
