#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "tests/support/support.h"

#include <csignal>

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);  // a child that exits early must not kill the test run
  doctest::Context ctx(argc, argv);
  int res = ctx.run();
  if (ctx.shouldExit()) return res;
  // A suite whose data is absent (../shared on a machine without it) reports "skipped", not "passed".
  if (res == 0 && gpuguard::test::skipped()) return 77;
  return res;
}
