#include "tests/fuzz/shrink.hpp"

#include <nlohmann/json.hpp>

namespace kiln::fuzz {
namespace {

using nlohmann::json;

// Drop node i; its consumers (and the outputs) read its first tensor argument instead.
bool bypass(json& j, std::size_t i) {
  const json& node = j["nodes"][i];
  if (!node.contains("args") || !node["args"].is_array()) return false;
  std::string name = node.value("name", ""), first;
  for (const auto& a : node["args"])
    if (a.is_string()) {
      first = a.get<std::string>();
      break;
    }
  if (first.empty() || name.empty()) return false;
  j["nodes"].erase(i);
  for (auto& n : j["nodes"])
    if (n.contains("args") && n["args"].is_array())
      for (auto& a : n["args"])
        if (a.is_string() && a.get<std::string>() == name) a = first;
  for (auto& o : j["outputs"])
    if (o.is_string() && o.get<std::string>() == name) o = first;
  return true;
}

// Halve every static extent equal to `extent` (in all inputs, so broadcasts stay valid).
void halve(json& j, std::int64_t extent) {
  for (auto& in : j["inputs"])
    for (auto& d : in["shape"])
      if (d.is_number_integer() && d.get<std::int64_t>() == extent) d = extent / 2;
}

}  // namespace

std::string shrink(const std::string& text, const std::function<bool(const Graph&)>& fails) {
  auto still_fails = [&](const json& j) {
    try {
      return fails(Graph::parse(j.dump()));
    } catch (const std::exception&) {
      return false;  // not a valid graph any more, or it broke the check in another way
    }
  };
  json j = json::parse(text);
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t i = 0; j["outputs"].size() > 1 && i < j["outputs"].size(); ++i) {
      json t = j;
      t["outputs"].erase(i);
      if (still_fails(t)) j = t, progress = true;
    }
    for (std::size_t i = j["nodes"].size(); i-- > 0;) {
      json t = j;
      if (bypass(t, i) && still_fails(t)) j = t, progress = true;
    }
    for (std::size_t i = j["inputs"].size(); i-- > 0;) {  // drop inputs nothing reads
      json t = j;
      t["inputs"].erase(i);
      if (still_fails(t)) j = t, progress = true;
    }
    std::vector<std::int64_t> extents;
    for (const auto& in : j["inputs"])
      for (const auto& d : in["shape"])
        if (d.is_number_integer() && d.get<std::int64_t>() >= 2)
          extents.push_back(d.get<std::int64_t>());
    for (std::int64_t e : extents) {
      json t = j;
      halve(t, e);
      if (still_fails(t)) j = t, progress = true;
    }
  }
  try {
    return Graph::parse(j.dump()).to_json();  // the house layout, one node per line
  } catch (const std::exception&) {
    return j.dump(2);
  }
}

}  // namespace kiln::fuzz
