#!/usr/bin/env bash
# The probe's GPU checks, in one run on a machine with a GPU (written for the lent H200: python3 with a
# CUDA torch and pytest, no network, the repository as the working directory).
#
#   OUT=/some/dir bash benchmarks/gpu_suite.sh
#
# DEVICE=cpu runs the same steps against the CPU (a rehearsal on a machine without a GPU: the gpu
# tier then fails, as it must there).
#
# Writes at most 8 files under $OUT: suite.log (everything printed), diagnose.json, probe_quick.json and
# probe_full.json (the suites' documents), junit_gpu.xml (the gpu test tier), memory_verify.json (the
# memory command's verification, when this checkout has it), summary.json (wall times and exit codes).
# Each step has its own timeout (60 + 180 + 150 + 120 s at most); a normal run takes 2-3 minutes.
# The exit status is the first failing step's (0 when every step passed).
set -u -o pipefail

OUT=${OUT:?set OUT to the folder for the results}
PY=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
exec > >(tee -a "$OUT/suite.log") 2>&1

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
worst=0
note_rc() { if [ "$1" -ne 0 ] && [ "$worst" -eq 0 ]; then worst=$1; fi; }

echo "== machine"
date -u +%Y-%m-%dT%H:%M:%SZ
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit \
  --format=csv 2>&1 || echo "nvidia-smi: not available"
"$PY" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())'

echo "== diagnose (the real driver, NVML and torch: expected OK, not simulated)"
timeout 120 "$PY" -m harness diagnose --out "$OUT/diagnose.json"
rc_diag=$?
echo "diagnose: exit $rc_diag"
note_rc "$rc_diag"

echo "== quick suite, a fresh process (target on an H200: <= 20 s)"
t0=$(now)
timeout 60 "$PY" -m harness probe --quick --device "$DEVICE" --out "$OUT/probe_quick.json"
rc_quick=$?
quick_s=$(elapsed "$t0" "$(now)")
echo "quick suite: exit $rc_quick, ${quick_s} s wall"
note_rc "$rc_quick"

echo "== full suite, a fresh process (targets on an H200: <= 90 s, copy >= 4.2 TB/s, bf16 >= 770 TFLOP/s)"
t0=$(now)
timeout 180 "$PY" -m harness probe --full --device "$DEVICE" --out "$OUT/probe_full.json"
rc_full=$?
full_s=$(elapsed "$t0" "$(now)")
echo "full suite: exit $rc_full, ${full_s} s wall"
note_rc "$rc_full"

echo "== gpu test tier (reads the documents above instead of probing again)"
export REFENV_PROBE_QUICK_JSON="$OUT/probe_quick.json" REFENV_PROBE_QUICK_SECONDS="$quick_s"
export REFENV_PROBE_FULL_JSON="$OUT/probe_full.json" REFENV_PROBE_FULL_SECONDS="$full_s"
[ -s "$OUT/probe_quick.json" ] || unset REFENV_PROBE_QUICK_JSON REFENV_PROBE_QUICK_SECONDS
[ -s "$OUT/probe_full.json" ] || unset REFENV_PROBE_FULL_JSON REFENV_PROBE_FULL_SECONDS
timeout 150 "$PY" -m pytest -m gpu tests/gpu -q -p no:cacheprovider --junitxml "$OUT/junit_gpu.xml"
rc_tests=$?
echo "gpu tests: exit $rc_tests"
note_rc "$rc_tests"

echo "== memory verification (python3 -m harness memory --verify --device $DEVICE --json)"
if "$PY" -m harness memory --help >/dev/null 2>&1; then
  timeout 120 "$PY" -m harness memory --verify --device "$DEVICE" --json >"$OUT/memory_verify.json"
  rc_memory=$?
  echo "memory verification: exit $rc_memory"
  note_rc "$rc_memory"
else
  rc_memory=null
  echo "memory verification: skipped, this checkout has no 'memory' command"
fi

cat >"$OUT/summary.json" <<EOF
{"diagnose_exit": $rc_diag, "quick_wall_seconds": $quick_s, "quick_exit": $rc_quick,
 "full_wall_seconds": $full_s, "full_exit": $rc_full,
 "gpu_tests_exit": $rc_tests, "memory_verify_exit": $rc_memory}
EOF
echo "== summary"
cat "$OUT/summary.json"
exit "$worst"
