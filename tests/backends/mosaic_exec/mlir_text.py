"""Small helpers to read the MLIR text that `mlir-opt-19` prints.

The harness never parses arbitrary MLIR: it reads the text after upstream
`mlir-opt-19 --allow-unregistered-dialect` re-printed it, which puts one op per
line, upstream ops in their pretty form and unregistered (`tpu`) ops in the
generic form `%r = "tpu.x"(%a, %b) <{props}> : (types) -> types`.
"""

import re

_OPEN = {'<': '>', '(': ')', '[': ']', '{': '}'}
_CLOSE = {v: k for k, v in _OPEN.items()}


class TextError(Exception):
    """A problem with the module text, reported to the user as is."""


def split_top(text, sep=','):
    """Splits TEXT at SEP outside brackets and quotes; strips the pieces."""
    parts, depth, cur, quoted = [], 0, [], False
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            quoted = not quoted
        elif not quoted:
            # `->` inside a function type is not a closing bracket.
            if ch == '-' and text[i + 1:i + 2] == '>':
                cur.append('->')
                i += 2
                continue
            if ch in _OPEN:
                depth += 1
            elif ch in _CLOSE:
                depth -= 1
            elif ch == sep and depth == 0:
                parts.append(''.join(cur).strip())
                cur = []
                i += 1
                continue
        cur.append(ch)
        i += 1
    tail = ''.join(cur).strip()
    if tail or parts:
        parts.append(tail)
    return parts


def matching(text, start):
    """Index just past the bracket that closes the one at TEXT[START]."""
    depth, quoted = 0, False
    i = start
    while i < len(text):
        ch = text[i]
        if ch == '"':
            quoted = not quoted
        elif not quoted:
            if ch == '-' and text[i + 1:i + 2] == '>':
                i += 2
                continue
            if ch in _OPEN:
                depth += 1
            elif ch in _CLOSE:
                depth -= 1
                if depth == 0:
                    return i + 1
        i += 1
    raise TextError('unbalanced brackets in: ' + text.strip())


class ShapedType:
    """vector<8x128xf32> / memref<8x128xf32> (layout and memory space ignored)."""

    def __init__(self, kind, shape, elem):
        self.kind, self.shape, self.elem = kind, list(shape), elem

    @property
    def rank(self):
        return len(self.shape)

    def text(self, shape=None, kind=None):
        shape = self.shape if shape is None else shape
        dims = ''.join(f'{d}x' for d in shape)
        return f'{kind or self.kind}<{dims}{self.elem}>'


_SHAPED = re.compile(r'^(vector|memref)<((?:\d+x)*)([a-z]\w*)\s*(?:,.*)?>$')


def parse_shaped(text):
    m = _SHAPED.match(text.strip())
    if not m:
        raise TextError('not a static vector/memref type: ' + text.strip())
    shape = [int(d) for d in m.group(2).split('x') if d]
    return ShapedType(m.group(1), shape, m.group(3))


class GenericOp:
    """One generic-form op on one line: results, name, operands, properties, types."""

    def __init__(self, indent, results, name, operands, props, operand_types, result_types, opens_region):
        self.indent, self.results, self.name = indent, results, name
        self.operands, self.props = operands, props
        self.operand_types, self.result_types = operand_types, result_types
        self.opens_region = opens_region

    def prop(self, key):
        """The text of property KEY (or None)."""
        for item in split_top(self.props):
            k, _, v = item.partition('=')
            if k.strip() == key:
                return v.strip()
        return None


_GENERIC_HEAD = re.compile(r'^(\s*)(?:(%[\w$.-]+)(?::(\d+))? = )?"([\w.]+)"\(')


def parse_generic(line):
    """Parses a one-line generic op (or the first line of one with a region)."""
    m = _GENERIC_HEAD.match(line)
    if not m:
        return None
    indent, res, count, name = m.group(1), m.group(2), m.group(3), m.group(4)
    results = []
    if res:
        results = [res] if count is None else [f'{res}#{i}' for i in range(int(count))]
    open_paren = m.end() - 1
    end = matching(line, open_paren)
    operands = split_top(line[open_paren + 1:end - 1])
    rest = line[end:].strip()
    props = ''
    if rest.startswith('<{'):
        close = matching(rest, 1)
        props = rest[2:close - 1]
        rest = rest[close + 1:].strip()
    if rest.startswith('{'):  # discardable attributes: read like properties
        close = matching(rest, 0)
        props = (props + ', ' if props else '') + rest[1:close - 1]
        rest = rest[close:].strip()
    if rest.startswith('({'):
        return GenericOp(indent, results, name, operands, props, [], [], True)
    if not rest.startswith(':'):
        raise TextError('cannot read the generic op: ' + line.strip())
    fn_type = rest[1:].strip()
    close = matching(fn_type, 0)
    operand_types = split_top(fn_type[1:close - 1])
    out = fn_type[close:].strip()
    if not out.startswith('->'):
        raise TextError('cannot read the type of: ' + line.strip())
    out = out[2:].strip()
    result_types = split_top(out[1:-1]) if out.startswith('(') else [out]
    return GenericOp(indent, results, name, operands, props, operand_types, result_types, False)


def int_list(text):
    """`array<i32: 1, 0>` or `[1, 0]` -> [1, 0]."""
    text = text.strip()
    if text.startswith('array<'):
        _, _, body = text[len('array<'):-1].partition(':')
        return [int(x) for x in body.split(',') if x.strip()]
    if text.startswith('['):
        return [int(x) for x in text[1:-1].split(',') if x.strip()]
    raise TextError('not an integer list: ' + text)


def int_attr(text):
    """`0 : i32` -> 0."""
    return int(text.split(':')[0].strip())
