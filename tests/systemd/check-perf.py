#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""check-perf.py DECODED --pid PID [--not-pid PID]... [--chain A,B,C] [--min-samples N]
                [--no-warning TEXT] [--warning TEXT]

Checks linux.perf in a trace decoded by `protoc --decode=tracebus.Trace` (text format),
recorded under the shipped unit by tests/systemd/run.sh:
  --pid PID         every PerfSample is of PID (pid and tid): the profile holds nothing,
                    frames included, of any other process;
  --not-pid PID     ... and in particular none of PID (another user's process);
  --chain A,B,C     at least 80% of the samples' callstacks hold the functions A, B, C
                    in that order, outermost first, each frame named through the
                    sequence's interned function_names (so the service could read the
                    process's ELF file);
  --min-samples N   at least N PerfSample packets (default 20);
  --no-warning TEXT no "warning: ..." instant holds TEXT;
  --warning TEXT    a "warning: ..." instant holds TEXT.
Interned data is resolved per sequence, dropped when a packet clears the sequence's
incremental state, as trace_processor does. Prints what it found; exits 1 when a check
fails."""
import argparse
import re
import sys

ap = argparse.ArgumentParser()
ap.add_argument("decoded")
ap.add_argument("--pid", type=int, required=True)
ap.add_argument("--not-pid", type=int, action="append", default=[])
ap.add_argument("--chain")
ap.add_argument("--min-samples", type=int, default=20)
ap.add_argument("--no-warning", action="append", default=[])
ap.add_argument("--warning", action="append", default=[])
a = ap.parse_args()


ESCAPES = {"n": b"\n", "t": b"\t", "r": b"\r", "'": b"'", '"': b'"', "\\": b"\\"}


def unescape(quoted):
    """A string as protoc's text format quotes it (octal bytes, C escapes), as text."""
    out = re.sub(rb"\\([0-7]{1,3}|.)", lambda m: bytes([int(m.group(1), 8)]) if m.group(1)[:1].isdigit()
                 else ESCAPES.get(m.group(1).decode("latin-1"), m.group(1)), quoted.encode("utf-8"))
    return out.decode("utf-8", errors="replace")


def parse(lines):
    """protoc's text format, one field or brace per line, as nested dicts of lists."""
    root, stack = {}, []
    cur = root
    for line in lines:
        line = line.strip()
        if not line:
            continue
        m = re.match(r"^(\w+) \{$", line)
        if m:
            child = {}
            cur.setdefault(m.group(1), []).append(child)
            stack.append(cur)
            cur = child
        elif line == "}":
            cur = stack.pop()
        else:
            key, _, value = line.partition(": ")
            if value.startswith('"'):
                value = unescape(value[1:-1])
            cur.setdefault(key, []).append(value)
    return root


def one(msg, key, default=None):
    return msg.get(key, [default])[0]


text = open(a.decoded, encoding="utf-8", errors="replace").read()
trace = parse(text.splitlines())
# Warnings are instants named "warning: ..." (by name or interned): any such string.
warnings = sorted(set(unescape(w) for w in re.findall(r'"(warning: (?:[^"\\]|\\.)*)"', text)))
packets = trace.get("packet", [])
tables = {}  # sequence id -> {kind: {iid: message or string}}
samples = []  # (sample, tables of its sequence)
for p in packets:
    seq = one(p, "trusted_packet_sequence_id", "0")
    if int(one(p, "sequence_flags", "0")) & 1:
        tables[seq] = {}
    t = tables.setdefault(seq, {})
    for interned in p.get("interned_data", []):
        for kind in ("function_names", "mapping_paths", "build_ids"):
            for s in interned.get(kind, []):
                t.setdefault(kind, {})[one(s, "iid")] = one(s, "str", "")
        for kind in ("frames", "callstacks", "mappings"):
            for m in interned.get(kind, []):
                t.setdefault(kind, {})[one(m, "iid")] = m
    for ps in p.get("perf_sample", []):
        if "callstack_iid" in ps or "kernel_records_lost" not in ps:
            samples.append((ps, t))


def names_of(ps, t):
    """The callstack's function names, outermost first ("?" for an unnamed frame)."""
    cs = t.get("callstacks", {}).get(one(ps, "callstack_iid"))
    out = []
    for fid in (cs or {}).get("frame_ids", []):
        f = t.get("frames", {}).get(fid, {})
        out.append(t.get("function_names", {}).get(one(f, "function_name_id"), "?"))
    return out


def in_order(names, chain):
    i = 0
    for n in names:
        if i < len(chain) and n == chain[i]:
            i += 1
    return i == len(chain)


ok = True


def fail(msg):
    global ok
    print(f"check-perf: FAIL: {msg}")
    ok = False


pids = {}
for ps, _ in samples:
    key = (int(one(ps, "pid", "-1")), int(one(ps, "tid", "-1")))
    pids[key] = pids.get(key, 0) + 1
print(f"check-perf: {len(samples)} PerfSample packets; (pid, tid): samples {pids}")
if len(samples) < a.min_samples:
    fail(f"fewer than {a.min_samples} samples")
for (pid, tid), count in pids.items():
    if pid != a.pid or tid != a.pid:
        fail(f"{count} samples of pid {pid} tid {tid}, not of the target {a.pid}")
    if pid in a.not_pid:
        fail(f"{count} samples of pid {pid}, another user's process")
if a.chain:
    chain = a.chain.split(",")
    full = [names_of(ps, t) for ps, t in samples]
    good = sum(in_order(n, chain) for n in full)
    named = sum(1 for n in full for f in n if f != "?")
    frames = sum(len(n) for n in full)
    print(f"check-perf: {good} of {len(full)} callstacks hold {' > '.join(chain)} in order; "
          f"{named} of {frames} frames named")
    for n in full[:3]:
        print(f"check-perf: e.g. {' > '.join(n) or '(no frames)'}")
    if good * 10 < len(full) * 8:
        fail(f"only {good} of {len(full)} callstacks hold the chain, named")
for w in warnings:
    print(f"check-perf: {w}")
for text in a.no_warning:
    if any(text in w for w in warnings):
        fail(f"a warning holds {text!r}")
for text in a.warning:
    if not any(text in w for w in warnings):
        fail(f"no warning holds {text!r}")
sys.exit(0 if ok else 1)
