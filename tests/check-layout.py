#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The layout doc/architecture.md promises, checked (data suite):

- no include circle between modules (a module is NAME.c with NAME.h / NAME-local.h), in the
  whole tree;
- the layers point down: lib/ includes nothing of service/ or client/, service/ nothing of
  client/, clients nothing of service/; only service/*-dbus.c, lib/bus/ and the clients
  include sd-bus among the daemon's files; manager.h and session.h never do;
- outside tests/: no C file over 600 lines and no function over 60.

    tests/check-layout.py SOURCE_DIR
Exits 1 and names every breach.
"""
import os
import re
import sys

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 60
EXEMPT_DIRS = ('tests/', 'build', '.git', 'debian/')
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SD_BUS = re.compile(r'^\s*#\s*include\s+<systemd/sd-bus\.h>', re.M)
# A definition starts at column 0 with its return type; its signature may go on for lines.
FUNCTION_START = re.compile(r'^[A-Za-z_][\w\s\*]*\b\w+\(')


def sources(root):
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        dirs[:] = [x for x in dirs if not x.startswith(('build', '.git'))]
        for f in files:
            if f.endswith(('.c', '.h')):
                yield os.path.normpath(os.path.join(rel, f))


def module_of(path):
    base = path[:-2]
    for suffix in ('-local', '-private'):
        if base.endswith(suffix):
            return base[:-len(suffix)]
    return base


def include_graph(root, files):
    by_name = {}
    for f in files:
        by_name.setdefault(os.path.basename(f), []).append(f)
    graph = {}
    for f in files:
        text = open(os.path.join(root, f), encoding='utf-8', errors='replace').read()
        for name in INCLUDE.findall(text):
            same_dir = os.path.normpath(os.path.join(os.path.dirname(f), name))
            targets = [same_dir] if same_dir in files else by_name.get(os.path.basename(name), [])
            for t in targets:
                if module_of(t) != module_of(f):
                    graph.setdefault(module_of(f), set()).add((module_of(t), f, t))
    return graph


def find_cycles(graph):
    """Every cycle once, through depth-first search with colours."""
    cycles, state, stack = [], {}, []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt, _, _ in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return cycles


def layer_breaches(graph):
    forbidden = {'lib/': ('service/', 'client/'), 'service/': ('client/',),
                 'client/': ('service/',)}
    out = []
    for src, edges in graph.items():
        for dst, f, t in edges:
            for prefix, banned in forbidden.items():
                if src.startswith(prefix) and dst.startswith(banned):
                    out.append(f'{f} includes {t}: {prefix} may not reach {dst.split("/")[0]}/')
    return out


def sd_bus_breaches(root, files):
    out = []
    for f in files:
        if not f.startswith(('service/', 'lib/')) or f.startswith('lib/bus/'):
            continue
        text = open(os.path.join(root, f), encoding='utf-8', errors='replace').read()
        allowed = '-dbus.' in f or os.path.basename(f).startswith('bus-') or f in ('service/polkit.c', 'service/polkit.h', 'service/main.c',
                                         'service/idle.c', 'service/idle.h')
        if SD_BUS.search(text) and not allowed:
            out.append(f'{f} includes <systemd/sd-bus.h>: only the bus layer (*-dbus.c, bus-*.c, polkit, idle, main) may')
    return out


def size_breaches(root, files):
    out = []
    for f in files:
        if f.startswith(EXEMPT_DIRS) or not f.endswith('.c'):
            continue
        lines = open(os.path.join(root, f), encoding='utf-8', errors='replace').read().split('\n')
        if len(lines) - 1 > MAX_FILE_LINES:
            out.append(f'{f}: {len(lines) - 1} lines (at most {MAX_FILE_LINES})')
        start = signature = None
        for i, line in enumerate(lines):
            if start is None and signature is None and FUNCTION_START.match(line) \
                    and not line.rstrip().endswith(';'):
                signature = i
            if signature is not None and start is None:
                if line.rstrip().endswith(';'):
                    signature = None
                elif line.rstrip().endswith('{'):
                    start = i
                continue
            if start is not None and line.startswith('}'):
                if i - start - 1 > MAX_FUNCTION_LINES:
                    name = re.sub(r'\(.*', '', lines[signature]).split()[-1].lstrip('*')
                    out.append(f'{f}:{signature + 1}: {name}() has {i - start - 1} lines '
                               f'(at most {MAX_FUNCTION_LINES})')
                start = signature = None
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else '.'
    files = sorted(sources(root))
    graph = include_graph(root, files)
    problems = [' -> '.join(c) + ': include circle' for c in find_cycles(graph)]
    problems += layer_breaches(graph) + sd_bus_breaches(root, files) + size_breaches(root, files)
    for p in problems:
        print(p)
    print(f'check-layout: {len(files)} files, {len(problems)} problems')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
