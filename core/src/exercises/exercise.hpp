// Exercises: variants drawn from a seed within the ranges an exercise file gives, and graders that
// compare the learner's answer with what the simulation of that variant produced.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "io/json_reader.hpp"
#include "scenario/scenario.hpp"

namespace gpuscale {

// Draws the variant's parameters: for each entry {min, max, step} of definition["variant"], a value
// min + step × k with k uniform in [0, (max − min) / step], from the stream "exercise.<id>.variant".
Json draw_variant_params(const Json& definition, std::uint64_t seed);

// Replaces {name} in a text with params[name] (numbers printed without trailing zeros).
std::string fill_template(const std::string& text, const Json& params);

// Deep-merges `patch` into `base` (objects merge key by key; anything else replaces).
void merge_json(Json& base, const Json& patch);

// The operations every exercise offers, by id ("1", "5", ...).
struct ExerciseOps {
  Json (*variant)(const Json& definition, std::uint64_t seed);
  Json (*grade)(const Json& definition, std::uint64_t seed, const Json& answer);
  Json (*explain)(const Json& definition, std::uint64_t seed);
  Json (*solve)(const Json& definition, std::uint64_t seed);
};
// nullptr for an id without a grader.
const ExerciseOps* find_exercise(const std::string& id);
// The ids that have graders, for error messages.
std::string known_exercise_ids();

// Exercise 1: duty-cycle HPA vs queue-depth HPA on the same bursty arrivals.
namespace exercise1 {
Json variant(const Json& definition, std::uint64_t seed);   // what the learner sees
Json grade(const Json& definition, std::uint64_t seed, const Json& answer);
Json explain(const Json& definition, std::uint64_t seed);
Json solve(const Json& definition, std::uint64_t seed);     // the answers (teachers, tests)
}  // namespace exercise1

// Exercise 2: design the GPU NodePool (criteria, then a simulated day against a reference pool).
namespace exercise2 {
Json variant(const Json& definition, std::uint64_t seed);
Json grade(const Json& definition, std::uint64_t seed, const Json& answer);
Json explain(const Json& definition, std::uint64_t seed);
Json solve(const Json& definition, std::uint64_t seed);
}  // namespace exercise2

// Exercise 5: a week under WhenEmptyOrUnderutilized/0s vs WhenEmpty/1h; the daily and monthly cost.
namespace exercise5 {
Json variant(const Json& definition, std::uint64_t seed);
Json grade(const Json& definition, std::uint64_t seed, const Json& answer);
Json explain(const Json& definition, std::uint64_t seed);
Json solve(const Json& definition, std::uint64_t seed);
}  // namespace exercise5

}  // namespace gpuscale
