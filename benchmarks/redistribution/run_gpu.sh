#!/usr/bin/env bash
# One device call for array redistribution on one host's GPUs (docs/redistribution.md):
#   1. the binaries carried in $CARRY_DIR (default .carry_rd/: bin/redistribution-bench,
#      bin/redistribution_executor_test, bin/overlap-bench, bin/overlapsim, lib/ with yaml-cpp
#      and fmt; made by `benchmarks/redistribution/run_gpu.sh pack BUILD_DIR` here) when they
#      run there, else a kernels-only build of the first three (all cores);
#   2. redistribution_executor_test on 2 GPUs, and on 4 where there are 4;
#   3. redistribution-bench on 2 GPUs and on 4 where there are 4 (pairs of that many devices
#      from benchmarks/redistribution/gpu_pairs.csv, synthesised and naive plans, checked);
#   4. the NCCL curves the prediction uses, on the same GPUs: `overlapsim calibrate` with
#      benchmarks/redistribution/collectives-<N>gpu.yaml (the carried CLI; skipped without
#      it). The 4-GPU prediction needs both: the 2-rank curves for the groups of 2 of a
#      x=2,y=2 mesh, the 4-rank ones for the rest (one profile fitted from both files);
#   5. PyTorch DTensor's redistribute on the same pairs, 2 and 4 GPUs
#      (benchmarks/redistribution/dtensor_peer.py under torchrun, checked, same timing rule).
# Runs unchanged on 2 or 4 GPUs. Everything ends up in $OUT/redistribution_own.tar.gz.
#   bash benchmarks/redistribution/run_gpu.sh
# Step limits (s): BUILD_TIMEOUT 330, TEST_TIMEOUT 90, BENCH_TIMEOUT 120, CALIB_TIMEOUT 120,
# PEER_TIMEOUT 150; no step starts past TOTAL_BUDGET (570) from the start.
# Here, from the archive: benchmarks/redistribution/validate.py (prediction vs measurement,
# and the speed-ups over naive and DTensor).
set -uo pipefail
if [[ ${1:-} == pack ]]; then
  # Here: fill the carry folder (git-ignored) from a CUDA build and the CLI of BUILD_DIR.
  build="${2:?BUILD_DIR}" carry="${CARRY_DIR:-.carry_rd}"
  rm -rf "$carry" && mkdir -p "$carry/bin" "$carry/lib"
  cp "$build/kernels/redistribution/redistribution-bench" \
    "$build/tests/kernels/redistribution_executor_test" "$build/kernels/bench/overlap-bench" \
    "${OVERLAPSIM_BIN:-$build/app/overlapsim}" "$carry/bin/"
  for lib in yaml-cpp fmt; do
    ldd "$carry/bin/overlapsim" | awk -v l="lib$lib" '$1 ~ l {print $3}' | xargs -r -I{} cp -L {} "$carry/lib/"
  done
  du -sh "$carry"
  exit 0
fi
source "$(dirname "${BASH_SOURCE[0]}")/../gpu/device_env.sh"
TOTAL_BUDGET=${TOTAL_BUDGET:-570}  # limit() (device_env.sh) cuts every step to it
LIMIT_MARGIN_S=15  # limit(): the summary and the archive after the last step
run_dir="$OUT/redistribution_own"
mkdir -p "$run_dir"
log="$run_dir/log.txt"
export CUDA_MODULE_LOADING=EAGER
log_machine "grep -E 'define NCCL_(MAJOR|MINOR|PATCH)' '$nccl_header'" "echo nccl lib: $nccl_lib" \
  "md5sum benchmarks/redistribution/*.sh benchmarks/redistribution/*.py"
gpus="$(nvidia-smi -L | wc -l)"
worlds=(2)
((gpus >= 4)) && worlds+=(4)

carry="$root/${CARRY_DIR:-.carry_rd}"
use_device_libs "$carry/lib"
bench="$carry/bin/redistribution-bench"
test_bin="$carry/bin/redistribution_executor_test"
overlap_bench="$carry/bin/overlap-bench"
if ! "$test_bin" --gtest_list_tests >/dev/null 2>>"$log"; then
  step "carried binaries do not run here: kernels-only build"
  start=$(date +%s)
  build_kernels_only "$(limit "${BUILD_TIMEOUT:-330}")" redistribution-bench \
    redistribution_executor_test overlap-bench >"$run_dir/build.txt" 2>&1
  echo "build rc=$? in $(($(date +%s) - start)) s" | tee -a "$log"
  grep -E "error|warning" "$run_dir/build.txt" | head -20 >>"$log"
  bench=build-gpu/kernels/redistribution/redistribution-bench
  test_bin=build-gpu/tests/kernels/redistribution_executor_test
  overlap_bench=build-gpu/kernels/bench/overlap-bench
fi
ldd "$bench" | grep -E "not found|nccl" >>"$log" 2>&1

for world in "${worlds[@]}"; do
  devices=$([[ $world == 2 ]] && echo 0,1 || echo 0,1,2,3)
  step "redistribution_executor_test on $world GPUs"
  t=$(limit "${TEST_TIMEOUT:-90}")
  CUDA_VISIBLE_DEVICES=$devices timeout -k 5 "$t" "$test_bin" >"$run_dir/test_w$world.txt" 2>&1
  echo "test world=$world rc=$?" | tee -a "$log"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|Failure|Expected|Which is" \
    "$run_dir/test_w$world.txt" | head -30 >>"$log"
done

for world in "${worlds[@]}"; do
  devices=$([[ $world == 2 ]] && echo 0,1 || echo 0,1,2,3)
  step "redistribution-bench on $world GPUs"
  t=$(limit "${BENCH_TIMEOUT:-120}")
  ((t == 0)) && { echo "skipped: out of time" | tee -a "$log"; continue; }
  CUDA_VISIBLE_DEVICES=$devices timeout -k 5 "$t" "$bench" --world "$world" \
    --pairs benchmarks/redistribution/gpu_pairs.csv --iterations 30 --warmup 5 --timeout 60 \
    --output "$run_dir/own_w$world.csv" >"$run_dir/stdout_w$world.txt" 2>>"$log"
  echo "bench world=$world rc=$?" | tee -a "$log"
  # A run cut short still leaves the rows it printed.
  [[ -s $run_dir/own_w$world.csv ]] || grep -E "^(gpu|NVIDIA|\"NVIDIA)" \
    "$run_dir/stdout_w$world.txt" >"$run_dir/own_w$world.csv"
done

if [[ -x $carry/bin/overlapsim ]]; then
  for world in "${worlds[@]}"; do
    devices=$([[ $world == 2 ]] && echo 0,1 || echo 0,1,2,3)
    step "NCCL curves on $world GPUs (overlapsim calibrate)"
    t=$(limit "${CALIB_TIMEOUT:-120}")
    ((t == 0)) && { echo "skipped: out of time" | tee -a "$log"; continue; }
    CUDA_VISIBLE_DEVICES=$devices timeout -k 5 "$t" \
      "$carry/bin/overlapsim" calibrate --out "$run_dir/collectives_w$world" \
      --suite "benchmarks/redistribution/collectives-${world}gpu.yaml" --gpus "$world" \
      --bench "$overlap_bench" --case-timeout 60 2>&1 | tr '\r' '\n' |
      tail -5 >>"$log"
    echo "calibrate world=$world rc=${PIPESTATUS[0]}" | tee -a "$log"
  done
else
  echo "no $carry/bin/overlapsim: NCCL curves not measured" | tee -a "$log"
fi

for world in "${worlds[@]}"; do
  devices=$([[ $world == 2 ]] && echo 0,1 || echo 0,1,2,3)
  step "DTensor redistribute on $world GPUs (dtensor_peer.py)"
  t=$(limit "${PEER_TIMEOUT:-150}")
  ((t == 0)) && { echo "skipped: out of time" | tee -a "$log"; continue; }
  # The rows name the NCCL version torch reports; its stderr names the libnccl it loaded.
  CUDA_VISIBLE_DEVICES=$devices PYTHONUNBUFFERED=1 timeout -k 5 "$t" \
    python3 -m torch.distributed.run --standalone --nproc-per-node "$world" \
    benchmarks/redistribution/dtensor_peer.py \
    --pairs benchmarks/redistribution/gpu_pairs.csv --iterations 30 --warmup 5 \
    --output "$run_dir/dtensor_w$world.csv" >"$run_dir/dtensor_stdout_w$world.txt" \
    2>"$run_dir/dtensor_stderr_w$world.txt"
  echo "dtensor world=$world rc=$?" | tee -a "$log"
  grep -iE "error|Traceback" "$run_dir/dtensor_stderr_w$world.txt" | head -10 >>"$log"
  [[ -s $run_dir/dtensor_w$world.csv ]] || grep -E "^(gpu|NVIDIA)" \
    "$run_dir/dtensor_stdout_w$world.txt" >"$run_dir/dtensor_w$world.csv"
done

step "summary"
python3 - "$run_dir" <<'PY' 2>&1 | tee -a "$log"
import csv, glob, sys
for path in sorted(glob.glob(sys.argv[1] + "/own_w*.csv")):
    rows = [r for r in csv.DictReader(open(path)) if r["step"] == "all"]
    try:
        rows += list(csv.DictReader(open(path.replace("own_w", "dtensor_w"))))
    except OSError:
        pass
    by = {(r["pair"], r["plan"]): r for r in rows}
    for (pair, plan), r in by.items():
        if plan != "synthesised": continue
        n = by.get((pair, "naive"))
        d = by.get((pair, "dtensor")) or {}
        print(f'{r["ranks"]} {pair:<20} {r["steps"]:<28} {float(r["time_us"]):9.1f} us  naive '
              f'{float(n["time_us"]) if n else float("nan"):9.1f} us  dtensor '
              f'{d.get("time_us") or d.get("status", "-"):>9} us  wrong {r["wrong"]}/'
              f'{n["wrong"] if n else "?"}/{d.get("wrong", "?")}')
PY
step "done"
cp "$log" "$OUT/log.txt"
tar -czf "$OUT/redistribution_own.tar.gz" -C "$OUT" redistribution_own && rm -rf "$run_dir"
