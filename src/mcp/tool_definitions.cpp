// What tools/list says of each of Chock's tools: enough for an agent to act
// on without reading Chock's documentation.
#include "mcp/server.hpp"

namespace chock::mcp {

namespace {

Json object_schema(Json properties, Json required) {
  return Json{{"type", "object"},
              {"properties", std::move(properties)},
              {"required", std::move(required)},
              {"additionalProperties", false}};
}

Json annotations(bool read_only, bool destructive, bool open_world) {
  return Json{{"readOnlyHint", read_only}, {"destructiveHint", destructive}, {"openWorldHint", open_world}};
}

Json tool(const char* name, const char* title, const char* description, Json schema, Json notes,
          Json output = nullptr) {
  notes["title"] = title;
  Json t{{"name", name},
         {"title", title},
         {"description", description},
         {"inputSchema", std::move(schema)},
         {"annotations", std::move(notes)}};
  // What structuredContent holds when the call is not an error; every key named.
  if (!output.is_null()) t["outputSchema"] = std::move(output);
  return t;
}

const Json kString = {{"type", "string"}};
// An integer argument Chock reads into a 64-bit one: bounded, so that a
// client's 1e300 is refused by the schema rather than converted.
Json counted(int minimum) {
  return Json{{"type", "integer"}, {"minimum", minimum}, {"maximum", 2147483647}};
}
const Json kInteger = {{"type", "integer"}, {"minimum", 0}};
const Json kBoolean = {{"type", "boolean"}};
const Json kStrings = {{"type", "array"}, {"items", kString}};

// A file tool's answer: its own fields and the session it ran in.
Json file_answer(Json properties, Json required) {
  properties["session"] = kString;
  required.push_back("session");
  return object_schema(std::move(properties), std::move(required));
}

// run_command's answer: a foreground call's ending, or a background task's start.
Json run_command_output() {
  Json ended = object_schema({{"stdout", kString},
                              {"stderr", kString},
                              {"stdout_bytes_cut", kInteger},
                              {"stderr_bytes_cut", kInteger},
                              {"chock", kStrings},
                              {"session", kString},
                              {"exit_code", {{"type", {"integer", "null"}}}},
                              {"signal", {{"type", {"string", "null"}}}},
                              {"timed_out", kBoolean}},
                             {"stdout", "stderr", "stdout_bytes_cut", "stderr_bytes_cut", "chock", "session",
                              "exit_code", "signal", "timed_out"});
  Json started = object_schema({{"task", kString}, {"session", kString}, {"published", kStrings}},
                               {"task", "session", "published"});
  return Json{{"type", "object"}, {"anyOf", {ended, started}}};
}

}  // namespace

std::string tool_action(const std::string& name) {
  return "tool." + name;
}

Json tool_definitions() {
  Json tools = Json::array();
  tools.push_back(tool(
      "run_command", "Run a command",
      "Runs one command in the session's sandboxed copy of the project (the project's own path, its files "
      "writable; commits made there reach the real project only by `apply`). No network unless the project "
      "allows it; no access to the user's home or credentials. Returns stdout, stderr, the exit code or "
      "signal, and Chock's own lines (why something was refused or stopped). argv is the command and its "
      "arguments, not a shell line: use [\"sh\",\"-c\",\"...\"] for pipes. background starts it as a task "
      "and "
      "returns its id at once; task_output reads it.",
      object_schema(
          {{"argv", {{"type", "array"}, {"items", kString}, {"minItems", 1}}},
           {"cwd", {{"type", "string"}, {"description", "a directory of the project (default: its top)"}}},
           {"timeout_s", {{"type", "number"}, {"exclusiveMinimum", 0}}},
           {"background", {{"type", "boolean"}}},
           {"publish",
            {{"type", "array"},
             {"items", {{"type", "string"}, {"maxLength", 11}, {"pattern", "^([0-9]{1,5}:)?[0-9]{1,5}$"}}},
             {"description",
              "with background: \"[HOST_PORT:]CALL_PORT\" each, the task's server reached from the person's "
              "browser at http://127.0.0.1:HOST_PORT/ while it runs (net.publish.CALL_PORT decides)"}}}},
          {"argv"}),
      annotations(false, true, true), run_command_output()));
  tools.push_back(
      tool("task_output", "Read a background task",
           "The state and output so far of a task started by run_command with background.",
           object_schema({{"id", kString}}, {"id"}), annotations(true, false, false),
           object_schema({{"task", kString}, {"session", kString}, {"state", kString}, {"output", kString}},
                         {"task", "session", "state", "output"})));
  tools.push_back(tool(
      "read_file", "Read a file",
      "Reads a text file of the project: its lines from offset (1-based, default 1), at most limit lines "
      "(default 2000). Paths are the project's (relative to its top, or absolute below it).",
      object_schema({{"path", kString}, {"offset", counted(1)}, {"limit", counted(1)}}, {"path"}),
      annotations(true, false, false),
      file_answer({{"content", kString},
                   {"first_line", kInteger},
                   {"lines", kInteger},
                   {"total_lines", kInteger},
                   {"truncated", kBoolean}},
                  {"content", "first_line", "lines", "total_lines", "truncated"})));
  tools.push_back(tool("write_file", "Write a file",
                       "Writes content to a file of the project, whole (made with its directories when new).",
                       object_schema({{"path", kString}, {"content", kString}}, {"path", "content"}),
                       annotations(false, true, false), file_answer({{"bytes", kInteger}}, {"bytes"})));
  tools.push_back(
      tool("edit_file", "Edit a file",
           "Replaces old_string by new_string in a file of the project; old_string must occur exactly "
           "once (the error says how many times it does).",
           object_schema({{"path", kString}, {"old_string", kString}, {"new_string", kString}},
                         {"path", "old_string", "new_string"}),
           annotations(false, true, false),
           file_answer({{"bytes", kInteger}, {"replaced", {{"type", "integer"}, {"const", 1}}}},
                       {"bytes", "replaced"})));
  tools.push_back(tool(
      "list_directory", "List a directory", "The entries of a directory of the project.",
      object_schema({{"path", kString}}, {"path"}), annotations(true, false, false),
      file_answer(
          {{"entries",
            {{"type", "array"},
             {"items", object_schema(
                           {{"name", kString},
                            {"type", {{"type", "string"}, {"enum", {"file", "directory", "link", "other"}}}}},
                           {"name", "type"})}}},
           {"truncated", kBoolean},
           {"total", kInteger}},
          {"entries", "truncated", "total"})));
  tools.push_back(
      tool("glob", "Find files by name",
           "Paths of the project matching a pattern relative to its top: * and ? within a name, ** "
           "for any number of directories (\"**/*.c\"). .git is not searched.",
           object_schema({{"pattern", kString}}, {"pattern"}), annotations(true, false, false),
           file_answer({{"paths", kStrings}, {"truncated", kBoolean}}, {"paths", "truncated"})));
  tools.push_back(tool(
      "grep", "Search file contents",
      "Lines of the project's text files matching an extended regular expression, as "
      "path:line:text; path narrows it to a file or a directory.",
      object_schema({{"pattern", kString}, {"path", kString}}, {"pattern"}), annotations(true, false, false),
      file_answer({{"matches", kStrings}, {"truncated", kBoolean}}, {"matches", "truncated"})));
  tools.push_back(tool(
      "read_memory", "Read the knowledgebase",
      "The project's knowledgebase (notes kept between sessions): without name, every note's newest version; "
      "with name, that note.",
      object_schema({{"name", kString}}, Json::array()), annotations(true, false, false)));
  tools.push_back(tool(
      "write_memory", "Write to the knowledgebase",
      "Adds a version of a note to the project's knowledgebase. name: a-z, 0-9, '_' and '-', at most 64 "
      "bytes; kind: insight, code_fact, convention, gotcha, dead_end or environment; body at most 16 KiB. "
      "The project's memory.write policy decides.",
      object_schema(
          {{"name", kString},
           {"kind",
            {{"type", "string"},
             {"enum", {"insight", "code_fact", "convention", "gotcha", "dead_end", "environment"}}}},
           {"description", kString},
           {"body", kString}},
          {"name", "kind", "description", "body"}),
      annotations(false, false, false)));
  tools.push_back(tool("fetch_url", "Fetch a URL",
                       "Fetches an http(s) URL on the host's side, every host and redirect judged by the "
                       "project's policy; HTML comes back as readable text.",
                       object_schema({{"url", kString}, {"max_bytes", counted(1)}}, {"url"}),
                       annotations(true, false, true)));
  tools.push_back(tool("workspace_status", "Session status",
                       "The session: its id, the commit it started from, commits not yet applied to the real "
                       "project, and the files changed.",
                       object_schema(Json::object(), Json::array()), annotations(true, false, false),
                       object_schema({{"session", {{"type", {"string", "null"}}}},
                                      {"kind", {{"type", "string"}, {"enum", {"git", "overlay"}}}},
                                      {"base", kString},
                                      {"commits", kStrings},
                                      {"changed_files", kStrings},
                                      {"changed_paths", kInteger}},
                                     {"session"})));
  tools.push_back(tool(
      "apply", "Apply the session's commits",
      "Brings the session's commits onto the project's checked-out branch, as the workspace.apply policy "
      "decides (a person may be asked). mode: merge (default), rebase or squash, when the branch has moved.",
      object_schema({{"mode", {{"type", "string"}, {"enum", {"merge", "rebase", "squash"}}}}}, Json::array()),
      annotations(false, true, false)));
  return tools;
}

}  // namespace chock::mcp
