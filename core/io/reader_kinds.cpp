// reader_process.hpp: the kinds samebits-reader knows — everything samebits reads from files that
// may come from others.
#include "read_values.hpp"
#include "samebits/core/io/reader_process.hpp"

namespace sb::io {

const std::vector<ReaderKind>& samebits_reader_kinds() {
  static const std::vector<ReaderKind> kinds = {
      {"run", run::read_run_kind},
      {"store-params", run::read_store_params_kind},
      {"store-state", run::read_store_state_kind},
      {"hdf5-tokens", read_hdf5_tokens_kind},
  };
  return kinds;
}

}  // namespace sb::io
