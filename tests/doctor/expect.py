#!/usr/bin/python3
"""expect.py — doctor.sh's assertions on one `gpuingestd --doctor` run.

    expect.py NAME RC OUT.json OUT.txt ASSERTION...

NAME names the run in messages; RC is the exit status of the --json run;
OUT.txt is the text output of the same run.  Always checked: the JSON parses,
its ok/warn/fail counts match its checks, RC is 0 exactly when no check
fails, and the text output has one line per check, in the same order,
starting with its verdict and id, then the summary line.  Assertions:

  rc=N[|M]          the exit status is N (or M)
  nofail            no check fails
  onlyfail=A,B      the failing checks are exactly A and B (by id)
  anyfail=A,B       at least one of A, B fails
  ID=VERDICT        a check ID with that verdict exists...
  ~TEXT             ...whose finding contains TEXT (applies to the last ID=VERDICT)
  fix~TEXT          ...whose fix contains TEXT
  !PREFIX=VERDICT   no check whose id starts with PREFIX has that verdict
  !ID               no check ID at all
  !~TEXT            no check's finding or fix contains TEXT
"""
import json
import re
import sys


def main(argv):
    name, rc, json_path, text_path, args = argv[1], int(argv[2]), argv[3], argv[4], argv[5:]
    errors = []
    raw = open(json_path).read()
    text = open(text_path).read()

    def show():
        return "\n--- text output ---\n" + text

    try:
        doc = json.loads(raw)
    except ValueError as e:
        print("FAIL %s: --json output does not parse (%s):\n%s" % (name, e, raw))
        return 1
    checks = doc["checks"]
    counts = {v: sum(1 for c in checks if c["verdict"] == v) for v in ("ok", "warn", "fail")}
    for v in counts:
        if doc[v] != counts[v]:
            errors.append("JSON says %s=%d but has %d such checks" % (v, doc[v], counts[v]))
    if any(c["verdict"] not in counts for c in checks):
        errors.append("a verdict other than ok/warn/fail")
    if rc != (1 if counts["fail"] else 0):
        errors.append("exit status %d with %d failing checks" % (rc, counts["fail"]))

    # the text output: one line per check, in order, then the summary
    lines = text.rstrip("\n").split("\n")
    if len(lines) != len(checks) + 1:
        errors.append("text output has %d lines for %d checks (+1 summary)" % (len(lines), len(checks)))
    for line, c in zip(lines, checks):
        m = re.match(r"^(ok|warn|fail) +(\S+) +(.*)$", line)
        if not m or m.group(1) != c["verdict"] or m.group(2) != c["check"] or c["finding"] not in m.group(3):
            errors.append("text line %r does not match JSON check %r" % (line, c))
    if not re.match(r"^%d ok, %d warn, %d fail" % (counts["ok"], counts["warn"], counts["fail"]), lines[-1]):
        errors.append("text summary line %r does not match the counts %r" % (lines[-1], counts))

    fails = sorted({c["check"] for c in checks if c["verdict"] == "fail"})
    want = None  # [id, verdict, [finding fragments], [fix fragments], spec]

    def settle():
        if want is None:
            return
        cid, verdict, frags, fixes, spec = want
        same = [c for c in checks if c["check"] == cid]
        if not any(c["verdict"] == verdict and all(f in c["finding"] for f in frags)
                   and all(f in c["fix"] for f in fixes) for c in same):
            errors.append("no check %s; %s checks: %s" % (spec, cid, json.dumps(same, indent=1) if same else "none"))

    for a in args:
        if a.startswith("~"):
            want[2].append(a[1:])
            want[4] += " " + a
            continue
        if a.startswith("fix~"):
            want[3].append(a[4:])
            want[4] += " " + a
            continue
        settle()
        want = None
        if a.startswith("!~"):
            bad = [c for c in checks if a[2:] in c["finding"] or a[2:] in c["fix"]]
            if bad:
                errors.append("unexpected %s: %s" % (a, json.dumps(bad, indent=1)))
        elif a.startswith("rc="):
            if str(rc) not in a[3:].split("|"):
                errors.append("exit status %d, expected %s" % (rc, a[3:]))
        elif a == "nofail":
            if fails:
                errors.append("failing checks: %s" % ", ".join(fails))
        elif a.startswith("onlyfail="):
            if fails != sorted(a[9:].split(",")):
                errors.append("failing checks are [%s], expected [%s]" % (", ".join(fails), a[9:]))
        elif a.startswith("anyfail="):
            if not set(fails) & set(a[8:].split(",")):
                errors.append("none of %s fails (failing: %s)" % (a[8:], ", ".join(fails) or "none"))
        elif a.startswith("!"):
            prefix, _, verdict = a[1:].partition("=")
            bad = [c for c in checks if (c["check"].startswith(prefix) if verdict else c["check"] == prefix)
                   and (not verdict or c["verdict"] == verdict)]
            if bad:
                errors.append("unexpected %s: %s" % (a, json.dumps(bad, indent=1)))
        elif "=" in a:
            cid, _, verdict = a.partition("=")
            want = [cid, verdict, [], [], a]
        else:
            errors.append("expect.py: cannot read assertion %r" % a)
    settle()

    if errors:
        print("FAIL %s:\n  %s%s" % (name, "\n  ".join(errors), show()))
        return 1
    print("ok   %s (%d ok, %d warn, %d fail)" % (name, counts["ok"], counts["warn"], counts["fail"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
