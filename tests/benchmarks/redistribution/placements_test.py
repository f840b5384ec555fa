"""Unit tests of benchmarks/redistribution/placements.py (the PyTorch peers' layouts): the
same readings and blocks as redistribution/layout.hpp, the DTensor placements, and the pairs
DTensor cannot express. No torch needed."""
import csv
import os
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "benchmarks", "redistribution"))
import placements as pl  # noqa: E402

MESH22 = pl.parse_mesh("x=2,y=2")


class ParseTest(unittest.TestCase):
    def test_mesh_is_row_major(self):
        m = pl.parse_mesh("x=2,y=4")
        self.assertEqual(m.names, ("x", "y"))
        self.assertEqual(m.devices, 8)
        self.assertEqual(m.coords(5), (1, 1))  # device = c_x * 4 + c_y
        with self.assertRaises(pl.LayoutError):
            pl.parse_mesh("x=2,x=2")

    def test_partition_spec(self):
        l = pl.parse_layout("P(None, ('x','y'))", MESH22, (8, 8))
        self.assertEqual(l.dims, [[], [0, 1]])
        self.assertEqual(l.partial, [])
        l = pl.parse_layout("P('x', unreduced={'y'})", MESH22, (8, 8))
        self.assertEqual(l.dims, [[0], []])  # fewer entries than dimensions: None
        self.assertEqual(l.partial, [1])
        self.assertEqual(pl.parse_layout("P()", MESH22, (8,)).dims, [[]])
        self.assertEqual(pl.parse_layout("PartitionSpec(('x',), None)", MESH22, (8, 8)).dims,
                         [[0], []])

    def test_placements(self):
        l = pl.parse_layout("[Shard(0), Partial()]", MESH22, (8, 8))
        self.assertEqual((l.dims, l.partial), ([[0], []], [1]))
        l = pl.parse_layout("[Shard(-1), Shard(1)]", MESH22, (8, 8))
        self.assertEqual(l.dims, [[], [0, 1]])  # several Shard(d): mesh-axis order
        l = pl.parse_layout("[Partial('sum')]", pl.parse_mesh("x=2"), (4,))
        self.assertEqual(l.partial, [0])

    def test_rejects_bad_layouts(self):
        for text in ("P('z')", "P('x', 'x')", "P('x', None, None)", "[Shard(0)]",
                     "[Shard(2), Replicate()]", "[Partial('max'), Replicate()]", "Q('x')",
                     "P('x') extra"):
            with self.subTest(text=text), self.assertRaises(pl.LayoutError):
                pl.parse_layout(text, MESH22, (8, 8))
        with self.assertRaises(pl.LayoutError):  # uneven split
            pl.parse_layout("P(('x','y'))", MESH22, (6,))


class BlockTest(unittest.TestCase):
    def test_major_axis_first(self):
        # P(None, ('x','y')) on x=2,y=2: device (x, y) holds column block 2x + y.
        l = pl.parse_layout("P(None, ('x','y'))", MESH22, (4, 8))
        self.assertEqual([pl.block_of(MESH22, (4, 8), l, d)[1] for d in range(4)],
                         [(0, 2), (2, 4), (4, 6), (6, 8)])
        # P('y', 'x'): rows by y, columns by x.
        l = pl.parse_layout("P('y', 'x')", MESH22, (4, 8))
        self.assertEqual(pl.block_of(MESH22, (4, 8), l, 1), [(2, 4), (0, 4)])

    def test_partial_groups(self):
        l = pl.parse_layout("[Shard(0), Partial()]", MESH22, (8, 8))
        self.assertEqual(pl.partial_group_size(MESH22, l), 2)
        self.assertEqual([pl.partial_rank(MESH22, l, d) for d in range(4)], [0, 1, 0, 1])
        self.assertEqual(pl.block_of(MESH22, (8, 8), l, 3), [(4, 8), (0, 8)])


class DTensorTest(unittest.TestCase):
    def test_placements_round_trip(self):
        for text in ("P('x', None)", "P(None, ('x','y'))", "P('y', 'x')", "P()",
                     "[Shard(0), Partial()]", "P(('x','y'), None)"):
            with self.subTest(text=text):
                l = pl.parse_layout(text, MESH22, (8, 8))
                back = pl.parse_layout(pl.placements_text(pl.to_dtensor(l, MESH22)), MESH22,
                                       (8, 8))
                self.assertEqual((back.dims, back.partial), (l.dims, l.partial))
        self.assertEqual(pl.placements_text(pl.to_dtensor(
            pl.parse_layout("P('y', 'x')", MESH22, (8, 8)), MESH22)), "[Shard(1), Shard(0)]")

    def test_out_of_mesh_order_is_not_expressible(self):
        l = pl.parse_layout("P(('y','x'), None)", MESH22, (8, 8))
        with self.assertRaises(pl.NotExpressible):
            pl.to_dtensor(l, MESH22)

    def test_gpu_pairs_all_parse(self):
        # Every pair the GPU benchmark runs reads here as it does in `overlapsim redistribute`;
        # which ones DTensor can express is reported by the peer, not assumed.
        with open(os.path.join(ROOT, "benchmarks", "redistribution", "gpu_pairs.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertGreaterEqual(len(rows), 20)
        for r in rows:
            mesh, shape = pl.parse_mesh(r["mesh"]), pl.parse_shape(r["shape"])
            for text in (r["from"], r["to"]):
                with self.subTest(pair=r["name"], layout=text):
                    pl.parse_layout(text, mesh, shape)


if __name__ == "__main__":
    unittest.main()
