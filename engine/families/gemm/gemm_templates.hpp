#pragma once
// The GEMM family's three templates as typed descriptors, one struct each whose fields are the
// template's parameters: it renders the instance (the kernel's name expression, through
// codegen's render_instance), the kernel's name and source, and the shared memory its layout
// takes (kernel_templates/kiln/gemm_config.cuh, the layout the device uses). The tunables of all
// three paths are declared once, in gemm_tunable_table().

#include <string>
#include <string_view>
#include <type_traits>

#include "engine/codegen/codegen.hpp"
#include "engine/codegen/tunable_table.hpp"
#include "engine/families/gemm/gemm_problem.hpp"

namespace kiln {

/// The bits of gemm_tunable_table()'s rows: which path takes a tunable, and the condition
/// `clusters` (the target runs thread-block clusters: sm_90 and later).
inline constexpr unsigned kGemmMma = 1;     ///< gemm_kernel.cuh (mma.sync)
inline constexpr unsigned kGemmWgmma = 2;   ///< gemm_sm90.cuh (sm_90a only: clusters run)
inline constexpr unsigned kGemmSkinny = 4;  ///< gemm_skinny.cuh
inline constexpr unsigned kGemmClusters = 8;

/// Every tunable of the GEMM templates, once: its name, GemmTunables' field, the values the
/// tuning space tries and the paths that take it. gemm_tunables() parses by it, each path's
/// launch records its rows (KernelLaunch::tunables) and autotune::gemm_space() searches them.
const codegen::TunableTable<GemmTunables>& gemm_tunable_table();

/// gemm_kernel.cuh's `gemm<T, Epi, Bias, BM, BN, BK, WM, WN, Stages, ALayout, BLayout, Exact,
/// Split, V>` (BK: a 128-byte row of K of T).
struct GemmMmaTemplate {
  static constexpr std::string_view kHeader = "gemm.cuh";
  DType dtype = DType::f32;
  bool bias = false;
  int bm = 0, bn = 0, warps_m = 0, warps_n = 0, stages = 0;
  GemmLayout a_layout = GemmLayout::strided, b_layout = GemmLayout::strided;
  bool exact = false;  ///< f32 as three TF32 products per term (else f32 on plain TF32)
  int split = 1;
  int columns = 1;  ///< V: the epilogue's columns per thread

  std::string expression() const;
  /// "<stem>__128x128w2x4s3_kk_bias"
  std::string name(std::string_view stem) const;
  int shared_bytes() const;
  unsigned threads() const { return unsigned(32 * warps_m * warps_n); }
};

/// gemm_sm90.cuh's `gemm_sm90<T, Epi, Bias, BN, Stages, BTrans, V, Exact, Split, Store,
/// Columns>`.
struct GemmWgmmaTemplate {
  static constexpr std::string_view kHeader = "gemm_sm90.cuh";
  DType dtype = DType::f32;
  bool bias = false;
  int bn = 0, stages = 0;
  bool b_trans = false;  ///< B contiguous along N
  int columns = 1;       ///< V
  bool exact = false;
  int split = 1;
  bool store = false;  ///< the epilogue stores through the output's tensor map (wgmma_store_fits)
  int slots = 0;       ///< Columns: the per-column operands staged (wgmma_column_slots)

  std::string expression() const;
  /// "<stem>__wg128x128s4_kk_bias"
  std::string name(std::string_view stem) const;
  int shared_bytes() const;
};

/// gemm_skinny.cuh's `gemm_skinny<T, Epi, Bias, MR, Split, NContiguous, BN>` (rows, columns).
struct GemmSkinnyTemplate {
  static constexpr std::string_view kHeader = "gemm_skinny.cuh";
  DType dtype = DType::f32;
  bool bias = false;
  int rows = 8;
  int split = 1;
  bool n_contiguous = false;  ///< B contiguous along N (lanes along N)
  int columns = 64;

  std::string expression() const;
  /// "<stem>__rows8x64k2_k_bias"
  std::string name(std::string_view stem) const;
};

/// A GEMM kernel's translation unit: `header` with the epilogue as `kiln_epilogue`; `columns`
/// (a block staging its per-column operands): its per-column math split off
/// (codegen::render_split_body), done once a column as they are staged.
std::string gemm_source(std::string_view header, const codegen::Body& epilogue,
                        bool columns = false);

/// Whether a template descriptor stages per-column operands (has `slots`).
template <class T, class = void>
struct HasSlots : std::false_type {};
template <class T>
struct HasSlots<T, std::void_t<decltype(T::slots)>> : std::true_type {};

/// The spec of GEMM template descriptor `tp` (any of the three) with `epilogue` fused, named
/// after `stem`.
template <class Template>
KernelSpec gemm_spec(const Template& tp, const codegen::Body& epilogue, const std::string& stem) {
  KernelSpec spec;
  bool columns = false;
  if constexpr (HasSlots<Template>::value) columns = tp.slots > 0;
  spec.source = gemm_source(tp.kHeader, epilogue, columns);
  spec.expression = tp.expression();
  spec.options = codegen::builtin_options();
  spec.name = tp.name(stem);
  return spec;
}

}  // namespace kiln
