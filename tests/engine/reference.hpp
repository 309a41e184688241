#pragma once
// The fp64 reference of a whole graph, and the check of a GPU run against it.

#include <functional>
#include <kiln/graph.hpp>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace kiln::test {

/// Offset into `src` (right-aligned broadcast) of element i of `shape` (row-major).
std::int64_t broadcast_offset(std::int64_t i, const Shape& shape, const Shape& src);

/// A node's fp64 values (row-major over its shape) by node id.
using ValueLookup = std::function<const std::vector<double>&(int)>;

/// The fp64 reference of a whole node of op `op` (one the per-element and per-row rules of
/// reference.cpp do not cover: a product, attention, a norm over groups, a gather, a concat):
/// its values, row-major over its shape, from its operands' (`arg`); `mag` (if given) gets,
/// per element, the magnitude its f32 errors scale with (0 where it moves values exactly).
using NodeReference = std::vector<double> (*)(const Graph& g, int id, const ValueLookup& arg,
                                              std::vector<double>* mag);
/// Registers `ref` as the reference of op `op` (KILN_NODE_REFERENCE, in the reference's own
/// file); true, for the static it initializes.
bool register_node_reference(const char* op, NodeReference ref);
/// The reference registered for op `op`; null if none.
NodeReference node_reference(const std::string& op);
#define KILN_NODE_REFERENCE_CAT(a, b) a##b
#define KILN_NODE_REFERENCE_NAME(line) KILN_NODE_REFERENCE_CAT(kiln_node_reference_, line)
/// One registration line per op: KILN_NODE_REFERENCE("concat", concat_node).
#define KILN_NODE_REFERENCE(op, fn) \
  static const bool KILN_NODE_REFERENCE_NAME(__LINE__) = register_node_reference(op, fn)

/// The NodeReference of `F`, a reference of an op that moves values exactly (a view, a gather, a
/// concat): 0 for its errors' magnitude.
using ExactReference = std::vector<double> (*)(const Graph& g, const Graph::Node& n,
                                               const ValueLookup& arg);
template <ExactReference F>
std::vector<double> exact_reference(const Graph& g, int id, const ValueLookup& arg,
                                    std::vector<double>* mag) {
  std::vector<double> out = F(g, g.node(id), arg);
  if (mag) mag->assign(out.size(), 0.0);
  return out;
}

/// Node `id` of `g`, a matrix product (matmul, linear), in fp64 from its operands' values;
/// `mag` (if given) gets, per element, the sum of the magnitudes of its products (and bias).
std::vector<double> gemm_reference(const Graph& g, int id, const ValueLookup& arg,
                                   std::vector<double>* mag);

/// A slice_update node `n` of `g`: dst with src over its window (NaN everywhere for a start
/// that leaves no room: the run reports it instead).
std::vector<double> update_reference(const Graph& g, const Graph::Node& n, const ValueLookup& arg);
/// Operand `part`'s `values` placed in its window of concat node `n`'s result `out` (sized
/// to it, NaN elsewhere, where empty).
void place_concat_part(const Graph& g, const Graph::Node& n, std::size_t part,
                       const std::vector<double>& values, std::vector<double>& out);
/// A concat node `n` of `g`: its operands' values laid side by side along its axis.
std::vector<double> concat_reference(const Graph& g, const Graph::Node& n, const ValueLookup& arg);
/// A gather, index_select or embedding node `n` of `g`, from torch's definitions (NaN for an
/// index outside its axis).
std::vector<double> gather_reference(const Graph& g, const Graph::Node& n, const ValueLookup& arg);
/// pad and upsample_nearest (reference_remap.cpp).
std::vector<double> remap_reference(const Graph& g, const Graph::Node& n, const ValueLookup& arg);

/// Node `id` of `g`, a group_norm, in fp64 from its operands' values; `mag` (if given) gets,
/// per element, the largest magnitude in its group.
std::vector<double> group_norm_reference(const Graph& g, int id, const ValueLookup& arg,
                                         std::vector<double>* mag);
/// One attention call in fp64 (ops/attention.cpp's semantics): row-major values of q
/// [..., Hq, Sq, D], k and v [..., Hkv, Skv, D], the mask (of `mask_shape`, broadcast to
/// [..., Hq, Sq, Skv]) and kv_lens where given.
struct AttentionRef {
  Shape q_shape, kv_shape, mask_shape;
  const std::vector<double>*q = nullptr, *k = nullptr, *v = nullptr;
  const std::vector<double>* mask = nullptr;
  const std::vector<double>* lens = nullptr;
  bool mask_bool = false, causal = false, bottom_right = false;
  std::optional<double> scale;
};

/// Output row (b, h, i) of `a`: D values, zeros where every key is masked. `b` indexes q's
/// batch dims flattened.
std::vector<double> attention_row(const AttentionRef& a, std::int64_t b, std::int64_t h,
                                  std::int64_t i);

/// Row (b, h, i)'s log-sum-exp (natural log; -inf where every key is masked); `bound` (if
/// given) gets the largest scale * sum |q_c k_c| (+ |mask|) of the keys it sees.
double attention_lse_row(const AttentionRef& a, std::int64_t b, std::int64_t h, std::int64_t i,
                         double* bound = nullptr);

/// The AttentionRef of node `id` of `g` (attention or attention_lse) over its operands' values.
AttentionRef attention_ref(const Graph& g, int id, const ValueLookup& arg);

/// Host bytes of a graph's inputs, by name.
using HostInputs = std::map<std::string, std::vector<unsigned char>>;

/// Random values in [-3, 3] for every input of `g`, drawn from `rng` in node order (what
/// check_on_gpu uses: the same rng state gives the same inputs).
HostInputs random_inputs(const Graph& g, std::mt19937_64& rng);

/// `g`'s inputs on the device, from `host`: the tensors, and views of them by name.
struct DeviceInputs {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, TensorView> views;
};
DeviceInputs upload(Engine& e, const Graph& g, const HostInputs& host);

/// Values of every node, row-major over its shape: every node evaluated on the CPU in fp64
/// from the inputs' (already rounded) values, with no rounding in between.
std::vector<std::vector<double>> evaluate(const Graph& g, const HostInputs& inputs);

/// What the plan of `g` (fused or not) computes, kernel by kernel, in fp64: values inside a
/// kernel are not rounded (the GPU keeps them in f32) except by casts; values a kernel writes
/// are rounded to their dtype, and later kernels read those. Defined for the values the plan
/// writes (its outputs and stored intermediates); empty for the others. With `jitter` > 0,
/// every value read or computed also moves (before any rounding) by 2^-20 of its magnitude
/// plus, for elementwise ops, of its largest operand's: in alternating directions along each
/// row for 1, all up for 2, all down for 3, up only at even (4) or odd (5) node ids, random
/// directions (seeded by `jitter`) for 6 to 8, alternating the other way round for 9; for
/// kTowardZero (10) only values whose error is coarser than f32's (attention over f16/bf16)
/// move, toward 0 and no further.
/// A row op's input row moves too, by 2^-22 of its
/// element's magnitude plus the row's largest (its f32 sum, mean or max errs by that). With `only`
/// >= 0, only that node moves.
constexpr int kTowardZero = 10;
std::vector<std::vector<double>> evaluate_plan(const Graph& g, const HostInputs& inputs, bool fused,
                                               int jitter = 0, int only = -1);

/// Where evaluate_plan's model of `g` (fused and unfused, on random_inputs from `rng`) differs
/// from evaluate's exact values by more than `epsilon` of max(1, |exact|): a line each, at most
/// 8 (none where it agrees).
std::vector<std::string> model_differences(const Graph& g, std::mt19937_64& rng, double epsilon);

/// A plan's model and its jittered variants: the ten patterns of evaluate_plan, and, at each
/// f16/bf16 rounding whose direction some pattern changed, that node alone moved up and down
/// (a flip the patterns cancel downstream, e.g. through abs). sensitivity(o, i): how far
/// element i of node o moves in any of them.
struct PlanModel {
  std::vector<std::vector<double>> model;
  std::vector<std::vector<std::vector<double>>> jittered;
  double sensitivity(int o, std::size_t i) const;
};
PlanModel model_plan(const Graph& g, const HostInputs& inputs, bool fused);

/// Runs `g` on `e` (fused, and unfused too when `unfused`) on random inputs in [-3, 3], every
/// output poisoned first, and compares each output with evaluate_plan's model of that plan,
/// and the unfused outputs with the fused ones. Tolerance per element: the output dtype's
/// relative tolerance (softmax outputs relative to 1/C) plus 4x how far the element moves in
/// model_plan's jittered models (its sensitivity to the GPU's f32 arithmetic, including a
/// rounding that goes the other way). NaN and infinities where and only where the model has them
/// (anything goes where a perturbation changes that). Returns the mismatches (a few per output and
/// kind).
/// With `plan`, the fused run is that plan's (one of a graph with dynamic dims, `g` its
/// binding), not one of `g`. Outputs are given to the run row-major, or with `plan_order` in
/// the memory order each plan makes them in (Plan::outputs: channels_last after a
/// channels_last x), which can be another kernel.
std::vector<std::string> check_on_gpu(Engine& e, const Graph& g, std::mt19937_64& rng,
                                      bool unfused = false, const Plan* plan = nullptr,
                                      bool plan_order = false);
/// The same on the inputs given (NaN and infinities included).
std::vector<std::string> check_inputs_on_gpu(Engine& e, const Graph& g, const HostInputs& inputs,
                                             bool unfused = false, const Plan* plan = nullptr,
                                             bool plan_order = false);

}  // namespace kiln::test
