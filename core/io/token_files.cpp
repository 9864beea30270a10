// token_files.hpp: the "hdf5-tokens" reader kind (in the reader process: the structure walk, then
// the decode) and the caller's side (the request, the answer's length checked before the copy).
#include "samebits/core/io/token_files.hpp"

#include <filesystem>

#include "read_values.hpp"
#include "samebits/core/io/h5_structure.hpp"
#include "samebits/data/hdf5_tokens.hpp"
#include "samebits/det/error.hpp"

namespace sb::io {

void read_hdf5_tokens_kind(const std::string& path, ByteReader& params, ByteWriter& answer) {
  const std::string dataset = params.get_string();
  const uint64_t vocab = params.get<uint64_t>();
  params.finish();
  try {
    h5::check_structure(path, std::filesystem::file_size(path));  // a token file has no seal
  } catch (const Error& e) {
    SB_FAIL(e.what(), "; a token file is read as HDF5 writes it by default (h5py too): superblock 0, no filters ",
            "(no compression), an integer dataset of 1, 2, 4 or 8 bytes");
  }
  answer.put_vector(data::decode_hdf5_tokens(path, dataset, vocab));
}

data::Hdf5Decoder isolated_hdf5_decoder() {
  return [](const std::string& file, const std::string& dataset, uint64_t vocab) {
    ByteWriter params;
    params.put_string(dataset);
    params.put(vocab);
    const std::vector<std::byte> answer = read_isolated("hdf5-tokens", file, params);
    ByteReader in = answer_reader(answer, file);
    std::vector<int32_t> tokens = in.get_vector<int32_t>();
    in.finish();
    return tokens;
  };
}

}  // namespace sb::io
