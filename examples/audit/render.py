"""Renders the audit's reports (run.sh's AUDIT_HOME/results) as docs/AUDIT.md.

    python3 render.py RESULTS PROGRAMS > docs/AUDIT.md

Every cell comes from a report: a verdict from blackout's JSON, the call to
blame from the posix model's causes, the fix from its verified fix set. The
upstream-fixed pairs under the table (a program whose program.sh names, in
FIXED_IN, the program with upstream's fix) compare the two posix verdicts.
"""

import json
import os
import re
import sys

COLUMNS = ["posix", "ext4", "xfs", "btrfs"]


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
    """What blackout verified of one cause's proposed sync."""
    f = c.get("fix")
    if not f:
        return "no added sync fixes {} (the update must be made atomic)".format(
            c["cause"]["kind"].replace("_", " "))
    if f.get("passes"):
        return "verified: {} makes all {} states pass".format(f["description"], f["states"])
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


def main():
    results, programs = sys.argv[1], sys.argv[2]
    rows = []
    metas, verdicts = {}, {}
    for p in sorted(os.listdir(programs)):
        meta = load(os.path.join(results, p + ".meta.json"))
        if meta is None:
            continue
        reports = {c: load(os.path.join(results, "{}.{}.json".format(p, c))) for c in COLUMNS}
        errs = {c: os.path.join(results, "{}.{}.err".format(p, c)) for c in COLUMNS}
        posix = reports["posix"]
        metas[p] = meta
        verdicts[p] = posix["verdict"] if posix and "verdict" in posix else "not run"
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
                fs = m.get("fix_set") or {}
                check = fs.get("check") or {}
                passing = [c["fix"] for c in m["causes"] if (c.get("fix") or {}).get("passes")]
                if fs.get("result") == "found" and check.get("passes"):
                    fix = verified(check)
                elif passing:
                    fix = verified(passing[0])
                else:
                    fix = "; ".join(cause_fix(c) for c in m["causes"])
        blocks = {c: block_cell(reports[c], errs[c]) for c in COLUMNS[1:]}
        ran = [b for b in blocks.values() if not b.startswith("not run")]
        if posix_cell == "FAIL" and ran and all(b.startswith("PASS") for b in ran):
            posix_cell = "FAIL (what POSIX allows; not seen on {})".format(
                ", ".join(c for c in COLUMNS[1:] if not blocks[c].startswith("not run")))
        rows.append([meta["name"], meta["ecosystem"], meta["version"], meta["action"], posix_cell]
                    + [blocks[c] for c in COLUMNS[1:]] + [blame, fix])
    total = 0
    for name in os.listdir(results):
        if name.endswith(".seconds") and name != "total.seconds":
            with open(os.path.join(results, name)) as f:
                total += int(f.read().strip() or 0)
    out = sys.stdout
    out.write(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "head.md")).read())
    out.write("\n| program | from | version | what the workload does | posix | ext4 | xfs | btrfs | call to blame | blackout's verified fix |\n")
    out.write("|---|---|---|---|---|---|---|---|---|---|\n")
    for r in rows:
        out.write("| " + " | ".join(cell(x) for x in r) + " |\n")
    fixes = pairs(metas, verdicts)
    if fixes:
        out.write("\n**Upstream-fixed pairs** (posix, the same workload and checker on a "
                  "release from before upstream's fix and on a release with it):\n\n")
        out.writelines(fixes)
    out.write("\nThe last run took {} s here (2 cores), summed over the cells.\n".format(total))


if __name__ == "__main__":
    main()
