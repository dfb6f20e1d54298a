// The password database, read from /etc/passwd itself: the chock binary is
// linked statically, and a static glibc cannot load NSS modules (LDAP, SSSD)
// safely. A user only those know needs $HOME set.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace chock {

struct PasswdEntry {
  gid_t gid = 0;
  std::string home;
};

// The first /etc/passwd line for `uid`, if any.
std::optional<PasswdEntry> passwd_entry(uid_t uid);

// The gid to give files of `uid`: its primary group, else the same number.
gid_t group_of(uid_t uid);

// $HOME when it is an absolute path, else the home /etc/passwd gives this
// process's uid; empty when neither does.
std::string home_directory();

}  // namespace chock
