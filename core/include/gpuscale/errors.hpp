// Input errors that name the JSON path of the offending field and what is allowed there.
#pragma once
#include <stdexcept>
#include <string>

namespace gpuscale {

// Thrown for any bad input (scenario, HPA document, answer). `path` is a JSON pointer-like path such
// as "/autoscaler/hpa/maxReplicas"; the message says what was found and what is allowed.
class InputError : public std::runtime_error {
 public:
  InputError(std::string path, const std::string& message)
      : std::runtime_error(path.empty() ? message : path + ": " + message), path_(std::move(path)),
        message_(message) {}
  const std::string& path() const { return path_; }
  const std::string& message() const { return message_; }

 private:
  std::string path_;
  std::string message_;
};

}  // namespace gpuscale
