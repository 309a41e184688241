// spectral_autoencoder: seed 002's SpectralShapeAutoencoder (inference, f32) as one kiln plan of
// six GEMM kernels, replayed: slice encode gelu(x W_enc^T + b_enc) [B, 32, 128], flattened to
// [B, 4096] and projected on a fixed orthonormal basis [4096, 256], the bottleneck
// gelu(z W1^T + b1) W2^T + b2, the reconstruction through basis^T back to [B, 32, 128], and the
// slice decode [B, 32, 256]. Checked against fp64 (max abs error <= 1e-5); timings print as JSON
// lines (bench/spectral_autoencoder.py puts PyTorch beside them). With --offline (or no GPU) it
// compiles the plan's kernels for --arch instead.
#include <fmt/format.h>

#include <cmath>
#include <kiln/kiln.hpp>
#include <random>

#include "../common/seed_app.hpp"

namespace {

using kiln::DType;
using seed_app::bytes_of;
using seed_app::per_call_us;
using seed_app::values_of;

constexpr std::int64_t kSlices = 32, kIn = 256, kCode = 128, kBasis = 256, kHidden = 64;
constexpr std::int64_t kFlat = kSlices * kCode;  // 4096

kiln::Graph model(std::int64_t B) {
  kiln::Graph g;
  const auto f32 = DType::f32;
  const auto x = g.input("x", {B, kSlices, kIn}, f32);
  // The fixed basis, stored both ways so that both products read it contiguous along K (the
  // layout f32 products need for TMA and wgmma on sm_90a): [4096, 256] and its transpose.
  const auto basis = g.input("basis", {kFlat, kBasis}, f32);
  const auto basis_t = g.input("basis_t", {kBasis, kFlat}, f32);
  const auto h = kiln::gelu(
      kiln::linear(x, g.input("w_enc", {kCode, kIn}, f32), g.input("b_enc", {kCode}, f32)));
  const auto z = kiln::linear(kiln::reshape(h, {B, kFlat}), basis_t);  // h basis
  const auto u = kiln::gelu(
      kiln::linear(z, g.input("w1", {kHidden, kBasis}, f32), g.input("b1", {kHidden}, f32)));
  const auto v =
      kiln::linear(u, g.input("w2", {kBasis, kHidden}, f32), g.input("b2", {kBasis}, f32));
  const auto r = kiln::linear(v, basis);  // v basis^T: basis [4096, 256] is linear's w [N, K]
  g.output(kiln::linear(kiln::reshape(r, {B, kSlices, kCode}), g.input("w_dec", {kIn, kCode}, f32),
                        g.input("b_dec", {kIn}, f32)),
           "y");
  return g;
}

// The model's parameters and input, in fp64 (each exactly an f32).
struct Weights {
  std::map<std::string, std::vector<double>> v;
  std::map<std::string, kiln::Shape> shape;
};

double f32(double x) { return double(float(x)); }

Weights weights(std::int64_t B, std::mt19937_64& rng) {
  Weights w;
  std::uniform_real_distribution<double> u(-1, 1);
  auto fill = [&](const std::string& name, kiln::Shape s, double scale) {
    std::vector<double> v(std::size_t(kiln::numel_of(s)));
    for (double& e : v) e = f32(u(rng) * scale);
    w.v[name] = std::move(v);
    w.shape[name] = std::move(s);
  };
  fill("x", {B, kSlices, kIn}, 1);
  fill("w_enc", {kCode, kIn}, 1 / std::sqrt(double(kIn)));
  fill("b_enc", {kCode}, 0.1);
  fill("w1", {kHidden, kBasis}, 1 / std::sqrt(double(kBasis)));
  fill("b1", {kHidden}, 0.1);
  fill("w2", {kBasis, kHidden}, 1 / std::sqrt(double(kHidden)));
  fill("b2", {kBasis}, 0.1);
  fill("w_dec", {kIn, kCode}, 1 / std::sqrt(double(kCode)));
  fill("b_dec", {kIn}, 0.1);
  // Orthonormal columns: Gram-Schmidt (twice) over random columns, in fp64, then f32.
  std::normal_distribution<double> n(0, 1);
  std::vector<double> q(std::size_t(kFlat * kBasis));
  for (double& e : q) e = n(rng);
  for (std::int64_t j = 0; j < kBasis; ++j)
    for (int pass = 0; pass < 2; ++pass) {
      for (std::int64_t i = 0; i < j; ++i) {
        double dot = 0;
        for (std::int64_t r = 0; r < kFlat; ++r)
          dot += q[std::size_t(r * kBasis + i)] * q[std::size_t(r * kBasis + j)];
        for (std::int64_t r = 0; r < kFlat; ++r)
          q[std::size_t(r * kBasis + j)] -= dot * q[std::size_t(r * kBasis + i)];
      }
      double norm = 0;
      for (std::int64_t r = 0; r < kFlat; ++r)
        norm += q[std::size_t(r * kBasis + j)] * q[std::size_t(r * kBasis + j)];
      for (std::int64_t r = 0; r < kFlat; ++r) q[std::size_t(r * kBasis + j)] /= std::sqrt(norm);
    }
  for (double& e : q) e = f32(e);
  std::vector<double> qt(q.size());
  for (std::int64_t r = 0; r < kFlat; ++r)
    for (std::int64_t c = 0; c < kBasis; ++c)
      qt[std::size_t(c * kFlat + r)] = q[std::size_t(r * kBasis + c)];
  w.v["basis"] = std::move(q);
  w.shape["basis"] = {kFlat, kBasis};
  w.v["basis_t"] = std::move(qt);
  w.shape["basis_t"] = {kBasis, kFlat};
  return w;
}

double gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }

// out[m, n] = act(sum_k in[m, k] w[n, k] + b[n]) (w as linear's [N, K], or [K, N] if `kn`).
std::vector<double> dense(const std::vector<double>& in, std::int64_t M, std::int64_t K,
                          const std::vector<double>& w, std::int64_t N, const double* b, bool kn,
                          bool act) {
  std::vector<double> out(std::size_t(M * N));
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      double s = b ? b[n] : 0;
      for (std::int64_t k = 0; k < K; ++k)
        s += in[std::size_t(m * K + k)] * w[std::size_t(kn ? k * N + n : n * K + k)];
      out[std::size_t(m * N + n)] = act ? gelu(s) : s;
    }
  return out;
}

// The model in fp64 on the first `rows` batch items.
std::vector<double> reference(const Weights& w, std::int64_t rows) {
  const auto& v = w.v;
  std::vector<double> x(v.at("x").begin(), v.at("x").begin() + rows * kSlices * kIn);
  const auto h =
      dense(x, rows * kSlices, kIn, v.at("w_enc"), kCode, v.at("b_enc").data(), false, true);
  const auto z = dense(h, rows, kFlat, v.at("basis"), kBasis, nullptr, true, false);
  const auto u = dense(z, rows, kBasis, v.at("w1"), kHidden, v.at("b1").data(), false, true);
  const auto vv = dense(u, rows, kHidden, v.at("w2"), kBasis, v.at("b2").data(), false, false);
  const auto r = dense(vv, rows, kBasis, v.at("basis"), kFlat, nullptr, false, false);
  return dense(r, rows * kSlices, kCode, v.at("w_dec"), kIn, v.at("b_dec").data(), false, false);
}

int run_case(kiln::Engine& e, std::int64_t B) {
  std::mt19937_64 rng(2);
  const Weights w = weights(B, rng);
  std::map<std::string, kiln::Tensor> tensors;
  std::map<std::string, kiln::TensorView> in;
  for (const auto& [name, v] : w.v) {
    std::vector<float> host(v.begin(), v.end());
    tensors.emplace(name, e.from_host(w.shape.at(name), DType::f32, host.data()));
    in[name] = tensors.at(name).view();
  }
  const kiln::Plan plan(model(B));
  kiln::Tensor y = e.empty({B, kSlices, kIn}, DType::f32);
  y.fill_bytes(0xff);
  plan.replay(e, in, {{"y", y.view()}});
  const std::int64_t rows = std::min<std::int64_t>(B, 8);
  const std::vector<double> want = reference(w, rows);
  const std::vector<double> got = values_of(DType::f32, bytes_of(y));
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double err = std::fabs(got[i] - want[i]);
    worst = std::max(worst, std::isnan(err) ? INFINITY : err);
  }
  const double replay_us = per_call_us(e, [&] { plan.replay(e, in, {{"y", y.view()}}); });
  const double run_us = per_call_us(e, [&] { plan.run(e, in, {{"y", y.view()}}); });
  const bool ok = worst <= 1e-5;
  fmt::print(
      "{{\"B\": {}, \"kernels\": {}, \"replay_us\": {:.2f}, \"run_us\": {:.2f}, "
      "\"max_abs_err\": {:.2e}, \"checked_rows\": {}, \"check\": \"{}\"}}\n",
      B, plan.kernels().size(), replay_us, run_us, worst, rows, ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}

const std::vector<std::int64_t> kBatches = {1, 1024};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"spectral_autoencoder: seed 002's autoencoder as one kiln plan of GEMMs",
               "spectral_autoencoder"};
  std::string save;
  app.add_option("--save-graphs", save,
                 "Also write the model's graph at each batch to DIR/spectral_autoencoder_B.json "
                 "(for kiln bench)");
  // The graphs need no GPU: written offline too, before compiling or running.
  const auto save_graphs = [&] {
    if (!save.empty())
      for (std::int64_t B : kBatches)
        model(B).save(fmt::format("{}/spectral_autoencoder_{}.json", save, B));
  };
  return seed_app::run_main(
      app, argc, argv,
      [&](const std::string& arch) {
        save_graphs();
        kiln::Engine e = seed_app::offline_engine(arch);
        for (std::int64_t B : kBatches) kiln::Plan(model(B)).compile(e);
        return seed_app::print_kernels(e);
      },
      [&](kiln::Engine& e) {
        save_graphs();
        int status = 0;
        for (std::int64_t B : kBatches) status |= run_case(e, B);
        return status;
      });
}
