/* A small sample project for `chock run`: build it, test it, change it. */
#include <stdio.h>
#include <string.h>

const char* greeting(const char* name) {
  static char buf[128];
  snprintf(buf, sizeof buf, "Hello, %s!", name != NULL && *name != '\0' ? name : "world");
  return buf;
}

#ifndef GREET_TEST
int main(int argc, char** argv) {
  puts(greeting(argc > 1 ? argv[1] : NULL));
  return 0;
}
#endif
