#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The layout doc/architecture.md promises, checked (data suite):

- the folders point one way: in service/, a folder includes only from the folders below it,
      main.c > bus/ > core/ > sources/ > recorder/ > config/ > kernel/ > unwind/
  (unwind/ is tracebus-unwind, a program of its own: the service includes only its
  protocol header) and one data source's folder (sources/NAME/) nothing of another's, only sources/ itself;
  in lib/, a part (ftrace/, trace/, deflate/, textproto/, producer/) includes only the public headers
  (lib/include/) and lib/basic/; lib/ includes nothing of service/ or client/, the service
  nothing of client/, the clients nothing of service/;
- no include circle between modules (a module is NAME.c with NAME.h / NAME-local.h);
- among the daemon's files only service/bus/ and main.c include sd-bus;
- outside tests/: no function over 60 lines; a C file over 1,500 lines is a warning (one
  responsibility may take that long, but it is worth a look).

    tests/check-layout.py SOURCE_DIR
Exits 1 and names every breach.
"""
import os
import re
import sys

WARN_FILE_LINES = 1500
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
            from_top = os.path.normpath(os.path.join(f.split('/')[0], name))
            if same_dir in files:
                targets = [same_dir]
            elif from_top in files:
                targets = [from_top]
            else:
                targets = by_name.get(os.path.basename(name), [])
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


SERVICE_RANKS = {'service': 7, 'service/bus': 6, 'service/core': 5, 'service/sources': 4,
                 'service/recorder': 3, 'service/config': 2, 'service/kernel': 1, 'service/unwind': 0}
LIB_PARTS = ('lib/ftrace', 'lib/trace', 'lib/deflate', 'lib/textproto', 'lib/producer')


def service_folder(path):
    """The ranked folder of a service file, and its data source's folder if any."""
    d = os.path.dirname(path)
    if d.startswith('service/sources/'):
        return 'service/sources', d
    return d, None


def folder_breach(f, t):
    src, dst = os.path.dirname(f), os.path.dirname(t)
    if src == dst:
        return None
    if src.startswith('lib') and dst.startswith(('service', 'client')):
        return 'lib/ may not reach ' + dst.split('/')[0] + '/'
    if src.startswith('service') and dst.startswith('client'):
        return 'the service may not reach client/'
    if src.startswith('client') and dst.startswith('service'):
        return 'a client may not reach service/'
    if src in LIB_PARTS and dst not in ('lib/include', 'lib/basic'):
        return f'{src}/ may reach only lib/include/ and lib/basic/'
    if src.startswith('service') and dst.startswith('service'):
        (a, a_source), (b, b_source) = service_folder(f), service_folder(t)
        if a == b:
            if a_source and b_source and a_source != b_source:
                return f'{a_source}/ may not reach another data source ({b_source}/)'
            return None
        if SERVICE_RANKS.get(a, 0) <= SERVICE_RANKS.get(b, 0):
            return f'{a}/ may not reach {b}/, which is above it'
    return None


def layer_breaches(graph):
    out = []
    for edges in graph.values():
        for _, f, t in edges:
            why = folder_breach(f, t)
            if why:
                out.append(f'{f} includes {t}: {why}')
    return sorted(set(out))


def sd_bus_breaches(root, files):
    out = []
    for f in files:
        if not f.startswith(('service/', 'lib/')) or f.startswith(('lib/bus/', 'service/bus/')):
            continue
        text = open(os.path.join(root, f), encoding='utf-8', errors='replace').read()
        if SD_BUS.search(text) and f != 'service/main.c':
            out.append(f'{f} includes <systemd/sd-bus.h>: only service/bus/ and main.c may')
    return out


def size_breaches(root, files):
    out = []
    for f in files:
        if f.startswith(EXEMPT_DIRS) or not f.endswith('.c'):
            continue
        lines = open(os.path.join(root, f), encoding='utf-8', errors='replace').read().split('\n')
        if len(lines) - 1 > WARN_FILE_LINES:
            print(f'warning: {f}: {len(lines) - 1} lines: one responsibility, or two?')
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
