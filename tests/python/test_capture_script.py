"""scripts/capture_mosaic.py: the parts that need no JAX (tessera <-> MLIR
tensor types, the signatures of tpu_custom_calls in exported StableHLO) run
everywhere; the capture itself runs only where JAX is installed (it is not a
Debian package: the GPU machines of docs/import.md have it).
"""
import pathlib
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "scripts"))
import capture_mosaic  # noqa: E402
from unittest_main import main  # noqa: E402

# A line of `jax.export` StableHLO with a multi-result tpu_custom_call, as
# paged attention makes it (its backend_config shortened).
PAGED = ('    %0:3 = stablehlo.custom_call @tpu_custom_call(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6) '
         '{backend_config = "{\\"custom_call_config\\": {\\"body\\": \\"TUzvUgFN\\"}}", kernel_name = "paged"} : '
         '(tensor<4xi32>, tensor<64xi32>, tensor<1xi32>, tensor<1xi32>, tensor<4x8x1x128xf32>, '
         'tensor<8x64x16x128xf32>, tensor<8x64x16x128xf32>) -> (tensor<4x8x1x128xf32>, tensor<4x8x1x1xf32>, '
         'tensor<4x8x1x1xf32>) loc(#loc12)')
MATMUL = ('    %1 = stablehlo.custom_call @tpu_custom_call(%a, %b) {backend_config = "{(1, 2) -> x}"} : '
          '(tensor<1024x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<1024x1024xf32>')


class CaptureScript(unittest.TestCase):
    def test_tensor_types(self):
        self.assertEqual(capture_mosaic.tensor_to_tessera("tensor<2x4x512x128xf32>"), "f32[2,4,512,128]")
        self.assertEqual(capture_mosaic.tensor_to_tessera("tensor<i32>"), "i32[]")
        self.assertEqual(capture_mosaic.tensor_to_tessera("tensor<8xi1>"), "bool[8]")
        self.assertEqual(capture_mosaic.tensor_to_tessera("tensor<3xui32>"), "u32[3]")
        with self.assertRaisesRegex(ValueError, "dynamic dimension"):
            capture_mosaic.tensor_to_tessera("tensor<?x4xf32>")
        with self.assertRaisesRegex(ValueError, "no tessera dtype"):
            capture_mosaic.tensor_to_tessera("tensor<4xcomplex<f32>>")

    def test_custom_call_signatures(self):
        text = "\n".join(["func.func public @main() {", PAGED, "    %2 = stablehlo.add %x, %y : tensor<4xf32>", MATMUL])
        self.assertEqual(capture_mosaic.custom_call_signatures(text), [
            "i32[4], i32[64], i32[1], i32[1], f32[4,8,1,128], f32[8,64,16,128], f32[8,64,16,128] -> "
            "f32[4,8,1,128], f32[4,8,1,1], f32[4,8,1,1]",
            "bf16[1024,1024], bf16[1024,1024] -> f32[1024,1024]"])

    def test_unreadable_custom_call(self):
        with self.assertRaisesRegex(ValueError, "cannot read the operand types"):
            capture_mosaic.custom_call_signatures("stablehlo.custom_call @tpu_custom_call(%a)")

    def test_capture_with_jax(self):
        try:
            import jax
            import jax.numpy as jnp
            from jax.experimental import pallas as pl
        except ImportError:
            self.skipTest("JAX is not installed (not a Debian package); docs/import.md runs this on a GPU machine")

        def add_kernel(x_ref, y_ref, o_ref):
            o_ref[...] = x_ref[...] + y_ref[...]

        def add(x, y):
            spec = pl.BlockSpec((128, 128), lambda i, j: (i, j))
            return pl.pallas_call(add_kernel, grid=(2, 2), in_specs=[spec, spec], out_specs=spec,
                                  out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x, y)

        s = jax.ShapeDtypeStruct((256, 256), jnp.float32)
        (text, shapes), = capture_mosaic.capture(add, s, s)
        self.assertIn("window_params", text)
        self.assertEqual(shapes, "f32[256,256], f32[256,256] -> f32[256,256]")


if __name__ == "__main__":
    main()
