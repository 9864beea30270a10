// Reading untrusted files in a separate process. HDF5 1.10's decoders can crash or corrupt memory
// on damaged or crafted metadata that a valid seal does not exclude (anyone can compute an XXH3),
// so every file samebits reads back (run files, checkpoints, HDF5 token datasets) is parsed by a
// reader process with resource limits (address space, CPU time, no file writes, no core dump, no
// other open descriptors) that validates it and hands back plain values over a pipe. A crash,
// sanitizer report, memory fault or hang in the reader becomes one sb::Error "<file> could not be
// read safely: …" and cannot touch the calling process or its files. The reader is a fresh program
// (samebits-reader, spawned and exec'd: reader_process.hpp), not a fork, so it inherits no lock
// another thread of the caller held. Contract: values come back bit for bit (bytes copied
// verbatim; both ends are the same build).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "samebits/core/byte_codec.hpp"

namespace sb::io {

// The reader's request parameters and its answer are ByteWriter bytes (samebits/core/byte_codec.hpp),
// read back by answer_reader: a reader process that was subverted could send anything, so every
// length is checked against what is left before anything is allocated, and a short or long answer
// is an sb::Error "<file> could not be read safely: the reader's answer …".
inline ByteReader answer_reader(const std::vector<std::byte>& answer, const std::string& file) {
  return ByteReader(answer, file + " could not be read safely: the reader's answer");
}

// Runs the reader kind `kind` (reader_process.hpp) on the file `path` with `params` in a new
// reader process started from the executable `reader`, and returns its answer's bytes. An
// sb::Error the kind throws is rethrown here with its message. `path` also sets the limits (the
// address space and the answer may grow with its size).
std::vector<std::byte> read_isolated(const std::string& kind, const std::string& path, const ByteWriter& params,
                                     const std::string& reader);
// The same with reader_executable().
std::vector<std::byte> read_isolated(const std::string& kind, const std::string& path,
                                     const ByteWriter& params = ByteWriter());

// The samebits-reader executable: beside the running program (/proc/self/exe: the CLI, installed
// or copied with it), else in the build tree's bin/ (tests and benchmarks live in bin/tests and
// bin/bench). Throws sb::Error naming both places when neither holds it.
std::string reader_executable();

}  // namespace sb::io
