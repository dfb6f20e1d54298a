// chock doctor [--project DIR] [--org-bundle PATH] [--policy-rule A=D]... [--json]
// Each layer tried for real on this machine, one row a layer. Exit 0 when a
// first run can work here (degraded rows included), 2 when a blocking row is
// off or the project's configuration cannot be read.
#include <cstdio>
#include <memory>

#include "cli/command.hpp"
#include "cli/layer_flags.hpp"
#include "doctor/doctor.hpp"

namespace chock::cli {

namespace {

struct DoctorOptions {
  std::string project;
  config::LayerOptions layers;  // --org-bundle and --policy-rule, as chock run takes them
  bool json = false;
};

int run_doctor(const DoctorOptions& o) {
  doctor::Options options;
  options.project_dir = o.project;
  options.org_bundle = o.layers.org_bundle;
  options.policy_rules = o.layers.policy_rules;
  auto rows = doctor::check(options);
  if (!rows) {
    // chock run would refuse the same way, so a first run cannot work here.
    std::fprintf(stderr, "chock: %s\n", rows.error().message().c_str());
    return doctor::kExitBlocked;
  }
  const std::string text = o.json ? doctor::format_json(*rows) : doctor::format_table(*rows);
  std::fputs(text.c_str(), stdout);
  return doctor::exit_status(*rows);
}

}  // namespace

void add_doctor_command(Command app, Action& action) {
  auto o = std::make_shared<DoctorOptions>();
  Command cmd =
      app.add_subcommand("doctor", "Try each layer of the sandbox on this machine and say which are on");
  cmd.add_option("--project", o->project,
                 "The project whose chock.zon to read (default: the current directory)")
      .type_name("DIR");
  add_layer_flags(cmd, o->layers);
  cmd.add_flag("--json", o->json, "Print the rows as a JSON array");
  cmd.callback([o, &action] { action = [o] { return run_doctor(*o); }; });
}

}  // namespace chock::cli
