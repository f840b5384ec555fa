#!/usr/bin/env bash
# Simulator speed benchmark (issue 2, acceptance 4): how long the simulator takes, not
# how long the simulated collective takes. Prints CSV
#   case,ranks,bytes,sim_wall_s,events,events_per_s,peak_rss_bytes
# and writes it to benchmarks/results/sim_speed.csv (atomically: temp file + rename).
#
# Each case is one function that ends in `csv_row`; to add one, write a function and
# list it in CASES. `run_collective_case` covers `overlapsim collective` runs.
#
# Environment: OVERLAPSIM_BUILD (default <repo>/build), SIM_SPEED_CSV (output path),
# SIM_SPEED_CASES (space-separated subset of CASES to run).
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

# csv_row CASE RANKS BYTES SIM_WALL_S EVENTS PEAK_RSS_BYTES
csv_row() {
  local events_per_s
  events_per_s=$(awk -v e="$5" -v w="$4" 'BEGIN { if (w > 0) printf "%.0f", e / w; else print 0 }')
  echo "$1,$2,$3,$4,$5,$events_per_s,$6"
}

# run_collective_case CASE ARGS...: one `overlapsim collective` run, one CSV row.
run_collective_case() {
  local name=$1
  shift
  local json
  json=$("$BIN" collective "$@" --format json)
  csv_row "$name" "$(json_field ranks <<<"$json")" "$(json_field bytes <<<"$json")" \
    "$(json_field sim_wall_s <<<"$json")" "$(json_field events <<<"$json")" \
    "$(json_field peak_rss_bytes <<<"$json")"
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

# Target < 5 s: the same fat-tree grown to 2,048 nodes x 8 GPUs.
case_hierarchical_allreduce_16384_h200_ndr() {
  run_collective_case hierarchical_allreduce_16384_h200_ndr --op allreduce --algo hierarchical \
    --bytes 1GiB --cluster "$CLUSTERS/h200-128node-ndr.yaml" --nodes 2048
}

CASES=(
  case_ring_allreduce_1024_switch
  case_alltoall_1024_h200_ndr
  case_hierarchical_allreduce_16384_h200_ndr
)

main() {
  build_if_needed
  local selected=("${CASES[@]}")
  if [[ -n ${SIM_SPEED_CASES:-} ]]; then read -r -a selected <<<"$SIM_SPEED_CASES"; fi
  local rows="case,ranks,bytes,sim_wall_s,events,events_per_s,peak_rss_bytes"
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
