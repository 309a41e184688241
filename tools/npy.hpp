#pragma once
// .npy files for `kiln run`: f32 as <f4, f16 as <f2, bf16 as uint16 raw bits (<u2), bool as |b1.

#include <kiln/dtype.hpp>
#include <kiln/tensor.hpp>
#include <string>
#include <vector>

namespace kiln::tools {

struct NpyArray {
  Shape shape;
  DType dtype = DType::f32;
  std::vector<unsigned char> bytes;
};

/// Reads `path` as an array of `want` (the graph input's dtype); ArgumentError naming the file
/// for a malformed file, another dtype, Fortran order or a size that does not match.
NpyArray read_npy(const std::string& path, DType want);
void write_npy(const std::string& path, const NpyArray& a);

}  // namespace kiln::tools
