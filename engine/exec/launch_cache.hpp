#pragma once
// Calls seen before. A plan call or an eager op whose signature (the engine; every input's and
// given output's shape, dtype, strides and alignment class; which outputs are given; an op's
// attributes) matches an earlier call's reuses what that call prepared: its specialized, loaded
// kernels and their parameter blocks, into which only the data pointers (and an eager op's
// scalars) are written. Nothing else picks a kernel: data pointers beyond their alignment class
// (16 bytes and up all count as 16, the widest pack a template loads) never do.

#include <cstdint>
#include <kiln/tensor.hpp>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace kiln::detail {

/// The largest power of two up to 16 that divides `data` (16 for a view with no memory, which
/// specialization takes as aligned).
std::int64_t alignment_class(std::uint64_t data);

/// What picks a call's kernels, as words, hashed as they are added.
class Signature {
 public:
  Signature() { words_.reserve(32); }
  void add(std::int64_t word);
  /// Shape, dtype, strides (one word when contiguous) and alignment class of `v`.
  void add_view(const TensorView& v);
  bool operator==(const Signature& o) const { return hash_ == o.hash_ && words_ == o.words_; }
  std::size_t hash() const { return hash_; }

 private:
  std::vector<std::int64_t> words_;
  std::size_t hash_ = 0xcbf29ce484222325ull;
};

struct SignatureHash {
  std::size_t operator()(const Signature& s) const { return s.hash(); }
};

/// A bounded, thread-safe map from signatures to what their calls prepared; the least recently
/// used entry goes first when it is full. Entries are shared: one dropped while a call uses it
/// lives until that call ends.
template <class V>
class SignatureCache {
 public:
  explicit SignatureCache(std::size_t capacity) : capacity_(capacity) {}

  std::shared_ptr<V> find(const Signature& s) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = index_.find(s);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->second;
  }

  /// Adds `v` under `s` (or returns the entry another thread added first).
  std::shared_ptr<V> insert(const Signature& s, std::shared_ptr<V> v) {
    std::shared_ptr<V> dropped;  // destroyed after the lock is released
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = index_.find(s); it != index_.end()) return it->second->second;
    order_.emplace_front(s, std::move(v));
    index_.emplace(s, order_.begin());
    if (order_.size() > capacity_) {
      dropped = std::move(order_.back().second);
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    return order_.front().second;
  }

  std::size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return order_.size();
  }

 private:
  using Entry = std::pair<Signature, std::shared_ptr<V>>;
  std::size_t capacity_;
  mutable std::mutex mutex_;
  std::list<Entry> order_;  ///< most recently used first
  std::unordered_map<Signature, typename std::list<Entry>::iterator, SignatureHash> index_;
};

}  // namespace kiln::detail
