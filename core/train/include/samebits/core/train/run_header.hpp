// The RunHeader of a run: what a run file records at its creation about the experiment (config
// text, experiment id and text, steps, tensor layout) and about the session's execution
// (backend, communicator, threads, world size). Built here only, for the CLI, the benchmarks and
// the tests that drive RunWriter directly.
#pragma once
#include "samebits/core/config.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/train/trainer.hpp"

namespace sb {

// The libraries this process runs with, one "name: version" line each: HDF5, OpenBLAS, MPI, and
// on a CUDA backend NCCL, the CUDA runtime, cuBLAS, the driver and the GPU with its SM count.
std::string environment_text(Backend& backend);

// The header a run of `trainer` (built from `config`) records.
run::RunHeader run_header(const Config& config, Trainer& trainer);

}  // namespace sb
