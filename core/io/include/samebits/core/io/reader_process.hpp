// The reader process's side of isolated_read.hpp: the samebits-reader executable is a fresh
// program (posix_spawn + exec, so it holds no lock, thread or heap state of the caller) that takes
// one request on descriptor 4 (the kind, the file, the kind's parameters, its limits), sets those
// limits on itself before it opens the file, runs the kind and writes the answer on descriptor 3.
// A kind is a named function in a table, not a closure: nothing but bytes crosses the exec.
#pragma once
#include <string>
#include <vector>

#include "samebits/core/io/isolated_read.hpp"

namespace sb::io {

// One thing the reader can read: `read(path, params, answer)` parses the file at `path` (the
// untrusted work) and puts plain values into `answer`; `params` holds what the caller sent.
struct ReaderKind {
  const char* name;
  void (*read)(const std::string& path, ByteReader& params, ByteWriter& answer);
};

// What samebits reads in isolation: run files, store files, HDF5 token datasets.
const std::vector<ReaderKind>& samebits_reader_kinds();

// The reader program's main (samebits-reader; tests build one with more kinds): the request,
// limits, the kind, the answer, then _exit. Started by hand (no request on descriptor 4) it
// prints what it is and returns 2.
int reader_main(int argc, char** argv, const std::vector<ReaderKind>& kinds);

}  // namespace sb::io
