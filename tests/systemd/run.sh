#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/systemd/run.sh SOURCE_DIR: tracebus under a real systemd as PID 1.
#
# Builds the Debian packages from SOURCE_DIR (build-deb.sh, lintian included), boots
# a minimal Debian 12 root (make-root.sh, cached) with systemd-nspawn, installs the
# package in it with apt-get, and checks, as root through nsenter and as users in
# real logind sessions through "machinectl shell": D-Bus activation, recording, a
# refusal, idle exit and re-activation, the capture timer's service and retention,
# a detached session outliving the idle timeout, the producer socket (socket activation
# by an SDK app, which keeps the service while connected; its track_event slices recorded,
# the app started before the service and started during a session), "systemctl stop" during a
# recording, a read-only tracefs, tracefs instances across pid namespaces, process
# names in a container's trace, systemd-analyze verify and security; round 1's data
# sources under the unit (sys_stats, process_stats, system_info, the journal as root
# and as tbuser, symbolize_ksyms, kprobe_events) and a warning in Start's reply and the
# trace (configs/*.pbtxt, check-sources.py); linux.perf as tbuser, of its own
# perf-target (frame pointers and DWARF), named, and nothing of root's (check-perf.py),
# and as root with the largest rings under LimitMEMLOCK= alone; the unit's limits
# (LimitMEMLOCK=, MemoryMax=, TasksMax=) and the service's memory and threads at
# MaxSessions=; the watchdog: a frozen service killed, restarted and activated again.
#
# Needs root. Exit status: 0 all checks passed, 1 a check failed, 77 skipped (not
# root, or tools missing; in CI, with $CI set, that is a failure instead).
# It takes /tmp/tb-tracefs.lock for its whole run: tracefs is the machine's.
set -euo pipefail

src=$(cd "${1:?usage: $0 SOURCE_DIR}" && pwd)
here=$src/tests/systemd
machine=tbtest
M="org.tracebus.Tracebus1 /org/tracebus/Tracebus1 org.tracebus.Tracebus1.Manager"
I=/sys/kernel/tracing/instances
start_time=$(date +%s)

skip() {
        if [[ -n ${CI:-} ]]; then
                echo "systemd test: cannot run in CI: $*" >&2
                exit 1
        fi
        echo "systemd test: skipped: $*" >&2
        exit 77
}
[[ $(id -u) -eq 0 ]] || skip "needs root"
for tool in systemd-nspawn mmdebstrap dpkg-buildpackage lintian protoc nsenter python3; do
        command -v "$tool" >/dev/null || skip "$tool is missing (tools/setup-debian installs it)"
done
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
# linux.perf's workload (tests/perf-target.c), built in the meson build directory.
targets=${TRACEBUS_BUILD_DIR:-$src/build}/tests
# The producer socket's client: upstream Perfetto's SDK example app.
sdk=${TRACEBUS_PERFETTO_SDK:-$src/../shared/perfetto/sdk}
[[ -x $sdk/example_system_wide ]] || skip "$sdk/example_system_wide is missing (upstream Perfetto's SDK apps)"
# Upstream's trace_processor reads the apps' traces.
tp=${TRACEBUS_PERFETTO_BIN:-$src/../shared/perfetto/bin}/trace_processor_shell
[[ -x $tp ]] || skip "$tp is missing (upstream Perfetto's programs)"
for exe in perf-target-fp perf-target-nofp; do
        [[ -x $targets/$exe ]] || skip "$targets/$exe is not built (meson test builds it)"
done

exec 9>/tmp/tb-tracefs.lock
flock -w 1800 9 || { echo "systemd test: /tmp/tb-tracefs.lock stays taken" >&2; exit 1; }

W=$(mktemp -d /tmp/tracebus-systemd.XXXXXX)
failures=0
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failures=$((failures + 1)); echo "not ok $n - $*"; }
# check DESCRIPTION COMMAND...: one numbered result; the command's output on failure.
check() {
        local what=$1; shift
        if "$@" >"$W/check.out" 2>&1; then ok "$what"; else not_ok "$what"; sed 's/^/#   /' "$W/check.out"; fi
}
note() { echo "# $*"; }
not() { ! "$@"; }

# --- the container ----------------------------------------------------------------
cgroup=tracebus-test-$$
cgroup_dirs() {
        if [[ -d /sys/fs/cgroup/unified ]]; then echo /sys/fs/cgroup/systemd/$cgroup /sys/fs/cgroup/unified/$cgroup
        elif [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then echo /sys/fs/cgroup/$cgroup
        else echo /sys/fs/cgroup/systemd/$cgroup; fi
}
leader() { pgrep -P "$(cat "$W/nspawn.pid")" -x systemd | head -1; }
# Root inside: every namespace of the container's PID 1.
tbx() {
        nsenter -t "$(leader)" -a env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb LANG=C.UTF-8 \
                SYSTEMD_PAGER= SYSTEMD_COLORS=0 "$@"
}
# asuser USER COMMAND: USER in a real logind session (machinectl shell through the
# container's own machined); prints the output, then "[rc=N]".
asuser() {
        local user=$1; shift
        timeout 120 nsenter -t "$(leader)" -a env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb \
                machinectl -q shell "$user@.host" /bin/sh -c "$* ; echo \"[rc=\$?]\"" 2>&1 | tr -d '\r'
}
rc_of() { sed -n 's/.*\[rc=\([0-9]*\)\].*/\1/p' | tail -1; }
svc() { tbx systemctl show tracebusd -p "$1" --value; }

cleanup() {
        set +e
        local pid d
        pid=$(cat "$W/nspawn.pid" 2>/dev/null)
        if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
                tbx systemctl poweroff >/dev/null 2>&1
                for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
                # SIGTERM: nspawn powers the container off itself.
                kill -TERM "$pid" 2>/dev/null
                for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        fi
        # Whatever is left in the container's cgroup is this run's.
        for d in $(cgroup_dirs); do
                [[ -d $d ]] && find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -KILL 2>/dev/null
        done
        jobs -p | xargs -r kill 2>/dev/null
        [[ -n ${holder:-} ]] && kill "$holder" 2>/dev/null
        sleep 1
        for d in $(cgroup_dirs); do [[ -d $d ]] && find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null; done
        # Only the instances this run made: the dummies; a service's would be a failure.
        rmdir "$I/tracebus-$dummy_live-1" "$I/tracebus-$dummy_dead-1" 2>/dev/null
        rm -rf "$W"
}
dummy_live=999990000
dummy_dead=999990001
trap cleanup EXIT
trap 'exit 1' TERM INT

root=$("$here/make-root.sh")
mkdir "$W/bin" && cp "$targets/perf-target-fp" "$targets/perf-target-nofp" "$W/bin/"
note "root: $root (make-root.sh: $(($(date +%s) - start_time)) s so far)"
t=$(date +%s)
"$here/build-deb.sh" "$src" "$W/debs" >"$W/deb.log" 2>&1 || { cat "$W/deb.log"; not_ok "the Debian packages build with 0 lintian errors"; exit 1; }
ok "the Debian packages build with 0 lintian errors ($(grep -c '^W:' "$W/debs/lintian.log" || true) warnings; $(($(date +%s) - t)) s)"

boot() {
        local d
        for d in $(cgroup_dirs); do mkdir -p "$d"; done
        (
                # nspawn makes payload/ and supervisor/ under its own cgroup: not the root one.
                for d in $(cgroup_dirs); do echo "$BASHPID" >"$d/cgroup.procs"; done
                echo "$BASHPID" >"$W/nspawn.pid"
                # CAP_SYSLOG: nspawn's default set lacks it, so that /proc/kallsyms would show a
                # container only zeros; a real machine's systemd has it to give the unit.
                # CAP_PERFMON, linux.perf's, is missing there too, and nspawn's own system call
                # filter refuses perf_event_open (EPERM) unless allowed: a container's limits,
                # not the unit's. CAP_IPC_LOCK is not given: the unit's LimitMEMLOCK= must do.
                # nspawn gives the container no CAP_SYS_RESOURCE either, so its systemd grants
                # a unit's Limit*= only up to its own hard limits (see LimitNOFILE= below):
                # RLIMIT_MEMLOCK's is lifted for the unit's LimitMEMLOCK=.
                exec setsid systemd-nspawn -q -D "$root" -M "$machine" -b --volatile=overlay \
                        --register=no --keep-unit --bind=/sys/kernel/tracing \
                        --capability=CAP_SYSLOG,CAP_PERFMON --system-call-filter=perf_event_open \
                        --rlimit=RLIMIT_MEMLOCK=infinity \
                        --bind-ro="$W/debs:/mnt/debs" --bind-ro="$here:/mnt/tests" --bind-ro="$W/bin:/mnt/bin" \
                        --console=read-only
        ) >"$W/console.log" 2>&1 </dev/null &
        for _ in $(seq 120); do
                [[ -s $W/nspawn.pid ]] && [[ -n $(leader 2>/dev/null) ]] &&
                        [[ $(tbx systemctl is-system-running 2>/dev/null) =~ ^(running|degraded)$ ]] && return 0
                sleep 0.5
        done
        cat "$W/console.log"
        return 1
}
t=$(date +%s)
boot || { not_ok "the container boots"; exit 1; }
ok "the container boots systemd $(tbx systemctl --version | head -1 | cut -d' ' -f2) ($(($(date +%s) - t)) s): $(tbx systemctl is-system-running)"

# A dummy instance that a live host process owns (holds its lock, as a service does),
# and one nobody owns: the container's tracebusd must keep the first, remove the second.
mkdir "$I/tracebus-$dummy_live-1" "$I/tracebus-$dummy_dead-1"
# The holder is one process (the subshell execs sleep with the lock's fd), so that killing it
# releases the lock; it keeps neither the machine lock (9) nor meson's output pipes.
( exec 7<"$I/tracebus-$dummy_live-1" 9>&- >/dev/null 2>&1 </dev/null
  flock -n 7 && exec sleep 600 ) &
holder=$!

deb=$(cd "$W/debs" && ls tracebus_*_*.deb)
check "apt-get installs the package ($deb)" tbx apt-get install -y "/mnt/debs/$deb"
activatable() { tbx busctl call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus ListActivatableNames | grep -q org.tracebus.Tracebus1; }
check "the bus knows the service right after installation (dbus's trigger reloaded it)" activatable

check "D-Bus activation: ListSessions answers" tbx busctl call $M ListSessions
check "tracebusd.service is active" test "$(svc ActiveState)" = active
check "tracebus-producer.socket is enabled and listening after installation" \
        test "$(tbx systemctl is-enabled tracebus-producer.socket)/$(tbx systemctl is-active tracebus-producer.socket)" = enabled/active
check "the producer socket is /run/perfetto/traced-producer.sock, mode 0666" \
        test "$(tbx stat -c %a /run/perfetto/traced-producer.sock)" = 666
check "ListProducers answers" tbx busctl call $M ListProducers

# --- the real sandbox, as the service sees it -------
# The container's tracebusd, seen from the host: the pgrep match in the container's pid namespace.
service_host_pid() {
        local p ns
        ns=$(readlink /proc/"$(leader)"/ns/pid)
        for p in $(pgrep -x tracebusd); do
                [[ $(readlink /proc/"$p"/ns/pid 2>/dev/null) == "$ns" ]] && { echo "$p"; return 0; }
        done
        return 1
}
tbx busctl call $M ListSessions >/dev/null    # it may have gone idle meanwhile
status_of() { sed -n "s/^$1:[[:space:]]*//p" /proc/"$(service_host_pid)"/status; }
mount_opts() { awk -v m="$1" '$5 == m { o = $6 } END { print o }' /proc/"$(service_host_pid)"/mountinfo; }
note "sandbox: CapBnd $(status_of CapBnd) CapEff $(status_of CapEff) NoNewPrivs $(status_of NoNewPrivs) Seccomp $(status_of Seccomp);" \
        "/ $(mount_opts /), /sys $(mount_opts /sys), tracefs $(mount_opts /sys/kernel/tracing), state $(mount_opts /var/lib/tracebus)"
check "the service's capabilities: CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_SYSLOG, CAP_PERFMON only" \
        test "$(status_of CapBnd)" = 000000440000000b
check "NoNewPrivileges= and a seccomp filter" test "$(status_of NoNewPrivs)/$(status_of Seccomp)" = 1/2
# The filter allows perf_event_open (linux.perf) and none of the calls that reach into
# another process.
syscalls_ok() {
        local f
        f=" $(svc SystemCallFilter) "
        [[ $f != " ~"* && $f == *" perf_event_open "* ]] || return 1
        for call in ptrace pidfd_getfd process_vm_readv process_vm_writev kcmp; do
                [[ $f != *" $call "* ]] || { echo "$call is allowed"; return 1; }
        done
}
check "the system call filter allows perf_event_open, refuses ptrace, pidfd_getfd, process_vm_readv/writev, kcmp" syscalls_ok
check "/ and /sys read-only, tracefs and the state directory writable" \
        test "$(mount_opts /| cut -c1-2)$(mount_opts /sys | cut -c1-2)$(mount_opts /sys/kernel/tracing | cut -c1-2)$(mount_opts /var/lib/tracebus | cut -c1-2)" = rororwrw
check "the instance a live host process owns survived the service's start" test -d "$I/tracebus-$dummy_live-1"
check "the unowned instance was removed" test ! -e "$I/tracebus-$dummy_dead-1"
kill "$holder"; wait "$holder" 2>/dev/null || true; holder=
rmdir "$I/tracebus-$dummy_live-1" 2>/dev/null || true   # gone already if the check failed
# "soft/hard" of a process's open files.
nofile_of() { awk '/^Max open files/ { print $4 "/" $5 }' /proc/"$1"/limits; }
# systemd applies LimitNOFILE= up to the hard limit its own PID 1 has (nspawn's).
pid1_hard=$(nofile_of "$(leader)" | cut -d/ -f2)
nofile=$(( pid1_hard < 65536 ? pid1_hard : 65536 ))
budget=$((nofile - 256)); per_user=$(( budget / 2 < 16384 ? budget / 2 : 16384 ))
note "LimitNOFILE: the container's PID 1 may give $pid1_hard, so the service gets $nofile"
check "LimitNOFILE=65536 in the unit, soft and hard" test "$(svc LimitNOFILE)/$(svc LimitNOFILESoft)" = 65536/65536
check "the service runs with it, soft as hard ($nofile)" test "$(nofile_of "$(service_host_pid)")" = "$nofile/$nofile"
check "the service fits its descriptor budget in it: $budget, $per_user per user" \
        grep -q "Resources: $budget descriptors for sessions and calls, $per_user per user" \
        <(tbx journalctl -u tracebusd -b --no-pager)
# The unit's other limits, as systemd loaded them and the service runs with them.
# LimitMEMLOCK=, as LimitNOFILE=: up to the hard limit the container's PID 1 has (nspawn's
# --rlimit above, unless the host's own is lower).
memlock_of() { awk '/^Max locked memory/ { print $4 "/" $5 }' /proc/"$1"/limits; }
pid1_memlock=$(memlock_of "$(leader)" | cut -d/ -f2)
if [[ $pid1_memlock == unlimited ]] || (( pid1_memlock > 1074790400 )); then memlock=1074790400; else memlock=$pid1_memlock; fi
note "LimitMEMLOCK: the container's PID 1 may give $pid1_memlock, so the service gets $memlock"
check "LimitMEMLOCK=1025M (linux.perf's rings, without CAP_IPC_LOCK) in the unit" test "$(svc LimitMEMLOCK)" = 1074790400
check "the service runs with it, soft as hard ($memlock)" test "$(memlock_of "$(service_host_pid)")" = "$memlock/$memlock"

check "WatchdogSec=1min, Restart=on-failure, TasksMax=256" \
        test "$(svc WatchdogUSec)/$(svc Restart)/$(svc TasksMax)" = 1min/on-failure/256
mem_max=$(svc MemoryMax)
note "MemoryMax=75%: $mem_max bytes here"
check "MemoryMax= is set: 3/4 of the RAM, in bytes" test "$mem_max" -gt 0

# --- security and unit checks -------------------------------------------------------
# At most 2.0, the installed unit as systemd loaded it (doc/security.md); anything more
# is a new exception to explain (linux.perf's user frames need neither CAP_SYS_PTRACE nor
# CAP_SETUID: tracebus-unwind runs as the caller, through systemd-run). The data suite
# checks the built unit offline too.
score=$(tbx systemd-analyze security tracebusd.service --no-pager | sed -n 's/.*Overall exposure level for tracebusd.service: \([0-9.]*\).*/\1/p')
if [[ -n $score ]] && awk "BEGIN { exit !($score <= 2.0) }"; then ok "systemd-analyze security: exposure $score (at most 2.0)"
else not_ok "systemd-analyze security: exposure '$score' (at most 2.0)"; fi
check "systemd-analyze verify of every unit" tbx systemd-analyze verify --man=no \
        tracebusd.service tracebus-capture@nightly.service tracebus-capture@nightly.timer

# --- recording ---------------------------------------------------------------------
# decode NAME: the trace /tmp/NAME.pftrace in the container, decoded on the host.
decode() {
        tbx cat "/tmp/$1.pftrace" >"$W/$1.pftrace" &&
                protoc --decode=tracebus.Trace -I "$src/protos" "$src/protos/trace.proto" <"$W/$1.pftrace" >"$W/$1.txt"
}
trace_ok() { local name=$1; shift; decode "$name" && python3 "$here/check-trace.py" "$W/$name.txt" "$@"; }

# A probe with a name of its own runs in the container while root records: the trace
# must name it by the pid the events carry (the host's), not the container's.
tbx sh -c 'cp /usr/bin/yes /tmp/tbprobe; (timeout 4 /tmp/tbprobe >/dev/null &)'
check "root records in the container" tbx tracebus -t 2s -o /tmp/root.pftrace sched/sched_switch
check "root's trace is complete, and names processes by the events' pids" trace_ok root --min-span 1.5 --probe tbprobe

out=$(asuser tbuser tracebus --no-ask-password -t 2s -o /tmp/user.pftrace sched/sched_switch)
if [[ $(rc_of <<<"$out") == 0 ]]; then ok "tbuser (polkit rule) records in a logind session"; else not_ok "tbuser records"; sed 's/^/#   /' <<<"$out"; fi
check "tbuser's trace is complete" trace_ok user --min-span 1.5
check "tbuser owns the trace" test "$(tbx stat -c %U /tmp/user.pftrace)" = tbuser

# busctl cannot pass a descriptor: the service writes into tbuser's trace directory,
# which needs its capabilities (CAP_CHOWN and friends) under the real sandbox.
out=$(asuser tbuser busctl call $M Start "'sa{sv}'" "''" 2 Events as 1 sched/sched_switch DurationMs u 1500)
sleep 3
traces_of_tbuser() { tbx find /var/lib/tracebus/traces/1000 -name '*.pftrace' -user tbuser -size +0 | grep -q .; }
if [[ $(rc_of <<<"$out") == 0 ]] && traces_of_tbuser; then ok "busctl Start without Output: a trace in tbuser's trace directory, tbuser's"
else not_ok "busctl Start without Output writes into the trace directory"; sed 's/^/#   /' <<<"$out"; fi

denied_uid=$(tbx id -u tbdenied)
out=$(asuser tbdenied tracebus --no-ask-password -t 1s -o /tmp/denied.pftrace sched/sched_switch)
if [[ $(rc_of <<<"$out") != 0 ]] && grep -q "org.tracebus.record" <<<"$out"; then ok "tbdenied is refused, naming the polkit action: $(grep -m1 -i 'auth\|polkit' <<<"$out")"
else not_ok "tbdenied is refused clearly"; sed 's/^/#   /' <<<"$out"; fi
# grep reads the whole journal (no -q): journalctl must not die of SIGPIPE under pipefail.
journal_has() { tbx journalctl -u "$1" -b --no-pager | grep -E "$2" >/dev/null; }
check "the refusal is logged in words with the UID and the action" \
        journal_has tracebusd "polkit (wants|refused).*(UID $denied_uid.*org.tracebus.record|org.tracebus.record.*UID $denied_uid)"
check "no 'Invalid request descriptor' in the log" not journal_has tracebusd 'Invalid request descriptor'

# --- round 1's data sources under the unit -------------------------------------------------
# cli_config NAME CONFIG: root records /mnt/tests/configs/CONFIG into /tmp/NAME.pftrace.
cli_config() { tbx tracebus --txt -c "/mnt/tests/configs/$2" -o "/tmp/$1.pftrace" >"$W/$1.log" 2>&1 || { cat "$W/$1.log"; return 1; }; }
sources_ok() { local name=$1; shift; decode "$name" && python3 "$here/check-sources.py" "$W/$name.txt" "$@"; }
probe=$(tbx sh -c 'sleep 8 >/dev/null 2>&1 </dev/null & echo $!')
check "root records sys_stats, process_stats and system_info" cli_config polled polled.pbtxt
check "... SysStats, ProcessStats of root's process $probe, CpuInfo" sources_ok polled sys-stats "process=$probe" cpu-info
# The kernel gives root every process's smaps_rollup, CAP_SYS_PTRACE or not.
check "... and no warning that the kernel refused smaps_rollup" not grep -q 'warning: [^"]*smaps_rollup' "$W/polled.txt"
out=$(asuser tbuser "sleep 8 >/dev/null 2>&1 </dev/null & echo probe=\$!; tracebus --no-ask-password --txt -c /mnt/tests/configs/polled.pbtxt -o /tmp/upolled.pftrace")
uprobe=$(sed -n 's/^probe=\([0-9]*\).*/\1/p' <<<"$out")
if [[ $(rc_of <<<"$out") == 0 && -n $uprobe ]]; then ok "tbuser records sys_stats, process_stats and system_info"
else not_ok "tbuser records sys_stats, process_stats and system_info"; sed 's/^/#   /' <<<"$out"; fi
check "... SysStats, ProcessStats of tbuser's process $uprobe, CpuInfo" sources_ok upolled sys-stats "process=$uprobe" cpu-info

# The journal: entries written while recording, by the caller and by a system unit.
# Root sees both; tbuser only its own (its processes' entries, _UID).
mark=tb$$x$RANDOM
( sleep 2; tbx logger -t tbtest "root-$mark"; tbx systemd-run -q --wait -u tbjournal1 -p Type=oneshot echo "unit-$mark" ) >/dev/null 2>&1 &
check "root records the journal (linux.systemd_journald)" cli_config journal journald.pbtxt
wait $! || true
check "... root's logger entry and the system unit's entry" sources_ok journal "journal=root-$mark" journal-unit=tbjournal1.service "journal=unit-$mark"
( sleep 2; tbx systemd-run -q --wait -u tbjournal2 -p Type=oneshot echo "unit2-$mark" ) >/dev/null 2>&1 &
out=$(asuser tbuser "(sleep 2; logger -t tbtest user-$mark) & tracebus --no-ask-password --txt -c /mnt/tests/configs/journald.pbtxt -o /tmp/ujournal.pftrace; wait")
wait $! || true
[[ $(rc_of <<<"$out") == 0 ]] && ok "tbuser records the journal" || { not_ok "tbuser records the journal"; sed 's/^/#   /' <<<"$out"; }
check "... its own logger entry, not the system unit's" sources_ok ujournal "journal=user-$mark" "no-journal=unit2-$mark"
check "... and its trace says that only its own entries are recorded" sources_ok ujournal "warning=only the entries of your own processes"

# symbolize_ksyms: /proc/kallsyms with addresses (CAP_SYSLOG) in the sandbox.
check "root records workqueue events with symbolize_ksyms" cli_config ksyms ksyms.pbtxt
check "... every function a named kernel symbol" sources_ok ksyms ksyms
check "... and no warning about kallsyms" not grep -qi kallsyms "$W/ksyms.log"

# kprobe_events: root may (this kernel may lack them: then a warning says so); tbuser is
# refused for the polkit action org.tracebus.kprobes, which the package ships.
check "the package ships the polkit action org.tracebus.kprobes" \
        tbx grep -q 'action id="org.tracebus.kprobes"' /usr/share/polkit-1/actions/org.tracebus.policy
( for _ in $(seq 20); do tbx cat /etc/hostname; sleep 0.05; done ) >/dev/null 2>&1 &
check "root records with kprobe_events" cli_config kprobes kprobes.pbtxt
wait $! || true
if [[ -e /sys/kernel/tracing/kprobe_events ]]; then
        check "... do_sys_openat2 probe events" sources_ok kprobes probe=do_sys_openat2
        check "... and the probe is gone from kprobe_events after the session" not grep -q tbk /sys/kernel/tracing/kprobe_events
else
        check "... this kernel has no kprobe events: the CLI warns so" grep -q "no kprobe events" "$W/kprobes.log"
fi
out=$(asuser tbuser tracebus --no-ask-password --txt -c /mnt/tests/configs/kprobes.pbtxt -o /tmp/ukprobes.pftrace)
[[ $(rc_of <<<"$out") != 0 ]] && ok "tbuser may not use kprobe_events" || { not_ok "tbuser may not use kprobe_events"; sed 's/^/#   /' <<<"$out"; }
check "... refused for org.tracebus.kprobes (the service's log)" \
        journal_has tracebusd "UID $(tbx id -u tbuser) .*org.tracebus.kprobes.*refused"

# --- linux.perf under the unit, as a user -----------------------------------
# tbuser profiles its own copy of perf-target (tests/perf-target.c: main > tb_fa > tb_fb >
# tb_fc > tb_spin) in its home, which ProtectHome= hides from the service: the frames are
# named by tracebus-unwind, which the service has systemd-run start as tbuser and which
# reads the ELF file through the process, as tbuser. Root runs one of the same name
# meanwhile: the scope is tbuser's own.
# All at nice 19: samples need little CPU, and polkitd must not starve on a small machine.
root_fp=$(tbx sh -c 'nice -n 19 /mnt/bin/perf-target-fp 30 >/dev/null 2>&1 </dev/null & echo $!')
root_nofp=$(tbx sh -c 'nice -n 19 /mnt/bin/perf-target-nofp 30 >/dev/null 2>&1 </dev/null & echo $!')
# profile NAME EXE CONFIG: tbuser runs ~/EXE and records CONFIG into /tmp/NAME.pftrace;
# prints "target=PID", the CLI's output and "[rc=N]".
profile() {
        asuser tbuser "cp /mnt/bin/$2 ~/$2 && { nice -n 19 ~/$2 20 >~/$2.out 2>&1 </dev/null & p=\$!; echo target=\$p;
                for i in 1 2 3 4 5 6 7 8 9 10; do grep -q ready ~/$2.out && break; sleep 0.2; done;
                tracebus --no-ask-password --txt -c /mnt/tests/configs/$3 -o /tmp/$1.pftrace; r=\$?; kill \$p; (exit \$r); }"
}
# perf_check WHAT NAME ARGS...: check-perf.py on /tmp/NAME.pftrace; its findings as notes.
perf_check() {
        local what=$1 name=$2; shift 2
        if decode "$name" && python3 "$here/check-perf.py" "$W/$name.txt" "$@" >"$W/$name.check" 2>&1; then ok "$what"
        else not_ok "$what"; fi
        sed 's/^/#   /' "$W/$name.check"
}
# The largest ring on every CPU, as root, of root's own perf-target: more than
# perf_event_mlock_kb lets the service lock, so the rings map only within the unit's
# LimitMEMLOCK= (the service has no CAP_IPC_LOCK); with LimitMEMLOCK=1M in a drop-in,
# Start fails for want of buffer memory and the log names the limit. (16 sessions' rings
# at once, as large as the service's locked memory holds, are started further down.)
check "root profiles with ring_buffer_pages 1024 on every CPU (LimitMEMLOCK=, no CAP_IPC_LOCK)" \
        cli_config ring perf-ring.pbtxt
perf_check "... PerfSamples of root's perf-target-fp $root_fp" ring --pid "$root_fp"
tbx sh -c 'mkdir -p /etc/systemd/system/tracebusd.service.d &&
        printf "[Service]\nLimitMEMLOCK=1M\n" > /etc/systemd/system/tracebusd.service.d/80-memlock.conf &&
        systemctl daemon-reload && systemctl stop tracebusd'
check "with LimitMEMLOCK=1M in a drop-in, the same Start fails" not cli_config ringlow perf-ring.pbtxt
check "... for want of buffer memory (the CLI)" grep -qE "No buffer space available|BufferMemoryExhausted" "$W/ringlow.log"
check "... and the service's log names LimitMEMLOCK=" \
        journal_has tracebusd 'use up the memory the service may lock \(LimitMEMLOCK=\)'
tbx sh -c 'rm /etc/systemd/system/tracebusd.service.d/80-memlock.conf; systemctl daemon-reload; systemctl stop tracebusd'
for unwind in fp dwarf; do
        exe=perf-target-$([[ $unwind == fp ]] && echo fp || echo nofp)
        other=$([[ $unwind == fp ]] && echo "$root_fp" || echo "$root_nofp")
        out=$(profile "uperf-$unwind" "$exe" "perf-$unwind.pbtxt")
        target=$(sed -n 's/^target=\([0-9]*\).*/\1/p' <<<"$out")
        if [[ $(rc_of <<<"$out") == 0 && -n $target ]]; then ok "tbuser profiles its own $exe with linux.perf ($unwind)"
        else not_ok "tbuser profiles its own $exe with linux.perf ($unwind)"; sed 's/^/#   /' <<<"$out"; fi
        perf_check "... PerfSamples of its process $target only (none of root's $other), main > tb_fa > tb_fb > tb_fc > tb_spin named" \
                "uperf-$unwind" --pid "${target:-0}" --not-pid "$other" --chain main,tb_fa,tb_fb,tb_fc,tb_spin \
                --no-warning "may not read some mapped files"
done
# The helper ran as tbuser in a transient service of systemd's, and the service itself
# maps no elfutils.
# grep reads the whole journal: with -q it would stop early, and pipefail would fail the pipe.
boot_journal_has() { tbx journalctl -b --no-pager | grep -F "$1" >/dev/null; }
check "tracebus-unwind ran as tbuser through systemd-run" \
        boot_journal_has "tracebus unwinding helper for uid $(tbx id -u tbuser)"
tbx busctl call $M ListSessions >/dev/null    # it may have gone idle meanwhile
check "tracebusd maps neither libdw nor libelf" not grep -qE '/lib(dw|elf)[-.]' /proc/"$(service_host_pid)"/maps
tbx kill "$root_fp" "$root_nofp" 2>/dev/null || true

# A warning: Start's reply (busctl shows it as it comes) and the trace in root's trace directory.
tbx sh -c 'rm -f /var/lib/tracebus/traces/0/*.pftrace' || true
reply=$(tbx busctl call $M Start 'sa{sv}' '' 2 Events as 2 sched/sched_switch tbnosuch/tbnosuch_event DurationMs u 1000 2>&1) || true
note "Start's reply: $reply"
check "Start's reply warns about the missing event" grep -q "tbnosuch/tbnosuch_event.*does not exist" <<<"$reply"
warned_trace() {
        local f
        sleep 3   # the session's 1 s and its end
        f=$(tbx sh -c 'ls /var/lib/tracebus/traces/0/*.pftrace 2>/dev/null | head -1')
        tbx cp "$f" /tmp/warned.pftrace && sources_ok warned unknown-event=tbnosuch/tbnosuch_event
}
check "... and so does the trace (FtraceStats, a warning instant)" warned_trace

# --- the unit's MemoryMax= and TasksMax= at the service's own limits ----------------------
# MaxSessions=16 sessions at once (all root's: MaxSessionsPerUser=16 in a drop-in), each
# with limits.pbtxt's data sources, then all stopped at once (systemctl stop: every final
# drain together). The service's own memory (RssAnon: what it allocated, not the kernel's
# rings mapped into it) and its threads, sampled all along, must stay under the unit's
# MemoryMax= and TasksMax=; the figures are the measurement the unit's comment cites.
tbx sh -c 'mkdir -p /etc/tracebus/tracebusd.conf.d && printf "[Limits]\nMaxSessionsPerUser=16\n" > /etc/tracebus/tracebusd.conf.d/40-limits.conf'
tbx systemctl stop tracebusd
tbx busctl call $M ListSessions >/dev/null
lim_pid=$(service_host_pid)
anon_of() { awk '/^RssAnon:/ { print $2 }' /proc/"$lim_pid"/status; }
lim_idle=$(anon_of)
# The peaks, "RssAnon-KiB threads", into $W/peak until the service is gone.
( peak_anon=0 peak_threads=0
  while read -r a t < <(awk '/^RssAnon:/ { a = $2 } /^Threads:/ { t = $2 } END { if (t) print a, t }' \
                        /proc/"$lim_pid"/status 2>/dev/null) && [[ -n $t ]]; do
          (( a > peak_anon )) && peak_anon=$a
          (( t > peak_threads )) && peak_threads=$t
          echo "$peak_anon $peak_threads" >"$W/peak"
          sleep 0.1
  done ) &
lim_sampler=$!
# The largest perf ring (a power of two, at most 1024 pages) that 16 sessions' rings on
# every CPU fit in the service's locked memory: 1024 under the unit's LimitMEMLOCK= up to
# 16 CPUs; less where the container's PID 1 cannot give that much.
ncpus=$(getconf _NPROCESSORS_CONF)
ring=1024 page=$(getconf PAGESIZE)
while (( ring > 1 && 16 * ncpus * (ring + 1) * page > memlock )); do ring=$((ring / 2)); done
note "16 sessions' perf rings: $ring pages on each of $ncpus CPUs, $((16 * ncpus * (ring + 1) * page / 1024)) KiB locked"
tbx sh -c "sed 's/ring_buffer_pages: [0-9]*/ring_buffer_pages: $ring/' /mnt/tests/configs/limits.pbtxt > /tmp/limits.pbtxt"
lim_start() { tbx tracebus --detach="lim$1" --txt -c /tmp/limits.pbtxt -o "/tmp/lim$1.pftrace"; }
lim_started=0
lim_start 1 >"$W/lim.log" 2>&1 && lim_started=1
sleep 3
lim_one=$(anon_of)
for i in $(seq 2 16); do lim_start "$i" >>"$W/lim.log" 2>&1 && lim_started=$((lim_started + 1)); done
sleep 5
lim_all=$(anon_of)
all_started() { cat "$W/lim.log"; test "$lim_started" = 16; }
check "16 sessions at once (MaxSessions=16), each with ftrace, process_stats, sys_stats and linux.perf" all_started
tbx systemctl stop tracebusd
wait "$lim_sampler" || true
read -r lim_peak lim_threads <"$W/peak" || true
note "the service's own memory (RssAnon): idle $lim_idle KiB, one session $lim_one KiB, 16 sessions $lim_all KiB," \
        "at most $lim_peak KiB (the 16 stopped at once); at most $lim_threads threads"
check "... its memory at the limits fits MemoryMax= ($mem_max bytes)" test "$(( ${lim_peak:-0} * 1024 ))" -lt "$mem_max" -a "${lim_peak:-0}" -gt 0
check "... and its threads fit TasksMax=256" test "${lim_threads:-0}" -gt 0 -a "${lim_threads:-999}" -lt 256
check "... and it stopped cleanly, not killed (Result=$(svc Result))" test "$(svc Result)" = success
tbx rm /etc/tracebus/tracebusd.conf.d/40-limits.conf

# --- idle exit and re-activation ------------------------------------------------------
# A short idle timeout, so that idle exit can be watched; only from here on: the checks
# of the sandbox above read the running service's /proc, which 4 s of a loaded machine
# could make vanish.
tbx sh -c 'mkdir -p /etc/tracebus/tracebusd.conf.d && printf "[Service]\nIdleTimeoutSec=4s\n" > /etc/tracebus/tracebusd.conf.d/50-test.conf' || true
tbx systemctl stop tracebusd
tbx busctl call $M ListSessions >/dev/null
pid1=$(svc MainPID)
idle_gone() { for _ in $(seq 60); do [[ $(svc ActiveState) == inactive ]] && return 0; sleep 0.5; done; return 1; }
check "idle exit: the service stops by itself after IdleTimeoutSec=4s" idle_gone
check "re-activation: the next call starts it again" tbx busctl call $M ListSessions
check "... as a new process" test "$(svc MainPID)" != "$pid1" -a "$(svc ActiveState)" = active

# --- the producer socket: an SDK app starts the service and keeps it ----------------------
# Upstream's example app runs on the host and reaches the container's socket through
# /proc/PID/root; the service sees it as root.
check "the service exits when idle before the app comes" idle_gone
PERFETTO_PRODUCER_SOCK_NAME=/proc/$(leader)/root/run/perfetto/traced-producer.sock \
        "$sdk/example_system_wide" >/dev/null 2>&1 &
app=$!
started() { for _ in $(seq 60); do [[ $(svc ActiveState) == active ]] && return 0; sleep 0.5; done; return 1; }
check "an SDK app's connection to the producer socket starts the service" started
app_listed() {
        for _ in $(seq 40); do
                tbx tracebus --query 2>/dev/null | grep -qE '^track_event +[0-9]+ .*rendering, network.debug' && return 0
                sleep 0.5
        done
        tbx tracebus --query
        return 1
}
check "tracebus --query lists the app's track_event and its categories" app_listed
pid3=$(svc MainPID)
sleep 9
check "the service with an app connected outlives twice the idle timeout" \
        test "$(svc MainPID)" = "$pid3" -a "$(svc ActiveState)" = active
# The app waits for a session that enables its track_event, draws for a second and exits.
tbx sh -c 'cat > /tmp/app.pbtxt' <<'EOF'
buffers { size_kb: 1024 fill_policy: DISCARD }
data_sources { config { name: "track_event" track_event_config { enabled_categories: "rendering" } } }
duration_ms: 4000
EOF
app_slices() {
        "$tp" -Q "select count(*) from slice where name in ('DrawGame', 'DrawPlayer')" \
                "/proc/$(leader)/root/tmp/$1.pftrace" 2>/dev/null | tail -1 | tr -d '"'
}
check "root records track_event from the app that started the service" \
        tbx tracebus --txt -c /tmp/app.pbtxt -o /tmp/app-before.pftrace
check "... its DrawGame slice and two DrawPlayer slices are in the trace" test "$(app_slices app-before)" = 3
wait "$app" 2>/dev/null || true
check "once the app has gone, the service exits when idle" idle_gone
# A session started first (it starts the service over D-Bus), the app after it: the app
# joins the running session.
tbx tracebus --txt -c /tmp/app.pbtxt -o /tmp/app-after.pftrace >"$W/app-after.log" 2>&1 &
session=$!
check "a track_event session starts the service" started
PERFETTO_PRODUCER_SOCK_NAME=/proc/$(leader)/root/run/perfetto/traced-producer.sock \
        "$sdk/example_system_wide" >/dev/null 2>&1 &
app=$!
check "the session ends with status 0" wait "$session"
wait "$app" 2>/dev/null || true
check "... the app that connected during it is in its trace (DrawGame, two DrawPlayer)" \
        test "$(app_slices app-after)" = 3

# --- a detached session outlives the idle timeout ---------------------------------------
out=$(asuser tbuser tracebus --no-ask-password --detach=k2 -t 60s -o /tmp/detached.pftrace sched/sched_switch)
[[ $(rc_of <<<"$out") == 0 ]] && ok "tbuser starts a detached session" || { not_ok "tbuser starts a detached session"; sed 's/^/#   /' <<<"$out"; }
pid2=$(svc MainPID)
sleep 9
check "the service with a detached session outlives twice the idle timeout" test "$(svc MainPID)" = "$pid2" -a "$(svc ActiveState)" = active
out=$(asuser tbuser tracebus --is_detached=k2)
[[ $(rc_of <<<"$out") == 0 ]] && ok "--is_detached=k2: yes" || { not_ok "--is_detached=k2"; sed 's/^/#   /' <<<"$out"; }
out=$(asuser tbuser tracebus --attach=k2 --stop)
[[ $(rc_of <<<"$out") == 0 ]] && ok "--attach=k2 --stop" || { not_ok "--attach=k2 --stop"; sed 's/^/#   /' <<<"$out"; }
check "the detached session's trace is complete" trace_ok detached --min-span 8

# --- the watchdog ---------------------------------------------------------------------
# The loop pings systemd: under WatchdogSec=3s (a drop-in; the unit's is 1min) the service
# lives through several periods; frozen (SIGSTOP), systemd reports the watchdog timeout,
# kills it and starts it again (Restart=on-failure), and the new service removes the
# frozen one's tracefs instance. The next call is answered by that new process and, once
# it has exited idle, D-Bus activation starts another.
tbx sh -c 'mkdir -p /etc/systemd/system/tracebusd.service.d &&
        printf "[Service]\nWatchdogSec=3s\n" > /etc/systemd/system/tracebusd.service.d/70-watchdog.conf &&
        systemctl daemon-reload && systemctl stop tracebusd'
before=$(ls "$I" | grep '^tracebus-' || true)
check "root starts a detached session under WatchdogSec=3s" tbx tracebus --detach=wd -t 60s -o /tmp/wd.pftrace sched/sched_switch
wd_pid=$(svc MainPID)
sleep 8
check "... the service, pinging from its loop, lives through 8 s" test "$(svc MainPID)" = "$wd_pid" -a "$(svc ActiveState)" = active
kill -STOP "$(service_host_pid)"
restarted() {
        local p
        for _ in $(seq 60); do
                p=$(svc MainPID)
                [[ $p != 0 && $p != "$wd_pid" && $(svc ActiveState) == active ]] && return 0
                sleep 0.5
        done
        return 1
}
check "frozen (SIGSTOP), it is killed and started again" restarted
check "... systemd's log says: the watchdog timeout" journal_has tracebusd 'Watchdog timeout'
check "... a restart, counted (NRestarts=$(svc NRestarts))" test "$(svc NRestarts)" -ge 1
check "... the new service removed the frozen one's tracefs instance" test "$(ls "$I" | grep '^tracebus-' || true)" = "$before"
wd_pid=$(svc MainPID)
check "the next call is answered" tbx busctl call $M ListSessions
check "... by the restarted process" test "$(svc MainPID)" = "$wd_pid"
check "... which exits when idle" idle_gone
check "... and D-Bus activation starts it again" tbx busctl call $M ListSessions
tbx sh -c 'rm /etc/systemd/system/tracebusd.service.d/70-watchdog.conf; systemctl daemon-reload; systemctl stop tracebusd'

# --- scheduled captures and retention --------------------------------------------------
tbx sh -c 'cd /etc/tracebus/captures && sed "s/duration_ms: [0-9]*/duration_ms: 1000/" nightly.pbtxt > tbt.pbtxt &&
        grep -q duration_ms tbt.pbtxt || echo "duration_ms: 1000" >> tbt.pbtxt; echo KeepTraces=2 > tbt.conf'
for _ in 1 2 3; do tbx systemctl start tracebus-capture@tbt.service || true; sleep 1.1; done
captures() { tbx sh -c 'ls /var/lib/tracebus/captures/tbt-*.pftrace 2>/dev/null | wc -l'; }
check "the capture service wrote traces and kept 2 (KeepTraces=2)" test "$(captures)" = 2
check "its journal says what it kept and removed" journal_has tracebus-capture@tbt 'keeping 2 trace\(s\).*removed 1'

# The timer itself: fire once soon, through a drop-in instead of the nightly calendar.
tbx sh -c 'mkdir -p /etc/systemd/system/tracebus-capture@tbt.timer.d &&
        printf "[Timer]\nOnCalendar=\nOnActiveSec=1s\nRandomizedDelaySec=0\nAccuracySec=1s\n" > /etc/systemd/system/tracebus-capture@tbt.timer.d/50-test.conf &&
        systemctl daemon-reload && systemctl enable --now tracebus-capture@tbt.timer' >/dev/null 2>&1
fired() {
        for _ in $(seq 40); do
                [[ $(tbx journalctl -u tracebus-capture@tbt -b --no-pager | grep -c 'tbt: wrote') == 4 ]] &&
                        [[ $(captures) == 2 ]] && return 0
                sleep 0.5
        done
        return 1
}
check "the timer runs the capture service, and retention still keeps 2" fired

# --- systemctl stop during a recording -------------------------------------------------
before=$(ls "$I" | grep '^tracebus-' || true)
tbx tracebus -t 30s -o /tmp/stopped.pftrace sched/sched_switch >"$W/stopped.log" 2>&1 &
cli=$!
sleep 4
check "systemctl stop tracebusd during a recording" tbx systemctl stop tracebusd
check "the CLI finishes" timeout 20 tail --pid="$cli" -f /dev/null
check "the stopped recording's trace is complete" trace_ok stopped --min-span 3
check "no tracefs instance is left behind" test "$(ls "$I" | grep '^tracebus-' || true)" = "$before"

# --- pid namespaces: two services record at the same time ------------------------------
# The container's tracebusd (systemd's, the container's pid namespace) and a second one
# on a private bus in a pid namespace of its own (second-service.sh), each started while
# the other records: its clean-up at start must leave the other's instance alone. Then a
# third start in the container's namespace (tracebusd without a bus: it cleans up, then
# exits) while the second records. Both traces must span their whole time.
tbx systemctl stop tracebusd
tbx tracebus -t 12s -o /tmp/first.pftrace sched/sched_switch >"$W/first.log" 2>&1 &
first=$!
sleep 2
tbx timeout 60 unshare --pid --fork --mount-proc sh /mnt/tests/second-service.sh /tmp/second 12 >"$W/second.log" 2>&1 &
second=$!
sleep 4
tbx env DBUS_SYSTEM_BUS_ADDRESS=unix:path=/tmp/no-bus STATE_DIRECTORY=/tmp/third \
        timeout 10 /usr/libexec/tracebusd >"$W/third.log" 2>&1 || true
check "the container's service records while a second one starts in another pid namespace" wait "$first"
check "the second service, in its own pid namespace, records while the first records" wait "$second"
note "$(grep second-service: "$W/second.log")"
check "the first trace is complete" trace_ok first --min-span 11
tbx cp /tmp/second/second.pftrace /tmp/second.pftrace || true
check "the second trace is complete, and names processes by the events' pids" trace_ok second --min-span 11
tbx cat /tmp/second/tracebusd.log >"$W/second-tracebusd.log" || true
check "no service removed the other's instance" not grep -h Removed "$W/third.log" "$W/second-tracebusd.log"

# --- a read-only tracefs ---------------------------------------------------------------
tbx sh -c 'mkdir -p /etc/systemd/system/tracebusd.service.d &&
        printf "[Service]\nProtectKernelTunables=yes\n" > /etc/systemd/system/tracebusd.service.d/90-ro.conf &&
        systemctl daemon-reload && systemctl stop tracebusd'
tbx tracebus -t 1s -o /tmp/ro.pftrace sched/sched_switch >"$W/ro.log" 2>&1 && not_ok "Start fails when tracefs is read-only" ||
        { grep -q "tracefs is read-only in this service's sandbox" "$W/ro.log" && ok "Start fails clearly when tracefs is read-only: $(head -1 "$W/ro.log")" ||
                { not_ok "Start fails clearly when tracefs is read-only"; sed 's/^/#   /' "$W/ro.log"; }; }
check "the service said at start: tracefs is read-only in this sandbox" \
        journal_has tracebusd 'tracefs is read-only in this sandbox'

tbx sh -c 'rm /etc/systemd/system/tracebusd.service.d/90-ro.conf; systemctl daemon-reload; systemctl stop tracebusd'

tbx journalctl -b --no-pager -u tracebusd >"$W/journal.log" 2>&1 || true
if [[ $failures -gt 0 ]]; then
        echo "# the service's journal:"
        sed 's/^/#   /' "$W/journal.log" | tail -80
fi
echo "1..$n"
echo "# systemd test: $failures of $n checks failed; $(($(date +%s) - start_time)) s in all"
[[ $failures -eq 0 ]]
