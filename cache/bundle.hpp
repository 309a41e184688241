#pragma once
// Bundles: one read-only file of cache entries an app ships, looked up before compiling.
// Layout (little-endian):
//   0  magic "KILNBNDL"   8 bytes
//   8  format version     u32
//  12  entry count N      u32
//  16  index offset       u64
//  24  index checksum     u64, xxh3-64 of the index
//  32  entries            each a whole cache entry (entry.hpp), verified by its own checksum
//  ..  index              N x {key hi u64, key lo u64, offset u64, size u64}, sorted by key

#include <optional>
#include <string>
#include <vector>

#include "cache/entry.hpp"

namespace kiln::cache {

struct BundleItem {
  CacheKey key;
  CompiledKernel kernel;
};

/// The bundles named by $KILN_BUNDLE (colon-separated), in order.
std::vector<std::string> bundles_from_env();

/// Writes `items` (duplicate keys dropped) to `path` atomically (temp file + rename).
/// Throws CacheError if it cannot be written.
void write_bundle(const std::string& path, const std::vector<BundleItem>& items);

class Bundle {
 public:
  /// Reads and verifies every byte of a bundle; throws CacheError naming the first problem,
  /// so a bad bundle is refused whole, never half-used.
  static Bundle open(const std::string& path);

  std::optional<CompiledKernel> find(const CacheKey& key) const;
  const std::vector<BundleItem>& items() const { return items_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<BundleItem> items_;  // sorted by key
};

}  // namespace kiln::cache
