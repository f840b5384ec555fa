#!/usr/bin/env bash
# One device call for the fused embedding-bag + all-to-all (kernels/fused/embedding_alltoall.*)
# on 4 GPUs: the binaries (carried in $CARRY_DIR/{bin,lib}, default build-eba-carry; else a
# kernels-only build here), embedding_alltoall_test on 4 GPUs (bit-exact against the
# sequential designs, 200 calls back to back, a cold start under lazy module loading),
# embedding-alltoall-bench at 4 and 2 ranks (DCNv2 tables, local batches 256..32768, MLPerf
# pooling x1 and x4), the PyTorch peer (benchmarks/peers/torch_embedding_alltoall.py) at 4
# and 2 ranks, then compute-sanitizer racecheck (GPUs 0,1) and synccheck (GPUs 2,3) at once
# on the small 2-rank case, and a summary (summary.csv: per world, batch and pooling, the
# fused time against every baseline, and the all-to-all's share of the lookup). Each step
# has its own time limit and writes its own files: a failed or cut step loses nothing else.
# Everything ends up in $OUT/embedding_alltoall.tar.gz (log.txt and summary.csv beside it).
#   bash benchmarks/gpu/run_embedding_alltoall.sh            # about 6 minutes
#   SMOKE=1 bash benchmarks/gpu/run_embedding_alltoall.sh    # about 1 minute
# Step limits (s): BUILD_TIMEOUT 240, TEST_TIMEOUT 100, BENCH_TIMEOUT 120, TORCH_TIMEOUT 110
# (0 skips), SANITIZER_TIMEOUT 120 (0 skips); no step runs past TOTAL_BUDGET (560) from the
# start, so the archive is made within the device tool's 10-minute limit.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
TOTAL_BUDGET=${TOTAL_BUDGET:-560}  # limit() (device_env.sh) cuts every step to it
run_dir="$OUT/embedding_alltoall"
mkdir -p "$run_dir"
log="$run_dir/log.txt"
smoke=${SMOKE:-0}
if [[ $smoke == 1 ]]; then
  bench_args=(--batches 1024,8192 --pooling-scales 1 --max-rows 4000000 --iterations 10
    --warmup 2 --b2b-calls 20)
  torch_args=(--batches 1024 8192 --pooling-scales 1 --max-rows 4000000 --iterations 10 --warmup 2)
  worlds=(4)
  test_filter='EmbeddingAllToAll.*:EmbeddingAllToAllColdStart.*:ShardTables.*'
  : "${TEST_TIMEOUT:=60}" "${BENCH_TIMEOUT:=60}" "${TORCH_TIMEOUT:=60}" "${SANITIZER_TIMEOUT:=60}"
else
  bench_args=(--batches 256,1024,2112,8192,32768 --pooling-scales 1,4 --iterations 30
    --warmup 5 --b2b-calls 50)
  torch_args=(--batches 256 1024 2112 8192 32768 --pooling-scales 1 4 --iterations 30 --warmup 5)
  worlds=(4 2)
  test_filter='*'
fi
: "${TEST_TIMEOUT:=100}" "${BENCH_TIMEOUT:=120}" "${TORCH_TIMEOUT:=110}" "${SANITIZER_TIMEOUT:=120}"

log_machine "python3 -c 'import torch; print(\"torch\", torch.__version__, torch.cuda.device_count())'" \
  "grep -E 'define NCCL_(MAJOR|MINOR|PATCH)' '$nccl_header'"
echo "nccl lib: $nccl_lib; smoke=$smoke" >>"$log"
carry="$root/${CARRY_DIR:-build-eba-carry}"
use_device_libs "$carry/lib"
bench="$carry/bin/embedding-alltoall-bench"
test_bin="$carry/bin/embedding_alltoall_test"
if ! "$test_bin" --gtest_list_tests >/dev/null 2>>"$log"; then
  step "carried binaries do not run here: kernels-only build"
  start=$(date +%s)
  build_kernels_only "$(limit "${BUILD_TIMEOUT:-240}")" embedding-alltoall-bench embedding_alltoall_test >>"$log" 2>&1
  echo "build rc=$? in $(($(date +%s) - start)) s" | tee -a "$log"
  bench=build-gpu/kernels/bench/embedding-alltoall-bench
  test_bin=build-gpu/tests/kernels/embedding_alltoall_test
fi
ldd "$bench" | grep -E "not found|nccl" >>"$log" 2>&1
echo "sass spills (LDL|STL): $(cuobjdump -sass "$test_bin" 2>/dev/null | grep -cE 'LDL|STL')" >>"$log"
# Eager loading for everything but the cold-start test, which asks for lazy loading itself.
export CUDA_MODULE_LOADING=EAGER

step "tests on GPUs 0,1,2,3"
t=$(limit "$TEST_TIMEOUT")
if [[ $t == 0 ]]; then
  echo "tests skipped: out of time" | tee -a "$log" "$run_dir/tests.txt"
else
  CUDA_VISIBLE_DEVICES=0,1,2,3 timeout -k 5 "$t" "$test_bin" --gtest_filter="$test_filter" \
    >"$run_dir/tests_gpus0123.txt" 2>&1
  echo "embedding_alltoall_test (GPUs 0,1,2,3) rc=$?" | tee -a "$log" "$run_dir/tests.txt"
  grep -E "^\[  (PASSED|FAILED|SKIPPED|     OK) |^\[  FAILED|Failure|differ|expected" \
    "$run_dir/tests_gpus0123.txt" | head -40 >>"$run_dir/tests.txt"
fi

for world in "${worlds[@]}"; do
  gpus=$([[ $world == 2 ]] && echo 0,1 || echo 0,1,2,3)
  step "embedding-alltoall-bench world=$world"
  t=$(limit "$BENCH_TIMEOUT")
  [[ $t == 0 ]] && { echo "skipped: out of time" | tee -a "$log"; continue; }
  CUDA_VISIBLE_DEVICES=$gpus timeout -k 5 "$t" "$bench" --world "$world" \
    "${bench_args[@]}" --timeout 30 --output "$run_dir/ours_w$world.csv" \
    >"$run_dir/ours_w${world}_stdout.txt" 2>>"$log"
  echo "embedding-alltoall-bench world=$world rc=$?" | tee -a "$log"
  # A run cut short still leaves the rows it printed.
  [[ -s $run_dir/ours_w$world.csv ]] || grep -E "^(gpu|NVIDIA)" "$run_dir/ours_w${world}_stdout.txt" \
    >"$run_dir/ours_w$world.csv"
done

if [[ $TORCH_TIMEOUT -gt 0 ]]; then
  for world in "${worlds[@]}"; do
    gpus=$([[ $world == 2 ]] && echo 0,1 || echo 0,1,2,3)
    step "torch peer world=$world"
    t=$(limit "$TORCH_TIMEOUT")
    [[ $t == 0 ]] && { echo "skipped: out of time" | tee -a "$log"; continue; }
    CUDA_VISIBLE_DEVICES=$gpus PYTHONUNBUFFERED=1 timeout -k 5 "$t" torchrun --standalone \
      --nproc-per-node "$world" benchmarks/peers/torch_embedding_alltoall.py "${torch_args[@]}" \
      --output "$run_dir/torch_w$world.csv" >"$run_dir/torch_w${world}_stdout.txt" 2>>"$log"
    echo "torch world=$world rc=$?" | tee -a "$log"
    [[ -s $run_dir/torch_w$world.csv ]] || grep -E "^(gpu|NVIDIA)" "$run_dir/torch_w${world}_stdout.txt" \
      >"$run_dir/torch_w$world.csv"
  done
fi

if [[ $SANITIZER_TIMEOUT -gt 0 && $(limit "$SANITIZER_TIMEOUT") -gt 0 ]]; then
  sanitize_in_parallel "$test_bin" 'EmbeddingAllToAll.SmallForSanitizer' "$(limit "$SANITIZER_TIMEOUT")" 2,3
fi

step "summary"
python3 - "$run_dir" <<'EOF' 2>&1 | tee -a "$log"
# Per world, local batch and lookups per sample: the fused time against our sequential
# designs and PyTorch's, the all-to-all's share of the lookup (NCCL alone over our lookups
# alone), and the bar: fused >= 1.2x our sequential where that share is >= 0.2.
import csv, glob, math, os, sys
run = sys.argv[1]
rows = {}
for path in sorted(glob.glob(os.path.join(run, "*_w*.csv"))):
    try:
        for r in csv.DictReader(open(path)):
            try:
                key = (int(r["world"]), int(r["m"]), int(r["k"]))
                rows.setdefault(key, {})[f'{r["op"]}/{r["design"]}'] = (float(r["time_us"]), int(r["wrong"]))
            except (KeyError, ValueError):
                pass
    except OSError:
        pass
cols = ["embedding+alltoall/fused", "embedding+alltoall/fused_nccl_window",
        "embedding+alltoall/sequential", "embedding+alltoall/sequential_own",
        "embedding+alltoall/torch_sequential", "embedding_bag/own", "embedding_bag/fused_local",
        "alltoall/nccl", "embedding_bag/torch", "alltoall/torch_nccl",
        "embedding+alltoall/fused_b2b", "embedding+alltoall/fused_nccl_window_b2b",
        "embedding+alltoall/sequential_b2b"]
nan = float("nan")
with open(os.path.join(run, "summary.csv"), "w") as out:
    out.write(",".join(["world", "local_batch", "lookups_per_sample"] +
                       [c.replace("+", "_").replace("/", "_") + "_us" for c in cols] +
                       ["a2a_over_lookup", "seq_over_fused", "seq_over_window", "own_over_fused",
                        "torch_over_fused", "wrong_fused", "wrong_window"]) + "\n")
    print(f'{"w":>2} {"B":>6} {"k":>4} {"fused":>9} {"window":>9} {"seq":>9} {"seq_own":>9} '
          f'{"torch":>9} {"a2a/lk":>7} {"seq/f":>6} {"seq/w":>6} {"own/f":>6} {"tch/f":>6} wrong')
    bar = []
    for key in sorted(rows):
        v = rows[key]
        t = [v.get(c, (nan, 0))[0] for c in cols]
        f, wnd, seq, own, tch, lk, a2a = t[0], t[1], t[2], t[3], t[4], t[5], t[7]
        share = a2a / lk
        r = [share, seq / f, seq / wnd, own / f, tch / f]
        wrong = [v.get(cols[0], (0, 0))[1], v.get(cols[1], (0, 0))[1]]
        out.write(",".join(str(x) for x in key) + "," + ",".join(f"{x:.2f}" for x in t) + "," +
                  ",".join(f"{x:.3f}" for x in r) + f",{wrong[0]},{wrong[1]}\n")
        print(f"{key[0]:>2} {key[1]:>6} {key[2]:>4} {f:9.1f} {wnd:9.1f} {seq:9.1f} {own:9.1f} "
              f"{tch:9.1f} {r[0]:7.2f} {r[1]:6.2f} {r[2]:6.2f} {r[3]:6.2f} {r[4]:6.2f} {wrong}")
        if share >= 0.2:
            bar.append((key, max(r[1], r[2] if not math.isnan(r[2]) else 0)))
    if bar:
        ok = sum(1 for _, x in bar if x >= 1.2)
        print(f"bar (a2a >= 20% of lookup): {len(bar)} cases; fused (best transport) >= 1.2x "
              f"sequential: {ok}; min {min(x for _, x in bar):.2f}")
EOF
step "done"
cp "$log" "$OUT/log.txt"
[[ -f $run_dir/summary.csv ]] && cp "$run_dir/summary.csv" "$OUT/summary.csv"
tar -czf "$OUT/embedding_alltoall.tar.gz" -C "$OUT" embedding_alltoall && rm -rf "$run_dir"
