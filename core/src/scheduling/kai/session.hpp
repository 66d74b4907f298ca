// One KAI Scheduler cycle over a snapshot: the session opens (the proportion plugin divides the fair
// shares), then the configured actions run in order, each committing or discarding one statement per
// job (real-systems.md §5; kai-scheduler/KAI-Scheduler pkg/scheduler/framework/session.go,
// statement.go, pkg/scheduler/actions/*).
#pragma once
#include "scheduling/snapshot.hpp"
#include "scheduling/snapshot_schedule.hpp"

namespace gpuscale::kai {

ScheduleOutcome run_cycle(const Snapshot& snapshot);

}  // namespace gpuscale::kai
