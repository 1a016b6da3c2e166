// A step run over and over on a thread of its own, for tests that keep a
// load or a fault going while they look at something else.
#pragma once

#include <atomic>
#include <thread>

namespace pathlock::test {

// Runs `step` over and over on a thread until destroyed (also when a
// REQUIRE throws: no thread is left running). The destructor waits for the
// step under way to return.
class Background {
 public:
  template <class Step>
  explicit Background(Step step)
      : thread_([this, step] {
          while (!stop_) step();
        }) {}
  ~Background() {
    stop_ = true;
    thread_.join();
  }
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace pathlock::test
