// Exercises: variants drawn from a seed within the ranges an exercise file gives, and graders that
// compare the learner's answer with what the simulation of that variant produced.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "io/json_reader.hpp"
#include "provisioning/karpenter/nodepool.hpp"
#include "scenario/scenario.hpp"
#include "sim/simulation.hpp"

namespace gpuscale {

// Progress while a grader simulates: the share of its simulations done (0 … 1) and what runs now
// ("trap week: day 3 of 7"). Called from inside the simulation loop.
using ProgressFn = std::function<void(double fraction, const std::string& label)>;

// What a grade or explanation may be given besides the answer (api::grade's `context`).
struct GradeContext {
  // The exercise's own figures from an earlier result's "simulated" object of this exercise, seed and
  // lab version (api.cpp checks that key), or null: the grader then simulates. Each exercise reads
  // it strictly (an InputError at /context/simulated/data/...) and puts what it simulated in its
  // result's "simulated".
  const Json* simulated = nullptr;
  ProgressFn progress;  // may be empty
};

// A ProgressReport for simulation `index` (0-based) of `count` that one grade runs: the fraction is
// (index + t / duration) / count and the label label(t). Reports every every_s simulated seconds.
ProgressReport progress_share(const ProgressFn& progress, int index, int count, double duration_s, double every_s,
                              std::function<std::string(double t_s)> label);

// Where a run of `duration_s` is at t_s, in its natural unit: "day 3 of 7", "hour 6 of 24", "minute 12 of 60".
std::string clock_text(double t_s, double duration_s);

// When a variant's explanation and answers may be shown (definition["policy"]):
//   {"reveal": "after_attempt" | "after_correct" | "after_attempts", "attempts": N}  (N only for after_attempts)
// after_attempts reveals after N attempts, or at the first correct one.
struct RevealPolicy {
  enum class When { AfterAttempt, AfterCorrect, AfterAttempts } when = When::AfterAttempt;
  int attempts = 1;
};
RevealPolicy parse_policy(const Json& definition);  // InputError at /policy/...
// Whether the policy reveals after attempts with these scores (0 … 1; 1 is correct), in order.
bool policy_reveals(const RevealPolicy& policy, const std::vector<double>& scores);
// A plain sentence for a locked explanation: "after your first attempt", "once you have answered correctly", ...
std::string unlock_sentence(const RevealPolicy& policy, const std::vector<double>& scores);

// The attempt history the page keeps (format "gpuscale-attempts/1", docs/wasm-api.md).
struct Attempt {
  std::string at;  // ISO-8601 time, as recorded
  Json answer;     // the answer object as sent to grade
  double score = 0;
  bool revealed_before = false;  // made after this variant's answers were shown
};
struct AttemptHistory {
  std::string exercise;
  std::uint64_t seed = 0;
  std::string lab_version;
  std::vector<Attempt> attempts;
};
// Reads a history object strictly; errors name `path` + the field. At most 1,000 attempts.
AttemptHistory parse_history(const Json& history, const std::string& path);

// Draws the variant's parameters: for each entry {min, max, step} of definition["variant"], a value
// min + step × k with k uniform in [0, (max − min) / step], from the stream "exercise.<id>.variant".
Json draw_variant_params(const Json& definition, std::uint64_t seed);

// Replaces {name} in a text with params[name] (numbers printed without trailing zeros).
std::string fill_template(const std::string& text, const Json& params);

// Deep-merges `patch` into `base` (objects merge key by key; anything else replaces).
void merge_json(Json& base, const Json& patch);

// The operations every exercise offers, by id ("1", "5", ...).
// A field an exercise's grader reads from its definition, and the JSON type it must have
// ('s' string, 'n' number, 'o' object, 'a' array).
struct DefinitionField {
  const char* pointer;
  char type;
};

// grade and explain return, besides their verdicts and text, "simulated": the figures they read from
// simulations, which a later call may be given back (GradeContext::simulated) instead of simulating.
struct ExerciseOps {
  Json (*variant)(const Json& definition, std::uint64_t seed);
  Json (*grade)(const Json& definition, std::uint64_t seed, const Json& answer, const GradeContext& context);
  Json (*explain)(const Json& definition, std::uint64_t seed, const GradeContext& context);
  Json (*solve)(const Json& definition, std::uint64_t seed);
  std::vector<DefinitionField> required;  // what the four read; check_definition() checks it first
};
// Throws InputError with the field's path when a required field is missing or of the wrong type, so a
// teacher's edited definition is refused the way a scenario is, before a grader reads it.
void check_definition(const Json& definition, const ExerciseOps& ops);
// nullptr for an id without a grader.
const ExerciseOps* find_exercise(const std::string& id);
// The ids that have graders, for error messages.
std::string known_exercise_ids();

// Exercise 1: duty-cycle HPA vs queue-depth HPA on the same bursty arrivals.
namespace exercise1 {
// The learner's answer: a and c are request counts, b a mechanism id (one of question b's choices).
struct Answer {
  std::optional<std::int64_t> a;  // requests the first run dropped that the second served
  std::optional<std::string> b;   // the dominant mechanism
  std::optional<std::int64_t> c;  // requests the second run dropped that the first served
};
// Reads {"a"?, "b"?, "c"?}; throws InputError (with the path) for anything else. grade() reads it so.
Answer parse_answer(const Json& definition, const Json& answer);
// The mechanism a sync of the worse run shows (question b's choice ids), from its logged arithmetic;
// metric is the HPA's metric name, tolerance its tolerance.
std::string classify(const DecisionRecord& sync, const std::string& metric, double tolerance);
Json variant(const Json& definition, std::uint64_t seed);   // what the learner sees
Json grade(const Json& definition, std::uint64_t seed, const Json& answer, const GradeContext& context = {});
Json explain(const Json& definition, std::uint64_t seed, const GradeContext& context = {});
Json solve(const Json& definition, std::uint64_t seed);     // the answers (teachers, tests)
}  // namespace exercise1

// Exercise 2: design the GPU NodePool (criteria, then a simulated day against a reference pool).
namespace exercise2 {
// The learner's answer {"nodepool": {...}}. An invalid NodePool is not an input error but a graded
// outcome (criterion "valid"), so it is kept with the reason.
struct Answer {
  Json nodepool;                 // as sent: the simulation reads it as a scenario's NodePool
  std::optional<NodePool> pool;  // parsed; empty when the NodePool is invalid
  std::string error;             // why it is invalid (the InputError's what()); empty when valid
};
// Throws InputError when the answer is not {"nodepool": ...}. grade() reads it so.
Answer parse_answer(const Json& answer);
Json variant(const Json& definition, std::uint64_t seed);
Json grade(const Json& definition, std::uint64_t seed, const Json& answer, const GradeContext& context = {});
Json explain(const Json& definition, std::uint64_t seed, const GradeContext& context = {});
Json solve(const Json& definition, std::uint64_t seed);
}  // namespace exercise2

// Exercise 3: a Deployment stuck in Pending; diagnose the layer, the root cause and its evidence, fix it.
namespace exercise3 {
// The learner's answer. Layer, cause, evidence and fix are ids (or aliases) of the variant's choices.
struct Answer {
  std::optional<std::string> layer;                  // karpenter | kube-scheduler | kai-scheduler
  std::optional<std::string> cause;                  // a cause id of the definition
  std::optional<std::vector<std::string>> evidence;  // signal ids of the run
  std::optional<std::string> fix;                    // a fix id ("fix": "id" or {"id", "value"})
  std::optional<double> fix_value;                   // the fix's number (GPUs), when it takes one
};
// Reads {"layer"?, "cause"?, "evidence"?, "fix"?}; throws InputError (with the path) for anything else.
Answer parse_answer(const Json& answer);
Json variant(const Json& definition, std::uint64_t seed);
Json grade(const Json& definition, std::uint64_t seed, const Json& answer, const GradeContext& context = {});
Json explain(const Json& definition, std::uint64_t seed, const GradeContext& context = {});
Json solve(const Json& definition, std::uint64_t seed);
}  // namespace exercise3

// Exercise 4: a signal for the prefill pool and one for the decode pool of a disaggregated server,
// graded per role against every pair run on the learner's variant (goodput per dollar).
namespace exercise4 {
// The learner's answer: a signal id of the definition per role, and a justification (free text, shown
// back for self-assessment beside the model explanation; not graded).
struct Answer {
  std::optional<std::string> prefill, decode;
  std::optional<std::string> justification;
};
// Reads {"prefill"?, "decode"?, "justification"?}; throws InputError (with the path) for anything else.
Answer parse_answer(const Json& definition, const Json& answer);
Json variant(const Json& definition, std::uint64_t seed);
Json grade(const Json& definition, std::uint64_t seed, const Json& answer, const GradeContext& context = {});
Json explain(const Json& definition, std::uint64_t seed, const GradeContext& context = {});
Json solve(const Json& definition, std::uint64_t seed);
}  // namespace exercise4

// Exercise 5: a week under WhenEmptyOrUnderutilized/0s vs WhenEmpty/1h; the daily and monthly cost.
namespace exercise5 {
// The learner's answer: what the trap costs, in dollars.
struct Answer {
  std::optional<double> daily_usd;    // USD per day
  std::optional<double> monthly_usd;  // USD per 30-day month
};
// Reads {"daily_usd"?, "monthly_usd"?}; throws InputError for anything else. grade() reads it so.
Answer parse_answer(const Json& answer);
Json variant(const Json& definition, std::uint64_t seed);
Json grade(const Json& definition, std::uint64_t seed, const Json& answer, const GradeContext& context = {});
Json explain(const Json& definition, std::uint64_t seed, const GradeContext& context = {});
Json solve(const Json& definition, std::uint64_t seed);
}  // namespace exercise5

}  // namespace gpuscale
