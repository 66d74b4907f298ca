// KAI Scheduler's eviction actions over a session (session_state.hpp): consolidation, reclaim and
// preempt (real-systems.md §5.4; kai-scheduler/KAI-Scheduler pkg/scheduler/actions/{consolidation,
// reclaim,preempt}, plugins/proportion/reclaimable). Each tries the pending jobs in allocate's order,
// evicting victims and pipelining the job onto the room they release, all or nothing.
#pragma once

namespace gpuscale::kai {

class Session;

void reclaim_action(Session& s);
void preempt_action(Session& s);
void consolidation_action(Session& s);

}  // namespace gpuscale::kai
