// The scheduler registry (see scheduler.hpp).
#include "scheduling/scheduler.hpp"

#include "scheduling/kai_scheduler.hpp"
#include "scheduling/kube_scheduler.hpp"

namespace gpuscale {

bool find_scheduler(const std::string& scheduler_name) { return scheduler_name == kDefaultScheduler || scheduler_name == kKaiScheduler; }

std::unique_ptr<Scheduler> make_scheduler(const std::string& scheduler_name, std::uint64_t seed, const KubeSchedulerConfig& kube,
                                          const KaiSchedulerConfig& kai) {
  if (scheduler_name == kDefaultScheduler) return std::make_unique<KubeScheduler>(seed, kube);
  if (scheduler_name == kKaiScheduler) return std::make_unique<KaiScheduler>(kai);
  return nullptr;
}

std::string scheduler_names() { return std::string("\"") + kDefaultScheduler + "\", \"" + kKaiScheduler + "\""; }

}  // namespace gpuscale
