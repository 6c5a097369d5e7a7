# SPDX-License-Identifier: LGPL-2.1-or-later
"""bench/run's upstream Perfetto peer: the same storm recorded by Perfetto's own `traced` and
`traced_probes`, driven by its `perfetto` command line client, with the config tracebus's
recording uses (linux.ftrace, sched_switch + sched_waking, compact_sched, 2 MB per CPU, a
100 ms drain, an 8 MB buffer written into the file every second).

The programs are upstream's, built unmodified (bench/run --perfetto-bin, or PERFETTO_BIN, by
default shared/perfetto/bin beside the source tree's directory). They run on private
sockets in a directory of their own, never the system's. traced_probes records in tracefs's top instance, as it does for
its users; what it leaves there (buffer size, tracing_on, the clock) is put back after.

Measured, for each run: the CPU time of traced and traced_probes together (each one's process
CPU clock, every thread, ended ones included, read by this script) from the moment the
`perfetto` client is started to its exit, that is the session's setup, the storm and the
final flush and write; the events in its file and what it lost, both as trace_processor_shell
(upstream's) reads the file; the file's bytes.
"""
import os, signal, subprocess, time

CONFIG = """write_into_file: true
file_write_period_ms: 1000
%(compression)sbuffers { size_kb: 8192 }
data_sources { config { name: "linux.ftrace" ftrace_config {
    ftrace_events: "sched/sched_switch" ftrace_events: "sched/sched_waking"
    buffer_size_kb: 2048 drain_period_ms: 100
    compact_sched { enabled: true } } } }
"""

# Counted by trace_processor: every ftrace event (compact ones included), and the stats that
# say something was lost, in the kernel (overruns, drops) or in traced's buffer.
EVENTS_QUERY = "select count(*) from ftrace_event where name in ('sched_switch', 'sched_waking')"
LOSS_ROWS = ("from stats where source = 'trace' and value > 0 and ("
             "name in ('ftrace_cpu_overrun_delta', 'ftrace_cpu_commit_overrun_delta', "
             "'ftrace_cpu_dropped_events_delta', 'traced_buf_chunks_discarded', 'traced_buf_chunks_overwritten') "
             "or (name like 'traced_buf_%' and severity = 'data_loss'))")
LOST_QUERY = 'select ifnull(sum(value), 0) ' + LOSS_ROWS
LOST_NAMES_QUERY = "select name || '=' || sum(value) " + LOSS_ROWS + ' group by name'
KERNEL_READ_QUERY = "select ifnull(sum(value), 0) from stats where name = 'ftrace_cpu_read_events_delta'"

TRACEFS = '/sys/kernel/tracing'
# What traced_probes changes in the top instance, put back after.
TOP_FILES = ('buffer_size_kb', 'tracing_on', 'trace_clock')


def log(*a):
    import sys
    print(*a, file=sys.stderr, flush=True)


def read_top():
    state = {}
    for name in TOP_FILES:
        with open(os.path.join(TRACEFS, name)) as f:
            text = f.read().strip()
        if name == 'trace_clock':
            text = text.split('[', 1)[1].split(']', 1)[0]
        state[name] = text.split()[0]
    return state


def restore_top(state):
    for name in TOP_FILES:
        try:
            with open(os.path.join(TRACEFS, name), 'w') as f:
                f.write(state[name])
        except OSError as e:
            log('perfetto peer: could not put back %s: %s' % (name, e))


class PerfettoPeer:
    def __init__(self, bindir, workdir, process_cpu_ns):
        """process_cpu_ns(pid): bench/run's reading of a process's CPU clock."""
        self.bin = bindir
        self.process_cpu_ns = process_cpu_ns
        self.dir = os.path.join(workdir, 'perfetto')
        os.makedirs(self.dir, exist_ok=True)
        self.env = dict(os.environ, PERFETTO_PRODUCER_SOCK_NAME=os.path.join(self.dir, 'producer.sock'),
                        PERFETTO_CONSUMER_SOCK_NAME=os.path.join(self.dir, 'consumer.sock'))
        self.procs = []
        self.top = None

    @staticmethod
    def available(bindir):
        return all(os.access(os.path.join(bindir, p), os.X_OK)
                   for p in ('traced', 'traced_probes', 'perfetto', 'trace_processor_shell'))

    def start(self):
        self.top = read_top()
        for name in ('traced', 'traced_probes'):
            logf = open(os.path.join(self.dir, name + '.log'), 'w')
            self.procs.append(subprocess.Popen([os.path.join(self.bin, name)], env=self.env, stdout=logf,
                                               stderr=subprocess.STDOUT))
            # traced first: traced_probes connects to its producer socket.
            for _ in range(100):
                if name != 'traced' or os.path.exists(self.env['PERFETTO_PRODUCER_SOCK_NAME']):
                    break
                time.sleep(0.05)
        time.sleep(0.5)

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.procs = []
        if self.top:
            restore_top(self.top)

    def cpu_ns(self):
        return sum(self.process_cpu_ns(p.pid) for p in self.procs)

    def query(self, trace, sql):
        r = subprocess.run([os.path.join(self.bin, 'trace_processor_shell'), '-Q', sql, trace],
                           capture_output=True, text=True, check=True)
        rows = [l.strip().strip('"') for l in r.stdout.strip().splitlines()]
        return rows[1:]

    def record(self, storm, seconds, compressed=False):
        """One recording of storm(seconds) by the perfetto client, measured."""
        cfg = os.path.join(self.dir, 'config.pbtxt')
        with open(cfg, 'w') as f:
            f.write(CONFIG % {'compression': 'compression_type: COMPRESSION_TYPE_DEFLATE\n' if compressed else ''})
        out = os.path.join(self.dir, 'trace.pftrace')
        for p in self.procs:
            if p.poll() is not None:
                raise RuntimeError('%s exited (%s); logs in %s' % (p.args[0], p.returncode, self.dir))
        c0 = self.cpu_ns()
        cli = subprocess.Popen([os.path.join(self.bin, 'perfetto'), '--txt', '-c', cfg, '-o', out], env=self.env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(1.0)   # the session up: traced_probes's ftrace set up and enabled
        st = storm(seconds)
        time.sleep(0.15)
        cli.send_signal(signal.SIGINT)
        text = cli.stdout.read()
        _, status, ru = os.wait4(cli.pid, 0)
        cli.returncode = os.waitstatus_to_exitcode(status)
        c1 = self.cpu_ns()
        if cli.returncode != 0 or not os.path.exists(out):
            raise RuntimeError('perfetto failed (%d): %s' % (cli.returncode, text[-500:]))
        events = int(self.query(out, EVENTS_QUERY)[0])
        lost = int(self.query(out, LOST_QUERY)[0])
        losses = self.query(out, LOST_NAMES_QUERY)
        kernel_read = int(self.query(out, KERNEL_READ_QUERY)[0])
        size = os.path.getsize(out)
        os.unlink(out)
        n = max(events, 1)
        return {'events': events, 'kernel_read_events': kernel_read, 'lost': lost, 'loss_stats': losses,
                'compressed': compressed, 'events_per_s': events / st['seconds'], 'cpu_ns': c1 - c0,
                'ns_per_event': (c1 - c0) / n, 'cli_cpu_ns': (ru.ru_utime + ru.ru_stime) * 1e9,
                'file_bytes': size, 'file_bytes_per_event': size / n}
