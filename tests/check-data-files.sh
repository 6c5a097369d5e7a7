#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Data suite: the shipped polkit and D-Bus files are valid against their DTDs,
# and each D-Bus activation file is named after its Name= (the setuid launch
# helper finds services by file name; the bus tests cannot check that).
#
#   tests/check-data-files.sh SOURCE_DIR [BUILD_DIR]
#
# Exit 77 (skip) when xmllint or a DTD is missing, except under CI.
set -eu
src=${1:?usage: $0 SOURCE_DIR [BUILD_DIR]}
build=${2:-}
POLKIT_DTD=/usr/share/polkit-1/policyconfig-1.dtd
BUS_DTD=/usr/share/xml/dbus-1/busconfig.dtd

skip() {
        if [ -n "${CI:-}" ]; then
                echo "FAIL (CI is set, not skipping): $*" >&2
                exit 1
        fi
        echo "SKIP: $*"
        exit 77
}

command -v xmllint >/dev/null || skip "xmllint not found (package libxml2-utils)"
[ -r "$POLKIT_DTD" ] || skip "$POLKIT_DTD missing (package polkitd)"
[ -r "$BUS_DTD" ] || skip "$BUS_DTD missing (package dbus-daemon)"

fail=0
n=0
for f in "$src"/polkit/*.policy "$src"/polkit/*.policy.in; do
        [ -e "$f" ] || continue
        n=$((n + 1))
        if xmllint --noout --nonet --dtdvalid "$POLKIT_DTD" "$f"; then
                echo "ok: $f is valid against $POLKIT_DTD"
        else
                echo "FAIL: $f is not valid against $POLKIT_DTD" >&2
                fail=1
        fi
done
[ "$n" -gt 0 ] || { echo "FAIL: no polkit/*.policy in $src" >&2; fail=1; }

# Debian's busconfig.dtd (dbus 1.14) is stale: it declares only the old
# attributes (send, receive, send_to, ...), so every policy file on the system,
# polkitd's included, fails against it. XML merges repeated ATTLIST
# declarations, so validate against it plus the attributes dbus-daemon(1)
# documents for <allow>/<deny>: a misspelt attribute still fails.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
        cat "$BUS_DTD"
        for el in allow deny; do
                echo "<!ATTLIST $el"
                for a in send_interface send_member send_error send_destination send_destination_prefix \
                         send_path send_type send_requested_reply send_broadcast receive_interface \
                         receive_member receive_error receive_sender receive_path receive_type \
                         receive_requested_reply eavesdrop own_prefix group min_fds max_fds log; do
                        echo "          $a CDATA #IMPLIED"
                done
                echo ">"
        done
} >"$tmp/busconfig.dtd"
BUS_DTD_FULL=$tmp/busconfig.dtd

# Self-check of the extended DTD: a typo must not validate.
cat >"$tmp/typo.conf" <<'XML'
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><policy context="default"><allow send_destinaton="x"/></policy></busconfig>
XML
if xmllint --noout --nonet --dtdvalid "$BUS_DTD_FULL" "$tmp/typo.conf" 2>/dev/null; then
        echo "FAIL: the extended busconfig DTD accepts a misspelt attribute" >&2
        fail=1
fi

n=0
for f in "$src"/dbus/*.conf; do
        [ -e "$f" ] || continue
        n=$((n + 1))
        if xmllint --noout --nonet --dtdvalid "$BUS_DTD_FULL" "$f"; then
                echo "ok: $f is valid against $BUS_DTD (+ current allow/deny attributes)"
        else
                echo "FAIL: $f is not valid against $BUS_DTD (+ current allow/deny attributes)" >&2
                fail=1
        fi
done
[ "$n" -gt 0 ] || { echo "FAIL: no dbus/*.conf in $src" >&2; fail=1; }

# Activation files: the template in the source tree and the generated one.
n=0
for f in "$src"/dbus/*.service.in ${build:+"$build"/dbus/*.service}; do
        [ -e "$f" ] || continue
        n=$((n + 1))
        base=$(basename "$f")
        base=${base%.in}
        base=${base%.service}
        name=$(sed -n 's/^Name=//p' "$f")
        if [ "$name" != "$base" ]; then
                echo "FAIL: $f: Name=$name but the file is named $base.service" >&2
                fail=1
                continue
        fi
        for key in User=root SystemdService=; do
                if ! grep -q "^$key" "$f"; then
                        echo "FAIL: $f: no $key line" >&2
                        fail=1
                fi
        done
        if ! grep -q '^\[D-BUS Service\]$' "$f"; then
                echo "FAIL: $f: no [D-BUS Service] section" >&2
                fail=1
        fi
        echo "ok: $f is named after Name=$name"
done
[ "$n" -gt 0 ] || { echo "FAIL: no dbus/*.service.in in $src" >&2; fail=1; }

exit $fail
