#include "ops/expr.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <kiln/error.hpp>

namespace kiln::ops {
namespace {

constexpr std::size_t kMostChars = 4096;
constexpr int kMostDepth = 64;

// A token of the expression: its text and where it starts.
struct Token {
  enum class Kind { number, name, symbol, end } kind;
  std::string_view text;
  std::size_t column;
};

class Parser {
 public:
  Parser(std::string_view op, std::string_view text, const std::vector<std::string>& operands)
      : op_(op), text_(text), operands_(operands) {
    next();
  }

  std::unique_ptr<ExprNode> whole() {
    auto e = conditional(0);
    if (token_.kind != Token::Kind::end) fail(fmt::format("unexpected '{}'", token_.text));
    return e;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw GraphError(fmt::format("op '{}': expr: {} at column {}", op_, why, token_.column + 1));
  }

  void next() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
    const std::size_t start = pos_;
    if (pos_ == text_.size()) {
      token_ = {Token::Kind::end, "end of the expression", start};
      return;
    }
    const auto at = [&](std::size_t i) { return i < text_.size() ? text_[i] : '\0'; };
    const unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (std::isdigit(c) || (c == '.' && std::isdigit(static_cast<unsigned char>(at(pos_ + 1))))) {
      while (std::isdigit(static_cast<unsigned char>(at(pos_))) || at(pos_) == '.') ++pos_;
      if (at(pos_) == 'e' || at(pos_) == 'E') {
        ++pos_;
        if (at(pos_) == '+' || at(pos_) == '-') ++pos_;
        while (std::isdigit(static_cast<unsigned char>(at(pos_)))) ++pos_;
      }
      if (at(pos_) == 'f') ++pos_;
      token_ = {Token::Kind::number, text_.substr(start, pos_ - start), start};
      if (std::isalnum(static_cast<unsigned char>(at(pos_))) || at(pos_) == '_')
        fail(fmt::format("'{}' is not a number", text_.substr(start, pos_ - start + 1)));
      return;
    }
    if (std::isalpha(c) || c == '_') {
      while (std::isalnum(static_cast<unsigned char>(at(pos_))) || at(pos_) == '_') ++pos_;
      token_ = {Token::Kind::name, text_.substr(start, pos_ - start), start};
      return;
    }
    for (std::string_view s : {"<=", ">=", "==", "!=", "&&", "||"})
      if (text_.substr(pos_, 2) == s) {
        pos_ += 2;
        token_ = {Token::Kind::symbol, s, start};
        return;
      }
    if (std::string_view("+-*/()<>!?:,").find(char(c)) != std::string_view::npos) {
      token_ = {Token::Kind::symbol, text_.substr(pos_++, 1), start};
      return;
    }
    token_ = {Token::Kind::symbol, text_.substr(start, 1), start};
    fail(c == '\n' || c == '\r' ? std::string("a line break (an expression is one line)")
         : std::isprint(c)      ? fmt::format("'{}' is not allowed", char(c))
                                : fmt::format("byte 0x{:02x} is not allowed", unsigned(c)));
  }

  bool take(std::string_view symbol) {
    if (token_.kind != Token::Kind::symbol || token_.text != symbol) return false;
    next();
    return true;
  }

  void expect(std::string_view symbol) {
    if (!take(symbol)) fail(fmt::format("expected '{}', found '{}'", symbol, token_.text));
  }

  static std::unique_ptr<ExprNode> node(ExprNode::Kind kind, std::string_view symbol = {}) {
    auto n = std::make_unique<ExprNode>();
    n->kind = kind;
    n->symbol = symbol;
    return n;
  }

  std::unique_ptr<ExprNode> conditional(int depth) {
    if (depth > kMostDepth) fail(fmt::format("nested deeper than {} levels", kMostDepth));
    auto c = binary(0, depth);
    if (!take("?")) return c;
    auto n = node(ExprNode::Kind::conditional);
    n->args.push_back(std::move(c));
    n->args.push_back(conditional(depth + 1));
    expect(":");
    n->args.push_back(conditional(depth + 1));
    return n;
  }

  // Binary operators by precedence level, loosest first.
  std::unique_ptr<ExprNode> binary(std::size_t level, int depth) {
    static const std::vector<std::vector<std::string_view>> levels = {
        {"||"}, {"&&"}, {"==", "!="}, {"<", "<=", ">", ">="}, {"+", "-"}, {"*", "/"}};
    if (level == levels.size()) return prefix(depth);
    auto lhs = binary(level + 1, depth);
    for (;;) {
      std::string_view op;
      for (std::string_view s : levels[level])
        if (token_.kind == Token::Kind::symbol && token_.text == s) op = s;
      if (op.empty()) return lhs;
      next();
      auto n = node(ExprNode::Kind::binary, op);
      n->args.push_back(std::move(lhs));
      n->args.push_back(binary(level + 1, depth));
      lhs = std::move(n);
    }
  }

  std::unique_ptr<ExprNode> prefix(int depth) {
    if (depth > kMostDepth) fail(fmt::format("nested deeper than {} levels", kMostDepth));
    for (auto [symbol, kind] :
         {std::pair{"-", ExprNode::Kind::negate}, std::pair{"!", ExprNode::Kind::logical_not}})
      if (take(symbol)) {
        auto n = node(kind);
        n->args.push_back(prefix(depth + 1));
        return n;
      }
    if (take("+")) return prefix(depth + 1);
    return primary(depth);
  }

  std::unique_ptr<ExprNode> primary(int depth) {
    const Token t = token_;
    if (take("(")) {
      auto e = conditional(depth + 1);
      expect(")");
      return e;
    }
    if (t.kind == Token::Kind::number) {
      auto n = node(ExprNode::Kind::literal);
      const std::string digits(t.text.substr(0, t.text.size() - (t.text.back() == 'f')));
      char* end = nullptr;
      n->value = std::strtod(digits.c_str(), &end);
      if (end != digits.c_str() + digits.size()) fail(fmt::format("'{}' is not a number", t.text));
      if (!(std::fabs(n->value) <= double(FLT_MAX)))
        fail(fmt::format("'{}' is not a finite f32 number", t.text));
      next();
      return n;
    }
    if (t.kind != Token::Kind::name) fail(fmt::format("unexpected '{}'", t.text));
    next();
    if (take("(")) return call(t, depth);
    for (std::size_t i = 0; i < operands_.size(); ++i)
      if (operands_[i] == t.text) {
        auto n = node(ExprNode::Kind::operand);
        n->operand = int(i);
        return n;
      }
    token_ = t;
    fail(fmt::format("'{}' is neither an operand ({}) nor a function", t.text,
                     fmt::join(operands_, ", ")));
  }

  std::unique_ptr<ExprNode> call(const Token& name, int depth) {
    const ExprFunction* f = nullptr;
    for (const ExprFunction& g : expr_functions())
      if (g.name == name.text) f = &g;
    if (!f) {
      token_ = name;
      fail(fmt::format("'{}' is not a function an expression may call", name.text));
    }
    auto n = node(ExprNode::Kind::call, f->name);
    if (!take(")")) {
      do n->args.push_back(conditional(depth + 1));
      while (take(","));
      expect(")");
    }
    if (int(n->args.size()) != f->arity) {
      token_ = name;
      fail(fmt::format("{} takes {} argument{}, not {}", f->name, f->arity,
                       f->arity == 1 ? "" : "s", n->args.size()));
    }
    return n;
  }

  std::string_view op_, text_;
  const std::vector<std::string>& operands_;
  std::size_t pos_ = 0;
  Token token_{Token::Kind::end, "", 0};
};

double evaluate_node(const ExprNode& n, const double* x) {
  const auto arg = [&](std::size_t i) { return evaluate_node(*n.args[i], x); };
  switch (n.kind) {
    case ExprNode::Kind::literal:
      return n.value;
    case ExprNode::Kind::operand:
      return x[n.operand];
    case ExprNode::Kind::negate:
      return -arg(0);
    case ExprNode::Kind::logical_not:
      return arg(0) == 0 ? 1 : 0;
    case ExprNode::Kind::conditional:
      return arg(0) != 0 ? arg(1) : arg(2);
    case ExprNode::Kind::call: {
      double a[3] = {0, 0, 0};
      for (std::size_t i = 0; i < n.args.size() && i < 3; ++i) a[i] = arg(i);
      for (const ExprFunction& f : expr_functions())
        if (f.name == n.symbol) return f.eval(a);
      break;
    }
    case ExprNode::Kind::binary: {
      const double a = arg(0), b = arg(1);
      const std::string_view s = n.symbol;
      if (s == "+") return a + b;
      if (s == "-") return a - b;
      if (s == "*") return a * b;
      if (s == "/") return a / b;
      if (s == "<") return a < b;
      if (s == "<=") return a <= b;
      if (s == ">") return a > b;
      if (s == ">=") return a >= b;
      if (s == "==") return a == b;
      if (s == "!=") return a != b;
      if (s == "&&") return a != 0 && b != 0;
      if (s == "||") return a != 0 || b != 0;
      break;
    }
  }
  throw ArgumentError("expr: a node outside the grammar");
}

}  // namespace

const std::vector<ExprFunction>& expr_functions() {
  // Each as the C++ standard library computes it in fp64.
  static const std::vector<ExprFunction> functions = {
      {"expf", 1, [](const double* a) { return std::exp(a[0]); }},
      {"exp2f", 1, [](const double* a) { return std::exp2(a[0]); }},
      {"expm1f", 1, [](const double* a) { return std::expm1(a[0]); }},
      {"logf", 1, [](const double* a) { return std::log(a[0]); }},
      {"log2f", 1, [](const double* a) { return std::log2(a[0]); }},
      {"log10f", 1, [](const double* a) { return std::log10(a[0]); }},
      {"log1pf", 1, [](const double* a) { return std::log1p(a[0]); }},
      {"sqrtf", 1, [](const double* a) { return std::sqrt(a[0]); }},
      {"rsqrtf", 1, [](const double* a) { return 1.0 / std::sqrt(a[0]); }},
      {"cbrtf", 1, [](const double* a) { return std::cbrt(a[0]); }},
      {"sinf", 1, [](const double* a) { return std::sin(a[0]); }},
      {"cosf", 1, [](const double* a) { return std::cos(a[0]); }},
      {"tanf", 1, [](const double* a) { return std::tan(a[0]); }},
      {"asinf", 1, [](const double* a) { return std::asin(a[0]); }},
      {"acosf", 1, [](const double* a) { return std::acos(a[0]); }},
      {"atanf", 1, [](const double* a) { return std::atan(a[0]); }},
      {"sinhf", 1, [](const double* a) { return std::sinh(a[0]); }},
      {"coshf", 1, [](const double* a) { return std::cosh(a[0]); }},
      {"tanhf", 1, [](const double* a) { return std::tanh(a[0]); }},
      {"asinhf", 1, [](const double* a) { return std::asinh(a[0]); }},
      {"acoshf", 1, [](const double* a) { return std::acosh(a[0]); }},
      {"atanhf", 1, [](const double* a) { return std::atanh(a[0]); }},
      {"erff", 1, [](const double* a) { return std::erf(a[0]); }},
      {"erfcf", 1, [](const double* a) { return std::erfc(a[0]); }},
      {"fabsf", 1, [](const double* a) { return std::fabs(a[0]); }},
      {"floorf", 1, [](const double* a) { return std::floor(a[0]); }},
      {"ceilf", 1, [](const double* a) { return std::ceil(a[0]); }},
      {"truncf", 1, [](const double* a) { return std::trunc(a[0]); }},
      {"fminf", 2, [](const double* a) { return std::fmin(a[0], a[1]); }},
      {"fmaxf", 2, [](const double* a) { return std::fmax(a[0], a[1]); }},
      {"powf", 2, [](const double* a) { return std::pow(a[0], a[1]); }},
      {"atan2f", 2, [](const double* a) { return std::atan2(a[0], a[1]); }},
      {"fmodf", 2, [](const double* a) { return std::fmod(a[0], a[1]); }},
      {"copysignf", 2, [](const double* a) { return std::copysign(a[0], a[1]); }},
      {"hypotf", 2, [](const double* a) { return std::hypot(a[0], a[1]); }},
      {"fmaf", 3, [](const double* a) { return std::fma(a[0], a[1], a[2]); }},
  };
  return functions;
}

Expr Expr::parse(std::string_view op, std::string_view text,
                 const std::vector<std::string>& operands) {
  if (text.size() > kMostChars)
    throw GraphError(
        fmt::format("op '{}': expr: {} characters; at most {}", op, text.size(), kMostChars));
  Expr e;
  e.root_ = Parser(op, text, operands).whole();
  e.operands_ = operands.size();
  return e;
}

double Expr::evaluate(const double* x) const { return evaluate_node(*root_, x); }

}  // namespace kiln::ops
