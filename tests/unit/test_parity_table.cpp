// The parity harness covers the whole op list: every op of backend_op_list.hpp has exactly one
// entry in tests/parity/parity_ops.hpp, every entry names an op of the list, and the parity test
// it names exists and makes the call it says runs the op. No GPU needed.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "parity/parity_ops.hpp"

namespace {

// The names of the list's ops, in its order.
const std::vector<std::string_view> kListOps = {
#define SB_BACKEND_OP(name, ...) #name,
#include "samebits/core/backend_op_list.hpp"
};

std::string parity_source(std::string_view file) {
  std::ifstream in(std::string(SB_SOURCE_DIR) + "/tests/parity/" + std::string(file));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("every op of the list has one parity harness entry, and every entry one op") {
  for (std::string_view op : kListOps) {
    int entries = 0;
    for (const sb::test::ParityOp& e : sb::test::kParityOps) entries += e.op == op ? 1 : 0;
    CHECK_MESSAGE(entries == 1, op, " has ", entries, " entries in tests/parity/parity_ops.hpp; expected one");
  }
  for (const sb::test::ParityOp& e : sb::test::kParityOps) {
    bool listed = false;
    for (std::string_view op : kListOps) listed = listed || op == e.op;
    CHECK_MESSAGE(listed, e.op, " in tests/parity/parity_ops.hpp is not an op of backend_op_list.hpp");
  }
}

TEST_CASE("each entry's parity test exists and makes the call that runs its op") {
  for (const sb::test::ParityOp& e : sb::test::kParityOps) {
    CAPTURE(e.op);
    if (e.cpu_only) {
      CHECK_MESSAGE(e.file.empty(), e.op, " is marked cpu_only but names a parity test");
      continue;
    }
    const std::string text = parity_source(e.file);
    REQUIRE_MESSAGE(!text.empty(), "tests/parity/", e.file, " is missing or empty");
    CHECK_MESSAGE(text.find(std::string(e.via) + "(") != std::string::npos, "tests/parity/", e.file, " never calls ",
                  e.via, "(, which parity_ops.hpp says runs ", e.op);
  }
}
