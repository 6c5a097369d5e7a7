# SPDX-License-Identifier: LGPL-2.1-or-later
"""`bench/run --profile`: CPU profiling with call stacks,
tracebus's linux.perf side by side with `perf record` on the same workload in one run.

The workload (bench/profile-load) does a fixed amount of work through a known call chain
on every CPU. For each rate (1 kHz and 4 kHz per CPU by default) and each unwinding mode
(frame pointers: `perf record -g`; DWARF: `perf record --call-graph dwarf`), the same work
runs alone (the floor), under perf record, and under a tracebus linux.perf session scoped
to it. Reported, as ratios to the floor of the same rate:
  - the workload's own CPU time for the same work (what sampling costs the sampled program:
    the kernel's sample handling and stack copies are charged to it);
  - the profiler's own CPU per sample (perf record's process; tracebusd's threads, where
    unwinding and symbolizing happen online), and perf's offline cost per sample (what
    `perf script` spends unwinding and naming perf.data, the work tracebus does online);
  - samples written, samples lost (perf: LOST records; tracebus: kernel_records_lost);
  - bytes per sample in the file (perf.data; the trace, compressed as configured).
Wall times are kept for the record only: on a shared machine they measure the neighbours.
"""
import json, os, re, resource, subprocess, tempfile, time, zlib

WORKLOAD = 'profile-load'


def log(*a):
    import sys
    print(*a, file=sys.stderr, flush=True)


def _varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7f) << shift
        shift += 7
        if c < 0x80:
            return v, i


def _fields(b):
    """(number, wire type, value or bytes) of one message's fields."""
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        wt = key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        elif wt == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            raise ValueError('wire type %d' % wt)
        yield key >> 3, wt, v


def _packets(data):
    for num, wt, v in _fields(data):
        if num != 1 or wt != 2:
            continue
        inner = [(n, w, x) for n, w, x in _fields(v)]
        comp = [x for n, w, x in inner if n == 50 and w == 2]   # compressed_packets
        if comp:
            for c in comp:
                yield from _packets(zlib.decompress(c))
        else:
            yield inner


def trace_samples(path):
    """PerfSample packets (TracePacket 66) of a trace: with a callstack_iid (4), and the
    kernel_records_lost (17) summed; the interned data's bytes (TracePacket 12) apart."""
    with open(path, 'rb') as f:
        data = f.read()
    samples = lost = skipped = interned_bytes = 0
    for fields in _packets(data):
        for n, w, v in fields:
            if n == 12 and w == 2:
                interned_bytes += len(v)
            if n != 66 or w != 2:
                continue
            sf = {k: x for k, _, x in _fields(v)}
            if 17 in sf:
                lost += sf[17]
            elif 18 in sf:
                skipped += 1
            else:
                samples += 1
    return {'file_bytes': len(data), 'samples': samples, 'lost': lost, 'skipped': skipped,
            'interned_bytes': interned_bytes}


class ProfileBench:
    def __init__(self, a, b, stack, task_ns):
        self.a, self.b, self.stack, self.task_ns = a, b, stack, task_ns
        self.load = os.path.join(a.build_dir, 'bench', WORKLOAD)
        self.threads = os.cpu_count() or 1
        self.work = 1000
        self.tmp = tempfile.mkdtemp(prefix='tb-profile-bench-', dir=stack.t)

    def load_argv(self):
        return [self.load, '--threads', str(self.threads), '--work', str(self.work)]

    def calibrate(self, seconds):
        """Work units for about @seconds of the workload's CPU time on every CPU."""
        r = self.floor()
        per_unit = r['cpu_ns'] / self.work / self.threads
        self.work = max(100, int(seconds * 1e9 / per_unit))
        log('profile: %d threads x %d work units (about %g s of CPU each)' % (self.threads, self.work, seconds))

    @staticmethod
    def _run(argv):
        """Runs @argv; its stdout's last JSON line, and the CPU ns of it and its children."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1e9
        lines = [l for l in r.stdout.splitlines() if l.startswith('{')]
        return (json.loads(lines[-1]) if lines else None), cpu, r.stderr

    def floor(self):
        out, _, _ = self._run(self.load_argv())
        return out

    def perf_record(self, hz, mode):
        data = os.path.join(self.tmp, 'perf.data')
        graph = ['-g'] if mode == 'fp' else ['--call-graph', 'dwarf']
        out, cpu, _ = self._run(['perf', 'record', '-F', str(hz)] + graph + ['-o', data, '--'] + self.load_argv())
        stats = subprocess.run(['perf', 'report', '-i', data, '--stats'], capture_output=True, text=True).stdout
        samples = int((re.search(r'SAMPLE events:\s+(\d+)', stats) or [0, 0])[1])
        lost = sum(int(x) for x in re.findall(r'LOST(?:_SAMPLES)? events:\s+(\d+)', stats))
        _, script_cpu, _ = self._run(['sh', '-c', 'perf script -i "$1" > /dev/null 2>&1; echo "{}"', 'sh', data])
        size = os.path.getsize(data)
        os.unlink(data)
        n = max(samples, 1)
        return {'load': out, 'profiler_cpu_ns': max(cpu - out['cpu_ns'], 0), 'samples': samples, 'lost': lost,
                'file_bytes': size, 'bytes_per_sample': size / n,
                'profiler_ns_per_sample': max(cpu - out['cpu_ns'], 0) / n,
                'offline_ns_per_sample': script_cpu / n}

    def config(self, hz, mode):
        frames = 'UNWIND_FRAME_POINTER' if mode == 'fp' else 'UNWIND_DWARF'
        # The rings `tracebus --profile` asks for (client/cli/cli-profile.c): a 50 ms read
        # period's DWARF samples four times over, 128 to 1024 pages.
        pages = 128
        while pages < hz * 50 // 1000 * 8704 * 4 // 4096 and pages < 1024:
            pages *= 2
        path = os.path.join(self.tmp, 'profile-%s-%d.pbtxt' % (mode, hz))
        with open(path, 'w') as f:
            f.write('duration_ms: 0\nwrite_into_file: true\nfile_write_period_ms: 1000\n'
                    'buffers { size_kb: 65536 }\n'
                    'data_sources { config { name: "linux.perf" perf_event_config {\n'
                    '  timebase { counter: SW_CPU_CLOCK frequency: %d }\n'
                    '  ring_buffer_pages: %d ring_buffer_read_period_ms: 50\n'
                    '  callstack_sampling { scope { target_cmdline: "%s" } kernel_frames: false user_frames: %s }\n'
                    '} } }\n'
                    'data_sources { config { name: "linux.process_stats" '
                    'process_stats_config { scan_all_processes_on_start: true } } }\n' % (hz, pages, WORKLOAD, frames))
        return path

    def tracebus(self, hz, mode):
        out_path = os.path.join(self.stack.t, 'out', 'profile.pftrace')
        rec = subprocess.Popen([self.b.tool, 'record', '--config', self.config(hz, mode), '--out', out_path],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert rec.stdout.readline().strip() == 'started'
        n0 = self.task_ns(self.stack.pid)
        load = self.floor()
        time.sleep(0.2)
        n1 = self.task_ns(self.stack.pid)
        rec.stdin.close()
        res = json.loads(rec.stdout.read())
        rec.wait()
        tr = trace_samples(out_path)
        os.unlink(out_path)
        n = max(tr['samples'], 1)
        tr.update(load=load, profiler_cpu_ns=n1 - n0, profiler_ns_per_sample=(n1 - n0) / n,
                  bytes_per_sample=tr['file_bytes'] / n, warnings=res.get('warnings', []))
        return tr

    def unwind_cost(self):
        """Runs bench/perf-unwind-bench: the cost per sample of the service's own symbol
        naming (frame-pointer callchains) and of DWARF unwinding, cold and warm, on the
        tool's known call chain."""
        tool = os.path.join(self.a.build_dir, 'bench', 'perf-unwind-bench')
        if not os.path.exists(tool):
            log('profile: %s not built (it needs -Dtests=true): no unwinding cost' % tool)
            return None
        r = subprocess.run([tool, '--seconds', '1'], capture_output=True, text=True)
        if r.returncode != 0:
            log('profile: perf-unwind-bench failed: ' + r.stderr.strip())
            return None
        return json.loads(r.stdout.strip().splitlines()[-1])

    def run(self, rates, modes, pairs):
        """For each rate and mode: floor, perf record, tracebus, @pairs times; the median
        pair by the workload's CPU ratio under tracebus (else perf) is kept."""
        self.calibrate(self.a.seconds)
        rows = []
        for hz in rates:
            for mode in modes:
                runs = []
                for i in range(pairs):
                    log('profile %d Hz, %s: floor, perf record, tracebus (%d of %d)' % (hz, mode, i + 1, pairs))
                    fl = self.floor()
                    pf = self.perf_record(hz, mode)
                    tb = self.tracebus(hz, mode)
                    for r in (pf, tb):
                        r['cpu_ratio'] = r['load']['cpu_ns'] / max(fl['cpu_ns'], 1)
                    runs.append({'hz': hz, 'mode': mode, 'floor': fl, 'perf': pf, 'tracebus': tb})
                key = 'tracebus' if all(r['tracebus']['samples'] for r in runs) else 'perf'
                runs.sort(key=lambda r: r[key]['cpu_ratio'])
                row = dict(runs[len(runs) // 2])
                row['ratios'] = {k: [r[k]['cpu_ratio'] for r in runs] for k in ('perf', 'tracebus')}
                row['lost_each'] = {k: [r[k]['lost'] for r in runs] for k in ('perf', 'tracebus')}
                rows.append(row)
        return {'threads': self.threads, 'work': self.work, 'rows': rows, 'unwind': self.unwind_cost()}


def print_profile(p):
    print('CPU profiling: %d threads of bench/profile-load (main > tb_load_a > tb_load_b > tb_load_c > '
          'tb_load_spin, frame pointers kept), %d work units each; floor: the same work alone, in the same run' % (
              p['threads'], p['work']))
    print('| Hz per CPU | unwinding | profiler | workload CPU x floor | samples | lost | profiler CPU us/sample '
          '| offline us/sample | bytes/sample |')
    print('|---|---|---|---|---|---|---|---|---|')
    for r in p['rows']:
        for name, k in (('perf record', 'perf'), ('tracebus', 'tracebus')):
            x = r[k]
            if k == 'tracebus' and not x['samples']:
                print('| %d | %s | tracebus | %.3f | 0 | %d | | | (no PerfSample in the trace: %s) |' % (
                    r['hz'], r['mode'], x['cpu_ratio'], x['lost'],
                    '; '.join(w for w in x['warnings'] if 'perf' in w)[:160] or 'linux.perf not recorded'))
                continue
            print('| %d | %s | %s | %.3f | %d | %d | %.1f | %s | %.1f |' % (
                r['hz'], r['mode'], name, x['cpu_ratio'], x['samples'], x['lost'], x['profiler_ns_per_sample'] / 1e3,
                '%.1f' % (x['offline_ns_per_sample'] / 1e3) if 'offline_ns_per_sample' in x else '-',
                x['bytes_per_sample']))
    print('(workload CPU ratios of each pair: %s)' % '; '.join(
        '%d Hz %s: perf %s, tracebus %s' % (r['hz'], r['mode'], ', '.join('%.3f' % v for v in r['ratios']['perf']),
                                            ', '.join('%.3f' % v for v in r['ratios']['tracebus']))
        for r in p['rows']))
    print('(lost in each pair: %s)' % '; '.join(
        '%d Hz %s: perf %s, tracebus %s' % (r['hz'], r['mode'], ', '.join(str(v) for v in r['lost_each']['perf']),
                                            ', '.join(str(v) for v in r['lost_each']['tracebus']))
        for r in p['rows']))
    u = p.get('unwind')
    if u:
        print('Unwinding cost per sample in the service (bench/perf-unwind-bench, %d-byte stack copies, thread CPU):' %
              u['stack_bytes'])
        print('| user frames | samples | cold us/sample | warm us/sample | frames/sample | named/sample |')
        print('|---|---|---|---|---|---|')
        for k, name in (('frame_pointers', 'frame-pointer callchain, named'), ('dwarf', 'DWARF (libdw), named')):
            x = u[k]
            print('| %s | %d | %.1f | %.2f | %.2f | %.2f |' % (name, x['samples'], x['cold_ns_per_sample'] / 1e3,
                                                           x['warm_ns_per_sample'] / 1e3, x['frames_per_sample'],
                                                           x['named_frames_per_sample']))
