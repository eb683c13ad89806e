//! The text report: a run's result for people, in the user's terms (the
//! syscall, the path as the program named it, the log line, or the call's
//! number in a native recording).

use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};
use blackout_analysis::report::FIX_SECONDS_MIN;
use blackout_analysis::report::{
    CauseGroup, Checked, FixCheck, FixSet, ModelReport, RunReport, Verdict, Window,
};
use blackout_analysis::syncs::SyncsReport;

use crate::syncs::syncs_text;
use blackout_explore::enumerate::{Coverage, ExploreConfig};
use blackout_explore::model::{for_people, Model};
use blackout_oplog::naming::describe_unit;
use blackout_oplog::ops::{escape_controls, Part, Unit};
use blackout_oplog::outcome::Outcome;
use blackout_oplog::protocol::ACKED_ENV_BYTES_MAX;
use blackout_oplog::trace::Trace;

use crate::{ExportContext, Exporter};

/// The text report ([`render`]); with `color`, verdicts and cause headings
/// are marked with ANSI colours ([`render_styled`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct TextExporter {
    /// Colour the verdict words and cause headings (for a terminal).
    pub color: bool,
}

impl Exporter for TextExporter {
    fn export(&self, report: &RunReport, cx: &ExportContext<'_>) -> Vec<u8> {
        let mut text = render_styled(report, cx, self.color);
        if let Some(side) = &report.block {
            text.push_str(&crate::block::side_text(side, report.verdict.name()));
        }
        text.into_bytes()
    }
}

/// How the text report marks words: with ANSI colours, or not at all.
#[derive(Debug, Clone, Copy)]
struct Paint {
    on: bool,
}

impl Paint {
    fn style(self, style: Style, text: &str) -> String {
        if self.on {
            format!("{style}{text}{style:#}")
        } else {
            text.to_string()
        }
    }

    /// A verdict word, in its colour: PASS green, FAIL red, the rest yellow.
    fn verdict(self, v: Verdict) -> String {
        let color = match v {
            Verdict::Pass => AnsiColor::Green,
            Verdict::Fail => AnsiColor::Red,
            _ => AnsiColor::Yellow,
        };
        self.style(Style::new().bold().fg_color(Some(color.into())), v.name())
    }

    /// A cause heading (`cause 1 of 2:`).
    fn heading(self, text: &str) -> String {
        self.style(Style::new().bold(), text)
    }
}

/// The workload as a short name: its program's file name and its
/// arguments (`save.sh no-dir-fsync`), control characters escaped.
///
/// ```
/// use blackout_export::text::workload_name;
/// let cmd = ["/opt/x/save.sh".to_string(), "in-place".to_string()];
/// assert_eq!(workload_name(&cmd), "save.sh in-place");
/// assert_eq!(workload_name(&[]), "workload");
/// ```
pub fn workload_name(command: &[String]) -> String {
    let Some((program, args)) = command.split_first() else {
        return "workload".into();
    };
    let base = program.rsplit('/').next().unwrap_or(program);
    std::iter::once(base)
        .chain(args.iter().map(String::as_str))
        .map(escape_controls)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Quotes a string for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn quoted_list(lines: &[String], max: usize) -> String {
    let mut shown: Vec<String> = lines
        .iter()
        .take(max)
        .map(|l| format!("\"{}\"", escape_controls(l)))
        .collect();
    if lines.len() > max {
        shown.push(format!("and {} more", lines.len() - max));
    }
    shown.join(", ")
}

/// Where a state crashed and what it lost: `crash after op 4, 1 op lost`.
pub fn crash_text(c: &Checked) -> String {
    let mut parts = vec![if c.crash == 0 {
        "crash before the first op".to_string()
    } else {
        format!("crash after op {}", c.crash - 1)
    }];
    if !c.lost.is_empty() {
        parts.push(format!(
            "{} lost",
            if c.lost.len() == 1 {
                "1 op".to_string()
            } else {
                format!("{} ops", c.lost.len())
            }
        ));
    }
    if let Some((op, tear)) = c.torn {
        parts.push(format!("op {op} torn ({})", tear.describe()));
    }
    parts.join(", ")
}

/// What the checker said on the state before the workload.
pub fn precheck_text(pre: &Checked) -> String {
    match &pre.outcome {
        Outcome::Fail { .. } => format!(
            "the checker rejects the state before the workload, as it must ({})",
            pre.outcome.describe()
        ),
        other => format!(
            "the checker on the state before the workload: {}",
            other.describe()
        ),
    }
}

/// What the checker said on the state with every op applied:
/// `(c5): the checker accepted`.
pub fn all_applied_text(all: &Checked) -> String {
    format!("({}): the checker {}", all.id, all.outcome.describe())
}

/// The coverage statement every run prints for a model: what its
/// enumeration covered, and with representatives what each class of crash
/// points stood for and how much of the rest was explored and checked.
pub fn coverage_text(m: &ModelReport, cfg: &ExploreConfig) -> String {
    let mut text = explored_text(m.model, &m.coverage, cfg);
    if m.coverage.classes.is_some() {
        text.push_str(&rest_text(m));
    }
    text
}

/// What an exploration covered, before any state is checked (`blackout
/// states`): the model's enumeration, and with representatives what each
/// class of crash points stood for.
pub fn explored_text(model: Model, cov: &Coverage, cfg: &ExploreConfig) -> String {
    let mut text = model.crash_model().coverage_text(cov, cfg);
    if let Some(classes) = &cov.classes {
        text.push_str(&classes_text(classes));
    }
    text
}

/// What was checked of a model's distinct states: `2445 distinct by
/// content`, or with a sample `2445 distinct by content, 1200 checked`.
pub fn distinct_text(m: &ModelReport) -> String {
    if m.states_checked == m.distinct {
        format!("{} distinct by content", for_people(m.distinct as u128))
    } else {
        format!(
            "{} distinct by content, {} checked",
            for_people(m.distinct as u128),
            for_people(m.states_checked as u128)
        )
    }
}

/// After the representatives: how far the rest went.
fn rest_text(m: &ModelReport) -> String {
    let total: usize = m
        .coverage
        .classes
        .as_ref()
        .map_or(0, |c| c.iter().map(|k| k.crash_points).sum());
    let checked = if m.states_checked == m.distinct {
        format!(
            "all {} distinct states checked",
            for_people(m.distinct as u128)
        )
    } else {
        format!(
            "{} of its {} distinct states checked, the most unlike those checked first, until the check budget ended",
            for_people(m.states_checked as u128),
            for_people(m.distinct as u128)
        )
    };
    match m.coverage.full_crash_points {
        None => format!(
            "; the rest not explored ({} distinct states checked: --check-budget 0)",
            for_people(m.states_checked as u128)
        ),
        Some(n) if n >= total => format!("; then every crash point explored in full and {checked}"),
        Some(n) => format!(
            "; then {n} of {total} crash points explored in full (every one would make more states than the rest's bound) and {checked}"
        ),
    }
}

/// Classes shown by name in the coverage statement (the largest first);
/// JSON lists them all.
pub const CLASSES_SHOWN: usize = 6;

/// What representative exploration covered: how many crash points were
/// explored for how many, and the largest classes with their explored
/// crash points.
pub fn classes_text(classes: &[blackout_explore::enumerate::ClassCount]) -> String {
    let total: usize = classes.iter().map(|c| c.crash_points).sum();
    let explored: usize = classes.iter().map(|c| c.explored.len()).sum();
    let mut largest: Vec<&blackout_explore::enumerate::ClassCount> = classes.iter().collect();
    largest.sort_by_key(|c| std::cmp::Reverse(c.crash_points));
    let shown: Vec<String> = largest
        .iter()
        .take(CLASSES_SHOWN)
        .map(|c| {
            let at: Vec<String> = c.explored.iter().map(|k| format!("c{k}")).collect();
            format!("{} like {} [{}]", c.crash_points, at.join(", "), c.shape)
        })
        .collect();
    let more = classes.len().saturating_sub(CLASSES_SHOWN);
    format!(
        ". By representatives first: {explored} of {total} crash points explored, a few of each of {} classes at which the model makes the same choices and the pending work has the same shape, and at each, under posix, a few of each set of alike pending ops (the same call, file, length and tears) lost, kept, cut at or torn one at a time; the largest: {}{}",
        classes.len(),
        shown.join("; "),
        if more > 0 { format!("; and {more} smaller classes") } else { String::new() }
    )
}

/// The run's result as text, without colour.
pub fn render(report: &RunReport, ctx: &ExportContext<'_>) -> String {
    render_styled(report, ctx, false)
}

/// The run's result as text; with `color`, the verdict words and cause
/// headings carry ANSI colours.
pub fn render_styled(report: &RunReport, ctx: &ExportContext<'_>, color: bool) -> String {
    let paint = Paint { on: color };
    let trace = ctx.trace;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "workload: {} ops; {} promise{}{}",
        trace.ops.len(),
        report.promises.len(),
        if report.promises.len() == 1 { "" } else { "s" },
        if report.promises.is_empty() {
            String::new()
        } else {
            format!(" ({})", quoted_list(&report.promises, 3))
        }
    );
    if let Some(pre) = &report.precheck {
        let _ = writeln!(out, "pre-check: {}", precheck_text(pre));
    }
    if let Some(all) = &report.all_applied {
        let _ = writeln!(out, "nothing lost {}", all_applied_text(all));
    }
    for m in &report.models {
        render_model(&mut out, m, ctx, &report.explore, paint);
    }
    if let Some(syncs) = &report.syncs {
        render_syncs(&mut out, syncs);
    }
    if let Some(failed) = &report.failed_syncs {
        out.push_str(&crate::syncs::failed_syncs_text(failed));
    }
    if report.orphans_killed > 0 {
        let n = report.orphans_killed;
        let _ = writeln!(
            out,
            "note: the checker left {n} background process{} running outside its process group; {} killed",
            if n == 1 { "" } else { "es" },
            if n == 1 { "it was" } else { "they were" }
        );
    }
    if report.promises_in_file_only {
        let _ = writeln!(
            out,
            "note: the promises exceed what BLACKOUT_ACKED may hold ({} KiB): where they did not fit it was unset and BLACKOUT_ACKED_IN_FILE=1; the checker must read BLACKOUT_ACKS_FILE",
            ACKED_ENV_BYTES_MAX / 1024
        );
    }
    let _ = writeln!(
        out,
        "verdict: {} — {}",
        paint.verdict(report.verdict),
        escape_controls(&report.reason)
    );
    out
}

/// The `--syncs` section: each call site's syncs, needed or not, and how
/// strong the checker is.
fn render_syncs(out: &mut String, r: &SyncsReport) {
    out.push_str(&syncs_text(r));
}

fn render_model(
    out: &mut String,
    m: &ModelReport,
    ctx: &ExportContext<'_>,
    explore: &ExploreConfig,
    paint: Paint,
) {
    let pad = " ".repeat(5usize.saturating_sub(m.verdict.name().len()));
    let _ = writeln!(
        out,
        "{:<8} {}{pad} {} states, {}; {}",
        m.model.name(),
        paint.verdict(m.verdict),
        for_people(m.states as u128),
        distinct_text(m),
        match (m.failing.len(), m.errors.len()) {
            (0, 0) => "all accepted".to_string(),
            (f, 0) => format!("{f} rejected"),
            (f, e) => format!("{f} rejected, {e} could not be checked"),
        }
    );
    let shown = if ctx.all_causes {
        m.causes.len()
    } else {
        m.causes.len().min(CAUSES_SHOWN)
    };
    for (n, g) in m.causes.iter().take(shown).enumerate() {
        render_cause(out, m, g, n, ctx, paint, "  ");
    }
    if m.causes.len() > shown {
        let _ = writeln!(
            out,
            "  and {} more distinct causes, not printed (--all-causes or --json shows them)",
            m.causes.len() - shown
        );
    }
    if let Some(set) = &m.fix_set {
        let _ = writeln!(out, "  {}", fix_set_text(set, m.model));
    }
    for c in m.errors.iter().take(5) {
        let _ = writeln!(
            out,
            "  error state {}: the checker {}",
            c.id,
            c.outcome.describe()
        );
    }
    if m.errors.len() > 5 {
        let _ = writeln!(out, "  and {} more error states", m.errors.len() - 5);
    }
    let _ = writeln!(out, "  {}", coverage_text(m, explore));
}

/// Distinct causes the text report shows per model.
pub const CAUSES_SHOWN: usize = 10;

/// What a line of a cause's details says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Where the cause bites: its crash points and blamed ops.
    Window,
    /// The source line that issued the blamed ops (`--stacks`).
    Source,
    /// The likely cause, one sentence.
    Sentence,
    /// An op (or rename half) the simplest state lost.
    Lost,
    /// The write the simplest state tore.
    Torn,
    /// The last op before the crash (when nothing was lost or torn).
    LastOp,
    /// The latest promise before the crash.
    Promise,
    /// What the checker said.
    Checker,
    /// Whether the same crash point passes with every op kept.
    Process,
    /// The verified fix, or why there is none.
    Fix,
    /// The command that writes the state out.
    Reproduce,
    /// Other failing states with the same cause.
    Also,
}

impl Detail {
    /// The label the text report puts before it (empty for the sentence).
    pub fn label(self) -> &'static str {
        match self {
            Detail::Window => "window",
            Detail::Source => "source",
            Detail::Sentence => "",
            Detail::Lost => "lost",
            Detail::Torn => "torn",
            Detail::LastOp => "last op",
            Detail::Promise => "promise",
            Detail::Checker => "checker",
            Detail::Process => "process",
            Detail::Fix => "fix",
            Detail::Reproduce => "reproduce",
            Detail::Also => "also",
        }
    }
}

/// `crash points c1-c64, ops 0-63 on doc.txt`.
pub fn window_text(w: &Window) -> String {
    let crashes = if w.crash_first == w.crash_last {
        format!("crash point c{}", w.crash_first)
    } else {
        format!("crash points c{}-c{}", w.crash_first, w.crash_last)
    };
    let ops = if w.op_first == w.op_last {
        format!("op {}", w.op_first)
    } else {
        format!("ops {}-{}", w.op_first, w.op_last)
    };
    format!("{crashes}, {ops} on {}", escape_controls(&w.path))
}

/// Windows shown by name in a cause's `window:` line.
pub const WINDOWS_SHOWN: usize = 6;

/// A cause that bites at several places: `3 windows: c2456, c5692, c8783
/// (crash points c2456-c8783, ops 2455-8782 on 000003.log)`.
pub fn windows_text(g: &CauseGroup) -> String {
    let shown: Vec<String> = g
        .windows
        .iter()
        .take(WINDOWS_SHOWN)
        .map(|w| {
            if w.crash_first == w.crash_last {
                format!("c{}", w.crash_first)
            } else {
                format!("c{}-c{}", w.crash_first, w.crash_last)
            }
        })
        .collect();
    let more = match g.windows.len().saturating_sub(WINDOWS_SHOWN) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    format!(
        "{} windows: {}{more} ({})",
        g.windows.len(),
        shown.join(", "),
        window_text(&g.window)
    )
}

/// `2 failing states; simplest c5.lost3 (crash after op 4, 1 op lost)`.
pub fn simplest_text(g: &CauseGroup) -> String {
    format!(
        "{} failing state{}; simplest {} ({})",
        g.states,
        if g.states == 1 { "" } else { "s" },
        g.simplest.id,
        crash_text(&g.simplest)
    )
}

/// A cause's details, in the order the text report prints them: what
/// every exporter says about a cause.
pub fn cause_details(
    trace: &Trace,
    m: &ModelReport,
    g: &CauseGroup,
    ctx: &ExportContext<'_>,
) -> Vec<(Detail, String)> {
    let c = &g.simplest;
    let mut out = Vec::new();
    if g.windows.len() > 1 {
        out.push((Detail::Window, windows_text(g)));
    } else if g.window.is_wide() {
        out.push((Detail::Window, window_text(&g.window)));
    }
    if let Some(src) = &g.source {
        out.push((
            Detail::Source,
            format!("{src} (every op it issued with this cause)"),
        ));
    }
    out.push((Detail::Sentence, g.cause.sentence.clone()));
    for u in c.lost.iter() {
        out.push((Detail::Lost, describe_unit(trace, *u)));
    }
    if let Some((op, _)) = c.torn {
        let unit = Unit {
            op,
            part: Part::Whole,
        };
        out.push((Detail::Torn, describe_unit(trace, unit)));
    }
    if c.lost.is_empty() && c.torn.is_none() && c.crash > 0 {
        let unit = Unit {
            op: c.crash - 1,
            part: Part::Whole,
        };
        out.push((Detail::LastOp, describe_unit(trace, unit)));
    }
    let promise = match &g.latest_promise {
        Some(p) => format!(
            "\"{}\" (the latest of {} before the crash)",
            escape_controls(p),
            c.promises.len()
        ),
        None => "nothing yet".into(),
    };
    out.push((Detail::Promise, promise));
    out.push((Detail::Checker, c.outcome.describe()));
    if m.model != Model::Process && !c.lost.is_empty() && c.torn.is_none() {
        let line = match g.process_passes {
            Some(true) => "the same crash point passes with every op kept: the ops reached the file system and no further; what is missing is a sync, not a write",
            Some(false) => "the same crash point fails even with every op kept",
            None => "the same crash point with every op kept was not checked",
        };
        out.push((Detail::Process, line.to_string()));
    }
    out.push((Detail::Fix, fix_text(g, m.model)));
    out.push((Detail::Reproduce, reproduce(ctx, &c.id)));
    if g.ids.len() > 1 {
        let others: Vec<&str> = g.ids[1..].iter().take(5).map(String::as_str).collect();
        let more = g.ids.len() - 1 - others.len();
        out.push((
            Detail::Also,
            format!(
                "{}{}",
                others.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            ),
        ));
    }
    out
}

fn render_cause(
    out: &mut String,
    m: &ModelReport,
    g: &CauseGroup,
    n: usize,
    ctx: &ExportContext<'_>,
    paint: Paint,
    indent: &str,
) {
    let heading = format!("cause {} of {}:", n + 1, m.causes.len());
    let _ = writeln!(
        out,
        "{indent}{} {}",
        paint.heading(&heading),
        simplest_text(g)
    );
    for (detail, text) in cause_details(ctx.trace, m, g, ctx) {
        match detail {
            Detail::Sentence => {
                let _ = writeln!(out, "{indent}  {text}");
            }
            other => {
                let label = format!("{}:", other.label());
                let _ = writeln!(out, "{indent}  {label:<10} {text}");
            }
        }
    }
}

/// Cause `n` of a model as the text report prints it (its heading, then
/// its details indented by two spaces), without colour.
pub fn cause_text(m: &ModelReport, g: &CauseGroup, n: usize, ctx: &ExportContext<'_>) -> String {
    let mut out = String::new();
    render_cause(&mut out, m, g, n, ctx, Paint { on: false }, "");
    out
}

/// What a fix check cut short at its time bound says instead of a result.
fn cut_short() -> String {
    format!(
        "fix verification stopped at its time bound (as long as the run took to explore and check, at least {FIX_SECONDS_MIN} s)"
    )
}

/// The states a passing fix check speaks for: `all 6026 states` when it
/// was exact, else how many it checked and that it speaks for them alone.
pub fn fix_states_text(f: &FixCheck) -> String {
    if f.exact {
        format!("all {} states", for_people(f.states as u128))
    } else if f.states_checked == f.states {
        format!(
            "all {} states explored (verified on representative crash points only, not every one)",
            for_people(f.states as u128)
        )
    } else {
        format!(
            "all {} checked of {} states (verified on those alone: the fix time bound ended the rest)",
            for_people(f.states_checked as u128),
            for_people(f.states as u128)
        )
    }
}

/// The states a fix check checked: `6026`, or `1234 checked of 6026`.
fn checked_of(f: &FixCheck) -> String {
    if f.states_checked == f.states {
        for_people(f.states as u128)
    } else {
        format!(
            "the {} checked of {}",
            for_people(f.states_checked as u128),
            for_people(f.states as u128)
        )
    }
}

/// The `fix:` line of a cause: the verified fix, or why there is none.
pub fn fix_text(g: &CauseGroup, model: Model) -> String {
    match (&g.fix, g.fixes.first()) {
        (Some(f), _) if f.cut_short => format!(
            "not known: {} before adding {} was verified under {}",
            cut_short(),
            f.description,
            model.name()
        ),
        (Some(f), _) if f.passes_all() => format!(
            "{} {} makes {} pass under {}",
            fix_verb(f),
            f.description,
            fix_states_text(f),
            model.name()
        ),
        (Some(f), _) => match &f.own {
            // Judged on this cause: the others' states fail with it too.
            Some(own) if own.still_failing == 0 => format!(
                "{} {} fixes this cause: makes all {} of its states pass under {} ({} with it); {} states of the other causes still fail with it alone",
                fix_verb(f),
                f.description,
                for_people(own.states as u128),
                model.name(),
                states_checked_text(f),
                for_people(f.still_failing as u128),
            ),
            Some(own) => format!(
                "{} {} is not enough: {} states still fail for this cause (it had {}) under {} ({}){}",
                fix_verb(f),
                f.description,
                for_people(own.still_failing as u128),
                for_people(own.states as u128),
                model.name(),
                states_checked_text(f),
                still_failing_text(f, &own.simplest_failing)
            ),
            None => format!(
                "{} {} is not enough: {} of {} states still fail under {}{}",
                fix_verb(f),
                f.description,
                for_people(f.still_failing as u128),
                checked_of(f),
                model.name(),
                still_failing_text(f, &f.simplest_failing)
            ),
        },
        (None, Some(_)) => {
            "not verified (the checker could not be run, or more than the first few causes)".into()
        }
        (None, None) if g.log => "no sync fixes this, nor a replacement of the log: its recovery should drop a partial record at its end (checking each record's length and checksum before trusting it), or the program should write each record with one write".into(),
        (None, None) => "no single sync fixes this (see the cause)".into(),
    }
}

/// How many states of the trace with a fix were checked: `6026 states
/// checked`, `1234 of 6026 states checked`.
fn states_checked_text(f: &FixCheck) -> String {
    if f.states_checked == f.states {
        format!("{} states checked", for_people(f.states as u128))
    } else {
        format!(
            "{} of {} states checked",
            for_people(f.states_checked as u128),
            for_people(f.states as u128)
        )
    }
}

/// `; the simplest (ID, counting the added fsyncs as ops ...): WHY` for a
/// state still failing with a fix.
fn still_failing_text(f: &FixCheck, simplest: &Option<(String, String)>) -> String {
    match simplest {
        Some((id, why)) => format!(
            "; the simplest ({id}, counting the added {}{} as op{} {}): {why}",
            if f.replaced.is_empty() { "fsync" } else { "op" },
            if f.added_at.len() == 1 { "" } else { "s" },
            if f.added_at.len() == 1 { "" } else { "s" },
            f.added_at
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => String::new(),
    }
}

/// How a fix reads: syncs are added; a file updated in place is instead
/// written whole to a new one (the description says how).
pub fn fix_verb(f: &FixCheck) -> &'static str {
    if f.replaced.is_empty() {
        "adding"
    } else {
        "with"
    }
}

/// The line for the syncs that together fix every cause.
pub fn fix_set_text(set: &FixSet, model: Model) -> String {
    match set {
        FixSet::Found {
            check,
            minimal,
            unfixable,
        } if unfixable.is_empty() => format!(
            "fix for every cause: {} {} makes {} pass under {}{}",
            fix_verb(check),
            check.description,
            fix_states_text(check),
            model.name(),
            needed(check, *minimal)
        ),
        FixSet::Found {
            check,
            minimal,
            unfixable,
        } => format!(
            "fix for every cause a sync can fix: {} {} makes every state pass under {} but {} of {}, which no sync fixes ({}){}",
            fix_verb(check),
            check.description,
            model.name(),
            for_people(check.still_failing as u128),
            causes_named(unfixable),
            states_checked_text(check),
            needed(check, *minimal)
        ),
        FixSet::CutShort { tried } => format!(
            "fix for every cause not known: {} before the set of all {} proposed syncs was verified under {}",
            cut_short(),
            tried.syncs.len(),
            model.name()
        ),
        FixSet::NotFound {
            tried,
            unfixable,
            unfixable_failing,
        } => format!(
            "no set of the proposed syncs fixes every cause{}: with all {} of them, {} of {} states still fail under {}{}{}",
            if unfixable.is_empty() {
                String::new()
            } else {
                " a sync can fix".to_string()
            },
            tried.syncs.len(),
            for_people(tried.still_failing as u128),
            checked_of(tried),
            model.name(),
            if unfixable.is_empty() {
                String::new()
            } else {
                format!(
                    ", {} of them not {}, which no sync fixes",
                    for_people((tried.still_failing - unfixable_failing) as u128),
                    causes_named(unfixable)
                )
            },
            match &tried.simplest_failing {
                Some((id, why)) => format!("; the simplest ({id}): {why}"),
                None => String::new(),
            }
        ),
    }
}

/// ` (each of them is needed)` for a set of several syncs each tried
/// without.
fn needed(check: &FixCheck, minimal: bool) -> &'static str {
    if minimal && check.syncs.len() > 1 {
        " (each of them is needed)"
    } else {
        ""
    }
}

/// `cause 5's states` or `the states of causes 2 and 5` (numbered from 1,
/// as printed), for causes given by index.
fn causes_named(causes: &[usize]) -> String {
    let n: Vec<String> = causes.iter().map(|c| (c + 1).to_string()).collect();
    match n.as_slice() {
        [one] => format!("cause {one}'s states"),
        [rest @ .., last] => format!("the states of causes {} and {last}", rest.join(", ")),
        [] => String::new(),
    }
}

/// The `reproduce:` line for a state.
pub fn reproduce(ctx: &ExportContext<'_>, id: &str) -> String {
    match ctx.trace_path {
        Some(_) => reproduce_command(ctx, id),
        None => format!(
            "record with -o run.trace, then: {}",
            reproduce_command(ctx, id)
        ),
    }
}

/// The command that writes a state out: `blackout state TRACE ID DIR ...`
/// (`run.trace` standing for the trace when the run did not save one),
/// with the checker when it is a command.
pub fn reproduce_command(ctx: &ExportContext<'_>, id: &str) -> String {
    let check = if ctx.checker_flag.is_empty() {
        String::new()
    } else {
        format!(" {} {}", ctx.checker_flag, shell_quote(ctx.checker))
    };
    let tail = format!("{id} state-{id}{}{check}", ctx.state_flags);
    match ctx.trace_path {
        Some(t) => format!(
            "blackout state {} {tail} --trace-id {}",
            shell_quote(t),
            ctx.trace_id
        ),
        None => format!("blackout state run.trace {tail}"),
    }
}

/// A report line without its log line numbers (`, log line 12`,
/// ` (log line 12)`, ` (log lines 140-162)`, `, log lines 7-8`) and call
/// numbers (the same with `call`, `calls`: a native recording's), which
/// depend on how the program was built and started rather than on what it
/// does: for tables compared across machines, and recordings made either
/// way.
///
/// ```
/// use blackout_export::text::without_log_lines;
/// assert_eq!(
///     without_log_lines("op 3: rename a -> b (rename, log line 224) (log line 9)"),
///     "op 3: rename a -> b (rename)"
/// );
/// assert_eq!(
///     without_log_lines("fsync(.) after ops 2, 5 (log lines 140-162) is enough"),
///     "fsync(.) after ops 2, 5 is enough"
/// );
/// assert_eq!(
///     without_log_lines("instead of updated in place (ops 32-33, log lines 130-131)"),
///     "instead of updated in place (ops 32-33)"
/// );
/// assert_eq!(
///     without_log_lines("op 3: rename a -> b (rename, call 224) (calls 9-12)"),
///     "op 3: rename a -> b (rename)"
/// );
/// assert_eq!(
///     without_log_lines("fsync(.) before op 5 (calls 7-8), and call 3 (ops 2-3, calls 7-8)"),
///     "fsync(.) before op 5, and call 3 (ops 2-3)"
/// );
/// ```
pub fn without_log_lines(text: &str) -> String {
    let mut out = text.to_string();
    // Each form: its opening, whether a range `N-M` may follow, its closing.
    let forms = [
        (", log line ", false, ""),
        (" (log line ", false, ")"),
        (" (log lines ", true, ")"),
        (", log lines ", true, ""),
        (", call ", false, ""),
        (" (call ", false, ")"),
        (" (calls ", true, ")"),
        (", calls ", true, ""),
    ];
    for (start, range, end) in forms {
        let mut from = 0;
        while let Some(found) = out[from..].find(start) {
            let i = from + found;
            let tail = &out[i + start.len()..];
            let mut len = tail.bytes().take_while(u8::is_ascii_digit).count();
            if range && tail[len..].starts_with('-') {
                len += 1 + tail[len + 1..]
                    .bytes()
                    .take_while(u8::is_ascii_digit)
                    .count();
            }
            if len == 0 || !tail[len..].starts_with(end) {
                // Not a log line or call number: leave it and look
                // further on.
                from = i + start.len();
                continue;
            }
            out.replace_range(i..i + start.len() + len + end.len(), "");
            from = i;
        }
    }
    out
}
