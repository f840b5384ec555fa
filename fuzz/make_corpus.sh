#!/usr/bin/env bash
# Rebuilds the seed corpus in fuzz/corpus/ from the shipped inputs: YAML with its comment
# lines and blank lines dropped (the fuzzers mutate keys and values, not prose), CSVs cut to
# their header and first rows, and a few hand-written edge cases. Run from anywhere;
# deterministic, so a rerun with unchanged inputs leaves the corpus byte for byte.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out=fuzz/corpus
rm -rf "$out"
mkdir -p "$out"/{cluster_fuzz,model_fuzz,profile_fuzz,suite_fuzz,csv_fuzz,units_fuzz}

strip_yaml() { grep -v -E '^[[:space:]]*(#|$)' "$1" || true; }

for f in workloads/clusters/*.yaml; do strip_yaml "$f" >"$out/cluster_fuzz/$(basename "$f")"; done
for f in workloads/models/*.yaml; do strip_yaml "$f" >"$out/model_fuzz/$(basename "$f")"; done
for f in calibration/suites/*.yaml; do strip_yaml "$f" >"$out/suite_fuzz/$(basename "$f")"; done
# The small profiles whole; the fitted ones are long tables of the same keys.
for f in calibration/profiles/datasheet-{a100,h100,h200}.yaml calibration/profiles/h100-1gpu.yaml; do
  strip_yaml "$f" >"$out/profile_fuzz/$(basename "$f")"
done

# Each measurement CSV layout once (with and without calibrate's ctas/case columns).
csv_seed() { head -n 9 "$1" >"$out/csv_fuzz/$2.csv"; }
csv_seed calibration/data/h200x2-session1/tilewise.csv tilewise
csv_seed calibration/data/h200x2-session1/heldout.csv heldout
csv_seed calibration/data/h200x4/heldout.csv h200x4-heldout
csv_seed calibration/data/h200x1-dtypes/calibration.csv dtypes
printf 'a,b,c\r\n"x,1","say ""hi""",3\r\n\r\n4,5,6\r\n' >"$out/csv_fuzz/quoted-crlf.csv"

i=0
for u in 4096 64KiB 1.5GiB 2GB 1e19 400Gbps 50GBps 450GB/s 25us 1.5ms 2e-6 989TFLOPS 9.89e14 \
         700W 0.7kW -1 0x10 nan inf "1 GiB" 18446744073709551616B; do
  printf '%s' "$u" >"$out/units_fuzz/seed$((i++))"
done
