//! `blackout soak`'s flags, for one service or a cluster of nodes, and the
//! examples its `--help` ends with.

use std::path::PathBuf;

use clap::Args;

use blackout::live::faults::CrashSpec;
use blackout::live::pending::Keep;
use blackout::live::soak::Soaking;
use blackout::sys::scratch::default_scratch_parent;

use super::{parse_budget, KeepArg};

pub(crate) const SOAK_EXAMPLES: &str = "\
Examples:
  A key-value server, crashed 100 times while a client writes; the client
  prints `ok KEY` for each acknowledged write, the checker reads them back:
    blackout soak --crashes 100 --seed 1 --ack-prefix ok \\
      --ready 'kv-cli ping' --client 'kv-load' --checker 'kv-check' -- kv-server --dir .
  The same, a sync of data.log failing with EIO before some of the crashes:
    blackout soak --crashes 100 --seed 1 --ack-prefix ok --fail-syncs \\
      --fail-at 'fdatasync:data.log' --client 'kv-load' --checker 'kv-check' -- kv-server
  The service, client and checker run with BLACKOUT_MOUNT (the live mount,
  also their working directory), BLACKOUT_SOAK_DIR (a directory off the
  mount, for sockets and logs) and BLACKOUT_CRASH (the crash number); the
  checker gets the promises in BLACKOUT_ACKED and BLACKOUT_ACKS_FILE.
  A Redis primary and replica, the power failing on both at once or on one:
    blackout soak --crashes 20 --seed 1 --ack-prefix ok --faults all,one \\
      --node a='redis.sh serve' --node b='redis.sh serve' --setup 'redis.sh setup' \\
      --ready 'redis.sh ready' --client 'redis.sh load' --checker 'redis.sh check'
  Each node runs on a mount of its own, with BLACKOUT_NODE, BLACKOUT_MOUNT and
  BLACKOUT_SOAK_DIR its own; every command also gets BLACKOUT_NODES (the
  names in start order), BLACKOUT_MOUNT_<NAME> and BLACKOUT_SOAK_DIR_<NAME>
  per node (NAME upper-cased), BLACKOUT_LOST_POWER and BLACKOUT_KILLED (the
  nodes the last fault struck); --setup runs once per node before any starts,
  --ready once per node start.
";

/// `blackout soak`.
#[derive(Args)]
pub(crate) struct SoakArgs {
    /// The client: drives the service and prints a promise per line.
    #[arg(long, value_name = "CMD")]
    pub(crate) client: String,
    /// After each restart: exits 0 when every promise still holds.
    #[arg(long, value_name = "CMD")]
    pub(crate) checker: String,
    /// Run once on the mount before the service first starts (made durable).
    #[arg(long, value_name = "CMD")]
    pub(crate) setup: Option<String>,
    /// Polled until it exits 0 once the service started (else a second's wait).
    #[arg(long, value_name = "CMD")]
    pub(crate) ready: Option<String>,
    /// The initial durable state (copied, never changed; default: empty).
    #[arg(long, value_name = "DIR")]
    pub(crate) backing: Option<PathBuf>,
    /// How many crashes.
    #[arg(long, default_value_t = 100)]
    pub(crate) crashes: u32,
    /// The seed of the crash moments and of what each crash keeps.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// What each crash keeps of what is pending.
    #[arg(long, value_enum, default_value = "none")]
    pub(crate) keep: KeepArg,
    /// Writes that reach the disk may be torn at sector boundaries.
    #[arg(long)]
    pub(crate) tear: bool,
    /// Mix sync failures with the crashes: before a seeded half of them, the
    /// next sync of the service (at a seeded moment) fails with EIO and what
    /// it covered is never durable.
    #[arg(long)]
    pub(crate) fail_syncs: bool,
    /// With --fail-syncs: which syncs may fail, CALL:GLOB (`fsync:pg/base/*`;
    /// the call fsync, fdatasync, fsyncdir or *).
    #[arg(
        long,
        value_name = "CALL:GLOB",
        requires = "fail_syncs",
        default_value = "*"
    )]
    pub(crate) fail_at: String,
    /// The client runs at least this long before a crash.
    #[arg(long, value_name = "DURATION", default_value = "200ms", value_parser = parse_budget)]
    pub(crate) run_min: std::time::Duration,
    /// ... and at most this long.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_budget)]
    pub(crate) run_max: std::time::Duration,
    /// Only the client's lines starting with PREFIX are promises.
    #[arg(long, value_name = "PREFIX")]
    pub(crate) ack_prefix: Option<String>,
    /// How long setup, readiness and each checker run may take.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_budget)]
    pub(crate) timeout: std::time::Duration,
    /// A node of a cluster, NAME=SERVICE (repeated; the nodes start in
    /// this order), each on a live mount of its own.
    #[arg(long, value_name = "NAME=SERVICE", conflicts_with_all = ["service", "fail_syncs"])]
    pub(crate) node: Vec<String>,
    /// With --node: the faults a seed picks from at each crash, comma-separated:
    /// all (the power fails on every node at once), one, minority, majority
    /// (on that many nodes), each (on every node in turn, each back before
    /// the next), kill (one node's processes killed, the power on)
    /// [default: all,one].
    #[arg(long, value_name = "LIST")]
    pub(crate) faults: Option<String>,
    /// The service, started on the mount (its working directory), again after each crash.
    #[arg(last = true, required_unless_present = "node", value_name = "SERVICE")]
    pub(crate) service: Vec<String>,
}

impl SoakArgs {
    /// What a soak of one service and of a cluster take alike from the flags.
    pub(crate) fn soaking(self) -> Soaking {
        Soaking {
            client: self.client,
            checker: self.checker,
            setup: self.setup,
            ready: self.ready,
            backing: self.backing,
            crashes: self.crashes,
            seed: self.seed,
            spec: CrashSpec {
                keep: Keep::from(self.keep),
                seed: self.seed,
                tear: self.tear,
            },
            run_min: self.run_min,
            run_max: self.run_max,
            ack_prefix: self.ack_prefix,
            timeout: self.timeout,
            scratch_parent: default_scratch_parent(),
        }
    }
}
