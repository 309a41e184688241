// An attention launch's slots (engine/families/attention/attention.hpp): where each pointer
// goes in the parameter block, the epilogue's tensors and scalars, and the kernel's source with
// the epilogue's body.
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <kiln/error.hpp>

#include "engine/codegen/layout.hpp"
#include "engine/families/attention/attention.hpp"

namespace kiln {

namespace cfg = attention::config;

namespace {

// Where the kernel reads the pointer of epilogue slot `j` (Params::epi).
std::uint32_t epi_offset(std::size_t j) {
  return std::uint32_t(offsetof(cfg::Params, epi) + offsetof(cfg::EpilogueSlots, ptr) + 8 * j);
}

}  // namespace

void set_epilogue_slots(cfg::Params& p, const AttentionKernel& k, const std::string& stem,
                        std::vector<Shape>& strides, std::vector<cfg::Strides*>& dst) {
  std::vector<const TensorView*> views;
  for (const TensorView& v : k.epilogue_outputs) views.push_back(&v);
  for (const TensorView& v : k.epilogue_inputs) views.push_back(&v);
  for (const TensorView& v : k.prologue_inputs) views.push_back(&v);
  const std::size_t scalars = k.epilogue_scalars.size() + k.prologue_scalars.size();
  if (views.size() > std::size_t(cfg::kEpilogueSlots) ||
      scalars > std::size_t(cfg::kEpilogueScalars))
    throw ArgumentError(fmt::format(
        "{}: a prologue and epilogue of {} tensors and {} scalars; the kernel takes {} and {} "
        "(internal error in the fusion pass: set KILN_DISABLE_FUSION=1 to work around it)",
        stem, views.size(), scalars, cfg::kEpilogueSlots, cfg::kEpilogueScalars));
  for (std::size_t j = 0; j < views.size(); ++j) {
    strides.push_back(broadcast_strides(*views[j], k.out.shape, "epilogue operand"));
    dst.push_back(&p.epi.s[j]);
    p.epi.ptr[j] = views[j]->data;
  }
  std::copy(k.epilogue_scalars.begin(), k.epilogue_scalars.end(), p.epi.scalars);
  std::copy(k.prologue_scalars.begin(), k.prologue_scalars.end(),
            p.epi.scalars + k.epilogue_scalars.size());
}

std::uint32_t set_attention_pointers(KernelLaunch& L, cfg::Params& p, const AttentionKernel& k) {
  std::vector<std::pair<const TensorView*, std::uint32_t>> views;
  if (k.store_out) views.emplace_back(&k.out, cfg::pointer_offset(cfg::kOut));
  for (std::size_t j = 0; j < k.epilogue_outputs.size(); ++j)
    views.emplace_back(&k.epilogue_outputs[j], epi_offset(j));
  if (k.lse) views.emplace_back(&*k.lse, cfg::pointer_offset(cfg::kLsePointer));
  const std::uint32_t first_input = std::uint32_t(views.size());
  views.insert(views.end(), {{&k.q, cfg::pointer_offset(cfg::kQ)},
                             {&k.k, cfg::pointer_offset(cfg::kK)},
                             {&k.v, cfg::pointer_offset(cfg::kV)}});
  if (k.mask) views.emplace_back(&*k.mask, cfg::pointer_offset(cfg::kMask));
  if (k.lens) views.emplace_back(&*k.lens, cfg::pointer_offset(5));
  const std::size_t epilogue = k.epilogue_outputs.size() + k.epilogue_inputs.size();
  for (std::size_t j = 0; j < k.prologue_inputs.size(); ++j)
    views.emplace_back(&k.prologue_inputs[j], epi_offset(epilogue + j));
  for (std::size_t j = 0; j < k.epilogue_inputs.size(); ++j)
    views.emplace_back(&k.epilogue_inputs[j], epi_offset(k.epilogue_outputs.size() + j));
  for (const auto& [view, offset] : views) {
    L.pointers.push_back(view->data);
    L.layout.pointers.push_back({0, offset});
    std::memcpy(reinterpret_cast<char*>(&p) + offset, &view->data, sizeof view->data);
  }
  return first_input;
}

std::string attention_source(std::string_view header, const AttentionKernel& k) {
  if (!k.has_epilogue() && !k.has_prologue()) return fmt::format("#include <kiln/{}>\n", header);
  const codegen::Body epilogue = codegen::narrow_fast_math(k.epilogue),
                      prologue = codegen::narrow_fast_math(k.prologue);
  std::vector<std::pair<std::string_view, const codegen::Body*>> bodies;
  if (k.has_epilogue()) bodies.emplace_back(kAttentionEpilogue, &epilogue);
  if (k.has_prologue()) bodies.emplace_back(kAttentionPrologue, &prologue);
  return codegen::render_source(header, bodies);
}

}  // namespace kiln
