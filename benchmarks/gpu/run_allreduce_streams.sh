#!/usr/bin/env bash
# The copy-engine all-reduce with its groups on 1 or 2 copy streams (OwnerOptions::
# copy_streams, OVERLAPSIM_TILEWISE_CE_STREAMS), each in its own overlap-bench run of
# issue 5's AllReduce shapes (copy-engine transport and phase 2 only; the same-loop
# sequential, cuBLAS and NCCL of each run give its captured overlap), in the order
# STREAMS (default "2 1 2 1"), then summarize_tilewise.py per run. 2 GPUs.
# Binaries from $CARRY_DIR (default build-carry/). Results in $OUT: ar_s<S>_<i>.csv,
# _detail.csv, _summary.csv, log.txt.
set -uo pipefail
export CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-0,1}" NCCL_NVLS_ENABLE=0 CUDA_MODULE_LOADING=EAGER
here="$(dirname "${BASH_SOURCE[0]}")"
source "$here/device_env.sh"
use_carried_binaries
i=0
for s in ${STREAMS:-2 1 2 1}; do
  i=$((i + 1))
  tag="ar_s${s}_$i"
  OVERLAPSIM_TILEWISE_TRANSPORT=copy_engine OVERLAPSIM_TILEWISE_CE_PHASE2=copy_engine \
  OVERLAPSIM_TILEWISE_CE_STREAMS="$s" OVERLAPSIM_TILEWISE_DETAIL="$OUT/${tag}_detail.csv" \
    timeout "${BENCH_TIMEOUT:-150}" "$bin_dir/overlap-bench" \
    --suite "$root/benchmarks/suites/tilewise_ce_allreduce.yaml" --timeout 30s \
    --output "$OUT/$tag.csv" >/dev/null 2>>"$OUT/log.txt"
  echo "$tag: overlap-bench rc=$?" | tee -a "$OUT/log.txt"
  python3 "$here/summarize_tilewise.py" "$OUT/$tag.csv" "$OUT/${tag}_detail.csv" \
    --output "$OUT/${tag}_summary.csv" 2>&1 | grep -E 'tilewise_ce allreduce|same loop gemm\+allreduce' | tee -a "$OUT/log.txt"
done
