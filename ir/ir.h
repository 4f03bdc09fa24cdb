// The tessera IR: ops, bodies (jaxpr-like closed functions) and modules.
//
//   Module  = named Bodies (funcs, kernels, index maps), in order.
//   Body    = parameters, ops, outputs. Bodies are closed: an op inside may use
//             only the body's parameters and earlier results. Nested bodies
//             (a pallas_call's kernel, a cond's branches) are op parameters.
//   Op      = primitive + operands + results + static params + indexers.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/diagnostics.h"
#include "ir/effects.h"
#include "ir/param_keys.h"
#include "ir/params.h"
#include "ir/type.h"
#include "ir/value.h"

namespace tessera {

struct Primitive;

struct Op {
  const Primitive* prim = nullptr;
  std::vector<Value> operands;
  std::vector<Var*> results;
  Params params;                  // every schema entry present, in schema order
  std::vector<Indexer> indexers;  // `%ref[...]` operands, in operand order
  Loc loc;

  const std::string& name() const;

  // Typed parameter access; throws an Error naming the op if absent or mistyped.
  const Param& param(std::string_view key) const;
  bool has_param(std::string_view key) const;
  int64_t int_param(std::string_view key) const { return get<int64_t>(key); }
  double float_param(std::string_view key) const { return get<double>(key); }
  bool bool_param(std::string_view key) const { return get<bool>(key); }
  const std::string& str_param(std::string_view key) const { return get<std::string>(key); }
  DType dtype_param(std::string_view key) const { return get<DType>(key); }
  const Type& type_param(std::string_view key) const { return get<Type>(key); }
  const std::vector<int64_t>& ints_param(std::string_view key) const { return get<std::vector<int64_t>>(key); }
  const std::vector<std::string>& idents_param(std::string_view key) const { return get<std::vector<std::string>>(key); }
  const std::vector<Type>& types_param(std::string_view key) const { return get<std::vector<Type>>(key); }
  const BodyPtr& body_param(std::string_view key) const { return get<BodyPtr>(key); }
  const std::vector<BodyPtr>& bodies_param(std::string_view key) const { return get<std::vector<BodyPtr>>(key); }
  const std::vector<BlockSpec>& specs_param(std::string_view key) const { return get<std::vector<BlockSpec>>(key); }
  const IntPairs& pairs_param(std::string_view key) const { return get<IntPairs>(key); }
  void set_param(std::string_view key, Param value);
  // Typed access by key (ir/param_keys.h): `op.param(keys::axis)`.
  template <class T>
  const T& param(ParamKey<T> key) const {
    return get<T>(key.name);
  }
  template <class T>
  bool has(ParamKey<T> key) const {
    return has_param(key.name);
  }
  template <class T>
  void set(ParamKey<T> key, T value) {
    set_param(key.name, std::move(value));
  }

  // Operand positions that are not dynamic indices of an indexer: the operands
  // as a reader of the text sees them (`swap %r[%i], %v` -> {0, 2}).
  std::vector<int> main_operands() const;
  // How many main operands there are (main_operands().size(), without the list).
  size_t num_main_operands() const;
  // The operand position of the k-th main operand; the k-th main operand.
  int main_operand_index(int k) const;
  const Value& main_operand(int k) const { return operands[main_operand_index(k)]; }

  // The indexer whose base is operand `i`, or null.
  const Indexer* indexer_for(int operand) const;
  // Every body held in a param (kernels, branches, index maps of specs).
  std::vector<BodyPtr> nested_bodies() const;

 private:
  template <class T>
  const T& get(std::string_view key) const;
};

enum class BodyKind : uint8_t { func, kernel, index_map, fn };
std::string_view body_kind_name(BodyKind k);

class Body {
 public:
  Body(std::string name, BodyKind kind) : name_(std::move(name)), kind_(kind) {}
  Body(const Body&) = delete;
  Body& operator=(const Body&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  BodyKind kind() const { return kind_; }
  const Loc& loc() const { return loc_; }
  void set_loc(Loc l) { loc_ = std::move(l); }

  // Variables are owned here; pointers stay valid for the body's lifetime.
  Var* new_var(Type type, std::string name = "", Loc loc = {});
  Var* add_param(Type type, std::string name, Loc loc = {});

  const std::vector<Var*>& params() const { return params_; }
  std::vector<Op>& ops() { return ops_; }
  const std::vector<Op>& ops() const { return ops_; }
  const std::vector<Value>& outputs() const { return outputs_; }
  void set_outputs(std::vector<Value> outs) { outputs_ = std::move(outs); }
  std::vector<Type> param_types() const;
  std::vector<Type> output_types() const;

 private:
  std::string name_;
  BodyKind kind_;
  Loc loc_;
  // Vars live in chunks that double in size (4, 8, ... 256 Vars): addresses
  // stay stable, a large body makes one allocation per 256 Vars instead of one
  // per Var, and Vars defined together sit together in memory.
  std::vector<std::unique_ptr<Var[]>> var_chunks_;
  size_t last_chunk_size_ = 0, last_chunk_used_ = 0;
  std::vector<Var*> params_;
  std::vector<Op> ops_;
  std::vector<Value> outputs_;
};

BodyPtr make_body(std::string name, BodyKind kind);

class Module {
 public:
  // Adds a named top-level body; throws on a duplicate name.
  void add(BodyPtr body);
  BodyPtr find(std::string_view name) const;
  // The entry body (`main` unless named); throws "no function @name in module".
  BodyPtr entry(std::string_view name = "main") const;
  const std::vector<BodyPtr>& symbols() const { return symbols_; }
  bool is_symbol(const Body* b) const;
  // A fresh symbol name starting with `stem` ("k", "k_1", ...).
  std::string unique_name(std::string_view stem) const;

 private:
  std::vector<BodyPtr> symbols_;
  std::map<std::string, BodyPtr, std::less<>> by_name_;
};

}  // namespace tessera
