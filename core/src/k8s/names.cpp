// Kubernetes name and label syntax (see names.hpp).
#include "k8s/names.hpp"

#include <algorithm>
#include <cctype>

namespace gpuscale {

std::string shown(const std::string& s) {
  return "\"" + (s.size() > 64 ? s.substr(0, 64) + "..." : s) + "\"";
}

// JSON Pointer escaping for map keys in paths: label keys hold '/' ("nvidia.com/gpu" → "nvidia.com~1gpu").
std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key.substr(0, 128)) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

namespace {

bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
}  // namespace

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

bool is_dns1123_label(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  if (!is_lower_alnum(s.front()) || !is_lower_alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return is_lower_alnum(c) || c == '-'; });
}

bool is_dns1123_subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  std::size_t start = 0;
  while (true) {
    std::size_t dot = s.find('.', start);
    if (!is_dns1123_label(s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start)))
      return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

namespace {

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], at most 63 characters (non-empty).
bool is_name_part(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  if (!is_alnum(s.front()) || !is_alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return is_alnum(c) || c == '-' || c == '_' || c == '.'; });
}

}  // namespace

// k8s.io/apimachinery validation.IsQualifiedName: [prefix/]name, prefix a DNS-1123 subdomain.
// Returns "" when valid, else why not.
std::string qualified_name_problem(const std::string& key) {
  if (key.empty()) return "must not be empty";
  auto slash = key.find('/');
  std::string name = key;
  if (slash != std::string::npos) {
    if (key.find('/', slash + 1) != std::string::npos) return "has more than one '/'";
    std::string prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    if (prefix.empty()) return "has an empty prefix before '/'";
    if (!is_dns1123_subdomain(prefix))
      return "prefix " + shown(prefix) + " is not a DNS-1123 subdomain (lowercase letters, digits, '-' and '.')";
  }
  if (name.size() > 63) return "name part is longer than 63 characters";
  if (!is_name_part(name))
    return "name part " + shown(name) +
           " must start and end with a letter or digit and contain only letters, digits, '-', '_' and '.'";
  return "";
}

// validation.IsValidLabelValue: empty, or a name part (at most 63 characters).
std::string label_value_problem(const std::string& v) {
  if (v.empty()) return "";
  if (v.size() > 63) return "is longer than 63 characters";
  if (!is_name_part(v)) return "must start and end with a letter or digit and contain only letters, digits, '-', '_' and '.'";
  return "";
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace gpuscale
