#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/systemd/second-service.sh DIR SECONDS: run inside the test container, in a pid
# namespace of its own (unshare --pid --fork --mount-proc), a second tracebus stack:
# a private system-type dbus-daemon, polkitd and tracebusd on it, and records SECONDS
# of sched_switch as root into DIR/second.pftrace. The container's own tracebusd (under
# systemd, another pid namespace) records at the same time: neither may touch the
# other's tracefs instance. Exit status: the CLI's.
set -eu
dir=${1:?usage: $0 DIR SECONDS}
secs=${2:?usage: $0 DIR SECONDS}
mkdir -p "$dir/state"
cat >"$dir/bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$dir/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <allow send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus"/>
  </policy>
  <includedir>/usr/share/dbus-1/system.d</includedir>
</busconfig>
EOF
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$dir/bus
dbus-daemon --config-file="$dir/bus.conf" --nofork --nopidfile >"$dir/dbus.log" 2>&1 &
for _ in $(seq 50); do [ -S "$dir/bus" ] && break; sleep 0.1; done
polkitd=/usr/lib/polkit-1/polkitd
[ -x "$polkitd" ] || polkitd=/usr/libexec/polkitd
"$polkitd" --no-debug >"$dir/polkitd.log" 2>&1 &
STATE_DIRECTORY=$dir/state /usr/libexec/tracebusd --idle-timeout=0 >"$dir/tracebusd.log" 2>&1 &
for _ in $(seq 100); do
        timeout 2 busctl status org.tracebus.Tracebus1 >/dev/null 2>&1 && break
        sleep 0.1
done
echo "second-service: tracebusd is pid $(pgrep -x tracebusd) in its pid namespace, $(readlink /proc/self/ns/pid)"
tracebus -t "${secs}s" -o "$dir/second.pftrace" sched/sched_switch
