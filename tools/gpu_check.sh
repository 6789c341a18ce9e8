#!/usr/bin/env bash
# The GPU checks, for a machine with a CUDA GPU and CuPy (CI has none): Ember from the source
# tree (no install; the machine's own NumPy/CuPy/pytest), then
#   1. a smoke step (a matmul, ReLU and backward on the GPU),
#   2. the benchmarks on a quiet machine: benchmarks/bench_compile.py (issue 14: compiled,
#      its elementwise chains as CuPy ElementwiseKernels, against eager and PyTorch eager) and
#      benchmarks/bench_vmap.py (issue 17's vmap against a loop), both with BENCH_DEVICE=cuda,
#   3. side by side: the `gpu`-marked tests (tests/conftest.py skips them without a GPU) and
#      the suite with the GPU as the default device (EMBER_TEST_DEVICE=cuda: every tensor a
#      test makes lands there; tests/strict_exceptions.py and tests/cuda_exceptions.py list
#      what cannot pass there), each cut off after its time.
# One device session is short (15 minutes, the machine's start included): the default times
# keep the whole script under ~8 minutes. Results go to $OUT (default /tmp/ember_gpu):
# bench_compile.log, bench_vmap.log, gpu_marked.log, suite.log.gz, and cuda_failures.tsv (one
# line per failing test: the ember line it stopped at, the error, the id).
# Usage: tools/gpu_check.sh [pytest paths for the suite, default tests]; SKIP_MARKED=1 and
# NO_BENCH=1 leave the marked tests and the benchmarks out; SUITE_S, GPU_TESTS_S, BENCH_S and
# WORKERS size them.
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/ember_gpu}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
SUITE_S="${SUITE_S:-240}"
WORKERS="${WORKERS:-10}"
BENCH_S="${BENCH_S:-150}"
PYTHONPATH="$(printf '%s:' "$PWD"/packages/*/src)$PWD/tests"
export PYTHONPATH PYTHONUNBUFFERED=1 CI=true
stamp() { echo "[$(date +%T)] $*"; }
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
if [ -z "${NO_BENCH:-}" ]; then
    stamp "== bench_compile on the GPU (${BENCH_S}s at most)"
    (cd benchmarks && BENCH_DEVICE=cuda TORCH_COMPILE=0 PAIRS="${PAIRS:-10}" \
        timeout "$BENCH_S" "$PY" bench_compile.py) > "$OUT/bench_compile.log" 2>&1
    echo "bench_compile exit $?"
    grep -v "^- " "$OUT/bench_compile.log" | tail -22
    grep -c "^- " "$OUT/bench_compile.log"
    grep "DIFFERS\|FAILED\|fallback\|runs eagerly\|chain" "$OUT/bench_compile.log" | cut -c1-400
    stamp "== bench_vmap on the GPU"
    (cd benchmarks && BENCH_DEVICE=cuda timeout 120 "$PY" bench_vmap.py) \
        > "$OUT/bench_vmap.log" 2>&1
    tail -8 "$OUT/bench_vmap.log"
fi
marked_pid=
if [ -z "${SKIP_MARKED:-}" ]; then
    stamp "== gpu-marked tests (in the background, ${GPU_TESTS_S:-200}s at most)"
    # only the files that hold gpu-marked tests: collecting the whole suite takes longer
    mapfile -t marked < <(grep -rl "mark.gpu" tests --include="test_*.py")
    timeout "${GPU_TESTS_S:-200}" "$PY" -m pytest -q -p no:cacheprovider -m gpu --timeout 120 \
        -n 4 --tb=short "${marked[@]}" > "$OUT/gpu_marked.log" 2>&1 &
    marked_pid=$!
fi
stamp "== the suite with cuda as the default device (${SUITE_S}s at most)"
rm -f "$OUT/cuda_failures.tsv"
paths=("$@")
[ ${#paths[@]} -eq 0 ] && paths=(tests)
EMBER_TEST_DEVICE=cuda EMBER_STRICT_REPORT="$OUT/cuda_failures.tsv" timeout "$SUITE_S" \
    "$PY" -m pytest -q -p no:cacheprovider -n "$WORKERS" --timeout 120 --tb=short \
    -m "not distributed and not slow" "${paths[@]}" > "$OUT/suite.log" 2>&1
stamp "suite exit $?"
tail -5 "$OUT/suite.log"
gzip -f "$OUT/suite.log"
[ -f "$OUT/cuda_failures.tsv" ] && cut -f1,2 "$OUT/cuda_failures.tsv" | sort | uniq -c \
    | sort -rn | head -40
if [ -n "$marked_pid" ]; then
    wait "$marked_pid"
    stamp "gpu-marked exit $?"
    tail -40 "$OUT/gpu_marked.log"
fi
