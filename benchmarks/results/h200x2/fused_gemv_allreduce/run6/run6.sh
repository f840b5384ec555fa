#!/usr/bin/env bash
# Run 6 of the fused GEMV + all-reduce, one device call on 2 GPUs: a kernels-only build of
# fused-gemv-bench and fused_gemv_allreduce_test here (sm_90, ninja -j16), the fused tests
# (the early claim and the fine splits included), racecheck and synccheck on the small case,
# the floors (copy, launch), then ROUNDS rounds of fused-gemv-bench at TP = 2 with
# --variants early,fine,early_fine (the committed kernel and the variants in one
# interleaved loop, cuBLAS + NCCL beside them) each followed by the PyTorch peers, then
# per-CTA traces at 1 and 4 tokens and the variants summary (benchmarks/gpu/summarize_fused_gemv_variants.py). Everything in $OUT/run6.tar.gz.
#   bash benchmarks/results/h200x2/fused_gemv_allreduce/run6/run6.sh
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../../../../gpu/device_env.sh"
run="$OUT/run6"
mkdir -p "$run"
log="$run/log.txt"
log_machine "python3 -c 'import torch; print(\"torch\", torch.__version__, torch.cuda.device_count())'" \
  "grep -E 'define NCCL_(MAJOR|MINOR|PATCH)' '$nccl_header'"
echo "nccl lib: $nccl_lib" >>"$log"
finish() {
  step "done"
  tar -czf "$OUT/run6.tar.gz" -C "$OUT" run6 && rm -rf "$run"
  exit "${1:-0}"
}

step "build"
b0=$(date +%s)
timeout 300 cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DOVERLAPSIM_KERNELS_ONLY=ON \
  -DOVERLAPSIM_NCCL_INCLUDE="$(dirname "$nccl_header")" -DOVERLAPSIM_NCCL_LIB="$nccl_lib" \
  >>"$log" 2>&1 &&
  timeout 300 ninja -C build-gpu -j16 fused-gemv-bench fused_gemv_allreduce_test >>"$log" 2>&1
rc=$?
echo "build rc=$rc in $(($(date +%s) - b0)) s" | tee -a "$log"
[[ $rc == 0 ]] || finish 1
bench=build-gpu/kernels/bench/fused-gemv-bench
test_bin=build-gpu/tests/kernels/fused_gemv_allreduce_test
use_device_libs
ldd "$bench" | grep -E "not found|nccl" >>"$log" 2>&1
export CUDA_MODULE_LOADING=EAGER  # the cold-start tests ask for lazy loading themselves

step "tests on GPUs 0,1"
CUDA_VISIBLE_DEVICES=0,1 timeout 240 "$test_bin" --gtest_brief=0 >"$run/tests_full.txt" 2>&1
echo "fused_gemv_allreduce_test (GPUs 0,1) rc=$?" | tee -a "$log" "$run/tests.txt"
grep -E "^\[  (PASSED|FAILED|SKIPPED|     OK) |^\[  FAILED|Failure|differ|expected" \
  "$run/tests_full.txt" | head -40 >>"$run/tests.txt"
for tool in racecheck synccheck; do
  step "compute-sanitizer $tool"
  CUDA_VISIBLE_DEVICES=0,1 timeout 150 compute-sanitizer --tool "$tool" --print-limit 20 "$test_bin" \
    --gtest_filter='FusedGemvAllReduce.SmallForSanitizer' >"$run/sanitizer_$tool.txt" 2>&1
  rc=$?
  { echo "### compute-sanitizer --tool $tool (rc=$rc)"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|Error|PASSED|FAILED|tests ran" \
      "$run/sanitizer_$tool.txt" | head -20; } | tee -a "$log" >>"$run/tests.txt"
done

step "floors: copy, launch"
CUDA_VISIBLE_DEVICES=0 timeout 60 python3 - <<'PY' 2>&1 | tee "$run/floors.txt" >>"$log"
# A 1 GiB device-to-device copy (bytes read plus written over time) and the event-timed span
# of a 1-element kernel with the host ahead (as run 5 measured them).
import statistics as st
import torch
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
a = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
b = torch.empty_like(a)
for _ in range(3):
    b.copy_(a)
s.record()
for _ in range(20):
    b.copy_(a)
e.record()
torch.cuda.synchronize()
print(f"{torch.cuda.get_device_name()}: copy_tbps {2 * 20 * a.numel() / (s.elapsed_time(e) * 1e-3) / 1e12:.3f}")
x = torch.zeros(1, device="cuda")
for _ in range(20):
    x.add_(1)
torch.cuda._sleep(200_000_000)
pairs = []
for _ in range(200):
    p = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
    p[0].record()
    x.add_(1)
    p[1].record()
    pairs.append(p)
torch.cuda.synchronize()
print(f"launch_us {st.median(p[0].elapsed_time(p[1]) * 1e3 for p in pairs):.2f}")
PY

for round in $(seq 1 "${ROUNDS:-2}"); do
  step "fused-gemv-bench TP=2 round $round"
  CUDA_VISIBLE_DEVICES=0,1 timeout 200 "$bench" --world 2 --tokens 1,4,16,64 --timeout 30 \
    --variants early,fine,early_fine --output "$run/fused_tp2_r$round.csv" \
    >/dev/null 2>"$run/bench_stderr_r$round.txt"
  echo "fused-gemv-bench TP=2 round $round rc=$?" | tee -a "$log"
  step "torch peers TP=2 round $round"
  CUDA_VISIBLE_DEVICES=0,1 PYTHONUNBUFFERED=1 timeout 150 torchrun --standalone --nproc-per-node 2 \
    benchmarks/peers/torch_gemv_allreduce.py --tokens 1 4 16 64 \
    --output "$run/torch_tp2_r$round.csv" >>"$log" 2>&1
  echo "torch TP=2 round $round rc=$?" | tee -a "$log"
done

step "fused-gemv-bench TP=2 traced"
CUDA_VISIBLE_DEVICES=0,1 timeout 150 "$bench" --world 2 --tokens 1,4 --iterations 10 --warmup 3 \
  --b2b-calls 0 --timeout 30 --trace-calls 10 --trace "$run/trace_tp2" \
  --variants early,fine,early_fine --output "$run/trace_tp2_bench.csv" \
  >/dev/null 2>"$run/bench_stderr_traced.txt"
echo "traced TP=2 rc=$?" | tee -a "$log"

step "summary"
python3 "$here/../../../../gpu/summarize_fused_gemv_variants.py" "$run" --designs fused,fused_early,fused_fine,fused_early_fine 2>&1 | tee "$run/summary.txt"
finish 0
