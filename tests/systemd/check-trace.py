#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""check-trace.py DECODED [--min-events N] [--min-span S] [--probe COMM]

Checks a trace decoded by `protoc --decode=tracebus.Trace` (text format):
  --min-events N  at least N sched_switch events;
  --min-span S    the ftrace events span at least S seconds (the recording was not
                  cut short, as when another service switched its instance off);
  --probe COMM    every process-tree entry for a pid that sched_switch shows running
                  as COMM names COMM: pid->name labels use the events' pids, also
                  when the service runs in a pid namespace of its own; and at
                  most a third of the pids both the tree and the events name
                  disagree on the name (another numbering gets nearly all wrong).
Prints what it found; exits 1 when a check fails."""
import argparse
import re
import sys

ap = argparse.ArgumentParser()
ap.add_argument("decoded")
ap.add_argument("--min-events", type=int, default=1)
ap.add_argument("--min-span", type=float, default=0)
ap.add_argument("--probe")
a = ap.parse_args()
text = open(a.decoded, encoding="utf-8", errors="replace").read()

switch = re.compile(r'sched_switch \{\s*prev_comm: "(.*?)"\s*prev_pid: (-?\d+).*?'
                    r'next_comm: "(.*?)"\s*next_pid: (-?\d+)', re.S)
comm_of = {}
n_switch = 0
for m in switch.finditer(text):
    n_switch += 1
    comm_of.setdefault(int(m.group(2)), set()).add(m.group(1))
    comm_of.setdefault(int(m.group(4)), set()).add(m.group(3))
# Events as separate messages: their own timestamp field.
stamps = [int(t) for t in re.findall(r"^\s*event \{\s*timestamp: (\d+)", text, re.M)]
# The compact form (the default): columns per bundle, timestamps delta-coded from an
# absolute first one, comms in the bundle's intern table.
for block in re.findall(r"compact_sched \{(.*?)\}", text, re.S):
    col = lambda name: re.findall(r"^\s*%s: (.*)$" % name, block, re.M)
    interned = [json_str for json_str in col("intern_table")]
    t = 0
    for d in col("switch_timestamp"):
        t += int(d)
        stamps.append(t)
    for pid, idx in zip(col("switch_next_pid"), col("switch_next_comm_index")):
        n_switch += 1
        comm = interned[int(idx)].strip('"') if int(idx) < len(interned) else "?"
        comm_of.setdefault(int(pid), set()).add(comm)
span = (max(stamps) - min(stamps)) / 1e9 if stamps else 0.0

names = {}  # pid -> names the process tree gives it
for m in re.finditer(r"threads \{\s*tid: (\d+)\s*name: \"(.*?)\"", text):
    names.setdefault(int(m.group(1)), set()).add(m.group(2))
for m in re.finditer(r"processes \{\s*pid: (\d+)(.*?)\n\s*\}", text, re.S):
    first = re.search(r'cmdline: "(.*?)"', m.group(2))
    if first:
        names.setdefault(int(m.group(1)), set()).add(first.group(1).rsplit("/", 1)[-1][:15])

print(f"check-trace: {n_switch} sched_switch events over {span:.2f} s; "
      f"{len(names)} pids named by the process tree")
ok = True
if n_switch < a.min_events:
    print(f"check-trace: FAIL: fewer than {a.min_events} sched_switch events")
    ok = False
if span < a.min_span:
    print(f"check-trace: FAIL: events span {span:.2f} s, less than {a.min_span} s")
    ok = False
if a.probe:
    pids = sorted(p for p, c in comm_of.items() if a.probe in c)
    if not pids:
        print(f"check-trace: FAIL: {a.probe} never ran in the trace")
        ok = False
    for p in pids:
        wrong = names.get(p, set()) - {a.probe}
        print(f"check-trace: {a.probe} runs as pid {p}; the process tree names it {sorted(names.get(p, set())) or 'nothing'}")
        if wrong:
            print(f"check-trace: FAIL: pid {p} is {a.probe} in the events, but the process tree says {sorted(wrong)}")
            ok = False
# Every pid both name: the tree's name must be the events' comm (or one a prefix of the
# other: workqueue workers add their queue's name). Pids of another numbering (a
# container's /proc) name unrelated processes: most of them disagree.
def agree(tree_names, comms):
    return any(t.startswith(c) or c.startswith(t) for t in tree_names for c in comms)
both = [p for p in names if p in comm_of and p > 0]
bad = [p for p in both if not agree(names[p], comm_of[p])]
print(f"check-trace: {len(both)} pids named by both the tree and the events; {len(bad)} disagree")
for p in bad[:10]:
    print(f"check-trace:   pid {p}: tree {sorted(names[p])}, events {sorted(comm_of[p])}")
# Some disagree rightly: a process that exec()s runs under its parent's comm until it
# does and the kernel's tables keep the new one; a thread renames itself (polkitd's
# "gmain"). Those are short-lived or few; another numbering gets nearly all wrong.
if len(both) < 3 or 3 * len(bad) > len(both):
    print("check-trace: FAIL: the process tree does not use the events' pids")
    ok = False
sys.exit(0 if ok else 1)
