//! The HTML report: one self-contained page (inline CSS, an inline SVG, a
//! few lines of inline script) that needs no network and asks for none.
//!
//! The page shows the verdict and the models, then the **op timeline**:
//! every op on its file's lane (data ops and fsyncs on the file's inode,
//! entry ops — create, unlink, rename — on their directory's, whose fsync
//! covers them; what was printed on a standard-output lane), syncs as
//! barriers across the lanes they cover (`sync` across all), ops no sync
//! ever covers drawn hollow, promises as flags, and under the lanes one row
//! of crash points per model, red where a rejected state was found, amber
//! where a check did not finish. Then, for each cause (the first
//! [`CAUSES_SHOWN`] per model unless every cause was asked for), its
//! simplest state as a table of the ops from the first one it lost or tore
//! up to the crash, each marked lost, torn, kept or printed, with the
//! checker's reason and the verified fix; pointing at a cause highlights
//! its ops on the timeline.
//!
//! Everything from the trace and the checker (paths, promises, reasons,
//! the command) is hostile input: every piece of it goes through
//! [`html_escape`], and the page's Content-Security-Policy allows no
//! network at all and no script but its own (by hash), so an escaping
//! mistake still could not load or run anything. The timeline draws at
//! most [`TIMELINE_OPS_MAX`] ops on at most [`TIMELINE_LANES_MAX`] lanes:
//! on a longer trace its first [`HEAD_OPS`] ops and each cause's windows
//! with [`WINDOW_CONTEXT_OPS`] ops around them, each run between folded
//! into one mark that says how many ops of which kinds it holds, and it
//! says so. Each cause's windows are bands on the timeline that its
//! section links to.
//!
//! A block run (`--backend block`) adds a section for the real file system
//! after the posix report (`<section id="block">`): its verdict and
//! reason, a table of the failing distinct states after recovery (when
//! power was lost and after what, the checker's reason, the last calls,
//! the posix state holding the same files and its cause), then the states
//! that could not be judged, the coverage, fsck's summary, the
//! differential check and `--repeat`'s line (or, when the file system was
//! not checked, why), every piece escaped like the rest.

use std::collections::HashMap;
use std::fmt::Write as _;

use blackout_analysis::block::{BlockReport, BlockSide};
use blackout_analysis::failsyncs::FailSyncsReport;
use blackout_analysis::report::{CauseGroup, ModelReport, RunReport, Verdict};
use blackout_analysis::syncs::SyncsReport;
use blackout_explore::model::{for_people, Model};
use blackout_oplog::naming::{describe_unit, DirPaths};
use blackout_oplog::ops::{escape_controls, synced_by, Ino, InodeKind, OpKind, Part, Unit};
use blackout_oplog::promises::Outputs;
use blackout_oplog::store::changes;
use blackout_oplog::trace::Trace;

use crate::block::{
    coverage_text as block_coverage_text, fsck_text, misses_text, not_checked_text, state_words,
};
use crate::syncs::{
    failed_sync_words, sync_words, syncs_heading, syncs_summary, FAILED_SYNCS_HEADING,
};
use crate::text::{
    all_applied_text, cause_details, coverage_text, fix_set_text, precheck_text, reproduce_command,
    simplest_text, workload_name, Detail, CAUSES_SHOWN,
};
use crate::{ExportContext, Exporter};

/// Ops the timeline draws; a longer trace shows its first ones and each
/// cause's windows in context, the runs between folded.
pub const TIMELINE_OPS_MAX: usize = 4000;
/// File lanes the timeline draws; ops on further files share one lane.
pub const TIMELINE_LANES_MAX: usize = 40;
/// Ops a cause's state table lists before it keeps only the lost, torn,
/// sync and printing ones.
pub const STATE_ROWS_MAX: usize = 40;

/// The HTML report ([`render`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct HtmlExporter;

impl Exporter for HtmlExporter {
    fn export(&self, report: &RunReport, cx: &ExportContext<'_>) -> Vec<u8> {
        render(report, cx).into_bytes()
    }
}

/// Text that reads as itself in HTML, in an element or a quoted attribute:
/// control characters escaped, `& < > " '` as character references.
///
/// ```
/// use blackout_export::html::html_escape;
/// assert_eq!(
///     html_escape("<img src=x onerror='a()'>&"),
///     "&lt;img src=x onerror=&#39;a()&#39;&gt;&amp;"
/// );
/// ```
pub fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in escape_controls(s).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The page's one script: pointing at a cause highlights its ops and its
/// crash point on the timeline; at the end it marks the page rendered
/// (`data-rendered` on `<body>`). Its hash is in [`SCRIPT_CSP_HASH`].
const SCRIPT: &str = r#"(function () {
  var timeline = document.getElementById("timeline");
  document.querySelectorAll("section.cause").forEach(function (s) {
    function mark(on) {
      s.getAttribute("data-ops").split(" ").forEach(function (i) {
        if (i === "") { return; }
        timeline.querySelectorAll('[data-op="' + i + '"]').forEach(function (e) {
          e.classList.toggle("hl", on);
        });
      });
      var crash = timeline.querySelector('.crash[data-model="' + s.getAttribute("data-model") +
        '"][data-crash="' + s.getAttribute("data-crash") + '"]');
      if (crash) { crash.classList.toggle("hl", on); }
    }
    s.addEventListener("mouseenter", function () { mark(true); });
    s.addEventListener("mouseleave", function () { mark(false); });
  });
  document.body.setAttribute("data-rendered", "yes");
})();"#;

/// `sha256-` and the base64 SHA-256 of [`SCRIPT`], which the page's
/// Content-Security-Policy allows by hash (recompute it when the script
/// changes: `printf %s "$SCRIPT" | openssl dgst -sha256 -binary | base64`;
/// a unit test checks it).
const SCRIPT_CSP_HASH: &str = "sha256-fWWdEAthpRZhlV6ZgHmiOsHyKT+xjBpsDAg/rZt4PLU=";

const STYLE: &str = r#"
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #1f2328; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 28px 0 8px; }
h3 { font-size: 15px; margin: 0 0 6px; }
code { font: 12.5px ui-monospace, monospace; background: #f3f4f6; padding: 1px 4px; border-radius: 4px; word-break: break-all; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.n { text-align: right; }
.verdict { font-weight: 700; padding: 1px 8px; border-radius: 4px; color: #fff; }
.v-pass { background: #1a7f37; } .v-fail { background: #cf222e; } .v-other { background: #9a6700; }
.reason { color: #57606a; margin: 0 0 12px; }
.scroll { overflow-x: auto; border: 1px solid #d0d7de; border-radius: 6px; padding: 6px 0; }
svg text { font: 11px ui-monospace, monospace; fill: #1f2328; }
svg .lane-line { stroke: #d0d7de; }
svg .lane-label { text-anchor: end; }
svg .axis { fill: #8c959f; text-anchor: middle; font-size: 9px; }
svg .op rect, svg .op circle { fill: #0969da; stroke: #0969da; stroke-width: 1.5; }
svg .op.entry circle { fill: #8250df; stroke: #8250df; }
svg .op.unsynced rect, svg .op.unsynced circle { fill: #fff; }
svg .op-label { font-size: 9px; text-anchor: middle; fill: #57606a; }
svg .barrier { stroke: #1a7f37; stroke-width: 4; }
svg .not-barrier { stroke: #cf222e; stroke-width: 2; stroke-dasharray: 3 3; }
svg .output circle { fill: #8c959f; }
svg .promise path { fill: #bf8700; }
svg .promise text { font-weight: 700; }
svg .crash { stroke: #fff; stroke-width: 1; }
svg .fold rect { fill: #f6f8fa; stroke: #d0d7de; } svg .fold text { fill: #57606a; text-anchor: middle; font-size: 14px; }
svg .window { fill: #cf222e; fill-opacity: 0.08; stroke: #cf222e; stroke-opacity: 0.5; stroke-dasharray: 3 2; }
svg .window:target { fill-opacity: 0.25; stroke-opacity: 1; }
svg .crash.pass { fill: #2da44e; } svg .crash.fail { fill: #cf222e; } svg .crash.error { fill: #bf8700; }
svg .hl rect, svg .hl circle, svg circle.hl { stroke: #ff8c00; stroke-width: 4; }
.legend > span { display: inline-block; margin-right: 14px; }
.cause { border: 1px solid #d0d7de; border-radius: 6px; padding: 12px 14px; margin: 14px 0; }
.cause:hover { border-color: #ff8c00; }
.kind { font-weight: 400; color: #57606a; font-size: 12px; }
tr.lost td.status, tr.torn td.status { color: #cf222e; font-weight: 700; }
tr.promise td.status { color: #9a6700; font-weight: 700; }
tr.sync td.status { color: #1a7f37; }
tr.crash td { background: #ffebe9; font-weight: 700; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 12px; margin: 10px 0 0; }
dt { font-weight: 700; } dd { margin: 0; }
.verified { color: #1a7f37; font-weight: 700; }
.note { color: #57606a; }
.block { border: 1px solid #d0d7de; border-radius: 6px; padding: 2px 14px 8px; margin: 14px 0; }
"#;

/// Which lane an op is drawn on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Lane {
    File(Ino),
    Other,
    Stdout,
}

/// The timeline's layout: lanes, where each op goes, the promises.
struct Timeline {
    /// What each column draws, left to right.
    cols: Vec<Col>,
    /// The column of each op drawn.
    col_of: HashMap<usize, usize>,
    /// Ops in the trace.
    ops: usize,
    lanes: Vec<(Lane, String)>,
    promises: HashMap<usize, Vec<String>>,
    col: usize,
}

/// A column of the timeline: one op, or a run of ops folded into one
/// mark (`from..to`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    Op(usize),
    Fold(usize, usize),
}

/// Ops drawn around each window of a cause, on either side, on a long
/// trace.
pub const WINDOW_CONTEXT_OPS: usize = 30;
/// Ops drawn from the start of a long trace.
pub const HEAD_OPS: usize = 200;

/// The ops a timeline draws: every op of a trace of at most
/// [`TIMELINE_OPS_MAX`]; of a longer one, its first [`HEAD_OPS`], then
/// each shown cause's windows with [`WINDOW_CONTEXT_OPS`] ops of context
/// on either side (causes in order, as many as fit), the rest folded.
fn drawn_ops(trace: &Trace, report: &RunReport, all_causes: bool) -> Vec<usize> {
    let n = trace.ops.len();
    if n <= TIMELINE_OPS_MAX {
        return (0..n).collect();
    }
    let mut want: std::collections::BTreeSet<usize> = (0..HEAD_OPS.min(n)).collect();
    'causes: for m in &report.models {
        let shown = if all_causes {
            m.causes.len()
        } else {
            m.causes.len().min(CAUSES_SHOWN)
        };
        for g in m.causes.iter().take(shown) {
            let windows = if g.windows.is_empty() {
                std::slice::from_ref(&g.window)
            } else {
                &g.windows[..]
            };
            for w in windows {
                // Around its crash points, and around the ops it blames
                // (which may lie far before them).
                let around = |a: usize, b: usize| {
                    a.saturating_sub(WINDOW_CONTEXT_OPS)..(b + WINDOW_CONTEXT_OPS).min(n)
                };
                let spans = [
                    around(w.crash_first.saturating_sub(1), w.crash_last),
                    around(w.op_first, w.op_first + 1),
                    around(w.op_last, w.op_last + 1),
                ];
                let more: std::collections::BTreeSet<usize> = spans
                    .into_iter()
                    .flatten()
                    .filter(|i| !want.contains(i))
                    .collect();
                if want.len() + more.len() > TIMELINE_OPS_MAX {
                    break 'causes;
                }
                want.extend(more);
            }
        }
    }
    want.into_iter().collect()
}

const LABEL_W: usize = 190;
const AXIS_H: usize = 22;
const LANE_H: usize = 44;
const ROW_H: usize = 24;

/// The inodes an op is drawn on: a sync's file, what any other op changes
/// (a data op's file, an entry op's directories); none for `sync`, which
/// spans them all.
fn op_inodes(kind: &OpKind) -> Vec<Ino> {
    match kind {
        OpKind::Fsync { .. }
        | OpKind::Fdatasync { .. }
        | OpKind::SyncFileRange { .. }
        | OpKind::FailedSync { .. } => kind.inode().into_iter().collect(),
        _ => changes(kind).into_iter().flatten().collect(),
    }
}

impl Timeline {
    fn new(trace: &Trace, outputs: &Outputs, drawn: &[usize]) -> Timeline {
        let mut cols = Vec::with_capacity(drawn.len() + 8);
        let mut col_of = HashMap::with_capacity(drawn.len());
        let mut next = 0;
        for &i in drawn {
            if i > next {
                cols.push(Col::Fold(next, i));
            }
            col_of.insert(i, cols.len());
            cols.push(Col::Op(i));
            next = i + 1;
        }
        if next < trace.ops.len() {
            cols.push(Col::Fold(next, trace.ops.len()));
        }
        let dirs = DirPaths::at(trace, trace.ops.len());
        let mut lanes: Vec<(Lane, String)> = Vec::new();
        let mut other = false;
        for &i in drawn {
            let op = &trace.ops[i];
            for ino in op_inodes(&op.kind) {
                if lanes.iter().any(|(l, _)| *l == Lane::File(ino)) {
                    continue;
                }
                if lanes.len() >= TIMELINE_LANES_MAX {
                    other = true;
                    continue;
                }
                let label = if trace.kind(ino) == InodeKind::Dir {
                    format!("{} (directory)", escape_controls(&dirs.dir(ino)))
                } else {
                    trace.show_path(&op.path)
                };
                lanes.push((Lane::File(ino), label));
            }
        }
        if other {
            lanes.push((Lane::Other, "other files".into()));
        }
        let printing = drawn
            .iter()
            .any(|&i| matches!(trace.ops[i].kind, OpKind::Output { .. }));
        if printing || lanes.is_empty() {
            lanes.push((Lane::Stdout, "standard output".into()));
        }
        let mut promises: HashMap<usize, Vec<String>> = HashMap::new();
        for (op, line) in outputs.each_promise() {
            promises
                .entry(op)
                .or_default()
                .push(String::from_utf8_lossy(line).into_owned());
        }
        let col = (1400 / cols.len().max(1)).clamp(10, 64);
        Timeline {
            cols,
            col_of,
            ops: trace.ops.len(),
            lanes,
            promises,
            col,
        }
    }

    fn lane_index(&self, lane: Lane) -> usize {
        let found = self.lanes.iter().position(|(l, _)| *l == lane);
        found
            .or_else(|| self.lanes.iter().position(|(l, _)| *l == Lane::Other))
            .unwrap_or(0)
    }

    fn lanes_of(&self, kind: &OpKind) -> Vec<usize> {
        match kind {
            OpKind::Output { .. } => vec![self.lane_index(Lane::Stdout)],
            OpKind::Sync { .. } => (0..self.lanes.len()).collect(),
            other => op_inodes(other)
                .into_iter()
                .map(|ino| self.lane_index(Lane::File(ino)))
                .collect(),
        }
    }

    fn x_col(&self, c: usize) -> usize {
        LABEL_W + c * self.col + self.col / 2
    }

    fn x_op(&self, i: usize) -> usize {
        self.x_col(self.col_of.get(&i).copied().unwrap_or(0))
    }

    /// Where crash point `k` is drawn: just before op `k`, or just after
    /// op `k - 1`; `None` inside a fold.
    fn x_crash(&self, k: usize) -> Option<usize> {
        if let Some(&c) = self.col_of.get(&k) {
            return Some(LABEL_W + c * self.col);
        }
        let c = *self.col_of.get(&k.checked_sub(1)?)?;
        Some(LABEL_W + (c + 1) * self.col)
    }

    /// The right end of the drawing.
    fn right(&self) -> usize {
        LABEL_W + self.cols.len() * self.col
    }

    fn y_lane(&self, j: usize) -> usize {
        AXIS_H + j * LANE_H + LANE_H / 2
    }

    fn y_row(&self, r: usize) -> usize {
        AXIS_H + self.lanes.len() * LANE_H + r * ROW_H + ROW_H / 2
    }

    /// The promise marks' text for op `i`: the first promise it made, and
    /// how many more.
    fn promise_label(&self, i: usize) -> Option<String> {
        let made = self.promises.get(&i)?;
        let first: String = made.first()?.chars().take(24).collect();
        Some(match made.len() {
            1 => first,
            n => format!("{first} (+{})", n - 1),
        })
    }
}

fn verdict_badge(v: Verdict) -> String {
    let class = match v {
        Verdict::Pass => "v-pass",
        Verdict::Fail => "v-fail",
        _ => "v-other",
    };
    format!(
        "<span class=\"verdict {class}\">{}</span>",
        html_escape(v.name())
    )
}

fn render_head(out: &mut String, report: &RunReport, ctx: &ExportContext<'_>) {
    let title = format!(
        "blackout: {} — {}",
        report.verdict.name(),
        workload_name(&ctx.trace.command)
    );
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src '{SCRIPT_CSP_HASH}'; base-uri 'none'; \
         form-action 'none'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        html_escape(&title)
    );
}

fn render_summary(out: &mut String, report: &RunReport, ctx: &ExportContext<'_>) {
    let _ = writeln!(
        out,
        "<header>\n<h1>blackout {}</h1>\n<p class=\"reason\">{}</p>",
        verdict_badge(report.verdict),
        html_escape(&report.reason)
    );
    let _ = writeln!(
        out,
        "<p>Workload <code>{}</code>: {} ops, {} promise{}.",
        html_escape(&workload_name(&ctx.trace.command)),
        ctx.trace.ops.len(),
        report.promises.len(),
        if report.promises.len() == 1 { "" } else { "s" }
    );
    if let Some(pre) = &report.precheck {
        let _ = write!(out, "<br>Pre-check: {}.", html_escape(&precheck_text(pre)));
    }
    if let Some(all) = &report.all_applied {
        let _ = write!(
            out,
            "<br>Nothing lost {}.",
            html_escape(&all_applied_text(all))
        );
    }
    out.push_str("</p>\n</header>\n");
    if report.models.is_empty() {
        return;
    }
    out.push_str("<table class=\"models\">\n<tr><th>model</th><th>verdict</th><th>states checked</th><th>causes</th></tr>\n");
    for m in &report.models {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{} of {} distinct{}</td><td class=\"n\">{}</td></tr>",
            m.model.name(),
            verdict_badge(m.verdict),
            for_people(m.states_checked as u128),
            for_people(m.distinct as u128),
            if m.exact { ", exact" } else { ", a sample" },
            m.causes.len()
        );
    }
    out.push_str("</table>\n");
}

fn render_lanes(out: &mut String, t: &Timeline) {
    let right = t.right() + 10;
    let step = if t.col >= 24 { 1 } else { 10 };
    for (c, col) in t.cols.iter().enumerate() {
        match *col {
            Col::Op(i)
                if c % step == 0
                    || t.cols
                        .get(c.wrapping_sub(1))
                        .is_some_and(|p| matches!(p, Col::Fold(..))) =>
            {
                let _ = writeln!(
                    out,
                    "<text class=\"axis\" x=\"{}\" y=\"14\">{i}</text>",
                    t.x_col(c)
                );
            }
            _ => {}
        }
    }
    for (j, (_, label)) in t.lanes.iter().enumerate() {
        let y = t.y_lane(j);
        let _ = writeln!(
            out,
            "<line class=\"lane-line\" x1=\"{LABEL_W}\" y1=\"{y}\" x2=\"{right}\" y2=\"{y}\"/>\
             <text class=\"lane-label\" x=\"{}\" y=\"{}\">{}</text>",
            LABEL_W - 8,
            y + 4,
            html_escape(label)
        );
    }
}

/// One op's glyph on one lane.
fn render_op(out: &mut String, trace: &Trace, t: &Timeline, i: usize, unsynced: bool) {
    let op = &trace.ops[i];
    let x = t.x_op(i);
    let title = html_escape(&describe_unit(
        trace,
        Unit {
            op: i,
            part: Part::Whole,
        },
    ));
    let label = op.kind.label(|ino| trace.kind(ino));
    let half = LANE_H / 2 - 4;
    for j in t.lanes_of(&op.kind) {
        let y = t.y_lane(j);
        let glyph = match &op.kind {
            OpKind::Fsync { .. } | OpKind::Fdatasync { .. } | OpKind::Sync { .. } => {
                let (top, bottom) = match op.kind {
                    OpKind::Sync { .. } => (t.y_lane(0) - half, t.y_lane(t.lanes.len() - 1) + half),
                    _ => (y - half, y + half),
                };
                format!(
                    "<line class=\"barrier\" x1=\"{x}\" y1=\"{top}\" x2=\"{x}\" y2=\"{bottom}\"/>"
                )
            }
            OpKind::SyncFileRange { .. } | OpKind::FailedSync { .. } => format!(
                "<line class=\"not-barrier\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/>",
                y - half,
                y + half
            ),
            OpKind::Output { .. } => match t.promise_label(i) {
                Some(p) => format!(
                    "<g class=\"promise\"><path d=\"M{x} {y} l0 -16 l10 4 l-10 4 z\"/>\
                     <text x=\"{}\" y=\"{}\">{}</text></g>",
                    x + 4,
                    y - 17,
                    html_escape(&p)
                ),
                None => format!("<circle cx=\"{x}\" cy=\"{y}\" r=\"3\"/>"),
            },
            OpKind::Link { .. } | OpKind::Unlink { .. } | OpKind::Rename { .. } => {
                format!("<circle cx=\"{x}\" cy=\"{y}\" r=\"6\"/>")
            }
            _ => format!(
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"12\" rx=\"2\"/>",
                x.saturating_sub(t.col / 3),
                y - 6,
                (t.col * 2 / 3).max(4)
            ),
        };
        let class = match &op.kind {
            OpKind::Output { .. } => "op output",
            OpKind::Link { .. } | OpKind::Unlink { .. } | OpKind::Rename { .. } => "op entry",
            _ => "op",
        };
        let unsynced = if unsynced { " unsynced" } else { "" };
        let text = if t.col >= 30 && !matches!(op.kind, OpKind::Output { .. }) {
            format!(
                "<text class=\"op-label\" x=\"{x}\" y=\"{}\">{label}</text>",
                y + half + 2
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "<g class=\"{class}{unsynced}\" data-op=\"{i}\"><title>{title}</title>{glyph}{text}</g>"
        );
    }
}

/// A run of ops folded into one column: `⋯`, with how many ops and of
/// what kinds (the three most common, with their files).
fn render_fold(
    out: &mut String,
    trace: &Trace,
    t: &Timeline,
    c: usize,
    (from, to): (usize, usize),
) {
    let mut kinds: HashMap<String, usize> = HashMap::new();
    for op in &trace.ops[from..to] {
        let what = format!(
            "{} {}",
            op.kind.label(|x| trace.kind(x)),
            trace.show_path(&op.path)
        );
        *kinds.entry(what).or_insert(0) += 1;
    }
    let mut kinds: Vec<(String, usize)> = kinds.into_iter().collect();
    kinds.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut like: Vec<String> = kinds
        .iter()
        .take(3)
        .map(|(k, n)| format!("{k} ×{n}"))
        .collect();
    if kinds.len() > 3 {
        like.push(format!("{} more kinds", kinds.len() - 3));
    }
    let x = t.x_col(c);
    let top = t.y_lane(0) - LANE_H / 2;
    let bottom = t.y_lane(t.lanes.len() - 1) + LANE_H / 2;
    let _ = writeln!(
        out,
        "<g class=\"fold\" data-from=\"{from}\" data-to=\"{to}\"><title>ops {from}-{} folded ({} ops): {}</title>\
         <rect x=\"{}\" y=\"{top}\" width=\"{}\" height=\"{}\"/><text x=\"{x}\" y=\"{}\">⋯</text></g>",
        to - 1,
        to - from,
        html_escape(&like.join(", ")),
        x.saturating_sub(t.col / 2),
        t.col,
        bottom - top,
        (top + bottom) / 2
    );
}

/// Each shown cause's windows as a band on the timeline, with an id a
/// cause's section links to (`w-MODEL-N-J`).
fn render_windows(out: &mut String, report: &RunReport, ctx: &ExportContext<'_>, t: &Timeline) {
    let top = t.y_lane(0) - LANE_H / 2;
    let bottom = t.y_lane(t.lanes.len() - 1) + LANE_H / 2;
    for m in &report.models {
        let shown = if ctx.all_causes {
            m.causes.len()
        } else {
            m.causes.len().min(CAUSES_SHOWN)
        };
        for (n, g) in m.causes.iter().take(shown).enumerate() {
            for (j, w) in cause_windows(g).iter().enumerate() {
                // Its crash points, from just before the first one's
                // last op.
                let (Some(a), Some(b)) = (
                    t.x_crash(w.crash_first.saturating_sub(1))
                        .or_else(|| t.x_crash(w.crash_first)),
                    t.x_crash(w.crash_last),
                ) else {
                    continue;
                };
                let _ = writeln!(
                    out,
                    "<rect class=\"window\" id=\"w-{}-{}-{j}\" x=\"{}\" y=\"{top}\" width=\"{}\" height=\"{}\"><title>{} cause {}: window c{}-c{}, ops {}-{}</title></rect>",
                    m.model.name(),
                    n + 1,
                    a.saturating_sub(3),
                    (b + 3).saturating_sub(a.saturating_sub(3)).max(6),
                    bottom - top,
                    m.model.name(),
                    n + 1,
                    w.crash_first,
                    w.crash_last,
                    w.op_first,
                    w.op_last
                );
            }
        }
    }
}

/// A cause's windows (its one window when it names none).
fn cause_windows(g: &CauseGroup) -> &[blackout_analysis::report::Window] {
    if g.windows.is_empty() {
        std::slice::from_ref(&g.window)
    } else {
        &g.windows
    }
}

fn render_crash_points(out: &mut String, report: &RunReport, t: &Timeline) {
    for (r, m) in report.models.iter().enumerate() {
        let y = t.y_row(r);
        let _ = writeln!(
            out,
            "<text class=\"lane-label\" x=\"{}\" y=\"{}\">{}</text>",
            LABEL_W - 14,
            y + 4,
            if m.exact {
                format!("{} crash points", m.model.name())
            } else {
                format!("{} (sampled)", m.model.name())
            }
        );
        // On a sample, a crash point with no rejected state may hold
        // states nobody checked.
        let none_found = if m.exact {
            "no rejected state found here"
        } else {
            "no rejected state among the states checked (a sample: not every state was)"
        };
        let mut at: HashMap<usize, (Vec<&str>, Vec<&str>)> = HashMap::new();
        for c in &m.failing {
            at.entry(c.crash).or_default().0.push(&c.id);
        }
        for c in &m.errors {
            at.entry(c.crash).or_default().1.push(&c.id);
        }
        for k in 0..=t.ops {
            let Some(x) = t.x_crash(k) else { continue };
            let (class, what) = match at.get(&k) {
                Some((fail, _)) if !fail.is_empty() => {
                    ("fail", format!("rejected: {}", fail.join(", ")))
                }
                Some((_, err)) => ("error", format!("not checked: {}", err.join(", "))),
                None => ("pass", none_found.to_string()),
            };
            let when = if k == 0 {
                "crash before the first op".to_string()
            } else {
                format!("crash after op {}", k - 1)
            };
            let _ = writeln!(
                out,
                "<circle class=\"crash {class}\" data-model=\"{}\" data-crash=\"{k}\" cx=\"{x}\" cy=\"{y}\" r=\"6\"><title>{} under {}: {}</title></circle>",
                m.model.name(),
                when,
                m.model.name(),
                html_escape(&what)
            );
        }
    }
}

fn render_timeline(out: &mut String, report: &RunReport, ctx: &ExportContext<'_>) {
    let trace = ctx.trace;
    let outputs = Outputs::new(trace, ctx.ack_prefix);
    let t = Timeline::new(trace, &outputs, &drawn_ops(trace, report, ctx.all_causes));
    out.push_str("<section id=\"timeline\">\n<h2>Op timeline</h2>\n");
    out.push_str(
        "<p class=\"legend\"><span>■ data op</span><span style=\"color:#8250df\">● entry op (on its directory's lane)</span>\
         <span>□ ○ never covered by a sync</span><span style=\"color:#1a7f37\">┃ sync (a barrier for its lane; sync: all lanes)</span>\
         <span style=\"color:#cf222e\">┆ not a barrier (failed fsync, sync_file_range)</span><span style=\"color:#bf8700\">⚑ promise</span>\
         <span>crash points: <b style=\"color:#2da44e\">●</b> no rejected state <b style=\"color:#cf222e\">●</b> a rejected state <b style=\"color:#bf8700\">●</b> not checked</span></p>\n",
    );
    if t.col_of.len() < trace.ops.len() {
        let _ = writeln!(
            out,
            "<p class=\"note\">The timeline draws {} of {} ops: the first ones, and each cause's windows with the ops around them; the runs between are folded (⋯, each with what it holds).</p>",
            t.col_of.len(),
            trace.ops.len()
        );
    }
    let width = t.right() + 20;
    let height = t.y_row(report.models.len()) - ROW_H / 2 + 6;
    let _ = writeln!(
        out,
        "<div class=\"scroll\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" role=\"img\" aria-label=\"op timeline\">"
    );
    render_lanes(out, &t);
    render_windows(out, report, ctx, &t);
    let synced = synced_by(&trace.ops);
    for (c, col) in t.cols.iter().enumerate() {
        match *col {
            Col::Op(i) => {
                let unsynced = trace.ops[i].kind.is_durable_change() && !synced[i].synced();
                render_op(out, trace, &t, i, unsynced);
            }
            Col::Fold(from, to) => render_fold(out, trace, &t, c, (from, to)),
        }
    }
    render_crash_points(out, report, &t);
    out.push_str("</svg></div>\n</section>\n");
}

/// What the simplest state did with op `i`, and the row's class.
fn op_status(trace: &Trace, g: &CauseGroup, i: usize, t: &Timeline) -> (&'static str, String) {
    let c = &g.simplest;
    let op = &trace.ops[i];
    let lost: Vec<Part> = c
        .lost
        .iter()
        .filter(|u| u.op == i)
        .map(|u| u.part)
        .collect();
    if let Some(part) = lost.first() {
        let what = match part {
            Part::Whole => "lost".to_string(),
            Part::Source => "lost (its removal from the source directory)".into(),
            Part::Dest => "lost (its new entry in the destination directory)".into(),
        };
        return ("lost", what);
    }
    if let Some((_, tear)) = c.torn.filter(|(op, _)| *op == i) {
        return ("torn", format!("torn: {}", tear.describe()));
    }
    match &op.kind {
        OpKind::Output { .. } => match t.promises.get(&i) {
            Some(p) => (
                "promise",
                format!(
                    "printed; promised {}",
                    p.iter()
                        .map(|l| format!("\"{l}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
            None => ("output", "printed".into()),
        },
        OpKind::Fsync { .. } | OpKind::Fdatasync { .. } | OpKind::Sync { .. } => {
            ("sync", "completed (a barrier)".into())
        }
        OpKind::SyncFileRange { .. } | OpKind::FailedSync { .. } => {
            ("sync", "not a barrier".into())
        }
        _ => ("kept", "kept".into()),
    }
}

/// The ops a cause's table lists: from the first op the state lost or tore
/// (else the last op) to the crash; when there are too many, only those
/// that matter, with the number of kept ops left out between them.
fn state_rows(trace: &Trace, g: &CauseGroup) -> Vec<Result<usize, usize>> {
    let c = &g.simplest;
    let crash = c.crash.min(trace.ops.len());
    let first = c
        .lost
        .iter()
        .map(|u| u.op)
        .chain(c.torn.map(|(op, _)| op))
        .min()
        .unwrap_or(crash.saturating_sub(1));
    let window: Vec<usize> = (first.min(crash)..crash).collect();
    if window.len() <= STATE_ROWS_MAX {
        return window.into_iter().map(Ok).collect();
    }
    let mut rows = Vec::new();
    let mut skipped = 0;
    for i in window {
        let op = &trace.ops[i];
        let matters = c.lost.iter().any(|u| u.op == i)
            || c.torn.is_some_and(|(op, _)| op == i)
            || !op.kind.is_durable_change()
            || i + 1 == crash;
        if matters {
            if skipped > 0 {
                rows.push(Err(skipped));
                skipped = 0;
            }
            rows.push(Ok(i));
        } else {
            skipped += 1;
        }
    }
    rows
}

fn render_state_table(out: &mut String, trace: &Trace, g: &CauseGroup, t: &Timeline) {
    out.push_str("<table class=\"state\">\n<tr><th>op</th><th>lane</th><th>what</th><th>in this state</th></tr>\n");
    for row in state_rows(trace, g) {
        let i = match row {
            Ok(i) => i,
            Err(n) => {
                let _ = writeln!(
                    out,
                    "<tr class=\"skipped\"><td colspan=\"4\">… {n} ops kept …</td></tr>"
                );
                continue;
            }
        };
        let (class, status) = op_status(trace, g, i, t);
        let lane = t
            .lanes_of(&trace.ops[i].kind)
            .iter()
            .filter_map(|&j| t.lanes.get(j).map(|(_, l)| l.as_str()))
            .collect::<Vec<_>>()
            .join(", ");
        let what = describe_unit(
            trace,
            Unit {
                op: i,
                part: Part::Whole,
            },
        );
        let _ = writeln!(
            out,
            "<tr class=\"{class}\" data-op=\"{i}\"><td class=\"n\">{i}</td><td>{}</td><td>{}</td><td class=\"status\">{}</td></tr>",
            html_escape(&lane),
            html_escape(&what),
            html_escape(&status)
        );
    }
    let c = &g.simplest;
    let when = if c.crash == 0 {
        "before the first op".to_string()
    } else {
        format!("after op {}", c.crash - 1)
    };
    let _ = writeln!(
        out,
        "<tr class=\"crash\"><td colspan=\"4\">crash {when}: state <code>{}</code></td></tr>\n</table>",
        html_escape(&c.id)
    );
}

fn render_cause(
    out: &mut String,
    m: &ModelReport,
    (n, g): (usize, &CauseGroup),
    ctx: &ExportContext<'_>,
    t: &Timeline,
) {
    let c = &g.simplest;
    let ops: Vec<String> = c
        .lost
        .iter()
        .map(|u| u.op)
        .chain(c.torn.map(|(op, _)| op))
        .map(|op| op.to_string())
        .collect();
    let kind = serde_json::to_value(g.cause.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "<section class=\"cause\" id=\"cause-{model}-{num}\" data-model=\"{model}\" data-crash=\"{crash}\" data-ops=\"{ops}\">\n\
         <h3>{model}: cause {num} of {total} <span class=\"kind\">{kind}</span></h3>",
        model = m.model.name(),
        num = n + 1,
        total = m.causes.len(),
        crash = c.crash,
        ops = ops.join(" "),
        kind = html_escape(&kind)
    );
    let details = cause_details(ctx.trace, m, g, ctx);
    for (detail, text) in &details {
        if *detail == Detail::Sentence {
            let _ = writeln!(out, "<p class=\"sentence\">{}</p>", html_escape(text));
        }
    }
    let _ = writeln!(out, "<p>{}</p>", html_escape(&simplest_text(g)));
    let links: Vec<String> = cause_windows(g)
        .iter()
        .enumerate()
        .filter(|(_, w)| t.x_crash(w.crash_last).is_some())
        .map(|(j, w)| {
            let at = if w.crash_first == w.crash_last {
                format!("c{}", w.crash_first)
            } else {
                format!("c{}-c{}", w.crash_first, w.crash_last)
            };
            format!("<a href=\"#w-{}-{}-{j}\">{at}</a>", m.model.name(), n + 1)
        })
        .collect();
    if !links.is_empty() {
        let _ = writeln!(
            out,
            "<p class=\"windows\">On the timeline: {}</p>",
            links.join(", ")
        );
    }
    render_state_table(out, ctx.trace, g, t);
    out.push_str("<dl>\n");
    for (detail, text) in &details {
        let value = match detail {
            Detail::Sentence | Detail::Lost | Detail::Torn => continue,
            Detail::Reproduce => match ctx.trace_path {
                Some(_) => format!("<code>{}</code>", html_escape(text)),
                None => format!(
                    "record with <code>-o run.trace</code>, then: <code>{}</code>",
                    html_escape(&reproduce_command(ctx, &c.id))
                ),
            },
            Detail::Fix if g.fix.as_ref().is_some_and(|f| f.passes) => format!(
                "<span class=\"verified\">verified:</span> {}",
                html_escape(text)
            ),
            _ => html_escape(text),
        };
        let _ = writeln!(out, "<dt>{}</dt><dd>{value}</dd>", detail.label());
    }
    out.push_str("</dl>\n</section>\n");
}

fn render_causes(out: &mut String, report: &RunReport, ctx: &ExportContext<'_>) {
    let outputs = Outputs::new(ctx.trace, ctx.ack_prefix);
    let drawn = drawn_ops(ctx.trace, report, ctx.all_causes);
    let t = Timeline::new(ctx.trace, &outputs, &drawn);
    let any = report.models.iter().any(|m| !m.causes.is_empty());
    if any {
        out.push_str("<h2>Causes</h2>\n");
    }
    for m in &report.models {
        let shown = if ctx.all_causes {
            m.causes.len()
        } else {
            m.causes.len().min(CAUSES_SHOWN)
        };
        for (n, g) in m.causes.iter().take(shown).enumerate() {
            render_cause(out, m, (n, g), ctx, &t);
        }
        if m.causes.len() > shown {
            let _ = writeln!(
                out,
                "<p class=\"note\">And {} more causes under {}, not shown (--all-causes or --json shows them).</p>",
                m.causes.len() - shown,
                m.model.name()
            );
        }
        if let Some(set) = &m.fix_set {
            let _ = writeln!(
                out,
                "<p><strong>{}</strong>: {}</p>",
                m.model.name(),
                html_escape(&fix_set_text(set, m.model))
            );
        }
        for c in m.errors.iter().take(5) {
            let _ = writeln!(
                out,
                "<p class=\"note\">{}: state <code>{}</code>: the checker {}</p>",
                m.model.name(),
                html_escape(&c.id),
                html_escape(&c.outcome.describe())
            );
        }
    }
}

/// The `--syncs` section: a row per call site, then the checker's lines.
fn render_syncs(out: &mut String, r: &SyncsReport) {
    let _ = writeln!(
        out,
        "<section id=\"syncs\">\n<h2>Syncs</h2>\n<p>{}</p>\n<table>\n<tr><th>call site</th><th>calls</th><th>verdict</th></tr>",
        html_escape(&syncs_heading(r))
    );
    for c in &r.sites {
        let (call, calls, line) = sync_words(c);
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
            html_escape(&call),
            html_escape(&calls),
            html_escape(&line)
        );
    }
    out.push_str("</table>\n<ul>\n");
    for line in syncs_summary(r) {
        let _ = writeln!(out, "<li>{}</li>", html_escape(&line));
    }
    out.push_str("</ul>\n</section>\n");
}

/// The `--fail-syncs` section: a row per call site made to fail.
fn render_failed_syncs(out: &mut String, r: &FailSyncsReport) {
    let _ = writeln!(
        out,
        "<section id=\"failed-syncs\">\n<h2>Failed syncs</h2>\n<p>{}</p>\n<table>\n<tr><th>call site</th><th>the call that failed</th><th>what the program did</th></tr>",
        html_escape(FAILED_SYNCS_HEADING)
    );
    for c in &r.sites {
        let (call, failed, line) = failed_sync_words(c);
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
            html_escape(&call),
            html_escape(&failed),
            html_escape(&line)
        );
    }
    out.push_str("</table>\n</section>\n");
}

fn render_coverage(out: &mut String, report: &RunReport) {
    if report.models.is_empty() {
        return;
    }
    out.push_str("<h2>Coverage</h2>\n<ul>\n");
    for m in &report.models {
        let model: Model = m.model;
        let _ = writeln!(
            out,
            "<li><strong>{}</strong>: {}</li>",
            model.name(),
            html_escape(&coverage_text(m, &report.explore))
        );
    }
    out.push_str("</ul>\n");
}

/// The failing states' table of a file system's section: one row per
/// distinct state after recovery.
fn render_block_failing(out: &mut String, r: &BlockReport) {
    if r.failing.is_empty() {
        return;
    }
    out.push_str("<table class=\"block-states\">\n<tr><th>state</th><th>power lost</th><th>checker</th><th>last calls</th><th>posix state</th><th>posix cause</th></tr>\n");
    for c in &r.failing {
        let w = state_words(r, c);
        let mut when = format!("{}; {}", w.when, w.promised);
        if let Some(lost) = &w.writes_lost {
            let _ = write!(when, "; {lost}");
        }
        let posix = match &w.posix_state {
            Some((s, lost)) => format!("<code>{}</code> ({})", html_escape(s), html_escape(lost)),
            None => "none holds the same files".into(),
        };
        let cause = w
            .posix_cause
            .as_ref()
            .map_or_else(|| "-".into(), |(n, s)| html_escape(&format!("{n}: {s}")));
        let _ = writeln!(
            out,
            "<tr class=\"fail\"><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{posix}</td><td>{cause}</td></tr>",
            html_escape(&w.id),
            html_escape(&when),
            html_escape(&w.checker),
            html_escape(w.last_calls.as_deref().unwrap_or("-")),
        );
    }
    out.push_str("</table>\n");
}

/// The real file system's section after the posix report: its verdict and
/// why, the failing states, the states not judged, coverage, fsck, the
/// differential check and `--repeat`'s line (or why it was not checked).
fn render_block(out: &mut String, side: &BlockSide, posix: Verdict) {
    let _ = writeln!(
        out,
        "<section id=\"block\" class=\"block\" data-fs=\"{fs}\">\n<h2>{fs} (real file system) {}</h2>",
        side.report
            .as_ref()
            .map_or_else(String::new, |r| verdict_badge(r.verdict)),
        fs = html_escape(&side.fs),
    );
    let mut notes = Vec::new();
    match &side.report {
        None => notes.push(not_checked_text(posix.name())),
        Some(r) => {
            let _ = writeln!(out, "<p class=\"reason\">{}</p>", html_escape(&r.reason));
            render_block_failing(out, r);
            for c in &r.errors {
                let w = state_words(r, c);
                notes.push(format!(
                    "state {} (power lost {}): the checker {}",
                    w.id, w.when, w.checker
                ));
            }
            notes.push(format!("coverage: {}", block_coverage_text(r)));
            notes.extend(fsck_text(r).map(|f| format!("fsck: {f}")));
            notes.extend(misses_text(r));
        }
    }
    notes.extend(side.repeat_line());
    out.push_str("<ul>\n");
    for n in &notes {
        let _ = writeln!(out, "<li>{}</li>", html_escape(n));
    }
    out.push_str("</ul>\n</section>\n");
}

/// The run's result as one self-contained HTML page.
pub fn render(report: &RunReport, ctx: &ExportContext<'_>) -> String {
    let mut out = String::new();
    render_head(&mut out, report, ctx);
    render_summary(&mut out, report, ctx);
    render_timeline(&mut out, report, ctx);
    render_causes(&mut out, report, ctx);
    render_coverage(&mut out, report);
    if let Some(syncs) = &report.syncs {
        render_syncs(&mut out, syncs);
    }
    if let Some(failed) = &report.failed_syncs {
        render_failed_syncs(&mut out, failed);
    }
    if let Some(side) = &report.block {
        render_block(&mut out, side, report.verdict);
    }
    let _ = write!(out, "<script>{SCRIPT}</script>\n</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_csp_hash_matches_the_script() {
        use std::io::Write as _;
        use std::process::{Command, Stdio};
        let mut child = Command::new("python3")
            .args([
                "-c",
                "import base64,hashlib,sys;print(base64.b64encode(hashlib.sha256(sys.stdin.buffer.read()).digest()).decode())",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 (the tests need it)");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(SCRIPT.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let hash = String::from_utf8(out.stdout).unwrap();
        assert_eq!(SCRIPT_CSP_HASH, format!("sha256-{}", hash.trim()));
    }

    #[test]
    fn a_block_run_has_the_file_systems_section_with_hostile_text_escaped() {
        use crate::block::fixture;
        let trace = fixture::trace();
        let cx = fixture::context(&trace);
        let page = render(&fixture::run(Verdict::Fail, Some(fixture::ext4())), &cx);
        let at = page.find("<section id=\"block\"").expect(&page);
        let section = &page[at..at + page[at..].find("</section>").unwrap()];
        assert!(section.contains(
            "<h2>ext4 (real file system) <span class=\"verdict v-fail\">FAIL</span></h2>"
        ));
        assert!(section.contains("<tr class=\"fail\"><td><code>b1.lost0</code></td><td>0.500 s in, just after the mark &quot;saved&quot;"));
        assert!(section.contains("&lt;/failure&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert_eq!(page.matches("<script").count(), 1, "only the page's own");
        assert!(!section.contains('\u{1b}'));
        assert!(
            section.contains("<li>state b1 (power lost 0.500 s in"),
            "{section}"
        );
        assert!(section.contains("<li>THE POSIX MODEL MISSES 1"));
        assert!(section.contains("<li>the verdict held over 2 runs: FAIL each time"));
        let page = render(&fixture::run(Verdict::Error, None), &cx);
        assert!(
            page.contains("<li>not checked: the posix run says ERROR (fix the checker first)</li>")
        );
    }

    #[test]
    fn escaping_leaves_no_markup() {
        let e = html_escape("</script><script>alert(1)</script>\u{1b}");
        assert!(!e.contains('<') && !e.contains('>') && !e.contains('\u{1b}'));
    }
}
