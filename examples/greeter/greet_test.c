#define GREET_TEST
#include "greet.c"

int main(void) {
  int failed = 0;
  failed |= strcmp(greeting("Ada"), "Hello, Ada!") != 0;
  failed |= strcmp(greeting(""), "Hello, world!") != 0;
  puts(failed ? "greet_test: FAILED" : "greet_test: ok");
  return failed;
}
