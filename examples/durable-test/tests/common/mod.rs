//! What the scenario tests share.

use blackout::{Report, Scenario};
use durable_test::{create_without_dir_sync, holds};

/// A file created and fsynced, its directory never: promised, then lost
/// under posix when the directory entry is.
pub fn create_scenario() -> Report {
    Scenario::new("create")
        .workload(|dir, p| {
            create_without_dir_sync(dir, "data", b"hello")?;
            p.promise("created data");
            Ok(())
        })
        .check(|state, promised| holds(state, promised, "created data", "data", "hello"))
        .run()
}
