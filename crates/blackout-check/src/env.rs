//! The names of the variables a checker is started with: the checker
//! protocol's words (docs/CHECKER.md), in one place for the checkers that
//! set them and the `reproduce:` lines that spell them out.

/// The promises made before the crash, one per line, when they fit
/// (the shell checker's `ACKED_ENV_BYTES_MAX`); unset otherwise.
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
