//! The text report, snapshotted on checked-in recordings of the store with
//! planted bugs (`tests/reports/*.trace`): many causes, torn writes, fixes
//! that are not enough alone. A change of wording is reviewed (`cargo insta
//! review`), never accidental. The checker's path is shown as `kvstore`.

use std::path::Path;

use blackout::explore::model::Model;
use blackout::export::text::render;
use blackout::export::ExportContext;
use blackout::oplog::trace::Trace;
use blackout::run::{check_trace, RunConfig};

fn report(bug: &str) -> String {
    let rel = format!("tests/reports/{bug}.trace");
    let trace = Trace::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(&rel)).unwrap();
    let kvstore = env!("CARGO_BIN_EXE_kvstore");
    let checker = format!("{kvstore} --bug {bug} check");
    let mut cfg = RunConfig::new(checker.clone());
    cfg.models = Model::ALL.to_vec();
    let report = check_trace(&trace, &cfg).unwrap();
    let trace_id = trace.content_id();
    let ctx = ExportContext {
        trace: &trace,
        trace_path: Some(&rel),
        trace_id: &trace_id,
        checker: &checker,
        state_flags: "",
    };
    render(&report, &ctx).replace(kvstore, "kvstore")
}

#[test]
fn ack_before_fsync_report() {
    insta::assert_snapshot!(report("ack-before-fsync"));
}

#[test]
fn no_checksum_report() {
    insta::assert_snapshot!(report("no-checksum"));
}

#[test]
fn snapshot_unsynced_data_report() {
    insta::assert_snapshot!(report("snapshot-unsynced-data"));
}

#[test]
fn snapshot_in_place_report() {
    insta::assert_snapshot!(report("snapshot-in-place"));
}
