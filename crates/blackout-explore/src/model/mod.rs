//! Persistence models: which crash states a power failure may leave.
//!
//! A [`CrashModel`] is asked, crash point by crash point, for the states it
//! allows there; [`Model`] names the registered ones. [`Model::ALL`] lists
//! them in strength order: every state a weaker model allows, a stronger one
//! allows too (process ⊂ ordered ⊂ posix), so a bug caught by one model is
//! caught by every stronger one.

mod ordered;
pub mod posix;
mod process;

use serde::Serialize;

use crate::enumerate::Coverage;
pub use crate::enumerate::CrashModel;

pub use ordered::Ordered;
pub use posix::Posix;
pub use process::Process;

/// A registered persistence model, weakest first (the order of
/// [`Model::ALL`] and of `Ord`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Model {
    /// The process dies; the OS keeps everything it was given.
    Process,
    /// Power fails on a disk that writes in order: the last write may tear.
    Ordered,
    /// Only what a sync promised is safe.
    Posix,
}

impl Model {
    /// Every model, in strength order (weakest first).
    pub const ALL: [Model; 3] = [Model::Process, Model::Ordered, Model::Posix];

    /// The model's implementation.
    pub fn crash_model(self) -> &'static dyn CrashModel {
        match self {
            Model::Process => &Process,
            Model::Ordered => &Ordered,
            Model::Posix => &Posix,
        }
    }

    /// The model's name on the command line.
    pub fn name(self) -> &'static str {
        self.crash_model().name()
    }

    /// The model with this name.
    pub fn by_name(name: &str) -> Option<Model> {
        Model::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// The coverage statement of a model that emits every state it allows.
fn every_state_text(cov: &Coverage) -> String {
    format!(
        "covered: every state the model allows at all {} crash points",
        cov.crash_points
    )
}

/// A count as a person reads it: exact below a million, else two
/// significant digits and a power of ten (`9.2e18`, not nineteen digits;
/// JSON keeps the exact number).
///
/// ```
/// use blackout_explore::model::for_people;
/// assert_eq!(for_people(999_999), "999999");
/// assert_eq!(for_people(27_309_442), "2.7e7");
/// assert_eq!(for_people(9_223_372_036_854_775_807), "9.2e18");
/// ```
pub fn for_people(n: u128) -> String {
    if n < 1_000_000 {
        return n.to_string();
    }
    // Two significant digits, rounded from the exact digits (an f64 keeps
    // 15 to 17 of them, enough to round to two).
    #[allow(clippy::cast_precision_loss)]
    let f = n as f64;
    format!("{f:.1e}")
}

/// A count with a comma between each group of three digits (`269,786`).
///
/// ```
/// use blackout_explore::model::with_commas;
/// assert_eq!(with_commas(2449), "2,449");
/// assert_eq!(with_commas(999), "999");
/// assert_eq!(with_commas(1_000_000), "1,000,000");
/// ```
pub fn with_commas(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_are_listed_weakest_first_and_named_once() {
        let mut sorted = Model::ALL;
        sorted.sort();
        assert_eq!(sorted, Model::ALL);
        for m in Model::ALL {
            assert_eq!(Model::by_name(m.name()), Some(m));
        }
    }

    #[test]
    fn counts_for_people_are_exact_below_a_million_and_two_digits_above() {
        for (n, text) in [
            (0, "0"),
            (12_345, "12345"),
            (999_999, "999999"),
            (1_000_000, "1.0e6"),
            (1_234_567, "1.2e6"),
            (1_250_001, "1.3e6"),
            (9_960_000, "1.0e7"),
            (27_309_442, "2.7e7"),
            (u128::from(u64::MAX), "1.8e19"),
            (u128::MAX, "3.4e38"),
        ] {
            assert_eq!(for_people(n), text, "{n}");
        }
    }
}
