// The attention templates' tiles: the tunable table, the defaults of the mma and decode paths,
// the check of a tuning's values, and what `kiln tune` searches (attention.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <kiln/error.hpp>

#include "engine/families/attention/attention.hpp"
#include "kernel_templates/kiln/attention_config.cuh"

namespace kiln {

namespace cfg = attention::config;

namespace {
// Shared memory a multiprocessor holds on sm_90 (the most a decode launch can count on for
// several blocks an SM), and what a block reserves besides its own.
constexpr int kSharedPerSm = 228 * 1024, kSharedReserved = 1024;
constexpr int kThreadsPerSm = 2048;
}  // namespace

const codegen::TunableTable<AttentionTemplate>& attention_tunable_table() {
  using T = AttentionTemplate;
  static const codegen::TunableTable<T> table = {
      {"bm", &T::bm, {64, 128}, kAttentionMma},
      {"bn", &T::bn, {16, 32, 64, 128}, kAttentionMma},
      {"stages", &T::stages, {2, 3}, kAttentionMma},
      {"wm", &T::wm, {16, 32}, kAttentionMma},
      {"bn", &T::bn, {16, 32, 64}, kAttentionDecode},
      {"stages", &T::stages, {2, 3, 4}, kAttentionDecode},
      {"warps", &T::warps, {2, 4, 8}, kAttentionDecode},
      {"split", &T::split, {1, 2, 4, 8}, kAttentionDecode, kAttentionClusters},
      {"chunks", &T::chunks, {1, 2, 4, 8, 16}, kAttentionDecode},
      {"bn", &T::bn, {64, 96, 128, 160, 192}, kAttentionWgmma},
      {"stages", &T::stages, {2, 3, 4}, kAttentionWgmma},
      {"wgmma", &T::wgmma, {1}, kAttentionWgmma},
      {"wgmma", &T::wgmma, {0}, kAttentionMma, kAttentionHopper},
  };
  return table;
}

unsigned AttentionTemplate::where(bool clusters) const {
  return (decode  ? kAttentionDecode
          : wgmma ? kAttentionWgmma
                  : kAttentionMma) |
         (clusters ? kAttentionClusters : 0u) | (hopper ? kAttentionHopper : 0u);
}

bool wgmma_key_tile_fits(int d, int bn) {
  // A consumer thread holds D/2 output and BN/2 score accumulators and BN/4 registers of
  // probabilities, within the 240 a consumer warpgroup's threads have; measured with ptxas
  // (tests/engine/families/attention/attention_sm90_test.cpp): past 184 of them, or D above 192
  // at all (its Q and state besides), the code spills.
  const int dp = cfg::wgmma_d(d);
  return dp <= 192 && dp / 2 + 3 * bn / 4 <= 184;
}

AttentionTemplate default_wgmma_tiles(int d, int max_shared) {
  AttentionTemplate t;
  t.d = d;
  t.wgmma = 1;
  t.hopper = true;
  const int dp = cfg::wgmma_d(d);
  t.bn = dp <= 128 ? 128 : 96;
  t.stages = dp <= 64 ? 3 : 2;
  while (t.shared_bytes() > max_shared && t.stages > 2) --t.stages;
  while (t.shared_bytes() > max_shared && t.bn > 64) t.bn -= 32;
  return t;
}

int widest_key_tile(int d, bool masked, int wm, bool sm90, bool ragged) {
  // Measured with ptxas for sm_80 and sm_90a (attention_spill_test.cpp checks the defaults,
  // bench/trace/attention_spill_grid.py every call shape): wider tiles spill. Two tiles of rows a
  // warp hold twice the scores and outputs: none fits above D 160, none with a mask before sm_90,
  // and at D 128 sm_90a's code fits 64 keys where sm_80's spills. Key bounds known at run time
  // (kv_lens, a bottom-right diagonal) take registers of their own: 64 keys spill from D 96 on
  // sm_90a and from D 80 on sm_80.
  if (wm == 32) {
    if (masked) return !sm90 ? 0 : d <= 40 ? 64 : d <= 80 ? 32 : 0;
    const int wide = ragged ? (sm90 ? 80 : 64) : sm90 ? 128 : 80;
    return d <= wide ? 64 : d <= 128 ? 32 : d <= 160 ? 16 : 0;
  }
  if (masked) return d <= 80 ? 64 : d <= 128 ? 32 : 16;
  return d <= 192 ? 128 : 64;
}

AttentionTemplate default_attention_tiles(int d, bool masked, int max_shared, bool sm90,
                                          bool ragged) {
  AttentionTemplate t;
  t.d = d;
  // Above D 128, Q is read from shared memory and the output takes 128 registers a thread:
  // 64 x 32 tiles keep the block without spills. A mask's element-wise work takes registers
  // too: half as many keys a tile.
  if (d > 128) t.bm = 64, t.bn = 32;
  if (masked) t.bn /= 2;
  // Up to D 128 without a mask, 32 rows a warp (4 warps of 128 rows, 64 keys a tile, as
  // FlashAttention-2 has it): each K and V fragment read serves two tiles of rows.
  if (d <= 128 && !masked)
    t.wm = 32, t.bn = widest_key_tile(d, false, 32, sm90, ragged);
  t.stages = d <= 64 ? 3 : 2;
  while (t.shared_bytes() > max_shared && t.stages > 2) --t.stages;
  while (t.shared_bytes() > max_shared && t.bn > 16) t.bn /= 2;
  while (t.shared_bytes() > max_shared && t.bm > 64) t.bm /= 2;
  return t;
}

AttentionTemplate default_decode_tiles(int d, bool masked, int max_shared, std::int64_t work,
                                       std::int64_t keys, bool clusters, int sms) {
  AttentionTemplate t;
  t.d = d;
  t.decode = true;
  // Three stages of 32 keys for each of 4 warps keep ~128 KB of K and V in flight an SM at D
  // 128: what one SM needs to draw its share of the memory's bandwidth.
  t.bn = std::min(32, widest_key_tile(d, masked, 16, clusters));
  t.stages = 3;
  t.warps = 4;
  while (t.shared_bytes() > max_shared && t.stages > 2) --t.stages;
  while (t.shared_bytes() > max_shared && t.bn > 16) t.bn /= 2;
  while (t.shared_bytes() > max_shared && t.warps > 2) t.warps /= 2;
  // Split the keys while the blocks still fit one wave and each warp keeps 4 tiles or more.
  const std::int64_t per_sm =
      std::max(1, std::min(kSharedPerSm / (t.shared_bytes() + kSharedReserved),
                           kThreadsPerSm / int(t.threads())));
  const std::int64_t wave = std::int64_t(sms > 0 ? sms : 108) * per_sm;
  const std::int64_t tiles = (keys + t.bn - 1) / t.bn;
  // Split between the 2 blocks of a cluster, then between chunks (clusters merged through the
  // workspace by the last to finish): 16 clusters of 8 did not all fit an H100 at once (B1 over
  // 32768 keys ran 78.7 us in clusters of 8 and 2 chunks, 69.4 us in clusters of 8 alone:
  // bench/NOTES.md); the tunable `split` still reaches 8.
  const auto fits = [&](int blocks) {
    return work * blocks * 2 <= wave && tiles >= std::int64_t(4) * t.warps * blocks * 2;
  };
  if (clusters && fits(1)) t.split = 2;
  while (t.chunks < 16 && fits(t.split * t.chunks)) t.chunks *= 2;
  return t;
}

AttentionTemplate resolve_attention_tiles(const Tunables& t, const AttentionTemplate& defaults,
                                          const std::string& stem, int max_shared, bool clusters) {
  const auto& table = attention_tunable_table();
  const unsigned where = defaults.where(clusters);
  const char* path = defaults.decode ? "decode path" : defaults.wgmma ? "sm_90a path" : "mma path";
  for (const auto& [name, value] : t) {
    const bool known = std::any_of(table.begin(), table.end(), [&, &n = name](const auto& row) {
      return row.name == n && row.in(where);
    });
    if (!known) {
      std::vector<std::string> names;
      for (const auto& [n, v] : codegen::launch_tunables(table, defaults, where))
        names.push_back(n);
      throw ArgumentError(
          fmt::format("{}: '{}' is not a tunable of the attention template's {} "
                      "({})",
                      stem, name, path, fmt::join(names, ", ")));
    }
  }
  AttentionTemplate r = codegen::parse_tunables(table, t, defaults, stem, "attention template");
  for (const auto& row : table)
    if (row.in(where) &&
        std::find(row.values.begin(), row.values.end(), r.*(row.field)) == row.values.end())
      throw ArgumentError(fmt::format("{}: {}={} is not a value the attention template's {} takes",
                                      stem, row.name, r.*(row.field), path));
  if (r.wgmma && !wgmma_key_tile_fits(r.d, r.bn))
    throw ArgumentError(fmt::format("{}: tiles of {} keys at head size {} spill on the sm_90a path",
                                    stem, r.bn, r.d));
  if (r.shared_bytes() > max_shared)
    throw ArgumentError(
        fmt::format("{}: tiles of {} keys in {} stages take {} bytes of shared "
                    "memory, more than the {} a block has",
                    stem, r.bn, r.stages, r.shared_bytes(), max_shared));
  return r;
}

namespace autotune {
Space attention_space(const KernelLaunch& base, int max_shared, bool sm90) {
  Space s;
  s.reject = [](const Candidate&, const DeviceLimits&) { return std::string(); };
  if (base.tunables.empty()) return s;  // the rows path: nothing to search
  s.fallback = base.tunables;
  AttentionTemplate t;
  t.decode = s.fallback.count("warps") > 0;
  t.wgmma = s.fallback.count("wgmma") ? s.fallback.at("wgmma") : 0;
  t.hopper = s.fallback.count("wgmma") > 0;
  const bool clusters = s.fallback.count("split") > 0;
  s.tunables = codegen::space_tunables(attention_tunable_table(), t.where(clusters));
  // The head size and whether a mask is applied, from the kernel's name (name()).
  const std::string& name = base.spec.name;
  const auto at = name.rfind("_d");
  t.d = at == std::string::npos ? 256 : std::atoi(name.c_str() + at + 2);
  const std::size_t suffix = at == std::string::npos ? 0 : at;
  const bool masked = name.find("mask", suffix) != std::string::npos;
  const bool ragged = name.find("_causal_br", suffix) != std::string::npos ||
                      name.find("_lens", suffix) != std::string::npos;
  s.reject = [t, masked, ragged, max_shared, sm90](
                 const Candidate& c, const DeviceLimits& lim) -> std::string {
    AttentionTemplate x = t;
    for (const auto& [n, v] : c)
      for (const auto& row : attention_tunable_table())
        if (row.name == n) x.*(row.field) = v;
    const int have = std::min(max_shared, lim.max_shared_bytes_per_block);
    if (x.shared_bytes() > have)
      return fmt::format("{} bytes of shared memory, more than {}", x.shared_bytes(), have);
    const int wm = x.decode ? 16 : x.wm;
    if (x.wgmma && !wgmma_key_tile_fits(x.d, x.bn))
      return fmt::format("key tiles of {} spill at D {} on the sm_90a path", x.bn, x.d);
    if (!x.wgmma && x.bn > widest_key_tile(x.d, masked, wm, sm90, ragged))
      return fmt::format("key tiles of {} spill at D {}{} with {} rows a warp", x.bn, x.d,
                         masked ? " with a mask" : "", wm);
    if (int(x.threads()) > lim.max_threads_per_block)
      return fmt::format("{} threads per block, the device allows {}", x.threads(),
                         lim.max_threads_per_block);
    return "";
  };
  return s;
}
}  // namespace autotune

}  // namespace kiln
