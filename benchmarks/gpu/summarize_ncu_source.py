#!/usr/bin/env python3
"""Summarises ncu source-page CSVs (`ncu --section SourceCounters --section WarpStateStats
--page source --print-source sass --csv`, gzipped or not): per file, the stall samples by
reason, by SASS opcode (with executed instruction counts), and the instructions with the
most samples. Usage: summarize_ncu_source.py FILE [FILE...] [--top N]"""
import collections
import csv
import gzip
import io
import sys


def rows_of(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        text = f.read()
    table = list(csv.reader(io.StringIO(text[text.index('"Address"'):])))
    header = table[0]
    return header, [dict(zip(header, r)) for r in table[1:] if len(r) == len(header) and r[0] != "Address"]


def count(row, key):
    return int(row.get(key) or 0)


def opcode(source):
    tokens = source.split()
    if tokens and tokens[0].startswith("@"):
        tokens = tokens[1:]
    return tokens[0].split(".")[0] if tokens else ""


def summarize(path, top):
    header, rows = rows_of(path)
    reasons = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
    total = sum(count(r, "Warp Stall Sampling (All Samples)") for r in rows)
    executed = sum(count(r, "Instructions Executed") for r in rows)
    print(f"== {path}: {executed} instructions executed, {total} stall samples")
    by_reason = collections.Counter()
    by_op, ex_op = collections.Counter(), collections.Counter()
    for r in rows:
        for c in reasons:
            by_reason[c[len("stall_"):]] += count(r, c)
        op = opcode(r["Source"])
        by_op[op] += count(r, "Warp Stall Sampling (All Samples)")
        ex_op[op] += count(r, "Instructions Executed")
    print("by reason: " + ", ".join(f"{k} {v / total * 100:.1f}%" for k, v in by_reason.most_common(10)))
    print("by opcode (samples, executed): " +
          ", ".join(f"{k} {v} ({ex_op[k]})" for k, v in by_op.most_common(20)))
    print(f"top {top} instructions (share of samples, address, executed, SASS, main reasons):")
    for r in sorted(rows, key=lambda r: -count(r, "Warp Stall Sampling (All Samples)"))[:top]:
        s = count(r, "Warp Stall Sampling (All Samples)")
        main = sorted(((count(r, c), c[len("stall_"):]) for c in reasons), reverse=True)[:2]
        print(f"  {s / total * 100:5.1f}% {r['Address'][-5:]} {count(r, 'Instructions Executed'):>9d} "
              f"{r['Source'].strip()[:64]:64s} " + " ".join(f"{n}:{v}" for v, n in main if v))
    print()


def main(argv):
    top = 20
    if "--top" in argv:
        i = argv.index("--top")
        top = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    for path in argv:
        summarize(path, top)


if __name__ == "__main__":
    main(sys.argv[1:])
