# SPDX-License-Identifier: LGPL-2.1-or-later
"""`bench/run --only producers`: an app built with the Perfetto SDK writing track_event
slices as fast as it can (bench/sdk-storm, 1 MB of shared memory), recorded by tracebusd
and, in the same run, by upstream Perfetto's traced on private sockets, the same config
and the same app. Reported for each service, the median of --repeat runs:
  - events (a slice's begin and end packets) the app wrote, events in the trace (upstream
    trace_processor counts them: the slices' begins and ends, and the packets it kept but could not
    decode after the app dropped some on a full buffer), lost;
  - the service's whole CPU (every thread, ended ones included: /proc/PID/stat) from the
    client's start to its exit, per event in the trace;
  - the floor: the same trace's bytes copied out of shared memory a chunk at a time and
    written into a file (bench/chunk-copy), per event; the service's cost as a ratio to it;
  - bytes per event in the trace.
And the idle cost: the service's wake-ups a second (context switches of all its threads)
with two SDK apps connected and no session.
"""
import os, signal, statistics, subprocess, tempfile, time

PERFETTO_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                            'shared', 'perfetto')
SHMEM_KB = 1024

CONFIG = """buffers { size_kb: 65536 fill_policy: DISCARD }
data_sources { config { name: "track_event" track_event_config { enabled_categories: "bench" } } }
write_into_file: true
file_write_period_ms: 1000
duration_ms: %d
"""


def log(*a):
    import sys
    print(*a, file=sys.stderr, flush=True)


def perfetto_program(kind, name):
    path = os.path.join(os.environ.get('TRACEBUS_PERFETTO_' + kind.upper(), os.path.join(PERFETTO_DIR, kind)), name)
    return path if os.access(path, os.X_OK) else None


def cpu_ticks(pid):
    with open('/proc/%d/stat' % pid) as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return int(fields[11]) + int(fields[12])


def context_switches(pid):
    """Voluntary and involuntary switches of every live thread of @pid."""
    total = 0
    for tid in os.listdir('/proc/%d/task' % pid):
        try:
            with open('/proc/%d/task/%s/status' % (pid, tid)) as f:
                for line in f:
                    if line.startswith(('voluntary_ctxt_switches:', 'nonvoluntary_ctxt_switches:')):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def events_in(trace):
    """The app's track events in @trace: two a slice trace_processor made (its begin and its
    end), and the packets it kept but could not decode because their sequence lost the
    interned names they refer to (after the app dropped packets on a full buffer)."""
    tp = perfetto_program('bin', 'trace_processor_shell')
    r = subprocess.run([tp, '-Q', "select (select count(*) from slice where name = 'tick') * 2 + "
                        "(select ifnull(sum(value), 0) from stats where "
                        "name = 'packet_skipped_seq_needs_incremental_state_invalid')", trace],
                       capture_output=True, text=True, check=True)
    return int(r.stdout.strip().splitlines()[-1].strip('"'))


def start_app(build, socket, args=()):
    env = dict(os.environ, PERFETTO_PRODUCER_SOCK_NAME=socket)
    app = subprocess.Popen([os.path.join(build, 'bench', 'sdk-storm'), str(SHMEM_KB), '60', *args], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if app.stdout.readline().strip() != 'ready':
        raise RuntimeError('sdk-storm did not start')
    return app


class Traced:
    """Upstream traced on private sockets."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix='tb-bench-traced-')
        self.env = dict(os.environ, PERFETTO_PRODUCER_SOCK_NAME=self.dir + '/p.sock',
                        PERFETTO_CONSUMER_SOCK_NAME=self.dir + '/c.sock')
        self.proc = subprocess.Popen([perfetto_program('bin', 'traced')], env=self.env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            if os.path.exists(self.dir + '/c.sock'):
                break
            time.sleep(0.05)
        self.pid = self.proc.pid
        self.socket = self.dir + '/p.sock'

    def client(self, config, out):
        return [perfetto_program('bin', 'perfetto'), '--txt', '-c', config, '-o', out], self.env

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait()
        subprocess.run(['rm', '-rf', self.dir])


class Tracebus:
    def __init__(self, a, stack):
        self.stack = stack
        self.build = a.build_dir
        self.pid = stack.pid
        self.socket = stack.producer_socket

    def client(self, config, out):
        return [os.path.join(self.build, 'client', 'cli', 'tracebus'), '--txt', '-c', config, '-o', out], self.stack.env


def storm_once(a, service, workdir, name):
    config = os.path.join(workdir, 'storm.pbtxt')
    with open(config, 'w') as f:
        f.write(CONFIG % int(a.seconds * 1000))
    out = os.path.join(workdir, name + '.pftrace')
    app = start_app(a.build_dir, service.socket)
    time.sleep(1.0)   # registered before the session starts
    argv, env = service.client(config, out)
    c0 = cpu_ticks(service.pid)
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    c1 = cpu_ticks(service.pid)
    line = app.communicate(timeout=30)[0].split()
    written = 2 * int(line[line.index('slices') + 1])
    recorded = events_in(out)
    floor = subprocess.run([os.path.join(a.build_dir, 'bench', 'chunk-copy'), out, out + '.copy'],
                           capture_output=True, text=True, check=True).stdout.split()
    size = os.path.getsize(out)
    os.unlink(out + '.copy')
    os.unlink(out)
    ns = (c1 - c0) * 1e9 / os.sysconf('SC_CLK_TCK')
    return {'written': written, 'recorded': recorded, 'lost': max(written - recorded, 0),
            'service_ns_per_event': ns / max(recorded, 1),
            'floor_ns_per_event': int(floor[3]) / max(recorded, 1),
            'ratio': ns / max(int(floor[3]), 1), 'bytes_per_event': size / max(recorded, 1)}


def median_run(runs):
    return sorted(runs, key=lambda r: r['ratio'])[len(runs) // 2]


def idle_wakeups(a, stack, seconds=5.0):
    """tracebusd's context switches a second with two SDK apps connected and no session."""
    apps = [start_app(a.build_dir, stack.producer_socket) for _ in range(2)]
    try:
        time.sleep(1.0)
        s0 = context_switches(stack.pid)
        time.sleep(seconds)
        return (context_switches(stack.pid) - s0) / seconds
    finally:
        for app in apps:
            app.kill()
            app.wait()


def measure_producers(a, b, stack, results):
    if not perfetto_program('bin', 'traced') or not os.path.exists(os.path.join(a.build_dir, 'bench', 'sdk-storm')):
        log('upstream Perfetto (../shared/perfetto) is not beside the source tree: no producer measurement')
        return
    workdir = tempfile.mkdtemp(prefix='tb-bench-producers-')
    runs = {'tracebus': [], 'traced': []}
    traced = Traced()
    try:
        for i in range(a.repeat):
            log('producers: SDK storm into tracebus, then traced (run %d of %d)' % (i + 1, a.repeat))
            runs['tracebus'].append(storm_once(a, Tracebus(a, stack), workdir, 'tracebus'))
            runs['traced'].append(storm_once(a, traced, workdir, 'traced'))
    finally:
        traced.stop()
        subprocess.run(['rm', '-rf', workdir])
    results['producers'] = {'runs': runs, 'tracebus': median_run(runs['tracebus']),
                            'traced': median_run(runs['traced']),
                            'idle_wakeups_per_s': idle_wakeups(a, stack)}


def report_producers(a, results):
    p = results.get('producers')
    if not p:
        return
    print('SDK app (bench/sdk-storm, %d KB of shared memory) writing track_event slices as fast as it can, '
          '%.0f s, median of %d runs by ratio; events are begin and end packets' % (
              SHMEM_KB, a.seconds, len(p['runs']['tracebus'])))
    print('| service | events written | in the trace | lost | service ns/event | floor ns/event | x floor | B/event |')
    print('|---|---|---|---|---|---|---|---|')
    for name in ('tracebus', 'traced'):
        r = p[name]
        print('| %s | %d | %d | %d | %.1f | %.1f | %.2f | %.1f |' % (
            name, r['written'], r['recorded'], r['lost'], r['service_ns_per_event'], r['floor_ns_per_event'],
            r['ratio'], r['bytes_per_event']))
    print('Idle: tracebusd with two SDK apps connected and no session: %.2f wake-ups a second' %
          p['idle_wakeups_per_s'])


def judge_producers(results):
    p = results.get('producers')
    if not p:
        return [('SDK app storm: upstream Perfetto and bench/sdk-storm are there to measure against', False,
                 'missing')]
    t, u = p['tracebus'], p['traced']
    return [
        ('SDK app storm: nothing lost at %d KB of shared memory' % SHMEM_KB, t['lost'] == 0,
         '%d of %d lost' % (t['lost'], t['written'])),
        ('SDK app storm: service CPU per event <= 1.5x the chunk copy floor', t['ratio'] <= 1.5,
         '%.2f x' % t['ratio']),
        ('SDK app storm: service CPU per event at most traced\'s', t['service_ns_per_event'] <= u['service_ns_per_event'],
         '%.1f vs %.1f ns' % (t['service_ns_per_event'], u['service_ns_per_event'])),
        ('idle SDK apps connected: 0 wake-ups a second of the service', p['idle_wakeups_per_s'] < 0.5,
         '%.2f/s' % p['idle_wakeups_per_s']),
    ]
