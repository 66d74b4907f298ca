// Kubernetes object names and label syntax (k8s.io/apimachinery validation), and the small text helpers
// every validator's messages use.
#pragma once
#include <string>
#include <string_view>

namespace gpuscale {

// A value as an error message quotes it: in double quotes, cut after 64 characters.
std::string shown(const std::string& s);
// JSON Pointer escaping for map keys in paths: label keys hold '/' ("nvidia.com/gpu" → "nvidia.com~1gpu").
std::string pointer_token(const std::string& key);

bool is_digit(char c);
bool starts_with(const std::string& s, const std::string& prefix);
bool ends_with(const std::string& s, const std::string& suffix);
std::string lower(std::string s);

// DNS-1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63 characters.
bool is_dns1123_label(std::string_view s);
// DNS-1123 subdomain: dot-separated DNS-1123 labels, at most 253 characters.
bool is_dns1123_subdomain(std::string_view s);
// validation.IsQualifiedName: [prefix/]name, prefix a DNS-1123 subdomain. "" when valid, else why not.
std::string qualified_name_problem(const std::string& key);
// validation.IsValidLabelValue: empty, or a name part (at most 63 characters). "" when valid.
std::string label_value_problem(const std::string& value);

}  // namespace gpuscale
