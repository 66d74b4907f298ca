// gpuscale: the native front end. Reads files and stdin, calls the core's JSON operations, prints JSON.
// Exit 0 on success, 2 on bad input (message on stderr), 1 on an internal error.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "gpuscale/api.hpp"
#include "yaml_json.hpp"

namespace fs = std::filesystem;
using namespace gpuscale;

namespace {

const char* kUsage =
    "usage:\n"
    "  gpuscale run SCENARIO.json            run a scenario, print the result JSON ('-' reads stdin)\n"
    "  gpuscale hpa < DOCUMENT.json          evaluate one HPA sync (docs/hpa-cli.md)\n"
    "  gpuscale nodepool check FILE          validate and lint a karpenter.sh/v1 NodePool, YAML or JSON\n"
    "                                        ('-' reads stdin; docs/nodepool.md)\n"
    "  gpuscale schedule SNAPSHOT            one scheduling cycle (KAI Scheduler or kube-scheduler) over a\n"
    "                                        cluster snapshot, YAML or JSON ('-' reads stdin; docs/schedule.md)\n"
    "  gpuscale plan INPUT                   a three-layer plan (NodePool, autoscaler, KAI queues, warm pool)\n"
    "                                        simulated on the described workload, YAML or JSON (docs/plan.md)\n"
    "  gpuscale exercise ID --seed N         print the learner's variant of exercise ID\n"
    "  gpuscale grade ID ANSWER.json --seed N [--context FILE]\n"
    "                                        grade an answer ('-' reads stdin); FILE: {history, simulated}\n"
    "  gpuscale grade ID --seed N --history FILE\n"
    "                                        re-grade every attempt of an attempt history (exported by the page)\n"
    "  gpuscale explain ID --seed N [--context FILE]\n"
    "                                        the full explanation of a variant (locked until the policy allows)\n"
    "  gpuscale solve ID --seed N            the right answers of a variant (for teachers and tests)\n"
    "  gpuscale schema                       the scenario knobs the page builds controls from\n"
    "  gpuscale bench [--repeat K] [FILE...] time the benchmark scenarios (or the given ones: events,\n"
    "                                        work units of the budget, ms; docs/limits.md)\n"
    "options: --exercises DIR (default: ./exercises, or the source tree's), --pretty\n";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string read_file(const std::string& path) {
  if (path == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    return ss.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("", "cannot read file '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path exercises_dir(const std::string& flag, const char* argv0) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("GPUSCALE_EXERCISES")) return env;
  if (fs::is_directory("exercises")) return "exercises";
  std::error_code ec;
  fs::path exe = fs::canonical(fs::path(argv0), ec);
  if (!ec) {
    for (fs::path p = exe.parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path()) {
      if (fs::is_directory(p / "exercises")) return p / "exercises";
    }
  }
  throw InputError("", "cannot find the exercises folder; pass --exercises DIR");
}

// Exercise files are named ex<ID>-<slug>.json.
std::string exercise_definition(const fs::path& dir, const std::string& id) {
  std::vector<fs::path> matches;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("ex" + id + "-", 0) == 0 && entry.path().extension() == ".json") matches.push_back(entry.path());
  }
  if (matches.size() != 1) {
    throw InputError("", "no exercise with id '" + id + "' in " + dir.string() + " (expected a file ex" + id + "-*.json)");
  }
  return read_file(matches[0].string());
}

double time_ms(const std::function<void()>& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The given scenarios, one line each: what the work budget counts and the time (or the error).
int bench_files(const std::vector<std::string>& files, int repeat) {
  std::printf("%-28s %9s %10s %10s %9s | %11s %11s %11s %11s %9s %9s %11s\n", "scenario", "ms", "events", "work", "requests", "sequences",
              "router", "replicas", "pod views", "decisions", "detailed", "fits");
  for (const std::string& f : files) {
    try {
      const auto prepared = api::prepare(read_file(f));
      double best = 1e300;
      api::RunCounts counts;
      for (int k = 0; k < repeat; ++k) best = std::min(best, time_ms([&] { counts = api::simulate(*prepared); }));
      std::printf("%-28s %9.1f %10lld %10lld %9lld |", fs::path(f).filename().string().c_str(), best,
                  static_cast<long long>(counts.events), static_cast<long long>(counts.work), static_cast<long long>(counts.requests));
      for (int k = 0; k < 7; ++k) std::printf(k < 4 || k == 6 ? " %11lld" : " %9lld", static_cast<long long>(counts.terms[k]));
      std::printf("\n");
    } catch (const InputError& e) {
      std::printf("%-28s refused: %s\n", fs::path(f).filename().string().c_str(), e.what());
    }
  }
  return 0;
}

int bench(const fs::path& ex_dir, int repeat) {
  // (a) the exercise-1 pair for seed 1: both strategies, one simulated hour each.
  std::string def = exercise_definition(ex_dir, "1");
  Json variant = api::exercise(def, 1);
  using Prepared = std::shared_ptr<const api::PreparedScenario>;
  std::vector<Prepared> pair;
  for (auto& [name, sc] : variant["scenarios"].items()) pair.push_back(api::prepare(dump_json(sc)));
  // (b) a 24-hour scenario with about 500,000 requests.
  fs::path big = ex_dir.parent_path() / "scenarios" / "bench-24h.json";
  Prepared day = api::prepare(read_file(big.string()));

  auto measure = [&](const char* label, const std::vector<Prepared>& scenarios) {
    double best = 1e300;
    std::int64_t events = 0, requests = 0;
    for (int k = 0; k < repeat; ++k) {
      events = 0;
      requests = 0;
      double ms = time_ms([&] {
        for (const auto& sc : scenarios) {
          const api::RunCounts r = api::simulate(*sc);
          events += r.events;
          requests += r.requests;
        }
      });
      best = std::min(best, ms);
    }
    std::printf("%-28s %9.1f ms  %12lld events  %10.2f M events/s  %8lld requests\n", label, best,
                static_cast<long long>(events), static_cast<double>(events) / best / 1000.0,
                static_cast<long long>(requests));
  };
  fs::path week_file = ex_dir.parent_path() / "scenarios" / "bench-7d-consolidation.json";
  Prepared week = api::prepare(read_file(week_file.string()));
  std::printf("native, best of %d\n", repeat);
  measure("exercise-1 pair (1 h x 2)", pair);
  measure("24 h, ~500k requests", {day});
  measure("7 days, Karpenter consolidation", {week});
  return 0;
}

// Reads FILE (YAML or JSON) into JSON with `to_json`, then runs `operation` on it; a value error is
// told with the YAML line it came from.
Json with_yaml_context(const std::string& file, std::string (*to_json)(const std::string&, const std::string&),
                       Json (*operation)(const std::string&)) {
  const std::string text = read_file(file);
  const std::string json = to_json(file, text);
  try {
    return operation(json);
  } catch (const InputError& e) {
    explain_yaml_value_error(text, json, e);
    throw;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args;
  std::string seed_text, ex_flag, history_file, context_file;
  bool seed_given = false;  // --seed '' is a seed (an empty one, refused with its path), not a missing flag
  bool pretty = false;
  int repeat = 3;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--seed" && i + 1 < argc) {
      seed_text = argv[++i];
      seed_given = true;
    } else if (a == "--history" && i + 1 < argc) {
      history_file = argv[++i];
    } else if (a == "--context" && i + 1 < argc) {
      context_file = argv[++i];
    } else if (a == "--exercises" && i + 1 < argc) {
      ex_flag = argv[++i];
    } else if (a == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--pretty") {
      pretty = true;
    } else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      args.push_back(a);
    }
  }
  try {
    if (args.empty()) throw UsageError("no command given");
    const std::string& cmd = args[0];
    auto need = [&](std::size_t n) {
      if (args.size() != n) throw UsageError("'" + cmd + "' takes " + std::to_string(n - 1) + " argument(s)");
    };
    auto seed = [&] {
      if (!seed_given) throw UsageError("'" + cmd + "' needs --seed N");
      return api::parse_seed(seed_text);
    };
    Json out;
    if (cmd == "run") {
      need(2);
      out = api::run(read_file(args[1]));
    } else if (cmd == "hpa") {
      need(1);
      out = api::hpa(read_file("-"));
    } else if (cmd == "nodepool") {
      if (args.size() < 2 || args[1] != "check") throw UsageError("'nodepool' takes the subcommand 'check FILE'");
      need(3);
      out = with_yaml_context(args[2], nodepool_json_text, api::nodepool_check);
    } else if (cmd == "schedule") {
      need(2);
      out = with_yaml_context(args[1], snapshot_json_text, api::schedule);
    } else if (cmd == "plan") {
      need(2);
      out = with_yaml_context(args[1], snapshot_json_text, [](const std::string& json) { return api::plan(json); });
    } else if (cmd == "exercise" || cmd == "explain" || cmd == "solve") {
      need(2);
      std::string def = exercise_definition(exercises_dir(ex_flag, argv[0]), args[1]);
      const std::string context = context_file.empty() ? "" : read_file(context_file);
      out = cmd == "exercise" ? api::exercise(def, seed()) : cmd == "explain" ? api::explain(def, seed(), context) : api::solve(def, seed());
    } else if (cmd == "grade" && !history_file.empty()) {
      need(2);
      std::string def = exercise_definition(exercises_dir(ex_flag, argv[0]), args[1]);
      out = api::grade_history(def, seed(), read_file(history_file));
    } else if (cmd == "grade") {
      need(3);
      std::string def = exercise_definition(exercises_dir(ex_flag, argv[0]), args[1]);
      const std::string context = context_file.empty() ? "" : read_file(context_file);
      out = api::grade(def, seed(), read_file(args[2]), context);
    } else if (cmd == "schema") {
      need(1);
      out = api::schema();
    } else if (cmd == "bench") {
      if (args.size() > 1) return bench_files(std::vector<std::string>(args.begin() + 1, args.end()), repeat);
      return bench(exercises_dir(ex_flag, argv[0]), repeat);
    } else {
      throw UsageError("unknown command '" + cmd + "'");
    }
    std::cout << (pretty ? out.dump(2) : dump_json(out)) << "\n";
    return 0;
  } catch (const UsageError& e) {
    std::cerr << "gpuscale: " << e.what() << "\n" << kUsage;
    return 2;
  } catch (const InputError& e) {
    std::cerr << "gpuscale: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "gpuscale: internal error: " << e.what() << "\n";
    return 1;
  }
}
