// `tessera import mosaic --devices N`: kernels that talk to other devices
// (remote DMAs and signals, barrier semaphores, `tpu.device_id`). A Mosaic
// module does not say how many devices there are, so the importer needs N;
// given it, @main maps the pallas_call over a device axis and the imported
// program runs, proves and re-emits as the pmap it was emitted from.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "analysis/prove/prove.h"
#include "backends/mosaic/emit_module.h"
#include "frontends/mosaic/mosaic_import.h"
#include "ir/printer.h"
#include "tests/interpreter/interp_test_util.h"

namespace {

using namespace tessera;
using namespace tessera::interp;

std::string source_path(const std::string& rel) { return std::string(TESSERA_SOURCE_ROOT) + "/" + rel; }

Module import_with(const std::string& text, const std::string& shapes, std::optional<int64_t> devices) {
  MosaicImportOptions o;
  o.shapes = shapes;
  o.devices = devices;
  return import_mosaic(text, "t.mlir", o);
}

// The formatted error of importing `text`, "" when it imports.
std::string import_error(const std::string& text, const std::string& shapes, std::optional<int64_t> devices) {
  try {
    import_with(text, shapes, devices);
  } catch (const Error& e) {
    return e.formatted();
  }
  return "";
}

std::string emitted(const Module& m) { return backends::mosaic::emit_modules(m, *m.entry()); }

// The op of `f`'s body (one level) named `name`.
const Op* find_op(const Body& f, const std::string& name) {
  for (const Op& op : f.ops())
    if (op.name() == name) return &op;
  return nullptr;
}

bool kernel_uses(const Body& b, const std::string& name) {
  for (const Op& op : b.ops()) {
    if (op.name() == name) return true;
    for (const BodyPtr& inner : op.nested_bodies())
      if (kernel_uses(*inner, name)) return true;
  }
  return false;
}

// The verdict of `kind` about the kernel of the only pallas_call of `m`.
prove::Verdict kernel_verdict(const Module& m, const std::string& kind) {
  for (const prove::Obligation& ob : prove::prove_module(m))
    if (ob.subject == "kernel" && ob.kind == kind) return ob.verdict;
  FAIL("no claim " << kind);
  return prove::Verdict::unknown;
}

// The message of the run's Error without its location, "" when it runs.
std::string run_problem(const Module& m, const std::vector<Array>& in) {
  try {
    run_function(m, "main", in);
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

// A kernel in a pmap of one device whose only device operation is `body`.
Module one_device_program(const std::string& body) {
  return itest::parse_checked(
      "kernel @k(%x: ref<f32[8,128], vmem>, %o: ref<f32[8,128], vmem>, %s: ref<dma_sem, semaphore>, "
      "%r: ref<dma_sem, semaphore>, %b: ref<sem, semaphore>) {\n" +
      body +
      "  %v = get %x[:, :]\n  swap %o[:, :], %v\n}\n"
      "func @main(%x: f32[1,8,128]) -> f32[1,8,128] {\n"
      "  %out = pmap[axis_name=dev, axis_size=1, in_axes=(0), out_axes=(0), body=fn(%xs: f32[8,128]) -> f32[8,128] {\n"
      "    %y = pallas_call[kernel=@k, grid=(1), in_specs=[spec()], out_specs=[spec()], out_shapes=[f32[8,128]],\n"
      "                     scratch=[ref<dma_sem, semaphore>, ref<dma_sem, semaphore>, ref<sem, semaphore>]] %xs\n"
      "    return %y\n  }] %x\n  return %out\n}\n");
}

const char* const kPerDevice = "f32[8,128] -> f32[8,128]";

}  // namespace

TEST_CASE("ring all-reduce and halo exchange import with --devices 4, run equal, prove and are a fixed point") {
  for (const char* name : {"ring_allreduce.tsr", "halo_exchange.tsr"}) {
    CAPTURE(std::string(name));
    Module original = parse_file(source_path(std::string("examples/") + name));
    const std::string text = emitted(original);
    Module imported = import_with(text, kPerDevice, 4);

    // @main maps one pallas_call over `dev`; the barrier gives it a collective id.
    const Op* pmap = find_op(*imported.entry(), "pmap");
    REQUIRE(pmap != nullptr);
    CHECK(pmap->param(keys::axis_size) == 4);
    CHECK(pmap->param(keys::axis_name) == "dev");
    CHECK(imported.entry()->param_types()[0] == Type::array(DType::f32, {4, 8, 128}));
    const Op* call = find_op(*pmap->param(keys::body), "pallas_call");
    REQUIRE(call != nullptr);
    CHECK(call->param(keys::collective_id) == 0);
    // tpu.device_id is the index along the device axis.
    const Body& kernel = *call->param(keys::kernel);
    CHECK(kernel_uses(kernel, "axis_index"));
    CHECK_FALSE(kernel_uses(kernel, "device_id"));

    const std::vector<Array> in{itest::random(DType::f32, {4, 8, 128}, 5)};
    const std::vector<Array> want = run_function(original, "main", in);
    const std::vector<Array> got = run_function(imported, "main", in);
    REQUIRE(got.size() == 1);
    itest::check_close(got[0], itest::values(want[0]), 1e-6);

    for (const prove::Obligation& ob : prove::prove_module(imported))
      CHECK_MESSAGE(ob.verdict != prove::Verdict::failed, ob.line());

    CHECK(print_module(import_with(emitted(imported), kPerDevice, 4)) == print_module(imported));
  }
}

TEST_CASE("protocol bugs imported with --devices fail as the originals do, in run and in prove") {
  // A wait nothing signals on one device, and a signal to a device that does
  // not exist: the imported kernel deadlocks / stops and prove says FAILED.
  for (const char* name : {"ring_of_one_skips_itself.tsr", "target_out_of_range_one_device.tsr"}) {
    CAPTURE(std::string(name));
    Module original = parse_file(source_path(std::string("tests/robustness/protocol_cases/") + name));
    Module imported = import_with(emitted(original), "f32[4,8] -> f32[4,8]", 1);
    const std::vector<Array> in{itest::random(DType::f32, {1, 4, 8}, 3)};
    const std::string want = run_problem(original, in), got = run_problem(imported, in);
    REQUIRE(!want.empty());
    // The same error up to the names of the kernel's Refs and the locations.
    CHECK(got.substr(0, got.find(':')) == want.substr(0, want.find(':')));
    CHECK((got.find("deadlock") == std::string::npos) == (want.find("deadlock") == std::string::npos));
    CHECK(kernel_verdict(imported, "semaphore balance") == prove::Verdict::failed);
    CHECK(kernel_verdict(original, "semaphore balance") == prove::Verdict::failed);
    CHECK(print_module(import_with(emitted(imported), "f32[4,8] -> f32[4,8]", 1)) == print_module(imported));
  }
  // Grid sizes computed per device: the imported call takes them as an
  // operand with a leading device axis, and the balance stays unknown.
  Module original = parse_file(source_path("tests/robustness/protocol_cases/dynamic_grid_per_device.tsr"));
  const std::string shapes = "i32, f32[4,8] -> f32[4,8]";
  Module imported = import_with(emitted(original), shapes, 2);
  CHECK(imported.entry()->param_types()[0] == Type::array(DType::i32, {2}));
  CHECK(kernel_verdict(original, "semaphore balance") == prove::Verdict::unknown);
  CHECK(kernel_verdict(imported, "semaphore balance") == prove::Verdict::unknown);
  CHECK(print_module(import_with(emitted(imported), shapes, 2)) == print_module(imported));
}

TEST_CASE("without --devices, the first op that talks to another device is one located error") {
  const std::string tail = ": the Mosaic module does not say how many devices there are; give --devices N";
  // The ring reads its device id first.
  const std::string ring = emitted(parse_file(source_path("examples/ring_allreduce.tsr")));
  CHECK(import_error(ring, kPerDevice, std::nullopt) == "t.mlir:4:5: error: `tpu.device_id`" + tail);
  const struct {
    const char* body;
    const char* error;
  } cases[] = {
      {"  dma_start %x[:, :], %o[:, :], %r, %s, 0\n  dma_wait %r, %o[:, :]\n  dma_wait %s, %x[:, :]\n",
       "`tpu.enqueue_dma` to another device"},
      {"  semaphore_signal %b, 1, 0\n  semaphore_wait %b, 1\n", "`tpu.sem_signal` to another device"},
      {"  %g = get_barrier_semaphore\n  semaphore_signal %g, 1, 0\n  semaphore_wait %g, 1\n",
       "`tpu.sem_barrier` (a barrier across devices)"},
  };
  for (const auto& c : cases) {
    CAPTURE(std::string(c.body));
    const std::string text = emitted(one_device_program(c.body));
    const std::string e = import_error(text, kPerDevice, std::nullopt);
    CHECK(e.rfind("t.mlir:", 0) == 0);
    CHECK(itest::contains(e, std::string(": error: ") + c.error + tail));
    // With the device count it imports, and a local kernel still imports without it.
    CHECK(import_error(text, kPerDevice, 1) == "");
  }
  CHECK(import_error(emitted(one_device_program("")), kPerDevice, std::nullopt) == "");
}

TEST_CASE("--devices takes a positive count of a 1-D mesh; anything else is a located error") {
  CHECK(parse_devices("4") == 4);
  CHECK(parse_devices("1") == 1);
  auto error = [](const std::string& text) {
    try {
      parse_devices(text);
    } catch (const Error& e) {
      return e.formatted();
    }
    return std::string();
  };
  for (const char* bad : {"0", "-2", "abc", "", "4devices", "3.5", " 4", "x", "2x", "x4"})
    CHECK(error(bad) == "--devices:1:1: error: `" + std::string(bad) + "` is not a number of devices: give --devices N with N >= 1");
  for (const char* mesh : {"2x4", "2,4", "1x1x8"})
    CHECK(error(mesh) == "--devices:1:1: error: `" + std::string(mesh) +
                             "`: only 1-D meshes are supported (--devices N, the number of devices)");
  // The library checks a count given directly too.
  const std::string ring = emitted(parse_file(source_path("examples/ring_allreduce.tsr")));
  CHECK(import_error(ring, kPerDevice, 0) == "--devices:1:1: error: 0 is not a number of devices: give N >= 1");
  CHECK(import_error(ring, kPerDevice, -3) == "--devices:1:1: error: -3 is not a number of devices: give N >= 1");
}
