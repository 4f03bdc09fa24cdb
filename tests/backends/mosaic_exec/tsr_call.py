"""Reads, from a .tsr file, the one pallas_call the harness runs and how it meets the function.

The harness compares the kernel with `tessera run` of the whole function, so it
needs the function to be exactly one pallas_call: its operands are the
function's parameters (scalar prefetch first) and its results are returned in
order. That is the shape of every zoo kernel; anything else is refused with a
message rather than guessed.
"""

import re

import numpy as np

from mlir_text import matching

_DTYPES = {'f32': np.float32, 'i32': np.int32}
_PARAM = re.compile(r'%([\w.$-]+)\s*:\s*([a-z]\w*)(?:\[([\d,\s]*)\])?')


class TsrError(Exception):
    pass


class Call:
    def __init__(self, params, operands, results, n_prefetch):
        self.params = params            # [(name, dtype, shape)] of the function
        self.operands = operands        # parameter names, in call order
        self.results = results
        self.n_prefetch = n_prefetch


def read(path, func='main'):
    text = open(path, encoding='utf-8').read()
    text = re.sub(r'#[^\n]*', '', text)
    m = re.search(r'\bfunc\s+@' + re.escape(func) + r'\s*\(', text)
    if not m:
        raise TsrError(f'{path}: no func @{func}')
    close = matching(text, m.end() - 1)
    params = []
    for p in _PARAM.finditer(text[m.end():close - 1]):
        elem = p.group(2)
        if elem not in _DTYPES:
            raise TsrError(f'{path}: parameter %{p.group(1)} has element type {elem} (the harness feeds f32, i32)')
        shape = [int(x) for x in p.group(3).split(',')] if p.group(3) and p.group(3).strip() else []
        params.append((p.group(1), elem, shape))
    body_start = text.index('{', close)
    body = text[body_start:matching(text, body_start)]
    calls = list(re.finditer(r'((?:%[\w.$-]+\s*,\s*)*%[\w.$-]+)\s*=\s*pallas_call\s*\[', body))
    if len(calls) != 1:
        raise TsrError(f'{path}: @{func} has {len(calls)} pallas_calls; the harness runs functions made of one')
    call = calls[0]
    attrs_end = matching(body, call.end() - 1)
    attrs = body[call.end():attrs_end - 1]
    line_end = body.find('\n', attrs_end)
    operands = [o.strip().lstrip('%') for o in body[attrs_end:line_end].split(',') if o.strip()]
    results = [r.strip().lstrip('%') for r in call.group(1).split(',')]
    pf = re.search(r'num_scalar_prefetch\s*=\s*(\d+)', attrs)
    n_prefetch = int(pf.group(1)) if pf else 0
    names = [p[0] for p in params]
    for o in operands:
        if o not in names:
            raise TsrError(f'{path}: pallas_call operand %{o} is not a parameter of @{func}')
    ret = re.search(r'\breturn\b([^\n]*)', body)
    returned = [r.strip().lstrip('%') for r in ret.group(1).split(',') if r.strip()] if ret else []
    if returned != results:
        raise TsrError(f'{path}: @{func} must return the pallas_call results {results} in order (returns {returned})')
    return Call(params, operands, results, n_prefetch)


def make_inputs(call, seed):
    """Deterministic inputs by parameter name: f32 uniform in [-1, 1), i32 in [0, 8)."""
    rng = np.random.default_rng(seed)
    inputs = {}
    for name, elem, shape in call.params:
        if elem == 'f32':
            inputs[name] = rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)
        else:
            inputs[name] = rng.integers(0, 8, size=shape).astype(np.int32)
    return inputs
