// TextFile: the mapped bytes widened to int32 tokens, checked against the vocabulary.
#include "samebits/data/text_file.hpp"

#include <algorithm>

#include "mapped_file.hpp"
#include "samebits/det/error.hpp"

namespace sb::data {

TextFile::TextFile(const std::string& path, uint64_t vocab)
    : file_(std::make_unique<MappedFile>(path)), vocab_(vocab) {}

TextFile::~TextFile() = default;

uint64_t TextFile::size() const { return file_->size(); }

std::string TextFile::describe() const {
  return "text file '" + file_->path() + "' (" + std::to_string(file_->size()) + " bytes)";
}

void TextFile::read(uint64_t pos, uint64_t len, int32_t* out) const {
  const uint64_t n = file_->size();
  SB_CHECK(pos <= n && len <= n - pos, describe(), ": window [", pos, ", ", pos + len, ") is outside the ", n,
           " tokens");
  if (len == 0) return;
  const uint8_t* bytes = file_->data() + pos;
  uint32_t largest = 0;
  for (uint64_t i = 0; i < len; ++i) {
    out[i] = bytes[i];
    largest = std::max<uint32_t>(largest, bytes[i]);
  }
  if (largest >= vocab_) {
    const uint64_t i = uint64_t(std::find_if(bytes, bytes + len, [&](uint8_t b) { return b >= vocab_; }) - bytes);
    SB_FAIL(describe(), ": byte ", int(bytes[i]), " at position ", pos + i, " is >= vocab ", vocab_,
            " (model.vocab); byte-level text needs vocab >= 256");
  }
}

}  // namespace sb::data
