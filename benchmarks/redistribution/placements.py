"""Layouts of benchmarks/redistribution/*pairs.csv in Python, for the PyTorch peers.

The same two notations `overlapsim redistribute` reads (redistribution/layout.hpp), into the
same meaning: per array dimension the mesh axes that split it, major first, and the mesh axes
over which the array is a pending sum.
  JAX:     P('x', None), P(None, ('x','y')), PartitionSpec('x'), P('x', unreduced={'y'})
  DTensor: [Shard(0), Replicate(), Partial()], one placement per mesh axis, in mesh order
A mesh is "x=2,y=2"; devices are numbered row-major over its axes, as DeviceMesh numbers
torch.arange(n).reshape(sizes).

`to_dtensor` gives the DTensor placements of a layout, or raises NotExpressible where the
public placements cannot say it: DTensor splits a dimension sharded over several mesh axes in
mesh-axis order, so a dimension split over ('y', 'x') on a mesh (x, y) has no placement list
(PyTorch's private _StridedShard is not used). Nothing here imports torch, so the unit tests
run without it.
"""
import re
from dataclasses import dataclass, field


class LayoutError(ValueError):
    """A layout, mesh or shape that does not parse or does not fit."""


class NotExpressible(ValueError):
    """A valid layout that DTensor's public placements cannot express."""


@dataclass(frozen=True)
class Mesh:
    names: tuple
    sizes: tuple

    @property
    def devices(self):
        n = 1
        for s in self.sizes:
            n *= s
        return n

    def axis(self, name):
        if name not in self.names:
            raise LayoutError(f"axis '{name}' is not in the mesh {self} (expected one of "
                              f"{', '.join(self.names)})")
        return self.names.index(name)

    def coords(self, device):
        """Device's coordinate per axis (row-major: the last axis varies fastest)."""
        c = []
        for s in reversed(self.sizes):
            c.append(device % s)
            device //= s
        return tuple(reversed(c))

    def __str__(self):
        return ",".join(f"{n}={s}" for n, s in zip(self.names, self.sizes))


@dataclass
class Layout:
    dims: list                      # per array dimension: mesh axis indices, major first
    partial: list = field(default_factory=list)  # mesh axes with a pending sum, ascending


def parse_mesh(text):
    names, sizes = [], []
    for item in text.split(","):
        m = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*=\s*(\d+)\s*", item)
        if not m or int(m.group(2)) < 1:
            raise LayoutError(f"'{text}' is not a mesh (expected name=size joined by commas, "
                              "e.g. x=2,y=2)")
        if m.group(1) in names:
            raise LayoutError(f"mesh '{text}' names axis '{m.group(1)}' twice")
        names.append(m.group(1))
        sizes.append(int(m.group(2)))
    return Mesh(tuple(names), tuple(sizes))


def parse_shape(text):
    try:
        shape = tuple(int(e) for e in text.split("x"))
    except ValueError:
        shape = ()
    if not shape or any(e < 1 for e in shape):
        raise LayoutError(f"'{text}' is not a shape (expected extents >= 1 joined by 'x')")
    return shape


_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z_]\w*)|(?P<num>-?\d+)|'(?P<sq>[^']*)'|"
                    r"\"(?P<dq>[^\"]*)\"|(?P<punct>[()\[\]{},=]))")


def _tokens(text):
    pos, out = 0, []
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if not m:
            raise LayoutError(f"cannot read the layout '{text}' at column {pos + 1}")
        kind = m.lastgroup
        value = m.group(kind)
        out.append(("str" if kind in ("sq", "dq") else kind, value))
        pos = m.end()
    return out


class _Reader:
    def __init__(self, text):
        self.text, self.toks, self.i = text, _tokens(text), 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else ("end", "")

    def next(self):
        t = self.peek()
        self.i += 1
        return t

    def accept(self, punct):
        if self.peek() == ("punct", punct):
            self.i += 1
            return True
        return False

    def expect(self, punct):
        if not self.accept(punct):
            raise LayoutError(f"cannot read the layout '{self.text}' (expected '{punct}' at "
                              f"token {self.i + 1})")


def _read_axes(r, mesh):
    kind, value = r.peek()
    if kind == "punct" and value in "([{":
        close = {"(": ")", "[": "]", "{": "}"}[value]
        r.next()
        axes = []
        while not r.accept(close):
            k, v = r.next()
            if k != "str":
                raise LayoutError(f"'{r.text}': expected a quoted axis, got '{v}'")
            axes.append(mesh.axis(v))
            if not r.accept(","):
                r.expect(close)
                break
        return axes
    if kind == "str":
        r.next()
        return [mesh.axis(value)]
    if (kind, value) == ("name", "None"):
        r.next()
        return []
    raise LayoutError(f"'{r.text}': expected None, a quoted axis or a tuple of axes")


def _partition_spec(r, mesh, rank):
    dims, partial = [], []
    r.expect("(")
    while not r.accept(")"):
        kind, value = r.peek()
        if kind == "name" and value in ("unreduced", "partial"):
            r.next()
            r.expect("=")
            partial = _read_axes(r, mesh)
        else:
            dims.append(_read_axes(r, mesh))
        if not r.accept(","):
            r.expect(")")
            break
    if len(dims) > rank:
        raise LayoutError(f"'{r.text}' has {len(dims)} entries but the array has {rank} "
                          "dimensions")
    return Layout(dims + [[] for _ in range(rank - len(dims))], sorted(partial))


def _placements(r, mesh, rank):
    dims, partial, axis = [[] for _ in range(rank)], [], 0
    r.expect("[")
    while not r.accept("]"):
        kind, word = r.next()
        if axis >= len(mesh.sizes):
            raise LayoutError(f"'{r.text}': more placements than the mesh {mesh} has axes")
        r.expect("(")
        if word == "Shard":
            k, n = r.next()
            if k != "num":
                raise LayoutError(f"'{r.text}': expected a dimension number in Shard(...)")
            d = int(n) + (rank if int(n) < 0 else 0)
            if not 0 <= d < rank:
                raise LayoutError(f"'{r.text}': Shard({n}) names no dimension of a "
                                  f"{rank}-dimensional array")
            dims[d].append(axis)
        elif word == "Partial":
            if r.peek()[0] == "str" and r.next()[1] != "sum":
                raise LayoutError(f"'{r.text}': only Partial() or Partial('sum') is supported")
            partial.append(axis)
        elif word != "Replicate":
            raise LayoutError(f"'{r.text}': expected Shard(d), Replicate() or Partial()")
        r.expect(")")
        axis += 1
        if not r.accept(","):
            r.expect("]")
            break
    if axis != len(mesh.sizes):
        raise LayoutError(f"'{r.text}': {axis} placements for the mesh {mesh} (expected one "
                          "per mesh axis)")
    return Layout(dims, partial)


def parse_layout(text, mesh, shape):
    """Either notation, checked: axes used once, dimensions divisible by their splits."""
    r = _Reader(text)
    if r.peek() == ("punct", "["):
        layout = _placements(r, mesh, len(shape))
    else:
        kind, head = r.next()
        if (kind, head) not in (("name", "P"), ("name", "PartitionSpec")):
            raise LayoutError(f"'{text}': expected P(...), PartitionSpec(...) or [...]")
        layout = _partition_spec(r, mesh, len(shape))
    if r.peek()[0] != "end":
        raise LayoutError(f"'{text}': unexpected text after the layout")
    used = [a for d in layout.dims for a in d] + layout.partial
    if len(used) != len(set(used)):
        raise LayoutError(f"'{text}': a mesh axis is used twice")
    for i, axes in enumerate(layout.dims):
        if shape[i] % split_factor(mesh, axes):
            raise LayoutError(f"'{text}': dimension {i} ({shape[i]}) does not divide by "
                              f"{split_factor(mesh, axes)} (uneven splits are not supported)")
    return layout


def split_factor(mesh, axes):
    n = 1
    for a in axes:
        n *= mesh.sizes[a]
    return n


def block_of(mesh, shape, layout, device):
    """The (lo, hi) global index range per dimension that `device` holds."""
    c = mesh.coords(device)
    out = []
    for extent, axes in zip(shape, layout.dims):
        index = 0
        for a in axes:
            index = index * mesh.sizes[a] + c[a]
        size = extent // split_factor(mesh, axes)
        out.append((index * size, (index + 1) * size))
    return out


def partial_rank(mesh, layout, device):
    """Device's index among the members of its pending-sum group (0 when none)."""
    c = mesh.coords(device)
    index = 0
    for a in layout.partial:
        index = index * mesh.sizes[a] + c[a]
    return index


def partial_group_size(mesh, layout):
    return split_factor(mesh, layout.partial)


def to_dtensor(layout, mesh):
    """Placements as (kind, dim) per mesh axis: ("Shard", d), ("Replicate", None) or
    ("Partial", None). Raises NotExpressible where DTensor's order would differ."""
    out = [("Replicate", None)] * len(mesh.sizes)
    for d, axes in enumerate(layout.dims):
        if list(axes) != sorted(axes):
            names = ", ".join(f"'{mesh.names[a]}'" for a in axes)
            raise NotExpressible(
                f"dimension {d} is split over ({names}), not in mesh-axis order: DTensor's "
                "Shard splits a dimension in mesh-axis order")
        for a in axes:
            out[a] = ("Shard", d)
    for a in layout.partial:
        out[a] = ("Partial", None)
    return out


def placements_text(placements):
    return "[" + ", ".join(f"Shard({d})" if k == "Shard" else f"{k}()"
                           for k, d in placements) + "]"
