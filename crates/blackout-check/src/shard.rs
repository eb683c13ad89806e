//! Sharded runs: one run split over N machines, and the parts merged back.
//!
//! Exploration is cheap and deterministic, checking is not: every shard
//! explores the whole trace (and runs the pre-check and the nothing-lost
//! check), then checks only the distinct states whose content key falls in
//! its [`Shard`]: the first 8 bytes of the content hash, read as a
//! big-endian integer, modulo N, equal to K − 1. What a shard found is a
//! [`ShardPart`]: a versioned JSON document naming the trace (its content id),
//! every setting that changes results ([`Settings`], with a fingerprint),
//! the shard, the outcomes of the two checks every run makes first, and the
//! outcome of each distinct state it checked, by content key.
//!
//! A merge takes every part of one run: [`Known::of_parts`] refuses parts of
//! another trace, with other settings, of another split, a shard given
//! twice or missing, a state filed under the wrong shard; what remains is
//! the outcomes a single run would have had, which `sharded::merge_parts`
//! analyses exactly as a single run does. A part file is hostile input:
//! [`ShardPart::read`] checks its schema, types, keys and shard before anything
//! uses it.

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::image::Node;
use crate::outcome::Outcome;
use crate::CheckerKind;
use blackout_explore::dedup::StateKey;
use blackout_explore::enumerate::Representatives;
use blackout_explore::model::Model;
use blackout_oplog::ops::Name;
use blackout_oplog::outcome::Timings;

/// The layout version of a part file; it changes whenever a field is
/// removed or renamed, or changes type or meaning.
pub const PART_SCHEMA: u32 = 4;

/// What a part file says it is (`"format"`).
pub const PART_FORMAT: &str = "blackout-part";

/// The largest part file read, in bytes (a part holds about 200 bytes per
/// distinct state it checked).
pub const PART_FILE_BYTES_MAX: u64 = 1 << 30;

/// The most shards a run may be split into.
pub const SHARDS_MAX: usize = 1 << 16;

/// Shard K of N (1 ≤ K ≤ N).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// K, from 1.
    pub index: usize,
    /// N, at least 1.
    pub count: usize,
}

impl Shard {
    /// Reads `K/N`; the error says what is wrong, in one line.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let parsed = text
            .split_once('/')
            .and_then(|(k, n)| Some((k.trim().parse().ok()?, n.trim().parse().ok()?)));
        let Some((index, count)) = parsed else {
            return Err(format!(
                "`{text}` is not a shard: expected K/N, shard K of N (1/3, 2/3, 3/3)"
            ));
        };
        let shard = Shard { index, count };
        shard.validate()?;
        Ok(shard)
    }

    /// Checks 1 ≤ K ≤ N ≤ [`SHARDS_MAX`].
    pub fn validate(&self) -> Result<(), String> {
        if self.count == 0 || self.count > SHARDS_MAX {
            return Err(format!(
                "shard {self}: N must be between 1 and {SHARDS_MAX}"
            ));
        }
        if self.index == 0 || self.index > self.count {
            return Err(format!(
                "shard {self}: K must be between 1 and N ({})",
                self.count
            ));
        }
        Ok(())
    }

    /// Whether this shard checks the state with this content key.
    pub fn holds(&self, key: &StateKey) -> bool {
        self.holds_hash(&key.0)
    }

    /// Whether this shard checks the real file system's state whose image
    /// is `image`.
    pub fn holds_image(&self, image: &blackout_block::states::ImageId) -> bool {
        let mut h = blake3::Hasher::new();
        h.update(&(image.0 as u64).to_le_bytes());
        for r in &image.1 {
            h.update(&(*r as u64).to_le_bytes());
        }
        self.holds_hash(h.finalize().as_bytes())
    }

    /// Whether this shard holds what hashes to `hash`: its first 8 bytes,
    /// big-endian, modulo N, equal to K − 1.
    pub fn holds_hash(&self, hash: &[u8; 32]) -> bool {
        let mut first = [0u8; 8];
        first.copy_from_slice(&hash[..8]);
        let n = u64::try_from(self.count).unwrap_or(u64::MAX);
        u64::from_be_bytes(first) % n == u64::try_from(self.index - 1).unwrap_or(u64::MAX)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Every setting that changes what a run finds: parts made with other
/// settings cannot be merged, and the merge runs its fix verifications with
/// these.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// The models explored, weakest first (`process`, `ordered`, `posix`).
    #[serde(deserialize_with = "models_by_name")]
    pub models: Vec<Model>,
    /// Pending ops up to which posix enumerates every subset.
    pub exhaustive_limit: usize,
    /// Random subsets sampled per crash point beyond the limit.
    pub budget: usize,
    /// Seed of the sample.
    pub seed: u64,
    /// Which crash points are explored: `auto`, `exhaustive` or a number
    /// per class (parts written before it existed explored every crash
    /// point of their short traces: `auto`).
    #[serde(default = "representatives_auto")]
    pub representatives: Representatives,
    /// Sector size at which writes tear, in bytes.
    pub sector: u64,
    /// Only lines starting with this are promises.
    pub ack_prefix: Option<Name>,
    /// The checker tests consistency alone.
    pub consistency_only: bool,
    /// Distinct fixes verified per model.
    pub verify_fixes: usize,
    /// The checker command.
    pub checker: String,
    /// How it runs: `shell` (`--checker`) or `server` (`--checker-server`).
    pub checker_kind: CheckerKind,
    /// Seconds one checker run may take.
    pub timeout_seconds: f64,
    /// Seconds of checking past the representatives (`--check-budget`);
    /// `None`: no bound, every state checked.
    #[serde(default)]
    pub check_budget_seconds: Option<f64>,
    /// On a real file system (`--backend block`), its settings; `None`
    /// with the model backend alone.
    pub block: Option<BlockSettings>,
}

/// The settings of a run on a real file system that change what it finds:
/// every shard of one must share them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockSettings {
    /// The file system (`ext4`, `xfs`, `btrfs`).
    pub fs: String,
    /// Mount options, joined by commas.
    pub mount_opts: String,
    /// Subsets tried per crash point.
    pub max_subsets: usize,
    /// Seed of the sampled subsets.
    pub seed: u64,
    /// Whether the file system's checker runs on each state.
    pub fsck: bool,
}

fn representatives_auto() -> Representatives {
    Representatives::Auto
}

fn models_by_name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Model>, D::Error> {
    let names = Vec::<String>::deserialize(d)?;
    names
        .iter()
        .map(|n| {
            Model::by_name(n)
                .ok_or_else(|| serde::de::Error::custom(format!("`{n}` is not a model")))
        })
        .collect()
}

impl Settings {
    /// A short hash of the settings (12 hex digits), equal for equal
    /// settings.
    pub fn fingerprint(&self) -> String {
        let bytes = serde_json::to_vec(self).unwrap_or_default();
        blake3::hash(&bytes).to_hex()[..12].to_string()
    }

    /// The first setting that differs from `other`'s, as `name this, not
    /// that` (a block setting as `block.name`); `None` when they are equal.
    pub fn difference(&self, other: &Settings) -> Option<String> {
        let (a, b) = (
            serde_json::to_value(self).ok()?,
            serde_json::to_value(other).ok()?,
        );
        first_difference("", &a, &b)
    }
}

/// The first field of two JSON objects that differs (nested objects field
/// by field), as `name this, not that`.
fn first_difference(prefix: &str, a: &serde_json::Value, b: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    let (Value::Object(x), Value::Object(y)) = (a, b) else {
        return (a != b).then(|| format!("{} {a}, not {b}", prefix.trim_end_matches('.')));
    };
    let names = x.keys().chain(y.keys().filter(|k| !x.contains_key(*k)));
    names.into_iter().find_map(|k| {
        let (v, w) = (
            x.get(k).unwrap_or(&Value::Null),
            y.get(k).unwrap_or(&Value::Null),
        );
        first_difference(&format!("{prefix}{k}."), v, w)
    })
}

/// One distinct state a shard checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartState {
    /// Its simplest id (for people; the key is what counts).
    pub state: String,
    /// The content hash, 64 hex digits.
    pub hash: String,
    /// Bytes printed before the crash (the rest of the content key).
    pub printed: usize,
    /// What the checker said.
    #[serde(flatten)]
    pub outcome: Outcome,
}

impl PartState {
    /// The content key, if `hash` is 64 hex digits.
    pub fn key(&self) -> Option<StateKey> {
        let h = self.hash.as_bytes();
        if h.len() != 64 {
            return None;
        }
        let mut hash = [0u8; 32];
        for (i, byte) in hash.iter_mut().enumerate() {
            let pair = std::str::from_utf8(&h[2 * i..2 * i + 2]).ok()?;
            *byte = u8::from_str_radix(pair, 16).ok()?;
        }
        Some((hash, self.printed))
    }

    /// The entry for a checked state.
    pub fn new(state: String, key: &StateKey, outcome: &Outcome) -> PartState {
        PartState {
            state,
            hash: key.0.iter().map(|b| format!("{b:02x}")).collect(),
            printed: key.1,
            outcome: outcome.clone(),
        }
    }
}

/// Where a shard's checker could not be run (the run stops there).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CannotRun {
    /// The state's id.
    pub state: String,
    /// What the shell said.
    pub reason: String,
}

/// What one shard of a run found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardPart {
    /// [`PART_FORMAT`].
    pub format: String,
    /// [`PART_SCHEMA`].
    pub schema: u32,
    /// What made it: `blackout VERSION`.
    pub made_by: String,
    /// The trace file the shard read, as it was named (a merge reads it
    /// unless told another path).
    pub trace: Option<String>,
    /// The trace's content id (`Trace::content_id`).
    pub trace_id: String,
    /// The settings.
    pub settings: Settings,
    /// [`Settings::fingerprint`] of them.
    pub fingerprint: String,
    /// Which shard.
    pub shard: Shard,
    /// Distinct states of the whole exploration (every shard's).
    pub distinct: usize,
    /// The pre-check's outcome (`None`: skipped, or the run stopped before).
    pub precheck: Option<Outcome>,
    /// The nothing-lost check's outcome (`None`: the run stopped before).
    pub all_applied: Option<Outcome>,
    /// Why the run stops before any analysis, if it does (for people: the
    /// merge draws the same conclusion from the outcomes).
    pub stop: Option<String>,
    /// Where the checker could not be run, if it could not.
    pub cannot_run: Option<CannotRun>,
    /// Every distinct state of this shard that was checked.
    pub states: Vec<PartState>,
    /// Distinct states of this shard's share that the check budget left
    /// unchecked (a merge holds no outcome for them, and says so).
    #[serde(default)]
    pub unchecked: usize,
    /// Seconds this shard spent exploring.
    pub explore_seconds: f64,
    /// Seconds this shard spent checking.
    pub check_seconds: f64,
    /// Processes the checker left running, killed.
    pub orphans_killed: usize,
    /// With `--backend block`: the file system's share (its trace is then a
    /// saved block recording).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<BlockPart>,
    /// Where the part was read from (not in the file; for messages).
    #[serde(skip)]
    pub origin: Option<String>,
}

/// Why a part file cannot be used, or parts cannot be merged: one line.
#[derive(Debug, thiserror::Error)]
pub enum PartError {
    /// The file cannot be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: io::Error,
    },
    /// The file is not a part this blackout reads.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The parts do not make one run.
    #[error("{0}")]
    Mismatch(String),
}

impl ShardPart {
    /// The JSON text of the part.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }

    /// Writes the part to a file durably
    /// ([`blackout_sys::durable::write_durably`]): the old part or the new
    /// one, whole, whatever happens.
    pub fn save(&self, path: &Path) -> io::Result<()> {
        blackout_sys::durable::write_durably(path, 0o644, |w| {
            io::Write::write_all(w, self.to_json().as_bytes())
        })
    }

    /// Reads and checks a part file.
    pub fn load(path: &Path) -> Result<ShardPart, PartError> {
        let name = path.display().to_string();
        let read = |source| PartError::Read {
            path: name.clone(),
            source,
        };
        let len = std::fs::metadata(path).map_err(read)?.len();
        if len > PART_FILE_BYTES_MAX {
            return Err(PartError::Invalid {
                path: name,
                message: format!("{len} bytes, more than a part may hold ({PART_FILE_BYTES_MAX})"),
            });
        }
        let bytes = std::fs::read(path).map_err(read)?;
        let mut part = ShardPart::read(&bytes).map_err(|message| PartError::Invalid {
            path: name.clone(),
            message,
        })?;
        part.origin = Some(name);
        Ok(part)
    }

    /// Reads and checks a part from its JSON text; the error says what is
    /// wrong, in one line.
    pub fn read(bytes: &[u8]) -> Result<ShardPart, String> {
        let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
            if e.is_eof() {
                format!("the part file is cut short ({e}); write it again with `blackout run --shard K/N --part FILE`")
            } else {
                format!("not a blackout part file (not JSON: {e})")
            }
        })?;
        if value.get("format").and_then(|f| f.as_str()) != Some(PART_FORMAT) {
            return Err(format!(
                "not a blackout part file (no \"format\": \"{PART_FORMAT}\"); `blackout run --shard K/N --part FILE` writes them"
            ));
        }
        match value.get("schema").and_then(|s| s.as_u64()) {
            Some(s) if s == u64::from(PART_SCHEMA) => {}
            other => {
                return Err(format!(
                    "part layout {} is not the one this blackout {} reads ({PART_SCHEMA}): make the parts and merge them with the same blackout",
                    other.map_or("(none)".into(), |s| s.to_string()),
                    env!("CARGO_PKG_VERSION")
                ))
            }
        }
        let part: ShardPart =
            serde_json::from_value(value).map_err(|e| format!("a malformed part: {e}"))?;
        part.validate()?;
        Ok(part)
    }

    /// The part in messages: `part2.json (shard 2/3)`, or `shard 2/3`.
    pub fn label(&self) -> String {
        match &self.origin {
            Some(o) => format!("{o} (shard {})", self.shard),
            None => format!("shard {}", self.shard),
        }
    }

    /// Checks what serde cannot: the shard, the settings against their
    /// fingerprint, each key and that it belongs to this shard.
    fn validate(&self) -> Result<(), String> {
        self.shard.validate()?;
        let t = self.settings.timeout_seconds;
        if !(t > 0.0 && t.is_finite() && t < 1e9) {
            return Err(format!(
                "a timeout of {t} s is not a positive number of seconds"
            ));
        }
        if self.settings.checker_kind == CheckerKind::Closure {
            return Err(
                "checker_kind `closure` cannot be merged: only a command (`shell` or `server`) can be run again".into(),
            );
        }
        if self.fingerprint != self.settings.fingerprint() {
            return Err("its settings do not match their fingerprint: the file was edited".into());
        }
        for st in &self.states {
            let key = st.key().ok_or_else(|| {
                format!("state {}: `{}` is not a content hash", st.state, st.hash)
            })?;
            if !self.shard.holds(&key) {
                return Err(format!(
                    "state {} does not belong to shard {}",
                    st.state, self.shard
                ));
            }
        }
        Ok(())
    }
}

/// What the parts of one run hold, checked to make one whole: the outcomes
/// a merge uses in place of running the checker.
#[derive(Debug, Clone)]
pub struct Known {
    /// Shard 1's pre-check outcome.
    pub precheck: Option<Outcome>,
    /// Shard 1's nothing-lost outcome.
    pub all_applied: Option<Outcome>,
    /// The first shard (in order) whose checker could not be run.
    pub cannot_run: Option<CannotRun>,
    /// Every state checked, by key.
    pub outcomes: Vec<(StateKey, Outcome)>,
    /// Distinct states of the exploration, as every part that explored
    /// says.
    pub distinct: usize,
    /// States the check budget left unchecked, summed over the shards.
    pub unchecked: usize,
    /// Seconds checking, summed over the shards.
    pub check_seconds: f64,
    /// Processes the checkers left running, summed over the shards.
    pub orphans_killed: usize,
}

impl Known {
    /// Checks that `parts` are every shard of one run of the trace with
    /// content id `trace_id` with these settings, each once, and collects
    /// their outcomes.
    pub fn of_parts(
        parts: &[ShardPart],
        trace_id: &str,
        settings: &Settings,
    ) -> Result<Known, PartError> {
        let Some(first) = parts.first() else {
            return mismatch("no part to merge".into());
        };
        let count = first.shard.count;
        let mut by_index: Vec<Option<&ShardPart>> = vec![None; count];
        for p in parts {
            p.shard.validate().map_err(PartError::Mismatch)?;
            if p.trace_id != trace_id {
                return mismatch(format!(
                    "{} comes from another recording (trace id {}, not {trace_id}): every part must check the same trace",
                    p.label(), p.trace_id
                ));
            }
            if let Some(d) = p.settings.difference(&first.settings) {
                return mismatch(format!(
                    "{} was made with other settings than {} ({d}; fingerprint {}, not {}): every shard must run with the same settings",
                    p.label(), first.label(), p.fingerprint, first.fingerprint
                ));
            }
            if p.shard.count != count {
                return mismatch(format!(
                    "{} and {} split the run differently ({} and {count} shards)",
                    p.label(),
                    first.label(),
                    p.shard.count
                ));
            }
            let slot = &mut by_index[p.shard.index - 1];
            if slot.is_some() {
                return mismatch(format!(
                    "shard {} is given twice: {} and {}",
                    p.shard,
                    slot.map(ShardPart::label).unwrap_or_default(),
                    p.label()
                ));
            }
            *slot = Some(p);
        }
        if let Some(d) = first.settings.difference(settings) {
            return mismatch(format!(
                "the parts were made with other settings than this merge's ({d}; fingerprint {}, not {})",
                first.fingerprint,
                settings.fingerprint()
            ));
        }
        let missing: Vec<String> = (1..=count)
            .filter(|i| by_index[i - 1].is_none())
            .map(|i| format!("{i}/{count}"))
            .collect();
        if !missing.is_empty() {
            return mismatch(format!(
                "missing shard{} {}: merge needs every part of the run (given: {})",
                if missing.len() == 1 { "" } else { "s" },
                missing.join(", "),
                parts
                    .iter()
                    .map(ShardPart::label)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        // Shards that explored (the others stopped before) agree on what.
        let explored: Vec<&ShardPart> = parts.iter().filter(|p| p.distinct > 0).collect();
        if let Some(a) = explored.iter().find(|p| p.distinct != explored[0].distinct) {
            return mismatch(format!(
                "{} explored {} distinct states, {} {}: made by different blackout versions?",
                a.label(),
                a.distinct,
                explored[0].label(),
                explored[0].distinct
            ));
        }
        let ordered: Vec<&ShardPart> = by_index.into_iter().flatten().collect();
        Ok(Known::collect(&ordered))
    }

    /// The outcomes of parts already checked to make one whole, in shard
    /// order.
    fn collect(parts: &[&ShardPart]) -> Known {
        let one = parts[0];
        Known {
            precheck: one.precheck.clone(),
            all_applied: one.all_applied.clone(),
            cannot_run: parts.iter().find_map(|p| p.cannot_run.clone()),
            outcomes: parts
                .iter()
                .flat_map(|p| &p.states)
                .filter_map(|s| Some((s.key()?, s.outcome.clone())))
                .collect(),
            distinct: parts.iter().map(|p| p.distinct).max().unwrap_or(0),
            unchecked: parts.iter().map(|p| p.unchecked).sum(),
            check_seconds: parts.iter().map(|p| p.check_seconds).sum(),
            orphans_killed: parts.iter().map(|p| p.orphans_killed).sum(),
        }
    }
}

/// The error of parts that do not make one run.
fn mismatch<T>(message: String) -> Result<T, PartError> {
    Err(PartError::Mismatch(message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_split_keys_between_them() {
        assert_eq!(Shard::parse("2/3"), Ok(Shard { index: 2, count: 3 }));
        for bad in ["0/3", "4/3", "1/0", "x", "1/", "/3", "-1/3", "1/3/4"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
        // Every key falls in exactly one shard.
        for b in 0u8..=255 {
            let key = ([b; 32], 7);
            let n = (1..=3)
                .filter(|&k| Shard { index: k, count: 3 }.holds(&key))
                .count();
            assert_eq!(n, 1);
        }
    }

    #[test]
    fn settings_name_their_first_difference_block_settings_too() {
        let model = Settings {
            models: vec![Model::Posix],
            exhaustive_limit: 12,
            budget: 64,
            seed: 0,
            representatives: Representatives::Auto,
            sector: 512,
            ack_prefix: None,
            consistency_only: false,
            verify_fixes: 8,
            checker: "sh check.sh".into(),
            checker_kind: CheckerKind::Shell,
            timeout_seconds: 30.0,
            check_budget_seconds: Some(60.0),
            block: None,
        };
        let block = BlockSettings {
            fs: "ext4".into(),
            mount_opts: String::new(),
            max_subsets: 64,
            seed: 0,
            fsck: false,
        };
        let on_ext4 = Settings {
            block: Some(block.clone()),
            ..model.clone()
        };
        let seeded = Settings {
            block: Some(BlockSettings { seed: 3, ..block }),
            ..model.clone()
        };
        assert_eq!(model.difference(&model.clone()), None);
        assert_eq!(
            seeded.difference(&on_ext4).as_deref(),
            Some("block.seed 3, not 0")
        );
        // Either side without a file system's settings differs too.
        assert!(model
            .difference(&on_ext4)
            .unwrap()
            .starts_with("block null, not {"));
        assert!(on_ext4.difference(&model).unwrap().ends_with(", not null"));
        assert_ne!(on_ext4.fingerprint(), seeded.fingerprint());
    }

    #[test]
    fn garbage_is_refused_in_one_line() {
        for bad in [
            &b""[..],
            b"{",
            b"[]",
            b"{\"format\": \"blackout-part\", \"schema\": 99}",
            b"{\"format\": \"blackout-part\", \"schema\": 2, \"trace\": 3}",
            b"\xff\xfe",
        ] {
            let e = ShardPart::read(bad).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
        }
    }
}

/// What a shard's share of a real file system's states found (its
/// settings are the part's, [`Settings::block`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockPart {
    /// States of the whole run (every shard's).
    pub states: usize,
    /// States of this shard visited (mounted, or known by their image).
    pub visited: usize,
    /// Each distinct state after recovery this shard found.
    pub found: Vec<PartFound>,
    /// States that did not mount: index and why.
    pub unmounted: Vec<(usize, String)>,
    /// With fsck: states its checker complained about (index, how it
    /// exited, its line).
    pub fsck_said: Vec<(usize, String, String)>,
    /// Seconds per step, summed over this shard's workers.
    pub time: Timings,
    /// Seconds this shard spent checking.
    pub seconds: f64,
}

/// One distinct state after recovery.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartFound {
    /// Its key (files and promises), 64 hex digits.
    pub key: String,
    /// The first state, in enumeration order, that recovered to it.
    pub first: usize,
    /// How many of this shard's states did.
    pub count: usize,
    /// The checker's outcome (`None`: stopped by the check budget).
    pub outcome: Option<Outcome>,
    /// For a failure: its files, path (bytes) and what each is.
    pub files: Option<Vec<(Vec<u8>, Node)>>,
}
