#!/usr/bin/env bash
# One device call for array redistribution (docs/redistribution.md): the PyTorch peer
# (benchmarks/peers/torch_redistribute.py) on 2 GPUs and on 4 GPUs, timing for each layout
# pair DTensor.redistribute, the plan `overlapsim redistribute` synthesises (executed with
# torch.distributed collectives) and the naive all-gather-then-slice, all three in the same
# process and checked against the target. Needs PyTorch with CUDA on the device; no build.
# Everything ends up in $OUT/redistribution.tar.gz.
#   bash benchmarks/gpu/run_redistribution.sh                      # on the device (4+ GPUs)
#   bash benchmarks/gpu/run_redistribution.sh predict DIR [BIN]    # here: the 2-GPU rows of
#       DIR/r2.csv beside the simulator's prediction (BIN default build/app/overlapsim)
# Step limit: BENCH_TIMEOUT (240 s per rank count).
set -uo pipefail

predict() {
  python3 - "$1" "${2:-build/app/overlapsim}" <<'PY'
import csv, json, statistics, subprocess, sys
d, binary = sys.argv[1], sys.argv[2]
spec = {"S0": 0, "S1": 1}
def layout(p, rank):
    if p == "P": return "[Partial()]"
    if p == "R": return "[Replicate()]"
    return f"[Shard({spec[p]})]"
errs = []
print(f"{'pair':<16} {'measured us':>12} {'predicted us':>13} {'error':>8}  dtensor us  naive us")
rows = list(csv.DictReader(open(f"{d}/r2.csv")))
by = {(r["pair"], r["method"]): r for r in rows}
for (pair, method), r in by.items():
    if method != "synthesised": continue
    j = json.loads(subprocess.run([binary, "redistribute", "--mesh", "x=2", "--shape", r["shape"],
        "--dtype", "bf16", "--from", layout(r["from"], 0), "--to", layout(r["to"], 0),
        "--cluster", "workloads/clusters/h200x2-nvlink.yaml", "--format", "json"],
        capture_output=True, text=True, check=True).stdout)
    pred = j["plans"][0]["time_s"] * 1e6
    meas = float(r["time_us"])
    errs.append(abs(pred - meas) / meas)
    print(f"{pair:<16} {meas:12.1f} {pred:13.1f} {100 * (pred - meas) / meas:7.1f}%  "
          f"{float(by[(pair, 'dtensor')]['time_us']):10.1f} {float(by[(pair, 'naive')]['time_us']):9.1f}")
print(f"median |error| {100 * statistics.median(errs):.1f}% over {len(errs)} pairs")
PY
}

if [[ ${1:-} == predict ]]; then
  predict "${2:?DIR}" "${3:-}"
  exit $?
fi

source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
run_dir="$OUT/redistribution"
mkdir -p "$run_dir"
log="$run_dir/log.txt"
log_machine "python3 -c 'import torch; print(\"torch\", torch.__version__, \"nccl\", torch.cuda.nccl.version())'"
for world in 2 4; do
  gpus="$(nvidia-smi -L | wc -l)"
  if (( gpus < world )); then step "only $gpus GPUs: no $world-rank run"; continue; fi
  step "PyTorch peer on $world GPUs"
  PYTHONUNBUFFERED=1 timeout "${BENCH_TIMEOUT:-240}" torchrun --standalone --nproc-per-node "$world" \
    benchmarks/peers/torch_redistribute.py --output "$run_dir/r$world.csv" \
    >"$run_dir/stdout_w$world.txt" 2>&1
  echo "world $world rc=$?" >>"$log"
  # A run cut short still leaves its rows on stdout.
  [[ -s $run_dir/r$world.csv ]] || grep -E "^(gpu|NVIDIA)" "$run_dir/stdout_w$world.txt" >"$run_dir/r$world.csv"
done
step "done"
cat "$log"
tar -czf "$OUT/redistribution.tar.gz" -C "$OUT" redistribution
