//! `blackout soak --node`: a cluster soaked, each node a service on a live
//! mount of its own, crashed again and again, together or a few at a time.
//!
//! Every node has its own backing directory, live mount and soak directory;
//! the nodes start in order, each polled with the readiness probe. One
//! client drives the cluster and prints promises; at a seeded moment it is
//! killed (so nothing acknowledged after the fault counts), then a fault
//! picked from the `faults` list with the seed strikes:
//!
//! - `all`: the power fails on every node at once (a correlated crash:
//!   every mount is powered off before any is crashed);
//! - `one`: the power fails on one node, picked by the seed;
//! - `minority`: on fewer than half the nodes (at least one);
//! - `majority`: on more than half;
//! - `each`: the power fails on every node in turn, in start order: each
//!   node starts again and is ready before the next loses power (a rolling
//!   outage);
//! - `kill`: one node's processes are killed, the power stays on (what
//!   they wrote and never synced stays in the page cache, pending).
//!
//! Each node that lost power keeps what the crash spec says of what was
//! pending on its mount (its own seed), as `fs crash` does; the nodes that
//! lost power or were killed start again in order on what their disks kept,
//! the others keep running, and once every node is ready the checker is
//! asked whether every promise made so far still holds. A node that does
//! not become ready again is the verdict: the cluster did not recover.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::faults::{CrashReport, CrashSpec};
use crate::mount::{LiveMount, Victims};
use crate::pending::Rng;

use crate::soak::{
    kill_service, run_to_end, spawn_client, start_until_ready, stop_client, tail, with_promises,
    NotReady, SoakError, Soaking,
};

/// A node: its name (letters, digits and `_`; the environment names it
/// upper-cased) and its service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// `primary`, `n1`, ...
    pub name: String,
    /// A shell command, run on the node's mount; started again after each
    /// fault that struck it.
    pub service: String,
}

impl Node {
    /// Parses `NAME=SERVICE`.
    ///
    /// # Errors
    ///
    /// No `=`, an empty service, or a name that is not letters, digits and
    /// `_` starting with a letter.
    ///
    /// ```
    /// use blackout_live::cluster::Node;
    /// let n = Node::parse("primary=redis-server redis.conf").unwrap();
    /// assert_eq!((n.name.as_str(), n.service.as_str()), ("primary", "redis-server redis.conf"));
    /// assert!(Node::parse("redis-server").is_err());
    /// assert!(Node::parse("a-b=x").is_err());
    /// ```
    pub fn parse(spec: &str) -> Result<Node, String> {
        let bad = |why: &str| format!("--node `{spec}`: {why}");
        let Some((name, service)) = spec.split_once('=') else {
            return Err(bad("expected NAME=SERVICE"));
        };
        let mut chars = name.chars();
        let named = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !named {
            return Err(bad(
                "NAME must be letters, digits and _, starting with a letter",
            ));
        }
        if service.trim().is_empty() {
            return Err(bad("no SERVICE after NAME="));
        }
        Ok(Node {
            name: name.to_string(),
            service: service.to_string(),
        })
    }

    /// The suffix of its variables (`BLACKOUT_MOUNT_PRIMARY`).
    fn key(&self) -> String {
        self.name.to_ascii_uppercase()
    }
}

/// What strikes the cluster at a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The power fails on every node at once.
    All,
    /// On one node.
    One,
    /// On fewer than half the nodes (at least one).
    Minority,
    /// On more than half.
    Majority,
    /// On every node in turn, each started again before the next.
    Each,
    /// One node's processes are killed; the power stays on.
    Kill,
}

impl Fault {
    /// Every fault, in the order of `--faults`' help.
    pub const ALL: [Fault; 6] = [
        Fault::All,
        Fault::One,
        Fault::Minority,
        Fault::Majority,
        Fault::Each,
        Fault::Kill,
    ];

    /// Its name in `--faults`.
    pub fn name(self) -> &'static str {
        match self {
            Fault::All => "all",
            Fault::One => "one",
            Fault::Minority => "minority",
            Fault::Majority => "majority",
            Fault::Each => "each",
            Fault::Kill => "kill",
        }
    }

    /// Parses a comma-separated list (`all,one`).
    ///
    /// # Errors
    ///
    /// An unknown name, or an empty list.
    ///
    /// ```
    /// use blackout_live::cluster::Fault;
    /// assert_eq!(Fault::parse_list("all,one").unwrap(), [Fault::All, Fault::One]);
    /// assert!(Fault::parse_list("al").is_err());
    /// ```
    pub fn parse_list(list: &str) -> Result<Vec<Fault>, String> {
        let faults = list
            .split(',')
            .map(|w| {
                Fault::ALL
                    .into_iter()
                    .find(|f| f.name() == w.trim())
                    .ok_or_else(|| {
                        let names: Vec<_> = Fault::ALL.iter().map(|f| f.name()).collect();
                        format!(
                            "--faults `{list}`: unknown fault `{w}` (one of {})",
                            names.join(", ")
                        )
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(faults)
    }

    /// Whether the power fails (else processes are killed).
    pub fn power(self) -> bool {
        self != Fault::Kill
    }

    /// The nodes it strikes out of `n`, in start order, picked by `rng`.
    fn pick(self, n: usize, rng: &mut Rng) -> Vec<usize> {
        let k = match self {
            Fault::All | Fault::Each => n,
            Fault::One | Fault::Kill => 1,
            Fault::Minority => ((n - 1) / 2).max(1),
            Fault::Majority => n / 2 + 1,
        }
        .min(n);
        let mut order: Vec<usize> = (0..n).collect();
        for i in 0..k {
            let j = i + rng.below((n - i) as u64) as usize;
            order.swap(i, j);
        }
        let mut picked = order[..k].to_vec();
        picked.sort_unstable();
        picked
    }
}

/// What a cluster soak runs, and how.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// The nodes, in start order.
    pub nodes: Vec<Node>,
    /// The faults picked from, with the seed.
    pub faults: Vec<Fault>,
    /// The client and the checker (once for the cluster), setup and
    /// readiness (per node), the crashes.
    pub soaking: Soaking,
}

/// A node that lost power, and what its crash kept.
#[derive(Debug, Clone)]
pub struct NodeCrash {
    /// The node.
    pub node: String,
    /// What its crash dropped, kept and tore.
    pub report: CrashReport,
}

/// A fault that struck the cluster.
#[derive(Debug, Clone)]
pub struct Struck {
    /// Which fault.
    pub fault: Fault,
    /// How long the client ran before it.
    pub after: Duration,
    /// The nodes that lost power, in start order (none for `kill`).
    pub lost_power: Vec<NodeCrash>,
    /// The nodes whose processes were killed, the power on.
    pub killed: Vec<String>,
}

impl Struck {
    /// In a few words: `all: a, b lost power`, `kill: a's processes killed`.
    pub fn words(&self) -> String {
        if self.fault.power() {
            let names: Vec<&str> = self.lost_power.iter().map(|c| c.node.as_str()).collect();
            let turn = if self.fault == Fault::Each {
                " in turn"
            } else {
                ""
            };
            format!(
                "{}: {} lost power{turn}",
                self.fault.name(),
                names.join(", ")
            )
        } else {
            format!(
                "{}: {}'s processes killed",
                self.fault.name(),
                self.killed.join(", ")
            )
        }
    }

    /// Ops dropped and torn on every node.
    pub fn dropped(&self) -> usize {
        self.lost_power
            .iter()
            .map(|c| c.report.dropped.len() + c.report.torn.len())
            .sum()
    }
}

/// Why a cluster soak stopped early.
#[derive(Debug, Clone)]
pub struct ClusterViolation {
    /// The fault after which it broke (1-based).
    pub crash: u32,
    /// The checker's reason, or which node did not come back (one line).
    pub reason: String,
    /// The end of the log of a node that did not come back.
    pub log_tail: String,
    /// The fault.
    pub struck: Struck,
    /// Whether every node came back (the checker then found a promise
    /// broken).
    pub came_back: bool,
}

/// What a cluster soak did.
#[derive(Debug, Clone, Default)]
pub struct ClusterReport {
    /// Faults made.
    pub crashes: u32,
    /// Promises the client made in all.
    pub promises: usize,
    /// Ops the crashes dropped in all, on every node.
    pub dropped: usize,
    /// How many times each fault struck, in `Fault::ALL` order.
    pub counts: [u32; 6],
    /// The first broken promise, or the cluster not recovering.
    pub violation: Option<ClusterViolation>,
}

/// A node under way: its directories, its mount and its service.
struct Running {
    node: Node,
    mount_dir: PathBuf,
    backing: PathBuf,
    work: PathBuf,
    mount: Option<LiveMount>,
    service: Option<Child>,
}

/// The cluster under way; dropping it kills every service, unmounts every
/// node and removes the scratch, on every path.
struct Cluster<'a> {
    cfg: &'a ClusterConfig,
    cancel: &'a AtomicBool,
    root: PathBuf,
    /// The client's and checker's directory (off every mount).
    work: PathBuf,
    nodes: Vec<Running>,
    /// The last fault, for the commands started after it.
    last: Option<Struck>,
}

impl Drop for Cluster<'_> {
    fn drop(&mut self) {
        for n in &mut self.nodes {
            if let Some(mut s) = n.service.take() {
                kill_service(&mut s);
            }
        }
        for n in &mut self.nodes {
            if let Some(m) = n.mount.take() {
                let _ = m.unmount(false);
            }
        }
        let _ = blackout_sys::scratch::remove_tree(&self.root);
    }
}

/// The seed of the faults' choices (which fault, which nodes), apart from
/// the moments'.
const FAULT_SEED: u64 = 0xc105_7e25_eed0_0001;

/// Runs the cluster soak: setup per node (then every mount synced), every
/// node started in order, then `crashes` times: the client run for a
/// seeded time and killed, a seeded fault, the nodes it struck started
/// again (for `each`, one at a time), the checker. Stops at
/// the first broken promise or the first node not ready again. `progress`
/// hears one line per fault.
///
/// # Errors
///
/// A mount, setup, a node that never became ready before the first fault,
/// a stop signal.
pub fn soak_cluster(
    cfg: &ClusterConfig,
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(&str),
) -> Result<ClusterReport, SoakError> {
    let mut cluster = Cluster::make(cfg, cancel)?;
    cluster.soak(progress)
}

impl<'a> Cluster<'a> {
    fn make(cfg: &'a ClusterConfig, cancel: &'a AtomicBool) -> Result<Cluster<'a>, SoakError> {
        let root = tempfile::Builder::new()
            .prefix("blackout-soak-")
            .tempdir_in(&cfg.soaking.scratch_parent)?
            .keep();
        let mut cluster = Cluster {
            cfg,
            cancel,
            work: root.join("work"),
            root,
            nodes: Vec::new(),
            last: None,
        };
        blackout_sys::scratch::mark_owned(&cluster.root)?;
        // The services may run as their own users (a database refusing root).
        open_dir(&cluster.root, false)?;
        open_dir(&cluster.work, true)?;
        for node in &cfg.nodes {
            let dir = cluster.root.join("nodes").join(&node.name);
            std::fs::create_dir_all(&dir)?;
            let n = Running {
                node: node.clone(),
                mount_dir: dir.join("mount"),
                backing: dir.join("backing"),
                work: dir.join("work"),
                mount: None,
                service: None,
            };
            open_dir(&n.mount_dir, true)?;
            open_dir(&n.work, true)?;
            match &cfg.soaking.backing {
                Some(b) => crate::tree::copy_tree(b, &n.backing)?,
                None => std::fs::create_dir(&n.backing)?,
            }
            open_dir(&n.backing, false)?;
            cluster.nodes.push(n);
        }
        for i in 0..cluster.nodes.len() {
            let n = &cluster.nodes[i];
            let m = LiveMount::mount(&n.mount_dir, &n.backing, &cluster.root)?;
            cluster.nodes[i].mount = Some(m);
        }
        Ok(cluster)
    }

    /// A shell command with the cluster's variables: on node `node`'s
    /// mount with its own, else in the client's directory.
    fn shell(&self, cmd: &str, node: Option<usize>, crash: u32) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(cmd);
        let names: Vec<&str> = self.nodes.iter().map(|n| n.node.name.as_str()).collect();
        c.env("BLACKOUT_NODES", names.join(" "))
            .env("BLACKOUT_CRASH", crash.to_string());
        for n in &self.nodes {
            c.env(format!("BLACKOUT_MOUNT_{}", n.node.key()), &n.mount_dir)
                .env(format!("BLACKOUT_SOAK_DIR_{}", n.node.key()), &n.work);
        }
        let (lost, killed) = match &self.last {
            Some(s) => (
                s.lost_power.iter().map(|c| c.node.clone()).collect(),
                s.killed.clone(),
            ),
            None => (Vec::new(), Vec::new()),
        };
        c.env("BLACKOUT_LOST_POWER", lost.join(" "))
            .env("BLACKOUT_KILLED", killed.join(" "));
        match node {
            Some(i) => {
                let n = &self.nodes[i];
                c.current_dir(&n.mount_dir)
                    .env("BLACKOUT_NODE", &n.node.name)
                    .env("BLACKOUT_MOUNT", &n.mount_dir)
                    .env("BLACKOUT_SOAK_DIR", &n.work);
            }
            None => {
                c.current_dir(&self.work)
                    .env_remove("BLACKOUT_NODE")
                    .env_remove("BLACKOUT_MOUNT")
                    .env("BLACKOUT_SOAK_DIR", &self.work);
            }
        }
        c.stdin(Stdio::null()).process_group(0);
        c
    }

    fn mount(&self, i: usize) -> &LiveMount {
        self.nodes[i].mount.as_ref().expect("mounted")
    }

    fn mount_mut(&mut self, i: usize) -> &mut LiveMount {
        self.nodes[i].mount.as_mut().expect("mounted")
    }

    /// Starts node `i` and waits until it is ready: `Err` with why not
    /// (one line) and the end of its log.
    fn start(&mut self, i: usize, crash: u32) -> Result<Result<(), (String, String)>, SoakError> {
        let cfg = self.cfg;
        let log_path = self.nodes[i].work.join("service.log");
        let mut cmd = self.shell(&self.nodes[i].node.service, Some(i), crash);
        cmd.stdout(append(&log_path)?).stderr(append(&log_path)?);
        let started = {
            let this = &*self;
            let ready = cfg
                .soaking
                .ready
                .as_ref()
                .map(|r| move || this.shell(r, Some(i), crash));
            let ready = ready.as_ref().map(|r| r as &dyn Fn() -> Command);
            start_until_ready(cmd, ready, cfg.soaking.timeout, self.cancel)?
        };
        let name = &self.nodes[i].node.name;
        let why = match started {
            Ok(child) => {
                self.nodes[i].service = Some(child);
                return Ok(Ok(()));
            }
            Err(NotReady::Exited(s) | NotReady::ExitedBeforeReady(s)) => {
                format!("node {name} exited ({s}) before it was ready")
            }
            Err(NotReady::TimedOut) => format!(
                "node {name} not ready after {} s",
                cfg.soaking.timeout.as_secs_f64()
            ),
        };
        Ok(Err((why, tail(&log_path))))
    }

    fn soak(&mut self, progress: &mut dyn FnMut(&str)) -> Result<ClusterReport, SoakError> {
        let cfg = self.cfg;
        if let Some(setup) = &cfg.soaking.setup {
            for i in 0..self.nodes.len() {
                let cmd = self.shell(setup, Some(i), 0);
                if let Err(why) = run_to_end(cmd, cfg.soaking.timeout, self.cancel)? {
                    let name = &self.nodes[i].node.name;
                    return Err(SoakError::Setup(format!(
                        "--setup failed on node {name}: {why}"
                    )));
                }
            }
            // A node's setup may prepare the others' mounts too (a cluster
            // started once): every mount is synced after the last.
            for i in 0..self.nodes.len() {
                self.mount(i).sync()?;
            }
        }
        for i in 0..self.nodes.len() {
            if let Err((why, log)) = self.start(i, 0)? {
                return Err(SoakError::Setup(format!("{why}: {log}")));
            }
        }
        let mut rng = Rng::new(cfg.soaking.seed);
        let mut fault_rng = Rng::new(cfg.soaking.seed ^ FAULT_SEED);
        let mut report = ClusterReport::default();
        let mut promises: Vec<String> = Vec::new();
        for crash in 1..=cfg.soaking.crashes {
            let span = cfg
                .soaking
                .run_max
                .saturating_sub(cfg.soaking.run_min)
                .as_millis() as u64;
            let wait = cfg.soaking.run_min + Duration::from_millis(rng.below(span + 1));
            promises.extend(self.run_client(crash, wait)?);
            let fault = cfg.faults[fault_rng.below(cfg.faults.len() as u64) as usize];
            let picked = fault.pick(self.nodes.len(), &mut fault_rng);
            // `each` strikes one node at a time, the next once it is back.
            let turns: Vec<Vec<usize>> = if fault == Fault::Each {
                picked.iter().map(|&i| vec![i]).collect()
            } else {
                vec![picked]
            };
            let mut violation = None;
            for (t, turn) in turns.iter().enumerate() {
                let struck = self.strike(crash, fault, turn, wait)?;
                match self.last.as_mut() {
                    // A later turn of `each`: the same fault, more nodes.
                    Some(last) if t > 0 => last.lost_power.extend(struck.lost_power),
                    _ => self.last = Some(struck),
                }
                violation = self.restart(crash, turn)?;
                if violation.is_some() {
                    break;
                }
            }
            let struck = self.last.clone().expect("struck");
            report.crashes = crash;
            report.promises = promises.len();
            report.dropped += struck.dropped();
            report.counts[Fault::ALL.iter().position(|f| *f == fault).unwrap_or(0)] += 1;
            progress(&progress_line(
                crash,
                cfg.soaking.crashes,
                promises.len(),
                &struck,
            ));
            if violation.is_none() {
                violation = self.judge(crash, &promises)?;
            }
            if let Some(v) = violation {
                report.violation = Some(v);
                return Ok(report);
            }
        }
        Ok(report)
    }

    /// Runs the client for `wait` and kills it: its promises.
    fn run_client(&mut self, crash: u32, wait: Duration) -> Result<Vec<String>, SoakError> {
        let cmd = self.shell(&self.cfg.soaking.client, None, crash);
        let client = spawn_client(
            cmd,
            self.cfg.soaking.ack_prefix.as_deref(),
            append(&self.work.join("client.log"))?,
        )?;
        let started = Instant::now();
        while started.elapsed() < wait {
            if self.cancel.load(Ordering::SeqCst) {
                stop_client(client);
                return Err(SoakError::Interrupted);
            }
            std::thread::sleep(Duration::from_millis(10).min(wait));
        }
        Ok(stop_client(client))
    }

    /// The fault on the `picked` nodes: each powered off (all of them
    /// before any is crashed) and crashed with its service's processes
    /// as the victims, or, for `kill`, its processes killed.
    fn strike(
        &mut self,
        crash: u32,
        fault: Fault,
        picked: &[usize],
        after: Duration,
    ) -> Result<Struck, SoakError> {
        let mut struck = Struck {
            fault,
            after,
            lost_power: Vec::new(),
            killed: Vec::new(),
        };
        if fault.power() {
            for &i in picked {
                self.mount(i).power_off();
            }
        }
        for &i in picked {
            let Some(mut service) = self.nodes[i].service.take() else {
                continue;
            };
            let victims = Victims::Group(service.id() as i32);
            let name = self.nodes[i].node.name.clone();
            if fault.power() {
                let spec = CrashSpec {
                    seed: node_seed(self.cfg.soaking.seed, crash, i),
                    ..self.cfg.soaking.spec
                };
                let report = self.mount_mut(i).crash(&spec, &victims)?;
                struck.lost_power.push(NodeCrash { node: name, report });
            } else {
                victims.kill()?;
                struck.killed.push(name);
            }
            kill_service(&mut service);
        }
        Ok(struck)
    }

    /// A violation after crash `crash`'s fault (the last struck).
    fn violation(
        &self,
        crash: u32,
        reason: String,
        log_tail: String,
        came_back: bool,
    ) -> ClusterViolation {
        ClusterViolation {
            crash,
            reason,
            log_tail,
            struck: self.last.clone().expect("struck"),
            came_back,
        }
    }

    /// Starts the `picked` nodes again in order: the cluster not
    /// recovering, if a node is not ready again.
    fn restart(
        &mut self,
        crash: u32,
        picked: &[usize],
    ) -> Result<Option<ClusterViolation>, SoakError> {
        for &i in picked {
            if let Err((why, log)) = self.start(i, crash)? {
                let reason = format!("the cluster did not recover: {why}");
                return Ok(Some(self.violation(crash, reason, log, false)));
            }
        }
        Ok(None)
    }

    /// Once every node is ready again, runs the checker: the violation,
    /// if any (a node that exited, or a broken promise).
    fn judge(
        &mut self,
        crash: u32,
        promises: &[String],
    ) -> Result<Option<ClusterViolation>, SoakError> {
        for i in 0..self.nodes.len() {
            let exited = match self.nodes[i].service.as_mut() {
                Some(s) => s.try_wait()?,
                None => None,
            };
            if let Some(s) = exited {
                let n = &self.nodes[i];
                let reason = format!(
                    "the cluster did not recover: node {} exited ({s}) after the fault",
                    n.node.name
                );
                let log = tail(&n.work.join("service.log"));
                return Ok(Some(self.violation(crash, reason, log, false)));
            }
        }
        let mut cmd = self.shell(&self.cfg.soaking.checker, None, crash);
        with_promises(&mut cmd, &self.work.join("acks"), promises)?;
        match run_to_end(cmd, self.cfg.soaking.timeout, self.cancel)? {
            Ok(_) => Ok(None),
            Err(why) => Ok(Some(self.violation(crash, why, String::new(), true))),
        }
    }
}

/// The seed of what crash `crash` keeps on node `i`.
fn node_seed(seed: u64, crash: u32, i: usize) -> u64 {
    seed.wrapping_mul(1_000_003)
        .wrapping_add(u64::from(crash))
        .wrapping_mul(1_000_033)
        .wrapping_add(i as u64)
}

/// A directory made (unless it exists) and opened to every user.
fn open_dir(dir: &Path, make: bool) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if make {
        std::fs::create_dir(dir)?;
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777))
}

fn append(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
}

/// `crash 3/20 after 512 ms (one: b lost power): 120 promises so far; b: 5
/// ops dropped, 0 kept, 0 torn`.
fn progress_line(crash: u32, crashes: u32, promises: usize, struck: &Struck) -> String {
    let mut line = format!(
        "crash {crash}/{crashes} after {} ms ({}): {promises} promises so far",
        struck.after.as_millis(),
        struck.words()
    );
    for c in &struck.lost_power {
        line.push_str(&format!(
            "; {}: {} ops dropped, {} kept, {} torn",
            c.node,
            c.report.dropped.len(),
            c.report.kept.len(),
            c.report.torn.len()
        ));
    }
    line
}

/// The ops one node's crash dropped or tore, one line each (runs of one
/// call on one file folded), for people.
pub fn node_dropped_lines(c: &NodeCrash) -> Vec<String> {
    let mut out: Vec<String> = crate::pending::summarize(&c.report.dropped)
        .into_iter()
        .map(|l| format!("dropped {l}"))
        .collect();
    out.extend(
        c.report
            .torn_lines()
            .into_iter()
            .map(|l| format!("torn {l}")),
    );
    out
}
