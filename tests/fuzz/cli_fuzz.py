#!/usr/bin/env python3
"""Fuzzes the overlapsim CLI as a new user would: mutants of the shipped YAML and CSV
files, integer-overflow values in files and options, and misused command lines.

Each case runs in a fresh folder (its inputs under in/, its outputs under out/) and is
classified against the project's error contract (exit 2, one line naming the file,
nothing written):

  accepted          exit 0
  clean_exit2       exit 2, one line; for a mutated file, the line names that file
  other_exit2       exit 2 but several lines, or no file name
  internal_error    exit 1 ("internal error")
  crash             killed by a signal, or a sanitizer report
  hang              still running after --timeout seconds
  bad_alloc         std::bad_alloc, or over the memory limit (--memory-mb)
  files_left        a failing run left a file in its folder, or any run left a *.tmp*
  other_exit        any other exit code

Deterministic: case i of seed s is the same mutant and command line on every run, whatever
--jobs is. Usage:

  tests/fuzz/cli_fuzz.py --bin build/app/overlapsim --count 10000 --seed 1 --jobs 2 \
      --findings /tmp/cli-fuzz

Exit status: 0 when every case is accepted or clean_exit2, 1 otherwise, 2 on bad usage.
"""

import argparse
import collections
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CLASSES = ["accepted", "clean_exit2", "other_exit2", "internal_error", "crash", "hang",
           "bad_alloc", "files_left", "other_exit"]
CLEAN = {"accepted", "clean_exit2"}

# Shipped inputs by kind. The command for each kind is cheap on valid input: a mutant
# that loads still runs the whole command, so these keep each case in the seconds.
CLUSTERS = ["a100-hdr", "h100-128node-ndr", "h200-128node-ndr", "h200-128node-ndr-oversub2",
            "h200-2048node-ndr", "h200-8gpu", "h200x2-nvlink", "ring-64-50GBps",
            "rtx4090-pcie-8gpu", "switch-1024-50GBps"]
# Models with the global batch that keeps a sequential-design step on 1,024 GPUs well under
# a second of CPU (None: as shipped); the smallest the model's parallelism divides.
MODELS = {"deepseek-v3": 256, "dlrm-dcnv2": None, "gpt3-175b": 256, "llama3-405b": 256,
          "llama3-70b": 256, "mixtral-8x7b": 1024}
PROFILES = ["datasheet-a100", "datasheet-h100", "datasheet-h200", "h100-1gpu", "h200-1gpu",
            "h200-nvlink"]
SUITES = ["default", "gemm-dtypes-1gpu", "gemm-fp8-block-1gpu", "gemm-offgrid-1gpu",
          "nvswitch-4gpu-tilewise", "nvswitch-4gpu", "nvswitch-8gpu"]
# Measurement CSVs with the cluster they were measured on (validate's --cluster).
CSVS = {"calibration/data/h200x2-session1/kernels_i.csv": "workloads/clusters/h200x2-nvlink.yaml",
        "calibration/data/h200x2-session1/heldout.csv": "workloads/clusters/h200x2-nvlink.yaml",
        "calibration/data/h200x4/heldout.csv": "workloads/clusters/h200-8gpu.yaml",
        "calibration/data/h200x1-dtypes/heldout.csv": "workloads/clusters/h200x2-nvlink.yaml"}
SMALL_CSV = "calibration/data/h200x2-session1/kernels_i.csv"
NVLINK_PROFILE = "calibration/profiles/h200-nvlink.yaml"
NVLINK_CLUSTER = "workloads/clusters/h200x2-nvlink.yaml"
MODEL_CLUSTER = "workloads/clusters/h200-128node-ndr.yaml"

# Values a user (or a typo) puts where a number, a string or a map belongs.
VALUES = ["0", "-1", "1", "1.5", "-0", "2147483647", "2147483648", "4294967295",
          "4294967296", "4294967297", "9223372036854775807", "9223372036854775808",
          "18446744073709551616", "-9223372036854775809", "999999999999999999999999999999",
          "1e19", "1e308", "1e309", "-1e308", "1e-320", "nan", ".nan", ".inf", "-.inf",
          "0x7fffffff", "0o17", "1_000", "65536", "1e6", "1GiB", "1e19B", "400Gbps", "25us",
          "abc", "\"\"", "~", "null", "[]", "{}", "[1, 2]", "{a: 1}", "yes", "true", "&a 1",
          "*a", "!!binary aGVsbG8=", "\"\\x1b[31mred\\x1b[0m\"", "\"a\\nb\"", "\"\\u00e9\"",
          "\"\\ud800\"", "'unterminated", "\"unterminated", "|\n  block", "> folded",
          "- item", ": colon", "# comment", "\t1"]
INT_EDGES = ["0", "-1", "2147483647", "2147483648", "-2147483649", "4294967295",
             "4294967296", "4294967297", "9223372036854775807", "9223372036854775808",
             "-9223372036854775808", "-9223372036854775809", "18446744073709551615",
             "18446744073709551616", "1e19", "1e30", "1e308", "65536", "1000000", "1e9",
             "99999999999999999999"]
RAW_BYTES = [b"\xff", b"\xfe\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x00", b"\x1b[2J",
             b"\r", b"\n", b"\t", b"\xef\xbb\xbf", b"\xf4\x90\x80\x80", b"\x80", b"\\"]

KEY_LINE = re.compile(rb"^(\s*(?:- )?)([A-Za-z_][\w.\-]*)(\s*:\s*)(.*)$")
NUMBER = re.compile(rb"^-?[0-9][0-9_.eE+\-]*[A-Za-z/]*$")


def read(path):
  with open(os.path.join(ROOT, path), "rb") as f:
    return f.read()


def base_model(name):
  text = read(f"workloads/models/{name}.yaml")
  batch = MODELS[name]
  if batch is None:
    return text
  return re.sub(rb"(?m)^(\s*global_batch:\s*)[0-9]+", rb"\g<1>" + str(batch).encode(), text)


def base_cluster(name):
  # Cluster files name their profile relative to the repository; the mutant lives elsewhere.
  text = read(f"workloads/clusters/{name}.yaml")
  return re.sub(rb"(profile:\s*)(calibration/)", rb"\1" + ROOT.encode() + rb"/\2", text)


# ---- mutations of a file's bytes ------------------------------------------------------

def lines_of(text):
  return text.split(b"\n")


def key_lines(lines):
  return [i for i, ln in enumerate(lines) if KEY_LINE.match(ln)]


def set_value(rng, text, values):
  lines = lines_of(text)
  idx = key_lines(lines)
  if not idx:
    return text + b"\n" + rng.choice(values).encode()
  i = rng.choice(idx)
  m = KEY_LINE.match(lines[i])
  lines[i] = m.group(1) + m.group(2) + m.group(3) + rng.choice(values).encode()
  return b"\n".join(lines)


def set_number(rng, text):
  lines = lines_of(text)
  idx = [i for i in key_lines(lines) if NUMBER.match(KEY_LINE.match(lines[i]).group(4).strip())]
  if not idx:
    return set_value(rng, text, INT_EDGES)
  i = rng.choice(idx)
  m = KEY_LINE.match(lines[i])
  lines[i] = m.group(1) + m.group(2) + m.group(3) + rng.choice(INT_EDGES).encode()
  return b"\n".join(lines)


def dup_key(rng, text):
  lines = lines_of(text)
  idx = key_lines(lines)
  if not idx:
    return text
  i = rng.choice(idx)
  m = KEY_LINE.match(lines[i])
  indent = m.group(1).replace(b"- ", b"  ")
  copy = indent + m.group(2) + m.group(3) + (m.group(4) if rng.random() < 0.5
                                             else rng.choice(VALUES).encode())
  lines.insert(i + 1, copy)
  return b"\n".join(lines)


def line_edit(rng, text):
  lines = lines_of(text)
  if len(lines) < 2:
    return text + text
  i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
  op = rng.randrange(5)
  if op == 0:
    del lines[i]
  elif op == 1:
    lines.insert(i, lines[j])
  elif op == 2:
    lines[i], lines[j] = lines[j], lines[i]
  elif op == 3:
    lines[i] = b" " * rng.choice([1, 2, 3, 4]) + lines[i]
  else:
    lines[i] = lines[i].lstrip()
  return b"\n".join(lines)


def structural(rng, text):
  op = rng.randrange(8)
  if op == 0:
    return text + b"\n---\n" + text[: rng.randrange(len(text) + 1)]
  if op == 1:
    return b"? [a, b]\n: 1\n" + text if rng.random() < 0.5 else text + b"\n? {x: 1}\n: 2\n"
  if op == 2:
    return text + b"\nunknown_key_" + str(rng.randrange(100)).encode() + b": 1\n"
  if op == 3:
    depth = rng.choice([100, 1000, 20000])
    return text + b"\nnested: " + b"[" * depth + b"]" * depth + b"\n"
  if op == 4:
    return b""
  if op == 5:
    return rng.choice([b"~", b"[]", b"{}", b"- 1\n- 2", b"\"just a string\"", b"---", b"..."])
  if op == 6:
    return text + b"\nanchor: &x [*x]\n"
  return text.replace(b": ", b": !!str ", 1)


def byte_edit(rng, text):
  data = bytearray(text)
  for _ in range(rng.randint(1, 4)):
    op = rng.randrange(4)
    pos = rng.randrange(len(data) + 1)
    if op == 0 and data:
      data[min(pos, len(data) - 1)] = rng.randrange(256)
    elif op == 1:
      data[pos:pos] = rng.choice(RAW_BYTES)
    elif op == 2:
      del data[pos:pos + rng.randint(1, 64)]
    else:
      data = data[:pos]
  return bytes(data)


def mutate_yaml(rng, text):
  ops = [set_value, set_value, dup_key, line_edit, structural, byte_edit]
  op = rng.choice(ops)
  return op(rng, text, VALUES) if op is set_value else op(rng, text)


def mutate_csv(rng, text):
  lines = lines_of(text)[:rng.choice([3, 10, 40])]
  if len(lines) < 2:
    return byte_edit(rng, text)
  op = rng.randrange(7)
  r = rng.randrange(len(lines))
  fields = lines[r].split(b",")
  c = rng.randrange(len(fields))
  if op == 0:
    fields[c] = rng.choice(VALUES + INT_EDGES).encode()
  elif op == 1:
    del fields[c]
  elif op == 2:
    fields.insert(c, rng.choice(VALUES).encode())
  elif op == 3:
    fields[c] = b"\"" + fields[c]
  elif op == 4:
    fields[c] = fields[c] + rng.choice(RAW_BYTES)
  elif op == 5:
    lines.insert(r, lines[r])
  else:
    return byte_edit(rng, b"\n".join(lines))
  lines[r] = b",".join(fields)
  return b"\r\n".join(lines) if rng.random() < 0.1 else b"\n".join(lines)


def mutate_csv_number(rng, text):
  lines = lines_of(text)[:10]
  r = rng.randrange(1, max(2, len(lines)))
  if r >= len(lines):
    return text
  fields = lines[r].split(b",")
  numeric = [i for i, f in enumerate(fields) if NUMBER.match(f)] or [0]
  fields[rng.choice(numeric)] = rng.choice(INT_EDGES).encode()
  lines[r] = b",".join(fields)
  return b"\n".join(lines)


# ---- cases ------------------------------------------------------------------------------

class Case:
  def __init__(self, index, category, kind, argv, files, named=None):
    self.index = index
    self.category = category  # mutant | overflow | cli
    self.kind = kind          # what was mutated or misused
    self.argv = argv          # with {in} and {out} placeholders for the case folder
    self.files = files        # name under in/ -> bytes
    self.named = named        # the file name a clean message must contain


def file_case(index, rng, category):
  kind = rng.choices(["model", "cluster", "profile", "suite", "csv"], [3, 3, 2, 1, 3])[0]
  if kind == "csv":
    src = rng.choice(sorted(CSVS))
    text = read(src)
    data = mutate_csv_number(rng, text) if category == "overflow" else mutate_csv(rng, text)
    return Case(index, category, kind,
                ["validate", "--profile", f"{ROOT}/{NVLINK_PROFILE}", "--measurements",
                 "{in}/m.csv", "--cluster", f"{ROOT}/{CSVS[src]}", "--output",
                 "{out}/report.txt"], {"m.csv": data}, "m.csv")
  if kind == "model":
    text = base_model(rng.choice(sorted(MODELS)))
    argv = ["simulate", "-w", "{in}/model.yaml", "-c", f"{ROOT}/{MODEL_CLUSTER}",
            "--design", "sequential", "--no-timing", "-o", "{out}/result.txt"]
    name = "model.yaml"
  elif kind == "cluster":
    text = base_cluster(rng.choice(CLUSTERS))
    argv = ["collective", "--op", rng.choice(["allreduce", "allgather", "alltoall"]),
            "--bytes", "64MiB", "--cluster", "{in}/cluster.yaml", "--no-timing",
            "--output", "{out}/result.txt"]
    name = "cluster.yaml"
  elif kind == "profile":
    text = read(f"calibration/profiles/{rng.choice(PROFILES)}.yaml")
    argv = ["validate", "--profile", "{in}/profile.yaml", "--measurements",
            f"{ROOT}/{SMALL_CSV}", "--cluster", f"{ROOT}/{NVLINK_CLUSTER}", "--output",
            "{out}/report.txt"]
    name = "profile.yaml"
  else:
    text = read(f"calibration/suites/{rng.choice(SUITES)}.yaml")
    argv = ["calibrate", "--dry-run", "--suite", "{in}/suite.yaml", "--out", "{out}/data"]
    name = "suite.yaml"
  data = set_number(rng, text) if category == "overflow" else mutate_yaml(rng, text)
  return Case(index, category, kind, argv, {name: data}, name)


def overflow_option_case(index, rng):
  c8 = f"{ROOT}/workloads/clusters/h200-8gpu.yaml"
  v = rng.choice(INT_EDGES + ["1e19", "1e19B", "16EiB", "-1GiB", "0"])
  model = ["simulate", "-w", f"{ROOT}/workloads/models/llama3-70b.yaml", "-c",
           f"{ROOT}/{MODEL_CLUSTER}", "--no-timing", "--design", "sequential",
           "-o", "{out}/r.txt"]
  coll = ["collective", "--op", "allreduce", "--cluster", c8,
          "--no-timing", "--output", "{out}/r.txt"]
  choices = [
      coll + ["--bytes", v], coll + ["--bytes", "1MiB", "--ranks", v],
      coll + ["--bytes", "1MiB", "--nodes", v], coll + ["--bytes", "1MiB", "--chunk", v],
      coll + ["--bytes", "1MiB", "--root", v], model + ["--tp", v], model + ["--pp", v],
      model + ["--dp", v], model + ["--trace-ranks", v], model + ["--max-memory", v],
      ["validate", "--profile", f"{ROOT}/{NVLINK_PROFILE}", "--measurements",
       f"{ROOT}/{SMALL_CSV}", "--cluster", f"{ROOT}/{NVLINK_CLUSTER}", "--worst", v],
      ["calibrate", "--dry-run", "--suite", f"{ROOT}/calibration/suites/default.yaml",
       "--out", "{out}/d", "--gpus", v],
  ]
  return Case(index, "overflow", "option", rng.choice(choices), {})


def cli_case(index, rng):
  m = f"{ROOT}/workloads/models/llama3-70b.yaml"
  c = f"{ROOT}/{MODEL_CLUSTER}"
  c8 = f"{ROOT}/workloads/clusters/h200-8gpu.yaml"
  weird = rng.choice(["", " ", "-", "--", "\x1b[31m", "a\nb", "\xe9", "%s%n", "../../..", "."])
  choices = [
      [], ["bogus"], ["simulate"], ["simulate", "-w", m], ["simulate", "-c", c],
      ["simulate", "-w", ROOT, "-c", c], ["simulate", "-w", m, "-c", f"{ROOT}/workloads"],
      ["simulate", "-w", "/nonexistent.yaml", "-c", c], ["simulate", "-w", "/dev/null", "-c", c],
      ["simulate", "-w", m, "-c", c, "--design", weird], ["simulate", "-w", m, "-c", c,
                                                          "--format", "xml"],
      ["simulate", "-w", m, "-c", c, "-o", "/nonexistent-dir/r.txt", "--no-timing"],
      ["simulate", "-w", m, "-c", c, "-o", "/proc/version", "--no-timing"],
      ["simulate", "-w", m, "-c", c, "--trace", "/nonexistent-dir/t.json", "--no-timing"],
      ["simulate", "-w", m, "-c", c, "--tp", "0"], ["simulate", "-w", m, "-c", c, "--tp"],
      ["simulate", "-w", m, "-c", c, "--profile", f"{ROOT}/calibration"],
      ["simulate", "-w", m, "-c", c, "--images", weird], ["simulate", "-w", m, "-c", c,
                                                          "--gemm-clock", weird],
      ["simulate", "-w", m, "-w", m, "-c", c, "--no-timing", "--design", "sequential",
       "-o", "{out}/r.txt"],
      ["collective"], ["collective", "--op", weird, "--bytes", "1MiB", "--cluster", c8],
      ["collective", "--op", "allreduce", "--bytes", weird, "--cluster", c8],
      ["collective", "--op", "allreduce", "--bytes", "1MiB", "--cluster", c8, "--algo", weird],
      ["collective", "--op", "allreduce", "--bytes", "1MiB", "--cluster", c8, "--output", "{out}"],
      ["collective", "--op", "sendrecv", "--bytes", "1MiB", "--cluster", c8, "--peer", "0"],
      ["fit"], ["fit", "/nonexistent", "--out", "{out}/p.yaml"],
      ["fit", f"{ROOT}/calibration/data/h200x4", "--out", "/nonexistent-dir/p.yaml"],
      ["fit", ROOT, "--out", "{out}/p.yaml"],
      ["validate"], ["validate", "--profile", f"{ROOT}/{NVLINK_PROFILE}", "--measurements",
                     f"{ROOT}/calibration"],
      ["validate", "--profile", f"{ROOT}/{NVLINK_PROFILE}", "--measurements",
       f"{ROOT}/{SMALL_CSV}", "--cluster", f"{ROOT}/{NVLINK_CLUSTER}", "--format", weird],
      ["validate-steps", "/nonexistent"], ["validate-steps", f"{ROOT}/workloads/models"],
      ["validate-collectives", "/nonexistent"],
      ["plan", "-w", m, "-c", c, "--out", "/proc/plan"],
      ["plan", "-w", m, "-c", c, "--out", "{out}/plan", "--nodes", weird],
      ["plan", "-w", m, "-c", c, "--out", "{out}/plan", "--threads", "0", "--nodes", "0"],
      ["calibrate", "--dry-run", "--suite", ROOT, "--out", "{out}/d"],
      ["calibrate", "--dry-run", "--suite", f"{ROOT}/calibration/suites/default.yaml",
       "--out", "/proc/cal"],
      ["simulate", "--no-such-flag"], ["--version"], ["--help"], ["simulate", "--help"],
  ]
  return Case(index, "cli", "argv", rng.choice(choices), {})


def make_case(seed, index):
  rng = random.Random(seed * 1_000_003 + index)
  r = rng.random()
  # The mix: about 77% file mutants, 17% integer overflows, 6% CLI misuses.
  if r < 0.77:
    return file_case(index, rng, "mutant")
  if r < 0.94:
    return file_case(index, rng, "overflow") if rng.random() < 0.6 else \
        overflow_option_case(index, rng)
  return cli_case(index, rng)


# ---- running and classifying ------------------------------------------------------------

def classify(case, proc_rc, stderr, timed_out, folder, out_dir):
  if timed_out:
    return "hang"
  err = stderr.decode("utf-8", "replace")
  if "AddressSanitizer" in err or "runtime error:" in err or "LeakSanitizer" in err:
    if "hard rss limit" in err or "allocation-size-too-big" in err or "out of memory" in err:
      return "bad_alloc"
    return "crash"
  if "bad_alloc" in err:
    return "bad_alloc"
  if proc_rc < 0 or proc_rc >= 128:
    return "crash"
  left = []
  for d, _, names in os.walk(folder):
    for n in names:
      p = os.path.join(d, n)
      if p.startswith(os.path.join(folder, "in") + os.sep):
        continue
      if proc_rc != 0 or ".tmp" in n:
        left.append(p)
  if left:
    return "files_left"
  if proc_rc == 0:
    return "accepted"
  if proc_rc == 1:
    return "internal_error"
  if proc_rc != 2:
    return "other_exit"
  lines = [ln for ln in err.split("\n") if ln.strip()]
  if len(lines) != 1:
    return "other_exit2"
  if case.named and case.named not in lines[0]:
    return "other_exit2"
  return "clean_exit2"


def run_case(case, binary, timeout_s, memory_mb, sanitized):
  folder = tempfile.mkdtemp(prefix=f"cli-fuzz-{case.index}-")
  try:
    in_dir, out_dir = os.path.join(folder, "in"), os.path.join(folder, "out")
    os.mkdir(in_dir)
    os.mkdir(out_dir)
    for name, data in case.files.items():
      with open(os.path.join(in_dir, name), "wb") as f:
        f.write(data)
    argv = [a.replace("{in}", in_dir).replace("{out}", out_dir) for a in case.argv]
    env = dict(os.environ, LC_ALL="C")
    if sanitized:
      env["ASAN_OPTIONS"] = (f"hard_rss_limit_mb={memory_mb}:allocator_may_return_null=1:"
                             "detect_leaks=0:protect_shadow_gap=0")
      env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"

    def limit():
      os.setsid()
      if not sanitized:  # ASan reserves terabytes of address space; it gets an RSS limit
        b = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (b, b))

    proc = subprocess.Popen([binary] + argv, cwd=folder, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                            preexec_fn=limit)
    timed_out = False
    try:
      _, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
      os.killpg(proc.pid, 9)
      _, stderr = proc.communicate()
      timed_out = True
    cls = classify(case, proc.returncode, stderr, timed_out, folder, out_dir)
    return cls, proc.returncode, argv, stderr
  finally:
    shutil.rmtree(folder, ignore_errors=True)


def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--bin", default=os.path.join(ROOT, "build", "app", "overlapsim"))
  ap.add_argument("--count", type=int, default=200)
  ap.add_argument("--seed", type=int, default=1)
  ap.add_argument("--first", type=int, default=0, help="index of the first case")
  ap.add_argument("--jobs", type=int, default=1)
  ap.add_argument("--timeout", type=float, default=60, help="seconds before a case is a hang")
  ap.add_argument("--memory-mb", type=int, default=4096, help="memory limit of one case")
  ap.add_argument("--sanitized", action="store_true",
                  help="the binary is an ASan build (RSS limit instead of an address-space one)")
  ap.add_argument("--findings", help="folder to save each non-clean case in (input + command)")
  ap.add_argument("--json", help="write the counts here as JSON")
  args = ap.parse_args()
  args.bin = os.path.abspath(args.bin)  # each case runs in its own folder
  if not os.access(args.bin, os.X_OK):
    print(f"cli_fuzz.py: {args.bin}: not an executable (expected --bin build/app/overlapsim)",
          file=sys.stderr)
    return 2

  counts = collections.Counter()
  by_category = collections.defaultdict(collections.Counter)
  lock = threading.Lock()
  done = [0]

  def one(i):
    case = make_case(args.seed, i)
    cls, rc, argv, stderr = run_case(case, args.bin, args.timeout, args.memory_mb,
                                     args.sanitized)
    with lock:
      counts[cls] += 1
      by_category[case.category][cls] += 1
      done[0] += 1
      if done[0] % 100 == 0:
        print(f"cli_fuzz: {done[0]}/{args.count} {dict(sorted(counts.items()))}",
              file=sys.stderr, flush=True)
      if cls not in CLEAN and args.findings:
        d = os.path.join(args.findings, f"{cls}-{i:06d}")
        os.makedirs(d, exist_ok=True)
        for name, data in case.files.items():
          with open(os.path.join(d, name), "wb") as f:
            f.write(data)
        with open(os.path.join(d, "case.txt"), "w", encoding="utf-8",
                  errors="backslashreplace") as f:
          f.write(f"index {i} seed {args.seed} category {case.category} kind {case.kind}\n")
          f.write(f"exit {rc}\nargv {json.dumps(argv)}\n--- stderr (first 4000 bytes)\n")
          f.write(stderr[:4000].decode("utf-8", "backslashreplace"))

  with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
    list(pool.map(one, range(args.first, args.first + args.count)))

  print(f"cli_fuzz: seed {args.seed}, cases {args.first}..{args.first + args.count - 1}")
  print(f"{'category':<10}" + "".join(f"{c:>15}" for c in CLASSES) + f"{'total':>8}")
  for cat in ["mutant", "overflow", "cli"]:
    row = by_category[cat]
    print(f"{cat:<10}" + "".join(f"{row[c]:>15}" for c in CLASSES) + f"{sum(row.values()):>8}")
  print(f"{'all':<10}" + "".join(f"{counts[c]:>15}" for c in CLASSES) +
        f"{sum(counts.values()):>8}")
  if args.json:
    with open(args.json, "w") as f:
      json.dump({"seed": args.seed, "first": args.first, "count": args.count,
                 "counts": {c: counts[c] for c in CLASSES},
                 "by_category": {k: dict(v) for k, v in by_category.items()}}, f, indent=1)
  bad = sum(counts[c] for c in CLASSES if c not in CLEAN)
  return 1 if bad else 0


if __name__ == "__main__":
  sys.exit(main())
