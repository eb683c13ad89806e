//! What the scenario tests share.

use blackout::{Report, Scenario};
use durable_test::{atomic_replace, create_without_dir_sync, holds};

/// A document replaced atomically and durably, then promised: passes.
pub fn replace_scenario() -> Report {
    replace(Scenario::new("atomic replace")).run()
}

/// The atomic replacement's workload and check on `s`.
pub fn replace(s: Scenario) -> Scenario {
    s.workload(|dir, p| {
        atomic_replace(dir, "doc", b"v2")?;
        // What the test prints is not a promise: promises have a
        // channel of their own.
        println!("replaced doc");
        p.promise("saved v2");
        Ok(())
    })
    .check(|state, promised| holds(state, promised, "saved v2", "doc", "v2"))
}

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
