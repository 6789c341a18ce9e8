#!/usr/bin/env bash
# The GPU checks, for a machine with a CUDA GPU and CuPy (CI has none): Ember from the source
# tree (no install; the machine's own NumPy/CuPy/pytest), then
#   1. a smoke step (a matmul, ReLU and backward on the GPU),
#   2. the `gpu`-marked tests (tests/conftest.py skips them without a GPU),
#   3. the suite with the GPU as the default device (EMBER_TEST_DEVICE=cuda: every tensor a
#      test makes lands there; tests/strict_exceptions.py and tests/cuda_exceptions.py list
#      what cannot pass there), cut off after SUITE_S seconds,
#   4. benchmarks/bench_vmap.py on the GPU (issue 17's vmap against a loop).
# Results go to $OUT (default /tmp/ember_gpu): gpu_marked.log, suite.log.gz, and
# cuda_failures.tsv (one line per failing test: the ember line it stopped at, the error, the id).
# Usage: tools/gpu_check.sh [pytest paths for step 3, default tests]; SKIP_MARKED=1 and
# NO_BENCH=1 leave steps 2 and 4 out, SUITE_S and WORKERS size step 3.
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/ember_gpu}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
SUITE_S="${SUITE_S:-300}"
WORKERS="${WORKERS:-12}"
PYTHONPATH="$(printf '%s:' "$PWD"/packages/*/src)$PWD/tests"
export PYTHONPATH PYTHONUNBUFFERED=1 CI=true
nvidia-smi -L
"$PY" -c "import sys, numpy, cupy; print(sys.version.split()[0], 'numpy', numpy.__version__,
'cupy', cupy.__version__, 'devices', cupy.cuda.runtime.getDeviceCount())"
"$PY" - <<'PYEOF' || exit 1
import ember
x = ember.randn(64, 64, device="cuda", requires_grad=True)
y = (x @ x).relu().sum()
y.backward()
print("smoke:", y.item(), x.grad.device, ember.cuda.memory_allocated())
PYEOF
if [ -z "${SKIP_MARKED:-}" ]; then
echo "== gpu-marked tests"
# only the files that hold gpu-marked tests: collecting the whole suite takes longer
mapfile -t marked < <(grep -rl "mark.gpu" tests --include="test_*.py")
timeout "${GPU_TESTS_S:-180}" "$PY" -m pytest -q -p no:cacheprovider -m gpu --timeout 120 \
    -n 4 --tb=short "${marked[@]}" > "$OUT/gpu_marked.log" 2>&1
tail -60 "$OUT/gpu_marked.log"
fi
echo "== the suite with cuda as the default device (${SUITE_S}s at most)"
rm -f "$OUT/cuda_failures.tsv"
paths=("$@")
[ ${#paths[@]} -eq 0 ] && paths=(tests)
EMBER_TEST_DEVICE=cuda EMBER_STRICT_REPORT="$OUT/cuda_failures.tsv" timeout "$SUITE_S" \
    "$PY" -m pytest -q -p no:cacheprovider -n "$WORKERS" --timeout 120 --tb=short \
    -m "not distributed and not slow" "${paths[@]}" > "$OUT/suite.log" 2>&1
echo "suite exit $?"
tail -5 "$OUT/suite.log"
gzip -f "$OUT/suite.log"
[ -f "$OUT/cuda_failures.tsv" ] && cut -f1,2 "$OUT/cuda_failures.tsv" | sort | uniq -c \
    | sort -rn | head -40
if [ -z "${NO_BENCH:-}" ]; then
    echo "== bench_vmap on the GPU"
    (cd benchmarks && BENCH_DEVICE=cuda timeout 120 "$PY" bench_vmap.py) 2>&1 | tail -8
fi
