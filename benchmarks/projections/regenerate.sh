#!/usr/bin/env bash
# Regenerates every projection and validation report in benchmarks/projections/ with the
# command that made it, and checks that each comes out byte for byte as committed.
#   benchmarks/projections/regenerate.sh [--cheap] [--write] [--build DIR]
#     --cheap  skip the run that takes minutes (DeepSeek-V3); CI runs this
#     --write  overwrite the committed files instead of comparing (a deliberate change)
# Exit 0: all identical (or written); 1: some differ (each difference is listed).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
cheap=0 write=0 build="${OVERLAPSIM_BUILD_DIR:-$root/build}"
while (($#)); do
  case "$1" in
    --cheap) cheap=1 ;;
    --write) write=1 ;;
    --build) build="$2"; shift ;;
    *) echo "regenerate.sh: unknown argument '$1' (expected --cheap, --write or --build DIR)" >&2; exit 2 ;;
  esac
  shift
done
bin="$build/app/overlapsim"
[[ -x "$bin" ]] || { echo "regenerate.sh: $bin: not built (run scripts/setup)" >&2; exit 2; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

P=benchmarks/projections
cluster=workloads/clusters/h200-128node-ndr.yaml
# name | slow (1) or cheap (0) | arguments after `overlapsim`
runs=(
  "dlrm-dcnv2.txt|0|simulate -w workloads/models/dlrm-dcnv2.yaml -c $cluster --design all --no-timing"
  "dlrm-dcnv2.json|0|simulate -w workloads/models/dlrm-dcnv2.yaml -c $cluster --design all --no-timing --format json"
  "dlrm-dcnv2-duty-cycle.txt|0|simulate -w workloads/models/dlrm-dcnv2.yaml -c $cluster --design all --no-timing --gemm-clock duty-cycle"
  "dlrm-dcnv2-batch1m.txt|0|simulate -w $P/dlrm-dcnv2-batch1m.yaml -c $cluster --design all --no-timing"
  "dlrm-dcnv2-batch1m.json|0|simulate -w $P/dlrm-dcnv2-batch1m.yaml -c $cluster --design all --no-timing --format json"
  "gpt3-175b.txt|0|simulate -w workloads/models/gpt3-175b.yaml -c $cluster --design all --no-timing"
  "gpt3-175b.json|0|simulate -w workloads/models/gpt3-175b.yaml -c $cluster --design all --no-timing --format json"
  "gpt3-175b-duty-cycle.txt|0|simulate -w workloads/models/gpt3-175b.yaml -c $cluster --design all --no-timing --gemm-clock duty-cycle"
  "gpt3-175b-tilewise-ce.txt|0|simulate -w workloads/models/gpt3-175b.yaml -c $cluster --design tilewise --tilewise-transport copy_engine --no-timing"
  "gpt3-175b-tilewise-ce.json|0|simulate -w workloads/models/gpt3-175b.yaml -c $cluster --design tilewise --tilewise-transport copy_engine --no-timing --format json"
  "mixtral-8x7b.txt|0|simulate -w workloads/models/mixtral-8x7b.yaml -c $cluster --design all --no-timing"
  "mixtral-8x7b.json|0|simulate -w workloads/models/mixtral-8x7b.yaml -c $cluster --design all --no-timing --format json"
  "mixtral-8x7b-duty-cycle.txt|0|simulate -w workloads/models/mixtral-8x7b.yaml -c $cluster --design all --no-timing --gemm-clock duty-cycle"
  "mixtral-8x7b-tilewise-ce.txt|0|simulate -w workloads/models/mixtral-8x7b.yaml -c $cluster --design tilewise --tilewise-transport copy_engine --no-timing"
  "mixtral-8x7b-tilewise-ce.json|0|simulate -w workloads/models/mixtral-8x7b.yaml -c $cluster --design tilewise --tilewise-transport copy_engine --no-timing --format json"
  "llama3-70b.txt|0|simulate -w workloads/models/llama3-70b.yaml -c $cluster --design all --no-timing"
  "llama3-70b.json|0|simulate -w workloads/models/llama3-70b.yaml -c $cluster --design all --no-timing --format json"
  "llama3-70b-cp2.txt|0|simulate -w workloads/models/llama3-70b.yaml -c $cluster --cp 2 --no-timing"
  "deepseek-v3.json|1|simulate -w workloads/models/deepseek-v3.yaml -c $cluster --design all --images none --no-timing --format json"
  "pair_validation_tilewise.txt|0|validate --profile calibration/profiles/h200-nvlink.yaml --measurements calibration/data/h200x2-session1/tilewise.csv --worst 10"
  "pair_validation_kernels_i.txt|0|validate --profile calibration/profiles/h200-nvlink.yaml --measurements calibration/data/h200x2-session1/kernels_i.csv --worst 10"
  "pair_validation_heldout.txt|0|validate --profile calibration/profiles/h200-nvlink.yaml --measurements calibration/data/h200x2-session1/heldout.csv --worst 10"
  "pair_validation_tilewise_ce.txt|0|validate --profile calibration/profiles/h200-nvlink.yaml --measurements benchmarks/results/h200x2/tilewise_ce.csv --worst 10"
  "collective_efficiency_h200x4.txt|0|validate --profile calibration/profiles/h200-nvlink.yaml --measurements calibration/data/h200x4/heldout.csv --cluster workloads/clusters/h200-8gpu.yaml --worst 10"
  "nvswitch_validation_h200x8.txt|0|validate --profile calibration/profiles/h200-nvswitch-8gpu.yaml --measurements calibration/data/h200x8/heldout.csv --cluster workloads/clusters/h200-8gpu.yaml"
  "reference_runs.txt|0|validate-steps workloads/reference --no-timing"
  "reference_collectives.txt|0|validate-collectives workloads/reference/collectives"
  "tilewise_validation_h200x4.txt|0|validate --profile calibration/profiles/h200-nvswitch-4gpu.yaml --measurements calibration/data/h200x4-tilewise/calibration.csv --cluster workloads/clusters/h200-8gpu.yaml"
)

differ=0 ran=0
for run in "${runs[@]}"; do
  IFS='|' read -r name slow args <<<"$run"
  ((cheap && slow)) && continue
  # shellcheck disable=SC2086 # the arguments are words by design
  if ! "$bin" $args --output "$out/$name" >"$out/$name.log" 2>&1; then
    echo "FAIL  $name: overlapsim $args"; sed 's/^/      /' "$out/$name.log"; differ=1; continue
  fi
  ran=$((ran + 1))
  if ((write)); then
    cp "$out/$name" "$P/$name"; echo "wrote $P/$name"
  elif cmp -s "$out/$name" "$P/$name"; then
    echo "same  $name"
  else
    echo "DIFF  $name: overlapsim $args"
    diff "$P/$name" "$out/$name" | head -20 | sed "s/^/      /" || true
    differ=1
  fi
done
echo "regenerate.sh: $ran run(s), $( ((differ)) && echo 'some differ' || echo 'all identical')"
exit "$differ"
