#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Scripts written for perfetto, run with tracebus: the examples of Perfetto's
# documentation with `perfetto` replaced by `tracebus`, and nothing else changed
# but the places named below. tests/test-cli-compat.c runs each example as a test user
# and checks the trace it leaves behind.
#
#   perfetto-compat.sh EXAMPLE
#
# EXAMPLE is one of
#   long-trace    docs/concepts/detached-mode.md, "Capturing a long trace in detached mode"
#   ring-buffer   docs/concepts/detached-mode.md, "Start in detached ring-buffer mode. Later
#                 stop and save the ring buffer"
#   time-limit    docs/concepts/detached-mode.md, "Start tracing with a time limit. Later
#                 re-attach and wait for the end"
#   background    docs/learning-more/tracing-in-background.md, "Usage"
#
# What differs from the documentation:
#   - /data/misc/perfetto-traces (Android's trace directory) is $TRACE_DIR;
#   - "sleep 60" is "sleep $SLEEP" (default 60), so that a test need not wait a minute;
#   - "Wait for user input, or some critical event to happen." is "sleep $SLEEP";
#   - the background example's config.cfg is written first (the page does not show one),
#     and `inotifywait -e close_write` (inotify-tools) is replaced by waiting for the
#     background tracebus to exit: it exits once the trace file is complete and closed.
# Each example leaves its trace in $TRACE_DIR/trace (background: $TRACE_DIR/trace.pftrace).
set -eu

TRACE_DIR=${TRACE_DIR:?set TRACE_DIR to a directory of yours}
SLEEP=${SLEEP:-60}

long_trace() {
echo '
write_into_file: true
# Long tracing mode, periodically flush the trace buffer into the trace file.
file_write_period_ms: 5000

buffers {
  # This buffer needs to be big enough just to hold data between two consecutive
  # |file_write_period|s (5s in this examples).
  size_kb: 16384
}

data_sources {
  config {
    name: "linux.ftrace"
    ftrace_config {
      ftrace_events: "sched_switch"
    }
  }
}
' | tracebus -c - --txt --detach=session1 -o "$TRACE_DIR"/trace

sleep "$SLEEP"

tracebus --attach=session1 --stop
# At this point the trace file is fully flushed into
# /data/misc/perfetto-traces/trace.
}

ring_buffer() {
echo '
write_into_file: true

# Specify an arbitrarily long flush period. Practically this means: never flush
# unless trace is stopped.
# TODO(primiano): an explicit no_periodic_flushes argument would be nicer. Maybe
# we could repurpose the 0 value?
file_write_period_ms: 1000000000

buffers {
  # This will be the size of the final trace.
  size_kb: 16384
}

data_sources {
  config {
    name: "linux.ftrace"
    ftrace_config {
      ftrace_events: "sched_switch"
    }
  }
}
' | tracebus -c - --txt --detach=session2 -o "$TRACE_DIR"/trace

# Wait for user input, or some critical event to happen.
sleep "$SLEEP"

tracebus --attach=session2 --stop

# At this point the trace file is saved into
# /data/misc/perfetto-traces/trace.
}

time_limit() {
echo '
duration_ms: 10000
write_into_file: true

buffers {
  size_kb: 16384
}

data_sources {
  config {
    name: "linux.ftrace"
    ftrace_config {
      ftrace_events: "sched_switch"
    }
  }
}
' | tracebus -c - --txt --detach=session3 -o "$TRACE_DIR"/trace

sleep 3
tracebus --attach=session3
# The cmdline client will stay up for 7 more seconds and then terminate.
}

background() {
cd "$TRACE_DIR"
cat > config.cfg <<'EOF'
duration_ms: 60000
buffers { size_kb: 8192 }
data_sources { config { name: "linux.ftrace" ftrace_config { ftrace_events: "sched/sched_switch" } } }
EOF

pid=$(tracebus -c config.cfg --txt -o trace.pftrace --background-wait)

sleep "$SLEEP"
kill "$pid"
# The page waits for close_write with inotifywait; tracebus exits once the file is complete.
while running "$pid"; do sleep 0.1; done
}

# Alive and not a zombie (where nobody reaps the orphaned background process).
running() {
        kill -0 "$1" 2>/dev/null || return 1
        state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
        [ -n "$state" ] && [ "$state" != Z ]
}

case ${1:-} in
long-trace) long_trace ;;
ring-buffer) ring_buffer ;;
time-limit) time_limit ;;
background) background ;;
*) echo "usage: $0 long-trace|ring-buffer|time-limit|background" >&2; exit 2 ;;
esac
