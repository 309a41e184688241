#pragma once
// Tuning records: the template parameters a tuning run measured fastest for one kernel on one
// GPU. One JSON file per GPU name in <cache dir>/tuning/, written atomically. A record applies
// only on a GPU of the same name: records of another are refused, never applied silently.

#include <map>
#include <string>
#include <vector>

namespace kiln::cache {

struct TuningRecord {
  std::string signature;    ///< spec id of the kernel at its default parameters
  std::string kernel;       ///< its name, for people
  std::string shape_class;  ///< the shapes it applies to: "exact [32768,4096]"
  std::string dtype;
  std::string gpu;   ///< device name, e.g. "NVIDIA H100 80GB HBM3"
  std::string arch;  ///< "sm_90a"
  int sm_count = 0;
  std::string driver;                 ///< CUDA driver version, "13.0"
  std::map<std::string, int> winner;  ///< tunable -> value
  double winner_us = 0;
  double default_us = 0;
};

/// The tuning records of one GPU.
class TuningDb {
 public:
  explicit TuningDb(std::string gpu) : gpu_(std::move(gpu)) {}

  /// The records of `gpu` in `cache_dir` (none if it has no file yet). CacheError if the file
  /// cannot be read or is malformed.
  static TuningDb load(const std::string& cache_dir, const std::string& gpu);
  /// Every GPU's records in `cache_dir`; a file that cannot be read is skipped with a warning.
  static std::vector<TuningDb> load_all(const std::string& cache_dir);
  /// Records exported by `to_json` (export files). CacheError if malformed, naming `origin`.
  static TuningDb parse(const std::string& text, const std::string& origin);

  const std::string& gpu() const { return gpu_; }
  const std::vector<TuningRecord>& records() const { return records_; }
  const TuningRecord* find(const std::string& signature) const;

  /// Adds `r`, replacing a record of the same signature. ArgumentError if it is another GPU's.
  void put(const TuningRecord& r);
  /// Takes `other`'s records (on a signature both have, the faster winner stays); returns how
  /// many changed. ArgumentError naming both GPUs if `other` is another GPU's.
  int merge(const TuningDb& other);

  std::string to_json() const;
  /// Writes the records to their file in `cache_dir` atomically (creating tuning/).
  void save(const std::string& cache_dir) const;
  /// <cache_dir>/tuning/<gpu name, with every character but letters and digits as '_'>.json
  static std::string path(const std::string& cache_dir, const std::string& gpu);

 private:
  std::string gpu_;
  std::vector<TuningRecord> records_;
};

}  // namespace kiln::cache
