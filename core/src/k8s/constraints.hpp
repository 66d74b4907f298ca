// Scheduling constraints in core/v1 terms: labels, node selector requirements, taints and tolerations,
// with the API's matching rules and strict parsers (path-named errors).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "io/json_reader.hpp"

namespace gpuscale {

using Labels = std::map<std::string, std::string>;

// A node selector requirement's operator (core/v1 NodeSelectorOperator, plus Karpenter's Gte and Lte).
enum class SelectorOp : std::uint8_t { In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte };
inline constexpr Named<SelectorOp> kSelectorOps[] = {
    {"In", SelectorOp::In},   {"NotIn", SelectorOp::NotIn}, {"Exists", SelectorOp::Exists}, {"DoesNotExist", SelectorOp::DoesNotExist},
    {"Gt", SelectorOp::Gt},   {"Lt", SelectorOp::Lt},       {"Gte", SelectorOp::Gte},       {"Lte", SelectorOp::Lte}};
inline const char* to_string(SelectorOp op) { return name_of(op, kSelectorOps); }
// Whether the operator compares a number (Gt, Lt, Gte, Lte) or a set (In, NotIn) or presence.
inline bool is_numeric(SelectorOp op) { return op == SelectorOp::Gt || op == SelectorOp::Lt || op == SelectorOp::Gte || op == SelectorOp::Lte; }
inline bool is_set(SelectorOp op) { return op == SelectorOp::In || op == SelectorOp::NotIn; }

// A node selector requirement (core/v1 NodeSelectorRequirement, also Karpenter's requirements).
struct Requirement {
  std::string key;
  SelectorOp op = SelectorOp::In;  // "operator"
  std::vector<std::string> values;
  int min_values = 0;              // Karpenter's minValues (0: unset)
};

enum class TaintEffect : std::uint8_t { NoSchedule, PreferNoSchedule, NoExecute };
inline constexpr Named<TaintEffect> kTaintEffects[] = {
    {"NoSchedule", TaintEffect::NoSchedule}, {"PreferNoSchedule", TaintEffect::PreferNoSchedule}, {"NoExecute", TaintEffect::NoExecute}};
inline const char* to_string(TaintEffect e) { return name_of(e, kTaintEffects); }

struct Taint {
  std::string key;
  std::string value;
  TaintEffect effect = TaintEffect::NoSchedule;
};

enum class TolerationOp : std::uint8_t { Equal, Exists };
inline constexpr Named<TolerationOp> kTolerationOps[] = {{"Equal", TolerationOp::Equal}, {"Exists", TolerationOp::Exists}};

struct Toleration {
  std::string key;                    // empty with operator Exists: tolerates every taint
  TolerationOp op = TolerationOp::Equal;  // "operator"
  std::string value;
  std::optional<TaintEffect> effect;  // nullopt (empty in the API): every effect
};

bool tolerates(const Toleration& t, const Taint& taint);
// True if every NoSchedule / NoExecute taint is tolerated (PreferNoSchedule never blocks).
bool tolerates_all(const std::vector<Toleration>& tolerations, const std::vector<Taint>& taints);
// The first NoSchedule / NoExecute taint no toleration tolerates, or nullptr.
const Taint* first_untolerated(const std::vector<Toleration>& tolerations, const std::vector<Taint>& taints);
bool matches(const Requirement& r, const Labels& labels);
bool matches_all(const std::vector<Requirement>& rs, const Labels& labels);
// spec.nodeSelector: every pair present with the same value.
bool matches_selector(const Labels& selector, const Labels& labels);

std::vector<Taint> parse_taints(const Json& doc, const std::string& path);
// metadata.labels: at most 64, keys qualified names, values label values (apimachinery validation).
Labels parse_labels(const Json& doc, const std::string& path);
std::vector<Toleration> parse_tolerations(const Json& doc, const std::string& path);
std::vector<Requirement> parse_requirements(const Json& doc, const std::string& path);
Json taints_to_json(const std::vector<Taint>& taints);
// "key=value:Effect" (or "key:Effect"), as kubectl prints a taint.
std::string taint_text(const Taint& t);

}  // namespace gpuscale
