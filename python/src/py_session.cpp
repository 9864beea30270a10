// The process's MPI session from Python. Under an MPI launcher (mpirun -np N python script.py)
// MPI may be initialised once per process and is finalised when its last communicator goes, so
// the module holds one communicator from the first Trainer or train() until samebits/__init__.py
// ends the session at exit (after closing every Trainer) — or ends the whole job, as the command
// line does on an error, when the interpreter leaves on an uncaught exception (the other ranks may
// be waiting in a collective this rank will never join). mpi4py is not needed.
#include <memory>
#include <string>

#include "bindings.hpp"
#include "samebits/core/parallel/mpi.hpp"

namespace sb::py {
namespace {

std::unique_ptr<Communicator>& held() {
  static std::unique_ptr<Communicator> comm;
  return comm;
}

}  // namespace

void hold_mpi_session() {
  if (!held() && launched_by_mpi()) held() = make_communicator_from_environment();
}

void bind_session(pyb::module_& m) {
  m.def(
      "world",
      [] {
        hold_mpi_session();
        pyb::dict d;
        d["rank"] = held() ? held()->rank() : 0;
        d["size"] = held() ? held()->size() : 1;
        d["communicator"] = held() ? held()->describe() : std::string("local");
        return d;
      },
      "This process's rank and the world size: {'rank', 'size', 'communicator'} (one process: 0, 1, 'local').");
  m.def(
      "_end_session",
      [] {
        close_trainers();
        held().reset();
      },
      "Closes every Trainer, then finalises MPI (called at exit).");
  m.def(
      "_abort_job",
      [](const std::string& message, int exit_code) {
        if (held()) end_job_on_error(*held(), message, exit_code);
      },
      "Ends every rank of an MPI job (uncaught exception on this rank); returns when alone.");
}

}  // namespace sb::py
