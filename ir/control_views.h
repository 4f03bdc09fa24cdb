// Typed views of the control ops, as GridMapping is of pallas_call: the
// operand layout of each op and the matching body parameters, by role, read
// in one place instead of `int_param("num_consts")` arithmetic at every use.
//
//   for[body, num_consts=k]              %lo, %hi, consts..., carries...
//       body(i, consts..., carries...) -> carries...
//   while[cond, body, num_consts=k]      consts..., carries...
//       cond(consts..., carries...) -> i1;  body(consts..., carries...) -> carries...
//   scan[body, length, num_consts=k, num_carry=c, reverse]  consts..., carries..., xs...
//       body(consts..., carries..., x slices...) -> (carries..., y slices...)
//   cond[branches]                       %index, args...;  branch(args...) -> results
//   run_scoped[body]                     args...;  body(args..., scratch Refs...) -> results
//   call[callee], core_map[body]         args...;  body(args...) -> results
//
// A view checks the layout when it is made (an Error at the op, never an
// out-of-range read), so it may be used on unverified ops too.
//
// Each view's static `make` is the inverse: it appends the op to a Builder
// from its parts by role and returns the results, so no pass spells a
// control op's params (`num_consts`, `branches`, ...) or counts its operands.
#pragma once

#include <span>

#include "ir/builder.h"
#include "ir/ir.h"

namespace tessera {

// The parts of an operand list or body parameter list a loop splits it into.
template <class T>
struct LoopParts {
  std::span<const T> consts, carries, xs;
};

class ForView {
 public:
  explicit ForView(const Op& op);
  static std::vector<Value> make(Builder& b, Value lo, Value hi, std::vector<Value> consts, std::vector<Value> carries,
                                 BodyPtr body);
  const Op& op;
  int num_consts, num_carries;

  const Value& lo() const { return op.operands[0]; }
  const Value& hi() const { return op.operands[1]; }
  static constexpr int first_const = 2;  // operand index of the first constant
  int first_carry() const { return first_const + num_consts; }
  LoopParts<Value> operands() const;
  const Body& body() const { return *body_; }
  const Var* index_param() const { return body_->params()[0]; }
  LoopParts<Var*> params() const;  // the body's, after the induction variable

 private:
  const Body* body_;
};

class WhileView {
 public:
  explicit WhileView(const Op& op);
  static std::vector<Value> make(Builder& b, std::vector<Value> consts, std::vector<Value> carries, BodyPtr cond,
                                 BodyPtr body);
  const Op& op;
  int num_consts, num_carries;

  int first_carry() const { return num_consts; }
  LoopParts<Value> operands() const;
  const Body& cond() const { return *cond_; }
  const Body& body() const { return *body_; }
  LoopParts<Var*> body_params() const;
  LoopParts<Var*> cond_params() const;

 private:
  const Body* cond_;
  const Body* body_;
};

class ScanView {
 public:
  explicit ScanView(const Op& op);
  static std::vector<Value> make(Builder& b, int64_t length, std::vector<Value> consts, std::vector<Value> carries,
                                 std::vector<Value> xs, BodyPtr body, bool reverse = false);
  const Op& op;
  int64_t length;
  int num_consts, num_carries, num_xs;
  bool reverse;

  int first_carry() const { return num_consts; }
  int first_x() const { return num_consts + num_carries; }
  LoopParts<Value> operands() const;
  const Body& body() const { return *body_; }
  LoopParts<Var*> params() const;
  int num_ys() const { return static_cast<int>(body_->outputs().size()) - num_carries; }

 private:
  const Body* body_;
};

class CondView {
 public:
  explicit CondView(const Op& op);
  static std::vector<Value> make(Builder& b, Value index, std::vector<Value> args, std::vector<BodyPtr> branches);
  const Op& op;

  const Value& index() const { return op.operands[0]; }
  std::span<const Value> args() const { return std::span<const Value>(op.operands).subspan(1); }
  const std::vector<BodyPtr>& branches() const { return *branches_; }

 private:
  const std::vector<BodyPtr>* branches_;
};

class RunScopedView {
 public:
  explicit RunScopedView(const Op& op);
  static std::vector<Value> make(Builder& b, std::vector<Value> args, BodyPtr body);
  const Op& op;

  std::span<const Value> args() const { return op.operands; }
  const Body& body() const { return *body_; }
  std::span<Var* const> arg_params() const { return std::span<Var* const>(body_->params()).first(op.operands.size()); }
  std::span<Var* const> scratch_params() const { return std::span<Var* const>(body_->params()).subspan(op.operands.size()); }

 private:
  const Body* body_;
};

// A parameter of a nested body and the operand of its op that it receives
// unchanged (on entry, for a loop's carries).
struct ForwardedOperand {
  const Var* param;
  const Value& operand;
};

// The parameters of `nested` (a body of `op`) that receive one of `op`'s
// operands as it is: loop constants and carries, cond and run_scoped
// arguments, call and core_map arguments, custom_jvp_call's primals. Induction variables, scan slices,
// scratch Refs and pmap's per-device slices are not forwarded; nor is
// anything of a pallas_call (ir/grid_mapping.h says what its bodies get).
// Throws at `op` when its layout is malformed, as the views do.
std::vector<ForwardedOperand> forwarded_operands(const Op& op, const Body& nested);

}  // namespace tessera
