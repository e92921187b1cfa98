// An environment variable set (or unset) for a scope, and given back as it
// was: a test that sets one leaves nothing behind, also when it fails.
#ifndef TRAINSCOPE_TESTS_SCOPED_ENV_H_
#define TRAINSCOPE_TESTS_SCOPED_ENV_H_

#include <cstdlib>
#include <optional>
#include <string>

namespace trainscope::testing {

class ScopedEnv {
 public:
  // nullopt: unset for the scope.
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value->c_str(), 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace trainscope::testing

#endif  // TRAINSCOPE_TESTS_SCOPED_ENV_H_
