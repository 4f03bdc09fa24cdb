"""Reads Mosaic text (normalized by mlir-opt-19) and applies upstream_table.

convert(): a TensorCore kernel module; returns the kernel's grid and window
description for the driver, and the module text with every `tpu` construct
replaced through the table. convert_functions(): plain functions (no kernel),
as to_upstream.py hands them over.
"""

import re

import upstream_table as table
from mlir_text import TextError, int_attr, int_list, matching, parse_generic, split_top

_FUNC = re.compile(r'^  func\.func (?:(?:public|private) )?@([\w$.-]+)\(')
_MEMSPACE = re.compile(r', "(' + '|'.join(table.MEMORY_SPACES) + r')">')


class Kernel:
    """The kernel func's signature and attributes, as the driver needs them."""

    def __init__(self, name, arg_types, attrs):
        self.name = name
        core = attrs.get('tpu.core_type')
        if core != '#tpu.core_type<tc>':
            raise table.Unsupported(f'kernel @{name} has tpu.core_type = {core}: the harness runs TensorCore kernels')
        bounds = attrs.get('iteration_bounds')
        self.iteration_bounds = int_list(bounds) if bounds else []
        if any(b < 0 for b in self.iteration_bounds):
            raise table.Unsupported(f'kernel @{name}: dynamic grid sizes in iteration_bounds {bounds}')
        self.n_prefetch = int_attr(attrs.get('scalar_prefetch', '0 : i64'))
        n_scratch = int_attr(attrs.get('scratch_operands', '0 : i64'))
        grid = len(self.iteration_bounds)
        if any(t != 'i32' for t in arg_types[:grid]):
            raise TextError(f'kernel @{name}: the first {grid} arguments must be the i32 grid indices')
        rest = arg_types[grid + self.n_prefetch:]
        self.scratch_types = rest[len(rest) - n_scratch:] if n_scratch else []
        self.io_arg_types = rest[:len(rest) - n_scratch]
        params = attrs.get('window_params')
        self.window_params = None
        if params is not None:
            self.window_params = [_window(name, p) for p in split_top(params.strip()[1:-1])]
            if len(self.window_params) != len(self.io_arg_types):
                raise TextError(f'kernel @{name}: {len(self.window_params)} window_params entries for '
                                f'{len(self.io_arg_types)} input/output operands')
        elif grid:
            raise TextError(f'kernel @{name}: a grid without window_params')
        for t in self.scratch_types:
            if 'semaphore' in t or not t.startswith('memref<'):
                raise table.Unsupported(f'kernel @{name}: scratch operand {t} (semaphores are not simulated)')


def _window(kernel, text):
    """One window_params dict -> {'transform': name, 'shape': [...]} or None for `{}`."""
    body = text.strip()[1:-1].strip()
    if not body:
        return None
    entry = {}
    for item in split_top(body):
        key, _, value = item.partition('=')
        entry[key.strip()] = value.strip()
    if 'window_kind' in entry:
        raise table.Unsupported(f'kernel @{kernel}: window_kind {entry["window_kind"]} (element windows)')
    if 'transform_indices' not in entry or 'window_bounds' not in entry:
        raise TextError(f'kernel @{kernel}: window_params entry {text.strip()}')
    transform = entry['transform_indices']
    if not transform.startswith('@'):
        raise table.Unsupported(f'kernel @{kernel}: transform_indices = {transform} (affine maps: SparseCore form)')
    return {'transform': transform[1:], 'shape': int_list(entry['window_bounds'])}


def _func_header(line):
    """`func.func @k(%arg0: t, ...) [-> ...] [attributes {...}] {` -> (name, arg types, attrs text)."""
    m = _FUNC.match(line)
    open_paren = m.end() - 1
    close = matching(line, open_paren)
    args = split_top(line[open_paren + 1:close - 1])
    types = []
    for a in args:
        _, _, t = a.partition(':')
        t = t.strip()
        if t.endswith('}'):  # argument attributes
            t = t[:t.rindex('{')].strip()
        types.append(t)
    rest = line[close:]
    attrs = {}
    at = rest.find(' attributes {')
    if at >= 0:
        start = at + len(' attributes ')
        end = matching(rest, start)
        for item in split_top(rest[start + 1:end - 1]):
            key, _, value = item.partition('=')
            attrs[key.strip()] = value.strip()
        rest_line = line[:close] + rest[:at] + rest[end:]
    else:
        rest_line = line
    return m.group(1), types, attrs, rest_line


def _module_body(normalized):
    """The lines inside mlir-opt's `module { ... }`, memory spaces dropped (row 1 of the table)."""
    if 'semaphore_mem' in normalized:
        raise table.Unsupported('semaphore memory (`#tpu.memory_space<semaphore_mem>`): semaphores '
                                'and DMAs are not simulated')
    lines = _MEMSPACE.sub('>', normalized).rstrip('\n').split('\n')
    if lines[0].strip() != 'module {' or lines[-1].strip() != '}':
        raise TextError('expected one `module { ... }` (mlir-opt output)')
    return lines[1:-1]


def _kernels(body):
    """(name, signature types, attributes) of each func carrying tpu.core_type."""
    found = []
    for line in body:
        if _FUNC.match(line):
            name, types, attrs, _ = _func_header(line)
            if 'tpu.core_type' in attrs:
                found.append((name, types, attrs))
    return found


def convert(normalized):
    """A Pallas kernel module: applies the table; returns (Kernel, upstream text without `module {}`)."""
    body = _module_body(normalized)
    kernels = _kernels(body)
    if len(kernels) > 1:
        raise TextError(f'two functions carry tpu.core_type: @{kernels[0][0]} and @{kernels[1][0]}')
    if not kernels:
        raise TextError('no function carries tpu.core_type: not a Mosaic kernel module')
    kernel = Kernel(*kernels[0])
    return kernel, _convert_body(body, {'iteration_bounds': kernel.iteration_bounds}, kernel.name)


def convert_functions(normalized):
    """Plain functions (no Pallas kernel, e.g. one lowered value op per func): applies the
    same table; returns the upstream text without `module {}`."""
    body = _module_body(normalized)
    kernels = _kernels(body)
    if kernels:
        raise table.Unsupported(f'@{kernels[0][0]} is a Pallas kernel (tpu.core_type): run it with mosaic_exec.py')
    return _convert_body(body, {'iteration_bounds': None}, None)


def _convert_body(body, ctx, kernel_name):
    """Every line through the table; the kernel's attributes are dropped (the driver read them)."""
    names = table.Names()
    out, regions = [], []
    for line in body:
        if _FUNC.match(line):
            name, _, _, stripped = _func_header(line)
            out.append(stripped if name == kernel_name else line)
            continue
        out.extend(_convert_line(line, names, ctx, regions))
    if regions:
        raise TextError('unterminated tpu.region')
    text = _patch_region_results('\n'.join(out))
    leftover = re.search(r'[#!"]tpu\.[\w.]+', text)
    if leftover:
        raise table.Unsupported(f'`{leftover.group(0).lstrip(chr(34))}` has no upstream replacement')
    return text


def _convert_line(line, names, ctx, regions):
    stripped = line.strip()
    if regions and stripped.startswith('}) : () -> ') and line.startswith(regions[-1] + '})'):
        regions.pop()
        return [line[:line.index('}')] + '}']
    op = parse_generic(line)
    if op is None:
        if ' = vector.load ' in line:
            return table.vector_load(line, names)
        if stripped.startswith('vector.store '):
            return table.vector_store(line, names)
        return [line]
    if not op.name.startswith('tpu.'):
        return [line]
    if op.name == 'tpu.region':
        # `%r:N = "tpu.region"() ({` ... `}) : () -> (types)`: a scoped allocation region.
        if not op.opens_region:
            raise TextError('tpu.region without a region: ' + stripped)
        regions.append(op.indent)
        # Result types, if any, are filled in from the scf.yield by _patch_region_results.
        lhs = line[:line.index('"tpu.region"')]
        return [f'{lhs}scf.execute_region {{']
    if op.name == 'tpu.yield':
        values = ', '.join(op.operands)
        types = ', '.join(op.operand_types)
        return [f'{op.indent}scf.yield' + (f' {values} : {types}' if values else '')]
    rule = table.TPU_OPS.get(op.name)
    if rule is None:
        raise table.Unsupported(f'`{op.name}` has no upstream replacement')
    if len(op.results) > 1:
        raise table.Unsupported(f'`{op.name}` with {len(op.results)} results')
    return rule(op, names, ctx)


def _patch_region_results(text):
    """Gives each `scf.execute_region` made from a tpu.region the types of its yield.

    The yield is the region's last line at the region's own indentation + 2
    (mlir-opt's printing), so nested scf ops' yields are not confused with it."""
    lines = text.split('\n')
    for i, line in enumerate(lines):
        if not line.rstrip().endswith('scf.execute_region {'):
            continue
        indent = line[:len(line) - len(line.lstrip())]
        for j in range(i + 1, len(lines)):
            if lines[j].startswith(indent + '}'):
                last = lines[j - 1]
                if last.startswith(indent + '  scf.yield ') and ' : ' in last:
                    types = last.partition(' : ')[2]
                    lines[i] = line.replace('scf.execute_region {', f'scf.execute_region -> ({types}) {{')
                break
    return '\n'.join(lines)
