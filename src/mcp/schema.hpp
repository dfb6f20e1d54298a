// A JSON Schema checker for the subset of keywords Chock's tool schemas
// use: tools/call arguments are checked against the inputSchema tools/list
// publishes, so what the client was told is what is enforced. Debian 12
// packages no C++ JSON Schema validator (nlohmann-json-schema-validator is
// not in bookworm), and the subset is small. Its keywords mean what they
// mean in drafts 7 and 2020-12 alike (tests/unit checks it against Debian's
// json-schema-test-suite).
#pragma once

#include <optional>
#include <string>

#include "mcp/jsonrpc.hpp"

namespace chock::mcp::schema {

// The keywords understood: type, properties, required, additionalProperties
// (a boolean or a schema), items (one schema), minItems, maxItems,
// minLength, maxLength, pattern, minimum, maximum, exclusiveMinimum,
// exclusiveMaximum (numbers), enum, const, anyOf; and the annotations
// title, description, default, examples, $schema.
// The first keyword of `schema`, or of a schema inside it, outside that set
// (as "properties.x.format"); nullopt when there is none.
[[nodiscard]] std::optional<std::string> unsupported(const Json& schema);

// nullopt when `value` satisfies `schema`; else one line naming the field
// first ("offset: 0 is below the minimum, 1"; "argv[1]: a string, not a
// number"; "shell: not a parameter (the parameters are argv, cwd)"). The
// value, hostile input, is quoted shortened and escaped. The schema must
// pass `unsupported`.
[[nodiscard]] std::optional<std::string> check(const Json& schema, const Json& value);

}  // namespace chock::mcp::schema
