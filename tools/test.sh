#!/usr/bin/env bash
# `make test`: every check, each stage timed (tools/stage.sh, $BLACKWELL_TIMINGS); pytest comes last, so
# the run ends with pytest's summary, after the table of stage timings.
# pytest starts as soon as the toolchain and the lab's cached artifacts (rootfs, apt mirror, wheelhouse) are there.
# lint, sanity and the oracle venv run beside it from the start: the oracle's fixture waits for its build (a lock), and
# tests/integration/test_static_checks.py, handed out last, waits for lint's and sanity's results and fails with
# their logs, so a lint or sanity failure is a failed test in pytest's summary.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
export BLACKWELL_TIMINGS=${BLACKWELL_TIMINGS:-$PWD/tests/output/timings.tsv}
export BLACKWELL_TEST_START=${BLACKWELL_TEST_START:-$(date +%s)}
mkdir -p "$(dirname "$BLACKWELL_TIMINGS")"
rm -f "$BLACKWELL_TIMINGS"
# the machine's hour, before anything else runs: a fixed CPU yardstick (again at the end, tests/conftest.py, by the
# same interpreter: the system's python3, never the venv's)
# PATH without the toolchain's venv (being created while the lab cache builds, and never the yardstick's interpreter)
system_path=$(tr ':' '\n' <<<"$PATH" | grep -vxF "$PWD/.venv/bin" | paste -sd:)
BLACKWELL_YARDSTICK_PYTHON=$(PATH=$system_path command -v python3)
export BLACKWELL_YARDSTICK_PYTHON
read -r yard_wall _yard_cpu < <("$BLACKWELL_YARDSTICK_PYTHON" tools/yardstick.py)
if [ -n "${yard_wall:-}" ]; then
  printf 'yardstick start\t%s\t0\n' "$yard_wall" >>"$BLACKWELL_TIMINGS"
  echo "== yardstick: ${yard_wall} s (tools/yardstick.py; the hints' run: see tests/conftest.py LAB_HINTS_YARDSTICK)"
fi

# The lab's host packages first (apt), then its cached artifacts (rootfs, apt mirror, wheelhouse: downloads
# and disk, no toolchain needed) in the background while the toolchain installs.
tools/stage.sh lab-deps make --no-print-directory lab-deps || exit 1
log=tests/output/lab-cache.log
# (without the toolchain's venv on PATH: it is being created meanwhile, so its python3 may not have pip yet)
PATH=$system_path \
  tools/stage.sh lab-cache tests/fixtures/lab/labctl.sh cache "${LAB_SUITE:-bookworm}" >"$log" 2>&1 &
cache=$!
tools/stage.sh toolchain make --no-print-directory collection || exit 1

# beside pytest: the oracle venv, lint and sanity; each static check leaves its exit status for test_static_checks.py
export BLACKWELL_STATIC_CHECKS=$PWD/tests/output/static
rm -rf "$BLACKWELL_STATIC_CHECKS"
mkdir -p "$BLACKWELL_STATIC_CHECKS"
tools/stage.sh oracle-venv .venv/bin/python tests/integration/conftest.py >tests/output/oracle-venv.log 2>&1 &
for check in lint sanity; do
  (
    tools/stage.sh "$check" make --no-print-directory "$check" >"$BLACKWELL_STATIC_CHECKS/$check.log" 2>&1
    echo $? >"$BLACKWELL_STATIC_CHECKS/$check.rc.tmp" && mv "$BLACKWELL_STATIC_CHECKS/$check.rc.tmp" "$BLACKWELL_STATIC_CHECKS/$check.rc"
  ) &
done

if ! wait "$cache"; then
  echo "building the lab cache failed ($log):"
  tail -30 "$log"
  jobs -p | xargs -r kill 2>/dev/null
  exit 1
fi
grep '^lab cache ready' "$log" | tail -1

# Two workers (pytest-xdist, a file at a time, in the order of tests/conftest.py, not by test count): the
# lab scenario first, beside the controller-side tests;
# then the lab suites, each worker on a lab host of its own (tests/lab/conftest.py), from the images.
BLACKWELL_TIMINGS_REPORT=1 exec .venv/bin/pytest -n "${TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder --durations=25 --junitxml=tests/output/junit.xml tests/unit tests/integration tests/lab
