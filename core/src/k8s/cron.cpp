// Cron evaluation for Karpenter's scheduled disruption budgets (cron.hpp).
#include "k8s/cron.hpp"

namespace gpuscale {

namespace {

constexpr std::int64_t kMicrosPerMinute = 60 * kMicrosPerSecond;
constexpr std::int64_t kMinutesPerDay = 24 * 60;

std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

bool day_matches(const CronSchedule& s, int day, int weekday) {
  // robfig/cron spec.go dayMatches.
  const bool dom = (s.days_of_month >> day) & 1u;
  const bool dow = (s.days_of_week >> weekday) & 1u;
  return (s.dom_star || s.dow_star) ? dom && dow : dom || dow;
}

}  // namespace

// Howard Hinnant's days_from_civil / civil_from_days (integer arithmetic only).
std::int64_t days_from_civil(std::int64_t y, int m, int d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const std::int64_t yoe = y - era * 400;
  const std::int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

void civil_from_days(std::int64_t z, std::int64_t& year, int& month, int& day) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const std::int64_t doe = z - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  year = yoe + era * 400 + (month <= 2);
}

std::int64_t cron_next(const CronSchedule& s, std::int64_t after_unix_us) {
  // robfig/cron SpecSchedule.Next at minute resolution: skip whole months, days and hours that cannot
  // match, then minutes. The first candidate is the first minute boundary strictly after `after`.
  std::int64_t m = floor_div(after_unix_us, kMicrosPerMinute) + 1;
  const std::int64_t limit = m + 5 * 366 * kMinutesPerDay;
  while (m <= limit) {
    const std::int64_t days = floor_div(m, kMinutesPerDay);
    const std::int64_t in_day = m - days * kMinutesPerDay;
    std::int64_t year;
    int month, day;
    civil_from_days(days, year, month, day);
    if (!((s.months >> month) & 1u)) {
      m = days_from_civil(month == 12 ? year + 1 : year, month == 12 ? 1 : month + 1, 1) * kMinutesPerDay;
      continue;
    }
    const int weekday = static_cast<int>(((days % 7) + 11) % 7);  // 1970-01-01 was a Thursday (4)
    if (!day_matches(s, day, weekday)) {
      m = (days + 1) * kMinutesPerDay;
      continue;
    }
    const int hour = static_cast<int>(in_day / 60), minute = static_cast<int>(in_day % 60);
    if (!((s.hours >> hour) & 1u)) {
      m = days * kMinutesPerDay + (hour + 1) * 60;
      continue;
    }
    if (!((s.minutes >> minute) & 1u)) {
      ++m;
      continue;
    }
    return m * kMicrosPerMinute;
  }
  return -1;
}

bool cron_window_active(const CronSchedule& s, Micros duration, std::int64_t now_unix_us) {
  const std::int64_t next = cron_next(s, now_unix_us - duration);
  return next >= 0 && next <= now_unix_us;
}

}  // namespace gpuscale
