#include "tests/support.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "engine/runtime/driver.hpp"

namespace kiln::test {

bool has_gpu() {
  static const bool present = runtime::device_available();
  return present;
}

bool has_arch(int major) {
  static const int found = [] {
    if (!has_gpu()) return 0;
    const runtime::Driver& d = runtime::driver();
    CUdevice dev = 0;
    int cc = 0;
    if (d.cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        d.cuDeviceGetAttribute(&cc, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) !=
            CUDA_SUCCESS)
      return 0;
    return cc;
  }();
  return found >= major;
}

EngineOptions offline(const std::string& arch, const std::string& cache_dir,
                      const std::string& record) {
  EngineOptions o;
  o.offline = true;
  o.arch = arch;
  o.disk_cache = !cache_dir.empty();
  if (!cache_dir.empty()) o.cache_dir = cache_dir;
  o.record = record;
  return o;
}

EngineOptions on_gpu() {
  EngineOptions o;
  o.disk_cache = false;
  o.tuning = false;
  return o;
}

TensorView desc(Shape shape, DType t) {
  TensorView v;
  v.shape = std::move(shape);
  v.dtype = t;
  return v;
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "kiln-test-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  // Restore permissions a test may have taken away, then remove everything.
  for (auto& p : std::filesystem::recursive_directory_iterator(path_, ec))
    if (p.is_directory()) ::chmod(p.path().c_str(), 0700);
  ::chmod(path_.c_str(), 0700);
  std::filesystem::remove_all(path_, ec);
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
}

std::vector<unsigned char> random_bytes(DType t, std::size_t n, double lo, double hi,
                                        std::mt19937_64& rng, double step) {
  std::vector<unsigned char> out(n * size_of(t));
  std::uniform_real_distribution<double> dist(lo, hi);
  std::bernoulli_distribution coin(0.5);
  for (std::size_t i = 0; i < n; ++i) {
    double v = t == DType::boolean ? double(coin(rng)) : dist(rng);
    if (step > 0) v = std::round(v / step) * step;
    store_element(t, v, out.data() + i * size_of(t));
  }
  return out;
}

std::vector<unsigned char> encode(DType t, const std::vector<double>& values) {
  std::vector<unsigned char> bytes(values.size() * size_of(t));
  for (std::size_t i = 0; i < values.size(); ++i)
    store_element(t, values[i], bytes.data() + i * size_of(t));
  return bytes;
}

std::vector<double> decode(DType t, const std::vector<unsigned char>& bytes) {
  std::vector<double> values(bytes.size() / size_of(t));
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = load_element(t, bytes.data() + i * size_of(t));
  return values;
}

CliRun kiln_cli(const std::string& args, const std::string& env) {
  TempDir tmp;
  const std::string err_path = tmp / "stderr";
  const std::string cmd = env + " " + std::string(KILN_CLI_PATH) + " " + args + " 2>" + err_path;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("popen failed");
  CliRun r;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
  const int raw = ::pclose(p);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : WIFSIGNALED(raw) ? 128 + WTERMSIG(raw) : -1;
  r.err = read_file(err_path);
  r.output = r.out + r.err;
  return r;
}

std::vector<unsigned char> bytes_of(const Tensor& t) {
  std::vector<unsigned char> b(t.bytes());
  t.copy_to_host(b.data());
  return b;
}

std::mt19937_64 make_rng(std::uint64_t salt) {
  const char* env = std::getenv("KILN_TEST_SEED");
  const std::uint64_t seed =
      (env ? std::strtoull(env, nullptr, 10) : 20261122ull) ^ (salt * 0x9e3779b97f4a7c15ull);
  return std::mt19937_64(seed);
}

cache::TuningRecord tuning_record(const std::string& gpu, const std::string& signature,
                                  std::map<std::string, int> winner, double us) {
  cache::TuningRecord r;
  r.signature = signature;
  r.kernel = "softmax_bf16__r2v8";
  r.shape_class = "exact [32768,4096]";
  r.dtype = "bf16";
  r.gpu = gpu;
  r.arch = "sm_90a";
  r.sm_count = 132;
  r.driver = "13.0";
  r.winner = std::move(winner);
  r.winner_us = us;
  r.default_us = 2 * us;
  return r;
}

EngineOptions with_tuning_record(const TempDir& dir, const std::string& signature,
                                 std::map<std::string, int> winner) {
  EngineOptions o;
  o.cache_dir = dir.path();
  const std::string gpu = Engine(o).device_name();
  cache::TuningDb db(gpu);
  db.put(tuning_record(gpu, signature, std::move(winner), 1));
  db.save(dir.path());
  return o;
}

}  // namespace kiln::test
