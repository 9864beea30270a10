// The one place a RunHeader is built (see run_header.hpp). Not part of any computation. The data
// manifest is hashed on rank 0 only (the ranks read the same files); the environment names the
// libraries of this process (docs/FORMAT.md, attributes data_files and environment).
#include "samebits/core/train/run_header.hpp"

#include <omp.h>

#include "samebits/core/cpu/bf16_pairs_isa.hpp"
#include "samebits/core/cpu/blas_version.hpp"
#include "samebits/core/io/library_version.hpp"
#include "samebits/core/parallel/library_versions.hpp"
#include "samebits/core/parallel/parallel_plan.hpp"
#include "samebits/data/data_manifest.hpp"
#include "samebits/det/huge_pages.hpp"
#ifdef SB_HAVE_CUDA
#include "samebits/core/cuda/cuda_backend.hpp"
#include "samebits/core/cuda/device_info.hpp"
#endif

namespace sb {

std::string environment_text(Backend& backend) {
  std::string blas = blas_version();
  if (blas.rfind("OpenBLAS ", 0) == 0) blas = blas.substr(9);
  std::string s = "HDF5: " + io::hdf5_version() + "\nOpenBLAS: " + blas + "\nOpenBLAS core: " + blas_core_text() +
                  "\nMPI: " + mpi_library_version();
  // Whether the kernel granted the big host buffers huge pages (det/huge_pages.hpp), at this point:
  // the model, gradients, activations and optimizer state are allocated and first-touched.
  s += "\nHost memory: " + det::huge_page_text();
  // numerics.bf16_dot = pairs on the CPU: the path that ran it (vdpbf16ps only where selftest's check agrees).
  if (backend.device() == Device::cpu && backend.numerics().bf16_dot == Bf16Dot::pairs)
    s += "\nbf16 pair kernel: " + bf16_pairs_isa();
#ifdef SB_HAVE_CUDA
  if (backend.device() == Device::cuda) {
    s += "\nNCCL: " + nccl_library_version() + "\n" + cuda::cuda_environment(cuda_device(backend));
  }
#endif
  return s;
}

run::RunHeader run_header(const Config& config, Trainer& trainer) {
  run::RunHeader h;
  h.config_text = to_ini_text(config);
  h.experiment_id = experiment_id(config);
  h.experiment_text = experiment_text(config);
  h.steps = config.train.steps;
  h.tensors = run::tensor_infos(gpt_param_layout(config.model));  // full tensors at any layout
  h.qk_n_head = config.optim.qk_clip > 0.0 ? config.model.n_head : 0;
  if (trainer.communicator().rank() == 0)
    h.data_files = data::manifest_text(data::data_manifest(to_data_config(config)));
  h.execution.backend = trainer.backend().describe();
  h.execution.communicator = trainer.communicator().describe();
  h.execution.threads = omp_get_max_threads();
  h.execution.world_size = trainer.communicator().size();
  h.execution.micro_leaves = trainer.options().micro_leaves;
  // "dp D x tp T", " x ep E" with expert parallelism (its groups inside dp), " x pp P" with
  // pipeline stages: the plan's mesh.
  int size[4] = {1, 1, 1, 1};  // dp, tp, ep, pp
  for (const MeshAxis& a : trainer.plan().mesh())
    size[a.name == "dp" ? 0 : a.name == "tp" ? 1 : a.name == "ep" ? 2 : 3] = a.size;
  h.execution.layout = "dp " + std::to_string(size[0]) + " x tp " + std::to_string(size[1]) +
                       (size[2] > 1 ? " x ep " + std::to_string(size[2]) : "") +
                       (size[3] > 1 ? " x pp " + std::to_string(size[3]) : "");
  h.execution.environment = environment_text(trainer.backend());
  return h;
}

}  // namespace sb
