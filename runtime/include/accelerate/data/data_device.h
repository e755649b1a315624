#pragma once
// Moving a batch to the process's device: what a prepared data loader does to every batch
// before handing it out. Covers tensors, torch::data::Example, std::vector, std::array,
// std::tuple, std::pair, c10::optional and std::map/unordered_map values, nested freely.
//
// Customisation point for your own batch types: define, in the namespace of your type
// (found by argument-dependent lookup),
//     void to_device(MyBatch& batch, const torch::Device& device);
// and move its tensors there (accelerate::to_device(tensor, device) helps). Types holding
// no tensors (numbers, strings) pass through unchanged; any other type without an
// overload is a compile error naming this header.

#include <torch/data/example.h>
#include <torch/types.h>

#include <array>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace accelerate {

// Declared first so that the container overloads below find each other.
inline void to_device(torch::Tensor& tensor, const torch::Device& device);
template <typename Data, typename Target>
void to_device(torch::data::Example<Data, Target>& example, const torch::Device& device);
template <typename T, typename A>
void to_device(std::vector<T, A>& values, const torch::Device& device);
template <typename T, size_t N>
void to_device(std::array<T, N>& values, const torch::Device& device);
template <typename... Ts>
void to_device(std::tuple<Ts...>& values, const torch::Device& device);
template <typename A, typename B>
void to_device(std::pair<A, B>& values, const torch::Device& device);
template <typename T>
void to_device(c10::optional<T>& value, const torch::Device& device);
template <typename K, typename V, typename C, typename A>
void to_device(std::map<K, V, C, A>& values, const torch::Device& device);
template <typename K, typename V, typename H, typename E, typename A>
void to_device(std::unordered_map<K, V, H, E, A>& values, const torch::Device& device);

namespace detail {

template <typename T, typename = void>
struct has_to_device : std::false_type {};
template <typename T>
struct has_to_device<T, std::void_t<decltype(to_device(std::declval<T&>(), std::declval<const torch::Device&>()))>>
    : std::true_type {};

template <typename T>
struct holds_no_tensor : std::bool_constant<std::is_arithmetic<T>::value || std::is_enum<T>::value ||
                                            std::is_same<T, std::string>::value ||
                                            std::is_same<T, torch::data::example::NoTarget>::value> {};

template <typename T>
void move_to_device(T& value, const torch::Device& device) {
  if constexpr (has_to_device<T>::value) {
    to_device(value, device);
  } else {
    static_assert(holds_no_tensor<T>::value,
                  "accelerate: this batch type has no to_device overload. Define "
                  "`void to_device(YourType&, const torch::Device&)` in its namespace "
                  "(see <accelerate/data_device.h>).");
  }
}

}  // namespace detail

inline void to_device(torch::Tensor& tensor, const torch::Device& device) {
  if (tensor.defined() && tensor.device() != device) tensor = tensor.to(device);
}
template <typename Data, typename Target>
void to_device(torch::data::Example<Data, Target>& example, const torch::Device& device) {
  detail::move_to_device(example.data, device);
  if constexpr (!std::is_same<Target, torch::data::example::NoTarget>::value)
    detail::move_to_device(example.target, device);
}
template <typename T, typename A>
void to_device(std::vector<T, A>& values, const torch::Device& device) {
  for (auto& v : values) detail::move_to_device(v, device);
}
template <typename T, size_t N>
void to_device(std::array<T, N>& values, const torch::Device& device) {
  for (auto& v : values) detail::move_to_device(v, device);
}
template <typename... Ts>
void to_device(std::tuple<Ts...>& values, const torch::Device& device) {
  std::apply([&](auto&... v) { (detail::move_to_device(v, device), ...); }, values);
}
template <typename A, typename B>
void to_device(std::pair<A, B>& values, const torch::Device& device) {
  detail::move_to_device(values.first, device);
  detail::move_to_device(values.second, device);
}
template <typename T>
void to_device(c10::optional<T>& value, const torch::Device& device) {
  if (value) detail::move_to_device(*value, device);
}
template <typename K, typename V, typename C, typename A>
void to_device(std::map<K, V, C, A>& values, const torch::Device& device) {
  for (auto& kv : values) detail::move_to_device(kv.second, device);
}
template <typename K, typename V, typename H, typename E, typename A>
void to_device(std::unordered_map<K, V, H, E, A>& values, const torch::Device& device) {
  for (auto& kv : values) detail::move_to_device(kv.second, device);
}

}  // namespace accelerate
