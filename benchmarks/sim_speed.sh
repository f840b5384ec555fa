#!/usr/bin/env bash
# Simulator speed benchmark: how long the simulator takes, not
# how long the simulated collective takes. Prints CSV
#   case,ranks,bytes,sim_wall_s,events,events_per_s,peak_rss_bytes,cpu_s
# and writes it to benchmarks/results/sim_speed.csv (atomically: temp file + rename).
# cpu_s is the command's user + system CPU time: on a shared machine wall time grows with
# the load, CPU time much less.
#
# Each case is one function that ends in `csv_row`; to add one, write a function and
# list it in CASES. `run_collective_case` covers `overlapsim collective` runs.
#
# Environment: OVERLAPSIM_BUILD (default <repo>/build), SIM_SPEED_CSV (output path),
# SIM_SPEED_CASES (space-separated subset of CASES to run), SIM_SPEED_NO_BUILD=1 (time the
# binary as it is, without building it first).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${OVERLAPSIM_BUILD:-$ROOT/build}
CSV=${SIM_SPEED_CSV:-$ROOT/benchmarks/results/sim_speed.csv}
BIN=$BUILD/app/overlapsim
CLUSTERS=$ROOT/workloads/clusters

build_if_needed() {
  if [[ ! -f $BUILD/CMakeCache.txt ]]; then
    cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
  fi
  cmake --build "$BUILD" --target overlapsim >&2
}

# json_field NAME < json: the value of a top-level scalar field of the CLI's JSON.
json_field() {
  sed -n "s/^  \"$1\": \\([^,]*\\),\\{0,1\\}\$/\\1/p" | head -n 1 | tr -d '"'
}

# csv_row CASE RANKS BYTES SIM_WALL_S EVENTS PEAK_RSS_BYTES CPU_S
csv_row() {
  local events_per_s
  events_per_s=$(awk -v e="$5" -v w="$4" 'BEGIN { if (w > 0) printf "%.0f", e / w; else print 0 }')
  echo "$1,$2,$3,$4,$5,$events_per_s,$6,$7"
}

# cpu_s_of FILE: user + system CPU seconds of finished children in a `times` listing.
cpu_s_of() {
  awk 'NR == 2 {
    n = 0
    for (i = 1; i <= 2; ++i) { split($i, ms, "m"); sub("s", "", ms[2]); n += ms[1] * 60 + ms[2] }
    printf "%.3f", n
  }' "$1"
}

# run_timed VAR ARGS...: runs ARGS (stdout into VAR) and sets CPU_S to its CPU seconds.
# `times` runs in this shell (a subshell would have no children of its own to report).
run_timed() {
  local __var=$1 __tmp __out
  shift
  __tmp=$(mktemp)
  times >"$__tmp.0"
  __out=$("$@")
  times >"$__tmp.1"
  CPU_S=$(awk -v a="$(cpu_s_of "$__tmp.1")" -v b="$(cpu_s_of "$__tmp.0")" \
    'BEGIN { printf "%.3f", a - b }')
  rm -f "$__tmp" "$__tmp.0" "$__tmp.1"
  printf -v "$__var" '%s' "$__out"
}

# run_collective_case CASE ARGS...: one `overlapsim collective` run, one CSV row.
run_collective_case() {
  local name=$1
  shift
  local json
  run_timed json "$BIN" collective "$@" --format json
  csv_row "$name" "$(json_field ranks <<<"$json")" "$(json_field bytes <<<"$json")" \
    "$(json_field sim_wall_s <<<"$json")" "$(json_field events <<<"$json")" \
    "$(json_field peak_rss_bytes <<<"$json")" "$CPU_S"
}

# Target < 0.1 s.
case_ring_allreduce_1024_switch() {
  run_collective_case ring_allreduce_1024_switch --op allreduce --algo ring --bytes 1GiB \
    --cluster "$CLUSTERS/switch-1024-50GBps.yaml"
}

# Target < 2 s.
case_alltoall_1024_h200_ndr() {
  run_collective_case alltoall_1024_h200_ndr --op alltoall --algo direct --bytes 1GiB \
    --cluster "$CLUSTERS/h200-128node-ndr.yaml"
}

# Target < 5 s: the same non-blocking fat-tree at 2,048 nodes x 8 GPUs.
case_hierarchical_allreduce_16384_h200_ndr() {
  run_collective_case hierarchical_allreduce_16384_h200_ndr --op allreduce --algo hierarchical \
    --bytes 1GiB --cluster "$CLUSTERS/h200-2048node-ndr.yaml"
}

# run_simulate_case CASE ARGS...: one `overlapsim simulate` run (one training step, every
# stage, folded ranks' traffic as background), one CSV row; sim_wall_s is the whole
# command's wall time (loading, generation, simulation).
run_simulate_case() {
  local name=$1
  shift
  local json
  run_timed json "$BIN" simulate "$@" --format json
  csv_row "$name" "$(json_field gpus <<<"$json")" 0 "$(json_field wall_s <<<"$json")" \
    "$(json_field events <<<"$json")" "$(json_field peak_rss_bytes <<<"$json")" "$CPU_S"
}

MODELS=$ROOT/workloads/models

# Step targets: each 1,024-GPU step < 2 s and < 2 GiB; the 16,384-GPU step < 60 s.
case_step_gpt3_175b_1024_tp8_pp8_dp16() {
  run_simulate_case step_gpt3_175b_1024_tp8_pp8_dp16 -w "$MODELS/gpt3-175b.yaml" \
    -c "$CLUSTERS/h200-128node-ndr.yaml" --tp 8 --pp 8 --dp 16
}

case_step_mixtral_8x7b_1024_ep8() {
  run_simulate_case step_mixtral_8x7b_1024_ep8 -w "$MODELS/mixtral-8x7b.yaml" \
    -c "$CLUSTERS/h200-128node-ndr.yaml" --ep 8
}

case_step_dlrm_dcnv2_1024() {
  run_simulate_case step_dlrm_dcnv2_1024 -w "$MODELS/dlrm-dcnv2.yaml" \
    -c "$CLUSTERS/h200-128node-ndr.yaml"
}

case_step_llama3_405b_16384_tp8_pp16_dp128() {
  run_simulate_case step_llama3_405b_16384_tp8_pp16_dp128 -w "$MODELS/llama3-405b.yaml" \
    -c "$CLUSTERS/h200-2048node-ndr.yaml" --tp 8 --pp 16 --dp 128
}

# DeepSeek-V3 as the model file sets it up (PP16 EP64 DP64, 240 microbatches): ~56,000
# 64-rank all-to-alls; target < 30 s, < 2 GiB.
case_step_deepseek_v3_1024_pp16_ep64() {
  run_simulate_case step_deepseek_v3_1024_pp16_ep64 -w "$MODELS/deepseek-v3.yaml" \
    -c "$CLUSTERS/h200-128node-ndr.yaml"
}

# Design-model target: --design all for DLRM-DCNv2, GPT-3 175B and Mixtral 8x7B on 128 x 8 H200
# in < 10 s wall in total (the sum of these three rows).
case_design_all_gpt3_175b_1024() {
  run_simulate_case design_all_gpt3_175b_1024 -w "$MODELS/gpt3-175b.yaml" \
    -c "$CLUSTERS/h200-128node-ndr.yaml" --design all
}

case_design_all_mixtral_8x7b_1024() {
  run_simulate_case design_all_mixtral_8x7b_1024 -w "$MODELS/mixtral-8x7b.yaml" \
    -c "$CLUSTERS/h200-128node-ndr.yaml" --design all
}

case_design_all_dlrm_dcnv2_1024() {
  run_simulate_case design_all_dlrm_dcnv2_1024 -w "$MODELS/dlrm-dcnv2.yaml" \
    -c "$CLUSTERS/h200-128node-ndr.yaml" --design all
}

CASES=(
  case_ring_allreduce_1024_switch
  case_alltoall_1024_h200_ndr
  case_hierarchical_allreduce_16384_h200_ndr
  case_step_gpt3_175b_1024_tp8_pp8_dp16
  case_step_mixtral_8x7b_1024_ep8
  case_step_dlrm_dcnv2_1024
  case_step_llama3_405b_16384_tp8_pp16_dp128
  case_step_deepseek_v3_1024_pp16_ep64
  case_design_all_gpt3_175b_1024
  case_design_all_mixtral_8x7b_1024
  case_design_all_dlrm_dcnv2_1024
)

main() {
  [[ -n ${SIM_SPEED_NO_BUILD:-} ]] || build_if_needed
  local selected=("${CASES[@]}")
  if [[ -n ${SIM_SPEED_CASES:-} ]]; then read -r -a selected <<<"$SIM_SPEED_CASES"; fi
  local rows="case,ranks,bytes,sim_wall_s,events,events_per_s,peak_rss_bytes,cpu_s"
  local c row
  for c in "${selected[@]}"; do
    row=$("$c")
    rows+=$'\n'"$row"
  done
  mkdir -p "$(dirname "$CSV")"
  local tmp
  tmp=$(mktemp "$CSV.XXXXXX")
  printf '%s\n' "$rows" >"$tmp"
  mv -f "$tmp" "$CSV"
  printf '%s\n' "$rows"
}

main "$@"
