// Cron schedules as Karpenter evaluates disruption budgets: robfig/cron v3 (ParseStandard, 5 fields,
// UTC, minute resolution) and Budget.IsActive (kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go).
#pragma once
#include <cstdint>
#include <string>

#include "kernel/time.hpp"

namespace gpuscale {

struct CronSchedule {
  std::uint64_t minutes = 0;        // bit m: minute m (0-59)
  std::uint32_t hours = 0;          // bit h: hour h (0-23)
  std::uint32_t days_of_month = 0;  // bit d: day d (1-31)
  std::uint32_t months = 0;         // bit m: month m (1-12)
  std::uint32_t days_of_week = 0;   // bit d: day d (0 = Sunday … 6)
  // robfig's starBit: the field was * or ? (without a step > 1). With either day field starred a day
  // must match both day fields; with both restricted it may match either.
  bool dom_star = false, dow_star = false;
};

// A schedule as Karpenter's budgets write it (robfig/cron ParseStandard: 5 fields or a descriptor such as
// @daily), with an InputError naming `path` and what is allowed.
CronSchedule parse_cron(const std::string& text, const std::string& path);

// The first whole minute strictly after `after_unix_us` (µs since 1970-01-01T00:00:00Z) at which the
// schedule fires, in µs since the epoch; -1 if none within five years (robfig's Next gives up there).
std::int64_t cron_next(const CronSchedule& schedule, std::int64_t after_unix_us);

// Budget.IsActive: a scheduled budget is active if the schedule fired within the last `duration`,
// i.e. Next(now − duration) ≤ now.
bool cron_window_active(const CronSchedule& schedule, Micros duration, std::int64_t now_unix_us);

// Calendar helpers (proleptic Gregorian, UTC): days since the epoch ↔ year, month 1-12, day 1-31.
std::int64_t days_from_civil(std::int64_t year, int month, int day);
void civil_from_days(std::int64_t days, std::int64_t& year, int& month, int& day);

}  // namespace gpuscale
