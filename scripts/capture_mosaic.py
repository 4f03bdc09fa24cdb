#!/usr/bin/env python3
"""Turn a JAX Pallas TPU kernel into what `tessera import mosaic` reads.

Needs JAX with Pallas (any machine: no TPU is needed). JAX lowers the call for
TPU under an abstract TPU mesh; the Mosaic module each pallas_call hands to the
TPU compiler is recorded, together with the operand and result types of its
`tpu_custom_call` in the exported StableHLO: the `--shapes` signature the
importer needs (docs/import.md).

Command line: a Python file, the function in it, and its arguments' types in
tessera's syntax:

    /usr/bin/python3 scripts/capture_mosaic.py my_kernels.py:attention \\
        'f32[2,4,512,128], f32[2,4,512,128], f32[2,4,512,128]' -o out/attention

writes out/attention_0.mlir (one file per pallas_call the function makes) and
prints, for each, the `tessera import mosaic` command with its `--shapes`;
`--tessera build/tools/tessera` also runs it, writing out/attention_0.tsr.

From Python:

    from capture_mosaic import capture
    for text, shapes in capture(fn, jax.ShapeDtypeStruct((8, 128), jnp.float32)):
        module = tessera.import_mosaic(text, shapes=shapes)
"""
import argparse
import importlib.util
import os
import re
import subprocess
import sys

# tessera dtype <-> the element types of MLIR tensors.
_TO_MLIR = {"f32": "f32", "bf16": "bf16", "f16": "f16", "f64": "f64", "bool": "i1", "i8": "i8",
            "i16": "i16", "i32": "i32", "i64": "i64", "u8": "ui8", "u32": "ui32"}
_FROM_MLIR = {v: k for k, v in _TO_MLIR.items()}


def tensor_to_tessera(tensor_type):
    """'tensor<2x4xf32>' -> 'f32[2,4]'; 'tensor<i32>' -> 'i32[]'."""
    m = re.fullmatch(r"tensor<(.*)>", tensor_type.strip())
    if not m:
        raise ValueError(f"not a ranked tensor type: {tensor_type!r}")
    *dims, element = m.group(1).split("x")
    if element not in _FROM_MLIR:
        raise ValueError(f"no tessera dtype for the element type {element!r} of {tensor_type!r}")
    if any(not d.isdigit() for d in dims):
        raise ValueError(f"a dynamic dimension in {tensor_type!r}: tessera needs static array shapes")
    return f"{_FROM_MLIR[element]}[{','.join(dims)}]"


def tessera_to_struct(type_text):
    """'f32[2,4]' -> jax.ShapeDtypeStruct((2, 4), float32)."""
    import jax
    import jax.numpy as jnp
    m = re.fullmatch(r"\s*(\w+)\[([\d,\s]*)\]\s*", type_text)
    if not m or m.group(1) not in _TO_MLIR:
        raise ValueError(f"not a tessera array type: {type_text!r}")
    dims = tuple(int(d) for d in m.group(2).split(",") if d.strip())
    dtype = {"bool": jnp.bool_, "u8": jnp.uint8, "u32": jnp.uint32}.get(m.group(1), getattr(jnp, m.group(1), None))
    return jax.ShapeDtypeStruct(dims, dtype)


def _split_top_level(text):
    """Splits at the commas outside <> and ()."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "<(" and 1 or ch in ">)" and -1 or 0
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:])
    return [p.strip() for p in parts]


def custom_call_signatures(stablehlo_text):
    """The `T, ... -> T, ...` signature of every tpu_custom_call, in order."""
    sigs = []
    for line in stablehlo_text.splitlines():
        if "@tpu_custom_call" not in line:
            continue
        # The function type at the end of the line: `: (tensor<...>, ...) -> R`,
        # R a tensor or `(tensor, ...)`, maybe followed by a `loc(...)`.
        line = re.sub(r"\s*loc\([^()]*\)\s*$", "", line.rstrip())
        arrow = line.rfind(") -> ")
        if arrow < 0:
            raise ValueError(f"cannot read the operand types of: {line.strip()}")
        depth, open_paren = 0, -1
        for i in range(arrow, -1, -1):
            depth += {")": 1, "(": -1}.get(line[i], 0)
            if depth == 0:
                open_paren = i
                break
        operands, results = line[open_paren + 1:arrow], line[arrow + 5:].strip()
        results = results[1:-1] if results.startswith("(") else results
        ins = [tensor_to_tessera(t) for t in _split_top_level(operands)]
        outs = [tensor_to_tessera(t) for t in _split_top_level(results)]
        sigs.append(", ".join(ins) + " -> " + ", ".join(outs))
    return sigs


def capture(fn, *args, device_kind="TPU v5 lite"):
    """[(mosaic_text, shapes), ...]: one per pallas_call of jax.jit(fn)(*args)."""
    import jax
    from jax._src import tpu_custom_call

    captured = []
    lower_to_asm = tpu_custom_call._lower_mosaic_module_to_asm

    def record(module, *a, **k):
        captured.append(str(module))
        return lower_to_asm(module, *a, **k)

    mesh = jax.sharding.AbstractMesh((), (), abstract_device=jax.sharding.AbstractDevice(
        device_kind=device_kind, num_cores=1, platform="tpu"))
    tpu_custom_call._lower_mosaic_module_to_asm = record
    try:
        with jax.sharding.use_abstract_mesh(mesh):
            exported = jax.export.export(jax.jit(fn), platforms=["tpu"])(*args)
    finally:
        tpu_custom_call._lower_mosaic_module_to_asm = lower_to_asm
    sigs = custom_call_signatures(exported.mlir_module())
    if len(sigs) != len(captured):
        raise RuntimeError(f"{len(captured)} Mosaic modules but {len(sigs)} tpu_custom_calls in the export")
    return list(zip(captured, sigs))


def _load_function(spec):
    path, _, name = spec.rpartition(":")
    if not path or not name:
        raise SystemExit(f"capture_mosaic.py: expected FILE.py:FUNCTION, got {spec!r}")
    module_spec = importlib.util.spec_from_file_location("user_kernels", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return getattr(module, name)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("function", help="FILE.py:FUNCTION")
    p.add_argument("types", help="the arguments' types in tessera syntax: 'f32[8,128], i32[4]'")
    p.add_argument("-o", "--output", default="kernel", help="prefix of the files written (default: kernel)")
    p.add_argument("--tessera", help="the tessera executable: also import each module into PREFIX_i.tsr")
    a = p.parse_args(argv)
    try:
        import jax  # noqa: F401
    except ImportError:
        raise SystemExit("capture_mosaic.py needs JAX with Pallas (pip install jax); tessera itself does not")
    fn = _load_function(a.function)
    args = [tessera_to_struct(t) for t in _split_top_level(a.types)]
    if os.path.dirname(a.output):
        os.makedirs(os.path.dirname(a.output), exist_ok=True)
    status = 0
    for i, (text, shapes) in enumerate(capture(fn, *args)):
        path = f"{a.output}_{i}.mlir"
        with open(path, "w") as f:
            f.write(text)
        command = [a.tessera or "tessera", "import", "mosaic", path, "--shapes", shapes]
        print(" ".join(command[:4]) + f" --shapes '{shapes}'")
        if a.tessera:
            status |= subprocess.call(command + ["-o", f"{a.output}_{i}.tsr"])
    return status


if __name__ == "__main__":
    sys.exit(main())
