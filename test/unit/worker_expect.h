#pragma once
// The runtime workers' check: a failed condition prints the line and the message and counts
// in the including file's own `g_failures` (each scenario file reports its own count), so a
// worker goes on and reports every failure of a scenario rather than the first.
#include <iostream>
#include <sstream>

#define EXPECT_THAT(cond, msg)                                                       \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::ostringstream os_;                                                        \
      os_ << msg;                                                                    \
      std::cout << "FAIL " << __LINE__ << ": " #cond ": " << os_.str() << std::endl; \
      ++g_failures;                                                                  \
    }                                                                                \
  } while (0)
