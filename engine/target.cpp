#include "engine/target.hpp"

#include "engine/compiler/compiler.hpp"

namespace kiln {
namespace {

constexpr int kKB = 1024;

struct ArchLimits {
  int number;
  int max_shared;
  int sms;
};

// The archs a build may target, oldest first, with the data-sheet figures of each one's largest
// part: A100, A40, Orin, L40, H100, B200, GB300, Thor, RTX 5090, DGX Spark.
constexpr ArchLimits kArchs[] = {
    {80, 163 * kKB, 108},  {86, 99 * kKB, 84},    {87, 163 * kKB, 16},   {89, 99 * kKB, 142},
    {90, 227 * kKB, 132},  {100, 227 * kKB, 148}, {103, 227 * kKB, 148}, {110, 227 * kKB, 20},
    {120, 99 * kKB, 170},  {121, 99 * kKB, 48},
};

bool specific(const std::string& arch) {
  const char last = arch.empty() ? 0 : arch.back();
  return last == 'a' || last == 'f';
}

}  // namespace

Target target_of(const std::string& arch) {
  const int number = compiler::arch_number(arch);
  for (const ArchLimits& a : kArchs)
    if (a.number == number) return {arch, a.max_shared, a.sms};
  return {arch, 99 * kKB, 132};  // an arch not listed: the smallest opt-in a current GPU allows
}

bool runs_on(const std::string& built, const std::string& device) {
  const int b = compiler::arch_number(built), d = compiler::arch_number(device);
  if (specific(built)) return b == d && specific(device);
  return b / 10 == d / 10 && b <= d;
}

std::vector<std::string> older_compatible_archs(const std::string& device) {
  std::vector<std::string> out;
  for (auto it = std::rbegin(kArchs); it != std::rend(kArchs); ++it) {
    const std::string arch = "sm_" + std::to_string(it->number);
    if (arch != device && runs_on(arch, device)) out.push_back(arch);
  }
  return out;
}

}  // namespace kiln
