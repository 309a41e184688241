#include "engine/target.hpp"

#include "engine/compiler/compiler.hpp"

namespace kiln {
namespace {

constexpr int kKB = 1024;

// The archs a build may target, oldest first (NVRTC's sm_XY names without a suffix).
constexpr int kArchs[] = {80, 86, 87, 89, 90, 100, 103, 110, 120, 121};

struct Limits {
  int max_shared;
  int sms;
};

// Data-sheet figures of each arch's largest part: A100, A40, Orin, L40, H100, B200, GB300, Thor,
// RTX 5090, DGX Spark. An arch not listed takes the smallest opt-in a current GPU allows.
Limits limits_of(int number) {
  switch (number) {
    case 80:
      return {163 * kKB, 108};
    case 86:
      return {99 * kKB, 84};
    case 87:
      return {163 * kKB, 16};
    case 89:
      return {99 * kKB, 142};
    case 90:
      return {227 * kKB, 132};
    case 100:
    case 103:
      return {227 * kKB, 148};
    case 110:
      return {227 * kKB, 20};
    case 120:
      return {99 * kKB, 170};
    case 121:
      return {99 * kKB, 48};
  }
  return {99 * kKB, 132};
}

bool specific(const std::string& arch) {
  const char last = arch.empty() ? 0 : arch.back();
  return last == 'a' || last == 'f';
}

}  // namespace

Target target_of(const std::string& arch) {
  const Limits l = limits_of(compiler::arch_number(arch));
  return {arch, l.max_shared, l.sms};
}

bool runs_on(const std::string& built, const std::string& device) {
  const int b = compiler::arch_number(built), d = compiler::arch_number(device);
  if (specific(built)) return b == d && specific(device);
  return b / 10 == d / 10 && b <= d;
}

std::vector<std::string> older_compatible_archs(const std::string& device) {
  const int d = compiler::arch_number(device);
  std::vector<std::string> out;
  for (auto it = std::rbegin(kArchs); it != std::rend(kArchs); ++it) {
    const std::string arch = "sm_" + std::to_string(*it);
    if (arch != device && runs_on(arch, device)) out.push_back(arch);
  }
  return out;
}

}  // namespace kiln
