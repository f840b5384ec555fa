#!/usr/bin/env bash
# One device call for the fused GPU-initiated GEMM + all-to-all (MoE combine;
# kernels/fused/gemm_alltoall.*) on 4 GPUs: the binaries (carried in $CARRY_DIR/{bin,lib},
# default build-gaa-carry; else a kernels-only build here), gemm_alltoall_test on 4 GPUs
# (bit-exact against own GEMM + NCCL all-to-all, 200 calls back to back, a cold start under
# lazy module loading), gemm-alltoall-bench at 4 and 2 ranks on the MoE shapes (fused,
# cuBLAS + NCCL, own GEMM + NCCL, the copy-engine tile-wise design at every groups-per-part
# and its best, in one loop), compute-sanitizer racecheck (GPUs 0,1) and synccheck (GPUs
# 2,3) at once on the small 2-rank case, and a summary (summary.csv: per world and shape,
# fused against the tuned copy-engine design and the sequential designs). Each step has its
# own time limit and writes its own files: a failed or cut step loses nothing else.
# Everything ends up in $OUT/gemm_alltoall.tar.gz (log.txt and summary.csv beside it).
#   bash benchmarks/gpu/run_gemm_alltoall.sh            # about 4-6 minutes
#   SMOKE=1 bash benchmarks/gpu/run_gemm_alltoall.sh    # about 1-2 minutes
# Step limits (s): BUILD_TIMEOUT 240, TEST_TIMEOUT 120, BENCH_TIMEOUT 120,
# SANITIZER_TIMEOUT 120 (0 skips); no step runs past TOTAL_BUDGET (560) from the start, so
# the archive is made within the device tool's 10-minute limit.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
TOTAL_BUDGET=${TOTAL_BUDGET:-560}  # limit() (device_env.sh) cuts every step to it
run_dir="$OUT/gemm_alltoall"
mkdir -p "$run_dir"
log="$run_dir/log.txt"
smoke=${SMOKE:-0}
if [[ $smoke == 1 ]]; then
  bench_args=(--shapes 8192x4096x14336,16384x7168x2048 --groups 4,8 --iterations 8 --warmup 2
    --b2b-calls 10)
  worlds=(4)
  test_filter='GemmAllToAll.*:GemmAllToAllColdStart.*'
  : "${TEST_TIMEOUT:=80}" "${BENCH_TIMEOUT:=80}" "${SANITIZER_TIMEOUT:=80}"
else
  bench_args=(--shapes 8192x4096x14336,16384x4096x14336,16384x7168x2048,32768x7168x2048
    --groups 2,4,8,16 --iterations 20 --warmup 3 --b2b-calls 20)
  worlds=(4 2)
  test_filter='*'
fi
: "${TEST_TIMEOUT:=120}" "${BENCH_TIMEOUT:=120}" "${SANITIZER_TIMEOUT:=120}"
# A 2-GPU machine runs the 2-rank half, and both sanitizer tools on GPUs 0,1.
ngpus=$(nvidia-smi -L 2>/dev/null | wc -l)
second_pair=2,3
if ((ngpus < 4)); then worlds=(2); second_pair=0,1; fi

log_machine "grep -E 'define NCCL_(MAJOR|MINOR|PATCH)' '$nccl_header'"
echo "nccl lib: $nccl_lib; smoke=$smoke" >>"$log"
carry="$root/${CARRY_DIR:-build-gaa-carry}"
use_device_libs "$carry/lib"
bench="$carry/bin/gemm-alltoall-bench"
test_bin="$carry/bin/gemm_alltoall_test"
if ! "$test_bin" --gtest_list_tests >/dev/null 2>>"$log"; then
  step "carried binaries do not run here: kernels-only build"
  start=$(date +%s)
  build_kernels_only "$(limit "${BUILD_TIMEOUT:-240}")" gemm-alltoall-bench gemm_alltoall_test >>"$log" 2>&1
  echo "build rc=$? in $(($(date +%s) - start)) s" | tee -a "$log"
  bench=build-gpu/kernels/bench/gemm-alltoall-bench
  test_bin=build-gpu/tests/kernels/gemm_alltoall_test
fi
ldd "$bench" | grep -E "not found|nccl" >>"$log" 2>&1
for pat in HGMMA 'LDL|STL'; do
  echo "sass $pat: $(cuobjdump -sass "$test_bin" 2>/dev/null | grep -cE "$pat")" >>"$log"
done
# Eager loading for everything but the cold-start test, which asks for lazy loading itself.
export CUDA_MODULE_LOADING=EAGER

step "tests on GPUs 0,1,2,3"
t=$(limit "$TEST_TIMEOUT")
if [[ $t == 0 ]]; then
  echo "tests skipped: out of time" | tee -a "$log" "$run_dir/tests.txt"
else
  CUDA_VISIBLE_DEVICES=0,1,2,3 timeout -k 5 "$t" "$test_bin" --gtest_filter="$test_filter" \
    >"$run_dir/tests_gpus0123.txt" 2>&1
  echo "gemm_alltoall_test (GPUs 0,1,2,3) rc=$?" | tee -a "$log" "$run_dir/tests.txt"
  grep -E "^\[  (PASSED|FAILED|SKIPPED|     OK) |^\[  FAILED|Failure|differ|expected|gave up" \
    "$run_dir/tests_gpus0123.txt" | head -40 | tee -a "$log" >>"$run_dir/tests.txt"
fi

for world in "${worlds[@]}"; do
  gpus=$([[ $world == 2 ]] && echo 0,1 || echo 0,1,2,3)
  step "gemm-alltoall-bench world=$world"
  t=$(limit "$BENCH_TIMEOUT")
  [[ $t == 0 ]] && { echo "skipped: out of time" | tee -a "$log"; continue; }
  CUDA_VISIBLE_DEVICES=$gpus timeout -k 5 "$t" "$bench" --world "$world" \
    "${bench_args[@]}" --timeout 30 --output "$run_dir/ours_w$world.csv" \
    >"$run_dir/ours_w${world}_stdout.txt" 2>>"$log"
  echo "gemm-alltoall-bench world=$world rc=$?" | tee -a "$log"
  # A run cut short still leaves the rows it printed.
  [[ -s $run_dir/ours_w$world.csv ]] || grep -E "^(gpu|NVIDIA)" "$run_dir/ours_w${world}_stdout.txt" \
    >"$run_dir/ours_w$world.csv"
done

if [[ $SANITIZER_TIMEOUT -gt 0 && $(limit "$SANITIZER_TIMEOUT") -gt 0 ]]; then
  sanitize_in_parallel "$test_bin" 'GemmAllToAll.SmallForSanitizer' "$(limit "$SANITIZER_TIMEOUT")" "$second_pair"
fi

step "summary"
python3 - "$run_dir" <<'PY' 2>&1 | tee -a "$log"
# Per world and shape: the fused time against the copy-engine tile-wise design's best
# (tuned in the same loop) and the sequential designs; the bar: fused at or ahead of the
# copy-engine design on at least half of the shapes.
import csv, glob, os, sys
run = sys.argv[1]
rows = {}
for path in sorted(glob.glob(os.path.join(run, "ours_w*.csv"))):
    try:
        for r in csv.DictReader(open(path)):
            try:
                key = (int(r["world"]), int(r["m"]), int(r["n"]), int(r["k"]))
                rows.setdefault(key, {})[f'{r["op"]}/{r["design"]}'] = (
                    float(r["time_us"]), int(r["wrong"]), r.get("chunks", ""))
            except (KeyError, ValueError):
                pass
    except OSError:
        pass
cols = ["gemm+alltoall/fused", "gemm+alltoall/tilewise_ce", "gemm+alltoall/sequential",
        "gemm+alltoall/sequential_own", "gemm/own", "gemm/cublas", "alltoall/nccl",
        "gemm+alltoall/fused_b2b", "gemm+alltoall/tilewise_ce_b2b",
        "gemm+alltoall/sequential_own_b2b"]
nan = float("nan")
with open(os.path.join(run, "summary.csv"), "w") as out:
    out.write(",".join(["world", "m", "n", "k"] +
                       [c.replace("+", "_").replace("/", "_") + "_us" for c in cols] +
                       ["ce_groups", "ce_over_fused", "seq_over_fused", "own_over_fused",
                        "fused_over_gemm_own", "wrong_fused", "wrong_ce"]) + "\n")
    print(f'{"w":>2} {"m":>6} {"n":>5} {"k":>6} {"fused":>8} {"ce":>8} {"seq":>8} {"seq_own":>8} '
          f'{"gemm":>8} {"a2a":>8} {"ce/f":>5} {"seq/f":>5} {"own/f":>5} {"f/gemm":>6} wrong')
    wins = total = 0
    for key in sorted(rows):
        v = rows[key]
        t = [v.get(c, (nan, 0, ""))[0] for c in cols]
        f, ce, seq, own, g, a2a = t[0], t[1], t[2], t[3], t[4], t[6]
        groups = v.get(cols[1], (nan, 0, ""))[2]
        r = [ce / f, seq / f, own / f, f / g]
        wrong = [v.get(cols[0], (0, 0, ""))[1], v.get(cols[1], (0, 0, ""))[1]]
        out.write(",".join(str(x) for x in key) + "," + ",".join(f"{x:.2f}" for x in t) +
                  f",{groups}," + ",".join(f"{x:.3f}" for x in r) + f",{wrong[0]},{wrong[1]}\n")
        print(f"{key[0]:>2} {key[1]:>6} {key[2]:>5} {key[3]:>6} {f:8.1f} {ce:8.1f} {seq:8.1f} "
              f"{own:8.1f} {g:8.1f} {a2a:8.1f} {r[0]:5.2f} {r[1]:5.2f} {r[2]:5.2f} {r[3]:6.2f} {wrong}")
        if ce == ce and f == f:
            total += 1
            wins += ce >= f
    print(f"bar: fused at or ahead of the copy-engine tile-wise design on {wins} of {total} "
          f"world x shape cases (needs >= half)")
PY
step "done"
cp "$log" "$OUT/log.txt"
[[ -f $run_dir/summary.csv ]] && cp "$run_dir/summary.csv" "$OUT/summary.csv"
tar -czf "$OUT/gemm_alltoall.tar.gz" -C "$OUT" gemm_alltoall && rm -rf "$run_dir"
