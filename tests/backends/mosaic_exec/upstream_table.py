"""THE replacement table: the only place where the execution check trusts us.

It rewrites a Mosaic TensorCore module, as re-printed by `mlir-opt-19
--allow-unregistered-dialect` (one op per line), into upstream MLIR 19 that
`mlir-opt-19` can lower to LLVM and `mlir-cpu-runner-19` can run. Each row
below replaces one construct by an upstream equivalent with the same meaning
on one TensorCore core; README.md lists the rows and why each is faithful.
A `tpu` op without a row is an error naming the op, never silently dropped.

Rows (construct -> upstream):
  memory space `#tpu.memory_space<vmem|smem|any|hbm>`   -> dropped (one flat CPU memory)
  kernel func `attributes {...}` (tpu.core_type, ...)  -> removed (read by the driver first)
  n-D `vector.load` / `vector.store`                    -> `vector.transfer_read/_write` {in_bounds}
  `tpu.vector_store` (optional mask, no strides)        -> `vector.transfer_write` {in_bounds}
  `tpu.matmul` (dimension_numbers)                      -> `linalg.generic` multiply-add over memref copies
  `tpu.iota` (one dimension)                            -> `arith.constant dense<...>`
  `tpu.transpose` (permutation)                         -> `vector.transpose`
  `tpu.dynamic_rotate` (no stride)                      -> jnp.roll through a memref holding x twice
  `tpu.region` / `tpu.yield`                            -> `scf.execute_region` / `scf.yield`
  `tpu.bitcast` (equal element widths)                  -> `arith.bitcast`
  `tpu.assume_multiple`                                 -> `arith.maxsi %x, %x` (= the operand)
  `tpu.iteration_bound` {dim = k}                       -> `arith.constant` (the static grid size)
  `tpu.concatenate` (dimension)                         -> `vector.insert_strided_slice` of each operand into zeros
"""

import re

from mlir_text import TextError, int_attr, int_list, parse_shaped, split_top

MEMORY_SPACES = ('vmem', 'smem', 'any', 'hbm')


class Unsupported(TextError):
    """A construct the table has no row for (the message names it)."""


class Names:
    """Fresh SSA names that cannot clash with mlir-opt's (%0, %c0, %cst, %arg0, ...)."""

    def __init__(self):
        self.count = 0

    def fresh(self, what):
        self.count += 1
        return f'%tx{self.count}_{what}'


def _zero_index(names, indent, out):
    c0 = names.fresh('c0')
    out.append(f'{indent}{c0} = arith.constant 0 : index')
    return c0


def _pad(names, indent, elem, out):
    """The padding value a transfer_read needs (never read: every access is in bounds)."""
    pad = names.fresh('pad')
    zero = '0.000000e+00' if elem.startswith(('f', 'bf')) else '0'
    out.append(f'{indent}{pad} = arith.constant {zero} : {elem}')
    return pad


def _in_bounds(rank):
    return '[' + ', '.join(['true'] * rank) + ']'


# --- rows over upstream ops that do not lower as they are ---------------------------------

def vector_load(line, names):
    """`%r = vector.load %m[idx] : memref<..>, vector<n-D>` -> transfer_read {in_bounds}.

    convert-vector-to-llvm lowers only 1-D vector.load; a transfer_read of the
    same shape at the same indices, all in bounds, reads the same elements
    (the vector covers the memref's trailing dims, like vector.load)."""
    head, _, types = line.rpartition(' : ')
    mem_t, vec_t = split_top(types)
    vec = parse_shaped(vec_t)
    if vec.rank <= 1:
        return [line]
    indent = line[:len(line) - len(line.lstrip())]
    result, _, access = head.strip().partition(' = vector.load ')
    out = []
    pad = _pad(names, indent, vec.elem, out)
    out.append(f'{indent}{result} = vector.transfer_read {access}, {pad} {{in_bounds = {_in_bounds(vec.rank)}}}'
               f' : {mem_t}, {vec_t}')
    return out


def vector_store(line, names):
    """`vector.store %v, %m[idx] : memref<..>, vector<n-D>` -> transfer_write {in_bounds}."""
    head, _, types = line.rpartition(' : ')
    mem_t, vec_t = split_top(types)
    vec = parse_shaped(vec_t)
    if vec.rank <= 1:
        return [line]
    indent = line[:len(line) - len(line.lstrip())]
    access = head.strip()[len('vector.store '):]
    return [f'{indent}vector.transfer_write {access} {{in_bounds = {_in_bounds(vec.rank)}}} : {vec_t}, {mem_t}']


# --- rows over tpu ops ---------------------------------------------------------------------

def tpu_vector_store(op, names, ctx):
    """"tpu.vector_store"(%v, %ref, idx..., [mask]) -> vector.transfer_write [mask] {in_bounds}.

    Operand segments are (value, base, indices, mask). TensorCore strides are
    always empty; a non-empty stride list or `add` (SparseCore) has no row."""
    seg = int_list(op.prop('operandSegmentSizes') or '[]')
    if len(seg) != 4 or seg[0] != 1 or seg[1] != 1:
        raise Unsupported(f'tpu.vector_store with operandSegmentSizes {seg}')
    strides = op.prop('strides')
    if strides and int_list(strides):
        raise Unsupported('tpu.vector_store with strides ' + strides + ' (strided stores)')
    if op.prop('add') not in (None, 'false'):
        raise Unsupported('tpu.vector_store with add = ' + op.prop('add') + ' (SparseCore atomic add)')
    value, ref = op.operands[0], op.operands[1]
    indices = op.operands[2:2 + seg[2]]
    vec_t, mem_t = op.operand_types[0], op.operand_types[1]
    rank = parse_shaped(vec_t).rank
    mask = f', {op.operands[2 + seg[2]]}' if seg[3] else ''  # its type follows from the vector's
    return [f'{op.indent}vector.transfer_write {value}, {ref}[{", ".join(indices)}]{mask} '
            f'{{in_bounds = {_in_bounds(rank)}}} : {vec_t}, {mem_t}']


def _dot_dimension_numbers(text):
    """#tpu.dot_dimension_numbers<[lc], [rc], [lnc], [rnc], [out order pairs], [lb], [rb]>."""
    if not text or not text.startswith('#tpu.dot_dimension_numbers<'):
        raise Unsupported('tpu.matmul without dimension_numbers')
    lists = split_top(text[len('#tpu.dot_dimension_numbers<'):-1])
    if len(lists) != 7:
        raise Unsupported('tpu.matmul dimension_numbers ' + text)
    return [int_list(x) for x in lists]


def _arith(elem, op):
    kind = 'f' if elem.startswith(('f', 'bf')) else 'i'
    return f'arith.{op}{kind}'


def tpu_matmul(op, names, ctx):
    """"tpu.matmul"(%lhs, %rhs, %acc) -> lhs * rhs contracted + acc, as a linalg.generic.

    The iteration space is (output dims..., contracting dims...); each operand's
    indexing map follows dimension_numbers (contracting, non-contracting, the
    output's (operand, dim) order, batch dims). The vectors go through memref
    buffers so that the product lowers to a loop nest: vector.contract would
    be unrolled into M*N dot products (16384 for 128x128), too slow to compile."""
    lc, rc, _lnc, _rnc, order, lb, rb = _dot_dimension_numbers(op.prop('dimension_numbers'))
    lhs_t, rhs_t, acc_t = (parse_shaped(t) for t in op.operand_types)
    pairs = list(zip(order[0::2], order[1::2]))
    n_out = len(pairs)
    if n_out != acc_t.rank or len(lc) != len(rc) or len(lb) != len(rb):
        raise Unsupported('tpu.matmul dimension_numbers ' + op.prop('dimension_numbers'))

    def out_dim(operand, dim):
        for pos, pair in enumerate(pairs):
            if pair == (operand, dim):
                return f'd{pos}'
        return None

    def operand_map(operand, shape_rank, contracting, batch, other_batch_owner):
        exprs = []
        for dim in range(shape_rank):
            if dim in contracting:
                exprs.append(f'd{n_out + contracting.index(dim)}')
            elif dim in batch:
                exprs.append(other_batch_owner(batch.index(dim)))
            else:
                d = out_dim(operand, dim)
                if d is None:
                    raise Unsupported(f'tpu.matmul: operand {operand} dim {dim} is not in the output order')
                exprs.append(d)
        return exprs

    lhs_map = operand_map(0, lhs_t.rank, lc, lb, lambda p: out_dim(0, lb[p]))
    rhs_map = operand_map(1, rhs_t.rank, rc, rb, lambda p: out_dim(0, lb[p]))
    dims = ', '.join(f'd{i}' for i in range(n_out + len(lc)))
    maps = [f'affine_map<({dims}) -> ({", ".join(m)})>' for m in
            (lhs_map, rhs_map, [f'd{i}' for i in range(n_out)])]
    iterators = ', '.join(['"parallel"'] * n_out + ['"reduction"'] * len(lc))

    ind, out = op.indent, []
    c0 = _zero_index(names, ind, out)
    bufs = []
    for value, t, what in zip(op.operands, (lhs_t, rhs_t, acc_t), ('lhs', 'rhs', 'acc')):
        buf = names.fresh(what)
        out.append(f'{ind}{buf} = memref.alloc() : {t.text(kind="memref")}')
        idx = ', '.join([c0] * t.rank)
        out.append(f'{ind}vector.transfer_write {value}, {buf}[{idx}] {{in_bounds = {_in_bounds(t.rank)}}}'
                   f' : {t.text()}, {t.text(kind="memref")}')
        bufs.append(buf)
    x, y, z = names.fresh('x'), names.fresh('y'), names.fresh('z')
    out.append(f'{ind}linalg.generic {{indexing_maps = [{", ".join(maps)}], iterator_types = [{iterators}]}}'
               f' ins({bufs[0]}, {bufs[1]} : {lhs_t.text(kind="memref")}, {rhs_t.text(kind="memref")})'
               f' outs({bufs[2]} : {acc_t.text(kind="memref")}) {{')
    out.append(f'{ind}^bb0({x}: {lhs_t.elem}, {y}: {rhs_t.elem}, {z}: {acc_t.elem}):')

    def widen(v, t):
        """bf16 x bf16 -> f32 (or i8 -> i32) products are computed in the accumulator's type."""
        if t.elem == acc_t.elem:
            return v
        widened = names.fresh('w')
        ext = 'arith.extf' if t.elem.startswith(('f', 'bf')) else 'arith.extsi'
        out.append(f'{ind}  {widened} = {ext} {v} : {t.elem} to {acc_t.elem}')
        return widened

    x, y = widen(x, lhs_t), widen(y, rhs_t)
    prod, total = names.fresh('p'), names.fresh('s')
    out.append(f'{ind}  {prod} = {_arith(acc_t.elem, "mul")} {x}, {y} : {acc_t.elem}')
    out.append(f'{ind}  {total} = {_arith(acc_t.elem, "add")} {z}, {prod} : {acc_t.elem}')
    out.append(f'{ind}  linalg.yield {total} : {acc_t.elem}')
    out.append(f'{ind}}}')
    pad = _pad(names, ind, acc_t.elem, out)
    idx = ', '.join([c0] * acc_t.rank)
    out.append(f'{ind}{op.results[0]} = vector.transfer_read {bufs[2]}[{idx}], {pad} '
               f'{{in_bounds = {_in_bounds(acc_t.rank)}}} : {acc_t.text(kind="memref")}, {acc_t.text()}')
    for buf, t in zip(bufs, (lhs_t, rhs_t, acc_t)):
        out.append(f'{ind}memref.dealloc {buf} : {t.text(kind="memref")}')
    return out


def tpu_iota(op, names, ctx):
    """"tpu.iota"() <{dimensions = array<i32: d>}> -> the constant whose element is its index along d."""
    dims = op.prop('dimensions')
    dims = int_list(dims) if dims is not None else None
    if dims is None and op.prop('dimension') is not None:
        dims = [int_attr(op.prop('dimension'))]
    t = parse_shaped(op.result_types[0])
    if dims is None or len(dims) != 1 or not 0 <= dims[0] < t.rank:
        raise Unsupported(f'tpu.iota with dimensions {op.prop("dimensions")} (one dimension only)')
    d = dims[0]

    def nested(prefix):
        if len(prefix) == t.rank:
            return str(prefix[d])
        return '[' + ', '.join(nested(prefix + [i]) for i in range(t.shape[len(prefix)])) + ']'

    return [f'{op.indent}{op.results[0]} = arith.constant dense<{nested([])}> : {op.result_types[0]}']


def tpu_transpose(op, names, ctx):
    """"tpu.transpose"(%x) <{permutation = array<i64: ...>}> -> vector.transpose (same permutation)."""
    perm = int_list(op.prop('permutation'))
    return [f'{op.indent}{op.results[0]} = vector.transpose {op.operands[0]}, [{", ".join(map(str, perm))}]'
            f' : {op.operand_types[0]} to {op.result_types[0]}']


def tpu_dynamic_rotate(op, names, ctx):
    """"tpu.dynamic_rotate"(%x, %shift) <{dimension = d}> -> jnp.roll(x, shift, d), through memory.

    Pallas's roll primitive (jax/_src/pallas/mosaic/primitives.py) lowers off-TPU
    to `jnp.roll(x, shift, axis)`: result[i] = x[(i - shift) mod n] along d. The
    row writes x twice, end to end along d, into a buffer of 2n and reads n
    elements from n - (shift mod n): element i is x[(i - shift) mod n]."""
    if op.prop('stride') is not None or op.prop('stride_dimension') is not None:
        raise Unsupported('tpu.dynamic_rotate with a stride')
    d = int_attr(op.prop('dimension'))
    t = parse_shaped(op.operand_types[0])
    if not 0 <= d < t.rank:
        raise Unsupported(f'tpu.dynamic_rotate dimension {d} of {op.operand_types[0]}')
    n = t.shape[d]
    wide = list(t.shape)
    wide[d] = 2 * n
    buf_t = t.text(shape=wide, kind='memref')
    ind, out = op.indent, []
    c0 = _zero_index(names, ind, out)
    cn, buf = names.fresh('n'), names.fresh('twice')
    out.append(f'{ind}{cn} = arith.constant {n} : index')
    out.append(f'{ind}{buf} = memref.alloc() : {buf_t}')
    for start in (c0, cn):
        idx = ', '.join(start if i == d else c0 for i in range(t.rank))
        out.append(f'{ind}vector.transfer_write {op.operands[0]}, {buf}[{idx}] {{in_bounds = {_in_bounds(t.rank)}}}'
                   f' : {t.text()}, {buf_t}')
    amount, rem, neg, up, mod, start = (names.fresh(w) for w in ('amount', 'rem', 'neg', 'up', 'mod', 'start'))
    out.append(f'{ind}{amount} = arith.index_cast {op.operands[1]} : {op.operand_types[1]} to index')
    out.append(f'{ind}{rem} = arith.remsi {amount}, {cn} : index')
    out.append(f'{ind}{neg} = arith.cmpi slt, {rem}, {c0} : index')
    out.append(f'{ind}{up} = arith.addi {rem}, {cn} : index')
    out.append(f'{ind}{mod} = arith.select {neg}, {up}, {rem} : index')
    out.append(f'{ind}{start} = arith.subi {cn}, {mod} : index')
    pad = _pad(names, ind, t.elem, out)
    idx = ', '.join(start if i == d else c0 for i in range(t.rank))
    out.append(f'{ind}{op.results[0]} = vector.transfer_read {buf}[{idx}], {pad} {{in_bounds = {_in_bounds(t.rank)}}}'
               f' : {buf_t}, {t.text()}')
    out.append(f'{ind}memref.dealloc {buf} : {buf_t}')
    return out


def _shape_and_width(text):
    """`vector<8x128xf32>` -> ([8, 128], 32); a scalar `bf16` -> (None, 16)."""
    t = parse_shaped(text) if text.startswith('vector<') else None
    elem = t.elem if t else text
    width = re.search(r'\d+', elem)
    if not width:
        raise Unsupported(f'tpu.bitcast of element type {elem}')
    return (t.shape if t else None), int(width.group(0))


def tpu_bitcast(op, names, ctx):
    """"tpu.bitcast"(%x) : (vector<SxA>) -> vector<SxB>, A and B of one width -> arith.bitcast.

    With equal widths the shape is unchanged and each element's bits are read
    as the other type (lax.bitcast_convert_type), which is arith.bitcast's
    meaning. Between widths Mosaic packs elements along the second-minor dim
    (the shape changes): no row."""
    if _shape_and_width(op.operand_types[0]) != _shape_and_width(op.result_types[0]):
        raise Unsupported(f'tpu.bitcast from {op.operand_types[0]} to {op.result_types[0]} '
                          '(only equal shapes and element widths)')
    return [f'{op.indent}{op.results[0]} = arith.bitcast {op.operands[0]} : {op.operand_types[0]} to '
            f'{op.result_types[0]}']


def tpu_assume_multiple(op, names, ctx):
    """"tpu.assume_multiple"(%x) is a hint: the value is %x (max(x, x) = x keeps the SSA name)."""
    return [f'{op.indent}{op.results[0]} = arith.maxsi {op.operands[0]}, {op.operands[0]} : {op.result_types[0]}']


def tpu_iteration_bound(op, names, ctx):
    """"tpu.iteration_bound"() <{dim = k}> -> the grid size along k (static in the harness)."""
    k = int_attr(op.prop('dim'))
    bounds = ctx['iteration_bounds']
    if bounds is None:
        raise Unsupported('tpu.iteration_bound outside a Pallas kernel (no grid)')
    if not 0 <= k < len(bounds) or bounds[k] < 0:
        raise Unsupported(f'tpu.iteration_bound dim {k} of iteration_bounds {bounds} (dynamic grids)')
    return [f'{op.indent}{op.results[0]} = arith.constant {bounds[k]} : {op.result_types[0]}']


def tpu_concatenate(op, names, ctx):
    """"tpu.concatenate"(%a, %b, ...) <{dimension = d}> -> each operand written at its offset along d.

    The result starts as zeros of its type; each operand, in order, is inserted
    where the previous ones end along d (lax.concatenate's meaning), so every
    element is written exactly once."""
    d = int_attr(op.prop('dimension'))
    t = parse_shaped(op.result_types[0])
    if not 0 <= d < t.rank:
        raise Unsupported(f'tpu.concatenate dimension {d} of {op.result_types[0]}')
    zero = '0.000000e+00' if t.elem.startswith(('f', 'bf')) else 'false' if t.elem == 'i1' else '0'
    ind, out = op.indent, []
    acc = names.fresh('zeros')
    out.append(f'{ind}{acc} = arith.constant dense<{zero}> : {op.result_types[0]}')
    offset = 0
    for k, (x, x_type) in enumerate(zip(op.operands, op.operand_types)):
        piece = parse_shaped(x_type)
        offsets = ', '.join(str(offset) if i == d else '0' for i in range(t.rank))
        strides = ', '.join('1' for _ in range(piece.rank))
        nxt = op.results[0] if k == len(op.operands) - 1 else names.fresh('concat')
        out.append(f'{ind}{nxt} = vector.insert_strided_slice {x}, {acc} {{offsets = [{offsets}], strides = [{strides}]}}'
                   f' : {x_type} into {op.result_types[0]}')
        acc, offset = nxt, offset + piece.shape[d]
    return out


TPU_OPS = {
    'tpu.concatenate': tpu_concatenate,
    'tpu.vector_store': tpu_vector_store,
    'tpu.matmul': tpu_matmul,
    'tpu.iota': tpu_iota,
    'tpu.transpose': tpu_transpose,
    'tpu.dynamic_rotate': tpu_dynamic_rotate,
    'tpu.bitcast': tpu_bitcast,
    'tpu.assume_multiple': tpu_assume_multiple,
    'tpu.iteration_bound': tpu_iteration_bound,
    # tpu.region / tpu.yield: handled in convert_body (they open and close a region).
}
