// Ordered side effects: debug_print (`tpu.log`, `tpu.log_buffer`),
// debug_check and delay (jax/_src/pallas/mosaic/lowering.py,
// `_debug_print_rule`, `_delay_rule`). The per-core random bits are value
// rules (vector_*.cpp).
#include "backends/mosaic/constants.h"
#include "backends/mosaic/mlir_types.h"
#include "backends/mosaic/ref_indexing.h"
#include "backends/mosaic/rules.h"

namespace tessera::backends::mosaic {
namespace {

// debug_print of one vector: staged through a VMEM buffer that
// `tpu.log_buffer` prints, in a `tpu.region`; the format must end in `{}`,
// which is dropped (the tag is the text before it).
void log_vector(EmitContext& ctx, const Op& op) {
  const std::string& fmt = op.param(keys::fmt);
  const Type& t = op.operands[0].type();
  if (op.operands.size() != 1 || fmt.size() < 2 || fmt.compare(fmt.size() - 2, 2, "{}") != 0 ||
      fmt.find("{}") != fmt.size() - 2)
    throw ctx.error(op, "debug_print of a vector needs it as the only operand and a format ending in its one `{}`");
  if (t.dtype() == DType::i1) throw ctx.error(op, "debug_print of a bool vector is not lowered (print it converted to i32)");
  std::string v = ctx.use(op.operands[0]);
  std::string buffer_type = memref_type(t.shape(), t.dtype(), MemSpace::vmem);
  ctx.line("\"tpu.region\"() ({");
  {
    auto region = ctx.nested(EmitContext::Names::see_enclosing);
    std::string buffer = ctx.fresh("buf");
    ctx.line(buffer + " = memref.alloca() : " + buffer_type);
    std::vector<std::string> zeros;
    for (int d = 0; d < t.rank(); ++d) zeros.push_back(index_constant(ctx, 0));
    ctx.line("vector.store " + v + ", " + buffer + "[" + join(zeros) + "] : " + buffer_type + ", " + value_type(t));
    std::vector<int64_t> shape = t.shape();
    ctx.line("\"tpu.log_buffer\"(" + buffer + ") <{shape = " + i64_array(shape) + ", tag = \"" +
             mlir_string_body(fmt.substr(0, fmt.size() - 2)) + "\"}> : (" + buffer_type + ") -> ()");
    ctx.line("\"tpu.yield\"() : () -> ()");
  }
  ctx.line("}) : () -> ()");
}

// debug_print of scalars: `tpu.log` with each `{}` written `$` + s|u|f + the
// argument number (`formatted = true`); without arguments the text as is.
void lower_debug_print(EmitContext& ctx, const Op& op, const LoweringTable&) {
  for (const Value& v : op.operands)
    if (v.type().rank() != 0) return log_vector(ctx, op);
  std::string fmt = op.param(keys::fmt), tag;
  std::vector<std::string> args, types;
  size_t n = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt.compare(i, 2, "{}") != 0) {
      tag += fmt[i];
      continue;
    }
    if (n >= op.operands.size()) throw ctx.error(op, "debug_print: the format has more `{}` than there are operands");
    const Type& t = op.operands[n].type();
    char kind = is_float(t.dtype()) ? 'f' : t.dtype() == DType::u32 ? 'u' : 's';
    if (t.dtype() != DType::f32 && t.dtype() != DType::i32 && t.dtype() != DType::u32)
      throw ctx.error(op, "debug_print formats only 32-bit integers and f32, got " + t.str());
    tag += std::string("$") + kind + std::to_string(n);
    args.push_back(ctx.use(op.operands[n]));
    types.push_back(element_type(t.dtype()));
    ++n;
    ++i;
  }
  if (n != op.operands.size()) throw ctx.error(op, "debug_print: the format has fewer `{}` than there are operands");
  ctx.line("\"tpu.log\"(" + join(args) + ") <{formatted = " + (n ? "true" : "false") + ", tag = \"" + mlir_string_body(tag) +
           "\"}> : (" + join(types) + ") -> ()");
}

// debug_check: Mosaic's check is `cf.assert` on the predicate, with the message.
void lower_debug_check(EmitContext& ctx, const Op& op, const LoweringTable&) {
  std::string p = ctx.use(op.operands[0]);
  ctx.line("cf.assert " + p + ", \"" + mlir_string_body(op.param(keys::msg)) + "\"");
}

void lower_delay(EmitContext& ctx, const Op& op, const LoweringTable&) {
  std::string ns = ctx.use(op.operands[0]);
  ctx.line("\"tpu.delay\"(" + ns + ") : (i32) -> ()");
}

}  // namespace

void add_debug_rules(LoweringTable& t) {
  t.set("debug_print", lower_debug_print);
  t.set("debug_check", lower_debug_check);
  t.set("delay", lower_delay);
}

}  // namespace tessera::backends::mosaic
