#pragma once
// The attention tests' kernel calls: q over k and v of one dtype, contiguous, as the engine
// describes a call before it picks a path.
#include "engine/families/attention/attention.hpp"
#include "tests/support.hpp"

namespace kiln::test {

/// q [..., Hq, Sq, D] over k and v [..., Hkv, Skv, D] of dtype t, the result q's shape, within an
/// H100's 227 KB of shared memory a block; `hopper`: sm_90a (clusters, wgmma) on 132 SMs.
inline AttentionKernel attention_call(DType t, Shape q, Shape kv, bool hopper = false) {
  AttentionKernel k;
  k.q = desc(q, t), k.out = k.q, k.k = desc(kv, t), k.v = k.k;
  k.max_shared = 227 * 1024;
  if (hopper) k.clusters = k.wgmma = true, k.sms = 132;
  return k;
}

}  // namespace kiln::test
