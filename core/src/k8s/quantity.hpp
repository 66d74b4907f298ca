// Kubernetes quantities (resource.Quantity): "500m", "2", "1.5", "10Ki", "1Gi", "1k", "1M", "1e3", "-2".
#pragma once
#include <cstdint>
#include <string>

#include "gpuscale/json.hpp"

namespace gpuscale {

// A quantity in milli-units, rounded up like resource.Quantity.MilliValue(). Throws InputError at `path`
// for bad syntax or a value outside int64 milli-units.
std::int64_t parse_quantity_milli(const std::string& text, const std::string& path);
// The same quantity as a double (for behavior.*.tolerance, like Quantity.AsApproximateFloat64()).
double parse_quantity_double(const std::string& text, const std::string& path);
// A JSON number or quantity string, in milli-units.
std::int64_t quantity_milli(const Json& value, const std::string& path);
// A byte quantity ("200Gi", "512Mi", 1073741824) in whole MiB, rounded down.
std::int64_t quantity_mib(const Json& value, const std::string& path);
// Canonical DecimalSI text of a milli-value, as the HPA status prints it: 1500 → "1500m", 2000 → "2",
// 10000000 → "10k".
std::string format_quantity_milli(std::int64_t milli);

}  // namespace gpuscale
