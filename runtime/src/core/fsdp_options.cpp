// FSDP settings: the spellings Hugging Face Accelerate accepts, and which source wins.
#include <accelerate/core/detail/env_names.h>
#include <accelerate/core/fsdp_options.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace accelerate {
namespace {

std::string upper_trimmed(const std::string& value) {
  std::string v = value;
  v.erase(0, v.find_first_not_of(" \t"));
  v.erase(v.find_last_not_of(" \t") + 1);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::toupper(c); });
  return v;
}

[[noreturn]] void refuse(const std::string& origin, const std::string& value, const std::string& accepted,
                         const std::string& why = "") {
  throw FsdpConfigError("accelerate: " + origin + "='" + value + "' " + (why.empty() ? "is not one of " : why) +
                        accepted);
}

}  // namespace

ShardingStrategy parse_sharding_strategy(const std::string& value, const std::string& origin) {
  const std::string v = upper_trimmed(value);
  const std::string accepted = "FULL_SHARD (1), SHARD_GRAD_OP (2), NO_SHARD (3)";
  if (v == "FULL_SHARD" || v == "1") return ShardingStrategy::FULL_SHARD;
  if (v == "SHARD_GRAD_OP" || v == "2") return ShardingStrategy::SHARD_GRAD_OP;
  if (v == "NO_SHARD" || v == "3") return ShardingStrategy::NO_SHARD;
  if (v == "HYBRID_SHARD" || v == "HYBRID_SHARD_ZERO2" || v == "4" || v == "5") {
    refuse(origin, value, accepted,
           "(sharding within a machine, replication across machines) is not supported by the LibTorch "
           "runtime; use one of ");
  }
  refuse(origin, value, accepted);
}

ShardingStrategy parse_reshard_after_forward(const std::string& value, const std::string& origin) {
  const std::string v = upper_trimmed(value);
  if (v == "TRUE" || v == "YES" || v == "ON" || v == "Y") return ShardingStrategy::FULL_SHARD;
  if (v == "FALSE" || v == "NO" || v == "OFF" || v == "N" || v == "0") return ShardingStrategy::SHARD_GRAD_OP;
  if (v == "FULL_SHARD" || v == "SHARD_GRAD_OP" || v == "NO_SHARD" || v == "HYBRID_SHARD" ||
      v == "HYBRID_SHARD_ZERO2" || (v.size() == 1 && v[0] >= '1' && v[0] <= '5')) {
    return parse_sharding_strategy(value, origin);
  }
  refuse(origin, value, "true (FULL_SHARD), false (SHARD_GRAD_OP) or a sharding strategy");
}

AutoWrapPolicy parse_auto_wrap_policy(const std::string& value, const std::string& origin) {
  const std::string v = upper_trimmed(value);
  if (v == "TRANSFORMER_BASED_WRAP") return AutoWrapPolicy::TRANSFORMER_BASED_WRAP;
  if (v == "SIZE_BASED_WRAP") return AutoWrapPolicy::SIZE_BASED_WRAP;
  if (v == "NO_WRAP") return AutoWrapPolicy::NO_WRAP;
  refuse(origin, value, "TRANSFORMER_BASED_WRAP, SIZE_BASED_WRAP, NO_WRAP");
}

StateDictType parse_state_dict_type(const std::string& value, const std::string& origin) {
  const std::string v = upper_trimmed(value);
  const std::string accepted = "FULL_STATE_DICT, SHARDED_STATE_DICT";
  if (v == "FULL_STATE_DICT") return StateDictType::FULL_STATE_DICT;
  if (v == "SHARDED_STATE_DICT") return StateDictType::SHARDED_STATE_DICT;
  if (v == "LOCAL_STATE_DICT") {
    refuse(origin, value, accepted,
           "(flat shards without metadata, loadable only by the same layout) is not supported; use one of ");
  }
  refuse(origin, value, accepted);
}

BackwardPrefetch parse_backward_prefetch(const std::string& value, const std::string& origin) {
  const std::string v = upper_trimmed(value);
  if (v == "BACKWARD_PRE") return BackwardPrefetch::BACKWARD_PRE;
  if (v == "BACKWARD_POST") return BackwardPrefetch::BACKWARD_POST;
  if (v == "NO_PREFETCH") return BackwardPrefetch::NO_PREFETCH;
  refuse(origin, value, "BACKWARD_PRE, BACKWARD_POST, NO_PREFETCH");
}

int64_t parse_min_num_params(const std::string& value, const std::string& origin) {
  size_t used = 0;
  double d = -1;
  try {
    d = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size() || !(d >= 0) || d > 9.0e18 || std::floor(d) != d) {
    throw FsdpConfigError("accelerate: " + origin + "='" + value +
                          "' is not a number of parameters (a non-negative integer such as 1000000 or 1e6)");
  }
  return static_cast<int64_t>(d);
}

std::vector<std::string> parse_class_list(const std::string& value) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    if (comma == std::string::npos) comma = value.size();
    std::string item = value.substr(start, comma - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
    start = comma + 1;
  }
  return out;
}

const char* to_string(ShardingStrategy strategy) {
  switch (strategy) {
    case ShardingStrategy::FULL_SHARD:
      return "FULL_SHARD";
    case ShardingStrategy::SHARD_GRAD_OP:
      return "SHARD_GRAD_OP";
    case ShardingStrategy::NO_SHARD:
      return "NO_SHARD";
  }
  return "?";
}

const char* to_string(AutoWrapPolicy policy) {
  switch (policy) {
    case AutoWrapPolicy::TRANSFORMER_BASED_WRAP:
      return "TRANSFORMER_BASED_WRAP";
    case AutoWrapPolicy::SIZE_BASED_WRAP:
      return "SIZE_BASED_WRAP";
    case AutoWrapPolicy::NO_WRAP:
      return "NO_WRAP";
  }
  return "?";
}

const char* to_string(StateDictType type) {
  return type == StateDictType::FULL_STATE_DICT ? "FULL_STATE_DICT" : "SHARDED_STATE_DICT";
}

const char* to_string(BackwardPrefetch prefetch) {
  switch (prefetch) {
    case BackwardPrefetch::BACKWARD_PRE:
      return "BACKWARD_PRE";
    case BackwardPrefetch::BACKWARD_POST:
      return "BACKWARD_POST";
    case BackwardPrefetch::NO_PREFETCH:
      return "NO_PREFETCH";
  }
  return "?";
}

FsdpSettings resolve_fsdp(const std::optional<FullyShardedDataParallelPlugin>& code, bool use_fsdp,
                          const FullyShardedDataParallelPlugin& environment) {
  FsdpSettings s;
  s.enabled = code.has_value() || use_fsdp;
  if (!s.enabled) return s;
  const FullyShardedDataParallelPlugin none;
  const FullyShardedDataParallelPlugin& c = code ? *code : none;
  const auto& e = environment;
  s.sharding_strategy = c.sharding_strategy().value_or(e.sharding_strategy().value_or(s.sharding_strategy));
  s.auto_wrap_policy = c.auto_wrap_policy().value_or(e.auto_wrap_policy().value_or(s.auto_wrap_policy));
  s.min_num_params = c.min_num_params().value_or(e.min_num_params().value_or(s.min_num_params));
  s.transformer_layer_cls_to_wrap = c.transformer_layer_cls_to_wrap().value_or(
      e.transformer_layer_cls_to_wrap().value_or(std::vector<std::string>{}));
  s.offload_params = c.offload_params().value_or(e.offload_params().value_or(false));
  s.state_dict_type = c.state_dict_type().value_or(e.state_dict_type().value_or(s.state_dict_type));
  s.backward_prefetch = c.backward_prefetch().value_or(e.backward_prefetch().value_or(s.backward_prefetch));
  s.forward_prefetch = c.forward_prefetch().value_or(e.forward_prefetch().value_or(false));
  if (s.min_num_params < 0) {
    throw FsdpConfigError("accelerate: FSDP min_num_params must be >= 0, got " + std::to_string(s.min_num_params));
  }
  if (s.auto_wrap_policy == AutoWrapPolicy::TRANSFORMER_BASED_WRAP && s.transformer_layer_cls_to_wrap.empty()) {
    throw FsdpConfigError(
        std::string("accelerate: FSDP auto_wrap_policy TRANSFORMER_BASED_WRAP needs the class names of the layers "
                    "to wrap: --fsdp_transformer_layer_cls_to_wrap Block (") +
        env_names::kFsdpTransformerClsToWrap +
        "), or FullyShardedDataParallelPlugin().transformer_layer_cls_to_wrap({\"Block\"})");
  }
  return s;
}

}  // namespace accelerate
