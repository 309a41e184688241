#include "cache/bundle.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <kiln/error.hpp>

#include "cache/atomic_file.hpp"

namespace kiln::cache {
namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'B', 'N', 'D', 'L'};
constexpr std::size_t kHeader = 32;
constexpr std::size_t kIndexItem = 32;

bool key_less(const CacheKey& a, const CacheKey& b) {
  return a.hi != b.hi ? a.hi < b.hi : a.lo < b.lo;
}

template <class T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <class T>
T get(const std::string& in, std::size_t at) {
  T v;
  std::memcpy(&v, in.data() + at, sizeof v);
  return v;
}

}  // namespace

std::vector<std::string> bundles_from_env() {
  std::vector<std::string> out;
  const char* env = std::getenv("KILN_BUNDLE");
  for (std::string_view rest = env ? env : ""; !rest.empty();) {
    const std::size_t colon = rest.find(':');
    if (colon) out.emplace_back(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? "" : rest.substr(colon + 1);
  }
  return out;
}

void write_bundle(const std::string& path, const std::vector<BundleItem>& items) {
  std::vector<const BundleItem*> sorted;
  for (const BundleItem& it : items) sorted.push_back(&it);
  std::sort(sorted.begin(), sorted.end(),
            [](auto* a, auto* b) { return key_less(a->key, b->key); });
  sorted.erase(
      std::unique(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->key == b->key; }),
      sorted.end());

  std::string body, index;
  for (const BundleItem* it : sorted) {
    const std::string entry = encode_entry(it->key, it->kernel);
    put<std::uint64_t>(index, it->key.hi);
    put<std::uint64_t>(index, it->key.lo);
    put<std::uint64_t>(index, kHeader + body.size());
    put<std::uint64_t>(index, entry.size());
    body += entry;
  }
  std::string out(kMagic, sizeof kMagic);
  put<std::uint32_t>(out, kFormatVersion);
  put<std::uint32_t>(out, std::uint32_t(sorted.size()));
  put<std::uint64_t>(out, kHeader + body.size());
  put<std::uint64_t>(out, XXH3_64bits(index.data(), index.size()));
  out += body;
  out += index;

  write_file_atomically(path, out, 0644, "bundle");
}

Bundle Bundle::open(const std::string& path) {
  std::string bytes, why;
  if (!read_file(path, bytes, why, std::size_t(1) << 40))
    throw CacheError(fmt::format("cannot read bundle {}: {}", path, why));
  auto refuse = [&](const std::string& why) {
    return CacheError(
        fmt::format("refusing bundle {}: {}; rebuild it with `kiln cache pack`", path, why));
  };
  if (bytes.size() < kHeader || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    throw refuse("not a kiln bundle");
  if (get<std::uint32_t>(bytes, 8) != kFormatVersion)
    throw refuse(fmt::format("format version {} (this kiln reads {})", get<std::uint32_t>(bytes, 8),
                             kFormatVersion));
  const std::uint64_t count = get<std::uint32_t>(bytes, 12);
  const auto index_at = get<std::uint64_t>(bytes, 16);
  if (index_at < kHeader || index_at > bytes.size() ||
      (bytes.size() - index_at) != count * kIndexItem)
    throw refuse("truncated or malformed index");
  if (XXH3_64bits(bytes.data() + index_at, count * kIndexItem) != get<std::uint64_t>(bytes, 24))
    throw refuse("index checksum mismatch");
  Bundle b;
  b.path_ = path;
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::size_t at = index_at + i * kIndexItem;
    const CacheKey key{get<std::uint64_t>(bytes, at), get<std::uint64_t>(bytes, at + 8)};
    const auto offset = get<std::uint64_t>(bytes, at + 16),
               size = get<std::uint64_t>(bytes, at + 24);
    if (offset < kHeader || offset > index_at || size > index_at - offset)
      throw refuse(fmt::format("entry {} lies outside the file", i));
    Decoded d = decode_entry(std::string_view(bytes).substr(offset, size), key);
    if (!d.kernel) throw refuse(fmt::format("entry {} ({}): {}", i, key.hex(), d.problem));
    b.items_.push_back({key, std::move(*d.kernel)});
  }
  for (std::size_t i = 1; i < b.items_.size(); ++i)
    if (!key_less(b.items_[i - 1].key, b.items_[i].key)) throw refuse("index not sorted");
  return b;
}

std::optional<CompiledKernel> Bundle::find(const CacheKey& key) const {
  auto it = std::lower_bound(
      items_.begin(), items_.end(), key,
      [](const BundleItem& item, const CacheKey& k) { return key_less(item.key, k); });
  if (it == items_.end() || it->key != key) return std::nullopt;
  return it->kernel;
}

}  // namespace kiln::cache
