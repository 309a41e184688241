#include "engine/families/gemm/gemm_buckets.hpp"

#include "engine/target.hpp"

namespace kiln {

std::int64_t gemm_bucket(std::int64_t extent) {
  if (extent <= 0) return extent;
  std::int64_t b = 1;
  while (b < extent && b < kGemmTopBucket) b *= 2;
  return b;
}

GemmSizing gemm_sizing(const GemmKernel& k, const GemmProblem& p) {
  const Target arch = target_of(k.arch);
  GemmSizing s;
  s.max_shared = k.max_shared ? k.max_shared : arch.max_shared;
  s.sms = k.sms ? k.sms : arch.sms;
  s.m = k.dynamic.m ? gemm_bucket(p.m) : p.m;
  s.n = k.dynamic.n ? gemm_bucket(p.n) : p.n;
  s.k = k.dynamic.k ? gemm_bucket(p.k) : p.k;
  s.batches = k.dynamic.batches ? gemm_bucket(p.batches) : p.batches;
  return s;
}

std::vector<std::int64_t> gemm_bucket_probes() {
  // A size c * e (c fixed) doubles from one probe to the next, so it lands in every bucket
  // between c and the top once; twice the top bucket reaches it for c = 1.
  std::vector<std::int64_t> probes;
  for (std::int64_t e = 1; e <= 2 * kGemmTopBucket; e *= 2) probes.push_back(e);
  return probes;
}

}  // namespace kiln
