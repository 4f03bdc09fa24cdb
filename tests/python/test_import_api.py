"""tessera.import_mosaic, the Python face of `tessera import mosaic`: Mosaic
text or a path in, a tessera Module out; `shapes` for the full arrays,
`devices` for kernels that talk to other devices, and located errors.
"""
import pathlib
import unittest

import numpy as np

import tessera
from unittest_main import main

ADD_TXT = "tests/frontends/corpus/zoo/add.txt"  # JAX's debug=True output of an add kernel
ADD_SHAPES = "f32[1024,512], f32[1024,512] -> f32[1024,512]"
RING = "examples/ring_allreduce.tsr"
PER_DEVICE = "f32[8,128] -> f32[8,128]"
RNG = np.random.default_rng(7)


def ring_text():
    return tessera.emit(tessera.parse(RING), "mosaic")


class ImportMosaic(unittest.TestCase):
    def test_a_path_and_its_text_import_the_same_module(self):
        by_path = tessera.import_mosaic(ADD_TXT)
        by_text = tessera.import_mosaic(pathlib.Path(ADD_TXT).read_text(), shapes=ADD_SHAPES)
        by_pathlike = tessera.import_mosaic(pathlib.Path(ADD_TXT), shapes=ADD_SHAPES)
        self.assertEqual(str(by_path), str(by_text))
        self.assertEqual(str(by_path), str(by_pathlike))
        x, y = RNG.standard_normal((2, 1024, 512), dtype=np.float32)
        (out,) = tessera.run(by_text, [x, y])
        np.testing.assert_array_equal(out, x + y)

    def test_shapes_give_the_full_arrays(self):
        m = tessera.import_mosaic(ADD_TXT, shapes="f32[2048,512], f32[2048,512] -> f32[2048,512]")
        self.assertEqual(m.parameters(), [("x0", "f32[2048,512]"), ("x1", "f32[2048,512]")])

    def test_devices_maps_the_call_over_a_device_axis(self):
        m = tessera.import_mosaic(ring_text(), shapes=PER_DEVICE, devices=4, filename="ring.mlir")
        self.assertEqual(m.parameters(), [("x0", "f32[4,8,128]")])
        self.assertIn("pmap[", str(m))
        self.assertIn("collective_id=0", str(m))
        # The CLI's text form of the count is accepted too.
        self.assertEqual(str(m), str(tessera.import_mosaic(ring_text(), shapes=PER_DEVICE, devices="4")))
        x = RNG.standard_normal((4, 8, 128), dtype=np.float32)
        (got,) = tessera.run(m, [x])
        (want,) = tessera.run(tessera.parse(RING), [x])
        np.testing.assert_allclose(got, want, rtol=1e-6)
        np.testing.assert_allclose(got[0], x.sum(axis=0), rtol=1e-5, atol=1e-5)
        self.assertEqual([c.name for c in tessera.prove(m) if c.verdict == "failed"], [])

    def test_a_kernel_that_talks_to_other_devices_needs_devices(self):
        with self.assertRaises(tessera.Error) as e:
            tessera.import_mosaic(ring_text(), shapes=PER_DEVICE, filename="ring.mlir")
        self.assertEqual((e.exception.file, e.exception.line, e.exception.column), ("ring.mlir", 4, 5))
        self.assertIn("`tpu.device_id`: the Mosaic module does not say how many devices there are; give --devices N",
                      str(e.exception))

    def test_bad_device_counts_and_meshes_are_located_errors(self):
        for bad in (0, -1, "x", "0"):
            with self.assertRaises(tessera.Error, msg=repr(bad)) as e:
                tessera.import_mosaic(ring_text(), shapes=PER_DEVICE, devices=bad)
            self.assertEqual(e.exception.file, "--devices")
            self.assertIn("is not a number of devices", str(e.exception))
        for mesh in ((2, 2), [2, 2], "2x2"):
            with self.assertRaises(tessera.Error, msg=repr(mesh)) as e:
                tessera.import_mosaic(ring_text(), shapes=PER_DEVICE, devices=mesh)
            self.assertIn("only 1-D meshes are supported", str(e.exception))

    def test_errors_are_located_in_the_mosaic_text(self):
        text = pathlib.Path(ADD_TXT).read_text().replace("arith.addf", "arith.frobf", 1)
        with self.assertRaises(tessera.Error) as e:
            tessera.import_mosaic(text, filename="add.mlir")
        self.assertEqual(e.exception.file, "add.mlir")
        self.assertGreater(e.exception.line, 0)
        self.assertGreater(e.exception.column, 0)
        self.assertTrue(str(e.exception).startswith(f"add.mlir:{e.exception.line}:{e.exception.column}: error: "))

    def test_a_missing_mlir_path_is_an_error_not_text(self):
        with self.assertRaises(tessera.Error) as e:
            tessera.import_mosaic("no/such/kernel.mlir")
        self.assertIn("cannot open file 'no/such/kernel.mlir'", str(e.exception))


if __name__ == "__main__":
    raise SystemExit(main())
