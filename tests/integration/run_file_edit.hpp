// Editing sealed run and store files by hand (what a forger or a bug would do): unseal, edit with
// the h5 layer, seal again; a store file's new content hash recorded in its run file's index, so
// that samebits reads the edited file as its own. Tests only.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "samebits/core/io/h5.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/io/run_seal.hpp"
#include "samebits/core/io/run_store.hpp"

namespace sbt {

// Edits a sealed run file with the h5 layer and seals it again.
inline void edit_run_file(const std::string& path, const std::function<void(sb::h5::File&)>& edit) {
  sb::run::unseal_file(path);
  {
    sb::h5::File f = sb::h5::File::open(path, sb::h5::Mode::read_write);
    edit(f);
    f.close();
  }
  sb::run::seal_file(path);
}

// Edits the store file of `step` of a run (unsealed, edited, sealed again) and records its new
// content hash in the run file's index.
inline void edit_store_file(const std::string& run_path, int64_t step, const std::function<void(sb::h5::File&)>& edit) {
  std::size_t row = 0;
  std::string file;
  {
    const sb::run::RunReader run = sb::run::RunReader::open(run_path);
    while (run.store_entries().at(row).step != step) ++row;
    file = sb::run::store_file(run_path, run.store_entries()[row]);
  }
  edit_run_file(file, edit);
  const uint64_t digest = sb::run::check_seal(file);
  edit_run_file(run_path, [&](sb::h5::File& f) {
    f.dataset("store/digest").write_rows<uint64_t>(row, std::vector<uint64_t>{digest});
  });
}

}  // namespace sbt
