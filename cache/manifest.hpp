#pragma once
// Manifests: the specializations an app used, one JSON object a line, arch-free, holding all
// that is needed to rebuild each kernel's source (`kiln precompile` reads them).
//   {"name": "silu_bf16__r1v8", "source": "#include <kiln/elementwise.cuh>\n",
//    "expression": "kiln::elementwise<...>", "options": ["-std=c++17"]}

#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "stages/kernel.hpp"

namespace kiln::cache {

std::string manifest_line(const KernelSpec& spec);

/// The specs of a manifest file, duplicates dropped, in first-seen order. Throws ArgumentError
/// naming the file and line of anything malformed.
std::vector<KernelSpec> read_manifest(const std::string& path);

/// Appends each spec it is given once (per process) to a manifest file. Lines are written
/// with one O_APPEND write each, so several processes may record into one file.
class ManifestRecorder {
 public:
  /// Opens (creates) the file now: ArgumentError if it cannot be written, so a bad
  /// KILN_RECORD fails at engine creation rather than at some op. A later write failure
  /// (disk full) logs one warning and stops recording; it never fails an op.
  explicit ManifestRecorder(std::string path);
  void record(const KernelSpec& spec);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::mutex mutex_;
  std::set<std::string> seen_;
  bool failed_ = false;
};

}  // namespace kiln::cache
