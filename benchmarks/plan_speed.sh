#!/usr/bin/env bash
# Capacity planner speed: how long `overlapsim plan` takes for about 1,000 (configuration,
# design) points of GPT-3 175B on the H200 and H100 clusters over 16-256 nodes, with local
# threads and with MPI ranks. Prints CSV
#   mode,mpi_ranks,threads_per_rank,configurations,points,wall_s,cpu_s,
#   wall_s_per_1000_points,cpu_s_per_point,load_1min,same_results
# and writes it to benchmarks/results/cpu/plan_speed/plan_speed.csv (temp file + rename).
# cpu_s is user + system time of the plan and all its ranks; load_1min is the host's load
# average when the mode started (other work on the cores slows wall_s, not cpu_s);
# same_results says whether the mode's results.json equals the first mode's byte for byte.
#
# The points: --simulate-top K per (cluster, node count) with K = ceil(points / (groups x
# designs)); the exact lower-bound pruning may stop a group's chain earlier, so `points`
# is what ran and wall_s_per_1000_points scales to 1,000.
#
# Environment: OVERLAPSIM_BUILD (default <repo>/build), PLAN_SPEED_CSV (output path),
# PLAN_SPEED_POINTS (default 1000), PLAN_SPEED_NODES (default 16:256), PLAN_SPEED_MODES
# (default "threads1 threads2 mpi1 mpi2": one or two local threads, one or two MPI ranks of
# one thread each), PLAN_SPEED_ARGS (more plan options, e.g. --sample-by-runs),
# PLAN_SPEED_RESULTS (a folder to keep each mode's results.json in, as <mode>.json).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${OVERLAPSIM_BUILD:-$ROOT/build}
CSV=${PLAN_SPEED_CSV:-$ROOT/benchmarks/results/cpu/plan_speed/plan_speed.csv}
POINTS=${PLAN_SPEED_POINTS:-1000}
NODES=${PLAN_SPEED_NODES:-16:256}
MODES=${PLAN_SPEED_MODES:-threads1 threads2 mpi1 mpi2}
BIN=$BUILD/app/overlapsim
CLUSTERS=("$ROOT/workloads/clusters/h200-128node-ndr.yaml" "$ROOT/workloads/clusters/h100-128node-ndr.yaml")
MODEL=$ROOT/workloads/models/gpt3-175b.yaml

[[ -x $BIN ]] || { echo "plan_speed: no $BIN (build the overlapsim target first)" >&2; exit 1; }
command -v /usr/bin/time >/dev/null || { echo "plan_speed: needs /usr/bin/time (Debian: time)" >&2; exit 1; }

# Groups: node counts (powers of two in a range, or a list) times clusters.
node_counts=0
IFS=, read -ra items <<<"$NODES"
for item in "${items[@]}"; do
  if [[ $item == *:* ]]; then
    for ((v = 1; v <= ${item#*:}; v *= 2)); do ((v >= ${item%%:*})) && node_counts=$((node_counts + 1)); done
  else
    node_counts=$((node_counts + 1))
  fi
done
groups=$((node_counts * ${#CLUSTERS[@]}))
designs=$("$BIN" plan --help | sed -n 's/.*--designs [^ ]* *\([a-z_,-]*\) or all.*/\1/p' | tr ',' '\n' | grep -c .)
top=$(((POINTS + groups * designs - 1) / (groups * designs)))
echo "plan_speed: $groups groups x $designs designs, --simulate-top $top" >&2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root_flag=()
[[ $(id -u) -eq 0 ]] && root_flag=(--allow-run-as-root)

rows=()
first=""
for mode in $MODES; do
  case $mode in
    threads*) launch=(); ranks=1; threads=${mode#threads} ;;
    mpi*) ranks=${mode#mpi}; threads=1
      command -v mpirun >/dev/null || { echo "plan_speed: $mode skipped: no mpirun" >&2; continue; }
      launch=(mpirun -np "$ranks" --oversubscribe "${root_flag[@]}") ;;
    *) echo "plan_speed: unknown mode $mode" >&2; exit 1 ;;
  esac
  out=$work/$mode
  load=$(cut -d' ' -f1 /proc/loadavg)
  args=(plan -w "$MODEL" -c "${CLUSTERS[0]}" -c "${CLUSTERS[1]}" --nodes "$NODES" --designs all
        --simulate-top "$top" --threads "$threads" --out "$out" ${PLAN_SPEED_ARGS:-})
  (cd "$ROOT" && /usr/bin/time -f "%e %U %S" -o "$work/$mode.time" "${launch[@]}" "$BIN" "${args[@]}" \
    >"$work/$mode.log" 2>&1) || { cat "$work/$mode.log" >&2; exit 1; }
  read -r wall user sys <"$work/$mode.time"
  read -r configs points < <(python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['counts']; print(c['simulated'], c['runs'])" "$out/results.json")
  if [[ -n ${PLAN_SPEED_RESULTS:-} ]]; then
    mkdir -p "$PLAN_SPEED_RESULTS"
    cp "$out/results.json" "$PLAN_SPEED_RESULTS/$mode.json"
  fi
  same=yes
  if [[ -z $first ]]; then first=$out/results.json; else cmp -s "$first" "$out/results.json" || same=no; fi
  rows+=("$(awk -v m="$mode" -v r="$ranks" -v t="$threads" -v c="$configs" -v p="$points" \
    -v w="$wall" -v u="$user" -v s="$sys" -v l="$load" -v same="$same" 'BEGIN {
      printf "%s,%d,%d,%d,%d,%.1f,%.1f,%.1f,%.2f,%s,%s", m, r, t, c, p, w, u + s,
        w * 1000 / p, (u + s) / p, l, same }')")
  echo "plan_speed: ${rows[-1]}" >&2
done

header=mode,mpi_ranks,threads_per_rank,configurations,points,wall_s,cpu_s,wall_s_per_1000_points,cpu_s_per_point,load_1min,same_results
mkdir -p "$(dirname "$CSV")"
{ echo "$header"; printf '%s\n' "${rows[@]}"; } >"$CSV.tmp"
mv "$CSV.tmp" "$CSV"
cat "$CSV"
