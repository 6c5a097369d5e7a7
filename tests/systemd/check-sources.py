#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""check-sources.py DECODED CHECK...

Checks the round-1 data sources in a trace decoded by `protoc --decode=tracebus.Trace`
(text format), recorded under the shipped unit by tests/systemd/run.sh. Checks:
  sys-stats            SysStats packets with meminfo, vmstat and cpu_stat values;
  process=PID          ProcessStats names PID with a nonzero vm_rss_kb;
  cpu-info             a CpuInfo with at least one cpu;
  journal=TEXT         a journald event whose message holds TEXT;
  journal-unit=UNIT    ... and one whose systemd_unit is UNIT;
  no-journal=TEXT      no journald event holds TEXT;
  ksyms                workqueue_execute_start events whose functions are all interned
                       kernel symbols with names (never 0, never a raw address);
  unknown-event=E      FtraceStats.unknown_ftrace_events lists E, and a "warning: ..."
                       instant names it;
  warning=TEXT         a "warning: ..." instant holds TEXT;
  probe=NAME           events of the kprobe NAME (their name in the trace).
Prints what it found; exits 1 when a check fails."""
import re
import sys

text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
ok = True


def fail(msg):
    global ok
    print(f"check-sources: FAIL: {msg}")
    ok = False


def blocks(name):
    """The bodies of every `name { ... }` message, nested braces included."""
    out = []
    for m in re.finditer(r"\b%s \{" % re.escape(name), text):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        out.append(text[m.end():i - 1])
    return out


def journal_events():
    """Perfetto v58's SystemdJournaldEvent: one journald_event per entry (the stats one
    has no message)."""
    return [b for b in blocks("journald_event") if "message:" in b]


for check in sys.argv[2:]:
    key, _, arg = check.partition("=")
    if key == "sys-stats":
        s = blocks("sys_stats")
        have = {k: sum(1 for b in s if re.search(r"\b%s \{" % k, b)) for k in ("meminfo", "vmstat", "cpu_stat")}
        print(f"check-sources: {len(s)} SysStats packets; with {have}")
        if not s or not all(have.values()):
            fail("SysStats without meminfo, vmstat or cpu_stat")
    elif key == "process":
        rss = []
        for p in blocks("process_stats"):
            for m in re.finditer(r"processes \{(.*?)\}", p, re.S):
                if re.search(r"^\s*pid: %s$" % arg, m.group(1), re.M):
                    rss += [int(v) for v in re.findall(r"vm_rss_kb: (\d+)", m.group(1))]
                    smr = re.findall(r"smr_rss_kb: (\d+)", m.group(1))
                    if smr:
                        print(f"check-sources: pid {arg}: smr_rss_kb {smr[0]} (smaps_rollup readable)")
        print(f"check-sources: ProcessStats for pid {arg}: vm_rss_kb {rss[:3]}")
        if not any(rss):
            fail(f"no ProcessStats with a vm_rss_kb for pid {arg}")
    elif key == "cpu-info":
        cpus = [b for c in blocks("cpu_info") for b in re.findall(r"processor: \"(.*?)\"", c)]
        print(f"check-sources: CpuInfo: {len(cpus)} cpus, {cpus[:1]}")
        if not cpus:
            fail("no CpuInfo cpu")
    elif key in ("journal", "no-journal"):
        hits = [e for e in journal_events() if arg in e]
        print(f"check-sources: {len(journal_events())} journald events; {len(hits)} hold {arg!r}")
        if (key == "journal") != bool(hits):
            fail(f"journald event with {arg!r} {'missing' if key == 'journal' else 'recorded'}")
    elif key == "journal-unit":
        hits = [e for e in journal_events() if f'systemd_unit: "{arg}"' in e]
        print(f"check-sources: {len(hits)} journald events of {arg}")
        if not hits:
            fail(f"no journald event of the unit {arg}")
    elif key == "ksyms":
        names = dict(re.findall(r"kernel_symbols \{\s*iid: (\d+)\s*str: \"(.*?)\"", text))
        funcs = [int(f) for b in blocks("workqueue_execute_start") for f in re.findall(r"function: (\d+)", b)]
        unnamed = [f for f in funcs if str(f) not in names]
        print(f"check-sources: {len(names)} kernel symbols ({sorted(set(names.values()))[:4]}...); "
              f"{len(funcs)} workqueue functions, {len(unnamed)} without a name")
        if not names or not funcs or unnamed or any(not n for n in names.values()):
            fail("workqueue functions are not all named kernel symbols")
    elif key == "unknown-event":
        listed = re.findall(r'unknown_ftrace_events: "(.*?)"', text)
        instant = re.findall(r'"(warning: [^"]*%s[^"]*)"' % re.escape(arg), text)
        print(f"check-sources: unknown_ftrace_events {listed}; warning instants {instant[:1]}")
        if arg not in listed or not instant:
            fail(f"the warning about {arg} is not in the trace")
    elif key == "warning":
        instant = re.findall(r'"(warning: [^"]*%s[^"]*)"' % re.escape(arg), text)
        print(f"check-sources: warning instants holding {arg!r}: {len(instant)}")
        if not instant:
            fail(f"no warning holding {arg!r} in the trace")
    elif key == "probe":
        n = text.count(f'"{arg}"')
        print(f"check-sources: {n} mentions of the probe {arg}")
        if not n:
            fail(f"no events of the probe {arg}")
    else:
        fail(f"unknown check {check}")
sys.exit(0 if ok else 1)
