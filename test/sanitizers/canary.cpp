// A deliberate bug for each sanitizer (test/sanitizers/CMakeLists.txt): the sanitized
// builds must report it, which shows that their clean runs of the real tests mean
// something (a build whose flags did not reach the targets would pass everything).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

int heap_overflow() {
  // Volatile size: the compiler cannot see the overflow and drop the access.
  volatile size_t n = 8;
  char* p = static_cast<char*>(std::malloc(n));
  std::memset(p, 0, n);
  const int v = p[n];  // one past the end
  std::free(p);
  return v;
}

int signed_overflow(int big) { return big + 1; }

int data_race() {
  int shared = 0;
  std::thread t([&shared] { shared = 1; });
  shared = 2;  // written by both threads without synchronisation
  t.join();
  return shared;
}

}  // namespace

int main(int argc, char** argv) {
  const char* what = argc > 1 ? argv[1] : "";
  if (std::strcmp(what, "heap-overflow") == 0) return heap_overflow();
  if (std::strcmp(what, "signed-overflow") == 0) return signed_overflow(argc > 2 ? std::atoi(argv[2]) : 0);
  if (std::strcmp(what, "data-race") == 0) return data_race();
  std::fprintf(stderr, "usage: sanitizer_canary heap-overflow|signed-overflow INT_MAX|data-race\n");
  return 2;
}
