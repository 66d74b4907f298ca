// Input errors that name the JSON path of the offending field and what is allowed there.
#pragma once
#include <cstddef>
#include <stdexcept>
#include <string>

namespace gpuscale {

// Text that came from the user, made safe to show in a message: control characters (NUL included)
// escaped, invalid UTF-8 bytes as \xNN, any unbroken run longer than `max_run` bytes shortened, and
// the whole at most `max_total` bytes. A 3 MB key or a NUL never reaches a terminal or the page.
std::string sanitize_for_message(const std::string& text, std::size_t max_run = 160, std::size_t max_total = 4000);
// A JSON pointer made safe the same way, segment by segment: a segment longer than 100 bytes (a 3 MB
// key) is shortened, so a path of ordinary keys stays a pointer however deep; at most 2000 bytes.
std::string sanitize_path(const std::string& path);
// A user's string quoted for a message: "abc", or "abcd…" (1234567 characters) when long.
std::string quote_for_message(const std::string& text, std::size_t max_chars = 60);

// Thrown for any bad input (scenario, HPA document, answer). `path` is a JSON pointer-like path such
// as "/autoscaler/hpa/maxReplicas"; the message says what was found and what is allowed. Both are
// sanitised (sanitize_for_message) whatever the thrower put in them.
class InputError : public std::runtime_error {
 public:
  InputError(const std::string& path, const std::string& message)
      : InputError(Clean{sanitize_path(path), sanitize_for_message(message)}) {}
  const std::string& path() const { return path_; }
  const std::string& message() const { return message_; }

 private:
  struct Clean {
    std::string path, message;
  };
  explicit InputError(Clean c)
      : std::runtime_error(c.path.empty() ? c.message : c.path + ": " + c.message), path_(std::move(c.path)),
        message_(std::move(c.message)) {}
  std::string path_;
  std::string message_;
};

}  // namespace gpuscale
