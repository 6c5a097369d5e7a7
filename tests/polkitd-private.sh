#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Run the real polkitd with test-local actions and rules, without touching the
# system's directories: the caller runs this inside a private mount namespace,
#
#   unshare --mount --propagation private tests/polkitd-private.sh ACTIONS RULES EMPTY [polkitd args]
#
# and the bind mounts below vanish with the namespace when polkitd exits.
# polkitd's directories are compiled in (no option or environment variable),
# hence the mounts. EMPTY hides the distribution's rules (50-default.rules).
# polkitd is started as root and drops to user polkitd itself, so the three
# directories must be readable by that user.
set -e
if [ $# -lt 3 ]; then
        echo "usage: $0 ACTIONS_DIR RULES_DIR EMPTY_DIR [polkitd args]" >&2
        exit 2
fi
ACTIONS=$1
RULES=$2
EMPTY=$3
shift 3

POLKITD=/usr/lib/polkit-1/polkitd
[ -x "$POLKITD" ] || POLKITD=/usr/libexec/polkitd

mount --bind "$ACTIONS" /usr/share/polkit-1/actions
mount --bind "$RULES" /etc/polkit-1/rules.d
mount --bind "$EMPTY" /usr/share/polkit-1/rules.d
exec "$POLKITD" "$@"
