#include "report.h"

int main() {
  return report();
}
