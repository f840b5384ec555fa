#!/usr/bin/env bash
# One device call for both fused kernels' acceptance bars on 4 GPUs: the device-to-device
# copy bandwidth (PyTorch, 1 GiB, bytes read plus written: the measured ceiling beside the
# datasheet's), then run_fused_gemv_allreduce.sh and run_embedding_alltoall.sh one after the
# other with the binaries carried in $CARRY_DIR (both scripts read it), each with its tests,
# sanitizer runs, benches and PyTorch peers. Their archives and summaries are renamed so the
# second does not overwrite the first:
#   $OUT/copy_bandwidth.txt, $OUT/fused_gemv_allreduce.tar.gz, $OUT/fused_gemv_summary.csv,
#   $OUT/embedding_alltoall.tar.gz, $OUT/embedding_summary.csv, $OUT/fused_bars_log.txt
#   CARRY_DIR=build-f24-carry bash benchmarks/gpu/run_fused_bars.sh
# The two scripts' own variables apply (TRACE_CALLS, SPLITS, LOADS, TORCH_TIMEOUT, ...).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
{
  echo "=== $(date +%T) copy bandwidth"
  python3 - <<'EOF' 2>&1 | tee "$OUT/copy_bandwidth.txt"
import torch
x = torch.randint(0, 255, (1 << 30,), dtype=torch.uint8, device="cuda")
y = torch.empty_like(x)
for _ in range(3):
    y.copy_(x)
start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
for _ in range(20):
    y.copy_(x)
stop.record()
stop.synchronize()
seconds = start.elapsed_time(stop) / 1e3
print(f"{torch.cuda.get_device_name()}: device-to-device copy {2 * x.numel() * 20 / seconds / 1e12:.3f} TB/s "
      "(bytes read plus written, 1 GiB, mean of 20)")
EOF
  echo "=== $(date +%T) fused gemv + allreduce"
  bash "$root/benchmarks/gpu/run_fused_gemv_allreduce.sh"
  echo "fused gemv script rc=$?"
  [[ -f $OUT/summary.csv ]] && mv "$OUT/summary.csv" "$OUT/fused_gemv_summary.csv"
  rm -f "$OUT/log.txt"
  echo "=== $(date +%T) embedding + all-to-all"
  bash "$root/benchmarks/gpu/run_embedding_alltoall.sh"
  echo "embedding script rc=$?"
  [[ -f $OUT/summary.csv ]] && mv "$OUT/summary.csv" "$OUT/embedding_summary.csv"
  rm -f "$OUT/log.txt"
  echo "=== $(date +%T) done"
} 2>&1 | tee "$OUT/fused_bars_log.txt"
