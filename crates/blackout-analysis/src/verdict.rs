//! The verdict of a run, of one model, or of one file system.

use serde::Serialize;

/// The verdict of a run or of one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Every checked state was accepted.
    Pass,
    /// A state violates the checker.
    Fail,
    /// Nothing was promised, or the check cannot fail.
    Inconclusive,
    /// The checker rejects the state where nothing was lost.
    HarnessBroken,
    /// The checker could not be run, or states could not be checked.
    Error,
}

impl Verdict {
    /// The verdict as printed: `PASS`, `HARNESS BROKEN`.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::Inconclusive => "INCONCLUSIVE",
            Verdict::HarnessBroken => "HARNESS BROKEN",
            Verdict::Error => "ERROR",
        }
    }

    /// The verdict a printed name names ([`Verdict::name`]'s inverse).
    ///
    /// ```
    /// use blackout_analysis::verdict::Verdict;
    /// assert_eq!(Verdict::named("HARNESS BROKEN"), Some(Verdict::HarnessBroken));
    /// assert_eq!(Verdict::named("MAYBE"), None);
    /// ```
    pub fn named(name: &str) -> Option<Verdict> {
        [
            Verdict::Pass,
            Verdict::Fail,
            Verdict::Inconclusive,
            Verdict::HarnessBroken,
            Verdict::Error,
        ]
        .into_iter()
        .find(|v| v.name() == name)
    }

    /// The exit code: 0 pass, 1 fail, 2 otherwise.
    pub fn exit_code(self) -> u8 {
        match self {
            Verdict::Pass => 0,
            Verdict::Fail => 1,
            _ => 2,
        }
    }
}

impl Serialize for Verdict {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Verdict {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Verdict, D::Error> {
        let name = String::deserialize(d)?;
        Verdict::named(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("no verdict is called {name:?}")))
    }
}
