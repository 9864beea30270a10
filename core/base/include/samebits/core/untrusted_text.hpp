// Text from files samebits did not write itself (names and values in run files, checkpoints, data
// files, configs) reaches the terminal only escaped: control bytes (C0, DEL and C1), invalid UTF-8
// and bidirectional overrides print as \x1b-style escapes, so a damaged or crafted file cannot
// move the cursor, recolour the terminal or hide text. Valid printable UTF-8 ("—") is kept.
#pragma once
#include <string>
#include <string_view>

namespace sb {

// "a\x1b[31mb" → "a\\x1b[31mb"; "line\n" → "line\\x0a".
std::string escape_untrusted(std::string_view text);

}  // namespace sb
