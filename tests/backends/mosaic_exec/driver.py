"""Generates `func.func @main()`: the Mosaic pipeline of one pallas_call, played on the CPU.

What the TPU runtime does around a Mosaic kernel, and the driver does too:
  - walks the grid in row-major order (last axis fastest), one kernel call per point;
  - for each windowed operand calls `@transform_i(grid indices..., prefetch refs...)`
    and turns the returned block indices into element offsets (index * window size;
    a squeezed dim has window size 1, so its index is already an element offset);
  - copies an input window into its VMEM buffer only when its block index changed
    since the previous grid point (as the pipeline and the interpreter do), and the
    output window back after every step (the last visit of a block writes it last,
    so the result equals a write-back on block change);
  - keeps scratch buffers (and window buffers) alive across grid points;
  - operands without a window (`{}`: ANY/HBM) and scalar prefetch get the whole array.
Memory the kernel may read before writing (outputs, window and scratch buffers)
starts as NaN for floats and INT_MAX for integers, like the interpreter's
`--uninit nan`, so a kernel that reads garbage cannot match by luck.
Each output is printed with printMemrefI32 over its raw 32-bit words (exact bits),
after a record of the first block index that fell outside its array
(an error the script reports with the transform's name and the grid point).
"""

import numpy as np

from mlir_text import parse_shaped

ELEM = {np.dtype('float32'): 'f32', np.dtype('int32'): 'i32'}
UNINIT = {'f32': '0x7FC00000', 'i32': '2147483647'}


class Array:
    """One pallas_call operand or result as the driver sees it."""

    def __init__(self, role, shape, elem, data=None):
        self.role, self.shape, self.elem, self.data = role, list(shape), elem, data

    @property
    def type(self):
        return 'memref<' + ''.join(f'{d}x' for d in self.shape) + self.elem + '>'

    @property
    def size(self):
        return int(np.prod(self.shape)) if self.shape else 1


def _strided(shape, window):
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    strides.reverse()
    sizes = ''.join(f'{w}x' for w in window)
    return f'strided<[{", ".join(map(str, strides))}], offset: ?>', sizes


class _Emitter:
    def __init__(self):
        self.lines, self.count, self.consts = [], 0, {}

    def fresh(self, what):
        self.count += 1
        return f'%{what}{self.count}'

    def emit(self, depth, text):
        self.lines.append('  ' * depth + text)

    def index(self, n):
        """An index constant, defined once at the top of @main."""
        if n not in self.consts:
            self.consts[n] = f'%ci{n}' if n >= 0 else f'%cim{-n}'
        return self.consts[n]


def _global(name, arr):
    raw = np.ascontiguousarray(arr.data).astype(arr.data.dtype.newbyteorder('<'), copy=False).tobytes()
    return f'  memref.global "private" constant @{name} : {arr.type} = dense<"0x{raw.hex().upper()}">'


def generate(kernel, arrays):
    """Text of the globals, print declarations and @main for KERNEL (upstream_module.Kernel)
    over ARRAYS (one Array per kernel operand group 2-3: prefetch, inputs, outputs)."""
    e = _Emitter()
    d = 2
    globals_ = []
    values = {}   # array position -> SSA name of its full buffer
    for pos, arr in enumerate(arrays):
        if arr.role in ('prefetch', 'input'):
            gname = f'tx_array{pos}'
            globals_.append(_global(gname, arr))
            src = e.fresh('global')
            e.emit(d, f'{src} = memref.get_global @{gname} : {arr.type}')
            # A mutable copy: a kernel may write into an input window or a whole-array input.
            buf = e.fresh('array')
            e.emit(d, f'{buf} = memref.alloc() : {arr.type}')
            e.emit(d, f'memref.copy {src}, {buf} : {arr.type} to {arr.type}')
            values[pos] = buf
        else:
            raw = e.fresh('raw')
            e.emit(d, f'{raw} = memref.alloc() : memref<{4 * arr.size}xi8>')
            buf = e.fresh('array')
            e.emit(d, f'{buf} = memref.view {raw}[{e.index(0)}][] : memref<{4 * arr.size}xi8> to {arr.type}')
            _fill(e, d, buf, arr.type, arr.elem)
            values[pos] = buf
            arr.raw = raw

    grid = kernel.iteration_bounds
    n_prefetch = kernel.n_prefetch
    windows = kernel.window_params
    io_types = kernel.io_arg_types
    if len(arrays) != n_prefetch + len(io_types):
        raise ValueError(f'the .tsr call has {len(arrays)} operands and results, the kernel '
                         f'{n_prefetch} prefetch + {len(io_types)} windowed operands')
    # Window buffers (kernel argument types) and "previous offsets" for inputs.
    blocks, prev = {}, {}
    for k, arg_t in enumerate(io_types):
        pos = n_prefetch + k
        win = windows[k] if windows is not None else None
        if not win:
            if arg_t != arrays[pos].type:
                raise ValueError(f'operand {pos}: a whole-array operand of type {arg_t}, '
                                 f'but the array is {arrays[pos].type}')
            continue
        shape, elem = win['shape'], arrays[pos].elem
        if len(shape) != len(arrays[pos].shape):
            raise ValueError(f'operand {pos}: window_bounds {shape} for an array of shape {arrays[pos].shape}')
        for w, full in zip(shape, arrays[pos].shape):
            if full % w:
                raise ValueError(f'operand {pos}: window {shape} does not divide the array {arrays[pos].shape} '
                                 '(partial edge blocks are not simulated)')
        blk = e.fresh('window')
        e.emit(d, f'{blk} = memref.alloc() : {arg_t}')
        _fill(e, d, blk, arg_t, elem)
        blocks[k] = blk
        if arrays[pos].role == 'input':
            p = e.fresh('prev')
            e.emit(d, f'{p} = memref.alloc() : memref<{len(shape)}xindex>')
            for i in range(len(shape)):
                e.emit(d, f'memref.store {e.index(-1)}, {p}[{e.index(i)}] : memref<{len(shape)}xindex>')
            prev[k] = p
    scratch = []
    for t in kernel.scratch_types:
        buf = e.fresh('scratch')
        e.emit(d, f'{buf} = memref.alloc() : {t}')
        _fill(e, d, buf, t, parse_shaped(t).elem)
        scratch.append(buf)

    # The first out-of-array block: [operand + 1 (0: none), dim, grid indices...], printed first.
    oob_t = f'memref<{2 + len(grid)}xi64>'
    oob = e.fresh('oob')
    e.emit(d, f'{oob} = memref.alloc() : {oob_t}')
    zero64 = e.fresh('zero')
    e.emit(d, f'{zero64} = arith.constant 0 : i64')
    e.emit(d, f'linalg.fill ins({zero64} : i64) outs({oob} : {oob_t})')

    # The grid loop nest.
    ivs = []
    for axis, bound in enumerate(grid):
        iv = f'%g{axis}'
        e.emit(d, f'scf.for {iv} = {e.index(0)} to {e.index(bound)} step {e.index(1)} {{')
        d += 1
        ivs.append(iv)
    pids = []
    for iv in ivs:
        pid = e.fresh('pid')
        e.emit(d, f'{pid} = arith.index_cast {iv} : index to i32')
        pids.append(pid)
    prefetch_vals = [values[i] for i in range(n_prefetch)]
    prefetch_types = [arrays[i].type for i in range(n_prefetch)]

    def window_view(k):
        pos = n_prefetch + k
        arr, win = arrays[pos], windows[k]
        ranks = len(arr.shape)
        call = e.fresh('blockidx')
        arg_types = ['i32'] * len(pids) + prefetch_types
        e.emit(d, f'{call}:{ranks} = func.call @{win["transform"]}({", ".join(pids + prefetch_vals)}) : '
                  f'({", ".join(arg_types)}) -> ({", ".join(["i32"] * ranks)})')
        offsets = []
        for i, (w, full) in enumerate(zip(win['shape'], arr.shape)):
            idx = e.fresh('bi')
            e.emit(d, f'{idx} = arith.index_cast {call}#{i} : i32 to index')
            off = e.fresh('off')
            e.emit(d, f'{off} = arith.muli {idx}, {e.index(w)} : index')
            outside = e.fresh('outside')
            e.emit(d, f'{outside} = arith.cmpi ugt, {off}, {e.index(full - w)} : index')
            # Record the bad block (operand, dim, grid point) for the script, and copy block 0
            # instead: cf.assert's message would be lost (stdout is not flushed by abort).
            first = e.fresh('first')
            e.emit(d, f'scf.if {outside} {{')
            e.emit(d + 1, f'{first}_old = memref.load {oob}[{e.index(0)}] : {oob_t}')
            e.emit(d + 1, f'{first} = arith.cmpi eq, {first}_old, {zero64} : i64')
            e.emit(d + 1, f'scf.if {first} {{')
            for slot, value in enumerate([e.index(pos + 1), e.index(i)] + ivs):
                as_i64 = e.fresh('rec')
                e.emit(d + 2, f'{as_i64} = arith.index_cast {value} : index to i64')
                e.emit(d + 2, f'memref.store {as_i64}, {oob}[{e.index(slot)}] : {oob_t}')
            e.emit(d + 1, '}')
            e.emit(d, '}')
            safe = e.fresh('off')
            e.emit(d, f'{safe} = arith.select {outside}, {e.index(0)}, {off} : index')
            offsets.append(safe)
        layout, sizes = _strided(arr.shape, win['shape'])
        view_t = f'memref<{sizes}{arr.elem}, {layout}>'
        view = e.fresh('view')
        e.emit(d, f'{view} = memref.subview {values[pos]}[{", ".join(offsets)}] [{", ".join(map(str, win["shape"]))}] '
                  f'[{", ".join(["1"] * ranks)}] : {arr.type} to {view_t}')
        return view, view_t, offsets

    kernel_args = list(pids) + prefetch_vals
    outputs_after = []
    for k, arg_t in enumerate(io_types):
        pos = n_prefetch + k
        if k not in blocks:
            kernel_args.append(values[pos])
            continue
        kernel_args.append(blocks[k])
        if arrays[pos].role == 'output':
            outputs_after.append(k)
            continue
        view, view_t, offsets = window_view(k)
        rank = len(offsets)
        changed = None
        for i, off in enumerate(offsets):
            old = e.fresh('old')
            e.emit(d, f'{old} = memref.load {prev[k]}[{e.index(i)}] : memref<{rank}xindex>')
            ne = e.fresh('ne')
            e.emit(d, f'{ne} = arith.cmpi ne, {old}, {off} : index')
            if changed is None:
                changed = ne
            else:
                both = e.fresh('changed')
                e.emit(d, f'{both} = arith.ori {changed}, {ne} : i1')
                changed = both
        e.emit(d, f'scf.if {changed} {{')
        e.emit(d + 1, f'memref.copy {view}, {blocks[k]} : {view_t} to {arg_t}')
        for i, off in enumerate(offsets):
            e.emit(d + 1, f'memref.store {off}, {prev[k]}[{e.index(i)}] : memref<{rank}xindex>')
        e.emit(d, '}')
    kernel_args += scratch
    all_types = ['i32'] * len(pids) + prefetch_types + list(io_types) + list(kernel.scratch_types)
    e.emit(d, f'func.call @{kernel.name}({", ".join(kernel_args)}) : ({", ".join(all_types)}) -> ()')
    for k in outputs_after:
        view, view_t, _ = window_view(k)
        e.emit(d, f'memref.copy {blocks[k]}, {view} : {io_types[k]} to {view_t}')
    for _ in grid:
        d -= 1
        e.emit(d, '}')

    oob_u = e.fresh('unranked')
    e.emit(d, f'{oob_u} = memref.cast {oob} : {oob_t} to memref<*xi64>')
    e.emit(d, f'func.call @printMemrefI64({oob_u}) : (memref<*xi64>) -> ()')
    for pos, arr in enumerate(arrays):
        if arr.role != 'output':
            continue
        words = e.fresh('words')
        e.emit(d, f'{words} = memref.view {arr.raw}[{e.index(0)}][] : memref<{4 * arr.size}xi8> '
                  f'to memref<{arr.size}xi32>')
        unranked = e.fresh('unranked')
        e.emit(d, f'{unranked} = memref.cast {words} : memref<{arr.size}xi32> to memref<*xi32>')
        e.emit(d, f'func.call @printMemrefI32({unranked}) : (memref<*xi32>) -> ()')
    e.emit(d, 'return')

    head = ['  func.func private @printMemrefI32(memref<*xi32>) attributes {llvm.emit_c_interface}',
            '  func.func private @printMemrefI64(memref<*xi64>) attributes {llvm.emit_c_interface}',
            '  func.func @main() {']
    consts = [f'    {name} = arith.constant {n} : index' for n, name in sorted(e.consts.items())]
    return '\n'.join(globals_ + head + consts + e.lines + ['  }']) + '\n'


def _fill(e, d, buf, mem_t, elem):
    if elem not in UNINIT:
        raise ValueError(f'element type {elem} is not supported by the driver (f32, i32)')
    v = e.fresh('uninit')
    e.emit(d, f'{v} = arith.constant {UNINIT[elem]} : {elem}')
    e.emit(d, f'linalg.fill ins({v} : {elem}) outs({buf} : {mem_t})')
