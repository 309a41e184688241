// Host-side f16/bf16 conversion with round-to-nearest-even, NaN and infinities kept.
#include <cmath>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <limits>
#include <kiln/dtype.hpp>

namespace kiln {
namespace {

std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::uint16_t to_bf16(float f) {
  const std::uint32_t u = bits_of(f);
  if (std::isnan(f)) return std::uint16_t((u >> 16) | 0x40);  // keep it a quiet NaN
  return std::uint16_t((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

std::uint16_t to_f16(float f) {
  const std::uint32_t u = bits_of(f);
  const std::uint16_t sign = std::uint16_t((u >> 16) & 0x8000);
  const std::uint32_t a = u & 0x7fffffff;
  if (a > 0x7f800000) return sign | 0x7e00;               // NaN
  if (a >= 0x477ff000) return sign | 0x7c00;              // rounds to infinity (>= 65520)
  if (a < 0x38800000) {                                   // subnormal or zero in f16
    const float scaled = std::fabs(f) * 16777216.0f;      // in units of 2^-24
    return sign | std::uint16_t(std::nearbyint(scaled));  // ties to even (default mode)
  }
  const std::uint32_t mant_round = a + 0x0fff + ((a >> 13) & 1);
  return sign | std::uint16_t((mant_round - 0x38000000) >> 13);
}

float from_f16(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0) return (sign ? -1.0f : 1.0f) * float(mant) / 16777216.0f;
  if (exp == 31) return float_of(sign | 0x7f800000 | (mant << 13));
  return float_of(sign | ((exp + 112) << 23) | (mant << 13));
}

}  // namespace

// `value` truncated toward zero into I's range (NaN: 0).
template <class I>
I saturate(double value) {
  if (std::isnan(value)) return 0;
  // The bounds as doubles: I's max rounds up to 2^63 for i64, so compare with >= on it.
  if (value >= double(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  if (value <= double(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  return I(value);
}

void store_element(DType t, double value, void* dst) {
  const float f = float(value);
  switch (t) {
    case DType::f32:
      std::memcpy(dst, &f, 4);
      return;
    case DType::f16: {
      const std::uint16_t h = to_f16(f);
      std::memcpy(dst, &h, 2);
      return;
    }
    case DType::bf16: {
      const std::uint16_t b = to_bf16(f);
      std::memcpy(dst, &b, 2);
      return;
    }
    case DType::boolean:
      *static_cast<unsigned char*>(dst) = value != 0 ? 1 : 0;
      return;
    case DType::i32: {
      const std::int32_t i = saturate<std::int32_t>(value);
      std::memcpy(dst, &i, 4);
      return;
    }
    case DType::i64: {
      const std::int64_t i = saturate<std::int64_t>(value);
      std::memcpy(dst, &i, 8);
      return;
    }
  }
}

double load_element(DType t, const void* src) {
  switch (t) {
    case DType::f32: {
      float f;
      std::memcpy(&f, src, 4);
      return f;
    }
    case DType::f16: {
      std::uint16_t h;
      std::memcpy(&h, src, 2);
      return from_f16(h);
    }
    case DType::bf16: {
      std::uint16_t b;
      std::memcpy(&b, src, 2);
      return float_of(std::uint32_t(b) << 16);
    }
    case DType::boolean:
      return *static_cast<const unsigned char*>(src) != 0 ? 1.0 : 0.0;
    case DType::i32: {
      std::int32_t i;
      std::memcpy(&i, src, 4);
      return i;
    }
    case DType::i64: {
      std::int64_t i;
      std::memcpy(&i, src, 8);
      return double(i);
    }
  }
  return 0;
}

}  // namespace kiln
