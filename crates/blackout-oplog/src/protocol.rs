//! The checker protocol's words (docs/CHECKER.md): the variables a checker
//! is started with and how long the promises may be in its environment,
//! in one place for the checkers that set them, the `reproduce:` lines
//! that spell them out and the reports that explain them.

/// The promises made before the crash, one per line, when they fit
/// ([`ACKED_ENV_BYTES_MAX`]); unset otherwise.
pub const ACKED: &str = "BLACKOUT_ACKED";
/// `1` when the promises did not fit in [`ACKED`] and are only in
/// [`ACKS_FILE`].
pub const ACKED_IN_FILE: &str = "BLACKOUT_ACKED_IN_FILE";
/// A file holding the promises, one per line.
pub const ACKS_FILE: &str = "BLACKOUT_ACKS_FILE";
/// A file holding every byte the workload printed before the crash.
pub const OUTPUT_FILE: &str = "BLACKOUT_OUTPUT_FILE";
/// The crash state's id (`c5.lost3`).
pub const STATE: &str = "BLACKOUT_STATE";
/// `1` in a checker server's environment.
pub const CHECKER_SERVER: &str = "BLACKOUT_CHECKER_SERVER";

/// The longest promise text handed to a checker in `BLACKOUT_ACKED`, in
/// bytes (the lines joined, without the last newline). Linux caps one
/// environment string at 128 KiB (`MAX_ARG_STRLEN`) and refuses to start a
/// program past it (`Argument list too long`); this leaves room below that
/// cap and the whole environment's. Longer promises reach the checker only
/// in `BLACKOUT_ACKS_FILE`, with `BLACKOUT_ACKED_IN_FILE=1`.
pub const ACKED_ENV_BYTES_MAX: usize = 96 * 1024;

/// The value of `BLACKOUT_ACKED` for these promises (one per line), or
/// `None` when it is longer than [`ACKED_ENV_BYTES_MAX`] and the checker
/// gets them only in `BLACKOUT_ACKS_FILE`.
///
/// ```
/// use blackout_oplog::protocol::acked_env_value;
///
/// assert_eq!(acked_env_value(b"ack 1\nack 2\n"), Some(&b"ack 1\nack 2"[..]));
/// ```
pub fn acked_env_value(promises: &[u8]) -> Option<&[u8]> {
    let value = promises.strip_suffix(b"\n").unwrap_or(promises);
    (value.len() <= ACKED_ENV_BYTES_MAX).then_some(value)
}
