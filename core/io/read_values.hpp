// Internal to core/io: the plain values a reader process hands back (isolated_read.hpp) for the
// states of the run store (checkpoints, kept and final states). The child reads and checks them with HDF5; the
// parent decodes them and checks them again, since a subverted child could send anything.
#pragma once
#include <string>
#include <vector>

#include "samebits/core/io/isolated_read.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/step_stats.hpp"
#include "samebits/core/train_state.hpp"

namespace sb::run {

void put_state(io::PlainWriter& out, const TrainerState& state);
// The state put_state wrote, checked against the layout `tensors` (sizes, names, step and
// updates); `where` names the file and group for messages.
TrainerState get_state(io::PlainReader& in, const std::vector<TensorInfo>& tensors, const std::string& where);

}  // namespace sb::run
