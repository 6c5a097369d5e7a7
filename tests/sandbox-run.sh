#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/sandbox-run.sh UNIT STATE_DIR COMMAND [ARGS...]
#
# Runs COMMAND (tracebusd) with as much of UNIT's sandbox as can be had without
# systemd as PID 1. The real sandbox is checked under systemd by tests/systemd/run.sh
# (the systemd suite); this imitation remains for tests/test-faults.c, which needs a
# service without tracefs and without the capability to mount it. Read from UNIT:
#   CapabilityBoundingSet=  setpriv --bounding-set, inheritable and ambient sets empty
#   NoNewPrivileges=yes     setpriv --no-new-privs
#   ProtectSystem=strict, ProtectKernelTunables=yes, ReadWritePaths=, StateDirectory=
#                           every mount read-only except /dev and /proc, then STATE_DIR
#                           and the unit's ReadWritePaths= writable again
#   ProtectHome=yes         /home, /root and /run/user empty and inaccessible
#   PrivateNetwork=yes      a new network namespace (only lo, down)
#   PrivateIPC=yes, ProtectHostname=yes   new IPC and UTS namespaces
# Not reproduced, because they need seccomp filters that no tool here installs:
# SystemCallFilter=, RestrictAddressFamilies=, MemoryDenyWriteExecute=,
# SystemCallArchitectures=, LockPersonality=, RestrictNamespaces=, RestrictRealtime=.
# Nor PrivateTmp= (the test bus lives in /tmp) or PrivateDevices=.
#
# Needs root (mount namespaces). Prints what it applied to stderr.
set -eu
unit=${1:?usage: $0 UNIT STATE_DIR COMMAND...}
state=${2:?usage: $0 UNIT STATE_DIR COMMAND...}
shift 2
[ $# -gt 0 ] || { echo "sandbox-run: no command" >&2; exit 2; }

setting() { sed -n "s/^$1=//p" "$unit" | tail -n 1; }

caps=-all
for c in $(setting CapabilityBoundingSet); do
        caps="$caps,+$(echo "${c#CAP_}" | tr 'A-Z' 'a-z')"
done
nnp=
[ "$(setting NoNewPrivileges)" = yes ] && nnp=--no-new-privs
[ "$(setting ProtectSystem)" = strict ] || { echo "sandbox-run: $unit has no ProtectSystem=strict" >&2; exit 2; }
rw="$state"
for p in $(setting ReadWritePaths); do
        rw="$rw ${p#-}"
done
home=
[ "$(setting ProtectHome)" = yes ] && home="/home /root /run/user"
ns="--mount --propagation private"
[ "$(setting PrivateNetwork)" = yes ] && ns="$ns --net"
[ "$(setting PrivateIPC)" = yes ] && ns="$ns --ipc"
[ "$(setting ProtectHostname)" = yes ] && ns="$ns --uts"

echo "sandbox-run: unshare $ns; read-only but /dev /proc and: $rw; hidden: ${home:-nothing};" \
     "setpriv --bounding-set=$caps $nnp" >&2

export SANDBOX_RW="$rw" SANDBOX_HOME="$home" SANDBOX_CAPS="$caps" SANDBOX_NNP="$nnp"
# shellcheck disable=SC2086 # $ns is a list of options
exec unshare $ns /bin/sh -eu -c '
        # The mounts of this new namespace are copies: flags changed here stay here.
        for mp in $(cut -d " " -f 5 /proc/self/mountinfo | sort -u); do
                case $mp in /dev|/dev/*|/proc|/proc/*) continue ;; esac
                mount -o remount,bind,ro "$mp" 2>/dev/null || true
        done
        for p in $SANDBOX_RW; do
                [ -e "$p" ] || continue
                mountpoint -q "$p" || mount --bind "$p" "$p"
                mount -o remount,bind,rw "$p"
        done
        for h in $SANDBOX_HOME; do
                [ -d "$h" ] && mount -t tmpfs -o ro,mode=000 tmpfs "$h"
        done
        exec setpriv --bounding-set="$SANDBOX_CAPS" --inh-caps=-all --ambient-caps=-all $SANDBOX_NNP "$@"
' sandbox-run "$@"
