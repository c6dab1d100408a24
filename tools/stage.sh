#!/usr/bin/env bash
# One stage of `make test`, timed: tools/stage.sh NAME CMD [ARG...]
# Appends "NAME<TAB>seconds<TAB>rc" to $BLACKWELL_TIMINGS (pytest prints the table at its end).
set -uo pipefail
name=$1
shift
timings=${BLACKWELL_TIMINGS:-tests/output/timings.tsv}
mkdir -p "$(dirname "$timings")"
start=$(date +%s%N)
"$@"
rc=$?
secs=$(( ($(date +%s%N) - start) / 1000000 ))
printf '%s\t%d.%03d\t%s\n' "$name" $((secs / 1000)) $((secs % 1000)) "$rc" >> "$timings"
printf '== stage %s: %d.%d s (rc %s)\n' "$name" $((secs / 1000)) $((secs % 1000 / 100)) "$rc"
exit "$rc"
