#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Data suite: `meson install` into a temporary DESTDIR puts every file where the
# pkg-config variables of systemd, dbus-1 and polkit-gobject-1 (and meson's own
# directories) say; the installed units pass `systemd-analyze verify`; the service's
# sandbox scores at most 2.0 in `systemd-analyze security --offline=true` (the capture
# unit at most 2.5), as doc/security.md says.
#
#   tests/check-install.sh SOURCE_DIR BUILD_DIR
#
# Exit 77 (skip) when meson, pkg-config or systemd-analyze is missing, except under CI.
set -eu
src=${1:?usage: $0 SOURCE_DIR BUILD_DIR}
build=${2:?usage: $0 SOURCE_DIR BUILD_DIR}
# The service's unit, and the capture unit's (a bus client only).
MAX_EXPOSURE_SERVICE=2.0
MAX_EXPOSURE_CAPTURE=2.5

skip() {
        if [ -n "${CI:-}" ]; then
                echo "FAIL (CI is set, not skipping): $*" >&2
                exit 1
        fi
        echo "SKIP: $*"
        exit 77
}
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
ok() { echo "ok: $*"; }

for p in meson pkg-config systemd-analyze python3; do
        command -v "$p" >/dev/null || skip "$p not found"
done
for pc in systemd dbus-1 polkit-gobject-1; do
        pkg-config --exists "$pc" || skip "$pc.pc not found"
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest

# meson's own directories, as configured.
meson introspect --buildoptions "$build" >"$tmp/options.json"
opt() {
        python3 -c 'import json, sys
for o in json.load(open(sys.argv[1])):
    if o["name"] == sys.argv[2]:
        print(o["value"])' "$tmp/options.json" "$1"
}
under_prefix() {
        case $1 in /*) echo "$1" ;; *) echo "$(opt prefix)/$1" ;; esac
}
prefix=$(opt prefix)
libexecdir=$(under_prefix "$(opt libexecdir)")
bindir=$(under_prefix "$(opt bindir)")
sysconfdir=$(under_prefix "$(opt sysconfdir)")
mandir=$(under_prefix "$(opt mandir)")
# Unless the options name them, the bus, polkit and systemd directories come from pkg-config.
from_option_or_pc() {
        v=$(opt "$1")
        if [ -n "$v" ]; then echo "$v"; else pkg-config --variable="$3" "$2"; fi
}
unitdir=$(from_option_or_pc systemd_system_unit_dir systemd systemdsystemunitdir)
servicesdir=$(from_option_or_pc dbus_system_services_dir dbus-1 system_bus_services_dir)
policydir=$(from_option_or_pc polkit_actions_dir polkit-gobject-1 policydir)
busconfdir=$(opt dbus_system_conf_dir)
[ -n "$busconfdir" ] || busconfdir=$(pkg-config --variable=datadir dbus-1)/dbus-1/system.d
interfacesdir=$(pkg-config --variable=interfaces_dir dbus-1)

DESTDIR=$dest meson install -C "$build" --no-rebuild --quiet >"$tmp/install.log" 2>&1 || {
        cat "$tmp/install.log" >&2
        bad "meson install into $dest failed"
        exit 1
}

expect() {
        mode=$1
        path=$2
        if [ ! -e "$dest$path" ]; then
                bad "not installed: $path"
                return
        fi
        case $mode in
                x) [ -x "$dest$path" ] || bad "not executable: $path" ;;
                d) [ -d "$dest$path" ] || bad "not a directory: $path" ;;
        esac
        ok "installed $path"
}
expect x "$libexecdir/tracebusd"
expect x "$libexecdir/tracebus-capture"
expect x "$bindir/tracebus"
expect f "$unitdir/tracebusd.service"
expect f "$unitdir/tracebus-capture@.service"
expect f "$unitdir/tracebus-capture@.timer"
expect f "$unitdir/tracebus-producer.socket"
expect f "$servicesdir/org.tracebus.Tracebus1.service"
expect f "$busconfdir/org.tracebus.Tracebus1.conf"
expect f "$policydir/org.tracebus.policy"
expect f "$interfacesdir/org.tracebus.Tracebus1.Manager.xml"
expect f "$interfacesdir/org.tracebus.Tracebus1.Session.xml"
expect f "$sysconfdir/tracebus/tracebusd.conf"
expect d "$sysconfdir/tracebus/tracebusd.conf.d"
expect f "$sysconfdir/tracebus/captures/nightly.pbtxt"
expect f "$sysconfdir/tracebus/captures/nightly.conf"
expect f "$mandir/man8/tracebusd.8"

# The data suite validates the sources against their DTDs; the installed files are those.
same() {
        if cmp -s "$1" "$dest$2"; then ok "$2 is $1"; else bad "$2 differs from $1"; fi
}
same "$src/dbus/org.tracebus.Tracebus1.conf" "$busconfdir/org.tracebus.Tracebus1.conf"
same "$src/polkit/org.tracebus.policy" "$policydir/org.tracebus.policy"

# Activation: named after Name=, Exec= the installed service, SystemdService= an installed unit.
act=$dest$servicesdir/org.tracebus.Tracebus1.service
if [ -f "$act" ]; then
        name=$(sed -n 's/^Name=//p' "$act")
        exec_line=$(sed -n 's/^Exec=//p' "$act")
        unit=$(sed -n 's/^SystemdService=//p' "$act")
        [ "$name.service" = "$(basename "$act")" ] || bad "activation file $(basename "$act") has Name=$name"
        [ "$exec_line" = "$libexecdir/tracebusd" ] || bad "activation Exec=$exec_line, expected $libexecdir/tracebusd"
        [ -f "$dest$unitdir/$unit" ] || bad "activation SystemdService=$unit is not an installed unit"
        grep -q "^BusName=$name\$" "$dest$unitdir/$unit" || bad "$unit has no BusName=$name"
        ok "activation file: Name=$name, Exec=$exec_line, SystemdService=$unit"
fi

# No unconfigured @...@ left in anything installed.
if grep -rlI '@[a-z_]*@' "$dest" 2>/dev/null | grep -v '\.xml$' >"$tmp/unsubst"; then
        bad "unsubstituted @variables@ in: $(cat "$tmp/unsubst")"
fi

# systemd-analyze verify checks that ExecStart= exists at its absolute path, which
# is inside DESTDIR here: verify copies whose commands point into DESTDIR.
mkdir "$tmp/units"
for f in tracebusd.service tracebus-capture@.service tracebus-capture@.timer tracebus-producer.socket; do
        [ -f "$dest$unitdir/$f" ] || continue
        sed "s|^ExecStart=$libexecdir/|ExecStart=$dest$libexecdir/|" "$dest$unitdir/$f" >"$tmp/units/$f"
done
for u in tracebusd.service tracebus-capture@nightly.service tracebus-capture@nightly.timer tracebus-producer.socket; do
        # MANPATH: Documentation=man:tracebusd(8) must name an installed page.
        if MANPATH=$dest$mandir SYSTEMD_LOG_LEVEL=notice systemd-analyze verify "$tmp/units/$u" >"$tmp/verify.log" 2>&1 &&
           ! grep -q . "$tmp/verify.log"; then
                ok "systemd-analyze verify $u"
        else
                cat "$tmp/verify.log" >&2
                bad "systemd-analyze verify $u"
        fi
done

# The sandbox: the exposure score of the installed units.
for u in tracebusd.service tracebus-capture@.service; do
        case $u in tracebusd.service) max=$MAX_EXPOSURE_SERVICE ;; *) max=$MAX_EXPOSURE_CAPTURE ;; esac
        systemd-analyze security --offline=true --no-pager "$dest$unitdir/$u" >"$tmp/security.log" 2>&1 || true
        score=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$tmp/security.log")
        if [ -z "$score" ]; then
                cat "$tmp/security.log" >&2
                bad "no exposure score for $u"
        elif python3 -c "import sys; sys.exit(0 if float('$score') <= $max else 1)"; then
                ok "systemd-analyze security: $u scores $score (at most $max)"
        else
                grep '✗' "$tmp/security.log" >&2 || true
                bad "systemd-analyze security: $u scores $score, above $max"
        fi
done

exit $fail
