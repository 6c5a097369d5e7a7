#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Data suite: the bus contract header, dbus/tracebus-bus.h, says what the rest of
# dbus/ says. Every interface name in it is an interface of dbus/*.xml (and every
# interface there has a name in it); the object paths are the ones the XML files
# document; the bus name is the one the policy, the activation file and the
# user guide use; every error name is declared in the XML (the
# org.tracebus.Tracebus1.Errors annotation) and the XML declares no other; and
# every TB_ERROR_* has an errno in lib/bus/bus-errors.c's map and a sentence in
# its explanations; the polkit action ids in it are the actions of
# polkit/org.tracebus.policy, both ways.
#
#   tests/check-bus-contract.sh SOURCE_DIR
#
# Exit 77 (skip) when xmllint is missing, except under CI.
set -eu
src=${1:?usage: $0 SOURCE_DIR}
header=$src/dbus/tracebus-bus.h
errors_c=$src/lib/bus/bus-errors.c
ERRORS_ANNOTATION=org.tracebus.Tracebus1.Errors

if ! command -v xmllint >/dev/null; then
        if [ -n "${CI:-}" ]; then
                echo "FAIL (CI is set, not skipping): xmllint not found (package libxml2-utils)" >&2
                exit 1
        fi
        echo "SKIP: xmllint not found (package libxml2-utils)"
        exit 77
fi

fail=0
bad() {
        echo "FAIL: $*" >&2
        fail=1
}

# The value of macro $1 in the header: its string literals joined, with a
# TB_* macro it starts with (TB_ERROR_PREFIX "Name") expanded first.
macro() {
        def=$(sed -n "s/^#define $1[[:space:]]\{1,\}//p" "$header")
        [ -n "$def" ] || { echo ""; return; }
        case $def in
        TB_*)
                inner=${def%% *}
                rest=${def#"$inner"}
                printf '%s%s\n' "$(macro "$inner")" "$(printf '%s' "$rest" | sed 's/[[:space:]]*"\([^"]*\)"/\1/g')"
                ;;
        *)
                printf '%s\n' "$def" | sed 's/[[:space:]]*"\([^"]*\)"/\1/g'
                ;;
        esac
}

bus_name=$(macro TB_BUS_NAME)
manager_path=$(macro TB_MANAGER_PATH)
session_prefix=$(macro TB_SESSION_PATH_PREFIX)
[ -n "$bus_name" ] && [ -n "$manager_path" ] && [ -n "$session_prefix" ] ||
        bad "$header lacks TB_BUS_NAME, TB_MANAGER_PATH or TB_SESSION_PATH_PREFIX"

# The header's macros named like $1 against the names $2 of $3, both ways: each
# macro's value is one of them, and each of them has a macro ($4: what they are,
# a word that takes "an").
check_both_ways() {
        pattern=$1 theirs=" $(echo $2) " where=$3 what=$4
        ours=""
        for m in $(sed -n "s/^#define \($pattern\)[[:space:]].*/\1/p" "$header"); do
                v=$(macro "$m")
                ours="$ours $v"
                case "$theirs" in
                *" $v "*) echo "ok: $m = $v is an $what of $where" ;;
                *) bad "$m = $v is no $what of $where (it has:$theirs)" ;;
                esac
        done
        [ -n "$ours" ] || bad "no $pattern in $header"
        for v in $theirs; do
                case " $ours " in
                *" $v "*) ;;
                *) bad "$what $v of $where has no $pattern in $header" ;;
                esac
        done
}

# Interfaces: the header's names and the XML's, both ways.
xml_ifaces=""
for f in "$src"/dbus/*.xml; do
        xml_ifaces="$xml_ifaces $(xmllint --xpath '//interface/@name' "$f" | sed 's/ *name="\([^"]*\)"/\1 /g')"
done
check_both_ways 'TB_[A-Z_]*_INTERFACE' "$xml_ifaces" 'dbus/*.xml' interface

# Paths: each interface file says where its objects are ("NAME, at PATH").
check_documented() { # file, text that must be in it, what
        if grep -qF -- "$2" "$1"; then
                echo "ok: $(basename "$1") says $3"
        else
                bad "$1 does not say $3 ('$2')"
        fi
}
manager_xml=$src/dbus/$(macro TB_MANAGER_INTERFACE).xml
session_xml=$src/dbus/$(macro TB_SESSION_INTERFACE).xml
check_documented "$manager_xml" "$(macro TB_MANAGER_INTERFACE), at $manager_path." "the Manager is at TB_MANAGER_PATH"
check_documented "$session_xml" "$(macro TB_SESSION_INTERFACE), at $session_prefix/<n>" \
        "sessions are at TB_SESSION_PATH_PREFIX/<n>"
check_documented "$src/doc/user-guide.md" "busctl call $bus_name $manager_path $(macro TB_MANAGER_INTERFACE)" \
        "busctl call TB_BUS_NAME TB_MANAGER_PATH TB_MANAGER_INTERFACE"
check_documented "$src/doc/user-guide.md" "$session_prefix/" "sessions are at TB_SESSION_PATH_PREFIX/"
check_documented "$src/dbus/$bus_name.conf" "<allow own=\"$bus_name\"/>" "root owns TB_BUS_NAME"
check_documented "$src/dbus/$bus_name.service.in" "Name=$bus_name" "it activates TB_BUS_NAME"

# Errors: the header's and the XML's annotation, both ways; the header's in bus-errors.c.
xml_errors=""
for f in "$src"/dbus/*.xml; do
        xml_errors="$xml_errors $(xmllint --xpath "string(//interface/annotation[@name='$ERRORS_ANNOTATION']/@value)" "$f")"
done
header_errors=""
n=0
for m in $(sed -n 's/^#define \(TB_ERROR_[A-Z_]*\)[[:space:]].*/\1/p' "$header"); do
        [ "$m" = TB_ERROR_PREFIX ] && continue
        n=$((n + 1))
        v=$(macro "$m")
        header_errors="$header_errors $v"
        case " $(echo $xml_errors) " in
        *" $v "*) echo "ok: $m = $v is declared in dbus/*.xml" ;;
        *) bad "$m = $v is not declared in dbus/*.xml (annotation $ERRORS_ANNOTATION)" ;;
        esac
        if grep -q "SD_BUS_ERROR_MAP($m," "$errors_c"; then
                echo "ok: $m has an errno in $(basename "$errors_c")"
        else
                bad "$m has no SD_BUS_ERROR_MAP($m, ...) in $errors_c"
        fi
        if grep -q "{ $m," "$errors_c"; then
                echo "ok: $m has an explanation in $(basename "$errors_c")"
        else
                bad "$m has no explanation ({ $m, \"...\" }) in $errors_c"
        fi
done
[ "$n" -gt 0 ] || bad "no TB_ERROR_* in $header"
for v in $xml_errors; do
        case " $header_errors " in
        *" $v "*) ;;
        *) bad "error $v declared in dbus/*.xml has no TB_ERROR_* in $header" ;;
        esac
done

# polkit actions: the header's TB_ACTION_* and the policy's action ids, both ways.
policy=$src/polkit/org.tracebus.policy
policy_actions=$(xmllint --xpath '//action/@id' "$policy" | sed 's/ *id="\([^"]*\)"/\1 /g')
check_both_ways 'TB_ACTION_[A-Z_]*' "$policy_actions" "$policy" action

exit $fail
