#include "engine/exec/launch_cache.hpp"

#include <algorithm>

namespace kiln::detail {

std::int64_t alignment_class(std::uint64_t data) {
  if (data == 0) return 16;
  return std::int64_t(std::min<std::uint64_t>(data & (~data + 1), 16));
}

void Signature::add(std::int64_t word) {
  words_.push_back(word);
  // FNV-1a over the word's bytes: cheap, and the words are compared on a hit anyway.
  for (int i = 0; i < 8; ++i)
    hash_ = (hash_ ^ ((std::uint64_t(word) >> (8 * i)) & 0xff)) * 0x100000001b3ull;
}

void Signature::add_view(const TensorView& v) {
  add(std::int64_t(v.shape.size()));
  for (std::int64_t e : v.shape) add(e);
  add(std::int64_t(v.dtype));
  // Contiguous views share one word whatever their unit dims' strides (specialization ignores
  // them), unless one is negative (specialization refuses it: so must the call).
  if (v.is_contiguous() &&
      std::none_of(v.strides.begin(), v.strides.end(), [](std::int64_t s) { return s < 0; })) {
    add(-1);
  } else {
    for (std::int64_t s : v.resolved_strides()) add(s);
  }
  add(alignment_class(v.data));
}

}  // namespace kiln::detail
