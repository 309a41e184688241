// The GEMM templates' descriptors and tunables (engine/families/gemm/gemm_templates.hpp).
#include "engine/families/gemm/gemm_templates.hpp"

#include <fmt/format.h>

#include "kernel_templates/kiln/gemm_config.cuh"

namespace kiln {
namespace {

std::string flag(bool b) { return b ? "true" : "false"; }
std::string num(int v) { return std::to_string(v); }

char layout_letter(GemmLayout l) {
  switch (l) {
    case GemmLayout::k_contiguous:
      return 'k';
    case GemmLayout::mn_contiguous:
      return 't';
    case GemmLayout::strided:
      break;
  }
  return 's';
}

// "k<split>" where the blocks of a cluster split K.
std::string split_suffix(int split) { return split > 1 ? fmt::format("k{}", split) : ""; }

}  // namespace

const codegen::TunableTable<GemmTunables>& gemm_tunable_table() {
  using T = GemmTunables;
  // The order of the rows is each path's order in its tuning space, and the order of the names
  // in the message for an unknown one.
  static const codegen::TunableTable<T> table = {
      {"bm", &T::bm, {64, 128, 256}, kGemmMma},
      {"bn", &T::bn, {64, 128, 256}, kGemmMma | kGemmWgmma},
      {"warps_m", &T::warps_m, {1, 2, 4}, kGemmMma},
      {"warps_n", &T::warps_n, {1, 2, 4}, kGemmMma},
      {"stages", &T::stages, {2, 3, 4, 5}, kGemmMma},
      {"stages", &T::stages, {3, 4, 5, 6}, kGemmWgmma},
      {"wgmma", &T::wgmma, {1}, kGemmWgmma},
      {"split", &T::split, {1, 2, 4, 8}, kGemmMma | kGemmWgmma, kGemmClusters},
      {"skinny", &T::skinny, {1}, kGemmSkinny},
      {"columns", &T::columns, {8, 16, 32, 64}, kGemmSkinny},
      {"split", &T::split, {1, 2, 4, 8}, kGemmSkinny, kGemmClusters},
  };
  return table;
}

std::string gemm_source(std::string_view header, const codegen::Body& epilogue, bool columns) {
  // The epilogue's math runs while the tensor cores wait, so its instruction count is time.
  const codegen::Body body = codegen::narrow_fast_math(epilogue);
  return codegen::render_source(header, {{"kiln_epilogue", &body}}, columns);
}

std::string GemmMmaTemplate::expression() const {
  return codegen::render_instance(
      "kiln::gemm::gemm",
      {std::string(device_type_of(dtype)), "kiln_epilogue", flag(bias), num(bm), num(bn),
       num(gemm::config::stage_k(int(size_of(dtype)))), num(warps_m), num(warps_n), num(stages),
       num(int(a_layout)), num(int(b_layout)), flag(exact), num(split), num(columns)});
}

std::string GemmMmaTemplate::name(std::string_view stem) const {
  return fmt::format("{}__{}x{}w{}x{}s{}{}_{}{}{}{}", stem, bm, bn, warps_m, warps_n, stages,
                     split_suffix(split), layout_letter(a_layout), layout_letter(b_layout),
                     bias ? "_bias" : "", dtype == DType::f32 && !exact ? "_tf32" : "");
}

int GemmMmaTemplate::shared_bytes() const { return gemm::config::mma_shared_bytes(bm, bn, stages); }

std::string GemmWgmmaTemplate::expression() const {
  return codegen::render_instance(
      "kiln::gemm::gemm_sm90",
      {std::string(device_type_of(dtype)), "kiln_epilogue", flag(bias), num(bn), num(stages),
       b_trans ? "1" : "0", num(columns), flag(exact), num(split), flag(store),
       flag(slots > 0)});
}

std::string GemmWgmmaTemplate::name(std::string_view stem) const {
  return fmt::format("{}__wg{}x{}s{}{}_k{}{}{}", stem, gemm::config::kWgmmaRows, bn, stages,
                     split_suffix(split), b_trans ? 't' : 'k', bias ? "_bias" : "",
                     dtype == DType::f32 && !exact ? "_tf32" : "");
}

int GemmWgmmaTemplate::shared_bytes() const {
  return gemm::config::wgmma_shared_bytes(bn, stages, exact, split, slots);
}

std::string GemmSkinnyTemplate::expression() const {
  return codegen::render_instance("kiln::gemm::gemm_skinny",
                                  {std::string(device_type_of(dtype)), "kiln_epilogue", flag(bias),
                                   num(rows), num(split), flag(n_contiguous), num(columns)});
}

std::string GemmSkinnyTemplate::name(std::string_view stem) const {
  return fmt::format("{}__rows{}x{}{}_{}{}", stem, rows, columns, split_suffix(split),
                     n_contiguous ? 'n' : 'k', bias ? "_bias" : "");
}

}  // namespace kiln
