#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# data: the CLI's man page and bash completion.
#   - doc/tracebus.1 formats without a warning (groff -ww);
#   - every long option `tracebus --help` shows is in the man page and in the completion;
#   - the completion completes options, option values and event names (from a stand-in
#     `tracebus --list-events`);
#   - meson installs both: the page into man1, the completion as completions/tracebus.
#
#   check-cli-docs.sh SOURCE_DIR BUILD_DIR
set -euo pipefail

src=$1
build=$2
man=$src/doc/tracebus.1
completion=$src/client/cli/tracebus.bash-completion
cli=$build/client/cli/tracebus
failed=0

fail() {
        echo "FAIL: $*" >&2
        failed=1
}

if command -v groff >/dev/null; then
        warnings=$(groff -man -ww -z "$man" 2>&1) || fail "groff failed on $man"
        [[ -z $warnings ]] || fail "groff warns about $man: $warnings"
else
        echo "groff not installed: the man page is not formatted" >&2
fi

# The man page writes options as \-\-name.
man_text=$(sed 's/\\-/-/g' "$man")
for opt in $("$cli" --help | grep -o -- '--[a-z_-]*' | sort -u); do
        grep -q -- "$opt" <<<"$man_text" || fail "$opt is not in the man page"
        grep -q -- "$opt" "$completion" || fail "$opt is not in the bash completion"
done

if command -v meson >/dev/null; then
        installed=$(meson introspect --installed "$build")
        grep -q '/man1/tracebus\.1"' <<<"$installed" || fail "meson does not install tracebus.1 into man1"
        grep -q '/completions/tracebus"' <<<"$installed" || fail "meson does not install the completion as completions/tracebus"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/tracebus" <<'EOF'
#!/bin/sh
[ "$1" = --list-events ] && printf '%s\n' sched/sched_switch sched/sched_waking power/cpu_idle
[ "$1" = --query ] && printf '%s\n' '{"sessions": [], "producers": [{"id": 1, "name": "app", "uid": 1000, "pid": 7, "data_sources": [{"name": "track_event", "categories": ["rendering", "audio.latency"]}, {"name": "com.example.custom", "categories": []}]}]}'
exit 0
EOF
chmod +x "$tmp/tracebus"

# complete WORD...: what the completion offers for the last word.
complete_words() {
        bash -c '
                source "$1"; shift
                COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
                _tracebus
                printf "%s\n" "${COMPREPLY[@]}"
        ' check "$completion" "$@"
}

expect() {
        local want=$1; shift
        local got
        got=$(complete_words "$@")
        grep -qxF -- "$want" <<<"$got" || fail "completing '$*' does not offer '$want' (offers: ${got//$'\n'/ })"
}

expect_not() {
        local unwanted=$1; shift
        local got
        got=$(complete_words "$@")
        ! grep -qxF -- "$unwanted" <<<"$got" || fail "completing '$*' offers '$unwanted'"
}

bash -c 'source "$1"; complete -p tracebus' check "$completion" >/dev/null || fail "no completion for tracebus"
expect --time "$tmp/tracebus" --ti
expect --is_detached= "$tmp/tracebus" --is_
expect --list-events "$tmp/tracebus" --list
expect 10s "$tmp/tracebus" -t 1
expect 32mb "$tmp/tracebus" --buffer 3
expect sched/sched_switch "$tmp/tracebus" -t 10s sched/sched_sw
expect 'sched/*' "$tmp/tracebus" sched/
expect power/cpu_idle "$tmp/tracebus" --list-events = power/
expect_not sched/sched_switch "$tmp/tracebus" --attach = sched
expect_not power/cpu_idle "$tmp/tracebus" sched/
expect rendering "$tmp/tracebus" --track-event r
expect audio.latency "$tmp/tracebus" --track-event a
expect rendering "$tmp/tracebus" --track-event ''
expect_not com.example.custom "$tmp/tracebus" --track-event c

exit $failed
