#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/systemd/make-root.sh: prints the path of a minimal Debian 12 root for the
# booted-container test, building it first if it is not cached yet.
#
# The root is built once with mmdebstrap from the machine's own apt sources and kept
# under /var/lib/machines/tracebus-test-HASH, HASH being that of this script (which
# holds the package list): a changed list makes a new root, and the old one is
# removed. The test never writes into it (it boots it with --volatile=overlay), so
# runs and CI jobs on the same machine share it.
set -eu

# What tracebus's package needs at run time, and what the test drives it with:
# systemd as PID 1 with logind (libpam-systemd) and machined (systemd-container, for
# "machinectl shell" into a real session), the system bus, polkitd; libdw1 and libelf1
# for linux.perf's unwinding: the root has no apt lists to fetch them later.
packages=systemd,systemd-sysv,dbus,polkitd,libpam-systemd,systemd-container,libprotobuf-c1,libtracefs1,libtraceevent1,procps,passwd,login,util-linux,ca-certificates,libdw1,libelf1

here=$(cd "$(dirname "$0")" && pwd)
hash=$(sha256sum "$here/make-root.sh" | cut -c 1-12)
base=/var/lib/machines
root=$base/tracebus-test-$hash

if [ -f "$root/.tracebus-test-complete" ]; then
        echo "$root"
        exit 0
fi

log() { echo "make-root: $*" >&2; }
for tool in mmdebstrap systemd-nspawn; do
        command -v "$tool" >/dev/null || { log "$tool is missing (tools/setup-debian installs it)"; exit 1; }
done

# The machine's own sources: deb822 files where it has them, else sources.list.
sources=
for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list; do
        [ -s "$f" ] && sources="$sources $f"
done
[ -n "$sources" ] || { log "no apt sources on this machine"; exit 1; }

mkdir -p "$base"
for old in "$base"/tracebus-test-*; do
        [ -e "$old" ] && [ "$old" != "$root" ] && { log "removing the outdated root $old"; rm -rf "$old"; }
done
rm -rf "$root" "$root.tmp"
log "building $root (about 3 minutes; cached afterwards)"
# shellcheck disable=SC2086 # one argument per sources file
nice -n 10 mmdebstrap --quiet --variant=minbase --include="$packages" bookworm "$root.tmp" $sources >&2

echo tbtest >"$root.tmp/etc/hostname"
chroot "$root.tmp" useradd -m -s /bin/bash -U tbuser
chroot "$root.tmp" useradd -m -s /bin/bash -U tbdenied
# polkit: tbuser records without a password; tbdenied gets polkit's default (auth_admin).
cat >"$root.tmp/etc/polkit-1/rules.d/50-tbuser-record.rules" <<'RULES'
polkit.addRule(function(action, subject) {
        if (action.id == "org.tracebus.record" && subject.user == "tbuser")
                return polkit.Result.YES;
});
RULES
touch "$root.tmp/.tracebus-test-complete"
mv "$root.tmp" "$root"
log "built $root"
echo "$root"
