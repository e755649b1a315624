// split_range: shares cover the range once, in order, sizes differ by at most one.
#include <accelerate/core/split.h>

#include <gtest/gtest.h>

#include <stdexcept>

TEST(SplitRange, ExactValues) {
  EXPECT_EQ(accelerate::split_range(0, 10, 0, 2), std::make_pair(int64_t{0}, int64_t{5}));
  EXPECT_EQ(accelerate::split_range(0, 10, 1, 2), std::make_pair(int64_t{5}, int64_t{10}));
  // 10 over 3: 4, 3, 3
  EXPECT_EQ(accelerate::split_range(0, 10, 0, 3), std::make_pair(int64_t{0}, int64_t{4}));
  EXPECT_EQ(accelerate::split_range(0, 10, 1, 3), std::make_pair(int64_t{4}, int64_t{7}));
  EXPECT_EQ(accelerate::split_range(0, 10, 2, 3), std::make_pair(int64_t{7}, int64_t{10}));
  // fewer items than processes: the last ones get empty ranges
  EXPECT_EQ(accelerate::split_range(5, 6, 0, 3), std::make_pair(int64_t{5}, int64_t{6}));
  EXPECT_EQ(accelerate::split_range(5, 6, 2, 3), std::make_pair(int64_t{6}, int64_t{6}));
}

TEST(SplitRange, CoversEveryRangeOnce) {
  for (int64_t count = 1; count <= 5; ++count) {
    for (int64_t n = 0; n <= 23; ++n) {
      int64_t next = 3;  // begin
      for (int64_t i = 0; i < count; ++i) {
        auto [first, last] = accelerate::split_range(3, 3 + n, i, count);
        EXPECT_EQ(first, next) << "n=" << n << " count=" << count << " i=" << i;
        EXPECT_LE(last - first, n / count + 1);
        EXPECT_GE(last - first, n / count);
        next = last;
      }
      EXPECT_EQ(next, 3 + n);
    }
  }
}

TEST(SplitRange, BadProcessIsAnError) {
  EXPECT_THROW(accelerate::split_range(0, 10, 2, 2), accelerate::Error);
  EXPECT_THROW(accelerate::split_range(0, 10, 0, 0), accelerate::Error);
}
