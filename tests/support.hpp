#pragma once
// Shared helpers of the doctest suite: GPU detection for skip decorators, temp dirs, random data.

#include <doctest/doctest.h>

#include <cstdint>
#include <kiln/kiln.hpp>
#include <random>
#include <string>
#include <vector>

#include "cache/tuning.hpp"

namespace kiln::test {

/// True when a CUDA driver and a device are present. GPU test cases carry
/// `* doctest::skip(!kiln::test::has_gpu())` so a CPU run lists them as skipped.
bool has_gpu();
/// True when device 0's compute capability is at least `major`.0 (false without a GPU).
bool has_arch(int major);

/// Options of an engine that compiles for `arch` without a GPU; no disk cache unless `cache_dir`
/// is given; records specializations into `record` when not empty.
EngineOptions offline(const std::string& arch, const std::string& cache_dir = "",
                      const std::string& record = "");

/// Options of an engine on the GPU that keeps its kernels in memory and ignores tuning records:
/// a test neither reads nor fills the user's cache.
EngineOptions on_gpu();

/// A view without memory (data 0) of `shape` and `t`, for inference and precompile.
TensorView desc(Shape shape, DType t);

/// A fresh private directory, removed with its contents at scope exit.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& bytes);

/// Host bytes of `n` elements of `t`, drawn uniformly from [lo, hi] (bool: 0/1 at random).
/// `step` > 0 quantizes values to multiples of step (so comparisons meet equal values).
std::vector<unsigned char> random_bytes(DType t, std::size_t n, double lo, double hi,
                                        std::mt19937_64& rng, double step = 0);

/// A tensor's bytes, copied to the host.
std::vector<unsigned char> bytes_of(const Tensor& t);
/// Host bytes of `values` as dtype `t` (rounded to it), and values back from such bytes.
std::vector<unsigned char> encode(DType t, const std::vector<double>& values);
std::vector<double> decode(DType t, const std::vector<unsigned char>& bytes);

/// The kiln CLI run with `args`: its exit status, stdout, stderr, and both (stdout first).
struct CliRun {
  int status;
  std::string output;
  std::string out;
  std::string err;
};
CliRun kiln_cli(const std::string& args, const std::string& env = "");

/// A seeded generator; the seed is printed by doctest on failure via INFO.
std::mt19937_64 make_rng(std::uint64_t salt);

/// A tuning record of `gpu` for `signature`: `winner` measured at `us` (the default at 2 us).
cache::TuningRecord tuning_record(const std::string& gpu, const std::string& signature,
                                  std::map<std::string, int> winner, double us);

/// Engine options on the GPU whose cache in `dir` holds one tuning record: `winner` for the
/// kernels of `signature` (so a test runs a template with the tunables it names).
EngineOptions with_tuning_record(const TempDir& dir, const std::string& signature,
                                 std::map<std::string, int> winner);

}  // namespace kiln::test
