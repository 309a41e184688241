#include "cache/entry.hpp"

#include <fmt/format.h>
#include <xxhash.h>

#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>

namespace kiln::cache {
namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'K', 'E', 'R', 'N'};

template <class T>
void put(std::string& out, std::size_t at, T v) {
  std::memcpy(out.data() + at, &v, sizeof v);
}
template <class T>
T get(std::string_view in, std::size_t at) {
  T v;
  std::memcpy(&v, in.data() + at, sizeof v);
  return v;
}

std::uint64_t checksum(std::string_view meta, std::string_view payload) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  XXH3_64bits_update(st, meta.data(), meta.size());
  XXH3_64bits_update(st, payload.data(), payload.size());
  const std::uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return h;
}

}  // namespace

std::string encode_entry(const CacheKey& key, const CompiledKernel& k) {
  const std::string meta = nlohmann::json{{"name", k.name},
                                          {"lowered_name", k.lowered_name},
                                          {"arch", k.arch},
                                          {"ptx", k.is_ptx},
                                          {"registers", k.registers},
                                          {"spill_bytes", k.spill_bytes},
                                          {"compile_ms", k.compile_ms},
                                          {"spec", k.spec_id},
                                          {"headers", k.headers_id},
                                          {"nvrtc", k.nvrtc_version},
                                          {"created", std::int64_t(std::time(nullptr))}}
                               .dump();
  std::string out(kHeaderBytes, '\0');
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  put<std::uint32_t>(out, 8, kFormatVersion);
  put<std::uint32_t>(out, 12, std::uint32_t(meta.size()));
  put<std::uint64_t>(out, 16, key.hi);
  put<std::uint64_t>(out, 24, key.lo);
  put<std::uint64_t>(out, 32, k.image.size());
  put<std::uint64_t>(out, 40, checksum(meta, k.image));
  out += meta;
  out += k.image;
  return out;
}

std::optional<CacheKey> peek_key(std::string_view in) {
  if (in.size() < kHeaderBytes || std::memcmp(in.data(), kMagic, sizeof kMagic) != 0)
    return std::nullopt;
  return CacheKey{get<std::uint64_t>(in, 16), get<std::uint64_t>(in, 24)};
}

Decoded decode_entry(std::string_view in, const CacheKey& expected) {
  auto bad = [](std::string why) { return Decoded{std::nullopt, std::move(why)}; };
  if (in.size() < kHeaderBytes)
    return bad(fmt::format("truncated: {} bytes, header needs {}", in.size(), kHeaderBytes));
  if (std::memcmp(in.data(), kMagic, sizeof kMagic) != 0)
    return bad("not a kiln cache entry (bad magic)");
  const auto version = get<std::uint32_t>(in, 8);
  if (version != kFormatVersion)
    return bad(fmt::format("format version {} (this kiln reads {})", version, kFormatVersion));
  const CacheKey key{get<std::uint64_t>(in, 16), get<std::uint64_t>(in, 24)};
  if (key != expected)
    return bad(fmt::format("holds key {}, expected {}", key.hex(), expected.hex()));
  const std::uint64_t meta_size = get<std::uint32_t>(in, 12);
  const auto payload_size = get<std::uint64_t>(in, 32);
  if (meta_size > in.size() || payload_size > in.size() ||
      kHeaderBytes + meta_size + payload_size != in.size())
    return bad(fmt::format("size mismatch: file {} bytes, header says {} + {} + {}", in.size(),
                           kHeaderBytes, meta_size, payload_size));
  const std::string_view meta = in.substr(kHeaderBytes, meta_size);
  const std::string_view payload = in.substr(kHeaderBytes + meta_size);
  if (checksum(meta, payload) != get<std::uint64_t>(in, 40))
    return bad("checksum mismatch (corrupt bytes)");
  CompiledKernel k;
  try {
    const auto j = nlohmann::json::parse(meta);
    k.name = j.at("name").get<std::string>();
    k.lowered_name = j.at("lowered_name").get<std::string>();
    k.arch = j.at("arch").get<std::string>();
    k.is_ptx = j.at("ptx").get<bool>();
    k.registers = j.at("registers").get<int>();
    k.spill_bytes = j.at("spill_bytes").get<int>();
    k.compile_ms = j.at("compile_ms").get<double>();
    k.spec_id = j.value("spec", "");
    k.headers_id = j.value("headers", "");
    k.nvrtc_version = j.value("nvrtc", "");
  } catch (const std::exception& e) {
    return bad(std::string("unreadable metadata: ") + e.what());
  }
  k.image.assign(payload);
  return {std::move(k), ""};
}

}  // namespace kiln::cache
