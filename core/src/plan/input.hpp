// The plan designer's input as read back (docs/plan.md, "Input"): parse_plan_input (plan.hpp) reads it.
#pragma once
#include "gpuscale/json.hpp"
#include "plan/plan.hpp"

namespace gpuscale::plan {

// The input as the plan read it, defaults filled in (a valid input again).
Json input_json(const PlanInput& in);

}  // namespace gpuscale::plan
