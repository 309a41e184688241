#pragma once
// Packs of V elements moved with one aligned load or store (16 bytes at most).

namespace kiln {

template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  static_assert((sizeof(T) * V & (sizeof(T) * V - 1)) == 0, "a pack must be a power of two bytes");
  static_assert(sizeof(T) * V <= 16, "a pack moves at most 16 bytes");
  T v[V];
};

template <class T, int V>
__device__ __forceinline__ Pack<T, V> load_pack(const T* p) {
  return *reinterpret_cast<const Pack<T, V>*>(p);
}

template <class T, int V>
__device__ __forceinline__ void store_pack(T* p, const Pack<T, V>& x) {
  *reinterpret_cast<Pack<T, V>*>(p) = x;
}

}  // namespace kiln
