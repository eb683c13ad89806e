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
        checker_flag: "--checker",
        state_flags: "",
        all_causes: false,
        ack_prefix: None,
    };
    render(&report, &ctx).replace(kvstore, "kvstore")
}

/// Compares with the checked-in snapshot, found by an absolute path: no
/// workspace lookup (which can fail while another cargo runs).
fn snapshot(name: &str, text: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!(name, text));
}

#[test]
fn ack_before_fsync_report() {
    snapshot(
        "reports__ack_before_fsync_report",
        &report("ack-before-fsync"),
    );
}

#[test]
fn no_checksum_report() {
    snapshot("reports__no_checksum_report", &report("no-checksum"));
}

#[test]
fn snapshot_unsynced_data_report() {
    snapshot(
        "reports__snapshot_unsynced_data_report",
        &report("snapshot-unsynced-data"),
    );
}

#[test]
fn snapshot_in_place_report() {
    snapshot(
        "reports__snapshot_in_place_report",
        &report("snapshot-in-place"),
    );
}
