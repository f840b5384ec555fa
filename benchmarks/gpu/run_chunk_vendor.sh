#!/usr/bin/env bash
# Device calls for the per-chunk vendor family at 4 ranks (cuBLASLt a chunk on the copy-engine
# transport: kernels/tilewise/allgather_gemm.hpp with vendor_gemm, vendor_reduce_scatter.hpp)
# against PyTorch's fused_all_gather_matmul / fused_matmul_reduce_scatter in the same call.
# PART picks what runs:
#   PART=ag: tilewise_vendor_test on every visible GPU (bit for bit, 200 calls back to back)
#            and AllGather+GEMM's own-GEMM bit test as a regression; overlap-bench over
#            chunk_vendor_ag4.yaml (the tuner's own-GEMM candidates, one chunk, rotated
#            pushes, split last wave 1/2/4, and the vendor candidates); the PyTorch peers
#            steady and burst (GEMM alone and fused_all_gather_matmul).
#   PART=rs: tilewise_vendor_test as in PART=ag; overlap-bench over chunk_vendor_rs4.yaml (the copy-engine tuner and the vendor
#            candidates, --tilewise-clock-states 1); the PyTorch peers steady and burst.
# Then summarize_chunk_vendor.py over what $OUT holds. Back in $OUT: <part>.tar.gz (folder
# <part>/: log.txt, tests.txt, bench.csv, stderr.txt, detail.csv (rs), torch_steady.csv,
# torch_burst.csv, summary.csv, summary.txt) and log.txt beside it.
#   CARRY_DIR=build-chunk-carry PART=ag bash benchmarks/gpu/run_chunk_vendor.sh
# Binaries: $CARRY_DIR/{bin,lib} (overlap-bench, tilewise_test, tilewise_vendor_test from a
# CUDA build here, with yaml-cpp and fmt), else a kernels-only build on the device. Step limits
# (s): TEST_TIMEOUT 120, BENCH_TIMEOUT 300, TORCH_TIMEOUT 100 per state (0 skips a step);
# SUITE: the suite under benchmarks/suites/ instead of the part's; VENDOR_CHUNKS (1,2): the vendor candidates' chunk counts; TRACE=1: overlap-bench's waits
# and rendezvous on stderr (--trace). stderr.txt's lines carry the time they were written.
# PART=ag only: VENDOR_STREAMS (1): the vendor candidates' stream counts (1,2 adds PyTorch's
# two alternating streams); AG_ALIGN (1): candidates with (1) and/or without (0) the start
# barrier; AG_FINALISTS (0): the search's best N timed steady and burst before the choice.
# SMI=1: nvidia-smi samples every GPU's SM clock, power and utilisation every 50 ms (queries
# only) into smi.csv, each step's start (epoch seconds) into steps.csv. TORCH_PROBE="MxNxK
# ...": after the peers, PyTorch's steady run again per shape alone (GEMM alone, then
# fused_all_gather_matmul), into torch_probe_steady.csv, each shape a step of steps.csv, so
# smi.csv shows the clock each ran at.
set -uo pipefail
export CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-0,1,2,3}"
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
part="${PART:-ag}"
carry="$root/${CARRY_DIR:-build-chunk-carry}"
log_machine
echo "nccl lib: $nccl_lib" >>"$log"
[[ -f $carry/COMMIT ]] && echo "binaries from commit $(cat "$carry/COMMIT")" >>"$log"
use_device_libs "$carry/lib"
bench="$carry/bin/overlap-bench"
test_bin="$carry/bin/tilewise_test"
vendor_test="$carry/bin/tilewise_vendor_test"
if ! "$vendor_test" --gtest_list_tests >/dev/null 2>>"$log"; then
  step "carried binaries do not run here: kernels-only build"
  build_kernels_only "${BUILD_TIMEOUT:-400}" overlap-bench tilewise_test tilewise_vendor_test >>"$log" 2>&1
  echo "build rc=$?" | tee -a "$log"
  bench=build-gpu/kernels/bench/overlap-bench
  test_bin=build-gpu/tests/kernels/tilewise_test
  vendor_test=build-gpu/tests/kernels/tilewise_vendor_test
fi
export CUDA_MODULE_LOADING=EAGER
world=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | wc -l)
dir="$OUT/$part"
mkdir -p "$dir"
mark() { [[ ${SMI:-0} == 1 ]] && echo "$(date +%s.%N),$*" >>"$dir/steps.csv"; step "$@"; }
if [[ ${SMI:-0} == 1 ]]; then
  echo "epoch_s,step" >"$dir/steps.csv"
  nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,utilization.gpu \
    --format=csv,nounits -lms 50 >"$dir/smi.csv" 2>"$dir/smi.err" &
  smi_pid=$!
fi

if [[ ${TEST_TIMEOUT:-120} -gt 0 ]]; then
  step "tilewise_vendor_test on $world GPUs"
  timeout "${TEST_TIMEOUT:-120}" "$vendor_test" >"$dir/tests.txt" 2>&1
  echo "tilewise_vendor_test rc=$?" | tee -a "$log"
fi
if [[ $part == ag && ${TEST_TIMEOUT:-120} -gt 0 ]]; then
  step "tilewise_test: AllGather+GEMM with the own GEMM, bit for bit (regression)"
  timeout "${TEST_TIMEOUT:-120}" "$test_bin" --gtest_brief=1 \
    --gtest_filter='TilewiseAllGatherGemm*:-*BackToBack*:*SplitLastWave*' >>"$dir/tests.txt" 2>&1
  echo "tilewise_test rc=$?" | tee -a "$log"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|Failure|not |tests ran|rc=" "$dir/tests.txt" |
    head -40 >>"$log"
fi

if [[ $part == ag ]]; then
  suite=benchmarks/suites/${SUITE:-chunk_vendor_ag4.yaml}
  op=allgather+gemm
  flags=(--tilewise-ag-chunks 1 --tilewise-ag-push rotated
    --tilewise-vendor-streams "${VENDOR_STREAMS:-1}" --tilewise-ag-align "${AG_ALIGN:-1}"
    --tilewise-ag-finalists "${AG_FINALISTS:-0}")
else
  suite=benchmarks/suites/${SUITE:-chunk_vendor_rs4.yaml}
  op=gemm+reducescatter
  flags=(--tilewise-transport copy_engine --tilewise-groups "${CE_GROUPS:-2,4,8}"
    --tilewise-clock-states 1 --tilewise-detail "$dir/detail.csv")
fi
[[ ${TRACE:-0} == 1 ]] && flags+=(--trace)
if [[ ${BENCH_TIMEOUT:-300} -gt 0 ]]; then
  mark "overlap-bench $suite, $world ranks"
  timeout "${BENCH_TIMEOUT:-300}" "$bench" --suite "$suite" --world "$world" --timeout 60 \
    "${flags[@]}" --tilewise-vendor-chunks "${VENDOR_CHUNKS:-1,2}" \
    --output "$dir/bench.csv" >/tmp/stdout.csv \
    2> >(while IFS= read -r line; do printf '%(%T)T %s\n' -1 "$line"; done >"$dir/stderr.txt")
  echo "overlap-bench rc=$?" | tee -a "$log"
  sleep 1  # the time stamps' loop drains
  grep -E "chose|error|fail|Fail|differ|ag_bits|vendor_candidate" "$dir/stderr.txt" | head -60 >>"$log"
  [[ -s $dir/bench.csv ]] || cp /tmp/stdout.csv "$dir/bench.csv"
fi

if [[ ${TORCH_TIMEOUT:-100} -gt 0 ]]; then
  shapes=$(python3 -c 'import re, sys; print(" ".join("x".join(s) for s in re.findall(r"- \[(\d+), (\d+), (\d+)\]", open(sys.argv[1]).read())))' "$suite")
  for state in steady burst; do
    mark "torch peers ($op), $state clock state: GEMM alone, torch_symm_mem"
    tflags=(--warmup-ms 1000 --iterations 30)
    [[ $state == burst ]] && tflags=(--idle-s 0.5 --iterations 20)
    PYTHONUNBUFFERED=1 timeout "${TORCH_TIMEOUT:-100}" torchrun --standalone --nproc-per-node "$world" \
      benchmarks/peers/torch_overlap.py "${tflags[@]}" --shapes $shapes --ops "$op" \
      --designs torch torch_symm_mem --output "$dir/torch_$state.csv" >/tmp/torch_$state.txt 2>&1
    echo "torch $state rc=$?" | tee -a "$log"
    grep -E "failed|Error|error" /tmp/torch_$state.txt | head -20 >>"$log"
  done
fi

for shape in ${TORCH_PROBE:-}; do
  mark "torch probe $shape steady: GEMM alone, torch_symm_mem"
  PYTHONUNBUFFERED=1 timeout "${TORCH_TIMEOUT:-100}" torchrun --standalone --nproc-per-node "$world" \
    benchmarks/peers/torch_overlap.py --warmup-ms 1000 --iterations 30 --shapes "$shape" \
    --ops "$op" --designs torch torch_symm_mem --output /tmp/probe.csv >/tmp/probe.txt 2>&1
  echo "torch probe $shape rc=$?" | tee -a "$log"
  if [[ -s /tmp/probe.csv ]]; then
    [[ -s $dir/torch_probe_steady.csv ]] && tail -n +2 /tmp/probe.csv >>"$dir/torch_probe_steady.csv" ||
      cp /tmp/probe.csv "$dir/torch_probe_steady.csv"
  fi
  rm -f /tmp/probe.csv
done
if [[ ${SMI:-0} == 1 ]]; then
  mark "sampling stops"
  kill "$smi_pid" 2>/dev/null
  wait "$smi_pid" 2>/dev/null
  gzip -f "$dir/smi.csv"
fi

step "summary"
python3 benchmarks/gpu/summarize_chunk_vendor.py "$dir/bench.csv" --stderr "$dir/stderr.txt" \
  --torch-steady "$dir/torch_steady.csv" --torch-burst "$dir/torch_burst.csv" \
  --output "$dir/summary.csv" >"$dir/summary.txt" 2>&1
cat "$dir/summary.txt" >>"$log"
step "done"
cp "$log" "$dir/log.txt"
tar czf "$OUT/$part.tar.gz" -C "$OUT" "$part" && rm -rf "$dir"
tail -n 45 "$log"
