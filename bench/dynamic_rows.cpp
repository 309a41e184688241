// Rows of a dynamic length against kernels specialized for each length, in one run: softmax and
// layer_norm over bf16 [4096, L] at the 200 lengths of bench/lengths.hpp. A graph with a
// dynamic row length ("?") runs every length through one Plan (a kernel per bucket of
// lengths); the graph of each length runs its own kernel. Every output element of the first is
// compared with the second's, every 64th row of both with the fp64 reference; at lengths of
// 1024 or more both are timed, interleaved (fixed, bucket, fixed, bucket; each the faster of
// its two). One JSON object a line, then a summary line. Lengths given as arguments replace the
// 200.
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <future>
#include <kiln/kiln.hpp>
#include <map>

#include "bench/common.hpp"
#include "bench/lengths.hpp"
#include "engine/exec/plan_specs.hpp"
#include "engine/passes/fusion.hpp"
#include "ops/op.hpp"

namespace {

constexpr std::int64_t kRows = 4096, kLongest = 65536;
constexpr kiln::DType kType = kiln::DType::bf16;

// softmax(x) or layer_norm(x, w, b) over x [4096, length] (-1: dynamic).
kiln::Graph row_graph(const std::string& op, std::int64_t length) {
  kiln::Graph g;
  auto x = g.input("x", {kRows, length}, kType);
  if (op == "layer_norm")
    g.output(kiln::apply(op, {x, g.input("w", {length}, kType), g.input("b", {length}, kType)}));
  else
    g.output(kiln::apply(op, {x}));
  return g;
}

kiln::TensorView view_of(const kiln::Tensor& t, kiln::Shape shape) {
  kiln::TensorView v = t.view();
  v.shape = std::move(shape);
  v.strides.clear();
  return v;
}

// Every specialized kernel compiled at once (one plan of every length's graph, side by side),
// so that the plans of each length find them in memory.
void compile_fixed(kiln::Engine& e, const std::string& op,
                   const std::vector<std::int64_t>& lengths) {
  kiln::Graph g;
  for (std::int64_t L : lengths) {
    auto x = g.input(fmt::format("x{}", L), {kRows, L}, kType);
    if (op == "layer_norm")
      g.output(kiln::apply(op, {x, g.input(fmt::format("w{}", L), {L}, kType),
                                g.input(fmt::format("b{}", L), {L}, kType)}));
    else
      g.output(kiln::apply(op, {x}));
  }
  kiln::Plan(g).compile(e);
}

// A row's scale for comparing outputs: max(|want|, 1/L) for softmax, max(|want|, 1) for
// layer_norm.
double scale_of(const std::string& op, double want, std::int64_t L) {
  return op == "layer_norm" ? std::max(1.0, std::fabs(want))
                            : std::max(std::fabs(want), 1.0 / double(L));
}

struct Host {
  std::vector<unsigned char> x, w, b;
  double at(const std::vector<unsigned char>& h, std::int64_t i) const {
    return kiln::load_element(kType, h.data() + i * std::int64_t(kiln::size_of(kType)));
  }
};

// The worst error of every 64th row of `got` ([4096, L]) against the fp64 reference, relative
// to max(|want|, 1/L) for softmax and to max(|want|, 1) for layer_norm.
double reference_error(const std::string& op, const Host& h, const std::vector<unsigned char>& got,
                       std::int64_t L) {
  const auto& def = kiln::ops::find_op(op);
  const std::size_t n = std::size_t(L);
  std::vector<double> row(n), w(n), b(n), ref(n);
  for (std::int64_t c = 0; c < L; ++c)
    w[std::size_t(c)] = h.at(h.w, c), b[std::size_t(c)] = h.at(h.b, c);
  double worst = 0;
  for (std::int64_t r = 0; r < kRows; r += 64) {
    for (std::int64_t c = 0; c < L; ++c) row[std::size_t(c)] = h.at(h.x, r * L + c);
    const bool norm = op == "layer_norm";
    def.row_reference(row.data(), L, norm ? w.data() : nullptr, norm ? b.data() : nullptr,
                      kiln::Attrs{}, ref.data());
    for (std::int64_t c = 0; c < L; ++c) {
      const double want = ref[std::size_t(c)], have = h.at(got, r * L + c);
      const double err = std::fabs(have - want) / scale_of(op, want, L);
      if (!(err <= worst)) worst = err;
    }
  }
  return worst;
}

// The elements of `a` and `b` ([4096, L]) further apart than one bf16 rounding (2^-7 of the
// scale), counted in 8 threads.
std::int64_t count_differ(const std::string& op, const Host& h, const std::vector<unsigned char>& a,
                          const std::vector<unsigned char>& b, std::int64_t L) {
  const std::int64_t n = kRows * L, chunk = (n + 7) / 8;
  std::vector<std::future<std::int64_t>> parts;
  for (std::int64_t lo = 0; lo < n; lo += chunk)
    parts.push_back(std::async(std::launch::async, [&, lo] {
      std::int64_t differ = 0;
      for (std::int64_t i = lo; i < std::min(n, lo + chunk); ++i) {
        if (std::memcmp(a.data() + 2 * i, b.data() + 2 * i, 2) == 0) continue;
        const double x = h.at(a, i), y = h.at(b, i);
        if (!(std::fabs(x - y) <= scale_of(op, y, L) * 0x1.0p-7)) ++differ;
      }
      return differ;
    }));
  std::int64_t differ = 0;
  for (auto& p : parts) differ += p.get();
  return differ;
}

}  // namespace

int run(int argc, char** argv) {
  kiln::Engine e;
  std::vector<std::int64_t> lengths = kiln::bench::dynamic_row_lengths();
  if (argc > 1) lengths.clear();  // kiln_bench_dynamic [LENGTH...]: those alone
  for (int i = 1; i < argc; ++i) {
    const std::int64_t L = std::atoll(argv[i]);
    if (L < 1 || L > kLongest)
      throw kiln::ArgumentError(fmt::format("length '{}': expected 1 to {}", argv[i], kLongest));
    lengths.push_back(L);
  }
  Host h{kiln::bench::random_host(kType, kRows * kLongest, 1),
         kiln::bench::random_host(kType, kLongest, 2),
         kiln::bench::random_host(kType, kLongest, 3)};
  // The x of every length is the start of one buffer, seen as [4096, L].
  const kiln::Tensor x = e.from_host({kRows * kLongest}, kType, h.x.data()),
                     w = e.from_host({kLongest}, kType, h.w.data()),
                     b = e.from_host({kLongest}, kType, h.b.data());
  double worst_ratio = 1e9, worst_err = 0;
  std::int64_t mismatched = 0, bucket_kernels = 0;
  for (const std::string op : {"softmax", "layer_norm"}) {
    const kiln::Plan dynamic(row_graph(op, -1));
    const auto loaded = [&] { return e.counters().compiles + e.counters().disk_hits; };
    const std::int64_t before = loaded();
    for (std::int64_t L : lengths) {  // every bucket kernel compiled first, and counted
      std::map<std::string, kiln::TensorView> ins = {{"x", view_of(x, {kRows, L})}};
      if (op == "layer_norm") ins["w"] = view_of(w, {L}), ins["b"] = view_of(b, {L});
      dynamic.run(e, ins);
    }
    const std::int64_t compiled = loaded() - before;  // compiled, or from the disk cache
    bucket_kernels += compiled;
    compile_fixed(e, op, lengths);
    for (std::int64_t L : lengths) {
      const kiln::Plan fixed(row_graph(op, L));
      std::map<std::string, kiln::TensorView> ins = {{"x", view_of(x, {kRows, L})}};
      if (op == "layer_norm") ins["w"] = view_of(w, {L}), ins["b"] = view_of(b, {L});
      kiln::Tensor y_bucket = e.empty({kRows, L}, kType), y_fixed = e.empty({kRows, L}, kType);
      y_bucket.fill_bytes(0xff);  // NaN: an element left unwritten shows
      y_fixed.fill_bytes(0xff);
      const std::string y = row_graph(op, L).nodes().back().name;
      const std::map<std::string, kiln::TensorView> out_b = {{y, y_bucket.view()}},
                                                    out_f = {{y, y_fixed.view()}};
      dynamic.run(e, ins, out_b);
      fixed.run(e, ins, out_f);
      const std::vector<unsigned char> got_b = kiln::bench::fetch(y_bucket),
                                       got_f = kiln::bench::fetch(y_fixed);
      const std::int64_t differ = count_differ(op, h, got_b, got_f, L);
      const double err =
          std::max(reference_error(op, h, got_b, L), reference_error(op, h, got_f, L));
      mismatched += differ;
      worst_err = std::max(worst_err, err);
      double us_fixed = 0, us_bucket = 0;
      if (L >= 1024) {
        const auto time = [&](const kiln::Plan& p,
                              const std::map<std::string, kiln::TensorView>& o) {
          return kiln::bench::per_call_us(e, [&] { p.run(e, ins, o); });
        };
        const double f1 = time(fixed, out_f), b1 = time(dynamic, out_b), f2 = time(fixed, out_f),
                     b2 = time(dynamic, out_b);
        us_fixed = std::min(f1, f2);
        us_bucket = std::min(b1, b2);
        worst_ratio = std::min(worst_ratio, us_fixed / us_bucket);
      }
      fmt::print(
          "{{\"op\": \"{}\", \"length\": {}, \"fixed_kernel\": \"{}\", \"bucket_kernel\": \"{}\", "
          "\"fixed_us\": {:.2f}, \"bucket_us\": {:.2f}, \"speed\": {:.3f}, \"differ\": {}, "
          "\"max_err\": {:.3g}}}\n",
          op, L, fixed.kernels().at(0).name,
          kiln::run_specs(row_graph(op, -1), L, true, e.arch()).at(0).name, us_fixed, us_bucket,
          us_bucket > 0 ? us_fixed / us_bucket : 0.0, differ, err);
      std::fflush(stdout);
    }
    fmt::print("{{\"op\": \"{}\", \"bucket_kernels\": {}}}\n", op, compiled);
  }
  fmt::print(
      "dynamic rows: {} lengths x 2 ops, {} bucket kernels compiled; slowest bucket run at L >= "
      "1024: {:.3f} x the specialized kernel's speed; {} elements differ beyond one bf16 "
      "rounding; worst error against fp64 {:.3g} ({})\n",
      lengths.size(), bucket_kernels, worst_ratio, mismatched, worst_err,
      mismatched == 0 && worst_err <= 2e-2 ? "ok" : "FAIL");
  return mismatched == 0 && worst_err <= 2e-2 ? 0 : 1;
}

int main(int argc, char** argv) {
  return kiln::bench::guarded(argv[0], [&] { return run(argc, argv); });
}
