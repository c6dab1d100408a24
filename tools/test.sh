#!/usr/bin/env bash
# `make test`: every check, each stage timed (tools/stage.sh, $BLACKWELL_TIMINGS); pytest comes last, so
# the run ends with pytest's summary, after the table of stage timings.
# The lab's cached artifacts (rootfs, apt mirror, wheelhouse, oracle venv; downloads and disk) are built
# in the background while the toolchain installs and lint and sanity (CPU, side by side) run; pytest starts when all
# are done.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
export BLACKWELL_TIMINGS=${BLACKWELL_TIMINGS:-$PWD/tests/output/timings.tsv}
export BLACKWELL_TEST_START=${BLACKWELL_TEST_START:-$(date +%s)}
mkdir -p "$(dirname "$BLACKWELL_TIMINGS")"
rm -f "$BLACKWELL_TIMINGS"
# the machine's hour, before anything else runs: a fixed CPU yardstick (again at the end, tests/conftest.py)
read -r yard_wall _yard_cpu < <(python3 tools/yardstick.py)
printf 'yardstick start\t%s\t0\n' "$yard_wall" >>"$BLACKWELL_TIMINGS"
echo "== yardstick: ${yard_wall} s (tools/yardstick.py; the hints' run: see tests/conftest.py LAB_HINTS_YARDSTICK)"

# The lab's host packages first (apt), then its cached artifacts (rootfs, apt mirror, wheelhouse: downloads
# and disk, no toolchain needed) in the background while the toolchain installs and lint and sanity run;
# the oracle venv (needs the toolchain's python to start its build) joins them once the toolchain is there.
tools/stage.sh lab-deps make --no-print-directory lab-deps || exit 1
log=tests/output/lab-cache.log
# (without the toolchain's venv on PATH: it is being created meanwhile, so its python3 may not have pip yet)
PATH=$(tr ':' '\n' <<<"$PATH" | grep -vxF "$PWD/.venv/bin" | paste -sd:) \
  tools/stage.sh lab-cache tests/fixtures/lab/labctl.sh cache "${LAB_SUITE:-bookworm}" >"$log" 2>&1 &
cache=$!
tools/stage.sh toolchain make --no-print-directory collection || exit 1
tools/stage.sh oracle-venv .venv/bin/python tests/integration/conftest.py >>"$log" 2>&1 &
oracle=$!
# lint (about 1.2 cores) and sanity (one core) side by side, each into its own log, shown once both are done
tools/stage.sh lint make --no-print-directory lint >tests/output/lint.log 2>&1 &
lint_job=$!
tools/stage.sh sanity make --no-print-directory sanity >tests/output/sanity.log 2>&1 &
sanity_job=$!
wait "$lint_job"
lint=$?
wait "$sanity_job"
sanity=$?
cat tests/output/lint.log tests/output/sanity.log
for job in "$cache" "$oracle"; do
  if ! wait "$job"; then
    echo "building the lab cache failed ($log):"
    tail -30 "$log"
    exit 1
  fi
done
grep '^lab cache ready' "$log" | tail -1
[ "$lint" = 0 ] && [ "$sanity" = 0 ] || exit 1

# Two workers (pytest-xdist, a file at a time, in the order of tests/conftest.py, not by test count): the
# lab scenario first, beside the controller-side tests;
# then the lab suites, each worker on a lab host of its own (tests/lab/conftest.py), from the images.
BLACKWELL_TIMINGS_REPORT=1 exec .venv/bin/pytest -n "${TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder --durations=25 --junitxml=tests/output/junit.xml tests/unit tests/integration tests/lab
