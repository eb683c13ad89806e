//! Replay on arbitrary logs: a refusal or an op log, never a panic; an op
//! log it makes is a valid trace.
#![no_main]

use blackout_oplog::trace::{Trace, TraceMeta};
use blackout_oplog::tree::Tree;
use blackout_record::replay::replay;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let tree = Tree::default();
    if let Ok(r) = replay(data, &tree, b"/d") {
        let trace = Trace::new(&tree, r, TraceMeta::default());
        if let Err(e) = trace.validate() {
            panic!("replay made an invalid trace: {e}");
        }
        let _ = trace.op_log_text();
    }
});
