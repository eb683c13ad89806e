//! A file created outside the directory under test and moved into it: a
//! temporary file made in `TMPDIR` on the same file system (renamed in) or
//! on another one (`shutil.move` copies it over the target in place), under
//! real strace; and the refusal that remains for a file the run did not
//! create new.

use std::os::unix::fs::MetadataExt;

use serde_json::Value;

use crate::common::{run_json, text, Scratch};

/// The checker: once "saved" was printed, doc.txt holds v2.
const CHECK: &str = r#"[ -z "$BLACKOUT_ACKED" ] || grep -qx v2 doc.txt"#;

/// A save through a temporary file in `tmpdir`, moved in with `how`
/// (`os.replace` or `shutil.move`), its data fsynced first when `sync`.
fn save(tmpdir: &str, how: &str, sync: bool) -> Vec<String> {
    let program = format!(
        "import os, shutil, tempfile\n\
         fd, p = tempfile.mkstemp()\n\
         os.write(fd, b'v2\\n')\n\
         {}\n\
         os.close(fd)\n\
         {how}(p, 'doc.txt')\n\
         d = os.open('.', os.O_RDONLY)\n\
         os.fsync(d)\n\
         print('saved')\n",
        if sync { "os.fsync(fd)" } else { "pass" }
    );
    [
        "--model",
        "posix",
        "--setup",
        "echo v1 > doc.txt",
        "--checker",
        CHECK,
        "--",
        "env",
        &format!("TMPDIR={tmpdir}"),
        "python3",
        "-c",
        &program,
    ]
    .map(String::from)
    .to_vec()
}

fn run(s: &Scratch, args: &[String]) -> (i32, Value) {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, v, _) = run_json(s, &args);
    (code, v["result"].clone())
}

/// The posix model's causes.
fn causes(r: &Value) -> Vec<Value> {
    r["models"][0]["causes"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn a_temporary_file_renamed_in_from_tmpdir_on_the_same_file_system_is_recorded() {
    let s = Scratch::new();
    let tmpdir = s.path("tmpdir");
    std::fs::create_dir(&tmpdir).unwrap();
    let tmpdir = tmpdir.to_str().unwrap();
    // Synced before the rename: every state passes.
    let (code, r) = run(&s, &save(tmpdir, "os.replace", true));
    assert_eq!(code, 0, "{r}");
    // Not synced: the rename can publish an empty file, blamed on the
    // temporary file's write, and the fix (its fsync) verified.
    let (code, r) = run(&s, &save(tmpdir, "os.replace", false));
    assert_eq!(code, 1, "{r}");
    let c = &causes(&r)[0];
    assert_eq!(c["cause"]["kind"], "data_not_synced_before_rename", "{c:#}");
    let sentence = c["cause"]["sentence"].as_str().unwrap();
    assert!(
        sentence.contains(&format!("the write to {tmpdir}/tmp")),
        "{sentence}"
    );
    assert_eq!(c["fix"]["passes"], true, "{c:#}");
    // No state shows the temporary file inside before its rename.
    let listing = text(
        &s.blackout()
            .args(["run", "--model", "posix", "--consistency-only", "--checker"])
            .arg(r#"[ "$(ls | grep -v '^doc.txt$')" = "" ]"#)
            .args(&save(tmpdir, "os.replace", false)[6..])
            .output()
            .unwrap()
            .stdout,
    );
    assert!(listing.contains("verdict: PASS"), "{listing}");
}

#[test]
fn a_temporary_file_on_another_file_system_copied_over_the_target_is_recorded() {
    let s = Scratch::new();
    let shm = std::path::Path::new("/dev/shm");
    let other = shm
        .metadata()
        .is_ok_and(|m| m.dev() != s.path("tmp").metadata().unwrap().dev());
    if !other {
        assert!(
            std::env::var_os("CI").is_none(),
            "/dev/shm must be another file system"
        );
        eprintln!("note: /dev/shm is not another file system here; skipped");
        return;
    }
    // shutil.move cannot rename across file systems: it copies the file
    // over doc.txt in place (truncate, then the bytes), then unlinks it.
    let (code, r) = run(&s, &save("/dev/shm", "shutil.move", true));
    assert_eq!(code, 1, "{r}");
    let c = &causes(&r)[0];
    assert_eq!(c["cause"]["kind"], "data_not_synced", "{c:#}");
    assert!(
        c["cause"]["op"]
            .as_str()
            .unwrap()
            .contains("to doc.txt (sendfile"),
        "the cause is the copy over doc.txt: {c:#}"
    );
    assert_eq!(c["cause"]["fix"]["path"], "doc.txt", "{c:#}");
    assert_eq!(c["fix"]["passes"], true, "{c:#}");
}

#[test]
fn a_file_that_was_outside_before_the_run_still_cannot_be_moved_in() {
    let s = Scratch::new();
    let before = s.path("prepared.txt");
    std::fs::write(&before, "v2\n").unwrap();
    let out = s
        .blackout()
        .args(["run", "--checker", "true", "--", "python3", "-c"])
        .arg(format!(
            "import os; os.replace({:?}, 'doc.txt'); print('saved')",
            before
        ))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("from outside the directory under test into it, a file the run did not create new there"),
        "{err}"
    );
    s.assert_clean();
}
