// The scheduler registry (see scheduler.hpp).
#include "scheduling/scheduler.hpp"

#include "scheduling/kube_scheduler.hpp"

namespace gpuscale {

bool find_scheduler(const std::string& scheduler_name) { return scheduler_name == kDefaultScheduler; }

std::unique_ptr<Scheduler> make_scheduler(const std::string& scheduler_name, std::uint64_t seed) {
  if (scheduler_name == kDefaultScheduler) return std::make_unique<KubeScheduler>(seed);
  return nullptr;
}

std::string scheduler_names() { return std::string("\"") + kDefaultScheduler + "\""; }

}  // namespace gpuscale
