#!/usr/bin/env bash
# One device call for the fused GEMV + all-reduce (kernels/fused/) on 4 GPUs: the binaries
# (carried in $CARRY_DIR/{bin,lib}, default build-fused-carry, when they run here; else a
# kernels-only build), the fused tests on 2 and on 4 GPUs (rank-order and NCCL agreement,
# 200 calls back to back, a cold start under lazy module loading), compute-sanitizer
# racecheck and synccheck on the small 2-GPU case, fused-gemv-bench at TP = 2 and TP = 4,
# the PyTorch peers (benchmarks/peers/torch_gemv_allreduce.py) at TP = 2 and 4, a summary
# (summary.csv: per TP, tokens and shape, the GPU, the fused time against every baseline),
# then two diagnostics at 1 and 16 tokens: the fused kernel with each K split of SPLITS
# forced (split_tp*_ks*.csv; the main bench tunes the split per case, GemvAllReduce::tune,
# and logs every split's time) and per-CTA timestamps of TRACE_CALLS fused and GEMV-alone
# calls (trace_tp*.rank*.csv, summarised in trace_summary.txt: the event-timed call against
# the CTAs' span, the GEMV's span, and from its end to the CTAs' end).
# Optional: BASELINE_DIR (a second carried {bin,lib} folder, e.g. an earlier kernel's build):
# its fused-gemv-bench runs too, before this one in each of ROUNDS rounds (base_tp*_r*.csv;
# this build's first round is fused_tp*.csv as before, later ones fused_tp*_r*.csv), and its
# traced calls beside this one's (trace_base_tp*); FLOORS=1: the device-to-device copy and
# the event-timed span of a 1-element kernel (floors.txt, for
# benchmarks/gpu/fused_gemv_bound.py --copy-tbps --launch-us); NCU=1: Nsight Compute's duration and DRAM bytes of
# each GEMV kernel on one GPU (ncu_raw.csv; 70B down_proj and 405B o_proj at 1 token).
# WORLDS ("2 4"): the TPs to run (tests on as many GPUs).
# Everything ends up in $OUT/fused_gemv_allreduce.tar.gz (and log.txt, summary.csv beside it).
#   bash benchmarks/gpu/run_fused_gemv_allreduce.sh
# Step limits: BUILD_TIMEOUT (240), TEST_TIMEOUT (90), SANITIZER_TIMEOUT (120, 0 skips),
# BENCH_TIMEOUT (120), TORCH_TIMEOUT (150, 0 skips); TOKENS (1,4,16,64); SPLITS ("1 4",
# empty skips); TRACE_CALLS (10, 0 skips); ROUNDS (1).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
run_dir="$OUT/run"
mkdir -p "$run_dir"
log="$run_dir/log.txt"
tokens="${TOKENS:-1,4,16,64}"
worlds="${WORLDS:-2 4}"
gpus_of() { [[ $1 == 2 ]] && echo 0,1 || echo 0,1,2,3; }

log_machine "python3 -c 'import torch; print(\"torch\", torch.__version__, torch.cuda.device_count())'" \
  "grep -E 'define NCCL_(MAJOR|MINOR|PATCH)' '$nccl_header'"
echo "nccl lib: $nccl_lib" >>"$log"
carry="$root/${CARRY_DIR:-build-fused-carry}"
use_device_libs "$carry/lib"
bench="$carry/bin/fused-gemv-bench"
test_bin="$carry/bin/fused_gemv_allreduce_test"
if ! "$test_bin" --gtest_list_tests >/dev/null 2>>"$log"; then
  step "carried binaries do not run here: kernels-only build"
  start=$(date +%s)
  build_kernels_only "${BUILD_TIMEOUT:-240}" fused-gemv-bench fused_gemv_allreduce_test >>"$log" 2>&1
  echo "build rc=$? in $(($(date +%s) - start)) s" | tee -a "$log"
  bench=build-gpu/kernels/bench/fused-gemv-bench
  test_bin=build-gpu/tests/kernels/fused_gemv_allreduce_test
fi
ldd "$bench" | grep -E "not found|nccl" >>"$log" 2>&1
echo "sass HMMA: $(cuobjdump -sass "$bench" 2>/dev/null | grep -c HMMA)" >>"$log"
# Eager loading for everything but the cold-start test, which asks for lazy loading itself.
export CUDA_MODULE_LOADING=EAGER

for world in $worlds; do
  gpus=$(gpus_of "$world")
  step "tests on GPUs $gpus"
  CUDA_VISIBLE_DEVICES=$gpus timeout "${TEST_TIMEOUT:-90}" "$test_bin" --gtest_brief=0 \
    >"$run_dir/tests_gpus${gpus//,/}.txt" 2>&1
  echo "fused_gemv_allreduce_test (GPUs $gpus) rc=$?" | tee -a "$log" "$run_dir/tests.txt"
  grep -E "^\[  (PASSED|FAILED|SKIPPED|     OK) |^\[  FAILED|Failure|differ|expected" \
    "$run_dir/tests_gpus${gpus//,/}.txt" | head -30 >>"$run_dir/tests.txt"
done

base_bench=""
if [[ -n ${BASELINE_DIR:-} ]]; then
  base_bench="$root/$BASELINE_DIR/bin/fused-gemv-bench"
  [[ -x $base_bench ]] || { echo "no baseline bench at $base_bench" | tee -a "$log"; base_bench=""; }
fi
for world in $worlds; do
  for round in $(seq 1 "${ROUNDS:-1}"); do
    if [[ -n $base_bench ]]; then
      step "baseline fused-gemv-bench TP=$world round $round"
      CUDA_VISIBLE_DEVICES=$(gpus_of "$world") LD_LIBRARY_PATH="$root/$BASELINE_DIR/lib:$LD_LIBRARY_PATH" \
        timeout "${BENCH_TIMEOUT:-120}" "$base_bench" --world "$world" --tokens "$tokens" --timeout 30 \
        --output "$run_dir/base_tp${world}_r$round.csv" >/dev/null 2>>"$log"
      echo "baseline fused-gemv-bench TP=$world round $round rc=$?" | tee -a "$log"
    fi
    step "fused-gemv-bench TP=$world round $round"
    out="$run_dir/fused_tp$world.csv"
    [[ $round -gt 1 ]] && out="$run_dir/fused_tp${world}_r$round.csv"
    CUDA_VISIBLE_DEVICES=$(gpus_of "$world") \
      timeout "${BENCH_TIMEOUT:-120}" "$bench" --world "$world" --tokens "$tokens" --timeout 30 \
      --output "$out" >"$run_dir/fused_tp${world}_stdout.txt" 2>>"$log"
    echo "fused-gemv-bench TP=$world round $round rc=$?" | tee -a "$log"
  done
done

if [[ ${FLOORS:-0} == 1 ]]; then
  step "floors: copy, launch"
  CUDA_VISIBLE_DEVICES=0 python3 - <<'EOF' 2>&1 | tee "$run_dir/floors.txt" | tee -a "$log"
# The device's practical floors for a GEMV kernel timed between events: a 1 GiB
# device-to-device copy (bytes read plus written over time) and the event-timed span of a
# 1-element kernel with the host ahead.
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
torch.cuda._sleep(200_000_000)  # the host enqueues every pair while the GPU sleeps
pairs = []
for _ in range(200):
    p = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
    p[0].record()
    x.add_(1)
    p[1].record()
    pairs.append(p)
torch.cuda.synchronize()
print(f"launch_us {st.median(p[0].elapsed_time(p[1]) * 1e3 for p in pairs):.2f}")
EOF
fi

if [[ ${NCU:-0} == 1 ]]; then
  step "ncu: the GEMVs alone on one GPU"
  CUDA_VISIBLE_DEVICES=0 timeout 120 ncu --clock-control none --csv --page raw --launch-count 400 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    "$bench" --world 1 --tokens 1 --shapes 8192x14336,16384x8192 --iterations 5 --warmup 2 \
    --b2b-calls 0 --timeout 30 --output "$run_dir/ncu_bench.csv" >"$run_dir/ncu_raw.csv" 2>>"$log"
  echo "ncu rc=$?" | tee -a "$log"
fi

if [[ ${TORCH_TIMEOUT:-150} -gt 0 ]]; then
  for world in $worlds; do
    step "torch peers TP=$world"
    CUDA_VISIBLE_DEVICES=$(gpus_of "$world") PYTHONUNBUFFERED=1 \
      timeout "${TORCH_TIMEOUT:-150}" torchrun --standalone --nproc-per-node "$world" \
      benchmarks/peers/torch_gemv_allreduce.py --tokens ${tokens//,/ } \
      --output "$run_dir/torch_tp$world.csv" >>"$log" 2>&1
    echo "torch TP=$world rc=$?" | tee -a "$log"
  done
fi

if [[ ${SANITIZER_TIMEOUT:-120} -gt 0 ]]; then
  for tool in racecheck synccheck; do
    step "compute-sanitizer $tool (SmallForSanitizer, 2 GPUs)"
    CUDA_VISIBLE_DEVICES=0,1 timeout "${SANITIZER_TIMEOUT:-120}" compute-sanitizer --tool "$tool" \
      --print-limit 20 "$test_bin" --gtest_filter='FusedGemvAllReduce.SmallForSanitizer' \
      >"$run_dir/sanitizer_$tool.txt" 2>&1
    rc=$?
    { echo "### compute-sanitizer --tool $tool (rc=$rc)"
      grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|Error|PASSED|FAILED|tests ran" \
        "$run_dir/sanitizer_$tool.txt" | head -20; } | tee -a "$log" >>"$run_dir/tests.txt"
  done
fi

if [[ -n ${SPLITS-1 4} ]]; then
  for world in $worlds; do
    for ks in ${SPLITS-1 4}; do
      step "fused-gemv-bench TP=$world, K splits $ks forced"
      CUDA_VISIBLE_DEVICES=$(gpus_of "$world") \
        timeout "${BENCH_TIMEOUT:-120}" "$bench" --world "$world" --tokens 1,16 --iterations 25 \
        --warmup 5 --b2b-calls 20 --timeout 30 --k-splits "$ks" \
        --output "$run_dir/split_tp${world}_ks$ks.csv" >/dev/null 2>>"$log"
      echo "split sweep TP=$world ks=$ks rc=$?" | tee -a "$log"
    done
  done
fi

if [[ ${TRACE_CALLS:-10} -gt 0 ]]; then
  for world in $worlds; do
    step "fused-gemv-bench TP=$world traced"
    CUDA_VISIBLE_DEVICES=$(gpus_of "$world") \
      timeout "${BENCH_TIMEOUT:-120}" "$bench" --world "$world" --tokens 1,16 --iterations 10 \
      --warmup 3 --b2b-calls 0 --timeout 30 --trace-calls "${TRACE_CALLS:-10}" \
      --trace "$run_dir/trace_tp$world" --output "$run_dir/trace_tp${world}_bench.csv" \
      >/dev/null 2>>"$log"
    echo "traced TP=$world rc=$?" | tee -a "$log"
    if [[ -n $base_bench ]]; then
      step "baseline fused-gemv-bench TP=$world traced"
      CUDA_VISIBLE_DEVICES=$(gpus_of "$world") LD_LIBRARY_PATH="$root/$BASELINE_DIR/lib:$LD_LIBRARY_PATH" \
        timeout "${BENCH_TIMEOUT:-120}" "$base_bench" --world "$world" --tokens 1,16 --iterations 10 \
        --warmup 3 --b2b-calls 0 --timeout 30 --trace-calls "${TRACE_CALLS:-10}" \
        --trace "$run_dir/trace_base_tp$world" --output "$run_dir/trace_base_tp${world}_bench.csv" \
        >/dev/null 2>>"$log"
      echo "baseline traced TP=$world rc=$?" | tee -a "$log"
    fi
  done
  python3 - "$run_dir" <<'EOF' 2>&1 | tee "$run_dir/trace_summary.txt" | tee -a "$log"
# Per TP, design and case, medians over the traced calls: the event-timed call (maximum over
# ranks), the CTAs' span (first start to last end on a rank, maximum over ranks), the time
# outside the span (launch and completion), and for the fused kernel the GEMV's span on a
# rank (to its last unit pushed) and from there to the CTAs' end (the exchange's tail);
# spread: from the median CTA's last unit to the last CTA's (the GEMV's uneven end).
import collections, csv, glob, os, re, statistics as st, sys
run = sys.argv[1]
for first in sorted(glob.glob(os.path.join(run, "trace_*tp*.rank0.csv"))):
    m = re.search(r"trace_(base_)?tp(\d)", first)
    tp, label = int(m[2]), "baseline " if m[1] else ""
    calls = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in range(tp):
        for row in csv.reader(open(first.replace(".rank0.", f".rank{r}."))):
            calls[(row[0], int(row[1]), int(row[2]), int(row[3]), int(row[4]))][r].append(
                [int(x) for x in row[6:11]])
    per_case = collections.defaultdict(list)
    for key, ranks in calls.items():
        span = gemv = spread = 0
        for rows in ranks.values():
            start = min(x[0] for x in rows)
            pushed = max(x[1] for x in rows)
            end = max(x[3] for x in rows) if key[0] == "fused" else pushed
            span, gemv = max(span, end - start), max(gemv, pushed - start)
            spread = max(spread, pushed - st.median(x[1] for x in rows))
        event = max(rows[0][4] for rows in ranks.values())
        per_case[key[:4]].append((event / 1e3, span / 1e3, gemv / 1e3, spread / 1e3))
    print(f"{label}TP={tp}: design tokens n k_shard | event_us span_us outside_us gemv_span_us tail_us spread_us")
    for key in sorted(per_case):
        e, s, g, sp = (st.median(x[i] for x in per_case[key]) for i in range(4))
        print(f"  {key[0]:5} {key[1]:3} {key[2]:6} {key[3]:6} | {e:7.1f} {s:7.1f} {e - s:5.1f} {g:7.1f} {s - g:5.1f} {sp:5.1f}")
EOF
fi

step "summary"
python3 - "$run_dir" <<'EOF' 2>&1 | tee -a "$log"
# Per TP, tokens and shape: fused against our sequential designs and PyTorch's, and the bars
# at tokens <= 16 (>= 2x PyTorch sequential, >= 1.25x cuBLAS + NCCL, <= symm-mem one-shot).
import csv, glob, os, sys
run = sys.argv[1]
rows = {}
gpus = {}
for path in sorted(glob.glob(os.path.join(run, "fused_tp[0-9].csv")) + glob.glob(os.path.join(run, "torch_tp[0-9].csv"))):
    for r in csv.DictReader(open(path)):
        key = (int(r["world"]), int(r["m"]), int(r["n"]), int(r["k"]) * int(r["world"]))
        rows.setdefault(key, {})[f'{r["op"]}/{r["design"]}'] = (float(r["time_us"]), int(r["wrong"]))
        gpus.setdefault(key, set()).add(r["gpu"])
cols = ["gemv+allreduce/fused", "gemv+allreduce/sequential", "gemv+allreduce/sequential_own",
        "gemv+allreduce/torch_sequential", "gemv+allreduce/torch_symm_mem",
        "gemv/cublas", "gemv/own", "allreduce/nccl", "gemv+allreduce/fused_b2b",
        "gemv+allreduce/sequential_b2b", "gemv+allreduce/fused_nccl_window",
        "gemv+allreduce/fused_nccl_window_b2b"]
out = open(os.path.join(run, "summary.csv"), "w")
head = ["tp", "tokens", "n", "k_full"] + [c.split("/")[1] + "_us" for c in cols] + [
    "torch_seq_over_fused", "seq_over_fused", "symm_over_fused", "wrong_fused", "gpu"]
out.write(",".join(head) + "\n")
print(" ".join(f"{h:>9}" for h in ["tp", "tok", "n", "k", "fused", "seq", "own", "t_seq", "t_symm", "x_tseq", "x_seq", "x_symm"]))
bars = {2: [], 4: []}
for key in sorted(rows):
    v = rows[key]
    t = [v.get(c, (float("nan"), 0))[0] for c in cols]
    f = t[0]
    ratios = [t[3] / f, t[1] / f, t[4] / f]
    out.write(",".join(str(x) for x in list(key) + [f"{x:.2f}" for x in t] + [f"{x:.3f}" for x in ratios] + [str(v.get(cols[0], (0, 0))[1]), "/".join(sorted(gpus[key]))]) + "\n")
    print(" ".join(f"{x:>9}" for x in key) + " " + " ".join(f"{x:9.1f}" for x in t[:5]) + " " + " ".join(f"{x:9.2f}" for x in ratios))
    if key[1] <= 16 and key[0] in bars:
        bars[key[0]].append(ratios)
for tp, rs in bars.items():
    if not rs:
        continue
    import math
    ok = lambda i, bar: sum(1 for r in rs if r[i] >= bar)
    print(f"TP={tp} tokens<=16: {len(rs)} cases; torch_seq/fused >= 2: {ok(0, 2.0)}, min {min(r[0] for r in rs):.2f}; "
          f"seq/fused >= 1.25: {ok(1, 1.25)}, min {min(r[1] for r in rs):.2f}; "
          f"symm/fused >= 1: {ok(2, 1.0)}, min {min((r[2] for r in rs if not math.isnan(r[2])), default=float('nan')):.2f}")
EOF
step "done"
cp "$log" "$OUT/log.txt"
[[ -f $run_dir/summary.csv ]] && cp "$run_dir/summary.csv" "$OUT/summary.csv"
tar -czf "$OUT/fused_gemv_allreduce.tar.gz" -C "$OUT" run && rm -rf "$run_dir"
