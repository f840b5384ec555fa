#!/usr/bin/env bash
# Where the copy-engine all-reduce's time after the GEMM goes (no profiler needed: the
# design's own timeline, CopyEngineDesign::set_timeline). overlap-bench's tile-wise case with the
# copy-engine transport and phase 2 for the given shapes, once per groups-per-part value;
# the chosen configuration then runs 5 untimed calls with an event after every step of
# each rank's comm stream (OVERLAPSIM_TILEWISE_TIMELINE), which summarize_timeline.py
# turns into the median step times. 2 GPUs. Binaries from $CARRY_DIR (default build-carry/).
#   benchmarks/gpu/trace_allreduce_tail.sh ["4096 4096 4096;2048 8192 8192"] ["2 8"]
# Env PHASE2: the all-reduce's phase-2 mode traced (copy_engine, default; tail_kernel).
# Results in $OUT: timeline.csv, timeline_summary.txt, bench_g<G>.csv, log.txt.
set -uo pipefail
export CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-0,1}" NCCL_NVLS_ENABLE=0 CUDA_MODULE_LOADING=EAGER
shapes="${1:-4096 4096 4096;2048 8192 8192;8192 8192 2048}"
groups="${2:-2 8}"
here="$(dirname "${BASH_SOURCE[0]}")"
source "$here/device_env.sh"
use_carried_binaries
suite="$OUT/suite_ar.yaml"
{
  echo "defaults: {dtype: bf16, warmup: 3, iterations: 10, warmup_time: 25ms}"
  echo "cases:"
  echo "  - op: gemm+allreduce"
  echo "    designs: [tilewise]"
  echo "    shapes:"
  IFS=';' read -ra list <<<"$shapes"
  for s in "${list[@]}"; do read -r m n k <<<"$s"; echo "      - [$m, $n, $k]"; done
} >"$suite"
for g in $groups; do
  OVERLAPSIM_TILEWISE_TRANSPORT=copy_engine OVERLAPSIM_TILEWISE_CE_GROUPS="$g" \
  OVERLAPSIM_TILEWISE_CE_PHASE2="${PHASE2:-copy_engine}" OVERLAPSIM_TILEWISE_TIMELINE="$OUT/timeline_g$g.csv" \
    timeout 200 "$bin_dir/overlap-bench" --suite "$suite" --timeout 30s \
    --output "$OUT/bench_g$g.csv" >>"$OUT/log.txt" 2>&1
  echo "groups $g: overlap-bench rc=$?" | tee -a "$OUT/log.txt"
  append_csv "$OUT/timeline_g$g.csv" "$OUT/timeline.csv" && rm -f "$OUT/timeline_g$g.csv"
done
python3 "$here/summarize_timeline.py" "$OUT/timeline.csv" | tee "$OUT/timeline_summary.txt"
