//! Commands as blackout runs them: the `{dir}` placeholder, and how a child
//! ended, in words.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

/// The placeholder for the directory under test (or a crash state's
/// directory) in commands.
pub const DIR_PLACEHOLDER: &str = "{dir}";

/// Replaces `{dir}` in an argument.
pub fn substitute(arg: &OsStr, dir: &Path) -> OsString {
    let bytes = arg.as_bytes();
    let pat = DIR_PLACEHOLDER.as_bytes();
    let dir = dir.as_os_str().as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(pat) {
            out.extend_from_slice(dir);
            i += pat.len();
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    OsString::from_vec(out)
}

/// The name of a signal number (`SIGKILL`).
pub fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| format!("signal {sig}"))
}
