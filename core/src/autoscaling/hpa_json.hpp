// JSON front end of the HPA algorithm: reads an autoscaling/v2 HorizontalPodAutoscalerSpec plus the
// observed state and controller memory, and renders the decision (docs/hpa-cli.md defines the format).
#pragma once
#include <cstdint>
#include <string>

#include "autoscaling/hpa.hpp"
#include "io/json_reader.hpp"
#include "kernel/time.hpp"

namespace gpuscale::hpa {

// Size limits of one document.
constexpr std::size_t kMaxHpaPods = 10000;
constexpr std::size_t kMaxHpaMetrics = 100;
constexpr std::size_t kMaxHpaMemoryEntries = 10000;
constexpr std::size_t kMaxHpaPolicies = 100;
constexpr std::size_t kMaxHpaMetricSeries = 10000;

// Strict readers: unknown fields rejected, every error names the JSON path and what is allowed.
HorizontalPodAutoscalerSpec parse_hpa_spec(const Json& spec, const std::string& path);
HorizontalPodAutoscalerBehavior parse_hpa_behavior(const Json& behavior, const std::string& path);
// The spec as autoscaling/v2 JSON: the fields it has, quantities as "5" or "700m".
Json hpa_spec_to_json(const HorizontalPodAutoscalerSpec& spec);
Observed parse_observed(const Json& observed, const std::string& path);
// Ages in the document are seconds before `now`.
Memory parse_memory(const Json& memory, const std::string& path, Micros now);
ControllerFlags parse_controller_flags(const Json& controller, const std::string& path);

Json decision_to_json(const Decision& decision);
Json memory_to_json(const Memory& memory, Micros now);

// The `gpuscale hpa` operation: document text in, decision JSON text out (pretty-printed, sorted keys).
// Throws InputError on bad input.
std::string evaluate_hpa_document(const std::string& json_text);

}  // namespace gpuscale::hpa
