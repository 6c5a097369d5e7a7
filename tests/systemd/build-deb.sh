#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tests/systemd/build-deb.sh SOURCE_DIR OUT_DIR: builds the Debian packages from the
# working tree of SOURCE_DIR (tracked and new files, as they are now) with
# dpkg-buildpackage -b -us -uc, runs lintian on them, and leaves the .deb files and
# lintian.log in OUT_DIR. Fails on a build failure or on any lintian error.
set -euo pipefail
src=$(cd "${1:?usage: $0 SOURCE_DIR OUT_DIR}" && pwd)
out=${2:?usage: $0 SOURCE_DIR OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)

work=$(mktemp -d /tmp/tracebus-deb.XXXXXX)
trap 'rm -rf "$work"' EXIT
# dpkg-buildpackage writes its results next to the source tree: a copy in a scratch
# directory, so that nothing lands beside the checkout.
mkdir "$work/tracebus"
(cd "$src" && git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
        tar --null -T - -cf -) | tar -C "$work/tracebus" -xf -

(cd "$work/tracebus" && nice -n 10 dpkg-buildpackage -b -us -uc -j"$(nproc)") >"$out/build.log" 2>&1 || {
        tail -n 40 "$out/build.log" >&2
        echo "build-deb: dpkg-buildpackage failed (log: $out/build.log)" >&2
        exit 1
}
rm -f "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
cp "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out"/
# Errors fail; warnings and the rest are shown.
lintian --fail-on error "$out"/*.changes >"$out/lintian.log" 2>&1 || {
        cat "$out/lintian.log" >&2
        echo "build-deb: lintian reports errors" >&2
        exit 1
}
cat "$out/lintian.log" >&2
ls "$out"/*.deb
