// Scheduling constraints (see constraints.hpp).
#include "k8s/constraints.hpp"

#include <algorithm>
#include <cstdlib>

#include "k8s/names.hpp"

namespace gpuscale {

namespace {

bool parse_int(const std::string& s, long long& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtoll(s.c_str(), &end, 10);
  return end && *end == '\0';
}

}  // namespace

bool tolerates(const Toleration& t, const Taint& taint) {
  // core/v1 Toleration.ToleratesTaint: effects must match unless the toleration's is empty; an empty
  // key with Exists matches every key; Exists ignores the value, Equal (the default) compares it.
  if (t.effect && *t.effect != taint.effect) return false;
  if (t.key.empty()) return t.op == TolerationOp::Exists;
  if (t.key != taint.key) return false;
  return t.op == TolerationOp::Exists || t.value == taint.value;
}

const Taint* first_untolerated(const std::vector<Toleration>& tolerations, const std::vector<Taint>& taints) {
  for (const Taint& taint : taints) {
    if (taint.effect == TaintEffect::PreferNoSchedule) continue;  // a preference, never a filter
    if (std::none_of(tolerations.begin(), tolerations.end(), [&](const Toleration& t) { return tolerates(t, taint); })) return &taint;
  }
  return nullptr;
}

bool tolerates_all(const std::vector<Toleration>& tolerations, const std::vector<Taint>& taints) {
  return first_untolerated(tolerations, taints) == nullptr;
}

bool matches(const Requirement& r, const Labels& labels) {
  auto it = labels.find(r.key);
  const bool has = it != labels.end();
  const auto in_values = [&] { return has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end(); };
  switch (r.op) {
    case SelectorOp::In: return in_values();
    case SelectorOp::NotIn: return !in_values();  // an absent label satisfies NotIn (core/v1 semantics)
    case SelectorOp::Exists: return has;
    case SelectorOp::DoesNotExist: return !has;
    default: break;
  }
  long long have = 0, want = 0;
  if (!has || r.values.size() != 1 || !parse_int(it->second, have) || !parse_int(r.values[0], want)) return false;
  if (r.op == SelectorOp::Gt) return have > want;
  if (r.op == SelectorOp::Lt) return have < want;
  if (r.op == SelectorOp::Gte) return have >= want;
  return have <= want;
}

bool matches_all(const std::vector<Requirement>& rs, const Labels& labels) {
  return std::all_of(rs.begin(), rs.end(), [&](const Requirement& r) { return matches(r, labels); });
}

bool matches_selector(const Labels& selector, const Labels& labels) {
  for (const auto& [k, v] : selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

std::vector<Taint> parse_taints(const Json& doc, const std::string& path) {
  std::vector<Taint> out;
  expect_array(doc, path, 64);
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const std::string p = path + "/" + std::to_string(i);
    ObjectReader r(doc[i], p);
    Taint t;
    t.key = r.get_string("key", "");
    if (t.key.empty()) throw InputError(p + "/key", "a taint needs a key");
    t.value = r.get_string("value", "");
    if (!r.raw("effect")) throw InputError(p + "/effect", "a taint needs an effect: \"NoSchedule\", \"PreferNoSchedule\" or \"NoExecute\"");
    t.effect = get_enum(r, "effect", TaintEffect::NoSchedule, kTaintEffects);
    r.get_string("timeAdded", "");
    r.finish();
    out.push_back(t);
  }
  return out;
}

Json taints_to_json(const std::vector<Taint>& taints) {
  Json out = Json::array();
  for (const auto& t : taints) {
    Json j{{"key", t.key}, {"effect", to_string(t.effect)}};
    if (!t.value.empty()) j["value"] = t.value;
    out.push_back(j);
  }
  return out;
}

std::string taint_text(const Taint& t) { return t.key + (t.value.empty() ? "" : "=" + t.value) + ":" + to_string(t.effect); }

std::vector<Toleration> parse_tolerations(const Json& doc, const std::string& path) {
  std::vector<Toleration> out;
  expect_array(doc, path, 64);
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const std::string p = path + "/" + std::to_string(i);
    ObjectReader r(doc[i], p);
    Toleration t;
    t.key = r.get_string("key", "");
    t.op = get_enum(r, "operator", TolerationOp::Equal, kTolerationOps);
    t.value = r.get_string("value", "");
    const std::string effect = r.get_enum("effect", "", {"", "NoSchedule", "PreferNoSchedule", "NoExecute"});
    if (!effect.empty()) t.effect = value_of(effect, kTaintEffects);
    r.get_optional_number("tolerationSeconds", 0, 1e12);
    r.finish();
    if (t.op == TolerationOp::Exists && !t.value.empty()) throw InputError(p + "/value", "must be empty with operator Exists");
    if (t.key.empty() && t.op != TolerationOp::Exists) throw InputError(p + "/operator", "an empty key needs operator Exists");
    out.push_back(t);
  }
  return out;
}

std::vector<Requirement> parse_requirements(const Json& doc, const std::string& path) {
  std::vector<Requirement> out;
  expect_array(doc, path, 100);
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const std::string p = path + "/" + std::to_string(i);
    ObjectReader r(doc[i], p);
    Requirement q;
    q.key = r.get_string("key", "");
    if (q.key.empty()) throw InputError(p + "/key", "a requirement needs a key");
    if (!r.has("operator")) throw InputError(p + "/operator", "required: In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte or Lte");
    q.op = get_enum(r, "operator", SelectorOp::In, kSelectorOps);
    if (const Json* v = r.raw("values")) {
      expect_array(*v, p + "/values", 1000);
      for (std::size_t k = 0; k < v->size(); ++k) {
        if (!(*v)[k].is_string()) throw InputError(p + "/values/" + std::to_string(k), "expected a string");
        q.values.push_back((*v)[k].get<std::string>());
      }
    }
    q.min_values = static_cast<int>(r.get_int("minValues", 0, 0, 50));
    r.finish();
    const std::string op = to_string(q.op);
    if (is_set(q.op) && q.values.empty()) throw InputError(p + "/values", "operator " + op + " needs at least one value");
    if (!is_set(q.op) && !is_numeric(q.op) && !q.values.empty()) throw InputError(p + "/values", "operator " + op + " takes no values");
    if (is_numeric(q.op)) {
      long long n = 0;
      if (q.values.size() != 1 || !parse_int(q.values[0], n)) {
        throw InputError(p + "/values", "operator " + op + " needs exactly one integer value");
      }
    }
    out.push_back(std::move(q));
  }
  return out;
}

Labels parse_labels(const Json& doc, const std::string& path) {
  const Json& labels = expect_object(doc, path);
  if (labels.size() > 64) throw InputError(path, "has more than 64 labels");
  Labels out;
  for (auto it = labels.begin(); it != labels.end(); ++it) {
    const std::string p = path + "/" + pointer_token(it.key());
    if (std::string why = qualified_name_problem(it.key()); !why.empty()) {
      throw InputError(p, "key " + shown(it.key()) + " is not a valid label key: " + why);
    }
    const std::string value = expect_string(it.value(), p, 63);
    if (std::string why = label_value_problem(value); !why.empty()) throw InputError(p, "label value " + shown(value) + " " + why);
    out[it.key()] = value;
  }
  return out;
}

}  // namespace gpuscale
