// Every example of the kernel zoo (examples/*.tsr) runs in the interpreter
// and matches a reference computed here with naive loops, under every
// scheduling configuration: 1, 2 and 4 cores, in order and shuffled grids,
// eager and on_wait DMAs, with race detection on (which must stay silent).
#include <algorithm>

#include "interp_test_util.h"

using namespace itest;

namespace {

using Ref = std::vector<double>;
using Reference = std::function<Ref(const std::vector<Array>&)>;

struct Config {
  int cores;
  std::optional<uint64_t> seed;
  RunOptions::Dma dma;
  bool races;
};

std::vector<Config> configs() {
  std::vector<Config> out;
  for (int cores : {1, 2, 4})
    for (std::optional<uint64_t> seed : {std::optional<uint64_t>{}, std::optional<uint64_t>{1}, std::optional<uint64_t>{7}})
      for (auto dma : {RunOptions::Dma::on_wait, RunOptions::Dma::eager}) out.push_back({cores, seed, dma, false});
  out.push_back({1, std::nullopt, RunOptions::Dma::on_wait, true});
  out.push_back({2, 3, RunOptions::Dma::on_wait, true});
  out.push_back({4, 5, RunOptions::Dma::eager, true});
  return out;
}

void check_example(const std::string& file, const std::vector<Array>& inputs, const Reference& ref, double tol,
                   bool all_configs = true) {
  Module m = load_example(file);
  Ref want = ref(inputs);
  for (const Config& c : configs()) {
    if (!all_configs && (c.cores > 2 || c.seed.value_or(0) > 1)) continue;
    RunOptions o;
    o.cores = c.cores;
    o.grid_seed = c.seed;
    o.dma = c.dma;
    o.detect_races = c.races;
    INFO(file << " cores=" << c.cores << " seed=" << c.seed.value_or(0) << " eager=" << (c.dma == RunOptions::Dma::eager)
              << " races=" << c.races);
    std::vector<Array> out = run_function(m, "main", inputs, o);
    REQUIRE(out.size() == 1);
    check_close(out[0], want, tol);
  }
}

}  // namespace

TEST_CASE("zoo: add") {
  Array x = random(DType::f32, {1024, 512}, 1), y = random(DType::f32, {1024, 512}, 2);
  check_example("add.tsr", {x, y}, [](const std::vector<Array>& in) {
    Ref r(static_cast<size_t>(in[0].size()));
    for (int64_t i = 0; i < in[0].size(); ++i) r[i] = static_cast<float>(in[0].get(i)) + static_cast<float>(in[1].get(i));
    return r;
  }, 0);
}

TEST_CASE("zoo: matmul") {
  Array x = random(DType::f32, {512, 256}, 3), y = random(DType::f32, {256, 384}, 4);
  check_example("matmul.tsr", {x, y}, [](const std::vector<Array>& in) {
    Ref r(512 * 384, 0.0);
    for (int i = 0; i < 512; ++i)
      for (int k = 0; k < 256; ++k)
        for (int j = 0; j < 384; ++j) r[i * 384 + j] += in[0].get(i * 256 + k) * in[1].get(k * 384 + j);
    return r;
  }, 5e-5);
}

TEST_CASE("zoo: softmax") {
  Array x = random(DType::f32, {256, 1000}, 5, -4, 4);
  check_example("softmax.tsr", {x}, [](const std::vector<Array>& in) {
    Ref r(256 * 1000);
    for (int i = 0; i < 256; ++i) {
      double mx = -INFINITY, s = 0;
      for (int j = 0; j < 1000; ++j) mx = std::max(mx, in[0].get(i * 1000 + j));
      for (int j = 0; j < 1000; ++j) s += std::exp(in[0].get(i * 1000 + j) - mx);
      for (int j = 0; j < 1000; ++j) r[i * 1000 + j] = std::exp(in[0].get(i * 1000 + j) - mx) / s;
    }
    return r;
  }, 1e-6);
}

TEST_CASE("zoo: layernorm") {
  Array x = random(DType::f32, {256, 512}, 6, -3, 3), g = random(DType::f32, {512}, 7), b = random(DType::f32, {512}, 8);
  check_example("layernorm.tsr", {x, g, b}, [](const std::vector<Array>& in) {
    Ref r(256 * 512);
    for (int i = 0; i < 256; ++i) {
      double mean = 0, var = 0;
      for (int j = 0; j < 512; ++j) mean += in[0].get(i * 512 + j);
      mean /= 512;
      for (int j = 0; j < 512; ++j) var += (in[0].get(i * 512 + j) - mean) * (in[0].get(i * 512 + j) - mean);
      var /= 512;
      for (int j = 0; j < 512; ++j)
        r[i * 512 + j] = (in[0].get(i * 512 + j) - mean) / std::sqrt(var + 1e-5) * in[1].get(j) + in[2].get(j);
    }
    return r;
  }, 1e-4);
}

TEST_CASE("zoo: flash_attention") {
  Array q = random(DType::f32, {4, 256, 64}, 9), k = random(DType::f32, {4, 256, 64}, 10),
        v = random(DType::f32, {4, 256, 64}, 11);
  check_example("flash_attention.tsr", {q, k, v}, [](const std::vector<Array>& in) {
    Ref r(4 * 256 * 64, 0.0);
    for (int h = 0; h < 4; ++h)
      for (int i = 0; i < 256; ++i) {
        std::vector<double> s(256);
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < 256; ++j) {
          double d = 0;
          for (int c = 0; c < 64; ++c) d += in[0].get((h * 256 + i) * 64 + c) * in[1].get((h * 256 + j) * 64 + c);
          s[j] = d / 8;
          mx = std::max(mx, s[j]);
        }
        for (int j = 0; j < 256; ++j) sum += s[j] = std::exp(s[j] - mx);
        for (int j = 0; j < 256; ++j)
          for (int c = 0; c < 64; ++c) r[(h * 256 + i) * 64 + c] += s[j] / sum * in[2].get((h * 256 + j) * 64 + c);
      }
    return r;
  }, 1e-5);
}

TEST_CASE("zoo: cumsum") {
  Array x = random(DType::f32, {8, 1024}, 12);
  check_example("cumsum.tsr", {x}, [](const std::vector<Array>& in) {
    Ref r(8 * 1024);
    for (int i = 0; i < 8; ++i) {
      double s = 0;
      for (int j = 0; j < 1024; ++j) r[i * 1024 + j] = s += in[0].get(i * 1024 + j);
    }
    return r;
  }, 1e-5);
}

TEST_CASE("zoo: row_sum") {
  Array x = random(DType::f32, {512, 1024}, 13);
  check_example("row_sum.tsr", {x}, [](const std::vector<Array>& in) {
    Ref r(512, 0.0);
    for (int i = 0; i < 512; ++i)
      for (int j = 0; j < 1024; ++j) r[i] += in[0].get(i * 1024 + j);
    return r;
  }, 1e-5);
}

TEST_CASE("zoo: gather_rows") {
  Array idx = Array::from_values(DType::i32, {16}, {5, 1023, 0, 17, 17, 300, 2, 999, 64, 65, 1, 512, 511, 7, 8, 100});
  Array table = random(DType::f32, {1024, 128}, 14);
  check_example("gather_rows.tsr", {idx, table}, [](const std::vector<Array>& in) {
    Ref r(16 * 128);
    for (int i = 0; i < 16; ++i)
      for (int c = 0; c < 128; ++c) r[i * 128 + c] = in[1].get(in[0].get_int(i) * 128 + c);
    return r;
  }, 0);
}

TEST_CASE("zoo: dma_pipeline") {
  Array x = random(DType::f32, {2048, 128}, 15);
  check_example("dma_pipeline.tsr", {x}, [](const std::vector<Array>& in) {
    Ref r(static_cast<size_t>(in[0].size()));
    for (int64_t i = 0; i < in[0].size(); ++i) r[i] = 2 * in[0].get(i);
    return r;
  }, 0);
}

TEST_CASE("zoo: ring_allreduce") {
  Array x = random(DType::f32, {4, 8, 128}, 16);
  check_example("ring_allreduce.tsr", {x}, [](const std::vector<Array>& in) {
    Ref r(4 * 8 * 128);
    for (int d = 0; d < 4; ++d)
      for (int e = 0; e < 8 * 128; ++e) {
        // The kernel sums its slots in ring order: own, then (me-1), (me-2), (me-3).
        float s = 0;
        for (int t = 0; t < 4; ++t) s += static_cast<float>(in[0].get(((d - t + 4) % 4) * 1024 + e));
        r[d * 1024 + e] = s;
      }
    return r;
  }, 1e-6);
}

TEST_CASE("zoo: halo_exchange") {
  Array x = random(DType::f32, {4, 8, 128}, 19);
  check_example("halo_exchange.tsr", {x}, [](const std::vector<Array>& in) {
    // The devices' rows stacked are a [32,128] grid that wraps round.
    Ref r(32 * 128);
    for (int row = 0; row < 32; ++row)
      for (int e = 0; e < 128; ++e) {
        float up = static_cast<float>(in[0].get(((row + 31) % 32) * 128 + e));
        float mid = static_cast<float>(in[0].get(row * 128 + e));
        float down = static_cast<float>(in[0].get(((row + 1) % 32) * 128 + e));
        r[row * 128 + e] = (up + mid + down) / 3.0f;
      }
    return r;
  }, 1e-6);
}

TEST_CASE("zoo: sc_gather_scatter") {
  // Repeated ids are gathered again; repeated bags add up.
  std::vector<double> ids, bag;
  for (int i = 0; i < 64; ++i) {
    ids.push_back((i * 37 + 11) % 256);
    bag.push_back((i * 5 + i / 8) % 16);
  }
  ids[9] = ids[3];
  ids[63] = 255;
  ids[0] = 0;
  Array table = random(DType::f32, {256, 128}, 17), init = random(DType::f32, {16, 128}, 18);
  check_example("sc_gather_scatter.tsr",
                {Array::from_values(DType::i32, {64}, ids), Array::from_values(DType::i32, {64}, bag), table, init},
                [](const std::vector<Array>& in) {
                  Ref r(16 * 128);
                  for (int e = 0; e < 16 * 128; ++e) r[e] = in[3].get(e);
                  for (int i = 0; i < 64; ++i)
                    for (int c = 0; c < 128; ++c)
                      r[in[1].get_int(i) * 128 + c] += in[2].get(in[0].get_int(i) * 128 + c);
                  return r;
                }, 1e-5);
}

TEST_CASE("zoo: sc_sort") {
  Array keys = random(DType::f32, {32, 16}, 19), vals = random(DType::f32, {32, 16}, 20);
  check_example("sc_sort.tsr", {keys, vals}, [](const std::vector<Array>& in) {
    Ref r(32 * 16);
    for (int row = 0; row < 32; ++row) {
      std::vector<int> order(16);
      for (int i = 0; i < 16; ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(),
                       [&](int a, int b) { return in[0].get(row * 16 + a) < in[0].get(row * 16 + b); });
      for (int i = 0; i < 16; ++i) r[row * 16 + i] = in[1].get(row * 16 + order[i]);
    }
    return r;
  }, 0);
}
