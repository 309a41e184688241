#pragma once
// fn(0) .. fn(n - 1) on up to `threads` threads, the caller's among them, each taking the next
// index in turn (compiles of uneven length balance themselves). fn must not throw: it keeps
// what failed where the caller looks after the join.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace kiln {

template <class F>
void parallel_each(std::size_t n, std::size_t threads, const F& fn) {
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t i; (i = next++) < n;) fn(i);
  };
  std::vector<std::thread> helpers;
  for (std::size_t t = 1; t < std::min(threads, n); ++t) helpers.emplace_back(work);
  work();
  for (std::thread& t : helpers) t.join();
}

}  // namespace kiln
