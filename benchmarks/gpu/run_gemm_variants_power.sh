#!/usr/bin/env bash
# Own GEMM variants against cuBLAS at the power limit, on one GPU: own-gemm-bench times the
# variants interleaved, then each alone for SUSTAIN_MS (--sustain-ms; designs *_sustained),
# while nvidia-smi samples clock and power, once per raster group_m in GROUP_MS. Outputs
# under $OUT: variants_g<G>.csv (rows), variants_g<G>.err (summary and `# phase` lines),
# phases_g<G>.csv, smi.csv, summary_g<G>.csv (summarize_gemm_power.py against
# cublas_sustained). Usage: CARRY_DIR=build-carry bash benchmarks/gpu/run_gemm_variants_power.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
use_carried_binaries
gemm_bench="$bin_dir/own-gemm-bench"
shapes="${SHAPES:-8192x8192x2048,4096x4096x4096,2048x8192x8192,8192x8192x8192}"
versions="${VERSIONS:-2,3,2n}"
sustain_ms="${SUSTAIN_MS:-3000}"

start_smi_sampling "$OUT/smi.csv"
for g in ${GROUP_MS:-8 16}; do
  timeout 400 "$gemm_bench" --shapes "$shapes" --versions "$versions" --iters 30 --group-m "$g" \
    --sustain-ms "$sustain_ms" >"$OUT/variants_g$g.csv" 2>"$OUT/variants_g$g.err"
  echo "group_m $g rc=$?" | tee -a "$OUT/variants_g$g.err"
  own_gemm_phases "$OUT/variants_g$g.err" >"$OUT/phases_g$g.csv"
done
stop_smi_sampling
for g in ${GROUP_MS:-8 16}; do
  cp "$OUT/phases_g$g.csv" "$OUT/phases.csv"
  python3 "$root/benchmarks/gpu/summarize_gemm_power.py" "$OUT" "variants_g$g.csv" cublas_sustained \
    >"$OUT/summary_g$g.csv"
  echo "== group_m $g"
  cat "$OUT/summary_g$g.csv"
  grep -v "^# phase" "$OUT/variants_g$g.err"
done
rm -f "$OUT/phases.csv"
