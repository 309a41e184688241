#include "tests/fuzz/generator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "ops/op.hpp"
#include "tests/fuzz/attention_draw.hpp"
#include "tests/fuzz/norm_draw.hpp"

namespace kiln::fuzz {
namespace {

constexpr std::int64_t kExtents[] = {1, 2, 3, 5, 7, 13, 31, 64, 127, 256, 1000, 4097};

// Ops whose results stay bounded for inputs in [-4, 4]: what the fuzzer chains freely.
constexpr const char* kBounded[] = {"neg",     "abs",  "sin",  "cos",       "tanh",
                                    "sigmoid", "relu", "gelu", "gelu_tanh", "silu"};
constexpr const char* kBinary[] = {"add", "sub", "mul", "maximum", "minimum"};
constexpr const char* kCompare[] = {"eq", "ne", "lt", "le", "gt", "ge"};
constexpr const char* kIntBinary[] = {"add", "sub", "maximum", "minimum", "div", "remainder"};
constexpr const char* kRows[] = {"sum",         "mean",       "max",      "min", "softmax",
                                 "log_softmax", "layer_norm", "rms_norm", "var", "std"};

}  // namespace

Graph random_graph(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](auto& list) { return list[rng() % (sizeof(list) / sizeof(list[0]))]; };
  auto chance = [&](int percent) { return int(rng() % 100) < percent; };

  // A base shape of rank 1-3 with at most ~256K elements.
  Shape base;
  const int rank = 1 + int(rng() % 3);
  std::int64_t numel = 1;
  for (int d = 0; d < rank; ++d) {
    std::int64_t e = pick(kExtents);
    while (numel * e > (1 << 18)) e = 1 + std::int64_t(rng() % 7);
    base.push_back(e);
    numel *= e;
  }
  Graph g;
  std::vector<Value> values;
  const int inputs = 1 + int(rng() % 4);
  for (int i = 0; i < inputs; ++i) {
    Shape s = base;
    if (i > 0 && chance(50)) {  // a broadcast operand: some dims 1, or a suffix
      for (auto& e : s)
        if (chance(40)) e = 1;
      if (chance(30) && s.size() > 1) s.erase(s.begin());
    }
    values.push_back(g.input(fmt::format("in{}", i), s, kFloatDTypes[rng() % 3]));
  }
  // Broadcasting a reduced [n, 1] against [1, m] would make an n*m value: too big for the CPU
  // reference of every jittered model. Such a draw is redrawn (seeds that never meet one keep
  // the graphs they had).
  auto fits = [&](std::initializer_list<Value> operands) {
    Shape out;
    for (const Value& v : operands) {
      const Shape& s = g.node(v.id()).shape;
      if (s.size() > out.size()) out.insert(out.begin(), s.size() - out.size(), 1);
      for (std::size_t d = 0; d < s.size(); ++d) {
        auto& e = out[out.size() - s.size() + d];
        e = std::max(e, s[d]);
      }
    }
    if (numel_of(out) > 4 * numel_of(base)) throw ShapeError("fuzz: broadcast too large");
  };
  // A row op of tanh(a) (bounded: exp stays finite), along the last axis, another or all.
  auto row_op = [&](const Value& a, int n) -> Value {
    const char* op = pick(kRows);
    std::vector<GraphArg> args = {apply("tanh", {a})};
    const auto& def = ops::find_op(op);
    const Shape s = g.node(a.id()).shape;  // a copy: adding inputs below moves the nodes
    if (def.operands.size() == 3 && chance(60) && !s.empty()) {
      args.push_back(g.input(fmt::format("w{}", n), {s.back()}, kFloatDTypes[rng() % 3]));
      if (chance(50))
        args.push_back(g.input(fmt::format("b{}", n), {s.back()}, kFloatDTypes[rng() % 3]));
    }
    Attrs at;
    at.set("keepdim", chance(50));
    if (def.reduces && (def.name == "var" || def.name == "std"))
      at.set("correction", 0);                           // a row of one: 0, not NaN (M2 / 0)
    if (args.size() == 1 && !s.empty() && chance(40)) {  // another axis (columns), or all
      if (def.reduces && chance(25)) {
        at.set("axis", "all");
      } else if (def.reduces && s.size() >= 2 && chance(30)) {
        // The last two axes at once: one row, whatever the operands' strides (a run followed
        // by other axes needs strides that merge, which views and broadcasts may not have).
        at.set("axis", std::vector<std::int64_t>{-2, -1});
      } else {
        at.set("axis", std::int64_t(rng() % s.size()));
      }
    }
    Value r = apply(op, args, at);
    return def.reduces ? r : apply("tanh", {r});  // keep norms' outputs bounded downstream
  };
  // cumsum of tanh(a) along any axis, forward or reversed; its sums scaled back into tanh.
  auto scan_op = [&](const Value& a) -> Value {
    const Shape s = g.node(a.id()).shape;
    if (s.empty()) throw ShapeError("fuzz: cumsum of a scalar");
    const Attrs at = Attrs()
                         .set("axis", std::int64_t(rng() % s.size()) - std::int64_t(s.size()))
                         .set("reverse", chance(50));
    return apply("tanh", {apply("cumsum", {apply("tanh", {a})}, at) * 0.25});
  };
  // A permuted view of a (rank 2 or more): a random order, or two dims swapped.
  auto view_op = [&](const Value& a) -> Value {
    const std::size_t r = g.node(a.id()).shape.size();
    if (r < 2) throw ShapeError("fuzz: permute of rank < 2");
    if (chance(50))
      return apply(
          "transpose", {a},
          Attrs().set("dim0", std::int64_t(rng() % r)).set("dim1", std::int64_t(rng() % r)));
    std::vector<std::int64_t> dims(r);
    for (std::size_t d = 0; d < r; ++d) dims[d] = std::int64_t(d);
    for (std::size_t d = r; d-- > 1;)  // Fisher-Yates on rng() itself: the same graph anywhere
      std::swap(dims[d], dims[std::size_t(rng() % (d + 1))]);
    return apply("permute", {a}, Attrs().set("dims", dims));
  };
  // a repeated along its dims of extent 1 to the base shape (expand or broadcast_to); -1 where
  // it keeps its own extent.
  auto expand_op = [&](const Value& a) -> Value {
    const Shape s = g.node(a.id()).shape;
    if (s.size() > base.size()) throw ShapeError("fuzz: expand of a larger rank");
    std::vector<std::int64_t> to(base.begin(), base.end());
    for (std::size_t d = 0; d < s.size(); ++d) {
      std::int64_t& e = to[base.size() - s.size() + d];
      if (s[d] != 1 || chance(30)) e = chance(50) ? -1 : s[d];
    }
    std::int64_t n = 1;  // as big as a broadcast may get (fits): the CPU models evaluate it
    for (std::size_t d = 0; d < to.size(); ++d)
      n *= to[d] >= 0 ? to[d] : s[d - (to.size() - s.size())];
    if (n > 4 * numel_of(base)) throw ShapeError("fuzz: expand too large");
    return apply(chance(50) ? "expand" : "broadcast_to", {a}, Attrs().set("shape", to));
  };
  // Integer values: a new i32/i64 input, an op on integers (a float first cast: 4 a truncated),
  // or an integer cast back to a float. Products only by small scalars: the fp64 model stays
  // exact.
  auto int_op = [&](const Value& a, const Value& b, int n) -> Value {
    const int kind = int(rng() % 100);
    if (kind < 15) return g.input(fmt::format("i{}", n), base, kIntDTypes[rng() % 2]);
    Value x = is_integer(g.node(a.id()).dtype)
                  ? a
                  : apply("cast", {a * 4.0}, Attrs().set("dtype", kIntDTypes[rng() % 2]));
    if (kind < 30) return apply("cast", {x}, Attrs().set("dtype", kFloatDTypes[rng() % 3]));
    if (kind < 40) return apply(chance(50) ? "neg" : "abs", {x});
    if (kind < 50) return apply("mul", {x, double(int(rng() % 5) - 2)});
    if (kind < 60) return apply("where", {apply(pick(kCompare), {x, 1.0}), b, x * 0.0 - 1.0});
    if (kind < 75 || !is_integer(g.node(b.id()).dtype))
      return apply(pick(kIntBinary), {x, double(int(rng() % 7) - 3)});
    fits({x, b});
    return apply(pick(kIntBinary), {x, b});
  };
  // Indices into axis `axis` of `x`: b's values (times 4, truncated) wrapped into the axis by
  // Python's remainder, so every index lies in it.
  // Indices are exact on the GPU and in the fp64 model alike (a new integer input): an index
  // computed from floats may truncate the other way on the GPU than in every jittered model,
  // and then a gather reads another element altogether (a false alarm).
  int whole_inputs = 0;
  auto whole = [&](const Shape& s) {
    return g.input(fmt::format("ix{}", whole_inputs++), s, kIntDTypes[rng() % 2]);
  };
  // Indices into axis `axis` of `x`, of b's shape: a new integer input wrapped into the axis by
  // Python's remainder, so every index lies in it.
  auto indices = [&](const Value& x, std::size_t axis, const Value& b) {
    const std::int64_t extent = g.node(x.id()).shape.at(axis);
    const Shape s = g.node(b.id()).shape;  // a copy: the input added below moves the nodes
    return apply("remainder", {whole(s), double(extent)});
  };
  // a read at indices made from b: gather (b of a's shape), index_select (b 1-D) or embedding
  // (a a table of rank 2); another draw where the shapes do not fit.
  auto gather_op = [&](const Value& a, const Value& b) -> Value {
    const Shape sa = g.node(a.id()).shape, sb = g.node(b.id()).shape;
    if (sa.empty() || is_integer(g.node(a.id()).dtype) || is_integer(g.node(b.id()).dtype))
      throw DtypeError("fuzz: a gather of a scalar or of integers");
    const std::size_t axis = rng() % sa.size();
    if (sa.size() == 2 && chance(40)) {
      if (numel_of(sb) * sa[1] > 4 * numel_of(base)) throw ShapeError("fuzz: embedding too large");
      return apply("embedding", {a, indices(a, 0, b)});
    }
    if (sb.size() == 1 && chance(50)) {
      Shape out = sa;
      out[axis] = sb[0];
      if (numel_of(out) > 4 * numel_of(base)) throw ShapeError("fuzz: index_select too large");
      return apply("index_select", {a, indices(a, axis, b)},
                   Attrs().set("axis", std::int64_t(axis)));
    }
    if (sa[axis] == 0) throw ShapeError("fuzz: a gather along an empty axis");
    return apply(
        "gather", {a, indices(a, axis, b)},
        Attrs().set("axis", std::int64_t(axis) - (chance(50) ? std::int64_t(sa.size()) : 0)));
  };
  // argmax or argmin of whole numbers (a new integer input, as a float: exact, ties included)
  // in a's shape; then cast back to a float, or used as they are.
  // a laid beside b (where b fits: a's dtype and other dims) or beside a bounded op of a, and
  // sometimes a again, along one of its axes.
  auto concat_op = [&](const Value& a, const Value& b) -> Value {
    const Graph::Node& na = g.node(a.id());
    const Shape s = na.shape;  // a copy: the nodes added below move them
    if (s.empty()) throw ShapeError("fuzz: a concat of a scalar");
    const std::size_t axis = rng() % s.size();
    const Graph::Node& nb = g.node(b.id());
    bool beside = nb.dtype == na.dtype && nb.shape.size() == s.size();
    for (std::size_t d = 0; beside && d < s.size(); ++d) beside = d == axis || nb.shape[d] == s[d];
    std::vector<GraphArg> xs = {a, beside ? b : apply(pick(kBounded), {a})};
    if (chance(30)) xs.push_back(a);
    const std::int64_t rank = std::int64_t(s.size());
    return apply("concat", xs, Attrs().set("axis", std::int64_t(axis) - (chance(50) ? rank : 0)));
  };
  // a padded (0 to 3 each side of one or two axes, now and then a crop of 1) or upsampled by 2
  // or 3 along its spatial axes (rank 3 and more): the remap views, read in place.
  auto remap_op = [&](const Value& a) -> Value {
    const Shape s = g.node(a.id()).shape;
    if (s.empty()) throw ShapeError("fuzz: a remap of a scalar");
    std::int64_t grown = numel_of(s);
    if (s.size() >= 3 && chance(40)) {
      const std::int64_t scale = 2 + std::int64_t(rng() % 2);
      for (std::size_t d = 2; d < s.size(); ++d) grown *= scale;
      if (grown > 4 * numel_of(base)) throw ShapeError("fuzz: upsample too large");
      return apply("upsample_nearest", {a}, Attrs().set("scale", scale));
    }
    std::vector<std::int64_t> pads(2 * std::min<std::size_t>(s.size(), 1 + rng() % 2));
    for (std::size_t k = 0; k < pads.size(); ++k) {
      const std::int64_t extent = s[s.size() - 1 - k / 2];
      pads[k] = chance(10) && extent > 2 ? -1 : std::int64_t(rng() % 4);
    }
    for (std::size_t k = 0; k < pads.size(); k += 2) {
      const std::int64_t extent = s[s.size() - 1 - k / 2];
      grown = grown / std::max<std::int64_t>(extent, 1) * (extent + pads[k] + pads[k + 1]);
    }
    if (grown > 4 * numel_of(base)) throw ShapeError("fuzz: pad too large");
    const double values[] = {0.0, -1.5, 2.0};
    return apply("pad", {a}, Attrs().set("pads", pads).set("value", values[rng() % 3]));
  };
  // a (rank 4, or fewer dims made so by leading 1s) convolved with a new weight input of 1 to 16
  // outputs: a 1x1 or 3x3 filter, stride 1 or 2, padding 0 or 1, now and then dilation 2, two
  // groups or a depthwise one, sometimes a bias (the conv family; f32 exact), sometimes a
  // per-channel scale and per-image add after it.
  int conv_inputs = 0;
  auto conv_op = [&](const Value& a) -> Value {
    const DType t = g.node(a.id()).dtype;
    Shape s = g.node(a.id()).shape;
    if (s.empty() || s.size() > 4 || !is_float(t)) throw ShapeError("fuzz: no convolution");
    Value x = a;
    // Half of the [N, H, W, C] values of 16-bit floats with C a multiple of 8 are read as
    // channels_last [N, C, H, W] (a permute read in place), with a channels_last weight: the
    // sm_90a path's im2col and tiled maps, where the result's consumers allow it.
    const bool cl = s.size() == 4 && s[3] % 8 == 0 && t != DType::f32 && chance(50);
    if (cl) {
      x = apply("permute", {a}, Attrs().set("dims", std::vector<std::int64_t>{0, 3, 1, 2}));
      s = {s[0], s[3], s[1], s[2]};
    } else if (s.size() < 4) {
      s.insert(s.begin(), 4 - s.size(), 1);
      x = apply("reshape", {a}, Attrs().set("shape", s));
    }
    const std::int64_t r = chance(50) ? 3 : 1, drawn = 1 + std::int64_t(rng() % 16);
    // A channels_last draw of 4, 8, 12 or 16 outputs is depthwise instead (groups = C = K: its
    // own kernel), decided without drawing, so that every other seed's graph stays as it was.
    const bool depthwise = cl && drawn % 4 == 0;
    const std::int64_t k = depthwise ? s[1] : drawn;
    const std::int64_t groups = depthwise                                          ? k
                                : !cl && s[1] % 2 == 0 && k % 2 == 0 && chance(25) ? 2
                                                                                   : 1;
    Attrs at;
    at.set("stride", std::vector<std::int64_t>{1 + std::int64_t(rng() % 2)})
        .set("padding", std::vector<std::int64_t>{r == 3 ? std::int64_t(rng() % 2) : 0})
        .set("dilation", std::vector<std::int64_t>{chance(20) ? 2 : 1});
    if (groups > 1) at.set("groups", groups);
    if (t == DType::f32) at.set("exact", true);
    const int id = conv_inputs++;
    const Value w =
        cl ? apply("permute", {g.input(fmt::format("cw{}", id), {k, r, r, s[1] / groups}, t)},
                   Attrs().set("dims", std::vector<std::int64_t>{0, 3, 1, 2}))
           : g.input(fmt::format("cw{}", id), {k, s[1] / groups, r, r}, t);
    std::vector<GraphArg> args = {x, w};
    if (chance(50)) args.push_back(g.input(fmt::format("cb{}", id), {k}, t));
    const Value y = apply("conv2d", args, at);
    // A third of them take an epilogue, decided by a stream of their own so that the main one
    // draws as before: half a batch norm and a SiLU (issue 52's block; the statistics named
    // apart from the norm draws' by an id past theirs), half a scale per channel and an add per
    // image and channel (a time embedding's shape: [K] and [N, K] with unit dims added, read in
    // place by the epilogue).
    std::mt19937_64 own(seed ^ 0x3a5c7e9b2d4f6081ull ^ std::uint64_t(id));
    if (own() % 3 != 0) return y;
    if (own() % 2 == 0) return apply("silu", {batch_norm_draw(g, y, own, 1000 + id)});
    const Shape ys = g.node(y.id()).shape;
    const Value scale = apply("reshape", {g.input(fmt::format("cs{}", id), {k}, t)},
                              Attrs().set("shape", std::vector<std::int64_t>{k, 1, 1}));
    const Value temb = apply("reshape", {g.input(fmt::format("ct{}", id), {ys[0], k}, t)},
                             Attrs().set("shape", std::vector<std::int64_t>{ys[0], k, 1, 1}));
    return y * scale + temb;
  };
  auto arg_op = [&](const Value& a) -> Value {
    const Shape s = g.node(a.id()).shape;
    if (s.empty()) throw ShapeError("fuzz: arg of a scalar");
    const Value x = apply("cast", {whole(s)}, Attrs().set("dtype", kFloatDTypes[rng() % 3]));
    const Value p = apply(chance(50) ? "argmax" : "argmin", {x},
                          Attrs()
                              .set("axis", std::int64_t(rng() % s.size()) - std::int64_t(s.size()))
                              .set("keepdim", chance(50)));
    return chance(50) ? apply("cast", {p}, Attrs().set("dtype", kFloatDTypes[rng() % 3])) : p;
  };
  // A third of the graphs draw the newer vocabulary too (integers, expand), decided apart from
  // the main stream: the others are the graphs their seeds made before (coverage the tests
  // count); a quarter draw gathers and argmax/argmin as well (all of the above with them).
  const bool newer = std::mt19937_64(seed ^ 0x1f7e6d5c4b3a2918ull)() % 3 == 0;
  const bool gathers = std::mt19937_64(seed ^ 0x6b8a3c1d9e2f4057ull)() % 4 == 0;
  // A quarter draw concat too (apart again: the other seeds keep their graphs).
  const bool concats = std::mt19937_64(seed ^ 0x5d2c8e4f1a3b6079ull)() % 4 == 0;
  // A quarter draw pad and upsample_nearest too (apart again).
  const bool remaps = std::mt19937_64(seed ^ 0x2e9b7d1c5a3f8046ull)() % 4 == 0;
  // A fifth draw conv2d too, a sixth attention (apart again).
  const bool convs = std::mt19937_64(seed ^ 0x7c3e9a5b1d2f4068ull)() % 5 == 0;
  const bool attns = std::mt19937_64(seed ^ 0x4a7d2b9e6c1f3085ull)() % 6 == 0;
  // A fifth draw group_norm or batch_norm too (apart again).
  const bool norms = std::mt19937_64(seed ^ 0x58e1c3a7f92d4b06ull)() % 5 == 0;
  const int concat_kinds = concats ? 10 : 0, remap_kinds = remaps ? 10 : 0;
  const int conv_kinds = convs ? 10 : 0, attn_kinds = attns ? 5 : 0, norm_kinds = norms ? 6 : 0;
  int attentions = 0, group_norms = 0;
  const int kinds = gathers ? 135 : newer ? 120 : 100;
  const int before_norms = kinds + concat_kinds + remap_kinds + conv_kinds + attn_kinds;
  const int nodes = 1 + int(rng() % 30);
  for (int n = 0; n < nodes; ++n) {
    for (int attempt = 0; attempt < 8; ++attempt) {
      // Mostly extend recent values (long chains), sometimes reach back (several consumers).
      const std::size_t back =
          chance(70) ? std::min<std::size_t>(rng() % 3, values.size() - 1) : rng() % values.size();
      const Value a = values[values.size() - 1 - back], b = values[rng() % values.size()];
      try {
        const int kind = int(rng() % std::uint64_t(before_norms + norm_kinds));
        if (kind >= before_norms) {
          // A third of them batch_norm instead, decided by a stream of their own.
          const bool batch =
              std::mt19937_64(seed ^ 0x0b47c9e2d5a3f618ull ^ std::uint64_t(group_norms))() % 3 == 0;
          values.push_back(batch ? batch_norm_draw(g, a, rng, group_norms++)
                                 : group_norm_draw(g, a, rng, group_norms++));
        } else if (kind >= kinds + concat_kinds + remap_kinds + conv_kinds) {
          values.push_back(attention_draw(g, g.node(a.id()).dtype, rng, attentions++));
        } else if (kind >= kinds + concat_kinds + remap_kinds) {
          values.push_back(conv_op(a));
        } else if (kind >= kinds + concat_kinds) {
          values.push_back(remap_op(a));
        } else if (kind >= kinds) {
          values.push_back(concat_op(a, b));
        } else if (kind < 35) {
          values.push_back(apply(pick(kBounded), {a}));
        } else if (kind < 60) {
          if (chance(25)) {
            values.push_back(apply(pick(kBinary), {a, double(int(rng() % 9) - 4) * 0.25}));
          } else {
            fits({a, b});
            values.push_back(apply(pick(kBinary), {a, b}));
          }
        } else if (kind < 67) {
          const Value c = values[rng() % values.size()];
          fits({a, b, c});
          values.push_back(apply("where", {apply(pick(kCompare), {a, 0.25}), b, c}));
        } else if (kind < 74) {
          Attrs at{{"min", -1.5}};
          if (chance(50)) at.set("max", 2.0);
          values.push_back(apply("clamp", {a}, at));
        } else if (kind < 82) {
          values.push_back(apply("cast", {a}, Attrs().set("dtype", kFloatDTypes[rng() % 3])));
        } else if (kind < 90) {
          values.push_back(row_op(a, n));
        } else if (kind < 95) {
          values.push_back(scan_op(a));
        } else if (kind < 100) {
          values.push_back(view_op(a));
        } else if (kind < 115) {
          values.push_back(int_op(a, b, n));
        } else if (kind < 120) {
          values.push_back(expand_op(a));
        } else if (kind < 130) {
          values.push_back(gather_op(a, b));
        } else {
          values.push_back(arg_op(a));
        }
        break;
      } catch (const Error&) {
        // Shapes or dtypes that do not fit: draw again.
      }
    }
  }
  // Outputs: the last value and up to two others that are not inputs.
  std::vector<int> candidates;
  for (const auto& v : values)
    if (g.node(v.id()).op != "input") candidates.push_back(v.id());
  if (candidates.empty()) candidates.push_back(apply("silu", {values[0]}).id());
  g.output(Value(&g, candidates.back()));
  for (int k = 0; k < 2 && chance(50); ++k)
    g.output(Value(&g, candidates[rng() % candidates.size()]));
  return g;
}

}  // namespace kiln::fuzz
