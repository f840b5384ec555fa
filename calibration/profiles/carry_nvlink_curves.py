#!/usr/bin/env python3
"""Carries the H200's measured NVLink collective curves into an H100 profile.

The H100 SXM5 and the H200 are the same GH100 die (132 SMs) on the same NVLink 4 fabric
through third-generation NVSwitch (18 links, 450 GB/s a direction); NCCL's collectives
inside a host run on that fabric with the SMs' copy and reduction kernels, so the curves
measured on 2, 4 and 8 H200s stand for the H100's until an H100 is measured (docs/
calibration.md, "NVLink collectives on the H100"). Each carried number is marked
`source: assumed` and its citation says where it was measured.

  carry_nvlink_curves.py FROM.yaml TO.yaml

replaces TO's `collectives:` block with FROM's (comments included), rewritten so, and
writes TO atomically. Standard library only: the blocks are copied as text, keeping the
fitted profile's layout and comments.
"""
import os
import re
import sys
import tempfile

WHY = ("taken for the H100 SXM5: the same GH100 die (132 SMs) and NVLink 4 through "
       "third-generation NVSwitch, 18 links at 450 GB/s a direction (NVIDIA H100 and H200 "
       "datasheets); measured on H200 [carried from {src} by "
       "calibration/profiles/carry_nvlink_curves.py]")


def fail(message):
    print("carry_nvlink_curves.py: " + message, file=sys.stderr)
    sys.exit(2)


def block(lines, start_key, path):
    """Index range [begin, end) of the top-level key `start_key:` and its indented body."""
    begin = next((i for i, l in enumerate(lines) if l.startswith(start_key + ":")), None)
    if begin is None:
        fail("{}: {}: missing (expected a top-level {} key)".format(path, start_key, start_key))
    end = begin + 1
    while end < len(lines) and (lines[end].startswith((" ", "#")) or not lines[end].strip()):
        end += 1
    # Comments just above the next top-level key belong to it, not to this block.
    while end > begin + 1 and lines[end - 1].startswith("#"):
        end -= 1
    return begin, end


def rewrite(line, why):
    line = line.replace("source: measured", "source: assumed")
    # citation: "..." -> citation: "...; taken for the H100 ..."
    return re.sub(r'citation: "((?:[^"\\]|\\.)*)"',
                  lambda m: 'citation: "{}; {}"'.format(m.group(1), why), line)


def main():
    if len(sys.argv) != 3:
        fail("usage: carry_nvlink_curves.py FROM.yaml TO.yaml")
    src, dst = sys.argv[1], sys.argv[2]
    texts = []
    for path in (src, dst):
        try:
            with open(path) as f:
                texts.append(f.read().split("\n"))
        except OSError as e:
            fail("{}: cannot read ({})".format(path, e.strerror))
    from_lines, to_lines = texts
    fb, fe = block(from_lines, "collectives", src)
    tb, te = block(to_lines, "collectives", dst)
    if not any(l.strip().startswith("- op:") for l in from_lines[fb:fe]):
        fail("{}: collectives: no curve (expected a fitted profile's curves)".format(src))
    why = WHY.format(src=os.path.relpath(src))
    body = [rewrite(l, why) for l in from_lines[fb:fe]]
    out = to_lines[:tb] + body + to_lines[te:]
    d = os.path.dirname(os.path.abspath(dst))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".carry_")
    try:
        with os.fdopen(fd, "w") as f:
            f.write("\n".join(out))
        os.replace(tmp, dst)
    except BaseException:
        os.unlink(tmp)
        raise


if __name__ == "__main__":
    main()
