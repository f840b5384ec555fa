#!/usr/bin/env bash
# One device call of `overlapsim calibrate` on the GPU machine, with binaries built on the
# workstation and carried in .carry_calib/ (bin/overlapsim, bin/overlap-bench, lib/ with
# yaml-cpp and fmt): the device image has CUDA, NCCL and cuBLAS but not every library the
# CLI links.
#   benchmarks/gpu/run_calibrate.sh NAME SUITE GPUS [DEVICES] [TIMEOUT_S]
# NAME: output folder name (results in $OUT/NAME/: calibration.csv, manifest.yaml,
# overlap-bench.log); a partial run carried in .carry_calib/resume/NAME/ is resumed.
# DEVICES: CUDA_VISIBLE_DEVICES (default all). Also writes $OUT/machine.txt.
set -uo pipefail
export CUDA_MODULE_LOADING=EAGER
name="$1" suite="$2" gpus="$3" devices="${4:-}" limit="${5:-540}"
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
carry="$root/.carry_calib"
use_device_libs "$carry/lib"
[ -n "$devices" ] && export CUDA_VISIBLE_DEVICES="$devices"
{
  date -u
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.limit --format=csv
  nvidia-smi topo -m
  echo "nccl lib: $nccl_lib"
} >>"$OUT/machine.txt" 2>&1
mkdir -p "$OUT/$name"
if [ -d "$carry/resume/$name" ]; then cp -a "$carry/resume/$name/." "$OUT/$name/"; fi
start=$(date +%s)
timeout "$limit" "$carry/bin/overlapsim" calibrate --out "$OUT/$name" --suite "$suite" \
  --gpus "$gpus" --bench "$carry/bin/overlap-bench" --case-timeout "${CASE_TIMEOUT:-120}" 2>&1 | tr '\r' '\n' | tail -40
echo "calibrate $name rc=${PIPESTATUS[0]} in $(($(date +%s) - start)) s"
