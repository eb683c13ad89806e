"""Renders the audit's reports (run.sh's AUDIT_HOME/results) as docs/AUDIT.md.

    python3 render.py RESULTS PROGRAMS [REPORTS] > docs/AUDIT.md
    python3 render.py --headline docs/AUDIT.md [README.md]

Every cell comes from a report: a verdict from blackout's JSON (or, for a
server, from its soaks' reports), the call to blame from the posix model's
causes, the fix from its verified fix set; the promise from the program's
program.sh (PROMISE, quoted from its documentation). The upstream-fixed
pairs under the table (a program whose program.sh names, in FIXED_IN, the
program with upstream's fix) compare the two posix verdicts. With REPORTS,
a report for each FAIL the headline counts is written there as NAME.md
(docs/audit/). The headline sentence is computed from the table's rows
alone: `--headline` prints the one a checked-in table gives, or writes it
into the README between its `<!-- audit headline -->` markers.
"""

import json
import os
import re
import sys

COLUMNS = ["posix", "ext4", "xfs", "btrfs"]
HEADER = ["program", "from", "version", "what the workload does", "promised", "posix", "ext4",
          "xfs", "btrfs", "call to blame", "blackout's verified fix"]

# A program's promise, as its own documentation states it (PROMISE in its
# program.sh) and as the table words it.
PROMISES = {
    "durable": "promises durability",
    "caller": "leaves syncing to the caller",
    "os": "leaves flushing to the OS",
    "none": "disclaims durability",
    "silent": "silent",
}


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def first_line(path):
    try:
        with open(path) as f:
            lines = [l.strip() for l in f if l.strip()]
    except OSError:
        return "no report"
    errors = [l for l in lines if l.lower().startswith("error")]
    return (errors or ["no report"])[-1]


def cell(text):
    """A table cell: the same on every run (log line numbers and the random
    names of temporary files vary from recording to recording)."""
    text = re.sub(r"(, log lines? \d+(-\d+)?| \(log lines? \d+(-\d+)?\))", "", str(text))
    text = re.sub(r"\btmp[a-z0-9_]{8}\b", "tmpXXXXXXXX", text)
    text = re.sub(r"\.tmp[A-Za-z0-9]{6}\b", ".tmpXXXXXX", text)
    text = re.sub(r"(?<![\w.])\.atomicwrite\.[A-Za-z0-9]{12}\b", ".atomicwrite.XXXXXXXXXXXX", text)
    text = re.sub(r"(?<![\w.])(\.[\w-]+\.[\w-]+)\.[A-Za-z0-9]{6}\b", r"\1.XXXXXX", text)
    # write-file-atomic's temporary name: the file's, a dot and a hash of
    # the process id and a counter.
    text = re.sub(r"\b([\w-]+\.[A-Za-z]+)\.\d{7,}\b", r"\1.NNNNNNNNNN", text)
    return text.replace("|", "\\|").replace("\n", " ")


def posix_model(report):
    for m in report["result"].get("models", []):
        if m["model"] == "posix":
            return m
    return None


def verified(check):
    """A fix that passed: on every state, or on those checked."""
    if check.get("exact"):
        return "verified: {} makes all {} states pass under posix".format(
            check["description"], check["states"])
    return ("verified on a sample: {} makes the {} states checked of {} pass under posix "
            "(fix verification's time bound)").format(
        check["description"], check["states_checked"], check["states"])


def cause_fix(c):
    """What blackout verified of one cause's proposed fix."""
    f = c.get("fix")
    kind = c["cause"]["kind"].replace("_", " ")
    if not f:
        if c["cause"]["kind"] == "torn_tail":
            return "a torn last write ({}) needs recovery that drops a partial record at the log's end".format(
                c["cause"]["blamed"] and "op {}".format(c["cause"]["blamed"]["op"]))
        return "no added sync fixes {} (the update must be made atomic)".format(kind)
    own = f.get("own") or {}
    if f.get("passes") and f.get("still_failing") == 0:
        return "verified: {} makes all {} states pass".format(f["description"], f["states"])
    if f.get("passes"):
        return "verified: {} makes {} {} states pass ({} states of other causes still fail with it alone)".format(
            f["description"], own.get("states", "its"), kind, f.get("still_failing"))
    return "{}: verified not enough ({} of {} states still fail)".format(
        f["description"], f["still_failing"], f["states"])


def source(place):
    """A source line as the program's own tree names it (`src/main.rs:8`),
    wherever the audit installed it."""
    return re.sub(r"^.*/(src/[^/]+:\d+)$", r"\1", place)


def pairs(metas, verdicts):
    """One line per upstream-fixed pair: the older release's posix verdict,
    then the fixed release's, both from their reports (`metas` and
    `verdicts` by program, as main read them)."""
    lines = []
    for p, meta in metas.items():
        if not meta.get("fixed_in"):
            continue
        q = meta["fixed_in"]
        fixed = metas.get(q)
        old, new = verdicts[p], verdicts.get(q, "not run")
        if fixed is None:
            line = "- {} from {}: {} {} -> {} not run".format(
                meta["name"], meta["ecosystem"], meta["version"], old, q)
        else:
            line = "- {} from {}: {} {} -> {} {}".format(
                fixed["name"], fixed["ecosystem"], meta["version"], old, fixed["version"], new)
        if (old, new) != ("FAIL", "PASS"):
            line += " (the verdict does not flip)"
        lines.append(line + "\n")
    return lines


def block_cell(report, err):
    if report is None or not report.get("block") or "verdict" not in report["block"]:
        return "not run: " + first_line(err)
    verdict = report["block"]["verdict"]
    repeat = report.get("repeat")
    if not repeat:
        return verdict
    verdicts = repeat["verdicts"]
    if repeat.get("varied"):
        return "{} (varied: {})".format(verdict, ", ".join(verdicts))
    return "{} (held {}/{})".format(verdict, len(verdicts), len(verdicts))


def promise_cell(meta):
    """What the program promised, with the quote or what was read, and
    where."""
    kind = meta.get("promise") or ""
    label = PROMISES.get(kind, "not stated")
    if kind == "silent":
        text = "silent: " + (meta.get("note") or "no statement found")
    elif meta.get("quote"):
        text = "{}: \u201c{}\u201d".format(label, meta["quote"])
    else:
        text = label
    if meta.get("link"):
        text += " ([source]({}))".format(meta["link"])
    return text


def soaks(results, p):
    """A server's soak reports, by seed: (seed, verdict line, report)."""
    out = []
    for name in sorted(os.listdir(results)):
        m = re.match(re.escape(p) + r"\.soak\.(\d+)\.txt$", name)
        if not m:
            continue
        with open(os.path.join(results, name)) as f:
            text = f.read()
        line = next((l for l in text.splitlines() if re.match(r"(PASS|FAIL): ", l)), None)
        out.append((int(m.group(1)), line, text))
    return sorted(out)


def dropped(text):
    """The kinds of ops a soak's failing crash dropped, each once: byte
    ranges and process ids left out (they vary from run to run)."""
    seen = []
    for l in text.splitlines():
        m = re.match(r"\s+dropped (.*)$", l)
        if not m:
            continue
        d = re.sub(r" \[\d+, \d+\)", "", m.group(1))
        d = re.sub(r"-\d+\.aof", "-N.aof", d)
        if d not in seen:
            seen.append(d)
    return seen


def soak_row(meta, reports):
    """A server's cells: posix (the live file system) from its soaks, the
    block columns not measured, the blame from the first failing soak."""
    if not reports or any(line is None for _, line, _ in reports):
        return ["not run: no soak report"] + ["not measured (a server: soaked on the live file "
                                              "system)"] * 3 + ["—", "—"]
    verdicts = [line.split(":")[0] for _, line, _ in reports]
    verdict = "FAIL" if "FAIL" in verdicts else "PASS"
    crashes = re.search(r" of (\d+) \(seed| (\d+) crashes", reports[0][1])
    n = next(g for g in crashes.groups() if g) if crashes else "?"
    how = "{} soaks of {} crash{} on the live file system".format(
        len(reports), n, "" if n == "1" else "es")
    if len(set(verdicts)) == 1:
        posix = "{} (held {}/{}: {})".format(verdict, len(reports), len(reports), how)
    else:
        posix = "{} (varied: {}; {})".format(verdict, ", ".join(verdicts), how)
    blame = fix = "—"
    if verdict == "FAIL":
        posix += "; what POSIX allows, not measured on ext4, xfs, btrfs"
        _, line, text = next(r for r in reports if r[1].startswith("FAIL"))
        kinds = dropped(text)
        blame = "acknowledged writes were gone after a power failure, which dropped: " + "; ".join(
            kinds[:4]) + ("; and {} more (the row's report lists them)".format(len(kinds) - 4)
                          if len(kinds) > 4 else "")
        fix = "not verified (a soak verifies no fix)"
    return [posix] + ["not measured (a server: soaked on the live file system)"] * 3 + [blame, fix]


def run_row(results, p, meta):
    """A recorded program's cells: posix from its posix report, each file
    system from its block report."""
    reports = {c: load(os.path.join(results, "{}.{}.json".format(p, c))) for c in COLUMNS}
    errs = {c: os.path.join(results, "{}.{}.err".format(p, c)) for c in COLUMNS}
    posix = reports["posix"]
    blame, fix = "—", "—"
    if posix is None or "verdict" not in posix:
        posix_cell = "not run: " + first_line(errs["posix"])
    else:
        posix_cell = posix["verdict"]
        m = posix_model(posix)
        if m and m["causes"]:
            blame = "; ".join(
                c["cause"]["sentence"] + (" (at {})".format(source(c["source"])) if c.get("source") else "")
                for c in m["causes"]
            )
            fix = fix_text(m)
    blocks = {c: block_cell(reports[c], errs[c]) for c in COLUMNS[1:]}
    ran = [b for b in blocks.values() if not b.startswith("not run")]
    if posix_cell == "FAIL" and ran and all(b.startswith("PASS") for b in ran):
        posix_cell = "FAIL (what POSIX allows; not seen on {})".format(
            ", ".join(c for c in COLUMNS[1:] if not blocks[c].startswith("not run")))
    return [posix_cell] + [blocks[c] for c in COLUMNS[1:]] + [blame, fix]


def fix_text(m):
    """The fix blackout verified for a posix model's causes: one that makes
    every state pass (the fix set, or one cause's fix that passes them all),
    else the fix set with the states it leaves failing, else each cause's."""
    fs = m.get("fix_set") or {}
    check = fs.get("check") or {}
    if fs.get("result") == "found" and check.get("passes"):
        return verified(check)
    whole = [c["fix"] for c in m["causes"]
             if (c.get("fix") or {}).get("passes") and c["fix"].get("still_failing") == 0]
    if whole:
        return verified(whole[0])
    if fs.get("result") == "found" and check:
        unfixable = [m["causes"][i] for i in fs.get("unfixable") or []]
        return ("verified: {} makes every state pass under posix but {} of the {} checked, which "
                "no sync fixes: {}").format(
            check["description"], check["still_failing"], check["states_checked"],
            "; ".join(cause_fix(c) for c in unfixable) or "their causes need another change")
    return "; ".join(cause_fix(c) for c in m["causes"])


def current(row):
    """A program at its current release: not a control, not a release from
    before an upstream fix (the headline counts only these)."""
    return not row[0].startswith("control:") and "before upstream" not in row[0]


def counted(row):
    """A FAIL the headline counts: a current release whose documentation
    promises durability, failing under the posix model (or its soak)."""
    return current(row) and row[4].startswith(PROMISES["durable"]) and row[5].startswith("FAIL")


def headline(rows):
    """The audit's headline, from the table's rows (HEADER's cells, as
    written): the programs at their current release (controls and the
    releases from before an upstream fix aside), by what their
    documentation promises, and how many of each can lose a write they
    reported saved: on a real file system, only where POSIX allows it, or
    on the live file system (a soaked server, not measured on a real one)."""
    rows = [r for r in rows if current(r)]
    def fails(r):
        return r[5].startswith("FAIL")
    by = {}
    for r in rows:
        kind = next((k for k, v in PROMISES.items() if r[4].startswith(v)), "silent")
        by.setdefault(kind, []).append(r)
    durable = by.get("durable", [])
    lost = [r for r in durable if counted(r)]
    where = [
        (sum(1 for r in lost if any(c.startswith("FAIL") for c in r[6:9])), "on ext4, xfs or btrfs"),
        (sum(1 for r in lost if r[6:9] and all(c.startswith("PASS") for c in r[6:9])),
         "only where POSIX allows it"),
        (sum(1 for r in lost if all(c.startswith("not measured") for c in r[6:9])),
         "on the live file system (a server, not measured on a real one)"),
    ]
    text = ("Of {} programs and server configurations from PyPI, npm, crates.io and Debian, {} "
            "promise durability in their own documentation, and {} of those can lose a write they "
            "reported saved ({})").format(
        len(rows), len(durable), len(lost),
        "; ".join("`{}`".format(re.sub(r" \(.*\)$", "", r[0])) for r in lost))
    parts = ["{} {}".format(n, w) for n, w in where if n]
    text += ": " + ", ".join(parts) + "." if parts else "."
    silent = by.get("silent", [])
    text += " {} are silent on durability, and {} of them can lose a write after reporting success".format(
        len(silent), sum(1 for r in silent if fails(r)))
    others = sum((by.get(k, []) for k in ("caller", "os", "none")), [])
    text += ("; {} document that they leave syncing to their caller or the OS, or disclaim "
             "durability, and are not counted.").format(len(others))
    return text


def table_rows(table):
    """A checked-in table's rows, as cells (the headline's input)."""
    rows = []
    for line in table.splitlines():
        if not line.startswith("| ") or line.startswith("| program |"):
            continue
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if len(cells) == len(HEADER):
            rows.append(cells)
    return rows


def fail_report(p, meta, row, results):
    """docs/audit/NAME.md: one counted FAIL, for the program's maintainers."""
    out = ["# {} {}: {}\n\n".format(meta["name"], meta["version"], "can lose a write it reported saved"),
           "Generated by `examples/audit/run.sh` from its reports (do not edit by hand); one row of "
           "[the audit](../AUDIT.md).\n\n",
           "- **Program**: {} {}, from {}\n".format(meta["name"], meta["version"], meta["ecosystem"]),
           "- **What it promises**: {}\n".format(promise_cell(meta)),
           "- **Configuration**: {}\n".format(meta.get("config") or "as installed: its defaults"),
           "- **What the workload does**: {}\n".format(meta["action"])]
    out.append("- **Verdicts**: " + "; ".join(
        "{}: {}".format(c, row[5 + i]) for i, c in enumerate(COLUMNS)) + "\n\n")
    if meta.get("kind") == "soak":
        out += soak_report(p, results)
    else:
        out += run_report(p, meta, results)
    return "".join(out)


def soak_report(p, results):
    out = ["## What the power failure dropped\n\n",
           "Each soak crashes the server under the client's load; the first failing one's report "
           "(counts vary from run to run, the seed repeats the crash moments):\n\n```\n"]
    _, _, text = next(r for r in soaks(results, p) if r[1] and r[1].startswith("FAIL"))
    out += [l + "\n" for l in text.splitlines() if not l.startswith("crash ")]
    out += ["```\n\n## The fix\n\nNot verified: a soak verifies no fix. The dropped ops above name "
            "the syncs that would have kept them.\n\n",
            "## Reproduce\n\n```sh\ncargo build --release\nAUDIT_COLUMNS=posix examples/audit/run.sh {}\n"
            "cat target/audit/results/{}.soak.1.txt\n```\n".format(p, p)]
    return out


def run_report(p, meta, results):
    report = load(os.path.join(results, p + ".posix.json"))
    m = posix_model(report)
    out = ["## The calls\n\nThe op log blackout recorded (`blackout ops`), the op number first:\n\n```\n"]
    try:
        with open(os.path.join(results, p + ".posix.ops")) as f:
            ops = f.read().splitlines()[1:]
    except OSError:
        ops = []
    out += [normal(re.sub(r"@\d+", "", l)).rstrip() + "\n" for l in ops]
    out.append("```\n\n## The crashes that break the promise\n\n")
    for i, c in enumerate(m["causes"]):
        s = c["simplest"]
        lost = ", ".join("op {}".format(x["op"]) for x in s.get("lost") or []) or "none"
        out.append("{}. {}{}\n   - simplest state `{}`: crash after op {}, lost {}; the checker: {}\n".format(
            i + 1, normal(c["cause"]["sentence"]),
            " (at {})".format(source(c["source"])) if c.get("source") else "",
            s["id"], s["crash"] - 1, lost, normal(s.get("reason") or s.get("status") or "")))
    out.append("\n## The fix blackout verified\n\n{}\n\n".format(normal(fix_text(m))))
    state = m["causes"][0]["simplest"]["id"]
    out.append("## Reproduce\n\nFrom a clean checkout (installs {} {} into `target/audit`):\n\n"
               "```sh\ncargo build --release\nAUDIT_COLUMNS=posix examples/audit/run.sh {}\n"
               "target/release/blackout state target/audit/results/{}.posix.trace {} state-{}\n```\n\n"
               "The second command writes the simplest failing state into `state-{}`; the program's "
               "checker is `examples/audit/programs/{}/check.sh` (or `examples/audit/check-json.sh`).\n".format(
                   meta["name"], meta["version"], p, p, state, state, state, p))
    return out


def normal(text):
    """Text the same on every run, outside a table."""
    return cell(text).replace("\\|", "|")


def main():
    if sys.argv[1] == "--headline":
        with open(sys.argv[2]) as f:
            line = headline(table_rows(f.read()))
        if len(sys.argv) > 3:
            with open(sys.argv[3]) as f:
                text = f.read()
            text = re.sub(r"(<!-- audit headline -->\n).*?(\n<!-- /audit headline -->)",
                          lambda m: m.group(1) + line + m.group(2), text, flags=re.S)
            with open(sys.argv[3], "w") as f:
                f.write(text)
        else:
            print(line)
        return
    results, programs = sys.argv[1], sys.argv[2]
    reports_dir = sys.argv[3] if len(sys.argv) > 3 else None
    rows = []
    metas, verdicts, keys = {}, {}, []
    for p in sorted(os.listdir(programs)):
        meta = load(os.path.join(results, p + ".meta.json"))
        if meta is None:
            continue
        metas[p] = meta
        if meta.get("kind") == "soak":
            cells = soak_row(meta, soaks(results, p))
        else:
            cells = run_row(results, p, meta)
        verdicts[p] = cells[0].split(" ")[0] if cells[0][:4] in ("PASS", "FAIL") else "not run"
        rows.append([meta["name"], meta["ecosystem"], meta["version"], meta["action"], promise_cell(meta)]
                    + cells)
        keys.append(p)
    total = 0
    for name in os.listdir(results):
        if name.endswith(".seconds") and name != "total.seconds":
            with open(os.path.join(results, name)) as f:
                total += int(f.read().strip() or 0)
    out = sys.stdout
    cells = [[cell(x) for x in r] for r in rows]
    out.write("# The audit: what blackout finds in software people use\n\n")
    out.write("**Headline.** " + headline(table_rows(
        "".join("| " + " | ".join(r) + " |\n" for r in cells))) + "\n\n")
    out.write(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "head.md")).read())
    out.write("\n| " + " | ".join(HEADER) + " |\n")
    out.write("|" + "---|" * len(HEADER) + "\n")
    for r in cells:
        out.write("| " + " | ".join(r) + " |\n")
    fixes = pairs(metas, verdicts)
    if fixes:
        out.write("\n**Upstream-fixed pairs** (posix, the same workload and checker on a "
                  "release from before upstream's fix and on a release with it):\n\n")
        out.writelines(fixes)
    out.write("\nThe last run took {} s here (2 cores), summed over the cells.\n".format(total))
    if reports_dir:
        os.makedirs(reports_dir, exist_ok=True)
        for name in os.listdir(reports_dir):
            if name.endswith(".md"):
                os.remove(os.path.join(reports_dir, name))
        for p, c in zip(keys, cells):
            if counted(c):
                with open(os.path.join(reports_dir, p + ".md"), "w") as f:
                    f.write(fail_report(p, metas[p], c, results))


if __name__ == "__main__":
    main()
