// Cron evaluation for Karpenter's scheduled disruption budgets (cron.hpp).
#include "k8s/cron.hpp"

#include <algorithm>
#include <cctype>
#include <utility>
#include <vector>

#include "gpuscale/errors.hpp"
#include "k8s/names.hpp"

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

namespace {

struct CronField {
  const char* name;
  int lo, hi;
  std::vector<const char*> names;  // names[i] ↔ lo + i
};

// "" if the field parses, else why not. Grammar: list of (* | ? | N | N-M)[/step], names allowed.
// Sets `bits` (bit v for each value v it matches) and `star` (robfig's starBit: * or ? without a step
// above 1); "N/step" means N-max/step, as in robfig/cron getRange.
std::string cron_field_problem(const std::string& field, const CronField& spec, std::uint64_t& bits, bool& star) {
  auto value = [&](const std::string& t, int& out) -> bool {
    if (!t.empty() && std::all_of(t.begin(), t.end(), is_digit)) {
      if (t.size() > 4) return false;
      out = std::stoi(t);
      return true;
    }
    const std::string l = lower(t);
    for (std::size_t i = 0; i < spec.names.size(); ++i) {
      if (l == spec.names[i]) {
        out = spec.lo + int(i);
        return true;
      }
    }
    return false;
  };
  std::size_t start = 0;
  while (true) {
    std::size_t comma = field.find(',', start);
    std::string part = field.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::string range = part, step_text;
    int step = 1;
    if (auto slash = part.find('/'); slash != std::string::npos) {
      range = part.substr(0, slash);
      step_text = part.substr(slash + 1);
      if (step_text.empty() || !std::all_of(step_text.begin(), step_text.end(), is_digit) || step_text.size() > 4 ||
          (step = std::stoi(step_text)) <= 0)
        return "step " + shown(step_text) + " must be a positive whole number";
    }
    int a = spec.lo, b = spec.hi;
    if (range != "*" && range != "?") {
      auto dash = range.find('-');
      std::string at = range.substr(0, dash);
      if (!value(at, a)) return shown(at) + " is not a number or name";
      b = a;
      if (dash != std::string::npos) {
        std::string bt = range.substr(dash + 1);
        if (!value(bt, b)) return shown(bt) + " is not a number or name";
      } else if (!step_text.empty()) {
        b = spec.hi;  // "N/step" is "N-max/step"
      }
      if (a < spec.lo || b > spec.hi) return shown(range) + " is outside " + std::to_string(spec.lo) + "-" + std::to_string(spec.hi);
      if (a > b) return shown(range) + " starts after it ends";
    } else if (step <= 1) {
      star = true;
    }
    for (int v = a; v <= b; v += step) bits |= std::uint64_t(1) << v;
    if (comma == std::string::npos) return "";
    start = comma + 1;
  }
}

}  // namespace

// robfig/cron v3 ParseStandard, which Karpenter uses for budget schedules.
CronSchedule parse_cron(const std::string& text, const std::string& path) {
  const char* help = "expected a 5-field cron schedule in UTC (minute hour day-of-month month day-of-week, e.g. "
                     "\"0 9 * * mon-fri\") or one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly";
  // robfig/cron parser.go parseDescriptor, written as the 5-field schedules they stand for.
  static const std::pair<const char*, const char*> kDescriptors[] = {
      {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"}, {"@weekly", "0 0 * * 0"},
      {"@daily", "0 0 * * *"},  {"@midnight", "0 0 * * *"}, {"@hourly", "0 * * * *"}};
  std::string spec = text;
  if (!text.empty() && text[0] == '@') {
    spec.clear();
    for (const auto& [name, fields] : kDescriptors)
      if (text == name) spec = fields;
    if (spec.empty()) throw InputError(path, shown(text) + " is not a supported descriptor; " + help);
  }
  if (starts_with(text, "TZ=") || starts_with(text, "CRON_TZ="))
    throw InputError(path, shown(text) + ": time zones are not supported (Karpenter evaluates budgets in UTC); " + help);
  std::vector<std::string> fields;
  std::size_t i = 0;
  while (i < spec.size()) {
    while (i < spec.size() && std::isspace(static_cast<unsigned char>(spec[i]))) ++i;
    std::size_t start = i;
    while (i < spec.size() && !std::isspace(static_cast<unsigned char>(spec[i]))) ++i;
    if (i > start) fields.push_back(spec.substr(start, i - start));
  }
  if (fields.size() != 5) {
    throw InputError(path, shown(text) + " has " + std::to_string(fields.size()) + " fields; " + help);
  }
  static const CronField kSpecs[5] = {
      {"minute", 0, 59, {}},
      {"hour", 0, 23, {}},
      {"day-of-month", 1, 31, {}},
      {"month", 1, 12, {"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}},
      {"day-of-week", 0, 6, {"sun", "mon", "tue", "wed", "thu", "fri", "sat"}},
  };
  std::uint64_t bits[5] = {};
  bool star[5] = {};
  for (int f = 0; f < 5; ++f) {
    if (std::string why = cron_field_problem(fields[f], kSpecs[f], bits[f], star[f]); !why.empty())
      throw InputError(path, shown(text) + ": " + kSpecs[f].name + " field " + shown(fields[f]) + ": " + why + "; " + help);
  }
  CronSchedule c;
  c.minutes = bits[0];
  c.hours = static_cast<std::uint32_t>(bits[1]);
  c.days_of_month = static_cast<std::uint32_t>(bits[2]);
  c.months = static_cast<std::uint32_t>(bits[3]);
  c.days_of_week = static_cast<std::uint32_t>(bits[4]);
  c.dom_star = star[2];
  c.dow_star = star[4];
  return c;
}

}  // namespace gpuscale
