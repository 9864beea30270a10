// HDF5 token datasets from others: walked (h5_structure.hpp) and decoded by the reader process
// (isolated_read.hpp), with the file's name, the dataset and the vocabulary as its parameters; the
// tokens come back over the pipe and Hdf5Tokens checks every one again. (llm.c shards need no reader: their parse is
// three integers of a header checked against the file's size, in samebits' own code — docs/DATA.md.)
#pragma once
#include "samebits/data/token_source.hpp"

namespace sb::io {

// decode_hdf5_tokens in the reader process: what every samebits caller of open_source passes.
data::Hdf5Decoder isolated_hdf5_decoder();

}  // namespace sb::io
