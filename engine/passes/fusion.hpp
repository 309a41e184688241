#pragma once
// The fusion pass. Elementwise ops fuse into chains: every materialized elementwise value of
// one shape (and one depth, below) is computed by one kernel that evaluates, per element,
// all the nodes it depends on (recomputing broadcast values is cheap: they are elementwise on
// inputs). Row ops (reductions, softmax, norms) anchor kernels of their own, with the
// elementwise nodes that feed them fused as a prologue; elementwise consumers of a softmax or
// norm of its shape fuse as its epilogue. A row result is materialized only when something
// outside its kernel reads it.
// Groups run in order of depth (the number of row ops on the longest path from the inputs).
// With fusion off, each op is its own kernel and every intermediate is materialized.
// A view (reshape) is its operand's memory under another shape where that operand is a value a
// kernel of the plan writes to its arena; a kernel copies it where the operand is memory the
// caller owns (a graph input or output) or the view is an output itself.

#include <array>
#include <kiln/graph.hpp>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/codegen/codegen.hpp"
#include "engine/target.hpp"
#include "ops/op.hpp"
#include "stages/kernel.hpp"

namespace kiln {
namespace cache {
class TuningDb;
}

/// What a group's family works out once, from the graph as planned, and reads at every
/// specialization (Family::analyze): the family's own type, derived from this.
struct GroupPayload {
  virtual ~GroupPayload() = default;
};

/// One kernel of a plan.
struct FusedGroup {
  std::vector<int> steps;      ///< elementwise node ids it computes, in topological order
  std::vector<int> inputs;     ///< node ids it reads from memory
  std::vector<int> outputs;    ///< node ids it writes
  std::string stem;            ///< kernel name stem: the ops it fused
  codegen::Body body;          ///< the elementwise body, or a row op's prologue
  std::vector<float> scalars;  ///< runtime scalars of the body, in order
  // Groups anchored on an op that is not elementwise (a family's kernel, a view's copy) only:
  const ops::OpDef* anchor = nullptr;
  int anchor_node = -1;
  /// The anchor's tensor operands by role, its op's operand names ("x", "weight", "bias"; "a",
  /// "b"), in order: what its family reads them by.
  std::vector<std::pair<std::string_view, int>> roles;
  /// The anchor's side operands (weight, bias node ids); for a prologue an anchor loads
  /// (load_prologues), that prologue's inputs after its first.
  std::vector<int> extras;
  int x = -1;  ///< the node whose value the prologue computes
  std::vector<int> epilogue_steps;   ///< elementwise nodes computed after the anchor
  std::vector<int> epilogue_inputs;  ///< node ids the epilogue reads from memory
  /// The views between the anchor's result and the value its epilogue reads, the anchor's side
  /// first (ops::FusionRoles::epilogue_through_views): the epilogue's tensors are of the last
  /// one's shape, indexed through strides_through. Empty: it reads the result itself.
  std::vector<int> epilogue_views;
  codegen::Body epilogue;
  std::vector<float> epilogue_scalars;
  /// The gather views (ops::ViewRule::axis) it reads in place, and each one's index tensor,
  /// read from the slots after every other (kernel_templates/kiln/gather.cuh); a gather view's
  /// copy lists its own here, its x as its input.
  std::vector<int> gather_views;
  std::vector<int> index_inputs;
  /// A row op's kernel that also stores its prologue's value x (one of its outputs), read by
  /// its epilogue as Ref::Kind::prologue (hand_on_prologues).
  bool hands_on = false;
  /// A concat's kernel (ops::FusionRoles::parts) writing operand `part` (x, computed by its
  /// steps or read from memory) into its window of the result, and the `parts` - 1 operands
  /// after it, each into its own window (of x's shape: one output each); -1 for any other group.
  int part = -1;
  int parts = 1;
  /// A concat's part right after its previous part in the plan: its kernel may run beside that
  /// one's (LaunchConfig::beside; overlap_parts).
  bool beside_previous = false;
  /// Its family's analysis (analyze_groups, when a plan or an eager call is built); none for a
  /// group straight from fuse(), or one its family has nothing to keep for.
  std::shared_ptr<const GroupPayload> payload;

  /// The node of the anchor's operand `role`; -1 if it has none (an optional one left out).
  int role(std::string_view name) const {
    for (const auto& [r, id] : roles)
      if (r == name) return id;
    return -1;
  }

  /// The payload as its family's type `T`; null if there is none (or another family's).
  template <class T>
  const T* payload_as() const {
    return dynamic_cast<const T*>(payload.get());
  }

  /// The node whose data each pointer of the group's kernel takes, in the kernel's order
  /// (KernelLaunch::pointers): outputs, then inputs, then extras, epilogue inputs and index
  /// tensors, then kStatusNode where it gathers (its status word: not a node's memory).
  std::vector<int> pointer_nodes() const {
    std::vector<int> nodes = outputs;
    if (part >= 0) nodes.assign(std::size_t(parts), outputs.at(0));  // a window a part
    for (const auto* list : reads()) nodes.insert(nodes.end(), list->begin(), list->end());
    if (!index_inputs.empty()) nodes.push_back(kStatusNode);
    return nodes;
  }
  /// Every list of nodes it reads from memory.
  std::array<const std::vector<int>*, 4> reads() const {
    return {&inputs, &extras, &epilogue_inputs, &index_inputs};
  }
  /// pointer_nodes' entry for the status word of a kernel that gathers.
  static constexpr int kStatusNode = -2;
};

/// The views (reshapes) of `graph` that no kernel of `groups` copies, each with the node whose
/// memory it is (view, operand), in node order: the operand is materialized in the arena, and
/// the view reads it there.
std::vector<std::pair<int, int>> view_aliases(const Graph& graph,
                                              const std::vector<FusedGroup>& groups);

/// `values` (each node's view, by id) with each view of `view_aliases` set to its rule's view of
/// its operand's (ops::ViewRule::of; a view read in place starts where its operand does): what
/// the kernels reading it see. Each other node but an input and those in `given` (a caller's
/// outputs) gets the strides of the memory order its op asks for (ops::OpDef::memory_order:
/// a convolution of channels_last memory writes channels_last), which elementwise nodes pass on
/// from their first operand to a result of its shape; the rest stay row-major (engine/passes/
/// memory_order.cpp).
void view_values(const Graph& graph, const std::vector<FusedGroup>& groups,
                 std::vector<TensorView>& values, const std::set<int>& given = {});

/// Where view `id` reorders the dims (a permute, a transpose) of a value whose op lays its
/// result out for its reader (ops::FusionRoles::laid_out), or of an elementwise value of such a
/// result's shape computed from it, and is that value's one reader: the
/// value's memory order (outermost dim first) that makes the view row-major. Empty otherwise.
std::vector<std::size_t> reader_order(const Graph& graph, int id);

/// The views from a node's result to `end` where each only reorders dims (a permute, a
/// transpose) or reshapes by merging adjacent dims, every extent static; `root` set to that
/// node. Empty (root -1) where `end` is no such chain.
std::vector<int> epilogue_view_chain(const Graph& graph, int end, int& root);

/// The strides over the chain's root shape that address, element for element, what `strides`
/// (over the shape of `chain`'s last view) address: each view's inverse applied to them, last
/// view first (epilogue_view_chain's chains always have one).
std::optional<Shape> strides_through(const Graph& graph, const std::vector<int>& chain,
                                     Shape strides);

/// What `grp`'s kernel computes, as an expression over the values it reads (graph names):
/// "softmax(mul(x,2)+b)", its outputs joined by "; ", each cut at 200 bytes. NVTX names its
/// launches so.
std::string describe_group(const Graph& graph, const FusedGroup& grp);

/// Part of fuse (`needed`: the nodes the outputs need): a slice along the last axis of a value a
/// matrix product's kernel writes (the product, or one of its epilogue's results) becomes a
/// window of its columns that kernel writes (its copy kernel leaves `groups`), and the value
/// itself stays an output of that kernel only if read_outside it (QKV: one product, three
/// outputs).
void window_slices(const Graph& graph, const std::set<int>& needed,
                   std::vector<FusedGroup>& groups);

/// Part of fuse: where the x a row op's prologue computes (ops::FusionRoles::hands_on) is also
/// written by an earlier elementwise kernel for readers outside the row op's, and nothing reads
/// it between the two kernels, the row op's kernel stores it instead (an output of its own;
/// its epilogue reads x there rather than from memory), and the elementwise kernel, or its
/// output, goes.
void hand_on_prologues(const Graph& graph, std::vector<FusedGroup>& groups);

/// Part of fuse: each group anchored on a node whose op joins another's kernel
/// (ops::FusionRoles::joins: attention_lse) becomes one more output of the group anchored on a
/// node of that op with the same operands and attribute values, where there is one (its outputs
/// first); the joined group runs where the earlier of the two did.
void join_results(const Graph& graph, std::vector<FusedGroup>& groups);

/// Part of fuse: in each group anchored on an op that folds a scale (ops::FusionRoles::
/// folds_scale: attention), operand 0 or 1 written by an elementwise kernel of its own as a
/// positive factor of a value (mul or div by a number) that nothing else reads is read as that
/// value instead: the factor's node becomes a step of the group (folded_scale) and its kernel
/// leaves `groups`.
void fold_scales(const Graph& graph, const std::set<int>& needed, std::vector<FusedGroup>& groups);
/// Part of fuse: where an anchor computes its operand 0 as it loads it
/// (ops::FusionRoles::loads_prologue: attention's q), the elementwise kernel that would write it,
/// read by nothing else, gives that value up: its chain becomes steps of the anchor's group
/// (FusedGroup::x the value), its first input takes operand 0's place in grp.inputs and the
/// others go to grp.extras (engine/passes/fusion_prologues.cpp).
void load_prologues(const Graph& graph, const std::set<int>& needed,
                    std::vector<FusedGroup>& groups);
/// The steps of the prologue `grp`'s anchor loads (load_prologues): those grp.x is computed
/// from, in grp.steps' order (the others are factors folded into its scale); none without one.
std::vector<int> prologue_steps(const Graph& graph, const FusedGroup& grp);
/// The product of the factors fold_scales made steps of `grp` (1 if none): what its anchor's
/// scale is multiplied by.
double folded_scale(const Graph& graph, const FusedGroup& grp);

/// A concat node `id`'s kernels (ops::FusionRoles::parts): one per run of adjacent operands of
/// one shape (one per operand where shapes differ), writing each into its window of the result,
/// computed from memory (inputs, anchors, views, anything in `stop`) by the elementwise nodes
/// it needs (fusion_parts.cpp).
std::vector<FusedGroup> part_groups(const Graph& graph, int id, const std::set<int>& stop);

/// Part of fuse, once the groups are in their final order: each concat part whose group follows
/// its previous part's is marked beside_previous (the two write disjoint windows from values
/// made before the first part: nothing between them to wait for).
void overlap_parts(std::vector<FusedGroup>& groups);

/// Whether node `id` is a view that a kernel writing windows may write (a slice: ViewRule::window).
bool is_window(const Graph& graph, int id);

/// Whether computing `root` from memory (its elementwise producers back to inputs, anchors and
/// views) touches an integer value: such a chain is a typed body (codegen.hpp), which only the
/// elementwise template runs, so it fuses into no anchor.
bool involves_integer(const Graph& graph, int root);

/// Part of fuse: fills the bodies of `grp` (prologue or elementwise body, epilogue) from the
/// nodes it collected, and its kernel's name stem.
void build_body(const Graph& graph, FusedGroup& grp);

/// Whether `id` is read outside kernel `self` of `groups`: a graph output, read by another
/// kernel, or the memory of a reshape among `needed` that shares it.
bool read_outside(const Graph& graph, const std::set<int>& needed,
                  const std::vector<FusedGroup>& groups, const FusedGroup& self, int id);

/// Part of fuse: lists in each group the gather views it reads in place (those no kernel
/// writes), with their index tensors (FusedGroup::gather_views, index_inputs).
void add_gather_indices(const Graph& graph, std::vector<FusedGroup>& groups);

/// Part of fuse: each in-place result's kernel (a slice_update's) moved as late as it may run,
/// just before the first kernel reading its result; GraphError where a kernel reads its operand's
/// old value after that, where the result is a graph output, or where its operand is a view.
void check_in_place(const Graph& graph, std::vector<FusedGroup>& groups);

/// False when KILN_DISABLE_FUSION=1 (plans then run one kernel per op).
bool fusion_enabled();

/// Groups `graph`'s op nodes into kernels (one per op when `fuse` is false).
std::vector<FusedGroup> fuse(const Graph& graph, bool fuse);

}  // namespace kiln
