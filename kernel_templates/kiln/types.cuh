#pragma once
// Lists of element types: a body's Inputs and Outputs (kiln::Types<float, kiln::bf16>), read by
// the templates that apply bodies (elementwise.cuh, the rows', the products', attention's).

namespace kiln {

template <class... T>
struct Types {
  static constexpr int size = sizeof...(T);
};

namespace detail {
template <int I, class L>
struct TypeAt;
template <class H, class... R>
struct TypeAt<0, Types<H, R...>> {
  using type = H;
};
template <int I, class H, class... R>
struct TypeAt<I, Types<H, R...>> {
  using type = typename TypeAt<I - 1, Types<R...>>::type;
};
}  // namespace detail

}  // namespace kiln
